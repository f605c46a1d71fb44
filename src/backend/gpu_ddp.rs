//! ddp_step's non-blocking all-reduces on the GPU backends (CUDA with NCCL, ROCm with RCCL),
//! ordered as PyTorch DDP orders them, written once over [`GpuStreams`].
//!
//! Each GPU gets a communication stream beside its main (compute) stream. Starting a bucket's
//! all-reduce records an event on the compute stream right after the bucket's last gradient
//! copy, makes the communication stream wait for it, enqueues the library's all-reduce there
//! (one NCCL/RCCL group over the rank's GPUs in hybrid mode, as every collective of these
//! backends), and records a second event after it. The host never blocks: backward GEMMs keep
//! flowing onto the compute stream while the all-reduce runs. Waiting for a bucket makes the
//! compute stream wait for its second event (DDP's `work.wait()` at the end of backward), so
//! the step's end mark on the compute stream lies after every all-reduce.
//!
//! Averaging uses the library's native `ncclAvg`, exact when the device count is a power of
//! two ([`crate::backend::ccl::avg_tolerance`]).
//!
//! Fault `slow_comm` (tests): a host function on the communication stream sleeps after each
//! all-reduce, so each completes no earlier than the delay after it started or the previous
//! one completed — a slow, serial link, as on the CPU backend.

use crate::backend::ccl::{self, Resolved};
use crate::backend::gpu_stream::{check_buf, sleep_ns, Dir, GpuBuf, GpuStreams, On};
use crate::backend::{BackendError, BackendResult, CollectiveCall, OverlapSettings};
use crate::params::{Progress, Workload};
use std::ffi::c_void;

/// One GPU's communication stream and its idle ordering events.
pub(crate) struct CommLane<R: GpuStreams> {
    pub(crate) stream: R::Stream,
    /// Events no in-flight all-reduce uses (they only order, so timing is off).
    spare: Vec<R::Event>,
}

/// An all-reduce between start and wait.
struct InFlight<R: GpuStreams> {
    ticket: u64,
    bufs: Vec<R::Buf>,
    /// Per device: recorded on the compute stream before the all-reduce.
    ready: Vec<R::Event>,
    /// Per device: recorded on the communication stream after it.
    done: Vec<R::Event>,
}

/// What a backend keeps for ddp_step between calls.
pub(crate) struct State<R: GpuStreams> {
    settings: OverlapSettings,
    next_ticket: u64,
    inflight: Vec<InFlight<R>>,
    /// One per local GPU once the first ddp case set the strategy (empty before).
    pub(crate) lanes: Vec<CommLane<R>>,
}

impl<R: GpuStreams> Default for State<R> {
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

impl<R: GpuStreams> State<R> {
    fn spare_back(&mut self, ready: Vec<R::Event>, done: Vec<R::Event>) {
        for (dev, (r, d)) in ready.into_iter().zip(done).enumerate() {
            self.lanes[dev].spare.extend([r, d]);
        }
    }

