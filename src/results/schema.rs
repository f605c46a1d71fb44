//! The results format (`results.json`): a versioned contract read by `report`, `compare` and
//! other tools. Units are in field names (`_s` seconds, `_bytes`, `_gbps` = 1e9 bytes/s,
//! `gflops` = 1e9 floating-point operations/s).
//!
//! Compatibility: readers accept every `format_version` in [`READABLE_VERSIONS`]; a field added
//! later must be optional (`#[serde(default)]`) so older files stay readable.

use crate::params::{CaseParams, GemmChoice, GemmProvider, LaunchShape, Timing};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version this build writes.
pub const FORMAT_VERSION: u32 = 1;
/// The versions this build reads.
pub const READABLE_VERSIONS: &[u32] = &[1];
/// Version of the metric definitions (time, algbw, busbw, gflops) documented in README.
/// Files with different definitions are not comparable.
pub const METRICS_VERSION: u32 = 1;

/// A whole results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    /// Format version of this file (see [`FORMAT_VERSION`]).
    pub format_version: u32,
    /// Version of the metric definitions (see [`METRICS_VERSION`]).
    pub metrics_version: u32,
    /// The program that wrote the file.
    pub generator: Generator,
    /// What produced the file and when.
    pub run: RunInfo,
    /// One record per `mpirun`/`srun` launch that contributed cases.
    pub launches: Vec<LaunchRecord>,
    /// One record per measured (or failed, skipped) case.
    pub cases: Vec<CaseResult>,
    /// Earlier attempts of launches that a later attempt replaced (a resubmission, `--resume`):
    /// kept for the record, never counted (`results::attempts`). Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded_launches: Vec<super::attempts::SupersededLaunch>,
    /// What the sweep planned, and which planned cases are missing and why; written by the
    /// merge of a run directory, absent in the file of one `scalebench run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completeness: Option<super::attempts::Completeness>,
}

/// The program that wrote a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generator {
    /// Always `scalebench`.
    pub name: String,
    /// Crate version.
    pub version: String,
    /// Git commit the binary was built from (with `-dirty` for uncommitted changes), if known.
    #[serde(default)]
    pub git_sha: Option<String>,
}

/// What produced the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Unique id of the run (UTC timestamp and a random suffix).
    pub run_id: String,
    /// When the run started, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// When the file was last written, seconds since the Unix epoch.
    pub written_unix_s: f64,
    /// Command line of the process that wrote the file.
    pub command_line: Vec<String>,
    /// True if any launch ran on nodes emulated on one machine (not real separate hosts).
    pub emulated_nodes: bool,
    /// Free-form labels (from a sweep spec), e.g. `{"cluster": "mahti"}`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// How a launch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchStatus {
    /// Every rank finished and reported.
    Ok,
    /// The launcher exited non-zero (cases that finished before are kept).
    Failed,
    /// Killed after its time limit.
    Timeout,
    /// Still running, or killed without a trace (the writer never saw its end).
    Incomplete,
}

/// One `mpirun`/`srun` launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// Id of the launch: its shape id, plus `-aN` for the Nth retry.
    pub launch_id: String,
    /// The allocation shape all its cases share.
    pub shape: LaunchShape,
    pub status: LaunchStatus,
    /// The launcher that started the ranks (`mpirun`, `srun`, `direct` for one rank).
    pub launcher: String,
    /// Command line of the launch.
    pub command_line: Vec<String>,
    /// Start, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// End, seconds since the Unix epoch, if the launch ended.
    #[serde(default)]
    pub finished_unix_s: Option<f64>,
    /// Wall time of the launch as the caller saw it, seconds (start-up included).
    #[serde(default)]
    pub wall_s: Option<f64>,
    /// Start-up and tear-down overhead: wall time minus the sum of its cases' times, seconds.
    #[serde(default)]
    pub overhead_s: Option<f64>,
    /// Last lines of the launch's standard error, for failed launches.
    #[serde(default)]
    pub stderr_tail: Option<String>,
    /// Where and how the ranks ran; absent if the launch died before reporting.
    #[serde(default)]
    pub provenance: Option<Provenance>,
    /// Why this launch's measurements may not represent the set-up they name (more busy
    /// threads than CPUs, emulated nodes, devices sharing a core), from its provenance
    /// (`results::representative`); empty when none applies. Written since 0.1 (format 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrepresentative: Vec<Unrepresentative>,
    /// What carried the launch's MPI messages (resolved MCA selection and what the ranks' own
    /// sockets and shared-memory mappings showed after the last case); absent in older files
    /// and where the launch did not end normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    /// Load on rank 0's host around the launch: load average, steal, and the CPU time of
    /// other processes (other scalebench launches named) while it ran; absent in older files
    /// and where the launch did not end normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<HostLoad>,
}

