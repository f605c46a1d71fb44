//! Case-by-case comparison of two sets of runs: cases matched by their stable id, a relative
//! change with a confidence interval and p-values for each case measured on both sides, a
//! multiple-comparison correction over all of them, and a verdict per case.
//!
//! The verdict follows criterion's rule, made safe for many cases at once and for shifts
//! inside the band. Each case gets two tests:
//! - the **band test** (null: the true change lies inside the noise band, anywhere in it),
//!   two one-sided tests of the shifted nulls combined as p = 2·min; a case *regressed*
//!   (improved) when its corrected band p is at most α = 1 − confidence and the change is on
//!   the worse (better) side. With Holm, the chance that a comparison whose every case moved
//!   by any amount inside the band reports anything beyond it is at most α;
//! - the **point test** (null: no change at all): significant but not beyond the band is
//!   *within noise*, neither is *no change*.
//!
//! Each case is judged on the strongest basis its runs allow, said per case: paired runs
//! (one log ratio per pair collected next to each other), unpaired runs (Welch), one run
//! against a prediction interval of the other side's runs, or one run's batches a side. The
//! standard error is floored at the timer's resolution (recorded per run), so identical
//! values on a coarse clock never read "certain". The minimum detectable effect (MDE) of
//! every case is computed for the family's level at power [`MDE_POWER`].

use super::metric::{Metric, MetricChoice};
use super::stats::{self, Correction, LogChange, MedianChange, MW_EXACT_MAX_CELLS};
use crate::params::{CaseParams, Timing};
use crate::present::table::signed_percent as signed_pct;
use crate::results::schema::{CaseResult, CaseStatus, ResultsFile};
use crate::stats::quantile_sorted;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

/// Power at which the minimum detectable effect is computed.
pub const MDE_POWER: f64 = 0.8;

/// Most runs (or samples) a side the search for "units needed" tries.
const MAX_UNITS_NEEDED: usize = 500;

/// Whether runs are analysed in pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// Paired when both sides have the same number of runs (≥ 2) and, ordered by start time,
    /// every baseline run sits next to a candidate run (A B A B … or A B B A …).
    Auto,
    /// Paired, refused (exit 2) when the runs were not collected alternately.
    Paired,
    /// Never paired.
    Unpaired,
}

impl Pairing {
    pub fn name(self) -> &'static str {
        match self {
            Pairing::Auto => "auto",
            Pairing::Paired => "paired",
            Pairing::Unpaired => "unpaired",
        }
    }
}

/// How a comparison is judged (what the user asked for, resolved).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub metric: MetricChoice,
    /// Half-width of the band of relative changes treated as noise (0.10 = ±10 %).
    pub noise: f64,
    /// Confidence of the intervals; α = 1 − confidence is also the significance level.
    pub confidence: f64,
    pub correction: Correction,
    pub pairing: Pairing,
}

/// The default noise band: the one ci/regression.sh, the docs and the sensitivity study use.
pub const DEFAULT_NOISE: f64 = 0.10;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            metric: MetricChoice::Auto,
            noise: DEFAULT_NOISE,
            confidence: 0.95,
            correction: Correction::Holm,
            pairing: Pairing::Auto,
        }
    }
}

impl Settings {
    /// The significance level α = 1 − confidence (rounded to 12 decimals, so 0.95 gives
    /// 0.05, not 0.050000000000000044).
    pub fn alpha(&self) -> f64 {
        ((1.0 - self.confidence) * 1e12).round() / 1e12
    }

    /// The level one case must reach in the worst step of the correction over `m` cases
    /// (Holm's and Benjamini–Hochberg's first step: α/m; uncorrected: α): the level the
    /// minimum detectable effect is computed for.
    pub fn case_level(&self, m: usize) -> f64 {
        match self.correction {
            Correction::None => self.alpha(),
            _ => self.alpha() / m.max(1) as f64,
        }
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
    /// Not significant after the correction, and the interval either reaches beyond the noise
    /// band on both sides (or is not finite, e.g. [−100 %, +∞ %]): it rules out neither a
    /// regression nor an improvement; or lies wholly beyond one edge: a likely change the
    /// correction cannot confirm. Either way more runs would tell.
    Inconclusive,
    /// Present on both sides but without numbers to compare (both failed or skipped, too few
    /// samples, a zero time).
    NotCompared,
}

impl Verdict {
    /// Every verdict, in display order.
    pub const ALL: [Verdict; 10] = [
        Verdict::Regressed,
        Verdict::Failed,
        Verdict::Missing,
        Verdict::New,
        Verdict::Improved,
        Verdict::Fixed,
        Verdict::WithinNoise,
        Verdict::NoChange,
        Verdict::Inconclusive,
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
            Verdict::Inconclusive => "inconclusive",
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
    /// The batch samples of the one run a side that measured the case (exact bootstrap of
    /// the median, Mann–Whitney): within-run noise only, no run-to-run variance.
    Batches,
    /// One median per run, two or more runs a side, unpaired (Welch's t on the log medians).
    Runs,
    /// One log ratio per pair of runs collected next to each other (one-sample t): drift and
    /// speed modes shared by a pair cancel.
    Paired,
    /// The one run of one side against a prediction interval from the other side's runs.
    Prediction,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Batches => "batches",
            Basis::Runs => "runs",
            Basis::Paired => "paired",
            Basis::Prediction => "prediction",
        }
    }

