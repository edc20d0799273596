//! The explorer's session: the loaded files, the calibration batches chosen from them, one run
//! per observer, and everything the page, the npm package and exports show about them.
//!
//! It is plain Rust (tested natively); `crate::wasm` exposes it to JavaScript.
//!
//! **Size limits.** A session holds at most [`MAX_ELEMENTS`] values (256 MiB as float32) over all
//! loaded files: quantize–dequantize for the error metrics needs a second buffer of the batch
//! being measured, and a browser tab has a few GiB at most. Files larger than that are refused
//! with a message *before* their data is read (only the header is), so a 1 GiB `.npy` never
//! reaches memory. Files up to the limit load whole when small, or in chunks (see [`stream`])
//! when large, without ever holding the raw bytes and the decoded values of the whole file at
//! once.

mod quantizers;
pub mod stream;
mod vectors;

pub use quantizers::{AdaRoundStart, AdaRoundStatus, FormatsTarget};

use crate::curve::{self, Curve, CurveRequest, MomentHistogram};
use crate::engine::{self, NonFinitePolicy, Report};
use crate::error::{Error, Result};
use crate::observer::{Collected, Grid, ObserverSpec, QParams, Resolved};
use crate::params::Params;
use crate::plot::svg::Comparison;
use crate::plot::{fmt_num, CurveView, Hist, Marker};
use crate::registry;
use crate::shared_stats::StatsLease;
use crate::tensor::{read_tensors, NamedTensor, NonFiniteCounts, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Most values a session holds (over all loaded files): 64 Mi float32 values, 256 MiB.
pub const MAX_ELEMENTS: usize = 1 << 26;

/// Bins of the histogram shown in panels.
pub const DISPLAY_BINS: usize = 2048;

/// Most qparam slices (channels, groups, blocks) a panel shows: 1 Mi. Beyond it (e.g. a
/// per-channel observer on a 1-D tensor, where every value is a channel) the report is refused
/// with the reason; carrying and drawing tens of millions of scales would exhaust the page.
pub const MAX_PANEL_SLICES: usize = 1 << 20;

/// Why qparams `q` of observer `spec` are too many for a panel, if they are: checked after the
/// search and before the metrics, so a refused observer costs no pass over the data.
fn beyond_panel_limits(spec: &ObserverSpec, resolved: &dyn Resolved, q: &QParams) -> Option<Error> {
    too_many_slices(spec, resolved, q.scale.len())
}

/// Why observer `spec` will compute too many scales for a panel on `batches`, when its
/// configuration tells the count before any data is read ([`Resolved::slice_count`], e.g. the
/// blocks of a per-block observer): a refused observer then collects nothing either. Only when
/// every batch gives too many, so that the refusal is the one the search would reach.
fn beyond_panel_limits_before_collecting(
    spec: &ObserverSpec,
    resolved: &dyn Resolved,
    batches: &[&Tensor],
) -> Option<Error> {
    let counts: Option<Vec<usize>> = batches
        .iter()
        .map(|b| resolved.slice_count(&b.shape))
        .collect();
    let fewest = counts?.into_iter().min()?;
    too_many_slices(spec, resolved, fewest)
}

/// The refusal of a panel with `slices` scales, when that is more than it shows.
fn too_many_slices(spec: &ObserverSpec, resolved: &dyn Resolved, slices: usize) -> Option<Error> {
    (slices > MAX_PANEL_SLICES).then(|| {
        Error::input(format!(
            "`{}` computed {slices} scales (one per {}), more than the {MAX_PANEL_SLICES} a panel \
             shows (a per-channel observer on a 1-D tensor may make every value a channel): pick \
             another axis or tensor, or use the CLI",
            spec.id,
            crate::display::slice_unit(resolved.granularity().unwrap_or(spec.granularity)),
        ))
    })
}

/// One tensor of a loaded file, as listed to the user.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct MemberInfo {
    pub name: String,
    pub shape: Vec<usize>,
    pub dtype: &'static str,
    pub elements: usize,
}

/// A loaded file.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct FileInfo {
    pub index: usize,
    pub name: String,
    pub members: Vec<MemberInfo>,
}

struct LoadedFile {
    name: String,
    tensors: Vec<NamedTensor>,
}

/// Which tensors form the calibration batches, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct Selection {
    pub batches: Vec<MemberRef>,
    /// Split the (single) selected tensor into `count` batches along `axis`.
    #[serde(default)]
    pub split: Option<Split>,
}

