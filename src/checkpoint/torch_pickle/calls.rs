//! What the allow-listed globals do when a pickle calls them (`REDUCE`, `NEWOBJ`), sets their
//! state (`BUILD`) or asks for a storage (`BINPERSID`), emulated on [`Value`]s: nothing of the
//! file is run.
//!
//! * `torch._utils._rebuild_tensor(storage, offset, size, stride)`, `_rebuild_tensor_v2(…,
//!   requires_grad, backward_hooks[, metadata])` and `_rebuild_tensor_v3(…, backward_hooks,
//!   dtype[, metadata])` build a [`Tensor::Strided`]: the storage's dtype (v1, v2) or the given one
//!   (v3), offset and strides in elements.
//! * `torch.nn.parameter.Parameter(tensor, …)`, `_rebuild_parameter(tensor, …)` and
//!   `_rebuild_parameter_with_state(tensor, …)` are their tensor; `torch._tensor.
//!   _rebuild_from_type_v2(func, type, args, state)` is `func(*args)`.
//! * Quantized, sparse, meta, subclass and numpy tensors are allowed but not read: each is a
//!   [`Tensor::Unsupported`] saying what it is (a per-tensor problem, not a refusal).
//! * `OrderedDict()`, `Counter()`, `set(…)`, `torch.Size(…)`, `_codecs.encode(s, 'latin1')`
//!   (protocol 2's `bytes`) build what they would; `torch.device`, `complex`, layouts and the
//!   like are opaque leaves.
//! * `BUILD` is accepted on tensors (a `(storage, offset, size, stride)` state sets the data, as
//!   `Tensor.set_` does; other states are attributes), OrderedDicts, Counters, sets and opaque
//!   objects of allowed classes; on anything else it is refused, as torch refuses it.
//! * A persistent id must be `('storage', storage_class, key, location, numel[, view])`; the
//!   first id of a key defines the storage ([`StorageInfo`]).

use super::allow::{GlobalKind, Rebuild};
use super::dtypes;
use super::vm::{
    bad, Dict, DictKind, Machine, Object, Run, StorageInfo, StorageRef, Tensor, Value, MAX_COPIED,
};
use std::rc::Rc;

/// The most arguments an emulated call takes (`_rebuild_tensor_v3` takes 8).
const MAX_ARGS: usize = 8;
/// The most dimensions a tensor may have.
pub(crate) const MAX_DIMS: usize = 64;

