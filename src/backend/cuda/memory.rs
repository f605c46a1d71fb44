//! Device memory: `cuMemAlloc` allocations ([`DeviceMem`]), the typed buffers workloads hold
//! ([`DeviceBuf`]), and host buffers seen as bytes for copies.

use super::nccl::Region;
use super::{CudaError, CudaResult};
use crate::backend::HostBuf;
use crate::params::Dtype;
use cudarc::driver::result as dres;
use cudarc::driver::sys as dsys;
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// A buffer whose size in bytes overflows an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{count} {dtype} elements do not fit in memory")]
pub struct TooLarge {
    pub count: usize,
    pub dtype: Dtype,
}

impl From<TooLarge> for crate::backend::BackendError {
    fn from(e: TooLarge) -> Self {
        crate::backend::BackendError::Device(crate::backend::DeviceError::TooLarge(e))
    }
}

/// Bytes of `count` elements of `dtype`, or an error naming the size.
pub(super) fn byte_len(dtype: Dtype, count: usize) -> Result<usize, TooLarge> {
    count
        .checked_mul(dtype.size_bytes() as usize)
        .filter(|b| *b <= isize::MAX as usize)
        .ok_or(TooLarge { count, dtype })
}

/// Device memory from `cuMemAlloc`, as nccl-tests' `cudaMalloc`: not from a stream-ordered
/// pool, and freed only after its device finished all queued work.
#[derive(Debug)]
pub(super) struct DeviceMem {
    pub(super) ptr: dsys::CUdeviceptr,
    pub(super) bytes: usize,
    ctx: Arc<CudaContext>,
}

impl DeviceMem {
    /// `bytes` of device memory (at least 1: CUDA refuses empty allocations), contents
    /// unspecified.
    pub(super) fn new(ctx: &Arc<CudaContext>, bytes: usize) -> CudaResult<DeviceMem> {
        ctx.bind_to_thread().map_err(CudaError::driver)?;
        // SAFETY: cuMemAlloc on the current (this device's) context; the memory is only ever
        // reached through the raw address by CUDA, NCCL and cuBLAS calls that are given its
        // size, never through a Rust reference.
        let ptr = unsafe { dres::malloc_sync(bytes.max(1)) }.map_err(CudaError::driver)?;
        Ok(DeviceMem {
            ptr,
            bytes,
            ctx: ctx.clone(),
        })
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // Whatever still uses the memory (a collective, a copy on either stream) finishes
        // first.
        let _ = self.ctx.synchronize();
        // SAFETY: allocated by cuMemAlloc in `new`, freed exactly once, with no work left on
        // the device that could touch it.
        let _ = unsafe { dres::free_sync(self.ptr) };
    }
}

/// One buffer on one GPU: device memory, its element type and count.
#[derive(Debug)]
pub struct DeviceBuf {
    pub(super) mem: DeviceMem,
    pub(super) dtype: Dtype,
    pub(super) count: usize,
    pub(super) dev: usize,
}

impl DeviceBuf {
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Local device the buffer lives on.
    pub fn device(&self) -> usize {
        self.dev
    }
    pub(super) fn bytes(&self) -> usize {
        self.count * self.dtype.size_bytes() as usize
    }
    pub(super) fn ptr(&self) -> dsys::CUdeviceptr {
        self.mem.ptr
    }
    pub(super) fn region(&self) -> Region {
        Region {
            ptr: self.ptr(),
            len: self.count,
        }
    }
}

/// A host buffer's bytes.
pub(super) fn host_bytes(h: &HostBuf) -> &[u8] {
    // SAFETY: the vector inside `h` holds `byte_len()` initialised bytes for the borrow's
    // lifetime; any initialised memory may be read as bytes.
    unsafe { std::slice::from_raw_parts(h.as_ptr(), h.byte_len()) }
}

/// A host buffer's bytes, writable.
pub(super) fn host_bytes_mut(h: &mut HostBuf) -> &mut [u8] {
    // SAFETY: as above, exclusively borrowed; every bit pattern is a valid f32, f64, i32, f16
    // or bf16, so any bytes written leave the vector valid.
    unsafe { std::slice::from_raw_parts_mut(h.as_mut_ptr(), h.byte_len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_arithmetic() {
        assert_eq!(byte_len(Dtype::F16, 3).unwrap(), 6);
        assert_eq!(byte_len(Dtype::F64, 1 << 20).unwrap(), 8 << 20);
        assert_eq!(byte_len(Dtype::I32, 0).unwrap(), 0);
        assert!(byte_len(Dtype::F64, usize::MAX / 4)
            .unwrap_err()
            .to_string()
            .contains("do not fit"));
    }
}
