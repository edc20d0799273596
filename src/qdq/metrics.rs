//! Error metrics of a quantize–dequantize, accumulated in a fixed order so that the result is
//! the same bits however the work is split between threads.
//!
//! For the finite elements `x` and their quantize–dequantize `x̂` (float32, widened exactly to
//! float64), with `e = |x − x̂|`:
//!
//! * `mse = Σe² / n`, `sqnr_db = 10·log10(Σx² / Σe²)` (none when either sum is 0),
//! * `max_abs_err = max e` (NaN as soon as one `e` is NaN: a lane keeps the largest `e` that is
//!   not NaN, and a lane whose `Σe²` is NaN, which only a NaN `e` makes, ends with NaN),
//! * `clipped_fraction = #{x outside the representable range [lo, hi]} / n`.
//!
//! **Order of the sums.** A tensor is cut into pieces of [`crate::parallel::CHUNK`] elements
//! (boundaries fixed by the element index alone). Within a piece, element `i` goes to lane
//! `i mod 8` of an [`Accumulator`] (eight float64 partial sums, so the loop vectorises); the
//! lanes are added in order 0..8 at the end of the piece ([`Accumulator::finish`]), and the
//! pieces' [`BlockMetrics`] are merged in index order. Nothing depends on the thread count.
//!
//! `Σx²` depends on the data alone: [`signal_energy_of_piece`] computes it in the same lanes, so
//! a tensor's total can be computed once and shared by every observer measured on it (an
//! accumulator made [`Accumulator::without_signal`] then leaves it out).

use crate::quant::QdqMetrics;

/// Lanes of the partial sums (one AVX2 register pair of float64, or four SSE2/SIMD128 ones).
const LANES: usize = 8;

/// Metrics of a piece of data, reduced: what pieces are merged with.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BlockMetrics {
    pub sum_sq_err: f64,
    pub sum_sq_signal: f64,
    pub max_abs_err: f64,
    pub clipped: u64,
    pub count: u64,
}

/// `new` replaces `old` as the maximum error when larger or NaN (so NaN sticks): how finished
/// lanes and pieces are merged.
#[inline(always)]
fn max_err(old: f64, new: f64) -> f64 {
    if new > old || new.is_nan() {
        new
    } else {
        old
    }
}

impl BlockMetrics {
    /// Add the metrics of the piece that follows this one.
    pub fn merge(&mut self, next: &BlockMetrics) {
        self.sum_sq_err += next.sum_sq_err;
        self.sum_sq_signal += next.sum_sq_signal;
        self.max_abs_err = max_err(self.max_abs_err, next.max_abs_err);
        self.clipped += next.clipped;
        self.count += next.count;
    }

    /// Pieces merged in order.
    pub fn merged<'a>(pieces: impl IntoIterator<Item = &'a BlockMetrics>) -> BlockMetrics {
        let mut total = BlockMetrics::default();
        for piece in pieces {
            total.merge(piece);
        }
        total
    }

    /// The metrics.
    pub fn finish(&self) -> QdqMetrics {
        let n = self.count.max(1) as f64;
        let sqnr_db = (self.sum_sq_err > 0.0 && self.sum_sq_signal > 0.0)
            .then(|| crate::quant::sqnr_db(self.sum_sq_signal, self.sum_sq_err));
        QdqMetrics {
            mse: self.sum_sq_err / n,
            max_abs_err: self.max_abs_err,
            sqnr_db,
            clipped_fraction: self.clipped as f64 / n,
            count: self.count as usize,
        }
    }
}

/// Eight-lane partial sums over one piece of a tensor. Element `k` of the piece (counted from
/// the piece's start, however the piece is fed) always lands in lane `k mod 8`.
#[derive(Debug, Clone)]
pub struct Accumulator {
    sum_sq_err: [f64; LANES],
    sum_sq_signal: [f64; LANES],
    max_abs_err: [f64; LANES],
    clipped: [u64; LANES],
    count: [u64; LANES],
    /// Elements added so far.
    position: usize,
    /// Every element fed is finite (see [`Accumulator::all_finite`]).
    all_finite: bool,
    /// `Σx²` is accumulated (see [`Accumulator::without_signal`]).
    signal: bool,
}

/// The partial sums while a loop runs (counts in 32 bits: one call adds fewer than 2³² elements
/// per lane).
struct Lanes {
    sum_sq_err: [f64; LANES],
    sum_sq_signal: [f64; LANES],
    max_abs_err: [f64; LANES],
    clipped: [u32; LANES],
    count: [u32; LANES],
}

