//! One fused pass per observer: quantize–dequantize and measure the error together, chunk by
//! chunk, with no full-size temporary.
//!
//! An observer that can quantize element by element offers a [`QdqKernel`] for given qparams
//! (see [`crate::observer::ObserverKind::qdq_kernel`]): it quantize–dequantizes a piece of the
//! tensor into a small stack tile, exactly as its `fake_quantize` does, and adds the error to an
//! [`Accumulator`]. [`measure_kernel`] runs it over [`crate::parallel::CHUNK`]-sized pieces in
//! parallel and merges them in order. Observers without a kernel keep the two-step path
//! ([`measure_pair`]: `fake_quantize`, then the same chunked metrics), which gives the same bits
//! when the dequantized values are the same.
//!
//! The generic kernels [`PerTensor`] and [`PerChannel`] take the framework's own per-element
//! arithmetic as a closure (PyTorch's multiply by the float32 inverse scale, Horizon's rounding
//! modes, …); their loops are written without branches so that LLVM vectorises them.

mod metrics;

pub(crate) use metrics::signal_term;
pub use metrics::{bounds_f32, signal_energy_of_piece, Accumulator, BlockMetrics};

use crate::formats::blocks::BlockLayout;
use crate::parallel;
use crate::qparams::QParams;
use crate::quant::{block_layout, ChannelIndexer};
use crate::slice_map::SliceMap;
use crate::tensor::Tensor;

/// Elements quantize–dequantized into one stack tile before they are measured.
const TILE: usize = 256;

/// A quantize–dequantize bound to one set of qparams and one tensor shape: it measures the
/// error as it goes ([`QdqKernel::measure`]) or gives the values ([`QdqKernel::apply`]), with
/// the same per-element map either way.
pub trait QdqKernel: Send + Sync {
    /// Quantize–dequantize `x`, the elements `start..start + x.len()` of the tensor in C order,
    /// and add their error to `acc`.
    fn measure(&self, start: usize, x: &[f32], acc: &mut Accumulator);

    /// Quantize–dequantize `x`, the elements `start..start + x.len()` of the tensor in C order,
    /// into `out` (of the same length).
    fn apply(&self, start: usize, x: &[f32], out: &mut [f32]);
}

/// The quantize–dequantize of all of `x` by `kernel`, in [`crate::parallel::CHUNK`]-sized
/// pieces (in parallel natively): what [`crate::observer::ObserverKind::fake_quantize`] gives
/// by default.
pub fn fake_quantize(x: &Tensor, kernel: &dyn QdqKernel) -> Tensor {
    let mut out = vec![0.0f32; x.data.len()];
    parallel::for_chunks_mut(&x.data, &mut out, |start, piece, out| {
        kernel.apply(start, piece, out)
    });
    x.with_data(out)
}

/// `y[k] = f(x[k])` for a run: a plain loop, which LLVM's loop vectoriser turns into one
/// vector operation per step of the map at the widest width compiled for (chunks of eight
/// with a fixed trip count, tried before, were packed worse: shuffles, even gathers at 16).
#[inline(always)]
fn map_run(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    for (o, &v) in y.iter_mut().zip(x) {
        *o = f(v);
    }
}

/// The two loops of a generic kernel ([`PerTensor`], [`PerChannel`], [`PerBlock`]): `run`
/// measures, `fill` writes the values, both with the kernel's one element map.
trait Loops {
    fn run(&self, start: usize, x: &[f32], acc: &mut Accumulator);
    fn fill(&self, start: usize, x: &[f32], out: &mut [f32]);
}

/// [`Loops::run`], compiled for the widest vectors the CPU has ([`crate::simd`]).
#[inline(always)]
fn dispatch_run<K: Loops>(kernel: &K, start: usize, x: &[f32], acc: &mut Accumulator) {
    crate::simd::with_wide_vectors_on(
        kernel,
        #[inline(always)]
        |kernel| kernel.run(start, x, acc),
    )
}

