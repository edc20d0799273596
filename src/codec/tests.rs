//! Properties every codec of the registry keeps, and the min–max families' own cases.

use super::bfp::BlockFloat;
use super::int::Int;
use super::mx::Mx;
use super::*;
use crate::formats::bfp::Bfp;
use crate::formats::e8m0::ScaleRounding;
use crate::formats::mx::MxElement;
use crate::formats::ElementFormat;

/// A deterministic ramp of values in [−5, 5] with `shape` (shared by the codecs' tests).
pub(crate) fn ramp(shape: Vec<usize>) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::new(
        shape,
        (0..n)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 10.0)
            .collect(),
    )
    .unwrap()
}

/// A tensor with outliers, zeros, ties and NaN/±∞ (left out of the metrics).
fn awkward(shape: Vec<usize>) -> Tensor {
    let mut t = ramp(shape);
    let n = t.data.len();
    for (i, v) in t.data.iter_mut().enumerate() {
        match i % 97 {
            3 => *v = 0.0,
            5 => *v = 250.0,
            7 => *v = -0.5,
            _ => {}
        }
    }
    t.data[n / 3] = f32::NAN;
    t.data[n / 2] = f32::INFINITY;
    t.data[n - 1] = f32::NEG_INFINITY;
    t
}

#[test]
fn every_codec_measures_its_own_encode_and_decode() {
    // The fused pass (or the default) gives the very bits of decode(encode(x)) measured against
    // the stored ranges, on every format of the line-up.
    for shape in [vec![4, 512], vec![8, 96]] {
        for t in [ramp(shape.clone()), awkward(shape.clone())] {
            for (id, params) in lineup(&shape) {
                let codec = find(id).unwrap().build(&params, &shape).unwrap();
                let fused = match codec.measure(&t, &clean(&t)) {
                    Ok(m) => m,
                    Err(_) => continue, // a format that does not fit the shape (ggml blocks)
                };
                let two_step = quantize_dequantize(codec.as_ref(), &t).unwrap();
                assert_eq!(fused, two_step.metrics, "{} on {shape:?}", codec.label());
                assert_eq!(two_step.values.len(), t.data.len());
                assert_eq!(fused.count, t.data.iter().filter(|v| v.is_finite()).count());
            }
        }
    }
}

fn clean(t: &Tensor) -> Tensor {
    crate::engine::prepare_batch(
        t,
        crate::observer::Granularity::PerChannel,
        crate::engine::NonFinitePolicy::Exclude,
    )
    .unwrap()
    .into_owned()
}

#[test]
fn decode_checks_every_stored_array_before_reading() {
    let shape = vec![4, 256];
    let t = ramp(shape.clone());
    for (id, params) in lineup(&shape) {
        let codec = find(id).unwrap().build(&params, &shape).unwrap();
        let encoded = codec.encode(&t).unwrap();
        assert_eq!(codec.decode(&encoded).unwrap().shape, shape);
        for k in 0..encoded.parts.len() {
            // One element short.
            let mut short = encoded.clone();
            let part = &mut short.parts[k];
            match &mut part.data {
                Stored::U8(v) => drop(v.pop()),
                Stored::I8(v) => drop(v.pop()),
                Stored::U16(v) => drop(v.pop()),
                Stored::I16(v) => drop(v.pop()),
                Stored::I32(v) => drop(v.pop()),
                Stored::F32(v) => drop(v.pop()),
            }
            let name = part.name;
            if name.ends_with("quant_map") {
                continue; // the code book is implied by the type, as in bitsandbytes' kernels
            }
            let e = codec.decode(&short).unwrap_err().to_string();
            assert!(e.contains(name), "{}: {e}", codec.label());
            // Missing altogether.
            let mut missing = encoded.clone();
            missing.parts.remove(k);
            assert!(
                codec.decode(&missing).is_err(),
                "{} without {name}",
                codec.label()
            );
        }
    }
}

