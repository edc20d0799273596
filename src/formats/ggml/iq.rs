//! ggml's lattice i-quants on super-blocks of 256 values, decoded bit for bit
//! (`dequantize_row_iq2_xxs` … `dequantize_row_iq1_m`, ggml-quants.c @ d99724f2). Each group of
//! 8 (IQ2, IQ1) or 4 (IQ3) values is one entry of a fixed codebook ([`super::grids`]) and a
//! scale; IQ2/IQ3 add one sign bit per value, IQ1 a shift `±1/8` per group.
//!
//! | type | bytes | layout (offsets in the block) | value of element `j` of a group |
//! |---|---|---|---|
//! | IQ2_XXS | 66 (2.0625 bits) | `d` fp16 @0; per block of 32 two u32 @2+8·ib: 4 grid bytes, then 4×7 sign bits and a 4-bit scale `s` (bits 28–31) | `db·g[j]·±1`, `db = d·(0.5 + s)·0.25` |
//! | IQ2_XS | 74 (2.3125) | `d` @0; `qs: u16[32]` @2 (9-bit grid index, 7 sign bits); `scales: u8[8]` @66 (two 4-bit `s`, one per 16) | same, `s` per 16 |
//! | IQ2_S | 82 (2.5625) | `d` @0; grid low bytes @2, signs @34 (one byte per 8); `qh` @66 (2 high bits per group); `scales` @74 | same, 10-bit index, `s` per 16 |
//! | IQ3_XXS | 98 (3.0625) | `d` @0; 64 grid bytes @2 (one per 4 values); per block of 32 a u32 @66+4·ib: 4×7 sign bits, `s` in bits 28–31 | `db·g[j]·±1`, `db = d·(0.5 + s)·0.5` |
//! | IQ3_S | 110 (3.4375) | `d` @0; grid low bytes @2; `qh` @66 (9th index bit per 4 values); signs @74 (one byte per 8); `scales` @106 (4 bits per 32) | `db·g[j]·±1`, `db = d·(1 + 2s)` |
//! | IQ1_S | 50 (1.5625) | `d` @0; grid low bytes @2; `qh: u16[8]` @34: 3 high index bits per group, `s` in bits 12–14, the shift's sign in bit 15 | `dl·(g[j] + δ)`, `dl = d·(2s + 1)`, `δ = ±0.125` |
//! | IQ1_M | 56 (1.75) | grid low bytes @0; `qh` @32 (per group 3 high index bits and the shift's sign); `scales: u16[4]` @48: 3-bit `s` per 16, the fp16 `d` spread over their top nibbles | `dl·(g[j] + δ)`, `dl = d·(2s + 1)` per 16, `δ` per 8 |
//!
//! `g` is the codebook entry: magnitudes {8, 25, 43} (IQ2), {4, 12, …, 52, 62} (IQ3_XXS), odd
//! 1…15 (IQ3_S), or −1/0/+1 (IQ1). An IQ2/IQ3 sign byte is `ksigns_iq2xs[7 bits]`, whose eighth
//! bit makes the number of minus signs even. Every product is float32 in C's order — `(db·g)·±1`
//! with `db = (d·(0.5 + s))·0.25` — one rounding each, no fused multiply-add.
//!
//! **Encoding** is llama.cpp's (`quantize_iq2_xxs` …), bit for bit: a search of the grids with
//! the neighbour tables `iq2xs_init_impl` / `iq3xs_init_impl` build ([`super::iq_lattice`]),
//! in [`super::iq2_quant`], [`super::iq3_quant`] (sharing [`super::iq_search`]) and
//! [`super::iq1_quant`]. IQ2_XXS, IQ2_XS and IQ1_S need an imatrix
//! (`ggml_quantize_requires_imatrix`).
//!
//! **Ranges** (what counts as clipped): `±db·max(g)` for the IQ2/IQ3 types, per group of one
//! scale (32 values, 16 for IQ2_XS/IQ2_S); `dl·(−1 + δ) … dl·(1 + δ)` for IQ1_S (per 32) and
//! IQ1_M (per 8, where `δ` changes).

