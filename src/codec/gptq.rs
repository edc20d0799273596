//! `gptq.int`: GPTQ's packed integer checkpoints (GPTQModel 7.7.0 `TorchLinear`, AutoGPTQ's
//! layout), with GPTQ's own argument names (`bits`, `group_size`, `desc_act`, `sym`,
//! `checkpoint_format`).
//!
//! A Linear's weight `W [N, K]` (out × in) is stored transposed, as the library stores it:
//! * `qweight` int32 `[⌈K/p⌉, N]`, `p = 32/bits` codes per word **down a column**: bits
//!   `i·bits … i·bits+bits−1` of `qweight[r, n]` hold the unsigned code `q[k, n]` of
//!   `k = p·r + i`;
//! * `qzeros` int32 `[G, ⌈N/p⌉]`, packed **along N**: field `i` of `qzeros[g, c]` holds the zero of
//!   column `n = p·c + i`. Checkpoint format `gptq` (v1) stores `z − 1`, subtracted from the whole
//!   word (`0x11111111` at 4 bits, `0x55555555` at 2, `0x01010101` at 8), borrows included, so
//!   the reader adds it back to the whole word, modulo 2³², before splitting it
//!   (`convert_gptq_v1_to_v2_format_module`); `gptq_v2` stores `z` itself;
//! * `scales` float16 `[G, N]` (bfloat16 or float32 where an exporter keeps them so: the `dtype`
//!   parameter);
//! * `g_idx` int32 `[K]`: the group of each input column. With `desc_act` (act-order) it is not
//!   monotonic; without it, it is `k / group_size` (and may be absent).
//!
//! `G = ⌈K/group_size⌉` (one group when `group_size = −1`). Dequantization, as
//! `dequantize_weight` computes it in the scales' dtype:
//! `W[n, k] = dtype(scales[g, n] · (q[k, n] − z[g, n]))` with `g = g_idx[k]` — `q − z` is an
//! exact small integer and the product is rounded once; zeros come out `+0.0` (a negative scale
//! gives `−0.0`).
//!
//! **Encode** is GPTQModel's round-to-nearest path (its `fallback: rtn`, what `TorchLinear.pack`
//! stores for a min–max quantizer), not GPTQ itself — GPTQ's error-compensating updates need the
//! calibration activations' Hessian, which a tensor alone does not have. Per row `n` and group
//! `g` of `group_size` consecutive input columns, in float32 (`Quantizer.find_params`):
//! `xmin = min(min x, 0)`, `xmax = max(max x, 0)`; symmetric: `xmax = max(|xmin|, xmax)` and
//! `xmin = −xmax` when `xmin < 0`; an all-zero range becomes `[−1, 1]` (symmetric) or
//! `[xmin − 1, xmax + 1]`; `s = (xmax − xmin)/maxq`, `z = (maxq + 1)/2` (symmetric) or
//! `round(−xmin/s)`. The quantized values `Q = s·(clamp(round(x/s) + z, 0, maxq) − z)` are then
//! packed as `pack` does: `q = clamp(round((Q + z·s)/s), 0, maxq)` with the float32 scale, the
//! scale stored rounded to `dtype`. Act-order (`desc_act`) cannot be encoded without the Hessian
//! and is refused.
//!
//! The `gptq_v2` reading follows GPTQModel's converter (no offset); there is no golden
//! `gptq_v2` checkpoint, so it is checked only against the v1 files converted in the tests.

use super::explain::StoredSlices;
use super::half::OutDType;
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::{Error, Result};
use crate::params::Choice;
use crate::qdq::{SliceRanges, Slicing};
use crate::quant::round_half_even;
use crate::slice_map::SliceMap;
use crate::tensor::Tensor;

/// The library and version reproduced.
pub const LIBRARY: (&str, &str) = ("GPTQModel", "7.7.0 (TorchLinear, CPU)");

const QUIRKS: &[&str] = &[
    "checkpoint_format gptq (v1) stores each zero minus one, subtracted from the whole int32 word (borrows included); the reader adds 0x11111111 to the word modulo 2^32 before splitting it (utils/model.py convert_gptq_v1_to_v2_format_module), which differs from a nibble-wise +1 when a zero is 0",
    "qweight packs 32/bits codes down a column (input dim), qzeros along a row (output dim) (nn_modules/qlinear/__init__.py pack_block)",
    "act-order: g_idx[k] picks the group of input column k, in no particular order (nn_modules/qlinear/__init__.py _dequantize_from_codes)",
    "the product scale·(q − z) is computed in the scales' dtype: one rounding to float16 (nn_modules/qlinear/__init__.py _dequantize_from_codes)",
];

