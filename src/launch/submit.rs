//! `scalebench submit`, `status`, `collect` and the job-side `finish-launch`.
//!
//! A submitted run has the same directory layout as a local sweep (see [`super::rundir`]),
//! plus `jobs/` (the generated scripts) and `jobs.json` (every submission's job ids). Jobs run
//! `scalebench run --plan` and then `scalebench finish-launch`, which records how the launch
//! ended; a last job (`--dependency=afterany` on all others) runs `scalebench collect`, which
//! merges everything into `results.json` and records which jobs failed or never ran.
//! Submitting into an existing run submits only the cases that are missing or failed.

use super::jobs::{phase, Phase, SchedulerView};
use super::profile::{self, GpuRequest, Profile, Scheduler};
use super::progress::{Counts, ProgressLine};
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

pub use super::jobs::{AttemptState, JobRecord, JobsFile, Submission, JOBS_FILE};
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

pub(crate) fn run_tool(
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
    if resubmit && !req.dry_run {
        refuse_active(&out, &jobs, profile.scheduler)?;
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
    // All or nothing: a submission that fails cancels what it submitted and removes what it
    // wrote, so a retry finds the run as it was (no phantom attempts).
    let written = write_run(&out, &spec, &record, &attempts, &scripts)?;
    let (records, collect_job) = match submit_scripts(&profile, &out, &scripts) {
        Ok(x) => x,
        Err(e) => {
            written.undo();
            return Err(e);
        }
    };
    let overhead_s = t0.elapsed().as_secs_f64();
    jobs.scheduler = Some(profile.scheduler);
    jobs.profile = Some(req.profile.clone().unwrap_or(profile.name.clone()));
    jobs.submissions.push(Submission {
        submitted_unix_s: now_unix_s(),
        overhead_s,
        jobs: records,
        collect_job,
    });
    if let Err(e) = rundir::write_json(&out.join(JOBS_FILE), &jobs) {
        // Unrecorded jobs could be neither followed nor collected: cancel them all.
        let last = jobs.submissions.last().expect("just pushed");
        let ids = last
            .jobs
            .iter()
            .map(|r| r.job_id.clone())
            .chain(last.collect_job.clone())
            .collect::<Vec<_>>();
        cancel(&profile, &ids);
        written.undo();
        return Err(Error::Runtime(format!(
            "{e}: the run's jobs could not be recorded, so they were cancelled ({} {}) and {} is as it was before this submit",
            cancel_program(profile.scheduler),
            ids.join(" "),
            out.display()
        )));
    }
    let last = jobs.submissions.last().expect("just pushed");
    if !req.quiet {
        let cases: usize = todo.values().map(Vec::len).sum();
        println!(
            "# submitted {} job(s) for {cases} case(s) of {} ({}){}; run: {}",
            last.jobs.len(),
            spec.name,
            last.jobs
                .iter()
                .map(|r| r.job_id.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            last.collect_job
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

/// Refuses to submit into a run whose jobs are still queued or running.
fn refuse_active(out: &Path, jobs: &JobsFile, scheduler: Scheduler) -> Result<()> {
    let ids = jobs.job_ids();
    let sched = super::jobs::query(jobs.scheduler.unwrap_or(scheduler), &ids)
        .map_err(|e| Error::Environment(format!("cannot check this run's jobs: {e}")))?;
    let active: Vec<String> = sched
        .iter()
        .filter(|(_, s)| super::jobs::phase(s) != super::jobs::Phase::Ended)
        .map(|(i, s)| format!("{i} {s}"))
        .collect();
    if !active.is_empty() {
        return Err(Error::Input(format!(
                "{}: jobs of this run are still queued or running ({}): wait for them (scalebench status --wait) or cancel them ({}), then submit again",
                out.display(),
                active.join(", "),
                cancel_program(jobs.scheduler.unwrap_or(scheduler))
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
            Some(g) => {
                g.attempts.push(dir.clone());
                g.labels.push(l.shape.label());
            }
            None => groups.push(JobPlan {
                name: String::new(),
                shape: l.shape,
                attempts: vec![dir.clone()],
                labels: vec![l.shape.label()],
                launch_timeout_s,
            }),
        }
        attempts.push((dir, attempt));
    }
    (attempts, groups)
}

/// The scripts of one submission: per job its path, text and attempt directories; and the
/// collect job's path and text.
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
    let collect_text = match profile.scheduler {
        Scheduler::Slurm => scripts::slurm_collect(&ctx),
        Scheduler::Uge => scripts::uge_collect(&ctx),
        Scheduler::Pbs => scripts::pbs_collect(&ctx),
    }
    .map_err(|e| Error::Input(e.to_string()))?;
    let collect = Some((
        jobs_dir.join(format!("collect-{}.sh", jobs.submissions.len() + 1)),
        collect_text,
    ));
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

/// What one submission wrote, so a failed submission can take it back.
struct Written {
    out: PathBuf,
    /// The run directory did not exist before: remove it whole.
    created_out: bool,
    /// The run's files as they were (a resubmission), restored on undo; None: remove.
    before: Vec<(PathBuf, Option<Vec<u8>>)>,
    /// Attempt directories and scripts this submission added.
    added: Vec<PathBuf>,
}

impl Written {
    /// Puts the run directory back as it was before this submission (best effort: a failed
    /// removal leaves a file that a retry overwrites or ignores, never a phantom attempt
    /// with a plan, since attempt directories go first).
    fn undo(&self) {
        if self.created_out {
            let _ = std::fs::remove_dir_all(&self.out);
            return;
        }
        for p in &self.added {
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(p)
            } else {
                std::fs::remove_file(p)
            };
        }
        for (p, old) in &self.before {
            let _ = match old {
                Some(bytes) => crate::results::io::write_atomic(p, bytes).map_err(|_| ()),
                None => std::fs::remove_file(p).map_err(|_| ()),
            };
        }
    }
}

/// Writes the run directory: the spec, the sweep's plan, each attempt's plan and the scripts.
fn write_run(
    out: &Path,
    spec: &config::SweepSpec,
    record: &SweepRecord,
    attempts: &[Attempt],
    scripts: &Scripts,
) -> Result<Written> {
    let before = ["spec.toml", PLAN_FILE]
        .iter()
        .map(|f| (out.join(f), std::fs::read(out.join(f)).ok()))
        .collect();
    let mut w = Written {
        out: out.to_path_buf(),
        created_out: !out.exists(),
        before,
        added: Vec::new(),
    };
    let r = write_run_files(out, spec, record, attempts, scripts, &mut w.added);
    if r.is_err() {
        w.undo();
    }
    r.map(|()| w)
}

fn write_run_files(
    out: &Path,
    spec: &config::SweepSpec,
    record: &SweepRecord,
    attempts: &[Attempt],
    scripts: &Scripts,
    added: &mut Vec<PathBuf>,
) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| Error::Runtime(format!("{}: {e}", out.display())))?;
    crate::results::io::write_atomic(&out.join("spec.toml"), spec.text.as_bytes())?;
    rundir::write_json(&out.join(PLAN_FILE), record)?;
    for (dir, attempt) in attempts {
        added.push(dir.clone());
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Runtime(format!("{}: {e}", dir.display())))?;
        rundir::write_json(&dir.join(PLAN_FILE), attempt)?;
    }
    let collect = scripts.collect.iter().map(|(p, t)| (p, t));
    for (path, text) in scripts.jobs.iter().map(|(p, t, _)| (p, t)).chain(collect) {
        added.push(path.clone());
        crate::results::io::write_atomic(path, text.as_bytes())?;
    }
    Ok(())
}

/// Pure: what most likely made a submission fail, from the tool's error, as advice.
pub(crate) fn submit_hint(e: &ToolError, slurm_conf_set: bool) -> String {
    let text = match e {
        ToolError::Spawn { program, .. } => {
            return format!("{program} is not on PATH here: submit from a login node of the cluster (or install its client tools)");
        }
        ToolError::TimedOut { .. } => {
            return "the scheduler did not answer: is its controller up and reachable from here? (try `sinfo`)".into();
        }
        ToolError::Failed { stderr, .. } => stderr.to_lowercase(),
    };
    if text.contains("configuration source") || text.contains("slurm.conf") {
        return if slurm_conf_set {
            "Slurm cannot read its configuration: check that SLURM_CONF names a readable slurm.conf"
                .into()
        } else {
            "no Slurm configuration: export SLURM_CONF=/path/to/slurm.conf (the local cluster prints it: eval \"$(bash ci/slurm/start.sh 2)\")".into()
        };
    }
    if [
        "unable to contact",
        "connection refused",
        "socket timed out",
        "communication",
    ]
    .iter()
    .any(|k| text.contains(k))
    {
        return "the scheduler is unreachable: is its controller up? (try `sinfo`; the local cluster: bash ci/slurm/start.sh 2)".into();
    }
    if text.contains("account") || text.contains("association") {
        return "the account was rejected: give one you may charge with --account (Slurm: sacctmgr show assoc user=$USER)".into();
    }
    if text.contains("partition") || text.contains("qos") {
        return "the partition (or QOS) was rejected: give a valid --partition (sinfo -s lists them)".into();
    }
    if text.contains("node configuration") || text.contains("more processors") {
        return "the cluster has no nodes this large: check the profile's cores_per_node, gpus_per_node and memory".into();
    }
    "the scheduler's own message is above".into()
}

/// Cancels jobs of a submission that could not finish (best effort, bounded).
fn cancel(profile: &Profile, ids: &[String]) {
    if ids.is_empty() {
        return;
    }
    let _ = run_tool(cancel_program(profile.scheduler), ids, 30);
}

/// The scheduler's command that cancels jobs.
fn cancel_program(scheduler: Scheduler) -> &'static str {
    match scheduler {
        Scheduler::Slurm => "scancel",
        Scheduler::Uge | Scheduler::Pbs => "qdel",
    }
}

/// `sbatch`/`qsub` one script; its job id.
fn submit_one(
    profile: &Profile,
    script: &Path,
    extra: &[String],
) -> std::result::Result<String, ToolError> {
    // Machine-readable ids: Slurm `--parsable` prints `id[;cluster]`, UGE `-terse` prints `id`
    // (`id.1-4:1` for an array); PBS prints `id.server` (`id[].server`) anyway.
    let mut args: Vec<String> = match profile.scheduler {
        Scheduler::Slurm => vec!["--parsable".into()],
        Scheduler::Uge => vec!["-terse".into()],
        Scheduler::Pbs => Vec::new(),
    };
    args.extend(extra.iter().cloned());
    args.push(script.display().to_string());
    let program = match profile.scheduler {
        Scheduler::Slurm => "sbatch",
        Scheduler::Uge | Scheduler::Pbs => "qsub",
    };
    let id = run_tool(program, &args, 60)?;
    Ok(parse_job_id(profile.scheduler, &id))
}

/// Pure: the job id in a submit command's output (see [`submit_one`]'s flags).
fn parse_job_id(scheduler: Scheduler, out: &str) -> String {
    let first = out.trim().lines().next().unwrap_or("").trim();
    match scheduler {
        Scheduler::Slurm => first.split(';').next().unwrap_or(""),
        // `1234.1-4:1` → `1234` (task ids are built from it: `1234.2`)
        Scheduler::Uge => first.split('.').next().unwrap_or(""),
        Scheduler::Pbs => first,
    }
    .to_string()
}

/// The submit option that holds a job until every job of `ids` has ended, however it ended.
fn after_all(scheduler: Scheduler, ids: &[&str]) -> Vec<String> {
    match scheduler {
        Scheduler::Slurm => vec![format!("--dependency=afterany:{}", ids.join(":"))],
        Scheduler::Uge => vec!["-hold_jid".into(), ids.join(",")],
        Scheduler::Pbs => vec!["-W".into(), format!("depend=afterany:{}", ids.join(":"))],
    }
}

/// Submits every job script, then the collect job after them all; returns the jobs' records
/// and the collect job's id. If one submission fails, the jobs already submitted are
/// cancelled and the error names the likely cause.
fn submit_scripts(
    profile: &Profile,
    out: &Path,
    scripts: &Scripts,
) -> Result<(Vec<JobRecord>, Option<String>)> {
    let rel = |d: &Path| d.strip_prefix(out).unwrap_or(d).display().to_string();
    let mut records: Vec<JobRecord> = Vec::new();
    let fail = |records: &[JobRecord], script: &Path, e: ToolError| {
        cancel(
            profile,
            &records.iter().map(|r| r.job_id.clone()).collect::<Vec<_>>(),
        );
        let hint = submit_hint(&e, std::env::var_os("SLURM_CONF").is_some());
        Error::Environment(format!(
            "submitting {}: {e}\nhint: {hint}\nnothing was submitted and {} is as it was before this submit",
            script.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned()),
            out.display()
        ))
    };
    for (script, _, attempts) in &scripts.jobs {
        let id = submit_one(profile, script, &[]).map_err(|e| fail(&records, script, e))?;
        let sched = profile.scheduler;
        let record = JobRecord {
            job_id: id,
            script: script.clone(),
            attempts: attempts.iter().map(|a| rel(a)).collect(),
        };
        records.push(record);
        let record = records.last().expect("just pushed");
        for (i, a) in attempts.iter().enumerate() {
            if let Err(e) = std::fs::write(a.join("job_id"), record.task_id(sched, i)) {
                // Jobs nobody can find again must not run: cancel this one and those before.
                cancel(
                    profile,
                    &records.iter().map(|r| r.job_id.clone()).collect::<Vec<_>>(),
                );
                return Err(Error::Runtime(format!(
                    "{}: cannot record its job id: {e}; the jobs submitted so far were cancelled ({}) and {} is as it was before this submit",
                    a.join("job_id").display(),
                    cancel_program(sched),
                    out.display()
                )));
            }
        }
    }
    let collect_job = match &scripts.collect {
        Some((c, _)) => {
            let ids: Vec<&str> = records.iter().map(|r| r.job_id.as_str()).collect();
            let dep = after_all(profile.scheduler, &ids);
            Some(submit_one(profile, c, &dep).map_err(|e| fail(&records, c, e))?)
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

/// The run's jobs file, named in the error when it is not a submitted run.
fn read_jobs(dir: &Path) -> Result<JobsFile> {
    rundir::read_json(&dir.join(JOBS_FILE))
        .map_err(|e| Error::Input(format!("{e} (is {} a submitted run?)", dir.display())))
}

/// A snapshot of a submitted run: every attempt's state and the collect jobs' phases.
struct Snapshot {
    states: Vec<AttemptState>,
    /// A collect job is still queued or running.
    collect_active: bool,
}

impl Snapshot {
    fn take(dir: &Path, jobs: &JobsFile) -> Result<Snapshot> {
        let scheduler = jobs.scheduler.unwrap_or(Scheduler::Slurm);
        let sched = super::jobs::query(scheduler, &jobs.job_ids()).map_err(|e| {
            Error::Environment(match scheduler {
                Scheduler::Slurm => format!("{e} (is SLURM_CONF exported?)"),
                _ => format!("{e} (is qstat on PATH, on a host that may submit?)"),
            })
        })?;
        let states = super::jobs::attempt_states(dir, jobs, &SchedulerView::Asked(&sched));
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

    fn count(&self, state: &str) -> usize {
        self.states.iter().filter(|s| s.state == state).count()
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
    crate::config::limits::check_seconds("--timeout", timeout_s, "3600")
        .map_err(|e| Error::Input(e.to_string()))?;
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
                "scalebench: status: {} launch(es) still queued or running after {timeout_s:.0} s",
                snap.states.iter().filter(|s| s.active()).count()
            );
            return Ok(EXIT_RUNTIME);
        }
        line.show(&snap.progress(), case_rate_s(dir));
        std::thread::sleep(Duration::from_millis(1000));
        snap = Snapshot::take(dir, &jobs)?;
    }
    line.finish();
    if !quiet {
        print_states(dir, &jobs, &snap);
    }
    let bad = snap.states.iter().any(AttemptState::bad);
    Ok(if bad { EXIT_CASES_FAILED } else { EXIT_OK })
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
    println!(
        "# {:<28} {:>12} {:>10} {:>13}",
        "attempt", "job", "state", "cases done"
    );
    for s in &snap.states {
        let state = match (&s.scheduler_state, s.state.as_str()) {
            (Some(x), "lost") => format!("lost ({})", x.to_lowercase()),
            _ => s.state.clone(),
        };
        println!(
            "  {:<28} {:>12} {:>10} {:>6}/{:<6}",
            s.attempt,
            s.job_id.clone().unwrap_or_default(),
            state,
            s.cases_done,
            s.cases_planned
        );
    }
    let (ok, failed, lost) = (
        snap.count("ok"),
        snap.count("failed") + snap.count("timeout"),
        snap.count("lost"),
    );
    let (running, queued) = (snap.count("running"), snap.count("pending"));
    println!(
        "# launches: {ok} ok, {failed} failed, {lost} lost, {running} running, {queued} queued"
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
    let resubmit = format!(
        "scalebench submit {} --profile {} --out {}",
        dir.join("spec.toml").display(),
        jobs.profile.as_deref().unwrap_or("PROFILE"),
        dir.display()
    );
    if snap.active() {
        println!(
            "# results: not final ({running} launch(es) running, {queued} queued); {}",
            match merged {
                Some(_) => format!("{results} holds what had finished when last collected"),
                None => "the collect job merges them when every job has ended".into(),
            }
        );
        println!("# next: scalebench status {} --wait", dir.display());
    } else if final_merge {
        println!("# results merged: {results}");
    } else {
        println!(
            "# results: not merged yet: scalebench collect {}",
            dir.display()
        );
    }
    if !snap.active() {
        if failed + lost > 0 {
            println!("# next: {resubmit}  (submits only the failed and lost cases)");
        } else if final_merge {
            println!("# next: scalebench report {results}");
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
            match super::jobs::query(j.scheduler.unwrap_or(Scheduler::Slurm), &j.job_ids()) {
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
    let record: SweepRecord = rundir::read_json(&dir.join(PLAN_FILE))
        .map_err(|e| Error::Input(format!("{e} (is {} a run directory?)", dir.display())))?;
    let from_job = from_job.filter(|j| !j.is_empty());
    let (jobs, sched, unasked) = collect_view(dir, from_job.is_some());
    let view = match (&sched, from_job.is_some()) {
        (Some(m), _) => SchedulerView::Asked(m),
        (None, true) => SchedulerView::AllEnded,
        (None, false) => SchedulerView::Unknown,
    };
    let attempts = super::jobs::attempt_states(dir, &jobs.unwrap_or_default(), &view);
    // Only what finished is merged: a running launch's journal is half a launch.
    let open: std::collections::BTreeSet<&str> = attempts
        .iter()
        .filter(|a| a.active() || a.state == "unknown")
        .map(|a| a.attempt.as_str())
        .collect();
    let merged = rundir::merge_attempts(dir, &record, &|d: &Path| {
        !d.file_name()
            .is_some_and(|n| open.contains(n.to_string_lossy().as_ref()))
    });
    write_results(&dir.join(RESULTS_FILE), &merged)?;
    let planned = record.launches.iter().map(|l| l.cases.len()).sum::<usize>();
    let pending_cases: usize = attempts
        .iter()
        .filter(|a| open.contains(a.attempt.as_str()))
        .map(|a| a.cases_planned)
        .sum();
    let rec = CollectRecord {
        collected_unix_s: now_unix_s(),
        collect_job: from_job,
        missing_cases: planned.saturating_sub(merged.cases.len() + pending_cases),
        pending_cases,
        partial: !open.is_empty(),
        attempts,
    };
    rundir::write_json(&dir.join(COLLECT_FILE), &rec)?;
    if !quiet {
        print_collected(dir, &merged, &rec, unasked.as_deref());
    }
    let failed = merged
        .cases
        .iter()
        .any(|c| c.status.needs_rerun() || c.status == CaseStatus::Timeout)
        || rec.missing_cases > 0;
    Ok(if failed { EXIT_CASES_FAILED } else { EXIT_OK })
}

fn print_collected(
    dir: &Path,
    merged: &crate::results::schema::ResultsFile,
    rec: &CollectRecord,
    unasked: Option<&str>,
) {
    super::local::print_summary(merged);
    for a in rec.attempts.iter().filter(|a| a.state != "ok") {
        println!(
            "# attempt {} (job {}): {}",
            a.attempt,
            a.job_id.clone().unwrap_or_default(),
            a.state
        );
    }
    if let Some(e) = unasked {
        println!("# could not ask the scheduler ({e}): launches without a recorded end are left out as of unknown state");
    }
    if rec.pending_cases > 0 {
        println!(
            "# {} case(s) of launches still queued or running (or of unknown state) are not merged yet: collect again when they end (scalebench status {} --wait)",
            rec.pending_cases,
            dir.display()
        );
    }
    if rec.missing_cases > 0 {
        println!("# {} planned case(s) of finished or lost launches have no result: submit the spec again into this run to run them", rec.missing_cases);
    } else if !rec.partial {
        println!(
            "# next: scalebench report {}",
            dir.join(RESULTS_FILE).display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_and_dependencies_follow_the_scheduler() {
        assert_eq!(parse_job_id(Scheduler::Slurm, "42;cluster\n"), "42");
        assert_eq!(parse_job_id(Scheduler::Uge, "1234.1-4:1\n"), "1234");
        assert_eq!(parse_job_id(Scheduler::Uge, "1235\n"), "1235");
        assert_eq!(parse_job_id(Scheduler::Pbs, "5[].pbs01\n"), "5[].pbs01");
        assert_eq!(
            after_all(Scheduler::Slurm, &["1", "2"]),
            vec!["--dependency=afterany:1:2"]
        );
        assert_eq!(
            after_all(Scheduler::Uge, &["1", "2"]),
            vec!["-hold_jid", "1,2"]
        );
        assert_eq!(
            after_all(Scheduler::Pbs, &["5[].s", "6.s"]),
            vec!["-W", "depend=afterany:5[].s:6.s"]
        );
    }

    fn failed(stderr: &str) -> ToolError {
        ToolError::Failed {
            program: "sbatch".into(),
            code: "1".into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn a_failed_submit_names_its_likely_cause() {
        let no_conf = failed("sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\nsbatch: error: fetch_config: DNS SRV lookup failed\nsbatch: error: _establish_config_source: failed to fetch config\nsbatch: fatal: Could not establish a configuration source");
        let h = submit_hint(&no_conf, false);
        assert!(
            h.contains("export SLURM_CONF=") && h.contains("start.sh"),
            "{h}"
        );
        assert!(submit_hint(&no_conf, true).contains("readable slurm.conf"));
        let down = failed("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)");
        assert!(submit_hint(&down, true).contains("unreachable"));
        let acct = failed("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified");
        assert!(submit_hint(&acct, true).contains("--account"));
        let part =
            failed("sbatch: error: Batch job submission failed: Invalid partition name specified");
        assert!(submit_hint(&part, true).contains("--partition"));
        let spawn = ToolError::Spawn {
            program: "sbatch".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert!(submit_hint(&spawn, false).contains("not on PATH"));
        let slow = ToolError::TimedOut {
            program: "sbatch".into(),
            timeout_s: 60,
            stderr: String::new(),
        };
        assert!(submit_hint(&slow, true).contains("did not answer"));
        assert!(submit_hint(&failed("odd"), true).contains("message is above"));
    }
}
