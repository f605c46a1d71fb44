//! Setting the backend up: every rank opens the HIP runtime, RCCL (and rocBLAS where the
//! launch runs a GEMM) and its GPUs, the ranks agree that all could, then the RCCL communicators are created (unique id from rank 0, broadcast
//! over MPI). A missing, incomplete or too old library, or no device, is one sentence (exit 2);
//! a communicator that cannot form fails the launch with RCCL's reason (exit 4). Never a panic.

use super::backend::{BlasHandle, Comms, Device, RocmBackend, STANDIN_DEVICE_NAME, STANDIN_LABEL};
use super::hip::{self, Hip};
use super::kfd;
use super::rccl::Rccl;
use super::rocblas::Rocblas;
use super::smi::SmiProbe;
use super::{RocmError, RocmResult};
use crate::backend::ccl;
use crate::backend::marks::{Ring, SLOTS};
use crate::backend::ordinals;
use crate::backend::telemetry;
use crate::backend::{BackendError, BackendResult, DeviceError, DevicePlan};
use crate::comm::HostComm;
use crate::results::schema::TimerInfo;
use crate::topology::affinity;
use std::sync::Arc;

/// What one rank opened on its own, before any agreement.
struct Local {
    hip: Arc<Hip>,
    rccl: Arc<Rccl>,
    rocblas: Option<Arc<Rocblas>>,
    devices: Vec<Device>,
    timer: TimerInfo,
    warnings: Vec<String>,
    /// Why the HIP ordinals are not the node-local GPU numbers, when they are not.
    ordinal_note: Option<String>,
}

/// The error a healthy rank returns when another failed: the failing rank's own sentence is
/// the one reported (empty messages are left out when ranks agree on a failure).
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

/// Opens the libraries (every entry point resolved, versions checked) and this rank's GPUs.
fn open_local(plan: &DevicePlan) -> BackendResult<Local> {
    if plan.local_indices.len() != plan.devices_per_rank.max(1) {
        return Err(BackendError::check(format!(
            "the device plan lists {} for {} per rank",
            crate::units::count(plan.local_indices.len(), "GPU", "GPUs"),
            crate::units::count(plan.devices_per_rank, "device", "devices")
        )));
    }
    let hip = Arc::new(Hip::open()?);
    let rccl = Arc::new(Rccl::open()?);
    // Only a launch with a GEMM needs rocBLAS: a collectives-only node may lack it.
    let rocblas = match plan.gemm {
        Some(_) => Some(Arc::new(Rocblas::open()?)),
        None => None,
    };
    let visible = hip.device_count()?;
    if visible == 0 {
        return Err(RocmError::NoDevice("hipGetDeviceCount: 0 devices".into()).into());
    }
    let runtime = ordinals::Runtime {
        name: "HIP",
        ccl: "RCCL",
        visible_env: visible_devices_env(),
    };
    let choice = ordinals::choose_ordinals(&plan.local_indices, visible as u32, &runtime)?;
    let mut devices = Vec::new();
    for &ordinal in &choice.ordinals {
        let d = open_device(&hip, rocblas.as_ref(), ordinal as i32)
            .map_err(|e| e.context(format!("could not open HIP device {ordinal}")))?;
        devices.push(d);
    }
    let mut warnings = Vec::new();
    bind_driving_thread(plan, &mut warnings);
    let timer = timer_info(&hip, &devices[0])?;
    Ok(Local {
        hip,
        rccl,
        rocblas,
        devices,
        timer,
        warnings,
        ordinal_note: choice.note,
    })
}

/// The variables that hide GCDs from HIP, as this process sees them (ROCR's applies first,
/// then HIP's, or CUDA's, which HIP also honours, renumbers what is left); CUDA's only when set.
fn visible_devices_env() -> String {
    let mut said: Vec<String> = ["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"]
        .iter()
        .map(|k| match std::env::var(k) {
            Ok(v) => format!("{k}={v:?}"),
            Err(_) => format!("{k} unset"),
        })
        .collect();
    if let Ok(v) = std::env::var("CUDA_VISIBLE_DEVICES") {
        said.push(format!("CUDA_VISIBLE_DEVICES={v:?}"));
    }
    said.join(", ")
}

