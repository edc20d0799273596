//! Quark's `PerTensorPowOf2MinMaxObserver` and `PerTensorPowOf2MinMSEObserver` (power-of-two
//! scales, after Quark ONNX's `compute_scale_zp`/`quantize_data`).
//!
//! From the running min/max (range forced to include 0; symmetric: `±amax`):
//! `scale = (max − min)/(qmax − qmin)` (1.0 when the range is 0), `zp = trunc(qmin − min/scale)`,
//! `pos = round_half_even(−log2 scale)` (scale clamped to `2^±127`), `scale' = 2^−pos`,
//! `rmin = min((qmin − zp)·scale', 0)`, `zp' = round_half_even(qmin − rmin/scale')` (symmetric
//! uint8: 127 → 128). MinMSE then tries `2^−(pos−2) … 2^−(pos+2)` on the **last batch only**,
//! keeping `zp'` for every candidate, and picks the first smallest sum of squared errors of
//! `(clamp(round(x/s) + zp', qmin, qmax) − zp')·s`.
//!
//! Quark appends every computed `(scale, zp)` to a record and returns the **most common** one
//! (the first seen among ties). Its calibration loop (`ScaledFakeQuantize`) computes qparams after
//! every batch; set `qparams_every_batch` to reproduce that, otherwise (as when the observer is
//! called directly) they are computed once at the end.
//!
//! State: the running min/max (`is_dynamic`: of the last batch). MinMax also keeps the running
//! min/max after every batch, so its record is recomputed by the search and every parameter but
//! `is_dynamic` stays a search parameter. MinMSE's record needs each batch's data at the time,
//! so with `qparams_every_batch` the search runs during the data pass: its `dtype`,
//! `symmetric`, `scale_type` and `qparams_every_batch` are data parameters.

use super::build_qparams;
use super::config::quark_params;
use super::dtype::PowOf2Dtype;
use super::kernels::scaled_fake_quantize;
use super::minmax::RunningMinMax;
use super::spec::{PerTensorScheme, QuarkConfig};
use crate::derivation::Step;
use crate::error::{Error, Result, Stage};
use crate::formats::e8m0::{exp2_f32, log2_f32};
use crate::observer::{ObserverKind, PlotSnapshot, QParams, ZeroPoint};
use crate::qdq::QdqKernel;
use crate::quant::round_half_even;
use crate::tensor::Tensor;

quark_params! {
    /// The configuration `PerTensorPowOf2MinMaxObserver` reads.
    pub struct PowOf2MinMaxArgs {
        dtype: PowOf2Dtype = PowOf2Dtype::Int8, Search;
        qscheme: PerTensorScheme = PerTensorScheme::PerTensor;
        symmetric: Some(true), Search;
        scale_type: Search;
        is_dynamic: false, Data;
        scale_format: None;
        qparams_every_batch: Search;
    }
}

quark_params! {
    /// The configuration `PerTensorPowOf2MinMSEObserver` reads. With `qparams_every_batch` the
    /// qparams of every batch are computed in the data pass (from that batch's data), so what
    /// enters them is declared `Data`.
    pub struct PowOf2MinMseArgs {
        dtype: PowOf2Dtype = PowOf2Dtype::Int8, Data;
        qscheme: PerTensorScheme = PerTensorScheme::PerTensor;
        symmetric: Some(true), Data;
        scale_type: Data;
        is_dynamic: false, Data;
        scale_format: None;
        qparams_every_batch: Data;
    }
}

/// The configuration of a power-of-two observer.
#[derive(Debug, Clone, PartialEq)]
pub struct PowOf2Config {
    pub spec: QuarkConfig,
    /// Compute qparams after every batch (Quark's calibration loop).
    pub every_batch: bool,
}

/// `_scale2pos`: `round_half_even(−log2(clamp(scale, 2^−127, 2^127)))` in float32.
pub fn scale_to_pos(scale: f32) -> f32 {
    let s = (scale as f64).clamp(2f64.powi(-127), 2f64.powi(127)) as f32;
    (-log2_f32(s)).round_ties_even()
}

/// `_pos2scale`: `2^−pos`.
pub fn pos_to_scale(pos: f32) -> f32 {
    exp2_f32(-pos)
}

