//! The `ddp_step` analysis: the measured cases as [`Point`]s (per set-up and device count) and
//! the scaling efficiency of step time. Both the document side ([`crate::report::ddp`]) and
//! the charts ([`crate::report::plot::ddp`]) read it; it imports neither, which keeps the
//! plot from depending on the document.
//!
//! Scaling efficiency follows the measurement notes: weak scaling (fixed batch per device)
//! E(p) = T(p₀) / T(p); strong scaling (fixed global batch) E(p) = p₀·T(p₀) / (p·T(p)), where
//! p₀ is the smallest device count measured for the set-up (1 when measured).

use super::Analysis;
use crate::params::{CaseParams, Scaling, Workload};
use crate::results::schema::CaseStatus;
use std::collections::BTreeSet;

/// A ddp_step set-up: everything but the device count (nodes × devices per node). Every
/// parameter a ddp_step case can be swept over appears, so two set-ups never share a key.
fn setup_key(p: &CaseParams) -> String {
    let bytes = crate::units::format_bytes;
    format!(
        "{} {} {} bucket={} first={} batch={} {} {} {} {} {}{}",
        p.model.as_deref().unwrap_or("-"),
        p.dtype,
        p.backend,
        p.bucket_bytes.map_or("-".into(), bytes),
        match p.first_bucket_bytes {
            None => "-".into(),
            Some(0) => "cap".into(),
            Some(b) => bytes(b),
        },
        p.batch.map_or("-".into(), |b| b.to_string()),
        p.scaling.map_or("-".into(), |s| s.to_string()),
        p.topology,
        p.binding,
        p.placement,
        p.threads_per_device
            .map_or("-".into(), |t| format!("threads={t}")),
        p.progress
            .map_or(String::new(), |x| format!(" progress={x}")),
    )
}

/// One measured ddp_step case as the report uses it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    pub setup: String,
    pub devices: u32,
    pub nodes: u32,
    pub scaling: Scaling,
    pub step_s: f64,
    pub compute_s: f64,
    /// Slowest rank's compute beyond the mean's (absent in older files).
    pub compute_imbalance_s: Option<f64>,
    /// The step at the slowest rank's pace, which the parts add up to (absent in older files).
    pub step_slowest_s: Option<f64>,
    pub exposed_comm_s: f64,
    /// 95 % interval of `exposed_comm_s` (absent in older files).
    pub exposed_comm_ci_s: Option<[f64; 2]>,
    pub comm_s: f64,
    pub step_no_overlap_s: f64,
    pub overlap_efficiency: Option<f64>,
    pub samples_per_s: f64,
    pub bucket_bytes: Option<u64>,
    /// Significant digits its step figures support (the spread of its step samples).
    pub digits: u8,
    /// Why the case cannot represent its set-up (kinds; empty: representative).
    pub concerns: BTreeSet<String>,
    /// Whether it may support a conclusion (representative, or included by the user).
    pub usable: bool,
}

/// The measured (ok) ddp_step cases, in set-up then device-count order.
pub(crate) fn points(a: &Analysis<'_>) -> Vec<Point> {
    let mut v: Vec<Point> = a
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.case.params.workload == Workload::DdpStep && e.case.status == CaseStatus::Ok
        })
        .filter_map(|(i, e)| {
            let c = e.case;
            let m = c.ddp.as_ref()?;
            Some(Point {
                concerns: e.concern_kinds(),
                usable: a.usable(i),
                setup: setup_key(&c.params),
                devices: c.devices,
                nodes: c.params.nodes,
                scaling: c.params.scaling.unwrap_or(Scaling::Weak),
                step_s: m.step_s,
                compute_s: m.compute_s,
                compute_imbalance_s: m.compute_imbalance_s,
                step_slowest_s: m.step_slowest_s,
                exposed_comm_s: m.exposed_comm_s,
                exposed_comm_ci_s: m.exposed_comm_ci_s,
                comm_s: m.comm_s,
                step_no_overlap_s: m.step_no_overlap_s,
                overlap_efficiency: m.overlap_efficiency,
                samples_per_s: m.samples_per_s,
                bucket_bytes: c.params.bucket_bytes,
                digits: e.digits(),
            })
        })
        .collect();
    v.sort_by(|a, b| {
        (a.setup.as_str(), a.devices, a.nodes).cmp(&(b.setup.as_str(), b.devices, b.nodes))
    });
    v
}

/// Scaling efficiency of step time against the set-up's smallest device count (pure; see
/// the module docs). `None` for a non-positive time.
pub(crate) fn scaling_efficiency(
    scaling: Scaling,
    p0: u32,
    t0_s: f64,
    p: u32,
    t_s: f64,
) -> Option<f64> {
    if t0_s <= 0.0 || t_s <= 0.0 || p == 0 {
        return None;
    }
    Some(match scaling {
        Scaling::Weak => t0_s / t_s,
        Scaling::Strong => f64::from(p0) * t0_s / (f64::from(p) * t_s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_efficiency_follows_the_definitions() {
        // weak: same time at 4 devices = 100 %; twice the time = 50 %
        assert_eq!(scaling_efficiency(Scaling::Weak, 1, 2.0, 4, 2.0), Some(1.0));
        assert_eq!(scaling_efficiency(Scaling::Weak, 1, 2.0, 4, 4.0), Some(0.5));
        // strong: 4 devices, a quarter of the time = 100 %
        assert_eq!(
            scaling_efficiency(Scaling::Strong, 1, 4.0, 4, 1.0),
            Some(1.0)
        );
        assert_eq!(
            scaling_efficiency(Scaling::Strong, 2, 4.0, 4, 4.0),
            Some(0.5)
        );
        assert_eq!(scaling_efficiency(Scaling::Weak, 1, 0.0, 4, 1.0), None);
    }
}
