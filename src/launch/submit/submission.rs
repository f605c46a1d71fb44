//! `scalebench submit`: resolve the profile, plan the attempts, write the run directory and
//! the job scripts, submit them (or print them with `--dry-run`).

use super::tool::{run_tool, submit_hint, ToolError};
use super::{JobRecord, JobsFile, Submission, JOBS_FILE};
use crate::config;
use crate::exit::EXIT_OK;
use crate::launch::error::{LaunchError, Result};
use crate::launch::profile::{self, GpuRequest, Profile, Scheduler};
use crate::launch::rundir::{self, SweepRecord, PLAN_FILE};
use crate::launch::scripts::{self, Context, JobPlan};
use crate::params::CaseParams;
use crate::plan::{sweep, LaunchPlan};
use crate::results::now_unix_s;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

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
        numa_domains: None,
        gpu_numa: Vec::new(),
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
        (Some(n), _) => profile::load(n).map_err(|e| LaunchError::Profile(Box::new(e)))?,
        (None, Some(s)) => generic(s),
        (None, None) => {
            let names: Vec<&str> = profile::BUILT_IN.iter().map(|(n, _)| *n).collect();
            return Err(LaunchError::NoSite { built_in: names });
        }
    };
    if let Some(s) = req.scheduler {
        if s != p.scheduler {
            return Err(LaunchError::SchedulerMismatch {
                given: s,
                profile: p.name.clone(),
                profile_scheduler: p.scheduler,
            });
        }
    }
    p = p
        .apply(&table)
        .map_err(|e| submit_key_error(spec, &p, e, &at))?;
    let mut cli = toml::Table::new();
    if let Some(a) = &req.account {
        cli.insert("account".into(), toml::Value::String(a.clone()));
    }
    if let Some(a) = &req.partition {
        cli.insert("partition".into(), toml::Value::String(a.clone()));
    }
    p = p
        .apply(&cli)
        .map_err(|e| LaunchError::AccountPartition(Box::new(e)))?;
    for (k, v) in &spec.launch.env {
        p.env.entry(k.clone()).or_insert_with(|| v.clone());
    }
    if p.reserved_cores.is_none() && !spec.launch.reserved_cores.as_str().is_empty() {
        p.reserved_cores = Some(spec.launch.reserved_cores.clone());
    }
    Ok(p)
}

/// A `[submit]` table the profile refused, named by the key at fault: each key is applied alone
/// to find it (the whole table's error names a profile field at best, not the spec's line).
fn submit_key_error(
    spec: &config::SweepSpec,
    base: &Profile,
    whole: profile::ProfileError,
    at: &dyn Fn(String) -> config::SpecError,
) -> LaunchError {
    let Some(t) = &spec.submit else {
        return LaunchError::SubmitTable(at(whole.to_string()));
    };
    for (k, v) in t.get_ref() {
        let one: toml::Table = [(k.get_ref().clone(), v.get_ref().clone())]
            .into_iter()
            .collect();
        if let Err(e) = base.apply(&one) {
            let key = format!("submit.{}", crate::units::shorten(k.get_ref()));
            return LaunchError::SubmitTable(spec.error_at_offset(
                v.span().start,
                &key,
                e.to_string(),
            ));
        }
    }
    LaunchError::SubmitTable(at(whole.to_string()))
}

/// Runs `scalebench submit`.
pub fn submit(req: &SubmitRequest, argv: &[String]) -> Result<u8> {
    let t0 = Instant::now();
    let spec = config::load(&req.spec).map_err(LaunchError::Spec)?;
    let plan = sweep::expand(&spec).map_err(LaunchError::Spec)?;
    let profile = resolve_profile(req, &spec)?;
    for l in &plan.launches {
        scripts::check_fit(&profile, &l.shape).map_err(|e| LaunchError::Fit {
            spec: req.spec.clone(),
            source: Box::new(e),
        })?;
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
            // No job is submitted, so no job can run a links step that is still missing.
            let step = spec.links.as_ref();
            for setup in plan.links.iter().filter(|s| s.skipped.is_none()) {
                let dir = crate::launch::links_step::step_dir(&out, setup);
                if step.is_some_and(|st| !crate::launch::links_step::finished(&dir, st)) {
                    eprintln!(
                        "# links {}: no links.json measured as the spec asks; run `scalebench links` in an allocation of {} with --out {}",
                        setup.id,
                        setup.label(),
                        dir.display()
                    );
                }
            }
        }
        return Ok(EXIT_OK);
    }
    let (attempts, mut groups) = plan_attempts(&plan.launches, &todo, &profile, &spec, &out);
    let unplaced = place_links_steps(&spec, &plan.links, &out, &profile, &mut groups);
    if !req.quiet {
        for id in &unplaced {
            eprintln!(
                "# links {id}: no job of this submission has that set-up (its launches are done), so its links step is not submitted: run `scalebench links` in an allocation of that set-up with --out {}",
                out.join(crate::launch::links_step::LINKS_DIR).join(id).display()
            );
        }
    }
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
        return Err(LaunchError::JobsNotRecorded {
            source: Box::new(e),
            cancel: cancel_program(profile.scheduler),
            ids,
            out: out.clone(),
        });
    }
    let last = jobs.submissions.last().expect("just pushed");
    if !req.quiet {
        let cases: usize = todo.values().map(Vec::len).sum();
        println!(
            "# submitted {} for {} of {} ({}){}; run: {}",
            crate::units::count(last.jobs.len(), "job", "jobs"),
            crate::units::count(cases, "case", "cases"),
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
            crate::launch::shell::job_name(&spec.name),
            crate::results::utc_stamp(now_unix_s())
        ))
    });
    let out = if out.is_absolute() {
        out
    } else {
        std::env::current_dir()
            .map_err(LaunchError::CurrentDir)?
            .join(out)
    };
    rundir::refuse_file_as_out(&out, "--out")?;
    Ok(out)
}

