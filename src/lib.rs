//! scalebench: scaling studies for GPU clusters.
//!
//! Data flows one way:
//!
//! ```text
//! cli → config → plan → launch → run (topology, backend, comm, workload, measure) → results → report / compare
//! ```
//!
//! - [`cli`] (the edge, with the binary in `main.rs`): clap definitions, turned into the typed
//!   requests the entry points take ([`run::Request`], [`plan::Request`], [`report::Request`],
//!   [`compare::Request`]). Nothing below it imports it.
//! - [`config`]: sweep specs, a TOML file as written resolved into axes (errors name file:line).
//! - [`plan`]: what to measure: `run`'s request and specs expanded into cases and launches.
//! - [`launch`]: running a plan's launches: local `mpirun`, Slurm/UGE/PBS scripts, collect.
//! - [`run`]: one MPI job that measures cases ([`run::job`], feature `mpi`), its watchdog, and
//!   the live table rank 0 prints ([`run::console`]).
//! - [`topology`]: rank and node identity, hwloc discovery, CPU binding, host facts.
//! - [`backend`]: where buffers live and who moves them (CPU: MPI + CPU GEMM; CUDA: NCCL +
//!   cuBLAS), and the resolution of their clocks.
//! - [`comm`]: the control plane (barriers, agreement, gathering what rank 0 records) and the
//!   count of control steps the watchdog reads.
//! - [`workload`]: collectives, matmul, batch_matmul, ddp_step, with exact validation.
//! - [`measure`]: the timing loop, the same for every backend and workload.
//! - [`results`]: the versioned results format and crash-safe I/O.
//! - [`report`]: what people read: reports from results files.
//! - [`compare`]: regression comparison of results files and the CI gate's verdict.
//! - [`present`]: the document both of them build, rendered as text, Markdown and HTML.
//!
//! Leaves every stage may use: [`params`] (the shared vocabulary and case identity, with the
//! launch settings, test faults, collective counts and cpulists that specs, plans and the run
//! stage share), [`host`] (typed host buffers, used by `comm` and `backend`), [`stats`] (pure
//! statistics), [`units`] (byte sizes), and [`exit`] (the exit codes and the report of an error
//! on stderr). Each layer has its own error type (`PlanError`, `LaunchError`, `RunError`, …,
//! wrapping the errors of the layers it calls); [`error`], just below `cli`, is the crate's
//! error built from them, which `main` maps to an exit code. The module graph has no cycle;
//! the `layering` tests at the bottom of this file check every import against the table there.
//!
//! `report` and `compare` read only results files, so they build and run without MPI.
//! The same map, with the files outside `src/`, is in `docs/architecture.md`.

#![warn(unreachable_pub)]

