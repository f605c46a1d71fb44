//! Persistent worker threads for the hybrid CPU backend, synchronised by one-way flags that spin
//! before they park.
//!
//! A hybrid collective is a few shared-memory phases with synchronisation between them. A
//! thread pool built for throughput (rayon) parks idle workers and wakes them through a
//! condition variable: tens of µs per hand-off on a loaded machine, which a latency benchmark
//! would then measure instead of the launch topology. Here the calling thread is worker 0 (the
//! leader: the rank's own thread, which also makes every MPI call), the other workers live as
//! long as the backend, bound to their CPUs.
//!
//! Synchronisation is leader-centred and needs no read-modify-write on the fast path:
//! - *release*: the leader bumps a sequence number (`go`, on a cache line only it writes, next
//!   to the job pointer); the workers spin on it.
//! - *gather*: each worker stores the number of gathers it passed on its own cache line; the
//!   leader spins until every worker's number has reached its own.
//!
//! A job starts with a release and ends with a gather, so a job without inner phases costs one
//! cache-line transfer each way (leader → workers, workers → leader). A symmetric barrier
//! (`gather` then `release`) sits between phases that read each other's writes; a phase whose
//! only consumer is the leader's MPI call needs just the gather, and the MPI result needs just
//! the release. Threads that wait longer than [`SPIN`] sleep on a futex and are woken by the
//! store they wait for; a team whose workers share a CPU ([`shared_cpus`]) sleeps at once.

use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a waiting thread spins before it parks: long enough to cover the gaps between
/// operations of a timing loop and a small message's MPI call, short enough that idle workers
/// give their cores back (to GEMM threads, or other ranks on an oversubscribed node).
pub(crate) const SPIN: Duration = Duration::from_micros(200);

/// Bytes of a job's captures that travel with the release (see [`Team::run`]).
const INLINE_BYTES: usize = 232;

/// What only the leader writes, on its own cache lines: the release number, the job and its
/// captures come to a worker together.
#[repr(C, align(128))]
struct Lead {
    /// Releases so far (wrapping).
    go: AtomicU32,
    /// The leader sleeps in a gather (workers then wake it after their store).
    parked: AtomicBool,
    exit: AtomicBool,
    /// The job of the current round: written by the leader before the release that starts the
    /// job, read by the workers after it, never touched again before the job's final gather.
    /// It points into `inline` when the job fits there.
    job: UnsafeCell<Option<*const Job<'static>>>,
    /// A copy of the current job when it fits (same rules as `job`).
    inline: UnsafeCell<MaybeUninit<[u64; INLINE_BYTES / 8]>>,
}

/// What only worker w writes, on its own cache line.
#[repr(align(128))]
struct Slot {
    /// Gathers worker w passed (wrapping).
    arrived: AtomicU32,
    /// Worker w sleeps waiting for a release (the leader then wakes it after its store).
    parked: AtomicBool,
}

struct Shared {
    lead: Lead,
    /// One per worker; slot 0 (the leader) is unused.
    slots: Vec<Slot>,
    spin: Duration,
}

// SAFETY: `Lead::job` is only accessed as its doc says, with the release/gather order between
// the accesses; everything else is atomic.
unsafe impl Sync for Shared {}
// SAFETY: what keeps Shared from being Send is the raw job pointer in `Lead::job`; it owns
// nothing (it points at the leader's job or at `inline`, which outlive the round), so moving
// the Arc'd Shared into a worker thread moves no ownership.
unsafe impl Send for Shared {}

