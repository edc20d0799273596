//! Small PyTorch checkpoints written from scratch, as `torch.save` lays them out: what the
//! tests, the fuzz seeds and the readers' own damage checks start from.
//!
//! [`Pickle`] writes protocol-2 opcodes; [`state_dict`] the pickle of an `OrderedDict` of
//! tensors (`_rebuild_tensor_v2` calls on `torch.*Storage` persistent ids, a storage used twice
//! fetched from the memo); [`zip_file`] and [`legacy_file`] wrap a pickle and its storages in
//! either container. [`zip_sample`] and [`legacy_sample`] are one checkpoint with every kind of
//! view (contiguous, transposed, sliced, expanded, 0-d, empty) and several dtypes.

/// A protocol-2 pickle being written.
#[derive(Debug, Clone)]
pub struct Pickle {
    out: Vec<u8>,
    memo: u32,
}

impl Default for Pickle {
    fn default() -> Self {
        Self::new()
    }
}

impl Pickle {
    /// A pickle starting with `PROTO 2`.
    pub fn new() -> Self {
        Pickle {
            out: vec![0x80, 2],
            memo: 0,
        }
    }

    /// Raw bytes (an opcode, or a deliberately broken argument).
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.out.extend_from_slice(bytes);
        self
    }

    /// `GLOBAL module name`.
    pub fn global(&mut self, module: &str, name: &str) -> &mut Self {
        self.out.push(b'c');
        self.out
            .extend_from_slice(format!("{module}\n{name}\n").as_bytes());
        self
    }

    /// An integer in the shortest form `pickle` uses (`BININT1`, `BININT2`, `BININT`, `LONG1`).
    pub fn int(&mut self, v: i64) -> &mut Self {
        match v {
            0..=0xff => self.raw(&[b'K', v as u8]),
            0x100..=0xffff => self.raw(&[b'M', v as u8, (v >> 8) as u8]),
            _ if i32::try_from(v).is_ok() => {
                self.out.push(b'J');
                self.raw(&(v as i32).to_le_bytes())
            }
            _ => {
                let bytes = v.to_le_bytes();
                // Shortest two's complement.
                let mut n = 8;
                while n > 1
                    && ((bytes[n - 1] == 0 && bytes[n - 2] & 0x80 == 0)
                        || (bytes[n - 1] == 0xff && bytes[n - 2] & 0x80 != 0))
                {
                    n -= 1;
                }
                self.raw(&[0x8a, n as u8]);
                self.raw(&bytes[..n])
            }
        }
    }

    /// `BINFLOAT`.
    pub fn float(&mut self, v: f64) -> &mut Self {
        self.out.push(b'G');
        self.raw(&v.to_be_bytes())
    }

    /// `BINUNICODE`.
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.out.push(b'X');
        self.raw(&(s.len() as u32).to_le_bytes());
        self.raw(s.as_bytes())
    }

    /// `BINPUT` of the top of the stack; its memo index.
    pub fn put(&mut self) -> u32 {
        let i = self.memo;
        self.memo += 1;
        if i < 256 {
            self.raw(&[b'q', i as u8]);
        } else {
            self.raw(b"r");
            self.raw(&i.to_le_bytes());
        }
        i
    }

    /// `BINGET` / `LONG_BINGET` of memo entry `i`.
    pub fn get(&mut self, i: u32) -> &mut Self {
        if i < 256 {
            self.raw(&[b'h', i as u8])
        } else {
            self.raw(b"j");
            self.raw(&i.to_le_bytes())
        }
    }

    /// A tuple of the integers `v` (`EMPTY_TUPLE`, `TUPLE1`–`3` or `MARK … TUPLE`).
    pub fn int_tuple(&mut self, v: &[u64]) -> &mut Self {
        if v.is_empty() {
            return self.raw(b")");
        }
        if v.len() > 3 {
            self.raw(b"(");
        }
        for &x in v {
            self.int(x as i64);
        }
        match v.len() {
            1 => self.raw(&[0x85]),
            2 => self.raw(&[0x86]),
            3 => self.raw(&[0x87]),
            _ => self.raw(b"t"),
        }
    }

    /// The bytes so far, ended by `STOP`.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(b'.');
        self.out
    }
}

