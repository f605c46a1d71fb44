//! Pure MPI vs hybrid, and CPU binding: per comparison a decision over its sizes (one side
//! faster, a tie, a crossover size, or inconclusive) from each size's ratio and interval, the
//! same per size band, comparisons left out for unrepresentative cases, and every ratio.

use super::findings::{chart_of, Finding, Findings, Part, Sentence};
use super::{add_figures, bytes_cell, case_text};
use crate::params::Workload;
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{kinds_text, Analysis, RatioGroup, RatioKind, RatioRow};
use crate::report::derive::{self, Decision, SizeCall, SizeRun};
use crate::report::plot::{Figure, FigureKind};
use std::collections::{BTreeMap, BTreeSet};

/// The side a call favours, in words (`hybrid`, `pure`, `even`, `unclear`).
fn side(g: &RatioGroup, c: SizeCall) -> String {
    match c {
        SizeCall::First => g.num_label.clone(),
        SizeCall::Second => g.den_label.clone(),
        SizeCall::Even => "even".to_string(),
        SizeCall::Unclear => "unclear".to_string(),
    }
}

/// A decision in one cell's words: `hybrid`, `tie`, `crossover: pure ≤ 2KiB, hybrid ≥ 4KiB`.
fn decision_text(g: &RatioGroup, rows: &[&RatioRow], d: Option<Decision>) -> String {
    let size = |i: usize| {
        rows[i]
            .bytes
            .map_or_else(|| format!("case {}", i + 1), crate::units::format_bytes)
    };
    match d {
        None => String::new(),
        Some(Decision::Uniform(r)) if r.call == SizeCall::Even => "tie".to_string(),
        Some(Decision::Uniform(r)) => side(g, r.call),
        Some(Decision::Crossover { low, high }) => format!(
            "crossover: {} ≤ {}, {} ≥ {}",
            side(g, low.call),
            size(low.last),
            side(g, high.call),
            size(high.first)
        ),
        Some(Decision::Inconclusive { .. }) => "inconclusive".to_string(),
    }
}

/// How many sizes favour each side: `2 hybrid, 1 pure, 0 even, 1 unclear`.
fn calls_text(g: &RatioGroup, rows: &[&RatioRow]) -> String {
    let n = |c: SizeCall| rows.iter().filter(|r| r.call == c).count();
    format!(
        "{} {}, {} {}, {} even, {} unclear",
        n(SizeCall::First),
        g.num_label,
        n(SizeCall::Second),
        g.den_label,
        n(SizeCall::Even),
        n(SizeCall::Unclear)
    )
}

pub(super) fn ratios(
    doc: &mut Doc,
    a: &Analysis<'_>,
    figs: &[Figure],
    kind: RatioKind,
    found: &mut Findings,
) {
    let all: Vec<&RatioGroup> = a.ratios.iter().filter(|g| g.kind == kind).collect();
    let include = a.options.include_unrepresentative;
    let (groups, apart): (Vec<&RatioGroup>, Vec<&RatioGroup>) =
        all.iter().partition(|g| include || g.concerns.is_empty());
    let (title, what) = match kind {
        RatioKind::Topology => ("Pure MPI vs hybrid", "time(hybrid) / time(pure MPI)"),
        RatioKind::Binding => ("CPU binding", "time(policy) / time(reference)"),
    };
    // The chart's kind also names this section's tables (`topology_decisions`, …).
    let chart = FigureKind::of_ratio(kind);
    let stem = chart.as_str();
    doc.heading(2, title);
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    if groups.is_empty() && !apart.is_empty() {
        no_verdict(doc, &apart, title, stem, &section, found);
        return;
    }
    if groups.is_empty() {
        doc.para(vec![text(match kind {
            RatioKind::Topology => "No pure/hybrid pairs: no two measured cases differ only in topology (measure the same layout with --topology pure and --topology hybrid).",
            RatioKind::Binding => "No binding comparison: no two measured cases differ only in --binding.",
        })]);
        return;
    }
    let mut wls: Vec<Workload> = groups.iter().map(|g| g.workload).collect();
    wls.sort();
    wls.dedup();
    for w in wls {
        add_figures(doc, figs, chart, w);
    }
    let b = a.options.tie_band;
    doc.prose(&format!(
        "Ratio = {what}. Each size is called from its ratio r and the p5–p95 interval of its sample-pair ratios (tie band b = {b}): a side is faster when r leaves 1 ± b and the whole interval lies on that side of 1; even when r is within 1 ± b and the interval reaches into the band; otherwise unclear. A comparison's decision reads the calls in size order: one side throughout, a tie (every size even), a crossover (one call up to a size, another from the next), or inconclusive (more than a quarter unclear, or no single crossover). `by a–b×`: how many times faster the faster side is over its sizes. See Definitions."
    ));
    let (t, cited) = decisions_table(&groups);
    let list: Vec<Finding> = cited
        .into_iter()
        .map(|c| c.finding(&t, figs, title, chart, &section))
        .collect();
    found.cite(doc.table(t, &format!("{stem}_decisions"), None), list);
    doc.prose(
        "The same decision per size band (geometric mean with min–max of the band's ratios):",
    );
    doc.table(bands_table(&groups), &format!("{stem}_bands"), None);
    if !apart.is_empty() {
        doc.para(vec![text(format!(
            "{} cases that are not representative: shown apart, without a verdict.",
            match apart.len() {
                1 => "1 comparison involves".to_string(),
                n => format!("{n} comparisons involve"),
            }
        ))]);
        apart_table(doc, &apart, stem);
    }
    per_case_table(doc, a, &groups, stem);
}

