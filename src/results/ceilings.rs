//! Ceilings: the most a host, device or link can do, each with where the figure comes from,
//! so a measured figure can be read as a fraction of what its hardware allows.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod bounds;

/// The unit of a ceiling (and of the figures it bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CeilingUnit {
    /// 1e9 floating-point operations per second.
    Gflops,
    /// 1e9 bytes per second.
    Gbps,
}

impl CeilingUnit {
    pub fn symbol(self) -> &'static str {
        match self {
            CeilingUnit::Gflops => "GFLOP/s",
            CeilingUnit::Gbps => "GB/s",
        }
    }
}

/// Where a ceiling's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CeilingSource {
    /// Measured on this host by scalebench's own microbenchmark (the detail says how).
    Measured,
    /// Read from sysfs (the detail names the file).
    Sysfs,
    /// Queried from a driver (NVML, ROCm SMI; the detail names the call).
    Driver,
    /// A table entry (the detail gives its reference).
    Table,
    /// Computed from the hardware's own facts (FMA units × vector lanes × the highest clock
    /// cpufreq reports; the detail names each fact and where it was read).
    Computed,
    /// Not known; the detail says why. The value is then absent.
    Unknown,
}

impl CeilingSource {
    pub fn name(self) -> &'static str {
        match self {
            CeilingSource::Measured => "measured",
            CeilingSource::Sysfs => "sysfs",
            CeilingSource::Driver => "driver",
            CeilingSource::Table => "table",
            CeilingSource::Computed => "computed",
            CeilingSource::Unknown => "unknown",
        }
    }
}

/// One ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// Stable id a figure refers to, e.g. `cpu.peak.f64.avx2+fma.all_cpus`.
    pub id: String,
    /// What it is, for a reader, e.g. `f64 FMA peak, avx2+fma, 2 CPUs (0-1)`.
    pub what: String,
    pub unit: CeilingUnit,
    /// `None` exactly when the source is `unknown`.
    #[serde(default)]
    pub value: Option<f64>,
    pub source: CeilingSource,
    /// How it was measured, which file or call, which reference; or why it is unknown.
    pub detail: String,
}

impl Ceiling {
    /// A figure as a fraction of this ceiling; `None` when the ceiling is unknown or not
    /// positive.
    pub fn frac_peak(&self, figure: f64) -> Option<f64> {
        self.value.filter(|v| *v > 0.0).map(|v| figure / v)
    }
}

/// One host's ceilings as a launch used them: read from the host cache at its start by the
/// host's node leader (the lowest rank on it), measured after its cases where the cache
/// needed it (while the host's other ranks slept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCeilings {
    pub host: String,
    /// The rank that measured them.
    pub rank: u32,
    /// The CPUs offered to the launch's ranks on this host (cpulist): the ones measured.
    pub cpus: String,
    /// Seconds the launch spent on this host's ceilings: the cache lookup at its start, plus
    /// the measurement after its cases where it measured.
    pub seconds: f64,
    pub ceilings: Vec<Ceiling>,
    /// What the host's hardware says is wrong with it (a link below its maximum, error
    /// counters that grew during the launch, ...). Absent in files written before they were
    /// recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<CeilingWarning>,
    /// The InfiniBand/RoCE ports' error counters at the launch's start and end. Absent where
    /// the host has none (and in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<ErrorCounter>,
    /// Which host measurement the CPU ceilings are (the host cache's, shared by a sweep's
    /// launches) and when it was taken. Absent in files written before issue 48.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement: Option<Measurement>,
}

/// The measurement a launch's CPU ceilings come from: taken once per host and CPU set (the
/// host cache, `topology::ceilings::cache`), in rounds spread over time, and reused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Identifies the measurement: the same id in two launches means the same readings.
    pub id: String,
    /// When it was measured, Unix seconds.
    pub measured_unix_s: f64,
    /// True when this launch reused it from the cache, false when this launch measured it.
    pub reused: bool,
    /// Rounds of each measured ceiling, spread over time; the best was kept.
    pub rounds: u32,
    /// Each measured ceiling's relative uncertainty, (best − median) / best over the rounds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub uncertainty_rel: BTreeMap<String, f64>,
    /// The cache file it was read from or written to; absent when it could not be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_file: Option<String>,
    /// Why it was not cached or re-measured, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One port error counter read at a launch's start and end (sysfs
