//! ggml's original 32-value block types: Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 (ggml-quants.c
//! @ d99724f2).
//!
//! | type | block bytes | stored | value |
//! |---|---|---|---|
//! | Q4_0 | 18 | `d` fp16, 32 × 4-bit `q` | `(q − 8)·d` |
//! | Q4_1 | 20 | `d`, `m` fp16, 32 × 4-bit `q` | `q·d + m` |
//! | Q5_0 | 22 | `d` fp16, 32 × 5-bit `q` (high bits in `qh`) | `(q − 16)·d` |
//! | Q5_1 | 24 | `d`, `m` fp16, `qh`, 32 × 5-bit `q` | `q·d + m` |
//! | Q8_0 | 34 | `d` fp16, 32 × int8 `q` | `q·d` |
//!
//! Nibble layout: byte `j` of `qs` holds element `j` (low nibble) and element `j + 16` (high
//! nibble); bit `j` of the little-endian `qh` word is the fifth bit of element `j`.
//!
//! **Reference paths** (`quantize_row_<type>_ref`, what `quantize_<type>` runs without an
//! imatrix) — each uses its own rounding rule:
//! * Q4_0/Q5_0 (l. 113, 187): `max` is the first element of largest `|x|` with its sign,
//!   `d = max/−8` (`/−16`), `id = 1/d` from the **unrounded** float32 `d`, codes
//!   `min(15, trunc(x·id + 8.5))` (`+16.5`, `min 31`) — round half up — while the block stores
//!   `fp16(d)`: the codes are chosen for a scale that is not the stored one.
//! * Q4_1/Q5_1 (l. 150, 231): `d = (max − min)/15` (`/31`), codes `trunc((x − min)·id + 0.5)`,
//!   clamped to 15 for Q4_1 only; `m = fp16(min)`.
//! * Q8_0 (l. 276): `d = amax/127`, codes `roundf(x·id)` — half away from zero.
//!
//! **imatrix paths** (`quantize_row_<type>_impl`, one row at a time; `w = qw·√(σ² + x²)` with
//! `σ² = Σx²/n_per_row` over the **whole row**, so a block depends on the rest of its row):
//! * Q4_0/Q5_0 (l. 2070, 2188): [`make_qx_quants`]`(32, 8|16, x, w)`, its codes packed as they are
//!   and its least-squares scale stored as `d`.
//! * Q4_1/Q5_1 (l. 2143, 2242): [`make_qkx_quants`] (`qkx3`, `nmax` 15|31, `rmin −0.9`,
//!   `rdelta 0.05`, 36 steps, squared error), `m = fp16(−min)`.
//! * Q8_0 ignores the imatrix (l. 2295).

use super::fp16::{read_fp16, write_fp16};
use super::search::{
    abs_max, make_qkx_quants, make_qx_quants, mask, nearest_int, pick, signed_max,
    signed_max_lanes, Asymmetric, Grid, Weights,
};
use super::sub_blocks::{imatrix_weights, sum_squares};

/// Elements per block.
pub const QK: usize = 32;

/// The imatrix paths' asymmetric search grid (Q4_1, Q5_1 and the k-quants' imatrix paths).
pub const GRID_IMATRIX: Grid = Grid {
    rmin: -0.9,
    rdelta: 0.05,
    nstep: 36,
    use_mad: false,
};

/// One of the five legacy types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legacy {
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
}

/// C's `(int8_t)f` / `(uint8_t)f` on x86-64: truncate toward zero to an int, keep the low byte.
#[inline]
fn trunc_byte(v: f32) -> i32 {
    v as i32 & 0xFF
}

/// `(int8_t)f`.
#[inline]
fn trunc_i8(v: f32) -> i32 {
    v as i32 as i8 as i32
}

/// Q4_0/Q5_0's codes `min(top, (int8_t)(x·id + offset))`. With a finite `id` and finite `x`,
/// `|x·id|` is about 8 or 16 at most (`|x| ≤ |max|` and `id = divisor/max` up to rounding; a few
/// times that when `d` is subnormal), so the sum is truncated in float and read back as a whole
/// number ([`nearest_int`] of a whole value, exact below 2²²): the same codes as [`trunc_i8`],
/// in a loop that vectorises (a float-to-int `as` saturates, which keeps a loop scalar).
#[inline(always)]
fn symmetric_codes(x: &[f32], id: f32, offset: f32, top: i32, codes: &mut [u8]) {
    if id.is_finite() {
        for (c, &v) in codes.iter_mut().zip(x) {
            *c = symmetric_code(v, id, offset, top);
        }
    } else {
        for (c, &v) in codes.iter_mut().zip(x) {
            *c = trunc_i8(v * id + offset).min(top) as u8;
        }
    }
}

