//! The one builder of results files for tests and benches, with known truth: cases with chosen
//! parameters and chosen times, recorded by the library's own [`record`] (the step a real run
//! takes), so bytes, counts, FLOP, rates and summaries are consistent with the times exactly as
//! in a measured file; launches with a synthetic provenance; the golden file (a real 2-rank
//! run) as a base; variants with seeded noise, exact times, or hostile strings.
//!
//! Integration tests reach it as `common::fixture`. A bench is a crate of its own and cannot
//! take `tests/integration/common/mod.rs` (it needs the binary under test), so benches include
//! this file alone: `#[path = "../tests/integration/common/fixture.rs"] mod fixture;` (with
//! `#[allow(dead_code)]`: each uses part of it). That keeps test scaffolding out of the
//! library's API (no `testing` feature) and needs nothing but the library's public items.

use scalebench::measure::{timing_result, IterCounts};
use scalebench::params::{BackendKind, CaseParams, LaunchShape, MatmulShape, Scaling, Workload};
use scalebench::results::io::{new_results, parse_results, read_results, write_results};
use scalebench::results::schema::{
    BackendInfo, CaseResult, CaseStatus, DeviceBinding, HostInfo, LaunchRecord, LaunchStatus,
    Provenance, RankInfo, ResultsFile, RunInfo, TimerInfo,
};
use scalebench::run::record;
use scalebench::workload::batch::total_batch;
use scalebench::workload::collective::counts;
use scalebench::workload::matmul::total_flops;
use scalebench::workload::{CaseError, Measured};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Deterministic random numbers (SplitMix64; Box–Muller normals).
pub use scalebench::stats::SplitMix64 as Rng;

/// The golden results file, as the command line names it.
pub const GOLDEN: &str = "tests/golden/results-v1.json";

/// The golden results file (a real 2-rank run: allreduce, allgather, matmul, batch_matmul),
/// compiled in so benches and tests read it from any directory.
pub fn golden() -> ResultsFile {
    static FILE: OnceLock<ResultsFile> = OnceLock::new();
    FILE.get_or_init(|| {
        parse_results(
            Path::new(GOLDEN),
            include_str!("../../golden/results-v1.json"),
        )
        .expect("the golden file reads")
    })
    .clone()
}

/// Multiplicative timing noise: lognormal with `sigma`, and with probability `outlier_p` a
/// sample 1.5–3× slower (a preempted batch). Median 1 for the lognormal part.
pub fn timing_noise(rng: &mut Rng, sigma: f64, outlier_p: f64) -> f64 {
    let x = (sigma * rng.normal()).exp();
    if rng.uniform() < outlier_p {
        x * (1.5 + 1.5 * rng.uniform())
    } else {
        x
    }
}

