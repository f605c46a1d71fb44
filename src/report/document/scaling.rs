//! Scaling across devices and nodes: GEMM speedup and efficiency series, and collectives'
//! busbw retention across device counts.

use super::add_figures;
use super::bytes_cell;
use super::findings::{chart_of, Finding, Findings, Sentence};
use crate::params::Workload;
use crate::present::doc::{text, Doc, Span};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{kinds_text, Analysis, CollScale, ScaleSeries};
use crate::report::ceilings as ceil;
use crate::report::derive::{self, ScalingKind};
use crate::report::plot::{Figure, FigureKind};

pub(super) fn scaling(doc: &mut Doc, a: &Analysis<'_>, figs: &[Figure], found: &mut Findings) {
    if a.scaling.is_empty() && a.coll_scaling.is_empty() {
        return;
    }
    doc.heading(2, "Scaling across devices and nodes");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    doc.prose("Each series holds everything fixed except the layout (nodes × devices per node). When two layouts share a device count (1×4 and 2×2), scaling within one node and scaling over nodes are separate series. The baseline of every series is its smallest device count, named in the table.");
    let mut wls: Vec<Workload> = a.scaling.iter().map(|s| s.workload).collect();
    wls.dedup();
    for w in wls {
        doc.heading(3, format!("{w}: speedup and efficiency"));
        add_figures(doc, figs, FigureKind::Scaling, w);
        for s in a.scaling.iter().filter(|s| s.workload == w) {
            gemm_series_table(doc, a, s, figs, found, &section);
        }
    }
    // Retention needs two device counts that move data (≥ 2): with one, R = 1 everywhere.
    let (retained, single): (Vec<&CollScale>, Vec<&CollScale>) = a
        .coll_scaling
        .iter()
        .filter(|c| c.charted)
        .partition(|c| c.layouts.iter().filter(|l| l.devices() >= 2).count() >= 2);
    for cs in retained {
        coll_scale_table(doc, a, cs, found, &section);
    }
    if !single.is_empty() {
        let names: std::collections::BTreeSet<String> =
            single.iter().map(|c| c.workload.to_string()).collect();
        doc.para(vec![text(format!(
            "No busbw retention for {}: one device count that moves data was measured, and retention compares two.",
            names.into_iter().collect::<Vec<_>>().join(", ")
        ))]);
    }
    let hidden = a.coll_scaling.iter().filter(|c| !c.charted).count();
    if hidden > 0 {
        doc.para(vec![text(format!(
            "{hidden} more collective series across devices (variants not charted) are summarised in the cost-model table below; every point is in results.csv."
        ))]);
    }
}

fn gemm_series_table(
    doc: &mut Doc,
    a: &Analysis<'_>,
    s: &ScaleSeries,
    figs: &[Figure],
    found: &mut Findings,
    section: &str,
) {
    let base = &a.entries[s.points[0]];
    let kind = match s.kind {
        ScalingKind::Strong => "strong",
        ScalingKind::Weak => "weak",
    };
    doc.para(vec![
        Span::Strong(format!("{} {}", s.workload, s.label)),
        text(format!(
            ", {kind} scaling, {}; baseline: {} ({}), time {}.",
            s.family.label(),
            base.layout().label(),
            crate::present::count(base.layout().devices() as usize, "device", "devices"),
            base.time_s()
                .map_or_else(|| "-".into(), crate::units::format_seconds)
        )),
    ]);
    let mut t = Table::new(&[
        "layout",
        "nodes",
        "devices",
        "time",
        "speedup",
        "ideal speedup",
        "efficiency",
        "efficiency low",
        "efficiency high",
        "runs",
        "GFLOP/s per device",
        "GFLOP/s per device / ceiling",
        "GFLOP/s aggregate",
        "cv",
    ]);
    for ((&i, sc), est) in s.points.iter().zip(&s.scaled).zip(&s.efficiency) {
        let e = &a.entries[i];
        let (lo, hi, runs) = est.map_or((None, None, None), |x| {
            (Some(x.low), Some(x.high), Some(x.runs as u64))
        });
        t.push(vec![
            Cell::text(e.layout().label()),
            Cell::UInt(u64::from(e.layout().nodes)),
            Cell::UInt(u64::from(e.layout().devices())),
            Cell::opt(e.time_s(), NumFmt::MeasuredSeconds(e.digits())),
            Cell::num(sc.speedup, NumFmt::Fixed(3)),
            Cell::num(sc.ideal_speedup, NumFmt::Fixed(3)),
            Cell::num(sc.efficiency, NumFmt::Fixed(3)),
            Cell::opt(lo, NumFmt::Fixed(3)),
            Cell::opt(hi, NumFmt::Fixed(3)),
            runs.map_or(Cell::Empty, Cell::UInt),
            Cell::opt(e.case.gflops, NumFmt::Measured(e.digits())),
            ceil::frac_cell(e, ceil::GFLOPS),
            Cell::opt(e.case.gflops_total, NumFmt::Measured(e.digits())),
            Cell::opt(e.spread.map(|x| x.cv), NumFmt::Percent),
        ]);
    }
    let list = efficiency_finding(a, s, &t, figs, section, kind);
    found.cite(doc.table(t, &format!("scaling_{}", s.workload), None), list);
    if let Some(n) = ceil::unknown_note(s.points.iter().map(|&i| &a.entries[i]), ceil::GFLOPS) {
        doc.prose(&n);
    }
}

