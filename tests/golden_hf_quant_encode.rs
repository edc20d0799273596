//! The round-to-nearest layouts of `../shared/golden/hf_quant/` encoded again: each codec's
//! `encode` of the bf16 original gives the checkpoint's stored arrays byte for byte
//! (bitsandbytes 4-bit with and without double quantization, LLM.int8, AWQ GEMM made by plain
//! RTN). GPTQ's file is not RTN (its codes come from GPTQ's Hessian updates), so there the
//! packer alone is checked: packing the file's own decoded values with its scales, zeros and
//! act-order `g_idx` gives its `qweight` and `qzeros` back.

mod common;

use common::golden_dir;
use quantscope::checkpoint::native::Checkpoint;
use quantscope::checkpoint::weights::{stored_elements, PartFrom, WeightSource};
use quantscope::codec::gptq::Gptq;
use quantscope::codec::half::OutDType;
use quantscope::codec::{find, Encoded, Stored};
use quantscope::tensor::Tensor;
use serde_json::Value;

const LINEARS: [&str; 2] = [
    "encoder.layer.0.attention.self.query.weight",
    "encoder.layer.1.output.dense.weight",
];

/// The checkpoint's tensor file (not the folder: its `expected/*.npy` carry the weights' names).
fn open(layout: &str) -> Checkpoint {
    Checkpoint::open(&[golden_dir()
        .join("hf_quant")
        .join(layout)
        .join("model.safetensors")])
}

fn original(name: &str) -> Tensor {
    let ck = open("original");
    let entry = ck.catalog.entries.iter().find(|e| e.name == name).unwrap();
    ck.read(entry).unwrap()
}

/// The stored elements of entry `name` of `ck`.
fn stored(ck: &Checkpoint, name: &str) -> Stored {
    let entry = ck
        .catalog
        .entries
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"));
    stored_elements(entry, &ck.bytes(entry).unwrap()).unwrap()
}

/// Encode the original of `weight` with the codec and parameters the layout found, and compare
/// every part the file stores as an entry (and every value part) with the encoded one.
fn encode_matches(layout: &str) -> usize {
    let ck = open(layout);
    let found = ck.layout();
    let mut compared = 0;
    for name in LINEARS {
        let w = found.weights.iter().find(|w| w.name == name).unwrap();
        let WeightSource::Coded {
            codec,
            params,
            parts,
        } = &w.source
        else {
            panic!("{layout}: {name} is not coded");
        };
        let c = find(codec).unwrap().build(params, &w.shape).unwrap();
        let encoded = c.encode(&original(name)).unwrap();
        for p in parts {
            let expected = match &p.from {
                PartFrom::Entry(i) => {
                    let entry = &ck.catalog.entries[*i];
                    if p.part == "weight_format" {
                        continue; // transformers' own marker, not an output of the quantizer
                    }
                    stored_elements(entry, &ck.bytes(entry).unwrap()).unwrap()
                }
                PartFrom::EntryBytes(i) => {
                    let entry = &ck.catalog.entries[*i];
                    let data = stored_elements(entry, &ck.bytes(entry).unwrap()).unwrap();
                    Stored::U8(data.to_le_bytes())
                }
                PartFrom::Value { data, .. } => data.clone(),
            };
            let got = &encoded
                .part(p.part)
                .unwrap_or_else(|_| panic!("{layout}: {name}: encode has no {}", p.part))
                .data;
            assert!(
                same_bits(got, &expected),
                "{layout}: {name}: encoded `{}` differs from the file's",
                p.part
            );
            compared += 1;
        }
        derivation_is_the_files(&ck, w, codec, params, c.as_ref(), &encoded);
    }
    compared
}

/// The derivation of the original under the layout's codec (the slice holding the largest |x|)
/// ends in the values the file's weight decodes to there, bit for bit.
fn derivation_is_the_files(
    ck: &Checkpoint,
    w: &quantscope::checkpoint::weights::Weight,
    codec: &str,
    params: &quantscope::params::Params,
    c: &dyn quantscope::codec::Codec,
    encoded: &Encoded,
) {
    use quantscope::derivation::Value;
    let x = original(&w.name);
    let d = quantscope::codec::explain::explain(codec, params, &x, None).unwrap();
    let slices = c.stored_slices(encoded).unwrap().unwrap();
    let members: Vec<usize> = (0..x.data.len())
        .filter(|&i| slices.slicing.slice_of(i) == d.block)
        .collect();
    let from = match d.steps[0].values.get("listed from") {
        Some(Value::Int(f)) => *f as usize,
        _ => 0,
    };
    let Some(Value::F32s(decoded)) = d.steps.last().unwrap().values.get("decoded") else {
        panic!("{}: no decoded values", w.name)
    };
    let file = ck.read_weight(w).unwrap();
    let want: Vec<u32> = members[from..from + decoded.len()]
        .iter()
        .map(|&i| file.data[i].to_bits())
        .collect();
    let got: Vec<u32> = decoded.iter().map(|v| v.to_bits()).collect();
    assert!(
        got == want,
        "{codec} {}: the derivation's block is not the file's",
        w.name
    );
}

