//! Ranking a checkpoint on disk in parallel over tensors with bounded memory.
//!
//! `jobs` workers of a rayon pool take tensors from one shared queue, largest first (so that a
//! big embedding does not start last and leave the other workers idle), and each holds one
//! decoded tensor at a time: at most `jobs` tensors are in memory at once, whatever the size
//! of the checkpoint.

use super::{rank_tensor, report, Method, ModelReport, TensorRow};
use crate::checkpoint::native::Checkpoint;
use crate::error::{Error, Result};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Rank every tensor of `checkpoint` with `methods` on `jobs` threads (at least one);
/// `progress(done, total)` is called after each tensor.
pub fn rank_checkpoint(
    checkpoint: &Checkpoint,
    methods: &[Method],
    jobs: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<ModelReport> {
    let all = 0..checkpoint.catalog.entries.len();
    rank_positions(checkpoint, all, methods, jobs, progress)
}

/// [`rank_checkpoint`] on the tensors at `positions` of the checkpoint order only (a portion
/// of the work, [`crate::portion`]): their rows, each at its position in the whole checkpoint,
/// worst first.
pub fn rank_positions(
    checkpoint: &Checkpoint,
    positions: Range<usize>,
    methods: &[Method],
    jobs: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<ModelReport> {
    let catalog = &checkpoint.catalog;
    let entries = &catalog.entries;
    let positions = positions.start.min(entries.len())..positions.end.min(entries.len());
    let total = positions.len();
    let mut queue: Vec<usize> = positions.collect();
    queue.sort_by_key(|&i| std::cmp::Reverse(entries[i].range.end - entries[i].range.start));
    let jobs = jobs.clamp(1, total.max(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| Error::input(format!("cannot start {jobs} worker threads: {e}")))?;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let rows: Mutex<Vec<TensorRow>> = Mutex::new(Vec::with_capacity(total));
    pool.scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|_| {
                while let Some(&i) = queue.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let entry = &entries[i];
                    let row = rank_tensor(
                        entry,
                        i,
                        catalog.file_name(entry),
                        checkpoint.read(entry),
                        methods,
                    );
                    if let Ok(mut rows) = rows.lock() {
                        rows.push(row);
                    }
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                }
            });
        }
    });
    let rows = rows
        .into_inner()
        .map_err(|_| Error::input("a worker thread failed"))?;
    Ok(report(catalog, rows, methods))
}
