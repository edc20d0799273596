//! What ORT's histogram calibraters (Entropy, Percentile, Distribution) collect: the
//! [`HistogramCollector`](super::collector) entry, fed once per `collect_data` call.
//!
//! In `single_reader` mode ORT's one `collect_data` call stacks every batch
//! (`np.asarray(list)`, which refuses batches of different lengths) and bins the concatenation
//! once, on the range of the whole union. A histogram of the union over the union's range cannot
//! be built from per-batch histograms, so — like ORT, which holds every output of the reader in
//! memory — the state keeps the batches, and the collector's entry is built from them when it is
//! needed (qparams, plots).

use super::collector::{self, Collected, HistKind};
use super::CollectMode;
use crate::error::{Error, Result, Stage};
use crate::observer::{HistogramState, PlotSnapshot};
use crate::tensor::Tensor;

crate::declare_params! {
    /// How a histogram calibrater is fed.
    pub struct ReaderArgs {
        /// per_batch: one collect_data() call per batch (histograms merge between calls);
        /// single_reader: every batch in one call (their concatenation is binned once)
        collect_mode: CollectMode = CollectMode::PerBatch; choice(), Data;
    }
}

/// What decides the collected histogram (every field comes from a `Data` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collection {
    pub kind: HistKind,
    /// `num_bins` of the first call.
    pub num_bins: usize,
    pub mode: CollectMode,
}

/// The collector's entry so far.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// `per_batch`: the entry after each call (`None` before any data).
    PerBatch(Option<Collected>),
    /// `single_reader`: the batches of the one call, concatenated, and their lengths.
    SingleReader { data: Vec<f32>, lens: Vec<usize> },
}

/// The state of a histogram calibrater: how it collects and what it collected.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub collection: Collection,
    pub entry: Entry,
}

fn no_collector() -> Error {
    Error::framework(
        "ValueError",
        "No collector created and can't generate calibration data.",
        Stage::CalculateQparams,
    )
}

impl Histogram {
    /// Nothing collected yet.
    pub fn new(collection: Collection) -> Self {
        let entry = match collection.mode {
            CollectMode::PerBatch => Entry::PerBatch(None),
            CollectMode::SingleReader => Entry::SingleReader {
                data: Vec::new(),
                lens: Vec::new(),
            },
        };
        Histogram { collection, entry }
    }

    /// One batch: a `collect_data` call of its own, or one more output of the reader.
    pub fn feed(&mut self, batch: &Tensor) -> Result<()> {
        let c = self.collection;
        match &mut self.entry {
            Entry::PerBatch(entry) => {
                *entry = Some(collector::collect(
                    entry.take(),
                    &batch.data,
                    c.kind,
                    c.num_bins,
                )?);
            }
            Entry::SingleReader { data, lens } => {
                data.extend_from_slice(&batch.data);
                lens.push(batch.len());
            }
        }
        Ok(())
    }

    /// The collector's entry as ORT holds it when `compute_data()` runs.
    pub fn collected(&self) -> Result<Collected> {
        let c = self.collection;
        match &self.entry {
            Entry::PerBatch(entry) => entry.clone().ok_or_else(no_collector),
            Entry::SingleReader { data, lens } => {
                let Some(&first) = lens.first() else {
                    return Err(no_collector());
                };
                if lens.iter().any(|&n| n != first) {
                    return Err(Error::framework(
                        "ValueError",
                        format!(
                            "setting an array element with a sequence. The requested array has an inhomogeneous shape after 1 dimensions. The detected shape was ({},) + inhomogeneous part.",
                            lens.len()
                        ),
                        Stage::Forward,
                    ));
                }
                collector::collect(None, data, c.kind, c.num_bins)
            }
        }
    }

    /// The histogram and the observed data range, for plots.
    pub fn plot(&self) -> PlotSnapshot {
        match self.collected() {
            Ok(h) => PlotSnapshot {
                min_val: vec![h.min],
                max_val: vec![h.max],
                histogram: Some(HistogramState {
                    counts: h.hist.iter().map(|&c| c as f32).collect(),
                    edges: h.edges,
                }),
            },
            Err(_) => PlotSnapshot::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collection(mode: CollectMode) -> Collection {
        Collection {
            kind: HistKind::Value,
            num_bins: 4,
            mode,
        }
    }

    #[test]
    fn single_reader_bins_the_union_once() {
        let a = Tensor::from_vec(vec![-1.0, 0.0, 0.5, 1.0]);
        let b = Tensor::from_vec(vec![-3.0, 0.0, 2.0, 3.0]);
        let mut single = Histogram::new(collection(CollectMode::SingleReader));
        single.feed(&a).unwrap();
        single.feed(&b).unwrap();
        let h = single.plot().histogram.unwrap();
        // One histogram of the union over ±3: edges −3, −1.5, 0, 1.5, 3.
        assert_eq!(h.edges, vec![-3.0, -1.5, 0.0, 1.5, 3.0]);
        assert_eq!(h.counts, vec![1.0, 1.0, 4.0, 2.0]);
        // Per batch, the second call grows the first histogram instead.
        let mut per = Histogram::new(collection(CollectMode::PerBatch));
        per.feed(&a).unwrap();
        per.feed(&b).unwrap();
        assert_eq!(per.plot().histogram.unwrap().counts.len(), 14);
    }

    #[test]
    fn single_reader_refuses_ragged_batches_like_numpy() {
        let mut h = Histogram::new(collection(CollectMode::SingleReader));
        h.feed(&Tensor::from_vec(vec![1.0, 2.0])).unwrap();
        h.feed(&Tensor::from_vec(vec![1.0])).unwrap();
        let err = h.collected().unwrap_err().to_string();
        assert!(
            err.starts_with("ValueError: setting an array element"),
            "{err}"
        );
        let empty = Histogram::new(collection(CollectMode::PerBatch));
        assert_eq!(
            empty.collected().unwrap_err().to_string(),
            "ValueError: No collector created and can't generate calibration data."
        );
    }
}
