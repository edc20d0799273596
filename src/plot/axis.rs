//! A numeric axis, linear or logarithmic, with ticks on round numbers: 1–2–5 steps when linear,
//! 1–2–5 (or 1–3, or decade) multiples of powers of ten when logarithmic. plotters' own log axis
//! only ticks decades, which leaves short ranges nearly unlabelled.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use std::ops::Range;

/// Axis over `[lo, hi]`, logarithmic when `log` (then both bounds must be > 0).
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    /// A linear axis; a degenerate range is widened.
    pub fn linear(lo: f64, hi: f64) -> Self {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else {
            (lo - 0.5, lo + 0.5)
        };
        Axis { lo, hi, log: false }
    }

    /// A logarithmic axis; non-positive or reversed bounds are repaired.
    pub fn log(lo: f64, hi: f64) -> Self {
        let lo = if lo > 0.0 && lo.is_finite() {
            lo
        } else {
            1e-12
        };
        let hi = if hi > lo && hi.is_finite() {
            hi
        } else {
            lo * 10.0
        };
        Axis { lo, hi, log: true }
    }

    fn t(&self, v: f64) -> f64 {
        if self.log {
            v.max(self.lo * 1e-6).log10()
        } else {
            v
        }
    }
}

/// Log tick values in `[lo, hi]` using the given mantissas, every `every` decades.
fn log_ticks(lo: f64, hi: f64, mantissas: &[f64], every: i32) -> Vec<f64> {
    let d0 = lo.log10().floor() as i32;
    let d1 = hi.log10().ceil() as i32;
    let mut out = Vec::new();
    for d in d0..=d1 {
        if (d - d0) % every != 0 {
            continue;
        }
        let p = 10f64.powi(d);
        for m in mantissas {
            let v = m * p;
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                out.push(v);
            }
        }
    }
    out
}

/// Linear ticks with a 1–2–5 step, at most `max` of them.
fn linear_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let span = hi - lo;
    if !(span > 0.0 && span.is_finite()) {
        return vec![lo];
    }
    let raw = span / max.max(1) as f64;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| span / s <= max as f64)
        .unwrap_or(10.0 * p);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    // Divide by an exact power of ten so that 3 × 0.2 prints as 0.6.
    let decimals = (-step.log10().floor()).max(0.0) as i32;
    let scale = 10f64.powi(decimals);
    (first..=last)
        .map(|k| (k as f64 * step * scale).round() / scale)
        .collect()
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = (self.t(*value) - self.t(self.lo)) / (self.t(self.hi) - self.t(self.lo));
        let f = if f.is_finite() {
            f.clamp(-10.0, 10.0)
        } else {
            0.0
        };
        (limit.0 as f64 + f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let max = hint.max_num_points().max(2);
        if !self.log {
            return linear_ticks(self.lo, self.hi, max);
        }
        for mantissas in [&[1.0, 2.0, 5.0][..], &[1.0, 3.0], &[1.0]] {
            let t = log_ticks(self.lo, self.hi, mantissas, 1);
            if t.len() <= max && t.len() >= 2 {
                return t;
            }
        }
        let mut every = 2;
        loop {
            let t = log_ticks(self.lo, self.hi, &[1.0], every);
            if t.len() <= max || every > 64 {
                return t;
            }
            every += 1;
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(
            log_ticks(0.04, 3.0, &[1.0, 2.0, 5.0], 1),
            vec![0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
        );
        assert_eq!(log_ticks(1e-6, 1.0, &[1.0], 2).len(), 4);
        assert_eq!(linear_ticks(-4.2, 4.7, 6), vec![-4.0, -2.0, 0.0, 2.0, 4.0]);
        assert_eq!(
            linear_ticks(0.0, 1.0, 5),
            vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
        );
        let a = Axis::log(0.01, 100.0);
        assert_eq!(a.map(&1.0, (0, 100)), 50);
        assert_eq!(Axis::linear(0.0, 10.0).map(&2.5, (0, 100)), 25);
    }
}
