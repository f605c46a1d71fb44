//! Why a report could not be written: bad options or inputs (exit code 2, each message names
//! the option or file and the fix) or a failure while writing it (exit code 4).

use crate::exit::{EXIT_BAD_INPUT, EXIT_RUNTIME};
use crate::results::io::ResultsError;
use crate::units::SizeError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("--noisy-cv {value}: give the coefficient of variation above which a case is noisy, a number > 0 (e.g. 0.1 for 10 %)")]
    NoisyCv { value: f64 },
    #[error("--tie-band {value}: give the relative band around 1 in which a ratio is a tie, 0 ≤ band < 1 (e.g. 0.05)")]
    TieBand { value: f64 },
    #[error("--out {}: exists and is not a directory: choose a new directory name", .out.display())]
    OutNotADirectory { out: PathBuf },
    #[error("--out {}: exists and is not a scalebench report (no {} inside), so it is not replaced: choose a new directory, or remove it", .out.display(), super::build::MARKER)]
    OutNotAReport { out: PathBuf },
    #[error("no results given: name one or more results.json files or run directories")]
    NoInputs,
    #[error("{}: metrics_version {version} differs from {} (metrics_version {first_version}): their times and bandwidths are defined differently, so they cannot share one report; report them separately", .path.display(), .first.display())]
    MetricsVersion {
        path: PathBuf,
        version: u32,
        first: PathBuf,
        first_version: u32,
    },
    #[error("--only '{text}': write KEY=VALUE, e.g. --only workload=allreduce; keys: {}", .keys.join(", "))]
    FilterSyntax { text: String, keys: Vec<String> },
    #[error("--only '{text}': unknown key '{key}'; keys: {}", .keys.join(", "))]
    FilterKey {
        text: String,
        key: String,
        keys: Vec<String>,
    },
    #[error("--only '{text}': {source}")]
    FilterSize {
        text: String,
        #[source]
        source: SizeError,
    },
    /// No case passes the filters: each filter's key with the values the inputs hold.
    #[error("no case matches the --only filters{}", no_match(.present))]
    NoMatch { present: Vec<(String, Vec<String>)> },
    /// A results file cannot be read or used.
    #[error("{0}")]
    Results(#[from] ResultsError),
    /// Writing the report failed.
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `--history-db`: the index could not be read for the trend section.
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    #[error("the embedded chart font could not be loaded (a build problem: assets/fonts/DejaVuSans.ttf)")]
    Font,
    /// `--nccl-tuner`: nothing in the inputs to export.
    #[error("--nccl-tuner {}: {reason}", .path.display())]
    NcclTuner {
        path: PathBuf,
        reason: crate::report::tuner::TunerRefusal,
    },
    #[error("chart {stem}: {source}")]
    Chart {
        stem: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{}: chart {stem}: {source}", .path.display())]
    ChartFile {
        path: PathBuf,
        stem: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

fn no_match(present: &[(String, Vec<String>)]) -> String {
    present
        .iter()
        .map(|(key, values)| format!("; values of {key} in the inputs: {}", values.join(", ")))
        .collect()
}

impl ReportError {
    /// Bad options or inputs are 2; failing to write the report is 4.
    pub fn exit_code(&self) -> u8 {
        match self {
            ReportError::Results(ResultsError::Io { .. })
            | ReportError::Io { .. }
            | ReportError::Font
            | ReportError::Chart { .. }
            | ReportError::ChartFile { .. } => EXIT_RUNTIME,
            ReportError::History(e) => e.exit_code(),
            _ => EXIT_BAD_INPUT,
        }
    }
}
