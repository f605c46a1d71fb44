//! [`RocmBackend`]: device buffers on the GPUs (GCDs) a rank drives, RCCL collectives and
//! HIP-event timing, as the CUDA backend does with NCCL and CUDA events.
//!
//! Streams: each GPU has one stream that carries everything (copies, RCCL calls, rocBLAS
//! GEMMs, timing events), so stream order is the only synchronisation the timed paths need. Uploads and
//! downloads synchronise the stream before they return (HIP may read a pageable source after
//! `hipMemcpyAsync` returned), outside the timed window. ddp_step's all-reduces and
//! batch_matmul's overlapped copies add side streams ordered by events, through the stream
//! layer shared with the CUDA backend ([`super::ddp`], [`crate::backend::gpu_stream`]).

use super::hip::{CopyKind, Event, Hip, Stream};
use super::memory::RocmBuf;
use super::rccl::{Comm, Rccl};
use super::rocblas::{self, Rocblas};
use super::smi::SmiError;
use super::RocmError;
use crate::backend::ccl::{self, Resolved};
use crate::backend::gpu_gemm::GemmUnsupported;
use crate::backend::marks::{Mark, Ring};
use crate::backend::telemetry::Sampler;
use crate::backend::{gpu_ddp, gpu_pipeline};
use crate::backend::{
    Backend, BackendError, BackendResult, CollectiveCall, DevicePlan, GemmBatch, HostBuf,
    OverlapSettings, OverlapTiming, Unsupported,
};
use crate::params::{BackendKind, CaseParams, Collect, Dtype, ReduceOp, Workload};
use crate::results::schema::{BackendInfo, DeviceBinding, DeviceTelemetry, TimerInfo};
use crate::topology::affinity;
use std::ffi::c_void;
use std::sync::Arc;

/// The warning and label every run on the stand-in libraries carries.
pub const STANDIN_LABEL: &str = "STAND-IN: the ROCm libraries (HIP runtime, RCCL, rocBLAS, AMD SMI) are scalebench's CPU test doubles (standin/, SCALEBENCH_STANDIN=1), not an AMD GPU: results prove the device path runs and validates; no time, bandwidth or GFLOP/s here is a GPU's";

/// The name the stand-in HIP runtime gives every device.
pub(crate) const STANDIN_DEVICE_NAME: &str = "scalebench stand-in";

/// One GPU (one GCD on an MI250X) this rank drives.
pub(super) struct Device {
    pub(super) ordinal: i32,
    pub(super) name: String,
    /// The GCD's architecture (`gfx90a`) from the driver's topology, where it has one.
    pub(super) arch: Option<String>,
    /// Tells the two GCDs of an MI250X apart (each its own PCI function).
    pub(super) pci_bus_id: String,
    pub(super) memory_bytes: usize,
    /// The GCD's L2 (`hipDeviceAttributeL2CacheSize`), what `--buffers rotate` outgrows.
    pub(super) l2_cache_bytes: Option<u64>,
    /// Carries every operation on this GPU.
    pub(super) stream: Stream,
    /// One timing event per mark slot.
    pub(super) marks: Vec<Event>,
    /// The events of the work beside the main stream (ddp_step's ordering events,
    /// batch_matmul's timing events), all this device ever created (destroyed with it).
    pub(super) order_events: Vec<Event>,
    /// The rocBLAS handle on `stream` (`None`: the launch runs no GEMM, rocBLAS not opened).
    pub(super) blas: Option<BlasHandle>,
    pub(super) hip: Arc<Hip>,
}

/// A rocBLAS handle bound to its device's stream, destroyed on drop.
pub(super) struct BlasHandle {
    pub(super) handle: rocblas::Handle,
    pub(super) lib: Arc<Rocblas>,
}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        // SAFETY: created by `Rocblas::handle`, destroyed once; the owning device synchronised
        // its stream first (Device's drop).
        let _ = unsafe { self.lib.destroy(self.handle) };
    }
}

