//! Quantize–dequantize (fake quantization) helpers and the error metrics a user judges an
//! observer by. PyTorch's affine fake quantization is
//! [`crate::observers::torch::fake_quant`]. Metrics are accumulated in float64 over finite
//! elements only.

use crate::error::{Error, Result};
use crate::formats::blocks::BlockLayout;
use crate::qparams::QParams;
use crate::tensor::Tensor;
use serde::{Deserialize, Serialize};

/// `magnitude` (sign bit clear: `+0.0`, positive, `+inf` or a positive NaN) with the sign of
/// `sign`: the bits of `magnitude.copysign(sign)`, as an integer XOR. WebAssembly SIMD has no
/// copysign, and LLVM takes a vectorised `copysign` — or the and/or pattern it recognises as
/// one — apart into a scalar operation per lane, which made every hot loop that rounds several
/// times slower in wasm than natively. An XOR on the sign bit stays a vector operation.
#[inline(always)]
pub fn copysign(magnitude: f32, sign: f32) -> f32 {
    const SIGN: u32 = 0x8000_0000;
    f32::from_bits(magnitude.to_bits() ^ (sign.to_bits() & SIGN))
}

/// Round half to even (banker's rounding), as `torch.round`, `np.round` and `std::nearbyint`,
/// without a libm call so that hot loops vectorise with plain SSE2 and wasm SIMD128: below 2²³
/// in magnitude, adding and subtracting 2²³ rounds to an integer in the default rounding mode;
/// larger magnitudes (and NaN/±inf) are already integral. Bit-identical to
/// `f32::round_ties_even`, which WebAssembly has as an instruction (`f32.nearest`, and
/// `f32x4.nearest` in SIMD128): there it is used as such.
#[inline]
pub fn round_half_even(x: f32) -> f32 {
    #[cfg(target_arch = "wasm32")]
    return x.round_ties_even();
    #[cfg(not(target_arch = "wasm32"))]
    return round_half_even_by_addition(x);
}

/// [`round_half_even`] with two float32 additions (SSE2 has no rounding instruction).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
#[inline(always)]
fn round_half_even_by_addition(x: f32) -> f32 {
    const TWO_23: f32 = 8_388_608.0;
    let magnitude = x.abs();
    // Computed unconditionally so that the choice is a branch-free select.
    let rounded = copysign((magnitude + TWO_23) - TWO_23, x);
    if magnitude < TWO_23 {
        rounded
    } else {
        x
    }
}

/// `⌊t⌋` as an integer for `0 ≤ t < 2²²`, without a float → int cast (which does not vectorise
/// on SSE2): the round to nearest by adding 2²³, a step back when it rounded up, then the
/// integer read from the float's low mantissa bits (exact: below 2²² every step is exact).
#[inline(always)]
pub fn floor_small(t: f32) -> u32 {
    const TWO_23: f32 = 8_388_608.0;
    let nearest = (t + TWO_23) - TWO_23;
    let floor = if nearest > t { nearest - 1.0 } else { nearest };
    (floor + TWO_23).to_bits().wrapping_sub(TWO_23.to_bits())
}

/// The channel of each flat C-order index along `axis` of `shape`: `(i / inner) % channels`.
#[derive(Debug, Clone, Copy)]
pub struct ChannelIndexer {
    inner: usize,
    channels: usize,
}

impl ChannelIndexer {
    /// Indexer for `axis` of `shape` (axis must be in range).
    pub fn new(shape: &[usize], axis: usize) -> Self {
        let inner = shape[axis + 1..].iter().product::<usize>().max(1);
        ChannelIndexer {
            inner,
            channels: shape[axis].max(1),
        }
    }

    /// Channel of flat index `i`.
    #[inline]
    pub fn channel(&self, i: usize) -> usize {
        (i / self.inner) % self.channels
    }
}

/// `10·log10(signal / noise)` in decibels, with the same bits on every target: the logarithm is
/// the `libm` crate's (musl's `log10`), which is also what `f64::log10` compiles to on wasm32,
/// whereas natively `f64::log10` calls the C library's (glibc's may differ in the last place). So
/// the page, the npm package and the CLI print the same SQNR for the same tensor.
pub fn sqnr_db(signal: f64, noise: f64) -> f64 {
    10.0 * libm::log10(signal / noise)
}

/// Refuse qparams without a scale or with a zero point count other than the scale count.
pub fn check_scales(q: &QParams) -> Result<()> {
    if q.scale.is_empty() || q.zero_point.len() != q.scale.len() {
        return Err(Error::input(
            "qparams have no scale or mismatched zero points",
        ));
    }
    Ok(())
}

/// The indexer of channel `axis` of `x` for per-channel qparams `q`, refusing an axis out of
/// range or of a length other than `q`'s scale count.
pub fn channel_indexer(x: &Tensor, q: &QParams, axis: usize) -> Result<ChannelIndexer> {
    if axis >= x.ndim() || x.shape[axis] != q.scale.len() {
        return Err(Error::input(format!(
            "per-channel qparams have {} channels but the tensor's axis {axis} of shape {:?} does not match",
            q.scale.len(),
            x.shape
        )));
    }
    Ok(ChannelIndexer::new(&x.shape, axis))
}

