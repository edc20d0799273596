//! A checkpoint ranking, what the model view drives in a Web Worker (JS `ModelSession`): list a
//! checkpoint from byte ranges the page supplies (`File.slice`), then rank one tensor at a time
//! from its byte range, then sort.
//! No I/O and no threads of its own, so the same code runs in wasm32 and natively.
//!
//! ```text
//! let mut s = CheckpointRanking::new(files, methods);          // files: (name, size) in drop order
//! while let requests = s.listing_requests() && !requests.is_empty() {
//!     for r in requests { s.supply(r.file, r.start, bytes of File.slice(r.start, r.end)) }
//! }
//! for i in 0..s.catalog().entries.len() {
//!     match s.tensor_request(i) {                           // None: skipped, nothing to read
//!         Some(r) => s.rank(i, bytes of File.slice(r.start, r.end)),
//!         None => s.rank(i, &[]),
//!     }
//! }
//! let report = s.report();                                  // worst first
//! ```
//! The page holds one tensor's bytes and values at a time (plus the rows, which are small);
//! [`CheckpointRanking::set_max_elements`] refuses tensors beyond its budget before they are read.

use super::{rank_tensor, report, Method, ModelReport, TensorRow};
use crate::checkpoint::{
    decode_entry, ByteRequest, Catalog, CatalogBuilder, Entry, LoadError, Step,
};
use crate::error::Error;
use crate::tensor::Tensor;
use serde::Serialize;

/// One tensor of a listed checkpoint, as the page shows it before it is ranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct ListedTensor {
    /// Position in checkpoint order (the index [`CheckpointRanking::rank`] takes).
    pub position: usize,
    pub name: String,
    /// The file it lives in.
    pub file: String,
    pub shape: Vec<usize>,
    pub dtype: String,
    pub elements: usize,
    pub byte_range: [u64; 2],
    /// Why it cannot be read, when the listing already knows.
    pub problem: Option<String>,
}

/// A listed checkpoint: its tensors in checkpoint order and the files that could not be listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Listing {
    pub tensors: Vec<ListedTensor>,
    pub load_errors: Vec<LoadError>,
}

/// A checkpoint being listed and ranked.
#[derive(Debug, Clone)]
pub struct CheckpointRanking {
    builder: CatalogBuilder,
    catalog: Option<Catalog>,
    methods: Vec<Method>,
    rows: Vec<Option<TensorRow>>,
    max_elements: Option<usize>,
}

impl CheckpointRanking {
    /// A session over files given as `(name, size)` (names may carry a folder path), ranked
    /// with `methods`.
    pub fn new(files: Vec<(String, u64)>, methods: Vec<Method>) -> Self {
        CheckpointRanking {
            builder: CatalogBuilder::new(files),
            catalog: None,
            methods,
            rows: Vec::new(),
            max_elements: None,
        }
    }

    /// Refuse (as skipped rows) tensors with more than `limit` elements.
    pub fn set_max_elements(&mut self, limit: Option<usize>) {
        self.max_elements = limit;
    }

    /// The byte ranges still needed to list the files; empty once the catalogue is ready.
    pub fn listing_requests(&mut self) -> Vec<ByteRequest> {
        if self.catalog.is_some() {
            return Vec::new();
        }
        match self.builder.step() {
            Step::Need(requests) => requests,
            Step::Ready(catalog) => {
                self.rows = vec![None; catalog.entries.len()];
                self.catalog = Some(catalog);
                Vec::new()
            }
        }
    }

    /// Bytes of file `file` at `offset`, answering a listing request.
    pub fn supply(&mut self, file: usize, offset: u64, bytes: &[u8]) {
        self.builder.supply(file, offset, bytes);
    }

    /// The catalogue (empty until [`Self::listing_requests`] returns no request).
    pub fn catalog(&self) -> Option<&Catalog> {
        self.catalog.as_ref()
    }

