//! [`CudaBackend`]: device buffers on the GPUs a rank drives, NCCL collectives, cuBLAS GEMMs,
//! CUDA-event timing, and batch_matmul's overlapped copies.
//!
//! Set-up order (every rank runs it together; see [`CudaBackend::setup`]): probe the driver
//! and open this rank's GPUs → agree that every rank could (a rank that could not speaks for
//! itself, the others stay silent) → refuse two ranks driving one GPU → create the NCCL
//! communicators (unique id from rank 0, broadcast over MPI) → agree on the outcome. Nothing
//! on this path panics: cudarc's loaders are only reached after a presence check and inside
//! [`probe::guarded`].
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

use super::cublas::{self, Blas};
use super::events::{self, Mark, Ring};
use super::nccl::{self, Comms, Region, Resolved};
use super::nvml::NvmlProbe;
use super::pipeline::{self, CopyStep, Lane};
use super::probe::{self, driver_error, guarded, GpuInfo};
use crate::backend::telemetry::{summarize, Sampler, DEFAULT_INTERVAL};
use crate::backend::{
    Backend, BackendError, BackendResult, CollectiveCall, DevicePlan, GemmBatch, HostBuf,
    OverlapTiming,
};
use crate::comm::HostComm;
use crate::params::{BackendKind, CaseParams, Collect, Dtype, MatmulShape, ReduceOp, Workload};
use crate::results::schema::{BackendInfo, DeviceBinding, DeviceTelemetry, TimerInfo};
use crate::topology::affinity;
use cudarc::driver::result as dres;
use cudarc::driver::sys as dsys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::ffi::c_void;
use std::sync::Arc;

/// Bytes of `count` elements of `dtype`, or an error naming the size.
pub fn byte_len(dtype: Dtype, count: usize) -> Result<usize, String> {
    count
        .checked_mul(dtype.size_bytes() as usize)
        .filter(|b| *b <= isize::MAX as usize)
        .ok_or_else(|| format!("{count} {dtype} elements do not fit in memory"))
}

/// Device memory from `cuMemAlloc`, as nccl-tests' `cudaMalloc`: not from a stream-ordered
/// pool, and freed only after its device finished all queued work.
#[derive(Debug)]
struct DeviceMem {
    ptr: dsys::CUdeviceptr,
    bytes: usize,
    ctx: Arc<CudaContext>,
}

impl DeviceMem {
    /// `bytes` of device memory (at least 1: CUDA refuses empty allocations), contents
    /// unspecified.
    fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<DeviceMem, String> {
        ctx.bind_to_thread().map_err(driver_error)?;
        // SAFETY: cuMemAlloc on the current (this device's) context; the memory is only ever
        // reached through the raw address by CUDA, NCCL and cuBLAS calls that are given its
        // size, never through a Rust reference.
        let ptr = unsafe { dres::malloc_sync(bytes.max(1)) }.map_err(driver_error)?;
        Ok(DeviceMem {
            ptr,
            bytes,
            ctx: ctx.clone(),
        })
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // Whatever still uses the memory (a collective, a copy on either stream) finishes
        // first.
        let _ = self.ctx.synchronize();
        // SAFETY: allocated by cuMemAlloc in `new`, freed exactly once, with no work left on
        // the device that could touch it.
        let _ = unsafe { dres::free_sync(self.ptr) };
    }
}

/// One buffer on one GPU: device memory, its element type and count.
#[derive(Debug)]
pub struct DeviceBuf {
    mem: DeviceMem,
    dtype: Dtype,
    count: usize,
    dev: usize,
}

impl DeviceBuf {
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Local device the buffer lives on.
    pub fn device(&self) -> usize {
        self.dev
    }
    fn bytes(&self) -> usize {
        self.count * self.dtype.size_bytes() as usize
    }
    fn ptr(&self) -> dsys::CUdeviceptr {
        self.mem.ptr
    }
    fn region(&self) -> Region {
        Region {
            ptr: self.ptr(),
            len: self.count,
        }
    }
}

/// A host buffer's bytes.
fn host_bytes(h: &HostBuf) -> &[u8] {
    // SAFETY: the vector inside `h` holds `byte_len()` initialised bytes for the borrow's
    // lifetime; any initialised memory may be read as bytes.
    unsafe { std::slice::from_raw_parts(h.as_ptr(), h.byte_len()) }
}

/// A host buffer's bytes, writable.
fn host_bytes_mut(h: &mut HostBuf) -> &mut [u8] {
    // SAFETY: as above, exclusively borrowed; every bit pattern is a valid f32, f64, i32, f16
    // or bf16, so any bytes written leave the vector valid.
    unsafe { std::slice::from_raw_parts_mut(h.as_mut_ptr(), h.byte_len()) }
}

