//! `scalebench ceilings`: every ceiling has a value with its source or says why it is unknown,
//! and a GEMM kernel forced older than the CPU is named with the variable that forced it — in
//! the command and in a run's results.

use crate::common;
use common::{bin, mpi_lock, Ran};
use std::process::Command;

/// `scalebench ceilings ARGS` with OPENBLAS_CORETYPE set to `coretype` or removed (a machine
/// may set it for everyone), holding the MPI lock: the microbenchmarks take every CPU, and
/// no other test's launch should run beside them.
fn ceilings(args: &[&str], coretype: Option<&str>) -> Ran {
    let _g = mpi_lock();
    let mut cmd = Command::new(bin());
    cmd.arg("ceilings").args(args);
    match coretype {
        Some(c) => cmd.env("OPENBLAS_CORETYPE", c),
        None => cmd.env_remove("OPENBLAS_CORETYPE"),
    };
    Ran::from(cmd.output().unwrap())
}

/// Whether this CPU has a `flag` (/proc/cpuinfo: what the kernel check compares against).
pub(crate) fn cpu_has(flag: &str) -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == flag))
}

#[test]
fn every_ceiling_has_a_source_and_a_value_or_a_reason() {
    let out = ceilings(&["--json"], None);
    out.assert_code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let found = v["ceilings"].as_array().unwrap();
    let ids: Vec<&str> = found.iter().map(|c| c["id"].as_str().unwrap()).collect();
    // both precisions' peak on one CPU, STREAM Copy and Triad on one CPU
    for want in [
        "cpu.peak.f32.",
        "cpu.peak.f64.",
        "cpu.mem.copy.one_cpu",
        "cpu.mem.triad.one_cpu",
    ] {
        assert!(
            ids.iter().any(|i| i.starts_with(want)),
            "{want} missing: {ids:?}"
        );
    }
    if cpu_has("avx2") && cpu_has("fma") {
        assert!(ids.contains(&"cpu.peak.f64.avx2+fma.one_cpu"), "{ids:?}");
        assert!(
            ids.contains(&"cpu.peak.f64.sse2.one_cpu"),
            "every ISA the CPU runs: {ids:?}"
        );
    }
    for c in found {
        let source = c["source"].as_str().unwrap();
        assert!(!c["detail"].as_str().unwrap().is_empty(), "{c}");
        if source == "unknown" {
            assert!(c["value"].is_null(), "{c}");
        } else {
            // CPU figures are measured here; a host with a real NIC or GPU adds sysfs, driver
            // and table ceilings, each with a value
            let id = c["id"].as_str().unwrap();
            let want = match id.split('.').next().unwrap() {
                // the theoretical peak is computed from cpuinfo and cpufreq
                "cpu" if id.starts_with("cpu.theory.") => "computed",
                "cpu" => "measured",
                "net" => "sysfs",
                _ => source,
            };
            assert!(
                source == want
                    && ["measured", "sysfs", "driver", "table", "computed"].contains(&source),
                "{c}"
            );
            assert!(c["value"].as_f64().is_some_and(|x| x > 0.0), "{c}");
            assert!(
                ["gflops", "gbps"].contains(&c["unit"].as_str().unwrap()),
                "{c}"
            );
        }
    }
    // the text form lists the same ceilings with their source
    let text = ceilings(&["--no-stream", "--best-only"], None);
    let t = &text.assert_code(0).stdout;
    assert!(t.contains("GFLOP/s") && t.contains("measured"), "{t}");
    assert!(!t.contains("STREAM"), "--no-stream: {t}");
    assert!(!t.contains("sse2") || !cpu_has("avx2"), "--best-only: {t}");
}

