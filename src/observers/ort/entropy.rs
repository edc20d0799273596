//! ORT's `get_entropy_threshold` (KL-divergence threshold search on the value histogram).
//!
//! With `zero = bins // 2` and `half_q = num_quantized_bins // 2`, candidate `i` in
//! `half_q ..= zero` takes the slice `hist[zero − i .. min(zero + i + 1, bins)]`, threshold
//! `(edges[start], edges[end])`. The reference `p` is the slice with the outliers added to its
//! first and last bins. The candidate `q` merges the slice (not `p`) into `num_quantized_bins`
//! groups of `len // nqb` bins (remainder into the last group's count, but its bins stay 0 in
//! `q`), then spreads each group's count over the group's bins, divided by the number of
//! non-zero `p` bins — **stored in an int64 array, so the division truncates**. Both are
//! smoothed (`smooth_distribution`, eps 1e-4, float32) and compared with ORT's own float32
//! `entropy` (numpy pairwise sums; any bin that is not `p > 0 and q > 0` counts as +inf).
//! The first minimum wins; the threshold is then clamped to the observed `[min, max]`.
//! With the defaults (128 bins, 128 quantized bins) there is exactly one candidate: the full
//! range.

use crate::derivation::{self, Candidates, Step};
use crate::error::{Error, Result, Stage};
use crate::kernels::numpy;

/// Outcome of the threshold search.
#[derive(Debug, Clone, PartialEq)]
pub struct EntropySearch {
    /// The chosen (clamped) `(lowest, highest)`.
    pub range: (f32, f32),
    /// Every candidate's `(edges[start], edges[end])`, before clamping.
    pub candidates: Vec<(f32, f32)>,
    /// KL divergence of each candidate (float32 values; `inf` when a distribution is empty).
    pub divergence: Vec<f64>,
    /// Index of the chosen candidate.
    pub best: usize,
}

const EPS: f64 = 0.0001;

/// `smooth_distribution(p)` of `quant_utils`: zeros become `eps`, non-zeros lose
/// `eps·n_zeros/n_nonzeros`, in float32. `None` when `p` is all zeros.
pub fn smooth_distribution(p: &[i64]) -> Result<Option<Vec<f32>>> {
    let n_zeros = p.iter().filter(|&&v| v == 0).count();
    // `p.size - n_zeros` is computed as float32 in ORT.
    let n_nonzeros = (p.len() as f32) - (n_zeros as f32);
    if n_nonzeros == 0.0 {
        return Ok(None);
    }
    let eps1 = EPS * (n_zeros as f32 as f64) / (n_nonzeros as f64);
    if eps1 >= 1.0 {
        return Err(Error::framework(
            "AssertionError",
            format!(
                "n_zeros={:?}, n_nonzeros={:?}, eps1={eps1:?}",
                n_zeros as f32, n_nonzeros
            ),
            Stage::CalculateQparams,
        ));
    }
    let (up, down) = (EPS as f32, -(eps1 as f32));
    let hist: Vec<f32> = p
        .iter()
        .map(|&v| v as f32 + if v == 0 { up } else { down })
        .collect();
    if hist.iter().any(|&h| h <= 0.0) {
        return Err(Error::framework(
            "AssertionError",
            "",
            Stage::CalculateQparams,
        ));
    }
    Ok(Some(hist))
}

/// ORT's float32 `entropy(pk, qk)`: both normalised by their numpy sums, then
/// `Σ pk·ln(pk/qk)` with +inf wherever `pk > 0 and qk > 0` does not hold.
pub fn ort_entropy(p: &[f32], q: &[f32]) -> f32 {
    let (sp, sq) = (numpy::sum_f32(p), numpy::sum_f32(q));
    let vec: Vec<f32> = p
        .iter()
        .zip(q)
        .map(|(&a, &b)| {
            let pk = 1.0f32 * a / sp;
            let qk = 1.0f32 * b / sq;
            if pk > 0.0 && qk > 0.0 {
                pk * (pk / qk).ln()
            } else {
                f32::INFINITY
            }
        })
        .collect();
    numpy::sum_f32(&vec)
}

