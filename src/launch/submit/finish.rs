//! The job-side command: `finish-launch` closes a launch inside its job script.

use crate::exit::EXIT_OK;
use crate::launch::error::Result;
use crate::launch::rundir::{self, LaunchOutcome, OUTCOME_FILE, PLAN_FILE};
use crate::results::now_unix_s;
use crate::results::schema::LaunchStatus;
use std::path::Path;

/// `scalebench finish-launch`: run inside a job after the launch, records how it ended.
pub fn finish_launch(
    dir: &Path,
    exit_code: i32,
    started_unix_s: f64,
    timeout_s: Option<f64>,
    launcher: &str,
    job_id: Option<String>,
) -> Result<u8> {
    let plan: crate::plan::LaunchPlan = rundir::read_json(&dir.join(PLAN_FILE))?;
    // `timeout` exits 124 when it stopped the launch, 137 when it had to SIGKILL it; but a
    // launcher also exits 137 when it kills its tasks after one died, so 137 is only a
    // timeout if the launch ran up to its limit.
    let elapsed = now_unix_s() - started_unix_s;
    let status = match (exit_code, timeout_s) {
        (0 | 3, _) => LaunchStatus::Ok,
        (124, Some(_)) => LaunchStatus::Timeout,
        (137, Some(limit)) if elapsed >= limit - 1.0 => LaunchStatus::Timeout,
        _ => LaunchStatus::Failed,
    };
    let mut tail = rundir::stderr_digest(&dir.join("stderr.log"), 12);
    // Ended by the job's watcher: the line it acted on comes first.
    if let Ok(line) = std::fs::read_to_string(dir.join(crate::launch::fatal::FATAL_FILE)) {
        tail = format!(
            "ended early: its ranks reported a fatal MPI error ({}); the other ranks would have waited to the time limit\n{tail}",
            line.trim()
        );
    }
    let outcome = LaunchOutcome {
        launch_id: plan.launch_id,
        status,
        exit_code: Some(exit_code),
        started_unix_s,
        finished_unix_s: now_unix_s(),
        command_line: vec![launcher.to_string()],
        launcher: launcher.to_string(),
        stderr_tail: (!tail.is_empty()).then_some(tail),
        job_id: job_id.filter(|j| !j.is_empty()),
        timeout_s,
    };
    rundir::write_json(&dir.join(OUTCOME_FILE), &outcome)?;
    Ok(EXIT_OK)
}

/// `scalebench watch-launch`: run inside a job beside its launch; ends the launch (SIGTERM to
/// `pid`) once its stderr.log reports a fatal MPI error and it has not ended `grace_s` later.
/// Exit 0 either way: the launch's own exit code is what the job records.
pub fn watch_launch(dir: &Path, pid: u32, grace_s: f64) -> Result<u8> {
    crate::config::limits::check_seconds("--grace-s", grace_s, "10")?;
    let grace = std::time::Duration::from_secs_f64(grace_s);
    let poll = std::time::Duration::from_secs(1);
    if let crate::launch::fatal::Watched::Stopped(line) =
        crate::launch::fatal::watch(dir, pid, grace, poll)
    {
        eprintln!("scalebench: watch-launch: ended the launch {grace_s:.0} s after its ranks reported a fatal MPI error: {line}");
    }
    Ok(EXIT_OK)
}
