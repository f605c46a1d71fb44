//! `scalebench submit`, `status`, `collect` and the job-side `finish-launch`.
//!
//! A submitted run has the same directory layout as a local sweep (see [`super::rundir`]),
//! plus `jobs/` (the generated scripts) and `jobs.json` (every submission's job ids). Jobs run
//! `scalebench run --plan` and then `scalebench finish-launch`, which records how the launch
//! ended; a last job (`--dependency=afterany` on all others) runs `scalebench collect`, which
//! merges everything into `results.json` and records which jobs failed or never ran.
//! Submitting into an existing run submits only the cases that are missing or failed.

use super::profile::{self, GpuRequest, Profile, Scheduler};
use super::rundir::{self, LaunchOutcome, SweepRecord, OUTCOME_FILE, PLAN_FILE};
use super::scripts::{self, Context, JobPlan};
use crate::config;
use crate::error::{Error, Result, EXIT_CASES_FAILED, EXIT_OK, EXIT_RUNTIME};
use crate::params::CaseParams;
use crate::plan::{sweep, LaunchPlan};
use crate::results::io::{write_results, JOURNAL_FILE, RESULTS_FILE};
use crate::results::now_unix_s;
use crate::results::schema::{CaseStatus, LaunchStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const JOBS_FILE: &str = "jobs.json";
pub const COLLECT_FILE: &str = "collect.json";

/// What `scalebench submit` was asked to do.
#[derive(Debug, Clone)]
pub struct SubmitRequest {
    pub spec: PathBuf,
    pub scheduler: Option<Scheduler>,
    pub profile: Option<String>,
    pub out: Option<PathBuf>,
    pub dry_run: bool,
    pub account: Option<String>,
    pub partition: Option<String>,
    pub quiet: bool,
}

/// Every submission of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobsFile {
    pub scheduler: Option<Scheduler>,
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
    /// Attempt directories (relative to the run), one per array task.
    pub attempts: Vec<String>,
}

/// A profile for a scheduler when none is named: this machine's cores, GPUs by the spec.
fn generic(scheduler: Scheduler) -> Profile {
    Profile {
        name: format!("generic-{scheduler:?}").to_lowercase(),
        description: None,
        scheduler,
        partition: None,
        account: None,
        gpus_per_node: 8,
        cores_per_node: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        gpu_request: GpuRequest::GpusPerNode,
        gpu_type: None,
        cpus_per_gpu: None,
        mem_per_gpu: None,
        mem_per_cpu: None,
        mem_per_node: None,
        reserved_cores: None,
        modules: Vec::new(),
        container: Vec::new(),
        env: BTreeMap::new(),
        launcher: Vec::new(),
        cpu_bind_none: true,
        time_limit_min: None,
        scalebench: None,
        pe: None,
        directives: Vec::new(),
    }
}

/// The profile a submission uses: named (or the spec's `[submit] profile`), with the spec's
/// `[submit]` fields and the command line's overrides applied.
fn resolve_profile(req: &SubmitRequest, spec: &config::SweepSpec) -> Result<Profile> {
    let table: toml::Table = spec
        .submit
        .as_ref()
        .map(|t| {
            t.get_ref()
                .iter()
                .map(|(k, v)| (k.get_ref().clone(), v.get_ref().clone()))
                .collect()
        })
        .unwrap_or_default();
    let at = |msg: String| match &spec.submit {
        Some(t) => spec.error_at_offset(t.span().start, "submit", msg),
        None => spec.error_at_offset(0, "submit", msg),
    };
    let named = req.profile.clone().or_else(|| {
        table
            .get("profile")
            .and_then(|v| v.as_str())
            .map(str::to_string)
    });
    let mut p = match (&named, req.scheduler) {
        (Some(n), _) => profile::load(n).map_err(|e| Error::Input(e.to_string()))?,
        (None, Some(s)) => generic(s),
        (None, None) => {
            let names: Vec<&str> = profile::BUILT_IN.iter().map(|(n, _)| *n).collect();
            return Err(Error::Input(format!(
                "submit needs a site: give --profile NAME|FILE (built-in: {}) or --scheduler slurm|uge|pbs",
                names.join(", ")
            )));
        }
    };
    if let Some(s) = req.scheduler {
        if s != p.scheduler {
            return Err(Error::Input(
                format!(
                    "--scheduler {s:?} does not match profile {} ({:?}): drop one of them",
                    p.name, p.scheduler
                )
                .to_lowercase(),
            ));
        }
    }
    p = p
        .apply(&table)
        .map_err(|e| Error::Input(at(e.to_string()).to_string()))?;
    let mut cli = toml::Table::new();
    if let Some(a) = &req.account {
        cli.insert("account".into(), toml::Value::String(a.clone()));
    }
    if let Some(a) = &req.partition {
        cli.insert("partition".into(), toml::Value::String(a.clone()));
    }
    p = p
        .apply(&cli)
        .map_err(|e| Error::Input(format!("--account/--partition: {e}")))?;
    for (k, v) in &spec.launch.env {
        p.env.entry(k.clone()).or_insert_with(|| v.clone());
    }
    if p.reserved_cores.is_none() && !spec.launch.reserved_cores.is_empty() {
        p.reserved_cores = Some(spec.launch.reserved_cores.clone());
    }
    Ok(p)
}