#[test]
fn a_forced_older_kernel_is_named_with_its_variable() {
    // Prescott (SSE) is older than any CPU with AVX; Debian's OpenBLAS is DYNAMIC_ARCH, so
    // the variable takes effect and the library reports the core it runs.
    if !cpu_has("avx") {
        return;
    }
    let out = ceilings(&["--no-stream", "--best-only"], Some("Prescott"));
    let t = &out.assert_code(0).stdout;
    assert!(t.contains("kernel: Prescott"), "{t}");
    assert!(
        t.contains("warning: GEMM runs OpenBLAS's Prescott kernels, which use SSE")
            && t.contains("forced by OPENBLAS_CORETYPE=Prescott; fix: unset OPENBLAS_CORETYPE=Prescott or set OPENBLAS_CORETYPE="),
        "{t}"
    );
    // the fix that needs no restart is timed beside the library, with its figures
    assert_measured(t);
    // without the variable the library's own pick is not warned about (this CPU's tier is
    // within what Debian's OpenBLAS knows, unless it is newer than the build)
    let own = ceilings(&["--no-stream", "--best-only"], None);
    let t = &own.assert_code(0).stdout;
    // (a CPU newer than the build may still get "not forced by any variable")
    assert!(!t.contains("forced by OPENBLAS_CORETYPE"), "{t}");

    // a run's results carry the same warning, so a report reader sees why GEMM is slow
    let dir = common::tmpdir("ceilings-forced");
    let d = dir.to_str().unwrap();
    common::mpirun_with(
        1,
        &["-x", "OPENBLAS_CORETYPE=Prescott"],
        &[
            "run", "-q", "--out", d, "-w", "matmul", "--gemm", "blas", "--dims", "64", "--iters",
            "1",
        ],
    )
    .assert_code(0);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let warnings = v["launches"][0]["provenance"]["warnings"].to_string();
    assert!(
        warnings.contains(
            "forced by OPENBLAS_CORETYPE=Prescott; fix: unset OPENBLAS_CORETYPE=Prescott"
        ),
        "{warnings}"
    );
    assert_measured(&warnings);
}

/// The kernel finding carries the measured speed-up of `--gemm gemm-crate` (two positive
/// rates and their ratio), or says why it was not measured.
fn assert_measured(t: &str) {
    if let Some(i) = t.find("--gemm gemm-crate's speed-up not measured: ") {
        eprintln!("not measured: {}", &t[i..]);
        return;
    }
    let i = t
        .find("measured here: --gemm gemm-crate ran a 384×384×384 f32 GEMM at ")
        .unwrap_or_else(|| panic!("no measured speed-up: {t}"));
    let rest = &t[i..];
    let nums: Vec<f64> = rest
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect();
    // 384, 384, 384, 32 (f32), crate GFLOP/s, library GFLOP/s, ratio, ...
    assert!(
        nums.len() >= 7 && nums[4] > 0.0 && nums[5] > 0.0 && nums[6] > 0.0,
        "{rest}"
    );
    assert!(
        rest.contains("median of 5 alternating pairs of ≥ 10 ms"),
        "{rest}"
    );
    eprintln!(
        "{}",
        &rest[..rest.find(" s)").map_or(rest.len(), |j| j + 3)]
    );
}

/// A recorded fixture's path.
fn fixture(rel: &str) -> String {
    format!(
        "{}/tests/fixtures/ceilings/{rel}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn network_and_gpu_ceilings_of_a_recorded_node_with_their_warnings() {
    let root = fixture("ib_ndr/before/sys");
    let gpus = fixture("gpu/gen4_x8.toml");
    let base = [
        "--no-stream",
        "--best-only",
        "--sysfs-root",
        &root,
        "--ib-rate-gbps",
        "400",
        "--gpu-values",
        &gpus,
    ];
    let mut args = vec!["--json"];
    args.extend(base);
    let out = ceilings(&args, None);
    out.assert_code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let get = |id: &str| {
        v["ceilings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id} missing: {v}"))
            .clone()
    };
    // NDR 4X = 400 Gb/s = 50 GB/s per direction; the port negotiated down to HDR = 25 GB/s
    assert_eq!(get("net.ib.mlx5_0.1")["value"].as_f64(), Some(50.0));
    assert_eq!(get("net.ib.mlx5_0.1")["source"], "sysfs");
    assert_eq!(get("net.ib.mlx5_1.1")["value"].as_f64(), Some(25.0));
    // Gen4 x8: half of Gen4 x16's 31.5 GB/s
    assert_eq!(get("gpu0.pcie")["value"].as_f64(), Some(15.75));
    assert_eq!(get("gpu0.pcie")["source"], "driver");
    assert!(get("gpu0.peak.bf16_tensor")["value"].is_null());
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    for (who, why) in [
        ("mlx5_1 port 1", "negotiated down"),
        ("mlx5_2 port 1", "not ACTIVE"),
        ("gpu0", "x8 of x16"),
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(who) && w.contains(why)),
            "{who}: {why} not in {warnings:?}"
        );
    }
    // the text form: each port with its source, and the warnings
    let text = ceilings(&base, None);
    let t = &text.assert_code(0).stdout;
    assert!(
        t.contains("mlx5_0 port 1 (InfiniBand)") && t.contains("sysfs"),
        "{t}"
    );
    assert!(t.contains("warning: mlx5_2 port 1"), "{t}");
}

