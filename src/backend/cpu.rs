//! The CPU backend: host buffers, MPI collectives, CPU GEMM (the system BLAS or the `gemm`
//! crate, see [`super::gemm`]).
//!
//! Pure MPI (one device per rank): every collective is one MPI call on the rank's buffers, in
//! place through `MPI_IN_PLACE` or out of place.
//!
//! Hybrid (one rank per node driving G devices): each device is a worker of a [`Team`]: the
//! rank's own thread is worker 0, the others are persistent threads, each bound to its device's
//! CPUs and owning its buffers (allocated and zeroed by the worker, so first touch places them
//! near it; the node-level scratch is touched page-part by page-part by all workers).
//! Collectives are hierarchical, one team job each: the workers combine their buffers in shared
//! memory (in parallel, each on its chunk), worker 0 runs one MPI collective among node leaders,
//! and the workers copy the result into their own buffers; phases are separated by spinning
//! one-way flags (see [`super::team`]), so no thread-pool hand-off sits on the timed path. MPI
//! is only called from the main thread (MPI_THREAD_FUNNELED). GEMMs run on a rayon pool bound the same way.

#[path = "cpu_overlap.rs"]
mod overlap;

use super::gemm::{self as providers, CblasScalar, GemmEngine};
use super::team::{Team, SPIN};
use super::{
    alignment_policy, Backend, BackendError, BackendResult, BufferOffset, CollectiveCall,
    DevicePlan, Element, GemmBatch, HostBuf, OverlapSettings,
};
use crate::comm::raw::{self, Src};
use crate::params::{BackendKind, CaseParams, Dtype, ReduceOp, Workload};
use crate::results::schema::{BackendInfo, DeviceBinding, GemmProvenance, TimerInfo};
use crate::topology::affinity;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::ops::Range;
use std::time::Instant;

/// Element arithmetic for local reductions (integers wrap: timing loops repeat in-place sums
/// until values overflow, which must not panic).
trait Arith: Element + Default {
    fn div_devices(self, n: u32) -> Self;

    /// d[i] = op(d[i], s[i]). The operator is chosen once, outside the loop, so each loop is
    /// a plain element-wise operation the compiler can vectorise (a function pointer called
    /// per element keeps it scalar).
    fn fold_slice(op: ReduceOp, d: &mut [Self], s: &[Self]);
}

/// d[i] = f(d[i], s[i]), inlined for each operator.
#[inline(always)]
fn zip_with<T: Copy>(d: &mut [T], s: &[T], f: impl Fn(T, T) -> T) {
    for (x, y) in d.iter_mut().zip(s) {
        *x = f(*x, *y);
    }
}

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            fn div_devices(self, n: u32) -> $t {
                self / n as $t
            }
            fn fold_slice(op: ReduceOp, d: &mut [$t], s: &[$t]) {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg => zip_with(d, s, |a, b| a + b),
                    ReduceOp::Prod => zip_with(d, s, |a, b| a * b),
                    ReduceOp::Min => zip_with(d, s, |a: $t, b| a.min(b)),
                    ReduceOp::Max => zip_with(d, s, |a: $t, b| a.max(b)),
                }
            }
        }
    };
}
float_arith!(f32);
float_arith!(f64);

impl Arith for i32 {
    fn div_devices(self, n: u32) -> i32 {
        self / n as i32
    }
    fn fold_slice(op: ReduceOp, d: &mut [i32], s: &[i32]) {
        match op {
            ReduceOp::Sum | ReduceOp::Avg => zip_with(d, s, i32::wrapping_add),
            ReduceOp::Prod => zip_with(d, s, i32::wrapping_mul),
            ReduceOp::Min => zip_with(d, s, |a: i32, b| a.min(b)),
            ReduceOp::Max => zip_with(d, s, |a: i32, b| a.max(b)),
        }
    }
}

/// A raw pointer that worker threads may share; every use touches a range no other thread
/// touches in the same phase (phases are separated by the team's barrier).
#[derive(Clone, Copy, PartialEq)]
#[repr(transparent)]
struct SyncPtr<T>(*mut T);
// SAFETY: see the type's doc: disjoint ranges per thread and phase.
unsafe impl<T> Send for SyncPtr<T> {}
unsafe impl<T> Sync for SyncPtr<T> {}

/// A buffer that only one worker of a team job uses exclusively (worker 0, for MPI), in a
/// phase where no other worker touches it.
struct Excl<T>(*mut T);
impl<T> Clone for Excl<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Excl<T> {}
// SAFETY: see the type's doc.
unsafe impl<T> Send for Excl<T> {}
unsafe impl<T> Sync for Excl<T> {}

impl<T> Excl<T> {
    fn new(t: &mut T) -> Self {
        Excl(t)
    }
    /// # Safety
    /// No other reference to the value is used while the returned one lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self) -> &mut T {
        &mut *self.0
    }
    /// Element `i` of the slice that starts here.
    ///
    /// # Safety
    /// As [`Excl::get`], and `i` within the slice.
    #[allow(clippy::mut_from_ref)]
    unsafe fn at(&self, i: usize) -> &mut T {
        &mut *self.0.add(i)
    }
}

