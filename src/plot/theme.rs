//! Colours and fonts shared by every plot (and mirrored by the page's CSS).

use plotters::prelude::*;
use plotters::style::FontDesc;

/// Font stack: the platform UI font.
pub const FAMILY: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

/// Plot background.
pub const BACKGROUND: RGBColor = RGBColor(0xff, 0xff, 0xff);
/// Exported panel background.
pub const PANEL: RGBColor = RGBColor(0xff, 0xff, 0xff);
/// Main text.
pub const TEXT: RGBColor = RGBColor(0x1f, 0x29, 0x33);
/// Secondary text and axis labels.
pub const MUTED: RGBColor = RGBColor(0x61, 0x6e, 0x7c);
/// Axis lines.
pub const AXIS: RGBColor = RGBColor(0xb8, 0xc2, 0xcc);
/// Grid lines.
pub const GRID: RGBColor = RGBColor(0xec, 0xef, 0xf2);
/// Histogram bars inside the clipping range.
pub const BAR: RGBColor = RGBColor(0x7d, 0x92, 0xaa);
/// Histogram bars of values that get clipped.
pub const CLIPPED: RGBColor = RGBColor(0xe0, 0x7a, 0x3f);
/// Error messages.
pub const ERROR: RGBColor = RGBColor(0xb4, 0x23, 0x18);
/// Quirk notes.
pub const NOTE: RGBColor = RGBColor(0x8a, 0x5a, 0x00);
/// The error curve.
pub const CURVE: RGBColor = RGBColor(0x33, 0x41, 0x55);

/// Observer colours (calm, distinguishable, colour-blind aware order).
pub const SERIES: [RGBColor; 13] = [
    RGBColor(0x2f, 0x6f, 0xb0),
    RGBColor(0x1f, 0x8a, 0x70),
    RGBColor(0x7b, 0x52, 0xab),
    RGBColor(0xb0, 0x80, 0x0b),
    RGBColor(0xc2, 0x3b, 0x6b),
    RGBColor(0x4d, 0x7c, 0x8a),
    RGBColor(0x39, 0x49, 0xab),
    RGBColor(0x55, 0x6b, 0x2f),
    RGBColor(0x8e, 0x44, 0xad),
    RGBColor(0x4a, 0x55, 0x68),
    RGBColor(0xa8, 0x4a, 0x1c),
    RGBColor(0x0e, 0x6e, 0x8c),
    RGBColor(0x7a, 0x5c, 0x3a),
];

/// The colour of series `i`.
pub fn series(i: usize) -> RGBColor {
    SERIES[i % SERIES.len()]
}

/// The colour as a CSS hex string.
pub fn css(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The UI font at `px` pixels.
pub fn font(px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FAMILY), px, FontStyle::Normal)
}
