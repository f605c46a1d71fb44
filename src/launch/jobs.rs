//! Where a submitted run's jobs stand: attempts ↔ scheduler (array) task ids both ways, each
//! task's scheduler state, and each attempt's phase (queued, running, finished, lost).
//!
//! An attempt of a job array is the array task `<job>_<index>` (Slurm; `<job>.<index+1>` on
//! UGE, `<job>[<index>].<server>` on PBS): `squeue -r`, `qstat` (UGE) and `qstat -t` (PBS) list
//! tasks one by one, and a task that ended without `finish-launch` recording its end (cancelled,
//! killed by a node failure, forgotten by the scheduler) is *lost*, never "still running".

use super::profile::Scheduler;
use super::rundir::{self, LaunchOutcome, OUTCOME_FILE, PLAN_FILE};
use crate::results::io::JOURNAL_FILE;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const JOBS_FILE: &str = "jobs.json";

/// Every submission of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobsFile {
    pub scheduler: Option<Scheduler>,
    /// The profile the run was submitted with (named in the "submit again" hint).
    #[serde(default)]
    pub profile: Option<String>,
    pub submissions: Vec<Submission>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    pub submitted_unix_s: f64,
    /// Seconds spent planning, writing scripts and submitting.
    pub overhead_s: f64,
    pub jobs: Vec<JobRecord>,
    pub collect_job: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobRecord {
    pub job_id: String,
    pub script: PathBuf,
    /// Attempt directories (relative to the run), one per array task, in task order.
    pub attempts: Vec<String>,
}

impl JobRecord {
    /// The scheduler's id of the `index`th attempt: the array task for arrays.
    pub fn task_id(&self, scheduler: Scheduler, index: usize) -> String {
        if self.attempts.len() < 2 {
            return self.job_id.clone();
        }
        match scheduler {
            Scheduler::Slurm => format!("{}_{index}", self.job_id),
            // UGE numbers tasks from 1 (`-t 1-N`); PBS ids read `123[].server`.
            Scheduler::Uge => format!("{}.{}", self.job_id, index + 1),
            Scheduler::Pbs => self.job_id.replacen("[]", &format!("[{index}]"), 1),
        }
    }
}

impl JobsFile {
    /// Attempt directory name → its scheduler task id.
    pub fn task_ids(&self) -> BTreeMap<String, String> {
        let sched = self.scheduler.unwrap_or(Scheduler::Slurm);
        let mut m = BTreeMap::new();
        for j in self.submissions.iter().flat_map(|s| &s.jobs) {
            for (i, a) in j.attempts.iter().enumerate() {
                let name = Path::new(a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into_owned());
                m.insert(name, j.task_id(sched, i));
            }
        }
        m
    }

    /// Base job ids of every job, collect jobs included.
    pub fn job_ids(&self) -> Vec<String> {
        self.submissions
            .iter()
            .flat_map(|s| {
                s.jobs
                    .iter()
                    .map(|j| j.job_id.clone())
                    .chain(s.collect_job.clone())
            })
            .filter(|i| !i.is_empty())
            .collect()
    }
}

/// Where a scheduler task stands, from its state name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Pending,
    Running,
    /// Ended, as the scheduler sees it (the launch may or may not have recorded its end).
    Ended,
}

/// Pure: a scheduler's state name → its phase. Slurm's names (`squeue %T`) are words in
/// capitals; UGE's (`qstat` "state") letter codes such as `qw`, `hqw`, `Eqw`, `r`, `t`, `Rr`,
/// `dr`; PBS's (`qstat` "S") single capitals. They share only `S` and `T`, which keep a task
/// active on both (suspended; UGE threshold-suspended, PBS in transit).
pub(crate) fn phase(state: &str) -> Phase {
    match state {
        "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED"
        | "RESV_DEL_HOLD" | "SPECIAL_EXIT" => Phase::Pending,
        "RUNNING" | "COMPLETING" | "SUSPENDED" | "STOPPED" | "SIGNALING" | "STAGE_OUT"
        | "RESIZING" => Phase::Running,
        // PBS: queued, held, waiting / running, exiting, array begun, suspended, user
        // suspended, in transit; F (finished), X (subjob done), M (moved) have ended.
        "Q" | "H" | "W" => Phase::Pending,
        "R" | "E" | "B" | "S" | "U" | "T" => Phase::Running,
        // UGE: a `q` (queued) or an error or hold without `r`/`t` waits; `r`, `t` (transferring)
        // and the suspended `s`, `S` run; a `d` (being deleted) job is there until it is gone.
        s if s.chars().all(|c| "qwhEdrtRsST".contains(c)) && !s.is_empty() => {
            if s.contains(['r', 't', 's', 'S', 'T']) {
                Phase::Running
            } else if s.contains('q') {
                Phase::Pending
            } else {
                Phase::Ended
            }
        }
        _ => Phase::Ended,
    }
}