#[test]
fn a_host_without_network_ports_says_so() {
    let empty = common::tmpdir("ceil-nosys");
    let out = ceilings(
        &[
            "--no-stream",
            "--best-only",
            "--sysfs-root",
            empty.to_str().unwrap(),
        ],
        None,
    );
    let t = &out.assert_code(0).stdout;
    assert!(
        t.contains("no InfiniBand port and no physical network interface"),
        "{t}"
    );
    assert!(!t.contains("net."), "{t}");
}

#[test]
fn bad_gpu_values_and_ib_rate_are_refused_naming_the_fix() {
    let dir = common::tmpdir("ceil-badgpu");
    let f = dir.join("gpus.toml");
    std::fs::write(&f, "[[amd]]\nindex = 0\nname = \"x\"\ngfx = \"gfx90a\"\n").unwrap();
    let out = ceilings(&["--no-stream", "--gpu-values", f.to_str().unwrap()], None);
    out.assert_code(2);
    assert!(
        out.stderr.contains("gpus.toml, line 4") && out.stderr.contains("gfx"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "no partial output: {}", out.stdout);
    let out = ceilings(&["--no-stream", "--ib-rate-gbps=0"], None);
    out.assert_code(2);
    assert!(
        out.stderr.contains("positive rate in Gb/s"),
        "{}",
        out.stderr
    );
}

/// `run` with tiny sizes on `np` ranks (EXTRA added), and its results.
/// A tiny allreduce and GEMM on NP ranks with EXTRA options; its results.
pub(crate) fn tiny_run(
    np: u32,
    dir: &std::path::Path,
    extra: &[&str],
) -> common::wire::ResultsFile {
    let mut args = common::run_q(
        dir,
        &[
            "-w",
            "allreduce,matmul",
            "--sizes",
            "4KiB",
            "--dims",
            "64",
            "--in-place",
            "no",
            "--iters",
            "2",
            "--warmup",
            "0",
        ],
    );
    args.extend_from_slice(extra);
    common::mpirun(np, &args).assert_code(0);
    common::read_results(dir)
}

#[test]
fn a_run_records_its_hosts_ceilings_and_every_figure_its_fraction_of_peak() {
    let dir = common::tmpdir("ceilings-run");
    let r = tiny_run(2, &dir, &[]);
    let p = r.launches[0].provenance.as_ref().unwrap();
    // two ranks on one host: one entry, measured by the lowest rank, on both ranks' CPUs
    assert_eq!(p.ceilings.len(), 1, "{:?}", p.ceilings);
    let h = &p.ceilings[0];
    assert_eq!((h.host.as_str(), h.rank), (p.hosts[0].host.as_str(), 0));
    assert!(!h.cpus.is_empty());
    // a generous bound on the start-up cost (the goal is 0.5 s; CI machines are shared)
    assert!(h.seconds > 0.0 && h.seconds < 30.0, "{}", h.seconds);
    assert!(p.ceilings_skipped.is_none());
    for want in ["cpu.peak.f32.", "cpu.peak.f64.", "cpu.mem.copy."] {
        assert!(
            h.ceilings.iter().any(|c| c.id.starts_with(want)),
            "{want} missing: {:?}",
            h.ceilings
        );
    }
    for c in &h.ceilings {
        match c.value {
            // sanity bounds far above any CPU: 1 PFLOP/s, 100 TB/s
            Some(v) => assert!(
                // the network's ceilings are read from sysfs (whatever this machine has)
                (c.source == "measured"
                    || (c.id.starts_with("net.") && c.source == "sysfs")
                    || (c.id.starts_with("cpu.theory.") && c.source == "computed"))
                    && v > 0.0
                    && v < 1e6
                    && !c.detail.is_empty(),
                "{c:?}"
            ),
            None => assert!(c.source == "unknown" && !c.detail.is_empty(), "{c:?}"),
        }
        assert!(["gflops", "gbps"].contains(&c.unit.as_str()), "{c:?}");
    }
    let mut seen = (0, 0);
    for case in &r.cases {
        for (figure, value) in [("busbw_gbps", case.busbw_gbps), ("gflops", case.gflops)] {
            let Some(value) = value else { continue };
            assert!(value > 0.0);
            let f: Vec<_> = case.peak.iter().filter(|f| f.figure == figure).collect();
            assert_eq!(f.len(), 1, "{}: {figure}: {:?}", case.id, case.peak);
            let f = f[0];
            // the ceiling is one the provenance holds
            let c = h
                .ceilings
                .iter()
                .find(|c| c.id == f.ceiling_id)
                .unwrap_or_else(|| panic!("{}: {} not in the provenance", case.id, f.ceiling_id));
            match f.frac_peak {
                Some(x) => {
                    let bound = f.bound.unwrap();
                    assert!(x > 0.0 && x < 100.0 && bound > 0.0, "{f:?}");
                    assert!((x - value / bound).abs() <= 1e-9 * x, "{f:?}");
                    assert!(f.unknown.is_none(), "{f:?}");
                }
                // unknown, or above a measured bound (under-measured: both numbers kept)
                None => assert!(
                    (c.value.is_none() || (f.under_measured && f.bound.is_some()))
                        && f.unknown.is_some(),
                    "{f:?}"
                ),
            }
            if figure == "busbw_gbps" {
                assert!(f.ceiling_id.starts_with("cpu.mem.copy."), "{f:?}");
                seen.0 += 1;
            } else {
                // f32 by default, one thread per device
                assert!(f.ceiling_id.starts_with("cpu.peak.f32."), "{f:?}");
                assert_eq!(f.cpus, Some(1), "{f:?}");
                seen.1 += 1;
            }
        }
    }
    assert!(seen.0 >= 1 && seen.1 >= 1, "figures seen: {seen:?}");
}

#[test]
fn no_ceilings_records_none_and_says_so_and_files_without_them_still_report_and_compare() {
    let dir = common::tmpdir("ceilings-none");
    let (with, with2, without) = (dir.join("with"), dir.join("with2"), dir.join("without"));
    tiny_run(2, &with, &[]);
    tiny_run(2, &with2, &[]);
    let r = tiny_run(2, &without, &["--no-ceilings"]);
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert!(p.ceilings.is_empty(), "{:?}", p.ceilings);
    assert!(
        p.ceilings_skipped
            .as_deref()
            .is_some_and(|s| s.contains("--no-ceilings")),
        "{:?}",
        p.ceilings_skipped
    );
    // every figure says its ceiling is unknown, and why
    for case in r
        .cases
        .iter()
        .filter(|c| c.busbw_gbps.is_some() || c.gflops.is_some())
    {
        assert!(!case.peak.is_empty(), "{}", case.id);
        for f in &case.peak {
            assert!(f.frac_peak.is_none() && f.bound.is_none(), "{f:?}");
            assert!(
                f.unknown.as_deref().unwrap().contains("--no-ceilings"),
                "{f:?}"
            );
        }
    }
    // a file from before ceilings were recorded: no provenance ceilings, no case `peak`
    let path = without.join("results.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for l in v["launches"].as_array_mut().unwrap() {
        l["provenance"]
            .as_object_mut()
            .unwrap()
            .remove("ceilings_skipped");
    }
    for c in v["cases"].as_array_mut().unwrap() {
        c.as_object_mut().unwrap().remove("peak");
    }
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("\"ceilings") && !text.contains("\"peak\""));
    let rep = dir.join("report");
    let ran = common::report(&[
        common::s(&without),
        "--out",
        common::s(&rep),
        "--format",
        "md",
    ]);
    common::no_panic(&ran);
    ran.assert_code(0);
    // the report's per-size table: busbw as a fraction of its ceiling
    let rep = dir.join("report-with");
    common::report(&[common::s(&with), "--out", common::s(&rep), "--format", "md"]).assert_code(0);
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(md.contains("out-of-place busbw / ceiling"), "{md}");
    // compare: the fraction of peak of each side beside the change, where both have it
    let ran = common::Ran::raw(
        std::process::Command::new(bin())
            .args([
                "compare",
                common::s(&with),
                common::s(&with2),
                "--format",
                "json",
                // two samples a side: too few for the gate, enough to show the fractions
                "--allow-low-power",
                // one run a side: this test is about the fractions shown, not the gate
                "--allow-one-run",
            ])
            .output()
            .unwrap(),
    );
    let v: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", ran.stdout, ran.stderr));
    // Each side's fraction is the one its results file records as readable, and only that: a
    // figure above its measured bound (flagged under-measured, which either run may be on a
    // loaded host) or a fraction above 1 of a CPU bound is never shown as a fraction.
    let recorded = |dir: &std::path::Path| common::read_results(dir);
    let (rb, rc) = (recorded(&with), recorded(&with2));
    let readable = |r: &common::wire::ResultsFile, id: &str, figure: &str| {
        let case = r.cases.iter().find(|c| c.id == id).unwrap();
        let f = case.peak.iter().find(|f| f.figure == figure)?;
        let shown = f
            .frac_peak
            .filter(|x| !(f.under_measured || *x > 1.0 && f.ceiling_id.starts_with("cpu.")));
        if shown.is_none() {
            // no fraction: the file says why
            assert!(f.unknown.as_deref().is_some_and(|w| !w.is_empty()), "{f:?}");
        }
        shown
    };
    let mut shown = 0;
    for c in v["cases"].as_array().unwrap() {
        let figure = match c["stats"]["metric"].as_str() {
            Some("busbw") => "busbw_gbps",
            Some("gflops") => "gflops",
            _ => continue,
        };
        let id = c["id"].as_str().unwrap();
        for (side, r) in [("baseline", &rb), ("candidate", &rc)] {
            let want = readable(r, id, figure);
            let got = c["stats"][format!("{side}_frac_peak")].as_f64();
            assert_eq!(got, want, "{side} of {id}: {c}");
            if let Some(x) = got {
                assert!(x > 0.0, "{c}");
                shown += 1;
            }
        }
    }
    // a 64 × 64 GEMM reads far below the FMA peak: at least that fraction is shown
    assert!(shown > 0, "no fraction shown: {}", ran.stdout);
    // the old file beside a new one in compare, both ways: no fraction where one side lacks it
    for (a, b) in [(&with, &without), (&without, &with)] {
        let ran = common::Ran::raw(
            std::process::Command::new(bin())
                .args([
                    "compare",
                    common::s(a),
                    common::s(b),
                    "--allow-low-power",
                    "--allow-one-run",
                ])
                .output()
                .unwrap(),
        );
        common::no_panic(&ran);
        // 0 or 1: real timings of two runs may differ by chance; a refusal (2) would mean the
        // ceilings made the runs incomparable (low power is allowed: two samples a side)
        assert!(
            ran.code == 0 || ran.code == 1,
            "{}\n{}",
            ran.stdout,
            ran.stderr
        );
    }
}

