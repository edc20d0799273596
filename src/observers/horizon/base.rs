//! What every Horizon `observer_v2` observer shares (`ObserverBase` in the source).
//!
//! * **Configuration and its assertions.** `qscheme` is `per_tensor_symmetric` (`ch_axis < 0`) or
//!   `per_channel_symmetric` (`ch_axis ≥ 0`); `quant_min/quant_max` default to the dtype's range
//!   (qint8 −128..127, qint16 −32768..32767) and, when both are given, must satisfy Horizon's
//!   checks. Violations raise the source's `AssertionError` at construction.
//! * **Scale** (`_compute_scale_symmetric`, float32):
//!   `s = max(max(−min, max), 0) / ((qmax − qmin)/2)`, clamped below by `eps = 2⁻²³`; with
//!   `pow_quantization`, `s = 1 / 2^clamp(⌊−log2 s⌋, 1, 14)`. The divisor is 127.5 for qint8.
//!   Zero point is always 0.
//! * **Moving average** (`_compute_moving_average`, float32): `v ← v + c·(cur − v)` with `c`
//!   rounded to float32; the first statistics are copied.
//! * **Fake quantisation** (`torch.ops.horizon.scale_quanti`):
//!   `x̂ = (clamp(R(x / s) + zp, qmin, qmax) − zp)·s` in float32 with a true division, where `R`
//!   is round-half-to-even or the hardware's `⌊v + 0.5⌋` ("bpu_round"); a scale with more than
//!   one element broadcasts along the channel axis.

use crate::error::{Error, Result, Stage};
use crate::observer::{QParams, ZeroPoint};
use crate::params::{ParamSpec, Params};
use crate::quant::round_half_even;
use crate::tensor::Tensor;
use std::borrow::Cow;

/// `torch.finfo(torch.float32).eps`, Horizon's lower bound on a scale.
pub const EPS: f32 = f32::EPSILON;

/// A framework `AssertionError` raised while constructing an observer.
pub fn assertion(message: &str) -> Error {
    Error::framework("AssertionError", message, Stage::Init)
}

/// Fail with Horizon's `AssertionError` when `condition` does not hold.
pub fn ensure(condition: bool, message: &str) -> Result<()> {
    if condition {
        Ok(())
    } else {
        Err(assertion(message))
    }
}

/// Horizon's quantized integer types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QDtype {
    Qint8,
    Qint16,
}

impl QDtype {
    /// `qinfo(dtype).min`, `qinfo(dtype).max`.
    pub fn range(self) -> (i64, i64) {
        match self {
            QDtype::Qint8 => (-128, 127),
            QDtype::Qint16 => (-32768, 32767),
        }
    }

    fn parse(name: &str) -> Result<Self> {
        match name {
            "qint8" => Ok(QDtype::Qint8),
            "qint16" => Ok(QDtype::Qint16),
            other => Err(Error::param(
                "dtype",
                format!("Horizon observers quantize to qint8 or qint16, not `{other}`"),
            )),
        }
    }
}

/// How `scale_quanti` rounds `x / scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundMode {
    /// `torch.round`: ties to even.
    HalfToEven,
    /// The BPU's `floor(v + 0.5)`: ties up.
    BpuRound,
}

impl RoundMode {
    fn parse(name: &str) -> Result<Self> {
        match name {
            "half_to_even" => Ok(RoundMode::HalfToEven),
            "bpu_round" => Ok(RoundMode::BpuRound),
            other => Err(Error::param(
                "round_mode",
                format!("expected half_to_even or bpu_round, got `{other}`"),
            )),
        }
    }

    /// Round one value.
    #[inline]
    pub fn round(self, v: f32) -> f32 {
        match self {
            RoundMode::HalfToEven => round_half_even(v),
            RoundMode::BpuRound => {
                let y = v + 0.5;
                let r = round_half_even(y);
                r - if r > y { 1.0 } else { 0.0 }
            }
        }
    }
}

