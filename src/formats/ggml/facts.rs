//! What each ggml type is, in words: a one-line summary and the quirks of ggml's code that
//! quantscope reproduces (with the source lines they come from). The codec registry shows them.

use super::GgmlType;

const FP16_SCALES: &str = "scales are rounded to fp16 by ggml_compute_fp32_to_fp16 (ggml-impl.h l. 419): tiny blocks get d = 0 or a subnormal, huge ones ±inf";
const Q40_Q50: &str = "d = max/−8 (Q5_0: −16) from the first element of largest |x| with its sign, codes from 1/d of the unrounded float32 d while fp16(d) is stored; codes trunc(x/d + 8.5) (+16.5), i.e. round half up, the opposite extreme clamped to 15 (31) (ggml-quants.c l. 113, 187)";
const Q40_Q50_IMATRIX: &str = "with an imatrix: weights qw·√(σ² + x²) with σ² = Σx²/n_per_row over the whole row, so a block depends on its row; make_qx_quants' least-squares scale and codes are stored as they are (l. 2070, 2188)";
const Q41_Q51: &str = "codes trunc((x − min)/d + 0.5), round half up; Q4_1 clamps to 15, Q5_1 has no clamp (l. 150, 231)";
const Q41_Q51_IMATRIX: &str = "with an imatrix: σ² over the whole row, make_qkx3_quants (rmin −0.9, rdelta 0.05, 36 steps), m = fp16(−min) (l. 2143, 2242)";
const NEAREST_INT: &str = "nearest_int (l. 621) rounds half to even through the 1.5·2²³ trick; every k-quant step uses it";
const SEARCHES: &str = "scale searches in float32, one rounding per operation, no fused multiply-add (make_qkx2_quants l. 799, make_qx_quants l. 628, make_q3_quants l. 697, make_qkx3_quants l. 993, make_qp_quants l. 1076); a candidate replaces the best only when strictly better";
const REQUANTIZE: &str = "after the search every element is requantized with the fp16-rounded d·sc by division, not multiplication by an inverse; a sub-block with d·sc = 0 keeps the search's codes";
const K_IMATRIX: &str = "with an imatrix a different algorithm runs (quantize_row_*_impl: make_qkx3_quants or make_qx_quants weighted by qw·√(σ² + x²), sub-scales by make_qp_quants / make_qx_quants) rather than the reference path";

const QUIRKS_Q4_0: &[&str] = &[Q40_Q50, Q40_Q50_IMATRIX, FP16_SCALES];
const QUIRKS_Q4_1: &[&str] = &[Q41_Q51, Q41_Q51_IMATRIX, FP16_SCALES];
const QUIRKS_Q8_0: &[&str] = &[
    "codes roundf(x/d), half away from zero (ggml-quants.c l. 276)",
    "the imatrix is ignored (quantize_q8_0, l. 2295)",
    FP16_SCALES,
];
const QUIRKS_Q2_K: &[&str] = &[
    "reference path: weights |x| and an absolute-error search (make_qkx2_quants with use_mad, rmin −0.5, 15 steps); 4-bit sub-scales and mins by nearest_int(15/max·v) without clamp (l. 891)",
    "imatrix path: σ² = Σx²/256, without the factor 2 of Q3_K…Q5_K (l. 1149)",
    NEAREST_INT,
    SEARCHES,
    REQUANTIZE,
    K_IMATRIX,
];
const QUIRKS_Q3_K: &[&str] = &[
    "reference path: make_q3_quants with 5 passes of coordinate descent; sub-scales from the signed scale of largest magnitude, iscale = −32/max_scale, clamped −32…31 (l. 697, 1229)",
    "imatrix path: the 16 sub-scales are themselves fitted by make_qx_quants(…, sw), whose scale becomes d (l. 1355)",
    NEAREST_INT,
    SEARCHES,
    REQUANTIZE,
];
const QUIRKS_Q4_K: &[&str] = &[
    "reference path: weights √(Σx²/32) + |x|, make_qkx2_quants (rmin −1, rdelta 0.1, 20 steps); 6-bit sub-scales and mins min(63, nearest_int(63/max·v)) (l. 1457)",
    "imatrix path: the sub-scales' codes from make_qp_quants are stored without the min(63) Q5_K applies (l. 1588 vs 1798)",
    NEAREST_INT,
    SEARCHES,
    REQUANTIZE,
    K_IMATRIX,
];
const QUIRKS_Q5_K: &[&str] = &[
    "reference path: weights √(Σx²/32) + |x|, make_qkx2_quants (rmin −0.5, rdelta 0.1, 15 steps) (l. 1644)",
    NEAREST_INT,
    SEARCHES,
    REQUANTIZE,
    K_IMATRIX,
];
const QUIRKS_Q6_K: &[&str] = &[
    "a super-block whose sub-scales are all below 1e-15 is zeroed; sub-scales min(127, nearest_int(−128/max_scale·s)) (l. 1869)",
    "imatrix path: the raw importances are the weights; the √(σ² + x²) factor is commented out (l. 1970)",
    NEAREST_INT,
    SEARCHES,
    REQUANTIZE,
];

