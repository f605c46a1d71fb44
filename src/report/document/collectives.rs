//! Collectives: per variant, a table of every set-up's size curve (peak bandwidths, α–β
//! regimes), with the charted variant's findings.

use super::findings::{chart_of, Finding, Findings, Sentence};
use super::{add_figures, bytes_cell, setup_text};
use crate::params::Workload;
use crate::present::doc::{text, Doc, Span};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{kinds_text, Analysis, CollectiveView, Curve, Entry};
use crate::report::ceilings as ceil;
use crate::report::model;
use crate::report::plot::{Figure, FigureKind};

pub(super) fn collectives(doc: &mut Doc, a: &Analysis<'_>, figs: &[Figure], found: &mut Findings) {
    if a.collectives.is_empty() {
        return;
    }
    doc.heading(2, "Collectives: time and bandwidth vs size");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    let mut wl: Option<Workload> = None;
    for v in &a.collectives {
        if wl != Some(v.workload) {
            wl = Some(v.workload);
            doc.heading(3, v.workload.to_string());
            add_figures(doc, figs, FigureKind::Busbw, v.workload);
            add_figures(doc, figs, FigureKind::Latency, v.workload);
        }
        doc.para(vec![
            Span::Strong(format!("{} {}", v.workload, v.label)),
            text(format!(
                ": {}{}.",
                crate::present::count(v.cases, "case", "cases"),
                if v.charted { ", charted above" } else { "" }
            )),
        ]);
        let t = curve_table(a, v);
        let mut list = Vec::new();
        if v.charted {
            list.extend(collective_findings(a, figs, v, &t, &section));
        }
        found.cite(
            doc.table(t, &format!("collective_{}", v.workload), None),
            list,
        );
        let pts = v
            .curves
            .iter()
            .flat_map(|c| &c.points)
            .map(|&i| &a.entries[i]);
        if let Some(s) = ceil::unknown_note(pts, ceil::BUSBW) {
            doc.prose(&s);
        }
    }
}

/// One row per set-up of a variant: its size curve summarised, and its α–β regimes.
fn curve_table(a: &Analysis<'_>, v: &CollectiveView) -> Table {
    let mut t = Table::new(&[
        "set-up",
        "devices",
        "sizes",
        "smallest S",
        "time at smallest S",
        "peak busbw (GB/s)",
        "peak busbw / ceiling",
        "at S",
        "peak algbw (GB/s)",
        "α (µs)",
        "1/β (GB/s)",
        "R²",
        "regimes",
        "switch at",
        "latency-bound below",
        "noisy",
        "fit",
        "representative",
    ]);
    for c in &v.curves {
        t.push(curve_row(a, c));
    }
    t
}

fn curve_row(a: &Analysis<'_>, c: &Curve) -> Vec<Cell> {
    let pts: Vec<&Entry<'_>> = c.points.iter().map(|&i| &a.entries[i]).collect();
    let first = pts.first();
    let peak = pts
        .iter()
        .filter_map(|e| Some((e.case.busbw_gbps?, e.bytes()?, e.digits(), *e)))
        .max_by(|x, y| x.0.total_cmp(&y.0));
    let f = c.factor.filter(|f| *f > 0.0).unwrap_or(1.0);
    let (alpha, bw, r2, regimes, switch, half, note) = match &c.regimes {
        Ok(r) => (
            Cell::num(r.alpha_s() * 1e6, NumFmt::Sig),
            Cell::opt(r.bandwidth_gbps(), NumFmt::Sig),
            Cell::num(r.r2, NumFmt::Fixed(3)),
            Cell::UInt(r.segments.len() as u64),
            Cell::text(switch_text(r, f)),
            Cell::opt(
                r.latency_bound_below_x().map(|x| (x / f).round()),
                NumFmt::ApproxBytes,
            ),
            Cell::text(regimes_note(r)),
        ),
        Err(e) => (
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
            Cell::text(e.to_string()),
        ),
    };
    vec![
        Cell::text(setup_text(a, &c.shape)),
        Cell::UInt(u64::from(c.shape.devices())),
        Cell::UInt(pts.len() as u64),
        first
            .and_then(|e| e.bytes())
            .map_or(Cell::Empty, bytes_cell),
        Cell::opt(
            first.and_then(|e| e.time_s()),
            NumFmt::MeasuredSeconds(first.map_or(4, |e| e.digits())),
        ),
        Cell::opt(
            peak.map(|p| p.0).filter(|b| *b > 0.0),
            NumFmt::Measured(peak.map_or(4, |p| p.2)),
        ),
        peak.filter(|p| p.0 > 0.0)
            .map_or(Cell::Empty, |p| ceil::frac_cell(p.3, ceil::BUSBW)),
        peak.filter(|p| p.0 > 0.0)
            .map_or(Cell::Empty, |p| bytes_cell(p.1)),
        {
            let peak_algbw = pts
                .iter()
                .filter_map(|e| Some((e.case.algbw_gbps?, e.digits())))
                .max_by(|x, y| x.0.total_cmp(&y.0))
                .filter(|_| c.shape.devices() > 1); // 1 device: S/time of a local copy, not a bandwidth
            Cell::opt(
                peak_algbw.map(|p| p.0),
                NumFmt::Measured(peak_algbw.map_or(3, |p| p.1)),
            )
        },
        alpha,
        bw,
        r2,
        regimes,
        switch,
        half,
        Cell::UInt(pts.iter().filter(|e| e.noisy).count() as u64),
        note,
        Cell::text(representative_text(&c.concerns)),
    ]
}