impl Lanes {
    /// One element into lane `k`: branch-free, so that eight of them become vector operations.
    /// `x` is outside the representable range when `x < lo` or `x > hi` (float32 bounds, see
    /// [`bounds_f32`]). With `ALL_FINITE` the caller knows every `x` is finite, and the finite
    /// test (an identity then) is left out; without `SIGNAL`, `Σx²` is.
    #[inline(always)]
    fn step<const ALL_FINITE: bool, const SIGNAL: bool>(
        &mut self,
        k: usize,
        x: f32,
        y: f32,
        lo: f32,
        hi: f32,
    ) {
        let finite = ALL_FINITE || x.is_finite();
        let xd = x as f64;
        let e = (xd - y as f64).abs();
        let m = self.max_abs_err[k];
        let outside = (x < lo) | (x > hi);
        if SIGNAL {
            self.sum_sq_signal[k] += signal_term::<ALL_FINITE>(x);
        }
        if ALL_FINITE {
            self.sum_sq_err[k] += e * e;
            self.max_abs_err[k] = larger(m, e);
            self.clipped[k] += u32::from(outside);
        } else {
            self.sum_sq_err[k] += if finite { e * e } else { 0.0 };
            self.max_abs_err[k] = if finite { larger(m, e) } else { m };
            self.clipped[k] += u32::from(finite & outside);
            self.count[k] += u32::from(finite);
        }
    }
}

impl Lanes {
    /// Eight elements, element `k` into lane `k`: [`Lanes::step`] for each, written one
    /// operation across the eight lanes at a time so that each becomes one vector operation.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lane by lane, as the vectoriser packs it
    fn group<const ALL_FINITE: bool, const SIGNAL: bool>(
        &mut self,
        x: &[f32; LANES],
        y: &[f32; LANES],
        lo: &[f32; LANES],
        hi: &[f32; LANES],
    ) {
        let mut e = [0.0f64; LANES];
        let mut keep = [true; LANES];
        for k in 0..LANES {
            e[k] = (x[k] as f64 - y[k] as f64).abs();
        }
        if !ALL_FINITE {
            for k in 0..LANES {
                keep[k] = x[k].is_finite();
            }
        }
        if SIGNAL {
            for k in 0..LANES {
                self.sum_sq_signal[k] += signal_term::<ALL_FINITE>(x[k]);
            }
        }
        for k in 0..LANES {
            self.sum_sq_err[k] += if keep[k] { e[k] * e[k] } else { 0.0 };
        }
        for k in 0..LANES {
            let m = self.max_abs_err[k];
            self.max_abs_err[k] = if keep[k] { larger(m, e[k]) } else { m };
        }
        let mut outside = [0u32; LANES];
        for k in 0..LANES {
            outside[k] = u32::from(x[k] < lo[k]) | u32::from(x[k] > hi[k]);
        }
        for k in 0..LANES {
            self.clipped[k] += outside[k] & u32::from(keep[k]);
        }
        if !ALL_FINITE {
            for k in 0..LANES {
                self.count[k] += u32::from(keep[k]);
            }
        }
    }
}

/// `new` when it is larger than `old`, else `old` (a NaN `new` is passed over): one vector
/// maximum instruction, with a shorter dependency from step to step than a NaN test would add.
/// A lane's NaN is recovered from its `Σe²` when it is finished ([`Accumulator::finish`]).
#[inline(always)]
fn larger(old: f64, new: f64) -> f64 {
    if new > old {
        new
    } else {
        old
    }
}

/// What `x` adds to `Σx²`: its square in float64, 0 when it is not finite (with `ALL_FINITE`
/// the caller knows it is).
#[inline(always)]
pub(crate) fn signal_term<const ALL_FINITE: bool>(x: f32) -> f64 {
    let xd = x as f64;
    if ALL_FINITE || x.is_finite() {
        xd * xd
    } else {
        0.0
    }
}

/// `Σx²` of the finite elements of one piece, exactly as an [`Accumulator`] fed the piece sums
/// it: element `k` into lane `k mod 8`, the lanes added in order 0..8.
#[inline(always)]
pub fn signal_energy_of_piece(piece: &[f32]) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let whole = piece.len() / LANES * LANES;
    for chunk in piece[..whole].chunks_exact(LANES) {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane += signal_term::<false>(x);
        }
    }
    for (lane, &x) in lanes.iter_mut().zip(&piece[whole..]) {
        *lane += signal_term::<false>(x);
    }
    lanes.iter().fold(0.0, |total, &lane| total + lane)
}