impl Selection {
    /// The only tensor of file `file` (an unnamed `.npy` member) as the batches, split by
    /// `split`.
    pub fn whole_file(file: usize, split: Option<Split>) -> Selection {
        Selection {
            batches: vec![MemberRef {
                file,
                member: String::new(),
            }],
            split,
        }
    }
}

/// A tensor of a loaded file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct MemberRef {
    pub file: usize,
    pub member: String,
}

/// Splitting one tensor into consecutive batches along an axis (like `torch.chunk`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Split {
    pub axis: usize,
    pub count: usize,
}

/// What the page shows about the current batches.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct TensorSummary {
    /// Human-readable source, e.g. `l0_layer_out.npy` or `model.safetensors: encoder.weight`.
    pub name: String,
    /// Shape of the selected tensor (first batch when several files are batches).
    pub shape: Vec<usize>,
    pub batch_shapes: Vec<Vec<usize>>,
    pub dtype: &'static str,
    pub elements: usize,
    pub batches: usize,
    pub nonfinite: NonFiniteCounts,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    /// The summary in one line: shape, dtype, values, batches, non-finite counts (the
    /// comparison figure's subtitle).
    pub line: String,
    /// The summary as the page and the notebook widget show it, fact by fact, in order.
    pub facts: Vec<Fact>,
}

/// One fact about the selected tensor as it is shown: `shape` → `[560, 384]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Fact {
    pub label: &'static str,
    pub value: String,
    pub kind: FactKind,
}

/// How a fact is shown: a name (file, tensor), a plain value, or a warning (non-finite values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "lowercase")]
pub enum FactKind {
    Name,
    Value,
    Warning,
}

/// One observer's run in the session: its parameters, its configuration, the state it collected
/// and its last report.
struct ObserverRun {
    params: Params,
    /// The configuration of `params` (none when they were refused).
    resolved: Option<Box<dyn Resolved>>,
    /// The last state collected from the current batches, with the data key it was collected
    /// under; kept across refusals and search-only changes.
    collected: Option<CollectedState>,
    report: Report,
}

struct CollectedState {
    data_key: Params,
    state: Box<dyn Collected>,
}

/// An explorer session.
#[derive(Default)]
pub struct Session {
    /// The selection's batches registered for shared statistics (min/max, non-finite counts,
    /// histograms), so that the observers run on them compute each once. Declared first so
    /// that it is dropped before the data it names; replaced whenever the selection or the
    /// files change.
    shared: Option<StatsLease>,
    files: Vec<LoadedFile>,
    selection: Option<Selection>,
    split_parts: Vec<Tensor>,
    /// The selection's moment histogram (mean and std, the display histogram, the error
    /// curve), computed on first need: a selection made to observe never pays for it.
    moments: OnceLock<Option<MomentHistogram>>,
    /// The selection's summary without what the moments give (see [`Session::summary`]), and
    /// the files it names.
    summary: Option<(TensorSummary, Vec<String>)>,
    runs: BTreeMap<String, ObserverRun>,
    stream: Option<stream::Stream>,
    /// Files before this index are about to be replaced and do not count against the budget.
    budget_base: usize,
    /// The AdaRound run in progress, if any (it owns copies of its W and X).
    adaround: Option<crate::quantizers::adaround::AdaRound>,
}

impl Session {
    /// An empty session.
    pub fn new() -> Self {
        Session::default()
    }

    fn loaded_elements(&self) -> usize {
        self.files
            .iter()
            .skip(self.budget_base)
            .flat_map(|f| &f.tensors)
            .map(|t| t.tensor.len())
            .sum()
    }