/// `_calculate_one_batch_quant_param` of the MinMax variant on the running `range`.
fn pow2_minmax(spec: &QuarkConfig, range: &RunningMinMax) -> Result<(f32, i64)> {
    if !range.observed() {
        return Ok((1.0, 0));
    }
    let (min, max) = (range.min, range.max);
    if min.is_nan() || max.is_nan() || min > max {
        return Err(Error::framework(
            "AssertionError",
            format!("min {min} should be less than max {max}"),
            Stage::CalculateQparams,
        ));
    }
    let (qmin, qmax) = spec.qrange();
    let (qmin, qmax) = (qmin as f32, qmax as f32);
    let mut min_neg = min.min(0.0);
    let mut max_pos = max.max(0.0);
    let symmetric = spec.symmetric == Some(true);
    if symmetric {
        let amax = min_neg.abs().max(max_pos.abs());
        (min_neg, max_pos) = (-amax, amax);
    }
    let dr = max_pos - min_neg;
    let scale = if dr != 0.0 { dr / (qmax - qmin) } else { 1.0 };
    if scale.is_nan() || scale <= 0.0 {
        return Err(Error::framework(
            "AssertionError",
            "scale should larger than 0, please check",
            Stage::CalculateQparams,
        ));
    }
    let zero_point = (qmin - min_neg / scale).trunc();
    let pof2 = pos_to_scale(scale_to_pos(scale));
    let new_rmin = ((qmin - zero_point) * pof2).min(0.0);
    let mut new_zp = (qmin - new_rmin / pof2).round_ties_even() as i64;
    if symmetric && spec.dtype == super::dtype::QuarkDtype::Uint8 && new_zp == 127 {
        new_zp = 128;
    }
    Ok((spec.scale_type.cast(pof2), new_zp))
}

/// `_calculate_one_batch_quant_param` of the MinMSE variant: the MinMax result, then the best
/// of `2^−(pos−2) … 2^−(pos+2)` by squared error on `data` (the last batch), keeping its zero
/// point.
fn pow2_min_mse(
    spec: &QuarkConfig,
    range: &RunningMinMax,
    data: Option<&[f32]>,
) -> Result<(f32, i64)> {
    let (scale, zp) = pow2_minmax(spec, range)?;
    if !range.observed() {
        return Ok((scale, zp));
    }
    let Some(data) = data else {
        return Err(Error::framework(
            "AssertionError",
            "",
            Stage::CalculateQparams,
        ));
    };
    let (qmin, qmax) = spec.qrange();
    let (qmin, qmax) = (qmin as f32, qmax as f32);
    let z = zp as f32;
    let pos = scale_to_pos(scale);
    let candidates: [f32; 5] = std::array::from_fn(|i| pos_to_scale(pos + i as f32 - 2.0));
    let errors = squared_errors(data, &candidates, z, (qmin, qmax));
    let mut best = (f64::INFINITY, scale);
    for (&s, &diff) in candidates.iter().zip(&errors) {
        let diff = diff as f32 as f64;
        if diff < best.0 {
            best = (diff, s);
        }
    }
    Ok((best.1, zp))
}

/// Lanes of [`squared_error`]'s float64 sums.
const LANES: usize = 8;

/// For each candidate scale `s`, `Σ ((clamp(round(x/s) + z, qmin, qmax) − z)·s − x)²`, each
/// square in float32 and summed in float64: fixed pieces ([`crate::parallel::map_chunks`],
/// small enough to stay in cache while every candidate reads them), added in order, so the sums
/// do not depend on the thread count.
fn squared_errors<const N: usize>(
    data: &[f32],
    scales: &[f32; N],
    z: f32,
    q_range: (f32, f32),
) -> [f64; N] {
    let pieces = crate::parallel::map_chunks(data, |_, piece| {
        scales.map(|s| squared_error(piece, s, z, q_range))
    });
    let mut totals = [0.0f64; N];
    for piece in pieces {
        for (t, p) in totals.iter_mut().zip(piece) {
            *t += p;
        }
    }
    totals
}

/// One candidate's sum over one piece: eight lanes by index, added in order, then the tail.
fn squared_error(piece: &[f32], s: f32, z: f32, q_range: (f32, f32)) -> f64 {
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || squared_error_lanes(piece, s, z, q_range),
    )
}

#[inline(always)]
fn squared_error_lanes(piece: &[f32], s: f32, z: f32, (qmin, qmax): (f32, f32)) -> f64 {
    let error = |x: f32| {
        let q = (round_half_even(x / s) + z).clamp(qmin, qmax);
        let d = (q - z) * s - x;
        (d * d) as f64
    };
    let mut lanes = [0.0f64; LANES];
    let blocks = piece.chunks_exact(LANES);
    let tail = blocks.remainder();
    for block in blocks {
        for (a, &x) in lanes.iter_mut().zip(block) {
            *a += error(x);
        }
    }
    lanes.iter().sum::<f64>() + tail.iter().map(|&x| error(x)).sum::<f64>()
}

