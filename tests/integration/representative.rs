//! Set-ups that cannot represent what they name, with the real binary under real `mpirun`: a
//! sweep whose launches put more busy ranks (and hybrid worker threads) on the CPUs than there
//! are (`oversubscribe = true`, the job confined to one CPU with `taskset`, so the test means
//! the same on any machine) records a named warning per launch, and its report names no
//! winner from it, says why, and refuses to fit it; asked to include it, the report marks it.

use crate::common;

use common::csv::read_csv;
use common::{bin, read_results, report, tmpdir};
use std::path::Path;
use std::process::Command;

/// The first CPU this process may run on.
fn first_cpu() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    let first = list.split([',', '-']).next().unwrap();
    first.parse().unwrap()
}

/// `taskset -c CPU scalebench ARGS`: every rank mpirun starts inherits the one-CPU mask.
fn on_one_cpu(args: &[&str]) -> common::Ran {
    let _g = common::mpi_lock();
    let o = Command::new("taskset")
        .args(["-c", &first_cpu().to_string(), bin()])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("start taskset (util-linux)");
    common::Ran::raw(o)
}

const SPEC: &str = r#"
name = "oversubscribed"
[axes]
nodes = 1
devices_per_node = 2
topology = ["pure", "hybrid"]
workloads = "allreduce"
sizes = "1KiB:64KiB:x4"
in_place = "no"
[run]
time_budget_s = 0.02
[launch]
oversubscribe = true
timeout_s = 120
"#;

