//! Planning: what cases to measure, in what order, in which launches.
//!
//! [`Request`] is `scalebench run`'s options as typed values (built by `cli`, or by any
//! caller of the library); [`RunOptions`] is their checked, resolved form; [`expand`] turns it
//! and a launch's shape into the ordered list of cases. Order follows nccl-tests: per workload, type,
//! operator, root and timing mode, sizes ascend, and each size is measured out of place, then
//! in place (so the table can show both side by side).

pub mod checks;
pub mod error;
pub mod forecast;
pub mod sweep;

use crate::params::counts::{counts, CountError};
use crate::params::{
    BackendKind, Binding, BufferOffset, BufferUse, CaseParams, Collect, Dtype, Fault, GemmChoice,
    IterPolicy, LaunchShape, MatmulShape, NcclAlgo, NcclProto, Placement, Progress, ReduceOp,
    RunSettings, Scaling, ThreadLevel, Timing, Topology, Workload,
};
use crate::topology::binding::Reserved;
use crate::units::Bytes;
pub use error::{PlanError, Result, ThreadLevelError};
pub mod replay;

/// `scalebench run`'s options as typed values, not yet checked: what the user asked for.
/// [`RunOptions::from_request`] checks the case options; `run` resolves the launch options.
/// [`Request::default`] is what `scalebench run` with no options asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub workloads: Vec<Workload>,
    pub sizes: Vec<Bytes>,
    pub dtypes: Vec<Dtype>,
    pub ops: Vec<ReduceOp>,
    pub roots: Vec<u32>,
    pub dims: Vec<MatmulShape>,
    /// `--batch` as given (each workload has its own default).
    pub batch: Option<u32>,
    pub models: Vec<String>,
    /// ddp_step's bucket capacities; `None` = not given (DDP's default, 25 MiB).
    pub bucket_sizes: Option<Vec<Bytes>>,
    /// ddp_step's first bucket capacities (`0` = the same as the others); `None` = DDP's
    /// rule ([`first_bucket_default`]).
    pub first_bucket_sizes: Option<Vec<Bytes>>,
    pub progress: Vec<Progress>,
    pub collect: Collect,
    pub scaling: Scaling,
    pub timings: Vec<Timing>,
    /// Buffer placements to measure: `false` out of place, `true` in place.
    pub in_place: Vec<bool>,
    /// Collectives: reuse one buffer set, rotate through several, or both (`--buffers`).
    pub buffers: Vec<BufferUse>,
    pub iters: Option<u32>,
    pub warmup: Option<u32>,
    pub time_budget_s: f64,
    pub batches: Option<u32>,
    pub check: u32,
    pub buffer_offset: BufferOffset,
    pub backend: BackendKind,
    pub topology: Topology,
    pub nodes: Option<u32>,
    pub devices_per_node: Option<u32>,
    pub emulate_nodes: bool,
    pub placement: Placement,
    pub binding: Binding,
    /// Cores never bound to: `""`, `first_per_numa` or a cpulist.
    pub reserved_cores: Reserved,
    pub threads_per_device: u32,
    pub gemm: GemmChoice,
    /// `--thread-level` (`None`: the lowest the launch needs).
    pub thread_level: Option<ThreadLevel>,
    /// Measure the hosts' ceilings at start-up (`--no-ceilings`: false).
    pub ceilings: bool,
    /// Test-only fault injection (see [`Fault`]).
    pub fault: Option<String>,
    /// `--nccl-algo`: NCCL_ALGO for the launch (`None`: NCCL's own choice).
    pub nccl_algo: Option<NcclAlgo>,
    /// `--nccl-proto`: NCCL_PROTO for the launch.
    pub nccl_proto: Option<NcclProto>,
    /// `scalebench replay`: the trace (then the workload options are not used).
    pub replay: Option<replay::ReplayRequest>,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            workloads: vec![Workload::Allreduce],
            sizes: crate::units::parse_size_list("8B:4MiB:x4")
                .expect("the default size list parses"),
            dtypes: vec![Dtype::F32],
            ops: vec![ReduceOp::Sum],
            roots: vec![0],
            dims: vec![MatmulShape::square(1024)],
            batch: None,
            models: vec!["mlp-tiny".into()],
            bucket_sizes: None,
            first_bucket_sizes: None,
            progress: vec![Progress::Thread],
            collect: Collect::Gather,
            scaling: Scaling::Weak,
            timings: vec![Timing::Pipelined],
            in_place: vec![false, true],
            buffers: vec![BufferUse::Reuse],
            iters: None,
            warmup: None,
            time_budget_s: IterPolicy::default().time_budget_s,
            batches: None,
            check: 1,
            buffer_offset: BufferOffset::default(),
            backend: BackendKind::Cpu,
            topology: Topology::Pure,
            nodes: None,
            devices_per_node: None,
            emulate_nodes: false,
            placement: Placement::Fill,
            binding: Binding::None,
            reserved_cores: Reserved::default(),
            threads_per_device: 1,
            gemm: GemmChoice::Auto,
            thread_level: None,
            ceilings: true,
            fault: None,
            nccl_algo: None,
            nccl_proto: None,
            replay: None,
        }
    }
}

