//! The vocabulary every stage shares: workloads, data types, reduction operators, timing modes,
//! launch topologies, binding and placement policies, and [`CaseParams`], the parameters that
//! identify one measured case.
//!
//! These types are part of the results format (serde names are the wire names), so renaming a
//! variant is a format change. They depend on nothing else in the crate.

pub(crate) mod counts;
pub(crate) mod cpulist;
pub(crate) mod ddp;
mod key;
pub mod nccl;
mod settings;

pub use key::ParamKey;
pub use nccl::{NcclAlgo, NcclProto};
pub use settings::{BufferOffset, Fault, IterPolicy, RunSettings};

use serde::{Deserialize, Serialize};
use std::fmt;

/// Implements `Display` (the wire name) and `FromStr` (wire name, with a list of the valid
/// names in the error) for a fieldless enum.
macro_rules! named_enum {
    ($ty:ident, $what:literal, { $($var:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$var),+];
            /// The wire name (as in results files, specs and the CLI).
            pub fn name(self) -> &'static str {
                match self { $($ty::$var => $name),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
        impl std::str::FromStr for $ty {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, UnknownName> {
                let t = s.trim();
                $(if t.eq_ignore_ascii_case($name) { return Ok($ty::$var); })+
                Err(UnknownName {
                    what: $what,
                    given: t.to_string(),
                    expected: $ty::ALL.iter().map(|v| v.name()).collect(),
                })
            }
        }
    };
}

/// A name that is none of a vocabulary enum's wire names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{given}': expected one of {}", expected.join(", "))]
pub struct UnknownName {
    /// What was named, e.g. `workload`.
    pub what: &'static str,
    /// The name given (trimmed).
    pub given: String,
    /// Every valid name.
    pub expected: Vec<&'static str>,
}

/// Text that is not a GEMM shape (`N` or `MxNxK`, each dimension in 1..=2^20).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{given}' is not a matrix shape: write N for a square GEMM or MxNxK, each ≥ 1 (e.g. 1024 or 4096x1024x512)")]
pub struct ShapeError {
    /// The text given (trimmed).
    pub given: String,
}

/// What a case measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    Allreduce,
    Reduce,
    Broadcast,
    Allgather,
    ReduceScatter,
    Alltoall,
    /// One GEMM per device.
    Matmul,
    /// Rank 0 scatters a batch of matrices, every device multiplies its share, results return
    /// to rank 0 (the cluster pattern of the source documents, file 004).
    BatchMatmul,
    /// A data-parallel training step: forward and backward GEMMs of a layer model, gradient
    /// buckets all-reduced while backward runs (PyTorch DDP's pattern; `workload::ddp`).
    DdpStep,
    /// The collectives of a traced job (an NCCL/RCCL log or a PyTorch execution trace), in
    /// order, with their compute as recorded gaps (`workload::replay`, docs/replay.md).
    Replay,
}
named_enum!(Workload, "workload", {
    Allreduce => "allreduce", Reduce => "reduce", Broadcast => "broadcast",
    Allgather => "allgather", ReduceScatter => "reduce_scatter", Alltoall => "alltoall",
    Matmul => "matmul", BatchMatmul => "batch_matmul", DdpStep => "ddp_step", Replay => "replay",
});

impl Workload {
    pub fn is_collective(self) -> bool {
        !matches!(
            self,
            Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay
        )
    }
    /// Whether the collective combines values with a reduction operator.
    pub fn has_op(self) -> bool {
        matches!(
            self,
            Workload::Allreduce | Workload::Reduce | Workload::ReduceScatter
        )
    }
    /// Whether the collective has a root device.
    pub fn has_root(self) -> bool {
        matches!(self, Workload::Reduce | Workload::Broadcast)
    }
    /// nccl-tests' bus-bandwidth factor for `n` devices: busbw = algbw × factor. It normalises
    /// to what a flat ring would move per link; it is not a physical link measurement.
    pub fn busbw_factor(self, n: u32) -> Option<f64> {
        let n = f64::from(n.max(1));
        match self {
            Workload::Allreduce => Some(2.0 * (n - 1.0) / n),
            Workload::Allgather | Workload::ReduceScatter | Workload::Alltoall => {
                Some((n - 1.0) / n)
            }
            Workload::Broadcast | Workload::Reduce => Some(1.0),
            Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay => None,
        }
    }
}

