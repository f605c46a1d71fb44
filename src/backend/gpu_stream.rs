//! The stream and event layer the GPU backends share: what ddp_step's all-reduce order
//! ([`crate::backend::gpu_ddp`]) and batch_matmul's copy/compute overlap
//! ([`crate::backend::gpu_pipeline`]) need of a GPU runtime, written once so that CUDA (driver
//! API through cudarc, NCCL, cuBLAS) and ROCm (HIP, RCCL, rocBLAS loaded at run time) run the
//! same order with their own calls.
//!
//! Each backend implements [`GpuStreams`]: side streams beside each device's main stream,
//! events (record, wait, elapsed time), a host function on a stream, asynchronous copies, the
//! NCCL-API group call and one GEMM. Device and host addresses travel as `u64` (a CUDA device
//! pointer is one; a HIP pointer converts losslessly), so offset arithmetic is written once.

use crate::backend::ccl::{Region, Resolved};
use crate::backend::{Backend, BackendError, BackendResult, CollectiveCall, GemmBatch};
use crate::params::Dtype;
use std::ffi::c_void;

/// What the shared layer reads of a device buffer.
pub(crate) trait GpuBuf {
    /// The local device it lives on.
    fn dev(&self) -> usize;
    fn dtype(&self) -> Dtype;
    /// Elements.
    fn count(&self) -> usize;
    /// Its address and element count.
    fn region(&self) -> Region;
}

/// Implements [`GpuBuf`] for a backend's buffer type, whose `dev`, `dtype` and `count`
/// fields and `region()` method are visible where this is invoked (each backend keeps its
/// buffer's fields private to itself).
macro_rules! impl_gpu_buf {
    ($t:ty) => {
        impl $crate::backend::gpu_stream::GpuBuf for $t {
            fn dev(&self) -> usize {
                self.dev
            }
            fn dtype(&self) -> $crate::params::Dtype {
                self.dtype
            }
            fn count(&self) -> usize {
                self.count
            }
            fn region(&self) -> $crate::backend::ccl::Region {
                <$t>::region(self)
            }
        }
    };
}
pub(crate) use impl_gpu_buf;

/// Page-locked host memory: copies from it run asynchronously for the host, so they can
/// overlap anything (copies from pageable memory cannot).
pub(crate) trait PinnedHost {
    /// The base address. Only raw pointers ever reach this memory, because the copy engine
    /// writes it asynchronously: no Rust reference to it exists while a copy is in flight.
    fn ptr(&self) -> *mut u8;
    fn len_bytes(&self) -> usize;
}

/// Which stream of a device an operation goes on: the main one, which carries everything
/// else the backend enqueues (so work on it stays ordered with the timing marks), or a side
/// stream the shared layer created.
pub(crate) enum On<'a, S> {
    Main,
    Side(&'a S),
}

impl<S> Clone for On<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for On<'_, S> {}

/// Direction of an asynchronous copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

/// A host function a stream runs (CUDA's `CUhostFn`, HIP's `hipHostFn_t`).
pub(crate) type HostFn = unsafe extern "C" fn(*mut c_void);

/// The host function of fault `slow_comm`: sleeps for the nanoseconds its argument carries
/// (the value itself, not a pointer to it, so nothing is allocated or freed).
pub(crate) unsafe extern "C" fn sleep_ns(arg: *mut c_void) {
    std::thread::sleep(std::time::Duration::from_nanos(arg as usize as u64));
}

/// `b` is a buffer of `dtype` on local device `dev` with at least `min` elements.
pub(crate) fn check_buf<B: GpuBuf>(
    what: &str,
    b: &B,
    dev: usize,
    dtype: Dtype,
    min: usize,
) -> BackendResult<()> {
    if b.dev() != dev || b.dtype() != dtype || b.count() < min {
        return Err(BackendError::check(format!(
            "{what}: a {} {} buffer on local device {} where {min} {dtype} elements on device {dev} are needed",
            b.count(),
            b.dtype(),
            b.dev()
        )));
    }
    Ok(())
}

/// A GPU runtime as ddp_step and batch_matmul's overlap use it. Every call names the local
/// device it is for (the backend makes that device current where its API needs it).
///
/// `Stream` and `Event` are what the backend hands out for side streams and events; the
/// backend decides who destroys them (cudarc's own types on CUDA; on ROCm the side stream
/// destroys itself and events belong to their device), always after the work on them ended.
pub(crate) trait GpuStreams: Backend<Buf: GpuBuf> + Sized {
    type Stream;
    type Event;
    type Pinned: PinnedHost;
    /// One GEMM's library parameters, checked once before anything is enqueued.
    type GemmPlan: Copy;