/// The devices' source and destination pointers of the current hybrid collective, kept across
/// calls and rewritten only where they changed: the workers read them on every call, and a
/// store dirties a cache line in every other core even when it writes the same value.
#[derive(Default)]
struct PtrTables {
    srcs: Vec<SyncPtr<()>>,
    dsts: Vec<SyncPtr<()>>,
}

impl PtrTables {
    fn update<T>(
        &mut self,
        srcs: impl Iterator<Item = SyncPtr<T>>,
        dsts: impl Iterator<Item = SyncPtr<T>>,
    ) -> (&[SyncPtr<T>], &[SyncPtr<T>]) {
        fn set<T>(table: &mut Vec<SyncPtr<()>>, new: impl Iterator<Item = SyncPtr<T>>) {
            let mut n = 0;
            for (i, p) in new.enumerate() {
                let p = SyncPtr(p.0 as *mut ());
                match table.get_mut(i) {
                    Some(old) if *old == p => {}
                    Some(old) => *old = p,
                    None => table.push(p),
                }
                n = i + 1;
            }
            table.truncate(n);
        }
        set(&mut self.srcs, srcs);
        set(&mut self.dsts, dsts);
        let view = |t: &[SyncPtr<()>]| {
            // SAFETY: SyncPtr is a transparent raw pointer: the same layout for every T.
            unsafe { std::slice::from_raw_parts(t.as_ptr() as *const SyncPtr<T>, t.len()) }
        };
        (view(&self.srcs), view(&self.dsts))
    }
}

/// The rank's communicator inside a team job: used by worker 0 only (MPI_THREAD_FUNNELED).
#[derive(Clone, Copy)]
struct LeaderComm(mpi::ffi::MPI_Comm);
// SAFETY: see the type's doc.
unsafe impl Sync for LeaderComm {}

impl LeaderComm {
    fn get(&self) -> mpi::ffi::MPI_Comm {
        self.0
    }
}

fn typed<T: Element>(b: &HostBuf) -> SyncPtr<T> {
    assert_eq!(b.dtype(), T::DTYPE, "buffer of the wrong dtype");
    SyncPtr(b.as_ptr() as *mut T)
}

/// The slice of `0..len` worker `w` of `g` handles: boundaries on 64-element multiples, so
/// workers never write the same cache line (small messages fall to the first workers).
fn chunk(len: usize, g: usize, w: usize) -> Range<usize> {
    const LINE: usize = 64;
    let lines = len.div_ceil(LINE);
    let at = |i: usize| (lines * i / g * LINE).min(len);
    at(w)..at(w + 1)
}

/// dst[r] = fold(op, srcs[..][r]).
///
/// # Safety
/// As [`fold_into`].
#[cfg(test)]
unsafe fn reduce_range<T: Arith>(
    dst: SyncPtr<T>,
    srcs: &[SyncPtr<T>],
    r: Range<usize>,
    op: ReduceOp,
) {
    fold_into(dst, r.start, srcs, r.start, r.len(), op)
}

/// dst[at..at+len] = fold(op, srcs[..][from..from+len]). The destination may be the first
/// source's range itself (in place), never another source's.
///
/// # Safety
/// Every range valid; the destination range not used by another thread meanwhile.
unsafe fn fold_into<T: Arith>(
    dst: SyncPtr<T>,
    at: usize,
    srcs: &[SyncPtr<T>],
    from: usize,
    len: usize,
    op: ReduceOp,
) {
    let d = dst.0.add(at);
    let first = srcs[0].0.add(from);
    if !std::ptr::eq(d, first) {
        std::ptr::copy_nonoverlapping(first, d, len);
    }
    let d = std::slice::from_raw_parts_mut(d, len);
    for s in &srcs[1..] {
        T::fold_slice(op, d, std::slice::from_raw_parts(s.0.add(from), len));
    }
}

/// dst[r] /= n (the `avg` operator after a sum).
///
/// # Safety
/// The range valid and not used by another thread meanwhile.
unsafe fn divide_range<T: Arith>(dst: SyncPtr<T>, r: Range<usize>, n: u32) {
    for x in std::slice::from_raw_parts_mut(dst.0.add(r.start), r.len()) {
        *x = x.div_devices(n);
    }
}

/// dst[at..at+len] = src[from..from+len], divided by `avg` devices if given.
///
/// # Safety
/// Both ranges valid; the destination range not aliased by another thread.
unsafe fn copy_range<T: Arith>(
    dst: SyncPtr<T>,
    at: usize,
    src: SyncPtr<T>,
    from: usize,
    len: usize,
    avg: Option<u32>,
) {
    if std::ptr::eq(dst.0.add(at), src.0.add(from)) {
        if let Some(n) = avg {
            divide_range(dst, at..at + len, n);
        }
        return;
    }
    let d = std::slice::from_raw_parts_mut(dst.0.add(at), len);
    let s = std::slice::from_raw_parts(src.0.add(from), len);
    match avg {
        None => d.copy_from_slice(s),
        Some(n) => {
            for (x, y) in d.iter_mut().zip(s) {
                *x = y.div_devices(n);
            }
        }
    }
}

