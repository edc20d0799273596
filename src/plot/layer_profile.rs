//! The layer profile of a checkpoint: the SQNR of every tensor, in checkpoint order, one line per
//! quantization method, over bands that group the tensors by layer, so that a bad layer stands
//! out at a glance.
//!
//! * x: tensors in checkpoint order (one slot each); y: SQNR in dB (higher is better), the range
//!   of the finite values, padded.
//! * Consecutive tensors with the same layer index (parsed from their names, see
//!   [`crate::model::layers`]) share a band; bands alternate in shade and carry their index at
//!   the top when it fits. Tensors without a layer (embeddings, heads) get no band.
//! * One series per method in the method's colour: a thin line through the tensors that have a
//!   result (broken where one has none) and a dot per result; the first method (the one the
//!   ranking sorts by) is drawn last and thicker.
//! * The lowest SQNR of the first method is labelled with its tensor's name; the highlighted
//!   tensor (the table row under the pointer) gets a vertical rule and its name; skipped
//!   tensors are marked with a grey × on the bottom edge.

use super::axis::Axis;
use super::legend::{draw_entry_text, draw_notice, plot_rect, wrap_entries, Placed};
use super::{err, fmt_num, theme, DrawResult, Style};
use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

/// One tensor of the profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct ProfileTensor {
    pub name: String,
    /// Layer index parsed from the name.
    #[serde(default)]
    pub layer: Option<usize>,
    /// SQNR in dB per method (in [`LayerProfileView::methods`] order); `None` where the method
    /// has no finite result for this tensor.
    #[serde(default)]
    pub sqnr_db: Vec<Option<f64>>,
    /// The tensor could not be ranked.
    #[serde(default)]
    pub skipped: bool,
}

/// The layer profile's data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct LayerProfileView {
    /// Method ids, one series each (colour `i`); the first is the ranking's.
    pub methods: Vec<String>,
    /// Tensors in checkpoint order.
    pub tensors: Vec<ProfileTensor>,
    /// Index into `tensors` of the tensor to emphasise.
    #[serde(default)]
    pub highlighted: Option<usize>,
}

/// Runs of consecutive tensors with the same layer: `(first, last, layer)`.
fn layer_bands(tensors: &[ProfileTensor]) -> Vec<(usize, usize, usize)> {
    let mut bands: Vec<(usize, usize, usize)> = Vec::new();
    for (i, t) in tensors.iter().enumerate() {
        let Some(layer) = t.layer else { continue };
        match bands.last_mut() {
            Some((_, last, l)) if *l == layer && *last + 1 == i => *last = i,
            _ => bands.push((i, i, layer)),
        }
    }
    bands
}