/// One GPU this rank drives.
struct Device {
    info: GpuInfo,
    ctx: Arc<CudaContext>,
    /// Carries every operation on this GPU.
    stream: Arc<CudaStream>,
    blas: Result<Blas, String>,
    /// One timing event per mark slot.
    marks: Vec<CudaEvent>,
    /// batch_matmul's copy stream and staging (created on first use).
    lane: Option<Lane>,
    /// Orders the copy stream after the main stream at the start of an overlapped step.
    gate: CudaEvent,
}

/// NCCL, cuBLAS and CUDA events on the GPUs of one rank.
pub struct CudaBackend {
    comms: Result<Comms, String>,
    devices: Vec<Device>,
    rank: u32,
    size: u32,
    plan: DevicePlan,
    driver: String,
    nccl_version: Option<String>,
    cublas_version: Option<String>,
    tf32: bool,
    ring: Ring,
    timer: TimerInfo,
    ordinal_note: Option<String>,
    warnings: Vec<String>,
    /// NVML sampling during cases (`None`: NVML missing or switched off).
    telemetry: Option<Sampler>,
    /// The devices are scalebench's stand-ins, not GPUs (labelled in every result).
    standin: bool,
}

/// Set to `0` to switch NVML sampling off.
pub const TELEMETRY_ENV: &str = "SCALEBENCH_TELEMETRY";

/// NVML sampling of `uuids`, or why there is none (a warning), or neither when switched off.
fn start_telemetry(uuids: Vec<String>) -> (Option<Sampler>, Option<String>) {
    if std::env::var(TELEMETRY_ENV).is_ok_and(|v| v.trim() == "0") {
        return (None, None);
    }
    match Sampler::spawn(move || NvmlProbe::open(uuids), DEFAULT_INTERVAL) {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e)),
    }
}

/// What one rank found and opened on its own, before any agreement.
struct Local {
    devices: Vec<Device>,
    driver: String,
    ordinal_note: Option<String>,
    nccl_here: bool,
    timer: TimerInfo,
    warnings: Vec<String>,
}

/// An error a healthy rank returns when another rank failed: the failing rank's own message
/// is the one reported (empty messages are left out when ranks agree on a failure).
fn silent(class: u8) -> BackendError {
    if class >= 2 {
        BackendError::Unavailable(String::new())
    } else {
        BackendError::Device(String::new())
    }
}

fn class_of(e: &BackendError) -> u8 {
    match e {
        BackendError::Unavailable(_) => 2,
        _ => 1,
    }
}

/// Two ranks (or two devices of one rank) on one GPU, as a sentence with the fix, or `None`.
/// `ranks[r]` is rank r's host and the UUIDs of its GPUs.
pub fn duplicate_gpus(ranks: &[(String, Vec<String>)]) -> Option<String> {
    let mut seen: std::collections::BTreeMap<&str, (usize, &str)> = Default::default();
    for (r, (host, uuids)) in ranks.iter().enumerate() {
        for u in uuids {
            if let Some((first, first_host)) = seen.insert(u, (r, host)) {
                let who = if first == r {
                    format!("rank {r} drives GPU {u} twice")
                } else {
                    format!("ranks {first} and {r} both drive GPU {u}")
                };
                return Some(format!(
                    "{who} (host {first_host}): NCCL needs a GPU of its own for each device; start at most one rank per GPU (check --devices-per-node, CUDA_VISIBLE_DEVICES and the launcher's GPU binding)"
                ));
            }
        }
    }
    None
}

/// `local` where every rank succeeded; otherwise, on every rank, `{what}: rank r: reason; …`
/// with each failing rank's reason (collective).
fn agree_failures<C: HostComm, T>(
    comm: &C,
    local: Result<T, String>,
    what: &str,
) -> Result<T, String> {
    if comm.all_ok(local.is_ok()) {
        return local;
    }
    let msg = local.as_ref().err().cloned().unwrap_or_default();
    drop(local);
    let all = comm.gather_bytes(msg.as_bytes());
    let mut text = Vec::new();
    if comm.is_root() {
        text = all
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.is_empty())
            .map(|(r, m)| format!("rank {r}: {}", String::from_utf8_lossy(m)))
            .collect::<Vec<_>>()
            .join("; ")
            .into_bytes();
    }
    comm.broadcast_bytes(&mut text);
    Err(format!("{what}: {}", String::from_utf8_lossy(&text)))
}

