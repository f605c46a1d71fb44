//! Persistent worker threads for the hybrid CPU backend, synchronised by a barrier that spins
//! before it parks.
//!
//! A hybrid collective is a few shared-memory phases separated by barriers. A thread pool
//! built for throughput (rayon) parks idle workers and wakes them through a condition variable:
//! tens of µs per hand-off on a loaded machine, which a latency benchmark would then measure
//! instead of the launch topology. Here the calling thread is worker 0 (the rank's own thread,
//! which also makes every MPI call), the other workers live as long as the backend, bound to
//! their CPUs, and a sense-reversing (dissemination) barrier spins for [`SPIN`] before it
//! sleeps on a futex.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a waiting thread spins before it parks: long enough to cover the gaps between
/// operations of a timing loop and a small message's MPI call, short enough that idle workers
/// give their cores back (to GEMM threads, or other ranks on an oversubscribed node).
pub const SPIN: Duration = Duration::from_micros(200);

/// Most barrier rounds: teams of up to 2^8 workers.
const MAX_ROUNDS: usize = 8;

/// One thread's barrier flags and job, on cache lines of their own: the thread spins on its
/// own flags, which one partner per round writes, so a round costs one cache-line transfer.
#[repr(align(128))]
struct Slot {
    /// `flags[parity][round]`, set to the episode's sense by this thread's partner in that round.
    flags: [[AtomicU32; MAX_ROUNDS]; 2],
    /// 1 while this thread sleeps on one of its flags.
    parked: AtomicU32,
    /// This thread's parity and sense: touched by this thread only.
    local: UnsafeCell<(usize, u32)>,
    /// The job of the current team round (workers 1..): written by worker 0 before the start
    /// barrier, read by this worker after it, not touched again before the end barrier.
    job: UnsafeCell<Option<*const Job<'static>>>,
}

/// A sense-reversing dissemination barrier (Mellor-Crummey and Scott) for `n` threads, each
/// calling with its own index: in round k, thread i signals thread i + 2^k (mod n) and waits for
/// its own flag; ⌈log2 n⌉ rounds, one cache-line transfer on the critical path per round. A
/// waiting thread spins for `spin`, then sleeps on its flag (a futex word).
pub struct SpinBarrier {
    slots: Box<[Slot]>,
    rounds: usize,
    spin: Duration,
}

// SAFETY: `local` and `job` are accessed as their docs say; everything else is atomic.
unsafe impl Sync for SpinBarrier {}
unsafe impl Send for SpinBarrier {}

impl SpinBarrier {
    pub fn new(n: usize, spin: Duration) -> SpinBarrier {
        let n = n.clamp(1, 1 << MAX_ROUNDS);
        SpinBarrier {
            slots: (0..n)
                .map(|_| Slot {
                    flags: Default::default(),
                    parked: AtomicU32::new(0),
                    local: UnsafeCell::new((0, 1)),
                    job: UnsafeCell::new(None),
                })
                .collect(),
            rounds: n.next_power_of_two().trailing_zeros() as usize,
            spin,
        }
    }

    /// Returns once all threads have called `wait` for this episode. Everything a thread
    /// wrote before `wait` is visible to every thread after it. Each index `me` must be used by
    /// one thread at a time.
    pub fn wait(&self, me: usize) {
        let n = self.slots.len();
        // SAFETY: only thread `me` touches its `local`.
        let (parity, sense) = unsafe { *self.slots[me].local.get() };
        for k in 0..self.rounds {
            let partner = &self.slots[(me + (1 << k)) % n];
            let f = &partner.flags[parity][k];
            f.store(sense, Ordering::SeqCst);
            if partner.parked.load(Ordering::SeqCst) != 0 {
                futex_wake_all(f);
            }
            self.await_flag(&self.slots[me], &self.slots[me].flags[parity][k], sense);
        }
        let next = if parity == 1 {
            (0, sense ^ 1)
        } else {
            (1, sense)
        };
        // SAFETY: as above.
        unsafe { *self.slots[me].local.get() = next };
    }

