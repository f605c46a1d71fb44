//! Ceilings: the most a host, device or link can do, each with where the figure comes from,
//! so a measured figure can be read as a fraction of what its hardware allows.

use serde::{Deserialize, Serialize};

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

/// One host's ceilings as a launch measured them at its start (by the host's node leader,
/// the lowest rank on it, while the host's other ranks slept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCeilings {
    pub host: String,
    /// The rank that measured them.
    pub rank: u32,
    /// The CPUs offered to the launch's ranks on this host (cpulist): the ones measured.
    pub cpus: String,
    /// How long the measurement took, seconds (the launch's start-up cost on this host).
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
    /// Why the ceiling is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
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
/// busbw on one host is bounded by the host's all-CPU STREAM Copy bandwidth (a collective's
/// bytes are copied through memory, and Copy moves each byte once in, once out, like a
/// shared-memory transport); across hosts by the slowest host's network link (`net.link`,
/// see [`across_hosts`]);
/// GEMM GFLOP/s by the one-CPU FMA peak of its precision times the CPUs its threads use. On
/// the CUDA backend, busbw on one host by rank 0's GPU link ([`gpu_link`]) and GEMM GFLOP/s by
/// the GPU's table peak of its precision ([`gpu_peak`]).
/// A launch with no ceilings recorded and no reason (an older file) gets none.
pub fn fractions(
    params: &crate::params::CaseParams,
    busbw_gbps: Option<f64>,
    gflops: Option<f64>,
    l: &LaunchCeilings<'_>,
) -> Vec<PeakFraction> {
    use crate::params::{BackendKind, Dtype};
    if l.hosts.is_empty() && l.skipped.is_none() {
        return Vec::new();
    }
    let unknown = |figure: &str, id: &str, why: String| PeakFraction {
        figure: figure.into(),
        ceiling_id: id.into(),
        bound: None,
        cpus: None,
        frac_peak: None,
        unknown: Some(why),
    };
    let host = l
        .hosts
        .iter()
        .find(|h| h.host == l.rank0_host)
        .or(l.hosts.first());
    let find = |id: &str| host.and_then(|h| h.ceilings.iter().find(|c| c.id == id));
    let against = |figure: &str, value: f64, c: &Ceiling, cpus: Option<u32>| {
        let bound = c.value.map(|v| v * f64::from(cpus.unwrap_or(1)));
        PeakFraction {
            figure: figure.into(),
            ceiling_id: c.id.clone(),
            bound,
            cpus,
            frac_peak: bound.filter(|b| *b > 0.0).map(|b| value / b),
            unknown: c.value.is_none().then(|| c.detail.clone()),
        }
    };
    let gpu = matches!(params.backend, BackendKind::Cuda | BackendKind::Rocm);
    let cuda = params.backend == BackendKind::Cuda;
    // on one host (and no emulated nodes) a collective's bytes cross the GPUs' own links
    let on_node = l.host_count <= 1 && !(l.emulated_nodes && l.nodes > 1);
    let mut out = Vec::new();
    if let Some(b) = busbw_gbps {
        const F: &str = "busbw_gbps";
        if b == 0.0 {
            // one device: the bus-bandwidth factor is 0, nothing crosses a link to bound
            out.push(unknown(
                F,
                "none",
                "one device: busbw is 0 by definition (nothing crosses a link)".into(),
            ));
        } else if cuda && on_node {
            out.push(match (l.skipped, gpu_link(host)) {
                (Some(why), _) => unknown(F, &format!("{RANK0_GPU}.link"), why.into()),
                (None, Ok(c)) => against(F, b, c, None),
                (None, Err(why)) => unknown(F, &format!("{RANK0_GPU}.link"), why),
            });
        } else if gpu && on_node {
            out.push(unknown(
                F,
                "gpu.link",
                "GPU link ceilings are not recorded in a launch on this backend yet".into(),
            ));
        } else if l.host_count > 1 {
            out.push(across_hosts(F, b, l));
        } else if l.emulated_nodes && l.nodes > 1 {
            out.push(unknown(F, "net.link", "emulated nodes: the ranks of different nodes share one host, so no network link bounds the figure".into()));
        } else if let Some(why) = l.skipped {
            out.push(unknown(F, "cpu.mem.copy.all_cpus", why.into()));
        } else {
            match find("cpu.mem.copy.all_cpus").or_else(|| find("cpu.mem.copy.one_cpu")) {
                Some(c) => out.push(against(F, b, c, None)),
                None => out.push(unknown(
                    F,
                    "cpu.mem.copy.all_cpus",
                    "no STREAM Copy ceiling recorded for rank 0's host".into(),
                )),
            }
        }
    }
    if let Some(g) = gflops {
        const F: &str = "gflops";
        let precision = match params.dtype {
            Dtype::F32 => Some("f32"),
            Dtype::F64 => Some("f64"),
            _ => None,
        };
        if cuda {
            out.push(match (l.skipped, gpu_peak(host, params.dtype)) {
                (Some(why), _) => unknown(F, &format!("{RANK0_GPU}.peak"), why.into()),
                (None, Ok(c)) => against(F, g, c, None),
                (None, Err((id, why))) => unknown(F, &id, why),
            });
        } else if gpu {
            out.push(unknown(
                F,
                "gpu.peak",
                "GPU peaks are not recorded in a launch on this backend yet".into(),
            ));
        } else if let Some(why) = l.skipped {
            out.push(unknown(F, "cpu.peak", why.into()));
        } else if let Some(p) = precision {
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
                Some(c) => out.push(against(F, g, c, Some(cpus))),
                None => out.push(unknown(
                    F,
                    &format!("cpu.peak.{p}"),
                    format!("no {p} FMA peak recorded for rank 0's host"),
                )),
            }
        } else {
            out.push(unknown(
                F,
                "cpu.peak",
                format!("no FMA peak is measured for {}", params.dtype),
            ));
        }
    }
    out
}