/// Pure: `squeue -h -r -o '%i|%T'` output → task id → state, keeping only tasks of `jobs`
/// (base ids). A pending array not yet split may still print as `16_[0-3]`: its ids are
/// expanded so every task is found.
pub(crate) fn parse_squeue(text: &str, jobs: &[String]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (id, state) in text.lines().filter_map(|l| l.split_once('|')) {
        let (id, state) = (id.trim(), state.trim().to_string());
        let base = id.split('_').next().unwrap_or(id);
        if !jobs.iter().any(|j| j == base) {
            continue;
        }
        for t in expand_task_ids(id) {
            m.insert(t, state.clone());
        }
    }
    m
}

/// Pure: `16_[0-2,5%2]` → `16_0 16_1 16_2 16_5`; anything else as it is.
fn expand_task_ids(id: &str) -> Vec<String> {
    let Some((base, rest)) = id.split_once("_[") else {
        return vec![id.to_string()];
    };
    let list = rest.trim_end_matches(']');
    let list = list.split('%').next().unwrap_or(list);
    let mut out = Vec::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        match (a.parse::<u64>(), b.parse::<u64>()) {
            // A bound keeps a garbled range from expanding into millions of ids.
            (Ok(a), Ok(b)) if a <= b && b - a < 100_000 => {
                out.extend((a..=b).map(|i| format!("{base}_{i}")));
            }
            _ => out.push(format!("{base}_[{part}]")),
        }
    }
    out
}

/// Pure: UGE `qstat` output → task id → state, for the jobs `jobs` (base ids). Array tasks
/// read `<job>.<task>` (tasks from 1, as `JobRecord::task_id` names them); a pending range
/// (`2-4:1`, or a list `1,3`) is expanded. The columns: job-ID prior name user state date time
/// [queue, holding `@`] slots [ja-task-ID].
pub(crate) fn parse_qstat_uge(text: &str, jobs: &[String]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || !jobs.iter().any(|j| j == f[0]) {
            continue;
        }
        let (id, state) = (f[0], f[4].to_string());
        let queue = f.get(7).is_some_and(|q| q.contains('@'));
        let tasks = f.get(if queue { 9 } else { 8 });
        match tasks {
            None => {
                m.insert(id.to_string(), state);
            }
            Some(t) => {
                for task in expand_uge_tasks(t) {
                    m.insert(format!("{id}.{task}"), state.clone());
                }
            }
        }
    }
    m
}

/// Pure: `2-6:2,9` → 2 4 6 9 (bounded, as [`expand_task_ids`]).
fn expand_uge_tasks(list: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for part in list.split(',') {
        let (range, step) = part.split_once(':').unwrap_or((part, "1"));
        let (a, b) = range.split_once('-').unwrap_or((range, range));
        if let (Ok(a), Ok(b), Ok(step)) = (a.parse::<u64>(), b.parse::<u64>(), step.parse()) {
            if a <= b && b - a < 100_000 && step > 0 {
                out.extend((a..=b).step_by(step));
            }
        }
    }
    out
}

/// Pure: PBS `qstat -t` output → task id → state (the `S` column, second to last), for the
/// jobs `jobs`: plain ids and array ids `<n>[].<server>`, whose subjobs read `<n>[i].<server>`.
pub(crate) fn parse_qstat_pbs(text: &str, jobs: &[String]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let id = f[0];
        // `12[3].srv` → `12[].srv`: the array it belongs to.
        let base = match (id.find('['), id.find(']')) {
            (Some(a), Some(b)) if a < b => format!("{}[]{}", &id[..a], &id[b + 1..]),
            _ => id.to_string(),
        };
        // qstat may cut a long id, marking the cut with `*` (PBS Pro) or `+`.
        let known = jobs.iter().any(|j| {
            j == &base
                || (base.ends_with(['+', '*']) && j.starts_with(base.trim_end_matches(['+', '*'])))
        });
        if known {
            m.insert(id.to_string(), f[f.len() - 2].to_string());
        }
    }
    m
}

