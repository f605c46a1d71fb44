//! The `scalebench` binary: parse, call the library, map the outcome to an exit code.

use clap::Parser;
use scalebench::cli::{Cli, Command, HistoryCommand};
use scalebench::error::Error;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Exit quietly when a reader closes the pipe (`scalebench plan ... | head`), as Unix tools do.
    // SAFETY: SIG_DFL installs no handler, so no code of ours ever runs in signal context; this
    // is the first statement of `main`, before any thread exists, so nothing changes SIGPIPE's
    // disposition concurrently (std set it to SIG_IGN before `main`; this restores the default).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // As OS strings: `std::env::args` panics on an argument that is not UTF-8. clap takes a
    // path as it is and refuses such text where it wants text (exit 2, a sentence); what is
    // recorded (a run's command line) is the lossy text, and the provenance says so.
    let argv_os: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv: Vec<String> = argv_os
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli = match Cli::try_parse_from(&argv_os) {
        Ok(c) => c,
        Err(e) => {
            // Under mpirun every rank parses the same options: say it once.
            if scalebench::topology::identity::env_rank().unwrap_or(0) == 0 {
                if e.use_stderr() {
                    eprint!("{}", scalebench::cli::refusal_text(&e, &argv_os));
                } else {
                    let _ = e.print(); // --help, --version: as clap writes them
                }
            }
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    match dispatch(cli, &argv) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if scalebench::topology::identity::env_rank().unwrap_or(0) == 0
                && !scalebench::error::reported()
            {
                scalebench::error::report(&e);
            }
            ExitCode::from(e.exit_code())
        }
    }
}

fn dispatch(cli: Cli, argv: &[String]) -> Result<u8, Error> {
    // Each command fails with its own layer's error; `?` wraps it in the crate's.
    Ok(match cli.command {
        Command::Run(args) => run(&args.as_ref().into(), argv)?,
        Command::Replay(args) => run(&args.as_ref().into(), argv)?,
        Command::Plan(args) => {
            scalebench::launch::plan_cmd::plan(&args.spec, args.json, args.cases)?
        }
        Command::Sweep(args) => scalebench::launch::local::sweep(&(&args).into(), argv)?,
        Command::Topo(args) => scalebench::topology::command::topo(
            &args.reserved_cores,
            args.devices_per_node,
            args.json,
            cuda_devices,
        )?,
        Command::Ceilings(args) => scalebench::run::ceilings::command(&(&args).into())?,
        Command::Links(args) => links(&args)?,
        Command::Submit(args) => scalebench::launch::submit::submit(&args.request()?, argv)?,
        Command::Status(a) => {
            scalebench::launch::submit::status(&a.run, a.wait, a.timeout, a.quiet)?
        }
        Command::Collect(a) => scalebench::launch::submit::collect(&a.run, a.from_job, a.quiet)?,
        Command::FinishLaunch(a) => scalebench::launch::submit::finish_launch(
            &a.dir,
            a.exit_code,
            a.started,
            a.timeout_s,
            &a.launcher,
            a.job_id,
        )?,
        Command::WatchLaunch(a) => {
            scalebench::launch::submit::watch_launch(&a.dir, a.pid, a.grace_s)?
        }
        Command::Compare(args) => scalebench::compare::run(&args.request(argv))?,
        Command::Report(args) => scalebench::report::run(&args.request()?)?,
        Command::History(args) => match &args.command {
            HistoryCommand::Ingest(a) => scalebench::history::ingest(&a.request())?,
            HistoryCommand::Show(a) => scalebench::history::query::show(&a.request())?,
            HistoryCommand::Changes(a) => scalebench::history::query::changes(&a.request())?,
            HistoryCommand::Export(a) => scalebench::history::export::export(&a.request())?,
        },
    })
}

/// `scalebench links`: the simulated matrix when asked, else the measurement (an MPI job).
fn links(args: &scalebench::cli::LinksArgs) -> Result<u8, Error> {
    match (args.scenario(), &args.out) {
        // With --out the simulation is written like a measurement (links.json, links.svg).
        (Some(s), Some(dir)) => args.simulate_to(&s, dir),
        (Some(s), None) => Ok(scalebench::links::simulate_command(
            &s,
            &args.settings(),
            args.json,
        )?),
        (None, _) => links_measure(args),
    }
}

#[cfg(feature = "mpi")]
fn links_measure(args: &scalebench::cli::LinksArgs) -> Result<u8, Error> {
    Ok(scalebench::run::links::command(&args.measure())?)
}

#[cfg(not(feature = "mpi"))]
fn links_measure(_args: &scalebench::cli::LinksArgs) -> Result<u8, Error> {
    Err(Error::Links(scalebench::links::LinksError::NoMpi))
}

/// What the CUDA driver says about this node's GPUs (names, memory), next to hwloc's view.
#[cfg(feature = "cuda")]
fn cuda_devices() -> String {
    match scalebench::backend::cuda::list_gpus() {
        Ok(gpus) => gpus
            .iter()
            .map(|g| {
                format!(
                    "  CUDA {}: {} ({} GiB, PCI {}, compute {}.{})\n",
                    g.ordinal,
                    g.name,
                    g.memory_bytes >> 30,
                    g.pci_bus_id,
                    g.compute_capability.0,
                    g.compute_capability.1
                )
            })
            .collect(),
        Err(e) => format!("  CUDA: {e}\n"),
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_devices() -> String {
    String::new()
}

#[cfg(feature = "mpi")]
fn run(req: &scalebench::run::Request, argv: &[String]) -> Result<u8, Error> {
    Ok(scalebench::run::job::run(req, argv)?.exit_code)
}

#[cfg(not(feature = "mpi"))]
fn run(_req: &scalebench::run::Request, _argv: &[String]) -> Result<u8, Error> {
    Err(Error::NoMpi)
}