    /// Check that `extra` more values fit in the session.
    pub fn check_budget(&self, what: &str, extra: usize) -> Result<()> {
        let total = self.loaded_elements().saturating_add(extra);
        if total > MAX_ELEMENTS {
            return Err(Error::load(
                what,
                format!(
                    "{extra} values ({}) exceed what the in-browser explorer holds: {} values \
                     (256 MiB as float32) over all loaded files{}. Use the quantscope CLI for \
                     larger tensors, or save a slice of the tensor.",
                    human_bytes(extra as f64 * 4.0),
                    MAX_ELEMENTS,
                    if total > extra {
                        format!(", {} already loaded", total - extra)
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        Ok(())
    }

    /// Forget every loaded file and result.
    pub fn clear(&mut self) {
        *self = Session::default();
    }

    /// Parse a whole file held in memory and add it. On error the session is unchanged.
    pub fn load_file(&mut self, name: &str, bytes: &[u8]) -> Result<FileInfo> {
        let tensors = if crate::checkpoint::in_memory::is_checkpoint_only(bytes, name) {
            crate::checkpoint::in_memory::read(name, bytes)?
        } else {
            read_tensors(bytes, name)?
        };
        if tensors.is_empty() {
            return Err(Error::load(name, "the file holds no tensors"));
        }
        let count = tensors.iter().map(|t| t.tensor.len()).sum();
        self.check_budget(name, count)?;
        Ok(self.add_file(name, tensors))
    }

    /// Add already-decoded tensors as a file.
    pub fn add_file(&mut self, name: &str, tensors: Vec<NamedTensor>) -> FileInfo {
        self.files.push(LoadedFile {
            name: name.to_string(),
            tensors,
        });
        self.file_info(self.files.len() - 1)
            .expect("the file was just added")
    }

    /// Start loading a set of files that will replace the current ones: until
    /// [`Session::retain_files`], the current files do not count against the size budget.
    pub fn begin_replace(&mut self) {
        self.budget_base = self.files.len();
    }

    /// Drop the files loaded since [`Session::begin_replace`] (a failed or cancelled load),
    /// keeping the current selection and results intact.
    pub fn abandon_replace(&mut self) {
        self.files.truncate(self.budget_base);
        self.budget_base = 0;
        self.stream = None;
    }

    /// Keep only the files with the given indices (in that order); used when a new set of files
    /// replaces the previous one after it loaded successfully.
    pub fn retain_files(&mut self, keep: &[usize]) -> Vec<FileInfo> {
        self.shared = None;
        let mut old: Vec<Option<LoadedFile>> = std::mem::take(&mut self.files)
            .into_iter()
            .map(Some)
            .collect();
        for &i in keep {
            if let Some(f) = old.get_mut(i).and_then(Option::take) {
                self.files.push(f);
            }
        }
        self.budget_base = 0;
        self.stream = None;
        self.selection = None;
        self.split_parts.clear();
        self.moments = OnceLock::new();
        self.summary = None;
        self.runs.clear();
        (0..self.files.len())
            .filter_map(|i| self.file_info(i))
            .collect()
    }

    /// Description of loaded file `index`.
    pub fn file_info(&self, index: usize) -> Option<FileInfo> {
        let f = self.files.get(index)?;
        Some(FileInfo {
            index,
            name: f.name.clone(),
            members: f
                .tensors
                .iter()
                .map(|t| MemberInfo {
                    name: t.name.clone(),
                    shape: t.tensor.shape.clone(),
                    dtype: t.tensor.dtype.name(),
                    elements: t.tensor.len(),
                })
                .collect(),
        })
    }

    /// Number of loaded files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    fn member(&self, r: &MemberRef) -> Result<&Tensor> {
        let file = self
            .files
            .get(r.file)
            .ok_or_else(|| Error::input(format!("no loaded file #{}", r.file)))?;
        file.tensors
            .iter()
            .find(|t| t.name == r.member)
            .map(|t| &t.tensor)
            .ok_or_else(|| Error::Unknown {
                what: "tensor",
                name: r.member.clone(),
                hint: format!(" in {}", file.name),
            })
    }

    /// `file` or `file: member`, as the page names a tensor.
    fn member_name(&self, r: &MemberRef) -> String {
        let file = self.files.get(r.file).map_or("?", |f| f.name.as_str());
        if r.member.is_empty() {
            file.to_string()
        } else {
            format!("{file}: {}", r.member)
        }
    }

    /// The current calibration batches.
    pub fn batches(&self) -> Vec<&Tensor> {
        match &self.selection {
            None => Vec::new(),
            Some(sel) if sel.split.is_some() => self.split_parts.iter().collect(),
            Some(sel) => sel
                .batches
                .iter()
                .filter_map(|r| self.member(r).ok())
                .collect(),
        }
    }

    /// Make `selection` the current one, its summary without what the moments give.
    fn select_with(&mut self, selection: Selection) -> Result<()> {
        if selection.batches.is_empty() {
            return Err(Error::input("select at least one tensor"));
        }
        let mut parts = Vec::new();
        let tensors: Vec<&Tensor> = selection
            .batches
            .iter()
            .map(|r| self.member(r))
            .collect::<Result<_>>()?;
        if let Some(split) = selection.split {
            if tensors.len() != 1 {
                return Err(Error::input(
                    "splitting into batches needs exactly one selected tensor",
                ));
            }
            parts = engine::split_batches(tensors[0], split.axis, Some(split.count))?;
        }
        let names: Vec<String> = selection
            .batches
            .iter()
            .map(|r| self.member_name(r))
            .collect();
        let first = tensors[0];
        let batch_list: Vec<&Tensor> = if selection.split.is_some() {
            parts.iter().collect()
        } else {
            tensors.clone()
        };
        let slices: Vec<&[f32]> = batch_list.iter().map(|t| t.data.as_slice()).collect();
        // Registered first: the non-finite counts and the range below (and the moment
        // histogram's range) then come from one shared scan, which every observer run on this
        // selection reuses. The batches' data stay where they are when `parts` moves into the
        // session, so the lease stays valid.
        let lease = StatsLease::new(&batch_list);
        let nonfinite = slices.iter().fold(NonFiniteCounts::default(), |a, s| {
            a + crate::shared_stats::nonfinite(s)
        });
        let range = slices
            .iter()
            .filter_map(|s| crate::shared_stats::finite_min_max(s))
            .fold(None, |acc: Option<(f32, f32)>, (lo, hi)| match acc {
                None => Some((lo, hi)),
                Some((a, b)) => Some((a.min(lo), b.max(hi))),
            });
        let name = match (names.len(), selection.split) {
            (1, Some(s)) => format!(
                "{} (split into {} batches along axis {})",
                names[0],
                parts.len(),
                s.axis
            ),
            (1, None) => names[0].clone(),
            (n, _) => format!("{} … {} ({n} batches)", names[0], names[n - 1]),
        };
        let mut files: Vec<String> = Vec::new();
        for r in &selection.batches {
            let file = self.files.get(r.file).map_or("?", |f| f.name.as_str());
            if !files.iter().any(|f| f == file) {
                files.push(file.to_string());
            }
        }
        let summary = TensorSummary {
            name,
            shape: first.shape.clone(),
            batch_shapes: batch_list.iter().map(|t| t.shape.clone()).collect(),
            dtype: first.dtype.name(),
            elements: batch_list.iter().map(|t| t.len()).sum(),
            batches: batch_list.len(),
            nonfinite,
            min: range.map(|r| r.0 as f64),
            max: range.map(|r| r.1 as f64),
            mean: None,
            std: None,
            line: String::new(),
            facts: Vec::new(),
        };
        self.shared = None;
        self.split_parts = parts;
        self.selection = Some(selection);
        self.moments = OnceLock::new();
        self.summary = Some((summary, files));
        self.runs.clear();
        self.shared = Some(lease);
        Ok(())
    }

    /// Choose the calibration batches as [`Session::select`] does, without computing their
    /// moment histogram: the summary has no mean or std until [`Session::summary`] is asked
    /// (the npm package's tensors, whose mean, std and histogram are read when used).
    pub fn select_lazily(&mut self, selection: Selection) -> Result<TensorSummary> {
        self.select_with(selection)?;
        self.summary_with(false)
            .ok_or_else(|| Error::input("select at least one tensor"))
    }

    /// Choose the calibration batches; their summary. Results of previous runs are dropped
    /// (observers must see the new data). On error the previous selection stays.
    pub fn select(&mut self, selection: Selection) -> Result<TensorSummary> {
        self.select_with(selection)?;
        self.summary()
            .ok_or_else(|| Error::input("select at least one tensor"))
    }

    /// The current batches' summary, mean and std included (their moment histogram is computed
    /// on first need).
    pub fn summary(&self) -> Option<TensorSummary> {
        self.summary_with(true)
    }

    /// The summary, with the moments' mean and std when `with_moments`.
    fn summary_with(&self, with_moments: bool) -> Option<TensorSummary> {
        let (base, files) = self.summary.as_ref()?;
        let mut summary = base.clone();
        let moments = with_moments.then(|| self.moments()).flatten();
        if let Some(m) = moments.filter(|m| m.total() > 0.0) {
            let (mean, var) = moments_mean_var(m);
            summary.mean = Some(mean);
            summary.std = Some(var.sqrt());
        }
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        summary.line = summary_line(&summary);
        summary.facts = summary_facts(&summary, &files, self.selection.as_ref()?);
        Some(summary)
    }

    /// The moment histogram of the current batches, computed on first need.
    fn moments(&self) -> Option<&MomentHistogram> {
        self.moments
            .get_or_init(|| {
                let batches = self.batches();
                let slices: Vec<&[f32]> = batches.iter().map(|t| t.data.as_slice()).collect();
                curve::histogram_of(&slices, curve::DEFAULT_BINS).ok()
            })
            .as_ref()
    }

    /// The histogram panels draw: [`DISPLAY_BINS`] bins over the data's finite range.
    pub fn display_histogram(&self) -> Option<Hist> {
        let m = self.moments()?;
        let (lo, hi) = m.range();
        let full = Hist {
            lo,
            hi,
            counts: m.counts().to_vec(),
        };
        Some(full.coarsen(DISPLAY_BINS))
    }

    /// Run observer `id` with `params` over the current batches from scratch.
    pub fn observe(&mut self, id: &str, params: Params) -> Result<Report> {
        let spec = registry::find(id)?;
        self.runs.remove(spec.id);
        Ok(self.run_spec(spec, params, true))
    }

    /// Change the parameters of observer `id`. The configuration is rebuilt from all of
    /// `params` (defaults filled in by the declaration); when the parameters that decide what
    /// is collected are unchanged, the search runs on the state already collected, without a
    /// pass over the data. The report always equals a fresh run with `params`.
    pub fn update(&mut self, id: &str, params: Params) -> Result<Report> {
        let spec = registry::find(id)?;
        Ok(self.run_spec(spec, params, true))
    }

    /// Like [`Session::update`], but when the state is reused the report comes back at once
    /// without its error metrics (`metrics_pending`), so a slider can redraw the clipping range
    /// within a frame; [`Session::complete`] then computes them.
    pub fn update_deferred(&mut self, id: &str, params: Params) -> Result<Report> {
        let spec = registry::find(id)?;
        Ok(self.run_spec(spec, params, false))
    }

    /// Run observer `spec` with `params`, reusing its collected state when the data key
    /// matches; metrics of a reused state are deferred unless `with_metrics`.
    pub fn run_spec(&mut self, spec: &ObserverSpec, params: Params, with_metrics: bool) -> Report {
        let previous = self.runs.remove(spec.id);
        let batches = self.batches();
        let mut collected = previous.and_then(|run| run.collected);
        let (resolved, report) = if batches.is_empty() {
            let e = Error::input("no tensor loaded");
            (None, Report::failed(spec, &params, &batches, &e))
        } else {
            let values = self.materialize(spec, &params);
            match values.and_then(|v| Ok((spec.data_key(&v)?, spec.resolve(&v)?))) {
                Err(e) => (None, Report::failed(spec, &params, &batches, &e)),
                Ok((data_key, resolved)) => {
                    let reusable = collected.as_ref().is_some_and(|c| c.data_key == data_key);
                    let refused =
                        beyond_panel_limits_before_collecting(spec, resolved.as_ref(), &batches);
                    let collecting = match refused {
                        Some(e) => Err(e),
                        None if reusable => Ok(()),
                        None => engine::collect(
                            spec,
                            resolved.as_ref(),
                            &batches,
                            NonFinitePolicy::Exclude,
                        )
                        .map(|state| collected = Some(CollectedState { data_key, state })),
                    };
                    if let Err(e) = collecting {
                        let report = Report::failed(spec, &params, &batches, &e);
                        self.runs.insert(
                            spec.id.to_string(),
                            ObserverRun {
                                params,
                                resolved: Some(resolved),
                                collected: None,
                                report: report.clone(),
                            },
                        );
                        return report;
                    }
                    let state = collected.as_ref().map(|c| c.state.as_ref());
                    let report = match state {
                        Some(state) => {
                            let resolved = resolved.as_ref();
                            match engine::search(spec, &params, resolved, state, &batches, false) {
                                Err(failed) => *failed,
                                Ok(searched) => {
                                    match beyond_panel_limits(spec, resolved, &searched.qparams) {
                                        Some(e) => Report::failed(spec, &params, &batches, &e),
                                        None => {
                                            let mut r = engine::report_with(
                                                spec,
                                                &params,
                                                resolved,
                                                state,
                                                &batches,
                                                searched,
                                                with_metrics || !reusable,
                                            );
                                            r.state_reused = reusable;
                                            r
                                        }
                                    }
                                }
                            }
                        }
                        None => Report::failed(
                            spec,
                            &params,
                            &batches,
                            &Error::input("no state collected"),
                        ),
                    };
                    (Some(resolved), report)
                }
            }
        };
        self.runs.insert(
            spec.id.to_string(),
            ObserverRun {
                params,
                resolved,
                collected,
                report: report.clone(),
            },
        );
        report
    }

    /// `params` with every vector parameter given as a loaded tensor replaced by its values
    /// (see [`vectors`]).
    fn materialize(&self, spec: &ObserverSpec, params: &Params) -> Result<Params> {
        self.resolve_vectors(&spec.params, params)
    }

    /// Observer `id` with `params` over the current batches with every row rotated along its
    /// last axis by the randomized Hadamard rotation `rotate` (`hadamard[:SEED]`, as the CLI's
    /// `--rotate`, [`crate::rotation`]), measured against the rotated values: the outcome after
    /// rotation, for the panel's before/after. The panel's own run is left as it is.
    pub fn observe_rotated(&self, id: &str, params: &Params, rotate: &str) -> Result<Rotated> {
        let spec = registry::find(id)?;
        let batches: Vec<Tensor> = self.batches().into_iter().cloned().collect();
        if batches.is_empty() {
            return Err(Error::input("no tensor loaded"));
        }
        let params = self.materialize(spec, params)?;
        let (rotated, rotation) = crate::rotation::rotate_batches(&batches, rotate)?;
        let report = engine::Run::new(spec.id, params, &rotated)?.report();
        Ok(Rotated {
            rotation,
            metrics: report.metrics,
            error: report.error,
        })
    }

    /// Compute the metrics a deferred update left pending; `None` if nothing is pending.
    pub fn complete(&mut self, id: &str) -> Option<Report> {
        let spec = registry::find(id).ok()?;
        let batches = self.batches();
        let run = self.runs.get(spec.id)?;
        if !run.report.metrics_pending {
            return None;
        }
        let (resolved, collected) = (run.resolved.as_ref()?, run.collected.as_ref()?);
        let mut report = engine::conclude(
            spec,
            &run.params,
            resolved.as_ref(),
            collected.state.as_ref(),
            &batches,
            engine::Conclusion {
                with_metrics: true,
                explain: false,
            },
        );
        report.state_reused = run.report.state_reused;
        if let Some(run) = self.runs.get_mut(spec.id) {
            run.report = report.clone();
        }
        Some(report)
    }

    /// The derivation of observer `id`'s last report (see [`crate::derivation`]): its search run
    /// again on the state it collected, recording its steps; no pass over the data. `None`
    /// before it ran or when its run failed before collecting anything.
    pub fn explain(&self, id: &str) -> Option<Vec<crate::derivation::Step>> {
        let spec = registry::find(id).ok()?;
        let run = self.runs.get(spec.id)?;
        let (resolved, collected) = (run.resolved.as_ref()?, run.collected.as_ref()?);
        let batches = self.batches();
        let mut derivation = match engine::search(
            spec,
            &run.params,
            resolved.as_ref(),
            collected.state.as_ref(),
            &batches,
            true,
        ) {
            Ok(searched) => searched.derivation,
            Err(failed) => failed.derivation,
        };
        engine::explain_against_the_best(&mut derivation, &run.report, &batches);
        Some(derivation)
    }

    /// The diagnosis of the selected batches (one tensor, or every batch as one vector) given
    /// the `outcomes` of the methods that ran on them (see [`crate::diagnosis`]); `None` before
    /// a selection.
    pub fn diagnose(
        &self,
        outcomes: &[crate::diagnosis::Outcome],
    ) -> Option<crate::diagnosis::Diagnosis> {
        crate::diagnosis::diagnose_batches(&self.batches(), outcomes)
    }

    /// Forget the run of observer `id`.
    pub fn remove(&mut self, id: &str) {
        self.runs.remove(id);
    }

    /// The report of observer `id`, if it ran.
    pub fn result(&self, id: &str) -> Option<&Report> {
        self.runs.get(id).map(|r| &r.report)
    }

    /// Every report, by observer id.
    pub fn results(&self) -> impl Iterator<Item = &Report> {
        self.runs.values().map(|r| &r.report)
    }

    /// The error-versus-clipping curve of the current batches.
    pub fn curve(&self, spec: CurveRequest) -> Option<Curve> {
        self.moments().map(|m| m.curve(spec))
    }

    /// The curve with the markers of the given observers (colour = position in `ids` unless
    /// `colors` says otherwise).
    pub fn curve_view(
        &self,
        spec: CurveRequest,
        ids: &[String],
        colors: &[usize],
    ) -> Option<CurveView> {
        let curve = self.curve(spec)?;
        let markers = ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let r = self.result(id)?;
                marker(r, colors.get(i).copied().unwrap_or(i))
            })
            .collect();
        Some(CurveView::new(&curve, markers))
    }

    /// Everything the comparison figure shows, for the given observers in order.
    pub fn comparison(
        &self,
        ids: &[String],
        colors: &[usize],
        curve: Option<CurveRequest>,
    ) -> Option<Comparison> {
        let summary = self.summary()?;
        let hist = self.display_histogram()?;
        let panels = ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let mut view = crate::display::panel_view(self.result(id)?);
                view.color = colors.get(i).copied().unwrap_or(i);
                Some(view)
            })
            .collect();
        Some(Comparison {
            title: summary.name.clone(),
            subtitle: summary.line.clone(),
            hist,
            panels,
            curve: curve.and_then(|c| self.curve_view(c, ids, colors)),
        })
    }

