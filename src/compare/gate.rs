//! The CI gate: what a finished comparison means for the exit code, and the report that
//! carries a comparison, its context and that decision to the renderers.
//!
//! Exit codes: 0 no regression (or `--fail-on never`), 1 a regression or a case that stopped
//! being measured (failed, skipped, missing; `--allow-dropped` relaxes each kind), or, with
//! `--fail-on any-change`, any change; 2 bad input or an unusable comparison (decided before a
//! report exists).

use super::analysis::{CaseComparison, Comparison, Verdict};
use super::provenance::Difference;
use crate::exit::{EXIT_OK, EXIT_REGRESSION};
use crate::results::schema::CaseStatus;
use serde::Serialize;

/// When the comparison fails the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    /// A case regressed, or a case measured ("ok") in the baseline stopped being measured in
    /// the candidate: it failed (wrong results, error, timeout), became skipped, or is
    /// missing. A candidate that stops measuring must not pass; [`Dropped`] relaxes this per
    /// kind.
    Regression,
    /// Any of the above, or a case improved, was fixed, is missing, is new, or changed status.
    AnyChange,
    /// Report only; exit 0 whatever changed.
    Never,
}

/// How a case measured in the baseline stopped being measured in the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropKind {
    /// Wrong results, an error or a timeout.
    Failed,
    /// Skipped (not applicable to the candidate's set-up, or not run).
    Skipped,
    /// Absent from the candidate.
    Missing,
}

impl DropKind {
    pub fn name(self) -> &'static str {
        match self {
            DropKind::Failed => "failed",
            DropKind::Skipped => "skipped",
            DropKind::Missing => "missing",
        }
    }

    /// How a case went from ok to not measured, if it did.
    pub fn of(c: &CaseComparison) -> Option<DropKind> {
        if c.baseline_status != Some(CaseStatus::Ok) {
            return None;
        }
        match (c.verdict, c.candidate_status) {
            (Verdict::Failed, _) => Some(DropKind::Failed),
            (Verdict::Missing, None) => Some(DropKind::Missing),
            (Verdict::NotCompared, Some(CaseStatus::Skipped)) => Some(DropKind::Skipped),
            _ => None,
        }
    }
}

/// The kinds of dropped cases that do not fail `--fail-on regression` (`--allow-dropped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dropped {
    pub failed: bool,
    pub skipped: bool,
    pub missing: bool,
}

impl Dropped {
    pub fn allows(self, k: DropKind) -> bool {
        match k {
            DropKind::Failed => self.failed,
            DropKind::Skipped => self.skipped,
            DropKind::Missing => self.missing,
        }
    }
}

impl FailOn {
    pub fn name(self) -> &'static str {
        match self {
            FailOn::Regression => "regression",
            FailOn::AnyChange => "any-change",
            FailOn::Never => "never",
        }
    }

    /// Whether a case fails the gate, with `allow` the dropped kinds that do not.
    fn fails(self, c: &CaseComparison, allow: Dropped) -> bool {
        let dropped = DropKind::of(c).is_some_and(|k| !allow.allows(k));
        match self {
            FailOn::Never => false,
            FailOn::Regression => c.verdict == Verdict::Regressed || dropped,
            FailOn::AnyChange => match c.verdict {
                // An inconclusive case shows no change either (the power check is what
                // refuses a gate too weak to see one).
                Verdict::WithinNoise | Verdict::NoChange | Verdict::Inconclusive => false,
                Verdict::NotCompared => dropped || c.baseline_status != c.candidate_status,
                _ => true,
            },
        }
    }

    /// Cases of `c` that fail the gate.
    pub fn failing(self, c: &Comparison, allow: Dropped) -> usize {
        c.cases.iter().filter(|x| self.fails(x, allow)).count()
    }

    /// The exit code for a comparison.
    pub fn exit_code(self, c: &Comparison, allow: Dropped) -> u8 {
        if self.failing(c, allow) > 0 {
            EXIT_REGRESSION
        } else {
            EXIT_OK
        }
    }
}

/// One side of the comparison, as the report names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// The results file read.
    pub path: String,
    pub run_id: String,
    /// scalebench version that wrote it (with the git commit when known).
    pub generator: String,
    /// Distinct cases over its runs.
    pub cases: usize,
    /// Results files (runs) on this side.
    pub runs: usize,
    /// For each run of this side whose merge recorded planned cases missing: the line saying
    /// so (`incomplete: 40 planned, 20 measured, 20 missing (lost) (FILE)`), shown first.
    pub incomplete: Vec<String>,
}

