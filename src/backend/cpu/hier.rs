//! Hybrid (one rank per node driving G devices): hierarchical collectives, one team job each.
//!
//! `hierarchical` gathers the per-call set-up once ([`Hier`]) and hands it to one function per
//! collective. Each is `#[inline]` and copies the fields its job uses into locals before the
//! job, so every job captures what it captured when all lived in one function: the timed path
//! gains no allocation, no dynamic dispatch and no synchronisation.
//!
//! Soundness of every job's `unsafe` (the invariant each `// SAFETY:` below relies on): in
//! each phase a worker writes only ranges no other worker reads or writes in that phase (its
//! chunk, or its own buffer); phases are separated by the team's gather/release; only worker 0
//! touches a buffer through `Excl` (for MPI), between them. Jobs capture by value (`move`), so
//! a worker reads nothing the leader wrote for this call beyond the release's lines (see
//! `Team::run`). The pointers come from this call's `send`/`recv` buffers (or the backend's
//! scratch, grown to the call's length before the job), which outlive the job.

use super::super::team::Team;
use super::kernels::{
    chunk, copy_range, divide_range, ensure, fold_into, typed, Arith, Excl, LeaderComm, SyncPtr,
};
use super::CpuBackend;
use crate::backend::{BackendResult, CollectiveCall, HostBuf};
use crate::comm::raw::{self, Src};
use crate::params::{Dtype, ReduceOp, Workload};
use mpi::raw::AsRaw;

impl CpuBackend {
    /// Hybrid: one team job per collective. Workers combine in shared memory, each on its own
    /// chunk; worker 0 (this thread) waits for their parts (gather), runs the MPI collective
    /// among node leaders and hands the result back (release); workers copy it into their own
    /// buffers. On one rank there is nothing to exchange, so the MPI step and its
    /// synchronisation are left out.
    pub(super) fn hierarchical<T: Arith>(
        &mut self,
        call: &CollectiveCall,
        send: &[HostBuf],
        recv: &mut [HostBuf],
    ) -> BackendResult<()> {
        let g = self.g;
        let in_place = call.in_place;
        let team = self.team.as_ref().expect("hybrid mode has a team");
        let [s0, s1] = &mut self.scratch;
        let (srcs, dsts) = self.tables.update(
            (0..g).map(|w| typed::<T>(if in_place { &recv[w] } else { &send[w] })),
            recv.iter().map(typed::<T>),
        );
        let h = Hier {
            g,
            size: self.size as usize,
            rank: self.rank as usize,
            n: call.devices as usize,
            dtype: call.dtype,
            op: call.op.unwrap_or(ReduceOp::Sum),
            avg: (call.op == Some(ReduceOp::Avg)).then_some(call.devices),
            multi: self.size > 1,
            in_place,
            comm: LeaderComm(self.comm.as_raw()),
            srcs,
            dsts,
            recv_bufs: Excl(recv.as_mut_ptr()),
        };
        let root = call.root.unwrap_or(0) as usize;
        match call.workload {
            Workload::Allreduce => allreduce(team, &h, call.send_count),
            Workload::Reduce => reduce(team, &h, s0, call.send_count, root)?,
            Workload::Broadcast => broadcast(team, &h, call.send_count, root),
            Workload::Allgather => allgather(team, &h, s0, call.send_count)?,
            Workload::ReduceScatter => reduce_scatter(team, &h, s0, call.recv_count)?,
            Workload::Alltoall => alltoall(team, &h, s0, s1, call.recv_count / h.n)?,
            Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay => {
                unreachable!("not a collective")
            }
        }
        Ok(())
    }
}

/// What every hierarchical job of one call uses: plain values, the leaders' communicator and
/// the devices' pointer tables (borrowed from the backend, reused across calls).
struct Hier<'a, T> {
    /// Devices (workers) on this rank.
    g: usize,
    /// Ranks (node leaders).
    size: usize,
    rank: usize,
    /// Devices in the job (all ranks).
    n: usize,
    dtype: Dtype,
    op: ReduceOp,
    /// Devices to divide by (the `avg` operator).
    avg: Option<u32>,
    /// More than one rank: there is an MPI step.
    multi: bool,
    in_place: bool,
    comm: LeaderComm,
    srcs: &'a [SyncPtr<T>],
    dsts: &'a [SyncPtr<T>],
    recv_bufs: Excl<HostBuf>,
}

