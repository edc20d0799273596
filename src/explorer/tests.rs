use super::stream::{header_size, mini_npy, mini_safetensors, PROBE_BYTES};
use super::*;
use crate::observer::{Family, Granularity, ObserverKind, PlotSnapshot, QParams, ZeroPoint};
use crate::tensor::{encode_npy, npy_header};
use std::sync::OnceLock;

/// A per-tensor observer for the session tests: min/max over all batches, clipped to
/// `fraction` of them (a search-only parameter), onto an affine `[0, levels]` grid.
struct Shrink;

crate::declare_params! {
    /// Parameters of [`Shrink`].
    struct ShrinkArgs {
        /// grid levels
        levels: i64 = 255; int(-10, 65535), Data;
        /// range fraction
        fraction: f64 = 1.0; float(0.01, 1.0), Search;
    }
}

#[derive(Debug, Clone)]
struct ShrinkConfig {
    levels: i64,
    fraction: f32,
}

impl ObserverKind for Shrink {
    type Args = ShrinkArgs;
    type Config = ShrinkConfig;
    type State = (f32, f32);

    fn resolve(args: &ShrinkArgs, _unknown: &[String]) -> Result<ShrinkConfig> {
        if args.levels < 1 {
            return Err(Error::framework(
                "AssertionError",
                "quant_min must be less than quant_max",
                crate::error::Stage::Init,
            ));
        }
        Ok(ShrinkConfig {
            levels: args.levels,
            fraction: args.fraction as f32,
        })
    }

    fn init(_: &ShrinkConfig) -> (f32, f32) {
        (f32::INFINITY, f32::NEG_INFINITY)
    }

    fn feed(state: &mut (f32, f32), _: &ShrinkConfig, batch: &Tensor) -> Result<()> {
        if let Some((lo, hi)) = crate::shared_stats::finite_min_max(&batch.data) {
            state.0 = state.0.min(lo);
            state.1 = state.1.max(hi);
        }
        Ok(())
    }

    fn qparams(&(min, max): &(f32, f32), cfg: &ShrinkConfig) -> Result<QParams> {
        if min > max {
            return Err(Error::input("nothing observed"));
        }
        let lo = (min * cfg.fraction).min(0.0);
        let hi = (max * cfg.fraction).max(0.0);
        let scale = ((hi - lo) / cfg.levels as f32).max(f32::EPSILON);
        let zp = (-(lo / scale)).round_ties_even() as i64;
        let mut q = QParams::int(
            vec![scale],
            ZeroPoint::Int(vec![zp]),
            0,
            cfg.levels,
            vec![min],
            vec![max],
        );
        q.clip_range = Some((vec![lo], vec![hi]));
        Ok(q)
    }

    fn qdq_kernel(
        _: &ShrinkConfig,
        shape: &[usize],
        q: &QParams,
    ) -> Option<Box<dyn crate::qdq::QdqKernel>> {
        crate::observers::torch::fake_quant::kernel(shape, q)
    }

    fn plot(&(min, max): &(f32, f32)) -> PlotSnapshot {
        PlotSnapshot {
            min_val: vec![min],
            max_val: vec![max],
            histogram: None,
        }
    }
}

fn shrink_spec() -> &'static ObserverSpec {
    static SPEC: OnceLock<ObserverSpec> = OnceLock::new();
    SPEC.get_or_init(|| {
        ObserverSpec::of::<Shrink>(
            "test.Shrink",
            Family::Torch,
            "0",
            Granularity::PerTensor,
            "min/max times a fraction",
        )
    })
}

/// The panel numbers of a report.
fn slices(r: &Report) -> crate::plot::SliceNumbers {
    crate::display::slice_numbers(r.qparams.as_ref().expect("qparams"))
}

fn session_with(values: Vec<f32>, shape: Vec<usize>) -> Session {
    let mut s = Session::new();
    s.add_file(
        "t.npy",
        vec![NamedTensor {
            name: String::new(),
            tensor: Tensor::new(shape, values).unwrap(),
        }],
    );
    s.select(Selection::whole_file(0, None)).unwrap();
    s
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 / n as f32 * 4.0 - 1.0).collect()
}

