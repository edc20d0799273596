//! A diff of checkpoints on disk: each side a [`Checkpoint`] (files or folders), each pair's
//! entries memory-mapped while it is compared, one pair per core.

use super::{DiffPlan, DiffReport, Side};
use crate::checkpoint::native::Checkpoint;
use crate::checkpoint::CheckpointKind;
use crate::error::{Error, Result};
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
    let checkpoints = [&o_ck, &q_ck];
    // Pairs side by side, one per core: memory holds one pair per core.
    use rayon::prelude::*;
    let outcomes = (0..plan.pairs.len())
        .into_par_iter()
        .map(|k| plan.compare(k, &mut |side, entry| checkpoints[side].bytes(entry)))
        .collect();
    Ok(plan.finish(outcomes, files))
}
