//! The `scalebench` binary: parse, call the library, map the outcome to an exit code.

use clap::Parser;
use scalebench::cli::{Cli, Command};
use scalebench::error::Error;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => {
            // Under mpirun every rank parses the same options: say it once.
            if scalebench::topology::identity::env_rank().unwrap_or(0) == 0 {
                let _ = e.print();
            }
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    match dispatch(cli, &argv) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if scalebench::topology::identity::env_rank().unwrap_or(0) == 0 {
                eprintln!("scalebench: error: {e}");
                let mut src = std::error::Error::source(&e);
                while let Some(s) = src {
                    eprintln!("  caused by: {s}");
                    src = s.source();
                }
            }
            ExitCode::from(e.exit_code())
        }
    }
}

fn dispatch(cli: Cli, argv: &[String]) -> Result<u8, Error> {
    match cli.command {
        Command::Run(args) => run(&args, argv),
    }
}

#[cfg(feature = "mpi")]
fn run(args: &scalebench::cli::RunArgs, argv: &[String]) -> Result<u8, Error> {
    scalebench::run::job::run(args, argv).map(|o| o.exit_code)
}

#[cfg(not(feature = "mpi"))]
fn run(_args: &scalebench::cli::RunArgs, _argv: &[String]) -> Result<u8, Error> {
    Err(Error::Environment(
        "this scalebench was built without MPI (no `mpi` feature), so it can plan, report and compare but not run: rebuild with default features".into(),
    ))
}
