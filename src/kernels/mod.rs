//! Bit-exact emulations of the array kernels the frameworks compute with: PyTorch's ATen
//! ([`torch`]) and numpy ([`numpy`]). Each function is named after the code path it reproduces
//! and documented with the golden set that pins it; the observers of every family share them.

pub mod numpy;
pub mod torch;
