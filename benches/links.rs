//! `scalebench links` at the scale (issue 29): a simulated 1,024-host matrix, its
//! attribution (median polish, suspects) and its heat map as SVG, end to end: the goal is
//! under 5 s for all three.
//!
//! The matrix has one slow node and one slow link (5 % log-normal noise), so the attribution
//! does the work a faulty cluster asks of it; each iteration checks that both are named.
//!
//! Run: `cargo bench --bench links` (`-- --quick` for a shorter run).

use criterion::{criterion_group, criterion_main, Criterion};
use scalebench::links::attribution::{analyse, Settings, Suspect};
use scalebench::links::simulate::Scenario;
use std::hint::black_box;
use std::time::Duration;

const HOSTS: usize = 1024;

fn bench(c: &mut Criterion) {
    let scenario = Scenario {
        nodes: HOSTS,
        seed: 29,
        slow_nodes: vec![(700, 0.7)],
        slow_links: vec![(3, 900, 0.5)],
        slow_blocks: vec![],
        noise: 0.05,
    };
    let mut g = c.benchmark_group("links");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    g.bench_function("links_1024: matrix, attribution, heat map", |b| {
        b.iter(|| {
            let m = scenario.matrix();
            let a = analyse(&m, &Settings::default());
            let named: Vec<&Suspect> = a.findings.iter().map(|f| &f.suspect).collect();
            assert!(named.contains(&&Suspect::Node { node: 700 }), "{named:?}");
            assert!(
                named.contains(&&Suspect::Link { a: 3, b: 900 }),
                "{named:?}"
            );
            let file = scalebench::cli::simulated_file(&scenario, &m, &a);
            let svg = scalebench::report::links_heat_map_svg(&file).unwrap();
            black_box(svg.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