/// A scheduler tool (`sbatch`, `qsub`, `squeue`) that could not be run or failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The tool did not answer within its time limit (`timeout` exits with 124).
    #[error("{program} did not answer within {timeout_s} s: {stderr}")]
    TimedOut {
        program: String,
        timeout_s: u64,
        stderr: String,
    },
    /// The tool exited with `code` (or "a signal").
    #[error("{program} exited with {code}: {stderr}")]
    Failed {
        program: String,
        code: String,
        stderr: String,
    },
}

fn run_tool(
    program: &str,
    args: &[String],
    timeout_s: u64,
) -> std::result::Result<String, ToolError> {
    let out = Command::new("timeout")
        .arg(timeout_s.to_string())
        .arg(program)
        .args(args)
        .output()
        .map_err(|source| ToolError::Spawn {
            program: program.to_string(),
            source,
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let program = program.to_string();
        return Err(match out.status.code() {
            Some(124) => ToolError::TimedOut {
                program,
                timeout_s,
                stderr,
            },
            code => ToolError::Failed {
                program,
                code: code.map_or("a signal".into(), |c| c.to_string()),
                stderr,
            },
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Scheduler states of `ids` that are still queued or running (bounded; Slurm only).
fn active_jobs(ids: &[String]) -> std::result::Result<BTreeMap<String, String>, ToolError> {
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let text = run_tool(
        "squeue",
        &[
            "-h".into(),
            "-o".into(),
            "%i|%T".into(),
            "-j".into(),
            ids.join(","),
        ],
        15,
    )?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, s)| {
            matches!(
                *s,
                "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED" | "REQUEUED"
            )
        })
        .map(|(i, s)| (i.trim().to_string(), s.trim().to_string()))
        .collect())
}

fn all_job_ids(jobs: &JobsFile) -> Vec<String> {
    jobs.submissions
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

/// Runs `scalebench submit`.
pub fn submit(req: &SubmitRequest, argv: &[String]) -> Result<u8> {
    let t0 = Instant::now();
    let spec = config::load(&req.spec).map_err(|e| Error::Input(e.to_string()))?;
    let plan = sweep::expand(&spec).map_err(|e| Error::Input(e.to_string()))?;
    let profile = resolve_profile(req, &spec)?;
    for l in &plan.launches {
        scripts::check_fit(&profile, &l.shape)
            .map_err(|e| Error::Input(format!("{}: {e}", req.spec.display())))?;
    }
    let out = run_dir(req, &spec)?;
    let resubmit = out.join(PLAN_FILE).exists();
    let mut jobs = if resubmit {
        rundir::read_json::<JobsFile>(&out.join(JOBS_FILE)).unwrap_or_default()
    } else {
        JobsFile::default()
    };
    if resubmit && !req.dry_run && profile.scheduler == Scheduler::Slurm {
        refuse_active(&out, &jobs)?;
    }
    if resubmit {
        rundir::check_same_plan(&out, &plan.launches, "--out")?;
    }
    let record = SweepRecord::new(&out, resubmit, &spec, &req.spec, argv, &plan.launches);
    let (merged, warnings) = rundir::merge_with_warnings(&out, &record);
    if !req.quiet {
        for w in &warnings {
            eprintln!("warning: {w}");
        }
    }
    let todo = rundir::cases_to_run(&record, &merged);
    if todo.is_empty() {
        if !req.quiet {
            println!(
                "# {}: every case has a result; nothing to submit",
                out.display()
            );
        }
        return Ok(EXIT_OK);
    }
    let (attempts, mut groups) = plan_attempts(&plan.launches, &todo, &profile, &spec, &out);
    let scripts = job_scripts(&profile, &spec, &out, &jobs, &mut groups)?;
    if req.dry_run {
        print_dry_run(&scripts, attempts.len());
        return Ok(EXIT_OK);
    }
    write_run(&out, &spec, &record, &attempts, &scripts)?;
    let (records, collect_job) = submit_scripts(&profile, &out, &scripts)?;
    let overhead_s = t0.elapsed().as_secs_f64();
    if !req.quiet {
        let cases: usize = todo.values().map(Vec::len).sum();
        println!(
            "# submitted {} job(s) for {cases} case(s) of {} ({}){}; run: {}",
            records.len(),
            spec.name,
            records
                .iter()
                .map(|r| r.job_id.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            collect_job
                .as_ref()
                .map(|c| format!(", collect job {c} after them"))
                .unwrap_or_default(),
            out.display()
        );
        println!(
            "# submission took {overhead_s:.2} s; follow it with: scalebench status {}",
            out.display()
        );
    }
    jobs.scheduler = Some(profile.scheduler);
    jobs.submissions.push(Submission {
        submitted_unix_s: now_unix_s(),
        overhead_s,
        jobs: records,
        collect_job,
    });
    rundir::write_json(&out.join(JOBS_FILE), &jobs)?;
    Ok(EXIT_OK)
}

/// The run directory, absolute: `--out`, or `results/NAME-STAMP` here.
fn run_dir(req: &SubmitRequest, spec: &config::SweepSpec) -> Result<PathBuf> {
    let out = req.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!(
            "{}-{}",
            super::shell::job_name(&spec.name),
            crate::results::utc_stamp(now_unix_s())
        ))
    });
    let out = if out.is_absolute() {
        out
    } else {
        std::env::current_dir()
            .map_err(|e| Error::Runtime(e.to_string()))?
            .join(out)
    };
    rundir::refuse_file_as_out(&out, "--out")?;
    Ok(out)
}

/// Refuses to submit into a run whose jobs are still queued or running (Slurm).
fn refuse_active(out: &Path, jobs: &JobsFile) -> Result<()> {
    let active = active_jobs(&all_job_ids(jobs))
        .map_err(|e| Error::Environment(format!("cannot check this run's jobs: {e}")))?;
    if !active.is_empty() {
        let list: Vec<String> = active.iter().map(|(i, s)| format!("{i} {s}")).collect();
        return Err(Error::Input(format!(
                "{}: jobs of this run are still queued or running ({}): wait for them (scalebench status --wait) or scancel them, then submit again",
                out.display(),
                list.join(", ")
            )));
    }
    Ok(())
}

/// A launch's attempt: its directory and the plan it runs there.
type Attempt = (PathBuf, LaunchPlan);

/// One attempt directory per launch with work; attempts of one allocation (resources and
/// placement) share a job, as an array (the jobs' names are set when their scripts are made).
fn plan_attempts(
    launches: &[LaunchPlan],
    todo: &BTreeMap<String, Vec<CaseParams>>,
    profile: &Profile,
    spec: &config::SweepSpec,
    out: &Path,
) -> (Vec<Attempt>, Vec<JobPlan>) {
    let launch_timeout_s = spec.launch.timeout_s.ceil() as u64;
    let first_attempt = rundir::attempt_dirs(out).len() + 1;
    let mut attempts = Vec::new();
    let mut groups: Vec<JobPlan> = Vec::new();
    for (i, l) in launches
        .iter()
        .filter(|l| todo.contains_key(&l.launch_id))
        .enumerate()
    {
        let mut attempt = l.clone();
        attempt.cases = todo[&l.launch_id].clone();
        attempt.emulate_nodes = false;
        attempt.reserved_cores = profile.reserved_cores.clone().unwrap_or_default();
        let dir = rundir::attempt_path(out, first_attempt + i, &l.launch_id);
        let res = scripts::resources(profile, &l.shape);
        match groups.iter_mut().find(|g| {
            scripts::resources(profile, &g.shape) == res && g.shape.placement == l.shape.placement
        }) {
            Some(g) => g.attempts.push(dir.clone()),
            None => groups.push(JobPlan {
                name: String::new(),
                shape: l.shape,
                attempts: vec![dir.clone()],
                launch_timeout_s,
            }),
        }
        attempts.push((dir, attempt));
    }
    (attempts, groups)
}

/// The scripts of one submission: per job its path, text and attempt directories; and the
/// collect job's path and text (Slurm).
struct Scripts {
    jobs: Vec<(PathBuf, String, Vec<PathBuf>)>,
    collect: Option<(PathBuf, String)>,
}

/// Names the jobs and writes their scripts' text (nothing on disk yet).
fn job_scripts(
    profile: &Profile,
    spec: &config::SweepSpec,
    out: &Path,
    jobs: &JobsFile,
    groups: &mut [JobPlan],
) -> Result<Scripts> {
    let scalebench = profile.scalebench.clone().unwrap_or_else(|| {
        std::env::current_exe().map_or("scalebench".into(), |p| p.display().to_string())
    });
    let ctx = Context {
        profile,
        run_dir: out,
        scalebench: &scalebench,
        sweep_name: &spec.name,
    };
    let jobs_dir = out.join("jobs");
    let n0 = jobs.submissions.iter().map(|s| s.jobs.len()).sum::<usize>();
    let mut scripts_text = Vec::new();
    for (i, g) in groups.iter_mut().enumerate() {
        g.name = format!("{}-{:03}", spec.name, n0 + i + 1);
        let text = scripts::script(&ctx, g).map_err(|e| Error::Input(e.to_string()))?;
        scripts_text.push((
            jobs_dir.join(format!("job-{:03}.sh", n0 + i + 1)),
            text,
            g.attempts.clone(),
        ));
    }
    let collect = match profile.scheduler {
        Scheduler::Slurm => Some((
            jobs_dir.join(format!("collect-{}.sh", jobs.submissions.len() + 1)),
            scripts::slurm_collect(&ctx).map_err(|e| Error::Input(e.to_string()))?,
        )),
        _ => None,
    };
    Ok(Scripts {
        jobs: scripts_text,
        collect,
    })
}

fn print_dry_run(scripts: &Scripts, attempts: usize) {
    for (path, text) in scripts
        .jobs
        .iter()
        .map(|(p, t, _)| (p, t))
        .chain(scripts.collect.iter().map(|(p, t)| (p, t)))
    {
        println!("### {}", path.display());
        print!("{text}");
    }
    println!(
        "# dry run: {} job script(s) for {} launch(es); nothing written, nothing submitted",
        scripts.jobs.len(),
        attempts
    );
}

/// Writes the run directory: the spec, the sweep's plan, each attempt's plan and the scripts.
fn write_run(
    out: &Path,
    spec: &config::SweepSpec,
    record: &SweepRecord,
    attempts: &[Attempt],
    scripts: &Scripts,
) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| Error::Runtime(format!("{}: {e}", out.display())))?;
    crate::results::io::write_atomic(&out.join("spec.toml"), spec.text.as_bytes())?;
    rundir::write_json(&out.join(PLAN_FILE), record)?;
    for (dir, attempt) in attempts {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Runtime(format!("{}: {e}", dir.display())))?;
        rundir::write_json(&dir.join(PLAN_FILE), attempt)?;
    }
    for (path, text, _) in &scripts.jobs {
        crate::results::io::write_atomic(path, text.as_bytes())?;
    }
    if let Some((path, text)) = &scripts.collect {
        crate::results::io::write_atomic(path, text.as_bytes())?;
    }
    Ok(())
}

