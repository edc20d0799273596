//! Native files read by memory map: float32 little-endian tensors of `.npy` and `.safetensors`
//! files become tensors **without a copy**; everything else is decoded straight from the map.
//!
//! A [`Tensor`]'s values are a `Vec<f32>`, and a `Vec` may only hold memory of the global
//! allocator. [`MapAwareAllocator`] (the CLI's `#[global_allocator]`) is [`std::alloc::System`]
//! plus one thing: it can hand out a private, copy-on-write mapping of a file region as an
//! allocation ([`map_f32`]). Such a block is unmapped when the `Vec` frees it, copied into
//! ordinary memory when it grows, and written pages are private to the process (the file never
//! changes). Without that allocator installed — the library used from another program, or
//! WebAssembly — [`read_file`] reads and decodes as before.
//!
//! As with every memory map, the file must not be truncated by another process while the
//! tensor lives (the checkpoint catalogue maps files the same way).
//!
//! The same allocator lends memory it does not own: [`with_lent`] makes tensors whose values
//! are a caller's `&[f32]` (a numpy array's buffer, in the Python module) for the duration of one
//! call, registered in a slot that forgets the block instead of unmapping it.

use super::{npy, read_tensors, safetensors_file, DType, NamedTensor, Tensor};
use crate::error::{Error, Result};
use std::alloc::{GlobalAlloc, Layout, System};
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Live mapped blocks at most (further tensors are read into ordinary memory).
const SLOTS: usize = 256;

/// A slot: the block's data pointer (0 = free), and the mapping it lies in (base 0: a lent
/// block, which is forgotten rather than unmapped).
struct Slot {
    data: AtomicUsize,
    base: AtomicUsize,
    len: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    data: AtomicUsize::new(0),
    base: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
};
static BLOCKS: [Slot; SLOTS] = [FREE; SLOTS];
/// Number of slots in use, so that frees of ordinary memory cost one load while none is.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Set once the allocator has served an allocation, i.e. it is the global allocator.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The global allocator that lets file mappings become `Vec<f32>` ([`map_f32`]); otherwise the
/// system allocator.
pub struct MapAwareAllocator;

/// The slot holding the block at `ptr`, if it is a mapped one.
fn slot_of(ptr: *mut u8) -> Option<&'static Slot> {
    if LIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    let address = ptr as usize;
    BLOCKS
        .iter()
        .find(|s| s.data.load(Ordering::Acquire) == address)
}

/// Unmap the block of `slot` and free the slot.
///
/// # Safety
/// The block must no longer be used.
unsafe fn release(slot: &Slot) {
    let (base, len) = (
        slot.base.load(Ordering::Acquire),
        slot.len.load(Ordering::Acquire),
    );
    slot.data.store(0, Ordering::Release);
    LIVE.fetch_sub(1, Ordering::AcqRel);
    if base != 0 {
        // SAFETY: `base`/`len` describe a mapping made by `map_f32` and used by nothing else.
        unsafe { libc::munmap(base as *mut libc::c_void, len) };
    }
}

// SAFETY: every block is either the system allocator's (passed through) or a mapping registered
// in `BLOCKS`, which only this allocator frees or moves.
unsafe impl GlobalAlloc for MapAwareAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !INSTALLED.load(Ordering::Relaxed) {
            INSTALLED.store(true, Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match slot_of(ptr) {
            // SAFETY: the caller gives the block up.
            Some(slot) => unsafe { release(slot) },
            // SAFETY: forwarded with the caller's guarantees.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(slot) = slot_of(ptr) else {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: a fresh block of the new size; the old one is copied and then given up.
        unsafe {
            let moved = System.alloc(new_layout);
            if !moved.is_null() {
                std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                release(slot);
            }
            moved
        }
    }
}

/// `count` float32 little-endian values at byte `offset` of `file` as a `Vec` backed by a private
/// mapping, when [`MapAwareAllocator`] is the global allocator, the platform is little-endian
/// Unix, the offset is 4-aligned and a slot is free; else `None`.
pub fn map_f32(file: &File, offset: u64, count: usize) -> Option<Vec<f32>> {
    if !cfg!(all(unix, target_endian = "little")) || !INSTALLED.load(Ordering::Relaxed) {
        return None;
    }
    if count == 0 || !offset.is_multiple_of(4) {
        return None;
    }
    map_unix(file, offset, count)
}

#[cfg(unix)]
fn map_unix(file: &File, offset: u64, count: usize) -> Option<Vec<f32>> {
    use std::os::fd::AsRawFd;
    // SAFETY: sysconf has no preconditions.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|&p| p > 0)?;
    let start = offset / page * page;
    let skip = usize::try_from(offset - start).ok()?;
    let bytes = count.checked_mul(4)?;
    let len = skip.checked_add(bytes)?;
    let file_len = file.metadata().ok()?.len();
    if offset.checked_add(bytes as u64)? > file_len {
        return None;
    }
    let slot = BLOCKS.iter().find(|s| {
        s.data
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    })?;
    // SAFETY: a private mapping of a file region that exists (checked above); the kernel picks
    // the address.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            libc::off_t::try_from(start).ok()?,
        )
    };
    if base == libc::MAP_FAILED {
        slot.data.store(0, Ordering::Release);
        return None;
    }
    // SAFETY: `skip < page` lies inside the mapping.
    let data = unsafe { (base as *mut u8).add(skip) };
    slot.base.store(base as usize, Ordering::Release);
    slot.len.store(len, Ordering::Release);
    LIVE.fetch_add(1, Ordering::AcqRel);
    slot.data.store(data as usize, Ordering::Release);
    // SAFETY: the block is 4-aligned (page-aligned base, 4-aligned offset), holds `count`
    // initialised float32 values, and belongs to the global allocator, which unmaps it when
    // the Vec frees it (`dealloc`/`realloc` find it in its slot).
    Some(unsafe { Vec::from_raw_parts(data as *mut f32, count, count) })
}

