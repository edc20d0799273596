//! Every ggml codec against real GGUF files (`../shared/golden/gguf_quant/`): for each quantized
//! tensor whose type has a codec, the codec decodes the file's bytes to ggml's values (the
//! sha256 of the whole tensor, as the golden data pins it) and encodes the bf16 original (with
//! llama.cpp's importance where the file was made with one) to the very bytes in the file.
//!
//! The test is driven by the data: a ggml type added to the registry is checked here as soon as
//! a golden file holds it, and every ggml codec of the registry must be met at least once on
//! both (a decode-only codec, should one ever be registered, on decoding, with its `encode`
//! refusing clearly). The lattice i-quants (IQ1_S … IQ3_S) encode the bf16 original with the
//! file's imatrix to the file's bytes. A golden tensor of a quantized type without a codec
//! fails the test (F32, F16 and BF16 are plain dtypes, read without a codec).
//!
//! The tensor's bytes are taken where `cases.json` places them (`offset_in_file`, `n_bytes`),
//! and checked against the GGUF reader's catalogue when the reader lists the tensor.

mod common;

use common::golden_dir;
use quantscope::checkpoint::native::Checkpoint;
use quantscope::codec::{self, Encoded, Stored};
use quantscope::params::Params;
use quantscope::tensor::{read_tensors, Tensor};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::Path;

fn sha256_of(values: &[f32]) -> String {
    let mut h = Sha256::new();
    for v in values {
        h.update(v.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn read_npy(path: &Path) -> Tensor {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    read_tensors(&bytes, &path.to_string_lossy())
        .unwrap()
        .remove(0)
        .tensor
}

/// Every tensor of the original checkpoint, by its Hugging Face name.
fn originals(dir: &Path) -> Vec<(String, Tensor)> {
    let ck = Checkpoint::open(&[dir.join("original").join("model.safetensors")]);
    ck.catalog
        .entries
        .iter()
        .map(|e| (e.name.clone(), ck.read(e).unwrap()))
        .collect()
}

#[test]
fn ggml_codecs_decode_and_encode_real_gguf_files() {
    let dir = golden_dir().join("gguf_quant");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let originals = originals(&dir);
    let mut met_decode = BTreeSet::new();
    let mut met_encode = BTreeSet::new();
    let (mut decoded_count, mut encoded_count) = (0, 0);
    for file in cases["files"].as_array().unwrap() {
        let path = dir.join(file["file"].as_str().unwrap());
        let ck = Checkpoint::open(std::slice::from_ref(&path));
        let bytes = std::fs::read(&path).unwrap();
        for t in file["tensors"].as_array().unwrap() {
            let name = t["gguf_name"].as_str().unwrap();
            let ty = t["ggml_type"].as_str().unwrap();
            if PLAIN_DTYPES.contains(&ty) {
                continue;
            }
            let at = format!("{}: {name} ({ty})", path.display());
            let entry = codec::find(&format!("ggml.{ty}"))
                .unwrap_or_else(|_| panic!("{at}: no codec for the golden tensor's type"));
            let start = t["offset_in_file"].as_u64().unwrap() as usize;
            let end = start + t["n_bytes"].as_u64().unwrap() as usize;
            if let Some(listed) = ck.catalog.entries.iter().find(|e| e.name == name) {
                if !listed.range.is_empty() {
                    assert_eq!(listed.range, start as u64..end as u64, "{at}: catalogue");
                }
            }
            let stored = &bytes[start..end];
            let shape: Vec<usize> = serde_json::from_value(t["shape"].clone()).unwrap();

            // Decode the file's bytes.
            let codec = entry.build(&Params::new(), &shape).unwrap();
            let encoded = Encoded::new(&shape).with_flat("blocks", Stored::U8(stored.to_vec()));
            let decoded = codec.decode(&encoded).unwrap();
            assert_eq!(decoded.shape, shape, "{at}");
            assert_eq!(
                sha256_of(&decoded.data),
                t["expected"]["sha256"].as_str().unwrap(),
                "{at}: decoded values"
            );
            met_decode.insert(entry.id);
            decoded_count += 1;

            // Encode the original (bf16 values as float32), with the importance llama-quantize
            // passed when the file was made with one.
            let hf = t["hf_name"].as_str().unwrap();
            let original = &originals.iter().find(|(n, _)| n == hf).unwrap().1;
            let mut params = Params::new();
            if t["imatrix_used"].as_bool() == Some(true) {
                let im = read_npy(
                    &dir.join("expected")
                        .join("imatrix")
                        .join(format!("{name}.importance.npy")),
                );
                params = params.with("imatrix", im.data);
            }
            let codec = entry.build(&params, &shape).unwrap();
            let mut x = original.clone();
            x.shape = shape.clone();
            if !entry.encodes {
                let e = codec.encode(&x).unwrap_err().to_string();
                assert!(
                    e.contains("does not reproduce") && e.contains(ty),
                    "{at}: a decode-only codec refuses to encode clearly: {e}"
                );
                continue;
            }
            let ours = codec.encode(&x).unwrap();
            let blocks = ours.u8s("blocks").unwrap();
            if blocks != stored {
                let first = blocks.iter().zip(stored).position(|(a, b)| a != b);
                panic!("{at}: encoded bytes differ from the file's (first at byte {first:?})");
            }
            met_encode.insert(entry.id);
            encoded_count += 1;
        }
    }
    let registry = codec::codecs();
    let ggml = || registry.iter().filter(|c| c.id.starts_with("ggml."));
    let all: BTreeSet<&str> = ggml().map(|c| c.id).collect();
    let encoding: BTreeSet<&str> = ggml().filter(|c| c.encodes).map(|c| c.id).collect();
    let unmet: Vec<_> = all.difference(&met_decode).collect();
    assert!(
        unmet.is_empty(),
        "ggml codecs no golden GGUF tensor decoded: {unmet:?}"
    );
    let unmet: Vec<_> = encoding.difference(&met_encode).collect();
    assert!(
        unmet.is_empty(),
        "ggml codecs no golden GGUF tensor encoded: {unmet:?}"
    );
    assert!(
        decoded_count >= all.len(),
        "{decoded_count} tensors decoded"
    );
    println!(
        "{decoded_count} golden tensors decoded ({} types), {encoded_count} encoded ({} types)",
        met_decode.len(),
        met_encode.len()
    );
}

/// GGUF's plain dtypes, read without a codec.
const PLAIN_DTYPES: [&str; 3] = ["F32", "F16", "BF16"];
