//! `KLObserver` (per tensor): accumulate a histogram of `|x|`, and every `update_interval`
//! batches pick the clip that minimises a smoothed KL divergence, then the moving average.
//!
//! **Collect** (float32). The first batch after a reset bins `|x|` with
//! `histc(|x|, bins, 0, max|x|)` over `linspace(0, max|x|, bins + 1)` edges. A later batch whose
//! maximum exceeds the last edge grows the histogram at the same bin width `w`:
//! `bins = ⌈max/w⌉`, edges `arange(0, max + w, w)`; every later batch is binned over
//! `[0, last edge]` and added to the old counts.
//!
//! **Search** (`_compute_amax_entropy`, every `update_interval` steps, float64), with
//! `nbins = −qinfo(dtype).min` (128 for qint8, 32768 for qint16) and `hist[0] := hist[1]`:
//! for each `i = 128 ..= len(hist)`, P = `hist[:i]` with the tail mass added to its last bin;
//! Q = P's first `i` bins merged into `nbins` groups (`⌊j·nbins/i⌋`), each group's mass spread
//! evenly over its non-empty bins; `D_i = Σ p·ln(p/q)` with both normalised and `q += 1e-10`.
//! Horizon then sums the divergences over 9-wide windows (`j in range(len − 10)`), takes the
//! last minimum `j*`, and returns `amax = edges[j* + 128 + 4]` — the window centre, as an edge.
//! The state becomes `(−amax, amax)` (moving average after the first run) and the histogram is
//! reset. `update_interval` larger than the number of batches means no search ever runs and
//! `calculate_qparams` falls back to scale 1.0.

use super::base::{plot_state, MinMaxState};
use super::config::{ensure, BaseConfig, KlBaseArgs};
use crate::error::{Error, Result, Stage};
use crate::histogram::histc_abs;
use crate::kernels::torch::{
    add_left_aligned, arange_chunked_f32, arange_count, linspace_two_roundings, sum_f64,
};
use crate::observer::{HistogramState, ObserverKind, PlotSnapshot, QParams};
use crate::shared_stats::max_abs_ignoring_nan;
use crate::tensor::Tensor;
use serde_json::json;

/// First candidate length of the search (`start_bin`).
const START_BIN: usize = 128;
/// Width of the smoothing window (`smooth_step`).
const SMOOTH: usize = 9;
/// Largest histogram quantscope lets the collection grow to (the search is quadratic in it).
pub const MAX_HIST_BINS: usize = 1 << 16;

/// One `_compute_amax_entropy` call.
#[derive(Debug, Clone, PartialEq)]
pub struct KlRun {
    /// Histogram length and number of edges searched.
    pub hist_bins: usize,
    pub n_edges: usize,
    /// Number of quantization levels Q is merged into.
    pub quantization_nbins: usize,
    /// The chosen clip.
    pub amax: f32,
    /// `D_i` for `i = 128 ..= hist_bins`.
    pub divergences: Vec<f64>,
    /// Index of the chosen window (into the un-reversed smoothed list).
    pub window: usize,
    /// The histogram that was searched (before `hist[0] := hist[1]`) and its edges.
    pub hist: Vec<f32>,
    pub edges: Vec<f32>,
}

crate::declare_params! {
    /// Arguments of `KLObserver`. Both shape the collection and when the search runs inside
    /// `forward`.
    pub struct KlArgs {
        /// initial histogram bins of |x| (Horizon requires at least 256)
        bins: i64 = 512; int(1, MAX_HIST_BINS as i64), Data;
        /// run the KL search every N batches on the pooled histogram (N = number of batches is
        /// Horizon's advice)
        update_interval: i64 = 1; int(1, 1_000_000), Data;
    }
    include { base: KlBaseArgs }
}

/// The configuration of a `KLObserver`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KlConfig {
    pub base: BaseConfig,
    /// `bins` as constructed (the histogram restarts with it after every search).
    pub bins: usize,
    pub update_interval: usize,
}

