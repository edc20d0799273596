//! The pickle machine: runs one pickle's opcodes ([`super::opcodes`]) over values that describe
//! Python objects without creating any, and returns the object the pickle ends with.
//!
//! **Nothing is executed.** `GLOBAL` only accepts names of the allow-list ([`super::allow`]);
//! `REDUCE` and `NEWOBJ` "call" such a name by emulating what it would build
//! ([`super::calls`]): `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, …)`
//! becomes a description of a strided view of a storage, `collections.OrderedDict()` an empty
//! dict. `BINPERSID` records a storage from its persistent id (`('storage', type, key,
//! location, numel)`) instead of loading it. An opcode torch's `weights_only` unpickler does
//! not run, a name off the list, a call with the wrong arguments: the whole pickle is refused,
//! and no partial object is returned.
//!
//! **Objects live in an arena** ([`Object`], addressed by index): the stack and the memo hold
//! small [`Value`]s, so `BINGET` of a large tuple or dict copies nothing, a container can be
//! filled after it was memoised (as pickles do: `EMPTY_DICT BINPUT MARK … SETITEMS`), and no
//! nesting depth reaches Rust's stack (objects are freed as one vector).
//!
//! **Everything is bounded.** A length field is compared with the bytes that remain before
//! anything is allocated; integers are kept when they fit 128 bits; the stack, the memo, the
//! marks and the pickle's size have limits with their own messages. An input that stops before
//! `STOP` asks for more bytes when the file holds them ([`Fault::NeedMore`]: the page supplies
//! a pickle in growing slices) and is a truncation error when it does not.

use super::allow::{self, Global};
use super::dtypes::TorchDtype;
use super::opcodes as op;
use std::collections::HashMap;
use std::rc::Rc;

/// The most values the stack holds.
pub(crate) const MAX_STACK: usize = 1 << 22;
/// The most memo entries.
pub(crate) const MAX_MEMO: usize = 1 << 22;
/// The most `MARK`s open at once.
pub(crate) const MAX_MARKS: usize = 1 << 16;
/// The largest pickle read (`data.pkl` of a large model is a few MB).
pub(crate) const MAX_PICKLE: u64 = 256 << 20;
/// The most values calls may copy into new containers (`set(list)`, `torch.Size(tuple)`,
/// `OrderedDict(pairs)`): a pickle could otherwise pass one large container again and again.
pub(crate) const MAX_COPIED: usize = 1 << 22;

/// Index of an object in [`Parsed::heap`].
pub(crate) type ObjId = usize;

/// A value on the stack, in the memo or in a container.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    None,
    Bool(bool),
    Int(i128),
    /// An integer that does not fit 128 bits (its value is not kept).
    BigInt,
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    /// An allow-listed global.
    Global(Rc<Global>),
    Obj(ObjId),
}

/// Which Python dict type a dict is (`BUILD` accepts only the last two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DictKind {
    Dict,
    OrderedDict,
    Counter,
}

/// A dict key compared as Python compares keys: `True == 1 == 1.0`, tuples by content, other
/// objects by identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    None,
    Int(i128),
    Float(u64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    Tuple(Vec<Key>),
    Global(String),
    Identity(ObjId),
}

/// A dict: its items in insertion order (a repeated key keeps its place and takes the new
/// value).
#[derive(Debug)]
pub(crate) struct Dict {
    pub kind: DictKind,
    pub items: Vec<(Value, Value)>,
    index: HashMap<Key, usize>,
}

impl Dict {
    pub(crate) fn new(kind: DictKind) -> Self {
        Dict {
            kind,
            items: Vec::new(),
            index: HashMap::new(),
        }
    }
}