/// [`Loops::fill`], compiled like [`dispatch_run`].
#[inline(always)]
fn dispatch_fill<K: Loops>(kernel: &K, start: usize, x: &[f32], out: &mut [f32]) {
    crate::simd::with_wide_vectors_on(
        kernel,
        #[inline(always)]
        |kernel| kernel.fill(start, x, out),
    )
}

/// Every slice's representable range as the float32 bounds the metrics compare with
/// ([`bounds_f32`]), converted once so that the per-element loops read two arrays. A slice
/// beyond them has no range (`±∞`), as [`bounds_f32`] gives it.
struct SliceBounds {
    lo: Vec<f32>,
    hi: Vec<f32>,
}

impl SliceBounds {
    fn new(q: &QParams) -> Self {
        Self::from_ranges(q.representable_ranges())
    }

    fn from_ranges(ranges: impl IntoIterator<Item = Option<(f64, f64)>>) -> Self {
        let (lo, hi) = ranges
            .into_iter()
            .map(|range| {
                let (lo, hi) = range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
                bounds_f32(lo, hi)
            })
            .unzip();
        SliceBounds { lo, hi }
    }

    #[inline(always)]
    fn of(&self, slice: usize) -> (f32, f32) {
        match (self.lo.get(slice), self.hi.get(slice)) {
            (Some(&lo), Some(&hi)) => (lo, hi),
            _ => (f32::NEG_INFINITY, f32::INFINITY),
        }
    }
}

/// `Σx²` of the finite values of `data` in the pieces and lanes of [`measure_kernel`] and
/// [`measure_pair`]: the [`BlockMetrics::sum_sq_signal`] they compute, bit for bit.
pub fn signal_energy(data: &[f32]) -> f64 {
    let pieces = parallel::map_chunks(data, |_, piece| {
        crate::simd::with_wide_vectors(
            #[inline(always)]
            || signal_energy_of_piece(piece),
        )
    });
    pieces.iter().fold(0.0, |total, &piece| total + piece)
}

/// How the pieces of `data` are measured: fresh accumulators for it, and the tensor's `Σx²`
/// when it is shared ([`crate::shared_stats`]: computed once per tensor, so the accumulators
/// leave it out).
struct Measuring {
    all_finite: bool,
    shared_signal: Option<f64>,
}

impl Measuring {
    fn of(data: &[f32]) -> Self {
        Measuring {
            all_finite: crate::shared_stats::nonfinite(data).total() == 0,
            shared_signal: crate::shared_stats::signal_energy(data),
        }
    }

    /// An accumulator for one piece: without the finite test when every value is finite,
    /// without `Σx²` when it is shared.
    fn fresh(&self) -> Accumulator {
        let acc = if self.all_finite {
            Accumulator::all_finite()
        } else {
            Accumulator::default()
        };
        if self.shared_signal.is_some() {
            acc.without_signal()
        } else {
            acc
        }
    }

    /// The pieces merged in order, with the shared `Σx²`.
    fn total(&self, pieces: &[BlockMetrics]) -> BlockMetrics {
        let mut total = BlockMetrics::merged(pieces);
        if let Some(signal) = self.shared_signal {
            total.sum_sq_signal = signal;
        }
        total
    }
}

/// Error metrics of `kernel` over `data`, in parallel pieces merged in order.
pub fn measure_kernel(data: &[f32], kernel: &dyn QdqKernel) -> BlockMetrics {
    let measuring = Measuring::of(data);
    let pieces = parallel::map_chunks(data, |start, piece| {
        let mut acc = measuring.fresh();
        kernel.measure(start, piece, &mut acc);
        acc.finish()
    });
    measuring.total(&pieces)
}