impl KlConfig {
    /// The number of levels Q is merged into: `−qinfo(dtype).min`.
    fn levels(&self) -> usize {
        (-self.base.quant.dtype.range().0) as usize
    }
}

/// What a `KLObserver` has collected: the histogram pooled since the last search, the moving
/// average of the searched clips, and the last search (for reports).
#[derive(Debug, Clone, PartialEq)]
pub struct KlState {
    /// Current bin count (grows with the histogram, restored after each search).
    pub bins: usize,
    /// Batches pooled since the last search (`cur_step`).
    pub cur_step: usize,
    pub hist: Vec<f32>,
    pub edges: Vec<f32>,
    pub stats: MinMaxState,
    pub last_run: Option<KlRun>,
    /// Number of KL searches run so far.
    pub runs: usize,
}

impl KlState {
    /// Add one batch's `|x|` to the pooled histogram, growing it at the same bin width when the
    /// batch's maximum `x_max` of `|x|` passes the last edge.
    fn collect(&mut self, batch: &[f32], x_max: f32) -> Result<()> {
        if self.hist.is_empty() && self.edges.is_empty() {
            self.hist = histc_abs(batch, self.bins, 0.0, x_max);
            self.edges = linspace_two_roundings(0.0, x_max, self.bins + 1);
            return Ok(());
        }
        let last = *self.edges.last().unwrap_or(&0.0);
        if x_max > last {
            let width = match (self.edges.first(), self.edges.get(1)) {
                (Some(&a), Some(&b)) => b - a,
                _ => return Err(index_error(1, self.edges.len())),
            };
            let bins = (x_max / width).ceil();
            if bins.is_infinite() {
                return Err(Error::framework(
                    "OverflowError",
                    "cannot convert float infinity to integer",
                    Stage::Forward,
                ));
            }
            let end = x_max + width;
            let len = arange_count(0.0, end as f64, width as f64);
            if bins > MAX_HIST_BINS as f32 || len > MAX_HIST_BINS as f64 + 1.0 {
                return Err(Error::input(format!(
                    "the KL histogram would grow to {bins} bins of width {width:e} (this batch's max \
                     |x| = {x_max:e}); quantscope stops at {MAX_HIST_BINS}"
                )));
            }
            self.bins = bins as usize;
            self.edges = arange_chunked_f32(width, len as usize);
        }
        let hi = *self.edges.last().unwrap_or(&0.0);
        let mut hist = histc_abs(batch, self.bins, 0.0, hi);
        add_left_aligned(&mut hist, &self.hist)?;
        self.hist = hist;
        Ok(())
    }
}

/// PyTorch's message for an out-of-range index into a 1-d tensor.
fn index_error(index: usize, size: usize) -> Error {
    Error::framework(
        "IndexError",
        format!("index {index} is out of bounds for dimension 0 with size {size}"),
        Stage::Forward,
    )
}

/// `torch.special.entr`: `−x·ln x`, 0 at 0, −∞ below.
#[inline]
fn entr(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x > 0.0 {
        -x * x.ln()
    } else if x == 0.0 {
        0.0
    } else {
        f64::NEG_INFINITY
    }
}

