//! The machine: who and where each rank is, CPU affinity, and host facts for provenance.

pub mod affinity;
pub mod binding;
pub mod ceilings;
pub mod command;
#[cfg(feature = "mpi")]
pub mod hwloc;
pub mod identity;
pub mod load;
pub(crate) mod machine;
pub mod report;
pub mod switches;
pub mod transport;

use crate::results::schema::HostInfo;
use std::collections::BTreeMap;

/// This host's name as the OS reports it.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the pointer and length describe `buf`, a live local of 256 bytes, so gethostname
    // writes only inside it. A truncated name may lack its NUL: the code below needs none.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc == 0 {
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "unknown".to_string()
    }
}

/// CPU model, CPU counts and memory of this host (Linux /proc; unknowns are empty or 0).
pub fn host_info() -> HostInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    HostInfo {
        host: hostname(),
        cpu_model: cpu_model(&cpuinfo),
        logical_cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(0)
            .max(online_cpus()),
        physical_cores: physical_cores(&cpuinfo),
        memory_bytes: mem_total_bytes(&meminfo),
        copy_flags: (!cpuinfo.is_empty()).then(|| copy_flags(&cpuinfo)),
        libc: libc_version(),
        smt_siblings: smt_sibling_groups()
            .iter()
            .map(|g| affinity::format_cpulist(g))
            .collect(),
    }
}

/// The SMT sibling groups of this host's online CPUs (sysfs `thread_siblings_list`), those
/// with more than one CPU, in CPU order; empty without SMT or sysfs.
pub fn smt_sibling_groups() -> Vec<Vec<u32>> {
    let mut groups: std::collections::BTreeSet<Vec<u32>> = std::collections::BTreeSet::new();
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu") else {
        return Vec::new();
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(n) = name.to_str().and_then(|n| n.strip_prefix("cpu")) else {
            continue;
        };
        if n.parse::<u32>().is_err() {
            continue;
        }
        let list = std::fs::read_to_string(e.path().join("topology/thread_siblings_list"));
        if let Some(cpus) = list.ok().and_then(|l| affinity::parse_cpulist(l.trim())) {
            if cpus.len() > 1 {
                groups.insert(cpus);
            }
        }
    }
    groups.into_iter().collect()
}

/// CPU flags that change how fast memory is copied: fast-string `rep movsb` (erms, fsrm) and
/// the vector widths glibc's `memcpy` picks from (avx2, avx512f).
pub const COPY_FLAGS: &[&str] = &["erms", "fsrm", "avx2", "avx512f"];

/// Those of [`COPY_FLAGS`] the first CPU's `flags` line lists, in that order.
fn copy_flags(cpuinfo: &str) -> Vec<String> {
    let flags: std::collections::BTreeSet<&str> = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "flags").then_some(v)
        })
        .map(|v| v.split_whitespace().collect())
        .unwrap_or_default();
    COPY_FLAGS
        .iter()
        .filter(|f| flags.contains(**f))
        .map(|f| f.to_string())
        .collect()
}

/// `glibc X.Y` (where the binary is linked against glibc).
fn libc_version() -> Option<String> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: glibc returns a pointer to a NUL-terminated string in its read-only data,
        // valid and unchanged for the life of the process; it is copied out at once.
        let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        Some(format!("glibc {}", v.to_string_lossy()))
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// The current clock of each CPU in `cpus`, MHz: cpufreq's `scaling_cur_freq` where the
/// kernel exposes it, else `cpu MHz` of /proc/cpuinfo; CPUs without a reading are left out
/// (empty when the clock cannot be read, e.g. in many VMs, or `cpus` is empty).
pub fn cpu_mhz(cpus: &[u32]) -> Vec<f64> {
    if cpus.is_empty() {
        return Vec::new();
    }
    let sys: Vec<f64> = cpus
        .iter()
        .filter_map(|c| {
            std::fs::read_to_string(format!(
                "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq"
            ))
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .map(|khz| khz / 1000.0)
        })
        .collect();
    if !sys.is_empty() {
        return sys;
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo_mhz(&info)
        .into_iter()
        .filter(|(c, _)| cpus.contains(c))
        .map(|(_, m)| m)
        .collect()
}

/// (processor, cpu MHz) pairs of /proc/cpuinfo.
fn cpuinfo_mhz(cpuinfo: &str) -> Vec<(u32, f64)> {
    let mut out = Vec::new();
    let mut cpu = None;
    for line in cpuinfo.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        match k.trim() {
            "processor" => cpu = v.trim().parse::<u32>().ok(),
            "cpu MHz" => {
                if let (Some(c), Ok(m)) = (cpu, v.trim().parse::<f64>()) {
                    out.push((c, m));
                }
            }
            _ => {}
        }
    }
    out
}

