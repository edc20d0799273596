//! Every observer explains its choice (`Report.derivation`, `observe --explain`), and the
//! explanation ends in the report's own numbers: the last step's `scale` and `zero_point` are the
//! report's, bit for bit. Checked for every golden case of every observer family and for every
//! observer of the registry on a demo-like tensor; asking for the derivation changes nothing in
//! the report.
mod common;

use quantscope::derivation::Value;
use quantscope::engine::{Report, Run};
use quantscope::observer::{Grid, ZeroPoint};
use quantscope::params::Params;
use quantscope::registry;
use quantscope::tensor::Tensor;
use serde_json::Value as Json;

/// The report's scale and zero point are the last step's, bit for bit.
fn check_ends_in_the_report(report: &Report) -> Result<(), String> {
    let Some(q) = &report.qparams else {
        return Ok(());
    };
    let last = report
        .derivation
        .last()
        .ok_or_else(|| format!("{}: no derivation", report.observer))?;
    if matches!(q.grid, Grid::None) {
        return Ok(());
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    match last.values.get("scale") {
        Some(Value::F32s(scale)) if bits(scale) == bits(&q.scale) => {}
        other => {
            return Err(format!(
                "{}: the last step `{}` has scale {other:?}, the report {:?}",
                report.observer, last.title, q.scale
            ))
        }
    }
    let same_zero_point = match (last.values.get("zero_point"), &q.zero_point) {
        (Some(Value::Ints(a)), ZeroPoint::Int(b)) => a == b,
        (Some(Value::F32s(a)), ZeroPoint::Float(b)) => bits(a) == bits(b),
        _ => false,
    };
    if !same_zero_point {
        return Err(format!(
            "{}: the last step `{}` has zero point {:?}, the report {:?}",
            report.observer,
            last.title,
            last.values.get("zero_point"),
            q.zero_point
        ));
    }
    Ok(())
}

/// The report with and without its derivation: the derivation ends in the report's numbers and
/// asking for it changes nothing else.
fn check_run(run: Run) -> Result<(), String> {
    let plain = run.clone().report();
    let explained = run.explained(true).report();
    if !plain.derivation.is_empty() {
        return Err(format!("{}: a derivation nobody asked for", plain.observer));
    }
    let json = |r: &Report| {
        let mut v = serde_json::to_value(r).expect("a report serialises");
        if let Json::Object(map) = &mut v {
            map.remove("derivation");
        }
        v
    };
    if json(&plain) != json(&explained) {
        return Err(format!(
            "{}: asking for the derivation changed the report",
            plain.observer
        ));
    }
    if explained.ok && explained.derivation.is_empty() {
        return Err(format!("{}: no derivation", explained.observer));
    }
    check_ends_in_the_report(&explained)?;
    // Through JSON (what the CLI, npm and Python carry) the steps keep their values.
    let text = serde_json::to_string(&explained.derivation).expect("steps serialise");
    let back: Vec<quantscope::derivation::Step> =
        serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if back.len() != explained.derivation.len() {
        return Err("steps lost through JSON".into());
    }
    Ok(())
}

#[test]
fn every_golden_case_explains_its_qparams_with_the_reports_numbers() {
    for family in common::OBSERVER_FAMILIES {
        let cases = common::load_cases(family);
        common::run_cases(
            &format!("derivations of {family}"),
            cases,
            |case| {
                if registry::find(&case.observer).is_err() {
                    return Ok(());
                }
                let batches = case.load_batches()?;
                check_run(common::case_run(case, &batches)?)
            },
            false,
        );
    }
}

/// A 64×96 weight-like tensor with a few outliers (deterministic).
fn weight() -> Tensor {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<f32> = (0..64 * 96)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            if i % 997 == 0 {
                u * 40.0
            } else {
                u * u * u * 8.0
            }
        })
        .collect();
    Tensor::new(vec![64, 96], data).expect("shape matches")
}

