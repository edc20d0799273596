//! Every number format side by side: what a tensor loses as int8, int4, fp16, bf16, fp8, fp6,
//! fp4, MX or BFP — and in the formats LLM users run, bitsandbytes' NF4/FP4/8-bit blockwise
//! ([`super::bnb`]) and llama.cpp's GGUF block types ([`super::ggml`]), reproduced bit for bit.
//!
//! A [`FormatSpec`] in the quantizer registry ([`formats`]) describes one family of formats and
//! its parameters, exactly as an observer's spec does, so the page builds its controls and
//! `quantscope list` prints them without per-format code. Each builds a [`FormatQuantizer`]
//! whose [`FormatQuantizer::apply`] quantize–dequantizes a whole tensor and counts the values it
//! clipped.
//!
//! Scales are chosen by min–max, the way AMD Quark's observers do it for each format:
//! * integers: symmetric `s = amax / ((qmax − qmin)/2)` (signed) or affine
//!   `s = (max⁺ − min⁻)/(qmax − qmin)`, `zp = clamp(qmin − round(min⁻/s))` (unsigned), per tensor,
//!   per channel or per group, rounding half to even;
//! * fp8/fp6/fp4 elements with a float32 scale `s = amax / max_element` per tensor or channel;
//! * float16/bfloat16: a cast (round to nearest even, overflow to ±inf) and back;
//! * MX: blocks of 32 with an E8M0 shared scale (see [`crate::formats::mx`]);
//! * BFP: blocks sharing an exponent with 8-bit mantissas (see [`crate::formats::bfp`]).
//!
//! "Bits per value" counts the shared scales (and zero points) too.

use crate::engine::{prepare_batch, NonFinitePolicy};
use crate::error::{Error, Result};
use crate::formats::blocks::BlockLayout;
use crate::formats::e8m0::ScaleRounding;
use crate::formats::half_cast::HalfType;
use crate::formats::mx::{self, MxElement};
use crate::formats::{bfp, ElementFormat};
use crate::observer::Granularity;
use crate::params::{validate_declared, ParamSet, ParamSpec, Params};
use crate::quant::{round_half_even, MetricsAccumulator, QdqMetrics};
use crate::tensor::Tensor;
use serde::Serialize;
use serde_json::json;

/// How scales are shared by an integer or small-float format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "granularity", rename_all = "snake_case")]
pub enum Sharing {
    /// One scale for the whole tensor.
    PerTensor,
    /// One scale per index of `axis`.
    PerChannel { axis: usize },
    /// One scale per `size` consecutive elements along `axis`.
    PerGroup { axis: usize, size: usize },
}

/// A configured format, ready to quantize tensors.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FormatQuantizer {
    /// `bits`-bit integers, symmetric when `signed`, affine otherwise.
    Int {
        bits: u32,
        signed: bool,
        sharing: Sharing,
    },
    /// float16 / bfloat16 casts.
    Half { half: HalfType },
    /// fp8/fp6/fp4 elements with a float32 scale.
    Element {
        element: ElementFormat,
        sharing: Sharing,
    },
    /// OCP MX blocks.
    Mx {
        element: MxElement,
        block: usize,
        axis: i64,
        rounding: ScaleRounding,
    },
    /// Block floating point.
    Bfp {
        mantissa_bits: u32,
        block: usize,
        axis: i64,
    },
    /// bitsandbytes NF4 / FP4 / 8-bit blockwise (see [`super::bnb`]).
    Bnb(super::bnb::BnbFormat),
    /// llama.cpp / ggml block types (see [`super::ggml`]).
    Ggml(super::ggml::GgmlFormat),
}

/// Result of quantize–dequantizing a tensor.
#[derive(Debug, Clone)]
pub struct Qdq {
    pub values: Vec<f32>,
    /// Elements beyond the largest magnitude their scale can represent.
    pub clipped: usize,
}

/// A slice of the tensor sharing one scale: which one each element belongs to.
struct Slices {
    index: Vec<u32>,
    count: usize,
}

