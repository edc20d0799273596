//! What is wrong with a quantized checkpoint, besides its error: scales that are missing, zero,
//! non-finite or saturated (FP8 E4M3 at ±448, E8M0 at its largest exponent or NaN), 2-D weights
//! left unquantized, shapes that disagree, weights that cannot be read, non-finite values.

use super::{DiffRow, LintItem};
use crate::checkpoint::layouts::Layout;
use crate::checkpoint::weights::{Weight, WeightSource};
use crate::tensor::DType;

/// Whether `layout` is a quantized checkpoint: a recognised quantization layout, or a GGUF file
/// with quantized tensors.
pub fn is_quantized(layout: &Layout) -> bool {
    layout.name.is_some()
        || layout
            .weights
            .iter()
            .any(|w| matches!(w.source, WeightSource::Coded { .. }) || !is_float(&w.format))
}

/// Whether `format` is a plain floating-point dtype.
fn is_float(format: &str) -> bool {
    matches!(
        format,
        "float32" | "float16" | "bfloat16" | "float64" | "F32" | "F16" | "BF16" | "F64"
    )
}

/// The lint of one compared pair.
pub fn of_pair(
    original: &Weight,
    quantized: &Weight,
    row: &DiffRow,
    quantized_checkpoint: bool,
) -> Vec<LintItem> {
    let mut out = Vec::new();
    let item = |kind, message: String| LintItem {
        tensor: quantized.name.clone(),
        kind,
        message,
    };
    if let Some(e) = &row.error {
        let kind = if e.starts_with("shapes disagree") {
            "shape"
        } else if e.contains("scale") && (e.contains("missing") || e.contains("no ")) {
            "missing_scale"
        } else {
            "unreadable"
        };
        out.push(item(kind, e.clone()));
    } else if original.shape != quantized.shape {
        out.push(item(
            "shape",
            format!(
                "the original is {:?} and the quantized weight {:?} (same number of values)",
                original.shape, quantized.shape
            ),
        ));
    }
    if let Some(m) = row.metrics {
        if !m.mse.is_finite() {
            out.push(item(
                "nonfinite",
                "the dequantized weight holds NaN or infinite values".into(),
            ));
        }
    }
    if quantized_checkpoint
        && quantized.shape.len() == 2
        && quantized.shape.iter().all(|&d| d > 1)
        && is_float(&quantized.format)
        && matches!(quantized.source, WeightSource::Entry(_))
    {
        out.push(item(
            "unquantized",
            format!("a 2-D weight left unquantized ({})", quantized.format),
        ));
    }
    out
}

/// The lint of one stored scale array `part` (values decoded to float32, stored as `dtype`) of
/// weight `name`, for codec `codec`.
pub fn of_scales(
    name: &str,
    part: &str,
    codec: &str,
    dtype: DType,
    values: &[f32],
) -> Vec<LintItem> {
    let mut out = Vec::new();
    let zeros = values.iter().filter(|&&v| v == 0.0).count();
    let nonfinite = values.iter().filter(|v| !v.is_finite()).count();
    let e8m0 = dtype == DType::U8 && (codec.contains("mx") || part.ends_with("scales"));
    let saturated = values
        .iter()
        .filter(|&&v| match dtype {
            DType::F8E4M3 => v.abs() == 448.0,
            _ if e8m0 => v == 254.0,
            _ => false,
        })
        .count();
    let not_a_number = if e8m0 {
        values.iter().filter(|&&v| v == 255.0).count()
    } else {
        0
    };
    let item = |kind, message: String| LintItem {
        tensor: name.to_string(),
        kind,
        message,
    };
    let n = values.len();
    // An E8M0 scale of 0 is 2^-127, not zero.
    if zeros > 0 && !e8m0 {
        out.push(item(
            "zero_scale",
            format!("{zeros} of {n} `{part}` values are zero: those groups decode to zero"),
        ));
    }
    if nonfinite + not_a_number > 0 {
        out.push(item(
            "nonfinite_scale",
            format!(
                "{} of {n} `{part}` values are NaN or infinite",
                nonfinite + not_a_number
            ),
        ));
    }
    if saturated > 0 {
        out.push(item(
            "saturated_scale",
            format!(
                "{saturated} of {n} `{part}` values sit at the format's largest ({})",
                if e8m0 { "E8M0 2^127" } else { "E4M3 ±448" }
            ),
        ));
    }
    out
}
