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
//! take seconds in baseline code. [`warm_up_loading`] does the same for loading a file: a
//! `.npy` read whole and in chunks, then selected (the shared scan, the moment histogram behind
//! the summary and the display histogram). Results are discarded; nothing computed here is kept
//! or shown.

use crate::engine::Run;
use crate::explorer::{Selection, Session};
use crate::registry::{self, Family, ObserverSpec};
use crate::tensor::npy::{encode_npy, npy_header};
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

/// Bytes per chunk when [`warm_up_loading`] reads its file in chunks (several chunks, as a
/// large file is read).
const WARM_UP_CHUNK: usize = 16 * 1024;

/// Load [`WARM_UP_VALUES`] synthetic values as the page and the npm package load a file: a
/// `.npy` read whole, the same file read in chunks, then each selected; the number of files
/// loaded (two).
pub fn warm_up_loading() -> usize {
    let values = synthetic(WARM_UP_VALUES);
    let body: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let npy = encode_npy(&npy_header("<f4", false, &[WARM_UP_VALUES]), &body);
    let mut session = Session::new();
    let mut loaded = usize::from(session.load_file("warm-up.npy", &npy).is_ok());
    if let Ok(plan) = session.begin_stream("warm-up.npy", &npy, npy.len() as u64, None) {
        let values = usize::try_from(plan.offset)
            .ok()
            .and_then(|start| npy.get(start..start + usize::try_from(plan.length).ok()?));
        let pushed = values.is_some_and(|values| {
            values
                .chunks(WARM_UP_CHUNK)
                .all(|chunk| session.push_chunk(chunk).is_ok())
        });
        if pushed && session.finish_stream().is_ok() {
            loaded += 1;
        }
    }
    for file in 0..session.file_count() {
        if session.select(Selection::whole_file(file, None)).is_ok() {
            std::hint::black_box(session.display_histogram());
        }
    }
    loaded
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

    #[test]
    fn the_loading_warm_up_reads_its_file_whole_and_in_chunks() {
        assert_eq!(warm_up_loading(), 2);
    }
}
