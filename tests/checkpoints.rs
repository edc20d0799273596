//! The checkpoint catalogue on real and hand-made files: a sharded safetensors checkpoint with
//! its index built from the MiniLM samples, the folder of MiniLM `.npy` activation dumps, the
//! MiniLM `.npz`, a GGUF file written here from the format specification, and every malformed
//! case (each reported on its own tensor while the rest stays readable). Every tensor read
//! through the catalogue must equal what the whole-file readers return, bit for bit, natively
//! (memory-mapped) and through the I/O-free builder the page uses.
mod common;

use quantscope::checkpoint::native::Checkpoint;
use quantscope::checkpoint::{decode_entry, Catalog, CatalogBuilder, Entry, Step};
use quantscope::tensor::{encode_npy, npy_header, pick, read_tensors, Tensor};
use std::path::{Path, PathBuf};

fn samples() -> PathBuf {
    common::shared_dir().join("samples").join("minilm")
}

fn read_whole(path: &Path, member: Option<&str>) -> Tensor {
    let bytes = std::fs::read(path).unwrap();
    let tensors = read_tensors(&bytes, &path.to_string_lossy()).unwrap();
    pick(tensors, member).unwrap().tensor
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A safetensors file with `header` (JSON text) and `data`.
fn st_raw(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A safetensors file of `(name, dtype, shape, bytes)` laid out contiguously in order.
fn st_file(tensors: &[(&str, &str, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
    let mut fields = Vec::new();
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        fields.push(format!(
            "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":{shape:?},\"data_offsets\":[{},{}]}}",
            data.len(),
            data.len() + bytes.len()
        ));
        data.extend_from_slice(bytes);
    }
    st_raw(&format!("{{{}}}", fields.join(",")), &data)
}

/// Run a builder to completion, answering its requests from the files on disk, and check
/// that it asks only for ranges inside the files.
fn build_like_the_page(paths: &[PathBuf]) -> (Catalog, Vec<Vec<u8>>, usize) {
    let files: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let mut builder = CatalogBuilder::new(
        paths
            .iter()
            .zip(&files)
            .map(|(p, f)| (p.to_string_lossy().into_owned(), f.len() as u64)),
    );
    let mut rounds = 0;
    loop {
        match builder.step() {
            Step::Need(requests) => {
                rounds += 1;
                assert!(rounds < 64, "the builder keeps asking: {requests:?}");
                for r in requests {
                    let file = &files[r.file];
                    assert!(r.start < r.end && r.end <= file.len() as u64, "{r:?}");
                    builder.supply(r.file, r.start, &file[r.start as usize..r.end as usize]);
                }
            }
            Step::Ready(catalog) => return (catalog, files, rounds),
        }
    }
}

/// Bytes of `entry`'s range in `files` (the page's `File.slice`).
fn slice<'a>(files: &'a [Vec<u8>], entry: &Entry) -> &'a [u8] {
    &files[entry.file][entry.range.start as usize..entry.range.end as usize]
}

fn problem<'a>(catalog: &'a Catalog, name: &str) -> Option<&'a str> {
    catalog
        .entries
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry `{name}`"))
        .problem
        .as_deref()
}

fn assert_same(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!(a.shape, b.shape, "{what}");
    assert_eq!(a.dtype, b.dtype, "{what}");
    let bits = |t: &Tensor| t.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert!(bits(a) == bits(b), "{what}: values differ");
}