#[test]
fn an_oversubscribed_launch_is_recorded_and_names_no_winner() {
    let dir = tmpdir("representative");
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = dir.join("run");
    on_one_cpu(&[
        "sweep",
        "-q",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .assert_code(0);

    // Both launches: 2 busy threads (2 pure ranks; 1 hybrid rank driving 2 worker threads)
    // on the 1 CPU the job was offered.
    let r = read_results(&out);
    assert_eq!(r.launches.len(), 2);
    for l in &r.launches {
        let w: Vec<_> = l
            .unrepresentative
            .iter()
            .filter(|w| w.kind == "oversubscribed")
            .collect();
        assert_eq!(w.len(), 1, "{}: {:?}", l.launch_id, l.unrepresentative);
        assert!(
            w[0].detail.contains("2 busy threads") && w[0].detail.contains("1 CPU offered"),
            "{}",
            w[0].detail
        );
    }
    assert!(r.cases.iter().all(|c| c.status == "ok"));

    // The report: no winner, the reason, no fit; the cases listed apart.
    // What the report does with oversubscription is under test: reasons from other work on
    // the host at the time (a build, another test's launch) are taken out of the file first.
    without_host_load(&out);
    let rep = dir.join("rep");
    report(&[out.to_str().unwrap(), "--out", rep.to_str().unwrap()]).assert_code(0);
    assert!(!rep.join("tables/topology_bands.csv").exists());
    let bands = read_csv(&rep.join("tables/topology_bands_unrepresentative.csv"));
    assert!(!bands.is_empty());
    for b in &bands {
        assert_eq!(b["winner"], "not named", "{b:?}");
        assert_eq!(b["why"], "not representative: oversubscribed", "{b:?}");
    }
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(
        md.contains("Pure MPI vs hybrid: no winner is named: every comparison involves cases that are not representative (oversubscribed)"),
        "{md}"
    );
    let summary = read_csv(&rep.join("tables/unrepresentative_summary.csv"));
    assert_eq!(summary.len(), 1);
    assert_eq!(
        (summary[0]["reason"].as_str(), summary[0]["cases"].as_str()),
        ("oversubscribed", "8")
    );
    for c in read_csv(&rep.join("tables/collective_allreduce.csv")) {
        assert_eq!(c["representative"], "no: oversubscribed", "{c:?}");
        assert!(c["α (µs)"].is_empty(), "{c:?}");
        assert!(
            c["fit"].starts_with("not fitted: not representative"),
            "{c:?}"
        );
    }
    // The stragglers section says its multi-rank cases were set apart, not that none was
    // measured (issue 45 item 7).
    let at = md
        .find("## Load imbalance and stragglers")
        .expect("stragglers section");
    let stragglers = &md[at..md[at + 3..].find("\n## ").map_or(md.len(), |e| at + 3 + e)];
    assert!(
        stragglers.contains("set apart as not representative of their set-up")
            && !stragglers.contains("No measured case has 2 or more ranks"),
        "{stragglers}"
    );
    // The findings say so first, and name nothing from these cases.
    let findings = read_csv(&rep.join("tables/findings.csv"));
    assert!(findings
        .iter()
        .all(|f| f["table"] == "tables/unrepresentative_summary.csv"));

    // Asked to include them, the report names a winner and marks it.
    let inc = dir.join("rep-included");
    report(&[
        out.to_str().unwrap(),
        "--out",
        inc.to_str().unwrap(),
        "--include-unrepresentative",
    ])
    .assert_code(0);
    let bands = read_csv(&inc.join("tables/topology_bands.csv"));
    assert!(!bands.is_empty());
    for b in &bands {
        assert_eq!(b["caveat"], "not representative: oversubscribed", "{b:?}");
        assert_ne!(b["winner"], "not named");
    }
    let findings = read_csv(&inc.join("tables/findings.csv"));
    assert!(findings
        .iter()
        .any(|f| f["table"] == "tables/topology_decisions.csv"
            && f["sentence"].contains("caveat: not representative: oversubscribed")));
}

/// Removes the reasons that come from other work on the host (`host_busy`, `co_scheduled`)
/// from `DIR/results.json`, launches and cases alike, and the host load the report would
/// derive them from again.
fn without_host_load(dir: &Path) {
    let path = dir.join("results.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let scrub = |v: &mut serde_json::Value| {
        if let Some(list) = v.get_mut("unrepresentative").and_then(|u| u.as_array_mut()) {
            list.retain(|w| !matches!(w["kind"].as_str(), Some("host_busy" | "co_scheduled")));
            if list.is_empty() {
                v.as_object_mut().unwrap().remove("unrepresentative");
            }
        }
    };
    for key in ["launches", "cases"] {
        for item in r[key].as_array_mut().unwrap() {
            scrub(item);
            item.as_object_mut().unwrap().remove("host_load");
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&r).unwrap()).unwrap();
}

/// `DIR/results.json` as JSON values (the wire types do not read ddp_step's fields).
fn results_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    serde_json::from_str(&text).unwrap()
}

/// A case's reasons that name ddp_step's progress thread, as `kind: detail`.
fn progress_reasons(case: &serde_json::Value) -> Vec<String> {
    case["unrepresentative"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|w| w["detail"].as_str().unwrap().contains("progress thread"))
        .map(|w| format!("{}: {}", w["kind"], w["detail"]))
        .collect()
}

/// `mpirun -np 2` with mpirun's own binding (one core per rank, for 2 ranks): ddp_step with
/// its default progress thread keeps 4 threads busy on the ranks' 2 cores, the progress
/// thread shares its rank's core, and the case says so naming it, in the results and on
/// screen; the same launch's `progress = test` case keeps 2 busy and is not marked for it.
/// Alone, a `--progress test` launch needs no thread support: MPI is initialised plainly, and
/// the results record the level.
#[test]
fn the_ddp_progress_thread_is_counted_and_named() {
    let out = tmpdir("progress-thread").join("run");
    let quick = ["-n", "2", "--warmup", "1", "--check", "1"];
    let mut args = vec!["run", "--out", out.to_str().unwrap()];
    args.extend_from_slice(&[
        "-w",
        "ddp_step",
        "--model",
        "mlp-tiny",
        "--progress",
        "thread,test",
    ]);
    args.extend_from_slice(&quick);
    let ran = common::mpirun(2, &args);
    ran.assert_code(0);
    assert!(
        ran.stdout.contains("not representative") && ran.stdout.contains("progress thread"),
        "{}",
        ran.stdout
    );
    let r = results_json(&out);
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    let prov = &r["launches"][0]["provenance"];
    assert_eq!(prov["mpi_thread_level_requested"], "serialized");
    assert_eq!(prov["mpi_thread_level"], "serialized");
    for rank in prov["ranks"].as_array().unwrap() {
        assert!(rank["progress_thread"]["cpus"].is_string(), "{rank}");
    }
    for c in cases {
        let reasons = progress_reasons(c);
        match c["params"]["progress"].as_str() {
            Some("thread") => assert!(
                reasons
                    .iter()
                    .any(|w| w.contains("2 ddp_step progress threads")
                        || w.contains("rank 0 progress thread")),
                "{:?}",
                c["unrepresentative"]
            ),
            _ => assert!(reasons.is_empty(), "{reasons:?}"),
        }
    }
    // The launch's own reasons: none but what other work on the host may have added.
    let launch_reasons = r["launches"][0]["unrepresentative"].as_array().cloned();
    assert!(
        launch_reasons
            .unwrap_or_default()
            .iter()
            .all(|w| matches!(w["kind"].as_str(), Some("host_busy" | "co_scheduled"))),
        "{}",
        r["launches"][0]["unrepresentative"]
    );

    let alone = tmpdir("progress-test").join("run");
    let mut args = common::run_q(
        &alone,
        &[
            "-w",
            "ddp_step",
            "--model",
            "mlp-tiny",
            "--progress",
            "test",
        ],
    );
    args.extend_from_slice(&quick);
    common::mpirun(2, &args).assert_code(0);
    let r = results_json(&alone);
    assert_eq!(r["launches"][0]["provenance"]["mpi_thread_level"], "single");
    for c in r["cases"].as_array().unwrap() {
        assert!(progress_reasons(c).is_empty(), "{c}");
    }
}

/// An explicit thread level below what the launch needs is refused before MPI starts (exit 2,
/// naming the option and the fix); one above it is used and recorded.
#[test]
fn an_explicit_thread_level_is_checked_and_recorded() {
    let out = tmpdir("level").join("run");
    let args = common::run_q(
        &out,
        &[
            "-w",
            "ddp_step",
            "--model",
            "mlp-tiny",
            "--thread-level",
            "funneled",
            "-n",
            "1",
        ],
    );
    let r = common::solo(&args);
    r.assert_code(2);
    assert!(
        r.stderr.contains("--thread-level funneled")
            && r.stderr.contains("needs serialized")
            && r.stderr.contains("leave --thread-level out"),
        "{}",
        r.stderr
    );
    let args = common::run_q(
        &out,
        &[
            "-w",
            "allreduce",
            "-s",
            "8B",
            "--thread-level",
            "funneled",
            "-n",
            "5",
        ],
    );
    common::solo(&args).assert_code(0);
    let prov = read_results(&out).launches.remove(0).provenance.unwrap();
    assert_eq!(prov.mpi_thread_level_requested.as_deref(), Some("funneled"));
    assert_eq!(prov.mpi_thread_level.as_deref(), Some("funneled"));
}
