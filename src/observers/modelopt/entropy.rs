//! `_compute_amax_entropy`: the KL-divergence amax search of ModelOpt (TensorRT's method).
//!
//! `bins = hist` with `bins[0] = bins[1]` (the zero bin replaced); `nbins = 2^(num_bits − 1 +
//! unsigned)` quantized levels. For every `i` in `start_bin ..= len(bins)` (step `stride`):
//! `space = linspace(0, i, nbins + 1)` (float64); source bin `k < i` goes to quantized bin
//! `digitize(k, space) − 1`, empty source bins excluded; the candidate `q` gives each non-empty
//! source bin the mean count of its quantized bin; the reference `p = bins[:i]` with
//! `Σ bins[i:]` added to its last bin; divergence = `scipy.stats.entropy(p, q)` (both
//! normalised, `Σ rel_entr`, numpy pairwise sums in float64). The **last** minimum wins:
//! `amax = edges[last_argmin·stride + start_bin]`.

use crate::derivation::{self, Candidates, Step};
use crate::error::{Error, Result, Stage};
use crate::kernels::numpy;

/// Outcome of the entropy search.
#[derive(Debug, Clone, PartialEq)]
pub struct EntropySearch {
    pub amax: f32,
    /// The `i` of every candidate (its amax is `edges[i]`).
    pub candidates: Vec<usize>,
    pub divergence: Vec<f64>,
    /// Index (into `candidates`) of the chosen one.
    pub best: usize,
}