    /// Start a chunked load (see [`stream`]).
    pub fn begin_stream(
        &mut self,
        name: &str,
        head: &[u8],
        file_size: u64,
        member: Option<&str>,
    ) -> Result<stream::Plan> {
        let (s, plan) = stream::Stream::begin(name, head, file_size, member)?;
        self.check_budget(name, plan.elements)?;
        let mut s = s;
        s.allocate()?;
        self.stream = Some(s);
        Ok(plan)
    }

    /// Feed the next chunk of the planned byte range; returns the fraction done.
    pub fn push_chunk(&mut self, bytes: &[u8]) -> Result<f64> {
        let s = self
            .stream
            .as_mut()
            .ok_or_else(|| Error::input("no chunked load in progress"))?;
        match s.push(bytes) {
            Ok(f) => Ok(f),
            Err(e) => {
                self.stream = None;
                Err(e)
            }
        }
    }

    /// Finish the chunked load and add its tensor as a file.
    pub fn finish_stream(&mut self) -> Result<FileInfo> {
        let s = self
            .stream
            .take()
            .ok_or_else(|| Error::input("no chunked load in progress"))?;
        let (name, tensor) = s.finish()?;
        Ok(self.add_file(
            &name.0,
            vec![NamedTensor {
                name: name.1,
                tensor,
            }],
        ))
    }

