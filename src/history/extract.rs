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
    /// What changes performance without being the code: CPU model, MPI library, GEMM library,
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
    ];
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
}
