//! Per-tensor statistics computed once and shared by every observer that reads them.
//!
//! When several observers run over the same calibration batches (the CLI's `observe` without
//! `--observer`, a whole comparison), each would otherwise count the non-finite values and find
//! the finite min/max of every batch again. [`SharedStats::share`] registers the batches for as
//! long as it lives (it borrows them, so they can neither change nor be freed meanwhile);
//! [`nonfinite`] and [`finite_min_max`] then compute each statistic of a registered tensor once,
//! on first use, and hand out the stored value after that. Unregistered data is computed on the
//! spot. Either way the value is the same: both statistics are computed in fixed pieces merged
//! in order ([`crate::parallel`]), in parallel natively.
//!
//! Histograms are shared the same way ([`histc_counts`]): several observers bin `|x|` over
//! `[0, max|x|]` with 2048 bins (ModelOpt's three methods, Quark's histogram observers, Horizon's
//! KL and percentile), and one pass then serves them all. Integer counts are exact, so a shared
//! histogram is the one each observer would count itself.
//!
//! The error metrics' `Σx²` depends on the data alone, and is shared the same way
//! ([`signal_energy`]): every observer's metrics pass then sums only its own error.
//!
//! Searches two observers run alike are shared too ([`shared_search`]): Horizon's
//! `MSEObserver` and its `.fixed` variant evaluate the same 95 candidate losses and differ only
//! in the factor they apply afterwards.

use crate::error::Result;
use crate::parallel;
use crate::tensor::{NonFiniteCounts, Tensor};
use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// One `histc` call: values or magnitudes, bin count and range (as bits, so that the key is
/// exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistcKey {
    /// `histc(|x|, …)` rather than `histc(x, …)`.
    pub magnitudes: bool,
    pub bins: usize,
    pub lo: u32,
    pub hi: u32,
}

/// Histograms with more bins than this are not kept.
const SHARED_HISTC_MAX_BINS: usize = 1 << 16;
/// Histograms kept per tensor (the oldest goes first): a lease lives as long as a selection,
/// while a slider may ask for a new bin count or range at every move.
const SHARED_HISTC_KEPT: usize = 16;

/// Integer bin counts, computed once.
type SharedCounts = Arc<OnceLock<Arc<Vec<u64>>>>;

/// Searches kept per tensor (the oldest goes first).
const SHARED_SEARCHES_KEPT: usize = 8;

/// The outcome of a shared search, computed once.
type SharedOutcome = Arc<OnceLock<Result<Arc<dyn Any + Send + Sync>>>>;

/// The statistics of one registered tensor, each computed on first use.
#[derive(Default)]
struct Stats {
    /// Non-finite counts, finite min/max and `Σx²` (and `Σx`, when the first to ask wanted it),
    /// found in one pass.
    scan: OnceLock<Scan>,
    /// `Σx` of the finite values ([`Scan::sum`]).
    sum: OnceLock<f64>,
    /// `Σx²` of the finite values, in the metrics' order ([`crate::qdq::signal_energy`]).
    signal_energy: OnceLock<f64>,
    histc: Mutex<Vec<(HistcKey, SharedCounts)>>,
    searches: Mutex<Vec<(String, SharedOutcome)>>,
}

/// A registered tensor: its data's address and length, how many scopes registered it, and its
/// statistics.
struct Entry {
    address: usize,
    len: usize,
    scopes: usize,
    stats: Arc<Stats>,
}

static REGISTRY: RwLock<Vec<Entry>> = RwLock::new(Vec::new());

/// Batches whose statistics are shared while this value lives.
pub struct SharedStats<'a> {
    _registration: Registration,
    _batches: PhantomData<&'a Tensor>,
}