impl Slices {
    fn new(shape: &[usize], len: usize, sharing: Sharing) -> Result<Self> {
        match sharing {
            Sharing::PerTensor => Ok(Slices {
                index: vec![0; len],
                count: 1,
            }),
            Sharing::PerChannel { axis } => {
                if axis >= shape.len() {
                    return Err(Error::param(
                        "axis",
                        format!("axis {axis} is out of range for shape {shape:?}"),
                    ));
                }
                let ix = crate::quant::ChannelIndexer::new(shape, axis);
                Ok(Slices {
                    index: (0..len).map(|i| ix.channel(i) as u32).collect(),
                    count: shape[axis],
                })
            }
            Sharing::PerGroup { axis, size } => {
                let layout = BlockLayout::new(shape, axis as i64, size)?;
                Ok(Slices {
                    index: (0..len).map(|i| layout.block_of(i) as u32).collect(),
                    count: layout.num_blocks(),
                })
            }
        }
    }

    /// (min, max) of each slice.
    fn ranges(&self, data: &[f32]) -> Vec<(f32, f32)> {
        let mut out = vec![(f32::INFINITY, f32::NEG_INFINITY); self.count];
        for (&v, &k) in data.iter().zip(&self.index) {
            let r = &mut out[k as usize];
            r.0 = r.0.min(v);
            r.1 = r.1.max(v);
        }
        out
    }
}

impl FormatQuantizer {
    /// A short label (`int4 per_channel`, `mxfp4_e2m1`, …).
    pub fn label(&self) -> String {
        let sharing = |s: &Sharing| match s {
            Sharing::PerTensor => String::new(),
            Sharing::PerChannel { .. } => " per channel".to_string(),
            Sharing::PerGroup { size, .. } => format!(" per group of {size}"),
        };
        match self {
            FormatQuantizer::Int {
                bits,
                signed,
                sharing: s,
            } => {
                format!("{}int{bits}{}", if *signed { "" } else { "u" }, sharing(s))
            }
            FormatQuantizer::Half { half } => half.name().to_string(),
            FormatQuantizer::Element {
                element,
                sharing: s,
            } => format!("{}{}", element.name(), sharing(s)),
            FormatQuantizer::Mx { element, block, .. } if *block == mx::BLOCK_SIZE => {
                element.format_name()
            }
            FormatQuantizer::Mx { element, block, .. } => {
                format!("{} (block {block})", element.format_name())
            }
            FormatQuantizer::Bfp {
                mantissa_bits,
                block,
                ..
            } => format!("bfp{} (block {block})", mantissa_bits + 8),
            FormatQuantizer::Bnb(f) => f.label(),
            FormatQuantizer::Ggml(f) => f.label(),
        }
    }

