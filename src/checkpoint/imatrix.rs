//! llama.cpp importance matrices, turned into the per-column importance `llama-quantize` passes
//! to ggml's quantizers, bit for bit.
//!
//! Two file formats, recognised by their first bytes:
//!
//! * **GGUF** (`llama-imatrix`'s current format): for each weight `W`, a tensor `W.in_sum2`
//!   (F32, `ne = [n_per_row, n_mat]`: the sum of x² over every activation row that fed the weight)
//!   and `W.counts` (F32, `ne = [1, n_mat]`: how many rows). Importance, as `load_imatrix` computes
//!   it: `in_sum2[m][j] / counts[m]` as one float32 division, or `1.0` for a whole matrix whose
//!   count is ≤ 0. Other tensors (e.g. a future `W.in_sum`) are ignored, as the loader does.
//! * **legacy `.dat`** (little-endian): `i32` entry count; per entry `i32` name length, the name,
//!   `i32 ncall`, `i32 nval`, `f32 values[nval]` (mean x² times ncall); then optionally `i32` last
//!   chunk, `i32` length and the dataset name. Importance, as `load_legacy_imatrix` computes it:
//!   `values[j] / ncall` in float32 when `ncall > 0`, else the values unchanged.
//!
//! The two formats round differently ((s/c)·n/n is not always s/c in float32), so the format a
//! file was written in decides the importance, and this reader never converts between them.
//!
//! Every length is checked against the file before anything is allocated: a negative or absurd
//! count or length is refused with the field it came from.

use super::source::InMemory;
use super::{decode_entry, gguf, Entry};
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// Importance per weight (by the weight's GGUF name), one value per column (`n_mat` matrices of
/// a stacked expert weight one after the other).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Importance {
    pub by_weight: BTreeMap<String, Vec<f32>>,
    /// `gguf` or `legacy`.
    pub format: &'static str,
}

impl Importance {
    /// The importance of weight `name`, if the file has it.
    pub fn of(&self, name: &str) -> Option<&[f32]> {
        self.by_weight.get(name).map(Vec::as_slice)
    }
}

/// Read an importance matrix file (either format) from its bytes; `name` is used in errors.
pub fn read(name: &str, bytes: &[u8]) -> Result<Importance> {
    let fail = |reason: String| Error::load(name, reason);
    if bytes.starts_with(b"GGUF") {
        from_gguf(bytes).map_err(fail)
    } else {
        from_legacy(bytes).map_err(fail)
    }
}

fn from_gguf(bytes: &[u8]) -> std::result::Result<Importance, String> {
    let entries = match gguf::list(&InMemory(bytes)) {
        Ok(e) => e,
        Err(super::source::Stop::Bad(reason)) => return Err(reason),
        Err(super::source::Stop::Need(r)) => {
            return Err(format!(
                "truncated: bytes {}..{} are missing",
                r.start, r.end
            ))
        }
        Err(super::source::Stop::NeedAll(_)) => return Err("truncated: bytes are missing".into()),
    };
    let values = |e: &Entry| -> std::result::Result<Vec<f32>, String> {
        let start = usize::try_from(e.range.start).map_err(|_| "offset out of range")?;
        let end = usize::try_from(e.range.end).map_err(|_| "offset out of range")?;
        let data = bytes
            .get(start..end)
            .ok_or_else(|| format!("{}: its bytes lie outside the file", e.name))?;
        decode_entry(e, data)
            .map(|t| t.data)
            .map_err(|err| err.to_string())
    };
    let mut by_weight = BTreeMap::new();
    for e in entries.iter() {
        let Some(weight) = e.name.strip_suffix(".in_sum2") else {
            continue;
        };
        let counts_name = format!("{weight}.counts");
        let counts = entries
            .iter()
            .find(|c| c.name == counts_name)
            .ok_or_else(|| format!("{} has no {counts_name}", e.name))?;
        let sums = values(e)?;
        let counts = values(counts)?;
        // ne = [n_per_row, n_mat]: numpy shape [n_mat, n_per_row].
        let n_mat = counts.len();
        if n_mat == 0 || sums.len() % n_mat != 0 {
            return Err(format!(
                "{} has {} values, not a whole number of rows for {n_mat} count(s)",
                e.name,
                sums.len()
            ));
        }
        let per_row = sums.len() / n_mat;
        let mut importance = Vec::with_capacity(sums.len());
        for (m, &count) in counts.iter().enumerate() {
            let row = &sums[m * per_row..(m + 1) * per_row];
            if count > 0.0 {
                importance.extend(row.iter().map(|&s| s / count));
            } else {
                importance.extend(std::iter::repeat_n(1.0f32, per_row));
            }
        }
        by_weight.insert(weight.to_string(), importance);
    }
    if by_weight.is_empty() {
        return Err("a GGUF file without any `<weight>.in_sum2` tensor is not an imatrix".into());
    }
    Ok(Importance {
        by_weight,
        format: "gguf",
    })
}

