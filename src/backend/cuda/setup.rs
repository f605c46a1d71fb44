//! Setting the backend up: every rank opens its GPUs, the ranks agree that all could, no GPU
//! is driven twice, the NCCL communicators are created, telemetry starts.
//!
//! Set-up order (every rank runs it together; see [`CudaBackend::setup`]): probe the driver
//! and open this rank's GPUs → agree that every rank could (a rank that could not speaks for
//! itself, the others stay silent) → refuse two ranks driving one GPU → create the NCCL
//! communicators (unique id from rank 0, broadcast over MPI) → agree on the outcome. Nothing
//! on this path panics: cudarc's loaders are only reached after a presence check and inside
//! [`probe::guarded`].

use super::backend::{CudaBackend, Device};
use super::cublas::{self, Blas};
use super::events::{self, Ring};
use super::memory::DeviceMem;
use super::nccl::{self, Comms};
use super::nvml::NvmlProbe;
use super::probe::{self, guarded, GpuInfo};
use super::{CudaError, CudaResult};
use crate::backend::ccl;
use crate::backend::ordinals;
use crate::backend::telemetry;
use crate::backend::{BackendError, BackendResult, DeviceError, DevicePlan};
use crate::comm::HostComm;
use crate::results::schema::TimerInfo;
use crate::topology::affinity;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// What one rank found and opened on its own, before any agreement.
pub(super) struct Local {
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
        BackendError::Device(DeviceError::OtherRank)
    }
}

fn class_of(e: &BackendError) -> u8 {
    match e {
        BackendError::Unavailable(_) => 2,
        _ => 1,
    }
}

/// How NCCL's one-GPU-per-rank rule is said (GPUs by UUID).
const NCCL_SHARING: ccl::sharing::Rule = ccl::sharing::Rule {
    device: "GPU",
    library: "NCCL",
    visible_env: "CUDA_VISIBLE_DEVICES",
};

/// Two ranks (or two devices of one rank) on one GPU, as a sentence with the fix, or `None`.
/// `ranks[r]` is rank r's host and the UUIDs of its GPUs.
pub fn duplicate_gpus(ranks: &[(String, Vec<String>)]) -> Option<String> {
    ccl::sharing::duplicate_devices(ranks, &NCCL_SHARING)
}

/// `local` where every rank succeeded; otherwise, on every rank, `{what}: rank r: reason; …`
/// with each failing rank's reason (collective).
fn agree_failures<C: HostComm, T, E: std::fmt::Display>(
    comm: &C,
    local: Result<T, E>,
    what: &'static str,
) -> CudaResult<T> {
    let all_ok = comm.all_ok(local.is_ok());
    // A success on this rank drops here (its communicators abort) when another rank failed.
    let msg = match local {
        Ok(v) if all_ok => return Ok(v),
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    };
    let reasons = crate::comm::every_ranks_reasons(comm, &msg);
    Err(CudaError::Ranks { what, reasons })
}

/// Opens this rank's GPUs: driver, ordinals, contexts, streams, events, cuBLAS.
fn open_local(plan: &DevicePlan) -> BackendResult<Local> {
    if plan.local_indices.len() != plan.devices_per_rank.max(1) {
        return Err(BackendError::check(format!(
            "the device plan lists {} for {} per rank",
            crate::units::count(plan.local_indices.len(), "GPU", "GPUs"),
            crate::units::count(plan.devices_per_rank, "device", "devices")
        )));
    }
    // No driver, no device, a driver too old: the backend cannot start here (exit 2).
    let visible = probe::device_count().map_err(|e| BackendError::Unavailable(e.to_string()))?;
    let runtime = ordinals::Runtime {
        name: "CUDA",
        ccl: "NCCL",
        visible_env: probe::visible_devices_env(),
    };
    let choice = ordinals::choose_ordinals(&plan.local_indices, visible, &runtime)?;
    let driver = probe::driver_version()?;
    let libs = probe::libraries();
    let cublas_check = cublas_usable(libs.cublas);
    let mut warnings = Vec::new();
    let mut devices = Vec::new();
    for &ordinal in &choice.ordinals {
        let info = probe::gpu_info(ordinal)?;
        let d = guarded("opening the GPU", || {
            open_device(ordinal, &info, &cublas_check)
        })
        .map_err(|e| {
            BackendError::from(e.context(format!(
                "could not open GPU {} ({})",
                ordinal,
                info.describe()
            )))
        })?;
        if let Err(e) = &d.blas {
            warnings.push(format!("GPU {ordinal}: GEMM cases will fail: {e}"));
        }
        devices.push(d);
    }
    bind_driving_thread(plan, &mut warnings);
    let timer = timer_info(&devices[0].stream)?;
    Ok(Local {
        devices,
        driver,
        ordinal_note: choice.note,
        nccl_here: libs.nccl,
        timer,
        warnings,
    })
}