/// Submits every job script, then the collect job after them all; returns the jobs' records
/// and the collect job's id.
fn submit_scripts(
    profile: &Profile,
    out: &Path,
    scripts: &Scripts,
) -> Result<(Vec<JobRecord>, Option<String>)> {
    let collect = scripts.collect.as_ref().map(|(p, _)| p);
    let rel = |d: &Path| d.strip_prefix(out).unwrap_or(d).display().to_string();
    let mut records = Vec::new();
    for (script, _, attempts) in &scripts.jobs {
        let id = match profile.scheduler {
            Scheduler::Slurm => run_tool(
                "sbatch",
                &["--parsable".into(), script.display().to_string()],
                60,
            ),
            Scheduler::Uge | Scheduler::Pbs => {
                run_tool("qsub", &[script.display().to_string()], 60)
            }
        }
        .map_err(|e| Error::Environment(format!("submitting {}: {e}", script.display())))?;
        let id = id.trim().split(';').next().unwrap_or("").to_string();
        for a in attempts {
            std::fs::write(a.join("job_id"), &id)
                .map_err(|e| Error::Runtime(format!("{}: {e}", a.display())))?;
        }
        records.push(JobRecord {
            job_id: id,
            script: script.clone(),
            attempts: attempts.iter().map(|a| rel(a)).collect(),
        });
    }
    let collect_job = match collect {
        Some(c) => {
            let dep = format!(
                "--dependency=afterany:{}",
                records
                    .iter()
                    .map(|r| r.job_id.as_str())
                    .collect::<Vec<_>>()
                    .join(":")
            );
            Some(
                run_tool(
                    "sbatch",
                    &["--parsable".into(), dep, c.display().to_string()],
                    60,
                )
                .map_err(|e| Error::Environment(format!("submitting {}: {e}", c.display())))?
                .trim()
                .split(';')
                .next()
                .unwrap_or("")
                .to_string(),
            )
        }
        None => None,
    };
    Ok((records, collect_job))
}

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
    let tail = rundir::stderr_digest(&dir.join("stderr.log"), 12);
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