use super::fp16::{fp16_to_fp32, read_fp16};
use super::grids::{
    entry_bytes, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID,
    KMASK_IQ2XS, KSIGNS_IQ2XS,
};

/// IQ2_XXS super-block bytes.
pub const IQ2_XXS_BYTES: usize = 66;
/// IQ2_XS super-block bytes.
pub const IQ2_XS_BYTES: usize = 74;
/// IQ2_S super-block bytes.
pub const IQ2_S_BYTES: usize = 82;
/// IQ3_XXS super-block bytes.
pub const IQ3_XXS_BYTES: usize = 98;
/// IQ3_S super-block bytes.
pub const IQ3_S_BYTES: usize = 110;
/// IQ1_S super-block bytes.
pub const IQ1_S_BYTES: usize = 50;
/// IQ1_M super-block bytes.
pub const IQ1_M_BYTES: usize = 56;

/// `IQ1S_DELTA` = `IQ1M_DELTA` (ggml-common.h).
const IQ1_DELTA: f32 = 0.125;

/// The byte at `at`, 0 past the end (blocks are checked to be whole before decoding, so this
/// never happens; it keeps every read bounds-checked).
fn byte(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([byte(b, at), byte(b, at + 1)])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([
        byte(b, at),
        byte(b, at + 1),
        byte(b, at + 2),
        byte(b, at + 3),
    ])
}

/// Grid entry `i` of `grid`, 0 when out of range (an index never is: it has as many bits as
/// the grid has entries).
fn entry<T: Copy + Into<u64>>(grid: &[T], i: usize) -> u64 {
    grid.get(i).map_or(0, |&v| v.into())
}

/// `y[j] = db·g[j]·(sign bit j ? −1 : 1)` for the 8 elements of one IQ2 group.
fn signed_group(y: &mut [f32], db: f32, grid: [u8; 8], signs: u8) {
    for ((o, &g), &m) in y.iter_mut().zip(&grid).zip(&KMASK_IQ2XS) {
        *o = db * g as f32 * if signs & m != 0 { -1.0 } else { 1.0 };
    }
}

/// `±m`, ordered.
fn symmetric(m: f32) -> (f32, f32) {
    let (a, z) = (-m, m);
    (a.min(z), a.max(z))
}

/// The sign byte `ksigns_iq2xs[(bits >> shift) & 127]`.
fn ksigns(bits: u32, shift: u32) -> u8 {
    KSIGNS_IQ2XS[((bits >> shift) & 127) as usize]
}

/// IQ2_XXS: the scale of block `ib` (of 32) and its 8 bytes `(grid indices, signs and scale)`.
fn iq2_xxs_scale(b: &[u8], ib: usize) -> (f32, u32) {
    let d = read_fp16(b, 0);
    let aux1 = u32_at(b, 2 + 8 * ib + 4);
    (d * (0.5 + (aux1 >> 28) as f32) * 0.25, aux1)
}

/// `dequantize_row_iq2_xxs` on one super-block.
pub fn dequantize_iq2_xxs_block(b: &[u8], y: &mut [f32]) {
    for (ib, y32) in y.chunks_mut(32).enumerate().take(8) {
        let (db, aux1) = iq2_xxs_scale(b, ib);
        for (l, y8) in y32.chunks_mut(8).enumerate() {
            let g = entry(&IQ2XXS_GRID, byte(b, 2 + 8 * ib + l) as usize);
            signed_group(y8, db, entry_bytes(g), ksigns(aux1, 7 * l as u32));
        }
    }
}

/// IQ2_XXS ranges, per block of 32: `±db·43`.
pub fn iq2_xxs_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    out.extend((0..8).map(|ib| symmetric(iq2_xxs_scale(b, ib).0 * 43.0)));
}

/// IQ2_XS / IQ2_S: the two scales of block `ib` (of 32), from the scales byte at `at`.
fn iq2_pair_scales(b: &[u8], at: usize) -> [f32; 2] {
    let d = read_fp16(b, 0);
    let s = byte(b, at);
    [
        d * (0.5 + (s & 0xf) as f32) * 0.25,
        d * (0.5 + (s >> 4) as f32) * 0.25,
    ]
}

