//! World checks: every per-rank check agreed by all ranks (one collective on the outcome)
//! before anyone acts, so no rank returns while the others wait for it.

use super::request::Launch;
use crate::backend::{Backend, BackendError};
use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::results::io::{DirLock, JOURNAL_FILE, RESULTS_FILE};
use crate::run::error::{Result, RunError};
use crate::topology::identity::{self, LauncherEnv, NodeLayout, RankFacts};
use crate::topology::{self};
use crate::workload::{self};
use std::path::{Path, PathBuf};

/// Rank 0 names the output directory (a default one holds its clock's time, in `run_id`)
/// and tells every rank. Rank 0 also takes the directory's lock (the one a sweep takes) and
/// holds it for the job (the returned lock): a run never writes where another run or a sweep
/// writes, and never over an earlier run's results file or journal.
pub(super) fn agree_out_dir(
    comm: &MpiComm,
    request: &crate::run::Request,
    run_id: &str,
) -> Result<(PathBuf, Option<OutClaim>)> {
    use std::os::unix::ffi::OsStrExt;
    let mut out_bytes = if comm.is_root() {
        let dir = request
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("results").join(run_id));
        dir.as_os_str().as_bytes().to_vec()
    } else {
        Vec::new()
    };
    comm.broadcast_bytes(&mut out_bytes);
    let out_dir = PathBuf::from(std::ffi::OsStr::from_bytes(&out_bytes));
    let mut lock = None;
    if comm.is_root() {
        match claim_out_dir(&out_dir) {
            Ok(l) => lock = Some(l),
            Err(e) => {
                let _ = agree_input(comm, Err::<(), _>(e.to_string()));
                return Err(e);
            }
        }
    }
    agree_input(comm, Ok::<(), std::convert::Infallible>(()))?;
    Ok((out_dir, lock))
}

/// Rank 0's checks of `--out` before anything is written there: a directory (created if
/// missing), not in use, and holding no earlier run's results file or journal.
fn claim_out_dir(out_dir: &Path) -> Result<OutClaim> {
    // A file where the directory should be is the user's mistake (exit 2), not a crash.
    if out_dir.exists() && !out_dir.is_dir() {
        return Err(RunError::OutNotADirectory {
            out: out_dir.to_path_buf(),
        });
    }
    let created = !out_dir.exists();
    std::fs::create_dir_all(out_dir).map_err(|e| crate::results::io::ResultsError::Io {
        path: out_dir.to_path_buf(),
        source: e,
    })?;
    // From here on a refusal removes the directory again if this run created it (Drop).
    let mut claim = OutClaim {
        lock: None,
        dir: out_dir.to_path_buf(),
        created,
    };
    claim.lock = Some(
        DirLock::try_take(out_dir)?.ok_or_else(|| RunError::OutBusy {
            out: out_dir.to_path_buf(),
        })?,
    );
    for name in [RESULTS_FILE, JOURNAL_FILE] {
        let file = out_dir.join(name);
        if std::fs::symlink_metadata(&file).is_ok() {
            return Err(RunError::OutHoldsRun { file });
        }
    }
    Ok(claim)
}

/// Rank 0's hold on `--out` for the job: the directory's lock, and whether this run created
/// the directory. A run refused before it wrote anything (a plan check, a backend that cannot
/// start) leaves no trace: when the claim ends and the directory it created holds nothing but
/// its lock, both go (as before the lock existed, nothing was created for a refused run).
pub(super) struct OutClaim {
    lock: Option<DirLock>,
    dir: PathBuf,
    created: bool,
}

impl Drop for OutClaim {
    fn drop(&mut self) {
        let lock_file = self.dir.join(".lock");
        let only_lock = std::fs::read_dir(&self.dir).is_ok_and(|entries| {
            entries
                .filter_map(|e| e.ok())
                .all(|e| e.path() == lock_file)
        });
        if self.created && only_lock {
            let _ = std::fs::remove_file(&lock_file);
            // remove_dir refuses a directory that is not empty: anything written meanwhile stays.
            let _ = std::fs::remove_dir(&self.dir);
        }
        self.lock.take();
    }
}

