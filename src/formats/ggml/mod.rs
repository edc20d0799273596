//! llama.cpp / ggml block quantization, bit for bit: the reference C quantizers of
//! `ggml-quants.c` at ggml-org/ggml `d99724f2` (= llama.cpp `d3cf1f14`), which write the
//! blocks of a GGUF file, and their dequantizers.
//!
//! A tensor is a sequence of rows of `n_per_row` values (ggml's `ne[0]`, the last axis of a
//! row-major array); each row is cut into blocks of 32 ([`legacy`], [`nonlinear`]) or
//! super-blocks of 256 values (the k-quants), each stored as a fixed number of bytes holding
//! its fp16 scales ([`fp16`]) and packed integer codes. Bits per value count everything:
//! `8·block_bytes/block_elems`.
//!
//! `quantize_<type>(src, dst, nrows, n_per_row, imatrix)` (what llama.cpp's
//! `ggml_quantize_chunk` calls) runs one of two different algorithms:
//! * without an importance matrix, `quantize_row_<type>_ref` over the whole matrix — every block
//!   on its own, so the result depends only on the flattened values;
//! * with one (`imatrix`: one non-negative weight per column, the same for every row),
//!   `quantize_row_<type>_impl` row by row; the legacy types also use the row's `Σx²`, so a block
//!   depends on its row. Q8_0 and MXFP4 ignore the imatrix.
//!
//! The lattice i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) run one
//! `quantize_row_<type>_impl` either way (weights from the imatrix, or from the data), a search
//! of a codebook per super-block ([`iq_lattice`], [`iq_search`], [`iq2_quant`], [`iq3_quant`],
//! [`iq1_quant`]); IQ2_XXS, IQ2_XS and IQ1_S have no path without an imatrix.
//!
//! Float arithmetic is float32 with one rounding per operation, in the C evaluation order;
//! nothing is fused (the golden data were built with `-ffp-contract=off`, as ggml-base is built
//! by default on x86-64; an FMA-contracting build differs in a few blocks). Rounding follows
//! three rules depending on the path (see [`legacy`] and [`search::nearest_int`]).

pub mod facts;
pub mod fp16;
pub mod grids;
pub mod iq;
pub mod iq1_quant;
pub mod iq2_quant;
pub mod iq3_quant;
pub mod iq_lattice;
pub mod iq_search;
pub mod legacy;
pub mod low_bit;
pub mod nonlinear;
pub mod q2_k;
pub mod q3_k;
pub mod q45_k;
pub mod q6_k;
pub mod search;
pub mod sub_blocks;

use crate::error::{Error, Result};
use legacy::Legacy;
use q45_k::K45;
use serde::Serialize;

/// Values per k-quant super-block (`QK_K`).
pub const QK_K: usize = 256;

/// A ggml quantization type.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum GgmlType {
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    MXFP4,
    IQ4_NL,
    IQ4_XS,
    IQ2_XXS,
    IQ2_XS,
    IQ2_S,
    IQ3_XXS,
    IQ3_S,
    IQ1_S,
    IQ1_M,
    TQ1_0,
    TQ2_0,
    NVFP4,
    Q1_0,
}

impl GgmlType {
    /// Every supported type: the first thirteen in ggml's order of appearance, then the
    /// i-quants, ternary and newer types.
    pub const ALL: [GgmlType; 24] = [
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::MXFP4,
        GgmlType::IQ4_NL,
        GgmlType::IQ4_XS,
        GgmlType::IQ2_XXS,
        GgmlType::IQ2_XS,
        GgmlType::IQ2_S,
        GgmlType::IQ3_XXS,
        GgmlType::IQ3_S,
        GgmlType::IQ1_S,
        GgmlType::IQ1_M,
        GgmlType::TQ1_0,
        GgmlType::TQ2_0,
        GgmlType::NVFP4,
        GgmlType::Q1_0,
    ];

