//! `scalebench compare` end to end: synthetic runs with known truth through the real binary,
//! the false-alarm rate of the tester over 1,000 null comparisons, a real slowdown caught
//! under real mpirun, and bad input refused with exit 2.

use crate::common;

use common::fixture::{golden, simple, synthetic, timing_noise, Rng};
use common::{bin, mpirun, mpirun_with, s as p, tmpdir, Ran};
use scalebench::compare::stats::Correction;
use scalebench::compare::{compare, compare_runs, Dropped, FailOn, Pairing, Settings, Verdict};
use scalebench::results::schema::{CaseStatus, ResultsFile};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `f` as `dir/name`. Every synthetic file starts from the golden run and would share
/// its run id, which `compare` refuses as "the same run on both sides": each file written
/// here gets a run id of its own (from its path) unless the test set one.
fn write(dir: &Path, name: &str, f: &ResultsFile) -> PathBuf {
    let mut f = f.clone();
    if f.run.run_id == golden().run.run_id {
        f.run.run_id = format!("{}", dir.join(name).display());
    }
    common::fixture::write(dir, name, &f)
}

/// `scalebench compare ARGS` (no MPI involved). One run a side is refused as a gate (exit
/// 2, tested in `verdicts` and `noise`); the tests here of the batch statistics behind it
/// give `--allow-one-run` when they name one run a side.
fn run_compare(args: &[&str]) -> Ran {
    let one_a_side = !args.contains(&"--")
        && args.iter().filter(|a| Path::new(a).exists()).count() == 2
        && !args.iter().any(|a| a.starts_with("--baseline-history"));
    let o = Command::new(bin())
        .arg("compare")
        .args(args)
        .args(if one_a_side {
            &["--allow-one-run"][..]
        } else {
            &[]
        })
        .output()
        .expect("start scalebench");
    Ran::raw(o)
}

/// The JSON report of comparing two files.
fn json_report(base: &Path, cand: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec![p(base), p(cand), "--format", "json"];
    args.extend_from_slice(extra);
    let r = run_compare(&args);
    let v: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", r.stdout, r.stderr));
    (r.code, v)
}

fn verdict_of<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("case {id} not in the report"))
}

// ---- synthetic runs with known truth ----

