//! Case-by-case comparison of two results files: cases matched by their stable id, a relative
//! change of the median with a confidence interval and a p-value for each case measured on
//! both sides, a multiple-comparison correction over all of them, and a verdict per case.
//!
//! The verdict follows criterion's rule, made safe for many cases at once: a case *regressed*
//! only if its corrected p-value is at most α = 1 − confidence **and** its whole interval lies
//! beyond the noise band on the worse side (improved: the better side); significant but
//! reaching into the band is *within noise*; not significant after correction is *no change*.
//! Because a regression needs a corrected rejection, Holm bounds the chance that a comparison
//! in which nothing changed reports any regression by α (Benjamini–Hochberg bounds the expected
//! share of false alarms among the alarms instead).

use super::metric::{Metric, MetricChoice};
use super::stats::{self, Correction, MedianChange, MW_EXACT_MAX_CELLS};
use crate::results::schema::{CaseResult, CaseStatus, ResultsFile};
use crate::stats::quantile_sorted;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Mutex;

/// How a comparison is judged (what the user asked for, resolved).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub metric: MetricChoice,
    /// Half-width of the band of relative changes treated as noise (0.02 = ±2 %).
    pub noise: f64,
    /// Confidence of the intervals; α = 1 − confidence is also the significance level.
    pub confidence: f64,
    pub correction: Correction,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            metric: MetricChoice::Auto,
            noise: 0.02,
            confidence: 0.95,
            correction: Correction::Holm,
        }
    }
}

impl Settings {
    /// The significance level α = 1 − confidence (rounded to 12 decimals, so 0.95 gives
    /// 0.05, not 0.050000000000000044).
    pub fn alpha(&self) -> f64 {
        ((1.0 - self.confidence) * 1e12).round() / 1e12
    }
}

/// What happened to one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// Significantly worse, the whole interval beyond the noise band.
    Regressed,
    /// Measured in the baseline; wrong, failed or timed out in the candidate.
    Failed,
    /// In the baseline only.
    Missing,
    /// In the candidate only.
    New,
    /// Significantly better, the whole interval beyond the noise band.
    Improved,
    /// Failed (or wrong, timed out, skipped) in the baseline; measured in the candidate.
    Fixed,
    /// Significant, but the interval reaches into the noise band.
    WithinNoise,
    /// Not significant after the correction.
    NoChange,
    /// Present on both sides but without numbers to compare (both failed or skipped, too few
    /// samples, a zero time).
    NotCompared,
}

impl Verdict {
    /// Every verdict, in display order.
    pub const ALL: [Verdict; 9] = [
        Verdict::Regressed,
        Verdict::Failed,
        Verdict::Missing,
        Verdict::New,
        Verdict::Improved,
        Verdict::Fixed,
        Verdict::WithinNoise,
        Verdict::NoChange,
        Verdict::NotCompared,
    ];

    /// The wire name (JSON).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Failed => "failed",
            Verdict::Missing => "missing",
            Verdict::New => "new",
            Verdict::Improved => "improved",
            Verdict::Fixed => "fixed",
            Verdict::WithinNoise => "within_noise",
            Verdict::NoChange => "no_change",
            Verdict::NotCompared => "not_compared",
        }
    }

    /// The name for people.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::WithinNoise => "within noise",
            Verdict::NoChange => "no change",
            Verdict::NotCompared => "not compared",
            v => v.name(),
        }
    }
}

/// What the statistics of a case were computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The batch samples of one run per side (several runs on one side are pooled): the
    /// interval holds within-run noise only, not run-to-run variance.
    Batches,
    /// One median per run, two or more runs per side: run-to-run variance is in the interval
    /// (Welch's t on the log medians; see [`stats::run_level_change`]).
    Runs,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Batches => "batches",
            Basis::Runs => "runs",
        }
    }
}