crate::choice_enum! {
    /// `checkpoint_format` of GPTQModel's `QuantizeConfig`.
    pub enum CheckpointFormat {
        Gptq = "gptq",
        GptqV2 = "gptq_v2",
    }
}

crate::declare_params! {
    /// GPTQModel `QuantizeConfig` arguments.
    pub struct GptqArgs {
        /// bits per code: 2, 4 or 8 (3-bit packs across words and is not read)
        bits: i64 = 4; int(2, 8), Data;
        /// input columns per group (−1: one group over all columns)
        group_size: i64 = 128; int(-1, 65536), Data;
        /// act-order: g_idx orders the groups (decoded from g_idx; refused by encode)
        desc_act: bool = false; boolean(), Data;
        /// symmetric (zero at 2^(bits−1)) or asymmetric min–max
        sym: bool = true; boolean(), Data;
        /// gptq (v1: zeros stored minus one) or gptq_v2 (zeros as they are)
        checkpoint_format: CheckpointFormat = CheckpointFormat::Gptq; choice(), Data;
        /// dtype of the stored scales, and of the dequantized values
        dtype: OutDType = OutDType::Float16; choice(), Data;
    }
}

/// A configured GPTQ codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gptq {
    pub bits: u32,
    /// `None`: one group over all input columns.
    pub group_size: Option<usize>,
    pub desc_act: bool,
    pub sym: bool,
    pub v1: bool,
    pub dtype: OutDType,
}

/// The codec family `gptq.int`.
pub struct GptqFamily;

impl CodecFamily for GptqFamily {
    type Args = GptqArgs;
    fn build(a: &GptqArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Gptq {
            bits: packed_bits(a.bits)?,
            group_size: group_size(a.group_size)?,
            desc_act: a.desc_act,
            sym: a.sym,
            v1: a.checkpoint_format == CheckpointFormat::Gptq,
            dtype: a.dtype,
        }))
    }
}

/// Bit widths whose codes fill an int32 word exactly.
pub(super) fn packed_bits(bits: i64) -> Result<u32> {
    match bits {
        2 | 4 | 8 => Ok(bits as u32),
        _ => Err(Error::param(
            "bits",
            format!("{bits}-bit codes do not fill an int32 word; 2, 4 and 8 are read"),
        )),
    }
}

/// `group_size`: positive, or −1 for one group.
pub(super) fn group_size(g: i64) -> Result<Option<usize>> {
    match g {
        -1 => Ok(None),
        g if g > 0 => Ok(Some(g as usize)),
        _ => Err(Error::param(
            "group_size",
            format!("{g} is neither a positive group size nor −1 (one group)"),
        )),
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    let (library, version) = LIBRARY;
    CodecEntry::of::<GptqFamily>(
        "gptq.int",
        "GPTQ packed integers: int32 words of codes, zeros and float16 scales per group, act-order g_idx",
    )
    .reproducing(library, version, QUIRKS)
    .drawn(7, "GPTQ / AWQ")
}

/// `(N, K)` of a 2-d weight.
pub(super) fn out_in(shape: &[usize]) -> Result<(usize, usize)> {
    match shape {
        [n, k] => Ok((*n, *k)),
        _ => Err(Error::input(format!(
            "a packed Linear weight is 2-d [out, in]; shape {shape:?} is not"
        ))),
    }
}

/// Part `name`, checked to hold `rows × cols` elements and, when it is stored 2-d, that shape.
pub(super) fn part_2d<'a>(
    e: &'a Encoded,
    name: &str,
    rows: usize,
    cols: usize,
    weight: (usize, usize),
) -> Result<&'a super::Part> {
    let part = e.part(name)?;
    let fits =
        part.data.len() == rows * cols && (part.shape.len() != 2 || part.shape == [rows, cols]);
    if !fits {
        return Err(Error::input(format!(
            "stored array `{name}` is {:?}, a [{}, {}] weight needs [{rows}, {cols}]",
            part.shape, weight.0, weight.1
        )));
    }
    Ok(part)
}

