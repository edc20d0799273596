//! Warming up a host that compiles WebAssembly in tiers.
//!
//! V8 (Node, Deno, Chromium) first runs each WebAssembly function as baseline code (Liftoff)
//! and compiles an optimised version (TurboFan) in the background once the function has done
//! enough work. A call already running stays in the baseline code, so the first large tensor a
//! fresh process observes runs its long kernel loops unoptimised: about 1.5× slower.
//! [`warm_up`] runs the default observers of the calibration families (PyTorch, Quark, Horizon,
//! ONNX Runtime, ModelOpt: the shared min/max, histogram, Q/DQ and metrics kernels) once on a
//! small synthetic tensor, which is enough work for V8 to queue the hot kernels for optimisation
//! before the user's data arrives. The LLM-era searches are left out: at this size they would
//! take seconds in baseline code. Results are discarded; nothing computed here is kept or shown.

use crate::engine::Run;
use crate::registry::{self, Family, ObserverSpec};
use crate::tensor::Tensor;

/// Values of the warm-up tensor: enough work per kernel to pass V8's tier-up budget, little
/// enough to take a fraction of a second in baseline code.
pub const WARM_UP_VALUES: usize = 65_536;

/// The observers [`warm_up`] runs: the default observers ([`registry::default_observers`]) of
/// the calibration families.
pub fn warmed() -> impl Iterator<Item = &'static ObserverSpec> {
    registry::default_observers().filter(|s| {
        matches!(
            s.family,
            Family::Torch | Family::Quark | Family::Horizon | Family::Ort | Family::Modelopt
        )
    })
}

/// Run every observer of [`warmed`] once on [`WARM_UP_VALUES`] deterministic values with
/// outliers; the number of observers run.
pub fn warm_up() -> usize {
    let Ok(tensor) = Tensor::new(vec![WARM_UP_VALUES], synthetic(WARM_UP_VALUES)) else {
        return 0;
    };
    let batches = [tensor];
    let mut ran = 0;
    for spec in warmed() {
        if let Ok(run) = Run::new(spec.id, Default::default(), &batches) {
            std::hint::black_box(run.report());
            ran += 1;
        }
    }
    ran
}

/// `n` values roughly uniform in [−1, 1) (a 32-bit xorshift), every 97th scaled by 20.
fn synthetic(n: usize) -> Vec<f32> {
    let mut state = 0x9E37_79B9u32;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let v = (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0;
            if i % 97 == 0 {
                20.0 * v
            } else {
                v
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_observer_runs_on_the_warm_up_tensor() {
        let ids: Vec<&str> = warmed().map(|s| s.id).collect();
        assert!(
            ids.contains(&"torch.HistogramObserver") && ids.len() >= 20,
            "{ids:?}"
        );
        assert_eq!(warm_up(), ids.len());
        let values = synthetic(WARM_UP_VALUES);
        assert!(values.iter().all(|v| v.is_finite() && v.abs() <= 20.0));
        assert!(values.iter().any(|v| v.abs() > 1.0));
    }
}
