//! batch_matmul's overlapped device step on the GPU backends (the pattern of source file
//! 004), written once over [`GpuStreams`]: while the GPU multiplies matrix j, the copy engine
//! brings matrix j+1 in and takes product j−1 out.
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

use crate::backend::gpu_stream::{check_buf, Dir, GpuBuf, GpuStreams, On, PinnedHost};
use crate::backend::{BackendError, BackendResult, GemmBatch, HostBuf, OverlapTiming};
use crate::params::{Dtype, MatmulShape};

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

/// One device's staging for overlapped steps, grown on demand and reused.
pub(crate) struct Lane<R: GpuStreams> {
    pub(crate) copy: R::Stream,
    pin_in: R::Pinned,
    pin_out: R::Pinned,
    events: Vec<R::Event>,
}

/// `dev`'s copy lane, which [`plan`] sized before `step` ran: its absence is a broken
/// invariant of this module, reported as a failed check rather than a panic inside the backend.
fn sized<'a, L>(lane: Option<&'a L>, dev: usize, step: &str) -> BackendResult<&'a L> {
    lane.ok_or_else(|| {
        BackendError::check(format!(
            "batch_matmul: no copy lane for device {dev} at the {step}: \
             the plan step did not size the lanes"
        ))
    })
}

/// `n` timing events of `dev`.
fn timing_events<R: GpuStreams>(rt: &mut R, dev: usize, n: usize) -> BackendResult<Vec<R::Event>> {
    (0..n).map(|_| rt.new_event(dev, true)).collect()
}

/// Makes `dev`'s lane large enough for `bytes` in each direction and `matrices` matrices'
/// events, creating it on first use.
fn fit_lane<R: GpuStreams>(
    rt: &mut R,
    dev: usize,
    bytes: usize,
    matrices: usize,
) -> BackendResult<()> {
    let want = matrices * EVENTS_PER_MATRIX;
    // Taken out while the backend creates what it lacks, put back whatever happens.
    let mut lane = match rt.lane_slot(dev).take() {
        Some(l) => l,
        None => Lane {
            copy: rt.new_stream(dev)?,
            pin_in: rt.new_pinned(dev, bytes)?,
            pin_out: rt.new_pinned(dev, bytes)?,
            events: Vec::new(),
        },
    };
    let grown = (|| {
        if lane.pin_in.len_bytes() < bytes {
            lane.pin_in = rt.new_pinned(dev, bytes)?;
            lane.pin_out = rt.new_pinned(dev, bytes)?;
        }
        if lane.events.len() < want {
            let more = timing_events(rt, dev, want - lane.events.len())?;
            lane.events.extend(more);
        }
        Ok(())
    })();
    *rt.lane_slot(dev) = Some(lane);
    grown
}

/// One device's share of an overlapped step.
struct StepPlan<P> {
    matrices: usize,
    /// Bytes per matrix.
    matrix_bytes: usize,
    gemm: P,
    dtype: Dtype,
}

/// The overlapped batch step (see the module doc): [`crate::backend::Backend::square_batch`]
/// of a GPU backend.
pub(crate) fn square_batch<R: GpuStreams>(
    rt: &mut R,
    batches: &[GemmBatch],
    inputs: &[HostBuf],
    a: &mut [R::Buf],
    c: &mut [R::Buf],
) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
    let plans = plan(rt, batches, inputs, a, c)?;
    let r = enqueue(rt, &plans, inputs, a, c).and_then(|()| {
        for (dev, p) in plans.iter().enumerate() {
            if p.matrices > 0 {
                let l = sized(rt.lane(dev), dev, "synchronisation")?;
                rt.synchronize_on(dev, On::Side(&l.copy))?;
            }
            rt.synchronize_on(dev, On::Main)?;
        }
        Ok(())
    });
    if let Err(e) = r {
        // Copies may be left in flight into the staging buffers: let them end first.
        for (dev, p) in plans.iter().enumerate() {
            if let Some(l) = rt.lane(dev).filter(|_| p.matrices > 0) {
                let _ = rt.synchronize_on(dev, On::Side(&l.copy));
            }
            let _ = rt.synchronize_on(dev, On::Main);
        }
        return Err(e);
    }
    read(rt, &plans)
}

