//! The WebAssembly boundary inside a dedicated Web Worker — where the page runs it — with no DOM:
//! loading (whole and chunked), observing, errors as exceptions, curves and SVG rendering.
#![cfg(target_arch = "wasm32")]

use quantscope::tensor::{encode_npy, npy_header};
use quantscope::wasm::{
    header_size, limits, quantizers, registry, render_comparison_svg, SessionHandle,
};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

fn to_json(v: &JsValue) -> Value {
    let text: String = js_sys::JSON::stringify(v).unwrap().into();
    serde_json::from_str(&text).unwrap()
}

fn js(v: Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap()
}

fn err_text(e: wasm_bindgen::JsError) -> String {
    let v: JsValue = e.into();
    js_sys::Reflect::get(&v, &"message".into())
        .unwrap()
        .as_string()
        .unwrap_or_default()
}

/// A float32 `.npy` file.
fn npy(values: &[f32], shape: &[usize]) -> Vec<u8> {
    let body: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    encode_npy(&npy_header("<f4", false, shape), &body)
}

fn select_first(s: &mut SessionHandle) -> Value {
    to_json(
        &s.select(js(
            json!({"batches": [{"file": 0, "member": ""}], "split": null}),
        ))
        .map_err(JsValue::from)
        .unwrap(),
    )
}

#[wasm_bindgen_test]
fn loads_a_file_and_summarises_it() {
    let mut s = SessionHandle::new();
    let values: Vec<f32> = (0..600).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
    let info = to_json(
        &s.load_file("act.npy", &npy(&values, &[20, 30]))
            .map_err(JsValue::from)
            .unwrap(),
    );
    assert_eq!(info["members"][0]["shape"], json!([20, 30]));
    assert_eq!(info["members"][0]["dtype"], "float32");
    let summary = select_first(&mut s);
    assert_eq!(summary["elements"], 600);
    assert_eq!(summary["nonfinite"]["nan"], 0);
    let hist = s.histogram().map_err(JsValue::from).unwrap();
    let counts = js_sys::Reflect::get(&hist, &"counts".into()).unwrap();
    let counts = js_sys::Float64Array::from(counts).to_vec();
    assert_eq!(counts.iter().sum::<f64>(), 600.0);
    let lim = to_json(&limits().map_err(JsValue::from).unwrap());
    assert_eq!(lim["maxElements"], 1 << 26);
}

#[wasm_bindgen_test]
fn malformed_files_throw_and_keep_the_session() {
    let mut s = SessionHandle::new();
    s.load_file("ok.npy", &npy(&[1.0, 2.0], &[2]))
        .map_err(JsValue::from)
        .unwrap();
    select_first(&mut s);
    s.begin_replace();
    let e = s
        .load_file("bad.npy", b"\x93NUMPY\x01\x00 nonsense")
        .unwrap_err();
    let text = err_text(e);
    assert!(text.contains("bad.npy"), "{text}");
    s.abandon_replace();
    assert_eq!(s.file_count(), 1);
    assert_eq!(
        to_json(&s.summary().map_err(JsValue::from).unwrap())["elements"],
        2
    );
    let e = s
        .select(js(json!({"batches": [{"file": 9, "member": ""}]})))
        .unwrap_err();
    assert!(err_text(e).contains("no loaded file"));
}

#[wasm_bindgen_test]
fn chunked_loading_refuses_huge_files_from_the_header() {
    let mut s = SessionHandle::new();
    let head = npy(&[], &[268_435_456]);
    assert_eq!(
        header_size(&head[..16]).map_err(JsValue::from).unwrap(),
        head.len()
    );
    let e = s
        .begin_stream("huge.npy", &head, (head.len() + (1 << 30)) as f64, None)
        .unwrap_err();
    let text = err_text(e);
    assert!(
        text.contains("1.0 GiB") && text.contains("huge.npy"),
        "{text}"
    );
    // A small file in three chunks.
    let file = npy(&[1.5, -2.0, 3.25], &[3]);
    let plan = to_json(
        &s.begin_stream("small.npy", &file, file.len() as f64, None)
            .map_err(JsValue::from)
            .unwrap(),
    );
    let offset = plan["offset"].as_u64().unwrap() as usize;
    for chunk in file[offset..].chunks(5) {
        s.push_chunk(chunk).map_err(JsValue::from).unwrap();
    }
    s.finish_stream().map_err(JsValue::from).unwrap();
    let summary = select_first(&mut s);
    assert_eq!(summary["max"], 3.25);
}