/// `_compute_amax_entropy(hist, edges, nbins)` with Horizon's smoothing; returns the run.
pub fn compute_amax_entropy(hist: &[f32], edges: &[f32], nbins: usize) -> Result<KlRun> {
    let len = hist.len();
    if len < 2 {
        return Err(index_error(1, len));
    }
    let mut bins = hist.to_vec();
    bins[0] = bins[1];
    // Tail sums Σ bins[i:] (float32 in PyTorch; exact for counts below 2^24).
    let mut tail = vec![0.0f64; len + 1];
    for i in (0..len).rev() {
        tail[i] = tail[i + 1] + bins[i] as f64;
    }
    let mut divergences = Vec::with_capacity(len.saturating_sub(START_BIN) + 1);
    let mut p = Vec::with_capacity(len);
    let mut q = Vec::with_capacity(len);
    let mut terms = Vec::with_capacity(len);
    for i in START_BIN..=len {
        // Candidate Q: groups ⌊j·nbins/i⌋, mass averaged over the group's non-empty bins.
        q.clear();
        q.resize(i, 0.0f64);
        let mut j = 0usize;
        while j < i {
            let group = j * nbins / i;
            let start = j;
            let (mut sum, mut count) = (0.0f64, 0usize);
            while j < i && j * nbins / i == group {
                if bins[j] != 0.0 {
                    sum += bins[j] as f64;
                    count += 1;
                }
                j += 1;
            }
            if count > 0 {
                let avg = sum / count as f64;
                for t in start..j {
                    if bins[t] != 0.0 {
                        q[t] = avg;
                    }
                }
            }
        }
        // Reference P: the first i bins, the rest of the mass added to the last one.
        p.clear();
        p.extend(bins[..i].iter().map(|&b| b as f64));
        p[i - 1] = (bins[i - 1] + tail[i] as f32) as f64;
        let p_sum = sum_f64(&p);
        let q_sum = sum_f64(&q);
        terms.clear();
        terms.extend(p.iter().zip(&q).map(|(&pk, &qk)| {
            let pk = if p_sum != 0.0 { pk / p_sum } else { pk };
            let qk = (if q_sum != 0.0 { qk / q_sum } else { qk }) + 1e-10;
            -qk * entr(pk / qk)
        }));
        let d = sum_f64(&terms);
        if d.is_nan() {
            return Err(Error::framework(
                "ValueError",
                "Fatal error, kl is nan!",
                Stage::Forward,
            ));
        }
        divergences.push(d);
    }
    let windows = divergences.len().saturating_sub(SMOOTH + 1);
    if windows == 0 {
        return Err(Error::framework(
            "RuntimeError",
            "argmin(): Expected reduction dim to be specified for input.numel() == 0.",
            Stage::Forward,
        ));
    }
    // Last minimum of the window sums (argmin of the reversed list).
    let mut best = 0usize;
    let mut best_val = f64::INFINITY;
    for w in 0..windows {
        let s = sum_f64(&divergences[w..w + SMOOTH]);
        if s <= best_val || s.is_nan() {
            best = w;
            best_val = s;
        }
    }
    let index = best + START_BIN + SMOOTH / 2;
    let amax = *edges
        .get(index)
        .ok_or_else(|| index_error(index, edges.len()))?;
    Ok(KlRun {
        hist_bins: len,
        n_edges: edges.len(),
        quantization_nbins: nbins,
        amax,
        divergences,
        window: best,
        hist: hist.to_vec(),
        edges: edges.to_vec(),
    })
}

/// Horizon's `KLObserver(bins=512, update_interval=1, averaging_constant=0.01, …)`.
pub struct Kl;

impl ObserverKind for Kl {
    type Args = KlArgs;
    type Config = KlConfig;
    type State = KlState;

    /// `ObserverBase.__init__`, then the per-tensor scheme, then `bins ≥ 256`.
    fn resolve(args: &KlArgs, _unknown: &[String]) -> Result<KlConfig> {
        let base = BaseConfig::resolve(&args.base.base())?;
        base.require_per_tensor("KL observer only support per_tensor_symmetric qscheme.")?;
        ensure(args.bins >= 256, "`bins` must be greater than 256!")?;
        if args.bins as usize > MAX_HIST_BINS {
            return Err(Error::param(
                "bins",
                format!(
                    "at most {MAX_HIST_BINS} bins (the KL search is quadratic in the bin count)"
                ),
            ));
        }
        if args.update_interval < 1 {
            return Err(Error::param(
                "update_interval",
                format!(
                    "must be at least 1 (with {} Horizon never runs the KL search)",
                    args.update_interval
                ),
            ));
        }
        Ok(KlConfig {
            base,
            bins: args.bins as usize,
            update_interval: args.update_interval as usize,
        })
    }