#[test]
fn plus_20_percent_on_one_case_regresses_with_exit_1() {
    let dir = tmpdir("cmp-plus20");
    let base = simple(8, 1, &|_| 1.0);
    let cand = simple(8, 2, &|k| if k == 3 { 1.2 } else { 1.0 });
    let (b, c) = (write(&dir, "b.json", &base), write(&dir, "c.json", &cand));
    let text = run_compare(&[p(&b), p(&c)]);
    text.assert_code(1);
    let id = &base.cases[3].id;
    // the regression is listed in its own section, before the thresholds
    let section = text
        .stdout
        .split("Regressions (worst first):")
        .nth(1)
        .unwrap();
    assert!(section.contains(id.as_str()), "{}", text.stdout);
    assert!(
        text.stdout.contains("REGRESSION: 1 regressed"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("Holm-corrected over 8 compared cases"));
    assert!(text.stdout.contains("inside ±10%"), "{}", text.stdout);
    let (code, v) = json_report(&b, &c, &[]);
    assert_eq!(code, 1);
    assert_eq!(v["summary"]["counts"]["regressed"], 1);
    let case = verdict_of(&v, id);
    assert_eq!(case["verdict"], "regressed");
    // case 3 is an allgather: compared by busbw, which drops to 1/1.2
    let s = &case["stats"];
    assert_eq!(s["metric"], "busbw");
    let change = s["change"].as_f64().unwrap();
    assert!((change - (1.0 / 1.2 - 1.0)).abs() < 0.03, "{change}");
    assert!(s["ci_high"].as_f64().unwrap() < -0.02);
    assert_eq!(v["cases"][0]["id"], id.as_str(), "worst first");
}

#[test]
fn half_a_percent_is_within_noise_with_exit_0() {
    let dir = tmpdir("cmp-half");
    // quiet samples (0.3 %) so that a 0.5 % shift is significant: the band must absorb it
    let mk = |seed, scale: f64| {
        let mut rng = Rng(seed);
        synthetic(
            6,
            100,
            &mut rng,
            &mut |r| timing_noise(r, 0.003, 0.0),
            &|_| scale,
        )
    };
    let (b, c) = (
        write(&dir, "b.json", &mk(3, 1.0)),
        write(&dir, "c.json", &mk(4, 1.005)),
    );
    let (code, v) = json_report(&b, &c, &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["summary"]["counts"]["within_noise"], 6, "{v:#}");
    for case in v["cases"].as_array().unwrap() {
        let s = &case["stats"];
        let ch = s["change"].as_f64().unwrap();
        let (lo, hi) = (
            s["ci_low"].as_f64().unwrap(),
            s["ci_high"].as_f64().unwrap(),
        );
        // the interval excludes 0 but stays inside ±2 %
        assert!(lo <= ch && ch <= hi && lo > -0.02 && hi < 0.02, "{case:#}");
        assert!(hi < 0.0 || lo > 0.0, "{case:#}");
    }
    // with a band of 0 the same shift is a regression: the band is what kept it quiet
    let (code, v) = json_report(&b, &c, &["--noise", "0"]);
    assert_eq!(code, 1);
    assert_eq!(v["summary"]["counts"]["regressed"], 6);
}

/// Two runs that happen to measure the same numbers are no change; the same run on both
/// sides (the same file, a copy, or the same run id) is refused: a gate comparing a run with
/// itself stays green whatever the candidate does.
#[test]
fn identical_numbers_report_no_change_and_the_same_run_is_refused() {
    let dir = tmpdir("cmp-same");
    let a = simple(6, 5, &|_| 1.0);
    let f = write(&dir, "r.json", &a);
    let mut other = a.clone();
    other.run.run_id = "another-run".into();
    let g = write(&dir, "g.json", &other);
    // the same numbers under another run id are one run (issue 46: edited copies passed as
    // independent runs): refused, said why
    refused(
        &[p(&f), p(&g)],
        &["identical measurements", "always passes"],
    );
    // compare R R, compare R copy-of-R, and two files of one run id: exit 2, said why
    let copy = dir.join("copy.json");
    std::fs::copy(&f, &copy).unwrap();
    let mut same_id = simple(6, 6, &|_| 1.3);
    same_id.run.run_id = a_run_id(&f);
    let s = write(&dir, "same-id.json", &same_id);
    for (x, why) in [
        (&f, "the same file"),
        (&copy, "the same run"),
        (&s, "the same run"),
    ] {
        refused(&[p(&f), p(x)], &[why, "always passes", "r.json"]);
    }
    // a byte-identical copy under another run id cannot happen by accident; a copy is caught
    // by its content even when the ids were not compared (here: the same directory of runs
    // on both sides)
    let runs = dir.join("runs");
    for i in 0..3 {
        let d = runs.join(format!("{i}"));
        std::fs::create_dir_all(&d).unwrap();
        write(&d, "results.json", &simple(4, 70 + i, &|_| 1.0));
    }
    let r = run_compare(&[p(&runs), "--", p(&runs)]);
    r.assert_code(2);
    assert!(r.stderr.contains("the same file"), "{}", r.stderr);
    // one run twice on a side fakes a repetition
    let (r0, r1, r2) = (runs.join("0"), runs.join("1"), runs.join("2"));
    let r = run_compare(&[p(&r0), p(&r0), "--", p(&r1), p(&r2)]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("baseline side") && r.stderr.contains("counted twice"),
        "{}",
        r.stderr
    );
    // the golden file (format version 1, as written by a real run) against itself
    let g = Path::new("tests/golden/results-v1.json");
    refused(&[p(g), p(g)], &["the same file"]);
}

/// Issue 45 item 5: the report's figure (a mean) can move opposite to the medians compared
/// when a few batches are far off. The candidate's batches are 10 % faster but two in 20 are
/// 8× slow: its medians improve while the mean over its batches worsens. The row says why
/// ("opposite to the medians") and the JSON marks it; rows that agree in direction carry no
/// such note.
#[test]
fn the_reports_figure_against_the_medians_says_why() {
    let dir = tmpdir("cmp-headline-dir");
    let mut rng = Rng(45);
    let base = synthetic(
        4,
        20,
        &mut rng,
        &mut |r| timing_noise(r, 0.01, 0.0),
        &|_| 1.0,
    );
    let mut i = 0;
    // cases 0 and 1: slow outliers; cases 2 and 3: uniformly 10 % faster
    let mut outlying = |r: &mut Rng| {
        i += 1;
        let slow = i <= 40 && i % 10 == 0;
        0.9 * timing_noise(r, 0.01, 0.0) * if slow { 8.0 } else { 1.0 }
    };
    let cand = synthetic(4, 20, &mut rng, &mut outlying, &|_| 1.0);
    let (b, c) = (write(&dir, "b.json", &base), write(&dir, "c.json", &cand));
    let (_, v) = json_report(&b, &c, &["--allow-low-power", "--metric", "time"]);
    for (k, opposite) in [(0, true), (1, true), (2, false), (3, false)] {
        let s = &verdict_of(&v, &base.cases[k].id)["stats"];
        let (mb, mc) = (
            s["baseline_median"].as_f64(),
            s["candidate_median"].as_f64(),
        );
        let (hb, hc) = (
            s["baseline_headline"].as_f64().unwrap(),
            s["candidate_headline"].as_f64().unwrap(),
        );
        println!("case {k}: medians {mb:?} -> {mc:?}, report's figure {hb:.3e} -> {hc:.3e}");
        assert_eq!(
            s["headline_opposite_to_medians"], opposite,
            "case {k}: {s:#}"
        );
        // the medians improve everywhere; the mean worsens only where the outliers are
        assert!(s["change"].as_f64().unwrap() < -0.05, "case {k}: {s:#}");
        assert_eq!(hc > hb, opposite, "case {k}: {hb} -> {hc}");
    }
    let text = run_compare(&[
        p(&b),
        p(&c),
        "--allow-low-power",
        "--metric",
        "time",
        "--all",
    ])
    .stdout;
    for (k, opposite) in [(0, true), (2, false)] {
        let row = text
            .lines()
            .find(|l| l.contains(&base.cases[k].id))
            .unwrap_or_else(|| panic!("no row for case {k}: {text}"));
        assert_eq!(row.contains("opposite to the medians"), opposite, "{row}");
    }
}

fn a_run_id(path: &Path) -> String {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["run"]["run_id"].as_str().unwrap().to_string()
}

#[test]
fn bandwidth_drop_regresses_and_direction_follows_the_metric() {
    let dir = tmpdir("cmp-bw");
    // case 0 (allreduce) 25 % slower → busbw −20 %; case 1 (allreduce) 25 % faster;
    // case 4 (matmul) 40 % slower → GFLOP/s −29 %
    let scale = |k: usize| match k {
        0 => 1.25,
        1 => 0.8,
        4 => 1.4,
        _ => 1.0,
    };
    let base = simple(6, 7, &|_| 1.0);
    let (b, c) = (
        write(&dir, "b.json", &base),
        write(&dir, "c.json", &simple(6, 8, &scale)),
    );
    let (code, v) = json_report(&b, &c, &[]);
    assert_eq!(code, 1);
    let bw = &verdict_of(&v, &base.cases[0].id)["stats"];
    assert_eq!(verdict_of(&v, &base.cases[0].id)["verdict"], "regressed");
    assert_eq!(
        (bw["metric"].as_str(), bw["higher_is_better"].as_bool()),
        (Some("busbw"), Some(true))
    );
    assert!(bw["change"].as_f64().unwrap() < -0.15);
    // What `report` headlines (the file's busbw: a mean over ranks) rides along with the
    // medians, in JSON and in the tables, so a reader of both sees why they differ.
    let cand = simple(6, 8, &scale);
    let rec = |f: &ResultsFile| f.cases[0].busbw_gbps.unwrap();
    assert_eq!(bw["baseline_headline"].as_f64(), Some(rec(&base)));
    assert_eq!(bw["candidate_headline"].as_f64(), Some(rec(&cand)));
    let text = run_compare(&[p(&b), p(&c)]).stdout;
    assert!(text.contains("report's figure"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains(&base.cases[0].id))
        .unwrap_or_else(|| panic!("no row for case 0: {text}"));
    let arrow = row.split_whitespace().position(|w| w == "→").unwrap();
    let words: Vec<&str> = row.split_whitespace().collect();
    let near = |w: &str, want: f64| (w.parse::<f64>().unwrap() / want - 1.0).abs() < 0.01;
    assert!(near(words[arrow - 1], rec(&base)), "{row}");
    assert!(near(words[arrow + 1], rec(&cand)), "{row}");
    assert_eq!(verdict_of(&v, &base.cases[1].id)["verdict"], "improved");
    let mm = verdict_of(&v, &base.cases[4].id);
    assert_eq!(mm["verdict"], "regressed");
    assert_eq!(mm["stats"]["metric"], "gflops");
    // by time the same cases regress, with the opposite sign
    let (code, v) = json_report(&b, &c, &["--metric", "time"]);
    assert_eq!(code, 1);
    let t = &verdict_of(&v, &base.cases[0].id)["stats"];
    assert_eq!(
        (t["metric"].as_str(), t["higher_is_better"].as_bool()),
        (Some("time"), Some(false))
    );
    assert!(t["change"].as_f64().unwrap() > 0.15);
    assert_eq!(verdict_of(&v, &base.cases[1].id)["verdict"], "improved");
    // an improvement alone never fails --fail-on regression, but fails --fail-on any-change
    let only_faster = write(
        &dir,
        "f.json",
        &simple(6, 9, &|k| if k == 1 { 0.8 } else { 1.0 }),
    );
    assert_eq!(json_report(&b, &only_faster, &[]).0, 0);
    assert_eq!(
        json_report(&b, &only_faster, &["--fail-on", "any-change"]).0,
        1
    );
    assert_eq!(json_report(&b, &c, &["--fail-on", "never"]).0, 0);
}

#[test]
fn missing_new_and_failed_cases_are_reported() {
    let dir = tmpdir("cmp-missing");
    let base = simple(6, 10, &|_| 1.0);
    let mut cand = simple(6, 11, &|_| 1.0);
    let gone = cand.cases.remove(2);
    let mut extra = simple(7, 12, &|_| 1.0).cases.remove(6);
    extra.params.requested_bytes = Some(1 << 30);
    extra.id = extra.params.id();
    cand.cases.push(extra.clone());
    let (b, c) = (write(&dir, "b.json", &base), write(&dir, "c.json", &cand));
    // a case the candidate no longer measures fails the gate; a new case does not
    let r = run_compare(&[p(&b), p(&c)]);
    r.assert_code(1);
    assert!(
        r.stdout.contains("1 stopped measuring: missing"),
        "{}",
        r.stdout
    );
    let r = run_compare(&[p(&b), p(&c), "--allow-dropped", "missing"]);
    r.assert_code(0);
    let listed = r
        .stdout
        .split("Status changes, missing and new cases:")
        .nth(1)
        .unwrap();
    assert!(
        listed.contains(&gone.id) && listed.contains(&extra.id),
        "{}",
        r.stdout
    );
    let (code, v) = json_report(
        &b,
        &c,
        &["--fail-on", "any-change", "--allow-dropped", "missing"],
    );
    assert_eq!(code, 1); // ...but both are changes
    assert_eq!(verdict_of(&v, &gone.id)["verdict"], "missing");
    assert_eq!(verdict_of(&v, &gone.id)["candidate_status"], Value::Null);
    assert_eq!(verdict_of(&v, &extra.id)["verdict"], "new");
    assert_eq!(v["summary"]["counts"]["missing"], 1);
    assert_eq!(v["summary"]["counts"]["new"], 1);
    assert_eq!(v["summary"]["matched"], 5);

    // a case that worked in the baseline and gives wrong results now fails the gate
    let mut broken = simple(6, 13, &|_| 1.0);
    broken.cases[1].status = scalebench::results::schema::CaseStatus::Wrong;
    broken.cases[1].wrong = 7;
    let w = write(&dir, "w.json", &broken);
    let (code, v) = json_report(&b, &w, &[]);
    assert_eq!(code, 1);
    let f = verdict_of(&v, &base.cases[1].id);
    assert_eq!(f["verdict"], "failed");
    assert!(f["note"].as_str().unwrap().contains("7 wrong"), "{f:#}");
}

#[test]
fn markdown_is_a_short_table_with_the_rest_folded() {
    let dir = tmpdir("cmp-md");
    let base = simple(8, 14, &|_| 1.0);
    let cand = simple(8, 15, &|k| match k {
        2 => 1.3,
        5 => 0.7,
        _ => 1.0,
    });
    let (b, c) = (write(&dir, "b.json", &base), write(&dir, "c.json", &cand));
    let out = dir.join("report.md");
    let r = run_compare(&[p(&b), p(&c), "--format", "md", "--out", p(&out)]);
    r.assert_code(1);
    let md = std::fs::read_to_string(&out).unwrap();
    assert_eq!(md, r.stdout, "--out .md writes what --format md prints");
    let (head, folded) = md.split_once("<details>").expect("the rest is folded");
    assert!(
        head.starts_with("### scalebench compare: REGRESSION"),
        "{md}"
    );
    // the short table holds exactly the regression and the improvement, worst first
    let rows: Vec<&str> = head.lines().filter(|l| l.starts_with("| **")).collect();
    assert_eq!(rows.len(), 2, "{head}");
    assert!(rows[0].contains("regressed") && rows[0].contains(&base.cases[2].id));
    assert!(rows[1].contains("improved") && rows[1].contains(&base.cases[5].id));
    assert!(folded.contains("6 other cases"), "{folded}");
    assert_eq!(
        folded
            .lines()
            .filter(|l| l.starts_with("| no change") || l.starts_with("| within noise"))
            .count(),
        6
    );
    assert!(folded.contains("</details>") && folded.contains("Holm-corrected"));
    // --out with .json writes JSON whatever --format says
    let js = dir.join("report.json");
    run_compare(&[p(&b), p(&c), "--out", p(&js)]).assert_code(1);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&js).unwrap()).unwrap();
    assert_eq!(v["summary"]["exit_code"], 1);
    assert_eq!(v["settings"]["correction"], "holm");
}

