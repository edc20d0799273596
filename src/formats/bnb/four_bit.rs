//! bitsandbytes' NF4 / FP4 4-bit quantization on CPU (`quantize_4bit` → the pure-torch
//! `"default"` kernel, backends/default/ops.py l. 233, since no CPU kernel is registered;
//! `dequantize_4bit` → `dequantizeBlockwise4bitCpu`, csrc/cpu_ops.cpp).
//!
//! The flattened tensor is cut into blocks of `blocksize` values. Per full block:
//! `absmax = max|x|` (stored unclamped, 0 for a zero block) and
//! `s = clamp(x·(1/max(absmax, 1e-38)), −1, 1)` — a float32 reciprocal, then a multiply, not a
//! division. A short last block (the tensor's size is not a multiple of `blocksize`) instead
//! stores the **clamped** absmax and **divides**: `s = clamp(x/max(absmax, 1e-38), −1, 1)`
//! (l. 247–249).
//!
//! The code is not an argmin: the 16 code values are sorted (`torch.argsort`), the float32
//! midpoints of neighbours `(c[i] + c[i+1])/2` are the bucket bounds, and
//! `torch.bucketize(s, bounds, right=False)` counts the bounds strictly below `s` — a value
//! exactly on a midpoint goes to the **lower** bucket (towards zero for positive values, away
//! from zero for negative ones). For FP4 the bucket is mapped back through the sort order,
//! where the two zeros (nibbles 0 and 8) sit in index order: `s ∈ (−0.0026, 0]` → nibble 0
//! (+0) and `s ∈ (0, 0.0026]` → nibble 8 (−0 in the dequantization table), so small positive
//! values come back as `−0.0`.
//!
//! Codes are packed two per byte, the even element in the **high** nibble; an odd count is
//! padded with the code of 0. Dequantization: `table[nibble]·absmax` (one float32 multiply).
//!
//! With `compress_statistics` the absmax vector is itself quantized (see [`super::double`]).

use super::codes::{fp4, fp4_dequant_table, nf4, sort_order};
use super::double::DoubleQuant;
use serde::Serialize;

/// The 4-bit data types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuantType {
    Nf4,
    Fp4,
}

impl QuantType {
    /// `nf4` or `fp4`.
    pub fn name(self) -> &'static str {
        match self {
            QuantType::Nf4 => "nf4",
            QuantType::Fp4 => "fp4",
        }
    }

    /// The code values the quantizer buckets against, index = nibble.
    pub fn code(self) -> [f32; 16] {
        match self {
            QuantType::Nf4 => nf4(),
            QuantType::Fp4 => fp4(),
        }
    }

    /// The table the dequantizer reads. `c_kernel`: the CPU C++ kernel (FP4 nibble 8 is −0);
    /// otherwise the Python fallback that indexes [`QuantType::code`] (bitsandbytes takes it
    /// when the tensor's last dimension is odd).
    pub fn dequant_table(self, c_kernel: bool) -> [f32; 16] {
        match (self, c_kernel) {
            (QuantType::Fp4, true) => fp4_dequant_table(),
            _ => self.code(),
        }
    }
}

/// The block sizes `quantize_4bit` accepts (functional.py l. 920).
pub const BLOCKSIZES: [usize; 8] = [32, 64, 128, 256, 512, 1024, 2048, 4096];

/// `torch.clamp(min=1e-38)` on a float32 absmax.
const TINY: f32 = 1e-38;

/// A tensor quantized by `quantize_4bit`.
#[derive(Debug, Clone, PartialEq)]
pub struct FourBit {
    pub quant_type: QuantType,
    pub blocksize: usize,
    /// Elements quantized.
    pub numel: usize,
    /// Two codes per byte, even element in the high nibble.
    pub packed: Vec<u8>,
    /// The absmax of each block as the quantizer computed it (before any double quantization).
    pub absmax: Vec<f32>,
    /// The double quantization of `absmax`, with `compress_statistics`.
    pub double: Option<DoubleQuant>,
}

/// The bucket (sorted position) of `s` among the bounds: the number of bounds `< s`.
fn bucketize(bounds: &[f32; 15], s: f32) -> usize {
    bounds.partition_point(|&b| b < s)
}

