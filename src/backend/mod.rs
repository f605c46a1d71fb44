//! Backends: where buffers live and who moves and multiplies them.
//!
//! A backend drives every device of its process (one in pure MPI, several in hybrid mode) and
//! runs each collective over all devices of all processes. Workloads and the timing loop are
//! generic over [`Backend`], so the CPU backend (host buffers, MPI, CPU GEMM) and the CUDA
//! backend (device buffers, NCCL, cuBLAS, CUDA events) share them unchanged.
//!
//! Asynchrony is explicit: `collective` and `gemm` may only enqueue work; `synchronize` waits
//! for it; `mark` records a point on the device timeline and `elapsed_s` reads the time between
//! two marks (on the CPU backend, marks are host clock readings and everything is synchronous).

// Used only inside an MPI job (the CPU backend, the run stage).
#[cfg(feature = "mpi")]
pub(crate) mod clock;
#[cfg(feature = "mpi")]
pub(crate) mod team;

// The NCCL API's plan and checks, shared by NCCL (CUDA) and RCCL (ROCm).
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub mod ccl;
#[cfg(feature = "mpi")]
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod gemm;
// The GPU libraries' GEMM call (row-major on column-major), shared by cuBLAS and rocBLAS.
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) mod gpu_gemm;
// The GPU backends' stream and event layer, and what runs over it once for both: ddp_step's
// all-reduce order and batch_matmul's copy/compute overlap.
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) mod gpu_ddp;
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) mod gpu_pipeline;
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) mod gpu_stream;
// Device-timeline marks (a ring of event slots), shared by the GPU backends.
// NCCL's (and RCCL's) INFO output read back per case, shared by the GPU backends.
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) mod capture;
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) mod marks;
pub mod nccl_log;
// Node-local GPU numbers onto the ordinals a rank sees, shared by CUDA and HIP.
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub mod ordinals;
#[cfg(feature = "rocm")]
pub mod rocm;
// GPU telemetry sampling: NVML on the CUDA backend, AMD SMI on the ROCm backend.
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) mod telemetry;

// Host buffers live in a leaf module that the control plane (`comm`) uses too.
pub use crate::host::{alignment_policy, page_size_bytes, AllocError, Element, HostBuf};
pub use crate::params::BufferOffset;

use crate::params::{
    BackendKind, CaseParams, Dtype, GemmChoice, MatmulShape, Progress, ReduceOp, Workload,
};
use crate::results::schema::{
    BackendInfo, DeviceBinding, DeviceTelemetry, GemmProvenance, TimerInfo,
};

/// Errors from a backend. A backend error fails the case (on every rank), not the launch.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Alloc(#[from] AllocError),
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The backend cannot start on this machine (no driver, no device): one sentence, exit 2.
    #[error("{0}")]
    Unavailable(String),
}

impl BackendError {
    /// A failed check of the backend's own (a wrong buffer, a ticket not in flight).
    pub fn check(sentence: impl Into<String>) -> BackendError {
        BackendError::Device(DeviceError::Check(sentence.into()))
    }

