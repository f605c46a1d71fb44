//! Pure MPI vs hybrid, and CPU binding: ratio bands with a named winner where the sizes agree,
//! comparisons left out for unrepresentative cases, and every ratio of the charted variants.

use super::findings::{chart_of, Finding, Findings, Part, Sentence};
use super::{add_figures, case_text};
use crate::params::Workload;
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{kinds_text, Analysis, RatioGroup, RatioKind};
use crate::report::derive::{self, Winner};
use crate::report::plot::Figure;
use std::collections::{BTreeMap, BTreeSet};

fn winner_text(g: &RatioGroup, w: Winner) -> String {
    match w {
        Winner::First => g.num_label.clone(),
        Winner::Second => g.den_label.clone(),
        Winner::Tie => "tie".to_string(),
        Winner::Mixed => "mixed".to_string(),
    }
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
    let (title, stem, what) = match kind {
        RatioKind::Topology => (
            "Pure MPI vs hybrid",
            "topology",
            "time(hybrid) / time(pure MPI)",
        ),
        RatioKind::Binding => ("CPU binding", "binding", "time(policy) / time(reference)"),
    };
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
        add_figures(doc, figs, stem, w);
    }
    doc.prose(&format!(
        "Ratio = {what}, summarised per size band as the geometric mean with min–max; the winner is named when the mean leaves 1 ± {} and more than half of the band's sizes agree (otherwise `mixed`).",
        a.options.tie_band
    ));
    let (t, cited) = bands_table(a, &groups);
    let list: Vec<Finding> = cited
        .into_iter()
        .map(|c| c.finding(&t, figs, title, stem, &section))
        .collect();
    found.cite(doc.table(t, &format!("{stem}_bands"), None), list);
    if !apart.is_empty() {
        doc.para(vec![text(format!(
            "{} comparison(s) involve cases that are not representative: shown apart, without a verdict.",
            apart.len()
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
    });
    apart_table(doc, apart, stem);
}

/// A band of the bands table that a finding cites, and what its sentence says.
struct Cited {
    row: usize,
    verdict: String,
    workload: Workload,
    held: String,
    band: &'static str,
    concerns: BTreeSet<String>,
    num: String,
    den: String,
}

impl Cited {
    fn finding(
        self,
        t: &Table,
        figs: &[Figure],
        title: &str,
        stem: &str,
        section: &str,
    ) -> Finding {
        let Cited {
            row: r,
            verdict,
            workload: w,
            held,
            band,
            concerns,
            num,
            den,
        } = self;
        Sentence::new(t, r)
            .text(format!(
                "at {held}, {band}: {verdict}, time {num} / {den} = "
            ))
            .fig("ratio (geomean)")
            .text(" (geometric mean over ")
            .fig("sizes")
            .text(" size(s), range ")
            .fig("min")
            .text(" – ")
            .fig("max")
            .text(if concerns.is_empty() {
                ")".to_string()
            } else {
                format!("; caveat: not representative: {})", kinds_text(&concerns))
            })
            .text(".")
            .done(format!("{w}, {title}"), chart_of(figs, stem, w), section)
            .about(w)
    }
}

/// Ratio bands with their verdicts; the bands of the largest layout compared (charted
/// variants, once per workload) are cited by findings.
fn bands_table(a: &Analysis<'_>, groups: &[&RatioGroup]) -> (Table, Vec<Cited>) {
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
        "agree",
        "caveat",
    ]);
    let mut list = Vec::new();
    // Findings: every band of the largest layout compared, per workload.
    let mut largest: BTreeMap<Workload, u32> = BTreeMap::new();
    for g in groups {
        let m = largest.entry(g.workload).or_default();
        *m = (*m).max(g.layout.devices());
    }
    let mut told: BTreeSet<Workload> = BTreeSet::new();
    for g in groups {
        let ratios: Vec<(derive::Band, f64)> = g.rows.iter().map(|r| (r.band, r.ratio)).collect();
        let cite = g.charted
            && largest.get(&g.workload) == Some(&g.layout.devices())
            && !told.contains(&g.workload);
        for b in &g.bands {
            let (w, agree) = b.verdict(&ratios, a.options.tie_band);
            if cite {
                let r = t.rows.len();
                let verdict = match w {
                    Winner::First => format!("{} faster", g.num_label),
                    Winner::Second => format!("{} faster", g.den_label),
                    Winner::Tie => "a tie".to_string(),
                    Winner::Mixed => "no clear winner (sizes disagree)".to_string(),
                };
                list.push(Cited {
                    row: r,
                    verdict,
                    workload: g.workload,
                    held: g.label.clone(),
                    band: b.band.name(),
                    concerns: g.concerns.clone(),
                    num: g.num_label.clone(),
                    den: g.den_label.clone(),
                });
            }
            t.push(vec![
                Cell::text(g.workload.to_string()),
                Cell::text(format!("{} / {}", g.num_label, g.den_label)),
                Cell::text(g.label.clone()),
                Cell::text(b.band.name()),
                Cell::UInt(b.n as u64),
                Cell::num(b.geomean, NumFmt::Ratio),
                Cell::num(b.min, NumFmt::Ratio),
                Cell::num(b.max, NumFmt::Ratio),
                Cell::text(winner_text(g, w)),
                Cell::text(format!("{agree}/{}", b.n)),
                Cell::text(if g.concerns.is_empty() {
                    String::new()
                } else {
                    format!("not representative: {}", kinds_text(&g.concerns))
                }),
            ]);
        }
        if cite {
            told.insert(g.workload);
        }
    }
    (t, list)
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
    ]);
    for g in groups.iter().filter(|g| g.charted) {
        for r in &g.rows {
            let (n, d) = (&a.entries[r.num], &a.entries[r.den]);
            t.push(vec![
                Cell::text(g.workload.to_string()),
                Cell::text(format!("{} / {}", g.num_label, g.den_label)),
                Cell::text(g.label.clone()),
                Cell::text(case_text(d)),
                Cell::opt(n.time_s(), NumFmt::Seconds),
                Cell::opt(d.time_s(), NumFmt::Seconds),
                Cell::num(r.ratio, NumFmt::Ratio),
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