/// The record a run would write for `params` measured with these per-rank means and
/// cross-rank samples (10 iterations per sample): the library's byte counts and FLOP rules,
/// then [`record`], which derives every rate.
pub fn case(
    params: &CaseParams,
    launch_id: &str,
    per_rank_mean_s: Vec<f64>,
    samples_s: Vec<f64>,
) -> CaseResult {
    let devices = params.devices();
    let n = samples_s.len() as u32;
    // The case lasts as long as its timed work (10 operations per sample) and a second more,
    // ending at 1.8e9 + 1 s: readers refuse timed work beyond a case's own stamps.
    let longest = per_rank_mean_s
        .iter()
        .chain(&samples_s)
        .copied()
        .fold(0.0, f64::max);
    let started = 1.8e9 - f64::from(10 * n) * longest;
    let used = IterCounts {
        iters: 10 * n,
        warmup: 10,
        batches: n,
    };
    let mut m = Measured {
        timing: Some(timing_result(
            params.timing,
            used,
            per_rank_mean_s,
            samples_s,
        )),
        check_iters: 1,
        ..Measured::default()
    };
    match (params.workload, params.shape, params.requested_bytes) {
        (Workload::Matmul, Some(shape), _) => {
            let scaling = params.scaling.unwrap_or(Scaling::Weak);
            m.flops_total = Some(total_flops(shape, scaling, devices));
        }
        (Workload::BatchMatmul, Some(shape), _) => {
            let scaling = params.scaling.unwrap_or(Scaling::Weak);
            let batch = total_batch(params.batch.unwrap_or(1), scaling, devices);
            m.flops_total = Some(batch as f64 * MatmulShape::square(shape.m).flops());
        }
        (w, _, Some(bytes)) if w.is_collective() => match counts(w, bytes, params.dtype, devices) {
            Ok(c) => {
                m.bytes = Some(c.bytes);
                m.send_count = Some(c.send_count);
                m.recv_count = Some(c.recv_count);
            }
            // A size the collective cannot split: a run records the case as skipped.
            Err(e) => {
                let skipped = Err(CaseError::Skipped(e.to_string()));
                return record(
                    params,
                    launch_id,
                    1.8e9,
                    1.8e9,
                    devices,
                    params.ranks(),
                    skipped,
                );
            }
        },
        (w, ..) => panic!("the fixture cannot record {w:?} cases"),
    }
    record(
        params,
        launch_id,
        started,
        1.8e9 + 1.0,
        devices,
        params.ranks(),
        Ok(m),
    )
}

/// A case whose every rank and every one of 10 samples take exactly `t` seconds, in the
/// launch of its own shape.
pub fn exact(params: &CaseParams, t: f64) -> CaseResult {
    let ranks = params.ranks() as usize;
    case(
        params,
        &params.launch_shape().id(),
        vec![t; ranks],
        vec![t; 10],
    )
}

/// `cases` cases cloned from the golden records' parameters, each made unique (collectives by
/// size, 1024 × (k + 1) bytes; GEMMs by their inner dimension, 32 + k), in the golden launch,
/// with `samples` samples = true time × `noise`, true time = (1 + k % 7) µs × `scale(k)`.
pub fn synthetic(
    cases: usize,
    samples: usize,
    rng: &mut Rng,
    noise: &mut dyn FnMut(&mut Rng) -> f64,
    scale: &dyn Fn(usize) -> f64,
) -> ResultsFile {
    let mut f = golden();
    let templates = std::mem::take(&mut f.cases);
    f.cases = (0..cases)
        .map(|k| {
            let t = &templates[k % templates.len()];
            let mut p = t.params.clone();
            if p.workload.is_collective() {
                p.requested_bytes = Some(1024 * (k as u64 + 1));
            } else if let Some(s) = p.shape.as_mut() {
                s.k = 32 + k as u64;
            }
            let true_s = 1e-6 * (1.0 + (k % 7) as f64) * scale(k);
            let samples_s: Vec<f64> = (0..samples).map(|_| true_s * noise(rng)).collect();
            let mean_s = samples_s.iter().sum::<f64>() / samples as f64;
            case(&p, &t.launch_id, vec![mean_s; t.ranks as usize], samples_s)
        })
        .collect();
    f
}

/// A file of `cases` cases with 20 samples of 2 % lognormal noise, case k `scale(k)` × slower.
pub fn simple(cases: usize, seed: u64, scale: &dyn Fn(usize) -> f64) -> ResultsFile {
    let mut rng = Rng(seed);
    synthetic(
        cases,
        20,
        &mut rng,
        &mut |r| timing_noise(r, 0.02, 0.0),
        scale,
    )
}