/// Element type of buffers and matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    F32,
    F64,
    I32,
    /// IEEE half precision (CUDA backend only).
    F16,
    /// bfloat16 (CUDA backend only).
    Bf16,
}
named_enum!(Dtype, "dtype", { F32 => "f32", F64 => "f64", I32 => "i32", F16 => "f16", Bf16 => "bf16" });

impl Dtype {
    pub fn size_bytes(self) -> u64 {
        match self {
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::F64 => 8,
            Dtype::F16 | Dtype::Bf16 => 2,
        }
    }
    /// Every integer of magnitude ≤ 2^bits is exactly representable.
    pub fn exact_integer_bits(self) -> u32 {
        match self {
            Dtype::F32 => 24,
            Dtype::F64 => 53,
            Dtype::I32 => 31,
            Dtype::F16 => 11,
            Dtype::Bf16 => 8,
        }
    }
    pub fn is_float(self) -> bool {
        !matches!(self, Dtype::I32)
    }
}

/// Reduction operator. `avg` is a sum divided by the number of devices where the library has
/// no native average (MPI); NCCL has a native one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReduceOp {
    Sum,
    Prod,
    Min,
    Max,
    Avg,
}
named_enum!(ReduceOp, "op", { Sum => "sum", Prod => "prod", Min => "min", Max => "max", Avg => "avg" });

/// How iterations are timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// nccl-tests: barrier, then a batch of operations back to back; time = elapsed / batch.
    Pipelined,
    /// OSU: each call timed alone, with a barrier after it; per-rank mean.
    Isolated,
}
named_enum!(Timing, "timing", { Pipelined => "pipelined", Isolated => "isolated" });

/// Which buffers a collective's timed iterations use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferUse {
    /// OSU: every iteration on the same buffers (a message the cache holds stays there).
    Reuse,
    /// nccl-tests' "avoid cache effects": each iteration on the next of several buffer sets
    /// whose sum exceeds the device's last-level cache, so no iteration finds its data cached.
    Rotate,
}
named_enum!(BufferUse, "buffers", { Reuse => "reuse", Rotate => "rotate" });

/// How processes map to devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// One MPI rank per device.
    Pure,
    /// One MPI rank per node driving all of that node's devices.
    Hybrid,
}
named_enum!(Topology, "topology", { Pure => "pure", Hybrid => "hybrid" });

/// CPU binding policy for ranks (pure) or workers (hybrid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    None,
    Core,
    Numa,
    Socket,
    /// The cores nearest the device's PCI location.
    Gpu,
}
named_enum!(Binding, "binding", { None => "none", Core => "core", Numa => "numa", Socket => "socket", Gpu => "gpu" });

/// How ranks are spread over nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Fill one node before the next (Slurm's default): node = rank / ranks_per_node.
    Fill,
    /// Deal ranks over nodes in turn (`mpirun -rr`): node = rank % nodes.
    RoundRobin,
}
named_enum!(Placement, "placement", { Fill => "fill", RoundRobin => "round_robin" });

/// Where the data and the arithmetic live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// Host buffers, MPI collectives, CPU GEMM.
    Cpu,
    /// Device buffers, NCCL collectives, cuBLAS GEMM.
    Cuda,
    /// AMD GPU buffers (HIP), RCCL collectives.
    Rocm,
}
named_enum!(BackendKind, "backend", { Cpu => "cpu", Cuda => "cuda", Rocm => "rocm" });

/// Which CPU GEMM the CPU backend should use (`--gemm`, spec key `run.gemm`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
pub enum GemmChoice {
    /// The system BLAS when one loads, else the `gemm` crate (with a warning).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// The system CBLAS, loaded at run time; failing to load it is an error.
    #[serde(rename = "blas")]
    Blas,
    /// The `gemm` crate compiled into scalebench.
    #[serde(rename = "gemm-crate")]
    GemmCrate,
}
named_enum!(GemmChoice, "GEMM provider", { Auto => "auto", Blas => "blas", GemmCrate => "gemm-crate" });