#[test]
fn observing_reports_clip_grid_and_metrics() {
    let mut s = session_with(ramp(1000), vec![10, 100]);
    let summary = s.summary().unwrap();
    assert_eq!(summary.elements, 1000);
    assert_eq!(summary.min, Some(-1.0));
    let r = s.run_spec(shrink_spec(), Params::new(), true);
    assert!(r.ok, "{:?}", r.error);
    let n = slices(&r);
    assert_eq!(n.clip_min, vec![-1.0]);
    assert!((n.clip_max[0] - 2.996).abs() < 1e-6);
    let m = r.metrics.unwrap();
    assert!(m.mse > 0.0 && m.mse < 1e-4, "{m:?}");
    let view = crate::display::panel_view(&r);
    assert_eq!(view.clip, Some([n.clip_min[0], n.clip_max[0]]));
    assert!(view.grid.is_some());
    assert!(view.stats.iter().any(|[k, _]| k == "SQNR"));
    let hist = s.display_histogram().unwrap();
    assert_eq!(hist.counts.len(), DISPLAY_BINS);
    assert_eq!(hist.counts.iter().sum::<f64>(), 1000.0);
}

#[test]
fn a_panel_refuses_more_slices_than_it_can_show() {
    let n = MAX_PANEL_SLICES + 1;
    // Quark's per-channel observer on a 1-D tensor: every value is a channel.
    let spec = registry::find("quark.PerChannelMinMaxObserver").unwrap();
    let mut s = session_with(ramp(n), vec![n]);
    let r = s.run_spec(spec, Params::new(), true);
    let message = r.error.expect("refused").message;
    assert!(
        message.contains(&format!("computed {n} scales (one per channel)")),
        "{message}"
    );
    // The same values as one row: one channel.
    let mut s = session_with(ramp(n), vec![1, n]);
    assert!(s.run_spec(spec, Params::new(), true).ok);
}

#[test]
fn a_per_block_panel_with_too_many_blocks_is_refused_before_collecting() {
    let n = 2 * (MAX_PANEL_SLICES + 1);
    let spec = registry::find("quark.PerBlockBFPObserver").unwrap();
    let mut s = session_with(ramp(n), vec![2, n / 2]);
    let r = s.run_spec(spec, Params::new().with("group_size", 1), true);
    let message = r.error.expect("refused").message;
    assert!(
        message.contains(&format!("computed {n} scales (one per block)")),
        "{message}"
    );
    assert!(s.runs[spec.id].collected.is_none(), "nothing collected");
    // Four values per block: a quarter as many, within the limit.
    let r = s.run_spec(spec, Params::new().with("group_size", 4), true);
    assert!(r.ok, "{:?}", r.error);
    assert!(s.runs[spec.id].collected.is_some());
}

#[test]
fn search_only_changes_reuse_the_collected_state() {
    let mut s = session_with(ramp(1000), vec![1000]);
    let first = s.run_spec(shrink_spec(), Params::new(), true);
    let r = s.run_spec(shrink_spec(), Params::new().with("fraction", 0.5), true);
    assert!(r.state_reused, "fraction is search-only");
    // Deferred: the clipping range at once, the metrics afterwards.
    let fast = s.run_spec(shrink_spec(), Params::new().with("fraction", 0.7), false);
    assert!(fast.state_reused && fast.metrics_pending && fast.metrics.is_none());
    let view = crate::display::panel_view(&fast);
    assert!(view.stats.iter().any(|[k, v]| k == "MSE" && v == "…"));
    let done = s.complete("test.Shrink");
    assert!(
        done.is_none(),
        "complete() looks observers up in the registry"
    );
    assert!(slices(&r).clip_max[0] < slices(&first).clip_max[0]);
    assert!(r.metrics.unwrap().clipped_fraction > 0.3);
    let r = s.run_spec(
        shrink_spec(),
        Params::new().with("fraction", 0.5).with("levels", 15),
        true,
    );
    assert!(!r.state_reused, "levels decides what is collected");
    assert!(r.ok);
    // Back to the defaults, with the default written out or left out: the same as fresh.
    let fresh = session_with(ramp(1000), vec![1000]).run_spec(shrink_spec(), Params::new(), true);
    for p in [
        Params::new(),
        Params::new().with("levels", 255).with("fraction", 1.0),
    ] {
        let back = s.run_spec(shrink_spec(), p, true);
        assert_eq!(back.qparams, fresh.qparams);
        assert_eq!(back.metrics, fresh.metrics);
    }
}