/// What to measure in one launch, independent of its shape.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub workloads: Vec<Workload>,
    pub sizes_bytes: Vec<u64>,
    pub dtypes: Vec<Dtype>,
    pub ops: Vec<ReduceOp>,
    pub roots: Vec<u32>,
    pub shapes: Vec<MatmulShape>,
    /// `--batch` as given (each workload has its own default).
    pub batch: Option<u32>,
    pub collect: Collect,
    /// ddp_step: models, bucket capacities (bytes) and progress strategies.
    pub models: Vec<String>,
    pub bucket_bytes: Vec<u64>,
    /// ddp_step: first-bucket capacities (bytes; 0 = as the others).
    pub first_bucket_bytes: Vec<u64>,
    pub progress: Vec<Progress>,
    pub scaling: Scaling,
    pub timings: Vec<Timing>,
    pub in_place: Vec<bool>,
    pub buffers: Vec<BufferUse>,
    pub threads_per_device: u32,
    pub fault: Option<String>,
    pub settings: RunSettings,
    /// `scalebench replay`: the checked trace.
    pub replay: Option<replay::ReplayOptions>,
}

fn nonempty<T>(v: &[T], option: &'static str) -> Result<()> {
    if v.is_empty() {
        return Err(PlanError::Empty { option });
    }
    Ok(())
}

impl RunOptions {
    /// Checks and resolves `run`'s options (no MPI needed).
    pub fn from_request(a: &Request) -> Result<Self> {
        check_given(a)?;
        check_limits(a)?;
        check_buffer_offset(a)?;
        check_nccl(a)?;
        if a.replay.is_none() && a.workloads.contains(&Workload::Replay) {
            return Err(PlanError::ReplayNeedsTrace);
        }
        if let Some(f) = &a.fault {
            if Fault::parse(f).is_none() {
                return Err(PlanError::UnknownFault { fault: f.clone() });
            }
        }
        Ok(RunOptions {
            workloads: dedup(&a.workloads),
            sizes_bytes: a.sizes.iter().map(|b| b.get()).collect(),
            dtypes: dedup(&a.dtypes),
            ops: dedup(&a.ops),
            roots: dedup(&a.roots),
            shapes: dedup(&a.dims),
            batch: a.batch,
            collect: a.collect,
            models: dedup(&a.models),
            bucket_bytes: match &a.bucket_sizes {
                Some(v) => dedup(&v.iter().map(|b| b.get()).collect::<Vec<_>>()),
                None => vec![crate::params::ddp::DEFAULT_BUCKET_BYTES],
            },
            first_bucket_bytes: match &a.first_bucket_sizes {
                Some(v) => dedup(&v.iter().map(|b| b.get()).collect::<Vec<_>>()),
                None => vec![first_bucket_default(a.bucket_sizes.is_some())],
            },
            progress: dedup(&a.progress),
            scaling: a.scaling,
            timings: dedup(&a.timings),
            in_place: a.in_place.clone(),
            buffers: dedup(&a.buffers),
            threads_per_device: a.threads_per_device,
            fault: a.fault.clone(),
            replay: a.replay.as_ref().map(replay::options).transpose()?,
            settings: RunSettings {
                policy: IterPolicy {
                    iters: a.iters,
                    warmup: a.warmup,
                    time_budget_s: a.time_budget_s,
                    batches: a.batches,
                },
                check_iters: a.check,
                gemm: a.gemm,
                buffer_offset: a.buffer_offset,
                thread_level: a.thread_level,
                ceilings: a.ceilings,
            },
        })
    }
}