/// One attempt's state for `status` and `collect`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptState {
    pub attempt: String,
    pub job_id: Option<String>,
    /// `ok`, `failed`, `timeout`, a scheduler state (`PENDING`, `RUNNING`), or `never_ran`
    /// (the job ended without the launch recording its end: never started, or was killed).
    pub state: String,
    pub cases_done: usize,
    pub cases_planned: usize,
}

fn attempt_states(dir: &Path, active: &BTreeMap<String, String>) -> Vec<AttemptState> {
    rundir::attempt_dirs(dir)
        .into_iter()
        .map(|d| {
            let job_id = std::fs::read_to_string(d.join("job_id"))
                .ok()
                .map(|s| s.trim().to_string());
            let outcome = rundir::read_json::<LaunchOutcome>(&d.join(OUTCOME_FILE)).ok();
            let planned = rundir::read_json::<crate::plan::LaunchPlan>(&d.join(PLAN_FILE))
                .map(|p| p.cases.len())
                .unwrap_or(0);
            let done = std::fs::read_to_string(d.join(JOURNAL_FILE))
                .map(|t| {
                    t.lines()
                        .filter(|l| l.starts_with("{\"type\":\"case\""))
                        .count()
                })
                .unwrap_or(0);
            let base = job_id
                .as_deref()
                .map(|j| j.split('_').next().unwrap_or(j).to_string());
            let state = match (&outcome, base.as_ref().and_then(|j| active.get(j))) {
                (Some(o), _) => format!("{:?}", o.status).to_lowercase(),
                (None, Some(s)) => s.clone(),
                (None, None) => "never_ran".to_string(),
            };
            AttemptState {
                attempt: d
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                job_id,
                state,
                cases_done: done,
                cases_planned: planned,
            }
        })
        .collect()
}

