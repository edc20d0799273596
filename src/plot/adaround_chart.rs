//! The AdaRound optimisation history: reconstruction loss (solid) and rounding-regulariser loss
//! (dashed) on a log axis at the left, the share of decided roundings (0–100 %) on a linear axis
//! at the right, over the planned iterations (so a running optimisation fills the chart from the
//! left). The end of the warm start, where the regulariser switches on, is a faint vertical line.
//! Losses that are zero, negative or not finite cannot be drawn on the log axis: the line breaks
//! there.

use super::axis::Axis;
use super::legend::{draw_entry_text, wrap_entries, Placed};
use super::{err, fmt_num, theme, themed_mesh, AdaRoundView, DrawResult, Style};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Colours of the three series.
const RECON: usize = 0;
const ROUND: usize = 4;
const BINARY: usize = 1;

/// The right axis' range: 0–100 % with a little room so that 0 and 100 % lines stay visible.
const PCT_LO: f64 = -3.0;
const PCT_HI: f64 = 103.0;

/// Runs of consecutive drawable points of one series.
fn runs(points: impl Iterator<Item = (f64, Option<f64>)>) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (x, y) in points {
        match (y, out.last_mut()) {
            (Some(y), Some(run)) => run.push((x, y)),
            (None, Some(run)) if !run.is_empty() => out.push(Vec::new()),
            _ => {}
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

fn positive(v: f64) -> Option<f64> {
    (v > 0.0 && v.is_finite()).then_some(v)
}

/// Legend key shapes.
#[derive(Clone, Copy)]
enum Key {
    Line,
    Dash,
}

/// Draw the AdaRound chart into `area`.
pub fn draw_adaround<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    view: &AdaRoundView,
    style: &Style,
) -> DrawResult {
    let label_font = theme::font(style.px(11.0));
    if view.history.is_empty() {
        area.draw(&Text::new(
            "No optimisation history yet",
            (style.ipx(16.0), style.ipx(16.0)),
            label_font.color(&theme::MUTED),
        ))
        .map_err(err)?;
        return Ok(());
    }
    let mut history = view.history.clone();
    history.sort_by_key(|p| p.iteration);
    let last = history.last().map_or(0, |p| p.iteration);
    let x_end = view.iterations.max(last).max(1) as f64;
    let x = |i: usize| i as f64;
    let recon = runs(
        history
            .iter()
            .map(|p| (x(p.iteration), positive(p.recon_loss))),
    );
    let round = runs(
        history
            .iter()
            .map(|p| (x(p.iteration), positive(p.round_loss))),
    );
    let binary = runs(history.iter().map(|p| {
        let b = p.binary_fraction;
        (
            x(p.iteration),
            b.is_finite().then(|| (b * 100.0).clamp(0.0, 100.0)),
        )
    }));
    let losses = recon.iter().chain(&round).flatten().map(|p| p.1);
    let (lo, hi) = losses.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let y_axis = if lo.is_finite() && hi.is_finite() {
        // At least a decade, so that the axis has ticks.
        let f = (hi / lo).powf(0.06).max(1.5).max((10.0 * lo / hi).sqrt());
        Axis::log(lo / f, hi * f)
    } else {
        Axis::log(1e-3, 1.0)
    };

    // Legend above the plot, one row (two when narrow).
    let (w, _) = area.dim_in_pixel();
    let margin_left = style.ipx(6.0);
    let margin_right = style.ipx(6.0);
    let y_label_area = style.ipx(64.0);
    let right_label_area = style.ipx(58.0);
    let legend_font: TextStyle = theme::font(style.px(11.0)).into();
    let entries = [
        (Key::Line, RECON, "reconstruction loss"),
        (Key::Dash, ROUND, "rounding regulariser"),
        (Key::Line, BINARY, "decided roundings (right axis)"),
    ];
    let key_w = style.ipx(24.0);
    let entry_gap = style.ipx(18.0);
    let row_h = style.ipx(18.0);
    let x0 = margin_left + y_label_area;
    let x1 = (w as i32 - margin_right - right_label_area).max(x0 + 1);
    let (placed, rows) = wrap_entries(
        area,
        entries,
        |(_, _, text)| *text,
        &legend_font,
        (x0, x1),
        key_w,
        entry_gap,
    )?;
    let legend_top = style.ipx(8.0);
    let margin_top = legend_top + rows * row_h + style.ipx(8.0);

    let mut chart = ChartBuilder::on(area)
        .margin_top(margin_top)
        .margin_right(margin_right)
        .margin_left(margin_left)
        .x_label_area_size(style.ipx(40.0))
        .y_label_area_size(y_label_area)
        .right_y_label_area_size(right_label_area)
        .build_cartesian_2d(Axis::linear(0.0, x_end), y_axis)
        .map_err(err)?
        .set_secondary_coord(Axis::linear(0.0, x_end), Axis::linear(PCT_LO, PCT_HI));
    let fmt = |v: &f64| fmt_num(*v);
    let pct = |v: &f64| format!("{} %", fmt_num(*v));
    let iteration = |v: &f64| {
        if v.fract() != 0.0 {
            String::new()
        } else if *v >= 1000.0 && (v / 1000.0).fract() == 0.0 {
            format!("{}k", v / 1000.0)
        } else {
            fmt_num(*v)
        }
    };
    let desc_font = theme::font(style.px(11.5)).color(&theme::MUTED);
    themed_mesh(&mut chart, style)
        .x_labels((x_end as usize + 1).min(8))
        .y_labels(6)
        .label_style(label_font.color(&theme::MUTED))
        .axis_desc_style(desc_font.clone())
        .x_desc("iteration")
        .y_desc("loss (log scale)")
        .x_label_formatter(&iteration)
        .y_label_formatter(&fmt)
        .draw()
        .map_err(err)?;
    chart
        .configure_secondary_axes()
        .axis_style(theme::AXIS.stroke_width(style.stroke(1.0)))
        .y_labels(6)
        .label_style(label_font.color(&theme::MUTED))
        .axis_desc_style(desc_font)
        .y_desc("decided roundings")
        .y_label_formatter(&pct)
        .draw()
        .map_err(err)?;

    // Warm-start end: a faint vertical line with a small caption.
    let warm = view.warm_start_end as f64;
    if warm > 0.0 && warm < x_end {
        chart
            .draw_secondary_series(DashedLineSeries::new(
                [(warm, PCT_LO), (warm, PCT_HI)],
                style.ipx(4.0),
                style.ipx(4.0),
                theme::AXIS.stroke_width(style.stroke(1.0)),
            ))
            .map_err(err)?;
    }

    let stroke2 = style.stroke(2.0);
    let c_recon = theme::series(RECON);
    let c_round = theme::series(ROUND);
    let c_bin = theme::series(BINARY);
    for run in &binary {
        chart
            .draw_secondary_series(LineSeries::new(
                run.iter().copied(),
                c_bin.stroke_width(style.stroke(1.5)),
            ))
            .map_err(err)?;
    }
    for run in &round {
        chart
            .draw_series(DashedLineSeries::new(
                run.iter().copied(),
                style.ipx(6.0),
                style.ipx(4.0),
                c_round.stroke_width(stroke2),
            ))
            .map_err(err)?;
    }
    for run in &recon {
        chart
            .draw_series(LineSeries::new(
                run.iter().copied(),
                c_recon.stroke_width(stroke2),
            ))
            .map_err(err)?;
    }
    // Points with no drawable neighbour as small dots (the latest ones get a larger one).
    let small = style.ipx(1.5).max(1) as u32;
    let lone = |r: &[Vec<(f64, f64)>]| -> Vec<(f64, f64)> {
        let n = r.len().saturating_sub(1);
        r.iter()
            .take(n)
            .filter(|run| run.len() == 1)
            .filter_map(|run| run.first().copied())
            .collect()
    };
    chart
        .draw_secondary_series(
            lone(&binary)
                .into_iter()
                .map(|p| Circle::new(p, small, c_bin.filled())),
        )
        .map_err(err)?;
    chart
        .draw_series(
            lone(&round)
                .into_iter()
                .map(|p| Circle::new(p, small, c_round.filled()))
                .chain(
                    lone(&recon)
                        .into_iter()
                        .map(|p| Circle::new(p, small, c_recon.filled())),
                ),
        )
        .map_err(err)?;
    // The latest value of each series as a dot (the only mark while there is one point).
    let dot = style.ipx(3.5).max(2) as u32;
    let latest = |r: &[Vec<(f64, f64)>]| r.last().and_then(|run| run.last()).copied();
    if let Some(p) = latest(&binary) {
        chart
            .draw_secondary_series(std::iter::once(Circle::new(p, dot, c_bin.filled())))
            .map_err(err)?;
    }
    if let Some(p) = latest(&round) {
        chart
            .draw_series(std::iter::once(Circle::new(p, dot, c_round.filled())))
            .map_err(err)?;
    }
    if let Some(p) = latest(&recon) {
        chart
            .draw_series(std::iter::once(Circle::new(p, dot, c_recon.filled())))
            .map_err(err)?;
    }

    if warm > 0.0 && warm < x_end {
        // The caption goes left of the line (the warm start, where only the reconstruction
        // loss runs, leaves the top free) unless there is no room.
        let caption = "regulariser on";
        let caption_font: TextStyle = theme::font(style.px(10.5)).into();
        let (tw, th) = area
            .estimate_text_size(caption, &caption_font)
            .map_err(err)?;
        let (pw, _) = chart.plotting_area().dim_in_pixel();
        let room = pw as f64 * warm / x_end;
        let left_side = room > tw as f64 + style.px(10.0);
        let dx = if left_side {
            -style.ipx(4.0)
        } else {
            style.ipx(4.0)
        };
        let anchor = if left_side { HPos::Right } else { HPos::Left };
        let (tw, th) = (tw as i32, th as i32);
        let bx = if left_side { dx - tw } else { dx };
        chart
            .draw_secondary_series(std::iter::once(
                EmptyElement::at((warm, PCT_HI))
                    + Rectangle::new(
                        [(bx - 2, 0), (bx + tw + 2, th)],
                        theme::BACKGROUND.mix(0.85).filled(),
                    )
                    + Text::new(
                        caption,
                        (dx, 0),
                        caption_font
                            .color(&theme::MUTED)
                            .pos(Pos::new(anchor, VPos::Top)),
                    ),
            ))
            .map_err(err)?;
    }

    for Placed {
        x: lx,
        row,
        item: (key, color, text),
    } in placed
    {
        let cy = legend_top + row * row_h + row_h / 2;
        let c = theme::series(color);
        let style2 = c.stroke_width(stroke2);
        match key {
            Key::Line => area
                .draw(&PathElement::new(
                    vec![(lx, cy), (lx + style.ipx(18.0), cy)],
                    style2,
                ))
                .map_err(err)?,
            Key::Dash => {
                for k in 0..3 {
                    let a = lx + k * style.ipx(7.0);
                    area.draw(&PathElement::new(
                        vec![(a, cy), (a + style.ipx(4.0), cy)],
                        style2,
                    ))
                    .map_err(err)?;
                }
            }
        }
        draw_entry_text(area, text, (lx + key_w, cy), &legend_font)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::svg::adaround_svg;
    use crate::plot::AdaRoundPoint;

    /// A history like a real run: the loss falls, the regulariser starts after the warm start
    /// and decays as β anneals, the decided share climbs to 100 %.
    fn history(n: usize, iterations: usize, warm: usize) -> Vec<AdaRoundPoint> {
        (0..n)
            .map(|k| {
                let it = k * iterations / 100;
                let t = it as f64 / iterations as f64;
                let on = it >= warm;
                AdaRoundPoint {
                    iteration: it,
                    recon_loss: 0.02 * (-3.0 * t).exp()
                        + 0.004
                        + 0.001 * (k as f64 * 0.7).sin().abs(),
                    round_loss: if on {
                        40.0 * (1.0 - t).powi(2) + 0.01
                    } else {
                        0.0
                    },
                    beta: (20.0 - 18.0 * t) as f32,
                    binary_fraction: if on {
                        0.12 + 0.88 * ((t - 0.2) / 0.7).clamp(0.0, 1.0).powf(0.6)
                    } else {
                        0.12
                    },
                }
            })
            .collect()
    }

    fn svg(view: &AdaRoundView, size: (u32, u32), name: &str) -> String {
        let svg = adaround_svg(view, &Style::default(), size).unwrap();
        if let Ok(dir) = std::env::var("QUANTSCOPE_SVG_OUT") {
            std::fs::write(
                format!("{dir}/adaround_{name}_{}x{}.svg", size.0, size.1),
                &svg,
            )
            .unwrap();
        }
        svg
    }

    #[test]
    fn a_full_history_draws_three_series_and_both_axes() {
        let view = AdaRoundView {
            history: history(100, 10_000, 2_000),
            iterations: 10_000,
            warm_start_end: 2_000,
        };
        for size in [(900, 380), (600, 320)] {
            let s = svg(&view, size, "full");
            for text in [
                "reconstruction loss",
                "rounding regulariser",
                "decided roundings (right axis)",
                "loss (log scale)",
                "iteration",
                "100 %",
                "10k",
                "regulariser on",
            ] {
                assert!(s.contains(text), "{text} at {size:?}");
            }
            assert!(s.matches("<polyline").count() >= 3, "three series");
            assert_eq!(s.matches("<circle").count(), 3, "latest values");
        }
    }

    #[test]
    fn a_running_history_leaves_the_rest_of_the_axis_empty() {
        let view = AdaRoundView {
            history: history(30, 10_000, 2_000),
            iterations: 10_000,
            warm_start_end: 2_000,
        };
        let s = svg(&view, (900, 380), "running");
        assert!(s.contains("10k"), "x axis reaches the planned end");
    }

    #[test]
    fn edge_cases_do_not_fail() {
        let empty = AdaRoundView::default();
        assert!(svg(&empty, (600, 320), "empty").contains("No optimisation history yet"));
        let one = AdaRoundView {
            history: history(1, 100, 20),
            iterations: 0,
            warm_start_end: 0,
        };
        let s = svg(&one, (600, 320), "one");
        // Only the marks of the latest values: reconstruction and decided share (no regulariser
        // loss during the warm start).
        assert_eq!(s.matches("<circle").count(), 2);
        let mut bad = history(100, 1000, 200);
        for (k, p) in bad.iter_mut().enumerate() {
            match k % 5 {
                0 => p.recon_loss = 0.0,
                1 => p.recon_loss = -1.0,
                2 => p.recon_loss = f64::NAN,
                3 => p.binary_fraction = f64::INFINITY,
                _ => {
                    p.round_loss = f64::NEG_INFINITY;
                    p.recon_loss = f64::INFINITY;
                }
            }
        }
        let view = AdaRoundView {
            history: bad,
            iterations: 1000,
            warm_start_end: 5000,
        };
        let s = svg(&view, (600, 320), "bad");
        // Every fifth reconstruction loss is drawable, each without a drawable neighbour.
        assert!(s.matches("<circle").count() >= 19, "isolated points drawn");
        let zeros = AdaRoundView {
            history: (0..10)
                .map(|i| AdaRoundPoint {
                    iteration: i,
                    recon_loss: 0.0,
                    round_loss: 0.0,
                    beta: 20.0,
                    binary_fraction: 1.0,
                })
                .collect(),
            iterations: 10,
            warm_start_end: 2,
        };
        let s = svg(&zeros, (600, 320), "zeros");
        assert!(s.contains("100 %"));
        assert!(adaround_svg(&zeros, &Style::default(), (1, 1)).is_ok());
    }

    #[test]
    fn progress_json_reads_as_a_view_even_with_non_finite_losses() {
        let p = crate::quantizers::adaround::Progress {
            iteration: 7,
            recon_loss: f64::NAN,
            round_loss: 0.5,
            beta: 20.0,
            binary_fraction: 0.25,
        };
        let json = format!(
            r#"{{"history":[{}],"iterations":100,"warm_start_end":20}}"#,
            serde_json::to_string(&p).unwrap()
        );
        let view: AdaRoundView = serde_json::from_str(&json).unwrap();
        assert_eq!(view.history[0].iteration, 7);
        assert!(view.history[0].recon_loss.is_nan());
        assert_eq!(view.history[0].round_loss, 0.5);
        assert_eq!(AdaRoundPoint::from(&p).binary_fraction, 0.25);
    }
}
