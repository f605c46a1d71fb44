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

use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BackendError, DevicePlan};
use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::config::limits;
use crate::error::{Error, Result, EXIT_CASES_FAILED, EXIT_OK};
use crate::params::{
    BackendKind, Binding, CaseParams, LaunchShape, Placement, ThreadLevel, Topology,
};
use crate::plan::{self, LaunchPlan, RunOptions};
use crate::results::io::{
    new_results, write_results, Journal, JournalRecord, JOURNAL_FILE, RESULTS_FILE,
};
use crate::results::schema::CaseStatus;
use crate::results::schema::{
    CaseResult, DeviceTelemetry, GemmProvenance, HostInfo, LaunchRecord, LaunchStatus, Provenance,
    RankInfo, RunInfo,
};
use crate::results::{new_run_id, now_unix_s, representative};
use crate::run::console::{summary_line, TablePrinter};
use crate::run::watchdog::Watchdog;
use crate::topology::binding::{self, BindRequest, Reserved};
use crate::topology::identity::{self, LauncherEnv, NodeLayout, RankFacts};
use crate::topology::{self, affinity, load, transport};
use crate::workload::{self, RunSettings};
use mpi::topology::SimpleCommunicator;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a finished job reports to `main`.
pub struct RunOutcome {
    pub exit_code: u8,
    /// Where results were written (rank 0 only).
    pub results: Option<PathBuf>,
}

/// Where the cases come from, once read.
enum Cases {
    /// Expanded from `run`'s options once the launch shape is known.
    Options(Box<RunOptions>),
    /// Given by a launch plan.
    Plan(Vec<CaseParams>),
}

/// One launch, resolved from the options or a plan file.
struct Launch {
    backend: BackendKind,
    topology: Topology,
    nodes: Option<u32>,
    devices_per_node: Option<u32>,
    placement: Placement,
    binding: Binding,
    reserved: Reserved,
    emulate_nodes: bool,
    threads_per_device: u32,
    settings: RunSettings,
    cases: Cases,
    launch_id: Option<String>,
}

fn resolve(req: &super::Request) -> Result<Launch> {
    let reserved = |text: &str, option: &str| {
        Reserved::parse(text).map_err(|e| Error::Input(format!("{option}: {e}")))
    };
    let args = match &req.cases {
        super::Cases::Options(a) => a,
        super::Cases::PlanFile(path) => {
            let p = LaunchPlan::read(path)?;
            return Ok(Launch {
                backend: p.shape.backend,
                topology: p.shape.topology,
                nodes: Some(p.shape.nodes),
                devices_per_node: Some(p.shape.devices_per_node),
                placement: p.shape.placement,
                binding: p.shape.binding,
                reserved: reserved(
                    &p.reserved_cores,
                    &format!("{} reserved_cores", path.display()),
                )?,
                emulate_nodes: p.emulate_nodes,
                threads_per_device: p.threads_per_device,
                settings: p.settings,
                cases: Cases::Plan(p.cases),
                launch_id: Some(p.launch_id),
            });
        }
    };
    let opts = RunOptions::from_request(args)?;
    Ok(Launch {
        backend: args.backend,
        topology: args.topology,
        nodes: args.nodes,
        devices_per_node: args.devices_per_node,
        placement: args.placement,
        binding: args.binding,
        reserved: reserved(&args.reserved_cores, "--reserved-cores")?,
        emulate_nodes: args.emulate_nodes,
        threads_per_device: args.threads_per_device,
        settings: opts.settings.clone(),
        cases: Cases::Options(Box::new(opts)),
        launch_id: req.launch_id.clone(),
    })
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
        return Err(Error::Environment(
            "--backend cuda: this scalebench was built without CUDA support: rebuild with `cargo build --release --features cuda`".into(),
        ));
    }
    let level = thread_level(&req, request)?;
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
        return Err(Error::Runtime(
            "MPI was already initialised in this process".into(),
        ));
    };
    let world = universe.world();
    let comm = MpiComm::new(&world);
    let rank = comm.rank();
    identity::set_mpi_rank(rank);
    let result = run_in_world(request, req, op_timeout, &world, &comm, argv, level);
    if let Err(e) = &result {
        // Said now, before MPI_Finalize: every rank passes its fence before exiting, so a rank
        // that exits first (and so makes mpirun end the job) cannot cut rank 0 off before it
        // has printed the sentence the ranks agreed on.
        if rank == 0 {
            crate::error::report(e);
        }
    }
    result
}

