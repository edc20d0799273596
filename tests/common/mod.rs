//! Shared harness for the golden integration tests: reads a family's `cases.json` from the
//! shared reference data, runs each case through the engine and compares every expected field
//! within the case's tolerance.
//!
//! The reference data is found at `$QUANTSCOPE_GOLDEN` (the `golden/` folder), else
//! `$QUANTSCOPE_SHARED/golden`, else `../shared/golden` next to the crate.
#![allow(dead_code)]

pub mod extra_inputs;
pub mod family_fields;
pub mod page_diff;
pub mod qdq_metrics;

use quantscope::engine::{ErrorInfo, Report, Run};
use quantscope::params::Params;
use quantscope::tensor::{read_tensors, Tensor};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The CLI's stdout for `args`, run with the environment variable `variable` set to `value`;
/// the run must succeed.
pub fn cli_stdout_with(variable: &str, value: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quantscope"))
        .args(args)
        .env(variable, value)
        .output()
        .expect("run quantscope");
    assert!(
        out.status.success(),
        "{args:?} with {variable}={value}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The shared folder (samples, golden, docs).
pub fn shared_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("QUANTSCOPE_SHARED") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("shared")
}

/// The golden folder.
pub fn golden_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("QUANTSCOPE_GOLDEN") {
        return PathBuf::from(dir);
    }
    shared_dir().join("golden")
}

/// One reference case.
#[derive(Debug, Clone)]
pub struct Case {
    pub id: String,
    pub observer: String,
    pub params: Params,
    pub preset: Option<String>,
    pub batches: Vec<PathBuf>,
    pub expected: Value,
    pub tolerance: Value,
    pub raw: Value,
}

impl Case {
    /// `(rtol, atol)` for `field`: `tolerance.per_field[field]`, else the case-wide one.
    pub fn tolerance_for(&self, field: &str) -> (f64, f64) {
        let pick = |v: &Value| {
            (
                v.get("rtol").and_then(Value::as_f64).unwrap_or(0.0),
                v.get("atol").and_then(Value::as_f64).unwrap_or(0.0),
            )
        };
        match self.tolerance.get("per_field").and_then(|p| p.get(field)) {
            Some(v) => pick(v),
            None => pick(&self.tolerance),
        }
    }

    /// `(rtol, atol)` of a quantizer family's `tolerance[field]`: an object with `rtol`/`atol`,
    /// or `"exact"`; other families' layouts fall back to [`Case::tolerance_for`].
    pub fn field_tolerance(&self, field: &str) -> (f64, f64) {
        match self.tolerance.get(field) {
            Some(Value::String(s)) if s == "exact" => (0.0, 0.0),
            Some(v @ Value::Object(_)) => (
                v.get("rtol").and_then(Value::as_f64).unwrap_or(0.0),
                v.get("atol").and_then(Value::as_f64).unwrap_or(0.0),
            ),
            _ => self.tolerance_for(field),
        }
    }

    /// The case's input batches, loaded with quantscope's own reader.
    pub fn load_batches(&self) -> Result<Vec<Tensor>, String> {
        self.batches
            .iter()
            .map(|p| {
                let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
                let mut tensors =
                    read_tensors(&bytes, &p.to_string_lossy()).map_err(|e| e.to_string())?;
                Ok(tensors.remove(0).tensor)
            })
            .collect()
    }
}

/// A `.npy` of `family`'s folder (path relative to it), read with quantscope's own reader.
pub fn load_npy(family: &str, relative: &str) -> Result<Tensor, String> {
    let path = golden_dir().join(family).join(relative);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tensors = read_tensors(&bytes, relative).map_err(|e| e.to_string())?;
    Ok(tensors.remove(0).tensor)
}

