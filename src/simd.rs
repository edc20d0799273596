//! Wider vectors where the CPU has them: a hot loop is also compiled for AVX2 and for AVX-512
//! (`#[target_feature]` copies of the same function) and the widest copy the CPU runs is picked
//! at run time ([`with_wide_vectors`]). IEEE arithmetic gives the same bits at any vector width,
//! and Rust never contracts `a·b + c` into a fused multiply-add on its own, so every copy
//! computes identical values (`tests/vector_widths.rs` compares them). Used by the Q/DQ + metrics
//! kernels, the histogram binning, the statistics scan and several observers' searches.
//!
//! `QUANTSCOPE_SIMD=avx2` (or `baseline`) caps the width for a process, and [`cap`] does the
//! same from code: for measuring one width against another, and for the tests.

use std::sync::atomic::{AtomicU8, Ordering};

/// A width of vector code, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Width {
    /// What the build targets (SSE2 on x86-64; SIMD128 or scalar on WebAssembly).
    Baseline = 1,
    /// AVX2 (256-bit vectors).
    Avx2 = 2,
    /// AVX-512 F, BW, DQ and VL (512-bit vectors and mask registers).
    Avx512 = 3,
}

impl Width {
    fn from_u8(v: u8) -> Option<Width> {
        match v {
            1 => Some(Width::Baseline),
            2 => Some(Width::Avx2),
            3 => Some(Width::Avx512),
            _ => None,
        }
    }

    /// The name `QUANTSCOPE_SIMD` takes.
    pub fn name(self) -> &'static str {
        match self {
            Width::Baseline => "baseline",
            Width::Avx2 => "avx2",
            Width::Avx512 => "avx512",
        }
    }
}

/// The width in use, once known (0: not yet).
static IN_USE: AtomicU8 = AtomicU8::new(0);

/// The widest vectors this CPU runs.
fn detected() -> Width {
    #[cfg(target_arch = "x86_64")]
    {
        let avx512 = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl");
        if avx512 {
            return Width::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Width::Avx2;
        }
    }
    Width::Baseline
}

/// The cap `QUANTSCOPE_SIMD` sets, if any.
fn env_cap() -> Option<Width> {
    let value = std::env::var("QUANTSCOPE_SIMD").ok()?;
    [Width::Baseline, Width::Avx2, Width::Avx512]
        .into_iter()
        .find(|w| w.name() == value.trim().to_ascii_lowercase())
}

/// The widest vectors the hot loops use: the CPU's, capped by `QUANTSCOPE_SIMD` and [`cap`].
#[inline]
pub fn width() -> Width {
    if let Some(w) = Width::from_u8(IN_USE.load(Ordering::Relaxed)) {
        return w;
    }
    let w = detected().min(env_cap().unwrap_or(Width::Avx512));
    IN_USE.store(w as u8, Ordering::Relaxed);
    w
}

/// Use at most `width` from now on (never wider than the CPU's); returns the width in use.
/// Results do not change, only speed.
pub fn cap(width: Width) -> Width {
    let w = detected().min(width);
    IN_USE.store(w as u8, Ordering::Relaxed);
    w
}

/// Run `f`, compiled for the widest vectors the CPU has ([`width`]): `f` and everything it
/// inlines are compiled again inside a `#[target_feature(enable = "avx2")]` function and inside
/// an AVX-512 one, and one of the three is picked at run time. `f` must be an
/// `#[inline(always)]` closure, and the functions it calls `#[inline(always)]`, to be part of
/// the wide copies.
#[inline(always)]
pub fn with_wide_vectors<R>(f: impl FnOnce() -> R) -> R {
    with_wide_vectors_on(
        &(),
        #[inline(always)]
        move |_| f(),
    )
}

/// [`with_wide_vectors`] for `f(value)`, with `value` handed to the wide copies as an argument
/// rather than inside the closure. A shared reference argument tells LLVM that nothing the
/// copy writes can change `*value`, so loads from it (a kernel's scale, zero point and bounds)
/// are hoisted out of the loops and the loops vectorise; captured by the closure, the same
/// reference carries no such promise and, after link-time optimisation, the per-element map of
/// a Q/DQ kernel reloaded its parameters on every element and stayed scalar. The promise holds
/// only for the parts of `T` outside an `UnsafeCell` (`Cell`, atomics, locks): what `T` holds
/// through interior mutability is reloaded as before.
#[inline(always)]
pub fn with_wide_vectors_on<T: ?Sized, R>(value: &T, f: impl FnOnce(&T) -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    match width() {
        Width::Avx512 => {
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
            unsafe fn avx512<T: ?Sized, R>(value: &T, f: impl FnOnce(&T) -> R) -> R {
                f(value)
            }
            // SAFETY: the CPU has AVX-512 F, BW, DQ and VL (`detected`).
            return unsafe { avx512(value, f) };
        }
        Width::Avx2 => {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2<T: ?Sized, R>(value: &T, f: impl FnOnce(&T) -> R) -> R {
                f(value)
            }
            // SAFETY: the CPU has AVX2 (`detected`).
            return unsafe { avx2(value, f) };
        }
        Width::Baseline => {}
    }
    f(value)
}

/// Run `fused` compiled for AVX2 and FMA (or AVX-512, which has FMA) where the CPU has them,
/// else `plain` (compiled as [`with_wide_vectors`] compiles). For code whose result is the same
/// either way by construction but which computes faster with fused multiply-adds (explicit
/// `mul_add`, which without FMA hardware is a slow library call, and on WebAssembly a software
/// routine): see [`crate::kernels::torch::pointwise::Power`]. Both closures must be
/// `#[inline(always)]`.
#[inline(always)]
pub fn with_fma<R>(fused: impl FnOnce() -> R, plain: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    match width() {
        Width::Avx512 if std::arch::is_x86_feature_detected!("fma") => {
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,fma")]
            unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            // SAFETY: the CPU has AVX-512 F, BW, DQ and VL, hence FMA.
            return unsafe { avx512(fused) };
        }
        Width::Avx2 if std::arch::is_x86_feature_detected!("fma") => {
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2_fma<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            // SAFETY: the CPU has AVX2 and FMA.
            return unsafe { avx2_fma(fused) };
        }
        _ => {}
    }
    #[cfg(all(not(target_arch = "x86_64"), target_feature = "fma"))]
    return fused();
    #[allow(unreachable_code)]
    {
        let _ = &fused;
        with_wide_vectors(plain)
    }
}