/// The numbers behind a case's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaseStats {
    pub metric: Metric,
    pub basis: Basis,
    /// Samples (basis `Batches`) or runs (basis `Runs`) on each side.
    pub n_baseline: usize,
    pub n_candidate: usize,
    /// Basis `Batches`: medians of the samples; `Runs`: geometric means of the per-run medians.
    pub change: MedianChange,
    /// Two-sided p-value: Mann–Whitney U (basis `Batches`) or Welch's t (basis `Runs`).
    pub p_value: f64,
    /// Whether `p_value` is exact (else the normal approximation).
    pub p_exact: bool,
    /// `p_value` after the correction over all compared cases.
    pub p_adjusted: f64,
}

impl CaseStats {
    /// ln of the ratio in the worse direction (> 0 = worse): a common scale to rank time
    /// increases and rate drops together (time ×2 and busbw ×½ both give ln 2).
    pub fn worsening(&self) -> f64 {
        let l = (1.0 + self.change.change).ln();
        if self.metric.higher_is_better() {
            -l
        } else {
            l
        }
    }
}

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseComparison {
    pub id: String,
    /// Human label of the case's parameters.
    pub label: String,
    pub verdict: Verdict,
    pub baseline_status: Option<CaseStatus>,
    pub candidate_status: Option<CaseStatus>,
    /// Present when both sides were measured and their samples could be analysed.
    pub stats: Option<CaseStats>,
    /// Why the verdict is what it is, when that is not obvious from the numbers.
    pub note: Option<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub settings: Settings,
    /// Cases in display order: regressed (worst first), failed, missing, new, improved (best
    /// first), fixed, within noise, no change, not compared; file order within a verdict.
    pub cases: Vec<CaseComparison>,
    /// Cases with a p-value: the family the correction is applied over.
    pub tested: usize,
    /// Runs (results files) on each side.
    pub runs_baseline: usize,
    pub runs_candidate: usize,
    /// Set when set-ups that change performance were compared anyway (`--allow-mismatch`):
    /// every verdict crosses set-ups.
    pub across_setups: bool,
}

impl Comparison {
    /// Number of cases with this verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.cases.iter().filter(|c| c.verdict == v).count()
    }

    /// Cases present on both sides.
    pub fn matched(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| !matches!(c.verdict, Verdict::Missing | Verdict::New))
            .count()
    }
}

/// What depends only on sample counts, computed once per comparison and shared by the
/// threads that analyse cases.
#[derive(Default)]
struct Tables {
    weights: HashMap<usize, Vec<f64>>,
    mw: HashMap<(usize, usize), Vec<f64>>,
    /// Two-sided t quantiles by whole degrees of freedom (∞ as u64::MAX), filled as needed.
    t: Mutex<HashMap<u64, f64>>,
}

impl Tables {
    /// Makes sure the tables for these sample counts exist.
    fn prepare(&mut self, na: usize, nb: usize) {
        for n in [na, nb] {
            self.weights
                .entry(n)
                .or_insert_with(|| stats::median_bootstrap_weights(n));
        }
        if na * nb <= MW_EXACT_MAX_CELLS {
            self.mw
                .entry((na, nb))
                .or_insert_with(|| stats::mann_whitney_exact_cdf(na, nb));
        }
    }

    /// The two-sided t quantile for `confidence` at `df` degrees of freedom (whole or ∞).
    fn t_quantile(&self, confidence: f64, df: f64) -> f64 {
        let key = if df.is_finite() { df as u64 } else { u64::MAX };
        let mut cache = self.t.lock().unwrap_or_else(|e| e.into_inner());
        *cache
            .entry(key)
            .or_insert_with(|| stats::t_quantile(confidence, df))
    }
}

/// Sample count of a case's timing (every metric has as many samples as the time).
fn sample_count(c: &CaseResult) -> usize {
    c.timing.as_ref().map_or(0, |t| t.samples_s.len())
}

fn failure_note(side: &str, c: &CaseResult) -> String {
    let what = match c.status {
        CaseStatus::Wrong => format!("{} wrong element(s)", c.wrong),
        s => s.name().to_string(),
    };
    match &c.message {
        Some(m) if !m.is_empty() => format!("{side}: {what}: {m}"),
        _ => format!("{side}: {what}"),
    }
}

