//! Properties PyTorch's observers guarantee, checked on random inputs.
use proptest::prelude::*;
use quantscope::observer::{Instance, ZeroPoint};
use quantscope::params::Params;
use quantscope::registry;
use quantscope::tensor::Tensor;
use serde_json::{json, Value};

fn build(id: &str, params: Value) -> Instance {
    Instance::new(
        registry::find(id).unwrap(),
        &Params::from_value(params).unwrap(),
    )
    .unwrap()
}

/// Finite values over many magnitudes (including exact zeros).
fn values(max_len: usize) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(
        prop_oneof![
            4 => -1e3f32..1e3f32,
            2 => -1.0f32..1.0f32,
            1 => -1e-20f32..1e-20f32,
            1 => Just(0.0f32),
        ],
        1..max_len,
    )
}

fn per_tensor_configs() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        Just(json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric"})),
        Just(json!({"dtype": "qint8", "qscheme": "per_tensor_affine"})),
        Just(json!({"qscheme": "per_tensor_symmetric"})),
        Just(json!({"dtype": "quint4x2"})),
        Just(json!({"dtype": "int16", "qscheme": "per_tensor_symmetric"})),
        Just(json!({"quant_min": 0, "quant_max": 127})),
        Just(
            json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric", "quant_min": -127, "quant_max": 127, "eps": 0.000244140625})
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Affine and symmetric qparams always represent 0 (min⁻ ≤ 0 ≤ max⁺ and the zero point is
    /// clamped to the grid), for MinMax and Histogram alike.
    #[test]
    fn representable_range_contains_zero(data in values(300), cfg in per_tensor_configs()) {
        for id in ["torch.MinMaxObserver", "torch.HistogramObserver"] {
            let mut params = cfg.clone();
            if id == "torch.HistogramObserver" {
                params["bins"] = json!(128);
            }
            let mut obs = build(id, params);
            obs.feed(&Tensor::from_vec(data.clone())).unwrap();
            let q = obs.qparams().unwrap();
            let (lo, hi) = q.representable_range(0).unwrap();
            prop_assert!(lo <= 0.0 && 0.0 <= hi, "{id} {cfg}: [{lo}, {hi}]");
            prop_assert!(q.scale[0] > 0.0);
        }
    }

    /// Symmetric scales depend on max|x| only: negating the input leaves them unchanged.
    #[test]
    fn symmetric_scale_is_sign_symmetric(data in values(300)) {
        let negated: Vec<f32> = data.iter().map(|v| -v).collect();
        for (id, params) in [
            ("torch.MinMaxObserver", json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric"})),
            ("torch.MovingAverageMinMaxObserver", json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric"})),
            ("torch.MinMaxObserver", json!({"qscheme": "per_tensor_symmetric"})),
        ] {
            let scale = |x: &Vec<f32>| {
                let mut obs = build(id, params.clone());
                obs.feed(&Tensor::from_vec(x.clone())).unwrap();
                obs.qparams().unwrap().scale
            };
            prop_assert_eq!(scale(&data), scale(&negated));
        }
    }

    /// After one batch the histogram holds exactly one count per finite element.
    #[test]
    fn histogram_total_counts_finite_elements(
        mut data in values(2000),
        holes in prop::collection::vec((0usize..2000, 0u8..3), 0..20),
        bins in 1i64..3000,
    ) {
        for (at, kind) in holes {
            if let Some(v) = data.get_mut(at) {
                *v = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][kind as usize];
            }
        }
        let finite = data.iter().filter(|v| v.is_finite()).count();
        let mut obs = build("torch.HistogramObserver", json!({"bins": bins}));
        obs.feed(&Tensor::from_vec(data)).unwrap();
        let total: f64 = match obs.plot().histogram {
            Some(h) => h.counts.iter().map(|&c| c as f64).sum(),
            None => 0.0,
        };
        prop_assert_eq!(total, finite as f64);
    }

    /// Over several batches the mass is kept up to float32 rounding of the re-binned parts.
    #[test]
    fn histogram_mass_survives_rebinning(batches in prop::collection::vec(values(500), 1..5)) {
        let mut obs = build("torch.HistogramObserver", json!({"bins": 256}));
        let mut seen = 0usize;
        for b in &batches {
            seen += b.len();
            obs.feed(&Tensor::from_vec(b.clone())).unwrap();
        }
        let total: f64 = obs.plot().histogram.unwrap().counts.iter().map(|&c| c as f64).sum();
        prop_assert!((total - seen as f64).abs() <= 1e-4 * seen as f64, "{total} vs {seen}");
    }

    /// A per-channel observer gives each channel what the per-tensor observer gives its slice.
    #[test]
    fn per_channel_equals_per_tensor_on_slices(
        rows in prop::collection::vec(values(40), 1..8),
        symmetric in any::<bool>(),
    ) {
        let width = rows.iter().map(Vec::len).min().unwrap_or(1);
        let rows: Vec<Vec<f32>> = rows.into_iter().map(|r| r[..width].to_vec()).collect();
        let (pc, pt) = if symmetric {
            (json!({"dtype": "qint8", "qscheme": "per_channel_symmetric"}),
             json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric"}))
        } else {
            (json!({"qscheme": "per_channel_affine"}), json!({"qscheme": "per_tensor_affine"}))
        };
        let flat: Vec<f32> = rows.concat();
        let mut per_channel = build("torch.PerChannelMinMaxObserver", pc);
        per_channel.feed(&Tensor::new(vec![rows.len(), width], flat).unwrap()).unwrap();
        let q = per_channel.qparams().unwrap();
        for (c, row) in rows.iter().enumerate() {
            let mut per_tensor = build("torch.MinMaxObserver", pt.clone());
            per_tensor.feed(&Tensor::from_vec(row.clone())).unwrap();
            let t = per_tensor.qparams().unwrap();
            prop_assert_eq!(q.scale[c], t.scale[0]);
            prop_assert_eq!(q.zero_point.get_f64(c), t.zero_point.get_f64(0));
            prop_assert_eq!((q.min_val[c], q.max_val[c]), (t.min_val[0], t.max_val[0]));
        }
    }

    /// Float qparams reconstruct each row's minimum: (0 − zp)·scale == min (up to rounding).
    #[test]
    fn float_qparams_zero_point_encodes_the_minimum(rows in prop::collection::vec(values(30), 1..6)) {
        let width = rows.iter().map(Vec::len).min().unwrap_or(1);
        let flat: Vec<f32> = rows.iter().flat_map(|r| r[..width].to_vec()).collect();
        let mut obs = build(
            "torch.PerChannelMinMaxObserver",
            json!({"qscheme": "per_channel_affine_float_qparams"}),
        );
        obs.feed(&Tensor::new(vec![rows.len(), width], flat).unwrap()).unwrap();
        let q = obs.qparams().unwrap();
        let ZeroPoint::Float(zp) = &q.zero_point else { panic!("float zero points expected") };
        for ((&z, &s), &lo) in zp.iter().zip(&q.scale).zip(&q.min_val) {
            if s != 1.0 {
                let min = -z as f64 * s as f64;
                prop_assert!((min - lo as f64).abs() <= 1e-5 * (lo.abs() as f64).max(1e-30));
            }
        }
    }

    /// No input, however odd, makes an observer panic.
    #[test]
    fn odd_inputs_never_panic(
        data in prop::collection::vec(prop_oneof![any::<f32>(), Just(f32::NAN), Just(0.0f32)], 0..64),
        id in prop::sample::select(vec![
            "torch.MinMaxObserver", "torch.MovingAverageMinMaxObserver", "torch.HistogramObserver",
            "torch.PerChannelMinMaxObserver", "torch.MovingAveragePerChannelMinMaxObserver",
        ]),
    ) {
        let mut obs = build(id, json!({}));
        let n = data.len();
        let t = if n >= 2 { Tensor::new(vec![2, n / 2], data[..2 * (n / 2)].to_vec()).unwrap() } else { Tensor::from_vec(data) };
        let _ = obs.feed(&t);
        let _ = obs.feed(&t);
        if let Ok(q) = obs.qparams() {
            let _ = obs.fake_quantize(&t, &q);
        }
    }
}
