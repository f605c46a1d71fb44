//! A sweep's run directory, and merging it into one results file.
//!
//! ```text
//! DIR/spec.toml                     the spec as given
//! DIR/plan.json                     the whole plan (every launch and case)
//! DIR/launches/NNN-<launch id>/     one directory per attempt of a launch, NNN ascending
//!     plan.json                     the cases this attempt was given
//!     journal.jsonl, results.json   written by the launch's rank 0
//!     stdout.log, stderr.log        the launcher's output
//!     outcome.json                  how the attempt ended, as its launcher saw it
//! DIR/results.json                  every case, merged (rewritten atomically)
//! ```
//!
//! Merging reads only these files, so it also recovers a sweep whose driver was killed: every
//! case a launch's journal holds is kept; cases of a launch that timed out or crashed are
//! recorded as `timeout`/`failed` with the reason; cases of a launch that never reported are
//! missing (and `--resume` runs them).

use super::error::{LaunchError, Result};
use crate::params::CaseParams;
use crate::plan::LaunchPlan;
use crate::results::io::{
    new_results, read_journal, upsert, write_atomic, JournalContents, JOURNAL_FILE,
};
use crate::results::schema::{
    CaseResult, CaseStatus, LaunchRecord, LaunchStatus, ResultsFile, RunInfo,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) const PLAN_FILE: &str = "plan.json";
pub(crate) const OUTCOME_FILE: &str = "outcome.json";
pub(crate) const LAUNCHES_DIR: &str = "launches";

/// A run directory given as an existing file is the user's mistake (exit 2, before anything
/// is planned or written), not a "File exists" failure (exit 4) half-way through.
pub(crate) fn refuse_file_as_out(out: &Path, option: &str) -> Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(LaunchError::OutNotADirectory {
            option: option.to_string(),
            out: out.to_path_buf(),
        });
    }
    Ok(())
}
/// The whole plan of a sweep, as stored in `DIR/plan.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SweepRecord {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Where the spec came from.
    pub spec: PathBuf,
    pub started_unix_s: f64,
    pub command_line: Vec<String>,
    pub launches: Vec<LaunchPlan>,
}

impl SweepRecord {
    /// The record of the sweep in `out`. A continued sweep (`--resume`, a resubmission) keeps
    /// the start time it first recorded, so its wall time spans every attempt.
    pub(crate) fn new(
        out: &Path,
        continuing: bool,
        spec: &crate::config::SweepSpec,
        spec_path: &Path,
        command_line: &[String],
        launches: &[LaunchPlan],
    ) -> SweepRecord {
        let first_start = || {
            read_json::<SweepRecord>(&out.join(PLAN_FILE))
                .ok()
                .map(|r| r.started_unix_s)
        };
        SweepRecord {
            name: spec.name.clone(),
            labels: spec.labels.clone(),
            spec: spec_path.to_path_buf(),
            started_unix_s: continuing
                .then(first_start)
                .flatten()
                .unwrap_or_else(crate::results::now_unix_s),
            command_line: command_line.to_vec(),
            launches: launches.to_vec(),
        }
    }
}

/// How one attempt of a launch ended, as the launcher (local driver or scheduler) saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LaunchOutcome {
    pub launch_id: String,
    pub status: LaunchStatus,
    /// The launcher's exit code, if it exited.
    pub exit_code: Option<i32>,
    pub started_unix_s: f64,
    pub finished_unix_s: f64,
    /// The command that was run.
    pub command_line: Vec<String>,
    /// The launcher used (`mpirun`, `srun`).
    pub launcher: String,
    /// The last lines of standard error (for failed and timed-out launches).
    #[serde(default)]
    pub stderr_tail: Option<String>,
    /// Scheduler job id, for submitted launches.
    #[serde(default)]
    pub job_id: Option<String>,
    /// The time limit the launch ran under, seconds.
    #[serde(default)]
    pub timeout_s: Option<f64>,
}

/// Reads a JSON file, naming it in errors.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|source| LaunchError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| LaunchError::NotJson {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes a JSON file atomically.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(LaunchError::Json)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes).map_err(LaunchError::from)
}

