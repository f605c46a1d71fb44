//! The results format as a contract: a file written by a real run (tests/golden/results-v1.json,
//! 2 ranks) must stay readable by this crate and by an independent reader, and its numbers
//! must keep their documented meaning.

use crate::common;

use common::fixture::GOLDEN;
use common::wire::ResultsFile;
use std::path::Path;

#[test]
fn golden_v1_reads_with_the_crate() {
    let r =
        scalebench::results::io::read_results(Path::new(GOLDEN)).expect("version 1 stays readable");
    assert_eq!(r.format_version, 1);
    assert_eq!(r.cases.len(), 6);
    // ids are a function of the parameters: recomputing them must give the stored ones
    for c in &r.cases {
        assert_eq!(c.id, c.params.id(), "{}", c.params.label());
    }
}

#[test]
fn golden_v1_reads_with_independent_types() {
    let text = std::fs::read_to_string(GOLDEN).unwrap();
    let r: ResultsFile =
        serde_json::from_str(&text).expect("matches tests/integration/common/wire.rs");
    assert_eq!((r.format_version, r.metrics_version), (1, 1));
    assert_eq!(r.generator.name, "scalebench");
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert_eq!(p.world_size, 2);
    for c in &r.cases {
        let t = c.timing.as_ref().unwrap();
        assert_eq!(t.cross_rank, "mean_of_rank_means");
        let mean: f64 = t.per_rank_mean_s.iter().sum::<f64>() / t.per_rank_mean_s.len() as f64;
        assert!((t.time_s - mean).abs() <= 1e-15 + 1e-12 * mean);
        match c.params.workload.as_str() {
            "allreduce" => {
                assert_eq!(c.busbw_factor, Some(1.0)); // 2(n−1)/n at n = 2
                let algbw = c.bytes.unwrap() as f64 / t.time_s / 1e9;
                assert!((c.algbw_gbps.unwrap() - algbw).abs() <= 1e-12 * algbw);
            }
            "allgather" => {
                assert_eq!(c.busbw_factor, Some(0.5));
                assert_eq!(c.bytes, Some(c.recv_count.unwrap() * 4));
            }
            "matmul" => assert!(
                (c.gflops_total.unwrap() - 2.0 * 32f64.powi(3) * 2.0 / t.time_s / 1e9).abs() < 1e-6
            ),
            "batch_matmul" => assert_eq!(c.phases.len(), 3),
            w => panic!("unexpected {w}"),
        }
    }
}

#[test]
fn fresh_output_matches_the_golden_shape() {
    // A new run must produce the same fields (deny_unknown_fields in the wire types).
    let out = common::tmpdir("golden-fresh").join("out");
    common::solo(&[
        "run",
        "-q",
        "--out",
        out.to_str().unwrap(),
        "-w",
        "allreduce,batch_matmul",
        "--sizes",
        "64",
        "--dims",
        "16",
        "--iters",
        "3",
    ])
    .assert_code(0);
    let r = common::read_results(&out);
    assert_eq!(r.cases.len(), 3);
}
