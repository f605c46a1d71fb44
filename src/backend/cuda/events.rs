//! Device-timeline marks: CUDA events recorded on every local stream, read with
//! `cuEventElapsedTime`. The ring of slots that makes a mark `Copy` is shared with the ROCm
//! backend ([`crate::backend::marks`]).

use super::{CudaError, CudaResult};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

pub use crate::backend::marks::MarkOverwritten;
pub(crate) use crate::backend::marks::{Mark, Ring, SLOTS};

/// Creates `n` timing events on `ctx` (timing enabled, no blocking sync).
pub(crate) fn timing_events(ctx: &Arc<CudaContext>, n: usize) -> CudaResult<Vec<CudaEvent>> {
    (0..n)
        .map(|_| {
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(CudaError::driver)
        })
        .collect()
}

/// Seconds between two recorded events (waits for both).
pub(crate) fn elapsed_s(from: &CudaEvent, to: &CudaEvent) -> CudaResult<f64> {
    from.elapsed_ms(to)
        .map(|ms| f64::from(ms) * 1e-3)
        .map_err(CudaError::driver_call("cuEventElapsedTime"))
}

/// The documented resolution of `cuEventElapsedTime` ("around 0.5 microseconds").
pub(crate) const DOCUMENTED_RESOLUTION_S: f64 = 0.5e-6;

/// Smallest non-zero time between two events recorded back to back on an idle stream, over
/// `tries` pairs: the finest step this timer shows on this device. `None` if every pair read 0.
pub(crate) fn measure_resolution_s(
    stream: &Arc<CudaStream>,
    tries: usize,
) -> CudaResult<Option<f64>> {
    let ev = timing_events(stream.context(), 2)?;
    let mut best = f64::INFINITY;
    for _ in 0..tries {
        ev[0].record(stream).map_err(CudaError::driver)?;
        ev[1].record(stream).map_err(CudaError::driver)?;
        let s = elapsed_s(&ev[0], &ev[1])?;
        if s > 0.0 {
            best = best.min(s);
        }
    }
    Ok(best.is_finite().then_some(best))
}