fn divide_all<T: Arith>(b: &mut HostBuf, len: usize, n: u32) {
    let p = typed::<T>(b);
    // SAFETY: b holds at least len elements (callers pass its count) and is exclusively borrowed.
    let s = unsafe { std::slice::from_raw_parts_mut(p.0, len) };
    for x in s {
        *x = x.div_devices(n);
    }
}

/// Divides the first `len` elements by `n` (the `avg` operator after an MPI sum).
fn divide(b: &mut HostBuf, len: usize, n: u32) {
    match b.dtype() {
        Dtype::F32 => divide_all::<f32>(b, len, n),
        Dtype::F64 => divide_all::<f64>(b, len, n),
        Dtype::I32 => divide_all::<i32>(b, len, n),
        d => unreachable!("{d} is rejected by supports()"),
    }
}

pub struct CpuBackend {
    comm: SimpleCommunicator,
    rank: u32,
    size: u32,
    g: usize,
    cfg: DevicePlan,
    /// Hybrid: one GEMM thread per device.
    workers: Option<rayon::ThreadPool>,
    /// The GEMM provider (`None`: this launch runs no GEMM).
    gemm: Option<GemmEngine>,
    gemm_provenance: Option<GemmProvenance>,
    /// Hybrid: one collective worker per device (worker 0 is the rank's thread).
    team: Option<Team>,
    /// Node-level buffers for hierarchical collectives, reused across calls.
    scratch: [Option<HostBuf>; 2],
    /// The devices' buffers of the current hierarchical collective, for the workers.
    tables: PtrTables,
    epoch: Instant,
    resolution_s: f64,
    /// Problems met while setting up (e.g. a worker binding that did not take).
    warnings: Vec<String>,
    /// Non-blocking all-reduces in flight (ddp_step; see `cpu_overlap.rs`).
    overlap: overlap::State,
}

/// The scratch buffer in `slot`, grown to `len` elements if needed (each worker first touches
/// its share of the pages).
fn ensure<'a>(
    slot: &'a mut Option<HostBuf>,
    dtype: Dtype,
    len: usize,
    team: &Team,
) -> BackendResult<&'a mut HostBuf> {
    let fits = matches!(slot, Some(b) if b.dtype() == dtype && b.len() >= len);
    if !fits {
        *slot = None;
        *slot = Some(HostBuf::zeros_in_parts(dtype, len, team.size(), |zero| {
            team.run(move |w, _| zero(w))
        })?);
    }
    Ok(slot.as_mut().expect("just filled"))
}

impl CpuBackend {
    /// Sets up the backend on `world` (duplicated: data-plane traffic never meets control
    /// messages). Starts and binds the worker threads in hybrid mode.
    pub fn new(world: &SimpleCommunicator, cfg: DevicePlan) -> BackendResult<Self> {
        let comm = world.duplicate();
        let g = cfg.devices_per_rank.max(1);
        let mut warnings = Vec::new();
        let team = if g > 1 {
            let cpus = cfg.worker_cpus.clone();
            let team = Team::start(g, SPIN, move |w| {
                if let Some(Some(set)) = cpus.get(w) {
                    // A failure shows up in the read-back below.
                    let _ = affinity::bind_current_thread(set);
                }
            })
            .map_err(|e| {
                BackendError::Device(format!("could not start {g} worker threads: {e}"))
            })?;
            Some(team)
        } else {
            None
        };
        let workers = if g > 1 {
            let cpus = cfg.worker_cpus.clone();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(g)
                .thread_name(|i| format!("scalebench-gemm-dev{i}"))
                .start_handler(move |i| {
                    if let Some(Some(set)) = cpus.get(i) {
                        // A failure shows up in the read-back below.
                        let _ = affinity::bind_current_thread(set);
                    }
                })
                .build()
                .map_err(|e| {
                    BackendError::Device(format!("could not start {g} worker threads: {e}"))
                })?;
            Some(pool)
        } else {
            if let Some(Some(set)) = cfg.worker_cpus.first() {
                if let Err(e) = affinity::bind_current_thread(set) {
                    warnings.push(format!(
                        "could not bind rank to CPUs {}: {e}",
                        affinity::format_cpulist(set)
                    ));
                }
            }
            None
        };
        // After the binding above: a BLAS starts its threads when loaded, and they inherit it.
        let (gemm, gemm_provenance) = match cfg.gemm {
            Some(choice) => {
                let s = providers::set_up(choice, &cfg)?;
                warnings.extend(s.warnings);
                (Some(s.engine), Some(s.provenance))
            }
            None => (None, None),
        };
        let epoch = Instant::now();
        let resolution_s = crate::measure::clock_resolution_s(|| epoch.elapsed().as_secs_f64());
        let mut b = CpuBackend {
            rank: comm.rank() as u32,
            size: comm.size() as u32,
            comm,
            g,
            cfg,
            workers,
            gemm,
            gemm_provenance,
            team,
            scratch: [None, None],
            tables: PtrTables::default(),
            epoch,
            resolution_s,
            warnings,
            overlap: overlap::State::default(),
        };
        for (w, cpus) in b.worker_affinity().into_iter().enumerate() {
            if let Some(Some(want)) = b.cfg.worker_cpus.get(w) {
                let mut want = want.clone();
                want.sort_unstable();
                if cpus != want {
                    b.warnings.push(format!(
                        "device {w} of rank {}: asked for CPUs {}, running on {}",
                        b.rank,
                        affinity::format_cpulist(&want),
                        affinity::format_cpulist(&cpus)
                    ));
                }
            }
        }
        Ok(b)
    }

