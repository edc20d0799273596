//! `torch.linspace` and `torch.arange` on float32 as PyTorch's CPU kernels compute them, for the
//! histogram edges Quark keeps.
//!
//! Both kernels run through `cpu_serial_kernel_vec`: the first `⌊n / 2V⌋·2V` elements are
//! written `V` at a time by `Vectorized<float>::arange(base, step)` (`base + k·step`, with `base`
//! computed once per vector and rounded to float32), the tail element by element. `V` is the
//! float32 vector width of the CPU kernel (8 with AVX2, which [`VEC_LANES`] assumes), so the
//! values differ from `start + i·step` by an ulp here and there, which matters when Quark takes
//! `edges[1] − edges[0]` as its bin width.

/// float32 lanes of PyTorch's CPU vector kernels (AVX2).
pub const VEC_LANES: usize = 8;

/// `torch.linspace(start, end, steps)` with the default float32 dtype (`start`/`end` are
/// rounded to float32 first, the step is float32; the second half counts back from `end`).
pub fn linspace_f32(start: f64, end: f64, steps: usize, lanes: usize) -> Vec<f32> {
    let (start, end) = (start as f32, end as f32);
    if steps == 0 {
        return Vec::new();
    }
    if steps == 1 {
        return vec![start];
    }
    let step = (end - start) / (steps - 1) as f32;
    let halfway = steps / 2;
    let scalar = |idx: usize| -> f32 {
        if idx < halfway {
            start + step * idx as f32
        } else {
            end - step * (steps - idx - 1) as f32
        }
    };
    let vectorized = if lanes == 0 {
        0
    } else {
        steps / (2 * lanes) * (2 * lanes)
    };
    (0..steps)
        .map(|i| {
            if i < vectorized {
                let idx0 = i - i % lanes;
                let base = scalar(idx0);
                base + (i - idx0) as f32 * step
            } else {
                scalar(i)
            }
        })
        .collect()
}

/// Number of elements of `torch.arange(start, end, step)`: `⌈(end − start)/step⌉` in double.
pub fn arange_len(start: f64, end: f64, step: f64) -> Option<usize> {
    let n = ((end - start) / step).ceil();
    (n.is_finite() && n >= 0.0 && n < (1u64 << 31) as f64).then_some(n as usize)
}

/// `torch.arange(start, end, step)` with float32 output (values computed in double).
pub fn arange_f32(start: f64, end: f64, step: f64, lanes: usize) -> Option<Vec<f32>> {
    let n = arange_len(start, end, step)?;
    let vectorized = if lanes == 0 {
        0
    } else {
        n / (2 * lanes) * (2 * lanes)
    };
    Some(
        (0..n)
            .map(|i| {
                if i < vectorized {
                    let idx0 = i - i % lanes;
                    let base = (start + step * idx0 as f64) as f32;
                    (base as f64 + (i - idx0) as f64 * step) as f32
                } else {
                    (start + step * i as f64) as f32
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linspace_endpoints_are_exact() {
        let v = linspace_f32(-1.3, 7.9, 2049, VEC_LANES);
        assert_eq!(v.len(), 2049);
        assert_eq!(v[0], -1.3f32);
        assert_eq!(v[2048], 7.9f32);
        assert_eq!(v[1], -1.3f32 + (7.9f32 - -1.3f32) / 2048.0);
        let plain = linspace_f32(-1.3, 7.9, 2049, 0);
        let differ = v.iter().zip(&plain).filter(|(a, b)| a != b).count();
        assert!(differ < 2049 / 2, "{differ}");
        for (a, b) in v.iter().zip(&plain) {
            assert!((a - b).abs() <= 4.0 * f32::EPSILON * 8.0, "{a} {b}");
        }
        assert_eq!(linspace_f32(0.0, 1.0, 3, 8), vec![0.0, 0.5, 1.0]);
    }

    #[test]
    fn arange_counts_in_double() {
        assert_eq!(arange_len(0.0, 1.0, 0.25), Some(4));
        assert_eq!(arange_len(0.0, 1.0000001, 0.25), Some(5));
        assert_eq!(arange_len(1.0, 0.0, 0.25), None);
        let v = arange_f32(0.1, 3.0, 0.1, VEC_LANES).unwrap();
        assert_eq!(v.len(), 29);
        assert_eq!(v[0], 0.1f32);
        assert_eq!(v[28], (0.1f64 + 0.1 * 28.0) as f32);
        assert_eq!(v[5], (((0.1f64) as f32) as f64 + 5.0 * 0.1) as f32);
    }
}