/// One storage of a sample: its class in module `torch` (`FloatStorage`), its key, its element
/// count as the persistent id says it and its bytes.
#[derive(Debug, Clone)]
pub struct SampleStorage {
    pub class: &'static str,
    pub key: String,
    pub numel: u64,
    pub data: Vec<u8>,
}

/// One tensor of a sample: a view of storage `storage` (an index into the storages).
#[derive(Debug, Clone)]
pub struct SampleTensor {
    pub name: String,
    pub storage: usize,
    pub offset: u64,
    pub size: Vec<u64>,
    pub stride: Vec<u64>,
}

/// The pickle of an `OrderedDict` of `tensors`, as `torch.save(state_dict)` writes it; `legacy`
/// adds the sixth `view_metadata` item (`None`) of the legacy format's persistent ids.
pub fn state_dict(tensors: &[SampleTensor], storages: &[SampleStorage], legacy: bool) -> Vec<u8> {
    let mut p = Pickle::new();
    p.global("collections", "OrderedDict");
    p.put();
    p.raw(b")R");
    p.put();
    p.raw(b"(");
    let mut rebuild = None;
    let mut classes: Vec<(&str, u32)> = Vec::new();
    let mut seen: Vec<(usize, u32)> = Vec::new();
    for t in tensors {
        p.str(&t.name);
        match rebuild {
            Some(i) => {
                p.get(i);
            }
            None => {
                p.global("torch._utils", "_rebuild_tensor_v2");
                rebuild = Some(p.put());
            }
        }
        p.raw(b"(");
        match seen.iter().find(|(s, _)| *s == t.storage) {
            Some(&(_, i)) => {
                p.get(i);
            }
            None => {
                let s = &storages[t.storage];
                p.raw(b"(");
                p.str("storage");
                match classes.iter().find(|(c, _)| *c == s.class) {
                    Some(&(_, i)) => {
                        p.get(i);
                    }
                    None => {
                        p.global("torch", s.class);
                        classes.push((s.class, p.put()));
                    }
                }
                p.str(&s.key);
                p.str("cpu");
                p.int(s.numel as i64);
                if legacy {
                    p.raw(b"N");
                }
                p.raw(b"tQ");
                seen.push((t.storage, p.put()));
            }
        }
        p.int(t.offset as i64);
        p.int_tuple(&t.size);
        p.int_tuple(&t.stride);
        p.raw(&[0x89]); // requires_grad = False
        p.global("collections", "OrderedDict");
        p.raw(b")R");
        p.raw(b"tR");
        p.put();
    }
    p.raw(b"u");
    p.finish()
}