/// Equal element for element, float32 by bit pattern (the sign of zero counts).
fn same_bits(a: &Stored, b: &Stored) -> bool {
    match (a, b) {
        (Stored::F32(x), Stored::F32(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        _ => a == b,
    }
}

#[test]
fn bitsandbytes_4bit_encode_gives_the_files_arrays() {
    for layout in ["bnb_nf4", "bnb_fp4", "bnb_nf4_dq", "bnb_fp4_dq"] {
        let n = encode_matches(layout);
        // weight, absmax, quant_map (+ nested_absmax, nested_quant_map, nested_offset).
        let parts = if layout.ends_with("_dq") { 6 } else { 3 };
        assert_eq!(n, 2 * parts, "{layout}");
    }
}

#[test]
fn llm_int8_encode_gives_the_files_codes_and_scb() {
    assert_eq!(encode_matches("bnb_int8"), 4);
}

#[test]
fn awq_encode_gives_the_files_qweight_qzeros_and_scales() {
    assert_eq!(encode_matches("awq_gemm_g128"), 6);
}

#[test]
fn gptq_pack_of_the_files_values_gives_its_qweight_and_qzeros() {
    for layout in ["gptq_g128_sym", "gptq_g128_sym_desc_act"] {
        let ck = open(layout);
        let found = ck.layout();
        for name in LINEARS {
            let w = found.weights.iter().find(|w| w.name == name).unwrap();
            let module = name.strip_suffix(".weight").unwrap();
            let values = ck.read_weight(w).unwrap();
            let (n, k) = (w.shape[0], w.shape[1]);
            let Stored::U16(scales) = stored(&ck, &format!("{module}.scales")) else {
                panic!()
            };
            let scales: Vec<f32> = scales
                .iter()
                .map(|&b| half::f16::from_bits(b).to_f32())
                .collect();
            let Stored::I32(g_idx) = stored(&ck, &format!("{module}.g_idx")) else {
                panic!()
            };
            let g_idx: Vec<usize> = g_idx.iter().map(|&g| g as usize).collect();
            // The zeros the decoder uses: v1 word + 0x11111111, split into nibbles.
            let Stored::I32(qzeros) = stored(&ck, &format!("{module}.qzeros")) else {
                panic!()
            };
            let groups = scales.len() / n;
            let zeros: Vec<u32> = (0..groups * n)
                .map(|i| {
                    let word =
                        (qzeros[(i / n) * (n / 8) + (i % n) / 8] as u32).wrapping_add(0x1111_1111);
                    (word >> (4 * (i % 8))) & 15
                })
                .collect();
            let codec = Gptq {
                bits: 4,
                group_size: Some(128),
                desc_act: layout.ends_with("desc_act"),
                sym: true,
                v1: true,
                dtype: OutDType::Float16,
            };
            let packed: Encoded = codec.pack(&values, &scales, &zeros, &g_idx).unwrap();
            for part in ["qweight", "qzeros", "scales", "g_idx"] {
                assert_eq!(
                    packed.part(part).unwrap().data,
                    stored(&ck, &format!("{module}.{part}")),
                    "{layout}: {name}: {part}"
                );
            }
            assert_eq!(values.data.len(), n * k);
        }
    }
}

#[test]
fn gptq_v2_reads_the_v1_files_with_the_offset_added_by_hand() {
    // No gptq_v2 checkpoint is in the golden set: convert the v1 one as GPTQModel does
    // (qzeros + 0x11111111, a whole-word add) and read it as v2.
    let ck = open("gptq_g128_sym_desc_act");
    let found = ck.layout();
    let w = found.weights.iter().find(|w| w.name == LINEARS[0]).unwrap();
    let expected = ck.read_weight(w).unwrap();
    let WeightSource::Coded { params, parts, .. } = &w.source else {
        panic!()
    };
    let mut e = Encoded::new(&w.shape);
    for p in parts {
        let PartFrom::Entry(i) = p.from else { panic!() };
        let entry = &ck.catalog.entries[i];
        let mut data = stored_elements(entry, &ck.bytes(entry).unwrap()).unwrap();
        if p.part == "qzeros" {
            let Stored::I32(v) = &mut data else { panic!() };
            v.iter_mut()
                .for_each(|z| *z = (*z as u32).wrapping_add(0x1111_1111) as i32);
        }
        e = e.with(p.part, entry.shape.clone(), data);
    }
    let v2 = params.merged(
        &quantscope::params::Params::new().with("checkpoint_format", Value::from("gptq_v2")),
    );
    let c = find("gptq.int").unwrap().build(&v2, &w.shape).unwrap();
    let got = c.decode(&e).unwrap();
    assert!(got
        .data
        .iter()
        .zip(&expected.data)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}

#[test]
fn compressed_tensors_mxfp4_encode_gives_the_files_codes_and_exponents() {
    // weight_packed and weight_scale of both Linears.
    assert_eq!(encode_matches("ct_mxfp4"), 4);
}