/// The attempt directories of a run, oldest first.
pub(crate) fn attempt_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join(LAUNCHES_DIR))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The path of the `n`th attempt directory (1-based) for `launch_id`.
pub(crate) fn attempt_path(dir: &Path, n: usize, launch_id: &str) -> PathBuf {
    dir.join(LAUNCHES_DIR).join(format!("{n:03}-{launch_id}"))
}

/// A fresh attempt directory for `launch_id`: `DIR/launches/NNN-<launch id>`.
pub(crate) fn new_attempt_dir(dir: &Path, launch_id: &str) -> Result<PathBuf> {
    let d = attempt_path(dir, attempt_dirs(dir).len() + 1, launch_id);
    std::fs::create_dir_all(&d).map_err(|source| LaunchError::Io {
        path: d.clone(),
        source,
    })?;
    Ok(d)
}

/// What a failed launch's stderr says: scalebench's own messages (which name the cause; an
/// MPI library's backtrace can push them far up) and then the last `lines` lines.
pub(crate) fn stderr_digest(path: &Path, lines: usize) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).replace('\0', "");
    let all: Vec<&str> = text.lines().collect();
    let last = all.len().saturating_sub(lines);
    let mut out: Vec<&str> = all[..last]
        .iter()
        .filter(|l| l.starts_with("scalebench"))
        .take(5)
        .copied()
        .collect();
    if !out.is_empty() && last > 0 {
        out.push("...");
    }
    out.extend(&all[last..]);
    out.join("\n")
}

/// A record for a case that has no result of its own (its launch timed out or failed).
pub(crate) fn missing_case(
    params: &CaseParams,
    launch_id: &str,
    status: CaseStatus,
    message: String,
    at_unix_s: f64,
) -> CaseResult {
    let ranks = params.ranks();
    let mut r = crate::run::record(
        params,
        launch_id,
        at_unix_s,
        at_unix_s,
        params.devices(),
        ranks,
        Err(crate::workload::CaseError::Failed(message)),
    );
    r.status = status;
    r
}

/// What one attempt directory contributes.
pub(crate) struct Attempt {
    pub dir: PathBuf,
    pub plan: Option<LaunchPlan>,
    pub journal: JournalContents,
    pub outcome: Option<LaunchOutcome>,
}

impl Attempt {
    pub(crate) fn read(dir: &Path) -> Attempt {
        let plan = read_json::<LaunchPlan>(&dir.join(PLAN_FILE)).ok();
        let journal = read_journal(&dir.join(JOURNAL_FILE)).unwrap_or_default();
        let outcome = read_json::<LaunchOutcome>(&dir.join(OUTCOME_FILE)).ok();
        Attempt {
            dir: dir.to_path_buf(),
            plan,
            journal,
            outcome,
        }
    }

    /// Its cases: the journal's, plus records for planned cases its launch never finished
    /// when the launcher knows why (timeout, crash).
    pub(crate) fn cases(&self) -> Vec<CaseResult> {
        let mut out = self.journal.cases.clone();
        if let (Some(plan), Some(o)) = (&self.plan, &self.outcome) {
            let why = match o.status {
                LaunchStatus::Timeout => Some((
                    CaseStatus::Timeout,
                    format!(
                        "the launch was killed at its time limit ({:.0} s) before this case finished",
                        o.timeout_s.unwrap_or(o.finished_unix_s - o.started_unix_s)
                    ),
                )),
                LaunchStatus::Failed => Some((
                    CaseStatus::Failed,
                    format!(
                        "the launch exited with {} before this case finished; its stderr ends with: {}",
                        o.exit_code.map_or("a signal".to_string(), |c| format!("code {c}")),
                        o.stderr_tail.as_deref().unwrap_or("(nothing)")
                    ),
                )),
                _ => None,
            };
            if let Some((status, msg)) = why {
                for p in &plan.cases {
                    let id = p.id();
                    if !out.iter().any(|c| c.id == id) {
                        out.push(missing_case(
                            p,
                            &plan.launch_id,
                            status,
                            msg.clone(),
                            o.finished_unix_s,
                        ));
                    }
                }
            }
        }
        out
    }

