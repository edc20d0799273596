//! Observers written as one stateful object (`Observer`) rather than as an [`ObserverKind`]
//! (state + pure search). Every parameter of such an observer counts as affecting the data: a
//! change rebuilds it and feeds it the data again, so no stale value can survive.
//!
//! [`ObserverKind`]: super::ObserverKind

use super::{Collected, ObserverSpec, ObserverState, QParams, Resolved};
use super::{Family, Granularity};
use crate::error::Result;
use crate::params::{Affects, ParamSpec, Params};
use crate::quant;
use crate::tensor::Tensor;
use std::any::Any;

/// Whether a parameter change could be applied to the existing state (no longer used: every
/// change of a stateful observer's parameters rebuilds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retune {
    /// The observer updated itself.
    Applied,
    /// The observer must be rebuilt and fed the data again.
    NeedsData,
}

/// One stateful observer object.
pub trait Observer: Send + Sync {
    /// Feed one calibration batch (one `forward()` call in the framework).
    fn observe(&mut self, batch: &Tensor) -> Result<()>;

    /// Compute quantization parameters from everything observed so far.
    fn qparams(&self) -> Result<QParams>;

    /// Forget everything observed.
    fn reset(&mut self);

    /// State for plotting.
    fn state(&self) -> ObserverState;

    /// Quantize–dequantize `x` with `q` the way this framework does.
    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        quant::fake_quantize_affine(x, q)
    }

    /// Not used (see [`Retune`]).
    fn retune(&mut self, _params: &Params) -> Result<Retune> {
        Ok(Retune::NeedsData)
    }

    /// Assign an attribute after construction; the default refuses every name.
    fn set_attribute(&mut self, name: &str, _value: &serde_json::Value) -> Result<()> {
        Err(crate::error::Error::param(
            name,
            "this observer has no attribute that can be set after construction",
        ))
    }
}

/// Constructor of a stateful observer from its parameters.
pub type BuildFn = fn(&Params) -> Result<Box<dyn Observer>>;

impl ObserverSpec {
    /// The registry entry of a stateful observer built by `build`.
    pub fn legacy(
        id: &'static str,
        family: Family,
        framework_version: &'static str,
        granularity: Granularity,
        summary: &'static str,
        params: Vec<ParamSpec>,
        build: BuildFn,
    ) -> Self {
        let params = params
            .into_iter()
            .map(|mut p| {
                p.affects = Affects::Data;
                p
            })
            .collect();
        let mut spec = Self::from_parts(
            id,
            family,
            framework_version,
            granularity,
            summary,
            params,
            resolve_unsupported,
            complete_as_given,
        );
        spec.legacy_build = Some(build);
        spec
    }
}

fn resolve_unsupported(_: &Params, _: &[String]) -> Result<Box<dyn Resolved>> {
    Err(crate::error::Error::input(
        "internal error: a stateful observer is resolved through its build function",
    ))
}

fn complete_as_given(params: &Params) -> Result<Params> {
    Ok(params.clone())
}

/// A stateful observer's parameters, resolved by building it once (so constructor errors show).
#[derive(Debug)]
pub(crate) struct LegacyResolved {
    pub params: Params,
    pub build: BuildFn,
}

impl LegacyResolved {
    pub(crate) fn new(params: &Params, build: BuildFn) -> Result<Self> {
        build(params)?;
        Ok(LegacyResolved {
            params: params.clone(),
            build,
        })
    }
}

struct LegacyState(Option<Box<dyn Observer>>);

impl std::fmt::Debug for LegacyState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LegacyState")
    }
}

fn built(state: &dyn Collected) -> Result<&dyn Observer> {
    state
        .as_any()
        .downcast_ref::<LegacyState>()
        .and_then(|s| s.0.as_deref())
        .ok_or_else(|| crate::error::Error::input("internal error: observer state missing"))
}

impl Resolved for LegacyResolved {
    fn new_state(&self) -> Box<dyn Collected> {
        Box::new(LegacyState((self.build)(&self.params).ok()))
    }

    fn observe(&self, state: &mut dyn Collected, batch: &Tensor) -> Result<()> {
        let state = state
            .as_any_mut()
            .downcast_mut::<LegacyState>()
            .and_then(|s| s.0.as_mut())
            .ok_or_else(|| crate::error::Error::input("internal error: observer state missing"))?;
        state.observe(batch)
    }

    fn qparams(&self, state: &dyn Collected) -> Result<QParams> {
        built(state)?.qparams()
    }

    fn fake_quantize(&self, state: &dyn Collected, x: &Tensor, q: &QParams) -> Result<Tensor> {
        built(state)?.fake_quantize(x, q)
    }
}

impl Collected for LegacyState {
    fn plot(&self) -> ObserverState {
        self.0.as_ref().map(|o| o.state()).unwrap_or_default()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
