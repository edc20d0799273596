//! Quark's `PerBlockMXObserver` (OCP MX: fp8/fp6/fp4 elements, one E8M0 scale per block).
//!
//! `reshape_to_blocks(x, group_size, ch_axis)` (blocks along `ch_axis`, rows zero-padded), then
//! `amax = max|x|` per block; static: running max (a change of block count restarts it),
//! dynamic: last batch. Scale (`get_scale`, `scale_format="e8m0"`): `even`/`floor`/`ceil` of
//! [`crate::formats::e8m0`] with the element's mantissa bits and `emax` (floor/ceil zero blocks
//! get ε); `scale_format="float32"`: `amax / element max` (ε where 0). Zero points are 0.
//! Quantize–dequantize: `q(x / s)·s` per block, [`super::kernels`]. What is collected depends
//! on `ch_axis`, `group_size` and `is_dynamic`; the scale is the search.

use super::build_qparams;
use super::config::quark_params;
use super::dtype::MxDtype;
use super::kernels::{forward_block_layout, require_block_size, scaled_fake_quantize};
use super::qparams::{nan_max, EPS};
use super::spec::{PerGroupScheme, QuarkConfig, ScaleFormat};
use crate::derivation::Step;
use crate::error::Result;
use crate::formats::e8m0;
use crate::formats::ElementFormat;
use crate::observer::{ObserverKind, PlotSnapshot, QParams, ZeroPoint};
use crate::qdq::QdqKernel;
use crate::tensor::Tensor;

quark_params! {
    /// The configuration `PerBlockMXObserver` reads (`OCP_MXFP4Spec`'s defaults).
    pub struct PerBlockMxArgs {
        dtype: MxDtype = MxDtype::Fp4, Search;
        qscheme: PerGroupScheme = PerGroupScheme::PerGroup;
        symmetric: None, Search;
        ch_axis: -1, Data;
        group_size: 32, Data;
        scale_type: Search;
        is_dynamic: true, Data;
        scale_format: Some(ScaleFormat::E8m0);
    }
}

/// The configuration of an MX observer.
#[derive(Debug, Clone, PartialEq)]
pub struct MxConfig {
    pub spec: QuarkConfig,
    pub element: ElementFormat,
}

impl MxConfig {
    /// Scale of a block with `amax` under the spec's `scale_format` and rounding mode.
    fn scale_of(&self, amax: f32) -> f32 {
        let spec = &self.spec;
        let s = match spec.scale_format {
            Some(ScaleFormat::Float32) | None => {
                let a = spec.scale_type.cast(amax);
                let s = spec.scale_type.cast(a / self.element.max());
                if s == 0.0 {
                    EPS
                } else {
                    s
                }
            }
            Some(ScaleFormat::E8m0) => {
                let s = e8m0::shared_scale(
                    amax,
                    self.element.mantissa_bits(),
                    self.element.emax(),
                    spec.scale_calculation_mode,
                );
                if s == 0.0 && spec.scale_calculation_mode != e8m0::ScaleRounding::Even {
                    EPS
                } else {
                    s
                }
            }
        };
        spec.scale_type.cast(s)
    }
}

/// What `PerBlockMXObserver` collects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MxState {
    /// Per-block `max|x|` (running unless dynamic; a change of block count restarts it).
    pub amax: Vec<f32>,
    /// `(axis, block size)` of the last batch.
    pub layout: Option<(usize, usize)>,
}

/// `PerBlockMXObserver`.
pub struct PerBlockMx;

impl ObserverKind for PerBlockMx {
    type Args = PerBlockMxArgs;
    type Config = MxConfig;
    type State = MxState;

    fn resolve(args: &PerBlockMxArgs, _: &[String]) -> Result<MxConfig> {
        require_block_size("PerBlockMXObserver", args.group_size)?;
        Ok(MxConfig {
            spec: args.quark_config()?,
            element: args.dtype.element(),
        })
    }

    fn init(_: &MxConfig) -> MxState {
        MxState::default()
    }

    fn feed(state: &mut MxState, cfg: &MxConfig, batch: &Tensor) -> Result<()> {
        let layout = forward_block_layout(&cfg.spec, batch)?;
        let amax = layout.block_amax(&batch.data);
        if cfg.spec.is_dynamic || state.amax.len() != amax.len() {
            state.amax = amax;
        } else {
            for (a, b) in state.amax.iter_mut().zip(amax) {
                *a = nan_max(*a, b);
            }
        }
        state.layout = Some((layout.axis(), layout.block_size()));
        Ok(())
    }

