//! Persistent worker threads for the hybrid CPU backend, synchronised by a barrier that spins
//! before it parks.
//!
//! A hybrid collective is a few shared-memory phases separated by barriers. A thread pool
//! built for throughput (rayon) parks idle workers and wakes them through a condition variable:
//! tens of µs per hand-off on a loaded machine, which a latency benchmark would then measure
//! instead of the launch topology. Here the calling thread is worker 0 (the rank's own thread,
//! which also makes every MPI call), the other workers live as long as the backend, bound to
//! their CPUs, and a sense-reversing barrier spins for [`SPIN`] before it sleeps on a futex.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a waiting thread spins before it parks: long enough to cover the gaps between
/// operations of a timing loop and a small message's MPI call, short enough that idle workers
/// give their cores back (to GEMM threads, or other ranks on an oversubscribed node).
pub const SPIN: Duration = Duration::from_micros(200);

/// Pads to its own cache line so that the barrier's words do not share one.
#[repr(align(128))]
struct Padded<T>(T);

/// A reusable barrier for `n` threads. The last thread to arrive flips `sense`; the others
/// wait for the flip, spinning for up to `spin`, then sleeping on `sense` (a futex word).
pub struct SpinBarrier {
    n: u32,
    arrived: Padded<AtomicU32>,
    sense: Padded<AtomicU32>,
    sleepers: Padded<AtomicU32>,
    spin: Duration,
}

impl SpinBarrier {
    pub fn new(n: usize, spin: Duration) -> SpinBarrier {
        SpinBarrier {
            n: n.max(1) as u32,
            arrived: Padded(AtomicU32::new(0)),
            sense: Padded(AtomicU32::new(0)),
            sleepers: Padded(AtomicU32::new(0)),
            spin,
        }
    }

    /// Returns once all `n` threads have called `wait` for this round. Everything a thread
    /// wrote before `wait` is visible to every thread after it.
    pub fn wait(&self) {
        let Some(target) = self.arrive() else {
            return;
        };
        let start = Instant::now();
        let mut spins = 0u32;
        while self.sense.0.load(Ordering::Acquire) != target {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            // Reading the clock costs ~20 ns: look at it every 256 spins only.
            if spins % 256 == 0 && start.elapsed() >= self.spin {
                self.park(target);
                return;
            }
        }
    }

    /// Counts one arrival without waiting: `None` if it completed the round (and released the
    /// others), else the sense to wait for.
    fn arrive(&self) -> Option<u32> {
        // The sense cannot flip before this arrival, so this reads the current round's.
        let target = self.sense.0.load(Ordering::Acquire) ^ 1;
        if self.arrived.0.fetch_add(1, Ordering::AcqRel) + 1 < self.n {
            return Some(target);
        }
        // Reset before the release below, so the next round counts from zero.
        self.arrived.0.store(0, Ordering::Relaxed);
        self.sense.0.store(target, Ordering::SeqCst);
        if self.sleepers.0.load(Ordering::SeqCst) > 0 {
            futex_wake_all(&self.sense.0);
        }
        None
    }

    /// Sleeps until the sense is `target`. SeqCst on `sleepers` and `sense` on both sides: the
    /// waker either sees this sleeper or this thread sees the flip, so no wake-up is lost.
    fn park(&self, target: u32) {
        self.sleepers.0.fetch_add(1, Ordering::SeqCst);
        while self.sense.0.load(Ordering::SeqCst) != target {
            futex_wait(&self.sense.0, target ^ 1);
        }
        self.sleepers.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(target_os = "linux")]
fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind `word` and sleeps only while it still
    // equals `expected`; a spurious return is handled by the caller's loop.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

#[cfg(target_os = "linux")]
fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only wakes threads sleeping on this address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn futex_wait(_word: &AtomicU32, _expected: u32) {
    std::thread::yield_now();
}

#[cfg(not(target_os = "linux"))]
fn futex_wake_all(_word: &AtomicU32) {}

/// What a job sees: its worker index and the team's barrier.
pub struct Ctx<'a> {
    barrier: &'a SpinBarrier,
}

impl Ctx<'_> {
    /// Waits until every worker of the team reached this point of the job.
    pub fn barrier(&self) {
        self.barrier.wait();
    }
}

type Job<'a> = dyn Fn(usize, &Ctx) + Sync + 'a;

struct Shared {
    barrier: SpinBarrier,
    /// The job of the current round: written by worker 0 before the start barrier, read by
    /// the others after it, never touched again before the end barrier.
    job: UnsafeCell<Option<*const Job<'static>>>,
    exit: AtomicBool,
}

