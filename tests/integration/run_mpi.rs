//! `scalebench run` under real mpirun: every workload at 1, 2 and 4 ranks, hybrid mode,
//! validation that can fail, and failures that must not lose results.

use crate::common;

use common::wire::{Case, ResultsFile};
use common::{mpirun, mpirun_with, read_results, solo, solo_env, tmpdir};
use std::collections::HashSet;

const ALL: &str =
    "allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall,matmul,batch_matmul";

/// nccl-tests' bus bandwidth factor, written out independently of the crate.
fn factor(workload: &str, n: f64) -> f64 {
    match workload {
        "allreduce" => 2.0 * (n - 1.0) / n,
        "allgather" | "reduce_scatter" | "alltoall" => (n - 1.0) / n,
        "broadcast" | "reduce" => 1.0,
        w => panic!("no factor for {w}"),
    }
}

/// nccl-tests' (send count, recv count, bytes) for a requested size.
fn expected_counts(workload: &str, bytes: u64, elem: u64, n: u64) -> (u64, u64, u64) {
    let count = bytes / elem;
    let base = (count / n) / (16 / elem) * (16 / elem);
    match workload {
        "allreduce" | "reduce" | "broadcast" => (count, count, count * elem),
        "allgather" => (base, base * n, base * n * elem),
        "reduce_scatter" => (base * n, base, base * n * elem),
        "alltoall" => (base * n, base * n, base * n * elem),
        w => panic!("{w}"),
    }
}

fn check_collective(c: &Case, n: u32) {
    let p = &c.params;
    let elem = c.element_bytes;
    assert_eq!(elem, if p.dtype == "f64" { 8 } else { 4 });
    let (s, r, b) = expected_counts(&p.workload, p.requested_bytes.unwrap(), elem, u64::from(n));
    assert_eq!(
        (c.send_count, c.recv_count, c.bytes),
        (Some(s), Some(r), Some(b)),
        "{p:?}"
    );
    let t = c.timing.as_ref().unwrap();
    let algbw = b as f64 / t.time_s / 1e9;
    let rel = |x: f64, y: f64| (x - y).abs() <= 1e-9 * y.abs().max(1e-12);
    assert!(rel(c.algbw_gbps.unwrap(), algbw), "algbw {p:?}");
    assert!(
        rel(
            c.busbw_gbps.unwrap(),
            algbw * factor(&p.workload, f64::from(n))
        ),
        "busbw {p:?}"
    );
}

/// Expected number of cases for the product asked for below (CPU broadcast is in-place only).
fn expected_case_count(
    ops: usize,
    roots: usize,
    dtypes: usize,
    sizes: usize,
    dims: usize,
) -> usize {
    let places = 2;
    let per = dtypes * sizes;
    ops * per * places // allreduce
        + ops * roots * per * places // reduce
        + roots * per // broadcast
        + per * places // allgather
        + ops * per * places // reduce_scatter
        + per * places // alltoall
        + 2 * dtypes * dims // matmul, batch_matmul
}