/// The CPU GEMM that actually ran (what `auto` resolved to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum GemmProvider {
    #[serde(rename = "blas")]
    Blas,
    #[serde(rename = "gemm-crate")]
    GemmCrate,
}
named_enum!(GemmProvider, "GEMM provider", { Blas => "blas", GemmCrate => "gemm-crate" });

/// How a matmul problem grows with the number of devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scaling {
    /// Fixed total problem, split over the devices (rows of A for matmul, matrices for batches).
    Strong,
    /// Fixed problem per device.
    Weak,
}
named_enum!(Scaling, "scaling", { Strong => "strong", Weak => "weak" });

/// How `batch_matmul` returns results to rank 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collect {
    /// Every product comes back (MPI gather).
    Gather,
    /// The products are summed into one matrix at rank 0 (MPI reduce), as in file 004.
    Reduce,
}
named_enum!(Collect, "collect", { Gather => "gather", Reduce => "reduce" });

/// How the CPU backend drives non-blocking all-reduces while the GEMMs run (`ddp_step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Progress {
    /// The computing thread calls `MPI_Test` on the requests in flight between GEMM row tiles.
    Test,
    /// A communication thread starts the requests and polls them while the GEMMs run.
    Thread,
}
named_enum!(Progress, "progress", { Test => "test", Thread => "thread" });

/// What a replay does between the traced collectives (`--compute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayCompute {
    /// Waits the recorded gap before each collective (where the trace has times).
    Gaps,
    /// Runs the collectives back to back.
    #[serde(rename = "none")]
    Off,
}
named_enum!(ReplayCompute, "compute", { Gaps => "gaps", Off => "none" });

/// MPI thread support, in the standard's order: each level allows everything the ones before
/// it do (`single` < `funneled` < `serialized` < `multiple`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadLevel {
    /// `MPI_THREAD_SINGLE`: one thread in the process.
    Single,
    /// `MPI_THREAD_FUNNELED`: other threads exist, only the main thread calls MPI.
    Funneled,
    /// `MPI_THREAD_SERIALIZED`: any thread calls MPI, never two at once.
    Serialized,
    /// `MPI_THREAD_MULTIPLE`: any thread, at any time.
    Multiple,
}
named_enum!(ThreadLevel, "MPI thread level", {
    Single => "single",
    Funneled => "funneled",
    Serialized => "serialized",
    Multiple => "multiple",
});

/// GEMM shape: C (m×n) = A (m×k) · B (k×n).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MatmulShape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

impl MatmulShape {
    pub fn square(n: u64) -> Self {
        MatmulShape { m: n, n, k: n }
    }
    /// Floating-point operations of one GEMM (a multiply and an add per inner-product term).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

impl fmt::Display for MatmulShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.m == self.n && self.n == self.k {
            write!(f, "{}", self.m)
        } else {
            write!(f, "{}x{}x{}", self.m, self.n, self.k)
        }
    }
}

impl std::str::FromStr for MatmulShape {
    type Err = ShapeError;
    /// `N` (square) or `MxNxK`; each dimension ≥ 1.
    fn from_str(s: &str) -> Result<Self, ShapeError> {
        let parts: Vec<&str> = s.trim().split(['x', 'X']).collect();
        let dims: Result<Vec<u64>, _> = parts.iter().map(|p| p.trim().parse::<u64>()).collect();
        let bad = || ShapeError {
            given: s.trim().to_string(),
        };
        let dims = dims.map_err(|_| bad())?;
        if dims.iter().any(|d| *d == 0 || *d > 1 << 20) {
            return Err(bad());
        }
        match dims.as_slice() {
            [n] => Ok(MatmulShape::square(*n)),
            [m, n, k] => Ok(MatmulShape {
                m: *m,
                n: *n,
                k: *k,
            }),
            _ => Err(bad()),
        }
    }
}

