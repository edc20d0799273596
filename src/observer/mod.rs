//! The observer abstraction shared by every framework family.
//!
//! An observer is two things ([`ObserverKind`]):
//!
//! 1. **state collected from data** — fed calibration batches in order
//!    ([`ObserverKind::feed`], one framework `forward()` each), starting from
//!    [`ObserverKind::init`]; and
//! 2. **a pure search over that state** ([`ObserverKind::qparams`], the framework's
//!    `calculate_qparams()`), given a complete, resolved configuration.
//!
//! The configuration is always rebuilt from *all* current parameter values
//! ([`ObserverKind::resolve`], the framework constructor's checks) — defaults are filled in once,
//! by the declaration ([`crate::declare_params!`]). Parameters declared
//! [`Affects::Search`](crate::params::Affects::Search) may change while the collected state is
//! kept, so a slider that only moves the search never reads the data again and can never keep a
//! stale value: whatever the sequence of changes, the result equals a fresh run with the current
//! values (a property test checks this for every observer and parameter).
//!
//! [`ObserverKind::fake_quantize`] applies qparams the way the framework does, so error metrics
//! mean what the framework would give. It runs the observer's fused kernel
//! ([`ObserverKind::qdq_kernel`]) by default, so that the values and the metrics come from one
//! per-element map; an observer writes its own only for qparams no kernel covers.
//!
//! The registry stores kinds type-erased ([`Resolved`] and [`Collected`], built by
//! [`ObserverSpec::of`]).

pub mod spec;

pub use crate::qparams::{Grid, QParams, ZeroPoint};
pub use spec::{Family, Granularity, ObserverEntry, ObserverSpec, Preset};

use crate::error::{Error, Result};
use crate::params::ParamSet;
use crate::qdq::{self, QdqKernel};
use crate::tensor::Tensor;
use serde::Serialize;
use std::any::Any;
use std::fmt::Debug;

/// A snapshot of an observer's state for plotting.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlotSnapshot {
    /// Running min/max (per slice).
    pub min_val: Vec<f32>,
    pub max_val: Vec<f32>,
    /// The observer's own histogram, if it keeps one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<HistogramState>,
}

/// A histogram as an observer holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramState {
    /// Bin counts (may be fractional after re-binning).
    pub counts: Vec<f32>,
    /// Bin edges, `counts.len() + 1` of them.
    pub edges: Vec<f32>,
}

/// One range-calibration method of one framework: state collected from data and a pure search
/// over it.
pub trait ObserverKind: Send + Sync + 'static {
    /// The constructor's parameters, declared once with [`crate::declare_params!`].
    type Args: ParamSet;
    /// The complete, validated configuration (everything the framework's constructor derives).
    type Config: Clone + Debug + Send + Sync + 'static;
    /// What the observer collects from the data.
    type State: Clone + Debug + Send + Sync + 'static;

    /// The framework's constructor: validate `args` the way the framework does, in its order.
    /// `unknown` lists keys the constructor does not take, in the order given; a kind that
    /// reproduces the framework's refusal (e.g. PyTorch's `TypeError`) raises it here, otherwise
    /// the driver refuses them after a successful resolve.
    fn resolve(args: &Self::Args, unknown: &[String]) -> Result<Self::Config>;

    /// The state before any data. It may read only configuration derived from
    /// [`Affects::Data`](crate::params::Affects::Data) parameters.
    fn init(config: &Self::Config) -> Self::State;

    /// Feed one calibration batch (one `forward()` call). It may read only configuration derived
    /// from `Data` parameters.
    fn feed(state: &mut Self::State, config: &Self::Config, batch: &Tensor) -> Result<()>;

    /// The quantization parameters chosen from `state` under `config` (`calculate_qparams()`):
    /// a pure function.
    fn qparams(state: &Self::State, config: &Self::Config) -> Result<QParams>;

    /// Quantize–dequantize `x` with `q` the way this framework does. The default applies the
    /// observer's kernel ([`ObserverKind::qdq_kernel`]) over the tensor in parallel pieces
    /// ([`qdq::fake_quantize`]) and refuses qparams that no kernel fits. An observer writes its
    /// own only where no kernel applies (and says which qparams those are); it must then give,
    /// wherever a kernel does apply, the kernel's bits.
    fn fake_quantize(config: &Self::Config, x: &Tensor, q: &QParams) -> Result<Tensor> {
        match Self::qdq_kernel(config, &x.shape, q) {
            Some(kernel) => Ok(qdq::fake_quantize(x, kernel.as_ref())),
            None => Err(Error::input(format!(
                "these qparams ({} scales, axis {:?}) do not fit a tensor of shape {:?}",
                q.scale.len(),
                q.axis,
                x.shape
            ))),
        }
    }

    /// The framework's quantize–dequantize as a fused kernel for tensors of `shape`: it gives
    /// the values ([`QdqKernel::apply`], what the default [`ObserverKind::fake_quantize`] runs)
    /// and measures the error piece by piece ([`QdqKernel::measure`], see [`crate::qdq`]).
    /// `None` (the default, and whenever the qparams do not fit) makes the driver call
    /// `fake_quantize` and measure its result instead.
    fn qdq_kernel(
        _config: &Self::Config,
        _shape: &[usize],
        _q: &QParams,
    ) -> Option<Box<dyn QdqKernel>> {
        None
    }

    /// A snapshot for plotting.
    fn plot(state: &Self::State) -> PlotSnapshot;

    /// How many slices (channels, groups, blocks) the qparams of batches of `shape` will have,
    /// when the configuration alone decides it; `None` (the default) when only the search
    /// tells. The explorer refuses a panel that would carry too many before collecting anything.
    fn slice_count(_config: &Self::Config, _shape: &[usize]) -> Option<usize> {
        None
    }

    /// How the parameters of `config` are shaped, when the parameters decide it (e.g. a
    /// `strategy` of `tensor`, `channel` or `group`); `None` keeps the registry's granularity.
    /// It decides how non-finite values are kept out (see [`crate::engine::NonFinitePolicy`])
    /// and what a report says.
    fn granularity(_config: &Self::Config) -> Option<Granularity> {
        None
    }
}