/// `dequantize_row_iq2_xs` on one super-block.
pub fn dequantize_iq2_xs_block(b: &[u8], y: &mut [f32]) {
    for (ib, y32) in y.chunks_mut(32).enumerate().take(8) {
        let db = iq2_pair_scales(b, 66 + ib);
        for (l, y8) in y32.chunks_mut(8).enumerate() {
            let q = u16_at(b, 2 + 2 * (4 * ib + l));
            let g = entry(&IQ2XS_GRID, (q & 511) as usize);
            let signs = KSIGNS_IQ2XS[(q >> 9) as usize & 127];
            signed_group(y8, db[l / 2], entry_bytes(g), signs);
        }
    }
}

/// IQ2_XS / IQ2_S ranges, per 16: `±db·43`, the scales bytes from `at`.
fn iq2_pair_ranges(b: &[u8], at: usize, out: &mut Vec<(f32, f32)>) {
    for ib in 0..8 {
        out.extend(iq2_pair_scales(b, at + ib).map(|db| symmetric(db * 43.0)));
    }
}

/// IQ2_XS ranges, per 16.
pub fn iq2_xs_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    iq2_pair_ranges(b, 66, out)
}

/// `dequantize_row_iq2_s` on one super-block.
pub fn dequantize_iq2_s_block(b: &[u8], y: &mut [f32]) {
    for (ib, y32) in y.chunks_mut(32).enumerate().take(8) {
        let db = iq2_pair_scales(b, 74 + ib);
        let qh = byte(b, 66 + ib) as usize;
        for (l, y8) in y32.chunks_mut(8).enumerate() {
            let index = byte(b, 2 + 4 * ib + l) as usize | ((qh << (8 - 2 * l)) & 0x300);
            let g = entry(&IQ2S_GRID, index);
            signed_group(y8, db[l / 2], entry_bytes(g), byte(b, 34 + 4 * ib + l));
        }
    }
}

/// IQ2_S ranges, per 16.
pub fn iq2_s_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    iq2_pair_ranges(b, 74, out)
}

/// `y[j]`, `y[j + 4]` of one IQ3 group of 8: two grid entries of 4 and one sign byte.
fn iq3_group(y: &mut [f32], db: f32, g1: u64, g2: u64, signs: u8) {
    let grid: [u8; 8] = std::array::from_fn(|j| {
        if j < 4 {
            entry_bytes::<4>(g1)[j]
        } else {
            entry_bytes::<4>(g2)[j - 4]
        }
    });
    signed_group(y, db, grid, signs);
}

/// IQ3_XXS: the scale of block `ib` (of 32) and its u32 of signs and scale.
fn iq3_xxs_scale(b: &[u8], ib: usize) -> (f32, u32) {
    let d = read_fp16(b, 0);
    let aux = u32_at(b, 66 + 4 * ib);
    (d * (0.5 + (aux >> 28) as f32) * 0.5, aux)
}

/// `dequantize_row_iq3_xxs` on one super-block.
pub fn dequantize_iq3_xxs_block(b: &[u8], y: &mut [f32]) {
    for (ib, y32) in y.chunks_mut(32).enumerate().take(8) {
        let (db, aux) = iq3_xxs_scale(b, ib);
        for (l, y8) in y32.chunks_mut(8).enumerate() {
            let qs = 2 + 8 * ib + 2 * l;
            let g1 = entry(&IQ3XXS_GRID, byte(b, qs) as usize);
            let g2 = entry(&IQ3XXS_GRID, byte(b, qs + 1) as usize);
            iq3_group(y8, db, g1, g2, ksigns(aux, 7 * l as u32));
        }
    }
}

/// IQ3_XXS ranges, per block of 32: `±db·62`.
pub fn iq3_xxs_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    out.extend((0..8).map(|ib| symmetric(iq3_xxs_scale(b, ib).0 * 62.0)));
}

