//! The arguments of `scalebench report`.

use super::EXIT_CODES;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Files `report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportOutput {
    /// report.html: one self-contained page (inline SVG charts, sortable tables).
    Html,
    /// report.md: Markdown with PNG (or SVG) chart links, for a code-hosting site.
    Md,
    /// results.csv (one row per case) and tables/*.csv (every report table).
    Csv,
    /// charts/*.svg.
    Svg,
    /// charts/*.png.
    Png,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = EXIT_CODES)]
pub struct ReportArgs {
    /// Results files (results.json) or run directories. Several are merged, e.g. one run per
    /// node count; a case measured twice counts once (the newest).
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,

    /// Output directory (default: reports/<UTC timestamp>). An earlier report there is
    /// replaced whole; any other non-empty directory is refused.
    #[arg(short, long)]
    pub out: Option<PathBuf>,

    /// Title of the report (default: from the run ids).
    #[arg(long)]
    pub title: Option<String>,

    /// Files to write (comma list): html, md, csv, svg, png.
    #[arg(
        long = "format",
        value_enum,
        value_delimiter = ',',
        default_value = "html,md,csv,svg,png"
    )]
    pub formats: Vec<ReportOutput>,

    /// Only cases whose parameter KEY has VALUE, as in the case id text (e.g. workload=allreduce,
    /// dtype=f32, requested_bytes=1MiB, nodes=2). Repeat it: the same key means any of the
    /// values, different keys must all match.
    #[arg(long, value_name = "KEY=VALUE")]
    pub only: Vec<String>,

    /// Flag a case as noisy when the coefficient of variation of its samples exceeds this.
    #[arg(long, default_value_t = 0.10)]
    pub noisy_cv: f64,

    /// Pure-vs-hybrid and binding ratios within 1 ± this count as a tie.
    #[arg(long, default_value_t = 0.05)]
    pub tie_band: f64,

    /// Variants (dtype, op, in-place, timing, ...) charted per workload, most cases first; the
    /// others are in the tables and results.csv.
    #[arg(long, default_value_t = 1)]
    pub chart_variants: usize,

    /// Let cases that cannot represent their set-up (oversubscribed, emulated nodes, devices
    /// sharing a core, CPU clock changes) into winners, scaling efficiencies, fits and
    /// findings, marked; by default they are shown apart and left out.
    #[arg(long)]
    pub include_unrepresentative: bool,

    /// Add a trend section: each case's recent series in this history index (`scalebench
    /// history ingest`) on the input's cluster, with the change points `history changes`
    /// finds, as a table and charts.
    #[arg(long, value_name = "PATH")]
    pub history_db: Option<PathBuf>,

    /// Also write an NCCL tuner configuration to FILE (NCCL's example CSV tuner, NCCL 2.28+:
    /// `NCCL_TUNER_CONFIG_FILE=FILE`): per collective and layout of each sweep over
    /// nccl_algo × nccl_proto, the fastest measured algorithm and protocol per size band.
    /// Refused (nothing written) when the inputs hold no such sweep.
    #[arg(long, value_name = "FILE")]
    pub nccl_tuner: Option<PathBuf>,
}

impl ReportArgs {
    /// The typed request. Fallible: `--only` filters are parsed here, after the thresholds
    /// are checked (the order in which `report` has always reported bad input).
    pub fn request(&self) -> Result<crate::report::Request, crate::error::Error> {
        use crate::report::build;
        let options = crate::report::analyze::Options {
            noisy_cv: self.noisy_cv,
            tie_band: self.tie_band,
            chart_variants: self.chart_variants,
            include_unrepresentative: self.include_unrepresentative,
        };
        build::check_options(&options)?;
        let mut outputs = build::Outputs::none();
        for f in &self.formats {
            match f {
                ReportOutput::Html => outputs.html = true,
                ReportOutput::Md => outputs.md = true,
                ReportOutput::Csv => outputs.csv = true,
                ReportOutput::Svg => outputs.svg = true,
                ReportOutput::Png => outputs.png = true,
            }
        }
        let filters = self
            .only
            .iter()
            .map(|s| crate::report::load::parse_filter(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(crate::report::Request {
            inputs: self.results.clone(),
            out: self.out.clone().unwrap_or_else(build::default_out_dir),
            title: self.title.clone(),
            outputs,
            filters,
            options,
            history_db: self.history_db.clone(),
            nccl_tuner: self.nccl_tuner.clone(),
        })
    }
}