/// A figure across hosts against the slowest host's `net.link` (every host sends and receives
/// its share, so none can go faster than its own link). Hosts whose link is unknown are left
/// out: any host's link still bounds the figure, so the known ones' minimum is a ceiling (a
/// looser one). Unknown, with every host's reason, when no host reports a usable port.
fn across_hosts(figure: &str, value: f64, l: &LaunchCeilings<'_>) -> PeakFraction {
    const ID: &str = "net.link";
    let unknown = |why: String| PeakFraction {
        figure: figure.into(),
        ceiling_id: ID.into(),
        bound: None,
        cpus: None,
        frac_peak: None,
        unknown: Some(why),
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fraction_of_an_unknown_ceiling_is_none() {
        let mut c = Ceiling {
            id: "x".into(),
            what: "x".into(),
            unit: CeilingUnit::Gbps,
            value: Some(20.0),
            source: CeilingSource::Measured,
            detail: String::new(),
        };
        assert_eq!(c.frac_peak(5.0), Some(0.25));
        c.value = None;
        c.source = CeilingSource::Unknown;
        assert_eq!(c.frac_peak(5.0), None);
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains("\"source\":\"unknown\"") && json.contains("\"unit\":\"gbps\""));
        assert_eq!(serde_json::from_str::<Ceiling>(&json).unwrap(), c);
    }

    fn ceiling(id: &str, unit: CeilingUnit, value: Option<f64>) -> Ceiling {
        Ceiling {
            id: id.into(),
            what: id.into(),
            unit,
            value,
            source: if value.is_some() {
                CeilingSource::Measured
            } else {
                CeilingSource::Unknown
            },
            detail: if value.is_some() { "how" } else { "why not" }.into(),
        }
    }

    fn host(name: &str) -> HostCeilings {
        HostCeilings {
            host: name.into(),
            rank: 0,
            cpus: "0-3".into(),
            seconds: 0.2,
            warnings: Vec::new(),
            counters: Vec::new(),
            ceilings: vec![
                ceiling(
                    "cpu.peak.f32.avx2+fma.one_cpu",
                    CeilingUnit::Gflops,
                    Some(100.0),
                ),
                ceiling(
                    "cpu.peak.f64.avx2+fma.one_cpu",
                    CeilingUnit::Gflops,
                    Some(50.0),
                ),
                ceiling(
                    "cpu.peak.f64.avx2+fma.all_cpus",
                    CeilingUnit::Gflops,
                    Some(180.0),
                ),
                ceiling("cpu.mem.copy.one_cpu", CeilingUnit::Gbps, Some(10.0)),
                ceiling("cpu.mem.copy.all_cpus", CeilingUnit::Gbps, Some(40.0)),
            ],
        }
    }

    /// A case's parameters and its two figures.
    struct Case {
        params: crate::params::CaseParams,
        busbw_gbps: Option<f64>,
        gflops: Option<f64>,
    }

    fn case(w: crate::params::Workload, dtype: crate::params::Dtype) -> Case {
        let mut params = crate::params::CaseParams::new(w, 1, 4);
        params.dtype = dtype;
        params.threads_per_device = Some(2);
        Case {
            params,
            busbw_gbps: None,
            gflops: None,
        }
    }

    fn fractions(c: &Case, l: &LaunchCeilings<'_>) -> Vec<PeakFraction> {
        super::fractions(&c.params, c.busbw_gbps, c.gflops, l)
    }

    fn launch(hosts: &[HostCeilings]) -> LaunchCeilings<'_> {
        LaunchCeilings {
            hosts,
            skipped: None,
            host_count: 1,
            emulated_nodes: false,
            nodes: 1,
            rank0_host: "a",
        }
    }

    #[test]
    fn busbw_on_one_host_is_a_fraction_of_the_all_cpu_copy_bandwidth() {
        use crate::params::{Dtype, Workload};
        let hosts = [host("a")];
        let mut c = case(Workload::Allreduce, Dtype::F32);
        c.busbw_gbps = Some(10.0);
        let f = fractions(&c, &launch(&hosts));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].figure.as_str(), f[0].ceiling_id.as_str()),
            ("busbw_gbps", "cpu.mem.copy.all_cpus")
        );
        assert_eq!(
            (f[0].bound, f[0].frac_peak, f[0].unknown.as_deref()),
            (Some(40.0), Some(0.25), None)
        );
        // one CPU offered: its Copy is the ceiling
        let mut one = host("a");
        one.ceilings.retain(|x| x.id != "cpu.mem.copy.all_cpus");
        let one = [one];
        let f = fractions(&c, &launch(&one));
        assert_eq!(
            (f[0].ceiling_id.as_str(), f[0].frac_peak),
            ("cpu.mem.copy.one_cpu", Some(1.0))
        );
        // an unknown Copy ceiling: no number, its reason
        let mut unk = host("a");
        unk.ceilings[4].value = None;
        unk.ceilings[4].source = CeilingSource::Unknown;
        unk.ceilings[4].detail = "why not".into();
        let unk = [unk];
        let f = fractions(&c, &launch(&unk));
        assert_eq!(
            (f[0].frac_peak, f[0].unknown.as_deref()),
            (None, Some("why not"))
        );
        // one device: busbw is 0 by definition, no fraction of any ceiling
        c.busbw_gbps = Some(0.0);
        let f = fractions(&c, &launch(&hosts));
        assert_eq!(f[0].frac_peak, None);
        assert!(f[0].unknown.as_deref().unwrap().contains("one device"));
    }

    /// `host(name)` with a `net.link` ceiling of `gbps` (`None`: unknown, saying `why`).
    fn networked(name: &str, gbps: Option<f64>, why: &str) -> HostCeilings {
        let mut h = host(name);
        let mut c = ceiling("net.link", CeilingUnit::Gbps, gbps);
        if gbps.is_none() {
            c.detail = why.into();
        }
        h.ceilings.push(c);
        h
    }

    fn two_hosts(hosts: &[HostCeilings]) -> LaunchCeilings<'_> {
        LaunchCeilings {
            host_count: 2,
            nodes: 2,
            ..launch(hosts)
        }
    }

    #[test]
    fn across_hosts_the_slowest_hosts_link_bounds_the_figure() {
        use crate::params::{Dtype, Workload};
        let mut c = case(Workload::Allgather, Dtype::F32);
        c.busbw_gbps = Some(5.0);
        // b's 12.5 GB/s link bounds, not a's 50 (nor either host's 40 GB/s STREAM Copy)
        let hosts = [
            networked("a", Some(50.0), ""),
            networked("b", Some(12.5), ""),
        ];
        let f = fractions(&c, &two_hosts(&hosts));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (
                f[0].ceiling_id.as_str(),
                f[0].bound,
                f[0].frac_peak,
                f[0].unknown.as_deref()
            ),
            ("net.link", Some(12.5), Some(0.4), None)
        );
        // a host whose link is unknown is left out: the known host's link still bounds
        let hosts = [
            networked("a", None, "eth0 speed -1"),
            networked("b", Some(25.0), ""),
        ];
        let f = fractions(&c, &two_hosts(&hosts));
        assert_eq!((f[0].bound, f[0].frac_peak), (Some(25.0), Some(0.2)));
    }

    #[test]
    fn across_hosts_with_no_usable_port_the_link_is_unknown_with_each_hosts_reason() {
        use crate::params::{Dtype, Workload};
        let mut c = case(Workload::Allreduce, Dtype::F32);
        c.busbw_gbps = Some(5.0);
        let hosts = [
            networked("a", None, "net.eth.eth0: \"-1\": no speed"),
            host("b"),
        ];
        let f = fractions(&c, &two_hosts(&hosts));
        assert_eq!(
            (f[0].ceiling_id.as_str(), f[0].bound, f[0].frac_peak),
            ("net.link", None, None)
        );
        let why = f[0].unknown.as_deref().unwrap();
        assert!(
            why.contains("no host reports a usable network port")
                && why.contains("a: net.eth.eth0: \"-1\"")
                && why.contains("b: no network ceiling recorded"),
            "{why}"
        );
        // --no-ceilings across hosts: the reason is the skip
        let skipped = LaunchCeilings {
            skipped: Some("not measured: --no-ceilings"),
            ..two_hosts(&[])
        };
        let f = fractions(&c, &skipped);
        assert_eq!(f[0].ceiling_id, "net.link");
        assert!(f[0].unknown.as_deref().unwrap().contains("--no-ceilings"));
    }

    #[test]
    fn emulated_nodes_have_no_link_ceiling_even_where_the_host_has_one() {
        use crate::params::{Dtype, Workload};
        let hosts = [networked("a", Some(25.0), "")];
        let mut c = case(Workload::Allgather, Dtype::F32);
        c.busbw_gbps = Some(5.0);
        let emulated = LaunchCeilings {
            emulated_nodes: true,
            nodes: 2,
            ..launch(&hosts)
        };
        let f = fractions(&c, &emulated);
        assert_eq!(
            (f[0].ceiling_id.as_str(), f[0].frac_peak),
            ("net.link", None)
        );
        assert!(f[0].unknown.as_deref().unwrap().contains("emulated nodes"));
        // one real host: the STREAM Copy bound, the link plays no part
        let f = fractions(&c, &launch(&hosts));
        assert_eq!(
            (f[0].ceiling_id.as_str(), f[0].frac_peak),
            ("cpu.mem.copy.all_cpus", Some(0.125))
        );
    }

    #[test]
    fn gemm_gflops_against_the_fma_peak_of_its_precision_times_its_cpus() {
        use crate::params::{Dtype, Workload};
        let hosts = [host("a")];
        let mut c = case(Workload::Matmul, Dtype::F64);
        c.gflops = Some(80.0);
        let f = fractions(&c, &launch(&hosts));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].ceiling_id, "cpu.peak.f64.avx2+fma.one_cpu");
        // 2 threads per device: 2 × 50 GFLOP/s
        assert_eq!(
            (f[0].cpus, f[0].bound, f[0].frac_peak),
            (Some(2), Some(100.0), Some(0.8))
        );
        let mut c32 = case(Workload::Matmul, Dtype::F32);
        c32.gflops = Some(50.0);
        assert_eq!(fractions(&c32, &launch(&hosts))[0].frac_peak, Some(0.25));
        // no FMA peak for integers: unknown, with why
        let mut ci = case(Workload::Matmul, Dtype::I32);
        ci.gflops = Some(1.0);
        let f = fractions(&ci, &launch(&hosts));
        assert_eq!(f[0].frac_peak, None);
        assert!(f[0].unknown.as_deref().unwrap().contains("i32"), "{f:?}");
    }

    /// A host with one CUDA GPU: NVLink `nvlink` GB/s (`None`: unknown), PCIe 15.75 GB/s,
    /// BF16 989 and FP64 tensor 67 TFLOP/s, FP32 unknown.
    fn gpu_host(nvlink: Option<f64>) -> HostCeilings {
        let mut h = host("a");
        let g = CeilingUnit::Gflops;
        h.ceilings.extend([
            ceiling("gpu0.pcie", CeilingUnit::Gbps, Some(15.75)),
            ceiling("gpu0.nvlink", CeilingUnit::Gbps, nvlink),
            ceiling("gpu0.peak.bf16_tensor", g, Some(989e3)),
            ceiling("gpu0.peak.fp64_tensor", g, Some(67e3)),
            ceiling("gpu0.peak.fp64", g, Some(34e3)),
            ceiling("gpu0.peak.fp32", g, None),
            ceiling("gpu1.nvlink", CeilingUnit::Gbps, Some(1.0)),
        ]);
        h
    }

    fn cuda(w: crate::params::Workload, dtype: crate::params::Dtype) -> Case {
        let mut c = case(w, dtype);
        c.params.backend = crate::params::BackendKind::Cuda;
        c
    }

    #[test]
    fn cuda_busbw_on_one_host_against_nvlink_when_active_else_pcie() {
        use crate::params::{Dtype, Workload};
        let mut c = cuda(Workload::Allreduce, Dtype::F32);
        c.busbw_gbps = Some(90.0);
        let hosts = [gpu_host(Some(450.0))];
        let f = fractions(&c, &launch(&hosts));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].ceiling_id.as_str(), f[0].bound, f[0].frac_peak),
            ("gpu0.nvlink", Some(450.0), Some(0.2))
        );
        // no NVLink (0 GB/s, or unknown): the PCIe link bounds it
        for nv in [Some(0.0), None] {
            let hosts = [gpu_host(nv)];
            let f = fractions(&c, &launch(&hosts));
            assert_eq!(
                (f[0].ceiling_id.as_str(), f[0].bound, f[0].frac_peak),
                ("gpu0.pcie", Some(15.75), Some(90.0 / 15.75))
            );
        }
        // no GPU ceilings recorded: unknown, naming the device and why
        let mut none = host("a");
        none.ceilings.push(ceiling("gpu", CeilingUnit::Gbps, None));
        let none = [none];
        let f = fractions(&c, &launch(&none));
        assert_eq!(
            (f[0].ceiling_id.as_str(), f[0].frac_peak),
            ("gpu0.link", None)
        );
        assert!(
            f[0].unknown.as_deref().unwrap().ends_with(": why not"),
            "{f:?}"
        );
        // across hosts the GPU links are not the bound: the network branch answers
        let two = LaunchCeilings {
            host_count: 2,
            nodes: 2,
            ..launch(&hosts)
        };
        assert_eq!(fractions(&c, &two)[0].ceiling_id, "net.link");
    }

    #[test]
    fn cuda_gemm_against_the_table_peak_of_its_precision() {
        use crate::params::{Dtype, Workload};
        let hosts = [gpu_host(Some(450.0))];
        let frac = |dtype: Dtype, gflops: f64| {
            let mut c = cuda(Workload::Matmul, dtype);
            c.gflops = Some(gflops);
            let f = fractions(&c, &launch(&hosts));
            assert_eq!(f.len(), 1);
            f.into_iter().next().unwrap()
        };
        let f = frac(Dtype::Bf16, 494.5e3);
        assert_eq!(
            (f.ceiling_id.as_str(), f.bound, f.frac_peak, f.cpus),
            ("gpu0.peak.bf16_tensor", Some(989e3), Some(0.5), None)
        );
        // f64: the FP64 tensor peak
        let f = frac(Dtype::F64, 33.5e3);
        assert_eq!(
            (f.ceiling_id.as_str(), f.frac_peak),
            ("gpu0.peak.fp64_tensor", Some(0.5))
        );
        // FP32 not in the table: unknown with the ceiling's reason
        let f = frac(Dtype::F32, 1e3);
        assert_eq!(
            (f.ceiling_id.as_str(), f.frac_peak),
            ("gpu0.peak.fp32", None)
        );
        assert_eq!(f.unknown.as_deref(), Some("why not"));
        // f16: no ceiling recorded at all
        let f = frac(Dtype::F16, 1e3);
        assert_eq!(
            (f.ceiling_id.as_str(), f.frac_peak),
            ("gpu0.peak.fp16_tensor", None)
        );
        assert!(f
            .unknown
            .as_deref()
            .unwrap()
            .contains("no gpu0.peak.fp16_tensor"));
        // skipped: the reason
        let mut c = cuda(Workload::Matmul, Dtype::Bf16);
        c.gflops = Some(1.0);
        let skipped = LaunchCeilings {
            skipped: Some("not measured: --no-ceilings"),
            ..launch(&[])
        };
        let f = fractions(&c, &skipped);
        assert_eq!(
            (f[0].ceiling_id.as_str(), f[0].frac_peak),
            ("gpu0.peak", None)
        );
        assert!(f[0].unknown.as_deref().unwrap().contains("--no-ceilings"));
    }

    #[test]
    fn skipped_ceilings_say_so_and_older_files_get_none() {
        use crate::params::{Dtype, Workload};
        let mut c = case(Workload::Allreduce, Dtype::F32);
        c.busbw_gbps = Some(10.0);
        let skipped = LaunchCeilings {
            skipped: Some("not measured: --no-ceilings"),
            ..launch(&[])
        };
        let f = fractions(&c, &skipped);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].frac_peak, None);
        assert!(f[0].unknown.as_deref().unwrap().contains("--no-ceilings"));
        // a file from before ceilings were recorded: nothing is claimed
        assert!(fractions(&c, &launch(&[])).is_empty());
        // a case with no figure (failed, skipped) gets none either
        let hosts = [host("a")];
        assert!(fractions(&case(Workload::Allreduce, Dtype::F32), &launch(&hosts)).is_empty());
    }
}