    /// Storage cost per element including shared scales and zero points (float32 scales for
    /// integers and small floats, 8-bit shared exponents for MX and BFP).
    pub fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let n = shape.iter().product::<usize>().max(1) as f64;
        let slices = |s: &Sharing| match *s {
            Sharing::PerTensor => 1.0,
            Sharing::PerChannel { axis } => shape.get(axis).copied().unwrap_or(1) as f64,
            Sharing::PerGroup { axis, size } => {
                BlockLayout::new(shape, axis as i64, size).map_or(1, |l| l.num_blocks()) as f64
            }
        };
        match self {
            FormatQuantizer::Int {
                bits,
                signed,
                sharing,
            } => {
                let per_slice = if *signed { 32.0 } else { 64.0 };
                *bits as f64 + per_slice * slices(sharing) / n
            }
            FormatQuantizer::Half { .. } => 16.0,
            FormatQuantizer::Element { element, sharing } => {
                element.bits() as f64 + 32.0 * slices(sharing) / n
            }
            FormatQuantizer::Mx { element, block, .. } => {
                let bits = match element {
                    MxElement::Float(f) => f.bits(),
                    MxElement::Int8 => 8,
                };
                bits as f64 + 8.0 / *block as f64
            }
            FormatQuantizer::Bfp {
                mantissa_bits,
                block,
                ..
            } => *mantissa_bits as f64 + 8.0 / *block as f64,
            FormatQuantizer::Bnb(f) => f.bits_per_value(shape),
            FormatQuantizer::Ggml(f) => f.bits_per_value(),
        }
    }

    /// Quantize–dequantize `t` (finite values; see [`compare`] for NaN handling).
    pub fn apply(&self, t: &Tensor) -> Result<Qdq> {
        let data = &t.data;
        match *self {
            FormatQuantizer::Int {
                bits,
                signed,
                sharing,
            } => {
                let (qmin, qmax) = if signed {
                    (
                        -((1i64 << (bits - 1)) as f32),
                        ((1i64 << (bits - 1)) - 1) as f32,
                    )
                } else {
                    (0.0, ((1i64 << bits) - 1) as f32)
                };
                let slices = Slices::new(&t.shape, data.len(), sharing)?;
                let params: Vec<(f32, f32)> = slices
                    .ranges(data)
                    .into_iter()
                    .map(|(lo, hi)| int_qparams(lo, hi, qmin, qmax, signed))
                    .collect();
                let mut clipped = 0;
                let values = data
                    .iter()
                    .zip(&slices.index)
                    .map(|(&x, &k)| {
                        let (s, zp) = params[k as usize];
                        let q = round_half_even(x * (1.0 / s)) + zp;
                        if q < qmin || q > qmax {
                            clipped += 1;
                        }
                        (q.clamp(qmin, qmax) - zp) * s
                    })
                    .collect();
                Ok(Qdq { values, clipped })
            }
            FormatQuantizer::Half { half } => {
                let max = half.max();
                let clipped = data.iter().filter(|x| x.abs() > max).count();
                Ok(Qdq {
                    values: data.iter().map(|&x| half.round_trip(x)).collect(),
                    clipped,
                })
            }
            FormatQuantizer::Element { element, sharing } => {
                let slices = Slices::new(&t.shape, data.len(), sharing)?;
                let max = element.max();
                let scales: Vec<f32> = slices
                    .ranges(data)
                    .into_iter()
                    .map(|(lo, hi)| {
                        let s = lo.abs().max(hi.abs()) / max;
                        if s > 0.0 && s.is_finite() {
                            s
                        } else {
                            f32::EPSILON
                        }
                    })
                    .collect();
                let mut clipped = 0;
                let values = data
                    .iter()
                    .zip(&slices.index)
                    .map(|(&x, &k)| {
                        let s = scales[k as usize];
                        if (x / s).abs() > max {
                            clipped += 1;
                        }
                        element.quantize(x / s) * s
                    })
                    .collect();
                Ok(Qdq { values, clipped })
            }
            FormatQuantizer::Mx {
                element,
                block,
                axis,
                rounding,
            } => {
                let layout = BlockLayout::new(&t.shape, axis, block)?;
                let scales = mx::block_scales(&layout, data, element, rounding);
                let max = element.max();
                let clipped = data
                    .iter()
                    .enumerate()
                    .filter(|&(i, &x)| (x / scales[layout.block_of(i)]).abs() > max)
                    .count();
                Ok(Qdq {
                    values: mx::fake_quantize_with_scales(&layout, data, &scales, element)?,
                    clipped,
                })
            }
            FormatQuantizer::Bfp {
                mantissa_bits,
                block,
                axis,
            } => {
                let format = bfp::Bfp { mantissa_bits };
                let values = bfp::fake_quantize(data, &t.shape, axis, block, format)?;
                // The block adjustment guarantees every block's largest value fits its mantissas.
                Ok(Qdq { values, clipped: 0 })
            }
            FormatQuantizer::Bnb(ref f) => f.apply(t),
            FormatQuantizer::Ggml(ref f) => f.apply(t),
        }
    }
}

