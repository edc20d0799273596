//! A tensor of the pickle as a catalogue [`Entry`]: where its elements lie in the file.
//!
//! A tensor is a view of a storage: `storage_offset`, `size` and `stride`, all in elements of
//! the tensor's dtype. The view is checked before anything is built: sizes, strides and the
//! offset non-negative, and the last element it reaches, `offset + Σ(size−1)·stride`, inside the
//! storage (a zero-size tensor needs no data). A **contiguous** view (C-order strides, ignoring
//! dimensions of size 1) is a plain byte range of the storage ([`Storage::Plain`]): read as it lies
//! natively, one `File.slice` in the page, no gather. Any other view (a transpose, a column slice,
//! every other row, a stride-0 `expand`) is [`Storage::Strided`]: its range spans the storage from
//! the view's first element to its last, and reading gathers the elements. Tensors that share a
//! storage get ranges of the same bytes; nothing is copied per tensor.
//!
//! Whatever stops one tensor (its storage's record missing, compressed or the wrong size, an
//! unsupported dtype, a view out of its storage) is that tensor's [`Entry::problem`].

use super::vm::{StorageInfo, Tensor};
use super::walk::Named;
use crate::checkpoint::{shape_text, Entry, EntryDType, Storage};
use crate::tensor::{element_count, ByteOrder};

/// A strided view may repeat its stored elements at most this many times when it has more than
/// [`MAX_REPEATED`] elements (a stride-0 view of one element could otherwise claim terabytes).
pub(crate) const MAX_REPEAT: u128 = 64;
/// Views of at most this many elements may repeat their elements any number of times.
pub(crate) const MAX_REPEATED: u128 = 1 << 24;

/// Where one storage's bytes lie in the file, or why they cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Located {
    /// File offset of the storage's first byte.
    pub start: u64,
    /// Bytes the storage holds there.
    pub nbytes: u64,
    pub order: ByteOrder,
    pub problem: Option<String>,
}

impl Located {
    pub(crate) fn failed(problem: String) -> Self {
        Located {
            start: 0,
            nbytes: 0,
            order: ByteOrder::Little,
            problem: Some(problem),
        }
    }
}

