//! PyTorch checkpoints (`../shared/golden/torch_pickle/`, written by torch 2.15 from real MiniLM
//! tensors) read without running their pickles: every tensor `torch.load(weights_only=True)`
//! returned, by dotted path, with its shape, dtype and values bit for bit (the expected
//! `.safetensors`, and the sha256 of the contiguous little-endian bytes); views at the storage
//! offsets torch pickled, tensors of one storage in one record; the hostile files and the
//! whole pickled module refused with the global they name and nothing listed; damaged files
//! (cut, storage records of the wrong size, views out of their storage, oversized lengths,
//! unknown opcodes, compressed records) each with its own message; and the page's paths (the
//! byte-request builder, the model view's ranking and the compare view's diff) equal to the
//! native ones.
//!
//! Driven by `cases.json`: a file added there is checked without an edit here.

mod common;

use common::golden_dir;
use quantscope::checkpoint::native::Checkpoint;
use quantscope::checkpoint::torch_pickle::sample::{
    self, legacy_file, state_dict, zip_checkpoint, zip_file, Pickle, SampleStorage, SampleTensor,
};
use quantscope::checkpoint::{
    assemble, contiguous_bytes, decode_entry, list_file, Catalog, CatalogBuilder, CatalogFile,
    CheckpointKind, Entry, InMemory, Step,
};
use quantscope::tensor::{read_tensors, Tensor};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

fn dir() -> PathBuf {
    golden_dir().join("torch_pickle")
}

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(dir().join("cases.json")).expect("torch_pickle/cases.json");
    let v: Value = serde_json::from_str(&text).unwrap();
    v["files"].as_array().unwrap().clone()
}

fn case(file: &str) -> Value {
    cases()
        .into_iter()
        .find(|c| c["file"] == format!("files/{file}"))
        .unwrap_or_else(|| panic!("no case {file}"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.data.iter().map(|v| v.to_bits()).collect()
}

/// List `bytes` as the file `name`, in memory.
fn catalog_of(name: &str, bytes: &[u8]) -> Catalog {
    let listing = list_file(name, &InMemory(bytes)).expect("an in-memory file has every byte");
    let file = CatalogFile {
        name: name.into(),
        len: bytes.len() as u64,
        kind: None,
    };
    assemble(vec![(file, listing)])
}

fn entry<'a>(c: &'a Catalog, name: &str) -> &'a Entry {
    c.entries
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry `{name}` among {:?}", names(c)))
}

fn names(c: &Catalog) -> Vec<&str> {
    c.entries.iter().map(|e| e.name.as_str()).collect()
}

fn problem<'a>(c: &'a Catalog, name: &str) -> &'a str {
    entry(c, name)
        .problem
        .as_deref()
        .unwrap_or_else(|| panic!("`{name}` has no problem"))
}

fn load_error(c: &Catalog) -> &str {
    assert!(c.entries.is_empty(), "entries listed: {:?}", names(c));
    assert_eq!(c.load_errors.len(), 1, "{:?}", c.load_errors);
    &c.load_errors[0].error
}

fn read(c: &Catalog, bytes: &[u8], name: &str) -> Tensor {
    let e = entry(c, name);
    decode_entry(e, &bytes[e.range.start as usize..e.range.end as usize]).unwrap()
}

/// The golden files `torch.load(weights_only=True)` loaded.
fn loaded_cases() -> Vec<Value> {
    cases()
        .into_iter()
        .filter(|c| c["torch_load_weights_only"]["result"] == "loaded")
        .collect()
}

fn path_of(case: &Value) -> PathBuf {
    dir().join(case["file"].as_str().unwrap())
}

