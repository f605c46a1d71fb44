//! Issue 33 items 2 and 6, against the real binary under real `mpirun`: a watchdog the dynamic
//! loader cannot block, and what it leaves when it ends a job (the rank it names, results.json,
//! nothing else in `--out`). Every test here failed before the fix: the FIFO and the slow
//! constructor hung the job (or ended it only after rank 1's 15 s), a frozen rank 0 left no
//! results.json, and `.watchdog/` or temporaries were left in `--out`; a job ended during its
//! start-up wrote no results.json.

use crate::common;

use common::{bin, bounded, read_results, tmpdir, Ran};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `mpirun -np 2 scalebench run --out OUT EXTRA...`.
fn mpirun2<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut cl = vec![
        "mpirun",
        "-np",
        "2",
        "--oversubscribe",
        bin(),
        "run",
        "-q",
        "--out",
        out,
        "--time-budget",
        "0.02",
    ];
    cl.extend_from_slice(extra);
    cl
}

/// A matmul through the system BLAS named by SCALEBENCH_BLAS = `lib`, with --op-timeout 3.
fn blas_run(out: &Path, lib: &str) -> (Ran, Duration) {
    let o = out.to_str().unwrap();
    let cl = mpirun2(
        o,
        &[
            "-w",
            "matmul",
            "--dims",
            "64",
            "--gemm",
            "blas",
            "--op-timeout",
            "3",
        ],
    );
    bounded(60, &cl, &[("SCALEBENCH_BLAS", lib)])
}

/// What a watchdog's ending must say about a blocked `dlopen`.
fn assert_loader_diagnosis(r: &Ran, lib: &str, took: Duration) {
    assert_eq!(r.code, 4, "exit {} after {took:?}:\n{}", r.code, r.stderr);
    // --op-timeout 3 + the 1.5 s grace + MPI_Abort; it hung (or took 18 s, or 40 s) before.
    assert!(took < Duration::from_secs(15), "{took:?}\n{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("opens the BLAS library SCALEBENCH_BLAS={lib}")),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--op-timeout 3 s"), "{}", r.stderr);
}

/// A job ended during its start-up still leaves results.json: the launch failed, its planned
/// case not measured (`timeout`, the diagnosis in the message). Before: no results at all.
fn assert_start_up_recorded(r: &Ran, out: &Path) {
    assert!(
        r.stderr.contains(&format!(
            "No case ran: the launch and its planned cases (as timeout) are recorded in {}",
            out.join("results.json").display()
        )),
        "{}",
        r.stderr
    );
    let res = read_results(out);
    assert_eq!(res.launches.len(), 1);
    assert_eq!(res.launches[0].status, "failed");
    assert_eq!(res.cases.len(), 1, "{:?}", res.cases);
    assert_eq!(res.cases[0].status, "timeout");
    let msg = res.cases[0].message.as_deref().unwrap_or_default();
    assert!(
        msg.starts_with("not measured: the watchdog ended the job during the backend's start-up")
            && msg.contains("SCALEBENCH_BLAS"),
        "{msg}"
    );
}

/// SCALEBENCH_BLAS naming a FIFO: `open` in `dlopen` blocks with the loader's lock held. 9 of
/// 14 runs never ended before; repeated here so a race shows.
#[test]
fn a_fifo_as_the_blas_does_not_block_the_watchdog() {
    let dir = tmpdir("wd-fifo");
    let fifo = dir.join("libfifo.so");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let lib = fifo.to_str().unwrap();
    let trials = 5;
    let mut took = Vec::new();
    for t in 0..trials {
        let out = dir.join(format!("out{t}"));
        let (r, d) = blas_run(&out, lib);
        assert_loader_diagnosis(&r, lib, d);
        took.push(d.as_secs_f64());
        assert_start_up_recorded(&r, &out);
        assert_clean(&out);
    }
    eprintln!("FIFO as SCALEBENCH_BLAS: {trials}/{trials} ended with exit 4, in {took:.1?} s");
}

