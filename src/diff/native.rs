//! A diff of checkpoints on disk: each side a [`Checkpoint`] (files or folders), each pair's
//! entries read while it is compared, one pair per core.

use super::{DiffPlan, DiffReport, Side};
use crate::checkpoint::native::Checkpoint;
use crate::checkpoint::CheckpointKind;
use crate::error::{Error, Result};
use crate::portion::Portion;
use std::path::{Path, PathBuf};

/// One side on disk: the checkpoint (for reading) and its [`Side`].
fn open(paths: &[PathBuf]) -> (Checkpoint, Side) {
    let checkpoint = Checkpoint::open(paths);
    let header = checkpoint
        .catalog
        .files
        .iter()
        .find(|f| f.kind == Some(CheckpointKind::Gguf))
        .and_then(|f| {
            let file = std::fs::File::open(&f.name).ok()?;
            // SAFETY: a read-only map of a file being read, as in checkpoint::native.
            unsafe { memmap2::Mmap::map(&file) }.ok()
        });
    let side = Side::new(
        checkpoint.catalog.clone(),
        &checkpoint.configs,
        header.as_deref(),
    );
    (checkpoint, side)
}

/// Compare the checkpoint at `quantized` with the one at `original`, with importance from the
/// imatrix file `imatrix` if given.
pub fn diff_paths(
    original: &[PathBuf],
    quantized: &[PathBuf],
    imatrix: Option<&Path>,
) -> Result<DiffReport> {
    Ok(compare_pairs(original, quantized, imatrix, None)?.report)
}

/// A diff of one portion of the pairs ([`diff_paths_portion`]).
#[derive(Debug, Clone)]
pub struct PortionDiff {
    /// The portion's rows (worst first) and their lint, after the lint of the checkpoints as a
    /// whole (layout warnings, unreadable files), with the unpaired weights and files of the
    /// whole diff.
    pub report: DiffReport,
    /// Pairs in the whole diff.
    pub pairs: usize,
    /// The portion's `diff --json` document ([`DiffPlan::portion_document`]; `Null` for the
    /// whole diff).
    pub document: serde_json::Value,
}

/// [`diff_paths`] on portion `portion` of the pairs only: the pairs in pairing order are
/// split into contiguous portions balanced by their elements ([`Portion::range`]).
pub fn diff_paths_portion(
    original: &[PathBuf],
    quantized: &[PathBuf],
    imatrix: Option<&Path>,
    portion: Portion,
) -> Result<PortionDiff> {
    compare_pairs(original, quantized, imatrix, Some(portion))
}

fn compare_pairs(
    original: &[PathBuf],
    quantized: &[PathBuf],
    imatrix: Option<&Path>,
    portion: Option<Portion>,
) -> Result<PortionDiff> {
    let importance = match imatrix {
        Some(path) => {
            let name = path.to_string_lossy();
            let bytes = std::fs::read(path)
                .map_err(|e| Error::load(name.clone(), format!("cannot read: {e}")))?;
            Some(crate::checkpoint::imatrix::read(&name, &bytes)?)
        }
        None => None,
    };
    let (o_ck, o_side) = open(original);
    let (q_ck, q_side) = open(quantized);
    let files: Vec<String> = [&o_ck, &q_ck]
        .iter()
        .flat_map(|c| c.catalog.files.iter().map(|f| f.name.clone()))
        .collect();
    let plan = DiffPlan::new(o_side, q_side, importance);
    let range = match portion {
        Some(portion) => plan.portion_range(portion),
        None => 0..plan.pairs.len(),
    };
    let checkpoints = [&o_ck, &q_ck];
    // Pairs side by side, one per core: memory holds one pair per core.
    use rayon::prelude::*;
    let outcomes = range
        .clone()
        .into_par_iter()
        .map(|k| plan.compare(k, &mut |side, entry| checkpoints[side].bytes(entry)))
        .collect();
    let report = plan.finish(outcomes, files);
    let document = match portion {
        Some(portion) => {
            plan.portion_document(&report, portion, imatrix.map(|p| p.display().to_string()))
        }
        None => serde_json::Value::Null,
    };
    Ok(PortionDiff {
        report,
        pairs: plan.pairs.len(),
        document,
    })
}
