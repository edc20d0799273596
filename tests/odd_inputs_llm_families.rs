//! The llm-compressor and torchao observers never panic: every strategy and granularity over
//! tensors of odd shapes (0-d, empty, 1-d, 2-d, 3-d, 4-d, sizes no group divides) and values
//! (NaN, ±inf, constants, zeros) either give a result or a specific error.
use quantscope::engine::{run, NonFinitePolicy};
use quantscope::params::Params;
use quantscope::registry;
use quantscope::tensor::Tensor;
use serde_json::{json, Value};

fn tensors() -> Vec<Tensor> {
    let ramp = |n: usize| {
        (0..n)
            .map(|i| (i as f32 * 0.37).sin() * 3.0)
            .collect::<Vec<_>>()
    };
    let mut out = vec![
        Tensor::from_vec(vec![1.5]),
        Tensor::from_vec(Vec::new()),
        Tensor::from_vec(ramp(7)),
        Tensor::new(vec![3, 0], Vec::new()).unwrap(),
        Tensor::new(vec![4, 6], ramp(24)).unwrap(),
        Tensor::new(vec![2, 3, 8], ramp(48)).unwrap(),
        Tensor::new(vec![2, 2, 2, 4], ramp(32)).unwrap(),
        Tensor::new(vec![2, 4], vec![0.0; 8]).unwrap(),
        Tensor::new(vec![2, 4], vec![-7.0; 8]).unwrap(),
    ];
    let mut special = ramp(24);
    special[3] = f32::NAN;
    special[5] = f32::INFINITY;
    special[11] = f32::NEG_INFINITY;
    out.push(Tensor::new(vec![4, 6], special).unwrap());
    if let Ok(t) = Tensor::new(Vec::new(), vec![2.0]) {
        out.push(t);
    }
    out
}

fn llmcompressor_params() -> Vec<Value> {
    let mut out = Vec::new();
    for base in ["weight", "input"] {
        for strategy in [
            json!({"strategy": "tensor"}),
            json!({"strategy": "channel"}),
            json!({"strategy": "group", "group_size": 4}),
            json!({"strategy": "block", "block_structure": "3x4"}),
            json!({"strategy": "token", "dynamic": true}),
            json!({"strategy": "tensor_group", "group_size": 2, "num_bits": 4, "type": "float", "scale_dtype": "float8_e4m3fn"}),
            json!({"strategy": "group", "group_size": 32, "num_bits": 4, "type": "float", "scale_dtype": "uint8", "zp_dtype": "uint8"}),
            json!({"num_bits": 8, "type": "float", "symmetric": false}),
            json!({"num_bits": 3, "symmetric": false, "importance": [1.0, 0.0, 2.0, 3.0, 1.0, 1.0]}),
        ] {
            let mut p = strategy.as_object().unwrap().clone();
            p.insert("base_name".into(), json!(base));
            out.push(Value::Object(p));
        }
    }
    out
}

fn torchao_params() -> Vec<Value> {
    let mut out = Vec::new();
    for g in [
        json!({"granularity": "PerTensor"}),
        json!({"granularity": "PerAxis", "axis": -1}),
        json!({"granularity": "PerAxis", "axis": 3}),
        json!({"granularity": "PerGroup", "group_size": 4}),
        json!({"granularity": "PerRow", "dim": 0}),
        json!({"granularity": "PerToken"}),
        json!({"granularity": "PerBlock", "block_size": "2x3"}),
    ] {
        for extra in [
            json!({}),
            json!({"mapping_type": "ASYMMETRIC", "target_dtype": "uint4", "zero_point_domain": "FLOAT"}),
            json!({"mapping_type": "SYMMETRIC_NO_CLIPPING_ERR", "target_dtype": "uint8", "zero_point_domain": "NONE"}),
            json!({"target_dtype": "float8_e4m3fn", "scale_dtype": "bfloat16", "keepdim": true}),
            json!({"target_dtype": "int4", "steps": 3}),
        ] {
            let mut p = g.as_object().unwrap().clone();
            p.extend(extra.as_object().unwrap().clone());
            out.push(Value::Object(p));
        }
    }
    out
}

#[test]
fn odd_shapes_and_values_never_panic() {
    let mut runs = 0;
    let mut results = 0;
    for spec in registry::observers() {
        let params = if spec.id.starts_with("llmcompressor.") {
            llmcompressor_params()
        } else if spec.id.starts_with("torchao.") {
            torchao_params()
        } else {
            continue;
        };
        for p in params {
            let mut p = p.as_object().unwrap().clone();
            p.retain(|k, _| spec.param(k).is_some());
            let params = Params(p);
            for t in tensors() {
                for policy in [NonFinitePolicy::Exclude, NonFinitePolicy::Strict] {
                    let batches = [t.clone(), t.clone()];
                    let outcome = std::panic::catch_unwind(|| {
                        run(spec.id, &params, &batches, policy).unwrap()
                    });
                    let report = outcome.unwrap_or_else(|_| {
                        panic!("{} panicked on {:?} with {:?}", spec.id, t.shape, params)
                    });
                    match &report.error {
                        Some(e) => assert!(!e.message.is_empty(), "{}: empty error", spec.id),
                        None => results += 1,
                    }
                    runs += 1;
                }
            }
        }
    }
    println!("{runs} runs, {results} with a result");
    assert!(
        runs > 1000 && results > 100,
        "{runs} runs, {results} results"
    );
}
