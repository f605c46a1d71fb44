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
use crate::results::attempts::{completeness, SupersededLaunch};
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
    merge_some(dir, sweep, &|_| true, &|_| None)
}

/// [`merge`] of only the attempts `keep` accepts (`collect` leaves out launches still queued
/// or running: half a launch would read as an incomplete one; their cases count as
/// `pending`). `lost_why` names why an attempt that left no end is missing, where the
/// scheduler said more than "lost" (`cancelled`).
pub(crate) fn merge_attempts(
    dir: &Path,
    sweep: &SweepRecord,
    keep: &dyn Fn(&Path) -> bool,
    lost_why: &dyn Fn(&Path) -> Option<String>,
) -> ResultsFile {
    merge_some(dir, sweep, keep, lost_why).0
}

/// An attempt directory's name (`NNN-<launch id>`).
pub(crate) fn attempt_name(d: &Path) -> String {
    d.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Pure: for each attempt (by launch id, in attempt order), the later attempt of the same
/// launch that replaces it — the launch's last one — or `None` for a launch's current
/// attempt (and for an attempt whose plan is unreadable: nothing names its launch).
pub(crate) fn superseded_by(launch_ids: &[Option<&str>]) -> Vec<Option<usize>> {
    let mut last: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, l) in launch_ids.iter().enumerate() {
        if let Some(l) = l {
            last.insert(l, i);
        }
    }
    launch_ids
        .iter()
        .enumerate()
        .map(|(i, l)| l.and_then(|l| last.get(l).copied()).filter(|&j| j != i))
        .collect()
}