#[test]
fn every_busbw_and_gflops_figure_of_the_demo_study_has_a_ceiling_or_says_why_not() {
    let r = common::read_results(crate::report::demo());
    for l in &r.launches {
        let p = l.provenance.as_ref().unwrap();
        assert!(!p.ceilings.is_empty(), "{}: no ceilings", l.launch_id);
    }
    let mut figures = 0;
    for c in &r.cases {
        for (figure, value) in [("busbw_gbps", c.busbw_gbps), ("gflops", c.gflops)] {
            if value.is_none() {
                continue;
            }
            figures += 1;
            let f = c
                .peak
                .iter()
                .find(|f| f.figure == figure)
                .unwrap_or_else(|| panic!("{}: {figure} has no ceiling: {:?}", c.id, c.peak));
            assert!(!f.ceiling_id.is_empty());
            match f.frac_peak {
                Some(x) => assert!(
                    (0.0..100.0).contains(&x) && f.bound.is_some_and(|b| b > 0.0),
                    "{f:?}"
                ),
                None => assert!(f.unknown.as_deref().is_some_and(|u| !u.is_empty()), "{f:?}"),
            }
        }
    }
    // allreduce and allgather over 7 sizes, and the GEMMs
    assert!(figures >= 28, "{figures} figures");
}