#[test]
fn informational_differences_are_said_at_the_top() {
    let dir = tmpdir("cmp-prov");
    let base = simple(4, 16, &|_| 1.0);
    let mut cand = simple(4, 17, &|_| 1.0);
    cand.generator.version = "0.2.0".into();
    let prov = cand.launches[0].provenance.as_mut().unwrap();
    prov.environment
        .insert("OMPI_MCA_btl_vader_eager_limit".into(), "1024".into());
    let (b, c) = (write(&dir, "b.json", &base), write(&dir, "c.json", &cand));
    let r = run_compare(&[p(&b), p(&c)]);
    r.assert_code(0);
    let top = r.stdout.split("OK: no regression").next().unwrap();
    for needle in [
        "The set-ups differ",
        "scalebench version",
        "0.2.0",
        "environment",
        "OMPI_MCA_btl_vader_eager_limit=1024",
    ] {
        assert!(
            top.contains(needle),
            "{needle} not above the outcome:\n{}",
            r.stdout
        );
    }
    // metric definitions this build does not know (issue 44): refused by the validator every
    // reader shares (exit 2, the file and the field named), --allow-mismatch or not: its
    // numbers cannot be read under definitions nobody here knows. (Known but different
    // versions would be a set-up mismatch that --allow-mismatch lets through.)
    let mut other = simple(4, 18, &|_| 1.0);
    other.metrics_version = 2;
    let m = write(&dir, "m.json", &other);
    for extra in [&[][..], &["--allow-mismatch"][..]] {
        let mut args = vec![p(&b), p(&m)];
        args.extend_from_slice(extra);
        let r = run_compare(&args);
        r.assert_code(2);
        assert!(
            r.stderr.contains("metrics_version") && r.stderr.contains("m.json"),
            "{}",
            r.stderr
        );
        assert!(r.stdout.is_empty());
    }
}

