//! The NCCL transport of `scalebench links --backend cuda` and the RCCL one of `--backend
//! rocm` (RCCL keeps NCCL's API): each rank drives one GPU or GCD (its local rank's, as `run`
//! pure MPI does), one communicator spans all ranks (the backend's set-up), and one exchange
//! is `ncclGroupStart; ncclSend/ncclRecv; ncclGroupEnd` on the pair, timed with the backend's
//! events on the stream as the collectives are. One way is timed on the receiver (its ncclRecv
//! completes when the last byte has arrived); both ways on each rank, for the cell it receives.
//! Written once over [`PeerBackend`], which both backends implement.

use super::{Transport, TransportInfo};
use crate::backend::{Backend, BackendResult, DevicePlan};
use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::params::Dtype;
use crate::run::error::RunError;

/// NCCL moves whole 4-byte words here (`ncclInt32`): the stand-in models no byte type.
pub(super) const WORD_BYTES: u64 = 4;

/// What a GPU backend offers the transport besides [`Backend`]: its set-up, its library's
/// state and version, and one grouped send/recv on its one device.
pub(super) trait PeerBackend: Backend + Sized {
    /// `nccl` or `rccl`, as links.json names the transport.
    const TRANSPORT: &'static str;
    fn open(world: &mpi::topology::SimpleCommunicator, plan: DevicePlan) -> BackendResult<Self>;
    /// Why the library cannot exchange (missing, too old, communicators not formed).
    fn unusable(&self) -> Option<String>;
    fn library_version(&self) -> Option<String>;
    /// The STAND-IN label where the devices are scalebench's stand-ins.
    fn standin_label(&self) -> Option<&'static str>;
    fn send_recv(
        &mut self,
        send: Option<(&Self::Buf, u32)>,
        recv: Option<(&mut Self::Buf, u32)>,
    ) -> BackendResult<()>;
}

#[cfg(feature = "cuda")]
impl PeerBackend for crate::backend::cuda::CudaBackend {
    const TRANSPORT: &'static str = "nccl";
    fn open(world: &mpi::topology::SimpleCommunicator, plan: DevicePlan) -> BackendResult<Self> {
        Self::new(world, plan)
    }
    fn unusable(&self) -> Option<String> {
        self.nccl_unusable()
    }
    fn library_version(&self) -> Option<String> {
        self.nccl_version().map(str::to_string)
    }
    fn standin_label(&self) -> Option<&'static str> {
        self.is_standin()
            .then_some(crate::backend::cuda::probe::STANDIN_LABEL)
    }
    fn send_recv(
        &mut self,
        send: Option<(&Self::Buf, u32)>,
        recv: Option<(&mut Self::Buf, u32)>,
    ) -> BackendResult<()> {
        crate::backend::cuda::CudaBackend::send_recv(self, send, recv)
    }
}

#[cfg(feature = "rocm")]
impl PeerBackend for crate::backend::rocm::RocmBackend {
    const TRANSPORT: &'static str = "rccl";
    fn open(world: &mpi::topology::SimpleCommunicator, plan: DevicePlan) -> BackendResult<Self> {
        Self::new(world, plan)
    }
    fn unusable(&self) -> Option<String> {
        // Set-up forms the communicators or fails: a backend that opened can exchange.
        None
    }
    fn library_version(&self) -> Option<String> {
        Some(self.rccl_version().to_string())
    }
    fn standin_label(&self) -> Option<&'static str> {
        self.is_standin()
            .then_some(crate::backend::rocm::STANDIN_LABEL)
    }
    fn send_recv(
        &mut self,
        send: Option<(&Self::Buf, u32)>,
        recv: Option<(&mut Self::Buf, u32)>,
    ) -> BackendResult<()> {
        crate::backend::rocm::RocmBackend::send_recv(self, send, recv)
    }
}

pub(super) struct NcclTransport<B: PeerBackend> {
    backend: B,
    send: B::Buf,
    recv: B::Buf,
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

impl<B: PeerBackend> NcclTransport<B> {
    /// Opens this rank's GPU and the communicator over all ranks, and allocates the two
    /// message buffers. Collective. No driver or no device: exit 2 with the ranks' sentences.
    pub(super) fn open(
        world: &mpi::topology::SimpleCommunicator,
        comm: &MpiComm,
        local_rank: usize,
        message_bytes: u64,
    ) -> Result<NcclTransport<B>, RunError> {
        let mut backend = crate::run::job::start_backend(comm, B::open(world, plan(local_rank)))?;
        // CUDA's set-up succeeds without NCCL (a run's GEMMs need none); an exchange cannot.
        let why = backend.unusable().map(|e| {
            format!(
                "--backend {} needs {} for its exchanges: {e}",
                backend.kind(),
                B::TRANSPORT.to_uppercase()
            )
        });
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
    fn timed(&mut self, a: B::Mark, stretch: f64) -> f64 {
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

impl<B: PeerBackend> Transport for NcclTransport<B> {
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
            name: B::TRANSPORT,
            version: self.backend.library_version(),
            standin: self.backend.standin_label().map(str::to_string),
        }
    }
}