/// Per-tensor or per-channel statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `per_tensor_symmetric`.
    PerTensor,
    /// `per_channel_symmetric` along this (non-negative) axis.
    PerChannel(usize),
}

/// The quantization target of an observer: everything `calculate_qparams` and `scale_quanti`
/// need besides the statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantConfig {
    pub dtype: QDtype,
    pub quant_min: i64,
    pub quant_max: i64,
    pub round_mode: RoundMode,
    /// `pow_quantization()`: power-of-two scales.
    pub pow: bool,
}

impl QuantConfig {
    /// The dtype and optional user range, checked as `_set_quant_min_max` does.
    pub fn from_params(params: &Params) -> Result<Self> {
        let dtype = QDtype::parse(params.str_or("dtype", "qint8")?)?;
        let (dmin, dmax) = dtype.range();
        let (quant_min, quant_max) =
            match (params.opt_i64("quant_min")?, params.opt_i64("quant_max")?) {
                (Some(lo), Some(hi)) => {
                    ensure(
                    lo < hi,
                    "qmin must be strictly less than qmax for user-specified quantization range.",
                )?;
                    ensure(
                        lo <= 0 && 0 <= hi,
                        "Used-specified quantization range must include 0.",
                    )?;
                    ensure(dmin <= lo, "quant_min out of bound")?;
                    ensure(hi <= dmax, "quant_max out of bound")?;
                    (lo, hi)
                }
                // Horizon ignores a lone quant_min or quant_max.
                _ => (dmin, dmax),
            };
        Ok(QuantConfig {
            dtype,
            quant_min,
            quant_max,
            round_mode: RoundMode::parse(params.str_or("round_mode", "half_to_even")?)?,
            pow: params.bool_or("pow_quantization", false)?,
        })
    }

    /// `_compute_scale_symmetric` for one slice, in float32.
    #[inline]
    pub fn scale(&self, min: f32, max: f32) -> f32 {
        let divisor = (self.quant_max - self.quant_min) as f32 / 2.0;
        let amax = nan_max(-min, max);
        let s = nan_clamp_min(nan_clamp_min(amax, 0.0) / divisor, EPS);
        if self.pow {
            let e = (-s.log2()).floor();
            let e = if e.is_nan() { e } else { e.clamp(1.0, 14.0) };
            1.0 / e.exp2()
        } else {
            s
        }
    }

    /// `scale_quanti(x, s, zp = 0)` for one value.
    #[inline]
    pub fn fake_quant(&self, x: f32, s: f32) -> f32 {
        let r = self.round_mode.round(x / s);
        let (lo, hi) = (self.quant_min as f32, self.quant_max as f32);
        let c = if r < lo { lo } else { r };
        (if c > hi { hi } else { c }) * s
    }
}

/// `torch.maximum` (NaN propagating).
#[inline]
fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// `clamp_min` (NaN propagating).
#[inline]
fn nan_clamp_min(a: f32, lo: f32) -> f32 {
    if a < lo {
        lo
    } else {
        a
    }
}

/// Read `qscheme`/`ch_axis` with the base class's assertions.
pub fn scheme_from_params(params: &Params) -> Result<Scheme> {
    let per_channel = match params.str_or("qscheme", "per_tensor_symmetric")? {
        "per_tensor_symmetric" => false,
        "per_channel_symmetric" => true,
        other => {
            return Err(Error::param(
                "qscheme",
                format!(
                    "Horizon supports per_tensor_symmetric and per_channel_symmetric, not `{other}`"
                ),
            ))
        }
    };
    let ch_axis = params.i64_or("ch_axis", -1)?;
    if per_channel {
        ensure(
            ch_axis >= 0,
            "ch_axis should be non-negative when using per_channel_symmetric qcsheme",
        )?;
        Ok(Scheme::PerChannel(ch_axis as usize))
    } else {
        ensure(
            ch_axis < 0,
            "ch_axis should be negative when using per_tensor_symmetric qcsheme",
        )?;
        Ok(Scheme::PerTensor)
    }
}

