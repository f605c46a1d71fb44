//! `scalebench sweep`: runs a spec's launches on this machine, one `mpirun` each.
//!
//! Never loses a result: each launch's rank 0 journals every case as it finishes, the driver
//! records how each launch ended (`outcome.json`) and rewrites the merged `results.json`
//! atomically after every launch. A launch past its time limit is killed with its whole
//! process group and its unfinished cases recorded as `timeout`; a crashed launch is recorded
//! with the tail of its stderr and the sweep goes on; Ctrl-C stops the current launch and keeps
//! everything finished; `--resume` runs only cases that are missing or failed.

use super::error::{LaunchError, Result};
use super::jobs::journal_cases;
use super::links_step;
use super::process::{self, Spawned};
use super::progress::{Counts, ProgressLine};
use super::rundir::{self, LaunchOutcome, SweepRecord, OUTCOME_FILE, PLAN_FILE};
use crate::config::{self, SpecError, SweepSpec};
use crate::exit::{EXIT_CASES_FAILED, EXIT_OK};
use crate::params::CaseParams;
use crate::plan::sweep::{self, LinksSetup, SweepPlan};
use crate::plan::LaunchPlan;
use crate::results::io::{write_results, JOURNAL_FILE, RESULTS_FILE};
use crate::results::schema::{CaseStatus, LaunchStatus, ResultsFile};
use crate::results::{now_unix_s, utc_stamp};
use crate::run::console::{summary_line, TablePrinter};
use crate::topology::ceilings::cache::CACHE_DIR_VAR;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Exit code when the sweep was interrupted (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// What `scalebench sweep` was asked to do.
#[derive(Debug, Clone)]
pub struct SweepRequest {
    pub spec: PathBuf,
    pub out: Option<PathBuf>,
    pub resume: bool,
    pub dry_run: bool,
    pub quiet: bool,
    /// Overrides the spec's `[launch] timeout_s`.
    pub launch_timeout_s: Option<f64>,
    /// The MPI launcher to use (default `mpirun`).
    pub mpirun: String,
    /// `--no-ceilings`: no launch measures its hosts' ceilings, whatever the spec says.
    pub no_ceilings: bool,
}

/// Loads and plans a spec (errors: file:line: key: message). The second value says why the
/// plan could not run as a local sweep on this machine, if it could not.
pub fn plan_spec(spec_path: &Path) -> Result<(SweepSpec, SweepPlan, Option<SpecError>)> {
    let spec = config::load(spec_path).map_err(LaunchError::Spec)?;
    if spec.dims.is_empty() {
        eprintln!(
            "note: {} gives no [axes]: planning the defaults (allreduce, sizes 8B:4MiB:x4, in and out of place, 1 node × 1 rank)",
            spec_path.display()
        );
    }
    let mut plan = sweep::expand(&spec).map_err(LaunchError::Spec)?;
    let cpus = crate::topology::affinity::current_thread_cpus()
        .map(|c| c.len() as u32)
        .unwrap_or(1);
    let local = sweep::check_local(&spec, &plan, cpus).err();
    // One host: nodes beyond one are emulated.
    for l in &mut plan.launches {
        l.emulate_nodes = l.shape.nodes > 1;
    }
    Ok((spec, plan, local))
}

/// Loads and plans a spec for a local sweep on this machine.
pub fn plan_local(spec_path: &Path) -> Result<(SweepSpec, SweepPlan)> {
    match plan_spec(spec_path)? {
        (_, _, Some(why)) => Err(LaunchError::Spec(why)),
        (spec, plan, None) => Ok((spec, plan)),
    }
}

/// The host cache of CPU ceilings the sweep's launches share, under its `--out`.
pub const CEILINGS_DIR: &str = "ceilings";

/// The `mpirun` command line of one launch.
pub fn launch_command(
    req: &SweepRequest,
    spec: &SweepSpec,
    plan: &LaunchPlan,
    plan_file: &Path,
    out: &Path,
) -> Vec<String> {
    let mut cmd = mpirun_prefix(req, spec, plan.shape.ranks());
    cmd.extend([
        "run".into(),
        "-q".into(),
        "--plan".into(),
        plan_file.display().to_string(),
        "--out".into(),
        out.display().to_string(),
    ]);
    if let Some(t) = spec.launch.op_timeout_s {
        cmd.extend(["--op-timeout".into(), t.to_string()]);
    }
    cmd
}

/// The `mpirun` command line of a set-up's links step: the launches' launcher and its
/// arguments, with the set-up's ranks, running `scalebench links` into `dir`.
pub fn links_command(
    req: &SweepRequest,
    spec: &SweepSpec,
    step: &crate::config::LinksStep,
    setup: &LinksSetup,
    dir: &Path,
) -> Vec<String> {
    let mut cmd = mpirun_prefix(req, spec, setup.ranks());
    cmd.extend(links_step::links_args(step, &dir.display().to_string()));
    cmd
}

/// `mpirun -np RANKS …` up to and including scalebench itself.
fn mpirun_prefix(req: &SweepRequest, spec: &SweepSpec, ranks: u32) -> Vec<String> {
    let exe = std::env::current_exe().map_or("scalebench".to_string(), |p| p.display().to_string());
    let mut cmd = vec![
        req.mpirun.clone(),
        "-np".into(),
        ranks.to_string(),
        "--bind-to".into(),
        "none".into(),
    ];
    if spec.launch.oversubscribe {
        cmd.push("--oversubscribe".into());
    }
    // SAFETY: getuid takes no arguments, touches no memory and cannot fail (POSIX); std has
    // no safe wrapper for it.
    if unsafe { libc::getuid() } == 0 && std::env::var_os("OMPI_ALLOW_RUN_AS_ROOT").is_none() {
        cmd.push("--allow-run-as-root".into());
    }
    cmd.extend(spec.launch.mpirun_args.iter().cloned());
    cmd.push(exe);
    cmd
}

fn default_out(spec: &SweepSpec) -> PathBuf {
    let safe: String = spec
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("results").join(format!("{safe}-{}", utc_stamp(now_unix_s())))
}

/// Holds the run directory's lock for the life of the sweep (the lock `run --out` takes too).
fn lock(dir: &Path) -> Result<crate::results::io::DirLock> {
    crate::results::io::DirLock::try_take(dir)?.ok_or_else(|| LaunchError::Busy {
        dir: dir.to_path_buf(),
    })
}

/// A launch in flight, recorded in its attempt directory (`live.json`) while it runs: if the
/// driver dies without stopping it (SIGKILL), `--resume` finds it there and ends it before
/// running anything, so no case is measured twice on shared cores.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct LiveLaunch {
    pub driver_pid: u32,
    /// The launch's process group (its launcher leads it).
    pub pgid: i32,
    pub launcher_pid: u32,
    /// Unique to the launch and on every rank's command line (its plan file's path).
    pub marker: String,
    pub started_unix_s: f64,
    /// Rewritten about once a second while the driver waits on the launch.
    pub heartbeat_unix_s: f64,
}