const QUIRKS_MXFP4: &[&str] = &[
    "best_index_mxfp4 is a linear argmin with strict <: a tie takes the first index, the smaller magnitude (1.5 → 1, −2.5 → −2), not round-half-to-even (ggml-quants.c l. 337)",
    "e = ⌊log2f(amax)⌋ − 2 + 127 with log2f rounded to float32 first, so an amax a hair below 2^k counts as 2^k; d = 2^(e − 128) against the doubled E2M1 table (l. 350; ggml-impl.h l. 489)",
    "the imatrix is ignored (quantize_mxfp4, l. 2302–2304)",
];

const QUIRKS_IQ4_NL: &[&str] = &[
    "best_index_int8 sends a value exactly between two table entries to the upper one (ggml-quants.c l. 28)",
    "quantize_iq4_nl runs 15 extra scale candidates (ntry = 7), quantize_row_iq4_nl_ref none (ntry = −1): llama.cpp uses the former (l. 5062 vs 5082)",
    "codes are chosen with 1/d of the float32 least-squares d, while fp16(d) is stored (l. 5032–5036)",
];

const QUIRKS_IQ4_XS: &[&str] = &[
    "each block of 32 finds its scale as IQ4_NL does (15 extra candidates), with σ² = Σx²·(2/256) over the whole super-block (quantize_row_iq4_nl_impl, ggml-quants.c l. 4937)",
    "d = −max_scale/32 from the block scale of largest magnitude (the first on a tie); sub-scales clamp(nearest_int(s/d), −32, 31) + 32, the low nibbles in scales_l and the high 2 bits in scales_h",
    "the codes are re-chosen with 1/(d·l) of the float32 d, while fp16(d) is stored; best_index_int8 sends a tie to the upper table entry (l. 28)",
    "without an imatrix the same function runs with weights x² (quantize_row_iq4_xs_ref calls quantize_iq4_xs)",
];

const IQ_SIGNS: &str = "one sign bit per value, 7 stored per group of 8: the eighth comes from ksigns_iq2xs, which makes the number of minus signs even";
const IQ_GRIDS: &str = "the codebooks (iq2xxs_grid, iq2xs_grid, iq2s_grid, iq3xxs_grid, iq3s_grid, iq1s_grid) are the tables of ggml-common.h, kept as data in formats/ggml/grids.rs";
const IQ_ORDER: &str = "dequantized as (db·g)·±1 with db = (d·(0.5 + s))·0.25 (IQ3_XXS: ·0.5) in float32, one rounding per product, no FMA";
const IQ_TABLES: &str = "the search's map and neighbour lists are iq2xs_init_impl / iq3xs_init_impl's: off-grid levels get every grid point of the nwant smallest squared distances, in (distance, index) order (built once, on first use)";
const IQ_SEARCH: &str = "levels clamp(nearest_int(0.5·(id·|x| − 1)), 0, kmax − 1) for candidate inverse scales; an off-grid group takes the neighbour of least Σ√w·(s·q − |x|)² (iq2/iq3_find_best_neighbour, first strictly smaller); a candidate's least-squares scale is kept when (Σwxq)² > best·Σwq², strictly";
const IQ_PARITY: &str = "with an odd number of negatives in a group of 8, the element of least w·x² keeps its sign inside the magnitude (it is searched as −|x|), so the stored 7 bits stay even";
const IQ_SCALE_CODES: &str = "block scales as 4-bit codes clamp(nearest_int(0.5·(s/d − 1)), 0, 15) with d = max_scale/31 in float32, while the stored fp16 may carry a fudge factor";
const IQ_ABORTS: &str = "an input on which ggml would abort (GGML_ASSERT: no finite neighbour distance, a NaN scale — only with overflowing values or importances) is refused with an error";

