//! The local launcher's binding for hybrid launches, through the real binary under real
//! `mpirun` (`scalebench sweep`): one rank driving a worker per CPU of this machine, bound a
//! core each, fits the machine and is not called oversubscribed; two such ranks (two emulated
//! nodes) on the same CPUs are. A hybrid rank that `mpirun` itself bound to one CPU is told
//! how to launch it instead, and its workers park rather than spin (the timing of both set-ups
//! against pure ranks is ci/bench.sh's `hybrid-shared` part); the local launcher never starts
//! such a rank.

use crate::common;

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
devices_per_node = {per_node}
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
        over.detail.contains(&format!("{} busy threads", 2 * g))
            && over
                .detail
                .contains(&format!("{g} CPU{} offered", if g == 1 { "" } else { "s" })),
        "{}",
        over.detail
    );
}

/// `mpirun -np 1 --bind-to core` (mpirun's default for one rank): the two workers of a hybrid
/// rank get one CPU between them. The launch says so with the fix on screen and in the
/// provenance, and still measures (the workers park instead of spinning); with
/// `--bind-to none` the warning is gone.
#[test]
fn a_hybrid_rank_bound_to_one_cpu_is_told_the_fix() {
    let run = |bind: &str| {
        let out = tmpdir(&format!("hybrid-one-cpu-{bind}")).join("run");
        let args = [
            "run",
            "--out",
            out.to_str().unwrap(),
            "-w",
            "allreduce",
            "-s",
            "8B",
            "--in-place",
            "no",
            "--timing",
            "isolated",
            "--topology",
            "hybrid",
            "--devices-per-node",
            "2",
            "-n",
            "200",
        ];
        let ran = common::mpirun_with(1, &["--bind-to", bind], &args);
        ran.assert_code(0);
        (ran, common::read_results(&out))
    };
    let (ran, r) = run("core");
    let warning = |w: &String| w.contains("hybrid worker threads share 1 CPU");
    let prov = r.launches[0].provenance.as_ref().unwrap();
    let w = prov.warnings.iter().find(|w| warning(w));
    let w = w.unwrap_or_else(|| panic!("{:?}", prov.warnings));
    for fix in ["mpirun --bind-to none", "--map-by ppr:1:node:PE=2", "park"] {
        assert!(w.contains(fix), "{fix}: {w}");
        assert!(ran.stdout.contains(fix), "{fix}: {}", ran.stdout);
    }
    assert!(r.cases.iter().all(|c| c.status == "ok"));
    let (_, r) = run("none");
    let prov = r.launches[0].provenance.as_ref().unwrap();
    assert!(!prov.warnings.iter().any(warning), "{:?}", prov.warnings);
}

/// The local launcher starts every launch with mpirun's own binding off, so a hybrid rank is
/// never confined to one CPU by it (each rank binds its workers itself).
#[test]
fn the_local_launcher_never_binds_a_hybrid_rank_to_one_cpu() {
    let dir = tmpdir("hybrid-dry");
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        "name = \"d\"\n[axes]\ndevices_per_node = 2\ntopology = [\"pure\", \"hybrid\"]\nsizes = \"8B\"\n",
    )
    .unwrap();
    let r = common::solo(&["sweep", "--dry-run", spec.to_str().unwrap()]);
    r.assert_code(0);
    let lines: Vec<&str> = r.stdout.lines().filter(|l| l.contains("mpirun")).collect();
    assert_eq!(lines.len(), 2, "{}", r.stdout);
    for l in lines {
        assert!(l.contains("--bind-to none"), "{l}");
    }
}