pub(crate) const LIVE_FILE: &str = "live.json";

/// Ends launches that a driver which died left running (their `live.json` remains), before a
/// resume runs anything.
fn end_orphaned_launches(out: &Path, quiet: bool) {
    let links_dirs = std::fs::read_dir(out.join(links_step::LINKS_DIR))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_else(|_| Vec::new());
    for d in rundir::attempt_dirs(out).into_iter().chain(links_dirs) {
        let path = d.join(LIVE_FILE);
        let Ok(live) = rundir::read_json::<LiveLaunch>(&path) else {
            continue;
        };
        let n = process::end_orphan(live.pgid, &live.marker, Duration::from_secs(10));
        if n > 0 && !quiet {
            eprintln!(
                "# {}: its launch was still running, left by a sweep (pid {}) that ended without stopping it (last heartbeat {:.0} s ago): ended it (process group {}, {}) before resuming",
                d.display(),
                live.driver_pid,
                now_unix_s() - live.heartbeat_unix_s,
                live.pgid,
                crate::units::count(n, "process", "processes")
            );
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// Runs `scalebench sweep`.
pub fn sweep(req: &SweepRequest, argv: &[String]) -> Result<u8> {
    let (spec, mut plan) = plan_local(&req.spec)?;
    if req.no_ceilings {
        for l in &mut plan.launches {
            l.settings.ceilings = false;
        }
    }
    let out = req.out.clone().unwrap_or_else(|| default_out(&spec));
    if let Some(t) = req.launch_timeout_s {
        crate::config::limits::check_seconds("--launch-timeout", t, "600")?;
    }
    // Checked above (the option) and when the spec was read (`[launch] timeout_s`).
    let timeout = Duration::from_secs_f64(req.launch_timeout_s.unwrap_or(spec.launch.timeout_s));
    rundir::refuse_file_as_out(&out, "--out")?;
    if req.dry_run {
        print_dry_run(req, &spec, &plan, &out);
        return Ok(EXIT_OK);
    }
    check_out(req, &out)?;
    std::fs::create_dir_all(&out).map_err(|source| LaunchError::Io {
        path: out.clone(),
        source,
    })?;
    let _lock = lock(&out)?;
    if req.resume {
        rundir::check_same_plan(&out, &plan.launches, "--resume")?;
        // We hold the lock, so the sweep that started these is gone.
        end_orphaned_launches(&out, req.quiet);
    }
    let record = SweepRecord::new(&out, req.resume, &spec, &req.spec, argv, &plan.launches);
    let spec_copy = out.join("spec.toml");
    crate::results::io::write_atomic(&spec_copy, spec.text.as_bytes())?;
    rundir::write_json(&out.join(PLAN_FILE), &record)?;

    let (merged, warnings) = rundir::merge_with_warnings(&out, &record);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let todo = rundir::cases_to_run(&record, &merged);
    let total: usize = todo.values().map(Vec::len).sum();
    if !req.quiet {
        announce(req, &spec, &plan, total, &out);
    }
    process::catch_interrupts();
    let sweep = Sweep {
        req,
        spec: &spec,
        out: &out,
        record: &record,
        timeout,
    };
    let links = sweep.run_links_steps(&plan)?;
    let interrupted = links.interrupted || sweep.run_launches(&plan, &todo, total)?;
    let merged = rundir::merge(&out, &record);
    write_results(&out.join(RESULTS_FILE), &merged)?;
    if spec.settings.ceilings && !interrupted {
        super::sweep_end::recheck_ceilings(&out.join(CEILINGS_DIR), req.quiet);
    }
    if !req.quiet {
        print_summary(&merged);
        super::sweep_end::closing_line(&out, &merged, interrupted, links.failed);
    }
    if interrupted {
        eprintln!(
            "scalebench: interrupted: finished cases are kept in {}; continue with --resume",
            out.join(RESULTS_FILE).display()
        );
        return Ok(EXIT_INTERRUPTED);
    }
    let failed = merged.cases.iter().any(|c| c.status.needs_rerun())
        || merged.cases.len() < plan.case_count()
        || links.failed > 0;
    Ok(if failed { EXIT_CASES_FAILED } else { EXIT_OK })
}

/// `--dry-run`: what would run, as the commands that would run it.
fn print_dry_run(req: &SweepRequest, spec: &SweepSpec, plan: &SweepPlan, out: &Path) {
    println!(
        "# dry run: {} in {}; results would go to {}",
        crate::units::count(plan.case_count(), "case", "cases"),
        crate::units::count(plan.launches.len(), "launch", "launches"),
        out.display()
    );
    if let Some(step) = &spec.links {
        for setup in &plan.links {
            let dir = links_step::step_dir(out, setup);
            match &setup.skipped {
                Some(why) => println!("# links {}: not run ({why})", setup.id),
                None => println!(
                    "{}",
                    super::shell::quote_all(&links_command(req, spec, step, setup, &dir))
                ),
            }
        }
    }
    for (i, l) in plan.launches.iter().enumerate() {
        let dir = out
            .join(rundir::LAUNCHES_DIR)
            .join(format!("{:03}-{}", i + 1, l.launch_id));
        // Quoted as a shell would need them, so a printed command can be pasted and
        // never runs what a spec value holds (`$(...)`, `;`).
        println!(
            "{}",
            super::shell::quote_all(&launch_command(req, spec, l, &dir.join(PLAN_FILE), &dir))
        );
    }
}

/// The output directory suits the request: a sweep there exactly when resuming, and a
/// directory (or nothing yet).
fn check_out(req: &SweepRequest, out: &Path) -> Result<()> {
    let has_sweep = out.join(PLAN_FILE).exists();
    if req.resume && !has_sweep {
        return Err(LaunchError::NothingToResume {
            out: out.to_path_buf(),
        });
    }
    if !req.resume && has_sweep {
        return Err(LaunchError::SweepExists {
            out: out.to_path_buf(),
        });
    }
    Ok(())
}

/// The line that opens a sweep: its size, what is left of it when resuming, where results go.
fn announce(req: &SweepRequest, spec: &SweepSpec, plan: &SweepPlan, total: usize, out: &Path) {
    let kept = plan.case_count() - total;
    eprintln!(
        "# sweep {}: {} in {}{}; results: {}",
        spec.name,
        crate::units::count(plan.case_count(), "case", "cases"),
        crate::units::count(plan.launches.len(), "launch", "launches"),
        if req.resume {
            format!(", {kept} already done, {total} to run")
        } else {
            String::new()
        },
        out.join(RESULTS_FILE).display()
    );
    // What `plan` warned about, said again where the sweep starts.
    if let Some(w) = crate::plan::forecast::skip_warning(plan) {
        eprintln!("{w}");
    }
}

/// The sweep's progress: cases done in earlier launches, and the live line.
struct Progress {
    line: std::cell::RefCell<ProgressLine>,
    total: usize,
    done_before: usize,
}

impl Progress {
    /// Shows `done_now` cases of launch `index` (of `launches`) done: one launch runs at a
    /// time, the rest are queued; the ETA is from the wall time a case has taken so far.
    fn show(&self, done_now: usize, index: usize, launches: usize) {
        let done = self.done_before + done_now;
        let mut line = self.line.borrow_mut();
        let case_s = (done > 0).then(|| line.elapsed_s() / done as f64);
        let c = Counts {
            cases_done: done,
            cases_total: self.total,
            running: 1,
            queued: launches - index,
        };
        line.show(&c, case_s);
    }
}

/// What every launch of one sweep shares.
struct Sweep<'a> {
    req: &'a SweepRequest,
    spec: &'a SweepSpec,
    out: &'a Path,
    record: &'a SweepRecord,
    timeout: Duration,
}

struct LaunchDone {
    /// Cases the launch journaled.
    cases: usize,
    interrupted: bool,
}

/// How the links steps went.
struct LinksDone {
    /// Steps that ended without a links.json (crashed, timed out): the sweep exits 3 and a
    /// `--resume` runs them again.
    failed: usize,
    interrupted: bool,
}

impl Sweep<'_> {
    /// Runs each set-up's links step (`[links]`) that has not finished, before the launches:
    /// the fabric is measured before the studies that run over it. A step that names a suspect
    /// (exit 1) has finished: its findings are in its links.json and the report.
    fn run_links_steps(&self, plan: &SweepPlan) -> Result<LinksDone> {
        let mut done = LinksDone {
            failed: 0,
            interrupted: false,
        };
        let Some(step) = &self.spec.links else {
            return Ok(done);
        };
        let timeout = Duration::from_secs_f64(step.timeout_s);
        for setup in plan.links.iter().filter(|s| s.skipped.is_none()) {
            let dir = links_step::step_dir(self.out, setup);
            if links_step::finished(&dir, step) {
                if !self.req.quiet {
                    eprintln!(
                        "# links {} ({}): finished before, kept ({})",
                        setup.id,
                        setup.label(),
                        dir.join(crate::results::links::LINKS_FILE).display()
                    );
                }
                continue;
            }
            std::fs::create_dir_all(&dir).map_err(|source| LaunchError::Io {
                path: dir.clone(),
                source,
            })?;
            // A file from other settings (or a broken one) must not pass for this step's.
            let _ = std::fs::remove_file(dir.join(crate::results::links::LINKS_FILE));
            let argv = links_command(self.req, self.spec, step, setup, &dir);
            let started = now_unix_s();
            let t0 = Instant::now();
            let marker = dir.display().to_string();
            let mut child = self.spawn(&argv, &dir, &marker)?;
            let (pgid, launcher_pid) = child.ids();
            let live = LiveLaunch {
                driver_pid: std::process::id(),
                pgid,
                launcher_pid,
                marker,
                started_unix_s: started,
                heartbeat_unix_s: started,
            };
            let live_path = dir.join(LIVE_FILE);
            rundir::write_json(&live_path, &live)?;
            let id = format!("{}/{}", links_step::LINKS_DIR, setup.id);
            let waited = self.wait(&mut child, &id, t0, timeout, || {});
            let _ = std::fs::remove_file(&live_path);
            let (status, exit_code, interrupted) = waited?;
            if interrupted {
                done.interrupted = true;
                return Ok(done);
            }
            // Exit 1 names suspects: the step ran. Anything else without a file failed.
            let wrote = links_step::finished(&dir, step);
            let status = match (status, exit_code, wrote) {
                (LaunchStatus::Timeout, _, _) => LaunchStatus::Timeout,
                (_, Some(0) | Some(1), true) => LaunchStatus::Ok,
                _ => LaunchStatus::Failed,
            };
            let stderr_tail = rundir::stderr_digest(&dir.join("stderr.log"), 12);
            let outcome = LaunchOutcome {
                launch_id: id,
                status,
                exit_code,
                started_unix_s: started,
                finished_unix_s: now_unix_s(),
                command_line: argv,
                launcher: "mpirun".into(),
                stderr_tail: (!stderr_tail.is_empty()).then_some(stderr_tail),
                job_id: None,
                timeout_s: Some(step.timeout_s),
            };
            rundir::write_json(&dir.join(OUTCOME_FILE), &outcome)?;
            if status != LaunchStatus::Ok {
                done.failed += 1;
            }
            if !self.req.quiet {
                let how = match (status, exit_code) {
                    (LaunchStatus::Ok, Some(1)) => "a suspect named (see its links.json)".into(),
                    (LaunchStatus::Ok, _) => "healthy".into(),
                    _ => format!(
                        "{}; the stderr is in {}",
                        self.ended(status, exit_code, timeout),
                        dir.join("stderr.log").display()
                    ),
                };
                eprintln!("# links {} ({}): {how}", setup.id, setup.label());
            }
        }
        Ok(done)
    }

    /// Runs the launches with cases left in `todo`, in plan order, merging the results after
    /// each; stops at an interrupt. Returns whether it was interrupted.
    fn run_launches(
        &self,
        plan: &SweepPlan,
        todo: &BTreeMap<String, Vec<CaseParams>>,
        total: usize,
    ) -> Result<bool> {
        let mut progress = Progress {
            line: std::cell::RefCell::new(ProgressLine::new(self.req.quiet)),
            total,
            done_before: 0,
        };
        let mut interrupted = false;
        let runnable: Vec<&LaunchPlan> = plan
            .launches
            .iter()
            .filter(|l| todo.contains_key(&l.launch_id))
            .collect();
        for (i, l) in runnable.iter().enumerate() {
            let mut attempt = (*l).clone();
            attempt.cases = todo[&l.launch_id].clone();
            let done = self.run_launch(&attempt, &progress, i + 1, runnable.len())?;
            progress.done_before += done.cases;
            write_results(
                &self.out.join(RESULTS_FILE),
                &rundir::merge(self.out, self.record),
            )?;
            if done.interrupted {
                interrupted = true;
                break;
            }
        }
        progress.line.borrow_mut().finish();
        Ok(interrupted)
    }

    /// Runs one launch (`index` of `launches`) in a new attempt directory: its plan file,
    /// `mpirun` under the launch timeout, its outcome file.
    fn run_launch(
        &self,
        plan: &LaunchPlan,
        progress: &Progress,
        index: usize,
        launches: usize,
    ) -> Result<LaunchDone> {
        let dir = rundir::new_attempt_dir(self.out, &plan.launch_id)?;
        let plan_file = dir.join(PLAN_FILE);
        rundir::write_json(&plan_file, plan)?;
        let argv = launch_command(self.req, self.spec, plan, &plan_file, &dir);
        let label = plan.shape.label();
        let started = now_unix_s();
        let t0 = Instant::now();
        let mut child = self.spawn(&argv, &dir, &plan_file.display().to_string())?;
        let (pgid, launcher_pid) = child.ids();
        let mut live = LiveLaunch {
            driver_pid: std::process::id(),
            pgid,
            launcher_pid,
            marker: plan_file.display().to_string(),
            started_unix_s: started,
            heartbeat_unix_s: started,
        };
        let live_path = dir.join(LIVE_FILE);
        rundir::write_json(&live_path, &live)?;
        let journal = dir.join(JOURNAL_FILE);
        let mut beat = Instant::now();
        let show = || {
            progress.show(journal_cases(&journal), index, launches);
            if beat.elapsed() >= Duration::from_secs(1) {
                beat = Instant::now();
                live.heartbeat_unix_s = now_unix_s();
                let _ = rundir::write_json(&live_path, &live);
            }
        };
        let waited = self.wait(&mut child, &plan.launch_id, t0, self.timeout, show);
        // Ended (or stopped) by us: nothing is left to end on a resume.
        let _ = std::fs::remove_file(&live_path);
        let (status, exit_code, interrupted) = waited?;
        let finished = now_unix_s();
        let stderr_tail = rundir::stderr_digest(&dir.join("stderr.log"), 12);
        let outcome = LaunchOutcome {
            launch_id: plan.launch_id.clone(),
            status,
            exit_code,
            started_unix_s: started,
            finished_unix_s: finished,
            command_line: argv,
            launcher: "mpirun".into(),
            stderr_tail: (!stderr_tail.is_empty()).then_some(stderr_tail),
            job_id: None,
            timeout_s: Some(self.timeout.as_secs_f64()),
        };
        // An interrupted launch leaves no outcome: its unfinished cases stay missing for --resume.
        if !interrupted {
            rundir::write_json(&dir.join(OUTCOME_FILE), &outcome)?;
        }
        let cases = journal_cases(&journal);
        progress.show(cases, index, launches);
        if !self.req.quiet && status != LaunchStatus::Ok {
            progress.line.borrow_mut().finish();
            eprintln!(
                "# launch {index}/{launches} ({label}) {}: {}",
                self.ended(status, exit_code, self.timeout),
                dir.display()
            );
        }
        Ok(LaunchDone { cases, interrupted })
    }

    /// Waits for the launch's process to end, to be interrupted (its process group is then
    /// stopped) or to time out, showing progress meanwhile; returns its status, exit code and
    /// whether it was interrupted.
    fn wait(
        &self,
        child: &mut Spawned,
        launch_id: &str,
        t0: Instant,
        timeout: Duration,
        mut show: impl FnMut(),
    ) -> Result<(LaunchStatus, Option<i32>, bool)> {
        loop {
            match child.try_wait() {
                Ok(Some(s)) => {
                    // Exit 3 (wrong results) is a launch that ran: its cases say what went wrong.
                    let status = if matches!(s.code(), Some(0) | Some(3)) {
                        LaunchStatus::Ok
                    } else {
                        LaunchStatus::Failed
                    };
                    return Ok((status, s.code(), false));
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(LaunchError::Wait {
                        launch_id: launch_id.to_string(),
                        source: e,
                    })
                }
            }
            if process::interrupted() {
                let s = child.terminate(Duration::from_secs(3));
                return Ok((LaunchStatus::Incomplete, s.and_then(|s| s.code()), true));
            }
            if t0.elapsed() > timeout {
                let s = child.terminate(Duration::from_secs(3));
                return Ok((LaunchStatus::Timeout, s.and_then(|s| s.code()), false));
            }
            show();
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Starts the launch's command with its output in `dir` and the spec's environment.
    fn spawn(&self, argv: &[String], dir: &Path, marker: &str) -> Result<Spawned> {
        let io = |name: &str| {
            File::create(dir.join(name)).map_err(|source| LaunchError::Io {
                path: dir.join(name),
                source,
            })
        };
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdout(io("stdout.log")?)
            .stderr(io("stderr.log")?)
            .stdin(std::process::Stdio::null());
        // the launches share one host measurement of the ceilings (the host cache), unless the
        // user points them elsewhere
        if std::env::var_os(CACHE_DIR_VAR).is_none() {
            cmd.env(CACHE_DIR_VAR, self.out.join(CEILINGS_DIR));
        }
        // the launches keep one entry for the sweep; a launch that measures it spends at most
        // a fifth of its wall-time limit on it
        cmd.env(
            crate::topology::ceilings::cache::SWEEP_VAR,
            format!("{:.3}", 0.2 * self.timeout.as_secs_f64()),
        );
        cmd.envs(&self.spec.launch.env);
        process::spawn(cmd, marker).map_err(|source| LaunchError::Spawn {
            program: argv[0].clone(),
            source,
        })
    }

    /// How a launch that is not ok ended.
    fn ended(&self, status: LaunchStatus, exit_code: Option<i32>, timeout: Duration) -> String {
        match status {
            LaunchStatus::Timeout => {
                format!("timed out after {:.0} s", timeout.as_secs_f64())
            }
            LaunchStatus::Incomplete => "interrupted".to_string(),
            _ => format!(
                "failed (exit {})",
                exit_code.map_or("by signal".to_string(), |c| c.to_string())
            ),
        }
    }
}

/// Per-launch summary, then every case in the nccl-tests-like table.
pub fn print_summary(r: &ResultsFile) {
    let mut so = std::io::stdout().lock();
    let _ = writeln!(
        so,
        "# {:<44} {:>5} {:>6} {:>5} {:>6} {:>6} {:>7} {:>7} {:>8} {:>11}",
        "launch",
        "ranks",
        "cases",
        "ok",
        "wrong",
        "failed",
        "skipped",
        "timeout",
        "wall (s)",
        "overhead (s)"
    );
    for l in &r.launches {
        let mine: Vec<_> = r
            .cases
            .iter()
            .filter(|c| c.launch_id == l.launch_id.split('@').next().unwrap_or(""))
            .collect();
        let n = |s: CaseStatus| mine.iter().filter(|c| c.status == s).count();
        let _ = writeln!(
            so,
            "  {:<44} {:>5} {:>6} {:>5} {:>6} {:>6} {:>7} {:>7} {:>8} {:>11}",
            format!("{} [{:?}]", l.shape.label(), l.status).to_lowercase(),
            l.shape.ranks(),
            mine.len(),
            n(CaseStatus::Ok),
            n(CaseStatus::Wrong),
            n(CaseStatus::Failed),
            n(CaseStatus::Skipped),
            n(CaseStatus::Timeout),
            l.wall_s.map_or("-".into(), |w| format!("{w:.2}")),
            l.overhead_s.map_or("-".into(), |w| format!("{w:.2}"))
        );
    }
    let mut table = TablePrinter::new();
    for c in &r.cases {
        for line in table.push(c) {
            let _ = writeln!(so, "{line}");
        }
    }
    for line in table.flush() {
        let _ = writeln!(so, "{line}");
    }
    let _ = writeln!(so, "{}", summary_line(&r.cases));
}
