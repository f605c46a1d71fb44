//! How the process ends: the exit codes (listed in [`crate::error`]) and the report of an
//! error on stderr. Below every layer, so that each layer's error can say its own code.

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

/// Set once an error has been printed (by rank 0 of an MPI job, before `MPI_Finalize`), so
/// `main` does not print it again.
static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints `e` on stderr, the way every command reports a failure (its causes stay in the
/// chain; see below for the one whose causes are printed too).
pub fn report(e: &(dyn std::error::Error + 'static)) {
    // Messages quote input (a case id, a device name): shown, never acting on the terminal.
    let shown = |s: String| crate::present::untrusted::visible(&s).into_owned();
    let message = e.to_string();
    eprintln!("scalebench: error: {}", shown(message.clone()));
    // Every error keeps its causes (`source()`), and each message already quotes the ones a
    // reader needs, so they are not printed again; only a results file's I/O error that is the
    // whole message has always been followed by its causes, and still is.
    let mut parent = e;
    let mut src = e.source();
    let mut below_results_io = false;
    while let Some(s) = src {
        below_results_io |= matches!(
            parent.downcast_ref::<ResultsError>(),
            Some(ResultsError::Io { .. })
        ) && parent.to_string() == message;
        if below_results_io {
            eprintln!("  caused by: {}", shown(s.to_string()));
        }
        parent = s;
        src = s.source();
    }
    REPORTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether [`report`] has printed an error in this process.
pub fn reported() -> bool {
    REPORTED.load(std::sync::atomic::Ordering::SeqCst)
}
