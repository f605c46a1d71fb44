//! The context box, first in the report: what ran where. Hosts and the cores they offered,
//! real or emulated nodes, the MPI library and the transport each set-up used, what each
//! topology executes, runs per set-up, load around the launches, and what the study cannot
//! show. Read from the launches' provenance, transport and host-load records only.

use super::setup_text;
use crate::present::count;
use crate::present::doc::{text, Block, Doc};
use crate::present::table::{Cell, Table};
use crate::report::analyze::Analysis;
use crate::results::schema::{HostInfo, LaunchRecord, Provenance};
use crate::units::format_gib;
use std::collections::{BTreeMap, BTreeSet};

/// The launches that ran the selected cases, once each, in input order.
fn launches<'a>(a: &Analysis<'a>) -> Vec<&'a LaunchRecord> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for e in &a.entries {
        if let Some(l) = e.launch {
            if seen.insert((e.source, l.launch_id.as_str())) {
                out.push(l);
            }
        }
    }
    out
}

pub(super) fn context(doc: &mut Doc, a: &Analysis<'_>) {
    let ls = launches(a);
    if ls.is_empty() {
        return;
    }
    doc.heading(2, "Context: what ran where");
    let provs: Vec<&Provenance> = ls.iter().filter_map(|l| l.provenance.as_ref()).collect();
    let mut hosts: BTreeMap<&str, &HostInfo> = BTreeMap::new();
    for p in &provs {
        for h in &p.hosts {
            hosts.entry(h.host.as_str()).or_insert(h);
        }
    }
    let mut defs = vec![("Hosts".to_string(), vec![text(hosts_text(&hosts))])];
    defs.push(("Nodes".into(), vec![text(nodes_text(&provs, hosts.len()))]));
    defs.push(("MPI".into(), vec![text(mpi_text(&provs))]));
    if let Some(settings) = library_settings_text(&provs) {
        defs.push(("Library settings".into(), vec![text(settings)]));
    }
    defs.push((
        "Cannot show".into(),
        vec![text(scope_text(&provs, hosts.len()))],
    ));
    doc.blocks.push(Block::Defs(defs));
    doc.table(setup_table(a, &ls), "context", None);
}

fn hosts_text(hosts: &BTreeMap<&str, &HostInfo>) -> String {
    if hosts.is_empty() {
        return "not recorded".into();
    }
    let each: Vec<String> = hosts
        .values()
        .map(|h| {
            let cores = match h.physical_cores {
                Some(c) if !h.smt_siblings.is_empty() => {
                    format!(
                        "{} on {}, SMT on {}",
                        count(h.logical_cpus as usize, "logical CPU", "logical CPUs"),
                        count(c as usize, "core", "cores"),
                        count(h.smt_siblings.len(), "core", "cores")
                    )
                }
                Some(c) => format!(
                    "{} on {}, no SMT",
                    count(h.logical_cpus as usize, "logical CPU", "logical CPUs"),
                    count(c as usize, "core", "cores")
                ),
                None => count(h.logical_cpus as usize, "logical CPU", "logical CPUs"),
            };
            let model = if h.cpu_model.is_empty() {
                "CPU model not recorded"
            } else {
                h.cpu_model.as_str()
            };
            format!(
                "{} ({model}, {cores}, {} memory)",
                h.host,
                // MemTotal is rarely a whole unit (24684092KiB): one decimal in GiB reads.
                format_gib(h.memory_bytes)
            )
        })
        .collect();
    format!(
        "{}: {}.",
        count(hosts.len(), "host", "hosts"),
        each.join("; ")
    )
}

fn nodes_text(provs: &[&Provenance], hosts: usize) -> String {
    let most = provs.iter().map(|p| p.nodes).max().unwrap_or(1);
    let emulated = provs.iter().any(|p| p.emulated_nodes && p.nodes > 1);
    if emulated {
        format!("emulated: up to {most} nodes grouped on {}; the nodes are groups of processes on one machine, not separate machines.", count(hosts, "host", "hosts"))
    } else if most <= 1 {
        "one node (no emulation): every set-up ran on a single host.".into()
    } else {
        format!(
            "real: up to {most} nodes on {}.",
            count(hosts, "host", "hosts")
        )
    }
}