impl LaunchRecord {
    /// A launch as its driver or its rank 0 first knows it: who started what and when, and
    /// nothing measured yet (no end, provenance, transport or load).
    pub fn starting(
        launch_id: String,
        shape: LaunchShape,
        status: LaunchStatus,
        launcher: String,
        command_line: Vec<String>,
        started_unix_s: f64,
    ) -> LaunchRecord {
        LaunchRecord {
            launch_id,
            shape,
            status,
            launcher,
            command_line,
            started_unix_s,
            finished_unix_s: None,
            wall_s: None,
            overhead_s: None,
            stderr_tail: None,
            provenance: None,
            unrepresentative: Vec::new(),
            transport: None,
            host_load: None,
        }
    }
}

/// What carried a launch's MPI messages. Evidence and its limits: docs/results-format.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transport {
    /// In words, e.g. `shared memory (pml ob1, btl vader)`, `TCP over loopback (pml ob1,
    /// btl tcp)`, `none: one MPI process, no messages between ranks`.
    pub summary: String,
    /// Open MPI's transport selection parameters as the job resolved them (`pml`, `btl`,
    /// `mtl`), each with where its value came from; empty for other MPI libraries.
    #[serde(default)]
    pub mca: Vec<McaSetting>,
    /// MPI transport components loaded in the ranks (`pml_ob1`, `btl_vader`, `btl_tcp`, ...),
    /// union over ranks, from their memory maps.
    #[serde(default)]
    pub components_loaded: Vec<String>,
    /// Ranks whose memory maps held shared-memory segments of peers (more than their own).
    pub ranks_with_shared_memory: u32,
    /// Ranks with an established TCP connection to another rank's MPI listening port.
    pub ranks_with_tcp: u32,
    /// Of those connections, how many had a non-loopback peer address (a network).
    #[serde(default)]
    pub tcp_network_connections: u32,
    /// Ranks that reported (all of the launch's).
    pub ranks_probed: u32,
}

/// One MCA parameter as a job resolved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McaSetting {
    /// `pml`, `btl` or `mtl`.
    pub name: String,
    /// The value in force, e.g. `self,tcp` or `^ucx` (`^` excludes).
    pub value: String,
    /// `environment` (OMPI_MCA_*, which `mpirun --mca` also sets), a parameter file's path,
    /// or `default` (no setting: every available component may be used).
    pub source: String,
}

/// Rank 0's host while a launch ran (from the start of the launch to the end of its last case).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    pub host: String,
    /// Length of the window, seconds.
    pub window_s: f64,
    /// Logical CPUs online.
    pub logical_cpus: u32,
    /// 1-minute load average just before and just after (/proc/loadavg).
    #[serde(default)]
    pub loadavg_1m_before: Option<f64>,
    #[serde(default)]
    pub loadavg_1m_after: Option<f64>,
    /// CPU time all processes used over the window, seconds (/proc/stat: user, nice, system,
    /// irq, softirq, summed over CPUs).
    pub busy_cpu_s: f64,
    /// CPU time the hypervisor gave other guests over the window, seconds (/proc/stat steal).
    pub steal_cpu_s: f64,
    /// CPU time of this launch's ranks on this host over the window, seconds (getrusage). Under a
    /// hypervisor it can exceed `busy_cpu_s` by up to `steal_cpu_s`: a tick that held stolen time
    /// is counted as steal, while the task's own clock is not cut by it.
    pub own_cpu_s: f64,
    /// busy − own, at least 0: what other processes (the launcher included) used, seconds.
    pub other_cpu_s: f64,
    /// Other scalebench processes on the host that used CPU in the window (not this launch's
    /// ranks nor their parents).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_scalebench: Vec<OtherProcess>,
}

