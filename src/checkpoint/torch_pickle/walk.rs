//! The tensors of a loaded object, named by dotted path: dict keys and list or tuple indices
//! joined with `.` (`optimizer.state.0.exp_avg`, `tensors.2`); a state dict's keys keep their
//! own dots (`encoder.layer.0.attention.self.query.weight`). A tensor at the root takes the
//! file's name.
//!
//! Containers are walked depth first in their order (a dict in insertion order) with an
//! explicit work list, so nesting never reaches Rust's stack. The same container reached twice
//! is walked twice (its tensors get both names, as `torch.load` would return them under both),
//! within bounds: nesting deeper than [`MAX_DEPTH`] (a cycle does that), more than
//! [`MAX_VISITS`] values reached, or names longer than [`MAX_NAME`] bytes refuse the file.
//! Non-tensor leaves (numbers, strings, `None`, devices, …) are not tensors and are skipped.

use super::vm::{Object, Parsed, Tensor, Value};

/// The deepest nesting walked.
pub(crate) const MAX_DEPTH: usize = 256;
/// The most values reached in one walk.
pub(crate) const MAX_VISITS: usize = 1 << 20;
/// The longest dotted name.
pub(crate) const MAX_NAME: usize = 64 << 10;
/// The most bytes of names in all.
pub(crate) const MAX_NAMES_TOTAL: usize = 64 << 20;

/// One tensor of the object with its dotted name.
#[derive(Debug, Clone)]
pub(crate) struct Named<'a> {
    pub name: String,
    pub tensor: &'a Tensor,
}

/// A dict key as a path element: strings as they are, integers in decimal, others as Python
/// prints them.
fn key_text(parsed: &Parsed, key: &Value) -> String {
    match key {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::None => "None".into(),
        Value::Float(f) => format!("{f:?}"),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::BigInt => "<int>".into(),
        Value::Global(g) => g.path.clone(),
        Value::Obj(id) => match parsed.heap.get(*id) {
            Some(Object::Tuple(items)) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|i| match i {
                        Value::Obj(_) => "…".to_string(),
                        other => key_text(parsed, other).chars().take(64).collect(),
                    })
                    .collect();
                format!("({})", parts.join(", "))
            }
            _ => "<object>".into(),
        },
    }
}

/// Every tensor reachable from the object's root, in order, named; `root_name` names a tensor
/// that is the root itself.
pub(crate) fn tensors<'a>(parsed: &'a Parsed, root_name: &str) -> Result<Vec<Named<'a>>, String> {
    let mut out = Vec::new();
    let mut work: Vec<(&Value, String, usize)> = vec![(&parsed.root, String::new(), 0)];
    let mut visits = 0usize;
    let mut names_total = 0usize;
    while let Some((value, path, depth)) = work.pop() {
        let Value::Obj(id) = value else {
            continue;
        };
        // The children, as (value, key) before their names are made.
        let children: Vec<(&Value, Key<'_>)> = match parsed.heap.get(*id) {
            Some(Object::Tensor(t)) => {
                let name = if path.is_empty() {
                    root_name.to_string()
                } else {
                    path
                };
                out.push(Named { name, tensor: t });
                continue;
            }
            Some(Object::Dict(d)) => d.items.iter().map(|(k, v)| (v, Key::Of(k))).collect(),
            Some(Object::List(items) | Object::Tuple(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v, Key::Index(i)))
                .collect(),
            _ => continue,
        };
        if children.is_empty() {
            continue;
        }
        if depth >= MAX_DEPTH {
            return Err(format!(
                "the pickle's containers nest deeper than {MAX_DEPTH} levels (a container inside itself?)"
            ));
        }
        visits += children.len();
        if visits > MAX_VISITS {
            return Err(format!(
                "the pickle's object reaches more than {MAX_VISITS} values (containers shared many times over)"
            ));
        }
        let mut named = Vec::with_capacity(children.len());
        for (v, key) in children.into_iter().rev() {
            let key = match key {
                Key::Index(i) => i.to_string(),
                Key::Of(k) => key_text(parsed, k),
            };
            let len = path.len() + 1 + key.len();
            names_total += len;
            if len > MAX_NAME {
                return Err(format!(
                    "a dotted name is longer than {MAX_NAME} bytes (it starts `{}`)",
                    format!("{path}.{key}").chars().take(64).collect::<String>()
                ));
            }
            if names_total > MAX_NAMES_TOTAL {
                return Err(format!(
                    "the dotted names of the pickle's values take more than {MAX_NAMES_TOTAL} bytes"
                ));
            }
            let name = if path.is_empty() {
                key
            } else {
                format!("{path}.{key}")
            };
            named.push((v, name, depth + 1));
        }
        work.extend(named);
    }
    Ok(out)
}

/// A child's place in its container.
enum Key<'a> {
    Index(usize),
    Of(&'a Value),
}