    /// Abandon a chunked load.
    pub fn abort_stream(&mut self) {
        self.stream = None;
    }
}

/// The explorer's comparison figure as SVG — one panel per `(observer id, params)` of `runs` over
/// `batches` (in order), plus the error-versus-clipping curve when `curve` is given. This is what
/// the page exports; the CLI's `quantscope plot` can call it directly.
pub fn comparison_svg_of(
    title: &str,
    batches: Vec<Tensor>,
    runs: &[(String, Params)],
    curve: Option<CurveRequest>,
    style: &crate::plot::Style,
    width: u32,
) -> Result<String> {
    let mut session = Session::new();
    let refs: Vec<MemberRef> = batches
        .into_iter()
        .enumerate()
        .map(|(i, tensor)| {
            let info = session.add_file(
                &format!("{title}[{i}]"),
                vec![NamedTensor {
                    name: String::new(),
                    tensor,
                }],
            );
            MemberRef {
                file: info.index,
                member: String::new(),
            }
        })
        .collect();
    session.select(Selection {
        batches: refs,
        split: None,
    })?;
    let mut ids = Vec::with_capacity(runs.len());
    for (id, params) in runs {
        session.observe(id, params.clone())?;
        ids.push(id.clone());
    }
    let colors: Vec<usize> = (0..ids.len()).collect();
    let mut c = session
        .comparison(&ids, &colors, curve)
        .ok_or_else(|| Error::input("nothing to plot"))?;
    c.title = title.to_string();
    crate::plot::svg::comparison_svg(&c, style, width).map_err(Error::input)
}

