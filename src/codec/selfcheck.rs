//! The codecs' oracle for fuzzing (`fuzz/fuzz_targets/codec.rs`) and its replay in the tests:
//! stored arrays of any content and length, decoded by any codec, never panic. Arrays of the
//! right lengths always decode (a codec reads any bit pattern), to as many values as the shape
//! has; wrong lengths are refused with an error. Codecs that cannot encode a template
//! (decode-only ones, and ggml's IQ2_XXS, IQ2_XS and IQ1_S, which need an imatrix) are fed
//! arrays of their stored layout ([`stored_layout`]).

use super::{codecs, Encoded, Stored};
use crate::formats::ggml::GgmlType;
use crate::params::Params;
use crate::qdq::measure_ranges;
use crate::tensor::Tensor;

/// `n` elements of the kind of `like`, their bytes taken from `bytes` (cycled; zeros when empty).
fn fill(like: &Stored, n: usize, bytes: &[u8]) -> Stored {
    let byte = |i: usize| bytes.get(i % bytes.len().max(1)).copied().unwrap_or(0);
    let word = |i: usize, w: usize| -> u32 {
        (0..w).fold(0u32, |acc, k| acc | (byte(i * w + k) as u32) << (8 * k))
    };
    match like {
        Stored::U8(_) => Stored::U8((0..n).map(byte).collect()),
        Stored::I8(_) => Stored::I8((0..n).map(|i| byte(i) as i8).collect()),
        Stored::U16(_) => Stored::U16((0..n).map(|i| word(i, 2) as u16).collect()),
        Stored::I16(_) => Stored::I16((0..n).map(|i| word(i, 2) as u16 as i16).collect()),
        Stored::I32(_) => Stored::I32((0..n).map(|i| word(i, 4) as i32).collect()),
        Stored::F32(_) => Stored::F32((0..n).map(|i| f32::from_bits(word(i, 4))).collect()),
    }
}

/// The stored arrays of a codec that cannot encode a template, for `shape` (rows of a multiple
/// of 256 values), zero-filled: ggml's `blocks`, the FP4 layouts' packed codes with their scales.
fn stored_layout(id: &str, shape: &[usize]) -> Option<Encoded> {
    let n: usize = shape.iter().product();
    if let Some(ty) = GgmlType::from_id(id) {
        let bytes = n / ty.block_elems() * ty.block_bytes();
        return Some(Encoded::new(shape).with_flat("blocks", Stored::U8(vec![0; bytes])));
    }
    let cols = *shape.last()?;
    let rows = n / cols.max(1);
    let packed = |name| {
        (
            name,
            vec![rows, cols / 2],
            Stored::U8(vec![0; rows * cols / 2]),
        )
    };
    let scales = |per: usize| {
        let len = rows * (cols / per);
        (
            "weight_scale",
            vec![rows, cols / per],
            Stored::U8(vec![0x38; len]),
        )
    };
    let parts = match id {
        "ct.nvfp4" => vec![
            packed("weight_packed"),
            scales(16),
            ("weight_global_scale", vec![1], Stored::F32(vec![1.0])),
        ],
        "ct.mxfp4" => vec![packed("weight_packed"), scales(32)],
        "modelopt.nvfp4" => vec![
            packed("weight"),
            scales(16),
            ("weight_scale_2", vec![], Stored::F32(vec![1.0])),
        ],
        _ => return None,
    };
    Some(
        parts
            .into_iter()
            .fold(Encoded::new(shape), |e, (name, s, data)| {
                e.with(name, s, data)
            }),
    )
}

/// Decode `data` as the stored arrays of a codec the first byte picks, for a shape the next
/// three bytes give; the byte after them says which arrays get a wrong length.
pub fn check_decode(data: &[u8]) {
    let registry = codecs();
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let entry = &registry[pick as usize % registry.len()];
    let (dims, rest) = rest.split_at(rest.len().min(3));
    let mut shape: Vec<usize> = dims.iter().map(|&d| 1 + (d as usize % 24)).collect();
    if entry.id.starts_with("ggml.") || !entry.encodes {
        // Whole super-blocks (and FP4 groups), so that a template can be made.
        shape = vec![shape.first().copied().unwrap_or(1), 256];
    }
    let Ok(codec) = entry.build(&Params::new(), &shape) else {
        return;
    };
    let n: usize = shape.iter().product();
    let ramp = Tensor::new(
        shape.clone(),
        (0..n)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 10.0)
            .collect(),
    )
    .expect("a ramp of the shape");
    // Codecs that cannot encode the ramp (decode-only ones, ggml types that need an imatrix)
    // give a template of the right lengths.
    let Some(template) = codec
        .encode(&ramp)
        .ok()
        .or_else(|| stored_layout(entry.id, &shape))
    else {
        return;
    };
    let (wrong, bytes) = rest.split_first().map_or((0u8, &[][..]), |(w, b)| (*w, b));
    let mut e = Encoded::new(&shape);
    for (k, part) in template.parts.iter().enumerate() {
        let len = part.data.len();
        let len = match (wrong >> (k % 8)) & 1 {
            0 => len,
            _ if wrong & 0x80 != 0 => len + 1 + bytes.len() % 7,
            _ => len.saturating_sub(1),
        };
        // A part that states the shape (compressed-tensors' `weight_shape`) is checked against
        // it, as a file header would be: it keeps the template's content.
        let data = if part.name.ends_with("_shape") && len == part.data.len() {
            part.data.clone()
        } else {
            fill(&part.data, len, bytes)
        };
        e = e.with(part.name, part.shape.clone(), data);
    }
    let lengths_kept = e
        .parts
        .iter()
        .zip(&template.parts)
        .all(|(a, b)| a.data.len() == b.data.len());
    match codec.decode(&e) {
        Ok(values) => {
            assert_eq!(values.data.len(), n, "{}", entry.id);
            if let Ok(ranges) = codec.ranges(&e) {
                let _ = measure_ranges(&values.data, &values.data, &ranges);
            }
        }
        Err(err) => assert!(
            !lengths_kept,
            "{}: arrays of the right lengths were refused: {err}",
            entry.id
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn any_stored_bytes_decode_or_fail_cleanly() {
        // A deterministic sweep: every codec, shapes, wrong lengths, and contents including
        // NaN scales, ±∞ and garbage block bytes.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..3000u32 {
            let mut input = vec![(round % 256) as u8];
            for _ in 0..(5 + round % 300) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                input.push(x as u8);
            }
            if round % 3 == 0 {
                input[4] = 0; // lengths kept
            }
            super::check_decode(&input);
        }
    }

    #[test]
    fn decode_only_codecs_have_a_stored_layout() {
        // Their arrays come from the layout, not from encoding; every one of them is swept.
        for entry in super::codecs().iter().filter(|e| !e.encodes) {
            let layout = super::stored_layout(entry.id, &[2, 256]).expect(entry.id);
            let codec = entry
                .build(&crate::params::Params::new(), &[2, 256])
                .unwrap();
            assert_eq!(
                codec.decode(&layout).unwrap().data.len(),
                512,
                "{}",
                entry.id
            );
        }
    }
}