/// The float32 bounds `(lo', hi')` with `x < lo' ⇔ x < lo` and `x > hi' ⇔ x > hi` for every
/// float32 `x`: the least float32 `≥ lo` and the greatest `≤ hi` (NaN stays NaN: never
/// outside).
pub fn bounds_f32(lo: f64, hi: f64) -> (f32, f32) {
    (at_least(lo), -at_least(-hi))
}

/// The least float32 `≥ v` (`v` itself when representable).
fn at_least(v: f64) -> f32 {
    let f = v as f32;
    if (f as f64) >= v || f.is_nan() {
        return f;
    }
    // One step up: f < v, so f is not +inf.
    if f == 0.0 {
        f32::from_bits(1)
    } else if f > 0.0 {
        f32::from_bits(f.to_bits() + 1)
    } else {
        f32::from_bits(f.to_bits() - 1)
    }
}

impl Default for Accumulator {
    fn default() -> Self {
        Accumulator {
            sum_sq_err: [0.0; LANES],
            sum_sq_signal: [0.0; LANES],
            max_abs_err: [0.0; LANES],
            clipped: [0; LANES],
            count: [0; LANES],
            position: 0,
            all_finite: false,
            signal: true,
        }
    }
}

impl Accumulator {
    /// An accumulator for data the caller knows to be all finite (e.g. from the tensor's
    /// non-finite counts): the same sums, without the per-element finite test.
    pub fn all_finite() -> Self {
        Accumulator {
            all_finite: true,
            ..Accumulator::default()
        }
    }

    /// This accumulator without `Σx²` (its [`BlockMetrics::sum_sq_signal`] stays 0): for a caller
    /// that has the data's total already ([`signal_energy_of_piece`]).
    pub fn without_signal(self) -> Self {
        Accumulator {
            signal: false,
            ..self
        }
    }

    /// Add elements `x` and their quantize–dequantize `y`, every one with the representable
    /// range `[lo, hi]` (use `±∞` for none).
    #[inline(always)]
    pub fn add(&mut self, x: &[f32], y: &[f32], lo: f64, hi: f64) {
        let (lo, hi) = bounds_f32(lo, hi);
        self.add_f32(x, y, lo, hi);
    }

    /// [`Accumulator::add`] with bounds already converted by [`bounds_f32`].
    #[inline(always)]
    pub fn add_f32(&mut self, x: &[f32], y: &[f32], lo: f32, hi: f32) {
        self.dispatch(x, y, |_| (lo, hi));
    }

    /// [`Accumulator::add_with`] compiled for this accumulator's kind of data and sums.
    #[inline(always)]
    fn dispatch(&mut self, x: &[f32], y: &[f32], range: impl Fn(usize) -> (f32, f32)) {
        match (self.all_finite, self.signal) {
            (true, true) => self.add_with::<true, true>(x, y, range),
            (true, false) => self.add_with::<true, false>(x, y, range),
            (false, true) => self.add_with::<false, true>(x, y, range),
            (false, false) => self.add_with::<false, false>(x, y, range),
        }
    }

    /// Add elements `x`, their quantize–dequantize `y` and each element's range (`lo[j]`,
    /// `hi[j]`, converted by [`bounds_f32`]).
    #[inline(always)]
    pub fn add_each(&mut self, x: &[f32], y: &[f32], lo: &[f32], hi: &[f32]) {
        let n = x.len().min(y.len()).min(lo.len()).min(hi.len());
        self.dispatch(&x[..n], &y[..n], |j| (lo[j], hi[j]));
    }