impl RunOptions {
    /// Whether a case of these options runs ddp_step with a progress thread.
    pub fn uses_progress_thread(&self) -> bool {
        self.workloads.contains(&Workload::DdpStep) && self.progress.contains(&Progress::Thread)
    }
}

/// Whether any of `cases` runs ddp_step with a progress thread.
pub fn cases_use_progress_thread(cases: &[CaseParams]) -> bool {
    cases
        .iter()
        .any(|c| c.workload == Workload::DdpStep && c.progress == Some(Progress::Thread))
}

/// The lowest MPI thread level a launch needs, and why. Hybrid workers, multi-threaded GEMMs
/// and GPU runtimes add threads that never call MPI (`funneled`); ddp_step's progress thread
/// calls MPI from a second thread, never while the main thread does (`serialized`).
pub fn thread_level_needed(
    backend: BackendKind,
    topology: Topology,
    threads_per_device: u32,
    progress_thread: bool,
) -> (ThreadLevel, &'static str) {
    if progress_thread {
        (
            ThreadLevel::Serialized,
            "ddp_step's progress thread calls MPI",
        )
    } else if topology == Topology::Hybrid {
        (ThreadLevel::Funneled, "hybrid worker threads")
    } else if threads_per_device > 1 {
        (ThreadLevel::Funneled, "multi-threaded GEMM")
    } else if backend != BackendKind::Cpu {
        (ThreadLevel::Funneled, "the GPU runtime's threads")
    } else {
        (ThreadLevel::Single, "one thread per rank")
    }
}

/// The level to initialise MPI with: `explicit` when given (the sentence of an input error,
/// naming `option`, when it is below what the launch needs), else the one needed.
///
/// The level changes small-message latency (Open MPI's is measurably higher under
/// `funneled` than under plain `MPI_Init`, see ci/bench.sh), so a study runs every launch at
/// one level: otherwise a pure case measured beside hybrid or ddp cases would get a different
/// latency than alone, and pure-vs-hybrid ratios would carry the difference.
pub fn resolve_thread_level(
    explicit: Option<ThreadLevel>,
    needed: (ThreadLevel, &str),
    option: &str,
) -> std::result::Result<ThreadLevel, ThreadLevelError> {
    match explicit {
        Some(l) if l < needed.0 => Err(ThreadLevelError {
            option: option.to_string(),
            given: l,
            needed: needed.0,
            why: needed.1.to_string(),
        }),
        Some(l) => Ok(l),
        None => Ok(needed.0),
    }
}

/// `--nccl-algo` / `--nccl-proto` only where NCCL runs the collectives.
fn check_nccl(a: &Request) -> Result<()> {
    if a.backend == BackendKind::Cuda {
        return Ok(());
    }
    for (option, v) in [
        ("--nccl-algo", a.nccl_algo.map(|x| x.name())),
        ("--nccl-proto", a.nccl_proto.map(|x| x.name())),
    ] {
        if let Some(v) = v {
            return Err(PlanError::NcclNeedsCuda(nccl_needs_cuda(
                option, v, a.backend,
            )));
        }
    }
    Ok(())
}

/// The sentence refusing a forced NCCL algorithm or protocol (`what`, the option or axis) on
/// `backend`, which does not use NCCL.
pub(crate) fn nccl_needs_cuda(what: &str, value: &str, backend: BackendKind) -> String {
    format!(
        "{what} {value}: the {backend} backend does not use NCCL, so it cannot honour it: run on the cuda backend, or leave {what} out"
    )
}