/// [`measure_kernel`] of every kernel of `kernels` over the same `data`, in one pass: each
/// piece is read from memory once and measured by every kernel while it is in cache. Each
/// kernel's metrics are the bits [`measure_kernel`] gives it alone (the same pieces, lanes and
/// order of merging).
pub fn measure_kernels(data: &[f32], kernels: &[&dyn QdqKernel]) -> Vec<BlockMetrics> {
    let measuring = Measuring::of(data);
    let pieces = parallel::map_chunks(data, |start, piece| {
        kernels
            .iter()
            .map(|kernel| {
                let mut acc = measuring.fresh();
                kernel.measure(start, piece, &mut acc);
                acc.finish()
            })
            .collect::<Vec<_>>()
    });
    (0..kernels.len())
        .map(|k| {
            let column: Vec<BlockMetrics> = pieces.iter().map(|p| p[k]).collect();
            measuring.total(&column)
        })
        .collect()
}

/// Which slice (and so which representable range) each element of a tensor belongs to.
#[derive(Debug, Clone)]
pub enum Slicing {
    /// One slice: the whole tensor.
    Tensor,
    /// Slices as a [`SliceMap`] gives them.
    Mapped(SliceMap),
    /// One slice per index along an axis.
    Channel(ChannelIndexer),
    /// One slice per block of a [`BlockLayout`].
    Block(BlockLayout),
    /// Consecutive runs of this many elements of the flat tensor (bitsandbytes' blocks, ggml's
    /// blocks and sub-blocks).
    Flat(usize),
}

impl Slicing {
    /// The slice of element `i` (C order).
    #[inline(always)]
    pub fn slice_of(&self, i: usize) -> usize {
        match self {
            Slicing::Tensor => 0,
            Slicing::Mapped(map) => map.slice_of(i),
            Slicing::Channel(ix) => ix.channel(i),
            Slicing::Block(layout) => layout.block_of(i),
            Slicing::Flat(size) => i / (*size).max(1),
        }
    }

    /// `r` when slice `k` is exactly elements `k·r … k·r + r − 1` of a tensor of `len`
    /// elements (per tensor, per group of a row, flat blocks), so that a loop can take each
    /// run's slice once rather than each element's.
    pub fn run_length(&self, len: usize) -> Option<usize> {
        match self {
            Slicing::Tensor => Some(len.max(1)),
            Slicing::Mapped(map) => map.run_length(len),
            Slicing::Flat(size) => Some((*size).max(1)),
            Slicing::Channel(_) | Slicing::Block(_) => None,
        }
    }
}

/// The representable range of every element: the one definition of "clipped" (an element
/// `x < lo` or `x > hi` of its slice) for observers and codecs alike.
pub struct SliceRanges {
    slicing: Slicing,
    bounds: SliceBounds,
}

impl SliceRanges {
    /// Slices cut by `slicing`, slice `k` with range `ranges[k]` (`None`, or a slice beyond
    /// them: no range, never clipped).
    pub fn new(slicing: Slicing, ranges: impl IntoIterator<Item = Option<(f64, f64)>>) -> Self {
        SliceRanges {
            slicing,
            bounds: SliceBounds::from_ranges(ranges),
        }
    }

    /// The slices of `q` on a tensor of `shape`: per element's slice as a [`SliceMap`] in
    /// `q.extra` gives it, per block as [`block_layout`] reads it, per channel along `q.axis`,
    /// or per tensor.
    pub fn of_qparams(q: &QParams, shape: &[usize]) -> Self {
        let slicing = if let Some(map) = SliceMap::from_extra(&q.extra) {
            Slicing::Mapped(map)
        } else if let Some(layout) = block_layout(q, shape) {
            Slicing::Block(layout)
        } else {
            match q.axis {
                Some(axis) if axis < shape.len() => {
                    Slicing::Channel(ChannelIndexer::new(shape, axis))
                }
                _ => Slicing::Tensor,
            }
        };
        SliceRanges {
            slicing,
            bounds: SliceBounds::new(q),
        }
    }
}