/// The MiniLM sample weights, split into two shards plus an index that also names a third
/// shard that does not exist; one shard stores a weight as BF16 and another as F16.
fn write_sharded(dir: &Path) -> Vec<(String, Tensor)> {
    let w = samples().join("weights");
    let load = |f: &str| read_whole(&w.join(f), None);
    let bf16 = |t: &Tensor| -> Vec<u8> {
        t.data
            .iter()
            .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
            .collect()
    };
    let f16 = |t: &Tensor| -> Vec<u8> {
        t.data
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect()
    };
    let rounded = |t: &Tensor, f: fn(f32) -> f32, dtype| Tensor {
        shape: t.shape.clone(),
        data: t.data.iter().map(|&v| f(v)).collect(),
        dtype,
    };
    let q = load("l0_attn_query_weight.npy");
    let k = load("l0_attn_key_weight.npy");
    let v = load("l0_attn_value_weight.npy");
    let o = load("l0_attn_output_dense_weight.npy");
    let ffn = load("l0_ffn_intermediate_dense_weight.npy");
    let emb = load("word_embeddings_first2048.npy");
    let shard1 = st_file(&[
        (
            "layer.0.q.weight",
            "F32",
            q.shape.clone(),
            f32_bytes(&q.data),
        ),
        ("layer.0.k.weight", "BF16", k.shape.clone(), bf16(&k)),
    ]);
    let shard2 = st_file(&[
        (
            "layer.0.v.weight",
            "F32",
            v.shape.clone(),
            f32_bytes(&v.data),
        ),
        (
            "layer.0.o.weight",
            "F32",
            o.shape.clone(),
            f32_bytes(&o.data),
        ),
        (
            "layer.0.ffn.weight",
            "F32",
            ffn.shape.clone(),
            f32_bytes(&ffn.data),
        ),
        ("embeddings.weight", "F16", emb.shape.clone(), f16(&emb)),
    ]);
    std::fs::write(dir.join("model-00001-of-00003.safetensors"), shard1).unwrap();
    std::fs::write(dir.join("model-00002-of-00003.safetensors"), shard2).unwrap();
    let map = [
        ("layer.0.q.weight", 1),
        ("layer.0.k.weight", 1),
        ("layer.0.v.weight", 2),
        ("layer.0.o.weight", 2),
        ("layer.0.ffn.weight", 2),
        ("embeddings.weight", 2),
        ("layer.1.q.weight", 3),
        ("layer.1.k.weight", 3),
        ("layer.0.bias.listed.but.absent", 1),
    ];
    let fields: Vec<String> = map
        .iter()
        .map(|(n, s)| format!("\"{n}\": \"model-0000{s}-of-00003.safetensors\""))
        .collect();
    std::fs::write(
        dir.join("model.safetensors.index.json"),
        format!(
            "{{\"metadata\": {{\"total_size\": 0}}, \"weight_map\": {{{}}}}}",
            fields.join(", ")
        ),
    )
    .unwrap();
    let bf = |x: f32| half::bf16::from_f32(x).to_f32();
    let hf = |x: f32| half::f16::from_f32(x).to_f32();
    use quantscope::tensor::DType;
    vec![
        ("layer.0.q.weight".into(), q),
        ("layer.0.k.weight".into(), rounded(&k, bf, DType::BF16)),
        ("layer.0.v.weight".into(), v),
        ("layer.0.o.weight".into(), o),
        ("layer.0.ffn.weight".into(), ffn),
        ("embeddings.weight".into(), rounded(&emb, hf, DType::F16)),
    ]
}