    /// What `n_baseline` / `n_candidate` and "units needed" count.
    pub fn unit(self) -> &'static str {
        match self {
            Basis::Batches => "samples",
            Basis::Paired => "pairs",
            Basis::Runs | Basis::Prediction => "runs",
        }
    }
}

/// The numbers behind a case's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaseStats {
    pub metric: Metric,
    pub basis: Basis,
    /// Samples (basis `Batches`), runs, or pairs on each side.
    pub n_baseline: usize,
    pub n_candidate: usize,
    /// Basis `Batches`: medians of the samples; else geometric means of the per-run medians
    /// (the single run's median on its side for `Prediction`).
    pub change: MedianChange,
    /// Two-sided p-value of "no change at all": Mann–Whitney U (basis `Batches`) or t.
    pub p_value: f64,
    /// Whether `p_value` is exact (else the normal approximation or a t distribution).
    pub p_exact: bool,
    /// `p_value` after the correction over all compared cases.
    pub p_adjusted: f64,
    /// Two-sided p-value of the band test: "the true change lies inside the noise band".
    pub p_band: f64,
    /// `p_band` after the correction over all compared cases: ≤ α is a verdict beyond the band.
    pub p_band_adjusted: f64,
    /// Minimum detectable effect beyond the band's edge (relative) at power [`MDE_POWER`] and
    /// the family's worst-step level; filled after the correction.
    pub mde: f64,
    /// Runs (pairs, samples) a side for `mde` ≤ the band, if any count up to 500 does.
    pub units_needed: Option<usize>,
    /// Spread of one unit (run, pair, sample) on the log scale.
    pub sd_unit: f64,
    /// Whether the error was raised to the timer's resolution.
    pub floored: bool,
    /// The value `scalebench report` shows for the case (the file's headline for the metric:
    /// the mean over ranks), averaged over the side's runs that measured it.
    pub headline_baseline: Option<f64>,
    pub headline_candidate: Option<f64>,
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

    /// The true change (relative, in the metric's own sign) caught with probability
    /// [`MDE_POWER`]: the band's worse edge plus the MDE.
    pub fn caught_from(&self, noise: f64) -> f64 {
        let (worse, _) = stats::band_edges(noise, self.metric.higher_is_better());
        let w = worse + (1.0 + self.mde).ln();
        if self.metric.higher_is_better() {
            (-w).exp() - 1.0
        } else {
            w.exp() - 1.0
        }
    }
}

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseComparison {
    pub id: String,
    /// Human label of the case's parameters.
    pub label: String,
    /// The parameters that tell this case apart from other cases with the same label
    /// (layout, topology, binding, …), when there are such cases.
    pub setup: Option<String>,
    pub verdict: Verdict,
    pub baseline_status: Option<CaseStatus>,
    pub candidate_status: Option<CaseStatus>,
    /// Present when both sides were measured and their samples could be analysed.
    pub stats: Option<CaseStats>,
    /// Why the verdict is what it is, when that is not obvious from the numbers, and how the
    /// case was judged when not like the rest (a fallback, said per case).
    pub note: Option<String>,
}

impl CaseComparison {
    /// The label with the set-up that tells it apart: `allreduce … [layout=1x2 topology=hybrid]`.
    pub fn display_label(&self) -> String {
        match &self.setup {
            Some(s) => format!("{} [{s}]", self.label),
            None => self.label.clone(),
        }
    }
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
    /// Whether runs were analysed in pairs (see [`Pairing`]).
    pub paired: bool,
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

    /// Cases per basis (only bases in use), in [`Basis`] order.
    pub fn bases(&self) -> Vec<(Basis, usize)> {
        [
            Basis::Paired,
            Basis::Runs,
            Basis::Prediction,
            Basis::Batches,
        ]
        .into_iter()
        .map(|b| {
            let n = self
                .cases
                .iter()
                .filter(|c| c.stats.is_some_and(|s| s.basis == b))
                .count();
            (b, n)
        })
        .filter(|(_, n)| *n > 0)
        .collect()
    }