impl SliceRanges {
    /// The representable range `(lo, hi)` of element `i`'s slice (±∞ for a slice without one).
    pub fn of_element(&self, i: usize) -> (f32, f32) {
        self.bounds.of(self.slicing.slice_of(i))
    }

    /// The ranges of elements `at …` into `lo` and `hi` ([`of_element`](Self::of_element) of
    /// each), a run at a time when slices are consecutive runs of `run` elements.
    fn fill(&self, run: Option<usize>, at: usize, lo: &mut [f32], hi: &mut [f32]) {
        let Some(run) = run else {
            for (j, (lo, hi)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                (*lo, *hi) = self.of_element(at + j);
            }
            return;
        };
        for (slice, positions) in crate::slice_map::runs(at, lo.len(), run) {
            let (l, h) = self.bounds.of(slice);
            lo[positions.clone()].fill(l);
            hi[positions].fill(h);
        }
    }
}

/// Error metrics of `y`, the quantize–dequantize of `x`, against the ranges of `ranges`, in the
/// same pieces and lanes as [`measure_kernel`].
pub fn measure_ranges(x: &[f32], y: &[f32], ranges: &SliceRanges) -> BlockMetrics {
    let n = x.len().min(y.len());
    let (xs, ys) = (&x[..n], &y[..n]);
    let measuring = Measuring::of(xs);
    let run = ranges.slicing.run_length(n);
    let pieces = parallel::map_chunks(xs, |start, piece| {
        let mut acc = measuring.fresh();
        let y = &ys[start..start + piece.len()];
        if let Slicing::Tensor = ranges.slicing {
            let (lo, hi) = ranges.bounds.of(0);
            acc.add_f32(piece, y, lo, hi);
        } else {
            let mut lo = [0.0f32; TILE];
            let mut hi = [0.0f32; TILE];
            for (t, (xt, yt)) in piece.chunks(TILE).zip(y.chunks(TILE)).enumerate() {
                let (lo, hi) = (&mut lo[..xt.len()], &mut hi[..xt.len()]);
                ranges.fill(run, start + t * TILE, lo, hi);
                acc.add_each(xt, yt, lo, hi);
            }
        }
        acc.finish()
    });
    measuring.total(&pieces)
}

/// Error metrics of an already dequantized `dq` of `x` under `q` (slices as
/// [`SliceRanges::of_qparams`] cuts them), in the same pieces and lanes as [`measure_kernel`].
pub fn measure_pair(x: &Tensor, dq: &Tensor, q: &QParams) -> BlockMetrics {
    measure_ranges(&x.data, &dq.data, &SliceRanges::of_qparams(q, &x.shape))
}

/// One element map for the whole tensor (per-tensor qparams) and one representable range.
pub struct PerTensor<F> {
    map: F,
    lo: f32,
    hi: f32,
}

impl<F: Fn(f32) -> f32 + Send + Sync> PerTensor<F> {
    /// The kernel quantize–dequantizing with `map` and measuring clipping against slice 0 of
    /// `q`.
    pub fn new(q: &QParams, map: F) -> Self {
        Self::with_range(q.representable_range(0), map)
    }

    /// The kernel quantize–dequantizing with `map` and measuring clipping against `range`
    /// (`None`: never clipped).
    pub fn with_range(range: Option<(f64, f64)>, map: F) -> Self {
        let (lo, hi) = range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        let (lo, hi) = bounds_f32(lo, hi);
        PerTensor { map, lo, hi }
    }
}

impl<F: Fn(f32) -> f32 + Send + Sync> Loops for PerTensor<F> {
    #[inline(always)]
    fn run(&self, _start: usize, x: &[f32], acc: &mut Accumulator) {
        let mut y = [0.0f32; TILE];
        for xt in x.chunks(TILE) {
            let yt = &mut y[..xt.len()];
            map_run(xt, yt, &self.map);
            acc.add_f32(xt, yt, self.lo, self.hi);
        }
    }

