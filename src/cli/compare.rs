//! The arguments of `scalebench compare` and the value enums its help text lists.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// What `compare` judges cases by (`auto`: busbw for collectives, gflops for GEMMs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareMetric {
    /// busbw for collectives, GFLOP/s per device for GEMMs, time where neither exists.
    Auto,
    /// Seconds per operation (lower is better).
    Time,
    /// Bus bandwidth, GB/s (higher is better).
    Busbw,
    /// Algorithm bandwidth, GB/s (higher is better).
    Algbw,
    /// GFLOP/s per device (higher is better).
    Gflops,
}

/// Report formats of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// For a terminal.
    Text,
    /// For a CI comment: regressions and improvements in a table, the rest folded.
    Md,
    /// Every case, for machines.
    Json,
    /// A self-contained page: every case, and old-vs-new charts per size.
    Html,
}

/// When `compare` exits 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOnArg {
    /// A case regressed, or a case that worked in the baseline failed in the candidate.
    Regression,
    /// Also improvements, fixed, missing, new cases and status changes.
    AnyChange,
    /// Never (report only).
    Never,
}

/// A way a baseline case can stop being measured in the candidate (`--allow-dropped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DroppedArg {
    /// Wrong results, an error or a timeout.
    Failed,
    /// Skipped.
    Skipped,
    /// Absent from the candidate.
    Missing,
}

/// Multiple-comparison correction of `compare`'s p-values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CorrectionArg {
    /// Holm: chance of any false alarm over all cases ≤ 1 − confidence.
    Holm,
    /// Benjamini–Hochberg: expected share of false alarms among alarms ≤ 1 − confidence.
    Bh,
    /// None: each case on its own.
    None,
}

impl From<CompareMetric> for crate::compare::metric::MetricChoice {
    fn from(m: CompareMetric) -> Self {
        use crate::compare::metric::{Metric, MetricChoice};
        match m {
            CompareMetric::Auto => MetricChoice::Auto,
            CompareMetric::Time => MetricChoice::Fixed(Metric::Time),
            CompareMetric::Busbw => MetricChoice::Fixed(Metric::Busbw),
            CompareMetric::Algbw => MetricChoice::Fixed(Metric::Algbw),
            CompareMetric::Gflops => MetricChoice::Fixed(Metric::Gflops),
        }
    }
}

impl From<ReportFormat> for crate::compare::Format {
    fn from(f: ReportFormat) -> Self {
        use crate::compare::Format;
        match f {
            ReportFormat::Text => Format::Text,
            ReportFormat::Md => Format::Markdown,
            ReportFormat::Json => Format::Json,
            ReportFormat::Html => Format::Html,
        }
    }
}

impl From<FailOnArg> for crate::compare::FailOn {
    fn from(f: FailOnArg) -> Self {
        use crate::compare::FailOn;
        match f {
            FailOnArg::Regression => FailOn::Regression,
            FailOnArg::AnyChange => FailOn::AnyChange,
            FailOnArg::Never => FailOn::Never,
        }
    }
}

impl From<CorrectionArg> for crate::compare::stats::Correction {
    fn from(c: CorrectionArg) -> Self {
        use crate::compare::stats::Correction;
        match c {
            CorrectionArg::Holm => Correction::Holm,
            CorrectionArg::Bh => Correction::BenjaminiHochberg,
            CorrectionArg::None => Correction::None,
        }
    }
}

impl CompareArgs {
    /// The request, with whether `argv` had the `--` that clap does not report when nothing
    /// follows it (`compare A1 A2 --` must be refused, not read as `A1 A2`). clap takes `--`
    /// as an option's value nowhere, so any `--` word is the separator.
    pub fn request(&self, argv: &[String]) -> crate::compare::Request {
        crate::compare::Request {
            separator: argv.iter().any(|w| w == "--"),
            ..self.into()
        }
    }
}

