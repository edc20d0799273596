//! The charts of one pair of the compare view (`crate::diff::view::DiffTensorView`):
//!
//! * values: the original's histogram as grey bars, the dequantized values' histogram over the
//!   same bins as a coloured outline on top (a quantized weight's values pile up on its grid);
//! * error: the histogram of `dequantized − original`, with a rule at zero;
//! * blocks: the MSE of each block of the format (or row) in storage order on a log axis: the
//!   mean of each bin of consecutive blocks as a line, the largest block of each bin as a lighter
//!   line above it, the worst block marked and named.
//!
//! Counts follow `Style::log_counts` as the panels' histograms do.

use super::axis::Axis;
use super::legend::{draw_entry_text, draw_notice};
use super::{err, fmt_decade, fmt_num, theme, themed_mesh, DrawResult, Hist, Style};
use crate::diff::view::DiffTensorView;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The y value of a count: itself, or its log10 (empty bins at the floor) with log counts.
fn count_y(c: f64, log: bool) -> f64 {
    if !log {
        c
    } else if c > 0.0 {
        c.log10().max(-0.45)
    } else {
        -0.45
    }
}

/// The y range of counts up to `peak`.
fn count_range(peak: f64, log: bool) -> (f64, f64) {
    if log {
        (-0.45, peak.max(1.0).log10().max(1.0) * 1.08)
    } else {
        (0.0, peak.max(1.0) * 1.08)
    }
}

/// A legend of `(colour, text, filled)` entries in a row at the top left of the plot.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(RGBColor, String, bool)],
    at: (i32, i32),
    style: &Style,
) -> DrawResult {
    let font: TextStyle = theme::font(style.px(11.0)).into();
    let (mut x, y) = at;
    for (color, text, filled) in entries {
        let key = [
            (x, y - style.ipx(5.0)),
            (x + style.ipx(12.0), y + style.ipx(5.0)),
        ];
        if *filled {
            area.draw(&Rectangle::new(key, color.mix(0.6).filled()))
                .map_err(err)?;
        } else {
            area.draw(&Rectangle::new(key, color.stroke_width(style.stroke(1.5))))
                .map_err(err)?;
        }
        draw_entry_text(area, text, (x + style.ipx(17.0), y), &font)?;
        let (tw, _) = area.estimate_text_size(text, &font).map_err(err)?;
        x += style.ipx(17.0) + tw as i32 + style.ipx(16.0);
    }
    Ok(())
}

/// A histogram chart: `filled` as bars, `outlined` as a step line over the same range.
fn hist_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    filled: (&Hist, RGBColor),
    outlined: Option<(&Hist, RGBColor)>,
    x_desc: &str,
    zero_rule: bool,
    style: &Style,
) -> DrawResult {
    let (bars, bar_color) = filled;
    let log = style.log_counts;
    let peak = std::iter::once(bars)
        .chain(outlined.map(|o| o.0))
        .flat_map(|h| h.counts.iter().copied())
        .fold(0.0, f64::max);
    let (y0, y1) = count_range(peak, log);
    let (lo, hi) = (bars.lo, bars.hi);
    let pad = (hi - lo) * 0.02;
    let label_font = theme::font(style.px(11.0));
    let mut chart = ChartBuilder::on(area)
        .margin_top(style.ipx(26.0))
        .margin_right(style.ipx(14.0))
        .margin_left(style.ipx(4.0))
        .margin_bottom(style.ipx(4.0))
        .x_label_area_size(style.ipx(40.0))
        .y_label_area_size(style.ipx(52.0))
        .build_cartesian_2d(Axis::linear(lo - pad, hi + pad), Axis::linear(y0, y1))
        .map_err(err)?;
    let y_fmt = |v: &f64| if log { fmt_decade(*v) } else { fmt_num(*v) };
    themed_mesh(&mut chart, style)
        .disable_x_mesh()
        .x_labels(8)
        .y_labels(5)
        .label_style(label_font.color(&theme::MUTED))
        .axis_desc_style(theme::font(style.px(11.5)).color(&theme::MUTED))
        .x_desc(x_desc)
        .y_desc(if log { "count (log)" } else { "count" })
        .x_label_formatter(&|v| fmt_num(*v))
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(err)?;
    let width = (bars.hi - bars.lo) / bars.counts.len().max(1) as f64;
    chart
        .draw_series(
            bars.counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0.0)
                .map(|(i, &c)| {
                    let left = bars.lo + i as f64 * width;
                    Rectangle::new(
                        [(left, y0), (left + width, count_y(c, log))],
                        bar_color.mix(0.6).filled(),
                    )
                }),
        )
        .map_err(err)?;
    if zero_rule && lo < 0.0 && hi > 0.0 {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, y0), (0.0, y1)],
                theme::TEXT.mix(0.45).stroke_width(style.stroke(1.0)),
            )))
            .map_err(err)?;
    }
    if let Some((h, color)) = outlined {
        let w = (h.hi - h.lo) / h.counts.len().max(1) as f64;
        let mut points = vec![(h.lo, y0)];
        for (i, &c) in h.counts.iter().enumerate() {
            let (a, b) = (h.lo + i as f64 * w, h.lo + (i + 1) as f64 * w);
            let y = if c > 0.0 { count_y(c, log) } else { y0 };
            points.push((a, y));
            points.push((b, y));
        }
        points.push((h.hi, y0));
        chart
            .draw_series(std::iter::once(PathElement::new(
                points,
                color.stroke_width(style.stroke(1.5)),
            )))
            .map_err(err)?;
    }
    Ok(())
}

