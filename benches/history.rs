//! `scalebench history`: ingest of many results files, and one case's series out of the index
//! (the targets of issue 32: 10,000 files, ~1 M case rows, indexed in under 60 s on 2 cores;
//! one series in under 100 ms).
//!
//! The files are generated once per process (the shared fixture: golden records given unique
//! parameters, 100 cases of 10 samples each, one run a day): `SCALEBENCH_HISTORY_FILES`
//! of them, 1,000 unless set (10,000 is the figure: ~1 M case rows, a few GB of JSON
//! and minutes to generate). Benchmarks: a full ingest into a fresh index (wall time, one
//! ingest per iteration), and `show` of one case's series over every run (the query and the
//! metric, not the printing).
//!
//! Run: `cargo bench --bench history` (`-- --quick` for a shorter run;
//! `SCALEBENCH_HISTORY_FILES=10000 cargo bench --bench history -- --quick` for the size).

use criterion::{criterion_group, criterion_main, Criterion};
use scalebench::history::query::{self, Filter, Metric, Request};
use scalebench::history::store;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const CASES: usize = 100;

#[allow(dead_code)]
#[path = "../tests/integration/common/fixture.rs"]
mod fixture;

fn files() -> usize {
    std::env::var("SCALEBENCH_HISTORY_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// The tree of `files()` runs, written once per process.
fn tree() -> PathBuf {
    let n = files();
    let dir = std::env::temp_dir().join(format!(
        "scalebench-bench-history-{n}-{}",
        std::process::id()
    ));
    if !dir.exists() {
        for i in 0..n {
            let mut rng = fixture::Rng(i as u64);
            let mut f = fixture::synthetic(
                CASES,
                10,
                &mut rng,
                &mut |r| fixture::timing_noise(r, 0.03, 0.0),
                &|_| 1.0,
            );
            f.run.run_id = format!("bench-history-{i:05}");
            f.run.started_unix_s = 1.8e9 + i as f64 * 86_400.0;
            let d = dir.join(format!("{:02}", i % 100)).join(format!("{i:05}"));
            std::fs::create_dir_all(&d).unwrap();
            fixture::write(&d, "results.json", &f);
        }
    }
    dir
}

fn bench(c: &mut Criterion) {
    let root = tree();
    let mut g = c.benchmark_group("history");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function(format!("ingest {} files of {CASES} cases", files()), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for k in 0..iters {
                let db = root.with_extension(format!("ingest-{k}.sqlite"));
                let _ = std::fs::remove_file(&db);
                let t = Instant::now();
                let mut index = store::open_for_write(&db).unwrap();
                let s = store::ingest(&mut index, std::slice::from_ref(&root)).unwrap();
                total += t.elapsed();
                assert_eq!(s.added_cases, files() * CASES);
                drop(index);
                let _ = std::fs::remove_file(&db);
            }
            total
        })
    });
    let db = root.with_extension("query.sqlite");
    if !db.exists() {
        let mut index = store::open_for_write(&db).unwrap();
        store::ingest(&mut index, std::slice::from_ref(&root)).unwrap();
    }
    let case: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT case_id FROM measurement LIMIT 1", [], |r| r.get(0))
        .unwrap();
    let req = Request {
        db: db.clone(),
        filter: Filter {
            case: Some(case),
            ..Filter::default()
        },
        metric: Metric::Auto,
        json: true,
        settings: Default::default(),
        chart: None,
    };
    g.bench_function(format!("one series over {} runs", files()), |b| {
        b.iter(|| {
            let s = query::series(black_box(&req)).unwrap();
            assert_eq!(s.len(), 1);
            assert_eq!(s[0].points.len(), files());
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
