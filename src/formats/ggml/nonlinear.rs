//! ggml's 4-bit table formats on blocks of 32: MXFP4 (17 bytes, 4.25 bits per value),
//! IQ4_NL (18 bytes, 4.5 bits per value) and IQ4_XS (super-blocks of 256, 4.25 bits). Each
//! block of 32 stores 32 nibbles indexing a 16-entry int8 table, element `j` in the low and
//! `j + 16` in the high nibble of byte `j`.
//!
//! **MXFP4** (ggml-quants.c l. 337, 350; tables in ggml-common.h): the table `kvalues_mxfp4` is
//! E2M1 doubled, `{0, 1, 2, 3, 4, 6, 8, 12, 0, −1, −2, −3, −4, −6, −8, −12}`, and the scale is
//! half the E8M0 value: `e = (uint8)(⌊log2f(amax)⌋ − 2 + 127)` (0 for an all-zero block),
//! `d = 2^(e − 128)` (`GGML_E8M0_TO_FP32_HALF`, ggml-impl.h l. 489). Each value takes the
//! **first** table index with the smallest `|k·d − x|` (strict `<`): a tie goes to the smaller
//! magnitude (1.5 → 1, 0.5 → 0, −2.5 → −2), not to OCP's round-half-to-even, and `−0` (index 8)
//! is never chosen. `log2f` is rounded to float32 before the floor, so an `amax` a hair below
//! `2^k` (|k| ≥ 2) counts as `2^k`.
//!
//! **IQ4_NL** (`quantize_iq4_nl` → `quantize_row_iq4_nl_impl` with `ntry = 7`, l. 4937/5048):
//! the non-uniform table `kvalues_iq4nl = {−127, −104, −83, −65, −49, −35, −22, −10, 1, 13, 25,
//! 38, 53, 69, 89, 113}`. Per block: weights `x²` (or `qw·√(σ² + x²)` with an imatrix,
//! `σ² = Σx²·(2/32)`); `d = −max/−127` from the signed extreme, codes by `best_index_int8`
//! (binary search, a tie goes to the **upper** entry), least-squares `d = Σw·q·x / Σw·q²`, then
//! 15 candidates `id = (itry − 127)/max`, `itry = −7…7`, kept when `(Σw·q·x)² > best·Σw·q²`.
//! The codes are finally re-chosen with `1/d` of the float32 `d`, while the block stores
//! `fp16(d)`. A block with `amax < 1e-15` stores `d = 0` (all codes 8, value 0).
//! (`quantize_row_iq4_nl_ref`, with `ntry = −1`, is not what llama.cpp runs.)
//!
//! **IQ4_XS** (`quantize_iq4_xs` → `quantize_row_iq4_nl_impl(256, 32, …, ntry = 7)`, 136 bytes
//! per 256 values, 4.25 bits): super-blocks of 256 whose eight blocks of 32 find their scales as
//! IQ4_NL does (with `σ²` over the super-block), then share `d = −max_scale/32` (fp16) and store
//! 6-bit sub-scales `l + 32` (low nibbles in `scales_l`, high 2 bits in `scales_h`); the codes
//! are re-chosen with `1/(d·l)` of the float32 `d`. The reference path (no imatrix) is the same
//! function with weights `x²`.
//!
//! **NVFP4** (`quantize_row_nvfp4_ref`, `dequantize_row_nvfp4`; 36 bytes per 64 values, 4.5 bits):
//! four sub-blocks of 16, each with an unsigned E4M3 scale byte (`d[4]` @0) and 8 bytes of E2M1
//! nibbles (`qs` @4; in sub-block `s`, byte `j` holds element `j` low and `j + 8` high). The scale
//! is `ue = ggml_fp32_to_ue4m3(amax/6)` (ggml-impl.h): exponent and top 3 mantissa bits of the
//! float32, rounded **half up** on the next bit (a carry into the exponent included), subnormals
//! `(int)(x·512 + 0.5)` clamped to 1…7 (0 below), everything from `2^8` up saturated to `0x7E` =
//! 448. Decoding, `ggml_ue4m3_to_fp32`, returns **half** the E4M3 value (0 for `0x00` and `0x7F`;
//! bit 7 is ignored), to pair with the doubled `kvalues_mxfp4`: a value is `k·d` with
//! `d = ue4m3/2`, and the codes are chosen by `best_index_mxfp4` as for MXFP4 (first index of
//! smallest error). The imatrix is ignored.