    /// A thread the backend needs (`what`, e.g. "4 worker threads") that did not start.
    pub fn thread(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> BackendError {
        BackendError::Device(DeviceError::Thread {
            what: what.into(),
            source: Box::new(source),
        })
    }
}

/// What failed on a device, with the library's own error as the source where there is one.
/// Each displays as one sentence (the one the backend printed when these were strings).
#[derive(Debug)]
pub enum DeviceError {
    /// A CUDA library call (driver, cuBLAS, NCCL) failed; the error names the call and GPU.
    #[cfg(feature = "cuda")]
    Cuda(cuda::CudaError),
    /// A collective's buffers do not match its call (checked before NCCL or RCCL sees them).
    #[cfg(any(feature = "cuda", feature = "rocm"))]
    Plan(ccl::PlanError),
    /// A timing mark was read after its slot was reused.
    #[cfg(any(feature = "cuda", feature = "rocm"))]
    Mark(marks::MarkOverwritten),
    /// A HIP runtime or RCCL call failed, or a check of the ROCm backend's.
    #[cfg(feature = "rocm")]
    Rocm(rocm::RocmError),
    /// A buffer whose size in bytes overflows an address.
    #[cfg(feature = "cuda")]
    TooLarge(cuda::TooLarge),
    /// A thread the backend needs (workers, GEMM pool, progress thread) could not start.
    Thread {
        what: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A check of the backend's own failed (a buffer of the wrong size or device, a ticket
    /// not in flight, a stopped helper thread): the sentence says what.
    Check(String),
    /// This rank is healthy but another failed: empty, so the failing rank's own message is
    /// the one reported when ranks agree on the failure.
    OtherRank,
    /// The failure a test injects (`fault=fail`).
    Injected,
}

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            #[cfg(feature = "cuda")]
            DeviceError::Cuda(e) => e.fmt(f),
            #[cfg(any(feature = "cuda", feature = "rocm"))]
            DeviceError::Plan(e) => e.fmt(f),
            #[cfg(any(feature = "cuda", feature = "rocm"))]
            DeviceError::Mark(e) => e.fmt(f),
            #[cfg(feature = "rocm")]
            DeviceError::Rocm(e) => e.fmt(f),
            #[cfg(feature = "cuda")]
            DeviceError::TooLarge(e) => e.fmt(f),
            DeviceError::Thread { what, source } => write!(f, "could not start {what}: {source}"),
            DeviceError::Check(sentence) => f.write_str(sentence),
            DeviceError::OtherRank => Ok(()),
            DeviceError::Injected => f.write_str("injected failure (fault=fail)"),
        }
    }
}

impl std::error::Error for DeviceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // The wrapped errors display themselves: their own sources come next.
            #[cfg(feature = "cuda")]
            DeviceError::Cuda(e) => e.source(),
            #[cfg(any(feature = "cuda", feature = "rocm"))]
            DeviceError::Plan(e) => e.source(),
            #[cfg(any(feature = "cuda", feature = "rocm"))]
            DeviceError::Mark(e) => e.source(),
            #[cfg(feature = "rocm")]
            DeviceError::Rocm(e) => e.source(),
            #[cfg(feature = "cuda")]
            DeviceError::TooLarge(e) => e.source(),
            DeviceError::Thread { source, .. } => Some(source.as_ref()),
            DeviceError::Check(_) | DeviceError::OtherRank | DeviceError::Injected => None,
        }
    }
}

/// Why a backend cannot run a case at all: the case is skipped with this sentence.
#[derive(Debug, Clone)]
pub enum Unsupported {
    /// The backend has no non-blocking all-reduce, so `ddp_step` cannot run on it.
    NoOverlap(BackendKind),
    /// A limit of the CPU backend.
    #[cfg(feature = "mpi")]
    Cpu(cpu::CpuUnsupported),
    /// A limit of the CUDA backend (or of the libraries it drives).
    #[cfg(feature = "cuda")]
    Cuda(cuda::CudaUnsupported),
    /// A limit of the ROCm backend (phase 1: collectives only).
    #[cfg(feature = "rocm")]
    Rocm(rocm::RocmUnsupported),
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsupported::NoOverlap(kind) => write!(
                f,
                "the {kind} backend has no non-blocking all-reduce yet (ddp_step)"
            ),
            #[cfg(feature = "mpi")]
            Unsupported::Cpu(e) => e.fmt(f),
            #[cfg(feature = "cuda")]
            Unsupported::Cuda(e) => e.fmt(f),
            #[cfg(feature = "rocm")]
            Unsupported::Rocm(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Unsupported {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Unsupported::NoOverlap(_) => None,
            #[cfg(feature = "mpi")]
            Unsupported::Cpu(e) => e.source(),
            #[cfg(feature = "cuda")]
            Unsupported::Cuda(e) => e.source(),
            #[cfg(feature = "rocm")]
            Unsupported::Rocm(e) => e.source(),
        }
    }
}