#[test]
fn invalid_parameters_fail_only_that_run() {
    let mut s = session_with(ramp(100), vec![100]);
    s.run_spec(shrink_spec(), Params::new(), true);
    let bad = s.run_spec(shrink_spec(), Params::new().with("levels", -5), true);
    assert!(!bad.ok);
    let e = bad.error.clone().unwrap();
    assert_eq!(e.kind, "framework");
    assert_eq!(e.exception.as_deref(), Some("AssertionError"));
    assert!(crate::display::panel_view(&bad)
        .error
        .unwrap()
        .contains("quant_min must be less"));
    let out_of_range = s.run_spec(shrink_spec(), Params::new().with("fraction", 7.0), true);
    assert_eq!(out_of_range.error.unwrap().kind, "param");
    let unknown = s.run_spec(shrink_spec(), Params::new().with("bogus", 1), true);
    assert_eq!(unknown.error.unwrap().param.as_deref(), Some("bogus"));
    // The session still works, and the state collected before the refusals is reused.
    let again = s.run_spec(shrink_spec(), Params::new(), true);
    assert!(again.ok && again.state_reused);
}

#[test]
fn splitting_into_batches_follows_torch_chunk() {
    let t = Tensor::new(vec![5, 2], (0..10).map(|i| i as f32).collect()).unwrap();
    let chunk = |t: &Tensor, axis, count| engine::split_batches(t, axis, Some(count));
    let parts = chunk(&t, 0, 2).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].shape, vec![3, 2]);
    assert_eq!(parts[1].data, vec![6.0, 7.0, 8.0, 9.0]);
    let cols = chunk(&t, 1, 2).unwrap();
    assert_eq!(cols[1].data, vec![1.0, 3.0, 5.0, 7.0, 9.0]);
    assert!(chunk(&t, 2, 2).is_err());
    assert!(chunk(&t, 0, 0).is_err());

    let mut s = Session::new();
    s.add_file(
        "t.npy",
        vec![NamedTensor {
            name: String::new(),
            tensor: t,
        }],
    );
    let summary = s
        .select(Selection::whole_file(0, Some(Split { axis: 0, count: 5 })))
        .unwrap();
    assert_eq!(summary.batches, 5);
    assert_eq!(s.batches().len(), 5);
    // A bad selection keeps the previous one.
    assert!(s.select(Selection::whole_file(3, None)).is_err());
    assert_eq!(s.batches().len(), 5);
}

fn npy_bytes(descr: &str, shape: &[usize], fortran: bool, body: &[u8]) -> Vec<u8> {
    encode_npy(&npy_header(descr, fortran, shape), body)
}

fn stream_file(
    s: &mut Session,
    name: &str,
    file: &[u8],
    member: Option<&str>,
    chunk: usize,
) -> Result<FileInfo> {
    let probe = &file[..PROBE_BYTES.min(file.len())];
    let head_len = header_size(probe)?.min(file.len());
    let plan = s.begin_stream(name, &file[..head_len], file.len() as u64, member)?;
    let body = &file[plan.offset as usize..(plan.offset + plan.length) as usize];
    for c in body.chunks(chunk) {
        s.push_chunk(c)?;
    }
    s.finish_stream()
}

#[test]
fn streaming_a_float32_npy_in_odd_chunks_decodes_every_value() {
    let values: Vec<f32> = (0..1000).map(|i| (i as f32).sin() * 3.0).collect();
    let body: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let file = npy_bytes("<f4", &[10, 100], false, &body);
    let mut s = Session::new();
    let info = stream_file(&mut s, "big.npy", &file, None, 7).unwrap();
    assert_eq!(info.members[0].shape, vec![10, 100]);
    assert_eq!(info.members[0].dtype, "float32");
    s.select(Selection::whole_file(0, None)).unwrap();
    assert_eq!(s.batches()[0].data, values);
}