fn all_workloads(np: u32) -> ResultsFile {
    let dir = tmpdir(&format!("all-np{np}"));
    let out = dir.join("out");
    let roots = if np > 1 {
        format!("0,{}", np - 1)
    } else {
        "0".into()
    };
    let ran = mpirun(
        np,
        &[
            "run",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "-w",
            ALL,
            "--sizes",
            "1000B,64KiB",
            "--dtype",
            "f32,f64",
            "--op",
            "sum,max,avg",
            "--root",
            &roots,
            "--dims",
            "48",
            "--batch",
            "2",
            "--time-budget",
            "0.02",
            "--check",
            "2",
        ],
    );
    ran.assert_code(0);
    let r = read_results(&out);
    let nroots = if np > 1 { 2 } else { 1 };
    assert_eq!(
        r.cases.len(),
        expected_case_count(3, nroots, 2, 2, 1),
        "every case of the product is present"
    );
    let ids: HashSet<&str> = r.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), r.cases.len(), "case ids are unique");
    let workloads: HashSet<&str> = r.cases.iter().map(|c| c.params.workload.as_str()).collect();
    assert_eq!(workloads.len(), 8);
    for c in &r.cases {
        assert_eq!(c.status, "ok", "{:?}: {:?}", c.params, c.message);
        assert_eq!(c.wrong, 0);
        assert_eq!(c.check_iters, 2);
        assert_eq!(c.devices, np);
        let t = c.timing.as_ref().expect("timing");
        assert!(t.time_s > 0.0 && t.iters >= 5);
        assert_eq!(t.per_rank_mean_s.len(), np as usize);
        assert_eq!(t.samples_s.len(), t.stats_s.n);
        match c.params.workload.as_str() {
            "matmul" => {
                assert!(c.gflops.unwrap() > 0.0);
                assert!((c.gflops_total.unwrap() - c.gflops.unwrap() * f64::from(np)).abs() < 1e-6);
            }
            "batch_matmul" => {
                let names: Vec<&str> = c.phases.iter().map(|p| p.name.as_str()).collect();
                assert_eq!(names, vec!["scatter", "compute", "gather"]);
            }
            _ => check_collective(c, np),
        }
    }
    // provenance names every rank
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert_eq!(p.world_size, np);
    assert_eq!(
        p.ranks.iter().map(|x| x.rank).collect::<Vec<_>>(),
        (0..np).collect::<Vec<_>>()
    );
    for rank in &p.ranks {
        assert!(!rank.host.is_empty() && rank.pid > 0 && !rank.cpus.is_empty());
        assert_eq!(rank.devices.len(), 1);
        assert_eq!(rank.devices[0].index, rank.rank);
    }
    assert!(p.mpi_library.as_deref().unwrap_or("").contains("Open MPI"));
    assert!(p.timer.resolution_s > 0.0 && p.timer.resolution_s < 1e-3);
    r
}

#[test]
fn every_workload_on_one_rank() {
    all_workloads(1);
}

#[test]
fn every_workload_on_two_ranks() {
    all_workloads(2);
}

#[test]
fn every_workload_on_four_oversubscribed_ranks() {
    all_workloads(4);
}

#[test]
fn integer_and_product_reductions_validate_exactly() {
    let out = tmpdir("i32").join("out");
    mpirun(
        3,
        &[
            "run",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "-w",
            "allreduce,reduce_scatter,reduce",
            "--sizes",
            "4KiB",
            "--dtype",
            "i32,f64",
            "--op",
            "sum,prod,min,max,avg",
            "--root",
            "2",
            "--time-budget",
            "0.01",
        ],
    )
    .assert_code(0);
    let r = read_results(&out);
    assert_eq!(r.cases.len(), 3 * 2 * 5 * 2);
    assert!(r.cases.iter().all(|c| c.status == "ok" && c.wrong == 0));
}

#[test]
fn hybrid_topology_on_emulated_nodes() {
    let out = tmpdir("hybrid").join("out");
    mpirun_with(
        2,
        &["--bind-to", "none"],
        &[
            "run",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "-w",
            ALL,
            "--sizes",
            "2KiB",
            "--dims",
            "32",
            "--batch",
            "3",
            "--op",
            "sum,avg",
            "--root",
            "3",
            "--topology",
            "hybrid",
            "--nodes",
            "2",
            "--devices-per-node",
            "2",
            "--time-budget",
            "0.02",
        ],
    )
    .assert_code(0);
    let r = read_results(&out);
    assert!(r.run.emulated_nodes);
    for c in &r.cases {
        assert_eq!(
            (c.status.as_str(), c.wrong),
            ("ok", 0),
            "{:?}: {:?}",
            c.params,
            c.message
        );
        assert_eq!((c.devices, c.ranks), (4, 2));
        if c.params.workload != "matmul" && c.params.workload != "batch_matmul" {
            check_collective(c, 4);
        }
    }
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert!(p.emulated_nodes);
    assert_eq!(p.node_source, "emulated");
    let names: Vec<&str> = p.ranks.iter().map(|x| x.node_name.as_str()).collect();
    assert_eq!(names, vec!["enode0", "enode1"]);
    let devs: Vec<u32> = p
        .ranks
        .iter()
        .flat_map(|x| x.devices.iter().map(|d| d.index))
        .collect();
    assert_eq!(devs, vec![0, 1, 2, 3]);
}

#[test]
fn round_robin_placement_numbers_devices_as_the_source_documents() {
    let out = tmpdir("rr").join("out");
    mpirun(
        4,
        &[
            "run",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "--sizes",
            "64",
            "--nodes",
            "2",
            "--emulate-nodes",
            "--placement",
            "round_robin",
            "--time-budget",
            "0.01",
        ],
    )
    .assert_code(0);
    let p = read_results(&out).launches.remove(0).provenance.unwrap();
    // round-robin: node = rank % nodes, GPU = rank / nodes (file 000, Apocrita)
    let got: Vec<(u32, u32)> = p
        .ranks
        .iter()
        .map(|r| (r.node, r.devices[0].local_index))
        .collect();
    assert_eq!(got, vec![(0, 0), (1, 0), (0, 1), (1, 1)]);
}

