//! SVG rendering (plotters-svg) of one panel or of a whole comparison, for exports, notebooks,
//! Node and the CLI. Text is measured with [`super::text::Measured`], so no DOM is needed.

use super::text::Measured;
use super::{
    clear, draw_adaround, draw_curve, draw_formats, draw_panel, err, theme, AdaRoundView,
    CurveView, DrawResult, FormatsView, Hist, PanelView, Style,
};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_svg::SVGBackend;
use serde::{Deserialize, Serialize};

/// plotters-svg writes `font-size = size / 1.24`.
const SVG_FONT_SCALE: f64 = 1.0 / 1.24;

/// Everything a comparison figure shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// Heading, e.g. the file and member name.
    pub title: String,
    /// Second line, e.g. shape, dtype and element count.
    #[serde(default)]
    pub subtitle: String,
    pub hist: Hist,
    pub panels: Vec<PanelView>,
    #[serde(default)]
    pub curve: Option<CurveView>,
}

/// Size in pixels of the comparison figure of `c` at `width`.
pub fn comparison_size(c: &Comparison, width: u32) -> (u32, u32) {
    let (cols, rows, row_h) = grid(c, width);
    let _ = cols;
    let curve_h = if c.curve.is_some() { 400 } else { 0 };
    (width, 76 + rows * row_h + curve_h + 16)
}

fn grid(c: &Comparison, width: u32) -> (u32, u32, u32) {
    let n = c.panels.len().max(1) as u32;
    let cols = (width / 380).clamp(1, 4).min(n);
    let rows = n.div_ceil(cols);
    let tall = c.panels.iter().any(|p| p.channels.is_some());
    let notes = c.panels.iter().map(|p| p.notes.len()).max().unwrap_or(0) as u32;
    let row_h = if tall { 560 } else { 380 } + 32 * notes.min(4);
    (cols, rows, row_h)
}

/// Draw a comparison into `area` (any backend; the page uses it for the PNG export).
pub fn draw_comparison<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    c: &Comparison,
    style: &Style,
) -> DrawResult {
    clear(area)?;
    let (w, _) = area.dim_in_pixel();
    let css_w = (w as f64 / style.px(1.0)) as u32;
    let (cols, rows, row_h) = grid(c, css_w);
    let pad = style.ipx(16.0);
    area.draw(&Text::new(
        c.title.clone(),
        (pad, pad),
        theme::font(style.px(18.0))
            .style(FontStyle::Bold)
            .color(&theme::TEXT),
    ))
    .map_err(err)?;
    area.draw(&Text::new(
        c.subtitle.clone(),
        (pad, pad + style.ipx(28.0)),
        theme::font(style.px(12.5)).color(&theme::MUTED),
    ))
    .map_err(err)?;
    let top = style.ipx(76.0);
    let body = area.margin(top as u32, 0, pad as u32, pad as u32);
    let (panels_area, curve_area) = body.split_vertically(style.ipx((rows * row_h) as f64));
    let cells = panels_area.split_evenly((rows as usize, cols as usize));
    for (view, cell) in c.panels.iter().zip(cells.iter()) {
        let inner = cell.margin(
            style.ipx(4.0) as u32,
            style.ipx(4.0) as u32,
            style.ipx(4.0) as u32,
            style.ipx(4.0) as u32,
        );
        inner.fill(&theme::AXIS).map_err(err)?;
        let inside = inner.margin(1, 1, 1, 1);
        draw_panel(&inside, &c.hist, view, style)?;
    }
    if let Some(curve) = &c.curve {
        let (cw, ch) = curve_area.dim_in_pixel();
        let box_area = curve_area.shrink(
            (style.ipx(4.0), style.ipx(8.0)),
            (
                cw.saturating_sub(style.ipx(8.0) as u32),
                ch.saturating_sub(style.ipx(12.0) as u32),
            ),
        );
        box_area.fill(&theme::PANEL).map_err(err)?;
        box_area
            .draw(&Text::new(
                "Quantization error versus clipping threshold",
                (style.ipx(12.0), style.ipx(10.0)),
                theme::font(style.px(14.0))
                    .style(FontStyle::Bold)
                    .color(&theme::TEXT),
            ))
            .map_err(err)?;
        let chart_area = box_area.margin(style.ipx(30.0) as u32, 0, 0, 0);
        draw_curve(&chart_area, curve, style)?;
    }
    Ok(())
}