    #[inline(always)]
    fn fill(&self, _start: usize, x: &[f32], out: &mut [f32]) {
        map_run(x, out, &self.map);
    }
}

impl<F: Fn(f32) -> f32 + Send + Sync> QdqKernel for PerTensor<F> {
    fn measure(&self, start: usize, x: &[f32], acc: &mut Accumulator) {
        dispatch_run(self, start, x, acc)
    }

    fn apply(&self, start: usize, x: &[f32], out: &mut [f32]) {
        dispatch_fill(self, start, x, out)
    }
}

/// Per-channel parameters `P` along one axis, with the element map `map(x, &P)`.
///
/// The loops follow the layout: for an axis with trailing elements, each run of elements with
/// the same channel uses one broadcast parameter; for the last axis, each row is zipped with the
/// parameter array, so neither needs a division per element.
pub struct PerChannel<P, F> {
    params: Vec<P>,
    lo: Vec<f32>,
    hi: Vec<f32>,
    inner: usize,
    map: F,
}

impl<P: Copy + Send + Sync, F: Fn(f32, &P) -> f32 + Send + Sync> PerChannel<P, F> {
    /// The kernel for `shape` with channels along `axis` (which must be in range and have
    /// `params.len()` channels, else `None`), clipping measured against each channel of `q`.
    pub fn new(q: &QParams, shape: &[usize], axis: usize, params: Vec<P>, map: F) -> Option<Self> {
        let ranges = (0..params.len()).map(|c| q.representable_range(c));
        Self::with_ranges(ranges, shape, axis, params, map)
    }

    /// The kernel for `shape` with channels along `axis` (in range, with `params.len()`
    /// channels, else `None`), clipping measured against channel `c`'s entry of `ranges`.
    pub fn with_ranges(
        ranges: impl IntoIterator<Item = Option<(f64, f64)>>,
        shape: &[usize],
        axis: usize,
        params: Vec<P>,
        map: F,
    ) -> Option<Self> {
        if axis >= shape.len() || shape[axis] != params.len() || params.is_empty() {
            return None;
        }
        let bounds = SliceBounds::from_ranges(ranges);
        let (lo, hi) = (0..params.len()).map(|c| bounds.of(c)).unzip();
        Some(PerChannel {
            params,
            lo,
            hi,
            inner: shape[axis + 1..].iter().product::<usize>().max(1),
            map,
        })
    }
}

impl<P: Copy + Send + Sync, F: Fn(f32, &P) -> f32 + Send + Sync> Loops for PerChannel<P, F> {
    #[inline(always)]
    fn run(&self, start: usize, x: &[f32], acc: &mut Accumulator) {
        let channels = self.params.len();
        let mut y = [0.0f32; TILE];
        let mut done = 0;
        while done < x.len() {
            let i = start + done;
            if self.inner == 1 {
                // Channels are the last axis: zip a row's elements with the parameters.
                let c = i % channels;
                let run = (channels - c).min(x.len() - done).min(TILE);
                let (xt, yt) = (&x[done..done + run], &mut y[..run]);
                for ((o, &v), p) in yt.iter_mut().zip(xt).zip(&self.params[c..c + run]) {
                    *o = (self.map)(v, p);
                }
                acc.add_each(xt, yt, &self.lo[c..c + run], &self.hi[c..c + run]);
                done += run;
            } else {
                // A run of elements of one channel: broadcast its parameter.
                let c = (i / self.inner) % channels;
                let run = (self.inner - i % self.inner).min(x.len() - done).min(TILE);
                let p = self.params[c];
                let (xt, yt) = (&x[done..done + run], &mut y[..run]);
                map_run(xt, yt, |v| (self.map)(v, &p));
                acc.add_f32(xt, yt, self.lo[c], self.hi[c]);
                done += run;
            }
        }
    }