use super::fp16::{read_fp16, write_fp16};
use super::search::{nearest_int, GROUP_MAX_EPS};
use super::sub_blocks::{imatrix_weights, sum_squares};
use super::QK_K;
use crate::derivation::{self, Candidates, Step};

/// Elements per block.
pub const QK: usize = 32;

/// `kvalues_mxfp4`: E2M1 values doubled.
pub const KVALUES_MXFP4: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// `kvalues_iq4nl`.
pub const KVALUES_IQ4NL: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// MXFP4 block bytes.
pub const MXFP4_BYTES: usize = 17;
/// IQ4_NL block bytes.
pub const IQ4_NL_BYTES: usize = 18;
/// IQ4_XS super-block bytes: `fp16 d`, `u16 scales_h`, `u8 scales_l[4]`, `u8 qs[128]`.
pub const IQ4_XS_BYTES: usize = 136;

/// NVFP4 block bytes (64 values).
pub const NVFP4_BYTES: usize = 36;
/// NVFP4 values per block (`QK_NVFP4`).
pub const QK_NVFP4: usize = 64;
/// NVFP4 values per scale (`QK_NVFP4_SUB`).
const QK_NVFP4_SUB: usize = 16;

/// `GGML_E8M0_TO_FP32_HALF(e)`: `2^(e − 128)`, subnormal for `e < 2`.
pub fn e8m0_to_fp32_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        ((e - 1) as u32) << 23
    };
    f32::from_bits(bits)
}

/// `log2f` as glibc returns it: the exact logarithm rounded to float32.
fn log2f(x: f32) -> f32 {
    (x as f64).log2() as f32
}

/// `best_index_mxfp4(x, d)`: the first index with the smallest `|k·d − x|`.
fn best_index_mxfp4(x: f32, d: f32) -> u8 {
    let mut best = 0u8;
    let mut best_err = (KVALUES_MXFP4[0] as f32 * d - x).abs();
    for (i, &k) in KVALUES_MXFP4.iter().enumerate().skip(1) {
        let err = (k as f32 * d - x).abs();
        if err < best_err {
            best = i as u8;
            best_err = err;
        }
    }
    best
}

/// Pack 32 nibbles: element `j` low, `j + 16` high.
fn pack_nibbles(codes: &[u8], out: &mut [u8]) {
    for j in 0..QK / 2 {
        out[j] = codes[j] | (codes[j + QK / 2] << 4);
    }
}

/// The nibble of element `i` in `qs`.
fn nibble(qs: &[u8], i: usize) -> usize {
    if i < QK / 2 {
        (qs[i] & 0xF) as usize
    } else {
        (qs[i - QK / 2] >> 4) as usize
    }
}

/// `quantize_row_mxfp4_ref` on one block.
pub fn quantize_mxfp4_block(x: &[f32], out: &mut [u8]) {
    let mut amax = 0.0f32;
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
        }
    }
    let e = if amax > 0.0 {
        // (uint8_t) of a float: truncation to int, then the low byte.
        ((log2f(amax).floor() - 2.0 + 127.0) as i32 & 0xFF) as u8
    } else {
        0
    };
    let d = e8m0_to_fp32_half(e);
    derivation::record(|| {
        Step::new(
            "Shared exponent",
            "e = (uint8)(floor(log2 amax) − 2 + 127) (0 for an all-zero block); d = 2^(e − 128); each code is the first index of kvalues_mxfp4 (E2M1 doubled) with the smallest |k·d − x|",
            "ggml/src/ggml-quants.c quantize_row_mxfp4_ref (ggml d99724f2)",
        )
        .value("amax", amax)
        .value("e", e as i64)
        .value("d", d)
    });
    out[0] = e;
    let codes: Vec<u8> = x.iter().map(|&v| best_index_mxfp4(v, d)).collect();
    pack_nibbles(&codes, &mut out[1..]);
}

/// `dequantize_row_mxfp4` on one block: `k·d`.
pub fn dequantize_mxfp4_block(b: &[u8], y: &mut [f32]) {
    let d = e8m0_to_fp32_half(b[0]);
    for (i, o) in y.iter_mut().enumerate().take(QK) {
        *o = KVALUES_MXFP4[nibble(&b[1..], i)] as f32 * d;
    }
}

