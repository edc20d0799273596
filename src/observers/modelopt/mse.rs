//! `_compute_amax_mse` and `_compute_amax_percentile`.
//!
//! **MSE** — for every bin centre `c_i` (`i` from `start_bin`, step `stride`) as amax, fake
//! quantize all centres and take `mean((q(c) − c)²·counts)` (float32); the first minimum wins,
//! `amax = centres[i]`. ModelOpt 0.47 calls `fake_tensor_quant(centers, amax, num_bits,
//! unsigned)`, but that function's third parameter is now `bias`: `num_bits` becomes the bias
//! and `unsigned` the bit width. With `unsigned=False` the bit width 0 gives `max_bound = −0.5`
//! and `min_bound = 0.5`, so every quantized centre is `−0.5/(−0.5/amax) + num_bits ≈ amax + 8`
//! and the error grows with amax — the search returns `centres[start_bin]` whenever the data's
//! weighted mean is below `num_bits`. With `unsigned=True` (bit width 1, scale 0) every error is
//! NaN and `np.argmin` takes the first, again `centres[start_bin]`. `num_bits=(4, 3)` reaches
//! `scaled_e4m3(centers, amax, 4, 3)`, which lacks its `M` argument (TypeError). The `.fixed`
//! variant makes the intended call `fake_tensor_quant(centers, amax, None, num_bits, unsigned)`.
//!
//! **Percentile** — `cdf = cumsum(hist/total)` (float64), `amax = edges[searchsorted(cdf,
//! p/100)]`.

use super::quant::{bounds, e4m3_value, tensor_quant_value};
use crate::derivation::{self, Candidates, Step};
use crate::error::{Error, Result, Stage};
use crate::kernels::numpy;
use crate::params::Bits;

/// Outcome of the MSE search.
#[derive(Debug, Clone, PartialEq)]
pub struct MseSearch {
    pub amax: f32,
    /// Candidate amax values (bin centres).
    pub candidates: Vec<f32>,
    /// Their mean squared errors (float32 values).
    pub mse: Vec<f64>,
    pub best: usize,
}

/// Which fake quantization the MSE search applies to the centres.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MseCall {
    /// ModelOpt 0.47's misrouted call (num_bits as bias).
    Faithful,
    /// The intended call.
    Fixed,
}

fn err(kind: &str, msg: impl Into<String>) -> Error {
    Error::framework(kind, msg, Stage::CalculateQparams)
}

/// Run the MSE search.
pub fn mse_amax(
    hist: &[i64],
    edges: &[f64],
    num_bits: Bits,
    unsigned: bool,
    stride: usize,
    start_bin: usize,
    call: MseCall,
) -> Result<MseSearch> {
    let counts: Vec<f32> = hist.iter().map(|&c| c as f32).collect();
    let edges: Vec<f32> = edges.iter().map(|&e| e as f32).collect();
    let centers: Vec<f32> = edges.windows(2).map(|w| (w[1] + w[0]) / 2.0).collect();
    let mut candidates = Vec::new();
    let mut mses = Vec::new();
    let mut quantized = vec![0f32; centers.len()];
    let mut terms = vec![0f32; centers.len()];
    let mut i = start_bin;
    while i < centers.len() {
        let amax = centers[i];
        match (num_bits, call) {
            (Bits::Int(b), MseCall::Faithful) => {
                // bias = num_bits, bit width = unsigned, unsigned = False, narrow_range = True.
                // Bit width 0 crosses the clamp bounds (max_bound −0.5 < min_bound 0.5) and bit
                // width 1 has scale 0: either way the result does not depend on the centre.
                let bias = b as f32;
                let (lo, hi) = bounds(unsigned as i64, false, true);
                let q = centers
                    .first()
                    .map(|&c| tensor_quant_value(c - bias, amax, lo, hi) + bias)
                    .unwrap_or(0.0);
                quantized.iter_mut().for_each(|v| *v = q);
            }
            (Bits::Int(b), MseCall::Fixed) => {
                let (lo, hi) = bounds(b, unsigned, true);
                for (q, &c) in quantized.iter_mut().zip(&centers) {
                    *q = tensor_quant_value(c, amax, lo, hi);
                }
            }
            (
                Bits::Float {
                    exponent: 4,
                    mantissa: 3,
                },
                MseCall::Faithful,
            ) => {
                return Err(err(
                    "TypeError",
                    "ScaledE4M3Function.forward() missing 1 required positional argument: 'M'",
                ))
            }
            (
                Bits::Float {
                    exponent: 4,
                    mantissa: 3,
                },
                MseCall::Fixed,
            ) => {
                for (q, &c) in quantized.iter_mut().zip(&centers) {
                    *q = e4m3_value(c, amax);
                }
            }
            (Bits::Float { .. }, _) => {
                return Err(err(
                    "TypeError",
                    "Invalid num_bits. num_bits must be a positive integer or tuple (4,3).",
                ))
            }
        }
        if counts.len() != centers.len() {
            return Err(err(
                "RuntimeError",
                format!(
                    "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 0",
                    centers.len(),
                    counts.len()
                ),
            ));
        }
        for ((t, (&q, &c)), &n) in terms
            .iter_mut()
            .zip(quantized.iter().zip(&centers))
            .zip(&counts)
        {
            let d = q - c;
            *t = d * d * n;
        }
        let mean = numpy::pairwise_sum_f32(&terms) / terms.len() as f32;
        mses.push(mean as f64);
        candidates.push(amax);
        i += stride.max(1);
    }
    let best = numpy::argmin(&mses)
        .ok_or_else(|| err("ValueError", "attempt to get argmin of an empty sequence"))?;
    derivation::record(|| {
        let rows = candidates
            .iter()
            .zip(&mses)
            .enumerate()
            .map(|(k, (&a, &m))| vec![(start_bin + k * stride.max(1)) as f64, f64::from(a), m])
            .collect();
        let formula = match call {
            MseCall::Faithful => {
                "for each bin centre c_i from start_bin (by stride) as amax: quantize every centre and \
                 weigh its squared error by the bin count; mean; amax = the first minimum. ModelOpt 0.47 \
                 passes num_bits as fake_tensor_quant's bias, so every candidate quantizes to the same \
                 value and the first centre wins"
            }
            MseCall::Fixed => {
                "for each bin centre c_i from start_bin (by stride) as amax: quantize every centre with \
                 num_bits and weigh its squared error by the bin count; mean; amax = the first minimum"
            }
        };
        Step::new(
            "MSE search over the histogram's bin centres",
            formula,
            "modelopt/torch/quantization/calib/histogram.py:285 (nvidia-modelopt 0.47.0, _compute_amax_mse)",
        )
        .value("start_bin", start_bin)
        .value("stride", stride)
        .value("amax", candidates[best])
        .candidates(Candidates::new(
            &["bin", "amax", "mse"],
            rows,
            best,
            "the first minimum (numpy argmin)",
        )
        .symmetric_ranges_in(1))
    });
    Ok(MseSearch {
        amax: candidates[best],
        candidates,
        mse: mses,
        best,
    })
}