/// Checks and sizes everything before anything is enqueued: one square batch, input, A and C
/// per device, the GEMM library present, each device's copy lane large enough.
fn plan<R: GpuStreams>(
    rt: &mut R,
    batches: &[GemmBatch],
    inputs: &[HostBuf],
    a: &[R::Buf],
    c: &[R::Buf],
) -> BackendResult<Vec<StepPlan<R::GemmPlan>>> {
    let g = rt.local_devices();
    if batches.len() != g || inputs.len() != g || a.len() != g || c.len() != g {
        return Err(BackendError::check(format!(
            "a batch step needs one batch, input, A and C per local device ({g})"
        )));
    }
    let mut plans = Vec::with_capacity(g);
    for dev in 0..g {
        let bt = batches[dev];
        let MatmulShape { m, n, k } = bt.shape;
        if m != n || n != k || bt.shared_b {
            return Err(BackendError::Unsupported(format!(
                "an overlapped batch step squares square matrices, not {}",
                bt.shape
            )));
        }
        let dtype = inputs[dev].dtype();
        let mat = bt.a_len();
        let elems = bt.count * mat;
        if inputs[dev].len() != elems {
            return Err(BackendError::check(format!(
                "batch input of {} elements for {} matrices of {mat}",
                inputs[dev].len(),
                bt.count
            )));
        }
        check_buf("batch A", &a[dev], dev, dtype, elems)?;
        check_buf("batch C", &c[dev], dev, dtype, elems)?;
        let matrix_bytes = mat
            .checked_mul(dtype.size_bytes() as usize)
            .ok_or_else(|| {
                BackendError::check(format!("{mat} {dtype} elements do not fit in memory"))
            })?;
        let gemm = rt.gemm_plan(dev, &GemmBatch { count: 1, ..bt }, dtype)?;
        plans.push(StepPlan {
            matrices: bt.count,
            matrix_bytes,
            gemm,
            dtype,
        });
        if bt.count > 0 {
            fit_lane(rt, dev, bt.count * matrix_bytes, bt.count)?;
        }
    }
    Ok(plans)
}

/// After the step has synchronised: the products, and the timing from the events (the
/// device with the longest span speaks for the rank).
fn read<R: GpuStreams>(
    rt: &R,
    plans: &[StepPlan<R::GemmPlan>],
) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
    let mut timing: Option<OverlapTiming> = None;
    let mut outputs = Vec::with_capacity(plans.len());
    for (dev, p) in plans.iter().enumerate() {
        let count = p.matrices;
        let mb = p.matrix_bytes;
        let mut out = HostBuf::zeros(p.dtype, count * mb / p.dtype.size_bytes() as usize)?;
        if count == 0 {
            outputs.push(out);
            continue;
        }
        let lane = sized(rt.lane(dev), dev, "read-back")?;
        let ev = |j, w| &lane.events[event_index(j, w)];
        let span =
            |f: usize, t: usize, j0: usize, j1: usize| rt.elapsed_s(dev, ev(j0, f), ev(j1, t));
        let mut ins = Vec::with_capacity(count);
        let mut gemms = Vec::with_capacity(count);
        let mut outs = Vec::with_capacity(count);
        for j in 0..count {
            ins.push(span(0, 1, j, j)?);
            gemms.push(span(2, 3, j, j)?);
            outs.push(span(4, 5, j, j)?);
        }
        let whole = span(0, 5, 0, count - 1)?;
        let t = overlap_timing(&ins, &gemms, &outs, whole);
        if timing.is_none_or(|x| t.span_s > x.span_s) {
            timing = Some(t);
        }
        // SAFETY: both copy streams and main streams are synchronised, so the copy engine no
        // longer writes the staging buffer; it holds `count·mb` bytes (sized above) and `out`
        // exactly that many.
        unsafe {
            std::ptr::copy_nonoverlapping(lane.pin_out.ptr(), out.as_mut_ptr(), count * mb);
        }
        outputs.push(out);
    }
    Ok((outputs, timing))
}

