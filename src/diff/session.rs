//! A diff driven by its host, what the page's compare view runs in a Web Worker (JS
//! `DiffSession`): list both checkpoints from the byte ranges the page supplies (`File.slice`),
//! then compare one pair at a time from the bytes of its entries. No I/O and no threads of its
//! own, so the same code runs in wasm32 and natively (where [`super::native`] maps files
//! instead).
//!
//! ```text
//! let mut s = DiffSession::new(original_files, quantized_files);   // (name, size) per side
//! while let requests = s.listing_requests() && !requests.is_empty() {
//!     for r in requests { s.supply(r.side, r.file, r.start, bytes of File.slice(r.start, r.end)) }
//! }
//! for k in 0..s.pair_count() {
//!     let bytes: Vec<_> = s.needs(k).iter().map(|n| File.slice(n.start, n.end)).collect();
//!     s.compare(k, &bytes);
//! }
//! let report = s.report();                                        // worst first
//! ```
//!
//! A side's configuration files (`config.json`, `hf_quant_config.json`,
//! `quantize_config.json`) are requested whole and say its layout, as on disk.

use super::{DiffPlan, DiffReport, Need, PairOutcome, Side};
use crate::checkpoint::imatrix::{self, Importance};
use crate::checkpoint::layouts::Configs;
use crate::checkpoint::{ByteRequest, Catalog, CatalogBuilder, CheckpointKind, EntryBytes, Step};
use crate::error::{Error, Result};
use crate::portion::Portion;
use serde::Serialize;

/// The largest configuration file the page reads.
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// A byte range of one side's file (its index among the files given for that side).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct SideRequest {
    pub side: usize,
    pub file: usize,
    pub start: u64,
    pub end: u64,
}

/// One side while it is listed.
#[derive(Debug, Clone)]
struct Listing {
    /// Every file given, `(name, size)`.
    files: Vec<(String, u64)>,
    /// Given index of each tensor file (the builder's files).
    tensor_files: Vec<usize>,
    builder: CatalogBuilder,
    /// Given index and name of each configuration file, with its content once supplied.
    configs: Vec<(usize, String, Option<Vec<u8>>)>,
    catalog: Option<Catalog>,
    /// Entries holding configuration as JSON (bitsandbytes' `QuantState`), with their bytes
    /// once supplied; known once the catalogue is.
    json: Option<Vec<(usize, Option<Vec<u8>>)>>,
}

/// Whether `name` looks like an ONNX model's external data file (`model.onnx.data`,
/// `model.onnx_data`), which the model's listing asks for by name.
fn is_external_data(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".onnx.data") || lower.ends_with(".onnx_data")
}

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

impl Listing {
    fn new(files: Vec<(String, u64)>) -> Listing {
        let mut tensor_files = Vec::new();
        let mut configs = Vec::new();
        // As a folder on disk is walked: when the folder holds a model, `.npy`/`.npz` arrays in
        // its subfolders (reference outputs, dumps) are not tensors of that model.
        let depth = |name: &str| name.matches(['/', '\\']).count();
        let is_array = |name: &str| {
            let lower = name.to_ascii_lowercase();
            lower.ends_with(".npy") || lower.ends_with(".npz")
        };
        let model_depth = files
            .iter()
            .filter(|(n, _)| CheckpointKind::wanted_in_directory(n) && !is_array(n))
            .map(|(n, _)| depth(n))
            .min();
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        let shadowed = crate::checkpoint::shadowed_torch_files(&names);
        for (i, (name, _)) in files.iter().enumerate() {
            if model_depth.is_some_and(|d| is_array(name) && depth(name) > d) {
                continue;
            }
            // A dropped folder's PyTorch weights beside the same weights as `.safetensors`.
            if shadowed[i] && name.contains(['/', '\\']) {
                continue;
            }
            let base = base_name(name);
            if Configs::FILES.contains(&base) {
                configs.push((i, base.to_string(), None));
            } else if !name.contains(['/', '\\'])
                || CheckpointKind::wanted_in_directory(name)
                || is_external_data(name)
            {
                // A file of a dropped folder that no reader takes (a README, a recipe) is
                // left out, as a folder on disk is walked; a file given on its own is listed.
                tensor_files.push(i);
            }
        }
        let builder = CatalogBuilder::new(tensor_files.iter().map(|&i| files[i].clone()));
        Listing {
            files,
            tensor_files,
            builder,
            configs,
            catalog: None,
            json: None,
        }
    }

