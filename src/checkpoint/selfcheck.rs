//! The oracle of the fuzz targets and of their regression tests: run every reader on one
//! input and check what must hold whatever the bytes. It panics on a violation (that is its
//! job); the readers themselves never panic.
//!
//! For any input: the whole-file readers return tensors whose data matches their shape, or an
//! error; the catalogue lists the file from memory without asking for bytes; every entry without
//! a problem has a range inside the file and decodes to a tensor of its listed shape (or a
//! data error); the page's builder, fed only the ranges it asks for in a bounded number of
//! rounds, lists exactly the same catalogue; and for a tensor both a whole-file reader and the
//! catalogue read, the values are bit-identical.

use super::{
    assemble, decode_entry, list_file, Catalog, CatalogBuilder, CatalogFile, FileListing, InMemory,
    Step,
};
use crate::tensor::{element_count, read_tensors, Tensor};

/// Check every reader on `data` as the file `name` (the extension matters when the bytes carry
/// no magic).
pub fn check_file(name: &str, data: &[u8]) {
    let whole = read_tensors(data, name);
    if let Ok(tensors) = &whole {
        for t in tensors {
            assert_eq!(element_count(&t.tensor.shape), Some(t.tensor.data.len()));
        }
    }
    let catalog = assemble(vec![list_in_memory(name, data)]);
    for entry in &catalog.entries {
        if entry.problem.is_some() {
            continue;
        }
        assert!(entry.range.start <= entry.range.end && entry.range.end <= data.len() as u64);
        let bytes = data
            .get(entry.range.start as usize..entry.range.end as usize)
            .unwrap_or_default();
        if let Ok(t) = decode_entry(entry, bytes) {
            assert_eq!(t.shape, entry.shape);
            assert_eq!(element_count(&t.shape), Some(t.data.len()));
            // A bare `.npy` is unnamed in the whole-file reader; compare only unambiguous names.
            if let Ok(tensors) = &whole {
                let named = |n: &str| n == entry.name || (n.is_empty() && tensors.len() == 1);
                let matches: Vec<_> = tensors.iter().filter(|w| named(&w.name)).collect();
                let listed = catalog
                    .entries
                    .iter()
                    .filter(|e| e.name == entry.name)
                    .count();
                if let ([w], 1) = (matches.as_slice(), listed) {
                    assert!(
                        same(&w.tensor, &t),
                        "`{}` differs between readers",
                        entry.name
                    );
                }
            }
        }
    }
    let page = list_like_the_page(&[(name.to_string(), data)]);
    assert_eq!(page.entries, catalog.entries);
    assert_eq!(page.load_errors, catalog.load_errors);
}

/// The kinds of file the `native` fuzz target writes its input as (its first byte picks one).
pub const NATIVE_KINDS: [&str; 4] = ["fuzz.safetensors", "fuzz.npy", "fuzz.gguf", "fuzz.pt"];

/// The `native` fuzz target's input: its first byte picks the kind of file ([`NATIVE_KINDS`]),
/// the rest is the file, checked by [`check_native`].
#[cfg(not(target_arch = "wasm32"))]
pub fn check_native_input(input: &[u8]) {
    if let Some((&kind, data)) = input.split_first() {
        check_native(NATIVE_KINDS[kind as usize % NATIVE_KINDS.len()], data);
    }
}

