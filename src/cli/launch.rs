//! The arguments of the commands that plan and launch sweeps: `plan`, `sweep`, `topo`,
//! `submit`, `status`, `collect` and the job-side `finish-launch`.

use crate::launch::profile::UnknownScheduler;
use crate::topology::binding::Reserved;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// The sweep spec (TOML; see examples/).
    pub spec: PathBuf,
    /// List every case (id and parameters) under its launch.
    #[arg(long)]
    pub cases: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 every case ok; 2 bad spec; 3 some case failed, was wrong or timed out, or a [links] step wrote no links.json (results are kept); 130 interrupted (results are kept; continue with --resume)."
)]
pub struct SweepArgs {
    /// The sweep spec (TOML; see examples/).
    pub spec: PathBuf,
    /// Run directory (default: results/<name>-<UTC timestamp>).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Continue the sweep in --out: run only cases that are missing, failed, wrong or timed out.
    #[arg(long)]
    pub resume: bool,
    /// Print the launch commands without running them.
    #[arg(long)]
    pub dry_run: bool,
    /// No progress line and no tables.
    #[arg(short, long)]
    pub quiet: bool,
    /// Kill a launch after this many seconds (overrides the spec's [launch] timeout_s).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub launch_timeout: Option<f64>,
    /// The MPI launcher.
    #[arg(long, default_value = "mpirun")]
    pub mpirun: String,
    /// Do not measure the hosts' ceilings at each launch's start (as the spec's
    /// `run.ceilings = false`): figures then carry no fraction of peak.
    #[arg(long)]
    pub no_ceilings: bool,
}

#[derive(Debug, Clone, Args)]
pub struct TopoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Devices per node to show bindings for (default: the GPUs found, or 2).
    #[arg(long)]
    pub devices_per_node: Option<u32>,
    /// Cores kept free: a cpulist such as `0`, or `first_per_numa`.
    #[arg(long, default_value = "")]
    pub reserved_cores: Reserved,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Submitting into a run directory that already holds a run submits only its missing or failed cases."
)]
pub struct SubmitArgs {
    /// The sweep spec (TOML; see examples/).
    pub spec: PathBuf,
    /// slurm, uge or pbs (default: the profile's).
    #[arg(long)]
    pub scheduler: Option<String>,
    /// A built-in site profile (puhti, mahti, lumi, sulis, apocrita, pbs-example, local-slurm)
    /// or a profile file.
    #[arg(long)]
    pub profile: Option<String>,
    /// Run directory (default: results/<name>-<UTC timestamp>).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Print the job scripts without writing or submitting anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Account (project) to charge, overriding the profile's.
    #[arg(long)]
    pub account: Option<String>,
    /// Partition (queue), overriding the profile's.
    #[arg(long)]
    pub partition: Option<String>,
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 the run is healthy (every launch queued, running or finished ok); 3 a launch failed, timed out or was lost (its job ended without recording its end); 4 --wait ran out of time. Array jobs are followed task by task (JOB_INDEX)."
)]
pub struct StatusArgs {
    /// The run directory.
    pub run: PathBuf,
    /// Wait until no job of the run is queued or running.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this many seconds.
    #[arg(long, default_value_t = 3600.0, allow_negative_numbers = true)]
    pub timeout: f64,
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CollectArgs {
    /// The run directory.
    pub run: PathBuf,
    /// The job running the collection (set by the collect job).
    #[arg(long, hide = true)]
    pub from_job: Option<String>,
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct FinishLaunchArgs {
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long, allow_negative_numbers = true)]
    pub exit_code: i32,
    #[arg(long)]
    pub started: f64,
    #[arg(long)]
    pub timeout_s: Option<f64>,
    #[arg(long, default_value = "srun")]
    pub launcher: String,
    #[arg(long)]
    pub job_id: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct WatchLaunchArgs {
    /// The attempt directory (its stderr.log is read).
    #[arg(long)]
    pub dir: PathBuf,
    /// The launch's process (the `timeout` around the launcher).
    #[arg(long)]
    pub pid: u32,
    /// Seconds the launch may still end by itself after a fatal line appeared.
    #[arg(long, default_value_t = 10.0)]
    pub grace_s: f64,
}

impl From<&SweepArgs> for crate::launch::local::SweepRequest {
    fn from(a: &SweepArgs) -> Self {
        crate::launch::local::SweepRequest {
            spec: a.spec.clone(),
            out: a.out.clone(),
            resume: a.resume,
            dry_run: a.dry_run,
            quiet: a.quiet,
            launch_timeout_s: a.launch_timeout,
            mpirun: a.mpirun.clone(),
            no_ceilings: a.no_ceilings,
        }
    }
}

impl SubmitArgs {
    /// The typed request (fallible: `--scheduler` names one of the schedulers).
    pub fn request(&self) -> Result<crate::launch::submit::SubmitRequest, crate::error::Error> {
        let scheduler = self
            .scheduler
            .as_deref()
            .map(|s| {
                s.parse().map_err(|e: UnknownScheduler| {
                    crate::error::Error::from(crate::launch::error::LaunchError::Scheduler(e))
                })
            })
            .transpose()?;
        Ok(crate::launch::submit::SubmitRequest {
            spec: self.spec.clone(),
            scheduler,
            profile: self.profile.clone(),
            out: self.out.clone(),
            dry_run: self.dry_run,
            account: self.account.clone(),
            partition: self.partition.clone(),
            quiet: self.quiet,
        })
    }
}
