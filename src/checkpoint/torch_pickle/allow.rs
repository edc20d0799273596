//! The allow-list: which `GLOBAL`s a pickle may name, exactly what torch 2.15's
//! `torch.load(weights_only=True)` accepts by default, and nothing more.
//!
//! A `GLOBAL module name` opcode names a Python object (a class or function) that later opcodes
//! call. Python's own `pickle` imports it, which is how a pickle runs arbitrary code
//! (`os.system`, `subprocess.Popen`, any class's `__reduce__`). quantscope imports nothing: a
//! name is looked up in this fixed list and becomes a [`Global`], a description of what the
//! pickle may do with it, which the machine emulates ([`super::vm`]). Any other name refuses the
//! whole file, with the name in the message.
//!
//! Protocol 2, which `torch.save` writes, spells some modules as Python 2 did (`__builtin__`,
//! `copy_reg`, even `commands.check_call` for `subprocess.check_call`). Names are mapped to their
//! Python 3 spelling first, as Python's `_compat_pickle` tables do, and the mapped name is what
//! is checked and reported. Modules `sys`, `os`, `posix` and `nt` are refused whatever follows.
//!
//! Allowed: `collections.OrderedDict` and `Counter`, `torch.nn.parameter.Parameter`,
//! `torch.serialization._get_layout`, `torch.Size`, `torch.Tensor`, `torch.device`,
//! `_codecs.encode`, `builtins.bytearray`, `set` and `complex`; every dtype (`torch.float32`, …,
//! `torch.uint1`–`uint7`, `torch.int1`–`int7`); the tensor classes (`torch.FloatTensor`,
//! `torch.cuda.HalfTensor`, …); the storage classes (`torch.FloatStorage`, …,
//! `torch.storage.TypedStorage`, `torch.storage.UntypedStorage`); the quantization schemes; the
//! rebuild functions of `torch._utils` (`_rebuild_tensor`, `_v2`, `_v3`, `_rebuild_parameter`,
//! `_with_state`, `_rebuild_qtensor`, `_rebuild_sparse_tensor`,
//! `_rebuild_meta_tensor_no_storage`, `_rebuild_wrapper_subclass`,
//! `_rebuild_device_tensor_from_numpy`, `_from_cpu_tensor`) and
//! `torch._tensor._rebuild_from_type_v2`. Not `torch.storage._load_from_bytes` (what a plain
//! `pickle.dumps(tensor)` writes), no `torch.nn` module class, nothing else.

use super::dtypes::{self, TorchDtype};

/// The functions of `torch._utils` that rebuild a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rebuild {
    Tensor,
    TensorV2,
    TensorV3,
    Parameter,
    ParameterWithState,
    QTensor,
    SparseTensor,
    MetaTensorNoStorage,
    WrapperSubclass,
    DeviceTensorFromNumpy,
    DeviceTensorFromCpuTensor,
}

const REBUILDS: &[(&str, Rebuild)] = &[
    ("_rebuild_tensor", Rebuild::Tensor),
    ("_rebuild_tensor_v2", Rebuild::TensorV2),
    ("_rebuild_tensor_v3", Rebuild::TensorV3),
    ("_rebuild_parameter", Rebuild::Parameter),
    ("_rebuild_parameter_with_state", Rebuild::ParameterWithState),
    ("_rebuild_qtensor", Rebuild::QTensor),
    ("_rebuild_sparse_tensor", Rebuild::SparseTensor),
    (
        "_rebuild_meta_tensor_no_storage",
        Rebuild::MetaTensorNoStorage,
    ),
    ("_rebuild_wrapper_subclass", Rebuild::WrapperSubclass),
    (
        "_rebuild_device_tensor_from_numpy",
        Rebuild::DeviceTensorFromNumpy,
    ),
    (
        "_rebuild_device_tensor_from_cpu_tensor",
        Rebuild::DeviceTensorFromCpuTensor,
    ),
];

/// What an allow-listed global is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GlobalKind {
    OrderedDict,
    Counter,
    Parameter,
    GetLayout,
    Size,
    Tensor,
    Device,
    CodecsEncode,
    Bytearray,
    Set,
    Complex,
    Dtype(TorchDtype),
    /// `torch.FloatTensor`, `torch.cuda.HalfTensor`, …
    TensorClass(TorchDtype),
    /// `torch.FloatStorage`, … : storages of this dtype.
    LegacyStorage(TorchDtype),
    /// `torch.storage.TypedStorage`: a storage whose dtype the class does not say.
    TypedStorage,
    /// `torch.storage.UntypedStorage`: bytes.
    UntypedStorage,
    QScheme,
    Rebuild(Rebuild),
    RebuildFromTypeV2,
}

/// An allow-listed global: its (mapped) dotted name and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Global {
    pub path: String,
    pub kind: GlobalKind,
}

