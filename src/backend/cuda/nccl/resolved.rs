//! Planned calls checked against the buffers they point into before a device pointer is
//! formed (a planning mistake is an error, never an out-of-bounds access), then issued.

use super::calls::{Call, PlanError, Side, Span};
use super::{nccl_op, nccl_type};
use super::{CudaError, CudaResult};
use crate::params::Dtype;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::nccl::result as nres;
use cudarc::nccl::sys as nsys;
use std::ffi::c_void;

/// A device buffer as NCCL sees it: base address and length in elements.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Region {
    pub ptr: CUdeviceptr,
    pub len: usize,
}

/// A [`Call`] whose ranges were checked against the device's buffers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved {
    pub(super) call: Call,
    send: Option<Region>,
    recv: Region,
    elem_bytes: usize,
}

impl Resolved {
    /// Checks every range of `call` against the buffers (`send` is `None` in place).
    pub(crate) fn new(
        call: Call,
        send: Option<Region>,
        recv: Region,
        elem_bytes: usize,
    ) -> Result<Resolved, PlanError> {
        for s in call.spans() {
            let region = match s.side {
                Side::Send => send.ok_or(PlanError::NoSendBuffer)?,
                Side::Recv => recv,
            };
            let end = s.at.checked_add(s.len).ok_or(PlanError::Overflow)?;
            if end > region.len {
                return Err(PlanError::OutOfRange {
                    call,
                    end,
                    len: region.len,
                    side: s.side,
                });
            }
        }
        Ok(Resolved {
            call,
            send,
            recv,
            elem_bytes,
        })
    }

    pub(super) fn addr(&self, s: Span) -> *mut c_void {
        let base = match s.side {
            Side::Send => self.send.expect("checked in Resolved::new").ptr,
            Side::Recv => self.recv.ptr,
        };
        (base + (s.at * self.elem_bytes) as u64) as *mut c_void
    }

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
