//! The CUDA backend (feature `cuda`): device buffers, NCCL collectives, cuBLAS GEMMs and
//! CUDA-event timing, through cudarc with every library loaded at run time.
//!
//! - [`error`]: [`CudaError`], the typed failures of the libraries below.
//! - [`probe`]: libraries, devices, `CUDA_VISIBLE_DEVICES`, GPU descriptions ([`list_gpus`]);
//!   never panics, so a machine without a driver gets one sentence (exit 2).
//! - [`nccl`]: type/operator mapping, the calls each collective makes, communicators.
//! - [`cublas`]: row-major GEMM on column-major cuBLAS, types and math modes.
//! - [`events`]: device-timeline marks.
//! - [`pipeline`]: batch_matmul's copies overlapped with compute on a second stream.
//! - [`nvml`]: GPU utilisation, clocks and power sampled during each case.
//! - [`ceilings`]: the GPUs' PCIe, NVLink, memory and peak ceilings, read from NVML per launch.
//! - [`backend`]: [`CudaBackend`], which puts them together behind [`crate::backend::Backend`],
//!   with its jobs in [`memory`] (device buffers), [`setup`] (opening GPUs, agreement, NCCL
//!   communicators), [`batch`] (batch_matmul's overlapped step) and [`ddp`] (ddp_step's
//!   non-blocking all-reduces on a communication stream; their state in [`ddp_state`]) and
//!   [`p2p`] (`scalebench links`' ncclSend/ncclRecv between ranks).

pub(crate) mod backend;
mod batch;
pub mod ceilings;
pub(crate) mod cublas;
mod ddp;
mod ddp_state;
pub(crate) mod error;
pub(crate) mod events;
mod memory;
pub(crate) mod nccl;
pub(crate) mod nvml;
mod p2p;
pub(crate) mod pipeline;
pub mod probe;
mod setup;

pub use crate::backend::gpu_gemm::GemmUnsupported;
pub use backend::{CudaBackend, CudaUnsupported};
pub use error::{CudaError, CudaResult};
pub use events::MarkOverwritten;
pub use memory::{DeviceBuf, TooLarge};
pub use nccl::PlanError;
pub use probe::{list_gpus, GpuInfo};
pub use setup::duplicate_gpus;
