//! Command-line definitions (clap): what the user wrote, and its translation into the typed
//! requests the library's entry points take ([`crate::run::Request`], [`crate::plan::Request`],
//! [`crate::report::Request`], [`crate::compare::Request`], and `launch`'s sweep and submit
//! requests). Meaning (checks, defaults that need
//! the library) is given in `plan` (for `run`) and in each subcommand's module; no module below
//! this one imports it.
//!
//! Enums that exist only to derive `clap::ValueEnum` (their doc comments are the help text)
//! stay here, each with a conversion into the library's own type: the library's types differ
//! in shape (a metric choice wraps a metric, a format list is a set of flags) and stay free of
//! clap's derive.

use crate::launch::profile::UnknownScheduler;
use crate::params::{
    BackendKind, Binding, Collect, Dtype, GemmChoice, MatmulShape, Placement, Progress, ReduceOp,
    Scaling, Timing, Topology, Workload,
};
use crate::units::{parse_size_list, Bytes};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const EXIT_CODES: &str =
    "Exit codes: 0 ok; 1 regression found (compare); 2 bad input or unusable environment; \
3 wrong results or failed cases (results are still written); 4 runtime failure (I/O, launcher, \
a hung job ended by the --op-timeout watchdog).";

/// `0.1.0 (commit 0123456789ab)`, with `-dirty` when the tree had uncommitted changes, or
/// `(commit unknown)` outside git (build.rs): every binary says which code it runs.
/// (A build whose build-script output predates the variable falls back to the bare version.)
const VERSION: &str = match option_env!("SCALEBENCH_VERSION_LONG") {
    Some(v) => v,
    None => env!("CARGO_PKG_VERSION"),
};

#[derive(Debug, Parser)]
#[command(
    name = "scalebench",
    version = VERSION,
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
    /// Show the launches and cases a sweep spec expands to (nothing runs).
    Plan(PlanArgs),
    /// Run a sweep spec on this machine: one mpirun per launch, every finished case kept.
    Sweep(SweepArgs),
    /// Show this machine's topology (hwloc) and the CPUs each binding policy would give.
    Topo(TopoArgs),
    /// Submit a sweep spec to a scheduler: one job per allocation shape (job arrays where shapes
    /// repeat), then a job that merges the results. UGE and PBS scripts with --dry-run.
    Submit(SubmitArgs),
    /// Show the jobs of a submitted run (bounded polling of the scheduler).
    Status(StatusArgs),
    /// Merge a run directory's results into results.json, recording failed or missing jobs.
    Collect(CollectArgs),
    /// Record how a launch ended (run inside job scripts).
    #[command(hide = true)]
    FinishLaunch(FinishLaunchArgs),
    /// Compare two results files case by case: relative change of the median with a confidence
    /// interval, multiple-comparison control, a noise band; exit 1 on a regression.
    Compare(CompareArgs),
    /// Build a report from results files: charts (SVG, PNG), report.html, report.md and
    /// results.csv with scaling efficiency, α–β model fits, pure vs hybrid, binding, stragglers.
    Report(ReportArgs),
}

/// A comma-separated size list with ranges, parsed as one value (`8B:1GiB:x2,3MiB`).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeList(pub Vec<Bytes>);

fn parse_sizes(s: &str) -> Result<SizeList, String> {
    parse_size_list(s).map(SizeList).map_err(|e| e.to_string())
}

fn parse_buffer_offset(s: &str) -> Result<crate::params::BufferOffset, String> {
    let num = |v: &str| {
        v.trim().parse::<u64>().map_err(|_| {
            format!("`{v}` is not a number of bytes: give BYTES or SEND,RECV, e.g. 0,16")
        })
    };
    let (send, recv) = match s.split_once(',') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => (num(s)?, num(s)?),
    };
    Ok(crate::params::BufferOffset {
        send_bytes: send,
        recv_bytes: recv,
    })
}

