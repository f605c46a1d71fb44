//! The CUDA backend's side of the stream layer the GPU backends share
//! ([`crate::backend::gpu_stream`]): side streams, events, host functions and copies through
//! the driver API (cudarc), NCCL groups and cuBLAS GEMMs. ddp_step's all-reduce order
//! ([`crate::backend::gpu_ddp`]) and batch_matmul's overlapped step
//! ([`crate::backend::gpu_pipeline`]) run over it, as they run over HIP on the ROCm backend.
//!
//! Averaging uses NCCL's native `ncclAvg` (NCCL 2.10+, checked at set-up).

use super::backend::CudaBackend;
use super::cublas;
use super::error::CudaError;
use super::memory::DeviceBuf;
use super::nccl::Resolved;
use super::pipeline::{Lane, Pinned};
use crate::backend::gpu_stream::{Dir, GpuStreams, HostFn, On};
use crate::backend::{
    gpu_ddp, BackendError, BackendResult, CollectiveCall, GemmBatch, OverlapSettings,
};
use crate::params::Dtype;
use cudarc::driver::sys as dsys;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};
use std::ffi::c_void;
use std::sync::Arc;

crate::backend::gpu_stream::impl_gpu_buf!(DeviceBuf);

impl CudaBackend {
    /// The stream `on` names on local device `dev`.
    fn stream_on<'a>(&'a self, dev: usize, on: On<'a, Arc<CudaStream>>) -> &'a Arc<CudaStream> {
        match on {
            On::Main => &self.devices[dev].stream,
            On::Side(s) => s,
        }
    }

    /// Why ddp_step cannot run here, if it cannot (no NCCL).
    pub(super) fn ddp_support(&self) -> Result<(), CudaError> {
        self.comms.as_ref().map(|_| ()).map_err(|e| e.clone())
    }

    pub(super) fn ddp_configure(&mut self, s: OverlapSettings) -> BackendResult<()> {
        gpu_ddp::configure(self, s)
    }

    pub(super) fn ddp_start(
        &mut self,
        call: &CollectiveCall,
        bufs: Vec<DeviceBuf>,
    ) -> BackendResult<u64> {
        gpu_ddp::start(self, call, bufs)
    }

    pub(super) fn ddp_wait(&mut self, ticket: u64) -> BackendResult<Vec<DeviceBuf>> {
        gpu_ddp::wait(self, ticket)
    }

    pub(super) fn ddp_copy(
        &mut self,
        dev: usize,
        dst: &mut DeviceBuf,
        dst_at: usize,
        src: &DeviceBuf,
        src_at: usize,
        len: usize,
    ) -> BackendResult<()> {
        gpu_ddp::copy(self, dev, dst, dst_at, src, src_at, len)
    }
}

