//! Q4_K and Q5_K (ggml-quants.c l. 1457/1553 and l. 1644/1758): super-blocks of 256 values in
//! 8 sub-blocks of 32 with a 6-bit scale `sc` and a 6-bit min `mn` each; 144 bytes (4.5 bits
//! per value) and 176 bytes (5.5 bits per value).
//!
//! Layout: `d`, `dmin` (fp16), `scales[12]` (eight `(sc, mn)` pairs of 6 bits, read by
//! `get_scale_min_k4` (l. 880): pairs 0–3 in the low 6 bits of bytes 0–3 / 4–7, pairs 4–7 as
//! nibbles of bytes 8–11 with their top 2 bits in the high bits of bytes 0–3 / 4–7), then for
//! Q5_K `qh[32]` (fifth bit of element `64·c + r` in bit `2c` (r < 32) or `2c + 1` of
//! `qh[r % 32]`), then `qs[128]` (element `64·c + r`: low nibble of byte `32·c + r`, or high
//! nibble of byte `32·c + r − 32`). Value: `(d·sc)·q − dmin·mn`.
//!
//! * Reference path: weights `√(Σx²/32) + |x|` per sub-block;
//!   [`make_qkx_quants`](super::search::make_qkx_quants) (`qkx2`,
//!   `nmax` 15|31, `rmin` −1|−0.5, `rdelta 0.1`, 20|15 steps, squared error); scales and mins
//!   to 6 bits with `inv = 63/max`, `min(63, nearest_int(inv·v))`;
//!   `d = fp16(max_scale/63)`, `dmin = fp16(max_min/63)`.
//! * imatrix path: `σ² = 2·Σx²/256`, weights `qw·√(σ² + x²)`, `qkx3` (`rmin −0.9`,
//!   `rdelta 0.05`, 36 steps); the scales and mins by [`make_qp_quants`]`(8, 63, ·, sw)`.
//!   Q5_K clamps those codes to 63 again (l. 1798), Q4_K does not (l. 1588–1590); only a
//!   negative least-squares scale, whose code wraps, could tell them apart.
//! * Both requantize by division with the fp16 scales: `q = clamp(nearest_int((x + dmin·mn)/
//!   (d·sc)), 0, 15|31)`; a sub-block with `d·sc = 0` keeps the search's codes.

use super::fp16::{read_fp16, write_fp16};
use super::legacy::GRID_IMATRIX;
use super::search::{make_qp_quants, nearest_int, Asymmetric, Grid};
use super::sub_blocks::{fit_asymmetric, imatrix_weights, requantize_asymmetric, sum_squares};
use super::QK_K;

/// Q4_K or Q5_K.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum K45 {
    Q4K,
    Q5K,
}

const D: usize = 0;
const DMIN: usize = 2;
const SCALES: usize = 4;

impl K45 {
    /// Bytes per super-block.
    pub fn block_bytes(self) -> usize {
        match self {
            K45::Q4K => 144,
            K45::Q5K => 176,
        }
    }

    fn nmax(self) -> i32 {
        match self {
            K45::Q4K => 15,
            K45::Q5K => 31,
        }
    }

    fn qs(self) -> usize {
        match self {
            K45::Q4K => 16,
            K45::Q5K => 48,
        }
    }

    fn grid_ref(self) -> Grid {
        match self {
            K45::Q4K => Grid {
                rmin: -1.0,
                rdelta: 0.1,
                nstep: 20,
                use_mad: false,
            },
            K45::Q5K => Grid {
                rmin: -0.5,
                rdelta: 0.1,
                nstep: 15,
                use_mad: false,
            },
        }
    }

    /// `quantize_row_q4_K_ref` / `quantize_row_q5_K_ref` on one super-block.
    pub fn quantize_block_ref(self, x: &[f32], out: &mut [u8]) {
        let mut codes = [0u8; QK_K];
        let fits = fit_asymmetric(
            x,
            32,
            Asymmetric::Qkx2,
            self.nmax(),
            self.grid_ref(),
            &mut codes,
            |_, xs| {
                let av_x = (sum_squares(xs) / 32.0).sqrt();
                xs.iter().map(|v| av_x + v.abs()).collect()
            },
        );
        let (max_scale, max_min) = (fits.max_scale(), fits.max_min());
        let inv_scale = if max_scale > 0.0 {
            63.0 / max_scale
        } else {
            0.0
        };
        let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
        let six_bit = |values: &[f32], inv: f32| -> Vec<u8> {
            values
                .iter()
                .map(|&v| (nearest_int(inv * v) as u8).min(63))
                .collect()
        };
        pack_scales(
            &six_bit(&fits.scales, inv_scale),
            &six_bit(&fits.mins, inv_min),
            out,
        );
        write_fp16(out, D, max_scale / 63.0);
        write_fp16(out, DMIN, max_min / 63.0);
        self.requantize_and_pack(x, &mut codes, out);
    }