    fn qparams(state: &MxState, cfg: &MxConfig) -> Result<QParams> {
        let amax = match state.layout {
            Some(_) => state.amax.clone(),
            None => vec![0.0],
        };
        let scale: Vec<f32> = amax.iter().map(|&a| cfg.scale_of(a)).collect();
        let n = scale.len();
        let mut q = build_qparams(
            &cfg.spec,
            (scale, ZeroPoint::Float(vec![0.0; n])),
            Vec::new(),
            Vec::new(),
            || {
                Step::new(
                    "One shared e8m0 scale per block",
                    "amax = max |x| over the block; s = 2^(floor(log2(amax)) − emax of the element), \
                     by the scale calculation mode (even: amax's mantissa first rounded to the element's)",
                    "quark/torch/quantization/observer/observer.py:775 (amd-quark 0.13), \
                     ObserverBase.get_scale at :102",
                )
                .value("blocks", amax.len())
            },
        );
        q.amax = Some(amax);
        q.grid = crate::observer::Grid::Float {
            format: format!("mx{}", cfg.element.name()),
            max: cfg.element.max() as f64,
        };
        if let Some((axis, block)) = state.layout {
            q.extra.insert("block_axis".into(), axis.into());
            q.extra.insert("block_size".into(), block.into());
        }
        q.extra.insert(
            "scale_calculation_mode".into(),
            cfg.spec.scale_calculation_mode.name().into(),
        );
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    fn fake_quantize(cfg: &MxConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(&cfg.spec, x, &q.scale, &q.zero_point)
    }

    fn qdq_kernel(cfg: &MxConfig, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::qdq_kernel::per_group_kernel(&cfg.spec, shape, q)
    }

    fn plot(_: &MxState) -> PlotSnapshot {
        PlotSnapshot::default()
    }

    fn slice_count(cfg: &MxConfig, shape: &[usize]) -> Option<usize> {
        super::kernels::block_count(&cfg.spec, shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::pow2;
    use crate::observer::Instance;
    use crate::params::{ParamSet, Params};
    use crate::registry;
    use serde_json::{json, Value};

    fn instance(p: Value) -> Instance {
        let spec = registry::find("quark.PerBlockMXObserver").unwrap();
        Instance::new(spec, &Params::from_value(p).unwrap()).unwrap()
    }

    fn config(p: Value) -> MxConfig {
        let args = PerBlockMxArgs::from_params(&Params::from_value(p).unwrap()).unwrap();
        PerBlockMx::resolve(&args, &[]).unwrap()
    }

    #[test]
    fn static_amax_runs_and_scales_follow_the_mode() {
        let mut o = instance(json!({"group_size": 2, "is_dynamic": false}));
        o.feed(&Tensor::new(vec![1, 4], vec![1.0, -3.0, 0.0, 0.0]).unwrap())
            .unwrap();
        o.feed(&Tensor::new(vec![1, 4], vec![0.5, 0.5, 7.0, 0.0]).unwrap())
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.amax, Some(vec![3.0, 7.0]));
        // even: 3 = 1.5·2 stays → 2^(1−2); 7 = 1.75·4 carries → 2^(3−2).
        assert_eq!(q.scale, vec![0.5, 2.0]);
        assert_eq!(q.extra["block_size"], 2);
        let ceil = config(json!({"scale_calculation_mode": "ceil"}));
        assert_eq!(ceil.scale_of(3.0), 1.0);
        assert_eq!(ceil.scale_of(0.0), EPS);
        assert_eq!(config(json!({})).scale_of(0.0), pow2(-127));
        let y = o
            .fake_quantize(
                &Tensor::new(vec![1, 4], vec![1.3, -3.0, 5.0, 9.0]).unwrap(),
                &q,
            )
            .unwrap();
        assert_eq!(y.data, vec![1.5, -3.0, 4.0, 8.0]);
    }

    #[test]
    fn blocks_must_have_a_size() {
        let args = PerBlockMxArgs::from_params(&Params::new().with("group_size", -1)).unwrap();
        let err = PerBlockMx::resolve(&args, &[]).unwrap_err().to_string();
        assert!(err.contains("group_size"), "{err}");
    }
}