#[test]
fn sharded_index_lists_every_tensor_and_the_missing_shard() {
    let dir = tempfile::tempdir().unwrap();
    let expected = write_sharded(dir.path());
    let index = dir.path().join("model.safetensors.index.json");
    let shard1 = dir.path().join("model-00001-of-00003.safetensors");
    // The index alone, the index with a shard also given, and the folder: the same tensors.
    for paths in [
        vec![index.clone()],
        vec![shard1.clone(), index.clone()],
        vec![dir.path().to_path_buf()],
    ] {
        let ckpt = Checkpoint::open(&paths);
        let c = &ckpt.catalog;
        let names: Vec<&str> = c.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "layer.0.q.weight",
                "layer.0.k.weight",
                "layer.0.bias.listed.but.absent",
                "layer.0.v.weight",
                "layer.0.o.weight",
                "layer.0.ffn.weight",
                "embeddings.weight",
                "layer.1.k.weight",
                "layer.1.q.weight",
            ],
            "{paths:?}"
        );
        assert!(c.load_errors.is_empty(), "{:?}", c.load_errors);
        for name in ["layer.1.q.weight", "layer.1.k.weight"] {
            let p = problem(c, name).unwrap();
            assert!(
                p.contains("model-00003-of-00003.safetensors") && p.contains("missing"),
                "{p}"
            );
        }
        let p = problem(c, "layer.0.bias.listed.but.absent").unwrap();
        assert!(p.contains("does not hold it"), "{p}");
        for (name, want) in &expected {
            let e = c.entries.iter().find(|e| &e.name == name).unwrap();
            assert_eq!(e.problem, None, "{name}");
            assert_eq!(e.elements, want.len());
            assert_same(&ckpt.read(e).unwrap(), want, name);
        }
        let missing = c
            .entries
            .iter()
            .find(|e| e.name == "layer.1.q.weight")
            .unwrap();
        assert!(ckpt
            .read(missing)
            .unwrap_err()
            .to_string()
            .contains("missing"));
    }
    // The page's path: the folder's files by name, bytes supplied on request.
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let (catalog, bytes, _) = build_like_the_page(&files);
    let native = Checkpoint::open(&[dir.path().to_path_buf()]).catalog;
    assert_eq!(catalog.entries, native.entries);
    for (name, want) in &expected {
        let e = catalog.entries.iter().find(|e| &e.name == name).unwrap();
        assert_same(&decode_entry(e, slice(&bytes, e)).unwrap(), want, name);
    }
}

#[test]
fn folder_of_npy_dumps() {
    let dir = samples().join("activations");
    let ckpt = Checkpoint::open(std::slice::from_ref(&dir));
    let c = &ckpt.catalog;
    assert_eq!(c.entries.len(), 8 + 16, "{:?}", c.load_errors);
    assert!(c.load_errors.is_empty());
    // Sorted by path: the batches folder first, then the layer files.
    assert_eq!(c.entries[0].name, "l0_ffn_dense_out_b0");
    assert_eq!(c.entries[16].name, "l0_attn_dense_in");
    let gelu = c.entries.iter().find(|e| e.name == "l0_ffn_gelu").unwrap();
    assert_eq!(
        (gelu.shape.as_slice(), gelu.range.end - gelu.range.start),
        (&[560, 1536][..], 560 * 1536 * 4)
    );
    let paths: Vec<PathBuf> = c.files.iter().map(|f| PathBuf::from(&f.name)).collect();
    let (page, bytes, _) = build_like_the_page(&paths);
    for (e, p) in c.entries.iter().zip(&page.entries) {
        let want = read_whole(Path::new(c.file_name(e)), None);
        assert_same(&ckpt.read(e).unwrap(), &want, &e.name);
        assert_same(&decode_entry(p, slice(&bytes, p)).unwrap(), &want, &e.name);
    }
}