/// The common part of every observer's configuration: scheme (validated first, as in
/// `ObserverBase.__init__`), then dtype/range, round mode and power-of-two flag.
pub fn base_from_params(params: &Params) -> Result<(Scheme, QuantConfig, f32)> {
    let scheme = scheme_from_params(params)?;
    let quant = QuantConfig::from_params(params)?;
    let c = params.f64_or("averaging_constant", 0.01)? as f32;
    Ok((scheme, quant, c))
}

/// The moving-average statistics `min_val`/`max_val` of an observer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MinMaxState {
    pub min_val: Vec<f32>,
    pub max_val: Vec<f32>,
}

impl MinMaxState {
    /// True before any statistics were recorded.
    pub fn is_empty(&self) -> bool {
        self.min_val.is_empty() || self.max_val.is_empty()
    }

    /// Record this batch's statistics: copied the first time, then
    /// `v ← v + c·(cur − v)` in float32 with PyTorch broadcasting.
    pub fn update(&mut self, cur_min: Vec<f32>, cur_max: Vec<f32>, c: f32) -> Result<()> {
        if self.is_empty() {
            self.min_val = cur_min;
            self.max_val = cur_max;
            return Ok(());
        }
        self.min_val = ema(&self.min_val, &cur_min, c)?;
        self.max_val = ema(&self.max_val, &cur_max, c)?;
        Ok(())
    }

    /// `calculate_qparams`: per-slice symmetric scales, or scale 1.0 / zero point 0 (with
    /// Horizon's warning) when nothing was recorded.
    pub fn qparams(&self, quant: &QuantConfig, axis: Option<usize>) -> QParams {
        let mut q = QParams::int(
            vec![1.0],
            ZeroPoint::Int(vec![0]),
            quant.quant_min,
            quant.quant_max,
            self.min_val.clone(),
            self.max_val.clone(),
        );
        if self.is_empty() {
            q.notes.push(
                "No statistics yet: Horizon returns scale 1.0 and zero point 0 with the warning \
                 \"Must run observer before calling calculate_qparams\" (expected for KLObserver \
                 when update_interval exceeds the number of steps)."
                    .to_string(),
            );
            return q;
        }
        q.scale = self
            .min_val
            .iter()
            .zip(&self.max_val)
            .map(|(&lo, &hi)| quant.scale(lo, hi))
            .collect();
        q.zero_point = ZeroPoint::Int(vec![0; q.scale.len()]);
        q.axis = axis;
        q
    }
}

/// `old + c·(cur − old)` elementwise with PyTorch's broadcasting of length-1 operands.
fn ema(old: &[f32], cur: &[f32], c: f32) -> Result<Vec<f32>> {
    let n = broadcast_len(old.len(), cur.len())?;
    Ok((0..n)
        .map(|i| {
            let o = old[if old.len() == 1 { 0 } else { i }];
            let v = cur[if cur.len() == 1 { 0 } else { i }];
            o + c * (v - o)
        })
        .collect())
}

/// The broadcast length of two 1-d operands, or PyTorch's size-mismatch error.
fn broadcast_len(a: usize, b: usize) -> Result<usize> {
    if a == b || b == 1 {
        Ok(a)
    } else if a == 1 {
        Ok(b)
    } else {
        Err(Error::framework(
            "RuntimeError",
            format!(
                "The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension 0"
            ),
            Stage::Forward,
        ))
    }
}

/// PyTorch's `IndexError` for a dimension outside `[-n, n-1]` (0-d tensors count as 1-d).
fn dim_error(ndim: usize, dim: usize) -> Error {
    let n = ndim.max(1) as i64;
    Error::framework(
        "IndexError",
        format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        ),
        Stage::Forward,
    )
}

/// The layout of `x.transpose(0, ch_axis).flatten(start_dim=1)`: `outer` blocks of `channels`
/// runs of `inner` contiguous elements each; run `(o, c)` belongs to channel `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelLayout {
    pub outer: usize,
    pub channels: usize,
    pub inner: usize,
}