/// The most common entry of `record` (first seen among ties), as `Counter.most_common(1)`.
fn most_common(record: &[(f32, i64)]) -> Option<(f32, i64)> {
    let mut best: Option<((f32, i64), usize)> = None;
    for (i, entry) in record.iter().enumerate() {
        if record[..i].contains(entry) {
            continue;
        }
        let count = record.iter().filter(|e| *e == entry).count();
        if best.is_none_or(|(_, c)| count > c) {
            best = Some((*entry, count));
        }
    }
    best.map(|(e, _)| e)
}

/// The report of `(scale, zp)` chosen from `range`; `recorded` is the record's length when
/// qparams were computed every batch.
fn pow2_qparams(
    spec: &QuarkConfig,
    (scale, zp): (f32, i64),
    range: &RunningMinMax,
    recorded: Option<usize>,
) -> QParams {
    let (min_val, max_val) = range.buffers();
    let mut q = build_qparams(
        spec,
        (vec![scale], ZeroPoint::Int(vec![zp])),
        min_val,
        max_val,
        || {
            Step::new(
                "Power-of-two scale",
                "s = 2^−pos, pos the position chosen above; zp as Quark's ONNX power-of-two scheme sets it",
                "quark/torch/quantization/observer/observer.py:369 (amd-quark 0.13)",
            )
            .value("pos", scale_to_pos(scale) as i64)
        },
    );
    q.extra
        .insert("pos".into(), (scale_to_pos(scale) as i64).into());
    if let Some(n) = recorded {
        q.extra.insert("recorded_qparams".into(), n.into());
    }
    q
}

/// What `PerTensorPowOf2MinMaxObserver` collects: the running range, and the running range
/// after every batch (from which the every-batch record is computed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PowOf2MinMaxState {
    pub range: RunningMinMax,
    pub history: Vec<RunningMinMax>,
}

/// `PerTensorPowOf2MinMaxObserver`.
pub struct PowOf2MinMax;

impl ObserverKind for PowOf2MinMax {
    type Args = PowOf2MinMaxArgs;
    type Config = PowOf2Config;
    type State = PowOf2MinMaxState;

    fn resolve(args: &PowOf2MinMaxArgs, _: &[String]) -> Result<PowOf2Config> {
        Ok(PowOf2Config {
            spec: args.quark_config()?,
            every_batch: args.qparams_every_batch,
        })
    }

    fn init(_: &PowOf2Config) -> PowOf2MinMaxState {
        PowOf2MinMaxState::default()
    }

    fn feed(state: &mut PowOf2MinMaxState, cfg: &PowOf2Config, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        state.range.feed(&batch.data, cfg.spec.is_dynamic);
        state.history.push(state.range);
        Ok(())
    }

    fn qparams(state: &PowOf2MinMaxState, cfg: &PowOf2Config) -> Result<QParams> {
        if cfg.every_batch && !state.history.is_empty() {
            let record = state
                .history
                .iter()
                .map(|range| pow2_minmax(&cfg.spec, range))
                .collect::<Result<Vec<_>>>()?;
            let chosen = most_common(&record).unwrap_or((1.0, 0));
            return Ok(pow2_qparams(
                &cfg.spec,
                chosen,
                &state.range,
                Some(record.len()),
            ));
        }
        let chosen = pow2_minmax(&cfg.spec, &state.range)?;
        let recorded = cfg.every_batch.then_some(0);
        Ok(pow2_qparams(&cfg.spec, chosen, &state.range, recorded))
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    fn fake_quantize(cfg: &PowOf2Config, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(&cfg.spec, x, &q.scale, &q.zero_point)
    }

    fn qdq_kernel(cfg: &PowOf2Config, _: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::qdq_kernel::kernel(&cfg.spec, q)
    }

    fn plot(state: &PowOf2MinMaxState) -> PlotSnapshot {
        state.range.plot()
    }
}

/// What `PerTensorPowOf2MinMSEObserver` collects: the running range, the last batch, and (with
/// `qparams_every_batch`) the `(scale, zp)` computed after every batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PowOf2MinMseState {
    pub range: RunningMinMax,
    pub last_batch: Option<Vec<f32>>,
    pub record: Vec<(f32, i64)>,
}

/// `PerTensorPowOf2MinMSEObserver`.
pub struct PowOf2MinMse;

impl ObserverKind for PowOf2MinMse {
    type Args = PowOf2MinMseArgs;
    type Config = PowOf2Config;
    type State = PowOf2MinMseState;

    fn resolve(args: &PowOf2MinMseArgs, _: &[String]) -> Result<PowOf2Config> {
        Ok(PowOf2Config {
            spec: args.quark_config()?,
            every_batch: args.qparams_every_batch,
        })
    }