/// Opens this rank's GPUs: driver, ordinals, contexts, streams, events, cuBLAS.
fn open_local(plan: &DevicePlan) -> BackendResult<Local> {
    if plan.local_indices.len() != plan.devices_per_rank.max(1) {
        return Err(BackendError::Device(format!(
            "the device plan lists {} GPU(s) for {} device(s) per rank",
            plan.local_indices.len(),
            plan.devices_per_rank
        )));
    }
    let visible = probe::device_count().map_err(BackendError::Unavailable)?;
    let choice =
        probe::choose_ordinals(&plan.local_indices, visible).map_err(BackendError::Unavailable)?;
    let driver = probe::driver_version().map_err(BackendError::Device)?;
    let libs = probe::libraries();
    let cublas_check = if libs.cublas {
        probe::missing_cublas_symbols().and_then(|m| {
            if m.is_empty() {
                Ok(())
            } else {
                Err(probe::missing_symbols_message(
                    "cuBLAS (libcublas.so)",
                    &m,
                    "install the cuBLAS of CUDA 11.4 or newer, or put its directory first in LD_LIBRARY_PATH",
                ))
            }
        })
    } else {
        Err(probe::no_cublas_message())
    };
    let mut warnings = Vec::new();
    let mut devices = Vec::new();
    for &ordinal in &choice.ordinals {
        let info = probe::gpu_info(ordinal).map_err(BackendError::Device)?;
        let open = || -> Result<Device, String> {
            let ctx = CudaContext::new(ordinal as usize).map_err(driver_error)?;
            // SAFETY: called before anything is allocated through cudarc on this context (the
            // backend's buffers are its own cuMemAlloc memory anyway). Without tracking, the
            // backend orders work itself: everything on a device runs on its one stream,
            // except overlapped batch steps, whose second stream is ordered by explicit
            // events and synchronised before the step returns.
            unsafe { ctx.disable_event_tracking() };
            let stream = ctx.new_stream().map_err(driver_error)?;
            let marks = events::timing_events(&ctx, events::SLOTS)?;
            let gate = ctx.new_event(None).map_err(driver_error)?;
            // One small allocation proves the device can hold buffers (it fails here, with
            // the fix, rather than in the first case when the GPU is full or unusable).
            DeviceMem::new(&ctx, 1).map_err(|e| {
                format!("the CUDA driver (libcuda.so.1) could not allocate device memory: {e}: free the GPU (`nvidia-smi` lists the processes using it) or choose another with CUDA_VISIBLE_DEVICES")
            })?;
            let blas = match &cublas_check {
                Ok(()) => guarded("cuBLAS", || Blas::new(&stream)),
                Err(e) => Err(e.clone()),
            };
            Ok(Device {
                info: info.clone(),
                ctx,
                stream,
                blas,
                marks,
                lane: None,
                gate,
            })
        };
        let d = guarded("opening the GPU", open).map_err(|e| {
            BackendError::Device(format!(
                "could not open GPU {} ({}): {e}",
                ordinal,
                info.describe()
            ))
        })?;
        if let Err(e) = &d.blas {
            warnings.push(format!("GPU {ordinal}: GEMM cases will fail: {e}"));
        }
        devices.push(d);
    }
    // One thread drives every GPU of the rank: bind it to the devices' CPUs (their union).
    let mut want: Vec<u32> = plan
        .worker_cpus
        .iter()
        .flatten()
        .flatten()
        .copied()
        .collect();
    want.sort_unstable();
    want.dedup();
    if !want.is_empty() {
        if let Err(e) = affinity::bind_current_thread(&want) {
            warnings.push(format!(
                "could not bind the rank to CPUs {}: {e}",
                affinity::format_cpulist(&want)
            ));
        }
    }
    let measured = guarded("timing events", || {
        events::measure_resolution_s(&devices[0].stream, 50)
    })
    .map_err(BackendError::Device)?;
    let timer = TimerInfo {
        source: match measured {
            Some(_) => "cuEventElapsedTime: CUDA events on each GPU's stream, longest over the rank's GPUs (resolution: smallest non-zero gap between back-to-back events, measured)".into(),
            None => "cuEventElapsedTime: CUDA events on each GPU's stream, longest over the rank's GPUs (resolution: CUDA's documented ~0.5 µs; no non-zero gap was observed)".into(),
        },
        resolution_s: measured.unwrap_or(events::DOCUMENTED_RESOLUTION_S),
    };
    Ok(Local {
        devices,
        driver,
        ordinal_note: choice.note,
        nccl_here: libs.nccl,
        timer,
        warnings,
    })
}

impl CudaBackend {
    /// Sets up the backend on `world` (see the module doc). Collective: every rank calls it.
    pub fn new(
        world: &mpi::topology::SimpleCommunicator,
        plan: DevicePlan,
    ) -> BackendResult<CudaBackend> {
        let comm = crate::comm::mpi::MpiComm::new(world);
        Self::setup(&comm, plan)
    }