impl Device {
    /// `AMD Instinct MI250X gfx90a GCD 0000:c1:00.0 (64.0 GiB, HIP ordinal 0)`: the GCD, not
    /// the package, is the device (an MI250X shows as two).
    pub(super) fn describe(&self) -> String {
        let arch = self
            .arch
            .as_deref()
            .map_or(String::new(), |a| format!(" {a}"));
        format!(
            "{}{arch} GCD {} ({:.1} GiB, HIP ordinal {})",
            self.name,
            self.pci_bus_id,
            self.memory_bytes as f64 / f64::from(1u32 << 30),
            self.ordinal
        )
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.hip.set_device(self.ordinal).is_err() {
            return;
        }
        let _ = self.hip.device_synchronize();
        // Before the stream it is bound to.
        self.blas = None;
        for &e in self.marks.iter().chain(&self.order_events) {
            // SAFETY: created by this device, no work left that records it, destroyed once.
            let _ = unsafe { self.hip.event_destroy(e) };
        }
        // Side streams (ddp_step's communication streams, batch_matmul's copy streams)
        // destroy themselves (`super::ddp::SideStream`); only the main stream is the device's.
        if !self.stream.is_null() {
            // SAFETY: created for this device, synchronised above, destroyed once.
            let _ = unsafe { self.hip.stream_destroy(self.stream) };
        }
    }
}

/// The RCCL communicators of this process's GPUs, one per local device, aborted on drop
/// (frees local resources without waiting for peers, so a rank leaving early cannot hang).
pub(super) struct Comms {
    pub(super) comms: Vec<Comm>,
    pub(super) rccl: Arc<Rccl>,
}

impl Drop for Comms {
    fn drop(&mut self) {
        for c in self.comms.drain(..).filter(|c| !c.is_null()) {
            // SAFETY: `c` came from ncclCommInitRank and is released exactly once here.
            let _ = unsafe { self.rccl.comm_abort(c) };
        }
    }
}

/// RCCL and HIP events on the GPUs of one rank.
pub struct RocmBackend {
    pub(super) hip: Arc<Hip>,
    pub(super) rccl: Arc<Rccl>,
    pub(super) comms: Result<Comms, RocmError>,
    pub(super) devices: Vec<Device>,
    pub(super) rank: u32,
    pub(super) size: u32,
    pub(super) plan: DevicePlan,
    pub(super) hip_version: String,
    pub(super) rccl_version: String,
    /// rocBLAS's version where the launch runs a GEMM (rocBLAS opened), else `None`.
    pub(super) rocblas_version: Option<String>,
    pub(super) ring: Ring,
    pub(super) timer: TimerInfo,
    pub(super) warnings: Vec<String>,
    /// The devices are scalebench's stand-ins, not GPUs (labelled in every result).
    pub(super) standin: bool,
    /// The work beside the main streams: ddp_step's communication streams and all-reduces in
    /// flight, batch_matmul's copy lanes.
    pub(super) ddp: super::ddp::State,
    /// RCCL's INFO output, read per case (`None`: capture off).
    pub(super) nccl_log: Option<crate::backend::capture::LogTap>,
    /// AMD SMI sampling of the rank's GCDs (`None`: no AMD SMI, or switched off).
    pub(super) telemetry: Option<Sampler<SmiError>>,
    /// Why the HIP ordinal is not the node-local GPU number (one GCD per rank), if so.
    pub(super) ordinal_note: Option<String>,
}

impl RocmBackend {
    fn device(&self, dev: usize) -> BackendResult<&Device> {
        self.devices.get(dev).ok_or_else(|| {
            BackendError::check(format!(
                "local device {dev} does not exist (this rank drives {})",
                self.devices.len()
            ))
        })
    }

    fn check_buf(&self, what: &str, b: &RocmBuf, dev: usize, dtype: Dtype) -> BackendResult<()> {
        self.check_len(what, b, dev, dtype, 0)
    }

    /// `b` is a buffer of `dtype` on local device `dev` with at least `min` elements.
    pub(super) fn check_len(
        &self,
        what: &str,
        b: &RocmBuf,
        dev: usize,
        dtype: Dtype,
        min: usize,
    ) -> BackendResult<()> {
        if b.dev != dev || b.dtype != dtype || b.count < min {
            return Err(BackendError::check(format!(
                "{what}: a {} {} buffer on local device {} where {min} {dtype} elements on device {dev} are needed",
                b.count, b.dtype, b.dev
            )));
        }
        Ok(())
    }

