//! `scalebench replay TRACE…`: the one case a trace makes, its trace read (and refused,
//! naming the file and record) before anything runs.

use super::{PlanError, Result};
use crate::params::{CaseParams, LaunchShape, ReplayCompute, Timing, Workload};
use std::path::PathBuf;

/// What `replay` was asked: the trace's files and what runs between the collectives.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRequest {
    pub traces: Vec<PathBuf>,
    pub compute: ReplayCompute,
}

/// The checked trace of a replay, as its case records it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    /// The files, comma-separated.
    pub trace: String,
    /// Their SHA-256s, comma-separated in the same order.
    pub sha256: String,
    pub compute: ReplayCompute,
}

/// Reads the trace (every record checked) and keeps its files' digests.
pub fn options(r: &ReplayRequest) -> Result<ReplayOptions> {
    if let Some(p) = r.traces.iter().find(|p| p.to_string_lossy().contains(',')) {
        return Err(PlanError::ReplayPath(p.clone()));
    }
    let trace = crate::trace::read(&r.traces, None)?;
    let join = |v: Vec<String>| v.join(",");
    Ok(ReplayOptions {
        trace: join(r.traces.iter().map(|p| p.display().to_string()).collect()),
        sha256: join(trace.files.iter().map(|f| f.sha256.clone()).collect()),
        compute: r.compute,
    })
}

/// The replay case of a launch: one, timed per step (isolated).
pub fn case(o: &ReplayOptions, base: CaseParams, shape: LaunchShape) -> CaseParams {
    CaseParams {
        workload: Workload::Replay,
        timing: Timing::Isolated,
        trace: Some(o.trace.clone()),
        trace_sha256: Some(o.sha256.clone()),
        compute: Some(o.compute),
        ..CaseParams {
            backend: shape.backend,
            topology: shape.topology,
            ..base
        }
    }
}
