//! `scalebench ceilings`: this host's ceilings (measured here, each with how) and whether the
//! GEMM library runs the CPU's best kernel, without running a study.

use crate::backend::gemm::blas::Blas;
use crate::results::ceilings::Ceiling;
use crate::topology::ceilings::{self, kernel, CpuOptions};
use serde::Serialize;

/// Why `scalebench ceilings` failed.
#[derive(Debug, thiserror::Error)]
pub enum CeilingsError {
    /// The CPUs this process may use are unknown, so no ceiling can say which it covers.
    #[error("cannot read this process's CPU affinity: {0}")]
    Affinity(#[source] std::io::Error),
    #[error("cannot write the ceilings as JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A `--gpu-values` file that cannot be read (the text names file and line).
    #[error("{0}")]
    GpuValues(String),
    #[error("--ib-rate-gbps {0}: give a positive rate in Gb/s, e.g. 400 for NDR 4X")]
    IbRate(f64),
}

impl CeilingsError {
    /// An unusable machine (2), or writing failed (4).
    pub fn exit_code(&self) -> u8 {
        match self {
            CeilingsError::Affinity(_) | CeilingsError::GpuValues(_) | CeilingsError::IbRate(_) => {
                crate::exit::EXIT_BAD_INPUT
            }
            CeilingsError::Json(_) => crate::exit::EXIT_RUNTIME,
        }
    }
}

/// What `scalebench ceilings` is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// JSON instead of text.
    pub json: bool,
    /// Leave out STREAM (the FMA peaks alone take a fraction of a second).
    pub no_stream: bool,
    /// Only the best instruction set's peaks.
    pub best_only: bool,
    /// Where sysfs is (`/sys`; tests give a recorded tree).
    pub sysfs_root: std::path::PathBuf,
    /// The rate InfiniBand ports should run at, Gb/s, when the user knows it.
    pub ib_rate_gbps: Option<f64>,
    /// GPU values from a file instead of the driver (tests).
    pub gpu_values: Option<std::path::PathBuf>,
}

/// What the command found.
#[derive(Debug, Serialize)]
pub struct HostCeilings {
    pub host: String,
    pub cpu_model: String,
    /// The CPUs this process may run on (cpulist).
    pub cpus: String,
    pub ceilings: Vec<Ceiling>,
    /// The GEMM library and its kernel (`None`: no CBLAS found, and why).
    pub gemm_library: Option<String>,
    pub gemm_kernel: Option<String>,
    pub warnings: Vec<String>,
    /// The sysfs tree the network ceilings were read from.
    pub sysfs_root: String,
}

/// Measures and gathers; nothing is written.
pub fn gather(req: &Request) -> Result<HostCeilings, CeilingsError> {
    let cpus = crate::topology::affinity::current_thread_cpus().map_err(CeilingsError::Affinity)?;
    let opts = CpuOptions {
        all_isas: !req.best_only,
        stream: !req.no_stream,
        ..CpuOptions::default()
    };
    if let Some(r) = req.ib_rate_gbps.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(CeilingsError::IbRate(r));
    }
    let gpus = match &req.gpu_values {
        Some(f) => Some(ceilings::gpu::GpuValues::from_file(f).map_err(CeilingsError::GpuValues)?),
        None => None,
    };
    let mut found = ceilings::cpu_ceilings(&cpus, &opts);
    if let Some(&first) = cpus.first() {
        found.extend(ceilings::theory::host(first));
    }
    let net = ceilings::network::read(
        &req.sysfs_root,
        &ceilings::network::Expect {
            ib_rate_gbps: req.ib_rate_gbps,
        },
    );
    found.extend(net.ceilings);
    let mut warnings: Vec<String> = net
        .warnings
        .into_iter()
        .map(|w| format!("{}: {}", w.subject, w.message))
        .collect();
    if let Some(g) = gpus {
        let g = ceilings::gpu::ceilings(&g);
        found.extend(g.ceilings);
        warnings.extend(g.warnings.into_iter().map(|w| w.message));
    } else {
        gpu_from_driver(&mut found, &mut warnings);
    }
    let info = crate::topology::host_info();
    let cpu = kernel::host_cpu();
    let (library, kern) = match Blas::load() {
        Ok(b) => {
            let k = kernel::BlasKernel {
                library: b.version().to_string(),
                kernel: b.kernel().map(str::to_string),
            };
            if let Some(w) = kernel::check(&cpu, &k, |v| std::env::var(v).ok()) {
                warnings.push(format!("{w}; {}", kernel_fix_measured(&b)));
            }
            (Some(k.library), k.kernel)
        }
        Err(e) => {
            warnings.push(format!("no CBLAS library: {e}"));
            (None, None)
        }
    };
    Ok(HostCeilings {
        host: info.host,
        cpu_model: info.cpu_model,
        cpus: crate::params::cpulist::format_cpulist(&cpus),
        ceilings: found,
        gemm_library: library,
        gemm_kernel: kern,
        warnings,
        sysfs_root: req.sysfs_root.display().to_string(),
    })
}

