//! ggml / llama.cpp block types as codecs: `ggml.Q4_0` … `ggml.Q6_K`, `ggml.MXFP4`,
//! `ggml.IQ4_NL`, … (every type of [`GgmlType::ALL`]). The maths is
//! [`crate::formats::ggml`]; this is its place in the registry.
//!
//! Stored: `blocks`, the bytes of the tensor's blocks exactly as a GGUF file holds them
//! (`block_bytes` per `block_elems` values, rows in order). Their one parameter is llama.cpp's
//! `imatrix`: the importance of each column (what `llama-imatrix` computes for the weight), as an
//! array whose length is the tensor's last axis.
//!
//! Without an imatrix every block is quantized on its own, so the tensor is quantized flat
//! (exactly what ggml computes for the same values as one row): its size must be a multiple of
//! the block (32 or 256). With one, rows are the last axis, which must be a multiple of the block
//! — as for a GGUF weight. A value is clipped when it lies outside the range its block (or
//! k-quant sub-block) represents.
//!
//! The lattice i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) encode with
//! llama.cpp's grid searches, byte for byte; IQ2_XXS, IQ2_XS and IQ1_S need an `imatrix`
//! (`ggml_quantize_requires_imatrix`) and refuse to encode without one.

use super::{decoded, explain, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::derivation::{self, Step};
use crate::error::{Error, Result};
use crate::formats::ggml::{self, facts, GgmlType};
use crate::qdq::{SliceRanges, Slicing};
use crate::tensor::Tensor;

/// The library and the version reproduced.
pub const LIBRARY: (&str, &str) = ("ggml", "d99724f2 = llama.cpp d3cf1f14");

crate::declare_params! {
    /// The arguments of ggml's quantizers.
    pub struct GgmlArgs {
        /// importance of each column (llama-imatrix), length = the last axis; none: the
        /// reference quantizer (types without an imatrix path accept and ignore it, as ggml does)
        imatrix: Option<Vec<f64>> = None; vector(), Data;
    }
}

/// A configured ggml codec.
#[derive(Debug, Clone, PartialEq)]
pub struct Ggml {
    pub ty: GgmlType,
    /// Importance per column, if given.
    pub imatrix: Option<Vec<f32>>,
}

/// Every ggml type as a codec family (the entry's id names the type).
pub struct GgmlFamily;

impl CodecFamily for GgmlFamily {
    type Args = GgmlArgs;
    fn build(a: &GgmlArgs, shape: &[usize], id: &str) -> Result<Box<dyn Codec>> {
        let ty = GgmlType::from_id(id).ok_or_else(|| Error::Unknown {
            what: "ggml type",
            name: id.to_string(),
            hint: String::new(),
        })?;
        let imatrix: Option<Vec<f32>> = a
            .imatrix
            .as_ref()
            .map(|v| v.iter().map(|&x| x as f32).collect());
        if let Some(im) = &imatrix {
            let columns = shape.last().copied().unwrap_or(0);
            if im.len() != columns {
                return Err(Error::param(
                    "imatrix",
                    format!(
                        "one importance per column: the tensor's last axis has {columns}, the imatrix {} entries",
                        im.len()
                    ),
                ));
            }
        }
        Ok(Box::new(Ggml { ty, imatrix }))
    }
}

/// The ggml entries of the codec registry, one per type.
pub fn entries() -> Vec<CodecEntry> {
    let (library, version) = LIBRARY;
    GgmlType::ALL
        .into_iter()
        .map(|ty| {
            let entry = CodecEntry::of::<GgmlFamily>(ty.id(), facts::summary(ty))
                .reproducing(library, version, facts::quirks(ty))
                .drawn(6, "ggml / llama.cpp");
            match facts::decode_only(ty) {
                Some(why) => entry.decode_only(why),
                None => entry,
            }
        })
        .collect()
}

impl Ggml {
    fn blocks<'a>(&self, e: &'a Encoded) -> Result<&'a [u8]> {
        let n = e.numel()?;
        let block = self.ty.block_elems();
        if n % block != 0 {
            return Err(Error::input(format!(
                "ggml {} stores blocks of {block} values; the tensor has {n}",
                self.ty
            )));
        }
        e.part_of_len("blocks", n / block * self.ty.block_bytes())?;
        e.u8s("blocks")
    }
}

impl Codec for Ggml {
    /// `ggml.Q4_K`, `ggml.Q4_K (imatrix)`.
    fn label(&self) -> String {
        let name = self.ty.id();
        match self.imatrix {
            Some(_) if self.ty.uses_imatrix() => format!("{name} (imatrix)"),
            _ => name.to_string(),
        }
    }

