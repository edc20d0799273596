//! `awq.gemm`: AWQ's GEMM checkpoints (AutoAWQ's layout, as GPTQModel 7.7.0's `AwqTorchLinear`
//! packs and `dequantize_gemm` reads it), with AWQ's argument names (`bits`, `group_size`,
//! `zero_point`).
//!
//! A Linear's weight `W [N, K]` (out × in) is stored with the input dim first:
//! * `qweight` int32 `[K, ⌈N/8⌉]`: eight 4-bit codes per word **along N, interleaved**: column
//!   `n = 8c + j` of row `k` sits in nibble `[0, 4, 1, 5, 2, 6, 3, 7][j]` of `qweight[k, c]`
//!   (the packer writes columns `[0, 2, 4, 6, 1, 3, 5, 7]` into nibbles 0…7);
//! * `qzeros` int32 `[G, ⌈N/8⌉]`, the same interleave, the zero stored as it is (no offset);
//! * `scales` float16 `[G, N]` (bfloat16 when the model's scales were: the `dtype` parameter).
//!
//! Groups are `group_size` consecutive input columns (`g = k / group_size`, no g_idx). Decoding,
//! in the scales' dtype: `W[n, k] = dtype((q − z) · scales[g, n])`, one rounding.
//!
//! **Encode** is `pseudo_quantize_tensor` (plain round-to-nearest, without AWQ's
//! activation-aware scale search, which needs calibration activations) followed by
//! `AwqTorchLinear.pack`, in float32. Per row and group of `group_size` input columns:
//! * `zero_point`: `s = max(max − min, 1e-5)/(2^bits − 1)`, `z = clamp(−round(min/s), 0, 2^bits − 1)`;
//! * symmetric: `s = max(max|x|, 1e-5)/(2^(bits−1) − 1)`, `z = 2^(bits−1)`;
//!
//! the pseudo-quantized values `w' = (clamp(round(x/s) + z, 0, 2^bits − 1) − z)·s` (symmetric:
//! `clamp(round(x/s), −2^(bits−1), 2^(bits−1) − 1)·s`) are then packed as `pack` does:
//! `q = round((w' + z·s)/dtype(s))` against the **stored** (rounded) scale, not clamped, kept
//! modulo 16 by the packer's mask.

use super::explain::StoredSlices;
use super::gptq::{field, group_range, out_in, part_2d, scale_values, stored_scales};
use super::half::OutDType;
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::{Error, Result};
use crate::params::Choice;
use crate::qdq::{SliceRanges, Slicing};
use crate::quant::round_half_even;
use crate::slice_map::SliceMap;
use crate::tensor::Tensor;

/// The library and version reproduced.
pub const LIBRARY: (&str, &str) = ("GPTQModel", "7.7.0 (AwqTorchLinear, dequantize_gemm)");

const QUIRKS: &[&str] = &[
    "codes and zeros are packed along the output dim in the interleaved order [0, 2, 4, 6, 1, 3, 5, 7] (quantization/awq/utils/packing_utils.py AWQ_ORDER)",
    "the zero is stored as it is, without GPTQ v1's minus one (packing_utils.py pack_awq)",
    "pack divides by the scale already rounded to float16 but adds zero·scale with the float32 scale, and does not clamp: a code past 15 wraps modulo 16 (nn_modules/qlinear/torch_awq.py pack)",
    "the product (q − z)·scale is computed in the scales' dtype: one rounding to float16 (packing_utils.py dequantize_gemm)",
];

/// Column `8c + j` sits in nibble `REVERSE[j]` of word `c`.
const REVERSE: [usize; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

crate::declare_params! {
    /// AWQ quantization arguments.
    pub struct AwqArgs {
        /// bits per code (the GEMM layout's interleave is 4-bit)
        bits: i64 = 4; int(4, 4), Data;
        /// input columns per group (−1: one group over all columns)
        group_size: i64 = 128; int(-1, 65536), Data;
        /// asymmetric min–max with a zero point (true), or symmetric
        zero_point: bool = true; boolean(), Data;
        /// dtype of the stored scales, and of the dequantized values
        dtype: OutDType = OutDType::Float16; choice(), Data;
    }
}

/// A configured AWQ GEMM codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Awq {
    /// `None`: one group over all input columns.
    pub group_size: Option<usize>,
    pub zero_point: bool,
    pub dtype: OutDType,
}

