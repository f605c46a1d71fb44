//! Non-blocking all-reduces on the CPU backend (`ddp_step`), a child of `cpu` so that it shares
//! its worker pool and kernels.
//!
//! MPI only moves data while some thread is inside the library, so an `MPI_Iallreduce`
//! started during backward makes progress only if someone drives it. Two strategies:
//!
//! - [`Progress::Test`]: the computing thread itself calls `MPI_Test` on every
//!   request in flight between GEMM row tiles ([`TILES_PER_GEMM`] per GEMM) and between
//!   GEMMs. No extra thread, no core taken from compute, no MPI thread level beyond what the
//!   launch has; progress is as fine-grained as the tiles.
//! - [`Progress::Thread`] (default, see `workload::ddp::DEFAULT_PROGRESS`): a communication
//!   thread starts each request and polls it (yielding the core between polls) while the GEMMs
//!   run, as Horovod's background thread does. It
//!   progresses independently of GEMM granularity but competes for cores with the GEMMs, which
//!   on a machine with no spare core (oversubscribed ranks) costs compute time. It needs
//!   `MPI_THREAD_SERIALIZED` at least: only one thread calls MPI at any time (the main thread
//!   makes no MPI call between handing a bucket over and getting the last one back). It is
//!   bound to a spare core of the rank's CPUs when there is one; otherwise it shares the
//!   devices' CPUs, which the provenance (`progress_thread`) and the case's
//!   representativeness say.
//!
//! Hybrid mode follows the hierarchical path: at start the workers sum their devices' buffers
//! into a node buffer (shared memory, each on its slice), the node buffer is all-reduced
//! non-blockingly among node leaders, and at wait the workers copy the result back.

use super::{chunk, copy_range, divide, fold_into, typed, Arith, CblasScalar, CpuBackend, SyncPtr};
use crate::backend::{
    BackendError, BackendResult, CollectiveCall, GemmBatch, HostBuf, OverlapSettings,
};
use crate::comm::raw;
use crate::params::{Dtype, Progress, ReduceOp};
use mpi::raw::AsRaw;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Row tiles each GEMM is cut into while requests are in flight ([`Progress::Test`]): enough
/// polls per GEMM to keep the network busy, few enough that tiles stay large GEMMs.
pub(super) const TILES_PER_GEMM: usize = 8;
/// Fewest rows in a tile (small GEMMs are not cut into slivers).
const MIN_TILE_ROWS: usize = 16;

/// What the backend keeps between `allreduce_start` and `allreduce_wait`.
pub(super) struct State {
    settings: OverlapSettings,
    next_ticket: u64,
    inflight: Vec<InFlight>,
    thread: Option<CommThread>,
    /// Tickets the communication thread reported done and nobody waited on yet.
    done: HashSet<u64>,
    /// When the previous delayed all-reduce completes (fault `slow_comm`).
    link_free_at: Option<Instant>,
    /// Hybrid node buffers, reused across steps.
    spare: Vec<HostBuf>,
}

impl Default for State {
    fn default() -> Self {
        State {
            settings: OverlapSettings {
                progress: Progress::Test,
                comm_delay_s: 0.0,
            },
            next_ticket: 0,
            inflight: Vec::new(),
            thread: None,
            done: HashSet::new(),
            link_free_at: None,
            spare: Vec::new(),
        }
    }
}

impl State {
    /// Whether GEMMs should be cut into tiles with `MPI_Test` calls between them.
    pub(super) fn polls(&self) -> bool {
        self.settings.progress == Progress::Test && !self.inflight.is_empty()
    }
}

struct InFlight {
    ticket: u64,
    call: CollectiveCall,
    /// The device buffers, owned here until waited on.
    bufs: Vec<HostBuf>,
    /// Hybrid: the node buffer that travels over MPI.
    node: Option<HostBuf>,
    /// Progress::Test: the request, driven by this thread.
    req: Option<raw::Pending>,
    /// Not complete before this instant (fault `slow_comm`).
    not_before: Option<Instant>,
}