/// `class/infiniband/<device>/ports/<port>/counters/<counter>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounter {
    pub device: String,
    pub port: String,
    pub counter: String,
    pub before: u64,
    /// Absent when the launch did not reach its end snapshot (or the file was gone by then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
}

/// A ceiling-related problem of a host, device or link, with its cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingWarning {
    pub kind: CeilingWarningKind,
    /// What it is about: a device and port (`mlx5_0 port 1`), a GPU (`GPU 0 (NVIDIA H100 ...)`).
    pub subject: String,
    /// One sentence naming the cause and, where there is one, the fix.
    pub message: String,
}

/// What kind of problem a [`CeilingWarning`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CeilingWarningKind {
    /// A link (PCIe, NVLink, InfiniBand) runs below its maximum generation, width or rate.
    NegotiatedDown,
    /// A port or link that exists is not up.
    LinkDown,
    /// Error counters grew between the launch's start and end.
    CountersGrew,
    /// Anything else the hardware reports (the message says what).
    Other,
}

/// A figure of a case as a fraction of the ceiling that bounds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakFraction {
    /// The case's field it applies to: `busbw_gbps` or `gflops`.
    pub figure: String,
    /// The bounding ceiling's id (in the launch's provenance, or an unknown one named here).
    pub ceiling_id: String,
    /// The bound used: the ceiling's value, times `cpus` where given; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// The ceiling is per CPU and the figure's threads use this many CPUs (GEMM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// figure / bound; absent exactly when `unknown` says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frac_peak: Option<f64>,
    /// Why the ceiling is not known, or why no fraction is given (`under_measured`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// busbw on one host: bytes of memory traffic per busbw byte the bound divides the
    /// ceiling by ([`bounds::traffic_bytes_per_busbw_byte`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_bytes_per_busbw_byte: Option<f64>,
    /// The bound's relative uncertainty (measured ceilings: the rounds' spread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty_rel: Option<f64>,
    /// The figure was above a measured bound: the ceiling was under-measured, `bound` and the
    /// case's figure are both kept, `frac_peak` is absent and `unknown` says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub under_measured: bool,
}

/// What a results reader needs of a launch to bound its figures.
#[derive(Debug, Clone, Copy)]
pub struct LaunchCeilings<'a> {
    /// The hosts' ceilings (empty: skipped, or a file from before they were recorded).
    pub hosts: &'a [HostCeilings],
    /// Why they were not measured (`--no-ceilings`), if so.
    pub skipped: Option<&'a str>,
    /// Distinct hosts of the launch.
    pub host_count: usize,
    /// Nodes were emulated on one host.
    pub emulated_nodes: bool,
    pub nodes: u32,
    /// Rank 0's host (GEMM figures are rank 0's mean over devices).
    pub rank0_host: &'a str,
}