/// `quantize_4bit(x, blocksize, compress_statistics, quant_type)` (no validation: see
/// [`super::quantize_4bit`]).
pub fn quantize(
    x: &[f32],
    quant_type: QuantType,
    blocksize: usize,
    compress_statistics: bool,
) -> FourBit {
    let code = quant_type.code();
    let order = sort_order(&code);
    let bounds: [f32; 15] = std::array::from_fn(|i| (code[order[i]] + code[order[i + 1]]) / 2.0);
    let nibble = |s: f32| order[bucketize(&bounds, s)] as u8;
    let mut codes = Vec::with_capacity(x.len() + 1);
    let mut absmax = Vec::with_capacity(x.len().div_ceil(blocksize));
    for block in x.chunks(blocksize) {
        let mut a = 0.0f32;
        for &v in block {
            a = a.max(v.abs());
        }
        let clamped = a.max(TINY);
        if block.len() == blocksize {
            absmax.push(a);
            let inv = 1.0 / clamped;
            codes.extend(block.iter().map(|&v| nibble((v * inv).clamp(-1.0, 1.0))));
        } else {
            absmax.push(clamped);
            codes.extend(
                block
                    .iter()
                    .map(|&v| nibble((v / clamped).clamp(-1.0, 1.0))),
            );
        }
    }
    if codes.len() % 2 == 1 {
        codes.push(nibble(0.0));
    }
    let packed = codes.chunks(2).map(|p| (p[0] << 4) | p[1]).collect();
    let double = compress_statistics.then(|| DoubleQuant::of(&absmax, DoubleQuant::BLOCKSIZE_4BIT));
    FourBit {
        quant_type,
        blocksize,
        numel: x.len(),
        packed,
        absmax,
        double,
    }
}

impl FourBit {
    /// The absmax the dequantizer uses: the stored one, or the double-quantized one.
    pub fn absmax_used(&self) -> &[f32] {
        match &self.double {
            Some(d) => &d.absmax_dequantized,
            None => &self.absmax,
        }
    }

    /// The nibble of each element.
    pub fn codes(&self) -> Vec<u8> {
        self.packed
            .iter()
            .flat_map(|&b| [b >> 4, b & 0x0F])
            .take(self.numel)
            .collect()
    }

    /// `dequantize_4bit`: `table[nibble]·absmax`. `last_dim_odd`: the tensor's last dimension
    /// is odd, so bitsandbytes dequantizes with its Python fallback (FP4 nibble 8 gives +0).
    pub fn dequantize(&self, last_dim_odd: bool) -> Vec<f32> {
        let table = self.quant_type.dequant_table(!last_dim_odd);
        let absmax = self.absmax_used();
        self.codes()
            .chunks(self.blocksize)
            .zip(absmax)
            .flat_map(|(block, &a)| block.iter().map(move |&q| table[q as usize] * a))
            .collect()
    }

    /// Per block: the representable range `[−absmax, absmax]` of the absmax used.
    pub fn ranges(&self) -> Vec<(f32, f32)> {
        self.absmax_used().iter().map(|&a| (-a, a)).collect()
    }

    /// Storage per value: 4-bit codes plus a float32 absmax per block, or with double
    /// quantization an 8-bit absmax code per block, a float32 absmax per 256 of those and one
    /// float32 offset.
    pub fn bits_per_value(numel: usize, blocksize: usize, compress_statistics: bool) -> f64 {
        let n = numel.max(1) as f64;
        let blocks = numel.div_ceil(blocksize) as f64;
        let statistics = if compress_statistics {
            DoubleQuant::bits(numel.div_ceil(blocksize), DoubleQuant::BLOCKSIZE_4BIT)
        } else {
            32.0 * blocks
        };
        4.0 + statistics / n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midpoint_ties_go_to_the_lower_code_and_fp4_small_positives_to_minus_zero() {
        let code = nf4();
        let mid = (code[8] + code[9]) / 2.0;
        // absmax 1 → s = x exactly.
        let x = [1.0f32, mid, -mid, 0.001];
        let q = quantize(&x, QuantType::Nf4, 32, false);
        let c = q.codes();
        assert_eq!(c[1], 8);
        let fp = quantize(&x, QuantType::Fp4, 32, false);
        let y = fp.dequantize(false);
        assert_eq!(fp.codes()[3], 8);
        assert!(y[3] == 0.0 && y[3].is_sign_negative());
        assert!(!fp.dequantize(true)[3].is_sign_negative());
    }

    #[test]
    fn bits_per_value_count_the_statistics() {
        assert_eq!(FourBit::bits_per_value(1 << 16, 64, false), 4.5);
        let dq = FourBit::bits_per_value(1 << 16, 64, true);
        // 8/64 + 32/(64·256) + 32/65536 ≈ 0.1255.
        assert!((dq - (4.0 + 0.125 + 1024.0 / 65536.0 * 0.125 + 32.0 / 65536.0)).abs() < 1e-12);
    }

    #[test]
    fn a_short_last_block_stores_the_clamped_absmax() {
        let x = [0.5f32, -1.0, 0.25, 0.0, 0.0];
        let q = quantize(&x, QuantType::Nf4, 4, false);
        assert_eq!(q.absmax, vec![1.0, 1e-38]);
        assert_eq!(q.packed.len(), 3);
        assert_eq!(q.dequantize(false)[4], 0.0);
    }
}