/// What a storage's persistent id says (the first one of its key: later ids of the same key
/// reuse it, as torch's loader does).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StorageInfo {
    /// The storage's key: its record `data/<key>` in a zip, its place in a legacy file.
    pub key: String,
    /// The storage class as named (`torch.FloatStorage`).
    pub class: String,
    /// Its element dtype (`uint8` for `UntypedStorage`); `None` for `TypedStorage`, whose class
    /// does not say.
    pub dtype: Option<TorchDtype>,
    /// Elements of `dtype` (bytes for an untyped storage).
    pub numel: u64,
    pub location: String,
}

impl StorageInfo {
    /// Its size in bytes (`None` when the dtype is unknown or the size overflows).
    pub(crate) fn nbytes(&self) -> Option<u64> {
        self.numel.checked_mul(self.dtype?.itemsize as u64)
    }
}

/// A storage as a tensor sees it: storage `index` of [`Parsed::storages`], from byte
/// `byte_offset` on, `byte_len` bytes long (a legacy storage view) or to the storage's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StorageRef {
    pub index: usize,
    pub byte_offset: u64,
    pub byte_len: Option<u64>,
}

/// A tensor the pickle builds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tensor {
    /// A strided window of a storage (`offset`, `size` and `stride` in elements, as pickled).
    Strided {
        storage: StorageRef,
        dtype: TorchDtype,
        offset: i128,
        size: Vec<i128>,
        stride: Vec<i128>,
    },
    /// An empty tensor of a class (`NEWOBJ torch.FloatTensor`), until `BUILD` sets its data.
    Empty(TorchDtype),
    /// A tensor quantscope does not read, and why.
    Unsupported(String),
}

/// An object of the arena.
#[derive(Debug)]
pub(crate) enum Object {
    Tuple(Vec<Value>),
    List(Vec<Value>),
    Dict(Dict),
    Set(Vec<Value>),
    Storage(StorageRef),
    Tensor(Tensor),
    /// An instance of an allow-listed class quantscope does not model (`torch.device`, a
    /// complex number, …): a leaf, named by its class.
    Opaque(Rc<str>),
}

/// Why a run stopped without a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The input stops before the pickle does, and the file holds more bytes: supply more.
    NeedMore,
    /// The pickle is refused or malformed; the reason.
    Bad(String),
}

pub(crate) type Run<T> = Result<T, Fault>;

/// The bytes a pickle is run over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Input<'a> {
    /// The bytes available, from the pickle's first.
    pub data: &'a [u8],
    /// How many bytes the pickle may span: the member's size, or the bytes to the end of the
    /// file (at least `data.len()`).
    pub total: u64,
    /// Where `data` starts in the file or member named `what` (for messages).
    pub base: u64,
    /// The file or member, for messages (`data.pkl`, `the file`).
    pub what: &'a str,
    /// Whether the pickle runs to the end of the file (a legacy file) rather than of a member
    /// of known size: a length beyond the end then means a truncated file as likely as an
    /// oversized field.
    pub to_eof: bool,
}

/// A run's result: the object the pickle returns and everything it refers to.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub root: Value,
    pub heap: Vec<Object>,
    pub storages: Vec<StorageInfo>,
    /// Bytes the pickle spans, `STOP` included.
    pub len: usize,
}

/// The machine's state during a run.
pub(crate) struct Machine<'a> {
    pub(super) input: Input<'a>,
    pub(super) pos: usize,
    stack: Vec<Value>,
    /// Stack lengths at each open `MARK`.
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
    pub(super) heap: Vec<Object>,
    pub(super) storages: Vec<StorageInfo>,
    pub(super) storage_keys: HashMap<String, usize>,
    /// Values copied by calls so far (see [`MAX_COPIED`]).
    pub(super) copied: std::cell::Cell<usize>,
}

/// A refusal or malformation.
pub(crate) fn bad(reason: impl Into<String>) -> Fault {
    Fault::Bad(reason.into())
}

/// Run the pickle at the start of `input`.
pub(crate) fn run(input: Input<'_>) -> Run<Parsed> {
    Machine {
        input,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        heap: Vec::new(),
        storages: Vec::new(),
        storage_keys: HashMap::new(),
        copied: std::cell::Cell::new(0),
    }
    .execute()
}

