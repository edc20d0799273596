//! What a codec stores: the arrays a library keeps for a quantized tensor, named and laid out
//! as that library lays them out (ggml's block bytes, bitsandbytes' packed nibbles and absmax,
//! codes with their scales and zero points), so that a checkpoint reader can hand a codec the
//! arrays it found in a file and get the values back.

use crate::error::{Error, Result};

/// One stored array's elements.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    F32(Vec<f32>),
}

impl Stored {
    /// The elements' little-endian bytes (as a file stores them).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Stored::U8(v) => v.clone(),
            Stored::I8(v) => v.iter().map(|&x| x as u8).collect(),
            Stored::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Stored::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Stored::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Stored::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Stored::U8(v) => v.len(),
            Stored::I8(v) => v.len(),
            Stored::U16(v) => v.len(),
            Stored::I16(v) => v.len(),
            Stored::I32(v) => v.len(),
            Stored::F32(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of one element.
    pub fn element_bytes(&self) -> usize {
        match self {
            Stored::U8(_) | Stored::I8(_) => 1,
            Stored::U16(_) | Stored::I16(_) => 2,
            Stored::I32(_) | Stored::F32(_) => 4,
        }
    }

    /// True for the same element type and the same bits.
    pub fn same_bits(&self, other: &Stored) -> bool {
        match (self, other) {
            (Stored::F32(a), Stored::F32(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Stored::F32(_), _) | (_, Stored::F32(_)) => false,
            (a, b) => a == b,
        }
    }

    /// The dtype's name, as numpy spells it.
    pub fn dtype(&self) -> &'static str {
        match self {
            Stored::U8(_) => "uint8",
            Stored::I8(_) => "int8",
            Stored::U16(_) => "uint16",
            Stored::I16(_) => "int16",
            Stored::I32(_) => "int32",
            Stored::F32(_) => "float32",
        }
    }
}

/// One named array of an [`Encoded`] tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The library's name for it (`blocks`, `absmax`, `scale`, …).
    pub name: &'static str,
    /// Its shape (C order).
    pub shape: Vec<usize>,
    pub data: Stored,
}

/// A tensor in a codec's stored representation.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    /// The logical shape of the tensor (numpy / PyTorch order).
    pub shape: Vec<usize>,
    /// The stored arrays.
    pub parts: Vec<Part>,
}

macro_rules! typed_part {
    ($fn:ident, $variant:ident, $ty:ty) => {
        /// The elements of part `name`, which must hold this type.
        pub fn $fn(&self, name: &str) -> Result<&[$ty]> {
            match &self.part(name)?.data {
                Stored::$variant(v) => Ok(v),
                other => Err(Error::input(format!(
                    "stored array `{name}` holds {}, not {}",
                    other.dtype(),
                    Stored::$variant(Vec::new()).dtype()
                ))),
            }
        }
    };
}

impl Encoded {
    /// An encoded tensor of `shape`, with no parts yet.
    pub fn new(shape: &[usize]) -> Self {
        Encoded {
            shape: shape.to_vec(),
            parts: Vec::new(),
        }
    }

    /// This tensor with one more part, of `shape`.
    pub fn with(mut self, name: &'static str, shape: Vec<usize>, data: Stored) -> Self {
        self.parts.push(Part { name, shape, data });
        self
    }

    /// True when `other` stores the same arrays bit for bit: each part by name, with the same
    /// element type and the same bits (so `-0.0 ≠ 0.0` and a NaN equals itself).
    pub fn same_bits(&self, other: &Encoded) -> bool {
        self.shape == other.shape
            && self.parts.len() == other.parts.len()
            && self.parts.iter().all(|p| {
                other
                    .parts
                    .iter()
                    .find(|o| o.name == p.name)
                    .is_some_and(|o| p.data.same_bits(&o.data))
            })
    }

    /// This tensor with one more flat part.
    pub fn with_flat(self, name: &'static str, data: Stored) -> Self {
        let shape = vec![data.len()];
        self.with(name, shape, data)
    }

    /// Elements of the logical tensor (an error when the shape overflows).
    pub fn numel(&self) -> Result<usize> {
        crate::tensor::element_count(&self.shape).ok_or_else(|| {
            Error::input(format!(
                "shape {:?} has more elements than this machine can address",
                self.shape
            ))
        })
    }

    /// Part `name`.
    pub fn part(&self, name: &str) -> Result<&Part> {
        self.parts
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| Error::input(format!("no stored array `{name}`")))
    }

    /// Whether part `name` is stored.
    pub fn has(&self, name: &str) -> bool {
        self.parts.iter().any(|p| p.name == name)
    }

    /// Part `name`, checked to hold `len` elements (lengths are checked before anything is
    /// decoded, so that a malformed file fails with the array it got wrong).
    pub fn part_of_len(&self, name: &str, len: usize) -> Result<&Part> {
        let part = self.part(name)?;
        if part.data.len() != len {
            return Err(Error::input(format!(
                "stored array `{name}` has {} elements, the tensor needs {len}",
                part.data.len()
            )));
        }
        Ok(part)
    }

    typed_part!(u8s, U8, u8);
    typed_part!(i8s, I8, i8);
    typed_part!(u16s, U16, u16);
    typed_part!(i16s, I16, i16);
    typed_part!(i32s, I32, i32);
    typed_part!(f32s, F32, f32);

    /// The integer codes of part `name` (`len` of them, any integer type) as float32 values.
    pub fn integer_codes(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        Ok(match &self.part_of_len(name, len)?.data {
            Stored::I8(v) => v.iter().map(|&q| q as f32).collect(),
            Stored::U8(v) => v.iter().map(|&q| q as f32).collect(),
            Stored::I16(v) => v.iter().map(|&q| q as f32).collect(),
            Stored::U16(v) => v.iter().map(|&q| q as f32).collect(),
            Stored::I32(v) => v.iter().map(|&q| q as f32).collect(),
            Stored::F32(_) => {
                return Err(Error::input(format!(
                    "stored array `{name}` holds float32, not integer codes"
                )))
            }
        })
    }

    /// Bytes stored, every part included.
    pub fn stored_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.data.len() * p.data.element_bytes())
            .sum()
    }
}
