//! The `replay` part of a case record: which trace was replayed (files and digests), its
//! communicators, and every collective rank 0 replayed, in order, with its size and time.
//!
//! Times are rank 0's own, means over the timed steps: `step_s` the whole step (the case's
//! `timing` holds its samples, slowest rank per step), `comm_s` the collectives' share,
//! `compute_s` the waits for the recorded gaps (`--compute gaps`; 0 with `none`).

use crate::params::{Dtype, ReduceOp};
use serde::{Deserialize, Serialize};

/// A replay case's record (rank 0's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayRecord {
    /// `nccl_log` or `pytorch_et`.
    pub format: String,
    pub files: Vec<TraceFile>,
    /// Ranks of the traced job (= of the replay: `--ranks-as` is not implemented yet).
    pub ranks: u32,
    pub groups: Vec<ReplayGroup>,
    /// `gaps` or `none`.
    pub compute: String,
    /// Collectives of the whole job per step (every rank's calls).
    pub calls_total: u64,
    /// Mean step, seconds (rank 0).
    pub step_s: f64,
    /// Mean time in the collectives per step, seconds (rank 0).
    pub comm_s: f64,
    /// Mean time in the recorded gaps per step, seconds (rank 0).
    pub compute_s: f64,
    /// Rank 0's collectives in replay order.
    pub calls: Vec<ReplayedCall>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceFile {
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayGroup {
    pub name: String,
    /// Members as ranks of the job, in group-rank order.
    pub ranks: Vec<u32>,
}

/// One replayed collective of rank 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayedCall {
    /// Where the trace has it: `line 12`, `node 57`.
    pub record: String,
    /// `allreduce`, …, `barrier` (replayed as a one-element all-reduce).
    pub collective: String,
    pub dtype: Dtype,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<ReduceOp>,
    /// As a rank of its group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<u32>,
    /// Index into `groups`.
    pub group: usize,
    pub send_count: u64,
    pub recv_count: u64,
    /// The recorded gap before it, seconds, where the trace has times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_before_s: Option<f64>,
    /// Mean time of this collective over the timed steps, seconds.
    pub mean_s: f64,
}

impl ReplayRecord {
    /// What is wrong with the record (key, sentence): digests that are not SHA-256 hex,
    /// times that are not times, calls naming a group that is not there.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, f) in self.files.iter().enumerate() {
            if f.sha256.len() != 64 || !f.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                out.push((
                    format!("replay.files[{i}].sha256"),
                    format!("{:?}: not a SHA-256 in hex", f.sha256),
                ));
            }
        }
        let time = |x: f64| x.is_finite() && x >= 0.0;
        for (k, x) in [
            ("step_s", self.step_s),
            ("comm_s", self.comm_s),
            ("compute_s", self.compute_s),
        ] {
            if !time(x) {
                out.push((format!("replay.{k}"), format!("{x}: not a time")));
            }
        }
        for (i, c) in self.calls.iter().enumerate() {
            if !time(c.mean_s) || c.gap_before_s.is_some_and(|g| !time(g)) {
                out.push((
                    format!("replay.calls[{i}]"),
                    "a time that is not a time".into(),
                ));
            }
            if c.group >= self.groups.len() {
                out.push((
                    format!("replay.calls[{i}].group"),
                    format!("{}: the record has {} groups", c.group, self.groups.len()),
                ));
            }
        }
        out
    }
}