/// The values of a part of scales stored as `dtype` (16-bit types as their bit patterns).
pub(super) fn scale_values(part: &super::Part, dtype: OutDType) -> Result<Vec<f32>> {
    Ok(match (&part.data, dtype) {
        (Stored::U16(v), OutDType::Float16) => v
            .iter()
            .map(|&b| half::f16::from_bits(b).to_f32())
            .collect(),
        (Stored::U16(v), OutDType::Bfloat16) => v
            .iter()
            .map(|&b| f32::from_bits((b as u32) << 16))
            .collect(),
        (Stored::F32(v), OutDType::Float32) => v.clone(),
        (data, _) => {
            return Err(Error::input(format!(
                "stored array `{}` holds {}, not {} scales",
                part.name,
                data.dtype(),
                dtype.name()
            )))
        }
    })
}

/// Scales rounded to `dtype` and stored as it stores them.
pub(super) fn stored_scales(scales: &[f32], dtype: OutDType) -> Stored {
    match dtype {
        OutDType::Float16 => Stored::U16(
            scales
                .iter()
                .map(|&s| half::f16::from_f32(s).to_bits())
                .collect(),
        ),
        OutDType::Bfloat16 => Stored::U16(
            scales
                .iter()
                .map(|&s| half::bf16::from_f32(s).to_bits())
                .collect(),
        ),
        OutDType::Float32 => Stored::F32(scales.to_vec()),
    }
}

/// Field `i` (`bits` wide) of a word.
#[inline(always)]
pub(super) fn field(word: u32, i: usize, bits: u32) -> u32 {
    (word >> (i as u32 * bits)) & ((1u32 << bits) - 1)
}

/// `1` in every field of a word: what v1 subtracts from the packed zeros.
fn ones(bits: u32) -> u32 {
    (0..32 / bits).fold(0u32, |acc, i| acc | 1 << (i * bits))
}

/// The per-row, per-group slice ranges `[(0 − z)·s, (maxq − z)·s]`, ordered.
pub(super) fn group_range(s: f32, z: u32, maxq: u32) -> Option<(f64, f64)> {
    let (a, b) = (
        (0.0 - z as f64) * s as f64,
        (maxq as f64 - z as f64) * s as f64,
    );
    Some((a.min(b), a.max(b)))
}

/// The stored arrays of a GPTQ weight, lengths checked.
struct Unpacked {
    n: usize,
    k: usize,
    groups: usize,
    /// `[G, N]` zeros.
    zeros: Vec<u32>,
    /// `[G, N]` scales.
    scales: Vec<f32>,
    /// The group of each input column.
    g_idx: Vec<usize>,
    /// Whether `g_idx` is `k / group_size` for every column.
    trivial: bool,
}

impl Gptq {
    fn pack_factor(&self) -> usize {
        (32 / self.bits) as usize
    }

    fn maxq(&self) -> u32 {
        (1u32 << self.bits) - 1
    }

    fn groups(&self, k: usize) -> usize {
        self.group_size.map_or(1, |g| k.div_ceil(g)).max(1)
    }

    /// The group of column `k` without act-order.
    fn group_of(&self, k: usize) -> usize {
        self.group_size.map_or(0, |g| k / g)
    }

    fn unpack(&self, e: &Encoded) -> Result<Unpacked> {
        let (n, k) = out_in(&e.shape)?;
        let (p, groups) = (self.pack_factor(), self.groups(k));
        part_2d(e, "qweight", k.div_ceil(p), n, (n, k))?;
        e.i32s("qweight")?;
        part_2d(e, "qzeros", groups, n.div_ceil(p), (n, k))?;
        let qzeros = e.i32s("qzeros")?;
        let scales = scale_values(part_2d(e, "scales", groups, n, (n, k))?, self.dtype)?;
        let g_idx: Vec<usize> = if e.has("g_idx") {
            e.part_of_len("g_idx", k)?;
            e.i32s("g_idx")?
                .iter()
                .map(|&g| {
                    usize::try_from(g)
                        .ok()
                        .filter(|&g| g < groups)
                        .ok_or_else(|| {
                            Error::input(format!(
                                "g_idx value {g} is out of range for {groups} groups"
                            ))
                        })
                })
                .collect::<Result<_>>()?
        } else {
            (0..k).map(|c| self.group_of(c)).collect()
        };
        let trivial = g_idx
            .iter()
            .enumerate()
            .all(|(c, &g)| g == self.group_of(c));
        let offset = if self.v1 { ones(self.bits) } else { 0 };
        let cols = n.div_ceil(p);
        let zeros = (0..groups * n)
            .map(|i| {
                let (g, c) = (i / n, i % n);
                let word = (qzeros[g * cols + c / p] as u32).wrapping_add(offset);
                field(word, c % p, self.bits)
            })
            .collect();
        Ok(Unpacked {
            n,
            k,
            groups,
            zeros,
            scales,
            g_idx,
            trivial,
        })
    }

