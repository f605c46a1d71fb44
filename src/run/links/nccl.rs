//! The NCCL transport of `scalebench links --backend cuda`: each rank drives one GPU (its
//! local rank's, as `run --backend cuda` pure MPI does), one NCCL communicator spans all ranks
//! (the CUDA backend's set-up), and one exchange is `ncclGroupStart; ncclSend/ncclRecv;
//! ncclGroupEnd` on the pair, timed with CUDA events on the stream as the collectives are.
//! One way is timed on the receiver (its ncclRecv completes when the last byte has arrived);
//! both ways on each rank, for the cell it receives.

use super::{Transport, TransportInfo};
use crate::backend::cuda::{CudaBackend, DeviceBuf};
use crate::backend::{Backend, BackendResult, DevicePlan};
use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::params::Dtype;
use crate::run::error::RunError;

/// NCCL moves whole 4-byte words here (`ncclInt32`): the stand-in models no byte type.
pub(super) const WORD_BYTES: u64 = 4;

pub(super) struct NcclTransport {
    backend: CudaBackend,
    send: DeviceBuf,
    recv: DeviceBuf,
    me: usize,
}

/// The plan of a pure-MPI rank: one GPU, its node-local index = its local rank.
fn plan(local_rank: usize) -> DevicePlan {
    DevicePlan {
        devices_per_rank: 1,
        local_indices: vec![local_rank as u32],
        worker_cpus: vec![None],
        threads_per_device: 1,
        gemm: None,
        nccl_algo: None,
    }
}

/// Every rank's error (each failing rank's own sentence, as `rank r: …`), or none; collective.
fn agree(comm: &MpiComm, local: Option<String>) -> Result<(), String> {
    if comm.all_ok(local.is_none()) {
        return Ok(());
    }
    Err(crate::comm::every_ranks_reasons(
        comm,
        &local.unwrap_or_default(),
    ))
}

impl NcclTransport {
    /// Opens this rank's GPU and the communicator over all ranks, and allocates the two
    /// message buffers. Collective. No driver or no device: exit 2 with the ranks' sentences.
    pub(super) fn open(
        world: &mpi::topology::SimpleCommunicator,
        comm: &MpiComm,
        local_rank: usize,
        message_bytes: u64,
    ) -> Result<NcclTransport, RunError> {
        let mut backend =
            crate::run::job::start_backend(comm, CudaBackend::new(world, plan(local_rank)))?;
        // Set-up succeeds without NCCL (a run's GEMMs need none); an exchange cannot.
        let why = backend
            .nccl_unusable()
            .map(|e| format!("--backend cuda needs NCCL for its exchanges: {e}"));
        agree(comm, why).map_err(|message| RunError::Unusable { message })?;
        let count = (message_bytes / WORD_BYTES) as usize;
        let bufs = backend
            .alloc(0, Dtype::I32, count)
            .and_then(|a| Ok((a, backend.alloc(0, Dtype::I32, count)?)));
        let failed = bufs.as_ref().err().map(|e| e.to_string());
        agree(comm, failed).map_err(|message| RunError::BackendSetUp { message })?;
        let Ok((send, recv)) = bufs else {
            unreachable!("every rank agreed that its buffers were allocated")
        };
        Ok(NcclTransport {
            backend,
            send,
            recv,
            me: comm.rank() as usize,
        })
    }

    /// An NCCL or CUDA failure mid-exchange leaves the peer waiting in its half of the pair:
    /// the whole job ends (exit 4), with the sentence.
    fn ok<T>(&self, r: BackendResult<T>) -> T {
        match r {
            Ok(v) => v,
            Err(e) => {
                eprintln!(
                    "scalebench links: error: rank {}: {e}; ending the job (MPI_Abort, exit 4) so its peer does not wait",
                    self.me
                );
                crate::run::watchdog::abort_job()
            }
        }
    }

    /// The seconds from mark `a` to the end of what the stream has queued, with the fault's
    /// sleep between the stream's end and a second mark where `stretch` > 0 (so the events
    /// themselves time the longer exchange).
    fn timed(&mut self, a: <CudaBackend as Backend>::Mark, stretch: f64) -> f64 {
        let b = self.backend.mark();
        let b = self.ok(b);
        let done = self.backend.synchronize();
        self.ok(done);
        let s = self.backend.elapsed_s(a, b);
        let s = self.ok(s);
        if stretch <= 0.0 {
            return s;
        }
        std::thread::sleep(std::time::Duration::from_secs_f64(s * stretch));
        let c = self.backend.mark();
        let c = self.ok(c);
        let done = self.backend.synchronize();
        self.ok(done);
        let s = self.backend.elapsed_s(a, c);
        self.ok(s)
    }
}

impl Transport for NcclTransport {
    fn one_way(&mut self, from: usize, to: usize, stretch: f64) -> Option<f64> {
        if self.me == from {
            let r = self.backend.send_recv(Some((&self.send, to as u32)), None);
            self.ok(r);
            let done = self.backend.synchronize();
            self.ok(done);
            None
        } else {
            let a = self.backend.mark();
            let a = self.ok(a);
            let r = self
                .backend
                .send_recv(None, Some((&mut self.recv, from as u32)));
            self.ok(r);
            Some(self.timed(a, stretch))
        }
    }

    fn both_ways(&mut self, from: usize, to: usize, stretch: f64) -> f64 {
        let a = self.backend.mark();
        let a = self.ok(a);
        let r = self.backend.send_recv(
            Some((&self.send, to as u32)),
            Some((&mut self.recv, from as u32)),
        );
        self.ok(r);
        self.timed(a, stretch)
    }

    fn describe(&self) -> TransportInfo {
        TransportInfo {
            name: "nccl",
            version: self.backend.nccl_version().map(str::to_string),
            standin: self
                .backend
                .is_standin()
                .then(|| crate::backend::cuda::probe::STANDIN_LABEL.to_string()),
        }
    }
}
