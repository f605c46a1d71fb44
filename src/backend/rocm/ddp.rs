//! ddp_step's non-blocking all-reduces on the ROCm backend, ordered as on the CUDA backend
//! (`src/backend/cuda/ddp.rs`) and as PyTorch DDP orders them.
//!
//! Each GPU gets a communication stream beside its main (compute) stream. Starting a bucket's
//! all-reduce records an event on the compute stream right after the bucket's last gradient
//! copy, makes the communication stream wait for it (`hipStreamWaitEvent`), enqueues RCCL's
//! all-reduce there (one RCCL group over the rank's GPUs), and records a second event after
//! it. The host never blocks: backward GEMMs keep flowing onto the compute stream while RCCL
//! runs. Waiting for a bucket makes the compute stream wait for its second event, so the
//! step's end mark on the compute stream lies after every all-reduce.
//!
//! Fault `slow_comm` (tests): a host function on the communication stream sleeps after each
//! all-reduce (`hipLaunchHostFunc`): a slow, serial link, as on the other backends.

use super::backend::RocmBackend;
use super::hip::{CopyKind, Event};
use super::memory::RocmBuf;
use super::RocmError;
use crate::backend::ccl::{self, Resolved};
use crate::backend::{Backend, BackendError, BackendResult, CollectiveCall, OverlapSettings};
use crate::params::{Progress, Workload};
use std::ffi::c_void;

/// An all-reduce between start and wait.
pub(super) struct InFlight {
    ticket: u64,
    bufs: Vec<RocmBuf>,
    /// Per device: recorded on the compute stream before the all-reduce.
    ready: Vec<Event>,
    /// Per device: recorded on the communication stream after it.
    done: Vec<Event>,
}

/// What the backend keeps for ddp_step between calls. The streams and events themselves
/// belong to the devices (destroyed with them); this holds which events are idle.
pub(super) struct State {
    settings: OverlapSettings,
    next_ticket: u64,
    inflight: Vec<InFlight>,
    /// Per local GPU: ordering events no in-flight all-reduce uses.
    spare: Vec<Vec<Event>>,
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
            spare: Vec::new(),
        }
    }
}

/// The host function of fault `slow_comm`: sleeps for the nanoseconds its argument carries
/// (the value itself, not a pointer to it, so nothing is allocated or freed).
unsafe extern "C" fn sleep_ns(arg: *mut c_void) {
    std::thread::sleep(std::time::Duration::from_nanos(arg as usize as u64));
}

impl RocmBackend {
    /// Why ddp_step cannot run here, if it cannot (no RCCL communicators).
    pub(super) fn ddp_support(&self) -> Result<(), RocmError> {
        self.comms.as_ref().map(|_| ()).map_err(|e| e.clone())
    }

