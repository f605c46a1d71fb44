//! `scalebench history`: ingest (idempotent, concurrent, rebuilt when corrupt), show, changes.
//! No MPI: the binary only reads results files, so no test here takes the MPI lock.

use crate::common::csv::read_csv;
use crate::common::{bin, fixture, no_panic, s, tmpdir, Ran};
use std::path::{Path, PathBuf};
use std::process::Command;

fn history(args: &[&str]) -> Ran {
    let r = Ran::from(
        Command::new(bin())
            .arg("history")
            .args(args)
            .output()
            .expect("start scalebench"),
    );
    no_panic(&r);
    r
}

/// Run `i` of a synthetic history: 3 cases (two allreduce, one allgather) whose times are
/// `scale` × their base, started a day after run i − 1, commit `i` in hex, on hosts with CPU
/// model `cpu`, on cluster `testbed`.
fn run_file(dir: &Path, i: usize, scale: f64, cpu: &str) -> PathBuf {
    run_file_on(dir, i, scale, cpu, "testbed")
}

/// [`run_file`] on another cluster.
fn run_file_on(dir: &Path, i: usize, scale: f64, cpu: &str, cluster: &str) -> PathBuf {
    run_file_with(dir, i, 3, &|_| scale, cpu, cluster)
}

/// [`run_file_on`] with `cases` cases (the golden file's in turn: allreduce ×2, allgather ×2,
/// matmul, batch_matmul), case k `scale(k)` × its base time.
fn run_file_with(
    dir: &Path,
    i: usize,
    cases: usize,
    scale: &dyn Fn(usize) -> f64,
    cpu: &str,
    cluster: &str,
) -> PathBuf {
    let mut f = fixture::simple(cases, 1000 + i as u64, scale);
    f.run.run_id = format!("run{i:03}");
    f.run.started_unix_s = 1.8e9 + i as f64 * 86_400.0;
    f.run.labels.insert("cluster".into(), cluster.into());
    f.generator.git_sha = Some(sha(i));
    for l in &mut f.launches {
        for h in &mut l.provenance.as_mut().unwrap().hosts {
            h.cpu_model = cpu.into();
        }
    }
    let d = dir.join(format!("run{i:03}"));
    std::fs::create_dir_all(&d).unwrap();
    fixture::write(&d, "results.json", &f)
}