/// Every case of `family` (the folder name under golden/).
pub fn load_cases(family: &str) -> Vec<Case> {
    let dir = golden_dir().join(family);
    let path = dir.join("cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e} (set QUANTSCOPE_GOLDEN or QUANTSCOPE_SHARED)",
            path.display()
        )
    });
    let doc: Value = serde_json::from_str(&text).expect("cases.json is JSON");
    doc["cases"]
        .as_array()
        .expect("cases is an array")
        .iter()
        .map(|c| Case {
            id: c["id"].as_str().unwrap_or_default().to_string(),
            // Quantizer families (bnb, ggml) name the function in `quantizer`.
            observer: c["observer"]
                .as_str()
                .or(c["quantizer"].as_str())
                .unwrap_or_default()
                .to_string(),
            // The framework's call as recorded; the engine accepts its nested forms.
            params: extra_inputs::with_extra_inputs(
                &dir,
                c,
                Params::from_value(c.get("params").cloned().unwrap_or(Value::Null))
                    .expect("params object"),
            ),
            preset: c.get("preset").and_then(Value::as_str).map(str::to_string),
            // Quantizer families give their one tensor as `input`.
            batches: c["batches"]
                .as_array()
                .map(|b| {
                    b.iter()
                        .filter_map(Value::as_str)
                        .map(|s| dir.join(s))
                        .collect()
                })
                .or_else(|| c["input"].as_str().map(|s| vec![dir.join(s)]))
                .unwrap_or_default(),
            expected: c["expected"].clone(),
            tolerance: with_family_tolerances(
                family,
                c.get("tolerance").cloned().unwrap_or(Value::Null),
            ),
            raw: c.clone(),
        })
        .collect()
}

/// Tolerances a family's README states for all its cases rather than per case: Horizon's
/// `qdq` metrics are compared with rtol 1e-4 (golden/horizon/README.md, "Tolerances"), its
/// per-case tolerance covering min/max/scale only.
fn with_family_tolerances(family: &str, mut tolerance: Value) -> Value {
    if family == "horizon"
        && tolerance
            .get("per_field")
            .and_then(|p| p.get("qdq"))
            .is_none()
    {
        if !tolerance.is_object() {
            tolerance = serde_json::json!({});
        }
        let per_field = tolerance.as_object_mut().map(|t| {
            t.entry("per_field")
                .or_insert_with(|| serde_json::json!({}))
        });
        if let Some(Value::Object(fields)) = per_field {
            fields.insert("qdq".into(), serde_json::json!({"rtol": 1e-4, "atol": 0.0}));
        }
    }
    tolerance
}

/// Numbers of a JSON scalar or list (null → NaN).
pub fn numbers(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|x| x.as_f64().unwrap_or(f64::NAN))
            .collect(),
        other => vec![other.as_f64().unwrap_or(f64::NAN)],
    }
}

/// Compare `got` with `want` element-wise: `|got − want| ≤ atol + rtol·|want|`.
pub fn check_close(
    field: &str,
    got: &[f64],
    want: &[f64],
    (rtol, atol): (f64, f64),
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{field}: {} values, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g == w) || (g.is_nan() && w.is_nan()) || (g - w).abs() <= atol + rtol * w.abs();
        if !ok {
            return Err(format!(
                "{field}[{i}]: got {g:e}, expected {w:e} (rtol {rtol}, atol {atol})"
            ));
        }
    }
    Ok(())
}

