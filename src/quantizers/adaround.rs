//! AdaRound: learning whether each weight rounds up or down (Nagel et al., "Up or Down? Adaptive
//! Rounding for Post-Training Quantization", ICML 2020), as AMD Quark's ONNX fast fine-tuning
//! does it for one layer.
//!
//! For a linear layer with weight `W` `[out, in]` and calibration inputs `X` `[n, in]`, each
//! weight is quantized as `W̃ = s·(clamp(⌊W/s⌋ + h(V) + zp, qmin, qmax) − zp)` where
//! `h(V) = clamp(σ(V)·(ζ − γ) + γ, 0, 1)` with `γ = −0.1`, `ζ = 1.1` (the rectified sigmoid).
//! `V` starts where `h(V)` equals the fractional part of `W/s` (so the layer starts unrounded)
//! and Adam minimises, over random mini-batches of rows `X_b`,
//!
//! `mean_rows ‖X_b·W̃ᵀ − X_b·Wᵀ‖² + λ·Σ (1 − |2h(V) − 1|^β)`,
//!
//! the regulariser switched on after a warm start and `β` annealed from 20 to 2 with a cosine
//! schedule, which drives every `h` to exactly 0 or 1. The result is then rounded hard:
//! up where `V ≥ 0`. Defaults are Quark's (`AdaRoundConfig`: 1000 iterations, learning rate
//! 0.1, λ = 0.01, β 20 → 2, warm start 0.2).
//!
//! The scales are those of a min–max observer with Quark's integer formula, the same for
//! round-to-nearest and AdaRound, so the comparison isolates the rounding decisions.

use crate::error::{Error, Result};
use crate::params::{validate_declared, ParamSet, ParamSpec, Params};
use crate::quant::round_half_even;
use crate::quantizers::quark_onnx::{
    initial_alpha, rectified_sigmoid, sigmoid_f32 as sigmoid, GAMMA, ZETA,
};
use crate::tensor::Tensor;
use ndarray::{Array2, ArrayView2, Axis};
use serde::Serialize;

/// Stretch of the rectified sigmoid, `ζ − γ` (Quark's `AdaroundConstants`).
const STRETCH: f32 = (ZETA - GAMMA) as f32;

crate::choice_enum! {
    /// How the weight's scales are shaped.
    #[derive(Serialize)]
    #[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
    #[serde(rename_all = "snake_case")]
    pub enum WeightScheme {
        PerChannelSymmetric = "per_channel_symmetric",
        PerTensorSymmetric = "per_tensor_symmetric",
        PerChannelAffine = "per_channel_affine",
        PerTensorAffine = "per_tensor_affine",
    }
}

impl WeightScheme {
    /// Parse the CLI/JSON spelling (`per_channel_symmetric`, …).
    pub fn parse(text: &str) -> Result<Self> {
        use crate::params::Choice;
        Self::from_name(text).ok_or_else(|| {
            Error::param(
                "scheme",
                format!("`{text}` is not one of {}", Self::OPTIONS.join(", ")),
            )
        })
    }

    fn per_channel(self) -> bool {
        matches!(
            self,
            WeightScheme::PerChannelSymmetric | WeightScheme::PerChannelAffine
        )
    }

    fn symmetric(self) -> bool {
        matches!(
            self,
            WeightScheme::PerChannelSymmetric | WeightScheme::PerTensorSymmetric
        )
    }
}

/// AdaRound's settings; [`Default`] gives Quark's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct AdaRoundConfig {
    /// Weight bit width (2..=16), signed grid `−2^(b−1) ..= 2^(b−1) − 1`.
    pub bits: u32,
    pub scheme: WeightScheme,
    pub iterations: usize,
    pub learning_rate: f32,
    /// λ, the weight of the rounding regulariser.
    pub reg_param: f32,
    /// β at the end of the warm start and at the last iteration.
    pub beta_range: (f32, f32),
    /// Fraction of iterations before the regulariser is switched on.
    pub warm_start: f32,
    /// Rows of `X` per Adam step (all rows when larger than `n`).
    pub batch_rows: usize,
    /// Seed of the mini-batch sampling; the same seed gives the same result.
    pub seed: u64,
}

