//! The arguments of `scalebench run` and their translation into the run and plan requests.

use super::{parse_buffer_offset, parse_sizes, SizeList, EXIT_CODES};
use crate::params::{
    BackendKind, Binding, Collect, Dtype, GemmChoice, MatmulShape, Placement, Progress, ReduceOp,
    Scaling, Timing, Topology, Workload,
};
use crate::topology::binding::Reserved;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

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
    /// Workloads: allreduce, reduce, broadcast, allgather, reduce_scatter, alltoall, matmul,
    /// batch_matmul, ddp_step (replay: `scalebench replay TRACE`).
    #[arg(
        short,
        long = "workload",
        value_delimiter = ',',
        default_value = "allreduce"
    )]
    pub workloads: Vec<Workload>,

    /// Collective sizes in bytes with binary units: a list and/or ranges START:END:STEP,
    /// with STEP xF (multiply) or +SIZE (add); a range stops at its last step not past END
    /// (8B:1MiB:x4 ends at 512KiB). Sizes mean what they mean in nccl-tests.
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

    /// batch_matmul: matrices per device (weak scaling) or in total (strong scaling), default 4.
    /// ddp_step: samples per device (weak) or in the global batch (strong), default 32.
    #[arg(long)]
    pub batch: Option<u32>,

    /// ddp_step models: presets (mlp-tiny, mlp-small, mlp-100m, mlp-1b) or layers joined by
    /// '+', each IxO or IxOxCOUNT (e.g. 1024x1024x8+1024x10).
    #[arg(long = "model", value_delimiter = ',', default_value = "mlp-tiny")]
    pub models: Vec<String>,

    /// ddp_step gradient bucket capacities (PyTorch DDP's bucket_cap_mb), sizes as --sizes
    /// [default: 25MiB].
    #[arg(long = "bucket-size", value_parser = parse_sizes)]
    pub bucket_sizes: Option<SizeList>,

    /// ddp_step: the first gradient bucket's capacities; 0B = the same as --bucket-size.
    /// Default as PyTorch DDP: 1MiB, or the --bucket-size cap when that is given.
    #[arg(long = "first-bucket", value_parser = parse_sizes)]
    pub first_bucket_sizes: Option<SizeList>,

    /// ddp_step on the CPU backend: who progresses the non-blocking all-reduces: thread (a
    /// progress thread, the default) and/or test (MPI_Test between GEMM tiles).
    #[arg(long = "progress", value_delimiter = ',', default_value = "thread")]
    pub progress: Vec<Progress>,

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

    /// Collectives' buffers across timed iterations: `reuse` one set (OSU; a message the
    /// cache holds stays cached), `rotate` through sets larger together than the device's
    /// last-level cache (nccl-tests' "avoid cache effects"), or both (`reuse,rotate`).
    #[arg(long, value_delimiter = ',', default_value = "reuse")]
    pub buffers: Vec<crate::params::BufferUse>,

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

    /// Start benchmark buffers BYTES after a page boundary (default: page-aligned, as OSU);
    /// `SEND,RECV` gives send and receive buffers different offsets (e.g. `0,16` provokes 4K
    /// aliasing). A multiple of the element size, below the page size; CPU backend.
    #[arg(long, value_name = "BYTES[,BYTES]", value_parser = parse_buffer_offset, default_value = "0")]
    pub buffer_offset: crate::params::BufferOffset,

    /// Output directory (default: results/<UTC timestamp>). No short form: `-o` is --op.
    #[arg(long)]
    pub out: Option<PathBuf>,

    /// Watchdog: a case (or the start-up) that takes longer than this many seconds ends the
    /// job with exit 4, naming the ranks that had not arrived and keeping finished cases
    /// (default: 600 s plus 20 × --time-budget).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub op_timeout: Option<f64>,

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

    /// CPU binding of each device's thread (computed with hwloc; start the launcher with its
    /// own binding off): none, core, numa, socket, or gpu (cores nearest the device's GPU;
    /// falls back to core without GPUs, and says so).
    #[arg(long, default_value = "none")]
    pub binding: Binding,

    /// Cores never bound to: a cpulist such as `0` or `0,8`, or `first_per_numa`.
    #[arg(long, default_value = "")]
    pub reserved_cores: Reserved,

    /// CPU threads each device's GEMM may use (CPU backend).
    #[arg(long, default_value_t = 1)]
    pub threads_per_device: u32,

    /// CPU GEMM provider: auto (the system BLAS when one loads, else the gemm crate), blas
    /// (the system CBLAS; SCALEBENCH_BLAS=/path/lib.so picks the library) or gemm-crate.
    #[arg(long, default_value = "auto")]
    pub gemm: GemmChoice,

    /// MPI thread level to initialise with: single, funneled, serialized or multiple
    /// (default: the lowest this launch needs; a sweep gives all its launches the highest any
    /// of them needs). Below what the launch needs is an error.
    #[arg(long, value_name = "LEVEL")]
    pub thread_level: Option<crate::params::ThreadLevel>,

    /// Do not measure the hosts' ceilings (FMA peak, STREAM Copy) at start-up: figures then
    /// carry no fraction of peak, and the provenance says the ceilings were skipped.
    #[arg(long)]
    pub no_ceilings: bool,

    /// The rate every InfiniBand port should run at, Gb/s (e.g. 400 for NDR 4X): an ACTIVE
    /// port below it is recorded as negotiated down (sysfs gives no port maximum).
    #[arg(long, value_name = "GBPS", value_parser = positive_gbps)]
    pub ib_rate_gbps: Option<f64>,

    /// Test-only: the sysfs tree the network ceilings and error counters are read from.
    #[arg(long, hide = true, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: PathBuf,

    /// Test-only: the tree the error counters are read from after the last case (a test makes
    /// them grow deterministically; default: --sysfs-root again).
    #[arg(long, hide = true, value_name = "DIR")]
    pub sysfs_root_after: Option<PathBuf>,

    /// Force NCCL's algorithm for this launch (NCCL_ALGO; cuda backend): ring, tree,
    /// collnet_direct, collnet_chain, nvls, nvls_tree or pat (NCCL's spellings too, any case;
    /// one value: sweep several with the spec axis nccl_algo). Recorded in each case.
    #[arg(long, value_name = "ALGO")]
    pub nccl_algo: Option<crate::params::NcclAlgo>,

    /// Force NCCL's protocol for this launch (NCCL_PROTO; cuda backend): ll, ll128 or simple.
    #[arg(long, value_name = "PROTO")]
    pub nccl_proto: Option<crate::params::NcclProto>,

    /// Run the launch plan in FILE (written by `scalebench sweep`/`submit`) instead of the
    /// workload, size and shape options.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// Do not print the results table.
    #[arg(short, long)]
    pub quiet: bool,

    /// Launch id recorded with the results (set by `sweep`).
    #[arg(long, hide = true)]
    pub launch_id: Option<String>,

    /// Test-only fault injection: corrupt, fail, hang, crash or cold (see `params::Fault`).
    #[arg(long, hide = true)]
    pub fault: Option<String>,
}

