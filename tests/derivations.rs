//! Every observer explains its choice (`Report.derivation`, `observe --explain`), and the
//! explanation ends in the report's own numbers: the last step's `scale` and `zero_point` are the
//! report's, bit for bit. Checked for every golden case of every observer family and for every
//! observer of the registry on a demo-like tensor; asking for the derivation changes nothing in
//! the report.
mod common;

use quantscope::derivation::Value;
use quantscope::engine::{Report, Run};
use quantscope::observer::{Grid, ZeroPoint};
use quantscope::params::Params;
use quantscope::registry;
use quantscope::tensor::Tensor;
use serde_json::Value as Json;

/// The report's scale and zero point are the last step's, bit for bit.
fn check_ends_in_the_report(report: &Report) -> Result<(), String> {
    let Some(q) = &report.qparams else {
        return Ok(());
    };
    let last = report
        .derivation
        .last()
        .ok_or_else(|| format!("{}: no derivation", report.observer))?;
    if matches!(q.grid, Grid::None) {
        return Ok(());
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    match last.values.get("scale") {
        Some(Value::F32s(scale)) if bits(scale) == bits(&q.scale) => {}
        other => {
            return Err(format!(
                "{}: the last step `{}` has scale {other:?}, the report {:?}",
                report.observer, last.title, q.scale
            ))
        }
    }
    let same_zero_point = match (last.values.get("zero_point"), &q.zero_point) {
        (Some(Value::Ints(a)), ZeroPoint::Int(b)) => a == b,
        (Some(Value::F32s(a)), ZeroPoint::Float(b)) => bits(a) == bits(b),
        _ => false,
    };
    if !same_zero_point {
        return Err(format!(
            "{}: the last step `{}` has zero point {:?}, the report {:?}",
            report.observer,
            last.title,
            last.values.get("zero_point"),
            q.zero_point
        ));
    }
    Ok(())
}

/// The report with and without its derivation: the derivation ends in the report's numbers and
/// asking for it changes nothing else.
fn check_run(run: Run) -> Result<(), String> {
    let plain = run.clone().report();
    let explained = run.explained(true).report();
    if !plain.derivation.is_empty() {
        return Err(format!("{}: a derivation nobody asked for", plain.observer));
    }
    let json = |r: &Report| {
        let mut v = serde_json::to_value(r).expect("a report serialises");
        if let Json::Object(map) = &mut v {
            map.remove("derivation");
        }
        v
    };
    if json(&plain) != json(&explained) {
        return Err(format!(
            "{}: asking for the derivation changed the report",
            plain.observer
        ));
    }
    if explained.ok && explained.derivation.is_empty() {
        return Err(format!("{}: no derivation", explained.observer));
    }
    check_ends_in_the_report(&explained)?;
    // Through JSON (what the CLI, npm and Python carry) the steps keep their values.
    let text = serde_json::to_string(&explained.derivation).expect("steps serialise");
    let back: Vec<quantscope::derivation::Step> =
        serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if back.len() != explained.derivation.len() {
        return Err("steps lost through JSON".into());
    }
    Ok(())
}

#[test]
fn every_golden_case_explains_its_qparams_with_the_reports_numbers() {
    for family in common::OBSERVER_FAMILIES {
        let cases = common::load_cases(family);
        common::run_cases(
            &format!("derivations of {family}"),
            cases,
            |case| {
                if registry::find(&case.observer).is_err() {
                    return Ok(());
                }
                let batches = case.load_batches()?;
                check_run(common::case_run(case, &batches)?)
            },
            false,
        );
    }
}

/// A 64×96 weight-like tensor with a few outliers (deterministic).
fn weight() -> Tensor {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<f32> = (0..64 * 96)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            if i % 997 == 0 {
                u * 40.0
            } else {
                u * u * u * 8.0
            }
        })
        .collect();
    Tensor::new(vec![64, 96], data).expect("shape matches")
}

#[test]
fn every_observer_of_the_registry_explains_its_qparams_with_the_reports_numbers() {
    let batches = [weight()];
    let mut failures = Vec::new();
    for spec in registry::observers() {
        let run = Run::new(spec.id, Params::new(), &batches).expect("a registered id");
        if let Err(why) = check_run(run) {
            failures.push(why);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_histogram_search_lists_every_candidate_it_evaluated_and_marks_its_pick() {
    let batches = [weight()];
    let report = Run::new("torch.HistogramObserver", Params::new(), &batches)
        .unwrap()
        .explained(true)
        .report();
    let q = report.qparams.as_ref().unwrap();
    let search = report
        .derivation
        .iter()
        .find_map(|s| s.candidates.as_ref().map(|c| (s, c)))
        .expect("a search step");
    let (step, table) = search;
    let evaluated = match step.values.get("candidates evaluated") {
        Some(Value::Int(n)) => *n as usize,
        other => panic!("candidates evaluated: {other:?}"),
    };
    assert_eq!(table.rows.len(), evaluated);
    assert_eq!(
        q.extra["search_evaluations"].as_u64(),
        Some(evaluated as u64)
    );
    let picked = &table.rows[table.picked];
    let (lo, hi) = q.clip_range.as_ref().unwrap();
    assert_eq!(picked[2], f64::from(lo[0]));
    assert_eq!(picked[3], f64::from(hi[0]));
    // The greedy rule: every later candidate was worse than the pick, every earlier one better
    // or equal to its predecessor.
    let loss = |i: usize| table.rows[i][4];
    assert!((table.picked + 1..table.rows.len()).all(|i| loss(i) > loss(table.picked)));
    assert!((1..=table.picked).all(|i| loss(i) <= loss(i - 1)));
}