/// The comparison as an SVG document `width` pixels wide.
pub fn comparison_svg(c: &Comparison, style: &Style, width: u32) -> DrawResult<String> {
    let size = comparison_size(c, width.clamp(400, 4000));
    svg_document(style, size, |area, style| draw_comparison(area, c, style))
}

/// One panel as an SVG document of `size` pixels.
pub fn panel_svg(
    hist: &Hist,
    view: &PanelView,
    style: &Style,
    size: (u32, u32),
) -> DrawResult<String> {
    svg_document(style, clamp_size(size), |area, style| {
        draw_panel(area, hist, view, style)
    })
}

/// A chart's `size`, clamped to 200–4000 × 150–4000 pixels.
fn clamp_size(size: (u32, u32)) -> (u32, u32) {
    (size.0.clamp(200, 4000), size.1.clamp(150, 4000))
}

/// Render a chart with `draw` into an SVG document of `size` pixels (clamped as
/// [`clamp_size`]) on the plot background.
fn chart_svg(
    style: &Style,
    size: (u32, u32),
    draw: impl FnOnce(&SvgArea<'_>, &Style) -> DrawResult,
) -> DrawResult<String> {
    svg_document(style, clamp_size(size), |area, style| {
        clear(area)?;
        draw(area, style)
    })
}

/// The drawing area of an SVG document, its text measured by [`Measured`].
type SvgArea<'a> = DrawingArea<Measured<'a, SVGBackend<'a>>, Shift>;

/// Render `draw` into an SVG document of exactly `size` pixels, at pixel ratio 1 (SVG is
/// resolution-free) with plotters-svg's font scale.
fn svg_document(
    style: &Style,
    size: (u32, u32),
    draw: impl FnOnce(&SvgArea<'_>, &Style) -> DrawResult,
) -> DrawResult<String> {
    let mut out = String::new();
    {
        let backend = Measured::new(SVGBackend::with_string(&mut out, size), SVG_FONT_SCALE);
        let area = backend.into_drawing_area();
        let style = Style {
            pixel_ratio: 1.0,
            ..*style
        };
        draw(&area, &style)?;
        area.present().map_err(err)?;
    }
    Ok(out)
}

/// The formats chart (SQNR against bits per value) as an SVG document of `size` pixels.
pub fn formats_svg(view: &FormatsView, style: &Style, size: (u32, u32)) -> DrawResult<String> {
    chart_svg(style, size, |area, style| draw_formats(area, view, style))
}

/// The layer profile of a checkpoint as an SVG document of `size` pixels.
pub fn layer_profile_svg(
    view: &super::LayerProfileView,
    style: &Style,
    size: (u32, u32),
) -> DrawResult<String> {
    chart_svg(style, size, |area, style| {
        super::draw_layer_profile(area, view, style)
    })
}

/// The AdaRound optimisation history chart as an SVG document of `size` pixels.
pub fn adaround_svg(view: &AdaRoundView, style: &Style, size: (u32, u32)) -> DrawResult<String> {
    chart_svg(style, size, |area, style| draw_adaround(area, view, style))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{ChannelView, Marker};

    fn sample() -> Comparison {
        let counts: Vec<f64> = (0..256)
            .map(|i| {
                let x = (i as f64 - 128.0) / 30.0;
                (1000.0 * (-x * x / 2.0).exp()).round()
            })
            .collect();
        let hist = Hist {
            lo: -4.0,
            hi: 4.0,
            counts,
        };
        let per_tensor = PanelView {
            observer: "torch.MinMaxObserver".into(),
            color: 0,
            clip: Some([-4.0, 4.0]),
            grid: Some([-4.03, 4.0]),
            stats: vec![
                ["scale".into(), "0.0314".into()],
                ["zero point".into(), "128".into()],
            ],
            notes: vec!["reproduces <a framework> quirk & more".into()],
            ..Default::default()
        };
        let per_channel = PanelView {
            observer: "torch.PerChannelMinMaxObserver".into(),
            color: 1,
            clip: Some([-4.0, 4.0]),
            grid: Some([-4.0, 4.0]),
            channels: Some(ChannelView {
                axis: 0,
                min: vec![-1.0, -2.0, -0.5, -3.0, -1.0],
                max: vec![1.0, 2.5, 0.5, 30.0, 1.0],
                grid_min: vec![-1.0, -2.5, -0.5, -30.0, -1.0],
                grid_max: vec![1.0, 2.5, 0.5, 30.0, 1.0],
                unit: "channel".into(),
            }),
            ..Default::default()
        };
        let failing = PanelView {
            observer: "torch.HistogramObserver".into(),
            color: 2,
            error: Some("AssertionError: quant_min must be less than quant_max".into()),
            ..Default::default()
        };
        Comparison {
            title: "layer <0>.npy".into(),
            subtitle: "shape [256] · float32".into(),
            hist,
            panels: vec![per_tensor, per_channel, failing],
            curve: Some(CurveView {
                points: (1..50)
                    .map(|i| {
                        let t = i as f64 / 10.0;
                        (t, (t - 2.5).powi(2) + 0.01, Some(30.0 - t))
                    })
                    .collect(),
                best: Some(24),
                label: "8-bit affine".into(),
                markers: vec![
                    Marker {
                        observer: "torch.MinMaxObserver".into(),
                        color: 0,
                        threshold: Some(4.0),
                        slice: "channel".into(),
                        mse: 2.26,
                        sqnr_db: Some(26.0),
                    },
                    Marker {
                        observer: "torch.PerChannelMinMaxObserver".into(),
                        color: 1,
                        threshold: None,
                        slice: "block".into(),
                        mse: 0.05,
                        sqnr_db: Some(40.0),
                    },
                ],
            }),
        }
    }

    #[test]
    fn comparison_svg_contains_every_panel_and_escapes_text() {
        let c = sample();
        for sqnr in [false, true] {
            let style = Style {
                log_counts: sqnr,
                sqnr,
                pixel_ratio: 1.0,
                legend: true,
            };
            let svg = comparison_svg(&c, &style, 1200).unwrap();
            if let Ok(dir) = std::env::var("QUANTSCOPE_SVG_OUT") {
                std::fs::write(format!("{dir}/comparison_{sqnr}.svg"), &svg).unwrap();
            }
            assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
            assert!(svg.contains("torch.MinMaxObserver"));
            assert!(svg.contains("torch.PerChannelMinMaxObserver"));
            // The legend names the marker's slice (a block here), not always "channel".
            assert!(svg.contains("(per block)") && !svg.contains("(per channel)"));
            assert!(svg.contains("quant_min must be less than quant_max"));
            assert!(svg.contains("best t = "));
            assert!(svg.contains("ch 3"), "outlier channel labelled");
            // User-controlled text is escaped, never markup.
            assert!(!svg.contains("<0>") && svg.contains("&lt;0&gt;"));
            assert!(!svg.contains("<a framework>"));
            assert!(svg.matches("<rect").count() > 100, "histogram bars drawn");
        }
    }

    #[test]
    fn panel_svg_has_the_requested_size() {
        let c = sample();
        let svg = panel_svg(&c.hist, &c.panels[0], &Style::default(), (480, 360)).unwrap();
        assert!(svg.contains("width=\"480\"") && svg.contains("height=\"360\""));
    }
}