/// The scheduler's view of this user's tasks of `jobs`, in any state it still remembers
/// (bounded `squeue`, UGE `qstat -u`, PBS `qstat -t` call).
pub(crate) fn query(
    scheduler: Scheduler,
    jobs: &[String],
) -> Result<BTreeMap<String, String>, super::submit::ToolError> {
    match scheduler {
        Scheduler::Slurm => query_slurm(jobs),
        _ if jobs.is_empty() => Ok(BTreeMap::new()),
        Scheduler::Uge => {
            let user = std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "*".into());
            let text = super::submit::run_tool("qstat", &["-u".into(), user], 15)?;
            Ok(parse_qstat_uge(&text, jobs))
        }
        Scheduler::Pbs => {
            let text = super::submit::run_tool("qstat", &["-t".into()], 15)?;
            Ok(parse_qstat_pbs(&text, jobs))
        }
    }
}

/// The scheduler's view of this user's tasks of `jobs`, in any state it still remembers
/// (Slurm: bounded `squeue` call).
pub(crate) fn query_slurm(
    jobs: &[String],
) -> Result<BTreeMap<String, String>, super::submit::ToolError> {
    if jobs.is_empty() {
        return Ok(BTreeMap::new());
    }
    // `-j` fails outright when one id has aged out of the controller: ask for all of this
    // user's jobs and filter.
    let text = super::submit::run_tool(
        "squeue",
        &[
            "-h".into(),
            "-r".into(),
            "--me".into(),
            "-t".into(),
            "all".into(),
            "-o".into(),
            "%i|%T".into(),
        ],
        15,
    )?;
    Ok(parse_squeue(&text, jobs))
}

/// One attempt's state for `status` and `collect`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptState {
    pub attempt: String,
    /// The scheduler's id of the attempt: the array task (`16_2`) for arrays.
    pub job_id: Option<String>,
    /// `ok`, `failed`, `timeout` (the launch recorded its end), `pending`, `running`, `lost`
    /// (its job ended without the launch recording its end), `unknown` (no end recorded and
    /// the scheduler was not asked) or `not_submitted`.
    pub state: String,
    /// The scheduler's own state name (`RUNNING`, `CANCELLED`), when it was asked.
    #[serde(default)]
    pub scheduler_state: Option<String>,
    pub cases_done: usize,
    pub cases_planned: usize,
    /// The later attempt of the same launch that replaced this one (a resubmission): this
    /// one is kept for the record and never counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// A running attempt's first fatal MPI error line in its stderr.log (its ranks failed;
    /// the job's watcher ends it shortly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_error: Option<String>,
}

impl AttemptState {
    pub fn active(&self) -> bool {
        matches!(self.state.as_str(), "pending" | "running")
    }
    /// Failed or lost work of a launch's current attempt (what makes `status` exit 3); a
    /// superseded attempt's end no longer counts.
    pub fn bad(&self) -> bool {
        self.superseded_by.is_none() && matches!(self.state.as_str(), "failed" | "timeout" | "lost")
    }
    /// The state as `status` and `collect` print it: `lost (cancelled)` where the scheduler
    /// named why.
    pub fn shown(&self) -> String {
        match (&self.scheduler_state, self.state.as_str()) {
            (Some(x), "lost") => format!("lost ({})", x.to_lowercase()),
            (_, "running") if self.stderr_error.is_some() => "running, stderr has errors".into(),
            _ => self.state.clone(),
        }
    }
}

/// What is known about the scheduler's tasks when states are derived.
pub(crate) enum SchedulerView<'a> {
    /// The scheduler's answer (task id → state); tasks it does not list have ended.
    Asked(&'a BTreeMap<String, String>),
    /// Every job is known to have ended (the collect job runs after all of them).
    AllEnded,
    /// Not asked: an attempt without a recorded end may be running or lost.
    Unknown,
}

/// Pure: an attempt's state from its recorded outcome and the scheduler's view of its task.
pub(crate) fn attempt_phase(
    outcome: Option<&LaunchOutcome>,
    task: Option<&str>,
    view: &SchedulerView<'_>,
) -> (String, Option<String>) {
    let sched = match (view, task) {
        (SchedulerView::Asked(m), Some(t)) => m.get(t).cloned(),
        _ => None,
    };
    if let Some(o) = outcome {
        return (format!("{:?}", o.status).to_lowercase(), sched);
    }
    let state = match (view, task, sched.as_deref().map(phase)) {
        (_, None, _) => "not_submitted",
        (SchedulerView::Asked(_), _, Some(Phase::Pending)) => "pending",
        (SchedulerView::Asked(_), _, Some(Phase::Running)) => "running",
        // Ended, or forgotten by the scheduler, without the launch recording its end.
        (SchedulerView::Asked(_) | SchedulerView::AllEnded, _, _) => "lost",
        (SchedulerView::Unknown, _, _) => "unknown",
    };
    (state.to_string(), sched)
}

