//! `scalebench replay TRACE…`: `run`'s options with one case, the trace's replay.

use super::run::RunArgs;
use crate::params::ReplayCompute;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The trace: an NCCL/RCCL log (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL; one file for the
    /// job or one per rank), or PyTorch execution traces (one JSON per rank, or one for every
    /// rank) optionally followed by their Kineto traces (one per execution trace) for times.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,

    /// Between the collectives: `gaps` waits the recorded gaps (where the trace has times),
    /// `none` runs them back to back.
    #[arg(long, default_value = "gaps", value_name = "gaps|none")]
    pub compute: ReplayCompute,

    #[command(flatten)]
    pub run: RunArgs,
}

impl From<&ReplayArgs> for crate::run::Request {
    fn from(a: &ReplayArgs) -> Self {
        let mut req: crate::run::Request = (&a.run).into();
        if let crate::run::Cases::Options(p) = &mut req.cases {
            p.replay = Some(crate::plan::replay::ReplayRequest {
                traces: a.traces.clone(),
                compute: a.compute,
            });
        }
        req
    }
}
