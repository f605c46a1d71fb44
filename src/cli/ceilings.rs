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
}

impl From<&CeilingsArgs> for crate::run::ceilings::Request {
    fn from(a: &CeilingsArgs) -> Self {
        crate::run::ceilings::Request {
            json: a.json,
            no_stream: a.no_stream,
            best_only: a.best_only,
        }
    }
}
