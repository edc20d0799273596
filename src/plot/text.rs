//! Text measurement for plotters backends.
//!
//! plotters lays out axis labels with `DrawingBackend::estimate_text_size`, whose default asks the
//! font module; on `wasm32` that module measures with DOM elements, which do not exist in a Web
//! Worker, in Node or in Deno. [`Measured`] wraps any backend and answers that question itself:
//! with a caller-supplied measure (the page passes the canvas' `measureText`) or with a table of
//! average glyph widths of a sans-serif font, good enough for placing tick labels.

use plotters::prelude::DrawingBackend;
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// Measures `text` at `px` pixels in font `family`, returning `(width, height)` in pixels.
pub type MeasureFn = dyn Fn(&str, f64, &str) -> (u32, u32);

/// A backend whose text measurement does not depend on a DOM.
pub struct Measured<'m, B> {
    inner: B,
    /// Font size of the backend as a multiple of the style size (SVG renders `size / 1.24`).
    font_scale: f64,
    measure: Option<&'m MeasureFn>,
}

impl<'m, B: DrawingBackend> Measured<'m, B> {
    /// Wrap `inner`, estimating widths from a glyph table; `font_scale` is the ratio between the
    /// size the backend renders and the style's size.
    pub fn new(inner: B, font_scale: f64) -> Self {
        Measured {
            inner,
            font_scale,
            measure: None,
        }
    }

    /// Wrap `inner`, measuring with `measure`.
    pub fn with_measure(inner: B, measure: &'m MeasureFn) -> Self {
        Measured {
            inner,
            font_scale: 1.0,
            measure: Some(measure),
        }
    }

    /// The wrapped backend.
    pub fn into_inner(self) -> B {
        self.inner
    }
}

/// Width of `text` in em for a typical sans-serif font (Helvetica/Arial metrics, rounded).
pub fn estimate_em(text: &str) -> f64 {
    text.chars()
        .map(|c| match c {
            '0'..='9' => 0.556,
            '.' | ',' | ':' | ';' | '!' | '|' | 'i' | 'j' | 'l' | '\'' => 0.278,
            ' ' => 0.278,
            '-' | '(' | ')' | '[' | ']' | 'f' | 't' | 'r' => 0.333,
            '−' | '+' | '=' | '<' | '>' | '~' | '×' => 0.584,
            'm' | 'w' | 'M' | 'W' | '@' | '%' => 0.833,
            'A'..='Z' => 0.667,
            'a'..='z' => 0.540,
            _ => 0.6,
        })
        .sum()
}

impl<B: DrawingBackend> DrawingBackend for Measured<'_, B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_text(text, style, pos)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<B::ErrorType>> {
        let px = style.size() * self.font_scale;
        Ok(match self.measure {
            Some(measure) => measure(text, px, style.family().as_str()),
            None => (
                (estimate_em(text) * px).ceil() as u32,
                (px * 1.15).ceil() as u32,
            ),
        })
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_narrower_than_capitals() {
        assert!(estimate_em("0.25") < estimate_em("MMMM"));
        assert!((estimate_em("10") - 1.112).abs() < 1e-9);
    }
}