/// Quark's integer qparams for a slice with range `lo..hi` (returned as `(scale, zero_point)`).
fn int_qparams(lo: f32, hi: f32, qmin: f32, qmax: f32, symmetric: bool) -> (f32, f32) {
    let (min_neg, max_pos) = (lo.min(0.0), hi.max(0.0));
    if symmetric {
        let amax = (-min_neg).max(max_pos);
        ((amax / ((qmax - qmin) / 2.0)).max(f32::EPSILON), 0.0)
    } else {
        let s = ((max_pos - min_neg) / (qmax - qmin)).max(f32::EPSILON);
        (s, (qmin - round_half_even(min_neg / s)).clamp(qmin, qmax))
    }
}

/// Constructor of a format from its parameters.
pub type FormatBuildFn = fn(&Params, &[usize]) -> Result<FormatQuantizer>;

/// A family of number formats: its parameters, declared once with
/// [`crate::declare_params!`], and how they build a quantizer for tensors of a shape.
pub trait FormatFamily: Send + Sync + 'static {
    /// The parameters.
    type Args: ParamSet;
    /// The configured format for tensors of `shape`.
    fn build(args: &Self::Args, shape: &[usize]) -> Result<FormatQuantizer>;
}

fn build_family<F: FormatFamily>(params: &Params, shape: &[usize]) -> Result<FormatQuantizer> {
    F::build(&F::Args::from_params(params)?, shape)
}

/// A family of formats in the quantizer registry.
#[derive(Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct FormatSpec {
    /// Id, e.g. `int`, `mx`.
    pub id: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamSpec>,
    #[serde(skip)]
    pub build: FormatBuildFn,
    /// The library and version reproduced (empty for quantscope's own min-max formats).
    pub framework: &'static str,
    /// Library quirks reproduced, each with the source line it comes from.
    pub quirks: &'static [&'static str],
}

impl std::fmt::Debug for FormatSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormatSpec")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl FormatSpec {
    /// The registry entry of format family `F`.
    pub fn of<F: FormatFamily>(id: &'static str, summary: &'static str) -> Self {
        FormatSpec {
            id,
            summary,
            params: F::Args::specs(),
            build: build_family::<F>,
            framework: "",
            quirks: &[],
        }
    }

    /// The library (and version) whose format this is, and the quirks reproduced.
    pub fn reproducing(mut self, framework: &'static str, quirks: &'static [&'static str]) -> Self {
        self.framework = framework;
        self.quirks = quirks;
        self
    }

    /// Check `params` against the declared parameters (undeclared keys are refused) and build
    /// the format for tensors of `shape`.
    pub fn build(&self, params: &Params, shape: &[usize]) -> Result<FormatQuantizer> {
        validate_declared(&self.params, params, self.id)?;
        (self.build)(params, shape)
    }
}

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

crate::choice_enum! {
    /// How an integer format shares its scales.
    pub enum IntSharing {
        PerTensor = "per_tensor",
        PerChannel = "per_channel",
        PerGroup = "per_group",
    }
}

crate::choice_enum! {
    /// How a small-float format shares its scales.
    pub enum ElementSharing {
        PerTensor = "per_tensor",
        PerChannel = "per_channel",
    }
}

crate::declare_params! {
    /// Integers with min-max scales.
    pub struct IntArgs {
        /// bit width
        bits: i64 = 8; int(2, 16), Data;
        /// signed symmetric (true) or unsigned affine (false)
        signed: bool = true; boolean(), Data;
        /// how scales are shared
        granularity: IntSharing = IntSharing::PerTensor; choice(), Data;
        /// channel axis (per_channel)
        axis: i64 = 0; int(-8, 7), Data;
        /// elements per group (per_group)
        group_size: i64 = 32; int(1, 4096), Data;
        /// axis along which groups run (per_group)
        group_axis: i64 = -1; int(-8, 7), Data;
    }
}

crate::declare_params! {
    /// A float16/bfloat16 cast.
    pub struct HalfArgs {
        /// half type
        dtype: HalfType = HalfType::Float16; choice(), Data;
    }
}