/// The efficiency at the largest count, with its interval from both cases' spread: sub- or
/// superlinear when the whole interval lies on one side of 1 (superlinear with its likely
/// cause), no finding when the interval holds 1 (indistinguishable from ideal: noise).
fn efficiency_finding(
    a: &Analysis<'_>,
    s: &ScaleSeries,
    t: &Table,
    figs: &[Figure],
    section: &str,
    kind: &str,
) -> Vec<Finding> {
    let last = t.rows.len().saturating_sub(1);
    let Some(est) = s.efficiency.get(last).copied().flatten() else {
        return Vec::new();
    };
    if !s.charted || t.rows.len() < 2 {
        return Vec::new();
    }
    let call = derive::efficiency_call(est.low, est.high);
    if call == derive::EfficiencyCall::WithinNoise {
        return Vec::new();
    }
    let base = &a.entries[s.points[0]];
    let case = &a.entries[s.points[last]];
    let caveat = series_caveat(a, &s.points);
    let from = if est.runs >= 2 {
        format!("every run ({} a case)", est.runs)
    } else {
        "both cases' samples (p5–p95 of their pairwise ratios; one run each)".to_string()
    };
    let mut sentence = Sentence::new(t, last)
        .text(format!("{kind} scaling efficiency "))
        .fig("efficiency")
        .text(" at ")
        .fig("devices")
        .text(format!(
            " devices (layout {}, {}), against {}{caveat}; interval ",
            case.layout().label(),
            s.family.label(),
            crate::present::count(base.layout().devices() as usize, "device", "devices")
        ))
        .fig("efficiency low")
        .text(" – ")
        .fig("efficiency high")
        .text(format!(" from {from}"));
    if call == derive::EfficiencyCall::Superlinear {
        let cv = |e: &crate::report::analyze::Entry<'_>| e.spread.map_or(0.0, |x| x.cv);
        let sk = if kind == "strong" {
            ScalingKind::Strong
        } else {
            ScalingKind::Weak
        };
        sentence = sentence.text(format!(
            ": superlinear beyond its interval; likely cause: {}",
            derive::superlinear_cause(sk, cv(base), cv(case))
        ));
    }
    vec![sentence
        .text(".")
        .done(
            format!("{} {}", s.workload, s.label),
            chart_of(figs, FigureKind::Scaling, s.workload),
            section,
        )
        .headline()
        .about(s.workload)]
}

/// ` (caveat: ...)` when included entries are not representative.
fn series_caveat(a: &Analysis<'_>, points: &[usize]) -> String {
    let kinds: std::collections::BTreeSet<String> = points
        .iter()
        .flat_map(|&i| a.entries[i].concern_kinds())
        .collect();
    if kinds.is_empty() {
        String::new()
    } else {
        format!(" (caveat: not representative: {})", kinds_text(&kinds))
    }
}