    /// [`CudaBackend::new`] over any control plane (a one-process [`crate::comm::SoloComm`]
    /// in tests).
    pub fn setup<C: HostComm>(comm: &C, plan: DevicePlan) -> BackendResult<CudaBackend> {
        let (rank, size) = (comm.rank(), comm.size());
        let g = plan.devices_per_rank.max(1);
        let local = open_local(&plan);
        let mine = local.as_ref().err().map_or(0, class_of);
        let worst = comm.max_f64(f64::from(mine)) as u8;
        let local = match local {
            Err(e) => return Err(e),
            Ok(_) if worst > 0 => return Err(silent(worst)),
            Ok(l) => l,
        };

        // No GPU may be driven twice.
        let me = format!(
            "{}\t{}",
            crate::topology::hostname(),
            local
                .devices
                .iter()
                .map(|d| d.info.uuid.clone())
                .collect::<Vec<_>>()
                .join(",")
        );
        let all = comm.gather_bytes(me.as_bytes());
        let mut verdict = Vec::new();
        if comm.is_root() {
            let ranks: Vec<(String, Vec<String>)> = all
                .iter()
                .map(|b| {
                    let s = String::from_utf8_lossy(b);
                    let (host, uuids) = s.split_once('\t').unwrap_or((&s, ""));
                    (
                        host.to_string(),
                        uuids
                            .split(',')
                            .filter(|u| !u.is_empty())
                            .map(str::to_string)
                            .collect(),
                    )
                })
                .collect();
            verdict = duplicate_gpus(&ranks).unwrap_or_default().into_bytes();
        }
        comm.broadcast_bytes(&mut verdict);
        if !verdict.is_empty() {
            let msg = if comm.is_root() {
                String::from_utf8_lossy(&verdict).into_owned()
            } else {
                String::new()
            };
            return Err(BackendError::Unavailable(msg));
        }

        let tf32_here = cublas::tf32_requested(std::env::var(cublas::TF32_ENV).ok().as_deref());
        let tf32 = comm.all_ok(tf32_here);
        let mut warnings = local.warnings;
        if tf32_here && !tf32 {
            warnings.push(format!(
                "{} is set on some ranks only: f32 GEMMs use FP32 everywhere",
                cublas::TF32_ENV
            ));
        }

        let nccl_all = comm.all_ok(local.nccl_here);
        let devices = local.devices;
        let comms = if nccl_all {
            // NCCL is there but cannot start (too old, incomplete, or its communicators fail
            // to form): the launch fails with every failing rank's reason (exit 4), since
            // this machine's collectives would fail or hang.
            match Self::init_nccl(comm, &devices, rank, size, g) {
                Ok(c) => Ok(c),
                Err(e) if comm.is_root() => return Err(BackendError::Device(e)),
                Err(_) => return Err(silent(1)),
            }
        } else {
            let e = if local.nccl_here {
                format!("on another rank: {}", probe::no_nccl_message())
            } else {
                probe::no_nccl_message()
            };
            warnings.push(format!("collectives will fail: {e}"));
            Err(e)
        };
        let nccl_version = if local.nccl_here {
            guarded("ncclGetVersion", nccl::version).ok()
        } else {
            None
        };
        let cublas_version = devices[0]
            .blas
            .as_ref()
            .ok()
            .and_then(|b| guarded("cublasGetVersion", || b.version()).ok());
        let (telemetry, why_not) =
            start_telemetry(devices.iter().map(|d| d.info.uuid.clone()).collect());
        warnings.extend(why_not);
        let standin = devices
            .iter()
            .any(|d| d.info.name == probe::STANDIN_DEVICE_NAME);
        if standin {
            warnings.insert(0, probe::STANDIN_LABEL.to_string());
        }
        Ok(CudaBackend {
            comms,
            devices,
            rank,
            size,
            plan,
            driver: local.driver,
            nccl_version,
            cublas_version,
            tf32,
            ring: Ring::new(events::SLOTS),
            timer: local.timer,
            ordinal_note: local.ordinal_note,
            warnings,
            telemetry,
            standin,
        })
    }

    /// One communicator per local GPU; every rank learns every failing rank's reason.
    fn init_nccl<C: HostComm>(
        comm: &C,
        devices: &[Device],
        rank: u32,
        size: u32,
        g: usize,
    ) -> Result<Comms, String> {
        let ready = guarded("NCCL", nccl::check_library);
        agree_failures(comm, ready, "NCCL cannot be used")?;
        let mut payload = Vec::new();
        if comm.is_root() {
            payload = match guarded("ncclGetUniqueId", nccl::unique_id) {
                Ok(id) => [vec![0u8], id].concat(),
                Err(e) => [vec![1u8], e.into_bytes()].concat(),
            };
        }
        comm.broadcast_bytes(&mut payload);
        let local = match payload.split_first() {
            Some((0, id)) => guarded("ncclCommInitRank", || {
                Comms::init(id, size * g as u32, rank * g as u32, g, |i| {
                    devices[i].ctx.bind_to_thread().map_err(driver_error)
                })
            }),
            Some((_, msg)) => Err(format!(
                "ncclGetUniqueId failed on rank 0: {}",
                String::from_utf8_lossy(msg)
            )),
            None => Err("rank 0 sent no NCCL unique id".to_string()),
        };
        // On failure `local` drops inside, aborting any communicator this rank created.
        agree_failures(
            comm,
            local,
            "NCCL (libnccl.so) could not create its communicators (rerun with NCCL_DEBUG=INFO to see why; NCCL_SOCKET_IFNAME picks its network)",
        )
    }