/// `yes`, or `no: oversubscribed, emulated nodes`.
fn representative_text(kinds: &std::collections::BTreeSet<String>) -> String {
    if kinds.is_empty() {
        "yes".to_string()
    } else {
        format!("no: {}", kinds_text(kinds))
    }
}

/// Where a segmented fit changes regime, as sizes S: `8KiB–16KiB; 256KiB–512KiB`.
fn switch_text(r: &model::Regimes, factor: f64) -> String {
    r.segments
        .windows(2)
        .map(|w| {
            let s = |x: f64| crate::units::format_bytes((x / factor).round() as u64);
            format!("{}–{}", s(w[0].to_x), s(w[1].from_x))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `ok` or `constrained`, how many points the robust fits down-weighted, and `POOR: …` with
/// the reasons when the model should not be read (it then draws no finding).
fn regimes_note(r: &model::Regimes) -> String {
    let base = if r.constrained() { "constrained" } else { "ok" };
    let note = match r.downweighted() {
        0 => base.to_string(),
        n => format!("{base}; {n} down-weighted"),
    };
    if r.poor.is_empty() {
        note
    } else {
        format!("POOR: {}; {note}", r.poor.join(", "))
    }
}

/// Peak busbw of the charted variant, and where latency dominates on its largest set-up.
fn collective_findings(
    a: &Analysis<'_>,
    figs: &[Figure],
    v: &CollectiveView,
    t: &Table,
    section: &str,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let topic = format!("{} {}", v.workload, v.label);
    let usable: Vec<usize> = (0..v.curves.len())
        .filter(|&k| a.options.include_unrepresentative || v.curves[k].concerns.is_empty())
        .collect();
    let col = |name: &str| t.columns.iter().position(|c| c == name).expect("column");
    let caveat = |k: usize| {
        let c = &v.curves[k].concerns;
        if c.is_empty() {
            String::new()
        } else {
            format!(" (caveat: not representative: {})", kinds_text(c))
        }
    };
    // A collective on one device moves nothing between devices: its "bandwidth" is a copy's
    // or a no-op's (an in-place broadcast of 512 KiB on one rank read 20,000 GB/s).
    let peak = usable
        .iter()
        .copied()
        .filter(|&k| v.curves[k].shape.devices() >= 2)
        .filter_map(|k| {
            t.rows[k][col("peak busbw (GB/s)")]
                .sort_value()
                .map(|b| (k, b))
        })
        .max_by(|x, y| x.1.total_cmp(&y.1));
    if let Some((k, _)) = peak {
        out.push(
            Sentence::new(t, k)
                .text("peak busbw ")
                .fig("peak busbw (GB/s)")
                .text(" GB/s, reached at S = ")
                .fig("at S")
                .text(" on ")
                .fig("set-up")
                .text(caveat(k))
                .text(".")
                .done(
                    topic.clone(),
                    chart_of(figs, FigureKind::Busbw, v.workload),
                    section,
                )
                .about(v.workload),
        );
    }
    let lat = usable
        .iter()
        .copied()
        .filter(|&k| t.rows[k][col("latency-bound below")].sort_value().is_some())
        // A poor fit's α, β and switches are not findings.
        .filter(|&k| matches!(&v.curves[k].regimes, Ok(r) if r.poor.is_empty()))
        .max_by_key(|&k| v.curves[k].shape.devices());
    if let Some(k) = lat {
        let mut s = Sentence::new(t, k)
            .text("on ")
            .fig("set-up")
            .text(", latency dominates below S ≈ ")
            .fig("latency-bound below")
            .text(" (α = ")
            .fig("α (µs)")
            .text(" µs for the smallest sizes)");
        if matches!(&v.curves[k].regimes, Ok(r) if r.segments.len() > 1) {
            s = s
                .text("; the α–β model changes regime between ")
                .fig("switch at");
        }
        out.push(
            s.text(caveat(k))
                .text(".")
                .done(topic, chart_of(figs, FigureKind::Fit, v.workload), section)
                .about(v.workload),
        );
    }
    out
}
