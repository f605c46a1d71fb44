//! Job scripts for Slurm, UGE/SGE and PBS Pro: one per allocation shape (a job array when
//! several launches share it), each running `scalebench run --plan` under the site's launcher
//! and recording how the launch ended (`scalebench finish-launch`). Jobs never wait on
//! scalebench: there is no polling inside a job.
//!
//! Every value from a spec or profile is quoted or checked (see [`super::shell`]).

use super::profile::{GpuRequest, Profile, Scheduler};
use super::shell::{directive_value, job_name, quote, quote_all, ShellError};
use crate::params::{BackendKind, LaunchShape, Placement, Topology};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One job: the attempts (launch directories) it runs, all of one allocation shape.
#[derive(Debug, Clone)]
pub(crate) struct JobPlan {
    pub name: String,
    pub shape: LaunchShape,
    /// Attempt directories (each holds `plan.json`); several make a job array.
    pub attempts: Vec<PathBuf>,
    /// Each attempt's launch shape, in words (launches of one array may differ, e.g. pure and
    /// hybrid with one device per node share an allocation).
    pub labels: Vec<String>,
    /// Seconds a launch may run before `timeout` stops it inside the job.
    pub launch_timeout_s: u64,
    /// The `[links]` step this job runs first (in its array's task 0), if any.
    pub links: Option<JobLinks>,
}

/// A set-up's links step inside a job: `scalebench links` under the job's launcher, before the
/// launch, once (a job array runs it in task 0 only); skipped when its links.json exists.
#[derive(Debug, Clone)]
pub(crate) struct JobLinks {
    /// `DIR/links/<set-up>`.
    pub dir: PathBuf,
    /// The set-up, in words (for the script's comment).
    pub label: String,
    /// `links …` (from [`super::links_step::links_args`], without `--out`'s value's quoting).
    pub args: Vec<String>,
    pub timeout_s: u64,
}

impl JobPlan {
    /// Seconds the job's steps may take together: the launch, and the links step before it.
    fn limit_s(&self) -> u64 {
        self.launch_timeout_s
            .saturating_add(self.links.as_ref().map_or(0, |l| l.timeout_s))
    }
}

/// What every script of a run shares.
pub(crate) struct Context<'a> {
    pub profile: &'a Profile,
    pub run_dir: &'a Path,
    /// scalebench on the cluster.
    pub scalebench: &'a str,
    pub sweep_name: &'a str,
}

/// Per-node resources of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resources {
    pub nodes: u32,
    pub tasks_per_node: u32,
    pub cpus_per_task: u32,
    pub gpus_per_node: u32,
}

/// Pure: one task per device; hybrid: one task per node with the node's share of cores.
pub(crate) fn resources(profile: &Profile, shape: &LaunchShape) -> Resources {
    let d = shape.devices_per_node;
    let per_device = profile.cpus_per_device(d);
    let gpus = if shape.backend != BackendKind::Cpu {
        d
    } else {
        0
    };
    match shape.topology {
        Topology::Pure => Resources {
            nodes: shape.nodes,
            tasks_per_node: d,
            cpus_per_task: per_device,
            gpus_per_node: gpus,
        },
        Topology::Hybrid => Resources {
            nodes: shape.nodes,
            tasks_per_node: 1,
            cpus_per_task: (per_device * d).min(profile.cores_per_node),
            gpus_per_node: gpus,
        },
    }
}

/// Minutes for the scheduler's limit: the profile's, or the launch timeout plus a margin.
pub(crate) fn time_limit_min(profile: &Profile, launch_timeout_s: u64) -> u32 {
    profile.time_limit_min.unwrap_or(
        u32::try_from(launch_timeout_s.div_ceil(60).saturating_add(5)).unwrap_or(u32::MAX),
    )
}

fn hhmmss(min: u32) -> String {
    format!("{:02}:{:02}:00", min / 60, min % 60)
}

