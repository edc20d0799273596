//! ATen CPU kernels (PyTorch 2.14/2.15, one thread, AVX2 build) whose exact float32 rounding the
//! families that run on PyTorch tensors depend on: llm-compressor/compressed-tensors and
//! torchao compute their range searches with plain tensor ops, so a search reproduces the
//! library only when every sum adds the same float32 values in the same order.
//!
//! * [`reduce`]: `torch.sum`/`torch.mean`/`torch.amin`/`torch.amax` over any set of dims of a
//!   contiguous tensor, in the order of ATen's TensorIterator and cascade-sum kernels.
//! * [`pointwise`]: `torch.pow(tensor, scalar)` and float → integer casts as compiled C++ does
//!   them on x86.

pub mod pointwise;
pub mod reduce;