/// Runs on another CPU model, MPI library or with emulated nodes are another set-up: a
/// slower number would say "other machine", not "worse code". Refused with exit 2, each
/// difference named; with --allow-mismatch compared, and every verdict says it crosses set-ups.
#[test]
fn set_up_mismatches_are_not_comparable_unless_allowed() {
    let dir = tmpdir("cmp-setup");
    let base = simple(4, 21, &|_| 1.0);
    let mut cand = simple(4, 22, &|k| if k == 1 { 1.5 } else { 1.0 });
    let prov = cand.launches[0].provenance.as_mut().unwrap();
    prov.hosts[0].cpu_model = "AMD EPYC 9654 96-Core Processor".into();
    prov.mpi_library = Some("MPICH Version: 4.1".into());
    let (b, c) = (write(&dir, "b.json", &base), write(&dir, "c.json", &cand));
    let r = run_compare(&[p(&b), p(&c)]);
    r.assert_code(2);
    for needle in [
        "not comparable",
        "CPU model",
        "AMD EPYC 9654 96-Core Processor",
        "MPI library",
        "MPICH Version: 4.1",
        "--allow-mismatch",
    ] {
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }
    assert!(r.stdout.is_empty(), "nothing judged: {}", r.stdout);
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);

    let r = run_compare(&[p(&b), p(&c), "--allow-mismatch", "--all"]);
    r.assert_code(1);
    assert!(
        r.stdout.contains("regressed (across set-ups)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("no change (across set-ups)"),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.lines().any(|l| l.starts_with("  no change  ")),
        "an unlabelled verdict: {}",
        r.stdout
    );
    let (code, v) = json_report(&b, &c, &["--allow-mismatch"]);
    assert_eq!(code, 1);
    assert_eq!(v["settings"]["across_setups"], true);
    let blocking: Vec<&str> = v["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["blocking"] == true)
        .map(|d| d["what"].as_str().unwrap())
        .collect();
    assert_eq!(blocking, ["CPU model", "MPI library"], "{v:#}");
    let md = run_compare(&[p(&b), p(&c), "--allow-mismatch", "--format", "md"]);
    assert!(
        md.stdout.contains("**regressed (across set-ups)**"),
        "{}",
        md.stdout
    );

    // emulated nodes and a different node count are set-ups too
    let mut emu = simple(4, 23, &|_| 1.0);
    emu.run.emulated_nodes = true;
    emu.launches[0].provenance.as_mut().unwrap().nodes = 2;
    let e = write(&dir, "e.json", &emu);
    let r = run_compare(&[p(&b), p(&e)]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("emulated nodes") && r.stderr.contains("node count"),
        "{}",
        r.stderr
    );
}

/// Two runs that differ only in the MPI thread level their MPI provided: refused (exit 2)
/// naming the level, as any set-up difference that moves small-message latency.
#[test]
fn a_different_mpi_thread_level_is_not_comparable() {
    use scalebench::params::ThreadLevel;
    let dir = tmpdir("cmp-level");
    let at = |seed: u64, level: ThreadLevel| {
        let mut f = simple(4, seed, &|_| 1.0);
        let prov = f.launches[0].provenance.as_mut().unwrap();
        prov.mpi_thread_level_requested = Some(level);
        prov.mpi_thread_level = Some(level);
        f
    };
    let single = write(&dir, "single.json", &at(31, ThreadLevel::Single));
    let funneled = write(&dir, "funneled.json", &at(32, ThreadLevel::Funneled));
    let r = run_compare(&[p(&single), p(&funneled)]);
    r.assert_code(2);
    for needle in [
        "not comparable",
        "MPI thread level (provided)",
        "single",
        "funneled",
        "--allow-mismatch",
    ] {
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }
    // The same level on both sides compares.
    let again = write(&dir, "single2.json", &at(33, ThreadLevel::Single));
    run_compare(&[p(&single), p(&again)]).assert_code(0);
}

/// A case that does not represent its set-up (here: recorded as oversubscribed by its run)
/// is still compared, and the report says so for that side.
#[test]
fn unrepresentative_cases_are_named_in_the_warnings() {
    let dir = tmpdir("cmp-unrep");
    let base = simple(3, 41, &|_| 1.0);
    let mut cand = simple(3, 42, &|_| 1.0);
    cand.cases[1].unrepresentative = vec![scalebench::results::schema::Unrepresentative {
        kind: "oversubscribed".into(),
        detail: "host n1: 4 busy threads on 2 CPUs".into(),
    }];
    let (b, c) = (write(&dir, "b.json", &base), write(&dir, "c.json", &cand));
    let r = run_compare(&[p(&b), p(&c)]);
    r.assert_code(0);
    assert!(
        r.stdout
            .contains("candidate: 1 of 3 compared cases not representative")
            && r.stdout
                .contains("oversubscribed: host n1: 4 busy threads on 2 CPUs"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("baseline: 1 of"), "{}", r.stdout);
}

/// Several runs a side: `compare A1 A2 A3 -- B1 B2 B3`, or directories of runs. Each case is
/// judged on one median per run, so a run-to-run spread that one run's batches cannot show
/// widens the interval: a 10 % shift of run medians spread ±15 % between runs is not flagged,
/// though each run's batches alone (one run a side) call it significant.
#[test]
fn repetitions_judge_cases_on_run_level_statistics() {
    let dir = tmpdir("cmp-runs");
    // run i's speed mode: a whole-run factor, the same for every case of the run
    let mode = |i: usize| [1.0, 1.15, 0.87, 1.1, 0.92, 1.05][i % 6];
    let mk = |side: &str, i: usize, shift: f64| {
        let f = simple(
            5,
            100 + i as u64 + if side == "b" { 50 } else { 0 },
            &|_| mode(i) * shift,
        );
        let d = dir.join(side).join(format!("run{i}"));
        std::fs::create_dir_all(&d).unwrap();
        write(&d, "results.json", &f);
        d
    };
    let a: Vec<_> = (0..6).map(|i| mk("a", i, 1.0)).collect();
    let b: Vec<_> = (0..6).map(|i| mk("b", (i + 3) % 6, 1.1)).collect();
    // ±15 % between runs with 6 runs a side: too little power for the ±10 % band, refused
    // with the MDE and the runs that would do; the rest of this test reports anyway
    let mut args: Vec<&str> = a.iter().map(|x| p(x)).collect();
    args.push("--");
    args.extend(b.iter().map(|x| p(x)));
    let r = run_compare(&args);
    r.assert_code(2);
    assert!(
        r.stderr.contains("minimum detectable effect") && r.stderr.contains("runs a side"),
        "{}",
        r.stderr
    );
    let mut args: Vec<&str> = vec!["--format", "json", "--allow-low-power"];
    args.extend(a.iter().map(|x| p(x)));
    args.push("--");
    args.extend(b.iter().map(|x| p(x)));
    let r = run_compare(&args);
    r.assert_code(0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["settings"]["runs_baseline"], 6);
    assert_eq!(v["settings"]["test"], "welch_t_log_run_medians");
    assert_eq!(
        v["settings"]["paired"], false,
        "same start times: not alternate"
    );
    // What `scalebench report` of a side's runs shows for a case: the newest measurement
    // (equal finish times here, so the later run: a[5], b[5]), read from its file.
    let shown = |run: &Path, id: &str, metric: &str| -> f64 {
        let f: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap())
                .unwrap();
        let c = f["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()
            .clone();
        match metric {
            "busbw" => c["busbw_gbps"].as_f64().unwrap(),
            "gflops" => c["gflops"].as_f64().unwrap(),
            _ => c["timing"]["time_s"].as_f64().unwrap(),
        }
    };
    for c in v["cases"].as_array().unwrap() {
        let s = &c["stats"];
        assert_eq!(s["basis"], "runs", "{c:#}");
        assert_eq!(s["n_baseline"], 6);
        // the interval holds the run-to-run spread: wide enough to include 0
        assert!(s["ci_low"].as_f64().unwrap() < 0.0, "{c:#}");
        assert!(s["ci_high"].as_f64().unwrap() > 0.0, "{c:#}");
        // the "report's figure" is the report's (not a mean over the runs: the speed modes
        // make the two differ by up to 15 %)
        let (id, metric) = (c["id"].as_str().unwrap(), s["metric"].as_str().unwrap());
        assert_eq!(
            s["baseline_headline"].as_f64(),
            Some(shown(&a[5], id, metric))
        );
        assert_eq!(
            s["candidate_headline"].as_f64(),
            Some(shown(&b[5], id, metric))
        );
    }
    // the same data through directories of runs gives the same report
    let r2 = run_compare(&[
        "--format",
        "json",
        "--allow-low-power",
        p(&dir.join("a")),
        "--",
        p(&dir.join("b")),
    ]);
    r2.assert_code(0);
    let v2: Value = serde_json::from_str(&r2.stdout).unwrap();
    assert_eq!(v["summary"], v2["summary"]);
    // one run a side (a fast baseline run, a slow candidate run): the batches alone call the
    // mode difference a regression, and the report says its interval lacks run-to-run variance
    let one = run_compare(&[p(&a[2]), p(&b[0])]);
    one.assert_code(1);
    assert!(one.stdout.contains("one run"), "{}", one.stdout);
    assert!(one.stdout.contains("run-to-run variance"), "{}", one.stdout);
    // a true +40 % on every run is found with repetitions
    let c: Vec<_> = (0..6).map(|i| mk("c", (i + 1) % 6, 1.4)).collect();
    let mut args: Vec<&str> = vec!["--allow-low-power"];
    args.extend(a.iter().map(|x| p(x)));
    args.push("--");
    args.extend(c.iter().map(|x| p(x)));
    let r = run_compare(&args);
    r.assert_code(1);
    assert!(r.stdout.contains("REGRESSION: 5 regressed"), "{}", r.stdout);
    assert!(r.stdout.contains("6/6 runs"), "{}", r.stdout);
    // bad forms: one path; three paths without `--`; a directory without runs
    run_compare(&[p(&a[0])]).assert_code(2);
    let r = run_compare(&[p(&a[0]), p(&a[1]), p(&b[0])]);
    r.assert_code(2);
    assert!(r.stderr.contains("--"), "{}", r.stderr);
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let r = run_compare(&[p(&empty), p(&a[0])]);
    r.assert_code(2);
    assert!(r.stderr.contains("empty"), "{}", r.stderr);
}

/// A results file whose cases say "ok" but carry no samples (or only zero times) must never
/// let a gate pass: exit 2, naming the file and the cases (the validation every reader
/// applies, `results::validate`).
#[test]
fn a_candidate_without_usable_samples_is_unusable() {
    let dir = tmpdir("cmp-empty");
    let base = simple(3, 31, &|_| 1.0);
    let mut none = base.clone();
    for c in &mut none.cases {
        c.timing.as_mut().unwrap().samples_s.clear();
    }
    let mut zeros = base.clone();
    for c in &mut zeros.cases {
        let t = c.timing.as_mut().unwrap();
        t.samples_s.iter_mut().for_each(|x| *x = 0.0);
    }
    let b = write(&dir, "b.json", &base);
    for (name, f) in [("none.json", &none), ("zeros.json", &zeros)] {
        let c = write(&dir, name, f);
        let r = run_compare(&[p(&b), p(&c)]);
        r.assert_code(2);
        assert!(
            r.stderr.contains(p(&c))
                && r.stderr.contains("timing.samples_s")
                && r.stderr.contains(&base.cases[0].id),
            "{name}: {}",
            r.stderr
        );
        assert!(!r.stdout.contains("OK"), "{}", r.stdout);
    }
}

// ---- the false-alarm rate of the tester ----

/// 1,000 comparisons in which nothing changed: both sides of every case draw their samples
/// from one noise distribution (lognormal 5 % with 5 % of samples 1.5–3× slower, like
/// preempted batches). The share of comparisons that report a regression must be at most the
/// configured level α = 1 − confidence = 5 %, with the noise band and without it, with Holm and
/// with Benjamini–Hochberg; without a multiple-comparison correction the share must exceed
/// 2α (the check has teeth); and the same machinery must find a real +20 % change.
#[test]
fn false_alarm_rate_of_1000_null_comparisons_is_at_most_alpha() {
    // All cores for seconds: not while another test measures real runs (common::quiet).
    let _quiet = common::quiet();
    const COMPARISONS: usize = 1000;
    const CASES: usize = 20;
    const SAMPLES: usize = 20;
    let alpha = 0.05;
    let mut rng = Rng(2026);
    let mut noise = |r: &mut Rng| timing_noise(r, 0.05, 0.05);
    let settings = |noise: f64, correction| Settings {
        noise,
        correction,
        ..Settings::default()
    };
    let default = Settings::default();
    let band0_holm = settings(0.0, Correction::Holm);
    let band0_bh = settings(0.0, Correction::BenjaminiHochberg);
    let band0_none = settings(0.0, Correction::None);
    let mut flagged = [0usize; 4]; // default, band 0 Holm, band 0 BH, band 0 uncorrected
    let mut two_sided_band0 = 0usize;
    let mut p_below_alpha = 0usize;
    let mut p_total = 0usize;
    for _ in 0..COMPARISONS {
        let base = synthetic(CASES, SAMPLES, &mut rng, &mut noise, &|_| 1.0);
        let cand = synthetic(CASES, SAMPLES, &mut rng, &mut noise, &|_| 1.0);
        for (k, s) in [&default, &band0_holm, &band0_bh, &band0_none]
            .iter()
            .enumerate()
        {
            let c = compare(&base, &cand, s);
            if FailOn::Regression.exit_code(&c, Dropped::default()) == 1 {
                flagged[k] += 1;
            }
            if k == 1 && c.count(Verdict::Regressed) + c.count(Verdict::Improved) > 0 {
                two_sided_band0 += 1;
            }
            if k == 3 {
                for case in &c.cases {
                    let p = case.stats.unwrap().p_value;
                    p_total += 1;
                    if p <= alpha {
                        p_below_alpha += 1;
                    }
                }
            }
        }
    }
    let share = |n: usize| n as f64 / COMPARISONS as f64;
    let per_case = p_below_alpha as f64 / p_total as f64;
    eprintln!(
        "null comparisons flagged: default {:.3}, band 0 Holm {:.3} (either direction {:.3}), band 0 BH {:.3}, band 0 uncorrected {:.3}; per-case P(p ≤ α) = {per_case:.4}",
        share(flagged[0]),
        share(flagged[1]),
        share(two_sided_band0),
        share(flagged[2]),
        share(flagged[3])
    );
    assert!(
        share(flagged[0]) <= alpha,
        "default settings: {}",
        share(flagged[0])
    );
    assert!(
        share(flagged[1]) <= alpha,
        "band 0, Holm: {}",
        share(flagged[1])
    );
    assert!(
        share(flagged[2]) <= alpha,
        "band 0, BH: {}",
        share(flagged[2])
    );
    // Holm bounds any significant change (either direction) by α; allow 3 binomial sd
    let sd = (alpha * (1.0 - alpha) / COMPARISONS as f64).sqrt();
    assert!(
        share(two_sided_band0) <= alpha + 3.0 * sd,
        "{}",
        share(two_sided_band0)
    );
    // each case's test is valid: P(p ≤ α) ≤ α (20,000 p-values)
    let sd_case = (alpha * (1.0 - alpha) / p_total as f64).sqrt();
    assert!(
        per_case <= alpha + 3.0 * sd_case,
        "per-case rate {per_case}"
    );
    // without a correction the share is several times α (≈ 19 % here with 20 cases): the
    // check above can fail, and the correction is what keeps the rate down
    assert!(
        share(flagged[3]) > 2.0 * alpha,
        "uncorrected: {}",
        share(flagged[3])
    );

    // power: the same noise, one case truly 20 % slower, judged against a ±2 % band
    let band2 = settings(0.02, Correction::Holm);
    let mut found = 0;
    for _ in 0..200 {
        let base = synthetic(CASES, SAMPLES, &mut rng, &mut noise, &|_| 1.0);
        let cand = synthetic(CASES, SAMPLES, &mut rng, &mut noise, &|k| {
            if k == 5 {
                1.2
            } else {
                1.0
            }
        });
        let c = compare(&base, &cand, &band2);
        let hit = c
            .cases
            .iter()
            .any(|x| x.id == base.cases[5].id && x.verdict == Verdict::Regressed);
        if hit {
            found += 1;
        }
    }
    eprintln!("+20 % found in {found} of 200 comparisons");
    assert!(found >= 190, "power {found}/200");
}

// ---- a real slowdown, end to end under mpirun ----

/// Two real 2-rank runs of the same small-message all-reduces; the candidate's MPI is told to
/// move messages over TCP loopback instead of shared memory (what a cluster whose fast
/// transport silently fell back to TCP does). Same case ids, genuinely slower (≈ 10× for
/// 8 B–1 KiB here); compare must say regressed, exit 1, and name the environment difference.
/// CPU contention (a hog, both ranks on one core) was tried first and is not reliable on a
/// shared 2-core machine: under others' load it slowed these cases by 0–60 %.
#[test]
fn a_real_transport_slowdown_is_caught_end_to_end() {
    let dir = tmpdir("cmp-e2e");
    let (b, c) = (dir.join("base"), dir.join("cand"));
    let study = [
        "run",
        "-q",
        "-w",
        "allreduce",
        "--sizes",
        "8B,1KiB,16KiB",
        "--in-place",
        "no",
        "--iters",
        "400",
        "--batches",
        "20",
        "--warmup",
        "20",
        "--out",
    ];
    let with_out = |d: &Path| {
        let mut v: Vec<&str> = study.to_vec();
        v.push(d.to_str().unwrap());
        v.iter().map(|s| s.to_string()).collect::<Vec<String>>()
    };
    let (ab, ac) = (with_out(&b), with_out(&c));
    let ab: Vec<&str> = ab.iter().map(String::as_str).collect();
    let ac: Vec<&str> = ac.iter().map(String::as_str).collect();
    mpirun(2, &ab).assert_code(0);
    mpirun_with(
        2,
        &[
            "--mca",
            "btl",
            "tcp,self",
            "--mca",
            "btl_tcp_if_include",
            "lo",
        ],
        &ac,
    )
    .assert_code(0);
    let (rb, rc) = (common::read_results(&b), common::read_results(&c));
    let ids =
        |r: &common::wire::ResultsFile| r.cases.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&rb), ids(&rc), "the same cases, by id");
    assert_eq!(rb.cases.len(), 3);

    // one run a side: its 20 batches may not reach the band's power on a loaded machine;
    // the catch is what this test holds (--allow-low-power reports anyway)
    let r = run_compare(&[p(&b), p(&c), "--allow-low-power"]);
    r.assert_code(1);
    let top = r.stdout.split("REGRESSION").next().unwrap();
    assert!(
        top.contains("environment") && top.contains("OMPI_MCA_btl=tcp,self"),
        "{}",
        r.stdout
    );
    // and what the ranks recorded carried the messages, per set-up (issue 45 item 5)
    let line = top
        .lines()
        .find(|l| l.contains("MPI transport (recorded per set-up)"))
        .unwrap_or_else(|| panic!("no transport line:\n{}", r.stdout));
    let (was, now) = line.split_once('→').unwrap();
    assert!(
        was.contains("shared memory") && now.contains("TCP over loopback"),
        "{line}"
    );
    let (code, v) = json_report(&b, &c, &["--allow-low-power"]);
    assert_eq!(code, 1);
    // the effect is large at 8 B and 1 KiB: assert those; 16 KiB is only reported
    for case in &rb.cases {
        let bytes = case.params.requested_bytes.unwrap();
        let got = verdict_of(&v, &case.id);
        if bytes <= 1024 {
            assert_eq!(got["verdict"], "regressed", "{got:#}\n{}", r.stdout);
            assert!(got["stats"]["change"].as_f64().unwrap() < -0.5, "{got:#}");
        }
    }
}