/// Compare the standard fields of `expected` that a [`Report`] carries. Fields the report does
/// not know are left to the family's own checks.
pub fn check_report(case: &Case, report: &Report) -> Result<(), String> {
    let exp = &case.expected;
    let q = report
        .qparams
        .as_ref()
        .ok_or_else(|| format!("no qparams: {:?}", report.error))?;
    let f32s = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    if let Some(w) = exp.get("min_val").filter(|v| !is_empty_list(v)) {
        check_close(
            "min_val",
            &f32s(&q.min_val),
            &numbers(w),
            case.tolerance_for("min_val"),
        )?;
    }
    if let Some(w) = exp.get("max_val").filter(|v| !is_empty_list(v)) {
        check_close(
            "max_val",
            &f32s(&q.max_val),
            &numbers(w),
            case.tolerance_for("max_val"),
        )?;
    }
    if let Some(w) = exp.get("scale").filter(|v| !is_empty_list(v)) {
        check_close(
            "scale",
            &f32s(&q.scale),
            &numbers(w),
            case.tolerance_for("scale"),
        )?;
    }
    if let Some(w) = exp.get("zero_point").filter(|v| !is_empty_list(v)) {
        let got: Vec<f64> = (0..q.zero_point.len())
            .map(|i| q.zero_point.get_f64(i))
            .collect();
        check_close(
            "zero_point",
            &got,
            &numbers(w),
            case.tolerance_for("zero_point"),
        )?;
    }
    if let Some(w) = exp.get("amax").filter(|v| !is_empty_list(v)) {
        let got = q.amax.as_ref().ok_or("amax: the report has none")?;
        check_close("amax", &f32s(got), &numbers(w), case.tolerance_for("amax"))?;
    }
    for (field, tol_field) in [
        ("search_min", "search_min_max"),
        ("search_max", "search_min_max"),
    ] {
        if let Some(w) = exp.get(field) {
            let got = q
                .extra
                .get(field)
                .ok_or_else(|| format!("{field}: the report has none"))?;
            check_close(
                field,
                &numbers(got),
                &numbers(w),
                case.tolerance_for(tol_field),
            )?;
        }
    }
    if let Some(w) = exp.get("histogram").filter(|v| !is_empty_list(v)) {
        let got = report
            .snapshot
            .histogram
            .as_ref()
            .ok_or("histogram: the observer keeps none")?;
        check_close(
            "histogram",
            &f32s(&got.counts),
            &numbers(w),
            case.tolerance_for("histogram"),
        )?;
    }
    if let Some(w) = exp.get("qdq").filter(|v| v.is_object()) {
        let got = report.metrics.as_ref().ok_or("qdq: no metrics")?;
        let tol = case.tolerance_for("qdq");
        for (field, value) in [
            ("mse", Some(got.mse)),
            ("max_abs_err", Some(got.max_abs_err)),
            ("sqnr_db", got.sqnr_db),
            ("clipped_fraction", Some(got.clipped_fraction)),
        ] {
            if let Some(want) = w.get(field).and_then(Value::as_f64) {
                let value = value.ok_or_else(|| format!("qdq.{field}: undefined"))?;
                check_close(&format!("qdq.{field}"), &[value], &[want], tol)?;
            }
        }
    }
    Ok(())
}

fn is_empty_list(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.is_empty())
}

/// Run `case` through the engine. Error cases must fail (with the framework's exception class
/// when one is recorded).
pub fn run_standard(case: &Case) -> Result<(), String> {
    run_standard_report(case).map(|_| ())
}

/// [`run_standard`], returning the report for a family's own further checks (`None` for an
/// error case that failed as expected).
pub fn run_standard_report(case: &Case) -> Result<Option<Report>, String> {
    let report = run_report(case).map_err(|e| format!("unexpected error: {e}"))?;
    if let Some(want) = case.expected.get("error").and_then(Value::as_str) {
        return match &report.error {
            None => Err(format!("expected error `{want}`, got a result")),
            Some(e) => check_error(e, want).map(|()| None),
        };
    }
    if let Some(e) = &report.error {
        return Err(format!("unexpected error: {}", e.message));
    }
    check_report(case, &report)?;
    Ok(Some(report))
}

/// float32 values widened to float64.
pub fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// The observer families whose golden cases are observer runs (folders under golden/).
pub const OBSERVER_FAMILIES: &[&str] = &[
    "torch",
    "quark",
    "horizon",
    "ort",
    "modelopt",
    "llmcompressor",
    "torchao",
];

/// The one driver's report on `case`: its observer, parameters, batches and the attributes it
/// sets after construction (`set_attributes_after_init`).
pub fn run_report(case: &Case) -> Result<Report, String> {
    let batches = case.load_batches()?;
    Ok(case_run(case, &batches)?.report())
}

