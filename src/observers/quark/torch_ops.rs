//! `torch.linspace` and `torch.arange` on float32 as PyTorch's CPU kernels compute them, for the
//! histogram edges Quark keeps.
//!
//! * `linspace(start, end, steps)`: `start`/`end` rounded to float32, float32 step
//!   `(end − start)/(steps − 1)`; the first half is `start + step·i`, the second half counts back
//!   from `end` (`end − step·(steps − 1 − i)`), each with one rounding (ATen's kernel is compiled
//!   with FMA contraction) — the same rule as [`crate::observers::torch`]'s linspace.
//! * `arange(start, end, step)`: `⌈(end − start)/step⌉` values `start + step·i` computed in
//!   double (ATen's accumulate type for float) and rounded to float32.
//!
//! The golden Quark data cannot tell these apart from variants that round twice inside a SIMD
//! vector (1 ulp here and there); the single-rounding rule is the one PyTorch's own golden data
//! confirmed.

/// `torch.linspace(start, end, steps)` with the default float32 dtype (the bounds are rounded
/// to float32 first, as when they come from float32 tensors).
pub fn linspace_f32(start: f64, end: f64, steps: usize) -> Vec<f32> {
    crate::observers::torch::ops::linspace_f32(start as f32, end as f32, steps)
}

/// Number of elements of `torch.arange(start, end, step)`: `⌈(end − start)/step⌉` in double
/// (`None` for a negative, non-finite or absurd count).
pub fn arange_len(start: f64, end: f64, step: f64) -> Option<usize> {
    let n = ((end - start) / step).ceil();
    (n.is_finite() && n >= 0.0 && n < (1u64 << 31) as f64).then_some(n as usize)
}

/// `torch.arange(start, end, step)` with float32 output (values computed in double).
pub fn arange_f32(start: f64, end: f64, step: f64) -> Option<Vec<f32>> {
    let n = arange_len(start, end, step)?;
    Some(
        (0..n)
            .map(|i| step.mul_add(i as f64, start) as f32)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linspace_endpoints_are_exact_and_halves_meet() {
        let v = linspace_f32(-1.3, 7.9, 2049);
        assert_eq!(v.len(), 2049);
        assert_eq!(v[0], -1.3f32);
        assert_eq!(v[2048], 7.9f32);
        let step = (7.9f32 - -1.3f32) / 2048.0;
        assert_eq!(v[1], step.mul_add(1.0, -1.3f32));
        assert_eq!(v[2047], (-step).mul_add(1.0, 7.9f32));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(linspace_f32(0.0, 1.0, 3), vec![0.0, 0.5, 1.0]);
        assert_eq!(linspace_f32(2.0, 3.0, 1), vec![2.0]);
    }

    #[test]
    fn arange_counts_in_double() {
        assert_eq!(arange_len(0.0, 1.0, 0.25), Some(4));
        assert_eq!(arange_len(0.0, 1.0000001, 0.25), Some(5));
        assert_eq!(arange_len(1.0, 0.0, 0.25), None);
        let v = arange_f32(0.1, 3.0, 0.1).unwrap();
        assert_eq!(v.len(), 29);
        assert_eq!(v[0], 0.1f32);
        assert_eq!(v[28], (0.1f64 + 0.1 * 28.0) as f32);
    }
}