/// One case on one side: its record in each run that has it, in run order.
struct SideCase<'a> {
    records: Vec<&'a CaseResult>,
    /// Runs on this side.
    runs: usize,
}

impl<'a> SideCase<'a> {
    fn ok(&self) -> Vec<&'a CaseResult> {
        self.records
            .iter()
            .copied()
            .filter(|c| c.status == CaseStatus::Ok)
            .collect()
    }

    /// The side's status: ok when every run measured it; else the first failure (wrong,
    /// failed, timed out) in any run; skipped when no run measured it.
    fn status(&self) -> (CaseStatus, Option<&'a CaseResult>) {
        let bad = self
            .records
            .iter()
            .find(|c| !matches!(c.status, CaseStatus::Ok | CaseStatus::Skipped));
        if let Some(c) = bad {
            return (c.status, Some(c));
        }
        match self.records.iter().find(|c| c.status == CaseStatus::Ok) {
            Some(_) => (CaseStatus::Ok, None),
            None => (CaseStatus::Skipped, self.records.first().copied()),
        }
    }

    fn note(&self, side: &str) -> String {
        let (_, rec) = self.status();
        let Some(rec) = rec else {
            return format!("{side}: not measured");
        };
        let mut n = failure_note(side, rec);
        if self.runs > 1 {
            let k = self
                .records
                .iter()
                .filter(|c| c.status == rec.status)
                .count();
            n.push_str(&format!(" ({k} of {} runs)", self.runs));
        }
        n
    }
}

fn sorted_samples(case: &CaseResult, metric: Metric) -> Option<Vec<f64>> {
    let mut s = metric.samples(case)?;
    s.sort_unstable_by(f64::total_cmp);
    Some(s)
}

/// The pooled, sorted samples of a side's measured runs.
fn pooled_samples(records: &[&CaseResult], metric: Metric) -> Option<Vec<f64>> {
    let mut all = Vec::new();
    for r in records {
        all.extend(metric.samples(r)?);
    }
    all.sort_unstable_by(f64::total_cmp);
    Some(all)
}

