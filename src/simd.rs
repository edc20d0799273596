//! Wider vectors where the CPU has them: a hot loop is also compiled for AVX2 (a
//! `#[target_feature(enable = "avx2")]` copy of the same function) and picked at run time with
//! [`has_avx2`]. IEEE arithmetic gives the same bits at any vector width, and Rust never
//! contracts `a·b + c` into a fused multiply-add on its own, so both paths compute identical
//! values. Used by the Q/DQ + metrics kernels, the histogram binning, the min/max scan and
//! Quark's power-of-two MSE search.

/// True when this x86-64 CPU has AVX2 (cached by the standard library).
#[cfg(all(target_arch = "x86_64", not(target_feature = "avx2")))]
#[inline]
pub fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Run `f`, compiled for AVX2 where the CPU has it: `f` and everything it inlines are compiled
/// a second time inside a `#[target_feature(enable = "avx2")]` function, picked at run time.
/// `f` must be an `#[inline(always)]` closure, and the functions it calls `#[inline(always)]`,
/// to be part of the AVX2 copy.
#[inline(always)]
pub fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(all(target_arch = "x86_64", not(target_feature = "avx2")))]
    if has_avx2() {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // SAFETY: the CPU has AVX2.
        return unsafe { avx2(f) };
    }
    f()
}

/// Run `fused` compiled for AVX2 and FMA where the CPU has both, else `plain` (compiled for
/// AVX2 where the CPU has it). For code whose result is the same either way by construction
/// but which computes faster with fused multiply-adds (explicit `mul_add`, which without FMA
/// hardware is a slow library call, and on WebAssembly a software routine): see
/// [`crate::kernels::torch::pointwise::Power`]. Both closures must be `#[inline(always)]`.
#[inline(always)]
pub fn with_fma<R>(fused: impl FnOnce() -> R, plain: impl FnOnce() -> R) -> R {
    #[cfg(all(target_arch = "x86_64", not(target_feature = "fma")))]
    if has_avx2() && std::arch::is_x86_feature_detected!("fma") {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2_fma<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { avx2_fma(fused) };
    }
    #[cfg(all(target_arch = "x86_64", target_feature = "fma"))]
    return fused();
    #[allow(unreachable_code)]
    {
        let _ = &fused;
        with_avx2(plain)
    }
}
