//! Issue 44, the third hardening round: each reproduction from the issue against the real
//! binary (under real `mpirun` for the environment and for two runs into one directory). Each
//! test failed before its fix: a panic (exit 101) in every rank, a file moved aside, a hang
//! (bounded here by `timeout`), a directive smuggled into a job script, a run overwritten, a
//! results file accepted that cannot be a measurement, a value echoed whole.

use crate::common;

use common::{bin, mpi_env, mpi_lock, no_panic, tmpdir, write_file, Ran};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The bytes of a name that is not UTF-8 (`\xff` can start no UTF-8 sequence).
fn not_utf8(prefix: &str) -> OsString {
    let mut b = prefix.as_bytes().to_vec();
    b.extend_from_slice(b"\xff\xfe");
    OsStr::from_bytes(&b).to_os_string()
}

/// `timeout -k 5 LIMIT scalebench ARGS` (arguments as OS strings) with `env` added, under the
/// MPI lock; and how long it ran.
fn sb_os(limit_s: u32, args: &[OsString], env: &[(&str, &OsStr)]) -> (Ran, Duration) {
    let _g = mpi_lock();
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", &limit_s.to_string(), bin()])
        .args(args);
    mpi_env(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t0 = Instant::now();
    let r = Ran::from(cmd.output().expect("start scalebench"));
    (r, t0.elapsed())
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// `scalebench ARGS` (bounded), refused: exit 2, no panic, and each needle in stderr.
fn refused(args: &[&str], needles: &[&str]) -> Ran {
    let (r, took) = sb_os(60, &os(args), &[]);
    // The command line as a failure shows it: a 5,000-character value would bury the rest.
    let args: Vec<String> = args.iter().map(|a| a.chars().take(80).collect()).collect();
    no_panic(&r);
    assert_eq!(r.code, 2, "{args:?}: exit {}\n{}", r.code, r.stderr);
    for n in needles {
        assert!(
            r.stderr.contains(n),
            "{args:?}: {n:?} not in:\n{}",
            r.stderr
        );
    }
    assert!(took < Duration::from_secs(30), "{args:?} took {took:?}");
    r
}

const QUICK: &[&str] = &[
    "-w",
    "allreduce",
    "--sizes",
    "8B",
    "--in-place",
    "no",
    "--time-budget",
    "0.02",
    "-q",
];

fn results_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// Item 1: a variable that is not UTF-8 (an `OLDPWD` of bytes, a NCCL variable the provenance
/// records) made every rank panic in the provenance capture, and a 2-rank job then hung until
/// the watchdog. Now the job runs, and the recorded variable is kept lossily with a note.
#[test]
fn a_non_utf8_environment_variable_is_recorded_lossily_and_the_job_runs() {
    let dir = tmpdir("h44-env");
    let out = dir.join("out");
    let mut args = os(&[
        "-np",
        "2",
        "--oversubscribe",
        bin(),
        "run",
        "--out",
        out.to_str().unwrap(),
    ]);
    args.extend(os(QUICK));
    let (r, _) = {
        let _g = mpi_lock();
        let mut cmd = Command::new("timeout");
        cmd.args(["-k", "5", "120", "mpirun"]).args(&args);
        mpi_env(&mut cmd);
        cmd.env("OLDPWD", not_utf8("/tmp/"))
            .env("NCCL_SB_ISSUE44", not_utf8("x"));
        let t0 = Instant::now();
        (Ran::from(cmd.output().unwrap()), t0.elapsed())
    };
    no_panic(&r);
    r.assert_code(0);
    let v = results_json(&out);
    let p = &v["launches"][0]["provenance"];
    assert_eq!(
        p["environment"]["NCCL_SB_ISSUE44"], "x\u{fffd}\u{fffd}",
        "{p}"
    );
    let warnings = p["warnings"].to_string();
    assert!(
        warnings.contains("NCCL_SB_ISSUE44: not UTF-8"),
        "{warnings}"
    );
    // OLDPWD is no variable the run records: converted, used for nothing, not mentioned.
    assert!(!warnings.contains("OLDPWD"), "{warnings}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn spec_text() -> &'static str {
    "name = \"h44\"\n[axes]\nworkloads = [\"allreduce\"]\nsizes = [\"8B\"]\n[run]\ntime_budget_s = 0.02\n"
}

/// Item 2: an argument that is not UTF-8 panicked every subcommand (`std::env::args`). Now a
/// path takes it as it is (the command works), and text is refused with clap's sentence.
#[test]
fn non_utf8_arguments_work_as_paths_and_are_refused_as_text_by_every_subcommand() {
    let dir = tmpdir("h44-args");
    let mut spec = dir.as_os_str().to_os_string();
    spec.push("/");
    spec.push(not_utf8("spec"));
    spec.push(".toml");
    std::fs::write(&spec, spec_text()).unwrap();
    let mut out = dir.as_os_str().to_os_string();
    out.push("/");
    out.push(not_utf8("out"));
    let bad = not_utf8("v");
    // Paths: the command does its work.
    let plan = [OsString::from("plan"), spec.clone()];
    let dry = [
        OsString::from("sweep"),
        spec.clone(),
        "--dry-run".into(),
        "--out".into(),
        out.clone(),
    ];
    for args in [&plan[..], &dry[..]] {
        let (r, _) = sb_os(60, args, &[]);
        no_panic(&r);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.stdout.contains('\u{fffd}'), "{args:?}: {}", r.stdout);
    }
    // A report of a run directory whose name is not UTF-8.
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/results-v1.json");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::copy(&golden, Path::new(&out).join("results.json")).unwrap();
    let mut report_out = out.clone();
    report_out.push("-report");
    let (r, _) = sb_os(
        60,
        &[
            "report".into(),
            out.clone(),
            "--format".into(),
            "md".into(),
            "--out".into(),
            report_out.clone(),
        ],
        &[],
    );
    no_panic(&r);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(Path::new(&report_out).join("report.md").is_file());
    // Text: exit 2 with a sentence, for every subcommand.
    let s = OsString::from;
    let cases: Vec<Vec<OsString>> = vec![
        vec![s("run"), s("-w"), bad.clone()],
        vec![s("plan"), spec.clone(), s("--json"), bad.clone()],
        vec![s("sweep"), spec.clone(), s("--mpirun"), bad.clone()],
        vec![s("topo"), s("--reserved-cores"), bad.clone()],
        vec![s("ceilings"), bad.clone()],
        vec![s("links"), s("--simulate"), bad.clone()],
        vec![s("submit"), spec.clone(), s("--account"), bad.clone()],
        vec![
            s("status"),
            s(dir.to_str().unwrap()),
            s("--timeout"),
            bad.clone(),
        ],
        vec![
            s("collect"),
            s(dir.to_str().unwrap()),
            s("--from-job"),
            bad.clone(),
        ],
        vec![s("compare"), s("--metric"), bad.clone()],
        vec![
            s("report"),
            s(golden.to_str().unwrap()),
            s("--title"),
            bad.clone(),
        ],
        vec![s("history"), s("show"), bad.clone()],
        vec![s("history"), s("export"), s("--format"), bad.clone()],
        vec![bad.clone()],
    ];
    for args in &cases {
        let (r, took) = sb_os(60, args, &[]);
        no_panic(&r);
        assert_eq!(r.code, 2, "{args:?}: exit {}\n{}", r.code, r.stderr);
        assert!(r.stderr.starts_with("error: "), "{args:?}: {}", r.stderr);
        assert!(took < Duration::from_secs(30), "{args:?}: {took:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tree of one valid results file, for history's tests.
fn results_tree(dir: &Path) -> PathBuf {
    let tree = dir.join("tree/run1");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/results-v1.json"),
        tree.join("results.json"),
    )
    .unwrap();
    dir.join("tree")
}

/// What a directory holds, sorted (to show nothing was moved, created or renamed).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Item 3: `history --db X` where X is no index moved X aside (`X.corrupt-<time>`) and wrote a
/// new index in its place, even for `show`. Now only a file with SQLite's header (or an
/// empty one) is an index; anything else is exit 2 naming what it is, and nothing moves.
#[test]
fn history_never_moves_what_is_not_an_index_and_reading_never_renames() {
    let dir = tmpdir("h44-db");
    let tree = results_tree(&dir);
    let t = tree.to_str().unwrap();
    let results = tree.join("run1/results.json");
    let spec = write_file(&dir, "spec.toml", spec_text());
    let before = listing(&dir);
    let results_bytes = std::fs::read(&results).unwrap();
    for (db, what) in [
        (tree.to_str().unwrap(), "a directory"),
        (".", "a directory"),
        (results.to_str().unwrap(), "a scalebench results file"),
        (spec.to_str().unwrap(), "a sweep spec"),
    ] {
        for args in [
            vec!["history", "ingest", t, "--db", db],
            vec!["history", "show", "--db", db],
            vec!["history", "changes", "--db", db],
            vec!["history", "export", "--db", db, "--format", "csv"],
        ] {
            let r = refused(&args, &[what, "not a history index"]);
            assert!(r.stderr.contains(db), "{args:?}: {}", r.stderr);
        }
        refused(
            &[
                "report",
                results.to_str().unwrap(),
                "--history-db",
                db,
                "--out",
                dir.join("rep").to_str().unwrap(),
            ],
            &[what],
        );
    }
    assert_eq!(listing(&dir), before, "something was created or moved");
    assert_eq!(listing(&tree), vec!["run1"]);
    assert_eq!(std::fs::read(&results).unwrap(), results_bytes);

    // A corrupt index (SQLite's header, then garbage): reading refuses it and leaves it as it
    // is; ingest moves it aside and rebuilds.
    let db = dir.join("h.sqlite");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend(std::iter::repeat_n(b'x', 20_000));
    std::fs::write(&db, &bytes).unwrap();
    let d = db.to_str().unwrap();
    refused(
        &["history", "show", "--db", d],
        &["corrupt", "history ingest"],
    );
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "show changed the index");
    assert!(!listing(&dir).iter().any(|n| n.contains(".corrupt-")));
    let (r, _) = sb_os(60, &os(&["history", "ingest", t, "--db", d]), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("rebuilt"), "{}", r.stderr);
    assert_eq!(
        listing(&dir)
            .iter()
            .filter(|n| n.contains(".corrupt-"))
            .count(),
        1
    );
    let (r, _) = sb_os(60, &os(&["history", "show", "--db", d, "--json"]), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // An empty file is a new index, not something to move.
    let empty = write_file(&dir, "empty.sqlite", "");
    let (r, _) = sb_os(
        60,
        &os(&["history", "ingest", t, "--db", empty.to_str().unwrap()]),
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("rebuilt"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated CString that outlives the call; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Item 4: `--db FIFO` (show, ingest, `report --history-db`) and `submit --profile FIFO` hung
/// for ever while every other input refused FIFOs. Now every path input goes through one
/// regular-file check: each is exit 2 at once, naming the FIFO.
#[test]
fn a_fifo_is_refused_by_every_path_input() {
    let dir = tmpdir("h44-fifo");
    let tree = results_tree(&dir);
    let results = tree.join("run1/results.json");
    let r = results.to_str().unwrap();
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let spec = write_file(&dir, "spec.toml", spec_text());
    let s = spec.to_str().unwrap();
    let rep = dir.join("rep");
    let o = rep.to_str().unwrap();
    for args in [
        vec!["history", "show", "--db", f],
        vec!["history", "changes", "--db", f],
        vec!["history", "ingest", tree.to_str().unwrap(), "--db", f],
        vec!["report", r, "--history-db", f, "--out", o],
        vec!["compare", r, r, "--baseline-history", "3", "--db", f],
        vec!["submit", s, "--profile", f, "--dry-run"],
        vec!["plan", f],
        vec!["sweep", f, "--dry-run"],
        vec!["report", f, "--out", o],
        vec!["compare", r, f],
        vec!["run", "--plan", f, "-q"],
    ] {
        let ran = refused(&args, &["a FIFO"]);
        assert!(ran.stderr.contains(f), "{args:?}: {}", ran.stderr);
    }
    assert!(!rep.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The script-injection payload of the issue: a line that Grid Engine reads as a directive.
const PAYLOAD: &str = "ok\n#$ -P stolen_project";

/// Item 5: a newline in a value written to a job script put `#$ -P stolen_project` at column 0
/// of the script (Grid Engine parses `#$` lines anywhere). Now every such value is refused with
/// its key, for Slurm, UGE and PBS alike, and no script is written.
#[test]
fn a_control_character_in_any_value_of_a_job_script_is_refused_with_its_key() {
    let dir = tmpdir("h44-inject");
    let toml = |s: &str| serde_json::to_string(s).unwrap(); // a TOML basic string
    for sched in ["slurm", "uge", "pbs"] {
        let profile_with = |field: &str| {
            format!("name = \"p\"\nscheduler = \"{sched}\"\ncores_per_node = 8\n{field}\n")
        };
        let profiles = [
            (format!("env = {{ X = {} }}", toml(PAYLOAD)), "env.X"),
            (
                format!("container = [\"exec\", {}]", toml(PAYLOAD)),
                "container[1]",
            ),
            (format!("launcher = [{}]", toml(PAYLOAD)), "launcher[0]"),
            (format!("scalebench = {}", toml(PAYLOAD)), "scalebench"),
            (format!("description = {}", toml(PAYLOAD)), "description"),
        ];
        let spec = write_file(&dir, "spec.toml", spec_text());
        for (i, (field, key)) in profiles.iter().enumerate() {
            let p = write_file(&dir, &format!("{sched}-{i}.toml"), &profile_with(field));
            let out = dir.join(format!("out-{sched}-{i}"));
            let r = refused(
                &[
                    "submit",
                    spec.to_str().unwrap(),
                    "--profile",
                    p.to_str().unwrap(),
                    "--dry-run",
                    "--out",
                    out.to_str().unwrap(),
                ],
                &[key, "control character"],
            );
            assert!(!r.stdout.contains("\n#$ -P"), "{}", r.stdout);
            assert!(!out.exists());
        }
        // The spec's own values: [launch] env, [submit.env], [launch] mpirun_args.
        let spec_values = [
            (
                format!("[launch]\nenv = {{ Y = {} }}\n", toml(PAYLOAD)),
                "launch.env.Y",
            ),
            (
                format!("[submit.env]\nZ = {}\n", toml(PAYLOAD)),
                "submit.env",
            ),
            (
                format!("[launch]\nmpirun_args = [{}]\n", toml(PAYLOAD)),
                "launch.mpirun_args[0]",
            ),
        ];
        for (i, (extra, key)) in spec_values.iter().enumerate() {
            let spec = write_file(
                &dir,
                &format!("spec-{sched}-{i}.toml"),
                &format!("{}{extra}", spec_text()),
            );
            let out = dir.join(format!("sout-{sched}-{i}"));
            let r = refused(
                &[
                    "submit",
                    spec.to_str().unwrap(),
                    "--scheduler",
                    sched,
                    "--dry-run",
                    "--out",
                    out.to_str().unwrap(),
                ],
                &[key, "control character", spec.to_str().unwrap()],
            );
            assert!(!r.stdout.contains("\n#$ -P"), "{}", r.stdout);
            assert!(!out.exists());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mpirun -np 2 scalebench run --out OUT` of an allreduce of SIZES within TIME_BUDGET_S a
/// case, as a child of its own (the caller holds the MPI lock).
fn run_into(out: &Path, sizes: &str, time_budget_s: &str) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args([
        "-k",
        "5",
        "120",
        "mpirun",
        "-np",
        "2",
        "--oversubscribe",
        bin(),
        "run",
        "--out",
    ])
    .arg(out)
    .args([
        "-w",
        "allreduce",
        "--in-place",
        "no",
        "-q",
        "--sizes",
        sizes,
    ])
    .args(["--time-budget", time_budget_s]);
    mpi_env(&mut cmd);
    cmd
}

/// Item 6: `run --out DIR` replaced an earlier run's results.json, and two runs into one
/// directory both exited 0 with one run's cases lost. Now `run` takes the sweep's lock and
/// refuses a directory that holds a run: exit 2 naming the file and the fix, the first run
/// kept whole.
#[test]
fn two_runs_into_one_directory_are_refused_and_the_first_is_kept() {
    let dir = tmpdir("h44-twice");
    let out = dir.join("out");
    let _g = mpi_lock();
    let first = Ran::from(run_into(&out, "8B", "0.02").output().unwrap());
    first.assert_code(0);
    let kept = std::fs::read(out.join("results.json")).unwrap();
    let again = Ran::from(run_into(&out, "16B", "0.02").output().unwrap());
    no_panic(&again);
    again.assert_code(2);
    assert!(
        again
            .stderr
            .contains("results.json is there, from an earlier run")
            && again.stderr.contains("give another --out"),
        "{}",
        again.stderr
    );
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), kept);
    // A journal alone (a run killed before it wrote results.json) is a run too.
    let killed = dir.join("killed");
    std::fs::create_dir_all(&killed).unwrap();
    std::fs::write(killed.join("journal.jsonl"), "").unwrap();
    let r = Ran::from(run_into(&killed, "8B", "0.02").output().unwrap());
    r.assert_code(2);
    assert!(r.stderr.contains("journal.jsonl is there"), "{}", r.stderr);

    // Two at once: the second finds the first's lock (or, if the first was that quick, its
    // results): exit 2 either way, and the first's cases all kept.
    let both = dir.join("both");
    let mut a = run_into(&both, "8B,64B,512B,4KiB", "0.5").spawn().unwrap();
    let t0 = Instant::now();
    while !both.join(".lock").exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let b = Ran::from(run_into(&both, "8B", "0.02").output().unwrap());
    let a = a.wait().unwrap();
    assert_eq!(a.code(), Some(0));
    no_panic(&b);
    b.assert_code(2);
    assert!(
        b.stderr
            .contains("another scalebench run or sweep is writing")
            || b.stderr.contains("from an earlier run"),
        "{}",
        b.stderr
    );
    let v = results_json(&both);
    let n = v["cases"].as_array().unwrap().len();
    assert!(n >= 4, "the first run's cases: {n}");
    eprintln!(
        "two runs into one directory: the second refused ({}), the first kept its {n} cases",
        if b.stderr.contains("another") {
            "busy"
        } else {
            "after it"
        }
    );
    drop(_g);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A change made to a JSON file.
type Edit = dyn Fn(&mut serde_json::Value);

/// A results file from the golden one with `edit` applied.
fn edited(dir: &Path, name: &str, edit: &dyn Fn(&mut serde_json::Value)) -> PathBuf {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/results-v1.json"),
    )
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut v);
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("results.json");
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    p
}

/// Items 7 and 8: "ok" with wrong elements, an id that is not its params', dangling or no
/// launches, 0 ranks or devices, a median outside its samples, impossible calibration
/// figures and unknown metric definitions were accepted by report and ingest (compare took
/// some). Now the one validator refuses each in all three, naming the path in the file.
#[test]
fn report_compare_and_ingest_refuse_impossible_results_naming_the_path() {
    use serde_json::json;
    let dir = tmpdir("h44-results");
    let good = edited(&dir, "good", &|v| v["run"]["run_id"] = json!("good"));
    let g = good.to_str().unwrap();
    let cal = json!({"cold_op_s": -1.0, "probes_s": [1e-6], "estimate_s": 1e300, "iters_source": "calibrated"});
    let bad: Vec<(&str, Box<Edit>, &str)> = vec![
        (
            "wrong",
            Box::new(|v| v["cases"][3]["wrong"] = json!(5)),
            "cases[3].wrong",
        ),
        (
            "id",
            Box::new(|v| v["cases"][3]["id"] = json!("0123456789abcdef")),
            "cases[3].id",
        ),
        (
            "nolaunch",
            Box::new(|v| v["launches"] = json!([])),
            "launches",
        ),
        (
            "dangling",
            Box::new(|v| v["cases"][2]["launch_id"] = json!("ffff")),
            "cases[2].launch_id",
        ),
        (
            "ranks",
            Box::new(|v| v["cases"][1]["ranks"] = json!(0)),
            "cases[1].ranks",
        ),
        (
            "devices",
            Box::new(|v| v["cases"][1]["devices"] = json!(0)),
            "cases[1].devices",
        ),
        (
            "median",
            Box::new(|v| v["cases"][3]["timing"]["stats_s"]["median"] = json!(1000.0)),
            "cases[3].timing.stats_s.median",
        ),
        (
            "calibration",
            Box::new(move |v| v["cases"][0]["timing"]["calibration"] = cal.clone()),
            "cases[0].timing.calibration.cold_op_s",
        ),
        (
            "metrics",
            Box::new(|v| v["metrics_version"] = json!(99)),
            "metrics_version",
        ),
    ];
    for (name, edit, path) in &bad {
        let f = edited(&dir, name, &|v| {
            v["run"]["run_id"] = json!(format!("bad-{name}"));
            edit(v)
        });
        let fs = f.to_str().unwrap();
        let out = dir.join(format!("{name}-out"));
        let o = out.to_str().unwrap();
        let db = dir.join(format!("{name}.sqlite"));
        for args in [
            vec!["report", fs, "--out", o, "--format", "md"],
            vec!["compare", g, fs, "--out", o],
            vec!["history", "ingest", fs, "--db", db.to_str().unwrap()],
        ] {
            refused(&args, &[fs, path]);
            assert!(!out.exists(), "{args:?} left {o}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 8's links files: a confidence of 5, a ratio of −0.0, a 1e300 GB/s cell and a measured
/// diagonal were accepted; now each is refused, named by its place.
#[test]
fn impossible_links_files_are_refused_naming_the_place() {
    let dir = tmpdir("h44-links");
    let base = dir.join("sim");
    let (r, _) = sb_os(
        60,
        &os(&[
            "links",
            "--simulate",
            "4",
            "--slow-node",
            "1:0.4",
            "--out",
            base.to_str().unwrap(),
        ]),
        &[],
    );
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let text = std::fs::read_to_string(base.join("links.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(!v["findings"].as_array().unwrap().is_empty(), "{text}");
    let cases: Vec<(&str, &Edit, &str)> = vec![
        (
            "conf",
            &|v| v["findings"][0]["confidence"] = serde_json::json!(5.0),
            "findings[0].confidence = 5",
        ),
        (
            "negzero",
            &|v| v["findings"][0]["ratio"] = serde_json::json!(-0.0),
            "findings[0].ratio = -0",
        ),
        (
            "huge",
            &|v| v["matrix_gbps"][0][1] = serde_json::json!(1e300),
            "matrix_gbps[0][1] = 1e300",
        ),
        (
            "diag",
            &|v| v["matrix_gbps"][2][2] = serde_json::json!(3.0),
            "matrix_gbps[2][2]",
        ),
    ];
    for (name, edit, needle) in cases {
        let mut w = v.clone();
        edit(&mut w);
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("links.json");
        std::fs::write(&f, serde_json::to_string(&w).unwrap()).unwrap();
        let out = dir.join(format!("{name}-report"));
        refused(
            &[
                "report",
                f.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--format",
                "md",
            ],
            &[f.to_str().unwrap(), needle],
        );
        assert!(!out.exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 9: long option values were echoed whole (5,000 characters → 10 KB of stderr); now at
/// most 60 characters and the length, as documented. Also: `[submit]` errors name their key,
/// `links --out FILE` is exit 2, and a spec with no key is refused naming the file.
#[test]
fn long_values_are_shortened_and_small_refusals_name_their_place() {
    let dir = tmpdir("h44-small");
    let long = "x".repeat(5000);
    let sizes = format!("8B:{long}");
    let out = dir.join("o");
    let o = out.to_str().unwrap();
    for (opt, v) in [
        ("--nccl-algo", long.as_str()),
        ("--plan", long.as_str()),
        ("--sizes", sizes.as_str()),
        ("--dims", long.as_str()),
        ("--reserved-cores", long.as_str()),
        ("--workload", long.as_str()),
    ] {
        let n = format!("({} chars)", v.chars().count());
        let r = refused(&["run", "--out", o, opt, v, "-q"], &[&n]);
        assert!(
            r.stderr.len() < 1200,
            "{opt}: {} bytes of stderr:\n{}",
            r.stderr.len(),
            r.stderr.chars().take(2000).collect::<String>()
        );
    }
    let spec = write_file(
        &dir,
        "spec.toml",
        &format!("{}[submit]\ncores_per_node = \"many\"\n", spec_text()),
    );
    refused(
        &[
            "submit",
            spec.to_str().unwrap(),
            "--scheduler",
            "slurm",
            "--dry-run",
            "--out",
            o,
        ],
        &["submit.cores_per_node", "spec.toml:"],
    );
    let file = write_file(&dir, "afile", "x");
    refused(
        &["links", "--simulate", "4", "--out", file.to_str().unwrap()],
        &["exists and is not a directory"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    for text in ["", "# only a comment\n"] {
        let empty = write_file(&dir, "empty.toml", text);
        let e = empty.to_str().unwrap();
        refused(&["plan", e], &[e, "the spec is empty"]);
        refused(&["sweep", e, "--out", o], &[e, "the spec is empty"]);
    }
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
