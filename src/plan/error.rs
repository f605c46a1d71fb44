//! Why `run`'s options or a launch plan cannot be used: each message names the option or file
//! and says what to give instead (bad input, exit code 2).

use super::checks::CaseProblem;
use crate::config::limits::{LimitError, MAX_CASES};
use crate::params::counts::CountError;
use crate::params::{Dtype, Fault, ThreadLevel};
use crate::results::io::ResultsError;
use crate::units::{echo_f64, format_bytes};
use std::path::PathBuf;

/// A cause whose type is private to the crate, kept whole for the error chain.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{option} is empty: give at least one value")]
    Empty { option: &'static str },
    #[error("--fault {fault}: expected one of {}", Fault::NAMES.join(", "))]
    UnknownFault { fault: String },
    #[error("--iters 0: give at least 1 timed iteration")]
    NoIters,
    #[error("--batches 0: give at least 1 batch")]
    NoBatches,
    #[error("--time-budget {}: give a positive number of seconds, e.g. 0.5", echo_f64(*.seconds))]
    TimeBudget { seconds: f64 },
    #[error("--threads-per-device 0: give at least 1")]
    NoThreads,
    #[error("--batch 0: batch_matmul needs at least 1 matrix, ddp_step at least 1 sample")]
    NoBatch,
    /// A `--model` that does not parse (the crate's model error).
    #[error("--model: {0}")]
    Model(#[source] Cause),
    #[error("--bucket-size 0B: give a capacity of at least 1 byte, e.g. 25MiB")]
    NoBucket,
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error("these options can give up to {bound} cases, above the limit of {MAX_CASES} per run: give fewer sizes, types, operators or roots, or split the study (limits are listed in README.md, \"Limits\")")]
    TooManyCases { bound: u128 },
    #[error("--buffer-offset {send},{recv}: offsets are within a page: give values below {page}")]
    OffsetBeyondPage { send: u64, recv: u64, page: u64 },
    #[error("--buffer-offset {send},{recv}: {dtype} elements are {elem} bytes, so a {dtype} buffer must start on a multiple of {elem}: give multiples of {elem}")]
    OffsetMisaligned {
        send: u64,
        recv: u64,
        dtype: Dtype,
        elem: u64,
    },
    #[error("--plan {0}")]
    PlanUnreadable(#[source] ResultsError),
    #[error("--plan {}:{}:{}: not a scalebench launch plan: {source}", .path.display(), .source.line(), .source.column())]
    PlanNotJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("--plan {}: {source}", .path.display())]
    PlanLimit {
        path: PathBuf,
        #[source]
        source: LimitError,
    },
    #[error("--plan {}: case {case} ({label}) does not belong to this launch's shape ({shape})", .path.display())]
    PlanForeignCase {
        path: PathBuf,
        case: String,
        label: String,
        shape: String,
    },
    /// A case the checks refuse ([`super::checks`]), under the option that made it.
    #[error("{option}: {}", .problem.message)]
    Case {
        option: &'static str,
        problem: CaseProblem,
    },
    #[error("--root {root}: this launch has {}, numbered 0..{}: give a root below {devices}", crate::units::count(*.devices as usize, "device", "devices"), .devices - 1)]
    RootOutOfRange { root: u32, devices: u32 },
    /// `--nccl-algo` / `--nccl-proto` on a backend that does not use NCCL.
    #[error("{0}")]
    NcclNeedsCuda(String),
    /// A trace `replay` cannot read or replay (names the file and the record).
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    #[error("trace {}: a comma in a trace's path is not supported (the case lists its files comma-separated): rename or link the file", .0.display())]
    ReplayPath(PathBuf),
    #[error("--workload replay: a replay needs its trace: run `scalebench replay TRACE…`")]
    ReplayNeedsTrace,
    #[error("--sizes {}: {source}", format_bytes(*.bytes))]
    Sizes {
        bytes: u64,
        #[source]
        source: CountError,
    },
}

impl PlanError {
    /// Every planning error is bad input.
    pub fn exit_code(&self) -> u8 {
        crate::exit::EXIT_BAD_INPUT
    }
}

/// An MPI thread level below what a launch needs; `option` names where it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option} {given}: this launch needs {needed} ({why}): give {needed} or higher, or leave {option} out")]
pub struct ThreadLevelError {
    pub option: String,
    pub given: ThreadLevel,
    pub needed: ThreadLevel,
    /// What in the launch needs it.
    pub why: String,
}

pub type Result<T, E = PlanError> = std::result::Result<T, E>;