/// Error of a quantize–dequantize, over the finite elements.
///
/// `sqnr_db` is `null` (`None`) whenever it is not a finite number of decibels: no error at all
/// (`mse == 0`, a lossless round trip, SQNR +∞ dB) or an all-zero input. That is its one
/// spelling everywhere (JSON, JavaScript, the CLI); displays tell the two apart by `mse`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct QdqMetrics {
    /// Mean squared error.
    pub mse: f64,
    /// Largest absolute error.
    pub max_abs_err: f64,
    /// `10·log10(Σx² / Σerr²)`; `None` when not finite (no error, or an all-zero signal).
    pub sqnr_db: Option<f64>,
    /// Share of elements outside the representable range.
    pub clipped_fraction: f64,
    /// Number of elements the metrics cover.
    pub count: usize,
}

/// The block layout of per-group/per-block qparams, from `extra.block_axis`/`extra.block_size`
/// (see [`QParams::extra`]), when it fits `shape` and the number of scales.
pub fn block_layout(q: &QParams, shape: &[usize]) -> Option<BlockLayout> {
    let axis = q.extra.get("block_axis")?.as_i64()?;
    let size = q.extra.get("block_size")?.as_u64()?;
    let layout = BlockLayout::new(shape, axis, usize::try_from(size).ok()?).ok()?;
    (layout.num_blocks() == q.scale.len()).then_some(layout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qparams::{Grid, ZeroPoint};

    #[test]
    fn rounding_matches_std_round_ties_even_bit_for_bit() {
        let mut values = vec![
            0.0f32,
            -0.0,
            0.5,
            -0.5,
            2.5,
            8388607.5,
            8388608.0,
            16777217.0,
            1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            1e-40,
        ];
        // A sweep over every exponent with varied mantissas, both signs.
        let mut bits = 1u32;
        while bits < 0x7f80_0000 {
            values.push(f32::from_bits(bits));
            values.push(-f32::from_bits(bits));
            bits = bits.wrapping_add(0x0001_3579);
        }
        for v in values {
            assert_eq!(
                round_half_even(v).to_bits(),
                v.round_ties_even().to_bits(),
                "{v:e}"
            );
        }
        assert!(round_half_even(f32::NAN).is_nan());
    }

    #[test]
    fn copysign_of_a_magnitude_has_the_bits_of_std_copysign() {
        let values = [
            0.0f32,
            -0.0,
            1.5,
            -2.25,
            f32::MIN_POSITIVE,
            -1e-40,
            f32::MAX,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        for a in values.into_iter().filter(|a| a.is_sign_positive()) {
            for b in values {
                assert_eq!(
                    copysign(a, b).to_bits(),
                    a.copysign(b).to_bits(),
                    "{a:e} {b:e}"
                );
            }
        }
    }

    #[test]
    fn rounding_is_half_to_even() {
        assert_eq!(round_half_even(0.5), 0.0);
        assert_eq!(round_half_even(1.5), 2.0);
        assert_eq!(round_half_even(2.5), 2.0);
        assert_eq!(round_half_even(-2.5), -2.0);
    }

    #[test]
    fn affine_fake_quant_clamps_and_rounds() {
        let q = QParams::int(
            vec![0.5],
            ZeroPoint::Int(vec![2]),
            0,
            7,
            vec![-1.0],
            vec![2.5],
        );
        let x = Tensor::from_vec(vec![-5.0, -1.0, 0.26, 0.25, 0.75, 10.0]);
        let kernel = crate::observers::torch::fake_quant::kernel(&x.shape, &q).unwrap();
        let y = crate::qdq::fake_quantize(&x, kernel.as_ref());
        // grid: (0..=7 − 2)·0.5 = −1.0 ..= 2.5
        assert_eq!(y.data, vec![-1.0, -1.0, 0.5, 0.0, 1.0, 2.5]);
        let m = crate::qdq::measure_pair(&x, &y, &q).finish();
        assert_eq!(m.count, 6);
        assert!((m.clipped_fraction - 2.0 / 6.0).abs() < 1e-12);
        assert!((m.max_abs_err - 7.5).abs() < 1e-12);
    }

    #[test]
    fn per_block_metrics_use_each_blocks_scale() {
        // Two blocks of 2 along the last axis, grid ±6·s with s = 1 and 0.1.
        let mut q = QParams::int(
            vec![1.0, 0.1],
            ZeroPoint::Float(vec![0.0, 0.0]),
            0,
            0,
            Vec::new(),
            Vec::new(),
        );
        q.grid = Grid::Float {
            format: "fp4_e2m1".into(),
            max: 6.0,
        };
        q.extra.insert("block_axis".into(), 1.into());
        q.extra.insert("block_size".into(), 2.into());
        let x = Tensor::new(vec![1, 4], vec![5.0, 7.0, 0.5, 0.7]).unwrap();
        assert!(block_layout(&q, &x.shape).is_some());
        assert!(block_layout(&q, &[1, 6]).is_none());
        // 7 > 6·1 and 0.7 > 6·0.1 are outside their blocks' ranges.
        assert_eq!(
            crate::qdq::measure_pair(&x, &x, &q)
                .finish()
                .clipped_fraction,
            0.5
        );
    }
}
