//! The local launcher's binding for hybrid launches, through the real binary under real
//! `mpirun` (`scalebench sweep`): one rank driving a worker per CPU of this machine, bound a
//! core each, fits the machine and is not called oversubscribed; two such ranks (two emulated
//! nodes) on the same CPUs are.
#![cfg(feature = "mpi")]

mod common;

use common::{sweep_ok, tmpdir};

/// The CPUs a `core` binding spreads devices over (hwloc's view of this host).
fn host_pus() -> usize {
    scalebench::topology::hwloc::discover()
        .expect("hwloc reads this machine")
        .pus()
        .len()
}

/// Runs a hybrid sweep of `nodes` (emulated beyond one) × `per_node` devices bound to cores.
fn hybrid_sweep(tag: &str, nodes: u32, per_node: usize) -> common::wire::ResultsFile {
    let dir = tmpdir(tag);
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        format!(
            r#"
name = "{tag}"
[axes]
nodes = {nodes}
ranks_per_node = {per_node}
topology = "hybrid"
binding = "core"
workloads = "allreduce"
sizes = "1KiB"
in_place = "no"
[run]
time_budget_s = 0.02
[launch]
oversubscribe = true
timeout_s = 120
"#
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let r = sweep_ok(&spec, &out);
    assert_eq!(r.launches.len(), 1);
    assert!(r.cases.iter().all(|c| c.status == "ok"), "{:?}", r.cases);
    r
}

#[test]
fn a_hybrid_rank_with_a_worker_per_cpu_is_not_oversubscribed() {
    let g = host_pus();
    let r = hybrid_sweep("hybrid-fits", 1, g);
    let l = &r.launches[0];
    let kinds: Vec<&str> = l.unrepresentative.iter().map(|w| w.kind.as_str()).collect();
    assert!(
        !kinds.contains(&"oversubscribed") && !kinds.contains(&"shared_cores"),
        "{:?}",
        l.unrepresentative
    );
    // Every worker bound to its own CPUs, and the rank records all of them as its own.
    let p = l.provenance.as_ref().expect("provenance");
    assert_eq!(p.ranks.len(), 1);
    let rank = &p.ranks[0];
    assert_eq!(rank.devices.len(), g);
    let mut seen: Vec<u32> = Vec::new();
    for d in &rank.devices {
        let cpus = scalebench::topology::affinity::parse_cpulist(&d.cpus).unwrap();
        assert!(!cpus.is_empty(), "device {} unbound", d.index);
        seen.extend(cpus);
    }
    seen.sort_unstable();
    let all = scalebench::topology::affinity::parse_cpulist(&rank.cpus).unwrap();
    assert_eq!(seen.len(), g, "one CPU per worker: {:?}", rank.devices);
    assert_eq!(all, seen, "the rank's CPUs are its workers' CPUs");
    for c in &r.cases {
        assert!(
            c.unrepresentative
                .iter()
                .all(|w| w.kind != "oversubscribed"),
            "{:?}",
            c.unrepresentative
        );
    }
}

#[test]
fn two_hybrid_ranks_with_a_worker_per_cpu_each_are_oversubscribed() {
    let g = host_pus();
    let r = hybrid_sweep("hybrid-over", 2, g);
    let l = &r.launches[0];
    let over = l
        .unrepresentative
        .iter()
        .find(|w| w.kind == "oversubscribed")
        .unwrap_or_else(|| panic!("not flagged: {:?}", l.unrepresentative));
    assert!(
        over.detail.contains(&format!("{} busy thread(s)", 2 * g))
            && over.detail.contains(&format!("{g} CPU(s) offered")),
        "{}",
        over.detail
    );
}
