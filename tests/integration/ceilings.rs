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