/// `_compute_amax_percentile`: `(amax, edge index)`.
pub fn percentile_amax(hist: &[i64], edges: &[f64], percentile: f64) -> Result<(f32, usize)> {
    if !(0.0..=100.0).contains(&percentile) {
        return Err(err(
            "ValueError",
            "Invalid percentile. Must be in range 0 <= percentile <= 100.",
        ));
    }
    let total: i64 = hist.iter().sum();
    let shares: Vec<f64> = hist.iter().map(|&h| h as f64 / total as f64).collect();
    let cdf = numpy::cumsum_f64(&shares);
    let idx = numpy::searchsorted_left(&cdf, percentile / 100.0);
    let amax = *edges.get(idx).ok_or_else(|| {
        err(
            "IndexError",
            format!(
                "index {idx} is out of bounds for axis 0 with size {}",
                edges.len()
            ),
        )
    })?;
    derivation::record(|| {
        Step::new(
            "Percentile of the histogram",
            "cdf = cumsum(hist) / total; i = searchsorted(cdf, percentile / 100) (left); amax = edges[i]",
            "modelopt/torch/quantization/calib/histogram.py:328 (nvidia-modelopt 0.47.0, _compute_amax_percentile)",
        )
        .value("percentile", percentile)
        .value("bin index", idx)
        .value("amax", amax as f32)
    });
    Ok((amax as f32, idx))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (Vec<i64>, Vec<f64>) {
        // 16 bins on [0, 4]: a bump around 1.
        let hist = vec![5, 20, 40, 60, 40, 20, 5, 2, 1, 0, 0, 0, 0, 0, 0, 1];
        let edges = (0..17).map(|i| i as f64 * 0.25).collect();
        (hist, edges)
    }

    #[test]
    fn faithful_mse_returns_the_first_candidate() {
        let (hist, edges) = setup();
        let r = mse_amax(&hist, &edges, Bits::Int(8), false, 1, 2, MseCall::Faithful).unwrap();
        assert_eq!(r.best, 0);
        assert_eq!(r.amax, 0.625); // centres[2]
        assert!(r.mse.windows(2).all(|w| w[0] < w[1]));
        let u = mse_amax(&hist, &edges, Bits::Int(8), true, 1, 2, MseCall::Faithful).unwrap();
        assert!(u.mse.iter().all(|m| m.is_nan()));
        assert_eq!(u.amax, 0.625);
        let fp8 = Bits::Float {
            exponent: 4,
            mantissa: 3,
        };
        let e = mse_amax(&hist, &edges, fp8, false, 1, 2, MseCall::Faithful).unwrap_err();
        assert_eq!(
            e.to_string(),
            "TypeError: ScaledE4M3Function.forward() missing 1 required positional argument: 'M'"
        );
    }

    #[test]
    fn fixed_mse_trades_clipping_against_rounding() {
        let (hist, edges) = setup();
        let r = mse_amax(&hist, &edges, Bits::Int(2), false, 1, 2, MseCall::Fixed).unwrap();
        // With one level each side, amax sits inside the bump, not at the first or last centre.
        assert!(r.best > 0 && r.best < r.candidates.len() - 1, "{:?}", r.mse);
        let min = r.mse.iter().cloned().fold(f64::INFINITY, f64::min);
        assert_eq!(r.mse[r.best], min);
        let fp8 = Bits::Float {
            exponent: 4,
            mantissa: 3,
        };
        assert!(mse_amax(&hist, &edges, fp8, false, 1, 2, MseCall::Fixed).is_ok());
    }

    #[test]
    fn percentile_takes_the_left_edge_of_the_crossing() {
        let (hist, edges) = setup();
        // total 194; cdf crosses 0.5 in bin 3 (5+20+40+60 = 125) → edges[3] = 0.75.
        assert_eq!(percentile_amax(&hist, &edges, 50.0).unwrap(), (0.75, 3));
        assert!(percentile_amax(&hist, &edges, 100.0).unwrap().1 >= 15);
    }
}