#[test]
fn a_corrupted_input_is_reported_wrong_with_exit_3() {
    for np in [1, 2] {
        let out = tmpdir(&format!("corrupt{np}")).join("out");
        let ran = mpirun(
            np,
            &[
                "run",
                "--out",
                out.to_str().unwrap(),
                "-w",
                "allreduce,alltoall",
                "--sizes",
                "256",
                "--fault",
                "corrupt",
                "--time-budget",
                "0.01",
            ],
        );
        ran.assert_code(3);
        let r = read_results(&out);
        assert_eq!(r.cases.len(), 4);
        for c in &r.cases {
            assert_eq!(c.status, "wrong", "{:?}", c.params);
            assert!(c.wrong >= 1);
        }
        assert!(
            ran.stdout.contains("wrong elements in total"),
            "{}",
            ran.stdout
        );
    }
}

#[test]
fn a_failing_case_is_recorded_and_the_run_goes_on() {
    let out = tmpdir("fail").join("out");
    let ran = mpirun(
        2,
        &[
            "run",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "-w",
            "allreduce,matmul",
            "--sizes",
            "64,128",
            "--dims",
            "16",
            "--fault",
            "fail",
        ],
    );
    ran.assert_code(3);
    let r = read_results(&out);
    assert_eq!(r.cases.len(), 5);
    for c in &r.cases {
        assert_eq!(c.status, "failed");
        assert!(
            c.message
                .as_deref()
                .unwrap()
                .contains("rank 1: injected failure"),
            "{:?}",
            c.message
        );
    }
    assert_eq!(r.launches[0].status, "ok");
}

#[test]
fn world_size_mismatch_is_a_clear_error() {
    let out = tmpdir("mismatch").join("out");
    let ran = mpirun(
        2,
        &[
            "run",
            "--out",
            out.to_str().unwrap(),
            "--devices-per-node",
            "4",
        ],
    );
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("2 MPI ranks") && ran.stderr.contains("needs 4"),
        "{}",
        ran.stderr
    );
    assert!(!out.join("results.json").exists());
    // a launcher that started 4 processes while MPI sees 1: every process ran alone
    let ran = solo_env(
        &["run", "--out", out.to_str().unwrap()],
        &[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4")],
    );
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("started 4 processes") && ran.stderr.contains("world of 1"),
        "{}",
        ran.stderr
    );
}

#[test]
fn isolated_timing_keeps_one_sample_per_iteration() {
    let out = tmpdir("isolated").join("out");
    mpirun(
        2,
        &[
            "run",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "--sizes",
            "8,1MiB",
            "--timing",
            "isolated,pipelined",
            "--iters",
            "30",
            "--warmup",
            "3",
            "--batches",
            "5",
        ],
    )
    .assert_code(0);
    let r = read_results(&out);
    assert_eq!(r.cases.len(), 8);
    for c in &r.cases {
        let t = c.timing.as_ref().unwrap();
        assert_eq!((t.iters, t.warmup_iters), (30, 3));
        match t.mode.as_str() {
            "isolated" => {
                assert_eq!(t.samples_s.len(), 30);
                assert_eq!(t.sample_kind, "iteration_max_over_ranks");
            }
            _ => {
                assert_eq!(t.samples_s.len(), 5);
                assert_eq!(t.sample_kind, "batch_mean_max_over_ranks");
            }
        }
        // each sample is the slowest rank's; the headline is the mean of rank means
        assert!(t.rank_mean_s.min <= t.time_s && t.time_s <= t.rank_mean_s.max);
    }
}

#[test]
fn journal_holds_every_finished_case() {
    let out = tmpdir("journal").join("out");
    solo(&[
        "run",
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--sizes",
        "8,16,32",
        "--time-budget",
        "0.01",
    ])
    .assert_code(0);
    let text = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.iter().filter(|k| *k == "case").count(), 6);
    assert_eq!(kinds.first().map(String::as_str), Some("run"));
    assert_eq!(kinds.last().map(String::as_str), Some("launch"));
}