/// Another process seen on the host during a launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherProcess {
    pub pid: u32,
    /// Its command line, shortened.
    pub command: String,
    /// CPU time it used within the window, seconds (all of it if it started within).
    pub cpu_s: f64,
}

/// One reason a launch's or case's measurements may not represent the set-up they name. The
/// report leaves such cases out of winners, scaling efficiencies and fits unless asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unrepresentative {
    /// A stable name: `oversubscribed`, `emulated_nodes`, `shared_cores`,
    /// `cpu_frequency_changed` (readers must accept names they do not know).
    pub kind: String,
    /// The numbers behind it, in words (e.g. `host n1: 4 busy threads on 2 CPUs`).
    pub detail: String,
}

/// Where and how a launch's ranks ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// MPI processes (the world size the job actually got).
    pub world_size: u32,
    /// Devices taking part (ranks × devices per rank).
    pub devices: u32,
    /// Distinct nodes.
    pub nodes: u32,
    /// True if nodes are groups of ranks on one host, not separate machines.
    pub emulated_nodes: bool,
    /// How nodes were told apart: `emulated`, `slurm` (SLURM_NODEID) or `hostname`.
    pub node_source: String,
    /// The MPI library's version string (`MPI_Get_library_version`).
    #[serde(default)]
    pub mpi_library: Option<String>,
    /// The MPI standard version, e.g. `3.1`.
    #[serde(default)]
    pub mpi_standard: Option<String>,
    /// The clock used for timing.
    pub timer: TimerInfo,
    /// The backend and its devices.
    pub backend: BackendInfo,
    /// Every rank: host, node, pid, CPU affinity in force, devices.
    pub ranks: Vec<RankInfo>,
    /// Every distinct host: CPU model, cores, memory.
    pub hosts: Vec<HostInfo>,
    /// Environment variables that shape performance (OMPI_*, SLURM_*, UCX_*, NCCL_*, ...).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// Problems noticed with the set-up (e.g. affinity differs from the requested binding).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// How the backend places benchmark buffers, e.g. `page-aligned (4096 B pages) + offset
    /// 0 B ...` on the CPU backend (absent where the backend does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_policy: Option<String>,
    /// The CPU GEMM provider of the launch (rank 0's; other ranks' differences are in
    /// `warnings`). Absent on the CUDA backend and in launches without GEMM cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemm: Option<GemmProvenance>,
    /// The MPI thread level the launch asked for (`single` is plain `MPI_Init`): one level
    /// per study, see `plan::resolve_thread_level`. Absent in files written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_thread_level_requested: Option<crate::params::ThreadLevel>,
    /// The thread level MPI provides (`MPI_Query_thread`); `compare` refuses runs that differ
    /// in it (it changes small-message latency). Absent in files written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_thread_level: Option<crate::params::ThreadLevel>,
    /// Each host's ceilings, measured once at the launch's start (`results::ceilings`);
    /// empty when skipped and in files written before they were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ceilings: Vec<crate::results::ceilings::HostCeilings>,
    /// Why no ceilings were measured (`--no-ceilings`, spec `run.ceilings = false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceilings_skipped: Option<String>,
}

/// Which CPU GEMM ran, and how it was set up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GemmProvenance {
    /// What was asked for (`--gemm`): `auto`, `blas` or `gemm-crate`.
    pub requested: GemmChoice,
    /// What ran: `blas` (the system CBLAS) or `gemm-crate`.
    pub provider: GemmProvider,
    /// The BLAS shared library that holds `cblas_sgemm` (resolved path), for `blas`.
    #[serde(default)]
    pub library: Option<String>,
    /// The provider's version and build configuration, e.g. OpenBLAS's `openblas_get_config()`,
    /// or `gemm crate 0.19 (AVX-512)`.
    pub version: String,
    /// CPU threads each device's GEMM was asked to use.
    pub threads_per_device: u32,
    /// The thread count the library reports after being told (`None`: it has no call scalebench
    /// knows to ask or set it; the crate uses exactly `threads_per_device`).
    #[serde(default)]
    pub library_threads: Option<u32>,
}