impl ChannelLayout {
    /// The layout of channel axis `axis` of `shape`, failing like PyTorch's `transpose` /
    /// `flatten(start_dim=1)` do on tensors with too few dimensions.
    pub fn new(shape: &[usize], axis: usize) -> Result<Self> {
        let ndim = shape.len();
        if axis > 0 && axis >= ndim.max(1) {
            return Err(dim_error(ndim, axis));
        }
        if ndim < 2 {
            return Err(dim_error(ndim, 1));
        }
        Ok(ChannelLayout {
            outer: shape[..axis].iter().product(),
            channels: shape[axis],
            inner: shape[axis + 1..].iter().product(),
        })
    }

    /// Call `f(channel, run)` for every contiguous run of `data` (C order).
    #[inline]
    pub fn for_each_run(&self, data: &[f32], mut f: impl FnMut(usize, &[f32])) {
        if self.inner == 0 {
            return;
        }
        for (k, run) in data.chunks_exact(self.inner).enumerate() {
            f(k % self.channels.max(1), run);
        }
    }

    /// Per-channel `aminmax` (`(+inf, −inf)` for an empty channel, where PyTorch raises).
    pub fn min_max(&self, data: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let mut lo = vec![f32::INFINITY; self.channels];
        let mut hi = vec![f32::NEG_INFINITY; self.channels];
        self.for_each_run(data, |c, run| {
            for &v in run {
                lo[c] = lo[c].min(v);
                hi[c] = hi[c].max(v);
            }
        });
        (lo, hi)
    }
}

/// `torch.aminmax` of a non-empty slice (NaN-free input).
pub fn min_max(data: &[f32]) -> (f32, f32) {
    crate::histogram::finite_min_max(data).unwrap_or((f32::NAN, f32::NAN))
}

/// The error a per-channel observer reports for an empty channel dimension.
pub fn empty_reduction_error() -> Error {
    Error::framework(
        "RuntimeError",
        "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.",
        Stage::Forward,
    )
}

/// The batch's `aminmax`, per tensor or per channel (`transpose(0, ch_axis).flatten(1)`).
pub fn batch_min_max(batch: &Tensor, scheme: Scheme) -> Result<(Vec<f32>, Vec<f32>)> {
    if batch.is_empty() {
        return Err(empty_reduction_error());
    }
    match scheme {
        Scheme::PerTensor => {
            let (lo, hi) = min_max(&batch.data);
            Ok((vec![lo], vec![hi]))
        }
        Scheme::PerChannel(axis) => {
            Ok(ChannelLayout::new(&batch.shape, axis)?.min_max(&batch.data))
        }
    }
}

/// Horizon's fake quantisation (`scale_quanti`) of `x` with `q`, rounding with `round_mode`.
/// One scale applies to the whole tensor; several broadcast along `q.axis`, or, without an
/// axis (NormObserver's column scales), along the flattened trailing dimensions.
pub fn fake_quantize(x: &Tensor, q: &QParams, round_mode: RoundMode) -> Result<Tensor> {
    let crate::observer::Grid::Int {
        quant_min,
        quant_max,
    } = q.grid
    else {
        return Err(Error::input(
            "Horizon fake quantization needs an integer grid",
        ));
    };
    let (qmin, qmax) = (quant_min as f32, quant_max as f32);
    let n = q.scale.len();
    if n == 0 || q.zero_point.len() != n {
        return Err(Error::input(
            "qparams have no scale or mismatched zero points",
        ));
    }
    let zps: Vec<f32> = (0..n).map(|i| q.zero_point.get_f64(i) as f32).collect();
    let one = |v: f32, s: f32, zp: f32| ((round_mode.round(v / s) + zp).clamp(qmin, qmax) - zp) * s;
    let mut data = Vec::with_capacity(x.len());
    if n == 1 {
        data.extend(x.data.iter().map(|&v| one(v, q.scale[0], zps[0])));
    } else if let Some(axis) = q.axis {
        if axis >= x.ndim() || x.shape[axis] != n {
            return Err(Error::input(format!(
                "{n} per-channel scales do not fit axis {axis} of a tensor of shape {:?}",
                x.shape
            )));
        }
        let inner: usize = x.shape[axis + 1..].iter().product();
        if inner > 0 {
            for (k, run) in x.data.chunks_exact(inner).enumerate() {
                let c = k % n;
                data.extend(run.iter().map(|&v| one(v, q.scale[c], zps[c])));
            }
        }
    } else {
        let trailing: usize = x.shape.iter().skip(1).product();
        if trailing != n {
            return Err(Error::input(format!(
                "{n} scales do not fit the trailing dimensions of a tensor of shape {:?}",
                x.shape
            )));
        }
        for run in x.data.chunks_exact(n) {
            data.extend(
                run.iter()
                    .enumerate()
                    .map(|(c, &v)| one(v, q.scale[c], zps[c])),
            );
        }
    }
    Ok(Tensor {
        shape: x.shape.clone(),
        data,
        dtype: x.dtype,
    })
}