crate::declare_params! {
    /// AdaRound's parameters (defaults are Quark's).
    pub struct AdaRoundArgs {
        /// weight bit width (signed grid)
        bits: i64 = 4; int(2, 16), Data;
        /// how the weight's min-max scales are shared
        scheme: WeightScheme = WeightScheme::PerChannelSymmetric; choice(), Data;
        /// Adam steps
        iterations: i64 = 1000; int(1, 100_000), Data;
        /// Adam learning rate
        learning_rate: f64 = 0.1; log_float(1e-4, 10.0), Data;
        /// λ, weight of the rounding regulariser
        reg_param: f64 = 0.01; float(0.0, 1.0), Data;
        /// share of iterations before the regulariser starts
        warm_start: f64 = 0.2; float(0.0, 0.95), Data;
        /// β after the warm start
        beta_start: f64 = 20.0; float(0.5, 100.0), Data;
        /// β at the last iteration
        beta_end: f64 = 2.0; float(0.5, 100.0), Data;
        /// rows of X per step
        batch_rows: i64 = 64; int(1, 65_536), Data;
        /// seed of the mini-batch sampling
        seed: i64 = 1_705_472_343; int(0, (1i64 << 53) - 1), Data;
    }
}

impl Default for AdaRoundConfig {
    /// Quark's settings (the declared defaults of [`AdaRoundArgs`]).
    fn default() -> Self {
        AdaRoundConfig::from_args(&AdaRoundArgs::defaults())
    }
}

/// AdaRound's parameters as the quantizer registry lists them.
pub fn params() -> Vec<ParamSpec> {
    AdaRoundArgs::specs()
}

impl AdaRoundConfig {
    /// Settings from registry parameters ([`params`]); missing keys keep Quark's defaults,
    /// unknown keys and out-of-range values are refused.
    pub fn from_params(p: &Params) -> Result<Self> {
        validate_declared(&params(), p, "adaround")?;
        let config = AdaRoundConfig::from_args(&AdaRoundArgs::from_params(p)?);
        config.validate()?;
        Ok(config)
    }

    /// The settings of declared arguments.
    pub fn from_args(a: &AdaRoundArgs) -> Self {
        AdaRoundConfig {
            bits: a.bits as u32,
            scheme: a.scheme,
            iterations: a.iterations as usize,
            learning_rate: a.learning_rate as f32,
            reg_param: a.reg_param as f32,
            beta_range: (a.beta_start as f32, a.beta_end as f32),
            warm_start: a.warm_start as f32,
            batch_rows: a.batch_rows as usize,
            seed: a.seed as u64,
        }
    }

    fn validate(&self) -> Result<()> {
        if !(2..=16).contains(&self.bits) {
            return Err(Error::param(
                "bits",
                format!("{} is outside 2..=16", self.bits),
            ));
        }
        if self.iterations == 0 || self.iterations > 1_000_000 {
            return Err(Error::param(
                "iterations",
                format!("{} is outside 1..=1000000", self.iterations),
            ));
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return Err(Error::param("learning_rate", "must be a positive number"));
        }
        if !(self.reg_param.is_finite() && self.reg_param >= 0.0) {
            return Err(Error::param("reg_param", "must be a non-negative number"));
        }
        if !(0.0..1.0).contains(&self.warm_start) {
            return Err(Error::param("warm_start", "must lie in [0, 1)"));
        }
        let (b0, b1) = self.beta_range;
        if !(b0.is_finite() && b1.is_finite() && b0 > 0.0 && b1 > 0.0) {
            return Err(Error::param("beta_range", "both ends must be positive"));
        }
        if self.batch_rows == 0 {
            return Err(Error::param("batch_rows", "must be at least 1"));
        }
        Ok(())
    }

    /// `β` at `iteration` (cosine decay after the warm start, as Quark's `_calculate_beta`).
    pub fn beta(&self, iteration: usize) -> f32 {
        let total = self.iterations as f64;
        let warm_end = self.warm_start as f64 * total;
        let rel = (iteration as f64 - warm_end) / (total - warm_end);
        let (start, end) = (self.beta_range.0 as f64, self.beta_range.1 as f64);
        (end + 0.5 * (start - end) * (1.0 + (rel * std::f64::consts::PI).cos())) as f32
    }

    fn regularised(&self, iteration: usize) -> bool {
        iteration as f64 >= self.iterations as f64 * self.warm_start as f64
    }
}

/// Integer weight quantization parameters, one per output channel (row of `W`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct WeightGrid {
    pub scale: Vec<f32>,
    pub zero_point: Vec<f32>,
    pub quant_min: f32,
    pub quant_max: f32,
}