#[test]
fn npz_members_one_at_a_time() {
    let path = samples().join("minilm_whole_model.npz");
    let ckpt = Checkpoint::open(std::slice::from_ref(&path));
    let c = &ckpt.catalog;
    assert_eq!(c.entries.len(), 28);
    let whole = read_tensors(&std::fs::read(&path).unwrap(), "x.npz").unwrap();
    for (e, w) in c.entries.iter().zip(&whole) {
        assert_eq!(e.name, w.name);
        assert_same(&ckpt.read(e).unwrap(), &w.tensor, &e.name);
    }
    // A deflated archive (np.savez_compressed), a Fortran-order member and a corrupt member.
    use std::io::Write;
    let npy = |descr: &str, fortran: bool, shape: &[usize], data: &[u8]| {
        encode_npy(&npy_header(descr, fortran, shape), data)
    };
    let values: Vec<f32> = (0..6000)
        .map(|i| ((i * 7919) % 1000) as f32 / 7.0)
        .collect();
    let members = [
        (
            "big.npy",
            npy("<f4", false, &[60, 100], &f32_bytes(&values)),
        ),
        (
            "fort.npy",
            npy("<f4", true, &[2, 3], &f32_bytes(&[0., 3., 1., 4., 2., 5.])),
        ),
        (
            "be.npy",
            npy(
                ">f8",
                false,
                &[2],
                &[0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0],
            ),
        ),
        (
            "corrupt.npy",
            npy("<f4", false, &[4], &f32_bytes(&[1.0; 4])),
        ),
    ];
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in &members {
        w.start_file(*name, opts).unwrap();
        w.write_all(data).unwrap();
    }
    let mut archive = w.finish().unwrap().into_inner();
    let reference = read_tensors(&archive, "a.npz").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("acts.npz");
    std::fs::write(&file, &archive).unwrap();
    let (page, bytes, _) = build_like_the_page(std::slice::from_ref(&file));
    let ckpt = Checkpoint::open(std::slice::from_ref(&file));
    assert_eq!(page.entries, ckpt.catalog.entries);
    for (e, w) in ckpt.catalog.entries.iter().zip(&reference) {
        assert_same(&ckpt.read(e).unwrap(), &w.tensor, &e.name);
        assert_same(
            &decode_entry(e, slice(&bytes, e)).unwrap(),
            &w.tensor,
            &e.name,
        );
    }
    assert_eq!(reference[1].tensor.data, [0., 1., 2., 3., 4., 5.]);
    // Flip a bit of the last member's compressed data: its CRC-32 fails, the others still read.
    let last = ckpt.catalog.entries[3].clone();
    let at = last.range.start as usize + 5;
    archive[at] ^= 0x01;
    std::fs::write(&file, &archive).unwrap();
    let ckpt = Checkpoint::open(std::slice::from_ref(&file));
    let err = ckpt.read(&ckpt.catalog.entries[3]).unwrap_err().to_string();
    assert!(err.contains("corrupt"), "{err}");
    assert!(ckpt.read(&ckpt.catalog.entries[0]).is_ok());
}