fn merge_some(
    dir: &Path,
    sweep: &SweepRecord,
    keep: &dyn Fn(&Path) -> bool,
    lost_why: &dyn Fn(&Path) -> Option<String>,
) -> (ResultsFile, Vec<String>) {
    let mut cases: Vec<CaseResult> = Vec::new();
    let mut launches: Vec<LaunchRecord> = Vec::new();
    let mut superseded = Vec::new();
    let mut warnings = Vec::new();
    let all = attempt_dirs(dir);
    let attempts: Vec<Attempt> = all
        .iter()
        .filter(|d| keep(d))
        .map(|d| Attempt::read(d))
        .collect();
    let ids: Vec<Option<&str>> = attempts
        .iter()
        .map(|a| a.plan.as_ref().map(|p| p.launch_id.as_str()))
        .collect();
    for (a, by) in attempts.iter().zip(superseded_by(&ids)) {
        let name = attempt_name(&a.dir);
        warnings.extend(a.journal.warnings.iter().map(|w| {
            format!("{w}: the case on that line, if any, counts as missing and is run again by --resume")
        }));
        for mut c in a.cases() {
            // A case only this earlier attempt measured names it: its provenance is its own.
            if by.is_some() {
                c.launch_id = format!("{}@{name}", c.launch_id);
            }
            upsert(&mut cases, c, |x| &x.id);
        }
        let Some(mut l) = a.launch() else { continue };
        match by {
            // Kept for the record; a later attempt is the launch's record.
            Some(j) => {
                l.launch_id = format!("{}@{name}", l.launch_id);
                superseded.push(SupersededLaunch {
                    superseded_by: attempt_name(&attempts[j].dir),
                    record: l,
                });
            }
            None => {
                if launches.iter().any(|x| x.launch_id == l.launch_id) {
                    l.launch_id = format!("{}@{name}", l.launch_id);
                }
                launches.push(l);
            }
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
    let used: std::collections::BTreeSet<&str> =
        cases.iter().map(|c| c.launch_id.as_str()).collect();
    let emulated = launches
        .iter()
        .chain(
            superseded
                .iter()
                .map(|s| &s.record)
                .filter(|l| used.contains(l.launch_id.as_str())),
        )
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
    let all: Vec<(PathBuf, Option<String>)> = all
        .into_iter()
        .map(|d| {
            let id = read_json::<LaunchPlan>(&d.join(PLAN_FILE))
                .ok()
                .map(|p| p.launch_id);
            (d, id)
        })
        .collect();
    let reasons: BTreeMap<&str, String> = sweep
        .launches
        .iter()
        .map(|l| {
            (
                l.launch_id.as_str(),
                missing_why(&all, &l.launch_id, keep, lost_why),
            )
        })
        .collect();
    let why = |launch_id: &str| {
        reasons
            .get(launch_id)
            .cloned()
            .unwrap_or_else(|| "not run".into())
    };
    let planned = sweep
        .launches
        .iter()
        .flat_map(|l| l.cases.iter().map(|c| (l.launch_id.as_str(), c.id())));
    let completeness = completeness(planned, &cases, &why);
    let mut file = new_results(run, launches, cases);
    file.superseded_launches = superseded;
    file.completeness = Some(completeness);
    (file, warnings)
}

/// Why a planned case of `launch_id` has no record: its launch's last attempt is still
/// queued or running (not merged: `pending`), ended without recording its end (`lost`, or
/// what `lost_why` knows better), recorded an end without it (`no record`), or there is no
/// attempt of it (`not run`).
fn missing_why(
    attempts: &[(PathBuf, Option<String>)],
    launch_id: &str,
    keep: &dyn Fn(&Path) -> bool,
    lost_why: &dyn Fn(&Path) -> Option<String>,
) -> String {
    let last = attempts
        .iter()
        .rev()
        .find(|(_, id)| id.as_deref() == Some(launch_id));
    let Some((d, _)) = last else {
        return "not run".into();
    };
    if !keep(d) {
        return "pending".into();
    }
    if d.join(OUTCOME_FILE).exists() {
        return "no record".into();
    }
    lost_why(d).unwrap_or_else(|| "lost".into())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::io::{Journal, JournalRecord};

    fn outcome(launch_id: &str, status: LaunchStatus) -> LaunchOutcome {
        LaunchOutcome {
            launch_id: launch_id.into(),
            status,
            exit_code: Some(if status == LaunchStatus::Ok { 0 } else { 1 }),
            started_unix_s: 10.0,
            finished_unix_s: 11.0,
            command_line: vec!["srun".into()],
            launcher: "srun".into(),
            stderr_tail: Some("launcher failed".into()),
            job_id: None,
            timeout_s: None,
        }
    }

    /// An attempt of `plan` that measured `ok` of its cases (journal) and ended as `status`.
    fn attempt(dir: &Path, plan: &LaunchPlan, ok: &[usize], status: LaunchStatus) -> PathBuf {
        let d = new_attempt_dir(dir, &plan.launch_id).unwrap();
        write_json(&d.join(PLAN_FILE), plan).unwrap();
        if !ok.is_empty() {
            let mut j = Journal::open(&d.join(JOURNAL_FILE)).unwrap();
            let l = LaunchRecord::starting(
                plan.launch_id.clone(),
                plan.shape,
                LaunchStatus::Ok,
                "srun".into(),
                vec![],
                10.0,
            );
            j.append(&JournalRecord::Launch(Box::new(l))).unwrap();
            for &i in ok {
                let p = &plan.cases[i];
                let mut c = missing_case(p, &plan.launch_id, CaseStatus::Ok, String::new(), 10.5);
                c.message = None;
                j.append(&JournalRecord::Case(Box::new(c))).unwrap();
            }
        }
        write_json(&d.join(OUTCOME_FILE), &outcome(&plan.launch_id, status)).unwrap();
        d
    }

    fn sweep(dir: &Path) -> SweepRecord {
        let text = "name = \"t\"\n[axes]\ndevices_per_node = 1\nsizes = [\"64\", \"128\", \"256\"]\nin_place = \"no\"\nworkloads = \"allreduce\"\n";
        let spec = crate::config::parse(Path::new("t.toml"), text).unwrap();
        let plan = crate::plan::sweep::expand(&spec).unwrap();
        SweepRecord::new(dir, false, &spec, Path::new("t.toml"), &[], &plan.launches)
    }

    #[test]
    fn a_resubmitted_launch_supersedes_the_failed_attempt_which_is_kept_but_not_counted() {
        let dir = std::env::temp_dir().join(format!("sb-rundir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = sweep(&dir);
        assert_eq!(s.launches.len(), 1);
        let plan = &s.launches[0];
        let id = plan.launch_id.clone();
        // Attempt 1 measured the first case, then its launcher failed; attempt 2 (the repair)
        // ran the other two.
        attempt(&dir, plan, &[0], LaunchStatus::Failed);
        let mut rest = plan.clone();
        rest.cases.remove(0);
        attempt(&dir, &rest, &[0, 1], LaunchStatus::Ok);
        let f = merge(&dir, &s);
        assert_eq!(f.launches.len(), 1, "{:?}", f.launches);
        assert_eq!(
            (f.launches[0].launch_id.as_str(), f.launches[0].status),
            (id.as_str(), LaunchStatus::Ok)
        );
        assert_eq!(f.superseded_launches.len(), 1);
        let old = &f.superseded_launches[0];
        assert_eq!(old.record.launch_id, format!("{id}@001-{id}"));
        assert_eq!(old.superseded_by, format!("002-{id}"));
        assert!(
            f.cases.iter().all(|c| c.status == CaseStatus::Ok),
            "{:?}",
            f.cases
        );
        // The case only attempt 1 measured names it; the others the current attempt.
        assert_eq!(f.cases[0].launch_id, old.record.launch_id);
        assert_eq!(
            f.launch_of(&f.cases[0]).map(|l| l.status),
            Some(LaunchStatus::Failed)
        );
        for c in &f.cases[1..] {
            assert_eq!(
                f.launch_of(c).map(|l| l.launch_id.as_str()),
                Some(id.as_str())
            );
        }
        let c = f.completeness.as_ref().unwrap();
        assert_eq!(
            (c.planned_cases, c.measured_cases, c.missing_cases()),
            (3, 3, 0)
        );
        assert_eq!(f.incomplete_headline(), None);
        assert!(cases_to_run(&s, &f).is_empty(), "nothing left for submit");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_lost_attempt_leaves_its_cases_missing_as_lost_or_pending_while_it_runs() {
        let dir = std::env::temp_dir().join(format!("sb-rundir-lost-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = sweep(&dir);
        let plan = &s.launches[0];
        let d = attempt(&dir, plan, &[], LaunchStatus::Ok);
        std::fs::remove_file(d.join(OUTCOME_FILE)).unwrap();
        let f = merge(&dir, &s);
        assert_eq!(
            f.incomplete_headline().unwrap(),
            "incomplete: 3 planned, 0 measured, 3 missing (lost)"
        );
        let cancelled = merge_attempts(&dir, &s, &|_| true, &|_| Some("lost: cancelled".into()));
        assert_eq!(
            cancelled.completeness.unwrap().missing["lost: cancelled"],
            3
        );
        let running = merge_attempts(&dir, &s, &|_| false, &|_| None);
        assert_eq!(running.completeness.unwrap().missing["pending"], 3);
        assert_eq!(
            superseded_by(&[Some("a"), Some("b"), Some("a"), None]),
            [Some(2), None, None, None]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