/// Run i's commit: `i` in 3 digits, then `a`s.
/// `history ingest TREE --db DB`, which must succeed.
fn ingest_ok(tree: &Path, db: &Path) {
    let r = history(&["ingest", s(tree), "--db", s(db)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

fn sha(i: usize) -> String {
    format!("{i:03}{}", "a".repeat(37))
}

/// `history export --db DB --format csv ARGS --out OUT`, which must succeed, read back.
fn export_csv(
    db: &Path,
    args: &[&str],
    out: &Path,
) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut a = vec!["export", "--db", s(db), "--format", "csv"];
    a.extend_from_slice(args);
    a.extend(["--out", s(out)]);
    let r = history(&a);
    assert_eq!(r.code, 0, "{}", r.stderr);
    read_csv(out)
}

fn json(r: &Ran) -> serde_json::Value {
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn count(db: &Path, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Ingest says what it did and which journal mode it chose; a second ingest of the same tree
/// adds nothing; `show` has one point per run in start order, with the commit and set-up.
#[test]
fn ingest_is_idempotent_and_show_lists_each_run() {
    let dir = tmpdir("history-idem");
    for i in 0..5 {
        run_file(&dir.join("tree"), i, 1.0, "CPU A");
    }
    let db = dir.join("h.sqlite");
    let first = history(&["ingest", s(&dir.join("tree")), "--db", s(&db)]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first
            .stdout
            .contains("5 results files found, 5 added (15 case rows)")
            && first.stdout.contains("journal mode "),
        "{}",
        first.stdout
    );
    // A copy under another name is the same content: not indexed twice.
    std::fs::copy(
        dir.join("tree/run000/results.json"),
        dir.join("tree/results.json"),
    )
    .unwrap();
    let again = history(&["ingest", s(&dir.join("tree")), "--db", s(&db)]);
    assert!(
        again
            .stdout
            .contains("6 results files found, 0 added (0 case rows), 6 already"),
        "{}",
        again.stdout
    );
    assert_eq!(count(&db, "SELECT count(*) FROM measurement"), 15);

    let v = json(&history(&["show", "--db", s(&db), "--json"]));
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 3);
    for sr in series {
        let pts = sr["points"].as_array().unwrap();
        let runs: Vec<&str> = pts.iter().map(|p| p["run_id"].as_str().unwrap()).collect();
        assert_eq!(runs, ["run000", "run001", "run002", "run003", "run004"]);
        assert_eq!(pts[2]["git_sha"], sha(2));
        assert_eq!(sr["cluster"], "testbed");
        assert_eq!(sr["setups"].as_array().unwrap().len(), 1);
        for p in pts {
            let (lo, m, hi) = (
                p["lo"].as_f64().unwrap(),
                p["median"].as_f64().unwrap(),
                p["hi"].as_f64().unwrap(),
            );
            assert!(lo <= m && m <= hi && lo > 0.0, "{p}");
        }
    }
    // Filters: a case id prefix, a workload, a label, a cluster that is not there.
    let id = series[0]["case_id"].as_str().unwrap();
    let one = json(&history(&["show", &id[..8], "--db", s(&db), "--json"]));
    assert_eq!(one["series"].as_array().unwrap().len(), 1);
    let labelled = json(&history(&[
        "show",
        "--label",
        "cluster=testbed",
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(labelled["series"].as_array().unwrap().len(), 3);
    let none = json(&history(&[
        "show",
        "--cluster",
        "elsewhere",
        "--db",
        s(&db),
        "--json",
    ]));
    assert!(none["series"].as_array().unwrap().is_empty());
    let text = history(&["show", "--db", s(&db)]);
    assert!(
        text.stdout.contains("run004") && text.stdout.contains("set-up #1: cpu=CPU A"),
        "{}",
        text.stdout
    );
    let bad = history(&["show", "--label", "cluster", "--db", s(&db)]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("KEY=VALUE"), "{}", bad.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two ingest processes at once over overlapping trees: every file's rows once, the
/// database checks clean.
#[test]
fn concurrent_ingests_add_every_row_once() {
    let dir = tmpdir("history-concurrent");
    for i in 0..40 {
        let sub = match i % 3 {
            0 => "a",
            1 => "b",
            _ => "shared",
        };
        run_file(&dir.join(sub), i, 1.0, "CPU A");
    }
    let db = dir.join("h.sqlite");
    let start = |trees: &[&str]| {
        let mut c = Command::new(bin());
        c.args(["history", "ingest", "--db", s(&db)]);
        for t in trees {
            c.arg(dir.join(t));
        }
        c.spawn().expect("start scalebench")
    };
    let (mut p1, mut p2) = (start(&["a", "shared"]), start(&["shared", "b"]));
    assert!(p1.wait().unwrap().success() && p2.wait().unwrap().success());
    assert_eq!(count(&db, "SELECT count(*) FROM source_file"), 40);
    assert_eq!(count(&db, "SELECT count(*) FROM run"), 40);
    assert_eq!(count(&db, "SELECT count(DISTINCT run_id) FROM run"), 40);
    assert_eq!(count(&db, "SELECT count(*) FROM measurement"), 120);
    let c = rusqlite::Connection::open(&db).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A truncated index is moved aside and rebuilt from the trees it indexed, with a warning; the
/// rebuilt index answers exactly as the first did (golden), and so does one built afresh.
#[test]
fn truncated_index_is_rebuilt_with_identical_answers() {
    let dir = tmpdir("history-rebuild");
    for i in 0..30 {
        run_file(
            &dir.join("tree"),
            i,
            if i < 15 { 1.0 } else { 1.2 },
            "CPU A",
        );
    }
    let db = dir.join("h.sqlite");
    ingest_ok(&dir.join("tree"), &db);
    let show = |db: &Path| history(&["show", "--db", s(db), "--json"]);
    let changes = |db: &Path| history(&["changes", "--db", s(db), "--json"]);
    let (golden_show, golden_changes) = (json(&show(&db)), json(&changes(&db)));
    assert_eq!(golden_show["series"].as_array().unwrap().len(), 3);

    let len = std::fs::metadata(&db).unwrap().len();
    assert!(len > 8192, "{len}");
    let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    // Reading commands refuse it with the command that rebuilds it, and leave it as it is
    // (issue 44: a read never moves or writes the index).
    let halved = std::fs::read(&db).unwrap();
    for r in [show(&db), changes(&db)] {
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains("corrupt or truncated") && r.stderr.contains("history ingest"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(std::fs::read(&db).unwrap(), halved);
    let ing = history(&["ingest", s(&dir.join("tree")), "--db", s(&db)]);
    assert_eq!(ing.code, 0, "{}", ing.stderr);
    assert!(
        ing.stderr.contains("corrupt or truncated") && ing.stderr.contains("rebuilt"),
        "{}",
        ing.stderr
    );
    assert_eq!(json(&show(&db)), golden_show);
    assert_eq!(json(&changes(&db)), golden_changes);
    let aside = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".corrupt-")
        })
        .count();
    assert_eq!(aside, 1, "moved aside by the ingest only");

    // Garbage after SQLite's header: rebuilt on ingest too.
    let mut garbage = b"SQLite format 3\0".to_vec();
    garbage.extend(vec![b'x'; 20_000]);
    std::fs::write(&db, garbage).unwrap();
    let ing = history(&["ingest", s(&dir.join("tree")), "--db", s(&db)]);
    assert_eq!(ing.code, 0, "{}", ing.stderr);
    assert!(ing.stderr.contains("rebuilt"), "{}", ing.stderr);
    assert_eq!(json(&show(&db)), golden_show);
    // Garbage without it is no index: refused, never moved (it may be someone's file).
    std::fs::write(&db, vec![b'x'; 20_000]).unwrap();
    let ing = history(&["ingest", s(&dir.join("tree")), "--db", s(&db)]);
    assert_eq!(ing.code, 2, "{}", ing.stderr);
    assert!(ing.stderr.contains("not a history index"), "{}", ing.stderr);
    assert_eq!(std::fs::read(&db).unwrap(), vec![b'x'; 20_000]);

    let fresh = dir.join("fresh.sqlite");
    ingest_ok(&dir.join("tree"), &fresh);
    assert_eq!(json(&show(&fresh)), golden_show);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 20 % slowdown from run 15 is a change (worse, about +20 % in time, −17 % in busbw); a
/// new CPU model from run 15 with the same slowdown is a set-up break, not a change.
#[test]
fn changes_find_a_step_and_setup_changes_break_the_series() {
    let dir = tmpdir("history-changes");
    for i in 0..30 {
        let slow = if i < 15 { 1.0 } else { 1.2 };
        run_file(&dir.join("step"), i, slow, "CPU A");
        run_file(
            &dir.join("newcpu"),
            i,
            slow,
            if i < 15 { "CPU A" } else { "CPU B" },
        );
    }
    for (tree, want_change) in [("step", true), ("newcpu", false)] {
        let db = dir.join(format!("{tree}.sqlite"));
        ingest_ok(&dir.join(tree), &db);
        let v = json(&history(&[
            "changes",
            "--db",
            s(&db),
            "--json",
            "--metric",
            "time",
        ]));
        for sr in v["series"].as_array().unwrap() {
            let steps = sr["steps"].as_array().unwrap();
            assert_eq!(steps.len(), 1, "{tree}: {steps:?}");
            let st = &steps[0];
            assert!(st["index"].as_u64().unwrap().abs_diff(15) <= 1, "{st}");
            if want_change {
                assert_eq!(st["kind"], "change", "{st}");
                assert_eq!(st["direction"], "worse", "{st}");
                let rel = st["relative"].as_f64().unwrap();
                assert!((0.17..0.23).contains(&rel), "{rel}");
            } else {
                assert_eq!(st["kind"], "setup", "{st}");
                assert_eq!(st["index"], 15);
            }
        }
        // By default collectives are read by busbw: the slowdown is a drop, still worse.
        let text = history(&["changes", "--db", s(&db)]);
        if want_change {
            assert!(
                text.stdout.contains("run015 (015aaaaaaaaa): worse -1"),
                "{}",
                text.stdout
            );
        } else {
            assert!(text.stdout.contains("set-up #2 starts"), "{}", text.stdout);
        }
    }
    let missing = history(&["show", "--db", s(&dir.join("none.sqlite"))]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("history ingest"),
        "{}",
        missing.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The point of `run` in the series of `case` on `cluster` in a `show --json` answer.
fn point<'a>(
    show: &'a serde_json::Value,
    case: &str,
    cluster: &str,
    run: &str,
) -> &'a serde_json::Value {
    show["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|sr| sr["case_id"] == case && sr["cluster"] == cluster)
        .flat_map(|sr| sr["points"].as_array().unwrap())
        .find(|p| p["run_id"] == run)
        .unwrap_or_else(|| panic!("no point {case} {cluster} {run}"))
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// `history export`: the CSV has one row per case × run whose numbers are exactly `show
/// --json`'s (time, busbw, GFLOP/s), with the commit and cluster; the filters of show apply;
/// the Bencher file is the latest run (or `--run`'s) with latency in ns and the rates; a bad
/// format, `--run` with csv or an unknown run is exit 2 with one sentence, and leaves a file
/// already at `--out` as it was (no partial file).
#[test]
fn export_round_trips_bencher_and_csv() {
    let dir = tmpdir("history-export");
    // 5 cases: 4 collectives (busbw) and a matmul (GFLOP/s).
    for i in 0..8 {
        let (scale, cluster) = if i < 6 {
            (1.0 + 0.03 * i as f64, "testbed")
        } else {
            (1.0, "other")
        };
        run_file_with(&dir.join("tree"), i, 5, &|_| scale, "CPU A", cluster);
    }
    let db = dir.join("h.sqlite");
    ingest_ok(&dir.join("tree"), &db);
    let show = |metric: &str| {
        json(&history(&[
            "show",
            "--db",
            s(&db),
            "--json",
            "--metric",
            metric,
        ]))
    };
    let (time, busbw, gflops) = (show("time"), show("busbw"), show("gflops"));

    let rows = export_csv(&db, &[], &dir.join("all.csv"));
    assert_eq!(rows.len(), 5 * 8, "one row per case × run");
    let (mut with_busbw, mut with_gflops) = (0, 0);
    for row in &rows {
        let (case, cluster, run) = (&row["case_id"], &row["cluster"], &row["run_id"]);
        let i: usize = run[3..].parse().unwrap();
        assert_eq!(row["commit"], sha(i));
        assert_eq!(cluster, if i < 6 { "testbed" } else { "other" });
        assert!(row["setup"].contains("cpu=CPU A"), "{row:?}");
        let num = |c: &str| row[c].parse::<f64>().unwrap_or_else(|e| panic!("{c}: {e}"));
        let p = point(&time, case, cluster, run);
        assert_eq!(num("n"), f(&p["n"]));
        for (col, key) in [("median_s", "median"), ("lo_s", "lo"), ("hi_s", "hi")] {
            assert_eq!(num(col), f(&p[key]), "{col} {row:?}");
        }
        if !row["busbw_median_GBps"].is_empty() {
            with_busbw += 1;
            let p = point(&busbw, case, cluster, run);
            for w in ["median", "lo", "hi"] {
                assert_eq!(num(&format!("busbw_{w}_GBps")), f(&p[w]), "{row:?}");
            }
        }
        if !row["gflops_per_device_median"].is_empty() {
            with_gflops += 1;
            let p = point(&gflops, case, cluster, run);
            assert_eq!(num("gflops_per_device_median"), f(&p["median"]));
        }
    }
    // allreduce and allgather have busbw, matmul GFLOP/s.
    assert_eq!((with_busbw, with_gflops), (4 * 8, 8));

    // The filters are show's.
    let rows = export_csv(&db, &["--cluster", "other"], &dir.join("other.csv"));
    assert_eq!(rows.len(), 5 * 2);
    assert!(rows.iter().all(|r| r["cluster"] == "other"));
    let id = rows[0]["case_id"].clone();
    let stdout = history(&["export", &id[..10], "--db", s(&db), "--format", "CSV"]);
    assert_eq!(stdout.code, 0, "{}", stdout.stderr);
    let lines: Vec<&str> = stdout.stdout.lines().collect();
    assert_eq!(lines.len(), 1 + 8, "{}", stdout.stdout);
    assert!(
        lines[1..].iter().all(|l| l.starts_with(&id)),
        "{}",
        stdout.stdout
    );

    // Bencher: one run, the latest on the cluster asked for, or the one named.
    for (run, args) in [("run005", vec![]), ("run002", vec!["--run", "run002"])] {
        let bmf = dir.join(format!("{run}.json"));
        let mut a = vec![
            "export",
            "--db",
            s(&db),
            "--format",
            "bencher",
            "--cluster",
            "testbed",
            "--out",
            s(&bmf),
        ];
        a.extend(args);
        let r = history(&a);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stderr.contains(run)
                && r.stderr.contains("bencher run --hash")
                && r.stderr.contains(&sha(run[3..].parse().unwrap())),
            "{}",
            r.stderr
        );
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&bmf).unwrap()).unwrap();
        let doc = doc.as_object().unwrap();
        assert_eq!(doc.len(), 5, "{doc:?}");
        for sr in time["series"].as_array().unwrap() {
            if sr["cluster"] != "testbed" {
                continue;
            }
            let case = sr["case_id"].as_str().unwrap();
            let label = sr["label"].as_str().unwrap();
            // A label two cases share carries the case id.
            let bench = doc
                .get(label)
                .or_else(|| doc.get(&format!("{label} ({case})")))
                .unwrap_or_else(|| panic!("{label} not in {doc:?}"));
            let p = point(&time, case, "testbed", run);
            for (k, key) in [
                ("value", "median"),
                ("lower_value", "lo"),
                ("upper_value", "hi"),
            ] {
                let ns = f(&bench["latency"][k]);
                assert!((ns / (f(&p[key]) * 1e9) - 1.0).abs() < 1e-12, "{bench}");
            }
            let (measure, show) = if bench.get("busbw-gb-s").is_some() {
                ("busbw-gb-s", &busbw)
            } else {
                ("gflops-per-device", &gflops)
            };
            let p = point(show, case, "testbed", run);
            assert_eq!(f(&bench[measure]["value"]), f(&p["median"]), "{bench}");
            assert_eq!(f(&bench[measure]["lower_value"]), f(&p["lo"]), "{bench}");
        }
    }

    // Refusals: one sentence, exit 2, the file already at --out untouched.
    let kept = dir.join("kept.csv");
    std::fs::write(&kept, "old\n").unwrap();
    for (args, needle) in [
        (vec!["--format", "xml"], "--format xml: give bencher"),
        (
            vec!["--format", "csv", "--run", "run001"],
            "--run picks the one run",
        ),
        (
            vec!["--format", "bencher", "--run", "run999"],
            "no matching run has run id run999",
        ),
        (
            vec!["--format", "bencher", "--cluster", "nowhere"],
            "no run matches",
        ),
    ] {
        let mut a = vec!["export", "--db", s(&db), "--out", s(&kept)];
        a.extend(args);
        let r = history(&a);
        assert_eq!(r.code, 2, "{a:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{a:?}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old\n");
    }
    let stray: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn compare(args: &[&str]) -> Ran {
    let r = Ran::from(
        Command::new(bin())
            .arg("compare")
            .args(args)
            .output()
            .expect("start scalebench"),
    );
    no_panic(&r);
    r
}

/// `compare --baseline-history 5`: of 7 runs on the candidate's cluster and set-up (2 newer
/// ones on another CPU, 1 on another cluster), the index picks the 5 most recent, says so,
/// and the comparison with 3 candidate runs (case 0 planted 20 % slower) is byte for byte the
/// report of the file-based `compare A… -- B…` of the same runs: the same verdicts and
/// figures, exit 1. Too many asked, an empty or missing index, `--`, a changed file: exit 2.
#[test]
fn compare_takes_its_baseline_from_the_history() {
    let dir = tmpdir("history-baseline");
    let tree = dir.join("tree");
    let mut a = Vec::new();
    for i in 0..7 {
        a.push(run_file(&tree, i, 1.0, "CPU A"));
    }
    for i in 7..9 {
        run_file(&tree, i, 1.0, "CPU B");
    }
    run_file_on(&tree, 9, 1.0, "CPU A", "other");
    let cands: Vec<PathBuf> = (20..23)
        .map(|i| {
            run_file_with(
                &dir.join("cand"),
                i,
                3,
                &|k| if k == 0 { 1.2 } else { 1.0 },
                "CPU A",
                "testbed",
            )
        })
        .collect();
    let db = dir.join("h.sqlite");
    // The candidates are indexed too (a nightly ingests every run): they never count as
    // their own baseline.
    let ing = history(&["ingest", s(&tree), s(&dir.join("cand")), "--db", s(&db)]);
    assert_eq!(ing.code, 0, "{}", ing.stderr);

    let c: Vec<&str> = cands.iter().map(|p| s(p)).collect();
    let mut args = vec![
        "--baseline-history",
        "5",
        "--db",
        s(&db),
        "--format",
        "json",
    ];
    args.extend(&c);
    let hist = compare(&args);
    assert_eq!(hist.code, 1, "{}\n{}", hist.stdout, hist.stderr);
    assert!(
        hist.stderr
            .contains("the 5 most recent runs on cluster testbed")
            && hist
                .stderr
                .contains("(2 runs of another set-up passed over)")
            && hist.stderr.contains("run002")
            && hist.stderr.contains("run006")
            && !hist.stderr.contains("run001")
            && !hist.stderr.contains("run007"),
        "{}",
        hist.stderr
    );
    // The same runs named (as indexed: absolute paths), oldest first.
    let named: Vec<PathBuf> = a[2..7]
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap())
        .collect();
    let mut args: Vec<&str> = named.iter().map(|p| s(p)).collect();
    args.push("--format");
    args.push("json");
    args.push("--");
    args.extend(&c);
    let files = compare(&args);
    assert_eq!(files.code, 1, "{}\n{}", files.stdout, files.stderr);
    assert_eq!(hist.stdout, files.stdout, "the same report");
    let v: serde_json::Value = serde_json::from_str(&hist.stdout).unwrap();
    assert_eq!(v["settings"]["runs_baseline"], 5);
    let verdicts: Vec<(&str, &str)> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["label"].as_str().unwrap_or(""),
                c["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts.iter().filter(|(_, v)| *v == "regressed").count(),
        1,
        "{verdicts:?}"
    );
    let worst = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["verdict"] == "regressed")
        .unwrap();
    // busbw of allreduce: 1/1.2 − 1 = −16.7 %.
    let change = worst["stats"]["change"].as_f64().unwrap();
    assert!((-0.19..-0.15).contains(&change), "{worst:#}");

    // Too many asked: the count there is, what did not count, and the fix.
    let mut args = vec!["--baseline-history", "9", "--db", s(&db)];
    args.extend(&c);
    let r = compare(&args);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("holds 7 runs on cluster testbed")
            && r.stderr.contains("2 more of another set-up")
            && r.stderr.contains("--baseline-history 7 or less"),
        "{}",
        r.stderr
    );
    // An empty index, a missing one, `--` with the history.
    std::fs::create_dir_all(dir.join("nothing")).unwrap();
    let empty = dir.join("empty.sqlite");
    ingest_ok(&dir.join("nothing"), &empty);
    for (db, needle) in [
        (&empty, "holds no run"),
        (&dir.join("none.sqlite"), "no history index here"),
    ] {
        let mut args = vec!["--baseline-history", "3", "--db", s(db)];
        args.extend(&c);
        let r = compare(&args);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains(needle) && r.stderr.contains("history ingest"),
            "{}",
            r.stderr
        );
    }
    let r = compare(&["--baseline-history", "3", "--db", s(&db), c[0], "--", c[1]]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("without `--`"), "{}", r.stderr);
    // The same run rewritten with other whitespace is the same run: it still serves.
    let text = std::fs::read_to_string(&a[6]).unwrap();
    std::fs::write(&a[6], format!("{text}\n\n")).unwrap();
    let mut args = vec![
        "--baseline-history",
        "5",
        "--db",
        s(&db),
        "--format",
        "json",
    ];
    args.extend(&c);
    let r = compare(&args);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, hist.stdout, "the same report");
    // A chosen file whose content changed since it was indexed: refused by name, not
    // silently skipped.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["run"]["labels"]["note"] = "edited after indexing".into();
    std::fs::write(&a[6], serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let mut args = vec!["--baseline-history", "5", "--db", s(&db)];
    args.extend(&c);
    let r = compare(&args);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("run006") && r.stderr.contains("has changed since it was indexed"),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `show --chart`: one SVG panel per series with a point per run, the set-up break drawn;
/// more series than a chart holds is refused (exit 2) and writes nothing.
#[test]
fn show_draws_a_chart_of_each_series() {
    let dir = tmpdir("history-chart");
    for i in 0..20 {
        // Run 3 is a wild run (40× slower): screened as an outlier, ringed, not a step.
        let scale = match i {
            3 => 40.0,
            0..10 => 1.0,
            _ => 1.25,
        };
        run_file(
            &dir.join("tree"),
            i,
            scale,
            if i < 15 { "CPU A" } else { "CPU B" },
        );
    }
    let db = dir.join("h.sqlite");
    ingest_ok(&dir.join("tree"), &db);
    let svg = dir.join("c/all.svg");
    let r = history(&["show", "--db", s(&db), "--chart", s(&svg)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("a chart of 3 series"), "{}", r.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    // The series with their steps, as the chart draws them.
    let series = json(&history(&["changes", "--db", s(&db), "--json"]));
    let (mut dots, mut rings) = (0, 0);
    for sr in series["series"].as_array().unwrap() {
        assert!(
            text.contains(sr["label"].as_str().unwrap()),
            "{}",
            sr["label"]
        );
        let steps: Vec<(&str, u64)> = sr["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|st| (st["kind"].as_str().unwrap(), st["index"].as_u64().unwrap()))
            .collect();
        // The wild run is an outlier, the step starts at run index 10, the set-up at 15.
        assert_eq!(
            steps,
            [("outlier", 3), ("change", 10), ("setup", 15)],
            "{}",
            sr["label"]
        );
        dots += sr["points"].as_array().unwrap().len();
        rings += steps.iter().filter(|(k, _)| *k == "outlier").count();
    }
    // A dot per run (3 panels × 20 runs) and a ring around each screened outlier.
    assert_eq!((dots, rings), (3 * 20, 3));
    assert_eq!(text.matches("<circle").count(), dots + rings, "markers");
    // The set-up break (grey) and the change (orange) before run 11, in every panel.
    assert_eq!(text.matches("#969696").count(), 3, "set-up lines");
    assert!(text.matches("#D55E00").count() >= 3, "change lines");
    // Too many series for one chart: refused, nothing written.
    for i in 0..5 {
        let mut f = fixture::simple(3, 50 + i, &|_| 1.0);
        f.run.run_id = format!("wide{i}");
        f.run.labels.insert("cluster".into(), format!("c{i}"));
        let d = dir.join("tree").join(format!("wide{i}"));
        std::fs::create_dir_all(&d).unwrap();
        fixture::write(&d, "results.json", &f);
    }
    ingest_ok(&dir.join("tree"), &db);
    let wide = dir.join("wide.svg");
    let r = history(&["show", "--db", s(&db), "--chart", s(&wide)]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("18 series match"), "{}", r.stderr);
    assert!(!wide.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `report --history-db`: a trend section naming each case's runs in the index, the latest
/// median against the runs before it and the change point planted at run 7 (+25 % time from
/// run index 6), with a chart per case; without the option no such section; a missing index
/// is exit 2 with the fix.
#[test]
fn report_has_a_trend_section_from_the_history() {
    let dir = tmpdir("history-report");
    let tree = dir.join("tree");
    let mut last = PathBuf::new();
    for i in 0..16 {
        last = run_file(&tree, i, if i < 6 { 1.0 } else { 1.25 }, "CPU A");
    }
    let db = dir.join("h.sqlite");
    ingest_ok(&tree, &db);
    let out = dir.join("rep");
    let r = crate::common::report(&[
        s(&last),
        "--out",
        s(&out),
        "--format",
        "md,svg,csv",
        "--history-db",
        s(&db),
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = md
        .split("## Trend in the history")
        .nth(1)
        .unwrap_or_else(|| panic!("no trend section:\n{md}"));
    let section = section.split("\n## ").next().unwrap();
    assert!(
        section.contains("3 of the report's 3 cases have 2 or more runs"),
        "{section}"
    );
    let rows = read_csv(&out.join("tables/trend.csv"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    for row in &rows {
        assert_eq!(row["runs"], "16");
        assert_eq!(row["cluster"], "testbed");
        // The change: run 7 (index 6), commit 006…, worse; busbw 1/1.25 − 1 = −20 %.
        let change = &row["last change"];
        let pct: f64 = change
            .strip_prefix("run 7 (run006, 006aaaaaaaaa): worse ")
            .unwrap_or_else(|| panic!("{row:?}"))
            .trim_end_matches('%')
            .replace('−', "-")
            .parse()
            .unwrap();
        assert!((-22.0..-18.0).contains(&pct), "{row:?}");
        // The latest run is on the new level: it moved little against the runs before it.
        let moved: f64 = row["moved"].parse().unwrap();
        assert!(moved.abs() < 0.03, "{row:?}");
    }
    for n in 1..=3 {
        let svg = std::fs::read_to_string(out.join(format!("charts/trend_{n}.svg"))).unwrap();
        // The change point's line is labelled with its direction and size (−20 % planted).
        let at = svg
            .find("worse -")
            .unwrap_or_else(|| panic!("chart {n}: no change label"));
        let pct: f64 = svg[at + "worse -".len()..]
            .split(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("chart {n}: {}", &svg[at..at + 20]));
        assert!((18.0..22.0).contains(&pct), "chart {n}: {pct}");
    }
    assert!(!out.join("charts/trend_4.svg").exists());

    let plain = dir.join("plain");
    let r = crate::common::report(&[s(&last), "--out", s(&plain), "--format", "md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!std::fs::read_to_string(plain.join("report.md"))
        .unwrap()
        .contains("Trend in the history"));
    let none = dir.join("none");
    let r = crate::common::report(&[
        s(&last),
        "--out",
        s(&none),
        "--history-db",
        s(&dir.join("missing.sqlite")),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("history ingest"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A GPU run of the synthetic history: run `i` of [`run_file`], on the CUDA backend with
/// `gpu` devices and `detail` as the backend's detail (its library versions, stand-in label).
fn gpu_run(dir: &Path, i: usize, gpu: &str, bus: &str, detail: &str) -> PathBuf {
    let mut f = fixture::simple(3, 1000 + i as u64, &|_| 1.0);
    f.run.run_id = format!("run{i:03}");
    f.run.started_unix_s = 1.8e9 + i as f64 * 86_400.0;
    f.run.labels.insert("cluster".into(), "testbed".into());
    f.generator.git_sha = Some(sha(i));
    for l in &mut f.launches {
        let p = l.provenance.as_mut().unwrap();
        p.backend.kind = scalebench::params::BackendKind::Cuda;
        p.backend.detail = detail.into();
        for r in &mut p.ranks {
            for d in &mut r.devices {
                d.name = format!("{gpu} ({bus}, 79.1 GiB, cc 9.0, 132 SMs, GPU-0, CUDA ordinal 0)");
            }
        }
    }
    let d = dir.join(format!("run{i:03}"));
    std::fs::create_dir_all(&d).unwrap();
    fixture::write(&d, "results.json", &f)
}

/// The set-up names the GPU model, the collective library, BLAS and driver versions and the
/// stand-in flag: each change breaks the series (a `setup` step, never a `change`); the same
/// model in another PCI slot does not.
#[test]
fn setup_breaks_for_gpu_model_library_version_and_the_standin_flag() {
    let dir = tmpdir("history-gpu-setup");
    let detail = |nccl: &str, standin: bool| {
        format!(
            "{}NCCL {nccl} collectives, one NCCL rank per GPU; cuBLAS 13.1.0 cublasGemmStridedBatchedEx; driver supports CUDA 13.0; driver API through cudarc 0.19",
            if standin { "STAND-IN: CPU test doubles, no GPU. " } else { "" }
        )
    };
    for i in 0..32 {
        let (gpu, nccl, standin) = match i {
            0..=7 => ("NVIDIA H100 80GB HBM3", "2.28.3", false),
            8..=15 => ("NVIDIA H100 80GB HBM3", "2.29.1", false),
            16..=23 => ("NVIDIA H200", "2.29.1", false),
            _ => ("NVIDIA H200", "2.29.1", true),
        };
        // Runs move between PCI slots: not a set-up change.
        let bus = if i % 2 == 0 {
            "0000:17:00.0"
        } else {
            "0000:65:00.0"
        };
        gpu_run(&dir.join("tree"), i, gpu, bus, &detail(nccl, standin));
    }
    let db = dir.join("h.sqlite");
    ingest_ok(&dir.join("tree"), &db);
    let v = json(&history(&["changes", "--db", s(&db), "--json"]));
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 3, "{v}");
    for sr in series {
        let steps: Vec<(String, u64)> = sr["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|st| {
                (
                    st["kind"].as_str().unwrap().to_string(),
                    st["index"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            steps,
            [
                ("setup".into(), 8),
                ("setup".into(), 16),
                ("setup".into(), 24)
            ],
            "{sr}"
        );
        let setups: Vec<&str> = sr["setups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert!(setups[0].contains("backend=cuda; gpu=NVIDIA H100 80GB HBM3; nccl=2.28.3; cublas=13.1.0; driver=cuda 13.0"), "{setups:?}");
        assert!(setups[1].contains("nccl=2.29.1") && !setups[1].contains("STAND-IN"));
        assert!(setups[2].contains("gpu=NVIDIA H200"));
        assert!(setups[3].contains("STAND-IN"), "{setups:?}");
    }
    let text = history(&["show", "--db", s(&db), "--setup", "STAND-IN"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(
        text.stdout.matches("run02").count() + text.stdout.matches("run03").count(),
        3 * 8,
        "{}",
        text.stdout
    );
    // Every figure of a stand-in run is labelled where it is printed or exported (issue 47):
    // `history show`'s lines, the CSV export's rows, the Bencher export's benchmark names.
    let all = history(&["show", "--db", s(&db)]);
    assert_eq!(all.code, 0, "{}", all.stderr);
    for line in all.stdout.lines().filter(|l| l.contains(" run0")) {
        let run = line
            .split_whitespace()
            .find(|w| w.starts_with("run0"))
            .unwrap();
        let i: usize = run[3..].parse().unwrap();
        assert_eq!(
            line.contains("STAND-IN (CPU test double, not a GPU figure)"),
            i >= 24,
            "{line}"
        );
    }
    let rows = export_csv(&db, &[], &dir.join("all.csv"));
    assert_eq!(rows.len(), 3 * 32);
    for row in &rows {
        let i: usize = row["run_id"][3..].parse().unwrap();
        assert_eq!(
            row["stand_in"],
            if i >= 24 { "true" } else { "false" },
            "{row:?}"
        );
    }
    for (run, standin) in [("run031", true), ("run020", false)] {
        let bmf = dir.join(format!("{run}.json"));
        let r = history(&[
            "export",
            "--db",
            s(&db),
            "--format",
            "bencher",
            "--run",
            run,
            "--out",
            s(&bmf),
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&bmf).unwrap()).unwrap();
        let names: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(names.len(), 3, "{doc}");
        assert!(
            names.iter().all(|n| n.starts_with("STAND-IN ") == standin),
            "{names:?}"
        );
        assert_eq!(
            r.stderr
                .contains("STAND-IN: 3 benchmarks ran on scalebench's stand-in libraries"),
            standin,
            "{}",
            r.stderr
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sweep's directory is one run (its merged results.json, not also each launch's copy under
/// launches/); the same content rewritten with other whitespace is the same run; a moved tree
/// re-ingested keeps its runs and the index points at the new paths.
#[test]
fn a_sweep_is_indexed_once_and_moved_or_reformatted_files_are_the_same_run() {
    let dir = tmpdir("history-sweep-once");
    let sweep = dir.join("tree/sweep");
    let merged = run_file(&dir.join("tree"), 1, 1.0, "CPU A");
    std::fs::rename(merged.parent().unwrap(), &sweep).unwrap();
    let attempt = sweep.join("launches/001-l0");
    std::fs::create_dir_all(&attempt).unwrap();
    std::fs::copy(sweep.join("results.json"), attempt.join("results.json")).unwrap();
    run_file(&dir.join("tree"), 2, 1.0, "CPU A");
    let db = dir.join("h.sqlite");
    let r = history(&["ingest", s(&dir.join("tree")), "--db", s(&db)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("2 results files found, 2 added"),
        "{}",
        r.stdout
    );
    assert_eq!(count(&db, "SELECT count(*) FROM run"), 2);

    // Pretty-printed vs compact, keys in another order: one run.
    let text = std::fs::read_to_string(sweep.join("results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let other = dir.join("copy");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("results.json"),
        serde_json::to_string(&v).unwrap() + "\n\n",
    )
    .unwrap();
    let r = history(&["ingest", s(&other), "--db", s(&db)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("0 added (0 case rows), 1 already indexed"),
        "{}",
        r.stdout
    );
    assert_eq!(count(&db, "SELECT count(*) FROM run"), 2);

    // The tree moves: re-ingest finds nothing new and repoints both files.
    let moved = dir.join("moved");
    std::fs::rename(dir.join("tree"), &moved).unwrap();
    let r = history(&["ingest", s(&moved), "--db", s(&db)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("2 already indexed (2 at a new path, updated)"),
        "{}",
        r.stdout
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    let paths: Vec<String> = c
        .prepare("SELECT path FROM source_file ORDER BY path")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(paths.iter().all(|p| p.contains("/moved/")), "{paths:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The default index (results/history.sqlite) works where results/ does not exist yet.
#[test]
fn the_default_index_folder_is_created() {
    let dir = tmpdir("history-default-db");
    run_file(&dir.join("tree"), 1, 1.0, "CPU A");
    let r = Ran::from(
        Command::new(bin())
            .args(["history", "ingest", "tree"])
            .current_dir(&dir)
            .output()
            .expect("start scalebench"),
    );
    no_panic(&r);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(dir.join("results/history.sqlite").is_file());
    let shown = Ran::from(
        Command::new(bin())
            .args(["history", "show"])
            .current_dir(&dir)
            .output()
            .expect("start scalebench"),
    );
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("run001"), "{}", shown.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Through the binary: 36 runs, a 20 % slowdown from run 20 and three runs 30–80× slow:
/// one change at run 20 sized by the levels' medians, the wild runs listed as outliers.
#[test]
fn wild_runs_are_outliers_and_the_step_is_still_found() {
    let dir = tmpdir("history-outliers");
    for i in 0..36 {
        let wild = match i {
            5 => 80.0,
            17 => 30.0,
            29 => 55.0,
            _ => 1.0,
        };
        run_file(
            &dir.join("t"),
            i,
            wild * if i < 20 { 1.0 } else { 1.2 },
            "CPU A",
        );
    }
    let db = dir.join("h.sqlite");
    ingest_ok(&dir.join("t"), &db);
    let v = json(&history(&[
        "changes",
        "--db",
        s(&db),
        "--json",
        "--metric",
        "time",
    ]));
    for sr in v["series"].as_array().unwrap() {
        let steps = sr["steps"].as_array().unwrap();
        let kinds: Vec<(&str, u64)> = steps
            .iter()
            .map(|st| (st["kind"].as_str().unwrap(), st["index"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("outlier", 5),
                ("outlier", 17),
                ("change", 20),
                ("outlier", 29)
            ],
            "{sr}"
        );
        let rel = steps[2]["relative"].as_f64().unwrap();
        assert!((0.18..0.22).contains(&rel), "{rel}");
    }
    let text = history(&["changes", "--db", s(&db)]);
    assert!(
        text.stdout.contains("run020 (020aaaaaaaaa): worse -1"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains(
            "outliers, screened (neither steps nor part of a level; × their level): run 6 (×0.013)"
        ),
        "{}",
        text.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An index written by schema 1 (`tests/fixtures/history-v1`: the SQL dump of what main's
/// `history ingest` wrote for the three runs beside it) is upgraded, not lost: a read refuses
/// it naming the command that upgrades it and leaves it as it was; `ingest` moves it aside
/// untouched (`.old-<stamp>`), says so, and rebuilds it from the trees it had indexed, holding
/// the same runs and measurement rows, now with the schema-2 set-up. When
/// those trees are gone the warning names them and the file that still holds their runs.
#[test]
fn an_index_of_schema_1_is_rebuilt_and_kept_aside() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/history-v1");
    let dump = std::fs::read_to_string(fixtures.join("index-v1.sql")).unwrap();
    let dir = tmpdir("history-v1");
    let tree = dir.join("tree");
    for i in 0..3 {
        let rel = format!("run{i:03}/results.json");
        std::fs::create_dir_all(tree.join(format!("run{i:03}"))).unwrap();
        std::fs::copy(fixtures.join("tree").join(&rel), tree.join(&rel)).unwrap();
    }
    // The index as schema 1 left it, with its list of the trees it indexed.
    let v1 = |db: &Path, root: &Path| {
        rusqlite::Connection::open(db)
            .unwrap()
            .execute_batch(&dump)
            .unwrap();
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        std::fs::write(
            format!("{}.roots", db.display()),
            format!("{}\n", root.display()),
        )
        .unwrap();
    };
    let runs = |db: &Path| -> (i64, Vec<String>, i64) {
        let c = rusqlite::Connection::open(db).unwrap();
        let version = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        let mut st = c.prepare("SELECT run_id FROM run ORDER BY run_id").unwrap();
        let ids = st
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<Vec<String>, _>>()
            .unwrap();
        let rows = c
            .query_row("SELECT count(*) FROM measurement", [], |r| r.get(0))
            .unwrap();
        (version, ids, rows)
    };
    let aside_of = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".sqlite.old-"))
            .collect()
    };
    let db = dir.join("h.sqlite");
    v1(&db, &tree);
    let before = runs(&db);
    assert_eq!(
        before,
        (
            1,
            vec!["run000".into(), "run001".into(), "run002".into()],
            9
        )
    );
    let bytes = std::fs::read(&db).unwrap();

    // A read never moves the index (issue 44): it says what it found and the command that
    // upgrades it, and leaves the file as it was.
    let show = history(&["show", "--db", s(&db), "--json"]);
    no_panic(&show);
    assert_eq!(show.code, 2, "{}", show.stderr);
    assert!(
        show.stderr.contains("schema version 1, older than")
            && show.stderr.contains("history ingest"),
        "{}",
        show.stderr
    );
    assert!(aside_of(&dir).is_empty());
    assert_eq!(std::fs::read(&db).unwrap(), bytes);
    // ingest moves it aside untouched and rebuilds it.
    let ing = history(&["ingest", s(&tree), "--db", s(&db)]);
    no_panic(&ing);
    assert_eq!(ing.code, 0, "{}", ing.stderr);
    assert!(ing.stderr.contains("of an older schema"), "{}", ing.stderr);
    let aside = aside_of(&dir);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(
        ing.stderr.contains(&*aside[0].to_string_lossy()),
        "{}",
        ing.stderr
    );
    // Nothing lost: the old file is byte for byte what it was; the new one holds the same runs.
    assert_eq!(std::fs::read(&aside[0]).unwrap(), bytes);
    assert_eq!(runs(&db), (2, before.1.clone(), before.2));
    let show = history(&["show", "--db", s(&db), "--json"]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    let series = json(&show);
    for sr in series["series"].as_array().unwrap() {
        assert_eq!(sr["points"].as_array().unwrap().len(), 3, "{sr}");
        assert!(sr.to_string().contains("backend=cpu"), "{sr}");
    }
    // A second read finds schema 2: nothing moved again.
    let again = history(&["show", "--db", s(&db), "--json"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(!again.stderr.contains("older schema"), "{}", again.stderr);
    assert_eq!(aside_of(&dir).len(), 1);

    // The trees are gone: the warning says so and where their runs still are.
    let lone = dir.join("lone");
    std::fs::create_dir_all(&lone).unwrap();
    let db = lone.join("h.sqlite");
    v1(&db, &dir.join("moved-away"));
    let ing = history(&["ingest", s(&tree), "--db", s(&db)]);
    no_panic(&ing);
    assert_eq!(ing.code, 0, "{}", ing.stderr);
    let aside = aside_of(&lone);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(
        ing.stderr.contains("1 tree it indexed no longer exists")
            && ing.stderr.contains("moved-away")
            && ing
                .stderr
                .contains(&format!("kept only in {}", aside[0].display())),
        "{}",
        ing.stderr
    );
    assert_eq!(runs(&aside[0]), before);
    let _ = std::fs::remove_dir_all(&dir);
}