/// Why a job script cannot be written for a profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScriptError {
    /// The run directory must appear in a directive but has unsafe characters.
    #[error("{source} (choose an --out path without spaces or special characters)")]
    RunDirectory {
        #[source]
        source: ShellError,
    },
    /// The shape asks for more GPUs per node than the profile's nodes have.
    #[error("{shape} needs {} per node but profile {profile} has {available} per node: use devices_per_node ≤ {available}", crate::units::count(*.needed as usize, "GPU", "GPUs"))]
    Gpus {
        shape: String,
        needed: u32,
        profile: String,
        available: u32,
    },
    /// The profile's GPU → NUMA map gives a task no cores (see `Profile::slurm_cpu_bind`).
    #[error("profile {profile}: {message}")]
    Binding { profile: String, message: String },
    /// The shape's tasks × CPUs per task exceed the profile's cores per node.
    #[error("{shape} needs {tasks_per_node} × {cpus_per_task} cores per node but profile {profile} has {available}: lower cpus_per_gpu or devices_per_node")]
    Cores {
        shape: String,
        tasks_per_node: u32,
        cpus_per_task: u32,
        profile: String,
        available: u32,
    },
}

/// A path that must appear in a directive: no spaces or shell/scheduler metacharacters.
fn directive_path(p: &Path) -> Result<String, ScriptError> {
    let s = p.display().to_string();
    directive_value("run directory", &s).map_err(|source| ScriptError::RunDirectory { source })?;
    Ok(s)
}

/// Checks the shape fits the profile's nodes.
pub(crate) fn check_fit(profile: &Profile, shape: &LaunchShape) -> Result<(), ScriptError> {
    if shape.backend != BackendKind::Cpu && shape.devices_per_node > profile.gpus_per_node {
        return Err(ScriptError::Gpus {
            shape: shape.label(),
            needed: shape.devices_per_node,
            profile: profile.name.clone(),
            available: profile.gpus_per_node,
        });
    }
    let r = resources(profile, shape);
    if r.tasks_per_node * r.cpus_per_task > profile.cores_per_node {
        return Err(ScriptError::Cores {
            shape: shape.label(),
            tasks_per_node: r.tasks_per_node,
            cpus_per_task: r.cpus_per_task,
            profile: profile.name.clone(),
            available: profile.cores_per_node,
        });
    }
    Ok(())
}

/// The body every scheduler's script shares: pick the attempt, set up, run, record the end.
fn body(
    ctx: &Context<'_>,
    job: &JobPlan,
    array_index: &str,
    launcher: &[String],
    launcher_name: &str,
) -> String {
    let p = ctx.profile;
    let mut s = String::new();
    let dirs: Vec<String> = job
        .attempts
        .iter()
        .map(|d| quote(&d.display().to_string()))
        .collect();
    let _ = writeln!(s, "set -u");
    if dirs.len() == 1 {
        // No array index: UGE sets SGE_TASK_ID to "undefined" outside arrays.
        let _ = writeln!(s, "dir={}", dirs[0]);
    } else {
        let _ = writeln!(s, "dirs=({})", dirs.join(" "));
        let _ = writeln!(s, "dir=${{dirs[{array_index}]}}");
    }
    let _ = writeln!(s, "cd \"$dir\" || exit 1");
    if !p.modules.is_empty() {
        let _ = writeln!(s, "module load {}", quote_all(&p.modules));
    }
    for (k, v) in &p.env {
        let _ = writeln!(s, "export {k}={}", quote(v));
    }
    let _ = writeln!(s, "sb={}", quote(ctx.scalebench));
    if let Some(l) = &job.links {
        links_step(&mut s, ctx, job, l, array_index, launcher);
    }
    let _ = writeln!(s, "started=$(date +%s.%N)");
    let mut cmd = vec![
        format!(
            "timeout --signal=TERM --kill-after=30 {}",
            job.launch_timeout_s
        ),
        quote_all(launcher),
    ];
    if !p.container.is_empty() {
        cmd.push(quote_all(&p.container));
    }
    cmd.push("\"$sb\" run -q --plan \"$dir/plan.json\" --out \"$dir\"".into());
    // The launch in the background and a watcher beside it: ranks that already reported a
    // fatal MPI error end the launch early instead of leaving the others to the time limit.
    let _ = writeln!(s, "{} 2> \"$dir/stderr.log\" &", cmd.join(" "));
    let _ = writeln!(s, "launch=$!");
    let _ = writeln!(s, "\"$sb\" watch-launch --dir \"$dir\" --pid \"$launch\" &");
    let _ = writeln!(s, "watcher=$!");
    let _ = writeln!(s, "wait \"$launch\"");
    let _ = writeln!(s, "rc=$?");
    let _ = writeln!(s, "kill \"$watcher\" 2>/dev/null");
    let _ = writeln!(s, "wait \"$watcher\" 2>/dev/null");
    let _ = writeln!(s, "cat \"$dir/stderr.log\" >&2");
    let _ = writeln!(
        s,
        "\"$sb\" finish-launch --dir \"$dir\" --exit-code \"$rc\" --started \"$started\" --timeout-s {} --launcher {}{}",
        job.launch_timeout_s,
        quote(launcher_name),
        match p.scheduler {
            // An array task is `<array job>_<task>`, as squeue and jobs.json name it (its
            // own SLURM_JOB_ID is another number).
            Scheduler::Slurm => {
                " --job-id \"${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-}}${SLURM_ARRAY_TASK_ID:+_$SLURM_ARRAY_TASK_ID}\""
            }
            Scheduler::Uge => " --job-id \"${JOB_ID:-}\"",
            Scheduler::Pbs => " --job-id \"${PBS_JOBID:-}\"",
        }
    );
    let _ = writeln!(s, "exit \"$rc\"");
    s
}

