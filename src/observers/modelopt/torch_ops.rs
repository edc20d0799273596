//! The few torch CPU kernels ModelOpt's histogram collection goes through, as float32 results.
//!
//! * `torch.linspace(start, end, steps)` (float32): the step `(end − start)/(steps − 1)` and every
//!   value are computed in double, the first half as `start + step·i`, the second half as
//!   `end − step·(steps − 1 − i)`, then rounded to float32 (checked bit for bit against the
//!   golden `bin_edges`).
//! * `torch.arange(start, end, step)` (float32): `ceil((end − start)/step)` values
//!   `start + step·i`, accumulated in double and rounded to float32.

use crate::error::{Error, Result};
use crate::numpy::MAX_ELEMENTS;

/// `torch.linspace(start, end, steps)` with a float32 result.
pub fn linspace_f32(start: f32, end: f32, steps: usize) -> Vec<f32> {
    match steps {
        0 => Vec::new(),
        1 => vec![start],
        _ => {
            let (s, e) = (start as f64, end as f64);
            let step = (e - s) / (steps - 1) as f64;
            let halfway = steps / 2;
            (0..steps)
                .map(|i| {
                    if i < halfway {
                        (s + step * i as f64) as f32
                    } else {
                        (e - step * (steps - 1 - i) as f64) as f32
                    }
                })
                .collect()
        }
    }
}

/// `torch.arange(start, end, step)` with a float32 result (`step > 0`).
pub fn arange_f32(start: f64, end: f64, step: f64) -> Result<Vec<f32>> {
    let size = ((end - start) / step).ceil();
    if !size.is_finite() || size >= MAX_ELEMENTS as f64 {
        return Err(Error::input(format!(
            "torch.arange({start}, {end}, {step}) would have {size} elements"
        )));
    }
    let size = size.max(0.0) as usize;
    Ok((0..size)
        .map(|i| (start + step * i as f64) as f32)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linspace_meets_both_ends_exactly() {
        let y = linspace_f32(0.0, 3.9455497, 2049);
        assert_eq!(y[0], 0.0);
        assert_eq!(y[2048], 3.9455497);
        assert_eq!(y[1024], (3.9455497f32 as f64 / 2.0) as f32);
        assert!(y.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn arange_counts_like_torch() {
        assert_eq!(
            arange_f32(0.0, 1.0, 0.25).unwrap(),
            vec![0.0, 0.25, 0.5, 0.75]
        );
        assert_eq!(arange_f32(0.0, 1.1, 0.25).unwrap().len(), 5);
    }
}