/// Which devices a process drives and how (the same for every backend).
#[derive(Debug, Clone)]
pub struct DevicePlan {
    /// Devices this rank drives (1 = pure MPI; G = hybrid).
    pub devices_per_rank: usize,
    /// Node-local number of each of this rank's devices (GPU id by the fill-up or round-robin
    /// rule); a GPU backend opens these devices.
    pub local_indices: Vec<u32>,
    /// CPUs each device's driving thread is bound to (`None`: inherit the process's).
    pub worker_cpus: Vec<Option<Vec<u32>>>,
    /// CPU threads each device's GEMM may use (CPU backend).
    pub threads_per_device: usize,
    /// The CPU GEMM provider to set up (CPU backend); `None` when the launch runs no GEMM,
    /// so no BLAS is loaded and none is recorded.
    pub gemm: Option<GemmChoice>,
    /// The algorithm the launch forces on NCCL (already in `NCCL_ALGO`): a GPU backend refuses
    /// to start where its NCCL does not know it.
    pub nccl_algo: Option<crate::params::NcclAlgo>,
}

impl DevicePlan {
    /// Devices `0..devices` of this node, no CPU binding (the process's affinity), GEMMs by
    /// the `gemm` crate: one-process uses such as benches and tests.
    pub fn unbound(devices: usize, threads_per_device: usize) -> DevicePlan {
        DevicePlan {
            devices_per_rank: devices,
            local_indices: (0..devices as u32).collect(),
            worker_cpus: vec![None; devices],
            threads_per_device,
            gemm: Some(GemmChoice::GemmCrate),
            nccl_algo: None,
        }
    }

    /// The same plan with another GEMM provider.
    pub fn with_gemm(self, gemm: GemmChoice) -> DevicePlan {
        DevicePlan {
            gemm: Some(gemm),
            ..self
        }
    }
}

pub type BackendResult<T> = Result<T, BackendError>;

/// One collective operation, as every device sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveCall {
    pub workload: Workload,
    pub dtype: Dtype,
    /// Reduction operator (allreduce, reduce, reduce_scatter).
    pub op: Option<ReduceOp>,
    /// Root device (global index) for reduce and broadcast.
    pub root: Option<u32>,
    /// Elements in each device's send buffer.
    pub send_count: usize,
    /// Elements in each device's receive buffer.
    pub recv_count: usize,
    /// In place: one buffer per device (see [`Backend::collective`]).
    pub in_place: bool,
    /// Devices taking part (all processes).
    pub devices: u32,
}

/// Device-side timing of one overlapped batch step ([`Backend::square_batch`]): how long
/// each engine was busy, summed over the step's matrices, and the step's span on the device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverlapTiming {
    /// Host→device copies, seconds.
    pub copy_in_s: f64,
    /// GEMMs, seconds.
    pub compute_s: f64,
    /// Device→host copies, seconds.
    pub copy_out_s: f64,
    /// First copy's start to the last copy's end, seconds.
    pub span_s: f64,
}

impl OverlapTiming {
    /// Seconds of work hidden by overlap: the engines' busy time beyond the span (0 when the
    /// phases ran one after another).
    pub fn hidden_s(&self) -> f64 {
        (self.copy_in_s + self.compute_s + self.copy_out_s - self.span_s).max(0.0)
    }
}

/// How a backend runs the non-blocking all-reduces of `ddp_step`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverlapSettings {
    /// Who drives MPI's progress while GEMMs run (CPU backend; GPU libraries progress alone).
    pub progress: Progress,
    /// Test-only slow link (fault `slow_comm`): each all-reduce completes no earlier than this
    /// long after it started or the previous one completed, seconds; 0 = off.
    pub comm_delay_s: f64,
}