#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// The sweep spec (TOML; see examples/).
    pub spec: PathBuf,
    /// List every case (id and parameters) under its launch.
    #[arg(long)]
    pub cases: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 every case ok; 2 bad spec; 3 some case failed, was wrong or timed out (results are kept); 130 interrupted (results are kept; continue with --resume)."
)]
pub struct SweepArgs {
    /// The sweep spec (TOML; see examples/).
    pub spec: PathBuf,
    /// Run directory (default: results/<name>-<UTC timestamp>).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Continue the sweep in --out: run only cases that are missing, failed, wrong or timed out.
    #[arg(long)]
    pub resume: bool,
    /// Print the launch commands without running them.
    #[arg(long)]
    pub dry_run: bool,
    /// No progress line and no tables.
    #[arg(short, long)]
    pub quiet: bool,
    /// Kill a launch after this many seconds (overrides the spec's [launch] timeout_s).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub launch_timeout: Option<f64>,
    /// The MPI launcher.
    #[arg(long, default_value = "mpirun")]
    pub mpirun: String,
}

#[derive(Debug, Clone, Args)]
pub struct TopoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Devices per node to show bindings for (default: the GPUs found, or 2).
    #[arg(long)]
    pub devices_per_node: Option<u32>,
    /// Cores kept free: a cpulist such as `0`, or `first_per_numa`.
    #[arg(long, default_value = "")]
    pub reserved_cores: String,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Submitting into a run directory that already holds a run submits only its missing or failed cases."
)]
pub struct SubmitArgs {
    /// The sweep spec (TOML; see examples/).
    pub spec: PathBuf,
    /// slurm, uge or pbs (default: the profile's).
    #[arg(long)]
    pub scheduler: Option<String>,
    /// A built-in site profile (puhti, mahti, lumi, sulis, apocrita, pbs-example, local-slurm)
    /// or a profile file.
    #[arg(long)]
    pub profile: Option<String>,
    /// Run directory (default: results/<name>-<UTC timestamp>).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Print the job scripts without writing or submitting anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Account (project) to charge, overriding the profile's.
    #[arg(long)]
    pub account: Option<String>,
    /// Partition (queue), overriding the profile's.
    #[arg(long)]
    pub partition: Option<String>,
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit codes: 0 the run is healthy (every launch queued, running or finished ok); 3 a launch failed, timed out or was lost (its job ended without recording its end); 4 --wait ran out of time. Array jobs are followed task by task (JOB_INDEX)."
)]
pub struct StatusArgs {
    /// The run directory.
    pub run: PathBuf,
    /// Wait until no job of the run is queued or running.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this many seconds.
    #[arg(long, default_value_t = 3600.0, allow_negative_numbers = true)]
    pub timeout: f64,
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CollectArgs {
    /// The run directory.
    pub run: PathBuf,
    /// The job running the collection (set by the collect job).
    #[arg(long, hide = true)]
    pub from_job: Option<String>,
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct FinishLaunchArgs {
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long, allow_negative_numbers = true)]
    pub exit_code: i32,
    #[arg(long)]
    pub started: f64,
    #[arg(long)]
    pub timeout_s: Option<f64>,
    #[arg(long, default_value = "srun")]
    pub launcher: String,
    #[arg(long)]
    pub job_id: Option<String>,
}

impl From<&SweepArgs> for crate::launch::local::SweepRequest {
    fn from(a: &SweepArgs) -> Self {
        crate::launch::local::SweepRequest {
            spec: a.spec.clone(),
            out: a.out.clone(),
            resume: a.resume,
            dry_run: a.dry_run,
            quiet: a.quiet,
            launch_timeout_s: a.launch_timeout,
            mpirun: a.mpirun.clone(),
        }
    }
}

