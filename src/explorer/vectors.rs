//! Vector parameters given as loaded tensors, and the values of a loaded tensor.
//!
//! The page and the npm package name a vector parameter (an importance matrix, fixed scales)
//! either inline, as a JSON array of numbers, or by reference to a tensor of the session's
//! loaded files, `{"file": i, "member": name}`, as the page's tensor pickers set it. Before a
//! run, every reference among the declared vector parameters is replaced by the tensor's values
//! (row-major, as float64 numbers: exactly the float32 values); inline arrays and other kinds
//! pass through unchanged.

use super::{MemberRef, Session};
use crate::error::{Error, Result};
use crate::params::{ParamKind, ParamSpec, Params};

impl Session {
    /// `params` with every vector parameter of `declared` that is given as a loaded tensor
    /// (`{file, member}`) replaced by that tensor's values.
    pub(super) fn resolve_vectors(
        &self,
        declared: &[ParamSpec],
        params: &Params,
    ) -> Result<Params> {
        let mut out = params.clone();
        for p in declared.iter().filter(|p| p.kind == ParamKind::Vector) {
            let Some(reference) = params.get(p.name).filter(|v| v.is_object()) else {
                continue;
            };
            let member: MemberRef = serde_json::from_value(reference.clone()).map_err(|e| {
                Error::param(
                    p.name,
                    format!("expected {{file, member}} of a loaded tensor: {e}"),
                )
            })?;
            let values: Vec<f64> = self
                .tensor_values(&member)?
                .iter()
                .map(|&v| v as f64)
                .collect();
            out.0
                .insert(p.name.to_string(), serde_json::Value::from(values));
        }
        Ok(out)
    }

    /// The values of loaded tensor `member`, row-major.
    pub fn tensor_values(&self, member: &MemberRef) -> Result<&[f32]> {
        Ok(&self.member(member)?.data)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Selection;
    use super::*;
    use crate::tensor::{NamedTensor, Tensor};
    use serde_json::json;

    #[test]
    fn references_become_values_and_bad_ones_are_named() {
        let mut s = Session::new();
        s.add_file(
            "imp.npy",
            vec![NamedTensor {
                name: String::new(),
                tensor: Tensor::new(vec![3], vec![1.0, 0.5, 2.0]).unwrap(),
            }],
        );
        let declared = [ParamSpec::vector("importance", "")];
        let given =
            Params::from_value(json!({"importance": {"file": 0, "member": ""}, "x": 1})).unwrap();
        let out = s.resolve_vectors(&declared, &given).unwrap();
        assert_eq!(out.get("importance"), Some(&json!([1.0, 0.5, 2.0])));
        assert_eq!(out.get("x"), Some(&json!(1)));
        let inline = Params::from_value(json!({"importance": [3.0]})).unwrap();
        assert_eq!(s.resolve_vectors(&declared, &inline).unwrap(), inline);
        let missing = Params::from_value(json!({"importance": {"file": 4, "member": ""}})).unwrap();
        let e = s
            .resolve_vectors(&declared, &missing)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no loaded file #4"), "{e}");
        let malformed = Params::from_value(json!({"importance": {"file": "a"}})).unwrap();
        let e = s
            .resolve_vectors(&declared, &malformed)
            .unwrap_err()
            .to_string();
        assert!(e.contains("importance"), "{e}");
    }

    /// A [2, 256] tensor and a 256-entry importance in one session, the tensor selected.
    fn session_with_imatrix() -> (Session, Tensor, Vec<f32>) {
        let x: Vec<f32> = (0..512).map(|i| ((i as f32) * 0.731).sin() * 3.0).collect();
        let im: Vec<f32> = (0..256).map(|i| 0.1 + (i % 7) as f32).collect();
        let t = Tensor::new(vec![2, 256], x).unwrap();
        let mut s = Session::new();
        for (name, tensor) in [
            ("w.npy", t.clone()),
            ("imatrix.npy", Tensor::from_vec(im.clone())),
        ] {
            s.add_file(
                name,
                vec![NamedTensor {
                    name: String::new(),
                    tensor,
                }],
            );
        }
        s.select(Selection::whole_file(0, None)).unwrap();
        (s, t, im)
    }

    #[test]
    fn formats_take_an_imatrix_from_a_loaded_tensor() {
        let (s, t, im) = session_with_imatrix();
        let by_reference =
            Params::from_value(json!({"imatrix": {"file": 1, "member": ""}})).unwrap();
        let inline = Params::new().with("imatrix", im);
        let q = s.quantize("ggml.Q4_K", &by_reference).unwrap();
        let direct = crate::quantizers::apply::quantize("ggml.Q4_K", &inline, &t).unwrap();
        assert_eq!(q.format, "ggml.Q4_K (imatrix)");
        assert_eq!(q.values, direct.values);
        assert_eq!(q.shape, vec![2, 256]);
        let reference_free = s.quantize("ggml.Q4_K", &Params::new()).unwrap();
        assert_ne!(q.values, reference_free.values, "the imatrix path ran");
        let row = s.evaluate_format("ggml.Q4_K", &by_reference).unwrap();
        assert_eq!(row.metrics.mse, q.metrics.mse);
        assert_eq!(
            row.params, by_reference,
            "the row keeps the reference, not 256 values"
        );
        let wrong = Params::from_value(json!({"imatrix": {"file": 0, "member": ""}})).unwrap();
        let e = s.quantize("ggml.Q4_K", &wrong).unwrap_err().to_string();
        assert!(e.contains("last axis has 256, the imatrix 512"), "{e}");
        assert!(Session::new()
            .quantize("ggml.Q4_K", &Params::new())
            .is_err());
    }
}
