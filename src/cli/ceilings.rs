//! `scalebench ceilings`' arguments.

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct CeilingsArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Leave out the STREAM memory bandwidth (a few hundred milliseconds).
    #[arg(long)]
    pub no_stream: bool,
    /// Only the best instruction set's peaks (what a launch measures), not every one the CPU runs.
    #[arg(long)]
    pub best_only: bool,
    /// The sysfs tree to read network ports from (tests point it at a recorded tree).
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: std::path::PathBuf,
    /// The InfiniBand rate every active port should run at, Gb/s (e.g. 400 for NDR 4X): a
    /// port below it is warned about as negotiated down (sysfs gives no port maximum).
    #[arg(long, value_name = "GBPS")]
    pub ib_rate_gbps: Option<f64>,
    /// For testing: GPU values from a TOML file (the NVML / AMD SMI values of
    /// tests/fixtures/ceilings/gpu/*.toml) instead of the driver.
    #[arg(long, value_name = "FILE", hide = true)]
    pub gpu_values: Option<std::path::PathBuf>,
}

impl From<&CeilingsArgs> for crate::run::ceilings::Request {
    fn from(a: &CeilingsArgs) -> Self {
        crate::run::ceilings::Request {
            json: a.json,
            no_stream: a.no_stream,
            best_only: a.best_only,
            sysfs_root: a.sysfs_root.clone(),
            ib_rate_gbps: a.ib_rate_gbps,
            gpu_values: a.gpu_values.clone(),
        }
    }
}