/// Every attempt of the run in `dir`, with its state.
pub(crate) fn attempt_states(
    dir: &Path,
    jobs: &JobsFile,
    view: &SchedulerView<'_>,
) -> Vec<AttemptState> {
    let tasks = jobs.task_ids();
    let dirs = rundir::attempt_dirs(dir);
    let plans: Vec<Option<crate::plan::LaunchPlan>> = dirs
        .iter()
        .map(|d| rundir::read_json::<crate::plan::LaunchPlan>(&d.join(PLAN_FILE)).ok())
        .collect();
    let ids: Vec<Option<&str>> = plans
        .iter()
        .map(|p| p.as_ref().map(|p| p.launch_id.as_str()))
        .collect();
    let replaced = rundir::superseded_by(&ids);
    dirs.iter()
        .zip(&plans)
        .zip(replaced)
        .map(|((d, plan), by)| {
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // jobs.json is authoritative; an attempt's own job_id file is the fallback.
            let task = tasks.get(&name).cloned().or_else(|| {
                std::fs::read_to_string(d.join("job_id"))
                    .ok()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
            });
            let outcome = rundir::read_json::<LaunchOutcome>(&d.join(OUTCOME_FILE)).ok();
            let (state, scheduler_state) = attempt_phase(outcome.as_ref(), task.as_deref(), view);
            let stderr_error = (state == "running")
                .then(|| super::fatal::fatal_in(d))
                .flatten();
            AttemptState {
                attempt: name,
                job_id: task,
                state,
                scheduler_state,
                cases_done: journal_cases(&d.join(JOURNAL_FILE)),
                cases_planned: plan.as_ref().map_or(0, |p| p.cases.len()),
                superseded_by: by.map(|j| rundir::attempt_name(&dirs[j])),
                stderr_error,
            }
        })
        .collect()
}