impl<'a> SharedStats<'a> {
    /// Share the statistics of `batches` until the returned value is dropped.
    pub fn share(batches: &[&'a Tensor]) -> Self {
        SharedStats {
            _registration: Registration::new(batches),
            _batches: PhantomData,
        }
    }
}

/// A registration that does not borrow its batches, for an owner that holds them longer than
/// one call (the explorer's session, for its selection: every observer run on it then shares
/// the statistics). The owner must drop the lease before it frees or changes those batches:
/// the registry knows them by address and length only.
pub struct StatsLease {
    _registration: Registration,
}

impl StatsLease {
    /// Share the statistics of `batches` until the lease is dropped (see the type's contract).
    pub fn new(batches: &[&Tensor]) -> Self {
        StatsLease {
            _registration: Registration::new(batches),
        }
    }
}

impl Stats {
    /// The scan of `data` (this tensor's), made on first use, with `Σx` when `SUM`; the same
    /// pass keeps `Σx²`. Only the scan's `Σx` tells whether it was summed: read it through
    /// [`Stats::scanned_with_sum`].
    fn scanned<const SUM: bool>(&self, data: &[f32]) -> &Scan {
        self.scan.get_or_init(|| {
            let scan = scan::<SUM>(data);
            // Whoever asked for `Σx²` alone first has already stored the same value.
            let _ = self.signal_energy.set(scan.signal);
            if SUM {
                let _ = self.sum.set(scan.sum);
            }
            scan
        })
    }

    /// The scan with its `Σx`: summed in the scan when it is the first, else in a pass of its
    /// own (the same value).
    fn scanned_with_sum(&self, data: &[f32]) -> Scan {
        let scan = *self.scanned::<true>(data);
        Scan {
            sum: *self.sum.get_or_init(|| finite_sum(data)),
            ..scan
        }
    }
}

/// The keys a scope registered; unregistered on drop.
struct Registration {
    keys: Vec<(usize, usize)>,
}

impl Registration {
    fn new(batches: &[&Tensor]) -> Self {
        let keys: Vec<(usize, usize)> = batches
            .iter()
            .map(|b| (b.data.as_ptr() as usize, b.data.len()))
            .collect();
        if let Ok(mut registry) = REGISTRY.write() {
            for &(address, len) in &keys {
                match registry
                    .iter_mut()
                    .find(|e| e.address == address && e.len == len)
                {
                    Some(entry) => entry.scopes += 1,
                    None => registry.push(Entry {
                        address,
                        len,
                        scopes: 1,
                        stats: Arc::default(),
                    }),
                }
            }
        }
        Registration { keys }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut registry) = REGISTRY.write() {
            for &(address, len) in &self.keys {
                if let Some(entry) = registry
                    .iter_mut()
                    .find(|e| e.address == address && e.len == len)
                {
                    entry.scopes -= 1;
                }
            }
            registry.retain(|e| e.scopes > 0);
        }
    }
}

/// The stored statistics of `data` if it is a registered tensor's data.
fn lookup(data: &[f32]) -> Option<Arc<Stats>> {
    if data.is_empty() {
        return None;
    }
    let address = data.as_ptr() as usize;
    let registry = REGISTRY.read().ok()?;
    registry
        .iter()
        .find(|e| e.address == address && e.len == data.len())
        .map(|e| Arc::clone(&e.stats))
}

/// NaN/±Inf counts of `data` (shared when registered).
pub fn nonfinite(data: &[f32]) -> NonFiniteCounts {
    match lookup(data) {
        Some(stats) => stats.scanned::<false>(data).counts,
        None => count_nonfinite(data),
    }
}

/// Min and max of the finite values of `data`, `None` when there are none (shared when
/// registered); the same value as [`crate::histogram::finite_min_max_sequential`].
pub fn finite_min_max(data: &[f32]) -> Option<(f32, f32)> {
    match lookup(data) {
        Some(stats) => stats.scanned::<false>(data).range,
        None => min_max(data),
    }
}

/// The one scan of `data`: its non-finite counts, finite min/max, and `Σx²` and `Σx` of its
/// finite values (shared when registered, computed in one pass otherwise). The observers need
/// no `Σx`: a registered tensor's scan sums it only when this is the scan's first use.
pub fn scanned(data: &[f32]) -> Scan {
    match lookup(data) {
        Some(stats) => stats.scanned_with_sum(data),
        None => scan::<true>(data),
    }
}

/// `Σx²` of the finite values of a registered tensor's `data` as the error metrics sum it
/// ([`crate::qdq::signal_energy`]), computed once, in the same pass as the non-finite counts and
/// the min/max; `None` for unregistered data, which the metrics then sum as they go (one pass
/// either way).
pub fn signal_energy(data: &[f32]) -> Option<f64> {
    lookup(data).map(|stats| {
        stats.scanned::<false>(data);
        *stats
            .signal_energy
            .get_or_init(|| crate::qdq::signal_energy(data))
    })
}

