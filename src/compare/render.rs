//! A comparison report as text (terminal), Markdown (a CI comment) or JSON (machines).
//!
//! Text and Markdown are one [`Doc`] of the presentation layer (the one the report uses),
//! rendered by its text and Markdown renderers: the set-up differences first, then the outcome
//! and the counts per verdict, then the cases that matter (regressions worst first, failures,
//! missing and new cases, improvements), and the thresholds and methods used. JSON is its own
//! versioned serde layout. Renderers return strings; the caller decides where they go.

use super::analysis::{Basis, CaseComparison, CaseStats, Comparison, Verdict, MDE_POWER};
use super::gate::{DropKind, Report, Side};
use super::metric::MetricChoice;
use super::setups::SetupSummary;
use super::stats::Correction;
use crate::present::doc::{text as plain, Block, Doc, Span};
use crate::present::table::{format_num, Cell, NumFmt, Table, Tone};
use crate::present::{markdown, text};
use crate::results::schema::CaseStatus;
use serde::Serialize;
use std::collections::BTreeMap;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
    /// A self-contained page with old-vs-new charts per size ([`super::html`]).
    Html,
}

/// Renders `report` in `format`. `all` lists every case in the text format.
pub fn render(report: &Report, format: Format, all: bool) -> String {
    match format {
        Format::Text => text::render(&document(report, Target::Terminal { all })),
        Format::Markdown => markdown::render(&document(report, Target::Comment), None),
        Format::Json => json(report),
        Format::Html => super::html::page(report),
    }
}

/// The thresholds and methods, in one paragraph.
pub(crate) fn thresholds(c: &Comparison) -> String {
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
            "Holm-corrected over {} compared cases (chance of any verdict beyond the band while every true change is inside it ≤ {})",
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
    let method = methods(c);
    let across = if c.across_setups {
        " Every verdict compares different set-ups (--allow-mismatch)."
    } else {
        ""
    };
    format!(
        "Metric: {metric}; a run's value is the median of its samples (a sample: one batch's time per operation on the slowest rank), not the mean over ranks of each rank's mean that `scalebench report` headlines (nccl-tests' convention): that figure is in the column \"report's figure\", baseline → candidate (json: baseline_headline, candidate_headline). {method} Regressed / improved: the band test (null: the true change lies anywhere inside ±{}) {control}, corrected p ≤ {} and the change on the worse / better side, so the whole {} interval lies beyond the band; within noise: a significant change (point test, corrected alike) inside the band. MDE: the distance beyond the band's edge a change needs to be caught with {} probability at the level of the correction's first step (α / cases); the gate refuses (exit 2) when the median MDE exceeds the band.{across}",
        pct0(s.noise),
        trim_num(s.alpha()),
        pct0(s.confidence),
        pct0(MDE_POWER),
    )
}

/// How the cases were judged, one sentence per basis in use.
fn methods(c: &Comparison) -> String {
    let conf = pct0(c.settings.confidence);
    let mut out = Vec::new();
    for (basis, n) in c.bases() {
        let how = match basis {
            Basis::Paired => format!(
                "Paired ({n} cases): {} runs a side collected alternately, one log ratio per pair of neighbouring runs, one-sample t (drift and speed modes shared by a pair cancel); change = geometric mean of the ratios − 1, {conf} interval",
                c.runs_baseline
            ),
            Basis::Runs => format!(
                "Runs ({n} cases): {} baseline, {} candidate runs, one median per run; change = trimmed mean of the candidate's log run medians against the baseline's, {conf} interval from Yuen's trimmed t (20 % of runs cut at each end from 10 runs a side, Welch's t below; run-to-run variance is in it)",
                c.runs_baseline, c.runs_candidate
            ),
            Basis::RunRanks => format!(
                "Run ranks ({n} cases): {} baseline, {} candidate runs, one median per run; change = Hodges–Lehmann shift of the log run medians, {conf} Moses interval and Mann–Whitney tests from the same ranks (a phase of slow runs cannot hide a change)",
                c.runs_baseline, c.runs_candidate
            ),
            Basis::Prediction => format!(
                "Prediction ({n} cases): one side measured the case in one run only; that run against a {conf} prediction interval of the other side's run medians"
            ),
            Basis::Batches => format!(
                "Batches ({n} cases): one run a side; change = candidate median / baseline median − 1 over the batch samples, {conf} interval from the exact bootstrap of the median (log scale, Student t), Mann–Whitney U for the tests; it holds no run-to-run variance"
            ),
        };
        out.push(format!("{how}."));
    }
    out.push(
        "Standard errors are floored at the timer's resolution recorded by each run, over √n."
            .to_string(),
    );
    out.join(" ")
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
pub(crate) fn pct(x: f64) -> String {
    crate::present::table::signed_percent(x)
}

/// Who reads the document: the terminal gets every part as its own section (and with `--all`
/// every case); a CI comment stays short (regressions and improvements in one table, the
/// rest folded and capped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Terminal { all: bool },
    Comment,
}