/// One code of [`symmetric_codes`] for a finite `id`.
#[inline(always)]
fn symmetric_code(v: f32, id: f32, offset: f32, top: i32) -> u8 {
    (nearest_int((v * id + offset).trunc()) as i8 as i32).min(top) as u8
}

/// Blocks encoded side by side by [`Legacy::quantize_symmetric_side_by_side`].
const SIDE: usize = 8;

/// Q8_0's codes `(int8_t)roundf(x·id)`, vectorised as [`symmetric_codes`] is (`|x·id|` is
/// about 127 at most when `id` is finite).
#[inline(always)]
fn q8_0_codes(x: &[f32], id: f32, codes: &mut [u8]) {
    if id.is_finite() {
        for (o, &v) in codes.iter_mut().zip(x) {
            *o = nearest_int((v * id).round()) as u8;
        }
    } else {
        for (o, &v) in codes.iter_mut().zip(x) {
            *o = trunc_byte((v * id).round()) as u8;
        }
    }
}

impl Legacy {
    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            Legacy::Q4_0 => 18,
            Legacy::Q4_1 => 20,
            Legacy::Q5_0 => 22,
            Legacy::Q5_1 => 24,
            Legacy::Q8_0 => 34,
        }
    }

    /// Offset of the quants (`qs`) in a block.
    fn qs_offset(self) -> usize {
        match self {
            Legacy::Q4_0 | Legacy::Q8_0 => 2,
            Legacy::Q4_1 => 4,
            Legacy::Q5_0 => 6,
            Legacy::Q5_1 => 8,
        }
    }

    /// Offset of the fifth bits (`qh`) of Q5_0/Q5_1.
    fn qh_offset(self) -> usize {
        match self {
            Legacy::Q5_1 => 4,
            _ => 2,
        }
    }

    /// Q4_0/Q5_0's `(divisor, offset, top)`: `d = max/divisor`, codes
    /// `min(top, (int8_t)(x·id + offset))`.
    #[inline(always)]
    fn symmetric_constants(self) -> (f32, f32, i32) {
        if self == Legacy::Q4_0 {
            (-8.0, 8.5, 15)
        } else {
            (-16.0, 16.5, 31)
        }
    }

    /// Q4_0/Q5_0's [`Legacy::quantize_block_ref`] on [`SIDE`] blocks side by side (lane `b` of
    /// every array is block `b`): the same bits, with the blocks' ranges, scales and codes
    /// computed in vector lanes rather than one block at a time. A group with a scale whose
    /// reciprocal overflows (a subnormal `d`) is encoded block by block.
    #[inline(always)]
    fn quantize_symmetric_side_by_side(self, x: &[f32], out: &mut [u8]) {
        let (divisor, offset, top) = self.symmetric_constants();
        let bytes = self.block_bytes();
        let mut xt = [[0.0f32; SIDE]; QK];
        for (b, block) in x[..SIDE * QK].chunks_exact(QK).enumerate() {
            for (i, &v) in block.iter().enumerate() {
                xt[i][b] = v;
            }
        }
        let (_, max) = signed_max_lanes(&xt);
        let (mut d, mut id) = ([0.0f32; SIDE], [0.0f32; SIDE]);
        for b in 0..SIDE {
            d[b] = max[b] / divisor;
            id[b] = pick(mask(d[b] != 0.0), 1.0 / d[b], 0.0);
        }
        if !id.iter().all(|v| v.is_finite()) {
            for (xb, ob) in x.chunks_exact(QK).zip(out.chunks_exact_mut(bytes)) {
                self.quantize_block_ref(xb, ob);
            }
            return;
        }
        let mut codes = [[0u8; SIDE]; QK];
        for (row, xs) in codes.iter_mut().zip(&xt) {
            for b in 0..SIDE {
                row[b] = symmetric_code(xs[b], id[b], offset, top);
            }
        }
        for (b, ob) in out[..SIDE * bytes].chunks_exact_mut(bytes).enumerate() {
            write_fp16(ob, 0, d[b]);
            self.pack(&std::array::from_fn::<u8, QK, _>(|i| codes[i][b]), ob);
        }
    }

    /// `quantize_row_<type>_ref` on one block of 32 finite values.
    #[inline(always)]
    pub fn quantize_block_ref(self, x: &[f32], out: &mut [u8]) {
        match self {
            Legacy::Q4_0 | Legacy::Q5_0 => {
                let (divisor, offset, top) = self.symmetric_constants();
                let (max, _) = signed_max(x);
                let d = max / divisor;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                write_fp16(out, 0, d);
                let mut codes = [0u8; QK];
                symmetric_codes(x, id, offset, top, &mut codes);
                self.pack(&codes, out);
            }
            Legacy::Q4_1 | Legacy::Q5_1 => {
                let (mut min, mut max) = (f32::MAX, -f32::MAX);
                for &v in x {
                    if v < min {
                        min = v;
                    }
                    if v > max {
                        max = v;
                    }
                }
                let levels = if self == Legacy::Q4_1 { 15.0f32 } else { 31.0 };
                let d = (max - min) / levels;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                write_fp16(out, 0, d);
                write_fp16(out, 2, min);
                let mut codes = [0u8; QK];
                for (c, &v) in codes.iter_mut().zip(x) {
                    let t = (v - min) * id + 0.5;
                    *c = if self == Legacy::Q4_1 {
                        trunc_i8(t).min(15) as u8
                    } else {
                        trunc_byte(t) as u8
                    };
                }
                self.pack(&codes, out);
            }
            Legacy::Q8_0 => {
                let d = abs_max(x) / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                write_fp16(out, 0, d);
                q8_0_codes(x, id, &mut out[2..2 + QK]);
            }
        }
    }

    /// `quantize_row_<type>_impl` with an imatrix on one row (`row.len()` a multiple of 32,
    /// `imatrix.len() == row.len()`); `out` holds the row's blocks.
    pub fn quantize_row_imatrix(self, row: &[f32], imatrix: &[f32], out: &mut [u8]) {
        if self == Legacy::Q8_0 {
            for (x, b) in row.chunks(QK).zip(out.chunks_mut(self.block_bytes())) {
                self.quantize_block_ref(x, b);
            }
            return;
        }
        let sigma2 = self.row_sigma2(row);
        let blocks = row
            .chunks(QK)
            .zip(imatrix.chunks(QK))
            .zip(out.chunks_mut(self.block_bytes()));
        for ((xb, qw), b) in blocks {
            self.quantize_block_imatrix(xb, qw, sigma2, b);
        }
    }

    /// `σ² = Σx²/n_per_row` of the imatrix path, over the whole row.
    pub fn row_sigma2(self, row: &[f32]) -> f32 {
        sum_squares(row) / row.len() as f32
    }

    /// One block of the imatrix path (Q4_0…Q5_1), given its row's `σ²` ([`Legacy::row_sigma2`]);
    /// Q8_0 ignores the imatrix.
    pub fn quantize_block_imatrix(self, xb: &[f32], qw: &[f32], sigma2: f32, b: &mut [u8]) {
        let weight = imatrix_weights(xb, qw, sigma2);
        match self {
            Legacy::Q8_0 => self.quantize_block_ref(xb, b),
            Legacy::Q4_0 | Legacy::Q5_0 => {
                let nmax = if self == Legacy::Q4_0 { 8 } else { 16 };
                let mut codes = [0i8; QK];
                let d = make_qx_quants(nmax, xb, &mut codes, Weights::Given(&weight));
                write_fp16(b, 0, d);
                let codes: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
                self.pack(&codes, b);
            }
            _ => {
                let nmax = if self == Legacy::Q4_1 { 15 } else { 31 };
                let mut codes = [0u8; QK];
                let (d, min) = make_qkx_quants(
                    Asymmetric::Qkx3,
                    nmax,
                    xb,
                    &weight,
                    &mut codes,
                    GRID_IMATRIX,
                );
                write_fp16(b, 0, d);
                write_fp16(b, 2, -min);
                self.pack(&codes, b);
            }
        }
    }

    /// Store 32 codes: nibbles (element `j` low, `j + 16` high) and, for 5-bit types, the
    /// fifth bits in `qh`.
    #[inline(always)]
    fn pack(self, codes: &[u8], out: &mut [u8]) {
        let qs = self.qs_offset();
        for j in 0..QK / 2 {
            let (c0, c1) = (codes[j], codes[j + QK / 2]);
            out[qs + j] = (c0 & 0x0F) | ((c1 & 0x0F) << 4);
        }
        if matches!(self, Legacy::Q5_0 | Legacy::Q5_1) {
            // Bit `j` of `qh` is the fifth bit of code `j` (elements `j` and `j + 16` of ggml's
            // loop), gathered in one loop that vectorises.
            let qh = codes[..QK]
                .iter()
                .zip(0u32..)
                .fold(0u32, |qh, (&c, j)| qh | (u32::from((c >> 4) & 1) << j));
            let at = self.qh_offset();
            out[at..at + 4].copy_from_slice(&qh.to_le_bytes());
        }
    }

    /// The 32 integer codes of a block, as the dequantizer reads them (Q5: fifth bit added;
    /// Q8_0: signed).
    #[inline(always)]
    fn codes(self, b: &[u8]) -> [i32; QK] {
        let mut q = [0i32; QK];
        let qs = self.qs_offset();
        if self == Legacy::Q8_0 {
            for (o, &c) in q.iter_mut().zip(&b[qs..qs + QK]) {
                *o = c as i8 as i32;
            }
            return q;
        }
        let qh = if matches!(self, Legacy::Q5_0 | Legacy::Q5_1) {
            let at = self.qh_offset();
            u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
        } else {
            0
        };
        for j in 0..QK / 2 {
            let byte = b[qs + j] as u32;
            let xh0 = ((qh >> j) << 4) & 0x10;
            let xh1 = (qh >> (j + 12)) & 0x10;
            q[j] = ((byte & 0x0F) | xh0) as i32;
            q[j + QK / 2] = ((byte >> 4) | xh1) as i32;
        }
        q
    }

    /// `(d, m)` of a block (`m = 0` for the symmetric types).
    #[inline(always)]
    pub fn scales(self, b: &[u8]) -> (f32, f32) {
        let d = read_fp16(b, 0);
        match self {
            Legacy::Q4_1 | Legacy::Q5_1 => (d, read_fp16(b, 2)),
            _ => (d, 0.0),
        }
    }

    /// The code offset of the symmetric types (`q − 8`, `q − 16`).
    #[inline(always)]
    fn zero(self) -> i32 {
        match self {
            Legacy::Q4_0 => 8,
            Legacy::Q5_0 => 16,
            _ => 0,
        }
    }

    /// `dequantize_row_<type>` on one block: `(q − zero)·d` or `q·d + m`.
    #[inline(always)]
    pub fn dequantize_block(self, b: &[u8], y: &mut [f32]) {
        let (d, m) = self.scales(b);
        let q = self.codes(b);
        for (o, &c) in y.iter_mut().zip(&q) {
            *o = match self {
                Legacy::Q4_1 | Legacy::Q5_1 => c as f32 * d + m,
                _ => (c - self.zero()) as f32 * d,
            };
        }
    }

    /// The smallest and largest value the block can represent (the dequantized extreme codes).
    pub fn block_range(self, b: &[u8]) -> (f32, f32) {
        let (d, m) = self.scales(b);
        let (lo_code, hi_code) = match self {
            Legacy::Q4_0 | Legacy::Q4_1 => (0, 15),
            Legacy::Q5_0 | Legacy::Q5_1 => (0, 31),
            Legacy::Q8_0 => (-128, 127),
        };
        let value = |c: i32| match self {
            Legacy::Q4_1 | Legacy::Q5_1 => c as f32 * d + m,
            _ => (c - self.zero()) as f32 * d,
        };
        let (a, z) = (value(lo_code), value(hi_code));
        (a.min(z), a.max(z))
    }
}