/// `a` has reached `b` in wrapping sequence arithmetic (they never drift 2^31 apart).
fn reached(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

impl Shared {
    fn new(g: usize, spin: Duration) -> Shared {
        Shared {
            lead: Lead {
                go: AtomicU32::new(0),
                parked: AtomicBool::new(false),
                exit: AtomicBool::new(false),
                job: UnsafeCell::new(None),
                inline: UnsafeCell::new(MaybeUninit::uninit()),
            },
            slots: (0..g)
                .map(|_| Slot {
                    arrived: AtomicU32::new(0),
                    parked: AtomicBool::new(false),
                })
                .collect(),
            spin,
        }
    }

    /// Leader: publishes release number `n` and wakes the workers that went to sleep.
    fn release(&self, n: u32) {
        // SeqCst store, then SeqCst loads of the parked flags (and SeqCst on the sleeper's side):
        // either a sleeper's re-check sees `n`, or this sees it parked. The store's fence stalls
        // the leader only; the workers see the line as soon as a plain store would show it.
        self.lead.go.store(n, Ordering::SeqCst);
        if self.slots[1..]
            .iter()
            .any(|s| s.parked.load(Ordering::SeqCst))
        {
            futex_wake_all(&self.lead.go);
        }
    }

    /// Worker w: waits for release number `n`.
    fn await_release(&self, w: usize, n: u32) {
        let go = &self.lead.go;
        if spin_until(self.spin, || reached(go.load(Ordering::Acquire), n)) {
            return;
        }
        let parked = &self.slots[w].parked;
        parked.store(true, Ordering::SeqCst);
        loop {
            let now = go.load(Ordering::SeqCst);
            if reached(now, n) {
                break;
            }
            futex_wait(go, now);
        }
        parked.store(false, Ordering::Relaxed);
    }

    /// Worker w: counts its arrival at gather number `n` and wakes a sleeping leader.
    fn arrive(&self, w: usize, n: u32) {
        self.slots[w].arrived.store(n, Ordering::SeqCst);
        if self.lead.parked.load(Ordering::SeqCst) {
            futex_wake_all(&self.slots[w].arrived);
        }
    }

    /// Leader: waits until every worker arrived at gather number `n`.
    fn await_gather(&self, n: u32) {
        for slot in &self.slots[1..] {
            let arrived = &slot.arrived;
            if spin_until(self.spin, || reached(arrived.load(Ordering::Acquire), n)) {
                continue;
            }
            self.lead.parked.store(true, Ordering::SeqCst);
            loop {
                let now = arrived.load(Ordering::SeqCst);
                if reached(now, n) {
                    break;
                }
                futex_wait(arrived, now);
            }
            self.lead.parked.store(false, Ordering::Relaxed);
        }
    }
}

thread_local! {
    /// Spin iterations this thread made while waiting (all teams), so a test can tell a team
    /// that parks at once from one that spins.
    static SPINS: Cell<u64> = const { Cell::new(0) };
}

/// Spin iterations the calling thread has made in [`spin_until`] so far.
#[cfg(test)]
fn spins_so_far() -> u64 {
    SPINS.with(Cell::get)
}

/// Spins until `done()` or `spin` has passed; whether `done()` held. A zero `spin` checks once
/// and returns: threads that share a CPU park at once, since spinning would only hold the
/// CPU from the thread it waits for until the scheduler's time slice ends.
fn spin_until(spin: Duration, done: impl Fn() -> bool) -> bool {
    if spin.is_zero() {
        return done();
    }
    let mut spins = 0u32;
    let mut start = None;
    let count = |n: u32| SPINS.with(|c| c.set(c.get() + u64::from(n)));
    loop {
        if done() {
            count(spins);
            return true;
        }
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        // Reading the clock costs ~20 ns: not before the first 256 spins, then every 256.
        if spins % 256 == 0 {
            let t = *start.get_or_insert_with(Instant::now);
            if t.elapsed() >= spin {
                count(spins);
                return done();
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

/// A thread's count of the releases and gathers it passed; every thread of the team passes
/// the same sequence, so the counts agree without being shared.
#[derive(Default)]
struct Seq {
    released: Cell<u32>,
    gathered: Cell<u32>,
}

impl Seq {
    fn next_release(&self) -> u32 {
        let n = self.released.get().wrapping_add(1);
        self.released.set(n);
        n
    }

    fn next_gather(&self) -> u32 {
        let n = self.gathered.get().wrapping_add(1);
        self.gathered.set(n);
        n
    }
}

/// What a job sees on one thread: the team's synchronisation. Every worker of a job must make
/// the same sequence of calls (the same `gather`/`release`/`barrier`, in the same order).
pub(crate) struct Ctx<'a> {
    shared: &'a Shared,
    w: usize,
    seq: &'a Seq,
}

impl Ctx<'_> {
    /// The workers' writes so far become visible to the leader (worker 0), which waits for
    /// them; the other workers go on without waiting.
    pub(crate) fn gather(&self) {
        let n = self.seq.next_gather();
        if self.w == 0 {
            self.shared.await_gather(n);
        } else {
            self.shared.arrive(self.w, n);
        }
    }

    /// The leader's writes so far become visible to the workers, which wait for them.
    pub(crate) fn release(&self) {
        let n = self.seq.next_release();
        if self.w == 0 {
            self.shared.release(n);
        } else {
            self.shared.await_release(self.w, n);
        }
    }

    /// Waits until every worker reached this point: what any of them wrote before is visible
    /// to all of them after.
    #[cfg(test)]
    pub(crate) fn barrier(&self) {
        self.gather();
        self.release();
    }
}

type Job<'a> = dyn Fn(usize, &Ctx<'_>) + Sync + 'a;

/// The CPUs a team's workers share when they have fewer CPUs between them than workers
/// (`None` when each can have one): `masks[w]` is where worker w may run. Such a team must
/// not spin (see [`spin_until`]): a spinning worker holds the CPU its peer needs.
pub(crate) fn shared_cpus(masks: &[Vec<u32>]) -> Option<Vec<u32>> {
    let all: std::collections::BTreeSet<u32> = masks.iter().flatten().copied().collect();
    (masks.len() > 1 && all.len() < masks.len()).then(|| all.into_iter().collect())
}

/// `g` workers: the thread that calls [`Team::run`] is worker 0; workers 1.. are threads
/// that live until the team is dropped. Not `Sync`: only one thread leads.
pub(crate) struct Team {
    g: usize,
    shared: Arc<Shared>,
    seq: Seq,
    threads: Vec<JoinHandle<()>>,
}

impl Team {
    /// Starts workers 1..g; `setup(w)` runs first on worker w's thread (to bind it), and on
    /// the calling thread for worker 0.
    pub(crate) fn start(
        g: usize,
        spin: Duration,
        setup: impl Fn(usize) + Send + Sync + 'static,
    ) -> std::io::Result<Team> {
        let g = g.max(1);
        let shared = Arc::new(Shared::new(g, spin));
        let setup = Arc::new(setup);
        setup(0);
        let mut team = Team {
            g,
            shared: shared.clone(),
            seq: Seq::default(),
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
                // Dropping the team stops the workers started so far.
                Err(e) => return Err(e),
            }
        }
        Ok(team)
    }

    pub(crate) fn size(&self) -> usize {
        self.g
    }

    /// Runs `job(w, ctx)` on every worker w (0 on the calling thread) and returns when all
    /// finished. A panic in a job aborts the process: the other workers and the MPI peers
    /// would otherwise wait for it forever.
    ///
    /// A job whose captures fit in [`INLINE_BYTES`] is copied next to the release number, so a
    /// worker gets it in the same transfer. Whatever it reaches through its captures costs a
    /// transfer per cache line the leader wrote since the worker last read it: on the timed
    /// path, capture values (`move`) and references to state that is written only when it
    /// changes, not references to the caller's fresh locals.
    pub(crate) fn run<F: Fn(usize, &Ctx<'_>) + Sync + Copy>(&self, job: F) {
        let ctx = Ctx {
            shared: &self.shared,
            w: 0,
            seq: &self.seq,
        };
        if self.g == 1 {
            guarded(|| job(0, &ctx));
            return;
        }
        let lead = &self.shared.lead;
        let p: *const Job<'_> =
            if size_of::<F>() <= INLINE_BYTES && align_of::<F>() <= align_of::<u64>() {
                let slot = lead.inline.get() as *mut F;
                // SAFETY: the slot is big and aligned enough for F (checked above), only the
                // leader writes it, and no worker reads it before the release below (the last
                // job's readers all passed its final gather). F is Copy: no drop is skipped.
                unsafe { slot.write(job) };
                slot
            } else {
                &job
            };
        // SAFETY: the pointer is published before the release that starts the job and only
        // used by the workers until the final gather, and `run` does not return before it, so
        // the job outlives every use; the lifetime is erased only to store it.
        unsafe {
            *lead.job.get() = Some(std::mem::transmute::<*const Job<'_>, *const Job<'static>>(
                p,
            ));
        }
        ctx.release();
        guarded(|| job(0, &ctx));
        ctx.gather();
    }

    /// Runs `f(w)` on every worker and returns the results in worker order.
    pub(crate) fn map<R: Send>(&self, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
        let slots: Vec<Mutex<Option<R>>> = (0..self.g).map(|_| Mutex::new(None)).collect();
        let (slots_ref, f) = (&slots, &f);
        self.run(move |w, _| {
            *slots_ref[w].lock().expect("one writer per slot") = Some(f(w));
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
    let seq = Seq::default();
    let ctx = Ctx {
        shared,
        w,
        seq: &seq,
    };
    loop {
        ctx.release();
        if shared.lead.exit.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: see `Lead::job`: set before the release we just passed.
        let job =
            unsafe { (*shared.lead.job.get()).expect("a job is published before each round") };
        // SAFETY: valid until the final gather below (see `Team::run`).
        guarded(|| unsafe { (*job)(w, &ctx) });
        ctx.gather();
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        // Workers wait for the next job's release; this one tells them to leave.
        self.shared.lead.exit.store(true, Ordering::Release);
        self.shared.release(self.seq.next_release());
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
    fn phases_are_separated_over_many_rounds() {
        // Each round, every worker writes its slot, meets the others, then checks that it sees
        // every slot of the round: a barrier that let one through early fails the check. Then
        // the leader alone reads what a gather published, and the workers what a release did.
        for spin in [Duration::ZERO, SPIN] {
            let g = 3;
            let team = Team::start(g, spin, |_| {}).unwrap();
            let slots: Vec<AtomicUsize> = (0..g).map(|_| AtomicUsize::new(0)).collect();
            let from_leader = AtomicUsize::new(0);
            let bad = AtomicUsize::new(0);
            for round in 1..=500 {
                team.run(|w, t| {
                    slots[w].store(round, Ordering::Relaxed);
                    t.barrier();
                    if slots.iter().any(|s| s.load(Ordering::Relaxed) != round) {
                        bad.fetch_add(1, Ordering::Relaxed);
                    }
                    t.barrier();
                    slots[w].store(round + 1, Ordering::Relaxed);
                    t.gather();
                    if w == 0 {
                        if slots.iter().any(|s| s.load(Ordering::Relaxed) != round + 1) {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                        from_leader.store(round, Ordering::Relaxed);
                    }
                    t.release();
                    if from_leader.load(Ordering::Relaxed) != round {
                        bad.fetch_add(1, Ordering::Relaxed);
                    }
                });
                // The final gather: every worker's last write is visible to the caller.
                if slots.iter().any(|s| s.load(Ordering::Relaxed) != round + 1) {
                    bad.fetch_add(1, Ordering::Relaxed);
                }
            }
            assert_eq!(bad.load(Ordering::Relaxed), 0, "spin {spin:?}");
        }
    }

    #[test]
    fn parked_workers_and_leader_wake_up() {
        let team = Team::start(2, Duration::from_micros(10), |_| {}).unwrap();
        let hits = AtomicUsize::new(0);
        for _ in 0..5 {
            // Longer than the spin: worker 1 parks, then must be woken for the next job.
            std::thread::sleep(Duration::from_millis(5));
            team.run(|w, _| {
                // Worker 1 finishing late makes the leader park in the final gather.
                if w == 1 {
                    std::thread::sleep(Duration::from_millis(2));
                }
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

    #[test]
    fn jobs_run_from_the_inline_copy_and_from_the_callers_frame() {
        // A small job travels with the release; a big one stays where the caller put it.
        // Both must see this call's captures, not the last call's.
        let team = Team::start(3, SPIN, |_| {}).unwrap();
        let sums: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
        let sums = &sums;
        for k in 1..=50usize {
            let small = k;
            team.run(move |w, _| {
                sums[w].fetch_add(small, Ordering::Relaxed);
            });
            let big = [k; INLINE_BYTES / 8 + 1];
            assert!(size_of_val(&big) > INLINE_BYTES);
            team.run(move |w, _| {
                sums[w].fetch_add(big[big.len() - 1], Ordering::Relaxed);
            });
        }
        for s in sums {
            assert_eq!(s.load(Ordering::Relaxed), 2 * (50 * 51 / 2));
        }
    }

    #[test]
    fn a_team_on_a_shared_cpu_parks_instead_of_spinning() {
        // What decides it: fewer CPUs between the workers than workers.
        assert_eq!(shared_cpus(&[vec![0], vec![0]]), Some(vec![0]));
        assert_eq!(
            shared_cpus(&[vec![0, 1], vec![0, 1], vec![1]]),
            Some(vec![0, 1])
        );
        assert_eq!(shared_cpus(&[vec![0], vec![1]]), None);
        assert_eq!(shared_cpus(&[vec![0, 1], vec![0, 1]]), None);
        assert_eq!(shared_cpus(&[vec![0]]), None);
        // Each worker reports the spin iterations its thread made; the leader waits (parked or
        // spinning) while worker 1 takes its time, and worker 1 waits between jobs.
        let spins = |spin: Duration| -> (u64, u64) {
            let team = Team::start(2, spin, |_| {}).unwrap();
            let before = team.map(|_| spins_so_far());
            for _ in 0..20 {
                std::thread::sleep(Duration::from_millis(1));
                team.run(|w, _| {
                    if w == 1 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                });
            }
            let after = team.map(|_| spins_so_far());
            (after[0] - before[0], after[1] - before[1])
        };
        // Spin zero: no thread spins once (each wait checks once, then sleeps on the futex).
        assert_eq!(spins(Duration::ZERO), (0, 0));
        // The default spins before parking: every one of these waits outlasts it.
        let (leader, worker) = spins(SPIN);
        assert!(leader > 0 && worker > 0, "{leader} {worker}");
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert!(reached(5, 5) && reached(6, 5) && !reached(4, 5));
        assert!(reached(0, u32::MAX) && !reached(u32::MAX, 0));
    }

    #[test]
    fn a_team_whose_workers_never_got_a_job_stops() {
        // Dropped right after the start: the workers leave at their first release.
        for g in 1..4 {
            drop(Team::start(g, SPIN, |_| {}).unwrap());
        }
    }
}