/// Refuses to submit into a run whose jobs are still queued or running.
fn refuse_active(out: &Path, jobs: &JobsFile, scheduler: Scheduler) -> Result<()> {
    let ids = jobs.job_ids();
    let sched = crate::launch::jobs::query(jobs.scheduler.unwrap_or(scheduler), &ids)
        .map_err(LaunchError::CheckJobs)?;
    let active: Vec<String> = sched
        .iter()
        .filter(|(_, s)| crate::launch::jobs::phase(s) != crate::launch::jobs::Phase::Ended)
        .map(|(i, s)| format!("{i} {s}"))
        .collect();
    if !active.is_empty() {
        return Err(LaunchError::JobsActive {
            out: out.to_path_buf(),
            active,
            cancel: cancel_program(jobs.scheduler.unwrap_or(scheduler)),
        });
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
        attempt.gpu_numa = profile.gpu_numa.clone();
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
                links: None,
            }),
        }
        attempts.push((dir, attempt));
    }
    (attempts, groups)
}

/// Gives each set-up's unfinished links step to the first job of that set-up (nodes and
/// ranks per node: a job's attempts share them), which runs it before its launch. Returns the
/// set-ups whose step no job of this submission can run.
fn place_links_steps(
    spec: &config::SweepSpec,
    setups: &[sweep::LinksSetup],
    out: &Path,
    profile: &Profile,
    groups: &mut [JobPlan],
) -> Vec<String> {
    use crate::launch::links_step;
    let Some(step) = &spec.links else {
        return Vec::new();
    };
    let mut unplaced = Vec::new();
    for setup in setups.iter().filter(|s| s.skipped.is_none()) {
        let dir = links_step::step_dir(out, setup);
        if links_step::finished(&dir, step) {
            continue;
        }
        let job = groups.iter_mut().find(|g| {
            let r = scripts::resources(profile, &g.shape);
            g.links.is_none() && r.nodes == setup.nodes && r.tasks_per_node == setup.ranks_per_node
        });
        match job {
            Some(g) => {
                g.links = Some(scripts::JobLinks {
                    label: format!("{} ({})", setup.id, setup.label()),
                    args: links_step::links_args(step, &dir.display().to_string()),
                    dir,
                    timeout_s: step.timeout_s.ceil() as u64,
                })
            }
            None => unplaced.push(setup.id.clone()),
        }
    }
    unplaced
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
        let text = scripts::script(&ctx, g).map_err(|e| LaunchError::Script(Box::new(e)))?;
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
    .map_err(|e| LaunchError::Script(Box::new(e)))?;
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
        "# dry run: {} for {}; nothing written, nothing submitted",
        crate::units::count(scripts.jobs.len(), "job script", "job scripts"),
        crate::units::count(attempts, "launch", "launches")
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
    std::fs::create_dir_all(out).map_err(|source| LaunchError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    crate::results::io::write_atomic(&out.join("spec.toml"), spec.text.as_bytes())?;
    rundir::write_json(&out.join(PLAN_FILE), record)?;
    for (dir, attempt) in attempts {
        added.push(dir.clone());
        std::fs::create_dir_all(dir).map_err(|source| LaunchError::Io {
            path: dir.clone(),
            source,
        })?;
        rundir::write_json(&dir.join(PLAN_FILE), attempt)?;
    }
    let collect = scripts.collect.iter().map(|(p, t)| (p, t));
    for (path, text) in scripts.jobs.iter().map(|(p, t, _)| (p, t)).chain(collect) {
        added.push(path.clone());
        crate::results::io::write_atomic(path, text.as_bytes())?;
    }
    Ok(())
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
        LaunchError::Submit {
            script: script
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
            source: Box::new(e),
            hint,
            out: out.to_path_buf(),
        }
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
                return Err(LaunchError::JobIdNotRecorded {
                    path: a.join("job_id"),
                    source: e,
                    cancel: cancel_program(sched),
                    out: out.to_path_buf(),
                });
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
}