/// The one driver's run of `case` over `batches` (its own, loaded): its observer, parameters and
/// the attributes it sets after construction.
pub fn case_run<'a>(case: &Case, batches: &'a [Tensor]) -> Result<Run<'a>, String> {
    let attributes = Params::from_value(
        case.raw
            .get("set_attributes_after_init")
            .cloned()
            .unwrap_or(Value::Null),
    )
    .map_err(|e| e.to_string())?;
    Ok(Run::new(&case.observer, case.params.clone(), batches)
        .map_err(|e| e.to_string())?
        .with_attributes(attributes))
}

/// The stage at which `case`'s run raises (`"none"` when it does not).
pub fn error_stage(case: &Case) -> Result<String, String> {
    let report = run_report(case)?;
    Ok(report
        .error
        .and_then(|e| e.stage)
        .unwrap_or_else(|| "none".into()))
}

/// The stage `case`'s run raises at is the one the case records (`error_stage`, named as the
/// engine names it by `engine_name`); `who` names the framework in the failure.
pub fn check_error_stage(
    case: &Case,
    who: &str,
    engine_name: fn(&str) -> &str,
) -> Result<(), String> {
    let Some(want) = case.expected.get("error_stage").and_then(Value::as_str) else {
        return Ok(());
    };
    let (got, want) = (error_stage(case)?, engine_name(want));
    if got == want {
        Ok(())
    } else {
        Err(format!("error raised at {got}, {who} raises it at {want}"))
    }
}

/// A report's error matches a framework's `"Class: message"` when it is a framework error of
/// the same class whose message agrees on the first line.
pub fn check_error(error: &ErrorInfo, want: &str) -> Result<(), String> {
    let (want_kind, want_msg) = want.split_once(": ").unwrap_or((want, ""));
    let message = error
        .message
        .strip_prefix(&format!("{want_kind}: "))
        .unwrap_or(&error.message);
    if error.kind == "framework"
        && error.exception.as_deref() == Some(want_kind)
        && message.lines().next() == want_msg.lines().next()
    {
        Ok(())
    } else {
        Err(format!("expected error `{want}`, got `{}`", error.message))
    }
}

/// Run every case of `family` with `runner`, print a per-observer summary and fail on any
/// mismatch.
pub fn run_family(family: &str, runner: impl Fn(&Case) -> Result<(), String>) {
    run_cases(family, load_cases(family), runner, true);
}

/// Run the given cases of `family` with `runner`, print a per-observer summary and fail on any
/// mismatch; `record` writes the summary used by the README's parity table.
pub fn run_cases(
    family: &str,
    cases: Vec<Case>,
    runner: impl Fn(&Case) -> Result<(), String>,
    record: bool,
) {
    assert!(!cases.is_empty(), "no cases for {family}");
    let mut per_observer: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner(case)))
            .unwrap_or_else(|_| Err("panicked".to_string()));
        let entry = per_observer.entry(case.observer.clone()).or_default();
        entry.1 += 1;
        match outcome {
            Ok(()) => entry.0 += 1,
            Err(why) => failures.push(format!("{}: {why}", case.id)),
        }
    }
    println!("golden {family}: per-observer summary");
    for (observer, (ok, total)) in &per_observer {
        println!("  {observer:55} {ok:3}/{total}");
    }
    let passed = cases.len() - failures.len();
    println!("golden {family}: {passed}/{} cases pass", cases.len());
    if record {
        write_summary(family, &per_observer);
    }
    assert!(
        failures.is_empty(),
        "{} {family} golden case(s) fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Record the per-observer pass counts in `target/golden-summary/<family>.json`, from which
/// `scripts/parity-table.mjs` renders the README's parity table.
fn write_summary(family: &str, per_observer: &BTreeMap<String, (usize, usize)>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/golden-summary");
    let observers: serde_json::Map<String, Value> = per_observer
        .iter()
        .map(|(id, (ok, total))| {
            (
                id.clone(),
                serde_json::json!({"passed": ok, "cases": total}),
            )
        })
        .collect();
    let doc = serde_json::json!({"family": family, "observers": observers});
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(
        dir.join(format!("{family}.json")),
        serde_json::to_string_pretty(&doc).unwrap_or_default(),
    );
}
