//! The CI gate: what a finished comparison means for the exit code, and the report that
//! carries a comparison, its context and that decision to the renderers.
//!
//! Exit codes: 0 no regression (or `--fail-on never`), 1 a regression (or, with
//! `--fail-on any-change`, any change), 2 bad input or an unusable comparison (decided before a
//! report exists).

use super::analysis::{Comparison, Verdict};
use super::provenance::Difference;
use crate::error::{EXIT_OK, EXIT_REGRESSION};
use serde::Serialize;

/// When the comparison fails the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    /// A case regressed, or a case measured in the baseline failed (wrong results, error,
    /// timeout) in the candidate: a case that stopped working is worse than a slower one.
    Regression,
    /// Any of the above, or a case improved, was fixed, is missing, is new, or changed status.
    AnyChange,
    /// Report only; exit 0 whatever changed.
    Never,
}

impl FailOn {
    pub fn name(self) -> &'static str {
        match self {
            FailOn::Regression => "regression",
            FailOn::AnyChange => "any-change",
            FailOn::Never => "never",
        }
    }

    /// Whether a case with this verdict (and these statuses) fails the gate.
    fn fails(self, verdict: Verdict, status_changed: bool) -> bool {
        match self {
            FailOn::Never => false,
            FailOn::Regression => matches!(verdict, Verdict::Regressed | Verdict::Failed),
            FailOn::AnyChange => match verdict {
                Verdict::WithinNoise | Verdict::NoChange => false,
                Verdict::NotCompared => status_changed,
                _ => true,
            },
        }
    }

    /// Cases of `c` that fail the gate.
    pub fn failing(self, c: &Comparison) -> usize {
        c.cases
            .iter()
            .filter(|x| self.fails(x.verdict, x.baseline_status != x.candidate_status))
            .count()
    }

    /// The exit code for a comparison.
    pub fn exit_code(self, c: &Comparison) -> u8 {
        if self.failing(c) > 0 {
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
}

/// Everything the renderers show.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub baseline: Side,
    pub candidate: Side,
    /// How the set-ups differ (shown at the top).
    pub differences: Vec<Difference>,
    /// Other things people must know (failed launches, a mismatch compared anyway).
    pub warnings: Vec<String>,
    pub comparison: Comparison,
    pub fail_on: FailOn,
    /// Cases that fail the gate.
    pub failing: usize,
    pub exit_code: u8,
}

impl Report {
    /// A one-line outcome: `REGRESSION: 2 regressed, 1 failed (exit 1; --fail-on regression)`.
    pub fn outcome(&self) -> String {
        let c = &self.comparison;
        let worst: Vec<String> = [Verdict::Regressed, Verdict::Failed]
            .iter()
            .filter(|v| c.count(**v) > 0)
            .map(|v| format!("{} {}", c.count(*v), v.label()))
            .collect();
        let head = if self.exit_code != EXIT_OK {
            match self.fail_on {
                FailOn::AnyChange if worst.is_empty() => {
                    format!("CHANGED: {} case(s) changed", self.failing)
                }
                _ => format!("REGRESSION: {}", worst.join(", ")),
            }
        } else if worst.is_empty() {
            "OK: no regression".to_string()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::analysis::{CaseComparison, Settings};
    use crate::results::schema::CaseStatus;

    fn with(verdicts: &[(Verdict, Option<CaseStatus>, Option<CaseStatus>)]) -> Comparison {
        Comparison {
            settings: Settings::default(),
            cases: verdicts
                .iter()
                .enumerate()
                .map(|(i, (v, b, c))| CaseComparison {
                    id: i.to_string(),
                    label: String::new(),
                    verdict: *v,
                    baseline_status: *b,
                    candidate_status: *c,
                    stats: None,
                    note: None,
                })
                .collect(),
            runs_baseline: 1,
            runs_candidate: 1,
            across_setups: false,
            tested: 0,
        }
    }

    #[test]
    fn policies() {
        let ok = Some(CaseStatus::Ok);
        let skipped = Some(CaseStatus::Skipped);
        let quiet = with(&[
            (Verdict::NoChange, ok, ok),
            (Verdict::WithinNoise, ok, ok),
            (Verdict::NotCompared, skipped, skipped),
        ]);
        for f in [FailOn::Regression, FailOn::AnyChange, FailOn::Never] {
            assert_eq!(f.exit_code(&quiet), 0, "{f:?}");
        }
        let regressed = with(&[(Verdict::Regressed, ok, ok), (Verdict::NoChange, ok, ok)]);
        assert_eq!(FailOn::Regression.exit_code(&regressed), 1);
        assert_eq!(FailOn::AnyChange.exit_code(&regressed), 1);
        assert_eq!(FailOn::Never.exit_code(&regressed), 0);
        let failed = with(&[(Verdict::Failed, ok, Some(CaseStatus::Wrong))]);
        assert_eq!(FailOn::Regression.exit_code(&failed), 1);
        for v in [
            Verdict::Improved,
            Verdict::Missing,
            Verdict::New,
            Verdict::Fixed,
        ] {
            let c = with(&[(v, ok, ok)]);
            assert_eq!(FailOn::Regression.exit_code(&c), 0, "{v:?}");
            assert_eq!(FailOn::AnyChange.exit_code(&c), 1, "{v:?}");
        }
        let status = with(&[(Verdict::NotCompared, ok, skipped)]);
        assert_eq!(FailOn::AnyChange.exit_code(&status), 1);
        assert_eq!(FailOn::Regression.exit_code(&status), 0);
    }
}