/// The codec family `awq.gemm`.
pub struct AwqFamily;

impl CodecFamily for AwqFamily {
    type Args = AwqArgs;
    fn build(a: &AwqArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        if a.bits != 4 {
            return Err(Error::param(
                "bits",
                "the AWQ GEMM layout interleaves 4-bit codes; other widths are not read",
            ));
        }
        Ok(Box::new(Awq {
            group_size: super::gptq::group_size(a.group_size)?,
            zero_point: a.zero_point,
            dtype: a.dtype,
        }))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    let (library, version) = LIBRARY;
    CodecEntry::of::<AwqFamily>(
        "awq.gemm",
        "AWQ GEMM: 4-bit codes interleaved eight per int32 along the output dim, zeros and float16 scales per group",
    )
    .reproducing(library, version, QUIRKS)
    .drawn(7, "GPTQ / AWQ")
}

const MAXQ: u32 = 15;

/// The stored arrays of an AWQ weight, lengths checked: `[N, K]`, the groups, and the zeros
/// and scales, `[G, N]`.
struct Unpacked {
    n: usize,
    k: usize,
    groups: usize,
    zeros: Vec<u32>,
    scales: Vec<f32>,
}

impl Awq {
    fn size(&self, k: usize) -> usize {
        self.group_size.unwrap_or(k).max(1)
    }

    fn unpack(&self, e: &Encoded) -> Result<Unpacked> {
        let (n, k) = out_in(&e.shape)?;
        let groups = k.div_ceil(self.size(k)).max(1);
        let cols = n.div_ceil(8);
        part_2d(e, "qweight", k, cols, (n, k))?;
        e.i32s("qweight")?;
        part_2d(e, "qzeros", groups, cols, (n, k))?;
        let qzeros = e.i32s("qzeros")?;
        let scales = scale_values(part_2d(e, "scales", groups, n, (n, k))?, self.dtype)?;
        let zeros = (0..groups * n)
            .map(|i| {
                let (g, c) = (i / n, i % n);
                field(qzeros[g * cols + c / 8] as u32, REVERSE[c % 8], 4)
            })
            .collect();
        Ok(Unpacked {
            n,
            k,
            groups,
            zeros,
            scales,
        })
    }

