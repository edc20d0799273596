//! The vector width never changes a result: the CLI prints the same bytes with the hot loops
//! compiled for AVX-512, for AVX2 and for the build's baseline (`QUANTSCOPE_SIMD`, see
//! `src/simd.rs`). A CPU without AVX-512 (or AVX2) runs its widest copy for the wider caps, so
//! there the comparison covers the widths it has; the test prints which ones it compared.
//!
//! The commands reach every loop that `simd::with_wide_vectors` compiles three times: the
//! statistics scan, histogram binning and Q/DQ metrics (every per-tensor observer), per-channel
//! Q/DQ, Quark's power-of-two MSE search, Horizon's MSE search, torchao's and llm-compressor's
//! MSE searches, ggml's encoders, the model ranking's statistics and the checkpoint diff.

mod common;

fn shared(relative: &str) -> String {
    common::shared_dir()
        .join(relative)
        .to_string_lossy()
        .into_owned()
}

/// The CLI's stdout for `args` with `QUANTSCOPE_SIMD=width`.
fn run(width: &str, args: &[&str]) -> String {
    common::cli_stdout_with("QUANTSCOPE_SIMD", width, args)
}

#[test]
fn every_vector_width_prints_identical_documents() {
    let activation = shared("samples/minilm/activations/l0_ffn_gelu.npy");
    let weight = shared("samples/minilm/weights/l0_ffn_intermediate_dense_weight.npy");
    let original = shared("golden/gguf_quant/original/model.safetensors");
    let gguf = shared("golden/gguf_quant/model-Q4_K_M.gguf");
    let checkpoint = shared("samples/minilm/minilm_layer1_small.safetensors");
    let searches = "torch.PerChannelMinMaxObserver,quark.PerTensorPowOf2MinMSEObserver,\
                    horizon.MSEObserver,torchao.AffineQuantizedMSEObserver,\
                    llmcompressor.memoryless_mse,llmcompressor.nvfp4_expanded_mse";
    let commands: Vec<Vec<&str>> = vec![
        vec!["observe", &activation, "--json"],
        vec!["observe", &weight, "--observer", searches, "--json"],
        vec!["quantize", &weight, "--quantizer", "ggml.Q4_0", "--json"],
        vec!["quantize", &weight, "--quantizer", "ggml.Q5_0", "--json"],
        vec!["quantize", &weight, "--quantizer", "ggml.Q6_K", "--json"],
        vec!["diff", &original, &gguf, "--json"],
        vec!["model", &checkpoint, "--json"],
    ];
    let mut compared = 0;
    for args in &commands {
        let widest = run("avx512", args);
        assert!(widest.len() > 100, "{args:?}: {widest}");
        for width in ["avx2", "baseline"] {
            let narrower = run(width, args);
            assert!(
                narrower == widest,
                "{args:?}: the document differs between avx512 and {width}"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 2 * commands.len());
    let widest = quantscope::simd::cap(quantscope::simd::Width::Avx512);
    eprintln!("compared the baseline up to {}", widest.name());
}
