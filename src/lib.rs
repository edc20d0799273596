//! # quantscope
//!
//! Quantization observers of PyTorch, AMD Quark, Horizon, ONNX Runtime and NVIDIA Model
//! Optimizer, reproduced exactly, with the tensor loaders, error metrics and plots needed to
//! compare them side by side. The same engine runs natively (the `quantscope` CLI) and in the
//! browser (WebAssembly, see `wasm`).
//!
//! ```
//! use quantscope::{engine::Run, params::Params, tensor::Tensor};
//! let batches = [Tensor::from_vec(vec![-1.0, 0.5, 2.0])];
//! let report = Run::new("torch.MinMaxObserver", Params::new(), &batches)
//!     .unwrap()
//!     .report();
//! let q = report.qparams.expect("MinMax always has qparams");
//! assert_eq!(q.max_val, vec![2.0]);
//! assert_eq!(q.scale, vec![3.0f32 / 255.0]);
//! ```
//!
//! The documentation is written for people working on the engine: build it with
//! `cargo doc --no-deps --document-private-items` (as the test run does, warnings denied), where
//! module docs link to the private parts that do the work.
#![allow(rustdoc::private_intra_doc_links)]

pub mod checkpoint;
pub mod codec;
#[cfg(not(target_arch = "wasm32"))]
pub mod commands;
pub mod curve;
pub mod derivation;
pub mod diagnosis;
pub mod diff;
pub mod display;
pub mod engine;
pub mod error;
pub mod explorer;
pub mod formats;
pub mod histogram;
pub mod kernels;
pub mod lanes;
pub mod model;
pub mod observer;
pub mod observers;
pub mod parallel;
pub mod params;
pub mod plot;
pub mod portion;
#[cfg(all(feature = "python", not(target_arch = "wasm32")))]
pub mod python;
pub mod qdq;
pub mod qparams;
pub mod quant;
pub mod quantizers;
pub mod registry;
pub mod rotation;
pub mod shared_stats;
pub mod simd;
pub mod slice_map;
pub mod stubs;
pub mod tensor;
pub mod warm;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use error::{Error, Result};