    /// ggml's name (`Q4_0`, `Q4_K`, `MXFP4`, …).
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::Q4_0 => "Q4_0",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q5_0 => "Q5_0",
            GgmlType::Q5_1 => "Q5_1",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q2_K => "Q2_K",
            GgmlType::Q3_K => "Q3_K",
            GgmlType::Q4_K => "Q4_K",
            GgmlType::Q5_K => "Q5_K",
            GgmlType::Q6_K => "Q6_K",
            GgmlType::MXFP4 => "MXFP4",
            GgmlType::IQ4_NL => "IQ4_NL",
            GgmlType::IQ4_XS => "IQ4_XS",
            GgmlType::IQ2_XXS => "IQ2_XXS",
            GgmlType::IQ2_XS => "IQ2_XS",
            GgmlType::IQ2_S => "IQ2_S",
            GgmlType::IQ3_XXS => "IQ3_XXS",
            GgmlType::IQ3_S => "IQ3_S",
            GgmlType::IQ1_S => "IQ1_S",
            GgmlType::IQ1_M => "IQ1_M",
            GgmlType::TQ1_0 => "TQ1_0",
            GgmlType::TQ2_0 => "TQ2_0",
            GgmlType::NVFP4 => "NVFP4",
            GgmlType::Q1_0 => "Q1_0",
        }
    }

    /// The codec id: `ggml.` and the name.
    pub fn id(self) -> &'static str {
        match self {
            GgmlType::Q4_0 => "ggml.Q4_0",
            GgmlType::Q4_1 => "ggml.Q4_1",
            GgmlType::Q5_0 => "ggml.Q5_0",
            GgmlType::Q5_1 => "ggml.Q5_1",
            GgmlType::Q8_0 => "ggml.Q8_0",
            GgmlType::Q2_K => "ggml.Q2_K",
            GgmlType::Q3_K => "ggml.Q3_K",
            GgmlType::Q4_K => "ggml.Q4_K",
            GgmlType::Q5_K => "ggml.Q5_K",
            GgmlType::Q6_K => "ggml.Q6_K",
            GgmlType::MXFP4 => "ggml.MXFP4",
            GgmlType::IQ4_NL => "ggml.IQ4_NL",
            GgmlType::IQ4_XS => "ggml.IQ4_XS",
            GgmlType::IQ2_XXS => "ggml.IQ2_XXS",
            GgmlType::IQ2_XS => "ggml.IQ2_XS",
            GgmlType::IQ2_S => "ggml.IQ2_S",
            GgmlType::IQ3_XXS => "ggml.IQ3_XXS",
            GgmlType::IQ3_S => "ggml.IQ3_S",
            GgmlType::IQ1_S => "ggml.IQ1_S",
            GgmlType::IQ1_M => "ggml.IQ1_M",
            GgmlType::TQ1_0 => "ggml.TQ1_0",
            GgmlType::TQ2_0 => "ggml.TQ2_0",
            GgmlType::NVFP4 => "ggml.NVFP4",
            GgmlType::Q1_0 => "ggml.Q1_0",
        }
    }

    /// The type of codec id `ggml.<name>`.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.id() == id)
    }

    /// Parse a name (case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    fn legacy(self) -> Option<Legacy> {
        Some(match self {
            GgmlType::Q4_0 => Legacy::Q4_0,
            GgmlType::Q4_1 => Legacy::Q4_1,
            GgmlType::Q5_0 => Legacy::Q5_0,
            GgmlType::Q5_1 => Legacy::Q5_1,
            GgmlType::Q8_0 => Legacy::Q8_0,
            _ => return None,
        })
    }

    /// Values per block.
    pub fn block_elems(self) -> usize {
        match self {
            GgmlType::Q2_K
            | GgmlType::Q3_K
            | GgmlType::Q4_K
            | GgmlType::Q5_K
            | GgmlType::Q6_K
            | GgmlType::IQ4_XS
            | GgmlType::IQ2_XXS
            | GgmlType::IQ2_XS
            | GgmlType::IQ2_S
            | GgmlType::IQ3_XXS
            | GgmlType::IQ3_S
            | GgmlType::IQ1_S
            | GgmlType::IQ1_M
            | GgmlType::TQ1_0
            | GgmlType::TQ2_0 => QK_K,
            GgmlType::NVFP4 => nonlinear::QK_NVFP4,
            GgmlType::Q1_0 => low_bit::QK1_0,
            _ => 32,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::Q2_K => q2_k::BLOCK_BYTES,
            GgmlType::Q3_K => q3_k::BLOCK_BYTES,
            GgmlType::Q4_K => K45::Q4K.block_bytes(),
            GgmlType::Q5_K => K45::Q5K.block_bytes(),
            GgmlType::Q6_K => q6_k::BLOCK_BYTES,
            GgmlType::MXFP4 => nonlinear::MXFP4_BYTES,
            GgmlType::IQ4_NL => nonlinear::IQ4_NL_BYTES,
            GgmlType::IQ4_XS => nonlinear::IQ4_XS_BYTES,
            GgmlType::IQ2_XXS => iq::IQ2_XXS_BYTES,
            GgmlType::IQ2_XS => iq::IQ2_XS_BYTES,
            GgmlType::IQ2_S => iq::IQ2_S_BYTES,
            GgmlType::IQ3_XXS => iq::IQ3_XXS_BYTES,
            GgmlType::IQ3_S => iq::IQ3_S_BYTES,
            GgmlType::IQ1_S => iq::IQ1_S_BYTES,
            GgmlType::IQ1_M => iq::IQ1_M_BYTES,
            GgmlType::TQ1_0 => low_bit::TQ1_0_BYTES,
            GgmlType::TQ2_0 => low_bit::TQ2_0_BYTES,
            GgmlType::NVFP4 => nonlinear::NVFP4_BYTES,
            GgmlType::Q1_0 => low_bit::Q1_0_BYTES,
            t => t.legacy().map_or(0, Legacy::block_bytes),
        }
    }

    /// Storage per value, every scale included: `8·block_bytes/block_elems` (4.5 for Q4_0 and
    /// Q4_K, 6.5625 for Q6_K, 4.25 for MXFP4).
    pub fn bits_per_value(self) -> f64 {
        (8 * self.block_bytes()) as f64 / self.block_elems() as f64
    }

    /// Whether `quantize_<type>` uses an importance matrix (Q8_0, MXFP4, NVFP4, TQ1_0, TQ2_0
    /// and Q1_0 ignore it).
    pub fn uses_imatrix(self) -> bool {
        !matches!(
            self,
            GgmlType::Q8_0
                | GgmlType::MXFP4
                | GgmlType::NVFP4
                | GgmlType::TQ1_0
                | GgmlType::TQ2_0
                | GgmlType::Q1_0
        )
    }

    /// Whether quantscope reproduces the type's quantizer (every type does;
    /// [`facts::decode_only`] would say why one does not).
    pub fn encodes(self) -> bool {
        facts::decode_only(self).is_none()
    }

    /// Whether ggml refuses to quantize the type without an importance matrix
    /// (`ggml_quantize_requires_imatrix`: IQ2_XXS, IQ2_XS, IQ1_S).
    pub fn requires_imatrix(self) -> bool {
        matches!(self, GgmlType::IQ2_XXS | GgmlType::IQ2_XS | GgmlType::IQ1_S)
    }

    /// The i-quants on lattice grids (IQ1_S, IQ1_M, IQ2_*, IQ3_*), whose quantizers search a
    /// codebook ([`iq_search`], [`iq1_quant`]) and can refuse an input ggml would abort on.
    pub fn is_lattice(self) -> bool {
        matches!(
            self,
            GgmlType::IQ2_XXS
                | GgmlType::IQ2_XS
                | GgmlType::IQ2_S
                | GgmlType::IQ3_XXS
                | GgmlType::IQ3_S
                | GgmlType::IQ1_S
                | GgmlType::IQ1_M
        )
    }

    /// Quantize one lattice i-quant super-block (`qw`: its 256 importances, if any; the
    /// types that require one are refused earlier without it).
    fn quantize_lattice_block(
        self,
        x: &[f32],
        qw: Option<&[f32]>,
        out: &mut [u8],
    ) -> std::result::Result<(), iq_search::Abort> {
        const MISSING: iq_search::Abort =
            iq_search::Abort("missing quantization weights (GGML_ASSERT(quant_weights))");
        match self {
            GgmlType::IQ2_XXS => iq2_quant::quantize_iq2_xxs_block(x, qw.ok_or(MISSING)?, out),
            GgmlType::IQ2_XS => iq2_quant::quantize_iq2_xs_block(x, qw.ok_or(MISSING)?, out),
            GgmlType::IQ2_S => iq2_quant::quantize_iq2_s_block(x, qw, out),
            GgmlType::IQ3_XXS => iq3_quant::quantize_iq3_xxs_block(x, qw, out),
            GgmlType::IQ3_S => iq3_quant::quantize_iq3_s_block(x, qw, out),
            GgmlType::IQ1_S => iq1_quant::quantize_iq1_s_block(x, qw.ok_or(MISSING)?, out),
            GgmlType::IQ1_M => iq1_quant::quantize_iq1_m_block(x, qw, out),
            _ => Ok(()),
        }
    }

    /// Values sharing one set of scales (one representable range): a block, or a sub-block.
    pub fn range_group(self) -> usize {
        match self {
            GgmlType::Q2_K
            | GgmlType::Q3_K
            | GgmlType::Q6_K
            | GgmlType::IQ2_XS
            | GgmlType::IQ2_S
            | GgmlType::NVFP4 => 16,
            GgmlType::IQ1_M => 8,
            GgmlType::TQ1_0 | GgmlType::TQ2_0 => QK_K,
            GgmlType::Q1_0 => low_bit::QK1_0,
            _ => 32,
        }
    }

    /// Quantize one block without an imatrix.
    fn quantize_block(self, x: &[f32], out: &mut [u8]) {
        match self {
            GgmlType::Q2_K => q2_k::quantize_block_ref(x, out),
            GgmlType::Q3_K => q3_k::quantize_block_ref(x, out),
            GgmlType::Q4_K => K45::Q4K.quantize_block_ref(x, out),
            GgmlType::Q5_K => K45::Q5K.quantize_block_ref(x, out),
            GgmlType::Q6_K => q6_k::quantize_block(x, None, out),
            GgmlType::MXFP4 => nonlinear::quantize_mxfp4_block(x, out),
            GgmlType::IQ4_NL => nonlinear::quantize_iq4_nl_block(x, None, out),
            GgmlType::IQ4_XS => nonlinear::quantize_iq4_xs_block(x, None, out),
            GgmlType::TQ1_0 => low_bit::quantize_tq1_0_block(x, out),
            GgmlType::TQ2_0 => low_bit::quantize_tq2_0_block(x, out),
            GgmlType::NVFP4 => nonlinear::quantize_nvfp4_block(x, out),
            GgmlType::Q1_0 => low_bit::quantize_q1_0_block(x, out),
            t => {
                if let Some(l) = t.legacy() {
                    l.quantize_block_ref(x, out)
                }
            }
        }
    }

    /// Quantize one row with an imatrix of the row's length.
    fn quantize_row_imatrix(self, row: &[f32], imatrix: &[f32], out: &mut [u8]) {
        if let Some(l) = self.legacy() {
            return l.quantize_row_imatrix(row, imatrix, out);
        }
        let (n, bytes) = (self.block_elems(), self.block_bytes());
        let blocks = row
            .chunks(n)
            .zip(imatrix.chunks(n))
            .zip(out.chunks_mut(bytes));
        for ((x, qw), b) in blocks {
            match self {
                GgmlType::Q2_K => q2_k::quantize_block_imatrix(x, qw, b),
                GgmlType::Q3_K => q3_k::quantize_block_imatrix(x, qw, b),
                GgmlType::Q4_K => K45::Q4K.quantize_block_imatrix(x, qw, b),
                GgmlType::Q5_K => K45::Q5K.quantize_block_imatrix(x, qw, b),
                GgmlType::Q6_K => q6_k::quantize_block(x, Some(qw), b),
                GgmlType::IQ4_NL => nonlinear::quantize_iq4_nl_block(x, Some(qw), b),
                GgmlType::IQ4_XS => nonlinear::quantize_iq4_xs_block(x, Some(qw), b),
                _ => self.quantize_block(x, b),
            }
        }
    }

    /// Dequantize one block.
    fn dequantize_block(self, b: &[u8], y: &mut [f32]) {
        match self {
            GgmlType::Q2_K => q2_k::dequantize_block(b, y),
            GgmlType::Q3_K => q3_k::dequantize_block(b, y),
            GgmlType::Q4_K => K45::Q4K.dequantize_block(b, y),
            GgmlType::Q5_K => K45::Q5K.dequantize_block(b, y),
            GgmlType::Q6_K => q6_k::dequantize_block(b, y),
            GgmlType::MXFP4 => nonlinear::dequantize_mxfp4_block(b, y),
            GgmlType::IQ4_NL => nonlinear::dequantize_iq4_nl_block(b, y),
            GgmlType::IQ4_XS => nonlinear::dequantize_iq4_xs_block(b, y),
            GgmlType::IQ2_XXS => iq::dequantize_iq2_xxs_block(b, y),
            GgmlType::IQ2_XS => iq::dequantize_iq2_xs_block(b, y),
            GgmlType::IQ2_S => iq::dequantize_iq2_s_block(b, y),
            GgmlType::IQ3_XXS => iq::dequantize_iq3_xxs_block(b, y),
            GgmlType::IQ3_S => iq::dequantize_iq3_s_block(b, y),
            GgmlType::IQ1_S => iq::dequantize_iq1_s_block(b, y),
            GgmlType::IQ1_M => iq::dequantize_iq1_m_block(b, y),
            GgmlType::TQ1_0 => low_bit::dequantize_tq1_0_block(b, y),
            GgmlType::TQ2_0 => low_bit::dequantize_tq2_0_block(b, y),
            GgmlType::NVFP4 => nonlinear::dequantize_nvfp4_block(b, y),
            GgmlType::Q1_0 => low_bit::dequantize_q1_0_block(b, y),
            t => {
                if let Some(l) = t.legacy() {
                    l.dequantize_block(b, y)
                }
            }
        }
    }

    /// Append the representable range of each [`range_group`](Self::range_group) of a block.
    fn block_ranges(self, b: &[u8], out: &mut Vec<(f32, f32)>) {
        match self {
            GgmlType::Q2_K => q2_k::ranges(b, out),
            GgmlType::Q3_K => q3_k::ranges(b, out),
            GgmlType::Q4_K => K45::Q4K.ranges(b, out),
            GgmlType::Q5_K => K45::Q5K.ranges(b, out),
            GgmlType::Q6_K => q6_k::ranges(b, out),
            GgmlType::MXFP4 => out.push(nonlinear::mxfp4_range(b)),
            GgmlType::IQ4_NL => out.push(nonlinear::iq4_nl_range(b)),
            GgmlType::IQ4_XS => nonlinear::iq4_xs_ranges(b, out),
            GgmlType::IQ2_XXS => iq::iq2_xxs_ranges(b, out),
            GgmlType::IQ2_XS => iq::iq2_xs_ranges(b, out),
            GgmlType::IQ2_S => iq::iq2_s_ranges(b, out),
            GgmlType::IQ3_XXS => iq::iq3_xxs_ranges(b, out),
            GgmlType::IQ3_S => iq::iq3_s_ranges(b, out),
            GgmlType::IQ1_S => iq::iq1_s_ranges(b, out),
            GgmlType::IQ1_M => iq::iq1_m_ranges(b, out),
            GgmlType::TQ1_0 => out.push(low_bit::tq1_0_range(b)),
            GgmlType::TQ2_0 => out.push(low_bit::tq2_0_range(b)),
            GgmlType::NVFP4 => nonlinear::nvfp4_ranges(b, out),
            GgmlType::Q1_0 => out.push(low_bit::q1_0_range(b)),
            t => {
                if let Some(l) = t.legacy() {
                    out.push(l.block_range(b))
                }
            }
        }
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Refuse what ggml cannot quantize: empty or non-finite input, a length that is not a whole
/// number of blocks (of rows, with an imatrix), a bad imatrix.
fn validate(ty: GgmlType, data: &[f32], imatrix: Option<&[f32]>) -> Result<()> {
    if let Some(why) = facts::decode_only(ty) {
        return Err(Error::input(format!(
            "encoding {ty} {why}, which quantscope does not reproduce yet; its decoding is exact"
        )));
    }
    if data.is_empty() {
        return Err(Error::input(format!(
            "ggml {ty} cannot quantize an empty tensor"
        )));
    }
    let bad = crate::tensor::NonFiniteCounts::of(data).total();
    if bad > 0 {
        return Err(Error::input(format!(
            "ggml {ty}: the tensor has {bad} NaN/±Inf values; ggml's quantizers need finite input"
        )));
    }
    let block = ty.block_elems();
    if imatrix.is_none() && ty.requires_imatrix() {
        return Err(Error::param(
            "imatrix",
            format!("ggml cannot quantize {ty} without an importance matrix (ggml_quantize_requires_imatrix); pass the imatrix of the weight (one importance per column)"),
        ));
    }
    match imatrix {
        None if !data.len().is_multiple_of(block) => Err(Error::input(format!(
            "ggml {ty} quantizes blocks of {block} values; the tensor has {} values, not a multiple of {block}",
            data.len()
        ))),
        None => Ok(()),
        Some(im) => {
            let n = im.len();
            if n == 0 || n % block != 0 {
                return Err(Error::param(
                    "imatrix",
                    format!("ggml {ty} needs rows that are a multiple of {block} values; the imatrix has {n} entries (one per column)"),
                ));
            }
            if !data.len().is_multiple_of(n) {
                return Err(Error::param(
                    "imatrix",
                    format!("the imatrix has {n} entries (one per column) but the tensor's {} values are not whole rows of {n}", data.len()),
                ));
            }
            if let Some(v) = im.iter().find(|v| !v.is_finite()) {
                return Err(Error::param(
                    "imatrix",
                    format!("the importance values must be finite, got {v}"),
                ));
            }
            Ok(())
        }
    }
}

/// `quantize_<type>(data, imatrix)`: the ggml blocks of `data` (row-major; with an imatrix the
/// rows have `imatrix.len()` values). IQ2_XXS, IQ2_XS and IQ1_S are refused without an imatrix
/// ([`GgmlType::requires_imatrix`]); a lattice i-quant input ggml would abort on is refused.
pub fn quantize(ty: GgmlType, data: &[f32], imatrix: Option<&[f32]>) -> Result<Vec<u8>> {
    validate(ty, data, imatrix)?;
    let (n, bytes) = (ty.block_elems(), ty.block_bytes());
    let mut out = vec![0u8; data.len() / n * bytes];
    if ty.is_lattice() {
        // Super-blocks are independent (σ² is the super-block's); with an imatrix a block
        // takes the importances of its columns.
        for (i, (x, b)) in data.chunks(n).zip(out.chunks_mut(bytes)).enumerate() {
            let qw = imatrix.map(|im| {
                let column = i * n % im.len();
                &im[column..column + n]
            });
            ty.quantize_lattice_block(x, qw, b)
                .map_err(|iq_search::Abort(why)| {
                    Error::input(format!(
                        "ggml {ty} aborts on super-block {i} of this input: {why}; quantscope refuses it"
                    ))
                })?;
        }
        return Ok(out);
    }
    match imatrix {
        Some(im) if ty.uses_imatrix() => {
            let row_bytes = im.len() / n * bytes;
            for (row, b) in data.chunks(im.len()).zip(out.chunks_mut(row_bytes)) {
                ty.quantize_row_imatrix(row, im, b);
            }
        }
        _ => match ty.legacy() {
            Some(l) => legacy::quantize_blocks(l, data, &mut out),
            // Sub-blocks searched side by side, unless a derivation records each search.
            None if ty == GgmlType::Q6_K && crate::derivation::recording() => {
                for (x, b) in data.chunks(n).zip(out.chunks_mut(bytes)) {
                    q6_k::quantize_block(x, None, b);
                }
            }
            None if ty == GgmlType::Q6_K => crate::simd::with_wide_vectors(
                #[inline(always)]
                || {
                    for (x, b) in data.chunks(n).zip(out.chunks_mut(bytes)) {
                        q6_k::quantize_block_side_by_side(x, b);
                    }
                },
            ),
            None => {
                for (x, b) in data.chunks(n).zip(out.chunks_mut(bytes)) {
                    ty.quantize_block(x, b);
                }
            }
        },
    }
    Ok(out)
}

/// The ggml block `index` of `data` quantized on its own, exactly as [`quantize`] stores it in
/// the whole tensor: the block's values alone, except that the legacy types' imatrix path takes
/// its `σ²` from the whole row (their only dependence on other blocks). What a codec derivation
/// runs while recording.
pub fn quantize_one_block(
    ty: GgmlType,
    data: &[f32],
    imatrix: Option<&[f32]>,
    index: usize,
) -> Result<Vec<u8>> {
    validate(ty, data, imatrix)?;
    let n = ty.block_elems();
    let count = data.len() / n;
    if index >= count {
        return Err(Error::param(
            "block",
            format!(
                "the tensor has {count} blocks of {n} values (0…{})",
                count - 1
            ),
        ));
    }
    let x = &data[index * n..(index + 1) * n];
    match (imatrix, ty.legacy()) {
        (Some(im), Some(l)) => {
            let start = index * n / im.len() * im.len();
            let sigma2 = l.row_sigma2(&data[start..start + im.len()]);
            let column = index * n - start;
            let mut out = vec![0u8; ty.block_bytes()];
            l.quantize_block_imatrix(x, &im[column..column + n], sigma2, &mut out);
            Ok(out)
        }
        (Some(im), None) => {
            let column = index * n % im.len();
            quantize(ty, x, Some(&im[column..column + n]))
        }
        (None, _) => quantize(ty, x, None),
    }
}

fn check_blocks(ty: GgmlType, blocks: &[u8]) -> Result<()> {
    if !blocks.len().is_multiple_of(ty.block_bytes()) {
        return Err(Error::input(format!(
            "{} bytes are not whole {ty} blocks of {} bytes",
            blocks.len(),
            ty.block_bytes()
        )));
    }
    Ok(())
}

/// `dequantize_row_<type>`: the values of whole blocks.
pub fn dequantize(ty: GgmlType, blocks: &[u8]) -> Result<Vec<f32>> {
    check_blocks(ty, blocks)?;
    let n = ty.block_elems();
    let mut y = vec![0.0f32; blocks.len() / ty.block_bytes() * n];
    match ty.legacy() {
        Some(l) => legacy::dequantize_blocks(l, blocks, &mut y),
        None => {
            for (b, o) in blocks.chunks(ty.block_bytes()).zip(y.chunks_mut(n)) {
                ty.dequantize_block(b, o);
            }
        }
    }
    Ok(y)
}

/// The representable `(min, max)` of every group of [`GgmlType::range_group`] values, in order.
pub fn ranges(ty: GgmlType, blocks: &[u8]) -> Result<Vec<(f32, f32)>> {
    check_blocks(ty, blocks)?;
    let mut out = Vec::with_capacity(blocks.len() / ty.block_bytes() * 16);
    for b in blocks.chunks(ty.block_bytes()) {
        ty.block_ranges(b, &mut out);
    }
    Ok(out)
}

/// The scales stored in one block, decoded: what the golden data lists per block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockScales {
    /// `d` (fp16 as f32); MXFP4: the E8M0 byte `e`; NVFP4: 1 (its scales are `sub_scales`).
    pub d: f32,
    /// `m` (Q4_1, Q5_1) or `dmin` (Q2_K, Q4_K, Q5_K).
    pub min: Option<f32>,
    /// k-quants: the integer sub-block scales (Q3_K signed, already − 32); NVFP4: the four
    /// UE4M3 bytes.
    pub sub_scales: Vec<i32>,
    /// Q2_K, Q4_K, Q5_K: the integer sub-block mins.
    pub sub_mins: Vec<i32>,
}