/// Rows of the folded Markdown table at most (GitHub comments hold 65,536 characters).
const COMMENT_MAX_FOLDED_ROWS: usize = 300;

/// The comparison as a document for `target`.
pub(crate) fn document(r: &Report, target: Target) -> Doc {
    let c = &r.comparison;
    let mut doc = Doc::default();
    // Sub-headings sit one level under the comment's own heading.
    let sub = match target {
        Target::Terminal { .. } => {
            doc.title = "scalebench compare".to_string();
            2
        }
        Target::Comment => {
            doc.heading(3, format!("scalebench compare: {}", r.outcome()));
            4
        }
    };
    // An incomplete side says so before anything compared.
    for (name, s) in [("baseline", &r.baseline), ("candidate", &r.candidate)] {
        for line in &s.incomplete {
            doc.para(vec![plain(format!(
                "{name} {line}: its missing cases have no figure to compare."
            ))]);
        }
    }
    doc.blocks.push(Block::Defs(vec![
        ("baseline".to_string(), side(&r.baseline)),
        ("candidate".to_string(), side(&r.candidate)),
    ]));
    if !r.differences.is_empty() {
        doc.heading(sub, "The set-ups differ");
        doc.blocks.push(Block::Bullets(
            r.differences
                .iter()
                .map(|d| {
                    let mark = if d.blocking { " (not comparable)" } else { "" };
                    vec![
                        plain(format!("{}{mark}: ", d.what)),
                        Span::Code(d.baseline.clone()),
                        plain(" → "),
                        Span::Code(d.candidate.clone()),
                    ]
                })
                .collect(),
        ));
    }
    if !r.warnings.is_empty() {
        doc.blocks.push(Block::Warnings(
            r.warnings.iter().map(|w| vec![plain(w.clone())]).collect(),
        ));
    }
    let counts = counts_line(c);
    match target {
        Target::Terminal { .. } => doc.para(vec![
            plain(r.outcome()),
            Span::Break,
            plain(format!("{} matched, {counts}", c.matched())),
        ]),
        Target::Comment => doc.para(vec![plain(format!("{} matched: {counts}", c.matched()))]),
    }
    super::setups::section(&mut doc, r, sub);
    match target {
        Target::Terminal { all } => terminal_sections(&mut doc, c, all, sub),
        Target::Comment => comment_tables(&mut doc, c),
    }
    doc.blocks
        .push(Block::FinePrint(vec![plain(thresholds(c))]));
    doc
}

/// One section per kind of case, each left out when empty.
fn terminal_sections(doc: &mut Doc, c: &Comparison, all: bool, level: u8) {
    let mut section = |title: &str, t: Table| {
        if !t.is_empty() {
            doc.heading(level, title);
            doc.inline_table(t);
        }
    };
    section(
        "Regressions (worst first)",
        stat_table(c, &of(c, &[Verdict::Regressed]), false),
    );
    section(
        "Improvements (best first)",
        stat_table(c, &of(c, &[Verdict::Improved]), false),
    );
    section(
        "Status changes, missing and new cases",
        status_table(c, &of(c, &STATUS_VERDICTS)),
    );
    section(
        "Inconclusive (more runs would tell)",
        stat_table(c, &of(c, &[Verdict::Inconclusive]), true),
    );
    let noted: Vec<&CaseComparison> = c
        .cases
        .iter()
        .filter(|x| x.verdict == Verdict::NotCompared)
        .collect();
    section("Not judged (see the note)", status_table(c, &noted));
    if all {
        section(
            "Within noise and no change",
            stat_table(c, &of(c, &[Verdict::WithinNoise, Verdict::NoChange]), false),
        );
    }
}