/// The MPI thread level of this launch: the one its options or plan give (a sweep gives all
/// its launches one), else the lowest its cases need; below what they need is an input error.
fn thread_level(req: &Launch, request: &super::Request) -> Result<ThreadLevel> {
    let progress_thread = match &req.cases {
        Cases::Options(o) => o.uses_progress_thread(),
        Cases::Plan(c) => plan::cases_use_progress_thread(c),
    };
    let needed = plan::thread_level_needed(
        req.backend,
        req.topology,
        req.threads_per_device,
        progress_thread,
    );
    let option = match &request.cases {
        super::Cases::PlanFile(path) => format!("--plan {}: thread_level", path.display()),
        super::Cases::Options(_) => "--thread-level".to_string(),
    };
    plan::resolve_thread_level(req.settings.thread_level, needed, &option).map_err(Error::Input)
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
    let out_dir = agree_out_dir(comm, request, &run_id)?;
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
    }
}

/// Rank 0 names the output directory (a default one holds its clock's time, in `run_id`)
/// and tells every rank.
fn agree_out_dir(comm: &MpiComm, request: &super::Request, run_id: &str) -> Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut out_bytes = if comm.is_root() {
        let dir = request
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("results").join(run_id));
        dir.as_os_str().as_bytes().to_vec()
    } else {
        Vec::new()
    };
    comm.broadcast_bytes(&mut out_bytes);
    let out_dir = PathBuf::from(std::ffi::OsStr::from_bytes(&out_bytes));
    if comm.is_root() {
        // A file where the directory should be is the user's mistake (exit 2), not a crash.
        if out_dir.exists() && !out_dir.is_dir() {
            let msg = format!("--out {}: exists and is not a directory: give a directory (it is created if missing)", out_dir.display());
            let _ = agree_input(comm, Err::<(), _>(msg.clone()));
            return Err(Error::Input(msg));
        }
    }
    agree_input(comm, Ok::<(), std::convert::Infallible>(()))?;
    Ok(out_dir)
}

/// Makes every rank agree on a per-rank environment check (exit 2 everywhere, the failing
/// ranks' messages printed by rank 0).
fn agree_env<E: std::fmt::Display>(
    comm: &MpiComm,
    local: std::result::Result<(), E>,
) -> Result<()> {
    workload::agree(
        comm,
        local.map_err(|e| BackendError::Unsupported(e.to_string())),
    )
    .map_err(|e| match e {
        workload::CaseError::Failed(m) | workload::CaseError::Skipped(m) => Error::Environment(m),
    })
}

/// What has finished, for the watchdog to keep if the job hangs: every rank knows the paths
/// and the current case; rank 0 holds the rest (another rank that takes the lead reads it
/// back from the journal).
#[derive(Default)]
struct Kept {
    results_path: Option<PathBuf>,
    journal_path: Option<PathBuf>,
    run: Option<RunInfo>,
    launch: Option<LaunchRecord>,
    cases: Vec<CaseResult>,
    /// The case running now: its parameters, start time, devices and ranks.
    current: Option<(CaseParams, f64, u32, u32)>,
    /// The launch's cases while it is still starting (rank 0): a watchdog ending the start-up
    /// records them as not measured, so results.json says what the job was for.
    unstarted: Vec<CaseParams>,
}

/// Rank 0, once its cases are known: what the watchdog keeps if the rest of the start-up (the
/// device plan, the backend, a BLAS's `dlopen`) never finishes — the run, the launch without
/// its provenance (not gathered yet) and the planned cases. No journal is opened for it.
#[allow(clippy::too_many_arguments)]
fn keep_start_up(
    keep: &Mutex<Kept>,
    out_dir: &std::path::Path,
    run_id: &str,
    argv: &[String],
    layout: &NodeLayout,
    req: &Launch,
    shape: LaunchShape,
    env: &LauncherEnv,
    cases: &[CaseParams],
) {
    let started = now_unix_s();
    let mut k = lock_kept(keep);
    k.results_path = Some(out_dir.join(RESULTS_FILE));
    k.run = Some(RunInfo {
        run_id: run_id.to_string(),
        started_unix_s: started,
        written_unix_s: started,
        command_line: argv.to_vec(),
        emulated_nodes: layout.emulated,
        labels: Default::default(),
    });
    k.launch = Some(LaunchRecord::starting(
        req.launch_id.clone().unwrap_or_else(|| shape.id()),
        shape,
        LaunchStatus::Incomplete,
        env.source.map_or("direct".to_string(), |s| s.to_string()),
        argv.to_vec(),
        started,
    ));
    k.unstarted = cases.to_vec();
}

fn lock_kept(k: &Mutex<Kept>) -> std::sync::MutexGuard<'_, Kept> {
    k.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Rank 0's last act when the watchdog fires: the stuck case recorded as `timeout` with the