#[test]
fn sweep_no_ceilings_skips_them_in_every_launch_and_a_resume_may_turn_them_back_on() {
    let dir = common::tmpdir("ceilings-sweep");
    let spec = dir.join("s.toml");
    std::fs::write(
        &spec,
        "name = \"nc\"\n[axes]\nworkloads = [\"allreduce\"]\nsizes = \"4KiB\"\nin_place = false\ndevices_per_node = [1, 2]\n[run]\niters = 2\nwarmup = 0\n",
    )
    .unwrap();
    let out = dir.join("out");
    let sweep = |flag: &str| {
        common::solo(&[
            "sweep",
            "-q",
            common::s(&spec),
            "--out",
            common::s(&out),
            flag,
        ])
        .assert_code(0);
    };
    sweep("--no-ceilings");
    let r = common::read_results(&out);
    assert_eq!(r.launches.len(), 2);
    for l in &r.launches {
        let p = l.provenance.as_ref().unwrap();
        assert!(p.ceilings.is_empty(), "{}: {:?}", l.launch_id, p.ceilings);
        assert!(p.ceilings_skipped.is_some(), "{}", l.launch_id);
    }
    // whether ceilings are measured changes no figure: resuming without the flag is the same plan
    sweep("--resume");
    // and the same sweep without the flag measures them in every launch
    let again = dir.join("again");
    let r = common::sweep_ok(&spec, &again);
    for l in &r.launches {
        let p = l.provenance.as_ref().unwrap();
        assert!(!p.ceilings.is_empty(), "{}", l.launch_id);
    }
}

