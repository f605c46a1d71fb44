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
use super::stats::{self, Correction, MedianChange};
use crate::results::schema::CaseStatus;

// The per-case statistics (one basis each) and the assembly of a comparison (matching cases,
// the correction, the verdicts) are separate jobs; they live in their own files.
mod assemble;
mod case_stats;
#[cfg(test)]
mod tests;

pub(crate) use assemble::unusable;
pub use assemble::{collected_alternately, compare, compare_runs};

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
    /// One median per run, [`stats::RANK_MIN_RUNS`] or more runs a side, unpaired: the
    /// Hodges–Lehmann shift of the log medians with its Moses interval and Mann–Whitney tests
    /// (whole runs that switch phase cannot hide a change).
    RunRanks,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Batches => "batches",
            Basis::Runs => "runs",
            Basis::Paired => "paired",
            Basis::Prediction => "prediction",
            Basis::RunRanks => "run_ranks",
        }
    }

    /// What `n_baseline` / `n_candidate` and "units needed" count.
    pub fn unit(self) -> &'static str {
        match self {
            Basis::Batches => "samples",
            Basis::Paired => "pairs",
            Basis::Runs | Basis::Prediction | Basis::RunRanks => "runs",
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
    /// The value `scalebench report` shows for the case given the side's runs (the file's
    /// headline for the metric, a mean over ranks, of the newest run: report's pick).
    pub headline_baseline: Option<f64>,
    pub headline_candidate: Option<f64>,
    /// That headline as a fraction of its ceiling (the case's `peak`); absent for time and
    /// where the run has none.
    pub frac_peak_baseline: Option<f64>,
    pub frac_peak_candidate: Option<f64>,
}

impl CaseStats {
    /// Whether the report's figure (a mean over ranks of each rank's mean) moved opposite to
    /// the medians compared: a mean follows outlying batches and ranks that a median ignores,
    /// so the two documents would seem to disagree without a word on the row.
    pub fn headline_opposite(&self) -> bool {
        let (Some(b), Some(c)) = (self.headline_baseline, self.headline_candidate) else {
            return false;
        };
        let headline = c - b;
        let medians = self.change.median_b - self.change.median_a;
        headline != 0.0 && medians != 0.0 && (headline > 0.0) != (medians > 0.0)
    }

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

/// Where a case sits: its set-up and, for the per-size charts, its variant and size.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CaseAxes {
    /// The launch shape's label (`cpu 1x2 pure bind=none place=fill`).
    pub setup: String,
    /// MPI ranks of the set-up (one rank sends no MPI messages).
    pub ranks: u32,
    /// The case's label without its size (`allreduce f32 sum out-of-place isolated`).
    pub variant: String,
    /// The requested size, for the collectives.
    pub bytes: Option<u64>,
}

impl CaseAxes {
    pub(crate) fn of(p: &crate::params::CaseParams) -> CaseAxes {
        let shape = p.launch_shape();
        CaseAxes {
            setup: shape.label(),
            ranks: shape.ranks(),
            variant: crate::params::CaseParams {
                requested_bytes: None,
                ..p.clone()
            }
            .label(),
            bytes: p.requested_bytes,
        }
    }
}

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseComparison {
    pub id: String,
    /// Human label of the case's parameters.
    pub label: String,
    /// Its set-up, variant and size.
    pub axes: CaseAxes,
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
            Basis::RunRanks,
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