/// What matters in view, the rest folded and capped.
fn comment_tables(doc: &mut Doc, c: &Comparison) {
    let shown = stat_table(c, &of(c, &[Verdict::Regressed, Verdict::Improved]), false);
    if !shown.is_empty() {
        doc.inline_table(shown);
    }
    let status = status_table(c, &of(c, &STATUS_VERDICTS));
    if !status.is_empty() {
        doc.inline_table(status);
    }
    let rest = of(
        c,
        &[
            Verdict::WithinNoise,
            Verdict::NoChange,
            Verdict::Inconclusive,
            Verdict::NotCompared,
        ],
    );
    if rest.is_empty() {
        return;
    }
    let mut inner = Doc::default();
    let cap = rest.len().min(COMMENT_MAX_FOLDED_ROWS);
    inner.inline_table(stat_table(c, &rest[..cap], true));
    if rest.len() > cap {
        inner.prose(&format!(
            "… and {} more (`--format json` lists every case).",
            rest.len() - cap
        ));
    }
    doc.blocks.push(Block::Fold {
        summary: format!(
            "{} other cases ({} within noise, {} no change, {} inconclusive, {} not compared)",
            rest.len(),
            c.count(Verdict::WithinNoise),
            c.count(Verdict::NoChange),
            c.count(Verdict::Inconclusive),
            c.count(Verdict::NotCompared)
        ),
        blocks: inner.blocks,
    });
}

/// Verdicts of cases whose status changed or that one side lacks.
const STATUS_VERDICTS: [Verdict; 4] = [
    Verdict::Failed,
    Verdict::Missing,
    Verdict::New,
    Verdict::Fixed,
];

/// A verdict's cell: flagged where a reader must see it, marked when the comparison crosses
/// set-ups.
fn verdict_cell(c: &Comparison, v: Verdict) -> Cell {
    let label = if c.across_setups {
        format!("{} (across set-ups)", v.label())
    } else {
        v.label().to_string()
    };
    let tone = match v {
        Verdict::Regressed | Verdict::Failed | Verdict::Missing => Tone::Bad,
        Verdict::Improved | Verdict::Fixed => Tone::Good,
        Verdict::New | Verdict::Inconclusive => Tone::Neutral,
        Verdict::WithinNoise | Verdict::NoChange | Verdict::NotCompared => {
            return Cell::Text(label)
        }
    };
    Cell::Flag(label, tone)
}

fn status_name(s: Option<CaseStatus>) -> &'static str {
    s.map_or("absent", CaseStatus::name)
}

/// Cells of a case with statistics: change, interval, corrected band p, MDE, metric,
/// baseline, candidate, what `scalebench report` shows for each side, samples.
fn stat_cells(s: &CaseStats) -> [Cell; 9] {
    let m = s.metric;
    [
        Cell::num(s.change.change, NumFmt::Change),
        Cell::Text(format!(
            "[{}, {}]",
            pct(s.change.ci_low),
            pct(s.change.ci_high)
        )),
        Cell::num(s.p_band_adjusted, NumFmt::PValue),
        Cell::Text(format!(
            "{}{}",
            pct(s.mde).trim_start_matches('+'),
            if s.floored { " (timer)" } else { "" }
        )),
        Cell::Text(format!("{} ({})", m.name(), m.unit())),
        Cell::num(s.change.median_a, m.value_fmt()),
        Cell::num(s.change.median_b, m.value_fmt()),
        // The report headlines another statistic (mean over ranks, as nccl-tests): shown beside
        // the medians so a reader holding both documents sees why they differ.
        Cell::Text(match (s.headline_baseline, s.headline_candidate) {
            (None, None) => String::new(),
            (b, c) => {
                let f =
                    |x: Option<f64>| x.map_or("–".to_string(), |v| format_num(v, m.value_fmt()));
                // beside the change, where both sides know their ceiling: how far from it
                let peak = match (s.frac_peak_baseline, s.frac_peak_candidate) {
                    (Some(pb), Some(pc)) => format!(
                        " ({} → {} of peak)",
                        format_num(pb, NumFmt::Percent),
                        format_num(pc, NumFmt::Percent)
                    ),
                    _ => String::new(),
                };
                // where it moves against the medians, the row says why (issue 45)
                let why = if s.headline_opposite() {
                    " (opposite to the medians: a mean, dragged by outlying batches or ranks)"
                } else {
                    ""
                };
                format!("{} → {}{peak}{why}", f(b), f(c))
            }
        }),
        Cell::Text(match s.basis {
            Basis::Batches => format!("{}/{}", s.n_baseline, s.n_candidate),
            b => format!("{}/{} {}", s.n_baseline, s.n_candidate, b.unit()),
        }),
    ]
}

