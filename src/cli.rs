//! Command-line definitions (clap) and nothing else: what the user wrote. Meaning is given in
//! `plan` (for `run`) and in each subcommand's module.

use crate::params::{
    BackendKind, Binding, Collect, Dtype, MatmulShape, Placement, ReduceOp, Scaling, Timing,
    Topology, Workload,
};
use crate::units::{parse_size_list, Bytes};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const EXIT_CODES: &str =
    "Exit codes: 0 ok; 1 regression found (compare); 2 bad input or unusable environment; \
3 wrong results or failed cases (results are still written); 4 runtime failure (I/O, launcher).";

#[derive(Debug, Parser)]
#[command(
    name = "scalebench",
    version,
    about = "Scaling studies for GPU clusters: collectives and GEMM under MPI and Slurm, with reports and CI regression checks",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure collectives and GEMMs in this MPI job (start it with mpirun/srun, or alone as one rank).
    Run(Box<RunArgs>),
}

/// A comma-separated size list with ranges, parsed as one value (`8B:1GiB:x2,3MiB`).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeList(pub Vec<Bytes>);

fn parse_sizes(s: &str) -> Result<SizeList, String> {
    parse_size_list(s).map(SizeList).map_err(|e| e.to_string())
}

/// Which buffer placements to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InPlaceChoice {
    /// Out-of-place and in-place, as nccl-tests.
    Both,
    /// In-place only.
    Yes,
    /// Out-of-place only.
    No,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = EXIT_CODES)]
pub struct RunArgs {
    /// Workloads: allreduce, reduce, broadcast, allgather, reduce_scatter, alltoall, matmul, batch_matmul.
    #[arg(
        short,
        long = "workload",
        value_delimiter = ',',
        default_value = "allreduce"
    )]
    pub workloads: Vec<Workload>,

    /// Collective sizes in bytes with binary units: a list and/or ranges START:END:STEP,
    /// with STEP xF (multiply) or +SIZE (add). Sizes mean what they mean in nccl-tests.
    #[arg(short, long, value_parser = parse_sizes, default_value = "8B:4MiB:x4", allow_hyphen_values = true)]
    pub sizes: SizeList,

    /// Element types: f32, f64, i32 (f16, bf16 on the CUDA backend).
    #[arg(short, long = "dtype", value_delimiter = ',', default_value = "f32")]
    pub dtypes: Vec<Dtype>,

    /// Reduction operators for allreduce, reduce and reduce_scatter: sum, prod, min, max, avg
    /// (avg = sum, then divide by the number of devices, where MPI has no native average).
    #[arg(short, long = "op", value_delimiter = ',', default_value = "sum")]
    pub ops: Vec<ReduceOp>,

    /// Root device(s) for reduce and broadcast.
    #[arg(long = "root", value_delimiter = ',', default_value = "0")]
    pub roots: Vec<u32>,

    /// GEMM shapes for matmul and batch_matmul: N (square) or MxNxK.
    #[arg(long = "dims", value_delimiter = ',', default_value = "1024")]
    pub dims: Vec<MatmulShape>,

    /// batch_matmul: matrices per device (weak scaling) or in total (strong scaling).
    #[arg(long, default_value_t = 4)]
    pub batch: u32,

    /// batch_matmul: return the products (gather) or their sum (reduce) to rank 0.
    #[arg(long, value_enum, default_value = "gather")]
    pub collect: CollectArg,

    /// matmul and batch_matmul: weak (the shape per device) or strong (the shape in total).
    #[arg(long, value_enum, default_value = "weak")]
    pub scaling: ScalingArg,

    /// Timing modes: pipelined (nccl-tests) and/or isolated (OSU).
    #[arg(
        short,
        long = "timing",
        value_delimiter = ',',
        default_value = "pipelined"
    )]
    pub timings: Vec<Timing>,

    /// Buffers: out-of-place and in-place (both), in-place only (yes) or out-of-place only (no).
    #[arg(long, value_enum, default_value = "both")]
    pub in_place: InPlaceChoice,

    /// Timed iterations per case (default: automatic, see --time-budget).
    #[arg(short = 'n', long)]
    pub iters: Option<u32>,

    /// Warm-up iterations per case (default: automatic).
    #[arg(long)]
    pub warmup: Option<u32>,

    /// Automatic iterations: start from OSU's counts (1000 up to 8 KiB, 100 above) and cap the
    /// timed phase of each case at about this many seconds.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    pub time_budget: f64,

    /// Pipelined mode: number of batches (samples) the iterations are split into (default: up to 20).
    #[arg(long)]
    pub batches: Option<u32>,

    /// Validated iterations after timing (0 disables validation).
    #[arg(short = 'c', long, default_value_t = 1)]
    pub check: u32,

    /// Output directory (default: results/<UTC timestamp>).
    #[arg(short, long)]
    pub out: Option<PathBuf>,

    /// Backend: cpu (MPI + CPU GEMM) or cuda (NCCL + cuBLAS; needs the `cuda` feature).
    #[arg(long, default_value = "cpu")]
    pub backend: BackendKind,

    /// pure: one MPI rank per device. hybrid: one rank per node driving all its devices.
    #[arg(long, default_value = "pure")]
    pub topology: Topology,

    /// Nodes the job spans (default: as detected).
    #[arg(long)]
    pub nodes: Option<u32>,

    /// Devices per node (default: ranks per node in pure mode, 1 in hybrid mode).
    #[arg(long)]
    pub devices_per_node: Option<u32>,

    /// Treat groups of ranks on this host as separate nodes (default: when --nodes asks for
    /// more nodes than there are hosts). Results say so (`emulated_nodes: true`).
    #[arg(long)]
    pub emulate_nodes: bool,

    /// How ranks map to nodes: fill (rank / ranks-per-node) or round_robin (rank % nodes).
    #[arg(long, default_value = "fill")]
    pub placement: Placement,

    /// CPU binding of each device's thread: none, core, numa, socket or gpu.
    #[arg(long, default_value = "none")]
    pub binding: Binding,

    /// CPUs never bound to (e.g. `0` for core 0 reserved for the system), as a cpulist.
    #[arg(long, default_value = "")]
    pub reserved_cores: String,

    /// CPU threads each device's GEMM may use (CPU backend).
    #[arg(long, default_value_t = 1)]
    pub threads_per_device: u32,

    /// Do not print the results table.
    #[arg(short, long)]
    pub quiet: bool,

    /// Launch id recorded with the results (set by `sweep`).
    #[arg(long, hide = true)]
    pub launch_id: Option<String>,

    /// Test-only fault injection: corrupt, fail, hang or crash (see `workload::Fault`).
    #[arg(long, hide = true)]
    pub fault: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CollectArg {
    Gather,
    Reduce,
}

