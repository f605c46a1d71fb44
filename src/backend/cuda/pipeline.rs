//! The CUDA side of batch_matmul's overlapped step: pinned staging memory
//! (`cuMemHostAlloc`). The step itself, its copy order and its events are shared with the
//! ROCm backend in [`crate::backend::gpu_pipeline`], over the stream layer the backend
//! implements in [`super::ddp`].

use super::backend::CudaBackend;
use super::{CudaError, CudaResult};
use crate::backend::gpu_stream::PinnedHost;
use cudarc::driver::result as dres;
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// One device's copy stream, staging and events for overlapped steps.
pub(crate) type Lane = crate::backend::gpu_pipeline::Lane<CudaBackend>;

/// Page-locked host memory of one device's context.
pub(crate) struct Pinned {
    ptr: *mut u8,
    len: usize,
    ctx: Arc<CudaContext>,
}

impl Pinned {
    /// `len` bytes (at least 1) of pinned memory, contents unspecified.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> CudaResult<Pinned> {
        ctx.bind_to_thread().map_err(CudaError::driver)?;
        // SAFETY: cuMemHostAlloc with flags 0 (cached, not write-combined: the host reads the
        // products back); the memory is only reached through raw pointers (see `ptr`).
        let ptr = unsafe { dres::malloc_host(len.max(1), 0) }.map_err(CudaError::driver_call(
            format!("cuMemHostAlloc of {len} bytes"),
        ))?;
        Ok(Pinned {
            ptr: ptr as *mut u8,
            len,
            ctx: ctx.clone(),
        })
    }
}

impl PinnedHost for Pinned {
    fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    fn len_bytes(&self) -> usize {
        self.len
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by cuMemHostAlloc in `new`, freed once; the owner synchronises the
        // copy stream at the end of every step, so no copy uses it any more.
        let _ = unsafe { dres::free_host(self.ptr as *mut std::ffi::c_void) };
    }
}
