//! Hybrid (one rank per node driving G devices): hierarchical collectives, one team job each.
//!
//! `hierarchical` is over 80 lines on purpose for now: one arm per collective, each one team
//! job over the same per-call set-up; it can be split one function per collective now that
//! issue 12's changes to these team jobs (gather/release, jobs capturing by value) landed.

use super::kernels::{
    chunk, copy_range, divide_range, ensure, fold_into, typed, Arith, Excl, LeaderComm,
};
use super::CpuBackend;
use crate::backend::{BackendResult, CollectiveCall, HostBuf};
use crate::comm::raw::{self, Src};
use crate::params::{ReduceOp, Workload};
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