    /// `8·block_bytes/block_elems`, every scale included.
    fn bits_per_value(&self, _: &[usize]) -> f64 {
        self.ty.bits_per_value()
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let blocks = ggml::quantize(self.ty, &t.data, self.imatrix.as_deref())?;
        Ok(Encoded::new(&t.shape).with_flat("blocks", Stored::U8(blocks)))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        decoded(&e.shape, ggml::dequantize(self.ty, self.blocks(e)?)?)
    }

    /// One block through `quantize_<type>` while its searches record; the last step holds the
    /// block's bytes, its scales as [`ggml::block_scales`] reads them and its decoded values.
    fn explain_block(&self, t: &Tensor, block: Option<usize>) -> Result<(usize, usize, Vec<Step>)> {
        let ty = self.ty;
        let n = ty.block_elems();
        let count = t.data.len() / n;
        let index = explain::pick_block(block, explain::largest_magnitude(&t.data) / n, count)?;
        let (stored, recorded) = derivation::capture(true, || {
            ggml::quantize_one_block(ty, &t.data, self.imatrix.as_deref(), index)
        });
        let stored = stored?;
        let x = &t.data[index * n..(index + 1) * n];
        // The block a search step is recorded for: IQ1_M searches blocks of 16 (its range
        // groups are the 8 values of one shift).
        let searched = if ty == GgmlType::IQ1_M {
            16
        } else {
            ty.range_group()
        };
        let sub_block = explain::largest_magnitude(x) / searched;
        let source = format!(
            "ggml/src/ggml-quants.c quantize_{} (ggml d99724f2)",
            ty.name().to_lowercase()
        );
        let place = format!(
            "values {}…{} of the flattened tensor, {n} per block{}",
            index * n,
            (index + 1) * n - 1,
            match &self.imatrix {
                Some(im) if ty.uses_imatrix() => format!(
                    ", row {} (the imatrix weighs its columns {}…{})",
                    index * n / im.len(),
                    index * n % im.len(),
                    index * n % im.len() + n - 1
                ),
                _ => String::new(),
            }
        );
        let mut steps = vec![explain::block_step(
            index,
            count,
            block.is_some(),
            x,
            &place,
            &source,
        )];
        let searched = !recorded.is_empty();
        steps.extend(explain::condense(recorded, sub_block));
        if !searched {
            steps.extend(reference_rule(ty, x, &source));
        }
        steps.push(stored_step(ty, &stored, x)?);
        Ok((index, count, steps))
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let ranges = ggml::ranges(self.ty, self.blocks(e)?)?;
        Ok(SliceRanges::new(
            Slicing::Flat(self.ty.range_group()),
            ranges
                .into_iter()
                .map(|(lo, hi)| Some((lo as f64, hi as f64))),
        ))
    }
}

/// How a block of `ty` decodes, in ggml's notation (`q` a stored code).
fn value_formula(ty: GgmlType) -> &'static str {
    use GgmlType as T;
    match ty {
        T::Q4_0 => "x = (q − 8)·d, q ∈ 0…15",
        T::Q5_0 => "x = (q − 16)·d, q ∈ 0…31",
        T::Q4_1 => "x = q·d + m, q ∈ 0…15",
        T::Q5_1 => "x = q·d + m, q ∈ 0…31",
        T::Q8_0 => "x = q·d, q ∈ −128…127",
        T::Q2_K => "x = (d·sc)·q − dmin·mn per sub-block of 16, sc, mn ∈ 0…15, q ∈ 0…3",
        T::Q3_K => "x = (d·sc)·q per sub-block of 16, sc ∈ −32…31, q ∈ −4…3",
        T::Q4_K => "x = (d·sc)·q − dmin·mn per sub-block of 32, sc, mn ∈ 0…63, q ∈ 0…15",
        T::Q5_K => "x = (d·sc)·q − dmin·mn per sub-block of 32, sc, mn ∈ 0…63, q ∈ 0…31",
        T::Q6_K => "x = (d·sc)·q per sub-block of 16, sc ∈ −128…127, q ∈ −32…31",
        T::IQ4_NL => "x = d·kvalues_iq4nl[q], q ∈ 0…15",
        T::IQ4_XS => "x = (d·(ls − 32))·kvalues_iq4nl[q] per sub-block of 32, ls ∈ 0…63",
        T::MXFP4 => {
            "x = kvalues_mxfp4[q]·2^(e − 128) (E2M1 doubled, the E8M0 byte e halved), q ∈ 0…15"
        }
        T::NVFP4 => {
            "x = kvalues_mxfp4[q]·ue4m3(s_j)/2 per sub-block of 16 (the four UE4M3 bytes s_j)"
        }
        T::TQ1_0 | T::TQ2_0 => "x = d·t, t ∈ {−1, 0, 1}",
        T::Q1_0 => "x = ±d",
        T::IQ2_XXS => {
            "x = ((d·(0.5 + s))·0.25)·g·±1 per block of 32, s ∈ 0…15, g ∈ {8, 25, 43} from the iq2xxs_grid point of each 8"
        }
        T::IQ2_XS => {
            "x = ((d·(0.5 + s))·0.25)·g·±1 per 16, s ∈ 0…15, g ∈ {8, 25, 43} from the iq2xs_grid point of each 8"
        }
        T::IQ2_S => {
            "x = ((d·(0.5 + s))·0.25)·g·±1 per 16, s ∈ 0…15, g ∈ {8, 25, 43} from the iq2s_grid point of each 8"
        }
        T::IQ3_XXS => {
            "x = ((d·(0.5 + s))·0.5)·g·±1 per block of 32, s ∈ 0…15, g ∈ {4, 12, …, 52, 62} from the iq3xxs_grid point of each 4"
        }
        T::IQ3_S => {
            "x = (d·(1 + 2s))·g·±1 per block of 32, s ∈ 0…15, g ∈ {1, 3, …, 15} from the iq3s_grid point of each 4"
        }
        T::IQ1_S => {
            "x = (d·(2s + 1))·(g + δ) per block of 32, s ∈ 0…7, g ∈ {−1, 0, 1} from the iq1s_grid point of each 8, δ = ±1/8"
        }
        T::IQ1_M => {
            "x = (d·(2s + 1))·(g + δ) per 16, s ∈ 0…7, g ∈ {−1, 0, 1} from the iq1s_grid point of each 8, δ = ±1/8 per 8"
        }
    }
}

