//! The crate's error type and the process exit codes it maps to.
//!
//! Exit codes (documented in README and `--help`):
//! - 0: success;
//! - 1: `compare` found a regression;
//! - 2: bad input (options, spec, results file) or an unusable environment; the message names
//!   the option, file or line and the fix;
//! - 3: wrong results or failed cases (the results file is still written);
//! - 4: a runtime failure (I/O while writing results, a launcher that could not start).

use crate::results::io::ResultsError;

/// Exit code for success.
pub const EXIT_OK: u8 = 0;
/// Exit code when `compare` finds a regression.
pub const EXIT_REGRESSION: u8 = 1;
/// Exit code for bad input or an unusable environment.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for wrong results or failed cases.
pub const EXIT_CASES_FAILED: u8 = 3;
/// Exit code for runtime failures.
pub const EXIT_RUNTIME: u8 = 4;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user asked for something impossible; the message says how to fix it.
    #[error("{0}")]
    Input(String),
    /// The machine cannot do what was asked (no MPI, no CUDA driver, ...).
    #[error("{0}")]
    Environment(String),
    /// Reading a results file failed.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// Something failed while running (I/O, a launcher).
    #[error("{0}")]
    Runtime(String),
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) | Error::Environment(_) => EXIT_BAD_INPUT,
            Error::Results(ResultsError::Io { .. }) => EXIT_RUNTIME,
            Error::Results(_) => EXIT_BAD_INPUT,
            Error::Runtime(_) => EXIT_RUNTIME,
        }
    }

    pub fn input(msg: impl Into<String>) -> Self {
        Error::Input(msg.into())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Set once an error has been printed (by rank 0 of an MPI job, before `MPI_Finalize`), so
/// `main` does not print it again.
static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints `e` and its causes on stderr, the way every command reports a failure.
pub fn report(e: &Error) {
    // Messages quote input (a case id, a device name): shown, never acting on the terminal.
    let shown = |s: String| crate::present::untrusted::visible(&s).into_owned();
    eprintln!("scalebench: error: {}", shown(e.to_string()));
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        eprintln!("  caused by: {}", shown(s.to_string()));
        src = s.source();
    }
    REPORTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether [`report`] has printed an error in this process.
pub fn reported() -> bool {
    REPORTED.load(std::sync::atomic::Ordering::SeqCst)
}
