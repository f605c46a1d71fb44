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
use scalebench::results::io::read_results;
use scalebench::results::schema::ResultsFile;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

const CASES: usize = 10_000;
const SAMPLES: usize = 100;

// Each bench uses part of the builder the integration tests share.
#[allow(dead_code)]
#[path = "../tests/integration/common/fixture.rs"]
mod fixture;

/// A results file of `CASES` cases in the shape a real run writes (the shared fixture: golden
/// records given unique parameters, `SAMPLES` samples of 3 % lognormal noise, consistent
/// headline numbers). `slow(k)` scales case k's true time.
fn synthetic(seed: u64, slow: impl Fn(usize) -> f64) -> ResultsFile {
    let mut rng = fixture::Rng(seed);
    let mut f = fixture::synthetic(
        CASES,
        SAMPLES,
        &mut rng,
        &mut |r| fixture::timing_noise(r, 0.03, 0.0),
        &slow,
    );
    // Two runs of one id would be refused as the same run on both sides.
    f.run.run_id = format!("bench-compare-{seed}");
    f
}

/// Writes the two files once per process.
fn files() -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "scalebench-bench-compare-v2-{}",
        std::process::id()
    ));
    let base = dir.join("baseline.json");
    let cand = dir.join("candidate.json");
    if !base.exists() || !cand.exists() {
        fixture::write(&dir, "baseline.json", &synthetic(1, |_| 1.0));
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
        fixture::write(&dir, "candidate.json", &synthetic(2, slow));
    }
    (base, cand)
}

/// CPU time consumed by this process so far (every thread, user + system).
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, initialised local; clock_gettime writes one timespec through
    // the pointer and nothing else. std has no clock for a process's CPU time.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn bench(c: &mut Criterion) {
    let (base, cand) = files();
    // One large file a side, judged on its batches: the cost measured here is that path's
    // (a gate on one run a side is refused by default; this bench times the work, not a gate).
    let options = Options {
        allow_one_run: true,
        ..Options::default()
    };
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
