//! The session's quantizer views: every number format on the current tensor, and AdaRound on a
//! weight and an input picked from the loaded files.
//!
//! Both are long jobs in the page, so both are driven piecewise: the formats one format at a
//! time ([`Session::format_lineup`] then [`Session::evaluate_format`]), AdaRound a few
//! iterations at a time ([`Session::adaround_begin`], [`Session::adaround_step`],
//! [`Session::adaround_finish`]); the host reports progress and can cancel between pieces.

use super::{MemberRef, Session};
use crate::codec::{self as formats, FormatResult};
use crate::error::{Error, Result};
use crate::params::Params;
use crate::quantizers::adaround::{AdaRound, AdaRoundConfig, AdaRoundOutcome, Progress};
use crate::quantizers::apply::{self, Quantized};
use crate::tensor::Tensor;
use serde::Serialize;

/// The tensor the formats view measures.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct FormatsTarget {
    /// Source, e.g. `l0_layer_out.npy`.
    pub name: String,
    pub shape: Vec<usize>,
    /// Formats of the standard line-up for this shape: `[format id, params]`.
    pub lineup: Vec<(&'static str, Params)>,
}

/// An AdaRound run as it starts.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct AdaRoundStart {
    /// `[out, in]` of W.
    pub weight_shape: [usize; 2],
    /// `[n, in]` of X (leading axes of an activation flattened into rows).
    pub input_shape: [usize; 2],
    pub config: AdaRoundConfig,
}

/// Where a running AdaRound stands.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct AdaRoundStatus {
    pub iterations_run: usize,
    pub iterations: usize,
    pub done: bool,
    /// Progress points recorded by this step (about one per 1% of the run).
    pub points: Vec<Progress>,
}

impl Session {
    /// The tensor the formats view measures: the first selected tensor, whole (before any
    /// split into batches).
    fn formats_tensor(&self) -> Result<(String, &Tensor)> {
        let selection = self
            .selection
            .as_ref()
            .ok_or_else(|| Error::input("load a tensor first"))?;
        let first = selection
            .batches
            .first()
            .ok_or_else(|| Error::input("select a tensor first"))?;
        let tensor = self.member(first)?;
        Ok((self.member_name(first), tensor))
    }

    /// The tensor the formats view measures and the standard line-up of formats for it.
    pub fn format_lineup(&self) -> Result<FormatsTarget> {
        let (name, tensor) = self.formats_tensor()?;
        Ok(FormatsTarget {
            name,
            shape: tensor.shape.clone(),
            lineup: formats::lineup(&tensor.shape),
        })
    }

    /// Quantize–dequantize the formats view's tensor with format family `id` and `params`.
    pub fn evaluate_format(&self, id: &str, params: &Params) -> Result<FormatResult> {
        let (_, tensor) = self.formats_tensor()?;
        let spec = formats::find(id)?;
        let resolved = self.resolve_vectors(&spec.params, params)?;
        let mut row = formats::evaluate(spec.id, &resolved, tensor)?;
        // The row keeps the parameters as given (a loaded tensor by reference, not its values).
        row.params = params.clone();
        Ok(row)
    }

    /// [`Session::evaluate_format`] on the formats view's tensor with every row rotated along its
    /// last axis by the randomized Hadamard rotation `rotate` (`hadamard[:SEED]`, as the CLI's
    /// `--rotate`, [`crate::rotation`]): the row and what rotation was applied.
    pub fn evaluate_format_rotated(
        &self,
        id: &str,
        params: &Params,
        rotate: &str,
    ) -> Result<(FormatResult, String)> {
        let (_, tensor) = self.formats_tensor()?;
        let spec = formats::find(id)?;
        let resolved = self.resolve_vectors(&spec.params, params)?;
        let (rotated, rotation) =
            crate::rotation::rotate_batches(std::slice::from_ref(tensor), rotate)?;
        let mut row = formats::evaluate(spec.id, &resolved, &rotated[0])?;
        row.params = params.clone();
        Ok((row, rotation))
    }

