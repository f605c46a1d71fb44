//! Collective bandwidth inside one process, through the backends' `collective` (the code
//! `scalebench run` times). Three settings, each skipped with a printed reason where impossible:
//!
//! - `collectives_mpi_singleton`: MPI with one rank, on host buffers. Honest but degenerate:
//!   with one rank MPI only copies the send buffer into the receive buffer, so this is MPI's
//!   local copy path and call overhead, not communication (broadcast, which moves nothing on
//!   one rank, is skipped).
//! - `collectives_cpu_hybrid_2dev`: the CPU backend in hybrid mode, one rank driving 2 worker
//!   threads as 2 devices: the hierarchical collective's shared-memory phases run for real
//!   (the workers combine in parallel, each on its slice, then copy the result out); the MPI
//!   step among node leaders has one rank here.
//! - `collectives_nccl_<G>gpu` (`--features cuda` on a node with ≥ 2 GPUs): one process
//!   driving every local GPU through NCCL, as nccl-tests' `-g G`.
//!
//! Sizes are nccl-tests' S (`workload::collective::counts`: the buffer for allreduce,
//! broadcast and reduce; the total output of allgather; the total input of reduce_scatter;
//! each device's send total for alltoall), f32, sum. Throughput is `BytesDecimal(S)`, so
//! criterion's rate is algbw in GB/s (1e9 bytes); busbw = algbw × the factor printed per
//! group. Timing is nccl-tests' pipelined mode: marks around back-to-back calls, one device
//! synchronisation. Every (collective, size) is first run once through the harness's own case
//! runner with exact validation, so a fast wrong collective fails the bench.
//!
//! Runs as one process (MPI singleton); under `mpirun` with more than one rank it measures
//! nothing and says so (criterion picks iteration counts per process, and ranks that disagree
//! on counts deadlock in blocking collectives). Use `scalebench run` for multi-rank numbers.
//!
//! Run: `cargo bench --bench collectives` (`-- --quick` for a shorter run).

use criterion::{BenchmarkId, Criterion, Throughput};
use scalebench::backend::cpu::CpuBackend;
use scalebench::backend::{Backend, BackendError, CollectiveCall, DevicePlan, HostBuf};
use scalebench::comm::mpi::MpiComm;
use scalebench::measure::IterPolicy;
use scalebench::params::{BackendKind, CaseParams, Dtype, ReduceOp, Topology, Workload};
use scalebench::units::format_bytes;
use scalebench::workload::collective::{counts, CountError};
use scalebench::workload::pattern::Pattern;
use scalebench::workload::{run_case, CaseError, RunSettings};
use std::time::Duration;

/// nccl-tests' S: small (latency-bound) to large (bandwidth-bound).
const SIZES_BYTES: [u64; 4] = [4 << 10, 64 << 10, 1 << 20, 16 << 20];
const DTYPE: Dtype = Dtype::F32;
const OP: ReduceOp = ReduceOp::Sum;
const WORKLOADS: [Workload; 6] = [
    Workload::Allreduce,
    Workload::Allgather,
    Workload::ReduceScatter,
    Workload::Alltoall,
    Workload::Broadcast,
    Workload::Reduce,
];

/// One setting: a backend, how it is described, and what it cannot measure honestly.
struct Setting<'a> {
    group: String,
    topology: Topology,
    /// Why a collective is not benched here, if it is not.
    skip: &'a dyn Fn(Workload) -> Option<&'static str>,
}

/// The case `scalebench run` would measure, for `supports` and the validation run.
fn params(
    kind: BackendKind,
    topology: Topology,
    devices: u32,
    workload: Workload,
    bytes: u64,
    in_place: bool,
) -> CaseParams {
    CaseParams {
        backend: kind,
        topology,
        dtype: DTYPE,
        op: workload.has_op().then_some(OP),
        root: workload.has_root().then_some(0),
        in_place: Some(in_place),
        requested_bytes: Some(bytes),
        ..CaseParams::new(workload, 1, devices)
    }
}

/// Buffers of one timed collective (`send` is empty in place).
struct Prepared<Buf> {
    call: CollectiveCall,
    send: Vec<Buf>,
    recv: Vec<Buf>,
}

