//! What the CUDA backend keeps for ddp_step between calls: each GPU's communication stream
//! and the all-reduces in flight. The backend holds it and drains it; [`super::ddp`] starts and
//! waits for the all-reduces. Apart from both, so that the backend needs nothing of `ddp` and
//! `ddp` builds on the backend (one way).

use super::error::CudaError;
use super::memory::DeviceBuf;
use crate::backend::{BackendError, BackendResult, OverlapSettings};
use crate::params::Progress;
use cudarc::driver::{CudaEvent, CudaStream};
use std::sync::Arc;

/// One GPU's communication stream and its idle ordering events.
pub(super) struct CommLane {
    pub(super) stream: Arc<CudaStream>,
    /// Events no in-flight all-reduce uses (created without timing: they only order).
    pub(super) spare: Vec<CudaEvent>,
}

/// An all-reduce between start and wait.
pub(super) struct InFlight {
    pub(super) ticket: u64,
    pub(super) bufs: Vec<DeviceBuf>,
    /// Per device: recorded on the compute stream before the all-reduce.
    pub(super) ready: Vec<CudaEvent>,
    /// Per device: recorded on the communication stream after it.
    pub(super) done: Vec<CudaEvent>,
}

/// What the backend keeps for ddp_step between calls.
pub(super) struct State {
    pub(super) settings: OverlapSettings,
    pub(super) next_ticket: u64,
    pub(super) inflight: Vec<InFlight>,
    /// One per local GPU once the first ddp case set the strategy (empty before).
    pub(super) lanes: Vec<CommLane>,
}

impl Default for State {
    fn default() -> Self {
        State {
            settings: OverlapSettings {
                progress: Progress::Thread,
                comm_delay_s: 0.0,
            },
            next_ticket: 0,
            inflight: Vec::new(),
            lanes: Vec::new(),
        }
    }
}

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
                .map_err(driver("cuStreamSynchronize"))?;
        }
        Ok(())
    }
}

/// A failed driver call `what` as a backend error.
pub(super) fn driver(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> BackendError {
    move |e| CudaError::driver_call(what)(e).into()
}
