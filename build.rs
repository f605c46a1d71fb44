//! Build script: records the git commit for provenance and, with the `mpi` feature, compiles
//! the C shim that exposes MPI_IN_PLACE against the MPI headers found on this machine.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/mpi_shim.c");
    println!("cargo:rerun-if-env-changed=SCALEBENCH_GIT_SHA");
    // Rebuild when HEAD moves so the recorded commit stays true (also after a failed `git`).
    println!("cargo:rerun-if-changed=.git/HEAD");
    if let Ok(head) = std::fs::read_to_string(".git/HEAD") {
        if let Some(r) = head.strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed=.git/{}", r.trim());
        }
    }
    let sha = std::env::var("SCALEBENCH_GIT_SHA")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(git_sha);
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!(
        "cargo:rustc-env=SCALEBENCH_VERSION_LONG={version} (commit {})",
        sha.as_deref().unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=SCALEBENCH_GIT_SHA={}",
        sha.unwrap_or_default()
    );

    if std::env::var_os("CARGO_FEATURE_MPI").is_some() {
        let lib = match build_probe_mpi::probe() {
            Ok(lib) => lib,
            Err(errs) => {
                for e in errs {
                    println!("cargo:warning=MPI probe: {e}");
                }
                panic!("no MPI library found: install OpenMPI (Debian: apt-get install libopenmpi-dev openmpi-bin) or build without the `mpi` feature");
            }
        };
        let mut b = cc::Build::new();
        b.file("csrc/mpi_shim.c");
        for p in &lib.include_paths {
            b.include(p);
        }
        b.compile("scalebench_mpi_shim");
    }
}

fn git_sha() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut sha = String::from_utf8(out.stdout).ok()?.trim().to_string();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    if dirty {
        sha.push_str("-dirty");
    }
    Some(sha)
}