#[test]
fn every_observer_of_the_registry_explains_its_qparams_with_the_reports_numbers() {
    let batches = [weight()];
    let mut failures = Vec::new();
    for spec in registry::observers() {
        let run = Run::new(spec.id, Params::new(), &batches).expect("a registered id");
        if let Err(why) = check_run(run) {
            failures.push(why);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_histogram_search_lists_every_candidate_it_evaluated_and_marks_its_pick() {
    let batches = [weight()];
    let report = Run::new("torch.HistogramObserver", Params::new(), &batches)
        .unwrap()
        .explained(true)
        .report();
    let q = report.qparams.as_ref().unwrap();
    let search = report
        .derivation
        .iter()
        .find_map(|s| s.candidates.as_ref().map(|c| (s, c)))
        .expect("a search step");
    let (step, table) = search;
    let evaluated = match step.values.get("candidates evaluated") {
        Some(Value::Int(n)) => *n as usize,
        other => panic!("candidates evaluated: {other:?}"),
    };
    assert_eq!(table.rows.len(), evaluated);
    assert_eq!(
        q.extra["search_evaluations"].as_u64(),
        Some(evaluated as u64)
    );
    let picked = &table.rows[table.picked];
    let (lo, hi) = q.clip_range.as_ref().unwrap();
    assert_eq!(picked[2], f64::from(lo[0]));
    assert_eq!(picked[3], f64::from(hi[0]));
    // The greedy rule: every later candidate was worse than the pick, every earlier one better
    // or equal to its predecessor.
    let loss = |i: usize| table.rows[i][4];
    assert!((table.picked + 1..table.rows.len()).all(|i| loss(i) > loss(table.picked)));
    assert!((1..=table.picked).all(|i| loss(i) <= loss(i - 1)));
}

// ---------------------------------------------------------------------------------------------
// Codecs: a derivation follows one block through the codec's own encoder; its last step holds
// what that block stores, which must be, bit for bit, the same block of the whole tensor's
// encoding (what `quantize` and the formats table report).

use quantscope::codec::{self, explain, Encoded};

/// An 8×768 weight-like tensor (whole ggml super-blocks per row) with outliers.
fn rows_of_768() -> Tensor {
    let w = weight();
    Tensor::new(vec![8, 768], w.data[..8 * 768].to_vec()).expect("shape matches")
}

/// The hex of `bytes`, as the derivation writes them.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(step: &quantscope::derivation::Step, name: &str) -> String {
    match step.values.get(name) {
        Some(Value::Text(t)) => t.clone(),
        other => format!("{other:?}"),
    }
}

fn floats(step: &quantscope::derivation::Step, name: &str) -> Vec<u32> {
    match step.values.get(name) {
        Some(Value::F32s(v)) => v.iter().map(|x| x.to_bits()).collect(),
        _ => Vec::new(),
    }
}

/// Where block `index` of a codec lies in the flat tensor, and what the whole encoding stores
/// for it: `(elements, stored bytes)` for ggml (`blocks`) and MX (`scales` + `elements`).
fn stored_block(id: &str, encoded: &Encoded, t: &Tensor, index: usize) -> (Vec<usize>, String) {
    if let Some(ty) = quantscope::formats::ggml::GgmlType::from_id(id) {
        let (n, bytes) = (ty.block_elems(), ty.block_bytes());
        let blocks = encoded.u8s("blocks").expect("ggml stores blocks");
        return (
            (index * n..(index + 1) * n).collect(),
            hex(&blocks[index * bytes..(index + 1) * bytes]),
        );
    }
    // MX: blocks of 32 along the last axis.
    let cols = t.shape[1];
    let per_row = cols.div_ceil(32);
    let (row, start) = (index / per_row, index % per_row * 32);
    let members: Vec<usize> = (start..(start + 32).min(cols))
        .map(|c| row * cols + c)
        .collect();
    let scale = encoded.u8s("scales").expect("MX stores scales")[index];
    let elements = encoded.u8s("elements").expect("MX stores elements");
    let codes: Vec<u8> = members.iter().map(|&i| elements[i]).collect();
    (members, format!("{scale:02x}{}", hex(&codes)))
}

/// What the derivation's last step says the block stores, in [`stored_block`]'s notation.
fn derived_block(id: &str, last: &quantscope::derivation::Step) -> String {
    if id.starts_with("ggml.") {
        return text(last, "bytes");
    }
    let code = match last.values.get("scale code") {
        Some(Value::Int(c)) => *c as u8,
        other => panic!("{id}: scale code {other:?}"),
    };
    let codes: Vec<u8> = match last.values.get("codes") {
        Some(Value::Ints(c)) => c.iter().map(|&v| v as u8).collect(),
        other => panic!("{id}: codes {other:?}"),
    };
    format!("{code:02x}{}", hex(&codes))
}

/// Block `block` of `t` under `id`/`params`: the derivation's last step equals the whole
/// encoding's block, bytes and decoded values bit for bit.
fn check_codec_block(
    id: &str,
    params: &Params,
    t: &Tensor,
    block: Option<usize>,
) -> Result<(), String> {
    let derivation = explain::explain(id, params, t, block).map_err(|e| format!("{id}: {e}"))?;
    let spec = codec::find(id).map_err(|e| e.to_string())?;
    let codec = spec.build(params, &t.shape).map_err(|e| e.to_string())?;
    let qdq = codec::quantize_dequantize(codec.as_ref(), t).map_err(|e| e.to_string())?;
    let (members, want) = stored_block(id, &qdq.encoded, t, derivation.block);
    let last = derivation.steps.last().ok_or(format!("{id}: no steps"))?;
    if last.title != "Stored block" {
        return Err(format!("{id}: the last step is `{}`", last.title));
    }
    let got = derived_block(id, last);
    if got != want {
        return Err(format!(
            "{id} block {}: derived {got}, the whole encoding {want}",
            derivation.block
        ));
    }
    let want_values: Vec<u32> = members.iter().map(|&i| qdq.values[i].to_bits()).collect();
    if floats(last, "decoded") != want_values {
        return Err(format!(
            "{id} block {}: decoded values differ from the report's",
            derivation.block
        ));
    }
    if let Some(b) = block {
        if derivation.block != b {
            return Err(format!(
                "{id}: asked for block {b}, derived {}",
                derivation.block
            ));
        }
    }
    Ok(())
}

/// The codecs that explain a block: every ggml type that encodes, and MX.
fn explaining_codecs() -> Vec<&'static str> {
    codec::codecs()
        .into_iter()
        .filter(|c| c.encodes && (c.id.starts_with("ggml.") || c.id == "mx"))
        .map(|c| c.id)
        .collect()
}

#[test]
fn every_codec_derivation_ends_in_the_block_the_whole_encoding_stores() {
    let t = rows_of_768();
    let imatrix: Vec<f32> = (0..768).map(|i| 0.5 + (i % 7) as f32).collect();
    let mut failures = Vec::new();
    let ids = explaining_codecs();
    assert!(ids.len() >= 25, "{ids:?}");
    for id in ids {
        let mut settings = vec![Params::new()];
        if id.starts_with("ggml.") {
            settings.push(Params::new().with("imatrix", imatrix.clone()));
        } else {
            for element in ["fp8_e4m3", "fp6_e2m3", "int8"] {
                settings
                    .push(Params::from_json(&format!(r#"{{"element": "{element}"}}"#)).unwrap());
            }
        }
        for params in &settings {
            if needs_imatrix(id) && params.get("imatrix").is_none() {
                // ggml_quantize_requires_imatrix: the derivation refuses as the encoding does.
                let e = explain::explain(id, params, &t, None)
                    .unwrap_err()
                    .to_string();
                if !e.contains("without an importance matrix") {
                    failures.push(format!("{id} without an imatrix: {e}"));
                }
                continue;
            }
            for block in [None, Some(0), Some(5), Some(23)] {
                if let Err(why) = check_codec_block(id, params, &t, block) {
                    failures.push(why);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether codec `id` is a ggml type that cannot quantize without an imatrix (IQ2_XXS, IQ2_XS,
/// IQ1_S).
fn needs_imatrix(id: &str) -> bool {
    quantscope::formats::ggml::GgmlType::from_id(id).is_some_and(|t| t.requires_imatrix())
}

/// The settings each codec that describes its slices is explained with: its defaults and the
/// variants that change its slicing or what a slice stores.
fn slice_codec_settings(id: &str) -> Vec<Params> {
    let json = |s: &str| Params::from_json(s).unwrap();
    let mut settings = vec![Params::new()];
    settings.extend(match id {
        "int" => vec![
            json(r#"{"bits": 4, "granularity": "per_channel"}"#),
            json(r#"{"bits": 4, "signed": false, "granularity": "per_group", "group_size": 32}"#),
        ],
        "minifloat" => vec![json(
            r#"{"element": "fp4_e2m1", "granularity": "per_channel"}"#,
        )],
        "half" => vec![json(r#"{"dtype": "bfloat16"}"#)],
        "bfp" => vec![json(r#"{"mantissa_bits": 4, "block_size": 16}"#)],
        "bnb.nf4" | "bnb.fp4" => vec![json(r#"{"compress_statistics": true, "blocksize": 128}"#)],
        "bnb.blockwise8" => vec![json(r#"{"blocksize": 256, "nested": true}"#)],
        "ct.pack_quantized" => vec![json(
            r#"{"symmetric": false, "strategy": "group", "group_size": 64}"#,
        )],
        "ct.int_quantized" => vec![json(r#"{"symmetric": false, "strategy": "channel"}"#)],
        "ct.float_quantized" => vec![json(
            r#"{"strategy": "block", "block_rows": 4, "block_cols": 128}"#,
        )],
        "gptq.int" => vec![json(r#"{"sym": false, "bits": 3, "group_size": 32}"#)],
        "awq.gemm" => vec![json(r#"{"zero_point": false, "group_size": 64}"#)],
        _ => vec![],
    });
    settings
}

/// Slice `block` of `t` under `id`/`params`, for a codec that describes its slices: the first
/// step holds the slice's values (by default those of the slice holding the largest |x|), the
/// stored numbers' min and max are the slice's, and the last step's decoded values are the
/// report's (`quantize_dequantize`, the codec's fused kernel where it has one) bit for bit.
fn check_slice_derivation(
    id: &str,
    params: &Params,
    t: &Tensor,
    block: Option<usize>,
) -> Result<(), String> {
    let d = explain::explain(id, params, t, block).map_err(|e| format!("{id}: {e}"))?;
    let codec = codec::find(id)
        .and_then(|spec| spec.build(params, &t.shape))
        .map_err(|e| e.to_string())?;
    let qdq = codec::quantize_dequantize(codec.as_ref(), t).map_err(|e| e.to_string())?;
    let slices = codec
        .stored_slices(&qdq.encoded)
        .map_err(|e| e.to_string())?
        .ok_or(format!("{id}: no slices"))?;
    let label = format!("{} ({id}) block {}", d.format, d.block);
    if d.blocks != slices.count || d.block >= d.blocks {
        return Err(format!(
            "{label}: of {} slices, {} said",
            slices.count, d.blocks
        ));
    }
    let members: Vec<usize> = (0..t.data.len())
        .filter(|&i| slices.slicing.slice_of(i) == d.block)
        .collect();
    let bits = |v: &mut dyn Iterator<Item = f32>| v.map(f32::to_bits).collect::<Vec<_>>();
    let first = &d.steps[0];
    // A long slice is listed from `listed from` on.
    let from = match first.values.get("listed from") {
        Some(Value::Int(f)) => *f as usize,
        _ => 0,
    };
    let listed = &members[from..(from + floats(first, "values").len()).min(members.len())];
    if listed.len() < members.len().min(1024) {
        return Err(format!(
            "{label}: {} of {} elements listed",
            listed.len(),
            members.len()
        ));
    }
    if floats(first, "values") != bits(&mut listed.iter().map(|&i| t.data[i])) {
        return Err(format!(
            "{label}: the first step's values are not the slice's"
        ));
    }
    let largest = quantscope::codec::explain::largest_magnitude(&t.data);
    if block.is_none() && !members.contains(&largest) {
        return Err(format!(
            "{label}: does not hold the largest |x| (element {largest})"
        ));
    }
    let numbers = d
        .steps
        .iter()
        .find(|s| s.title == "Its stored numbers")
        .ok_or(format!("{label}: no stored numbers"))?;
    let number = |name: &str| match numbers.values.get(name) {
        Some(Value::F32(v)) => *v,
        other => panic!("{label}: {name} {other:?}"),
    };
    let (lo, hi) = members
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &i| {
            (a.min(t.data[i]), b.max(t.data[i]))
        });
    if number("min").to_bits() != lo.to_bits() || number("max").to_bits() != hi.to_bits() {
        return Err(format!("{label}: min/max are not the slice's"));
    }
    let last = d.steps.last().unwrap();
    if last.title != "Stored block" {
        return Err(format!("{label}: the last step is `{}`", last.title));
    }
    if floats(last, "decoded") != bits(&mut listed.iter().map(|&i| qdq.values[i])) {
        return Err(format!("{label}: decoded values differ from the report's"));
    }
    if !matches!(numbers.values.get("representable range"), Some(Value::F32s(r)) if r.len() == 2) {
        return Err(format!("{label}: no representable range"));
    }
    Ok(())
}

#[test]
fn every_other_codec_derivation_follows_a_slice_of_the_reports_encoding() {
    let t = rows_of_768();
    let mut failures = Vec::new();
    let mut explained = Vec::new();
    for entry in codec::codecs() {
        if !entry.encodes || entry.id.starts_with("ggml.") || entry.id == "mx" {
            continue;
        }
        for params in slice_codec_settings(entry.id) {
            let encodes = codec::find(entry.id)
                .and_then(|spec| spec.build(&params, &t.shape))
                .and_then(|c| c.encode(&t).map(|_| ()));
            if let Err(e) = encodes {
                // A format whose encoder is not reproduced says so, and so does its derivation.
                let why = explain::explain(entry.id, &params, &t, None).unwrap_err();
                assert_eq!(why.to_string(), e.to_string(), "{}", entry.id);
                continue;
            }
            let count = explain::explain(entry.id, &params, &t, None).map_or(0, |d| d.blocks);
            for block in [None, Some(0), Some(3), Some(count.saturating_sub(1))] {
                if block.is_some_and(|b| b >= count) {
                    continue;
                }
                if let Err(why) = check_slice_derivation(entry.id, &params, &t, block) {
                    failures.push(why);
                }
            }
            explained.push(entry.id);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for id in [
        "int",
        "minifloat",
        "half",
        "bfp",
        "bnb.nf4",
        "bnb.fp4",
        "bnb.blockwise8",
        "bnb.int8",
        "ct.pack_quantized",
        "ct.int_quantized",
        "ct.float_quantized",
        "deepseek.fp8_block",
        "gptq.int",
        "awq.gemm",
        "gptoss.mxfp4",
    ] {
        assert!(
            explained.contains(&id),
            "{id} was not explained: {explained:?}"
        );
    }
}

#[test]
fn an_integer_slice_decodes_as_its_codes_zero_point_and_scale_say() {
    let t = rows_of_768();
    for params in slice_codec_settings("int") {
        let d = explain::explain("int", &params, &t, None).unwrap();
        let numbers = &d.steps[1];
        let (scale, zp) = match (
            numbers.values.get("scale"),
            numbers.values.get("zero_point"),
        ) {
            (Some(Value::F64(s)), Some(Value::F64(z))) => (*s as f32, *z as f32),
            other => panic!("{other:?}"),
        };
        let last = d.steps.last().unwrap();
        let Some(Value::Ints(codes)) = last.values.get("codes") else {
            panic!("no codes: {:?}", last.values)
        };
        let want: Vec<u32> = codes
            .iter()
            .map(|&q| ((q as f32 - zp) * scale).to_bits())
            .collect();
        assert_eq!(floats(last, "decoded"), want, "{}", d.format);
    }
}

#[test]
fn every_golden_bnb_case_derives_the_reference_block() {
    let cases = common::load_cases("bnb");
    let mut checked = 0;
    for case in &cases {
        let x = case.load_batches().unwrap().remove(0);
        let mut params = Params::new();
        for (k, v) in &case.params.0 {
            // What the case records about the run rather than passes to the quantizer.
            if !["dtype", "nested_code", "nested_blocksize"].contains(&k.as_str()) {
                params = params.with(k, v.clone());
            }
        }
        let dequantized =
            common::load_npy("bnb", case.expected["dequantized"].as_str().unwrap()).unwrap();
        let absmax = match case.expected.get("absmax_dequantized") {
            Some(a) => common::numbers(a),
            None => common::numbers(&case.expected["absmax"]),
        };
        let blocks = absmax.len();
        for block in [None, Some(blocks - 1)] {
            let d = explain::explain(&case.observer, &params, &x, block)
                .unwrap_or_else(|e| panic!("{}: {e}", case.id));
            let size = x.data.len().div_ceil(blocks);
            let from = match d.steps[0].values.get("listed from") {
                Some(Value::Int(f)) => *f as usize,
                _ => 0,
            };
            let start = d.block * size + from;
            let members = start..(start + floats(&d.steps[0], "values").len()).min(x.data.len());
            assert!(
                members.len() == size.min(1024) || members.end == x.data.len(),
                "{}",
                case.id
            );
            let numbers = &d.steps[1];
            match numbers.values.get("absmax") {
                Some(Value::F64(a)) => {
                    assert_eq!(*a, absmax[d.block], "{} block {}", case.id, d.block)
                }
                other => panic!("{}: absmax {other:?}", case.id),
            }
            let want: Vec<u32> = dequantized.data[members.clone()]
                .iter()
                .map(|v| (v + 0.0).to_bits())
                .collect();
            let got: Vec<u32> = match d.steps.last().unwrap().values.get("decoded") {
                Some(Value::F32s(v)) => v.iter().map(|v| (v + 0.0).to_bits()).collect(),
                other => panic!("{other:?}"),
            };
            assert!(
                got == want,
                "{} block {}: decoded values differ",
                case.id,
                d.block
            );
            let codes = common::load_npy("bnb", case.expected["codes"].as_str().unwrap()).unwrap();
            let codes: Vec<i64> = if case.observer == "bnb.blockwise8" {
                members.clone().map(|i| codes.data[i] as i64).collect()
            } else {
                let byte = |i: usize| codes.data[i / 2] as u8;
                members
                    .clone()
                    .map(|i| if i % 2 == 0 { byte(i) >> 4 } else { byte(i) & 0x0F } as i64)
                    .collect()
            };
            let got_codes = match d.steps.last().unwrap().values.get("codes") {
                Some(Value::Ints(c)) => c.clone(),
                _ => match d.steps.last().unwrap().values.get("codes (`weight`)") {
                    Some(Value::Ints(c)) => c.clone(),
                    other => panic!("{}: codes {other:?}", case.id),
                },
            };
            assert!(
                got_codes == codes,
                "{} block {}: codes differ",
                case.id,
                d.block
            );
        }
        checked += 1;
    }
    assert!(checked >= 40, "{checked} golden bnb cases checked");
}

#[test]
fn a_missing_block_is_named() {
    let t = rows_of_768();
    let e = explain::explain("ggml.Q4_K", &Params::new(), &t, Some(24))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("block 24 does not exist: the tensor has 24 blocks (0…23)"),
        "{e}"
    );
    let e = explain::explain("int", &Params::new(), &t, Some(1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("block 1 does not exist: the tensor has 1 block (0…0)"),
        "{e}"
    );
}

#[test]
fn a_k_quant_derivation_shows_its_sub_block_search_and_the_pick_is_the_first_minimum() {
    let t = rows_of_768();
    let d = explain::explain("ggml.Q4_K", &Params::new(), &t, None).unwrap();
    // The default block holds the tensor's largest magnitude.
    let largest =
        t.data.iter().enumerate().fold(
            (0, 0.0f32),
            |m, (i, v)| if v.abs() > m.1 { (i, v.abs()) } else { m },
        );
    assert_eq!(d.block, largest.0 / 256);
    let titles: Vec<&str> = d.steps.iter().map(|s| s.title.as_str()).collect();
    let search = d
        .steps
        .iter()
        .find(|s| s.title.starts_with("Sub-block scale and min search") && s.candidates.is_some())
        .unwrap_or_else(|| panic!("{titles:?}"));
    let c = search.candidates.as_ref().unwrap();
    // 1 start + 21 candidates (is = 0…20); the error column is last.
    assert_eq!(c.rows.len(), 22, "{titles:?}");
    let errors: Vec<f64> = c.rows.iter().map(|r| *r.last().unwrap()).collect();
    let min = errors
        .iter()
        .copied()
        .filter(|e| e.is_finite())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(errors[c.picked], min);
    assert!(
        errors[..c.picked].iter().all(|&e| e > min || e.is_nan()),
        "{errors:?} picked {}",
        c.picked
    );
    // The picked row's scale is the step's.
    match search.values.get("scale") {
        Some(Value::F32(s)) => assert_eq!(*s as f64, c.rows[c.picked][2]),
        other => panic!("{other:?}"),
    }
    // Every sub-block's result follows, one row per sub-block of 32.
    let every = d
        .steps
        .iter()
        .find(|s| s.title.ends_with("every sub-block"))
        .expect("a summary");
    assert_eq!(every.candidates.as_ref().unwrap().rows.len(), 8);
    // The search in full is the sub-block holding the block's largest |x|.
    let x = &t.data[d.block * 256..(d.block + 1) * 256];
    let focus = x
        .iter()
        .enumerate()
        .fold(
            (0, 0.0f32),
            |m, (i, v)| if v.abs() > m.1 { (i, v.abs()) } else { m },
        )
        .0
        / 32;
    assert!(
        search.title.ends_with(&format!("sub-block {focus} of 8")),
        "{}",
        search.title
    );
    assert_eq!(every.candidates.as_ref().unwrap().picked, focus);
}

#[test]
fn every_golden_ggml_case_derives_the_reference_block() {
    let cases = common::load_cases("ggml");
    let mut checked = 0;
    for case in &cases {
        let Ok(spec) = codec::find(&case.observer) else {
            continue;
        };
        if !spec.encodes {
            continue;
        }
        let x = case.load_batches().unwrap().remove(0);
        let mut params = Params::new();
        if let Some(Json::String(path)) = case.params.get("imatrix") {
            let im = common::load_npy("ggml", path).unwrap();
            params = params.with("imatrix", im.data);
        }
        let blocks = common::load_npy("ggml", case.expected["blocks"].as_str().unwrap()).unwrap();
        let bytes: Vec<u8> = blocks.data.iter().map(|&v| v as u8).collect();
        let ty = quantscope::formats::ggml::GgmlType::from_id(&case.observer).unwrap();
        let count = bytes.len() / ty.block_bytes();
        for block in [None, Some(count - 1)] {
            let d = explain::explain(&case.observer, &params, &x, block)
                .unwrap_or_else(|e| panic!("{}: {e}", case.id));
            let want = hex(&bytes[d.block * ty.block_bytes()..(d.block + 1) * ty.block_bytes()]);
            assert_eq!(
                text(d.steps.last().unwrap(), "bytes"),
                want,
                "{} block {}",
                case.id,
                d.block
            );
        }
        checked += 1;
    }
    assert!(checked >= 30, "{checked} golden ggml cases checked");
}

/// The candidate tables of a search that runs while the data is fed, checked against the
/// library's own selection (`expected.mse_search`): the table lists as many candidates as the
/// library scored, and every slice listed in full marks the step the library selected, whose
/// range is the report's, bit for bit.
fn check_search_tables(case: &common::Case) -> Result<(), String> {
    // Per batch searched (a list), or one search: the table is the last batch's.
    let search = match case.expected.get("mse_search") {
        None => return Ok(()),
        Some(Json::Array(per_batch)) => per_batch.last().ok_or("no search")?,
        Some(one) => one,
    };
    let want_steps: Vec<i64> = search["selected_step"]
        .as_array()
        .ok_or("no selected_step")?
        .iter()
        .filter_map(Json::as_i64)
        .collect();
    let batches = case.load_batches()?;
    let report = common::case_run(case, &batches)?.explained(true).report();
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    let tables: Vec<(Option<i64>, &quantscope::derivation::Candidates)> = report
        .derivation
        .iter()
        .filter_map(|s| {
            let slice = match s.values.get("slice") {
                Some(Value::Int(k)) => Some(*k),
                _ => None,
            };
            s.candidates.as_ref().map(|c| (slice, c))
        })
        .collect();
    let (_, first) = tables.first().ok_or("no candidate table")?;
    if let Some(n) = search.get("steps_evaluated").and_then(Json::as_u64) {
        if first.rows.len() as u64 != n {
            return Err(format!(
                "{} candidates listed, the library scored {n}",
                first.rows.len()
            ));
        }
    }
    let full: Vec<(usize, &quantscope::derivation::Candidates)> = if want_steps.len() == 1 {
        vec![(0, *first)]
    } else {
        tables[1..]
            .iter()
            .map(|(k, c)| (k.unwrap_or(-1) as usize, *c))
            .collect()
    };
    if full.is_empty() {
        return Err("no slice listed in full".into());
    }
    for (k, c) in full {
        let row = &c.rows[c.picked];
        let want = want_steps.get(k).copied().ok_or(format!("slice {k}"))?;
        if c.rule.contains("raw range stayed") {
            if want != 0 {
                return Err(format!("slice {k}: no pick, the library selected {want}"));
            }
            continue;
        }
        if row[0] as i64 != want {
            return Err(format!(
                "slice {k}: picked step {}, the library {want}",
                row[0]
            ));
        }
        // With one batch the report's range is that batch's pick.
        let [lo, hi] = c.range.ok_or("no range columns")?.of(row);
        if batches.len() == 1
            && ((lo as f32).to_bits() != q.min_val[k].to_bits()
                || (hi as f32).to_bits() != q.max_val[k].to_bits())
        {
            return Err(format!(
                "slice {k}: the picked range [{lo}, {hi}] is not the report's [{}, {}]",
                q.min_val[k], q.max_val[k]
            ));
        }
    }
    Ok(())
}

#[test]
fn every_golden_search_lists_the_candidates_the_library_scored_and_marks_its_selection() {
    for family in ["llmcompressor", "torchao"] {
        let cases: Vec<common::Case> = common::load_cases(family)
            .into_iter()
            .filter(|c| c.expected.get("mse_search").is_some())
            .collect();
        assert!(cases.len() >= 5, "{family}: {} search cases", cases.len());
        common::run_cases(
            &format!("search tables of {family}"),
            cases,
            check_search_tables,
            false,
        );
    }
}