/// A failed driver call `what` as a backend error.
fn driver(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> BackendError {
    move |e| CudaError::driver_call(what)(e).into()
}

impl GpuStreams for CudaBackend {
    type Stream = Arc<CudaStream>;
    type Event = CudaEvent;
    type Pinned = Pinned;
    type GemmPlan = (cublas::Params, cublas::Types);

    fn new_stream(&mut self, dev: usize) -> BackendResult<Arc<CudaStream>> {
        self.device(dev)?
            .ctx
            .new_stream()
            .map_err(driver("cuStreamCreate"))
    }

    fn new_event(&mut self, dev: usize, timing: bool) -> BackendResult<CudaEvent> {
        // cudarc's default (`None`) disables timing, which ordering events do not need.
        let flags = timing.then_some(CUevent_flags::CU_EVENT_DEFAULT);
        self.device(dev)?
            .ctx
            .new_event(flags)
            .map_err(driver("cuEventCreate"))
    }

    fn new_pinned(&mut self, dev: usize, bytes: usize) -> BackendResult<Pinned> {
        Ok(Pinned::new(&self.device(dev)?.ctx, bytes)?)
    }

    fn record(&self, dev: usize, e: &CudaEvent, on: On<'_, Arc<CudaStream>>) -> BackendResult<()> {
        e.record(self.stream_on(dev, on))
            .map_err(driver("cuEventRecord"))
    }

    fn wait(&self, dev: usize, on: On<'_, Arc<CudaStream>>, e: &CudaEvent) -> BackendResult<()> {
        self.stream_on(dev, on)
            .wait(e)
            .map_err(driver("cuStreamWaitEvent"))
    }

    fn elapsed_s(&self, _dev: usize, from: &CudaEvent, to: &CudaEvent) -> BackendResult<f64> {
        Ok(super::events::elapsed_s(from, to)?)
    }

    fn synchronize_on(&self, dev: usize, on: On<'_, Arc<CudaStream>>) -> BackendResult<()> {
        self.stream_on(dev, on)
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))
    }

    unsafe fn launch_host_func(
        &self,
        dev: usize,
        on: On<'_, Arc<CudaStream>>,
        f: HostFn,
        arg: *mut c_void,
    ) -> BackendResult<()> {
        self.devices[dev]
            .ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: the caller's guarantee for `f` and `arg`; the stream is live.
        unsafe { dsys::cuLaunchHostFunc(self.stream_on(dev, on).cu_stream(), Some(f), arg) }
            .result()
            .map_err(driver("cuLaunchHostFunc"))
    }

    unsafe fn copy_async(
        &self,
        dev: usize,
        dir: Dir,
        dst: u64,
        src: u64,
        bytes: usize,
        on: On<'_, Arc<CudaStream>>,
    ) -> BackendResult<()> {
        self.devices[dev]
            .ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        let s = self.stream_on(dev, on).cu_stream();
        // SAFETY: the caller's guarantee for both ranges; the stream is live.
        let (r, call) = unsafe {
            match dir {
                Dir::HostToDevice => (
                    dsys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, bytes, s),
                    "cuMemcpyHtoDAsync",
                ),
                Dir::DeviceToHost => (
                    dsys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, bytes, s),
                    "cuMemcpyDtoHAsync",
                ),
                Dir::DeviceToDevice => (
                    dsys::cuMemcpyDtoDAsync_v2(dst, src, bytes, s),
                    "cuMemcpyDtoDAsync",
                ),
            }
        };
        r.result().map_err(driver(call))
    }

    fn ccl_ready(&self) -> BackendResult<()> {
        Ok(self.ddp_support()?)
    }

    fn ccl_group(
        &mut self,
        call: &CollectiveCall,
        resolved: &[(usize, Resolved)],
        streams: &[&Arc<CudaStream>],
    ) -> BackendResult<()> {
        let raw: Vec<_> = streams.iter().map(|s| s.cu_stream()).collect();
        self.nccl_group(call, resolved, &raw)
    }

    fn gemm_plan(
        &self,
        dev: usize,
        batch: &GemmBatch,
        dtype: Dtype,
    ) -> BackendResult<(cublas::Params, cublas::Types)> {
        self.device(dev)?.blas.as_ref().map_err(|e| e.clone())?;
        Ok((cublas::row_major(batch)?, cublas::types(dtype, self.tf32)?))
    }

    unsafe fn gemm_on_main(
        &self,
        dev: usize,
        plan: &(cublas::Params, cublas::Types),
        a: u64,
        b: u64,
        c: u64,
    ) -> BackendResult<()> {
        let blas = self.devices[dev].blas.as_ref().map_err(|e| e.clone())?;
        // SAFETY: the caller's guarantee; the handle is bound to this device's main stream.
        Ok(unsafe { blas.gemm(&plan.0, plan.1, a, b, c) }?)
    }

    fn ddp_state(&mut self) -> &mut gpu_ddp::State<Self> {
        &mut self.ddp
    }

    fn lane(&self, dev: usize) -> Option<&Lane> {
        self.devices.get(dev)?.lane.as_ref()
    }

    fn lane_slot(&mut self, dev: usize) -> &mut Option<Lane> {
        &mut self.devices[dev].lane
    }

    fn gate(&self, dev: usize) -> &CudaEvent {
        &self.devices[dev].gate
    }
}