    /// Enqueues `resolved` (checked calls, each with its local device) in one RCCL group,
    /// device `dev`'s calls on `streams[dev]`. On an error the communicators are aborted, so
    /// later collectives fail with the sentence instead of hanging.
    pub(super) fn rccl_group(
        &mut self,
        call: &CollectiveCall,
        resolved: &[(usize, Resolved)],
        streams: &[Stream],
    ) -> BackendResult<()> {
        let comms = self.comms.as_ref().map_err(|e| e.clone())?;
        self.rccl.group_start()?;
        let mut first_err = None;
        for (dev, r) in resolved {
            // SAFETY: `comms.comms[dev]` is this device's live communicator and `streams[dev]`
            // a live stream of it; the regions were checked against live buffers of this
            // device, which stay allocated until the device has synchronised (RocmBuf's drop).
            let out = unsafe {
                self.rccl
                    .launch(r, call.dtype, comms.comms[*dev], streams[*dev])
            };
            if let Err(e) = out {
                first_err = Some(e);
                break;
            }
        }
        // Close the group even after an error, or RCCL stays in group mode.
        if let Err(e) = self.rccl.group_end() {
            first_err.get_or_insert(e);
        }
        match first_err {
            Some(e) => {
                let failed = RocmError::CollectiveFailed {
                    workload: call.workload,
                    source: Box::new(e),
                };
                self.comms = Err(RocmError::CommsAborted(Box::new(failed.clone())));
                Err(failed.into())
            }
            None => Ok(()),
        }
    }

    /// Copies `bytes` between host and device on `dev`'s stream and waits for it.
    ///
    /// # Safety
    /// `host` is valid for `bytes` (writable for a download), `device` a live allocation of
    /// `dev` of at least `bytes`.
    unsafe fn copy_sync(
        &self,
        dev: usize,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        kind: CopyKind,
    ) -> BackendResult<()> {
        let d = self.device(dev)?;
        self.hip.set_device(d.ordinal)?;
        // SAFETY: the caller's guarantee; the stream is this device's and live.
        unsafe { self.hip.memcpy_async(dst, src, bytes, kind, d.stream) }?;
        self.hip.stream_synchronize(d.stream)?;
        Ok(())
    }
}

impl Drop for RocmBackend {
    fn drop(&mut self) {
        // Let queued work finish before the communicators go (abort does not wait for it).
        for d in &self.devices {
            if self.hip.set_device(d.ordinal).is_ok() {
                let _ = self.hip.stream_synchronize(d.stream);
            }
        }
        let _ = self.side_synchronize();
        self.comms = Err(RocmError::Check("dropped".into()));
    }
}

impl Backend for RocmBackend {
    type Buf = RocmBuf;
    type Mark = Mark;

    fn kind(&self) -> BackendKind {
        BackendKind::Rocm
    }

    fn info(&self) -> BackendInfo {
        let g = self.devices.len();
        let blas = match &self.rocblas_version {
            Some(v) => format!(
                "rocBLAS {v} rocblas_gemm_strided_batched_ex (f32 and f64 in their own precision; f16/bf16: f32 accumulation)"
            ),
            None => "rocBLAS not opened (no GEMM in this launch)".to_string(),
        };
        let rccl = match &self.comms {
            Ok(_) => format!(
                "RCCL {} (NCCL API) collectives, one RCCL rank per GPU ({})",
                self.rccl_version,
                if g > 1 {
                    format!("{g} GPUs per process driven by one thread: communicators created and collectives issued in one RCCL group")
                } else {
                    "one process per GPU, ncclCommInitRank".to_string()
                }
            ),
            Err(e) => format!("RCCL unavailable: {e}"),
        };
        BackendInfo {
            kind: BackendKind::Rocm,
            detail: format!(
                "{}{rccl}; {blas}; HIP runtime {} (libamdhip64.so, librccl.so and librocblas.so loaded at run time); ddp_step's all-reduces on a communication stream per GPU, ordered after the compute stream by HIP events; batch_matmul copies overlapped with GEMMs on a second stream through pinned staging",
                if self.standin {
                    format!("{STANDIN_LABEL}. ")
                } else {
                    String::new()
                },
                self.hip_version
            ),
        }
    }