/// The original's values and the dequantized values, overlaid.
pub fn draw_diff_values<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    view: &DiffTensorView,
    style: &Style,
) -> DrawResult {
    let color = theme::series(0);
    hist_chart(
        area,
        (&view.original_hist, theme::BAR),
        Some((&view.dequantized_hist, color)),
        "value",
        false,
        style,
    )?;
    legend(
        area,
        &[
            (theme::BAR, "original".to_string(), true),
            (color, format!("dequantized {}", view.format), false),
        ],
        (style.ipx(60.0), style.ipx(12.0)),
        style,
    )
}

/// The histogram of the error `dequantized − original`.
pub fn draw_diff_error<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    view: &DiffTensorView,
    style: &Style,
) -> DrawResult {
    let color = theme::series(4);
    hist_chart(
        area,
        (&view.error_hist, color),
        None,
        "error: dequantized − original",
        true,
        style,
    )?;
    legend(
        area,
        &[(color, "error".to_string(), true)],
        (style.ipx(60.0), style.ipx(12.0)),
        style,
    )
}

/// The MSE of each block (or row), in storage order.
pub fn draw_diff_blocks<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    view: &DiffTensorView,
    style: &Style,
) -> DrawResult {
    let b = &view.blocks;
    let label_font = theme::font(style.px(11.0));
    let positive = || {
        b.mean_mse
            .iter()
            .chain(&b.max_mse)
            .copied()
            .filter(|v| *v > 0.0 && v.is_finite())
    };
    let Some(top) = positive().reduce(f64::max) else {
        let message = if b.count == 0 {
            "No blocks to draw"
        } else {
            "No error: every block is exact"
        };
        return draw_notice(area, message, &label_font, style);
    };
    let bottom = positive().fold(top, f64::min);
    let (y0, y1) = (bottom / 1.6, top * 1.6);
    let bins = b.mean_mse.len();
    let per = b.per_bin.max(1) as f64;
    let x_of = |i: usize| (i as f64 + 0.5) * per;
    let mut chart = ChartBuilder::on(area)
        .margin_top(style.ipx(26.0))
        .margin_right(style.ipx(14.0))
        .margin_left(style.ipx(4.0))
        .margin_bottom(style.ipx(4.0))
        .x_label_area_size(style.ipx(40.0))
        .y_label_area_size(style.ipx(52.0))
        .build_cartesian_2d(
            Axis::linear(0.0, (b.count.max(1)) as f64),
            Axis::log(y0, y1),
        )
        .map_err(err)?;
    let unit = if b.rows {
        format!("rows of {} values", b.block)
    } else {
        format!("blocks of {} values", b.block)
    };
    let x_desc = format!("{unit}, in storage order ({} in all)", b.count);
    themed_mesh(&mut chart, style)
        .x_labels(8)
        .y_labels(6)
        .label_style(label_font.color(&theme::MUTED))
        .axis_desc_style(theme::font(style.px(11.5)).color(&theme::MUTED))
        .x_desc(x_desc)
        .y_desc("MSE per block (log)")
        .x_label_formatter(&|v| fmt_num(v.round()))
        .y_label_formatter(&|v| fmt_num(*v))
        .draw()
        .map_err(err)?;
    let clamp = |v: f64| v.max(y0);
    let (mean_color, max_color) = (theme::series(0), theme::series(4));
    let line = |values: &[f64]| -> Vec<(f64, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| (x_of(i), clamp(v)))
            .collect()
    };
    if b.per_bin > 1 {
        chart
            .draw_series(std::iter::once(PathElement::new(
                line(&b.max_mse),
                max_color.mix(0.55).stroke_width(style.stroke(1.0)),
            )))
            .map_err(err)?;
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            line(&b.mean_mse),
            mean_color.stroke_width(style.stroke(1.5)),
        )))
        .map_err(err)?;
    if bins <= 200 {
        chart
            .draw_series(b.mean_mse.iter().enumerate().map(|(i, &v)| {
                Circle::new(
                    (x_of(i), clamp(v)),
                    style.ipx(2.0).max(1) as u32,
                    mean_color.filled(),
                )
            }))
            .map_err(err)?;
    }
    // The worst block.
    let worst = (b.worst as f64 + 0.5, clamp(b.worst_mse));
    let text = format!(
        "worst {} {} · MSE {}",
        if b.rows { "row" } else { "block" },
        b.worst,
        fmt_num(b.worst_mse)
    );
    let right = b.worst * 2 < b.count;
    let font: TextStyle = label_font.clone().into();
    let pos = Pos::new(if right { HPos::Left } else { HPos::Right }, VPos::Center);
    let dx = if right {
        style.ipx(7.0)
    } else {
        -style.ipx(7.0)
    };
    chart
        .draw_series(std::iter::once(
            EmptyElement::at(worst)
                + Circle::new(
                    (0, 0),
                    style.ipx(4.0).max(1) as u32,
                    max_color.stroke_width(style.stroke(1.5)),
                )
                + Text::new(text, (dx, 0), font.color(&theme::TEXT).pos(pos)),
        ))
        .map_err(err)?;
    let mut entries = vec![(
        mean_color,
        if b.per_bin > 1 {
            format!("mean of {} blocks", b.per_bin)
        } else {
            "MSE of each block".to_string()
        },
        true,
    )];
    if b.per_bin > 1 {
        entries.push((max_color, "largest of them".to_string(), true));
    }
    legend(area, &entries, (style.ipx(60.0), style.ipx(12.0)), style)
}
