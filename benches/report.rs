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
use scalebench::results::schema::{CaseResult, ResultsFile};
use std::path::PathBuf;
use std::time::Duration;

const SAMPLES: usize = 100;

// Each bench uses part of the builder the integration tests share.
#[allow(dead_code)]
#[path = "../tests/integration/common/fixture.rs"]
mod fixture;

use fixture::Rng;

/// A case of `params` around `base_s`: per-rank means up to 2 % apart, with rank 3 of every
/// launch 8 % slow (a straggler for the report to find), and samples up to 15 % above.
fn case(params: CaseParams, launch_id: &str, base_s: f64, rng: &mut Rng) -> CaseResult {
    let per_rank: Vec<f64> = (0..params.ranks())
        .map(|r| base_s * (1.0 + 0.02 * rng.uniform() + if r == 3 { 0.08 } else { 0.0 }))
        .collect();
    let samples: Vec<f64> = (0..SAMPLES)
        .map(|_| base_s * (1.0 + 0.15 * rng.uniform()))
        .collect();
    fixture::case(&params, launch_id, per_rank, samples)
}

/// 6 collectives × 26 sizes × 4 node counts × 2 topologies × 2 bindings × 2 dtypes × 2
/// placements of the buffer = 9,984 cases, plus 16 GEMMs: 10,000.
fn study() -> ResultsFile {
    let mut rng = Rng(42);
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
                    nccl_algo: None,
                    nccl_proto: None,
                };
                let launch_id = shape.id();
                launches.push(fixture::launch(shape));
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
    let mut file = fixture::results("bench", launches, cases);
    file.run
        .labels
        .insert("cluster".to_string(), "synthetic".to_string());
    file
}

fn bench(c: &mut Criterion) {
    // SCALEBENCH_BENCH_DIR keeps the input and the report for a look (or a profiler).
    let keep = std::env::var_os("SCALEBENCH_BENCH_DIR").map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("scalebench-bench-report-{}", std::process::id()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = fixture::write(&dir, "results.json", &study());
    let req = Request {
        inputs: vec![input],
        out: dir.join("report"),
        title: None,
        outputs: Outputs::all(),
        filters: vec![],
        options: Options::default(),
        history_db: None,
        nccl_tuner: None,
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
