//! Ceilings and hardware: the figures far below the ceiling that bounds them at their largest
//! size, and the hardware problems the launches recorded (a link down or negotiated down, error
//! counters that grew, a GEMM kernel older than the CPU), each grouped and cited by a finding.

use super::findings::{Finding, Findings, Sentence};
use super::{bytes_cell, setup_text};
use crate::params::Workload;
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{variant_label, Analysis};
use crate::report::ceilings::{self as ceil, HardwareWarning};
use std::collections::BTreeMap;

pub(super) fn ceilings(doc: &mut Doc, a: &Analysis<'_>, found: &mut Findings) {
    let far = far_below(a);
    let warnings = ceil::hardware_warnings(a);
    if far.is_empty() && warnings.is_empty() {
        return;
    }
    doc.heading(2, "Ceilings and hardware");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    if !warnings.is_empty() {
        doc.para(vec![text("What the hosts' hardware reported wrong during the launches (the same problem on several launches or hosts is one row), most severe first. A figure that crossed such a link or ran such a kernel is bounded by it, not by the set-up.")]);
        let t = warnings_table(&warnings);
        let list = warning_findings(&t, &section);
        found.cite(doc.table(t, "hardware_warnings", None), list);
    }
    if !far.is_empty() {
        doc.para(vec![text(format!(
            "Set-ups whose figure at their largest size is below {:.0} % of the ceiling that bounds it, less the ceiling's own uncertainty (a measured CPU ceiling's spread over its rounds, at least 20 %; a figure within it is not judged): the hardware allows more than they reach (or the ceiling is not the bound that matters, e.g. caches, or a size too small to reach it). Fractions are of the ceiling's value as the launch recorded it, per CPU ceilings times the CPUs the figure used.",
            ceil::FAR_BELOW * 100.0
        ))]);
        let t = far_table(a, &far);
        let list = far_findings(a, &t, &far, &section);
        found.cite(doc.table(t, "below_ceiling", None), list);
    }
}

/// One set-up far below its ceiling at its largest size.
struct Far {
    /// The entry at the largest size.
    entry: usize,
    figure: &'static str,
    frac: f64,
}

/// Every usable set-up (parameters equal but the size) whose figure at its largest size is
/// below [`ceil::FAR_BELOW`] of its ceiling less the ceiling's uncertainty
/// ([`ceil::far_below_frac`]); the lowest fraction first within a workload.
fn far_below(a: &Analysis<'_>) -> Vec<Far> {
    let mut largest: BTreeMap<(Workload, String), (f64, usize)> = BTreeMap::new();
    for (i, e) in a.entries.iter().enumerate() {
        if !a.usable(i) || e.time_s().is_none() {
            continue;
        }
        let p = e.params();
        let size = match (p.workload.is_collective(), p.shape) {
            (true, _) => e.bytes().map(|b| b as f64),
            (false, Some(s)) => Some(s.flops()),
            (false, None) => None,
        };
        let Some(size) = size else { continue };
        let mut k = p.clone();
        k.requested_bytes = None;
        k.shape = None;
        let slot = largest
            .entry((p.workload, k.canonical()))
            .or_insert((size, i));
        if size > slot.0 {
            *slot = (size, i);
        }
    }
    let mut out: Vec<Far> = largest
        .into_values()
        .filter_map(|(_, i)| {
            let e = &a.entries[i];
            let figure = if e.params().workload.is_collective() {
                ceil::BUSBW
            } else {
                ceil::GFLOPS
            };
            let frac = ceil::far_below_frac(ceil::peak(e, figure)?)?;
            Some(Far {
                entry: i,
                figure,
                frac,
            })
        })
        .collect();
    out.sort_by(|x, y| {
        let w = |f: &Far| a.entries[f.entry].params().workload;
        w(x).cmp(&w(y)).then(x.frac.total_cmp(&y.frac))
    });
    out
}

fn far_table(a: &Analysis<'_>, far: &[Far]) -> Table {
    let mut t = Table::new(&[
        "workload",
        "variant",
        "set-up",
        "largest size",
        "figure",
        "value",
        "fraction of ceiling",
        "ceiling",
        "bound",
        "ceiling source",
    ]);
    for f in far {
        let e = &a.entries[f.entry];
        let pf = ceil::peak(e, f.figure).expect("far_below keeps entries with a fraction");
        let c = ceil::ceiling_of(e, pf);
        let p = e.params();
        let (name, value) = if f.figure == ceil::BUSBW {
            ("busbw (GB/s)", e.case.busbw_gbps)
        } else {
            ("GFLOP/s per device", e.case.gflops)
        };
        t.push(vec![
            Cell::text(p.workload.to_string()),
            Cell::text(variant_label(p)),
            Cell::text(setup_text(a, &e.shape())),
            match (e.bytes(), p.shape) {
                (Some(b), _) if p.workload.is_collective() => bytes_cell(b),
                (_, Some(s)) => Cell::text(format!("{}×{}×{}", s.m, s.n, s.k)),
                _ => Cell::Empty,
            },
            Cell::text(name),
            Cell::opt(value, NumFmt::Measured(e.digits())),
            Cell::num(f.frac, NumFmt::Measured(e.digits())),
            Cell::text(pf.ceiling_id.clone()),
            Cell::text(c.map_or_else(
                || {
                    pf.bound.map_or("not in the provenance".into(), |b| {
                        crate::present::table::rounded(b, 3)
                    })
                },
                |c| ceil::ceiling_text(c, pf),
            )),
            Cell::text(c.map_or(String::new(), |c| {
                format!("{}: {}", c.source.name(), c.detail)
            })),
        ]);
    }
    t
}