    /// Waits for every communication stream. Called by the ROCm backend (its synchronize and
    /// drop); a CUDA-only build has no caller.
    #[cfg_attr(not(feature = "rocm"), allow(dead_code))]
    pub(crate) fn synchronize_lanes(&self, rt: &R) -> BackendResult<()> {
        for (dev, l) in self.lanes.iter().enumerate() {
            rt.synchronize_on(dev, On::Side(&l.stream))?;
        }
        Ok(())
    }
}

/// Runs `f` with the backend's ddp state taken out of it, so `f` can use both (the state's
/// streams and events, the backend's calls) and puts the state back.
fn with_state<R: GpuStreams, T>(rt: &mut R, f: impl FnOnce(&mut State<R>, &mut R) -> T) -> T {
    let mut st = std::mem::take(rt.ddp_state());
    let out = f(&mut st, rt);
    *rt.ddp_state() = st;
    out
}

/// Creates the communication streams on first use and keeps `s` for later starts.
pub(crate) fn configure<R: GpuStreams>(rt: &mut R, s: OverlapSettings) -> BackendResult<()> {
    with_state(rt, |st, rt| configure_in(st, rt, s))
}

fn configure_in<R: GpuStreams>(
    st: &mut State<R>,
    rt: &mut R,
    s: OverlapSettings,
) -> BackendResult<()> {
    if !st.inflight.is_empty() {
        return Err(BackendError::check(
            "the overlap settings changed with all-reduces in flight",
        ));
    }
    if !s.comm_delay_s.is_finite() || s.comm_delay_s < 0.0 {
        return Err(BackendError::check(format!(
            "communication delay of {} s",
            s.comm_delay_s
        )));
    }
    for dev in st.lanes.len()..rt.local_devices() {
        let stream = rt.new_stream(dev)?;
        st.lanes.push(CommLane {
            stream,
            spare: Vec::new(),
        });
    }
    st.settings = s;
    Ok(())
}

/// Starts the in-place all-reduce of `call.send_count` elements of `bufs` on the
/// communication streams, after everything enqueued on the compute streams so far.
pub(crate) fn start<R: GpuStreams>(
    rt: &mut R,
    call: &CollectiveCall,
    bufs: Vec<R::Buf>,
) -> BackendResult<u64> {
    with_state(rt, |st, rt| start_in(st, rt, call, bufs))
}

fn start_in<R: GpuStreams>(
    st: &mut State<R>,
    rt: &mut R,
    call: &CollectiveCall,
    bufs: Vec<R::Buf>,
) -> BackendResult<u64> {
    let g = rt.local_devices();
    if call.workload != Workload::Allreduce || !call.in_place || bufs.len() != g {
        return Err(BackendError::check(format!(
            "a non-blocking all-reduce is in place with one buffer per local device ({g}); got {} of {}{}",
            crate::units::count(bufs.len(), "buffer", "buffers"),
            call.workload,
            if call.in_place { "" } else { " out of place" }
        )));
    }
    if st.lanes.len() != g {
        configure_in(st, rt, st.settings)?;
    }
    rt.ccl_ready()?;
    let eb = call.dtype.size_bytes() as usize;
    let mut resolved = Vec::new();
    for (dev, b) in bufs.iter().enumerate() {
        check_buf("all-reduce bucket", b, dev, call.dtype, call.send_count)?;
        for c in ccl::plan(call, rt.device_index(dev))? {
            resolved.push((dev, Resolved::new(c, None, b.region(), eb)?));
        }
    }
    let mut ready = Vec::with_capacity(g);
    let mut done = Vec::with_capacity(g);
    for dev in 0..g {
        let r = match take_event(st, rt, dev) {
            Ok(e) => e,
            Err(e) => {
                st.spare_back(ready, done);
                return Err(e);
            }
        };
        let d = match take_event(st, rt, dev) {
            Ok(e) => e,
            Err(e) => {
                st.lanes[dev].spare.push(r);
                st.spare_back(ready, done);
                return Err(e);
            }
        };
        ready.push(r);
        done.push(d);
    }
    let started = enqueue(st, rt, call, &resolved, &ready, &done);
    if let Err(e) = started {
        st.spare_back(ready, done);
        return Err(e);
    }
    let ticket = st.next_ticket;
    st.next_ticket += 1;
    st.inflight.push(InFlight {
        ticket,
        bufs,
        ready,
        done,
    });
    Ok(ticket)
}

/// An ordering event of local device `dev` (a spare one, or a new one).
fn take_event<R: GpuStreams>(st: &mut State<R>, rt: &mut R, dev: usize) -> BackendResult<R::Event> {
    match st.lanes[dev].spare.pop() {
        Some(e) => Ok(e),
        None => rt.new_event(dev, false),
    }
}

/// The all-reduce's order on every device: compute → `ready` → communication stream, the
/// group, the slow link's delay where set, `done`.
fn enqueue<R: GpuStreams>(
    st: &State<R>,
    rt: &mut R,
    call: &CollectiveCall,
    resolved: &[(usize, Resolved)],
    ready: &[R::Event],
    done: &[R::Event],
) -> BackendResult<()> {
    // The bucket is complete once the compute stream has run up to here.
    for (dev, l) in st.lanes.iter().enumerate() {
        rt.record(dev, &ready[dev], On::Main)?;
        rt.wait(dev, On::Side(&l.stream), &ready[dev])?;
    }
    let streams: Vec<&R::Stream> = st.lanes.iter().map(|l| &l.stream).collect();
    rt.ccl_group(call, resolved, &streams)?;
    let delay_ns = (st.settings.comm_delay_s * 1e9).round() as usize;
    for (dev, l) in st.lanes.iter().enumerate() {
        if delay_ns > 0 {
            // SAFETY: `sleep_ns` calls no runtime function and reads nothing through its
            // argument (the delay travels as the pointer's value).
            unsafe {
                rt.launch_host_func(dev, On::Side(&l.stream), sleep_ns, delay_ns as *mut c_void)
            }?;
        }
        rt.record(dev, &done[dev], On::Side(&l.stream))?;
    }
    Ok(())
}

/// Orders the compute streams after the all-reduce of `ticket` and hands its buffers back
/// (the host does not wait: later work on the compute streams does).
pub(crate) fn wait<R: GpuStreams>(rt: &mut R, ticket: u64) -> BackendResult<Vec<R::Buf>> {
    with_state(rt, |st, rt| {
        let at = st
            .inflight
            .iter()
            .position(|f| f.ticket == ticket)
            .ok_or_else(|| {
                BackendError::check(format!("all-reduce ticket {ticket} is not in flight"))
            })?;
        let f = st.inflight.swap_remove(at);
        let waited = (0..f.done.len()).try_for_each(|dev| rt.wait(dev, On::Main, &f.done[dev]));
        // A wait or record already enqueued keeps the state it saw: the events may be
        // recorded again by the next all-reduce.
        st.spare_back(f.ready, f.done);
        waited?;
        Ok(f.bufs)
    })
}

/// Enqueues `dst[dst_at..dst_at+len] = src[src_at..]` on local device `dev`'s compute stream
/// (a gradient copied into its bucket).
pub(crate) fn copy<R: GpuStreams>(
    rt: &R,
    dev: usize,
    dst: &mut R::Buf,
    dst_at: usize,
    src: &R::Buf,
    src_at: usize,
    len: usize,
) -> BackendResult<()> {
    let dtype = dst.dtype();
    let fits = |b: &R::Buf, at: usize| at.checked_add(len).is_some_and(|e| e <= b.count());
    if dev >= rt.local_devices()
        || dst.dev() != dev
        || src.dev() != dev
        || src.dtype() != dtype
        || !fits(dst, dst_at)
        || !fits(src, src_at)
    {
        return Err(BackendError::check(format!(
            "device copy of {len} elements from [{src_at}..] of a {} {} buffer on device {} to [{dst_at}..] of a {} {} buffer on device {} (device {dev})",
            src.count(),
            src.dtype(),
            src.dev(),
            dst.count(),
            dst.dtype(),
            dst.dev()
        )));
    }
    if len == 0 {
        return Ok(());
    }
    let eb = dtype.size_bytes();
    // SAFETY: both ranges were checked above to lie inside live allocations of this device;
    // `dst` is exclusively borrowed, so it is not `src`; both stay allocated until the stream
    // has run the copy (buffers are freed after a device synchronisation).
    unsafe {
        rt.copy_async(
            dev,
            Dir::DeviceToDevice,
            dst.region().ptr + dst_at as u64 * eb,
            src.region().ptr + src_at as u64 * eb,
            len * eb as usize,
            On::Main,
        )
    }
}
