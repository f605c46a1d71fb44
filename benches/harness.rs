//! The harness's own speed: planning a 100,000-case sweep, statistics of large sample sets, and
//! writing and reading a 10,000-case results file. These hold the performance targets of the
//! sweep planner (parse + expand 100,000 cases in under 1 s) and of the results format.
//!
//! Report rendering and compare of large files have their own benches (`benches/report.rs`,
//! `benches/compare.rs`). Nothing here needs MPI: it runs in a `--no-default-features` build.
//!
//! Run: `cargo bench --bench harness` (`-- --quick` for a shorter run, `-- --test` to run each
//! bench once). Throughput: `elem/s` counts what the bench name says (cases, samples); byte
//! rates are decimal (GB = 1e9 bytes).

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use scalebench::config;
use scalebench::params::{CaseParams, MatmulShape, ReduceOp, Scaling, Workload};
use scalebench::plan::sweep;
use scalebench::results::io::{read_results, write_results};
use scalebench::results::schema::ResultsFile;
use scalebench::stats::summarize;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

// Each bench uses part of the builder the integration tests share.
#[allow(dead_code)]
#[path = "../tests/integration/common/fixture.rs"]
mod fixture;

/// The planner's target: at least this many cases, planned in under 1 s.
const PLAN_CASES_MIN: usize = 100_000;
/// Samples in the large statistics bench.
const STATS_SAMPLES: usize = 1_000_000;
/// Cases and samples per case in the results file (the load of the report and compare targets).
const RESULT_CASES: usize = 10_000;
const RESULT_SAMPLES: usize = 100;
/// Ranks per launch in the results file (each case keeps one mean per rank).
const RESULT_RANKS: u32 = 2;

/// A sweep over every launch-level and case-level axis a collective study varies:
/// 5 node counts × 4 ranks per node × 2 topologies × 6 collectives × 3 types × (5 operators
/// where they apply) × 28 sizes × in place and out of place = 117,600 cases.
const SPEC_100K: &str = r#"
name = "bench-100k"
description = "a large collective study, for the planner bench"
[axes]
nodes = [1, 2, 4, 8, 16]
devices_per_node = [1, 2, 4, 8]
topology = ["pure", "hybrid"]
workloads = ["allreduce", "reduce", "broadcast", "allgather", "reduce_scatter", "alltoall"]
dtypes = ["f32", "f64", "i32"]
ops = ["sum", "prod", "min", "max", "avg"]
sizes = "8B:1GiB:x2"
[run]
time_budget_s = 0.2
"#;

fn plan(c: &mut Criterion) {
    let path = Path::new("bench-100k.toml");
    let spec = config::parse(path, SPEC_100K).expect("the bench spec is valid");
    let cases = sweep::expand(&spec)
        .expect("the bench spec expands")
        .case_count();
    assert!(
        cases >= PLAN_CASES_MIN,
        "the bench spec gives {cases} cases, fewer than the {PLAN_CASES_MIN} the target is about"
    );
    println!("plan: the bench spec expands to {cases} cases (target: parse + expand < 1 s)");

    let mut g = c.benchmark_group("plan");
    // Each run takes ~0.1–0.5 s: a fixed count of runs per sample.
    g.sampling_mode(SamplingMode::Flat);
    // elem/s = cases planned per second
    g.throughput(Throughput::Elements(cases as u64));
    g.bench_function(BenchmarkId::new("parse_and_expand", cases), |b| {
        b.iter(|| {
            let spec = config::parse(path, black_box(SPEC_100K)).expect("valid");
            black_box(sweep::expand(&spec).expect("expands").case_count())
        })
    });
    g.bench_function(BenchmarkId::new("expand_only", cases), |b| {
        b.iter(|| black_box(sweep::expand(&spec).expect("expands").case_count()))
    });
    g.finish();
}

use fixture::Rng;

/// Timing-like samples: lognormal around `median_s` with 5 % spread.
fn times_s(rng: &mut Rng, median_s: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| median_s * (0.05 * rng.normal()).exp())
        .collect()
}

