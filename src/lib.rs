//! scalebench: scaling studies for GPU clusters.
//!
//! Data flows one way:
//!
//! ```text
//! config → plan → launch → run (backend, workload, measure) → results → report / compare
//! ```
//!
//! - [`config`]: sweep specs, a TOML file as written resolved into axes (errors name file:line).
//! - [`plan`]: what to measure: `run` options and specs expanded into cases and launches.
//! - [`launch`]: running a plan's launches: local `mpirun`, Slurm/UGE/PBS scripts, collect.
//! - [`run`]: one MPI job that measures cases ([`run::job`], feature `mpi`), and its watchdog.
//! - [`topology`]: rank and node identity, hwloc discovery, CPU binding, host facts.
//! - [`backend`]: where buffers live and who moves them (CPU: MPI + CPU GEMM; CUDA: NCCL + cuBLAS).
//! - [`comm`]: the control plane (barriers, agreement, gathering what rank 0 records).
//! - [`workload`]: collectives, matmul, batch_matmul, ddp_step, with exact validation.
//! - [`measure`]: the timing loop, the same for every backend and workload.
//! - [`results`]: the versioned results format and crash-safe I/O.
//! - [`report`]: what people read (the live table; reports from results files).
//! - [`compare`]: regression comparison of results files and the CI gate's verdict.
//!
//! Leaves every stage may use: [`params`] (the shared vocabulary and case identity),
//! [`stats`] (pure statistics), [`units`] (byte sizes), [`error`] (the error type and exit
//! codes). The edge: [`cli`] (command-line definitions) and the binary in `main.rs`.
//!
//! `report` and `compare` read only results files, so they build and run without MPI.
//! The same map, with the files outside `src/`, is in `docs/architecture.md`.

pub mod backend;
pub mod cli;
pub mod comm;
pub mod compare;
pub mod config;
pub mod error;
pub mod launch;
pub mod measure;
pub mod params;
pub mod plan;
pub mod report;
pub mod results;
pub mod run;
pub mod stats;
pub mod topology;
pub mod units;
pub mod workload;

/// The architecture above, checked on the sources: who may import whom.
#[cfg(test)]
mod layering {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    /// Every `.rs` file under `src/`, as (path relative to the crate, text without comments).
    fn sources() -> Vec<(PathBuf, String)> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).expect("src/ is readable") {
                let p = e.expect("a directory entry").path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        walk(&root.join("src"), &mut files);
        files.sort();
        assert!(files.len() > 50, "found only {} source files", files.len());
        files
            .into_iter()
            .map(|p| {
                let text = std::fs::read_to_string(&p).expect("a source file is UTF-8");
                // Comments may name any module (intra-doc links); only code imports.
                let code: String = text
                    .lines()
                    .map(|l| l.split("//").next().unwrap_or(""))
                    .collect::<Vec<_>>()
                    .join("\n");
                (p.strip_prefix(root).unwrap().to_path_buf(), code)
            })
            .collect()
    }

    /// The top-level module a file belongs to (`src/plan/sweep.rs` → `plan`).
    fn module_of(path: &Path) -> String {
        let first = path.components().nth(1).expect("a file under src/");
        let name = first.as_os_str().to_string_lossy();
        name.strip_suffix(".rs").unwrap_or(&name).to_string()
    }

    /// The crate's top-level modules a text names as `crate::X`.
    fn imports(code: &str) -> BTreeSet<String> {
        code.match_indices("crate::")
            .filter(|(at, _)| {
                // `crate::` itself, not the end of `scalebench_crate::` or similar.
                !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
            })
            .map(|(at, m)| {
                code[at + m.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .filter(|m| !m.is_empty())
            .collect()
    }

    /// The edge: only `cli` and `main` know the command line.
    #[test]
    fn nothing_below_the_edge_imports_cli() {
        let offenders: Vec<String> = sources()
            .into_iter()
            .filter(|(p, _)| {
                !["src/cli.rs", "src/main.rs", "src/lib.rs"].contains(&&*p.to_string_lossy())
            })
            .filter(|(_, code)| imports(code).contains("cli"))
            .map(|(p, _)| p.display().to_string())
            .collect();
        assert!(
            offenders.is_empty(),
            "these files import `crate::cli`; take a typed request (built by cli) instead: {offenders:?}"
        );
    }

    /// `report` and `compare` read results files only: they never reach back into the stages
    /// that produce them.
    #[test]
    fn report_and_compare_do_not_reach_back() {
        let earlier = [
            "config", "plan", "launch", "run", "topology", "backend", "comm", "workload", "measure",
        ];
        let mut offenders = Vec::new();
        for (p, code) in sources() {
            let m = module_of(&p);
            if m == "report" || m == "compare" {
                for i in imports(&code) {
                    if earlier.contains(&i.as_str()) {
                        offenders.push(format!("{} imports crate::{i}", p.display()));
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:#?}");
    }
}
