//! Quark's `Dtype` (the values a tensor is quantized to) and, per observer class, the dtypes it
//! accepts, each a choice parameter of its own so that the page only offers what the class can
//! compute.
//!
//! `calculate_qmin_qmax(dtype)` (`quark.torch.quantization.utils`): integer ranges are full
//! (int8 −128..127, uint4 0..15), float ranges are `±max` of the format (fp8_e4m3 ±448,
//! fp4 ±6, float16 ±65504).

use crate::formats::half_cast::HalfType;
use crate::formats::ElementFormat;
use crate::observer::Grid;
use crate::params::Choice;

crate::choice_enum! {
    /// Quark `Dtype`s the observers accept, spelled as `Dtype.value`.
    pub enum QuarkDtype {
        Int4 = "int4",
        Uint4 = "uint4",
        Int8 = "int8",
        Uint8 = "uint8",
        Int16 = "int16",
        Fp8E4m3 = "fp8_e4m3",
        Fp8E5m2 = "fp8_e5m2",
        Fp6E2m3 = "fp6_e2m3",
        Fp6E3m2 = "fp6_e3m2",
        Fp4 = "fp4",
        Float16 = "float16",
        Bfloat16 = "bfloat16",
    }
}

impl QuarkDtype {
    /// `calculate_qmin_qmax(dtype)`.
    pub fn qrange(self) -> (f64, f64) {
        match self {
            QuarkDtype::Int4 => (-8.0, 7.0),
            QuarkDtype::Uint4 => (0.0, 15.0),
            QuarkDtype::Int8 => (-128.0, 127.0),
            QuarkDtype::Uint8 => (0.0, 255.0),
            QuarkDtype::Int16 => (-32768.0, 32767.0),
            QuarkDtype::Float16 | QuarkDtype::Bfloat16 => {
                let m = self.half().map_or(0.0, |h| h.max() as f64);
                (-m, m)
            }
            _ => {
                let m = self.element().map_or(0.0, |f| f.max() as f64);
                (-m, m)
            }
        }
    }

    /// True for the integer dtypes.
    pub fn is_int(self) -> bool {
        matches!(
            self,
            QuarkDtype::Int4
                | QuarkDtype::Uint4
                | QuarkDtype::Int8
                | QuarkDtype::Uint8
                | QuarkDtype::Int16
        )
    }

    /// The small float element format of fp8/fp6/fp4 dtypes.
    pub fn element(self) -> Option<ElementFormat> {
        match self {
            QuarkDtype::Fp8E4m3 => Some(ElementFormat::Fp8E4m3),
            QuarkDtype::Fp8E5m2 => Some(ElementFormat::Fp8E5m2),
            QuarkDtype::Fp6E2m3 => Some(ElementFormat::Fp6E2m3),
            QuarkDtype::Fp6E3m2 => Some(ElementFormat::Fp6E3m2),
            QuarkDtype::Fp4 => Some(ElementFormat::Fp4E2m1),
            _ => None,
        }
    }

    /// float16/bfloat16 (cast-only dtypes).
    pub fn half(self) -> Option<HalfType> {
        match self {
            QuarkDtype::Float16 => Some(HalfType::Float16),
            QuarkDtype::Bfloat16 => Some(HalfType::Bfloat16),
            _ => None,
        }
    }

    /// True for fp8_e4m3/fp8_e5m2 (Quark's fp8 qparam path).
    pub fn is_fp8(self) -> bool {
        matches!(self, QuarkDtype::Fp8E4m3 | QuarkDtype::Fp8E5m2)
    }

    /// The grid values live on after quantization with this dtype.
    pub fn grid(self) -> Grid {
        let (qmin, qmax) = self.qrange();
        if self.is_int() {
            Grid::Int {
                quant_min: qmin as i64,
                quant_max: qmax as i64,
            }
        } else {
            Grid::Float {
                format: self.name().to_string(),
                max: qmax,
            }
        }
    }
}