/// The clock behind every time in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerInfo {
    /// E.g. `clock_gettime(CLOCK_MONOTONIC)` or `cudaEventElapsedTime`.
    pub source: String,
    /// Smallest observable difference between two readings, seconds (measured).
    pub resolution_s: f64,
}

/// The backend that ran the cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendInfo {
    pub kind: crate::params::BackendKind,
    /// Library versions and settings, e.g. `MPI collectives on host buffers; gemm 0.19 (AVX-512)`.
    pub detail: String,
}

/// One MPI process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankInfo {
    /// MPI rank in the world communicator.
    pub rank: u32,
    /// Host name as the operating system reports it.
    pub host: String,
    /// Node index (0-based) this rank belongs to.
    pub node: u32,
    /// Node name (SLURMD_NODENAME under Slurm, the host name, or `enode<N>` when emulated).
    pub node_name: String,
    /// Rank among the ranks of its node.
    pub local_rank: u32,
    pub pid: u32,
    /// CPUs the process may run on, read back from the OS (Linux cpulist, e.g. `0-3,8`).
    pub cpus: String,
    /// The devices this process drives.
    pub devices: Vec<DeviceBinding>,
    /// Where this rank's MPI progress thread runs when a ddp_step case asks for one
    /// (`progress = thread`); absent on backends without one and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_thread: Option<ProgressThreadBinding>,
}

/// The CPUs a rank's progress thread is bound to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressThreadBinding {
    /// Linux cpulist.
    pub cpus: String,
    /// True when none of these CPUs runs one of the rank's device threads (a spare core of the
    /// rank's CPUs); false when the thread shares the device threads' CPUs.
    pub spare: bool,
}

/// One device (GPU, or CPU worker on the CPU backend) driven by a rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceBinding {
    /// Global device index (position in allgather order).
    pub index: u32,
    /// Device number on its node (the GPU id that fill-up / round-robin rules give).
    pub local_index: u32,
    /// CPUs the driving thread may run on, read back from the OS (Linux cpulist).
    pub cpus: String,
    /// Device description (GPU name and PCI bus id; `cpu` on the CPU backend).
    pub name: String,
}

/// One host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub host: String,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Logical CPUs online.
    pub logical_cpus: u32,
    /// Physical cores (hwloc), if known.
    #[serde(default)]
    pub physical_cores: Option<u32>,
    /// Physical memory, bytes.
    pub memory_bytes: u64,
    /// The CPU flags that change memory-copy speed (of `erms`, `fsrm`, `avx2`, `avx512f`),
    /// those /proc/cpuinfo lists; absent where not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_flags: Option<Vec<String>>,
    /// The C library and its version, e.g. `glibc 2.36` (its `memcpy` is what copies host
    /// buffers); absent where unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libc: Option<String>,
    /// Logical CPUs that share a physical core (SMT siblings), one cpulist per core that has
    /// more than one (e.g. `["0,4", "1,5"]`); empty without SMT or where not read. Compute-bound
    /// work counts each group as one core.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub smt_siblings: Vec<String>,
}

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Measured and validated.
    Ok,
    /// Measured, but validation found wrong elements (`wrong` > 0).
    Wrong,
    /// Could not run (error in `message`).
    Failed,
    /// Not applicable to this set-up (reason in `message`), e.g. a size that rounds to 0 elements.
    Skipped,
    /// Its launch ran out of time before the case finished.
    Timeout,
}