    fn timer_info(&self) -> TimerInfo {
        self.timer.clone()
    }

    fn cache_bytes(&self, dev: usize) -> Option<u64> {
        self.devices.get(dev)?.l2_cache_bytes
    }

    fn local_devices(&self) -> usize {
        self.devices.len()
    }

    fn device_index(&self, dev: usize) -> u32 {
        self.rank * self.devices.len() as u32 + dev as u32
    }

    fn total_devices(&self) -> u32 {
        self.size * self.devices.len() as u32
    }

    fn device_bindings(&self) -> Vec<DeviceBinding> {
        let cpus = affinity::format_cpulist(&affinity::current_thread_cpus().unwrap_or_default());
        self.devices
            .iter()
            .enumerate()
            .map(|(w, d)| DeviceBinding {
                index: self.device_index(w),
                local_index: self.plan.local_indices.get(w).copied().unwrap_or(w as u32),
                cpus: cpus.clone(),
                name: match &self.ordinal_note {
                    Some(n) => format!("{}; {n}", d.describe()),
                    None => d.describe(),
                },
            })
            .collect()
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn capture_begin(&mut self) {
        if let Some(t) = &mut self.nccl_log {
            t.begin();
        }
    }

    fn capture_end(&mut self) -> Option<crate::results::schema::NcclCapture> {
        self.nccl_log.as_mut().map(|t| t.end())
    }

    fn telemetry_begin(&mut self) {
        if let Some(s) = &mut self.telemetry {
            s.begin();
        }
    }

    fn telemetry_end(&mut self) -> Vec<DeviceTelemetry> {
        let first = self.device_index(0);
        self.telemetry
            .as_mut()
            .map_or_else(Vec::new, |s| s.end_summaries(first))
    }

    fn supports(&self, p: &CaseParams) -> Result<(), Unsupported> {
        if !p.workload.is_collective() {
            rocblas::types(p.dtype).map_err(RocmUnsupported::Gemm)?;
            if let Some(s) = p.shape {
                rocblas::row_major(&GemmBatch {
                    shape: s,
                    count: 1,
                    shared_b: false,
                })
                .map_err(RocmUnsupported::Gemm)?;
            }
        }
        if p.workload == Workload::BatchMatmul
            && p.collect == Some(Collect::Reduce)
            && matches!(p.dtype, Dtype::F16 | Dtype::Bf16)
        {
            return Err(RocmUnsupported::HostReduction(p.dtype).into());
        }
        if p.workload == Workload::Alltoall && p.in_place == Some(true) {
            return Err(RocmUnsupported::InPlaceAlltoall.into());
        }
        Ok(())
    }

    fn alloc(&mut self, dev: usize, dtype: Dtype, count: usize) -> BackendResult<RocmBuf> {
        let d = self.device(dev)?;
        let ordinal = d.ordinal;
        Ok(RocmBuf::new(&self.hip, ordinal, dev, dtype, count)?)
    }

    fn upload(&mut self, dev: usize, buf: &mut RocmBuf, host: &HostBuf) -> BackendResult<()> {
        if buf.count != host.len() || buf.dtype != host.dtype() || buf.dev != dev {
            return Err(BackendError::check(format!(
                "upload of {} {} elements into a buffer of {} {} on device {}",
                host.len(),
                host.dtype(),
                buf.count,
                buf.dtype,
                buf.dev
            )));
        }
        if host.is_empty() {
            return Ok(());
        }
        debug_assert_eq!(host.byte_len(), buf.bytes());
        // SAFETY: the host buffer holds exactly the buffer's bytes (checked above), which the
        // device allocation holds; the copy has finished when this returns.
        unsafe {
            self.copy_sync(
                dev,
                buf.ptr(),
                host.as_ptr() as *const c_void,
                host.byte_len(),
                CopyKind::HostToDevice,
            )
        }
    }

    fn download(&mut self, dev: usize, buf: &RocmBuf) -> BackendResult<HostBuf> {
        let mut h = HostBuf::zeros(buf.dtype, buf.count)?;
        if buf.count == 0 {
            return Ok(h);
        }
        debug_assert_eq!(h.byte_len(), buf.bytes());
        let n = h.byte_len();
        // SAFETY: `h` is exclusively borrowed and holds exactly the buffer's bytes; every bit
        // pattern is a valid element; the copy has finished when this returns.
        unsafe {
            self.copy_sync(
                dev,
                h.as_mut_ptr() as *mut c_void,
                buf.ptr(),
                n,
                CopyKind::DeviceToHost,
            )
        }?;
        Ok(h)
    }

    fn collective(
        &mut self,
        call: &CollectiveCall,
        send: &[RocmBuf],
        recv: &mut [RocmBuf],
    ) -> BackendResult<()> {
        self.comms.as_ref().map_err(|e| e.clone())?;
        let g = self.devices.len();
        if recv.len() != g || (!call.in_place && send.len() != g) {
            return Err(BackendError::check(format!(
                "a collective needs one buffer per local device ({g}), got {} send and {} receive",
                send.len(),
                recv.len()
            )));
        }
        let eb = call.dtype.size_bytes() as usize;
        // Plan and check every call of every device before RCCL sees any of them.
        let mut resolved = Vec::new();
        for dev in 0..g {
            self.check_buf("receive", &recv[dev], dev, call.dtype)?;
            let send_r = if call.in_place {
                None
            } else {
                self.check_buf("send", &send[dev], dev, call.dtype)?;
                Some(send[dev].region())
            };
            let recv_r = recv[dev].region();
            for c in ccl::plan(call, self.device_index(dev))? {
                resolved.push((dev, Resolved::new(c, send_r, recv_r, eb)?));
            }
        }
        let streams: Vec<_> = self.devices.iter().map(|d| d.stream).collect();
        self.rccl_group(call, &resolved, &streams)
    }

    fn gemm(
        &mut self,
        batches: &[GemmBatch],
        a: &[RocmBuf],
        b: &[RocmBuf],
        c: &mut [RocmBuf],
    ) -> BackendResult<()> {
        let g = self.devices.len();
        if batches.len() != g || a.len() != g || b.len() != g || c.len() != g {
            return Err(BackendError::check(format!(
                "a GEMM needs one batch, A, B and C per local device ({g})"
            )));
        }
        for dev in 0..g {
            let bt = batches[dev];
            if bt.count == 0 || bt.c_len() == 0 {
                continue;
            }
            let dtype = a[dev].dtype;
            let nb = if bt.shared_b { 1 } else { bt.count };
            self.check_len("GEMM A", &a[dev], dev, dtype, bt.count * bt.a_len())?;
            self.check_len("GEMM B", &b[dev], dev, dtype, nb * bt.b_len())?;
            self.check_len("GEMM C", &c[dev], dev, dtype, bt.count * bt.c_len())?;
            let params = rocblas::row_major(&bt)?;
            let types = rocblas::types(dtype)?;
            let d = &self.devices[dev];
            let blas = d.blas.as_ref().ok_or_else(|| {
                BackendError::check(
                    "a GEMM on a ROCm backend set up without rocBLAS (the launch planned no GEMM)",
                )
            })?;
            self.hip.set_device(d.ordinal)?;
            // SAFETY: the handle is this device's (now current) and bound to its stream; A, B
            // and C were checked above to be buffers of this device holding the whole batch;
            // C is exclusively borrowed, so it overlaps neither A nor B; all stay allocated
            // until the device has synchronised (RocmBuf's drop).
            unsafe {
                blas.lib.gemm(
                    blas.handle,
                    &params,
                    types,
                    a[dev].ptr(),
                    b[dev].ptr(),
                    c[dev].ptr(),
                )
            }?;
        }
        Ok(())
    }

    fn gemm_accumulator(&self, dtype: Dtype) -> Dtype {
        crate::backend::gpu_gemm::accumulator(dtype)
    }

    fn reduction_tolerance(&self, dtype: Dtype, op: ReduceOp) -> f64 {
        match op {
            ReduceOp::Avg => ccl::avg_tolerance(dtype, self.total_devices()),
            _ => 0.0,
        }
    }

    fn overlaps_batch_transfers(&self) -> bool {
        true
    }

    fn square_batch(
        &mut self,
        batches: &[GemmBatch],
        inputs: &[HostBuf],
        a: &mut [RocmBuf],
        c: &mut [RocmBuf],
    ) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
        self.prepare_lanes()?;
        gpu_pipeline::square_batch(self, batches, inputs, a, c)
    }