fn coll_scale_table(
    doc: &mut Doc,
    a: &Analysis<'_>,
    cs: &CollScale,
    found: &mut Findings,
    section: &str,
) {
    doc.para(vec![
        Span::Strong(format!("{} {}", cs.workload, cs.label)),
        text(format!(
            ", {}: busbw (GB/s) per size and device count, with the retention R against {} in parentheses.",
            cs.family.label(),
            cs.retention_base()
                .map_or("-".to_string(), |b| format!("{} devices", cs.layouts[b].devices()))
        )),
    ]);
    let t = retention_table(a, cs);
    let list = retention_finding(a, cs, &t, section);
    found.cite(
        doc.table(t, &format!("busbw_vs_devices_{}", cs.workload), None),
        list,
    );
    let pts = cs
        .sizes
        .iter()
        .flat_map(|(_, v)| v.iter().flatten())
        .map(|&i| &a.entries[i]);
    if let Some(n) = ceil::unknown_note(pts, ceil::BUSBW) {
        doc.prose(&n);
    }
}

/// busbw per size and device count, and its retention R against the smallest count ≥ 2.
fn retention_table(a: &Analysis<'_>, cs: &CollScale) -> Table {
    let mut cols: Vec<String> = vec!["S".into()];
    for l in &cs.layouts {
        cols.push(format!("{} ({} dev) busbw", l.label(), l.devices()));
    }
    for l in &cs.layouts {
        cols.push(format!("{} R", l.label()));
    }
    for l in &cs.layouts {
        cols.push(format!("{} busbw / ceiling", l.label()));
    }
    let mut t = Table {
        columns: cols,
        rows: Vec::new(),
    };
    let base = cs.retention_base();
    for (req, row) in &cs.sizes {
        let bw: Vec<Option<f64>> = row
            .iter()
            .map(|e| {
                e.and_then(|i| a.entries[i].case.busbw_gbps)
                    .filter(|b| *b > 0.0)
            })
            .collect();
        let digits = |j: usize| row[j].map_or(4, |i| a.entries[i].digits());
        let b0 = base.and_then(|b| bw[b]);
        let mut cells = vec![bytes_cell(*req)];
        cells.extend(
            bw.iter()
                .enumerate()
                .map(|(j, b)| Cell::opt(*b, NumFmt::Measured(digits(j)))),
        );
        cells.extend(bw.iter().enumerate().map(|(j, b)| match (b, b0, base) {
            (Some(b), Some(b0), Some(k)) if j >= k => Cell::num(b / b0, NumFmt::Fixed(3)),
            _ => Cell::Empty,
        }));
        cells.extend(
            row.iter()
                .map(|e| e.map_or(Cell::Empty, |i| ceil::frac_cell(&a.entries[i], ceil::BUSBW))),
        );
        t.push(cells);
    }
    t
}

/// Retention at the largest scale, for the largest size measured there.
fn retention_finding(a: &Analysis<'_>, cs: &CollScale, t: &Table, section: &str) -> Vec<Finding> {
    let last = cs.layouts.len() - 1;
    let col = format!("{} R", cs.layouts[last].label());
    let j = t.columns.iter().position(|c| *c == col);
    let row = j.and_then(|j| {
        (0..t.rows.len())
            .rev()
            .find(|&r| t.rows[r][j].sort_value().is_some())
    });
    let mut list = Vec::new();
    if let (Some(r), Some(b)) = (row, cs.retention_base().filter(|&b| b < last)) {
        let pts: Vec<usize> = cs
            .sizes
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().copied())
            .collect();
        list.push(
            Sentence::new(t, r)
                .text(format!(
                    "busbw retention at {} devices ({}) against {} devices: R = ",
                    cs.layouts[last].devices(),
                    cs.layouts[last].label(),
                    cs.layouts[b].devices()
                ))
                .fig(&col)
                .text(" at S = ")
                .fig("S")
                .text(format!("{}.", series_caveat(a, &pts)))
                .done(format!("{} {}", cs.workload, cs.label), None, section)
                .about(cs.workload)
                .headline(),
        );
    }
    list
}
