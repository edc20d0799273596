//! Quantization error versus clipping threshold, with each observer's choice marked: per-tensor
//! observers as a dot at (their threshold, their measured error), per-channel observers as a
//! dashed horizontal line at their error, and the curve's best threshold as a ring.

use super::axis::Axis;
use super::{err, fmt_num, theme, CurveView, DrawResult, Style};
use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Draw the curve chart into `area`.
pub fn draw_curve<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    view: &CurveView,
    style: &Style,
) -> DrawResult {
    let yv = |mse: f64, sqnr: Option<f64>| -> Option<f64> {
        if style.sqnr {
            sqnr.filter(|v| v.is_finite())
        } else {
            (mse > 0.0 && mse.is_finite()).then_some(mse)
        }
    };
    let pts: Vec<(f64, f64)> = view
        .points
        .iter()
        .filter(|p| p.0 > 0.0 && p.0.is_finite())
        .filter_map(|&(t, m, s)| yv(m, s).map(|y| (t, y)))
        .collect();
    let marks: Vec<(Option<f64>, f64, usize, &str)> = view
        .markers
        .iter()
        .filter_map(|m| {
            let y = yv(m.mse, m.sqnr_db)?;
            let x = m.threshold.filter(|t| *t > 0.0 && t.is_finite());
            Some((x, y, m.color, m.observer.as_str()))
        })
        .collect();
    let label_font = theme::font(style.px(11.0));
    if pts.is_empty() {
        area.draw(&Text::new(
            "No error curve for this tensor",
            (style.ipx(16.0), style.ipx(16.0)),
            label_font.color(&theme::MUTED),
        ))
        .map_err(err)?;
        return Ok(());
    }
    let mut x0 = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let mut x1 = pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let mut ylo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let mut yhi = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    for (x, y, _, _) in &marks {
        if let Some(x) = x {
            x0 = x0.min(*x);
            x1 = x1.max(*x);
        }
        ylo = ylo.min(*y);
        yhi = yhi.max(*y);
    }
    let x_axis = Axis::log(x0 / 1.06, x1 * 1.06);
    let y_axis = if style.sqnr {
        let pad = ((yhi - ylo) * 0.08).max(0.5);
        Axis::linear(ylo - pad, yhi + pad)
    } else {
        let f = (yhi / ylo).powf(0.06).max(1.2);
        Axis::log(ylo / f, yhi * f)
    };
    let (xr, yr) = (x_axis.range(), y_axis.range());
    let mut chart = ChartBuilder::on(area)
        .margin_top(style.ipx(12.0))
        .margin_right(style.ipx(20.0))
        .margin_left(style.ipx(6.0))
        .x_label_area_size(style.ipx(40.0))
        .y_label_area_size(style.ipx(70.0))
        .build_cartesian_2d(x_axis, y_axis)
        .map_err(err)?;
    let y_fmt = |v: &f64| {
        if style.sqnr {
            format!("{} dB", fmt_num(*v))
        } else {
            fmt_num(*v)
        }
    };
    let x_fmt = |v: &f64| fmt_num(*v);
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(theme::GRID.stroke_width(style.stroke(1.0)))
        .axis_style(theme::AXIS.stroke_width(style.stroke(1.0)))
        .x_labels(10)
        .y_labels(7)
        .label_style(label_font.color(&theme::MUTED))
        .axis_desc_style(theme::font(style.px(11.5)).color(&theme::MUTED))
        .x_desc("clipping threshold |t| (log scale)")
        .y_desc(if style.sqnr {
            "SQNR (dB)"
        } else {
            "MSE (log scale)"
        })
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .set_all_tick_mark_size(style.ipx(3.0))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            pts.iter().copied(),
            theme::CURVE.stroke_width(style.stroke(2.0)),
        ))
        .map_err(err)?
        .label(view.label.clone())
        .legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 16, y)], theme::CURVE.stroke_width(2))
        });
    if let Some(best) = view.best.and_then(|i| view.points.get(i)) {
        if let Some(y) = yv(best.1, best.2) {
            let below = !style.sqnr;
            let text = format!("best t = {}", fmt_num(best.0));
            let r = style.ipx(6.0).max(1) as u32;
            let element = EmptyElement::at((best.0, y))
                + Circle::new((0, 0), r, theme::CURVE.stroke_width(style.stroke(2.0)))
                + Text::new(
                    text,
                    (
                        0,
                        if below {
                            style.ipx(10.0)
                        } else {
                            -style.ipx(10.0)
                        },
                    ),
                    label_font.color(&theme::CURVE).pos(Pos::new(
                        HPos::Center,
                        if below { VPos::Top } else { VPos::Bottom },
                    )),
                );
            chart.draw_series(std::iter::once(element)).map_err(err)?;
        }
    }
    let r = style.ipx(5.0).max(1) as u32;
    for (x, y, color, name) in &marks {
        let c = theme::series(*color);
        let name = name.to_string();
        match x {
            Some(x) => {
                chart
                    .draw_series(std::iter::once(Circle::new((*x, *y), r, c.filled())))
                    .map_err(err)?
                    .label(name)
                    .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
            }
            None => {
                // Dashed horizontal line for observers without a single threshold.
                let (la, lb) = (xr.start.ln(), xr.end.ln());
                let step = (lb - la) / 60.0;
                let dashes = (0..60).step_by(2).map(|k| {
                    let a = (la + k as f64 * step).exp();
                    let b = (la + (k + 1) as f64 * step).exp();
                    PathElement::new(vec![(a, *y), (b, *y)], c.stroke_width(style.stroke(2.0)))
                });
                chart
                    .draw_series(dashes)
                    .map_err(err)?
                    .label(format!("{name} (per channel)"))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                    });
            }
        }
    }
    let _ = yr;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperMiddle)
        .margin(style.ipx(8.0))
        .legend_area_size(style.ipx(22.0))
        .label_font(theme::font(style.px(11.0)).color(&theme::TEXT))
        .background_style(WHITE.mix(0.9))
        .border_style(theme::AXIS.stroke_width(style.stroke(1.0)))
        .draw()
        .map_err(err)?;
    Ok(())
}
