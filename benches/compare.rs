//! `scalebench compare` on two 10,000-case results files with 100 samples per case (the
//! performance target of issue 6: under 1 s end to end).
//!
//! The files are generated here (collectives and GEMMs in the shape a real run writes, with
//! lognormal timing noise and a few real changes) and written to a temporary directory once.
//! Benchmarks: the whole command path (read both files, check, compare, render the text
//! report) in wall time and in CPU time, the reading of one file alone (through
//! `results::io::read_results`), the statistics alone on files already in memory, and the
//! JSON rendering.
//!
//! Run: `cargo bench --bench compare` (`-- --quick` for a shorter run).

use criterion::{criterion_group, criterion_main, Criterion};
use scalebench::compare::{self, Format, Options};
use scalebench::results::io::{parse_results, read_results, write_results};
use scalebench::results::schema::ResultsFile;
use scalebench::stats::summarize;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

const CASES: usize = 10_000;
const SAMPLES: usize = 100;
const GOLDEN: &str = include_str!("../tests/golden/results-v1.json");

use scalebench::stats::SplitMix64 as Rng;

/// A results file of `CASES` cases built from the golden file's records: each case gets
/// unique parameters (so a unique id), `SAMPLES` samples and consistent headline numbers.
/// `slow(k)` scales case k's true time.
fn synthetic(seed: u64, slow: impl Fn(usize) -> f64) -> ResultsFile {
    let golden = parse_results(Path::new("golden"), GOLDEN).expect("golden file");
    let templates = golden.cases.clone();
    let mut rng = Rng(seed);
    let mut f = golden;
    f.cases = (0..CASES)
        .map(|k| {
            let mut c = templates[k % templates.len()].clone();
            // unique parameters: collectives by size, GEMMs by shape
            if c.params.workload.is_collective() {
                c.params.requested_bytes = Some(64 * (k as u64 + 1));
                c.bytes = c.params.requested_bytes;
            } else if let Some(s) = c.params.shape.as_mut() {
                s.k = k as u64 + 1;
            }
            c.id = c.params.id();
            let t = c.timing.as_mut().expect("golden cases are measured");
            let true_s = 1e-6 * (1.0 + (k % 97) as f64) * slow(k);
            t.samples_s = (0..SAMPLES)
                .map(|_| true_s * (0.03 * rng.normal()).exp())
                .collect();
            t.batches = SAMPLES as u32;
            t.stats_s = summarize(&t.samples_s).expect("samples");
            let old = t.time_s;
            t.time_s = t.stats_s.mean;
            let new = t.time_s;
            t.per_rank_mean_s = vec![new; t.per_rank_mean_s.len()];
            for rate in [
                &mut c.algbw_gbps,
                &mut c.busbw_gbps,
                &mut c.gflops,
                &mut c.gflops_total,
            ]
            .into_iter()
            .flatten()
            {
                *rate *= old / new;
            }
            c
        })
        .collect();
    f
}

/// Writes the two files once per process.
fn files() -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("scalebench-bench-compare-{}", std::process::id()));
    let base = dir.join("baseline.json");
    let cand = dir.join("candidate.json");
    if !base.exists() || !cand.exists() {
        write_results(&base, &synthetic(1, |_| 1.0)).expect("write baseline");
        // 1 case in 500 is 20 % slower, 1 in 700 is 15 % faster
        let slow = |k: usize| {
            if k % 500 == 7 {
                1.2
            } else if k % 700 == 3 {
                0.85
            } else {
                1.0
            }
        };
        write_results(&cand, &synthetic(2, slow)).expect("write candidate");
    }
    (base, cand)
}

/// CPU time consumed by this process so far (every thread, user + system).
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn bench(c: &mut Criterion) {
    let (base, cand) = files();
    let options = Options::default();
    let mb = |p: &Path| std::fs::metadata(p).map_or(0.0, |m| m.len() as f64 / 1e6);
    eprintln!(
        "files: {} ({:.1} MB), {} ({:.1} MB)",
        base.display(),
        mb(&base),
        cand.display(),
        mb(&cand)
    );
    // The files are what the bench says they are, and the comparison finds the planted changes.
    let report = compare::compare_paths(
        std::slice::from_ref(&base),
        std::slice::from_ref(&cand),
        &options,
    )
    .expect("compare");
    assert_eq!(report.comparison.cases.len(), CASES);
    let regressed = report.comparison.count(compare::Verdict::Regressed);
    let improved = report.comparison.count(compare::Verdict::Improved);
    eprintln!("planted 20 regressions and 15 improvements; found {regressed} and {improved}");
    assert_eq!((regressed, improved), (20, 15));

    let mut g = c.benchmark_group("compare_10k_cases_100_samples");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("end_to_end_read_compare_render", |b| {
        b.iter(|| {
            let r = compare::compare_paths(
                std::slice::from_ref(&base),
                std::slice::from_ref(&cand),
                &options,
            )
            .expect("compare");
            black_box(compare::render(&r, Format::Text, false).len())
        })
    });
    // The same work measured in CPU time of this process (all threads, user + system): a
    // number other processes' load on this shared machine does not inflate. With the files in
    // the page cache nothing waits on I/O, so on an otherwise idle machine the wall time is at
    // most this.
    g.bench_function("end_to_end_cpu_time", |b| {
        b.iter_custom(|iters| {
            let start = process_cpu();
            for _ in 0..iters {
                let r = compare::compare_paths(
                    std::slice::from_ref(&base),
                    std::slice::from_ref(&cand),
                    &options,
                )
                .expect("compare");
                black_box(compare::render(&r, Format::Text, false).len());
            }
            process_cpu() - start
        })
    });
    g.bench_function("read_one_file", |b| {
        b.iter(|| black_box(read_results(&base).expect("read").cases.len()))
    });
    let (fb, fc) = (
        read_results(&base).expect("read"),
        read_results(&cand).expect("read"),
    );
    g.bench_function("statistics_only_in_memory", |b| {
        b.iter(|| black_box(compare::compare(&fb, &fc, &options.settings).tested))
    });
    g.bench_function("render_json", |b| {
        b.iter(|| black_box(compare::render(&report, Format::Json, false).len()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