/// A choice of some of the [`QuarkDtype`]s, spelled the same way (a test checks the spellings).
macro_rules! dtype_subset {
    ($(#[$meta:meta])* pub enum $name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        crate::choice_enum! {
            $(#[$meta])*
            pub enum $name { $($variant = $text),* }
        }

        impl From<$name> for QuarkDtype {
            fn from(d: $name) -> QuarkDtype {
                match d {
                    $($name::$variant => QuarkDtype::$variant),*
                }
            }
        }
    };
}

dtype_subset! {
    /// Dtypes of the per-tensor and per-group uniform-scaling observers (fp6 would fail Quark's
    /// int-path assertion, fp4 per tensor has no fake-quantize kernel).
    pub enum UniformDtype {
        Int4 = "int4", Uint4 = "uint4", Int8 = "int8", Uint8 = "uint8", Int16 = "int16",
        Fp8E4m3 = "fp8_e4m3", Fp8E5m2 = "fp8_e5m2",
    }
}

dtype_subset! {
    /// Dtypes of `PerChannelMinMaxObserver` (fp4 per channel has a kernel; it needs
    /// `scale_format`).
    pub enum PerChannelDtype {
        Int4 = "int4", Uint4 = "uint4", Int8 = "int8", Uint8 = "uint8", Int16 = "int16",
        Fp8E4m3 = "fp8_e4m3", Fp8E5m2 = "fp8_e5m2", Fp4 = "fp4",
    }
}

dtype_subset! {
    /// Dtypes `get_min_max_by_mse` accepts.
    pub enum MseDtype {
        Int4 = "int4", Uint4 = "uint4", Int8 = "int8", Uint8 = "uint8",
        Fp8E4m3 = "fp8_e4m3", Fp8E5m2 = "fp8_e5m2",
    }
}

dtype_subset! {
    /// Dtypes of the power-of-two observers (Quark also accepts int32).
    pub enum PowOf2Dtype { Int8 = "int8", Uint8 = "uint8" }
}

dtype_subset! {
    /// Dtypes `PerTensorHistogramObserverPro` maps onto torch dtypes (int8 → qint8,
    /// uint8 → quint8, uint4 → quint4x2); Quark refuses the others with `ValueError`.
    pub enum HistogramProDtype { Int8 = "int8", Uint8 = "uint8", Uint4 = "uint4" }
}

dtype_subset! {
    /// Element dtypes of `PerBlockMXObserver` (Quark asserts them in the constructor).
    pub enum MxDtype {
        Fp8E4m3 = "fp8_e4m3", Fp8E5m2 = "fp8_e5m2", Fp6E2m3 = "fp6_e2m3", Fp6E3m2 = "fp6_e3m2",
        Fp4 = "fp4",
    }
}

impl MxDtype {
    /// The element format.
    pub fn element(self) -> ElementFormat {
        match self {
            MxDtype::Fp8E4m3 => ElementFormat::Fp8E4m3,
            MxDtype::Fp8E5m2 => ElementFormat::Fp8E5m2,
            MxDtype::Fp6E2m3 => ElementFormat::Fp6E2m3,
            MxDtype::Fp6E3m2 => ElementFormat::Fp6E3m2,
            MxDtype::Fp4 => ElementFormat::Fp4E2m1,
        }
    }
}

dtype_subset! {
    /// `PerBlockBFPObserver`'s dtype (8-bit mantissas).
    pub enum BfpDtype { Int8 = "int8" }
}

dtype_subset! {
    /// Cast-only dtypes of `PlaceholderObserver`.
    pub enum HalfDtype { Float16 = "float16", Bfloat16 = "bfloat16" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled_like_quark<D: Choice + Into<QuarkDtype>>() {
        for name in D::OPTIONS {
            let d = D::from_name(name).unwrap();
            assert_eq!(d.into().name(), *name);
        }
    }

    #[test]
    fn subsets_are_spelled_like_quark_dtypes() {
        spelled_like_quark::<UniformDtype>();
        spelled_like_quark::<PerChannelDtype>();
        spelled_like_quark::<MseDtype>();
        spelled_like_quark::<PowOf2Dtype>();
        spelled_like_quark::<HistogramProDtype>();
        spelled_like_quark::<MxDtype>();
        spelled_like_quark::<BfpDtype>();
        spelled_like_quark::<HalfDtype>();
        for name in MxDtype::OPTIONS {
            let d = MxDtype::from_name(name).unwrap();
            assert_eq!(QuarkDtype::from(d).element(), Some(d.element()));
        }
    }

    #[test]
    fn ranges() {
        assert_eq!(QuarkDtype::Int8.qrange(), (-128.0, 127.0));
        assert_eq!(QuarkDtype::Fp6E2m3.qrange(), (-7.5, 7.5));
        assert_eq!(QuarkDtype::Fp8E5m2.qrange(), (-57344.0, 57344.0));
        assert_eq!(QuarkDtype::Float16.qrange(), (-65504.0, 65504.0));
    }
}