/// Why a case measured on both sides cannot be analysed (its note in the comparison).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum StatsError {
    #[error("no timing samples on one side")]
    NoSamples,
    #[error("too few samples to compare ({baseline} and {candidate}; need ≥ 2 each)")]
    TooFewSamples { baseline: usize, candidate: usize },
    /// [`Tables::prepare`] was not called for these counts (a bug, not an input problem).
    #[error("internal: no bootstrap weights for {baseline} and {candidate} samples")]
    NoWeights { baseline: usize, candidate: usize },
    #[error("a {metric} sample is 0, negative or not finite")]
    NotPositive { metric: &'static str },
    #[error("no samples")]
    Empty,
    #[error("{side} run {run}: no {metric} samples")]
    RunWithoutSamples {
        side: &'static str,
        /// 1-based.
        run: usize,
        metric: &'static str,
    },
    #[error("a run's median {metric} is 0, negative or not finite")]
    RunMedianNotPositive { metric: &'static str },
}

/// Statistics of one case measured on both sides, before the correction (`p_adjusted` = p).
/// Run level when both sides have two or more measured runs, batch level otherwise.
fn case_stats(
    b: &[&CaseResult],
    c: &[&CaseResult],
    settings: &Settings,
    tables: &Tables,
) -> Result<CaseStats, StatsError> {
    let metric = settings.metric.pick(b[0], c[0]);
    if b.len() >= 2 && c.len() >= 2 {
        return run_stats(b, c, metric, settings);
    }
    let (Some(sb), Some(sc)) = (pooled_samples(b, metric), pooled_samples(c, metric)) else {
        return Err(StatsError::NoSamples);
    };
    let (nb, nc) = (sb.len(), sc.len());
    if nb < 2 || nc < 2 {
        return Err(StatsError::TooFewSamples {
            baseline: nb,
            candidate: nc,
        });
    }
    let (Some(wb), Some(wc)) = (tables.weights.get(&nb), tables.weights.get(&nc)) else {
        return Err(StatsError::NoWeights {
            baseline: nb,
            candidate: nc,
        });
    };
    let quantile = |df: f64| tables.t_quantile(settings.confidence, df);
    let change =
        stats::median_change_with(&sb, wb, &sc, wc, quantile).ok_or(StatsError::NotPositive {
            metric: metric.name(),
        })?;
    let cdf = tables.mw.get(&(nb, nc)).map(Vec::as_slice);
    let mw = stats::mann_whitney(&sb, &sc, cdf).ok_or(StatsError::Empty)?;
    Ok(CaseStats {
        metric,
        basis: Basis::Batches,
        n_baseline: nb,
        n_candidate: nc,
        change,
        p_value: mw.p_two_sided,
        p_exact: mw.exact,
        p_adjusted: mw.p_two_sided,
    })
}

/// Run-level statistics: one median per run, Welch's t on their logarithms.
fn run_stats(
    b: &[&CaseResult],
    c: &[&CaseResult],
    metric: Metric,
    settings: &Settings,
) -> Result<CaseStats, StatsError> {
    let medians = |side: &'static str, recs: &[&CaseResult]| -> Result<Vec<f64>, StatsError> {
        recs.iter()
            .enumerate()
            .map(|(i, r)| {
                let s = sorted_samples(r, metric).filter(|s| !s.is_empty()).ok_or(
                    StatsError::RunWithoutSamples {
                        side,
                        run: i + 1,
                        metric: metric.name(),
                    },
                )?;
                Ok(quantile_sorted(&s, 0.5))
            })
            .collect()
    };
    let (mb, mc) = (medians("baseline", b)?, medians("candidate", c)?);
    let r = stats::run_level_change(&mb, &mc, settings.confidence).ok_or(
        StatsError::RunMedianNotPositive {
            metric: metric.name(),
        },
    )?;
    Ok(CaseStats {
        metric,
        basis: Basis::Runs,
        n_baseline: mb.len(),
        n_candidate: mc.len(),
        change: r.change,
        p_value: r.p_two_sided,
        p_exact: false,
        p_adjusted: r.p_two_sided,
    })
}

/// The verdict of a case with statistics, given its corrected p-value.
fn judge(s: &CaseStats, settings: &Settings) -> (Verdict, Option<String>) {
    let (lo, hi) = (s.change.ci_low, s.change.ci_high);
    let n = settings.noise;
    let (worse, better) = if s.metric.higher_is_better() {
        (hi < -n, lo > n)
    } else {
        (lo > n, hi < -n)
    };
    if s.p_adjusted > settings.alpha() {
        let note = (worse || better).then(|| {
            format!(
                "interval beyond the noise band but not significant (p = {:.2e}, corrected {:.2e} > α = {}); more samples would tell",
                s.p_value,
                s.p_adjusted,
                settings.alpha()
            )
        });
        return (Verdict::NoChange, note);
    }
    if worse {
        (Verdict::Regressed, None)
    } else if better {
        (Verdict::Improved, None)
    } else {
        (Verdict::WithinNoise, None)
    }
}

/// Compares every case of `candidate` with the case of the same id in `baseline`.
pub fn compare(baseline: &ResultsFile, candidate: &ResultsFile, settings: &Settings) -> Comparison {
    compare_runs(&[baseline], &[candidate], settings)
}

/// Cases by id over the runs of one side, ids in order of first appearance.
fn by_id<'a>(runs: &[&'a ResultsFile]) -> (Vec<&'a str>, HashMap<&'a str, SideCase<'a>>) {
    let mut order = Vec::new();
    let mut map: HashMap<&str, SideCase<'_>> = HashMap::new();
    for f in runs {
        for c in &f.cases {
            map.entry(c.id.as_str())
                .or_insert_with(|| {
                    order.push(c.id.as_str());
                    SideCase {
                        records: Vec::new(),
                        runs: runs.len(),
                    }
                })
                .records
                .push(c);
        }
    }
    (order, map)
}

