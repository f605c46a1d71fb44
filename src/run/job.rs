//! `scalebench run`: one MPI job that measures a list of cases.
//!
//! Every rank parses the same options and expands the same cases; rank 0 alone writes. Order
//! of events: check options (no MPI yet, nothing written) → MPI start → check the world the
//! launcher gave us → assign nodes → open the output (rank 0) → set up the backend → record
//! provenance → run cases, appending each to the journal as it finishes → write `results.json`
//! atomically.

use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BackendError, DevicePlan};
use crate::cli::RunArgs;
use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::error::{Error, Result, EXIT_CASES_FAILED, EXIT_OK};
use crate::params::{BackendKind, LaunchShape, Topology};
use crate::plan::{self, RunOptions};
use crate::report::console::{summary_line, TablePrinter};
use crate::results::io::{
    new_results, write_results, Journal, JournalRecord, JOURNAL_FILE, RESULTS_FILE,
};
use crate::results::schema::{
    CaseResult, LaunchRecord, LaunchStatus, Provenance, RankInfo, RunInfo,
};
use crate::results::{new_run_id, now_unix_s};
use crate::topology::identity::{self, NodeLayout, RankFacts};
use crate::topology::{self, affinity};
use crate::workload;
use std::io::Write;
use std::path::PathBuf;

/// What a finished job reports to `main`.
pub struct RunOutcome {
    pub exit_code: u8,
    /// Where results were written (rank 0 only).
    pub results: Option<PathBuf>,
}

/// Runs `scalebench run` in this process (one MPI rank).
pub fn run(args: &RunArgs, argv: &[String]) -> Result<RunOutcome> {
    let opts = RunOptions::from_args(args)?;
    if args.backend == BackendKind::Cuda && !cfg!(feature = "cuda") {
        return Err(Error::Environment(
            "--backend cuda: this scalebench was built without CUDA support: rebuild with `cargo build --release --features cuda`".into(),
        ));
    }
    // Ask for the lowest thread level the launch needs: OpenMPI's small-message latency is
    // measurably higher under MPI_THREAD_FUNNELED than under MPI_Init (see ci/bench.sh), and
    // only hybrid workers, multi-threaded GEMMs and GPU runtimes add threads (none calls MPI).
    let needs_threads = args.topology == Topology::Hybrid
        || args.threads_per_device > 1
        || args.backend != BackendKind::Cpu;
    let universe = if needs_threads {
        mpi::initialize_with_threading(mpi::Threading::Funneled).map(|(u, _)| u)
    } else {
        mpi::initialize()
    };
    let Some(universe) = universe else {
        return Err(Error::Runtime(
            "MPI was already initialised in this process".into(),
        ));
    };
    let world = universe.world();
    let comm = MpiComm::new(&world);
    let (rank, size) = (comm.rank(), comm.size());

    // The world we got must be the world the launcher started.
    let env = identity::launcher_env(|k| std::env::var(k).ok());
    identity::check_world(&env, rank, size).map_err(Error::Environment)?;

    let layout = agree_layout(&comm, args, &env)?;
    let shape = launch_shape(args, &layout, size)?;
    let cases = plan::expand(&opts, shape)?;

    let slot = &layout.slots[rank as usize];
    let devices_per_rank = shape.devices_per_rank();
    let local_indices: Vec<u32> = (0..devices_per_rank)
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
    let plan = DevicePlan {
        devices_per_rank: devices_per_rank as usize,
        threads_per_device: args.threads_per_device as usize,
        local_indices,
        worker_cpus: vec![None; devices_per_rank as usize],
    };
    let job = Job {
        args,
        argv,
        opts: &opts,
        comm: &comm,
        env: &env,
        layout: &layout,
        shape,
        cases: &cases,
    };
    match args.backend {
        BackendKind::Cpu => {
            let backend = CpuBackend::new(&world, plan);
            job.execute(start_backend(&comm, backend)?)
        }
        // The CUDA backend is wired in here once it exists (issue 7).
        BackendKind::Cuda => Err(Error::Environment(
            "--backend cuda: the CUDA backend is not part of this build yet".into(),
        )),
    }
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
    args: &'a RunArgs,
    argv: &'a [String],
    opts: &'a RunOptions,
    comm: &'a MpiComm,
    env: &'a identity::LauncherEnv,
    layout: &'a NodeLayout,
    shape: LaunchShape,
    cases: &'a [crate::params::CaseParams],
}

