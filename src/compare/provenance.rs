//! Whether two sets of results files can be compared, and how their set-ups differ.
//!
//! A difference that changes performance by itself — CPU model, GPU model, backend (and its
//! GEMM provider), MPI library and the thread level it provides, node count, emulated nodes,
//! binding — makes a comparison
//! meaningless as a regression check: a slower number would say "other machine", not "worse
//! code". Such a difference is *blocking*: `compare` refuses (exit 2) unless
//! `--allow-mismatch`, and then every verdict is marked as crossing set-ups. So are different
//! metric definitions (`metrics_version`), which make the numbers mean different things.
//! Versions, CPU affinity, the timer and the environment stay informational: finding what such
//! a change does is often the point, and they are said at the top of the output.

use crate::results::schema::{LaunchStatus, Provenance, ResultsFile};
use std::collections::{BTreeMap, BTreeSet};

/// One way the two runs' set-ups differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// What differs, e.g. `MPI library`.
    pub what: String,
    /// The baseline's value(s).
    pub baseline: String,
    /// The candidate's value(s).
    pub candidate: String,
    /// True when the numbers are not comparable (refused unless `--allow-mismatch`).
    pub blocking: bool,
}

/// Environment variables that identify a job or a node rather than configure it: they differ
/// between any two runs and say nothing about performance.
const ENV_IDENTITY: &[&str] = &[
    "JOB_ID",
    "JOBID",
    "JOB_NAME",
    "NODELIST",
    "NODENAME",
    "SUBMIT_",
    "_TIME",
    "ARRAY_",
    "_PID",
    "TOPOLOGY_ADDR",
    "CLUSTER_NAME",
    "SLURM_CONF",
    "SLURM_WORKING_DIR",
    // Random per cluster start or job step (Slurm's PMIx abort agent port, the controller's
    // address and port): set-up noise, not set-up.
    "_PORT",
    "SLURM_WORKING_CLUSTER",
];

fn provenances(f: &ResultsFile) -> impl Iterator<Item = &Provenance> {
    f.launches.iter().filter_map(|l| l.provenance.as_ref())
}

/// The distinct values of one property over the launches of a side's files.
fn values(files: &[&ResultsFile], get: impl Fn(&ResultsFile) -> Vec<String>) -> BTreeSet<String> {
    files.iter().flat_map(|f| get(f)).collect()
}

/// The GPU model of a device description (`NVIDIA H100 80GB HBM3 (PCI …); …` → the name),
/// `None` for CPU "devices".
fn gpu_model(name: &str) -> Option<String> {
    if name.starts_with("cpu") {
        return None;
    }
    let end = name.find(['(', ';']).unwrap_or(name.len());
    Some(name[..end].trim().to_string())
}

fn join(set: &BTreeSet<String>) -> String {
    if set.is_empty() {
        "(not recorded)".to_string()
    } else {
        set.iter().cloned().collect::<Vec<_>>().join("; ")
    }
}

/// One recorded property compared between the sides: its name, whether a difference blocks
/// the comparison, and its values in one file.
struct Property {
    what: &'static str,
    blocking: bool,
    /// Whether a side that did not record the property blocks too (false for properties
    /// newer than the format: older files are not a mismatch).
    unrecorded_blocks: bool,
    values: fn(&ResultsFile) -> Vec<String>,
}

const fn property(
    what: &'static str,
    blocking: bool,
    values: fn(&ResultsFile) -> Vec<String>,
) -> Property {
    Property {
        what,
        blocking,
        unrecorded_blocks: true,
        values,
    }
}

/// A blocking property that blocks only when both sides recorded it.
const fn recorded_property(
    what: &'static str,
    values: fn(&ResultsFile) -> Vec<String>,
) -> Property {
    Property {
        what,
        blocking: true,
        unrecorded_blocks: false,
        values,
    }
}