/// Cases measured on both sides, waiting for their statistics: (index in the comparison's
/// cases, baseline runs, candidate runs).
type Measured<'a> = Vec<(usize, Vec<&'a CaseResult>, Vec<&'a CaseResult>)>;

/// Compares the runs of `candidate` with the runs of `baseline`, case by case. With two or
/// more runs on both sides a case is judged on one median per run ([`Basis::Runs`]); with one
/// run on a side, on the batch samples ([`Basis::Batches`]).
pub fn compare_runs(
    baseline: &[&ResultsFile],
    candidate: &[&ResultsFile],
    settings: &Settings,
) -> Comparison {
    let (base_order, base) = by_id(baseline);
    let (cand_order, cand) = by_id(candidate);
    let mut tables = Tables::default();
    let mut out: Vec<CaseComparison> = Vec::with_capacity(base_order.len());
    let mut measured: Measured<'_> = Vec::new();
    for id in &base_order {
        let cc = match_case(id, &base[id], cand.get(id), &mut tables, |bo, co| {
            measured.push((out.len(), bo, co));
        });
        out.push(cc);
    }
    for id in &cand_order {
        if !base.contains_key(id) {
            out.push(new_case(id, &cand[id]));
        }
    }
    analyse(&mut out, &measured, settings, &tables);
    let tested = correct_and_judge(&mut out, settings);
    sort_for_display(&mut out);
    Comparison {
        settings: *settings,
        cases: out,
        tested,
        runs_baseline: baseline.len(),
        runs_candidate: candidate.len(),
        across_setups: false,
    }
}

/// The comparison of a baseline case with the candidate's case of the same id (if any), by
/// status; a case ok on both sides goes to `measure` (its statistics come later) and has its
/// bootstrap tables prepared where it will be judged on batches.
fn match_case<'a>(
    id: &str,
    b: &SideCase<'a>,
    c: Option<&SideCase<'a>>,
    tables: &mut Tables,
    measure: impl FnOnce(Vec<&'a CaseResult>, Vec<&'a CaseResult>),
) -> CaseComparison {
    let (b_status, _) = b.status();
    let mut cc = CaseComparison {
        id: id.to_string(),
        label: b.records[0].params.label(),
        verdict: Verdict::Missing,
        baseline_status: Some(b_status),
        candidate_status: None,
        stats: None,
        note: None,
    };
    let Some(c) = c else {
        return cc;
    };
    let (c_status, _) = c.status();
    cc.candidate_status = Some(c_status);
    let ok = |s: CaseStatus| s == CaseStatus::Ok;
    match (ok(b_status), ok(c_status)) {
        (true, true) => {
            cc.verdict = Verdict::NotCompared; // until analysed
            let (bo, co) = (b.ok(), c.ok());
            if bo.len() < 2 || co.len() < 2 {
                let total = |r: &[&CaseResult]| r.iter().map(|x| sample_count(x)).sum();
                tables.prepare(total(&bo), total(&co));
            }
            measure(bo, co);
        }
        (true, false) if c_status == CaseStatus::Skipped => {
            cc.verdict = Verdict::NotCompared;
            cc.note = Some(c.note("candidate"));
        }
        (true, false) => {
            cc.verdict = Verdict::Failed;
            cc.note = Some(c.note("candidate"));
        }
        (false, true) => {
            cc.verdict = Verdict::Fixed;
            cc.note = Some(b.note("baseline"));
        }
        (false, false) => {
            cc.verdict = Verdict::NotCompared;
            cc.note = Some(format!("{}; {}", b.note("baseline"), c.note("candidate")));
        }
    }
    cc
}

/// A candidate case the baseline does not have.
fn new_case(id: &str, c: &SideCase<'_>) -> CaseComparison {
    CaseComparison {
        id: id.to_string(),
        label: c.records[0].params.label(),
        verdict: Verdict::New,
        baseline_status: None,
        candidate_status: Some(c.status().0),
        stats: None,
        note: None,
    }
}