impl Machine<'_> {
    /// The items of a tuple argument list.
    fn tuple_items(&self, args: &Value, what: &str, at: usize) -> Run<Vec<Value>> {
        match self.object(args) {
            Some(Object::Tuple(items)) if items.len() > MAX_ARGS => Err(bad(format!(
                "malformed pickle: {what} at {} gets {} arguments; no allow-listed callable takes more than {MAX_ARGS}",
                self.place(at),
                items.len()
            ))),
            Some(Object::Tuple(items)) => Ok(items.clone()),
            _ => Err(bad(format!(
                "malformed pickle: {what} at {} gets a {} as its arguments, not a tuple",
                self.place(at),
                self.type_name(args)
            ))),
        }
    }

    /// `func(*args)` (`REDUCE`).
    pub(super) fn call(&mut self, func: &Value, args: &Value, at: usize) -> Run<Value> {
        let Value::Global(g) = func else {
            return Err(bad(format!(
                "refused: REDUCE at {} calls a {}, not an allow-listed function",
                self.place(at),
                self.type_name(func)
            )));
        };
        let g = g.clone();
        let args = self.tuple_items(args, &format!("the call of {}", g.path), at)?;
        let wrong = |m: &Self, expected: &str| {
            bad(format!(
                "malformed pickle: {} called at {} with {} arguments, expected {expected}",
                g.path,
                m.place(at),
                args.len()
            ))
        };
        use GlobalKind as K;
        Ok(match g.kind {
            K::OrderedDict | K::Counter => {
                let kind = if g.kind == K::Counter {
                    DictKind::Counter
                } else {
                    DictKind::OrderedDict
                };
                let d = self.alloc(Object::Dict(Dict::new(kind)));
                match args.as_slice() {
                    [] => {}
                    [items] => self.fill_dict(&d, items, &g.path, at)?,
                    _ => return Err(wrong(self, "0 or 1")),
                }
                d
            }
            K::Set => {
                let items = match args.as_slice() {
                    [] => Vec::new(),
                    [items] => self.sequence(items, &g.path, at)?,
                    _ => return Err(wrong(self, "0 or 1")),
                };
                self.alloc(Object::Set(items))
            }
            K::Size => match args.as_slice() {
                [] => self.alloc(Object::Tuple(Vec::new())),
                [dims] => {
                    let items = self.sequence(dims, &g.path, at)?;
                    self.alloc(Object::Tuple(items))
                }
                _ => return Err(wrong(self, "0 or 1")),
            },
            K::CodecsEncode => match args.as_slice() {
                [Value::Str(s), Value::Str(encoding)] => self.encode(s, encoding, at)?,
                [Value::Str(s)] => Value::Bytes(Rc::from(s.as_bytes())),
                _ => {
                    return Err(bad(format!(
                        "malformed pickle: _codecs.encode called at {} without a string and an encoding",
                        self.place(at)
                    )))
                }
            },
            K::Bytearray => match args.as_slice() {
                [] => Value::Bytes(Rc::from(&[][..])),
                [b @ Value::Bytes(_)] => b.clone(),
                _ => self.alloc(Object::Opaque(Rc::from("bytearray"))),
            },
            K::Parameter => self.parameter(&args, &g.path, at)?,
            K::Rebuild(r) => self.rebuild(r, &args, &g.path, at)?,
            K::RebuildFromTypeV2 => {
                let [func, _new_type, inner, _state] = args.as_slice() else {
                    return Err(wrong(self, "4"));
                };
                if matches!(func, Value::Global(f) if f.kind == K::RebuildFromTypeV2) {
                    return Err(bad(format!(
                        "malformed pickle: _rebuild_from_type_v2 at {} rebuilds through itself",
                        self.place(at)
                    )));
                }
                self.call(func, inner, at)?
            }
            K::Tensor | K::TensorClass(_) => self.alloc(Object::Tensor(Tensor::Unsupported(
                format!("a tensor built by calling {} is not read by quantscope", g.path),
            ))),
            K::Complex
            | K::Device
            | K::GetLayout
            | K::Dtype(_)
            | K::LegacyStorage(_)
            | K::TypedStorage
            | K::UntypedStorage
            | K::QScheme => self.alloc(Object::Opaque(Rc::from(g.path.as_str()))),
        })
    }

    /// `class.__new__(class, *args)` (`NEWOBJ`).
    pub(super) fn new_object(&mut self, class: &Value, args: &Value, at: usize) -> Run<Value> {
        let Value::Global(g) = class else {
            return Err(bad(format!(
                "refused: NEWOBJ at {} instantiates a {}, not an allow-listed class",
                self.place(at),
                self.type_name(class)
            )));
        };
        let g = g.clone();
        let args = self.tuple_items(args, &format!("NEWOBJ of {}", g.path), at)?;
        use GlobalKind as K;
        Ok(match g.kind {
            K::Parameter => self.parameter(&args, &g.path, at)?,
            K::OrderedDict => self.alloc(Object::Dict(Dict::new(DictKind::OrderedDict))),
            K::Counter => self.alloc(Object::Dict(Dict::new(DictKind::Counter))),
            K::Set => self.alloc(Object::Set(Vec::new())),
            K::Bytearray => Value::Bytes(Rc::from(&[][..])),
            K::Tensor => self.alloc(Object::Tensor(Tensor::Empty(
                dtypes::dtype_named("float32").unwrap_or(dtypes::bytes_dtype()),
            ))),
            K::TensorClass(d) => self.alloc(Object::Tensor(Tensor::Empty(d))),
            _ => self.alloc(Object::Opaque(Rc::from(g.path.as_str()))),
        })
    }

    /// `target.__setstate__(state)` (`BUILD`).
    pub(super) fn build(&mut self, target: &Value, state: &Value, at: usize) -> Run<()> {
        let refuse = |m: &Self| {
            bad(format!(
                "refused: BUILD at {} sets the state of a {}; only tensors, Parameters, OrderedDicts and allow-listed classes accept it",
                m.place(at),
                m.type_name(target)
            ))
        };
        let Value::Obj(id) = target else {
            return Err(refuse(self));
        };
        match self.heap.get(*id) {
            Some(Object::Tensor(t)) => {
                // `Tensor.set_(storage, offset, size, stride)`: a legacy tensor's data. Any
                // other state is Python attributes, which carry no data.
                let set = match self.object(state) {
                    Some(Object::Tuple(items)) if items.len() == 4 => {
                        matches!(self.object(&items[0]), Some(Object::Storage(_)))
                    }
                    _ => false,
                };
                let empty = matches!(t, Tensor::Empty(_));
                if set {
                    let items = self.tuple_items(state, "BUILD", at)?;
                    let view = self.view(&items, None, "Tensor.set_", at)?;
                    if let Some(Object::Tensor(t)) = self.heap.get_mut(*id) {
                        *t = view;
                    }
                } else if empty {
                    if let Some(Object::Tensor(t)) = self.heap.get_mut(*id) {
                        *t = Tensor::Unsupported(
                            "an empty tensor whose data the pickle never sets".into(),
                        );
                    }
                }
                Ok(())
            }
            Some(Object::Dict(d)) if d.kind != DictKind::Dict => Ok(()),
            Some(Object::Set(_) | Object::Opaque(_)) => Ok(()),
            _ => Err(refuse(self)),
        }
    }

    /// The storage a persistent id names (`BINPERSID`).
    pub(super) fn persistent_load(&mut self, pid: &Value, at: usize) -> Run<Value> {
        let items = match self.object(pid) {
            Some(Object::Tuple(items)) if items.len() <= 6 => items.clone(),
            Some(Object::Tuple(items)) => {
                return Err(bad(format!(
                    "malformed pickle: the persistent id at {} has {} items, expected ('storage', class, key, location, numel[, view])",
                    self.place(at),
                    items.len()
                )))
            }
            _ => {
                return Err(bad(format!(
                    "refused: the persistent id at {} is a {}, not a storage tuple",
                    self.place(at),
                    self.type_name(pid)
                )))
            }
        };
        let tag = match items.first() {
            Some(Value::Str(s)) => s.to_string(),
            Some(Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        if tag != "storage" {
            return Err(bad(format!(
                "refused: the persistent id at {} asks for a `{tag}`; only storages are loaded",
                self.place(at)
            )));
        }
        let malformed = |m: &Self, why: &str| {
            bad(format!(
                "malformed pickle: the storage persistent id at {}: {why}",
                m.place(at)
            ))
        };
        let (class, key, location, numel, view) = match items.as_slice() {
            [_, class, key, location, numel] => (class, key, location, numel, None),
            [_, class, key, location, numel, view] => (class, key, location, numel, Some(view)),
            _ => {
                return Err(malformed(
                    self,
                    &format!(
                        "{} items, expected ('storage', class, key, location, numel[, view])",
                        items.len()
                    ),
                ))
            }
        };
        let (class_name, dtype) = match class {
            Value::Global(g) => match g.kind {
                GlobalKind::LegacyStorage(d) => (g.path.clone(), Some(d)),
                GlobalKind::UntypedStorage => (g.path.clone(), Some(dtypes::bytes_dtype())),
                GlobalKind::TypedStorage => (g.path.clone(), None),
                _ => return Err(malformed(self, &format!("its storage class is {}", g.path))),
            },
            other => {
                return Err(malformed(
                    self,
                    &format!("its storage class is a {}", self.type_name(other)),
                ))
            }
        };
        const MAX_KEY: usize = 4096;
        let text = |v: &Value| match v {
            Value::Str(s) if s.len() <= MAX_KEY => Some(s.to_string()),
            Value::Bytes(b) if b.len() <= MAX_KEY => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        };
        let key = text(key).ok_or_else(|| {
            malformed(
                self,
                &format!("its key is not a string of at most {MAX_KEY} bytes"),
            )
        })?;
        let location = text(location).ok_or_else(|| {
            malformed(
                self,
                &format!("its location is not a string of at most {MAX_KEY} bytes"),
            )
        })?;
        let numel = match numel {
            Value::Int(n) => u64::try_from(*n).ok(),
            _ => None,
        }
        .ok_or_else(|| malformed(self, "its element count is not a non-negative integer"))?;
        let info = StorageInfo {
            key: key.clone(),
            class: class_name,
            dtype,
            numel,
            location,
        };
        if dtype.is_some() && info.nbytes().is_none() {
            return Err(malformed(self, "its size in bytes overflows"));
        }
        let index = match self.storage_keys.get(&key) {
            Some(&i) => i,
            None => {
                self.storages.push(info);
                self.storage_keys.insert(key, self.storages.len() - 1);
                self.storages.len() - 1
            }
        };
        let mut storage = StorageRef {
            index,
            byte_offset: 0,
            byte_len: None,
        };
        if let Some(view) = view.filter(|v| !matches!(v, Value::None)) {
            // A legacy storage view: (view_key, offset, size) in elements of the storage.
            let Some(Object::Tuple(parts)) = self.object(view) else {
                return Err(malformed(self, "its view is not a tuple"));
            };
            let (offset, size) = match parts.as_slice() {
                [_, Value::Int(o), Value::Int(s)] => (*o, *s),
                _ => return Err(malformed(self, "its view is not (key, offset, size)")),
            };
            let itemsize = self
                .storages
                .get(index)
                .and_then(|s| s.dtype)
                .map(|d| d.itemsize as i128)
                .ok_or_else(|| malformed(self, "a view of a storage of unknown dtype"))?;
            let bytes = |n: i128| n.checked_mul(itemsize).and_then(|b| u64::try_from(b).ok());
            match (bytes(offset), bytes(size)) {
                (Some(o), Some(s)) => {
                    storage.byte_offset = o;
                    storage.byte_len = Some(s);
                }
                _ => {
                    return Err(malformed(
                        self,
                        "its view has a negative or huge offset or size",
                    ))
                }
            }
        }
        Ok(self.alloc(Object::Storage(storage)))
    }

    /// `Parameter(data, requires_grad)`: the tensor `data`.
    fn parameter(&mut self, args: &[Value], path: &str, at: usize) -> Run<Value> {
        match args.first() {
            Some(t) if matches!(self.object(t), Some(Object::Tensor(_))) => Ok(t.clone()),
            None => Ok(self.alloc(Object::Tensor(Tensor::Unsupported(
                "an empty Parameter".into(),
            )))),
            Some(other) => Err(bad(format!(
                "malformed pickle: {path} at {} wraps a {}, not a tensor",
                self.place(at),
                self.type_name(other)
            ))),
        }
    }

    /// A call of one of `torch._utils`' rebuild functions.
    fn rebuild(&mut self, r: Rebuild, args: &[Value], path: &str, at: usize) -> Run<Value> {
        let count = |ok: &[usize], m: &Self| -> Run<()> {
            if ok.contains(&args.len()) {
                Ok(())
            } else {
                Err(bad(format!(
                    "malformed pickle: {path} called at {} with {} arguments, expected {}",
                    m.place(at),
                    args.len(),
                    ok.iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(" or ")
                )))
            }
        };
        let unsupported = |m: &mut Self, what: &str| {
            m.alloc(Object::Tensor(Tensor::Unsupported(format!(
                "{what} ({path}) is not read by quantscope"
            ))))
        };
        Ok(match r {
            Rebuild::Tensor | Rebuild::TensorV2 | Rebuild::TensorV3 => {
                let (counts, dtype_arg): (&[usize], Option<usize>) = match r {
                    Rebuild::Tensor => (&[4], None),
                    Rebuild::TensorV2 => (&[6, 7], None),
                    _ => (&[7, 8], Some(6)),
                };
                count(counts, self)?;
                let dtype = match dtype_arg.and_then(|i| args.get(i)) {
                    None => None,
                    Some(Value::Global(g)) => match g.kind {
                        GlobalKind::Dtype(d) => Some(d),
                        _ => {
                            return Err(bad(format!(
                                "malformed pickle: {path} at {} gets {} as its dtype",
                                self.place(at),
                                g.path
                            )))
                        }
                    },
                    Some(other) => {
                        return Err(bad(format!(
                            "malformed pickle: {path} at {} gets a {} as its dtype",
                            self.place(at),
                            self.type_name(other)
                        )))
                    }
                };
                let view = self.view(args, dtype, path, at)?;
                self.alloc(Object::Tensor(view))
            }
            Rebuild::Parameter | Rebuild::ParameterWithState => {
                count(if r == Rebuild::Parameter { &[3] } else { &[4] }, self)?;
                self.parameter(args, path, at)?
            }
            Rebuild::QTensor => unsupported(self, "a quantized tensor"),
            Rebuild::SparseTensor => unsupported(self, "a sparse tensor"),
            Rebuild::MetaTensorNoStorage => unsupported(self, "a meta tensor (it has no data)"),
            Rebuild::WrapperSubclass => unsupported(self, "a tensor subclass"),
            Rebuild::DeviceTensorFromNumpy => unsupported(self, "a tensor saved as a numpy array"),
            Rebuild::DeviceTensorFromCpuTensor => unsupported(self, "a device tensor"),
        })
    }

    /// The view `(storage, offset, size, stride, …)` of a rebuild call, of `dtype` or, when
    /// `None`, of the storage's dtype.
    fn view(
        &self,
        args: &[Value],
        dtype: Option<super::dtypes::TorchDtype>,
        path: &str,
        at: usize,
    ) -> Run<Tensor> {
        let malformed = |why: String| {
            bad(format!(
                "malformed pickle: {path} at {}: {why}",
                self.place(at)
            ))
        };
        let [storage, offset, size, stride, ..] = args else {
            return Err(malformed("fewer than 4 arguments".into()));
        };
        let Some(Object::Storage(storage)) = self.object(storage) else {
            return Err(malformed(format!(
                "its storage is a {}",
                self.type_name(storage)
            )));
        };
        let offset = match offset {
            Value::Int(o) => *o,
            other => {
                return Err(malformed(format!(
                    "its storage offset is a {}",
                    self.type_name(other)
                )))
            }
        };
        let ints = |v: &Value, what: &str| -> Run<Vec<i128>> {
            let items = match self.object(v) {
                Some(Object::Tuple(items) | Object::List(items)) => items,
                _ => return Err(malformed(format!("its {what} is a {}", self.type_name(v)))),
            };
            if items.len() > MAX_DIMS {
                return Err(malformed(format!(
                    "its {what} has {} dimensions, more than {MAX_DIMS}",
                    items.len()
                )));
            }
            items
                .iter()
                .map(|i| match i {
                    Value::Int(n) => Ok(*n),
                    Value::Bool(b) => Ok(i128::from(*b)),
                    other => Err(malformed(format!(
                        "its {what} holds a {}",
                        self.type_name(other)
                    ))),
                })
                .collect()
        };
        let size = ints(size, "size")?;
        let stride = ints(stride, "stride")?;
        let Some(info) = self.storages.get(storage.index) else {
            return Err(malformed("its storage is unknown".into()));
        };
        let Some(dtype) = dtype.or(info.dtype) else {
            return Ok(Tensor::Unsupported(format!(
                "its storage class {} does not say its dtype",
                info.class
            )));
        };
        Ok(Tensor::Strided {
            storage: *storage,
            dtype,
            offset,
            size,
            stride,
        })
    }

    /// Fill dict `d` from `items`: a dict, or a list or tuple of `(key, value)` pairs.
    fn fill_dict(&mut self, d: &Value, items: &Value, path: &str, at: usize) -> Run<()> {
        let pairs: Vec<(Value, Value)> = match self.object(items) {
            Some(Object::Dict(src)) => {
                self.copying(src.items.len(), path, at)?;
                src.items.clone()
            }
            Some(Object::Tuple(list) | Object::List(list)) => {
                self.copying(list.len(), path, at)?;
                let mut pairs = Vec::with_capacity(list.len());
                for item in list {
                    match self.object(item) {
                        Some(Object::Tuple(kv)) if kv.len() == 2 => {
                            pairs.push((kv[0].clone(), kv[1].clone()))
                        }
                        _ => {
                            return Err(bad(format!(
                                "malformed pickle: {path} at {} gets an item that is not a (key, value) pair",
                                self.place(at)
                            )))
                        }
                    }
                }
                pairs
            }
            _ => {
                return Err(bad(format!(
                    "malformed pickle: {path} at {} gets a {}, not its items",
                    self.place(at),
                    self.type_name(items)
                )))
            }
        };
        for (k, v) in pairs {
            self.set_item(d, k, v, super::opcodes::REDUCE, at)?;
        }
        Ok(())
    }

    /// Count `n` values copied into a new container by a call, within the machine's budget.
    fn copying(&self, n: usize, path: &str, at: usize) -> Run<()> {
        let copied = self.copied.get().saturating_add(n);
        self.copied.set(copied);
        if copied > MAX_COPIED {
            return Err(bad(format!(
                "the pickle copies more than {MAX_COPIED} values into new containers (a large one passed to {path} again and again, at {})",
                self.place(at)
            )));
        }
        Ok(())
    }

    /// The items of a tuple, list or set argument.
    fn sequence(&self, v: &Value, path: &str, at: usize) -> Run<Vec<Value>> {
        match self.object(v) {
            Some(Object::Tuple(items) | Object::List(items) | Object::Set(items)) => {
                self.copying(items.len(), path, at)?;
                Ok(items.clone())
            }
            _ => Err(bad(format!(
                "malformed pickle: {path} at {} gets a {}, not a sequence",
                self.place(at),
                self.type_name(v)
            ))),
        }
    }

    /// `_codecs.encode(s, encoding)`: how protocol 2 writes `bytes` (`latin1`).
    fn encode(&self, s: &str, encoding: &str, at: usize) -> Run<Value> {
        match encoding.to_ascii_lowercase().replace('_', "-").as_str() {
            "latin1" | "latin-1" | "iso-8859-1" => s
                .chars()
                .map(|c| u8::try_from(u32::from(c)).ok())
                .collect::<Option<Vec<u8>>>()
                .map(|b| Value::Bytes(Rc::from(b)))
                .ok_or_else(|| {
                    bad(format!(
                        "malformed pickle: _codecs.encode at {} gets characters beyond latin-1",
                        self.place(at)
                    ))
                }),
            "utf-8" | "utf8" | "ascii" => Ok(Value::Bytes(Rc::from(s.as_bytes()))),
            other => Err(bad(format!(
                "malformed pickle: _codecs.encode at {} uses encoding `{other}`",
                self.place(at)
            ))),
        }
    }
}