/// The CI gate's statistics on real repeated runs of this machine. 12 runs of a small study
/// (the gate's shape: 2 ranks, fixed iteration counts, short batches) and 6 runs of the same
/// study with Open MPI told to use TCP over loopback instead of shared memory (a genuine
/// slowdown, what a cluster whose fast transport silently fell back does), interleaved.
/// - A/A: 20 random 6 + 6 splits of the 12 default runs, with the gate's band: at most 1 may
///   flag anything. The splits re-partition one pool, so they are a check that the null
///   holds on real runs, not 20 independent trials (ci/gate-study.sh runs those).
/// - The knob: the 6 default runs measured just before the 6 knob runs vs those → regressed,
///   exit 1. Why TCP and not a subtler knob here: this VM switches whole-run speed modes (in
///   one CI run, runs 8–11 were 3× faster than runs 0–7 for small messages), and with unpaired
///   run-level statistics a switch between the sides hides a ×1.7 slowdown (a 1 KiB eager
///   limit was missed that way); TCP is several times slower in either mode.
///   ci/gate-study.sh measures the subtler knobs.
#[test]
fn repeated_real_runs_hold_the_null_and_catch_an_open_mpi_knob() {
    const BAND: &str = "0.10"; // ci/regression.sh's default band
    let dir = tmpdir("cmp-reps");
    let study = |out: &Path| -> Vec<String> {
        [
            "run",
            "-q",
            "-w",
            "allreduce,allgather",
            "--sizes",
            "4KiB,64KiB",
            "--in-place",
            "no",
            "--iters",
            "400",
            "--batches",
            "40",
            "--warmup",
            "40",
            "--out",
            p(out),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let knob = [
        "--mca",
        "btl",
        "tcp,self",
        "--mca",
        "btl_tcp_if_include",
        "lo",
    ];
    // The runs are measured while no CPU-heavy test runs beside them (common::quiet): a burst of
    // load in some runs and not others is exactly the run-to-run variance under test, but
    // one the CI machine itself would not have.
    let quiet = common::quiet();
    let mut default_runs = Vec::new();
    let mut knob_runs = Vec::new();
    for i in 0..12 {
        let d = dir.join(format!("default-{i:02}"));
        let args = study(&d);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        mpirun(2, &args).assert_code(0);
        default_runs.push(d);
        if i % 2 == 1 {
            let k = dir.join(format!("knob-{i:02}"));
            let args = study(&k);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            mpirun_with(2, &knob, &args).assert_code(0);
            knob_runs.push(k);
        }
    }
    drop(quiet);
    // --allow-low-power: this test measures the false-alarm rate and a catch on real runs;
    // whether 6 runs a side reach the band's power on this machine is said, not asserted
    // (two_runs_a_side_with_3_percent_spread_are_refused_with_the_mde holds the refusal).
    let gate = |a: &[&Path], b: &[&Path]| -> (i32, Value) {
        let mut args: Vec<&str> = vec!["--noise", BAND, "--format", "json", "--allow-low-power"];
        args.extend(a.iter().map(|x| p(x)));
        args.push("--");
        args.extend(b.iter().map(|x| p(x)));
        let r = run_compare(&args);
        let v: Value = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
        (r.code, v)
    };
    let mut rng = Rng(20261123);
    let mut flagged = Vec::new();
    for trial in 0..20 {
        // a random 6 + 6 split of the 12 default runs (partial Fisher–Yates)
        let mut idx: Vec<usize> = (0..12).collect();
        for i in 0..12 {
            let j = i + (rng.uniform() * (12 - i) as f64) as usize % (12 - i);
            idx.swap(i, j);
        }
        let a: Vec<&Path> = idx[..6]
            .iter()
            .map(|&i| default_runs[i].as_path())
            .collect();
        let b: Vec<&Path> = idx[6..]
            .iter()
            .map(|&i| default_runs[i].as_path())
            .collect();
        let (code, v) = gate(&a, &b);
        assert!(code == 0 || code == 1, "trial {trial}: {v:#}");
        assert_eq!(v["settings"]["runs_baseline"], 6);
        if code == 1 {
            flagged.push(v["summary"]["outcome"].to_string());
        }
    }
    eprintln!(
        "A/A on real runs: {} of 20 flagged {flagged:?}",
        flagged.len()
    );
    assert!(
        flagged.len() <= 1,
        "A/A flagged {} of 20: {flagged:?}",
        flagged.len()
    );

    // the default runs measured just before each knob run (i odd), so both sides span the
    // same stretch of time
    let a: Vec<&Path> = default_runs
        .iter()
        .skip(1)
        .step_by(2)
        .map(|x| x.as_path())
        .collect();
    let b: Vec<&Path> = knob_runs.iter().map(|x| x.as_path()).collect();
    let (code, v) = gate(&a, &b);
    assert_eq!(code, 1, "{v:#}");
    let regressed: Vec<&Value> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "regressed")
        .collect();
    let small = |c: &&Value| c["label"].as_str().unwrap().contains(" 4KiB ");
    assert!(
        regressed
            .iter()
            .any(|c| small(c) && c["label"].as_str().unwrap().starts_with("allreduce")),
        "the 4 KiB all-reduce over TCP: {v:#}"
    );
    // each knob run was measured right after its default run: collected alternately, so
    // the cases are judged on pairs
    assert_eq!(v["settings"]["paired"], true, "{v:#}");
    for c in &regressed {
        assert_eq!(c["stats"]["basis"], "paired");
    }
    // the environment difference that explains it is named (informational, not blocking)
    let env = v["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["what"] == "environment");
    assert!(env.is_none() || env.unwrap()["blocking"] == false, "{v:#}");
}

// ---- bad input: exit 2, the path and the reason, no panic, nothing written ----

fn refused(args: &[&str], needles: &[&str]) {
    let dir = tmpdir("cmp-refused-out");
    let out = dir.join(format!("report-{}.md", args.len()));
    let mut full = args.to_vec();
    full.extend_from_slice(&["--out", p(&out)]);
    let r = run_compare(&full);
    r.assert_refused(&args, needles, &out);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

#[test]
fn malformed_truncated_and_mismatched_files_exit_2() {
    let dir = tmpdir("cmp-bad");
    let good = write(&dir, "good.json", &simple(4, 20, &|_| 1.0));
    let text = std::fs::read_to_string(&good).unwrap();
    let put = |name: &str, body: &[u8]| {
        let f = dir.join(name);
        std::fs::write(&f, body).unwrap();
        f
    };
    let truncated = put("truncated.json", &text.as_bytes()[..text.len() / 2]);
    let empty = put("empty.json", b"");
    let garbage = put("garbage.json", b"\x00\xff\xfe not json");
    let array = put("array.json", b"[1, 2, 3]");
    let shape = put("shape.json", br#"{"format_version": 1, "cases": "none"}"#);
    // another run's measurements (a copy of good.json would be one run: issue 46)
    let other = write(&dir, "other.json", &simple(4, 22, &|_| 1.0));
    let future = put(
        "future.json",
        std::fs::read_to_string(&other)
            .unwrap()
            .replacen("\"format_version\": 1", "\"format_version\": 99", 1)
            .replacen(p(&other), "a-future-run", 1)
            .as_bytes(),
    );
    let g = p(&good);
    refused(
        &[g, p(&truncated)],
        &["truncated.json", "not a scalebench results file", "EOF"],
    );
    refused(&[p(&truncated), g], &["truncated.json"]);
    refused(&[g, p(&empty)], &["empty.json", "empty"]);
    refused(&[g, p(&garbage)], &["garbage.json"]);
    refused(&[g, p(&array)], &["array.json", "format_version"]);
    refused(&[g, p(&shape)], &["shape.json"]);
    refused(&[g, p(&future)], &["future.json", "format_version 99"]);
    refused(
        &[g, "/nonexistent/results.json"],
        &["/nonexistent/results.json", "no such file"],
    );
    refused(&[p(&dir), g], &["results.json", "no such file"]); // a directory without one
                                                               // a newer format whose fields still parse is compared with --allow-mismatch, and says so
    let r = run_compare(&[g, p(&future), "--allow-mismatch"]);
    r.assert_code(0);
    assert!(r.stdout.contains("format_version 99"), "{}", r.stdout);

    // the same case twice: matching would be ambiguous
    let mut dup = simple(4, 21, &|_| 1.0);
    dup.cases.push(dup.cases[0].clone());
    let d = write(&dir, "dup.json", &dup);
    refused(
        &[g, p(&d)],
        &["dup.json", "appears twice", &dup.cases[0].id],
    );
    // nothing in common: cases match by parameters
    let mut other = simple(4, 22, &|_| 1.0);
    for c in &mut other.cases {
        c.params.dtype = scalebench::params::Dtype::F64;
        c.id = c.params.id();
    }
    let o = write(&dir, "other.json", &other);
    refused(&[g, p(&o)], &["no case in common", "other.json"]);
    // options
    refused(&[g, g, "--noise", "2"], &["--noise 2", "0.02"]);
    refused(&[g, g, "--confidence", "95"], &["--confidence 95", "0.95"]);
    let r = run_compare(&[g, g, "--metric", "speed"]);
    r.assert_code(2);
    assert!(r.stderr.contains("busbw"), "{}", r.stderr);
}

#[test]
fn the_golden_file_is_compared_through_a_run_directory() {
    // BASELINE and CANDIDATE may be run directories holding results.json
    let dir = tmpdir("cmp-dir");
    let mut g = golden();
    g.run.run_id = "golden-rerun".into();
    // a rerun measures other samples (identical ones would be one run): one part in 1e9
    for c in &mut g.cases {
        if let Some(t) = c.timing.as_mut() {
            t.samples_s.iter_mut().for_each(|x| *x *= 1.0 + 1e-9);
        }
    }
    std::fs::create_dir_all(dir.join("a")).unwrap();
    write(&dir.join("a"), "results.json", &g);
    // 3 batches a case: too little power for the band, refused unless reported anyway
    let r = run_compare(&[p(&dir.join("a")), "tests/golden/results-v1.json"]);
    r.assert_code(2);
    // One run a side: only more runs help, so the advice is in runs (issue 45).
    assert!(
        r.stderr.contains("several runs a side") && !r.stderr.contains("samples a side"),
        "{}",
        r.stderr
    );
    let r = run_compare(&[
        p(&dir.join("a")),
        "tests/golden/results-v1.json",
        "--allow-low-power",
    ]);
    r.assert_code(0);
    // 3 batches a side: where the interval reaches past both band edges (the three smallest
    // cases, up to [−32 %, +48 %]) the case is inconclusive, not "no change" (issue 33 item 3)
    assert!(
        r.stdout.contains("6 matched")
            && r.stdout.contains("3 no change")
            && r.stdout.contains("3 inconclusive")
            && r.stdout.contains("OK: no regression seen (3 inconclusive"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("too little power"), "{}", r.stdout);
    // The inconclusive rows' advice is in runs too: samples of one run never add the
    // run-to-run variance (issue 45: "about 439 samples a side" was advised).
    assert!(
        r.stdout.contains("more runs a side") && !r.stdout.contains("samples a side"),
        "{}",
        r.stdout
    );
}

// ---- the gate's guarantees, by simulation through the library's decision path ----

/// The runs of one side for the simulations: `RUNS` copies of a 20-case file whose samples
/// are overwritten per trial (5 samples per case and run, 1 % noise within a run).
fn sim_side(cases: usize, runs: usize, name: &str) -> Vec<ResultsFile> {
    let mut rng = Rng(1);
    let template = synthetic(cases, 5, &mut rng, &mut |_| 1.0, &|_| 1.0);
    (0..runs)
        .map(|r| {
            let mut f = template.clone();
            f.run.run_id = format!("{name}-{r}");
            // ABBA order: pair r is (A, B) for even r, (B, A) for odd r, at 10 s a run
            let first = (r % 2 == 0) == (name == "a");
            f.run.started_unix_s = 1.8e9 + 20.0 * r as f64 + if first { 0.0 } else { 10.0 };
            f
        })
        .collect()
}

/// Draws new samples for every run of a side: case k's true time × `shift(k)` × the run's
/// speed mode × a run-level lognormal factor (`run_sd`) × 1 % per-sample noise.
fn sim_fill(
    side: &mut [ResultsFile],
    rng: &mut Rng,
    run_sd: f64,
    mode: &dyn Fn(usize) -> f64,
    shift: &dyn Fn(usize) -> f64,
) {
    for (r, f) in side.iter_mut().enumerate() {
        for (k, c) in f.cases.iter_mut().enumerate() {
            let true_s = 1e-6 * (1.0 + (k % 7) as f64) * shift(k) * mode(r);
            let run = (run_sd * rng.normal()).exp();
            for x in c.timing.as_mut().unwrap().samples_s.iter_mut() {
                *x = true_s * run * (0.01 * rng.normal()).exp();
            }
        }
    }
}

fn refs(v: &[ResultsFile]) -> Vec<&ResultsFile> {
    v.iter().collect()
}

/// Issue 24 (a): after a real in-band shift (a compiler or library bump moves every case by
/// +5 % inside a ±10 % band) the gate must still promise "any verdict beyond the band ≤ 5 %".
/// 4,000 comparisons of 20 cases, 8 runs a side collected ABBA (paired), 15 % run-to-run
/// spread so that single cases do stray beyond the band. The band test with Holm holds the
/// family-wise rate; the same band test uncorrected does not (the check has teeth), and the
/// old rule (Holm on the point null + the uncorrected interval beyond the band) is reported
/// for comparison.
#[test]
fn the_band_test_holds_the_family_wise_error_under_an_in_band_shift() {
    let _quiet = common::quiet();
    const TRIALS: usize = 4000;
    const CASES: usize = 20;
    let (mut a, mut b) = (sim_side(CASES, 8, "a"), sim_side(CASES, 8, "b"));
    let mut rng = Rng(24);
    let holm = Settings::default();
    let none = Settings {
        correction: Correction::None,
        ..Settings::default()
    };
    let (mut fwer, mut fwer_uncorrected, mut fwer_old, mut paired) = (0, 0, 0, 0);
    let beyond = |c: &scalebench::compare::Comparison| {
        c.count(Verdict::Regressed) + c.count(Verdict::Improved) > 0
    };
    for _ in 0..TRIALS {
        sim_fill(&mut a, &mut rng, 0.15, &|_| 1.0, &|_| 1.0);
        sim_fill(&mut b, &mut rng, 0.15, &|_| 1.0, &|_| 1.05);
        let c = compare_runs(&refs(&a), &refs(&b), &holm);
        paired += usize::from(c.paired);
        fwer += usize::from(beyond(&c));
        let old = c.cases.iter().any(|x| {
            x.stats.is_some_and(|s| {
                s.p_adjusted <= 0.05 && (s.change.ci_low > 0.10 || s.change.ci_high < -0.10)
            })
        });
        fwer_old += usize::from(old);
        let u = compare_runs(&refs(&a), &refs(&b), &none);
        fwer_uncorrected += usize::from(beyond(&u));
    }
    let rate = |n: usize| n as f64 / TRIALS as f64;
    eprintln!(
        "+5 % in a ±10 % band, 20 cases, 8 paired runs a side, {TRIALS} comparisons: any verdict beyond the band {:.4} (Holm band test), {:.4} (uncorrected band test), {:.4} (old rule: Holm point null + unadjusted interval)",
        rate(fwer),
        rate(fwer_uncorrected),
        rate(fwer_old)
    );
    assert_eq!(paired, TRIALS, "ABBA runs are analysed in pairs");
    assert!(rate(fwer) <= 0.05, "family-wise rate {}", rate(fwer));
    assert!(
        rate(fwer_uncorrected) > 0.05,
        "uncorrected {}: the simulation must be able to fail",
        rate(fwer_uncorrected)
    );
}

/// A planted +25 % on one of 20 cases, 8 runs a side collected ABBA with 3 % run-to-run
/// spread: found in ≥ 90 % of 1,000 comparisons (paired). With a whole-run speed-mode switch
/// in the middle (pairs 4–7 run 1.4× faster on both sides, as this VM does), the paired
/// analysis finds it at least as often as the unpaired one, which the switch blinds.
#[test]
fn paired_runs_find_a_planted_change_through_a_speed_mode_switch() {
    let _quiet = common::quiet();
    const TRIALS: usize = 1000;
    let (mut a, mut b) = (sim_side(20, 8, "a"), sim_side(20, 8, "b"));
    let mut rng = Rng(2524);
    let unpaired = Settings {
        pairing: Pairing::Unpaired,
        ..Settings::default()
    };
    let planted = |k: usize| if k == 3 { 1.25 } else { 1.0 };
    let found = |c: &scalebench::compare::Comparison, id: &str| {
        c.cases
            .iter()
            .any(|x| x.id == id && x.verdict == Verdict::Regressed)
    };
    let id = a[0].cases[3].id.clone();
    let (mut steady, mut switch_paired, mut switch_unpaired, mut others) = (0, 0, 0, 0);
    for trial in 0..TRIALS {
        let switch = trial % 2 == 1;
        let mode = move |r: usize| if switch && r >= 4 { 1.0 / 1.4 } else { 1.0 };
        sim_fill(&mut a, &mut rng, 0.03, &mode, &|_| 1.0);
        sim_fill(&mut b, &mut rng, 0.03, &mode, &planted);
        let c = compare_runs(&refs(&a), &refs(&b), &Settings::default());
        assert!(c.paired);
        others += c.count(Verdict::Regressed) - usize::from(found(&c, &id));
        if !switch {
            steady += usize::from(found(&c, &id));
            continue;
        }
        switch_paired += usize::from(found(&c, &id));
        let u = compare_runs(&refs(&a), &refs(&b), &unpaired);
        switch_unpaired += usize::from(found(&u, &id));
    }
    let half = (TRIALS / 2) as f64;
    let (s, p, u) = (
        steady as f64 / half,
        switch_paired as f64 / half,
        switch_unpaired as f64 / half,
    );
    eprintln!(
        "+25 % on 1 of 20 cases, 8 paired runs: found {s:.3} steady; with a speed-mode switch paired {p:.3}, unpaired {u:.3}; other cases flagged {others} times"
    );
    assert!(s >= 0.9, "steady power {s}");
    assert!(p >= 0.9, "paired power through the switch {p}");
    assert!(p >= u, "paired {p} < unpaired {u}");
    assert!(
        others as f64 <= 0.05 * TRIALS as f64,
        "false alarms {others}"
    );
}

/// Issue 24 (b): with a coarse timer, run medians are often identical: [3.0, 3.0] µs against
/// [3.5, 3.5] µs must not read "regressed, certain". The error is floored at the timer's
/// resolution (0.5 µs per operation here, CUDA events' step), and with no resolution recorded
/// the case is not compared ("no spread") and the gate refuses to pass on it.
#[test]
fn zero_spread_is_floored_at_the_timer_or_not_compared() {
    let mk = |t: f64, run: usize, res_s: f64| {
        let mut f = simple(2, 90 + run as u64, &|_| 1.0);
        f.cases.truncate(1);
        f.run.run_id = format!("zero-{t}-{run}");
        for c in &mut f.cases {
            c.timing
                .as_mut()
                .unwrap()
                .samples_s
                .iter_mut()
                .for_each(|x| *x = t);
        }
        for l in &mut f.launches {
            if let Some(p) = l.provenance.as_mut() {
                // 10 operations per sample: 5 µs per batch is 0.5 µs per operation
                p.timer.resolution_s = res_s;
            }
        }
        f
    };
    for (res_s, floored) in [(5e-6, true), (0.0, false)] {
        let a = [mk(3.0e-6, 0, res_s), mk(3.0e-6, 1, res_s)];
        let b = [mk(3.5e-6, 2, res_s), mk(3.5e-6, 3, res_s)];
        let c = compare_runs(&refs(&a), &refs(&b), &Settings::default());
        let case = &c.cases[0];
        assert_ne!(case.verdict, Verdict::Regressed, "{case:?}");
        match case.stats {
            Some(s) => {
                assert!(floored && s.floored, "{case:?}");
                assert!(s.p_value > 0.01 && s.p_band > 0.05, "{s:?}");
                assert!(
                    s.change.ci_low < 0.0,
                    "the interval holds the timer step: {s:?}"
                );
            }
            None => {
                assert!(!floored, "{case:?}");
                assert_eq!(case.verdict, Verdict::NotCompared);
                assert!(
                    case.note.as_deref().unwrap().contains("no spread"),
                    "{case:?}"
                );
            }
        }
        // through the command: never exit 1
        let dir = tmpdir(&format!("cmp-zero-{floored}"));
        let paths: Vec<PathBuf> = a
            .iter()
            .chain(&b)
            .enumerate()
            .map(|(i, f)| write(&dir, &format!("{i}.json"), f))
            .collect();
        let r = run_compare(&[p(&paths[0]), p(&paths[1]), "--", p(&paths[2]), p(&paths[3])]);
        r.assert_code(2);
        // the runs of a side hold the same samples here, so they are one run (issue 46) before
        // their spread is looked at
        assert!(r.stderr.contains("identical measurements"), "{}", r.stderr);
    }
}

/// Issue 24 (c): two runs a side with a ±3 % spread cannot see a 10 % change: refused with
/// exit 2, the median MDE and the runs a side that would reach the band; with
/// `--allow-low-power` reported, each case with its MDE.
#[test]
fn two_runs_a_side_with_3_percent_spread_are_refused_with_the_mde() {
    let dir = tmpdir("cmp-power");
    let mut paths = Vec::new();
    for (i, level) in [0.97, 1.03, 0.97, 1.03].iter().enumerate() {
        let mut rng = Rng(300 + i as u64);
        let f = synthetic(
            4,
            20,
            &mut rng,
            &mut |r| timing_noise(r, 0.003, 0.0),
            &|_| *level,
        );
        let d = dir
            .join(if i < 2 { "a" } else { "b" })
            .join(format!("run{i}"));
        std::fs::create_dir_all(&d).unwrap();
        write(&d, "results.json", &f);
        paths.push(d);
    }
    let (a, b) = (dir.join("a"), dir.join("b"));
    let r = run_compare(&[p(&a), "--", p(&b)]);
    r.assert_code(2);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    for needle in [
        "too little power",
        "minimum detectable effect",
        "±10.0%",
        "runs a side",
    ] {
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }
    let needed: usize = r
        .stderr
        .split("about ")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no run count in: {}", r.stderr));
    assert!(
        (4..=30).contains(&needed),
        "{needed} runs a side: {}",
        r.stderr
    );
    let r = run_compare(&[p(&a), "--format", "json", "--allow-low-power", "--", p(&b)]);
    r.assert_code(0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(
        v["warnings"].to_string().contains("too little power"),
        "{v:#}"
    );
    let median = v["settings"]["median_mde"].as_f64().unwrap();
    assert!(median > 0.10, "{median}");
    for c in v["cases"].as_array().unwrap() {
        let s = &c["stats"];
        assert!(s["mde"].as_f64().unwrap() > 0.10, "{c:#}");
        assert_eq!(s["units_kind"], "runs", "{c:#}");
        assert!(s["units_needed"].as_u64().unwrap() >= 3, "{c:#}");
    }
    // the text names the MDE per case
    let r = run_compare(&[p(&a), "--all", "--allow-low-power", "--", p(&b)]);
    assert!(r.stdout.contains("MDE"), "{}", r.stdout);
    // the same two runs a side, report only (--fail-on never): no refusal
    run_compare(&[p(&a), "--fail-on", "never", "--", p(&b)]).assert_code(0);
}

/// Issue 24 (g): a candidate that stops measuring a case the baseline measured fails the
/// gate (exit 1, naming the case), whether the case went missing, skipped or failed; each
/// kind can be allowed on its own.
#[test]
fn a_candidate_that_stops_measuring_a_case_fails_the_gate() {
    let dir = tmpdir("cmp-dropped");
    let base = simple(6, 60, &|_| 1.0);
    let b = write(&dir, "b.json", &base);
    let mut gone = simple(6, 61, &|_| 1.0);
    let lost = gone.cases.remove(2);
    let mut skip = simple(6, 62, &|_| 1.0);
    skip.cases[4].status = CaseStatus::Skipped;
    skip.cases[4].timing = None;
    skip.cases[4].message = Some("not run".into());
    let skipped_id = skip.cases[4].id.clone();
    let g = write(&dir, "gone.json", &gone);
    let s = write(&dir, "skip.json", &skip);
    for (c, id, kind) in [(&g, &lost.id, "missing"), (&s, &skipped_id, "skipped")] {
        let r = run_compare(&[p(&b), p(c)]);
        r.assert_code(1);
        assert!(
            r.stdout.contains(&format!("stopped measuring: {kind}"))
                && r.stdout.contains(id.as_str()),
            "{kind}: {}",
            r.stdout
        );
        let (code, v) = json_report(&b, c, &[]);
        assert_eq!(code, 1);
        assert_eq!(v["summary"]["result"], "regression");
        run_compare(&[p(&b), p(c), "--allow-dropped", kind]).assert_code(0);
        let other = if kind == "missing" {
            "skipped"
        } else {
            "missing"
        };
        run_compare(&[p(&b), p(c), "--allow-dropped", other]).assert_code(1);
        run_compare(&[p(&b), p(c), "--allow-dropped", "missing,skipped"]).assert_code(0);
    }
    let r = run_compare(&[p(&b), p(&g), "--allow-dropped", "vanished"]);
    r.assert_code(2);
    assert!(r.stderr.contains("missing"), "{}", r.stderr);
}

/// Issue 24 (h): three rows of one case (an 8 B all-reduce) in three set-ups (1×1 pure, 1×2
/// pure, 1×2 hybrid) name their set-ups in text, Markdown and JSON.
#[test]
fn rows_of_one_case_in_three_set_ups_name_their_set_ups() {
    use scalebench::params::Topology;
    let dir = tmpdir("cmp-setups");
    let template = golden().cases[0].clone();
    let mk = |seed: u64| {
        let mut f = golden();
        f.run.run_id = format!("setups-{seed}");
        let mut rng = Rng(seed);
        f.cases = [
            (1, Topology::Pure),
            (2, Topology::Pure),
            (2, Topology::Hybrid),
        ]
        .iter()
        .map(|(dpn, topo)| {
            let mut params = template.params.clone();
            params.devices_per_node = *dpn;
            params.topology = *topo;
            params.requested_bytes = Some(8);
            let samples: Vec<f64> = (0..20)
                .map(|_| 1e-6 * timing_noise(&mut rng, 0.02, 0.0))
                .collect();
            let ranks = params.ranks() as usize;
            common::fixture::case(&params, &template.launch_id, vec![1e-6; ranks], samples)
        })
        .collect();
        f
    };
    let (b, c) = (write(&dir, "b.json", &mk(1)), write(&dir, "c.json", &mk(2)));
    let named = [
        "[layout=1x1 topology=pure]",
        "[layout=1x2 topology=pure]",
        "[layout=1x2 topology=hybrid]",
    ];
    let text = run_compare(&[p(&b), p(&c), "--all"]);
    text.assert_code(0);
    let md = run_compare(&[p(&b), p(&c), "--format", "md"]);
    md.assert_code(0);
    for n in named {
        assert!(text.stdout.contains(n), "text: {n}\n{}", text.stdout);
        let plain = n.trim_start_matches('[').trim_end_matches(']');
        assert!(md.stdout.contains(plain), "md: {n}\n{}", md.stdout);
    }
    let (_, v) = json_report(&b, &c, &[]);
    let mut setups: Vec<String> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["setup"].as_str().unwrap_or("(none)").to_string())
        .collect();
    setups.sort();
    assert_eq!(
        setups,
        [
            "layout=1x1 topology=pure",
            "layout=1x2 topology=hybrid",
            "layout=1x2 topology=pure"
        ]
    );
    // a case alone under its label needs no set-up
    let (_, v) = json_report(
        &write(&dir, "s1.json", &simple(3, 1, &|_| 1.0)),
        &write(&dir, "s2.json", &simple(3, 2, &|_| 1.0)),
        &[],
    );
    assert!(
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c.get("setup").is_none()),
        "{v:#}"
    );
}

/// Runs collected alternately are paired by default (by start time, whatever the order on
/// the command line); `--unpaired` turns it off; `--paired` on runs that were not collected
/// alternately is refused. Directories of runs are read in natural order (2 before 10).
#[test]
fn runs_collected_alternately_are_paired_and_run_directories_sort_naturally() {
    let dir = tmpdir("cmp-paired");
    let (a, b) = (sim_side(4, 4, "a"), sim_side(4, 4, "b"));
    let (mut a, mut b) = (a, b);
    let mut rng = Rng(7);
    sim_fill(&mut a, &mut rng, 0.01, &|_| 1.0, &|_| 1.0);
    sim_fill(&mut b, &mut rng, 0.01, &|_| 1.0, &|_| 1.0);
    let put = |side: &str, files: &[ResultsFile], names: &[&str]| {
        for (f, n) in files.iter().zip(names) {
            let d = dir.join(side).join(n);
            std::fs::create_dir_all(&d).unwrap();
            write(&d, "results.json", f);
        }
        dir.join(side)
    };
    let (da, db) = (
        put("a", &a, &["10", "2", "1", "3"]),
        put("b", &b, &["1", "2", "3", "4"]),
    );
    let listed: Vec<String> = scalebench::compare::expand_runs(&da)
        .unwrap()
        .iter()
        .map(|x| x.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, ["1", "2", "3", "10"]);
    let r = run_compare(&["--format", "json", p(&da), "--", p(&db)]);
    r.assert_code(0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["settings"]["paired"], true, "{v:#}");
    assert_eq!(v["settings"]["test"], "paired_t_log_ratios");
    assert_eq!(v["cases"][0]["stats"]["basis"], "paired");
    let r = run_compare(&["--format", "json", "--unpaired", p(&da), "--", p(&db)]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["settings"]["paired"], false);
    // not alternate: every baseline run before every candidate run
    for (i, f) in b.iter_mut().enumerate() {
        f.run.started_unix_s = 1.9e9 + i as f64;
    }
    let dc = put("c", &b, &["1", "2", "3", "4"]);
    let r = run_compare(&["--format", "json", p(&da), "--", p(&dc)]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["settings"]["paired"], false);
    let r = run_compare(&["--paired", p(&da), "--", p(&dc)]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("--paired") && r.stderr.contains("alternately"),
        "{}",
        r.stderr
    );
}

/// Issue 45 item 5 with issue 46's one design: a 4× slowdown of 6 of 7 cases, 4 runs a side
/// whose whole-run speed spreads ±40 %. The gate lacks the power to promise a pass, but a
/// regression it finds holds all the same (the band test's false-alarm bound does not depend
/// on power): exit 1, the regressed cases and by how much, and the low power said as a
/// warning whose advice is in runs. A 1.3× slowdown in the same noise finds nothing, so the
/// gate refuses (exit 2) for low power instead of passing.
#[test]
fn low_power_reports_a_regression_it_found_and_refuses_a_pass() {
    let dir = tmpdir("cmp-lowpower-seen");
    let mode = |i: usize| [1.0, 1.4, 0.7, 1.25][i % 4];
    let mk = |tag: &str, side: &str, i: usize, slow: f64| {
        let f = simple(7, 300 + i as u64 + if side == "b" { 50 } else { 0 }, &|k| {
            mode(i) * if k < 6 { slow } else { 1.0 }
        });
        let d = dir.join(tag).join(side).join(format!("run{i}"));
        std::fs::create_dir_all(&d).unwrap();
        write(&d, "results.json", &f);
        d
    };
    let compared = |tag: &str, slow: f64| {
        let a: Vec<_> = (0..4).map(|i| mk(tag, "a", i, 1.0)).collect();
        let b: Vec<_> = (0..4).map(|i| mk(tag, "b", (i + 1) % 4, slow)).collect();
        let mut args: Vec<String> = vec!["--format".into(), "json".into()];
        args.extend(a.iter().map(|x| p(x).to_string()));
        args.push("--".into());
        args.extend(b.iter().map(|x| p(x).to_string()));
        let args: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
        run_compare(&args)
    };
    let r = compared("x4", 4.0);
    r.assert_code(1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let regressed: Vec<f64> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "regressed")
        .map(|c| c["stats"]["change"].as_f64().unwrap())
        .collect();
    assert_eq!(regressed.len(), 6, "{}", r.stdout);
    // 4× slower: the compared rate drops by 75 % on every one of them
    assert!(
        regressed.iter().all(|x| (x + 0.75).abs() < 0.1),
        "{regressed:?}"
    );
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("too little power") && all.contains("found all the same"),
        "{all}"
    );
    assert!(
        all.contains("runs a side") && !all.contains("samples a side"),
        "{all}"
    );
    // It lists what it caught first, and its last clause does not contradict that by
    // saying large changes pass unseen (issue 45 item 5).
    assert!(
        all.contains("6 of 7 compared cases worse beyond")
            && !all.contains("well beyond the band would pass unseen")
            && all.contains("in the other cases a change smaller than its own MDE"),
        "{all}"
    );

    let r = compared("x1.3", 1.3);
    r.assert_code(2);
    assert!(r.stderr.contains("too little power"), "{}", r.stderr);
    assert!(!r.stderr.contains("better beyond"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("a change up to that far beyond the band could pass unseen"),
        "{}",
        r.stderr
    );
}