/// The representable range of an MXFP4 block, `±12·d`.
pub fn mxfp4_range(b: &[u8]) -> (f32, f32) {
    let d = e8m0_to_fp32_half(b[0]);
    (-12.0 * d, 12.0 * d)
}

/// `ggml_ue4m3_to_fp32(x)`: half the unsigned E4M3 value (bit 7 ignored), 0 for `0x00` and
/// `0x7F`.
pub fn ue4m3_to_fp32(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let exp = ((x >> 3) & 0xF) as i32;
    let man = (x & 0x7) as i32;
    let raw = if exp == 0 {
        man as f32 * pow2(-9)
    } else {
        (1.0 + man as f32 / 8.0) * pow2(exp - 7)
    };
    raw * 0.5
}

/// `2^e` for a normal exponent (`ldexpf(1, e)`, exact).
fn pow2(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// `ggml_fp32_to_ue4m3(x)`: truncated to 3 mantissa bits and rounded half up on the fourth,
/// saturating at `0x7E` (448); subnormals `(int)(x·512 + 0.5)` clamped to 1…7, or 0.
pub fn fp32_to_ue4m3(x: f32) -> u8 {
    // `!(x > 0.0f)`: zero, negative and NaN.
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    let x = if x > 448.0 { 448.0 } else { x };
    let bits = x.to_bits();
    let fp32_exp = ((bits >> 23) & 0xFF) as i32 - 127;
    let fp32_man = ((bits >> 20) & 0x7) as i32;
    let mut exp = fp32_exp + 7;
    if exp <= 0 {
        let man = (x * 512.0 + 0.5) as i32;
        return if man < 1 { 0 } else { man.min(7) as u8 };
    }
    if exp >= 15 {
        return 0x7E;
    }
    let mut man = fp32_man + ((bits >> 19) & 1) as i32;
    if man > 7 {
        man = 0;
        exp += 1;
        if exp >= 15 {
            return 0x7E;
        }
    }
    ((exp << 3) | man) as u8
}

/// `quantize_row_nvfp4_ref` on one block of 64.
pub fn quantize_nvfp4_block(x: &[f32], out: &mut [u8]) {
    let mut chosen = derivation::recording().then(Vec::new);
    for (s, xb) in x.chunks(QK_NVFP4_SUB).enumerate() {
        let mut amax = 0.0f32;
        for &v in xb {
            if amax < v.abs() {
                amax = v.abs();
            }
        }
        let ue = fp32_to_ue4m3(amax / 6.0);
        out[s] = ue;
        let d = ue4m3_to_fp32(ue);
        if let Some(rows) = chosen.as_mut() {
            rows.push(vec![s as f64, amax as f64, ue as f64, d as f64]);
        }
        let half = QK_NVFP4_SUB / 2;
        for j in 0..half {
            let (x0, x1) = (
                best_index_mxfp4(xb[j], d),
                best_index_mxfp4(xb[j + half], d),
            );
            out[4 + s * half + j] = x0 | (x1 << 4);
        }
    }
    if let Some(rows) = chosen {
        derivation::record(|| {
            Step::new(
                "Sub-block scales",
                "s_j = fp32_to_ue4m3(amax_j/6) per sub-block of 16; d_j = ue4m3_to_fp32(s_j); each code is the first index of kvalues_mxfp4 (E2M1 doubled) with the smallest |k·d_j − x|",
                "ggml/src/ggml-quants.c quantize_row_nvfp4_ref (ggml d99724f2)",
            )
            .candidates(Candidates::new(
                &["sub-block", "amax", "s (UE4M3 byte)", "d"],
                rows,
                0,
                "no search: one scale per sub-block of 16 (every row is used)",
            )
            .per_slice())
        });
    }
}

/// `dequantize_row_nvfp4` on one block: `k·d` per sub-block of 16.
pub fn dequantize_nvfp4_block(b: &[u8], y: &mut [f32]) {
    let half = QK_NVFP4_SUB / 2;
    for (s, yb) in y
        .chunks_mut(QK_NVFP4_SUB)
        .enumerate()
        .take(QK_NVFP4 / QK_NVFP4_SUB)
    {
        let d = ue4m3_to_fp32(b[s]);
        for j in 0..half {
            let q = b[4 + s * half + j];
            yb[j] = KVALUES_MXFP4[(q & 0x0F) as usize] as f32 * d;
            yb[j + half] = KVALUES_MXFP4[(q >> 4) as usize] as f32 * d;
        }
    }
}

/// The representable range of each NVFP4 sub-block of 16, `±12·d`.
pub fn nvfp4_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    for &ue in &b[..QK_NVFP4 / QK_NVFP4_SUB] {
        let d = ue4m3_to_fp32(ue);
        let (a, z) = (-12.0 * d, 12.0 * d);
        out.push((a.min(z), a.max(z)));
    }
}

