//! What the CUDA backend keeps for ddp_step between calls: the state of the order shared with
//! the ROCm backend ([`crate::backend::gpu_ddp`]). The backend holds it and drains it;
//! [`super::ddp`] starts and waits for the all-reduces.

use super::backend::CudaBackend;
use super::error::CudaError;
use crate::backend::BackendResult;

/// Each GPU's communication stream and the all-reduces in flight.
pub(super) type State = crate::backend::gpu_ddp::State<CudaBackend>;

impl State {
    /// Waits for every communication stream, ignoring errors (see the backend's `drain`).
    pub(super) fn drain(&self) {
        for l in &self.lanes {
            let _ = l.stream.synchronize();
        }
    }

    /// Waits for every communication stream.
    pub(super) fn synchronize(&self) -> BackendResult<()> {
        for l in &self.lanes {
            l.stream
                .synchronize()
                .map_err(CudaError::driver_call("cuStreamSynchronize"))?;
        }
        Ok(())
    }
}