    /// `pseudo_quantize_tensor` on one group: `(scale, zero)` and the pseudo-quantized values.
    fn pseudo_quantize(&self, x: &[f32]) -> (f32, f32, Vec<f32>) {
        let floor = 1e-5f64 as f32;
        if self.zero_point {
            let (lo, hi) = x
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            let s = (hi - lo).max(floor) / MAXQ as f32;
            let z = (-round_half_even(lo / s)).clamp(0.0, MAXQ as f32);
            let w = x
                .iter()
                .map(|&v| ((round_half_even(v / s) + z).clamp(0.0, MAXQ as f32) - z) * s)
                .collect();
            (s, z, w)
        } else {
            let amax = x.iter().fold(0f32, |a, &v| a.max(v.abs())).max(floor);
            let s = amax / 7.0;
            let w = x
                .iter()
                .map(|&v| round_half_even(v / s).clamp(-8.0, 7.0) * s)
                .collect();
            (s, 8.0, w)
        }
    }
}

impl Codec for Awq {
    /// `awq int4 g128`, `awq int4 g128 sym`.
    fn label(&self) -> String {
        let mut s = "awq int4".to_string();
        match self.group_size {
            Some(g) => s.push_str(&format!(" g{g}")),
            None => s.push_str(" per channel"),
        }
        if !self.zero_point {
            s.push_str(" sym");
        }
        s
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok((n, k)) = out_in(shape) else {
            return 4.0;
        };
        let groups = k.div_ceil(self.size(k)).max(1);
        let bytes = 4 * (k + groups) * n.div_ceil(8) + groups * n * self.dtype.bits() as usize / 8;
        bytes as f64 * 8.0 / (n * k).max(1) as f64
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let (n, k) = out_in(&t.shape)?;
        let size = self.size(k);
        if k % size != 0 || n % 8 != 0 {
            return Err(Error::input(format!(
                "AWQ packs whole groups of {size} input columns and eight output rows per word; [{n}, {k}] does not divide"
            )));
        }
        if let Some(bad) = t.data.iter().find(|v| !v.is_finite()) {
            return Err(Error::input(format!(
                "AWQ's min–max quantizer needs finite values, not {bad}"
            )));
        }
        let groups = k / size;
        let (cols, mut scales, mut zeros) = (n / 8, vec![0f32; groups * n], vec![0u32; groups * n]);
        let mut pseudo = vec![0f32; n * k];
        for row in 0..n {
            for g in 0..groups {
                let at = row * k + g * size;
                let (s, z, w) = self.pseudo_quantize(&t.data[at..at + size]);
                scales[g * n + row] = s;
                zeros[g * n + row] = z as u32;
                pseudo[at..at + size].copy_from_slice(&w);
            }
        }
        let stored = stored_scales(&scales, self.dtype);
        let rounded = scale_values(
            &super::Part {
                name: "scales",
                shape: vec![groups, n],
                data: stored.clone(),
            },
            self.dtype,
        )?;
        let mut qweight = vec![0u32; k * cols];
        for row in 0..n {
            for col in 0..k {
                let i = (col / size) * n + row;
                let (s, z) = (scales[i], zeros[i] as f32);
                let q = round_half_even((pseudo[row * k + col] + z * s) / rounded[i]) as i64;
                let nibble = (q & MAXQ as i64) as u32;
                qweight[col * cols + row / 8] |= nibble << (4 * REVERSE[row % 8] as u32);
            }
        }
        let mut qzeros = vec![0u32; groups * cols];
        for (i, &z) in zeros.iter().enumerate() {
            let (g, c) = (i / n, i % n);
            qzeros[g * cols + c / 8] |= (z & MAXQ) << (4 * REVERSE[c % 8] as u32);
        }
        let as_i32 = |v: Vec<u32>| Stored::I32(v.into_iter().map(|x| x as i32).collect());
        Ok(Encoded::new(&t.shape)
            .with("qweight", vec![k, cols], as_i32(qweight))
            .with("qzeros", vec![groups, cols], as_i32(qzeros))
            .with("scales", vec![groups, n], stored))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let Unpacked {
            n,
            k,
            zeros,
            scales,
            ..
        } = self.unpack(e)?;
        let qweight = e.i32s("qweight")?;
        let (cols, size) = (n.div_ceil(8), self.size(k));
        let mut values = vec![0f32; n * k];
        for col in 0..k {
            let g = col / size;
            for row in 0..n {
                let q = field(qweight[col * cols + row / 8] as u32, REVERSE[row % 8], 4);
                let (s, z) = (scales[g * n + row], zeros[g * n + row]);
                values[row * k + col] = self.dtype.round((q as f32 - z as f32) * s);
            }
        }
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let Unpacked {
            n,
            k,
            groups,
            zeros,
            scales,
        } = self.unpack(e)?;
        Ok(SliceRanges::new(
            Slicing::Mapped(SliceMap::from_blocks(&[n, k], &[1, self.size(k)])),
            (0..n)
                .flat_map(|row| (0..groups).map(move |g| g * n + row))
                .map(|i| group_range(scales[i], zeros[i], MAXQ)),
        ))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let Unpacked {
            n,
            k,
            groups,
            zeros,
            scales,
        } = self.unpack(e)?;
        let qweight = e.i32s("qweight")?;
        let cols = n.div_ceil(8);
        let codes = (0..n * k)
            .map(|i| {
                let (row, col) = (i / k.max(1), i % k.max(1));
                field(qweight[col * cols + row / 8] as u32, REVERSE[row % 8], 4) as i16
            })
            .collect();
        let order = (0..n).flat_map(|row| (0..groups).map(move |g| g * n + row));
        let rule = if self.zero_point {
            "per row and group (pseudo_quantize_tensor, float32): s = max(max − min, 1e-5)/15, \
             z = clamp(−round(min/s), 0, 15), w' = (clamp(round(x/s) + z, 0, 15) − z)·s"
        } else {
            "per row and group (pseudo_quantize_tensor, float32): s = max(max |x|, 1e-5)/7, z = 8, \
             w' = clamp(round(x/s), −8, 7)·s"
        };
        let rule = format!(
            "{rule}; q = round((w' + z·s)/{d}(s)) mod 16, packed eight per int32 along N in the order \
             0 4 1 5 2 6 3 7; x̂ = {d}((q − z)·scales)",
            d = self.dtype.name()
        );
        Ok(Some(
            StoredSlices::new(
                Slicing::Mapped(SliceMap::from_blocks(&[n, k], &[1, self.size(k)])),
                n * groups,
                rule,
                "awq/quantize/quantizer.py pseudo_quantize_tensor (AutoAWQ), \
                 gptqmodel/nn_modules/qlinear/awq_torch.py AwqTorchLinear.pack (GPTQModel 7.7.0)",
            )
            .column("scales", order.clone().map(|i| scales[i] as f64))
            .column("zero", order.map(|i| zeros[i] as f64))
            .codes(codes),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::find;
    use super::*;
    use crate::params::Params;

    fn codec(p: serde_json::Value) -> Box<dyn Codec> {
        find("awq.gemm")
            .unwrap()
            .build(&Params::from_value(p).unwrap(), &[16, 256])
            .unwrap()
    }

    #[test]
    fn codes_sit_in_the_interleaved_nibbles() {
        let c = codec(serde_json::json!({"group_size": 256}));
        // Row n of column 0 set to n/16 of the range: codes rise with n.
        let mut t = Tensor::new(vec![16, 256], vec![0.0; 16 * 256]).unwrap();
        for n in 0..16 {
            t.data[n * 256] = n as f32;
            t.data[n * 256 + 1] = -1.0;
        }
        let e = c.encode(&t).unwrap();
        let words = e.i32s("qweight").unwrap();
        // Column n = 8c + j in nibble [0, 4, 1, 5, 2, 6, 3, 7][j]: nibble i holds column
        // [0, 2, 4, 6, 1, 3, 5, 7][i].
        let order = [0, 2, 4, 6, 1, 3, 5, 7];
        let y = c.decode(&e).unwrap();
        for (i, &col) in order.iter().enumerate() {
            let q = (words[0] as u32 >> (4 * i)) & 15;
            let zero = field(e.i32s("qzeros").unwrap()[0] as u32, REVERSE[col], 4);
            let s = scale_values(e.part("scales").unwrap(), OutDType::Float16).unwrap()[col];
            assert_eq!(
                y.data[col * 256],
                OutDType::Float16.round((q as f32 - zero as f32) * s)
            );
        }
        assert_eq!(c.label(), "awq int4 g256");
    }

    #[test]
    fn malformed_arrays_are_refused_with_the_array_named() {
        let c = codec(serde_json::json!({}));
        let t = super::super::tests::ramp(vec![16, 256]);
        let e = c.encode(&t).unwrap();
        let mut bad = e.clone();
        bad.parts.retain(|p| p.name != "qzeros");
        bad = bad.with("qzeros", vec![2, 3], Stored::I32(vec![0; 6]));
        let msg = c.decode(&bad).unwrap_err().to_string();
        assert!(
            msg.contains("stored array `qzeros` is [2, 3], a [16, 256] weight needs [2, 2]"),
            "{msg}"
        );
        let mut wrong = e.clone();
        wrong.parts.retain(|p| p.name != "scales");
        wrong = wrong.with("scales", vec![2, 16], Stored::I16(vec![0; 32]));
        let msg = c.decode(&wrong).unwrap_err().to_string();
        assert!(msg.contains("holds int16, not float16 scales"), "{msg}");
        let odd = Tensor::new(vec![12, 256], vec![0.5; 12 * 256]).unwrap();
        let msg = c.encode(&odd).unwrap_err().to_string();
        assert!(msg.contains("eight output rows per word"), "{msg}");
        let e = find("awq.gemm")
            .unwrap()
            .build(&Params::new().with("bits", 8), &[16, 256])
            .unwrap_err()
            .to_string();
        assert!(e.contains("bits"), "{e}");
    }

    #[test]
    fn symmetric_awq_stores_zero_eight() {
        let c = codec(serde_json::json!({"zero_point": false}));
        let t = super::super::tests::ramp(vec![16, 256]);
        let e = c.encode(&t).unwrap();
        assert!(e
            .i32s("qzeros")
            .unwrap()
            .iter()
            .all(|&z| z as u32 == 0x8888_8888));
        let y = c.decode(&e).unwrap();
        let amax = t.data.iter().fold(0f32, |a, v| a.max(v.abs()));
        assert!(y.data.iter().all(|v| v.abs() <= amax * 1.01));
    }
}
