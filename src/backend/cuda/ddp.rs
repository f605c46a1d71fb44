//! ddp_step's non-blocking all-reduces on the CUDA backend, ordered as PyTorch DDP orders them.
//!
//! Each GPU gets a communication stream beside its main (compute) stream. Starting a bucket's
//! all-reduce records an event on the compute stream right after the bucket's last gradient
//! copy (`cuEventRecord`), makes the communication stream wait for it (`cuStreamWaitEvent`),
//! enqueues NCCL's all-reduce there (one NCCL group over the rank's GPUs in hybrid mode, as
//! every collective of this backend), and records a second event after it. The host never
//! blocks: backward GEMMs keep flowing onto the compute stream while NCCL runs. Waiting for a
//! bucket makes the compute stream wait for its second event (DDP's `work.wait()` at the end
//! of backward), so the step's end mark on the compute stream lies after every all-reduce.
//!
//! Averaging uses NCCL's native `ncclAvg` (NCCL 2.10+, checked at set-up), exact when the
//! device count is a power of two ([`super::nccl::avg_tolerance`]).
//!
//! Fault `slow_comm` (tests): a host function on the communication stream sleeps after each
//! all-reduce (`cuLaunchHostFunc`), so each completes no earlier than the delay after it
//! started or the previous one completed — a slow, serial link, as on the CPU backend.

use super::backend::CudaBackend;
use super::ddp_state::{driver, CommLane, InFlight};
use super::error::CudaError;
use super::memory::DeviceBuf;
use super::nccl::{self, Resolved};
use crate::backend::{Backend, BackendError, BackendResult, CollectiveCall, OverlapSettings};
use crate::params::Workload;
use cudarc::driver::sys as dsys;
use cudarc::driver::CudaEvent;
use std::ffi::c_void;

/// The host function of fault `slow_comm`: sleeps for the nanoseconds its argument carries
/// (the value itself, not a pointer to it, so nothing is allocated or freed).
extern "C" fn sleep_ns(arg: *mut c_void) {
    std::thread::sleep(std::time::Duration::from_nanos(arg as usize as u64));
}

impl CudaBackend {
    /// Why ddp_step cannot run here, if it cannot (no NCCL).
    pub(super) fn ddp_support(&self) -> Result<(), CudaError> {
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
        if self.ddp.lanes.is_empty() {
            for d in &self.devices {
                let stream = d.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
                self.ddp.lanes.push(CommLane {
                    stream,
                    spare: Vec::new(),
                });
            }
        }
        self.ddp.settings = s;
        Ok(())
    }

    /// An ordering event of local device `dev` (a spare one, or a new one).
    fn ddp_event(&mut self, dev: usize) -> BackendResult<CudaEvent> {
        match self.ddp.lanes[dev].spare.pop() {
            Some(e) => Ok(e),
            None => self.devices[dev]
                .ctx
                .new_event(None)
                .map_err(driver("cuEventCreate")),
        }
    }

    /// Starts the in-place all-reduce of `call.send_count` elements of `bufs` on the
    /// communication streams, after everything enqueued on the compute streams so far.
    pub(super) fn ddp_start(
        &mut self,
        call: &CollectiveCall,
        bufs: Vec<DeviceBuf>,
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
        if self.ddp.lanes.len() != g {
            self.ddp_configure(self.ddp.settings)?;
        }
        self.ddp_support()?;
        let eb = call.dtype.size_bytes() as usize;
        let mut resolved = Vec::new();
        for (dev, b) in bufs.iter().enumerate() {
            self.check_buf("all-reduce bucket", b, dev, call.dtype, call.send_count)?;
            for c in nccl::plan(call, self.device_index(dev))? {
                let r = Resolved::new(c, None, b.region(), eb)?;
                resolved.push((dev, r));
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
            let comm = &self.ddp.lanes[dev].stream;
            ready[dev]
                .record(&d.stream)
                .map_err(driver("cuEventRecord"))?;
            comm.wait(&ready[dev])
                .map_err(driver("cuStreamWaitEvent"))?;
        }
        let streams: Vec<_> = self
            .ddp
            .lanes
            .iter()
            .map(|l| l.stream.cu_stream())
            .collect();
        self.nccl_group(call, &resolved, &streams)?;
        let delay_ns = (self.ddp.settings.comm_delay_s * 1e9).round() as usize;
        for (dev, d) in self.devices.iter().enumerate() {
            let comm = &self.ddp.lanes[dev].stream;
            if delay_ns > 0 {
                d.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
                // SAFETY: `sleep_ns` calls no CUDA function and reads nothing through its
                // argument (the delay travels as the pointer's value); the stream is live.
                unsafe {
                    dsys::cuLaunchHostFunc(
                        comm.cu_stream(),
                        Some(sleep_ns),
                        delay_ns as *mut c_void,
                    )
                }
                .result()
                .map_err(CudaError::driver_call("cuLaunchHostFunc"))?;
            }
            done[dev].record(comm).map_err(driver("cuEventRecord"))?;
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
    pub(super) fn ddp_wait(&mut self, ticket: u64) -> BackendResult<Vec<DeviceBuf>> {
        let at = self
            .ddp
            .inflight
            .iter()
            .position(|f| f.ticket == ticket)
            .ok_or_else(|| {
                BackendError::check(format!("all-reduce ticket {ticket} is not in flight"))
            })?;
        let f = self.ddp.inflight.swap_remove(at);
        for (dev, d) in self.devices.iter().enumerate() {
            d.stream
                .wait(&f.done[dev])
                .map_err(driver("cuStreamWaitEvent"))?;
        }
        // A wait or record already enqueued keeps the state it saw: the events may be
        // recorded again by the next all-reduce.
        for (dev, (r, dn)) in f.ready.into_iter().zip(f.done).enumerate() {
            self.ddp.lanes[dev].spare.extend([r, dn]);
        }
        Ok(f.bufs)
    }

    /// Enqueues `dst[dst_at..dst_at+len] = src[src_at..]` on local device `dev`'s compute
    /// stream (a gradient copied into its bucket).
    pub(super) fn ddp_copy(
        &mut self,
        dev: usize,
        dst: &mut DeviceBuf,
        dst_at: usize,
        src: &DeviceBuf,
        src_at: usize,
        len: usize,
    ) -> BackendResult<()> {
        let dtype = dst.dtype;
        let fits = |b: &DeviceBuf, at: usize| at.checked_add(len).is_some_and(|e| e <= b.count);
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
        let eb = dtype.size_bytes();
        let d = self.device(dev)?;
        d.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: both ranges were checked above to lie inside live allocations of this
        // device; `dst` is exclusively borrowed, so it is not `src`; both stay allocated until
        // the stream has run the copy (buffers are freed after a device synchronisation).
        unsafe {
            dsys::cuMemcpyDtoDAsync_v2(
                dst.ptr() + dst_at as u64 * eb,
                src.ptr() + src_at as u64 * eb,
                len * eb as usize,
                d.stream.cu_stream(),
            )
        }
        .result()
        .map_err(|e| CudaError::driver_call("cuMemcpyDtoDAsync")(e).into())
    }
}