    /// CPUs in force for each local device's thread, read back from the OS.
    pub fn worker_affinity(&self) -> Vec<Vec<u32>> {
        match &self.team {
            Some(team) => team.map(|_| affinity::current_thread_cpus().unwrap_or_default()),
            None => vec![affinity::current_thread_cpus().unwrap_or_default()],
        }
    }

    fn raw_comm(&self) -> mpi::ffi::MPI_Comm {
        self.comm.as_raw()
    }

    /// Pure MPI: one MPI call per collective.
    fn flat(
        &mut self,
        call: &CollectiveCall,
        send: &[HostBuf],
        recv: &mut [HostBuf],
    ) -> BackendResult<()> {
        let comm = self.raw_comm();
        let size = self.size as usize;
        let n = call.devices;
        let op = call.op.unwrap_or(ReduceOp::Sum);
        let avg = call.op == Some(ReduceOp::Avg);
        let buf = &mut recv[0];
        let src = if call.in_place {
            Src::InPlace
        } else {
            Src::Buf(&send[0])
        };
        match call.workload {
            Workload::Allreduce => {
                raw::allreduce(comm, src, buf, call.send_count, op);
                if avg {
                    divide(buf, call.recv_count, n);
                }
            }
            Workload::Reduce => {
                let root = call.root.unwrap_or(0);
                if self.rank == root {
                    raw::reduce(
                        comm,
                        src,
                        Some(buf),
                        call.dtype,
                        call.send_count,
                        op,
                        root as i32,
                    );
                    if avg {
                        divide(buf, call.recv_count, n);
                    }
                } else {
                    let src = if call.in_place { Src::Buf(&*buf) } else { src };
                    raw::reduce(
                        comm,
                        src,
                        None,
                        call.dtype,
                        call.send_count,
                        op,
                        root as i32,
                    );
                }
            }
            Workload::Broadcast => {
                raw::bcast(comm, buf, call.send_count, call.root.unwrap_or(0) as i32)
            }
            Workload::Allgather => raw::allgather(comm, size, src, buf, call.send_count),
            Workload::ReduceScatter => {
                raw::reduce_scatter_block(comm, size, src, buf, call.recv_count, op);
                if avg {
                    divide(buf, call.recv_count, n);
                }
            }
            Workload::Alltoall => raw::alltoall(comm, size, src, buf, call.recv_count / size),
            Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep => {
                unreachable!("not a collective")
            }
        }
        Ok(())
    }

