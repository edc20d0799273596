//! `compressed_tensors.quantization.QuantizationArgs` (compressed-tensors 0.19.0,
//! `quant_args.py`) as flat parameters, validated like its pydantic model.
//!
//! `block_structure` takes the library's string spelling `"RxC"` (`[R, C]` in its Python form).
//! The model validator (`validate_model_after`) infers the strategy (`group_size` unset →
//! tensor, `> 0` → group, `−1` → channel), refuses static token quantization, a group strategy
//! without a positive group size, a group size with another strategy, a block strategy without
//! a block structure and vice versa, and dynamic quantization with a channel or block strategy.
//! It defaults `zp_dtype` to `float8_e4m3fn` for 4-bit floats and to `pytorch_dtype()`
//! otherwise (int8 for ≤ 8-bit integers, int16 ≤ 16, int32 above; float8_e4m3fn for 8-bit
//! floats; any other float width raises `NotImplementedError`). Its `ValueError`s surface as
//! pydantic's `ValidationError: 1 validation error for QuantizationArgs`.

use crate::error::{Error, Result, Stage};
use crate::params::Choice;

crate::choice_enum! {
    /// What the observer watches (`Observer(base_name=…)`): a Linear layer's weight or an
    /// activation (`input`/`output`, laid out `[batch, seq, hidden]`).
    pub enum BaseName { Weight = "weight", Input = "input", Output = "output" }
}

crate::choice_enum! {
    /// `QuantizationType`.
    pub enum QuantizationType { Int = "int", Float = "float" }
}

crate::choice_enum! {
    /// `QuantizationStrategy` (without `attn_head`, which needs attention q/k/v states).
    pub enum Strategy {
        Tensor = "tensor",
        Channel = "channel",
        Group = "group",
        Block = "block",
        Token = "token",
        TensorGroup = "tensor_group",
    }
}

crate::choice_enum! {
    /// `scale_dtype`: the dtype scales are rounded to (`uint8` holds MX E8M0 exponents).
    pub enum ScaleDtype {
        Float32 = "float32",
        Float16 = "float16",
        Bfloat16 = "bfloat16",
        Float8E4m3fn = "float8_e4m3fn",
        Uint8 = "uint8",
    }
}

crate::choice_enum! {
    /// `zp_dtype`: the dtype zero points are rounded and cast to.
    pub enum ZpDtype {
        Int8 = "int8",
        Uint8 = "uint8",
        Int16 = "int16",
        Int32 = "int32",
        Float8E4m3fn = "float8_e4m3fn",
        Float16 = "float16",
        Bfloat16 = "bfloat16",
        Float32 = "float32",
    }
}