/// The properties [`differences`] compares, in the order it reports them.
const PROPERTIES: &[Property] = &[
    property("metric definitions (metrics_version)", true, |f| {
        vec![f.metrics_version.to_string()]
    }),
    property("results format version", false, |f| {
        vec![f.format_version.to_string()]
    }),
    property("scalebench version", false, |f| {
        let sha = f.generator.git_sha.as_deref().unwrap_or("unknown commit");
        vec![format!("{} ({sha})", f.generator.version)]
    }),
    property("CPU model", true, |f| {
        provenances(f)
            .flat_map(|p| p.hosts.iter().map(|h| h.cpu_model.clone()))
            .collect()
    }),
    property("GEMM provider", true, |f| {
        provenances(f)
            .filter_map(|p| p.gemm.as_ref())
            .map(|g| format!("{} ({})", g.provider, g.version))
            .collect()
    }),
    property("GPU model", true, |f| {
        provenances(f)
            .flat_map(|p| p.ranks.iter().flat_map(|r| &r.devices))
            .filter_map(|d| gpu_model(&d.name))
            .collect()
    }),
    property("node count", true, |f| {
        provenances(f).map(|p| p.nodes.to_string()).collect()
    }),
    // What a memory copy's speed depends on besides the CPU model: fast-string and vector
    // flags, the C library's memcpy, where buffers start within their pages. Informational:
    // files from before these were recorded say "(not recorded)".
    property("CPU copy flags (erms, fsrm, avx2, avx512f)", false, |f| {
        provenances(f)
            .flat_map(|p| p.hosts.iter())
            .filter_map(|h| h.copy_flags.as_ref())
            .map(|v| {
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(" ")
                }
            })
            .collect()
    }),
    property("C library", false, |f| {
        provenances(f)
            .flat_map(|p| p.hosts.iter())
            .filter_map(|h| h.libc.clone())
            .collect()
    }),
    property("buffer alignment policy", false, |f| {
        provenances(f)
            .filter_map(|p| p.buffer_policy.clone())
            .collect()
    }),
    property("logical CPUs per host", false, |f| {
        provenances(f)
            .flat_map(|p| p.hosts.iter().map(|h| h.logical_cpus.to_string()))
            .collect()
    }),
    property("MPI library", true, |f| {
        provenances(f)
            .map(|p| p.mpi_library.clone().unwrap_or_else(|| "unknown".into()))
            .collect()
    }),
    // The level MPI provides changes small-message latency (Open MPI's is higher under
    // funneled than under plain MPI_Init): two levels make a latency change of the set-up.
    recorded_property("MPI thread level (provided)", |f| {
        provenances(f)
            .filter_map(|p| p.mpi_thread_level)
            .map(|l| l.to_string())
            .collect()
    }),
    // The backend's kind blocks; its description is free text that changes with wording, so
    // it is shown, and what in it changes performance (the GEMM provider) is checked above.
    property("backend", true, |f| {
        provenances(f).map(|p| p.backend.kind.to_string()).collect()
    }),
    property("backend description", false, |f| {
        provenances(f).map(|p| p.backend.detail.clone()).collect()
    }),
    property("binding", true, |f| {
        f.launches
            .iter()
            .map(|l| l.shape.binding.to_string())
            .collect()
    }),
    property("emulated nodes", true, |f| {
        vec![f.run.emulated_nodes.to_string()]
    }),
    property("rank CPU affinity", false, |f| {
        provenances(f)
            .map(|p| {
                p.ranks
                    .iter()
                    .map(|r| format!("rank {}: cpus {}", r.rank, r.cpus))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .collect()
    }),
    property("timer", false, |f| {
        provenances(f).map(|p| p.timer.source.clone()).collect()
    }),
];

/// How the `baseline` runs and the `candidate` runs differ, blocking differences first.
pub(crate) fn differences(
    baseline: &[&ResultsFile],
    candidate: &[&ResultsFile],
) -> Vec<Difference> {
    let mut out: Vec<Difference> = PROPERTIES
        .iter()
        .filter_map(|p| {
            let (b, c) = (values(baseline, p.values), values(candidate, p.values));
            let recorded = p.unrecorded_blocks || (!b.is_empty() && !c.is_empty());
            (b != c).then(|| Difference {
                what: p.what.to_string(),
                baseline: join(&b),
                candidate: join(&c),
                blocking: p.blocking && recorded,
            })
        })
        .collect();
    if let Some(d) = transport_difference(baseline, candidate) {
        out.push(d);
    }
    if let Some(d) = environment_difference(baseline, candidate) {
        out.push(d);
    }
    out.sort_by_key(|d| !d.blocking);
    out
}

/// The transport each set-up's launches recorded (`shared memory (pml ob1, btl vader)`, `TCP
/// over loopback (...)`), for the set-ups whose transport differs between the sides: set-up
/// label → (baseline's, candidate's). Set-ups one side did not record (older files, failed
/// launches) are left out.
pub(crate) fn transport_changes(
    baseline: &[&ResultsFile],
    candidate: &[&ResultsFile],
) -> BTreeMap<String, (String, String)> {
    let by_setup = |files: &[&ResultsFile]| -> BTreeMap<String, BTreeSet<String>> {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for l in files.iter().flat_map(|f| &f.launches) {
            if let Some(t) = &l.transport {
                m.entry(l.shape.label())
                    .or_default()
                    .insert(t.summary.clone());
            }
        }
        m
    };
    let (b, c) = (by_setup(baseline), by_setup(candidate));
    let join = |v: &BTreeSet<String>| v.iter().cloned().collect::<Vec<_>>().join(" | ");
    b.iter()
        .filter_map(|(k, bv)| {
            let cv = c.get(k).filter(|cv| *cv != bv)?;
            Some((k.clone(), (join(bv), join(cv))))
        })
        .collect()
}

/// The set-ups whose transport differs, as one difference: what carried the messages
/// explains a change better than the MCA line that chose it. Informational, like the
/// environment: a changed transport is often what is being tested.
fn transport_difference(
    baseline: &[&ResultsFile],
    candidate: &[&ResultsFile],
) -> Option<Difference> {
    let changes = transport_changes(baseline, candidate);
    if changes.is_empty() {
        return None;
    }
    let show = |pick: fn(&(String, String)) -> &String| {
        changes
            .iter()
            .map(|(k, v)| format!("{k}: {}", pick(v)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    Some(Difference {
        what: TRANSPORT.to_string(),
        baseline: show(|v| &v.0),
        candidate: show(|v| &v.1),
        blocking: false,
    })
}

/// The name of the transport difference.
pub(crate) const TRANSPORT: &str = "MPI transport (recorded per set-up)";
/// The name of the environment difference.
pub(crate) const ENVIRONMENT: &str = "environment";

/// The performance-relevant environment variables that differ (job identities ignored).
fn environment_difference(
    baseline: &[&ResultsFile],
    candidate: &[&ResultsFile],
) -> Option<Difference> {
    let env = |files: &[&ResultsFile]| -> BTreeMap<String, BTreeSet<String>> {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for p in files.iter().flat_map(|f| provenances(f)) {
            for (k, v) in &p.environment {
                if !ENV_IDENTITY.iter().any(|s| k.contains(s)) {
                    m.entry(k.clone()).or_default().insert(v.clone());
                }
            }
        }
        m
    };
    let (b, c) = (env(baseline), env(candidate));
    let keys: BTreeSet<&String> = b.keys().chain(c.keys()).collect();
    let show = |m: &BTreeMap<String, BTreeSet<String>>, k: &String| match m.get(k) {
        Some(v) => format!("{k}={}", v.iter().cloned().collect::<Vec<_>>().join("|")),
        None => format!("{k} unset"),
    };
    let differing: Vec<&String> = keys
        .into_iter()
        .filter(|k| b.get(*k) != c.get(*k))
        .collect();
    if differing.is_empty() {
        return None;
    }
    Some(Difference {
        what: ENVIRONMENT.to_string(),
        baseline: differing
            .iter()
            .map(|k| show(&b, k))
            .collect::<Vec<_>>()
            .join(", "),
        candidate: differing
            .iter()
            .map(|k| show(&c, k))
            .collect::<Vec<_>>()
            .join(", "),
        blocking: false,
    })
}

/// Launches of `file` that did not finish cleanly (their missing cases are explained by it).
pub(crate) fn launch_warnings(file: &ResultsFile, side: &str) -> Vec<String> {
    file.launches
        .iter()
        .filter(|l| l.status != LaunchStatus::Ok)
        .map(|l| {
            let status = match l.status {
                LaunchStatus::Ok => "ok",
                LaunchStatus::Failed => "failed",
                LaunchStatus::Timeout => "timed out",
                LaunchStatus::Incomplete => "incomplete",
            };
            format!(
                "{side} launch {} ({}) {status}: cases may be missing or failed",
                l.launch_id,
                l.shape.label()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn gpu_models_drop_the_bus_id_and_skip_cpus() {
        assert_eq!(
            super::gpu_model("NVIDIA H100 80GB HBM3 (PCI 0000:1b:00.0, cc 9.0); nearby CPUs 0-7"),
            Some("NVIDIA H100 80GB HBM3".into())
        );
        assert_eq!(super::gpu_model("cpu worker thread 1"), None);
    }

    use super::*;
    use crate::results::io::parse_results;
    use std::path::Path;

    fn golden() -> ResultsFile {
        let text = include_str!("../../tests/golden/results-v1.json");
        parse_results(Path::new("golden"), text).unwrap()
    }

    #[test]
    fn same_file_has_no_differences() {
        let g = golden();
        assert!(differences(&[&g], &[&g]).is_empty());
        assert!(launch_warnings(&g, "baseline").is_empty());
    }

    #[test]
    fn each_difference_is_named_and_metrics_block() {
        let a = golden();
        let mut b = golden();
        b.metrics_version = 2;
        b.generator.version = "0.2.0".into();
        let p = b.launches[0].provenance.as_mut().unwrap();
        p.mpi_library = Some("MPICH 4.1".into());
        p.hosts[0].cpu_model = "AMD EPYC 7763".into();
        p.ranks[1].cpus = "0".into();
        p.environment.insert("UCX_TLS".into(), "rc".into());
        p.environment.insert("SLURM_JOB_ID".into(), "1234".into());
        p.environment
            .insert("SLURM_PMIXP_ABORT_AGENT_PORT".into(), "44839".into());
        p.environment.insert(
            "SLURM_WORKING_CLUSTER".into(),
            "scalebench:localhost:18065:9728:109".into(),
        );
        b.run.emulated_nodes = true;
        b.launches[0].status = LaunchStatus::Failed;
        let d = differences(&[&a], &[&b]);
        let names: Vec<&str> = d.iter().map(|x| x.what.as_str()).collect();
        assert_eq!(
            names,
            [
                "metric definitions (metrics_version)",
                "CPU model",
                "MPI library",
                "emulated nodes",
                "scalebench version",
                "rank CPU affinity",
                "environment"
            ]
        );
        let blocking: Vec<&str> = d
            .iter()
            .filter(|x| x.blocking)
            .map(|x| x.what.as_str())
            .collect();
        assert_eq!(
            blocking,
            [
                "metric definitions (metrics_version)",
                "CPU model",
                "MPI library",
                "emulated nodes"
            ]
        );
        let mpi = d.iter().find(|x| x.what == "MPI library").unwrap();
        assert!(mpi.baseline.starts_with("Open MPI v4.1.4") && mpi.candidate == "MPICH 4.1");
        let env = d.last().unwrap();
        assert_eq!(env.baseline, "UCX_TLS unset");
        assert_eq!(env.candidate, "UCX_TLS=rc");
        // several runs a side: values are pooled over the runs
        let both = differences(&[&a, &a], &[&a, &b]);
        assert!(both.iter().any(|x| x.what == "CPU model" && x.blocking));
        let w = launch_warnings(&b, "candidate");
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("failed") && w[0].contains("candidate"),
            "{w:?}"
        );
    }

    #[test]
    fn a_different_thread_level_blocks_once_both_sides_recorded_it() {
        use crate::params::ThreadLevel;
        let at = |l: Option<ThreadLevel>| {
            let mut f = golden();
            f.launches[0].provenance.as_mut().unwrap().mpi_thread_level = l;
            f
        };
        let (single, funneled) = (
            at(Some(ThreadLevel::Single)),
            at(Some(ThreadLevel::Funneled)),
        );
        let d = differences(&[&single], &[&funneled]);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            (
                d[0].what.as_str(),
                d[0].baseline.as_str(),
                d[0].candidate.as_str()
            ),
            ("MPI thread level (provided)", "single", "funneled")
        );
        assert!(d[0].blocking);
        assert!(differences(&[&funneled], &[&at(Some(ThreadLevel::Funneled))]).is_empty());
        // A file from before the level was recorded: listed, not blocking.
        let old = differences(&[&at(None)], &[&funneled]);
        assert_eq!(old.len(), 1);
        assert!(!old[0].blocking && old[0].baseline == "(not recorded)");
    }

    #[test]
    fn copy_speed_provenance_differences_are_listed() {
        let mut a = golden();
        let mut b = golden();
        for (f, flags, libc, policy) in [
            (
                &mut a,
                vec!["erms", "avx2"],
                "glibc 2.36",
                "page-aligned + offset 0 B",
            ),
            (
                &mut b,
                vec!["erms", "fsrm", "avx2", "avx512f"],
                "glibc 2.39",
                "page-aligned + offset 16 B",
            ),
        ] {
            let p = f.launches[0].provenance.as_mut().unwrap();
            p.hosts[0].copy_flags = Some(flags.iter().map(|x| x.to_string()).collect());
            p.hosts[0].libc = Some(libc.into());
            p.buffer_policy = Some(policy.into());
        }
        let d = differences(&[&a], &[&b]);
        let got: Vec<(&str, &str, &str)> = d
            .iter()
            .map(|x| (x.what.as_str(), x.baseline.as_str(), x.candidate.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "CPU copy flags (erms, fsrm, avx2, avx512f)",
                    "erms avx2",
                    "erms fsrm avx2 avx512f"
                ),
                ("C library", "glibc 2.36", "glibc 2.39"),
                (
                    "buffer alignment policy",
                    "page-aligned + offset 0 B",
                    "page-aligned + offset 16 B"
                ),
            ]
        );
        assert!(d.iter().all(|x| !x.blocking));
        // A file from before these were recorded is not a mismatch that blocks.
        let old = golden();
        assert!(differences(&[&old], &[&b]).iter().all(|x| !x.blocking));
    }
}