#[wasm_bindgen_test]
fn observes_with_registered_observers_and_reports_errors_in_results() {
    let reg = to_json(&registry().map_err(JsValue::from).unwrap());
    let observers = reg["observers"].as_array().unwrap();
    for o in observers {
        assert!(o["id"]
            .as_str()
            .unwrap()
            .starts_with(o["family"].as_str().unwrap()));
        for p in o["params"].as_array().unwrap() {
            assert!(p["affects"] == "data" || p["affects"] == "search", "{p}");
        }
    }
    let mut s = SessionHandle::new();
    s.load_file("t.npy", &npy(&[-1.0, 0.5, 2.0], &[3]))
        .map_err(JsValue::from)
        .unwrap();
    select_first(&mut s);
    let e = s.observe("nope.Observer", js(json!({})), None).unwrap_err();
    assert!(err_text(e).contains("unknown observer"));
    if !observers.iter().any(|o| o["id"] == "torch.MinMaxObserver") {
        return;
    }
    // quint8 affine over [-1, 2]: scale = 3/255, zero point = -round(-1 / scale) = 85.
    let r = to_json(
        &s.observe("torch.MinMaxObserver", js(json!({})), None)
            .map_err(JsValue::from)
            .unwrap(),
    );
    assert_eq!(r["ok"], true);
    // The exact float32 scale, widened: no decimal shortening on the way.
    assert_eq!(r["scale"][0].as_f64().unwrap(), (3.0f32 / 255.0) as f64);
    assert_eq!(r["zero_point"][0], 85.0);
    assert_eq!(r["min_val"][0], -1.0);
    // Search-only change: applied to the state.
    let r2 = to_json(
        &s.update(
            "torch.MinMaxObserver",
            js(json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric"})),
            None,
        )
        .map_err(JsValue::from)
        .unwrap(),
    );
    assert_eq!(r2["state_reused"], true);
    assert_eq!(r2["zero_point"][0], 0.0);
    // An invalid combination is a failed result, not an exception.
    let bad = to_json(
        &s.update(
            "torch.MinMaxObserver",
            js(json!({"quant_min": 0, "quant_max": 0})),
            None,
        )
        .map_err(JsValue::from)
        .unwrap(),
    );
    assert_eq!(bad["ok"], false);
    assert_eq!(bad["error"]["kind"], "framework");
}

/// `v` with its Float64Array fields (and pairs of them) as plain arrays, as JSON, and the names
/// of those fields.
fn unpacked(v: &JsValue) -> (Value, Vec<String>) {
    use wasm_bindgen::JsCast;
    let object = js_sys::Object::assign(&js_sys::Object::new(), v.unchecked_ref());
    let plain = |x: &JsValue| {
        x.dyn_ref::<js_sys::Float64Array>()
            .map(|typed| JsValue::from(js_sys::Array::from(typed)))
    };
    let mut packed = Vec::new();
    for key in js_sys::Object::keys(&object).iter() {
        let value = js_sys::Reflect::get(&object, &key).unwrap();
        let unpacked = plain(&value).or_else(|| {
            let pair = value.dyn_ref::<js_sys::Array>()?;
            let (lo, hi) = (plain(&pair.get(0))?, plain(&pair.get(1))?);
            Some(js_sys::Array::of2(&lo, &hi).into())
        });
        if let Some(unpacked) = unpacked {
            js_sys::Reflect::set(&object, &key, &unpacked).unwrap();
            packed.push(key.as_string().unwrap());
        }
    }
    (to_json(&object), packed)
}

/// The page asks for reports `packed`: per-slice arrays of more than 1024 numbers come as
/// Float64Array, with exactly the plain report's numbers.
#[wasm_bindgen_test]
fn a_packed_report_carries_the_plain_reports_numbers() {
    let mut s = SessionHandle::new();
    let values: Vec<f32> = (0..2048 * 32)
        .map(|i| ((i * 7919 % 1009) as f32 - 500.0) * 0.013 + (i % 32) as f32 * 0.1)
        .collect();
    s.load_file("w.npy", &npy(&values, &[2048, 32]))
        .map_err(JsValue::from)
        .unwrap();
    select_first(&mut s);
    let observe = |s: &mut SessionHandle, id: &str, packed: Option<bool>| {
        s.observe(id, js(json!({})), packed)
            .map_err(JsValue::from)
            .unwrap()
    };
    for (id, long) in [
        (
            "torch.PerChannelMinMaxObserver",
            vec!["scale", "zero_point", "min_val", "max_val"],
        ),
        ("quark.PerBlockMXObserver", vec!["scale", "zero_point"]),
        ("torch.MinMaxObserver", vec![]),
    ] {
        let plain = to_json(&observe(&mut s, id, None));
        assert_eq!(plain["ok"], true, "{id}: {plain}");
        let (packed, packed_fields) = unpacked(&observe(&mut s, id, Some(true)));
        for field in long {
            assert!(
                packed_fields.iter().any(|f| f == field),
                "{id}: {field} not packed ({packed_fields:?})"
            );
        }
        assert_eq!(packed, plain, "{id}");
        // Unpacked, the plain report's own arrays stay arrays.
        assert!(
            unpacked(&observe(&mut s, id, Some(false))).1.is_empty(),
            "{id}"
        );
    }
}

#[wasm_bindgen_test]
fn curves_and_svg_render_without_a_dom() {
    let mut s = SessionHandle::new();
    let values: Vec<f32> = (0..4000)
        .map(|i| ((i as f32) * 0.013).sin() * 2.0)
        .collect();
    s.load_file("t.npy", &npy(&values, &[4000]))
        .map_err(JsValue::from)
        .unwrap();
    select_first(&mut s);
    let ids = js(json!([]));
    let curve = to_json(
        &s.curve(
            js(json!({"bits": 4, "scheme": "symmetric", "points": 50})),
            ids.clone(),
            js(json!([])),
        )
        .map_err(JsValue::from)
        .unwrap(),
    );
    assert_eq!(curve["points"].as_array().unwrap().len(), 50);
    assert!(curve["best"].as_u64().is_some());
    let svg = s
        .comparison_svg(
            ids,
            js(json!([])),
            js(json!({"bits": 8, "scheme": "affine", "points": 100})),
            JsValue::NULL,
            900,
        )
        .map_err(JsValue::from)
        .unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("Quantization error versus clipping threshold")
    );
    // The same from plain data (what the npm package's renderSvg does).
    let comparison = s
        .comparison(
            js(json!([])),
            js(json!([])),
            js(json!({"bits": 8, "scheme": "affine", "points": 60})),
        )
        .map_err(JsValue::from)
        .unwrap();
    let svg2 = render_comparison_svg(comparison, js(json!({"sqnr": true})), 800)
        .map_err(JsValue::from)
        .unwrap();
    assert!(svg2.contains("SQNR"));
}