    /// The catalogue as the page lists it (`None` until it is ready).
    pub fn listing(&self) -> Option<Listing> {
        let catalog = self.catalog.as_ref()?;
        Some(Listing {
            tensors: catalog
                .entries
                .iter()
                .enumerate()
                .map(|(position, e)| ListedTensor {
                    position,
                    name: e.name.clone(),
                    file: catalog.file_name(e).to_string(),
                    shape: e.shape.clone(),
                    dtype: e.dtype.name().to_string(),
                    elements: e.elements,
                    byte_range: [e.range.start, e.range.end],
                    problem: e.problem.clone(),
                })
                .collect(),
            load_errors: catalog.load_errors.clone(),
        })
    }

    /// Entry `index` of the catalogue.
    pub fn entry(&self, index: usize) -> Result<&Entry, Error> {
        let catalog = self
            .catalog
            .as_ref()
            .ok_or_else(|| Error::input("the checkpoint is not listed yet"))?;
        catalog.entries.get(index).ok_or_else(|| {
            Error::input(format!(
                "tensor {index} does not exist ({} tensors)",
                catalog.entries.len()
            ))
        })
    }

    /// Decode tensor `index` from the bytes of its [`Self::tensor_request`], exactly as
    /// [`Self::rank`] reads it (for opening one tensor in the explorer).
    pub fn read(&self, index: usize, bytes: &[u8]) -> Result<Tensor, Error> {
        let entry = self.entry(index)?;
        if entry.problem.is_none() && self.over_budget(entry.elements) {
            return Err(self.budget_error(entry));
        }
        decode_entry(entry, bytes)
    }

    fn budget_error(&self, entry: &Entry) -> Error {
        Error::input(format!(
            "{} elements, more than the {} the page holds at once",
            entry.elements,
            self.max_elements.unwrap_or_default()
        ))
    }

    /// The byte range to read for tensor `index`, or `None` when it is skipped without reading
    /// (a listing problem, or beyond the element budget).
    pub fn tensor_request(&self, index: usize) -> Option<ByteRequest> {
        let entry = self.catalog.as_ref()?.entries.get(index)?;
        if entry.problem.is_some() || self.over_budget(entry.elements) {
            return None;
        }
        Some(ByteRequest {
            file: entry.file,
            start: entry.range.start,
            end: entry.range.end,
        })
    }

    fn over_budget(&self, elements: usize) -> bool {
        self.max_elements.is_some_and(|limit| elements > limit)
    }

    /// Rank tensor `index` from the bytes of its [`Self::tensor_request`] (any bytes, e.g.
    /// none, for a tensor that has no request). Returns its row.
    pub fn rank(&mut self, index: usize, bytes: &[u8]) -> Result<&TensorRow, Error> {
        self.entry(index)?;
        let tensor = self.read(index, bytes);
        self.record(index, tensor)
    }

    /// Record tensor `index` as skipped because its bytes could not be read (`reason`, e.g. the
    /// file was removed after it was listed). Returns its row.
    pub fn fail(&mut self, index: usize, reason: &str) -> Result<&TensorRow, Error> {
        let entry = self.entry(index)?;
        let error = Error::load(
            entry.name.clone(),
            format!("cannot read its bytes: {reason}"),
        );
        self.record(index, Err(error))
    }

    /// Rank tensor `index` from what reading it gave (`tensor`, or why it could not be read)
    /// and store its row.
    fn record(&mut self, index: usize, tensor: Result<Tensor, Error>) -> Result<&TensorRow, Error> {
        let entry = self.entry(index)?;
        let catalog = self
            .catalog
            .as_ref()
            .ok_or_else(|| Error::input("the checkpoint is not listed yet"))?;
        let row = rank_tensor(
            entry,
            index,
            catalog.file_name(entry),
            tensor.as_ref().map_err(Clone::clone),
            &self.methods,
        );
        let slot = self
            .rows
            .get_mut(index)
            .ok_or_else(|| Error::input("the catalogue changed"))?;
        Ok(slot.insert(row))
    }

    /// The methods' ids, in order.
    pub fn method_ids(&self) -> Vec<String> {
        self.methods.iter().map(|m| m.id.clone()).collect()
    }

    /// Every tensor ranked so far, worst first.
    pub fn report(&self) -> ModelReport {
        let rows: Vec<TensorRow> = self.rows.iter().flatten().cloned().collect();
        match &self.catalog {
            Some(c) => report(c, rows, &self.methods),
            None => report(&Catalog::default(), rows, &self.methods),
        }
    }
}