    fn requests(&mut self, side: usize) -> Vec<SideRequest> {
        let mut out: Vec<SideRequest> = self
            .configs
            .iter()
            .filter(|(_, _, content)| content.is_none())
            .map(|&(i, _, _)| SideRequest {
                side,
                file: i,
                start: 0,
                end: self.files[i].1.min(MAX_CONFIG_BYTES),
            })
            .collect();
        if self.catalog.is_none() {
            match self.builder.step() {
                Step::Need(requests) => {
                    out.extend(requests.into_iter().map(|r: ByteRequest| SideRequest {
                        side,
                        file: self.tensor_files[r.file],
                        start: r.start,
                        end: r.end,
                    }))
                }
                // Its entries' `file` indices are the builder's (tensor files only).
                Step::Ready(catalog) => self.catalog = Some(catalog),
            }
        }
        if let Some(catalog) = &self.catalog {
            let json = self.json.get_or_insert_with(|| {
                crate::checkpoint::layouts::json_entries(catalog)
                    .into_iter()
                    .map(|i| (i, None))
                    .collect()
            });
            for (i, content) in json.iter() {
                if let (None, Some(e)) = (content, catalog.entries.get(*i)) {
                    out.push(SideRequest {
                        side,
                        file: self.tensor_files[e.file],
                        start: e.range.start,
                        end: e.range.end,
                    });
                }
            }
        }
        out
    }

    fn supply(&mut self, file: usize, offset: u64, bytes: &[u8]) {
        if let Some(c) = self.configs.iter_mut().find(|(i, _, _)| *i == file) {
            if offset == 0 {
                c.2 = Some(bytes.to_vec());
            }
            return;
        }
        let Some(b) = self.tensor_files.iter().position(|&i| i == file) else {
            return;
        };
        if let (Some(catalog), Some(json)) = (&self.catalog, &mut self.json) {
            for (i, content) in json.iter_mut() {
                let Some(e) = catalog.entries.get(*i) else {
                    continue;
                };
                if content.is_none() && e.file == b && e.range.start == offset {
                    *content = Some(bytes.to_vec());
                }
            }
            return;
        }
        self.builder.supply(b, offset, bytes);
    }

    /// The side, once listed, and the problems of its configuration files.
    fn side(&self) -> Option<Side> {
        let mut catalog = self.catalog.clone()?;
        let mut configs = Configs::default();
        for (i, name, content) in &self.configs {
            let text = content.as_deref().unwrap_or_default();
            let problem = if self.files[*i].1 > MAX_CONFIG_BYTES {
                Some(format!(
                    "{name} has {} bytes, more than a configuration file can ({MAX_CONFIG_BYTES})",
                    self.files[*i].1
                ))
            } else {
                configs.take(name, text).err()
            };
            if let Some(error) = problem {
                catalog.load_errors.push(crate::checkpoint::LoadError {
                    file: self.files[*i].0.clone(),
                    error,
                });
            }
        }
        for (i, content) in self.json.iter().flatten() {
            if let Some(e) = catalog.entries.get(*i) {
                let expected = e.range.end.saturating_sub(e.range.start) as usize;
                let bytes = match content {
                    Some(b) if b.len() == expected => Ok(b.clone()),
                    _ => Err(format!("the bytes of `{}` were not supplied", e.name)),
                };
                configs.take_entry(&e.name.clone(), bytes);
            }
        }
        let header = catalog
            .files
            .iter()
            .position(|f| f.kind == Some(CheckpointKind::Gguf))
            .and_then(|b| {
                let data_start = catalog
                    .entries
                    .iter()
                    .filter(|e| e.file == b)
                    .map(|e| e.range.start)
                    .min()?;
                self.builder.held(b, 0..data_start)
            });
        Some(Side::new(catalog, &configs, header))
    }
}

/// A diff being listed and run by its host.
#[derive(Debug, Clone)]
pub struct DiffSession {
    sides: [Listing; 2],
    importance: Option<Importance>,
    /// The importance matrix file's name, once given.
    imatrix_name: Option<String>,
    plan: Option<DiffPlan>,
    outcomes: Vec<Option<PairOutcome>>,
}

impl DiffSession {
    /// A diff of the original's files against the quantized checkpoint's, each `(name, size)`
    /// (names may carry a folder path).
    pub fn new(original: Vec<(String, u64)>, quantized: Vec<(String, u64)>) -> Self {
        DiffSession {
            sides: [Listing::new(original), Listing::new(quantized)],
            importance: None,
            imatrix_name: None,
            plan: None,
            outcomes: Vec::new(),
        }
    }

    /// Weight the error by the importance matrix in `bytes` (an imatrix GGUF or legacy `.dat`
    /// file called `name`); before the listing completes.
    pub fn set_imatrix(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.importance = Some(imatrix::read(name, bytes)?);
        self.imatrix_name = Some(name.to_string());
        Ok(())
    }

    /// The byte ranges still needed to list both sides; empty once the pairs are known.
    pub fn listing_requests(&mut self) -> Vec<SideRequest> {
        if self.plan.is_some() {
            return Vec::new();
        }
        let mut out = self.sides[0].requests(0);
        out.extend(self.sides[1].requests(1));
        if out.is_empty() {
            if let (Some(o), Some(q)) = (self.sides[0].side(), self.sides[1].side()) {
                let plan = DiffPlan::new(o, q, self.importance.take());
                self.outcomes = vec![None; plan.pairs.len()];
                self.plan = Some(plan);
            }
        }
        out
    }