    /// `TorchLinear.pack`: the codes of `w [N, K]` under `scales`/`zeros` (`[G, N]`, float32
    /// scales as the quantizer computed them) and the groups `g_idx`, packed with the scales
    /// stored in `dtype` and the zeros as the checkpoint format stores them.
    pub fn pack(
        &self,
        w: &Tensor,
        scales: &[f32],
        zeros: &[u32],
        g_idx: &[usize],
    ) -> Result<Encoded> {
        let (n, k) = out_in(&w.shape)?;
        let (p, groups, maxq) = (self.pack_factor(), self.groups(k), self.maxq());
        if scales.len() != groups * n || zeros.len() != groups * n || g_idx.len() != k {
            return Err(Error::input(format!(
                "pack needs [{groups}, {n}] scales and zeros and {k} g_idx values"
            )));
        }
        if let Some(&g) = g_idx.iter().find(|&&g| g >= groups) {
            return Err(Error::input(format!(
                "g_idx value {g} is out of range for {groups} groups"
            )));
        }
        let bits = self.bits;
        let mut qweight = vec![0u32; k.div_ceil(p) * n];
        for row in 0..n {
            for (col, &g) in g_idx.iter().enumerate() {
                let (s, z) = (scales[g * n + row], zeros[g * n + row] as f32);
                let q =
                    round_half_even((w.data[row * k + col] + z * s) / s).clamp(0.0, maxq as f32);
                qweight[(col / p) * n + row] |= (q as u32) << ((col % p) as u32 * bits);
            }
        }
        let cols = n.div_ceil(p);
        let offset = if self.v1 { ones(bits) } else { 0 };
        let mut qzeros = vec![0u32; groups * cols];
        for (i, &z) in zeros.iter().enumerate() {
            let (g, c) = (i / n, i % n);
            qzeros[g * cols + c / p] |= (z & maxq) << ((c % p) as u32 * bits);
        }
        let as_i32 = |v: Vec<u32>| Stored::I32(v.into_iter().map(|x| x as i32).collect());
        let qzeros: Vec<u32> = qzeros.into_iter().map(|x| x.wrapping_sub(offset)).collect();
        Ok(Encoded::new(&w.shape)
            .with("qweight", vec![k.div_ceil(p), n], as_i32(qweight))
            .with("qzeros", vec![groups, cols], as_i32(qzeros))
            .with("scales", vec![groups, n], stored_scales(scales, self.dtype))
            .with(
                "g_idx",
                vec![k],
                Stored::I32(g_idx.iter().map(|&g| g as i32).collect()),
            ))
    }

    /// `Quantizer.find_params` on one slice: `(scale, zero)`.
    fn find_params(&self, x: &[f32]) -> (f32, f32) {
        let maxq = self.maxq() as f32;
        let (lo, hi) = x
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        let (mut xmin, mut xmax) = (lo.min(0.0), hi.max(0.0));
        if self.sym {
            xmax = xmin.abs().max(xmax);
            if xmin < 0.0 {
                xmin = -xmax;
            }
        }
        let both_zero = if self.sym {
            xmax == 0.0
        } else {
            xmin == 0.0 && xmax == 0.0
        };
        if both_zero {
            xmin -= 1.0;
            xmax += 1.0;
        }
        let scale = (xmax - xmin) / maxq;
        let zero = if self.sym {
            (maxq + 1.0) / 2.0
        } else {
            round_half_even(-xmin / scale)
        };
        (scale, zero)
    }
}