/// Every list option has a value, counts are at least 1, models parse.
fn check_given(a: &Request) -> Result<()> {
    nonempty(&a.workloads, "--workload")?;
    nonempty(&a.sizes, "--sizes")?;
    nonempty(&a.dtypes, "--dtype")?;
    nonempty(&a.ops, "--op")?;
    nonempty(&a.roots, "--root")?;
    nonempty(&a.dims, "--dims")?;
    nonempty(&a.timings, "--timing")?;
    nonempty(&a.buffers, "--buffers")?;
    if a.iters == Some(0) {
        return Err(PlanError::NoIters);
    }
    if a.batches == Some(0) {
        return Err(PlanError::NoBatches);
    }
    if !(a.time_budget_s.is_finite() && a.time_budget_s > 0.0) {
        return Err(PlanError::TimeBudget {
            seconds: a.time_budget_s,
        });
    }
    if a.threads_per_device == 0 {
        return Err(PlanError::NoThreads);
    }
    if a.batch == Some(0) {
        return Err(PlanError::NoBatch);
    }
    nonempty(&a.models, "--model")?;
    if let Some(v) = &a.bucket_sizes {
        nonempty(v, "--bucket-size")?;
    }
    if let Some(v) = &a.first_bucket_sizes {
        nonempty(v, "--first-bucket")?;
    }
    nonempty(&a.progress, "--progress")?;
    for m in &a.models {
        crate::params::ddp::Model::parse(m).map_err(|e| PlanError::Model(Box::new(e)))?;
    }
    if a.bucket_sizes.iter().flatten().any(|b| b.get() == 0) {
        return Err(PlanError::NoBucket);
    }
    Ok(())
}

/// The documented limits (README.md, "Limits") on sizes, counts, times and the launch shape.
fn check_limits(a: &Request) -> Result<()> {
    use crate::config::limits;
    let lim = |what: &str, v: u64, max: u64, fix: &str| {
        limits::count(what, v, max, fix).map_err(PlanError::from)
    };
    for s in &a.sizes {
        lim(
            "--sizes",
            s.get(),
            limits::MAX_SIZE_BYTES,
            "use sizes up to 1TiB",
        )?;
    }
    for d in &a.dims {
        for x in [d.m, d.n, d.k] {
            lim("--dims", x, limits::MAX_GEMM_DIM, "use smaller matrices")?;
        }
    }
    if let Some(b) = a.batch {
        lim(
            "--batch",
            b.into(),
            limits::MAX_BATCH.into(),
            "use a smaller batch",
        )?;
    }
    for (what, v) in [
        ("--iters", a.iters),
        ("--warmup", a.warmup),
        ("--batches", a.batches),
        ("--check", Some(a.check)),
    ] {
        if let Some(v) = v {
            lim(
                what,
                v.into(),
                limits::MAX_ITERS.into(),
                "use fewer iterations",
            )?;
        }
    }
    limits::check_seconds("--time-budget", a.time_budget_s, "0.5")?;
    check_case_bound(a)?;
    limits::shape(
        a.nodes.unwrap_or(1),
        a.devices_per_node.unwrap_or(1),
        a.threads_per_device,
        ["--nodes", "--devices-per-node", "--threads-per-device"],
    )?;
    Ok(())
}

/// An upper bound of the cases (before options that do not apply are dropped) within
/// [`limits::MAX_CASES`](crate::config::limits::MAX_CASES).
fn check_case_bound(a: &Request) -> Result<()> {
    use crate::config::limits;
    let per_variant = (a.sizes.len() as u128) * 2 + a.dims.len() as u128;
    let bound = [
        a.workloads.len(),
        a.dtypes.len(),
        a.ops.len(),
        a.roots.len(),
        a.timings.len(),
        a.buffers.len(),
    ]
    .iter()
    .map(|n| *n as u128)
    .product::<u128>()
        * per_variant;
    if bound > limits::MAX_CASES as u128 {
        return Err(PlanError::TooManyCases { bound });
    }
    Ok(())
}

