//! The explorer's contract over the whole registry: whatever sequence of parameter changes led to
//! a result, it equals a fresh run with the current values.
//!
//! For every observer, every declared parameter and several values `b` of it (taken from its
//! declaration: every choice, both booleans, the range's ends and neighbours of the default),
//! "observe with the defaults, then change to `b`" must equal "observe fresh with `b`" — qparams,
//! metrics and errors alike — and so must changing back. A search-only declaration that in fact
//! changes what is collected fails here. Passing every default explicitly must equal passing
//! `{}`.
use quantscope::engine::Report;
use quantscope::explorer::{MemberRef, Selection, Session};
use quantscope::params::{ParamKind, ParamSpec, Params};
use quantscope::registry;
use quantscope::tensor::{NamedTensor, Tensor};
use serde_json::{json, Value};

/// Two calibration batches of shape [8, 64] (64 divides every block and group size in use),
/// with an outlier so that range searches have something to cut.
fn session() -> Session {
    let batch = |seed: u32| {
        let data: Vec<f32> = (0..512u32)
            .map(|i| {
                let u = ((i.wrapping_mul(2_654_435_761).wrapping_add(seed * 97)) % 10_007) as f32
                    / 10_007.0;
                (u - 0.5) * 4.0 + if i == 77 { 9.0 } else { 0.0 }
            })
            .collect();
        Tensor::new(vec![8, 64], data).unwrap()
    };
    let mut s = Session::new();
    for seed in [1, 2] {
        s.add_file(
            &format!("b{seed}.npy"),
            vec![NamedTensor {
                name: String::new(),
                tensor: batch(seed),
            }],
        );
    }
    s.select(Selection {
        batches: (0..2)
            .map(|file| MemberRef {
                file,
                member: String::new(),
            })
            .collect(),
        split: None,
    })
    .unwrap();
    s
}

/// Values of `p` to try besides its default.
fn values(p: &ParamSpec) -> Vec<Value> {
    let mut out: Vec<Value> = match &p.kind {
        ParamKind::Choice { options } => options.iter().map(|o| json!(o)).collect(),
        ParamKind::Bool => vec![json!(true), json!(false)],
        ParamKind::Text => vec![json!("x")],
        ParamKind::Vector => vec![
            json!(vec![1.0; 64]),
            json!((0..64).map(|i| 1.0 + i as f64).collect::<Vec<_>>()),
        ],
        ParamKind::Int { min, max } => {
            let d = p.default.as_i64().unwrap_or(0).clamp(*min, *max);
            let mut v = vec![d - 1, d + 1, d * 2, d / 2];
            if max - min <= 64 {
                v.extend([*min, *max]);
            }
            v.into_iter()
                .filter(|x| (*min..=*max).contains(x))
                .map(|x| json!(x))
                .collect()
        }
        ParamKind::Float { min, max, .. } => {
            let d = p.default.as_f64().unwrap_or((min + max) / 2.0);
            [d * 0.5, d * 0.9, d * 1.1, (d + max) / 2.0, *min, *max]
                .into_iter()
                .filter(|x| x.is_finite() && (*min..=*max).contains(x) && x.abs() < 1e30)
                .map(|x| json!(x))
                .collect()
        }
        ParamKind::Bits { min, max, formats } => {
            let mut v: Vec<Value> = [4i64, 6, 8]
                .into_iter()
                .filter(|b| (*min..=*max).contains(b))
                .map(|b| json!(b))
                .collect();
            v.extend(formats.iter().map(|f| json!(f)));
            v
        }
    };
    out.retain(|v| *v != p.default);
    out.dedup();
    out
}

/// What a user sees of a report: qparams, metrics, error.
fn outcome(r: &Report) -> Value {
    json!({
        "ok": r.ok,
        "error": r.error.as_ref().map(|e| e.message.clone()),
        "qparams": r.qparams,
        "metrics": r.metrics,
    })
}

#[test]
fn every_parameter_change_equals_a_fresh_run() {
    let mut tried = 0;
    let mut reused = 0;
    let mut stale = Vec::new();
    for spec in registry::observers() {
        let fresh_default = outcome(&session().observe(spec.id, Params::new()).unwrap());
        for p in &spec.params {
            for b in values(p) {
                let changed = Params::new().with(p.name, b.clone());
                let mut s = session();
                s.observe(spec.id, Params::new()).unwrap();
                let moved = s.update(spec.id, changed.clone()).unwrap();
                let fresh = session().observe(spec.id, changed.clone()).unwrap();
                tried += 1;
                reused += usize::from(moved.state_reused);
                if outcome(&moved) != outcome(&fresh) {
                    stale.push(format!("{} {}={b}: moved there", spec.id, p.name));
                }
                let back = s.update(spec.id, Params::new()).unwrap();
                if outcome(&back) != fresh_default {
                    stale.push(format!("{} {}={b}: moved back", spec.id, p.name));
                }
            }
        }
    }
    println!(
        "{tried} parameter changes over {} observers, {reused} answered from collected state, {} stale",
        registry::observers().len(),
        stale.len()
    );
    assert!(tried > 300, "only {tried} changes tried");
    assert!(stale.is_empty(), "stale results:\n{}", stale.join("\n"));
}

#[test]
fn explicit_defaults_equal_no_parameters() {
    for spec in registry::observers() {
        let mut all = Params::new();
        for p in &spec.params {
            all = all.with(p.name, p.default.clone());
        }
        let none = session().observe(spec.id, Params::new()).unwrap();
        let explicit = session().observe(spec.id, all).unwrap();
        assert_eq!(outcome(&none), outcome(&explicit), "{}", spec.id);
        let complete = spec.complete(&Params::new()).unwrap();
        for p in &spec.params {
            assert!(
                complete.0.contains_key(p.name),
                "{}: {} has no resolved value",
                spec.id,
                p.name
            );
        }
    }
}
