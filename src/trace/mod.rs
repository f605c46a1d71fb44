//! Traces of a real job's collectives, read into one model that `scalebench replay` runs.
//!
//! Two formats (docs/replay.md):
//!
//! - NCCL/RCCL logs (`NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL`, [`nccl`]): one line per call per
//!   rank, parsed by [`crate::backend::nccl_log`]; RCCL's trailing `task N globalrank G` names
//!   the rank, NCCL's lines are assigned to ranks by their `host:pid` (first seen, first rank);
//!   communicators are matched across ranks by (comm pointer, nranks), or by the order each
//!   rank first used communicators of that size where the pointers differ between processes.
//! - PyTorch's execution trace (`ExecutionTraceObserver`, [`et`]): the `record_param_comms`
//!   nodes and the process groups of the `## process_group:init ##` node; one file per rank.
//!
//! Pure: text in, [`Trace`] out, every refusal a [`TraceError`] naming the file, the record
//! (line or node) and what is missing.

pub mod et;
pub mod nccl;

use crate::params::{Dtype, ReduceOp, Workload};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Why a trace cannot be replayed: the file, the record and what is wrong, in one sentence.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read trace {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("trace {}, {record}: {what}", path.display())]
    Bad {
        path: PathBuf,
        /// `line 12`, `node 57`, `JSON at line 3 column 9`.
        record: String,
        what: String,
    },
    #[error("trace {}: {what}", path.display())]
    Whole { path: PathBuf, what: String },
}

impl TraceError {
    pub(crate) fn bad(path: &Path, record: impl Into<String>, what: impl Into<String>) -> Self {
        TraceError::Bad {
            path: path.to_path_buf(),
            record: record.into(),
            what: what.into(),
        }
    }
    pub(crate) fn whole(path: &Path, what: impl Into<String>) -> Self {
        TraceError::Whole {
            path: path.to_path_buf(),
            what: what.into(),
        }
    }
}

/// What a traced call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collective {
    AllReduce,
    Reduce,
    Broadcast,
    AllGather,
    ReduceScatter,
    AllToAll,
    Barrier,
}

impl Collective {
    /// The collective workload that replays it (`None`: a barrier, replayed as one).
    pub fn workload(self) -> Option<Workload> {
        Some(match self {
            Collective::AllReduce => Workload::Allreduce,
            Collective::Reduce => Workload::Reduce,
            Collective::Broadcast => Workload::Broadcast,
            Collective::AllGather => Workload::Allgather,
            Collective::ReduceScatter => Workload::ReduceScatter,
            Collective::AllToAll => Workload::Alltoall,
            Collective::Barrier => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self.workload() {
            Some(w) => w.name(),
            None => "barrier",
        }
    }
}

/// Where a call sits in its trace file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Line(usize),
    Node(u64),
}

impl std::fmt::Display for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Record::Line(n) => write!(f, "line {n}"),
            Record::Node(id) => write!(f, "node {id}"),
        }
    }
}

/// One traced collective call of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub collective: Collective,
    pub dtype: Dtype,
    /// The reduction (reducing collectives only).
    pub op: Option<ReduceOp>,
    /// The root as a rank of the call's group (rooted collectives only).
    pub root: Option<u32>,
    /// Elements this rank sends and receives, as the trace counts them: all-reduce, reduce
    /// and broadcast the buffer; all-gather `send` per rank and `recv` = send × group size;
    /// reduce-scatter the reverse; all-to-all the whole send (and receive) buffer.
    pub send_count: u64,
    pub recv_count: u64,
    /// Index into [`Trace::groups`].
    pub group: usize,
    /// The compute time before this call, seconds, where the trace has times: since the
    /// previous call was issued (NCCL logs: issue times only), or since it returned (an
    /// execution trace joined with its Kineto trace: the c10d op's start and duration).
    pub gap_before_s: Option<f64>,
    pub record: Record,
}

