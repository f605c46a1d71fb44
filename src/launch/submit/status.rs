//! `scalebench status`: the states of a submitted run's jobs, once or until they end.

use super::collect::CollectRecord;
use super::tool::read_jobs;
use super::{AttemptState, JobsFile, COLLECT_FILE};
use crate::exit::{EXIT_CASES_FAILED, EXIT_OK, EXIT_RUNTIME};
use crate::launch::error::{LaunchError, Result};
use crate::launch::jobs::{phase, Phase, SchedulerView};
use crate::launch::profile::Scheduler;
use crate::launch::progress::{Counts, ProgressLine};
use crate::launch::rundir::{self, LaunchOutcome, OUTCOME_FILE};
use crate::results::io::{JOURNAL_FILE, RESULTS_FILE};
use std::path::Path;
use std::time::{Duration, Instant};

/// A snapshot of a submitted run: every attempt's state and the collect jobs' phases.
struct Snapshot {
    states: Vec<AttemptState>,
    /// A collect job is still queued or running.
    collect_active: bool,
}

impl Snapshot {
    fn take(dir: &Path, jobs: &JobsFile) -> Result<Snapshot> {
        let scheduler = jobs.scheduler.unwrap_or(Scheduler::Slurm);
        let sched = crate::launch::jobs::query(scheduler, &jobs.job_ids())
            .map_err(|source| LaunchError::Query { scheduler, source })?;
        let states = crate::launch::jobs::attempt_states(dir, jobs, &SchedulerView::Asked(&sched));
        let collect_active = jobs
            .submissions
            .iter()
            .filter_map(|s| s.collect_job.as_ref())
            .any(|c| sched.get(c).is_some_and(|s| phase(s) != Phase::Ended));
        Ok(Snapshot {
            states,
            collect_active,
        })
    }

    fn active(&self) -> bool {
        self.collect_active || self.states.iter().any(AttemptState::active)
    }

    /// Current attempts in `state` (a superseded attempt is not counted).
    fn count(&self, state: &str) -> usize {
        self.states
            .iter()
            .filter(|s| s.state == state && s.superseded_by.is_none())
            .count()
    }

    fn progress(&self) -> Counts {
        let done: usize = self.states.iter().map(|s| s.cases_done).sum();
        Counts {
            cases_done: done,
            cases_total: self
                .states
                .iter()
                .map(|s| s.cases_planned.max(s.cases_done))
                .sum(),
            running: self.count("running"),
            queued: self.count("pending"),
        }
    }
}

/// `scalebench status`: the state of every job of a run (array tasks one by one), polled
/// within bounds. Exit 0 for a healthy run in any state (queued, running, finished); 3 when
/// work failed or was lost; 4 when `--wait` ran out of time.
pub fn status(dir: &Path, wait: bool, timeout_s: f64, quiet: bool) -> Result<u8> {
    // NaN would never compare greater: `--wait` would poll forever.
    crate::config::limits::check_seconds("--timeout", timeout_s, "3600")?;
    let jobs = read_jobs(dir)?;
    let t0 = Instant::now();
    let mut line = ProgressLine::new(quiet);
    let mut snap = Snapshot::take(dir, &jobs)?;
    while wait && snap.active() {
        if t0.elapsed().as_secs_f64() > timeout_s {
            line.finish();
            if !quiet {
                print_states(dir, &jobs, &snap);
            }
            eprintln!(
                "scalebench: status: {} still queued or running after {timeout_s:.0} s",
                crate::units::count(
                    snap.states.iter().filter(|s| s.active()).count(),
                    "launch",
                    "launches"
                )
            );
            return Ok(EXIT_RUNTIME);
        }
        line.show(&snap.progress(), case_rate_s(dir));
        std::thread::sleep(Duration::from_millis(1000));
        snap = Snapshot::take(dir, &jobs)?;
    }
    line.finish();
    let steps = crate::launch::links_step::step_states(dir, snap.active());
    if !quiet {
        print_states(dir, &jobs, &snap);
        print_links_steps(dir, &steps);
    }
    let bad = snap.states.iter().any(AttemptState::bad)
        || steps.as_ref().is_ok_and(|s| s.iter().any(|x| x.bad()));
    Ok(if bad { EXIT_CASES_FAILED } else { EXIT_OK })
}

/// Each links step's state (comment lines, after the launches' table), or why they are not
/// known (a spec.toml this scalebench cannot read: the launches are still reported).
fn print_links_steps(
    dir: &Path,
    steps: &std::result::Result<
        Vec<crate::launch::links_step::LinksStepState>,
        crate::config::SpecError,
    >,
) {
    match steps {
        Ok(steps) => {
            for s in steps {
                println!("{}", s.line(dir));
            }
        }
        Err(e) => println!("# links steps: not known ({e})"),
    }
}

