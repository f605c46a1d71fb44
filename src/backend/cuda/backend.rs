//! [`CudaBackend`]: device buffers on the GPUs a rank drives, NCCL collectives, cuBLAS GEMMs,
//! CUDA-event timing, and batch_matmul's overlapped copies.
//!
//! The implementation is split by job: [`super::memory`] (buffers), [`super::setup`] (opening
//! GPUs, agreement, communicators), [`super::batch`] (batch_matmul's overlapped step),
//! [`super::ddp`] (ddp_step's non-blocking all-reduces, whose state is in
//! [`super::ddp_state`]); this file holds the state and the [`Backend`] trait. setup, batch
//! and ddp import this file and add methods to [`CudaBackend`]; it imports none of them (the
//! trait's methods call theirs through `self`), only the types it holds (memory, ddp_state),
//! which import nothing of it: the files depend one way.
//!
//! Streams: each GPU has one stream that carries everything (copies, NCCL, cuBLAS, timing
//! events), so stream order is the only synchronisation the timed paths need; cudarc's
//! per-buffer event tracking is switched off for that reason (it would add event records to
//! every launch). batch_matmul's overlapped step adds a copy stream with explicit events
//! ([`super::pipeline`]). Buffers are plain `cuMemAlloc` memory, freed after a device
//! synchronisation, so no queued operation can outlive its buffer.
//!
//! Telemetry: where NVML loads, a thread of its own samples each GPU every 100 ms during a
//! case (`SCALEBENCH_TELEMETRY=0` switches it off); where it does not, the launch says why
//! in its warnings and the cases carry no telemetry.

use super::cublas::{self, Blas, GemmUnsupported};
use super::error::CudaError;
use super::events::{self, Mark, Ring};
use super::memory::{byte_len, host_bytes, host_bytes_mut, DeviceMem};
use super::nccl::{self, Comms, Resolved};
use super::nvml::NvmlProbeError;
use super::pipeline::Lane;
use super::probe::{self, GpuInfo};
use crate::backend::telemetry::Sampler;
use crate::backend::{
    Backend, BackendError, BackendResult, CollectiveCall, DevicePlan, GemmBatch, HostBuf,
    OverlapSettings, OverlapTiming, Unsupported,
};
use crate::params::{BackendKind, CaseParams, Collect, Dtype, ReduceOp, Workload};
use crate::results::schema::{BackendInfo, DeviceBinding, DeviceTelemetry, TimerInfo};
use crate::topology::affinity;
use cudarc::driver::sys as dsys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::ffi::c_void;
use std::sync::Arc;

pub(crate) use super::memory::DeviceBuf;

/// One GPU this rank drives.
pub(super) struct Device {
    pub(super) info: GpuInfo,
    pub(super) ctx: Arc<CudaContext>,
    /// Carries every operation on this GPU.
    pub(super) stream: Arc<CudaStream>,
    pub(super) blas: Result<Blas, CudaError>,
    /// One timing event per mark slot.
    pub(super) marks: Vec<CudaEvent>,
    /// batch_matmul's copy stream and staging (created on first use).
    pub(super) lane: Option<Lane>,
    /// Orders the copy stream after the main stream at the start of an overlapped step.
    pub(super) gate: CudaEvent,
}

/// NCCL, cuBLAS and CUDA events on the GPUs of one rank.
pub struct CudaBackend {
    pub(super) comms: Result<Comms, CudaError>,
    pub(super) devices: Vec<Device>,
    pub(super) rank: u32,
    pub(super) size: u32,
    pub(super) plan: DevicePlan,
    pub(super) driver: String,
    pub(super) nccl_version: Option<String>,
    pub(super) cublas_version: Option<String>,
    pub(super) tf32: bool,
    pub(super) ring: Ring,
    pub(super) timer: TimerInfo,
    pub(super) ordinal_note: Option<String>,
    pub(super) warnings: Vec<String>,
    /// NVML sampling during cases (`None`: NVML missing or switched off).
    pub(super) telemetry: Option<Sampler<NvmlProbeError>>,
    /// The devices are scalebench's stand-ins, not GPUs (labelled in every result).
    pub(super) standin: bool,
    /// ddp_step's communication streams and all-reduces in flight.
    pub(super) ddp: super::ddp_state::State,
    /// NCCL's INFO output, read per case (`None`: capture off).
    pub(super) nccl_log: Option<crate::backend::capture::LogTap>,
}

