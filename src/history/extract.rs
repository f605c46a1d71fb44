//! What the index keeps of one results file: the run (commit, cluster, labels) and, per
//! measured case, the median time with its interval and the constants that turn a time into
//! each rate (so one row per case serves every metric).

use crate::results::schema::{CaseStatus, LaunchRecord, ResultsFile};

/// The run a results file records.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRow {
    pub(crate) run_id: String,
    pub(crate) started_unix_s: f64,
    pub(crate) version: String,
    pub(crate) git_sha: Option<String>,
    pub(crate) cluster: String,
    pub(crate) labels_json: String,
}

/// One measured case of a run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CaseRow {
    pub(crate) case_id: String,
    pub(crate) label: String,
    pub(crate) workload: String,
    pub(crate) nodes: u32,
    pub(crate) devices_per_node: u32,
    pub(crate) bytes: Option<u64>,
    /// What changes performance without being the code: CPU model, MPI library, backend, GPU
    /// model, collective/BLAS library and driver versions, the stand-in flag, GEMM library,
    /// fabric provider variables. A change breaks a series.
    pub(crate) setup: String,
    /// Representativeness reasons of the case and its launch, comma-separated ("" if none).
    pub(crate) unrepresentative: String,
    pub(crate) n: usize,
    pub(crate) median_s: f64,
    pub(crate) lo_s: f64,
    pub(crate) hi_s: f64,
    /// busbw (GB/s) = busbw_c / time; likewise algbw and GFLOP/s per device. `None` where the
    /// case has no such rate.
    pub(crate) busbw_c: Option<f64>,
    pub(crate) algbw_c: Option<f64>,
    pub(crate) gflops_c: Option<f64>,
}

/// Environment variables that select a fabric or transport: a change is a new set-up.
const SETUP_ENV: &[&str] = &[
    "FI_PROVIDER",
    "UCX_TLS",
    "UCX_NET_DEVICES",
    "OMPI_MCA_pml",
    "OMPI_MCA_btl",
    "OMPI_MCA_mtl",
    "NCCL_NET",
    "NCCL_IB_HCA",
];

pub(crate) fn run_row(file: &ResultsFile) -> RunRow {
    let env = |k: &str| {
        file.launches
            .iter()
            .filter_map(|l| l.provenance.as_ref()?.environment.get(k).cloned())
            .next()
    };
    let first_host = file
        .launches
        .iter()
        .filter_map(|l| l.provenance.as_ref()?.hosts.first().map(|h| h.host.clone()))
        .next();
    // A label says it best; then Slurm's cluster name; then the first host.
    let cluster = file
        .run
        .labels
        .get("cluster")
        .cloned()
        .or_else(|| env("SLURM_CLUSTER_NAME"))
        .or(first_host)
        .unwrap_or_else(|| "unknown".to_string());
    RunRow {
        run_id: file.run.run_id.clone(),
        started_unix_s: file.run.started_unix_s,
        version: file.generator.version.clone(),
        git_sha: file.generator.git_sha.clone(),
        cluster,
        labels_json: serde_json::to_string(&file.run.labels).unwrap_or_default(),
    }
}

fn setup_of(launch: Option<&LaunchRecord>) -> String {
    let Some(p) = launch.and_then(|l| l.provenance.as_ref()) else {
        return "unknown".to_string();
    };
    let mut cpus: Vec<&str> = p.hosts.iter().map(|h| h.cpu_model.as_str()).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut parts = vec![
        format!("cpu={}", cpus.join("+")),
        format!("mpi={}", p.mpi_library.as_deref().unwrap_or("none")),
        format!("backend={}", p.backend.kind),
    ];
    if p.backend.kind != crate::params::BackendKind::Cpu {
        let mut gpus: Vec<&str> = p
            .ranks
            .iter()
            .flat_map(|r| r.devices.iter().map(|d| gpu_model(&d.name)))
            .collect();
        gpus.sort_unstable();
        gpus.dedup();
        parts.push(format!("gpu={}", gpus.join("+")));
        parts.extend(libraries(&p.backend.detail));
    }
    if p.backend.detail.starts_with(STANDIN_PREFIX) {
        parts.push("STAND-IN".to_string());
    }
    if let Some(g) = &p.gemm {
        parts.push(format!(
            "gemm={} {}",
            g.library.as_deref().unwrap_or("?"),
            g.version
        ));
    }
    for k in SETUP_ENV {
        if let Some(v) = p.environment.get(*k) {
            parts.push(format!("{k}={v}"));
        }
    }
    parts.join("; ")
}

/// How a backend detail written on scalebench's stand-in libraries begins.
const STANDIN_PREFIX: &str = "STAND-IN: ";

/// Whether a set-up (as [`setup_of`] writes it) ran on scalebench's stand-in libraries: its
/// figures are a test double's, never a GPU's, wherever they go.
pub(crate) fn is_standin_setup(setup: &str) -> bool {
    setup.split("; ").any(|part| part == "STAND-IN")
}

/// A GPU's model from its device description: the name before the PCI address and the rest
/// (`NVIDIA H100 80GB HBM3 (0000:17:00.0, …)` → `NVIDIA H100 80GB HBM3`; ROCm's
/// `AMD Instinct MI250X gfx90a GCD 0000:c1:00.0 (…)` → `AMD Instinct MI250X gfx90a`), so two
/// GPUs of one model are one set-up whichever slot they sit in.
fn gpu_model(name: &str) -> &str {
    let cut = [" (", " GCD ", "; "]
        .iter()
        .filter_map(|m| name.find(m))
        .min()
        .unwrap_or(name.len());
    name[..cut].trim()
}

