//! `scalebench history`: ingest (idempotent, concurrent, rebuilt when corrupt), show, changes.
//! No MPI: the binary only reads results files, so no test here takes the MPI lock.

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

/// Run `i` of a synthetic history: 3 cases whose times are `scale` × their base, started a
/// day after run i − 1, commit `i` in hex, on hosts with CPU model `cpu`.
fn run_file(dir: &Path, i: usize, scale: f64, cpu: &str) -> PathBuf {
    let mut f = fixture::simple(3, 1000 + i as u64, &|_| scale);
    f.run.run_id = format!("run{i:03}");
    f.run.started_unix_s = 1.8e9 + i as f64 * 86_400.0;
    f.run.labels.insert("cluster".into(), "testbed".into());
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
fn sha(i: usize) -> String {
    format!("{i:03}{}", "a".repeat(37))
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
            .contains("5 results file(s) found, 5 added (15 case rows)")
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
            .contains("6 results file(s) found, 0 added (0 case rows), 6 already"),
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
    assert_eq!(
        history(&["ingest", s(&dir.join("tree")), "--db", s(&db)]).code,
        0
    );
    let show = |db: &Path| history(&["show", "--db", s(db), "--json"]);
    let changes = |db: &Path| history(&["changes", "--db", s(db), "--json"]);
    let (golden_show, golden_changes) = (json(&show(&db)), json(&changes(&db)));
    assert_eq!(golden_show["series"].as_array().unwrap().len(), 3);

    let len = std::fs::metadata(&db).unwrap().len();
    assert!(len > 8192, "{len}");
    let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    let after = show(&db);
    assert!(
        after.stderr.contains("corrupt or truncated") && after.stderr.contains("rebuilt"),
        "{}",
        after.stderr
    );
    assert_eq!(json(&after), golden_show);
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
    assert_eq!(aside, 1);

    // Garbage instead of a database: rebuilt on ingest too.
    std::fs::write(&db, vec![b'x'; 20_000]).unwrap();
    let ing = history(&["ingest", s(&dir.join("tree")), "--db", s(&db)]);
    assert_eq!(ing.code, 0, "{}", ing.stderr);
    assert!(ing.stderr.contains("rebuilt"), "{}", ing.stderr);
    assert_eq!(json(&show(&db)), golden_show);

    let fresh = dir.join("fresh.sqlite");
    assert_eq!(
        history(&["ingest", s(&dir.join("tree")), "--db", s(&fresh)]).code,
        0
    );
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
        assert_eq!(
            history(&["ingest", s(&dir.join(tree)), "--db", s(&db)]).code,
            0
        );
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
