//! Why a sweep, a submission or a look at a run failed: bad input or an unusable site (exit
//! code 2, each message naming the file or option and the fix), or a failure while doing it
//! (exit code 4).

use super::profile::{Scheduler, UnknownScheduler};
use super::submit::ToolError;
use crate::config::limits::LimitError;
use crate::config::SpecError;
use crate::exit::{EXIT_BAD_INPUT, EXIT_RUNTIME};
use crate::plan::PlanError;
use crate::results::io::ResultsError;
use std::path::PathBuf;

/// A cause whose type is private to the crate (a profile's or a script's error), kept whole
/// for the error chain.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A spec that cannot be read or planned, or run as a local sweep here
    /// (`file:line: key: message`).
    #[error("{0}")]
    Spec(#[source] SpecError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A results file, a journal or a file written atomically.
    #[error("{0}")]
    Results(#[from] ResultsError),
    /// Creating a directory or file of the run failed.
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: another scalebench sweep or run is writing in this directory: wait for it, or use another --out", .dir.display())]
    Busy { dir: PathBuf },
    #[error("--resume {}: no sweep there (no {}): run without --resume to start one", .out.display(), super::rundir::PLAN_FILE)]
    NothingToResume { out: PathBuf },
    #[error("--out {}: a sweep is already there: add --resume to continue it, or choose another --out", .out.display())]
    SweepExists { out: PathBuf },
    #[error("waiting for launch {launch_id}: {source}")]
    Wait {
        launch_id: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start `{program}`: {source} (is OpenMPI installed? bash ci/setup.sh)")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// Writing JSON failed.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    #[error("{option} {}: exists and is not a directory: give a directory (it is created if missing)", .out.display())]
    OutNotADirectory { option: String, out: PathBuf },
    /// A file of the run cannot be read (bad input: the directory is not what it should be).
    #[error("{}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{}:{}: {source}", .path.display(), .source.line(), .source.column())]
    NotJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// `what` is the option (`--resume`, `collect`); `changes` what differs.
    #[error("{what} {}: the spec changed since this run started ({}): continue it with its own copy ({}), or start a new run with another --out", .dir.display(), .changes.join("; "), .dir.join("spec.toml").display())]
    SpecChanged {
        what: String,
        dir: PathBuf,
        changes: Vec<String>,
    },
    #[error("{source} (is {} a run directory?)", .dir.display())]
    NotARun {
        dir: PathBuf,
        #[source]
        source: Box<LaunchError>,
    },
    #[error("{source} (is {} a submitted run?)", .dir.display())]
    NotASubmittedRun {
        dir: PathBuf,
        #[source]
        source: Box<LaunchError>,
    },
    #[error("{source} {}", query_hint(.scheduler))]
    Query {
        scheduler: Scheduler,
        #[source]
        source: ToolError,
    },
    #[error("cannot check this run's jobs: {0}")]
    CheckJobs(#[source] ToolError),
    #[error("--scheduler: {0}")]
    Scheduler(#[source] UnknownScheduler),
    /// A profile that cannot be loaded.
    #[error("{0}")]
    Profile(#[source] Cause),
    #[error("submit needs a site: give --profile NAME|FILE (built-in: {}) or --scheduler slurm|uge|pbs", .built_in.join(", "))]
    NoSite { built_in: Vec<&'static str> },
    #[error("{}", mismatch(.given, .profile, .profile_scheduler))]
    SchedulerMismatch {
        given: Scheduler,
        profile: String,
        profile_scheduler: Scheduler,
    },
    /// The spec's `[submit]` table does not apply to the profile (named at its line).
    #[error("{0}")]
    SubmitTable(#[source] SpecError),
    #[error("--account/--partition: {0}")]
    AccountPartition(#[source] Cause),
    /// A launch of the spec does not fit the site.
    #[error("{}: {source}", .spec.display())]
    Fit {
        spec: PathBuf,
        #[source]
        source: Cause,
    },
    /// A job script cannot be written for the site.
    #[error("{0}")]
    Script(#[source] Cause),
    #[error("{0}")]
    CurrentDir(#[source] std::io::Error),
    #[error("{}: jobs of this run are still queued or running ({}): wait for them (scalebench status --wait) or cancel them ({cancel}), then submit again", .out.display(), .active.join(", "))]
    JobsActive {
        out: PathBuf,
        active: Vec<String>,
        cancel: &'static str,
    },
    #[error("{source}: the run's jobs could not be recorded, so they were cancelled ({cancel} {}) and {} is as it was before this submit", .ids.join(" "), .out.display())]
    JobsNotRecorded {
        #[source]
        source: Box<LaunchError>,
        cancel: &'static str,
        ids: Vec<String>,
        out: PathBuf,
    },
    #[error("submitting {script}: {source}\nhint: {hint}\nnothing was submitted and {} is as it was before this submit", .out.display())]
    Submit {
        script: String,
        /// Boxed: the error stays small enough to return.
        #[source]
        source: Box<ToolError>,
        hint: String,
        out: PathBuf,
    },
    #[error("{}: cannot record its job id: {source}; the jobs submitted so far were cancelled ({cancel}) and {} is as it was before this submit", .path.display(), .out.display())]
    JobIdNotRecorded {
        path: PathBuf,
        #[source]
        source: std::io::Error,
        cancel: &'static str,
        out: PathBuf,
    },
}

/// Where to look when the scheduler could not be asked.
fn query_hint(scheduler: &Scheduler) -> &'static str {
    match scheduler {
        Scheduler::Slurm => "(is SLURM_CONF exported?)",
        _ => "(is qstat on PATH, on a host that may submit?)",
    }
}

/// The sentence in lower case (the schedulers' names as written on the command line).
fn mismatch(given: &Scheduler, profile: &str, profile_scheduler: &Scheduler) -> String {
    format!("--scheduler {given:?} does not match profile {profile} ({profile_scheduler:?}): drop one of them")
        .to_lowercase()
}

impl LaunchError {
    /// Bad input and unusable sites are 2; failures while running or writing are 4.
    pub fn exit_code(&self) -> u8 {
        match self {
            LaunchError::Plan(e) => e.exit_code(),
            LaunchError::Results(ResultsError::Io { .. })
            | LaunchError::Io { .. }
            | LaunchError::Wait { .. }
            | LaunchError::Spawn { .. }
            | LaunchError::Json(_)
            | LaunchError::CurrentDir(_)
            | LaunchError::JobsNotRecorded { .. }
            | LaunchError::JobIdNotRecorded { .. } => EXIT_RUNTIME,
            _ => EXIT_BAD_INPUT,
        }
    }
}

pub type Result<T, E = LaunchError> = std::result::Result<T, E>;
