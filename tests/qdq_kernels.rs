//! Every fused quantize–dequantize kernel computes exactly what its observer's `fake_quantize`
//! computes: over the whole registry, every choice of every choice-valued parameter (dtypes,
//! schemes, rounding modes, …) and four shapes, the metrics of the fused pass equal, bit for
//! bit, those of `fake_quantize` followed by the metrics pass — on data built to hit rounding
//! ties, the grid's ends, values far outside it, signed zeros and non-finite values.
use quantscope::engine::Run;
use quantscope::params::{ParamKind, Params};
use quantscope::qdq::{measure_kernel, measure_pair};
use quantscope::registry;
use quantscope::tensor::Tensor;
use serde_json::json;

/// Calibration data of `shape`: a smooth spread with one outlier.
fn calibration(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|i| ((i as f32) * 0.618).sin() * 3.0 + if i == 7 { 11.0 } else { 0.0 })
        .collect();
    Tensor::new(shape.to_vec(), data).unwrap()
}

/// Values on and between the grid points of every scale, its ends, and the hard cases.
fn adversarial(shape: &[usize], scales: &[f32]) -> Tensor {
    let n: usize = shape.iter().product();
    let special = [
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e30,
        -1e30,
        f32::MIN_POSITIVE,
        1e-40,
    ];
    let data = (0..n)
        .map(|i| {
            // Observers without a scale (Quark's PlaceholderObserver: a cast) get unit steps.
            let s = scales.get(i % scales.len().max(1)).copied().unwrap_or(1.0);
            match i % 11 {
                0 => special[(i / 11) % special.len()],
                k => ((i / 11) as f32 - 200.0 + k as f32 * 0.25) * s,
            }
        })
        .collect();
    Tensor::new(shape.to_vec(), data).unwrap()
}

#[test]
fn every_kernel_equals_fake_quantize_bit_for_bit() {
    let mut checked = 0;
    for spec in registry::observers() {
        let mut variants = vec![Params::new()];
        for p in &spec.params {
            if let ParamKind::Choice { options } = &p.kind {
                variants.extend(options.iter().map(|o| Params::new().with(p.name, json!(o))));
            }
        }
        // Per-group layouts need their axis divisible by the group: blocks along the last axis
        // (runs of one block) and along a middle one (each element looks its block up).
        for shape in [vec![4096], vec![16, 96], vec![8, 256], vec![2, 256, 3]] {
            let batches = [calibration(&shape)];
            for params in &variants {
                let Ok(instance) =
                    Run::new(spec.id, params.clone(), &batches).and_then(|run| run.instance())
                else {
                    continue;
                };
                let Ok(q) = instance.qparams() else { continue };
                let Some(kernel) = instance.resolved.qdq_kernel(&shape, &q) else {
                    continue;
                };
                let x = adversarial(&shape, &q.scale);
                let dq = instance
                    .fake_quantize(&x, &q)
                    .unwrap_or_else(|e| panic!("{} {params:?}: {e}", spec.id));
                let fused = measure_kernel(&x.data, kernel.as_ref());
                let two_step = measure_pair(&x, &dq, &q);
                assert!(
                    fused.sum_sq_err.to_bits() == two_step.sum_sq_err.to_bits()
                        && fused.max_abs_err.to_bits() == two_step.max_abs_err.to_bits()
                        && fused == two_step,
                    "{} {params:?} {shape:?}: fused {fused:?} vs fake_quantize {two_step:?}",
                    spec.id
                );
                checked += 1;
            }
        }
    }
    // The torch, Quark, Horizon, ONNX Runtime and ModelOpt kernels all ran.
    assert!(checked >= 40, "only {checked} kernels checked");
    eprintln!("{checked} kernel/parameter/shape combinations equal fake_quantize");
}