    /// The loop shared by [`Accumulator::add`] and [`Accumulator::add_each`]: single elements
    /// up to a lane boundary, then groups of eight, then the tail. The lanes live in local
    /// variables meanwhile, so that they stay in vector registers.
    #[inline(always)]
    fn add_with<const ALL_FINITE: bool, const SIGNAL: bool>(
        &mut self,
        x: &[f32],
        y: &[f32],
        range: impl Fn(usize) -> (f32, f32),
    ) {
        let mut lanes = Lanes {
            sum_sq_err: self.sum_sq_err,
            sum_sq_signal: self.sum_sq_signal,
            max_abs_err: self.max_abs_err,
            clipped: [0; LANES],
            count: [0; LANES],
        };
        let n = x.len().min(y.len());
        let head = ((LANES - self.position % LANES) % LANES).min(n);
        for j in 0..head {
            let (lo, hi) = range(j);
            lanes.step::<ALL_FINITE, SIGNAL>((self.position + j) % LANES, x[j], y[j], lo, hi);
        }
        let body = (n - head) / LANES * LANES;
        let (xs, ys) = (&x[head..head + body], &y[head..head + body]);
        for (g, (xc, yc)) in crate::lanes::eights(xs)
            .zip(crate::lanes::eights(ys))
            .enumerate()
        {
            let mut lo = [0.0f32; LANES];
            let mut hi = [0.0f32; LANES];
            for k in 0..LANES {
                (lo[k], hi[k]) = range(head + g * LANES + k);
            }
            lanes.group::<ALL_FINITE, SIGNAL>(xc, yc, &lo, &hi);
        }
        for j in head + body..n {
            let (lo, hi) = range(j);
            lanes.step::<ALL_FINITE, SIGNAL>((j - head) % LANES, x[j], y[j], lo, hi);
        }
        self.sum_sq_err = lanes.sum_sq_err;
        self.sum_sq_signal = lanes.sum_sq_signal;
        self.max_abs_err = lanes.max_abs_err;
        for k in 0..LANES {
            self.clipped[k] += u64::from(lanes.clipped[k]);
            self.count[k] += u64::from(lanes.count[k]);
        }
        if ALL_FINITE {
            // Every element counts: lane k of this call got the elements with index ≡ k.
            for j in 0..n.min(LANES) {
                let lane = (self.position + j) % LANES;
                self.count[lane] += ((n - j).div_ceil(LANES)) as u64;
            }
        }
        self.position += n;
    }

    /// The largest error of lane `k`: NaN when one of its errors was NaN, which made its `Σe²`
    /// NaN (every other term is a square, `≥ 0` or `+∞`, and their sum is never NaN).
    fn lane_max(&self, k: usize) -> f64 {
        if self.sum_sq_err[k].is_nan() {
            f64::NAN
        } else {
            self.max_abs_err[k]
        }
    }

