//! Issue 13, the hostile-input campaign: each reproduction from the issue, run against the real
//! binary (under real `mpirun` where the fault is an MPI one). Each test failed before its fix:
//! a hang (bounded here by `timeout`), a panic (exit 101), a wrong exit code or a wrong file.

use crate::common;

use common::{bin, no_panic, read_results, tmpdir, write_file as write, Ran};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `timeout LIMIT CMD...` with `env` set (nothing of the test's own launcher identity), so a
/// hang shows as exit 124 instead of a stuck test. The time a test asserts on is the one
/// [`common::bounded`] returns: the command's own, not the wait for the MPI lock (which another
/// module's test may hold for a minute).
fn bounded(limit_s: u32, cmd_line: &[&str], env: &[(&str, &str)]) -> Ran {
    common::bounded(limit_s, cmd_line, env).0
}

/// `timeout LIMIT scalebench ARGS`, nothing added to the environment, and how long it ran.
fn scalebench_timed(limit_s: u32, args: &[&str]) -> (Ran, Duration) {
    let mut cl = vec![bin()];
    cl.extend_from_slice(args);
    common::bounded(limit_s, &cl, &[])
}

/// `timeout LIMIT scalebench ARGS`, nothing added to the environment.
fn scalebench(limit_s: u32, args: &[&str]) -> Ran {
    scalebench_timed(limit_s, args).0
}

/// `timeout LIMIT scalebench sweep SPEC --out OUT EXTRA...`, and how long it ran.
fn sweep_timed(limit_s: u32, spec: &Path, out: &Path, extra: &[&str]) -> (Ran, Duration) {
    let mut a = vec![
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    scalebench_timed(limit_s, &a)
}

/// `timeout LIMIT scalebench sweep SPEC --out OUT EXTRA...`.
fn sweep(limit_s: u32, spec: &Path, out: &Path, extra: &[&str]) -> Ran {
    sweep_timed(limit_s, spec, out, extra).0
}

/// [`scalebench`] refusing bad input: no panic, exit 2.
fn refused(limit_s: u32, args: &[&str]) -> Ran {
    let r = scalebench(limit_s, args);
    no_panic(&r);
    r.assert_code(2);
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

/// `mpirun -np 2 --oversubscribe scalebench run --out OUT EXTRA QUICK...`.
fn mpirun_quick<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut cl = vec![
        "mpirun",
        "-np",
        "2",
        "--oversubscribe",
        bin(),
        "run",
        "--out",
        out,
    ];
    cl.extend_from_slice(extra);
    cl.extend_from_slice(QUICK);
    cl
}

/// Item 1: `mpirun` inside a Slurm allocation inherits SLURM_PROCID=0 on every rank; the
/// ranks disagreed on the world check and hung with no output.
#[test]
fn mpirun_inside_a_slurm_allocation_runs() {
    let dir = tmpdir("hostile-salloc");
    let out = dir.join("out");
    let cl = mpirun_quick(out.to_str().unwrap(), &[]);
    let r = bounded(120, &cl, &[("SLURM_NTASKS", "2"), ("SLURM_PROCID", "0")]);
    r.assert_code(0);
    let res = read_results(&out);
    assert_eq!(res.cases.len(), 1);
    assert_eq!(res.cases[0].status, "ok");
}

/// Item 1 and "every per-rank decision is agreed": one rank fails the world check alone; all
/// ranks stop with exit 2 and rank 0 prints that rank's sentence.
#[test]
fn a_rank_failing_the_world_check_alone_is_reported_by_rank_0() {
    let dir = tmpdir("hostile-world");
    let out = dir.join("out");
    let mut app = vec![bin(), "run", "--out", out.to_str().unwrap()];
    app.extend_from_slice(QUICK);
    // MPMD: rank 1 loses OpenMPI's variables and claims (as Slurm) a 3-task job.
    let mut cl = vec!["mpirun", "--oversubscribe", "-np", "1"];
    cl.extend_from_slice(&app);
    cl.extend_from_slice(&[
        ":",
        "-np",
        "1",
        "env",
        "-u",
        "OMPI_COMM_WORLD_RANK",
        "-u",
        "OMPI_COMM_WORLD_SIZE",
        "SLURM_PROCID=1",
        "SLURM_NTASKS=3",
    ]);
    cl.extend_from_slice(&app);
    let (r, took) = common::bounded(60, &cl, &[]);
    no_panic(&r);
    r.assert_code(2);
    assert!(took < Duration::from_secs(50));
    assert_eq!(
        r.stderr
            .matches("rank 1: the launcher (slurm) started 3")
            .count(),
        1,
        "{}",
        r.stderr
    );
    assert!(!out.join("results.json").exists());
}

/// The watchdog: rank 0 never arrives at the case's first collective; the job ends with exit
/// 4 within the limit, names rank 0, and results.json keeps the case as `timeout`.
#[test]
fn the_watchdog_names_the_rank_that_had_not_arrived() {
    let dir = tmpdir("hostile-watchdog");
    let out = dir.join("out");
    let cl = mpirun_quick(
        out.to_str().unwrap(),
        &["--fault", "hang", "--op-timeout", "2"],
    );
    let (r, took) = common::bounded(90, &cl, &[]);
    r.assert_code(4);
    assert!(took < Duration::from_secs(60));
    assert!(
        r.stderr.contains("rank 0 had not arrived at control step"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--op-timeout 2 s"), "{}", r.stderr);
    let res = read_results(&out);
    assert_eq!(res.cases.len(), 1);
    assert_eq!(res.cases[0].status, "timeout");
    assert!(res.cases[0]
        .message
        .as_deref()
        .unwrap()
        .contains("had not arrived"));
    assert_eq!(res.launches[0].status, "failed");
    assert!(
        !out.join(".watchdog").exists(),
        "state files are cleaned up"
    );
}

/// The watchdog in a sweep (`[launch] op_timeout_s`): the finished case is kept, the stuck one
/// is `timeout`, and the sweep goes on long before the launch's own time limit.
#[test]
fn a_sweep_keeps_what_finished_before_the_watchdog_fired() {
    let dir = tmpdir("hostile-sweep-watchdog");
    let spec = write(
        &dir,
        "wd.toml",
        "[axes]\ndevices_per_node = 2\nsizes = \"64\"\nin_place = \"no\"\nfault = [\"none\", \"hang\"]\n[run]\ntime_budget_s = 0.02\n[launch]\noversubscribe = true\ntimeout_s = 200\nop_timeout_s = 3\n",
    );
    let out = dir.join("out");
    let (r, took) = sweep_timed(150, &spec, &out, &["-q"]);
    r.assert_code(3);
    assert!(took < Duration::from_secs(90));
    let res = read_results(&out);
    assert_eq!(res.cases.len(), 2);
    let by_fault = |f: Option<&str>| {
        res.cases
            .iter()
            .find(|c| c.params.fault.as_deref() == f)
            .unwrap()
    };
    assert_eq!(by_fault(None).status, "ok");
    let stuck = by_fault(Some("hang"));
    assert_eq!(stuck.status, "timeout");
    assert!(
        stuck
            .message
            .as_deref()
            .unwrap()
            .contains("rank 0 had not arrived"),
        "{:?}",
        stuck.message
    );
}

fn pids_with(needle: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(needle)
            && !text.starts_with("mpirun")
            && !text.starts_with("sh ")
            && text.contains(" run ")
        {
            v.push(pid);
        }
    }
    v
}

/// Item 1's last line: when the launcher dies, its ranks exit instead of spinning as orphans.
#[test]
fn ranks_exit_when_their_launcher_is_killed() {
    let _g = common::mpi_lock(); // a launch of its own: no helper that takes the lock
    let dir = tmpdir("hostile-orphan");
    let out = dir.join("out");
    let mut child = Command::new("mpirun")
        .args(["-np", "2", "--oversubscribe", bin(), "run", "--out"])
        .arg(&out)
        .args(["--fault", "hang", "--op-timeout", "600"])
        .args(QUICK)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let needle = out.to_str().unwrap().to_string();
    // Wait until the case has started (rank 0 journaled the launch) and both ranks exist.
    wait_until_started("the job did not start", || {
        out.join("journal.jsonl").exists() && pids_with(&needle).len() >= 2
    });
    let ranks = pids_with(&needle);
    child.kill().unwrap(); // SIGKILL: mpirun cannot tell its ranks
    child.wait().unwrap();
    assert_exit_within_15_s(&ranks, "ranks", "still run 15 s after their launcher died");
}

/// Waits up to 60 s for `started`, failing with `what`.
fn wait_until_started(what: &str, mut started: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !started() {
        assert!(t0.elapsed() < Duration::from_secs(60), "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `ranks` must be gone (or zombies) within 15 s; otherwise they are killed and the test fails
/// with "WHO RANKS PREDICATE".
fn assert_exit_within_15_s(ranks: &[u32], who: &str, predicate: &str) {
    let t1 = Instant::now();
    while ranks
        .iter()
        .any(|p| Path::new(&format!("/proc/{p}")).exists() && !zombie(*p))
    {
        if t1.elapsed() > Duration::from_secs(15) {
            for p in ranks {
                // SAFETY: kill passes no pointers. Each pid is a positive /proc entry whose
                // command line holds this test's own output directory: a rank it started.
                unsafe { libc::kill(*p as i32, libc::SIGKILL) };
            }
            panic!("{who} {ranks:?} {predicate}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The same for a rank whose launcher does not take its ranks down itself (OpenMPI's ranks
/// notice a dead `mpirun`; a rank under a dead `srun` step or another launcher may not): a
/// shell stands in for the launcher's process on the node (Slurm variables say there is one);
/// SIGKILL it, and the rank, stuck in a case, must exit on its own.
#[test]
fn a_rank_exits_when_its_launcher_process_dies() {
    let _g = common::mpi_lock(); // a launch of its own: no helper that takes the lock
    let dir = tmpdir("hostile-orphan-step");
    let out = dir.join("out");
    let script = format!(
        "{} run --out {} --fault hang --op-timeout 600 {} & wait",
        bin(),
        out.display(),
        QUICK.join(" ")
    );
    let mut shell = Command::new("sh")
        .args(["-c", &script])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("SLURM_PROCID", "0")
        .env("SLURM_NTASKS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let needle = out.to_str().unwrap().to_string();
    wait_until_started("the rank did not start", || {
        out.join("journal.jsonl").exists() && !pids_with(&needle).is_empty()
    });
    let ranks: Vec<u32> = pids_with(&needle)
        .into_iter()
        .filter(|p| *p != shell.id())
        .collect();
    shell.kill().unwrap();
    shell.wait().unwrap();
    assert_exit_within_15_s(&ranks, "rank", "still runs 15 s after its launcher died");
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

fn quick_spec(dir: &Path, extra: &str) -> PathBuf {
    write(
        dir,
        "s.toml",
        &format!("name = \"q\"\n[axes]\nsizes = \"64\"\nin_place = \"no\"\n{extra}"),
    )
}

/// Item 2: timeouts that are not a positive finite number of seconds panicked (exit 101), and
/// a huge one was truncated into `#SBATCH --time`.
#[test]
fn hostile_timeouts_are_bad_input() {
    let dir = tmpdir("hostile-timeout");
    let spec = quick_spec(&dir, "");
    for v in ["-1", "nan", "inf", "1e308", "0"] {
        let r = refused(
            30,
            &[
                "sweep",
                spec.to_str().unwrap(),
                "--dry-run",
                "--launch-timeout",
                v,
            ],
        );
        assert!(r.stderr.contains("--launch-timeout"), "{v}: {}", r.stderr);
    }
    let spec = quick_spec(&dir, "[launch]\ntimeout_s = 1e308\n");
    for cmd in [
        vec!["sweep", spec.to_str().unwrap(), "--dry-run"],
        vec!["plan", spec.to_str().unwrap()],
        vec![
            "submit",
            spec.to_str().unwrap(),
            "--dry-run",
            "--profile",
            "local-slurm",
        ],
    ] {
        let r = refused(30, &cmd);
        assert!(
            r.stderr.contains("s.toml:") && r.stderr.contains("launch.timeout_s"),
            "{cmd:?}: {}",
            r.stderr
        );
        assert!(!r.stdout.contains("--time=1145324618"), "{}", r.stdout);
    }
    for v in ["-1", "nan", "1e308"] {
        let r = refused(30, &["run", "--op-timeout", v, "-q"]);
        assert!(r.stderr.contains("--op-timeout"), "{}", r.stderr);
    }
}

/// Items 4 and 5: shapes that overflowed (65536 × 65536 = "0 ranks") or were unbounded, and a
/// spec of 245M combinations that grew `plan` to 3 GB: refused at once, with the limit.
#[test]
fn limits_are_checked_when_the_input_is_read() {
    let dir = tmpdir("hostile-limits");
    for (extra, needle) in [
        ("nodes = 65536\ndevices_per_node = 65536\n", "limit of 1024"),
        ("nodes = 65536\ndevices_per_node = 1024\n", "limit of 1048576"),
        ("devices_per_node = 100000\n", "limit of 1024"),
        ("threads_per_device = 100000\n", "limit of 1024"),
        (
            "nodes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nops = [\"sum\", \"prod\", \"min\", \"max\", \"avg\"]\ndtypes = [\"f32\", \"f64\", \"i32\"]\ntiming = [\"pipelined\", \"isolated\"]\n[[zip]]\nworkload = [\"allreduce\", \"reduce\"]\nroots = [0, 0]\n",
            "combinations",
        ),
    ] {
        // The last spec multiplies 10 000 sizes by 600 other combinations.
        let spec = quick_spec(&dir, extra);
        if extra.contains("ops") {
            let text = std::fs::read_to_string(&spec).unwrap();
            std::fs::write(&spec, text.replace("\"64\"", "\"1B:10000B:+1B\"")).unwrap();
        }
        let (r, took) = scalebench_timed(30, &["plan", spec.to_str().unwrap()]);
        no_panic(&r);
        r.assert_code(2);
        assert!(r.stderr.contains(needle), "{extra}: {}", r.stderr);
        assert!(r.stderr.contains("README.md"), "{}", r.stderr);
        assert!(took < Duration::from_secs(10));
    }
    for args in [
        vec!["--topology", "hybrid", "--devices-per-node", "100000"],
        vec!["--threads-per-device", "100000"],
        vec!["--nodes", "70000"],
        vec!["--sizes", "2TiB"],
    ] {
        let mut cl = vec!["run"];
        cl.extend_from_slice(&args);
        let r = refused(30, &cl);
        assert!(r.stderr.contains("limit"), "{args:?}: {}", r.stderr);
    }
}

/// Item 6: `--resume` with a changed spec was accepted, mixing two studies in one file.
#[test]
fn resume_refuses_a_changed_spec() {
    let dir = tmpdir("hostile-resume");
    let spec = quick_spec(&dir, "[run]\ntime_budget_s = 0.02\n");
    let out = dir.join("out");
    sweep(120, &spec, &out, &["-q"]).assert_code(0);
    let before = std::fs::read(out.join("results.json")).unwrap();
    let changed = write(
        &dir,
        "s.toml",
        "name = \"q\"\n[axes]\nsizes = [\"64\", \"128\"]\nin_place = \"no\"\n[run]\ntime_budget_s = 0.02\n",
    );
    let r = sweep(60, &changed, &out, &["--resume"]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("the spec changed") && r.stderr.contains("1 added"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), before);
    // The run's own copy resumes (nothing to do).
    sweep(60, &out.join("spec.toml"), &out, &["--resume", "-q"]).assert_code(0);
}

/// Item 8: a dry run printed `$(...)` from mpirun_args unquoted; pasted, it ran.
#[test]
fn dry_run_commands_are_shell_quoted() {
    let dir = tmpdir("hostile-quote");
    let pwned = dir.join("PWNED");
    let spec = quick_spec(
        &dir,
        &format!(
            "[launch]\nmpirun_args = [\"$(touch {})\", \"a b\"]\n",
            pwned.display()
        ),
    );
    let r = scalebench(30, &["sweep", spec.to_str().unwrap(), "--dry-run"]);
    r.assert_code(0);
    let line = r
        .stdout
        .lines()
        .find(|l| l.contains("touch"))
        .expect("the launch command");
    assert!(
        line.contains(&format!("'$(touch {})'", pwned.display())),
        "{line}"
    );
    // Pasting the printed line into a shell passes the value through as text.
    let sh = Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\n' {line}"))
        .output()
        .unwrap();
    assert!(sh.status.success());
    assert!(
        !pwned.exists(),
        "the printed command ran what the spec held"
    );
    assert!(String::from_utf8_lossy(&sh.stdout)
        .lines()
        .any(|l| l == "a b"));
}

/// Item 10: control characters in a spec's name were echoed raw by `plan`.
#[test]
fn control_characters_in_a_name_are_refused() {
    let dir = tmpdir("hostile-ctrl");
    let spec = write(&dir, "s.toml", "name = \"x\\u001b]0;pwned\\u0007y\"\n");
    let r = scalebench(30, &["plan", spec.to_str().unwrap()]);
    r.assert_code(2);
    assert!(r.stderr.contains("control characters"), "{}", r.stderr);
    assert!(
        !r.stderr.contains('\u{1b}') && !r.stdout.contains('\u{1b}'),
        "raw ESC echoed"
    );
}

/// Item 12: empty and exclude-everything specs said nothing; `run -o DIR` was an op; `submit
/// --help` promised files a dry run never writes; a FIFO made compare and report wait forever;
/// invalid UTF-8 was exit 4 in report; `--out` naming a file was exit 4.
#[test]
fn cli_and_file_edge_cases() {
    let dir = tmpdir("hostile-cli");
    let empty = write(&dir, "empty.toml", "");
    // A 0-byte spec is a mistake (issue 44: it used to run the default study): refused with
    // its place and what to give.
    let r = scalebench(30, &["plan", empty.to_str().unwrap()]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("empty.toml:1:1: the spec is empty") && r.stderr.contains("[axes]"),
        "{}",
        r.stderr
    );
    let none = write(
        &dir,
        "none.toml",
        "[axes]\nsizes = \"64\"\n[[exclude]]\nworkload = \"allreduce\"\n",
    );
    let r = scalebench(30, &["plan", none.to_str().unwrap()]);
    r.assert_code(2);
    assert!(r.stderr.contains("nothing to run"), "{}", r.stderr);

    let r = scalebench(30, &["run", "-o", dir.to_str().unwrap()]);
    r.assert_code(2);
    assert!(r.stderr.contains("--op"), "{}", r.stderr);

    let r = scalebench(30, &["submit", "--help"]);
    r.assert_code(0);
    assert!(
        r.stdout.contains("without writing or submitting anything"),
        "{}",
        r.stdout
    );

    let fifo = dir.join("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated CString that outlives the call; mkfifo only reads
    // the path. (std's mkfifo is still unstable.)
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let bad = dir.join("bad.json");
    std::fs::write(&bad, b"{\"format_version\": \xff}").unwrap();
    let rep = dir.join("rep");
    for input in [&fifo, &bad] {
        for cmd in [
            vec!["compare", input.to_str().unwrap(), input.to_str().unwrap()],
            vec![
                "report",
                input.to_str().unwrap(),
                "--out",
                rep.to_str().unwrap(),
            ],
        ] {
            let r = refused(20, &cmd);
            assert!(
                r.stderr.contains("not a regular file") || r.stderr.contains("not UTF-8"),
                "{cmd:?}: {}",
                r.stderr
            );
        }
    }
    for v in ["nan", "-1", "inf"] {
        let r = refused(
            20,
            &["status", dir.to_str().unwrap(), "--wait", "--timeout", v],
        );
        assert!(r.stderr.contains("--timeout"), "{v}: {}", r.stderr);
    }
    let file = write(&dir, "afile", "x");
    let spec = quick_spec(&dir, "");
    let r = sweep(30, &spec, &file, &[]);
    r.assert_code(2);
    assert!(r.stderr.contains("not a directory"), "{}", r.stderr);
    let r = scalebench(
        60,
        &[
            "run",
            "--out",
            file.to_str().unwrap(),
            "--sizes",
            "8B",
            "-q",
        ],
    );
    r.assert_code(2);
    assert!(r.stderr.contains("not a directory"), "{}", r.stderr);
}

/// Item 11: a torn journal line makes its case count as missing (so `--resume` runs it again),
/// and the warning the journal reader promises reaches the user.
#[test]
fn a_torn_journal_line_is_run_again_with_a_warning() {
    let dir = tmpdir("hostile-torn");
    let spec = write(
        &dir,
        "t.toml",
        "[axes]\nsizes = [\"64\", \"128\"]\nin_place = \"no\"\n[run]\ntime_budget_s = 0.02\n",
    );
    let out = dir.join("out");
    sweep(120, &spec, &out, &["-q"]).assert_code(0);
    let attempt = std::fs::read_dir(out.join("launches"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let journal = attempt.join("journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    // Item 7: the merged file holds every journaled number bit for bit (serde_json parses
    // floats exactly with `float_roundtrip`; without it about one sample in ten moved 1 ULP).
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let mut compared = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["type"] != "case" {
            continue;
        }
        let m = merged["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == v["id"])
            .unwrap();
        for key in ["timing", "started_unix_s", "finished_unix_s", "algbw_gbps"] {
            assert_eq!(m[key], v[key], "{key} of case {} changed", v["id"]);
        }
        compared += 1;
    }
    assert_eq!(compared, 2);
    // Keep everything up to the last case line, and half of that line (a writer killed mid-line).
    let at = text.rfind("{\"type\":\"case\"").unwrap();
    let line_end = at + text[at..].find('\n').unwrap();
    std::fs::write(&journal, &text[..at + (line_end - at) / 2]).unwrap();
    std::fs::remove_file(attempt.join("outcome.json")).unwrap();
    let r = sweep(120, &spec, &out, &["--resume"]);
    r.assert_code(0);
    assert!(
        r.stderr.contains("skipped an unreadable journal line") && r.stderr.contains("run again"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("1 already done, 1 to run"),
        "{}",
        r.stderr
    );
    let res = read_results(&out);
    assert_eq!(res.cases.len(), 2);
    assert!(res.cases.iter().all(|c| c.status == "ok"));
    assert!(
        res.launches.iter().all(|l| l.status == "ok"),
        "{:?}",
        res.launches.iter().map(|l| &l.status).collect::<Vec<_>>()
    );
}
