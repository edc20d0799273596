//! Plots of observer results, generic over the plotters [`DrawingBackend`]: the page draws them on
//! a canvas (plotters-canvas), exports and notebooks get SVG (plotters-svg, [`svg`]), and the CLI
//! calls the same SVG renderer.
//!
//! Everything a plot needs is in plain data ([`Hist`], [`PanelView`], [`CurveView`],
//! [`FormatsView`], [`AdaRoundView`]) that serialises to JSON, so the Web Worker that computes
//! results can hand them to the thread that draws.

mod adaround_chart;
pub mod axis;
mod candidates_chart;
mod channels;
mod curve_chart;
mod diff_chart;
mod formats_chart;
mod histogram;
mod layer_profile;
mod legend;
pub mod svg;
pub mod text;
pub mod theme;

pub use adaround_chart::draw_adaround;
pub use candidates_chart::{draw_candidates, XMapping};
pub use channels::draw_channels;
pub use curve_chart::draw_curve;
pub use diff_chart::{draw_diff_blocks, draw_diff_error, draw_diff_values};
pub use formats_chart::draw_formats;
pub use histogram::draw_histogram;
pub use layer_profile::{draw_layer_profile, LayerProfileView, ProfileTensor};

use crate::curve::Curve;
use axis::Axis;
use plotters::chart::{ChartContext, MeshStyle};
use plotters::coord::{cartesian::Cartesian2d, Shift};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

/// A histogram with equal-width bins over `[lo, hi]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Hist {
    pub lo: f64,
    pub hi: f64,
    pub counts: Vec<f64>,
}

impl Hist {
    /// Sum the bins into at most `n` bins (keeping `[lo, hi]`).
    pub fn coarsen(&self, n: usize) -> Hist {
        let bins = self.counts.len();
        if n == 0 || bins <= n {
            return self.clone();
        }
        let factor = bins.div_ceil(n);
        let counts = self
            .counts
            .chunks(factor)
            .map(|c| c.iter().sum::<f64>())
            .collect::<Vec<_>>();
        let hi = self.lo + (self.hi - self.lo) * (counts.len() * factor) as f64 / bins as f64;
        Hist {
            lo: self.lo,
            hi,
            counts,
        }
    }
}

/// Per-channel ranges of a per-channel (or per-group) observer, one entry per channel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct ChannelView {
    /// The channel axis of the tensor.
    pub axis: usize,
    /// Observed min/max of each channel.
    pub min: Vec<f64>,
    pub max: Vec<f64>,
    /// Representable range of each channel's grid (empty when the observer has none).
    #[serde(default)]
    pub grid_min: Vec<f64>,
    #[serde(default)]
    pub grid_max: Vec<f64>,
    /// What a slice is called in labels: `channel`, `group` or `block`.
    #[serde(default = "default_unit")]
    pub unit: String,
}

fn default_unit() -> String {
    "channel".into()
}

impl ChannelView {
    /// The ranges the chart draws per slice: the observed min/max, or the grid's representable
    /// range for observers that keep no per-slice min/max (e.g. MX blocks).
    pub fn ranges(&self) -> (&[f64], &[f64]) {
        if !self.min.is_empty() && self.min.len() == self.max.len() {
            (&self.min, &self.max)
        } else {
            (&self.grid_min, &self.grid_max)
        }
    }

    /// Short label of slice `i` (`ch 3`, `group 3`, `block 3`).
    pub fn label(&self, i: usize) -> String {
        match self.unit.as_str() {
            "channel" | "" => format!("ch {i}"),
            unit => format!("{unit} {i}"),
        }
    }

    /// Indices of outlier slices: max |x| above 4× the median of the slices' max |x|, the
    /// largest first (at most `limit`).
    pub fn outliers(&self, limit: usize) -> Vec<usize> {
        let (min, max) = self.ranges();
        let absmax: Vec<f64> = min
            .iter()
            .zip(max)
            .map(|(a, b)| a.abs().max(b.abs()))
            .collect();
        let mut sorted: Vec<f64> = absmax.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.len() < 4 {
            return Vec::new();
        }
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let mut out: Vec<usize> = (0..absmax.len())
            .filter(|&i| absmax[i] > 4.0 * median && absmax[i] > 0.0)
            .collect();
        out.sort_by(|&a, &b| absmax[b].total_cmp(&absmax[a]));
        out.truncate(limit);
        out
    }
}

