//! What the watchdog keeps if the job hangs, and what it writes when it fires.

use super::request::Launch;
use crate::params::{CaseParams, LaunchShape};
use crate::results::io::{new_results, write_results, Journal, JournalRecord, RESULTS_FILE};
use crate::results::now_unix_s;
use crate::results::schema::CaseStatus;
use crate::results::schema::{CaseResult, LaunchRecord, LaunchStatus, RunInfo};
use crate::topology::identity::{LauncherEnv, NodeLayout};
use crate::workload::{self};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What has finished, for the watchdog to keep if the job hangs: every rank knows the paths
/// and the current case; rank 0 holds the rest (another rank that takes the lead reads it
/// back from the journal).
#[derive(Default)]
pub(super) struct Kept {
    pub(super) results_path: Option<PathBuf>,
    pub(super) journal_path: Option<PathBuf>,
    pub(super) run: Option<RunInfo>,
    pub(super) launch: Option<LaunchRecord>,
    pub(super) cases: Vec<CaseResult>,
    /// The case running now: its parameters, start time, devices and ranks.
    pub(super) current: Option<(CaseParams, f64, u32, u32)>,
    /// The launch's cases while it is still starting (rank 0): a watchdog ending the start-up
    /// records them as not measured, so results.json says what the job was for.
    pub(super) unstarted: Vec<CaseParams>,
}

/// Rank 0, once its cases are known: what the watchdog keeps if the rest of the start-up (the
/// device plan, the backend, a BLAS's `dlopen`) never finishes — the run, the launch without
/// its provenance (not gathered yet) and the planned cases. No journal is opened for it.
#[allow(clippy::too_many_arguments)]
pub(super) fn keep_start_up(
    keep: &Mutex<Kept>,
    out_dir: &std::path::Path,
    run_id: &str,
    argv: &[String],
    layout: &NodeLayout,
    req: &Launch,
    shape: LaunchShape,
    env: &LauncherEnv,
    cases: &[CaseParams],
) {
    let started = now_unix_s();
    let mut k = lock_kept(keep);
    k.results_path = Some(out_dir.join(RESULTS_FILE));
    k.run = Some(RunInfo {
        run_id: run_id.to_string(),
        started_unix_s: started,
        written_unix_s: started,
        command_line: argv.to_vec(),
        emulated_nodes: layout.emulated,
        labels: Default::default(),
    });
    k.launch = Some(LaunchRecord::starting(
        req.launch_id.clone().unwrap_or_else(|| shape.id()),
        shape,
        LaunchStatus::Incomplete,
        env.source.map_or("direct".to_string(), |s| s.to_string()),
        argv.to_vec(),
        started,
    ));
    k.unstarted = cases.to_vec();
}

pub(super) fn lock_kept(k: &Mutex<Kept>) -> std::sync::MutexGuard<'_, Kept> {
    k.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Rank 0's last act when the watchdog fires: the stuck case recorded as `timeout` with the
/// diagnosis, the launch as failed, results.json written with every finished case.
pub(super) fn keep_on_expiry(keep: &Arc<Mutex<Kept>>) -> crate::run::watchdog::OnExpiry {
    let keep = Arc::clone(keep);
    Box::new(move |what: &str, diagnosis: &str| {
        let k = lock_kept(&keep);
        let path = k.results_path.clone()?;
        let (run, mut launch, mut cases) = match (&k.run, &k.launch) {
            (Some(r), Some(l)) => (r.clone(), l.clone(), k.cases.clone()),
            _ => {
                let j = crate::results::io::read_journal(k.journal_path.as_deref()?).ok()?;
                (j.run?, j.launches.into_iter().last()?, j.cases)
            }
        };
        let now = now_unix_s();
        let during_start_up = !k.unstarted.is_empty();
        for params in &k.unstarted {
            let mut rec = crate::run::record(
                params,
                &launch.launch_id,
                now,
                now,
                params.devices(),
                params.ranks(),
                Err(workload::CaseError::Failed(format!(
                    "not measured: the watchdog ended the job during {what}: {diagnosis}"
                ))),
            );
            rec.status = CaseStatus::Timeout;
            cases.push(rec);
        }
        let mut journal = k
            .journal_path
            .as_deref()
            .and_then(|p| Journal::open(p).ok());
        if let Some((params, t0, devices, ranks)) = &k.current {
            let mut rec = crate::run::record(
                params,
                &launch.launch_id,
                *t0,
                now,
                *devices,
                *ranks,
                Err(workload::CaseError::Failed(format!(
                    "the watchdog ended the job: {what} did not finish in time: {diagnosis}"
                ))),
            );
            rec.status = CaseStatus::Timeout;
            if let Some(j) = &mut journal {
                let _ = j.append(&JournalRecord::Case(Box::new(rec.clone())));
            }
            cases.push(rec);
        }
        launch.status = LaunchStatus::Failed;
        launch.finished_unix_s = Some(now);
        launch.wall_s = Some(now - launch.started_unix_s);
        launch.stderr_tail = Some(format!("watchdog: {what}: {diagnosis}"));
        if let Some(j) = &mut journal {
            let _ = j.append(&JournalRecord::Launch(Box::new(launch.clone())));
        }
        let mut info = run;
        info.written_unix_s = now;
        if during_start_up {
            // The run directory may not exist yet: nothing was journalled.
            std::fs::create_dir_all(path.parent()?).ok()?;
        }
        write_results(&path, &new_results(info, vec![launch], cases)).ok()?;
        Some(if during_start_up {
            format!(
                "No case ran: the launch and its planned cases (as timeout) are recorded in {}.",
                path.display()
            )
        } else {
            format!("Finished cases are kept in {}.", path.display())
        })
    })
}