pub mod backend;
pub mod cli;
pub mod comm;
pub mod compare;
pub mod config;
pub mod error;
pub mod exit;
pub mod host;
pub mod launch;
pub mod measure;
pub mod params;
pub mod plan;
pub mod present;
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
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    /// What each top-level module may import (`crate::X`), from the flow in the crate map:
    /// leaves first, then config → plan → launch → run (topology, backend, comm, workload,
    /// measure) → results → report / compare. `cli` (the edge) may import anything; nothing
    /// imports it. A new module needs a line here.
    const ALLOWED: &[(&str, &[&str])] = &[
        ("units", &[]),
        ("stats", &[]),
        ("params", &["units"]),
        ("host", &["params", "units"]),
        ("results", &["params", "stats", "units"]),
        // `present::untrusted`: an error quoting a results file is shown escaped.
        // `present::untrusted`: an error quoting a results file is shown escaped.
        ("exit", &["present", "results"]),
        ("topology", &["params", "results", "units", "exit"]),
        (
            "config",
            &["params", "results", "topology", "units", "exit"],
        ),
        // The crate error wraps the errors of the layers below it.
        (
            "error",
            &[
                "results", "params", "units", "present", "exit", "topology", "config", "plan",
                "report", "compare", "run", "launch",
            ],
        ),
        (
            "plan",
            &[
                "config", "params", "results", "topology", "host", "units", "exit",
            ],
        ),
        ("comm", &["host", "params", "units"]),
        (
            "backend",
            &[
                "comm", "host", "params", "results", "topology", "stats", "units",
            ],
        ),
        (
            "measure",
            &[
                "backend", "comm", "host", "params", "results", "stats", "units",
            ],
        ),
        (
            "workload",
            &[
                "backend", "comm", "measure", "host", "params", "results", "stats", "topology",
                "units",
            ],
        ),
        (
            "run",
            &[
                "plan", "config", "topology", "backend", "comm", "workload", "measure", "host",
                "params", "results", "stats", "units", "exit",
                // the nccl-tests layout its live table shares with the report's per-size tables
                "present",
            ],
        ),
        (
            "launch",
            &[
                "config", "plan", "run", "workload", "topology", "params", "results", "stats",
                "units", "exit",
            ],
        ),
        // The presentation layer (a document → text, Markdown, HTML) knows no results.
        ("present", &["units"]),
        (
            "report",
            &["present", "params", "results", "stats", "units", "exit"],
        ),
        (
            "compare",
            &["present", "params", "results", "stats", "units", "exit"],
        ),
    ];

    /// Imports against the flow, each with its reason; anything else against it fails.
    const EXCEPTIONS: &[(&str, &str, &str)] = &[];

    /// Every `.rs` file under `src/`, as (path relative to the crate, code without comments).
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

    /// The code a file contributes to the library: unit tests (the `mod tests` at the bottom,
    /// which clippy's `items_after_test_module` keeps last) may borrow helpers from anywhere.
    fn library_part(code: &str) -> &str {
        code.find("#[cfg(test)]\nmod tests")
            .map_or(code, |at| &code[..at])
    }

    /// The top-level module a file belongs to (`src/plan/sweep.rs` → `plan`).
    fn module_of(path: &Path) -> String {
        let first = path.components().nth(1).expect("a file under src/");
        let name = first.as_os_str().to_string_lossy();
        name.strip_suffix(".rs").unwrap_or(&name).to_string()
    }

    /// Every `crate::a::b::…` path a text names (as written, up to the first non-path char).
    fn crate_paths(code: &str) -> Vec<String> {
        code.match_indices("crate::")
            .filter(|(at, _)| !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
            .map(|(at, _)| {
                code[at..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect::<String>()
            })
            .collect()
    }

    /// The top-level module of `crate::a::…` (`a`).
    fn top(path: &str) -> &str {
        path["crate::".len()..].split("::").next().unwrap_or("")
    }

    /// The edge: only `cli` and `main` know the command line (tests included).
    #[test]
    fn nothing_below_the_edge_imports_cli() {
        let offenders: Vec<String> = sources()
            .into_iter()
            .filter(|(p, _)| {
                // `src/cli/` is the edge itself (one file per command's arguments).
                !p.starts_with("src/cli")
                    && !["src/main.rs", "src/lib.rs"].contains(&&*p.to_string_lossy())
            })
            .filter(|(_, code)| crate_paths(code).iter().any(|m| top(m) == "cli"))
            .map(|(p, _)| p.display().to_string())
            .collect();
        assert!(
            offenders.is_empty(),
            "these files import `crate::cli`; take a typed request (built by cli) instead: {offenders:?}"
        );
    }

    /// Every import follows the flow: `report` and `compare` never reach back into the stages
    /// that write results, the run stage never into planning's callers, and so on.
    #[test]
    fn imports_follow_the_flow() {
        let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
        let mut offenders = BTreeSet::new();
        for (p, code) in sources() {
            let m = module_of(&p);
            if ["lib", "main", "cli"].contains(&m.as_str()) {
                continue;
            }
            let Some(may) = allowed.get(m.as_str()) else {
                offenders.insert(format!("{}: module `{m}` is not in ALLOWED", p.display()));
                continue;
            };
            for path in crate_paths(library_part(&code)) {
                let to = top(&path);
                let excused = EXCEPTIONS
                    .iter()
                    .any(|(from, prefix, _)| *from == m && path.starts_with(prefix));
                if to != m && !may.contains(&to) && !excused {
                    offenders.insert(format!("{} imports {path}", p.display()));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "imports against the flow (see ALLOWED in src/lib.rs): {offenders:#?}"
        );
    }

    /// The allowed imports themselves form no cycle, so the modules do not either.
    #[test]
    fn the_flow_has_no_cycle() {
        let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
        fn visit<'a>(
            m: &'a str,
            allowed: &BTreeMap<&'a str, &'a [&'a str]>,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) {
            if done.contains(m) {
                return;
            }
            assert!(!path.contains(&m), "cycle: {path:?} → {m}");
            path.push(m);
            for to in allowed.get(m).copied().unwrap_or_default() {
                visit(to, allowed, path, done);
            }
            path.pop();
            done.insert(m);
        }
        let mut done = BTreeSet::new();
        for m in allowed.keys() {
            visit(m, &allowed, &mut Vec::new(), &mut done);
        }
        // Every module named as a target is itself in the table.
        for (m, may) in ALLOWED {
            for to in *may {
                assert!(
                    allowed.contains_key(to),
                    "{m} may import {to}, which is not in ALLOWED"
                );
            }
        }
    }
}