    /// Quantize–dequantize the formats view's tensor with quantizer `id` (a format family or
    /// one of Quark's quantizers, see [`apply::quantize`]): the dequantized values with their
    /// cost and error. A vector parameter (ggml's `imatrix`) may name a loaded tensor.
    pub fn quantize(&self, id: &str, params: &Params) -> Result<Quantized> {
        let (_, tensor) = self.formats_tensor()?;
        let declared = formats::find(id)
            .map(|spec| spec.params)
            .unwrap_or_default();
        let resolved = self.resolve_vectors(&declared, params)?;
        apply::quantize(id, &resolved, tensor)
    }

    /// How format `id` with `params` stored block `block` of the formats view's tensor (default:
    /// the block holding its largest magnitude), recorded by the codec's own encoder
    /// ([`crate::codec::explain`]).
    pub fn explain_format(
        &self,
        id: &str,
        params: &Params,
        block: Option<usize>,
    ) -> Result<crate::codec::explain::BlockDerivation> {
        let (_, tensor) = self.formats_tensor()?;
        let spec = formats::find(id)?;
        let resolved = self.resolve_vectors(&spec.params, params)?;
        crate::codec::explain::explain(spec.id, &resolved, tensor, block)
    }

    /// Start AdaRound for weight `w` (`[out, in]`) and inputs `x` (`[…, in]`, leading axes
    /// flattened into rows) with registry parameters `params`. A run in progress is replaced.
    pub fn adaround_begin(
        &mut self,
        w: &MemberRef,
        x: &MemberRef,
        params: &Params,
    ) -> Result<AdaRoundStart> {
        let config = AdaRoundConfig::from_params(params)?;
        let weight = self.member(w)?;
        if weight.ndim() != 2 {
            return Err(Error::input(format!(
                "the weight W ({}) must be a 2-d [out, in] matrix, got shape {:?}",
                self.member_name(w),
                weight.shape
            )));
        }
        let inputs = rows_of(self.member(x)?, &self.member_name(x))?;
        let run = AdaRound::new(weight, &inputs, &config)?;
        let start = AdaRoundStart {
            weight_shape: [weight.shape[0], weight.shape[1]],
            input_shape: [inputs.shape[0], inputs.shape[1]],
            config,
        };
        self.adaround = Some(run);
        Ok(start)
    }

    /// Run up to `count` more iterations of the current AdaRound run.
    pub fn adaround_step(&mut self, count: usize) -> Result<AdaRoundStatus> {
        let run = self
            .adaround
            .as_mut()
            .ok_or_else(|| Error::input("no AdaRound run in progress"))?;
        let before = run.history().len();
        run.step(count);
        Ok(AdaRoundStatus {
            iterations_run: run.iterations_run(),
            iterations: run.config().iterations,
            done: run.is_done(),
            points: run.history()[before..].to_vec(),
        })
    }

    /// Conclude the current AdaRound run with what it learned so far (all of it when done,
    /// less when cancelled).
    pub fn adaround_finish(&mut self) -> Result<AdaRoundOutcome> {
        let run = self
            .adaround
            .take()
            .ok_or_else(|| Error::input("no AdaRound run in progress"))?;
        Ok(run.finish())
    }

    /// Drop the current AdaRound run, if any.
    pub fn adaround_abort(&mut self) {
        self.adaround = None;
    }
}

/// `t` as a matrix of rows: `[…, in]` becomes `[product of leading axes, in]`.
fn rows_of(t: &Tensor, name: &str) -> Result<Tensor> {
    if t.ndim() < 2 {
        return Err(Error::input(format!(
            "the input X ({name}) must have at least 2 axes [rows, in], got shape {:?}",
            t.shape
        )));
    }
    let cols = t.shape[t.ndim() - 1];
    let rows = t.len() / cols.max(1);
    Tensor::new(vec![rows, cols], t.data.clone())
}
