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

use super::build_qparams;
use super::kernels::scaled_fake_quantize;
use super::minmax::PerTensorMinMax;
use super::spec::{QuarkDtype, SpecDefaults};
use crate::error::{Error, Result, Stage};
use crate::formats::e8m0::{exp2_f32, log2_f32};
use crate::observer::legacy::Observer;
use crate::observer::{ObserverState, QParams, ZeroPoint};
use crate::params::{ParamSpec, Params};
use crate::quant::round_half_even;
use crate::tensor::Tensor;

/// `qparams_every_batch` parameter declaration.
pub fn every_batch_param() -> ParamSpec {
    ParamSpec::bool(
        "qparams_every_batch",
        false,
        "compute qparams after every batch as Quark's calibration loop does (the most common result wins)",
    )
}

/// The power-of-two observers.
#[derive(Debug, Clone)]
pub struct PerTensorPowOf2 {
    minmax: PerTensorMinMax,
    mse: bool,
    every_batch: bool,
    last_batch: Option<Vec<f32>>,
    record: Vec<(f32, i64)>,
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

impl PerTensorPowOf2 {
    /// Build from parameters; `mse` selects the MinMSE variant.
    pub fn new(defaults: &SpecDefaults, params: &Params, mse: bool) -> Result<Self> {
        let minmax = PerTensorMinMax::new(defaults, params)?;
        if !matches!(minmax.spec().dtype, QuarkDtype::Int8 | QuarkDtype::Uint8) {
            return Err(Error::framework(
                "ValueError",
                format!(
                    "PerTensorPowOf2MinMaxObserver only supports int8, uint8, and int32 dtypes, got Dtype.{}.",
                    minmax.spec().dtype.name()
                ),
                Stage::Init,
            ));
        }
        Ok(PerTensorPowOf2 {
            minmax,
            mse,
            every_batch: params.bool_or("qparams_every_batch", false)?,
            last_batch: None,
            record: Vec::new(),
        })
    }

    /// `_calculate_one_batch_quant_param` of the MinMax variant.
    fn pow2_minmax(&self, min: f32, max: f32) -> Result<(f32, i64)> {
        if !self.minmax.observed() {
            return Ok((1.0, 0));
        }
        if min.is_nan() || max.is_nan() || min > max {
            return Err(Error::framework(
                "AssertionError",
                format!("min {min} should be less than max {max}"),
                Stage::CalculateQparams,
            ));
        }
        let spec = self.minmax.spec();
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
        if symmetric && spec.dtype == QuarkDtype::Uint8 && new_zp == 127 {
            new_zp = 128;
        }
        Ok((spec.scale_type.cast(pof2), new_zp))
    }

    /// One `(scale, zp)` as `_calculate_one_batch_quant_param` computes it now.
    fn one_batch(&self) -> Result<(f32, i64)> {
        let (min, max) = self.minmax.min_max();
        let (scale, zp) = self.pow2_minmax(min, max)?;
        if !self.mse || !self.minmax.observed() {
            return Ok((scale, zp));
        }
        let Some(data) = &self.last_batch else {
            return Err(Error::framework(
                "AssertionError",
                "",
                Stage::CalculateQparams,
            ));
        };
        let (qmin, qmax) = self.minmax.spec().qrange();
        let (qmin, qmax) = (qmin as f32, qmax as f32);
        let z = zp as f32;
        let pos = scale_to_pos(scale);
        let mut best = (f64::INFINITY, scale);
        for i in 0..5 {
            let s = pos_to_scale(pos + i as f32 - 2.0);
            let diff: f64 = data
                .iter()
                .map(|&x| {
                    let q = (round_half_even(x / s) + z).clamp(qmin, qmax);
                    let d = (q - z) * s - x;
                    (d * d) as f64
                })
                .sum::<f64>();
            let diff = diff as f32 as f64;
            if diff < best.0 {
                best = (diff, s);
            }
        }
        Ok((best.1, zp))
    }

    /// The most common entry of `record` (first seen among ties).
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
}

impl Observer for PerTensorPowOf2 {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.minmax.observe(batch)?;
        if self.mse {
            self.last_batch = Some(batch.data.clone());
        }
        if self.every_batch {
            let entry = self.one_batch()?;
            self.record.push(entry);
        }
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let (scale, zp) = if self.every_batch && !self.record.is_empty() {
            Self::most_common(&self.record).unwrap_or((1.0, 0))
        } else {
            self.one_batch()?
        };
        let (min, max) = self.minmax.min_max();
        let observed = self.minmax.observed();
        let mut q = build_qparams(
            self.minmax.spec(),
            (vec![scale], ZeroPoint::Int(vec![zp])),
            if observed { vec![min] } else { Vec::new() },
            if observed { vec![max] } else { Vec::new() },
        );
        q.extra
            .insert("pos".into(), (scale_to_pos(scale) as i64).into());
        if self.every_batch {
            q.extra
                .insert("recorded_qparams".into(), self.record.len().into());
        }
        Ok(q)
    }

    fn reset(&mut self) {
        self.minmax.reset();
        self.last_batch = None;
        self.record.clear();
    }

    fn state(&self) -> ObserverState {
        self.minmax.state()
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(self.minmax.spec(), x, &q.scale, &q.zero_point)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::quark::spec::POW2_DTYPES;

    fn run(mse: bool, params: Params, batches: &[Vec<f32>]) -> QParams {
        let d = SpecDefaults::per_tensor(POW2_DTYPES);
        let mut o = PerTensorPowOf2::new(&d, &params, mse).unwrap();
        for b in batches {
            o.observe(&Tensor::from_vec(b.clone())).unwrap();
        }
        o.qparams().unwrap()
    }

    #[test]
    fn power_of_two_scale_and_zero_point() {
        assert_eq!(scale_to_pos(4.0 / 127.5), 5.0);
        assert_eq!(pos_to_scale(5.0), 1.0 / 32.0);
        let q = run(false, Params::new(), &[vec![-4.02, 3.9]]);
        assert_eq!(q.scale, vec![1.0 / 32.0]);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![0]));
        // Asymmetric uint8 on [−1, 3]: scale 4/255 → 2^−6, zp = trunc(0 + 63.75) = 63, then
        // round(0 + 63·2^−6 / 2^−6) = 63.
        let u = Params::new()
            .with("dtype", "uint8")
            .with("symmetric", false);
        let q = run(false, u, &[vec![-1.0, 3.0]]);
        assert_eq!(q.scale, vec![1.0 / 64.0]);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![63]));
        let err = PerTensorPowOf2::new(
            &SpecDefaults::per_tensor(&["int4"]),
            &Params::new().with("dtype", "int4"),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("ValueError: PerTensorPowOf2MinMaxObserver only supports"),
            "{err}"
        );
    }

    #[test]
    fn min_mse_searches_around_the_min_max_scale() {
        // 120 with a bulk near ±1: the min/max scale 2^0 is best (clipping 120 costs more).
        let mut data = vec![120.0f32];
        data.extend((0..200).map(|i| (i as f32 / 100.0) - 1.0));
        let q = run(true, Params::new(), &[data]);
        assert_eq!(q.scale, vec![1.0]);
        // Most common over batches when computed every batch.
        let p = Params::new().with("qparams_every_batch", true);
        let q = run(
            false,
            p,
            &[vec![-1.0, 1.0], vec![-1.0, 1.0], vec![-4.0, 4.0]],
        );
        assert_eq!(q.scale, vec![pos_to_scale(scale_to_pos(2.0 / 255.0))]);
        assert_eq!(q.extra["recorded_qparams"], 3);
    }
}