impl Job<'_> {
    fn execute<B: Backend>(&self, mut backend: B) -> Result<RunOutcome> {
        let Job {
            args,
            argv,
            opts,
            comm,
            env,
            layout,
            shape,
            cases,
        } = *self;
        let size = comm.size();
        // Output: rank 0 creates it; everyone learns whether that worked.
        let started = now_unix_s();
        let run_id = new_run_id(started);
        let out_dir = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("results").join(&run_id));
        let mut journal = None;
        let mut open_err = String::new();
        if comm.is_root() {
            match Journal::open(&out_dir.join(JOURNAL_FILE)) {
                Ok(j) => journal = Some(j),
                Err(e) => open_err = e.to_string(),
            }
        }
        let mut msg = open_err.into_bytes();
        comm.broadcast_bytes(&mut msg);
        if !msg.is_empty() {
            return Err(Error::Runtime(format!(
                "cannot write results: {}",
                String::from_utf8_lossy(&msg)
            )));
        }

        let provenance = gather_provenance(comm, &backend, layout);
        let launch_id = args.launch_id.clone().unwrap_or_else(|| shape.id());
        let emulated = layout.emulated;
        let mut launch = LaunchRecord {
            launch_id: launch_id.clone(),
            shape,
            status: LaunchStatus::Incomplete,
            launcher: env.source.map_or("direct".to_string(), |s| s.to_string()),
            command_line: argv.to_vec(),
            started_unix_s: started,
            finished_unix_s: None,
            wall_s: None,
            overhead_s: None,
            stderr_tail: None,
            provenance,
        };
        let run_info = RunInfo {
            run_id,
            started_unix_s: started,
            written_unix_s: started,
            command_line: argv.to_vec(),
            emulated_nodes: emulated,
            labels: Default::default(),
        };
        let journal_write = |j: &mut Option<Journal>, rec: JournalRecord| -> Result<()> {
            match j {
                Some(j) => j.append(&rec).map_err(Error::from),
                None => Ok(()),
            }
        };
        journal_write(&mut journal, JournalRecord::Run(run_info.clone()))?;
        journal_write(&mut journal, JournalRecord::Launch(launch.clone()))?;

        let mut table = TablePrinter::new();
        let print = |lines: Vec<String>| {
            if comm.is_root() && !args.quiet {
                let mut so = std::io::stdout().lock();
                for l in lines {
                    let _ = writeln!(so, "{l}");
                }
                let _ = so.flush();
            }
        };
        if comm.is_root() && !args.quiet {
            if let Some(p) = &launch.provenance {
                print(vec![format!(
                    "# scalebench {} | {} rank(s), {} device(s) on {} node(s){} | {} | results: {}",
                    env!("CARGO_PKG_VERSION"),
                    p.world_size,
                    p.devices,
                    p.nodes,
                    if p.emulated_nodes {
                        " (emulated on one host)"
                    } else {
                        ""
                    },
                    p.mpi_library
                        .as_deref()
                        .unwrap_or("MPI")
                        .lines()
                        .next()
                        .unwrap_or(""),
                    out_dir.display()
                )]);
                for w in &p.warnings {
                    print(vec![format!("# warning: {w}")]);
                }
            }
        }

        let mut results: Vec<CaseResult> = Vec::new();
        let mut any_failed = false;
        for params in cases {
            let t0 = now_unix_s();
            let outcome = workload::run_case(&mut backend, comm, params, &opts.settings);
            let t1 = now_unix_s();
            let failed = match &outcome {
                Ok(m) => m.wrong > 0,
                Err(workload::CaseError::Failed(_)) => true,
                Err(workload::CaseError::Skipped(_)) => false,
            };
            any_failed |= failed;
            if comm.is_root() {
                let rec = crate::run::record(
                    params,
                    &launch_id,
                    t0,
                    t1,
                    backend.total_devices(),
                    size,
                    outcome,
                );
                journal_write(&mut journal, JournalRecord::Case(rec.clone()))?;
                print(table.push(&rec));
                results.push(rec);
            }
        }
        print(table.flush());

        let finished = now_unix_s();
        let mut results_path = None;
        if comm.is_root() {
            print(vec![summary_line(&results)]);
            launch.status = LaunchStatus::Ok;
            launch.finished_unix_s = Some(finished);
            launch.wall_s = Some(finished - started);
            let case_time: f64 = results
                .iter()
                .map(|c| c.finished_unix_s - c.started_unix_s)
                .sum();
            launch.overhead_s = Some((finished - started - case_time).max(0.0));
            journal_write(&mut journal, JournalRecord::Launch(launch.clone()))?;
            let mut info = run_info;
            info.written_unix_s = finished;
            let file = new_results(info, vec![launch], results.clone());
            let path = out_dir.join(RESULTS_FILE);
            write_results(&path, &file)?;
            results_path = Some(path);
        }
        Ok(RunOutcome {
            exit_code: if any_failed {
                EXIT_CASES_FAILED
            } else {
                EXIT_OK
            },
            results: results_path,
        })
    }
}

