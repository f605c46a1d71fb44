//! batch_matmul's overlapped device step (the pattern of source file 004): while the GPU
//! multiplies matrix j, the copy engine brings matrix j+1 in and takes product j−1 out.
//!
//! Two streams per device: the device's main stream runs the GEMMs (so they stay ordered with
//! everything else on it); a copy stream runs host→device and device→host copies in the order
//! [`copy_order`] gives (one matrix of prefetch). Events order the two streams (GEMM j waits
//! for copy-in j; copy-out j waits for GEMM j) and time each copy and GEMM, which gives the
//! busy time of each engine and the span of the whole step ([`OverlapTiming`]).
//!
//! Copies go through page-locked (pinned) staging buffers: copies from pageable memory are
//! synchronous for the host and could not overlap anything. The host copies matrix j+1 into
//! the staging buffer while the device works on j, as in the source document.

use super::{CudaError, CudaResult};
use crate::backend::OverlapTiming;
use cudarc::driver::result as dres;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// One step of the copy stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CopyStep {
    /// Host → device copy of matrix j.
    In(usize),
    /// Device → host copy of product j (after GEMM j).
    Out(usize),
}

/// The copy stream's order for `n` matrices: In(0), In(1), Out(0), In(2), Out(1), …,
/// Out(n−1). Each product leaves only after the next matrix went in, so the GEMM of matrix
/// j+1 never waits behind the copy-out of product j.
pub(crate) fn copy_order(n: usize) -> Vec<CopyStep> {
    let mut v = Vec::with_capacity(2 * n);
    for j in 0..n {
        v.push(CopyStep::In(j));
        if j >= 1 {
            v.push(CopyStep::Out(j - 1));
        }
    }
    if n > 0 {
        v.push(CopyStep::Out(n - 1));
    }
    v
}

/// Events per matrix: copy-in start/end, GEMM start/end, copy-out start/end.
pub(crate) const EVENTS_PER_MATRIX: usize = 6;

/// Index of event `which` (0..6) of matrix `j`.
pub(crate) fn event_index(j: usize, which: usize) -> usize {
    j * EVENTS_PER_MATRIX + which
}

/// Busy times and span from per-matrix durations (seconds).
pub(crate) fn overlap_timing(
    copy_in: &[f64],
    gemm: &[f64],
    copy_out: &[f64],
    span_s: f64,
) -> OverlapTiming {
    OverlapTiming {
        copy_in_s: copy_in.iter().sum(),
        compute_s: gemm.iter().sum(),
        copy_out_s: copy_out.iter().sum(),
        span_s,
    }
}

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

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The base address. Only raw pointers ever reach this memory, because the copy engine
    /// writes it asynchronously: no Rust reference to it exists while a copy is in flight.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
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

/// One device's staging for overlapped steps, grown on demand and reused.
pub(crate) struct Lane {
    pub copy: Arc<CudaStream>,
    pub pin_in: Pinned,
    pub pin_out: Pinned,
    pub events: Vec<CudaEvent>,
}

impl Lane {
    /// A lane with room for `bytes` in each direction and `matrices` matrices' events.
    pub(crate) fn new(ctx: &Arc<CudaContext>, bytes: usize, matrices: usize) -> CudaResult<Lane> {
        Ok(Lane {
            copy: ctx.new_stream().map_err(CudaError::driver)?,
            pin_in: Pinned::new(ctx, bytes)?,
            pin_out: Pinned::new(ctx, bytes)?,
            events: super::events::timing_events(ctx, matrices * EVENTS_PER_MATRIX)?,
        })
    }

    /// Grows the staging buffers and the event pool to fit a step.
    pub(crate) fn fit(
        &mut self,
        ctx: &Arc<CudaContext>,
        bytes: usize,
        matrices: usize,
    ) -> CudaResult<()> {
        if self.pin_in.len() < bytes {
            self.pin_in = Pinned::new(ctx, bytes)?;
            self.pin_out = Pinned::new(ctx, bytes)?;
        }
        let want = matrices * EVENTS_PER_MATRIX;
        if self.events.len() < want {
            let more = super::events::timing_events(ctx, want - self.events.len())?;
            self.events.extend(more);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_order_prefetches_one_matrix() {
        use CopyStep::{In, Out};
        assert_eq!(copy_order(0), vec![]);
        assert_eq!(copy_order(1), vec![In(0), Out(0)]);
        assert_eq!(
            copy_order(3),
            vec![In(0), In(1), Out(0), In(2), Out(1), Out(2)]
        );
        for n in 0..20 {
            let o = copy_order(n);
            assert_eq!(o.len(), 2 * n);
            for j in 0..n {
                let pos = |c: CopyStep| o.iter().position(|x| *x == c).unwrap();
                // every matrix goes in before its product comes out, exactly once each
                assert!(pos(In(j)) < pos(Out(j)));
                // the next matrix goes in before this product leaves (one matrix of prefetch)
                if j + 1 < n {
                    assert!(pos(In(j + 1)) < pos(Out(j)));
                }
            }
        }
    }

    #[test]
    fn events_do_not_collide() {
        let mut seen = std::collections::BTreeSet::new();
        for j in 0..10 {
            for w in 0..EVENTS_PER_MATRIX {
                assert!(seen.insert(event_index(j, w)));
            }
        }
        assert_eq!(seen.len(), 10 * EVENTS_PER_MATRIX);
        assert_eq!(*seen.iter().max().unwrap(), 10 * EVENTS_PER_MATRIX - 1);
    }

    #[test]
    fn hidden_time_is_busy_time_beyond_the_span() {
        // copies fully hidden behind compute: 3 × 1 ms in, 3 × 4 ms GEMM, 3 × 1 ms out,
        // span = 1 (first copy) + 12 (GEMMs) + 1 (last copy) = 14 ms
        let t = overlap_timing(&[1e-3; 3], &[4e-3; 3], &[1e-3; 3], 14e-3);
        assert!((t.hidden_s() - 4e-3).abs() < 1e-12, "{t:?}");
        // nothing overlapped: the span is the sum
        let t = overlap_timing(&[1e-3; 3], &[4e-3; 3], &[1e-3; 3], 18e-3);
        assert_eq!(t.hidden_s(), 0.0);
        // clock noise never makes it negative
        let t = overlap_timing(&[1e-3], &[1e-3], &[1e-3], 3.1e-3);
        assert_eq!(t.hidden_s(), 0.0);
    }
}
