//! The ROCm backend (feature `rocm`): device buffers on AMD GPUs (each MI250X GCD is one),
//! RCCL collectives and HIP-event timing, with the HIP runtime and RCCL opened at run time
//! (libloading), so the build needs no ROCm. Issue 30: the six collectives, rocBLAS GEMMs
//! (matmul, batch_matmul), ddp_step, and AMD SMI telemetry per GCD.
//!
//! - [`error`]: [`RocmError`], one sentence per failure; a missing library, symbol or too old
//!   a version makes the backend unavailable (exit 2).
//! - [`loader`]: opening a library and resolving every entry point once.
//! - [`hip`], [`rccl`], [`rocblas`]: the typed entry points of `libamdhip64.so`, `librccl.so`
//!   and `librocblas.so` (opened only where the launch runs a GEMM).
//! - [`kfd`]: a GCD's architecture from the driver's topology, by PCI address.
//! - [`smi`]: GCD telemetry through AMD SMI (utilisation, clock, temperature), found by PCI
//!   address.
//! - [`memory`]: device buffers; [`setup`]: opening GPUs and communicators;
//!   [`backend`]: [`RocmBackend`] behind [`crate::backend::Backend`]; [`ddp`]: ddp_step's
//!   all-reduces on a communication stream per GPU.
//!
//! The calls a collective makes are NCCL's, shared with the CUDA backend
//! ([`crate::backend::ccl`]), as are the ring of timing marks ([`crate::backend::marks`]) and
//! the GEMM call's mapping and accumulation rule ([`crate::backend::gpu_gemm`]).

pub(crate) mod backend;
mod ddp;
pub(crate) mod error;
pub(crate) mod hip;
mod kfd;
mod loader;
pub(crate) mod memory;
mod p2p;
pub(crate) mod rccl;
pub(crate) mod rocblas;
mod setup;
mod smi;

pub use backend::{RocmBackend, RocmUnsupported, STANDIN_LABEL};
pub use error::{RocmError, RocmResult};
pub use memory::RocmBuf;
