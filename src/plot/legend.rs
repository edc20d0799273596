//! Pieces the charts share around their plots: legend entries wrapped into rows above a plot,
//! a legend entry's text, the message drawn instead of an empty plot, and where the plot lies
//! in pixels of its drawing area.

use super::axis::Axis;
use super::{err, theme, DrawResult, Style};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A legend entry placed by [`wrap_entries`]: its left edge `x` and its row (from 0).
pub(crate) struct Placed<T> {
    pub x: i32,
    pub row: i32,
    pub item: T,
}

/// Lay legend entries out left to right from `x0`, each `key_w` plus its text wide and `gap`
/// apart, starting a new row where an entry (other than a row's first) would end past `x1`.
/// Returns the entries and the number of rows.
pub(crate) fn wrap_entries<DB: DrawingBackend, T>(
    area: &DrawingArea<DB, Shift>,
    items: impl IntoIterator<Item = T>,
    text: impl Fn(&T) -> &str,
    font: &TextStyle,
    (x0, x1): (i32, i32),
    key_w: i32,
    gap: i32,
) -> DrawResult<(Vec<Placed<T>>, i32)> {
    let mut placed = Vec::new();
    let (mut x, mut row) = (x0, 0);
    for item in items {
        let (tw, _) = area.estimate_text_size(text(&item), font).map_err(err)?;
        let width = key_w + tw as i32;
        if x > x0 && x + width > x1 {
            x = x0;
            row += 1;
        }
        placed.push(Placed { x, row, item });
        x += width + gap;
    }
    Ok((placed, row + 1))
}

/// A legend entry's text, left-aligned at `at` and centred on its row.
pub(crate) fn draw_entry_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    at: (i32, i32),
    font: &TextStyle,
) -> DrawResult {
    area.draw(&Text::new(
        text.to_string(),
        at,
        font.clone()
            .color(&theme::TEXT)
            .pos(Pos::new(HPos::Left, VPos::Center)),
    ))
    .map_err(err)
}

/// The message drawn in the top left corner instead of a plot with nothing to show.
pub(crate) fn draw_notice<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    message: &str,
    font: &FontDesc,
    style: &Style,
) -> DrawResult {
    area.draw(&Text::new(
        message,
        (style.ipx(16.0), style.ipx(16.0)),
        font.color(&theme::MUTED),
    ))
    .map_err(err)
}

/// The plot of `chart` in pixels of `area`: `(left, top, width, height)`.
pub(crate) fn plot_rect<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &ChartContext<'_, DB, Cartesian2d<Axis, Axis>>,
) -> (i32, i32, i32, i32) {
    let plot = chart.plotting_area().strip_coord_spec();
    let (ax, ay) = area.get_base_pixel();
    let (bx, by) = plot.get_base_pixel();
    let (pw, ph) = plot.dim_in_pixel();
    (bx - ax, by - ay, pw as i32, ph as i32)
}
