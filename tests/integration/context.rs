//! What ran where, with the real binary under mpirun: the demo study's context box (CPU, cores,
//! transport per set-up, the hybrid-on-one-node scope) and a one-node report without filler;
//! the transport recorded for shared memory and for `btl self,tcp` (the emulated-cluster
//! profile); two launches run at once on this host, both marked co-scheduled and kept out of
//! the pure-vs-hybrid winners.

use crate::common;

use common::csv::read_csv;
use common::{bin, mpi_env, mpirun_with, read_results, s, solo_held, tmpdir};
use std::collections::BTreeMap;
use std::process::Command;

/// Every `## ` section of a Markdown report has something under it before the next one.
fn assert_no_empty_section(md: &str) {
    let lines: Vec<&str> = md.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if !l.starts_with("## ") {
            continue;
        }
        let body = lines[i + 1..]
            .iter()
            .take_while(|x| !x.starts_with("## "))
            .any(|x| !x.trim().is_empty() && !x.starts_with('#'));
        assert!(body, "empty section {l}");
    }
}

#[test]
fn the_demo_study_says_what_ran_where_without_filler() {
    let mpi = common::mpi_lock(); // launches of its own: no helper that takes the lock
    let dir = tmpdir("context-demo");
    let (res, rep) = (dir.join("res"), dir.join("rep"));
    solo_held(
        &mpi,
        &["sweep", "examples/quick-local.toml", "--out", s(&res)],
    )
    .assert_code(0);
    let r = read_results(&res);
    // The run side: each launch's transport and host load.
    for l in &r.launches {
        let t = l.transport.as_ref().expect("transport recorded");
        let p = l.provenance.as_ref().unwrap();
        assert_eq!(t.ranks_probed, p.world_size, "{}", l.launch_id);
        if p.world_size == 1 {
            assert!(t.summary.starts_with("none: one MPI process"), "{t:?}");
        } else {
            // Two ranks on one host under this machine's Open MPI: vader's shared memory.
            assert_eq!(t.ranks_with_shared_memory, 2, "{t:?}");
            assert!(t.summary.starts_with("shared memory"), "{t:?}");
            assert!(t.components_loaded.iter().any(|c| c.starts_with("pml_")));
        }
        let pml = t
            .mca
            .iter()
            .find(|m| m.name == "pml")
            .expect("pml resolved");
        assert!(!pml.source.is_empty());
        let h = l.host_load.as_ref().expect("host load recorded");
        assert!(h.window_s > 0.0 && h.logical_cpus >= 1);
        assert!(h.loadavg_1m_before.is_some() && h.loadavg_1m_after.is_some());
        // The ranks' CPU time cannot exceed what the host's counters saw (10 ms ticks). Under a
        // hypervisor a tick that held stolen time is counted as steal, not busy, while the task's
        // own clock ran on (CI at 1756cb4: own 1.03 s, busy 0.97 s, steal 0.33 s): steal counts.
        assert!(
            h.own_cpu_s <= h.busy_cpu_s + h.steal_cpu_s + 0.05 * p.world_size as f64,
            "{h:?}"
        );
    }
    solo_held(
        &mpi,
        &[
            "report",
            s(&res),
            "--out",
            s(&rep),
            "--title",
            "quick local study",
        ],
    )
    .assert_code(0);
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    let h2: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(h2.first(), Some(&"## Context: what ran where"), "{h2:?}");
    let start = md.find("## Context").unwrap();
    let end = start + 3 + md[start + 3..].find("\n## ").unwrap();
    let ctx = &md[start..end];
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap();
    for needle in [
        model.as_str(),
        "logical CPU",
        "core",
        "Open MPI",
        "one node (no emulation)",
        "one host: no network was measured",
        "hybrid on one node: 2 threads in one process, no MPI call",
    ] {
        assert!(ctx.contains(needle), "{needle:?} not in\n{ctx}");
    }
    let rows = read_csv(&rep.join("tables/context.csv"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    let by_setup: BTreeMap<&str, &BTreeMap<String, String>> =
        rows.iter().map(|r| (r["set-up"].as_str(), r)).collect();
    let pure = by_setup
        .iter()
        .find(|(k, _)| k.contains("1×2") && k.contains("pure"))
        .unwrap()
        .1;
    assert!(pure["transport"].starts_with("shared memory"), "{pure:?}");
    let hybrid = by_setup
        .iter()
        .find(|(k, _)| k.contains("hybrid"))
        .unwrap()
        .1;
    assert!(hybrid["transport"].starts_with("none"), "{hybrid:?}");
    assert_eq!(pure["runs"], "1");
    // No filler on one node: no slowest node, no retention of one device count, no forms
    // table of unfitted rows, no algbw of one device, no empty section, plurals right.
    assert!(!rep.join("tables/straggler_nodes.csv").exists());
    assert!(!rep.join("tables/scale_models.csv").exists());
    assert!(!rep.join("tables/busbw_vs_devices_allreduce.csv").exists());
    for t in ["collective_allreduce", "collective_allgather"] {
        for row in read_csv(&rep.join(format!("tables/{t}.csv"))) {
            if row["devices"] == "1" {
                assert_eq!(row["peak algbw (GB/s)"], "", "{t}: {row:?}");
            }
        }
    }
    assert_no_empty_section(&md);
    assert!(!md.contains("Emulated nodes."), "one node is not emulated");
    // Plurals agree with their numbers: no "case(s)" anywhere in the report.
    for l in md.lines() {
        assert!(!l.contains("(s)") && !l.contains("(es)"), "{l}");
    }
}

#[test]
fn tcp_over_loopback_is_recorded_as_such() {
    // one launch, through mpirun_with (which holds the MPI lock)
    let out = tmpdir("context-tcp").join("out");
    // What profiles/local-slurm.toml sets for emulated nodes: no shared memory.
    mpirun_with(
        2,
        &[
            "--mca",
            "btl",
            "self,tcp",
            "--mca",
            "btl_tcp_if_include",
            "lo",
        ],
        &[
            "run",
            "-q",
            "-w",
            "allreduce",
            "--sizes",
            "4KiB",
            "--iters",
            "20",
            "--out",
            s(&out),
        ],
    )
    .assert_code(0);
    let r = read_results(&out);
    let t = r.launches[0].transport.as_ref().unwrap();
    assert_eq!(t.summary, "TCP over loopback (pml ob1, btl tcp)", "{t:?}");
    assert_eq!((t.ranks_with_tcp, t.ranks_with_shared_memory), (2, 0));
    let btl = t.mca.iter().find(|m| m.name == "btl").unwrap();
    assert_eq!(
        (btl.value.as_str(), btl.source.as_str()),
        ("self,tcp", "environment")
    );
    assert!(
        !t.components_loaded.iter().any(|c| c == "btl_vader"),
        "{t:?}"
    );
}

/// `mpirun -np N scalebench run ARGS`, started, not waited for.
fn start(np: u32, args: &[&str]) -> std::process::Child {
    let mut cmd = Command::new("timeout");
    cmd.args([
        "-k",
        "5",
        "300",
        "mpirun",
        "-np",
        &np.to_string(),
        "--oversubscribe",
        bin(),
    ]);
    cmd.args(args);
    mpi_env(&mut cmd);
    cmd.stdout(std::process::Stdio::null());
    cmd.spawn().expect("start mpirun")
}

#[test]
fn two_launches_at_once_are_both_marked_and_name_no_winner() {
    let mpi = common::mpi_lock(); // launches of its own: no helper that takes the lock
    let dir = tmpdir("context-overlap");
    let (pure, hybrid, rep) = (dir.join("pure"), dir.join("hybrid"), dir.join("rep"));
    // The same cases, pure on 2 ranks and hybrid on 1 rank × 2 devices, at the same time on
    // this host: each long enough (a few seconds) for the other to start inside its window.
    let common = [
        "run",
        "-q",
        "-w",
        "allreduce",
        "--sizes",
        "4KiB:256KiB:x4",
        "--iters",
        "4000",
        "--warmup",
        "10",
    ];
    let mut a_args = common.to_vec();
    a_args.extend(["--out", s(&pure)]);
    let mut b_args = common.to_vec();
    b_args.extend([
        "--out",
        s(&hybrid),
        "--topology",
        "hybrid",
        "--devices-per-node",
        "2",
    ]);
    let mut a = start(2, &a_args);
    let mut b = start(1, &b_args);
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    let (ra, rb) = (read_results(&pure), read_results(&hybrid));
    let pids = |r: &common::wire::ResultsFile| -> Vec<u32> {
        r.launches[0]
            .provenance
            .as_ref()
            .unwrap()
            .ranks
            .iter()
            .map(|x| x.pid)
            .collect()
    };
    // Rank 0 looks for other scalebench processes at the start, after each case and at the
    // end, so a launch that starts and ends inside one case of the other is not named there
    // (docs/results-format.md). Of two overlapping launches, at least one sees the other at
    // one of its own looks, by pid, and is marked co_scheduled (the other one is set apart
    // only if the overlap's CPU time makes its host busy: printed, not asserted).
    let mut named = 0;
    for (me, other) in [(&ra, &rb), (&rb, &ra)] {
        let l = &me.launches[0];
        let h = l.host_load.as_ref().unwrap();
        let seen: Vec<u32> = h.other_scalebench.iter().map(|p| p.pid).collect();
        let kinds: Vec<&str> = l.unrepresentative.iter().map(|u| u.kind.as_str()).collect();
        if pids(other).iter().all(|pid| seen.contains(pid)) {
            named += 1;
            assert!(kinds.contains(&"co_scheduled"), "{kinds:?}: {h:?}");
        }
        eprintln!(
            "{}: window {:.2} s, own {:.2} CPU-s, other {:.2} CPU-s, other scalebench {:.2} CPU-s, reasons {kinds:?}",
            l.launch_id,
            h.window_s,
            h.own_cpu_s,
            h.other_cpu_s,
            h.other_scalebench.iter().map(|p| p.cpu_s).sum::<f64>()
        );
    }
    assert!(named >= 1, "neither launch named the other's ranks");
    // Together they are a pure/hybrid pair: no winner is named, and the report says why.
    solo_held(&mpi, &["report", s(&pure), s(&hybrid), "--out", s(&rep)]).assert_code(0);
    assert_no_winner_co_scheduled(&rep);
    let reasons = read_csv(&rep.join("tables/unrepresentative_summary.csv"));
    assert!(
        reasons.iter().any(|r| r["reason"] == "co_scheduled"),
        "{reasons:?}"
    );
}

/// A launch that starts and ends inside one long case of another is named by it: rank 0 looks
/// only at the start, after each case and at the end, but every scalebench process leaves its
/// CPU time as it ends (`$TMPDIR/scalebench-ended-<uid>/`), and the looks read those records.
/// The two are a pure/hybrid pair of one case: both marked, no winner named between them.
#[test]
fn a_launch_inside_one_long_case_is_named() {
    let mpi = common::mpi_lock(); // launches of its own: no helper that takes the lock
    let dir = tmpdir("context-inside");
    let (long, short, rep) = (dir.join("long"), dir.join("short"), dir.join("rep"));
    // One case of several seconds (a 4 MiB all-reduce, thousands of times) …
    let mut a = start(
        2,
        &[
            "run",
            "-q",
            "-w",
            "allreduce",
            "--sizes",
            "4MiB",
            "--in-place",
            "no",
            "--iters",
            "3000",
            "--warmup",
            "5",
            "--out",
            s(&long),
        ],
    );
    // … and, once it runs, a short launch of the same case on one rank × 2 devices (hybrid)
    // that is over well before that case ends.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let mut b = start(
        1,
        &[
            "run",
            "-q",
            "-w",
            "allreduce",
            "--sizes",
            "4MiB",
            "--in-place",
            "no",
            "--iters",
            "20",
            "--warmup",
            "2",
            "--topology",
            "hybrid",
            "--devices-per-node",
            "2",
            "--out",
            s(&short),
        ],
    );
    assert!(b.wait().unwrap().success());
    assert!(a.wait().unwrap().success());
    let (ra, rb) = (read_results(&long), read_results(&short));
    assert_eq!(ra.cases.len(), 1, "the long launch is one case");
    let (la, lb) = (&ra.launches[0], &rb.launches[0]);
    let (a_end, b_end) = (la.finished_unix_s.unwrap(), lb.finished_unix_s.unwrap());
    eprintln!(
        "long launch {:.2}–{a_end:.2}, short launch {:.2}–{b_end:.2}",
        la.started_unix_s, lb.started_unix_s
    );
    assert!(
        lb.started_unix_s > la.started_unix_s && b_end < a_end,
        "the short launch ran inside the long one"
    );
    let b_pid = lb.provenance.as_ref().unwrap().ranks[0].pid;
    let h = la.host_load.as_ref().unwrap();
    let seen: Vec<u32> = h.other_scalebench.iter().map(|p| p.pid).collect();
    assert!(
        seen.contains(&b_pid),
        "the long launch did not name the short one's rank {b_pid}: {h:?}"
    );
    let kinds = |l: &common::wire::Launch| -> Vec<String> {
        l.unrepresentative.iter().map(|u| u.kind.clone()).collect()
    };
    assert!(
        kinds(la).iter().any(|k| k == "co_scheduled"),
        "{:?}: {h:?}",
        kinds(la)
    );
    // The short launch saw the long one's ranks running at both of its looks.
    let a_pids: Vec<u32> = la
        .provenance
        .as_ref()
        .unwrap()
        .ranks
        .iter()
        .map(|r| r.pid)
        .collect();
    let hb = lb.host_load.as_ref().unwrap();
    let seen_b: Vec<u32> = hb.other_scalebench.iter().map(|p| p.pid).collect();
    assert!(
        a_pids.iter().all(|p| seen_b.contains(p)),
        "the short launch did not name the long one's ranks {a_pids:?}: {hb:?}"
    );
    assert!(
        kinds(lb).iter().any(|k| k == "co_scheduled"),
        "{:?}: {hb:?}",
        kinds(lb)
    );
    // A pure/hybrid pair of one case: both kept out of the winners, with the reason said.
    solo_held(&mpi, &["report", s(&long), s(&short), "--out", s(&rep)]).assert_code(0);
    assert_no_winner_co_scheduled(&rep);
}

/// A report over a co-scheduled pure/hybrid pair names no winner and says why in each row.
fn assert_no_winner_co_scheduled(rep: &std::path::Path) {
    assert!(!rep.join("tables/topology_bands.csv").exists());
    let rows = read_csv(&rep.join("tables/topology_bands_unrepresentative.csv"));
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r["winner"], "not named", "{r:?}");
        assert!(r["why"].contains("co scheduled"), "{r:?}");
    }
}