/// The statistics of each measured case, on all cores (each case is independent); a case
/// that cannot be analysed is not compared, with the reason as its note.
fn analyse(
    out: &mut [CaseComparison],
    measured: &Measured<'_>,
    settings: &Settings,
    tables: &Tables,
) {
    let analysed: Vec<(usize, Result<CaseStats, StatsError>)> = measured
        .par_iter()
        .with_min_len(64)
        .map(|(i, b, c)| (*i, case_stats(b, c, settings, tables)))
        .collect();
    for (i, r) in analysed {
        match r {
            Ok(s) => out[i].stats = Some(s),
            Err(why) => {
                out[i].verdict = Verdict::NotCompared;
                out[i].note = Some(why.to_string());
            }
        }
    }
}

/// Corrects the p-values over every case that has one, then judges those cases; returns how
/// many were tested.
fn correct_and_judge(out: &mut [CaseComparison], settings: &Settings) -> usize {
    let tested: Vec<usize> = (0..out.len()).filter(|&i| out[i].stats.is_some()).collect();
    let p: Vec<f64> = tested
        .iter()
        .filter_map(|&i| out[i].stats.map(|s| s.p_value))
        .collect();
    let adjusted = stats::adjust_p_values(&p, settings.correction);
    for (&i, q) in tested.iter().zip(adjusted) {
        if let Some(s) = out[i].stats.as_mut() {
            s.p_adjusted = q;
            let (v, note) = judge(s, settings);
            out[i].verdict = v;
            out[i].note = note;
        }
    }
    tested.len()
}

/// Display order: by verdict; the worst regressions and best improvements first.
fn sort_for_display(out: &mut [CaseComparison]) {
    let key = |c: &CaseComparison| match (c.verdict, c.stats) {
        (Verdict::Regressed, Some(s)) => -s.worsening(),
        (Verdict::Improved, Some(s)) => s.worsening(),
        _ => 0.0,
    };
    out.sort_by(|x, y| x.verdict.cmp(&y.verdict).then(key(x).total_cmp(&key(y))));
}