    fn device(&self, dev: usize) -> BackendResult<&Device> {
        self.devices.get(dev).ok_or_else(|| {
            BackendError::Device(format!(
                "local device {dev} does not exist (this rank drives {})",
                self.devices.len()
            ))
        })
    }

    fn check_buf(
        &self,
        what: &str,
        b: &DeviceBuf,
        dev: usize,
        dtype: Dtype,
        min: usize,
    ) -> BackendResult<()> {
        if b.dev != dev || b.dtype != dtype || b.count < min {
            return Err(BackendError::Device(format!(
                "{what}: a {} {} buffer on local device {} where {min} {dtype} elements on device {dev} are needed",
                b.count, b.dtype, b.dev
            )));
        }
        Ok(())
    }

    /// Synchronises every stream, ignoring errors (before returning an error from a step
    /// that may have left copies in flight).
    fn drain(&self) {
        for d in &self.devices {
            let _ = d.stream.synchronize();
            if let Some(l) = &d.lane {
                let _ = l.copy.synchronize();
            }
        }
    }

    /// The overlapped batch step (see [`super::pipeline`]).
    fn overlapped_step(
        &mut self,
        batches: &[GemmBatch],
        inputs: &[HostBuf],
        a: &mut [DeviceBuf],
        c: &mut [DeviceBuf],
    ) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
        let g = self.devices.len();
        if batches.len() != g || inputs.len() != g || a.len() != g || c.len() != g {
            return Err(BackendError::Device(format!(
                "a batch step needs one batch, input, A and C per local device ({g})"
            )));
        }
        let tf32 = self.tf32;
        // Check and size everything before enqueuing anything.
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
                return Err(BackendError::Device(format!(
                    "batch input of {} elements for {} matrices of {mat}",
                    inputs[dev].len(),
                    bt.count
                )));
            }
            self.check_buf("batch A", &a[dev], dev, dtype, elems)?;
            self.check_buf("batch C", &c[dev], dev, dtype, elems)?;
            let mb = byte_len(dtype, mat).map_err(BackendError::Device)?;
            let params = cublas::row_major(&GemmBatch { count: 1, ..bt })
                .map_err(BackendError::Unsupported)?;
            let types = cublas::types(dtype, tf32).map_err(BackendError::Unsupported)?;
            plans.push((bt.count, mb, params, types, dtype));
            if bt.count > 0 {
                let d = &mut self.devices[dev];
                d.blas
                    .as_ref()
                    .map_err(|e| BackendError::Device(e.clone()))?;
                let bytes = bt.count * mb;
                match &mut d.lane {
                    Some(l) => l.fit(&d.ctx, bytes, bt.count),
                    None => Lane::new(&d.ctx, bytes, bt.count).map(|l| d.lane = Some(l)),
                }
                .map_err(BackendError::Device)?;
            }
        }
        let r = self.enqueue_overlapped(&plans, inputs, a, c);
        let r = r.and_then(|()| {
            for d in &self.devices {
                if let Some(l) = &d.lane {
                    l.copy.synchronize().map_err(driver_error)?;
                }
                d.stream.synchronize().map_err(driver_error)?;
            }
            Ok(())
        });
        if let Err(e) = r {
            self.drain();
            return Err(BackendError::Device(e));
        }
        // Timing from the events; the device with the longest span speaks for the rank.
        let mut timing: Option<OverlapTiming> = None;
        let mut outputs = Vec::with_capacity(g);
        for (dev, &(count, mb, _, _, dtype)) in plans.iter().enumerate() {
            let mut out = HostBuf::zeros(dtype, count * mb / dtype.size_bytes() as usize)?;
            if count == 0 {
                outputs.push(out);
                continue;
            }
            let lane = self.devices[dev].lane.as_ref().expect("sized above");
            let ev = |j, w| &lane.events[pipeline::event_index(j, w)];
            let span =
                |f: usize, t: usize, j0: usize, j1: usize| events::elapsed_s(ev(j0, f), ev(j1, t));
            let mut ins = Vec::with_capacity(count);
            let mut gemms = Vec::with_capacity(count);
            let mut outs = Vec::with_capacity(count);
            for j in 0..count {
                ins.push(span(0, 1, j, j).map_err(BackendError::Device)?);
                gemms.push(span(2, 3, j, j).map_err(BackendError::Device)?);
                outs.push(span(4, 5, j, j).map_err(BackendError::Device)?);
            }
            let whole = span(0, 5, 0, count - 1).map_err(BackendError::Device)?;
            let t = pipeline::overlap_timing(&ins, &gemms, &outs, whole);
            if timing.is_none_or(|x| t.span_s > x.span_s) {
                timing = Some(t);
            }
            // SAFETY: both copy streams and main streams are synchronised, so the copy engine
            // no longer writes the staging buffer; it holds `count·mb` bytes (sized above) and
            // `out` exactly that many.
            unsafe {
                std::ptr::copy_nonoverlapping(lane.pin_out.ptr(), out.as_mut_ptr(), count * mb);
            }
            outputs.push(out);
        }
        Ok((outputs, timing))
    }

    /// Enqueues the copies and GEMMs of an overlapped step on every device, interleaving
    /// devices so each one gets its first matrix early.
    #[allow(clippy::type_complexity)]
    fn enqueue_overlapped(
        &self,
        plans: &[(usize, usize, cublas::Params, cublas::Types, Dtype)],
        inputs: &[HostBuf],
        a: &[DeviceBuf],
        c: &[DeviceBuf],
    ) -> Result<(), String> {
        let orders: Vec<Vec<CopyStep>> = plans.iter().map(|p| pipeline::copy_order(p.0)).collect();
        // The copy stream must see the buffers' allocation and earlier writes on the main
        // stream before it touches them.
        for (dev, d) in self.devices.iter().enumerate() {
            if let Some(l) = d.lane.as_ref().filter(|_| plans[dev].0 > 0) {
                d.gate.record(&d.stream).map_err(driver_error)?;
                l.copy.wait(&d.gate).map_err(driver_error)?;
            }
        }
        let longest = orders.iter().map(Vec::len).max().unwrap_or(0);
        for step in 0..longest {
            for (dev, order) in orders.iter().enumerate() {
                let Some(&s) = order.get(step) else { continue };
                let d = &self.devices[dev];
                let l = d.lane.as_ref().expect("sized before enqueuing");
                let (_, mb, params, types, _) = plans[dev];
                let ev = |j, w| &l.events[pipeline::event_index(j, w)];
                match s {
                    CopyStep::In(j) => {
                        // SAFETY: matrix j of the input holds `mb` bytes at j·mb (lengths
                        // checked in `overlapped_step`); the staging region j is written by
                        // the host before its copy is enqueued and never again in this step.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                inputs[dev].as_ptr().add(j * mb),
                                l.pin_in.ptr().add(j * mb),
                                mb,
                            );
                        }
                        ev(j, 0).record(&l.copy).map_err(driver_error)?;
                        d.ctx.bind_to_thread().map_err(driver_error)?;
                        // SAFETY: destination: matrix j of A (checked to hold it); source:
                        // staging region j of pinned memory that stays allocated until the
                        // step synchronises the copy stream.
                        unsafe {
                            dsys::cuMemcpyHtoDAsync_v2(
                                a[dev].ptr() + (j * mb) as u64,
                                l.pin_in.ptr().add(j * mb) as *const c_void,
                                mb,
                                l.copy.cu_stream(),
                            )
                        }
                        .result()
                        .map_err(|e| format!("cuMemcpyHtoDAsync: {}", driver_error(e)))?;
                        ev(j, 1).record(&l.copy).map_err(driver_error)?;
                        d.stream.wait(ev(j, 1)).map_err(driver_error)?;
                        ev(j, 2).record(&d.stream).map_err(driver_error)?;
                        let blas = d.blas.as_ref().map_err(|e| e.clone())?;
                        let at = (j * mb) as u64;
                        // SAFETY: A_j and C_j are matrix j of buffers checked to hold the whole
                        // batch; C and A are distinct allocations; both live until the step
                        // synchronises.
                        unsafe {
                            blas.gemm(
                                &params,
                                types,
                                a[dev].ptr() + at,
                                a[dev].ptr() + at,
                                c[dev].ptr() + at,
                            )?
                        };
                        ev(j, 3).record(&d.stream).map_err(driver_error)?;
                    }
                    CopyStep::Out(j) => {
                        l.copy.wait(ev(j, 3)).map_err(driver_error)?;
                        ev(j, 4).record(&l.copy).map_err(driver_error)?;
                        d.ctx.bind_to_thread().map_err(driver_error)?;
                        // SAFETY: source: product j in C (checked); destination: staging
                        // region j of pinned memory, reached only through raw pointers until
                        // the step has synchronised.
                        unsafe {
                            dsys::cuMemcpyDtoHAsync_v2(
                                l.pin_out.ptr().add(j * mb) as *mut c_void,
                                c[dev].ptr() + (j * mb) as u64,
                                mb,
                                l.copy.cu_stream(),
                            )
                        }
                        .result()
                        .map_err(|e| format!("cuMemcpyDtoHAsync: {}", driver_error(e)))?;
                        ev(j, 5).record(&l.copy).map_err(driver_error)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // Let queued work finish before the communicators go (abort does not wait for it).
        self.drain();
        self.comms = Err("dropped".into());
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

    fn telemetry_begin(&mut self) {
        if let Some(s) = &mut self.telemetry {
            s.begin();
        }
    }

    fn telemetry_end(&mut self) -> Vec<DeviceTelemetry> {
        let Some(s) = &mut self.telemetry else {
            return Vec::new();
        };
        let interval_s = s.interval().as_secs_f64();
        let taken = s.end();
        taken
            .iter()
            .enumerate()
            .map(|(dev, samples)| summarize(self.device_index(dev), samples, interval_s))
            .collect()
    }

    fn supports(&self, p: &CaseParams) -> Result<(), String> {
        if p.workload == Workload::Alltoall && p.in_place == Some(true) {
            return Err(nccl::IN_PLACE_ALLTOALL.to_string());
        }
        if !p.workload.is_collective() {
            cublas::types(p.dtype, false)?;
            if let Some(s) = p.shape {
                cublas::row_major(&GemmBatch {
                    shape: s,
                    count: 1,
                    shared_b: false,
                })?;
            }
        }
        if p.workload == Workload::BatchMatmul
            && p.collect == Some(Collect::Reduce)
            && matches!(p.dtype, Dtype::F16 | Dtype::Bf16)
        {
            return Err(format!(
                "batch_matmul --collect reduce sums the products on the host and through MPI, which have no {} arithmetic: use --collect gather, or f32",
                p.dtype
            ));
        }
        Ok(())
    }

    fn alloc(&mut self, dev: usize, dtype: Dtype, count: usize) -> BackendResult<DeviceBuf> {
        let d = self.device(dev)?;
        let bytes = byte_len(dtype, count).map_err(BackendError::Device)?;
        let mem = DeviceMem::new(&d.ctx, bytes).map_err(|e| {
            BackendError::Device(format!(
                "cuMemAlloc of {bytes} bytes on GPU {} ({}): {e}",
                d.info.ordinal, d.info.name
            ))
        })?;
        Ok(DeviceBuf {
            mem,
            dtype,
            count,
            dev,
        })
    }

    fn upload(&mut self, dev: usize, buf: &mut DeviceBuf, host: &HostBuf) -> BackendResult<()> {
        if buf.count != host.len() || buf.dtype != host.dtype() || buf.dev != dev {
            return Err(BackendError::Device(format!(
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
        d.ctx
            .bind_to_thread()
            .map_err(|e| BackendError::Device(driver_error(e)))?;
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
        .map_err(|e| BackendError::Device(format!("cuMemcpyHtoDAsync: {}", driver_error(e))))
    }

    fn download(&mut self, dev: usize, buf: &DeviceBuf) -> BackendResult<HostBuf> {
        let mut h = HostBuf::zeros(buf.dtype, buf.count)?;
        if buf.count == 0 {
            return Ok(h);
        }
        let d = self.device(dev)?;
        let dst = host_bytes_mut(&mut h);
        debug_assert!(dst.len() == buf.bytes() && buf.bytes() <= buf.mem.bytes);
        d.ctx
            .bind_to_thread()
            .map_err(|e| BackendError::Device(driver_error(e)))?;
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
        .map_err(|e| BackendError::Device(format!("cuMemcpyDtoHAsync: {}", driver_error(e))))?;
        Ok(h)
    }

    fn collective(
        &mut self,
        call: &CollectiveCall,
        send: &[DeviceBuf],
        recv: &mut [DeviceBuf],
    ) -> BackendResult<()> {
        let comms = self
            .comms
            .as_ref()
            .map_err(|e| BackendError::Device(e.clone()))?;
        let g = self.devices.len();
        if recv.len() != g || (!call.in_place && send.len() != g) {
            return Err(BackendError::Device(format!(
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
            for c in nccl::plan(call, self.device_index(dev)).map_err(BackendError::Device)? {
                let r = Resolved::new(c, send_r, recv_r, eb).map_err(BackendError::Device)?;
                resolved.push((dev, r));
            }
        }
        cudarc::nccl::result::group_start().map_err(|e| {
            BackendError::Device(format!("ncclGroupStart: {}", nccl::error_text(e.0)))
        })?;
        let mut first_err = None;
        for (dev, r) in &resolved {
            // SAFETY: `comms.get(dev)` is this device's live communicator and `stream` its
            // stream; the regions were checked against live buffers of this device, which the
            // caller keeps allocated (they are dropped on this same stream, after the call).
            let out = unsafe {
                r.launch(
                    call.dtype,
                    comms.get(*dev),
                    self.devices[*dev].stream.cu_stream() as _,
                )
            };
            if let Err(e) = out {
                first_err = Some(e);
                break;
            }
        }
        // Close the group even after an error, or NCCL stays in group mode.
        if let Err(e) = cudarc::nccl::result::group_end() {
            first_err.get_or_insert(format!("ncclGroupEnd: {}", nccl::error_text(e.0)));
        }
        match first_err {
            Some(e) => {
                let msg = format!(
                    "{}: NCCL (libnccl.so) returned {e}: rerun with NCCL_DEBUG=WARN to see NCCL's reason",
                    call.workload
                );
                // A communicator is unusable after an error (NCCL's recovery is to abort it):
                // later collectives fail with this sentence instead of hanging on it. Abort
                // also ends this rank's part of the group already queued (no drain first:
                // it would wait for peers that may never come).
                self.comms = Err(format!(
                    "the NCCL communicators were aborted after an earlier error ({msg})"
                ));
                Err(BackendError::Device(msg))
            }
            None => Ok(()),
        }
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
            return Err(BackendError::Device(format!(
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
            let params = cublas::row_major(&bt).map_err(BackendError::Unsupported)?;
            let types = cublas::types(dtype, self.tf32).map_err(BackendError::Unsupported)?;
            let blas = self.devices[dev]
                .blas
                .as_ref()
                .map_err(|e| BackendError::Device(e.clone()))?;
            // SAFETY: A, B and C were checked above to be buffers of this device holding the
            // whole batch; C is exclusively borrowed, so it overlaps neither A nor B; all stay
            // allocated until this device's stream (the handle's stream) has run the GEMM.
            unsafe { blas.gemm(&params, types, a[dev].ptr(), b[dev].ptr(), c[dev].ptr()) }
                .map_err(BackendError::Device)?;
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

    fn synchronize(&mut self) -> BackendResult<()> {
        for d in &self.devices {
            d.stream.synchronize().map_err(|e| {
                BackendError::Device(format!("GPU {}: {}", d.info.ordinal, driver_error(e)))
            })?;
            if let Some(l) = &d.lane {
                l.copy
                    .synchronize()
                    .map_err(|e| BackendError::Device(driver_error(e)))?;
            }
        }
        if let Ok(c) = &self.comms {
            c.check_async().map_err(BackendError::Device)?;
        }
        Ok(())
    }

    fn mark(&mut self) -> BackendResult<Mark> {
        let m = self.ring.take();
        let slot = self.ring.check(m).map_err(BackendError::Device)?;
        for d in &self.devices {
            d.marks[slot]
                .record(&d.stream)
                .map_err(|e| BackendError::Device(format!("cuEventRecord: {}", driver_error(e))))?;
        }
        Ok(m)
    }

    fn elapsed_s(&mut self, from: Mark, to: Mark) -> BackendResult<f64> {
        let a = self.ring.check(from).map_err(BackendError::Device)?;
        let b = self.ring.check(to).map_err(BackendError::Device)?;
        let mut longest = 0.0f64;
        for d in &self.devices {
            let s = events::elapsed_s(&d.marks[a], &d.marks[b]).map_err(BackendError::Device)?;
            longest = longest.max(s);
        }
        Ok(longest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::SoloComm;

    #[test]
    fn byte_arithmetic() {
        assert_eq!(byte_len(Dtype::F16, 3).unwrap(), 6);
        assert_eq!(byte_len(Dtype::F64, 1 << 20).unwrap(), 8 << 20);
        assert_eq!(byte_len(Dtype::I32, 0).unwrap(), 0);
        assert!(byte_len(Dtype::F64, usize::MAX / 4)
            .unwrap_err()
            .contains("do not fit"));
    }

    #[test]
    fn the_same_gpu_twice_is_refused() {
        let r = |h: &str, u: &[&str]| (h.to_string(), u.iter().map(|x| x.to_string()).collect());
        assert_eq!(
            duplicate_gpus(&[r("a", &["GPU-1"]), r("a", &["GPU-2"]), r("b", &["GPU-3"])]),
            None
        );
        let m = duplicate_gpus(&[r("a", &["GPU-1"]), r("a", &["GPU-1"])]).unwrap();
        assert!(
            m.starts_with("ranks 0 and 1 both drive GPU GPU-1 (host a)"),
            "{m}"
        );
        let m = duplicate_gpus(&[r("a", &["GPU-1", "GPU-1"])]).unwrap();
        assert!(m.starts_with("rank 0 drives GPU GPU-1 twice"), "{m}");
    }

    #[test]
    fn healthy_ranks_stay_silent_when_another_fails() {
        assert!(matches!(silent(2), BackendError::Unavailable(m) if m.is_empty()));
        assert!(matches!(silent(1), BackendError::Device(m) if m.is_empty()));
        assert_eq!(class_of(&BackendError::Unavailable("x".into())), 2);
        assert_eq!(class_of(&BackendError::Device("x".into())), 1);
    }

    /// Without a driver (CI, this machine) set-up is one sentence, never a panic; with one,
    /// it opens the GPU and agrees on itself.
    #[test]
    fn setup_without_a_driver_is_one_sentence() {
        let plan = DevicePlan::unbound(1, 1);
        match CudaBackend::setup(&SoloComm, plan) {
            Err(BackendError::Unavailable(m)) => assert!(
                m.starts_with("no CUDA driver found: ") || m.starts_with("no CUDA device: "),
                "{m}"
            ),
            Err(e) => panic!("unexpected error: {e}"),
            Ok(b) => {
                assert_eq!(b.total_devices(), 1);
                assert_eq!(b.kind(), BackendKind::Cuda);
            }
        }
    }
}