/// The curve marker of a report.
fn marker(r: &Report, color: usize) -> Option<Marker> {
    let m = r.metrics.as_ref()?;
    let slices = crate::display::slice_numbers(r.qparams.as_ref()?);
    let per_tensor = slices.clip_min.len() == 1;
    let threshold = per_tensor.then(|| slices.clip_min[0].abs().max(slices.clip_max[0].abs()));
    Some(Marker {
        observer: r.observer.clone(),
        color,
        threshold,
        slice: crate::display::slice_unit(r.granularity).into(),
        mse: m.mse,
        sqnr_db: m.sqnr_db,
    })
}

/// Mean and variance from the moment histogram.
fn moments_mean_var(m: &MomentHistogram) -> (f64, f64) {
    let n = m.total();
    let (s1, s2) = m.raw_sums();
    let mean = s1 / n;
    (mean, (s2 / n - mean * mean).max(0.0))
}

/// One line describing a summary: shape, dtype, elements, batches, non-finite counts.
fn summary_line(s: &TensorSummary) -> String {
    let mut line = format!(
        "shape {} · {} · {} values",
        fmt_shape(&s.shape),
        s.dtype,
        group_digits(s.elements)
    );
    if s.batches > 1 {
        line.push_str(&format!(" · {} batches", s.batches));
    }
    let nf = s.nonfinite;
    if nf.total() > 0 {
        line.push_str(&format!(
            " · {} NaN, {} +Inf, {} −Inf (excluded)",
            nf.nan, nf.pos_inf, nf.neg_inf
        ));
    }
    line
}