/// Validates the case through the harness's runner (one timed iteration, one exact check),
/// then sets up the timed buffers: each device's send buffer holds its validation inputs.
fn prepare<B: Backend>(
    backend: &mut B,
    comm: &MpiComm,
    case: &CaseParams,
    call: CollectiveCall,
) -> Result<Prepared<B::Buf>, String> {
    let settings = RunSettings {
        policy: IterPolicy {
            iters: Some(1),
            warmup: Some(0),
            time_budget_s: 0.0,
            batches: Some(1),
        },
        check_iters: 1,
        gemm: Default::default(),
        buffer_offset: Default::default(),
        thread_level: None,
        ceilings: false,
    };
    match run_case(backend, comm, case, &settings) {
        Ok(m) if m.wrong == 0 => {}
        Ok(m) => {
            return Err(format!(
                "{} element(s) differ from the exact result",
                m.wrong
            ))
        }
        Err(CaseError::Skipped(why) | CaseError::Failed(why)) => return Err(why),
    }
    let pattern = Pattern::new(DTYPE, call.op, call.devices);
    let buffers = || -> Result<Prepared<B::Buf>, BackendError> {
        let (mut send, mut recv) = (Vec::new(), Vec::new());
        for dev in 0..backend.local_devices() {
            let d = backend.device_index(dev);
            // In-place allgather reads its input at its own block (the backend convention).
            let at = if call.in_place && call.workload == Workload::Allgather {
                d as usize * call.send_count
            } else {
                0
            };
            let input = |len: usize| -> Result<HostBuf, BackendError> {
                let mut h = HostBuf::zeros(DTYPE, len)?;
                pattern.fill_inputs(&mut h, at, call.send_count, d, 0);
                Ok(h)
            };
            if call.in_place {
                let h = input(call.in_place_count())?;
                let mut r = backend.alloc(dev, DTYPE, h.len())?;
                backend.upload(dev, &mut r, &h)?;
                recv.push(r);
            } else {
                let h = input(call.send_count)?;
                let mut s = backend.alloc(dev, DTYPE, h.len())?;
                backend.upload(dev, &mut s, &h)?;
                send.push(s);
                let zeros = HostBuf::zeros(DTYPE, call.recv_count)?;
                let mut r = backend.alloc(dev, DTYPE, zeros.len())?;
                backend.upload(dev, &mut r, &zeros)?;
                recv.push(r);
            }
        }
        backend.synchronize()?;
        Ok(Prepared { call, send, recv })
    };
    buffers().map_err(|e| e.to_string())
}

/// Benches every collective and size of one setting, in group `setting.group`, ids
/// `<collective>[_in_place]/<size>`. Validation and buffers are set up the first time
/// criterion runs a bench, so a filter sets up only what it runs.
fn bench_setting<B: Backend>(
    c: &mut Criterion,
    backend: &mut B,
    comm: &MpiComm,
    setting: &Setting<'_>,
) {
    let devices = backend.total_devices();
    let mut g = c.benchmark_group(&setting.group);
    for workload in WORKLOADS {
        let factor = workload.busbw_factor(devices).unwrap_or(1.0);
        if let Some(why) = (setting.skip)(workload) {
            println!("{} {workload}: skipped: {why}", setting.group);
            continue;
        }
        let note = if factor == 0.0 {
            " (one device: nothing crosses a link)"
        } else {
            ""
        };
        println!(
            "{} {workload}: {devices} device(s), busbw = algbw × {factor}{note}",
            setting.group
        );
        for bytes in SIZES_BYTES {
            let size = format_bytes(bytes);
            // Out of place where the backend has it (MPI_Bcast has only an in-place form).
            let kind = backend.kind();
            let mut case = params(kind, setting.topology, devices, workload, bytes, false);
            if backend.supports(&case).is_err() {
                case.in_place = Some(true);
            }
            if let Err(why) = backend.supports(&case) {
                println!("{} {workload} {size}: skipped: {why}", setting.group);
                continue;
            }
            let cnt = match counts(workload, bytes, DTYPE, devices) {
                Ok(cnt) => cnt,
                Err(e @ CountError::TooSmall { .. }) => {
                    println!("{} {workload} {size}: skipped: {e}", setting.group);
                    continue;
                }
                Err(e) => panic!("{} {workload} {size}: {e}", setting.group),
            };
            let call = CollectiveCall {
                workload,
                dtype: DTYPE,
                op: case.op,
                root: case.root,
                send_count: cnt.send_count as usize,
                recv_count: cnt.recv_count as usize,
                in_place: case.in_place == Some(true),
                devices,
            };
            let name = if call.in_place {
                format!("{workload}_in_place")
            } else {
                workload.to_string()
            };
            // B/s = algbw (S / time, decimal units)
            g.throughput(Throughput::BytesDecimal(cnt.bytes));
            let mut prepared: Option<Prepared<B::Buf>> = None;
            let what = format!("{} {name} {size}", setting.group);
            g.bench_function(BenchmarkId::new(name.as_str(), &size), |bench| {
                let p = prepared.get_or_insert_with(|| {
                    prepare(backend, comm, &case, call.clone())
                        .unwrap_or_else(|e| panic!("{what}: {e}"))
                });
                bench.iter_custom(|iters| {
                    let mut run = || -> Result<f64, BackendError> {
                        let t0 = backend.mark()?;
                        for _ in 0..iters {
                            backend.collective(&p.call, &p.send, &mut p.recv)?;
                        }
                        let t1 = backend.mark()?;
                        backend.synchronize()?;
                        backend.elapsed_s(t0, t1)
                    };
                    Duration::from_secs_f64(run().unwrap_or_else(|e| panic!("{what}: {e}")))
                })
            });
        }
    }
    g.finish();
}