crate::declare_params! {
    /// fp8/fp6/fp4 elements with a float32 amax scale.
    pub struct ElementArgs {
        /// element format
        element: ElementFormat = ElementFormat::Fp8E4m3; choice(), Data;
        /// how scales are shared
        granularity: ElementSharing = ElementSharing::PerTensor; choice(), Data;
        /// channel axis (per_channel)
        axis: i64 = 0; int(-8, 7), Data;
    }
}

crate::declare_params! {
    /// OCP MX blocks.
    pub struct MxArgs {
        /// element type
        element: MxElement = MxElement::Float(ElementFormat::Fp4E2m1); choice(), Data;
        /// elements per shared scale
        block_size: i64 = 32; int(2, 1024), Data;
        /// axis along which blocks run
        axis: i64 = -1; int(-8, 7), Data;
        /// E8M0 scale rounding
        scale_rounding: ScaleRounding = ScaleRounding::Even; choice(), Data;
    }
}

crate::declare_params! {
    /// Block floating point.
    pub struct BfpArgs {
        /// mantissa bits, sign included
        mantissa_bits: i64 = 8; int(2, 16), Data;
        /// elements per shared exponent
        block_size: i64 = bfp::BFP16_BLOCK as i64; int(2, 1024), Data;
        /// axis along which blocks run
        axis: i64 = -1; int(-8, 7), Data;
    }
}

/// `int`: integers with min-max scales (Quark's formula), half-to-even rounding.
pub struct IntFormats;

impl FormatFamily for IntFormats {
    type Args = IntArgs;
    fn build(a: &IntArgs, shape: &[usize]) -> Result<FormatQuantizer> {
        let sharing = match a.granularity {
            IntSharing::PerTensor => Sharing::PerTensor,
            IntSharing::PerChannel => Sharing::PerChannel {
                axis: normalise_axis("axis", a.axis, shape)?,
            },
            IntSharing::PerGroup => Sharing::PerGroup {
                axis: normalise_axis("group_axis", a.group_axis, shape)?,
                size: a.group_size as usize,
            },
        };
        Ok(FormatQuantizer::Int {
            bits: a.bits as u32,
            signed: a.signed,
            sharing,
        })
    }
}

/// `half`: a float16 / bfloat16 cast.
pub struct HalfFormats;

impl FormatFamily for HalfFormats {
    type Args = HalfArgs;
    fn build(a: &HalfArgs, _: &[usize]) -> Result<FormatQuantizer> {
        Ok(FormatQuantizer::Half { half: a.dtype })
    }
}

/// `minifloat`: fp8/fp6/fp4 elements with a float32 amax scale.
pub struct ElementFormats;

impl FormatFamily for ElementFormats {
    type Args = ElementArgs;
    fn build(a: &ElementArgs, shape: &[usize]) -> Result<FormatQuantizer> {
        let sharing = match a.granularity {
            ElementSharing::PerTensor => Sharing::PerTensor,
            ElementSharing::PerChannel => Sharing::PerChannel {
                axis: normalise_axis("axis", a.axis, shape)?,
            },
        };
        Ok(FormatQuantizer::Element {
            element: a.element,
            sharing,
        })
    }
}

/// `mx`: OCP MX blocks sharing an E8M0 scale.
pub struct MxFormats;

impl FormatFamily for MxFormats {
    type Args = MxArgs;
    fn build(a: &MxArgs, _: &[usize]) -> Result<FormatQuantizer> {
        Ok(FormatQuantizer::Mx {
            element: a.element,
            block: a.block_size as usize,
            axis: a.axis,
            rounding: a.scale_rounding,
        })
    }
}

/// `bfp`: block floating point.
pub struct BfpFormats;

impl FormatFamily for BfpFormats {
    type Args = BfpArgs;
    fn build(a: &BfpArgs, _: &[usize]) -> Result<FormatQuantizer> {
        Ok(FormatQuantizer::Bfp {
            mantissa_bits: a.mantissa_bits as u32,
            block: a.block_size as usize,
            axis: a.axis,
        })
    }
}