/// `--buffer-offset`: within a page and a multiple of every dtype's element size.
fn check_buffer_offset(a: &Request) -> Result<()> {
    let page = crate::host::page_size_bytes() as u64;
    let o = a.buffer_offset;
    if o.send_bytes >= page || o.recv_bytes >= page {
        return Err(PlanError::OffsetBeyondPage {
            send: o.send_bytes,
            recv: o.recv_bytes,
            page,
        });
    }
    for d in &a.dtypes {
        let elem = d.size_bytes();
        if o.send_bytes % elem != 0 || o.recv_bytes % elem != 0 {
            return Err(PlanError::OffsetMisaligned {
                send: o.send_bytes,
                recv: o.recv_bytes,
                dtype: *d,
                elem,
            });
        }
    }
    Ok(())
}

fn dedup<T: PartialEq + Clone>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in v {
        if !out.contains(x) {
            out.push(x.clone());
        }
    }
    out
}

/// Everything one launch (one `mpirun`/`srun` of `scalebench run --plan FILE`) measures:
/// written by `sweep`/`submit`, read by every rank of the launch.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LaunchPlan {
    /// Id recorded with the launch's results (the shape's id, `-aN` for retries).
    pub launch_id: String,
    pub shape: LaunchShape,
    /// CPU threads per device's GEMM (CPU backend).
    pub threads_per_device: u32,
    /// Cores kept free (`""`, `first_per_numa` or a cpulist), written as given.
    pub reserved_cores: Reserved,
    /// The site's NUMA node of each node-local GPU (a profile's `gpu_numa`, e.g. LUMI's GCDs),
    /// which `gpu` binding follows; empty (and left out of the file): hwloc's PCI locality.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_numa: Vec<u32>,
    /// Whether nodes are emulated on one host.
    pub emulate_nodes: bool,
    pub settings: RunSettings,
    /// The cases, in order; each has `launch_shape() == shape`.
    pub cases: Vec<CaseParams>,
}

impl LaunchPlan {
    /// Reads a plan file; errors name the file and the reason.
    pub fn read(path: &std::path::Path) -> Result<LaunchPlan> {
        let text = crate::results::io::read_input_text(path).map_err(PlanError::PlanUnreadable)?;
        let plan: LaunchPlan =
            serde_json::from_str(&text).map_err(|source| PlanError::PlanNotJson {
                path: path.to_path_buf(),
                source,
            })?;
        let limit = |source| PlanError::PlanLimit {
            path: path.to_path_buf(),
            source,
        };
        crate::config::limits::shape(
            plan.shape.nodes,
            plan.shape.devices_per_node,
            plan.threads_per_device,
            ["nodes", "devices_per_node", "threads_per_device"],
        )
        .map_err(limit)?;
        crate::config::limits::count(
            "cases",
            plan.cases.len() as u64,
            crate::config::limits::MAX_CASES as u64,
            "split the plan",
        )
        .map_err(limit)?;
        if let Some(c) = plan.cases.iter().find(|c| c.launch_shape() != plan.shape) {
            return Err(PlanError::PlanForeignCase {
                path: path.to_path_buf(),
                case: c.id(),
                label: c.label(),
                shape: plan.shape.label(),
            });
        }
        Ok(plan)
    }
}

/// The cases of one launch, in measurement order, checked ([`checks`]). Errors name the
/// option and the fix.
pub fn expand(o: &RunOptions, shape: LaunchShape) -> Result<Vec<CaseParams>> {
    let cases = expand_unchecked(o, shape)?;
    let mut checker = checks::CaseChecker::for_this_host(o.settings.buffer_offset);
    for c in &cases {
        checker.check(c).map_err(|problem| {
            let option = match problem.key {
                checks::CheckKey::Batch => "--batch",
                checks::CheckKey::Model => "--model",
                checks::CheckKey::BufferOffset => "--buffer-offset",
                checks::CheckKey::Workload => "--workload",
            };
            PlanError::Case { option, problem }
        })?;
    }
    // A forced NCCL value no case has a kernel for would skip every case: refused here. Where
    // some cases have one, the others are skipped with the sentence when the launch runs.
    let why = |c: &CaseParams, proto| {
        let op = c.op.unwrap_or(crate::params::ReduceOp::Sum);
        crate::params::nccl::no_kernel(c.workload, c.dtype, op, c.nccl_algo, proto)
    };
    let no_kernel: Vec<(&CaseParams, String)> = cases
        .iter()
        .filter_map(|c| why(c, c.nccl_proto).map(|m| (c, m)))
        .collect();
    if let Some((case, first)) = no_kernel.first().filter(|_| no_kernel.len() == cases.len()) {
        // the option to change: the protocol where the algorithm alone has a kernel
        let option = match (shape.nccl_algo, shape.nccl_proto) {
            (Some(_), Some(_)) if why(case, None).is_none() => "--nccl-proto",
            (Some(_), _) => "--nccl-algo",
            _ => "--nccl-proto",
        };
        return Err(PlanError::Case {
            option,
            problem: checks::CaseProblem {
                key: checks::CheckKey::Workload,
                message: first.clone(),
            },
        });
    }
    Ok(cases)
}