fn singleton(c: &mut Criterion, world: &mpi::topology::SimpleCommunicator, comm: &MpiComm) {
    let plan = DevicePlan::unbound(1, 1);
    let mut backend = match CpuBackend::new(world, plan) {
        Ok(b) => b,
        Err(e) => {
            println!("collectives_mpi_singleton: skipped: {e}");
            return;
        }
    };
    let skip = |w: Workload| {
        (w == Workload::Broadcast)
            .then_some("MPI_Bcast on one rank moves no data (it has only an in-place form)")
    };
    let setting = Setting {
        group: "collectives_mpi_singleton".into(),
        topology: Topology::Pure,
        skip: &skip,
    };
    println!("{}: {}", setting.group, backend.info().detail);
    bench_setting(c, &mut backend, comm, &setting);
}

fn hybrid(c: &mut Criterion, world: &mpi::topology::SimpleCommunicator, comm: &MpiComm) {
    const DEVICES: usize = 2;
    let plan = DevicePlan::unbound(DEVICES, 1);
    let group = format!("collectives_cpu_hybrid_{DEVICES}dev");
    let mut backend = match CpuBackend::new(world, plan) {
        Ok(b) => b,
        Err(e) => {
            println!("{group}: skipped: {e}");
            return;
        }
    };
    let setting = Setting {
        group,
        topology: Topology::Hybrid,
        skip: &|_| None,
    };
    println!("{}: {}", setting.group, backend.info().detail);
    bench_setting(c, &mut backend, comm, &setting);
}

#[cfg(feature = "cuda")]
fn nccl(c: &mut Criterion, world: &mpi::topology::SimpleCommunicator, comm: &MpiComm) {
    use scalebench::backend::cuda::{probe, CudaBackend};
    // Probe before opening anything: no driver or no device is one sentence, never a panic.
    let gpus = match probe::device_count() {
        Ok(n) => n,
        Err(why) => {
            println!("CUDA bench skipped: {why}");
            return;
        }
    };
    if gpus < 2 {
        println!("CUDA bench skipped: {gpus} GPU visible; NCCL collectives among one process's GPUs need at least 2 ({})", probe::visible_devices_env());
        return;
    }
    let plan = DevicePlan::unbound(gpus as usize, 1);
    let mut backend = match CudaBackend::new(world, plan) {
        Ok(b) => b,
        Err(e) => {
            println!("CUDA bench skipped: {e}");
            return;
        }
    };
    let setting = Setting {
        group: format!("collectives_nccl_{gpus}gpu"),
        topology: Topology::Hybrid,
        skip: &|_| None,
    };
    println!("{}: {}", setting.group, backend.info().detail);
    bench_setting(c, &mut backend, comm, &setting);
}

#[cfg(not(feature = "cuda"))]
fn nccl(_c: &mut Criterion, _world: &mpi::topology::SimpleCommunicator, _comm: &MpiComm) {
    println!("CUDA bench skipped: built without the `cuda` feature (run `cargo bench --features cuda` on a GPU node)");
}

fn main() {
    use mpi::traits::Communicator;
    // Hybrid workers and GPU runtimes add threads; only the main thread calls MPI.
    let Some((universe, provided)) = mpi::initialize_with_threading(mpi::Threading::Funneled)
    else {
        eprintln!("collectives: MPI was already initialised in this process");
        std::process::exit(4);
    };
    let world = universe.world();
    if world.size() > 1 {
        if world.rank() == 0 {
            println!("collectives bench skipped: it runs as one process, not under mpirun with {} ranks (criterion picks iteration counts per process; for multi-rank bandwidth use `scalebench run`)", world.size());
        }
        return;
    }
    let comm = MpiComm::new(&world);
    println!("collectives: throughput in B/s is algbw = S / time (nccl-tests' S, GB = 1e9 bytes)");
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    singleton(&mut c, &world, &comm);
    use mpi::Threading;
    if !matches!(
        provided,
        Threading::Funneled | Threading::Serialized | Threading::Multiple
    ) {
        println!("collectives_cpu_hybrid and CUDA benches skipped: MPI provides {provided:?}, worker threads need MPI_THREAD_FUNNELED");
    } else {
        hybrid(&mut c, &world, &comm);
        nccl(&mut c, &world, &comm);
    }
    c.final_summary();
}
