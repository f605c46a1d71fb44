//! A launch whose ranks already reported a fatal MPI error: found in its `stderr.log`, so the
//! job's watcher (`scalebench watch-launch`) ends it early instead of letting the other ranks
//! wait to the launch's time limit, and `status` shows the line while it still runs.
//!
//! Under `srun` a rank that aborts does not end its step's other tasks (Slurm's default is
//! not `--kill-on-bad-exit`), and Open MPI's error handler prints before it aborts, so these
//! lines are the first sign; the watcher still waits a grace period, so a launch that ends by
//! itself records its own end.

use std::path::Path;
use std::time::{Duration, Instant};

/// Lines Open MPI, PMIx and MPICH print when a rank met an error it cannot continue from.
const FATAL: &[&str] = &[
    "Error in MPI_",
    "An error occurred in MPI_",
    "MPI_ERRORS_ARE_FATAL",
    "PMIX ERROR",
    "MPI_ABORT was invoked",
    "unable to reach each other for MPI communications",
    "Fatal error in PMPI_",
    "Fatal error in MPI_",
];

/// Pure: the first line of `text` that reports a fatal MPI error, trimmed.
pub(crate) fn fatal_mpi_line(text: &str) -> Option<&str> {
    text.lines()
        .find(|l| FATAL.iter().any(|f| l.contains(f)))
        .map(str::trim)
}

/// The fatal line of `stderr.log` in `dir`, if any (the file's first 4 MiB: the line comes
/// early, and a runaway log must not be read whole every poll).
pub(crate) fn fatal_in(dir: &Path) -> Option<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    let f = std::fs::File::open(dir.join("stderr.log")).ok()?;
    f.take(4 << 20).read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).replace('\0', "");
    fatal_mpi_line(&text).map(str::to_string)
}

/// What the watcher did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Watched {
    /// The launch ended by itself.
    Ended,
    /// A fatal line appeared and the launch was still running after the grace period: it was
    /// sent SIGTERM.
    Stopped(String),
}

/// Watches the launch `pid` (the `timeout` wrapping the launcher, which passes SIGTERM on to
/// it): once `stderr.log` in `dir` holds a fatal MPI line and the launch is still running
/// `grace` later, ends it and records the line in `dir/fatal.txt` (finish-launch names it).
pub(crate) fn watch(dir: &Path, pid: u32, grace: Duration, poll: Duration) -> Watched {
    let alive = || Path::new(&format!("/proc/{pid}")).exists() && !zombie(pid);
    while alive() {
        if let Some(line) = fatal_in(dir) {
            let t0 = Instant::now();
            while alive() && t0.elapsed() < grace {
                std::thread::sleep(poll);
            }
            if !alive() {
                return Watched::Ended;
            }
            let _ = std::fs::write(dir.join(FATAL_FILE), format!("{line}\n"));
            // SAFETY: kill(2) with a pid this job started and a valid signal number.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
            return Watched::Stopped(line);
        }
        std::thread::sleep(poll);
    }
    Watched::Ended
}

/// Written by the watcher when it ended a launch: the fatal line it saw.
pub(crate) const FATAL_FILE: &str = "fatal.txt";

/// Whether `pid` has exited but not been reaped (a zombie counts as gone).
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fatal_lines_of_open_mpi_and_pmix_are_found_and_ordinary_ones_are_not() {
        let isend = "hello\n[n1:123] *** An error occurred in MPI_Isend\n[n1:123] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,\n";
        assert_eq!(
            fatal_mpi_line(isend),
            Some("[n1:123] *** An error occurred in MPI_Isend")
        );
        assert_eq!(
            fatal_mpi_line("[n2:9] PMIX ERROR: UNREACHABLE in file server.c\n"),
            Some("[n2:9] PMIX ERROR: UNREACHABLE in file server.c")
        );
        assert_eq!(
            fatal_mpi_line("Error in MPI_Isend: x"),
            Some("Error in MPI_Isend: x")
        );
        for calm in [
            "",
            "scalebench: case 3 of 8 done\n",
            "srun: job 12 queued and waiting for resources\n",
            "MPI_Init took 2.1 s\n",
        ] {
            assert_eq!(fatal_mpi_line(calm), None, "{calm:?}");
        }
    }

    #[test]
    fn the_watcher_stops_a_launch_that_keeps_running_after_a_fatal_line() {
        let dir = std::env::temp_dir().join(format!("sb-fatal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("stderr.log"),
            "*** An error occurred in MPI_Isend\n",
        )
        .unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let got = watch(
            &dir,
            child.id(),
            Duration::from_millis(200),
            Duration::from_millis(50),
        );
        let status = child.wait().unwrap();
        assert_eq!(
            got,
            Watched::Stopped("*** An error occurred in MPI_Isend".into())
        );
        assert!(!status.success(), "the launch was ended");
        assert!(std::fs::read_to_string(dir.join(FATAL_FILE))
            .unwrap()
            .contains("MPI_Isend"));
        // A launch that ends by itself within the grace is left to record its own end.
        let mut quick = std::process::Command::new("sleep")
            .arg("0.1")
            .spawn()
            .unwrap();
        let pid = quick.id();
        let waiter = std::thread::spawn(move || quick.wait());
        let got = watch(&dir, pid, Duration::from_secs(5), Duration::from_millis(20));
        assert_eq!(got, Watched::Ended);
        assert!(waiter.join().unwrap().unwrap().success());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