fn expand_unchecked(o: &RunOptions, shape: LaunchShape) -> Result<Vec<CaseParams>> {
    let devices = shape.devices();
    let mut cases = Vec::new();
    let base = CaseParams {
        backend: shape.backend,
        topology: shape.topology,
        binding: shape.binding,
        placement: shape.placement,
        fault: o.fault.clone(),
        nccl_algo: shape.nccl_algo,
        nccl_proto: shape.nccl_proto,
        ..CaseParams::new(Workload::Allreduce, shape.nodes, shape.devices_per_node)
    };
    if let Some(r) = &o.replay {
        return Ok(vec![replay::case(r, base, shape)]);
    }
    for &w in &o.workloads {
        for &dtype in &o.dtypes {
            let ops: Vec<Option<ReduceOp>> = if w.has_op() {
                o.ops.iter().map(|x| Some(*x)).collect()
            } else {
                vec![None]
            };
            let roots: Vec<Option<u32>> = if w.has_root() {
                o.roots.iter().map(|x| Some(*x)).collect()
            } else {
                vec![None]
            };
            for op in &ops {
                for root in &roots {
                    if let Some(r) = root {
                        if *r >= devices {
                            return Err(PlanError::RootOutOfRange { root: *r, devices });
                        }
                    }
                    for &timing in &o.timings {
                        let c = CaseParams {
                            workload: w,
                            dtype,
                            op: *op,
                            root: *root,
                            timing,
                            ..base.clone()
                        };
                        if w.is_collective() {
                            expand_collective(o, c, devices, &mut cases)?;
                        } else if w == Workload::DdpStep {
                            expand_ddp(o, c, &mut cases);
                        } else {
                            for s in &o.shapes {
                                cases.push(CaseParams {
                                    shape: Some(*s),
                                    scaling: Some(o.scaling),
                                    batch: (w == Workload::BatchMatmul)
                                        .then_some(o.batch.unwrap_or(4)),
                                    collect: (w == Workload::BatchMatmul).then_some(o.collect),
                                    threads_per_device: (shape.backend == BackendKind::Cpu)
                                        .then_some(o.threads_per_device),
                                    ..c.clone()
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(cases)
}

/// The first bucket's capacity when none is given, as PyTorch DDP decides it: its
/// `_DEFAULT_FIRST_BUCKET_BYTES` (1 MiB) while `bucket_cap_mb` is left at its default, and the
/// given cap for the first bucket too once `bucket_cap_mb` is given (`0` = the same cap).
pub(crate) fn first_bucket_default(bucket_given: bool) -> u64 {
    if bucket_given {
        0
    } else {
        crate::params::ddp::DEFAULT_FIRST_BUCKET_BYTES
    }
}

/// ddp_step cases: model × progress strategy (CPU backend only) × bucket capacity.
fn expand_ddp(o: &RunOptions, c: CaseParams, out: &mut Vec<CaseParams>) {
    let cpu = c.backend == BackendKind::Cpu;
    let progress: Vec<Option<Progress>> = if cpu {
        o.progress.iter().map(|p| Some(*p)).collect()
    } else {
        vec![None]
    };
    for m in &o.models {
        for p in &progress {
            for (&bucket, &first) in o
                .bucket_bytes
                .iter()
                .flat_map(|b| o.first_bucket_bytes.iter().map(move |f| (b, f)))
            {
                out.push(CaseParams {
                    model: Some(m.trim().to_string()),
                    bucket_bytes: Some(bucket),
                    first_bucket_bytes: Some(first),
                    progress: *p,
                    batch: Some(o.batch.unwrap_or(crate::params::ddp::DEFAULT_BATCH)),
                    scaling: Some(o.scaling),
                    threads_per_device: cpu.then_some(o.threads_per_device),
                    ..c.clone()
                });
            }
        }
    }
}

/// Whether `workload` on `backend` is measured only in place: MPI_Bcast exists only in place,
/// so the CPU backend measures that one form. Said once, for `run`'s expansion and the sweep's.
pub(crate) fn in_place_only(workload: crate::params::Workload, backend: BackendKind) -> bool {
    workload == crate::params::Workload::Broadcast && backend == BackendKind::Cpu
}

fn expand_collective(
    o: &RunOptions,
    c: CaseParams,
    devices: u32,
    out: &mut Vec<CaseParams>,
) -> Result<()> {
    let places: Vec<bool> = if in_place_only(c.workload, c.backend) {
        vec![true]
    } else {
        o.in_place.clone()
    };
    for &bytes in &o.sizes_bytes {
        match counts(c.workload, bytes, c.dtype, devices) {
            Err(source @ CountError::NotDivisible { .. })
            | Err(source @ CountError::TooLarge { .. }) => {
                return Err(PlanError::Sizes { bytes, source });
            }
            // Too small for this many devices: recorded as skipped, with the reason.
            Ok(_) | Err(CountError::TooSmall { .. }) => {}
        }
        for &ip in &places {
            for &b in &o.buffers {
                out.push(CaseParams {
                    requested_bytes: Some(bytes),
                    in_place: Some(ip),
                    // Reuse is the default and unnamed: the ids of earlier cases stay.
                    buffers: (b == BufferUse::Rotate).then_some(b),
                    ..c.clone()
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(r: Request) -> Result<RunOptions> {
        RunOptions::from_request(&r)
    }

    fn sizes(list: &str) -> Vec<Bytes> {
        crate::units::parse_size_list(list).unwrap()
    }

    fn shape(devices: u32) -> LaunchShape {
        LaunchShape {
            backend: BackendKind::Cpu,
            topology: Topology::Pure,
            nodes: 1,
            devices_per_node: devices,
            binding: Binding::None,
            placement: Placement::Fill,
            nccl_algo: None,
            nccl_proto: None,
        }
    }

    #[test]
    fn product_is_complete_and_ordered() {
        let o = opts(Request {
            workloads: vec![Workload::Allreduce, Workload::Reduce, Workload::Broadcast],
            sizes: sizes("8,16"),
            ops: vec![ReduceOp::Sum, ReduceOp::Max],
            roots: vec![0, 1],
            ..Request::default()
        })
        .unwrap();
        let cases = expand(&o, shape(2)).unwrap();
        // allreduce: 2 ops × 2 sizes × 2 places; reduce: 2 ops × 2 roots × 2 × 2; broadcast: 2 roots × 2 sizes × in-place only
        assert_eq!(cases.len(), 8 + 16 + 4);
        assert_eq!(cases[0].in_place, Some(false));
        assert_eq!(cases[1].in_place, Some(true));
        assert_eq!(cases[0].requested_bytes, cases[1].requested_bytes);
        let ids: std::collections::HashSet<String> = cases.iter().map(|c| c.id()).collect();
        assert_eq!(ids.len(), cases.len(), "ids are unique");
        assert!(cases
            .iter()
            .filter(|c| c.workload == Workload::Broadcast)
            .all(|c| c.op.is_none() && c.in_place == Some(true)));
    }

    /// Issue 31: `--nccl-algo` / `--nccl-proto` only on the cuda backend; the cases carry
    /// what the launch forces (from its shape), and nothing changes the ids where nothing is.
    #[test]
    fn forced_nccl_values_need_cuda_and_reach_every_case() {
        let cpu = Request {
            nccl_proto: Some(NcclProto::Ll128),
            ..Request::default()
        };
        let e = opts(cpu).unwrap_err();
        assert_eq!(e.to_string(), "--nccl-proto ll128: the cpu backend does not use NCCL, so it cannot honour it: run on the cuda backend, or leave --nccl-proto out");
        assert_eq!(e.exit_code(), crate::exit::EXIT_BAD_INPUT);
        let o = opts(Request {
            backend: BackendKind::Cuda,
            nccl_algo: Some(NcclAlgo::Ring),
            ..Request::default()
        })
        .unwrap();
        let plain = expand(&o, shape(2)).unwrap();
        assert!(plain.iter().all(|c| c.nccl_algo.is_none()));
        let forced_shape = LaunchShape {
            nccl_algo: Some(NcclAlgo::Ring),
            ..shape(2)
        };
        assert_ne!(forced_shape.id(), shape(2).id());
        let forced = expand(&o, forced_shape).unwrap();
        assert!(forced
            .iter()
            .all(|c| c.nccl_algo == Some(NcclAlgo::Ring) && c.launch_shape() == forced_shape));
        assert!(forced[0].label().contains("nccl_algo=ring"));
        assert_ne!(forced[0].id(), plain[0].id());
    }

    #[test]
    fn first_bucket_follows_pytorchs_rule() {
        let first = |bucket: Option<&str>, first: Option<&str>| -> Vec<Option<u64>> {
            let o = opts(Request {
                workloads: vec![Workload::DdpStep],
                bucket_sizes: bucket.map(sizes),
                first_bucket_sizes: first.map(sizes),
                ..Request::default()
            })
            .unwrap();
            let cases = expand(&o, shape(2)).unwrap();
            cases.iter().map(|c| c.first_bucket_bytes).collect()
        };
        // bucket_cap_mb left alone: DDP's 1 MiB first bucket under a 25 MiB cap
        assert_eq!(first(None, None), vec![Some(1 << 20)]);
        // bucket_cap_mb given (even at its default value): the first bucket gets the cap
        assert_eq!(first(Some("4MiB"), None), vec![Some(0)]);
        assert_eq!(first(Some("25MiB"), None), vec![Some(0)]);
        // both given: as given
        assert_eq!(first(Some("4MiB"), Some("2MiB")), vec![Some(2 << 20)]);
        assert_eq!(first(None, Some("0B,2MiB")), vec![Some(0), Some(2 << 20)]);
    }

    #[test]
    fn matmul_cases_carry_their_shape() {
        let o = opts(Request {
            workloads: vec![Workload::Matmul, Workload::BatchMatmul],
            dims: vec![MatmulShape::square(64), "32x16x8".parse().unwrap()],
            scaling: Scaling::Strong,
            ..Request::default()
        })
        .unwrap();
        let cases = expand(&o, shape(2)).unwrap();
        assert_eq!(cases.len(), 4);
        assert!(cases
            .iter()
            .all(|c| c.scaling == Some(Scaling::Strong) && c.in_place.is_none()));
        assert_eq!(cases[2].batch, Some(4));
    }

    #[test]
    fn input_errors_name_the_option() {
        let e = expand(
            &opts(Request {
                sizes: sizes("6"),
                ..Request::default()
            })
            .unwrap(),
            shape(2),
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("--sizes 6B:") && e.to_string().contains("multiple of 4"),
            "{e}"
        );
        let reduce = Request {
            workloads: vec![Workload::Reduce],
            roots: vec![2],
            ..Request::default()
        };
        let e = expand(&opts(reduce).unwrap(), shape(2)).unwrap_err();
        assert!(e.to_string().contains("--root 2"), "{e}");
        for bad in [
            Request {
                iters: Some(0),
                ..Request::default()
            },
            Request {
                time_budget_s: -1.0,
                ..Request::default()
            },
            Request {
                fault: Some("boom".into()),
                ..Request::default()
            },
        ] {
            assert!(opts(bad.clone()).is_err(), "{bad:?}");
        }
        // too small for the device count is not an input error (the case is skipped)
        assert_eq!(
            expand(
                &opts(Request {
                    workloads: vec![Workload::Allgather],
                    sizes: sizes("8"),
                    ..Request::default()
                })
                .unwrap(),
                shape(4)
            )
            .unwrap()
            .len(),
            2
        );
    }
}