/// Python 2 modules renamed in Python 3 (the module part of `_compat_pickle`'s mapping).
const MODULES: &[(&str, &str)] = &[
    ("__builtin__", "builtins"),
    ("exceptions", "builtins"),
    ("copy_reg", "copyreg"),
    ("commands", "subprocess"),
    ("cPickle", "pickle"),
    ("cStringIO", "io"),
    ("StringIO", "io"),
    ("UserDict", "collections"),
    ("UserList", "collections"),
    ("UserString", "collections"),
    ("Queue", "queue"),
    ("SocketServer", "socketserver"),
    ("ConfigParser", "configparser"),
    ("repr", "reprlib"),
    ("urlparse", "urllib.parse"),
    ("robotparser", "urllib.robotparser"),
    ("httplib", "http.client"),
    ("htmlentitydefs", "html.entities"),
    ("HTMLParser", "html.parser"),
    ("Cookie", "http.cookies"),
    ("cookielib", "http.cookiejar"),
    ("BaseHTTPServer", "http.server"),
    ("SimpleHTTPServer", "http.server"),
    ("CGIHTTPServer", "http.server"),
    ("xmlrpclib", "xmlrpc.client"),
    ("SimpleXMLRPCServer", "xmlrpc.server"),
    ("DocXMLRPCServer", "xmlrpc.server"),
    ("thread", "_thread"),
    ("dummy_thread", "_dummy_thread"),
    ("_winreg", "winreg"),
    ("anydbm", "dbm"),
    ("whichdb", "dbm"),
    ("dbhash", "dbm.bsd"),
    ("dumbdbm", "dbm.dumb"),
    ("dbm", "dbm.ndbm"),
    ("gdbm", "dbm.gnu"),
    ("Tkinter", "tkinter"),
    ("markupbase", "_markupbase"),
    ("_abcoll", "collections.abc"),
    ("future_builtins", "builtins"),
];

/// A `(module, name)` pair.
type Name = (&'static str, &'static str);

/// Python 2 names whose module and name both changed (checked before [`MODULES`]).
const NAMES: &[(Name, Name)] = &[
    (("__builtin__", "xrange"), ("builtins", "range")),
    (("__builtin__", "reduce"), ("functools", "reduce")),
    (("__builtin__", "intern"), ("sys", "intern")),
    (("__builtin__", "unichr"), ("builtins", "chr")),
    (("__builtin__", "unicode"), ("builtins", "str")),
    (("__builtin__", "long"), ("builtins", "int")),
    (("__builtin__", "basestring"), ("builtins", "str")),
    (("__builtin__", "raw_input"), ("builtins", "input")),
    (("__builtin__", "execfile"), ("builtins", "exec")),
    (("itertools", "izip"), ("builtins", "zip")),
    (("itertools", "imap"), ("builtins", "map")),
    (("itertools", "ifilter"), ("builtins", "filter")),
    (("itertools", "ifilterfalse"), ("itertools", "filterfalse")),
    (("itertools", "izip_longest"), ("itertools", "zip_longest")),
    (
        ("UserDict", "IterableUserDict"),
        ("collections", "UserDict"),
    ),
    (("UserList", "UserList"), ("collections", "UserList")),
    (("UserString", "UserString"), ("collections", "UserString")),
    (("whichdb", "whichdb"), ("dbm", "whichdb")),
    (("_socket", "fromfd"), ("socket", "fromfd")),
    (
        ("_multiprocessing", "Connection"),
        ("multiprocessing.connection", "Connection"),
    ),
    (
        ("multiprocessing.process", "Process"),
        ("multiprocessing.context", "Process"),
    ),
    (
        ("multiprocessing.forking", "Popen"),
        ("multiprocessing.popen_fork", "Popen"),
    ),
    (("urllib", "urlopen"), ("urllib.request", "urlopen")),
    (("urllib", "urlretrieve"), ("urllib.request", "urlretrieve")),
    (("urllib", "urlencode"), ("urllib.parse", "urlencode")),
    (("urllib", "quote"), ("urllib.parse", "quote")),
    (("urllib", "unquote"), ("urllib.parse", "unquote")),
    (("urllib2", "urlopen"), ("urllib.request", "urlopen")),
    (("urllib2", "Request"), ("urllib.request", "Request")),
    (("exceptions", "StandardError"), ("builtins", "Exception")),
    (("socket", "_socketobject"), ("socket", "SocketType")),
];

/// Modules refused whatever the name (as torch refuses them even when a user allow-lists).
const BLOCKED_MODULES: &[&str] = &["sys", "os", "posix", "nt"];

/// `module.name` as Python 3 spells it.
pub(crate) fn python3_name(module: &str, name: &str) -> (String, String) {
    if let Some((_, (m, n))) = NAMES.iter().find(|((m, n), _)| *m == module && *n == name) {
        return (m.to_string(), n.to_string());
    }
    if let Some((_, m)) = MODULES.iter().find(|(m, _)| *m == module) {
        return (m.to_string(), name.to_string());
    }
    (module.to_string(), name.to_string())
}