/// Whether cuBLAS (`present`: it loads) has every entry point the backend calls; GEMM cases
/// fail with this sentence where it has not.
fn cublas_usable(present: bool) -> CudaResult<()> {
    if !present {
        return Err(CudaError::Library(probe::no_cublas_message()));
    }
    let missing = probe::missing_cublas_symbols()?;
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CudaError::Library(probe::missing_symbols_message(
            "cuBLAS (libcublas.so)",
            &missing,
            "install the cuBLAS of CUDA 11.4 or newer, or put its directory first in LD_LIBRARY_PATH",
        )))
    }
}

/// One GPU: its context, stream, timing events and cuBLAS handle (or why it has none).
fn open_device(ordinal: u32, info: &GpuInfo, cublas_check: &CudaResult<()>) -> CudaResult<Device> {
    let ctx = CudaContext::new(ordinal as usize).map_err(CudaError::driver)?;
    // SAFETY: called before anything is allocated through cudarc on this context (the
    // backend's buffers are its own cuMemAlloc memory anyway). Without tracking, the
    // backend orders work itself: everything on a device runs on its one stream,
    // except overlapped batch steps, whose second stream is ordered by explicit
    // events and synchronised before the step returns.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().map_err(CudaError::driver)?;
    let marks = events::timing_events(&ctx, events::SLOTS)?;
    let gate = ctx.new_event(None).map_err(CudaError::driver)?;
    // One small allocation proves the device can hold buffers (it fails here, with
    // the fix, rather than in the first case when the GPU is full or unusable).
    DeviceMem::new(&ctx, 1).map_err(|e| CudaError::NoDeviceMemory(Box::new(e)))?;
    let blas = match cublas_check {
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
}

/// One thread drives every GPU of the rank: binds it to the devices' CPUs (their union),
/// with a warning where that fails.
fn bind_driving_thread(plan: &DevicePlan, warnings: &mut Vec<String>) {
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
}

/// The timer and its resolution, measured on the first GPU's stream where it can be.
fn timer_info(stream: &Arc<CudaStream>) -> CudaResult<TimerInfo> {
    let measured = guarded("timing events", || events::measure_resolution_s(stream, 50))?;
    Ok(TimerInfo {
        source: match measured {
            Some(_) => "cuEventElapsedTime: CUDA events on each GPU's stream, longest over the rank's GPUs (resolution: smallest non-zero gap between back-to-back events, measured)".into(),
            None => "cuEventElapsedTime: CUDA events on each GPU's stream, longest over the rank's GPUs (resolution: CUDA's documented ~0.5 µs; no non-zero gap was observed)".into(),
        },
        resolution_s: measured.unwrap_or(events::DOCUMENTED_RESOLUTION_S),
    })
}

/// No GPU may be driven twice: every rank's host and GPU UUIDs go to the root, which
/// refuses a launch that shares one (exit 2, its sentence printed by the root).
fn refuse_shared_gpus<C: HostComm>(comm: &C, devices: &[Device]) -> BackendResult<()> {
    let uuids: Vec<String> = devices.iter().map(|d| d.info.uuid.clone()).collect();
    ccl::sharing::refuse_shared(comm, &uuids, &NCCL_SHARING).map_err(BackendError::Unavailable)
}

/// The sentence refusing `algo` where the loaded NCCL is older than the algorithm; `None`
/// where it is new enough, or its version cannot be read (communicator set-up then says why).
fn forced_algo_refusal(algo: crate::params::NcclAlgo) -> Option<String> {
    guarded("NCCL", nccl::check_library).ok()?;
    let text = guarded("ncclGetVersion", nccl::version).ok()?;
    let code = crate::params::nccl::version_code(&text)?;
    crate::params::nccl::version_refusal(algo, code, &text)
}

/// TF32 GEMMs only where every rank asks for them (a warning where only some do).
fn agree_tf32<C: HostComm>(comm: &C, warnings: &mut Vec<String>) -> bool {
    let tf32_here = cublas::tf32_requested(std::env::var(cublas::TF32_ENV).ok().as_deref());
    let tf32 = comm.all_ok(tf32_here);
    if tf32_here && !tf32 {
        warnings.push(format!(
            "{} is set on some ranks only: f32 GEMMs use FP32 everywhere",
            cublas::TF32_ENV
        ));
    }
    tf32
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
        // Before the libraries load: NCCL reads its logging variables at its first message.
        let nccl_log = crate::backend::capture::prepare();
        let g = plan.devices_per_rank.max(1);
        let local = open_local(&plan);
        let mine = local.as_ref().err().map_or(0, class_of);
        let worst = comm.max_f64(f64::from(mine)) as u8;
        let local = match local {
            Err(e) => return Err(e),
            Ok(_) if worst > 0 => return Err(silent(worst)),
            Ok(l) => l,
        };

        refuse_shared_gpus(comm, &local.devices)?;
        let mut warnings = local.warnings;
        let tf32 = agree_tf32(comm, &mut warnings);
        let nccl_all = comm.all_ok(local.nccl_here);
        // A forced algorithm this NCCL does not know (older NCCLs ignore it silently):
        // refused before any communicator forms (exit 2), by every rank together.
        let refusal = nccl_all
            .then(|| plan.nccl_algo.and_then(forced_algo_refusal))
            .flatten();
        if !comm.all_ok(refusal.is_none()) {
            return Err(refusal.map_or_else(|| silent(2), BackendError::Unavailable));
        }
        let devices = local.devices;
        let comms = if nccl_all {
            // NCCL is there but cannot start (too old, incomplete, or its communicators fail
            // to form): the launch fails with every failing rank's reason (exit 4), since
            // this machine's collectives would fail or hang.
            match Self::init_nccl(comm, &devices, rank, size, g) {
                Ok(c) => Ok(c),
                Err(e) if comm.is_root() => return Err(e.into()),
                Err(_) => return Err(silent(1)),
            }
        } else {
            let e = if local.nccl_here {
                format!("on another rank: {}", probe::no_nccl_message())
            } else {
                probe::no_nccl_message()
            };
            warnings.push(format!("collectives will fail: {e}"));
            Err(CudaError::Library(e))
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
        let uuids: Vec<String> = devices.iter().map(|d| d.info.uuid.clone()).collect();
        let (telemetry, why_not) = telemetry::start(move || NvmlProbe::open(uuids));
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
            ddp: Default::default(),
            nccl_log,
        })
    }

    /// One communicator per local GPU; every rank learns every failing rank's reason.
    fn init_nccl<C: HostComm>(
        comm: &C,
        devices: &[Device],
        rank: u32,
        size: u32,
        g: usize,
    ) -> CudaResult<Comms> {
        let ready = guarded("NCCL", nccl::check_library);
        agree_failures(comm, ready, "NCCL cannot be used")?;
        let mut payload = Vec::new();
        if comm.is_root() {
            payload = match guarded("ncclGetUniqueId", nccl::unique_id) {
                Ok(id) => [vec![0u8], id].concat(),
                Err(e) => [vec![1u8], e.to_string().into_bytes()].concat(),
            };
        }
        comm.broadcast_bytes(&mut payload);
        let local = match payload.split_first() {
            Some((0, id)) => guarded("ncclCommInitRank", || {
                Comms::init(id, size * g as u32, rank * g as u32, g, |i| {
                    devices[i].ctx.bind_to_thread().map_err(CudaError::driver)
                })
            }),
            Some((_, msg)) => Err(CudaError::Ranks {
                what: "ncclGetUniqueId failed on rank 0",
                reasons: String::from_utf8_lossy(msg).into_owned(),
            }),
            None => Err(CudaError::Check("rank 0 sent no NCCL unique id".into())),
        };
        // On failure `local` drops inside, aborting any communicator this rank created.
        agree_failures(
            comm,
            local,
            "NCCL (libnccl.so) could not create its communicators (rerun with NCCL_DEBUG=INFO to see why; NCCL_SOCKET_IFNAME picks its network)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::comm::SoloComm;
    use crate::params::BackendKind;

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
        assert!(matches!(
            silent(1),
            BackendError::Device(DeviceError::OtherRank)
        ));
        assert!(silent(1).to_string().is_empty());
        assert_eq!(class_of(&BackendError::Unavailable("x".into())), 2);
        assert_eq!(class_of(&BackendError::check("x")), 1);
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
