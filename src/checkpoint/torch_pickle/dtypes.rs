//! PyTorch's element types as a checkpoint names them: the dtype globals (`torch.float32`, …),
//! which `_rebuild_tensor_v3` takes, and the legacy storage classes (`torch.FloatStorage`, …),
//! whose persistent ids give the dtype of a storage and of the tensors `_rebuild_tensor_v2`
//! builds on it.
//!
//! Every dtype has its element size, so a storage of any type can be measured (a legacy file's
//! storages lie back to back: a complex or quantized one must be skipped by its true size), but
//! only those quantscope decodes map to a [`DType`]; the others become a per-tensor problem.

use crate::tensor::DType;

/// One PyTorch dtype: its name without the `torch.` prefix, its element size in bytes and the
/// dtype quantscope decodes it as (`None` when it does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TorchDtype {
    pub name: &'static str,
    pub itemsize: usize,
    pub dtype: Option<DType>,
}

const fn t(name: &'static str, itemsize: usize, dtype: Option<DType>) -> TorchDtype {
    TorchDtype {
        name,
        itemsize,
        dtype,
    }
}

/// Every dtype a torch 2.15 checkpoint can name (`str(dtype)` without `torch.`).
const DTYPES: &[TorchDtype] = &[
    t("float32", 4, Some(DType::F32)),
    t("float64", 8, Some(DType::F64)),
    t("float16", 2, Some(DType::F16)),
    t("bfloat16", 2, Some(DType::BF16)),
    t("int8", 1, Some(DType::I8)),
    t("int16", 2, Some(DType::I16)),
    t("int32", 4, Some(DType::I32)),
    t("int64", 8, Some(DType::I64)),
    t("uint8", 1, Some(DType::U8)),
    t("uint16", 2, Some(DType::U16)),
    t("uint32", 4, Some(DType::U32)),
    t("uint64", 8, Some(DType::U64)),
    t("bool", 1, Some(DType::Bool)),
    t("float8_e4m3fn", 1, Some(DType::F8E4M3)),
    t("float8_e5m2", 1, Some(DType::F8E5M2)),
    t("float8_e4m3fnuz", 1, None),
    t("float8_e5m2fnuz", 1, None),
    t("float8_e8m0fnu", 1, None),
    t("float4_e2m1fn_x2", 1, None),
    t("complex32", 4, None),
    t("complex64", 8, None),
    t("complex128", 16, None),
    t("qint8", 1, None),
    t("quint8", 1, None),
    t("qint32", 4, None),
    t("quint4x2", 1, None),
    t("quint2x4", 1, None),
    t("bits8", 1, None),
    t("bits16", 2, None),
    t("bits1x8", 1, None),
    t("bits2x4", 1, None),
    t("bits4x2", 1, None),
    t("uint1", 1, None),
    t("uint2", 1, None),
    t("uint3", 1, None),
    t("uint4", 1, None),
    t("uint5", 1, None),
    t("uint6", 1, None),
    t("uint7", 1, None),
    t("int1", 1, None),
    t("int2", 1, None),
    t("int3", 1, None),
    t("int4", 1, None),
    t("int5", 1, None),
    t("int6", 1, None),
    t("int7", 1, None),
];

/// The legacy storage classes of module `torch` and the dtype of their elements.
const STORAGE_CLASSES: &[(&str, &str)] = &[
    ("DoubleStorage", "float64"),
    ("FloatStorage", "float32"),
    ("HalfStorage", "float16"),
    ("BFloat16Storage", "bfloat16"),
    ("LongStorage", "int64"),
    ("IntStorage", "int32"),
    ("ShortStorage", "int16"),
    ("CharStorage", "int8"),
    ("ByteStorage", "uint8"),
    ("BoolStorage", "bool"),
    ("ComplexFloatStorage", "complex64"),
    ("ComplexDoubleStorage", "complex128"),
    ("QUInt8Storage", "quint8"),
    ("QInt8Storage", "qint8"),
    ("QInt32Storage", "qint32"),
    ("QUInt4x2Storage", "quint4x2"),
    ("QUInt2x4Storage", "quint2x4"),
];

/// The legacy tensor classes (`torch.FloatTensor`, `torch.cuda.HalfTensor`, …) by their
/// element type's prefix.
const TENSOR_CLASSES: &[(&str, &str)] = &[
    ("Double", "float64"),
    ("Float", "float32"),
    ("Half", "float16"),
    ("BFloat16", "bfloat16"),
    ("Long", "int64"),
    ("Int", "int32"),
    ("Short", "int16"),
    ("Char", "int8"),
    ("Byte", "uint8"),
    ("Bool", "bool"),
];

/// The dtype `torch.<name>`.
pub(crate) fn dtype_named(name: &str) -> Option<TorchDtype> {
    DTYPES.iter().find(|d| d.name == name).copied()
}

/// The element dtype of the legacy storage class `torch.<class>`.
pub(crate) fn storage_class(class: &str) -> Option<TorchDtype> {
    let (_, dtype) = STORAGE_CLASSES.iter().find(|(c, _)| *c == class)?;
    dtype_named(dtype)
}

/// The element dtype of the legacy tensor class `<class>` (`FloatTensor`, …).
pub(crate) fn tensor_class(class: &str) -> Option<TorchDtype> {
    let prefix = class.strip_suffix("Tensor")?;
    let (_, dtype) = TENSOR_CLASSES.iter().find(|(c, _)| *c == prefix)?;
    dtype_named(dtype)
}

/// `uint8`, what an untyped storage holds.
pub(crate) fn bytes_dtype() -> TorchDtype {
    t("uint8", 1, Some(DType::U8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_names_a_known_dtype() {
        for (class, _) in STORAGE_CLASSES {
            assert!(storage_class(class).is_some(), "{class}");
        }
        for (prefix, _) in TENSOR_CLASSES {
            assert!(
                tensor_class(&format!("{prefix}Tensor")).is_some(),
                "{prefix}"
            );
        }
        assert_eq!(storage_class("FloatStorage").unwrap().itemsize, 4);
        assert_eq!(
            dtype_named("float8_e4m3fn").unwrap().dtype,
            Some(DType::F8E4M3)
        );
        assert!(dtype_named("float").is_none());
        assert_eq!(bytes_dtype(), dtype_named("uint8").unwrap());
    }
}
