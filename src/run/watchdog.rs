//! The watchdog of `scalebench run`: a thread per rank that turns a hang into a diagnosis and
//! exit 4, and ends a rank whose launcher died.
//!
//! The main thread arms a deadline before each step that could block forever (start-up, each
//! case) and disarms it after; the timing loop is not touched. Every control-plane collective
//! ([`crate::comm::mpi::MpiComm`]) counts itself ([`crate::comm::steps`]), so when a deadline
//! passes each rank knows whether it is waiting at a control step (it arrived) or is still in
//! its own work (it did not arrive). Ranks write that state to `<out>/.watchdog/rank-N.json`
//! (a file, because the main threads are blocked in MPI and the thread level forbids a second
//! thread calling it); rank 0 reads them, names the ranks that had not arrived, keeps what
//! finished (the closure given to [`Watchdog::start`]) and ends the job with `MPI_Abort(4)`.
//! Independently, a rank whose parent process changes (the launcher was killed and the rank
//! was re-parented) exits at once instead of spinning as an orphan.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Exit code of a job the watchdog ended (a runtime failure, as README documents).
pub(crate) const EXIT_WATCHDOG: i32 = 4;

/// How long rank 0 waits for the other ranks' states once its deadline has passed.
const GATHER_GRACE: Duration = Duration::from_secs(5);

/// How often the thread looks at the deadline and the parent process.
const TICK: Duration = Duration::from_millis(250);

/// One rank's state when its deadline passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RankState {
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    /// Control-plane collectives this rank had entered.
    pub control_steps: u64,
    /// Whether it was waiting inside one of them.
    pub in_control: bool,
}

/// Which ranks had arrived at the step the job is stuck in, from every rank's state (`None`:
/// the rank did not answer). Pure, so the wording is tested without a hang.
pub(crate) fn diagnose(states: &[Option<RankState>]) -> String {
    let reached = states
        .iter()
        .flatten()
        .map(|s| s.control_steps)
        .max()
        .unwrap_or(0);
    let waiting: Vec<u32> = states
        .iter()
        .flatten()
        .filter(|s| s.in_control && s.control_steps == reached)
        .map(|s| s.rank)
        .collect();
    let late: Vec<&RankState> = states
        .iter()
        .flatten()
        .filter(|s| !(s.in_control && s.control_steps == reached))
        .collect();
    let silent: Vec<u32> = states
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(r, _)| r as u32)
        .collect();
    let list = |v: &[u32]| crate::topology::affinity::format_cpulist(v);
    let mut parts = Vec::new();
    if waiting.is_empty() {
        parts.push(
            "no rank is waiting at a control step: every rank that answered is inside the case's own operations (a data-plane collective or a computation)"
                .to_string(),
        );
    } else {
        let mut late_list: Vec<u32> = late
            .iter()
            .map(|s| s.rank)
            .chain(silent.iter().copied())
            .collect();
        late_list.sort_unstable();
        if late_list.is_empty() {
            parts.push(format!(
                "every rank is waiting at control step {reached} (ranks {}): the collective itself does not complete",
                list(&waiting)
            ));
        } else {
            parts.push(format!(
                "rank(s) {} had not arrived at control step {reached}, where rank(s) {} wait",
                list(&late_list),
                list(&waiting)
            ));
        }
    }
    for s in &late {
        parts.push(format!(
            "rank {} ({} pid {}): {} after control step {}",
            s.rank,
            s.host,
            s.pid,
            if s.in_control {
                "waiting at an earlier control step"
            } else {
                "busy in its own work"
            },
            s.control_steps
        ));
    }
    if !silent.is_empty() {
        parts.push(format!(
            "no answer from rank(s) {} (dead, stuck before its watchdog started, or the run directory is not shared with its node)",
            list(&silent)
        ));
    }
    parts.join("; ")
}

struct Armed {
    what: String,
    since: Instant,
    limit: Duration,
}

#[derive(Default)]
struct State {
    armed: Option<Armed>,
    report_dir: Option<PathBuf>,
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// What rank 0 does with the diagnosis before the job is aborted: keep finished results.
/// It returns where they were kept, for the message.
pub(crate) type OnExpiry = Box<dyn FnOnce(&str, &str) -> Option<String> + Send>;

/// The watchdog thread of one rank; stops when dropped.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the thread. `on_expiry(what, diagnosis)` runs on rank 0 only. `watch_parent`:
    /// exit when the parent (the launcher's process on this node) goes away; off for a rank
    /// started alone, whose parent is a shell that may exit without harm (`nohup`).
    pub(crate) fn start(
        rank: u32,
        size: u32,
        watch_parent: bool,
        on_expiry: Option<OnExpiry>,
    ) -> Watchdog {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let parent = std::os::unix::process::parent_id();
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("scalebench-watchdog".into())
            .spawn(move || watch(&s, rank, size, watch_parent.then_some(parent), on_expiry))
            .ok();
        Watchdog { shared, thread }
    }

    /// Where ranks exchange their states (`<out>/.watchdog`), once the run directory is known.
    pub(crate) fn set_report_dir(&self, dir: PathBuf) {
        self.lock().report_dir = Some(dir);
    }

    /// Expects `what` to finish within `limit`.
    pub(crate) fn arm(&self, what: String, limit: Duration) {
        self.lock().armed = Some(Armed {
            what,
            since: Instant::now(),
            limit,
        });
    }