    fn await_flag(&self, slot: &Slot, flag: &AtomicU32, sense: u32) {
        let start = Instant::now();
        let mut spins = 0u32;
        while flag.load(Ordering::Acquire) != sense {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            // Reading the clock costs ~20 ns: look at it every 256 spins only.
            if spins % 256 == 0 && start.elapsed() >= self.spin {
                // SeqCst on `parked` and the flag on both sides: the signaller either sees
                // this sleeper or this thread sees the flag, so no wake-up is lost.
                slot.parked.store(1, Ordering::SeqCst);
                while flag.load(Ordering::SeqCst) != sense {
                    futex_wait(flag, sense ^ 1);
                }
                slot.parked.store(0, Ordering::SeqCst);
                return;
            }
        }
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

/// What a job sees: the team's barrier, as this worker.
pub struct Ctx<'a> {
    barrier: &'a SpinBarrier,
    me: usize,
}

impl Ctx<'_> {
    /// Waits until every worker of the team reached this point of the job.
    pub fn barrier(&self) {
        self.barrier.wait(self.me);
    }
}

type Job<'a> = dyn Fn(usize, &Ctx) + Sync + 'a;

struct Shared {
    barrier: SpinBarrier,
    exit: AtomicBool,
}

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
        let g = g.clamp(1, 1 << MAX_ROUNDS);
        let shared = Arc::new(Shared {
            barrier: SpinBarrier::new(g, spin),
            exit: AtomicBool::new(false),
        });
        let setup = Arc::new(setup);
        setup(0);
        // Workers wait for a go before they enter the barrier, so a failed start can stop the
        // ones already running.
        let mut gates = Vec::new();
        let mut threads = Vec::new();
        for w in 1..g {
            let (go, gate) = std::sync::mpsc::channel::<bool>();
            let sh = shared.clone();
            let setup = setup.clone();
            let t = std::thread::Builder::new()
                .name(format!("scalebench-dev{w}"))
                .spawn(move || {
                    setup(w);
                    if gate.recv() == Ok(true) {
                        worker_loop(&sh, w);
                    }
                });
            match t {
                Ok(t) => {
                    threads.push(t);
                    gates.push(go);
                }
                Err(e) => {
                    for go in gates {
                        let _ = go.send(false);
                    }
                    for t in threads {
                        let _ = t.join();
                    }
                    return Err(e);
                }
            }
        }
        for go in gates {
            let _ = go.send(true);
        }
        Ok(Team { g, shared, threads })
    }

    pub fn size(&self) -> usize {
        self.g
    }

    /// Runs `job(w, ctx)` on every worker w (0 on the calling thread) and returns when all
    /// finished. A panic in a job aborts the process: the other workers and the MPI peers
    /// would otherwise wait for it forever.
    pub fn run(&self, job: &(dyn Fn(usize, &Ctx) + Sync)) {
        let b = &self.shared.barrier;
        let ctx = Ctx { barrier: b, me: 0 };
        if self.g == 1 {
            guarded(|| job(0, &ctx));
            return;
        }
        // SAFETY: the pointer is published before the start barrier and only used by the
        // workers until the end barrier, and `run` does not return before it, so `job`
        // outlives every use; the lifetime is erased only to store it.
        unsafe {
            let p: *const Job<'_> = job;
            let p = std::mem::transmute::<*const Job<'_>, *const Job<'static>>(p);
            for slot in &b.slots[1..] {
                *slot.job.get() = Some(p);
            }
        }
        b.wait(0);
        guarded(|| job(0, &ctx));
        b.wait(0);
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
}

fn guarded(f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        eprintln!("scalebench: a hybrid worker thread panicked in a collective; aborting");
        std::process::abort();
    }
}

fn worker_loop(shared: &Shared, w: usize) {
    let b = &shared.barrier;
    let ctx = Ctx { barrier: b, me: w };
    loop {
        b.wait(w);
        if shared.exit.load(Ordering::SeqCst) {
            return;
        }
        // SAFETY: see `Slot::job`: set before the start barrier we just passed.
        let job = unsafe { (*b.slots[w].job.get()).expect("a job is published before each round") };
        // SAFETY: valid until the end barrier below (see `Team::run`).
        guarded(|| unsafe { (*job)(w, &ctx) });
        b.wait(w);
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        self.shared.exit.store(true, Ordering::SeqCst);
        self.shared.barrier.wait(0);
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