/// The versions in a GPU backend's detail that change performance: the collective and BLAS
/// libraries (`NCCL 2.28.3`, `RCCL …`, `cuBLAS 13.1.0`, `rocBLAS …`) and the driver
/// (`driver supports CUDA 13.0`, `HIP runtime 6.4.1`). Read by name, so rewording the rest of
/// the detail in a later scalebench breaks no series.
fn libraries(detail: &str) -> Vec<String> {
    const NAMED: &[(&str, &str)] = &[
        ("NCCL ", "nccl"),
        ("RCCL ", "rccl"),
        ("cuBLAS ", "cublas"),
        ("rocBLAS ", "rocblas"),
        ("driver supports CUDA ", "driver=cuda"),
        ("HIP runtime ", "hip"),
    ];
    let mut out = Vec::new();
    for (marker, key) in NAMED {
        let Some(at) = detail.find(marker) else {
            continue;
        };
        let version: String = detail[at + marker.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
            .collect();
        let version = version.trim_end_matches('.');
        if version.starts_with(|c: char| c.is_ascii_digit()) {
            let sep = if key.contains('=') { " " } else { "=" };
            out.push(format!("{key}{sep}{version}"));
        }
    }
    out
}

/// Median of the samples with a distribution-free interval of about 95 % (order statistics
/// n/2 ∓ 0.98 √n, the normal approximation to the binomial); min..max for fewer than 6.
pub(crate) fn median_interval(samples: &[f64]) -> Option<(f64, f64, f64)> {
    let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = crate::stats::quantile_sorted(&s, 0.5);
    if n < 6 {
        return Some((median, s[0], s[n - 1]));
    }
    let half = 0.98 * (n as f64).sqrt();
    let lo = ((n as f64 / 2.0 - half).floor() as usize).min(n - 1);
    let hi = ((n as f64 / 2.0 + half).ceil() as usize).min(n - 1);
    Some((median, s[lo], s[hi]))
}

/// The cases worth a series: `ok` with samples. Failed, wrong, skipped cases have no number.
pub(crate) fn case_rows(file: &ResultsFile) -> Vec<CaseRow> {
    let mut out = Vec::with_capacity(file.cases.len());
    for c in &file.cases {
        if c.status != CaseStatus::Ok {
            continue;
        }
        let Some(t) = &c.timing else { continue };
        let Some((median_s, lo_s, hi_s)) = median_interval(&t.samples_s) else {
            continue;
        };
        // The launch's current attempt, or the superseded one that measured the case.
        let launch = file.launch_of(c);
        let positive = |x: f64| (x.is_finite() && x > 0.0).then_some(x);
        let mut reasons: Vec<&str> = c
            .unrepresentative
            .iter()
            .chain(launch.map(|l| l.unrepresentative.as_slice()).unwrap_or(&[]))
            .map(|u| u.kind.as_str())
            .collect();
        reasons.sort_unstable();
        reasons.dedup();
        out.push(CaseRow {
            case_id: c.id.clone(),
            label: c.params.label(),
            workload: c.params.workload.to_string(),
            nodes: c.params.nodes,
            devices_per_node: c.params.devices_per_node,
            bytes: c.bytes,
            setup: setup_of(launch),
            unrepresentative: reasons.join(","),
            n: t.samples_s.len(),
            median_s,
            lo_s,
            hi_s,
            busbw_c: c
                .bytes
                .zip(c.busbw_factor)
                .and_then(|(b, f)| positive(b as f64 * f / 1e9)),
            algbw_c: c.bytes.and_then(|b| positive(b as f64 / 1e9)),
            gflops_c: c.gflops.and_then(|g| positive(g * t.time_s)),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interval_brackets_the_median() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let (m, lo, hi) = median_interval(&xs).unwrap();
        assert_eq!(m, 50.5);
        assert!(lo < m && m < hi && lo >= 40.0 && hi <= 61.0, "{lo} {hi}");
        assert_eq!(median_interval(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(median_interval(&[]), None);
    }

    #[test]
    fn gpu_models_and_library_versions_are_read_by_name() {
        assert_eq!(
            gpu_model("NVIDIA H100 80GB HBM3 (0000:17:00.0, 79.1 GiB, cc 9.0, 132 SMs)"),
            "NVIDIA H100 80GB HBM3"
        );
        assert_eq!(
            gpu_model("AMD Instinct MI250X gfx90a GCD 0000:c1:00.0 (64.0 GiB, HIP ordinal 0)"),
            "AMD Instinct MI250X gfx90a"
        );
        let cuda = "STAND-IN: doubles. NCCL 2.28.3 collectives, one NCCL rank per GPU; cuBLAS 13.1.0 cublasGemmStridedBatchedEx; driver supports CUDA 13.0; driver API";
        assert_eq!(
            libraries(cuda),
            ["nccl=2.28.3", "cublas=13.1.0", "driver=cuda 13.0"]
        );
        let rocm = "RCCL 2.22.3 collectives; rocBLAS 4.4.0; HIP runtime 6.4.43482 (libamdhip64.so)";
        assert_eq!(
            libraries(rocm),
            ["rccl=2.22.3", "rocblas=4.4.0", "hip=6.4.43482"]
        );
        assert!(libraries("RCCL unavailable: no library").is_empty());
    }
}
