//! Quantizers: what happens to each value inside the chosen range.

pub mod adaround;
pub mod formats;