/// Everything the renderers show.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub baseline: Side,
    pub candidate: Side,
    /// How the set-ups differ (shown at the top).
    pub differences: Vec<Difference>,
    /// Each set-up's cases by verdict, their median change and what explains it.
    pub setups: Vec<super::setups::SetupSummary>,
    /// Other things people must know (failed launches, a mismatch compared anyway).
    pub warnings: Vec<String>,
    pub comparison: Comparison,
    pub fail_on: FailOn,
    /// Dropped kinds that do not fail the gate.
    pub allow_dropped: Dropped,
    /// Cases that fail the gate.
    pub failing: usize,
    pub exit_code: u8,
}

impl Report {
    /// A one-line outcome: `REGRESSION: 2 regressed, 1 stopped: skipped (exit 1; --fail-on
    /// regression)`.
    pub fn outcome(&self) -> String {
        let c = &self.comparison;
        let mut worst: Vec<String> = Vec::new();
        if c.count(Verdict::Regressed) > 0 {
            worst.push(format!("{} regressed", c.count(Verdict::Regressed)));
        }
        for k in [DropKind::Failed, DropKind::Skipped, DropKind::Missing] {
            let n = c
                .cases
                .iter()
                .filter(|x| DropKind::of(x) == Some(k))
                .count();
            if n > 0 {
                let allowed = if self.allow_dropped.allows(k) {
                    " (allowed)"
                } else {
                    ""
                };
                worst.push(format!("{n} stopped measuring: {}{allowed}", k.name()));
            }
        }
        let head = if self.exit_code != EXIT_OK {
            match self.fail_on {
                FailOn::AnyChange if c.count(Verdict::Regressed) == 0 && worst.is_empty() => {
                    format!(
                        "CHANGED: {} changed",
                        crate::units::count(self.failing, "case", "cases")
                    )
                }
                _ => format!("REGRESSION: {}", worst.join(", ")),
            }
        } else if worst.is_empty() {
            match c.count(Verdict::Inconclusive) {
                0 => "OK: no regression".to_string(),
                n => {
                    format!("OK: no regression seen ({n} inconclusive: intervals too wide to tell)")
                }
            }
        } else {
            format!("{} (not failing)", worst.join(", "))
        };
        format!(
            "{head} (exit {}; --fail-on {})",
            self.exit_code,
            self.fail_on.name()
        )
    }
}