/// `torch.linalg.norm(scale_quanti(x, s) − x, ord=2, dim=-1)` of one contiguous row, in
/// float32 as PyTorch's vectorised last-dim kernel computes it: eight lanes accumulate the
/// squares (multiply, then add: no fused multiply-add), the lanes are added in order, then the
/// tail (under 8 elements) one by one, then the square root. This reproduces the reference
/// losses bit for bit, so near-ties are broken as Horizon breaks them.
pub fn l2_loss(row: &[f32], quant: &QuantConfig, scale: f32) -> f32 {
    let (lo, hi) = (quant.quant_min as f32, quant.quant_max as f32);
    // One monomorphic loop per round mode keeps the hot loop branch-free.
    match quant.round_mode {
        RoundMode::HalfToEven => l2_loss_with(row, scale, lo, hi, round_half_even),
        RoundMode::BpuRound => l2_loss_with(row, scale, lo, hi, |v| RoundMode::BpuRound.round(v)),
    }
}

#[inline(always)]
fn l2_loss_with(row: &[f32], s: f32, lo: f32, hi: f32, round: impl Fn(f32) -> f32) -> f32 {
    let err = |v: f32| {
        let r = round(v / s);
        let c = if r < lo { lo } else { r };
        (if c > hi { hi } else { c }) * s - v
    };
    let full = row.len() / 8 * 8;
    let mut lanes = [0.0f32; 8];
    for chunk in row[..full].chunks_exact(8) {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            let d = err(v);
            *lane += d * d;
        }
    }
    let mut acc = lanes[0];
    for &lane in &lanes[1..] {
        acc += lane;
    }
    for &v in &row[full..] {
        let d = err(v);
        acc += d * d;
    }
    acc.sqrt()
}

/// `x.transpose(0, axis).flatten(start_dim=1)` as a contiguous copy: one row per channel, the
/// other dimensions in PyTorch's order (1, …, axis−1, 0, axis+1, …). Axis 0 is the data as is.
pub fn channel_rows(x: &Tensor, axis: usize) -> Result<(Cow<'_, [f32]>, usize)> {
    let layout = ChannelLayout::new(&x.shape, axis)?;
    let channels = layout.channels;
    if axis == 0 {
        return Ok((Cow::Borrowed(&x.data), channels));
    }
    let ndim = x.shape.len();
    let mut strides = vec![1usize; ndim];
    for d in (0..ndim.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * x.shape[d + 1];
    }
    // Dimensions after the channel, in the transposed order.
    let order: Vec<usize> = (1..ndim).map(|d| if d == axis { 0 } else { d }).collect();
    let dims: Vec<usize> = order.iter().map(|&d| x.shape[d]).collect();
    let row_len: usize = dims.iter().product();
    let mut out = Vec::with_capacity(x.len());
    let mut idx = vec![0usize; order.len()];
    for c in 0..channels {
        let base = c * strides[axis];
        idx.iter_mut().for_each(|i| *i = 0);
        let mut offset = base;
        for _ in 0..row_len {
            out.push(x.data[offset]);
            // Odometer step over `dims`, last dimension fastest.
            for k in (0..idx.len()).rev() {
                idx[k] += 1;
                offset += strides[order[k]];
                if idx[k] < dims[k] {
                    break;
                }
                offset -= strides[order[k]] * dims[k];
                idx[k] = 0;
            }
        }
    }
    Ok((Cow::Owned(out), channels))
}