    /// Creates the communication streams on first use and keeps `s` for later starts.
    pub(super) fn ddp_configure(&mut self, s: OverlapSettings) -> BackendResult<()> {
        if !self.ddp.inflight.is_empty() {
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
        for d in &mut self.devices {
            if d.comm.is_null() {
                self.hip.set_device(d.ordinal)?;
                d.comm = self.hip.stream_create()?;
            }
        }
        self.ddp.spare.resize_with(self.devices.len(), Vec::new);
        self.ddp.settings = s;
        Ok(())
    }

    /// An ordering event of local device `dev` (a spare one, or a new one the device owns).
    fn ddp_event(&mut self, dev: usize) -> BackendResult<Event> {
        if let Some(e) = self.ddp.spare[dev].pop() {
            return Ok(e);
        }
        let d = &mut self.devices[dev];
        self.hip.set_device(d.ordinal)?;
        let e = self.hip.event_create()?;
        d.order_events.push(e);
        Ok(e)
    }

    /// Starts the in-place all-reduce of `call.send_count` elements of `bufs` on the
    /// communication streams, after everything enqueued on the compute streams so far.
    pub(super) fn ddp_start(
        &mut self,
        call: &CollectiveCall,
        bufs: Vec<RocmBuf>,
    ) -> BackendResult<u64> {
        let g = self.devices.len();
        if call.workload != Workload::Allreduce || !call.in_place || bufs.len() != g {
            return Err(BackendError::check(format!(
                "a non-blocking all-reduce is in place with one buffer per local device ({g}); got {} of {}{}",
                crate::units::count(bufs.len(), "buffer", "buffers"),
                call.workload,
                if call.in_place { "" } else { " out of place" }
            )));
        }
        if self.ddp.spare.len() != g || self.devices.iter().any(|d| d.comm.is_null()) {
            self.ddp_configure(self.ddp.settings)?;
        }
        self.ddp_support()?;
        let eb = call.dtype.size_bytes() as usize;
        let mut resolved = Vec::new();
        for (dev, b) in bufs.iter().enumerate() {
            self.check_len("all-reduce bucket", b, dev, call.dtype, call.send_count)?;
            for c in ccl::plan(call, self.device_index(dev))? {
                resolved.push((dev, Resolved::new(c, None, b.region(), eb)?));
            }
        }
        let mut ready = Vec::with_capacity(g);
        let mut done = Vec::with_capacity(g);
        for dev in 0..g {
            ready.push(self.ddp_event(dev)?);
            done.push(self.ddp_event(dev)?);
        }
        // The bucket is complete once the compute stream has run up to here.
        for (dev, d) in self.devices.iter().enumerate() {
            self.hip.set_device(d.ordinal)?;
            self.hip.event_record(ready[dev], d.stream)?;
            self.hip.stream_wait_event(d.comm, ready[dev])?;
        }
        let streams: Vec<_> = self.devices.iter().map(|d| d.comm).collect();
        let started = self.rccl_group(call, &resolved, &streams);
        if let Err(e) = started {
            self.ddp.spare_back(ready, done);
            return Err(e);
        }
        let delay_ns = (self.ddp.settings.comm_delay_s * 1e9).round() as usize;
        for (dev, d) in self.devices.iter().enumerate() {
            self.hip.set_device(d.ordinal)?;
            if delay_ns > 0 {
                // SAFETY: `sleep_ns` calls no HIP function and reads nothing through its
                // argument (the delay travels as the pointer's value); the stream is live.
                unsafe {
                    self.hip
                        .launch_host_func(d.comm, sleep_ns, delay_ns as *mut c_void)
                }?;
            }
            self.hip.event_record(done[dev], d.comm)?;
        }
        let ticket = self.ddp.next_ticket;
        self.ddp.next_ticket += 1;
        self.ddp.inflight.push(InFlight {
            ticket,
            bufs,
            ready,
            done,
        });
        Ok(ticket)
    }

    /// Orders the compute streams after the all-reduce of `ticket` and hands its buffers back
    /// (the host does not wait: later work on the compute streams does).
    pub(super) fn ddp_wait(&mut self, ticket: u64) -> BackendResult<Vec<RocmBuf>> {
        let at = self
            .ddp
            .inflight
            .iter()
            .position(|f| f.ticket == ticket)
            .ok_or_else(|| {
                BackendError::check(format!("all-reduce ticket {ticket} is not in flight"))
            })?;
        let f = self.ddp.inflight.swap_remove(at);
        let mut waited = Ok(());
        for (dev, d) in self.devices.iter().enumerate() {
            waited = self
                .hip
                .set_device(d.ordinal)
                .and_then(|()| self.hip.stream_wait_event(d.stream, f.done[dev]));
            if waited.is_err() {
                break;
            }
        }
        // A wait or record already enqueued keeps the state it saw: the events may be
        // recorded again by the next all-reduce.
        self.ddp.spare_back(f.ready, f.done);
        waited?;
        Ok(f.bufs)
    }

    /// Enqueues `dst[dst_at..dst_at+len] = src[src_at..]` on local device `dev`'s compute
    /// stream (a gradient copied into its bucket).
    pub(super) fn ddp_copy(
        &mut self,
        dev: usize,
        dst: &mut RocmBuf,
        dst_at: usize,
        src: &RocmBuf,
        src_at: usize,
        len: usize,
    ) -> BackendResult<()> {
        let dtype = dst.dtype;
        let fits = |b: &RocmBuf, at: usize| at.checked_add(len).is_some_and(|e| e <= b.count);
        if dst.dev != dev
            || src.dev != dev
            || src.dtype != dtype
            || !fits(dst, dst_at)
            || !fits(src, src_at)
        {
            return Err(BackendError::check(format!(
                "device copy of {len} elements from [{src_at}..] of a {} {} buffer on device {} to [{dst_at}..] of a {} {} buffer on device {} (device {dev})",
                src.count, src.dtype, src.dev, dst.count, dst.dtype, dst.dev
            )));
        }
        if len == 0 {
            return Ok(());
        }
        let eb = dtype.size_bytes() as usize;
        let d = &self.devices[dev];
        self.hip.set_device(d.ordinal)?;
        // SAFETY: both ranges were checked above to lie inside live allocations of this
        // device (so the offsets stay inside them); `dst` is exclusively borrowed, so it is
        // not `src`; both stay allocated until the device has synchronised (RocmBuf's drop).
        unsafe {
            self.hip.memcpy_async(
                (dst.ptr() as *mut u8).add(dst_at * eb) as *mut c_void,
                (src.ptr() as *const u8).add(src_at * eb) as *const c_void,
                len * eb,
                CopyKind::DeviceToDevice,
                d.stream,
            )
        }?;
        Ok(())
    }

    /// Waits for every communication stream.
    pub(super) fn ddp_synchronize(&self) -> BackendResult<()> {
        for d in self.devices.iter().filter(|d| !d.comm.is_null()) {
            self.hip.set_device(d.ordinal)?;
            self.hip.stream_synchronize(d.comm)?;
        }
        Ok(())
    }
}

impl State {
    fn spare_back(&mut self, ready: Vec<Event>, done: Vec<Event>) {
        for (dev, (r, d)) in ready.into_iter().zip(done).enumerate() {
            self.spare[dev].extend([r, d]);
        }
    }
}
