//! What a sweep plan will cost before anything runs: the cases the run will record as skipped
//! (a size a collective cannot split over the launch's devices, e.g. 8 B over 2 devices for
//! all-gather) and an estimated duration, so `plan` can say both (issue 45).

use super::sweep::SweepPlan;
use crate::params::counts::{counts, CountError};
use std::collections::BTreeSet;

/// Share of the time budget the automatic warm-up takes (measure: `fit(budget × 0.2)`).
const WARMUP_SHARE: f64 = 0.2;
/// Share of the time budget the cold probes take (measure: `probe_count`, 0.1 × budget).
const PROBE_SHARE: f64 = 0.1;
/// Start-up of one launch assumed by the estimate (MPI start, topology, the ceilings from the
/// host cache), seconds: an assumption printed beside the figure, not a measurement.
pub const LAUNCH_STARTUP_S: f64 = 2.0;

/// Cases the run will skip for one reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipReason {
    /// The run's own words for it (the size rule's error).
    pub why: String,
    pub cases: usize,
    /// The workloads concerned, by wire name.
    pub workloads: BTreeSet<&'static str>,
}

/// The planned cases the run will record as skipped, grouped by reason in plan order. The
/// rule is the one the collectives apply (`counts`, `TooSmall` → skipped); other sizes the
/// collective refuses fail rather than skip and are not counted here.
pub fn skipped(plan: &SweepPlan) -> Vec<SkipReason> {
    let mut out: Vec<SkipReason> = Vec::new();
    for l in &plan.launches {
        for c in &l.cases {
            let (Some(bytes), true) = (c.requested_bytes, c.workload.is_collective()) else {
                continue;
            };
            let Err(e @ CountError::TooSmall { .. }) =
                counts(c.workload, bytes, c.dtype, l.shape.devices())
            else {
                continue;
            };
            let why = e.to_string();
            match out.iter_mut().find(|r| r.why == why) {
                Some(r) => {
                    r.cases += 1;
                    r.workloads.insert(c.workload.name());
                }
                None => out.push(SkipReason {
                    why,
                    cases: 1,
                    workloads: BTreeSet::from([c.workload.name()]),
                }),
            }
        }
    }
    out
}

/// Estimated seconds for the plan run one launch at a time: each case that runs takes its
/// launch's time budget plus warm-up and probes, each launch [`LAUNCH_STARTUP_S`]. `None`
/// where a launch fixes its iterations (its time then depends on each case's speed).
pub fn eta_s(plan: &SweepPlan, skipped_cases: usize) -> Option<f64> {
    let mut total = 0.0;
    let mut cases = 0usize;
    for l in &plan.launches {
        let p = &l.settings.policy;
        if p.iters.is_some() {
            return None;
        }
        total += LAUNCH_STARTUP_S;
        total += l.cases.len() as f64 * p.time_budget_s * (1.0 + WARMUP_SHARE + PROBE_SHARE);
        cases += l.cases.len();
    }
    // Skipped cases end before their warm-up: take them out at the launches' mean cost.
    let per_case = if cases == 0 {
        0.0
    } else {
        (total - plan.launches.len() as f64 * LAUNCH_STARTUP_S) / cases as f64
    };
    Some(total - per_case * skipped_cases.min(cases) as f64)
}

/// `h:mm:ss`, rounded up to the second.
fn clock(s: f64) -> String {
    let s = s.max(0.0).ceil() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The lines `plan` prints: the ETA (or why there is none) and the skip warning, if any.
pub fn lines(plan: &SweepPlan) -> Vec<String> {
    let skips = skipped(plan);
    let n_skipped: usize = skips.iter().map(|r| r.cases).sum();
    let total = plan.case_count();
    let mut out = vec![match eta_s(plan, n_skipped) {
        Some(s) => format!(
            "# ETA about {} one launch at a time (estimate: each case its time budget plus {:.0} % for warm-up and probes, each launch {LAUNCH_STARTUP_S:.0} s start-up; measured case times replace it in `status` and the sweep's progress line)",
            clock(s),
            (WARMUP_SHARE + PROBE_SHARE) * 100.0
        ),
        None => "# ETA unknown: a launch fixes its iterations (--iters), so its time depends on each case's speed".to_string(),
    }];
    out.extend(skip_warning_of(&skips, total));
    out
}

/// The warning that `n` of the plan's cases will be skipped, and why; `None` when none will.
pub fn skip_warning(plan: &SweepPlan) -> Option<String> {
    skip_warning_of(&skipped(plan), plan.case_count())
}

fn skip_warning_of(skips: &[SkipReason], total: usize) -> Option<String> {
    let n_skipped: usize = skips.iter().map(|r| r.cases).sum();
    (n_skipped > 0).then(|| {
        let shown: Vec<String> = skips
            .iter()
            .take(4)
            .map(|r| {
                format!(
                    "{} ({}): {}",
                    crate::units::count(r.cases, "case", "cases"),
                    r.workloads.iter().copied().collect::<Vec<_>>().join(", "),
                    r.why
                )
            })
            .collect();
        let more = match skips.len() {
            0..=4 => String::new(),
            n => format!("; and {} more reasons", n - 4),
        };
        format!(
            "# warning: {n_skipped} of {total} cases will be skipped (recorded as skipped, nothing measured): {}{more}",
            shown.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::sweep::SweepPlan;

    fn plan_of(spec: &str) -> SweepPlan {
        let s = crate::config::parse(std::path::Path::new("t.toml"), spec).unwrap();
        crate::plan::sweep::expand(&s).unwrap()
    }

    #[test]
    fn small_sizes_over_two_devices_are_counted_as_skipped_for_split_collectives_only() {
        let p = plan_of(
            "name = \"t\"\n[axes]\nworkloads = [\"allreduce\", \"allgather\", \"alltoall\"]\ndevices_per_node = 2\nsizes = \"8B,1KiB\"\nin_place = \"no\"\n",
        );
        let s = skipped(&p);
        assert_eq!(s.len(), 1, "{s:?}");
        // 8 B over 2 devices: all-gather and all-to-all split it, all-reduce does not
        assert_eq!(s[0].cases, 2, "{s:?}");
        assert_eq!(
            s[0].workloads.iter().copied().collect::<Vec<_>>(),
            ["allgather", "alltoall"]
        );
        assert!(s[0].why.contains("8 bytes over 2 devices"), "{}", s[0].why);
        let l = lines(&p);
        assert!(l[1].contains("2 of 6 cases will be skipped"), "{l:?}");
    }

    #[test]
    fn the_eta_counts_budgets_and_launches_and_leaves_out_skipped_cases() {
        let p = plan_of(
            "name = \"t\"\n[axes]\nworkloads = [\"allgather\"]\ndevices_per_node = 2\nsizes = \"8B,1KiB\"\nin_place = \"no\"\n[run]\ntime_budget_s = 1.0\n",
        );
        // one launch, 2 cases of 1.3 s, one skipped: 2 s + 1.3 s
        let s = eta_s(&p, 1).unwrap();
        assert!((s - (LAUNCH_STARTUP_S + 1.3)).abs() < 1e-9, "{s}");
        assert!((eta_s(&p, 0).unwrap() - (LAUNCH_STARTUP_S + 2.6)).abs() < 1e-9);
    }
}
