//! The crate's error type and the process exit codes it maps to.
//!
//! Exit codes (documented in README and `--help`):
//! - 0: success;
//! - 1: `compare` found a regression;
//! - 2: bad input (options, spec, results file) or an unusable environment; the message names
//!   the option, file or line and the fix;
//! - 3: wrong results or failed cases (the results file is still written);
//! - 4: a runtime failure (I/O while writing results, a launcher that could not start).

use crate::compare::CompareError;
use crate::history::HistoryError;
use crate::launch::error::LaunchError;
use crate::links::LinksError;
use crate::plan::PlanError;
use crate::report::ReportError;
use crate::results::io::ResultsError;
use crate::run::ceilings::CeilingsError;
use crate::run::error::RunError;
use crate::topology::command::TopoError;

pub use crate::exit::{
    report, reported, EXIT_BAD_INPUT, EXIT_CASES_FAILED, EXIT_OK, EXIT_REGRESSION, EXIT_RUNTIME,
};

/// Every failure, as the error of the layer it came from (each keeps its causes, typed). The
/// message of each is the whole sentence shown to the user; [`Error::exit_code`] follows from
/// the variant.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `run`'s options or a launch plan cannot be used (bad input).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A sweep, a submission or a look at a run failed.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A launch could not run.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A report could not be written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// Two sides could not be compared.
    #[error(transparent)]
    Compare(#[from] CompareError),
    /// The performance history could not be indexed or read.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// `scalebench topo` failed.
    #[error(transparent)]
    Topo(#[from] TopoError),
    /// `scalebench ceilings` failed.
    #[error(transparent)]
    Ceilings(#[from] CeilingsError),
    /// `scalebench links` was given options it cannot use.
    #[error(transparent)]
    Links(#[from] LinksError),
    /// Reading a results file failed. (Not transparent: [`report`] sees the results error in
    /// the chain.)
    #[error("{0}")]
    Results(#[from] ResultsError),
    /// This build lacks the `mpi` feature that `run` needs (an unusable environment).
    #[error("this scalebench was built without MPI (no `mpi` feature), so it can plan, report and compare but not run: rebuild with default features")]
    NoMpi,
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::NoMpi => EXIT_BAD_INPUT,
            Error::Plan(e) => e.exit_code(),
            Error::Launch(e) => e.exit_code(),
            Error::Run(e) => e.exit_code(),
            Error::Report(e) => e.exit_code(),
            Error::Compare(e) => e.exit_code(),
            Error::Topo(e) => e.exit_code(),
            Error::History(e) => e.exit_code(),
            Error::Ceilings(e) => e.exit_code(),
            Error::Links(e) => e.exit_code(),
            Error::Results(ResultsError::Io { .. }) => EXIT_RUNTIME,
            Error::Results(_) => EXIT_BAD_INPUT,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;
    use std::path::PathBuf;

    fn io() -> std::io::Error {
        std::io::Error::from(std::io::ErrorKind::PermissionDenied)
    }

    /// The exit code follows from the layer's variant: bad input 2, a failure while running 4.
    #[test]
    fn exit_codes_follow_the_variant() {
        let results_io = || ResultsError::Io {
            path: PathBuf::from("r.json"),
            source: io(),
        };
        assert_eq!(Error::from(results_io()).exit_code(), EXIT_RUNTIME);
        assert_eq!(Error::from(PlanError::NoIters).exit_code(), EXIT_BAD_INPUT);
        let unreadable_plan = PlanError::PlanUnreadable(results_io());
        assert_eq!(Error::from(unreadable_plan).exit_code(), EXIT_BAD_INPUT);
        let write = ReportError::Io {
            path: PathBuf::from("out"),
            source: io(),
        };
        assert_eq!(Error::from(write).exit_code(), EXIT_RUNTIME);
        assert_eq!(
            Error::from(ReportError::NoInputs).exit_code(),
            EXIT_BAD_INPUT
        );
        assert_eq!(
            Error::from(CompareError::Panicked).exit_code(),
            EXIT_RUNTIME
        );
        assert_eq!(Error::from(RunError::NoCuda).exit_code(), EXIT_BAD_INPUT);
        assert_eq!(
            Error::from(RunError::MpiInitialised).exit_code(),
            EXIT_RUNTIME
        );
        let tool = crate::launch::submit::ToolError::Spawn {
            program: "sbatch".into(),
            source: io(),
        };
        assert_eq!(
            Error::from(LaunchError::CheckJobs(tool)).exit_code(),
            EXIT_BAD_INPUT
        );
        assert_eq!(Error::NoMpi.exit_code(), EXIT_BAD_INPUT);
    }

    /// A wrapped error keeps its cause, typed, and its message still quotes it.
    #[test]
    fn causes_are_kept() {
        let e = Error::from(ReportError::Io {
            path: PathBuf::from("out/report.html"),
            source: io(),
        });
        let cause = e.source().expect("the I/O error is kept");
        assert!(cause.downcast_ref::<std::io::Error>().is_some());
        assert!(e.to_string().ends_with(&cause.to_string()), "{e}");
        let e = Error::from(PlanError::PlanUnreadable(ResultsError::Missing {
            path: PathBuf::from("p.json"),
        }));
        let cause = e.source().expect("the results error is kept");
        assert!(cause.downcast_ref::<ResultsError>().is_some());
        assert_eq!(e.to_string(), format!("--plan {cause}"));
    }
}