fn finite(v: &Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

/// Draw the layer profile into `area`.
pub fn draw_layer_profile<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    view: &LayerProfileView,
    style: &Style,
) -> DrawResult {
    let label_font = theme::font(style.px(11.0));
    let values: Vec<f64> = view
        .tensors
        .iter()
        .flat_map(|t| t.sqnr_db.iter().filter_map(finite))
        .collect();
    if values.is_empty() {
        let message = if view.tensors.is_empty() {
            "No tensors ranked yet"
        } else {
            "No SQNR to draw: no method has a finite result"
        };
        return draw_notice(area, message, &label_font, style);
    }
    let n = view.tensors.len();
    let (w, _) = area.dim_in_pixel();

    // Legend: one entry per method, wrapped into rows.
    let legend_font: TextStyle = theme::font(style.px(11.0)).into();
    let margin_left = style.ipx(6.0);
    let margin_right = style.ipx(14.0);
    let y_label_area = style.ipx(44.0);
    let row_h = style.ipx(18.0);
    let key_w = style.ipx(20.0);
    let gap = style.ipx(16.0);
    let x0 = margin_left + y_label_area;
    let x1 = (w as i32 - margin_right).max(x0 + 1);
    let texts = view.methods.iter().enumerate().map(|(i, m)| {
        if i == 0 {
            format!("{m} (ranking)")
        } else {
            m.clone()
        }
    });
    let (entries, rows) = wrap_entries(
        area,
        texts.enumerate(),
        |(_, text)| text.as_str(),
        &legend_font,
        (x0, x1),
        key_w,
        gap,
    )?;
    let legend_top = style.ipx(6.0);
    let layer_row = style.ipx(16.0);
    let margin_top = legend_top + rows * row_h + style.ipx(4.0) + layer_row;

    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let (lo, hi) = if hi - lo < 10.0 {
        let mid = (lo + hi) / 2.0;
        (mid - 5.0, mid + 5.0)
    } else {
        (lo, hi)
    };
    let pad = (hi - lo) * 0.08;
    let y_axis = Axis::linear(lo - pad, hi + pad);
    let x_axis = Axis::linear(-0.5, n as f64 - 0.5);
    let mut chart = ChartBuilder::on(area)
        .margin_top(margin_top)
        .margin_right(margin_right)
        .margin_left(margin_left)
        .margin_bottom(style.ipx(4.0))
        .x_label_area_size(style.ipx(26.0))
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(x_axis, y_axis)
        .map_err(err)?;
    // Pixels of `area`: the plot is at (left, top), pw × ph.
    let (left, top, pw, ph) = plot_rect(area, &chart);
    let plot = chart.plotting_area().strip_coord_spec();
    let slot = pw as f64 / n.max(1) as f64;
    let x_of = |i: usize| left + ((i as f64 + 0.5) * slot).round() as i32;
    let y_of = |v: f64| y_axis.map(&v, (top + ph - 1, top));
    let edge = |i: usize| left + (i as f64 * slot).round() as i32;

    // Layer bands, their indices above the plot.
    let band_light = RGBColor(0xf3, 0xf5, 0xf8);
    let band_dark = RGBColor(0xe6, 0xea, 0xf0);
    let layer_font: TextStyle = theme::font(style.px(10.5)).into();
    let mut last_label_end = i32::MIN;
    for (k, &(first, last, layer)) in layer_bands(&view.tensors).iter().enumerate() {
        let (bx0, bx1) = (edge(first), edge(last + 1));
        let shade = if k % 2 == 0 { band_dark } else { band_light };
        plot.draw(&Rectangle::new(
            [(bx0 - left, 0), (bx1 - left, ph)],
            shade.filled(),
        ))
        .map_err(err)?;
        let text = layer.to_string();
        let (tw, _) = area.estimate_text_size(&text, &layer_font).map_err(err)?;
        let cx = (bx0 + bx1) / 2;
        if cx - tw as i32 / 2 > last_label_end + style.ipx(3.0) {
            area.draw(&Text::new(
                text,
                (cx, top - style.ipx(3.0)),
                layer_font
                    .clone()
                    .color(&theme::MUTED)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))
            .map_err(err)?;
            last_label_end = cx + tw as i32 / 2;
        }
    }
    area.draw(&Text::new(
        "layer",
        (left - style.ipx(6.0), top - style.ipx(3.0)),
        layer_font
            .clone()
            .color(&theme::MUTED)
            .pos(Pos::new(HPos::Right, VPos::Bottom)),
    ))
    .map_err(err)?;
    // The mesh over the bands.
    let fmt = |v: &f64| fmt_num(*v);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(2)
        .x_label_formatter(&|_| String::new())
        .light_line_style(TRANSPARENT)
        .bold_line_style(theme::GRID.stroke_width(style.stroke(1.0)))
        .axis_style(theme::AXIS.stroke_width(style.stroke(1.0)))
        .y_labels(6)
        .label_style(label_font.color(&theme::MUTED))
        .axis_desc_style(theme::font(style.px(11.5)).color(&theme::MUTED))
        .x_desc("tensors in checkpoint order · shaded bands: layers (index from the names)")
        .y_desc("SQNR (dB)")
        .y_label_formatter(&fmt)
        .set_all_tick_mark_size(style.ipx(3.0))
        .draw()
        .map_err(err)?;

    // The highlighted tensor: a vertical rule.
    if let Some(h) = view.highlighted.filter(|&h| h < n) {
        let x = x_of(h);
        area.draw(&PathElement::new(
            vec![(x, top), (x, top + ph)],
            theme::TEXT.mix(0.5).stroke_width(style.stroke(1.5)),
        ))
        .map_err(err)?;
    }

    // Series: later methods first, the ranking's on top.
    let dot = style.ipx(if n > 400 { 1.5 } else { 2.5 }).max(1) as u32;
    for m in (0..view.methods.len()).rev() {
        let color = theme::series(m);
        let width = if m == 0 { 2.0 } else { 1.0 };
        let mut run: Vec<(i32, i32)> = Vec::new();
        let mut runs: Vec<Vec<(i32, i32)>> = Vec::new();
        for (i, t) in view.tensors.iter().enumerate() {
            match t.sqnr_db.get(m).and_then(finite) {
                Some(v) => run.push((x_of(i), y_of(v))),
                None if !run.is_empty() => runs.push(std::mem::take(&mut run)),
                None => {}
            }
        }
        if !run.is_empty() {
            runs.push(run);
        }
        for r in &runs {
            if r.len() > 1 {
                area.draw(&PathElement::new(
                    r.clone(),
                    color
                        .mix(if m == 0 { 0.9 } else { 0.55 })
                        .stroke_width(style.stroke(width)),
                ))
                .map_err(err)?;
            }
            for &p in r {
                let size = if m == 0 { dot + 1 } else { dot };
                area.draw(&Circle::new(p, size, color.filled()))
                    .map_err(err)?;
            }
        }
    }

    // Skipped tensors on the bottom edge.
    let cross = style.ipx(3.5);
    for (i, t) in view.tensors.iter().enumerate() {
        if t.skipped {
            let (x, y) = (x_of(i), top + ph - cross - style.ipx(2.0));
            for (a, b) in [
                ((x - cross, y - cross), (x + cross, y + cross)),
                ((x - cross, y + cross), (x + cross, y - cross)),
            ] {
                area.draw(&PathElement::new(
                    vec![a, b],
                    theme::MUTED.stroke_width(style.stroke(1.5)),
                ))
                .map_err(err)?;
            }
        }
    }

    // Legend.
    for Placed {
        x,
        row,
        item: (i, text),
    } in &entries
    {
        let cy = legend_top + row * row_h + row_h / 2;
        let c = theme::series(*i);
        area.draw(&PathElement::new(
            vec![(*x, cy), (x + style.ipx(14.0), cy)],
            c.stroke_width(style.stroke(if *i == 0 { 2.0 } else { 1.0 })),
        ))
        .map_err(err)?;
        area.draw(&Circle::new((x + style.ipx(7.0), cy), dot + 1, c.filled()))
            .map_err(err)?;
        draw_entry_text(area, text, (x + key_w, cy), &legend_font)?;
    }

    // Names: the worst tensor of the ranking's method, and the highlighted one.
    let worst = view
        .tensors
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.sqnr_db.first().and_then(finite).map(|v| (i, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let mut named: Vec<(usize, Option<f64>, bool)> = Vec::new();
    if let Some((i, v)) = worst {
        named.push((i, Some(v), false));
    }
    if let Some(h) = view.highlighted.filter(|&h| h < n) {
        named.retain(|(i, _, _)| *i != h);
        let v = view.tensors[h].sqnr_db.first().and_then(finite);
        named.push((h, v, true));
    }
    for (i, v, bold) in named {
        let t = &view.tensors[i];
        let text = match v {
            Some(v) => format!("{} · {} dB", t.name, fmt_num(v)),
            None => t.name.clone(),
        };
        let font = if bold {
            label_font.clone().style(FontStyle::Bold)
        } else {
            label_font.clone()
        };
        let font: TextStyle = font.into();
        let (tw, th) = area.estimate_text_size(&text, &font).map_err(err)?;
        let (tw, th) = (tw as i32, th as i32);
        let x = x_of(i);
        let y = v.map_or(top + th, y_of);
        // Beside the point, on the side with room, kept inside the plot.
        let right = x + style.ipx(7.0) + tw <= left + pw;
        let (tx, pos) = if right {
            (x + style.ipx(7.0), HPos::Left)
        } else {
            (x - style.ipx(7.0), HPos::Right)
        };
        let ty = y.clamp(top + th / 2 + 1, top + ph - th / 2 - 1);
        let (bx0, bx1) = if right { (tx, tx + tw) } else { (tx - tw, tx) };
        area.draw(&Rectangle::new(
            [(bx0 - 2, ty - th / 2 - 1), (bx1 + 2, ty + th / 2 + 1)],
            theme::BACKGROUND.mix(0.85).filled(),
        ))
        .map_err(err)?;
        area.draw(&Text::new(
            text,
            (tx, ty),
            font.color(&theme::TEXT).pos(Pos::new(pos, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(name: &str, layer: Option<usize>, sqnr: &[Option<f64>]) -> ProfileTensor {
        ProfileTensor {
            name: name.into(),
            layer,
            sqnr_db: sqnr.to_vec(),
            skipped: false,
        }
    }

    #[test]
    fn bands_group_consecutive_layers() {
        let ts = vec![
            tensor("emb", None, &[]),
            tensor("l0.a", Some(0), &[]),
            tensor("l0.b", Some(0), &[]),
            tensor("l1.a", Some(1), &[]),
            tensor("pool", None, &[]),
            tensor("l1.z", Some(1), &[]),
        ];
        assert_eq!(layer_bands(&ts), vec![(1, 2, 0), (3, 3, 1), (5, 5, 1)]);
    }
}