/// `scalebench status`: the state of every job of a run, polled within bounds.
pub fn status(dir: &Path, wait: bool, timeout_s: f64, quiet: bool) -> Result<u8> {
    // NaN would never compare greater: `--wait` would poll forever.
    crate::config::limits::check_seconds("--timeout", timeout_s, "3600")
        .map_err(|e| Error::Input(e.to_string()))?;
    let jobs: JobsFile = rundir::read_json(&dir.join(JOBS_FILE))
        .map_err(|e| Error::Input(format!("{e} (is {} a submitted run?)", dir.display())))?;
    let ids = all_job_ids(&jobs);
    let t0 = Instant::now();
    let mut active = active_jobs(&ids).map_err(|e| Error::Environment(e.to_string()))?;
    while wait && !active.is_empty() {
        if t0.elapsed().as_secs_f64() > timeout_s {
            if !quiet {
                print_states(dir, &active);
            }
            eprintln!(
                "scalebench: status: {} job(s) still queued or running after {timeout_s:.0} s",
                active.len()
            );
            return Ok(EXIT_RUNTIME);
        }
        std::thread::sleep(Duration::from_millis(500));
        active = active_jobs(&ids).map_err(|e| Error::Environment(e.to_string()))?;
    }
    let states = attempt_states(dir, &active);
    if !quiet {
        print_states(dir, &active);
    }
    let bad = states
        .iter()
        .any(|s| matches!(s.state.as_str(), "failed" | "timeout" | "never_ran"));
    Ok(if bad { EXIT_CASES_FAILED } else { EXIT_OK })
}