/// Declares a `QuantizationArgs` parameter set whose quantization fields (`num_bits`, `type`,
/// `symmetric`, `scale_dtype`, `zp_dtype`) affect `$affects`: only the qparams of a min-max
/// observer (`Search`), the search in `forward` of an MSE observer (`Data`).
macro_rules! quantization_args {
    ($(#[$meta:meta])* $name:ident, $affects:ident) => {
        crate::declare_params! {
            $(#[$meta])*
            pub struct $name {
                /// bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3)
                num_bits: i64 = 8; int(1, 32), $affects;
                /// integer or float quantized values
                r#type: QuantizationType = QuantizationType::Int; choice(), $affects;
                /// symmetric (zero point 0) or asymmetric range
                symmetric: bool = true; boolean(), $affects;
                /// tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size
                strategy: Option<Strategy> = None; choice(), Data;
                /// columns per group (group/tensor_group; −1 infers channel)
                group_size: Option<i64> = None; int(-1, 65536), Data;
                /// block shape "RxC" (block strategy, weights)
                block_structure: Option<String> = None; text(), Data;
                /// dynamic quantization (only validated: token strategy requires it)
                dynamic: bool = false; boolean(), Search;
                /// dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents)
                scale_dtype: Option<ScaleDtype> = None; choice(), $affects;
                /// dtype of the zero points (default from num_bits and type)
                zp_dtype: Option<ZpDtype> = None; choice(), $affects;
            }
        }

        impl $name {
            /// Validate like the pydantic model.
            pub fn validate(&self) -> Result<QuantArgs> {
                QuantArgs::validate(RawArgs {
                    num_bits: self.num_bits,
                    qtype: self.r#type,
                    symmetric: self.symmetric,
                    strategy: self.strategy,
                    group_size: self.group_size,
                    block_structure: self.block_structure.as_deref(),
                    dynamic: self.dynamic,
                    scale_dtype: self.scale_dtype,
                    zp_dtype: self.zp_dtype,
                })
            }
        }
    };
}

quantization_args!(
    /// `QuantizationArgs` of a min-max observer: the quantization fields only enter
    /// `calculate_qparams`.
    QuantArgsFields,
    Search
);

quantization_args!(
    /// `QuantizationArgs` of an MSE observer: every field enters the search in `forward`.
    SearchedQuantArgsFields,
    Data
);

/// The fields as given.
struct RawArgs<'a> {
    num_bits: i64,
    qtype: QuantizationType,
    symmetric: bool,
    strategy: Option<Strategy>,
    group_size: Option<i64>,
    block_structure: Option<&'a str>,
    dynamic: bool,
    scale_dtype: Option<ScaleDtype>,
    zp_dtype: Option<ZpDtype>,
}

/// A validated `QuantizationArgs` (strategy inferred, `zp_dtype` defaulted).
#[derive(Debug, Clone, PartialEq)]
pub struct QuantArgs {
    pub num_bits: u32,
    pub qtype: QuantizationType,
    pub symmetric: bool,
    pub strategy: Strategy,
    /// Positive group size (group and tensor_group strategies).
    pub group_size: Option<usize>,
    /// `[rows, cols]` of a block (block strategy).
    pub block: Option<[usize; 2]>,
    pub dynamic: bool,
    pub scale_dtype: Option<ScaleDtype>,
    pub zp_dtype: ZpDtype,
}

/// pydantic's `ValidationError` for one failed validator.
fn validation_error(field: Option<&str>, message: &str) -> Error {
    let location = field.map(|f| format!("\n{f}")).unwrap_or_default();
    Error::framework(
        "ValidationError",
        format!("1 validation error for QuantizationArgs{location}\n  Value error, {message}"),
        Stage::Init,
    )
}

/// `"RxC"` (or `"[R, C]"`) → `[R, C]`, both positive.
fn parse_block(text: &str) -> Option<[usize; 2]> {
    let trimmed = text.trim().trim_start_matches('[').trim_end_matches(']');
    let sep = if trimmed.contains('x') { 'x' } else { ',' };
    let parts: Vec<&str> = trimmed.split(sep).map(str::trim).collect();
    match parts.as_slice() {
        [r, c] => {
            let (r, c) = (r.parse::<usize>().ok()?, c.parse::<usize>().ok()?);
            (r > 0 && c > 0).then_some([r, c])
        }
        _ => None,
    }
}

impl QuantArgs {
    fn validate(raw: RawArgs<'_>) -> Result<QuantArgs> {
        let block = match raw.block_structure {
            None => None,
            Some(text) => Some(parse_block(text).ok_or_else(|| {
                validation_error(
                    Some("block_structure"),
                    &format!(
                        "Invalid block_structure '{text}'. Must be a list of positive ints [rows, cols]."
                    ),
                )
            })?),
        };
        let group_size = raw.group_size;
        let strategy = match (raw.strategy, group_size) {
            (Some(s), _) => s,
            (None, None) => Strategy::Tensor,
            (None, Some(g)) if g > 0 => Strategy::Group,
            (None, Some(-1)) => Strategy::Channel,
            (None, Some(g)) => {
                return Err(validation_error(
                    None,
                    &format!(
                        "Invalid group size {g}. Use group_size > 0 for strategy='group' and group_size = -1 for 'channel'"
                    ),
                ))
            }
        };
        let grouped = matches!(strategy, Strategy::Group | Strategy::TensorGroup);
        if strategy == Strategy::Token && !raw.dynamic {
            return Err(validation_error(
                None,
                "Cannot perform static token quantization, please use `dynamic=True`",
            ));
        }
        if grouped && group_size.is_none_or(|g| g <= 0) {
            return Err(validation_error(
                None,
                &format!(
                    "strategy {} requires group_size to be set to a positive value",
                    strategy.name()
                ),
            ));
        }
        if group_size.is_some_and(|g| g > 0) && !grouped {
            return Err(validation_error(
                None,
                "group_size requires strategy to be set to 'group'",
            ));
        }
        if strategy == Strategy::Block && block.is_none() {
            return Err(validation_error(
                None,
                "Block strategy requires block structure",
            ));
        }
        if block.is_some() && strategy != Strategy::Block {
            return Err(validation_error(
                None,
                "Block structure requires block strategy",
            ));
        }
        if raw.dynamic && matches!(strategy, Strategy::Channel | Strategy::Block) {
            return Err(validation_error(
                None,
                "One of (<QuantizationStrategy.TOKEN: 'token'>, <QuantizationStrategy.TENSOR: 'tensor'>, <QuantizationStrategy.TENSOR_GROUP: 'tensor_group'>, <QuantizationStrategy.GROUP: 'group'>) must be used for dynamic quant.",
            ));
        }
        let num_bits = raw.num_bits as u32;
        let zp_dtype = match raw.zp_dtype {
            Some(z) => z,
            None => match raw.qtype {
                QuantizationType::Float if num_bits == 4 || num_bits == 8 => ZpDtype::Float8E4m3fn,
                QuantizationType::Float => {
                    return Err(Error::framework(
                        "NotImplementedError",
                        "Only num_bits in (8) are supported",
                        Stage::Init,
                    ))
                }
                QuantizationType::Int if num_bits <= 8 => ZpDtype::Int8,
                QuantizationType::Int if num_bits <= 16 => ZpDtype::Int16,
                QuantizationType::Int => ZpDtype::Int32,
            },
        };
        Ok(QuantArgs {
            num_bits,
            qtype: raw.qtype,
            symmetric: raw.symmetric,
            strategy,
            group_size: group_size
                .and_then(|g| usize::try_from(g).ok())
                .filter(|g| *g > 0),
            block,
            dynamic: raw.dynamic,
            scale_dtype: raw.scale_dtype,
            zp_dtype,
        })
    }

    /// The same arguments with another strategy (`model_copy(update={"strategy": …})`).
    pub fn with_strategy(&self, strategy: Strategy) -> QuantArgs {
        QuantArgs {
            strategy,
            ..self.clone()
        }
    }

    /// The arguments an MSE search scores candidates with: TENSOR_GROUP drops `scale_dtype`
    /// (no FP8 rounding of candidate scales, no global scale).
    pub fn for_search(&self) -> QuantArgs {
        if self.strategy == Strategy::TensorGroup && self.scale_dtype.is_some() {
            QuantArgs {
                scale_dtype: None,
                ..self.clone()
            }
        } else {
            self.clone()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::params::{ParamSet, Params};
    use serde_json::json;

    fn args(v: serde_json::Value) -> Result<QuantArgs> {
        QuantArgsFields::from_params(&Params::from_value(v).unwrap())?.validate()
    }

    /// The validated `QuantizationArgs` of keyword arguments `v` (shared by the family's tests).
    pub(crate) fn valid(v: serde_json::Value) -> QuantArgs {
        args(v).unwrap()
    }

    #[test]
    fn the_model_validator_infers_and_refuses_like_pydantic() {
        assert_eq!(args(json!({})).unwrap().strategy, Strategy::Tensor);
        assert_eq!(
            args(json!({"group_size": 32})).unwrap().strategy,
            Strategy::Group
        );
        assert_eq!(
            args(json!({"group_size": -1})).unwrap().strategy,
            Strategy::Channel
        );
        let a = args(json!({"type": "float", "num_bits": 4})).unwrap();
        assert_eq!(a.zp_dtype, ZpDtype::Float8E4m3fn);
        assert_eq!(
            args(json!({"block_structure": "32x64", "strategy": "block"}))
                .unwrap()
                .block,
            Some([32, 64])
        );
        let err = |v| args(v).unwrap_err().to_string();
        assert!(err(json!({"strategy": "token"})).contains("static token quantization"));
        assert!(err(json!({"strategy": "group"})).contains("requires group_size"));
        assert!(err(json!({"group_size": 0})).contains("Invalid group size 0"));
        assert!(err(json!({"strategy": "block"})).contains("requires block structure"));
        assert!(err(json!({"block_structure": "3x"})).contains("Invalid block_structure"));
        assert_eq!(
            err(json!({"type": "float", "num_bits": 6})),
            "NotImplementedError: Only num_bits in (8) are supported"
        );
        assert!(err(json!({"strategy": "token"})).starts_with("ValidationError: 1 validation"));
    }
}