impl<'a> LaunchCeilings<'a> {
    /// A launch's, from its provenance.
    pub fn of(p: &'a crate::results::schema::Provenance) -> LaunchCeilings<'a> {
        LaunchCeilings {
            hosts: &p.ceilings,
            skipped: p.ceilings_skipped.as_deref(),
            host_count: p.hosts.len(),
            emulated_nodes: p.emulated_nodes,
            nodes: p.nodes,
            rank0_host: p.ranks.first().map_or("", |r| r.host.as_str()),
        }
    }
}

/// The fraction of peak of each bandwidth (busbw) and GFLOP/s figure of a case (pure).
///
/// busbw on one host is bounded by the host's all-CPU STREAM Copy bandwidth over the memory
/// traffic the collective makes per busbw byte ([`bounds::traffic_bytes_per_busbw_byte`]);
/// across hosts by the slowest host's network link (`net.link`, see [`across_hosts`]);
/// GEMM GFLOP/s by the one-CPU FMA peak of its precision times the CPUs its threads use. On
/// the CUDA backend, busbw on one host by rank 0's GPU link ([`gpu_link`]) and GEMM GFLOP/s by
/// the GPU's table peak of its precision ([`gpu_peak`]). A figure above a measured bound gets
/// no fraction: the bound is flagged under-measured ([`PeakFraction::under_measured`]).
/// A launch with no ceilings recorded and no reason (an older file) gets none.
pub fn fractions(
    params: &crate::params::CaseParams,
    busbw_gbps: Option<f64>,
    gflops: Option<f64>,
    l: &LaunchCeilings<'_>,
) -> Vec<PeakFraction> {
    if l.hosts.is_empty() && l.skipped.is_none() {
        return Vec::new();
    }
    let host = l
        .hosts
        .iter()
        .find(|h| h.host == l.rank0_host)
        .or(l.hosts.first());
    let mut out = Vec::new();
    if let Some(b) = busbw_gbps {
        out.push(busbw_fraction(params, b, host, l));
    }
    if let Some(g) = gflops {
        out.push(gflops_fraction(params, g, host, l));
    }
    out
}

/// A fraction whose ceiling is unknown, with why.
fn unknown_fraction(figure: &str, id: &str, why: String) -> PeakFraction {
    PeakFraction {
        figure: figure.into(),
        ceiling_id: id.into(),
        bound: None,
        cpus: None,
        frac_peak: None,
        unknown: Some(why),
        traffic_bytes_per_busbw_byte: None,
        uncertainty_rel: None,
        under_measured: false,
    }
}

/// `value` against ceiling `c` of `host`: the bound is the ceiling times `cpus`, or over
/// `traffic`; above a measured bound the ceiling is under-measured and no fraction is given.
fn against(
    figure: &str,
    value: f64,
    c: &Ceiling,
    host: Option<&HostCeilings>,
    cpus: Option<u32>,
    traffic: Option<f64>,
) -> PeakFraction {
    let bound = c
        .value
        .map(|v| v * f64::from(cpus.unwrap_or(1)) / traffic.unwrap_or(1.0));
    let mut f = PeakFraction {
        figure: figure.into(),
        ceiling_id: c.id.clone(),
        bound,
        cpus,
        frac_peak: bound.filter(|b| *b > 0.0).map(|b| value / b),
        unknown: c.value.is_none().then(|| c.detail.clone()),
        traffic_bytes_per_busbw_byte: traffic,
        uncertainty_rel: None,
        under_measured: false,
    };
    // measured CPU ceilings only: a GPU's table peak or a link's rate is not re-measured
    if c.source == CeilingSource::Measured && c.id.starts_with("cpu.") {
        f.uncertainty_rel = host
            .and_then(|h| h.measurement.as_ref())
            .and_then(|m| m.uncertainty_rel.get(&c.id).copied());
        if let (Some(b), Some(_)) = (bound, f.frac_peak.filter(|x| *x > 1.0)) {
            let theory = c.id.split('.').nth(2).and_then(|p| {
                let id = format!("cpu.theory.{p}.one_cpu");
                host.and_then(|h| h.ceilings.iter().find(|t| t.id == id))
            });
            let theory = theory.filter(|_| c.unit == CeilingUnit::Gflops).zip(cpus);
            f.frac_peak = None;
            f.under_measured = true;
            f.unknown = Some(bounds::under_measured_reason(value, b, c, traffic, theory));
        }
    }
    f
}

/// busbw's fraction: see [`fractions`].
fn busbw_fraction(
    params: &crate::params::CaseParams,
    b: f64,
    host: Option<&HostCeilings>,
    l: &LaunchCeilings<'_>,
) -> PeakFraction {
    use crate::params::BackendKind;
    const F: &str = "busbw_gbps";
    let find = |id: &str| host.and_then(|h| h.ceilings.iter().find(|c| c.id == id));
    let gpu = matches!(params.backend, BackendKind::Cuda | BackendKind::Rocm);
    let cuda = params.backend == BackendKind::Cuda;
    // on one host (and no emulated nodes) a collective's bytes cross the GPUs' own links
    let on_node = l.host_count <= 1 && !(l.emulated_nodes && l.nodes > 1);
    if b == 0.0 {
        // one device: the bus-bandwidth factor is 0, nothing crosses a link to bound
        return unknown_fraction(
            F,
            "none",
            "one device: busbw is 0 by definition (nothing crosses a link)".into(),
        );
    }
    if cuda && on_node {
        return match (l.skipped, gpu_link(host)) {
            (Some(why), _) => unknown_fraction(F, &format!("{RANK0_GPU}.link"), why.into()),
            (None, Ok(c)) => against(F, b, c, host, None, None),
            (None, Err(why)) => unknown_fraction(F, &format!("{RANK0_GPU}.link"), why),
        };
    }
    if gpu && on_node {
        return unknown_fraction(
            F,
            "gpu.link",
            "GPU link ceilings are not recorded in a launch on this backend yet".into(),
        );
    }
    if l.host_count > 1 {
        return across_hosts(F, b, l);
    }
    if l.emulated_nodes && l.nodes > 1 {
        return unknown_fraction(F, "net.link", "emulated nodes: the ranks of different nodes share one host, so no network link bounds the figure".into());
    }
    if let Some(why) = l.skipped {
        return unknown_fraction(F, "cpu.mem.copy.all_cpus", why.into());
    }
    let ranks = params.nodes.max(1) * params.devices_per_node;
    match find("cpu.mem.copy.all_cpus").or_else(|| find("cpu.mem.copy.one_cpu")) {
        Some(c) => against(
            F,
            b,
            c,
            host,
            None,
            bounds::traffic_bytes_per_busbw_byte(params.workload, ranks),
        ),
        None => unknown_fraction(
            F,
            "cpu.mem.copy.all_cpus",
            "no STREAM Copy ceiling recorded for rank 0's host".into(),
        ),
    }
}

/// GFLOP/s's fraction: see [`fractions`].
fn gflops_fraction(
    params: &crate::params::CaseParams,
    g: f64,
    host: Option<&HostCeilings>,
    l: &LaunchCeilings<'_>,
) -> PeakFraction {
    use crate::params::{BackendKind, Dtype};
    const F: &str = "gflops";
    let precision = match params.dtype {
        Dtype::F32 => Some("f32"),
        Dtype::F64 => Some("f64"),
        _ => None,
    };
    if params.backend == BackendKind::Cuda {
        return match (l.skipped, gpu_peak(host, params.dtype)) {
            (Some(why), _) => unknown_fraction(F, &format!("{RANK0_GPU}.peak"), why.into()),
            (None, Ok(c)) => against(F, g, c, host, None, None),
            (None, Err((id, why))) => unknown_fraction(F, &id, why),
        };
    }
    if params.backend == BackendKind::Rocm {
        return unknown_fraction(
            F,
            "gpu.peak",
            "GPU peaks are not recorded in a launch on this backend yet".into(),
        );
    }
    if let Some(why) = l.skipped {
        return unknown_fraction(F, "cpu.peak", why.into());
    }
    let Some(p) = precision else {
        return unknown_fraction(
            F,
            "cpu.peak",
            format!("no FMA peak is measured for {}", params.dtype),
        );
    };
    // the best instruction set's one-CPU peak (a launch measures only the best)
    let prefix = format!("cpu.peak.{p}.");
    let best = host.and_then(|h| {
        h.ceilings
            .iter()
            .filter(|c| c.id.starts_with(&prefix) && c.id.ends_with(".one_cpu"))
            .max_by(|a, b| a.value.unwrap_or(0.0).total_cmp(&b.value.unwrap_or(0.0)))
    });
    let cpus = params.threads_per_device.unwrap_or(1).max(1);
    match best {
        Some(c) => against(F, g, c, host, Some(cpus), None),
        None => unknown_fraction(
            F,
            &format!("cpu.peak.{p}"),
            format!("no {p} FMA peak recorded for rank 0's host"),
        ),
    }
}

/// A figure across hosts against the slowest host's `net.link` (every host sends and receives
/// its share, so none can go faster than its own link). Hosts whose link is unknown are left
/// out: any host's link still bounds the figure, so the known ones' minimum is a ceiling (a
/// looser one). Unknown, with every host's reason, when no host reports a usable port.
fn across_hosts(figure: &str, value: f64, l: &LaunchCeilings<'_>) -> PeakFraction {
    const ID: &str = "net.link";
    let unknown = |why: String| unknown_fraction(figure, ID, why);
    if let Some(why) = l.skipped {
        return unknown(why.into());
    }
    let links: Vec<(&str, Option<&Ceiling>)> = l
        .hosts
        .iter()
        .map(|h| (h.host.as_str(), h.ceilings.iter().find(|c| c.id == ID)))
        .collect();
    let slowest = links
        .iter()
        .filter_map(|(_, c)| c.filter(|c| c.value.is_some_and(|v| v > 0.0)))
        .min_by(|a, b| a.value.unwrap_or(0.0).total_cmp(&b.value.unwrap_or(0.0)));
    match slowest {
        Some(c) => {
            let bound = c.value;
            PeakFraction {
                figure: figure.into(),
                ceiling_id: ID.into(),
                bound,
                cpus: None,
                frac_peak: bound.map(|b| value / b),
                unknown: None,
                traffic_bytes_per_busbw_byte: None,
                uncertainty_rel: None,
                under_measured: false,
            }
        }
        None => {
            let mut why: Vec<String> = links
                .iter()
                .map(|(h, c)| match c {
                    Some(c) => format!("{h}: {}", c.detail),
                    None => format!("{h}: no network ceiling recorded"),
                })
                .collect();
            if l.hosts.len() < l.host_count {
                why.push(format!(
                    "{} of {} recorded no ceilings",
                    l.host_count - l.hosts.len(),
                    crate::units::count(l.host_count, "host", "hosts")
                ));
            }
            unknown(format!(
                "no host reports a usable network port ({})",
                why.join("; ")
            ))
        }
    }
}

/// The GPU whose ceilings bound a CUDA figure: rank 0's first, node-local GPU 0 (rank 0 is the
/// lowest rank of node 0, so its local rank is 0; GEMM figures are rank 0's, and every GPU of
/// a node runs the same collective).
const RANK0_GPU: &str = "gpu0";

/// The link a GPU's on-node collective crosses: its NVLink, all active links together, when it
/// has active links; else its PCIe link (current width at the slot's generation).
fn gpu_link(host: Option<&HostCeilings>) -> Result<&Ceiling, String> {
    let find = |id: String| host.and_then(|h| h.ceilings.iter().find(|c| c.id == id));
    let nvlink = find(format!("{RANK0_GPU}.nvlink"));
    if let Some(c) = nvlink.filter(|c| c.value.is_some_and(|v| v > 0.0)) {
        return Ok(c);
    }
    match find(format!("{RANK0_GPU}.pcie")) {
        Some(c) => Ok(c),
        None => Err(format!(
            "no link ceiling of {RANK0_GPU} recorded for rank 0's host{}",
            host.and_then(|h| h.ceilings.iter().find(|c| c.id == "gpu"))
                .map_or(String::new(), |c| format!(": {}", c.detail))
        )),
    }
}

/// The table peak a CUDA GEMM of `dtype` runs against: f32 the FP32 peak (TF32 tensor math is
/// a launch-wide switch the case does not record), f16/bf16 their tensor peaks, f64 the FP64
/// tensor peak (cuBLAS DGEMM runs on the FP64 tensor cores where a GPU has them), else FP64.
fn gpu_peak(
    host: Option<&HostCeilings>,
    dtype: crate::params::Dtype,
) -> Result<&Ceiling, (String, String)> {
    use crate::params::Dtype;
    let precisions: &[&str] = match dtype {
        Dtype::F32 => &["fp32"],
        Dtype::F64 => &["fp64_tensor", "fp64"],
        Dtype::F16 => &["fp16_tensor"],
        Dtype::Bf16 => &["bf16_tensor"],
        Dtype::I32 => {
            return Err((
                format!("{RANK0_GPU}.peak"),
                format!("no GPU peak is tabled for {dtype}"),
            ))
        }
    };
    let find = |p: &str| {
        let id = format!("{RANK0_GPU}.peak.{p}");
        host.and_then(|h| h.ceilings.iter().find(|c| c.id == id))
    };
    if let Some(c) = precisions
        .iter()
        .filter_map(|p| find(p))
        .find(|c| c.value.is_some())
    {
        return Ok(c);
    }
    let first = format!("{RANK0_GPU}.peak.{}", precisions[0]);
    match find(precisions[0]) {
        // the first precision's ceiling, unknown: its reason
        Some(c) => Ok(c),
        None => Err((
            first.clone(),
            format!("no {first} ceiling recorded for rank 0's host"),
        )),
    }
}

/// Where a launch's GEMM-kernel finding (`GEMM runs ...; fix: ...`) ends and the speed-up its
/// ranks measured for the fix begins: the finding is the same on every rank and launch, the
/// measurement is not (see `backend::gemm::fix_check`).
pub const MEASURED_FIX_MARKERS: [&str; 2] =
    ["; measured here: ", "; --gemm gemm-crate's speed-up "];

/// The kernel finding without its measured speed-up, and that sentence.
pub fn split_measured_fix(w: &str) -> (&str, Option<&str>) {
    MEASURED_FIX_MARKERS
        .iter()
        .find_map(|m| w.find(m))
        .map_or((w, None), |i| (&w[..i], Some(&w[i + 2..])))
}

#[cfg(test)]
mod tests;
