//! The histogram of one panel: the tensor's values, the observer's clipping range as two lines,
//! the representable range of its grid shaded, and the values it clips highlighted.

use super::axis::Axis;
use super::{err, fmt_decade, fmt_num, theme, themed_mesh, DrawResult, Hist, PanelView, Style};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The x range shown: the data, the clipping range and the grid, with a little padding.
pub(crate) fn x_range(hist: &Hist, view: &PanelView) -> (f64, f64) {
    let mut lo = hist.lo;
    let mut hi = hist.hi;
    for r in [view.clip, view.grid].into_iter().flatten() {
        if r[0].is_finite() && r[1].is_finite() {
            lo = lo.min(r[0]);
            hi = hi.max(r[1]);
        }
    }
    if hi <= lo {
        hi = lo + 1.0;
        lo -= 1.0;
    }
    let pad = (hi - lo) * 0.04;
    (lo - pad, hi + pad)
}

/// Bars of `hist` for a plot about `columns` bars wide over `[x0, x1]`: neighbouring bins are
/// merged `k` at a time (never split, so nothing aliases), each bar is `(left, right, inside,
/// clipped)` where a bin counts as clipped when its centre lies outside `clip`.
pub(crate) fn columns(
    hist: &Hist,
    x0: f64,
    x1: f64,
    columns: usize,
    clip: Option<[f64; 2]>,
) -> Vec<(f64, f64, f64, f64)> {
    let bins = hist.counts.len();
    if bins == 0 || hist.hi <= hist.lo {
        return Vec::new();
    }
    let w = (hist.hi - hist.lo) / bins as f64;
    let bins_in_view = ((x1 - x0) / w).max(1.0);
    let k = (bins_in_view / columns.max(1) as f64).ceil().max(1.0) as usize;
    let mut out: Vec<(f64, f64, f64, f64)> = Vec::with_capacity(bins.div_ceil(k));
    for (j, chunk) in hist.counts.chunks(k).enumerate() {
        let left = hist.lo + (j * k) as f64 * w;
        let right = left + chunk.len() as f64 * w;
        let (mut inside, mut clipped) = (0.0, 0.0);
        for (i, &c) in chunk.iter().enumerate() {
            let centre = left + (i as f64 + 0.5) * w;
            if clip.is_some_and(|[a, b]| centre < a || centre > b) {
                clipped += c;
            } else {
                inside += c;
            }
        }
        out.push((left, right, inside, clipped));
    }
    out
}

