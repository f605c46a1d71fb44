//! A comparison report as text (terminal), Markdown (a CI comment) or JSON (machines).
//!
//! Every format states the set-up differences first, then the outcome and the counts per
//! verdict, then the cases that matter (regressions worst first, failures, missing and new
//! cases, improvements), and the thresholds and methods used. Renderers return strings; the
//! caller decides where they go.

use super::analysis::{Basis, CaseComparison, CaseStats, Comparison, Verdict};
use super::gate::{Report, Side};
use super::metric::{format_value, MetricChoice};
use super::stats::Correction;
use crate::results::schema::CaseStatus;
use serde::Serialize;
use std::collections::BTreeMap;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// Rows of the folded Markdown table at most (GitHub comments hold 65,536 characters).
const MD_MAX_FOLDED_ROWS: usize = 300;

/// Renders `report` in `format`. `all` lists every case in the text format.
pub fn render(report: &Report, format: Format, all: bool) -> String {
    match format {
        Format::Text => text(report, all),
        Format::Markdown => markdown(report),
        Format::Json => json(report),
    }
}

/// The thresholds and methods, in one paragraph.
pub fn thresholds(c: &Comparison) -> String {
    let s = &c.settings;
    let metric = match s.metric {
        MetricChoice::Auto => {
            "auto (busbw for collectives, GFLOP/s per device for GEMMs, time where neither exists)"
                .to_string()
        }
        MetricChoice::Fixed(m) => format!("{} (time where a case lacks it)", m.name()),
    };
    let control = match s.correction {
        Correction::Holm => format!(
            "Holm-corrected over {} compared cases (chance of any false alarm ≤ {})",
            c.tested,
            pct0(s.alpha())
        ),
        Correction::BenjaminiHochberg => format!(
            "Benjamini–Hochberg-corrected over {} compared cases (expected share of false alarms ≤ {})",
            c.tested,
            pct0(s.alpha())
        ),
        Correction::None => {
            "not corrected for multiple comparisons (with many cases, some are flagged by chance)"
                .to_string()
        }
    };
    let method = if run_level(c) {
        format!(
            "Runs: {} baseline, {} candidate; each run is summarised by its median. Change: \
             geometric mean of the candidate's run medians / the baseline's − 1, with a {} \
             interval (Welch t on the log run medians, so run-to-run variance is in it). \
             p: two-sided Welch t",
            c.runs_baseline,
            c.runs_candidate,
            pct0(s.confidence)
        )
    } else {
        format!(
            "One run on a side: change = candidate median / baseline median − 1 over the batch \
             samples, with a {} interval (exact bootstrap of the median on the log scale, \
             Student t); it holds no run-to-run variance. p: two-sided Mann–Whitney U",
            pct0(s.confidence)
        )
    };
    let across = if c.across_setups {
        " Every verdict compares different set-ups (--allow-mismatch)."
    } else {
        ""
    };
    format!(
        "Metric: {metric}. {method}, {control}. Regressed / improved: corrected p ≤ {} and the \
         whole interval beyond the noise band ±{} on the worse / better side; within noise: \
         significant but inside the band.{across}",
        trim_num(s.alpha()),
        pct0(s.noise),
    )
}

/// Whether the cases were judged on run-level statistics (several runs a side).
fn run_level(c: &Comparison) -> bool {
    c.runs_baseline >= 2 && c.runs_candidate >= 2
}

/// A verdict's name, marked when the comparison crosses set-ups.
fn verdict_label(c: &Comparison, v: Verdict) -> String {
    if c.across_setups {
        format!("{} (across set-ups)", v.label())
    } else {
        v.label().to_string()
    }
}

/// `0.05` → `5%`, `0.025` → `2.5%`.
fn pct0(x: f64) -> String {
    format!("{}%", trim_num(x * 100.0))
}

