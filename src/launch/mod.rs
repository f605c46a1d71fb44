//! Launching: running a plan's launches and keeping their results.
//!
//! - [`local`]: `scalebench sweep` on this machine (one `mpirun` per launch).
//! - [`submit`]: `scalebench submit/status/collect` through a scheduler, with [`scripts`]
//!   (Slurm, UGE, PBS), site [`profile`]s and [`shell`] safety.
//! - [`rundir`]: the run directory layout and merging it into one results file.
//! - [`process`]: child processes that can always be stopped.
//! - [`jobs`]: where a submitted run's jobs (array tasks) stand; [`progress`]: the live line.

pub mod error;
pub(crate) mod fatal;
pub(crate) mod jobs;
pub(crate) mod links_step;
pub mod local;
pub mod plan_cmd;
pub(crate) mod process;
pub(crate) mod profile;
pub(crate) mod progress;
pub(crate) mod rundir;
pub(crate) mod scripts;
pub(crate) mod shell;
pub mod submit;
pub(crate) mod sweep_end;

use crate::plan::sweep::SweepPlan;
use std::fmt::Write;

/// `scalebench plan`: the launches a sweep groups into and, with `cases`, every case.
pub fn describe(name: &str, spec: &std::path::Path, plan: &SweepPlan, cases: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {name} ({}): {} in {}",
        spec.display(),
        crate::units::count(plan.case_count(), "case", "cases"),
        crate::units::count(plan.launches.len(), "launch", "launches")
    );
    for (i, l) in plan.launches.iter().enumerate() {
        let _ = writeln!(
            s,
            "launch {:>3}  {}  {:<40} {:>9} × {}/rank{}  {:>11}",
            i + 1,
            l.launch_id,
            l.shape.label(),
            crate::units::count(l.shape.ranks() as usize, "rank", "ranks"),
            crate::units::count(l.shape.devices_per_rank() as usize, "device", "devices"),
            if l.threads_per_device > 1 {
                format!(", {} GEMM threads/device", l.threads_per_device)
            } else {
                String::new()
            },
            crate::units::count(l.cases.len(), "case", "cases")
        );
        if cases {
            for c in &l.cases {
                let _ = writeln!(s, "    {}  {}", c.id(), c.label());
            }
        }
    }
    for x in &plan.links {
        let _ = writeln!(
            s,
            "links   {:<12} {:<40} {}",
            x.id,
            x.label(),
            match &x.skipped {
                Some(why) => format!("not run: {why}"),
                None => "before the launches, into links/".to_string() + &x.id,
            }
        );
    }
    s
}
