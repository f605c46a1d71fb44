//! `scalebench submit`, `status`, `collect` and the job-side `finish-launch`.
//!
//! A submitted run has the same directory layout as a local sweep (see [`super::rundir`]),
//! plus `jobs/` (the generated scripts) and `jobs.json` (every submission's job ids). Jobs run
//! `scalebench run --plan` and then `scalebench finish-launch`, which records how the launch
//! ended; a last job (`--dependency=afterany` on all others) runs `scalebench collect`, which
//! merges everything into `results.json` and records which jobs failed or never ran.
//! Submitting into an existing run submits only the cases that are missing or failed.

mod collect;
mod finish;
mod status;
mod submission;
mod tool;

pub use self::collect::{collect, CollectRecord};
pub use self::finish::{finish_launch, watch_launch};
pub use self::status::status;
pub use self::submission::{submit, SubmitRequest};
pub(crate) use self::tool::run_tool;
pub use self::tool::ToolError;
pub use super::jobs::{AttemptState, JobRecord, JobsFile, Submission, JOBS_FILE};
pub use super::links_step::LinksStepState;
pub const COLLECT_FILE: &str = "collect.json";