/// A number without trailing zeros (up to 4 decimals).
fn trim_num(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A signed relative change: `+12.3%`, `−0.45%`.
pub fn pct(x: f64) -> String {
    let v = x * 100.0;
    let s = if v.abs() < 10.0 {
        format!("{:.2}%", v.abs())
    } else {
        format!("{:.1}%", v.abs())
    };
    if v < 0.0 && s.trim_end_matches('%').parse::<f64>().unwrap_or(0.0) != 0.0 {
        format!("−{s}")
    } else {
        format!("+{s}")
    }
}

fn p_value(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

fn status_name(s: Option<CaseStatus>) -> &'static str {
    s.map_or("absent", CaseStatus::name)
}

/// Cells of a case with statistics: change, interval, corrected p, metric, baseline,
/// candidate, samples.
fn stat_cells(s: &CaseStats) -> [String; 7] {
    let m = s.metric;
    [
        pct(s.change.change),
        format!("[{}, {}]", pct(s.change.ci_low), pct(s.change.ci_high)),
        p_value(s.p_adjusted),
        format!("{} ({})", m.name(), m.unit()),
        format_value(m, s.change.median_a),
        format_value(m, s.change.median_b),
        match s.basis {
            Basis::Runs => format!("{}/{} runs", s.n_baseline, s.n_candidate),
            Basis::Batches => format!("{}/{}", s.n_baseline, s.n_candidate),
        },
    ]
}

const STAT_HEADER: [&str; 10] = [
    "verdict",
    "change",
    "interval",
    "p (corr.)",
    "metric",
    "baseline",
    "candidate",
    "n",
    "case",
    "id",
];

fn stat_row(cmp: &Comparison, c: &CaseComparison) -> Vec<String> {
    let mut row = vec![verdict_label(cmp, c.verdict)];
    match &c.stats {
        Some(s) => row.extend(stat_cells(s)),
        None => row.extend(std::iter::repeat_n(String::new(), 7)),
    }
    row.push(c.label.clone());
    row.push(c.id.clone());
    row
}

/// Left-aligned columns separated by two spaces (widths in characters).
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, cell) in r.iter().enumerate() {
            width[i] = width[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::from("  ");
        for (i, cell) in cells.iter().enumerate() {
            s.push_str(cell);
            if i + 1 < cells.len() {
                let pad = width[i] - cell.chars().count() + 2;
                s.extend(std::iter::repeat_n(' ', pad));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

fn side_line(s: &Side) -> String {
    if s.runs > 1 {
        format!(
            "{} ({} runs, {}, {} cases)",
            s.path, s.runs, s.generator, s.cases
        )
    } else {
        format!(
            "{} (run {}, {}, {} cases; one run)",
            s.path, s.run_id, s.generator, s.cases
        )
    }
}

fn counts_line(c: &Comparison) -> String {
    Verdict::ALL
        .iter()
        .map(|v| format!("{} {}", c.count(*v), v.label()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn of<'a>(c: &'a Comparison, verdicts: &[Verdict]) -> Vec<&'a CaseComparison> {
    c.cases
        .iter()
        .filter(|x| verdicts.contains(&x.verdict))
        .collect()
}

fn status_row(cmp: &Comparison, c: &CaseComparison) -> Vec<String> {
    vec![
        verdict_label(cmp, c.verdict),
        status_name(c.baseline_status).to_string(),
        status_name(c.candidate_status).to_string(),
        c.label.clone(),
        c.id.clone(),
        c.note.clone().unwrap_or_default(),
    ]
}

const STATUS_HEADER: [&str; 6] = ["verdict", "baseline", "candidate", "case", "id", "note"];

fn text(r: &Report, all: bool) -> String {
    let c = &r.comparison;
    let mut out = String::new();
    out.push_str("scalebench compare\n");
    out.push_str(&format!("  baseline:  {}\n", side_line(&r.baseline)));
    out.push_str(&format!("  candidate: {}\n", side_line(&r.candidate)));
    if !r.differences.is_empty() {
        out.push_str("\nThe set-ups differ:\n");
        for d in &r.differences {
            let mark = if d.blocking { "!" } else { "-" };
            out.push_str(&format!(
                "  {mark} {}: {} → {}\n",
                d.what, d.baseline, d.candidate
            ));
        }
    }
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str(&format!(
        "\n{}\n{} matched, {}\n",
        r.outcome(),
        c.matched(),
        counts_line(c)
    ));
    let sections: [(&str, &[Verdict]); 2] = [
        ("Regressions (worst first)", &[Verdict::Regressed]),
        ("Improvements (best first)", &[Verdict::Improved]),
    ];
    for (title, verdicts) in sections {
        let rows: Vec<Vec<String>> = of(c, verdicts)
            .into_iter()
            .map(|x| stat_row(c, x))
            .collect();
        if !rows.is_empty() {
            out.push_str(&format!("\n{title}:\n{}", table(&STAT_HEADER, &rows)));
        }
    }
    let status: Vec<Vec<String>> = of(
        c,
        &[
            Verdict::Failed,
            Verdict::Missing,
            Verdict::New,
            Verdict::Fixed,
        ],
    )
    .into_iter()
    .map(|x| status_row(c, x))
    .collect();
    if !status.is_empty() {
        out.push_str(&format!(
            "\nStatus changes, missing and new cases:\n{}",
            table(&STATUS_HEADER, &status)
        ));
    }
    let noted: Vec<Vec<String>> = c
        .cases
        .iter()
        .filter(|x| {
            x.verdict == Verdict::NotCompared
                || (x.verdict == Verdict::NoChange && x.note.is_some())
        })
        .map(|x| status_row(c, x))
        .collect();
    if !noted.is_empty() {
        out.push_str(&format!(
            "\nNot judged (see the note):\n{}",
            table(&STATUS_HEADER, &noted)
        ));
    }
    if all {
        let rest: Vec<Vec<String>> = of(c, &[Verdict::WithinNoise, Verdict::NoChange])
            .into_iter()
            .map(|x| stat_row(c, x))
            .collect();
        if !rest.is_empty() {
            out.push_str(&format!(
                "\nWithin noise and no change:\n{}",
                table(&STAT_HEADER, &rest)
            ));
        }
    }
    out.push_str(&format!("\n{}\n", thresholds(c)));
    out
}

/// Escapes text for a Markdown table cell.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn md_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|x| md_cell(x)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

fn md_stat_row(cmp: &Comparison, c: &CaseComparison) -> Vec<String> {
    let mut row = stat_row(cmp, c);
    row[0] = format!("**{}**", row[0]);
    let id = row.pop().unwrap_or_default();
    let case = row.pop().unwrap_or_default();
    row.push(format!("{case} `{id}`"));
    row
}

fn markdown(r: &Report) -> String {
    let c = &r.comparison;
    let header: Vec<&str> = STAT_HEADER[..9].to_vec();
    let mut out = format!("### scalebench compare: {}\n\n", r.outcome());
    let md_side = |s: &Side| {
        if s.runs > 1 {
            format!("`{}` ({} runs, {})", md_cell(&s.path), s.runs, s.generator)
        } else {
            format!(
                "`{}` (run `{}`, {}; one run)",
                s.path, s.run_id, s.generator
            )
        }
    };
    out.push_str(&format!(
        "**Baseline** {} · **candidate** {}\n\n",
        md_side(&r.baseline),
        md_side(&r.candidate)
    ));
    if !r.differences.is_empty() {
        out.push_str("> **The set-ups differ**\n");
        for d in &r.differences {
            let mark = if d.blocking { " (not comparable)" } else { "" };
            out.push_str(&format!(
                "> - {}{mark}: `{}` → `{}`\n",
                d.what,
                md_cell(&d.baseline),
                md_cell(&d.candidate)
            ));
        }
        out.push('\n');
    }
    for w in &r.warnings {
        out.push_str(&format!("> warning: {}\n", md_cell(w)));
    }
    if !r.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("{} matched: {}\n\n", c.matched(), counts_line(c)));
    let shown: Vec<Vec<String>> = of(c, &[Verdict::Regressed, Verdict::Improved])
        .into_iter()
        .map(|x| md_stat_row(c, x))
        .collect();
    if !shown.is_empty() {
        out.push_str(&md_table(&header, &shown));
        out.push('\n');
    }
    let status: Vec<Vec<String>> = of(
        c,
        &[
            Verdict::Failed,
            Verdict::Missing,
            Verdict::New,
            Verdict::Fixed,
        ],
    )
    .into_iter()
    .map(|x| {
        let mut row = status_row(c, x);
        row[0] = format!("**{}**", row[0]);
        row
    })
    .collect();
    if !status.is_empty() {
        out.push_str(&md_table(&STATUS_HEADER, &status));
        out.push('\n');
    }
    let rest: Vec<&CaseComparison> = of(
        c,
        &[
            Verdict::WithinNoise,
            Verdict::NoChange,
            Verdict::NotCompared,
        ],
    );
    if !rest.is_empty() {
        out.push_str(&format!(
            "<details><summary>{} other cases ({} within noise, {} no change, {} not compared)</summary>\n\n",
            rest.len(),
            c.count(Verdict::WithinNoise),
            c.count(Verdict::NoChange),
            c.count(Verdict::NotCompared)
        ));
        let mut header = header.clone();
        header.push("note");
        let rows: Vec<Vec<String>> = rest
            .iter()
            .take(MD_MAX_FOLDED_ROWS)
            .map(|x| {
                let mut row = md_stat_row(c, x);
                row[0] = verdict_label(c, x.verdict);
                row.push(x.note.clone().unwrap_or_default());
                row
            })
            .collect();
        out.push_str(&md_table(&header, &rows));
        if rest.len() > MD_MAX_FOLDED_ROWS {
            out.push_str(&format!(
                "\n… and {} more (`--format json` lists every case).\n",
                rest.len() - MD_MAX_FOLDED_ROWS
            ));
        }
        out.push_str("\n</details>\n\n");
    }
    out.push_str(&format!("<sub>{}</sub>\n", thresholds(c)));
    out
}

/// Version of the JSON layout below.
pub const JSON_VERSION: u32 = 1;

#[derive(Serialize)]
struct JsonReport<'a> {
    /// Version of this layout.
    compare_format_version: u32,
    baseline: &'a Side,
    candidate: &'a Side,
    settings: JsonSettings,
    /// How the set-ups differ.
    differences: Vec<JsonDifference<'a>>,
    warnings: &'a [String],
    summary: JsonSummary,
    /// Every case, in display order.
    cases: Vec<JsonCase<'a>>,
}

#[derive(Serialize)]
struct JsonSettings {
    metric: &'static str,
    /// Half-width of the noise band, as a fraction.
    noise: f64,
    confidence: f64,
    /// Significance level 1 − confidence.
    alpha: f64,
    /// `holm`, `bh` or `none`.
    correction: &'static str,
    /// Runs on each side; with two or more on both, cases are judged on run-level statistics.
    runs_baseline: usize,
    runs_candidate: usize,
    /// True when set-ups that change performance were compared anyway (`--allow-mismatch`).
    across_setups: bool,
    /// The test behind the p-values.
    test: &'static str,
    /// How the interval is computed.
    interval: &'static str,
    fail_on: &'static str,
    /// The thresholds in words.
    description: String,
}

#[derive(Serialize)]
struct JsonDifference<'a> {
    what: &'a str,
    baseline: &'a str,
    candidate: &'a str,
    blocking: bool,
}

#[derive(Serialize)]
struct JsonSummary {
    /// `regression`, `changed`, or `ok`.
    result: &'static str,
    exit_code: u8,
    /// Cases that fail the gate.
    failing: usize,
    /// Cases present on both sides.
    matched: usize,
    /// Cases with a p-value (the family of the correction).
    tested: usize,
    /// Cases per verdict.
    counts: BTreeMap<&'static str, usize>,
    /// The outcome in words.
    outcome: String,
}

#[derive(Serialize)]
struct JsonCase<'a> {
    id: &'a str,
    label: &'a str,
    verdict: &'static str,
    baseline_status: Option<&'static str>,
    candidate_status: Option<&'static str>,
    /// Present when both sides were measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<JsonStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonStats {
    metric: &'static str,
    /// `batches` (the samples of one run a side) or `runs` (one median per run).
    basis: &'static str,
    /// Unit of the medians.
    unit: &'static str,
    higher_is_better: bool,
    baseline_median: f64,
    candidate_median: f64,
    /// candidate_median / baseline_median − 1.
    change: f64,
    ci_low: f64,
    ci_high: f64,
    p_value: f64,
    p_adjusted: f64,
    p_exact: bool,
    n_baseline: usize,
    n_candidate: usize,
}

fn json(r: &Report) -> String {
    let c = &r.comparison;
    let s = &c.settings;
    let result = if r.exit_code == 0 {
        "ok"
    } else if c.count(Verdict::Regressed) + c.count(Verdict::Failed) > 0 {
        "regression"
    } else {
        "changed"
    };
    let doc = JsonReport {
        compare_format_version: JSON_VERSION,
        baseline: &r.baseline,
        candidate: &r.candidate,
        settings: JsonSettings {
            metric: s.metric.name(),
            noise: s.noise,
            confidence: s.confidence,
            alpha: s.alpha(),
            correction: match s.correction {
                Correction::Holm => "holm",
                Correction::BenjaminiHochberg => "bh",
                Correction::None => "none",
            },
            runs_baseline: c.runs_baseline,
            runs_candidate: c.runs_candidate,
            across_setups: c.across_setups,
            test: if run_level(c) {
                "welch_t_log_run_medians_two_sided"
            } else {
                "mann_whitney_u_two_sided"
            },
            interval: if run_level(c) {
                "welch_t_log_run_medians"
            } else {
                "exact_bootstrap_median_log_student_t"
            },
            fail_on: r.fail_on.name(),
            description: thresholds(c),
        },
        differences: r
            .differences
            .iter()
            .map(|d| JsonDifference {
                what: &d.what,
                baseline: &d.baseline,
                candidate: &d.candidate,
                blocking: d.blocking,
            })
            .collect(),
        warnings: &r.warnings,
        summary: JsonSummary {
            result,
            exit_code: r.exit_code,
            failing: r.failing,
            matched: c.matched(),
            tested: c.tested,
            counts: Verdict::ALL
                .iter()
                .map(|v| (v.name(), c.count(*v)))
                .collect(),
            outcome: r.outcome(),
        },
        cases: c
            .cases
            .iter()
            .map(|x| JsonCase {
                id: &x.id,
                label: &x.label,
                verdict: x.verdict.name(),
                baseline_status: x.baseline_status.map(CaseStatus::name),
                candidate_status: x.candidate_status.map(CaseStatus::name),
                stats: x.stats.map(|s| JsonStats {
                    metric: s.metric.name(),
                    basis: s.basis.name(),
                    unit: s.metric.unit(),
                    higher_is_better: s.metric.higher_is_better(),
                    baseline_median: s.change.median_a,
                    candidate_median: s.change.median_b,
                    change: s.change.change,
                    ci_low: s.change.ci_low,
                    ci_high: s.change.ci_high,
                    p_value: s.p_value,
                    p_adjusted: s.p_adjusted,
                    p_exact: s.p_exact,
                    n_baseline: s.n_baseline,
                    n_candidate: s.n_candidate,
                }),
                note: x.note.as_deref(),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| {
        // Only non-finite numbers could fail here, and the statistics never produce them.
        format!("{{\"error\": \"cannot encode the report: {e}\"}}")
    });
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_numbers() {
        assert_eq!(pct(0.2), "+20.0%");
        assert_eq!(pct(-0.005), "−0.50%");
        assert_eq!(pct(-0.00001), "+0.00%");
        assert_eq!(pct(0.0), "+0.00%");
        assert_eq!(pct0(0.05), "5%");
        assert_eq!(pct0(0.025), "2.5%");
        assert_eq!(trim_num(0.05), "0.05");
        assert_eq!(p_value(0.5), "0.500");
        assert_eq!(p_value(1.5e-8), "1.5e-8");
    }

    #[test]
    fn tables_align_by_characters() {
        let t = table(
            &["a", "bb"],
            &[
                vec!["µµµ".into(), "x".into()],
                vec!["y".into(), "zz".into()],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "  a    bb");
        assert_eq!(lines[1], "  µµµ  x");
        assert_eq!(lines[2], "  y    zz");
        let md = md_table(&["a", "b"], &[vec!["x|y".into(), "z".into()]]);
        assert_eq!(md, "| a | b |\n|---|---|\n| x\\|y | z |\n");
    }
}
