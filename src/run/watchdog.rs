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
//!
//! Rank 0 stuck too (its watchdog blocked, the process stopped): the first other rank that
//! sees no state of rank 0 within twice the grace claims the lead (`.watchdog/lead`, created
//! exclusively), diagnoses, keeps the finished cases from the journal and ends the job. With
//! G = [`gather_grace`] (half of `--op-timeout`, within 1–5 s) the job ends by `--op-timeout`
//! + G when rank 0's watchdog works and by `--op-timeout` + 3G when it does not.
//!
//! The thread is fully started before [`Watchdog::start`] returns (see [`warm_up`]): a thread
//! still starting when the main thread enters `dlopen` (a BLAS named by SCALEBENCH_BLAS that is
//! a FIFO, or whose constructor hangs) blocks on the loader's lock and never fires.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Exit code of a job the watchdog ended (a runtime failure, as README documents).
pub(crate) const EXIT_WATCHDOG: i32 = 4;

/// How long the rank that ends the job waits for the other ranks' states once its deadline
/// has passed: half the limit, at least 1 s (states are files, maybe on a network file
/// system) and at most 5 s. The other ranks wait 2× this for rank 0's state before one of
/// them takes the lead.
pub(crate) fn gather_grace(limit: Duration) -> Duration {
    (limit / 2).clamp(Duration::from_secs(1), Duration::from_secs(5))
}

/// How long [`Watchdog::start`] waits for its thread to be ready (it takes microseconds; the
/// bound only keeps a broken system from hanging the start-up here instead).
const READY_WAIT: Duration = Duration::from_secs(10);

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
    let ranks = |v: &[u32]| if v.len() == 1 { "rank" } else { "ranks" };
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
                "{} {} had not arrived at control step {reached}, where {} {} wait",
                ranks(&late_list),
                list(&late_list),
                ranks(&waiting),
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
            "no answer from {} {} (dead, stuck before its watchdog started, or the run directory is not shared with its node)",
            ranks(&silent),
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
    /// Set by the thread once [`warm_up`] is done.
    ready: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// What the rank that ends the job (rank 0, or the rank that took the lead) does with the
/// diagnosis before the job is aborted: keep finished results. It returns the sentence saying
/// where they were kept, for the message.
pub(crate) type OnExpiry = Box<dyn FnOnce(&str, &str) -> Option<String> + Send>;

/// The watchdog thread of one rank; stops when dropped.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the thread and returns once it is ready ([`warm_up`]), so that nothing it needs
    /// later waits for the dynamic loader. `on_expiry(what, diagnosis)` runs on the rank that
    /// ends the job. `watch_parent`: exit when the parent (the launcher's process on this
    /// node) goes away; off for a rank started alone, whose parent is a shell that may exit
    /// without harm (`nohup`).
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
            .spawn(move || {
                let me = Me {
                    rank,
                    size,
                    host: warm_up(),
                };
                s.state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .ready = true;
                s.wake.notify_all();
                watch(&s, &me, watch_parent.then_some(parent), on_expiry)
            })
            .ok();
        let w = Watchdog { shared, thread };
        if w.thread.is_some() {
            let st = w.lock();
            let _ = w
                .shared
                .wake
                .wait_timeout_while(st, READY_WAIT, |st| !st.ready);
        }
        w
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

/// Who this watchdog is, known before any deadline.
struct Me {
    rank: u32,
    size: u32,
    host: String,
}

