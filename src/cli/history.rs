//! The arguments of `scalebench history` (ingest, show, changes, export).

use crate::history::changes::Settings;
use crate::history::export::ExportRequest;
use crate::history::query::{Filter, Metric, Request};
use crate::history::{IngestRequest, DEFAULT_DB};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Index every results.json under the trees (new content only; safe to run concurrently).
    Ingest(IngestArgs),
    /// Each matching case's series across runs: commit, cluster, set-up, median and interval.
    Show(ShowArgs),
    /// Change points in each matching series (binary segmentation, permutation test); a set-up
    /// change breaks a series instead of counting as a step.
    Changes(ChangesArgs),
    /// Write the matching series for other tools: Bencher's JSON metric format (one run) or a
    /// CSV (one row per case and run), atomically.
    Export(ExportArgs),
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Directories (searched for results.json) or results files.
    #[arg(required = true)]
    pub roots: Vec<PathBuf>,
    /// The index (SQLite); created if absent.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// No summary line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// What a series is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryMetric {
    /// busbw for collectives, GFLOP/s per device for GEMMs, time where neither exists.
    Auto,
    /// Seconds per operation (lower is better).
    Time,
    /// Bus bandwidth, GB/s.
    Busbw,
    /// Algorithm bandwidth, GB/s.
    Algbw,
    /// GFLOP/s per device.
    Gflops,
}

/// Which series (every filter given must hold), and where the index is.
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// A case id (or a prefix of one), or text in the case's label (`allreduce f32 sum 1MiB`).
    pub case: Option<String>,
    /// The index.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// Only runs with this label (KEY=VALUE; repeatable).
    #[arg(long = "label")]
    pub labels: Vec<String>,
    /// Only runs on this cluster (the `cluster` label, else SLURM_CLUSTER_NAME, else the first host).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Only this workload (allreduce, matmul, …).
    #[arg(long)]
    pub workload: Option<String>,
    /// Only this message size (`1MiB`).
    #[arg(long)]
    pub size: Option<String>,
    /// Only set-ups whose description contains this text (`FI_PROVIDER=cxi`).
    #[arg(long)]
    pub setup: Option<String>,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    #[arg(long, value_enum, default_value_t = HistoryMetric::Auto)]
    pub metric: HistoryMetric,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub query: QueryArgs,
    /// Also draw the series to this SVG file (one panel each, at most 12; set-up breaks and
    /// change points marked), written atomically.
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
}

impl ShowArgs {
    pub fn request(&self) -> Request {
        Request {
            chart: self.chart.clone(),
            ..self.query.request(Settings::default())
        }
    }
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// `bencher` (Bencher Metric Format JSON: one run, every metric of each case) or `csv`
    /// (one row per case and run, every metric, units in the column names).
    #[arg(long)]
    pub format: String,
    /// Write here (atomically: a temporary file, then a rename) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// bencher: the run to export (its run id); default the latest matching run.
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
}

#[derive(Debug, Args)]
pub struct ChangesArgs {
    #[command(flatten)]
    pub query: QueryArgs,
    /// Largest permutation p-value reported as a change.
    #[arg(long, default_value_t = Settings::default().alpha)]
    pub alpha: f64,
    /// Smallest relative change reported (0.02 = 2 %).
    #[arg(long, default_value_t = 0.0)]
    pub min_change: f64,
}

impl FilterArgs {
    pub fn filter(&self) -> Filter {
        Filter {
            case: self.case.clone(),
            labels: self.labels.clone(),
            cluster: self.cluster.clone(),
            workload: self.workload.clone(),
            size: self.size.clone(),
            setup: self.setup.clone(),
        }
    }
}

impl ExportArgs {
    pub fn request(&self) -> ExportRequest {
        ExportRequest {
            db: self.filter.db.clone(),
            filter: self.filter.filter(),
            format: self.format.clone(),
            out: self.out.clone(),
            run: self.run.clone(),
        }
    }
}

impl QueryArgs {
    pub fn request(&self, settings: Settings) -> Request {
        Request {
            db: self.filter.db.clone(),
            filter: self.filter.filter(),
            metric: match self.metric {
                HistoryMetric::Auto => Metric::Auto,
                HistoryMetric::Time => Metric::Time,
                HistoryMetric::Busbw => Metric::Busbw,
                HistoryMetric::Algbw => Metric::Algbw,
                HistoryMetric::Gflops => Metric::Gflops,
            },
            json: self.json,
            settings,
            chart: None,
        }
    }
}

impl ChangesArgs {
    pub fn request(&self) -> Request {
        self.query.request(Settings {
            alpha: self.alpha,
            min_relative: self.min_change,
            ..Settings::default()
        })
    }
}

impl IngestArgs {
    pub fn request(&self) -> IngestRequest {
        IngestRequest {
            db: self.db.clone(),
            roots: self.roots.clone(),
            quiet: self.quiet,
        }
    }
}