/// Mean wall seconds of a case measured so far in `dir`'s journals (for the ETA).
fn case_rate_s(dir: &Path) -> Option<f64> {
    let (mut n, mut sum) = (0usize, 0.0f64);
    for d in rundir::attempt_dirs(dir) {
        let text = std::fs::read_to_string(d.join(JOURNAL_FILE)).unwrap_or_default();
        for l in text.lines().filter(|l| l.starts_with("{\"type\":\"case\"")) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(l) {
                let (a, b) = (v["started_unix_s"].as_f64(), v["finished_unix_s"].as_f64());
                if let (Some(a), Some(b)) = (a, b) {
                    n += 1;
                    sum += (b - a).max(0.0);
                }
            }
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// When results.json was last merged, and whether that merge was final.
fn collected(dir: &Path) -> Option<CollectRecord> {
    rundir::read_json::<CollectRecord>(&dir.join(COLLECT_FILE)).ok()
}

fn print_states(dir: &Path, jobs: &JobsFile, snap: &Snapshot) {
    print_table(&snap.states);
    let (ok, failed, lost) = (
        snap.count("ok"),
        snap.count("failed") + snap.count("timeout"),
        snap.count("lost"),
    );
    let (running, queued) = (snap.count("running"), snap.count("pending"));
    let superseded = snap
        .states
        .iter()
        .filter(|s| s.superseded_by.is_some())
        .count();
    println!(
        "# launches: {ok} ok, {failed} failed, {lost} lost, {running} running, {queued} queued{}",
        if superseded > 0 {
            format!(
                "; {} replaced by a later attempt (kept for the record, not counted)",
                crate::units::count(superseded, "attempt", "attempts")
            )
        } else {
            String::new()
        }
    );
    if lost > 0 {
        println!("# lost: the job ended (cancelled, killed, or forgotten by the scheduler) before the launch recorded its end");
    }
    let results = dir.join(RESULTS_FILE).display().to_string();
    let merged = collected(dir);
    let last_end = last_outcome_s(dir);
    let final_merge = merged
        .as_ref()
        .is_some_and(|c| !c.partial && c.collected_unix_s >= last_end);
    if snap.active() {
        println!(
            "# results: not final ({} running, {queued} queued); {}",
            crate::units::count(running, "launch", "launches"),
            match merged {
                Some(_) => format!("{results} holds what had finished when last collected"),
                None => "the collect job merges them when every job has ended".into(),
            }
        );
        println!("# next: scalebench status {} --wait", dir.display());
        return;
    }
    if final_merge {
        println!("# results merged: {results}");
    } else {
        println!(
            "# results: not merged yet: scalebench collect {}",
            dir.display()
        );
    }
    // The same question `submit` asks: which planned cases have no good result.
    match to_submit(dir) {
        Some(n) if n > 0 => println!(
            "# next: scalebench submit {} --profile {} --out {}  (submits only the failed and lost cases: {})",
            dir.join("spec.toml").display(),
            jobs.profile.as_deref().unwrap_or("PROFILE"),
            dir.display(),
            crate::units::count(n, "case", "cases")
        ),
        Some(_) if failed + lost > 0 => println!(
            "# every planned case has a result: submitting again would submit nothing"
        ),
        // The run directory, not results.json: the report finds each links step beside it.
        _ if final_merge => println!("# next: scalebench report {}", dir.display()),
        _ => {}
    }
}

/// How many cases `submit` would submit into the ended run `dir` (`None`: its plan.json is
/// unreadable, so `submit` would not get that far either).
fn to_submit(dir: &Path) -> Option<usize> {
    let record: rundir::SweepRecord = rundir::read_json(&dir.join(rundir::PLAN_FILE)).ok()?;
    let merged = rundir::merge(dir, &record);
    Some(
        rundir::cases_to_run(&record, &merged)
            .values()
            .map(Vec::len)
            .sum(),
    )
}

/// One row per attempt; columns as wide as their widest entry (a state such as
/// `lost (cancelled)` keeps its row aligned), separated by two spaces at least.
fn print_table(states: &[AttemptState]) {
    let rows: Vec<[String; 5]> = states
        .iter()
        .map(|s| {
            [
                s.attempt.clone(),
                s.job_id.clone().unwrap_or_else(|| "-".into()),
                s.shown(),
                format!("{}/{}", s.cases_done, s.cases_planned),
                s.superseded_by
                    .as_ref()
                    .map(|b| format!("superseded by {b}"))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    let head = ["attempt", "job", "state", "cases done", ""];
    let w: Vec<usize> = (0..4)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    println!(
        "# {:<a$}  {:>b$}  {:<c$}  {:>d$}",
        head[0],
        head[1],
        head[2],
        head[3],
        a = w[0],
        b = w[1],
        c = w[2],
        d = w[3]
    );
    for r in &rows {
        let line = format!(
            "  {:<a$}  {:>b$}  {:<c$}  {:>d$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            a = w[0],
            b = w[1],
            c = w[2],
            d = w[3]
        );
        println!("{}", line.trim_end());
    }
    for s in states {
        if let Some(e) = &s.stderr_error {
            println!("#   {}: stderr: {e}", s.attempt);
        }
    }
}

/// The latest recorded end of any launch of the run.
fn last_outcome_s(dir: &Path) -> f64 {
    rundir::attempt_dirs(dir)
        .iter()
        .filter_map(|d| rundir::read_json::<LaunchOutcome>(&d.join(OUTCOME_FILE)).ok())
        .map(|o| o.finished_unix_s)
        .fold(0.0, f64::max)
}
