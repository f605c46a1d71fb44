//! The ROCm backend's side of the stream layer the GPU backends share
//! ([`crate::backend::gpu_stream`]): side streams, events, host functions and copies through
//! the HIP runtime, RCCL groups and rocBLAS GEMMs. ddp_step's all-reduce order
//! ([`crate::backend::gpu_ddp`]) and batch_matmul's overlapped step
//! ([`crate::backend::gpu_pipeline`]) run over it exactly as over CUDA on the CUDA backend.
//!
//! Ownership: side streams (ddp's communication streams, batch_matmul's copy streams) destroy
//! themselves ([`SideStream`]), after the work on them ended; events belong to their device
//! (`Device::order_events`, destroyed with it); pinned staging frees itself ([`HipPinned`]).

use super::backend::RocmBackend;
use super::hip::{CopyKind, Event, Hip, Stream};
use super::memory::RocmBuf;
use super::rocblas;
use super::RocmError;
use crate::backend::ccl::Resolved;
use crate::backend::gpu_gemm::Params;
use crate::backend::gpu_pipeline;
use crate::backend::gpu_stream::{Dir, GpuStreams, HostFn, On, PinnedHost};
use crate::backend::{gpu_ddp, BackendError, BackendResult, CollectiveCall, GemmBatch};
use crate::params::Dtype;
use std::ffi::c_void;
use std::sync::Arc;

/// Why a GEMM cannot run: rocBLAS was not opened.
const NO_ROCBLAS: &str =
    "a GEMM on a ROCm backend set up without rocBLAS (the launch planned no GEMM)";

/// One device's batch_matmul copy lane.
type Lane = gpu_pipeline::Lane<RocmBackend>;

/// What the backend keeps between calls for the work beside the main streams: ddp_step's
/// all-reduces and batch_matmul's copy lanes.
#[derive(Default)]
pub(super) struct State {
    ddp: gpu_ddp::State<RocmBackend>,
    /// Per local GPU once the first overlapped batch step ran (empty before).
    lanes: Vec<Option<Lane>>,
    /// Per local GPU with `lanes`: orders the copy lane after the main stream.
    gates: Vec<Event>,
}

/// A stream beside a device's main stream, destroyed once its work ended.
pub(crate) struct SideStream {
    raw: Stream,
    ordinal: i32,
    hip: Arc<Hip>,
}

impl Drop for SideStream {
    fn drop(&mut self) {
        if self.hip.set_device(self.ordinal).is_err() {
            return;
        }
        let _ = self.hip.stream_synchronize(self.raw);
        // SAFETY: created for this device in `new_stream`, synchronised above, destroyed once.
        let _ = unsafe { self.hip.stream_destroy(self.raw) };
    }
}

/// Page-locked host memory (`hipHostMalloc`), freed on drop.
pub(crate) struct HipPinned {
    ptr: *mut u8,
    len: usize,
    hip: Arc<Hip>,
}

impl PinnedHost for HipPinned {
    fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    fn len_bytes(&self) -> usize {
        self.len
    }
}

impl Drop for HipPinned {
    fn drop(&mut self) {
        // SAFETY: allocated by hipHostMalloc, freed once; its owner synchronises the copy
        // stream at the end of every step (and the device before it is dropped), so no copy
        // uses it any more.
        let _ = unsafe { self.hip.host_free(self.ptr as *mut c_void) };
    }
}

crate::backend::gpu_stream::impl_gpu_buf!(RocmBuf);

impl RocmBackend {
    /// The raw stream `on` names on local device `dev`, with that device made current.
    fn current_on(&self, dev: usize, on: On<'_, SideStream>) -> BackendResult<Stream> {
        let d = &self.devices[dev];
        self.hip.set_device(d.ordinal)?;
        Ok(match on {
            On::Main => d.stream,
            On::Side(s) => s.raw,
        })
    }

    /// Why ddp_step cannot run here, if it cannot (no RCCL communicators).
    pub(super) fn ddp_support(&self) -> Result<(), RocmError> {
        self.comms.as_ref().map(|_| ()).map_err(|e| e.clone())
    }

    /// Waits for every side stream (communication and copy).
    pub(super) fn side_synchronize(&self) -> BackendResult<()> {
        self.ddp.ddp.synchronize_lanes(self)?;
        for (dev, l) in self.ddp.lanes.iter().enumerate() {
            if let Some(l) = l {
                self.synchronize_on(dev, On::Side(&l.copy))?;
            }
        }
        Ok(())
    }

    /// Readies batch_matmul's copy lanes (created by the shared step on first use) and the
    /// events that put them behind the main streams, for [`crate::backend::gpu_pipeline`].
    pub(super) fn prepare_lanes(&mut self) -> BackendResult<()> {
        let g = self.devices.len();
        self.ddp.lanes.resize_with(g, || None);
        for dev in self.ddp.gates.len()..g {
            let e = self.new_event(dev, false)?;
            self.ddp.gates.push(e);
        }
        Ok(())
    }
}

impl GpuStreams for RocmBackend {
    type Stream = SideStream;
    type Event = Event;
    type Pinned = HipPinned;
    type GemmPlan = (Params, rocblas::Types);