/// The quantizer registry: every format family with its parameters.
pub fn formats() -> Vec<FormatSpec> {
    let mut all = vec![
        FormatSpec::of::<IntFormats>(
            "int",
            "integers with min-max scales (Quark's formula), half-to-even rounding",
        ),
        FormatSpec::of::<HalfFormats>("half", "float16 / bfloat16 cast, round to nearest even"),
        FormatSpec::of::<ElementFormats>(
            "minifloat",
            "fp8/fp6/fp4 elements with a float32 amax scale",
        ),
        FormatSpec::of::<MxFormats>("mx", "OCP MX: blocks sharing an E8M0 scale"),
        FormatSpec::of::<BfpFormats>(
            "bfp",
            "block floating point: shared 8-bit exponent, signed mantissas, block adjustment",
        ),
    ];
    all.extend(super::bnb::specs());
    all.extend(super::ggml::specs());
    all
}

/// Look up a format family by id.
pub fn find(id: &str) -> Result<FormatSpec> {
    formats()
        .into_iter()
        .find(|f| f.id == id)
        .ok_or_else(|| Error::Unknown {
            what: "format",
            name: id.to_string(),
            hint: String::new(),
        })
}

/// The standard line-up of the side-by-side view, for a tensor of `shape`: `(format id, params)`.
pub fn lineup(shape: &[usize]) -> Vec<(&'static str, Params)> {
    let p = |v: serde_json::Value| Params::from_value(v).unwrap_or_default();
    let mut all = vec![
        ("int", p(json!({"bits": 8}))),
        ("int", p(json!({"bits": 8, "signed": false}))),
        ("int", p(json!({"bits": 4}))),
        ("int", p(json!({"bits": 4, "signed": false}))),
    ];
    if shape.len() >= 2 {
        all.push((
            "int",
            p(json!({"bits": 8, "granularity": "per_channel", "axis": 0})),
        ));
        all.push((
            "int",
            p(json!({"bits": 4, "granularity": "per_channel", "axis": 0})),
        ));
    }
    all.push((
        "int",
        p(json!({"bits": 4, "granularity": "per_group", "group_size": 32})),
    ));
    all.push(("half", p(json!({"dtype": "float16"}))));
    all.push(("half", p(json!({"dtype": "bfloat16"}))));
    for element in ["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"] {
        all.push(("minifloat", p(json!({"element": element}))));
    }
    for element in [
        "fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1", "int8",
    ] {
        all.push(("mx", p(json!({"element": element}))));
    }
    all.push(("bfp", Params::new()));
    // What LLM users run: bitsandbytes NF4 (QLoRA, with and without double quantization) and
    // llama.cpp's Q4_K and MXFP4 (ggml's blocks only when the tensor is a whole number of them).
    all.push(("bnb.nf4", Params::new()));
    all.push(("bnb.nf4", p(json!({"compress_statistics": true}))));
    let numel: usize = shape.iter().product();
    for (id, block) in [("ggml.Q4_K", 256), ("ggml.MXFP4", 32)] {
        if numel > 0 && numel % block == 0 {
            all.push((id, Params::new()));
        }
    }
    all
}

/// One row of the side-by-side comparison.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct FormatResult {
    pub format: String,
    pub id: &'static str,
    pub params: Params,
    pub bits_per_value: f64,
    #[serde(flatten)]
    pub metrics: QdqMetrics,
}

