//! Drawing on a canvas (plotters-canvas) from the boundary's drawing functions, in a page.
#![cfg(target_arch = "wasm32")]

use quantscope::wasm::{draw_channels, draw_curve, draw_histogram};
use serde_json::json;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

wasm_bindgen_test_configure!(run_in_browser);

fn js(v: serde_json::Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap()
}

fn canvas(w: u32, h: u32) -> HtmlCanvasElement {
    let doc = web_sys::window().unwrap().document().unwrap();
    let c: HtmlCanvasElement = doc.create_element("canvas").unwrap().dyn_into().unwrap();
    c.set_width(w);
    c.set_height(h);
    doc.body().unwrap().append_child(&c).unwrap();
    c
}

/// `(non-white pixels, pixels of colour ≈ rgb)` of a canvas.
fn pixels(c: &HtmlCanvasElement, rgb: (u8, u8, u8)) -> (usize, usize) {
    let ctx: CanvasRenderingContext2d = c.get_context("2d").unwrap().unwrap().dyn_into().unwrap();
    let data = ctx
        .get_image_data(0.0, 0.0, c.width() as f64, c.height() as f64)
        .unwrap()
        .data();
    let (mut ink, mut hit) = (0, 0);
    for px in data.chunks(4) {
        if px[0] < 245 || px[1] < 245 || px[2] < 245 {
            ink += 1;
        }
        let close = |a: u8, b: u8| (a as i32 - b as i32).abs() <= 6;
        if close(px[0], rgb.0) && close(px[1], rgb.1) && close(px[2], rgb.2) {
            hit += 1;
        }
    }
    (ink, hit)
}

#[wasm_bindgen_test]
fn histogram_with_clipping_lines_and_clipped_values() {
    let c = canvas(480, 240);
    let counts: Vec<f64> = (0..200)
        .map(|i| {
            let x = (i as f64 - 100.0) / 25.0;
            (2000.0 * (-x * x / 2.0).exp()).round()
        })
        .collect();
    let view = js(json!({
        "observer": "test",
        "color": 0,
        "clip": [-2.0, 2.0],
        "grid": [-2.05, 2.0]
    }));
    draw_histogram(
        c.clone(),
        -4.0,
        4.0,
        &counts,
        view,
        js(json!({"logCounts": true})),
    )
    .map_err(JsValue::from)
    .unwrap();
    let (ink, bars) = pixels(&c, (0x7d, 0x92, 0xaa));
    let (_, clipped) = pixels(&c, (0xe0, 0x7a, 0x3f));
    assert!(ink > 480 * 240 / 10, "canvas is not blank ({ink})");
    assert!(bars > 1000, "kept values drawn ({bars})");
    assert!(clipped > 100, "clipped values highlighted ({clipped})");
}

/// Every pixel of a canvas (RGBA).
fn image(c: &HtmlCanvasElement) -> Vec<u8> {
    let ctx: CanvasRenderingContext2d = c.get_context("2d").unwrap().unwrap().dyn_into().unwrap();
    ctx.get_image_data(0.0, 0.0, c.width() as f64, c.height() as f64)
        .unwrap()
        .data()
        .to_vec()
}

#[wasm_bindgen_test]
fn a_channels_view_with_packed_arrays_draws_as_the_plain_one() {
    let n = 5000;
    let min: Vec<f64> = (0..n).map(|i| -1.0 - (i % 7) as f64 * 0.1).collect();
    let max: Vec<f64> = (0..n)
        .map(|i| {
            if i == 1234 {
                40.0
            } else {
                1.0 + (i % 5) as f64 * 0.1
            }
        })
        .collect();
    let plain = js(
        json!({"axis": 0, "min": min, "max": max, "grid_min": [], "grid_max": [], "unit": "block"}),
    );
    // The engine façade sends long arrays as Float64Array (packedView in www/lib/engine.js).
    let packed = js(json!({"axis": 0, "grid_min": [], "grid_max": [], "unit": "block"}));
    for (name, values) in [("min", &min), ("max", &max)] {
        let array = js_sys::Float64Array::from(&values[..]);
        js_sys::Reflect::set(&packed, &JsValue::from_str(name), &array).unwrap();
    }
    let (a, b) = (canvas(480, 200), canvas(480, 200));
    draw_channels(a.clone(), plain, 1, JsValue::NULL)
        .map_err(JsValue::from)
        .unwrap();
    draw_channels(b.clone(), packed, 1, JsValue::NULL)
        .map_err(JsValue::from)
        .unwrap();
    assert!(pixels(&a, (0, 0, 0)).0 > 2000);
    assert!(image(&a) == image(&b), "the packed view drew differently");
}

#[wasm_bindgen_test]
fn channels_and_curve_draw() {
    let c = canvas(480, 200);
    let ch = js(json!({
        "axis": 0,
        "min": [-1.0, -1.0, -0.5, -1.0, -1.2, -1.0, -0.8, -1.0],
        "max": [1.0, 1.2, 0.5, 30.0, 1.0, 0.9, 1.1, 1.0],
        "grid_min": [-1.0, -1.2, -0.5, -30.0, -1.2, -1.0, -1.1, -1.0],
        "grid_max": [1.0, 1.2, 0.5, 30.0, 1.2, 1.0, 1.1, 1.0]
    }));
    draw_channels(c.clone(), ch, 2, JsValue::NULL)
        .map_err(JsValue::from)
        .unwrap();
    assert!(pixels(&c, (0, 0, 0)).0 > 2000);
    let k = canvas(640, 320);
    let points: Vec<_> = (1..100)
        .map(|i| {
            let t = i as f64 / 20.0;
            json!([t, (t - 2.0).powi(2) + 0.01, 30.0 - t])
        })
        .collect();
    let curve = js(json!({
        "points": points,
        "best": 39,
        "label": "8-bit affine",
        "markers": [{"observer": "a", "color": 1, "threshold": 3.0, "mse": 1.0, "sqnr_db": 27.0},
                    {"observer": "b", "color": 2, "threshold": null, "mse": 0.05, "sqnr_db": 40.0}]
    }));
    draw_curve(k.clone(), curve, js(json!({"legend": true})))
        .map_err(JsValue::from)
        .unwrap();
    let (ink, curve_px) = pixels(&k, (0x33, 0x41, 0x55));
    assert!(ink > 5000 && curve_px > 200, "{ink} {curve_px}");
    // Bad input is an exception, not a panic.
    assert!(draw_curve(k, js(json!({"points": "no"})), JsValue::NULL).is_err());
}