/// The GEMMs one device runs in one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmBatch {
    pub shape: MatmulShape,
    /// Matrices in the batch (0 = nothing to do on this device).
    pub count: usize,
    /// All products use the first B matrix.
    pub shared_b: bool,
}

impl GemmBatch {
    pub fn a_len(&self) -> usize {
        (self.shape.m * self.shape.k) as usize
    }
    pub fn b_len(&self) -> usize {
        (self.shape.k * self.shape.n) as usize
    }
    pub fn c_len(&self) -> usize {
        (self.shape.m * self.shape.n) as usize
    }
}

impl CollectiveCall {
    /// Elements of the single buffer an in-place call uses per device.
    pub fn in_place_count(&self) -> usize {
        self.send_count.max(self.recv_count)
    }
}

/// A collective bound to its buffers (see [`Backend::prepare_collective`]).
pub struct PreparedCollective<'a>(Prepared<'a>);

#[cfg(feature = "mpi")]
type Prepared<'a> = crate::comm::raw::Prepared<'a>;

/// Without MPI no backend prepares a call: the type exists for the trait, never a value.
#[cfg(not(feature = "mpi"))]
struct Prepared<'a>(std::convert::Infallible, std::marker::PhantomData<&'a ()>);

#[cfg(not(feature = "mpi"))]
impl Prepared<'_> {
    fn issue(&mut self) {
        match self.0 {}
    }
}

impl<'a> PreparedCollective<'a> {
    #[cfg(feature = "mpi")]
    pub(crate) fn mpi(call: crate::comm::raw::Prepared<'a>) -> Self {
        PreparedCollective(call)
    }

    /// Issues the operation once.
    #[inline]
    pub fn issue(&mut self) -> BackendResult<()> {
        self.0.issue();
        Ok(())
    }
}

/// A device-side (or host-side, for the CPU backend) compute and communication engine.
pub trait Backend {
    /// One buffer on one device.
    type Buf;
    /// A point on the device timeline.
    type Mark: Copy;

    fn kind(&self) -> BackendKind;
    /// Library versions and settings, for provenance.
    fn info(&self) -> BackendInfo;
    /// The clock behind `mark`/`elapsed_s`.
    fn timer_info(&self) -> TimerInfo;
    /// Devices this process drives.
    fn local_devices(&self) -> usize;
    /// Global index of local device `dev` (its position in allgather order).
    fn device_index(&self, dev: usize) -> u32;
    /// Total devices over all processes.
    fn total_devices(&self) -> u32;
    /// Where each local device sits: node-local number, CPUs in force, description.
    fn device_bindings(&self) -> Vec<DeviceBinding>;
    /// Problems met while setting up (e.g. a binding that did not take), for provenance.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// The CPU GEMM provider in use and how it was set up, for provenance (`None`: not a
    /// CPU GEMM, or no GEMM in this launch).
    fn gemm_provenance(&self) -> Option<GemmProvenance> {
        None
    }
    /// Where this rank's progress thread runs when a ddp_step case asks for one, for
    /// provenance (`None`: this backend starts none).
    fn progress_thread_binding(&self) -> Option<crate::results::schema::ProgressThreadBinding> {
        None
    }

    /// `Err(reason)` if this backend cannot run the case at all (the case is then skipped).
    fn supports(&self, params: &CaseParams) -> Result<(), Unsupported>;

    /// A buffer of `count` elements on local device `dev` (contents unspecified).
    fn alloc(&mut self, dev: usize, dtype: Dtype, count: usize) -> BackendResult<Self::Buf>;