/// The largest `|x|` of the values of `data` that are not NaN (infinities included), `None` when
/// there are none; from the shared statistics, so with no pass of its own once they exist.
pub fn max_abs_ignoring_nan(data: &[f32]) -> Option<f32> {
    let counts = nonfinite(data);
    if counts.pos_inf + counts.neg_inf > 0 {
        return Some(f32::INFINITY);
    }
    finite_min_max(data).map(|(lo, hi)| lo.abs().max(hi.abs()))
}

/// The cell kept under `key` in `kept`: a new one when there is none (the oldest dropped once
/// `limit` are kept).
fn kept_cell<K: PartialEq, V>(
    kept: &mut Vec<(K, Arc<OnceLock<V>>)>,
    key: K,
    limit: usize,
) -> Arc<OnceLock<V>> {
    if let Some((_, cell)) = kept.iter().find(|(k, _)| *k == key) {
        return Arc::clone(cell);
    }
    if kept.len() >= limit {
        kept.remove(0);
    }
    let cell = Arc::new(OnceLock::new());
    kept.push((key, Arc::clone(&cell)));
    cell
}

/// The integer bin counts `compute` returns for the histc call `key` on `data`: computed once
/// while `data` is registered (by the first caller; others wait for it), on the spot otherwise.
pub fn histc_counts(
    data: &[f32],
    key: HistcKey,
    compute: impl FnOnce() -> Vec<u64>,
) -> Arc<Vec<u64>> {
    let cell = lookup(data)
        .filter(|_| key.bins <= SHARED_HISTC_MAX_BINS)
        .and_then(|stats| {
            Some(kept_cell(
                &mut *stats.histc.lock().ok()?,
                key,
                SHARED_HISTC_KEPT,
            ))
        });
    match cell {
        Some(cell) => Arc::clone(cell.get_or_init(|| Arc::new(compute()))),
        None => Arc::new(compute()),
    }
}

/// The outcome of `compute`, a search over `data` that `key` names completely (the observer,
/// every parameter it reads and the batch's shape): computed once while `data` is registered
/// (by the first caller; others wait for it), on the spot otherwise. The search must be a pure
/// function of `data` and `key`, so a shared outcome is the one each caller would compute.
pub fn shared_search<T: Any + Send + Sync>(
    data: &[f32],
    key: String,
    compute: impl FnOnce() -> Result<T>,
) -> Result<Arc<T>> {
    // The value's type is part of the key, so the downcast below cannot fail.
    let key = format!("{key} → {}", std::any::type_name::<T>());
    let cell = lookup(data).and_then(|stats| {
        Some(kept_cell(
            &mut *stats.searches.lock().ok()?,
            key,
            SHARED_SEARCHES_KEPT,
        ))
    });
    let Some(cell) = cell else {
        return compute().map(Arc::new);
    };
    let outcome =
        cell.get_or_init(|| compute().map(|value| Arc::new(value) as Arc<dyn Any + Send + Sync>));
    match outcome {
        Ok(value) => Arc::clone(value)
            .downcast::<T>()
            .map_err(|_| crate::error::Error::input("internal: a shared search of another type")),
        Err(e) => Err(e.clone()),
    }
}

/// What the one pass over a tensor finds ([`scanned`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scan {
    /// NaN/±Inf counts.
    pub counts: NonFiniteCounts,
    /// Min and max of the finite values ([`crate::histogram::finite_min_max_sequential`]).
    pub range: Option<(f32, f32)>,
    /// `Σx²` of the finite values in the metrics' order ([`crate::qdq::signal_energy`]).
    pub signal: f64,
    /// `Σx` of the finite values: in each [`parallel::CHUNK`]-element piece, element `k` into
    /// lane `k mod 8` of float64 sums, the lanes added in order 0..8, then the pieces in order.
    pub sum: f64,
}

