//! What the registry records about an observer: its family, granularity, declared parameters,
//! quirks, and how to resolve it.

use super::{ObserverKind, Resolved};
use crate::error::{Error, Result};
use crate::params::{ParamSet, ParamSpec, Params};
use serde::{Deserialize, Serialize};

/// The framework an observer reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Torch,
    Quark,
    Horizon,
    Ort,
    Modelopt,
    Llmcompressor,
    Torchao,
}

impl Family {
    /// Display name of the framework.
    pub fn framework(self) -> &'static str {
        match self {
            Family::Torch => "PyTorch torch.ao.quantization",
            Family::Quark => "AMD Quark",
            Family::Horizon => "Horizon observer_v2",
            Family::Ort => "ONNX Runtime",
            Family::Modelopt => "NVIDIA Model Optimizer",
            Family::Llmcompressor => "llm-compressor",
            Family::Torchao => "torchao",
        }
    }

    /// Id prefix (`torch`, `quark`, …).
    pub fn prefix(self) -> &'static str {
        match self {
            Family::Torch => "torch",
            Family::Quark => "quark",
            Family::Horizon => "horizon",
            Family::Ort => "ort",
            Family::Modelopt => "modelopt",
            Family::Llmcompressor => "llmcompressor",
            Family::Torchao => "torchao",
        }
    }
}

/// How an observer's parameters are shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// One scale for the whole tensor.
    PerTensor,
    /// One scale per channel along an axis.
    PerChannel,
    /// One scale per group of consecutive elements along an axis.
    PerGroup,
    /// One shared scale per block (MX, BFP).
    PerBlock,
    /// No qparams (pass-through observers).
    PassThrough,
}

impl Granularity {
    /// How the page and the CLI write it: `per tensor`, `per channel`, `per group`, `per block`,
    /// `pass-through`.
    pub fn label(self) -> &'static str {
        match self {
            Granularity::PerTensor => "per tensor",
            Granularity::PerChannel => "per channel",
            Granularity::PerGroup => "per group",
            Granularity::PerBlock => "per block",
            Granularity::PassThrough => "pass-through",
        }
    }
}

/// Resolves parameters into a configured observer (see [`super::resolve_kind`]).
pub type ResolveFn = fn(&Params, &[String]) -> Result<Box<dyn Resolved>>;

/// Fills in every default (see [`super::complete_kind`]).
pub type CompleteFn = fn(&Params) -> Result<Params>;

/// Everything the registry knows about one observer. Serialised as an [`ObserverEntry`] (the
/// CLI's `list --json`, the page's and the npm package's registry).
#[derive(Clone, Serialize)]
#[serde(into = "ObserverEntry")]
pub struct ObserverSpec {
    /// Unique id, `library.ClassName` (e.g. `torch.HistogramObserver`); corrected variants of
    /// buggy framework behaviour end in `.fixed`.
    pub id: &'static str,
    /// The display name: the id without its library prefix (`HistogramObserver`).
    pub name: &'static str,
    pub family: Family,
    /// The library reproduced, as ids name it (`torch`, `quark`, …).
    pub library: &'static str,
    /// The version of the library whose behaviour is reproduced.
    pub version: &'static str,
    pub granularity: Granularity,
    /// One-line summary of the maths.
    pub summary: &'static str,
    /// The declared parameters, in order.
    pub params: Vec<ParamSpec>,
    /// Framework bugs or surprises this observer reproduces on purpose, shown to users.
    pub quirks: Vec<&'static str>,
    /// For a `.fixed` variant: the faithful observer it corrects.
    pub corrects: Option<&'static str>,
    /// For an alias its library keeps (llm-compressor's `fouroversix`): the observer it runs.
    pub alias_of: Option<&'static str>,
    /// Its search scores many candidates over every element: seconds on a tensor of millions.
    pub heavy: bool,
    resolve: ResolveFn,
    complete: CompleteFn,
}

/// One observer as the registry lists it (every field a fact the engine states, so that no
/// caller derives one from another: the page reads `corrects`, `name` and `granularity_label`
/// rather than parsing ids).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct ObserverEntry {
    pub id: &'static str,
    /// The id without its library prefix (`HistogramObserver`, `MSEObserver.fixed`).
    pub name: &'static str,
    pub family: Family,
    /// The library reproduced, as ids name it (`torch`, `quark`, …).
    pub library: &'static str,
    /// The library's display name (`PyTorch torch.ao.quantization`, `AMD Quark`, …).
    pub framework: &'static str,
    /// The version of the library reproduced.
    pub version: &'static str,
    /// The same as `version` (its former name, kept for existing callers).
    pub framework_version: &'static str,
    pub granularity: Granularity,
    /// `granularity` as the page writes it (`per tensor`, …).
    pub granularity_label: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamSpec>,
    pub quirks: Vec<&'static str>,
    /// For a `.fixed` variant: the id of the observer it corrects (`null` otherwise).
    pub corrects: Option<&'static str>,
    /// For an alias its library keeps: the id of the observer it runs, whose search the engine
    /// then shares with it (`null` otherwise).
    pub alias_of: Option<&'static str>,
    /// Its search scores many candidates over every element (seconds on a tensor of millions):
    /// a pool of engines runs such observers beside the others rather than after them.
    pub heavy: bool,
}

impl From<ObserverSpec> for ObserverEntry {
    fn from(s: ObserverSpec) -> Self {
        ObserverEntry {
            id: s.id,
            name: s.name,
            family: s.family,
            library: s.library,
            framework: s.family.framework(),
            version: s.version,
            framework_version: s.version,
            granularity: s.granularity,
            granularity_label: s.granularity.label(),
            summary: s.summary,
            params: s.params,
            quirks: s.quirks,
            corrects: s.corrects,
            alias_of: s.alias_of,
            heavy: s.heavy,
        }
    }
}

