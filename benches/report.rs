//! `scalebench report` on a large study: 10,000 cases × 100 samples (six collectives × 26 sizes
//! × 4 node counts × pure/hybrid × 2 bindings × 2 dtypes × in-/out-of-place, plus GEMMs),
//! from reading results.json to every chart and file. Goal: < 10 s on the project machine
//! (2 cores).
//!
//! The input is generated here with ring-model times, per-rank spread and multiplicative noise,
//! so every part of the report (fits, predictions, ratios, stragglers) has work to do.

use criterion::{criterion_group, criterion_main, Criterion};
use scalebench::params::{
    BackendKind, Binding, CaseParams, Dtype, LaunchShape, MatmulShape, Placement, ReduceOp,
    Scaling, Topology, Workload,
};
use scalebench::report::analyze::Options;
use scalebench::report::{generate, Outputs, Request};
use scalebench::results::io::{new_results, write_results};
use scalebench::results::schema::{
    BackendInfo, CaseResult, CaseStatus, DeviceBinding, HostInfo, LaunchRecord, LaunchStatus,
    Provenance, RankInfo, RankSpread, ResultsFile, RunInfo, TimerInfo, TimingResult,
};
use scalebench::stats::summarize;
use std::path::PathBuf;
use std::time::Duration;

const SAMPLES: usize = 100;

/// A small deterministic generator (no dependency, same input every run).
struct Lcg(u64);
impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn provenance(shape: &LaunchShape) -> Provenance {
    let ranks: Vec<RankInfo> = (0..shape.ranks())
        .map(|r| {
            let node = r / shape.ranks_per_node();
            RankInfo {
                rank: r,
                host: format!("node{node:03}"),
                node,
                node_name: format!("node{node:03}"),
                local_rank: r % shape.ranks_per_node(),
                pid: 1000 + r,
                cpus: format!("{}", r % 64),
                devices: (0..shape.devices_per_rank())
                    .map(|d| DeviceBinding {
                        index: r * shape.devices_per_rank() + d,
                        local_index: d,
                        cpus: format!("{}", r % 64),
                        name: "cpu".into(),
                    })
                    .collect(),
            }
        })
        .collect();
    Provenance {
        world_size: shape.ranks(),
        devices: shape.devices(),
        nodes: shape.nodes,
        emulated_nodes: false,
        node_source: "hostname".into(),
        mpi_library: Some("Open MPI v4.1.4".into()),
        mpi_standard: Some("3.1".into()),
        timer: TimerInfo {
            source: "clock_gettime(CLOCK_MONOTONIC)".into(),
            resolution_s: 4e-8,
        },
        backend: BackendInfo {
            kind: BackendKind::Cpu,
            detail: "synthetic".into(),
        },
        ranks,
        hosts: (0..shape.nodes)
            .map(|n| HostInfo {
                host: format!("node{n:03}"),
                cpu_model: "Synthetic CPU".into(),
                logical_cpus: 64,
                physical_cores: Some(32),
                memory_bytes: 256 << 30,
                copy_flags: None,
                libc: None,
            })
            .collect(),
        environment: Default::default(),
        warnings: vec![],
        gemm: None,
        buffer_policy: None,
    }
}

fn case(params: CaseParams, launch_id: &str, base_s: f64, rng: &mut Lcg) -> CaseResult {
    let shape = params.launch_shape();
    let ranks = shape.ranks();
    // Rank 3 of every launch is a little slow (a straggler for the report to find).
    let per_rank: Vec<f64> = (0..ranks)
        .map(|r| base_s * (1.0 + 0.02 * rng.unit() + if r == 3 { 0.08 } else { 0.0 }))
        .collect();
    let samples: Vec<f64> = (0..SAMPLES)
        .map(|_| base_s * (1.0 + 0.15 * rng.unit()))
        .collect();
    let time_s = per_rank.iter().sum::<f64>() / f64::from(ranks);
    let (mut lo, mut hi) = (0, 0);
    for (i, v) in per_rank.iter().enumerate() {
        if *v < per_rank[lo] {
            lo = i;
        }
        if *v > per_rank[hi] {
            hi = i;
        }
    }
    let n = params.devices();
    let bytes = params.requested_bytes;
    let factor = params.workload.busbw_factor(n);
    let algbw = bytes.map(|b| b as f64 / time_s / 1e9);
    let gflops = params.shape.map(|s| s.flops() / time_s / 1e9);
    CaseResult {
        id: params.id(),
        launch_id: launch_id.to_string(),
        status: CaseStatus::Ok,
        message: None,
        started_unix_s: 1.8e9,
        finished_unix_s: 1.8e9 + 1.0,
        devices: n,
        ranks,
        element_bytes: params.dtype.size_bytes(),
        bytes,
        send_count: bytes.map(|b| b / params.dtype.size_bytes()),
        recv_count: bytes.map(|b| b / params.dtype.size_bytes()),
        wrong: 0,
        check_iters: 1,
        tolerance: 0.0,
        timing: Some(TimingResult {
            mode: params.timing,
            warmup_iters: 10,
            iters: 100,
            batches: SAMPLES as u32,
            time_s,
            cross_rank: "mean_of_rank_means".into(),
            rank_mean_s: RankSpread {
                min: per_rank[lo],
                mean: time_s,
                max: per_rank[hi],
                min_rank: lo as u32,
                max_rank: hi as u32,
            },
            per_rank_mean_s: per_rank,
            sample_kind: "batch_mean_max_over_ranks".into(),
            stats_s: summarize(&samples).expect("samples"),
            samples_s: samples,
            calibration: None,
            warnings: vec![],
        }),
        algbw_gbps: algbw,
        busbw_gbps: algbw.zip(factor).map(|(a, f)| a * f),
        busbw_factor: factor,
        gflops,
        gflops_total: gflops.map(|g| g * f64::from(n)),
        phases: vec![],
        telemetry: vec![],
        ddp: None,
        unrepresentative: vec![],
        buffers: None,
        params,
    }
}