/// Cases with their statistics; `note` adds the note column (cases judged or not).
fn stat_table(cmp: &Comparison, cases: &[&CaseComparison], note: bool) -> Table {
    let mut header = vec![
        "verdict",
        "change",
        "interval",
        "band p (corr.)",
        "MDE",
        "metric",
        "baseline",
        "candidate",
        "report's figure",
        "n",
        "case",
        "id",
    ];
    if note {
        header.push("note");
    }
    let mut t = Table::new(&header);
    for c in cases {
        let mut row = vec![verdict_cell(cmp, c.verdict)];
        match &c.stats {
            Some(s) => row.extend(stat_cells(s)),
            None => row.extend(std::iter::repeat_n(Cell::Empty, 9)),
        }
        row.push(Cell::text(c.display_label()));
        row.push(Cell::text(c.id.clone()));
        if note {
            row.push(Cell::text(c.note.clone().unwrap_or_default()));
        }
        t.push(row);
    }
    t
}

/// Cases judged by their status (failed, missing, new, fixed) or not judged, with the note.
fn status_table(cmp: &Comparison, cases: &[&CaseComparison]) -> Table {
    let mut t = Table::new(&["verdict", "baseline", "candidate", "case", "id", "note"]);
    for c in cases {
        t.push(vec![
            verdict_cell(cmp, c.verdict),
            Cell::text(status_name(c.baseline_status)),
            Cell::text(status_name(c.candidate_status)),
            Cell::text(c.display_label()),
            Cell::text(c.id.clone()),
            Cell::text(c.note.clone().unwrap_or_default()),
        ]);
    }
    t
}

/// A side: its file, then its run(s), writer and cases.
fn side(s: &Side) -> Vec<Span> {
    let mut v = vec![Span::Code(s.path.clone())];
    if s.runs > 1 {
        v.push(plain(format!(
            " ({} runs, {}, {} cases)",
            s.runs, s.generator, s.cases
        )));
    } else {
        v.push(plain(" (run "));
        v.push(Span::Code(s.run_id.clone()));
        v.push(plain(format!(
            ", {}, {} cases; one run)",
            s.generator, s.cases
        )));
    }
    v
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

/// Version of the JSON layout below.
pub(crate) const JSON_VERSION: u32 = 2;

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
    /// Each set-up's cases by verdict, median candidate/baseline time ratio, and the recorded
    /// difference that explains it.
    setups: &'a [SetupSummary],
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
    /// `--pairing` asked for (`auto`, `paired`, `unpaired`), and whether runs were paired.
    pairing: &'static str,
    paired: bool,
    /// The tests behind the p-values, per basis in use (`paired_t_log_ratios`,
    /// `welch_t_log_run_medians`, `t_prediction_interval`, `mann_whitney_u`); each a point
    /// test (two-sided) and a band test (two one-sided tests of the band's edges).
    test: String,
    /// How the intervals are computed, per basis in use.
    interval: String,
    /// Cases per basis.
    bases: BTreeMap<&'static str, usize>,
    /// Power at which each case's MDE is computed.
    mde_power: f64,
    /// The median MDE over the tested cases (the gate refuses when it exceeds `noise`).
    median_mde: Option<f64>,
    /// The statistic each run is summarised by.
    run_statistic: &'static str,
    fail_on: &'static str,
    /// Kinds of dropped cases (ok → failed, skipped, missing) that do not fail the gate.
    allow_dropped: Vec<&'static str>,
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
    /// What tells this case apart from others with the same label (layout, topology, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    setup: Option<&'a str>,
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
    /// Point test ("no change at all"), two-sided, and corrected.
    p_value: f64,
    p_adjusted: f64,
    p_exact: bool,
    /// Band test ("the true change lies inside the band"), and corrected: ≤ α is a verdict.
    p_band: f64,
    p_band_adjusted: f64,
    /// Minimum detectable effect beyond the band's edge (relative), and the true change it
    /// means (in the metric's own sign), at the settings' `mde_power`.
    mde: f64,
    caught_from: f64,
    /// Runs (pairs, samples: `units_kind`) a side that would bring the MDE within the band.
    units_needed: Option<usize>,
    units_kind: &'static str,
    /// True when the error was raised to the timer's resolution.
    floored_at_timer: bool,
    /// The value `scalebench report` shows for the case (the file's headline: mean over
    /// ranks), averaged over the side's runs.
    baseline_headline: Option<f64>,
    candidate_headline: Option<f64>,
    /// True when the headline moved opposite to the medians (a mean dragged by outliers).
    headline_opposite_to_medians: bool,
    /// The headline as a fraction of its ceiling, each side (absent where a side has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_frac_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    candidate_frac_peak: Option<f64>,
    n_baseline: usize,
    n_candidate: usize,
}