impl CaseStatus {
    /// Whether `--resume` must run the case again.
    pub fn needs_rerun(self) -> bool {
        matches!(
            self,
            CaseStatus::Failed | CaseStatus::Timeout | CaseStatus::Wrong
        )
    }
    pub fn name(self) -> &'static str {
        match self {
            CaseStatus::Ok => "ok",
            CaseStatus::Wrong => "wrong",
            CaseStatus::Failed => "failed",
            CaseStatus::Skipped => "skipped",
            CaseStatus::Timeout => "timeout",
        }
    }
}

/// One case's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// Stable id: hash of `params` (see `CaseParams::id`).
    pub id: String,
    /// The launch the case ran in.
    pub launch_id: String,
    pub params: CaseParams,
    pub status: CaseStatus,
    /// Why a case failed, was skipped or timed out.
    #[serde(default)]
    pub message: Option<String>,
    /// Seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// Seconds since the Unix epoch.
    pub finished_unix_s: f64,
    /// Devices taking part (n in the bandwidth factors).
    pub devices: u32,
    /// MPI processes taking part.
    pub ranks: u32,
    /// Bytes of one element.
    pub element_bytes: u64,
    /// Collectives: S in algbw = S / time, following nccl-tests (the buffer for allreduce,
    /// broadcast and reduce; the total output for allgather; the total input for
    /// reduce_scatter; each rank's total send for alltoall), after rounding.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Collectives: elements in each device's send buffer.
    #[serde(default)]
    pub send_count: Option<u64>,
    /// Collectives: elements in each device's receive buffer.
    #[serde(default)]
    pub recv_count: Option<u64>,
    /// Elements found wrong by validation, summed over devices and check iterations.
    pub wrong: u64,
    /// Validated iterations (`--check`).
    pub check_iters: u32,
    /// Relative tolerance used by validation (0 = exact).
    pub tolerance: f64,
    /// Timing of the operation (absent when the case did not run).
    #[serde(default)]
    pub timing: Option<TimingResult>,
    /// Algorithm bandwidth S / time_s, GB/s (1e9 bytes/s).
    #[serde(default)]
    pub algbw_gbps: Option<f64>,
    /// Bus bandwidth algbw × busbw_factor, GB/s: nccl-tests' normalisation to a flat ring's
    /// per-link traffic; not a physical link measurement.
    #[serde(default)]
    pub busbw_gbps: Option<f64>,
    /// The factor used: 2(n−1)/n allreduce, (n−1)/n allgather/reduce_scatter/alltoall, 1 broadcast/reduce.
    #[serde(default)]
    pub busbw_factor: Option<f64>,
    /// GEMM rate per device: FLOP of one device's work / time_s / 1e9.
    #[serde(default)]
    pub gflops: Option<f64>,
    /// GEMM rate of all devices together, 1e9 FLOP/s.
    #[serde(default)]
    pub gflops_total: Option<f64>,
    /// batch_matmul phases (scatter, compute, gather), each timed per iteration.
    #[serde(default)]
    pub phases: Vec<PhaseResult>,
    /// GPU utilisation, clocks and power sampled while the case ran, one entry per device
    /// (CUDA backend with NVML); absent where nothing was sampled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub telemetry: Vec<DeviceTelemetry>,
    /// ddp_step: step, compute and communication times, overlap efficiency and throughput
    /// (definitions in [`crate::results::ddp`]); absent for other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ddp: Option<crate::results::ddp::DdpMetrics>,
    /// replay: the trace replayed and rank 0's collectives (see [`crate::results::replay`]);
    /// absent for other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::results::replay::ReplayRecord>,
    /// Reasons specific to this case that its measurement may not represent its set-up (e.g.
    /// its GEMM threads oversubscribe the cores, the CPU clock changed while it ran); the
    /// launch's own reasons apply too. Empty when none applies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrepresentative: Vec<Unrepresentative>,
    /// Where the case's benchmark buffers sat in memory (host-memory collectives; absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<BufferPlacement>,
    /// `--buffers rotate`: how many buffer sets the timed iterations went through and how
    /// much memory they spanned against the device's last-level cache; absent when every
    /// iteration reused one set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation: Option<BufferRotation>,
    /// What NCCL said of the case's collectives, read from its INFO output (CUDA backend,
    /// rank 0's process); absent where nothing was captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl: Option<NcclCapture>,
    /// Each busbw and GFLOP/s figure as a fraction of the ceiling that bounds it, or the
    /// unknown ceiling with its reason; absent in files from before ceilings were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peak: Vec<crate::results::ceilings::PeakFraction>,
}

