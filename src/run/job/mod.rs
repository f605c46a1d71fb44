//! `scalebench run`: one MPI job that measures a list of cases.
//!
//! Every rank parses the same options (or reads the same launch plan) and expands the same
//! cases; rank 0 alone writes. Order of events: check options (no MPI yet, nothing written) →
//! MPI start → start the watchdog (see [`crate::run::watchdog`]) → check the world the launcher
//! gave us → agree on the output directory → assign nodes → compute each device's binding →
//! start the backend → open the output (rank 0) → record provenance → run cases, appending each
//! to the journal as it finishes → write `results.json` atomically. Every check that one rank
//! alone could fail is agreed by all ranks (one collective on the outcome) before anyone acts,
//! so no rank returns while the others wait for it.

mod device_plan;
mod executor;
mod host_ceilings;
mod keep;
mod net_ceilings;
mod provenance;
mod request;
#[cfg(test)]
mod tests;
mod world;

use self::device_plan::device_plan;
use self::executor::Job;
use self::keep::{keep_on_expiry, keep_start_up, Kept};
use self::request::{launch_shape, resolve, thread_level, Cases, Launch};
use self::world::{agree_env, agree_input, agree_layout, agree_out_dir};
// `links --backend cuda` starts its backend the way a run does.
pub(crate) use self::world::start_backend;
use crate::backend::cpu::CpuBackend;
use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::config::limits;
use crate::params::{BackendKind, ThreadLevel};
use crate::plan;
use crate::results::{new_run_id, now_unix_s};
use crate::run::error::{Result, RunError};
use crate::run::watchdog::Watchdog;
use crate::topology::identity;
use crate::workload::RunSettings;
use mpi::topology::SimpleCommunicator;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a finished job reports to `main`.
pub struct RunOutcome {
    pub exit_code: u8,
    /// Where results were written (rank 0 only).
    pub results: Option<PathBuf>,
}

/// The watchdog's limit per case (and for the start-up) when `--op-timeout` is not given:
/// generous, since the automatic iteration counts aim at `--time-budget` per case and warm-up,
/// calibration and checks add a few times that.
pub fn default_op_timeout_s(settings: &RunSettings) -> f64 {
    600.0 + 20.0 * settings.policy.time_budget_s
}

/// Runs `scalebench run` in this process (one MPI rank).
pub fn run(request: &super::Request, argv: &[String]) -> Result<RunOutcome> {
    let req = resolve(request)?;
    if let Some(t) = request.op_timeout_s {
        limits::check_seconds("--op-timeout", t, "600")?;
    }
    let op_timeout = Duration::from_secs_f64(
        request
            .op_timeout_s
            .unwrap_or_else(|| default_op_timeout_s(&req.settings)),
    );
    if req.backend == BackendKind::Cuda && !cfg!(feature = "cuda") {
        return Err(RunError::NoCuda);
    }
    if req.backend == BackendKind::Rocm && !cfg!(feature = "rocm") {
        return Err(RunError::NoRocm);
    }
    let level = thread_level(&req, request)?;
    set_nccl_env(&req);
    // Emulated nodes started by hand (no profile wrapper): their own shared-memory directory.
    crate::run::shm::apply_node_local_shm();
    let universe = match level {
        // Plain MPI_Init where no thread is added: see `plan::resolve_thread_level`.
        ThreadLevel::Single => mpi::initialize(),
        l => mpi::initialize_with_threading(match l {
            ThreadLevel::Funneled => mpi::Threading::Funneled,
            ThreadLevel::Serialized => mpi::Threading::Serialized,
            _ => mpi::Threading::Multiple,
        })
        .map(|(u, _)| u),
    };
    let Some(universe) = universe else {
        return Err(RunError::MpiInitialised);
    };
    let world = universe.world();
    let comm = MpiComm::new(&world);
    let rank = comm.rank();
    identity::set_mpi_rank(rank);
    let result = run_in_world(request, req, op_timeout, &world, &comm, argv, level);
    // Other launches on this host that look only at their case boundaries still see this one
    // (it may have started and ended inside one of their cases).
    crate::topology::load::record_ended();
    if let Err(e) = &result {
        // Said now, before MPI_Finalize: every rank passes its fence before exiting, so a rank
        // that exits first (and so makes mpirun end the job) cannot cut rank 0 off before it
        // has printed the sentence the ranks agreed on.
        if rank == 0 {
            crate::exit::report(e);
        }
    }
    result
}
/// The NCCL variables of the launch, set before MPI starts (once MPI's threads run, one may
/// call `getenv` while `setenv` moves the environment): the forced NCCL_ALGO / NCCL_PROTO
/// (NCCL reads them when a communicator forms; the provenance records them as the launch ran
/// with them), and the capture's logging variables.
fn set_nccl_env(req: &Launch) {
    if req.backend == BackendKind::Rocm {
        // RCCL reads NCCL's logging variables: the capture only (no forced algorithm on ROCm).
        #[cfg(feature = "rocm")]
        crate::backend::capture::prepare_env();
        return;
    }
    if req.backend != BackendKind::Cuda {
        return;
    }
    if let Some(a) = req.nccl_algo {
        std::env::set_var("NCCL_ALGO", a.env_name());
    }
    if let Some(p) = req.nccl_proto {
        std::env::set_var("NCCL_PROTO", p.env_name());
    }
    #[cfg(feature = "cuda")]
    crate::backend::capture::prepare_env();
}