/// Every block of `data` quantized by [`Legacy::quantize_block_ref`] into `out`. The blocks
/// are small, so the loop is specialised per type (and compiled for the widest vectors the CPU has).
pub fn quantize_blocks(ty: Legacy, data: &[f32], out: &mut [u8]) {
    #[inline(always)]
    fn run(ty: Legacy, data: &[f32], out: &mut [u8]) {
        let blocks = data.chunks(QK).zip(out.chunks_mut(ty.block_bytes()));
        match ty {
            Legacy::Q4_0 => side_by_side(Legacy::Q4_0, data, out),
            Legacy::Q4_1 => {
                for (x, b) in blocks {
                    Legacy::Q4_1.quantize_block_ref(x, b)
                }
            }
            Legacy::Q5_0 => side_by_side(Legacy::Q5_0, data, out),
            Legacy::Q5_1 => {
                for (x, b) in blocks {
                    Legacy::Q5_1.quantize_block_ref(x, b)
                }
            }
            Legacy::Q8_0 => {
                for (x, b) in blocks {
                    Legacy::Q8_0.quantize_block_ref(x, b)
                }
            }
        }
    }
    /// Q4_0/Q5_0: groups of [`SIDE`] blocks side by side, then the blocks left over one by one.
    #[inline(always)]
    fn side_by_side(ty: Legacy, data: &[f32], out: &mut [u8]) {
        let bytes = ty.block_bytes();
        let whole = data.len() / (SIDE * QK) * SIDE;
        let (grouped, rest) = data.split_at(whole * QK);
        let (grouped_out, rest_out) = out.split_at_mut(whole * bytes);
        let groups = grouped.chunks_exact(SIDE * QK);
        for (x, b) in groups.zip(grouped_out.chunks_exact_mut(SIDE * bytes)) {
            ty.quantize_symmetric_side_by_side(x, b);
        }
        for (x, b) in rest.chunks(QK).zip(rest_out.chunks_mut(bytes)) {
            ty.quantize_block_ref(x, b);
        }
    }
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || run(ty, data, out),
    )
}