/// The native reader ([`super::native::Checkpoint`]: ranges read, long plain ones mapped a
/// window at a time) on `data` written as the file `name` in a folder of its own: it lists what
/// the in-memory catalogue lists, and every entry reads to the same values (or fails alike)
/// whole, in windows of a few bytes (the windowed read of long ranges) and from memory.
#[cfg(not(target_arch = "wasm32"))]
pub fn check_native(name: &str, data: &[u8]) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static FOLDERS: AtomicUsize = AtomicUsize::new(0);
    let folder = std::env::temp_dir().join(format!(
        "quantscope-native-check-{}-{}",
        std::process::id(),
        FOLDERS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let path = folder.join(name);
    std::fs::write(&path, data).expect("the input written");
    let checkpoint = super::native::Checkpoint::open(std::slice::from_ref(&path));
    let in_memory = assemble(vec![list_in_memory(name, data)]);
    assert_eq!(
        checkpoint.catalog.entries.len(),
        in_memory.entries.len(),
        "the native and in-memory listings differ"
    );
    for (entry, listed) in checkpoint.catalog.entries.iter().zip(&in_memory.entries) {
        assert_eq!(entry.name, listed.name);
        assert_eq!(entry.shape, listed.shape);
        let whole = checkpoint.read(entry);
        let windowed = checkpoint.read_in_windows(entry, 7);
        match (&whole, &windowed) {
            (Ok(a), Ok(b)) => assert!(same(a, b), "`{}`: the windowed read differs", entry.name),
            (Err(_), Err(_)) => {}
            _ => panic!(
                "`{}`: read whole {:?}, in windows {:?}",
                entry.name,
                whole.as_ref().map(|t| t.data.len()),
                windowed.as_ref().map(|t| t.data.len())
            ),
        }
        if let (Ok(a), None) = (&whole, &listed.problem) {
            let bytes = data
                .get(listed.range.start as usize..listed.range.end as usize)
                .unwrap_or_default();
            if let Ok(b) = decode_entry(listed, bytes) {
                assert!(
                    same(a, &b),
                    "`{}`: native and in-memory values differ",
                    entry.name
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&folder);
}

fn same(a: &Tensor, b: &Tensor) -> bool {
    a.shape == b.shape
        && a.dtype == b.dtype
        && a.data.len() == b.data.len()
        && a.data
            .iter()
            .zip(&b.data)
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// A small valid shard: `a` (F32, shape `[2]`) and `b` (BF16, shape `[2]`).
fn shard() -> Vec<u8> {
    let header = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}}"#;
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&[0, 0, 128, 63, 0, 0, 0, 192, 128, 63, 0, 64]);
    out
}

/// Check the index reader on `data` as `model.safetensors.index.json`, next to one real shard:
/// the parser never panics, every tensor the index names is listed (read from the shard or
/// with a problem), and the page's builder lists the same catalogue.
pub fn check_index(data: &[u8]) {
    let parsed = super::index::parse(data);
    let shard = shard();
    let files = [
        ("ckpt/model.safetensors.index.json".to_string(), data),
        (
            "ckpt/model-00001-of-00002.safetensors".to_string(),
            shard.as_slice(),
        ),
    ];
    let catalog = assemble(
        files
            .iter()
            .map(|(name, bytes)| list_in_memory(name, bytes))
            .collect(),
    );
    if let Ok(index) = &parsed {
        for (tensor, _) in &index.weight_map {
            assert!(
                catalog.entries.iter().any(|e| &e.name == tensor),
                "`{tensor}` of the index is not listed"
            );
        }
    }
    let page = list_like_the_page(&files);
    assert_eq!(page.entries, catalog.entries);
}

/// List the in-memory file `name` the native way; it must never ask for bytes.
fn list_in_memory(name: &str, bytes: &[u8]) -> (CatalogFile, FileListing) {
    let listing = list_file(name, &InMemory(bytes))
        .unwrap_or_else(|r| panic!("an in-memory file was asked for bytes {r:?}"));
    let file = CatalogFile {
        name: name.to_string(),
        len: bytes.len() as u64,
        kind: None,
    };
    (file, listing)
}

/// List `files` the page's way: the builder is fed only the ranges it asks for, each a
/// non-empty range inside its file, in at most 100 rounds.
fn list_like_the_page(files: &[(String, &[u8])]) -> Catalog {
    let mut builder = CatalogBuilder::new(files.iter().map(|(n, b)| (n.clone(), b.len() as u64)));
    let mut rounds = 0;
    loop {
        match builder.step() {
            Step::Ready(c) => return c,
            Step::Need(requests) => {
                rounds += 1;
                assert!(rounds <= 100, "the builder keeps asking: {requests:?}");
                for r in requests {
                    let bytes = files[r.file].1;
                    assert!(r.start < r.end && r.end <= bytes.len() as u64, "{r:?}");
                    builder.supply(r.file, r.start, &bytes[r.start as usize..r.end as usize]);
                }
            }
        }
    }
}

/// Check the importance-matrix reader on `data`: it returns importance vectors or an error, and
/// never allocates beyond what the file holds.
pub fn check_imatrix(data: &[u8]) {
    if let Ok(im) = super::imatrix::read("fuzz.imatrix", data) {
        let total: usize = im.by_weight.values().map(Vec::len).sum();
        assert!(total <= data.len());
    }
}

/// Check the quantized layouts on `data`: a configuration (`u16` length, then that many bytes
/// of `config.json`) followed by a `.safetensors` file. Whatever the bytes, recognising the
/// layout and decoding every weight returns values of the weight's shape or an error.
pub fn check_layout(data: &[u8]) {
    let Some((head, rest)) = data.split_at_checked(2) else {
        return;
    };
    let n = usize::from(u16::from_le_bytes([head[0], head[1]])).min(rest.len());
    let (config, file) = rest.split_at(n);
    let mut configs = super::layouts::Configs::default();
    if configs.take("config.json", config).is_err() {
        return;
    }
    let catalog = assemble(vec![list_in_memory("fuzz.safetensors", file)]);
    let layout = super::layouts::weights(&catalog, &configs);
    for w in &layout.weights {
        let read = super::weights::read_weight(&catalog, w, &mut |e| {
            Ok(super::EntryBytes::Borrowed(
                file.get(e.range.start as usize..e.range.end as usize)
                    .unwrap_or_default(),
            ))
        });
        if let Ok(t) = read {
            assert_eq!(element_count(&t.shape), Some(t.data.len()), "{}", w.name);
        }
    }
}