/// [`count_nonfinite`], [`min_max`], [`crate::qdq::signal_energy`] and, when `SUM`, the finite
/// values' sum ([`finite_sum`]; 0 otherwise) in one pass over memory, one loop per parallel piece
/// ([`scan_piece`]). The pieces and lanes are those of each statistic alone (the min/max's stop
/// at the last multiple of eight, whose tail is finished apart), so the values are theirs bit
/// for bit.
fn scan<const SUM: bool>(data: &[f32]) -> Scan {
    let body = data.len() / 8 * 8;
    let pieces = parallel::map_chunks(data, |start, piece| {
        let whole = body.saturating_sub(start).min(piece.len());
        crate::simd::with_wide_vectors(
            #[inline(always)]
            || scan_piece::<SUM>(piece, whole),
        )
    });
    let mut counts = NonFiniteCounts::of(&data[body..]);
    let mut lanes = Vec::with_capacity(pieces.len());
    let (mut signal, mut sum) = (0.0, 0.0);
    for piece in pieces {
        counts = counts + piece.counts;
        lanes.push(piece.extrema);
        signal += piece.signal;
        sum += piece.sum;
    }
    Scan {
        counts,
        range: combine_lanes(lanes, &data[body..]),
        signal,
        sum,
    }
}

/// What [`scan_piece`] finds in one piece.
struct PieceScan {
    counts: NonFiniteCounts,
    extrema: ([f32; 8], [f32; 8]),
    signal: f64,
    sum: f64,
}

/// One piece of [`scan`] in one pass from memory (two loops over each L1-sized block): the
/// non-finite counts ([`NonFiniteCounts::of`]) and the lanes of
/// [`crate::histogram::finite_min_max_lanes`] of its first `whole` elements (a multiple of 8),
/// and `Σx²` of all of it as [`crate::qdq::signal_energy_of_piece`] sums it (element `k` into
/// lane `k mod 8`, the lanes added in order) — the same values as those three functions — and,
/// when `SUM`, `Σx` of its finite values in the same lanes ([`finite_sum_of_piece`]).
#[inline(always)]
fn scan_piece<const SUM: bool>(piece: &[f32], whole: usize) -> PieceScan {
    let (body, rest) = piece.split_at(whole);
    let mut counts = NonFiniteCounts::default();
    let mut extrema = crate::histogram::SixteenLanes::new();
    let mut signal = [0.0f64; 8];
    let mut sum = [0.0f64; 8];
    // Blocks are a multiple of 16 values, so every block is fed at a multiple of 16.
    const _: () = assert!(NonFiniteCounts::BLOCK.is_multiple_of(16));
    // One loop per statistic over each block while it is in L1: one fused loop defeats the
    // vectoriser (it mixes the float64 sums and the extrema into shuffles).
    for block in body.chunks(NonFiniteCounts::BLOCK) {
        let mut flagged = [0u32; 8];
        for chunk in crate::lanes::eights(block) {
            for k in 0..8 {
                flagged[k] += NonFiniteCounts::flag(chunk[k]);
                signal[k] += crate::qdq::signal_term::<false>(chunk[k]);
                if SUM {
                    sum[k] += finite_term(chunk[k]);
                }
            }
        }
        // Fresh lanes per block, kept apart from the loop above by an opaque copy: fed across
        // blocks or in the same loop, the vectoriser packs them with shuffles in every step.
        let mut lanes = crate::histogram::SixteenLanes::new();
        lanes.feed(block);
        extrema.absorb(std::hint::black_box(&lanes));
        // A block holding a non-finite value is classified again, as `NonFiniteCounts::of` does.
        if flagged.iter().any(|&f| f > 0) {
            counts = counts + NonFiniteCounts::of(block);
        }
    }
    for ((lane, sum), &v) in signal.iter_mut().zip(&mut sum).zip(rest) {
        *lane += crate::qdq::signal_term::<false>(v);
        if SUM {
            *sum += finite_term(v);
        }
    }
    let added = |lanes: [f64; 8]| lanes.iter().fold(0.0, |total, &lane| total + lane);
    PieceScan {
        counts,
        extrema: extrema.eight(body),
        signal: added(signal),
        sum: added(sum),
    }
}

/// `Σx` of the finite values of `data` in fixed pieces merged in order ([`Scan::sum`]).
fn finite_sum(data: &[f32]) -> f64 {
    parallel::map_chunks(data, |_, piece| finite_sum_of_piece(piece))
        .into_iter()
        .fold(0.0, |total, piece| total + piece)
}