impl Codec for Gptq {
    /// `gptq int4 g128`, `gptq int4 g128 act-order asym`.
    fn label(&self) -> String {
        let mut s = format!("gptq int{}", self.bits);
        match self.group_size {
            Some(g) => s.push_str(&format!(" g{g}")),
            None => s.push_str(" per channel"),
        }
        if self.desc_act {
            s.push_str(" act-order");
        }
        if !self.sym {
            s.push_str(" asym");
        }
        if !self.v1 {
            s.push_str(" (v2)");
        }
        s
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok((n, k)) = out_in(shape) else {
            return self.bits as f64;
        };
        let (p, groups) = (self.pack_factor(), self.groups(k));
        let bytes = 4 * (k.div_ceil(p) * n + groups * n.div_ceil(p) + k)
            + groups * n * self.dtype.bits() as usize / 8;
        bytes as f64 * 8.0 / (n * k).max(1) as f64
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        if self.desc_act {
            return Err(Error::input(
                "act-order (desc_act) orders the groups by the calibration Hessian, which a tensor alone does not give: encode is GPTQModel's round-to-nearest path, without act-order",
            ));
        }
        let (n, k) = out_in(&t.shape)?;
        if let Some(bad) = t.data.iter().find(|v| !v.is_finite()) {
            return Err(Error::input(format!(
                "GPTQ's min–max quantizer needs finite values, not {bad}"
            )));
        }
        let groups = self.groups(k);
        let size = self.group_size.unwrap_or(k).max(1);
        let maxq = self.maxq() as f32;
        let mut scales = vec![0f32; groups * n];
        let mut zeros = vec![0u32; groups * n];
        let mut q = t.clone();
        for row in 0..n {
            for g in 0..groups {
                let cols = g * size..((g + 1) * size).min(k);
                let x = &t.data[row * k + cols.start..row * k + cols.end];
                let (s, z) = self.find_params(x);
                scales[g * n + row] = s;
                zeros[g * n + row] = z as u32;
                for c in cols {
                    let v = t.data[row * k + c];
                    q.data[row * k + c] = s * ((round_half_even(v / s) + z).clamp(0.0, maxq) - z);
                }
            }
        }
        let g_idx: Vec<usize> = (0..k).map(|c| self.group_of(c)).collect();
        self.pack(&q, &scales, &zeros, &g_idx)
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let u = self.unpack(e)?;
        let qweight = e.i32s("qweight")?;
        let p = self.pack_factor();
        let mut values = vec![0f32; u.n * u.k];
        for row in 0..u.n {
            for (col, &g) in u.g_idx.iter().enumerate() {
                let q = field(qweight[(col / p) * u.n + row] as u32, col % p, self.bits);
                let (s, z) = (u.scales[g * u.n + row], u.zeros[g * u.n + row]);
                values[row * u.k + col] = self.dtype.round(s * (q as f32 - z as f32));
            }
        }
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let u = self.unpack(e)?;
        let maxq = self.maxq();
        let range = |g: usize, row: usize| {
            group_range(u.scales[g * u.n + row], u.zeros[g * u.n + row], maxq)
        };
        Ok(match u.trivial {
            true => SliceRanges::new(
                Slicing::Mapped(SliceMap::from_blocks(
                    &[u.n, u.k],
                    &[1, self.group_size.unwrap_or(u.k).max(1)],
                )),
                (0..u.n)
                    .flat_map(|row| (0..u.groups).map(move |g| (row, g)))
                    .map(|(row, g)| range(g, row)),
            ),
            false => SliceRanges::new(
                Slicing::Flat(1),
                (0..u.n)
                    .flat_map(|row| u.g_idx.iter().map(move |&g| (row, g)))
                    .map(|(row, g)| range(g, row)),
            ),
        })
    }

