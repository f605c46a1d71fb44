//! A launch's attempts and a run's completeness, as a merged results file records them.
//!
//! A launch may run more than once (a resubmission, `--resume`): its *current* attempt is the
//! latest, which `launches` holds under the launch's plain id; earlier attempts are kept in
//! `superseded_launches` for the record and never counted (not as failures, not as set-ups).
//! A case an earlier attempt measured and no later one ran again names that attempt
//! (`<launch id>@<attempt dir>`), so its provenance stays its own.
//!
//! [`Completeness`] says what the plan asked for and what is missing, and why, so a report or
//! a comparison of an incomplete run can say so first.

use super::schema::{CaseResult, CaseStatus, LaunchRecord, ResultsFile};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An earlier attempt of a launch that a later attempt replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupersededLaunch {
    /// The attempt directory that replaced it (`NNN-<launch id>`, under `launches/`).
    pub superseded_by: String,
    /// Its own record; `launch_id` reads `<launch id>@<its attempt dir>`.
    pub record: LaunchRecord,
}

/// What a sweep planned and what its merged results hold. Written by the merge of a run
/// directory (`collect`, a sweep's driver); absent in files of one `scalebench run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completeness {
    /// Cases the plan holds.
    pub planned_cases: usize,
    /// Planned cases with a validated measurement (`ok`).
    pub measured_cases: usize,
    /// Planned cases skipped by design (not applicable to their set-up): not missing.
    pub skipped_cases: usize,
    /// Planned cases without a validated measurement, by why: `failed`, `timeout`, `wrong`
    /// (their record says so), `lost` (their launch's job ended without recording its end),
    /// `lost: cancelled` (a lost job the scheduler reports cancelled), `pending` (their launch was
    /// still queued or running when merged), `not run` (no attempt of their launch exists).
    pub missing: BTreeMap<String, usize>,
}

impl Completeness {
    /// Planned cases without a validated measurement.
    pub fn missing_cases(&self) -> usize {
        self.missing.values().sum()
    }

    /// The one line a reader of an incomplete run sees first, or `None` when nothing is
    /// missing: `incomplete: 40 planned, 20 measured, 20 missing (lost)`.
    pub fn headline(&self) -> Option<String> {
        let missing = self.missing_cases();
        if missing == 0 {
            return None;
        }
        let mut whys: Vec<(&String, &usize)> =
            self.missing.iter().filter(|(_, n)| **n > 0).collect();
        // The largest share first; names break ties, so the line is stable.
        whys.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let why = if whys.len() == 1 {
            whys[0].0.clone()
        } else {
            whys.iter()
                .map(|(w, n)| format!("{n} {w}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let skipped = if self.skipped_cases > 0 {
            format!(", {} skipped by design", self.skipped_cases)
        } else {
            String::new()
        };
        Some(format!(
            "incomplete: {} planned, {} measured, {missing} missing ({why}){skipped}",
            self.planned_cases, self.measured_cases
        ))
    }
}

/// Pure: the completeness of `cases` against the planned case ids, each planned launch's
/// missing cases called by `why_missing(launch id)` when no record of theirs exists.
pub fn completeness<'a>(
    planned: impl IntoIterator<Item = (&'a str, String)>,
    cases: &[CaseResult],
    why_missing: &dyn Fn(&str) -> String,
) -> Completeness {
    let by_id: BTreeMap<&str, &CaseResult> = cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let mut c = Completeness {
        planned_cases: 0,
        measured_cases: 0,
        skipped_cases: 0,
        missing: BTreeMap::new(),
    };
    for (launch_id, case_id) in planned {
        c.planned_cases += 1;
        let why = match by_id.get(case_id.as_str()).map(|r| r.status) {
            Some(CaseStatus::Ok) => {
                c.measured_cases += 1;
                continue;
            }
            Some(CaseStatus::Skipped) => {
                c.skipped_cases += 1;
                continue;
            }
            Some(s) => s.name().to_string(),
            None => why_missing(launch_id),
        };
        *c.missing.entry(why).or_default() += 1;
    }
    c
}

impl ResultsFile {
    /// The launch record a case ran in: its launch's current attempt, or the superseded
    /// attempt that measured it (later records win, as later attempts do).
    pub fn launch_of(&self, case: &CaseResult) -> Option<&LaunchRecord> {
        self.launches
            .iter()
            .rev()
            .find(|l| l.launch_id == case.launch_id)
            .or_else(|| {
                self.superseded_launches
                    .iter()
                    .rev()
                    .map(|s| &s.record)
                    .find(|l| l.launch_id == case.launch_id)
            })
    }

    /// The one line saying the run is incomplete, if its merge recorded that it is.
    pub fn incomplete_headline(&self) -> Option<String> {
        self.completeness.as_ref().and_then(Completeness::headline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(id: &str, status: CaseStatus) -> CaseResult {
        let p = crate::params::CaseParams::new(crate::params::Workload::Allreduce, 1, 1);
        let failed = Err(crate::workload::CaseError::Failed("-".into()));
        let mut c = crate::run::record(&p, "A", 0.0, 0.0, 1, 1, failed);
        c.id = id.to_string();
        c.status = status;
        c
    }

    #[test]
    fn a_lost_launch_is_counted_missing_by_why_and_skips_are_not() {
        let cases = vec![
            case("a1", CaseStatus::Ok),
            case("a2", CaseStatus::Skipped),
            case("a3", CaseStatus::Failed),
        ];
        let planned = [
            ("A", "a1"),
            ("A", "a2"),
            ("A", "a3"),
            ("B", "b1"),
            ("B", "b2"),
        ]
        .map(|(l, c)| (l, c.to_string()));
        let why = |l: &str| {
            if l == "B" {
                "lost".into()
            } else {
                "not run".into()
            }
        };
        let c = completeness(planned, &cases, &why);
        assert_eq!(
            (c.planned_cases, c.measured_cases, c.skipped_cases),
            (5, 1, 1)
        );
        assert_eq!(c.missing_cases(), 3);
        assert_eq!(
            c.headline().unwrap(),
            "incomplete: 5 planned, 1 measured, 3 missing (2 lost, 1 failed), 1 skipped by design"
        );
        let only_lost = completeness(
            [("B", "b1".to_string()), ("B", "b2".to_string())],
            &[],
            &why,
        );
        assert_eq!(
            only_lost.headline().unwrap(),
            "incomplete: 2 planned, 0 measured, 2 missing (lost)"
        );
        let whole = completeness([("A", "a1".to_string())], &cases, &why);
        assert_eq!(whole.headline(), None, "nothing missing, nothing said");
    }
}
