//! Device memory: `hipMalloc` allocations as the typed buffers workloads hold.

use super::hip::Hip;
use super::RocmError;
use crate::backend::ccl::Region;
use crate::params::Dtype;
use std::ffi::c_void;
use std::sync::Arc;

/// One buffer on one GPU: `hipMalloc` memory (not from a stream-ordered pool, as nccl-tests'
/// `hipMalloc`), its element type and count; freed only after its device finished all queued
/// work.
#[derive(Debug)]
pub struct RocmBuf {
    ptr: *mut c_void,
    bytes: usize,
    pub(super) dtype: Dtype,
    pub(super) count: usize,
    pub(super) dev: usize,
    /// The HIP ordinal the memory lives on (made current before it is freed).
    ordinal: i32,
    hip: Arc<Hip>,
}

impl std::fmt::Debug for Hip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hip")
    }
}

impl RocmBuf {
    /// `count` elements of `dtype` on HIP device `ordinal` (local device `dev`), at least one
    /// byte (no empty allocations), contents unspecified.
    pub(super) fn new(
        hip: &Arc<Hip>,
        ordinal: i32,
        dev: usize,
        dtype: Dtype,
        count: usize,
    ) -> Result<RocmBuf, RocmError> {
        let bytes = count
            .checked_mul(dtype.size_bytes() as usize)
            .filter(|b| *b <= isize::MAX as usize)
            .ok_or_else(|| {
                RocmError::Check(format!("{count} {dtype} elements do not fit in memory"))
            })?;
        hip.set_device(ordinal)?;
        let ptr = hip.malloc(bytes.max(1)).map_err(|e| {
            e.context(format!(
                "hipMalloc of {bytes} bytes on HIP device {ordinal}"
            ))
        })?;
        Ok(RocmBuf {
            ptr,
            bytes,
            dtype,
            count,
            dev,
            ordinal,
            hip: hip.clone(),
        })
    }

    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }
    pub(super) fn ptr(&self) -> *mut c_void {
        self.ptr
    }
    pub(super) fn region(&self) -> Region {
        Region {
            ptr: self.ptr as u64,
            len: self.count,
        }
    }
}

impl Drop for RocmBuf {
    fn drop(&mut self) {
        // Whatever still uses the memory (a collective, a copy) finishes first.
        if self.hip.set_device(self.ordinal).is_ok() {
            let _ = self.hip.device_synchronize();
        }
        // SAFETY: allocated by hipMalloc in `new`, freed exactly once, with no work left on
        // the device that could touch it.
        let _ = unsafe { self.hip.free(self.ptr) };
    }
}