    /// The lanes added in order 0..8.
    pub fn finish(&self) -> BlockMetrics {
        let mut total = BlockMetrics::default();
        for k in 0..LANES {
            total.merge(&BlockMetrics {
                sum_sq_err: self.sum_sq_err[k],
                sum_sq_signal: self.sum_sq_signal[k],
                max_abs_err: self.lane_max(k),
                clipped: self.clipped[k],
                count: self.count[k],
            });
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_do_not_depend_on_how_a_piece_is_fed() {
        let x: Vec<f32> = (0..203).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let y: Vec<f32> = x.iter().map(|v| (v * 4.0).round() / 4.0).collect();
        let mut whole = Accumulator::default();
        whole.add(&x, &y, -2.5, 2.5);
        let mut split = Accumulator::default();
        for (a, b) in [(0, 3), (3, 17), (17, 200), (200, 203)] {
            split.add(&x[a..b], &y[a..b], -2.5, 2.5);
        }
        assert_eq!(whole.finish(), split.finish());
        let lo = vec![-2.5f32; 203];
        let hi = vec![2.5f32; 203];
        let mut each = Accumulator::default();
        each.add_each(&x[..5], &y[..5], &lo[..5], &hi[..5]);
        each.add_each(&x[5..], &y[5..], &lo[5..], &hi[5..]);
        assert_eq!(whole.finish(), each.finish());
        let mut finite = Accumulator::all_finite();
        finite.add(&x[..9], &y[..9], -2.5, 2.5);
        finite.add(&x[9..], &y[9..], -2.5, 2.5);
        assert_eq!(whole.finish(), finite.finish());
    }

    #[test]
    fn the_signal_energy_of_a_piece_is_the_accumulators() {
        let mut x: Vec<f32> = (0..1003).map(|i| (i as f32 * 0.37).sin() * 3e3).collect();
        for (i, bad) in [(5, f32::NAN), (17, f32::INFINITY), (400, f32::NEG_INFINITY)] {
            x[i] = bad;
        }
        let y: Vec<f32> = x.iter().map(|v| v.round()).collect();
        for len in [0, 1, 7, 8, 9, 203, 1003] {
            let (x, y) = (&x[..len], &y[..len]);
            let mut full = Accumulator::default();
            full.add(x, y, -2.5, 2.5);
            let mut without = Accumulator::default().without_signal();
            without.add(x, y, -2.5, 2.5);
            let (full, without) = (full.finish(), without.finish());
            assert_eq!(
                full.sum_sq_signal.to_bits(),
                signal_energy_of_piece(x).to_bits()
            );
            assert_eq!(without.sum_sq_signal, 0.0);
            assert_eq!(
                BlockMetrics {
                    sum_sq_signal: full.sum_sq_signal,
                    ..without
                },
                full
            );
        }
        let finite: Vec<f32> = x
            .iter()
            .map(|v| if v.is_finite() { *v } else { 1.0 })
            .collect();
        let mut acc = Accumulator::all_finite().without_signal();
        acc.add(&finite, &finite, -1.0, 1.0);
        let mut reference = Accumulator::all_finite();
        reference.add(&finite, &finite, -1.0, 1.0);
        assert_eq!(
            BlockMetrics {
                sum_sq_signal: signal_energy_of_piece(&finite),
                ..acc.finish()
            },
            reference.finish()
        );
    }

    #[test]
    fn float32_bounds_decide_like_float64_ones() {
        let cases = [
            0.1f64,
            -0.1,
            1.0,
            0.0,
            -0.0,
            1e-46,
            -1e-46,
            3.4e38,
            1e300,
            -1e300,
            f64::INFINITY,
        ];
        for &lo in &cases {
            for &hi in &cases {
                let (l, h) = bounds_f32(lo, hi);
                for x in [
                    0.1f32,
                    -0.1,
                    1.0,
                    0.0,
                    f32::from_bits(1),
                    -f32::from_bits(1),
                    f32::MAX,
                    f32::MIN,
                    0.099_999_99,
                ] {
                    assert_eq!(x < l, (x as f64) < lo, "{x} < {lo}");
                    assert_eq!(x > h, (x as f64) > hi, "{x} > {hi}");
                }
            }
        }
    }

    #[test]
    fn sums_counts_and_non_finite_values() {
        let mut acc = Accumulator::default();
        acc.add(
            &[1.0, -3.0, f32::NAN, 2.0],
            &[1.0, -2.0, 0.0, 2.5],
            -2.0,
            2.0,
        );
        let m = acc.finish();
        assert_eq!(m.count, 3);
        assert_eq!(m.clipped, 1);
        assert_eq!(m.sum_sq_err, 1.25);
        assert_eq!(m.sum_sq_signal, 14.0);
        assert_eq!(m.max_abs_err, 1.0);
        let mut acc = Accumulator::default();
        acc.add(&[1.0, 2.0, 3.0], &[1.0, f32::NAN, 3.0], -9.0, 9.0);
        assert!(acc.finish().max_abs_err.is_nan());
        let q = acc.finish().finish();
        assert_eq!(q.count, 3);
    }

    #[test]
    fn the_largest_error_is_the_sticky_nan_maximum_per_lane() {
        // Errors of every kind (NaN, +∞, zeros) at several positions, fed whole or in uneven
        // calls: each lane's maximum is `max_err` folded element by element.
        let x: Vec<f32> = (0..61).map(|i| (i as f32 * 0.71).sin() * 4.0).collect();
        for nan_at in [None, Some(0), Some(9), Some(40), Some(60)] {
            let mut y: Vec<f32> = x.iter().map(|v| v.round()).collect();
            y[13] = f32::INFINITY;
            y[22] = x[22];
            if let Some(i) = nan_at {
                y[i] = f32::NAN;
            }
            let mut want = [0.0f64; LANES];
            for (i, (&a, &b)) in x.iter().zip(&y).enumerate() {
                want[i % LANES] = max_err(want[i % LANES], (a as f64 - b as f64).abs());
            }
            for fresh in [Accumulator::default, Accumulator::all_finite] {
                for cuts in [&[61][..], &[3, 11, 12, 40, 61][..]] {
                    let mut acc = fresh();
                    let mut from = 0;
                    for &to in cuts {
                        acc.add(&x[from..to], &y[from..to], -9.0, 9.0);
                        from = to;
                    }
                    // Bit for bit, except that every NaN is one.
                    let bits = |m: f64| if m.is_nan() { None } else { Some(m.to_bits()) };
                    let got: Vec<_> = (0..LANES).map(|k| bits(acc.lane_max(k))).collect();
                    let expected: Vec<_> = want.iter().map(|&m| bits(m)).collect();
                    assert_eq!(got, expected, "NaN at {nan_at:?}, cuts {cuts:?}");
                }
            }
        }
    }
}