/// Everything that identifies one measured case. Two cases with equal parameters measure the
/// same thing, on whatever machine, so [`CaseParams::id`] matches them across runs.
///
/// Fields that do not apply to a workload are `None` (e.g. `op` for broadcast).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CaseParams {
    pub workload: Workload,
    pub backend: BackendKind,
    pub topology: Topology,
    /// Nodes the case runs on.
    pub nodes: u32,
    /// Devices (GPUs; CPU "devices" on the CPU backend) per node. Pure: ranks per node.
    /// Hybrid: workers driven by the node's one rank.
    pub devices_per_node: u32,
    pub binding: Binding,
    pub placement: Placement,
    pub timing: Timing,
    pub dtype: Dtype,
    /// Reduction operator (allreduce, reduce, reduce_scatter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<ReduceOp>,
    /// Root device (reduce, broadcast).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<u32>,
    /// In-place (true) or out-of-place (false) buffers (collectives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place: Option<bool>,
    /// The size asked for, in bytes, before nccl-tests' rounding (collectives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_bytes: Option<u64>,
    /// GEMM shape. Weak scaling: per device. Strong scaling: the whole problem, whose rows
    /// (matmul) or matrices (batch_matmul) are split over the devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<MatmulShape>,
    /// batch_matmul: matrices per device (weak) or in total (strong).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// batch_matmul: how products return to rank 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collect: Option<Collect>,
    /// matmul and batch_matmul: strong or weak scaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<Scaling>,
    /// CPU threads each device's GEMM may use (CPU backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_device: Option<u32>,
    /// A test-only workload modifier; never set by users (see `workload::fault`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// ddp_step: the model, a preset name or a list of layers (see `workload::ddp::Model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// ddp_step: gradient bucket capacity, bytes (PyTorch DDP's `bucket_cap_mb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_bytes: Option<u64>,
    /// ddp_step: the first gradient bucket's capacity, bytes (PyTorch DDP's
    /// `_DEFAULT_FIRST_BUCKET_BYTES`); 0 = the same as `bucket_bytes`. Absent in results
    /// written before it existed, which gave every bucket the same capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bucket_bytes: Option<u64>,
    /// ddp_step: how the CPU backend progresses the all-reduces (absent on other backends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// The algorithm the launch forced on NCCL (`NCCL_ALGO`; CUDA backend). Absent: NCCL's
    /// own choice ("default").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_algo: Option<NcclAlgo>,
    /// The protocol the launch forced on NCCL (`NCCL_PROTO`). Absent: NCCL's own choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_proto: Option<NcclProto>,
    /// Collectives: `rotate` when each timed iteration used the next of several buffer sets
    /// (`--buffers rotate`); absent when every iteration reused one set (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<BufferUse>,
    /// replay: the trace's files, comma-separated, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// replay: each trace file's SHA-256 (hex), comma-separated in the files' order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_sha256: Option<String>,
    /// replay: what runs between the collectives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<ReplayCompute>,
}

impl CaseParams {
    /// A case of `workload` on `nodes` × `devices_per_node` devices with every other parameter at
    /// its plainest (CPU, pure, no binding, fill, pipelined, f32, optional fields unset): the
    /// base that planners and fixtures change with struct-update syntax.
    pub fn new(workload: Workload, nodes: u32, devices_per_node: u32) -> CaseParams {
        CaseParams {
            workload,
            backend: BackendKind::Cpu,
            topology: Topology::Pure,
            nodes,
            devices_per_node,
            binding: Binding::None,
            placement: Placement::Fill,
            timing: Timing::Pipelined,
            dtype: Dtype::F32,
            op: None,
            root: None,
            in_place: None,
            requested_bytes: None,
            shape: None,
            batch: None,
            collect: None,
            scaling: None,
            threads_per_device: None,
            fault: None,
            model: None,
            bucket_bytes: None,
            progress: None,
            first_bucket_bytes: None,
            nccl_algo: None,
            nccl_proto: None,
            buffers: None,
            trace: None,
            trace_sha256: None,
            compute: None,
        }
    }

    /// Total devices taking part: nodes × devices per node.
    pub fn devices(&self) -> u32 {
        // Saturating: a plan file's shape is checked against the limits after it is read.
        self.nodes.saturating_mul(self.devices_per_node)
    }