fn mpi_text(provs: &[&Provenance]) -> String {
    let libs: BTreeSet<String> = provs
        .iter()
        .filter_map(|p| p.mpi_library.as_deref())
        .map(|l| {
            let first = l.lines().next().unwrap_or("");
            first.split(',').next().unwrap_or(first).trim().to_string()
        })
        .collect();
    let std: BTreeSet<&str> = provs
        .iter()
        .filter_map(|p| p.mpi_standard.as_deref())
        .collect();
    if libs.is_empty() {
        return "library not recorded.".into();
    }
    let std: Vec<&str> = std.into_iter().collect();
    format!(
        "{} (MPI standard {}); the transport of each set-up is in the table below.",
        libs.into_iter().collect::<Vec<_>>().join("; "),
        std.join(", ")
    )
}

fn scope_text(provs: &[&Provenance], hosts: usize) -> String {
    let emulated = provs.iter().any(|p| p.emulated_nodes && p.nodes > 1);
    if hosts <= 1 {
        let mut s = "one host: no network was measured; every MPI message stayed on this machine (shared memory or loopback), so nothing here predicts inter-node behaviour.".to_string();
        if emulated {
            s.push_str(" The emulated nodes are groups of processes on that host.");
        }
        s
    } else {
        format!("{hosts} hosts: the network between them was measured only at the scales listed; larger scales are predictions.")
    }
}

/// What a set-up runs, in words.
fn executes(l: &LaunchRecord) -> String {
    let s = &l.shape;
    let devices = s.devices();
    let world = l.provenance.as_ref().map_or(s.ranks(), |p| p.world_size);
    match s.topology {
        crate::params::Topology::Pure if devices <= 1 => {
            "1 rank, 1 device: no data moves between devices, no MPI peer".into()
        }
        crate::params::Topology::Pure if s.nodes <= 1 => format!(
            "{world} ranks, one per device, in separate processes: MPI between processes on one host"
        ),
        crate::params::Topology::Pure => format!(
            "{world} ranks, one per device, over {} nodes: MPI between processes",
            s.nodes
        ),
        crate::params::Topology::Hybrid if s.nodes <= 1 => format!(
            "hybrid on one node: {devices} threads in one process, no MPI call (an in-process combine)"
        ),
        crate::params::Topology::Hybrid => format!(
            "hybrid: threads within each node's process, MPI between the {} node processes",
            s.nodes
        ),
    }
}

/// The transport of a launch in words; for files without the record, what the environment
/// asked for.
fn transport_text(l: &LaunchRecord) -> String {
    if let Some(t) = &l.transport {
        let mut s = t.summary.clone();
        if let Some(set) = mca_text(&t.mca) {
            s.push_str(&format!("; MCA {set}"));
        }
        return s;
    }
    let env = l.provenance.as_ref().map(|p| &p.environment);
    let asked: Vec<String> = ["OMPI_MCA_pml", "OMPI_MCA_btl"]
        .iter()
        .filter_map(|k| env.and_then(|e| e.get(*k)).map(|v| format!("{k}={v}")))
        .collect();
    if asked.is_empty() {
        "not recorded".into()
    } else {
        format!("not recorded (environment: {})", asked.join(", "))
    }
}

/// The MCA settings not left at their default, grouped by where they came from with each
/// source named once (a parameter file's path repeated after every setting filled the cell).
fn mca_text(mca: &[crate::results::schema::McaSetting]) -> Option<String> {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for m in mca.iter().filter(|m| m.source != "default") {
        let setting = format!("{}={}", m.name, m.value);
        match groups.iter_mut().find(|(src, _)| *src == m.source) {
            Some((_, v)) => v.push(setting),
            None => groups.push((m.source.as_str(), vec![setting])),
        }
    }
    let set: Vec<String> = groups
        .iter()
        .map(|(src, v)| format!("{} ({src})", v.join(", ")))
        .collect();
    (!set.is_empty()).then(|| set.join("; "))
}

/// Prefixes of the variables that steer the collective libraries and their networks.
const LIBRARY_PREFIXES: &[&str] = &[
    "NCCL_",
    "RCCL_",
    "OFI_NCCL_",
    "NVSHMEM_",
    "FI_",
    // HPE Slingshot's CXI provider (LUMI: CXI_FORK_SAFE, CXI_FORK_SAFE_HP)
    "CXI_",
    "UCX_",
    "HCOLL_",
    "SHARP_",
];

