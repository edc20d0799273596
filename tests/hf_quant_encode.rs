//! The strongest check of the Hugging Face checkpoint codecs' encoders: encoding the bf16
//! original of every quantized weight (`../shared/golden/hf_quant/original/`) with the codec
//! and parameters its layout was recognised with gives the checkpoint's stored arrays byte
//! for byte, where the layout is the library's round to nearest (compressed-tensors' RTN is
//! `bit_equal_to_decompressed` in `cases.json`; gpt-oss' quantizer is RTN; DeepSeek's probes
//! were written with DeepSeek's `weight_quant`, the Linears by transformers' `Fp8Quantize`,
//! whose scales `1/(448/amax)` differ from DeepSeek's `amax/448` in the last bit: for those
//! only the codes are compared). Layouts whose encoders are not reproduced (CT NVFP4, ModelOpt)
//! must refuse to encode.

mod common;

use common::golden_dir;
use quantscope::checkpoint::native::Checkpoint;
use quantscope::checkpoint::weights::{stored_elements, PartFrom, WeightSource};
use quantscope::codec;

const EXACT: [&str; 10] = [
    "ct_w4a16_g128_sym",
    "ct_w4a16_g128_asym",
    "ct_w4a16_g32",
    "ct_w8a8_int8_channel",
    "ct_fp8_channel",
    "ct_fp8_block",
    "deepseek_fp8_block",
    "gptoss_mxfp4",
    "ct_mxfp4",
    "ct_nvfp4",
];

const REFUSED: [&str; 1] = ["modelopt_nvfp4"];

#[test]
fn encoding_the_original_gives_the_stored_arrays() {
    let dir = golden_dir().join("hf_quant");
    let original = Checkpoint::open(&[dir.join("original")]);
    let mut failures = Vec::new();
    let mut compared = 0;
    for id in EXACT.iter().chain(&REFUSED) {
        let ck = Checkpoint::open(&[dir.join(id)]);
        for w in ck.layout().weights {
            let WeightSource::Coded {
                codec: id_codec,
                params,
                parts,
            } = &w.source
            else {
                continue;
            };
            if let Some(problem) = &w.problem {
                failures.push(format!("{id}: {}: {problem}", w.name));
                continue;
            }
            let Some(src) = original.catalog.entries.iter().find(|e| e.name == w.name) else {
                failures.push(format!("{id}: {} not in original/", w.name));
                continue;
            };
            let x = original.read(src).unwrap();
            let c = codec::find(id_codec)
                .unwrap()
                .build(params, &w.shape)
                .unwrap();
            let encoded = c.encode(&x);
            if REFUSED.contains(id) {
                assert!(encoded.is_err(), "{id}: {} encoded", w.name);
                continue;
            }
            let encoded = match encoded {
                Ok(e) => e,
                Err(e) => {
                    failures.push(format!("{id}: {}: {e}", w.name));
                    continue;
                }
            };
            for p in parts {
                let PartFrom::Entry(i) = p.from else { continue };
                let entry = &ck.catalog.entries[i];
                let stored = stored_elements(entry, &ck.bytes(entry).unwrap()).unwrap();
                let ours = &encoded.part(p.part).unwrap().data;
                let transformers_scale = *id == "deepseek_fp8_block"
                    && p.part == "weight_scale_inv"
                    && w.name.starts_with("encoder.");
                if transformers_scale {
                    continue;
                }
                if *ours != stored {
                    failures.push(format!("{id}: {}: `{}` differs", w.name, p.part));
                } else {
                    compared += 1;
                }
            }
        }
    }
    eprintln!("{compared} stored arrays reproduced byte for byte");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared > 20);
}