    /// The groups of one row: `group_size` consecutive input columns (act-order's permuted
    /// groups are not followed).
    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let u = self.unpack(e)?;
        if !u.trivial {
            return Ok(None);
        }
        let qweight = e.i32s("qweight")?;
        let p = self.pack_factor();
        let codes = (0..u.n * u.k)
            .map(|i| {
                let (row, col) = (i / u.k.max(1), i % u.k.max(1));
                field(qweight[(col / p) * u.n + row] as u32, col % p, self.bits) as i16
            })
            .collect();
        let at = |row: usize, g: usize| g * u.n + row;
        let slices = (0..u.n).flat_map(|row| (0..u.groups).map(move |g| (row, g)));
        let maxq = self.maxq();
        let rule = format!(
            "per row and group (Quantizer.find_params, float32): xmin = min(min, 0), xmax = max(max, 0){}; \
             s = (xmax − xmin)/{maxq}, z = {}; q = clamp(round((Q + z·s)/s), 0, {maxq}) of the \
             round-to-nearest Q = s·(clamp(round(x/s) + z, 0, {maxq}) − z), packed {} per int32 \
             down each column; s stored as {}; x̂ = {}(s·(q − z))",
            if self.sym { ", symmetric: xmax = max(|xmin|, xmax), xmin = −xmax" } else { "" },
            if self.sym { format!("{}", 1u64 << (self.bits - 1)) } else { "round(−xmin/s)".to_string() },
            p,
            self.dtype.name(),
            self.dtype.name()
        );
        Ok(Some(
            StoredSlices::new(
                Slicing::Mapped(SliceMap::from_blocks(
                    &[u.n, u.k],
                    &[1, self.group_size.unwrap_or(u.k).max(1)],
                )),
                u.n * u.groups,
                rule,
                "gptqmodel/quantization/quantizer.py Quantizer.find_params, \
                 gptqmodel/nn_modules/qlinear/torch.py TorchLinear.pack / dequantize_weight (GPTQModel 7.7.0)",
            )
            .column("scales", slices.clone().map(|(r, g)| u.scales[at(r, g)] as f64))
            .column("zero", slices.map(|(r, g)| u.zeros[at(r, g)] as f64))
            .codes(codes),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::find;
    use super::*;
    use crate::params::Params;

    fn codec(p: serde_json::Value, shape: &[usize]) -> Box<dyn Codec> {
        find("gptq.int")
            .unwrap()
            .build(&Params::from_value(p).unwrap(), shape)
            .unwrap()
    }

    fn ramp(n: usize, k: usize) -> Tensor {
        super::super::tests::ramp(vec![n, k])
    }

    fn error(c: &dyn Codec, e: &Encoded) -> String {
        c.decode(e).unwrap_err().to_string()
    }

    /// `e` with part `name` replaced.
    fn with(e: &Encoded, name: &'static str, shape: Vec<usize>, data: Stored) -> Encoded {
        let mut e = e.clone();
        e.parts.retain(|p| p.name != name);
        e.with(name, shape, data)
    }

    #[test]
    fn round_trip_within_half_a_step_and_the_layout_as_gptqmodel_packs_it() {
        let shape = [16, 256];
        let c = codec(serde_json::json!({"sym": false}), &shape);
        let t = ramp(16, 256);
        let e = c.encode(&t).unwrap();
        assert_eq!(e.part("qweight").unwrap().shape, vec![32, 16]);
        assert_eq!(e.part("qzeros").unwrap().shape, vec![2, 2]);
        assert_eq!(e.part("scales").unwrap().shape, vec![2, 16]);
        let y = c.decode(&e).unwrap();
        let scales = scale_values(e.part("scales").unwrap(), OutDType::Float16).unwrap();
        for (i, (a, b)) in t.data.iter().zip(&y.data).enumerate() {
            let s = scales[(i % 256 / 128) * 16 + i / 256];
            assert!((a - b).abs() <= 0.5 * s * 1.01 + 1e-3, "{i}: {a} {b}");
        }
        assert_eq!(c.label(), "gptq int4 g128 asym");
        // 4 bits + per group of 128: a 16-bit scale and a 4-bit zero, + a 32-bit g_idx per column.
        let bits = c.bits_per_value(&shape);
        assert!(
            (bits - (4.0 + 20.0 / 128.0 + 32.0 / 16.0)).abs() < 1e-12,
            "{bits}"
        );
    }

    #[test]
    fn v1_zeros_are_stored_minus_one_by_a_whole_word_subtract() {
        let c = codec(serde_json::json!({}), &[8, 128]);
        let e = c.encode(&ramp(8, 128)).unwrap();
        // Symmetric: every zero is 8, stored 7 in each nibble.
        assert_eq!(e.i32s("qzeros").unwrap(), &[0x7777_7777]);
        // A zero of 0 borrows from the next nibble: 0x…10 − 0x11111111 wraps, and the reader's
        // word add gives the zeros back where a nibble-wise +1 would not.
        let v2 = codec(
            serde_json::json!({"checkpoint_format": "gptq_v2"}),
            &[8, 128],
        );
        let mut e2 = v2.encode(&ramp(8, 128)).unwrap();
        e2 = with(
            &e2,
            "qzeros",
            vec![1, 1],
            Stored::I32(vec![0x8888_8880u32 as i32]),
        );
        let as_v1 = with(
            &e2,
            "qzeros",
            vec![1, 1],
            Stored::I32(vec![0x8888_8880u32.wrapping_sub(0x1111_1111) as i32]),
        );
        assert_eq!(c.decode(&as_v1).unwrap(), v2.decode(&e2).unwrap());
    }

    #[test]
    fn malformed_arrays_are_refused_with_the_array_named() {
        let c = codec(serde_json::json!({}), &[8, 384]);
        let e = c.encode(&ramp(8, 384)).unwrap();
        let bad_g = with(&e, "g_idx", vec![384], Stored::I32(vec![7; 384]));
        assert_eq!(
            error(c.as_ref(), &bad_g),
            "g_idx value 7 is out of range for 3 groups"
        );
        let negative = with(&e, "g_idx", vec![384], Stored::I32(vec![-1; 384]));
        assert!(error(c.as_ref(), &negative).contains("g_idx value -1 is out of range"));
        let short = with(&e, "qweight", vec![47, 8], Stored::I32(vec![0; 47 * 8]));
        assert!(
            error(c.as_ref(), &short)
                .contains("stored array `qweight` is [47, 8], a [8, 384] weight needs [48, 8]"),
            "{}",
            error(c.as_ref(), &short)
        );
        let transposed = with(&e, "scales", vec![8, 3], Stored::U16(vec![0; 24]));
        assert!(error(c.as_ref(), &transposed).contains("`scales` is [8, 3]"));
        let float = with(&e, "scales", vec![3, 8], Stored::F32(vec![1.0; 24]));
        assert!(error(c.as_ref(), &float).contains("holds float32, not float16 scales"));
        let mut missing = e.clone();
        missing.parts.retain(|p| p.name != "qzeros");
        assert!(error(c.as_ref(), &missing).contains("no stored array `qzeros`"));
        let mut flat = e.clone();
        flat.shape = vec![8 * 384];
        assert!(error(c.as_ref(), &flat).contains("is 2-d [out, in]"));
        // Without g_idx the groups are k / group_size.
        let mut no_g = e.clone();
        no_g.parts.retain(|p| p.name != "g_idx");
        assert_eq!(c.decode(&no_g).unwrap(), c.decode(&e).unwrap());
    }

    #[test]
    fn what_cannot_be_encoded_or_built_says_why() {
        let act = codec(serde_json::json!({"desc_act": true}), &[8, 128]);
        let e = act.encode(&ramp(8, 128)).unwrap_err().to_string();
        assert!(e.contains("act-order"), "{e}");
        let mut t = ramp(8, 128);
        t.data[3] = f32::NAN;
        assert!(codec(serde_json::json!({}), &[8, 128]).encode(&t).is_err());
        let spec = find("gptq.int").unwrap();
        for (p, msg) in [
            (
                serde_json::json!({"bits": 3}),
                "3-bit codes do not fill an int32 word",
            ),
            (
                serde_json::json!({"group_size": 0}),
                "neither a positive group size",
            ),
        ] {
            let e = spec
                .build(&Params::from_value(p).unwrap(), &[8, 128])
                .unwrap_err()
                .to_string();
            assert!(e.contains(msg), "{e}");
        }
    }

    #[test]
    fn act_order_groups_follow_g_idx() {
        let c = codec(serde_json::json!({"group_size": 2, "sym": false}), &[8, 8]);
        let t = ramp(8, 8);
        let e = c.encode(&t).unwrap();
        let y = c.decode(&e).unwrap();
        // Columns 0 and 7 swap groups: their values follow the other group's scale and zero.
        let mut g: Vec<i32> = vec![0, 0, 1, 1, 2, 2, 3, 3];
        g.swap(0, 7);
        let swapped = with(&e, "g_idx", vec![8], Stored::I32(g));
        let z = c.decode(&swapped).unwrap();
        assert_ne!(y, z);
        assert_eq!(y.data[1..7], z.data[1..7]);
        let r = c.ranges(&swapped).unwrap();
        let _ = crate::qdq::measure_ranges(&z.data, &z.data, &r);
    }
}