    /// The median MDE over the tested cases, with the case that has it; `None` if none.
    pub fn median_mde(&self) -> Option<(f64, &CaseComparison)> {
        let mut v: Vec<&CaseComparison> = self.cases.iter().filter(|c| c.stats.is_some()).collect();
        if v.is_empty() {
            return None;
        }
        let mde = |c: &CaseComparison| c.stats.map_or(0.0, |s| s.mde);
        v.sort_by(|x, y| mde(x).total_cmp(&mde(y)));
        let mid = v[(v.len() - 1) / 2];
        Some((mde(mid), mid))
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

/// One record of a case: the run it is in (index in start-time order) and the timer's
/// resolution per operation of its samples (seconds; 0 when not recorded).
#[derive(Clone, Copy)]
struct Rec<'a> {
    case: &'a CaseResult,
    run: usize,
    res_s: f64,
}

/// The timer step of one sample of `c`: the run's recorded resolution over the operations a
/// sample averages (a pipelined batch times `iters / batches` operations at once).
fn op_resolution_s(f: &ResultsFile, c: &CaseResult) -> f64 {
    let launch = f
        .launches
        .iter()
        .find(|l| l.launch_id == c.launch_id && l.provenance.is_some())
        .or_else(|| f.launches.iter().find(|l| l.provenance.is_some()));
    let res = launch
        .and_then(|l| l.provenance.as_ref())
        .map_or(0.0, |p| p.timer.resolution_s);
    let ops = match &c.timing {
        Some(t) if t.mode == Timing::Pipelined && t.batches > 0 => {
            f64::from((t.iters / t.batches).max(1))
        }
        _ => 1.0,
    };
    if res.is_finite() && res > 0.0 {
        res / ops
    } else {
        0.0
    }
}

/// One case on one side: its record in each run that has it, in run order.
struct SideCase<'a> {
    records: Vec<Rec<'a>>,
    /// Runs on this side.
    runs: usize,
}

impl<'a> SideCase<'a> {
    fn ok(&self) -> Vec<Rec<'a>> {
        self.records
            .iter()
            .copied()
            .filter(|c| c.case.status == CaseStatus::Ok)
            .collect()
    }

    /// The side's status: ok when a run measured it and none failed; else the first failure
    /// (wrong, failed, timed out) in any run; skipped when no run measured it.
    fn status(&self) -> (CaseStatus, Option<&'a CaseResult>) {
        let bad = self
            .records
            .iter()
            .find(|c| !matches!(c.case.status, CaseStatus::Ok | CaseStatus::Skipped));
        if let Some(c) = bad {
            return (c.case.status, Some(c.case));
        }
        match self
            .records
            .iter()
            .find(|c| c.case.status == CaseStatus::Ok)
        {
            Some(_) => (CaseStatus::Ok, None),
            None => (CaseStatus::Skipped, self.records.first().map(|r| r.case)),
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
                .filter(|c| c.case.status == rec.status)
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
    #[error("no spread: every value on each side is identical, the sides differ, and the runs record no timer resolution to bound the error; give more runs, or runs whose timer resolution is recorded")]
    NoSpread,
}

/// What every case of one comparison shares.
struct Ctx<'s> {
    settings: &'s Settings,
    paired: bool,
    runs_baseline: usize,
    runs_candidate: usize,
}

/// A case's statistics and, when it was judged differently from the comparison's main
/// basis, a note saying how.
type Judged = (CaseStats, Option<String>);