/// diagnosis, the launch as failed, results.json written with every finished case.
fn keep_on_expiry(keep: &Arc<Mutex<Kept>>) -> crate::run::watchdog::OnExpiry {
    let keep = Arc::clone(keep);
    Box::new(move |what: &str, diagnosis: &str| {
        let k = lock_kept(&keep);
        let path = k.results_path.clone()?;
        let (run, mut launch, mut cases) = match (&k.run, &k.launch) {
            (Some(r), Some(l)) => (r.clone(), l.clone(), k.cases.clone()),
            _ => {
                let j = crate::results::io::read_journal(k.journal_path.as_deref()?).ok()?;
                (j.run?, j.launches.into_iter().last()?, j.cases)
            }
        };
        let now = now_unix_s();
        let during_start_up = !k.unstarted.is_empty();
        for params in &k.unstarted {
            let mut rec = crate::run::record(
                params,
                &launch.launch_id,
                now,
                now,
                params.devices(),
                params.ranks(),
                Err(workload::CaseError::Failed(format!(
                    "not measured: the watchdog ended the job during {what}: {diagnosis}"
                ))),
            );
            rec.status = CaseStatus::Timeout;
            cases.push(rec);
        }
        let mut journal = k
            .journal_path
            .as_deref()
            .and_then(|p| Journal::open(p).ok());
        if let Some((params, t0, devices, ranks)) = &k.current {
            let mut rec = crate::run::record(
                params,
                &launch.launch_id,
                *t0,
                now,
                *devices,
                *ranks,
                Err(workload::CaseError::Failed(format!(
                    "the watchdog ended the job: {what} did not finish in time: {diagnosis}"
                ))),
            );
            rec.status = CaseStatus::Timeout;
            if let Some(j) = &mut journal {
                let _ = j.append(&JournalRecord::Case(Box::new(rec.clone())));
            }
            cases.push(rec);
        }
        launch.status = LaunchStatus::Failed;
        launch.finished_unix_s = Some(now);
        launch.wall_s = Some(now - launch.started_unix_s);
        launch.stderr_tail = Some(format!("watchdog: {what}: {diagnosis}"));
        if let Some(j) = &mut journal {
            let _ = j.append(&JournalRecord::Launch(Box::new(launch.clone())));
        }
        let mut info = run;
        info.written_unix_s = now;
        if during_start_up {
            // The run directory may not exist yet: nothing was journalled.
            std::fs::create_dir_all(path.parent()?).ok()?;
        }
        write_results(&path, &new_results(info, vec![launch], cases)).ok()?;
        Some(if during_start_up {
            format!(
                "No case ran: the launch and its planned cases (as timeout) are recorded in {}.",
                path.display()
            )
        } else {
            format!("Finished cases are kept in {}.", path.display())
        })
    })
}

/// A failure only rank 0 can see (writing the journal) while the others go on to the next
/// collective: returning would leave them waiting, so the whole job ends (exit 4).
fn fail_alone(e: Error) -> ! {
    eprintln!("scalebench: error: {e}; ending the job (MPI_Abort, exit 4) so the other ranks do not wait for rank 0");
    crate::run::watchdog::abort_job()
}

/// Makes every rank agree on a per-rank input check: an error anywhere is an input error
/// everywhere, with each failing rank's message (printed by rank 0).
fn agree_input<T, E: std::fmt::Display>(
    comm: &MpiComm,
    local: std::result::Result<T, E>,
) -> Result<T> {
    let local = local.map_err(|e| BackendError::Unsupported(e.to_string()));
    workload::agree(comm, local).map_err(|e| match e {
        workload::CaseError::Failed(m) | workload::CaseError::Skipped(m) => Error::Input(m),
    })
}