/// The rule of a legacy type's reference quantizer (no search: the scale comes from the block's
/// extremes, found by ggml's own helpers).
fn reference_rule(ty: GgmlType, x: &[f32], source: &str) -> Option<Step> {
    use crate::formats::ggml::search::signed_max;
    use GgmlType as T;
    let (min, max) = x
        .iter()
        .fold((x[0], x[0]), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let step = |formula: &str| Step::new("Scale from the block's extremes", formula, source);
    Some(match ty {
        T::Q4_0 | T::Q5_0 => {
            let (half, top) = if ty == T::Q4_0 { (8, 15) } else { (16, 31) };
            step(&format!(
                "d = max/−{half} with max the first value of largest |x|, with its sign; codes min({top}, trunc(x·(1/d) + {half}.5)) from the float32 d, while fp16(d) is stored"
            ))
            .value("max", signed_max(x).0)
        }
        T::Q4_1 | T::Q5_1 => {
            let top = if ty == T::Q4_1 { 15 } else { 31 };
            step(&format!(
                "d = (max − min)/{top}, m = min; codes trunc((x − min)·(1/d) + 0.5){}",
                if ty == T::Q4_1 { " clamped to 15" } else { "" }
            ))
            .value("min", min)
            .value("max", max)
        }
        T::Q8_0 => step("d = amax/127; codes roundf(x·(1/d)), half away from zero")
            .value("amax", signed_max(x).1),
        _ => return None,
    })
}

/// The last step of a ggml derivation: what the block stores and what it decodes to.
fn stored_step(ty: GgmlType, bytes: &[u8], x: &[f32]) -> Result<Step> {
    let scales = ggml::block_scales(ty, bytes)?;
    let values = ggml::dequantize(ty, bytes)?;
    let largest_error = x
        .iter()
        .zip(&values)
        .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut step = Step::new(
        "Stored block",
        value_formula(ty),
        &format!(
            "ggml/src/ggml-quants.c dequantize_row_{} (ggml d99724f2)",
            ty.name().to_lowercase()
        ),
    )
    .value("bytes", hex)
    .value(if ty == GgmlType::MXFP4 { "e" } else { "d" }, scales.d);
    if let Some(min) = scales.min {
        let name = if scales.sub_mins.is_empty() {
            "m"
        } else {
            "dmin"
        };
        step = step.value(name, min);
    }
    if !scales.sub_scales.is_empty() {
        step = step.value("sub_scales", &scales.sub_scales[..]);
    }
    if !scales.sub_mins.is_empty() {
        step = step.value("sub_mins", &scales.sub_mins[..]);
    }
    Ok(step
        .value("decoded", values)
        .value("largest |error|", largest_error))
}

#[cfg(test)]
mod tests {
    use super::super::tests::ramp;
    use super::super::{evaluate, find, quantize_dequantize};
    use crate::params::Params;

    #[test]
    fn bits_per_value_include_every_scale() {
        let t = ramp(vec![4, 512]);
        for (id, bits) in [
            ("ggml.Q4_0", 4.5),
            ("ggml.Q4_K", 4.5),
            ("ggml.Q6_K", 6.5625),
            ("ggml.Q2_K", 2.625),
            ("ggml.MXFP4", 4.25),
        ] {
            let r = evaluate(find(id).unwrap().id, &Params::new(), &t).unwrap();
            assert_eq!(r.bits_per_value, bits, "{id}");
            assert_eq!(r.format, id);
        }
    }

    #[test]
    fn lattice_i_quants_encode_three_only_with_an_imatrix() {
        use super::super::{codecs, Encoded, Stored};
        use crate::formats::ggml::GgmlType;
        let t = ramp(vec![2, 256]);
        // Every ggml codec encodes.
        let decode_only: Vec<&str> = codecs()
            .iter()
            .filter(|c| !c.encodes && c.id.starts_with("ggml."))
            .map(|c| c.id)
            .collect();
        assert!(decode_only.is_empty(), "{decode_only:?}");
        let lattice = [
            "ggml.IQ2_XXS",
            "ggml.IQ2_XS",
            "ggml.IQ2_S",
            "ggml.IQ3_XXS",
            "ggml.IQ3_S",
            "ggml.IQ1_S",
            "ggml.IQ1_M",
        ];
        let imatrix = Params::new().with("imatrix", vec![1.0f32; 256]);
        for id in lattice {
            let spec = find(id).unwrap();
            assert!(spec.encodes && spec.decode_only.is_none(), "{id}");
            let ty = GgmlType::from_id(id).unwrap();
            // ggml_quantize_requires_imatrix: IQ2_XXS, IQ2_XS, IQ1_S.
            let plain = evaluate(spec.id, &Params::new(), &t);
            if ty.requires_imatrix() {
                let e = plain.unwrap_err().to_string();
                assert!(e.contains("without an importance matrix"), "{id}: {e}");
            } else {
                assert!(plain.is_ok(), "{id}");
            }
            let r = evaluate(spec.id, &imatrix, &t).unwrap();
            assert_eq!(r.bits_per_value, ty.bits_per_value(), "{id}");
            // Any bytes decode.
            let codec = spec.build(&Params::new(), &t.shape).unwrap();
            let stored = Encoded::new(&t.shape)
                .with_flat("blocks", Stored::U8(vec![0x5a; 2 * ty.block_bytes()]));
            assert_eq!(codec.decode(&stored).unwrap().data.len(), 512);
            assert!(codec.ranges(&stored).is_ok());
        }
        // The ternary types, NVFP4 and Q1_0 encode.
        for id in ["ggml.TQ1_0", "ggml.TQ2_0", "ggml.NVFP4", "ggml.Q1_0"] {
            assert!(find(id).unwrap().encodes, "{id}");
            assert!(evaluate(id, &Params::new(), &t).is_ok(), "{id}");
        }
    }

    #[test]
    fn imatrix_is_one_importance_per_column() {
        let spec = find("ggml.Q4_K").unwrap();
        let t = ramp(vec![2, 256]);
        let ok = Params::new().with("imatrix", vec![1.0f32; 256]);
        let q = spec.build(&ok, &t.shape).unwrap();
        assert_eq!(q.label(), "ggml.Q4_K (imatrix)");
        // Uniform importances change the algorithm (the imatrix path), not just the weights.
        let with = quantize_dequantize(q.as_ref(), &t).unwrap().values;
        let plain = spec.build(&Params::new(), &t.shape).unwrap();
        let without = quantize_dequantize(plain.as_ref(), &t).unwrap();
        assert_ne!(with, without.values);
        let short = Params::new().with("imatrix", vec![1.0f32; 128]);
        let e = spec.build(&short, &t.shape).unwrap_err().to_string();
        assert!(e.contains("last axis has 256"), "{e}");
        let text = Params::from_json(r#"{"imatrix": "imatrix.npy"}"#).unwrap();
        assert!(spec.build(&text, &t.shape).is_err());
    }

    #[test]
    fn rows_that_are_not_whole_blocks() {
        // No imatrix: blocks run over the flat values, so [3, 384] (1152 = 4.5 × 256) fails
        // for Q4_K but [2, 384] (768 = 3 × 256) works; with an imatrix rows must be whole.
        let spec = find("ggml.Q4_K").unwrap();
        let e = spec
            .build(&Params::new(), &[3, 384])
            .unwrap()
            .encode(&ramp(vec![3, 384]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a multiple of 256"), "{e}");
        assert!(spec
            .build(&Params::new(), &[2, 384])
            .unwrap()
            .encode(&ramp(vec![2, 384]))
            .is_ok());
        let im = Params::new().with("imatrix", vec![1.0f32; 384]);
        let e = spec
            .build(&im, &[2, 384])
            .unwrap()
            .encode(&ramp(vec![2, 384]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("multiple of 256"), "{e}");
    }
}