fn print_states(dir: &Path, active: &BTreeMap<String, String>) {
    println!(
        "# {:<28} {:>10} {:>10} {:>13}",
        "attempt", "job", "state", "cases done"
    );
    for s in attempt_states(dir, active) {
        println!(
            "  {:<28} {:>10} {:>10} {:>6}/{:<6}",
            s.attempt,
            s.job_id.unwrap_or_default(),
            s.state,
            s.cases_done,
            s.cases_planned
        );
    }
    let collect_done = dir.join(COLLECT_FILE).exists();
    println!(
        "# results merged: {}",
        if collect_done {
            dir.join(RESULTS_FILE).display().to_string()
        } else {
            "not yet (scalebench collect DIR merges by hand)".into()
        }
    );
}

/// What `collect` records besides results.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CollectRecord {
    pub collected_unix_s: f64,
    /// The job that ran the collection, if any (the dependent collect job).
    pub collect_job: Option<String>,
    pub attempts: Vec<AttemptState>,
    /// Planned cases without a result.
    pub missing_cases: usize,
}

/// `scalebench collect`: merge a run's results, and record which jobs failed or never ran.
pub fn collect(dir: &Path, from_job: Option<String>, quiet: bool) -> Result<u8> {
    let record: SweepRecord = rundir::read_json(&dir.join(PLAN_FILE))
        .map_err(|e| Error::Input(format!("{e} (is {} a run directory?)", dir.display())))?;
    let merged = rundir::merge(dir, &record);
    write_results(&dir.join(RESULTS_FILE), &merged)?;
    let planned = record.launches.iter().map(|l| l.cases.len()).sum::<usize>();
    let rec = CollectRecord {
        collected_unix_s: now_unix_s(),
        collect_job: from_job.filter(|j| !j.is_empty()),
        attempts: attempt_states(dir, &BTreeMap::new()),
        missing_cases: planned.saturating_sub(merged.cases.len()),
    };
    rundir::write_json(&dir.join(COLLECT_FILE), &rec)?;
    if !quiet {
        super::local::print_summary(&merged);
        for a in rec.attempts.iter().filter(|a| a.state != "ok") {
            println!(
                "# attempt {} (job {}): {}",
                a.attempt,
                a.job_id.clone().unwrap_or_default(),
                a.state
            );
        }
        if rec.missing_cases > 0 {
            println!("# {} planned case(s) have no result: submit the spec again into this run to run them", rec.missing_cases);
        }
    }
    let failed = merged
        .cases
        .iter()
        .any(|c| c.status.needs_rerun() || c.status == CaseStatus::Timeout)
        || rec.missing_cases > 0;
    Ok(if failed { EXIT_CASES_FAILED } else { EXIT_OK })
}
