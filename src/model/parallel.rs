//! Ranking a checkpoint on disk in parallel over tensors with bounded memory.
//!
//! `jobs` workers of a rayon pool take tensors from one shared queue, largest first (so that a
//! big embedding does not start last and leave the other workers idle), and each holds one
//! decoded tensor at a time: at most `jobs` tensors are in memory at once, whatever the size
//! of the checkpoint.
//!
//! **Memory.** The decoded tensors in memory at once also stay within [`DECODED_BUDGET`]
//! bytes: a worker takes the largest waiting tensor that fits beside those being ranked, and
//! while none fits it runs the other workers' parallel pieces (`rayon::yield_now`) rather than
//! sit idle. A tensor larger than the budget is ranked alone.

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
    let budget = Mutex::new(Budget {
        waiting: queue,
        in_flight: 0,
    });
    let done = AtomicUsize::new(0);
    let rows: Mutex<Vec<TensorRow>> = Mutex::new(Vec::with_capacity(total));
    let decoded = |i: usize| (entries[i].elements as u64).saturating_mul(4);
    pool.scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|_| {
                // The worker's decoded values, whose memory the next tensor reuses (a fresh
                // allocation of this size is mapped and faulted in page by page).
                let mut buffer = Vec::new();
                while let Some(i) = next_tensor(&budget, &decoded) {
                    let entry = &entries[i];
                    let tensor = checkpoint.read_reusing(entry, std::mem::take(&mut buffer));
                    let row = rank_tensor(
                        entry,
                        i,
                        catalog.file_name(entry),
                        tensor.as_ref().map_err(Clone::clone),
                        methods,
                    );
                    if let Ok(t) = tensor {
                        buffer = t.data;
                    }
                    if let Ok(mut b) = budget.lock() {
                        b.in_flight -= decoded(i);
                    }
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

/// Bytes of decoded float32 values the workers hold at once (a larger tensor is ranked alone).
pub const DECODED_BUDGET: u64 = 256 << 20;

/// The tensors not yet taken (largest first) and the decoded bytes of those being ranked.
struct Budget {
    waiting: Vec<usize>,
    in_flight: u64,
}

/// The next tensor for a worker: the largest waiting one that fits in [`DECODED_BUDGET`]
/// beside those being ranked (any one when none is), or `None` when every tensor is taken.
/// While nothing fits, the worker runs pending pieces of the others' work.
fn next_tensor(budget: &Mutex<Budget>, decoded: &dyn Fn(usize) -> u64) -> Option<usize> {
    loop {
        {
            let mut b = budget.lock().ok()?;
            if b.waiting.is_empty() {
                return None;
            }
            let room = DECODED_BUDGET.saturating_sub(b.in_flight);
            let pick = if b.in_flight == 0 {
                Some(0)
            } else {
                b.waiting.iter().position(|&i| decoded(i) <= room)
            };
            if let Some(k) = pick {
                let i = b.waiting.remove(k);
                b.in_flight += decoded(i);
                return Some(i);
            }
        }
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}
