//! Why two sides cannot be compared: bad options or inputs, each message naming the option or
//! run and the fix (exit code 2), or a failure while writing the report (exit code 4).

use crate::compare::MIN_RUNS;
use crate::exit::{EXIT_BAD_INPUT, EXIT_RUNTIME};
use crate::results::io::{ResultsError, RESULTS_FILE};

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("--noise {noise}: give the noise band as a fraction in [0, 1), e.g. 0.02 for ±2 %")]
    Noise { noise: f64 },
    #[error("--confidence {confidence}: give a probability in [0.5, 1), e.g. 0.95 (not 95)")]
    Confidence { confidence: f64 },
    /// `--` with nothing after it; `baseline` is the paths before it, as given.
    #[error("compare {} --: no candidate run after `--` (an empty shell variable?): give the candidate runs after `--` (`compare A1 A2 -- B1 B2`), or leave `--` out to compare `BASELINE CANDIDATE`", .baseline)]
    NoCandidate { baseline: String },
    #[error("compare needs a baseline and a candidate: `compare BASELINE CANDIDATE`, or several runs a side: `compare A1 A2 A3 -- B1 B2 B3`")]
    OnePath,
    #[error("compare got {} paths without `--`: with several runs a side, put the candidate runs after `--` (`compare A1 A2 A3 -- B1 B2 B3`)", .count)]
    PathsWithoutSeparator { count: usize },
    /// A directory of runs where some subdirectories hold no results file (`shown`: the first
    /// five, `more`: whether there are others).
    #[error("{}: {} of its {} run directories hold no {RESULTS_FILE} ({}{}): a run killed before it wrote one? `scalebench collect` it, rerun it, or move it out, so the comparison counts every run it was given", .path.display(), .without, .total, .shown.join(", "), if *.more { ", …" } else { "" })]
    RunWithoutResults {
        path: std::path::PathBuf,
        without: usize,
        total: usize,
        shown: Vec<String>,
        more: bool,
    },
    /// The sides' set-ups differ in what changes performance (`differences`: one a line).
    #[error("not comparable: {} and {} were measured on set-ups that differ in what changes performance ({}), so a difference would not mean a regression: measure both sides on the same set-up (for CI: the baseline commit and the candidate built and run alternately on one machine, see ci/regression.sh), or pass --allow-mismatch to compare anyway, every verdict then marked as crossing set-ups", .baseline, .candidate, .differences.join("; "))]
    NotComparable {
        baseline: String,
        candidate: String,
        differences: Vec<String>,
    },
    #[error("{} (baseline) and {} (candidate) are {why}: a comparison of a run with itself always passes, so a gate set up this way stays green whatever the candidate does; give the baseline's runs before `--` and the candidate's after it (ci/regression.sh measures both sides)", .baseline.display(), .candidate.display())]
    SameRunBothSides {
        baseline: std::path::PathBuf,
        candidate: std::path::PathBuf,
        why: String,
    },
    #[error("{} and {} on the {side} side are {why}: one run counted twice fakes a repetition; give each run once", .first.display(), .second.display())]
    SameRunTwice {
        first: std::path::PathBuf,
        second: std::path::PathBuf,
        side: &'static str,
        why: String,
    },
    #[error("--paired: the {} baseline and {} candidate runs were not collected alternately (as many a side, and in start-time order each baseline run next to a candidate run: A B A B or A B B A …), so there are no pairs; collect them alternately (ci/regression.sh does) or leave out --paired", .baseline, .candidate)]
    NotPaired { baseline: usize, candidate: usize },
    /// A side of one run: its verdicts would hold no run-to-run variance.
    #[error("one run a side cannot see run-to-run variance ({} baseline, {} candidate): two runs of one binary minutes apart differ by more than any band on a busy host (on a 2-core VM 28 % of runs sat in a phase 2× slower), and one run cannot tell such a run from a regression; give {MIN_RUNS} runs or more a side (`compare A1 A2 A3 -- B1 B2 B3`, collected alternately), or --baseline-history N with {MIN_RUNS} or more candidate runs; --fail-on never reports without gating, --allow-one-run gates anyway", crate::units::count(*.baseline, "run", "runs"), .candidate)]
    OneRun { baseline: usize, candidate: usize },
    /// Too little power; `what` says how little and what would help.
    #[error("{what}; or pass --allow-low-power to report anyway")]
    LowPower { what: String },
    #[error("{} ({} cases) and {} ({} cases) have no case in common, so nothing can be compared: cases match by their parameters (workload, sizes, dtype, shape, backend, topology, binding, …); run the candidate with the baseline's options", .baseline, .baseline_cases, .candidate, .candidate_cases)]
    NothingInCommon {
        baseline: String,
        baseline_cases: usize,
        candidate: String,
        candidate_cases: usize,
    },
    /// Cases "ok" on both sides without samples (`shown`: the first five, described).
    #[error("unusable: {} \"ok\" on both sides but {} no usable samples ({}{}), so the gate cannot judge {} and will not pass on {}: was a results file truncated or edited? Re-run the side that lacks samples", crate::units::count(*.count, "case says", "cases say"), if *.count == 1 { "has" } else { "have" }, .shown.join("; "), if *.count > 5 { "; …" } else { "" }, if *.count == 1 { "it" } else { "them" }, if *.count == 1 { "it" } else { "them" })]
    Unusable { count: usize, shown: Vec<String> },
    #[error("--baseline-history takes the baseline from the index: give only the candidate runs, without `--` (`compare --baseline-history 5 B1 B2 B3`)")]
    HistoryWithSeparator,
    /// The index could not give a baseline (`--baseline-history`).
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    /// A results file cannot be read or used.
    #[error("{0}")]
    Results(#[from] ResultsError),
    #[error("writing the report to stdout: {0}")]
    Stdout(#[source] std::io::Error),
    #[error("reading the candidate panicked")]
    Panicked,
}

impl CompareError {
    /// Bad options or inputs are 2; failing to read or write a file is 4.
    pub fn exit_code(&self) -> u8 {
        match self {
            CompareError::Results(ResultsError::Io { .. })
            | CompareError::Stdout(_)
            | CompareError::Panicked => EXIT_RUNTIME,
            CompareError::History(e) => e.exit_code(),
            _ => EXIT_BAD_INPUT,
        }
    }
}