/// Does once, at thread start, what the thread would otherwise do for the first time when a
/// deadline passes, while the main thread may hold the dynamic loader's lock inside `dlopen`:
/// registering a thread-local destructor (glibc's `__cxa_thread_atexit_impl` takes that lock),
/// the thread's own handle, the stderr path and the host name. Returns the host name.
fn warm_up() -> String {
    thread_local! {
        // A thread-local with a destructor: its first use registers the destructor.
        static TOUCHED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    TOUCHED.with(|t| t.borrow_mut().push(1));
    let _ = std::thread::current().name().map(str::len);
    let _ = std::os::unix::process::parent_id();
    eprint!("");
    let _ = Instant::now();
    crate::topology::hostname()
}

fn watch(shared: &Shared, me: &Me, parent: Option<u32>, mut on_expiry: Option<OnExpiry>) {
    let rank = me.rank;
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
            .map(|a| (a.what.clone(), a.limit, a.since.elapsed() - a.limit));
        if let Some((what, limit, overdue)) = expired {
            let dir = st.report_dir.clone();
            drop(st);
            if overdue > gather_grace(limit) && me.size > 1 {
                // This thread did not run when its deadline passed (the process was stopped,
                // then continued, as mpirun does before it kills a job): another rank has had
                // time to end the job. Writing a state now would only leave `.watchdog/` behind
                // in a job about to be killed; if no one ends it, this rank goes on below.
                std::thread::sleep(3 * gather_grace(limit));
            }
            expire(me, &what, limit, dir, on_expiry.take());
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

/// The deadline of `what` passed: exchange states; rank 0 (or, when rank 0 does not answer,
/// the first other rank to claim the lead) diagnoses, keeps what finished and ends the job.
fn expire(
    me: &Me,
    what: &str,
    limit: Duration,
    dir: Option<PathBuf>,
    on_expiry: Option<OnExpiry>,
) -> ! {
    let mine = RankState {
        rank: me.rank,
        host: me.host.clone(),
        pid: std::process::id(),
        control_steps: crate::comm::steps::entered(),
        in_control: crate::comm::steps::inside(),
    };
    if let Some(d) = &dir {
        let _ = std::fs::create_dir_all(d);
        if let Ok(bytes) = serde_json::to_vec(&mine) {
            let _ = crate::results::io::write_atomic(&state_file(d, me.rank), &bytes);
        }
    }
    let header = format!(
        "scalebench: watchdog: {what} did not finish within --op-timeout {:.0} s",
        limit.as_secs_f64()
    );
    let grace = gather_grace(limit);
    let mut lead_note = String::new();
    if me.rank != 0 {
        let rank0_answered = match dir.as_deref() {
            Some(d) => wait_until(2 * grace, || {
                state_file(d, 0).exists() || lead_file(d).exists()
            }),
            // No exchange yet (start-up): rank 0 gathers nothing and ends the job at once.
            None => {
                std::thread::sleep(2 * grace);
                false
            }
        };
        if rank0_answered || !claim_lead(dir.as_deref()) {
            // Rank 0 (or another rank) ends the job; if it cannot (it died), this rank does.
            std::thread::sleep(3 * grace);
            eprintln!(
                "{header}; the rank that took the lead did not end the job, so rank {} does (exit {EXIT_WATCHDOG})",
                me.rank
            );
            clean_up(dir.as_deref());
            abort_job();
        }
        lead_note = format!(
            "rank 0 did not answer within {:.0} s (its watchdog is blocked too, or the process is stopped), so rank {} ends the job. ",
            (2 * grace).as_secs_f64(),
            me.rank
        );
    } else if !claim_lead(dir.as_deref()) {
        // Another rank saw no state of rank 0 in time and leads: it ends the job.
        std::thread::sleep(3 * grace);
        clean_up(dir.as_deref());
        abort_job();
    }
    let opening = format!("{header}: {lead_note}");
    lead(me, mine, &opening, grace, what, dir, on_expiry)
}

/// The rank that ends the job: gathers the states, diagnoses, keeps what finished, cleans the
/// exchange directory up and aborts.
fn lead(
    me: &Me,
    mine: RankState,
    opening: &str,
    grace: Duration,
    what: &str,
    dir: Option<PathBuf>,
    on_expiry: Option<OnExpiry>,
) -> ! {
    let mut states: Vec<Option<RankState>> = vec![None; me.size as usize];
    states[me.rank as usize] = Some(mine);
    if let Some(d) = &dir {
        wait_until(grace, || {
            for (r, s) in states.iter_mut().enumerate() {
                if s.is_none() {
                    *s = std::fs::read(state_file(d, r as u32))
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok());
                }
            }
            states.iter().all(Option::is_some)
        });
    }
    let diagnosis = diagnose(&states);
    let kept = on_expiry.and_then(|f| f(what, &diagnosis));
    clean_up(dir.as_deref());
    eprintln!(
        "{opening}{diagnosis}. {}Ending the job (MPI_Abort, exit {EXIT_WATCHDOG}); raise --op-timeout if the case is merely slow.",
        kept.map(|k| format!("{k} "))
            .unwrap_or_else(|| "No results file was written (no launch had started, or the run directory is not shared with this rank). ".into())
    );
    abort_job()
}

/// Polls `done` every tick until it holds or `limit` passes; whether it held.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if done() {
            return true;
        }
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(TICK);
    }
}

fn lead_file(dir: &std::path::Path) -> PathBuf {
    dir.join("lead")
}

/// Claims the lead (the file is created exclusively, so one rank wins); without a directory
/// there is no one to race.
fn claim_lead(dir: Option<&std::path::Path>) -> bool {
    let Some(d) = dir else {
        return true;
    };
    let _ = std::fs::create_dir_all(d);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(lead_file(d))
        .is_ok()
}

/// Removes the state exchange (`<out>/.watchdog`), so nothing of it is left in `--out`.
fn clean_up(dir: Option<&std::path::Path>) {
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
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
    fn the_grace_scales_with_the_limit_within_bounds() {
        let g = |s: f64| gather_grace(Duration::from_secs_f64(s)).as_secs_f64();
        assert_eq!(g(0.5), 1.0);
        assert_eq!(g(3.0), 1.5);
        assert_eq!(g(600.0), 5.0);
    }

    #[test]
    fn one_rank_claims_the_lead() {
        let d = std::env::temp_dir().join(format!("sb-lead-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        assert!(claim_lead(Some(&d)));
        assert!(!claim_lead(Some(&d)));
        clean_up(Some(&d));
        assert!(!d.exists());
        assert!(claim_lead(None));
    }

    #[test]
    fn names_the_ranks_that_had_not_arrived() {
        let d = diagnose(&[st(0, 41, false), st(1, 42, true), st(2, 42, true)]);
        assert!(
            d.starts_with("rank 0 had not arrived at control step 42, where ranks 1-2 wait"),
            "{d}"
        );
        assert!(
            d.contains("rank 0 (h pid 100): busy in its own work after control step 41"),
            "{d}"
        );
        let d = diagnose(&[st(0, 42, true), None, st(2, 40, true)]);
        assert!(d.starts_with("ranks 1-2 had not arrived"), "{d}");
        assert!(d.contains("waiting at an earlier control step"), "{d}");
        assert!(d.contains("no answer from rank 1"), "{d}");
        let d = diagnose(&[st(0, 7, false), st(1, 7, false)]);
        assert!(d.starts_with("no rank is waiting at a control step"), "{d}");
        let d = diagnose(&[st(0, 7, true), st(1, 7, true)]);
        assert!(
            d.starts_with("every rank is waiting at control step 7"),
            "{d}"
        );
    }
}
