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