    /// The values of `run`, in the same runs, written to `out`.
    #[inline(always)]
    fn fill(&self, start: usize, x: &[f32], out: &mut [f32]) {
        let channels = self.params.len();
        let mut done = 0;
        while done < x.len() {
            let i = start + done;
            if self.inner == 1 {
                let c = i % channels;
                let run = (channels - c).min(x.len() - done);
                let (xt, yt) = (&x[done..done + run], &mut out[done..done + run]);
                for ((o, &v), p) in yt.iter_mut().zip(xt).zip(&self.params[c..c + run]) {
                    *o = (self.map)(v, p);
                }
                done += run;
            } else {
                let c = (i / self.inner) % channels;
                let run = (self.inner - i % self.inner).min(x.len() - done);
                let p = self.params[c];
                let (xt, yt) = (&x[done..done + run], &mut out[done..done + run]);
                map_run(xt, yt, |v| (self.map)(v, &p));
                done += run;
            }
        }
    }
}

impl<P: Copy + Send + Sync, F: Fn(f32, &P) -> f32 + Send + Sync> QdqKernel for PerChannel<P, F> {
    fn measure(&self, start: usize, x: &[f32], acc: &mut Accumulator) {
        dispatch_run(self, start, x, acc)
    }

    fn apply(&self, start: usize, x: &[f32], out: &mut [f32]) {
        dispatch_fill(self, start, x, out)
    }
}

/// Per-block parameters `P` (blocks along one axis, [`BlockLayout`]), with the element map
/// `map(x, &P)`.
///
/// When the blocks run along the last axis, each block is a run of consecutive elements with one
/// broadcast parameter; along another axis consecutive elements belong to different rows, and
/// each element looks its block up.
pub struct PerBlock<P, F> {
    params: Vec<P>,
    bounds: SliceBounds,
    layout: BlockLayout,
    map: F,
}

impl<P: Copy + Send + Sync, F: Fn(f32, &P) -> f32 + Send + Sync> PerBlock<P, F> {
    /// The kernel for tensors of `shape` cut into the blocks of `layout`, one parameter each;
    /// `None` unless `layout` is the block layout `q` declares for `shape` (the one the metrics
    /// measure clipping against, [`block_layout`]) and `params` has one entry per block.
    pub fn new(
        q: &QParams,
        shape: &[usize],
        layout: BlockLayout,
        params: Vec<P>,
        map: F,
    ) -> Option<Self> {
        if block_layout(q, shape).as_ref() != Some(&layout) {
            return None;
        }
        Self::with_ranges(q.representable_ranges(), layout, params, map)
    }

    /// The kernel for the blocks of `layout`, one parameter each (else `None`), clipping
    /// measured against block `b`'s entry of `ranges`.
    pub fn with_ranges(
        ranges: impl IntoIterator<Item = Option<(f64, f64)>>,
        layout: BlockLayout,
        params: Vec<P>,
        map: F,
    ) -> Option<Self> {
        if params.len() != layout.num_blocks() {
            return None;
        }
        Some(PerBlock {
            params,
            bounds: SliceBounds::from_ranges(ranges),
            layout,
            map,
        })
    }
}

impl<P: Copy + Send + Sync, F: Fn(f32, &P) -> f32 + Send + Sync> Loops for PerBlock<P, F> {
    #[inline(always)]
    fn run(&self, start: usize, x: &[f32], acc: &mut Accumulator) {
        let mut y = [0.0f32; TILE];
        let mut done = 0;
        while done < x.len() {
            let i = start + done;
            if let Some((b, run)) = self.layout.contiguous_run(i) {
                // One block's run: broadcast its parameter.
                let run = run.min(x.len() - done).min(TILE);
                let p = self.params[b];
                let (xt, yt) = (&x[done..done + run], &mut y[..run]);
                map_run(xt, yt, |v| (self.map)(v, &p));
                let (lo, hi) = self.bounds.of(b);
                acc.add_f32(xt, yt, lo, hi);
                done += run;
            } else {
                let run = (x.len() - done).min(TILE);
                let mut lo = [0.0f32; TILE];
                let mut hi = [0.0f32; TILE];
                let xt = &x[done..done + run];
                for (j, &v) in xt.iter().enumerate() {
                    let b = self.layout.block_of(i + j);
                    y[j] = (self.map)(v, &self.params[b]);
                    (lo[j], hi[j]) = self.bounds.of(b);
                }
                acc.add_each(xt, &y[..run], &lo[..run], &hi[..run]);
                done += run;
            }
        }
    }