impl std::fmt::Debug for ObserverSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObserverSpec")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ObserverSpec {
    /// The registry entry of observer kind `K`, its parameters taken from `K::Args`.
    pub fn of<K: ObserverKind>(
        id: &'static str,
        family: Family,
        version: &'static str,
        granularity: Granularity,
        summary: &'static str,
    ) -> Self {
        Self::from_parts(
            id,
            family,
            version,
            granularity,
            summary,
            <K::Args as ParamSet>::specs(),
            super::resolve_kind::<K>,
            super::complete_kind::<K>,
        )
    }

    /// An entry from its parts.
    #[allow(clippy::too_many_arguments)]
    fn from_parts(
        id: &'static str,
        family: Family,
        version: &'static str,
        granularity: Granularity,
        summary: &'static str,
        params: Vec<ParamSpec>,
        resolve: ResolveFn,
        complete: CompleteFn,
    ) -> Self {
        let library = family.prefix();
        let name = id
            .strip_prefix(library)
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(id);
        ObserverSpec {
            id,
            name,
            family,
            library,
            version,
            granularity,
            summary,
            params,
            quirks: Vec::new(),
            corrects: None,
            alias_of: None,
            heavy: false,
            resolve,
            complete,
        }
    }

    /// Record a reproduced framework quirk.
    pub fn quirk(mut self, text: &'static str) -> Self {
        self.quirks.push(text);
        self
    }

    /// Mark this entry as the corrected variant of `faithful_id`.
    pub fn corrects(mut self, faithful_id: &'static str) -> Self {
        self.corrects = Some(faithful_id);
        self
    }

    /// Mark this entry as an alias of `observer_id` (same parameters, same computation).
    pub fn alias_of(mut self, observer_id: &'static str) -> Self {
        self.alias_of = Some(observer_id);
        self
    }

    /// Mark this entry's search as heavy (see [`ObserverSpec::heavy`]).
    pub fn heavy(mut self) -> Self {
        self.heavy = true;
        self
    }

    /// The declared parameter `name`.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Resolve `params` (one map: constructor keywords and attributes alike, as the page and
    /// the npm package pass them, flat or in the framework's nested forms: see [`Self::flat`])
    /// into a configured observer. Keys that are not declared are refused.
    pub fn resolve(&self, params: &Params) -> Result<Box<dyn Resolved>> {
        let params = &*self.flat(params)?;
        let unknown: Vec<String> = given_keys(params)
            .filter(|k| self.param(k).is_none())
            .map(str::to_string)
            .collect();
        self.resolve_with(params, &unknown)
    }

    /// Resolve a framework call: constructor keywords `kwargs`, then `attributes` assigned
    /// after construction (`obs.upsample_rate = 128`). An attribute passed as a keyword is an
    /// unknown keyword, as it is to the framework.
    pub fn resolve_call(&self, kwargs: &Params, attributes: &Params) -> Result<Box<dyn Resolved>> {
        let (kwargs, attributes) = (&*self.flat(kwargs)?, &*self.flat(attributes)?);
        let unknown: Vec<String> = given_keys(kwargs)
            .filter(|k| self.param(k).is_none_or(|p| p.attribute))
            .map(str::to_string)
            .collect();
        for name in given_keys(attributes) {
            if !self.param(name).is_some_and(|p| p.attribute) {
                return Err(Error::param(
                    name,
                    format!(
                        "`{}` has no attribute `{name}` that can be set after construction",
                        self.id
                    ),
                ));
            }
        }
        self.resolve_with(&kwargs.merged(attributes), &unknown)
    }

    fn resolve_with(&self, params: &Params, unknown: &[String]) -> Result<Box<dyn Resolved>> {
        let resolved = (self.resolve)(params, unknown)?;
        match unknown.first() {
            Some(key) => Err(Error::param(
                key,
                format!("`{}` has no parameter `{key}`", self.id),
            )),
            None => Ok(resolved),
        }
    }

    /// Every parameter's value, defaults filled in (each validated).
    pub fn complete(&self, params: &Params) -> Result<Params> {
        (self.complete)(&*self.flat(params)?)
    }

    /// `params` with the framework's nested forms (ONNX Runtime's `extra_options`, torchao's
    /// granularity objects, …) made flat: see [`crate::params::library`].
    pub fn flat<'a>(&self, params: &'a Params) -> Result<std::borrow::Cow<'a, Params>> {
        crate::params::library::flatten(self.id, params)
    }

    /// The values of the parameters that decide what is collected from the data: two parameter
    /// sets with equal keys collect equal states.
    pub fn data_key(&self, params: &Params) -> Result<Params> {
        let mut all = self.complete(params)?;
        all.0.retain(|k, _| {
            self.param(k)
                .is_some_and(|p| p.affects == crate::params::Affects::Data)
        });
        Ok(all)
    }
}

/// The keys of `params` that carry a value: `null` means "not given" (a framework keyword left
/// at its default, e.g. `factory_kwargs=None`), for undeclared keys too.
fn given_keys(params: &Params) -> impl Iterator<Item = &str> {
    params.keys().filter(|k| params.has(k))
}

/// A named configuration of an observer (e.g. PyTorch's `default_weight_observer`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Preset {
    pub name: &'static str,
    pub observer: &'static str,
    pub params: Params,
    pub doc: &'static str,
}