/// What one observer panel shows on top of the tensor's histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct PanelView {
    /// Observer id (panel title).
    pub observer: String,
    /// Colour index into [`theme::SERIES`].
    #[serde(default)]
    pub color: usize,
    /// The clipping range the observer chose (per channel: the widest).
    pub clip: Option<[f64; 2]>,
    /// The representable range of its grid (per channel: the widest).
    pub grid: Option<[f64; 2]>,
    /// Per-channel ranges, for per-channel observers.
    #[serde(default)]
    pub channels: Option<ChannelView>,
    /// Label/value rows shown under the title in exported panels (SVG/PNG).
    #[serde(default)]
    pub stats: Vec<[String; 2]>,
    /// Notes (framework quirks) printed in exported panels.
    #[serde(default)]
    pub notes: Vec<String>,
    /// An error shown instead of the numbers.
    #[serde(default)]
    pub error: Option<String>,
    /// The numbers behind the panel's machine-readable contract (`data-*` attributes), one per
    /// slice: the chosen clipping range, the grid's representable range, scale and zero point.
    #[serde(default)]
    pub slices: SliceNumbers,
}

/// Per-slice numbers of a panel (one entry per tensor, channel, group or block).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct SliceNumbers {
    pub clip_min: Vec<f64>,
    pub clip_max: Vec<f64>,
    pub grid_min: Vec<f64>,
    pub grid_max: Vec<f64>,
    pub scale: Vec<f64>,
    pub zero_point: Vec<f64>,
}

/// One observer's mark on the error curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct Marker {
    pub observer: String,
    #[serde(default)]
    pub color: usize,
    /// Threshold `max(|clip_min|, |clip_max|)`; `None` for per-channel observers (drawn as a
    /// horizontal line at their error).
    pub threshold: Option<f64>,
    /// What one slice of an observer without a single threshold is ("channel", "group",
    /// "block"), for the legend.
    #[serde(default = "channel")]
    pub slice: String,
    pub mse: f64,
    pub sqnr_db: Option<f64>,
}

fn channel() -> String {
    "channel".into()
}

/// The error-versus-clipping chart's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct CurveView {
    /// `(threshold, mse, sqnr_db)` points.
    pub points: Vec<(f64, f64, Option<f64>)>,
    pub best: Option<usize>,
    /// Legend text of the curve, e.g. "int8 affine".
    pub label: String,
    pub markers: Vec<Marker>,
}

impl CurveView {
    /// The chart data of a computed curve with the given markers.
    pub fn new(curve: &Curve, markers: Vec<Marker>) -> Self {
        let scheme = match curve.spec.scheme {
            crate::curve::CurveScheme::Symmetric => "symmetric",
            crate::curve::CurveScheme::Affine => "affine",
        };
        CurveView {
            points: curve
                .points
                .iter()
                .map(|p| (p.threshold, p.mse, p.sqnr_db))
                .collect(),
            best: curve.best,
            label: format!(
                "{}-bit {scheme} [{}, {}]",
                curve.spec.bits, curve.quant_min, curve.quant_max
            ),
            markers,
        }
    }
}

/// One number format's result on the formats chart (SQNR against storage cost).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct FormatPoint {
    /// Point label, e.g. "int8 per channel" or "mxfp4_e2m1".
    pub label: String,
    /// "int" | "half" | "minifloat" | "mx" | "bfp" (the quantizer registry id); picks the colour.
    pub kind: String,
    /// Storage cost per value in bits, shared scales included.
    #[serde(with = "lenient_f64")]
    pub bits_per_value: f64,
    /// SQNR in dB; may be +inf (lossless, drawn in a band above the plot) or NaN/−inf (not drawn). JSON
    /// has no infinities: `"inf"`/`"Infinity"` and `"-inf"`/`"-Infinity"` are accepted (and
    /// written) for them, and `null` reads as NaN.
    #[serde(with = "lenient_f64")]
    pub sqnr_db: f64,
    /// Drawn emphasised (user-added format or hovered row).
    #[serde(default)]
    pub highlighted: bool,
}

/// The formats chart's data: every format evaluated on one tensor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct FormatsView {
    pub points: Vec<FormatPoint>,
}

/// One sampled point of the AdaRound optimisation, field-compatible with
/// [`crate::quantizers::adaround::Progress`] (whose serialised form it reads), but tolerant of
/// the `null`s that JSON makes of non-finite losses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct AdaRoundPoint {
    pub iteration: usize,
    /// Reconstruction loss of the mini-batch.
    #[serde(with = "lenient_f64")]
    pub recon_loss: f64,
    /// The rounding regulariser's loss (0 during the warm start).
    #[serde(with = "lenient_f64")]
    pub round_loss: f64,
    /// The regulariser's annealed exponent β.
    #[serde(default, deserialize_with = "lenient_f64::deserialize_f32")]
    pub beta: f32,
    /// Share of roundings already decided (soft rounding exactly 0 or 1), in [0, 1].
    #[serde(with = "lenient_f64")]
    pub binary_fraction: f64,
}