/// The links step's lines: in task 0 of an array (or in the one job), unless an earlier job
/// already wrote its links.json. Its exit code (1: a suspect named) is recorded, not the job's.
fn links_step(
    s: &mut String,
    ctx: &Context<'_>,
    job: &JobPlan,
    l: &JobLinks,
    array_index: &str,
    launcher: &[String],
) {
    let dir = quote(&l.dir.display().to_string());
    // The label is made by scalebench from numbers (no user text): safe in a comment.
    let _ = writeln!(
        s,
        "# links step: {} (once per set-up, before its launches)",
        l.label
    );
    let task0 = if job.attempts.len() > 1 {
        format!("[ \"{array_index}\" = 0 ] && ")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "if {task0}[ ! -s {dir}/links.json ] && mkdir -p {dir}; then"
    );
    let mut cmd = vec![
        format!("timeout --signal=TERM --kill-after=30 {}", l.timeout_s),
        quote_all(launcher),
    ];
    if !ctx.profile.container.is_empty() {
        cmd.push(quote_all(&ctx.profile.container));
    }
    cmd.push(format!("\"$sb\" {}", quote_all(&l.args)));
    let _ = writeln!(
        s,
        "  {} > {dir}/stdout.log 2> {dir}/stderr.log",
        cmd.join(" ")
    );
    let _ = writeln!(s, "  echo \"$?\" > {dir}/exit_code");
    let _ = writeln!(s, "fi");
}

fn header(ctx: &Context<'_>, job: &JobPlan) -> String {
    let ids: Vec<String> = job
        .attempts
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut s = String::from("#!/bin/bash\n");
    // Comments carry no user text verbatim beyond safe names: newlines could end them.
    let one_shape = job.labels.iter().all(|l| job.labels.first() == Some(l));
    if ids.len() < 2 || one_shape {
        let _ = writeln!(
            s,
            "# scalebench job: sweep {}, {} ({})",
            job_name(ctx.sweep_name),
            job.shape.label(),
            ids.join(" ")
        );
        return s;
    }
    let _ = writeln!(
        s,
        "# scalebench job: sweep {}, an array of {} launches:",
        job_name(ctx.sweep_name),
        ids.len()
    );
    for (i, (id, label)) in ids.iter().zip(&job.labels).enumerate() {
        let _ = writeln!(s, "#   task {i}: {id} ({label})");
    }
    s
}