/// Why this rank cannot place its devices (an input error on every rank, see [`agree_input`]).
#[derive(Debug, thiserror::Error)]
enum DevicePlanError {
    /// hwloc could not read the machine.
    #[error(transparent)]
    Discover(#[from] topology::hwloc::HwlocError),
    /// The binding policy has nothing usable on this host.
    #[error("--binding {policy}: {source}")]
    Bind {
        policy: Binding,
        #[source]
        source: binding::BindError,
    },
}

/// Which devices this rank drives and where each one's thread is bound.
fn device_plan(
    req: &Launch,
    shape: &LaunchShape,
    layout: &NodeLayout,
    rank: u32,
) -> std::result::Result<(DevicePlan, Vec<String>), DevicePlanError> {
    let slot = &layout.slots[rank as usize];
    let per_rank = shape.devices_per_rank();
    let local_indices: Vec<u32> = (0..per_rank)
        .map(|w| match shape.topology {
            Topology::Pure => identity::device_local_index(
                shape.placement,
                rank,
                slot.local_rank,
                shape.nodes,
                shape.devices_per_node,
            ),
            Topology::Hybrid => w,
        })
        .collect();
    let mut notes = Vec::new();
    let worker_cpus = if req.binding == Binding::None {
        vec![None; per_rank as usize]
    } else {
        let machine = topology::hwloc::discover()?;
        let mut cpus = Vec::new();
        for &device in &local_indices {
            let d = binding::decide(
                &machine,
                &BindRequest {
                    policy: req.binding,
                    devices_on_node: shape.devices_per_node,
                    device,
                    host_share: slot.host_share,
                    reserved: req.reserved.clone(),
                },
            )
            .map_err(|source| DevicePlanError::Bind {
                policy: req.binding,
                source,
            })?;
            if let Some(n) = d.note {
                notes.push(format!("rank {rank} device {device}: {n}"));
            }
            cpus.push(d.cpus);
        }
        cpus
    };
    Ok((
        DevicePlan {
            devices_per_rank: per_rank as usize,
            local_indices,
            worker_cpus,
            threads_per_device: req.threads_per_device as usize,
            gemm: None,
        },
        notes,
    ))
}

/// Agrees on the backend's start: an unavailable backend (no driver, no device) is an
/// environment error (exit 2) with the failing ranks' own sentences.
fn start_backend<B: Backend>(
    comm: &MpiComm,
    backend: crate::backend::BackendResult<B>,
) -> Result<B> {
    let unavailable = matches!(backend, Err(BackendError::Unavailable(_)));
    let unavailable_anywhere = !comm.all_ok(!unavailable);
    workload::agree(comm, backend).map_err(|e| {
        let m = match e {
            workload::CaseError::Failed(m) | workload::CaseError::Skipped(m) => m,
        };
        if unavailable_anywhere {
            Error::Environment(m)
        } else {
            Error::Runtime(format!("backend set-up failed: {m}"))
        }
    })
}

/// Everything a launch needs besides its backend.
struct Job<'a> {
    argv: &'a [String],
    quiet: bool,
    run_id: String,
    out_dir: PathBuf,
    watchdog: &'a Watchdog,
    op_timeout: Duration,
    keep: &'a Arc<Mutex<Kept>>,
    settings: &'a RunSettings,
    launch_id: String,
    comm: &'a MpiComm,
    env: &'a LauncherEnv,
    layout: &'a NodeLayout,
    shape: LaunchShape,
    cases: &'a [CaseParams],
    /// Binding notes of this rank (fallbacks, shared cores).
    notes: Vec<String>,
    /// The MPI thread level asked for.
    thread_level: ThreadLevel,
}