impl From<&crate::quantizers::adaround::Progress> for AdaRoundPoint {
    fn from(p: &crate::quantizers::adaround::Progress) -> Self {
        AdaRoundPoint {
            iteration: p.iteration,
            recon_loss: p.recon_loss,
            round_loss: p.round_loss,
            beta: p.beta,
            binary_fraction: p.binary_fraction,
        }
    }
}

/// The AdaRound chart's data: the optimisation history so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct AdaRoundView {
    pub history: Vec<AdaRoundPoint>,
    /// Total iterations planned (the x axis' end, even while running).
    pub iterations: usize,
    /// Iteration where the rounding regulariser switches on (end of the warm start), drawn as a
    /// faint vertical marker.
    #[serde(default)]
    pub warm_start_end: usize,
}

/// Serde for `f64` fields that may hold non-finite values: they are written as strings
/// (`"Infinity"`, `"-Infinity"`, `"NaN"`), and numbers, such strings (also `"inf"`, `"∞"`) and
/// `null` (NaN) are read.
mod lenient_f64 {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if *v > 0.0 {
            s.serialize_str("Infinity")
        } else {
            s.serialize_str("-Infinity")
        }
    }

    struct Lenient;

    impl<'de> Visitor<'de> for Lenient {
        type Value = f64;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a number, null, or \"inf\", \"-inf\", \"NaN\"")
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }

        fn visit_unit<E: de::Error>(self) -> Result<f64, E> {
            Ok(f64::NAN)
        }

        fn visit_none<E: de::Error>(self) -> Result<f64, E> {
            Ok(f64::NAN)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
            d.deserialize_any(Lenient)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            match v.trim().to_ascii_lowercase().as_str() {
                "inf" | "+inf" | "infinity" | "+infinity" | "∞" => Ok(f64::INFINITY),
                "-inf" | "-infinity" | "−inf" | "-∞" | "−∞" => Ok(f64::NEG_INFINITY),
                "nan" => Ok(f64::NAN),
                other => other
                    .parse()
                    .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self)),
            }
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(Lenient)
    }

    pub fn deserialize_f32<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
        Ok(deserialize(d)? as f32)
    }
}

/// Drawing options.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(default, rename_all = "camelCase")]
pub struct Style {
    /// Histogram counts on a log scale.
    pub log_counts: bool,
    /// The curve shows SQNR (dB) instead of MSE.
    pub sqnr: bool,
    /// Device pixels per CSS pixel (sizes, fonts and strokes scale with it).
    pub pixel_ratio: f64,
    /// Draw the curve chart's legend (the page lists the markers in a table instead).
    pub legend: bool,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            log_counts: false,
            sqnr: false,
            pixel_ratio: 1.0,
            legend: true,
        }
    }
}

impl Style {
    /// `v` CSS pixels in device pixels.
    pub fn px(&self, v: f64) -> f64 {
        v * self.pixel_ratio.clamp(0.5, 4.0)
    }

    /// `v` CSS pixels as a whole number of device pixels.
    pub fn ipx(&self, v: f64) -> i32 {
        self.px(v).round() as i32
    }

    /// `v` CSS pixels as a stroke width.
    pub fn stroke(&self, v: f64) -> u32 {
        self.px(v).round().max(1.0) as u32
    }
}

/// Result of a drawing call; errors carry the backend's message.
pub type DrawResult<T = ()> = Result<T, String>;

pub(crate) fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

/// A number with about four significant digits, in exponent form when very large or small.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "∞".into()
        } else {
            "−∞".into()
        };
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    let s = if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.2e}");
        // 1.50e-5 → 1.5e-5
        match s.split_once('e') {
            Some((m, e)) => {
                let m = m.trim_end_matches('0').trim_end_matches('.');
                format!("{m}e{e}")
            }
            None => s,
        }
    } else {
        let digits = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        let s = format!("{v:.digits$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    s.replace('-', "−")
}

/// Tick label of a decade on a log axis: 1, 10, 100, 1k, …
pub(crate) fn fmt_decade(v: f64) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    let k = v.round() as i32;
    match k {
        i32::MIN..=-1 => format!("1e{k}"),
        0 => "1".into(),
        1 => "10".into(),
        2 => "100".into(),
        3 => "1k".into(),
        4 => "10k".into(),
        5 => "100k".into(),
        6 => "1M".into(),
        7 => "10M".into(),
        8 => "100M".into(),
        _ => format!("1e{k}"),
    }
}

/// Fill a drawing area with the background colour.
pub fn clear<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> DrawResult {
    area.fill(&theme::BACKGROUND).map_err(err)
}

