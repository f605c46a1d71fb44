//! Ceilings on a loaded host (issue 48), on the readings of 30 launches
//! (tests/fixtures/ceilings/loaded/readings.json: synthetic, seeded, shaped after the issue's
//! ranges; see its generator): a figure above a measured bound is flagged, never a fraction,
//! and the "far below its ceiling" verdict for a fixed figure holds in ≥ 95 % of the launches
//! when each launch's bound is the host measurement (best of rounds spread over time, its
//! spread the uncertainty), where a launch's own best-of-two sample made it follow the noise.

use scalebench::params::{CaseParams, Dtype, Workload};
use scalebench::results::ceilings::bounds::{
    best_of_rounds, far_below, readable_frac, uncertainty_of,
};
use scalebench::results::ceilings::{
    fractions, Ceiling, CeilingSource, CeilingUnit, HostCeilings, LaunchCeilings, Measurement,
    PeakFraction,
};

const FMA: &str = "cpu.peak.f32.avx512f.one_cpu";
const COPY: &str = "cpu.mem.copy.all_cpus";
/// The report's cut (`report::ceilings::FAR_BELOW`): below half the bound's low end.
const CUT: f64 = 0.5;

fn readings() -> Vec<serde_json::Value> {
    let f = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ceilings/loaded/readings.json"
    );
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    v["launches"].as_array().unwrap().clone()
}

fn measured(id: &str, unit: CeilingUnit, v: f64) -> Ceiling {
    Ceiling {
        id: id.into(),
        what: id.into(),
        unit,
        value: Some(v),
        source: CeilingSource::Measured,
        detail: "fixture".into(),
    }
}

