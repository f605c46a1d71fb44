//! The results format (version 1) written out again, independently of `src/results/schema.rs`,
//! as a consumer would. Unknown fields are errors: a change to the format must change this
//! file too, deliberately.
// Every field of the format is declared (a consumer reads all of them), whether a test reads it
// or not: the fields no test reads are not dead, they are the contract.
#![allow(dead_code)]

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsFile {
    pub format_version: u32,
    pub metrics_version: u32,
    pub generator: Generator,
    pub run: Run,
    pub launches: Vec<Launch>,
    pub cases: Vec<Case>,
    /// Written when a launch ran again (a resubmission, `--resume`): its earlier attempts.
    #[serde(default)]
    pub superseded_launches: Vec<SupersededLaunch>,
    /// Written by the merge of a run directory (collect, a sweep).
    #[serde(default)]
    pub completeness: Option<Completeness>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupersededLaunch {
    pub superseded_by: String,
    pub record: Launch,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Completeness {
    pub planned_cases: usize,
    pub measured_cases: usize,
    pub skipped_cases: usize,
    pub missing: BTreeMap<String, usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generator {
    pub name: String,
    pub version: String,
    pub git_sha: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    pub run_id: String,
    pub started_unix_s: f64,
    pub written_unix_s: f64,
    pub command_line: Vec<String>,
    pub emulated_nodes: bool,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    pub launch_id: String,
    pub shape: Shape,
    pub status: String,
    pub launcher: String,
    pub command_line: Vec<String>,
    pub started_unix_s: f64,
    pub finished_unix_s: Option<f64>,
    pub wall_s: Option<f64>,
    pub overhead_s: Option<f64>,
    pub stderr_tail: Option<String>,
    pub provenance: Option<Provenance>,
    /// Written only when something makes the launch unrepresentative.
    #[serde(default)]
    pub unrepresentative: Vec<Unrepresentative>,
    /// Written when the launch ended normally (since the context box).
    #[serde(default)]
    pub transport: Option<Transport>,
    #[serde(default)]
    pub host_load: Option<HostLoad>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transport {
    pub summary: String,
    pub mca: Vec<McaSetting>,
    pub components_loaded: Vec<String>,
    pub ranks_with_shared_memory: u32,
    pub ranks_with_tcp: u32,
    pub tcp_network_connections: u32,
    pub ranks_probed: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McaSetting {
    pub name: String,
    pub value: String,
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLoad {
    pub host: String,
    pub window_s: f64,
    pub logical_cpus: u32,
    pub loadavg_1m_before: Option<f64>,
    pub loadavg_1m_after: Option<f64>,
    pub busy_cpu_s: f64,
    pub steal_cpu_s: f64,
    pub own_cpu_s: f64,
    pub other_cpu_s: f64,
    #[serde(default)]
    pub other_scalebench: Vec<OtherProcess>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtherProcess {
    pub pid: u32,
    pub command: String,
    pub cpu_s: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unrepresentative {
    pub kind: String,
    pub detail: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    pub backend: String,
    pub topology: String,
    pub nodes: u32,
    pub devices_per_node: u32,
    pub binding: String,
    pub placement: String,
    /// Forced on the launch (issue 31); absent: NCCL's own choice.
    pub nccl_algo: Option<String>,
    pub nccl_proto: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub world_size: u32,
    pub devices: u32,
    pub nodes: u32,
    pub emulated_nodes: bool,
    pub node_source: String,
    pub mpi_library: Option<String>,
    pub mpi_standard: Option<String>,
    pub timer: Timer,
    pub backend: Backend,
    pub ranks: Vec<Rank>,
    pub hosts: Vec<Host>,
    pub environment: BTreeMap<String, String>,
    pub warnings: Vec<String>,
    /// Optional: how benchmark buffers are placed.
    #[serde(default)]
    pub buffer_policy: Option<String>,
    pub gemm: Option<Gemm>,
    /// Optional: the MPI thread level asked for and the one provided.
    #[serde(default)]
    pub mpi_thread_level_requested: Option<String>,
    #[serde(default)]
    pub mpi_thread_level: Option<String>,
    #[serde(default)]
    pub ceilings: Vec<HostCeilings>,
    #[serde(default)]
    pub ceilings_skipped: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gemm {
    pub requested: String,
    pub provider: String,
    pub library: Option<String>,
    pub version: String,
    pub threads_per_device: u32,
    pub library_threads: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timer {
    pub source: String,
    pub resolution_s: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backend {
    pub kind: String,
    pub detail: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rank {
    pub rank: u32,
    pub host: String,
    pub node: u32,
    pub node_name: String,
    pub local_rank: u32,
    pub pid: u32,
    pub cpus: String,
    pub devices: Vec<Device>,
    /// Optional: where the ddp progress thread runs (`cpus`, `spare`).
    #[serde(default)]
    pub progress_thread: Option<ProgressThread>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressThread {
    pub cpus: String,
    pub spare: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    pub index: u32,
    pub local_index: u32,
    pub cpus: String,
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub host: String,
    pub cpu_model: String,
    pub logical_cpus: u32,
    pub physical_cores: Option<u32>,
    pub memory_bytes: u64,
    /// Optional: memory-copy CPU flags present (erms, fsrm, avx2, avx512f).
    #[serde(default)]
    pub copy_flags: Option<Vec<String>>,
    /// Optional: e.g. `glibc 2.36`.
    #[serde(default)]
    pub libc: Option<String>,
    /// Optional: SMT sibling groups (cpulists), only cores with several CPUs.
    #[serde(default)]
    pub smt_siblings: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    pub launch_id: String,
    pub params: Params,
    pub status: String,
    pub message: Option<String>,
    pub started_unix_s: f64,
    pub finished_unix_s: f64,
    pub devices: u32,
    pub ranks: u32,
    pub element_bytes: u64,
    pub bytes: Option<u64>,
    pub send_count: Option<u64>,
    pub recv_count: Option<u64>,
    pub wrong: u64,
    pub check_iters: u32,
    pub tolerance: f64,
    pub timing: Option<Timing>,
    pub algbw_gbps: Option<f64>,
    pub busbw_gbps: Option<f64>,
    pub busbw_factor: Option<f64>,
    pub gflops: Option<f64>,
    pub gflops_total: Option<f64>,
    pub phases: Vec<Phase>,
    /// Written only where GPU telemetry was sampled: NVML (CUDA backend) or AMD SMI (ROCm).
    #[serde(default)]
    pub telemetry: Vec<Telemetry>,
    /// Written only when something specific to the case makes it unrepresentative.
    #[serde(default)]
    pub unrepresentative: Vec<Unrepresentative>,
    /// Optional: where the benchmark buffers sat (host-memory collectives).
    #[serde(default)]
    pub buffers: Option<Buffers>,
    /// Optional: the buffer sets of a rotated case.
    #[serde(default)]
    pub rotation: Option<Rotation>,
    /// Optional: NCCL's account of the case (CUDA backend, its INFO output captured).
    #[serde(default)]
    pub nccl: Option<NcclCapture>,
    #[serde(default)]
    pub peak: Vec<PeakFraction>,
    /// Optional: a replay case's trace and collectives (`src/results/replay.rs`).
    #[serde(default)]
    pub replay: Option<Replay>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    pub format: String,
    pub files: Vec<ReplayFile>,
    pub ranks: u32,
    pub groups: Vec<ReplayGroup>,
    pub compute: String,
    pub calls_total: u64,
    pub step_s: f64,
    pub comm_s: f64,
    pub compute_s: f64,
    pub calls: Vec<ReplayCall>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayFile {
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayGroup {
    pub name: String,
    pub ranks: Vec<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayCall {
    pub record: String,
    pub collective: String,
    pub dtype: String,
    pub op: Option<String>,
    pub root: Option<u32>,
    pub group: usize,
    pub send_count: u64,
    pub recv_count: u64,
    pub gap_before_s: Option<f64>,
    pub mean_s: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rotation {
    pub sets: u32,
    pub footprint_bytes: u64,
    pub cache_bytes: Option<u64>,
    pub exceeds_cache: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcclCapture {
    #[serde(default)]
    pub version: Option<String>,
    pub choices: Vec<NcclChoice>,
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcclChoice {
    pub algorithm: String,
    pub protocol: String,
    #[serde(default)]
    pub channels: Option<u32>,
    pub calls: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buffers {
    pub page_bytes: u64,
    pub requested_send_offset_bytes: u64,
    pub requested_recv_offset_bytes: u64,
    pub send_page_offsets_bytes: Vec<u64>,
    pub recv_page_offsets_bytes: Vec<u64>,
    pub recv_minus_send_mod_page_bytes: Vec<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Telemetry {
    pub device: u32,
    pub samples: u32,
    pub interval_s: f64,
    pub gpu_util_percent_mean: Option<f64>,
    pub gpu_util_percent_min: Option<f64>,
    pub mem_util_percent_mean: Option<f64>,
    pub sm_clock_mhz_min: Option<f64>,
    pub sm_clock_mhz_max: Option<f64>,
    pub power_w_max: Option<f64>,
    #[serde(default)]
    pub power_scope: Option<String>,
    pub temperature_c_max: Option<f64>,
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub workload: String,
    pub backend: String,
    pub topology: String,
    pub nodes: u32,
    pub devices_per_node: u32,
    pub binding: String,
    pub placement: String,
    pub timing: String,
    pub dtype: String,
    pub op: Option<String>,
    pub root: Option<u32>,
    pub in_place: Option<bool>,
    pub requested_bytes: Option<u64>,
    pub shape: Option<Mnk>,
    pub batch: Option<u32>,
    pub collect: Option<String>,
    pub scaling: Option<String>,
    pub threads_per_device: Option<u32>,
    pub fault: Option<String>,
    /// Forced on the case's launch (issue 31); absent: NCCL's own choice.
    pub nccl_algo: Option<String>,
    pub nccl_proto: Option<String>,
    /// `rotate` where the timed iterations rotated through buffer sets; absent: reused.
    pub buffers: Option<String>,
    /// replay: the trace's files and their SHA-256s (comma-separated), and `gaps`/`none`.
    pub trace: Option<String>,
    pub trace_sha256: Option<String>,
    pub compute: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mnk {
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    pub mode: String,
    pub warmup_iters: u32,
    pub iters: u32,
    pub batches: u32,
    pub time_s: f64,
    pub cross_rank: String,
    pub rank_mean_s: Spread,
    pub per_rank_mean_s: Vec<f64>,
    pub sample_kind: String,
    pub samples_s: Vec<f64>,
    pub stats_s: Summary,
    /// Optional: how the counts were found.
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Optional: why the timing may mean less than it seems.
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub cold_op_s: f64,
    pub probes_s: Vec<f64>,
    pub estimate_s: f64,
    pub iters_source: String,
    /// Optional: pipelined, automatic counts only.
    #[serde(default)]
    pub pipelined_probes_s: Vec<f64>,
    #[serde(default)]
    pub pipelined_estimate_s: Option<f64>,
    #[serde(default)]
    pub realised_batch_s: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spread {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub min_rank: u32,
    pub max_rank: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub max: f64,
    pub p99: f64,
    pub stddev: f64,
    pub cv: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    pub name: String,
    pub time_s: f64,
    pub stats_s: Summary,
    /// Optional: ddp_step's phases keep their per-round samples.
    #[serde(default)]
    pub samples_s: Vec<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCeilings {
    pub host: String,
    pub rank: u32,
    pub cpus: String,
    pub seconds: f64,
    pub ceilings: Vec<Ceiling>,
    #[serde(default)]
    pub warnings: Vec<CeilingWarning>,
    #[serde(default)]
    pub counters: Vec<ErrorCounter>,
    #[serde(default)]
    pub measurement: Option<Measurement>,
}

/// Which host measurement a launch's CPU ceilings are (issue 48).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    pub id: String,
    pub measured_unix_s: f64,
    pub reused: bool,
    pub rounds: u32,
    #[serde(default)]
    pub uncertainty_rel: std::collections::BTreeMap<String, f64>,
    #[serde(default)]
    pub cache_file: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorCounter {
    pub device: String,
    pub port: String,
    pub counter: String,
    pub before: u64,
    #[serde(default)]
    pub after: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CeilingWarning {
    pub kind: String,
    pub subject: String,
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ceiling {
    pub id: String,
    pub what: String,
    pub unit: String,
    #[serde(default)]
    pub value: Option<f64>,
    pub source: String,
    pub detail: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeakFraction {
    pub figure: String,
    pub ceiling_id: String,
    #[serde(default)]
    pub bound: Option<f64>,
    #[serde(default)]
    pub cpus: Option<u32>,
    #[serde(default)]
    pub frac_peak: Option<f64>,
    #[serde(default)]
    pub unknown: Option<String>,
    #[serde(default)]
    pub traffic_bytes_per_busbw_byte: Option<f64>,
    #[serde(default)]
    pub uncertainty_rel: Option<f64>,
    #[serde(default)]
    pub under_measured: bool,
}