    /// Its launch record: the launch's own (with provenance) updated with the launcher's view.
    pub(crate) fn launch(&self) -> Option<LaunchRecord> {
        let own = self.journal.launches.last().cloned();
        match (own, &self.outcome, &self.plan) {
            (Some(mut l), Some(o), _) => {
                if o.status != LaunchStatus::Ok || l.status == LaunchStatus::Incomplete {
                    l.status = o.status;
                }
                l.finished_unix_s = Some(o.finished_unix_s);
                apply_outcome(&mut l, o, &self.journal.cases);
                Some(l)
            }
            (Some(l), None, _) => Some(l),
            (None, Some(o), Some(p)) => {
                let mut l = LaunchRecord::starting(
                    p.launch_id.clone(),
                    p.shape,
                    o.status,
                    o.launcher.clone(),
                    o.command_line.clone(),
                    o.started_unix_s,
                );
                l.finished_unix_s = Some(o.finished_unix_s);
                apply_outcome(&mut l, o, &[]);
                Some(l)
            }
            _ => None,
        }
    }
}

fn apply_outcome(l: &mut LaunchRecord, o: &LaunchOutcome, cases: &[CaseResult]) {
    let wall = o.finished_unix_s - o.started_unix_s;
    let case_time: f64 = cases
        .iter()
        .map(|c| c.finished_unix_s - c.started_unix_s)
        .sum();
    l.wall_s = Some(wall);
    l.overhead_s = Some((wall - case_time).max(0.0));
    l.launcher = o.launcher.clone();
    l.command_line = o.command_line.clone();
    if o.status != LaunchStatus::Ok {
        l.stderr_tail = o.stderr_tail.clone();
    }
}

/// Merges every attempt of a run directory into one results file (later attempts win).
pub(crate) fn merge(dir: &Path, sweep: &SweepRecord) -> ResultsFile {
    merge_with_warnings(dir, sweep).0
}

/// [`merge`], with what was skipped on the way (unreadable journal lines: their cases are
/// missing, so `--resume` runs them again), for the caller to say once.
pub(crate) fn merge_with_warnings(dir: &Path, sweep: &SweepRecord) -> (ResultsFile, Vec<String>) {
    merge_some(dir, sweep, &|_| true)
}

/// [`merge`] of only the attempts `keep` accepts (`collect` leaves out launches still queued
/// or running: half a launch would read as an incomplete one).
pub(crate) fn merge_attempts(
    dir: &Path,
    sweep: &SweepRecord,
    keep: &dyn Fn(&Path) -> bool,
) -> ResultsFile {
    merge_some(dir, sweep, keep).0
}