/// Parameters every Horizon observer takes (`ObserverBase.__init__` plus the two globals).
/// `search` marks the ones that only affect `calculate_qparams`/fake quantisation for this
/// observer.
pub fn common_params(
    averaging_constant: f64,
    search_dtype: bool,
    search_round: bool,
    search_pow: bool,
) -> Vec<ParamSpec> {
    let mark = |p: ParamSpec, search: bool| if search { p.search_only() } else { p };
    vec![
        ParamSpec::float(
            "averaging_constant",
            0.0,
            1.0,
            averaging_constant,
            "weight of each new batch in the moving average of min/max (1.0 = last batch only)",
        ),
        ParamSpec::choice(
            "qscheme",
            &["per_tensor_symmetric", "per_channel_symmetric"],
            "per_tensor_symmetric",
            "one scale for the tensor, or one per channel along ch_axis",
        ),
        ParamSpec::int(
            "ch_axis",
            -16,
            15,
            -1,
            "channel axis: negative for per-tensor, the axis index for per-channel",
        ),
        mark(
            ParamSpec::choice(
                "dtype",
                &["qint8", "qint16"],
                "qint8",
                "quantized type: qint8 (−128..127) or qint16 (−32768..32767)",
            ),
            search_dtype,
        ),
        mark(
            ParamSpec::int(
                "quant_min",
                -32768,
                32767,
                serde_json::Value::Null,
                "custom lowest quantized value (used only together with quant_max)",
            ),
            search_dtype,
        ),
        mark(
            ParamSpec::int(
                "quant_max",
                -32768,
                32767,
                serde_json::Value::Null,
                "custom highest quantized value (used only together with quant_min)",
            ),
            search_dtype,
        ),
        mark(
            ParamSpec::choice(
                "round_mode",
                &["half_to_even", "bpu_round"],
                "half_to_even",
                "rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5)",
            ),
            search_round,
        ),
        mark(
            ParamSpec::bool(
                "pow_quantization",
                false,
                "round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization)",
            ),
            search_pow,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg(json: &str) -> QuantConfig {
        QuantConfig::from_params(&Params::from_json(json).unwrap()).unwrap()
    }

    #[test]
    fn scale_divides_by_half_the_range() {
        let q = cfg("{}");
        assert_eq!(q.scale(-1.0, 2.55), 2.55f32 / 127.5);
        assert_eq!(q.scale(0.0, 0.0), EPS);
        assert_eq!(q.scale(0.5, 0.75), 0.75f32 / 127.5);
        let q16 = cfg(r#"{"dtype": "qint16"}"#);
        assert_eq!(q16.scale(-3.0, 1.0), 3.0f32 / 32767.5);
        let custom = cfg(r#"{"quant_min": -127, "quant_max": 127}"#);
        assert_eq!(custom.scale(-1.27, 0.0), 1.27f32 / 127.0);
    }

    #[test]
    fn pow_scales_are_clamped_powers_of_two() {
        let q = cfg(r#"{"pow_quantization": true}"#);
        // 4/127.5 = 0.0314 → ⌊−log2⌋ = ⌊4.99⌋ = 4 → 1/16
        assert_eq!(q.scale(-4.0, 1.0), 1.0 / 16.0);
        // exactly 2^-5 stays 2^-5
        assert_eq!(q.scale(0.0, 127.5 / 32.0), 1.0 / 32.0);
        // huge range clamps the exponent at 1
        assert_eq!(q.scale(-1000.0, 1.0), 0.5);
        // tiny range clamps at 14
        assert_eq!(q.scale(0.0, 0.0), 1.0 / 16384.0);
    }

    #[test]
    fn user_ranges_are_checked_like_horizon() {
        let err = |json: &str| {
            QuantConfig::from_params(&Params::from_json(json).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert!(err(r#"{"quant_min": 5, "quant_max": 5}"#).contains("strictly less"));
        assert!(err(r#"{"quant_min": 1, "quant_max": 5}"#).contains("include 0"));
        assert!(err(r#"{"quant_min": -200, "quant_max": 5}"#).contains("quant_min out of bound"));
        assert!(err(r#"{"quant_min": -2, "quant_max": 200}"#).contains("quant_max out of bound"));
        // a lone bound is ignored
        assert_eq!(cfg(r#"{"quant_min": -5}"#).quant_min, -128);
    }

    #[test]
    fn schemes_assert_the_sign_of_ch_axis() {
        let s = |json: &str| scheme_from_params(&Params::from_json(json).unwrap());
        assert_eq!(s("{}").unwrap(), Scheme::PerTensor);
        assert_eq!(
            s(r#"{"qscheme": "per_channel_symmetric", "ch_axis": 1}"#).unwrap(),
            Scheme::PerChannel(1)
        );
        let e = s(r#"{"qscheme": "per_channel_symmetric", "ch_axis": -1}"#).unwrap_err();
        assert!(matches!(e, Error::Framework { ref kind, .. } if kind == "AssertionError"));
        assert!(s(r#"{"ch_axis": 0}"#).is_err());
    }

    #[test]
    fn fast_rounding_matches_libm_everywhere_it_matters() {
        let special = [
            0.0f32,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.49999997,
            -0.49999997,
            8388607.5,
            -8388607.5,
            8388608.0,
            16777217.0,
            1e30,
            -1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            1e-40,
        ];
        let mut bits = 0x0000_0001u32;
        let mut values: Vec<f32> = special.to_vec();
        // A sweep over every exponent with varied mantissas, both signs.
        while bits < 0x7f80_0000 {
            values.push(f32::from_bits(bits));
            values.push(-f32::from_bits(bits));
            bits = bits.wrapping_add(0x0001_3579);
        }
        for v in values {
            let bpu = RoundMode::BpuRound.round(v);
            let want = (v + 0.5).floor();
            assert!(
                bpu == want || (bpu == 0.0 && want == 0.0),
                "{v:e}: {bpu} vs {want}"
            );
        }
    }

    #[test]
    fn round_modes_differ_on_ties() {
        assert_eq!(RoundMode::HalfToEven.round(2.5), 2.0);
        assert_eq!(RoundMode::BpuRound.round(2.5), 3.0);
        assert_eq!(RoundMode::HalfToEven.round(-2.5), -2.0);
        assert_eq!(RoundMode::BpuRound.round(-2.5), -2.0);
        assert_eq!(RoundMode::BpuRound.round(-2.6), -3.0);
    }

    #[test]
    fn ema_copies_first_then_averages_in_f32() {
        let mut s = MinMaxState::default();
        s.update(vec![-1.0], vec![1.0], 0.01).unwrap();
        assert_eq!(s.max_val, vec![1.0]);
        s.update(vec![-3.0], vec![3.0], 0.01).unwrap();
        assert_eq!(s.max_val, vec![1.0f32 + 0.01f32 * (3.0 - 1.0)]);
        let mut pc = MinMaxState::default();
        pc.update(vec![0.0; 3], vec![1.0; 3], 0.5).unwrap();
        assert!(pc.update(vec![0.0; 2], vec![1.0; 2], 0.5).is_err());
    }

    #[test]
    fn channel_layout_follows_transpose_and_flatten() {
        let l = ChannelLayout::new(&[2, 3, 2], 1).unwrap();
        assert_eq!((l.outer, l.channels, l.inner), (2, 3, 2));
        let data: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let (lo, hi) = l.min_max(&data);
        assert_eq!(lo, vec![0.0, 2.0, 4.0]);
        assert_eq!(hi, vec![7.0, 9.0, 11.0]);
        let e = ChannelLayout::new(&[4], 0).unwrap_err().to_string();
        assert!(e.contains("[-1, 0], but got 1"), "{e}");
        let e = ChannelLayout::new(&[4, 2], 3).unwrap_err().to_string();
        assert!(e.contains("[-2, 1], but got 3"), "{e}");
    }

    #[test]
    fn l2_loss_accumulates_eight_lanes_then_the_tail() {
        let q = cfg("{}");
        // With scale 1 every integer is exact and every x.5 rounds to even: errors of 0.5.
        let row: Vec<f32> = (0..11).map(|i| i as f32 + 0.5).collect();
        assert_eq!(l2_loss(&row, &q, 1.0), (11.0f32 * 0.25).sqrt());
        assert_eq!(l2_loss(&[3.0, -2.0], &q, 1.0), 0.0);
    }

    #[test]
    fn channel_rows_follow_transpose_then_flatten() {
        // shape [2, 3, 2], value = flat index
        let x = Tensor::new(vec![2, 3, 2], (0..12).map(|v| v as f32).collect()).unwrap();
        let (rows, c) = channel_rows(&x, 1).unwrap();
        assert_eq!(c, 3);
        assert_eq!(
            rows.to_vec(),
            vec![0., 1., 6., 7., 2., 3., 8., 9., 4., 5., 10., 11.]
        );
        let (rows, c) = channel_rows(&x, 2).unwrap();
        assert_eq!(c, 2);
        // transpose(0, 2) has shape [2, 3, 2] with dims (2, 1, 0): row c lists x[k][j][c] for
        // j-major, k-minor.
        assert_eq!(
            rows.to_vec(),
            vec![0., 6., 2., 8., 4., 10., 1., 7., 3., 9., 5., 11.]
        );
        assert_eq!(channel_rows(&x, 0).unwrap().0.to_vec(), x.data);
    }

    #[test]
    fn fake_quant_divides_and_clamps() {
        let q = cfg(r#"{"round_mode": "bpu_round"}"#);
        assert_eq!(q.fake_quant(0.25, 0.5), 0.5);
        assert_eq!(q.fake_quant(100.0, 0.5), 63.5);
        assert_eq!(q.fake_quant(-100.0, 0.5), -64.0);
    }
    proptest! {
        #[test]
        fn fake_quantization_lands_on_the_grid(
            x in proptest::collection::vec(-1e4f32..1e4, 1..100),
            s in 1e-3f32..10.0,
            bpu in any::<bool>(),
            qint16 in any::<bool>(),
        ) {
            let params = Params::new()
                .with("round_mode", if bpu { "bpu_round" } else { "half_to_even" })
                .with("dtype", if qint16 { "qint16" } else { "qint8" });
            let q = QuantConfig::from_params(&params).unwrap();
            let qp = QParams::int(vec![s], ZeroPoint::Int(vec![0]), q.quant_min, q.quant_max, vec![], vec![]);
            let y = fake_quantize(&Tensor::from_vec(x.clone()), &qp, q.round_mode).unwrap();
            for (&v, &w) in x.iter().zip(&y.data) {
                let level = q.round_mode.round(v / s).clamp(q.quant_min as f32, q.quant_max as f32);
                prop_assert_eq!(w, level * s);
                prop_assert_eq!(w, q.fake_quant(v, s));
            }
            let loss = l2_loss(&x, &q, s) as f64;
            let exact: f64 = x.iter().zip(&y.data).map(|(&a, &b)| ((b - a) as f64).powi(2)).sum::<f64>().sqrt();
            prop_assert!((loss - exact).abs() <= exact * 1e-5 + 1e-30);
        }
    }
}