#[test]
fn the_registry_states_each_familys_facts() {
    let all = codecs();
    let mut ids: Vec<&str> = all.iter().map(|c| c.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), all.len(), "ids are unique");
    for c in &all {
        assert!(
            !c.library.is_empty() && !c.version.is_empty() && !c.legend.is_empty(),
            "{}",
            c.id
        );
        assert!(
            c.colour < crate::plot::theme::SERIES.len(),
            "{}: colour {} is not in the palette",
            c.id,
            c.colour
        );
        // One colour per library (quantscope's own families each have theirs).
        for d in &all {
            if c.library == d.library && c.library != OWN.0 {
                assert_eq!(c.colour, d.colour, "{} and {}", c.id, d.id);
            }
            if c.library != d.library {
                assert_ne!(c.colour, d.colour, "{} and {}", c.id, d.id);
            }
        }
    }
}

#[test]
fn more_bits_mean_less_error() {
    let t = ramp(vec![64, 32]);
    let mse = |bits: i64| {
        evaluate("int", &Params::new().with("bits", bits), &t)
            .unwrap()
            .metrics
            .mse
    };
    assert!(mse(8) < mse(6) && mse(6) < mse(4) && mse(4) < mse(2));
    let fp16 = evaluate("half", &Params::new(), &t).unwrap();
    assert!(fp16.metrics.mse < mse(8));
    assert_eq!(fp16.bits_per_value, 16.0);
}

#[test]
fn symmetric_int8_uses_quarks_divisor() {
    // amax 5.0 → scale 5/127.5; −5.0 maps to −127.5 → rounds to −128 (no clip), +5.0 to
    // 127.5 → 128 → clipped to 127.
    let t = Tensor::from_vec(vec![-5.0, 0.0, 5.0]);
    let int8 = Int {
        bits: 8,
        signed: true,
        sharing: Sharing::PerTensor,
    };
    let r = quantize_dequantize(&int8, &t).unwrap();
    let s = 5.0f32 / 127.5;
    assert_eq!(r.values, vec![-128.0 * s, 0.0, 127.0 * s]);
    assert_eq!(r.metrics.clipped_fraction, 1.0 / 3.0);
    assert_eq!(r.encoded.i8s("codes").unwrap(), &[-128, 0, 127]);
    assert_eq!(r.encoded.f32s("scale").unwrap(), &[s]);
}

#[test]
fn bits_per_value_count_shared_scales() {
    let shape = [64usize, 32];
    let mx4 = Mx {
        element: MxElement::Float(ElementFormat::Fp4E2m1),
        block: 32,
        axis: -1,
        rounding: ScaleRounding::Even,
    };
    assert_eq!(mx4.bits_per_value(&shape), 4.25);
    let per_channel = Int {
        bits: 4,
        signed: true,
        sharing: Sharing::PerChannel { axis: 0 },
    };
    assert_eq!(
        per_channel.bits_per_value(&shape),
        4.0 + 32.0 * 64.0 / 2048.0
    );
    let bfp = BlockFloat {
        format: Bfp { mantissa_bits: 8 },
        block: 8,
        axis: -1,
    };
    assert_eq!(bfp.bits_per_value(&shape), 9.0);
}

#[test]
fn lineup_runs_on_vectors_and_matrices_and_rejects_bad_params() {
    for shape in [vec![100], vec![16, 48]] {
        for result in compare(&ramp(shape.clone())) {
            let r = result.unwrap();
            assert!(
                r.metrics.mse.is_finite() && r.bits_per_value > 0.0,
                "{shape:?} {}",
                r.format
            );
        }
    }
    assert!(evaluate("int", &Params::new().with("bits", 1), &ramp(vec![10])).is_err());
    assert!(evaluate(
        "int",
        &Params::new()
            .with("granularity", "per_channel")
            .with("axis", 3),
        &ramp(vec![4, 4])
    )
    .is_err());
    assert!(evaluate("nope", &Params::new(), &ramp(vec![4])).is_err());
}