/// `Σx` of the finite values of one piece: element `k` into lane `k mod 8` of float64 sums, the
/// lanes added in order.
fn finite_sum_of_piece(piece: &[f32]) -> f64 {
    let mut lanes = [0.0f64; 8];
    for (k, &x) in piece.iter().enumerate() {
        lanes[k % 8] += finite_term(x);
    }
    lanes.iter().fold(0.0, |total, &lane| total + lane)
}

/// What `x` adds to `Σx`: itself in float64, 0 when it is not finite.
#[inline(always)]
fn finite_term(x: f32) -> f64 {
    if x.is_finite() {
        f64::from(x)
    } else {
        0.0
    }
}

fn count_nonfinite(data: &[f32]) -> NonFiniteCounts {
    parallel::map_chunks(data, |_, piece| NonFiniteCounts::of(piece))
        .into_iter()
        .fold(NonFiniteCounts::default(), |a, b| a + b)
}

/// [`crate::histogram::finite_min_max_sequential`] in parallel pieces, with the same result bit for bit
/// (the signs of zeros included): every piece keeps eight lanes by element index mod 8, the
/// pieces' lanes are combined in order with the same strict comparisons, and the lanes and the
/// tail are then combined exactly as the sequential version does.
fn min_max(data: &[f32]) -> Option<(f32, f32)> {
    let body = data.len() / 8 * 8;
    let lanes = parallel::map_chunks(&data[..body], |_, piece| {
        crate::histogram::finite_min_max_lanes(piece)
    });
    combine_lanes(lanes, &data[body..])
}

