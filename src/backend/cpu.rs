//! The CPU backend: host buffers, MPI collectives, CPU GEMM (the system BLAS or the `gemm`
//! crate, see [`super::gemm`]).
//!
//! Pure MPI (one device per rank): every collective is one MPI call on the rank's buffers, in
//! place through `MPI_IN_PLACE` or out of place.
//!
//! Hybrid (one rank per node driving G devices): each device is a worker thread, bound to its
//! own CPUs, that owns its buffers (allocated by the worker, so first touch places them near
//! it). Collectives are hierarchical: the workers combine their buffers in shared memory (in
//! parallel, each on its slice), the rank runs one MPI collective among node leaders, and the
//! workers copy the result into their own buffers. MPI is only called from the main thread
//! (MPI_THREAD_FUNNELED).

use super::gemm::{self as providers, CblasScalar, GemmEngine};
use super::{
    Backend, BackendError, BackendResult, CollectiveCall, DevicePlan, Element, GemmBatch, HostBuf,
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
    fn combine(op: ReduceOp) -> fn(Self, Self) -> Self;
    fn div_devices(self, n: u32) -> Self;
}

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            fn combine(op: ReduceOp) -> fn($t, $t) -> $t {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg => |a, b| a + b,
                    ReduceOp::Prod => |a, b| a * b,
                    ReduceOp::Min => |a: $t, b| a.min(b),
                    ReduceOp::Max => |a: $t, b| a.max(b),
                }
            }
            fn div_devices(self, n: u32) -> $t {
                self / n as $t
            }
        }
    };
}
float_arith!(f32);
float_arith!(f64);

impl Arith for i32 {
    fn combine(op: ReduceOp) -> fn(i32, i32) -> i32 {
        match op {
            ReduceOp::Sum | ReduceOp::Avg => i32::wrapping_add,
            ReduceOp::Prod => i32::wrapping_mul,
            ReduceOp::Min => |a, b| a.min(b),
            ReduceOp::Max => |a, b| a.max(b),
        }
    }
    fn div_devices(self, n: u32) -> i32 {
        self / n as i32
    }
}

/// A raw pointer that worker threads may share; every use touches a range no other thread
/// touches in the same phase (phases are separated by the pool's broadcast barrier).
#[derive(Clone, Copy)]
struct SyncPtr<T>(*mut T);
// SAFETY: see the type's doc: disjoint ranges per thread and phase.
unsafe impl<T> Send for SyncPtr<T> {}
unsafe impl<T> Sync for SyncPtr<T> {}

fn typed<T: Element>(b: &HostBuf) -> SyncPtr<T> {
    assert_eq!(b.dtype(), T::DTYPE, "buffer of the wrong dtype");
    SyncPtr(b.as_ptr() as *mut T)
}

/// The slice of `0..len` worker `w` of `g` handles.
fn chunk(len: usize, g: usize, w: usize) -> Range<usize> {
    len * w / g..len * (w + 1) / g
}