/// A Slurm batch script.
pub(crate) fn slurm(ctx: &Context<'_>, job: &JobPlan) -> Result<String, ScriptError> {
    let p = ctx.profile;
    let r = resources(p, &job.shape);
    let mut s = header(ctx, job);
    let d = |s: &mut String, line: String| {
        let _ = writeln!(s, "#SBATCH {line}");
    };
    d(&mut s, format!("--job-name={}", job_name(&job.name)));
    d(&mut s, format!("--nodes={}", r.nodes));
    d(&mut s, format!("--ntasks-per-node={}", r.tasks_per_node));
    d(&mut s, format!("--cpus-per-task={}", r.cpus_per_task));
    if r.gpus_per_node > 0 {
        match p.gpu_request {
            GpuRequest::Gres => d(
                &mut s,
                format!(
                    "--gres=gpu:{}{}",
                    p.gpu_type
                        .as_deref()
                        .map(|t| format!("{t}:"))
                        .unwrap_or_default(),
                    r.gpus_per_node
                ),
            ),
            GpuRequest::GpusPerNode => d(&mut s, format!("--gpus-per-node={}", r.gpus_per_node)),
            GpuRequest::GpusPerTask => d(
                &mut s,
                format!("--gpus-per-task={}", r.gpus_per_node / r.tasks_per_node),
            ),
            GpuRequest::None => {}
        }
    }
    if let Some(m) = &p.mem_per_node {
        d(&mut s, format!("--mem={m}"));
    } else if let (Some(m), true) = (&p.mem_per_gpu, r.gpus_per_node > 0) {
        d(&mut s, format!("--mem-per-gpu={m}"));
    } else if let Some(m) = &p.mem_per_cpu {
        d(&mut s, format!("--mem-per-cpu={m}"));
    }
    d(
        &mut s,
        format!("--time={}", time_limit_min(p, job.limit_s())),
    );
    if let Some(x) = &p.partition {
        d(&mut s, format!("--partition={x}"));
    }
    if let Some(x) = &p.account {
        d(&mut s, format!("--account={x}"));
    }
    let out = directive_path(&ctx.run_dir.join(super::rundir::LAUNCHES_DIR))?;
    if job.attempts.len() > 1 {
        d(&mut s, format!("--array=0-{}", job.attempts.len() - 1));
        d(&mut s, format!("--output={out}/slurm-%A_%a.out"));
    } else {
        d(&mut s, format!("--output={out}/slurm-%j.out"));
    }
    for x in &p.directives {
        d(&mut s, x.clone());
    }
    let mut launcher = if p.launcher.is_empty() {
        vec!["srun".to_string(), "--mpi=pmix".to_string()]
    } else {
        p.launcher.clone()
    };
    let bind = p
        .slurm_cpu_bind(&job.shape)
        .map_err(|e| ScriptError::Binding {
            profile: p.name.clone(),
            message: e.to_string(),
        })?;
    launcher.extend(bind);
    if job.shape.placement == Placement::RoundRobin {
        launcher.push("--distribution=cyclic".into());
    }
    s.push_str(&body(
        ctx,
        job,
        "${SLURM_ARRAY_TASK_ID:-0}",
        &launcher,
        "srun",
    ));
    Ok(s)
}

/// The Slurm job that merges a run's results once every job has ended (`afterany`).
pub(crate) fn slurm_collect(ctx: &Context<'_>) -> Result<String, ScriptError> {
    let p = ctx.profile;
    let mut s = String::from("#!/bin/bash\n# scalebench: merge the run's results after all its jobs (submitted with --dependency=afterany)\n");
    let _ = writeln!(s, "#SBATCH --job-name={}-collect", job_name(ctx.sweep_name));
    let _ = writeln!(
        s,
        "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n#SBATCH --time=10"
    );
    if let Some(x) = &p.partition {
        let _ = writeln!(s, "#SBATCH --partition={x}");
    }
    if let Some(x) = &p.account {
        let _ = writeln!(s, "#SBATCH --account={x}");
    }
    let _ = writeln!(
        s,
        "#SBATCH --output={}/collect-%j.out",
        directive_path(ctx.run_dir)?
    );
    let _ = writeln!(s, "set -u");
    let _ = writeln!(
        s,
        "exec {} collect {} --from-job \"${{SLURM_JOB_ID:-}}\"",
        quote(ctx.scalebench),
        quote(&ctx.run_dir.display().to_string())
    );
    Ok(s)
}