/// The mesh every chart starts from: no minor grid lines, the theme's grid and axis strokes,
/// 3-pixel tick marks. Each chart adds its labels, formatters and descriptions.
pub(crate) fn themed_mesh<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<Axis, Axis>>,
    style: &Style,
) -> MeshStyle<'a, 'b, Axis, Axis, DB> {
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(TRANSPARENT)
        .bold_line_style(theme::GRID.stroke_width(style.stroke(1.0)))
        .axis_style(theme::AXIS.stroke_width(style.stroke(1.0)))
        .set_all_tick_mark_size(style.ipx(3.0));
    mesh
}

/// A whole panel as exported (SVG/PNG): title, statistics, notes, histogram and, for per-channel
/// observers, the per-channel chart.
pub fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    hist: &Hist,
    view: &PanelView,
    style: &Style,
) -> DrawResult {
    area.fill(&theme::PANEL).map_err(err)?;
    let (w, h) = area.dim_in_pixel();
    let pad = style.ipx(12.0);
    let title_font = theme::font(style.px(14.0)).style(FontStyle::Bold);
    let text_font = theme::font(style.px(11.5));
    let color = theme::series(view.color);
    area.draw(&Rectangle::new(
        [(0, 0), (style.ipx(4.0), h as i32)],
        color.filled(),
    ))
    .map_err(err)?;
    area.draw(&Text::new(
        view.observer.clone(),
        (pad, pad),
        title_font.color(&theme::TEXT),
    ))
    .map_err(err)?;
    let line = style.ipx(16.0);
    let mut y = pad + style.ipx(24.0);
    if let Some(message) = &view.error {
        for chunk in wrap(message, (w as f64 / style.px(6.5)) as usize) {
            area.draw(&Text::new(chunk, (pad, y), text_font.color(&theme::ERROR)))
                .map_err(err)?;
            y += line;
        }
        return Ok(());
    }
    // Statistics in two columns.
    let col = (w as i32 - 2 * pad) / 2;
    for (i, [k, v]) in view.stats.iter().enumerate() {
        let x = pad + (i as i32 % 2) * col;
        let yy = y + (i as i32 / 2) * line;
        area.draw(&Text::new(
            k.clone(),
            (x, yy),
            text_font.color(&theme::MUTED),
        ))
        .map_err(err)?;
        area.draw(&Text::new(
            v.clone(),
            (x + style.ipx(92.0), yy),
            text_font.color(&theme::TEXT),
        ))
        .map_err(err)?;
    }
    y += view.stats.len().div_ceil(2) as i32 * line + style.ipx(4.0);
    for note in &view.notes {
        for chunk in wrap(&format!("⚠ {note}"), (w as f64 / style.px(6.2)) as usize) {
            area.draw(&Text::new(chunk, (pad, y), text_font.color(&theme::NOTE)))
                .map_err(err)?;
            y += line;
        }
    }
    let rest = area.margin(y.max(0) as u32, 0, 0, 0);
    match &view.channels {
        Some(ch) => {
            let (top, bottom) = rest.split_vertically(rest.dim_in_pixel().1 / 2);
            draw_histogram(&top, hist, view, style)?;
            draw_channels(&bottom, ch, view.color, style)
        }
        None => draw_histogram(&rest, hist, view, style),
    }
}

/// Greedy word wrap at `width` characters.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(10);
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        if !current.is_empty() && current.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_use_a_real_minus() {
        assert_eq!(fmt_num(0.036180686), "0.03618");
        assert_eq!(fmt_num(-4.494117), "−4.494");
        assert_eq!(fmt_num(194.3286), "194.3");
        assert_eq!(fmt_num(1.5e-5), "1.5e−5");
        assert_eq!(fmt_num(123456.0), "1.23e5");
        assert_eq!(fmt_num(3.0), "3");
        assert_eq!(fmt_decade(3.0), "1k");
        assert_eq!(fmt_decade(2.5), "");
    }

    #[test]
    fn coarsening_keeps_the_total() {
        let h = Hist {
            lo: 0.0,
            hi: 10.0,
            counts: (0..10).map(f64::from).collect(),
        };
        let c = h.coarsen(4);
        assert_eq!(c.counts, vec![3.0, 12.0, 21.0, 9.0]);
        assert!((c.hi - 12.0).abs() < 1e-12);
    }

    #[test]
    fn outlier_channels_are_found() {
        let mut ch = ChannelView {
            axis: 1,
            min: vec![-1.0; 16],
            max: vec![1.0; 16],
            unit: "channel".into(),
            ..Default::default()
        };
        ch.max[3] = 50.0;
        ch.min[9] = -9.0;
        assert_eq!(ch.outliers(5), vec![3, 9]);
    }

    #[test]
    fn wrapping_keeps_words() {
        assert_eq!(wrap("aaa bbb ccc", 10), vec!["aaa bbb", "ccc"]);
    }
}