impl Job<'_> {
    /// Runs every case of the launch: opens the journal, records the launch, measures the
    /// cases in order (rank 0 journals and prints each as it finishes), writes the results.
    fn execute<B: Backend>(&self, mut backend: B) -> Result<RunOutcome> {
        let started = now_unix_s();
        let before = Around::now(self.comm.is_root());
        let mut journal = self.open_journal()?;
        let launch = self.launch_record(&backend, started);
        // The CPUs rank 0's host runs the job on: their clock is read around every case.
        let clock_cpus = representative_clock_cpus(&launch);
        let run_info = RunInfo {
            run_id: self.run_id.clone(),
            started_unix_s: started,
            written_unix_s: started,
            command_line: self.argv.to_vec(),
            emulated_nodes: self.layout.emulated,
            labels: Default::default(),
        };
        {
            let mut k = lock_kept(self.keep);
            k.results_path = Some(self.out_dir.join(RESULTS_FILE));
            k.journal_path = Some(self.out_dir.join(JOURNAL_FILE));
            if self.comm.is_root() {
                k.run = Some(run_info.clone());
                k.launch = Some(launch.clone());
            }
            k.unstarted.clear();
        }
        append(&mut journal, JournalRecord::Run(run_info.clone()))?;
        append(
            &mut journal,
            JournalRecord::Launch(Box::new(launch.clone())),
        )?;
        if let Some(p) = &launch.provenance {
            self.print(self.header(p, &launch));
        }

        let mut table = TablePrinter::new();
        let mut results: Vec<CaseResult> = Vec::new();
        let mut any_failed = false;
        // Reasons already on screen: the launch's, then each case-specific one once.
        let mut said: Vec<_> = launch.unrepresentative.clone();
        self.watchdog.disarm();
        // Other scalebench processes seen between cases (a short launch can start and end
        // inside this one's window).
        let mut seen = BTreeMap::new();
        for params in self.cases {
            let (rec, failed) = self.run_case(&mut backend, params, &launch, &clock_cpus);
            lock_kept(self.keep).current = None;
            if self.comm.is_root() {
                seen.extend(load::scalebench_processes());
            }
            any_failed |= failed;
            if let Some(rec) = rec {
                append(&mut journal, JournalRecord::Case(Box::new(rec.clone())))?;
                self.print(case_warnings(&rec, &mut said));
                self.print(table.push(&rec));
                lock_kept(self.keep).cases.push(rec.clone());
                results.push(rec);
            }
        }
        self.print(table.flush());
        let mut launch = launch;
        self.record_context(&mut launch, &before, started, seen);

        let results_path = if self.comm.is_root() {
            Some(self.finish(&mut journal, launch, run_info, results, started)?)
        } else {
            None
        };
        Ok(RunOutcome {
            exit_code: if any_failed {
                EXIT_CASES_FAILED
            } else {
                EXIT_OK
            },
            results: results_path,
        })
    }

    /// Rank 0 opens the journal in the output directory; every rank learns whether that
    /// worked, so all fail together.
    fn open_journal(&self) -> Result<Option<Journal>> {
        let mut journal = None;
        let mut open_err = String::new();
        if self.comm.is_root() {
            match Journal::open(&self.out_dir.join(JOURNAL_FILE)) {
                Ok(j) => journal = Some(j),
                Err(e) => open_err = e.to_string(),
            }
        }
        let mut msg = open_err.into_bytes();
        self.comm.broadcast_bytes(&mut msg);
        if !msg.is_empty() {
            return Err(Error::Runtime(format!(
                "cannot write results: {}",
                String::from_utf8_lossy(&msg)
            )));
        }
        Ok(journal)
    }

    /// The launch's record as it starts (incomplete): shape, launcher, provenance (gathered
    /// from every rank) and what makes it unrepresentative.
    fn launch_record<B: Backend>(&self, backend: &B, started: f64) -> LaunchRecord {
        let provenance =
            gather_provenance(self.comm, backend, self.layout, &self.notes).map(|mut p| {
                p.buffer_policy = backend.buffer_policy(self.settings.buffer_offset);
                record_thread_level(&mut p, self.thread_level);
                p
            });
        let mut launch = LaunchRecord::starting(
            self.launch_id.clone(),
            self.shape,
            LaunchStatus::Incomplete,
            self.env
                .source
                .map_or("direct".to_string(), |s| s.to_string()),
            self.argv.to_vec(),
            started,
        );
        launch.provenance = provenance;
        launch.unrepresentative =
            representative::assess_launch(&launch, &representative::Load::COLLECTIVE);
        launch
    }

    /// After the last case, every rank reports its CPU time and what its process shows of
    /// the transport; rank 0 records the launch's transport and its host's load over the
    /// launch, and judges the launch again with them (co-scheduled launches, a busy host).
    fn record_context(
        &self,
        launch: &mut LaunchRecord,
        before: &Around,
        started: f64,
        seen: BTreeMap<u32, (String, f64)>,
    ) {
        let mut after = Around::now(self.comm.is_root());
        if let Some(h) = after.host.as_mut() {
            load::merge_seen(h, seen);
        }
        let mine = (
            transport::probe(),
            after.cpu_s - before.cpu_s,
            std::process::id(),
        );
        let payload = serde_json::to_vec(&mine).expect("probe serialises");
        let all = self.comm.gather_bytes(&payload);
        let (Some(h0), Some(h1)) = (&before.host, &after.host) else {
            return; // not rank 0
        };
        let reports: Vec<(transport::WireProbe, f64, u32)> = all
            .iter()
            .filter_map(|b| serde_json::from_slice(b).ok())
            .collect();
        let host = topology::hostname();
        let mut own_pids = load::own_lineage();
        let mut own_cpu_s = 0.0;
        for (probe, cpu_s, pid) in &reports {
            if probe.host == host {
                own_pids.insert(*pid);
                own_cpu_s += cpu_s;
            }
        }
        let p = launch.provenance.as_ref();
        let open_mpi = p
            .and_then(|p| p.mpi_library.as_deref())
            .is_some_and(|l| l.contains("Open MPI"));
        let mca = if open_mpi {
            let env: BTreeMap<String, String> = std::env::vars().collect();
            transport::resolve_mca(&env, &transport::mca_param_files(&env))
        } else {
            Vec::new()
        };
        let probes: Vec<_> = reports.into_iter().map(|(p, _, _)| p).collect();
        launch.transport = Some(transport::summarise(&probes, mca));
        let cpus = topology::host_info().logical_cpus;
        let window_s = (after.at - started).max(0.0);
        launch.host_load = Some(load::host_load(
            &host, cpus, window_s, h0, h1, own_cpu_s, &own_pids,
        ));
        launch.unrepresentative =
            representative::assess_launch(launch, &representative::Load::COLLECTIVE);
    }

    /// Prints on rank 0 unless quiet.
    fn print(&self, lines: Vec<String>) {
        if self.comm.is_root() && !self.quiet {
            let mut so = std::io::stdout().lock();
            for l in lines {
                let _ = writeln!(so, "{l}");
            }
            let _ = so.flush();
        }
    }

    /// The lines above the live table: what runs where, then every warning.
    fn header(&self, p: &Provenance, launch: &LaunchRecord) -> Vec<String> {
        let first = format!(
            "# scalebench {} | {} rank(s), {} device(s) on {} node(s){} | binding {} | {} | results: {}",
            env!("CARGO_PKG_VERSION"),
            p.world_size,
            p.devices,
            p.nodes,
            if p.emulated_nodes { " (emulated on one host)" } else { "" },
            self.shape.binding,
            p.mpi_library.as_deref().unwrap_or("MPI").lines().next().unwrap_or(""),
            self.out_dir.display()
        );
        std::iter::once(first)
            .chain(p.warnings.iter().map(|w| format!("# warning: {w}")))
            .chain(
                launch
                    .unrepresentative
                    .iter()
                    .map(|w| format!("# warning: not representative ({}): {}", w.kind, w.detail)),
            )
            .collect()
    }

    /// Measures one case under the watchdog, with the clock and telemetry around it; returns
    /// rank 0's record of it (`None` on the other ranks) and whether it failed.
    fn run_case<B: Backend>(
        &self,
        backend: &mut B,
        params: &CaseParams,
        launch: &LaunchRecord,
        clock_cpus: &[u32],
    ) -> (Option<CaseResult>, bool) {
        let (comm, size) = (self.comm, self.comm.size());
        let mhz0 = topology::cpu_mhz(clock_cpus);
        let t0 = now_unix_s();
        lock_kept(self.keep).current = Some((params.clone(), t0, backend.total_devices(), size));
        self.watchdog.arm(
            format!("case {} ({})", params.id(), params.label()),
            self.op_timeout,
        );
        backend.telemetry_begin();
        let outcome = workload::run_case(backend, comm, params, self.settings);
        self.watchdog.disarm();
        let t1 = now_unix_s();
        let mhz1 = topology::cpu_mhz(clock_cpus);
        let telemetry = backend.telemetry_end();
        // Only a GPU backend samples; the kind is the same on every rank.
        let telemetry = if backend.kind() == BackendKind::Cuda {
            gather_telemetry(comm, &telemetry)
        } else {
            telemetry
        };
        let failed = match &outcome {
            Ok(m) => m.wrong > 0,
            Err(workload::CaseError::Failed(_)) => true,
            Err(workload::CaseError::Skipped(_)) => false,
        };
        if !comm.is_root() {
            return (None, failed);
        }
        let rec = crate::run::record(
            params,
            &self.launch_id,
            t0,
            t1,
            backend.total_devices(),
            size,
            outcome,
        );
        let mut unrepresentative = representative::case_specific(launch, params);
        let host = topology::hostname();
        unrepresentative.extend(representative::frequency_change(&host, &mhz0, &mhz1));
        let rec = CaseResult {
            telemetry,
            unrepresentative,
            ..rec
        };
        (Some(rec), failed)
    }

    /// Rank 0 closes the launch (status, times, overhead), journals it and writes the results
    /// file; returns its path.
    fn finish(
        &self,
        journal: &mut Option<Journal>,
        mut launch: LaunchRecord,
        run_info: RunInfo,
        results: Vec<CaseResult>,
        started: f64,
    ) -> Result<PathBuf> {
        let finished = now_unix_s();
        self.print(vec![summary_line(&results)]);
        launch.status = LaunchStatus::Ok;
        launch.finished_unix_s = Some(finished);
        launch.wall_s = Some(finished - started);
        let case_time: f64 = results
            .iter()
            .map(|c| c.finished_unix_s - c.started_unix_s)
            .sum();
        launch.overhead_s = Some((finished - started - case_time).max(0.0));
        append(journal, JournalRecord::Launch(Box::new(launch.clone())))?;
        let mut info = run_info;
        info.written_unix_s = finished;
        let path = self.out_dir.join(RESULTS_FILE);
        write_results(&path, &new_results(info, vec![launch], results))?;
        Ok(path)
    }
}