    pub(crate) fn disarm(&self) {
        self.lock().armed = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn watch(
    shared: &Shared,
    rank: u32,
    size: u32,
    parent: Option<u32>,
    mut on_expiry: Option<OnExpiry>,
) {
    let mut st = shared
        .state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        if st.stop {
            return;
        }
        if let Some(parent) = parent.filter(|p| std::os::unix::process::parent_id() != *p) {
            eprintln!(
                "scalebench: rank {rank}: its launcher (parent pid {parent}) is gone: exiting instead of running on as an orphan"
            );
            // SAFETY: _exit ends every thread of the process at once and never returns, so no
            // Rust code observes the main thread's state half-done. It is chosen over `exit` so
            // that no library's exit handler runs in a job whose launcher is gone.
            unsafe { libc::_exit(EXIT_WATCHDOG) };
        }
        let expired = st
            .armed
            .as_ref()
            .filter(|a| a.since.elapsed() > a.limit)
            .map(|a| (a.what.clone(), a.limit));
        if let Some((what, limit)) = expired {
            let dir = st.report_dir.clone();
            drop(st);
            expire(rank, size, &what, limit, dir, on_expiry.take());
        }
        st = shared
            .wake
            .wait_timeout(st, TICK)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}

fn state_file(dir: &std::path::Path, rank: u32) -> PathBuf {
    dir.join(format!("rank-{rank}.json"))
}

/// The deadline of `what` passed: exchange states, diagnose (rank 0), abort the job.
fn expire(
    rank: u32,
    size: u32,
    what: &str,
    limit: Duration,
    dir: Option<PathBuf>,
    on_expiry: Option<OnExpiry>,
) -> ! {
    let me = RankState {
        rank,
        host: crate::topology::hostname(),
        pid: std::process::id(),
        control_steps: crate::comm::steps::entered(),
        in_control: crate::comm::steps::inside(),
    };
    if let Some(d) = &dir {
        let _ = std::fs::create_dir_all(d);
        if let Ok(bytes) = serde_json::to_vec(&me) {
            let _ = crate::results::io::write_atomic(&state_file(d, rank), &bytes);
        }
    }
    let header = format!(
        "scalebench: watchdog: {what} did not finish within --op-timeout {:.0} s",
        limit.as_secs_f64()
    );
    if rank != 0 {
        // Rank 0 ends the job; if it cannot (it died), this rank does.
        std::thread::sleep(GATHER_GRACE * 3);
        eprintln!(
            "{header}; rank 0 did not end the job, so rank {rank} does (exit {EXIT_WATCHDOG})"
        );
        abort_job();
    }
    let mut states: Vec<Option<RankState>> = vec![None; size as usize];
    states[0] = Some(me);
    if let Some(d) = &dir {
        let t0 = Instant::now();
        loop {
            for (r, s) in states.iter_mut().enumerate().skip(1) {
                if s.is_none() {
                    *s = std::fs::read(state_file(d, r as u32))
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok());
                }
            }
            if states.iter().all(Option::is_some) || t0.elapsed() > GATHER_GRACE {
                break;
            }
            std::thread::sleep(TICK);
        }
        let _ = std::fs::remove_dir_all(d);
    }
    let diagnosis = diagnose(&states);
    let kept = on_expiry.and_then(|f| f(what, &diagnosis));
    eprintln!(
        "{header}: {diagnosis}. {}Ending the job (MPI_Abort, exit {EXIT_WATCHDOG}); raise --op-timeout if the case is merely slow.",
        kept.map(|k| format!("Finished cases are kept in {k}. "))
            .unwrap_or_default()
    );
    abort_job()
}

/// Ends every rank of the job with exit 4.
pub(crate) fn abort_job() -> ! {
    // SAFETY: MPI is up: the only callers run inside `job::run_in_world`, after MPI_Init and
    // before the Universe's drop calls MPI_Finalize (the watchdog thread is joined first).
    // RSMPI_COMM_WORLD is a valid handle then. MPI_Abort does not return on success; Open MPI
    // accepts it from any thread, although below MPI_THREAD_MULTIPLE the standard does not
    // promise it: the main thread is stuck in the call that timed out and cannot be asked.
    unsafe {
        mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, EXIT_WATCHDOG);
    }
    std::process::exit(EXIT_WATCHDOG)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(rank: u32, steps: u64, in_control: bool) -> Option<RankState> {
        Some(RankState {
            rank,
            host: "h".into(),
            pid: 100 + rank,
            control_steps: steps,
            in_control,
        })
    }

    #[test]
    fn names_the_ranks_that_had_not_arrived() {
        let d = diagnose(&[st(0, 41, false), st(1, 42, true), st(2, 42, true)]);
        assert!(
            d.starts_with("rank(s) 0 had not arrived at control step 42, where rank(s) 1-2 wait"),
            "{d}"
        );
        assert!(
            d.contains("rank 0 (h pid 100): busy in its own work after control step 41"),
            "{d}"
        );
        let d = diagnose(&[st(0, 42, true), None, st(2, 40, true)]);
        assert!(d.starts_with("rank(s) 1-2 had not arrived"), "{d}");
        assert!(d.contains("waiting at an earlier control step"), "{d}");
        assert!(d.contains("no answer from rank(s) 1"), "{d}");
        let d = diagnose(&[st(0, 7, false), st(1, 7, false)]);
        assert!(d.starts_with("no rank is waiting at a control step"), "{d}");
        let d = diagnose(&[st(0, 7, true), st(1, 7, true)]);
        assert!(
            d.starts_with("every rank is waiting at control step 7"),
            "{d}"
        );
    }
}
