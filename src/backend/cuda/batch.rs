//! batch_matmul's overlapped device step on the CUDA backend: the step shared with the ROCm
//! backend ([`crate::backend::gpu_pipeline`]) over this backend's stream layer
//! ([`super::ddp`]), staging in pinned memory ([`super::pipeline`]).

use super::backend::CudaBackend;
use super::memory::DeviceBuf;
use crate::backend::{BackendResult, GemmBatch, HostBuf, OverlapTiming};

impl CudaBackend {
    /// The overlapped batch step (see [`crate::backend::gpu_pipeline`]).
    pub(super) fn overlapped_step(
        &mut self,
        batches: &[GemmBatch],
        inputs: &[HostBuf],
        a: &mut [DeviceBuf],
        c: &mut [DeviceBuf],
    ) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
        crate::backend::gpu_pipeline::square_batch(self, batches, inputs, a, c)
    }
}
