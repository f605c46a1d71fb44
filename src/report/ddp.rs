//! The `ddp_step` part of reports: where a training step's time goes per set-up and device
//! count (compute vs exposed communication), overlap efficiency per bucket size, and the
//! scaling efficiency of step time. Also the live console's rows for ddp_step cases.
//!
//! Scaling efficiency follows the measurement notes: weak scaling (fixed batch per device)
//! E(p) = T(p₀) / T(p); strong scaling (fixed global batch) E(p) = p₀·T(p₀) / (p·T(p)), where
//! p₀ is the smallest device count measured for the set-up (1 when measured).

use super::plot::Figure;
use crate::params::{CaseParams, Scaling, Workload};
use crate::present::doc::{text, Block, Doc, FigureBlock};
use crate::present::table::{Cell, NumFmt, Table};
use crate::results::schema::{CaseResult, CaseStatus};
use std::collections::BTreeMap;

/// A ddp_step set-up: everything but the device count (nodes × devices per node).
fn setup_key(p: &CaseParams) -> String {
    format!(
        "{} {} {} bucket={} batch={} {} {} {}{}",
        p.model.as_deref().unwrap_or("-"),
        p.dtype,
        p.backend,
        p.bucket_bytes
            .map_or("-".into(), crate::units::format_bytes),
        p.batch.map_or("-".into(), |b| b.to_string()),
        p.scaling.map_or("-".into(), |s| s.to_string()),
        p.topology,
        p.binding,
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
    pub exposed_comm_s: f64,
    pub comm_s: f64,
    pub step_no_overlap_s: f64,
    pub overlap_efficiency: Option<f64>,
    pub samples_per_s: f64,
    pub bucket_bytes: Option<u64>,
}

/// The measured (ok) ddp_step cases, in set-up then device-count order.
pub(crate) fn points<'a>(cases: impl IntoIterator<Item = &'a CaseResult>) -> Vec<Point> {
    let mut v: Vec<Point> = cases
        .into_iter()
        .filter(|c| c.params.workload == Workload::DdpStep && c.status == CaseStatus::Ok)
        .filter_map(|c| {
            let m = c.ddp.as_ref()?;
            Some(Point {
                setup: setup_key(&c.params),
                devices: c.devices,
                nodes: c.params.nodes,
                scaling: c.params.scaling.unwrap_or(Scaling::Weak),
                step_s: m.step_s,
                compute_s: m.compute_s,
                exposed_comm_s: m.exposed_comm_s,
                comm_s: m.comm_s,
                step_no_overlap_s: m.step_no_overlap_s,
                overlap_efficiency: m.overlap_efficiency,
                samples_per_s: m.samples_per_s,
                bucket_bytes: c.params.bucket_bytes,
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

/// One bucket capacity's figures for one set-up.
struct BucketRow {
    bucket_bytes: u64,
    efficiency: Option<f64>,
    step_s: f64,
}

/// Adds `figs`' ddp_step charts of kind `kind` (their index in `figs` is the figure number).
fn add_figures(doc: &mut Doc, figs: &[Figure], kind: &str) {
    for (i, f) in figs.iter().enumerate() {
        if f.kind == kind && f.workload == Workload::DdpStep {
            doc.blocks.push(Block::Figure(FigureBlock {
                figure: i,
                stem: f.stem.clone(),
                title: f.title.clone(),
                caption: f.caption.clone(),
            }));
        }
    }
}

/// Adds the ddp_step section (nothing when no case is a measured ddp_step), with the charts
/// of [`super::plot::ddp`] among `figs`.
pub(crate) fn section<'a>(
    doc: &mut Doc,
    cases: impl IntoIterator<Item = &'a CaseResult>,
    figs: &[Figure],
) {
    let pts = points(cases);
    if pts.is_empty() {
        return;
    }
    doc.heading(2, "Training step (ddp_step)");
    doc.prose(
        "Each row is one data-parallel step: `compute_s` is the step without communication, `exposed_comm_s = step_s − compute_s` the communication the step did not hide (the stacked parts of the step), `comm_s` the all-reduces alone, `overlap_efficiency = 1 − exposed_comm_s / comm_s` (clamped to [0, 1]). Scaling efficiency compares step times with the set-up's smallest device count: weak T(p₀)/T(p), strong p₀·T(p₀)/(p·T(p)).",
    );
    doc.table(step_table(&pts), "ddp_step", None);
    add_figures(doc, figs, "ddp_breakdown");
    let by_bucket = bucket_rows(&pts);
    if !by_bucket.is_empty() {
        doc.para(vec![text(
            "Overlap efficiency and step time against the bucket capacity (set-ups measured with several):",
        )]);
        doc.table(bucket_table(by_bucket), "ddp_step_buckets", None);
        add_figures(doc, figs, "ddp_overlap");
    }
}

/// One row per step: the time and its parts, overlap, throughput and scaling efficiency.
fn step_table(pts: &[Point]) -> Table {
    let mut t = Table::new(&[
        "set-up",
        "nodes",
        "devices",
        "step_s",
        "compute_s",
        "exposed_comm_s",
        "exposed share",
        "comm_s",
        "no-overlap step_s",
        "overlap efficiency",
        "samples/s",
        "scaling efficiency",
    ]);
    let mut base: BTreeMap<&str, (u32, f64)> = BTreeMap::new();
    for p in pts {
        let (p0, t0) = *base.entry(&p.setup).or_insert((p.devices, p.step_s));
        t.push(vec![
            Cell::text(p.setup.clone()),
            Cell::UInt(u64::from(p.nodes)),
            Cell::UInt(u64::from(p.devices)),
            Cell::num(p.step_s, NumFmt::Seconds),
            Cell::num(p.compute_s, NumFmt::Seconds),
            Cell::num(p.exposed_comm_s, NumFmt::Seconds),
            Cell::num(
                if p.step_s > 0.0 {
                    p.exposed_comm_s / p.step_s
                } else {
                    f64::NAN
                },
                NumFmt::Percent,
            ),
            Cell::num(p.comm_s, NumFmt::Seconds),
            Cell::num(p.step_no_overlap_s, NumFmt::Seconds),
            Cell::opt(p.overlap_efficiency, NumFmt::Percent),
            Cell::num(p.samples_per_s, NumFmt::Sig),
            Cell::opt(
                scaling_efficiency(p.scaling, p0, t0, p.devices, p.step_s),
                NumFmt::Percent,
            ),
        ]);
    }
    t
}

/// Overlap efficiency against bucket size: per set-up without the bucket, nodes and devices,
/// the steps with a bucket, where a set-up was measured with several.
fn bucket_rows(pts: &[Point]) -> BTreeMap<(String, u32, u32), Vec<BucketRow>> {
    let mut by_bucket: BTreeMap<(String, u32, u32), Vec<BucketRow>> = BTreeMap::new();
    for p in pts {
        if let Some(b) = p.bucket_bytes {
            let key = p
                .setup
                .split_whitespace()
                .filter(|w| !w.starts_with("bucket="))
                .collect::<Vec<_>>()
                .join(" ");
            by_bucket
                .entry((key, p.nodes, p.devices))
                .or_default()
                .push(BucketRow {
                    bucket_bytes: b,
                    efficiency: p.overlap_efficiency,
                    step_s: p.step_s,
                });
        }
    }
    by_bucket.retain(|_, v| v.len() > 1);
    by_bucket
}

/// The [`bucket_rows`] table, each set-up's rows by bucket size.
fn bucket_table(by_bucket: BTreeMap<(String, u32, u32), Vec<BucketRow>>) -> Table {
    let mut t = Table::new(&[
        "set-up",
        "nodes",
        "devices",
        "bucket",
        "overlap efficiency",
        "step_s",
    ]);
    for ((setup, nodes, devices), mut v) in by_bucket {
        v.sort_by_key(|x| x.bucket_bytes);
        for r in v {
            t.push(vec![
                Cell::text(setup.clone()),
                Cell::UInt(u64::from(nodes)),
                Cell::UInt(u64::from(devices)),
                Cell::num(r.bucket_bytes as f64, NumFmt::Bytes),
                Cell::opt(r.efficiency, NumFmt::Percent),
                Cell::num(r.step_s, NumFmt::Seconds),
            ]);
        }
    }
    t
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