#[test]
fn streaming_a_fortran_order_npy_returns_c_order() {
    // Logical [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5.
    let stored: Vec<f32> = vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0];
    let body: Vec<u8> = stored.iter().flat_map(|v| v.to_le_bytes()).collect();
    let file = npy_bytes("<f4", &[2, 3], true, &body);
    let mut s = Session::new();
    stream_file(&mut s, "f.npy", &file, None, 5).unwrap();
    s.select(Selection::whole_file(0, None)).unwrap();
    assert_eq!(s.batches()[0].data, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn streaming_a_safetensors_member() {
    let a: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let b: Vec<u8> = [5.0f32, -6.0, 7.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let mut header = String::from(
        "{\"__metadata__\":{\"k\":\"v\"},\"b.weight\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[8,20]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
    );
    header.push_str(&" ".repeat((8 - header.len() % 8) % 8));
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&a);
    file.extend_from_slice(&b);
    let mut s = Session::new();
    let info = stream_file(&mut s, "m.safetensors", &file, Some("b.weight"), 3).unwrap();
    assert_eq!(info.members[0].name, "b.weight");
    let mut s2 = Session::new();
    let probe = &file[..PROBE_BYTES];
    let plan = s2
        .begin_stream(
            "m.safetensors",
            &file[..header_size(probe).unwrap()],
            file.len() as u64,
            None,
        )
        .unwrap();
    assert_eq!(plan.member, "a", "first member in file order");
    assert_eq!(plan.members.len(), 2);
    s.select(Selection {
        batches: vec![MemberRef {
            file: 0,
            member: "b.weight".into(),
        }],
        split: None,
    })
    .unwrap();
    assert_eq!(s.batches()[0].data, vec![5.0, -6.0, 7.0]);
}

#[test]
fn a_gibibyte_npy_is_refused_from_its_header() {
    // 2^28 float32 values = 1 GiB; only the header is given.
    let file = npy_bytes("<f4", &[268435456], false, &[]);
    let mut s = Session::new();
    let err = s
        .begin_stream("huge.npy", &file, file.len() as u64 + (1u64 << 30), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("huge.npy") && err.contains("1.0 GiB") && err.contains("67108864"),
        "{err}"
    );
    // Truncated files are refused too.
    let small = npy_bytes("<f4", &[16], false, &[0; 8]);
    let err = s
        .begin_stream("short.npy", &small, small.len() as u64, None)
        .unwrap_err();
    assert!(err.to_string().contains("only 8"), "{err}");
}

#[test]
fn header_sizes_and_mini_files() {
    let file = npy_bytes("<f4", &[3], false, &[0; 12]);
    assert_eq!(header_size(&file[..16]).unwrap(), file.len() - 12);
    assert!(header_size(b"PK\x03\x04............").is_err());
    assert!(header_size(b"garbage garbage!").is_err());
    let m = mini_npy("<f2", 2, &[0, 0x3c, 0, 0xc0]);
    assert_eq!((m.len() - 4) % 64, 0);
    let st = mini_safetensors("F16", 2, &[0, 0x3c, 0, 0xc0]);
    assert_eq!(u64::from_le_bytes(st[..8].try_into().unwrap()) % 8, 0);
}

#[test]
fn comparison_and_curve_markers() {
    let mut s = session_with(ramp(4000), vec![4000]);
    s.run_spec(shrink_spec(), Params::new().with("fraction", 0.8), true);
    let ids = vec!["test.Shrink".to_string(), "missing".to_string()];
    let c = s
        .comparison(&ids, &[3], Some(CurveRequest::default()))
        .unwrap();
    assert_eq!(c.panels.len(), 1);
    assert_eq!(c.panels[0].color, 3);
    let curve = c.curve.as_ref().unwrap();
    assert_eq!(curve.markers.len(), 1);
    let m = &curve.markers[0];
    assert!((m.threshold.unwrap() - 2.3992).abs() < 1e-3);
    let svg = crate::plot::svg::comparison_svg(&c, &Default::default(), 1000).unwrap();
    assert!(svg.contains("test.Shrink"));
    assert!(s.summary().unwrap().line.contains("4,000 values"));
}

#[test]
fn the_summary_states_its_facts_as_they_are_shown() {
    let mut values = ramp(1200);
    values[3] = f32::NAN;
    values[7] = f32::NEG_INFINITY;
    let s = session_with(values, vec![3, 400]);
    let summary = s.summary().unwrap();
    let shown: Vec<(&str, &str, FactKind)> = summary
        .facts
        .iter()
        .map(|f| (f.label, f.value.as_str(), f.kind))
        .collect();
    assert_eq!(
        shown[..5],
        [
            ("file", "t.npy", FactKind::Name),
            ("shape", "[3, 400]", FactKind::Value),
            ("dtype", "float32", FactKind::Value),
            ("elements", "1,200", FactKind::Value),
            ("NaN / ±Inf", "1 / 0 / 1 (excluded)", FactKind::Warning),
        ]
    );
    assert_eq!(shown[5].0, "range");
    assert_eq!(shown[5].1, "−1 … 2.997");
    assert_eq!(shown[6].0, "mean ± std");
    assert_eq!(
        summary.line,
        "shape [3, 400] · float32 · 1,200 values · 1 NaN, 0 +Inf, 1 −Inf (excluded)"
    );
}

#[test]
fn formatting_helpers() {
    assert_eq!(group_digits(1234567), "1,234,567");
    assert_eq!(group_digits(12), "12");
    assert_eq!(human_bytes(1073741824.0), "1.0 GiB");
    assert_eq!(human_bytes(512.0), "512 B");
}

#[test]
fn a_failed_replacement_keeps_the_current_tensor_and_results() {
    let mut s = session_with(ramp(100), vec![100]);
    let r = s.run_spec(shrink_spec(), Params::new(), true);
    s.begin_replace();
    assert!(s.load_file("bad.npy", b"not a tensor").is_err());
    s.add_file(
        "partial.npy",
        vec![NamedTensor {
            name: String::new(),
            tensor: Tensor::from_vec(vec![1.0]),
        }],
    );
    s.abandon_replace();
    assert_eq!(s.file_count(), 1);
    assert_eq!(s.batches().len(), 1);
    assert_eq!(s.result("test.Shrink").unwrap().qparams, r.qparams);
    // A successful replacement starts afresh.
    s.begin_replace();
    s.add_file(
        "new.npy",
        vec![NamedTensor {
            name: String::new(),
            tensor: Tensor::from_vec(vec![1.0, 2.0]),
        }],
    );
    let files = s.retain_files(&[1]);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].name, "new.npy");
    assert!(s.result("test.Shrink").is_none());
}

