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

/// The best vector tier of this CPU, from /proc/cpuinfo (what the check compares against).
fn cpu_has(flag: &str) -> bool {
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
            assert_eq!(source, "measured", "{c}");
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
            && t.contains("forced by OPENBLAS_CORETYPE=Prescott: unset it"),
        "{t}"
    );
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
        warnings.contains("OPENBLAS_CORETYPE=Prescott: unset it"),
        "{warnings}"
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