/// A GGUF file written from the specification: `version`, metadata of every value type
/// (with `general.alignment` = `align`), then the tensors, each at an aligned offset.
fn gguf(version: u32, align: u32, tensors: &[(&str, u32, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    let u32_ = |b: &mut Vec<u8>, v: u32| b.extend_from_slice(&v.to_le_bytes());
    let u64_ = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
    let s = |b: &mut Vec<u8>, v: &str| {
        b.extend_from_slice(&(v.len() as u64).to_le_bytes());
        b.extend_from_slice(v.as_bytes());
    };
    u32_(&mut b, version);
    u64_(&mut b, tensors.len() as u64);
    u64_(&mut b, 6);
    s(&mut b, "general.architecture");
    u32_(&mut b, 8);
    s(&mut b, "llama");
    s(&mut b, "general.alignment");
    u32_(&mut b, 4);
    u32_(&mut b, align);
    s(&mut b, "tokenizer.ggml.tokens");
    u32_(&mut b, 9);
    u32_(&mut b, 8);
    u64_(&mut b, 3);
    for t in ["<s>", "</s>", "hello"] {
        s(&mut b, t);
    }
    s(&mut b, "some.floats");
    u32_(&mut b, 9);
    u32_(&mut b, 6);
    u64_(&mut b, 2);
    b.extend_from_slice(&[0; 8]);
    s(&mut b, "nested");
    u32_(&mut b, 9);
    u32_(&mut b, 9);
    u64_(&mut b, 1);
    u32_(&mut b, 0);
    u64_(&mut b, 2);
    b.extend_from_slice(&[1, 2]);
    s(&mut b, "flags");
    u32_(&mut b, 7);
    b.push(1);
    let mut offsets = Vec::new();
    let mut next = 0u64;
    for (name, t, ne, data) in tensors {
        s(&mut b, name);
        u32_(&mut b, ne.len() as u32);
        for d in ne {
            u64_(&mut b, *d);
        }
        u32_(&mut b, *t);
        u64_(&mut b, next);
        offsets.push(next);
        next = (next + data.len() as u64).div_ceil(u64::from(align)) * u64::from(align);
    }
    let start = (b.len() as u64).div_ceil(u64::from(align)) * u64::from(align);
    for ((_, _, _, data), off) in tensors.iter().zip(offsets) {
        b.resize((start + off) as usize, 0);
        b.extend_from_slice(data);
    }
    b
}

fn gguf_tensors() -> Vec<(&'static str, u32, Vec<u64>, Vec<u8>)> {
    let f16: Vec<u8> = [1.5f32, -2.0, 65504.0, 0.0]
        .iter()
        .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
        .collect();
    let bf16: Vec<u8> = [0.75f32, -3.0]
        .iter()
        .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
        .collect();
    vec![
        (
            "blk.0.attn_q.weight",
            0,
            vec![4, 3],
            f32_bytes(&(0..12).map(|i| i as f32).collect::<Vec<_>>()),
        ),
        ("blk.0.ffn_down.weight", 2, vec![64, 2], vec![0x11; 4 * 18]),
        ("blk.0.attn_norm.weight", 1, vec![4], f16),
        ("output_norm.weight", 30, vec![2, 1], bf16),
        ("token_embd.weight", 12, vec![256, 1], vec![0; 144]),
    ]
}

#[test]
fn gguf_written_from_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    for (version, align) in [(3, 32), (2, 64)] {
        let file = dir.path().join(format!("m{version}.gguf"));
        std::fs::write(&file, gguf(version, align, &gguf_tensors())).unwrap();
        let ckpt = Checkpoint::open(std::slice::from_ref(&file));
        let c = &ckpt.catalog;
        assert!(c.load_errors.is_empty(), "{:?}", c.load_errors);
        let dtypes: Vec<&str> = c.entries.iter().map(|e| e.dtype.name()).collect();
        assert_eq!(dtypes, ["float32", "Q4_0", "float16", "bfloat16", "Q4_K"]);
        let q = &ckpt.read(&c.entries[0]).unwrap();
        assert_eq!(q.shape, [3, 4], "ne reversed into numpy order");
        assert_eq!(q.data, (0..12).map(|i| i as f32).collect::<Vec<_>>());
        assert_eq!(
            ckpt.read(&c.entries[2]).unwrap().data,
            [1.5, -2.0, 65504.0, 0.0]
        );
        let b = ckpt.read(&c.entries[3]).unwrap();
        assert_eq!(
            (b.shape.as_slice(), b.data.as_slice()),
            (&[1, 2][..], &[0.75, -3.0][..])
        );
        for (i, bytes) in [(1, 72), (4, 144)] {
            let e = &c.entries[i];
            assert_eq!(e.range.end - e.range.start, bytes);
            assert_eq!(e.range.start % u64::from(align), 0);
            assert_eq!(
                e.problem, None,
                "quantized tensors are decoded by their codec"
            );
        }
        // Q4_0 blocks of 0x11 bytes: d = fp16 0x1111, every code 1, so each value is (1 − 8)·d.
        let d = f32::from(half::f16::from_bits(0x1111));
        let q4 = ckpt.read(&c.entries[1]).unwrap();
        assert_eq!(q4.shape, [2, 64]);
        assert!(
            q4.data.iter().all(|&v| v == -7.0 * d),
            "{:?}",
            &q4.data[..4]
        );
        let k = ckpt.read(&c.entries[4]).unwrap();
        assert_eq!(
            (k.shape.as_slice(), k.data.iter().all(|&v| v == 0.0)),
            (&[1, 256][..], true)
        );
        let (page, _, _) = build_like_the_page(std::slice::from_ref(&file));
        assert_eq!(page.entries, c.entries);
    }
    // Refusals: version 1, big-endian, a header cut short, data cut short, a bad block count.
    let good = gguf(3, 32, &gguf_tensors());
    let mut v1 = good.clone();
    v1[4] = 1;
    let mut be = good.clone();
    be[4..8].copy_from_slice(&3u32.to_be_bytes());
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (v1, "version 1"),
        (be, "big-endian"),
        (good[..100].to_vec(), "truncated"),
        (b"GGUX".to_vec(), "magic"),
    ];
    for (bytes, word) in cases {
        let file = dir.path().join("bad.gguf");
        std::fs::write(&file, &bytes).unwrap();
        let c = Checkpoint::open(std::slice::from_ref(&file)).catalog;
        assert!(c.entries.is_empty());
        assert!(c.load_errors[0].error.contains(word), "{:?}", c.load_errors);
    }
    // Cut 2 bytes into `output_norm.weight` (the Q4_K tensor after it is gone as well).
    let cut = good.len() - 144 - 30;
    let file = dir.path().join("cut.gguf");
    std::fs::write(&file, &good[..cut]).unwrap();
    let c = Checkpoint::open(std::slice::from_ref(&file)).catalog;
    assert_eq!(c.entries[0].problem, None);
    assert_eq!(problem(&c, "blk.0.ffn_down.weight"), None);
    assert!(problem(&c, "output_norm.weight")
        .unwrap()
        .contains("truncated file"));
    let mut odd = gguf_tensors();
    odd[1].2 = vec![48, 2];
    std::fs::write(&file, gguf(3, 32, &odd)).unwrap();
    let c = Checkpoint::open(std::slice::from_ref(&file)).catalog;
    assert!(problem(&c, "blk.0.ffn_down.weight")
        .unwrap()
        .contains("blocks of 32"));
}