impl Call {
    /// The size scalebench's collective workloads take (nccl-tests' meaning): the buffer for
    /// all-reduce, reduce and broadcast; the total output of all-gather; the total input of
    /// reduce-scatter; each rank's total send of all-to-all.
    pub fn requested_bytes(&self) -> u64 {
        let eb = self.dtype.size_bytes();
        match self.collective {
            Collective::AllGather => self.recv_count * eb,
            _ => self.send_count * eb,
        }
    }
}

/// A communicator of the traced job: its members as global ranks, in group-rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// As the trace names it (a process-group name, or `comm 0x…`).
    pub name: String,
    pub ranks: Vec<u32>,
}

/// The file a trace was read from, with its content's digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: PathBuf,
    pub sha256: String,
}

/// Which reader a trace came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    NcclLog,
    PytorchEt,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::NcclLog => "nccl_log",
            Format::PytorchEt => "pytorch_et",
        }
    }
}

/// A whole traced job: every rank's calls in issue order, over its communicators.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub format: Format,
    pub files: Vec<SourceFile>,
    /// Calls per global rank (`calls[r]` is rank r's sequence).
    pub calls: Vec<Vec<Call>>,
    pub groups: Vec<Group>,
}

impl Trace {
    pub fn ranks(&self) -> u32 {
        self.calls.len() as u32
    }

    /// Checks that every group's members made the same calls in the same order (what a
    /// collective requires, so what a replay needs): the first difference is refused.
    pub fn check_consistent(&self) -> Result<(), TraceError> {
        let path = self
            .files
            .first()
            .map_or_else(PathBuf::new, |f| f.path.clone());
        for (g, group) in self.groups.iter().enumerate() {
            let seq = |r: u32| -> Vec<&Call> {
                self.calls[r as usize]
                    .iter()
                    .filter(|c| c.group == g)
                    .collect()
            };
            let Some(&first) = group.ranks.first() else {
                continue;
            };
            let base = seq(first);
            for &r in &group.ranks[1..] {
                let other = seq(r);
                if other.len() != base.len() {
                    return Err(TraceError::whole(
                        &path,
                        format!(
                            "group {} has {} calls on rank {first} but {} on rank {r}",
                            group.name,
                            base.len(),
                            other.len()
                        ),
                    ));
                }
                if let Some((a, b)) = base.iter().zip(&other).find(|(a, b)| !same_call(a, b)) {
                    return Err(TraceError::bad(
                        &path,
                        b.record.to_string(),
                        format!(
                            "rank {r}'s {} does not match rank {first}'s {} ({}) in group {}",
                            b.collective.name(),
                            a.collective.name(),
                            a.record,
                            group.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every call of the job once, in rank 0's order (rank r's for groups rank 0 is not in).
    pub fn total_calls(&self) -> usize {
        self.calls.iter().map(Vec::len).sum()
    }
}

fn same_call(a: &Call, b: &Call) -> bool {
    a.collective == b.collective
        && a.dtype == b.dtype
        && a.op == b.op
        && a.root == b.root
        && a.send_count == b.send_count
        && a.recv_count == b.recv_count
}

/// The hex SHA-256 of a file's content.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads a trace from its files: JSON files as PyTorch execution traces (one per rank, or
/// one for every rank of a symmetric job: `ranks`), anything else as NCCL/RCCL logs.
pub fn read(paths: &[PathBuf], ranks: Option<u32>) -> Result<Trace, TraceError> {
    let mut texts = Vec::new();
    for p in paths {
        let bytes = std::fs::read(p).map_err(|source| TraceError::Io {
            path: p.clone(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            TraceError::whole(
                p,
                format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
            )
        })?;
        texts.push((p.clone(), text));
    }
    let Some((first, first_text)) = texts.first() else {
        return Err(TraceError::whole(Path::new(""), "no trace file given"));
    };
    let trace = if first_text.trim_start().starts_with('{') {
        et::read(&texts, ranks)?
    } else {
        nccl::read(&texts)?
    };
    if trace.total_calls() == 0 {
        return Err(TraceError::whole(
            first,
            "no collective call found (an NCCL log needs NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL; \
             an execution trace needs record_param_comms nodes)",
        ));
    }
    trace.check_consistent()?;
    Ok(trace)
}

#[cfg(test)]
mod tests;
