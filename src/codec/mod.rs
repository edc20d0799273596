//! Number formats as codecs. A codec is one stored number format — quantscope's min–max
//! integers and small floats, float16/bfloat16, OCP MX, block floating point, bitsandbytes'
//! NF4/FP4/8-bit blockwise, ggml's block types — written once:
//!
//! * [`Codec::encode`]: values → the library's stored representation ([`Encoded`]: codes,
//!   scales, zero points, block bytes, named and laid out as the library keeps them);
//! * [`Codec::decode`]: stored representation → float32, bit for bit as the library;
//! * [`Codec::measure`]: quantize–dequantize and measure the error, by default
//!   `decode(encode(x))` measured against the ranges the stored scales give
//!   ([`Codec::ranges`]), or in one fused pass where a codec has a per-element kernel (the same
//!   bits: the kernel is the encode–decode of one element).
//!
//! A codec *family* ([`CodecFamily`]) declares its parameters once with
//! [`crate::declare_params!`] and builds a configured codec for tensors of a shape; its
//! registry entry ([`CodecEntry`]) carries the facts the CLI, the page and the bindings show:
//! id, summary, library, version, quirks, colour and legend. [`codecs`] is the registry, and
//! everything that lists formats (the formats table, `quantize`, `compareFormats`, the model
//! view's methods, the page's format rows and their colours) reads it.
//!
//! Error metrics follow the one definition of [`crate::qdq`]: an element is clipped when it
//! lies outside the representable range of its slice (`[lo, hi]` from its stored scales).
//!
//! **Adding a format** is one file here (or a type in an existing family) with its
//! `CodecFamily` impl and registry entry, one line in [`codecs`], and its golden test.

pub mod awq;
pub mod bfp;
pub mod bnb;
mod compare;
pub mod compressed_tensors;
pub mod explain;
pub mod fp8_block;
pub mod ggml;
pub mod gptoss;
pub mod gptq;
pub mod half;
pub mod int;
pub mod minifloat;
pub mod modelopt;
pub mod mx;
pub mod onnx;
mod scaled;
pub mod selfcheck;
mod sharing;
mod stored;

pub use compare::{
    compare, evaluate, evaluation_kernel, lineup, quantize_dequantize, FormatResult, Qdq,
};
pub use sharing::Sharing;
pub use stored::{Encoded, Part, Stored};

use crate::error::{Error, Result};
use crate::params::{validate_declared, ParamSet, ParamSpec, Params};
use crate::qdq::{measure_kernel, measure_ranges, QdqKernel, SliceRanges};
use crate::quant::QdqMetrics;
use crate::tensor::Tensor;
use serde::Serialize;

/// A number format configured for tensors of one shape.
pub trait Codec: Send + Sync + std::fmt::Debug {
    /// A readable label: `int4 per channel`, `mxfp4_e2m1`, `ggml.Q4_K (imatrix)`, ….
    fn label(&self) -> String;

    /// Storage per value of a tensor of `shape`, every stored scale and zero point included.
    fn bits_per_value(&self, shape: &[usize]) -> f64;

    /// The stored representation of `t`, whose values are finite (see [`evaluate`] for how
    /// NaN and ±∞ are handled).
    fn encode(&self, t: &Tensor) -> Result<Encoded>;

    /// The values of a stored tensor, bit for bit as the library decodes them. Every array's
    /// length is checked against the shape before anything is read.
    fn decode(&self, e: &Encoded) -> Result<Tensor>;

    /// The representable range of each element's slice under the stored scales.
    fn ranges(&self, e: &Encoded) -> Result<SliceRanges>;

    /// The fused quantize–dequantize of this codec with its scales found from `clean` (the
    /// tensor with non-finite values replaced by 0), element by element as decoding the
    /// encoded tensor gives it; `None` for codecs without one. Measuring a tensor with it is
    /// [`Codec::measure`]; a caller that measures several codecs on one tensor can run their
    /// kernels in one pass ([`crate::qdq::measure_kernels`]).
    fn qdq_kernel(&self, _clean: &Tensor) -> Option<Result<Box<dyn QdqKernel>>> {
        None
    }

    /// How one block of `clean` (finite values) is stored, recorded by this codec's encoder
    /// ([`explain::explain`]): `(block, blocks, steps)`, the block followed (`block`, or by
    /// default the one holding the value of largest magnitude), how many there are, and the
    /// steps, the last of which holds what the block stores. Codecs whose encoder searches
    /// (ggml, MX) record it; the others describe their slices ([`Codec::stored_slices`]) and are
    /// followed through their whole-tensor encoding ([`explain::explain_stored`]).
    fn explain_block(
        &self,
        clean: &Tensor,
        block: Option<usize>,
    ) -> Result<(usize, usize, Vec<crate::derivation::Step>)> {
        explain::explain_stored(self, clean, block)
    }

    /// The slices of `e` (this codec's encoding) as a derivation follows them: which elements
    /// share stored numbers, what each slice stores, and the rule that formed them; `None` for
    /// codecs that have not described theirs.
    fn stored_slices(&self, _e: &Encoded) -> Result<Option<explain::StoredSlices>> {
        Ok(None)
    }

    /// Quantize–dequantize `clean` (finite values) and measure the error against `original` (the
    /// same tensor before its non-finite values were replaced; they are left out). Codecs with
    /// a per-element kernel ([`Codec::qdq_kernel`]) measure in one fused pass that gives the
    /// same bits; the others encode, decode and measure.
    fn measure(&self, original: &Tensor, clean: &Tensor) -> Result<QdqMetrics> {
        if let Some(kernel) = self.qdq_kernel(clean) {
            return Ok(measure_kernel(&original.data, kernel?.as_ref()).finish());
        }
        let encoded = self.encode(clean)?;
        let decoded = self.decode(&encoded)?;
        let ranges = self.ranges(&encoded)?;
        Ok(measure_ranges(&original.data, &decoded.data, &ranges).finish())
    }
}