/// Cases measured (status ok) on both sides whose samples could not be analysed: a results
/// file that says "ok" without usable numbers. A gate must not pass on them.
pub(crate) fn unusable(c: &Comparison) -> Vec<&CaseComparison> {
    c.cases
        .iter()
        .filter(|x| {
            x.verdict == Verdict::NotCompared
                && x.stats.is_none()
                && x.baseline_status == Some(CaseStatus::Ok)
                && x.candidate_status == Some(CaseStatus::Ok)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::io::parse_results;
    use std::path::Path;

    fn golden() -> ResultsFile {
        let text = include_str!("../../tests/golden/results-v1.json");
        parse_results(Path::new("golden"), text).unwrap()
    }

    /// Gives every case of `f` 20 samples spread ±3 % around `scale` × its time.
    fn with_samples(mut f: ResultsFile, scale: impl Fn(usize) -> f64) -> ResultsFile {
        for (k, c) in f.cases.iter_mut().enumerate() {
            let t = c.timing.as_mut().unwrap();
            let base = t.time_s * scale(k);
            t.samples_s = (0..20)
                .map(|i| base * (1.0 + 0.03 * ((i * 7 % 20) as f64 / 19.0 - 0.5) * 2.0))
                .collect();
        }
        f
    }

    #[test]
    fn identical_files_change_nothing() {
        let g = with_samples(golden(), |_| 1.0);
        let r = compare(&g, &g, &Settings::default());
        assert_eq!(r.count(Verdict::NoChange), g.cases.len());
        assert_eq!(r.tested, g.cases.len());
        for c in &r.cases {
            let s = c.stats.unwrap();
            assert_eq!(s.change.change, 0.0);
            assert_eq!(s.p_value, 1.0);
        }
    }

    #[test]
    fn direction_aware_verdicts_and_order() {
        let g = with_samples(golden(), |_| 1.0);
        // case 0 (allreduce) 25 % slower, case 4 (matmul) 40 % slower, case 1 20 % faster
        let cand = with_samples(golden(), |k| match k {
            0 => 1.25,
            4 => 1.4,
            1 => 0.8,
            _ => 1.0,
        });
        let r = compare(&g, &cand, &Settings::default());
        assert_eq!(r.count(Verdict::Regressed), 2);
        assert_eq!(r.count(Verdict::Improved), 1);
        // worst first: matmul (GFLOP/s −29 %) before allreduce (busbw −20 %)
        assert_eq!(r.cases[0].id, g.cases[4].id);
        assert_eq!(r.cases[0].stats.unwrap().metric, Metric::Gflops);
        assert_eq!(r.cases[1].id, g.cases[0].id);
        let s = r.cases[1].stats.unwrap();
        assert_eq!(s.metric, Metric::Busbw);
        assert!((s.change.change - (1.0 / 1.25 - 1.0)).abs() < 1e-9);
        assert!(s.change.ci_high < -0.02);
        // the same comparison by time: same verdicts, opposite sign
        let by_time = Settings {
            metric: MetricChoice::Fixed(Metric::Time),
            ..Settings::default()
        };
        let t = compare(&g, &cand, &by_time);
        assert_eq!(t.count(Verdict::Regressed), 2);
        assert!((t.cases[1].stats.unwrap().change.change - 0.25).abs() < 1e-9);
    }

    #[test]
    fn status_changes_missing_and_new() {
        let g = with_samples(golden(), |_| 1.0);
        let mut cand = g.clone();
        cand.cases[0].status = CaseStatus::Wrong;
        cand.cases[0].wrong = 3;
        let gone = cand.cases.remove(5);
        let mut extra = cand.cases[1].clone();
        extra.id = "00000000000000ff".into();
        cand.cases.push(extra);
        let mut base = g.clone();
        base.cases[2].status = CaseStatus::Failed;
        base.cases[2].message = Some("boom".into());
        let r = compare(&base, &cand, &Settings::default());
        let find = |id: &str| r.cases.iter().find(|c| c.id == id).unwrap();
        assert_eq!(find(&g.cases[0].id).verdict, Verdict::Failed);
        assert!(find(&g.cases[0].id)
            .note
            .as_deref()
            .unwrap()
            .contains("3 wrong"));
        assert_eq!(find(&gone.id).verdict, Verdict::Missing);
        assert_eq!(find("00000000000000ff").verdict, Verdict::New);
        assert_eq!(find(&g.cases[2].id).verdict, Verdict::Fixed);
        assert!(find(&g.cases[2].id)
            .note
            .as_deref()
            .unwrap()
            .contains("boom"));
        assert_eq!(r.matched(), 5);
        assert_eq!(r.tested, 3);
        // too few samples is said, not judged
        let mut few = g.clone();
        few.cases[3].timing.as_mut().unwrap().samples_s.truncate(1);
        let r = compare(&g, &few, &Settings::default());
        let c = r.cases.iter().find(|c| c.id == g.cases[3].id).unwrap();
        assert_eq!(c.verdict, Verdict::NotCompared);
        assert!(c.note.as_deref().unwrap().contains("too few samples"));
    }

    #[test]
    fn significance_is_required_even_beyond_the_band() {
        // 3 samples a side cannot reach p ≤ 0.05 with Mann–Whitney (smallest p is 0.1)
        let mut base = golden();
        let mut cand = golden();
        base.cases.truncate(1);
        cand.cases.truncate(1);
        base.cases[0].timing.as_mut().unwrap().samples_s = vec![1.0, 1.01, 0.99];
        cand.cases[0].timing.as_mut().unwrap().samples_s = vec![2.0, 2.02, 1.98];
        let r = compare(&base, &cand, &Settings::default());
        assert_eq!(r.cases[0].verdict, Verdict::NoChange);
        assert!(r.cases[0]
            .note
            .as_deref()
            .unwrap()
            .contains("not significant"));
    }
}