/// One finding per workload and ceiling: the lowest set-up, and how many more are below.
fn far_findings(a: &Analysis<'_>, t: &Table, far: &[Far], section: &str) -> Vec<Finding> {
    let mut groups: BTreeMap<(Workload, String), Vec<usize>> = BTreeMap::new();
    for (r, f) in far.iter().enumerate() {
        groups
            .entry((a.entries[f.entry].params().workload, t.rows[r][7].raw()))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((workload, _), rows) in groups {
        // rows are sorted lowest fraction first within a workload
        let r = rows[0];
        let more = rows.len() - 1;
        let figure = if far[r].figure == ceil::BUSBW {
            "busbw"
        } else {
            "GFLOP/s per device"
        };
        let mut s = Sentence::new(t, r)
            .text(format!("{figure} at the largest size ("))
            .fig("largest size")
            .text(") on ")
            .fig("set-up")
            .text(" (")
            .fig("variant")
            .text(") is ")
            .fig("fraction of ceiling")
            .text(" of its ceiling ")
            .fig("ceiling")
            .text(" (")
            .fig("bound")
            .text(")");
        if more > 0 {
            s = s.text(format!(
                "; {} below {:.0} % of the same ceiling",
                crate::units::count(more, "more set-up is", "more set-ups are"),
                ceil::FAR_BELOW * 100.0
            ));
        }
        let f = s
            .text(".")
            .done(format!("{workload}: far below its ceiling"), None, section);
        out.push(f.about(workload));
    }
    out
}

fn warnings_table(ws: &[HardwareWarning]) -> Table {
    let mut t = Table::new(&["kind", "subject", "hosts", "launches", "message"]);
    for w in ws {
        t.push(vec![
            Cell::text(w.kind.name()),
            Cell::text(w.subject.clone()),
            Cell::text(w.hosts.iter().cloned().collect::<Vec<_>>().join(", ")),
            Cell::UInt(w.launches as u64),
            Cell::text(w.message.clone()),
        ]);
    }
    t
}

/// One finding per row of the warnings table (already grouped and in severity order); set-up
/// findings, as they bound every figure measured across them.
fn warning_findings(t: &Table, section: &str) -> Vec<Finding> {
    (0..t.rows.len())
        .map(|r| {
            let hosts = t.rows[r][2].raw();
            let n_hosts = hosts.split(", ").filter(|h| !h.is_empty()).count();
            let launches: usize = t.rows[r][3].raw().parse().unwrap_or(0);
            Sentence::new(t, r)
                .fig("kind")
                .text(": ")
                .fig("subject")
                .text(format!(
                    " on {} {hosts} ({} in ",
                    if n_hosts == 1 { "host" } else { "hosts" },
                    crate::units::count(n_hosts, "host", "hosts")
                ))
                .fig("launches")
                .text(format!(
                    " {}): ",
                    if launches == 1 { "launch" } else { "launches" }
                ))
                .fig("message")
                .text(if t.rows[r][4].raw().ends_with('.') {
                    ""
                } else {
                    "."
                })
                .done("Set-up", None, section)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ceilings::WarningKind;
    use std::collections::BTreeSet;

    fn warning(
        kind: WarningKind,
        subject: &str,
        hosts: &[&str],
        launches: usize,
    ) -> HardwareWarning {
        HardwareWarning {
            kind,
            subject: subject.into(),
            message: format!("{subject} is wrong"),
            hosts: hosts.iter().map(|h| h.to_string()).collect::<BTreeSet<_>>(),
            launches,
        }
    }

    #[test]
    fn a_grouped_warning_is_one_finding_naming_its_hosts_and_launch_count() {
        let ws = [
            warning(WarningKind::LinkDown, "mlx5_1 port 1", &["n1"], 1),
            warning(
                WarningKind::NegotiatedDown,
                "mlx5_0 port 1",
                &["n1", "n2"],
                3,
            ),
        ];
        let t = warnings_table(&ws);
        let f = warning_findings(&t, "ceilings-and-hardware");
        assert_eq!(f.len(), 2);
        let sentence = |f: &Finding| {
            f.parts
                .iter()
                .map(|p| match p {
                    super::super::findings::Part::Text(s) => s.clone(),
                    super::super::findings::Part::Fig { cell, .. } => cell.display(),
                })
                .collect::<String>()
        };
        assert_eq!(
            sentence(&f[0]),
            "link down: mlx5_1 port 1 on host n1 (1 host in 1 launch): mlx5_1 port 1 is wrong."
        );
        assert_eq!(
            sentence(&f[1]),
            "negotiated down: mlx5_0 port 1 on hosts n1, n2 (2 hosts in 3 launches): mlx5_0 port 1 is wrong."
        );
        assert!(f.iter().all(|x| x.topic == "Set-up"));
    }
}
