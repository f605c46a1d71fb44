//! Point-to-point between ranks for `scalebench links --backend rocm`: `ncclSend`/`ncclRecv`
//! (RCCL keeps NCCL's API) between this rank's GCD and a peer's, in one RCCL group on the
//! device's stream (the stream the timing marks are recorded on), over the communicator set-up
//! created. Pure MPI only: one GCD per rank, so RCCL rank = MPI rank. The CUDA twin is
//! `backend/cuda/p2p.rs`; the calls themselves are the shared [`crate::backend::ccl`] ones.

use super::backend::RocmBackend;
use super::error::RocmError;
use super::memory::RocmBuf;
use crate::backend::ccl::calls::{Call, Side, Span};
use crate::backend::ccl::{Region, Resolved};
use crate::backend::{BackendError, BackendResult};
use crate::params::Dtype;

impl RocmBackend {
    /// The loaded RCCL's version (its NCCL API version, e.g. `2.20.5`).
    pub fn rccl_version(&self) -> &str {
        &self.rccl_version
    }

    /// The devices are scalebench's stand-ins (no time here is a GPU's).
    pub fn is_standin(&self) -> bool {
        self.standin
    }

    /// One RCCL group on the rank's one GCD: all of `send` to rank `to` and/or all of `recv`
    /// from rank `from` (both: a bidirectional exchange), enqueued on the device's stream.
    /// On an error the communicators are aborted, so later calls fail with the sentence
    /// instead of hanging on them.
    pub fn send_recv(
        &mut self,
        send: Option<(&RocmBuf, u32)>,
        recv: Option<(&mut RocmBuf, u32)>,
    ) -> BackendResult<()> {
        if self.devices.len() != 1 {
            return Err(BackendError::check(format!(
                "point-to-point exchanges drive one GCD per rank; this rank drives {}",
                self.devices.len()
            )));
        }
        let comm = self.comms.as_ref().map_err(|e| e.clone())?.comms[0];
        let span = |side, len| Span { side, at: 0, len };
        let mut calls = Vec::new();
        if let Some((b, to)) = send {
            self.check_len("send", b, 0, Dtype::I32, 0)?;
            let c = Call::Send {
                send: span(Side::Send, b.count),
                peer: to,
            };
            let none = Region { ptr: 0, len: 0 };
            calls.push(Resolved::new(c, Some(b.region()), none, 4)?);
        }
        if let Some((b, from)) = recv {
            self.check_len("receive", b, 0, Dtype::I32, 0)?;
            let c = Call::Recv {
                recv: span(Side::Recv, b.count),
                peer: from,
            };
            calls.push(Resolved::new(c, None, b.region(), 4)?);
        }
        let stream = self.devices[0].stream;
        self.rccl.group_start()?;
        let mut first_err = None;
        for r in &calls {
            // SAFETY: `comm` is this GCD's live communicator and `stream` its live stream; the
            // regions were checked against live buffers of this GCD, which stay allocated until
            // it has synchronised (the caller's buffers outlive the exchange).
            if let Err(e) = unsafe { self.rccl.launch(r, Dtype::I32, comm, stream) } {
                first_err = Some(e);
                break;
            }
        }
        // Close the group even after an error, or RCCL stays in group mode.
        if let Err(e) = self.rccl.group_end() {
            first_err.get_or_insert(e);
        }
        match first_err {
            Some(e) => {
                let failed = RocmError::Check(format!(
                    "ncclSend/ncclRecv: {e}: rerun with NCCL_DEBUG=WARN to see RCCL's reason"
                ));
                self.comms = Err(RocmError::CommsAborted(Box::new(failed.clone())));
                Err(failed.into())
            }
            None => Ok(()),
        }
    }
}
