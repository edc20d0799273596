//! Quantization parameters: what an observer chooses (scale, zero point, the grid they map
//! onto, the range they came from). A leaf module: quantizers, metrics, observers and reports
//! all speak of these types.
//!
//! Every float32 value serialises as its exact value (widened to float64), so JSON and
//! JavaScript see the very number the framework computed, not a shortened decimal.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Serialise float32 values as their exact float64 widening.
pub mod exact_f32 {
    use serde::ser::{SerializeSeq, Serializer};

    /// One float32 value.
    pub fn one<S: Serializer>(value: &f32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(f64::from(*value))
    }

    /// A list of float32 values.
    pub fn serialize<S: Serializer>(values: &[f32], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(values.len()))?;
        for &v in values {
            seq.serialize_element(&(v as f64))?;
        }
        seq.end()
    }

    /// An optional list of float32 values.
    pub fn option<S: Serializer>(values: &Option<Vec<f32>>, s: S) -> Result<S::Ok, S::Error> {
        match values {
            Some(v) => serialize(v, s),
            None => s.serialize_none(),
        }
    }

    /// A pair of lists (low and high ends of ranges).
    pub fn pair<S: Serializer>(
        values: &Option<(Vec<f32>, Vec<f32>)>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        match values {
            None => s.serialize_none(),
            Some((lo, hi)) => {
                let widen = |v: &Vec<f32>| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
                let mut t = s.serialize_tuple(2)?;
                t.serialize_element(&widen(lo))?;
                t.serialize_element(&widen(hi))?;
                t.end()
            }
        }
    }
}

/// Zero points are integers for most schemes and floats for "float qparams" schemes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(untagged)]
pub enum ZeroPoint {
    /// Integer zero points (int32/int64 in the frameworks).
    Int(Vec<i64>),
    /// Floating zero points (`per_channel_affine_float_qparams`, Quark `zero_point_type=float32`).
    Float(#[serde(serialize_with = "exact_f32::serialize")] Vec<f32>),
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Grid {
    /// Integers `quant_min..=quant_max`.
    Int { quant_min: i64, quant_max: i64 },
    /// A small float format (`fp8_e4m3`, `fp4_e2m1`, `mxfp8`, …) whose largest magnitude is `max`.
    Float { format: String, max: f64 },
    /// No quantization (pass-through observers).
    None,
}

impl Grid {
    /// `(quant_min, quant_max)` of an integer grid; `None` for a float grid or none.
    pub fn int_range(&self) -> Option<(i64, i64)> {
        match *self {
            Grid::Int {
                quant_min,
                quant_max,
            } => Some((quant_min, quant_max)),
            _ => None,
        }
    }
}

/// The result of [`Instance::qparams`](crate::observer::Instance::qparams): what a user sees in
/// a panel and the CLI prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct QParams {
    /// Per tensor: one value; per channel/group/block: one per slice.
    #[serde(serialize_with = "exact_f32::serialize")]
    pub scale: Vec<f32>,
    pub zero_point: ZeroPoint,
    pub grid: Grid,
    /// Channel axis (normalised to be non-negative) for per-channel parameters.
    pub axis: Option<usize>,
    /// The observer's min/max state (the frameworks' `min_val`/`max_val` buffers).
    #[serde(serialize_with = "exact_f32::serialize")]
    pub min_val: Vec<f32>,
    #[serde(serialize_with = "exact_f32::serialize")]
    pub max_val: Vec<f32>,
    /// The clipping range the observer chose when it differs from `min_val..max_val`
    /// (histogram/percentile/MSE searches), one per slice.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "exact_f32::pair"
    )]
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(type = "[number[], number[]] | undefined", optional)
    )]
    pub clip_range: Option<(Vec<f32>, Vec<f32>)>,
    /// Native `amax` of calibrators that produce one (ModelOpt, symmetric searches).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "exact_f32::option"
    )]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub amax: Option<Vec<f32>>,
    /// Family-specific extra results (e.g. `search_min`, `dst_nbins`), shown verbatim.
    /// Per-group/per-block qparams put their layout here as `block_axis` and `block_size`
    /// (one scale per block, see [`crate::formats::blocks::BlockLayout`]).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[cfg_attr(target_arch = "wasm32", tsify(type = "Record<string, unknown>"))]
    pub extra: Map<String, Value>,
    /// Warnings and framework quirks a user should see next to the numbers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
    /// An explicit per-slice range in `extra.grid_range` takes precedence (see
    /// [`crate::slice_map`]).
    pub fn representable_range(&self, i: usize) -> Option<(f64, f64)> {
        if let Some(range) = crate::slice_map::grid_range(&self.extra, i) {
            return Some(range);
        }
        self.scale_range(i)
    }

    /// [`QParams::representable_range`] of every slice `0..n` (`n`: the scales or the stored
    /// ranges, whichever are more), the stored ranges read once.
    pub fn representable_ranges(&self) -> Vec<Option<(f64, f64)>> {
        let stored = crate::slice_map::grid_ranges(&self.extra);
        let n = self.scale.len().max(stored.len());
        (0..n)
            .map(|i| {
                stored
                    .get(i)
                    .copied()
                    .flatten()
                    .or_else(|| self.scale_range(i))
            })
            .collect()
    }

    /// The range of slice `i` from its scale, zero point and grid.
    fn scale_range(&self, i: usize) -> Option<(f64, f64)> {
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