/// 6 collectives × 26 sizes × 4 node counts × 2 topologies × 2 bindings × 2 dtypes × 2
/// placements of the buffer = 9,984 cases, plus 16 GEMMs: 10,000.
fn study() -> ResultsFile {
    let mut rng = Lcg(42);
    let mut launches = Vec::new();
    let mut cases = Vec::new();
    let collectives = [
        Workload::Allreduce,
        Workload::Reduce,
        Workload::Broadcast,
        Workload::Allgather,
        Workload::ReduceScatter,
        Workload::Alltoall,
    ];
    for nodes in [1u32, 2, 4, 8] {
        for topology in [Topology::Pure, Topology::Hybrid] {
            for binding in [Binding::None, Binding::Core] {
                let shape = LaunchShape {
                    backend: BackendKind::Cpu,
                    topology,
                    nodes,
                    devices_per_node: 4,
                    binding,
                    placement: Placement::Fill,
                };
                let launch_id = shape.id();
                launches.push(LaunchRecord {
                    launch_id: launch_id.clone(),
                    shape,
                    status: LaunchStatus::Ok,
                    launcher: "srun".into(),
                    command_line: vec!["scalebench".into(), "run".into()],
                    started_unix_s: 1.8e9,
                    finished_unix_s: Some(1.8e9 + 60.0),
                    wall_s: Some(60.0),
                    overhead_s: Some(1.0),
                    stderr_tail: None,
                    provenance: Some(provenance(&shape)),
                    unrepresentative: vec![],
                });
                let p = f64::from(shape.devices());
                let slow = if topology == Topology::Hybrid {
                    1.1
                } else {
                    1.0
                } * if binding == Binding::Core { 0.95 } else { 1.0 };
                for w in collectives {
                    for dtype in [Dtype::F32, Dtype::F64] {
                        for in_place in [false, true] {
                            for e in 3..29u32 {
                                let s = (1u64 << e) as f64;
                                let t = slow
                                    * (2.0 * (p - 1.0) * 2e-6 + 2.0 * (p - 1.0) / p * s / 20e9)
                                    + 1e-6;
                                let params = CaseParams {
                                    topology,
                                    binding,
                                    dtype,
                                    op: w.has_op().then_some(ReduceOp::Sum),
                                    root: w.has_root().then_some(0),
                                    in_place: Some(in_place),
                                    requested_bytes: Some(1u64 << e),
                                    ..CaseParams::new(w, nodes, 4)
                                };
                                cases.push(case(params, &launch_id, t, &mut rng));
                            }
                        }
                    }
                }
                let params = CaseParams {
                    topology,
                    binding,
                    shape: Some(MatmulShape::square(4096)),
                    scaling: Some(Scaling::Strong),
                    threads_per_device: Some(1),
                    ..CaseParams::new(Workload::Matmul, nodes, 4)
                };
                let t = slow * (0.5 / p + 0.002 * p.log2());
                cases.push(case(params, &launch_id, t, &mut rng));
            }
        }
    }
    assert_eq!(cases.len(), 10_000);
    new_results(
        RunInfo {
            run_id: "bench".into(),
            started_unix_s: 1.8e9,
            written_unix_s: 1.8e9 + 3600.0,
            command_line: vec!["scalebench".into(), "sweep".into()],
            emulated_nodes: false,
            labels: [("cluster".to_string(), "synthetic".to_string())].into(),
        },
        launches,
        cases,
    )
}

fn bench(c: &mut Criterion) {
    // SCALEBENCH_BENCH_DIR keeps the input and the report for a look (or a profiler).
    let keep = std::env::var_os("SCALEBENCH_BENCH_DIR").map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("scalebench-bench-report-{}", std::process::id()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input: PathBuf = dir.join("results.json");
    write_results(&input, &study()).expect("write the study");
    let req = Request {
        inputs: vec![input],
        out: dir.join("report"),
        title: None,
        outputs: Outputs::all(),
        filters: vec![],
        options: Options::default(),
    };
    let mut g = c.benchmark_group("report");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("10k_cases_x_100_samples_all_outputs", |b| {
        b.iter(|| {
            let w = generate(&req).expect("report");
            assert_eq!(w.cases, 10_000);
            w
        })
    });
    g.finish();
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