#[test]
fn malformed_safetensors_are_reported_per_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let ok = f32_bytes(&[1.0, -2.0, 3.0, 4.0]);
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    // A truncated shard: the file stops 6 bytes into `b`.
    let full = st_file(&[
        ("a", "F32", vec![4], ok.clone()),
        ("b", "F32", vec![4], ok.clone()),
        ("c", "F32", vec![4], ok.clone()),
    ]);
    let truncated = write("truncated.safetensors", &full[..full.len() - 16 - 10]);
    // Overlapping and out-of-file offsets, an unsupported dtype, a zero-element tensor, NaN/Inf.
    let mut data = ok.clone();
    data.extend_from_slice(&f32_bytes(&[
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        2.0,
    ]));
    data.extend_from_slice(&[0; 8]);
    let header = r#"{"ok":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},
        "x":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},
        "far":{"dtype":"F32","shape":[2],"data_offsets":[1000000,1000008]},
        "e8m0":{"dtype":"F8_E8M0","shape":[4],"data_offsets":[32,36]},
        "empty":{"dtype":"F32","shape":[0,4],"data_offsets":[16,16]},
        "bad_size":{"dtype":"F16","shape":[3],"data_offsets":[36,40]},
        "nan":{"dtype":"F32","shape":[4],"data_offsets":[16,32]},
        "__metadata__":{"format":"pt"}}"#;
    let mixed = write("mixed.safetensors", &st_raw(header, &data));
    let garbage = write(
        "garbage.safetensors",
        b"\x05\x00\x00\x00\x00\x00\x00\x00{nope",
    );
    let ckpt = Checkpoint::open(&[truncated.clone(), mixed.clone(), garbage.clone()]);
    let c = &ckpt.catalog;
    assert_eq!(problem(c, "a"), None);
    let b = problem(c, "b").unwrap();
    assert!(
        b.starts_with("truncated file") && b.contains("6 bytes into"),
        "{b}"
    );
    assert!(problem(c, "c").unwrap().contains("before this tensor"));
    for name in ["ok", "x"] {
        let p = problem(c, name).unwrap();
        assert!(p.starts_with("overlapping offsets"), "{name}: {p}");
    }
    assert!(problem(c, "far")
        .unwrap()
        .starts_with("out-of-file offsets"));
    let e8 = problem(c, "e8m0").unwrap();
    assert!(e8.contains("unsupported dtype F8_E8M0"), "{e8}");
    assert!(problem(c, "empty")
        .unwrap()
        .starts_with("zero-element tensor"));
    assert!(problem(c, "bad_size").unwrap().contains("needs 6 bytes"));
    assert_eq!(problem(c, "nan"), None);
    assert_eq!(c.load_errors.len(), 1);
    assert!(c.load_errors[0].file.ends_with("garbage.safetensors"));
    assert!(
        c.load_errors[0].error.contains("JSON"),
        "{:?}",
        c.load_errors
    );
    // The readable tensors still read; NaN/Inf are values, counted when ranked.
    let a = c.entries.iter().find(|e| e.name == "a").unwrap();
    assert_eq!(ckpt.read(a).unwrap().data, [1.0, -2.0, 3.0, 4.0]);
    let nan = c.entries.iter().find(|e| e.name == "nan").unwrap();
    let t = ckpt.read(nan).unwrap();
    assert_eq!(t.nonfinite().total(), 3);
    let (page, _, _) = build_like_the_page(&[truncated, mixed, garbage]);
    assert_eq!(page.entries, c.entries);
    assert_eq!(page.load_errors.len(), 1);
}