/// A finished launch of `shape` on synthetic CPU nodes (`node000`, …; 64 CPUs each), with a
/// full provenance: each rank bound to one CPU per device it drives.
pub fn launch(shape: LaunchShape) -> LaunchRecord {
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
                // A rank that drives several devices (hybrid) has a CPU for each.
                cpus: match shape.devices_per_rank() {
                    1 => format!("{}", r % 64),
                    k => format!("{}-{}", (r * k) % 64, (r * k) % 64 + k - 1),
                },
                devices: (0..shape.devices_per_rank())
                    .map(|d| DeviceBinding {
                        index: r * shape.devices_per_rank() + d,
                        local_index: d,
                        cpus: format!("{}", (r * shape.devices_per_rank() + d) % 64),
                        name: "cpu".into(),
                    })
                    .collect(),
                progress_thread: None,
            }
        })
        .collect();
    let provenance = Provenance {
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
                smt_siblings: vec![],
            })
            .collect(),
        environment: Default::default(),
        warnings: vec![],
        gemm: None,
        buffer_policy: None,
        mpi_thread_level_requested: None,
        mpi_thread_level: None,
        ceilings: Vec::new(),
        ceilings_skipped: None,
    };
    LaunchRecord {
        launch_id: shape.id(),
        shape,
        status: LaunchStatus::Ok,
        launcher: "srun".into(),
        command_line: vec!["scalebench".into(), "run".into()],
        started_unix_s: 1.8e9,
        finished_unix_s: Some(1.8e9 + 60.0),
        wall_s: Some(60.0),
        overhead_s: Some(1.0),
        stderr_tail: None,
        provenance: Some(provenance),
        unrepresentative: vec![],
        transport: None,
        host_load: None,
    }
}

/// A results file of these launches and cases, written by this version of scalebench.
pub fn results(run_id: &str, launches: Vec<LaunchRecord>, cases: Vec<CaseResult>) -> ResultsFile {
    new_results(
        RunInfo {
            run_id: run_id.into(),
            started_unix_s: 1.8e9,
            written_unix_s: 1.8e9 + 3600.0,
            command_line: vec!["scalebench".into(), "sweep".into()],
            emulated_nodes: false,
            labels: Default::default(),
        },
        launches,
        cases,
    )
}

/// A script that changes the page title if it ever runs.
pub const HOSTILE_SCRIPT: &str = "<script>document.title='PWNED'</script>";
/// An element whose handler changes the page title if it is ever created.
pub const HOSTILE_IMG: &str = "<img src=x onerror=\"document.title='PWNED'\">";

/// The golden file with hostile strings wherever users control them: run labels (names and
/// values), host and node names, CPU model, provenance warnings, and a failed case's message
/// (with Markdown too).
pub fn hostile() -> ResultsFile {
    let (script, img) = (HOSTILE_SCRIPT, HOSTILE_IMG);
    let mut f = golden();
    f.run.labels.insert("<b>cluster</b>".into(), script.into());
    f.run.labels.insert("site".into(), img.into());
    f.run.labels.insert(img.into(), "x".into());
    for l in &mut f.launches {
        if let Some(p) = l.provenance.as_mut() {
            for r in &mut p.ranks {
                r.host = img.into();
                r.node_name = format!("{script}{}", r.rank);
            }
            for h in &mut p.hosts {
                h.host = img.into();
                h.cpu_model = script.into();
            }
            p.warnings.push(script.into());
        }
    }
    let c = &mut f.cases[0];
    c.status = CaseStatus::Failed;
    c.message = Some(format!("{script}{img} | *md* [link](javascript:alert(1))"));
    f
}

/// Writes `f` as `DIR/NAME`, checks that the library reads it back as the same results (the
/// loader's format checks), and returns the path.
///
/// Tests edit samples to plant a change; the summary a real run writes is of its samples, so
/// each case's `stats_s` is recomputed from the edited `samples_s` first (the loader refuses a
/// summary outside its samples).
pub fn write(dir: &Path, name: &str, f: &ResultsFile) -> PathBuf {
    let p = dir.join(name);
    let mut f = f.clone();
    for t in f.cases.iter_mut().filter_map(|c| c.timing.as_mut()) {
        if let Some(s) = scalebench::stats::summarize(&t.samples_s) {
            t.stats_s = s;
        }
    }
    let f = &f;
    write_results(&p, f).expect("write results");
    let back = read_results(&p).unwrap_or_else(|e| panic!("a fixture must read back: {e}"));
    assert_eq!(back.cases.len(), f.cases.len(), "{}", p.display());
    p
}