    /// MPI processes the case needs: one per device (pure) or one per node (hybrid).
    pub fn ranks(&self) -> u32 {
        match self.topology {
            Topology::Pure => self.devices(),
            Topology::Hybrid => self.nodes,
        }
    }

    /// The canonical text the id hashes: `key=value` pairs ([`Self::pairs`]) in a fixed
    /// order. Changing it changes every id, so it is versioned by the results format.
    pub fn canonical(&self) -> String {
        self.pairs()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Stable case id: 16 hex digits of the 64-bit FNV-1a hash of [`Self::canonical`].
    pub fn id(&self) -> String {
        format!("{:016x}", fnv1a64(self.canonical().as_bytes()))
    }

    /// The parameters that must be equal for cases to share one launch (one `mpirun`).
    pub fn launch_shape(&self) -> LaunchShape {
        LaunchShape {
            backend: self.backend,
            topology: self.topology,
            nodes: self.nodes,
            devices_per_node: self.devices_per_node,
            binding: self.binding,
            placement: self.placement,
            nccl_algo: self.nccl_algo,
            nccl_proto: self.nccl_proto,
        }
    }

    /// A short human label: `allreduce f32 sum 1MiB out-of-place pipelined`.
    pub fn label(&self) -> String {
        let mut parts = vec![self.workload.to_string(), self.dtype.to_string()];
        if let Some(op) = self.op {
            parts.push(op.to_string());
        }
        if let Some(r) = self.root {
            parts.push(format!("root={r}"));
        }
        if let Some(b) = self.requested_bytes {
            parts.push(crate::units::format_bytes(b));
        }
        if let Some(s) = self.shape {
            parts.push(format!("n={s}"));
        }
        if let Some(m) = &self.model {
            parts.push(format!("model={m}"));
        }
        if let Some(b) = self.bucket_bytes {
            parts.push(format!("bucket={}", crate::units::format_bytes(b)));
        }
        if let Some(b) = self.first_bucket_bytes {
            parts.push(format!("first_bucket={}", crate::units::format_bytes(b)));
        }
        if let Some(b) = self.batch {
            parts.push(format!("batch={b}"));
        }
        if let Some(p) = self.progress {
            parts.push(format!("progress={p}"));
        }
        if let Some(ip) = self.in_place {
            parts.push(if ip { "in-place" } else { "out-of-place" }.to_string());
        }
        if let Some(a) = self.nccl_algo {
            parts.push(format!("nccl_algo={}", a.name()));
        }
        if let Some(p) = self.nccl_proto {
            parts.push(format!("nccl_proto={}", p.name()));
        }
        if let Some(b) = self.buffers {
            parts.push(format!("buffers={b}"));
        }
        parts.push(self.timing.to_string());
        parts.join(" ")
    }
}

/// The allocation shape shared by every case of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LaunchShape {
    pub backend: BackendKind,
    pub topology: Topology,
    pub nodes: u32,
    pub devices_per_node: u32,
    pub binding: Binding,
    pub placement: Placement,
    /// `NCCL_ALGO` for the whole launch (NCCL reads it when a communicator is created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_algo: Option<NcclAlgo>,
    /// `NCCL_PROTO` for the whole launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_proto: Option<NcclProto>,
}

impl LaunchShape {
    pub fn devices(&self) -> u32 {
        // Saturating: a plan file's shape is checked against the limits after it is read.
        self.nodes.saturating_mul(self.devices_per_node)
    }
    /// MPI processes: one per device (pure) or one per node (hybrid).
    pub fn ranks(&self) -> u32 {
        match self.topology {
            Topology::Pure => self.devices(),
            Topology::Hybrid => self.nodes,
        }
    }
    /// Processes per node.
    pub fn ranks_per_node(&self) -> u32 {
        match self.topology {
            Topology::Pure => self.devices_per_node,
            Topology::Hybrid => 1,
        }
    }
    /// Devices each process drives.
    pub fn devices_per_rank(&self) -> u32 {
        match self.topology {
            Topology::Pure => 1,
            Topology::Hybrid => self.devices_per_node,
        }
    }
    /// A stable id for the launch (16 hex digits).
    pub fn id(&self) -> String {
        let text = format!(
            "backend={};topology={};nodes={};devices_per_node={};binding={};placement={}",
            self.backend,
            self.topology,
            self.nodes,
            self.devices_per_node,
            self.binding,
            self.placement
        ) + &self.nccl_suffix(';');
        format!("{:016x}", fnv1a64(text.as_bytes()))
    }
    pub fn label(&self) -> String {
        format!(
            "{} {}x{} {} bind={} place={}",
            self.backend,
            self.nodes,
            self.devices_per_node,
            self.topology,
            self.binding,
            self.placement
        ) + &self.nccl_suffix(' ')
    }