/// The facts the page and the notebook widget show about a selection of `files` (names, in
/// order): the file(s), the tensor taken from them, shape (each batch's when several files are
/// batches), dtype, values, batches, non-finite counts, range, mean ± std.
fn summary_facts(s: &TensorSummary, files: &[&str], selection: &Selection) -> Vec<Fact> {
    let fact = |label, value: String, kind| Fact { label, value, kind };
    let mut facts = Vec::new();
    match files {
        [one] => facts.push(fact("file", one.to_string(), FactKind::Name)),
        [first, .., last] => facts.push(fact("files", format!("{first} … {last}"), FactKind::Name)),
        [] => {}
    }
    let member = &selection.batches[0].member;
    if !member.is_empty() {
        facts.push(fact("tensor", member.clone(), FactKind::Name));
    }
    let shape = if selection.batches.len() > 1 {
        s.batch_shapes
            .iter()
            .map(|b| fmt_shape(b))
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        fmt_shape(&s.shape)
    };
    facts.push(fact("shape", shape, FactKind::Value));
    facts.push(fact("dtype", s.dtype.to_string(), FactKind::Value));
    facts.push(fact("elements", group_digits(s.elements), FactKind::Value));
    if s.batches > 1 {
        facts.push(fact("batches", s.batches.to_string(), FactKind::Value));
    }
    let nf = s.nonfinite;
    facts.push(if nf.total() > 0 {
        fact(
            "NaN / ±Inf",
            format!(
                "{} / {} / {} (excluded)",
                group_digits(nf.nan),
                group_digits(nf.pos_inf),
                group_digits(nf.neg_inf)
            ),
            FactKind::Warning,
        )
    } else {
        fact("NaN / ±Inf", "0".into(), FactKind::Value)
    });
    if let (Some(min), Some(max)) = (s.min, s.max) {
        facts.push(fact(
            "range",
            format!("{} … {}", fmt_num(min), fmt_num(max)),
            FactKind::Value,
        ));
    }
    if let (Some(mean), Some(std)) = (s.mean, s.std) {
        facts.push(fact(
            "mean ± std",
            format!("{} ± {}", fmt_num(mean), fmt_num(std)),
            FactKind::Value,
        ));
    }
    facts
}

/// `[560, 384]`.
fn fmt_shape(shape: &[usize]) -> String {
    format!("{shape:?}")
}

/// `1234567` → `1,234,567`.
/// An observer's outcome on the rotated batches ([`Session::observe_rotated`]).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Rotated {
    /// What rotation was applied.
    pub rotation: String,
    /// The error against the rotated values (none when the run failed).
    pub metrics: Option<crate::quant::QdqMetrics>,
    /// Why the run failed.
    pub error: Option<crate::engine::ErrorInfo>,
}

pub fn group_digits(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1073741824` → `1.0 GiB`.
pub fn human_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", units[u])
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// Whether a result's grid is a real quantization grid.
pub fn has_grid(g: &Grid) -> bool {
    !matches!(g, Grid::None)
}

#[cfg(test)]
mod tests;