    /// `quantize_row_q4_K_impl` / `quantize_row_q5_K_impl` on one super-block with its 256
    /// imatrix entries.
    pub fn quantize_block_imatrix(self, x: &[f32], qw: &[f32], out: &mut [u8]) {
        let mut codes = [0u8; QK_K];
        let sigma2 = 2.0 * sum_squares(x) / QK_K as f32;
        let fits = fit_asymmetric(
            x,
            32,
            Asymmetric::Qkx3,
            self.nmax(),
            GRID_IMATRIX,
            &mut codes,
            |j, xs| imatrix_weights(xs, &qw[32 * j..32 * j + 32], sigma2),
        );
        let mut ls = [0u8; 8];
        let mut lm = [0u8; 8];
        let d_block = make_qp_quants(63, &fits.scales, &mut ls, &fits.weight_sums);
        let m_block = make_qp_quants(63, &fits.mins, &mut lm, &fits.weight_sums);
        if self == K45::Q5K {
            for l in ls.iter_mut().chain(lm.iter_mut()) {
                *l = (*l).min(63);
            }
        }
        pack_scales(&ls, &lm, out);
        write_fp16(out, D, d_block);
        write_fp16(out, DMIN, m_block);
        self.requantize_and_pack(x, &mut codes, out);
    }

    /// Requantize with the stored scales and pack the codes (and Q5_K's fifth bits).
    fn requantize_and_pack(self, x: &[f32], codes: &mut [u8; QK_K], out: &mut [u8]) {
        requantize_asymmetric(x, 32, self.nmax(), codes, |j| Self::sub_block(out, j));
        let qs = self.qs();
        if self == K45::Q5K {
            out[16..48].fill(0);
        }
        for c in 0..4 {
            for r in 0..32 {
                let (mut l1, mut l2) = (codes[64 * c + r], codes[64 * c + r + 32]);
                if self == K45::Q5K {
                    if l1 > 15 {
                        l1 -= 16;
                        out[16 + r] |= 1 << (2 * c);
                    }
                    if l2 > 15 {
                        l2 -= 16;
                        out[16 + r] |= 2 << (2 * c);
                    }
                }
                out[qs + 32 * c + r] = l1 | (l2 << 4);
            }
        }
    }

    /// The code of element `i` (`0…15` or `0…31`).
    fn code(self, b: &[u8], i: usize) -> u32 {
        let (c, r) = (i / 64, i % 64);
        let qs = self.qs();
        let (nibble, fifth) = if r < 32 {
            (b[qs + 32 * c + r] & 0xF, b[16 + r] & (1 << (2 * c)))
        } else {
            (
                b[qs + 32 * c + r - 32] >> 4,
                b[16 + r - 32] & (2 << (2 * c)),
            )
        };
        let high = self == K45::Q5K && fifth != 0;
        nibble as u32 + if high { 16 } else { 0 }
    }

    /// `(d·sc, dmin·mn)` of sub-block `j`.
    fn sub_block(b: &[u8], j: usize) -> (f32, f32) {
        let (sc, m) = scale_min(b, j);
        (read_fp16(b, D) * sc as f32, read_fp16(b, DMIN) * m as f32)
    }

    /// `dequantize_row_q4_K` / `dequantize_row_q5_K` on one super-block: `d1·q − m1`.
    pub fn dequantize_block(self, b: &[u8], y: &mut [f32]) {
        for (i, o) in y.iter_mut().enumerate().take(QK_K) {
            let (dl, ml) = Self::sub_block(b, i / 32);
            *o = dl * self.code(b, i) as f32 - ml;
        }
    }

    /// Per 32-value sub-block: the range `[−dmin·mn, nmax·d·sc − dmin·mn]`.
    pub fn ranges(self, b: &[u8], out: &mut Vec<(f32, f32)>) {
        for j in 0..8 {
            let (dl, ml) = Self::sub_block(b, j);
            let (a, z) = (dl * 0.0 - ml, dl * self.nmax() as f32 - ml);
            out.push((a.min(z), a.max(z)));
        }
    }
}

/// Store eight 6-bit scales and mins in the 12 scale bytes (the layout `get_scale_min_k4`
/// reads).
fn pack_scales(ls: &[u8], lm: &[u8], out: &mut [u8]) {
    let s = &mut out[SCALES..SCALES + 12];
    for j in 0..8 {
        let (l, m) = (ls[j], lm[j]);
        if j < 4 {
            s[j] = l;
            s[j + 4] = m;
        } else {
            s[j + 4] = (l & 0xF) | ((m & 0xF) << 4);
            s[j - 4] |= (l >> 4) << 6;
            s[j] |= (m >> 4) << 6;
        }
    }
}

/// `get_scale_min_k4(j, scales)`: the 6-bit scale and min of sub-block `j`.
pub fn scale_min(b: &[u8], j: usize) -> (u8, u8) {
    let q = &b[SCALES..SCALES + 12];
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// `(d, dmin, sub-scales, sub-mins)` decoded from the block.
pub fn decode_scales(b: &[u8]) -> (f32, f32, Vec<i32>, Vec<i32>) {
    let pairs: Vec<(u8, u8)> = (0..8).map(|j| scale_min(b, j)).collect();
    (
        read_fp16(b, D),
        read_fp16(b, DMIN),
        pairs.iter().map(|p| p.0 as i32).collect(),
        pairs.iter().map(|p| p.1 as i32).collect(),
    )
}