/// A Mixtral-style layer: GGUF stacks the three experts of `ffn_gate_exps` (Q8_0) in one
/// tensor, Hugging Face keeps `block_sparse_moe.experts.E.w1` apart. The diff splits the stacked
/// tensor into one weight per expert, pairs each with its HF weight and measures each alone.
#[test]
fn diff_splits_stacked_experts() {
    let dir = tempfile::tempdir().unwrap();
    let (experts, rows, columns) = (3usize, 2usize, 32usize);
    // Q8_0 blocks: d = 0.5 (fp16), codes i − 16 + e: expert e's values are 0.5·(i − 16 + e).
    let mut blocks = Vec::new();
    let mut decoded = Vec::new();
    for e in 0..experts {
        let mut values = Vec::new();
        for _ in 0..rows {
            blocks.extend_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
            for i in 0..columns {
                let code = i as i32 - 16 + e as i32;
                blocks.push(code as i8 as u8);
                values.push(0.5 * code as f32);
            }
        }
        decoded.push(values);
    }
    let gguf_path = dir.path().join("model-Q8_0.gguf");
    let ne = vec![columns as u64, rows as u64, experts as u64];
    std::fs::write(
        &gguf_path,
        gguf(3, 32, &[("blk.0.ffn_gate_exps.weight", 8, ne, blocks)]),
    )
    .unwrap();
    // The originals: expert e off by (e + 1)·0.01 on every value.
    let names: Vec<String> = (0..experts)
        .map(|e| format!("model.layers.0.block_sparse_moe.experts.{e}.w1.weight"))
        .collect();
    let originals: Vec<Vec<f32>> = decoded
        .iter()
        .enumerate()
        .map(|(e, v)| v.iter().map(|x| x + (e as f32 + 1.0) * 0.01).collect())
        .collect();
    let tensors: Vec<(&str, &str, Vec<usize>, Vec<u8>)> = names
        .iter()
        .zip(&originals)
        .map(|(n, v)| (n.as_str(), "F32", vec![rows, columns], f32_bytes(v)))
        .collect();
    let st_path = dir.path().join("model.safetensors");
    std::fs::write(&st_path, st_file(&tensors)).unwrap();

    let report = quantscope::diff::native::diff_paths(&[st_path], &[gguf_path], None).unwrap();
    assert!(report.unpaired.original.is_empty(), "{:?}", report.unpaired);
    assert!(
        report.unpaired.quantized.is_empty(),
        "{:?}",
        report.unpaired
    );
    assert_eq!(report.pairs.len(), experts);
    for (e, name) in names.iter().enumerate() {
        let row = report.pairs.iter().find(|r| &r.original == name).unwrap();
        assert_eq!(row.quantized, format!("blk.0.ffn_gate_exps.weight[{e}]"));
        assert_eq!(row.format, "Q8_0");
        assert_eq!(row.shape, vec![rows, columns]);
        let want: f64 = originals[e]
            .iter()
            .zip(&decoded[e])
            .map(|(&x, &q)| (f64::from(q) - f64::from(x)).powi(2))
            .sum::<f64>()
            / (rows * columns) as f64;
        let got = row.metrics.as_ref().unwrap().mse;
        assert!(
            (got - want).abs() <= 1e-12 * want,
            "expert {e}: {got} vs {want}"
        );
    }
}