/// Makes every rank agree on a per-rank environment check (exit 2 everywhere, the failing
/// ranks' messages printed by rank 0).
pub(super) fn agree_env<E: std::fmt::Display>(
    comm: &MpiComm,
    local: std::result::Result<(), E>,
) -> Result<()> {
    workload::agree(
        comm,
        local.map_err(|e| BackendError::Unsupported(e.to_string())),
    )
    .map_err(|e| match e {
        workload::CaseError::Failed(message) | workload::CaseError::Skipped(message) => {
            RunError::Unusable { message }
        }
    })
}

/// A failure only rank 0 can see (writing the journal) while the others go on to the next
/// collective: returning would leave them waiting, so the whole job ends (exit 4).
pub(super) fn fail_alone(e: RunError) -> ! {
    eprintln!("scalebench: error: {e}; ending the job (MPI_Abort, exit 4) so the other ranks do not wait for rank 0");
    crate::run::watchdog::abort_job()
}

/// Makes every rank agree on a per-rank input check: an error anywhere is an input error
/// everywhere, with each failing rank's message (printed by rank 0).
pub(super) fn agree_input<T, E: std::fmt::Display>(
    comm: &MpiComm,
    local: std::result::Result<T, E>,
) -> Result<T> {
    let local = local.map_err(|e| BackendError::Unsupported(e.to_string()));
    workload::agree(comm, local).map_err(|e| match e {
        workload::CaseError::Failed(message) | workload::CaseError::Skipped(message) => {
            RunError::Refused { message }
        }
    })
}

/// Agrees on the backend's start: an unavailable backend (no driver, no device) is an
/// environment error (exit 2) with the failing ranks' own sentences.
pub(crate) fn start_backend<B: Backend>(
    comm: &MpiComm,
    backend: crate::backend::BackendResult<B>,
) -> Result<B> {
    let unavailable = matches!(backend, Err(BackendError::Unavailable(_)));
    let unavailable_anywhere = !comm.all_ok(!unavailable);
    workload::agree(comm, backend).map_err(|e| {
        let message = match e {
            workload::CaseError::Failed(m) | workload::CaseError::Skipped(m) => m,
        };
        if unavailable_anywhere {
            RunError::Unusable { message }
        } else {
            RunError::BackendSetUp { message }
        }
    })
}

/// Every rank's facts go to rank 0, which assigns nodes and tells everyone.
pub(super) fn agree_layout(comm: &MpiComm, req: &Launch, env: &LauncherEnv) -> Result<NodeLayout> {
    let facts = RankFacts {
        host: topology::hostname(),
        slurm_node_id: env.node_id,
        slurm_node_name: env.node_name.clone(),
        slurm_local_rank: if env.source == Some("slurm") {
            env.local_rank
        } else {
            None
        },
    };
    let all = comm.gather_bytes(&serde_json::to_vec(&facts).expect("facts serialise"));
    let mut reply = Vec::new();
    if comm.is_root() {
        let facts: Vec<RankFacts> = all
            .iter()
            .map(|b| serde_json::from_slice(b).expect("facts from our own ranks"))
            .collect();
        let natural = identity::assign_nodes(&facts, None);
        let emulate = match (&natural, req.nodes) {
            _ if req.emulate_nodes => Some((req.nodes.unwrap_or(1), req.placement)),
            // More nodes asked for than exist: emulate them on what there is, and say so.
            (Ok(l), Some(n)) if n > l.nodes && l.nodes == 1 => Some((n, req.placement)),
            _ => None,
        };
        let layout = match emulate {
            Some(e) => identity::assign_nodes(&facts, Some(e)),
            None => natural,
        };
        reply = serde_json::to_vec(&layout).expect("layout serialises");
    }
    comm.broadcast_bytes(&mut reply);
    let mut layout: std::result::Result<NodeLayout, identity::IdentityError> =
        serde_json::from_slice(&reply).expect("layout from rank 0");
    // A cluster whose nodes stand in for real ones (ci/slurm/start.sh) says so through its
    // profile's environment; nothing in Slurm's own variables can tell.
    if std::env::var("SCALEBENCH_EMULATED_NODES").is_ok_and(|v| v == "1") {
        if let Ok(l) = &mut layout {
            l.emulated = true;
        }
    }
    layout.map_err(|source| RunError::Layout {
        nodes: req.nodes.unwrap_or(1),
        source,
    })
}
