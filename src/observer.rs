//! The observer abstraction shared by every framework family.
//!
//! An observer is fed calibration batches in order ([`Observer::observe`]), then asked for its
//! quantization parameters ([`Observer::qparams`]). Its [`Observer::fake_quantize`] applies those
//! parameters the way its framework does, so error metrics mean what the framework would give.

use crate::error::Result;
use crate::params::Params;
use crate::quant;
use crate::tensor::Tensor;
use serde::Serialize;
use serde_json::{Map, Value};

/// Zero points are integers for most schemes and floats for "float qparams" schemes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ZeroPoint {
    /// Integer zero points (int32/int64 in the frameworks).
    Int(Vec<i64>),
    /// Floating zero points (`per_channel_affine_float_qparams`, Quark `zero_point_type=float32`).
    Float(Vec<f32>),
}

impl ZeroPoint {
    /// Number of zero points.
    pub fn len(&self) -> usize {
        match self {
            ZeroPoint::Int(v) => v.len(),
            ZeroPoint::Float(v) => v.len(),
        }
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Zero point `i` as f64.
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            ZeroPoint::Int(v) => v[i] as f64,
            ZeroPoint::Float(v) => v[i] as f64,
        }
    }
}

/// The grid the quantized values live on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Grid {
    /// Integers `quant_min..=quant_max`.
    Int { quant_min: i64, quant_max: i64 },
    /// A small float format (`fp8_e4m3`, `fp4_e2m1`, `mxfp8`, …) whose largest magnitude is `max`.
    Float { format: String, max: f64 },
    /// No quantization (pass-through observers).
    None,
}

/// The result of [`Observer::qparams`]: what a user sees in a panel and the CLI prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QParams {
    /// Per tensor: one value; per channel/group/block: one per slice.
    pub scale: Vec<f32>,
    pub zero_point: ZeroPoint,
    pub grid: Grid,
    /// Channel axis (normalised to be non-negative) for per-channel parameters.
    pub axis: Option<usize>,
    /// The observer's min/max state (the frameworks' `min_val`/`max_val` buffers).
    pub min_val: Vec<f32>,
    pub max_val: Vec<f32>,
    /// The clipping range the observer chose when it differs from `min_val..max_val`
    /// (histogram/percentile/MSE searches), one per slice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip_range: Option<(Vec<f32>, Vec<f32>)>,
    /// Native `amax` of calibrators that produce one (ModelOpt, symmetric searches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amax: Option<Vec<f32>>,
    /// Family-specific extra results (e.g. `search_min`, `dst_nbins`), shown verbatim.
    /// Per-group/per-block qparams put their layout here as `block_axis` and `block_size`
    /// (one scale per block, see [`crate::formats::blocks::BlockLayout`]).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// Warnings and framework quirks a user should see next to the numbers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl QParams {
    /// Integer affine/symmetric qparams with min/max state and nothing else.
    pub fn int(
        scale: Vec<f32>,
        zero_point: ZeroPoint,
        quant_min: i64,
        quant_max: i64,
        min_val: Vec<f32>,
        max_val: Vec<f32>,
    ) -> Self {
        QParams {
            scale,
            zero_point,
            grid: Grid::Int {
                quant_min,
                quant_max,
            },
            axis: None,
            min_val,
            max_val,
            clip_range: None,
            amax: None,
            extra: Map::new(),
            notes: Vec::new(),
        }
    }

    /// The representable range `[(qmin − zp)·s, (qmax − zp)·s]` of slice `i` (integer grids), or
    /// `±max·s` (float grids).
    pub fn representable_range(&self, i: usize) -> Option<(f64, f64)> {
        let s = *self.scale.get(i)? as f64;
        match &self.grid {
            Grid::Int {
                quant_min,
                quant_max,
            } => {
                let zp = self.zero_point.get_f64(i);
                Some(((*quant_min as f64 - zp) * s, (*quant_max as f64 - zp) * s))
            }
            Grid::Float { max, .. } => Some((-max * s, max * s)),
            Grid::None => None,
        }
    }
}

/// A snapshot of an observer's state for plotting.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ObserverState {
    /// Running min/max (per slice).
    pub min_val: Vec<f32>,
    pub max_val: Vec<f32>,
    /// The observer's own histogram, if it keeps one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<HistogramState>,
}

/// A histogram as an observer holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramState {
    /// Bin counts (may be fractional after re-binning).
    pub counts: Vec<f32>,
    /// Bin edges, `counts.len() + 1` of them.
    pub edges: Vec<f32>,
}

/// Whether a parameter change could be applied to the existing state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retune {
    /// The observer updated itself; call [`Observer::qparams`] again.
    Applied,
    /// The observer must be rebuilt and fed the data again.
    NeedsData,
}

/// One range-calibration method of one framework.
pub trait Observer: Send {
    /// Feed one calibration batch (one `forward()` call in the framework).
    fn observe(&mut self, batch: &Tensor) -> Result<()>;

    /// Compute quantization parameters from everything observed so far.
    fn qparams(&self) -> Result<QParams>;

    /// Forget everything observed.
    fn reset(&mut self);

    /// State for plotting.
    fn state(&self) -> ObserverState;

    /// Quantize–dequantize `x` with `q` the way this framework does (default: PyTorch's
    /// `fake_quantize_per_tensor_affine` / `_per_channel_affine`, rounding half to even).
    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        quant::fake_quantize_affine(x, q)
    }

    /// Apply new parameters that only affect the search on existing state (see
    /// [`crate::params::Affects::Search`]). The default asks for a rebuild.
    fn retune(&mut self, _params: &Params) -> Result<Retune> {
        Ok(Retune::NeedsData)
    }

    /// Assign an attribute after construction, as Python code can on a framework's observer
    /// object (e.g. `obs.upsample_rate = 128` on PyTorch's `HistogramObserver`). The default
    /// refuses every name.
    fn set_attribute(&mut self, name: &str, _value: &Value) -> Result<()> {
        Err(crate::error::Error::param(
            name,
            "this observer has no attribute that can be set after construction",
        ))
    }
}