/// The pieces' lanes of [`crate::histogram::finite_min_max_lanes`] combined in order with strict
/// comparisons, then finished with the `rest` as the sequential version does.
fn combine_lanes(lanes: Vec<([f32; 8], [f32; 8])>, rest: &[f32]) -> Option<(f32, f32)> {
    let mut lo = [f32::INFINITY; 8];
    let mut hi = [f32::NEG_INFINITY; 8];
    for (piece_lo, piece_hi) in lanes {
        for k in 0..8 {
            lo[k] = if piece_lo[k] < lo[k] {
                piece_lo[k]
            } else {
                lo[k]
            };
            hi[k] = if piece_hi[k] > hi[k] {
                piece_hi[k]
            } else {
                hi[k]
            };
        }
    }
    crate::histogram::finite_min_max_finish(lo, hi, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_values_equal_fresh_ones_and_scopes_nest() {
        let mut data: Vec<f32> = (0..(3 * parallel::CHUNK + 13))
            .map(|i| ((i as f32) * 0.37).sin())
            .collect();
        data[5] = f32::NAN;
        data[99] = f32::NEG_INFINITY;
        data[1000] = 0.0;
        data[1001] = -0.0;
        let t = Tensor::from_vec(data);
        let expected = crate::histogram::finite_min_max_sequential(&t.data);
        {
            let _outer = SharedStats::share(&[&t]);
            {
                let _inner = SharedStats::share(&[&t]);
                assert!(lookup(&t.data).is_some());
            }
            assert!(lookup(&t.data).is_some());
            assert_eq!(finite_min_max(&t.data), expected);
            assert_eq!(nonfinite(&t.data), t.nonfinite());
            assert_eq!(finite_min_max(&t.data), expected);
        }
        assert!(lookup(&t.data).is_none());
        assert_eq!(nonfinite(&t.data).nan, 1);
        assert_eq!(nonfinite(&t.data).neg_inf, 1);
        // Zeros of both signs: the same sign as the sequential version.
        let zeros: Vec<f32> = (0..100)
            .map(|i| if i % 3 == 0 { -0.0 } else { 0.0 })
            .collect();
        let (a, b) = min_max(&zeros).unwrap();
        let (c, d) = crate::histogram::finite_min_max_sequential(&zeros).unwrap();
        assert_eq!(
            (a.to_bits(), b.to_bits()),
            (c.to_bits(), d.to_bits()),
            "{a} {b} {c} {d}"
        );
    }

    #[test]
    fn the_one_scan_gives_each_statistics_own_bits() {
        // Lengths whose last piece is whole, ends in a tail shorter than 8, or is only a tail.
        let chunk = parallel::CHUNK;
        for len in [7, 8, 100, chunk, chunk + 3, 2 * chunk + 13, 3 * chunk - 5] {
            let mut data: Vec<f32> = (0..len).map(|i| ((i as f32) * 0.61).cos() * 3.0).collect();
            data[len / 2] = f32::NAN;
            data[len - 1] = f32::INFINITY;
            data[0] = -7.5;
            // A minimum of zeros of both signs in one lane (the first kept), and −∞ in several
            // scan blocks.
            if len > 64 {
                data[0] = 0.0;
                for (i, v) in data.iter_mut().enumerate().skip(1) {
                    *v = v.abs() + 0.5;
                    if i % 24 == 0 {
                        *v = if i % 48 == 0 { 0.0 } else { -0.0 };
                    }
                    // Lane 1: −0 at 9 (in the second half of sixteen) before +0 at 17.
                    if i == 9 || i == 17 {
                        *v = if i == 9 { -0.0 } else { 0.0 };
                    }
                }
            }
            for i in (3..len - 1).step_by(5000) {
                data[i] = f32::NEG_INFINITY;
            }
            let t = Tensor::from_vec(data);
            let _shared = SharedStats::share(&[&t]);
            // Σx² first on some lengths, the min/max first on others: either starts the scan.
            if len % 2 == 0 {
                assert!(signal_energy(&t.data).is_some());
            }
            let bits = |r: Option<(f32, f32)>| r.map(|(a, b)| (a.to_bits(), b.to_bits()));
            assert_eq!(
                bits(finite_min_max(&t.data)),
                bits(min_max(&t.data)),
                "{len}"
            );
            assert_eq!(
                bits(finite_min_max(&t.data)),
                bits(crate::histogram::finite_min_max_sequential(&t.data)),
                "{len}"
            );
            let body = len / 8 * 8;
            let (lo, hi) = crate::histogram::finite_min_max_lanes_one_by_one(&t.data);
            assert_eq!(
                bits(finite_min_max(&t.data)),
                bits(crate::histogram::finite_min_max_finish(
                    lo,
                    hi,
                    &t.data[body..]
                )),
                "{len}"
            );
            assert_eq!(nonfinite(&t.data), count_nonfinite(&t.data), "{len}");
            assert_eq!(
                signal_energy(&t.data).map(f64::to_bits),
                Some(crate::qdq::signal_energy(&t.data).to_bits()),
                "{len}"
            );
            // `Σx` (by its definition, `finite_sum`) after a scan without it: a pass of its own.
            let sum = finite_sum(&t.data).to_bits();
            assert_eq!(scanned(&t.data).sum.to_bits(), sum, "{len}");
            drop(_shared);
            assert_eq!(
                scan::<true>(&t.data).sum.to_bits(),
                sum,
                "{len}: unregistered"
            );
            assert_eq!(scan::<false>(&t.data).sum, 0.0, "{len}: not summed");
            // Asked first, `Σx` is summed in the scan, which the observers then reuse.
            let _shared = SharedStats::share(&[&t]);
            let first = scanned(&t.data);
            assert_eq!(first.sum.to_bits(), sum, "{len}: summed in the scan");
            assert_eq!(bits(first.range), bits(finite_min_max(&t.data)), "{len}");
            assert_eq!(first.counts, nonfinite(&t.data), "{len}");
        }
    }

    #[test]
    fn a_search_is_computed_once_per_key_while_registered() {
        let t = Tensor::from_vec((0..100).map(|i| i as f32).collect());
        let runs = std::sync::atomic::AtomicUsize::new(0);
        let search = |key: &str, value: u32| {
            shared_search(&t.data, key.to_string(), || {
                runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if value == 0 {
                    Err(crate::error::Error::input("no search"))
                } else {
                    Ok(value)
                }
            })
        };
        {
            let _scope = SharedStats::share(&[&t]);
            assert_eq!(*search("a", 7).unwrap(), 7);
            assert_eq!(*search("a", 8).unwrap(), 7, "the first outcome is kept");
            assert_eq!(*search("b", 9).unwrap(), 9);
            assert!(search("c", 0).is_err());
            assert!(search("c", 1).is_err(), "an error is an outcome too");
            // The same key for another type of value is another search.
            let other = shared_search(&t.data, "a".to_string(), || Ok(1.5f64)).unwrap();
            assert_eq!(*other, 1.5);
            assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 3);
        }
        // Unregistered data: computed at every call.
        assert_eq!(*search("a", 5).unwrap(), 5);
        assert_eq!(*search("a", 6).unwrap(), 6);
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 5);
    }
}