impl<'a> Machine<'a> {
    /// Where byte `at` of the pickle is, for messages: `byte N of data.pkl`.
    pub(super) fn place(&self, at: usize) -> String {
        format!(
            "byte {} of {}",
            self.input.base.saturating_add(at as u64),
            self.input.what
        )
    }

    fn execute(mut self) -> Run<Parsed> {
        loop {
            let at = self.pos;
            if at as u64 > MAX_PICKLE {
                return Err(bad(format!(
                    "the pickle at byte {} of {} is longer than the {MAX_PICKLE} bytes quantscope reads",
                    self.input.base, self.input.what
                )));
            }
            let code = self.opcode()?;
            if !op::SUPPORTED.contains(&code) {
                return Err(bad(format!(
                    "unsupported pickle opcode {code:#04x} ({}) at {}",
                    op::name(code),
                    self.place(at)
                )));
            }
            match code {
                op::PROTO => {
                    self.fixed(1, code, at)?;
                }
                op::STOP => {
                    let root = self.pop(code, at)?;
                    return Ok(Parsed {
                        root,
                        heap: self.heap,
                        storages: self.storages,
                        len: self.pos,
                    });
                }
                op::GLOBAL => {
                    let module = self.line(code, at)?;
                    let name = self.line(code, at)?;
                    let global = allow::resolve(&module, &name).map_err(Fault::Bad)?;
                    self.push(Value::Global(Rc::new(global)), code, at)?;
                }
                op::REDUCE => {
                    let args = self.pop(code, at)?;
                    let func = self.top(code, at)?.clone();
                    let result = self.call(&func, &args, at)?;
                    self.set_top(result);
                }
                op::NEWOBJ => {
                    let args = self.pop(code, at)?;
                    let class = self.pop(code, at)?;
                    let result = self.new_object(&class, &args, at)?;
                    self.push(result, code, at)?;
                }
                op::BUILD => {
                    let state = self.pop(code, at)?;
                    let target = self.top(code, at)?.clone();
                    self.build(&target, &state, at)?;
                }
                op::APPEND => {
                    let item = self.pop(code, at)?;
                    let target = self.top(code, at)?.clone();
                    self.list_mut(&target, code, at)?.push(item);
                }
                op::APPENDS => {
                    let items = self.pop_mark(code, at)?;
                    let target = self.top(code, at)?.clone();
                    self.list_mut(&target, code, at)?.extend(items);
                }
                op::SETITEM => {
                    let value = self.pop(code, at)?;
                    let key = self.pop(code, at)?;
                    let target = self.top(code, at)?.clone();
                    self.set_item(&target, key, value, code, at)?;
                }
                op::SETITEMS => {
                    let items = self.pop_mark(code, at)?;
                    let target = self.top(code, at)?.clone();
                    if items.len() % 2 != 0 {
                        return Err(bad(format!(
                            "malformed pickle: SETITEMS at {} has {} items after its MARK, not key-value pairs",
                            self.place(at),
                            items.len()
                        )));
                    }
                    let mut items = items.into_iter();
                    while let (Some(k), Some(v)) = (items.next(), items.next()) {
                        self.set_item(&target, k, v, code, at)?;
                    }
                }
                op::MARK => {
                    if self.marks.len() >= MAX_MARKS {
                        return Err(bad(format!(
                            "the pickle opens more than {MAX_MARKS} MARKs at once (at {})",
                            self.place(at)
                        )));
                    }
                    self.marks.push(self.stack.len());
                }
                op::TUPLE => {
                    let items = self.pop_mark(code, at)?;
                    let t = self.alloc(Object::Tuple(items));
                    self.push(t, code, at)?;
                }
                op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                    let n = usize::from(code - op::TUPLE1) + 1;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop(code, at)?);
                    }
                    items.reverse();
                    let t = self.alloc(Object::Tuple(items));
                    self.push(t, code, at)?;
                }
                op::NONE => self.push(Value::None, code, at)?,
                op::NEWTRUE => self.push(Value::Bool(true), code, at)?,
                op::NEWFALSE => self.push(Value::Bool(false), code, at)?,
                op::EMPTY_TUPLE | op::EMPTY_LIST | op::EMPTY_DICT | op::EMPTY_SET => {
                    let o = match code {
                        op::EMPTY_TUPLE => Object::Tuple(Vec::new()),
                        op::EMPTY_LIST => Object::List(Vec::new()),
                        op::EMPTY_DICT => Object::Dict(Dict::new(DictKind::Dict)),
                        _ => Object::Set(Vec::new()),
                    };
                    let v = self.alloc(o);
                    self.push(v, code, at)?;
                }
                op::BININT => {
                    let b = self.fixed(4, code, at)?;
                    let v = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    self.push(Value::Int(i128::from(v)), code, at)?;
                }
                op::BININT1 => {
                    let b = self.fixed(1, code, at)?;
                    let v = b[0];
                    self.push(Value::Int(i128::from(v)), code, at)?;
                }
                op::BININT2 => {
                    let b = self.fixed(2, code, at)?;
                    let v = u16::from_le_bytes([b[0], b[1]]);
                    self.push(Value::Int(i128::from(v)), code, at)?;
                }
                op::LONG1 => {
                    let n = usize::from(self.fixed(1, code, at)?[0]);
                    let bytes = self.declared(n as u64, code, at)?;
                    let v = long(bytes);
                    self.push(v, code, at)?;
                }
                op::BINFLOAT => {
                    let b = self.fixed(8, code, at)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    self.push(Value::Float(f64::from_be_bytes(a)), code, at)?;
                }
                op::BINUNICODE => {
                    let b = self.fixed(4, code, at)?;
                    let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    let bytes = self.declared(u64::from(n), code, at)?;
                    let s = std::str::from_utf8(bytes).map_err(|e| {
                        bad(format!(
                            "malformed pickle: the BINUNICODE string at {} is not UTF-8 ({e})",
                            self.place(at)
                        ))
                    })?;
                    self.push(Value::Str(Rc::from(s)), code, at)?;
                }
                op::SHORT_BINSTRING => {
                    let n = self.fixed(1, code, at)?[0];
                    let bytes = self.declared(u64::from(n), code, at)?;
                    let v = match std::str::from_utf8(bytes) {
                        Ok(s) => Value::Str(Rc::from(s)),
                        Err(_) => Value::Bytes(Rc::from(bytes)),
                    };
                    self.push(v, code, at)?;
                }
                op::BINPERSID => {
                    let pid = self.pop(code, at)?;
                    let storage = self.persistent_load(&pid, at)?;
                    self.push(storage, code, at)?;
                }
                op::BINGET | op::LONG_BINGET => {
                    let index = self.memo_index(code, at)?;
                    let v = self.memo.get(&index).cloned().ok_or_else(|| {
                        bad(format!(
                            "malformed pickle: {} at {} reads memo entry {index}, which was never stored",
                            op::name(code),
                            self.place(at)
                        ))
                    })?;
                    self.push(v, code, at)?;
                }
                op::BINPUT | op::LONG_BINPUT => {
                    let index = self.memo_index(code, at)?;
                    let v = self.top(code, at)?.clone();
                    if self.memo.len() >= MAX_MEMO && !self.memo.contains_key(&index) {
                        return Err(bad(format!(
                            "the pickle's memo would hold more than {MAX_MEMO} entries (at {})",
                            self.place(at)
                        )));
                    }
                    self.memo.insert(index, v);
                }
                _ => {
                    return Err(bad(format!(
                        "unsupported pickle opcode {code:#04x} ({}) at {}",
                        op::name(code),
                        self.place(at)
                    )))
                }
            }
        }
    }

    /// The next opcode byte.
    fn opcode(&mut self) -> Run<u8> {
        match self.input.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None if (self.pos as u64) < self.input.total => Err(Fault::NeedMore),
            None => Err(bad(format!(
                "truncated pickle: {} ends at {} before the pickle's STOP opcode",
                self.input.what,
                self.place(self.pos)
            ))),
        }
    }

    /// The `n` bytes of a fixed-size argument of `code`.
    fn fixed(&mut self, n: usize, code: u8, at: usize) -> Run<&'a [u8]> {
        let end = self.pos.saturating_add(n);
        let data: &'a [u8] = self.input.data;
        if let Some(b) = data.get(self.pos..end) {
            self.pos = end;
            return Ok(b);
        }
        if (end as u64) <= self.input.total {
            return Err(Fault::NeedMore);
        }
        Err(bad(format!(
            "truncated pickle: {} at {} needs {n} argument bytes but {} ends {} bytes later",
            op::name(code),
            self.place(at),
            self.input.what,
            self.input.total.saturating_sub(self.pos as u64)
        )))
    }

    /// The `n` bytes a length field of `code` declares, checked against the bytes that remain
    /// before anything is read or allocated.
    fn declared(&mut self, n: u64, code: u8, at: usize) -> Run<&'a [u8]> {
        let remain = self.input.total.saturating_sub(self.pos as u64);
        if n > remain {
            let what = if self.input.to_eof {
                "truncated file or oversized length"
            } else {
                "oversized length"
            };
            return Err(bad(format!(
                "{what}: {} at {} declares {n} bytes but only {remain} remain in {}",
                op::name(code),
                self.place(at),
                self.input.what
            )));
        }
        let Some(n) = usize::try_from(n).ok().filter(|&n| n as u64 <= MAX_PICKLE) else {
            return Err(bad(format!(
                "oversized length: {} at {} declares {n} bytes, more than the {MAX_PICKLE} a pickle may hold",
                op::name(code),
                self.place(at)
            )));
        };
        let end = self.pos.saturating_add(n);
        let data: &'a [u8] = self.input.data;
        match data.get(self.pos..end) {
            Some(b) => {
                self.pos = end;
                Ok(b)
            }
            None => Err(Fault::NeedMore),
        }
    }

    /// A `GLOBAL` argument: one line, UTF-8, without its newline.
    fn line(&mut self, code: u8, at: usize) -> Run<String> {
        let rest = self.input.data.get(self.pos..).unwrap_or_default();
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            if (self.input.data.len() as u64) < self.input.total {
                return Err(Fault::NeedMore);
            }
            return Err(bad(format!(
                "truncated pickle: the {} at {} has no end of line before the end of {}",
                op::name(code),
                self.place(at),
                self.input.what
            )));
        };
        let text = std::str::from_utf8(&rest[..n]).map_err(|_| {
            bad(format!(
                "malformed pickle: the name in the GLOBAL at {} is not UTF-8",
                self.place(at)
            ))
        })?;
        let text = text.to_string();
        self.pos += n + 1;
        Ok(text)
    }

    fn memo_index(&mut self, code: u8, at: usize) -> Run<u32> {
        if matches!(code, op::BINGET | op::BINPUT) {
            Ok(u32::from(self.fixed(1, code, at)?[0]))
        } else {
            let b = self.fixed(4, code, at)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
    }

    /// The stack length below which the current `MARK` hides values.
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn underflow(&self, code: u8, at: usize) -> Fault {
        bad(format!(
            "malformed pickle: {} at {} finds the stack empty",
            op::name(code),
            self.place(at)
        ))
    }

    pub(super) fn push(&mut self, v: Value, code: u8, at: usize) -> Run<()> {
        if self.stack.len() >= MAX_STACK {
            return Err(bad(format!(
                "the pickle's stack would hold more than {MAX_STACK} values ({} at {})",
                op::name(code),
                self.place(at)
            )));
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self, code: u8, at: usize) -> Run<Value> {
        if self.stack.len() <= self.floor() {
            return Err(self.underflow(code, at));
        }
        self.stack.pop().ok_or_else(|| self.underflow(code, at))
    }

    fn top(&self, code: u8, at: usize) -> Run<&Value> {
        if self.stack.len() <= self.floor() {
            return Err(self.underflow(code, at));
        }
        self.stack.last().ok_or_else(|| self.underflow(code, at))
    }

    fn set_top(&mut self, v: Value) {
        if let Some(last) = self.stack.last_mut() {
            *last = v;
        }
    }

    /// The values pushed since the last `MARK`, which is closed.
    fn pop_mark(&mut self, code: u8, at: usize) -> Run<Vec<Value>> {
        let Some(mark) = self.marks.pop() else {
            return Err(bad(format!(
                "malformed pickle: {} at {} has no MARK to collect from",
                op::name(code),
                self.place(at)
            )));
        };
        Ok(self.stack.split_off(mark.min(self.stack.len())))
    }

    /// A new object of the arena (its count is bounded by the opcodes run).
    pub(super) fn alloc(&mut self, o: Object) -> Value {
        self.heap.push(o);
        Value::Obj(self.heap.len() - 1)
    }

    pub(super) fn object(&self, v: &Value) -> Option<&Object> {
        match v {
            Value::Obj(id) => self.heap.get(*id),
            _ => None,
        }
    }

    /// The Python type of `v`, for messages.
    pub(super) fn type_name(&self, v: &Value) -> String {
        match v {
            Value::None => "None".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) | Value::BigInt => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Str(_) => "str".into(),
            Value::Bytes(_) => "bytes".into(),
            Value::Global(g) => g.path.clone(),
            Value::Obj(_) => match self.object(v) {
                Some(Object::Tuple(_)) => "tuple".into(),
                Some(Object::List(_)) => "list".into(),
                Some(Object::Dict(d)) => match d.kind {
                    DictKind::Dict => "dict".into(),
                    DictKind::OrderedDict => "OrderedDict".into(),
                    DictKind::Counter => "Counter".into(),
                },
                Some(Object::Set(_)) => "set".into(),
                Some(Object::Storage(_)) => "storage".into(),
                Some(Object::Tensor(_)) => "tensor".into(),
                Some(Object::Opaque(class)) => class.to_string(),
                None => "?".into(),
            },
        }
    }

    fn list_mut(&mut self, target: &Value, code: u8, at: usize) -> Run<&mut Vec<Value>> {
        let kind = self.type_name(target);
        let place = self.place(at);
        match target {
            Value::Obj(id) => match self.heap.get_mut(*id) {
                Some(Object::List(items)) => Ok(items),
                _ => Err(bad(format!(
                    "refused: {} at {place} appends to a {kind}; only lists accept it",
                    op::name(code)
                ))),
            },
            _ => Err(bad(format!(
                "refused: {} at {place} appends to a {kind}; only lists accept it",
                op::name(code)
            ))),
        }
    }

    pub(super) fn set_item(
        &mut self,
        target: &Value,
        k: Value,
        v: Value,
        code: u8,
        at: usize,
    ) -> Run<()> {
        let key = self.key(&k, 0).map_err(|why| {
            bad(format!(
                "malformed pickle: {} at {}: {why}",
                op::name(code),
                self.place(at)
            ))
        })?;
        let kind = self.type_name(target);
        let place = self.place(at);
        let dict = match target {
            Value::Obj(id) => match self.heap.get_mut(*id) {
                Some(Object::Dict(d)) => Some(d),
                _ => None,
            },
            _ => None,
        };
        let Some(dict) = dict else {
            return Err(bad(format!(
                "refused: {} at {place} sets an item of a {kind}; only dict, OrderedDict and Counter accept it",
                op::name(code)
            )));
        };
        match dict.index.get(&key) {
            Some(&i) => {
                if let Some(slot) = dict.items.get_mut(i) {
                    slot.1 = v;
                }
            }
            None => {
                dict.index.insert(key, dict.items.len());
                dict.items.push((k, v));
            }
        }
        Ok(())
    }

    /// The dict key of `v`, or why `v` cannot be one.
    fn key(&self, v: &Value, depth: usize) -> Result<Key, String> {
        const MAX_KEY_DEPTH: usize = 16;
        const MAX_KEY_ITEMS: usize = 256;
        Ok(match v {
            Value::None => Key::None,
            Value::Bool(b) => Key::Int(i128::from(*b)),
            Value::Int(i) => Key::Int(*i),
            Value::BigInt => return Err("a dict key is an integer beyond 128 bits".into()),
            Value::Float(f) => {
                if f.fract() == 0.0 && f.abs() < 1e38 {
                    Key::Int(*f as i128)
                } else {
                    Key::Float(f.to_bits())
                }
            }
            Value::Str(s) => Key::Str(s.clone()),
            Value::Bytes(b) => Key::Bytes(b.clone()),
            Value::Global(g) => Key::Global(g.path.clone()),
            Value::Obj(id) => match self.heap.get(*id) {
                Some(Object::Tuple(items)) => {
                    if depth >= MAX_KEY_DEPTH || items.len() > MAX_KEY_ITEMS {
                        return Err("a tuple dict key is nested too deeply or too long".into());
                    }
                    Key::Tuple(
                        items
                            .iter()
                            .map(|i| self.key(i, depth + 1))
                            .collect::<Result<_, _>>()?,
                    )
                }
                Some(Object::List(_) | Object::Dict(_) | Object::Set(_)) => {
                    return Err(format!(
                        "a dict key is a {}, which is unhashable",
                        self.type_name(v)
                    ))
                }
                _ => Key::Identity(*id),
            },
        })
    }
}