const QUIRKS_IQ2_XXS: &[&str] = &[
    "per block of 32 one u32 of 4 grid bytes and one of 4×7 sign bits with the 4-bit scale in bits 28–31 (dequantize_row_iq2_xxs)",
    "requires an imatrix (ggml_quantize_requires_imatrix); σ² = Σx²/256, weights qw·√(σ² + x²) (quantize_row_iq2_xxs_impl)",
    "the search starts from make_qp_quants(nmax 4) of the magnitudes: candidates id = (5 + 0.1·is)/(3·s0), is = −6…6, then every group re-chosen with 1/scale and the scale refitted",
    IQ_PARITY,
    IQ_SEARCH,
    IQ_SCALE_CODES,
    IQ_SIGNS,
    IQ_ORDER,
    IQ_GRIDS,
    IQ_TABLES,
    IQ_ABORTS,
];
const QUIRKS_IQ2_XS: &[&str] = &[
    "u16 per group of 8: a 9-bit grid index and 7 sign bits; two 4-bit scales per block of 32, one per 16 (dequantize_row_iq2_xs)",
    "requires an imatrix (ggml_quantize_requires_imatrix); σ² = Σx²/256; blocks of 16 start from max/5, candidates id = (5 + 0.1·is)/max, is = −9…9, then only the off-grid groups re-chosen (quantize_row_iq2_xs_impl)",
    IQ_PARITY,
    IQ_SEARCH,
    IQ_SCALE_CODES,
    IQ_SIGNS,
    IQ_ORDER,
    IQ_GRIDS,
    IQ_TABLES,
    IQ_ABORTS,
];
const QUIRKS_IQ2_S: &[&str] = &[
    "10-bit grid index (low byte, 2 high bits in qh), a full sign byte per 8 (no parity rule), two 4-bit scales per 32 (dequantize_row_iq2_s)",
    "σ² = 2·Σx²/256; weights qw·√(σ² + x²), or σ²/4 + x² without an imatrix; a block of 16 below 1e-8 is zero; neighbour lists keep one distance (nwant 1); d stored as fp16(0.9875·d) (quantize_row_iq2_s_impl)",
    IQ_SEARCH,
    IQ_SCALE_CODES,
    IQ_ORDER,
    IQ_GRIDS,
    IQ_TABLES,
    IQ_ABORTS,
];
const QUIRKS_IQ3_XXS: &[&str] = &[
    "one grid byte per 4 values, 4×7 sign bits and a 4-bit scale per block of 32; db = d·(0.5 + s)·0.5 (dequantize_row_iq3_xxs)",
    "σ² = 2·Σx²/256, weights qw·√(σ² + x²) or x²; a block below 1e-8 is zero; candidates id = (15 + 0.2·is)/max, is = −15…15, then the off-grid groups re-chosen; d stored as fp16(1.0125·d) (quantize_row_iq3_xxs_impl)",
    IQ_PARITY,
    IQ_SEARCH,
    IQ_SCALE_CODES,
    IQ_SIGNS,
    IQ_ORDER,
    IQ_GRIDS,
    IQ_TABLES,
    IQ_ABORTS,
];
const QUIRKS_IQ3_S: &[&str] = &[
    "9-bit grid index per 4 values (the 9th bit in qh), a full sign byte per 8, odd scales d·(1 + 2s) per 32 (dequantize_row_iq3_s)",
    "only an exactly-zero block is skipped, and the grid-byte and sign-byte write positions then do not advance: the next block's bytes take the zero block's slots (quantize_row_iq3_s_impl)",
    "candidates id = (15 + 0.2·is)/max, is = −9…9; the on-grid flags start false and the skip for on-grid groups is commented out, so every group is re-chosen whenever one was off the grid; d stored as fp16(1.033·d)",
    IQ_SEARCH,
    IQ_SCALE_CODES,
    IQ_GRIDS,
    IQ_TABLES,
    IQ_ABORTS,
];
const QUIRKS_IQ1_S: &[&str] = &[
    "values dl·(g + δ), g ∈ {−1, 0, 1} from an 11-bit iq1s_grid index, δ = ±1/8 per block of 32 (bit 15 of qh), dl = d·(2s + 1) (dequantize_row_iq1_s)",
    "requires an imatrix (ggml_quantize_requires_imatrix); every split of the sorted block into three levels is tried, for both shifts, from float32 prefix sums; the sort is glibc's stable merge sort (quantize_row_iq1_s_impl)",
    "an off-grid group takes the neighbour of least Σw·(s·v − x)² (iq1_find_best_neighbour2), then the block scale is refitted when both sums are positive; d = max_scale/15 stored as fp16(1.125·d), 3-bit codes",
    IQ_GRIDS,
    IQ_TABLES,
    IQ_ABORTS,
];
const QUIRKS_IQ1_M: &[&str] = &[
    "no fp16 field: d's 16 bits are the top nibbles of the four u16 scale words; 3-bit scales per 16 and a shift δ = ±1/8 per 8 (dequantize_row_iq1_m)",
    "blocks of 16: every split of the sorted values into three levels for the four shift pairs, each sum accumulated element by element in sorted order; weights qw·√(σ² + x²) or x² (quantize_row_iq1_m_impl)",
    "d is refitted over the whole super-block with the stored codes, Σw·q·x/Σw·q² with q = v·(2·code + 1), and stored as fp16(1.1125·d)",
    IQ_GRIDS,
    IQ_TABLES,
    IQ_ABORTS,
];
const TERNARY: &str = "d = amax of the super-block, trits lroundf(x·(1/d)) + 1 — round half away from zero, so |x| ≥ amax/2 becomes ±d; the imatrix is ignored (quantize_tq1_0, quantize_tq2_0)";
const QUIRKS_TQ1_0: &[&str] = &[
    TERNARY,
    "five trits per byte stored as ⌈q·256/243⌉ (a fixed-point fraction of 3⁵) and read back as ((q·3ⁿ mod 256)·3) >> 8; elements m, m+32, … in the first 32 bytes, m, m+16, … in the next 16, four per byte in qh (quantize_row_tq1_0_ref)",
    "a super-block so small that 1/d overflows gets lroundf(±∞ or NaN) = LONG_MIN on x86-64 glibc, i.e. code 0: it stores zeros",
    FP16_SCALES,
];
const QUIRKS_TQ2_0: &[&str] = &[
    TERNARY,
    "2-bit codes, element m + 32n of each 128 in bits 2n of byte m; code 3 (never written) decodes to 2d",
    FP16_SCALES,
];
const QUIRKS_NVFP4: &[&str] = &[
    "blocks of 64 in four sub-blocks of 16, each with a UE4M3 scale ggml_fp32_to_ue4m3(amax/6): 3 mantissa bits rounded half up, saturating at 448 (0x7E), subnormals (int)(x·512 + 0.5) (ggml-impl.h)",
    "ggml_ue4m3_to_fp32 returns half the E4M3 value (0x7F reads as 0, bit 7 is ignored) to pair with the doubled E2M1 table of MXFP4",
    "codes by best_index_mxfp4, the first index of smallest error (ties to the smaller magnitude), as MXFP4; the imatrix is ignored",
];
const QUIRKS_Q1_0: &[&str] = &[
    "blocks of 128: d = Σ|x|/128 (the mean magnitude, float32 sum in order) as fp16, one bit per value set when x ≥ 0 (−0.0 too); values ±d (quantize_row_q1_0_ref)",
    "the imatrix is ignored (quantize_q1_0)",
    FP16_SCALES,
];