/// IQ3_S: the scale of block `ib` (of 32), `d·(1 + 2s)` (the integer converted, then one
/// product).
fn iq3_s_scale(b: &[u8], ib: usize) -> f32 {
    let d = read_fp16(b, 0);
    let s = (byte(b, 106 + ib / 2) >> (4 * (ib % 2))) & 0xf;
    d * (1 + 2 * s as i32) as f32
}

/// `dequantize_row_iq3_s` on one super-block.
pub fn dequantize_iq3_s_block(b: &[u8], y: &mut [f32]) {
    for (ib, y32) in y.chunks_mut(32).enumerate().take(8) {
        let db = iq3_s_scale(b, ib);
        let qh = byte(b, 66 + ib) as usize;
        for (l, y8) in y32.chunks_mut(8).enumerate() {
            let qs = 2 + 8 * ib + 2 * l;
            let i1 = byte(b, qs) as usize | ((qh << (8 - 2 * l)) & 256);
            let i2 = byte(b, qs + 1) as usize | ((qh << (7 - 2 * l)) & 256);
            let (g1, g2) = (entry(&IQ3S_GRID, i1), entry(&IQ3S_GRID, i2));
            iq3_group(y8, db, g1, g2, byte(b, 74 + 4 * ib + l));
        }
    }
}

/// IQ3_S ranges, per block of 32: `±db·15`.
pub fn iq3_s_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    out.extend((0..8).map(|ib| symmetric(iq3_s_scale(b, ib) * 15.0)));
}

/// `y[j] = dl·(g[j] + δ)` for the 8 elements of one IQ1 group (`g` int8 −1/0/1).
fn shifted_group(y: &mut [f32], dl: f32, g: u64, delta: f32) {
    for (o, q) in y.iter_mut().zip(entry_bytes::<8>(g)) {
        *o = dl * (q as i8 as f32 + delta);
    }
}

/// `dl·(−1 + δ) … dl·(1 + δ)`, ordered.
fn shifted_range(dl: f32, delta: f32) -> (f32, f32) {
    let (a, z) = (dl * (-1.0 + delta), dl * (1.0 + delta));
    (a.min(z), a.max(z))
}

/// The shift `δ`: `−IQ1S_DELTA` when the bit is set.
fn delta(set: bool) -> f32 {
    if set {
        -IQ1_DELTA
    } else {
        IQ1_DELTA
    }
}

/// IQ1_S: `(dl, δ, qh)` of block `ib` (of 32).
fn iq1_s_scale(b: &[u8], ib: usize) -> (f32, f32, u16) {
    let d = read_fp16(b, 0);
    let qh = u16_at(b, 34 + 2 * ib);
    let dl = d * (2 * ((qh >> 12) & 7) as i32 + 1) as f32;
    (dl, delta(qh & 0x8000 != 0), qh)
}

/// `dequantize_row_iq1_s` on one super-block.
pub fn dequantize_iq1_s_block(b: &[u8], y: &mut [f32]) {
    for (ib, y32) in y.chunks_mut(32).enumerate().take(8) {
        let (dl, delta, qh) = iq1_s_scale(b, ib);
        for (l, y8) in y32.chunks_mut(8).enumerate() {
            let index = byte(b, 2 + 4 * ib + l) as usize | ((((qh >> (3 * l)) & 7) as usize) << 8);
            shifted_group(y8, dl, entry(&IQ1S_GRID, index), delta);
        }
    }
}

/// IQ1_S ranges, per block of 32.
pub fn iq1_s_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    out.extend((0..8).map(|ib| {
        let (dl, delta, _) = iq1_s_scale(b, ib);
        shifted_range(dl, delta)
    }));
}

/// IQ1_M: the four u16 scale words and `d`, whose fp16 bits are their top nibbles.
fn iq1_m_scales(b: &[u8]) -> ([u16; 4], f32) {
    let sc: [u16; 4] = std::array::from_fn(|k| u16_at(b, 48 + 2 * k));
    let bits = (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000);
    (sc, fp16_to_fp32(bits))
}