/// The collective libraries' settings the launches ran under (`NAME=value`, each distinct
/// pair once), redacted again: a file from an older scalebench may hold a secret.
fn library_settings_text(provs: &[&Provenance]) -> Option<String> {
    let pairs: BTreeSet<String> = provs
        .iter()
        .flat_map(|p| &p.environment)
        .filter(|(k, _)| LIBRARY_PREFIXES.iter().any(|x| k.starts_with(x)))
        .map(|(k, v)| format!("{k}={}", crate::results::environment::redact(k, v)))
        .collect();
    (!pairs.is_empty()).then(|| pairs.into_iter().collect::<Vec<_>>().join(", "))
}

/// `a` or `a–b`, in the format given.
fn range(v: &[f64], fmt: impl Fn(f64) -> String) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        String::new()
    } else if fmt(lo) == fmt(hi) {
        fmt(lo)
    } else {
        format!("{}–{}", fmt(lo), fmt(hi))
    }
}

/// One row per set-up: runs, what it executes, its transport, and the load around its runs.
fn setup_table(a: &Analysis<'_>, ls: &[&LaunchRecord]) -> Table {
    let mut by_setup: BTreeMap<String, Vec<&LaunchRecord>> = BTreeMap::new();
    for l in ls {
        by_setup.entry(setup_text(a, &l.shape)).or_default().push(l);
    }
    let mut t = Table::new(&[
        "set-up",
        "runs",
        "executes",
        "transport",
        "load 1 min before",
        "load 1 min after",
        "steal",
        "other work (CPUs)",
        "other scalebench",
    ]);
    for (setup, runs) in by_setup {
        let loads: Vec<_> = runs.iter().filter_map(|l| l.host_load.as_ref()).collect();
        let before: Vec<f64> = loads.iter().filter_map(|h| h.loadavg_1m_before).collect();
        let after: Vec<f64> = loads.iter().filter_map(|h| h.loadavg_1m_after).collect();
        let per_cpu_s = |h: &&crate::results::schema::HostLoad| h.window_s * h.logical_cpus as f64;
        let steal: Vec<f64> = loads
            .iter()
            .filter(|h| per_cpu_s(h) > 0.0)
            .map(|h| h.steal_cpu_s / per_cpu_s(h))
            .collect();
        let other: Vec<f64> = loads
            .iter()
            .filter(|h| h.window_s > 0.0)
            .map(|h| h.other_cpu_s / h.window_s)
            .collect();
        let co = loads
            .iter()
            .filter(|h| !h.other_scalebench.is_empty())
            .count();
        let transports: BTreeSet<String> = runs.iter().map(|l| transport_text(l)).collect();
        t.push(vec![
            Cell::text(setup),
            Cell::UInt(runs.len() as u64),
            Cell::text(executes(runs[0])),
            Cell::text(transports.into_iter().collect::<Vec<_>>().join(" | ")),
            Cell::text(range(&before, |x| format!("{x:.2}"))),
            Cell::text(range(&after, |x| format!("{x:.2}"))),
            Cell::text(range(&steal, |x| format!("{:.1} %", 100.0 * x))),
            Cell::text(range(&other, |x| format!("{x:.2}"))),
            if loads.is_empty() {
                Cell::Empty
            } else {
                Cell::text(format!("{co} of {}", count(loads.len(), "run", "runs")))
            },
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_and_ranges() {
        assert_eq!(count(1, "size", "sizes"), "1 size");
        assert_eq!(count(3, "size", "sizes"), "3 sizes");
        assert_eq!(range(&[0.5, 1.25], |x| format!("{x:.2}")), "0.50–1.25");
        assert_eq!(range(&[0.5, 0.501], |x| format!("{x:.2}")), "0.50");
        assert_eq!(range(&[], |x| format!("{x:.2}")), "");
    }

    #[test]
    fn mca_sources_are_named_once() {
        use crate::results::schema::McaSetting;
        let m = |name: &str, value: &str, source: &str| McaSetting {
            name: name.into(),
            value: value.into(),
            source: source.into(),
        };
        let file = "/etc/openmpi/openmpi-mca-params.conf";
        let set = [
            m("pml", "ob1", file),
            m("btl", "self,tcp", "environment"),
            m("mtl", "", "default"),
            m("btl_tcp_if_include", "lo", file),
        ];
        assert_eq!(
            mca_text(&set).as_deref(),
            Some("pml=ob1, btl_tcp_if_include=lo (/etc/openmpi/openmpi-mca-params.conf); btl=self,tcp (environment)")
        );
        assert_eq!(mca_text(&[m("pml", "", "default")]), None);
    }
}
