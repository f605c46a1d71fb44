//! Why a launch could not run: bad options or a world that does not fit them (exit code 2,
//! each message naming the option and the fix), a machine that cannot run it (2), or a
//! failure while running (exit code 4).

use crate::config::limits::LimitError;
use crate::exit::{EXIT_BAD_INPUT, EXIT_RUNTIME};
use crate::params::Topology;
use crate::plan::{PlanError, ThreadLevelError};
use crate::results::io::ResultsError;
use crate::topology::identity::IdentityError;
use crate::units::count;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error(transparent)]
    ThreadLevel(#[from] ThreadLevelError),
    /// A results file or the journal could not be written.
    #[error("{0}")]
    Results(#[from] ResultsError),
    #[error("--nodes {nodes}: this job's ranks run on {} ({from}): start the job on {}, or pass --emulate-nodes to group ranks on one host", count(*.found as usize, "node", "nodes"), count(*.nodes as usize, "node", "nodes"))]
    Nodes {
        nodes: u32,
        found: u32,
        from: String,
    },
    #[error("--devices-per-node 0: give at least 1")]
    NoDevices,
    #[error("this job has {}, but {topology} topology on {} × {} needs {expected}: start {} (mpirun -np {expected}) or change --nodes/--devices-per-node/--topology", count(*.size as usize, "MPI rank", "MPI ranks"), count(*.nodes as usize, "node", "nodes"), count(*.devices_per_node as usize, "device", "devices"), count(*.expected as usize, "rank", "ranks"))]
    Ranks {
        size: u32,
        topology: Topology,
        nodes: u32,
        devices_per_node: u32,
        expected: u32,
    },
    #[error("--nodes {nodes}: {source}")]
    Layout {
        nodes: u32,
        #[source]
        source: IdentityError,
    },
    #[error("--out {}: exists and is not a directory: give a directory (it is created if missing)", .out.display())]
    OutNotADirectory { out: PathBuf },
    #[error("--out {}: another scalebench run or sweep is writing in this directory: wait for it, or give another --out", .out.display())]
    OutBusy { out: PathBuf },
    #[error("--out: {} is there, from an earlier run: `run` never writes over a run; give another --out (a new directory), or move that run away first", .file.display())]
    OutHoldsRun { file: PathBuf },
    /// An input check failed on some rank: the failing ranks' sentences, as agreed.
    #[error("{message}")]
    Refused { message: String },
    /// An environment check failed on some rank (no driver, no device): their sentences.
    #[error("{message}")]
    Unusable { message: String },
    #[error("--backend cuda: this scalebench was built without CUDA support: rebuild with `cargo build --release --features cuda`")]
    NoCuda,
    #[error("--backend rocm: this scalebench was built without ROCm support: rebuild with `cargo build --release --features rocm`")]
    NoRocm,
    /// `scalebench links` was given options it cannot use.
    #[error(transparent)]
    Links(#[from] crate::links::LinksError),
    #[error("MPI was already initialised in this process")]
    MpiInitialised,
    /// Rank 0 could not open the journal; `reason` is its error, sent to every rank.
    #[error("cannot write results: {reason}")]
    Journal { reason: String },
    /// The backend failed to start on some rank (not for want of a device).
    #[error("backend set-up failed: {message}")]
    BackendSetUp { message: String },
}

impl RunError {
    /// Bad input and unusable machines are 2; failures while running are 4.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Plan(e) => e.exit_code(),
            RunError::Results(ResultsError::Io { .. })
            | RunError::MpiInitialised
            | RunError::Journal { .. }
            | RunError::BackendSetUp { .. } => EXIT_RUNTIME,
            _ => EXIT_BAD_INPUT,
        }
    }
}

pub type Result<T, E = RunError> = std::result::Result<T, E>;