/// Every block of `blocks` decoded by [`Legacy::dequantize_block`] into `y`, specialised per
/// type like [`quantize_blocks`].
pub fn dequantize_blocks(ty: Legacy, blocks: &[u8], y: &mut [f32]) {
    #[inline(always)]
    fn run(ty: Legacy, blocks: &[u8], y: &mut [f32]) {
        let pairs = blocks.chunks(ty.block_bytes()).zip(y.chunks_mut(QK));
        match ty {
            Legacy::Q4_0 => {
                for (b, o) in pairs {
                    Legacy::Q4_0.dequantize_block(b, o)
                }
            }
            Legacy::Q4_1 => {
                for (b, o) in pairs {
                    Legacy::Q4_1.dequantize_block(b, o)
                }
            }
            Legacy::Q5_0 => {
                for (b, o) in pairs {
                    Legacy::Q5_0.dequantize_block(b, o)
                }
            }
            Legacy::Q5_1 => {
                for (b, o) in pairs {
                    Legacy::Q5_1.dequantize_block(b, o)
                }
            }
            Legacy::Q8_0 => {
                for (b, o) in pairs {
                    Legacy::Q8_0.dequantize_block(b, o)
                }
            }
        }
    }
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || run(ty, blocks, y),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reproducible values in `[−0.5, 0.5)` (xorshift64 from `seed`).
    fn centred_uniform(mut state: u64) -> impl FnMut() -> f32 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        }
    }

    #[test]
    fn whole_number_codes_are_the_truncating_casts() {
        // Ordinary, tiny and subnormal maxima (a subnormal `d` is rounded coarsely, so
        // `|x·id|` exceeds the divisor) and values on the rounding boundaries.
        let mut uniform = centred_uniform(0x2545_F491_4F6C_DD1D);
        let magnitudes = [
            1.0f32, 0.02, 3e-30, 2e-37, 1e-37, 6e-38, 5e-38, 3e-38, 1e-38, 5e-39, 3e-40, 1e-42,
            1e-44,
        ];
        for (case, &m) in magnitudes.iter().cycle().take(900).enumerate() {
            let x: Vec<f32> = (0..QK)
                .map(|i| match (case / magnitudes.len()) % 3 {
                    0 => uniform() * m,
                    1 => (((uniform() * 32.0).round() + 0.5) / 16.0) * m,
                    _ => {
                        if i % 2 == 0 {
                            m
                        } else {
                            -m * uniform()
                        }
                    }
                })
                .collect();
            for (divisor, offset, top) in [(-8.0f32, 8.5f32, 15), (-16.0, 16.5, 31)] {
                let (max, _) = signed_max(&x);
                let d = max / divisor;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                let mut codes = [0u8; QK];
                symmetric_codes(&x, id, offset, top, &mut codes);
                let cast: Vec<u8> = x
                    .iter()
                    .map(|&v| trunc_i8(v * id + offset).min(top) as u8)
                    .collect();
                assert_eq!(
                    codes.to_vec(),
                    cast,
                    "case {case}, divisor {divisor}, id {id:e}"
                );
            }
            let d = abs_max(&x) / 127.0;
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            let mut codes = [0u8; QK];
            q8_0_codes(&x, id, &mut codes);
            let cast: Vec<u8> = x
                .iter()
                .map(|&v| trunc_byte((v * id).round()) as u8)
                .collect();
            assert_eq!(codes.to_vec(), cast, "Q8_0 case {case}, id {id:e}");
        }
    }

    #[test]
    fn blocks_side_by_side_store_each_blocks_own_bits() {
        // Groups of eight blocks with ordinary, zero (both signs), tied and subnormal maxima (a
        // subnormal `d` sends its group down the block-by-block path), and lengths that leave
        // blocks over after the groups.
        let mut uniform = centred_uniform(0x6A09_E667_F3BC_C908);
        let scales = [0.03f32, 1.0, 0.0, -0.0, 1e-37, 2.5];
        for blocks in [1usize, 7, 8, 9, 16, 23, 64, 130] {
            let x: Vec<f32> = (0..blocks * QK)
                .map(|i| {
                    let (block, group) = (i / QK, i / (8 * QK));
                    let m = if group % 3 == 2 && block % 8 == 3 {
                        1e-40
                    } else {
                        scales[(block + group) % scales.len()]
                    };
                    match i % 11 {
                        0 => m,
                        5 => -m,
                        _ => uniform() * m,
                    }
                })
                .collect();
            for ty in [Legacy::Q4_0, Legacy::Q5_0] {
                let bytes = ty.block_bytes();
                let mut grouped = vec![0u8; blocks * bytes];
                quantize_blocks(ty, &x, &mut grouped);
                let mut one_by_one = vec![0u8; blocks * bytes];
                for (xb, ob) in x.chunks(QK).zip(one_by_one.chunks_mut(bytes)) {
                    ty.quantize_block_ref(xb, ob);
                }
                assert_eq!(grouped, one_by_one, "{ty:?}, {blocks} blocks");
            }
        }
    }

    #[test]
    fn q4_0_scale_comes_from_the_signed_extreme() {
        // The largest |x| is +2.0, so d = 2/−8 = −0.25 and x = 2.0 gets code 0 (−8·d), while
        // x = −2.0 would need +8·d: it maps to 16 and is clamped to 15.
        let mut x = [0.0f32; 32];
        x[0] = 2.0;
        x[1] = -2.0;
        x[2] = 0.25;
        let mut b = [0u8; 18];
        Legacy::Q4_0.quantize_block_ref(&x, &mut b);
        let mut y = [0.0f32; 32];
        Legacy::Q4_0.dequantize_block(&b, &mut y);
        assert_eq!(Legacy::Q4_0.scales(&b).0, -0.25);
        assert_eq!(y[0], 2.0);
        assert_eq!(y[1], -1.75);
        assert_eq!(y[2], 0.25);
        assert_eq!(Legacy::Q4_0.block_range(&b), (-1.75, 2.0));
    }

    #[test]
    fn q8_0_rounds_half_away_from_zero() {
        // amax 127 → d = 1, id = 1: 2.5 → 3 and −2.5 → −3 (roundf), not to even.
        let mut x = [0.0f32; 32];
        x[0] = 127.0;
        x[1] = 2.5;
        x[2] = -2.5;
        let mut b = [0u8; 34];
        Legacy::Q8_0.quantize_block_ref(&x, &mut b);
        let mut y = [0.0f32; 32];
        Legacy::Q8_0.dequantize_block(&b, &mut y);
        assert_eq!(&y[..3], &[127.0, 3.0, -3.0]);
    }

    #[test]
    fn q5_packs_the_fifth_bit() {
        let x: Vec<f32> = (0..32).map(|i| i as f32).collect();
        let mut b = [0u8; 24];
        Legacy::Q5_1.quantize_block_ref(&x, &mut b);
        let mut y = [0.0f32; 32];
        Legacy::Q5_1.dequantize_block(&b, &mut y);
        // d = 31/31 = 1, m = 0: every integer 0..31 is exact.
        assert_eq!(y.to_vec(), x);
    }
}