/// The UGE collect job: one slot for ten minutes, held until the run's jobs have ended
/// (`qsub -hold_jid`, which waits however they ended).
pub(crate) fn uge_collect(ctx: &Context<'_>) -> Result<String, ScriptError> {
    let p = ctx.profile;
    let mut s = String::from("#!/bin/bash\n# scalebench: merge the run's results after all its jobs (submitted with -hold_jid)\n");
    let _ = writeln!(s, "#$ -N {}-collect", job_name(ctx.sweep_name));
    let _ = writeln!(s, "#$ -S /bin/bash\n#$ -j y\n#$ -l h_rt=00:10:00");
    let _ = writeln!(s, "#$ -o {}/", directive_path(ctx.run_dir)?);
    if let Some(x) = &p.partition {
        let _ = writeln!(s, "#$ -q {x}");
    }
    if let Some(x) = &p.account {
        let _ = writeln!(s, "#$ -P {x}");
    }
    let _ = writeln!(s, "set -u");
    let _ = writeln!(
        s,
        "exec {} collect {} --from-job \"${{JOB_ID:-}}\"",
        quote(ctx.scalebench),
        quote(&ctx.run_dir.display().to_string())
    );
    Ok(s)
}

/// The PBS collect job: one CPU for ten minutes, held until the run's jobs have ended
/// (`qsub -W depend=afterany:`).
pub(crate) fn pbs_collect(ctx: &Context<'_>) -> Result<String, ScriptError> {
    let p = ctx.profile;
    let mut s = String::from("#!/bin/bash\n# scalebench: merge the run's results after all its jobs (submitted with -W depend=afterany)\n");
    let _ = writeln!(s, "#PBS -N {}-collect", job_name(ctx.sweep_name));
    let _ = writeln!(s, "#PBS -l select=1:ncpus=1\n#PBS -l walltime=00:10:00");
    if let Some(x) = &p.partition {
        let _ = writeln!(s, "#PBS -q {x}");
    }
    if let Some(x) = &p.account {
        let _ = writeln!(s, "#PBS -A {x}");
    }
    let _ = writeln!(s, "#PBS -j oe\n#PBS -o {}/", directive_path(ctx.run_dir)?);
    let _ = writeln!(s, "set -u");
    let _ = writeln!(
        s,
        "exec {} collect {} --from-job \"${{PBS_JOBID:-}}\"",
        quote(ctx.scalebench),
        quote(&ctx.run_dir.display().to_string())
    );
    Ok(s)
}

