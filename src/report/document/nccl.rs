//! NCCL's algorithms and protocols (issue 31 item 3): per sweep over `nccl_algo` /
//! `nccl_proto`, each setting's time per size, the fastest, the crossovers, and NCCL's own
//! choice against the fastest with the report's interval and call; a finding where the
//! default was beaten. The figures come from [`crate::report::nccl`].

use super::bytes_cell;
use super::findings::{Findings, Sentence};
use crate::present::doc::{text, Doc, Span};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::Analysis;
use crate::report::nccl::{self, chart_stem, pair_text, Sweep};
use crate::report::plot::Figure;
use crate::units::count;

pub(super) fn nccl(doc: &mut Doc, a: &Analysis<'_>, figs: &[Figure], found: &mut Findings) {
    let sweeps = nccl::sweeps(a);
    if sweeps.is_empty() {
        return;
    }
    doc.heading(2, "NCCL algorithms and protocols");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    doc.prose("Each sweep over `nccl_algo` × `nccl_proto` (cases equal but for size and what the launch forced on NCCL): the time per operation of every setting tried, per size; the fastest (named by the algorithm/protocol NCCL logged, or that was forced); where the fastest changes; and NCCL's own choice (the `default` run, with the pair it logged) against the fastest: the time ratio default / fastest with the p5–p95 interval of its sample ratios, called beaten only when the ratio leaves the tie band and its whole interval lies above 1 (as every comparison of this report is called).");
    if sweeps.iter().any(|s| s.standin) {
        doc.para(vec![
            Span::Strong("STAND-IN.".into()),
            text(" Some sweeps ran on scalebench's stand-in NCCL, whose costs are simulated: they show that capture, sweep, report and export work; none of their times or choices is a GPU's."),
        ]);
    }
    let mut crossings = Table::new(&[
        "collective",
        "set-up",
        "fastest below",
        "below bytes",
        "above bytes",
        "fastest above",
        "tuner boundary bytes",
    ]);
    for (k, s) in sweeps.iter().enumerate() {
        let mark = if s.standin { " — STAND-IN" } else { "" };
        doc.para(vec![Span::Strong(format!(
            "{} {}{mark}",
            s.workload, s.label
        ))]);
        let stem = chart_stem(k, s.workload);
        let chart = figs.iter().position(|f| f.stem == stem);
        if let Some(i) = chart {
            let f = &figs[i];
            super::push_figure(doc, i, f);
        }
        if s.left_out > 0 {
            doc.para(vec![text(format!(
                "{} that cannot represent the set-up left out (see Not representative; --include-unrepresentative lets them in).",
                count(s.left_out, "case", "cases")
            ))]);
        }
        let t = size_table(a, s);
        let list = findings_of(s, &t, chart.map(|_| stem.clone()), &section);
        let csv = doc.table(t, &format!("nccl_{}", s.workload), None);
        found.cite(csv, list);
        let cross = s.crossovers();
        doc.para(vec![text(if cross.is_empty() {
            match s.rows.iter().find_map(|r| s.winner_text(r)) {
                Some(w) => format!("No crossover: {w} is fastest at every size."),
                None => "No size has a usable case: no fastest is named.".to_string(),
            }
        } else {
            format!(
                "Crossovers: {}.",
                cross
                    .iter()
                    .map(|c| format!(
                        "{} up to {}, {} from {}",
                        c.from,
                        crate::units::format_bytes(c.below_bytes),
                        c.to,
                        crate::units::format_bytes(c.above_bytes)
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })]);
        for c in cross {
            crossings.push(vec![
                Cell::text(s.workload.to_string()),
                Cell::text(format!("{}{mark}", s.label)),
                Cell::text(c.from),
                bytes_cell(c.below_bytes),
                bytes_cell(c.above_bytes),
                Cell::text(c.to),
                c.tuner_boundary_bytes.map_or(Cell::Empty, bytes_cell),
            ]);
        }
    }
    doc.table(crossings, "nccl_crossovers", None);
}

/// One row per size: each setting's time, the fastest, the default against it.
fn size_table(a: &Analysis<'_>, s: &Sweep) -> Table {
    let mut cols: Vec<String> = vec!["size".into()];
    cols.extend(s.settings.iter().map(|x| format!("{} µs", x.label())));
    cols.extend(
        [
            "not representative",
            "fastest",
            "lead over next pair ×",
            "lead",
            "default ran",
            "default / fastest",
            "ratio p5",
            "ratio p95",
            "default",
        ]
        .map(String::from),
    );
    let mut t = Table::new(&cols.iter().map(String::as_str).collect::<Vec<_>>());
    let default = s.settings.iter().position(|x| x.is_default());
    for r in &s.rows {
        let mut row = vec![bytes_cell(r.bytes)];
        for p in &r.points {
            row.push(match p {
                Some(p) => Cell::num(
                    p.time_s * 1e6,
                    NumFmt::Measured(a.entries[p.entry].digits()),
                ),
                None => Cell::Empty,
            });
        }
        row.push(Cell::text(
            s.settings
                .iter()
                .zip(&r.points)
                .filter(|(_, p)| p.is_some_and(|p| !p.usable))
                .map(|(x, _)| x.label())
                .collect::<Vec<_>>()
                .join("; "),
        ));
        row.push(Cell::text(s.winner_text(r).unwrap_or_default()));
        row.push(
            r.lead
                .map_or(Cell::Empty, |l| Cell::num(l.ratio, NumFmt::Ratio)),
        );
        row.push(Cell::text(match r.lead {
            None => "",
            Some(l) if l.clear() => "clear",
            Some(_) => "tie or noise",
        }));
        let ran = default.and_then(|d| r.points[d]);
        let d = ran.filter(|p| p.usable);
        row.push(Cell::text(match ran {
            None => "not run".to_string(),
            Some(p) => p
                .pair
                .map_or("unknown (not captured)".to_string(), pair_text),
        }));
        let v = r.default_vs_fastest;
        row.push(v.map_or(Cell::Empty, |v| Cell::num(v.ratio, NumFmt::Ratio)));
        row.push(Cell::opt(
            v.and_then(|v| v.interval).map(|i| i.0),
            NumFmt::Ratio,
        ));
        row.push(Cell::opt(
            v.and_then(|v| v.interval).map(|i| i.1),
            NumFmt::Ratio,
        ));
        row.push(Cell::text(match (d, v) {
            (None, _) if ran.is_some() => "not representative",
            (None, _) => "",
            (Some(_), None) => "fastest",
            (Some(_), Some(v)) if v.clear() => "beaten",
            (Some(_), Some(v)) if v.call == crate::report::derive::SizeCall::Even => "tie",
            (Some(_), Some(_)) => "unclear",
        }));
        t.push(row);
    }
    t
}

/// A finding for every size where NCCL's own choice was beaten.
fn findings_of(
    s: &Sweep,
    t: &Table,
    chart: Option<String>,
    section: &str,
) -> Vec<super::findings::Finding> {
    let mark = if s.standin { " (STAND-IN)" } else { "" };
    s.rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.default_vs_fastest.is_some_and(|v| v.clear()))
        .map(|(i, _)| {
            Sentence::new(t, i)
                .text(format!("{} {}{mark}: at ", s.workload, s.label))
                .fig("size")
                .text(" NCCL's own choice ")
                .fig("default ran")
                .text(" took ")
                .fig("default / fastest")
                .text(" the time of ")
                .fig("fastest")
                .text(" (p5–p95 of the sample ratios ")
                .fig("ratio p5")
                .text("–")
                .fig("ratio p95")
                .text(").")
                .done("NCCL", chart.clone(), section)
                .about(s.workload)
        })
        .collect()
}