/// `--gemm gemm-crate` timed against the library, one thread each (the library's count is
/// restored after).
fn kernel_fix_measured(b: &Blas) -> String {
    use crate::backend::gemm::{fix_check, CrateGemm};
    let before = b.threads();
    b.set_threads(1);
    let outcome = match CrateGemm::new(&crate::backend::DevicePlan::unbound(1, 1)) {
        Ok(g) => fix_check::measure(b, &g, 1),
        Err(e) => fix_check::Outcome::Skipped(format!("not measured: {e}")),
    };
    if let Some(n) = before {
        b.set_threads(n);
    }
    fix_check::sentence(&outcome)
}

/// The GPUs' ceilings read live from NVML (a CUDA build), or one sentence saying why none.
#[cfg(feature = "cuda")]
fn gpu_from_driver(found: &mut Vec<Ceiling>, warnings: &mut Vec<String>) {
    match crate::backend::cuda::ceilings::read() {
        Ok((c, w)) => {
            found.extend(c);
            warnings.extend(w.into_iter().map(|w| w.message));
        }
        Err(why) => warnings.push(why),
    }
}

/// A build without the CUDA backend reads no GPU (`--gpu-values` still maps a file).
#[cfg(not(feature = "cuda"))]
fn gpu_from_driver(_: &mut Vec<Ceiling>, _: &mut Vec<String>) {}

/// Prints the ceilings; exit 0.
pub fn command(req: &Request) -> Result<u8, CeilingsError> {
    let h = gather(req)?;
    if req.json {
        let text = serde_json::to_string_pretty(&h).map_err(CeilingsError::Json)?;
        println!("{text}");
    } else {
        print!("{}", text(&h));
    }
    Ok(0)
}

/// The text form: one line per ceiling with its value and source, then how each was obtained.
pub fn text(h: &HostCeilings) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Ceilings of {} ({}), CPUs offered: {}",
        h.host,
        if h.cpu_model.is_empty() {
            "CPU model unknown"
        } else {
            &h.cpu_model
        },
        h.cpus
    );
    let w = h.ceilings.iter().map(|c| c.what.len()).max().unwrap_or(0);
    for c in &h.ceilings {
        let v = c.value.map_or("unknown".to_string(), |v| {
            format!("{} {}", crate::units::echo_f64(round3(v)), c.unit.symbol())
        });
        let _ = writeln!(s, "  {:<w$}  {:>16}  {}", c.what, v, c.source.name());
    }
    if !h.ceilings.iter().any(|c| c.id.starts_with("net.")) {
        let _ = writeln!(
            s,
            "  (no InfiniBand port and no physical network interface under {}/class)",
            h.sysfs_root
        );
    }
    let _ = writeln!(s, "How each was obtained:");
    for c in &h.ceilings {
        let _ = writeln!(s, "  {}: {}", c.id, c.detail);
    }
    match (&h.gemm_library, &h.gemm_kernel) {
        (Some(l), Some(k)) => {
            let _ = writeln!(s, "GEMM library: {l}; kernel: {k}");
        }
        (Some(l), None) => {
            let _ = writeln!(s, "GEMM library: {l}; kernel: not reported by the library");
        }
        _ => {}
    }
    for x in &h.warnings {
        let _ = writeln!(s, "warning: {x}");
    }
    s
}

/// Three significant digits: the run-to-run spread of these microbenchmarks is a few per cent.
fn round3(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let p = 10f64.powi(2 - v.abs().log10().floor() as i32);
    (v * p).round() / p
}