/// Why a type is decode-only in quantscope (its encoder is not reproduced), or `None`: every
/// ggml type encodes.
pub fn decode_only(_ty: GgmlType) -> Option<&'static str> {
    None
}

/// The quirks of `ty` reproduced, each with the source line it comes from.
pub fn quirks(ty: GgmlType) -> &'static [&'static str] {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 => QUIRKS_Q4_0,
        GgmlType::Q4_1 | GgmlType::Q5_1 => QUIRKS_Q4_1,
        GgmlType::Q8_0 => QUIRKS_Q8_0,
        GgmlType::Q2_K => QUIRKS_Q2_K,
        GgmlType::Q3_K => QUIRKS_Q3_K,
        GgmlType::Q4_K => QUIRKS_Q4_K,
        GgmlType::Q5_K => QUIRKS_Q5_K,
        GgmlType::Q6_K => QUIRKS_Q6_K,
        GgmlType::MXFP4 => QUIRKS_MXFP4,
        GgmlType::IQ4_NL => QUIRKS_IQ4_NL,
        GgmlType::IQ4_XS => QUIRKS_IQ4_XS,
        GgmlType::IQ2_XXS => QUIRKS_IQ2_XXS,
        GgmlType::IQ2_XS => QUIRKS_IQ2_XS,
        GgmlType::IQ2_S => QUIRKS_IQ2_S,
        GgmlType::IQ3_XXS => QUIRKS_IQ3_XXS,
        GgmlType::IQ3_S => QUIRKS_IQ3_S,
        GgmlType::IQ1_S => QUIRKS_IQ1_S,
        GgmlType::IQ1_M => QUIRKS_IQ1_M,
        GgmlType::TQ1_0 => QUIRKS_TQ1_0,
        GgmlType::TQ2_0 => QUIRKS_TQ2_0,
        GgmlType::NVFP4 => QUIRKS_NVFP4,
        GgmlType::Q1_0 => QUIRKS_Q1_0,
    }
}