    /// `;nccl_algo=ring;nccl_proto=ll128` (with `sep`) for what is forced; empty when nothing
    /// is, so the ids and labels of launches from before these fields stay what they were.
    fn nccl_suffix(&self, sep: char) -> String {
        let mut s = String::new();
        if let Some(a) = self.nccl_algo {
            s += &format!("{sep}nccl_algo={}", a.name());
        }
        if let Some(p) = self.nccl_proto {
            s += &format!("{sep}nccl_proto={}", p.name());
        }
        s
    }
}

/// 64-bit FNV-1a: tiny, stable across platforms and Rust versions (unlike `DefaultHasher`).
pub fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> CaseParams {
        CaseParams {
            op: Some(ReduceOp::Sum),
            in_place: Some(false),
            requested_bytes: Some(1024),
            ..CaseParams::new(Workload::Allreduce, 1, 2)
        }
    }

    #[test]
    fn names_round_trip() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>().unwrap(), *w);
            let json = serde_json::to_string(w).unwrap();
            assert_eq!(json, format!("\"{}\"", w.name()));
        }
        for d in Dtype::ALL {
            assert_eq!(d.name().parse::<Dtype>().unwrap(), *d);
        }
        let e = "allreduc".parse::<Workload>().unwrap_err().to_string();
        assert!(e.contains("allreduce") && e.contains("batch_matmul"), "{e}");
    }

    #[test]
    fn busbw_factors_match_nccl_tests() {
        assert_eq!(Workload::Allreduce.busbw_factor(4), Some(1.5));
        assert_eq!(Workload::Allreduce.busbw_factor(1), Some(0.0));
        assert_eq!(Workload::Allgather.busbw_factor(4), Some(0.75));
        assert_eq!(Workload::ReduceScatter.busbw_factor(2), Some(0.5));
        assert_eq!(Workload::Alltoall.busbw_factor(8), Some(0.875));
        assert_eq!(Workload::Broadcast.busbw_factor(8), Some(1.0));
        assert_eq!(Workload::Reduce.busbw_factor(3), Some(1.0));
        assert_eq!(Workload::Matmul.busbw_factor(3), None);
    }

    #[test]
    fn id_is_stable_and_sensitive() {
        let a = sample();
        // Pinned: an id change breaks matching against every stored baseline.
        assert_eq!(
            a.id(),
            format!("{:016x}", fnv1a64(a.canonical().as_bytes()))
        );
        assert_eq!(a.id(), a.clone().id());
        let mut b = a.clone();
        b.in_place = Some(true);
        assert_ne!(a.id(), b.id());
        let mut c = a.clone();
        c.requested_bytes = Some(2048);
        assert_ne!(a.id(), c.id());
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn shapes_parse() {
        assert_eq!(
            "1024".parse::<MatmulShape>().unwrap(),
            MatmulShape::square(1024)
        );
        let s: MatmulShape = "4x5x6".parse().unwrap();
        assert_eq!((s.m, s.n, s.k), (4, 5, 6));
        assert_eq!(s.flops(), 240.0);
        assert!("0".parse::<MatmulShape>().is_err());
        assert!("4x5".parse::<MatmulShape>().is_err());
        assert!("big".parse::<MatmulShape>().is_err());
    }

    #[test]
    fn launch_shape_counts() {
        let mut p = sample();
        p.nodes = 2;
        p.devices_per_node = 4;
        assert_eq!(p.launch_shape().ranks(), 8);
        p.topology = Topology::Hybrid;
        let s = p.launch_shape();
        assert_eq!((s.ranks(), s.devices(), s.devices_per_rank()), (2, 8, 4));
    }
}