fn values(l: &serde_json::Value, key: &str) -> Vec<f64> {
    l[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// A launch's host as issue 48 records it: the best of its rounds, their spread.
fn host_new(l: &serde_json::Value) -> HostCeilings {
    let fma = values(l, "fma_f32_one_cpu_gflops");
    let copy = values(l, "stream_copy_all_cpus_gbps");
    let rounds: Vec<Vec<Ceiling>> = (0..fma.len())
        .map(|r| {
            let mut c = vec![measured(FMA, CeilingUnit::Gflops, fma[r])];
            if let Some(v) = copy.get(r) {
                c.push(measured(COPY, CeilingUnit::Gbps, *v));
            }
            c
        })
        .collect();
    let (ceilings, spread) = best_of_rounds(&rounds);
    host(ceilings, Some(spread.into_iter().collect()))
}

/// A launch's host as recorded before: its own best-of-two sample, no uncertainty.
fn host_old(l: &serde_json::Value) -> HostCeilings {
    let o = &l["old"];
    host(
        vec![
            measured(
                FMA,
                CeilingUnit::Gflops,
                o["fma_f32_one_cpu_gflops"].as_f64().unwrap(),
            ),
            measured(
                COPY,
                CeilingUnit::Gbps,
                o["stream_copy_all_cpus_gbps"].as_f64().unwrap(),
            ),
        ],
        None,
    )
}

fn host(
    ceilings: Vec<Ceiling>,
    spread: Option<std::collections::BTreeMap<String, f64>>,
) -> HostCeilings {
    HostCeilings {
        host: "vm".into(),
        rank: 0,
        cpus: "0-1".into(),
        seconds: 1.0,
        ceilings,
        warnings: Vec::new(),
        counters: Vec::new(),
        measurement: spread.map(|u| Measurement {
            id: "m".into(),
            measured_unix_s: 0.0,
            reused: false,
            rounds: 7,
            uncertainty_rel: u,
            cache_file: None,
            note: None,
        }),
    }
}

/// A GEMM at `gflops` (f32, 1 thread) or an allreduce on 1×2 at `busbw`: its fraction.
fn fraction(h: &HostCeilings, gemm: bool, figure: f64) -> PeakFraction {
    let w = if gemm {
        Workload::Matmul
    } else {
        Workload::Allreduce
    };
    let mut p = CaseParams::new(w, 1, 2);
    p.dtype = Dtype::F32;
    p.threads_per_device = Some(1);
    let hosts = std::slice::from_ref(h);
    let l = LaunchCeilings {
        hosts,
        skipped: None,
        host_count: 1,
        emulated_nodes: false,
        nodes: 1,
        rank0_host: "vm",
    };
    let (b, g) = if gemm {
        (None, Some(figure))
    } else {
        (Some(figure), None)
    };
    fractions(&p, b, g, &l).remove(0)
}

/// far below (as the report judges), else not; and whether it was flagged under-measured.
fn verdict(f: &PeakFraction, old_rule: bool) -> (bool, bool) {
    let far = match readable_frac(f) {
        Some(x) if old_rule => x < CUT,
        Some(x) => far_below(x, uncertainty_of(f.uncertainty_rel, &f.ceiling_id), CUT),
        None => false,
    };
    (far, f.under_measured)
}

#[test]
fn the_far_below_verdict_for_a_fixed_figure_is_stable_over_30_loaded_launches() {
    let launches = readings();
    assert_eq!(launches.len(), 30);
    // (gemm?, figure, asserted): the GEMM at 80 GFLOP/s, a slow kernel at 20, a busbw
    // at 2 GB/s and 0.3 GB/s; 60 GFLOP/s and 1 GB/s sit inside the band the bound's spread
    // leaves (their rates are printed, not held)
    for (gemm, figure, held) in [
        (true, 80.0, true),
        (true, 20.0, true),
        (false, 2.0, true),
        (false, 0.3, true),
        (true, 60.0, false),
        (false, 1.0, false),
    ] {
        let count = |old: bool| {
            let v: Vec<(bool, bool)> = launches
                .iter()
                .map(|l| {
                    let h = if old { host_old(l) } else { host_new(l) };
                    verdict(&fraction(&h, gemm, figure), old)
                })
                .collect();
            let far = v.iter().filter(|x| x.0).count();
            let flagged = v.iter().filter(|x| x.1).count();
            (far, flagged)
        };
        let (far_new, flag_new) = count(false);
        let (far_old, flag_old) = count(true);
        let same = far_new.max(30 - far_new);
        let what = if gemm { "GEMM GFLOP/s" } else { "busbw GB/s" };
        println!(
            "{what} {figure}: far below in {far_new}/30 with the host measurement (same verdict in {same}/30, {flag_new} flagged under-measured); with each launch's own sample {far_old}/30 ({flag_old} flagged)"
        );
        if held {
            assert!(
                same >= 29,
                "{what} {figure}: the verdict agrees in only {same}/30 launches"
            );
        }
    }
}

#[test]
fn a_figure_above_a_measured_bound_is_flagged_with_both_numbers_never_a_fraction() {
    // the gemm crate's GEMM the issue saw at frac_peak 1.39 and 1.13: 150 GFLOP/s against
    // each launch's own sample (88–175), and busbw 2 GB/s against its Copy sample over 5 B
    let mut flagged = 0;
    for l in &readings() {
        for h in [host_old(l), host_new(l)] {
            for (gemm, figure) in [(true, 150.0), (false, 2.0), (true, 80.0), (false, 0.3)] {
                let f = fraction(&h, gemm, figure);
                let bound = f.bound.unwrap();
                assert!(
                    f.frac_peak.is_none_or(|x| x <= 1.0),
                    "a fraction above 1: {f:?}"
                );
                if figure > bound {
                    assert!(f.under_measured && f.frac_peak.is_none(), "{f:?}");
                    let why = f.unknown.as_deref().unwrap();
                    assert!(
                        why.contains("under-measured")
                            && why.contains(" is above its measured bound "),
                        "{why}"
                    );
                    flagged += 1;
                } else {
                    assert!(!f.under_measured && f.frac_peak.is_some(), "{f:?}");
                }
            }
        }
    }
    println!("{flagged} figures above their bound flagged over 30 launches × 2 ways × 4 figures");
    assert!(
        flagged > 0,
        "the fixture's low samples put some figures above their bound"
    );
}