/// What a comparison refused for low power saw all the same: the cases that changed by more
/// than the band plus their own minimum detectable effect (in the worse direction, then the
/// better), with the range of those changes, e.g. `it saw 6 of 7 compared cases worse beyond
/// the ±5 % band plus their own MDE, by +45 % to +93 % (allreduce 8B: +93 %, MDE 31 %)`.
/// `None` when no case did. Each such change would be detected at the chosen power even
/// though the median case's would not: the refusal must not hide them.
pub(crate) fn seen_beyond_mde(cmp: &Comparison, noise: f64) -> Option<String> {
    let with_stats: Vec<(&CaseComparison, &super::analysis::CaseStats)> = cmp
        .cases
        .iter()
        .filter_map(|c| c.stats.as_ref().map(|s| (c, s)))
        .collect();
    let beyond = |worse: bool| -> Vec<(&CaseComparison, &super::analysis::CaseStats)> {
        let mut v: Vec<_> = with_stats
            .iter()
            .copied()
            .filter(|(_, s)| {
                // worsening(): ln of the ratio in the worse direction; the band and the MDE are
                // relative changes, compared on the same scale.
                let w = if worse { s.worsening() } else { -s.worsening() };
                w > (1.0 + noise + s.mde).ln()
            })
            .collect();
        v.sort_by(|a, b| b.1.worsening().abs().total_cmp(&a.1.worsening().abs()));
        v
    };
    let total = with_stats.len();
    let mut parts = Vec::new();
    for (worse, word) in [(true, "worse"), (false, "better")] {
        let v = beyond(worse);
        let (Some(first), Some(last)) = (v.first(), v.last()) else {
            continue;
        };
        let pct = |s: &super::analysis::CaseStats| super::render::pct(s.change.change);
        let range = if v.len() == 1 {
            pct(first.1)
        } else {
            format!("{} to {}", pct(last.1), pct(first.1))
        };
        parts.push(format!(
            "{} of {total} compared cases {word} beyond the ±{} band plus their own MDE, by {range} ({}: {}, MDE {})",
            v.len(),
            super::render::pct(noise).trim_start_matches('+'),
            first.0.display_label(),
            pct(first.1),
            super::render::pct(first.1.mde).trim_start_matches('+')
        ));
    }
    (!parts.is_empty()).then(|| format!("it saw {}", parts.join("; and ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::analysis::Settings;

    fn with(verdicts: &[(Verdict, Option<CaseStatus>, Option<CaseStatus>)]) -> Comparison {
        Comparison {
            settings: Settings::default(),
            cases: verdicts
                .iter()
                .enumerate()
                .map(|(i, (v, b, c))| CaseComparison {
                    id: i.to_string(),
                    label: String::new(),
                    axes: Default::default(),
                    setup: None,
                    verdict: *v,
                    baseline_status: *b,
                    candidate_status: *c,
                    stats: None,
                    note: None,
                })
                .collect(),
            runs_baseline: 1,
            runs_candidate: 1,
            paired: false,
            across_setups: false,
            tested: 0,
        }
    }

    #[test]
    fn policies() {
        let none = Dropped::default();
        let ok = Some(CaseStatus::Ok);
        let skipped = Some(CaseStatus::Skipped);
        let quiet = with(&[
            (Verdict::NoChange, ok, ok),
            (Verdict::WithinNoise, ok, ok),
            (Verdict::NotCompared, skipped, skipped),
            // skipped in the baseline, gone from the candidate: nothing was lost
            (Verdict::Missing, skipped, None),
        ]);
        for f in [FailOn::Regression, FailOn::Never] {
            assert_eq!(f.exit_code(&quiet, none), 0, "{f:?}");
        }
        let regressed = with(&[(Verdict::Regressed, ok, ok), (Verdict::NoChange, ok, ok)]);
        assert_eq!(FailOn::Regression.exit_code(&regressed, none), 1);
        assert_eq!(FailOn::AnyChange.exit_code(&regressed, none), 1);
        assert_eq!(FailOn::Never.exit_code(&regressed, none), 0);
        for v in [Verdict::Improved, Verdict::New, Verdict::Fixed] {
            let c = with(&[(v, ok, ok)]);
            assert_eq!(FailOn::Regression.exit_code(&c, none), 0, "{v:?}");
            assert_eq!(FailOn::AnyChange.exit_code(&c, none), 1, "{v:?}");
        }
    }

    /// A case measured in the baseline that the candidate stops measuring fails the gate,
    /// whichever way it stopped, unless that kind is allowed.
    #[test]
    fn a_candidate_that_stops_measuring_fails_unless_allowed() {
        let ok = Some(CaseStatus::Ok);
        let cases = [
            (
                Verdict::Failed,
                ok,
                Some(CaseStatus::Wrong),
                DropKind::Failed,
            ),
            (
                Verdict::NotCompared,
                ok,
                Some(CaseStatus::Skipped),
                DropKind::Skipped,
            ),
            (Verdict::Missing, ok, None, DropKind::Missing),
        ];
        for (v, b, c, kind) in cases {
            let cmp = with(&[(v, b, c), (Verdict::NoChange, ok, ok)]);
            assert_eq!(DropKind::of(&cmp.cases[0]), Some(kind));
            assert_eq!(
                FailOn::Regression.exit_code(&cmp, Dropped::default()),
                1,
                "{kind:?}"
            );
            assert_eq!(
                FailOn::AnyChange.exit_code(&cmp, Dropped::default()),
                1,
                "{kind:?}"
            );
            let allow = Dropped {
                failed: kind == DropKind::Failed,
                skipped: kind == DropKind::Skipped,
                missing: kind == DropKind::Missing,
            };
            assert_eq!(FailOn::Regression.exit_code(&cmp, allow), 0, "{kind:?}");
            // allowing another kind does not help
            let other = Dropped {
                failed: !allow.failed,
                skipped: !allow.skipped,
                missing: !allow.missing,
            };
            let only_others = Dropped {
                failed: other.failed && kind != DropKind::Failed,
                skipped: other.skipped && kind != DropKind::Skipped,
                missing: other.missing && kind != DropKind::Missing,
            };
            assert_eq!(
                FailOn::Regression.exit_code(&cmp, only_others),
                1,
                "{kind:?}"
            );
        }
    }
}
