//! Point-to-point between ranks for `scalebench links --backend cuda`: `ncclSend`/`ncclRecv`
//! between this rank's GPU and a peer's, in one NCCL group on the device's stream (the stream
//! the timing marks are recorded on), over the communicator [`super::setup`] created. Pure MPI
//! only: one GPU per rank, so NCCL rank = MPI rank.

use super::backend::{CudaBackend, DeviceBuf};
use super::error::CudaError;
use super::nccl::{Region, Resolved};
use crate::backend::ccl::calls::{Call, Side, Span};
use crate::backend::{BackendError, BackendResult};
use crate::params::Dtype;

impl CudaBackend {
    /// The sentence why NCCL cannot exchange (missing, too old, communicators not formed).
    pub fn nccl_unusable(&self) -> Option<String> {
        self.comms.as_ref().err().map(|e| e.to_string())
    }

    /// The loaded NCCL's version, e.g. `2.28.3`.
    pub fn nccl_version(&self) -> Option<&str> {
        self.nccl_version.as_deref()
    }

    /// The devices are scalebench's stand-ins (no time here is a GPU's).
    pub fn is_standin(&self) -> bool {
        self.standin
    }

    /// One NCCL group on the rank's one GPU: all of `send` to rank `to` and/or all of `recv`
    /// from rank `from` (both: a bidirectional exchange), enqueued on the device's stream.
    /// On an error the communicator is aborted, so later calls fail with the sentence instead
    /// of hanging on it.
    pub fn send_recv(
        &mut self,
        send: Option<(&DeviceBuf, u32)>,
        recv: Option<(&mut DeviceBuf, u32)>,
    ) -> BackendResult<()> {
        if self.devices.len() != 1 {
            return Err(BackendError::check(format!(
                "point-to-point exchanges drive one GPU per rank; this rank drives {}",
                self.devices.len()
            )));
        }
        let comm = self.comms.as_ref().map_err(|e| e.clone())?.get(0);
        let span = |side, len| Span { side, at: 0, len };
        let none = Region { ptr: 0, len: 0 };
        let mut calls = Vec::new();
        if let Some((b, to)) = send {
            self.check_buf("send", b, 0, Dtype::I32, 0)?;
            let c = Call::Send {
                send: span(Side::Send, b.len()),
                peer: to,
            };
            calls.push(Resolved::new(c, Some(b.region()), none, 4)?);
        }
        if let Some((b, from)) = recv {
            self.check_buf("receive", b, 0, Dtype::I32, 0)?;
            let c = Call::Recv {
                recv: span(Side::Recv, b.len()),
                peer: from,
            };
            calls.push(Resolved::new(c, None, b.region(), 4)?);
        }
        let stream = self.devices[0].stream.cu_stream();
        cudarc::nccl::result::group_start()
            .map_err(|e| CudaError::nccl(Some("ncclGroupStart"), e))?;
        let mut first_err = None;
        for r in &calls {
            // SAFETY: `comm` is this device's live communicator and `stream` its live stream;
            // the regions were checked against live buffers of this device, which stay
            // allocated until the device has synchronised (the caller's buffers outlive it).
            if let Err(e) = unsafe { r.launch(Dtype::I32, comm, stream as _) } {
                first_err = Some(e);
                break;
            }
        }
        // Close the group even after an error, or NCCL stays in group mode.
        if let Err(e) = cudarc::nccl::result::group_end() {
            first_err.get_or_insert(CudaError::nccl(Some("ncclGroupEnd"), e));
        }
        match first_err {
            Some(e) => {
                let failed = e.context("ncclSend/ncclRecv (NCCL_DEBUG=WARN shows NCCL's reason)");
                self.comms = Err(CudaError::CommsAborted(Box::new(failed.clone())));
                Err(failed.into())
            }
            None => Ok(()),
        }
    }
}