impl From<&CompareArgs> for crate::compare::Request {
    fn from(a: &CompareArgs) -> Self {
        crate::compare::Request {
            paths: a.paths.clone(),
            candidates: a.candidates.clone(),
            separator: !a.candidates.is_empty(),
            options: crate::compare::Options {
                settings: crate::compare::Settings {
                    metric: a.metric.into(),
                    noise: a.noise,
                    confidence: a.confidence,
                    correction: a.correction.into(),
                    pairing: match (a.paired, a.unpaired) {
                        (true, _) => crate::compare::Pairing::Paired,
                        (_, true) => crate::compare::Pairing::Unpaired,
                        _ => crate::compare::Pairing::Auto,
                    },
                },
                fail_on: a.fail_on.into(),
                allow_mismatch: a.allow_mismatch,
                allow_dropped: crate::compare::Dropped {
                    failed: a.allow_dropped.contains(&DroppedArg::Failed),
                    skipped: a.allow_dropped.contains(&DroppedArg::Skipped),
                    missing: a.allow_dropped.contains(&DroppedArg::Missing),
                },
                allow_low_power: a.allow_low_power,
                allow_one_run: a.allow_one_run,
            },
            format: a.format.into(),
            out: a.out.clone(),
            all: a.all,
            baseline_history: a
                .baseline_history
                .map(|runs| crate::compare::HistoryBaseline {
                    runs,
                    db: a
                        .db
                        .clone()
                        .unwrap_or_else(|| crate::history::DEFAULT_DB.into()),
                }),
        }
    }
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 no regression; 1 regression found, or a case measured in the \
baseline stopped being measured (see --fail-on, --allow-dropped); \
2 bad input or unusable comparison (unreadable, truncated or mismatched files, set-ups that differ, \
the same run on both sides, no case in common, no usable samples, too little power for the band); \
4 I/O failure."
)]
pub struct CompareArgs {
    /// `BASELINE CANDIDATE`, or several baseline runs when the candidate runs follow `--`
    /// (`compare A1 A2 A3 -- B1 B2 B3`), or with --baseline-history the candidate runs alone.
    /// Each is a results.json, a run directory holding one, or a directory of run directories
    /// (every run in it).
    #[arg(required = true, value_name = "BASELINE")]
    pub paths: Vec<PathBuf>,

    /// Candidate runs, after `--`. With two or more runs on each side, every case is judged
    /// on run-level statistics (one median per run), so run-to-run variance is in its interval.
    #[arg(last = true, value_name = "CANDIDATE")]
    pub candidates: Vec<PathBuf>,

    /// The number compared per case.
    #[arg(long, value_enum, default_value = "auto")]
    pub metric: CompareMetric,

    /// Noise band as a fraction (0.10 = ±10 %, the CI gate's): a case regresses only when the
    /// band test (null: the true change lies inside the band) rejects after the correction,
    /// i.e. its whole interval lies beyond the band.
    #[arg(long, default_value_t = crate::compare::DEFAULT_NOISE)]
    pub noise: f64,

    /// Confidence of the intervals; 1 − confidence is the significance level after correction.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,

    /// Multiple-comparison correction over all compared cases.
    #[arg(long, value_enum, default_value = "holm")]
    pub correction: CorrectionArg,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,

    /// What makes the exit code 1.
    #[arg(long, value_enum, default_value = "regression")]
    pub fail_on: FailOnArg,

    /// Analyse runs in pairs (one log ratio per baseline run and the candidate run collected
    /// next to it): refused unless both sides have as many runs, collected alternately. The
    /// default pairs whenever that holds.
    #[arg(long, conflicts_with = "unpaired")]
    pub paired: bool,

    /// Never pair runs (Welch's t on the run medians).
    #[arg(long)]
    pub unpaired: bool,

    /// Kinds of cases measured in the baseline that may stop being measured in the candidate
    /// without failing the gate (comma-separated): failed, skipped, missing.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "KIND")]
    pub allow_dropped: Vec<DroppedArg>,

    /// Report instead of refusing (exit 2) when the median minimum detectable effect exceeds
    /// the noise band (too few runs for the band).
    #[arg(long)]
    pub allow_low_power: bool,

    /// Gate on one run a side anyway (refused by default, exit 2: one run cannot see the
    /// run-to-run variance, so its verdicts hold within-run noise only).
    #[arg(long)]
    pub allow_one_run: bool,

    /// Compare even when the set-ups differ in a way that changes performance (CPU or GPU
    /// model, backend, MPI library, node count, emulated nodes, binding), metric definitions
    /// differ, or a format version is not one this build reads; every verdict then says so.
    #[arg(long)]
    pub allow_mismatch: bool,

    /// Also write the report to FILE (atomically), in the format its extension names (.md,
    /// .json, .html, .txt), else in --format.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Text format: list every case, not only regressions, improvements and status changes.
    #[arg(long)]
    pub all: bool,

    /// Take the baseline from the history index: the N most recent runs on the candidate's
    /// cluster with its set-up, started before it (said on stderr); every path given is then
    /// a candidate run (no `--`).
    #[arg(long, value_name = "N")]
    pub baseline_history: Option<usize>,

    /// The history index of --baseline-history (default results/history.sqlite).
    #[arg(long, value_name = "PATH", requires = "baseline_history")]
    pub db: Option<PathBuf>,
}