/// `scipy.special.rel_entr(x, y)`.
fn rel_entr(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x > 0.0 && y > 0.0 {
        x * (x / y).ln()
    } else if x == 0.0 && y >= 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// Python's `round()` of a float to an integer (half to even).
fn py_round(x: f64) -> f64 {
    x.round_ties_even()
}

/// Run the search on `hist`/`edges` for an integer `num_bits`.
pub fn entropy_amax(
    hist: &[i64],
    edges: &[f64],
    num_bits: i64,
    unsigned: bool,
    stride: usize,
    start_bin: usize,
) -> Result<EntropySearch> {
    let err = |kind: &str, msg: String| Error::framework(kind, msg, Stage::CalculateQparams);
    if hist.len() < 2 {
        return Err(err(
            "IndexError",
            format!(
                "index 1 is out of bounds for axis 0 with size {}",
                hist.len()
            ),
        ));
    }
    let mut bins = hist.to_vec();
    bins[0] = bins[1];
    let total_data: i64 = bins.iter().sum();
    let shift = num_bits - 1 + unsigned as i64;
    if shift < 0 {
        return Err(err("ValueError", "negative shift count".into()));
    }
    if shift > 24 {
        return Err(Error::input(format!(
            "2^{shift} quantized bins are too many for the entropy search"
        )));
    }
    let nbins = 1usize << shift;
    let stop = bins.len();
    // tail[i] = Σ bins[i..]
    let mut tail = vec![0i64; stop + 1];
    for i in (0..stop).rev() {
        tail[i] = tail[i + 1] + bins[i];
    }
    let mut candidates = Vec::new();
    let mut divergence = Vec::new();
    let mut space = vec![0f64; nbins + 1];
    let mut digit = vec![0usize; stop];
    let mut group_sum = vec![0f64; nbins];
    let mut group_count = vec![0usize; nbins];
    let mut new_density = vec![0f64; stop];
    let mut vec_terms = vec![0f64; stop];
    let mut means = vec![0f64; nbins];
    let mut q_of_group = vec![0f64; nbins];
    // Term cache indexed by bin count, valid while its stamp is the current group's.
    let max_count = bins.iter().copied().max().unwrap_or(0).clamp(0, 1 << 20) as usize;
    let mut cache: Vec<(u64, f64)> = vec![(0, 0.0); max_count + 1];
    let mut stamp = 0u64;
    let mut i = start_bin;
    while i <= stop {
        if i == 0 {
            return Err(err(
                "IndexError",
                "index -1 is out of bounds for axis 0 with size 0".into(),
            ));
        }
        // space = np.linspace(0, i, nbins + 1)
        let step = i as f64 / nbins as f64;
        for (m, s) in space.iter_mut().enumerate() {
            *s = m as f64 * step;
        }
        space[nbins] = i as f64;
        group_sum.iter_mut().for_each(|g| *g = 0.0);
        group_count.iter_mut().for_each(|g| *g = 0);
        let mut m = 0usize;
        for k in 0..i {
            let kf = k as f64;
            while m < nbins && space[m + 1] <= kf {
                m += 1;
            }
            digit[k] = m;
            if bins[k] != 0 {
                group_sum[m] += bins[k] as f64;
                group_count[m] += 1;
            }
        }
        for g in 0..nbins {
            means[g] = group_sum[g] / group_count[g] as f64;
        }
        for k in 0..i {
            new_density[k] = if bins[k] != 0 { means[digit[k]] } else { 0.0 };
        }
        let nd = &new_density[..i];
        let nd_sum = numpy::sum_f64(nd);
        let total_new = nd_sum + tail[i] as f64;
        // reference_density = bins[:i], last += Σ bins[i:]; its sum is Σ bins exactly.
        let total_old = total_data;
        if py_round(total_new) != total_data as f64 || total_old != total_data {
            return Err(err(
                "RuntimeError",
                format!(
                    "Count mismatch! total_counts_new={total_new:?}, total_counts_old={total_old}, total_data={total_data}"
                ),
            ));
        }
        // p = bins[:i] with the tail added to its last bin; its numpy sum is Σ bins exactly
        // (integers below 2^53). Within one quantized bin, q is the same for every source bin,
        // so each term depends only on the source count: terms are cached per (group, count).
        let p_sum = total_data as f64;
        if p_sum == 0.0 || nd_sum == 0.0 {
            for k in 0..i {
                let p = bins[k] as f64 + if k == i - 1 { tail[i] as f64 } else { 0.0 };
                vec_terms[k] = rel_entr(p / p_sum, nd[k] / nd_sum);
            }
        } else {
            for g in 0..nbins {
                q_of_group[g] = means[g] / nd_sum;
            }
            let mut current = usize::MAX;
            for k in 0..i - 1 {
                let c = bins[k];
                if c == 0 {
                    vec_terms[k] = 0.0; // rel_entr(0, 0)
                    continue;
                }
                let g = digit[k];
                if g != current {
                    current = g;
                    stamp += 1;
                }
                let slot = cache.get_mut(c as usize);
                vec_terms[k] = match slot {
                    Some((st, v)) if *st == stamp => *v,
                    Some(slot) => {
                        let v = rel_entr(c as f64 / p_sum, q_of_group[g]);
                        *slot = (stamp, v);
                        v
                    }
                    None => rel_entr(c as f64 / p_sum, q_of_group[g]),
                };
            }
            let k = i - 1;
            let p = bins[k] as f64 + tail[i] as f64;
            vec_terms[k] = rel_entr(p / p_sum, nd[k] / nd_sum);
        }
        divergence.push(numpy::sum_f64(&vec_terms[..i]));
        candidates.push(i);
        i += stride.max(1);
    }
    let reversed: Vec<f64> = divergence.iter().rev().copied().collect();
    let Some(rev) = numpy::argmin(&reversed) else {
        return Err(err(
            "ValueError",
            "attempt to get argmin of an empty sequence".into(),
        ));
    };
    let best = divergence.len() - 1 - rev;
    let index = best * stride + start_bin;
    let amax = *edges.get(index).ok_or_else(|| {
        err(
            "IndexError",
            format!(
                "index {index} is out of bounds for axis 0 with size {}",
                edges.len()
            ),
        )
    })? as f32;
    derivation::record(|| {
        let rows = candidates
            .iter()
            .zip(&divergence)
            .map(|(&i, &d)| vec![i as f64, edges.get(i).copied().unwrap_or(f64::NAN), d])
            .collect();
        Step::new(
            "Entropy search: the amax with the smallest KL divergence",
            "for each candidate bin i (from start_bin, by stride): p = bins[:i] with the tail Σ bins[i:] \
             added to its last bin, q = p merged into 2^(bits − 1) levels and expanded back; \
             divergence = KL(p ‖ q); amax = edges[i] of the LAST minimum; bin 0 is first replaced by bin 1",
            "modelopt/torch/quantization/calib/histogram.py:210 (nvidia-modelopt 0.47.0, _compute_amax_entropy)",
        )
        .value("start_bin", start_bin)
        .value("stride", stride)
        .value("amax", amax)
        .candidates(Candidates::new(
            &["bin", "amax", "KL divergence"],
            rows,
            best,
            "the last minimum (argmin of the reversed divergences)",
        )
        .symmetric_ranges_in(1))
    });
    Ok(EntropySearch {
        amax,
        candidates,
        divergence,
        best,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_minimum_wins_and_zero_bin_is_replaced() {
        // One quantized level (num_bits 1): from i = 4 on, p (four equal bins, then empty ones)
        // equals q exactly, so candidates 4..=8 tie at 0 and the last one is taken. bins[0] is
        // replaced by bins[1], so the 1000 does not count.
        let hist = [1000, 5, 5, 5, 0, 0, 0, 0];
        let edges: Vec<f64> = (0..9).map(|i| i as f64).collect();
        let r = entropy_amax(&hist, &edges, 1, false, 1, 2).unwrap();
        assert_eq!(r.candidates, vec![2, 3, 4, 5, 6, 7, 8]);
        assert!(r.divergence[0] > 0.0 && r.divergence[1] > 0.0);
        assert!(
            r.divergence[2..].iter().all(|&d| d == 0.0),
            "{:?}",
            r.divergence
        );
        assert_eq!(r.best, 6);
        assert_eq!(r.amax, 8.0);
    }

    #[test]
    fn errors_match_the_reference() {
        let edges = [0.0, 1.0, 2.0];
        assert!(entropy_amax(&[1], &edges, 8, false, 1, 0)
            .unwrap_err()
            .to_string()
            .starts_with("IndexError"));
        assert_eq!(
            entropy_amax(&[1, 1], &edges, 8, false, 1, 5)
                .unwrap_err()
                .to_string(),
            "ValueError: attempt to get argmin of an empty sequence"
        );
    }

    #[test]
    fn kl_of_identical_shapes_is_zero() {
        // Two source bins per level, equal counts: q equals p on every candidate with i = 2·levels.
        let hist = [4, 4, 4, 4, 4, 4, 4, 4];
        let edges: Vec<f64> = (0..9).map(|i| i as f64 * 0.5).collect();
        let r = entropy_amax(&hist, &edges, 2, false, 1, 4).unwrap();
        assert!(r.divergence[4].abs() < 1e-15);
    }
}