/// One GPU: its stream, timing events, its rocBLAS handle where the launch runs a GEMM, and a
/// small allocation that proves it holds buffers.
fn open_device(hip: &Arc<Hip>, rocblas: Option<&Arc<Rocblas>>, ordinal: i32) -> RocmResult<Device> {
    hip.set_device(ordinal)?;
    let pci_bus_id = hip.pci_bus_id(ordinal)?;
    let arch = kfd::Bdf::parse(&pci_bus_id)
        .and_then(|b| kfd::architecture(std::path::Path::new(kfd::TOPOLOGY), &b));
    let mut d = Device {
        ordinal,
        name: hip.device_name(ordinal)?,
        arch,
        pci_bus_id,
        memory_bytes: hip.total_mem_bytes(ordinal)?,
        l2_cache_bytes: hip.l2_cache_bytes(ordinal)?,
        stream: std::ptr::null_mut(),
        marks: Vec::new(),
        order_events: Vec::new(),
        blas: None,
        hip: hip.clone(),
    };
    // Created into `d` one by one, so a failure part way releases what exists (its drop).
    d.stream = hip.stream_create()?;
    for _ in 0..SLOTS {
        let e = hip.event_create()?;
        d.marks.push(e);
    }
    if let Some(lib) = rocblas {
        d.blas = Some(BlasHandle {
            handle: lib.handle(d.stream)?,
            lib: lib.clone(),
        });
    }
    let p = hip.malloc(64)?;
    // SAFETY: 64 bytes of the allocation just made on the current device.
    let set = unsafe { hip.memset(p, 0, 64) };
    // SAFETY: from hipMalloc above; hipMemset is synchronous, so nothing uses it any more.
    unsafe { hip.free(p) }?;
    set?;
    Ok(d)
}

/// One thread drives every GPU of the rank: binds it to the devices' CPUs (their union).
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

/// The timer and its resolution: the smallest non-zero gap between two events recorded back
/// to back on the first GPU's idle stream, over 50 pairs.
fn timer_info(hip: &Hip, d: &Device) -> RocmResult<TimerInfo> {
    hip.set_device(d.ordinal)?;
    let mut best = f64::INFINITY;
    for _ in 0..50 {
        hip.event_record(d.marks[0], d.stream)?;
        hip.event_record(d.marks[1], d.stream)?;
        let s = hip.elapsed_s(d.marks[0], d.marks[1])?;
        if s > 0.0 {
            best = best.min(s);
        }
    }
    Ok(TimerInfo {
        source: if best.is_finite() {
            "hipEventElapsedTime: HIP events on each GPU's stream, longest over the rank's GPUs (resolution: smallest non-zero gap between back-to-back events, measured)".into()
        } else {
            "hipEventElapsedTime: HIP events on each GPU's stream, longest over the rank's GPUs (resolution: no non-zero gap was observed; 1 µs assumed)".into()
        },
        resolution_s: if best.is_finite() { best } else { 1e-6 },
    })
}

/// `local` where every rank succeeded; otherwise, on every rank, `{what}: rank r: reason; …`.
fn agree_failures<C: HostComm, T>(
    comm: &C,
    local: RocmResult<T>,
    what: &'static str,
) -> RocmResult<T> {
    let all_ok = comm.all_ok(local.is_ok());
    let msg = match local {
        Ok(v) if all_ok => return Ok(v),
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    };
    let reasons = crate::comm::every_ranks_reasons(comm, &msg);
    Err(RocmError::Ranks { what, reasons })
}

/// How RCCL's one-device-per-rank rule is said: GCDs by PCI address (HIP shares no UUID
/// with the system tools; the address is what `rocm-smi` and the launcher's binding show).
const RCCL_SHARING: ccl::sharing::Rule = ccl::sharing::Rule {
    device: "GCD",
    library: "RCCL",
    visible_env: "ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES",
};

/// No GCD may be driven twice (two ranks on one GCD, same host and PCI address): refused on
/// every rank (exit 2), the root printing the sentence. Collective.
fn refuse_shared_gcds<C: HostComm>(comm: &C, devices: &[Device]) -> BackendResult<()> {
    let ids: Vec<String> = devices.iter().map(|d| d.pci_bus_id.clone()).collect();
    ccl::sharing::refuse_shared(comm, &ids, &RCCL_SHARING).map_err(BackendError::Unavailable)
}

