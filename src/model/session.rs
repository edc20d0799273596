//! The model view's engine for a Web Worker: list a checkpoint from byte ranges the page
//! supplies (`File.slice`), then rank one tensor at a time from its byte range, then sort.
//! No I/O and no threads of its own, so the same code runs in wasm32 and natively.
//!
//! ```text
//! let mut s = ModelSession::new(files, methods);          // files: (name, size) in drop order
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
//! [`ModelSession::set_max_elements`] refuses tensors beyond its budget before they are read.

use super::{rank_tensor, report, Method, ModelReport, TensorRow};
use crate::checkpoint::{decode_entry, ByteRequest, Catalog, CatalogBuilder, Step};
use crate::error::Error;

/// A checkpoint being listed and ranked.
#[derive(Debug, Clone)]
pub struct ModelSession {
    builder: CatalogBuilder,
    catalog: Option<Catalog>,
    methods: Vec<Method>,
    rows: Vec<Option<TensorRow>>,
    max_elements: Option<usize>,
}

impl ModelSession {
    /// A session over files given as `(name, size)` (names may carry a folder path), ranked
    /// with `methods`.
    pub fn new(files: Vec<(String, u64)>, methods: Vec<Method>) -> Self {
        ModelSession {
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
        let catalog = self
            .catalog
            .as_ref()
            .ok_or_else(|| Error::input("the checkpoint is not listed yet"))?;
        let entry = catalog.entries.get(index).ok_or_else(|| {
            Error::input(format!(
                "tensor {index} does not exist ({} tensors)",
                catalog.entries.len()
            ))
        })?;
        let tensor = match self.max_elements {
            Some(limit) if entry.problem.is_none() && entry.elements > limit => {
                Err(Error::input(format!(
                    "{} elements, more than the {limit} the page holds at once",
                    entry.elements
                )))
            }
            _ => decode_entry(entry, bytes),
        };
        let row = rank_tensor(
            entry,
            index,
            catalog.file_name(entry),
            tensor,
            &self.methods,
        );
        let slot = self
            .rows
            .get_mut(index)
            .ok_or_else(|| Error::input("the catalogue changed"))?;
        Ok(slot.insert(row))
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