    fn overlap_support(&self) -> Result<(), Unsupported> {
        self.ddp_support()
            .map_err(|e| RocmUnsupported::NoCommunicators(e).into())
    }

    fn set_overlap(&mut self, settings: OverlapSettings) -> BackendResult<()> {
        gpu_ddp::configure(self, settings)
    }

    fn allreduce_start(&mut self, call: &CollectiveCall, bufs: Vec<RocmBuf>) -> BackendResult<u64> {
        gpu_ddp::start(self, call, bufs)
    }

    fn allreduce_wait(&mut self, ticket: u64) -> BackendResult<Vec<RocmBuf>> {
        gpu_ddp::wait(self, ticket)
    }

    fn copy_within(
        &mut self,
        dev: usize,
        dst: &mut RocmBuf,
        dst_at: usize,
        src: &RocmBuf,
        src_at: usize,
        len: usize,
    ) -> BackendResult<()> {
        gpu_ddp::copy(self, dev, dst, dst_at, src, src_at, len)
    }

    fn synchronize(&mut self) -> BackendResult<()> {
        for d in &self.devices {
            self.hip.set_device(d.ordinal)?;
            self.hip
                .stream_synchronize(d.stream)
                .map_err(|e| e.context(format!("HIP device {}", d.ordinal)))?;
        }
        self.side_synchronize()?;
        if let Ok(c) = &self.comms {
            for (i, &comm) in c.comms.iter().enumerate() {
                self.rccl
                    .async_error(comm)
                    .map_err(|e| e.context(format!("local device {i}")))?;
            }
        }
        Ok(())
    }