/// Search the threshold of `hist`/`edges` (observed data range `min..max`).
pub fn entropy_threshold(
    hist: &[i64],
    edges: &[f32],
    min: f32,
    max: f32,
    num_quantized_bins: usize,
) -> Result<EntropySearch> {
    let num_bins = hist.len();
    let zero = num_bins / 2;
    let half_q = num_quantized_bins / 2;
    if half_q > zero + 1 {
        return Err(Error::framework(
            "ValueError",
            "negative dimensions are not allowed",
            Stage::CalculateQparams,
        ));
    }
    if half_q > zero {
        return Err(Error::framework(
            "ValueError",
            "attempt to get argmin of an empty sequence",
            Stage::CalculateQparams,
        ));
    }
    if num_quantized_bins == 0 {
        return Err(Error::framework(
            "ZeroDivisionError",
            "integer division or modulo by zero",
            Stage::CalculateQparams,
        ));
    }
    let mut prefix = Vec::with_capacity(num_bins + 1);
    prefix.push(0i64);
    for &h in hist {
        prefix.push(prefix[prefix.len() - 1] + h);
    }
    let nqb = num_quantized_bins;
    let mut candidates = Vec::with_capacity(zero - half_q + 1);
    let mut divergence = Vec::with_capacity(zero - half_q + 1);
    let mut p: Vec<i64> = Vec::with_capacity(num_bins);
    let mut q: Vec<i64> = Vec::with_capacity(num_bins);
    let mut quantized = vec![0i64; nqb];
    for i in half_q..=zero {
        let start = zero - i;
        let end = (zero + i + 1).min(num_bins);
        candidates.push((edges[start], edges[end]));
        let sliced = &hist[start..end];
        p.clear();
        p.extend_from_slice(sliced);
        let len = p.len();
        p[0] += prefix[start];
        p[len - 1] += prefix[num_bins] - prefix[end];
        let merged = len / nqb;
        for (index, slot) in quantized.iter_mut().enumerate() {
            let s = index * merged;
            *slot = prefix[start + s + merged] - prefix[start + s];
        }
        quantized[nqb - 1] += prefix[end] - prefix[start + nqb * merged];
        q.clear();
        q.resize(len, 0);
        for (index, &count) in quantized.iter().enumerate() {
            let s = index * merged;
            let e = s + merged;
            let norm = p[s..e].iter().filter(|&&v| v != 0).count();
            if norm != 0 {
                let v = (count as f64 / norm as f64) as i64;
                q[s..e].iter_mut().for_each(|x| *x = v);
            }
        }
        let div = match (smooth_distribution(&p)?, smooth_distribution(&q)?) {
            (Some(ps), Some(qs)) => ort_entropy(&ps, &qs),
            _ => f32::INFINITY,
        };
        divergence.push(div as f64);
    }
    let best = numpy::argmin(&divergence).unwrap_or(0);
    let (mut lo, mut hi) = candidates[best];
    if lo < min {
        lo = min;
    }
    if hi > max {
        hi = max;
    }
    derivation::record(|| {
        let rows = candidates
            .iter()
            .zip(&divergence)
            .map(|(&(l, h), &d)| vec![f64::from(l), f64::from(h), d])
            .collect();
        Step::new(
            "Entropy search: the symmetric bin range with the smallest KL divergence",
            "for i = num_quantized_bins/2 … num_bins/2: p = the bins zero ± i with the outer tails added to \
             its ends, q = p merged into num_quantized_bins levels and expanded back (integer division), \
             both smoothed; divergence = KL(p ‖ q); the FIRST minimum wins, then clamped to [min, max]",
            "onnxruntime/quantization/calibrate.py:1184 (onnxruntime 1.31.1, \
             HistogramCollector.get_entropy_threshold)",
        )
        .value("num_quantized_bins", num_quantized_bins)
        .value("threshold", vec![lo, hi])
        .candidates(Candidates::new(
            &["low", "high", "KL divergence"],
            rows,
            best,
            "the first minimum (numpy argmin)",
        )
        .ranges_in(0, 1))
    });
    Ok(EntropySearch {
        range: (lo, hi),
        candidates,
        divergence,
        best,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoothing_moves_mass_from_nonzeros_to_zeros() {
        let s = smooth_distribution(&[0, 2, 0, 2]).unwrap().unwrap();
        assert_eq!(s, vec![1e-4, 2.0 - 1e-4, 1e-4, 2.0 - 1e-4]);
        assert_eq!(smooth_distribution(&[0, 0]).unwrap(), None);
        // 1 non-zero among 10001 zeros → eps1 = 1.0001 ≥ 1: ORT's assertion fires.
        let mut p = vec![0i64; 10_001];
        p[0] = 1;
        let err = smooth_distribution(&p).unwrap_err().to_string();
        assert!(err.starts_with("AssertionError: n_zeros=10000.0"), "{err}");
    }

    #[test]
    fn identical_distributions_have_zero_divergence() {
        let p = [1.0f32, 2.0, 3.0];
        assert_eq!(ort_entropy(&p, &p), 0.0);
        assert_eq!(ort_entropy(&[1.0, 0.0], &[1.0, 1.0]), f32::INFINITY);
    }

    #[test]
    fn default_bins_give_one_candidate_the_full_range() {
        let hist: Vec<i64> = (0..128).map(|i| (i % 7) as i64).collect();
        let edges = crate::kernels::numpy::linspace_f32(-2.0, 2.0, 129);
        let r = entropy_threshold(&hist, &edges, -1.5, 2.0, 128).unwrap();
        assert_eq!(r.candidates.len(), 1);
        assert_eq!(r.range, (-1.5, 2.0));
    }

    #[test]
    fn q_expansion_truncates_and_first_minimum_wins() {
        // 8 bins, 4 quantized bins: candidates i = 2, 3, 4 (slices of 5, 7 and 8 bins).
        let hist = [0i64, 1, 5, 3, 3, 5, 1, 0];
        let edges = crate::kernels::numpy::linspace_f32(-4.0, 4.0, 9);
        let r = entropy_threshold(&hist, &edges, -4.0, 4.0, 4).unwrap();
        assert_eq!(r.candidates, vec![(-2.0, 3.0), (-3.0, 4.0), (-4.0, 4.0)]);
        let min = r.divergence.iter().cloned().fold(f64::INFINITY, f64::min);
        assert_eq!(r.best, r.divergence.iter().position(|&d| d == min).unwrap());
        let too_many = entropy_threshold(&hist, &edges, -4.0, 4.0, 12).unwrap_err();
        assert_eq!(
            too_many.to_string(),
            "ValueError: negative dimensions are not allowed"
        );
    }
}