/// A little-endian reader over the legacy format.
struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Fields<'_> {
    fn i32(&mut self, what: &str) -> std::result::Result<i32, String> {
        let b = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| format!("truncated at byte {}: {what} is missing", self.pos))?;
        self.pos += 4;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length field: positive and small enough for the bytes left at `size` bytes each.
    fn length(&mut self, what: &str, size: usize) -> std::result::Result<usize, String> {
        let n = self.i32(what)?;
        let left = self.bytes.len() - self.pos;
        match usize::try_from(n) {
            Ok(n) if n >= 1 && n.saturating_mul(size) <= left => Ok(n),
            _ => Err(format!(
                "{what} is {n}: it must be at least 1 and fit in the {left} bytes left"
            )),
        }
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let b = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        b
    }
}

fn from_legacy(bytes: &[u8]) -> std::result::Result<Importance, String> {
    let mut f = Fields { bytes, pos: 0 };
    // Each entry takes at least 4 + 1 + 4 + 4 + 4 bytes.
    let n_entries = f.length("the entry count", 17)?;
    let mut by_weight = BTreeMap::new();
    for i in 0..n_entries {
        let len = f.length(&format!("entry {i}'s name length"), 1)?;
        let name = String::from_utf8_lossy(f.take(len)).into_owned();
        let ncall = f.i32(&format!("{name}'s ncall"))?;
        let nval = f.length(&format!("{name}'s value count"), 4)?;
        let mut values: Vec<f32> = f
            .take(nval * 4)
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if ncall > 0 {
            let n = ncall as f32;
            for v in &mut values {
                *v /= n;
            }
        }
        by_weight.insert(name, values);
    }
    Ok(Importance {
        by_weight,
        format: "legacy",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legacy(entries: &[(&str, i32, &[f32])]) -> Vec<u8> {
        let mut out = (entries.len() as i32).to_le_bytes().to_vec();
        for (name, ncall, values) in entries {
            out.extend((name.len() as i32).to_le_bytes());
            out.extend(name.as_bytes());
            out.extend(ncall.to_le_bytes());
            out.extend((values.len() as i32).to_le_bytes());
            for v in *values {
                out.extend(v.to_le_bytes());
            }
        }
        out
    }

    #[test]
    fn legacy_values_are_divided_by_ncall_in_float32() {
        let file = legacy(&[("w", 5, &[10.0, 1.0]), ("v", 0, &[3.0])]);
        let im = read("x.dat", &file).unwrap();
        assert_eq!(im.of("w").unwrap(), &[2.0, 1.0f32 / 5.0]);
        assert_eq!(im.of("v").unwrap(), &[3.0]);
    }

    #[test]
    fn absurd_lengths_are_refused_by_name() {
        let mut file = legacy(&[("w", 5, &[1.0])]);
        file[0..4].copy_from_slice(&(-3i32).to_le_bytes());
        let err = read("x.dat", &file).unwrap_err().to_string();
        assert!(err.contains("the entry count is -3"), "{err}");
        let mut file = legacy(&[("w", 5, &[1.0])]);
        let at = 4 + 4 + 1 + 4;
        file[at..at + 4].copy_from_slice(&i32::MAX.to_le_bytes());
        let err = read("x.dat", &file).unwrap_err().to_string();
        assert!(err.contains("w's value count is 2147483647"), "{err}");
        let mut file = legacy(&[("w", 5, &[1.0])]);
        file[4..8].copy_from_slice(&1000i32.to_le_bytes());
        let err = read("x.dat", &file).unwrap_err().to_string();
        assert!(err.contains("entry 0's name length is 1000"), "{err}");
        let err = read("x.dat", &file[..3]).unwrap_err().to_string();
        assert!(err.contains("the entry count is missing"), "{err}");
    }

    #[test]
    fn a_gguf_imatrix_divides_by_the_count_or_gives_one() {
        let sums: Vec<u8> = [4.0f32, 6.0, 1.0, 2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let counts: Vec<u8> = [2.0f32, 0.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let file = gguf::write(&[
            ("w.in_sum2", 0, &[2, 2], &sums),
            ("w.counts", 0, &[1, 2], &counts),
        ]);
        let im = read("i.gguf", &file).unwrap();
        assert_eq!(im.of("w").unwrap(), &[2.0, 3.0, 1.0, 1.0]);
        let lonely = gguf::write(&[("w.in_sum2", 0, &[2, 2], &sums)]);
        let err = read("i.gguf", &lonely).unwrap_err().to_string();
        assert!(err.contains("has no w.counts"), "{err}");
    }
}