#[test]
fn comparison_svg_for_the_cli() {
    let batches = vec![
        Tensor::from_vec(ramp(500)),
        Tensor::from_vec(ramp(300).iter().map(|v| v * 2.0).collect()),
    ];
    let id = match crate::registry::observers().first() {
        Some(spec) => spec.id.to_string(),
        None => return,
    };
    let svg = comparison_svg_of(
        "layer <3>",
        batches,
        &[(id.clone(), Params::new())],
        Some(CurveRequest::default()),
        &Default::default(),
        900,
    )
    .unwrap();
    assert!(svg.starts_with("<svg") && svg.contains(&id) && svg.contains("layer &lt;3&gt;"));
    assert!(
        svg.contains("800 values · 2 batches"),
        "both batches observed"
    );
    let err = comparison_svg_of(
        "x",
        vec![Tensor::from_vec(vec![1.0])],
        &[("no.Such".into(), Params::new())],
        None,
        &Default::default(),
        900,
    );
    assert!(err.unwrap_err().to_string().contains("unknown observer"));
}

#[test]
fn formats_are_measured_on_the_first_selected_tensor_whole() {
    let mut s = session_with(ramp(64 * 8), vec![64, 8]);
    s.select(Selection::whole_file(0, Some(Split { axis: 0, count: 4 })))
        .unwrap();
    let target = s.format_lineup().unwrap();
    assert_eq!(
        target.shape,
        vec![64, 8],
        "the whole tensor, not one split batch"
    );
    assert!(target.lineup.iter().any(|(id, _)| *id == "mx"));
    let int8 = s
        .evaluate_format("int", &Params::new().with("bits", 8))
        .unwrap();
    assert_eq!(int8.metrics.count, 512);
    let direct = crate::codec::evaluate(
        "int",
        &Params::new().with("bits", 8),
        &Tensor::new(vec![64, 8], ramp(512)).unwrap(),
    )
    .unwrap();
    assert_eq!(int8.metrics.mse, direct.metrics.mse);
    assert!(s.evaluate_format("nope", &Params::new()).is_err());
    assert!(Session::new().format_lineup().is_err());
}

#[test]
fn adaround_runs_piecewise_on_loaded_members_and_flattens_activations() {
    let mut s = Session::new();
    let w: Vec<f32> = (0..6 * 10)
        .map(|i| ((i as f32) * 0.37).sin() * 0.2)
        .collect();
    let x: Vec<f32> = (0..2 * 20 * 10)
        .map(|i| ((i as f32) * 0.11).cos())
        .collect();
    let named = |shape: Vec<usize>, data: Vec<f32>| {
        vec![NamedTensor {
            name: String::new(),
            tensor: Tensor::new(shape, data).unwrap(),
        }]
    };
    s.add_file("w.npy", named(vec![6, 10], w));
    s.add_file("x.npy", named(vec![2, 20, 10], x));
    let r = |file| MemberRef {
        file,
        member: String::new(),
    };
    let params = Params::new().with("iterations", 50);
    let start = s.adaround_begin(&r(0), &r(1), &params).unwrap();
    assert_eq!((start.weight_shape, start.input_shape), ([6, 10], [40, 10]));
    let mut points = 0;
    loop {
        let status = s.adaround_step(7).unwrap();
        points += status.points.len();
        if status.done {
            assert_eq!(status.iterations_run, 50);
            break;
        }
    }
    let outcome = s.adaround_finish().unwrap();
    assert_eq!(points, outcome.history.len());
    assert_eq!(outcome.iterations_run, 50);
    assert!(
        s.adaround_step(1).is_err(),
        "the run is gone after finishing"
    );
    // W must be a matrix; X needs a matching last axis; parameters are checked.
    let err = s.adaround_begin(&r(1), &r(0), &params).unwrap_err();
    assert!(err.to_string().contains("2-d"), "{err}");
    let err = s
        .adaround_begin(&r(0), &r(1), &Params::new().with("bits", 40))
        .unwrap_err();
    assert!(err.to_string().contains("bits"), "{err}");
}