/// Statistics of one case measured on both sides, before the correction. Paired runs when
/// the comparison pairs and ≥ 2 pairs have the case; else unpaired runs with ≥ 2 runs a side;
/// one run against the other side's runs; or the batches of one run a side.
fn case_stats(
    b: &[Rec<'_>],
    c: &[Rec<'_>],
    ctx: &Ctx<'_>,
    tables: &Tables,
) -> Result<Judged, StatsError> {
    let metric = ctx.settings.metric.pick(b[0].case, c[0].case);
    let mut note = None;
    if ctx.paired {
        match paired_stats(b, c, metric, ctx)? {
            Ok((s, n)) => return Ok((with_headlines(s, b, c), n)),
            Err(why) => note = Some(why),
        }
    }
    let (s, how) = match (b.len(), c.len()) {
        (1, 1) => {
            let s = batch_stats(b[0], c[0], metric, ctx, tables)?;
            let multi = ctx.runs_baseline > 1 || ctx.runs_candidate > 1;
            let how = multi.then(|| {
                "only one run a side measured it: judged on that run's batch samples, without run-to-run variance".to_string()
            });
            (s, how)
        }
        (nb, nc) if nb >= 2 && nc >= 2 => {
            let s = run_stats(b, c, metric, ctx)?;
            let mut gaps = Vec::new();
            if nb < ctx.runs_baseline {
                gaps.push(format!("{nb} of {} baseline runs", ctx.runs_baseline));
            }
            if nc < ctx.runs_candidate {
                gaps.push(format!("{nc} of {} candidate runs", ctx.runs_candidate));
            }
            (
                s,
                (!gaps.is_empty()).then(|| format!("measured in {}", gaps.join(" and "))),
            )
        }
        _ => prediction_stats(b, c, metric, ctx)?,
    };
    let note = match (note, how) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    Ok((with_headlines(s, b, c), note))
}

/// The mean of the side's headline values of the metric (what `report` shows), if any run has one.
fn headline(recs: &[Rec<'_>], metric: Metric) -> Option<f64> {
    let v: Vec<f64> = recs
        .iter()
        .filter_map(|r| metric.headline(r.case))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn with_headlines(mut s: CaseStats, b: &[Rec<'_>], c: &[Rec<'_>]) -> CaseStats {
    s.headline_baseline = headline(b, s.metric);
    s.headline_candidate = headline(c, s.metric);
    s
}

/// Each record's median metric value and its relative timer resolution (res / median time).
fn run_values(
    side: &'static str,
    recs: &[Rec<'_>],
    metric: Metric,
) -> Result<Vec<(f64, f64)>, StatsError> {
    recs.iter()
        .map(|r| {
            let no = || StatsError::RunWithoutSamples {
                side,
                run: r.run + 1,
                metric: metric.name(),
            };
            let s = sorted_samples(r.case, metric)
                .filter(|s| !s.is_empty())
                .ok_or_else(no)?;
            let t = sorted_samples(r.case, Metric::Time)
                .filter(|s| !s.is_empty())
                .ok_or_else(no)?;
            let t_med = quantile_sorted(&t, 0.5);
            let rel = if t_med > 0.0 { r.res_s / t_med } else { 0.0 };
            Ok((quantile_sorted(&s, 0.5), rel))
        })
        .collect()
}

fn max_res(v: &[(f64, f64)]) -> f64 {
    v.iter().map(|x| x.1).fold(0.0, f64::max)
}

fn values(v: &[(f64, f64)]) -> Vec<f64> {
    v.iter().map(|x| x.0).collect()
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Paired statistics over the runs both sides measured at the same pair index. The outer
/// error is a problem with the data; the inner `Err` says why pairing does not apply to this
/// case (fewer than 2 complete pairs), so it falls back to an unpaired basis.
fn paired_stats(
    b: &[Rec<'_>],
    c: &[Rec<'_>],
    metric: Metric,
    ctx: &Ctx<'_>,
) -> Result<Result<Judged, String>, StatsError> {
    let by_run: HashMap<usize, Rec<'_>> = c.iter().map(|r| (r.run, *r)).collect();
    let (pb, pc): (Vec<Rec<'_>>, Vec<Rec<'_>>) = b
        .iter()
        .filter_map(|r| by_run.get(&r.run).map(|x| (*r, *x)))
        .unzip();
    let pairs = ctx.runs_baseline;
    if pb.len() < 2 {
        return Ok(Err(format!(
            "only {} of {pairs} pairs measured it on both sides: judged unpaired",
            pb.len()
        )));
    }
    let (vb, vc) = (
        run_values("baseline", &pb, metric)?,
        run_values("candidate", &pc, metric)?,
    );
    let (xb, xc) = (values(&vb), values(&vc));
    let l = stats::paired_log(&xb, &xc, max_res(&vb), max_res(&vc)).ok_or(
        StatsError::RunMedianNotPositive {
            metric: metric.name(),
        },
    )?;
    let s = from_log(
        l,
        metric,
        Basis::Paired,
        (pb.len(), pc.len()),
        (geomean(&xb), geomean(&xc)),
        ctx,
    )?;
    let note = (pb.len() < pairs).then(|| {
        format!(
            "paired on {} of {pairs} pairs (the others lack it on a side)",
            pb.len()
        )
    });
    Ok(Ok((s, note)))
}

/// Unpaired run-level statistics: one median per run, Welch's t on their logarithms.
fn run_stats(
    b: &[Rec<'_>],
    c: &[Rec<'_>],
    metric: Metric,
    ctx: &Ctx<'_>,
) -> Result<CaseStats, StatsError> {
    let (vb, vc) = (
        run_values("baseline", b, metric)?,
        run_values("candidate", c, metric)?,
    );
    let (xb, xc) = (values(&vb), values(&vc));
    let l = stats::welch_log(&xb, &xc, max_res(&vb), max_res(&vc)).ok_or(
        StatsError::RunMedianNotPositive {
            metric: metric.name(),
        },
    )?;
    from_log(
        l,
        metric,
        Basis::Runs,
        (xb.len(), xc.len()),
        (geomean(&xb), geomean(&xc)),
        ctx,
    )
}

/// One side measured the case in one run only, the other in several: the single run's
/// median against a prediction interval of the other side's run medians. Pooling the
/// batches instead would mix one run's within-run noise with another side's run-to-run
/// spread, unsaid.
fn prediction_stats(
    b: &[Rec<'_>],
    c: &[Rec<'_>],
    metric: Metric,
    ctx: &Ctx<'_>,
) -> Result<Judged, StatsError> {
    let (vb, vc) = (
        run_values("baseline", b, metric)?,
        run_values("candidate", c, metric)?,
    );
    let single_is_candidate = vc.len() == 1;
    let (many, one) = if single_is_candidate {
        (&vb, &vc)
    } else {
        (&vc, &vb)
    };
    let xm = values(many);
    let res = max_res(many).max(one[0].1);
    let l = stats::prediction_log(&xm, one[0].0, single_is_candidate, res).ok_or(
        StatsError::RunMedianNotPositive {
            metric: metric.name(),
        },
    )?;
    let centres = if single_is_candidate {
        (geomean(&xm), one[0].0)
    } else {
        (one[0].0, geomean(&xm))
    };
    let s = from_log(
        l,
        metric,
        Basis::Prediction,
        (vb.len(), vc.len()),
        centres,
        ctx,
    )?;
    let (side, other, runs, other_runs) = if single_is_candidate {
        ("candidate", "baseline", ctx.runs_candidate, many.len())
    } else {
        ("baseline", "candidate", ctx.runs_baseline, many.len())
    };
    let note = format!(
        "only 1 of {runs} {side} runs measured it: that run is judged against a prediction interval from the {other_runs} {other} runs"
    );
    Ok((s, Some(note)))
}

/// A case's statistics from a change on the log scale: the interval, the point test and the
/// band test, all from one t distribution. A zero error (no spread, no timer resolution)
/// with different centres cannot be judged.
fn from_log(
    l: LogChange,
    metric: Metric,
    basis: Basis,
    n: (usize, usize),
    centres: (f64, f64),
    ctx: &Ctx<'_>,
) -> Result<CaseStats, StatsError> {
    if l.se.is_nan() || (l.se <= 0.0 && l.d != 0.0) {
        return Err(StatsError::NoSpread);
    }
    let half = if l.se > 0.0 {
        stats::t_quantile(ctx.settings.confidence, l.df) * l.se
    } else {
        0.0
    };
    let p = if l.se > 0.0 {
        stats::t_two_sided_p(l.d / l.se, l.df)
    } else {
        1.0
    };
    let hib = metric.higher_is_better();
    let w = if hib { -l.d } else { l.d };
    let (worse, better) = stats::band_edges(ctx.settings.noise, hib);
    let (_, _, p_band) = stats::band_test(w, l.se, l.df, worse, better);
    Ok(CaseStats {
        metric,
        basis,
        n_baseline: n.0,
        n_candidate: n.1,
        change: MedianChange {
            median_a: centres.0,
            median_b: centres.1,
            change: l.d.exp() - 1.0,
            ci_low: (l.d - half).exp() - 1.0,
            ci_high: (l.d + half).exp() - 1.0,
            se_log: l.se,
            df: l.df,
        },
        p_value: p,
        p_exact: false,
        p_adjusted: p,
        p_band,
        p_band_adjusted: p_band,
        mde: 0.0,
        units_needed: None,
        sd_unit: l.sd_unit,
        floored: l.floored,
        headline_baseline: None,
        headline_candidate: None,
    })
}

/// The batch samples of one run a side: exact bootstrap of the median for the interval,
/// Mann–Whitney for the point test and (on samples moved by the band's edge) the band test.
/// When the bootstrap error is below the timer's resolution (identical samples on a coarse
/// clock), the error is floored there and every test uses t on the floored error instead.
fn batch_stats(
    b: Rec<'_>,
    c: Rec<'_>,
    metric: Metric,
    ctx: &Ctx<'_>,
    tables: &Tables,
) -> Result<CaseStats, StatsError> {
    let (Some(sb), Some(sc)) = (
        sorted_samples(b.case, metric),
        sorted_samples(c.case, metric),
    ) else {
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
    let settings = ctx.settings;
    let quantile = |df: f64| tables.t_quantile(settings.confidence, df);
    let change =
        stats::median_change_with(&sb, wb, &sc, wc, quantile).ok_or(StatsError::NotPositive {
            metric: metric.name(),
        })?;
    let rel = |r: &Rec<'_>, n: usize| {
        let t = sorted_samples(r.case, Metric::Time).unwrap_or_default();
        let med = if t.is_empty() {
            0.0
        } else {
            quantile_sorted(&t, 0.5)
        };
        let x = if med > 0.0 { r.res_s / med } else { 0.0 };
        x * x / n as f64
    };
    let se_floor = (rel(&b, nb) + rel(&c, nc)).sqrt();
    let sd_unit = change.se_log * (nb.min(nc) as f64 / 2.0).sqrt();
    if change.se_log < se_floor || change.se_log == 0.0 {
        let l = LogChange {
            d: (1.0 + change.change).ln(),
            se: se_floor,
            df: (nb.min(nc) - 1) as f64,
            sd_unit: se_floor * (nb.min(nc) as f64 / 2.0).sqrt(),
            floored: se_floor > 0.0,
        };
        let mut s = from_log(
            l,
            metric,
            Basis::Batches,
            (nb, nc),
            (change.median_a, change.median_b),
            ctx,
        )?;
        s.change.change = change.change;
        return Ok(s);
    }
    let cdf = tables.mw.get(&(nb, nc)).map(Vec::as_slice);
    let mw = stats::mann_whitney(&sb, &sc, cdf).ok_or(StatsError::Empty)?;
    let p_band = mw_band_p(&sb, &sc, metric, settings.noise, cdf).ok_or(StatsError::Empty)?;
    Ok(CaseStats {
        metric,
        basis: Basis::Batches,
        n_baseline: nb,
        n_candidate: nc,
        change,
        p_value: mw.p_two_sided,
        p_exact: mw.exact,
        p_adjusted: mw.p_two_sided,
        p_band,
        p_band_adjusted: p_band,
        mde: 0.0,
        units_needed: None,
        sd_unit,
        floored: false,
        headline_baseline: None,
        headline_candidate: None,
    })
}

/// The band test on batch samples: Mann–Whitney of the baseline against the candidate moved
/// back by the band's edge (÷ the edge ratio), one-sided toward that edge, for each edge;
/// p = min(1, 2·min). Valid for a shift of the distribution anywhere inside the band.
fn mw_band_p(a: &[f64], b: &[f64], metric: Metric, noise: f64, cdf: Option<&[f64]>) -> Option<f64> {
    let hib = metric.higher_is_better();
    // The candidate/baseline ratio at the worse and the better edge.
    let (worse, better) = if hib {
        (1.0 - noise, 1.0 + noise)
    } else {
        (1.0 + noise, 1.0 - noise)
    };
    let half = (a.len() * b.len()) as f64 / 2.0;
    let one_sided = |edge: f64, toward_worse: bool| -> Option<f64> {
        let moved: Vec<f64> = b.iter().map(|x| x / edge).collect();
        let mw = stats::mann_whitney(a, &moved, cdf)?;
        // u_b > half: the candidate tends to be larger
        let larger = mw.u_b > half;
        let toward = if mw.u_b == half {
            false
        } else if toward_worse {
            larger != hib
        } else {
            larger == hib
        };
        Some(if toward {
            mw.p_two_sided / 2.0
        } else {
            1.0 - mw.p_two_sided / 2.0
        })
    };
    let pw = one_sided(worse, true)?;
    let pb = one_sided(better, false)?;
    Some((2.0 * pw.min(pb)).min(1.0))
}

/// The verdict of a case with statistics, given its corrected p-values.
fn judge(s: &CaseStats, settings: &Settings) -> (Verdict, Option<String>) {
    let (lo, hi) = (s.change.ci_low, s.change.ci_high);
    let n = settings.noise;
    let beyond = hi < -n || lo > n;
    let alpha = settings.alpha();
    if s.p_band_adjusted <= alpha {
        return if s.worsening() > 0.0 {
            (Verdict::Regressed, None)
        } else {
            (Verdict::Improved, None)
        };
    }
    // The whole interval past one edge, yet not significant once corrected for the number of
    // cases: a likely change the correction cannot confirm, never "no change" or "within
    // noise" (seen in the gate: −40.7 %, interval −59.9 … −12.4 %, read "no change").
    if beyond {
        let side = if s.worsening() > 0.0 {
            "a regression"
        } else {
            "an improvement"
        };
        return (
            Verdict::Inconclusive,
            Some(format!(
                "interval {} … {} lies beyond the ±{} band, which suggests {side}, but it is not significant after the correction over the cases (band p = {:.2e}, corrected {:.2e} > α = {alpha}); more runs would tell",
                signed_pct(lo),
                signed_pct(hi),
                signed_pct(n).trim_start_matches('+'),
                s.p_band,
                s.p_band_adjusted
            )),
        );
    }
    // Reaching past both edges, the interval is as consistent with a regression as with an
    // improvement: "no change" would claim what it cannot.
    let wide = !(lo.is_finite() && hi.is_finite()) || (lo < -n && hi > n);
    if wide {
        let more = match s.units_needed {
            Some(k) => format!("about {k} {} a side would", s.basis.unit()),
            None => "far more data would".to_string(),
        };
        return (
            Verdict::Inconclusive,
            Some(format!(
                "interval {} … {} reaches beyond the ±{} band on both sides: it rules out neither a regression nor an improvement; {more} tell",
                signed_pct(lo),
                signed_pct(hi),
                signed_pct(n).trim_start_matches('+')
            )),
        );
    }
    if s.p_adjusted <= alpha {
        (Verdict::WithinNoise, None)
    } else {
        (Verdict::NoChange, None)
    }
}

/// Compares every case of `candidate` with the case of the same id in `baseline`.
pub fn compare(baseline: &ResultsFile, candidate: &ResultsFile, settings: &Settings) -> Comparison {
    compare_runs(&[baseline], &[candidate], settings)
}

/// The runs of a side in the order they were collected (start time; ties keep the given
/// order).
fn by_start<'a>(runs: &[&'a ResultsFile]) -> Vec<&'a ResultsFile> {
    let mut v = runs.to_vec();
    v.sort_by(|x, y| x.run.started_unix_s.total_cmp(&y.run.started_unix_s));
    v
}

/// Whether the runs were collected alternately: as many on each side (≥ 2), distinct start
/// times, and in start-time order every consecutive two hold one run of each side (A B A B
/// or A B B A …), so the i-th runs of the two sides ran next to each other.
pub fn collected_alternately(baseline: &[&ResultsFile], candidate: &[&ResultsFile]) -> bool {
    if baseline.len() != candidate.len() || baseline.len() < 2 {
        return false;
    }
    let mut all: Vec<(f64, bool)> = baseline
        .iter()
        .map(|f| (f.run.started_unix_s, false))
        .chain(candidate.iter().map(|f| (f.run.started_unix_s, true)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let distinct = all.windows(2).all(|w| w[0].0 < w[1].0);
    distinct && all.chunks(2).all(|p| p[0].1 != p[1].1)
}

/// Cases by id over the runs of one side, ids in order of first appearance.
fn by_id<'a>(runs: &[&'a ResultsFile]) -> (Vec<&'a str>, HashMap<&'a str, SideCase<'a>>) {
    let mut order = Vec::new();
    let mut map: HashMap<&str, SideCase<'_>> = HashMap::new();
    for (run, f) in runs.iter().enumerate() {
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
                .push(Rec {
                    case: c,
                    run,
                    res_s: op_resolution_s(f, c),
                });
        }
    }
    (order, map)
}

/// Cases measured on both sides, waiting for their statistics: (index in the comparison's
/// cases, baseline runs, candidate runs).
type Measured<'a> = Vec<(usize, Vec<Rec<'a>>, Vec<Rec<'a>>)>;

/// Compares the runs of `candidate` with the runs of `baseline`, case by case, each side in
/// the order its runs were collected (see [`Basis`] for how each case is judged).
pub fn compare_runs(
    baseline: &[&ResultsFile],
    candidate: &[&ResultsFile],
    settings: &Settings,
) -> Comparison {
    let (baseline, candidate) = (by_start(baseline), by_start(candidate));
    let paired =
        settings.pairing != Pairing::Unpaired && collected_alternately(&baseline, &candidate);
    let (base_order, base) = by_id(&baseline);
    let (cand_order, cand) = by_id(&candidate);
    let mut tables = Tables::default();
    let mut out: Vec<CaseComparison> = Vec::with_capacity(base_order.len());
    let mut measured: Measured<'_> = Vec::new();
    let mut params: HashMap<&str, &CaseParams> = HashMap::new();
    for id in &base_order {
        params.insert(id, &base[id].records[0].case.params);
        let cc = match_case(id, &base[id], cand.get(id), &mut tables, |bo, co| {
            measured.push((out.len(), bo, co));
        });
        out.push(cc);
    }
    for id in &cand_order {
        if !base.contains_key(id) {
            params.insert(id, &cand[id].records[0].case.params);
            out.push(new_case(id, &cand[id]));
        }
    }
    let ctx = Ctx {
        settings,
        paired,
        runs_baseline: baseline.len(),
        runs_candidate: candidate.len(),
    };
    analyse(&mut out, &measured, &ctx, &tables);
    let tested = correct_and_judge(&mut out, settings);
    name_setups(&mut out, &params);
    sort_for_display(&mut out);
    Comparison {
        settings: *settings,
        cases: out,
        tested,
        runs_baseline: baseline.len(),
        runs_candidate: candidate.len(),
        paired,
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
    measure: impl FnOnce(Vec<Rec<'a>>, Vec<Rec<'a>>),
) -> CaseComparison {
    let (b_status, _) = b.status();
    let mut cc = CaseComparison {
        id: id.to_string(),
        label: b.records[0].case.params.label(),
        setup: None,
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
            if bo.len() == 1 && co.len() == 1 {
                tables.prepare(sample_count(bo[0].case), sample_count(co[0].case));
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
        label: c.records[0].case.params.label(),
        setup: None,
        verdict: Verdict::New,
        baseline_status: None,
        candidate_status: Some(c.status().0),
        stats: None,
        note: None,
    }
}

/// The statistics of each measured case, on all cores (each case is independent); a case
/// that cannot be analysed is not compared, with the reason as its note.
fn analyse(out: &mut [CaseComparison], measured: &Measured<'_>, ctx: &Ctx<'_>, tables: &Tables) {
    let analysed: Vec<(usize, Result<Judged, StatsError>)> = measured
        .par_iter()
        .with_min_len(64)
        .map(|(i, b, c)| (*i, case_stats(b, c, ctx, tables)))
        .collect();
    for (i, r) in analysed {
        match r {
            Ok((s, note)) => {
                out[i].stats = Some(s);
                out[i].note = note;
            }
            Err(why) => {
                out[i].verdict = Verdict::NotCompared;
                out[i].note = Some(why.to_string());
            }
        }
    }
}

/// Corrects both p-values over every case that has them, fills in each case's MDE, then
/// judges those cases; returns how many were tested.
fn correct_and_judge(out: &mut [CaseComparison], settings: &Settings) -> usize {
    let tested: Vec<usize> = (0..out.len()).filter(|&i| out[i].stats.is_some()).collect();
    let get = |f: fn(&CaseStats) -> f64| -> Vec<f64> {
        tested
            .iter()
            .filter_map(|&i| out[i].stats.as_ref().map(f))
            .collect()
    };
    let point = stats::adjust_p_values(&get(|s| s.p_value), settings.correction);
    let band = stats::adjust_p_values(&get(|s| s.p_band), settings.correction);
    let level = settings.case_level(tested.len());
    let target = (1.0 + settings.noise).ln();
    for (k, &i) in tested.iter().enumerate() {
        if let Some(s) = out[i].stats.as_mut() {
            s.p_adjusted = point[k];
            s.p_band_adjusted = band[k];
            s.mde = stats::mde_log(s.change.se_log, s.change.df, level, MDE_POWER).exp() - 1.0;
            let paired = s.basis == Basis::Paired;
            s.units_needed = stats::units_needed(
                s.sd_unit,
                paired,
                level,
                MDE_POWER,
                target,
                MAX_UNITS_NEEDED,
            );
            let (v, note) = judge(s, settings);
            out[i].verdict = v;
            out[i].note = match (out[i].note.take(), note) {
                (Some(a), Some(b)) => Some(format!("{a}; {b}")),
                (a, b) => a.or(b),
            };
        }
    }
    tested.len()
}

/// The parameters of a case as `key → value` words, layout (nodes × devices per node) as
/// one.
fn param_words(p: &CaseParams) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if let Ok(serde_json::Value::Object(o)) = serde_json::to_value(p) {
        for (k, v) in o {
            let s = match v {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => "none".to_string(),
                other => other.to_string(),
            };
            m.insert(k, s);
        }
    }
    let layout = format!("{}x{}", p.nodes, p.devices_per_node);
    m.remove("nodes");
    m.remove("devices_per_node");
    m.insert("layout".to_string(), layout);
    m
}

/// Names the set-up of every case that shares its label with another case: the parameters
/// whose values differ within the group (layout, topology, binding, …).
fn name_setups(out: &mut [CaseComparison], params: &HashMap<&str, &CaseParams>) {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, c) in out.iter().enumerate() {
        groups.entry(c.label.clone()).or_default().push(i);
    }
    for idx in groups.values().filter(|g| g.len() > 1) {
        let words: Vec<BTreeMap<String, String>> = idx
            .iter()
            .map(|&i| {
                params
                    .get(out[i].id.as_str())
                    .map_or_else(BTreeMap::new, |p| param_words(p))
            })
            .collect();
        let keys: BTreeSet<&String> = words.iter().flat_map(|w| w.keys()).collect();
        let differ: Vec<&String> = keys
            .into_iter()
            .filter(|k| {
                let vals: BTreeSet<Option<&String>> = words.iter().map(|w| w.get(*k)).collect();
                vals.len() > 1
            })
            .collect();
        if differ.is_empty() {
            continue;
        }
        for (&i, w) in idx.iter().zip(&words) {
            let named: Vec<String> = differ
                .iter()
                .map(|k| format!("{k}={}", w.get(*k).map_or("none", String::as_str)))
                .collect();
            out[i].setup = Some(named.join(" "));
        }
    }
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
/// file that says "ok" without usable numbers, or values with no spread and no timer
/// resolution. A gate must not pass on them.
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
        // twice the time, the interval wholly beyond the band, yet not significant: a likely
        // regression the test cannot confirm — inconclusive, never "no change"
        assert_eq!(r.cases[0].verdict, Verdict::Inconclusive);
        let note = r.cases[0].note.as_deref().unwrap();
        assert!(note.contains("suggests a regression"), "{note}");
        assert!(note.contains("not significant"), "{note}");
        // the mirror image: half the time suggests an improvement
        cand.cases[0].timing.as_mut().unwrap().samples_s = vec![0.5, 0.505, 0.495];
        let r = compare(&base, &cand, &Settings::default());
        assert_eq!(r.cases[0].verdict, Verdict::Inconclusive);
        let note = r.cases[0].note.as_deref().unwrap();
        assert!(note.contains("suggests an improvement"), "{note}");
    }
}
