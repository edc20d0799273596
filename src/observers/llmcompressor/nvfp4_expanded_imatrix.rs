//! `nvfp4_expanded_imatrix` (`NVFP4ExpandedIMatrixObserver`, llm-compressor 0.14.0.1
//! `observers/imatrix.py`): [`imatrix_mse`](super::imatrix_mse) with NVFP4's expanded range —
//! `expand = 1.8`, `maxshrink = 1 − 0.8/1.8`, `grid = 200` (candidates
//! `1.8·(1 − i/200)·[min, max]` for `i = 0 … 111`), patience 1000, norm 2.4 — weighted by the
//! per-input-channel importance `E[x²]`.

use super::args::{BaseName, SearchedQuantArgsFields};
use super::calibration::{self, Calibration, Target};
use super::imatrix_mse::{observe_imatrix, IMatrixConfig, IMatrixKwargs};
use crate::error::Result;
use crate::observer::{Granularity, ObserverKind, ObserverState, QParams};
use crate::tensor::Tensor;

crate::declare_params! {
    /// The observer kwargs of `nvfp4_expanded_imatrix`, with the class's own defaults.
    pub struct NvFp4IMatrixKwargs {
        /// largest shrink tried, relative to the expanded range (1 − 0.8/1.8)
        maxshrink: f64 = 1.0 - 0.8 / 1.8; float(0.0, 1.0), Data;
        /// stop after this many consecutive candidates without improvement (0: never)
        patience: i64 = 1000; int(0, 10000), Data;
        /// resolution of the shrink factors p = 1 − i/grid
        grid: f64 = 200.0; float(0.0, 1000.0), Data;
        /// exponent of the weighted error Σ|ŵ − w|^norm·importance
        norm: f64 = 2.4; float(0.0, 16.0), Data;
        /// raise instead of falling back to the unweighted search
        strict: bool = false; boolean(), Data;
        /// factor applied to the raw range before searching
        expand: f64 = 1.8; float(0.0, 10.0), Data;
        /// E[x²] of the layer input per input channel (in_features values; a tensor or .npy)
        importance: Option<Vec<f64>> = None; vector(), Data;
    }
}

crate::declare_params! {
    /// Arguments of `nvfp4_expanded_imatrix`.
    pub struct NvFp4IMatrixArgs {
        /// observed tensor: a Linear weight [out, in]
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: SearchedQuantArgsFields, kwargs: NvFp4IMatrixKwargs }
}

/// llm-compressor's `nvfp4_expanded_imatrix` observer.
pub struct NvFp4ExpandedIMatrix;

impl ObserverKind for NvFp4ExpandedIMatrix {
    type Args = NvFp4IMatrixArgs;
    type Config = IMatrixConfig;
    type State = Calibration;

    fn resolve(args: &NvFp4IMatrixArgs, _: &[String]) -> Result<IMatrixConfig> {
        let target = Target {
            base: args.base_name,
            args: args.quant.validate()?,
        };
        let k = &args.kwargs;
        IMatrixKwargs {
            maxshrink: k.maxshrink,
            patience: k.patience,
            grid: k.grid,
            norm: k.norm,
            strict: k.strict,
            expand: k.expand,
            importance: k.importance.clone(),
        }
        .config(target)
    }

    fn init(_: &IMatrixConfig) -> Calibration {
        Calibration::default()
    }

    fn observe(state: &mut Calibration, cfg: &IMatrixConfig, batch: &Tensor) -> Result<()> {
        observe_imatrix(state, cfg, batch)
    }

    fn qparams(state: &Calibration, cfg: &IMatrixConfig) -> Result<QParams> {
        calibration::qparams(state, &cfg.target)
    }

    fn fake_quantize(cfg: &IMatrixConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        calibration::fake_quantize(&cfg.target, x, q)
    }

    fn granularity(cfg: &IMatrixConfig) -> Option<Granularity> {
        Some(cfg.target.granularity())
    }

    fn plot(state: &Calibration) -> ObserverState {
        state.plot()
    }
}