/// One line on what `ty` stores.
pub fn summary(ty: GgmlType) -> &'static str {
    match ty {
        GgmlType::Q4_0 => "llama.cpp Q4_0: blocks of 32, fp16 scale, 4-bit codes (4.5 bits)",
        GgmlType::Q4_1 => "llama.cpp Q4_1: blocks of 32, fp16 scale and min, 4-bit codes (5 bits)",
        GgmlType::Q5_0 => "llama.cpp Q5_0: blocks of 32, fp16 scale, 5-bit codes (5.5 bits)",
        GgmlType::Q5_1 => "llama.cpp Q5_1: blocks of 32, fp16 scale and min, 5-bit codes (6 bits)",
        GgmlType::Q8_0 => "llama.cpp Q8_0: blocks of 32, fp16 scale, int8 codes (8.5 bits)",
        GgmlType::Q2_K => {
            "llama.cpp Q2_K: super-blocks of 256, 4-bit sub-scales and mins, 2-bit codes (2.625 bits)"
        }
        GgmlType::Q3_K => {
            "llama.cpp Q3_K: super-blocks of 256, 6-bit sub-scales, 3-bit codes (3.4375 bits)"
        }
        GgmlType::Q4_K => {
            "llama.cpp Q4_K: super-blocks of 256, 6-bit sub-scales and mins, 4-bit codes (4.5 bits)"
        }
        GgmlType::Q5_K => {
            "llama.cpp Q5_K: super-blocks of 256, 6-bit sub-scales and mins, 5-bit codes (5.5 bits)"
        }
        GgmlType::Q6_K => {
            "llama.cpp Q6_K: super-blocks of 256, int8 sub-scales, 6-bit codes (6.5625 bits)"
        }
        GgmlType::MXFP4 => "ggml MXFP4: blocks of 32, E8M0 scale, E2M1 codes (4.25 bits)",
        GgmlType::IQ4_NL => {
            "llama.cpp IQ4_NL: blocks of 32, fp16 scale, non-linear 4-bit table (4.5 bits)"
        }
        GgmlType::IQ4_XS => {
            "llama.cpp IQ4_XS: super-blocks of 256, 6-bit sub-scales, non-linear 4-bit table (4.25 bits)"
        }
        GgmlType::IQ2_XXS => {
            "llama.cpp IQ2_XXS: super-blocks of 256, 8 values per 8-bit grid index, 4-bit scales per 32 (2.0625 bits; needs an imatrix)"
        }
        GgmlType::IQ2_XS => {
            "llama.cpp IQ2_XS: super-blocks of 256, 8 values per 9-bit grid index, 4-bit scales per 16 (2.3125 bits; needs an imatrix)"
        }
        GgmlType::IQ2_S => {
            "llama.cpp IQ2_S: super-blocks of 256, 8 values per 10-bit grid index, 4-bit scales per 16 (2.5625 bits)"
        }
        GgmlType::IQ3_XXS => {
            "llama.cpp IQ3_XXS: super-blocks of 256, 4 values per 8-bit grid index, 4-bit scales per 32 (3.0625 bits)"
        }
        GgmlType::IQ3_S => {
            "llama.cpp IQ3_S: super-blocks of 256, 4 values per 9-bit grid index, 4-bit scales per 32 (3.4375 bits)"
        }
        GgmlType::IQ1_S => {
            "llama.cpp IQ1_S: super-blocks of 256, 8 ternary values per 11-bit grid index, 3-bit scales per 32 (1.5625 bits; needs an imatrix)"
        }
        GgmlType::IQ1_M => {
            "llama.cpp IQ1_M: super-blocks of 256, 8 ternary values per 11-bit grid index, 3-bit scales per 16 (1.75 bits)"
        }
        GgmlType::TQ1_0 => {
            "llama.cpp TQ1_0: super-blocks of 256, fp16 scale, ternary codes five per byte (1.6875 bits)"
        }
        GgmlType::TQ2_0 => {
            "llama.cpp TQ2_0: super-blocks of 256, fp16 scale, ternary 2-bit codes (2.0625 bits)"
        }
        GgmlType::NVFP4 => {
            "ggml NVFP4: blocks of 64, UE4M3 scales per 16, E2M1 codes (4.5 bits)"
        }
        GgmlType::Q1_0 => "ggml Q1_0: blocks of 128, fp16 scale, sign bits (1.125 bits)",
    }
}