impl CudaBackend {
    pub(super) fn device(&self, dev: usize) -> BackendResult<&Device> {
        self.devices.get(dev).ok_or_else(|| {
            BackendError::check(format!(
                "local device {dev} does not exist (this rank drives {})",
                self.devices.len()
            ))
        })
    }

    pub(super) fn check_buf(
        &self,
        what: &str,
        b: &DeviceBuf,
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

    /// Synchronises every stream, ignoring errors (before returning an error from a step
    /// that may have left copies in flight).
    pub(super) fn drain(&self) {
        for d in &self.devices {
            let _ = d.stream.synchronize();
            if let Some(l) = &d.lane {
                let _ = l.copy.synchronize();
            }
        }
        self.ddp.drain();
    }

    /// Enqueues `resolved` (checked calls, each with its local device) in one NCCL group,
    /// device `dev`'s calls on `streams[dev]`. On an error the communicators are aborted, so
    /// later collectives fail with the sentence instead of hanging.
    pub(super) fn nccl_group(
        &mut self,
        call: &CollectiveCall,
        resolved: &[(usize, Resolved)],
        streams: &[dsys::CUstream],
    ) -> BackendResult<()> {
        let comms = self.comms.as_ref().map_err(|e| e.clone())?;
        cudarc::nccl::result::group_start()
            .map_err(|e| CudaError::nccl(Some("ncclGroupStart"), e))?;
        let mut first_err = None;
        for (dev, r) in resolved {
            // SAFETY: `comms.get(dev)` is this device's live communicator and `streams[dev]`
            // a live stream of it; the regions were checked against live buffers of this
            // device, which stay allocated until the device has synchronised.
            let out = unsafe { r.launch(call.dtype, comms.get(*dev), streams[*dev] as _) };
            if let Err(e) = out {
                first_err = Some(e);
                break;
            }
        }
        // Close the group even after an error, or NCCL stays in group mode.
        if let Err(e) = cudarc::nccl::result::group_end() {
            first_err.get_or_insert(CudaError::nccl(Some("ncclGroupEnd"), e));
        }
        match first_err {
            Some(e) => {
                let failed = CudaError::CollectiveFailed {
                    workload: call.workload,
                    source: Box::new(e),
                };
                // A communicator is unusable after an error (NCCL's recovery is to abort it):
                // later collectives fail with this sentence instead of hanging on it. Abort
                // also ends this rank's part of the group already queued (no drain first:
                // it would wait for peers that may never come).
                self.comms = Err(CudaError::CommsAborted(Box::new(failed.clone())));
                Err(failed.into())
            }
            None => Ok(()),
        }
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // Let queued work finish before the communicators go (abort does not wait for it).
        self.drain();
        self.comms = Err(CudaError::Check("dropped".into()));
    }
}

impl Backend for CudaBackend {
    type Buf = DeviceBuf;
    type Mark = Mark;

    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn info(&self) -> BackendInfo {
        let g = self.devices.len();
        let nccl = match (&self.comms, &self.nccl_version) {
            (Ok(_), v) => format!(
                "NCCL {} collectives, one NCCL rank per GPU ({})",
                v.as_deref().unwrap_or("(version unknown)"),
                if g > 1 {
                    format!("{g} GPUs per process driven by one thread: communicators created and collectives issued in one NCCL group")
                } else {
                    "one process per GPU, ncclCommInitRank".to_string()
                }
            ),
            (Err(e), _) => format!("NCCL unavailable: {e}"),
        };
        let blas = match &self.cublas_version {
            Some(v) => format!(
                "cuBLAS {v} cublasGemmStridedBatchedEx (f32: {}; f16/bf16: f32 accumulation)",
                if self.tf32 {
                    "TF32 tensor cores, SCALEBENCH_CUDA_TF32=1"
                } else {
                    "FP32"
                }
            ),
            None => "cuBLAS unavailable".to_string(),
        };
        BackendInfo {
            kind: BackendKind::Cuda,
            detail: format!(
                "{}{nccl}; {blas}; driver supports CUDA {}; driver API through cudarc 0.19 (CUDA 11.4 bindings, libraries loaded at run time, no CUDA runtime library); batch_matmul copies overlapped with GEMMs on a second stream through pinned staging",
                if self.standin {
                    format!("{}. ", probe::STANDIN_LABEL)
                } else {
                    String::new()
                },
                self.driver
            ),
        }
    }