impl From<CollectArg> for Collect {
    fn from(c: CollectArg) -> Collect {
        match c {
            CollectArg::Gather => Collect::Gather,
            CollectArg::Reduce => Collect::Reduce,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScalingArg {
    Weak,
    Strong,
}

impl From<ScalingArg> for Scaling {
    fn from(s: ScalingArg) -> Scaling {
        match s {
            ScalingArg::Weak => Scaling::Weak,
            ScalingArg::Strong => Scaling::Strong,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_lists_and_ranges() {
        let cli = Cli::try_parse_from([
            "scalebench",
            "run",
            "-w",
            "allreduce,matmul",
            "--sizes",
            "4KiB,8B:32B:x2",
            "--dtype",
            "f32,f64",
            "--timing",
            "isolated",
        ])
        .unwrap();
        let Command::Run(a) = cli.command;
        assert_eq!(a.workloads, vec![Workload::Allreduce, Workload::Matmul]);
        assert_eq!(a.sizes.0, vec![Bytes(4096), Bytes(8), Bytes(16), Bytes(32)]);
        assert_eq!(a.dtypes, vec![Dtype::F32, Dtype::F64]);
        assert_eq!(a.timings, vec![Timing::Isolated]);
    }

    #[test]
    fn bad_values_are_rejected_with_reasons() {
        for (args, needle) in [
            (vec!["--sizes", "12Q"], "not a size"),
            (vec!["--sizes", "-4"], "negative"),
            (vec!["-w", "allreduc"], "unknown workload"),
            (vec!["--dtype", "f8"], "unknown dtype"),
            (vec!["--dims", "0"], "matrix shape"),
        ] {
            let mut full = vec!["scalebench", "run"];
            full.extend(args.iter());
            let e = Cli::try_parse_from(full).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(needle), "{args:?}: {e}");
        }
    }
}