    /// Hybrid: one team job per collective. Workers combine in shared memory, each on its own
    /// chunk; worker 0 (this thread) waits for their parts (gather), runs the MPI collective
    /// among node leaders and hands the result back (release); workers copy it into their own
    /// buffers. On one rank there is nothing to exchange, so the MPI step and its
    /// synchronisation are left out.
    fn hierarchical<T: Arith>(
        &mut self,
        call: &CollectiveCall,
        send: &[HostBuf],
        recv: &mut [HostBuf],
    ) -> BackendResult<()> {
        let g = self.g;
        let size = self.size as usize;
        let rank = self.rank as usize;
        let mpi_comm = LeaderComm(self.comm.as_raw());
        let team = self.team.as_ref().expect("hybrid mode has a team");
        let [s0, s1] = &mut self.scratch;
        let n = call.devices as usize;
        let dtype = call.dtype;
        let op = call.op.unwrap_or(ReduceOp::Sum);
        let avg = (call.op == Some(ReduceOp::Avg)).then_some(call.devices);
        let multi = size > 1;
        let in_place = call.in_place;
        let (srcs, dsts) = self.tables.update(
            (0..g).map(|w| typed::<T>(if in_place { &recv[w] } else { &send[w] })),
            recv.iter().map(typed::<T>),
        );
        let recv_bufs = Excl(recv.as_mut_ptr());
        // SAFETY (every job below): in each phase a worker writes only ranges no other worker
        // reads or writes in that phase (its chunk, or its own buffer); phases are separated by
        // the team's gather/release; only worker 0 touches a buffer through `Excl` (for MPI),
        // between them. Jobs capture by value (`move`), so a worker reads nothing the leader
        // wrote for this call beyond the release's lines (see `Team::run`).
        match call.workload {
            Workload::Allreduce => {
                let len = call.send_count;
                // Worker w owns chunk w: folds it into device 0's buffer, and after the leaders'
                // exchange, copies it to every other device's buffer.
                team.run(move |w, t| unsafe {
                    let r = chunk(len, g, w);
                    fold_into(dsts[0], r.start, srcs, r.start, r.len(), op);
                    if multi {
                        t.gather();
                        if w == 0 {
                            raw::allreduce(mpi_comm.get(), Src::InPlace, recv_bufs.at(0), len, op);
                        }
                        t.release();
                    }
                    if let Some(k) = avg {
                        divide_range(dsts[0], r.clone(), k);
                    }
                    for d in &dsts[1..] {
                        copy_range(*d, r.start, dsts[0], r.start, r.len(), None);
                    }
                });
            }
            Workload::Reduce => {
                let len = call.send_count;
                let root = call.root.unwrap_or(0) as usize;
                let (root_rank, root_w) = (root / g, root % g);
                let here = rank == root_rank;
                let s = ensure(s0, dtype, len, team)?;
                let sp = typed::<T>(s);
                let sb = Excl::new(s);
                team.run(move |w, t| unsafe {
                    let r = chunk(len, g, w);
                    fold_into(sp, r.start, srcs, r.start, r.len(), op);
                    if multi {
                        t.gather();
                        if w == 0 {
                            let (out, src) = if here {
                                (Some(&mut *sb.get()), Src::InPlace)
                            } else {
                                (None, Src::Buf(&*sb.get()))
                            };
                            raw::reduce(mpi_comm.get(), src, out, dtype, len, op, root_rank as i32);
                        }
                        if here {
                            t.release();
                        }
                    }
                    if here {
                        copy_range(dsts[root_w], r.start, sp, r.start, r.len(), avg);
                    }
                });
            }
            Workload::Broadcast => {
                let len = call.send_count;
                let root = call.root.unwrap_or(0) as usize;
                let (root_rank, root_w) = (root / g, root % g);
                let here = rank == root_rank;
                // Where the data lands on this rank: the root device, or device 0 elsewhere.
                let at = if here { root_w } else { 0 };
                // The root's own copy (out of place) is gathered for the leader's MPI call and
                // for the other workers; MPI's result needs only the release.
                let local_copy = here && !in_place;
                team.run(move |w, t| unsafe {
                    if local_copy {
                        let r = chunk(len, g, w);
                        copy_range(dsts[root_w], r.start, srcs[root_w], r.start, r.len(), None);
                        t.gather();
                    }
                    if multi && w == 0 {
                        raw::bcast(mpi_comm.get(), recv_bufs.at(at), len, root_rank as i32);
                    }
                    if local_copy || multi {
                        t.release();
                    }
                    if w != at {
                        copy_range(dsts[w], 0, dsts[at], 0, len, None);
                    }
                });
            }
            Workload::Allgather => {
                let base = call.send_count;
                let from = move |d: usize| if in_place { d * base } else { 0 };
                if !multi {
                    // Each worker copies every device's block into its own buffer (in place,
                    // its own block is already there and no one writes the blocks it reads).
                    team.run(move |w, _| unsafe {
                        for (v, s) in srcs.iter().enumerate() {
                            if !(in_place && v == w) {
                                copy_range(dsts[w], v * base, *s, from(v), base, None);
                            }
                        }
                    });
                } else {
                    let s = ensure(s0, dtype, n * base, team)?;
                    let sp = typed::<T>(s);
                    let sb = Excl::new(s);
                    team.run(move |w, t| unsafe {
                        let d = rank * g + w;
                        copy_range(sp, d * base, srcs[w], from(d), base, None);
                        t.gather();
                        if w == 0 {
                            raw::allgather(mpi_comm.get(), size, Src::InPlace, sb.get(), g * base);
                        }
                        t.release();
                        copy_range(dsts[w], 0, sp, 0, n * base, None);
                    });
                }
            }
            Workload::ReduceScatter => {
                let base = call.recv_count;
                if !multi && !in_place {
                    // Worker w folds block w of every input straight into its own output.
                    team.run(move |w, _| unsafe {
                        fold_into(dsts[w], 0, srcs, w * base, base, op);
                        if let Some(k) = avg {
                            divide_range(dsts[w], 0..base, k);
                        }
                    });
                } else {
                    let len = n * base;
                    let s = ensure(s0, dtype, len, team)?;
                    let sp = typed::<T>(s);
                    let sb = Excl::new(s);
                    team.run(move |w, t| unsafe {
                        let r = chunk(len, g, w);
                        fold_into(sp, r.start, srcs, r.start, r.len(), op);
                        t.gather();
                        if multi {
                            // MPI's in-place convention: this rank's g blocks land at the front.
                            if w == 0 {
                                raw::reduce_scatter_block(
                                    mpi_comm.get(),
                                    size,
                                    Src::InPlace,
                                    sb.get(),
                                    g * base,
                                    op,
                                );
                            }
                        }
                        t.release();
                        copy_range(dsts[w], 0, sp, w * base, base, avg);
                    });
                }
            }
            Workload::Alltoall => {
                let base = call.recv_count / n;
                if !multi && !in_place {
                    // Device v takes block v of every device's input.
                    team.run(move |v, _| unsafe {
                        for (w, s) in srcs.iter().enumerate() {
                            copy_range(dsts[v], w * base, *s, v * base, base, None);
                        }
                    });
                } else {
                    let block = g * g * base;
                    let out = ensure(s1, dtype, size * block, team)?;
                    let op_out = typed::<T>(out);
                    let ob = Excl::new(out);
                    let inp = ensure(s0, dtype, size * block, team)?;
                    let op_in = typed::<T>(inp);
                    let ib = Excl::new(inp);
                    team.run(move |w, t| unsafe {
                        // Pack: per destination rank q, blocks ordered (source, destination worker).
                        for q in 0..size {
                            for v in 0..g {
                                let at = q * block + (w * g + v) * base;
                                copy_range(op_in, at, srcs[w], (q * g + v) * base, base, None);
                            }
                        }
                        t.gather();
                        if multi && w == 0 {
                            raw::alltoall(
                                mpi_comm.get(),
                                size,
                                Src::Buf(&*ib.get()),
                                ob.get(),
                                block,
                            );
                        }
                        t.release();
                        // On one rank the packed input is already the exchanged output.
                        let got = if multi { op_out } else { op_in };
                        // Unpack: device w takes from every (rank q, worker u) the block for it.
                        for q in 0..size {
                            for u in 0..g {
                                let from = q * block + (u * g + w) * base;
                                copy_range(dsts[w], (q * g + u) * base, got, from, base, None);
                            }
                        }
                    });
                }
            }
            Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep => {
                unreachable!("not a collective")
            }
        }
        Ok(())
    }
}

