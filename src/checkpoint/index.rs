//! `model.safetensors.index.json`: which shard holds each tensor of a sharded checkpoint.
//!
//! `{"metadata": {"total_size": …}, "weight_map": {"tensor.name": "model-00001-of-00002.safetensors", …}}`.
//! Shard names are paths relative to the index's folder. Only `weight_map` matters here.

use super::source::{bytes, Parse, Stop};
use super::ByteSource;
use serde_json::Value;

/// The largest index file read (64 MiB; real ones are well under 1 MiB).
pub const MAX_INDEX: u64 = 64 << 20;

/// A parsed index: its shards in name order, and each tensor with its shard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardIndex {
    /// Distinct shard names, sorted.
    pub shards: Vec<String>,
    /// `(tensor, shard)` pairs sorted by shard then tensor name.
    pub weight_map: Vec<(String, String)>,
}

/// Parse an index from its bytes.
pub fn parse(text: &[u8]) -> Result<ShardIndex, String> {
    let value: Value =
        serde_json::from_slice(text).map_err(|e| format!("the index is not valid JSON: {e}"))?;
    let map = value
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or("the index has no \"weight_map\" object")?;
    let mut weight_map = Vec::with_capacity(map.len());
    for (tensor, shard) in map {
        let shard = shard.as_str().ok_or_else(|| {
            format!("the index maps tensor `{tensor}` to {shard}, not to a shard file name")
        })?;
        if shard.is_empty() || shard.split(['/', '\\']).any(|part| part == "..") {
            return Err(format!(
                "the index maps tensor `{tensor}` to `{shard}`, which is not a file inside the index's folder"
            ));
        }
        weight_map.push((tensor.clone(), shard.to_string()));
    }
    weight_map.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
    let mut shards: Vec<String> = weight_map.iter().map(|(_, s)| s.clone()).collect();
    shards.dedup();
    Ok(ShardIndex { shards, weight_map })
}

/// Parse the index file `src`.
pub(crate) fn list(src: &dyn ByteSource) -> Parse<ShardIndex> {
    if src.len() > MAX_INDEX {
        return Err(Stop::Bad(format!(
            "the index file has {} bytes, more than the {MAX_INDEX} quantscope reads",
            src.len()
        )));
    }
    let text = bytes(src, 0..src.len(), "the index")?;
    parse(text).map_err(Stop::Bad)
}

/// The path of `shard` next to the index file named `index_name` (`/`-joined, as the page
/// names files of a folder; natively the same string as the joined path on Unix).
pub fn shard_path(index_name: &str, shard: &str) -> String {
    match index_name.rfind(['/', '\\']) {
        Some(at) => format!("{}/{shard}", index_name.get(..at).unwrap_or_default()),
        None => shard.to_string(),
    }
}