/// dst[r] = fold(op, srcs[..][r]).
///
/// # Safety
/// Every pointer must be valid for `r`, and `dst[r]` not aliased by another thread.
unsafe fn reduce_range<T: Arith>(
    dst: SyncPtr<T>,
    srcs: &[SyncPtr<T>],
    r: Range<usize>,
    op: ReduceOp,
) {
    let f = T::combine(op);
    let d = std::slice::from_raw_parts_mut(dst.0.add(r.start), r.len());
    d.copy_from_slice(std::slice::from_raw_parts(srcs[0].0.add(r.start), r.len()));
    for s in &srcs[1..] {
        let s = std::slice::from_raw_parts(s.0.add(r.start), r.len());
        for (x, y) in d.iter_mut().zip(s) {
            *x = f(*x, *y);
        }
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
    if std::ptr::eq(dst.0.add(at), src.0.add(from)) && avg.is_none() {
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
    /// Hybrid: one thread per device.
    workers: Option<rayon::ThreadPool>,
    /// The GEMM provider (`None`: this launch runs no GEMM).
    gemm: Option<GemmEngine>,
    gemm_provenance: Option<GemmProvenance>,
    /// Node-level buffers for hierarchical collectives, reused across calls.
    scratch: [Option<HostBuf>; 2],
    epoch: Instant,
    resolution_s: f64,
    /// Problems met while setting up (e.g. a worker binding that did not take).
    warnings: Vec<String>,
}

fn ensure(slot: &mut Option<HostBuf>, dtype: Dtype, len: usize) -> BackendResult<&mut HostBuf> {
    let fits = matches!(slot, Some(b) if b.dtype() == dtype && b.len() >= len);
    if !fits {
        *slot = None;
        *slot = Some(HostBuf::zeros(dtype, len)?);
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
        let workers = if g > 1 {
            let cpus = cfg.worker_cpus.clone();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(g)
                .thread_name(|i| format!("scalebench-dev{i}"))
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
            scratch: [None, None],
            epoch,
            resolution_s,
            warnings,
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
        match &self.workers {
            Some(pool) => pool.broadcast(|_| affinity::current_thread_cpus().unwrap_or_default()),
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
            Workload::Matmul | Workload::BatchMatmul => unreachable!("not a collective"),
        }
        Ok(())
    }

    /// Hybrid: workers combine in shared memory, leaders run MPI, workers copy out.
    fn hierarchical<T: Arith>(
        &mut self,
        call: &CollectiveCall,
        send: &[HostBuf],
        recv: &mut [HostBuf],
    ) -> BackendResult<()> {
        let g = self.g;
        let size = self.size as usize;
        let rank = self.rank as usize;
        let comm = self.comm.as_raw();
        let pool = self.workers.as_ref().expect("hybrid mode has workers");
        let [s0, s1] = &mut self.scratch;
        let n = call.devices as usize;
        let op = call.op.unwrap_or(ReduceOp::Sum);
        let avg = (call.op == Some(ReduceOp::Avg)).then_some(call.devices);
        let srcs: Vec<SyncPtr<T>> = (0..g)
            .map(|w| {
                if call.in_place {
                    typed(&recv[w])
                } else {
                    typed(&send[w])
                }
            })
            .collect();
        let dsts: Vec<SyncPtr<T>> = recv.iter().map(typed).collect();
        // SAFETY (all phases below): each worker writes only its own chunk of the scratch
        // buffer or its own device buffer; sources are only read; phases are separated by the
        // pool's broadcast, which returns after every worker finished.
        match call.workload {
            Workload::Allreduce => {
                let len = call.send_count;
                let s = ensure(s0, call.dtype, len)?;
                let sp = typed::<T>(s);
                pool.broadcast(|c| unsafe {
                    reduce_range(sp, &srcs, chunk(len, g, c.index()), op)
                });
                raw::allreduce(comm, Src::InPlace, s, len, op);
                pool.broadcast(|c| unsafe { copy_range(dsts[c.index()], 0, sp, 0, len, avg) });
            }
            Workload::Reduce => {
                let len = call.send_count;
                let root = call.root.unwrap_or(0) as usize;
                let (root_rank, root_w) = (root / g, root % g);
                let s = ensure(s0, call.dtype, len)?;
                let sp = typed::<T>(s);
                pool.broadcast(|c| unsafe {
                    reduce_range(sp, &srcs, chunk(len, g, c.index()), op)
                });
                if rank == root_rank {
                    raw::reduce(
                        comm,
                        Src::InPlace,
                        Some(s),
                        call.dtype,
                        len,
                        op,
                        root_rank as i32,
                    );
                    // SAFETY: one thread; the root device's buffer holds len elements.
                    unsafe { copy_range(dsts[root_w], 0, sp, 0, len, avg) };
                } else {
                    raw::reduce(
                        comm,
                        Src::Buf(s),
                        None,
                        call.dtype,
                        len,
                        op,
                        root_rank as i32,
                    );
                }
            }
            Workload::Broadcast => {
                let len = call.send_count;
                let root = call.root.unwrap_or(0) as usize;
                let (root_rank, root_w) = (root / g, root % g);
                let from = if rank == root_rank {
                    if !call.in_place {
                        // SAFETY: distinct buffers of len elements.
                        unsafe { copy_range(dsts[root_w], 0, srcs[root_w], 0, len, None) };
                    }
                    raw::bcast(comm, &mut recv[root_w], len, root_rank as i32);
                    dsts[root_w]
                } else {
                    let s = ensure(s0, call.dtype, len)?;
                    raw::bcast(comm, s, len, root_rank as i32);
                    typed::<T>(s)
                };
                let skip = (rank == root_rank).then_some(root_w);
                pool.broadcast(|c| {
                    if Some(c.index()) != skip {
                        unsafe { copy_range(dsts[c.index()], 0, from, 0, len, None) }
                    }
                });
            }
            Workload::Allgather => {
                let base = call.send_count;
                let s = ensure(s0, call.dtype, n * base)?;
                let sp = typed::<T>(s);
                let in_place = call.in_place;
                pool.broadcast(|c| {
                    let w = c.index();
                    let d = rank * g + w;
                    let from = if in_place { d * base } else { 0 };
                    unsafe { copy_range(sp, d * base, srcs[w], from, base, None) }
                });
                raw::allgather(comm, size, Src::InPlace, s, g * base);
                pool.broadcast(|c| unsafe {
                    copy_range(dsts[c.index()], 0, sp, 0, n * base, None)
                });
            }
            Workload::ReduceScatter => {
                let base = call.recv_count;
                let len = n * base;
                let s = ensure(s0, call.dtype, len)?;
                let sp = typed::<T>(s);
                pool.broadcast(|c| unsafe {
                    reduce_range(sp, &srcs, chunk(len, g, c.index()), op)
                });
                // MPI's in-place convention: this rank's g blocks land at the front.
                raw::reduce_scatter_block(comm, size, Src::InPlace, s, g * base, op);
                pool.broadcast(|c| unsafe {
                    copy_range(dsts[c.index()], 0, sp, c.index() * base, base, avg)
                });
            }
            Workload::Alltoall => {
                let base = call.recv_count / n;
                let block = g * g * base;
                let out = ensure(s1, call.dtype, size * block)?;
                let op_out = typed::<T>(out);
                let inp = ensure(s0, call.dtype, size * block)?;
                let op_in = typed::<T>(inp);
                // Pack: per destination rank q, blocks ordered (source worker, destination worker).
                pool.broadcast(|c| {
                    let w = c.index();
                    for q in 0..size {
                        for v in 0..g {
                            unsafe {
                                copy_range(
                                    op_in,
                                    q * block + (w * g + v) * base,
                                    srcs[w],
                                    (q * g + v) * base,
                                    base,
                                    None,
                                )
                            }
                        }
                    }
                });
                raw::alltoall(comm, size, Src::Buf(inp), out, block);
                // Unpack: device v takes from every (rank q, worker w) the block meant for it.
                pool.broadcast(|c| {
                    let v = c.index();
                    for q in 0..size {
                        for w in 0..g {
                            unsafe {
                                copy_range(
                                    dsts[v],
                                    (q * g + w) * base,
                                    op_out,
                                    q * block + (w * g + v) * base,
                                    base,
                                    None,
                                )
                            }
                        }
                    }
                });
            }
            Workload::Matmul | Workload::BatchMatmul => unreachable!("not a collective"),
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
                if self.g > 1 { "hierarchical: shared-memory combine among worker threads, MPI among node leaders" } else { "one MPI call per collective" },
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
        match &self.workers {
            // Allocate and zero on the device's own thread (first touch → its NUMA node).
            Some(pool) => pool
                .broadcast(|c| (c.index() == dev).then(|| HostBuf::zeros(dtype, count)))
                .into_iter()
                .flatten()
                .next()
                .expect("device index within the pool")
                .map_err(Into::into),
            None => Ok(HostBuf::zeros(dtype, count)?),
        }
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
        for (len, g) in [(10, 3), (2, 4), (0, 2), (1000, 7)] {
            let mut next = 0;
            for w in 0..g {
                let r = chunk(len, g, w);
                assert_eq!(r.start, next);
                next = r.end;
            }
            assert_eq!(next, len);
        }
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
        assert_eq!(<i32 as Arith>::combine(ReduceOp::Prod)(i32::MAX, 2), -2);
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
