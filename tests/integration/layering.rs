//! The architecture in the crate map (`src/lib.rs`), checked on the sources: who may import
//! whom. Reads every `.rs` file under `src/` (from `CARGO_MANIFEST_DIR`, so from any working
//! directory); moved here from a `#[cfg(test)] mod layering` at the bottom of `src/lib.rs`
//! (issue 27 item 5).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What each top-level module may import (`crate::X`), from the flow in the crate map
/// (`src/lib.rs`):
/// leaves first, then config → plan → launch → run (topology, backend, comm, workload,
/// measure) → results → report / compare. `cli` (the edge) may import anything; nothing
/// imports it. A new module needs a line here.
const ALLOWED: &[(&str, &[&str])] = &[
    ("units", &[]),
    ("stats", &[]),
    // Pair schedules and the attribution of a link matrix: pure, beside stats (units: a long
    // --fault value is shortened in its error, as every echoed value is).
    ("links", &["stats", "units", "exit"]),
    ("params", &["units"]),
    ("host", &["params", "units"]),
    ("results", &["params", "stats", "units"]),
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
            "report", "compare", "history", "run", "launch", "links", "trace",
        ],
    ),
    (
        "plan",
        &[
            "config", "params", "results", "topology", "host", "units", "exit", "trace",
        ],
    ),
    ("comm", &["host", "params", "units"]),
    (
        "backend",
        &[
            "comm", "host", "params", "results", "topology", "stats", "units",
        ],
    ),
    // Traces of real jobs (NCCL/RCCL logs, PyTorch execution traces) read into one model:
    // pure; the NCCL log lines through backend::nccl_log's parser.
    ("trace", &["backend", "params", "units"]),
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
            "units", "trace",
        ],
    ),
    (
        "run",
        &[
            "plan", "config", "topology", "backend", "comm", "workload", "measure", "host",
            "params", "results", "stats", "units", "exit", "links", "trace",
            // the nccl-tests layout its live table shares with the report's per-size tables
            "present",
        ],
    ),
    (
        "launch",
        &[
            "config", "plan", "run", "workload", "topology", "params", "results", "stats", "units",
            "exit", "trace",
        ],
    ),
    // The presentation layer (a document → text, Markdown, HTML) knows no results.
    ("present", &["units"]),
    // `--history-db`: the trend section reads the history index (derived from results files).
    (
        "report",
        &[
            "present", "params", "results", "stats", "units", "exit", "history",
        ],
    ),
    // `--baseline-history`: the index names the baseline's results files (history imports
    // neither compare nor report, so the graph stays one-way).
    (
        "compare",
        &[
            "present", "params", "results", "stats", "units", "exit", "history",
        ],
    ),
    // Like report and compare: reads only results files (its SQLite index is built from them).
    (
        "history",
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
/// The same holds for unit tests in a file of their own (`#[cfg(test)] mod tests;` at the
/// bottom of the parent, the tests in `tests.rs` beside it): such a file contributes nothing.
fn library_part<'a>(path: &Path, code: &'a str, all: &BTreeMap<PathBuf, String>) -> &'a str {
    if is_unit_test_file(path, all) {
        return "";
    }
    code.find("#[cfg(test)]\nmod tests")
        .map_or(code, |at| &code[..at])
}

/// Whether `path` is `…/tests.rs` declared by its parent (`X.rs` or `X/mod.rs` for
/// `X/tests.rs`) as `#[cfg(test)] mod tests;`.
fn is_unit_test_file(path: &Path, all: &BTreeMap<PathBuf, String>) -> bool {
    if path.file_name().is_none_or(|n| n != "tests.rs") {
        return false;
    }
    let Some(dir) = path.parent() else {
        return false;
    };
    [dir.with_extension("rs"), dir.join("mod.rs")]
        .iter()
        .filter_map(|parent| all.get(parent))
        .any(|code| code.contains("#[cfg(test)]\nmod tests;"))
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
    let all: BTreeMap<PathBuf, String> = sources().into_iter().collect();
    let tests_apart = all.keys().filter(|p| is_unit_test_file(p, &all)).count();
    // src/cli/tests.rs, src/compare/stats/tests.rs, … (six when this was written)
    assert!(tests_apart >= 5, "found only {tests_apart} unit-test files");
    for (p, code) in &all {
        let p = p.as_path();
        let m = module_of(p);
        if ["lib", "main", "cli"].contains(&m.as_str()) {
            continue;
        }
        let Some(may) = allowed.get(m.as_str()) else {
            offenders.insert(format!("{}: module `{m}` is not in ALLOWED", p.display()));
            continue;
        };
        for path in crate_paths(library_part(p, code, &all)) {
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
        "imports against the flow (see ALLOWED in tests/integration/layering.rs): {offenders:#?}"
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