/// IQ1_M: per group of 8 of block `ib` (of 32), `(dl, δ, grid index)`.
fn iq1_m_groups(b: &[u8], sc: &[u16; 4], d: f32, ib: usize) -> [(f32, f32, usize); 4] {
    let s = sc[ib / 2];
    let dl1 = d * (2 * ((s >> (6 * (ib % 2))) & 7) as i32 + 1) as f32;
    let dl2 = d * (2 * ((s >> (6 * (ib % 2) + 3)) & 7) as i32 + 1) as f32;
    let (qh0, qh1) = (
        byte(b, 32 + 2 * ib) as usize,
        byte(b, 32 + 2 * ib + 1) as usize,
    );
    let qs = |l: usize| byte(b, 4 * ib + l) as usize;
    [
        (dl1, delta(qh0 & 0x08 != 0), qs(0) | ((qh0 << 8) & 0x700)),
        (dl1, delta(qh0 & 0x80 != 0), qs(1) | ((qh0 << 4) & 0x700)),
        (dl2, delta(qh1 & 0x08 != 0), qs(2) | ((qh1 << 8) & 0x700)),
        (dl2, delta(qh1 & 0x80 != 0), qs(3) | ((qh1 << 4) & 0x700)),
    ]
}

/// `dequantize_row_iq1_m` on one super-block.
pub fn dequantize_iq1_m_block(b: &[u8], y: &mut [f32]) {
    let (sc, d) = iq1_m_scales(b);
    for (ib, y32) in y.chunks_mut(32).enumerate().take(8) {
        let groups = iq1_m_groups(b, &sc, d, ib);
        for (y8, &(dl, delta, index)) in y32.chunks_mut(8).zip(&groups) {
            shifted_group(y8, dl, entry(&IQ1S_GRID, index), delta);
        }
    }
}

/// IQ1_M ranges, per group of 8 (the shift changes every 8 values).
pub fn iq1_m_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    let (sc, d) = iq1_m_scales(b);
    for ib in 0..8 {
        out.extend(
            iq1_m_groups(b, &sc, d, ib)
                .iter()
                .map(|&(dl, delta, _)| shifted_range(dl, delta)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::ggml::fp16::fp32_to_fp16;

    #[test]
    fn iq2_xxs_reads_grid_signs_and_scale() {
        // d = 1, s = 3: db = (1·3.5)·0.25 = 0.875; grid entry 0 of the first group is all 8s;
        // sign bits 0b0000001 → ksigns = 0b1000_0001: elements 0 and 7 negative.
        let mut b = [0u8; IQ2_XXS_BYTES];
        b[0..2].copy_from_slice(&fp32_to_fp16(1.0).to_le_bytes());
        let aux1: u32 = (3 << 28) | 1;
        b[6..10].copy_from_slice(&aux1.to_le_bytes());
        let mut y = [0.0f32; 256];
        dequantize_iq2_xxs_block(&b, &mut y);
        assert_eq!(IQ2XXS_GRID[0], 0x0808080808080808);
        assert_eq!(&y[..8], &[-7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, -7.0]);
        let mut r = Vec::new();
        iq2_xxs_ranges(&b, &mut r);
        assert_eq!(r[0], (-0.875 * 43.0, 0.875 * 43.0));
        assert_eq!(r.len(), 8);
    }

    #[test]
    fn iq1_m_scale_is_spread_over_four_words() {
        // d = 2.0 (fp16 0x4000): its nibbles 0, 0, 0, 4 in the top nibble of sc[0..4].
        let mut b = [0u8; IQ1_M_BYTES];
        b[48 + 6..48 + 8].copy_from_slice(&0x4000u16.to_le_bytes());
        assert_eq!(iq1_m_scales(&b).1, 2.0);
        // s = 0 → dl = 2; index 0 with qh bit 3 clear: δ = +0.125.
        let mut y = [0.0f32; 256];
        dequantize_iq1_m_block(&b, &mut y);
        let g = entry_bytes::<8>(IQ1S_GRID[0]);
        assert_eq!(y[0], 2.0 * (g[0] as i8 as f32 + 0.125));
        let mut r = Vec::new();
        iq1_m_ranges(&b, &mut r);
        assert_eq!(r.len(), 32);
        assert_eq!(r[0], (2.0 * -0.875, 2.0 * 1.125));
    }
}
