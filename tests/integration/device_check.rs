//! `ci/device-check.sh`, the one script a lent GPU machine runs, rehearsed where there is no
//! GPU: every step says it was skipped and why, the summary and the tarball are written, and
//! the script exits 0 (a GPU call cut off must still return what ran). Its tables
//! (`ci/device-summary.py`) are checked on files shaped as the two tools write them.

use crate::common;

use common::tmpdir;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn check(out: &Path, extra: &[&str]) -> common::Ran {
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("ci/device-check.sh"))
        .arg(out)
        .args(extra);
    cmd.env("SCALEBENCH_BIN", common::bin());
    common::Ran::from(cmd.output().expect("bash runs"))
}

const STEPS: [&str; 6] = ["facts", "gemm", "small", "ceilings", "ddp", "refusals"];

#[test]
fn a_dry_run_skips_every_step_with_its_reason_and_still_writes_summary_and_tarball() {
    let dir = tmpdir("device-dry");
    let out = dir.join("check");
    let r = check(&out, &["--dry-run"]);
    r.assert_code(0);
    let tsv = std::fs::read_to_string(out.join("summary.tsv")).expect("summary.tsv written");
    let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(names, STEPS, "every step in value order: {tsv}");
    for row in &rows {
        assert_eq!(row[1], "skipped", "{row:?}");
        assert!(row[3].contains("dry run"), "the reason is given: {row:?}");
    }
    let md = std::fs::read_to_string(out.join("summary.md")).expect("summary.md written");
    assert!(md.contains("DRY RUN"), "{md}");
    assert!(md.contains("| small | skipped |"), "{md}");
    let tgz = dir.join("check.tgz");
    let list = Command::new("tar")
        .arg("tzf")
        .arg(&tgz)
        .output()
        .expect("tar runs");
    assert!(list.status.success(), "the tarball is whole: {tgz:?}");
    let list = String::from_utf8_lossy(&list.stdout);
    for f in [
        "check/summary.md",
        "check/summary.tsv",
        "check/refusals.log",
    ] {
        assert!(list.lines().any(|l| l == f), "{f} in the tarball: {list}");
    }
    assert!(
        !dir.join("check.tgz.part").exists(),
        "no half-written tarball left"
    );
}

#[test]
fn without_a_driver_the_reason_is_the_missing_driver_and_a_bad_option_is_refused() {
    if Path::new("/usr/bin/nvidia-smi").exists() {
        eprintln!("skipped: this machine has an NVIDIA driver, so the check would run its steps");
        return;
    }
    let dir = tmpdir("device-nodriver");
    // A PATH without nvidia-smi: what CI and development machines are.
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("ci/device-check.sh"))
        .arg(dir.join("check"))
        .env("SCALEBENCH_BIN", common::bin())
        .env("PATH", "/usr/bin:/bin");
    let r = common::Ran::from(cmd.output().expect("bash runs"));
    r.assert_code(0);
    let tsv = std::fs::read_to_string(dir.join("check/summary.tsv")).unwrap();
    assert_eq!(tsv.lines().count(), STEPS.len(), "{tsv}");
    assert!(
        tsv.lines().all(|l| l.contains("skipped")
            && (l.contains("no NVIDIA driver") || l.contains("lists no GPU"))),
        "{tsv}"
    );
    let bad = check(&dir.join("other"), &["--fast"]);
    bad.assert_code(2);
    assert!(
        bad.stderr.contains("unknown option '--fast'"),
        "{}",
        bad.stderr
    );
}

fn results_json(cases: &[(&str, u64, f64)]) -> String {
    let cases: Vec<String> = cases
        .iter()
        .map(|(mode, bytes, us)| {
            format!(
                r#"{{"status":"ok","bytes":{bytes},"params":{{"workload":"allreduce","timing":"{mode}"}},"timing":{{"time_s":{}}}}}"#,
                us * 1e-6
            )
        })
        .collect();
    format!(r#"{{"cases":[{}]}}"#, cases.join(","))
}

fn nccl_tests_table(rows: &[(u64, f64)]) -> String {
    let mut t = String::from("# nccl-tests version 2.19.6\n#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n");
    for (bytes, us) in rows {
        t += &format!(
            "{bytes:>12} {:>13}     float     sum      -1 {us:>8.2}    0.00    0.00    N/A     {us:>4.2}    0.00    0.00    N/A\n",
            bytes / 4
        );
    }
    t
}

#[test]
fn the_small_message_table_claims_a_difference_only_beyond_both_spreads() {
    let dir = tmpdir("device-summary");
    // 8 B: the tools overlap (5.0-5.4 against 5.2-5.6 us); 1 KiB: they are apart (5.0-5.2
    // against 7.0-7.4 us); isolated runs only on scalebench's side.
    let sb = [(5.0, 5.0), (5.4, 5.2), (5.2, 5.1)];
    let nt = [(5.6, 7.4), (5.2, 7.0), (5.3, 7.2)];
    for (r, ((a8, a1k), (b8, b1k))) in sb.iter().zip(nt.iter()).enumerate() {
        let d = dir.join(format!("small-sb-{}", r + 1));
        std::fs::create_dir_all(&d).unwrap();
        let cases = [
            ("pipelined", 8, *a8),
            ("pipelined", 1024, *a1k),
            ("isolated", 8, 9.0),
        ];
        std::fs::write(d.join("results.json"), results_json(&cases)).unwrap();
        let t = nccl_tests_table(&[(8, *b8), (1024, *b1k)]);
        std::fs::write(dir.join(format!("small-nt-pipelined-{}.txt", r + 1)), t).unwrap();
    }
    let o = Command::new("python3")
        .arg(repo().join("ci/device-summary.py"))
        .arg("small")
        .arg(&dir)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let row = |mode: &str, bytes: &str| {
        text.lines()
            .find(|l| l.split_whitespace().take(2).eq([mode, bytes]))
            .unwrap_or_else(|| panic!("no {mode} {bytes} row: {text}"))
            .to_string()
    };
    assert!(row("pipelined", "8").ends_with("within spread"), "{text}");
    let apart = row("pipelined", "1024");
    assert!(
        apart.contains("0.71x (spreads apart)"),
        "5.1 / 7.2 us: {apart}"
    );
    let isolated = row("isolated", "8");
    assert!(
        isolated.contains("not run") && isolated.ends_with('-'),
        "{isolated}"
    );
}
