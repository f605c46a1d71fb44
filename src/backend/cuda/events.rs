//! Device-timeline marks: CUDA events recorded on every local stream, read with
//! `cuEventElapsedTime`.
//!
//! A mark is a slot in a ring of events (one event per device per slot) plus a sequence
//! number, so it is `Copy` as the trait requires and a mark whose slot was re-recorded since
//! is detected instead of read. The timing loop holds at most two marks at a time; the ring
//! has [`SLOTS`].

use super::{CudaError, CudaResult};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// Event slots per device.
pub(crate) const SLOTS: usize = 64;

/// A point on every local device's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    slot: usize,
    seq: u64,
}

/// Hands out slots in turn and knows which marks are still readable.
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    slots: usize,
    next_seq: u64,
}

/// A mark read after its slot was recorded again (or one this ring never handed out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a timing mark was overwritten: more than {slots} marks were taken before it was read")]
pub struct MarkOverwritten {
    pub slots: usize,
}

impl From<MarkOverwritten> for crate::backend::BackendError {
    fn from(e: MarkOverwritten) -> Self {
        crate::backend::BackendError::Device(crate::backend::DeviceError::Mark(e))
    }
}

impl Ring {
    pub(crate) fn new(slots: usize) -> Ring {
        Ring {
            slots: slots.max(1),
            next_seq: 0,
        }
    }

    /// A new mark (its slot is the oldest one).
    pub(crate) fn take(&mut self) -> Mark {
        let seq = self.next_seq;
        self.next_seq += 1;
        Mark {
            slot: (seq % self.slots as u64) as usize,
            seq,
        }
    }

    /// `Err` if `m` was never handed out or its slot was recorded again since.
    pub(crate) fn check(&self, m: Mark) -> Result<usize, MarkOverwritten> {
        if m.seq >= self.next_seq || self.next_seq - m.seq > self.slots as u64 {
            return Err(MarkOverwritten { slots: self.slots });
        }
        Ok(m.slot)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_take_slots_in_turn_and_expire() {
        let mut r = Ring::new(4);
        let m: Vec<Mark> = (0..4).map(|_| r.take()).collect();
        assert_eq!(
            m.iter().map(|x| r.check(*x).unwrap()).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        // the fifth mark reuses slot 0: the first mark is gone, the others still readable
        let fifth = r.take();
        assert_eq!(r.check(fifth).unwrap(), 0);
        assert!(r
            .check(m[0])
            .unwrap_err()
            .to_string()
            .contains("overwritten"));
        assert_eq!(r.check(m[1]).unwrap(), 1);
        // a mark from another ring's future is refused
        let mut other = Ring::new(4);
        for _ in 0..10 {
            other.take();
        }
        assert!(r.check(other.take()).is_err());
    }

    #[test]
    fn the_timing_loop_fits_the_ring() {
        // measure::time_op holds two marks (a, b) and reads them before taking more.
        let mut r = Ring::new(SLOTS);
        for _ in 0..10_000 {
            let a = r.take();
            let b = r.take();
            assert!(r.check(a).is_ok() && r.check(b).is_ok());
        }
    }
}