/// Every tensor of every loaded file: names in torch's order, shapes, dtypes, values bit for
/// bit against the expected safetensors, and the sha256 of the contiguous bytes.
#[test]
fn every_loaded_file_reads_to_its_expected_tensors() {
    let mut files = 0;
    let mut tensors = 0;
    let mut empty = 0;
    for case in loaded_cases() {
        let path = path_of(&case);
        let file = case["file"].as_str().unwrap();
        let ck = Checkpoint::open(std::slice::from_ref(&path));
        assert!(
            ck.catalog.load_errors.is_empty(),
            "{file}: {:?}",
            ck.catalog.load_errors
        );
        assert_eq!(
            ck.catalog.files[0].kind,
            Some(CheckpointKind::Torch),
            "{file}"
        );
        let expected_bytes = std::fs::read(dir().join(case["expected"].as_str().unwrap())).unwrap();
        let expected = read_tensors(&expected_bytes, "expected.safetensors").unwrap();
        let wanted: Vec<&str> = case["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names(&ck.catalog), wanted, "{file}: names and order");
        let mut sorted: Vec<&str> = expected.iter().map(|t| t.name.as_str()).collect();
        sorted.sort_unstable();
        let mut ours = wanted.clone();
        ours.sort_unstable();
        assert_eq!(ours, sorted, "{file}: the expected safetensors' names");
        for t in case["tensors"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            let e = entry(&ck.catalog, name);
            let what = format!("{file}: {name}");
            assert_eq!(e.shape, usizes(&t["shape"]), "{what}");
            assert_eq!(e.dtype.name(), t["dtype"].as_str().unwrap(), "{what}");
            let want = &expected.iter().find(|x| x.name == name).unwrap().tensor;
            if t["numel"].as_u64() == Some(0) {
                assert!(
                    e.problem.as_deref().unwrap().contains("zero-element"),
                    "{what}: {:?}",
                    e.problem
                );
                assert!(want.data.is_empty(), "{what}");
                empty += 1;
                continue;
            }
            assert_eq!(e.problem, None, "{what}");
            let got = ck.read(e).unwrap();
            assert_eq!(got.shape, want.shape, "{what}");
            assert_eq!(got.dtype, want.dtype, "{what}");
            assert!(bits(&got) == bits(want), "{what}: values differ");
            let stored = ck.bytes(e).unwrap();
            let contiguous = contiguous_bytes(e, &stored).unwrap();
            assert_eq!(
                sha256_hex(&contiguous),
                t["sha256"].as_str().unwrap(),
                "{what}: sha256"
            );
            tensors += 1;
        }
        files += 1;
    }
    eprintln!("torch_pickle: {files} files, {tensors} tensors bit-exact, {empty} empty tensors listed as such");
    assert_eq!(files, 10);
    assert_eq!(tensors, 131);
}

/// Each view starts where torch pickled it: storage offset × itemsize into its storage, which
/// is the `data/<key>` record of a zip (so tensors of one storage share one record, nothing
/// copied) or the storage's place after its count field in a legacy file.
#[test]
fn views_lie_in_their_storage_records() {
    let mut checked = 0;
    for case in loaded_cases() {
        let file = case["file"].as_str().unwrap();
        let ck = Checkpoint::open(&[path_of(&case)]);
        let starts: Vec<(String, u64, u64)> = if case["format"] == "zip" {
            let root = case["archive_root"].as_str().unwrap();
            case["zip_members"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| {
                    let name = m["name"].as_str().unwrap();
                    let key = name.strip_prefix(&format!("{root}/data/"))?;
                    Some((
                        key.to_string(),
                        m["data_offset"].as_u64().unwrap(),
                        m["size"].as_u64().unwrap(),
                    ))
                })
                .collect()
        } else {
            case["legacy_storages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    (
                        s["key"].as_str().unwrap().to_string(),
                        s["data_offset"].as_u64().unwrap(),
                        s["nbytes"].as_u64().unwrap(),
                    )
                })
                .collect()
        };
        for t in case["pickle_view"]["tensors"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            let e = entry(&ck.catalog, name);
            if e.elements == 0 {
                continue;
            }
            let key = t["storage_key"].as_str().unwrap();
            let (_, start, size) = starts.iter().find(|(k, _, _)| k == key).unwrap();
            let item = e.range.end - e.range.start;
            let itemsize = match e.dtype.name() {
                "float32" | "int32" => 4,
                "float16" | "bfloat16" => 2,
                "int64" => 8,
                _ => 1,
            };
            let offset = t["storage_offset"].as_u64().unwrap();
            assert_eq!(e.range.start, start + offset * itemsize, "{file}: {name}");
            assert!(e.range.end <= start + size, "{file}: {name} ({item} bytes)");
            checked += 1;
        }
        for group in case["shared_storage_groups"].as_array().unwrap() {
            let members: Vec<&Entry> = group
                .as_array()
                .unwrap()
                .iter()
                .map(|n| entry(&ck.catalog, n.as_str().unwrap()))
                .filter(|e| e.elements > 0)
                .collect();
            let record = |e: &Entry| {
                starts
                    .iter()
                    .position(|(_, s, n)| e.range.start >= *s && e.range.end <= s + n)
            };
            let Some(&one) = members.first() else {
                continue;
            };
            let first = record(one);
            assert!(first.is_some());
            assert!(
                members.iter().all(|e| record(e) == first),
                "{file}: {group}"
            );
        }
    }
    assert_eq!(checked, 131);
}

