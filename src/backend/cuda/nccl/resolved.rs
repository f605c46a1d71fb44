//! The checked calls of [`crate::backend::ccl`] issued through cudarc's NCCL bindings.

use super::super::{CudaError, CudaResult};
use super::{nccl_op, nccl_type};
use crate::backend::ccl::{Call, Resolved};
use crate::params::Dtype;
use cudarc::nccl::result as nres;
use cudarc::nccl::sys as nsys;

impl Resolved {
    /// Enqueues the call on `stream`.
    ///
    /// # Safety
    /// `comm` must be a live communicator of this device, `stream` a live stream of the same
    /// device, and the regions given to [`Resolved::new`] live device allocations of this
    /// device that stay allocated until the stream has run the call.
    pub(crate) unsafe fn launch(
        &self,
        dtype: Dtype,
        comm: nsys::ncclComm_t,
        stream: nsys::cudaStream_t,
    ) -> CudaResult<()> {
        let t = nccl_type(dtype);
        // SAFETY: every range was checked against its buffer in `Resolved::new`; the caller
        // guarantees that the buffers, the communicator and the stream are live and belong to
        // one device. Counts and roots are those NCCL documents for each call.
        let r = unsafe {
            match self.call {
                Call::AllReduce { send, recv, op } => nres::all_reduce(
                    self.addr(send),
                    self.addr(recv),
                    send.len,
                    t,
                    nccl_op(op),
                    comm,
                    stream,
                ),
                Call::Reduce {
                    send,
                    recv,
                    op,
                    root,
                } => nres::reduce(
                    self.addr(send),
                    self.addr(recv),
                    send.len,
                    t,
                    nccl_op(op),
                    root as i32,
                    comm,
                    stream,
                ),
                Call::Broadcast { send, recv, root } => nres::broadcast(
                    self.addr(send),
                    self.addr(recv),
                    send.len,
                    t,
                    root as i32,
                    comm,
                    stream,
                ),
                Call::AllGather { send, recv } => {
                    nres::all_gather(self.addr(send), self.addr(recv), send.len, t, comm, stream)
                }
                Call::ReduceScatter { send, recv, op } => nres::reduce_scatter(
                    self.addr(send),
                    self.addr(recv),
                    recv.len,
                    t,
                    nccl_op(op),
                    comm,
                    stream,
                ),
                Call::Send { send, peer } => {
                    nres::send(self.addr(send), send.len, t, peer as i32, comm, stream)
                }
                Call::Recv { recv, peer } => {
                    nres::recv(self.addr(recv), recv.len, t, peer as i32, comm, stream)
                }
            }
        };
        r.map(|_| ()).map_err(|e| CudaError::nccl(None, e))
    }
}