/// A stored zip, as PyTorch writes it: every member under `root/`, each member's data on a
/// 64-byte boundary. `deflate` names members to store compressed instead (method 8).
pub fn zip_file(root: &str, members: &[(&str, Vec<u8>)], deflate: &[&str]) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in members {
        let name = format!("{root}/{name}");
        let crc = crc32fast::hash(data);
        let (method, stored) = if deflate.contains(&name.rsplit('/').next().unwrap_or("")) {
            let mut e =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            let _ = e.write_all(data);
            (8u16, e.finish().unwrap_or_default())
        } else {
            (0u16, data.clone())
        };
        let offset = out.len() as u32;
        let unpadded = out.len() + 30 + name.len() + 4;
        let pad = (64 - unpadded % 64) % 64;
        let header = |sig: u32, out: &mut Vec<u8>, extra_len: u16| {
            out.extend_from_slice(&sig.to_le_bytes());
            if sig == 0x0201_4b50 {
                out.extend_from_slice(&20u16.to_le_bytes()); // made by
            }
            out.extend_from_slice(&20u16.to_le_bytes()); // needed to extract
            out.extend_from_slice(&0u16.to_le_bytes()); // flags
            out.extend_from_slice(&method.to_le_bytes());
            out.extend_from_slice(&[0, 0, 0, 0]); // time, date
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&(stored.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&extra_len.to_le_bytes());
        };
        header(0x0403_4b50, &mut out, (4 + pad) as u16);
        out.extend_from_slice(name.as_bytes());
        // PyTorch's padding field ("FB").
        out.extend_from_slice(b"FB");
        out.extend_from_slice(&(pad as u16).to_le_bytes());
        out.extend(std::iter::repeat_n(b'Z', pad));
        out.extend_from_slice(&stored);
        header(0x0201_4b50, &mut central, 0);
        central.extend_from_slice(&[0; 10]); // comment length, disk, attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    let count = members.len() as u16;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// A zip checkpoint of `pickle` (as `data.pkl`) and `storages` (as `data/<key>`).
pub fn zip_checkpoint(root: &str, pickle: Vec<u8>, storages: &[SampleStorage]) -> Vec<u8> {
    let mut members: Vec<(&str, Vec<u8>)> = vec![
        ("data.pkl", pickle),
        (".format_version", b"1".to_vec()),
        (".storage_alignment", b"64".to_vec()),
        ("byteorder", b"little".to_vec()),
    ];
    let names: Vec<String> = storages.iter().map(|s| format!("data/{}", s.key)).collect();
    for (s, name) in storages.iter().zip(&names) {
        members.push((name.as_str(), s.data.clone()));
    }
    members.push(("version", b"3\n".to_vec()));
    zip_file(root, &members, &[])
}

/// A legacy checkpoint: the magic number, protocol version and `sys_info` pickles, the object
/// pickle `object`, the sorted storage keys, then each storage (its element count as an int64,
/// its bytes).
pub fn legacy_file(object: &[u8], storages: &[SampleStorage]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut magic = Pickle::new();
    magic.raw(&[
        0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19,
    ]);
    out.extend(magic.finish());
    let mut version = Pickle::new();
    version.int(1001);
    out.extend(version.finish());
    let mut sys = Pickle::new();
    sys.raw(b"}");
    sys.put();
    sys.raw(b"(");
    sys.str("protocol_version").int(1001);
    sys.str("little_endian").raw(&[0x88]);
    sys.str("type_sizes").raw(b"}");
    sys.put();
    sys.raw(b"(");
    sys.str("short").int(2).str("int").int(4).str("long").int(4);
    sys.raw(b"uu");
    out.extend(sys.finish());
    out.extend_from_slice(object);
    let mut order: Vec<&SampleStorage> = storages.iter().collect();
    order.sort_by(|a, b| a.key.cmp(&b.key));
    let mut keys = Pickle::new();
    keys.raw(b"]");
    keys.put();
    keys.raw(b"(");
    for s in &order {
        keys.str(&s.key);
    }
    keys.raw(b"e");
    out.extend(keys.finish());
    for s in order {
        out.extend_from_slice(&s.numel.to_le_bytes());
        out.extend_from_slice(&s.data);
    }
    out
}

fn f32_bytes(v: impl IntoIterator<Item = f32>) -> Vec<u8> {
    v.into_iter().flat_map(f32::to_le_bytes).collect()
}

/// The sample's storages (keys `0`…`4`, or `legacy` memory-address-like keys) and tensors:
/// a float32 `[4, 6]` matrix `w` with its transpose `w_t`, rows 1..3 `w_rows` (offset 6), every
/// other column `w_cols` and a 0-d element `w_elem`; a bias `b` `[6]` expanded to `[2, 6]`
/// `b_expanded` (stride 0); bfloat16 `h` `[3]`; int64 `steps` 0-d; an empty float32 `[0, 6]`
/// `empty`; int8 `codes` `[2, 2]`.
pub fn sample_parts(legacy: bool) -> (Vec<SampleTensor>, Vec<SampleStorage>) {
    let key = |i: usize| {
        if legacy {
            format!("9397095795{i}728")
        } else {
            i.to_string()
        }
    };
    let storages = vec![
        SampleStorage {
            class: "FloatStorage",
            key: key(0),
            numel: 24,
            data: f32_bytes((0..24).map(|i| i as f32 * 0.5 - 3.0)),
        },
        SampleStorage {
            class: "FloatStorage",
            key: key(1),
            numel: 6,
            data: f32_bytes([1.5, -2.25, 0.0, 8.0, -0.125, 3.0]),
        },
        SampleStorage {
            class: "BFloat16Storage",
            key: key(2),
            numel: 3,
            data: [0x3f80u16, 0xc000, 0x4049]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        },
        SampleStorage {
            class: "LongStorage",
            key: key(3),
            numel: 1,
            data: 1200i64.to_le_bytes().to_vec(),
        },
        SampleStorage {
            class: "CharStorage",
            key: key(4),
            numel: 4,
            data: vec![0x80, 0xff, 0, 0x7f],
        },
    ];
    let t = |name: &str, storage, offset, size: &[u64], stride: &[u64]| SampleTensor {
        name: name.into(),
        storage,
        offset,
        size: size.to_vec(),
        stride: stride.to_vec(),
    };
    let tensors = vec![
        t("w", 0, 0, &[4, 6], &[6, 1]),
        t("w_t", 0, 0, &[6, 4], &[1, 6]),
        t("w_rows", 0, 6, &[2, 6], &[6, 1]),
        t("w_cols", 0, 0, &[4, 3], &[6, 2]),
        t("w_elem", 0, 13, &[], &[]),
        t("b", 1, 0, &[6], &[1]),
        t("b_expanded", 1, 0, &[2, 6], &[0, 1]),
        t("h", 2, 0, &[3], &[1]),
        t("steps", 3, 0, &[], &[]),
        t("empty", 0, 0, &[0, 6], &[6, 1]),
        t("codes", 4, 0, &[2, 2], &[2, 1]),
    ];
    (tensors, storages)
}

/// The sample as a zip checkpoint (`sample/data.pkl`, …).
pub fn zip_sample() -> Vec<u8> {
    let (tensors, storages) = sample_parts(false);
    zip_checkpoint("sample", state_dict(&tensors, &storages, false), &storages)
}

/// The sample as a legacy checkpoint.
pub fn legacy_sample() -> Vec<u8> {
    let (tensors, storages) = sample_parts(true);
    legacy_file(&state_dict(&tensors, &storages, true), &storages)
}

#[cfg(test)]
mod tests {
    use super::super::super::{assemble, decode_entry, list_file, CatalogFile, InMemory};
    use super::*;

    fn catalog(name: &str, bytes: &[u8]) -> crate::checkpoint::Catalog {
        let listing = list_file(name, &InMemory(bytes)).unwrap();
        let file = CatalogFile {
            name: name.into(),
            len: bytes.len() as u64,
            kind: None,
        };
        assemble(vec![(file, listing)])
    }

    fn read(c: &crate::checkpoint::Catalog, bytes: &[u8], name: &str) -> Vec<f32> {
        let e = c.entries.iter().find(|e| e.name == name).unwrap();
        decode_entry(e, &bytes[e.range.start as usize..e.range.end as usize])
            .unwrap()
            .data
    }

    #[test]
    fn both_samples_read_every_view() {
        for (name, bytes) in [("s.pt", zip_sample()), ("s.bin", legacy_sample())] {
            let c = catalog(name, &bytes);
            assert!(c.load_errors.is_empty(), "{:?}", c.load_errors);
            let names: Vec<&str> = c.entries.iter().map(|e| e.name.as_str()).collect();
            assert_eq!(
                names,
                [
                    "w",
                    "w_t",
                    "w_rows",
                    "w_cols",
                    "w_elem",
                    "b",
                    "b_expanded",
                    "h",
                    "steps",
                    "empty",
                    "codes"
                ]
            );
            let w: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
            assert_eq!(read(&c, &bytes, "w"), w);
            let t: Vec<f32> = (0..6)
                .flat_map(|j| (0..4).map(move |i| (i * 6 + j) as f32 * 0.5 - 3.0))
                .collect();
            assert_eq!(read(&c, &bytes, "w_t"), t);
            assert_eq!(read(&c, &bytes, "w_rows"), w[6..18]);
            let cols: Vec<f32> = (0..4)
                .flat_map(|i| (0..3).map(move |j| (i * 6 + 2 * j) as f32 * 0.5 - 3.0))
                .collect();
            assert_eq!(read(&c, &bytes, "w_cols"), cols);
            assert_eq!(read(&c, &bytes, "w_elem"), [w[13]]);
            let b = [1.5, -2.25, 0.0, 8.0, -0.125, 3.0];
            assert_eq!(read(&c, &bytes, "b_expanded"), [b, b].concat());
            assert_eq!(read(&c, &bytes, "h"), [1.0, -2.0, 3.140625]);
            assert_eq!(read(&c, &bytes, "steps"), [1200.0]);
            assert_eq!(read(&c, &bytes, "codes"), [-128.0, -1.0, 0.0, 127.0]);
            let empty = c.entries.iter().find(|e| e.name == "empty").unwrap();
            assert!(empty.problem.as_deref().unwrap().contains("zero-element"));
            // Contiguous views are plain ranges; the others strided.
            let plain = |n: &str| {
                matches!(
                    c.entries.iter().find(|e| e.name == n).unwrap().storage,
                    crate::checkpoint::Storage::Plain { .. }
                )
            };
            assert!(plain("w") && plain("w_rows") && plain("w_elem") && plain("h"));
            assert!(!plain("w_t") && !plain("w_cols") && !plain("b_expanded"));
        }
    }

    #[test]
    fn v3_dtypes_parameters_and_nested_containers() {
        // {'p': Parameter(_rebuild_tensor_v3(untyped, 1, (2,), (1,), False, OrderedDict(),
        //  torch.float8_e4m3fn)), 'state': {0: [v3 of float8_e4m3fnuz]}} on one 4-byte storage.
        let v3 = |p: &mut Pickle, offset: i64, dtype: &str| {
            p.global("torch._utils", "_rebuild_tensor_v3");
            p.raw(b"((");
            p.str("storage").global("torch.storage", "UntypedStorage");
            p.str("0").str("cpu").int(4);
            p.raw(b"tQ");
            p.int(offset).int_tuple(&[2]).int_tuple(&[1]).raw(&[0x89]);
            p.global("collections", "OrderedDict").raw(b")R");
            p.global("torch", dtype);
            p.raw(b"tR");
        };
        let mut p = Pickle::new();
        p.raw(b"}(");
        p.str("p");
        p.global("torch._utils", "_rebuild_parameter").raw(b"(");
        v3(&mut p, 1, "float8_e4m3fn");
        p.raw(&[0x88]);
        p.global("collections", "OrderedDict").raw(b")R");
        p.raw(b"tR");
        p.str("state").raw(b"}(").int(0).raw(b"](");
        v3(&mut p, 0, "float8_e4m3fnuz");
        p.raw(b"eu").raw(b"u");
        let storage = SampleStorage {
            class: "",
            key: "0".into(),
            numel: 4,
            data: vec![0x00, 0x38, 0xb8, 0x7e],
        };
        let bytes = zip_checkpoint("m", p.finish(), &[storage]);
        let c = catalog("m.pt", &bytes);
        assert!(c.load_errors.is_empty(), "{:?}", c.load_errors);
        let names: Vec<&str> = c.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["p", "state.0.0"]);
        assert_eq!(read(&c, &bytes, "p"), [1.0, -1.0]);
        let e = &c.entries[1];
        assert_eq!(e.dtype.name(), "float8_e4m3fnuz");
        assert_eq!(
            e.problem.as_deref(),
            Some("dtype torch.float8_e4m3fnuz is not read by quantscope")
        );
    }

    #[test]
    fn the_oracle_holds_on_the_samples_and_their_damage() {
        for (name, bytes) in [("s.pt", zip_sample()), ("s.bin", legacy_sample())] {
            crate::checkpoint::selfcheck::check_file(name, &bytes);
            for cut in (0..bytes.len()).step_by(11) {
                crate::checkpoint::selfcheck::check_file(name, &bytes[..cut]);
            }
            for i in (0..bytes.len()).step_by(5) {
                let mut damaged = bytes.clone();
                damaged[i] ^= 0x5a;
                crate::checkpoint::selfcheck::check_file(name, &damaged);
            }
        }
    }
}