/// `shared_views.pt`: contiguous slices are plain ranges, the others (transpose, column slice,
/// every other row, stride-0 expand) strided views of the same record.
#[test]
fn shared_views_are_plain_or_strided() {
    let ck = Checkpoint::open(&[dir().join("files/shared_views.pt")]);
    let plain = |n: &str| {
        matches!(
            entry(&ck.catalog, n).storage,
            quantscope::checkpoint::Storage::Plain { .. }
        )
    };
    for n in [
        "attn.qkv.weight",
        "attn.q.weight",
        "attn.k.weight",
        "attn.v.weight",
        "attn.qkv.bias",
        "attn.k.bias",
        "norm.weight",
    ] {
        assert!(plain(n), "{n}");
    }
    for n in [
        "attn.q.weight_t",
        "attn.qkv.weight_cols_128_192",
        "attn.qkv.weight_every_other_row",
        "norm.weight_expanded_3x",
    ] {
        assert!(!plain(n), "{n}");
    }
    // The expanded LayerNorm weight reads its 384 stored values three times.
    let expanded = entry(&ck.catalog, "norm.weight_expanded_3x");
    assert_eq!(expanded.range.end - expanded.range.start, 384 * 4);
    let w = ck.read(entry(&ck.catalog, "norm.weight")).unwrap();
    let x = ck.read(expanded).unwrap();
    assert_eq!(x.data, [w.data.clone(), w.data.clone(), w.data].concat());
    // Bits per weight of a view are its dtype's, not its range's.
    let layout = ck.layout();
    let weight = layout
        .weights
        .iter()
        .find(|w| w.name == "norm.weight_expanded_3x")
        .unwrap();
    assert_eq!(weight.bits_per_weight, 32.0);
}

/// The legacy file reads exactly as its zip twin.
#[test]
fn the_legacy_file_equals_the_zip_file() {
    let zip = Checkpoint::open(&[dir().join("files/pytorch_model.bin")]);
    let legacy = Checkpoint::open(&[dir().join("files/pytorch_model_legacy.bin")]);
    assert_eq!(names(&zip.catalog), names(&legacy.catalog));
    for (a, b) in zip.catalog.entries.iter().zip(&legacy.catalog.entries) {
        assert_eq!(
            bits(&zip.read(a).unwrap()),
            bits(&legacy.read(b).unwrap()),
            "{}",
            a.name
        );
    }
}

/// The hostile files and the whole pickled module are refused with the global they name, and
/// nothing of them is listed (the zip one holds a valid tensor before its payload).
#[test]
fn hostile_files_and_whole_modules_are_refused() {
    let refused = |file: &str| {
        let ck = Checkpoint::open(&[dir().join("files").join(file)]);
        load_error(&ck.catalog).to_string()
    };
    assert_eq!(
        refused("hostile_os_system.pt"),
        "refused: the pickle calls os.system, which is not on the allow-list (no code is executed)"
    );
    assert_eq!(
        refused("hostile_zip_popen.pt"),
        "refused: the pickle calls subprocess.Popen, which is not on the allow-list (no code is executed)"
    );
    let e = refused("whole_module.pt");
    assert!(
        e.starts_with(
            "refused: the pickle calls __main__.MiniLMHead, which is not on the allow-list"
        ) && e.contains("state_dict()"),
        "{e}"
    );
    // What cases.json says torch does with them.
    for (file, global) in [
        ("hostile_os_system.pt", "os.system"),
        ("hostile_zip_popen.pt", "subprocess.Popen"),
        ("whole_module.pt", "__main__.MiniLMHead"),
    ] {
        let c = case(file);
        assert_eq!(c["torch_load_weights_only"]["result"], "error");
        assert!(c["torch_load_weights_only"]["error_key_line"]
            .as_str()
            .unwrap()
            .contains(global));
        assert!(refused(file).contains(global));
    }
}