fn json(r: &Report) -> String {
    let doc = JsonReport {
        compare_format_version: JSON_VERSION,
        baseline: &r.baseline,
        candidate: &r.candidate,
        settings: json_settings(r),
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
        summary: json_summary(r),
        setups: &r.setups,
        cases: r
            .comparison
            .cases
            .iter()
            .map(|x| json_case(x, r.comparison.settings.noise))
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| {
        // Only non-finite numbers could fail here, and the statistics never produce them.
        format!("{{\"error\": \"cannot encode the report: {e}\"}}")
    });
    text.push('\n');
    // The same JSON value, with bidi overrides and C1 controls from the files as `\uXXXX`.
    crate::present::untrusted::visible_json(&text).into_owned()
}

fn json_settings(r: &Report) -> JsonSettings {
    let c = &r.comparison;
    let s = &c.settings;
    JsonSettings {
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
        pairing: s.pairing.name(),
        paired: c.paired,
        test: per_basis(c, |b| match b {
            Basis::Paired => "paired_t_log_ratios",
            Basis::Runs => "welch_t_log_run_medians",
            Basis::Prediction => "t_prediction_interval",
            Basis::Batches => "mann_whitney_u",
            Basis::RunRanks => "mann_whitney_log_run_medians",
        }),
        interval: per_basis(c, |b| match b {
            Basis::Paired => "paired_t_log_ratios",
            Basis::Runs => "welch_t_log_run_medians",
            Basis::Prediction => "t_prediction_interval",
            Basis::Batches => "exact_bootstrap_median_log_student_t",
            Basis::RunRanks => "hodges_lehmann_moses_log_run_medians",
        }),
        bases: c.bases().into_iter().map(|(b, n)| (b.name(), n)).collect(),
        mde_power: MDE_POWER,
        median_mde: c.median_mde().map(|(m, _)| m),
        run_statistic: "median_of_samples",
        fail_on: r.fail_on.name(),
        allow_dropped: [DropKind::Failed, DropKind::Skipped, DropKind::Missing]
            .into_iter()
            .filter(|k| r.allow_dropped.allows(*k))
            .map(DropKind::name)
            .collect(),
        description: thresholds(c),
    }
}

/// One name per basis in use, joined with `+` (`welch_t_log_run_medians`, or
/// `paired_t_log_ratios+t_prediction_interval`).
fn per_basis(c: &Comparison, name: fn(Basis) -> &'static str) -> String {
    let v: Vec<&str> = c.bases().into_iter().map(|(b, _)| name(b)).collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join("+")
    }
}

fn json_summary(r: &Report) -> JsonSummary {
    let c = &r.comparison;
    let result = if r.exit_code == 0 {
        "ok"
    } else if c.count(Verdict::Regressed) > 0 || c.cases.iter().any(|x| DropKind::of(x).is_some()) {
        "regression"
    } else {
        "changed"
    };
    JsonSummary {
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
    }
}

fn json_case(x: &CaseComparison, noise: f64) -> JsonCase<'_> {
    JsonCase {
        id: &x.id,
        label: &x.label,
        setup: x.setup.as_deref(),
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
            p_band: s.p_band,
            p_band_adjusted: s.p_band_adjusted,
            mde: s.mde,
            caught_from: s.caught_from(noise),
            units_needed: s.units_needed,
            units_kind: s.basis.unit(),
            floored_at_timer: s.floored,
            baseline_headline: s.headline_baseline,
            candidate_headline: s.headline_candidate,
            headline_opposite_to_medians: s.headline_opposite(),
            baseline_frac_peak: s.frac_peak_baseline,
            candidate_frac_peak: s.frac_peak_candidate,
            n_baseline: s.n_baseline,
            n_candidate: s.n_candidate,
        }),
        note: x.note.as_deref(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_numbers() {
        assert_eq!(pct(0.2), "+20.0%");
        assert_eq!(pct(-0.005), "−0.50%");
        assert_eq!(pct0(0.05), "5%");
        assert_eq!(pct0(0.025), "2.5%");
        assert_eq!(trim_num(0.05), "0.05");
    }
}