/// The entry of one named tensor; `storages[i]` is located at `located[i]`.
pub(crate) fn entry(named: &Named<'_>, storages: &[StorageInfo], located: &[Located]) -> Entry {
    let unknown = || EntryDType::Foreign("?".into());
    let (r, dtype, offset, size, stride) = match named.tensor {
        Tensor::Strided {
            storage,
            dtype,
            offset,
            size,
            stride,
        } => (storage, dtype, *offset, size, stride),
        Tensor::Empty(_) => {
            return Entry::unreadable(
                named.name.clone(),
                unknown(),
                "an empty tensor whose data the pickle never sets".into(),
            )
        }
        Tensor::Unsupported(why) => {
            return Entry::unreadable(named.name.clone(), unknown(), why.clone())
        }
    };
    let mut e = Entry::unreadable(
        named.name.clone(),
        match dtype.dtype {
            Some(d) => EntryDType::Known(d),
            None => EntryDType::Foreign(dtype.name.to_string()),
        },
        String::new(),
    );
    e.problem = None;
    let Some(shape) = size
        .iter()
        .map(|&n| usize::try_from(n).ok())
        .collect::<Option<Vec<usize>>>()
    else {
        e.flag(format!(
            "malformed view: size {size:?} has a negative dimension"
        ));
        return e;
    };
    e.shape = shape;
    let Some(elements) = element_count(&e.shape) else {
        e.flag(format!(
            "shape {} has more elements than this machine can address",
            shape_text(&e.shape)
        ));
        return e;
    };
    e.elements = elements;
    let (Some(info), Some(loc)) = (storages.get(r.index), located.get(r.index)) else {
        e.flag("internal error: the tensor's storage is unknown");
        return e;
    };
    if let Some(problem) = &loc.problem {
        e.flag(problem.clone());
        return e;
    }
    let Some(decoded) = dtype.dtype else {
        e.flag(format!(
            "dtype torch.{} is not read by quantscope",
            dtype.name
        ));
        return e;
    };
    if stride.len() != size.len() {
        e.flag(format!(
            "malformed view: size {size:?} and stride {stride:?} have different lengths"
        ));
        return e;
    }
    let (Some(strides), Ok(offset)) = (
        stride
            .iter()
            .map(|&s| usize::try_from(s).ok())
            .collect::<Option<Vec<usize>>>(),
        u64::try_from(offset),
    ) else {
        e.flag(format!(
            "malformed view: a negative stride {stride:?} or storage offset {offset}"
        ));
        return e;
    };
    let item = dtype.itemsize as u64;
    // The storage as this tensor sees it (a legacy storage view is a slice of its storage).
    let Some(base_len) = loc.nbytes.checked_sub(r.byte_offset) else {
        e.flag(format!(
            "storage view out of its storage: it starts at byte {} of the {}-byte storage `{}`",
            r.byte_offset, loc.nbytes, info.key
        ));
        return e;
    };
    let avail = r.byte_len.unwrap_or(base_len);
    if avail > base_len {
        e.flag(format!(
            "storage view out of its storage: bytes {}..{} of the {}-byte storage `{}`",
            r.byte_offset,
            r.byte_offset.saturating_add(avail),
            loc.nbytes,
            info.key
        ));
        return e;
    }
    let base = loc.start.saturating_add(r.byte_offset);
    let capacity = avail / item;
    let byte_at = |element: u128| -> Option<u64> {
        u64::try_from(element.checked_mul(u128::from(item))?)
            .ok()
            .and_then(|b| base.checked_add(b))
    };
    if elements == 0 {
        // Nothing to read (and flagged as empty by the caller).
        e.range = base..base;
        e.storage = Storage::Plain {
            dtype: decoded,
            order: loc.order,
            fortran: false,
        };
        return e;
    }
    // Dimensions of size 1 never step: their strides do not matter.
    let strides: Vec<usize> = e
        .shape
        .iter()
        .zip(&strides)
        .map(|(&n, &s)| if n > 1 { s } else { 0 })
        .collect();
    let span = e
        .shape
        .iter()
        .zip(&strides)
        .try_fold(0u128, |acc, (&n, &s)| {
            acc.checked_add((n as u128 - 1).checked_mul(s as u128)?)
        });
    let Some((span, last)) = span.and_then(|s| Some((s, s.checked_add(u128::from(offset))?)))
    else {
        e.flag(format!(
            "view out of its storage: its strides {stride:?} reach beyond any storage"
        ));
        return e;
    };
    if last >= u128::from(capacity) {
        e.flag(format!(
            "view out of its storage: storage offset {offset} + Σ(size−1)·stride {span} reaches element {last}, but storage `{}` holds {capacity} {} elements",
            info.key, dtype.name
        ));
        return e;
    }
    let mut expected = 1usize;
    let mut contiguous = true;
    for (&n, &s) in e.shape.iter().zip(&strides).rev() {
        if n > 1 && s != expected {
            contiguous = false;
        }
        expected = expected.saturating_mul(n);
    }
    let (Some(start), Some(end)) = (
        byte_at(u128::from(offset)),
        byte_at(if contiguous {
            u128::from(offset) + elements as u128
        } else {
            last + 1
        }),
    ) else {
        e.flag("the view's byte offsets overflow");
        return e;
    };
    e.range = start..end;
    e.storage = if contiguous {
        Storage::Plain {
            dtype: decoded,
            order: loc.order,
            fortran: false,
        }
    } else {
        let stored = span + 1;
        if elements as u128 > MAX_REPEATED && elements as u128 > stored * MAX_REPEAT {
            e.flag(format!(
                "a view of {elements} elements repeats its {stored} stored elements more than {MAX_REPEAT} times: not read"
            ));
            return e;
        }
        Storage::Strided {
            dtype: decoded,
            order: loc.order,
            strides,
        }
    };
    e
}

/// Flag every tensor named like an earlier one (two paths can join to the same dotted name).
pub(crate) fn flag_duplicates(entries: &mut [Entry]) {
    let mut seen = std::collections::HashSet::new();
    for e in entries.iter_mut() {
        if !seen.insert(e.name.clone()) {
            let name = e.name.clone();
            e.flag(format!(
                "another tensor of this file has the same dotted name `{name}`"
            ));
        }
    }
}