/// One communicator per local GPU, created in one group (ranks `rank·g ..`).
fn init_rccl<C: HostComm>(
    comm: &C,
    hip: &Hip,
    rccl: &Arc<Rccl>,
    devices: &[Device],
    rank: u32,
    size: u32,
) -> RocmResult<Comms> {
    let g = devices.len() as u32;
    let mut payload = Vec::new();
    if comm.is_root() {
        payload = match rccl.unique_id() {
            Ok(id) => [vec![0u8], id].concat(),
            Err(e) => [vec![1u8], e.to_string().into_bytes()].concat(),
        };
    }
    comm.broadcast_bytes(&mut payload);
    let local = match payload.split_first() {
        Some((0, id)) => {
            let mut comms = Comms {
                comms: Vec::new(),
                rccl: rccl.clone(),
            };
            let mut first_err = rccl.group_start().err();
            if first_err.is_none() {
                for (i, d) in devices.iter().enumerate() {
                    // ncclCommInitRank takes the current device.
                    let r = hip
                        .set_device(d.ordinal)
                        .and_then(|()| rccl.comm_init_rank(id, size * g, rank * g + i as u32));
                    match r {
                        Ok(c) => comms.comms.push(c),
                        Err(e) => {
                            first_err = Some(e);
                            break;
                        }
                    }
                }
                // The group must be closed even after an error.
                if let Err(e) = rccl.group_end() {
                    first_err.get_or_insert(e);
                }
            }
            match first_err {
                // `comms` drops here and aborts whatever was created.
                Some(e) => Err(e),
                None => Ok(comms),
            }
        }
        Some((_, msg)) => Err(RocmError::Ranks {
            what: "ncclGetUniqueId failed on rank 0",
            reasons: String::from_utf8_lossy(msg).into_owned(),
        }),
        None => Err(RocmError::Check("rank 0 sent no RCCL unique id".into())),
    };
    agree_failures(
        comm,
        local,
        "RCCL (librccl.so) could not create its communicators (rerun with NCCL_DEBUG=INFO to see why; NCCL_SOCKET_IFNAME picks its network)",
    )
}

impl RocmBackend {
    /// Sets up the backend on `world` (see the module doc). Collective: every rank calls it.
    pub fn new(
        world: &mpi::topology::SimpleCommunicator,
        plan: DevicePlan,
    ) -> BackendResult<RocmBackend> {
        let comm = crate::comm::mpi::MpiComm::new(world);
        Self::setup(&comm, plan)
    }

    /// [`RocmBackend::new`] over any control plane.
    pub fn setup<C: HostComm>(comm: &C, plan: DevicePlan) -> BackendResult<RocmBackend> {
        let (rank, size) = (comm.rank(), comm.size());
        // Before RCCL loads: it reads NCCL's logging variables at its first message.
        let nccl_log = crate::backend::capture::prepare();
        let local = open_local(&plan);
        let mine = local.as_ref().err().map_or(0, class_of);
        let worst = comm.max_f64(f64::from(mine)) as u8;
        let local = match local {
            Err(e) => return Err(e),
            Ok(_) if worst > 0 => return Err(silent(worst)),
            Ok(l) => l,
        };
        // Before RCCL: two ranks on one GCD would hang or fail inside ncclCommInitRank.
        refuse_shared_gcds(comm, &local.devices)?;
        let Local {
            hip,
            rccl,
            rocblas,
            devices,
            timer,
            mut warnings,
            ordinal_note,
        } = local;
        let comms = match init_rccl(comm, &hip, &rccl, &devices, rank, size) {
            Ok(c) => c,
            Err(e) if comm.is_root() => return Err(BackendError::Device(DeviceError::Rocm(e))),
            Err(_) => return Err(silent(1)),
        };
        let hip_version = hip::format_version(hip.version()?);
        let rccl_version = ccl::format_version(rccl.version()?);
        let rocblas_version = rocblas.as_ref().map(|b| b.version()).transpose()?;
        let addresses: Vec<String> = devices.iter().map(|d| d.pci_bus_id.clone()).collect();
        let (telemetry, why_not) = telemetry::start(move || SmiProbe::open(addresses));
        warnings.extend(why_not);
        let standin = devices.iter().any(|d| d.name == STANDIN_DEVICE_NAME);
        if standin {
            warnings.insert(0, STANDIN_LABEL.to_string());
        }
        Ok(RocmBackend {
            hip,
            rccl,
            comms: Ok(comms),
            devices,
            rank,
            size,
            plan,
            hip_version,
            rccl_version,
            rocblas_version,
            ring: Ring::new(SLOTS),
            timer,
            warnings,
            standin,
            ddp: Default::default(),
            nccl_log,
            telemetry,
            ordinal_note,
        })
    }
}
