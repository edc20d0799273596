//! Pickle opcodes: every opcode of protocols 0–5 by byte and name (for messages), and the ones
//! the machine runs — exactly those torch's `weights_only` unpickler runs.
//!
//! A pickle is a program for a stack machine: each opcode is one byte, some followed by an
//! argument (a fixed-width integer, a length-prefixed string, a newline-terminated line), and
//! the program ends at `STOP`, which returns the top of the stack. `MARK` pushes a marker that
//! `TUPLE`, `APPENDS` and `SETITEMS` collect up to; `BINPUT`/`BINGET` store and fetch stack
//! values in the memo (how one object is referenced twice); `GLOBAL` names a class or function
//! ([`super::allow`]), `REDUCE`/`NEWOBJ` call it and `BUILD` sets an object's state;
//! `BINPERSID` asks the loader for a persistent object (in PyTorch, a storage).

pub(crate) const MARK: u8 = b'(';
pub(crate) const STOP: u8 = b'.';
pub(crate) const BININT: u8 = b'J';
pub(crate) const BININT1: u8 = b'K';
pub(crate) const BININT2: u8 = b'M';
pub(crate) const NONE: u8 = b'N';
pub(crate) const BINPERSID: u8 = b'Q';
pub(crate) const REDUCE: u8 = b'R';
pub(crate) const SHORT_BINSTRING: u8 = b'U';
pub(crate) const BINUNICODE: u8 = b'X';
pub(crate) const APPEND: u8 = b'a';
pub(crate) const BUILD: u8 = b'b';
pub(crate) const GLOBAL: u8 = b'c';
pub(crate) const EMPTY_DICT: u8 = b'}';
pub(crate) const APPENDS: u8 = b'e';
pub(crate) const BINGET: u8 = b'h';
pub(crate) const LONG_BINGET: u8 = b'j';
pub(crate) const EMPTY_LIST: u8 = b']';
pub(crate) const BINPUT: u8 = b'q';
pub(crate) const LONG_BINPUT: u8 = b'r';
pub(crate) const SETITEM: u8 = b's';
pub(crate) const TUPLE: u8 = b't';
pub(crate) const EMPTY_TUPLE: u8 = b')';
pub(crate) const SETITEMS: u8 = b'u';
pub(crate) const BINFLOAT: u8 = b'G';
pub(crate) const PROTO: u8 = 0x80;
pub(crate) const NEWOBJ: u8 = 0x81;
pub(crate) const TUPLE1: u8 = 0x85;
pub(crate) const TUPLE2: u8 = 0x86;
pub(crate) const TUPLE3: u8 = 0x87;
pub(crate) const NEWTRUE: u8 = 0x88;
pub(crate) const NEWFALSE: u8 = 0x89;
pub(crate) const LONG1: u8 = 0x8a;
pub(crate) const EMPTY_SET: u8 = 0x8f;

/// Every pickle opcode, by byte.
const NAMES: &[(u8, &str)] = &[
    (b'(', "MARK"),
    (b'.', "STOP"),
    (b'0', "POP"),
    (b'1', "POP_MARK"),
    (b'2', "DUP"),
    (b'F', "FLOAT"),
    (b'I', "INT"),
    (b'J', "BININT"),
    (b'K', "BININT1"),
    (b'L', "LONG"),
    (b'M', "BININT2"),
    (b'N', "NONE"),
    (b'P', "PERSID"),
    (b'Q', "BINPERSID"),
    (b'R', "REDUCE"),
    (b'S', "STRING"),
    (b'T', "BINSTRING"),
    (b'U', "SHORT_BINSTRING"),
    (b'V', "UNICODE"),
    (b'X', "BINUNICODE"),
    (b'a', "APPEND"),
    (b'b', "BUILD"),
    (b'c', "GLOBAL"),
    (b'd', "DICT"),
    (b'}', "EMPTY_DICT"),
    (b'e', "APPENDS"),
    (b'g', "GET"),
    (b'h', "BINGET"),
    (b'i', "INST"),
    (b'j', "LONG_BINGET"),
    (b'l', "LIST"),
    (b']', "EMPTY_LIST"),
    (b'o', "OBJ"),
    (b'p', "PUT"),
    (b'q', "BINPUT"),
    (b'r', "LONG_BINPUT"),
    (b's', "SETITEM"),
    (b't', "TUPLE"),
    (b')', "EMPTY_TUPLE"),
    (b'u', "SETITEMS"),
    (b'G', "BINFLOAT"),
    (0x80, "PROTO"),
    (0x81, "NEWOBJ"),
    (0x82, "EXT1"),
    (0x83, "EXT2"),
    (0x84, "EXT4"),
    (0x85, "TUPLE1"),
    (0x86, "TUPLE2"),
    (0x87, "TUPLE3"),
    (0x88, "NEWTRUE"),
    (0x89, "NEWFALSE"),
    (0x8a, "LONG1"),
    (0x8b, "LONG4"),
    (b'B', "BINBYTES"),
    (b'C', "SHORT_BINBYTES"),
    (0x8c, "SHORT_BINUNICODE"),
    (0x8d, "BINUNICODE8"),
    (0x8e, "BINBYTES8"),
    (0x8f, "EMPTY_SET"),
    (0x90, "ADDITEMS"),
    (0x91, "FROZENSET"),
    (0x92, "NEWOBJ_EX"),
    (0x93, "STACK_GLOBAL"),
    (0x94, "MEMOIZE"),
    (0x95, "FRAME"),
    (0x96, "BYTEARRAY8"),
    (0x97, "NEXT_BUFFER"),
    (0x98, "READONLY_BUFFER"),
];

/// The opcodes the machine runs (torch 2.15's `weights_only` list).
pub(crate) const SUPPORTED: &[u8] = &[
    PROTO,
    STOP,
    GLOBAL,
    REDUCE,
    NEWOBJ,
    BUILD,
    APPEND,
    APPENDS,
    SETITEM,
    SETITEMS,
    MARK,
    TUPLE,
    TUPLE1,
    TUPLE2,
    TUPLE3,
    NONE,
    NEWTRUE,
    NEWFALSE,
    EMPTY_TUPLE,
    EMPTY_LIST,
    EMPTY_DICT,
    EMPTY_SET,
    BININT,
    BININT1,
    BININT2,
    LONG1,
    BINFLOAT,
    BINUNICODE,
    SHORT_BINSTRING,
    BINPERSID,
    BINGET,
    LONG_BINGET,
    BINPUT,
    LONG_BINPUT,
];

/// The name of opcode `op`, or `not a pickle opcode`.
pub(crate) fn name(op: u8) -> &'static str {
    NAMES
        .iter()
        .find(|(b, _)| *b == op)
        .map_or("not a pickle opcode", |(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_supported_ones_named() {
        for (i, (b, _)) in NAMES.iter().enumerate() {
            assert!(NAMES[i + 1..].iter().all(|(c, _)| c != b), "{b:#x}");
        }
        for op in SUPPORTED {
            assert_ne!(name(*op), "not a pickle opcode");
        }
        assert_eq!(name(0x95), "FRAME");
        assert_eq!(name(0xff), "not a pickle opcode");
        assert_eq!(SUPPORTED.len(), 34);
    }
}