    /// A benchmark buffer starting `offset_bytes` after a page boundary. Backends that cannot
    /// place buffers refuse any offset but 0.
    fn alloc_at(
        &mut self,
        dev: usize,
        dtype: Dtype,
        count: usize,
        offset_bytes: u64,
    ) -> BackendResult<Self::Buf> {
        if offset_bytes != 0 {
            return Err(BackendError::Unsupported(format!(
                "--buffer-offset {offset_bytes}: the {} backend cannot place buffers at an offset; leave it at 0",
                self.kind()
            )));
        }
        self.alloc(dev, dtype, count)
    }

    /// Where `buf` starts within its page, bytes, where the backend can say (host memory).
    fn page_offset_bytes(&self, _buf: &Self::Buf) -> Option<u64> {
        None
    }

    /// How benchmark buffers are placed with `offset`, for provenance (None: not said).
    fn buffer_policy(&self, _offset: BufferOffset) -> Option<String> {
        None
    }

    /// The last-level cache in front of local device `dev`'s memory, bytes (a GPU's L2; the
    /// host's last-level cache for CPU devices): what `--buffers rotate` must outgrow. `None`
    /// where the backend cannot say.
    fn cache_bytes(&self, _dev: usize) -> Option<u64> {
        None
    }
    /// Copies `host` into `buf` (same dtype and length).
    fn upload(&mut self, dev: usize, buf: &mut Self::Buf, host: &HostBuf) -> BackendResult<()>;
    /// Copies `buf` back to the host.
    fn download(&mut self, dev: usize, buf: &Self::Buf) -> BackendResult<HostBuf>;

    /// Enqueues one collective over all devices. `send` and `recv` hold one buffer per local
    /// device. In place, `send` is empty and each `recv` buffer has
    /// [`CollectiveCall::in_place_count`] elements: the input of allgather sits at
    /// `device_index × send_count`, the output of reduce_scatter at
    /// [`Backend::reduce_scatter_in_place_offset`]; every other in-place input and output starts
    /// at 0.
    fn collective(
        &mut self,
        call: &CollectiveCall,
        send: &[Self::Buf],
        recv: &mut [Self::Buf],
    ) -> BackendResult<()>;

