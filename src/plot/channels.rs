//! The per-channel range chart: one bar per channel from its min to its max, the representable
//! range of its grid shaded behind, the part of a channel that its grid clips highlighted, and
//! outlier channels (max |x| above 4× the median) drawn in the observer's colour and labelled.
//! With more channels than pixels, neighbouring channels share a column (its extremes).

use super::axis::Axis;
use super::{err, fmt_num, theme, themed_mesh, ChannelView, DrawResult, Style};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Draw the per-channel chart of `ch` into `area` (observer colour `color`).
pub fn draw_channels<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    ch: &ChannelView,
    color: usize,
    style: &Style,
) -> DrawResult {
    let (data_min, data_max) = ch.ranges();
    let n = data_min.len().min(data_max.len());
    if n == 0 {
        return Ok(());
    }
    // Without per-slice min/max the grid ranges are the bars themselves.
    let has_data = !ch.min.is_empty();
    let accent = theme::series(color);
    let has_grid = has_data && ch.grid_min.len() == n && ch.grid_max.len() == n;
    let finite = |v: &f64| v.is_finite();
    let mut lo = data_min
        .iter()
        .copied()
        .filter(finite)
        .fold(f64::INFINITY, f64::min);
    let mut hi = data_max
        .iter()
        .copied()
        .filter(finite)
        .fold(f64::NEG_INFINITY, f64::max);
    if has_grid {
        lo = lo.min(
            ch.grid_min
                .iter()
                .copied()
                .filter(finite)
                .fold(f64::INFINITY, f64::min),
        );
        hi = hi.max(
            ch.grid_max
                .iter()
                .copied()
                .filter(finite)
                .fold(f64::NEG_INFINITY, f64::max),
        );
    }
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        lo -= 1.0;
        hi += 1.0;
    }
    let pad = (hi - lo) * 0.06;
    let (y0, y1) = (lo - pad, hi + pad);
    let (w, _) = area.dim_in_pixel();
    let left = style.ipx(52.0);
    let plot_w = (w as i32 - left - style.ipx(12.0)).max(10) as usize;
    let per_col = n.div_ceil(plot_w.max(1));
    let cols = n.div_ceil(per_col);
    let outliers = ch.outliers(3);
    let is_outlier = {
        let all = ch.outliers(usize::MAX);
        let mut mask = vec![false; n];
        for i in all {
            mask[i] = true;
        }
        mask
    };
    let mut chart = ChartBuilder::on(area)
        .margin_top(style.ipx(14.0))
        .margin_right(style.ipx(12.0))
        .margin_left(style.ipx(4.0))
        .x_label_area_size(style.ipx(26.0))
        .y_label_area_size(left)
        .build_cartesian_2d(Axis::linear(0.0, n as f64), Axis::linear(y0, y1))
        .map_err(err)?;
    themed_mesh(&mut chart, style)
        .disable_x_mesh()
        .x_labels(6)
        .y_labels(5)
        .label_style(theme::font(style.px(11.0)).color(&theme::MUTED))
        .x_label_formatter(&|v| format!("{}", v.round() as i64))
        .y_label_formatter(&|v| fmt_num(*v))
        .draw()
        .map_err(err)?;
    // Zero line.
    if y0 < 0.0 && y1 > 0.0 {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.0), (n as f64, 0.0)],
                theme::AXIS.stroke_width(style.stroke(1.0)),
            )))
            .map_err(err)?;
    }
    let mut rects = Vec::with_capacity(cols * 3);
    for c in 0..cols {
        let (a, b) = (c * per_col, ((c + 1) * per_col).min(n));
        let ext = |v: &[f64], pick: fn(f64, f64) -> f64, init: f64| {
            v[a..b]
                .iter()
                .copied()
                .filter(|x| x.is_finite())
                .fold(init, pick)
        };
        let cmin = ext(data_min, f64::min, f64::INFINITY);
        let cmax = ext(data_max, f64::max, f64::NEG_INFINITY);
        if !(cmin.is_finite() && cmax.is_finite()) {
            continue;
        }
        let xa = a as f64 + if per_col == 1 { 0.12 } else { 0.0 };
        let xb = b as f64 - if per_col == 1 { 0.12 } else { 0.0 };
        let outlier = is_outlier[a..b].iter().any(|&o| o);
        if has_grid {
            let gmin = ext(&ch.grid_min, f64::min, f64::INFINITY);
            let gmax = ext(&ch.grid_max, f64::max, f64::NEG_INFINITY);
            if gmin.is_finite() && gmax.is_finite() {
                rects.push(Rectangle::new(
                    [(xa, gmin), (xb, gmax)],
                    accent.mix(0.14).filled(),
                ));
                // Clipped parts of the channel.
                if cmax > gmax {
                    rects.push(Rectangle::new(
                        [(xa, gmax), (xb, cmax)],
                        theme::CLIPPED.filled(),
                    ));
                }
                if cmin < gmin {
                    rects.push(Rectangle::new(
                        [(xa, cmin), (xb, gmin)],
                        theme::CLIPPED.filled(),
                    ));
                }
            }
        }
        let bar = if outlier { accent } else { theme::BAR };
        let (ba, bb) = if has_grid {
            let gmin = ext(&ch.grid_min, f64::min, f64::INFINITY);
            let gmax = ext(&ch.grid_max, f64::max, f64::NEG_INFINITY);
            (cmin.max(gmin), cmax.min(gmax))
        } else {
            (cmin, cmax)
        };
        if bb >= ba {
            rects.push(Rectangle::new([(xa, ba), (xb, bb)], bar.filled()));
        }
    }
    chart.draw_series(rects).map_err(err)?;
    let label_font = theme::font(style.px(10.5));
    // Labels beside the bar's extreme, kept inside the plot so they never cover the axes.
    let margin = (y1 - y0) * 0.08;
    for &i in &outliers {
        let top = data_max[i].abs() >= data_min[i].abs();
        let y = if top { data_max[i] } else { data_min[i] };
        let y = y.clamp(y0 + margin, y1 - margin);
        let right = (i as f64) < n as f64 * 0.85;
        let (anchor, dx) = if right {
            (Pos::new(HPos::Left, VPos::Center), style.ipx(4.0))
        } else {
            (Pos::new(HPos::Right, VPos::Center), -style.ipx(4.0))
        };
        let label = EmptyElement::at((i as f64 + 0.5, y))
            + Text::new(ch.label(i), (dx, 0), label_font.color(&accent).pos(anchor));
        chart.draw_series(std::iter::once(label)).map_err(err)?;
    }
    Ok(())
}