/// A library whose constructor sleeps 40 s (as on a hung network mount): the job ends at
/// --op-timeout, not when the constructor returns.
#[test]
fn a_slow_library_constructor_does_not_block_the_watchdog() {
    let dir = tmpdir("wd-slow-ctor");
    let src = dir.join("slow.c");
    std::fs::write(
        &src,
        "#include <unistd.h>\n__attribute__((constructor)) static void slow(void) { sleep(40); }\n",
    )
    .unwrap();
    let so = dir.join("libslow.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .status()
        .expect("cc (build-essential) is needed to build the test library");
    assert!(built.success());
    let lib = so.to_str().unwrap();
    let out = dir.join("out");
    let (r, d) = blas_run(&out, lib);
    assert_loader_diagnosis(&r, lib, d);
    assert_start_up_recorded(&r, &out);
    eprintln!("slow constructor: exit 4 in {:.1} s", d.as_secs_f64());
    assert_clean(&out);
}

/// Nothing but the results is left in `--out`: no `.watchdog/`, no temporary file. The
/// directory's `.lock` (empty; flock-ed only while a run or sweep holds it, and left in place
/// as every run and sweep leaves it: unlinking a lock file races its next taker) may stay.
fn assert_clean(out: &Path) {
    let Ok(entries) = std::fs::read_dir(out) else {
        return; // the job ended before the run directory was made: nothing left either
    };
    let names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for n in &names {
        assert!(
            n == "results.json" || n == "journal.jsonl" || n == ".lock",
            "{} left in {}: {names:?}",
            n,
            out.display()
        );
    }
}

/// Three trials of one rank stuck before its case (`fault`), the other ranks' watchdogs
/// working: exit 4 within `limit`, the stuck rank named, the case kept as `timeout` with that
/// diagnosis in results.json (and the message saying where), `--out` clean. Returns the times.
fn stuck_rank_trials(tag: &str, fault: &str, rank: u32, limit: Duration) -> Vec<f64> {
    let dir = tmpdir(tag);
    let mut took = Vec::new();
    let named = format!("rank {rank} had not arrived at control step");
    for t in 0..3 {
        let out = dir.join(format!("out{t}"));
        let o = out.to_str().unwrap();
        let cl = mpirun2(
            o,
            &[
                "-w",
                "allreduce",
                "--sizes",
                "8B",
                "--in-place",
                "no",
                "--fault",
                fault,
                "--op-timeout",
                "2",
            ],
        );
        let (r, d) = bounded(60, &cl, &[]);
        assert_eq!(r.code, 4, "{}", r.stderr);
        assert!(d < limit, "{d:?}");
        assert!(r.stderr.contains(&named), "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!(
                "Finished cases are kept in {}",
                out.join("results.json").display()
            )),
            "{}",
            r.stderr
        );
        let res = read_results(&out);
        assert_eq!(res.cases.len(), 1);
        assert_eq!(res.cases[0].status, "timeout");
        let msg = res.cases[0].message.as_deref().unwrap_or_default();
        assert!(msg.contains(&named), "{msg}");
        assert_clean(&out);
        took.push(d.as_secs_f64());
    }
    took
}

/// Rank 0 stuck in a case (its watchdog working): ended by --op-timeout + grace. Before:
/// `.watchdog/` or temporaries were left in 5 of 6 trials.
#[test]
fn rank_0_stuck_leaves_results_and_nothing_else() {
    // 2 s + 1 s grace + MPI_Abort (it was 2 s + 5 s before).
    let took = stuck_rank_trials("wd-rank0", "hang", 0, Duration::from_secs(12));
    eprintln!("rank 0 stuck: 3/3 ended with exit 4 in {took:.1?} s");
}

/// Rank 1 stuck in a case (rank 0 waiting in the case's first collective): rank 0's watchdog
/// names rank 1 within --op-timeout + grace.
#[test]
fn rank_1_stuck_is_named_by_rank_0_within_the_grace() {
    // 2 s + 1 s grace + start-up and MPI_Abort (2.3–2.4 s here); the old fixed 5 s grace took
    // at least 7 s.
    let took = stuck_rank_trials("wd-rank1", "hang_last", 1, Duration::from_millis(6500));
    eprintln!("rank 1 stuck: 3/3 ended with exit 4 in {took:.1?} s");
}

/// Rank 0 stopped entirely (SIGSTOP: its watchdog too), after one finished case: rank 1 takes
/// the lead, names rank 0, and writes results.json from the journal with the finished case and
/// the stuck one. Before: rank 1 waited 15 s, named no one and wrote no results.
#[test]
fn rank_0_frozen_rank_1_names_it_and_keeps_the_finished_cases() {
    let dir = tmpdir("wd-freeze");
    let spec = dir.join("freeze.toml");
    std::fs::write(
        &spec,
        "[axes]\ndevices_per_node = 2\nsizes = \"64\"\nin_place = \"no\"\nfault = [\"none\", \"freeze\"]\n[run]\ntime_budget_s = 0.02\n[launch]\noversubscribe = true\ntimeout_s = 200\nop_timeout_s = 3\n",
    )
    .unwrap();
    let out = dir.join("out");
    let cl = [
        bin(),
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ];
    let (r, d) = bounded(150, &cl, &[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    // 3 s + 2 × 1.5 s for rank 0's answer + MPI_Abort, plus the first case and start-ups.
    assert!(d < Duration::from_secs(60), "{d:?}");
    let res = read_results(&out);
    assert_eq!(res.cases.len(), 2, "{:?}", res.cases);
    let by_fault = |f: Option<&str>| {
        res.cases
            .iter()
            .find(|c| c.params.fault.as_deref() == f)
            .unwrap()
    };
    assert_eq!(by_fault(None).status, "ok");
    let stuck = by_fault(Some("freeze"));
    assert_eq!(stuck.status, "timeout");
    let msg = stuck.message.as_deref().unwrap();
    assert!(msg.contains("no answer from rank 0"), "{msg}");
    let launch_dirs: Vec<_> = std::fs::read_dir(out.join("launches"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(launch_dirs.len(), 1);
    let tail = std::fs::read_to_string(launch_dirs[0].join("stderr.log")).unwrap_or_default();
    let said = format!("{}{tail}", r.stderr);
    assert!(
        said.contains("rank 0 did not answer") && said.contains("so rank 1 ends the job"),
        "{said}"
    );
    for d in &launch_dirs {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            assert!(
                n != ".watchdog" && !n.contains(".tmp-"),
                "{n} left in {}",
                d.display()
            );
        }
    }
}