#[cfg(not(unix))]
fn map_unix(_: &File, _: u64, _: usize) -> Option<Vec<f32>> {
    None
}

/// Every tensor of a `.npy`, `.npz` or `.safetensors` file on disk, read through a memory map:
/// float32 little-endian data (C order) without a copy where [`map_f32`] can, the rest decoded
/// from the map.
pub fn read_file(path: &Path) -> Result<Vec<NamedTensor>> {
    let name = path.display().to_string();
    let fail = |e: std::io::Error| Error::load(&name, e.to_string());
    let file = File::open(path).map_err(fail)?;
    let len = file.metadata().map_err(fail)?.len();
    if len == 0 {
        return read_tensors(&[], &name);
    }
    // SAFETY: a read-only map of a file we opened; see the module's note on truncation.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(fail)?;
    let bytes: &[u8] = &map;
    let base = bytes.as_ptr() as usize;
    let zero_copy =
        |raw: &[u8]| map_f32(&file, (raw.as_ptr() as usize - base) as u64, raw.len() / 4);
    match super::FileKind::detect(bytes, &name) {
        Some(super::FileKind::Npy) => npy::read_npy_with(bytes, zero_copy)
            .map(|tensor| {
                vec![NamedTensor {
                    name: String::new(),
                    tensor,
                }]
            })
            .map_err(|e| super::rename_load_error(e, &name)),
        Some(super::FileKind::Safetensors) => {
            safetensors_file::read_safetensors_with(bytes, zero_copy)
                .map_err(|e| super::rename_load_error(e, &name))
        }
        _ => read_tensors(bytes, &name),
    }
}

/// Values of a tensor lent for one call of [`with_lent`]: a caller's slice, or a tensor it owns.
pub enum Lent<'a> {
    /// C-order values borrowed for the call, with their shape and the dtype they had.
    Borrowed {
        values: &'a [f32],
        shape: Vec<usize>,
        dtype: DType,
    },
    /// A tensor passed as it is.
    Owned(Tensor),
}

/// Run `f` on tensors made of `parts`, in order: a [`Lent::Borrowed`] slice becomes a tensor
/// whose `Vec` *is* the slice (no copy) when [`MapAwareAllocator`] is the global allocator, the
/// slice is 4-aligned and not already a block of the allocator, and a slot is free — else a
/// copy. The tensors live only during `f`, which sees them by reference (it can neither keep nor
/// grow them), so the slices outlive them; dropping one gives its slot back and leaves the
/// memory to its owner.
pub fn with_lent<R>(parts: Vec<Lent<'_>>, f: impl FnOnce(&[Tensor]) -> R) -> R {
    let tensors: Vec<Tensor> = parts
        .into_iter()
        .map(|part| match part {
            Lent::Owned(t) => t,
            Lent::Borrowed {
                values,
                shape,
                dtype,
            } => Tensor {
                shape,
                data: lend(values).unwrap_or_else(|| values.to_vec()),
                dtype,
            },
        })
        .collect();
    f(&tensors)
}

/// `values` as a `Vec` registered as a lent block of the global allocator, or `None` (see
/// [`with_lent`]). The caller must not let the `Vec` outlive `values` nor write through it.
fn lend(values: &[f32]) -> Option<Vec<f32>> {
    let address = values.as_ptr() as usize;
    if values.is_empty()
        || !INSTALLED.load(Ordering::Relaxed)
        || !address.is_multiple_of(std::mem::align_of::<f32>())
        || slot_of(values.as_ptr() as *mut u8).is_some()
    {
        return None;
    }
    let slot = BLOCKS.iter().find(|s| {
        s.data
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    })?;
    slot.base.store(0, Ordering::Release);
    slot.len.store(0, Ordering::Release);
    LIVE.fetch_add(1, Ordering::AcqRel);
    slot.data.store(address, Ordering::Release);
    // SAFETY: `values` holds `len` initialised, aligned float32 values; the block is registered
    // with the global allocator, whose `dealloc` forgets it (base 0) and whose `realloc` copies it
    // out, so the Vec never frees the caller's memory. `with_lent` keeps the Vec within the
    // slice's lifetime and hands it out only by shared reference, so nothing writes through it.
    Some(unsafe { Vec::from_raw_parts(address as *mut f32, values.len(), values.len()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the allocator installed (the library's own tests) a lent slice is copied; either
    /// way the tensors hold the slices' values, shapes and dtypes, in order, and the slices are
    /// untouched after the call. (The Python tests check that no copy is made where the
    /// allocator is installed: memory stays flat observing a 256 MiB array.)
    #[test]
    fn lent_tensors_are_the_slices() {
        let values: Vec<f32> = (0..12).map(|i| i as f32 - 3.5).collect();
        let owned = Tensor::from_vec(vec![9.0]);
        let parts = vec![
            Lent::Borrowed {
                values: &values,
                shape: vec![3, 4],
                dtype: DType::F16,
            },
            Lent::Owned(owned.clone()),
            Lent::Borrowed {
                values: &values[..0],
                shape: vec![0],
                dtype: DType::F32,
            },
        ];
        let seen = with_lent(parts, |t| {
            assert_eq!(t.len(), 3);
            assert_eq!(
                (t[0].shape.as_slice(), t[0].dtype),
                (&[3, 4][..], DType::F16)
            );
            assert_eq!(t[0].data, values);
            assert_eq!(t[1], owned);
            assert!(t[2].is_empty());
            t[0].data.iter().sum::<f32>()
        });
        assert_eq!(seen, values.iter().sum::<f32>());
        assert_eq!(values[0], -3.5);
    }
}