/// Every local device's batch through `engine`, each on its own thread in hybrid mode.
fn gemm_typed<T: CblasScalar>(
    engine: &GemmEngine,
    workers: Option<&rayon::ThreadPool>,
    batches: &[GemmBatch],
    a: &[HostBuf],
    b: &[HostBuf],
    c: &mut [HostBuf],
) -> BackendResult<()> {
    for (w, g) in batches.iter().enumerate() {
        engine.prepare(g)?;
        assert!(a[w].len() >= g.count * g.a_len() && c[w].len() >= g.count * g.c_len());
        assert!(
            b[w].len()
                >= if g.shared_b {
                    g.b_len()
                } else {
                    g.count * g.b_len()
                }
        );
    }
    let pa: Vec<SyncPtr<T>> = a.iter().map(typed).collect();
    let pb: Vec<SyncPtr<T>> = b.iter().map(typed).collect();
    let pc: Vec<SyncPtr<T>> = c.iter().map(typed).collect();
    // SAFETY: lengths asserted above; each device writes only its own C buffer.
    let run = |w: usize| unsafe { engine.run(w, batches[w], pa[w].0, pb[w].0, pc[w].0) };
    match workers {
        Some(pool) => {
            pool.broadcast(|ctx| run(ctx.index()));
        }
        None => run(0),
    }
    Ok(())
}

impl Backend for CpuBackend {
    type Buf = HostBuf;
    type Mark = f64;

    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn info(&self) -> BackendInfo {
        let gemm = match &self.gemm_provenance {
            Some(p) => match &p.library {
                Some(lib) => format!("{} ({lib})", p.version),
                None => p.version.clone(),
            },
            None => "none set up".into(),
        };
        BackendInfo {
            kind: BackendKind::Cpu,
            detail: format!(
                "MPI collectives on host buffers ({}); GEMM: {gemm}, {} thread(s) per device; {} device(s) per rank{}",
                if self.g > 1 { "hierarchical: shared-memory combine among persistent bound worker threads with a spin-then-park barrier, MPI among node leaders" } else { "one MPI call per collective" },
                self.cfg.threads_per_device.max(1),
                self.g,
                if self.g > 1 { " as worker threads" } else { "" }
            ),
        }
    }

    fn timer_info(&self) -> TimerInfo {
        TimerInfo {
            source: "clock_gettime(CLOCK_MONOTONIC) via std::time::Instant".into(),
            resolution_s: self.resolution_s,
        }
    }

    fn local_devices(&self) -> usize {
        self.g
    }

    fn device_index(&self, dev: usize) -> u32 {
        self.rank * self.g as u32 + dev as u32
    }

    fn total_devices(&self) -> u32 {
        self.size * self.g as u32
    }