/// The refusal of a global that is not allow-listed.
pub(crate) fn refusal(path: &str, module: &str) -> String {
    let mut message = format!(
        "refused: the pickle calls {path}, which is not on the allow-list (no code is executed)"
    );
    if module == "__main__" || module.starts_with("torch.nn.") {
        message.push_str(
            "; a whole pickled model (`torch.save(model)`) cannot be read without running its code: save `model.state_dict()` instead",
        );
    }
    message
}

/// The global `module.name` (as a `GLOBAL` opcode spells it): allow-listed, or the refusal.
pub(crate) fn resolve(module: &str, name: &str) -> Result<Global, String> {
    let (module, name) = python3_name(module, name);
    let path = format!("{module}.{name}");
    if BLOCKED_MODULES.contains(&module.as_str()) {
        return Err(refusal(&path, &module));
    }
    let kind = kind_of(&module, &name).ok_or_else(|| refusal(&path, &module))?;
    Ok(Global { path, kind })
}

fn kind_of(module: &str, name: &str) -> Option<GlobalKind> {
    use GlobalKind as K;
    Some(match (module, name) {
        ("collections", "OrderedDict") => K::OrderedDict,
        ("collections", "Counter") => K::Counter,
        ("torch.nn.parameter", "Parameter") => K::Parameter,
        ("torch.serialization", "_get_layout") => K::GetLayout,
        ("torch", "Size") => K::Size,
        ("torch", "Tensor") => K::Tensor,
        ("torch", "device") => K::Device,
        ("_codecs", "encode") => K::CodecsEncode,
        ("builtins", "bytearray") => K::Bytearray,
        ("builtins", "set") => K::Set,
        ("builtins", "complex") => K::Complex,
        ("torch.storage", "TypedStorage") => K::TypedStorage,
        ("torch.storage", "UntypedStorage") => K::UntypedStorage,
        ("torch._tensor", "_rebuild_from_type_v2") => K::RebuildFromTypeV2,
        (
            "torch",
            "per_tensor_affine"
            | "per_tensor_symmetric"
            | "per_channel_affine"
            | "per_channel_symmetric"
            | "per_channel_affine_float_qparams",
        ) => K::QScheme,
        ("torch._utils", f) => K::Rebuild(REBUILDS.iter().find(|(n, _)| *n == f)?.1),
        ("torch", n) => {
            if let Some(d) = dtypes::dtype_named(n) {
                K::Dtype(d)
            } else if let Some(d) = dtypes::storage_class(n) {
                K::LegacyStorage(d)
            } else {
                K::TensorClass(dtypes::tensor_class(n)?)
            }
        }
        ("torch.cuda" | "torch.sparse" | "torch.cuda.sparse", n) => {
            K::TensorClass(dtypes::tensor_class(n)?)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python2_names_are_mapped_before_the_check() {
        assert_eq!(resolve("__builtin__", "set").unwrap().kind, GlobalKind::Set);
        assert_eq!(
            resolve("collections", "OrderedDict").unwrap().kind,
            GlobalKind::OrderedDict
        );
        let e = resolve("commands", "check_call").unwrap_err();
        assert!(e.contains("subprocess.check_call"), "{e}");
        let e = resolve("__builtin__", "intern").unwrap_err();
        assert!(e.contains("sys.intern"), "{e}");
        let e = resolve("__builtin__", "eval").unwrap_err();
        assert!(e.contains("builtins.eval"), "{e}");
        assert_eq!(
            resolve("os", "system").unwrap_err(),
            "refused: the pickle calls os.system, which is not on the allow-list (no code is executed)"
        );
        let e = resolve("__main__", "Net").unwrap_err();
        assert!(e.contains("state_dict()"), "{e}");
        assert!(resolve("torch.nn.modules.linear", "Linear").is_err());
        assert!(resolve("torch.storage", "_load_from_bytes").is_err());
        assert!(resolve("torch._utils", "_rebuild_evil").is_err());
        assert!(resolve("torch", "load").is_err());
    }

    #[test]
    fn torch_names() {
        let k = |m: &str, n: &str| resolve(m, n).map(|g| g.kind);
        assert!(
            matches!(k("torch", "FloatStorage"), Ok(GlobalKind::LegacyStorage(d)) if d.name == "float32")
        );
        assert!(matches!(k("torch", "bfloat16"), Ok(GlobalKind::Dtype(d)) if d.itemsize == 2));
        assert!(matches!(
            k("torch.cuda", "HalfTensor"),
            Ok(GlobalKind::TensorClass(_))
        ));
        assert!(matches!(
            k("torch._utils", "_rebuild_tensor_v2"),
            Ok(GlobalKind::Rebuild(Rebuild::TensorV2))
        ));
        assert_eq!(k("torch", "per_channel_affine"), Ok(GlobalKind::QScheme));
        assert_eq!(
            k("torch.storage", "UntypedStorage"),
            Ok(GlobalKind::UntypedStorage)
        );
        assert!(k("torch.cuda", "FloatStorage").is_err());
    }
}