/// Draw the histogram panel into `area`.
pub fn draw_histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    hist: &Hist,
    view: &PanelView,
    style: &Style,
) -> DrawResult {
    let (w, _h) = area.dim_in_pixel();
    let color = theme::series(view.color);
    let (x0, x1) = x_range(hist, view);
    let left = style.ipx(52.0);
    let plot_w = (w as i32 - left - style.ipx(12.0)).max(10) as usize;
    let ncols = (plot_w / style.ipx(2.0).max(1) as usize).clamp(8, 600);
    let cols = columns(hist, x0, x1, ncols, view.clip);
    let peak = cols.iter().map(|c| c.2 + c.3).fold(0.0, f64::max);
    let (y0, y1) = if style.log_counts {
        (-0.45, (peak.max(1.0)).log10().max(1.0) * 1.08)
    } else {
        (0.0, peak.max(1.0) * 1.08)
    };
    let ty = |c: f64| -> f64 {
        if style.log_counts {
            if c > 0.0 {
                c.log10().max(-0.45)
            } else {
                -0.45
            }
        } else {
            c
        }
    };
    let label_font = theme::font(style.px(11.0));
    let mut chart = ChartBuilder::on(area)
        .margin_top(style.ipx(10.0))
        .margin_right(style.ipx(12.0))
        .margin_left(style.ipx(4.0))
        .x_label_area_size(style.ipx(26.0))
        .y_label_area_size(left)
        .build_cartesian_2d(Axis::linear(x0, x1), Axis::linear(y0, y1))
        .map_err(err)?;
    let y_fmt = |v: &f64| {
        if style.log_counts {
            fmt_decade(*v)
        } else {
            fmt_num(*v)
        }
    };
    themed_mesh(&mut chart, style)
        .disable_x_mesh()
        .x_labels(8)
        .y_labels(5)
        .label_style(label_font.color(&theme::MUTED))
        .x_label_formatter(&|v| fmt_num(*v))
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(err)?;
    // Representable range of the grid.
    if let Some([g0, g1]) = view.grid {
        if g0.is_finite() && g1.is_finite() {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(g0, y0), (g1, y1)],
                    color.mix(0.09).filled(),
                )))
                .map_err(err)?;
            for g in [g0, g1] {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(g, y0), (g, y1)],
                        color.mix(0.35).stroke_width(style.stroke(1.0)),
                    )))
                    .map_err(err)?;
            }
        }
    }
    // Clipping range: two lines, under the bars so that values sitting on a line stay visible.
    let clip: Vec<f64> = view
        .clip
        .map(|c| c.to_vec())
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.is_finite())
        .collect();
    for &c in &clip {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(c, y0), (c, y1)],
                color.stroke_width(style.stroke(2.0)),
            )))
            .map_err(err)?;
    }
    let min_w = 1.5 * (x1 - x0) / plot_w as f64;
    // Bars, stacked: values kept, then values clipped.
    let bars = cols.iter().flat_map(|&(left, right, inside, clipped)| {
        // At least 1.5 device pixels wide, so that a lone outlier bin is never lost.
        let (a, b) = if right - left < min_w {
            let mid = (left + right) / 2.0;
            (mid - min_w / 2.0, mid + min_w / 2.0)
        } else {
            (left, right)
        };
        let mut out = Vec::with_capacity(2);
        if inside > 0.0 {
            out.push(Rectangle::new(
                [(a, y0), (b, ty(inside))],
                theme::BAR.filled(),
            ));
        }
        if clipped > 0.0 {
            out.push(Rectangle::new(
                [(a, ty(inside)), (b, ty(inside + clipped))],
                theme::CLIPPED.filled(),
            ));
        }
        out
    });
    chart.draw_series(bars).map_err(err)?;
    // Their values, inside the range next to each line.
    if let Some([c0, c1]) = view.clip {
        let value_font = theme::font(style.px(10.5));
        // Inside the range when there is room for both labels, else outside their lines.
        let gap = (chart.backend_coord(&(c1, y1)).0 - chart.backend_coord(&(c0, y1)).0).abs();
        let inside = gap > style.ipx(120.0);
        for (k, c) in [c0, c1].into_iter().enumerate() {
            if !c.is_finite() {
                continue;
            }
            let (anchor, dx) = match (k == 0, inside) {
                (true, true) | (false, false) => (Pos::new(HPos::Left, VPos::Top), style.ipx(4.0)),
                (true, false) | (false, true) => {
                    (Pos::new(HPos::Right, VPos::Top), -style.ipx(4.0))
                }
            };
            let label = EmptyElement::at((c, y1))
                + Text::new(
                    fmt_num(c),
                    (dx, style.ipx(2.0)),
                    value_font.color(&color).pos(anchor),
                );
            chart.draw_series(std::iter::once(label)).map_err(err)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_split_kept_and_clipped_values() {
        let h = Hist {
            lo: 0.0,
            hi: 4.0,
            counts: vec![1.0, 2.0, 3.0, 4.0],
        };
        let c = columns(&h, 0.0, 4.0, 2, Some([0.0, 2.6]));
        assert_eq!(c, vec![(0.0, 2.0, 3.0, 0.0), (2.0, 4.0, 3.0, 4.0)]);
        let (a, b) = x_range(
            &h,
            &PanelView {
                grid: Some([-4.0, 4.0]),
                ..Default::default()
            },
        );
        assert!(a < -4.0 && b > 4.0);
    }
}