    fn init(_: &PowOf2Config) -> PowOf2MinMseState {
        PowOf2MinMseState::default()
    }

    fn feed(state: &mut PowOf2MinMseState, cfg: &PowOf2Config, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        state.range.feed(&batch.data, cfg.spec.is_dynamic);
        state.last_batch = Some(batch.data.clone());
        if cfg.every_batch {
            let entry = pow2_min_mse(&cfg.spec, &state.range, state.last_batch.as_deref())?;
            state.record.push(entry);
        }
        Ok(())
    }

    fn qparams(state: &PowOf2MinMseState, cfg: &PowOf2Config) -> Result<QParams> {
        let chosen = if cfg.every_batch && !state.record.is_empty() {
            most_common(&state.record).unwrap_or((1.0, 0))
        } else {
            pow2_min_mse(&cfg.spec, &state.range, state.last_batch.as_deref())?
        };
        let recorded = cfg.every_batch.then_some(state.record.len());
        Ok(pow2_qparams(&cfg.spec, chosen, &state.range, recorded))
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    fn fake_quantize(cfg: &PowOf2Config, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(&cfg.spec, x, &q.scale, &q.zero_point)
    }

    fn qdq_kernel(cfg: &PowOf2Config, _: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::qdq_kernel::kernel(&cfg.spec, q)
    }

    fn plot(state: &PowOf2MinMseState) -> PlotSnapshot {
        state.range.plot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::Instance;
    use crate::params::Params;
    use crate::registry;
    use serde_json::{json, Value};

    fn run(id: &str, params: Value, batches: &[Vec<f32>]) -> QParams {
        let spec = registry::find(id).unwrap();
        let mut o = Instance::new(spec, &Params::from_value(params).unwrap()).unwrap();
        for b in batches {
            o.feed(&Tensor::from_vec(b.clone())).unwrap();
        }
        o.qparams().unwrap()
    }

    const MIN_MAX: &str = "quark.PerTensorPowOf2MinMaxObserver";
    const MIN_MSE: &str = "quark.PerTensorPowOf2MinMSEObserver";

    #[test]
    fn power_of_two_scale_and_zero_point() {
        assert_eq!(scale_to_pos(4.0 / 127.5), 5.0);
        assert_eq!(pos_to_scale(5.0), 1.0 / 32.0);
        let q = run(MIN_MAX, json!({}), &[vec![-4.02, 3.9]]);
        assert_eq!(q.scale, vec![1.0 / 32.0]);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![0]));
        // Asymmetric uint8 on [−1, 3]: scale 4/255 → 2^−6, zp = trunc(0 + 63.75) = 63, then
        // round(0 + 63·2^−6 / 2^−6) = 63.
        let q = run(
            MIN_MAX,
            json!({"dtype": "uint8", "symmetric": false}),
            &[vec![-1.0, 3.0]],
        );
        assert_eq!(q.scale, vec![1.0 / 64.0]);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![63]));
    }

    #[test]
    fn min_mse_searches_around_the_min_max_scale() {
        // 120 with a bulk near ±1: the min/max scale 2^0 is best (clipping 120 costs more).
        let mut data = vec![120.0f32];
        data.extend((0..200).map(|i| (i as f32 / 100.0) - 1.0));
        let q = run(MIN_MSE, json!({}), &[data]);
        assert_eq!(q.scale, vec![1.0]);
    }

    #[test]
    fn every_batch_returns_the_most_common_qparams() {
        let batches = [vec![-1.0, 1.0], vec![-1.0, 1.0], vec![-4.0, 4.0]];
        let every = json!({"qparams_every_batch": true});
        // MinMax: 2/255 → 2^−7 twice, 8/255 → 2^−5 once.
        let q = run(MIN_MAX, every.clone(), &batches);
        assert_eq!(
            (q.scale.clone(), q.extra["recorded_qparams"].clone()),
            (vec![pos_to_scale(7.0)], json!(3))
        );
        // Computed once at the end, the running range [−4, 4] decides.
        assert_eq!(
            run(MIN_MAX, json!({}), &batches).scale,
            vec![pos_to_scale(5.0)]
        );
        // MinMSE: ±1 is exact from 2^−5 on (the first of equal errors wins), ±4 from 2^−3.
        let q = run(MIN_MSE, every, &batches);
        assert_eq!(q.scale, vec![pos_to_scale(5.0)]);
        assert_eq!(
            run(MIN_MSE, json!({}), &batches).scale,
            vec![pos_to_scale(3.0)]
        );
    }
}
