//! The `ddp_step` part of reports: where a training step's time goes per set-up and device
//! count (compute vs exposed communication), overlap efficiency per bucket size, and the
//! scaling efficiency of step time. Also the live console's rows for ddp_step cases.
//!
//! The points and the scaling efficiency are the analysis in [`super::analyze::ddp`] (shared
//! with the charts of [`super::plot::ddp`]); this file only writes them down.
//!
//! Cases that cannot represent their set-up (oversubscribed, emulated nodes, a progress
//! thread sharing a core, …) are shown, marked, and kept out of scaling efficiencies unless
//! `--include-unrepresentative`, as in every other section.

use super::analyze::ddp::{points, scaling_efficiency, Point};
use super::analyze::{kinds_text, Analysis};
use super::plot::{Figure, FigureKind};
use crate::params::Workload;
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, NumFmt, Table};
use std::collections::BTreeMap;

/// `yes`, or `no: <kinds>` (and `, included` when the user let it into conclusions).
fn representative_cell(p: &Point) -> String {
    if p.concerns.is_empty() {
        "yes".into()
    } else if p.usable {
        format!("no: {} (included)", kinds_text(&p.concerns))
    } else {
        format!("no: {}", kinds_text(&p.concerns))
    }
}

/// One bucket capacity's figures for one set-up.
struct BucketRow {
    bucket_bytes: u64,
    efficiency: Option<f64>,
    step_s: f64,
    digits: u8,
}

/// Adds `figs`' ddp_step charts of kind `kind` (their index in `figs` is the figure number).
fn add_figures(doc: &mut Doc, figs: &[Figure], kind: FigureKind) {
    for (i, f) in figs.iter().enumerate() {
        if f.kind == kind && f.workload == Workload::DdpStep {
            super::document::push_figure(doc, i, f);
        }
    }
}

/// Adds the ddp_step section (nothing when no case is a measured ddp_step), with the charts
/// of [`super::plot::ddp`] among `figs`.
pub(crate) fn section(doc: &mut Doc, a: &Analysis<'_>, figs: &[Figure]) {
    let pts = points(a);
    if pts.is_empty() {
        return;
    }
    doc.heading(2, "Training step (ddp_step)");
    doc.prose(crate::report::long_text::DDP_STEP);
    let left_out = pts.iter().filter(|p| !p.usable).count();
    if left_out > 0 {
        doc.para(vec![text(format!(
            "{} (see the representative column): shown, greyed in the charts, and without a scaling efficiency. --include-unrepresentative uses {}, marked.",
            if left_out == 1 { "1 row cannot represent its set-up".to_string() } else { format!("{left_out} rows cannot represent their set-up") },
            if left_out == 1 { "it" } else { "them" }
        ))]);
    }
    doc.table(step_table(&pts), "ddp_step", None);
    add_figures(doc, figs, FigureKind::DdpBreakdown);
    let by_bucket = bucket_rows(&pts);
    if !by_bucket.is_empty() {
        doc.para(vec![text(
            "Overlap efficiency and step time against the bucket capacity (set-ups measured with several):",
        )]);
        doc.table(bucket_table(by_bucket), "ddp_step_buckets", None);
        add_figures(doc, figs, FigureKind::DdpOverlap);
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
        "imbalance_s",
        "exposed_comm_s",
        "exposed 95 % interval",
        "exposed share",
        "comm_s",
        "no-overlap step_s",
        "overlap efficiency",
        "samples/s",
        "scaling efficiency",
        "representative",
    ]);
    // The base of each set-up's efficiency: its smallest device count among usable points.
    let mut base: BTreeMap<&str, (u32, f64)> = BTreeMap::new();
    for p in pts.iter().filter(|p| p.usable) {
        base.entry(&p.setup).or_insert((p.devices, p.step_s));
    }
    for p in pts {
        let efficiency = base
            .get(p.setup.as_str())
            .filter(|_| p.usable)
            .and_then(|&(p0, t0)| scaling_efficiency(p.scaling, p0, t0, p.devices, p.step_s));
        // as many digits as the step samples' spread supports
        let secs = NumFmt::MeasuredSeconds(p.digits);
        t.push(vec![
            Cell::text(p.setup.clone()),
            Cell::UInt(u64::from(p.nodes)),
            Cell::UInt(u64::from(p.devices)),
            Cell::num(p.step_s, secs),
            Cell::num(p.compute_s, secs),
            Cell::opt(p.compute_imbalance_s, secs),
            Cell::num(p.exposed_comm_s, secs),
            Cell::text(p.exposed_comm_ci_s.map_or("-".into(), |[lo, hi]| {
                // the step's digits: the interval is of the same noisy figure
                let at = |x| crate::present::table::format_num(x, secs);
                format!("{} … {}", at(lo), at(hi))
            })),
            Cell::num(
                {
                    // a share of the step the parts add up to (older files: step_s)
                    let whole = p.step_slowest_s.unwrap_or(p.step_s);
                    if whole > 0.0 {
                        p.exposed_comm_s / whole
                    } else {
                        f64::NAN
                    }
                },
                NumFmt::Percent,
            ),
            Cell::num(p.comm_s, secs),
            Cell::num(p.step_no_overlap_s, secs),
            Cell::opt(p.overlap_efficiency, NumFmt::Percent),
            Cell::num(p.samples_per_s, NumFmt::Measured(p.digits)),
            Cell::opt(efficiency, NumFmt::Percent),
            Cell::text(representative_cell(p)),
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
                    digits: p.digits,
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
                Cell::num(r.step_s, NumFmt::MeasuredSeconds(r.digits)),
            ]);
        }
    }
    t
}