    fn init(cfg: &KlConfig) -> KlState {
        KlState {
            bins: cfg.bins,
            cur_step: 0,
            hist: Vec::new(),
            edges: Vec::new(),
            stats: MinMaxState::default(),
            last_run: None,
            runs: 0,
        }
    }

    /// Collect the batch; every `update_interval` batches, search, average ∓amax in and reset
    /// the histogram.
    fn feed(state: &mut KlState, cfg: &KlConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        // `abs(x).max()` with NaN skipped (`f32::max`), -inf when every value is NaN.
        let x_max = max_abs_ignoring_nan(&batch.data).unwrap_or(f32::NEG_INFINITY);
        state.collect(&batch.data, x_max)?;
        state.cur_step += 1;
        if state.cur_step == cfg.update_interval {
            let run = compute_amax_entropy(&state.hist, &state.edges, cfg.levels())?;
            state
                .stats
                .update(vec![-run.amax], vec![run.amax], cfg.base.averaging_constant)?;
            state.cur_step = 0;
            state.hist.clear();
            state.edges.clear();
            state.bins = cfg.bins;
            state.last_run = Some(run);
            state.runs += 1;
        }
        Ok(())
    }

    fn qparams(state: &KlState, cfg: &KlConfig) -> Result<QParams> {
        let mut q = state.stats.qparams(&cfg.base.quant, None);
        q.extra.insert("kl_runs".into(), json!(state.runs));
        q.extra.insert("hist_bins".into(), json!(state.hist.len()));
        q.extra.insert("n_edges".into(), json!(state.edges.len()));
        q.extra
            .insert("steps_pending".into(), json!(state.cur_step));
        if let Some(run) = &state.last_run {
            q.extra.insert(
                "last_run".into(),
                json!({
                    "hist_bins": run.hist_bins,
                    "n_edges": run.n_edges,
                    "quantization_nbins": run.quantization_nbins,
                    "amax": run.amax,
                    "window": run.window,
                    "divergences": run.divergences,
                }),
            );
        }
        if state.cur_step > 0 {
            q.notes.push(format!(
                "{} batch(es) collected since the last KL search are not reflected in min/max \
                 (update_interval = {}).",
                state.cur_step, cfg.update_interval
            ));
        }
        Ok(q)
    }

    scale_quanti_qdq!(base.quant);