fn online_cpus() -> u32 {
    // SAFETY: sysconf takes an integer name and no pointers, so it cannot touch our memory; it
    // only reads system state. Its error value (-1) becomes 0 below. std has no equivalent:
    // available_parallelism counts the CPUs this process may use, not those online.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(0) as u32
}

fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// Distinct (physical id, core id) pairs.
fn physical_cores(cpuinfo: &str) -> Option<u32> {
    let mut pairs = std::collections::BTreeSet::new();
    let (mut phys, mut core) = (None, None);
    for line in cpuinfo.lines().chain(std::iter::once("")) {
        if line.trim().is_empty() {
            if let (Some(p), Some(c)) = (phys.take(), core.take()) {
                pairs.insert((p, c));
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            match k.trim() {
                "physical id" => phys = v.trim().parse::<u32>().ok(),
                "core id" => core = v.trim().parse::<u32>().ok(),
                _ => {}
            }
        }
    }
    (!pairs.is_empty()).then_some(pairs.len() as u32)
}

fn mem_total_bytes(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb.saturating_mul(1024))
}

/// This host's memory (`MemTotal`), bytes; `None` where /proc/meminfo does not say.
pub fn mem_total_bytes_now() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    Some(mem_total_bytes(&meminfo)).filter(|b| *b > 0)
}

/// Environment variable prefixes that shape performance and are recorded with results.
const ENV_PREFIXES: &[&str] = &[
    "OMPI_",
    "PMIX_",
    "PMI_",
    "SLURM_",
    "SLURMD_",
    "UCX_",
    "NCCL_",
    "CUDA_",
    "HWLOC_",
    "OMP_",
    "I_MPI_",
    "MPICH_",
    "MV2_",
    "FI_",
    // HPE Slingshot's CXI provider (LUMI: CXI_FORK_SAFE, CXI_FORK_SAFE_HP).
    "CXI_",
    // Collective libraries and their network plugins (aws-ofi-nccl reads OFI_NCCL_*).
    "RCCL_",
    "OFI_NCCL_",
    "NVSHMEM_",
    "TORCH_NCCL_",
    "HCOLL_",
    "SHARP_",
    "PSM2_",
    "PSM3_",
    "MLX5_",
    "HSA_",
    "ROCR_",
    "SCALEBENCH_",
    "MPI_",
    // BLAS settings (e.g. OPENBLAS_CORETYPE picks the GEMM kernels: a factor of 2 here).
    "OPENBLAS_",
    "GOTO_",
    "MKL_",
    "BLIS_",
    "FLEXIBLAS",
];
/// Launcher internals (session directories, rendezvous URIs, per-rank ids): not settings.
const ENV_INTERNAL: &[&str] = &[
    "OMPI_MCA_orte_",
    "OMPI_MCA_ess",
    "OMPI_MCA_pmix",
    "OMPI_MCA_initial_wdir",
    "OMPI_FILE_LOCATION",
    "OMPI_ARGV",
    "OMPI_COMMAND",
    "OMPI_APP_CTX_",
    "OMPI_FIRST_RANKS",
    "OMPI_NUM_APP_CTX",
    "OMPI_COMM_WORLD_",
    "OMPI_UNIVERSE_SIZE",
    "PMIX_",
    "PMI_FD",
    "PMI_RANK",
    "PMI_SIZE",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_TASK_PID",
    "SLURM_STEP_",
    "SLURM_SRUN_COMM",
    "SLURM_LAUNCH_NODE_IPADDR",
    "SLURM_GTIDS",
];
const ENV_EXACT: &[&str] = &[
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "LD_LIBRARY_PATH",
];