/// The value of a `LONG1` argument: little-endian two's complement.
fn long(bytes: &[u8]) -> Value {
    let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
    if bytes.len() > 16 {
        // Wider than 128 bits: it still fits when the extra bytes only extend the sign.
        let fill = if negative { 0xff } else { 0 };
        let fits = bytes[16..].iter().all(|&b| b == fill) && (bytes[15] & 0x80 != 0) == negative;
        if !fits {
            return Value::BigInt;
        }
    }
    let mut a = [if negative { 0xff } else { 0 }; 16];
    for (d, s) in a.iter_mut().zip(bytes) {
        *d = *s;
    }
    Value::Int(i128::from_le_bytes(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_all(data: &[u8]) -> Run<Parsed> {
        run(Input {
            data,
            total: data.len() as u64,
            base: 0,
            what: "data.pkl",
            to_eof: false,
        })
    }

    fn err(data: &[u8]) -> String {
        match run_all(data) {
            Err(Fault::Bad(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn longs() {
        assert!(matches!(long(&[]), Value::Int(0)));
        assert!(matches!(long(&[0xfb]), Value::Int(-5)));
        assert!(matches!(long(&[0x03, 0, 0, 0, 0, 1]), Value::Int(v) if v == (1 << 40) + 3));
        let magic = [0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];
        assert!(matches!(long(&magic), Value::Int(v) if v == 0x1950a86a20f9469cfc6c));
        let mut wide = vec![0u8; 20];
        wide[3] = 1;
        assert!(matches!(long(&wide), Value::Int(v) if v == 1 << 24));
        wide[18] = 1;
        assert!(matches!(long(&wide), Value::BigInt));
    }

    #[test]
    fn refusals_and_malformations() {
        assert_eq!(
            err(b"\x80\x02cos\nsystem\nX\x0b\x00\x00\x00touch PWNED\x85R."),
            "refused: the pickle calls os.system, which is not on the allow-list (no code is executed)"
        );
        assert_eq!(
            err(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00N."),
            "unsupported pickle opcode 0x95 (FRAME) at byte 2 of data.pkl"
        );
        assert_eq!(
            err(b"\xff"),
            "unsupported pickle opcode 0xff (not a pickle opcode) at byte 0 of data.pkl"
        );
        assert!(err(b"X\xff\xff\xff\x7fab").starts_with(
            "oversized length: BINUNICODE at byte 0 of data.pkl declares 2147483647 bytes but only 2 remain"
        ));
        assert!(err(b"N").starts_with("truncated pickle: data.pkl ends at byte 1"));
        assert!(err(b"J\x01\x02").starts_with("truncated pickle: BININT at byte 0"));
        assert!(err(b".").contains("stack empty"));
        assert!(err(b"(.").contains("stack empty"));
        assert!(err(b"h\x05.").contains("memo entry 5"));
        assert!(err(b"NK\x01a.").contains("appends to a None"));
        assert!(err(b"]N\x85K\x01s.").contains("sets an item of a list"));
        assert!(err(b"}]K\x01s.").contains("unhashable"));
        assert!(err(b"e.").contains("no MARK"));
        assert!(err(b"cposix\nsystem\n.").contains("posix.system"));
    }

    #[test]
    fn containers_share_through_the_memo() {
        // d = {}; d['a'] = [1]; d['b'] = the same list, then 2 appended to it.
        let p =
            b"\x80\x02}q\x00(X\x01\x00\x00\x00a]q\x01K\x01aX\x01\x00\x00\x00bh\x01uh\x01K\x02a0.";
        // `0` (POP) is not supported: the same program without it leaves the list on top.
        assert!(err(p).contains("0x30 (POP)"));
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00a]q\x01K\x01aX\x01\x00\x00\x00bh\x01u.";
        let parsed = run_all(p).unwrap();
        let Value::Obj(root) = parsed.root else {
            panic!()
        };
        let Object::Dict(d) = &parsed.heap[root] else {
            panic!()
        };
        assert_eq!(d.items.len(), 2);
        assert!(matches!((&d.items[0].1, &d.items[1].1), (Value::Obj(a), Value::Obj(b)) if a == b));
        // A repeated key keeps its place and takes the new value; True and 1 are one key.
        let p = b"}(K\x01K\x0aX\x01\x00\x00\x00zK\x0b\x88K\x0cu.";
        let parsed = run_all(p).unwrap();
        let Object::Dict(d) = &parsed.heap[0] else {
            panic!()
        };
        assert_eq!(d.items.len(), 2);
        assert!(matches!(d.items[0].1, Value::Int(12)));
    }

    #[test]
    fn calls_are_bounded() {
        // More arguments than any allow-listed callable takes.
        let mut p = b"ccollections\nOrderedDict\n(".to_vec();
        p.extend([b'N'; 9]);
        p.extend(b"tR.");
        assert!(err(&p).contains("no allow-listed callable takes more than 8"));
        // One large list passed to set() again and again.
        let mut p = b"c__builtin__\nset\nq\x00](".to_vec();
        p.extend([b'N'; 1000]);
        p.extend(b"eq\x01");
        for _ in 0..5000 {
            p.extend(b"h\x00h\x01\x85R");
        }
        p.push(b'.');
        assert!(err(&p).contains("copies more than 4194304 values"));
        // A tensor of 65 dimensions.
        let mut p = b"ctorch._utils\n_rebuild_tensor\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQK\x00(".to_vec();
        p.extend([b'N'; 65]);
        p.extend(b"t)tR.");
        assert!(
            err(&p).contains("65 dimensions, more than 64"),
            "{}",
            err(&p)
        );
    }

    #[test]
    fn a_short_input_asks_for_more() {
        let p = b"\x80\x02X\x03\x00\x00\x00abc.";
        for cut in 0..p.len() {
            let r = run(Input {
                data: &p[..cut],
                total: p.len() as u64,
                base: 0,
                what: "the file",
                to_eof: true,
            });
            assert_eq!(r.err(), Some(Fault::NeedMore), "{cut}");
        }
    }
}
