//! `scalebench collect`: merge a submitted run into results.json and record which jobs
//! failed or never ran.

use super::{AttemptState, JobsFile, COLLECT_FILE, JOBS_FILE};
use crate::exit::{EXIT_CASES_FAILED, EXIT_OK};
use crate::launch::error::{LaunchError, Result};
use crate::launch::jobs::SchedulerView;
use crate::launch::profile::Scheduler;
use crate::launch::rundir::{self, SweepRecord, PLAN_FILE};
use crate::results::io::{write_results, RESULTS_FILE};
use crate::results::now_unix_s;
use crate::results::schema::CaseStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// What `collect` records besides results.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CollectRecord {
    pub collected_unix_s: f64,
    /// The job that ran the collection, if any (the dependent collect job).
    pub collect_job: Option<String>,
    pub attempts: Vec<AttemptState>,
    /// Planned cases without a result (of launches that are not queued or running).
    pub missing_cases: usize,
    /// Cases of launches still queued or running (not merged yet).
    #[serde(default)]
    pub pending_cases: usize,
    /// Collected while launches were still queued or running (or of unknown state).
    #[serde(default)]
    pub partial: bool,
    /// The run's links steps (`[links]`), each with its state and its links.json's directory
    /// (the report of the run directory reads each one).
    #[serde(default)]
    pub links_steps: Vec<super::LinksStepState>,
}

/// The scheduler's view for `collect`: the collect job runs after every other job ended; by
/// hand, the scheduler is asked when the run was submitted (and it answers).
fn collect_view(
    dir: &Path,
    from_job: bool,
) -> (
    Option<JobsFile>,
    Option<BTreeMap<String, String>>,
    Option<String>,
) {
    let jobs = rundir::read_json::<JobsFile>(&dir.join(JOBS_FILE)).ok();
    if from_job {
        return (jobs, None, None);
    }
    match &jobs {
        Some(j) => {
            match crate::launch::jobs::query(j.scheduler.unwrap_or(Scheduler::Slurm), &j.job_ids())
            {
                Ok(m) => (jobs, Some(m), None),
                Err(e) => (jobs, None, Some(e.to_string())),
            }
        }
        None => (jobs, None, None),
    }
}

/// `scalebench collect`: merge the finished launches of a run into results.json, and record
/// which are finished, failed, lost, or still queued or running (not merged).
pub fn collect(dir: &Path, from_job: Option<String>, quiet: bool) -> Result<u8> {
    let record: SweepRecord =
        rundir::read_json(&dir.join(PLAN_FILE)).map_err(|e| LaunchError::NotARun {
            dir: dir.to_path_buf(),
            source: Box::new(e),
        })?;
    let from_job = from_job.filter(|j| !j.is_empty());
    let (jobs, sched, unasked) = collect_view(dir, from_job.is_some());
    let view = match (&sched, from_job.is_some()) {
        (Some(m), _) => SchedulerView::Asked(m),
        (None, true) => SchedulerView::AllEnded,
        (None, false) => SchedulerView::Unknown,
    };
    let attempts = crate::launch::jobs::attempt_states(dir, &jobs.unwrap_or_default(), &view);
    // Only what finished is merged: a running launch's journal is half a launch.
    let open: std::collections::BTreeSet<&str> = attempts
        .iter()
        // A superseded attempt has ended: submit refuses to resubmit while jobs run.
        .filter(|a| (a.active() || a.state == "unknown") && a.superseded_by.is_none())
        .map(|a| a.attempt.as_str())
        .collect();
    // A task the scheduler reports cancelled says more than "lost".
    let cancelled: std::collections::BTreeSet<&str> = attempts
        .iter()
        .filter(|a| a.state == "lost" && a.scheduler_state.as_deref() == Some("CANCELLED"))
        .map(|a| a.attempt.as_str())
        .collect();
    let merged = rundir::merge_attempts(
        dir,
        &record,
        &|d: &Path| !open.contains(rundir::attempt_name(d).as_str()),
        &|d: &Path| {
            cancelled
                .contains(rundir::attempt_name(d).as_str())
                .then(|| "lost: cancelled".to_string())
        },
    );
    write_results(&dir.join(RESULTS_FILE), &merged)?;
    let planned = record.launches.iter().map(|l| l.cases.len()).sum::<usize>();
    let pending_cases: usize = attempts
        .iter()
        .filter(|a| open.contains(a.attempt.as_str()))
        .map(|a| a.cases_planned)
        .sum();
    let active = !open.is_empty();
    // A spec this build cannot read again leaves the steps unknown: the cases still merge.
    let links_steps = crate::launch::links_step::step_states(dir, active).unwrap_or_default();
    let rec = CollectRecord {
        collected_unix_s: now_unix_s(),
        collect_job: from_job,
        missing_cases: planned.saturating_sub(merged.cases.len() + pending_cases),
        pending_cases,
        partial: active,
        attempts,
        links_steps,
    };
    rundir::write_json(&dir.join(COLLECT_FILE), &rec)?;
    if !quiet {
        print_collected(dir, &merged, &rec, unasked.as_deref());
    }
    let failed = merged
        .cases
        .iter()
        .any(|c| c.status.needs_rerun() || c.status == CaseStatus::Timeout)
        || rec.missing_cases > 0
        || rec.links_steps.iter().any(|s| s.bad());
    Ok(if failed { EXIT_CASES_FAILED } else { EXIT_OK })
}

fn print_collected(
    dir: &Path,
    merged: &crate::results::schema::ResultsFile,
    rec: &CollectRecord,
    unasked: Option<&str>,
) {
    crate::launch::local::print_summary(merged);
    for a in rec.attempts.iter().filter(|a| a.state != "ok") {
        let by = a
            .superseded_by
            .as_ref()
            .map(|b| format!(", superseded by {b} (not counted)"))
            .unwrap_or_default();
        println!(
            "# attempt {} (job {}): {}{by}",
            a.attempt,
            a.job_id.clone().unwrap_or_default(),
            a.shown()
        );
    }
    if let Some(line) = merged.incomplete_headline() {
        println!("# {line}");
    }
    if let Some(e) = unasked {
        println!("# could not ask the scheduler ({e}): launches without a recorded end are left out as of unknown state");
    }
    if rec.pending_cases > 0 {
        println!(
            "# {} of launches still queued or running (or of unknown state) are not merged yet: collect again when they end (scalebench status {} --wait)",
            crate::units::count(rec.pending_cases, "case", "cases"),
            dir.display()
        );
    }
    for s in &rec.links_steps {
        println!("{}", s.line(dir));
    }
    if rec.missing_cases > 0 {
        println!(
            "# {} of finished or lost launches have no result: submit the spec again into this run to run them",
            crate::units::count(rec.missing_cases, "planned case", "planned cases")
        );
    } else if !rec.partial {
        // The run directory: its report holds results.json and each links step's section.
        let what = if rec.links_steps.is_empty() {
            dir.join(RESULTS_FILE)
        } else {
            dir.to_path_buf()
        };
        println!("# next: scalebench report {}", what.display());
    }
}