/// Two launches (1 and 2 ranks on this host, no binding: both offered every CPU), a GEMM of
/// OpenBLAS forced onto Prescott in each.
const TWO_LAUNCHES: &str = r#"
name = "two-launches"
[axes]
devices_per_node = [1, 2]
workloads = ["allreduce", "matmul"]
sizes = ["4KiB"]
dims = 48
[run]
time_budget_s = 0.02
gemm = "blas"
[launch]
oversubscribe = true
timeout_s = 120
[launch.env]
OPENBLAS_CORETYPE = "Prescott"
"#;

#[test]
fn a_sweeps_launches_share_one_host_measurement_and_its_closing_line_counts_their_warnings() {
    let dir = common::tmpdir("ceilings-sweep-cache");
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, TWO_LAUNCHES).unwrap();
    let out = dir.join("out");
    // the sweep's own cache (<out>/ceilings), whatever cache the caller's environment names
    let ran = common::solo_without(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &["SCALEBENCH_CEILINGS_CACHE"],
    );
    ran.assert_code(0);
    let r = common::read_results(&out);
    assert_eq!(r.launches.len(), 2, "{:?}", r.launches);
    let m: Vec<&common::wire::Measurement> = r
        .launches
        .iter()
        .map(|l| {
            let p = l.provenance.as_ref().unwrap();
            assert_eq!(p.ceilings.len(), 1);
            p.ceilings[0]
                .measurement
                .as_ref()
                .expect("the measurement used")
        })
        .collect();
    // one measurement: taken by the first launch, reused by the second, in the sweep's cache
    assert_eq!(m[0].id, m[1].id);
    assert_eq!(m[0].measured_unix_s, m[1].measured_unix_s);
    assert_eq!(
        m.iter().filter(|m| !m.reused).count(),
        1,
        "one launch measures: {m:?}"
    );
    let file = m[0].cache_file.as_deref().unwrap();
    assert!(
        file.starts_with(out.join("ceilings").to_str().unwrap()),
        "{file}"
    );
    assert!(std::path::Path::new(file).is_file());
    assert!(m[0].rounds >= 1, "{m:?}");
    // the sweep's end re-checked the entry and completed it to the full count of rounds, each
    // kept with when it ran and how busy the host's other processes were
    let entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let readings = entry["readings"].as_array().unwrap();
    assert!(entry["rounds"].as_u64().unwrap() >= 7, "{entry}");
    assert_eq!(readings.len() as u64, entry["rounds"].as_u64().unwrap());
    assert!(readings.iter().all(|r| r["unix_s"].as_f64().unwrap() > 0.0));
    assert!(entry["rechecks"].as_array().is_some_and(|r| r.len() == 1));
    // the two launches' CPU ceilings are the same readings
    let cpu = |i: usize| {
        let p = r.launches[i].provenance.as_ref().unwrap();
        p.ceilings[0]
            .ceilings
            .iter()
            .filter(|c| c.id.starts_with("cpu."))
            .map(|c| (c.id.clone(), c.value))
            .collect::<Vec<_>>()
    };
    assert_eq!(cpu(0), cpu(1));
    // the closing line counts the launches' warnings (the forced kernel, in both)
    let done = ran
        .stderr
        .lines()
        .find(|l| l.starts_with("# done: "))
        .unwrap_or_else(|| panic!("no closing line: {}", ran.stderr));
    if cpu_has("avx") {
        assert!(
            done.contains("2 launches of 2 carried")
                && done.contains("GEMM runs OpenBLAS's Prescott"),
            "{done}"
        );
    }
    assert!(
        ran.stderr.contains("# ceilings re-checked at the end"),
        "{}",
        ran.stderr
    );
}