/// Worker w owns chunk w: folds it into device 0's buffer, and after the leaders' exchange,
/// copies it to every other device's buffer.
#[inline]
fn allreduce<T: Arith>(team: &Team, h: &Hier<'_, T>, len: usize) {
    let Hier {
        g,
        op,
        avg,
        multi,
        comm,
        srcs,
        dsts,
        recv_bufs,
        ..
    } = *h;
    // SAFETY: before the gather worker w writes only chunk w of device 0's buffer; worker 0
    // alone hands that buffer to MPI between gather and release; afterwards worker w writes
    // chunk w of every device's buffer (the module's invariant).
    team.run(move |w, t| unsafe {
        let r = chunk(len, g, w);
        fold_into(dsts[0], r.start, srcs, r.start, r.len(), op);
        if multi {
            t.gather();
            if w == 0 {
                raw::allreduce(comm.get(), Src::InPlace, recv_bufs.at(0), len, op);
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

/// Workers fold their chunks into node scratch; worker 0 reduces it to the root rank through
/// MPI; on the root rank each worker copies its chunk to the root device.
#[inline]
fn reduce<T: Arith>(
    team: &Team,
    h: &Hier<'_, T>,
    s0: &mut Option<HostBuf>,
    len: usize,
    root: usize,
) -> BackendResult<()> {
    let Hier {
        g,
        rank,
        dtype,
        op,
        avg,
        multi,
        comm,
        srcs,
        dsts,
        ..
    } = *h;
    let (root_rank, root_w) = (root / g, root % g);
    let here = rank == root_rank;
    let s = ensure(s0, dtype, len, team)?;
    let sp = typed::<T>(s);
    let sb = Excl::new(s);
    // SAFETY: worker w writes only chunk w of the scratch before the gather; worker 0 alone
    // passes the scratch to MPI after it; on the root rank the release orders the result
    // before each worker copies its own chunk to the root device (the module's invariant).
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
                raw::reduce(comm.get(), src, out, dtype, len, op, root_rank as i32);
            }
            if here {
                t.release();
            }
        }
        if here {
            copy_range(dsts[root_w], r.start, sp, r.start, r.len(), avg);
        }
    });
    Ok(())
}

/// The root device's data (after the leaders' broadcast elsewhere) lands in one device's
/// buffer; every other worker copies it into its own.
#[inline]
fn broadcast<T: Arith>(team: &Team, h: &Hier<'_, T>, len: usize, root: usize) {
    let Hier {
        g,
        rank,
        multi,
        in_place,
        comm,
        srcs,
        dsts,
        recv_bufs,
        ..
    } = *h;
    let (root_rank, root_w) = (root / g, root % g);
    let here = rank == root_rank;
    // Where the data lands on this rank: the root device, or device 0 elsewhere.
    let at = if here { root_w } else { 0 };
    // The root's own copy (out of place) is gathered for the leader's MPI call and for the
    // other workers; MPI's result needs only the release.
    let local_copy = here && !in_place;
    // SAFETY: before the gather worker w writes only chunk w of the landing buffer; worker 0
    // alone hands it to MPI before the release; afterwards each worker but the landing one
    // writes only its own buffer, reading the landing one (the module's invariant).
    team.run(move |w, t| unsafe {
        if local_copy {
            let r = chunk(len, g, w);
            copy_range(dsts[root_w], r.start, srcs[root_w], r.start, r.len(), None);
            t.gather();
        }
        if multi && w == 0 {
            raw::bcast(comm.get(), recv_bufs.at(at), len, root_rank as i32);
        }
        if local_copy || multi {
            t.release();
        }
        if w != at {
            copy_range(dsts[w], 0, dsts[at], 0, len, None);
        }
    });
}

/// Every device's block lands in every device's buffer: directly on one rank, through node
/// scratch and the leaders' allgather on several.
#[inline]
fn allgather<T: Arith>(
    team: &Team,
    h: &Hier<'_, T>,
    s0: &mut Option<HostBuf>,
    base: usize,
) -> BackendResult<()> {
    let Hier {
        g,
        size,
        rank,
        n,
        dtype,
        multi,
        in_place,
        comm,
        srcs,
        dsts,
        ..
    } = *h;
    let from = move |d: usize| if in_place { d * base } else { 0 };
    if !multi {
        // Each worker copies every device's block into its own buffer (in place, its own
        // block is already there and no one writes the blocks it reads).
        // SAFETY: worker w writes only its own buffer, and no block another worker reads.
        team.run(move |w, _| unsafe {
            for (v, s) in srcs.iter().enumerate() {
                if !(in_place && v == w) {
                    copy_range(dsts[w], v * base, *s, from(v), base, None);
                }
            }
        });
        return Ok(());
    }
    let s = ensure(s0, dtype, n * base, team)?;
    let sp = typed::<T>(s);
    let sb = Excl::new(s);
    // SAFETY: worker w writes only its device's block of the scratch before the gather;
    // worker 0 alone passes the scratch to MPI before the release; afterwards each worker
    // writes only its own buffer (the module's invariant).
    team.run(move |w, t| unsafe {
        let d = rank * g + w;
        copy_range(sp, d * base, srcs[w], from(d), base, None);
        t.gather();
        if w == 0 {
            raw::allgather(comm.get(), size, Src::InPlace, sb.get(), g * base);
        }
        t.release();
        copy_range(dsts[w], 0, sp, 0, n * base, None);
    });
    Ok(())
}

/// Each device gets its block of the sum: folded straight into the outputs on one rank out
/// of place, through node scratch (and the leaders' reduce_scatter) otherwise.
#[inline]
fn reduce_scatter<T: Arith>(
    team: &Team,
    h: &Hier<'_, T>,
    s0: &mut Option<HostBuf>,
    base: usize,
) -> BackendResult<()> {
    let Hier {
        g,
        size,
        n,
        dtype,
        op,
        avg,
        multi,
        in_place,
        comm,
        srcs,
        dsts,
        ..
    } = *h;
    if !multi && !in_place {
        // Worker w folds block w of every input straight into its own output.
        // SAFETY: worker w writes only its own output; the inputs are only read.
        team.run(move |w, _| unsafe {
            fold_into(dsts[w], 0, srcs, w * base, base, op);
            if let Some(k) = avg {
                divide_range(dsts[w], 0..base, k);
            }
        });
        return Ok(());
    }
    let len = n * base;
    let s = ensure(s0, dtype, len, team)?;
    let sp = typed::<T>(s);
    let sb = Excl::new(s);
    // SAFETY: worker w writes only chunk w of the scratch before the gather; worker 0 alone
    // passes the scratch to MPI before the release; afterwards each worker writes only its
    // own output (the module's invariant).
    team.run(move |w, t| unsafe {
        let r = chunk(len, g, w);
        fold_into(sp, r.start, srcs, r.start, r.len(), op);
        t.gather();
        // MPI's in-place convention: this rank's g blocks land at the front.
        if multi && w == 0 {
            raw::reduce_scatter_block(comm.get(), size, Src::InPlace, sb.get(), g * base, op);
        }
        t.release();
        copy_range(dsts[w], 0, sp, w * base, base, avg);
    });
    Ok(())
}

/// Device v gets block v of every device's input: directly on one rank out of place, else
/// packed per destination rank into node scratch, exchanged by the leaders and unpacked.
#[inline]
fn alltoall<T: Arith>(
    team: &Team,
    h: &Hier<'_, T>,
    s0: &mut Option<HostBuf>,
    s1: &mut Option<HostBuf>,
    base: usize,
) -> BackendResult<()> {
    let Hier {
        g,
        size,
        dtype,
        multi,
        in_place,
        comm,
        srcs,
        dsts,
        ..
    } = *h;
    if !multi && !in_place {
        // SAFETY: device v's worker writes only its own output; the inputs are only read.
        team.run(move |v, _| unsafe {
            for (w, s) in srcs.iter().enumerate() {
                copy_range(dsts[v], w * base, *s, v * base, base, None);
            }
        });
        return Ok(());
    }
    let block = g * g * base;
    let out = ensure(s1, dtype, size * block, team)?;
    let op_out = typed::<T>(out);
    let ob = Excl::new(out);
    let inp = ensure(s0, dtype, size * block, team)?;
    let op_in = typed::<T>(inp);
    let ib = Excl::new(inp);
    // SAFETY: worker w packs only its own (source w) blocks of the input scratch before the
    // gather; worker 0 alone passes both scratch buffers to MPI before the release;
    // afterwards each worker writes only its own output (the module's invariant).
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
            raw::alltoall(comm.get(), size, Src::Buf(&*ib.get()), ob.get(), block);
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
    Ok(())
}