impl WeightGrid {
    /// Min–max qparams of `w` `[out, in]` with Quark's integer formula: symmetric
    /// `s = amax / ((qmax − qmin)/2)`, affine `s = (max⁺ − min⁻)/(qmax − qmin)`,
    /// `zp = clamp(qmin − round(min⁻/s))`; `s ≥ eps`.
    pub fn min_max(w: ArrayView2<f32>, bits: u32, scheme: WeightScheme) -> Self {
        let quant_min = -(1i64 << (bits - 1)) as f32;
        let quant_max = ((1i64 << (bits - 1)) - 1) as f32;
        let eps = f32::EPSILON;
        let ranges: Vec<(f32, f32)> = if scheme.per_channel() {
            w.rows()
                .into_iter()
                .map(|row| row_min_max(row.iter().copied()))
                .collect()
        } else {
            let all = row_min_max(w.iter().copied());
            vec![all; w.nrows()]
        };
        let mut scale = Vec::with_capacity(ranges.len());
        let mut zero_point = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            let (min_neg, max_pos) = (lo.min(0.0), hi.max(0.0));
            if scheme.symmetric() {
                let amax = (-min_neg).max(max_pos);
                scale.push((amax / ((quant_max - quant_min) / 2.0)).max(eps));
                zero_point.push(0.0);
            } else {
                let s = ((max_pos - min_neg) / (quant_max - quant_min)).max(eps);
                scale.push(s);
                zero_point
                    .push((quant_min - round_half_even(min_neg / s)).clamp(quant_min, quant_max));
            }
        }
        WeightGrid {
            scale,
            zero_point,
            quant_min,
            quant_max,
        }
    }

    /// True when rounding down or up gives the same clamped value (e.g. the absmax weight of
    /// a symmetric grid, which sits at exactly `qmax + ½`): its decision does not matter.
    fn saturated(&self, floor: f32, row: usize) -> bool {
        let zp = self.zero_point[row];
        floor + zp >= self.quant_max || floor + 1.0 + zp <= self.quant_min
    }

    /// Quantize–dequantize `w` with a rounding function of `w/s` (row-wise scales).
    fn fake_quantize(
        &self,
        w: ArrayView2<f32>,
        round: impl Fn(usize, usize, f32) -> f32,
    ) -> Array2<f32> {
        let mut out = Array2::zeros(w.raw_dim());
        for ((r, c), value) in out.indexed_iter_mut() {
            let (s, zp) = (self.scale[r], self.zero_point[r]);
            let q = (round(r, c, w[(r, c)] / s) + zp).clamp(self.quant_min, self.quant_max);
            *value = (q - zp) * s;
        }
        out
    }
}

fn row_min_max(values: impl Iterator<Item = f32>) -> (f32, f32) {
    values.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// Error of a layer's output `X·W̃ᵀ` against the float output `X·Wᵀ`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct OutputError {
    pub output_mse: f64,
    pub output_sqnr_db: f64,
}

/// One point of the optimisation's history.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Progress {
    pub iteration: usize,
    /// Reconstruction loss of the mini-batch (mean squared row norm).
    pub recon_loss: f64,
    /// λ·Σ(1 − |2h − 1|^β), 0 during the warm start.
    pub round_loss: f64,
    pub beta: f32,
    /// Share of weights whose soft rounding `h` is already exactly 0 or 1 (or irrelevant
    /// because both roundings clamp to the same value).
    pub binary_fraction: f64,
}

/// What AdaRound achieved against round-to-nearest with the same scales.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct AdaRoundOutcome {
    pub nearest: OutputError,
    pub adaround: OutputError,
    /// Weights whose learned rounding differs from round-to-nearest.
    pub flipped: usize,
    pub weights: usize,
    /// Share of soft decisions exactly 0 or 1 at the end (1.0 = the regulariser converged);
    /// weights whose two roundings clamp to the same value count as decided.
    pub final_binary_fraction: f64,
    /// `(mse_nearest − mse_adaround) / mse_nearest`.
    pub mse_reduction: f64,
    pub grid: WeightGrid,
    pub config: AdaRoundConfig,
    /// Sampled progress (about 100 points).
    pub history: Vec<Progress>,
    /// Iterations actually run (fewer when cancelled).
    pub iterations_run: usize,
    #[serde(skip)]
    pub weights_adaround: Array2<f32>,
    #[serde(skip)]
    pub weights_nearest: Array2<f32>,
}

