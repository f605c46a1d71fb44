//! Pure MPI (one device per rank): every collective is one MPI call on the rank's buffers, in
//! place through `MPI_IN_PLACE` or out of place.

use super::kernels::divide;
use super::CpuBackend;
use crate::backend::{BackendResult, CollectiveCall, HostBuf};
use crate::comm::raw::{self, Src};
use crate::params::{ReduceOp, Workload};

impl CpuBackend {
    /// Pure MPI: one MPI call per collective, then the division of `avg`.
    pub(super) fn flat(
        &mut self,
        call: &CollectiveCall,
        send: &[HostBuf],
        recv: &mut [HostBuf],
    ) -> BackendResult<()> {
        self.prepare_flat(call, send, recv).issue();
        let divides = match call.workload {
            Workload::Allreduce | Workload::ReduceScatter => true,
            Workload::Reduce => self.rank == call.root.unwrap_or(0),
            _ => false,
        };
        if divides && call.op == Some(ReduceOp::Avg) {
            divide(&mut recv[0], call.recv_count, call.devices);
        }
        Ok(())
    }

    /// The one MPI call of a pure-MPI collective, its arguments resolved and checked (`avg`
    /// reduces with SUM here; [`CpuBackend::flat`] divides).
    pub(super) fn prepare_flat<'a>(
        &self,
        call: &CollectiveCall,
        send: &'a [HostBuf],
        recv: &'a mut [HostBuf],
    ) -> raw::Prepared<'a> {
        let comm = self.raw_comm();
        let size = self.size as usize;
        let op = call.op.unwrap_or(ReduceOp::Sum);
        let buf = &mut recv[0];
        let src = if call.in_place {
            Src::InPlace
        } else {
            Src::Buf(&send[0])
        };
        match call.workload {
            Workload::Allreduce => raw::prepare_allreduce(comm, src, buf, call.send_count, op),
            Workload::Reduce => {
                let root = call.root.unwrap_or(0);
                let (src, dst) = match (self.rank == root, call.in_place) {
                    (true, _) => (src, Some(buf)),
                    // Off the root "in place" means the input is the one buffer.
                    (false, true) => (Src::Buf(&*buf), None),
                    (false, false) => (src, None),
                };
                let n = call.send_count;
                raw::prepare_reduce(comm, src, dst, call.dtype, n, op, root as i32)
            }
            Workload::Broadcast => {
                raw::prepare_bcast(comm, buf, call.send_count, call.root.unwrap_or(0) as i32)
            }
            Workload::Allgather => raw::prepare_allgather(comm, size, src, buf, call.send_count),
            Workload::ReduceScatter => {
                raw::prepare_reduce_scatter_block(comm, size, src, buf, call.recv_count, op)
            }
            Workload::Alltoall => {
                raw::prepare_alltoall(comm, size, src, buf, call.recv_count / size)
            }
            Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay => {
                unreachable!("not a collective")
            }
        }
    }
}