/// A resolved observer (type-erased [`ObserverKind::Config`]): collects state and searches it.
pub trait Resolved: Send + Sync + Debug {
    /// [`ObserverKind::init`].
    fn new_state(&self) -> Box<dyn Collected>;
    /// [`ObserverKind::feed`].
    fn feed(&self, state: &mut dyn Collected, batch: &Tensor) -> Result<()>;
    /// [`ObserverKind::qparams`].
    fn qparams(&self, state: &dyn Collected) -> Result<QParams>;
    /// [`ObserverKind::fake_quantize`].
    fn fake_quantize(&self, state: &dyn Collected, x: &Tensor, q: &QParams) -> Result<Tensor>;
    /// [`ObserverKind::granularity`].
    fn granularity(&self) -> Option<Granularity>;
    /// [`ObserverKind::qdq_kernel`].
    fn qdq_kernel(&self, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>>;
    /// [`ObserverKind::slice_count`].
    fn slice_count(&self, shape: &[usize]) -> Option<usize>;
}

/// Collected state (type-erased [`ObserverKind::State`]).
pub trait Collected: Any + Send + Sync + Debug {
    /// [`ObserverKind::plot`].
    fn plot(&self) -> PlotSnapshot;
    /// For downcasting to the concrete state.
    fn as_any(&self) -> &dyn Any;
    /// For downcasting to the concrete state.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// The configuration of kind `K`, type-erased.
struct Bound<K: ObserverKind>(K::Config);

impl<K: ObserverKind> Debug for Bound<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The state of kind `K`, type-erased.
struct StateOf<K: ObserverKind>(K::State);

impl<K: ObserverKind> Debug for StateOf<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

fn mismatch() -> Error {
    Error::input("internal error: an observer was given the state of another observer")
}

impl<K: ObserverKind> Bound<K> {
    fn state<'a>(&self, state: &'a dyn Collected) -> Result<&'a K::State> {
        state
            .as_any()
            .downcast_ref::<StateOf<K>>()
            .map(|s| &s.0)
            .ok_or_else(mismatch)
    }
}

impl<K: ObserverKind> Resolved for Bound<K> {
    fn new_state(&self) -> Box<dyn Collected> {
        Box::new(StateOf::<K>(K::init(&self.0)))
    }

    fn feed(&self, state: &mut dyn Collected, batch: &Tensor) -> Result<()> {
        let state = state
            .as_any_mut()
            .downcast_mut::<StateOf<K>>()
            .ok_or_else(mismatch)?;
        K::feed(&mut state.0, &self.0, batch)
    }

    fn qparams(&self, state: &dyn Collected) -> Result<QParams> {
        K::qparams(self.state(state)?, &self.0)
    }

    fn fake_quantize(&self, _state: &dyn Collected, x: &Tensor, q: &QParams) -> Result<Tensor> {
        K::fake_quantize(&self.0, x, q)
    }

    fn granularity(&self) -> Option<Granularity> {
        K::granularity(&self.0)
    }

    fn qdq_kernel(&self, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        K::qdq_kernel(&self.0, shape, q)
    }

    fn slice_count(&self, shape: &[usize]) -> Option<usize> {
        K::slice_count(&self.0, shape)
    }
}

impl<K: ObserverKind> Collected for StateOf<K> {
    fn plot(&self) -> PlotSnapshot {
        K::plot(&self.0)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Resolve `params` as kind `K` (the registry's constructor of `K`).
pub(crate) fn resolve_kind<K: ObserverKind>(
    params: &crate::params::Params,
    unknown: &[String],
) -> Result<Box<dyn Resolved>> {
    let args = K::Args::from_params(params)?;
    let config = K::resolve(&args, unknown)?;
    Ok(Box::new(Bound::<K>(config)))
}

/// Every value of `K`'s parameters, defaults filled in.
pub(crate) fn complete_kind<K: ObserverKind>(
    params: &crate::params::Params,
) -> Result<crate::params::Params> {
    Ok(K::Args::from_params(params)?.to_params())
}

/// A configured observer together with the state it collected: what a framework's observer
/// object is. Used where one observer wraps another.
#[derive(Debug)]
pub struct Instance {
    pub resolved: Box<dyn Resolved>,
    pub state: Box<dyn Collected>,
}

impl Instance {
    /// Observer `spec` configured with `params`, before any data.
    pub fn new(spec: &ObserverSpec, params: &crate::params::Params) -> Result<Self> {
        let resolved = spec.resolve(params)?;
        let state = resolved.new_state();
        Ok(Instance { resolved, state })
    }

    /// Feed one batch.
    pub fn feed(&mut self, batch: &Tensor) -> Result<()> {
        self.resolved.feed(self.state.as_mut(), batch)
    }

    /// The qparams of what was collected.
    pub fn qparams(&self) -> Result<QParams> {
        self.resolved.qparams(self.state.as_ref())
    }

    /// Quantize–dequantize the observer's way.
    pub fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        self.resolved.fake_quantize(self.state.as_ref(), x, q)
    }

    /// A snapshot for plotting.
    pub fn plot(&self) -> PlotSnapshot {
        self.state.plot()
    }
}