/// NCCL's own account of one case (`docs/nccl-capture.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclCapture {
    /// NCCL's version as its log states it (`2.26.2+cuda12.8`); absent where the log said none.
    #[serde(default)]
    pub version: Option<String>,
    /// Each distinct choice rank 0 of the communicator logged while the case ran (warm-up and
    /// calibration calls included), most frequent first; empty where NCCL logs none (before
    /// 2.20, or TUNING excluded from NCCL_DEBUG_SUBSYS by the user).
    pub choices: Vec<NcclChoice>,
    /// NCCL's WARN lines while the case ran (each distinct message once, `(×N)` appended where
    /// it came N > 1 times), as NCCL wrote them. Absent in files written before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One algorithm/protocol choice and how many planned collectives had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclChoice {
    /// As NCCL_ALGO spells it: Ring, Tree, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT.
    pub algorithm: String,
    /// As NCCL_PROTO spells it: LL, LL128, Simple.
    pub protocol: String,
    /// Channels used (NCCL 2.24 on; absent where the line does not say).
    #[serde(default)]
    pub channels: Option<u32>,
    pub calls: u64,
}

/// Where one case's benchmark buffers sat, over every rank and device. Offsets within a page
/// matter: a receive buffer a few bytes after its send buffer modulo 4096 slows fast-string
/// copies many times over (4K aliasing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferPlacement {
    /// Page size, bytes.
    pub page_bytes: u64,
    /// Offsets asked for (`--buffer-offset`) after a page boundary, bytes: send buffers.
    pub requested_send_offset_bytes: u64,
    /// Offsets asked for after a page boundary, bytes: receive (and in-place) buffers.
    pub requested_recv_offset_bytes: u64,
    /// Distinct start addresses modulo the page size of the send buffers, bytes (empty in place).
    pub send_page_offsets_bytes: Vec<u64>,
    /// Distinct start addresses modulo the page size of the receive or in-place buffers, bytes.
    pub recv_page_offsets_bytes: Vec<u64>,
    /// Distinct (receive − send) start distances modulo the page size, bytes (empty in place).
    pub recv_minus_send_mod_page_bytes: Vec<u64>,
}

/// The buffer sets a case's timed iterations rotated through (rank 0's; `--buffers rotate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferRotation {
    /// Buffer sets (each a send and a receive buffer per device, or one in place); iteration
    /// i uses set i mod sets.
    pub sets: u32,
    /// One device's buffers over all sets, bytes.
    pub footprint_bytes: u64,
    /// The device's last-level cache, bytes (GPU L2; the host's last-level cache for CPU
    /// devices); absent where the backend cannot say.
    #[serde(default)]
    pub cache_bytes: Option<u64>,
    /// Whether the footprint is at least twice the cache, so that no iteration can find its
    /// data cached from its previous use; false at small messages, where the sets' count is
    /// capped, or where the cache is unknown.
    pub exceeds_cache: bool,
}