/// The moment a launch starts or its last case ends: this process's CPU time and, at rank 0,
/// a look at the host.
struct Around {
    at: f64,
    cpu_s: f64,
    host: Option<load::HostSnapshot>,
}

impl Around {
    fn now(root: bool) -> Around {
        Around {
            at: now_unix_s(),
            cpu_s: load::process_cpu_s(),
            host: root.then(load::snapshot),
        }
    }
}

/// The lines that say what makes `rec` unrepresentative beyond what is on screen (`said`,
/// which grows by them): a ddp_step progress thread or a GEMM's threads the launch's
/// collectives did not have.
fn case_warnings(
    rec: &CaseResult,
    said: &mut Vec<crate::results::schema::Unrepresentative>,
) -> Vec<String> {
    let mut out = Vec::new();
    for w in &rec.unrepresentative {
        if !said.contains(w) {
            out.push(format!(
                "# warning: case {} not representative ({}): {}",
                rec.id, w.kind, w.detail
            ));
            said.push(w.clone());
        }
    }
    out
}

/// Appends to rank 0's journal (nothing elsewhere); a failure ends the whole job, see
/// [`fail_alone`].
fn append(j: &mut Option<Journal>, rec: JournalRecord) -> Result<()> {
    match j {
        Some(j) => j
            .append(&rec)
            .map_err(Error::from)
            .map_err(|e| fail_alone(e)),
        None => Ok(()),
    }
}