/// Cut at several points: a zip loses its directory, a legacy file its pickles or its
/// storages (then only the storages past the cut are refused, each saying so).
#[test]
fn truncated_files_say_where_they_stop() {
    let zip = std::fs::read(dir().join("files/pytorch_model.bin")).unwrap();
    for cut in [30, 2000, zip.len() / 2] {
        let c = catalog_of("pytorch_model.bin", &zip[..cut]);
        assert_eq!(
            load_error(&c),
            "not a valid zip archive: no end-of-central-directory record (truncated archive?)",
            "{cut}"
        );
    }
    let cut = zip.len() - 5;
    let c = catalog_of("pytorch_model.bin", &zip[..cut]);
    assert_eq!(
        load_error(&c),
        format!(
            "truncated: the end-of-central-directory record needs bytes {}..{} but the file has {cut} bytes",
            cut - 1,
            cut + 3
        )
    );
    // Nothing left: by its name a PyTorch checkpoint, without its first pickle.
    let c = catalog_of("pytorch_model.bin", &[]);
    assert_eq!(
        load_error(&c),
        "truncated file: it ends at byte 0, where the first pickle should start"
    );
    let legacy = std::fs::read(dir().join("files/pytorch_model_legacy.bin")).unwrap();
    // In the magic number's LONG1, in the object pickle, in the storage keys.
    for (cut, start) in [
        (10, "truncated file or oversized length: LONG1 at byte 2 of the file declares 10 bytes but only 6 remain in the file"),
        (15, "truncated file: it ends at byte 15, where the protocol version pickle should start"),
        (2000, "truncated"),
        (3000, "truncated"),
    ] {
        let c = catalog_of("pytorch_model_legacy.bin", &legacy[..cut]);
        let e = load_error(&c);
        assert!(e.starts_with(start), "{cut}: {e}");
    }
    // In the data of the third storage: the storages before read, the third is cut, the
    // fourth is past the end.
    let case = case("pytorch_model_legacy.bin");
    let storages = case["legacy_storages"].as_array().unwrap();
    let tensor_of = |i: usize| {
        case["pickle_view"]["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["storage_key"] == storages[i]["key"])
            .unwrap()["name"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let third = &storages[2];
    let start = third["data_offset"].as_u64().unwrap();
    let cut = start as usize + 1000;
    let bytes = &legacy[..cut];
    let c = catalog_of("pytorch_model_legacy.bin", bytes);
    assert!(c.load_errors.is_empty());
    for (i, storage) in storages.iter().enumerate().take(2) {
        let t = read(&c, bytes, &tensor_of(i));
        assert_eq!(t.data.len() as u64, storage["count"].as_u64().unwrap());
    }
    assert_eq!(
        problem(&c, &tensor_of(2)),
        format!(
            "truncated file: it ends at byte {cut}, 1000 bytes into storage `{}` (bytes {start}..{})",
            third["key"].as_str().unwrap(),
            start + third["nbytes"].as_u64().unwrap()
        )
    );
    assert!(
        problem(&c, &tensor_of(3)).starts_with(&format!(
            "truncated file: it ends at byte {cut}, before storage `{}`",
            storages[3]["key"].as_str().unwrap()
        )),
        "{}",
        problem(&c, &tensor_of(3))
    );
}

/// A small checkpoint of `tensors` on `storages`, zip or legacy.
fn file_of(tensors: &[SampleTensor], storages: &[SampleStorage], legacy: bool) -> Vec<u8> {
    let pickle = state_dict(tensors, storages, legacy);
    if legacy {
        legacy_file(&pickle, storages)
    } else {
        zip_checkpoint("sample", pickle, storages)
    }
}

fn floats(n: usize) -> SampleStorage {
    SampleStorage {
        class: "FloatStorage",
        key: "0".into(),
        numel: n as u64,
        data: (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect(),
    }
}

fn view(name: &str, offset: u64, size: &[u64], stride: &[u64]) -> SampleTensor {
    SampleTensor {
        name: name.into(),
        storage: 0,
        offset,
        size: size.to_vec(),
        stride: stride.to_vec(),
    }
}

/// A storage record shorter (or longer) than its persistent id's numel × itemsize, in both
/// formats, and a view that reaches out of its storage: the tensors concerned say why, the
/// others read.
#[test]
fn storage_records_and_views_are_checked() {
    let ok = view("ok", 0, &[2, 3], &[3, 1]);
    // Zip: the record holds 20 floats, the id says 24.
    let mut short = floats(24);
    short.data.truncate(80);
    let pickle = state_dict(std::slice::from_ref(&ok), &[floats(24)], false);
    let c = catalog_of("s.pt", &zip_checkpoint("sample", pickle, &[short]));
    assert_eq!(
        problem(&c, "ok"),
        "storage record `sample/data/0` holds 80 bytes but its persistent id declares 24 × 4 = 96 bytes (24 elements of torch.FloatStorage)"
    );
    // Legacy: the count field says 20, the id 24.
    let mut short = floats(20);
    short.key = "140".into();
    let mut full = floats(24);
    full.key = "140".into();
    let pickle = state_dict(std::slice::from_ref(&ok), &[full], true);
    let file = legacy_file(&pickle, &[short]);
    let c = catalog_of("s.bin", &file);
    assert!(
        problem(&c, "ok").starts_with("storage `140`: its record's element count (byte ")
            && problem(&c, "ok").ends_with(") says 20, its persistent id 24 (torch.FloatStorage)"),
        "{}",
        problem(&c, "ok")
    );
    // A view past the end of its storage, in both formats; the other tensor reads.
    for legacy in [false, true] {
        let tensors = [
            ok.clone(),
            view("out", 20, &[2, 3], &[3, 1]),
            view("neg", 0, &[2], &[1]),
        ];
        let file = file_of(&tensors, &[floats(24)], legacy);
        let name = if legacy { "s.bin" } else { "s.pt" };
        let c = catalog_of(name, &file);
        assert_eq!(
            problem(&c, "out"),
            "view out of its storage: storage offset 20 + Σ(size−1)·stride 5 reaches element 25, but storage `0` holds 24 float32 elements"
        );
        assert_eq!(read(&c, &file, "ok").data, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(entry(&c, "neg").problem, None);
    }
    // A negative storage offset or stride is a malformed view.
    for (offset, stride, what) in [(-1, 1, "storage offset -1"), (0, -2, "stride [-2]")] {
        let mut p = Pickle::new();
        p.global("torch._utils", "_rebuild_tensor_v2");
        p.raw(b"((");
        p.str("storage").global("torch", "FloatStorage");
        p.str("0").str("cpu").int(24);
        p.raw(b"tQ");
        p.int(offset).int_tuple(&[2]);
        p.int(stride).raw(&[0x85]).raw(&[0x89]);
        p.global("collections", "OrderedDict").raw(b")R");
        p.raw(b"tR");
        let c = catalog_of("t.pt", &zip_checkpoint("t", p.finish(), &[floats(24)]));
        let e = problem(&c, "t");
        assert!(
            e.starts_with("malformed view: a negative stride") && e.contains(what),
            "{e}"
        );
    }
}

/// A `data.pkl` of `pickle` in a zip checkpoint without storages, listed.
fn with_pickle(pickle: Vec<u8>) -> Catalog {
    catalog_of("x.pt", &zip_checkpoint("x", pickle, &[]))
}

#[test]
fn malformed_pickles_each_say_what_is_wrong() {
    // An oversized length: BINUNICODE of 2^31 - 1 bytes in a 10-byte data.pkl.
    let mut p = Pickle::new();
    p.raw(b"X\xff\xff\xff\x7fab");
    assert_eq!(
        load_error(&with_pickle(p.finish())),
        "oversized length: BINUNICODE at byte 2 of data.pkl declares 2147483647 bytes but only 3 remain in data.pkl"
    );
    // Opcodes torch's weights_only unpickler does not run, and bytes that are no opcode.
    let mut p = Pickle::new();
    p.raw(&[0x95, 0, 0, 0, 0, 0, 0, 0, 0, b'N']);
    assert_eq!(
        load_error(&with_pickle(p.finish())),
        "unsupported pickle opcode 0x95 (FRAME) at byte 2 of data.pkl"
    );
    let mut p = Pickle::new();
    p.raw(b"N");
    p.raw(&[0xfe]);
    assert_eq!(
        load_error(&with_pickle(p.finish())),
        "unsupported pickle opcode 0xfe (not a pickle opcode) at byte 3 of data.pkl"
    );
    for (op, name) in [
        (b'i', "INST"),
        (b'o', "OBJ"),
        (0x93, "STACK_GLOBAL"),
        (b'0', "POP"),
        (0x8c, "SHORT_BINUNICODE"),
    ] {
        let mut p = Pickle::new();
        p.raw(&[op]);
        let e = load_error(&with_pickle(p.finish())).to_string();
        assert_eq!(
            e,
            format!("unsupported pickle opcode {op:#04x} ({name}) at byte 2 of data.pkl")
        );
    }
    // The pickle ends before STOP.
    let c = with_pickle(vec![0x80, 2, b'N']);
    assert_eq!(
        load_error(&c),
        "truncated pickle: data.pkl ends at byte 3 of data.pkl before the pickle's STOP opcode"
    );
    // Nesting past the walk's depth, and a list inside itself: a clear error, no crash.
    let mut p = Pickle::new();
    p.raw(b")");
    for _ in 0..100_000 {
        p.raw(&[0x85]);
    }
    assert!(load_error(&with_pickle(p.finish())).contains("nest deeper than 256 levels"));
    let mut p = Pickle::new();
    p.raw(b"]");
    let i = p.put();
    p.get(i);
    p.raw(b"a");
    assert!(load_error(&with_pickle(p.finish())).contains("nest deeper"));
    // Python 2 names are mapped before the allow-list: `__builtin__.set` is `builtins.set`,
    // `commands.check_call` is `subprocess.check_call`.
    let mut p = Pickle::new();
    p.global("__builtin__", "set")
        .raw(b"]")
        .raw(&[0x85])
        .raw(b"R");
    let c = with_pickle(p.finish());
    assert!(c.load_errors.is_empty() && c.entries.is_empty(), "{c:?}");
    let mut p = Pickle::new();
    p.global("commands", "check_call")
        .str("x")
        .raw(&[0x85])
        .raw(b"R");
    assert_eq!(
        load_error(&with_pickle(p.finish())),
        "refused: the pickle calls subprocess.check_call, which is not on the allow-list (no code is executed)"
    );
    // What a plain `pickle.dumps(tensor)` writes is refused too.
    let mut p = Pickle::new();
    p.global("torch.storage", "_load_from_bytes");
    assert!(load_error(&with_pickle(p.finish())).contains("torch.storage._load_from_bytes"));
    // A persistent id that is not a storage.
    let mut p = Pickle::new();
    p.str("module").raw(&[0x85]).raw(b"Q");
    assert!(load_error(&with_pickle(p.finish())).contains("only storages are loaded"));
}

/// Compressed records: `data.pkl` refuses the file, a storage record its tensors.
#[test]
fn compressed_records_are_refused() {
    let (tensors, storages) = sample::sample_parts(false);
    let pickle = state_dict(&tensors, &storages, false);
    let names: Vec<String> = storages.iter().map(|s| format!("data/{}", s.key)).collect();
    let mut members: Vec<(&str, Vec<u8>)> = vec![("data.pkl", pickle)];
    for (s, n) in storages.iter().zip(&names) {
        members.push((n.as_str(), s.data.clone()));
    }
    let c = catalog_of("s.pt", &zip_file("sample", &members, &["data.pkl"]));
    assert_eq!(
        load_error(&c),
        "`sample/data.pkl` is compressed (zip method 8); PyTorch stores its records uncompressed"
    );
    let bytes = zip_file("sample", &members, &["0"]);
    let c = catalog_of("s.pt", &bytes);
    assert_eq!(
        problem(&c, "w"),
        "its storage record `sample/data/0` is compressed (zip method 8): only stored records are read, as PyTorch writes them"
    );
    assert_eq!(
        read(&c, &bytes, "b").data,
        [1.5, -2.25, 0.0, 8.0, -0.125, 3.0]
    );
}

/// A zip holding `*/data.pkl` is a PyTorch checkpoint whatever its name, an `.npz` stays an
/// `.npz`; the root folder is found, not assumed to be `archive/`; a tensor saved alone takes
/// the file's name.
#[test]
fn recognised_by_content() {
    let bytes = sample::zip_sample();
    for name in ["weights.npz", "model", "ckpt.pt", "m.bin"] {
        let c = catalog_of(name, &bytes);
        assert!(c.load_errors.is_empty(), "{name}");
        assert_eq!(c.entries.len(), 11, "{name}");
    }
    let legacy = sample::legacy_sample();
    let c = catalog_of("noext", &legacy);
    assert_eq!(c.entries.len(), 11);
    // torch.save(tensor): the root is the tensor.
    let (_, storages) = sample::sample_parts(false);
    let mut p = Pickle::new();
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.raw(b"((");
    p.str("storage");
    p.global("torch", "FloatStorage");
    p.str("0").str("cpu").int(24);
    p.raw(b"tQ");
    p.int(0).int_tuple(&[24]).int_tuple(&[1]).raw(&[0x89]);
    p.global("collections", "OrderedDict").raw(b")R");
    p.raw(b"tR");
    let bytes = zip_checkpoint("archive", p.finish(), &storages[..1]);
    let c = catalog_of("some/dir/activation.pt", &bytes);
    assert_eq!(names(&c), ["activation"]);
    assert_eq!(read(&c, &bytes, "activation").data.len(), 24);
}

/// Run a builder to completion as the page does, answering its requests from `file`: the
/// catalogue, the bytes asked for and the rounds.
fn build_like_the_page(name: &str, file: &[u8]) -> (Catalog, u64, usize) {
    let mut builder = CatalogBuilder::new([(name.to_string(), file.len() as u64)]);
    let mut rounds = 0;
    let mut fetched = 0;
    loop {
        match builder.step() {
            Step::Need(requests) => {
                rounds += 1;
                assert!(rounds < 16, "the builder keeps asking: {requests:?}");
                for r in requests {
                    assert!(r.start < r.end && r.end <= file.len() as u64, "{r:?}");
                    fetched += r.end - r.start;
                    builder.supply(r.file, r.start, &file[r.start as usize..r.end as usize]);
                }
            }
            Step::Ready(catalog) => return (catalog, fetched, rounds),
        }
    }
}

/// The page's builder, fed only the byte ranges it asks for, lists every golden file exactly as
/// the native listing does, without reading any storage's data, and each tensor read from its
/// range equals the native read.
#[test]
fn the_page_builder_lists_what_the_native_listing_lists() {
    for case in cases() {
        let path = path_of(&case);
        let file = std::fs::read(&path).unwrap();
        let name = path.to_string_lossy().into_owned();
        let native = Checkpoint::open(std::slice::from_ref(&path));
        let (page, fetched, rounds) = build_like_the_page(&name, &file);
        assert_eq!(page.entries, native.catalog.entries, "{name}");
        assert_eq!(page.load_errors, native.catalog.load_errors, "{name}");
        assert_eq!(page.files[0].kind, native.catalog.files[0].kind, "{name}");
        let data: u64 = page
            .entries
            .iter()
            .map(|e| e.range.end - e.range.start)
            .max()
            .unwrap_or(0);
        if file.len() > 1 << 20 {
            assert!(
                fetched < 256 << 10,
                "{name}: the listing read {fetched} bytes in {rounds} rounds (largest tensor {data})"
            );
        }
        for e in page.entries.iter().filter(|e| e.problem.is_none()) {
            let page_tensor =
                decode_entry(e, &file[e.range.start as usize..e.range.end as usize]).unwrap();
            assert_eq!(
                bits(&page_tensor),
                bits(&native.read(e).unwrap()),
                "{name}: {}",
                e.name
            );
        }
    }
}

/// The model view's ranking (a worker's `CheckpointRanking` fed `File.slice` ranges) equals the
/// native parallel ranking on every loaded file.
#[test]
fn the_model_views_ranking_equals_the_native_one() {
    let methods: Vec<_> = quantscope::model::default_methods()
        .into_iter()
        .filter(|m| m.id == "torch.MinMaxObserver" || m.id == "fp8_e4m3")
        .collect();
    assert_eq!(methods.len(), 2);
    for case in loaded_cases() {
        let path = path_of(&case);
        let ck = Checkpoint::open(std::slice::from_ref(&path));
        let native = quantscope::model::rank_checkpoint(&ck, &methods, 2, &|_, _| {}).unwrap();
        let file = std::fs::read(&path).unwrap();
        let name = ck.catalog.files[0].name.clone();
        let mut s = quantscope::model::CheckpointRanking::new(
            vec![(name, file.len() as u64)],
            methods.clone(),
        );
        loop {
            let requests = s.listing_requests();
            if requests.is_empty() {
                break;
            }
            for r in requests {
                s.supply(r.file, r.start, &file[r.start as usize..r.end as usize]);
            }
        }
        for i in 0..s.catalog().unwrap().entries.len() {
            match s.tensor_request(i) {
                Some(r) => s.rank(i, &file[r.start as usize..r.end as usize]).unwrap(),
                None => s.rank(i, &[]).unwrap(),
            };
        }
        assert_eq!(s.report(), native, "{}", case["file"]);
    }
}

/// The compare view's driver (`DiffSession`) reports what the native diff reports: the float16
/// state dict against the float32 one.
#[test]
fn the_compare_views_diff_equals_the_native_one() {
    let original = [dir().join("files/pytorch_model.bin")];
    let quantized = [dir().join("files/pytorch_model_fp16.bin")];
    let native = quantscope::diff::native::diff_paths(&original, &quantized, None).unwrap();
    assert_eq!(native.pairs.len(), 24);
    assert!(
        native.pairs.iter().all(|p| p.metrics.is_some()),
        "{:?}",
        native.pairs
    );
    let mut page = common::page_diff::page_diff(&original, &quantized);
    page.files = native.files.clone();
    assert_eq!(
        serde_json::to_value(&page).unwrap(),
        serde_json::to_value(&native).unwrap()
    );
}

/// A Hugging Face folder with the same weights as `model.safetensors` and `pytorch_model.bin`
/// lists them once, from the safetensors; without it, from the PyTorch file; other `.bin` files
/// of a folder are not PyTorch weights.
#[test]
fn a_folder_lists_safetensors_before_pytorch_files() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("pytorch_model.bin");
    std::fs::copy(dir().join("files/pytorch_model.bin"), &bin).unwrap();
    // `.bin` files of a folder other than Hugging Face's PyTorch weights are not read.
    std::fs::write(
        tmp.path().join("training_args.bin"),
        b"\x80\x02cos\nsystem\n.",
    )
    .unwrap();
    std::fs::write(tmp.path().join("ggml-model-q4_0.bin"), b"lmgg").unwrap();
    let alone = Checkpoint::open(&[tmp.path().to_path_buf()]);
    assert_eq!(alone.catalog.entries.len(), 24);
    assert!(
        alone.catalog.load_errors.is_empty(),
        "{:?}",
        alone.catalog.load_errors
    );
    // Given on its own, any `.bin` is read (and this one refused).
    let args = Checkpoint::open(&[tmp.path().join("training_args.bin")]);
    assert!(load_error(&args.catalog).contains("os.system"));
    std::fs::copy(
        dir().join("expected/pytorch_model.bin.safetensors"),
        tmp.path().join("model.safetensors"),
    )
    .unwrap();
    let both = Checkpoint::open(&[tmp.path().to_path_buf()]);
    assert_eq!(both.catalog.entries.len(), 24);
    assert_eq!(both.catalog.files.len(), 1);
    assert!(both.catalog.files[0].name.ends_with("model.safetensors"));
    assert_eq!(
        quantscope::checkpoint::shadowed_torch_files(&[
            "m/model.safetensors",
            "m/pytorch_model.bin",
            "m/pytorch_model.bin.index.json",
            "m/sub/x.pt",
            "other.pth",
        ]),
        [false, true, true, false, false]
    );
}

/// The fuzz seeds are the sample writers' checkpoints (`QUANTSCOPE_WRITE_SEEDS=1` rewrites
/// them) and a bare hostile pickle.
#[test]
fn the_fuzz_seeds_are_the_samples() {
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/torch_pickle");
    let mut hostile = Pickle::new();
    hostile
        .global("os", "system")
        .str("true")
        .raw(&[0x85])
        .raw(b"R");
    let files = [
        ("zip.pt", sample::zip_sample()),
        ("legacy.bin", sample::legacy_sample()),
        ("hostile.pt", hostile.finish()),
    ];
    for (name, bytes) in files {
        let path = seeds.join(name);
        if std::env::var_os("QUANTSCOPE_WRITE_SEEDS").is_some() {
            std::fs::create_dir_all(&seeds).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name}");
    }
}