fn statistics(c: &mut Criterion) {
    let mut rng = Rng(7);
    let large = times_s(&mut rng, 1e-5, STATS_SAMPLES);
    let s = summarize(&large).expect("samples");
    // The summary is of the samples drawn: lognormal(σ = 0.05) around 10 µs.
    assert!((s.median / 1e-5 - 1.0).abs() < 0.01 && s.min < s.median && s.median < s.p99);
    let sets: Vec<Vec<f64>> = (0..RESULT_CASES)
        .map(|k| times_s(&mut rng, 1e-6 * (1 + k % 97) as f64, RESULT_SAMPLES))
        .collect();

    let mut g = c.benchmark_group("stats");
    // elem/s = samples summarised per second
    g.throughput(Throughput::Elements(STATS_SAMPLES as u64));
    g.bench_function(BenchmarkId::new("summarize", "1e6_samples"), |b| {
        b.iter(|| black_box(summarize(black_box(&large)).expect("samples")))
    });
    g.throughput(Throughput::Elements((RESULT_CASES * RESULT_SAMPLES) as u64));
    g.bench_function(
        BenchmarkId::new("summarize", "10000_cases_x_100_samples"),
        |b| {
            b.iter(|| {
                sets.iter()
                    .map(|xs| summarize(xs).expect("samples").mean)
                    .sum::<f64>()
            })
        },
    );
    g.finish();
}

/// Parameters of case `k`: collectives with every size distinct (so every id is), and one case
/// in ten a GEMM.
fn case_params(k: usize) -> CaseParams {
    const COLLECTIVES: [Workload; 6] = [
        Workload::Allreduce,
        Workload::Reduce,
        Workload::Broadcast,
        Workload::Allgather,
        Workload::ReduceScatter,
        Workload::Alltoall,
    ];
    let mut p = CaseParams::new(Workload::Matmul, 1, RESULT_RANKS);
    if k % 10 == 9 {
        p.shape = Some(MatmulShape::square(64 * (k as u64 / 10 + 1)));
        p.scaling = Some(Scaling::Weak);
        p.threads_per_device = Some(1);
    } else {
        let w = COLLECTIVES[k % COLLECTIVES.len()];
        p.workload = w;
        p.op = w.has_op().then_some(ReduceOp::Sum);
        p.root = w.has_root().then_some(0);
        p.in_place = Some(k % 2 == 0);
        p.requested_bytes = Some(64 * (k as u64 + 1));
    }
    p
}

/// A results file of `RESULT_CASES` cases, each recorded (by the shared fixture, through the
/// library's `record`) from a measurement with `RESULT_SAMPLES` samples, in the golden file's
/// run and launch records.
fn results_file() -> ResultsFile {
    let mut f = fixture::golden();
    let launch_id = f.launches[0].launch_id.clone();
    let mut rng = Rng(11);
    f.cases = (0..RESULT_CASES)
        .map(|k| {
            let p = case_params(k);
            let time_s = 1e-6 * (1 + k % 97) as f64;
            let samples = times_s(&mut rng, time_s, RESULT_SAMPLES);
            let per_rank = times_s(&mut rng, time_s, RESULT_RANKS as usize);
            fixture::case(&p, &launch_id, per_rank, samples)
        })
        .collect();
    f
}

fn results_io(c: &mut Criterion) {
    let file = results_file();
    let dir = std::env::temp_dir().join(format!("scalebench-bench-harness-{}", std::process::id()));
    let path: PathBuf = dir.join("results.json");
    write_results(&path, &file).expect("write results");
    let back = read_results(&path).expect("read results");
    // What is read is what was written (ids, statuses, sample counts).
    assert_eq!(back.cases.len(), RESULT_CASES);
    for (a, b) in file.cases.iter().zip(&back.cases) {
        assert_eq!((&a.id, a.status), (&b.id, b.status));
        assert_eq!(
            a.timing.as_ref().map(|t| t.samples_s.len()),
            b.timing.as_ref().map(|t| t.samples_s.len())
        );
    }
    let bytes = std::fs::metadata(&path).expect("written").len();
    println!(
        "results_io: {} cases × {} samples = {:.1} MB of JSON at {}",
        RESULT_CASES,
        RESULT_SAMPLES,
        bytes as f64 / 1e6,
        path.display()
    );

    let mut g = c.benchmark_group("results_io");
    g.sampling_mode(SamplingMode::Flat);
    // B/s of results JSON
    g.throughput(Throughput::BytesDecimal(bytes));
    g.bench_function(BenchmarkId::new("write_atomic", "10000_cases"), |b| {
        b.iter(|| write_results(&path, black_box(&file)).expect("write"))
    });
    g.bench_function(BenchmarkId::new("read", "10000_cases"), |b| {
        b.iter(|| black_box(read_results(&path).expect("read").cases.len()))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = benches;
    // Defaults sized for runs of up to ~0.5 s; the command line (`--sample-size`,
    // `--measurement-time`, `--quick`) overrides them.
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = plan, statistics, results_io
}
criterion_main!(benches);