/// Cases a launch's journal holds so far.
pub(crate) fn journal_cases(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| {
            t.lines()
                .filter(|l| l.starts_with("{\"type\":\"case\""))
                .count()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::LaunchStatus;

    fn jobs() -> JobsFile {
        JobsFile {
            scheduler: Some(Scheduler::Slurm),
            profile: None,
            submissions: vec![Submission {
                submitted_unix_s: 0.0,
                overhead_s: 0.0,
                jobs: vec![
                    JobRecord {
                        job_id: "16".into(),
                        script: "j1".into(),
                        attempts: vec!["launches/001-a".into(), "launches/002-b".into()],
                    },
                    JobRecord {
                        job_id: "17".into(),
                        script: "j2".into(),
                        attempts: vec!["launches/003-c".into()],
                    },
                ],
                collect_job: Some("18".into()),
            }],
        }
    }

    #[test]
    fn array_attempts_map_to_their_tasks_and_back() {
        let j = jobs();
        let t = j.task_ids();
        assert_eq!(t["001-a"], "16_0");
        assert_eq!(t["002-b"], "16_1");
        assert_eq!(t["003-c"], "17", "a job of one attempt is no array");
        assert_eq!(j.job_ids(), vec!["16", "17", "18"]);
        let r = &j.submissions[0].jobs[0];
        assert_eq!(r.task_id(Scheduler::Uge, 1), "16.2");
        let pbs = JobRecord {
            job_id: "5[].pbs".into(),
            ..r.clone()
        };
        assert_eq!(pbs.task_id(Scheduler::Pbs, 1), "5[1].pbs");
    }

    #[test]
    fn squeue_lines_give_per_task_states_of_this_run_only() {
        let text = "16_0|RUNNING\n16_[1-2,4]|PENDING\n17|COMPLETED\n99_1|RUNNING\n160|RUNNING\n";
        let m = parse_squeue(text, &["16".into(), "17".into()]);
        assert_eq!(m["16_0"], "RUNNING");
        assert_eq!(m["16_1"], "PENDING");
        assert_eq!(m["16_2"], "PENDING");
        assert_eq!(m["16_4"], "PENDING");
        assert!(!m.contains_key("16_3"));
        assert_eq!(m["17"], "COMPLETED");
        assert!(!m.contains_key("99_1") && !m.contains_key("160"), "{m:?}");
        assert_eq!(expand_task_ids("7_[0-3%2]").len(), 4);
        assert_eq!(expand_task_ids("7_[x]"), vec!["7_[x]"]);
    }

    #[test]
    fn uge_qstat_gives_per_task_states_of_this_run_only() {
        let text = "\
job-ID  prior   name       user         state submit/start at     queue                          slots ja-task-ID
-----------------------------------------------------------------------------------------------------------------
     16 0.55500 sb-a       me           r     11/26/2026 01:00:00 all.q@node1                        1 1
     16 0.55500 sb-a       me           qw    11/26/2026 01:00:00                                    1 2-6:2,9
     17 0.55500 sb-b       me           r     11/26/2026 01:00:01 all.q@node2                        2
     18 0.00000 sb-collect me           hqw   11/26/2026 01:00:02                                    1
    160 0.55500 other      me           r     11/26/2026 01:00:03 all.q@node3                        1
";
        let m = parse_qstat_uge(text, &["16".into(), "17".into(), "18".into()]);
        assert_eq!(m["16.1"], "r");
        for t in ["16.2", "16.4", "16.6", "16.9"] {
            assert_eq!(m[t], "qw", "{t} in {m:?}");
        }
        assert!(!m.contains_key("16.3"));
        assert_eq!(m["17"], "r");
        assert_eq!(m["18"], "hqw");
        assert!(!m.contains_key("160"));
        assert_eq!(m.len(), 7);
        assert_eq!(phase("r"), Phase::Running);
        assert_eq!(phase("qw"), Phase::Pending);
        assert_eq!(phase("hqw"), Phase::Pending);
        assert_eq!(phase("Eqw"), Phase::Pending);
        assert_eq!(phase("dr"), Phase::Running);
        assert_eq!(phase("t"), Phase::Running);
    }

    #[test]
    fn pbs_qstat_gives_per_subjob_states_of_this_run_only() {
        let text = "\
Job id            Name             User              Time Use S Queue
----------------  ---------------- ----------------  -------- - -----
5[].pbs           sb-a             me                       0 B workq
5[0].pbs          sb-a             me                00:00:01 R workq
5[1].pbs          sb-a             me                       0 Q workq
6.pbs             sb-collect       me                       0 H workq
7.pbs             other            me                       0 R workq
";
        let m = parse_qstat_pbs(text, &["5[].pbs".into(), "6.pbs".into()]);
        assert_eq!(m["5[0].pbs"], "R");
        assert_eq!(m["5[1].pbs"], "Q");
        assert_eq!(m["6.pbs"], "H");
        assert!(!m.contains_key("7.pbs"));
        assert_eq!(phase("R"), Phase::Running);
        assert_eq!(phase("Q"), Phase::Pending);
        assert_eq!(phase("H"), Phase::Pending);
        assert_eq!(phase("F"), Phase::Ended);
        assert_eq!(phase("X"), Phase::Ended);
        // the attempts map onto these ids
        let r = JobRecord {
            job_id: "5[].pbs".into(),
            script: "j".into(),
            attempts: vec!["a".into(), "b".into()],
        };
        assert_eq!(r.task_id(Scheduler::Pbs, 1), "5[1].pbs");
    }

    #[test]
    fn an_attempt_is_pending_running_finished_or_lost() {
        let mut m = BTreeMap::new();
        m.insert("16_0".to_string(), "RUNNING".to_string());
        m.insert("16_1".to_string(), "PENDING".to_string());
        m.insert("16_2".to_string(), "CANCELLED".to_string());
        let asked = SchedulerView::Asked(&m);
        let st = |t: Option<&str>, v: &SchedulerView<'_>| attempt_phase(None, t, v).0;
        assert_eq!(st(Some("16_0"), &asked), "running");
        assert_eq!(st(Some("16_1"), &asked), "pending");
        assert_eq!(st(Some("16_2"), &asked), "lost");
        assert_eq!(
            st(Some("16_3"), &asked),
            "lost",
            "forgotten by the scheduler"
        );
        assert_eq!(st(Some("16_0"), &SchedulerView::AllEnded), "lost");
        assert_eq!(st(Some("16_0"), &SchedulerView::Unknown), "unknown");
        assert_eq!(st(None, &asked), "not_submitted");
        let o = LaunchOutcome {
            launch_id: "x".into(),
            status: LaunchStatus::Failed,
            exit_code: Some(1),
            started_unix_s: 0.0,
            finished_unix_s: 1.0,
            command_line: vec![],
            launcher: "srun".into(),
            stderr_tail: None,
            job_id: None,
            timeout_s: None,
        };
        // The recorded end wins over a task still completing.
        assert_eq!(
            attempt_phase(Some(&o), Some("16_0"), &asked),
            ("failed".to_string(), Some("RUNNING".to_string()))
        );
        assert_eq!(phase("COMPLETING"), Phase::Running);
        assert_eq!(phase("NODE_FAIL"), Phase::Ended);
    }
}