/// Small deterministic generator for mini-batch sampling (SplitMix64).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `k` distinct indices of `0..n` (partial Fisher–Yates).
    fn sample(&mut self, pool: &mut [usize], k: usize) -> Vec<usize> {
        let n = pool.len();
        for i in 0..k.min(n) {
            let j = i + (self.next() % (n - i) as u64) as usize;
            pool.swap(i, j);
        }
        pool[..k.min(n)].to_vec()
    }
}

fn as_matrix<'a>(t: &'a Tensor, what: &str) -> Result<ArrayView2<'a, f32>> {
    if t.ndim() != 2 || t.is_empty() {
        return Err(Error::input(format!(
            "{what} must be a non-empty 2-d tensor, got shape {:?}",
            t.shape
        )));
    }
    if t.nonfinite().total() > 0 {
        return Err(Error::input(format!(
            "{what} contains NaN or infinite values"
        )));
    }
    ArrayView2::from_shape((t.shape[0], t.shape[1]), &t.data)
        .map_err(|e| Error::input(format!("{what}: {e}")))
}

/// Output error of weights `wq` against the float output `y = X·Wᵀ`.
fn output_error(x: ArrayView2<f32>, y: &Array2<f32>, wq: &Array2<f32>) -> OutputError {
    let yq = x.dot(&wq.t());
    let (mut err, mut signal) = (0.0f64, 0.0f64);
    for (&a, &b) in y.iter().zip(yq.iter()) {
        let d = (a - b) as f64;
        err += d * d;
        signal += (a as f64) * (a as f64);
    }
    OutputError {
        output_mse: err / y.len().max(1) as f64,
        output_sqnr_db: if err > 0.0 {
            crate::quant::sqnr_db(signal, err)
        } else {
            f64::INFINITY
        },
    }
}

/// Learn the rounding of `w` `[out, in]` for inputs `x` `[n, in]`. `on_progress` is called
/// about every 1% of the iterations; returning `false` cancels (the result then uses the
/// rounding learned so far).
pub fn optimise(
    w: &Tensor,
    x: &Tensor,
    config: &AdaRoundConfig,
    on_progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<AdaRoundOutcome> {
    let mut run = AdaRound::new(w, x, config)?;
    while !run.is_done() {
        if let Some(progress) = run.step(1) {
            if !on_progress(&progress) {
                break;
            }
        }
    }
    Ok(run.finish())
}

/// An AdaRound optimisation in progress, advanced a few iterations at a time by [`step`]
/// (so that a host can report progress and cancel between steps) and concluded by
/// [`finish`]. [`optimise`] runs one to the end.
///
/// [`step`]: AdaRound::step
/// [`finish`]: AdaRound::finish
pub struct AdaRound {
    config: AdaRoundConfig,
    x: Array2<f32>,
    w: Array2<f32>,
    /// The float output `X·Wᵀ`.
    y: Array2<f32>,
    grid: WeightGrid,
    weights_nearest: Array2<f32>,
    /// `⌊W/s⌋`.
    floor: Array2<f32>,
    /// The learned rounding variables `V`.
    alpha: Array2<f32>,
    /// Adam's first and second moments.
    m: Array2<f32>,
    v2: Array2<f32>,
    rng: SplitMix64,
    pool: Vec<usize>,
    batch: usize,
    report_every: usize,
    history: Vec<Progress>,
    iteration: usize,
}

impl std::fmt::Debug for AdaRound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdaRound")
            .field("weights", &self.w.dim())
            .field("inputs", &self.x.dim())
            .field("iteration", &self.iteration)
            .finish_non_exhaustive()
    }
}