fn merge_some(
    dir: &Path,
    sweep: &SweepRecord,
    keep: &dyn Fn(&Path) -> bool,
) -> (ResultsFile, Vec<String>) {
    let mut cases: Vec<CaseResult> = Vec::new();
    let mut launches: Vec<LaunchRecord> = Vec::new();
    let mut warnings = Vec::new();
    let attempts: Vec<Attempt> = attempt_dirs(dir)
        .iter()
        .filter(|d| keep(d))
        .map(|d| Attempt::read(d))
        .collect();
    for (i, a) in attempts.iter().enumerate() {
        let d = &a.dir;
        warnings.extend(a.journal.warnings.iter().map(|w| {
            format!("{w}: the case on that line, if any, counts as missing and is run again by --resume")
        }));
        for c in a.cases() {
            upsert(&mut cases, c, |x| &x.id);
        }
        // An attempt killed without a trace (no outcome, its own record still `incomplete`)
        // whose launch was attempted again later: its finished cases are kept above, and the
        // later attempt is the launch's record; an `incomplete` one would only make readers
        // warn about cases that are all there.
        let launch_id = a.plan.as_ref().map(|p| p.launch_id.as_str());
        let superseded = a.outcome.is_none()
            && a.journal
                .launches
                .last()
                .is_none_or(|l| l.status == LaunchStatus::Incomplete)
            && launch_id.is_some()
            && attempts[i + 1..]
                .iter()
                .any(|b| b.plan.as_ref().map(|p| p.launch_id.as_str()) == launch_id);
        if superseded {
            continue;
        }
        if let Some(mut l) = a.launch() {
            // Each attempt is its own launch record; name retries apart.
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if launches.iter().any(|x| x.launch_id == l.launch_id) {
                l.launch_id = format!("{}@{}", l.launch_id, name);
            }
            launches.push(l);
        }
    }
    // Cases in plan order, so reports read like the spec.
    let order: BTreeMap<String, usize> = sweep
        .launches
        .iter()
        .flat_map(|l| l.cases.iter())
        .enumerate()
        .map(|(i, c)| (c.id(), i))
        .collect();
    cases.sort_by_key(|c| order.get(&c.id).copied().unwrap_or(usize::MAX));
    let emulated = launches
        .iter()
        .any(|l| l.provenance.as_ref().is_some_and(|p| p.emulated_nodes));
    let run = RunInfo {
        run_id: dir
            .file_name()
            .map_or("run".into(), |n| n.to_string_lossy().into_owned()),
        started_unix_s: sweep.started_unix_s,
        written_unix_s: crate::results::now_unix_s(),
        command_line: sweep.command_line.clone(),
        emulated_nodes: emulated,
        labels: sweep.labels.clone(),
    };
    (new_results(run, launches, cases), warnings)
}

/// Refuses to continue a run whose spec changed: its plan and the stored one must hold the
/// same cases with the same settings, or results of two studies would mix.
pub(crate) fn check_same_plan(dir: &Path, launches: &[LaunchPlan], what: &str) -> Result<()> {
    let path = dir.join(PLAN_FILE);
    let old: SweepRecord = read_json(&path)?;
    let ids = |ls: &[LaunchPlan]| -> std::collections::BTreeSet<String> {
        ls.iter()
            .flat_map(|l| l.cases.iter().map(|c| c.id()))
            .collect()
    };
    let (before, now) = (ids(&old.launches), ids(launches));
    let added = now.difference(&before).count();
    let removed = before.difference(&now).count();
    // Whether ceilings are measured changes no figure, only the start-up: a resume may differ.
    let settings = |ls: &[LaunchPlan]| {
        ls.iter()
            .map(|l| {
                let mut s = l.settings.clone();
                s.ceilings = true;
                (s, l.reserved_cores.clone())
            })
            .collect::<Vec<_>>()
    };
    let settings_differ = {
        let (a, b) = (settings(&old.launches), settings(launches));
        a.first() != b.first() || a.iter().any(|x| !b.contains(x))
    };
    if added == 0 && removed == 0 && !settings_differ {
        return Ok(());
    }
    let mut what_changed = vec![format!(
        "{} planned then, {} now",
        crate::units::count(before.len(), "case", "cases"),
        now.len()
    )];
    if added + removed > 0 {
        what_changed.push(format!("{added} added, {removed} removed"));
    }
    if settings_differ {
        what_changed.push("measurement settings differ ([run], reserved cores)".into());
    }
    Err(LaunchError::SpecChanged {
        what: what.to_string(),
        dir: dir.to_path_buf(),
        changes: what_changed,
    })
}

/// Planned cases that have no result, or one that must be redone (failed, wrong, timed out).
pub(crate) fn cases_to_run(
    sweep: &SweepRecord,
    merged: &ResultsFile,
) -> BTreeMap<String, Vec<CaseParams>> {
    let done: std::collections::HashSet<&str> = merged
        .cases
        .iter()
        .filter(|c| !c.status.needs_rerun())
        .map(|c| c.id.as_str())
        .collect();
    let mut out = BTreeMap::new();
    for l in &sweep.launches {
        let todo: Vec<CaseParams> = l
            .cases
            .iter()
            .filter(|c| !done.contains(c.id().as_str()))
            .cloned()
            .collect();
        if !todo.is_empty() {
            out.insert(l.launch_id.clone(), todo);
        }
    }
    out
}