// SAFETY: `job` is only accessed as its doc says, with the barrier ordering the accesses.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// `g` workers: the thread that calls [`Team::run`] is worker 0; workers 1.. are threads
/// that live until the team is dropped.
pub struct Team {
    g: usize,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Team {
    /// Starts workers 1..g; `setup(w)` runs first on worker w's thread (to bind it), and on
    /// the calling thread for worker 0.
    pub fn start(
        g: usize,
        spin: Duration,
        setup: impl Fn(usize) + Send + Sync + 'static,
    ) -> std::io::Result<Team> {
        let g = g.max(1);
        let shared = Arc::new(Shared {
            barrier: SpinBarrier::new(g, spin),
            job: UnsafeCell::new(None),
            exit: AtomicBool::new(false),
        });
        let setup = Arc::new(setup);
        setup(0);
        let mut team = Team {
            g,
            shared: shared.clone(),
            threads: Vec::new(),
        };
        for w in 1..g {
            let shared = shared.clone();
            let setup = setup.clone();
            let t = std::thread::Builder::new()
                .name(format!("scalebench-dev{w}"))
                .spawn(move || {
                    setup(w);
                    worker_loop(&shared, w);
                });
            match t {
                Ok(t) => team.threads.push(t),
                Err(e) => {
                    // Workers started so far wait at the start barrier, which now counts a
                    // thread that will never come: stop them one by one instead.
                    team.abandon();
                    return Err(e);
                }
            }
        }
        Ok(team)
    }

    pub fn size(&self) -> usize {
        self.g
    }

    /// Runs `job(w, ctx)` on every worker w (0 on the calling thread) and returns when all
    /// finished. A panic in a job aborts the process: the other workers and the MPI peers
    /// would otherwise wait for it forever.
    pub fn run(&self, job: &(dyn Fn(usize, &Ctx) + Sync)) {
        let ctx = Ctx {
            barrier: &self.shared.barrier,
        };
        if self.g == 1 {
            guarded(|| job(0, &ctx));
            return;
        }
        // SAFETY: the pointer is published before the start barrier and only used by the
        // workers until the end barrier, and `run` does not return before it, so `job` outlives
        // every use; the lifetime is erased only to store it.
        unsafe {
            let p: *const Job<'_> = job;
            *self.shared.job.get() = Some(
                std::mem::transmute::<*const Job<'_>, *const Job<'static>>(p),
            );
        }
        self.shared.barrier.wait();
        guarded(|| job(0, &ctx));
        self.shared.barrier.wait();
    }

    /// Runs `f(w)` on every worker and returns the results in worker order.
    pub fn map<R: Send>(&self, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
        let slots: Vec<Mutex<Option<R>>> = (0..self.g).map(|_| Mutex::new(None)).collect();
        self.run(&|w, _| {
            *slots[w].lock().expect("one writer per slot") = Some(f(w));
        });
        slots
            .into_iter()
            .map(|s| s.into_inner().ok().flatten().expect("every worker ran"))
            .collect()
    }

    /// Stops the spawned workers when the team could not be completed: they wait at the
    /// start barrier for `g` threads, so this thread arrives for itself and for every worker
    /// that never started, with the exit flag set.
    fn abandon(&mut self) {
        self.shared.exit.store(true, Ordering::SeqCst);
        for _ in 0..self.g - self.threads.len() {
            self.shared.barrier.arrive();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn guarded(f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        eprintln!("scalebench: a hybrid worker thread panicked in a collective; aborting");
        std::process::abort();
    }
}

fn worker_loop(shared: &Shared, w: usize) {
    let ctx = Ctx {
        barrier: &shared.barrier,
    };
    loop {
        shared.barrier.wait();
        if shared.exit.load(Ordering::SeqCst) {
            return;
        }
        // SAFETY: see `Shared::job`: set before the start barrier we just passed.
        let job = unsafe { (*shared.job.get()).expect("a job is published before each round") };
        // SAFETY: valid until the end barrier below (see `Team::run`).
        guarded(|| unsafe { (*job)(w, &ctx) });
        shared.barrier.wait();
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        self.shared.exit.store(true, Ordering::SeqCst);
        self.shared.barrier.wait();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn barrier_separates_phases_over_many_rounds() {
        // Each round, every worker writes its slot, meets the others, then checks that it sees
        // every slot of the round: a barrier that let one through early fails the check.
        for spin in [Duration::ZERO, SPIN] {
            let g = 3;
            let team = Team::start(g, spin, |_| {}).unwrap();
            let slots: Vec<AtomicUsize> = (0..g).map(|_| AtomicUsize::new(0)).collect();
            let bad = AtomicUsize::new(0);
            for round in 1..=500 {
                team.run(&|w, t| {
                    slots[w].store(round, Ordering::Relaxed);
                    t.barrier();
                    if slots.iter().any(|s| s.load(Ordering::Relaxed) != round) {
                        bad.fetch_add(1, Ordering::Relaxed);
                    }
                    t.barrier();
                });
            }
            assert_eq!(bad.load(Ordering::Relaxed), 0, "spin {spin:?}");
        }
    }

    #[test]
    fn parked_workers_wake_up() {
        let team = Team::start(2, Duration::from_micros(10), |_| {}).unwrap();
        let hits = AtomicUsize::new(0);
        for _ in 0..5 {
            // Longer than the spin: worker 1 parks, then must be woken for the next job.
            std::thread::sleep(Duration::from_millis(5));
            team.run(&|_, _| {
                hits.fetch_add(1, Ordering::Relaxed);
            });
        }
        assert_eq!(hits.load(Ordering::Relaxed), 10);
    }

    #[test]
    fn map_returns_in_worker_order_from_each_workers_thread() {
        let team = Team::start(3, SPIN, |_| {}).unwrap();
        let me = std::thread::current().id();
        let got = team.map(|w| (w, std::thread::current().id() == me));
        assert_eq!(got, vec![(0, true), (1, false), (2, false)]);
        let one = Team::start(1, SPIN, |_| {}).unwrap();
        assert_eq!(one.map(|w| w + 7), vec![7]);
    }
}