/// The process environment as text, as `std::env::vars_os` gives it: a variable whose name
/// or value is not UTF-8 (an `OLDPWD` of bytes left by `cd`) is kept with U+FFFD for its bad
/// bytes (`std::env::vars` panics on it, in every rank). Also returns the names of the
/// variables so converted.
pub fn environment_lossy(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> (Vec<(String, String)>, Vec<String>) {
    let mut lossy = Vec::new();
    let vars = vars
        .map(|(k, v)| match (k.into_string(), v.into_string()) {
            (Ok(k), Ok(v)) => (k, v),
            (k, v) => {
                let text = |r: Result<String, std::ffi::OsString>| {
                    r.unwrap_or_else(|os| os.to_string_lossy().into_owned())
                };
                let k = text(k);
                lossy.push(k.clone());
                (k, text(v))
            }
        })
        .collect();
    (vars, lossy)
}

/// [`captured_environment`] of this process's environment (read as OS strings), and a
/// warning for each recorded variable that was not UTF-8 (recorded with U+FFFD).
pub fn captured_process_environment() -> (BTreeMap<String, String>, Vec<String>) {
    let (vars, lossy) = environment_lossy(std::env::vars_os());
    let env = captured_environment(vars.into_iter());
    let notes = lossy
        .into_iter()
        .filter(|k| env.contains_key(k))
        .map(|k| {
            format!(
                "environment variable {}: not UTF-8; recorded with U+FFFD in place of its invalid bytes",
                crate::units::shorten(&k)
            )
        })
        .collect();
    (env, notes)
}

/// The performance-relevant environment, with anything that looks like a secret redacted.
pub fn captured_environment(
    vars: impl Iterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    vars.filter(|(k, _)| {
        ENV_PREFIXES.iter().any(|p| k.starts_with(p)) || ENV_EXACT.contains(&k.as_str())
    })
    .filter(|(k, _)| !ENV_INTERNAL.iter().any(|p| k.starts_with(p)) || k.starts_with("PMIX_MCA_"))
    .map(|(k, v)| {
        let v = crate::results::environment::redact(&k, &v);
        (k, v)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let cpu = "processor\t: 0\nmodel name\t: Test CPU @ 2GHz\nphysical id\t: 0\ncore id\t: 0\n\nprocessor\t: 1\nmodel name\t: Test CPU @ 2GHz\nphysical id\t: 0\ncore id\t: 0\n\nprocessor\t: 2\nphysical id\t: 0\ncore id\t: 1\n";
        assert_eq!(cpu_model(cpu), "Test CPU @ 2GHz");
        let flags = "processor\t: 0\nflags\t\t: fpu avx512f sse erms avx2 avx512bw\n\nprocessor\t: 1\nflags\t\t: fsrm\n";
        assert_eq!(copy_flags(flags), vec!["erms", "avx2", "avx512f"]);
        assert!(copy_flags("").is_empty());
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        assert!(libc_version().unwrap().starts_with("glibc 2."));
        assert_eq!(physical_cores(cpu), Some(2));
        assert_eq!(
            mem_total_bytes("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            24576000 * 1024
        );
        let h = host_info();
        assert!(h.logical_cpus >= 1 && h.memory_bytes > 0 && !h.host.is_empty());
        let mhz = "processor\t: 0\ncpu MHz\t\t: 2695.946\n\nprocessor\t: 1\ncpu MHz\t\t: 1200\n";
        assert_eq!(cpuinfo_mhz(mhz), vec![(0, 2695.946), (1, 1200.0)]);
        assert!(cpu_mhz(&[]).is_empty());
    }

    #[test]
    fn environment_is_filtered_and_redacted() {
        let vars = vec![
            ("OMPI_MCA_btl".to_string(), "self,tcp".to_string()),
            (
                "OMPI_MCA_orte_hnp_uri".to_string(),
                "tcp://10.0.0.1:1".to_string(),
            ),
            ("PMIX_SERVER_URI2".to_string(), "x".to_string()),
            ("HOME".to_string(), "/root".to_string()),
            ("SLURM_JOB_ID".to_string(), "7".to_string()),
            ("NCCL_API_KEY".to_string(), "hunter2".to_string()),
            ("RANK".to_string(), "0".to_string()),
            ("FI_PROVIDER".to_string(), "efa".to_string()),
            ("UCX_TLS".to_string(), "rc,sm".to_string()),
            ("OFI_NCCL_PROTOCOL".to_string(), "RDMA".to_string()),
            ("RCCL_MSCCL_ENABLE".to_string(), "0".to_string()),
            ("UCX_IB_SECRET".to_string(), "s3".to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), "s4".to_string()),
        ];
        let env = captured_environment(vars.into_iter());
        // Settings of the collective libraries kept with their values; AWS_ is no prefix
        // recorded (and would be redacted), UCX_IB_SECRET is recorded redacted.
        assert_eq!(env.len(), 9, "{env:?}");
        assert_eq!(env["FI_PROVIDER"], "efa");
        assert_eq!(env["UCX_TLS"], "rc,sm");
        assert_eq!(env["OFI_NCCL_PROTOCOL"], "RDMA");
        assert_eq!(env["RCCL_MSCCL_ENABLE"], "0");
        assert_eq!(env["UCX_IB_SECRET"], "<redacted>");
        assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
        assert!(!env.contains_key("HOME"));
        assert_eq!(env["NCCL_API_KEY"], "<redacted>");
        assert_eq!(env["OMPI_MCA_btl"], "self,tcp");
    }
}