    fn marks_in_flight(&self) -> usize {
        crate::backend::marks::SLOTS
    }

    fn mark(&mut self) -> BackendResult<Mark> {
        let m = self.ring.take();
        let slot = self.ring.check(m)?;
        for d in &self.devices {
            self.hip.set_device(d.ordinal)?;
            self.hip.event_record(d.marks[slot], d.stream)?;
        }
        Ok(m)
    }

    fn elapsed_s(&mut self, from: Mark, to: Mark) -> BackendResult<f64> {
        let a = self.ring.check(from)?;
        let b = self.ring.check(to)?;
        let mut longest = 0.0f64;
        for d in &self.devices {
            self.hip.set_device(d.ordinal)?;
            longest = longest.max(self.hip.elapsed_s(d.marks[a], d.marks[b])?);
        }
        Ok(longest)
    }
}

/// Why the ROCm backend cannot run a case (it is skipped with this sentence).
#[derive(Debug, Clone)]
pub enum RocmUnsupported {
    /// RCCL has no in-place all-to-all (grouped send/recv from and into one buffer races).
    InPlaceAlltoall,
    /// RCCL's communicators did not start, so nothing can overlap an all-reduce (ddp_step).
    NoCommunicators(RocmError),
    /// rocBLAS cannot take this GEMM (its type or dimensions).
    Gemm(GemmUnsupported),
    /// `batch_matmul --collect reduce` sums on the host and through MPI, which have no
    /// arithmetic for this type.
    HostReduction(Dtype),
}

impl std::fmt::Display for RocmUnsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RocmUnsupported::InPlaceAlltoall => f.write_str("RCCL has no in-place all-to-all (grouped send/recv from and into one buffer races): use --in-place no"),
            RocmUnsupported::NoCommunicators(e) => e.fmt(f),
            RocmUnsupported::Gemm(e) => e.fmt(f),
            RocmUnsupported::HostReduction(dtype) => write!(
                f,
                "batch_matmul --collect reduce sums the products on the host and through MPI, which have no {dtype} arithmetic: use --collect gather, or f32"
            ),
        }
    }
}

impl std::error::Error for RocmUnsupported {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Displayed itself, so its sources come next.
            RocmUnsupported::Gemm(e) => e.source(),
            RocmUnsupported::NoCommunicators(e) => e.source(),
            _ => None,
        }
    }
}

impl From<RocmUnsupported> for Unsupported {
    fn from(e: RocmUnsupported) -> Unsupported {
        Unsupported::Rocm(e)
    }
}