    /// The values of `run`, in the same runs, written to `out`.
    #[inline(always)]
    fn fill(&self, start: usize, x: &[f32], out: &mut [f32]) {
        let mut done = 0;
        while done < x.len() {
            let i = start + done;
            if let Some((b, run)) = self.layout.contiguous_run(i) {
                let run = run.min(x.len() - done);
                let p = self.params[b];
                let (xt, yt) = (&x[done..done + run], &mut out[done..done + run]);
                map_run(xt, yt, |v| (self.map)(v, &p));
                done += run;
            } else {
                let run = (x.len() - done).min(TILE);
                let (xt, yt) = (&x[done..done + run], &mut out[done..done + run]);
                for (j, (o, &v)) in yt.iter_mut().zip(xt).enumerate() {
                    *o = (self.map)(v, &self.params[self.layout.block_of(i + j)]);
                }
                done += run;
            }
        }
    }
}

impl<P: Copy + Send + Sync, F: Fn(f32, &P) -> f32 + Send + Sync> QdqKernel for PerBlock<P, F> {
    fn measure(&self, start: usize, x: &[f32], acc: &mut Accumulator) {
        dispatch_run(self, start, x, acc)
    }

    fn apply(&self, start: usize, x: &[f32], out: &mut [f32]) {
        dispatch_fill(self, start, x, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qparams::ZeroPoint;

    fn affine(scale: Vec<f32>, zp: Vec<i64>, axis: Option<usize>) -> QParams {
        let mut q = QParams::int(scale, ZeroPoint::Int(zp), -8, 7, vec![], vec![]);
        q.axis = axis;
        q
    }

    fn data(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i as f32) * 0.731).sin() * 9.0).collect()
    }

    /// Filling a tile's ranges a run at a time gives each element's own slice range, for
    /// groups of a row (a slice map), flat blocks and the whole tensor, at any offset.
    #[test]
    fn ranges_filled_by_runs_are_each_elements_range() {
        let shape = [6, 40];
        let ranges = |k: usize| Some((-(k as f64) - 1.0, k as f64 * 0.5 + 1.0));
        for slicing in [
            Slicing::Mapped(SliceMap::from_blocks(&shape, &[1, 8])),
            Slicing::Flat(16),
            Slicing::Tensor,
        ] {
            let run = slicing.run_length(240);
            assert!(run.is_some());
            let r = SliceRanges::new(slicing, (0..30).map(ranges));
            for (at, len) in [(0, 240), (3, 50), (17, 64), (200, 40), (239, 1)] {
                let (mut lo, mut hi) = (vec![0.0; len], vec![0.0; len]);
                r.fill(run, at, &mut lo, &mut hi);
                let want: Vec<(f32, f32)> = (at..at + len).map(|i| r.of_element(i)).collect();
                let got: Vec<(f32, f32)> = lo.into_iter().zip(hi).collect();
                assert_eq!(got, want, "{at} {len}");
            }
        }
    }

    fn reference(x: &[f32], f: impl Fn(usize, f32) -> f32) -> Vec<f32> {
        x.iter().enumerate().map(|(i, &v)| f(i, v)).collect()
    }

    #[test]
    fn per_tensor_kernel_equals_the_two_step_path() {
        let q = affine(vec![0.5], vec![1], None);
        let map = |v: f32| ((v * 2.0).round_ties_even().clamp(-9.0, 6.0) - 1.0) * 0.5;
        let x = Tensor::from_vec(data(3 * parallel::CHUNK + 77));
        let dq = Tensor::from_vec(reference(&x.data, |_, v| map(v)));
        let kernel = PerTensor::new(&q, map);
        let fused = measure_kernel(&x.data, &kernel);
        assert_eq!(fused, measure_pair(&x, &dq, &q));
        assert_eq!(fake_quantize(&x, &kernel).data, dq.data);
        assert!(fused.clipped > 0 && fused.count == x.len() as u64);
    }

    #[test]
    fn per_channel_kernel_equals_the_two_step_path_on_every_axis() {
        for (shape, axis) in [(vec![3, 5, 7], 0), (vec![3, 5, 7], 1), (vec![300, 700], 1)] {
            let n: usize = shape.iter().product();
            let channels = shape[axis];
            let scales: Vec<f32> = (0..channels).map(|c| 0.25 + c as f32 * 0.1).collect();
            let q = affine(scales.clone(), vec![0; channels], Some(axis));
            let x = Tensor::new(shape.clone(), data(n)).unwrap();
            let map = |v: f32, s: &f32| (v / s).round_ties_even().clamp(-8.0, 7.0) * s;
            let ix = ChannelIndexer::new(&shape, axis);
            let dq = Tensor::new(
                shape.clone(),
                reference(&x.data, |i, v| map(v, &scales[ix.channel(i)])),
            )
            .unwrap();
            let kernel = PerChannel::new(&q, &shape, axis, scales.clone(), map).unwrap();
            assert_eq!(fake_quantize(&x, &kernel).data, dq.data, "{shape:?}");
            assert_eq!(
                measure_kernel(&x.data, &kernel),
                measure_pair(&x, &dq, &q),
                "{shape:?}"
            );
        }
        let q = affine(vec![1.0; 4], vec![0; 4], Some(0));
        assert!(PerChannel::new(&q, &[3, 2], 0, vec![1.0f32; 4], |v, _| v).is_none());
    }

    #[test]
    fn per_block_kernel_equals_the_two_step_path_on_every_axis() {
        for (shape, axis, block) in [
            (vec![3usize, 64], 1usize, 32usize),
            (vec![3, 70], 1, 32),
            (vec![6, 5, 7], 0, 4),
            (vec![300, 24, 3], 1, 8),
            (vec![1024, 96], 1, 32),
        ] {
            let n: usize = shape.iter().product();
            let layout = BlockLayout::new(&shape, axis as i64, block).unwrap();
            let blocks = layout.num_blocks();
            let scales: Vec<f32> = (0..blocks).map(|b| 0.25 + (b % 13) as f32 * 0.1).collect();
            let mut q = affine(scales.clone(), vec![0; blocks], None);
            q.extra.insert("block_axis".into(), axis.into());
            q.extra.insert("block_size".into(), block.into());
            let x = Tensor::new(shape.clone(), data(n)).unwrap();
            let map = |v: f32, s: &f32| (v / s).round_ties_even().clamp(-8.0, 7.0) * s;
            let dq = Tensor::new(
                shape.clone(),
                reference(&x.data, |i, v| map(v, &scales[layout.block_of(i)])),
            )
            .unwrap();
            let kernel = PerBlock::new(&q, &shape, layout.clone(), scales.clone(), map).unwrap();
            let fused = measure_kernel(&x.data, &kernel);
            assert_eq!(fused, measure_pair(&x, &dq, &q), "{shape:?} axis {axis}");
            assert_eq!(
                fake_quantize(&x, &kernel).data,
                dq.data,
                "{shape:?} axis {axis}"
            );
            assert!(fused.clipped > 0);
            let other = BlockLayout::new(&shape, axis as i64, block * 2).unwrap();
            assert!(PerBlock::new(&q, &shape, other, scales.clone(), map).is_none());
        }
    }
}