/// A communication handle that may cross to the progress thread (an integer or pointer
/// handle, valid for the backend's lifetime).
#[derive(Clone, Copy)]
struct CommHandle(mpi::ffi::MPI_Comm);
// SAFETY: MPI handles are process-wide; the thread uses it only while the backend lives
// (the thread is joined when the backend drops).
unsafe impl Send for CommHandle {}

/// One bucket handed to the communication thread.
struct Job {
    ticket: u64,
    comm: CommHandle,
    ptr: SyncPtr<u8>,
    dtype: Dtype,
    count: usize,
    op: ReduceOp,
    not_before: Option<Instant>,
}

struct CommThread {
    jobs: Option<mpsc::Sender<Job>>,
    done: mpsc::Receiver<u64>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Drop for CommThread {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop once nothing is in flight.
        self.jobs.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Starts the progress thread bound to `cpus` (a spare core of the rank where there is one,
/// see `topology::binding::progress_thread_cpus`): left to inherit the binding of whichever
/// thread starts it, it would share that thread's core even with a free one next to it.
fn spawn_comm_thread(cpus: Vec<u32>) -> BackendResult<CommThread> {
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let (done_tx, done_rx) = mpsc::channel::<u64>();
    let handle = std::thread::Builder::new()
        .name("scalebench-comm".into())
        .spawn(move || {
            // A failure leaves it on the rank's CPUs, which the provenance already names.
            let _ = crate::topology::affinity::bind_current_thread(&cpus);
            comm_thread_loop(jobs_rx, done_tx)
        })
        .map_err(|e| BackendError::thread("the progress thread", e))?;
    Ok(CommThread {
        jobs: Some(jobs_tx),
        done: done_rx,
        handle: Some(handle),
    })
}

fn comm_thread_loop(jobs: mpsc::Receiver<Job>, done: mpsc::Sender<u64>) {
    let mut active: Vec<(u64, raw::Pending, Option<Instant>)> = Vec::new();
    let start = |j: Job| {
        // SAFETY: the owner keeps the buffer allocated and untouched until it hears `done`.
        let p = unsafe { raw::iallreduce_in_place(j.comm.0, j.ptr.0, j.dtype, j.count, j.op) };
        (j.ticket, p, j.not_before)
    };
    loop {
        if active.is_empty() {
            match jobs.recv() {
                Ok(j) => active.push(start(j)),
                Err(_) => return,
            }
        }
        while let Ok(j) = jobs.try_recv() {
            active.push(start(j));
        }
        let now = Instant::now();
        let mut i = 0;
        while i < active.len() {
            let (ticket, p, not_before) = &mut active[i];
            if p.test() && not_before.is_none_or(|t| now >= t) {
                let _ = done.send(*ticket);
                active.swap_remove(i);
            } else {
                i += 1;
            }
        }
        if active.is_empty() {
            continue;
        }
        // Everything MPI owes is done and only the injected delay remains: sleep, don't spin.
        let earliest = active
            .iter()
            .filter(|(_, p, _)| p.is_done())
            .filter_map(|(_, _, t)| *t)
            .min();
        match earliest {
            Some(t) if active.iter().all(|(_, p, _)| p.is_done()) => {
                std::thread::sleep(t.saturating_duration_since(Instant::now()))
            }
            _ => std::thread::yield_now(),
        }
    }
}

pub(super) fn configure(b: &mut CpuBackend, s: OverlapSettings) -> BackendResult<()> {
    if !b.overlap.inflight.is_empty() {
        return Err(BackendError::check(
            "progress strategy changed with all-reduces in flight",
        ));
    }
    if s.progress == Progress::Thread && b.overlap.thread.is_none() {
        let level = raw::thread_level();
        if level < 2 {
            return Err(BackendError::Unsupported(format!(
                "progress=thread needs MPI_THREAD_SERIALIZED or higher, but MPI provides level {level} (0 single, 1 funneled): use progress=test"
            )));
        }
        b.overlap.thread = Some(spawn_comm_thread(b.progress_cpus.0.clone())?);
    }
    b.overlap.settings = s;
    b.overlap.link_free_at = None;
    Ok(())
}

/// The instant a delayed all-reduce started now may complete: the link carries one bucket at
/// a time, each taking the injected delay.
fn not_before(st: &mut State) -> Option<Instant> {
    let d = st.settings.comm_delay_s;
    if d <= 0.0 {
        return None;
    }
    let now = Instant::now();
    let from = st.link_free_at.map_or(now, |t| t.max(now));
    let t = from + Duration::from_secs_f64(d);
    st.link_free_at = Some(t);
    Some(t)
}

fn sum_into_node<T: Arith>(
    b: &CpuBackend,
    call: &CollectiveCall,
    bufs: &[HostBuf],
    node: &HostBuf,
) {
    let g = b.g;
    let len = call.send_count;
    let srcs: Vec<SyncPtr<T>> = bufs.iter().map(typed).collect();
    let dst = typed::<T>(node);
    let op = call.op.unwrap_or(ReduceOp::Sum);
    let pool = b.workers.as_ref().expect("hybrid mode has workers");
    // SAFETY: each worker writes only its own slice of the node buffer; sources are read.
    pool.broadcast(|c| unsafe {
        let r = chunk(len, g, c.index());
        fold_into(dst, r.start, &srcs, r.start, r.len(), op)
    });
}

fn copy_from_node<T: Arith>(
    b: &CpuBackend,
    call: &CollectiveCall,
    bufs: &mut [HostBuf],
    node: &HostBuf,
) {
    let len = call.send_count;
    let avg = (call.op == Some(ReduceOp::Avg)).then_some(call.devices);
    let dsts: Vec<SyncPtr<T>> = bufs.iter().map(typed).collect();
    let src = typed::<T>(node);
    let pool = b.workers.as_ref().expect("hybrid mode has workers");
    // SAFETY: each worker writes only its own device buffer; the node buffer is read.
    pool.broadcast(|c| unsafe { copy_range(dsts[c.index()], 0, src, 0, len, avg) });
}

pub(super) fn start(
    b: &mut CpuBackend,
    call: &CollectiveCall,
    mut bufs: Vec<HostBuf>,
) -> BackendResult<u64> {
    let n = call.send_count;
    if bufs.len() != b.g || bufs.iter().any(|x| x.len() < n || x.dtype() != call.dtype) {
        return Err(BackendError::check(format!(
            "all-reduce of {n} {} elements on {}, {} here",
            call.dtype,
            crate::units::count(bufs.len(), "buffer", "buffers"),
            crate::units::count(b.g, "device", "devices")
        )));
    }
    let node = if b.g > 1 {
        let at = b
            .overlap
            .spare
            .iter()
            .position(|s| s.dtype() == call.dtype && s.len() >= n);
        let node = match at {
            Some(i) => b.overlap.spare.swap_remove(i),
            None => HostBuf::zeros(call.dtype, n)?,
        };
        match call.dtype {
            Dtype::F32 => sum_into_node::<f32>(b, call, &bufs, &node),
            Dtype::F64 => sum_into_node::<f64>(b, call, &bufs, &node),
            Dtype::I32 => sum_into_node::<i32>(b, call, &bufs, &node),
            d => {
                return Err(BackendError::Unsupported(format!(
                    "no {d} on the CPU backend"
                )))
            }
        }
        Some(node)
    } else {
        None
    };
    let ticket = b.overlap.next_ticket;
    b.overlap.next_ticket += 1;
    let not_before = not_before(&mut b.overlap);
    let comm = b.comm.as_raw();
    let op = call.op.unwrap_or(ReduceOp::Sum);
    // The buffer that travels: the node buffer (hybrid) or the device's own.
    let target: *mut u8 = match &node {
        Some(nb) => nb.as_ptr() as *mut u8,
        None => bufs[0].as_mut_ptr(),
    };
    let req = match (&b.overlap.settings.progress, &b.overlap.thread) {
        (Progress::Thread, Some(t)) => {
            let job = Job {
                ticket,
                comm: CommHandle(comm),
                ptr: SyncPtr(target),
                dtype: call.dtype,
                count: n,
                op,
                not_before,
            };
            t.jobs
                .as_ref()
                .expect("open while the backend lives")
                .send(job)
                .map_err(|_| BackendError::check("the progress thread has stopped"))?;
            None
        }
        // SAFETY: `target` lives in `bufs` or `node`, which the InFlight entry owns (heap
        // storage does not move with them) until the request completed in `wait`.
        _ => Some(unsafe { raw::iallreduce_in_place(comm, target, call.dtype, n, op) }),
    };
    b.overlap.inflight.push(InFlight {
        ticket,
        call: call.clone(),
        bufs,
        node,
        req,
        not_before,
    });
    Ok(ticket)
}

/// One `MPI_Test` on every request this thread drives.
pub(super) fn poll(st: &mut State) {
    for f in &mut st.inflight {
        if let Some(r) = &mut f.req {
            r.test();
        }
    }
}

pub(super) fn wait(b: &mut CpuBackend, ticket: u64) -> BackendResult<Vec<HostBuf>> {
    let at = b
        .overlap
        .inflight
        .iter()
        .position(|f| f.ticket == ticket)
        .ok_or_else(|| BackendError::check(format!("no all-reduce with ticket {ticket}")))?;
    let mut f = b.overlap.inflight.swap_remove(at);
    match &mut f.req {
        Some(r) => {
            // MPI_Test and yield rather than MPI_Wait: on an oversubscribed node Open MPI's
            // MPI_Wait on a non-blocking collective was measured 30× slower than this loop
            // (libnbc progresses only every few progress calls, each of which may yield).
            while !r.test() {
                std::thread::yield_now();
            }
            if let Some(t) = f.not_before {
                std::thread::sleep(t.saturating_duration_since(Instant::now()));
            }
        }
        None => {
            let st = &mut b.overlap;
            let t = st.thread.as_ref().expect("a thread-driven request");
            while !st.done.remove(&ticket) {
                let got = t
                    .done
                    .recv()
                    .map_err(|_| BackendError::check("the progress thread has stopped"))?;
                st.done.insert(got);
            }
        }
    }
    let call = &f.call;
    let n = call.send_count;
    match f.node.take() {
        Some(node) => {
            match call.dtype {
                Dtype::F32 => copy_from_node::<f32>(b, call, &mut f.bufs, &node),
                Dtype::F64 => copy_from_node::<f64>(b, call, &mut f.bufs, &node),
                Dtype::I32 => copy_from_node::<i32>(b, call, &mut f.bufs, &node),
                _ => unreachable!("checked at start"),
            }
            b.overlap.spare.push(node);
        }
        None => {
            if call.op == Some(ReduceOp::Avg) {
                divide(&mut f.bufs[0], n, call.devices);
            }
        }
    }
    Ok(f.bufs)
}

/// Row tiles of an `m`-row GEMM.
fn tiles(m: usize) -> Vec<Range<usize>> {
    let rows = m.div_ceil(TILES_PER_GEMM).max(MIN_TILE_ROWS.min(m)).max(1);
    (0..m).step_by(rows).map(|r| r..(r + rows).min(m)).collect()
}

/// One tile of one matrix of a device's batch: rows `r` of matrix `j`, as a GEMM of its own.
#[derive(Clone)]
struct Tile {
    j: usize,
    rows: Range<usize>,
}

fn gemm_polling_typed<T: CblasScalar>(
    b: &mut CpuBackend,
    batches: &[GemmBatch],
    a: &[HostBuf],
    bm: &[HostBuf],
    c: &mut [HostBuf],
) -> BackendResult<()> {
    let engine = b.gemm.as_ref().ok_or_else(|| {
        BackendError::Unsupported("no GEMM provider was set up for this launch".into())
    })?;
    for (w, g) in batches.iter().enumerate() {
        engine.prepare(g)?;
        assert!(a[w].len() >= g.count * g.a_len() && c[w].len() >= g.count * g.c_len());
        assert!(
            bm[w].len()
                >= if g.shared_b {
                    g.b_len()
                } else {
                    g.count * g.b_len()
                }
        );
    }
    let pa: Vec<SyncPtr<T>> = a.iter().map(typed).collect();
    let pb: Vec<SyncPtr<T>> = bm.iter().map(typed).collect();
    let pc: Vec<SyncPtr<T>> = c.iter().map(typed).collect();
    // Every device cuts its GEMMs into the same number of steps so that all of them advance
    // together between polls.
    let per_dev: Vec<Vec<Tile>> = batches
        .iter()
        .map(|g| {
            (0..g.count)
                .flat_map(|j| {
                    tiles(g.shape.m as usize)
                        .into_iter()
                        .map(move |rows| Tile { j, rows })
                })
                .collect()
        })
        .collect();
    let steps = per_dev.iter().map(Vec::len).max().unwrap_or(0);
    for s in 0..steps {
        let engine = b.gemm.as_ref().expect("checked above");
        let run = |w: usize| {
            if let Some(t) = per_dev[w].get(s) {
                let g = batches[w];
                let (n, k) = (g.shape.n as usize, g.shape.k as usize);
                let tile = GemmBatch {
                    shape: crate::params::MatmulShape {
                        m: t.rows.len() as u64,
                        ..g.shape
                    },
                    count: 1,
                    shared_b: true,
                };
                let bj = if g.shared_b { 0 } else { t.j * g.b_len() };
                // SAFETY: lengths asserted above; the tile lies inside matrix j, and each
                // device writes only its own C rows.
                unsafe {
                    engine.run(
                        w,
                        tile,
                        pa[w].0.add(t.j * g.a_len() + t.rows.start * k),
                        pb[w].0.add(bj),
                        pc[w].0.add(t.j * g.c_len() + t.rows.start * n),
                    )
                }
            }
        };
        match &b.workers {
            Some(pool) => {
                pool.broadcast(|ctx| run(ctx.index()));
            }
            None => run(0),
        }
        poll(&mut b.overlap);
    }
    Ok(())
}

/// `Backend::gemm` while requests are in flight under [`Progress::Test`].
pub(super) fn gemm_polling(
    b: &mut CpuBackend,
    batches: &[GemmBatch],
    a: &[HostBuf],
    bm: &[HostBuf],
    c: &mut [HostBuf],
) -> BackendResult<()> {
    match a.first().map(HostBuf::dtype) {
        Some(Dtype::F32) => gemm_polling_typed::<f32>(b, batches, a, bm, c),
        Some(Dtype::F64) => gemm_polling_typed::<f64>(b, batches, a, bm, c),
        Some(d) => Err(BackendError::Unsupported(format!("CPU GEMM has no {d}"))),
        None => Ok(()),
    }
}

/// `dst[dst_at..][..len] = src[src_at..][..len]`, then a progress poll.
pub(super) fn copy_within(
    b: &mut CpuBackend,
    dst: &mut HostBuf,
    dst_at: usize,
    src: &HostBuf,
    src_at: usize,
    len: usize,
) -> BackendResult<()> {
    if dst.dtype() != src.dtype() || dst_at + len > dst.len() || src_at + len > src.len() {
        return Err(BackendError::check(format!(
            "copy of {len} elements from {}[{src_at}..] of {} into {}[{dst_at}..] of {}",
            src.dtype(),
            src.len(),
            dst.dtype(),
            dst.len()
        )));
    }
    dst.copy_from(dst_at, src, src_at, len);
    if b.overlap.settings.progress == Progress::Test {
        poll(&mut b.overlap);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_the_rows_once() {
        for m in [1, 5, 16, 17, 100, 1000, 4096] {
            let t = tiles(m);
            assert_eq!(t.first().unwrap().start, 0);
            assert_eq!(t.last().unwrap().end, m);
            assert!(t.windows(2).all(|w| w[0].end == w[1].start));
            assert!(t.len() <= TILES_PER_GEMM, "{m}: {}", t.len());
        }
        // small GEMMs stay whole
        assert_eq!(tiles(12).len(), 1);
    }
}