impl SubmitArgs {
    /// The typed request (fallible: `--scheduler` names one of the schedulers).
    pub fn request(&self) -> Result<crate::launch::submit::SubmitRequest, crate::error::Error> {
        let scheduler = self
            .scheduler
            .as_deref()
            .map(|s| {
                s.parse().map_err(|e: UnknownScheduler| {
                    crate::error::Error::Input(format!("--scheduler: {e}"))
                })
            })
            .transpose()?;
        Ok(crate::launch::submit::SubmitRequest {
            spec: self.spec.clone(),
            scheduler,
            profile: self.profile.clone(),
            out: self.out.clone(),
            dry_run: self.dry_run,
            account: self.account.clone(),
            partition: self.partition.clone(),
            quiet: self.quiet,
        })
    }
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
    /// Workloads: allreduce, reduce, broadcast, allgather, reduce_scatter, alltoall, matmul,
    /// batch_matmul, ddp_step.
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
    pub reserved_cores: String,

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
            fault: a.fault.clone(),
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
            },
            format: a.format.into(),
            out: a.out.clone(),
            all: a.all,
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
    /// (`compare A1 A2 A3 -- B1 B2 B3`). Each is a results.json, a run directory holding one,
    /// or a directory of run directories (every run in it).
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

    /// Compare even when the set-ups differ in a way that changes performance (CPU or GPU
    /// model, backend, MPI library, node count, emulated nodes, binding), metric definitions
    /// differ, or a format version is not one this build reads; every verdict then says so.
    #[arg(long)]
    pub allow_mismatch: bool,

    /// Also write the report to FILE (atomically), in the format its extension names (.md,
    /// .json, .txt), else in --format.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Text format: list every case, not only regressions, improvements and status changes.
    #[arg(long)]
    pub all: bool,
}

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
        })
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

    /// `debug_assert` checks nothing in a release build (clap compiles its asserts out), and
    /// the tests run in release: the clash it exists for (`run -o` was both --op and --out)
    /// is checked here by hand.
    #[test]
    fn no_two_options_share_a_name() {
        let cmd = Cli::command();
        for sub in cmd.get_subcommands() {
            let mut shorts = std::collections::HashMap::new();
            let mut longs = std::collections::HashMap::new();
            for a in sub.get_arguments() {
                if let Some(s) = a.get_short() {
                    if let Some(prev) = shorts.insert(s, a.get_id().clone()) {
                        panic!(
                            "{}: -{s} is both --{prev} and --{}",
                            sub.get_name(),
                            a.get_id()
                        );
                    }
                }
                if let Some(l) = a.get_long() {
                    assert!(
                        longs.insert(l.to_string(), ()).is_none(),
                        "{}: --{l} twice",
                        sub.get_name()
                    );
                }
            }
        }
        let cli = Cli::try_parse_from(["scalebench", "run", "-o", "max", "--out", "d"]).unwrap();
        let Command::Run(a) = cli.command else {
            panic!("parsed as another command")
        };
        assert_eq!(
            (a.ops, a.out),
            (vec![ReduceOp::Max], Some(PathBuf::from("d")))
        );
    }

    /// The library's defaults for `run` (used by callers without a command line) are the
    /// command line's.
    #[test]
    fn run_defaults_are_the_librarys() {
        let cli = Cli::try_parse_from(["scalebench", "run"]).unwrap();
        let Command::Run(a) = cli.command else {
            panic!("parsed as another command")
        };
        assert_eq!(
            crate::plan::Request::from(a.as_ref()),
            crate::plan::Request::default()
        );
        let r = crate::run::Request::from(a.as_ref());
        assert!(matches!(r.cases, crate::run::Cases::Options(_)));
        assert_eq!((r.out, r.op_timeout_s, r.quiet), (None, None, false));
    }

    #[test]
    fn compare_and_report_defaults_are_the_librarys() {
        let cli = Cli::try_parse_from(["scalebench", "compare", "a", "b"]).unwrap();
        let Command::Compare(a) = cli.command else {
            panic!("parsed as another command")
        };
        let r = crate::compare::Request::from(&a);
        assert_eq!(r.options, crate::compare::Options::default());
        assert_eq!(r.format, crate::compare::Format::Text);
        let cli = Cli::try_parse_from(["scalebench", "report", "r", "--out", "o"]).unwrap();
        let Command::Report(a) = cli.command else {
            panic!("parsed as another command")
        };
        let r = a.request().unwrap();
        assert_eq!(r.options, crate::report::analyze::Options::default());
        assert_eq!(r.outputs, crate::report::Outputs::all());
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
        let Command::Run(a) = cli.command else {
            panic!("parsed as another command")
        };
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
