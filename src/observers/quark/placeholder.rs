//! Quark's `PlaceholderObserver`: no statistics, no qparams (`_calculate_qparams` returns
//! `None`). It stands in front of float16/bfloat16 "quantization", which is a cast there and
//! back, so that is what its `fake_quantize` does here. Nothing is collected, so every
//! parameter is a search parameter.

use super::config::quark_params;
use super::dtype::HalfDtype;
use super::kernels::scaled_fake_quantize;
use super::spec::{PerTensorScheme, QuarkConfig};
use crate::error::Result;
use crate::observer::{Grid, ObserverKind, PlotSnapshot, QParams, ZeroPoint};
use crate::params::Choice;
use crate::qdq::QdqKernel;
use crate::tensor::Tensor;

quark_params! {
    /// The configuration `PlaceholderObserver` carries (dtype float16 or bfloat16).
    pub struct PlaceholderArgs {
        dtype: HalfDtype = HalfDtype::Float16, Search;
        qscheme: PerTensorScheme = PerTensorScheme::PerTensor;
        symmetric: None, Search;
        scale_type: Search;
        is_dynamic: false, Search;
        scale_format: None;
    }
}

/// `PlaceholderObserver`.
pub struct Placeholder;

impl ObserverKind for Placeholder {
    type Args = PlaceholderArgs;
    type Config = QuarkConfig;
    type State = ();

    fn resolve(args: &PlaceholderArgs, _: &[String]) -> Result<QuarkConfig> {
        args.quark_config()
    }

    fn init(_: &QuarkConfig) {}

    fn feed(_: &mut (), _: &QuarkConfig, _: &Tensor) -> Result<()> {
        Ok(())
    }

    fn qparams(_: &(), spec: &QuarkConfig) -> Result<QParams> {
        let half = spec.dtype.half();
        let mut q = QParams::int(
            Vec::new(),
            ZeroPoint::Float(Vec::new()),
            0,
            0,
            Vec::new(),
            Vec::new(),
        );
        q.grid = Grid::Float {
            format: spec.dtype.name().to_string(),
            max: half.map_or(0.0, |h| h.max() as f64),
        };
        q.notes.push(
            "PlaceholderObserver has no qparams: the tensor is only cast to the dtype and back"
                .to_string(),
        );
        crate::derivation::record_qparams(
            || {
                crate::derivation::Step::new(
                    "No scale: a cast to the dtype and back",
                    "x → dtype → float32; no scale and no zero point",
                    "quark/torch/quantization/observer/observer.py:189 (amd-quark 0.13)",
                )
                .value("dtype", spec.dtype.name())
            },
            &[],
            &[],
            &q.scale,
            &q.zero_point,
        );
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    /// A cast to the dtype and back.
    fn fake_quantize(spec: &QuarkConfig, x: &Tensor, _: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(spec, x, &[], &ZeroPoint::Float(Vec::new()))
    }

    fn qdq_kernel(spec: &QuarkConfig, _: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::qdq_kernel::kernel(spec, q)
    }

    fn plot(_: &()) -> PlotSnapshot {
        PlotSnapshot::default()
    }
}