/// A UGE/SGE script (Apocrita style): whole nodes through a parallel environment, GPUs per
/// node with `-l gpu=`, ranks round-robin with `mpirun -rr` when asked.
pub(crate) fn uge(ctx: &Context<'_>, job: &JobPlan) -> Result<String, ScriptError> {
    let p = ctx.profile;
    let r = resources(p, &job.shape);
    let mut s = header(ctx, job);
    let d = |s: &mut String, line: String| {
        let _ = writeln!(s, "#$ {line}");
    };
    d(&mut s, format!("-N {}", job_name(&job.name)));
    d(&mut s, "-S /bin/bash".into());
    d(&mut s, "-j y".into());
    let out = directive_path(&ctx.run_dir.join(super::rundir::LAUNCHES_DIR))?;
    d(&mut s, format!("-o {out}/"));
    d(
        &mut s,
        format!(
            "-pe {} {}",
            p.pe.as_deref().unwrap_or("parallel"),
            r.nodes * p.cores_per_node
        ),
    );
    if r.gpus_per_node > 0 {
        d(&mut s, format!("-l gpu={}", r.gpus_per_node));
        if let Some(t) = &p.gpu_type {
            d(&mut s, format!("-l gpu_type={t}"));
        }
    }
    d(
        &mut s,
        format!("-l h_rt={}", hhmmss(time_limit_min(p, job.limit_s()))),
    );
    if let Some(x) = &p.partition {
        d(&mut s, format!("-q {x}"));
    }
    if let Some(x) = &p.account {
        d(&mut s, format!("-P {x}"));
    }
    if job.attempts.len() > 1 {
        d(&mut s, format!("-t 1-{}", job.attempts.len()));
    }
    for x in &p.directives {
        d(&mut s, x.clone());
    }
    let mut launcher = if p.launcher.is_empty() {
        vec!["mpirun".to_string()]
    } else {
        p.launcher.clone()
    };
    if job.shape.placement == Placement::RoundRobin {
        launcher.push("-rr".into());
    } else {
        launcher.extend(["-ppn".to_string(), r.tasks_per_node.to_string()]);
    }
    launcher.extend(["-n".to_string(), (r.nodes * r.tasks_per_node).to_string()]);
    s.push_str(&body(
        ctx,
        job,
        "$(( ${SGE_TASK_ID:-1} - 1 ))",
        &launcher,
        "mpirun",
    ));
    Ok(s)
}

/// A PBS Pro script: `select=N:ncpus=C:ngpus=G:mpiprocs=R` chunks, ranks with mpiexec.
pub(crate) fn pbs(ctx: &Context<'_>, job: &JobPlan) -> Result<String, ScriptError> {
    let p = ctx.profile;
    let r = resources(p, &job.shape);
    let mut s = header(ctx, job);
    let d = |s: &mut String, line: String| {
        let _ = writeln!(s, "#PBS {line}");
    };
    d(&mut s, format!("-N {}", job_name(&job.name)));
    let mut select = format!(
        "select={}:ncpus={}:mpiprocs={}",
        r.nodes,
        r.tasks_per_node * r.cpus_per_task,
        r.tasks_per_node
    );
    if r.gpus_per_node > 0 {
        select.push_str(&format!(":ngpus={}", r.gpus_per_node));
    }
    d(&mut s, format!("-l {select}"));
    d(
        &mut s,
        format!("-l walltime={}", hhmmss(time_limit_min(p, job.limit_s()))),
    );
    if let Some(x) = &p.partition {
        d(&mut s, format!("-q {x}"));
    }
    if let Some(x) = &p.account {
        d(&mut s, format!("-A {x}"));
    }
    d(&mut s, "-j oe".into());
    d(
        &mut s,
        format!(
            "-o {}/",
            directive_path(&ctx.run_dir.join(super::rundir::LAUNCHES_DIR))?
        ),
    );
    if job.attempts.len() > 1 {
        d(&mut s, format!("-J 0-{}", job.attempts.len() - 1));
    }
    for x in &p.directives {
        d(&mut s, x.clone());
    }
    let mut launcher = if p.launcher.is_empty() {
        vec!["mpiexec".to_string()]
    } else {
        p.launcher.clone()
    };
    launcher.extend(["-n".to_string(), (r.nodes * r.tasks_per_node).to_string()]);
    s.push_str(&body(
        ctx,
        job,
        "${PBS_ARRAY_INDEX:-0}",
        &launcher,
        "mpiexec",
    ));
    Ok(s)
}

/// The script for `job` in the profile's scheduler's dialect.
pub(crate) fn script(ctx: &Context<'_>, job: &JobPlan) -> Result<String, ScriptError> {
    check_fit(ctx.profile, &job.shape)?;
    match ctx.profile.scheduler {
        Scheduler::Slurm => slurm(ctx, job),
        Scheduler::Uge => uge(ctx, job),
        Scheduler::Pbs => pbs(ctx, job),
    }
}