/// Every comparison involves unrepresentative cases: no winner, one finding saying why, and
/// the comparisons apart.
fn no_verdict(
    doc: &mut Doc,
    apart: &[&RatioGroup],
    title: &str,
    stem: &str,
    section: &str,
    found: &mut Findings,
) {
    let mut kinds = BTreeSet::new();
    for g in apart {
        kinds.extend(g.concerns.iter().cloned());
    }
    let why = format!(
        "no winner is named: every comparison involves cases that are not representative ({}); they are listed below without a verdict. --include-unrepresentative names winners from them, marked.",
        kinds_text(&kinds)
    );
    doc.para(vec![text(format!("{title}: {why}"))]);
    found.items.push(Finding {
        topic: title.to_string(),
        parts: vec![Part::Text(why)],
        table: None,
        row: 0,
        chart: None,
        section: section.to_string(),
        workload: None,
        headline: false,
    });
    apart_table(doc, apart, stem);
}

/// A comparison of the decisions table that a finding cites.
struct Cited {
    row: usize,
    workload: Workload,
    held: String,
    decision: Decision,
    sized: bool,
    num: String,
    den: String,
    runs: usize,
    /// Sizes (or GEMM cases) compared: "at every size" only when every one of them was decided.
    sizes: usize,
    concerns: BTreeSet<String>,
}

/// `by 1.2×`, or `by 1.2× – 3.4×` over sizes that differ, citing the columns `min` and `max`.
fn by<'t>(s: Sentence<'t>, run: &SizeRun, min: &str, max: &str) -> Sentence<'t> {
    let s = s.text("by ").fig(min);
    if run.n > 1 && run.min_ratio != run.max_ratio {
        s.text(" – ").fig(max)
    } else {
        s
    }
}

impl Cited {
    fn finding(
        self,
        t: &Table,
        figs: &[Figure],
        title: &str,
        chart: FigureKind,
        section: &str,
    ) -> Finding {
        let w = self.workload;
        let mut s = Sentence::new(t, self.row).text(format!(
            "at {} (time {} / {}): ",
            self.held, self.num, self.den
        ));
        let faster = |c: SizeCall| if c == SizeCall::Even { "" } else { " faster" };
        s = match self.decision {
            Decision::Uniform(r) if r.call == SizeCall::Even => s
                .text("a tie at every size, every size's ratio within the tie band and its interval reaching into it (ratios ")
                .fig("low by min")
                .text(" – ")
                .fig("low by max")
                .text(")"),
            Decision::Uniform(r) => {
                let s = s.text(format!("{}{}", self.side(r.call), faster(r.call)));
                // "At every size" only when no size was unclear: a size whose interval
                // crossed 1 was skipped by the decision, not won.
                let s = if self.sized && r.n > 1 && r.n == self.sizes {
                    s.text(" at every size (")
                        .fig("smallest S")
                        .text(" – ")
                        .fig("largest S")
                        .text("), ")
                } else if self.sized && r.n < self.sizes {
                    s.text(" at ")
                        .fig(if r.call == SizeCall::First {
                            "favour first"
                        } else {
                            "favour second"
                        })
                        .text(" of ")
                        .fig("sizes")
                        .text(" sizes (")
                        .fig("unclear")
                        .text(" unclear: their interval crosses 1), ")
                } else {
                    s.text(", ")
                };
                by(s, &r, "low by min", "low by max")
            }
            Decision::Crossover { low, high } => {
                let s = s
                    .text(format!("{}{} up to ", self.side(low.call), faster(low.call)))
                    .fig("up to");
                let s = if low.call == SizeCall::Even {
                    s
                } else {
                    by(s.text(" ("), &low, "low by min", "low by max").text(")")
                };
                let s = s
                    .text(format!(", {}{} from ", self.side(high.call), faster(high.call)))
                    .fig("from");
                if high.call == SizeCall::Even {
                    s
                } else {
                    by(s.text(" ("), &high, "high by min", "high by max").text(")")
                }
            }
            Decision::Inconclusive { disagree: true, .. } => s
                .text("inconclusive, the sizes disagree without one crossover (")
                .fig("favour first")
                .text(format!(" favour {}, ", self.num))
                .fig("favour second")
                .text(format!(" {}, ", self.den))
                .fig("even")
                .text(" even, ")
                .fig("unclear")
                .text(" unclear)"),
            Decision::Inconclusive { .. } => s
                .text("winner unclear, too noisy: ")
                .fig("unclear")
                .text(" of ")
                .fig("sizes")
                .text(" sizes unclear (their interval crosses 1)"),
        };
        s = if self.runs > 1 {
            s.text("; run-to-run spread ")
                .fig("run-to-run spread")
                .text(" over ")
                .fig("runs")
                .text(" runs")
        } else {
            s.text("; single run")
        };
        if !self.concerns.is_empty() {
            s = s.text(format!(
                "; caveat: not representative: {}",
                kinds_text(&self.concerns)
            ));
        }
        s.text(".")
            .done(format!("{w}, {title}"), chart_of(figs, chart, w), section)
            .about(w)
    }

