//! Build script: records the git commit for provenance and, with the `mpi` feature, compiles
//! the C shim that exposes MPI_IN_PLACE against the MPI headers found on this machine.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/mpi_shim.c");
    println!("cargo:rerun-if-env-changed=SCALEBENCH_GIT_SHA");
    // Rebuild when HEAD moves so the recorded commit stays true (also after a failed `git`).
    // In a worktree `.git` is a file: ask git where HEAD and the branch's ref live.
    let git_dir = git(&["rev-parse", "--absolute-git-dir"]).unwrap_or_else(|| ".git".into());
    let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or_else(|| git_dir.clone());
    println!("cargo:rerun-if-changed={git_dir}/HEAD");
    if let Ok(head) = std::fs::read_to_string(format!("{git_dir}/HEAD")) {
        if let Some(r) = head.strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed={common}/{}", r.trim());
            println!("cargo:rerun-if-changed={common}/packed-refs");
        }
    }
    // ... and when what the binary is built from changes, so `-dirty` stays true too (these
    // changes recompile the crate anyway).
    for p in BUILT_FROM {
        println!("cargo:rerun-if-changed={p}");
    }
    let sha = std::env::var("SCALEBENCH_GIT_SHA")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(git_sha);
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    // The optional features say which backends the binary holds, so a script carried to a GPU
    // machine (ci/device-bundle.sh, ci/device-check.sh) can check it before it spends time there.
    let features: Vec<&str> = ["mpi", "cuda", "rocm"]
        .into_iter()
        .filter(|f| std::env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase())).is_some())
        .collect();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(",")
    };
    println!(
        "cargo:rustc-env=SCALEBENCH_VERSION_LONG={version} (commit {}; features {features})",
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

/// What the binary is built from: a change to these (uncommitted) makes the build `-dirty`.
const BUILT_FROM: &[&str] = &[
    "src",
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "csrc",
    "profiles",
    "assets",
];

/// A git command's trimmed output, if it succeeded.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn git_sha() -> Option<String> {
    let mut sha = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    args.extend(BUILT_FROM);
    let dirty = Command::new("git")
        .args(&args)
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    if dirty {
        sha.push_str("-dirty");
    }
    Some(sha)
}