/// Quantize–dequantize `t` with one format and measure the error over its finite values
/// (non-finite values are replaced by 0 for the quantization, as for shaped observers).
pub fn evaluate(id: &'static str, params: &Params, t: &Tensor) -> Result<FormatResult> {
    let quantizer = find(id)?.build(params, &t.shape)?;
    let clean = prepare_batch(t, Granularity::PerChannel, NonFinitePolicy::Exclude)?;
    let out = quantizer.apply(&clean)?;
    let mut acc = MetricsAccumulator::default();
    acc.add(&t.data, &out.values, |_| None);
    let mut metrics = acc.finish();
    metrics.clipped_fraction = out.clipped as f64 / metrics.count.max(1) as f64;
    Ok(FormatResult {
        format: quantizer.label(),
        id,
        params: params.clone(),
        bits_per_value: quantizer.bits_per_value(&t.shape),
        metrics,
    })
}

/// Every format of the standard [`lineup`] on `t`; formats that do not apply to the tensor's
/// shape are skipped with their error.
pub fn compare(t: &Tensor) -> Vec<Result<FormatResult>> {
    lineup(&t.shape)
        .into_iter()
        .map(|(id, params)| evaluate(id, &params, t))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A deterministic ramp of values in [−5, 5] with `shape` (shared by the quantizers' tests).
    pub(crate) fn ramp(shape: Vec<usize>) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::new(
            shape,
            (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 10.0)
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn more_bits_mean_less_error() {
        let t = ramp(vec![64, 32]);
        let mse = |bits: i64| {
            evaluate("int", &Params::new().with("bits", bits), &t)
                .unwrap()
                .metrics
                .mse
        };
        assert!(mse(8) < mse(6) && mse(6) < mse(4) && mse(4) < mse(2));
        let fp16 = evaluate("half", &Params::new(), &t).unwrap();
        assert!(fp16.metrics.mse < mse(8));
        assert_eq!(fp16.bits_per_value, 16.0);
    }

    #[test]
    fn symmetric_int8_uses_quarks_divisor() {
        // amax 5.0 → scale 5/127.5; −5.0 maps to −127.5 → rounds to −128 (no clip), +5.0 to
        // 127.5 → 128 → clipped to 127.
        let t = Tensor::from_vec(vec![-5.0, 0.0, 5.0]);
        let r = FormatQuantizer::Int {
            bits: 8,
            signed: true,
            sharing: Sharing::PerTensor,
        }
        .apply(&t)
        .unwrap();
        let s = 5.0f32 / 127.5;
        assert_eq!(r.values, vec![-128.0 * s, 0.0, 127.0 * s]);
        assert_eq!(r.clipped, 1);
    }

    #[test]
    fn bits_per_value_count_shared_scales() {
        let shape = [64usize, 32];
        let mx4 = FormatQuantizer::Mx {
            element: MxElement::Float(ElementFormat::Fp4E2m1),
            block: 32,
            axis: -1,
            rounding: ScaleRounding::Even,
        };
        assert_eq!(mx4.bits_per_value(&shape), 4.25);
        let per_channel = FormatQuantizer::Int {
            bits: 4,
            signed: true,
            sharing: Sharing::PerChannel { axis: 0 },
        };
        assert_eq!(
            per_channel.bits_per_value(&shape),
            4.0 + 32.0 * 64.0 / 2048.0
        );
        assert_eq!(
            FormatQuantizer::Bfp {
                mantissa_bits: 8,
                block: 8,
                axis: -1
            }
            .bits_per_value(&shape),
            9.0
        );
    }

    #[test]
    fn lineup_runs_on_vectors_and_matrices_and_rejects_bad_params() {
        for shape in [vec![100], vec![16, 48]] {
            for result in compare(&ramp(shape.clone())) {
                let r = result.unwrap();
                assert!(
                    r.metrics.mse.is_finite() && r.bits_per_value > 0.0,
                    "{shape:?} {}",
                    r.format
                );
            }
        }
        assert!(evaluate("int", &Params::new().with("bits", 1), &ramp(vec![10])).is_err());
        assert!(evaluate(
            "int",
            &Params::new()
                .with("granularity", "per_channel")
                .with("axis", 3),
            &ramp(vec![4, 4])
        )
        .is_err());
        assert!(evaluate("nope", &Params::new(), &ramp(vec![4])).is_err());
    }
}