    fn side(&self, c: SizeCall) -> String {
        match c {
            SizeCall::First => self.num.clone(),
            SizeCall::Second => self.den.clone(),
            SizeCall::Even => "even".to_string(),
            SizeCall::Unclear => "unclear".to_string(),
        }
    }
}

/// One row per comparison with its decision; those of the largest layout compared (charted
/// variants) are cited by findings.
fn decisions_table(groups: &[&RatioGroup]) -> (Table, Vec<Cited>) {
    let mut t = Table::new(&[
        "workload",
        "compared",
        "held fixed",
        "sizes",
        "decision",
        "smallest S",
        "largest S",
        "low",
        "up to",
        "low by min",
        "low by max",
        "high",
        "from",
        "high by min",
        "high by max",
        "favour first",
        "favour second",
        "even",
        "unclear",
        "runs",
        "run-to-run spread",
        "caveat",
    ]);
    let mut largest: BTreeMap<Workload, u32> = BTreeMap::new();
    for g in groups {
        let m = largest.entry(g.workload).or_default();
        *m = (*m).max(g.layout.devices());
    }
    let mut list = Vec::new();
    for g in groups {
        let rows: Vec<&RatioRow> = g.rows.iter().collect();
        let Some(d) = g.decision else {
            continue;
        };
        if g.charted && largest.get(&g.workload) == Some(&g.layout.devices()) {
            list.push(Cited {
                row: t.rows.len(),
                workload: g.workload,
                held: g.label.clone(),
                decision: d,
                sized: rows.iter().all(|r| r.bytes.is_some()),
                num: g.num_label.clone(),
                den: g.den_label.clone(),
                runs: g.runs,
                sizes: rows.len(),
                concerns: g.concerns.clone(),
            });
        }
        t.push(decision_row(g, &rows, d));
    }
    (t, list)
}

fn decision_row(g: &RatioGroup, rows: &[&RatioRow], d: Decision) -> Vec<Cell> {
    let size = |i: usize| rows[i].bytes.map_or(Cell::Empty, bytes_cell);
    let (low, high) = match d {
        Decision::Uniform(r) => (Some(r), None),
        Decision::Crossover { low, high } => (Some(low), Some(high)),
        Decision::Inconclusive { .. } => (None, None),
    };
    let run_cells = |r: Option<SizeRun>, at: &dyn Fn(&SizeRun) -> usize| -> [Cell; 4] {
        match r {
            None => [Cell::Empty, Cell::Empty, Cell::Empty, Cell::Empty],
            Some(r) => {
                let (lo, hi) = r.factors();
                [
                    Cell::text(side(g, r.call)),
                    size(at(&r)),
                    Cell::num(lo, NumFmt::Ratio),
                    Cell::num(hi, NumFmt::Ratio),
                ]
            }
        }
    };
    let n = |c: SizeCall| Cell::UInt(rows.iter().filter(|r| r.call == c).count() as u64);
    let mut row = vec![
        Cell::text(g.workload.to_string()),
        Cell::text(format!("{} / {}", g.num_label, g.den_label)),
        Cell::text(g.label.clone()),
        Cell::UInt(rows.len() as u64),
        Cell::text(decision_text(g, rows, Some(d))),
        size(0),
        size(rows.len() - 1),
    ];
    row.extend(run_cells(low, &|r| r.last));
    row.extend(run_cells(high, &|r| r.first));
    row.extend([
        n(SizeCall::First),
        n(SizeCall::Second),
        n(SizeCall::Even),
        n(SizeCall::Unclear),
        Cell::UInt(g.runs as u64),
        Cell::opt(g.run_spread, NumFmt::Percent),
        Cell::text(if g.concerns.is_empty() {
            String::new()
        } else {
            format!("not representative: {}", kinds_text(&g.concerns))
        }),
    ]);
    row
}