    /// A new side stream on local device `dev`.
    fn new_stream(&mut self, dev: usize) -> BackendResult<Self::Stream>;
    /// A new event on `dev`; `timing`: it can be read by [`GpuStreams::elapsed_s`] (events
    /// that only order streams can leave timing off where the API allows).
    fn new_event(&mut self, dev: usize, timing: bool) -> BackendResult<Self::Event>;
    /// `bytes` (at least 1) of pinned host memory for `dev`'s copies, contents unspecified.
    fn new_pinned(&mut self, dev: usize, bytes: usize) -> BackendResult<Self::Pinned>;

    fn record(&self, dev: usize, e: &Self::Event, on: On<'_, Self::Stream>) -> BackendResult<()>;
    /// Later work on `on` waits for the last record of `e`; the host does not wait.
    fn wait(&self, dev: usize, on: On<'_, Self::Stream>, e: &Self::Event) -> BackendResult<()>;
    /// Seconds from `from` to `to`, both recorded timing events (waits for `to`).
    fn elapsed_s(&self, dev: usize, from: &Self::Event, to: &Self::Event) -> BackendResult<f64>;
    /// Waits for everything queued on `on`.
    fn synchronize_on(&self, dev: usize, on: On<'_, Self::Stream>) -> BackendResult<()>;

    /// Enqueues `f(arg)` on `on`, run after the work before it.
    ///
    /// # Safety
    /// `f` calls no runtime function and is sound for `arg` whenever the stream runs it.
    unsafe fn launch_host_func(
        &self,
        dev: usize,
        on: On<'_, Self::Stream>,
        f: HostFn,
        arg: *mut c_void,
    ) -> BackendResult<()>;

    /// Enqueues a copy of `bytes` from `src` to `dst` on `on`.
    ///
    /// # Safety
    /// Both ranges are valid for `bytes` (device memory of `dev` on the device side, pinned
    /// or otherwise live host memory on the host side) until the stream has run the copy, and
    /// do not overlap.
    unsafe fn copy_async(
        &self,
        dev: usize,
        dir: Dir,
        dst: u64,
        src: u64,
        bytes: usize,
        on: On<'_, Self::Stream>,
    ) -> BackendResult<()>;

    /// Why no collective can run (no communicators, or aborted ones), if so.
    fn ccl_ready(&self) -> BackendResult<()>;
    /// Enqueues `resolved` (checked calls, each with its local device) in one NCCL/RCCL
    /// group, device `dev`'s calls on `streams[dev]`; on an error the communicators are
    /// aborted, so later collectives fail with the sentence instead of hanging.
    fn ccl_group(
        &mut self,
        call: &CollectiveCall,
        resolved: &[(usize, Resolved)],
        streams: &[&Self::Stream],
    ) -> BackendResult<()>;

    /// The library parameters of `batch` (one matrix, `count` 1) on `dev`, or why that GEMM
    /// cannot run there (type, dimensions, no BLAS library).
    fn gemm_plan(
        &self,
        dev: usize,
        batch: &GemmBatch,
        dtype: Dtype,
    ) -> BackendResult<Self::GemmPlan>;
    /// Enqueues C = A·B of `plan` on `dev`'s main stream.
    ///
    /// # Safety
    /// `a`, `b` and `c` are addresses in live allocations of `dev` holding what `plan` reads
    /// and writes, `c` overlaps neither `a` nor `b`, and all stay allocated until the main
    /// stream ran the call.
    unsafe fn gemm_on_main(
        &self,
        dev: usize,
        plan: &Self::GemmPlan,
        a: u64,
        b: u64,
        c: u64,
    ) -> BackendResult<()>;

    /// ddp_step's state, kept by the backend between calls.
    fn ddp_state(&mut self) -> &mut crate::backend::gpu_ddp::State<Self>;
    /// batch_matmul's copy lane of `dev` (`None` until its first overlapped step).
    fn lane(&self, dev: usize) -> Option<&crate::backend::gpu_pipeline::Lane<Self>>;
    fn lane_slot(&mut self, dev: usize) -> &mut Option<crate::backend::gpu_pipeline::Lane<Self>>;
    /// An ordering event of `dev` that puts the copy lane behind the main stream at the
    /// start of an overlapped step.
    fn gate(&self, dev: usize) -> &Self::Event;
}