/// `best_index_int8(16, values, x)`: binary search; a value exactly between two entries goes
/// to the upper one.
fn best_index_int8(values: &[i8; 16], x: f32) -> u8 {
    if x <= values[0] as f32 {
        return 0;
    }
    if x >= values[15] as f32 {
        return 15;
    }
    let (mut ml, mut mu) = (0usize, 15usize);
    while mu - ml > 1 {
        let mav = (ml + mu) / 2;
        if x < values[mav] as f32 {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    if x - (values[mu - 1] as f32) < (values[mu] as f32) - x {
        (mu - 1) as u8
    } else {
        mu as u8
    }
}

/// The weights of one block of 32 with the super-block's `σ²`: `x²`, or `qw·√(σ² + x²)`.
fn block_weights(x: &[f32], qw: Option<&[f32]>, sigma2: f32) -> Vec<f32> {
    match qw {
        Some(q) => imatrix_weights(x, q, sigma2),
        None => x.iter().map(|&v| v * v).collect(),
    }
}

/// The per-block part of `quantize_row_iq4_nl_impl` (`ntry = 7`): the least-squares scale of
/// one block of 32 and its 15 candidates, `0` when `amax < GROUP_MAX_EPS`.
fn block_scale(x: &[f32], weight: &[f32]) -> f32 {
    const NTRY: i32 = 7;
    let values = &KVALUES_IQ4NL;
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        return 0.0;
    }
    let v0 = values[0] as f32;
    // `(Σw·q·x, Σw·q²)` of the codes chosen with inverse scale `id`.
    let sums = |id: f32| {
        let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
        for (&v, &w) in x.iter().zip(weight) {
            let q = values[best_index_int8(values, id * v) as usize] as f32;
            sumqx += w * q * v;
            sumq2 += w * q * q;
        }
        (sumqx, sumq2)
    };
    let id0 = 1.0 / (-max / v0);
    let (sumqx, sumq2) = sums(id0);
    let mut d = if sumq2 > 0.0 { sumqx / sumq2 } else { 0.0 };
    let mut best = d * sumqx;
    let mut table = derivation::recording()
        .then(|| (vec![vec![f64::NAN, id0 as f64, d as f64, best as f64]], 0));
    for itry in -NTRY..=NTRY {
        let id = (itry + values[0] as i32) as f32 / max;
        let (sumqx, sumq2) = sums(id);
        let better = sumq2 > 0.0 && sumqx * sumqx > best * sumq2;
        if better {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
        if let Some((rows, picked)) = table.as_mut() {
            let (scale, objective) = if sumq2 > 0.0 {
                let s = sumqx / sumq2;
                (s as f64, (s * sumqx) as f64)
            } else {
                (f64::NAN, f64::NAN)
            };
            rows.push(vec![itry as f64, id as f64, scale, objective]);
            if better {
                *picked = rows.len() - 1;
            }
        }
    }
    if let Some((rows, picked)) = table {
        derivation::record(|| {
            Step::new(
                "Block scale search (quantize_row_iq4_nl_impl)",
                "first guess d = −max/kvalues[0] (first row), then inverse scales id = (itry + kvalues[0])/max for itry = −7…7; codes: the nearest table entry to id·x; d = Σw·q·x / Σw·q²; keep the largest (Σw·q·x)²/Σw·q²",
                "ggml/src/ggml-quants.c:4937 quantize_row_iq4_nl_impl (ggml d99724f2)",
            )
            .value("max", max)
            .value("scale", d)
            .candidates(Candidates::new(
                &["itry", "id", "scale", "(Σw·q·x)²/Σw·q²"],
                rows,
                picked,
                "a later candidate only when strictly larger (the first maximum)",
            ))
        });
    }
    d
}

/// The codes of `x` with inverse scale `id`.
fn codes(x: &[f32], id: f32) -> Vec<u8> {
    x.iter()
        .map(|&v| best_index_int8(&KVALUES_IQ4NL, id * v))
        .collect()
}

/// `quantize_row_iq4_nl_impl(32, 32, x, …, qw, ntry = 7)` on one block (`qw`: the block's 32
/// imatrix entries).
pub fn quantize_iq4_nl_block(x: &[f32], qw: Option<&[f32]>, out: &mut [u8]) {
    let sigma2 = sum_squares(x) * (2.0f32 / QK as f32);
    let scale = block_scale(x, &block_weights(x, qw, sigma2));
    write_fp16(out, 0, scale);
    let id = if scale != 0.0 { 1.0 / scale } else { 0.0 };
    pack_nibbles(&codes(x, id), &mut out[2..]);
}

/// `quantize_row_iq4_nl_impl(256, 32, x, …, qw, ntry = 7)` on one IQ4_XS super-block (`qw`:
/// its 256 imatrix entries): each block's scale as IQ4_NL finds it (with the super-block's
/// `σ² = Σx²·(2/256)`), then `d = −max_scale/32` from the scale of largest magnitude, 6-bit
/// sub-scales `l = clamp(nearest_int(s/d), −32, 31)`, and the codes re-chosen with
/// `1/(d·l)` of the float32 `d`, while the block stores `fp16(d)` and `l + 32`.
pub fn quantize_iq4_xs_block(x: &[f32], qw: Option<&[f32]>, out: &mut [u8]) {
    let sigma2 = sum_squares(x) * (2.0f32 / QK_K as f32);
    let (mut max_scale, mut amax_scale) = (0.0f32, 0.0f32);
    let scales: Vec<f32> = (0..QK_K / QK)
        .map(|ib| {
            let xb = &x[ib * QK..(ib + 1) * QK];
            let s = block_scale(
                xb,
                &block_weights(xb, qw.map(|q| &q[ib * QK..(ib + 1) * QK]), sigma2),
            );
            if s.abs() > amax_scale {
                amax_scale = s.abs();
                max_scale = s;
            }
            s
        })
        .collect();
    let d = -max_scale / 32.0;
    write_fp16(out, 0, d);
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut scales_h = 0u16;
    out[4..8].fill(0);
    for (ib, &s) in scales.iter().enumerate() {
        let l = nearest_int(id * s).clamp(-32, 31);
        let dl = d * l as f32;
        let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
        let xb = &x[ib * QK..(ib + 1) * QK];
        pack_nibbles(
            &codes(xb, idl),
            &mut out[8 + ib * QK / 2..8 + (ib + 1) * QK / 2],
        );
        let l = (l + 32) as u8;
        out[4 + ib / 2] |= (l & 0xF) << (4 * (ib % 2));
        scales_h |= ((l >> 4) as u16) << (2 * (ib % 8));
    }
    out[2..4].copy_from_slice(&scales_h.to_le_bytes());
}

/// The sub-block scales of an IQ4_XS super-block: `fp16(d)·(l − 32)` for each block of 32.
fn iq4_xs_scales(b: &[u8]) -> [f32; QK_K / QK] {
    let d = read_fp16(b, 0);
    let scales_h = u16::from_le_bytes([b[2], b[3]]);
    std::array::from_fn(|ib| {
        let low = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF;
        let high = ((scales_h >> (2 * ib)) & 3) as u8;
        d * ((low | (high << 4)) as i32 - 32) as f32
    })
}

/// `dequantize_row_iq4_xs` on one super-block: `d·(l − 32)·k`.
pub fn dequantize_iq4_xs_block(b: &[u8], y: &mut [f32]) {
    for (ib, dl) in iq4_xs_scales(b).into_iter().enumerate() {
        let qs = &b[8 + ib * QK / 2..];
        for (i, o) in y[ib * QK..(ib + 1) * QK].iter_mut().enumerate() {
            *o = dl * KVALUES_IQ4NL[nibble(qs, i)] as f32;
        }
    }
}

/// The representable range of each block of 32 of an IQ4_XS super-block, `dl·[−127, 113]`.
pub fn iq4_xs_ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    out.extend(iq4_xs_scales(b).into_iter().map(table_range));
}

/// `d·[−127, 113]`, ordered.
fn table_range(d: f32) -> (f32, f32) {
    let (a, z) = (d * -127.0, d * 113.0);
    (a.min(z), a.max(z))
}

/// `dequantize_row_iq4_nl` on one block: `d·k`.
pub fn dequantize_iq4_nl_block(b: &[u8], y: &mut [f32]) {
    let d = read_fp16(b, 0);
    for (i, o) in y.iter_mut().enumerate().take(QK) {
        *o = d * KVALUES_IQ4NL[nibble(&b[2..], i)] as f32;
    }
}

/// The representable range of an IQ4_NL block, `d·[−127, 113]`.
pub fn iq4_nl_range(b: &[u8]) -> (f32, f32) {
    table_range(read_fp16(b, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mxfp4_ties_go_to_the_smaller_magnitude() {
        // amax 6 → e = ⌊log2 6⌋ − 2 + 127 = 127, d = 2^−1: the grid is E2M1 itself.
        let mut x = [0.0f32; 32];
        x[0] = 6.0;
        x[1] = 1.25; // halfway between 1.0 and 1.5 → the first index, 1.0
        x[2] = -2.5; // between −2 and −3 → −2
        x[3] = 0.25; // between 0 and 0.5 → 0
        let mut b = [0u8; MXFP4_BYTES];
        quantize_mxfp4_block(&x, &mut b);
        assert_eq!(b[0], 127);
        let mut y = [0.0f32; 32];
        dequantize_mxfp4_block(&b, &mut y);
        assert_eq!(&y[..4], &[6.0, 1.0, -2.0, 0.0]);
    }

    #[test]
    fn e8m0_half_scales() {
        assert_eq!(e8m0_to_fp32_half(127), 0.5);
        assert_eq!(e8m0_to_fp32_half(128), 1.0);
        assert_eq!(e8m0_to_fp32_half(1), 2f32.powi(-127));
        assert_eq!(e8m0_to_fp32_half(0), 2f32.powi(-128));
    }

    #[test]
    fn ue4m3_rounds_half_up_and_saturates() {
        // 1.0 = exp 7, man 0 → 0x38, decoded as half: 0.5.
        assert_eq!(fp32_to_ue4m3(1.0), 0x38);
        assert_eq!(ue4m3_to_fp32(0x38), 0.5);
        // 1.0625 is halfway between 1 and 1.125: rounds up (not to even).
        assert_eq!(fp32_to_ue4m3(1.0625), 0x39);
        // 1.9375 rounds up into the next binade.
        assert_eq!(fp32_to_ue4m3(1.9375), 0x40);
        assert_eq!(fp32_to_ue4m3(1000.0), 0x7E);
        assert_eq!(fp32_to_ue4m3(256.0), 0x7E);
        assert_eq!(ue4m3_to_fp32(0x7E), 224.0);
        assert_eq!(ue4m3_to_fp32(0x7F), 0.0);
        // Subnormals: man·2⁻⁹, from (int)(x·512 + 0.5).
        assert_eq!(fp32_to_ue4m3(3.0 / 512.0), 3);
        assert_eq!(fp32_to_ue4m3(0.9 / 1024.0), 0);
        assert_eq!(ue4m3_to_fp32(3), 3.0 / 1024.0);
        assert_eq!(fp32_to_ue4m3(-1.0), 0);
        assert_eq!(fp32_to_ue4m3(f32::NAN), 0);
    }

    #[test]
    fn iq4_nl_best_index_sends_ties_up() {
        // Halfway between −10 and 1 is −4.5: the upper entry (1, index 8).
        assert_eq!(best_index_int8(&KVALUES_IQ4NL, -4.5), 8);
        assert_eq!(best_index_int8(&KVALUES_IQ4NL, -4.6), 7);
        assert_eq!(best_index_int8(&KVALUES_IQ4NL, 0.0), 8);
        assert_eq!(best_index_int8(&KVALUES_IQ4NL, 500.0), 15);
    }
}
