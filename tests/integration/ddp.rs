//! ddp_step under real mpirun: exact gradients on 1, 2 and 4 (oversubscribed) ranks, pure and
//! hybrid, with bucket capacities giving one bucket per layer, several layers per bucket and a
//! layer larger than a bucket; an honest overlap measurement (an injected slow link must show
//! up as exposed communication); report and compare on the new metrics.

use crate::common;

use common::csv::parse_line;
use common::{bin, mpirun_with, run_q, tmpdir};
use serde_json::Value;
use std::path::Path;

/// Layers of 64×48 (12 KiB in f32) ×3 and one of 200×40 (31.25 KiB). In backward order with a
/// 16 KiB cap: the 200×40 layer alone (larger than the cap), two 64×48 layers together, the
/// last 64×48 alone. With 1 B: one bucket per layer; with 1 MiB: one bucket for all.
const MODEL: &str = "64x48x3+200x40";
const BUCKETS: &str = "1B,16KiB,1MiB";

fn read(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("results.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    serde_json::from_str(&text).unwrap()
}

fn cases(v: &Value) -> Vec<Value> {
    v["cases"].as_array().unwrap().clone()
}

fn f(c: &Value, key: &str) -> f64 {
    c["ddp"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("ddp.{key} missing in {c}"))
}

/// `scalebench run -w ddp_step` on `np` ranks with `extra` options; returns the results.
fn ddp_run(tag: &str, np: u32, extra: &[&str]) -> (common::Ran, Value) {
    let (ran, v, _) = ddp_run_in(tag, np, extra);
    (ran, v)
}

/// As [`ddp_run`], also returning the run directory.
fn ddp_run_in(tag: &str, np: u32, extra: &[&str]) -> (common::Ran, Value, std::path::PathBuf) {
    let out = tmpdir(tag).join("out");
    let mut args = run_q(&out, &["-w", "ddp_step"]);
    args.extend_from_slice(extra);
    let ran = mpirun_with(np, &["--bind-to", "none"], &args);
    let v = if out.join("results.json").exists() {
        read(&out)
    } else {
        Value::Null
    };
    (ran, v, out)
}

/// Every case ok, validated and exact, with its buckets as DDP's assignment gives them.
fn assert_exact(v: &Value, devices: u64, ranks: u64, want_cases: usize) {
    let cs = cases(v);
    assert_eq!(cs.len(), want_cases, "{v}");
    for c in &cs {
        assert_eq!(c["status"], "ok", "{}: {}", c["params"], c["message"]);
        assert_eq!(c["wrong"], 0);
        assert!(c["check_iters"].as_u64().unwrap() >= 1);
        assert_eq!(c["tolerance"].as_f64(), Some(0.0));
        assert_eq!(
            (c["devices"].as_u64(), c["ranks"].as_u64()),
            (Some(devices), Some(ranks))
        );
        let buckets = c["ddp"]["buckets"].as_u64().unwrap();
        let f64_layers = c["params"]["dtype"] == "f64";
        let want = match c["params"]["bucket_bytes"].as_u64().unwrap() {
            1 => 4,
            // f64 doubles every layer to ≥ 24 KiB: each fills a 16 KiB bucket alone
            16384 if f64_layers => 4,
            16384 => 3,
            1048576 => 1,
            other => panic!("unexpected bucket size {other}"),
        };
        assert_eq!(buckets, want, "{}", c["params"]);
        assert_eq!(c["ddp"]["parameters"], 3 * 64 * 48 + 200 * 40);
        assert!(c["algbw_gbps"].is_null() && c["busbw_gbps"].is_null());
        // definitions hold in the record
        // exposed = mean over rounds of (step's slowest rank − compute's slowest rank)
        let exposed = f(c, "exposed_comm_s");
        let col = |v: &serde_json::Value| -> Vec<f64> {
            v["samples_s"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        };
        let step = col(&c["timing"]);
        let compute = col(&c["phases"][1]);
        let want = step.iter().zip(&compute).map(|(s, c)| s - c).sum::<f64>() / step.len() as f64;
        assert!(
            (exposed - want).abs() <= 1e-9 * want.abs().max(1e-6),
            "{exposed} vs {want}"
        );
        assert_eq!(c["ddp"]["exposed_definition"], "critical_path");
        let imbalance = f(c, "compute_imbalance_s");
        let compute_max_mean = compute.iter().sum::<f64>() / compute.len() as f64;
        assert!((imbalance - (compute_max_mean - f(c, "compute_s"))).abs() < 1e-9);
        assert!(imbalance >= -1e-12, "{imbalance}");
        if step.len() >= 2 {
            let ci = c["ddp"]["exposed_comm_ci_s"].as_array().unwrap();
            let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
            assert!(lo <= exposed && exposed <= hi, "{lo} {exposed} {hi}");
        }
        assert_eq!(f(c, "step_s"), c["timing"]["time_s"].as_f64().unwrap());
        let names: Vec<&str> = c["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["step_no_overlap", "compute", "comm"]);
        // the no-overlap step's exposed time, measured the same way, is the denominator
        let no_overlap = col(&c["phases"][0]);
        let want_no = no_overlap
            .iter()
            .zip(&compute)
            .map(|(s, c)| s - c)
            .sum::<f64>()
            / no_overlap.len() as f64;
        let exposed_no = f(c, "exposed_no_overlap_s");
        assert!(
            (exposed_no - want_no).abs() <= 1e-9 * want_no.abs().max(1e-6),
            "{exposed_no} vs {want_no}"
        );
        assert_eq!(c["ddp"]["overlap_definition"], "against_no_overlap");
        if devices == 1 {
            assert!(c["ddp"]["overlap_efficiency"].is_null());
        } else if c["ddp"]["overlap_efficiency"].is_null() {
            // only when the no-overlap step's median exposes nothing
            let (mn, mc) = (med_of(&no_overlap), med_of(&compute));
            assert!(mn - mc <= 0.0, "{mn} {mc}");
        } else {
            // from the medians over rounds of each mode (robust to preempted rounds)
            let e = f(c, "overlap_efficiency");
            let (ms, mn, mc) = (med_of(&step), med_of(&no_overlap), med_of(&compute));
            let want_e = (1.0 - (ms - mc) / (mn - mc)).clamp(0.0, 1.0);
            assert!((e - want_e).abs() < 1e-9, "{e} vs {want_e}");
        }
    }
}

/// The median of `v` (the mean of the middle two for an even count).
fn med_of(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The bucket layouts above assume one cap for all buckets: `--first-bucket 0B` (DDP's 1 MiB
/// first bucket would hold this whole model; it has a test of its own).
const QUICK: &[&str] = &[
    "-n",
    "2",
    "--warmup",
    "1",
    "--batch",
    "8",
    "--check",
    "1",
    "--first-bucket",
    "0B",
];

/// [`ddp_run`] with `--model MODEL --bucket-size BUCKETS EXTRA QUICK...`.
fn ddp_quick(tag: &str, np: u32, buckets: &str, extra: &[&str]) -> (common::Ran, Value) {
    let mut a = vec!["--model", MODEL, "--bucket-size", buckets];
    a.extend_from_slice(extra);
    a.extend_from_slice(QUICK);
    ddp_run(tag, np, &a)
}

#[test]
fn exact_gradients_on_one_rank() {
    let (ran, v) = ddp_quick("ddp1", 1, BUCKETS, &[]);
    ran.assert_code(0);
    assert_exact(&v, 1, 1, 3);
}

#[test]
fn exact_gradients_on_two_ranks_with_both_progress_strategies() {
    let (ran, v) = ddp_quick(
        "ddp2",
        2,
        BUCKETS,
        &["--progress", "thread,test", "--dtype", "f32,f64"],
    );
    ran.assert_code(0);
    assert_exact(&v, 2, 2, 2 * 3 * 2);
}

#[test]
fn exact_gradients_on_four_oversubscribed_ranks_with_an_uneven_strong_split() {
    // a global batch of 10 over 4 devices: 2, 3, 2, 3 samples
    let a = [
        "--model",
        MODEL,
        "--bucket-size",
        BUCKETS,
        "--scaling",
        "strong",
        "--batch",
        "10",
        "-n",
        "2",
        "--warmup",
        "1",
        "--first-bucket",
        "0B",
    ];
    let (ran, v, run_dir) = ddp_run_in("ddp4", 4, &a);
    ran.assert_code(0);
    assert_exact(&v, 4, 4, 3);
    assert!(cases(&v)
        .iter()
        .all(|c| c["ddp"]["global_batch"].as_u64() == Some(10)));
    // 4 ranks on this machine's 2 CPUs: oversubscribed. The ddp section marks every row and
    // computes no scaling efficiency from them, as every other section does.
    let oversubscribed = cases(&v)
        .iter()
        .all(|c| c["unrepresentative"].to_string().contains("oversubscribed"))
        || v["launches"].to_string().contains("oversubscribed");
    if !oversubscribed {
        return; // a machine with 4 or more CPUs: nothing to mark
    }
    let csv = ddp_report_csv("ddp4-r", &run_dir, &[]);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    let head = parse_line(csv.lines().next().unwrap());
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (eff, rep) = (col("scaling efficiency"), col("representative"));
    for r in &rows {
        let cells = parse_line(r);
        assert_eq!(
            cells[eff], "",
            "no efficiency from an oversubscribed step: {r}"
        );
        // Other reasons may join (an oversubscribed launch's launcher and kernel time can
        // read as another load on the host): oversubscription must be among them.
        assert!(
            cells[rep].starts_with("no: ") && cells[rep].contains("oversubscribed"),
            "{r}"
        );
    }
    // --include-unrepresentative uses them, marked
    let csv = ddp_report_csv("ddp4-ri", &run_dir, &["--include-unrepresentative"]);
    for r in csv.lines().skip(1) {
        let cells = parse_line(r);
        assert!(!cells[eff].is_empty(), "{r}");
        assert!(cells[rep].contains("(included)"), "{r}");
    }
}

/// The report's ddp_step table (CSV) of `run_dir`, with `extra` report options.
fn ddp_report_csv(tag: &str, run_dir: &std::path::Path, extra: &[&str]) -> String {
    let report = ddp_report(tag, run_dir, "csv", extra);
    std::fs::read_to_string(report.join("tables").join("ddp_step.csv")).unwrap()
}

/// `scalebench report --format FORMATS EXTRA RUN_DIR` into a fresh directory; that directory.
fn ddp_report(
    tag: &str,
    run_dir: &std::path::Path,
    formats: &str,
    extra: &[&str],
) -> std::path::PathBuf {
    let report = tmpdir(tag).join("report");
    let out = std::process::Command::new(bin())
        .args(["report", "--format", formats, "--out"])
        .arg(&report)
        .args(extra)
        .arg(run_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    report
}

#[test]
fn exact_gradients_in_hybrid_mode() {
    // 2 ranks × 2 worker devices on 2 emulated nodes, both progress strategies
    let (ran, v) = ddp_quick(
        "ddph",
        2,
        BUCKETS,
        &[
            "--topology",
            "hybrid",
            "--nodes",
            "2",
            "--devices-per-node",
            "2",
            "--progress",
            "thread,test",
        ],
    );
    ran.assert_code(0);
    assert_exact(&v, 4, 2, 2 * 3);
    // one rank driving 2 devices
    let (ran, v) = ddp_quick(
        "ddph1",
        1,
        "16KiB",
        &["--topology", "hybrid", "--devices-per-node", "2"],
    );
    ran.assert_code(0);
    assert_exact(&v, 2, 1, 1);
}

#[test]
fn a_corrupted_gradient_is_counted_wrong_with_exit_3() {
    let (ran, v) = ddp_quick("ddpbad", 2, "16KiB", &["--fault", "corrupt"]);
    ran.assert_code(3);
    let c = &cases(&v)[0];
    assert_eq!(c["status"], "wrong");
    // device 0's first input sample is off by one in layer 0: a row of its gradient is wrong
    // (in both validated steps), nothing else
    let wrong = c["wrong"].as_u64().unwrap();
    assert!(wrong > 0 && wrong <= 2 * 2 * 48, "{wrong}");
}

/// DDP's first bucket: 1 MiB by default (recorded with the case), its own cap otherwise, exact
/// gradients with either layout.
#[test]
fn the_first_bucket_has_its_own_cap_and_is_recorded() {
    let mut a = vec![
        "--model",
        MODEL,
        "--bucket-size",
        "16KiB",
        "--first-bucket",
        "1MiB,40KiB",
    ];
    a.extend_from_slice(&QUICK[..QUICK.len() - 2]);
    let (ran, v) = ddp_run("ddpfirst", 2, &a);
    ran.assert_code(0);
    let cs = cases(&v);
    assert_eq!(cs.len(), 2);
    for c in &cs {
        assert_eq!(c["status"], "ok", "{}", c["message"]);
        assert_eq!(c["wrong"], 0);
        // 1 MiB holds the whole 67 KiB model; 40 KiB closes after the 200×40 layer and one
        // 64×48 (43 KiB), then 16 KiB takes the other two 64×48 layers (24 KiB)
        let want = match c["params"]["first_bucket_bytes"].as_u64() {
            Some(1048576) => 1,
            Some(40960) => 2,
            other => panic!("first_bucket_bytes {other:?}"),
        };
        assert_eq!(c["ddp"]["buckets"].as_u64(), Some(want), "{}", c["params"]);
    }
    // the default is DDP's, and a spec sets it with `first_bucket_sizes`
    let dir = tmpdir("ddpfirst-spec");
    let spec = dir.join("s.toml");
    std::fs::write(&spec, "name = \"s\"\n[axes]\nworkloads = \"ddp_step\"\n").unwrap();
    let ran = common::solo(&["plan", "--json", spec.to_str().unwrap()]);
    ran.assert_code(0);
    let compact: String = ran.stdout.split_whitespace().collect();
    assert!(
        compact.contains("\"first_bucket_bytes\":1048576"),
        "{}",
        ran.stdout
    );
    std::fs::write(
        &spec,
        "name = \"s\"\n[axes]\nworkloads = \"ddp_step\"\nfirst_bucket_sizes = [\"0B\", \"1MiB\", \"4MiB\"]\n",
    )
    .unwrap();
    let ran = common::solo(&["plan", spec.to_str().unwrap()]);
    ran.assert_code(0);
    assert!(ran.stdout.contains("3 cases"), "{}", ran.stdout);

    // PyTorch's rule: a given bucket cap caps the first bucket too (recorded as 0 = the same
    // cap); given both, both are used as given
    std::fs::write(
        &spec,
        "name = \"s\"\n[axes]\nworkloads = \"ddp_step\"\nbucket_sizes = \"4MiB\"\n",
    )
    .unwrap();
    let first = |args: &[&str]| -> Vec<u64> {
        let ran = common::solo(args);
        ran.assert_code(0);
        let v: Value = serde_json::from_str(&ran.stdout).unwrap();
        let mut out = Vec::new();
        collect_key(&v, "first_bucket_bytes", &mut out);
        out
    };
    assert_eq!(first(&["plan", "--json", spec.to_str().unwrap()]), vec![0]);
    // (the command line's rule: plan's unit test `first_bucket_follows_pytorchs_rule`)
}

/// Every value of `key` anywhere in `v`.
fn collect_key(v: &Value, key: &str, out: &mut Vec<u64>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == key {
                    if let Some(n) = x.as_u64() {
                        out.push(n);
                    }
                } else {
                    collect_key(x, key, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_key(x, key, out)),
        _ => {}
    }
}

/// Step figures of one ddp_step case on `np` ranks, with a slow link of `delay_ms` per bucket.
fn overlap_case(np: u32, delay_ms: Option<u32>) -> Value {
    let fault = delay_ms.map(|ms| format!("slow_comm:{ms}"));
    // 8 layers of 256×256 in 8 buckets: each bucket's all-reduce can hide behind the
    // backward GEMMs of the layers below it, except the last one's.
    let mut a = vec![
        "--model",
        "256x256x8",
        "--bucket-size",
        "256KiB",
        "--first-bucket",
        "0B",
        "--batch",
        "256",
        "-n",
        "5",
        "--warmup",
        "1",
    ];
    if let Some(f) = &fault {
        a.extend_from_slice(&["--fault", f]);
    }
    let (ran, v) = ddp_run("ddpov", np, &a);
    ran.assert_code(0);
    let c = cases(&v).remove(0);
    assert_eq!(c["status"], "ok");
    assert_eq!(c["ddp"]["buckets"], 8);
    c
}

#[test]
fn overlap_measurement_is_honest() {
    // One device: nothing to communicate, so (almost) nothing is exposed.
    let one = overlap_case(1, None);
    assert!(one["ddp"]["overlap_efficiency"].is_null());
    assert!(
        f(&one, "exposed_comm_s") <= 0.5 * f(&one, "compute_s") + 2e-3,
        "one device exposed {} of compute {}",
        f(&one, "exposed_comm_s"),
        f(&one, "compute_s")
    );

    // A slow serial link: each bucket takes ≥ D. The last bucket starts after backward, so at
    // least D is exposed; all 8 buckets together take ≥ 8·D.
    let short = overlap_case(2, Some(2));
    let long = overlap_case(2, Some(60));
    for (c, d) in [(&short, 2e-3), (&long, 60e-3)] {
        // a lower bound the injected delay guarantees whatever the machine's load
        assert!(
            f(c, "comm_s") >= 0.95 * 8.0 * d,
            "comm_s {}",
            f(c, "comm_s")
        );
    }
    // Only the long delay stands far above the compute's run-to-run noise.
    assert!(
        f(&long, "exposed_comm_s") >= 0.9 * 60e-3,
        "exposed {} < one bucket's delay",
        f(&long, "exposed_comm_s")
    );
    assert!(f(&long, "step_no_overlap_s") >= f(&long, "compute_s") + 0.9 * 8.0 * 60e-3);
    // With 30× the delay, the exposed time grows and the overlap efficiency falls; with the
    // long delay the link, not the compute, sets the step: at most the compute is hidden.
    assert!(f(&long, "exposed_comm_s") > f(&short, "exposed_comm_s") + 0.1);
    let (e_short, e_long) = (
        f(&short, "overlap_efficiency"),
        f(&long, "overlap_efficiency"),
    );
    assert!(e_long < e_short, "efficiency {e_long} (slow) vs {e_short}");
    assert!(
        f(&long, "step_s") >= 8.0 * 60e-3 * 0.95,
        "step {} shorter than the link allows",
        f(&long, "step_s")
    );
    assert!(e_long <= f(&long, "compute_s") / f(&long, "comm_s") + 0.05);
}

#[test]
fn report_and_compare_handle_the_step_metrics() {
    // progress=test: 2 ranks keep 2 threads busy on this 2-CPU machine, so the cases are
    // representative and every section of the report uses them (a progress thread each would
    // make 4, and the report would set them apart, see representative.rs).
    let mut a = vec![
        "--model",
        MODEL,
        "--bucket-size",
        "1B,1MiB",
        "--progress",
        "test",
    ];
    a.extend_from_slice(QUICK);
    let (ran, v, run_dir) = ddp_run_in("ddprep", 2, &a);
    ran.assert_code(0);
    assert_eq!(cases(&v).len(), 2);
    let dir = ddp_report("ddprep-r", &run_dir, "md,csv,svg", &[])
        .parent()
        .unwrap()
        .to_path_buf();
    let md = std::fs::read_to_string(dir.join("report").join("report.md")).unwrap();
    assert!(md.contains("Training step (ddp\\_step)"), "{md}");
    assert!(md.contains("overlap efficiency") && md.contains("exposed\\_comm\\_s"));
    let csv =
        std::fs::read_to_string(dir.join("report").join("tables").join("ddp_step.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    // charts: the stacked bar of compute and exposed communication (one filled rectangle
    // per part and device count, plus the legend's), and overlap efficiency against the
    // bucket capacity (2 capacities measured at 2 devices)
    let charts = dir.join("report").join("charts");
    let bars = std::fs::read_to_string(charts.join("ddp_breakdown_1.svg")).unwrap();
    for series in [
        "compute (compute_s)",
        "exposed communication",
        "step without overlap",
    ] {
        assert!(
            bars.contains(series),
            "{series} missing from the breakdown chart"
        );
    }
    // a bar and a legend swatch in each part's colour (compute blue, exposed orange), or in
    // grey when the chart is titled not representative (the host was busy: other work on it)
    // (CI at 0dc21b4 failed here: the title was cut at two lines, losing the warning; a
    // long title now shrinks, and the warning is never cut)
    let grey = bars.contains("#AFAFAF");
    let fills: &[&str] = if grey {
        assert!(
            bars.contains("NOT") && bars.contains("REPRESENTATIVE"),
            "a grey chart's title says why: {bars}"
        );
        // compute and exposed communication in two shades of grey (hollow: may be strokes)
        &["#AFAFAF", "#737373"]
    } else {
        &["fill=\"#0072B2\"", "fill=\"#D55E00\""]
    };
    for fill in fills {
        assert!(bars.matches(fill).count() >= 2, "{fill}: {bars}");
    }
    // the straggler analysis reads the step times' per-rank means like any case's; cases of
    // a launch the host's other work marked are set apart from it, and the report says so
    if grey {
        assert!(
            md.contains("2 cases are not representative"),
            "set apart: {md}"
        );
    } else {
        assert!(
            md.contains("2 measured cases with 2 or more ranks"),
            "stragglers: {md}"
        );
    }
    let ov = std::fs::read_to_string(charts.join("ddp_overlap.svg")).unwrap();
    assert!(
        ov.contains("overlap efficiency") && ov.contains("2 devices"),
        "{ov}"
    );
    assert!(md.contains("charts/ddp_breakdown_1.svg") || md.contains("charts/ddp_breakdown_1.png"));

    // compare judges ddp_step by step time (lower is better); the command refuses a run
    // compared with itself, so the library's comparison is asked directly
    let f = scalebench::results::io::read_results(&run_dir).unwrap();
    let c = scalebench::compare::compare(&f, &f, &scalebench::compare::Settings::default());
    assert!(!c.cases.is_empty());
    for case in &c.cases {
        let s = case.stats.unwrap_or_else(|| panic!("{case:?}"));
        assert_eq!(s.metric.name(), "time", "{case:?}");
        assert!(!s.metric.higher_is_better());
    }
}

#[test]
fn specs_sweep_models_and_bucket_sizes() {
    let ex = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ddp-scaling.toml");
    let ran = common::solo(&["plan", ex]);
    ran.assert_code(0);
    // nodes 2 × ranks per node 2 × topology 2 × bucket sizes 2
    assert!(
        ran.stdout.contains("16 cases in 8 launches"),
        "{}",
        ran.stdout
    );

    let dir = tmpdir("ddpspec");
    let spec = dir.join("s.toml");
    std::fs::write(
        &spec,
        "name = \"s\"\n[axes]\nworkloads = \"ddp_step\"\nmodels = [\"mlp-tiny\", \"64x32x2+32x8\"]\nbucket_sizes = \"1KiB:4KiB:x2\"\nprogress = [\"thread\", \"test\"]\n",
    )
    .unwrap();
    let ran = common::solo(&["plan", spec.to_str().unwrap()]);
    ran.assert_code(0);
    assert!(ran.stdout.contains("12 cases"), "{}", ran.stdout);

    // a model that is not one names the file, the line and the way to write one
    std::fs::write(
        &spec,
        "name = \"s\"\n[axes]\nworkloads = \"ddp_step\"\nmodels = [\"mlp-tiny\", \"64by32\"]\n",
    )
    .unwrap();
    let ran = common::solo(&["plan", spec.to_str().unwrap()]);
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("s.toml:4") && ran.stderr.contains("IxO"),
        "{}",
        ran.stderr
    );
    // and on the command line
    let ran = common::solo(&["run", "-w", "ddp_step", "--model", "64by32"]);
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("--model") && ran.stderr.contains("mlp-tiny"),
        "{}",
        ran.stderr
    );
}