/// Enqueues the copies and GEMMs of an overlapped step on every device, interleaving devices
/// so each one gets its first matrix early.
fn enqueue<R: GpuStreams>(
    rt: &R,
    plans: &[StepPlan<R::GemmPlan>],
    inputs: &[HostBuf],
    a: &[R::Buf],
    c: &[R::Buf],
) -> BackendResult<()> {
    let orders: Vec<Vec<CopyStep>> = plans.iter().map(|p| copy_order(p.matrices)).collect();
    // The copy stream must see the buffers' allocation and earlier writes on the main stream
    // before it touches them.
    for (dev, p) in plans.iter().enumerate() {
        if let Some(l) = rt.lane(dev).filter(|_| p.matrices > 0) {
            rt.record(dev, rt.gate(dev), On::Main)?;
            rt.wait(dev, On::Side(&l.copy), rt.gate(dev))?;
        }
    }
    let longest = orders.iter().map(Vec::len).max().unwrap_or(0);
    for step in 0..longest {
        for (dev, order) in orders.iter().enumerate() {
            match order.get(step) {
                Some(&CopyStep::In(j)) => {
                    enqueue_in_and_gemm(rt, dev, j, &plans[dev], &inputs[dev], &a[dev], &c[dev])?
                }
                Some(&CopyStep::Out(j)) => {
                    enqueue_out(rt, dev, j, plans[dev].matrix_bytes, &c[dev])?
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// Matrix j of device `dev`: staged into pinned memory, copied to A on the copy stream,
/// squared into C on the main stream once the copy is done.
fn enqueue_in_and_gemm<R: GpuStreams>(
    rt: &R,
    dev: usize,
    j: usize,
    plan: &StepPlan<R::GemmPlan>,
    input: &HostBuf,
    a: &R::Buf,
    c: &R::Buf,
) -> BackendResult<()> {
    let l = sized(rt.lane(dev), dev, "copy-in")?;
    let mb = plan.matrix_bytes;
    let ev = |j, w| &l.events[event_index(j, w)];
    let copy = On::Side(&l.copy);
    // SAFETY: matrix j of the input holds `mb` bytes at j·mb (lengths checked in `plan`); the
    // staging region j is written by the host before its copy is enqueued and never again in
    // this step.
    unsafe {
        std::ptr::copy_nonoverlapping(input.as_ptr().add(j * mb), l.pin_in.ptr().add(j * mb), mb);
    }
    let at = (j * mb) as u64;
    rt.record(dev, ev(j, 0), copy)?;
    // SAFETY: destination: matrix j of A (checked to hold it); source: staging region j of
    // pinned memory that stays allocated until the step synchronises the copy stream.
    unsafe {
        rt.copy_async(
            dev,
            Dir::HostToDevice,
            a.region().ptr + at,
            l.pin_in.ptr().add(j * mb) as u64,
            mb,
            copy,
        )
    }?;
    rt.record(dev, ev(j, 1), copy)?;
    rt.wait(dev, On::Main, ev(j, 1))?;
    rt.record(dev, ev(j, 2), On::Main)?;
    let (a_j, c_j) = (a.region().ptr + at, c.region().ptr + at);
    // SAFETY: A_j and C_j are matrix j of buffers checked to hold the whole batch; C and A are
    // distinct allocations; both live until the step synchronises.
    unsafe { rt.gemm_on_main(dev, &plan.gemm, a_j, a_j, c_j) }?;
    rt.record(dev, ev(j, 3), On::Main)?;
    Ok(())
}

/// Product j of device `dev` (`mb` bytes): copied from C to pinned memory on the copy stream
/// once its GEMM is done.
fn enqueue_out<R: GpuStreams>(
    rt: &R,
    dev: usize,
    j: usize,
    mb: usize,
    c: &R::Buf,
) -> BackendResult<()> {
    let l = sized(rt.lane(dev), dev, "copy-out")?;
    let ev = |j, w| &l.events[event_index(j, w)];
    let copy = On::Side(&l.copy);
    rt.wait(dev, copy, ev(j, 3))?;
    rt.record(dev, ev(j, 4), copy)?;
    // SAFETY: source: product j in C (checked); destination: staging region j of pinned
    // memory, reached only through raw pointers until the step has synchronised.
    unsafe {
        rt.copy_async(
            dev,
            Dir::DeviceToHost,
            l.pin_out.ptr().add(j * mb) as u64,
            c.region().ptr + (j * mb) as u64,
            mb,
            copy,
        )
    }?;
    rt.record(dev, ev(j, 5), copy)?;
    Ok(())
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
    fn a_missing_lane_is_a_check_error_naming_device_and_step() {
        let present = 7u8;
        assert_eq!(*sized(Some(&present), 0, "copy-in").unwrap(), 7);
        let e = sized::<u8>(None, 3, "copy-out").unwrap_err();
        assert!(
            matches!(
                e,
                BackendError::Device(crate::backend::DeviceError::Check(_))
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "batch_matmul: no copy lane for device 3 at the copy-out: \
             the plan step did not size the lanes"
        );
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