/// Every rank's facts go to rank 0, which assigns nodes and tells everyone.
fn agree_layout(comm: &MpiComm, args: &RunArgs, env: &identity::LauncherEnv) -> Result<NodeLayout> {
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
        let emulate = match (&natural, args.nodes) {
            _ if args.emulate_nodes => Some((args.nodes.unwrap_or(1), args.placement)),
            // More nodes asked for than exist: emulate them on what there is, and say so.
            (Ok(l), Some(n)) if n > l.nodes && l.nodes == 1 => Some((n, args.placement)),
            _ => None,
        };
        let layout = match emulate {
            Some(e) => identity::assign_nodes(&facts, Some(e)),
            None => natural,
        };
        reply = serde_json::to_vec(&layout).expect("layout serialises");
    }
    comm.broadcast_bytes(&mut reply);
    let layout: std::result::Result<NodeLayout, String> =
        serde_json::from_slice(&reply).expect("layout from rank 0");
    layout.map_err(|e| Error::Input(format!("--nodes {}: {e}", args.nodes.unwrap_or(1))))
}

/// The launch shape from the options and the world we got; a mismatch is an input error that
/// names both numbers.
fn launch_shape(args: &RunArgs, layout: &NodeLayout, size: u32) -> Result<LaunchShape> {
    let nodes = args.nodes.unwrap_or(layout.nodes);
    if nodes != layout.nodes {
        return Err(Error::Input(format!(
            "--nodes {nodes}: this job's ranks run on {} node(s) ({}): start the job on {nodes} node(s), or pass --emulate-nodes to group ranks on one host",
            layout.nodes, layout.source
        )));
    }
    let dpn = match args.topology {
        Topology::Pure => args.devices_per_node.unwrap_or(size / nodes.max(1)),
        Topology::Hybrid => args.devices_per_node.unwrap_or(1),
    };
    if dpn == 0 {
        return Err(Error::input("--devices-per-node 0: give at least 1"));
    }
    let expected = match args.topology {
        Topology::Pure => nodes * dpn,
        Topology::Hybrid => nodes,
    };
    if expected != size {
        return Err(Error::Input(format!(
            "this job has {size} MPI rank(s), but {} topology on {nodes} node(s) × {dpn} device(s) needs {expected}: start {expected} rank(s) (mpirun -np {expected}) or change --nodes/--devices-per-node/--topology",
            args.topology
        )));
    }
    Ok(LaunchShape {
        backend: args.backend,
        topology: args.topology,
        nodes,
        devices_per_node: dpn,
        binding: crate::params::Binding::None,
        placement: args.placement,
    })
}

/// Every rank describes itself; rank 0 assembles the provenance.
fn gather_provenance<B: Backend>(
    comm: &MpiComm,
    backend: &B,
    layout: &NodeLayout,
) -> Option<Provenance> {
    let rank = comm.rank();
    let slot = &layout.slots[rank as usize];
    let me = RankInfo {
        rank,
        host: topology::hostname(),
        node: slot.node,
        node_name: slot.node_name.clone(),
        local_rank: slot.local_rank,
        pid: std::process::id(),
        cpus: affinity::format_cpulist(&affinity::current_thread_cpus().unwrap_or_default()),
        devices: backend.device_bindings(),
    };
    let host = topology::host_info();
    let warnings = backend.warnings();
    let payload = serde_json::to_vec(&(me, host, warnings)).expect("rank info serialises");
    let all = comm.gather_bytes(&payload);
    if !comm.is_root() {
        return None;
    }
    let mut ranks = Vec::new();
    let mut hosts: Vec<crate::results::schema::HostInfo> = Vec::new();
    let mut warnings = Vec::new();
    for b in all {
        let (r, h, w): (RankInfo, crate::results::schema::HostInfo, Vec<String>) =
            serde_json::from_slice(&b).expect("rank info from our own ranks");
        if !hosts.iter().any(|x| x.host == h.host) {
            hosts.push(h);
        }
        ranks.push(r);
        warnings.extend(w);
    }
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
    })
}