/// In WebAssembly too, every observer of the registry explains its qparams: `explain(id)` ends
/// in the report's own scale and zero point (bit for bit through JS numbers), and its view
/// (`explain(id, true)`) has a step for every step.
#[wasm_bindgen_test]
fn every_observer_explains_its_qparams_with_the_reports_numbers() {
    let reg = to_json(&registry().map_err(JsValue::from).unwrap());
    let mut s = SessionHandle::new();
    let values: Vec<f32> = (0..64 * 96)
        .map(|i| {
            let u = ((i as f32 * 0.618).fract() - 0.5) * 2.0;
            if i % 997 == 0 {
                u * 20.0
            } else {
                u * u * u
            }
        })
        .collect();
    s.load_file("w.npy", &npy(&values, &[64, 96]))
        .map_err(JsValue::from)
        .unwrap();
    select_first(&mut s);
    assert!(to_json(
        &s.explain("torch.MinMaxObserver", None)
            .map_err(JsValue::from)
            .unwrap()
    )
    .is_null());
    let mut failures = Vec::new();
    for o in reg["observers"].as_array().unwrap() {
        let id = o["id"].as_str().unwrap();
        let r = to_json(
            &s.observe(id, js(json!({})), None)
                .map_err(JsValue::from)
                .unwrap(),
        );
        if r["ok"] != true {
            continue;
        }
        let steps = to_json(&s.explain(id, None).map_err(JsValue::from).unwrap());
        let view = to_json(&s.explain(id, Some(true)).map_err(JsValue::from).unwrap());
        let Some(last) = steps.as_array().and_then(|a| a.last()) else {
            failures.push(format!("{id}: no derivation"));
            continue;
        };
        if view.as_array().map(Vec::len) != steps.as_array().map(Vec::len) {
            failures.push(format!("{id}: the view has another number of steps"));
        }
        if r["grid"]["kind"] == "none" {
            continue;
        }
        if last["values"]["scale"] != r["scale"] || last["values"]["zero_point"] != r["zero_point"]
        {
            failures.push(format!(
                "{id}: last step {} {}, report {} {}",
                last["values"]["scale"], last["values"]["zero_point"], r["scale"], r["zero_point"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// In WebAssembly too, every format that quantizes the formats view's tensor explains a block of
/// it (`explainFormat`): the followed block's values are the tensor's, its decoded values as
/// many, and they are among the values `quantize` returns for the whole tensor; a format that
/// cannot quantize the tensor cannot explain it either.
#[wasm_bindgen_test]
fn every_format_that_quantizes_explains_a_block() {
    let reg = to_json(&quantizers().map_err(JsValue::from).unwrap());
    let mut s = SessionHandle::new();
    let values: Vec<f32> = (0..64 * 256)
        .map(|i| ((i as f32 * 0.618).fract() - 0.5) * if i % 331 == 0 { 30.0 } else { 2.0 })
        .collect();
    s.load_file("w.npy", &npy(&values, &[64, 256]))
        .map_err(JsValue::from)
        .unwrap();
    select_first(&mut s);
    let mut explained = 0;
    let mut failures = Vec::new();
    for f in reg["formats"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        let quantized = s.quantize(id, js(json!({}))).map(|q| to_json(&q));
        let derivation = s
            .explain_format(id, js(json!({})), None, None)
            .map(|d| to_json(&d));
        let (q, d) = match (quantized, derivation) {
            (Ok(q), Ok(d)) => (q, d),
            (Err(_), Err(_)) => continue,
            (q, d) => {
                failures.push(format!(
                    "{id}: quantize ok {}, explain ok {}",
                    q.is_ok(),
                    d.is_ok()
                ));
                continue;
            }
        };
        let steps = d["steps"].as_array().unwrap();
        let (first, last) = (&steps[0], steps.last().unwrap());
        let listed = first["values"]["values"].as_array().map_or(0, Vec::len);
        let decoded = last["values"]["decoded"].as_array().map_or(0, Vec::len);
        if last["title"] != "Stored block" || listed == 0 || decoded != listed {
            failures.push(format!(
                "{id}: {listed} values listed, {decoded} decoded, last `{}`",
                last["title"]
            ));
            continue;
        }
        let all: std::collections::HashSet<u64> = q["values"]
            .as_object()
            .map(|o| {
                o.values()
                    .filter_map(|v| v.as_f64())
                    .map(f64::to_bits)
                    .collect()
            })
            .unwrap_or_default();
        if !all.is_empty()
            && last["values"]["decoded"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| !all.contains(&v.as_f64().unwrap_or(f64::NAN).to_bits()))
        {
            failures.push(format!("{id}: a decoded value is not among quantize's"));
        }
        explained += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // ggml's IQ2_XXS, IQ2_XS and IQ1_S encode only with an imatrix, which this run has not.
    let needs_imatrix = |f: &serde_json::Value| {
        f["id"]
            .as_str()
            .and_then(quantscope::formats::ggml::GgmlType::from_id)
            .is_some_and(|t| t.requires_imatrix())
    };
    let encoding = reg["formats"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["encodes"] == true && !needs_imatrix(f))
        .count();
    assert_eq!(explained, encoding, "every format that encodes explains");
}