/// Issue 48 follow-up: a cold host cache is measured after the cases, not in the start-up
/// (which the watchdog holds to --op-timeout), and within a budget of 40 % of --op-timeout:
/// with a 2 s limit a cold run finishes (before: 7 rounds of STREAM at 4 × LLC inside the
/// start-up took 3.3-9.3 s on a 2-CPU VM and the watchdog ended the run). The next run reads
/// the entry at its start and adds the rounds it still lacks.
#[test]
fn a_cold_cache_is_measured_after_the_cases_inside_the_deadline() {
    let dir = common::tmpdir("ceilings-cold");
    let cache = dir.join("cache");
    let mut notes = Vec::new();
    for i in 0..2 {
        let out = dir.join(format!("out{i}"));
        let o = out.to_str().unwrap();
        let cl = [
            "mpirun",
            "-np",
            "2",
            "--oversubscribe",
            bin(),
            "run",
            "-q",
            "--out",
            o,
            "-w",
            "allreduce,matmul",
            "--sizes",
            "4KiB",
            "--dims",
            "64",
            "--in-place",
            "no",
            "--iters",
            "2",
            "--warmup",
            "0",
            "--op-timeout",
            "2",
        ];
        let env = [("SCALEBENCH_CEILINGS_CACHE", cache.to_str().unwrap())];
        let (r, d) = common::bounded(120, &cl, &env);
        assert_eq!(r.code, 0, "run {i} after {d:?}: {}", r.stderr);
        let res = common::read_results(&out);
        let h = &res.launches[0].provenance.as_ref().unwrap().ceilings[0];
        let m = h.measurement.as_ref().expect("a measurement");
        assert!(m.rounds >= 1, "{m:?}");
        // the FMA peaks are always measured (at least one round runs)
        assert!(
            h.ceilings
                .iter()
                .any(|c| c.id.starts_with("cpu.peak.f32.") && c.value.is_some()),
            "{:?}",
            h.ceilings
        );
        // every figure's fraction was read against the ceilings the launch ended with
        for case in &res.cases {
            for f in &case.peak {
                assert!(
                    h.ceilings.iter().any(|c| c.id == f.ceiling_id) || f.unknown.is_some(),
                    "{f:?}"
                );
            }
        }
        notes.push((m.reused, m.note.clone().unwrap_or_default(), m.rounds));
    }
    eprintln!("cold, then warm: {notes:?}");
    // the first run found nothing and measured after its cases
    let (reused, note, _) = &notes[0];
    assert!(!reused, "{note}");
    assert!(
        note.contains("no measurement of this host") && note.contains("after its cases"),
        "{note}"
    );
    // the second read it at its start: reused as it was, or rounds added to it
    let (reused, note, rounds) = &notes[1];
    assert!(*reused || note.contains("rounds added"), "{note}");
    assert!(*rounds >= notes[0].2);
    assert!(
        cache.read_dir().unwrap().count() == 1,
        "one entry for one host and CPU set"
    );
}