impl From<InPlaceChoice> for Vec<bool> {
    fn from(c: InPlaceChoice) -> Vec<bool> {
        match c {
            InPlaceChoice::Both => vec![false, true],
            InPlaceChoice::Yes => vec![true],
            InPlaceChoice::No => vec![false],
        }
    }
}

impl From<&RunArgs> for crate::plan::Request {
    fn from(a: &RunArgs) -> Self {
        crate::plan::Request {
            workloads: a.workloads.clone(),
            sizes: a.sizes.0.clone(),
            dtypes: a.dtypes.clone(),
            ops: a.ops.clone(),
            roots: a.roots.clone(),
            dims: a.dims.clone(),
            batch: a.batch,
            models: a.models.clone(),
            bucket_sizes: a.bucket_sizes.as_ref().map(|x| x.0.clone()),
            first_bucket_sizes: a.first_bucket_sizes.as_ref().map(|x| x.0.clone()),
            progress: a.progress.clone(),
            collect: a.collect.into(),
            scaling: a.scaling.into(),
            timings: a.timings.clone(),
            in_place: a.in_place.into(),
            buffers: a.buffers.clone(),
            iters: a.iters,
            warmup: a.warmup,
            time_budget_s: a.time_budget,
            batches: a.batches,
            check: a.check,
            buffer_offset: a.buffer_offset,
            backend: a.backend,
            topology: a.topology,
            nodes: a.nodes,
            devices_per_node: a.devices_per_node,
            emulate_nodes: a.emulate_nodes,
            placement: a.placement,
            binding: a.binding,
            reserved_cores: a.reserved_cores.clone(),
            threads_per_device: a.threads_per_device,
            gemm: a.gemm,
            thread_level: a.thread_level,
            ceilings: !a.no_ceilings,
            fault: a.fault.clone(),
            nccl_algo: a.nccl_algo,
            nccl_proto: a.nccl_proto,
            replay: None,
        }
    }
}

impl From<&RunArgs> for crate::run::Request {
    fn from(a: &RunArgs) -> Self {
        crate::run::Request {
            cases: match &a.plan {
                Some(path) => crate::run::Cases::PlanFile(path.clone()),
                None => crate::run::Cases::Options(Box::new(a.into())),
            },
            out: a.out.clone(),
            op_timeout_s: a.op_timeout,
            quiet: a.quiet,
            launch_id: a.launch_id.clone(),
            network: crate::topology::ceilings::network::Probe {
                sysfs_root: a.sysfs_root.clone(),
                sysfs_root_after: a.sysfs_root_after.clone(),
                expect: crate::topology::ceilings::network::Expect {
                    ib_rate_gbps: a.ib_rate_gbps,
                },
            },
        }
    }
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

/// `--ib-rate-gbps`: a positive, finite number of Gb/s.
fn positive_gbps(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "\"{text}\" is not a rate in Gb/s: give a positive number such as 200 (HDR 4X) or 400 (NDR 4X)"
        )),
    }
}
