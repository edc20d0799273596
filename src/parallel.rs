//! Deterministic data parallelism: work is cut into pieces whose boundaries depend only on the
//! input (never on the number of threads), each piece is computed on its own, and the pieces'
//! results come back **in order**, so a caller that combines them left to right gets the same
//! bits on one thread or many.
//!
//! Natively the pieces run on rayon's thread pool (`RAYON_NUM_THREADS` sets its size); on
//! WebAssembly, which has no threads here, they run one after the other. The results are the
//! same either way.

/// Elements per piece of a chunked reduction: small enough for two cores to share a 16M-element
/// tensor evenly (256 pieces), large enough that the per-piece overhead vanishes.
pub const CHUNK: usize = 1 << 16;

/// Keep memory freed by one tensor for the next (glibc only; elsewhere nothing to do).
///
/// Whole-checkpoint commands free a few MiB of decoded values per tensor on every worker
/// thread. glibc gives a thread arena's freed top back to the kernel at once (`madvise`), so
/// the next tensor faults every page in again: on a 1 GiB diff that was 2–3 s of system time
/// for 3 s of computing. A top pad of 256 MiB keeps freed memory in the arena for reuse; the
/// resident size stays what the largest tensors in flight need (the pad is not touched).
pub fn reuse_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator tuning parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 256 << 20);
    }
}

/// How many pieces run at once: rayon's threads natively, 1 on WebAssembly.
pub fn threads() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    return rayon::current_num_threads().max(1);
    #[cfg(target_arch = "wasm32")]
    1
}

/// `f(i)` for every `i` in `0..n`, in order, computed in parallel natively.
pub fn map_indices<R: Send>(n: usize, f: impl Fn(usize) -> R + Send + Sync) -> Vec<R> {
    #[cfg(not(target_arch = "wasm32"))]
    if n > 1 {
        use rayon::prelude::*;
        return (0..n).into_par_iter().map(f).collect();
    }
    (0..n).map(f).collect()
}

/// `f(start, piece)` for consecutive pieces of `data` of [`CHUNK`] elements (the last may be
/// shorter), in order.
pub fn map_chunks<T: Sync, R: Send>(
    data: &[T],
    f: impl Fn(usize, &[T]) -> R + Send + Sync,
) -> Vec<R> {
    let pieces = data.len().div_ceil(CHUNK);
    map_indices(pieces, |k| {
        let start = k * CHUNK;
        let end = (start + CHUNK).min(data.len());
        f(start, &data[start..end])
    })
}

/// `f(piece)` for consecutive pieces of `data` of `size` elements (the last may be shorter),
/// in order, computed in parallel natively with at least [`CHUNK`] elements per task.
pub fn map_chunks_of<T: Sync, R: Send>(
    data: &[T],
    size: usize,
    f: impl Fn(&[T]) -> R + Send + Sync,
) -> Vec<R> {
    let size = size.max(1);
    #[cfg(not(target_arch = "wasm32"))]
    if data.len() > size {
        use rayon::prelude::*;
        return data
            .par_chunks(size)
            .with_min_len((CHUNK / size).max(1))
            .map(f)
            .collect();
    }
    data.chunks(size).map(f).collect()
}

/// `f(start, piece, out)` for consecutive pieces of `data` of [`CHUNK`] elements and the
/// pieces of `out` at the same places (`out` is as long as `data`), in parallel natively.
pub fn for_chunks_mut<T: Sync, U: Send>(
    data: &[T],
    out: &mut [U],
    f: impl Fn(usize, &[T], &mut [U]) + Send + Sync,
) {
    assert_eq!(data.len(), out.len(), "for_chunks_mut: lengths differ");
    #[cfg(not(target_arch = "wasm32"))]
    if data.len() > CHUNK {
        use rayon::prelude::*;
        return out
            .par_chunks_mut(CHUNK)
            .zip(data.par_chunks(CHUNK))
            .enumerate()
            .for_each(|(k, (out, piece))| f(k * CHUNK, piece, out));
    }
    for (k, (out, piece)) in out.chunks_mut(CHUNK).zip(data.chunks(CHUNK)).enumerate() {
        f(k * CHUNK, piece, out);
    }
}

/// Per-bin integer counts of `data`: `count` runs on consecutive pieces of `piece` elements (in
/// parallel natively) and returns `bins` counts each; the totals are their sums, which integer
/// addition makes the same in any order.
pub fn sum_piece_counts<C: Copy + Default + std::ops::AddAssign + Send>(
    data: &[f32],
    piece: usize,
    bins: usize,
    count: impl Fn(&[f32]) -> Vec<C> + Send + Sync,
) -> Vec<C> {
    let pieces = map_indices(data.len().div_ceil(piece.max(1)), |k| {
        count(&data[k * piece..((k + 1) * piece).min(data.len())])
    });
    let mut totals = vec![C::default(); bins];
    for counts in pieces {
        for (t, c) in totals.iter_mut().zip(counts) {
            *t += c;
        }
    }
    totals
}

/// `f(item)` for every item, in order, computed in parallel natively (e.g. one observer each).
pub fn map_items<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Send + Sync) -> Vec<R> {
    map_indices(items.len(), |i| f(&items[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_data_in_order() {
        let data: Vec<u32> = (0..(3 * CHUNK + 5) as u32).collect();
        let pieces = map_chunks(&data, |start, piece| (start, piece.len(), piece[0]));
        assert_eq!(pieces.len(), 4);
        assert_eq!(pieces[0], (0, CHUNK, 0));
        assert_eq!(pieces[3], (3 * CHUNK, 5, (3 * CHUNK) as u32));
        assert!(map_chunks(&[] as &[u32], |_, p| p.len()).is_empty());
        assert_eq!(map_items(&[3, 1, 2], |v| v * 10), vec![30, 10, 20]);
    }
}