/// At rank 0: the CPUs the ranks on its host may run on (empty on other ranks, whose clock
/// readings are not recorded).
fn representative_clock_cpus(launch: &LaunchRecord) -> Vec<u32> {
    let Some(p) = &launch.provenance else {
        return Vec::new();
    };
    let host = topology::hostname();
    let mut cpus: Vec<u32> = p
        .ranks
        .iter()
        .filter(|r| r.host == host)
        .flat_map(|r| affinity::parse_cpulist(&r.cpus).unwrap_or_default())
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Every rank's device telemetry, at rank 0, in device order (collective).
fn gather_telemetry(comm: &MpiComm, mine: &[DeviceTelemetry]) -> Vec<DeviceTelemetry> {
    let bytes = serde_json::to_vec(mine).unwrap_or_default();
    let mut all: Vec<DeviceTelemetry> = comm
        .gather_bytes(&bytes)
        .iter()
        .flat_map(|b| serde_json::from_slice::<Vec<DeviceTelemetry>>(b).unwrap_or_default())
        .collect();
    all.sort_by_key(|t| t.device);
    all
}

/// Every rank's facts go to rank 0, which assigns nodes and tells everyone.
fn agree_layout(comm: &MpiComm, req: &Launch, env: &LauncherEnv) -> Result<NodeLayout> {
    let facts = RankFacts {
        host: topology::hostname(),
        slurm_node_id: env.node_id,
        slurm_node_name: env.node_name.clone(),
        slurm_local_rank: if env.source == Some("slurm") {
            env.local_rank
        } else {
            None
        },
    };
    let all = comm.gather_bytes(&serde_json::to_vec(&facts).expect("facts serialise"));
    let mut reply = Vec::new();
    if comm.is_root() {
        let facts: Vec<RankFacts> = all
            .iter()
            .map(|b| serde_json::from_slice(b).expect("facts from our own ranks"))
            .collect();
        let natural = identity::assign_nodes(&facts, None);
        let emulate = match (&natural, req.nodes) {
            _ if req.emulate_nodes => Some((req.nodes.unwrap_or(1), req.placement)),
            // More nodes asked for than exist: emulate them on what there is, and say so.
            (Ok(l), Some(n)) if n > l.nodes && l.nodes == 1 => Some((n, req.placement)),
            _ => None,
        };
        let layout = match emulate {
            Some(e) => identity::assign_nodes(&facts, Some(e)),
            None => natural,
        };
        reply = serde_json::to_vec(&layout).expect("layout serialises");
    }
    comm.broadcast_bytes(&mut reply);
    let mut layout: std::result::Result<NodeLayout, identity::IdentityError> =
        serde_json::from_slice(&reply).expect("layout from rank 0");
    // A cluster whose nodes stand in for real ones (ci/slurm/start.sh) says so through its
    // profile's environment; nothing in Slurm's own variables can tell.
    if std::env::var("SCALEBENCH_EMULATED_NODES").is_ok_and(|v| v == "1") {
        if let Ok(l) = &mut layout {
            l.emulated = true;
        }
    }
    layout.map_err(|e| Error::Input(format!("--nodes {}: {e}", req.nodes.unwrap_or(1))))
}

/// The launch shape from the request and the world we got; a mismatch is an input error that
/// names both numbers.
fn launch_shape(req: &Launch, layout: &NodeLayout, size: u32) -> Result<LaunchShape> {
    let nodes = req.nodes.unwrap_or(layout.nodes);
    if nodes != layout.nodes {
        return Err(Error::Input(format!(
            "--nodes {nodes}: this job's ranks run on {} node(s) ({}): start the job on {nodes} node(s), or pass --emulate-nodes to group ranks on one host",
            layout.nodes, layout.source
        )));
    }
    let dpn = match req.topology {
        Topology::Pure => req.devices_per_node.unwrap_or(size / nodes.max(1)),
        Topology::Hybrid => req.devices_per_node.unwrap_or(1),
    };
    if dpn == 0 {
        return Err(Error::input("--devices-per-node 0: give at least 1"));
    }
    let expected = match req.topology {
        Topology::Pure => nodes * dpn,
        Topology::Hybrid => nodes,
    };
    if expected != size {
        return Err(Error::Input(format!(
            "this job has {size} MPI rank(s), but {} topology on {nodes} node(s) × {dpn} device(s) needs {expected}: start {expected} rank(s) (mpirun -np {expected}) or change --nodes/--devices-per-node/--topology",
            req.topology
        )));
    }
    Ok(LaunchShape {
        backend: req.backend,
        topology: req.topology,
        nodes,
        devices_per_node: dpn,
        binding: req.binding,
        placement: req.placement,
    })
}

/// This rank: where it runs, on which CPUs, with which devices.
fn describe_rank<B: Backend>(rank: u32, backend: &B, layout: &NodeLayout) -> RankInfo {
    let slot = &layout.slots[rank as usize];
    let devices = backend.device_bindings();
    // The process runs where its threads may: this one and, in hybrid mode, its workers.
    let mut cpus = affinity::current_thread_cpus().unwrap_or_default();
    cpus.extend(
        devices
            .iter()
            .flat_map(|d| affinity::parse_cpulist(&d.cpus).unwrap_or_default()),
    );
    RankInfo {
        rank,
        host: topology::hostname(),
        node: slot.node,
        node_name: slot.node_name.clone(),
        local_rank: slot.local_rank,
        pid: std::process::id(),
        cpus: affinity::format_cpulist(&cpus),
        devices,
        progress_thread: backend.progress_thread_binding(),
    }
}

/// Rank 0's GEMM provider, the one recorded; a rank that multiplies differently is a set-up
/// problem, warned about.
fn rank0_gemm(
    gemm_by_rank: &[Option<GemmProvenance>],
    warnings: &mut Vec<String>,
) -> Option<GemmProvenance> {
    let gemm = gemm_by_rank.first().cloned().flatten();
    let show = |g: &Option<GemmProvenance>| {
        g.as_ref().map_or("no GEMM provider".to_string(), |g| {
            format!(
                "{} ({})",
                g.provider,
                g.library.as_deref().unwrap_or(&g.version)
            )
        })
    };
    for (r, g) in gemm_by_rank.iter().enumerate().skip(1) {
        if *g != gemm {
            warnings.push(format!(
                "rank {r} multiplies with {}, rank 0 with {}: their GEMM rates are not comparable",
                show(g),
                show(&gemm)
            ));
        }
    }
    gemm
}

/// The thread level asked for and the one MPI provides (`MPI_Query_thread`), with a warning
/// when MPI gives less than asked (a progress thread then cannot start: its cases fail).
fn record_thread_level(p: &mut Provenance, asked: ThreadLevel) {
    let provided = crate::comm::raw::thread_level();
    let provided = ThreadLevel::ALL
        .get(provided as usize)
        .copied()
        .unwrap_or(ThreadLevel::Single);
    if provided < asked {
        p.warnings.push(format!(
            "MPI was asked for thread level {asked} and provides {provided}: cases that need {asked} cannot run"
        ));
    }
    p.mpi_thread_level_requested = Some(asked);
    p.mpi_thread_level = Some(provided);
}

/// Every rank describes itself; rank 0 assembles the provenance.
fn gather_provenance<B: Backend>(
    comm: &MpiComm,
    backend: &B,
    layout: &NodeLayout,
    notes: &[String],
) -> Option<Provenance> {
    let me = describe_rank(comm.rank(), backend, layout);
    let mut warnings = notes.to_vec();
    warnings.extend(backend.warnings());
    let gemm = backend.gemm_provenance();
    let payload = serde_json::to_vec(&(me, topology::host_info(), warnings, gemm))
        .expect("rank info serialises");
    let all = comm.gather_bytes(&payload);
    if !comm.is_root() {
        return None;
    }
    let mut ranks = Vec::new();
    let mut hosts: Vec<HostInfo> = Vec::new();
    let mut warnings = Vec::new();
    let mut gemm_by_rank = Vec::new();
    for b in all {
        let (r, h, w, g): (RankInfo, HostInfo, Vec<String>, Option<GemmProvenance>) =
            serde_json::from_slice(&b).expect("rank info from our own ranks");
        if !hosts.iter().any(|x| x.host == h.host) {
            hosts.push(h);
        }
        ranks.push(r);
        warnings.extend(w);
        gemm_by_rank.push(g);
    }
    let gemm = rank0_gemm(&gemm_by_rank, &mut warnings);
    let (major, minor) = mpi::environment::version();
    Some(Provenance {
        world_size: comm.size(),
        devices: backend.total_devices(),
        nodes: layout.nodes,
        emulated_nodes: layout.emulated,
        node_source: layout.source.clone(),
        mpi_library: mpi::environment::library_version().ok().map(|s| {
            s.trim_matches(|c: char| c == '\0' || c.is_whitespace())
                .to_string()
        }),
        mpi_standard: Some(format!("{major}.{minor}")),
        timer: backend.timer_info(),
        backend: backend.info(),
        ranks,
        hosts,
        environment: topology::captured_environment(std::env::vars()),
        warnings,
        gemm,
        buffer_policy: None,
        mpi_thread_level_requested: None,
        mpi_thread_level: None,
    })
}