    fn timer_info(&self) -> TimerInfo {
        self.timer.clone()
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
            .map(|(w, d)| {
                let mut name = d.info.describe();
                if let Some(n) = &self.ordinal_note {
                    name.push_str(&format!("; {n}"));
                }
                if let Some(near) = &d.info.nearby_cpus {
                    name.push_str(&format!("; nearby CPUs {near}"));
                }
                DeviceBinding {
                    index: self.device_index(w),
                    local_index: self.plan.local_indices.get(w).copied().unwrap_or(w as u32),
                    cpus: cpus.clone(),
                    name,
                }
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
        if p.workload == Workload::Alltoall && p.in_place == Some(true) {
            return Err(CudaUnsupported::InPlaceAlltoall.into());
        }
        // ddp_step's gradient all-reduce sums.
        let op = p.op.unwrap_or(crate::params::ReduceOp::Sum);
        if let Some(why) =
            crate::params::nccl::no_kernel(p.workload, p.dtype, op, p.nccl_algo, p.nccl_proto)
        {
            return Err(CudaUnsupported::NcclForced(why).into());
        }
        if !p.workload.is_collective() {
            cublas::types(p.dtype, false).map_err(CudaUnsupported::Gemm)?;
            if let Some(s) = p.shape {
                cublas::row_major(&GemmBatch {
                    shape: s,
                    count: 1,
                    shared_b: false,
                })
                .map_err(CudaUnsupported::Gemm)?;
            }
        }
        if p.workload == Workload::BatchMatmul
            && p.collect == Some(Collect::Reduce)
            && matches!(p.dtype, Dtype::F16 | Dtype::Bf16)
        {
            return Err(CudaUnsupported::HostReduction(p.dtype).into());
        }
        Ok(())
    }

    fn alloc(&mut self, dev: usize, dtype: Dtype, count: usize) -> BackendResult<DeviceBuf> {
        let d = self.device(dev)?;
        let bytes = byte_len(dtype, count)?;
        let mem = DeviceMem::new(&d.ctx, bytes).map_err(|e| {
            BackendError::from(e.context(format!(
                "cuMemAlloc of {bytes} bytes on GPU {} ({})",
                d.info.ordinal, d.info.name
            )))
        })?;
        Ok(DeviceBuf {
            mem,
            dtype,
            count,
            dev,
        })
    }

    fn cache_bytes(&self, dev: usize) -> Option<u64> {
        self.devices.get(dev)?.info.l2_cache_bytes
    }

    fn upload(&mut self, dev: usize, buf: &mut DeviceBuf, host: &HostBuf) -> BackendResult<()> {
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
        let d = self.device(dev)?;
        let src = host_bytes(host);
        debug_assert!(src.len() == buf.bytes() && buf.bytes() <= buf.mem.bytes);
        d.ctx.bind_to_thread().map_err(CudaError::driver)?;
        // SAFETY: `src` is exactly the buffer's byte length (checked above), which the device
        // allocation holds. The source is pageable memory, so the call returns once CUDA has
        // staged it: `host` may change afterwards. The copy is ordered with everything else on
        // the device's stream.
        unsafe {
            dsys::cuMemcpyHtoDAsync_v2(
                buf.ptr(),
                src.as_ptr() as *const c_void,
                src.len(),
                d.stream.cu_stream(),
            )
        }
        .result()
        .map_err(|e| CudaError::driver_call("cuMemcpyHtoDAsync")(e).into())
    }

    fn download(&mut self, dev: usize, buf: &DeviceBuf) -> BackendResult<HostBuf> {
        let mut h = HostBuf::zeros(buf.dtype, buf.count)?;
        if buf.count == 0 {
            return Ok(h);
        }
        let d = self.device(dev)?;
        let dst = host_bytes_mut(&mut h);
        debug_assert!(dst.len() == buf.bytes() && buf.bytes() <= buf.mem.bytes);
        d.ctx.bind_to_thread().map_err(CudaError::driver)?;
        // SAFETY: `dst` is exactly the buffer's byte length, which the device allocation holds;
        // it is exclusively borrowed and the stream is synchronised before it is used again.
        unsafe {
            dsys::cuMemcpyDtoHAsync_v2(
                dst.as_mut_ptr() as *mut c_void,
                buf.ptr(),
                dst.len(),
                d.stream.cu_stream(),
            )
        }
        .result()
        .and_then(|()| d.stream.synchronize())
        .map_err(CudaError::driver_call("cuMemcpyDtoHAsync"))?;
        Ok(h)
    }

    fn collective(
        &mut self,
        call: &CollectiveCall,
        send: &[DeviceBuf],
        recv: &mut [DeviceBuf],
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
        // Plan and check every call of every device before NCCL sees any of them.
        let mut resolved = Vec::new();
        for dev in 0..g {
            self.check_buf("receive", &recv[dev], dev, call.dtype, 0)?;
            let send_r = if call.in_place {
                None
            } else {
                self.check_buf("send", &send[dev], dev, call.dtype, 0)?;
                Some(send[dev].region())
            };
            let recv_r = recv[dev].region();
            for c in nccl::plan(call, self.device_index(dev))? {
                let r = Resolved::new(c, send_r, recv_r, eb)?;
                resolved.push((dev, r));
            }
        }
        let streams: Vec<_> = self.devices.iter().map(|d| d.stream.cu_stream()).collect();
        self.nccl_group(call, &resolved, &streams)
    }

    fn gemm(
        &mut self,
        batches: &[GemmBatch],
        a: &[DeviceBuf],
        b: &[DeviceBuf],
        c: &mut [DeviceBuf],
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
            self.check_buf("GEMM A", &a[dev], dev, dtype, bt.count * bt.a_len())?;
            self.check_buf("GEMM B", &b[dev], dev, dtype, nb * bt.b_len())?;
            self.check_buf("GEMM C", &c[dev], dev, dtype, bt.count * bt.c_len())?;
            let params = cublas::row_major(&bt)?;
            let types = cublas::types(dtype, self.tf32)?;
            let blas = self.devices[dev].blas.as_ref().map_err(|e| e.clone())?;
            // SAFETY: A, B and C were checked above to be buffers of this device holding the
            // whole batch; C is exclusively borrowed, so it overlaps neither A nor B; all stay
            // allocated until this device's stream (the handle's stream) has run the GEMM.
            unsafe { blas.gemm(&params, types, a[dev].ptr(), b[dev].ptr(), c[dev].ptr()) }?;
        }
        Ok(())
    }

    fn gemm_accumulator(&self, dtype: Dtype) -> Dtype {
        cublas::accumulator(dtype)
    }

    fn reduction_tolerance(&self, dtype: Dtype, op: ReduceOp) -> f64 {
        match op {
            ReduceOp::Avg => nccl::avg_tolerance(dtype, self.total_devices()),
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
        a: &mut [DeviceBuf],
        c: &mut [DeviceBuf],
    ) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
        self.overlapped_step(batches, inputs, a, c)
    }

    fn overlap_support(&self) -> Result<(), Unsupported> {
        self.ddp_support()
            .map_err(|e| CudaUnsupported::NoCommunicators(e).into())
    }

    fn set_overlap(&mut self, settings: OverlapSettings) -> BackendResult<()> {
        self.ddp_configure(settings)
    }

    fn allreduce_start(
        &mut self,
        call: &CollectiveCall,
        bufs: Vec<DeviceBuf>,
    ) -> BackendResult<u64> {
        self.ddp_start(call, bufs)
    }

    fn allreduce_wait(&mut self, ticket: u64) -> BackendResult<Vec<DeviceBuf>> {
        self.ddp_wait(ticket)
    }

    fn copy_within(
        &mut self,
        dev: usize,
        dst: &mut DeviceBuf,
        dst_at: usize,
        src: &DeviceBuf,
        src_at: usize,
        len: usize,
    ) -> BackendResult<()> {
        self.ddp_copy(dev, dst, dst_at, src, src_at, len)
    }

    fn synchronize(&mut self) -> BackendResult<()> {
        for d in &self.devices {
            d.stream
                .synchronize()
                .map_err(|e| CudaError::driver(e).context(format!("GPU {}", d.info.ordinal)))?;
            if let Some(l) = &d.lane {
                l.copy.synchronize().map_err(CudaError::driver)?;
            }
        }
        self.ddp.synchronize()?;
        if let Ok(c) = &self.comms {
            c.check_async()?;
        }
        Ok(())
    }

    fn marks_in_flight(&self) -> usize {
        events::SLOTS
    }

    fn mark(&mut self) -> BackendResult<Mark> {
        let m = self.ring.take();
        let slot = self.ring.check(m)?;
        for d in &self.devices {
            d.marks[slot]
                .record(&d.stream)
                .map_err(CudaError::driver_call("cuEventRecord"))?;
        }
        Ok(m)
    }

    fn elapsed_s(&mut self, from: Mark, to: Mark) -> BackendResult<f64> {
        let a = self.ring.check(from)?;
        let b = self.ring.check(to)?;
        let mut longest = 0.0f64;
        for d in &self.devices {
            let s = events::elapsed_s(&d.marks[a], &d.marks[b])?;
            longest = longest.max(s);
        }
        Ok(longest)
    }
}

/// Why the CUDA backend cannot run a case (it is skipped with this sentence).
#[derive(Debug, Clone)]
pub enum CudaUnsupported {
    /// NCCL has no in-place all-to-all.
    InPlaceAlltoall,
    /// cuBLAS cannot take this GEMM (its type or dimensions).
    Gemm(GemmUnsupported),
    /// `batch_matmul --collect reduce` sums on the host and through MPI, which have no
    /// arithmetic for this type.
    HostReduction(Dtype),
    /// NCCL's communicators did not start, so nothing can overlap an all-reduce (ddp_step).
    NoCommunicators(CudaError),
    /// NCCL has no kernel for the forced algorithm/protocol on this case
    /// ([`crate::params::nccl::no_kernel`]).
    NcclForced(String),
}

impl std::fmt::Display for CudaUnsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CudaUnsupported::InPlaceAlltoall => f.write_str(nccl::IN_PLACE_ALLTOALL),
            CudaUnsupported::Gemm(e) => e.fmt(f),
            CudaUnsupported::HostReduction(dtype) => write!(
                f,
                "batch_matmul --collect reduce sums the products on the host and through MPI, which have no {dtype} arithmetic: use --collect gather, or f32"
            ),
            CudaUnsupported::NoCommunicators(e) => e.fmt(f),
            CudaUnsupported::NcclForced(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for CudaUnsupported {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // These display their error itself, so its sources come next.
            CudaUnsupported::Gemm(e) => e.source(),
            CudaUnsupported::NoCommunicators(e) => e.source(),
            CudaUnsupported::InPlaceAlltoall
            | CudaUnsupported::HostReduction(_)
            | CudaUnsupported::NcclForced(_) => None,
        }
    }
}

impl From<CudaUnsupported> for Unsupported {
    fn from(e: CudaUnsupported) -> Unsupported {
        Unsupported::Cuda(e)
    }
}