    /// The collective bound to its buffers for a timing loop, where the backend can issue it
    /// as one library call and nothing else per call (the CPU backend's pure-MPI path without
    /// `avg`); `None` where it cannot, and the loop calls [`Backend::collective`]. Same
    /// operation, same buffers: only the per-call dispatch is left out of the timed window.
    fn prepare_collective<'a>(
        &mut self,
        call: &CollectiveCall,
        send: &'a [Self::Buf],
        recv: &'a mut [Self::Buf],
    ) -> Option<PreparedCollective<'a>> {
        let _ = (call, send, recv);
        None
    }

    /// Where device `device` (global index) finds its in-place reduce_scatter result, in
    /// elements. NCCL's convention (its own block) is the default; MPI puts it at 0.
    fn reduce_scatter_in_place_offset(&self, device: u32, recv_count: usize) -> usize {
        device as usize * recv_count
    }

    /// Enqueues a strided batch of GEMMs on every local device: for device `dev` and
    /// `j < batches[dev].count`, C_j = A_j · B_j, row-major, matrices stored back to back in
    /// each device's `a`, `b` and `c` buffers (B_j = B_0 when `batches[dev].shared_b`).
    fn gemm(
        &mut self,
        batches: &[GemmBatch],
        a: &[Self::Buf],
        b: &[Self::Buf],
        c: &mut [Self::Buf],
    ) -> BackendResult<()>;

    /// The type GEMM products accumulate in (f32 for half-precision inputs on GPUs), which
    /// decides whether a GEMM check can be exact.
    fn gemm_accumulator(&self, dtype: Dtype) -> Dtype {
        dtype
    }

    /// Relative tolerance validation must allow for a reduction (0 = exact).
    fn reduction_tolerance(&self, _dtype: Dtype, _op: ReduceOp) -> f64 {
        0.0
    }

    /// Whether batch_matmul hands its device work to [`Backend::square_batch`] in one call,
    /// so the backend can overlap host↔device copies with the GEMMs. The default (false)
    /// keeps upload, GEMM and download as separate phases.
    fn overlaps_batch_transfers(&self) -> bool {
        false
    }

    /// batch_matmul's device step in one call: copies `inputs[dev]` into `a[dev]`, computes
    /// C_j = A_j · A_j for each of the `batches[dev].count` matrices into `c[dev]`, and returns
    /// every local device's products, with the device-side timing where copies and GEMMs
    /// overlapped. The default runs the phases one after another (`None`).
    fn square_batch(
        &mut self,
        batches: &[GemmBatch],
        inputs: &[HostBuf],
        a: &mut [Self::Buf],
        c: &mut [Self::Buf],
    ) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
        for (dev, h) in inputs.iter().enumerate() {
            self.upload(dev, &mut a[dev], h)?;
        }
        self.gemm(batches, a, a, c)?;
        self.synchronize()?;
        let products = c
            .iter()
            .enumerate()
            .map(|(dev, buf)| self.download(dev, buf))
            .collect::<BackendResult<Vec<_>>>()?;
        Ok((products, None))
    }

    /// `Err(reason)` where the backend has no non-blocking all-reduce ([`Backend::allreduce_start`]),
    /// so `ddp_step` cannot run on it.
    fn overlap_support(&self) -> Result<(), Unsupported> {
        Err(Unsupported::NoOverlap(self.kind()))
    }

    /// Sub-communicators for a replayed trace's process groups: one per group, its members
    /// as ranks of the job in group-rank order. Every rank calls it with the same groups.
    fn set_groups(&mut self, _groups: &[Vec<u32>]) -> BackendResult<()> {
        Err(BackendError::Unsupported(format!(
            "the {} backend has no sub-communicators yet (a trace's process groups)",
            self.kind()
        )))
    }

    /// Makes group `g` of [`Backend::set_groups`] (`None`: the whole job) the communicator
    /// of the collectives that follow; [`Backend::device_index`] and
    /// [`Backend::total_devices`] then count in it. Only its members select a group.
    fn use_group(&mut self, g: Option<usize>) -> BackendResult<()> {
        match g {
            None => Ok(()),
            Some(_) => self.set_groups(&[]),
        }
    }

    /// Sets how later [`Backend::allreduce_start`] calls run (no request may be in flight).
    fn set_overlap(&mut self, _settings: OverlapSettings) -> BackendResult<()> {
        Ok(())
    }

    /// Starts an in-place all-reduce of `call.send_count` elements of `bufs` (one buffer per
    /// local device) and returns at once with a ticket. The backend owns the buffers until
    /// [`Backend::allreduce_wait`] hands them back, so nothing can touch them in flight. GEMMs
    /// and copies enqueued meanwhile overlap with it.
    fn allreduce_start(
        &mut self,
        _call: &CollectiveCall,
        _bufs: Vec<Self::Buf>,
    ) -> BackendResult<u64> {
        Err(BackendError::Unsupported(
            self.overlap_support()
                .err()
                .map_or_else(String::new, |why| why.to_string()),
        ))
    }

    /// Waits for the all-reduce of `ticket` (averaging where the call's op is `avg`) and
    /// returns its buffers. Tickets may be waited on in any order, each once.
    fn allreduce_wait(&mut self, _ticket: u64) -> BackendResult<Vec<Self::Buf>> {
        Err(BackendError::Unsupported(
            self.overlap_support()
                .err()
                .map_or_else(String::new, |why| why.to_string()),
        ))
    }

    /// Enqueues a copy of `len` elements on local device `dev`: `dst[dst_at..]` = `src[src_at..]`.
    fn copy_within(
        &mut self,
        _dev: usize,
        _dst: &mut Self::Buf,
        _dst_at: usize,
        _src: &Self::Buf,
        _src_at: usize,
        _len: usize,
    ) -> BackendResult<()> {
        Err(BackendError::Unsupported(format!(
            "the {} backend has no device copy yet",
            self.kind()
        )))
    }

    /// Starts sampling device telemetry for one case, where the backend can (GPU
    /// utilisation and clocks through NVML). The default samples nothing.
    fn telemetry_begin(&mut self) {}
    /// Stops sampling: one record per local device, empty where nothing was sampled.
    fn telemetry_end(&mut self) -> Vec<DeviceTelemetry> {
        Vec::new()
    }

    /// Starts capturing what the collective library says of one case's calls (NCCL's INFO
    /// output on the CUDA backend). The default captures nothing.
    fn capture_begin(&mut self) {}
    /// Stops capturing: the library's account of the case, `None` where nothing was captured.
    fn capture_end(&mut self) -> Option<crate::results::schema::NcclCapture> {
        None
    }

    /// Waits until all enqueued work of every local device is done.
    fn synchronize(&mut self) -> BackendResult<()>;
    /// Records a point on the timeline of every local device.
    fn mark(&mut self) -> BackendResult<Self::Mark>;
    /// Marks that can be taken one after another, with work enqueued between them, and all
    /// still be read after one synchronisation (device events: a GPU records each when its
    /// stream reaches it). 0 where a mark reads a host clock, which must be read when the work
    /// before it is done (the CPU backend).
    fn marks_in_flight(&self) -> usize {
        0
    }
    /// Seconds between two marks (waits for `to` if needed); with several local devices, the
    /// longest.
    fn elapsed_s(&mut self, from: Self::Mark, to: Self::Mark) -> BackendResult<f64>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn device_errors_keep_their_sentence_and_their_source() {
        let io = std::io::Error::new(std::io::ErrorKind::WouldBlock, "no threads left");
        let e = BackendError::thread("4 worker threads", io);
        assert_eq!(
            e.to_string(),
            "could not start 4 worker threads: no threads left"
        );
        let source = e.source().expect("the OS error is the source");
        assert_eq!(source.to_string(), "no threads left");
        let check = BackendError::check("upload of 3 f32 elements into a buffer of 4 f32");
        assert!(matches!(
            &check,
            BackendError::Device(DeviceError::Check(_))
        ));
        assert!(check.source().is_none());
        // A healthy rank's error is empty, so only the failing rank's sentence is reported.
        assert_eq!(BackendError::Device(DeviceError::OtherRank).to_string(), "");
        assert_eq!(
            BackendError::Device(DeviceError::Injected).to_string(),
            "injected failure (fault=fail)"
        );
    }

    #[test]
    fn unsupported_reasons_read_as_before() {
        assert_eq!(
            Unsupported::NoOverlap(BackendKind::Cuda).to_string(),
            "the cuda backend has no non-blocking all-reduce yet (ddp_step)"
        );
        #[cfg(feature = "mpi")]
        {
            use cpu::CpuUnsupported;
            assert_eq!(
                Unsupported::from(CpuUnsupported::NoHalfArithmetic(Dtype::Bf16)).to_string(),
                "the CPU backend has no bf16 arithmetic: use f32, f64 or i32, or --backend cuda"
            );
            assert_eq!(
                Unsupported::from(CpuUnsupported::IntegerGemm).to_string(),
                "CPU GEMM supports f32 and f64, not i32"
            );
        }
        #[cfg(feature = "cuda")]
        {
            use cuda::{CudaUnsupported, GemmUnsupported};
            let int32 = GemmUnsupported::Int32 { library: "cuBLAS" };
            let gemm = Unsupported::from(CudaUnsupported::Gemm(int32.clone()));
            assert_eq!(gemm.to_string(), int32.to_string());
            assert!(Unsupported::from(CudaUnsupported::InPlaceAlltoall)
                .to_string()
                .starts_with("NCCL has no in-place all-to-all"));
        }
    }
}