    /// Bytes of file `file` of side `side` at `offset`, answering a request.
    pub fn supply(&mut self, side: usize, file: usize, offset: u64, bytes: &[u8]) {
        if let Some(s) = self.sides.get_mut(side) {
            s.supply(file, offset, bytes);
        }
    }

    fn plan(&self) -> Result<&DiffPlan> {
        self.plan
            .as_ref()
            .ok_or_else(|| Error::input("the checkpoints are not listed yet"))
    }

    /// Number of pairs (0 until listed).
    pub fn pair_count(&self) -> usize {
        self.plan.as_ref().map_or(0, |p| p.pairs.len())
    }

    /// The byte ranges pair `k` reads (file indices as given for each side).
    pub fn needs(&self, k: usize) -> Result<Vec<SideRequest>> {
        let plan = self.plan()?;
        Ok(plan
            .needs(k)
            .into_iter()
            .map(|n: Need| SideRequest {
                side: n.side,
                file: self.sides[n.side].tensor_files[n.file],
                start: n.start,
                end: n.end,
            })
            .collect())
    }

    /// The needs of pair `k`, checked against the byte ranges given.
    fn checked_needs(&self, k: usize, given: usize) -> Result<Vec<Need>> {
        let needs = self.plan()?.needs(k);
        if given != needs.len() {
            return Err(Error::input(format!(
                "pair {k} needs {} byte ranges, {} were given",
                needs.len(),
                given
            )));
        }
        Ok(needs)
    }

    /// Compare pair `k` from the bytes of its [`DiffSession::needs`], in that order.
    pub fn compare(&mut self, k: usize, bytes: &[&[u8]]) -> Result<&super::DiffRow> {
        let needs = self.checked_needs(k, bytes.len())?;
        let plan = self.plan()?;
        let outcome = plan.compare(k, &mut |side, entry| bytes_of(&needs, bytes, side, entry));
        let slot = self
            .outcomes
            .get_mut(k)
            .ok_or_else(|| Error::input(format!("no pair {k}")))?;
        Ok(&slot.insert(outcome).row)
    }

    /// Pair `k` up close ([`super::view`]) from the bytes of its [`DiffSession::needs`].
    pub fn tensor_view(&self, k: usize, bytes: &[&[u8]]) -> Result<super::view::DiffTensorView> {
        let needs = self.checked_needs(k, bytes.len())?;
        self.plan()?
            .tensor_view(k, &mut |side, entry| bytes_of(&needs, bytes, side, entry))
    }

    /// The index of the pair of original weight `original` and quantized weight `quantized`.
    pub fn pair_index(&self, original: &str, quantized: &str) -> Option<usize> {
        let plan = self.plan.as_ref()?;
        plan.pairs.iter().position(|p| {
            plan.original.layout.weights[p.original].name == original
                && plan.quantized.layout.weights[p.quantized].name == quantized
        })
    }

    /// The pairs of `portion` ([`DiffPlan::portion_range`]): what one of several hosts
    /// compares when the pairs are shared out (the page's workers).
    pub fn portion_range(&self, portion: Portion) -> Result<std::ops::Range<usize>> {
        Ok(self.plan()?.portion_range(portion))
    }

    /// The `diff --json` document of `portion` (the pairs compared so far, which should be
    /// its pairs), for [`crate::portion::merge`].
    pub fn portion_document(&self, portion: Portion) -> Result<serde_json::Value> {
        let report = self.report()?;
        Ok(self
            .plan()?
            .portion_document(&report, portion, self.imatrix_name.clone()))
    }

    /// Every pair compared so far, ranked worst first, with the lint and unpaired weights.
    pub fn report(&self) -> Result<DiffReport> {
        let plan = self.plan()?;
        let files = self
            .sides
            .iter()
            .flat_map(|s| s.files.iter().map(|f| f.0.clone()))
            .collect();
        Ok(plan.finish(self.outcomes.iter().flatten().cloned().collect(), files))
    }
}

/// The bytes of `entry` of side `side` among `bytes`, given in the order of `needs`.
fn bytes_of<'b>(
    needs: &[Need],
    bytes: &[&'b [u8]],
    side: usize,
    entry: &crate::checkpoint::Entry,
) -> Result<EntryBytes<'b>> {
    needs
        .iter()
        .position(|n| n.side == side && n.start == entry.range.start && n.file == entry.file)
        .and_then(|i| bytes.get(i))
        .map(|b| EntryBytes::Borrowed(b))
        .ok_or_else(|| Error::load(entry.name.clone(), "its bytes were not given"))
}
