//! Pure MPI (one device per rank): every collective is one MPI call on the rank's buffers, in
//! place through `MPI_IN_PLACE` or out of place.

use super::kernels::divide;
use super::CpuBackend;
use crate::backend::{BackendResult, CollectiveCall, HostBuf};
use crate::comm::raw::{self, Src};
use crate::params::{ReduceOp, Workload};

impl CpuBackend {
    /// Pure MPI: one MPI call per collective.
    pub(super) fn flat(
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
}
