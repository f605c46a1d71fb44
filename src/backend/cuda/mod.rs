//! The CUDA backend (feature `cuda`): device buffers, NCCL collectives, cuBLAS GEMMs and
//! CUDA-event timing, through cudarc with every library loaded at run time.
//!
//! - [`probe`]: libraries, devices, `CUDA_VISIBLE_DEVICES`, GPU descriptions ([`list_gpus`]);
//!   never panics, so a machine without a driver gets one sentence (exit 2).
//! - [`nccl`]: type/operator mapping, the calls each collective makes, communicators.
//! - [`cublas`]: row-major GEMM on column-major cuBLAS, types and math modes.
//! - [`events`]: device-timeline marks.
//! - [`pipeline`]: batch_matmul's copies overlapped with compute on a second stream.
//! - [`nvml`]: GPU utilisation, clocks and power sampled during each case.
//! - [`backend`]: [`CudaBackend`], which puts them together behind [`crate::backend::Backend`].

pub mod backend;
pub mod cublas;
pub mod events;
pub mod nccl;
pub mod nvml;
pub mod pipeline;
pub mod probe;

pub use backend::{CudaBackend, DeviceBuf};
pub use probe::{list_gpus, GpuInfo};