#[test]
fn an_observer_on_the_rotated_batches_leaves_the_panel_alone_and_spreads_an_outlier_column() {
    // Rows of 64 with one outlier column: per-tensor MinMax spends its grid on the outlier;
    // after a Hadamard rotation the outlier's energy is spread over the row.
    let values: Vec<f32> = (0..64 * 64)
        .map(|i| {
            let (r, c) = (i / 64, i % 64);
            if c == 5 {
                40.0 + r as f32 * 0.1
            } else {
                ((r * 7 + c * 13) % 17) as f32 / 17.0 - 0.5
            }
        })
        .collect();
    let mut s = session_with(values, vec![64, 64]);
    let before = s.observe("torch.MinMaxObserver", Params::new()).unwrap();
    let after = s
        .observe_rotated("torch.MinMaxObserver", &Params::new(), "hadamard:3")
        .unwrap();
    assert!(after.rotation.contains("seed 3"), "{}", after.rotation);
    let sqnr = |m: Option<crate::quant::QdqMetrics>| m.unwrap().sqnr_db.unwrap();
    let (b, a) = (sqnr(before.metrics), sqnr(after.metrics));
    assert!(a > b + 3.0, "before {b} dB, after {a} dB");
    // The panel's own run is unchanged.
    let kept = s.result("torch.MinMaxObserver").unwrap().metrics;
    assert_eq!(sqnr(kept), b);
    // A bad rotation or observer is an error naming it.
    let e = s
        .observe_rotated("torch.MinMaxObserver", &Params::new(), "hadamard:x")
        .unwrap_err();
    assert!(e.to_string().contains("seed"), "{e}");
    assert!(s
        .observe_rotated("no.Such", &Params::new(), "hadamard")
        .is_err());
}

#[test]
fn a_lazy_selection_gives_the_same_summary_histogram_and_curve_when_asked() {
    let values: Vec<f32> = (0..6000)
        .map(|i| ((i as f32 * 0.37).sin() * (1.0 + (i % 11) as f32)).powi(3))
        .collect();
    for split in [None, Some(Split { axis: 0, count: 3 })] {
        let mut eager = session_with(values.clone(), vec![60, 100]);
        let mut lazy = session_with(values.clone(), vec![60, 100]);
        let selection = Selection::whole_file(0, split);
        let summary = eager.select(selection.clone()).unwrap();
        assert!(summary.mean.is_some() && summary.std.is_some());
        assert!(summary.facts.iter().any(|f| f.label == "mean ± std"));
        let first = lazy.select_lazily(selection).unwrap();
        assert_eq!((first.mean, first.std), (None, None));
        assert_eq!((first.min, first.max), (summary.min, summary.max));
        assert_eq!(first.nonfinite, summary.nonfinite);
        // Asked for, the statistics are the eager selection's, to the bit.
        let asked = lazy.summary().unwrap();
        assert_eq!(
            serde_json::to_string(&asked).unwrap(),
            serde_json::to_string(&summary).unwrap()
        );
        let (a, b) = (
            lazy.display_histogram().unwrap(),
            eager.display_histogram().unwrap(),
        );
        assert_eq!((a.lo, a.hi, &a.counts), (b.lo, b.hi, &b.counts));
        let spec = CurveRequest::default();
        let (a, b) = (lazy.curve(spec).unwrap(), eager.curve(spec).unwrap());
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
}

#[test]
fn a_lazy_selection_does_not_build_its_moment_histogram() {
    let mut s = session_with(ramp(1000), vec![1000]);
    s.select_lazily(Selection::whole_file(0, None)).unwrap();
    assert!(
        s.moments.get().is_none(),
        "not built before it is asked for"
    );
    assert!(s.summary().unwrap().mean.is_some());
    assert!(s.moments.get().is_some());
}