/// The job once MPI is up: everything after `MPI_Init` and before `MPI_Finalize`.
fn run_in_world(
    request: &super::Request,
    req: Launch,
    op_timeout: Duration,
    world: &SimpleCommunicator,
    comm: &MpiComm,
    argv: &[String],
    thread_level: ThreadLevel,
) -> Result<RunOutcome> {
    let (rank, size) = (comm.rank(), comm.size());
    let keep = Arc::new(Mutex::new(Kept::default()));
    let env = identity::launcher_env(|k| std::env::var(k).ok());
    let watchdog = Watchdog::start(
        rank,
        size,
        env.source.is_some(),
        Some(keep_on_expiry(&keep)),
    );
    watchdog.arm(
        "the start-up (world check, node layout, backend)".into(),
        op_timeout,
    );

    // The world we got must be the world the launcher started; every rank checks, all agree
    // before anyone acts (a rank that returned alone would leave the others waiting forever).
    agree_env(comm, identity::check_world(&env, rank, size))?;

    // The watchdog of every rank reports in the output directory.
    let run_id = new_run_id(now_unix_s());
    // Held (rank 0) until the job returns: the results file is written before then.
    let (out_dir, _out_lock) = agree_out_dir(comm, request, &run_id)?;
    watchdog.set_report_dir(out_dir.join(".watchdog"));

    let layout = agree_layout(comm, &req, &env)?;
    let shape = launch_shape(&req, &layout, size)?;
    let cases = match &req.cases {
        Cases::Options(o) => plan::expand(o, shape)?,
        Cases::Plan(c) => c.clone(),
    };
    if comm.is_root() {
        keep_start_up(
            &keep, &out_dir, &run_id, argv, &layout, &req, shape, &env, &cases,
        );
    }
    let (mut device_plan, notes) = agree_input(comm, device_plan(&req, &shape, &layout, rank))?;
    // Load a BLAS only where a case multiplies (it starts threads; collectives need none).
    device_plan.gemm = cases
        .iter()
        .any(|c| !c.workload.is_collective())
        .then_some(req.settings.gemm);
    // The BLAS is opened with the loader's lock held: name it if that is where the job hangs.
    if let Some(lib) = device_plan
        .gemm
        .and_then(|_| std::env::var_os(crate::backend::gemm::blas::ENV))
    {
        watchdog.arm(
            format!(
                "the backend's start-up, which opens the BLAS library {}={} (dlopen: a FIFO, a hung mount or a slow library constructor blocks it)",
                crate::backend::gemm::blas::ENV,
                crate::units::shorten(&lib.to_string_lossy())
            ),
            op_timeout,
        );
    }

    let job = Job {
        argv,
        quiet: request.quiet,
        run_id,
        out_dir,
        watchdog: &watchdog,
        op_timeout,
        keep: &keep,
        settings: &req.settings,
        launch_id: req.launch_id.clone().unwrap_or_else(|| shape.id()),
        comm,
        env: &env,
        layout: &layout,
        shape,
        cases: &cases,
        notes,
        thread_level,
        network: &request.network,
    };
    match req.backend {
        BackendKind::Cpu => {
            let backend = CpuBackend::new(world, device_plan);
            job.execute(start_backend(comm, backend)?)
        }
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            let backend = crate::backend::cuda::CudaBackend::new(world, device_plan);
            job.execute(start_backend(comm, backend)?)
        }
        // Rejected at the top of `run` in a build without the `cuda` feature.
        #[cfg(not(feature = "cuda"))]
        BackendKind::Cuda => unreachable!("--backend cuda is rejected before MPI starts"),
        #[cfg(feature = "rocm")]
        BackendKind::Rocm => {
            let backend = crate::backend::rocm::RocmBackend::new(world, device_plan);
            job.execute(start_backend(comm, backend)?)
        }
        // Rejected at the top of `run` in a build without the `rocm` feature.
        #[cfg(not(feature = "rocm"))]
        BackendKind::Rocm => unreachable!("--backend rocm is rejected before MPI starts"),
    }
}