/// Ratio bands with the decision over each band's own sizes.
fn bands_table(groups: &[&RatioGroup]) -> Table {
    let mut t = Table::new(&[
        "workload",
        "compared",
        "held fixed",
        "band",
        "sizes",
        "ratio (geomean)",
        "min",
        "max",
        "winner",
        "calls",
        "caveat",
    ]);
    for g in groups {
        for b in &g.bands {
            let rows: Vec<&RatioRow> = g.rows.iter().filter(|r| r.band == b.band).collect();
            let d = derive::decide(&rows.iter().map(|r| (r.ratio, r.call)).collect::<Vec<_>>());
            t.push(vec![
                Cell::text(g.workload.to_string()),
                Cell::text(format!("{} / {}", g.num_label, g.den_label)),
                Cell::text(g.label.clone()),
                Cell::text(b.band.name()),
                Cell::UInt(b.n as u64),
                Cell::num(b.geomean, NumFmt::Ratio),
                Cell::num(b.min, NumFmt::Ratio),
                Cell::num(b.max, NumFmt::Ratio),
                Cell::text(decision_text(g, &rows, d)),
                Cell::text(calls_text(g, &rows)),
                Cell::text(if g.concerns.is_empty() {
                    String::new()
                } else {
                    format!("not representative: {}", kinds_text(&g.concerns))
                }),
            ]);
        }
    }
    t
}

/// Every ratio of the charted variants, per case.
fn per_case_table(doc: &mut Doc, a: &Analysis<'_>, groups: &[&RatioGroup], stem: &str) {
    let mut t = Table::new(&[
        "workload",
        "compared",
        "held fixed",
        "case",
        "time num",
        "time den",
        "ratio",
        "p5",
        "p95",
        "call",
    ]);
    for g in groups.iter().filter(|g| g.charted) {
        for r in &g.rows {
            let (n, d) = (&a.entries[r.num], &a.entries[r.den]);
            t.push(vec![
                Cell::text(g.workload.to_string()),
                Cell::text(format!("{} / {}", g.num_label, g.den_label)),
                Cell::text(g.label.clone()),
                Cell::text(case_text(d)),
                Cell::opt(n.time_s(), NumFmt::MeasuredSeconds(n.digits())),
                Cell::opt(d.time_s(), NumFmt::MeasuredSeconds(d.digits())),
                Cell::num(r.ratio, NumFmt::Ratio),
                Cell::opt(r.interval.map(|i| i.0), NumFmt::Ratio),
                Cell::opt(r.interval.map(|i| i.1), NumFmt::Ratio),
                Cell::text(side(g, r.call)),
            ]);
        }
    }
    doc.table(
        t,
        &format!("{stem}_ratios"),
        Some(format!(
            "Every {stem} ratio of the charted variants, per case"
        )),
    );
}

/// Ratio bands of comparisons left out: their figures, no winner, and why.
fn apart_table(doc: &mut Doc, groups: &[&RatioGroup], stem: &str) {
    let mut t = Table::new(&[
        "workload",
        "compared",
        "held fixed",
        "band",
        "sizes",
        "ratio (geomean)",
        "min",
        "max",
        "winner",
        "why",
    ]);
    for g in groups {
        for b in &g.bands {
            t.push(vec![
                Cell::text(g.workload.to_string()),
                Cell::text(format!("{} / {}", g.num_label, g.den_label)),
                Cell::text(g.label.clone()),
                Cell::text(b.band.name()),
                Cell::UInt(b.n as u64),
                Cell::num(b.geomean, NumFmt::Ratio),
                Cell::num(b.min, NumFmt::Ratio),
                Cell::num(b.max, NumFmt::Ratio),
                Cell::text("not named"),
                Cell::text(format!("not representative: {}", kinds_text(&g.concerns))),
            ]);
        }
    }
    doc.table(t, &format!("{stem}_bands_unrepresentative"), None);
}
