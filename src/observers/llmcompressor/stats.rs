//! The statistics an llm-compressor observer keeps (`min_vals`, `max_vals`, one per qparam) and
//! how they combine across batches (`observers/min_max.py`, `observers/helpers.py`):
//!
//! * memoryless: the last batch's `amin`/`amax` over dims `(0, −1)` of the flattened batch;
//! * static: `torch.min(new, old)` / `torch.max(new, old)`, broadcasting like torch;
//! * moving average (`lerp`): `old·(1 − c) + new·c`, **not** `old + c·(new − old)`, with
//!   `1 − c` and `c` computed in double and rounded to float32 by the tensor multiply; the first
//!   batch initialises it and `c == 1` keeps the last batch.
//!
//! [`Combine`] names the three.

use super::flatten::Flattened;
use crate::error::{Error, Result, Stage};
use crate::kernels::torch::reduce::min_max_dims;
use crate::kernels::torch::{maximum, minimum};

use crate::observers::shaped_stats::ShapedStats;

impl ShapedStats {
    /// `_get_min_max(observed)`: `amin`/`amax` over dims `(0, −1)`.
    pub fn of(flat: &Flattened<'_>) -> Result<ShapedStats> {
        let dims = flat.reduced_dims()?;
        let (min, max) = min_max_dims(&flat.data, &flat.shape, &dims);
        Ok(ShapedStats {
            shape: flat.qparam_shape(),
            min,
            max,
        })
    }

    /// `min = torch.min(new, self)`, `max = torch.max(new, self)` (static min-max).
    pub fn running_extrema(&self, new: &ShapedStats) -> Result<ShapedStats> {
        let min = broadcast(new, &new.min, self, &self.min, minimum)?;
        let max = broadcast(new, &new.max, self, &self.max, maximum)?;
        Ok(ShapedStats {
            shape: min.0,
            min: min.1,
            max: max.1,
        })
    }

    /// `lerp(self, new, c) = self·(1 − c) + new·c` (moving average).
    pub fn lerp(&self, new: &ShapedStats, c: f64) -> Result<ShapedStats> {
        let keep = (1.0 - c) as f32;
        let take = c as f32;
        let mix = |a: f32, b: f32| a * keep + b * take;
        let min = broadcast(self, &self.min, new, &new.min, mix)?;
        let max = broadcast(self, &self.max, new, &new.max, mix)?;
        Ok(ShapedStats {
            shape: min.0,
            min: min.1,
            max: max.1,
        })
    }
}

/// How a batch's statistics combine with those already collected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Combine {
    /// Memoryless: the last batch's.
    Last,
    /// Static: element-wise running extrema.
    RunningExtrema,
    /// Moving average with constant `c` (`c == 1` keeps the last batch).
    MovingAverage(f64),
}

impl Combine {
    /// The statistics after `new`, given those collected before (`None` before any batch).
    pub fn merge(self, old: Option<&ShapedStats>, new: ShapedStats) -> Result<ShapedStats> {
        match (self, old) {
            (Combine::RunningExtrema, Some(old)) => old.running_extrema(&new),
            (Combine::MovingAverage(c), Some(old)) if c != 1.0 => old.lerp(&new, c),
            _ => Ok(new),
        }
    }
}

/// `f(a, b)` element-wise with torch's broadcasting (`a` is the first operand of the error
/// message).
fn broadcast(
    a: &ShapedStats,
    a_values: &[f32],
    b: &ShapedStats,
    b_values: &[f32],
    f: impl Fn(f32, f32) -> f32,
) -> Result<(Vec<usize>, Vec<f32>)> {
    let n = a.shape.len().max(b.shape.len());
    let dim = |s: &[usize], i: usize| {
        let offset = n - 1 - i;
        if offset < s.len() {
            s[s.len() - 1 - offset]
        } else {
            1
        }
    };
    let mut shape = vec![0usize; n];
    for i in (0..n).rev() {
        let (x, y) = (dim(&a.shape, i), dim(&b.shape, i));
        shape[i] = match (x, y) {
            _ if x == y => x,
            (1, _) => y,
            (_, 1) => x,
            _ => {
                return Err(Error::framework(
                    "RuntimeError",
                    format!(
                        "The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
                    ),
                    Stage::Forward,
                ))
            }
        };
    }
    let total: usize = shape.iter().product();
    let index = |s: &[usize], flat: usize| {
        // The element of an operand of shape `s` that output element `flat` reads.
        let mut rem = flat;
        let mut offset = 0usize;
        let mut stride = 1usize;
        for i in (0..n).rev() {
            let coord = rem % shape[i];
            rem /= shape[i];
            let size = dim(s, i);
            if size != 1 {
                offset += coord * stride;
            }
            stride *= size;
        }
        offset
    };
    let values = (0..total)
        .map(|k| f(a_values[index(&a.shape, k)], b_values[index(&b.shape, k)]))
        .collect();
    Ok((shape, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(shape: Vec<usize>, min: Vec<f32>, max: Vec<f32>) -> ShapedStats {
        ShapedStats { shape, min, max }
    }

    #[test]
    fn combining_batches() {
        let a = stats(vec![2], vec![-1.0, -2.0], vec![1.0, 2.0]);
        let b = stats(vec![2], vec![-3.0, 0.0], vec![0.5, 4.0]);
        let s = a.running_extrema(&b).unwrap();
        assert_eq!((s.min, s.max), (vec![-3.0, -2.0], vec![1.0, 4.0]));
        let m = a.lerp(&b, 0.5).unwrap();
        assert_eq!(m.min, vec![-2.0, -1.0]);
        let c = 0.01f64;
        let m = a.lerp(&b, c).unwrap();
        assert_eq!(m.max[1], 2.0f32 * (1.0 - c) as f32 + 4.0 * c as f32);
        // Broadcasting a per-tensor statistic against per-token ones, and refusing a mismatch.
        let t = stats(vec![1], vec![-5.0], vec![5.0]);
        assert_eq!(t.running_extrema(&a).unwrap().min, vec![-5.0, -5.0]);
        let odd = stats(vec![3], vec![0.0; 3], vec![0.0; 3]);
        let err = a.running_extrema(&odd).unwrap_err().to_string();
        assert_eq!(err, "RuntimeError: The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0");
    }
}
