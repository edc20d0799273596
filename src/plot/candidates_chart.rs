//! A search's candidates: each candidate's loss (what the search minimised or maximised)
//! against the candidate (its clipping range's upper end, or its number), the pick as a filled
//! dot, the best single clipping threshold on this tensor as a dashed vertical line, and one
//! candidate emphasised (the one under the pointer in the page).

use super::axis::Axis;
use super::{err, fmt_num, theme, themed_mesh, DrawResult, Style};
use crate::derivation::CandidateChart;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Where the plot's x axis lies on the canvas: `[left px, right px, x at left, x at right]`
/// (device pixels), so that a host can map the pointer to a candidate.
pub type XMapping = [f64; 4];

/// Draw `chart` into `area`, emphasising candidate `hovered`; returns the x mapping.
pub fn draw_candidates<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &CandidateChart,
    hovered: Option<usize>,
    style: &Style,
) -> DrawResult<XMapping> {
    let finite = |p: &Vec<f64>| p.len() == 2 && p[0].is_finite() && p[1].is_finite();
    let pts: Vec<(f64, f64)> = chart
        .points
        .iter()
        .filter(|p| finite(p))
        .map(|p| (p[0], p[1]))
        .collect();
    let label_font = theme::font(style.px(11.0));
    if pts.is_empty() {
        area.draw(&Text::new(
            "No finite loss to draw",
            (style.ipx(12.0), style.ipx(12.0)),
            label_font.color(&theme::MUTED),
        ))
        .map_err(err)?;
        return Ok([0.0, 1.0, 0.0, 1.0]);
    }
    let fold = |f: fn(f64, f64) -> f64, init: f64, k: usize| {
        pts.iter()
            .map(|p| if k == 0 { p.0 } else { p.1 })
            .fold(init, f)
    };
    let (mut x0, mut x1) = (
        fold(f64::min, f64::INFINITY, 0),
        fold(f64::max, f64::NEG_INFINITY, 0),
    );
    if let Some(t) = chart.optimum.filter(|t| t.is_finite()) {
        x0 = x0.min(t);
        x1 = x1.max(t);
    }
    let (ylo, yhi) = (
        fold(f64::min, f64::INFINITY, 1),
        fold(f64::max, f64::NEG_INFINITY, 1),
    );
    // A loss spanning decades (KL divergences, errors near zero) reads better on a log axis.
    let y_axis = if ylo > 0.0 && yhi / ylo > 100.0 {
        let f = (yhi / ylo).powf(0.05).max(1.1);
        Axis::log(ylo / f, yhi * f)
    } else {
        let pad = ((yhi - ylo) * 0.08)
            .max(yhi.abs() * 1e-6)
            .max(f64::MIN_POSITIVE);
        Axis::linear(ylo - pad, yhi + pad)
    };
    let xpad = ((x1 - x0) * 0.03)
        .max(x1.abs() * 1e-6)
        .max(f64::MIN_POSITIVE);
    let x_axis = Axis::linear(x0 - xpad, x1 + xpad);
    let mut plot = ChartBuilder::on(area)
        .margin_top(style.ipx(10.0))
        .margin_right(style.ipx(14.0))
        .margin_left(style.ipx(4.0))
        .x_label_area_size(style.ipx(34.0))
        .y_label_area_size(style.ipx(64.0))
        .build_cartesian_2d(x_axis, y_axis)
        .map_err(err)?;
    let fmt = |v: &f64| fmt_num(*v);
    themed_mesh(&mut plot, style)
        .x_labels(7)
        .y_labels(5)
        .label_style(label_font.color(&theme::MUTED))
        .axis_desc_style(theme::font(style.px(11.0)).color(&theme::MUTED))
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.loss_label.as_str())
        .x_label_formatter(&fmt)
        .y_label_formatter(&fmt)
        .draw()
        .map_err(err)?;
    plot.draw_series(LineSeries::new(
        pts.iter().copied(),
        theme::BAR.stroke_width(style.stroke(1.5)),
    ))
    .map_err(err)?;
    let r = style.ipx(2.5).max(1) as u32;
    plot.draw_series(pts.iter().map(|&p| Circle::new(p, r, theme::BAR.filled())))
        .map_err(err)?;
    let y_range = plot.y_range();
    if let Some(t) = chart.optimum.filter(|t| t.is_finite()) {
        let (a, b) = (y_range.start, y_range.end);
        let dashes = (0..24).step_by(2).map(|k| {
            let at = |k: f64| a + (b - a) * k / 24.0;
            PathElement::new(
                vec![(t, at(k as f64)), (t, at(k as f64 + 1.0))],
                theme::CURVE.stroke_width(style.stroke(1.5)),
            )
        });
        plot.draw_series(dashes).map_err(err)?;
        plot.draw_series(std::iter::once(Text::new(
            format!("best single threshold {}", fmt_num(t)),
            (t, b),
            label_font
                .color(&theme::CURVE)
                .pos(Pos::new(HPos::Left, VPos::Top)),
        )))
        .map_err(err)?;
    }
    let mark = |i: usize| {
        chart
            .points
            .get(i)
            .filter(|p| finite(p))
            .map(|p| (p[0], p[1]))
    };
    if let Some(p) = hovered.and_then(mark) {
        plot.draw_series(std::iter::once(Circle::new(
            p,
            style.ipx(6.0).max(1) as u32,
            theme::NOTE.stroke_width(style.stroke(2.0)),
        )))
        .map_err(err)?;
    }
    if let Some(p) = mark(chart.picked) {
        let element = EmptyElement::at(p)
            + Circle::new(
                (0, 0),
                style.ipx(5.0).max(1) as u32,
                theme::CLIPPED.filled(),
            )
            + Text::new(
                format!("picked #{}", chart.picked),
                (style.ipx(7.0), -style.ipx(4.0)),
                label_font
                    .color(&theme::TEXT)
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            );
        plot.draw_series(std::iter::once(element)).map_err(err)?;
    }
    let (px, _) = plot.plotting_area().get_pixel_range();
    let xr = plot.x_range();
    Ok([px.start as f64, px.end as f64, xr.start, xr.end])
}