    fn device_bindings(&self) -> Vec<DeviceBinding> {
        self.worker_affinity()
            .into_iter()
            .enumerate()
            .map(|(w, cpus)| DeviceBinding {
                index: self.device_index(w),
                local_index: self.cfg.local_indices.get(w).copied().unwrap_or(w as u32),
                cpus: affinity::format_cpulist(&cpus),
                name: if self.g > 1 {
                    format!("cpu worker thread {w}")
                } else {
                    "cpu (the rank itself)".into()
                },
            })
            .collect()
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn gemm_provenance(&self) -> Option<GemmProvenance> {
        self.gemm_provenance.clone()
    }

    fn supports(&self, p: &CaseParams) -> Result<(), String> {
        if matches!(p.dtype, Dtype::F16 | Dtype::Bf16) {
            return Err(format!(
                "the CPU backend has no {} arithmetic: use f32, f64 or i32, or --backend cuda",
                p.dtype
            ));
        }
        if !p.workload.is_collective() && p.dtype == Dtype::I32 {
            return Err("CPU GEMM supports f32 and f64, not i32".into());
        }
        if p.workload == Workload::Broadcast && p.in_place == Some(false) {
            return Err("MPI_Bcast has only an in-place form: out-of-place broadcast is measured on the CUDA backend".into());
        }
        Ok(())
    }

    fn alloc(&mut self, dev: usize, dtype: Dtype, count: usize) -> BackendResult<HostBuf> {
        self.alloc_at(dev, dtype, count, 0)
    }

    fn alloc_at(
        &mut self,
        dev: usize,
        dtype: Dtype,
        count: usize,
        offset_bytes: u64,
    ) -> BackendResult<HostBuf> {
        let offset = offset_bytes as usize;
        match &self.team {
            // Allocate and zero on the device's own thread (first touch → its NUMA node).
            Some(team) => team
                .map(|w| (w == dev).then(|| HostBuf::zeros_at(dtype, count, offset)))
                .into_iter()
                .flatten()
                .next()
                .expect("device index within the team")
                .map_err(Into::into),
            None => Ok(HostBuf::zeros_at(dtype, count, offset)?),
        }
    }

    fn page_offset_bytes(&self, buf: &HostBuf) -> Option<u64> {
        Some(buf.page_offset_bytes() as u64)
    }

    fn buffer_policy(&self, offset: BufferOffset) -> Option<String> {
        let mut p = alignment_policy(offset.send_bytes as usize, offset.recv_bytes as usize);
        if self.g > 1 {
            p.push_str("; hybrid node scratch: page-aligned, each worker touching its share");
        }
        Some(p)
    }

    fn upload(&mut self, _dev: usize, buf: &mut HostBuf, host: &HostBuf) -> BackendResult<()> {
        if buf.len() != host.len() || buf.dtype() != host.dtype() {
            return Err(BackendError::Device(format!(
                "upload of {} {} elements into a buffer of {} {}",
                host.len(),
                host.dtype(),
                buf.len(),
                buf.dtype()
            )));
        }
        buf.copy_from(0, host, 0, host.len());
        Ok(())
    }

    fn download(&mut self, _dev: usize, buf: &HostBuf) -> BackendResult<HostBuf> {
        Ok(buf.clone())
    }

    fn collective(
        &mut self,
        call: &CollectiveCall,
        send: &[HostBuf],
        recv: &mut [HostBuf],
    ) -> BackendResult<()> {
        if self.g == 1 {
            return self.flat(call, send, recv);
        }
        match call.dtype {
            Dtype::F32 => self.hierarchical::<f32>(call, send, recv),
            Dtype::F64 => self.hierarchical::<f64>(call, send, recv),
            Dtype::I32 => self.hierarchical::<i32>(call, send, recv),
            d => Err(BackendError::Unsupported(format!(
                "no {d} on the CPU backend"
            ))),
        }
    }

    fn reduce_scatter_in_place_offset(&self, _device: u32, _recv_count: usize) -> usize {
        0
    }

    fn gemm(
        &mut self,
        batches: &[GemmBatch],
        a: &[HostBuf],
        b: &[HostBuf],
        c: &mut [HostBuf],
    ) -> BackendResult<()> {
        if self.overlap.polls() {
            return overlap::gemm_polling(self, batches, a, b, c);
        }
        let workers = self.workers.as_ref();
        let engine = self.gemm.as_ref().ok_or_else(|| {
            BackendError::Unsupported(
                "no GEMM provider was set up for this launch (DevicePlan::gemm is None)".into(),
            )
        })?;
        match a.first().map(HostBuf::dtype) {
            Some(Dtype::F32) => gemm_typed::<f32>(engine, workers, batches, a, b, c),
            Some(Dtype::F64) => gemm_typed::<f64>(engine, workers, batches, a, b, c),
            Some(d) => Err(BackendError::Unsupported(format!("CPU GEMM has no {d}"))),
            None => Ok(()),
        }
    }

    fn overlap_support(&self) -> Result<(), String> {
        Ok(())
    }

    fn set_overlap(&mut self, settings: OverlapSettings) -> BackendResult<()> {
        overlap::configure(self, settings)
    }

    fn allreduce_start(&mut self, call: &CollectiveCall, bufs: Vec<HostBuf>) -> BackendResult<u64> {
        overlap::start(self, call, bufs)
    }

    fn allreduce_wait(&mut self, ticket: u64) -> BackendResult<Vec<HostBuf>> {
        overlap::wait(self, ticket)
    }

    fn copy_within(
        &mut self,
        _dev: usize,
        dst: &mut HostBuf,
        dst_at: usize,
        src: &HostBuf,
        src_at: usize,
        len: usize,
    ) -> BackendResult<()> {
        overlap::copy_within(self, dst, dst_at, src, src_at, len)
    }

    fn synchronize(&mut self) -> BackendResult<()> {
        Ok(())
    }

    fn mark(&mut self) -> BackendResult<f64> {
        Ok(self.epoch.elapsed().as_secs_f64())
    }

    fn elapsed_s(&mut self, from: f64, to: f64) -> BackendResult<f64> {
        Ok(to - from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_partition_the_range() {
        for (len, g) in [(10, 3), (2, 4), (0, 2), (1000, 7), (1 << 20, 3)] {
            let mut next = 0;
            for w in 0..g {
                let r = chunk(len, g, w);
                assert_eq!(r.start, next);
                assert!(r.start % 64 == 0 || r.is_empty(), "{len} {g} {r:?}");
                next = r.end;
            }
            assert_eq!(next, len);
        }
        // Large messages are shared evenly (within a line of elements).
        let r = chunk(1 << 20, 3, 1);
        assert!(r.len().abs_diff((1 << 20) / 3) <= 64, "{r:?}");
    }

    #[test]
    fn local_reduction_kernels() {
        let a = HostBuf::from_fn(Dtype::I32, 4, |i| i as f64).unwrap();
        let b = HostBuf::from_fn(Dtype::I32, 4, |i| 10.0 - i as f64).unwrap();
        let mut d = HostBuf::zeros(Dtype::I32, 4).unwrap();
        let srcs = [typed::<i32>(&a), typed::<i32>(&b)];
        unsafe { reduce_range(typed::<i32>(&d), &srcs, 0..4, ReduceOp::Max) };
        assert_eq!(
            (0..4).map(|i| d.get(i)).collect::<Vec<_>>(),
            vec![10.0, 9.0, 8.0, 7.0]
        );
        unsafe { reduce_range(typed::<i32>(&d), &srcs, 1..3, ReduceOp::Sum) };
        assert_eq!(
            (0..4).map(|i| d.get(i)).collect::<Vec<_>>(),
            vec![10.0, 10.0, 10.0, 7.0]
        );
        divide(&mut d, 4, 2);
        assert_eq!(
            (d.get(0), d.get(3)),
            (5.0, 3.0),
            "integer avg truncates like MPI users expect"
        );
        // integer overflow wraps instead of panicking
        let mut d = [i32::MAX, 7];
        <i32 as Arith>::fold_slice(ReduceOp::Prod, &mut d, &[2, 3]);
        assert_eq!(d, [-2, 21]);
        // every operator, float and integer, against the scalar definition
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max] {
            let a: Vec<f64> = (0..131).map(|i| (i % 7) as f64 - 3.0).collect();
            let b: Vec<f64> = (0..131).map(|i| (i % 5) as f64 - 2.0).collect();
            let mut d = a.clone();
            <f64 as Arith>::fold_slice(op, &mut d, &b);
            for i in 0..131 {
                let want = match op {
                    ReduceOp::Sum => a[i] + b[i],
                    ReduceOp::Prod => a[i] * b[i],
                    ReduceOp::Min => a[i].min(b[i]),
                    _ => a[i].max(b[i]),
                };
                assert_eq!(d[i], want, "{op:?} at {i}");
            }
        }
    }

    #[test]
    fn gemm_matches_naive_product() {
        use crate::params::MatmulShape;
        let shape = MatmulShape { m: 7, n: 5, k: 9 };
        let g = GemmBatch {
            shape,
            count: 2,
            shared_b: true,
        };
        let a = vec![HostBuf::from_fn(Dtype::F64, 2 * 63, |i| (i % 7) as f64 - 3.0).unwrap()];
        let b = vec![HostBuf::from_fn(Dtype::F64, 45, |i| (i % 5) as f64 - 2.0).unwrap()];
        let mut c = vec![HostBuf::zeros(Dtype::F64, 2 * 35).unwrap()];
        let engine =
            GemmEngine::Crate(providers::CrateGemm::new(&DevicePlan::unbound(1, 1)).unwrap());
        gemm_typed::<f64>(&engine, None, &[g], &a, &b, &mut c).unwrap();
        for j in 0..2 {
            for i in 0..7 {
                for col in 0..5 {
                    let want: f64 = (0..9)
                        .map(|k| a[0].get(j * 63 + i * 9 + k) * b[0].get(k * 5 + col))
                        .sum();
                    assert_eq!(c[0].get(j * 35 + i * 5 + col), want);
                }
            }
        }
    }
}