/// Decode the scales of one block (`block.len() == ty.block_bytes()`).
pub fn block_scales(ty: GgmlType, block: &[u8]) -> Result<BlockScales> {
    if block.len() != ty.block_bytes() {
        return Err(Error::input(format!(
            "a {ty} block has {} bytes, got {}",
            ty.block_bytes(),
            block.len()
        )));
    }
    let simple = |d: f32, min: Option<f32>| BlockScales {
        d,
        min,
        sub_scales: Vec::new(),
        sub_mins: Vec::new(),
    };
    Ok(match ty {
        GgmlType::Q2_K => {
            let (d, dmin, s, m) = q2_k::decode_scales(block);
            BlockScales {
                d,
                min: Some(dmin),
                sub_scales: s,
                sub_mins: m,
            }
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let (d, dmin, s, m) = q45_k::decode_scales(block);
            BlockScales {
                d,
                min: Some(dmin),
                sub_scales: s,
                sub_mins: m,
            }
        }
        GgmlType::Q3_K => {
            let (d, s) = q3_k::decode_scales(block);
            BlockScales {
                sub_scales: s,
                ..simple(d, None)
            }
        }
        GgmlType::Q6_K => {
            let (d, s) = q6_k::decode_scales(block);
            BlockScales {
                sub_scales: s,
                ..simple(d, None)
            }
        }
        GgmlType::MXFP4 => simple(block[0] as f32, None),
        GgmlType::IQ4_NL
        | GgmlType::IQ4_XS
        | GgmlType::IQ2_XXS
        | GgmlType::IQ2_XS
        | GgmlType::IQ2_S
        | GgmlType::IQ3_XXS
        | GgmlType::IQ3_S
        | GgmlType::IQ1_S
        | GgmlType::Q1_0 => simple(fp16::read_fp16(block, 0), None),
        GgmlType::IQ1_M => {
            // The fp16 d spread over the top nibbles of the four scale words.
            let w = |k: usize| u16::from_le_bytes([block[48 + 2 * k], block[49 + 2 * k]]);
            let bits =
                (w(0) >> 12) | ((w(1) >> 8) & 0xf0) | ((w(2) >> 4) & 0xf00) | (w(3) & 0xf000);
            simple(fp16::fp16_to_fp32(bits), None)
        }
        GgmlType::TQ1_0 => simple(fp16::read_fp16(block, 52), None),
        GgmlType::TQ2_0 => simple(fp16::read_fp16(block, 64), None),
        GgmlType::NVFP4 => BlockScales {
            // No block scale: the four UE4M3 sub-block scale bytes.
            sub_scales: block[..4].iter().map(|&b| b as i32).collect(),
            ..simple(1.0, None)
        },
        t => {
            let l = t.legacy().unwrap_or(Legacy::Q8_0);
            let (d, m) = l.scales(block);
            let min = matches!(t, GgmlType::Q4_1 | GgmlType::Q5_1).then_some(m);
            simple(d, min)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_per_value_include_the_scales() {
        let bits: Vec<(GgmlType, f64)> = GgmlType::ALL
            .iter()
            .map(|&t| (t, t.bits_per_value()))
            .collect();
        let want = [
            4.5, 5.0, 5.5, 6.0, 8.5, 2.625, 3.4375, 4.5, 5.5, 6.5625, 4.25, 4.5, 4.25, 2.0625,
            2.3125, 2.5625, 3.0625, 3.4375, 1.5625, 1.75, 1.6875, 2.0625, 4.5, 1.125,
        ];
        assert_eq!(want.len(), bits.len());
        for ((t, got), w) in bits.iter().zip(want) {
            assert_eq!(*got, w, "{t}");
        }
    }

    #[test]
    fn refuses_what_ggml_cannot_quantize() {
        assert!(quantize(GgmlType::Q4_0, &[], None).is_err());
        assert!(quantize(GgmlType::Q4_0, &[1.0; 33], None).is_err());
        assert!(quantize(GgmlType::Q4_K, &[1.0; 128], None).is_err());
        let mut x = vec![0.5f32; 256];
        x[3] = f32::NAN;
        assert!(quantize(GgmlType::Q4_K, &x, None).is_err());
        let x = vec![0.5f32; 512];
        assert!(quantize(GgmlType::Q4_K, &x, Some(&[1.0; 128])).is_err());
        assert!(quantize(GgmlType::Q4_K, &x, Some(&[1.0; 384])).is_err());
        assert!(quantize(GgmlType::Q4_0, &x, Some(&[1.0; 96])).is_err());
        let mut im = vec![1.0f32; 256];
        im[0] = f32::INFINITY;
        assert!(quantize(GgmlType::Q4_K, &x, Some(&im)).is_err());
        assert!(dequantize(GgmlType::Q4_K, &[0u8; 100]).is_err());
        // ggml_quantize_requires_imatrix.
        for t in [GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ1_S] {
            let e = quantize(t, &x, None).unwrap_err().to_string();
            assert!(e.contains("without an importance matrix"), "{e}");
            assert!(quantize(t, &x, Some(&[1.0; 256])).is_ok());
        }
    }

    #[test]
    fn every_type_round_trips_a_ramp_closely() {
        let x: Vec<f32> = (0..512)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
            .collect();
        let ones = vec![1.0f32; 256];
        for t in GgmlType::ALL {
            assert!(t.encodes(), "{t}");
            // IQ2_XXS, IQ2_XS and IQ1_S need an imatrix: uniform importances.
            let imatrix = t.requires_imatrix().then_some(&ones[..]);
            let blocks = quantize(t, &x, imatrix).unwrap();
            assert_eq!(blocks.len(), 512 / t.block_elems() * t.block_bytes());
            let y = dequantize(t, &blocks).unwrap();
            let mse: f64 = x
                .iter()
                .zip(&y)
                .map(|(a, b)| ((a - b) as f64).powi(2))
                .sum::<f64>()
                / 512.0;
            // Two bits of uniform noise on a ±2 range is ~0.1; every type with two bits or more
            // does better. The ternary types and Q1_0 keep ±amax and 0 (±mean |x|): ~1/3.
            let limit = if t.bits_per_value() < 2.1 { 0.5 } else { 0.12 };
            assert!(mse < limit, "{t}: mse {mse}");
            assert_eq!(ranges(t, &blocks).unwrap().len(), 512 / t.range_group());
        }
    }

    /// The lattice i-quants, each with importances when it needs them.
    fn lattice_types() -> impl Iterator<Item = GgmlType> {
        GgmlType::ALL.into_iter().filter(|t| t.is_lattice())
    }

    #[test]
    fn lattice_i_quants_store_zeros_for_zero_blocks_and_never_panic() {
        let ones = vec![1.0f32; 256];
        let patterns: Vec<Vec<f32>> = vec![
            vec![0.0; 256],
            vec![-0.0; 256],
            vec![1e-30; 256],
            (0..256)
                .map(|i| if i % 2 == 0 { 1e-40 } else { -1e-41 })
                .collect(),
            vec![3e38; 256],
            (0..256)
                .map(|i| if i % 3 == 0 { -3.4e38 } else { 1e-3 })
                .collect(),
            (0..256).map(|i| if i == 17 { 1e30 } else { 0.0 }).collect(),
            vec![0.25; 256],
            (0..256).map(|i| (i as f32 - 128.0) * 1e20).collect(),
        ];
        let importances: Vec<Vec<f32>> = vec![
            ones.clone(),
            vec![0.0; 256],
            vec![3e38; 256],
            (0..256).map(|i| (i % 5) as f32).collect(),
        ];
        for t in lattice_types() {
            for (p, x) in patterns.iter().enumerate() {
                let mut runs: Vec<Option<&[f32]>> =
                    importances.iter().map(|q| Some(&q[..])).collect();
                if !t.requires_imatrix() {
                    runs.push(None);
                }
                for im in runs {
                    match quantize(t, x, im) {
                        Ok(b) => {
                            assert_eq!(b.len(), t.block_bytes(), "{t}");
                            if p < 2 {
                                // All-zero input: every early out, every byte 0.
                                assert!(b.iter().all(|&v| v == 0), "{t} pattern {p}");
                            }
                            assert!(dequantize(t, &b).is_ok());
                        }
                        Err(e) => {
                            // Only where ggml itself would abort: sums that overflow, from
                            // huge values or huge importances.
                            let huge = im.is_some_and(|q| q[0] > 1e30);
                            assert!(huge || matches!(p, 4 | 5 | 6 | 8), "{t} pattern {p}: {e}");
                            assert!(e.to_string().contains("aborts"), "{t}: {e}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn iq3_s_bytes_do_not_advance_past_a_zero_block() {
        // Block 0 (values 0…31) exactly zero: ggml writes block 1's grid bytes and sign bytes
        // into block 0's slots, and the last block's slots stay empty.
        let x: Vec<f32> = (0..256)
            .map(|i| {
                if i < 32 {
                    0.0
                } else {
                    ((i * 37 % 101) as f32 - 50.0) / 25.0
                }
            })
            .collect();
        let b = quantize(GgmlType::IQ3_S, &x, None).unwrap();
        let mut y = x.clone();
        y[..32].copy_from_slice(&x[32..64]);
        let alone = quantize(GgmlType::IQ3_S, &y, None).unwrap();
        // Block 1's codes (computed on the same values) sit in slot 0.
        assert_eq!(b[2..10], alone[10..18]);
        assert_eq!(b[74..78], alone[78..82]);
        // The last slot is empty.
        assert!(b[58..66].iter().all(|&v| v == 0) && b[102..106].iter().all(|&v| v == 0));
    }
}