    fn new_stream(&mut self, dev: usize) -> BackendResult<SideStream> {
        let ordinal = self.devices[dev].ordinal;
        self.hip.set_device(ordinal)?;
        Ok(SideStream {
            raw: self.hip.stream_create()?,
            ordinal,
            hip: self.hip.clone(),
        })
    }

    fn new_event(&mut self, dev: usize, _timing: bool) -> BackendResult<Event> {
        // hipEventCreate's events all time; ordering ones pay nothing measurable for it.
        let d = &mut self.devices[dev];
        self.hip.set_device(d.ordinal)?;
        let e = self.hip.event_create()?;
        d.order_events.push(e);
        Ok(e)
    }

    fn new_pinned(&mut self, dev: usize, bytes: usize) -> BackendResult<HipPinned> {
        self.hip.set_device(self.devices[dev].ordinal)?;
        let ptr = self
            .hip
            .host_malloc(bytes.max(1))
            .map_err(|e| e.context(format!("hipHostMalloc of {bytes} bytes")))?;
        Ok(HipPinned {
            ptr: ptr as *mut u8,
            len: bytes,
            hip: self.hip.clone(),
        })
    }

    fn record(&self, dev: usize, e: &Event, on: On<'_, SideStream>) -> BackendResult<()> {
        let s = self.current_on(dev, on)?;
        Ok(self.hip.event_record(*e, s)?)
    }

    fn wait(&self, dev: usize, on: On<'_, SideStream>, e: &Event) -> BackendResult<()> {
        let s = self.current_on(dev, on)?;
        Ok(self.hip.stream_wait_event(s, *e)?)
    }

    fn elapsed_s(&self, dev: usize, from: &Event, to: &Event) -> BackendResult<f64> {
        self.hip.set_device(self.devices[dev].ordinal)?;
        Ok(self.hip.elapsed_s(*from, *to)?)
    }

    fn synchronize_on(&self, dev: usize, on: On<'_, SideStream>) -> BackendResult<()> {
        let s = self.current_on(dev, on)?;
        Ok(self.hip.stream_synchronize(s)?)
    }

    unsafe fn launch_host_func(
        &self,
        dev: usize,
        on: On<'_, SideStream>,
        f: HostFn,
        arg: *mut c_void,
    ) -> BackendResult<()> {
        let s = self.current_on(dev, on)?;
        // SAFETY: the caller's guarantee for `f` and `arg`; the stream is live.
        Ok(unsafe { self.hip.launch_host_func(s, f, arg) }?)
    }

    unsafe fn copy_async(
        &self,
        dev: usize,
        dir: Dir,
        dst: u64,
        src: u64,
        bytes: usize,
        on: On<'_, SideStream>,
    ) -> BackendResult<()> {
        let s = self.current_on(dev, on)?;
        let kind = match dir {
            Dir::HostToDevice => CopyKind::HostToDevice,
            Dir::DeviceToHost => CopyKind::DeviceToHost,
            Dir::DeviceToDevice => CopyKind::DeviceToDevice,
        };
        // SAFETY: the caller's guarantee for both ranges; the stream is live and its device
        // current.
        Ok(unsafe {
            self.hip.memcpy_async(
                dst as usize as *mut c_void,
                src as usize as *const c_void,
                bytes,
                kind,
                s,
            )
        }?)
    }

    fn ccl_ready(&self) -> BackendResult<()> {
        Ok(self.ddp_support()?)
    }

    fn ccl_group(
        &mut self,
        call: &CollectiveCall,
        resolved: &[(usize, Resolved)],
        streams: &[&SideStream],
    ) -> BackendResult<()> {
        let raw: Vec<Stream> = streams.iter().map(|s| s.raw).collect();
        self.rccl_group(call, resolved, &raw)
    }

    fn gemm_plan(
        &self,
        dev: usize,
        batch: &GemmBatch,
        dtype: Dtype,
    ) -> BackendResult<(Params, rocblas::Types)> {
        if self.devices[dev].blas.is_none() {
            return Err(BackendError::check(NO_ROCBLAS));
        }
        Ok((rocblas::row_major(batch)?, rocblas::types(dtype)?))
    }

    unsafe fn gemm_on_main(
        &self,
        dev: usize,
        plan: &(Params, rocblas::Types),
        a: u64,
        b: u64,
        c: u64,
    ) -> BackendResult<()> {
        let d = &self.devices[dev];
        let blas = d
            .blas
            .as_ref()
            .ok_or_else(|| BackendError::check(NO_ROCBLAS))?;
        self.hip.set_device(d.ordinal)?;
        // SAFETY: the caller's guarantee for the operands; the handle is this device's (now
        // current) and bound to its main stream.
        Ok(unsafe {
            blas.lib.gemm(
                blas.handle,
                &plan.0,
                plan.1,
                a as usize as *const c_void,
                b as usize as *const c_void,
                c as usize as *mut c_void,
            )
        }?)
    }

    fn ddp_state(&mut self) -> &mut gpu_ddp::State<Self> {
        &mut self.ddp.ddp
    }

    fn lane(&self, dev: usize) -> Option<&Lane> {
        self.ddp.lanes.get(dev)?.as_ref()
    }

    fn lane_slot(&mut self, dev: usize) -> &mut Option<Lane> {
        &mut self.ddp.lanes[dev]
    }

    fn gate(&self, dev: usize) -> &Event {
        &self.ddp.gates[dev]
    }
}