impl AdaRound {
    /// Validate the inputs and set up the optimisation: the grid, round-to-nearest, and `V`
    /// where `h(V)` is the fractional part of `W/s`.
    pub fn new(w: &Tensor, x: &Tensor, config: &AdaRoundConfig) -> Result<Self> {
        config.validate()?;
        let w = as_matrix(w, "the weight W")?;
        let x = as_matrix(x, "the input X")?;
        if x.ncols() != w.ncols() {
            return Err(Error::input(format!(
                "W is [{}, {}] and X is [{}, {}]: X must have one column per input feature of W ({})",
                w.nrows(),
                w.ncols(),
                x.nrows(),
                x.ncols(),
                w.ncols()
            )));
        }
        let grid = WeightGrid::min_max(w, config.bits, config.scheme);
        let y = x.dot(&w.t());
        let weights_nearest = grid.fake_quantize(w, |_, _, v| round_half_even(v));

        let mut floor = Array2::<f32>::zeros(w.raw_dim());
        let mut alpha = Array2::<f32>::zeros(w.raw_dim());
        for ((r, c), f) in floor.indexed_iter_mut() {
            let v = w[(r, c)] / grid.scale[r];
            *f = v.floor();
            alpha[(r, c)] = initial_alpha(v - v.floor());
        }
        Ok(AdaRound {
            config: config.clone(),
            batch: config.batch_rows.min(x.nrows()),
            pool: (0..x.nrows()).collect(),
            report_every: (config.iterations / 100).max(1),
            m: Array2::zeros(w.raw_dim()),
            v2: Array2::zeros(w.raw_dim()),
            rng: SplitMix64(config.seed),
            history: Vec::new(),
            iteration: 0,
            x: x.to_owned(),
            w: w.to_owned(),
            y,
            grid,
            weights_nearest,
            floor,
            alpha,
        })
    }

    /// Iterations run so far.
    pub fn iterations_run(&self) -> usize {
        self.iteration
    }

    /// True once every configured iteration has run.
    pub fn is_done(&self) -> bool {
        self.iteration >= self.config.iterations
    }

    /// The settings.
    pub fn config(&self) -> &AdaRoundConfig {
        &self.config
    }

    /// The sampled progress so far (about 100 points over the whole run).
    pub fn history(&self) -> &[Progress] {
        &self.history
    }

    /// Run up to `count` more iterations; returns the last progress point they recorded, if
    /// any (one is recorded about every 1% of the iterations, and at the last).
    pub fn step(&mut self, count: usize) -> Option<Progress> {
        let mut recorded = None;
        for _ in 0..count {
            if self.is_done() {
                break;
            }
            if let Some(p) = self.iterate() {
                recorded = Some(p);
            }
        }
        recorded
    }

    /// One Adam step on a random mini-batch of rows of `X`.
    fn iterate(&mut self) -> Option<Progress> {
        let (config, grid) = (&self.config, &self.grid);
        let (beta1, beta2, adam_eps) = (0.9f32, 0.999f32, 1e-8f32);
        let iteration = self.iteration;
        let batch = self.batch;
        let rows = if batch == self.x.nrows() {
            (0..batch).collect()
        } else {
            self.rng.sample(&mut self.pool, batch)
        };
        let xb = self.x.select(Axis(0), &rows);
        // W̃ and the mask of weights inside the grid (the clamp has zero gradient outside).
        let mut wq = Array2::<f32>::zeros(self.w.raw_dim());
        let mut inside = Array2::<bool>::from_elem(self.w.raw_dim(), false);
        for ((r, c), value) in wq.indexed_iter_mut() {
            let (s, zp) = (grid.scale[r], grid.zero_point[r]);
            let q = self.floor[(r, c)] + rectified_sigmoid(self.alpha[(r, c)]) + zp;
            inside[(r, c)] = q >= grid.quant_min && q <= grid.quant_max;
            *value = (q.clamp(grid.quant_min, grid.quant_max) - zp) * s;
        }
        let error = &wq - &self.w;
        let projected = xb.dot(&error.t()); // [B, out]
        let recon_loss = projected
            .iter()
            .map(|&p| (p as f64) * (p as f64))
            .sum::<f64>()
            / batch as f64;
        let grad_wq = projected.t().dot(&xb) * (2.0 / batch as f32); // [out, in]

        let regularised = config.regularised(iteration);
        let beta = if regularised {
            config.beta(iteration)
        } else {
            config.beta_range.0
        };
        let mut round_loss = 0.0f64;
        let mut binary = 0usize;
        let t = (iteration + 1) as i32;
        let (bias1, bias2) = (1.0 - beta1.powi(t), 1.0 - beta2.powi(t));
        for ((r, c), a) in self.alpha.indexed_iter_mut() {
            let sig = sigmoid(*a);
            let stretched = sig * STRETCH + GAMMA as f32;
            let h = stretched.clamp(0.0, 1.0);
            if h == 0.0 || h == 1.0 || grid.saturated(self.floor[(r, c)], r) {
                binary += 1;
            }
            let dh_da = if stretched > 0.0 && stretched < 1.0 {
                STRETCH * sig * (1.0 - sig)
            } else {
                0.0
            };
            let mut grad_h = if inside[(r, c)] {
                grad_wq[(r, c)] * grid.scale[r]
            } else {
                0.0
            };
            if regularised {
                let centred = 2.0 * h - 1.0;
                let magnitude = centred.abs();
                // |2h − 1|^(β−1); exactly 1 for decided weights, which soon are most of them.
                let power = if magnitude == 1.0 {
                    1.0
                } else {
                    magnitude.powf(beta - 1.0)
                };
                round_loss += (1.0 - power * magnitude) as f64;
                // d/dh (1 − |2h − 1|^β) = −2β·|2h − 1|^(β−1)·sign(2h − 1)
                grad_h += config.reg_param * (-2.0 * beta * power * centred.signum());
            }
            let g = grad_h * dh_da;
            let (mi, vi) = (&mut self.m[(r, c)], &mut self.v2[(r, c)]);
            *mi = beta1 * *mi + (1.0 - beta1) * g;
            *vi = beta2 * *vi + (1.0 - beta2) * g * g;
            *a -= config.learning_rate * (*mi / bias1) / ((*vi / bias2).sqrt() + adam_eps);
        }
        self.iteration = iteration + 1;
        if !iteration.is_multiple_of(self.report_every) && iteration + 1 != config.iterations {
            return None;
        }
        let progress = Progress {
            iteration,
            recon_loss,
            round_loss: config.reg_param as f64 * round_loss,
            beta,
            binary_fraction: binary as f64 / self.alpha.len() as f64,
        };
        self.history.push(progress);
        Some(progress)
    }