/// A family of codecs: its parameters, declared once with [`crate::declare_params!`], and how
/// they configure a codec for tensors of a shape.
pub trait CodecFamily: Send + Sync + 'static {
    /// The parameters.
    type Args: ParamSet;
    /// The codec for tensors of `shape`; `id` is the registry entry's (one family may serve
    /// several entries, e.g. every ggml type).
    fn build(args: &Self::Args, shape: &[usize], id: &str) -> Result<Box<dyn Codec>>;
}

/// Constructor of a configured codec from its parameters.
pub type BuildFn = fn(&Params, &[usize], &str) -> Result<Box<dyn Codec>>;

fn build_family<F: CodecFamily>(
    params: &Params,
    shape: &[usize],
    id: &str,
) -> Result<Box<dyn Codec>> {
    F::build(&F::Args::from_params(params)?, shape, id)
}

/// A codec family in the registry, with the facts every host shows.
#[derive(Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct CodecEntry {
    /// Id, e.g. `int`, `mx`, `bnb.nf4`, `ggml.Q4_K`.
    pub id: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamSpec>,
    #[serde(skip)]
    pub build: BuildFn,
    /// The library whose format this is (`quantscope` for its own min–max formats).
    pub library: &'static str,
    /// The library's version reproduced (for quantscope's own formats: what they follow).
    pub version: &'static str,
    /// Library quirks reproduced, each with the source line it comes from.
    pub quirks: &'static [&'static str],
    /// The series colour of the family's points and swatches (an index into the palette).
    pub colour: usize,
    /// The family's name in a chart legend.
    pub legend: &'static str,
    /// Whether the codec encodes. A decode-only codec (ONNX Runtime's and ModelOpt's layouts,
    /// whose quantizers quantscope does not reproduce) decodes stored data bit for bit, and its
    /// `encode` returns an error; whatever runs formats on float data (the line-up, `quantize`,
    /// the model view's methods, the page's "add a format") leaves it out or says so.
    pub encodes: bool,
    /// Why a decode-only codec does not encode (`None` when it encodes).
    pub decode_only: Option<&'static str>,
}

impl std::fmt::Debug for CodecEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodecEntry")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// quantscope's own min–max formats: the library and what they follow.
pub const OWN: (&str, &str) = ("quantscope", "min–max scales with Quark's formulas");

impl CodecEntry {
    /// The registry entry of family `F`: one of quantscope's own formats until
    /// [`CodecEntry::reproducing`] names a library.
    pub fn of<F: CodecFamily>(id: &'static str, summary: &'static str) -> Self {
        CodecEntry {
            id,
            summary,
            params: F::Args::specs(),
            build: build_family::<F>,
            library: OWN.0,
            version: OWN.1,
            quirks: &[],
            colour: 0,
            legend: "",
            encodes: true,
            decode_only: None,
        }
    }

    /// A codec that decodes but does not encode, and why.
    pub fn decode_only(mut self, reason: &'static str) -> Self {
        self.encodes = false;
        self.decode_only = Some(reason);
        self
    }

    /// The library and version whose format this is, and the quirks reproduced.
    pub fn reproducing(
        mut self,
        library: &'static str,
        version: &'static str,
        quirks: &'static [&'static str],
    ) -> Self {
        self.library = library;
        self.version = version;
        self.quirks = quirks;
        self
    }

    /// The colour and legend name of the family's points.
    pub fn drawn(mut self, colour: usize, legend: &'static str) -> Self {
        self.colour = colour;
        self.legend = legend;
        self
    }

    /// Check `params` against the declared parameters (undeclared keys are refused) and build
    /// the codec for tensors of `shape`.
    pub fn build(&self, params: &Params, shape: &[usize]) -> Result<Box<dyn Codec>> {
        validate_declared(&self.params, params, self.id)?;
        (self.build)(params, shape, self.id)
    }
}

/// The codec registry: every family with its parameters and facts, in the order the formats
/// table groups them.
pub fn codecs() -> Vec<CodecEntry> {
    let mut all = vec![
        int::entry(),
        half::entry(),
        minifloat::entry(),
        mx::entry(),
        bfp::entry(),
    ];
    all.extend(bnb::entries());
    all.push(gptq::entry());
    all.push(awq::entry());
    all.extend(ggml::entries());
    all.extend(compressed_tensors::entries());
    all.push(fp8_block::entry());
    all.push(gptoss::entry());
    all.push(modelopt::entry());
    all.extend(onnx::entries());
    all
}

/// Look up a codec family by id.
pub fn find(id: &str) -> Result<CodecEntry> {
    codecs()
        .into_iter()
        .find(|f| f.id == id)
        .ok_or_else(|| Error::Unknown {
            what: "format",
            name: id.to_string(),
            hint: String::new(),
        })
}

/// A codec's axis parameter made non-negative for `shape` (Python's negative indexing).
fn normalise_axis(name: &str, axis: i64, shape: &[usize]) -> Result<usize> {
    let n = shape.len().max(1) as i64;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(Error::param(
            name,
            format!("axis {axis} is out of range for shape {shape:?}"),
        ));
    }
    Ok(a as usize)
}

/// The values of a decoded tensor of `shape`.
fn decoded(shape: &[usize], values: Vec<f32>) -> Result<Tensor> {
    Tensor::new(shape.to_vec(), values)
}

#[cfg(test)]
pub(crate) mod tests;