/// What the GPU's management library (NVML on CUDA, AMD SMI on ROCm) saw on one GPU during
/// one case (warm-up, timing and validation included). Utilisation is the share of the
/// library's last sample period (NVML: 1/6 s to 1 s, by GPU) in which a kernel ran, so it is
/// coarse for cases shorter than a second. Each figure is absent when the GPU did not report
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceTelemetry {
    /// Global device index (as in `RankInfo::devices`).
    pub device: u32,
    /// Samples taken (every `interval_s` while the case ran, plus one at its end).
    pub samples: u32,
    /// Sampling period, seconds.
    pub interval_s: f64,
    #[serde(default)]
    pub gpu_util_percent_mean: Option<f64>,
    #[serde(default)]
    pub gpu_util_percent_min: Option<f64>,
    /// Share of time device memory was read or written.
    #[serde(default)]
    pub mem_util_percent_mean: Option<f64>,
    /// SM clock, MHz: a minimum far below the maximum means throttling or idling.
    #[serde(default)]
    pub sm_clock_mhz_min: Option<f64>,
    #[serde(default)]
    pub sm_clock_mhz_max: Option<f64>,
    #[serde(default)]
    pub power_w_max: Option<f64>,
    /// What the power figure covers when it is not the device alone: `socket` for AMD SMI's
    /// socket power (on an MI250X the package of two GCDs, reported on one of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_scope: Option<String>,
    #[serde(default)]
    pub temperature_c_max: Option<f64>,
    /// Why sampling failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Timing of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingResult {
    pub mode: Timing,
    /// Untimed iterations before measuring.
    pub warmup_iters: u32,
    /// Timed operations per rank.
    pub iters: u32,
    /// Pipelined: batches the iterations were split into (one sample each). Isolated: = iters.
    pub batches: u32,
    /// Headline time of one operation, seconds: the mean over ranks of each rank's mean
    /// (nccl-tests `-a 1`, OSU's average latency).
    pub time_s: f64,
    /// How `time_s` combines ranks: always `mean_of_rank_means` in this version.
    pub cross_rank: String,
    /// Spread of the per-rank means, seconds.
    pub rank_mean_s: RankSpread,
    /// Each rank's mean time per operation, seconds, indexed by rank.
    pub per_rank_mean_s: Vec<f64>,
    /// What one sample is: `iteration_max_over_ranks` (isolated: one call, slowest rank) or
    /// `batch_mean_max_over_ranks` (pipelined: a batch's time per op, slowest rank).
    pub sample_kind: String,
    /// The raw samples, seconds per operation, in measurement order.
    pub samples_s: Vec<f64>,
    /// Summary of `samples_s`, seconds.
    pub stats_s: Summary,
    /// How the iteration counts were chosen (absent in files from older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// Why the timing may mean less than it seems, e.g. fewer timed iterations than the
    /// automatic minimum, or pipelined batches of one operation (that is isolated timing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// How a case's iteration counts were found: after one cold (untimed for the result)
/// operation, several probe operations, each timed alone on every rank; the estimate is the
/// smallest probe, so a slow first call (lazy connection set-up, memory registration) cannot
/// shrink the counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The first operation of the case, slowest rank, seconds.
    pub cold_op_s: f64,
    /// The probe operations after it, slowest rank each, seconds.
    pub probes_s: Vec<f64>,
    /// The per-operation estimate the counts came from (min of `probes_s`), seconds.
    pub estimate_s: f64,
    /// `auto` (counts from the estimate) or `explicit` (`--iters` given; probes still run).
    pub iters_source: String,
    /// Pipelined, automatic counts: per-operation times of the pipelined probe batches
    /// (slowest rank), each batch sized from the estimate before it, then the median of any
    /// timed run whose batches came out below the floor and were re-sized, seconds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipelined_probes_s: Vec<f64>,
    /// The per-operation estimate the pipelined counts came from (the last pipelined probe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipelined_estimate_s: Option<f64>,
    /// Pipelined: the realised batch length, the median over batches of the slowest rank's
    /// batch, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realised_batch_s: Option<f64>,
}

/// Min, mean and max over ranks, with the ranks that hold the extremes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RankSpread {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub min_rank: u32,
    pub max_rank: u32,
}

/// One phase of a multi-phase workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    /// `scatter`, `compute` and `gather` (or `reduce`). A backend that overlaps copies with
    /// compute (CUDA, ROCm) reports `transfer_compute` instead of `compute`, plus `overlap_hidden`:
    /// device seconds per iteration the overlap saved.
    pub name: String,
    /// Mean over ranks of each rank's mean phase time, seconds.
    pub time_s: f64,
    /// Per-iteration phase times (slowest rank), seconds.
    pub stats_s: Summary,
    /// The per-iteration times themselves (slowest rank), in measurement order, seconds:
    /// kept for ddp_step (its derived figures pair them round by round); empty for others
    /// and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_s: Vec<f64>,
}