    /// Round hard with what was learned so far (up where `V ≥ 0`) and compare with
    /// round-to-nearest.
    pub fn finish(self) -> AdaRoundOutcome {
        let AdaRound {
            config,
            x,
            w,
            y,
            grid,
            weights_nearest,
            floor,
            alpha,
            history,
            iteration,
            ..
        } = self;
        let final_binary = alpha
            .indexed_iter()
            .filter(|&((r, c), &a)| {
                let h = rectified_sigmoid(a);
                h == 0.0 || h == 1.0 || grid.saturated(floor[(r, c)], r)
            })
            .count();
        let weights_adaround = grid.fake_quantize(w.view(), |r, c, _| {
            floor[(r, c)] + if alpha[(r, c)] >= 0.0 { 1.0 } else { 0.0 }
        });
        let flipped = weights_adaround
            .iter()
            .zip(weights_nearest.iter())
            .filter(|(a, b)| a != b)
            .count();
        let nearest = output_error(x.view(), &y, &weights_nearest);
        let adaround = output_error(x.view(), &y, &weights_adaround);
        AdaRoundOutcome {
            mse_reduction: if nearest.output_mse > 0.0 {
                (nearest.output_mse - adaround.output_mse) / nearest.output_mse
            } else {
                0.0
            },
            nearest,
            adaround,
            flipped,
            weights: alpha.len(),
            final_binary_fraction: final_binary as f64 / alpha.len().max(1) as f64,
            grid,
            config,
            history,
            iterations_run: iteration,
            weights_adaround,
            weights_nearest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(rows: usize, cols: usize, f: impl Fn(usize, usize) -> f32) -> Tensor {
        let data = (0..rows * cols).map(|i| f(i / cols, i % cols)).collect();
        Tensor::new(vec![rows, cols], data).unwrap()
    }

    #[test]
    fn alpha_initialisation_reproduces_the_fraction() {
        for frac in [0.0f32, 0.1, 0.25, 0.5, 0.75, 0.999] {
            assert!(
                (rectified_sigmoid(initial_alpha(frac)) - frac).abs() < 1e-5,
                "{frac}"
            );
        }
    }

    #[test]
    fn beta_anneals_from_start_to_end_after_warm_start() {
        let cfg = AdaRoundConfig {
            iterations: 100,
            ..Default::default()
        };
        assert!((cfg.beta(20) - 20.0).abs() < 1e-4);
        assert!((cfg.beta(60) - 11.0).abs() < 1e-4);
        assert!(cfg.beta(99) > 2.0 && cfg.beta(99) < 2.1);
    }

    #[test]
    fn quark_symmetric_grid_divides_by_half_the_range() {
        let w = tensor(2, 3, |r, c| {
            if r == 0 {
                [1.5, -7.5, 3.0][c]
            } else {
                [0.5, 0.25, -0.1][c]
            }
        });
        let view = ArrayView2::from_shape((2, 3), &w.data).unwrap();
        let grid = WeightGrid::min_max(view, 4, WeightScheme::PerChannelSymmetric);
        assert_eq!(grid.scale, vec![1.0, 0.5 / 7.5]);
        assert_eq!((grid.quant_min, grid.quant_max), (-8.0, 7.0));
    }

    /// A layer whose inputs are all ones: the output error of each row is the sum of its
    /// rounding errors, so the best rounding makes them cancel. Round-to-nearest cannot (every
    /// weight sits just above a half, so all round up), AdaRound finds a cancelling mix.
    #[test]
    fn learns_cancelling_rounding_on_a_known_problem() {
        let w = tensor(4, 8, |r, c| {
            if c == 0 {
                7.5 * 0.1
            } else {
                (0.5 + 0.012 * c as f32 + 0.003 * r as f32) * 0.1
            }
        });
        let x = tensor(32, 8, |_, _| 1.0);
        let cfg = AdaRoundConfig {
            bits: 4,
            iterations: 400,
            batch_rows: 32,
            ..Default::default()
        };
        let out = optimise(&w, &x, &cfg, &mut |_| true).unwrap();
        assert!(
            out.adaround.output_mse < 0.1 * out.nearest.output_mse,
            "{:?} vs {:?}",
            out.adaround,
            out.nearest
        );
        assert!(out.flipped > 0);
        assert_eq!(out.final_binary_fraction, 1.0);
        let again = optimise(&w, &x, &cfg, &mut |_| true).unwrap();
        assert_eq!(
            again.weights_adaround, out.weights_adaround,
            "deterministic for a seed"
        );
    }

    #[test]
    fn registry_params_give_quarks_defaults_and_are_checked() {
        assert_eq!(
            AdaRoundConfig::from_params(&Params::new()).unwrap(),
            AdaRoundConfig::default()
        );
        let cfg = AdaRoundConfig::from_params(
            &Params::new()
                .with("bits", 8)
                .with("scheme", "per_tensor_affine")
                .with("iterations", 50),
        )
        .unwrap();
        assert_eq!(
            (cfg.bits, cfg.scheme, cfg.iterations),
            (8, WeightScheme::PerTensorAffine, 50)
        );
        for bad in [
            Params::new().with("bits", 1),
            Params::new().with("iterations", 0),
            Params::new().with("scheme", "per_block"),
            Params::new().with("learning_rate", -1.0),
            Params::new().with("momentum", 0.9),
        ] {
            assert!(AdaRoundConfig::from_params(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn stepping_gives_the_same_result_as_one_run() {
        let w = tensor(6, 10, |r, c| ((r * 10 + c) as f32 * 0.37).sin() * 0.2);
        let x = tensor(40, 10, |r, c| ((r * 7 + c * 3) as f32 * 0.11).cos());
        let cfg = AdaRoundConfig {
            iterations: 120,
            batch_rows: 16,
            ..Default::default()
        };
        let whole = optimise(&w, &x, &cfg, &mut |_| true).unwrap();
        let mut run = AdaRound::new(&w, &x, &cfg).unwrap();
        while !run.is_done() {
            run.step(7);
        }
        assert_eq!(run.history().len(), whole.history.len());
        let stepped = run.finish();
        assert_eq!(stepped.weights_adaround, whole.weights_adaround);
        assert_eq!(stepped.adaround, whole.adaround);
        assert_eq!(stepped.iterations_run, 120);
    }

    #[test]
    fn cancelling_stops_early_and_bad_shapes_are_refused() {
        let w = tensor(2, 3, |r, c| (r * 3 + c) as f32 * 0.1);
        let x = tensor(5, 3, |r, c| (r + c) as f32);
        let mut calls = 0;
        let out = optimise(&w, &x, &AdaRoundConfig::default(), &mut |_| {
            calls += 1;
            calls < 3
        })
        .unwrap();
        assert!(out.iterations_run < 1000);
        let bad = tensor(5, 4, |_, _| 1.0);
        let err = optimise(&w, &bad, &AdaRoundConfig::default(), &mut |_| true).unwrap_err();
        assert!(
            err.to_string().contains("one column per input feature"),
            "{err}"
        );
        let cfg = AdaRoundConfig {
            bits: 1,
            ..Default::default()
        };
        assert!(optimise(&w, &x, &cfg, &mut |_| true).is_err());
    }
}
