//! Quantization error versus clipping threshold, with each observer's choice marked: per-tensor
//! observers as a dot at (their threshold, their measured error), per-channel observers as a
//! dashed horizontal line at their error, and the curve's best threshold as a ring.

use super::axis::Axis;
use super::legend::draw_entry_text;
use super::{err, fmt_num, theme, themed_mesh, CurveView, DrawResult, Marker, Style};
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
    let marks: Vec<(Option<f64>, f64, &Marker)> = view
        .markers
        .iter()
        .filter_map(|m| {
            let y = yv(m.mse, m.sqnr_db)?;
            let x = m.threshold.filter(|t| *t > 0.0 && t.is_finite());
            Some((x, y, m))
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
    for (x, y, _) in &marks {
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
    themed_mesh(&mut chart, style)
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
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            pts.iter().copied(),
            theme::CURVE.stroke_width(style.stroke(2.0)),
        ))
        .map_err(err)?;
    let mut legend = vec![(Key::Line, theme::CURVE, view.label.clone())];
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
    for (x, y, marker) in &marks {
        let c = theme::series(marker.color);
        let name = marker.observer.clone();
        match x {
            Some(x) => {
                chart
                    .draw_series(std::iter::once(Circle::new((*x, *y), r, c.filled())))
                    .map_err(err)?;
                legend.push((Key::Dot, c, name));
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
                chart.draw_series(dashes).map_err(err)?;
                legend.push((Key::Dash, c, format!("{name} (per {})", marker.slice)));
            }
        }
    }
    let _ = yr;
    if !style.legend {
        return Ok(());
    }
    // MSE curves are high at small thresholds (upper left), SQNR curves low there.
    let plot = chart.plotting_area().strip_coord_spec();
    draw_legend(&plot, &legend, !style.sqnr, style)?;
    Ok(())
}

/// Legend key shapes.
#[derive(Clone, Copy)]
enum Key {
    Line,
    Dot,
    Dash,
}

/// A legend box in a bottom (or top) left corner of `area`. Drawn by hand: plotters' own legend
/// measures text through the DOM, which Workers and Node do not have.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(Key, RGBColor, String)],
    bottom: bool,
    style: &Style,
) -> DrawResult {
    if entries.is_empty() {
        return Ok(());
    }
    let font: TextStyle = theme::font(style.px(11.0)).into();
    let line = style.ipx(17.0);
    let key_w = style.ipx(22.0);
    let pad = style.ipx(8.0);
    let mut text_w = 0;
    for (_, _, text) in entries {
        let (w, _) = area.estimate_text_size(text, &font).map_err(err)?;
        text_w = text_w.max(w as i32);
    }
    let (aw, ah) = area.dim_in_pixel();
    let w = (pad * 2 + key_w + text_w).min(aw as i32 - pad);
    let h = pad * 2 + line * entries.len() as i32 - style.ipx(4.0);
    let x0 = pad;
    let y0 = if bottom { ah as i32 - h - pad } else { pad };
    area.draw(&Rectangle::new(
        [(x0, y0), (x0 + w, y0 + h)],
        WHITE.mix(0.92).filled(),
    ))
    .map_err(err)?;
    area.draw(&Rectangle::new(
        [(x0, y0), (x0 + w, y0 + h)],
        theme::AXIS.stroke_width(style.stroke(1.0)),
    ))
    .map_err(err)?;
    for (i, (key, color, text)) in entries.iter().enumerate() {
        let cy = y0 + pad + line * i as i32 + style.ipx(6.0);
        let kx = x0 + pad;
        match key {
            Key::Line => area
                .draw(&PathElement::new(
                    vec![(kx, cy), (kx + style.ipx(16.0), cy)],
                    color.stroke_width(style.stroke(2.0)),
                ))
                .map_err(err)?,
            Key::Dash => {
                for k in 0..3 {
                    let a = kx + k * style.ipx(6.0);
                    area.draw(&PathElement::new(
                        vec![(a, cy), (a + style.ipx(4.0), cy)],
                        color.stroke_width(style.stroke(2.0)),
                    ))
                    .map_err(err)?;
                }
            }
            Key::Dot => area
                .draw(&Circle::new(
                    (kx + style.ipx(8.0), cy),
                    style.ipx(4.0).max(1) as u32,
                    color.filled(),
                ))
                .map_err(err)?,
        }
        draw_entry_text(area, text, (kx + key_w, cy), &font)?;
    }
    Ok(())
}