    /// The histogram being collected, or else the one the last search used.
    fn plot(state: &KlState) -> PlotSnapshot {
        let histogram = if !state.hist.is_empty() && state.edges.len() == state.hist.len() + 1 {
            Some(HistogramState {
                counts: state.hist.clone(),
                edges: state.edges.clone(),
            })
        } else {
            state
                .last_run
                .as_ref()
                .filter(|r| r.edges.len() == r.hist.len() + 1)
                .map(|r| HistogramState {
                    counts: r.hist.clone(),
                    edges: r.edges.clone(),
                })
        };
        plot_state(&state.stats, histogram)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{collect, instance};
    use super::*;
    use crate::observers::horizon::base;
    use proptest::prelude::*;

    const ID: &str = "horizon.KLObserver";

    fn ramp(n: usize, scale: f32) -> Tensor {
        // A peaked distribution: many small values, few large ones.
        Tensor::from_vec(
            (0..n)
                .map(|i| {
                    let u = (i as f32 + 0.5) / n as f32;
                    scale * u * u * u * if i % 2 == 0 { 1.0 } else { -1.0 }
                })
                .collect(),
        )
    }

    #[test]
    fn bins_below_256_are_refused() {
        let e = instance(ID, r#"{"bins": 128}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AssertionError: `bins` must be greater than 256!"
        );
    }

    #[test]
    fn histogram_grows_at_the_same_width_and_resets_after_the_search() {
        let json = r#"{"bins": 256, "update_interval": 2}"#;
        let (_, o) = collect::<Kl>(json, &[ramp(4096, 1.0)]).unwrap();
        assert_eq!((o.hist.len(), o.edges.len()), (256, 257));
        let (cfg, o) = collect::<Kl>(json, &[ramp(4096, 1.0), ramp(4096, 2.0)]).unwrap();
        assert_eq!(o.runs, 1);
        let run = o.last_run.as_ref().unwrap();
        assert_eq!(run.hist_bins, 512);
        assert_eq!(run.n_edges, 513);
        assert_eq!(run.divergences.len(), 512 - 127);
        assert!(o.hist.is_empty() && o.edges.is_empty());
        assert_eq!(o.bins, 256);
        let q = Kl::qparams(&o, &cfg).unwrap();
        assert_eq!(q.max_val, vec![run.amax]);
        assert!(run.amax > 0.0 && run.amax <= 2.0);
    }

    #[test]
    fn no_search_before_update_interval_gives_scale_one() {
        let mut o = instance(ID, r#"{"update_interval": 3}"#).unwrap();
        o.feed(&ramp(1000, 1.0)).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.scale, vec![1.0]);
        assert!(q.min_val.is_empty());
        assert!(!q.notes.is_empty());
    }

    #[test]
    fn constant_divergences_pick_the_last_window() {
        // All mass in the last bin: every D_i for i < len is the same.
        let mut hist = vec![0.0f32; 300];
        hist[299] = 10.0;
        let edges = linspace_two_roundings(0.0, 3.0, 301);
        let run = compute_amax_entropy(&hist, &edges, 128).unwrap();
        let windows = run.divergences.len() - 10;
        assert_eq!(run.window, windows - 1);
        assert_eq!(run.amax, edges[windows - 1 + 132]);
    }

    #[test]
    fn all_zero_input_gives_zero_amax() {
        let mut o = instance(ID, "{}").unwrap();
        o.feed(&Tensor::from_vec(vec![0.0; 100])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.max_val, vec![0.0]);
        assert_eq!(q.scale, vec![base::EPS]);
    }

    #[test]
    fn growth_from_an_all_zero_histogram_overflows_like_python() {
        let mut o = instance(ID, r#"{"update_interval": 2}"#).unwrap();
        o.feed(&Tensor::from_vec(vec![0.0; 10])).unwrap();
        let e = o.feed(&Tensor::from_vec(vec![1.0; 10])).unwrap_err();
        assert!(e.to_string().starts_with("OverflowError"), "{e}");
    }
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn the_clip_is_an_edge_within_the_observed_range(
            data in proptest::collection::vec(-20f32..20.0, 1..500),
            more in proptest::collection::vec(-40f32..40.0, 1..500),
            qint16 in any::<bool>(),
        ) {
            let dtype = if qint16 { "qint16" } else { "qint8" };
            let json = format!(r#"{{"bins": 256, "update_interval": 2, "dtype": "{dtype}"}}"#);
            let batches = [Tensor::from_vec(data.clone()), Tensor::from_vec(more.clone())];
            let (cfg, o) = collect::<Kl>(&json, &batches).unwrap();
            let run = o.last_run.as_ref().unwrap();
            prop_assert_eq!(run.quantization_nbins, if qint16 { 32768 } else { 128 });
            prop_assert_eq!(run.divergences.len(), run.hist_bins - 127);
            prop_assert!(run.edges.contains(&run.amax));
            let x_max = data.iter().chain(&more).fold(0f32, |m, v| m.max(v.abs()));
            prop_assert!(run.amax >= 0.0 && run.amax <= x_max * (1.0 + 1e-6));
            prop_assert_eq!(run.hist.iter().sum::<f32>() as usize, data.len() + more.len());
            prop_assert!(Kl::qparams(&o, &cfg).unwrap().scale[0] >= base::EPS);
        }
    }
}
