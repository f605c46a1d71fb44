//! `scalebench plan` and `scalebench sweep` with the real binary and real mpirun: a full
//! product sweep, a killed and resumed sweep, hanging and crashing launches, malformed specs.

use crate::common;

use common::wire::ResultsFile;
use common::{bin, read_results, solo, tmpdir};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn write_spec(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// CPUs this process may use (what every rank gets with `--bind-to none`).
fn allowed_cpus() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    let mut out = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

fn cpulist(v: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let s = v[i];
        let mut e = s;
        while i + 1 < v.len() && v[i + 1] == e + 1 {
            i += 1;
            e = v[i];
        }
        out.push(if s == e {
            s.to_string()
        } else {
            format!("{s}-{e}")
        });
        i += 1;
    }
    out.join(",")
}

/// `core` binding written out independently: node k of K on this host owns an equal contiguous
/// share of its CPUs; device i of D owns an equal contiguous block of that (or, with more
/// devices than CPUs, the CPU at i·n/D).
fn expected_core_binding(cpus: &[u32], node: u32, nodes: u32, device: u32, devices: u32) -> String {
    let n = cpus.len();
    let share = &cpus[n * node as usize / nodes as usize..n * (node as usize + 1) / nodes as usize];
    let m = share.len();
    let (d, i) = (devices as usize, device as usize);
    if d > m {
        return share[i * m / d].to_string();
    }
    cpulist(&share[m * i / d..m * (i + 1) / d])
}

const FULL: &str = r#"
name = "full-product"
[axes]
nodes = [1, 2]
devices_per_node = [1, 2]
topology = ["pure", "hybrid"]
binding = ["none", "core"]
workloads = ["allreduce", "matmul"]
sizes = ["1KiB", "64KiB"]
dims = 48
[run]
time_budget_s = 0.02
[launch]
oversubscribe = true
timeout_s = 120
"#;

#[test]
fn a_full_product_sweep_measures_and_binds_every_case() {
    let dir = tmpdir("sweep-full");
    let spec = write_spec(&dir, "full.toml", FULL);
    let out = dir.join("out");
    let ran = solo(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    ran.assert_code(0);
    let r = read_results(&out);
    // 2 nodes × 2 ranks per node × 2 topologies × 2 bindings = 16 launches, each with
    // 2 sizes × 2 placements of allreduce + 1 matmul
    assert_eq!(r.launches.len(), 16);
    assert_eq!(r.cases.len(), 16 * 5);
    for c in &r.cases {
        assert_eq!(
            (c.status.as_str(), c.wrong),
            ("ok", 0),
            "{:?}: {:?}",
            c.params,
            c.message
        );
    }
    // pure and hybrid agree: the same collective validated exactly on the same devices
    let mut by_key: HashMap<(u32, u32, String, u64, bool), Vec<&str>> = HashMap::new();
    for c in r.cases.iter().filter(|c| c.params.workload == "allreduce") {
        let p = &c.params;
        by_key
            .entry((
                p.nodes,
                p.devices_per_node,
                p.binding.clone(),
                c.bytes.unwrap(),
                p.in_place.unwrap(),
            ))
            .or_default()
            .push(p.topology.as_str());
    }
    assert_eq!(by_key.len(), 32);
    assert!(by_key
        .values()
        .all(|t| t.len() == 2 && t.contains(&"pure") && t.contains(&"hybrid")));
    // the affinity in force matches the policy
    let cpus = allowed_cpus();
    for l in &r.launches {
        let p = l.provenance.as_ref().expect("provenance");
        assert!(l.overhead_s.is_some() && l.wall_s.unwrap() > 0.0);
        assert_eq!(p.emulated_nodes, l.shape.nodes > 1);
        for rank in &p.ranks {
            for d in &rank.devices {
                let want = match l.shape.binding.as_str() {
                    "none" => cpulist(&cpus),
                    _ => expected_core_binding(
                        &cpus,
                        rank.node,
                        l.shape.nodes,
                        d.local_index,
                        l.shape.devices_per_node,
                    ),
                };
                assert_eq!(
                    d.cpus, want,
                    "launch {} rank {} device {}",
                    l.launch_id, rank.rank, d.index
                );
            }
        }
    }
    // the table was printed, with the summary
    assert!(ran.stdout.contains("# 80 cases: 80 ok"), "{}", ran.stdout);
    no_hedged_plurals(&ran.stdout);
    no_hedged_plurals(&ran.stderr);
    // resuming a finished sweep runs nothing
    let again = solo(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--resume",
        "-q",
    ]);
    again.assert_code(0);
    assert_eq!(std::fs::read_dir(out.join("launches")).unwrap().count(), 16);
}

/// All cases in the journals of a run directory: id → started_unix_s.
fn journaled(out: &Path) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for d in std::fs::read_dir(out.join("launches")).unwrap() {
        let j = d.unwrap().path().join("journal.jsonl");
        for line in std::fs::read_to_string(j).unwrap_or_default().lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                if v["type"] == "case" {
                    m.insert(
                        v["id"].as_str().unwrap().to_string(),
                        v["started_unix_s"].as_f64().unwrap(),
                    );
                }
            }
        }
    }
    m
}

#[test]
fn a_killed_sweep_resumes_without_losing_or_rerunning_cases() {
    let dir = tmpdir("sweep-kill");
    let spec = write_spec(
        &dir,
        "kill.toml",
        "[axes]\nnodes = [1, 2, 3]\ndevices_per_node = [1, 2]\nsizes = [\"64\", \"4KiB\", \"64KiB\"]\n[run]\ntime_budget_s = 0.05\n[launch]\noversubscribe = true\n",
    );
    let out = dir.join("out");
    // The sweep runs in the background: the MPI lock is held from its start to the resume's end.
    let mpi = common::mpi_lock();
    let mut child = Command::new(bin())
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once the first launch is done and another is under way.
    let t0 = Instant::now();
    loop {
        let attempts: Vec<PathBuf> = std::fs::read_dir(out.join("launches"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        let finished = attempts
            .iter()
            .filter(|a| a.join("outcome.json").exists())
            .count();
        if finished >= 1 && attempts.len() > finished {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before it could be killed"
        );
        assert!(t0.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let before = journaled(&out);
    assert!(!before.is_empty());
    // the launch that was running went down with the driver
    let stray = Command::new("pgrep")
        .args(["-f", out.join("launches").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        stray.stdout.is_empty(),
        "processes of the killed sweep still run: {}",
        String::from_utf8_lossy(&stray.stdout)
    );

    let ran = common::solo_held(
        &mpi,
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--resume",
        ],
    );
    drop(mpi);
    ran.assert_code(0);
    let r: ResultsFile = read_results(&out);
    assert_eq!(
        r.cases.len(),
        3 * 2 * 3 * 2,
        "every case of the plan is present"
    );
    let after: BTreeMap<&str, f64> = r
        .cases
        .iter()
        .map(|c| (c.id.as_str(), c.started_unix_s))
        .collect();
    assert_eq!(after.len(), r.cases.len(), "ids are unique");
    for (id, started) in &before {
        assert_eq!(
            after.get(id.as_str()),
            Some(started),
            "case {id} was lost or run again"
        );
    }
    assert!(r.cases.iter().all(|c| c.status == "ok"));
    // The killed attempt's own record said `incomplete`; kept, it would make compare and
    // report warn about missing cases that are all there (issue 13, item 11).
    let statuses: Vec<(&str, &str)> = r
        .launches
        .iter()
        .map(|l| (l.launch_id.as_str(), l.status.as_str()))
        .collect();
    assert!(statuses.iter().all(|(_, s)| *s == "ok"), "{statuses:?}");
}

#[test]
fn hanging_and_crashing_launches_are_recorded_and_the_sweep_goes_on() {
    let dir = tmpdir("sweep-hang");
    let spec = write_spec(
        &dir,
        "hang.toml",
        "[axes]\ndevices_per_node = 2\nsizes = [\"64\", \"128\"]\nin_place = \"no\"\n[[zip]]\nnodes = [1, 2, 3]\nfault = [\"hang\", \"none\", \"crash\"]\n[run]\ntime_budget_s = 0.02\n[launch]\noversubscribe = true\ntimeout_s = 4\n",
    );
    let out = dir.join("out");
    // timed from when it holds the MPI lock: the wait for another test's launches is not the
    // sweep's
    let mpi = common::mpi_lock();
    let t0 = Instant::now();
    let ran = common::solo_held(
        &mpi,
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let took = t0.elapsed();
    drop(mpi);
    ran.assert_code(3);
    assert!(took < Duration::from_secs(60));
    let r = read_results(&out);
    assert_eq!(r.cases.len(), 6);
    let by_nodes = |n: u32| {
        r.cases
            .iter()
            .filter(|c| c.params.nodes == n)
            .collect::<Vec<_>>()
    };
    for c in by_nodes(1) {
        assert_eq!(c.status, "timeout");
        assert!(
            c.message.as_deref().unwrap().contains("time limit"),
            "{:?}",
            c.message
        );
    }
    assert!(by_nodes(2).iter().all(|c| c.status == "ok"));
    for c in by_nodes(3) {
        assert_eq!(c.status, "failed");
        assert!(
            c.message
                .as_deref()
                .unwrap()
                .contains("aborting on purpose"),
            "{:?}",
            c.message
        );
    }
    let statuses: Vec<&str> = r.launches.iter().map(|l| l.status.as_str()).collect();
    assert_eq!(statuses, vec!["timeout", "ok", "failed"]);
    assert!(r.launches[2]
        .stderr_tail
        .as_deref()
        .unwrap()
        .contains("fault=crash"));
    assert!(ran.stderr.contains("timed out after 4 s"), "{}", ran.stderr);
    // nothing of the hung launch survives
    let stray = Command::new("pgrep")
        .args(["-f", out.join("launches").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        stray.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&stray.stdout)
    );
}

#[test]
fn malformed_specs_are_rejected_with_file_line_and_fix() {
    let dir = tmpdir("sweep-bad");
    let cases: &[(&str, usize, &str)] = &[
        ("[axes]\nnodes = [1, \n", 2, "unclosed array"),
        ("nmae = \"x\"\n", 1, "unknown field `nmae`"),
        ("[axes]\nnodez = 2\n", 2, "did you mean `nodes`"),
        ("[axes]\nsizes = []\n", 2, "empty"),
        ("[axes]\nsizes = \"12Q\"\n", 2, "not a size"),
        (
            "[axes]\nworkloads = [\"allreduce\", \"allgathr\"]\n",
            2,
            "unknown workload 'allgathr'",
        ),
        ("[axes]\nnodes = \"two\"\n", 2, "expected a whole number"),
        ("[axes]\ndevices_per_node = 0\n", 2, "out of range"),
        (
            "[[zip]]\nnodes = [1, 2]\ndims = [64]\n",
            2,
            "same number of values",
        ),
        (
            "[axes]\nnodes = 1\n[[zip]]\nnodes = [1, 2]\ndims = [1, 2]\n",
            4,
            "already given",
        ),
        (
            "[[exclude]]\ntopologi = \"hybrid\"\n",
            2,
            "did you mean `topology`",
        ),
        (
            "[axes]\nnodes = 2\ndevices_per_node = 64\n",
            3,
            "oversubscribe = true",
        ),
        ("[axes]\nsizes = \"6B\"\n", 2, "multiple of 4 bytes"),
        (
            "[axes]\nworkloads = \"reduce\"\nroots = 5\n",
            3,
            "not a device",
        ),
        (
            "[run]\ntime_budget_s = -1.0\n",
            2,
            "positive number of seconds",
        ),
        ("[launch]\ntimeout = 5\n", 2, "unknown field `timeout`"),
        (
            "[launch.env]\n\"A B\" = \"x\"\n",
            2,
            "environment variable name",
        ),
        ("[launch]\nreserved_cores = \"a-b\"\n", 2, "not a CPU list"),
        ("[axes]\nin_place = \"sometimes\"\n", 2, "\"both\""),
        (
            "[axes]\nworkload = \"allreduce\"\nworkloads = \"matmul\"\n",
            3,
            "given twice",
        ),
        ("[[zip]]\nnodes = [1, 2]\n", 1, "at least two axes"),
        ("[axes]\ndims = \"12x\"\n", 2, "matrix shape"),
        ("[axes]\ntopology = [\"pure\", 3]\n", 2, "expected a name"),
        // [links] (issue 29): each value refused at its line with the key and the fix
        ("[links]\nschedule = \"ring\"\n", 2, "\"round_robin\""),
        ("[links]\nsize = \"2GiB\"\n", 2, "from 1 B to 1 GiB"),
        ("[links]\niters = 0\n", 2, "links.iters"),
        ("[links]\nmin_effect = 1.5\n", 2, "below 1"),
        ("[links]\nz = -1\n", 2, "links.z"),
        ("[links]\ntimeout_s = 0\n", 2, "positive number of seconds"),
        ("[links]\nsizes = \"1MiB\"\n", 2, "unknown field `sizes`"),
        ("[links]\nschedule = \"rail\"\n", 2, "the rail schedule"),
        (
            "[links]\nbackend = \"tcp\"\n",
            2,
            "\"cpu\" (MPI between host buffers, the default), \"cuda\" (NCCL send/recv between GPUs, one per rank) or \"rocm\"",
        ),
        ("[links]\nfloor_fraction = 2\n", 2, "links.floor_fraction"),
    ];
    assert!(cases.len() >= 15);
    for (i, (text, line, needle)) in cases.iter().enumerate() {
        let spec = write_spec(&dir, &format!("bad{i}.toml"), text);
        // What only this machine cannot do is a note for `plan`, an error for `sweep`.
        let local_only = needle.contains("oversubscribe") || needle.contains("rail schedule");
        for cmd in ["plan", "sweep"] {
            if local_only && cmd == "plan" {
                let ran = solo(&["plan", spec.to_str().unwrap()]);
                ran.assert_code(0);
                assert!(
                    ran.stderr.contains("cannot run as a local sweep here")
                        && ran.stderr.contains(needle),
                    "{}",
                    ran.stderr
                );
                continue;
            }
            let ran = solo(
                &[
                    cmd,
                    spec.to_str().unwrap(),
                    "--out",
                    dir.join(format!("out{i}")).to_str().unwrap(),
                ]
                .as_slice()[..if cmd == "plan" { 2 } else { 4 }],
            );
            ran.assert_code(2);
            let want = format!("{}:{line}:", spec.display());
            assert!(
                ran.stderr.contains(&want),
                "spec {i} ({cmd}): expected {want} in: {}",
                ran.stderr
            );
            assert!(
                ran.stderr.contains(needle),
                "spec {i} ({cmd}): expected {needle:?} in: {}",
                ran.stderr
            );
            assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
        }
        assert!(
            !dir.join(format!("out{i}")).exists(),
            "a bad spec left a run directory"
        );
    }
}

/// Counts agree with their nouns ("1 case", "80 cases"), never "case(s)" or "launch(es)"; a
/// unit in a column header ("wall (s)") is not a plural.
fn no_hedged_plurals(text: &str) {
    for l in text.lines() {
        for hedge in ["(s)", "(es)"] {
            for (at, _) in l.match_indices(hedge) {
                let before = l[..at].chars().next_back();
                assert!(
                    !before.is_some_and(|c| c.is_alphabetic()),
                    "a hedged plural: {l}"
                );
            }
        }
    }
}

#[test]
fn plan_lists_launches_and_cases() {
    let dir = tmpdir("plan");
    let spec = write_spec(&dir, "p.toml", FULL);
    let ran = solo(&["plan", spec.to_str().unwrap(), "--cases"]);
    ran.assert_code(0);
    assert!(
        ran.stdout.contains("80 cases in 16 launches"),
        "{}",
        ran.stdout
    );
    no_hedged_plurals(&ran.stdout);
    assert_eq!(
        ran.stdout
            .lines()
            .filter(|l| l.starts_with("launch "))
            .count(),
        16
    );
    assert_eq!(
        ran.stdout.lines().filter(|l| l.starts_with("    ")).count(),
        80
    );
    let json = solo(&["plan", spec.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 16);
    let dry = solo(&[
        "sweep",
        spec.to_str().unwrap(),
        "--dry-run",
        "--out",
        dir.join("never").to_str().unwrap(),
    ]);
    dry.assert_code(0);
    assert_eq!(
        dry.stdout
            .lines()
            .filter(|l| l.starts_with("mpirun -np"))
            .count(),
        16
    );
    assert!(!dir.join("never").exists());
}

/// Issue 45 item 7: `plan` prints an ETA and warns how many cases will be skipped and why (8 B
/// over 2 devices: all-gather and all-to-all split it below one 16-byte block per device),
/// and the sweep then records exactly those cases as skipped, no more, no fewer.
#[test]
fn plan_gives_an_eta_and_the_cases_the_sweep_will_skip() {
    let dir = tmpdir("plan-forecast");
    let spec = write_spec(
        &dir,
        "f.toml",
        "name = \"f\"\n[axes]\nworkloads = [\"allreduce\", \"allgather\", \"alltoall\"]\ndevices_per_node = 2\nsizes = \"8B,1KiB\"\nin_place = \"no\"\n[run]\ntime_budget_s = 0.05\n[launch]\noversubscribe = true\n",
    );
    let spec_s = spec.to_str().unwrap();
    let ran = solo(&["plan", spec_s]);
    ran.assert_code(0);
    println!("{}", ran.stdout);
    let eta = ran
        .stdout
        .lines()
        .find(|l| l.starts_with("# ETA about "))
        .unwrap_or_else(|| panic!("no ETA: {}", ran.stdout));
    assert!(eta.contains("one launch at a time"), "{eta}");
    let warning = ran
        .stdout
        .lines()
        .find(|l| l.starts_with("# warning: "))
        .unwrap_or_else(|| panic!("no skip warning: {}", ran.stdout));
    assert!(
        warning.contains("2 of 6 cases will be skipped")
            && warning.contains("(allgather, alltoall)")
            && warning.contains("8 bytes over 2 devices"),
        "{warning}"
    );
    // --json keeps stdout the plan alone and says the same on stderr
    let json = solo(&["plan", spec_s, "--json"]);
    json.assert_code(0);
    serde_json::from_str::<serde_json::Value>(&json.stdout).unwrap();
    assert!(
        json.stderr.contains("2 of 6 cases will be skipped"),
        "{}",
        json.stderr
    );
    // the sweep skips what the plan said
    let out = dir.join("out");
    let ran = solo(&["sweep", spec_s, "--out", out.to_str().unwrap()]);
    assert!(
        ran.code == 0,
        "exit {}\n{}\n{}",
        ran.code,
        ran.stdout,
        ran.stderr
    );
    // and says so again where it starts, as plan did
    assert!(
        ran.stderr
            .contains("# warning: 2 of 6 cases will be skipped"),
        "{}",
        ran.stderr
    );
    let r = read_results(&out);
    let skipped: Vec<String> = r
        .cases
        .iter()
        .filter(|c| c.status == "skipped")
        .map(|c| format!("{} {:?}", c.params.workload, c.params.requested_bytes))
        .collect();
    assert_eq!(r.cases.len(), 6);
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped.iter().all(|x| x.ends_with("Some(8)")),
        "{skipped:?}"
    );
}

#[test]
fn every_example_spec_plans() {
    let mut n = 0;
    for e in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let ran = solo(&["plan", p.to_str().unwrap()]);
        ran.assert_code(0);
        assert!(
            ran.stdout.contains(" cases in ") || ran.stdout.contains(" case in "),
            "{}: {}",
            p.display(),
            ran.stdout
        );
        n += 1;
    }
    assert!(n >= 6, "examples/ holds the specs users copy");
}

/// A slow one-launch sweep (14 sizes, each paused 0.7 s before it is measured, so it runs for
/// 10 s or more on any machine) started in the background, optionally through
/// `mpirun_wrapper`; returns the driver once its launch has journaled `cases` cases.
fn slow_sweep(dir: &Path, out: &Path, mpirun: Option<&Path>, cases: usize) -> std::process::Child {
    let spec = write_spec(
        dir,
        "slow.toml",
        "[axes]\ndevices_per_node = 2\nsizes = \"8B:64KiB:x2\"\nin_place = \"no\"\nfault = \"pause:700\"\n[run]\ntime_budget_s = 0.05\n[launch]\noversubscribe = true\n",
    );
    let mut cmd = Command::new(bin());
    cmd.args([
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    if let Some(m) = mpirun {
        cmd.args(["--mpirun", m.to_str().unwrap()]);
    }
    let mut child = cmd
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !out.join("launches").exists() || journaled(out).len() < cases {
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended early");
        assert!(t0.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Processes whose command line holds `marker` (the launch's directory).
fn running_with(marker: &Path) -> String {
    let o = Command::new("pgrep")
        .args(["-f", marker.to_str().unwrap()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// (id, started, finished) of every case an attempt directory's journal holds.
fn attempt_cases(attempt: &Path) -> Vec<(String, f64, f64)> {
    std::fs::read_to_string(attempt.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "case")
        .map(|v| {
            (
                v["id"].as_str().unwrap().to_string(),
                v["started_unix_s"].as_f64().unwrap(),
                v["finished_unix_s"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_resume_ends_the_launch_a_killed_driver_left_running_before_measuring() {
    let dir = tmpdir("sweep-orphan");
    let out = dir.join("out");
    // A launcher that outlives its driver: it ignores the SIGTERM the driver's death sends it
    // (as a slow mpirun does for a while), and its ranks go on measuring.
    let wrapper = dir.join("mpirun-wrapper");
    std::fs::write(
        &wrapper,
        "#!/bin/bash\nmpirun \"$@\" &\nchild=$!\ntrap '' TERM HUP\nwait $child\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    // The sweep runs in the background: the MPI lock is held from its start to the resume's end.
    let mpi = common::mpi_lock();
    let mut driver = slow_sweep(&dir, &out, Some(&wrapper), 2);
    let attempt = out
        .join("launches")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let live: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(attempt.join("live.json")).unwrap()).unwrap();
    assert!(live["pgid"].as_i64().unwrap() > 1, "{live}");
    assert!(live["heartbeat_unix_s"].as_f64() >= live["started_unix_s"].as_f64());
    driver.kill().unwrap(); // SIGKILL: no chance to stop its launch
    driver.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !running_with(&attempt).is_empty(),
        "the scenario needs the launch to outlive its driver"
    );
    let ran = common::solo_held(
        &mpi,
        &[
            "sweep",
            out.join("spec.toml").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--resume",
        ],
    );
    drop(mpi);
    ran.assert_code(0);
    assert!(
        ran.stderr.contains("was still running") && ran.stderr.contains("ended it"),
        "{}",
        ran.stderr
    );
    assert!(
        running_with(&attempt).is_empty(),
        "the old launch still runs"
    );
    assert!(!attempt.join("live.json").exists());
    // No case was measured twice, nor while the old launch still ran.
    let mut attempts: Vec<PathBuf> = out
        .join("launches")
        .read_dir()
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    attempts.sort();
    assert_eq!(attempts.len(), 2);
    let (old, new) = (attempt_cases(&attempts[0]), attempt_cases(&attempts[1]));
    assert!(!old.is_empty() && !new.is_empty());
    for (id, ..) in &new {
        assert!(old.iter().all(|o| &o.0 != id), "case {id} measured twice");
    }
    let old_end = old.iter().map(|c| c.2).fold(0.0, f64::max);
    let new_start = new.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    assert!(
        old_end <= new_start,
        "the launches overlapped: {old_end} > {new_start}"
    );
    let r: ResultsFile = read_results(&out);
    assert_eq!(r.cases.len(), 14);
    assert!(r.cases.iter().all(|c| c.status == "ok"));
    assert_eq!(r.launches.len(), 1, "the launch is listed once");
}

#[test]
fn sighup_stops_a_sweep_as_sigterm_does() {
    let dir = tmpdir("sweep-hup");
    let out = dir.join("out");
    let _mpi = common::mpi_lock(); // a sweep of its own in the background
    let mut driver = slow_sweep(&dir, &out, None, 1);
    let attempt = out
        .join("launches")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    Command::new("kill")
        .args(["-HUP", &driver.id().to_string()])
        .status()
        .unwrap();
    let t0 = Instant::now();
    let code = loop {
        if let Some(s) = driver.try_wait().unwrap() {
            break s.code();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "SIGHUP did not stop the sweep"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(code, Some(130), "interrupted, as with SIGTERM");
    assert!(running_with(&attempt).is_empty(), "its launch was stopped");
    assert!(!attempt.join("live.json").exists());
    assert!(
        !read_results(&out).cases.is_empty(),
        "finished cases are kept"
    );
}

/// Issue 29: a `[links]` step runs `scalebench links` once per set-up (nodes × ranks per
/// node) under the sweep's launcher, writing `links/<set-up>/links.json` that reads back as a
/// full matrix; a set-up of one rank is skipped; `--resume` keeps a finished step untouched and
/// reruns one whose file is gone (without rerunning any case); `--dry-run` shows the command;
/// the report finds the step and names its section by its set-up.
#[test]
fn a_links_step_runs_once_per_set_up_and_a_resume_keeps_it() {
    let dir = tmpdir("sweep-links");
    let spec = write_spec(
        &dir,
        "links.toml",
        "name = \"lk\"\n[axes]\ndevices_per_node = [1, 2]\ntopology = [\"pure\", \"hybrid\"]\nworkloads = \"allreduce\"\nsizes = \"1KiB\"\nin_place = false\n[run]\niters = 2\nwarmup = 0\nceilings = false\n[launch]\noversubscribe = true\ntimeout_s = 120\n[links]\nsize = \"4KiB\"\niters = 3\nwarmup = 1\ntimeout_s = 120\n",
    );
    let out = dir.join("run");
    let (spec_s, out_s) = (spec.to_str().unwrap(), out.to_str().unwrap());
    let dry = solo(&["sweep", spec_s, "--out", out_s, "--dry-run"]);
    dry.assert_code(0);
    let links_lines: Vec<&str> = dry
        .stdout
        .lines()
        .filter(|l| l.starts_with("mpirun") && l.contains(" links "))
        .collect();
    assert_eq!(links_lines.len(), 1, "{}", dry.stdout);
    assert!(
        links_lines[0].starts_with("mpirun -np 2 ")
            && links_lines[0]
                .contains("links --schedule round-robin --size 4096 --iters 3 --warmup 1")
            && links_lines[0].ends_with(&format!("--out {}/links/n1-ppn2", out.display())),
        "{}",
        links_lines[0]
    );
    assert!(
        dry.stdout.contains("# links n1-ppn1: not run (one rank"),
        "{}",
        dry.stdout
    );
    assert!(!out.exists(), "a dry run wrote {}", out.display());

    let results = common::sweep_ok(&spec, &out);
    // Three launches run one rank (set-up n1-ppn1: nothing to pair); 1 × 2 pure is n1-ppn2.
    assert_eq!(results.cases.len(), 4);
    let step = out.join("links/n1-ppn2");
    let file = step.join("links.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schedule"], "round_robin");
    assert_eq!(v["message_bytes"], 4096);
    assert_eq!(v["iters"], 3);
    assert_eq!(v["hosts"].as_array().unwrap().len(), 2);
    let m = v["matrix_gbps"].as_array().unwrap();
    assert_eq!(m.len(), 2);
    for (i, row) in m.iter().enumerate() {
        for (j, cell) in row.as_array().unwrap().iter().enumerate() {
            if i == j {
                assert!(cell.is_null(), "{text}");
            } else {
                assert!(cell.as_f64().is_some_and(|g| g > 0.0), "{text}");
            }
        }
    }
    assert!(step.join("links.svg").exists());
    assert!(
        !out.join("links/n1-ppn1").exists(),
        "a one-rank set-up has no step"
    );
    let outcome = std::fs::read_to_string(step.join("outcome.json")).unwrap();

    // Resume: nothing to do; the step's files are untouched.
    let journals = journaled(&out);
    let ran = solo(&["sweep", spec_s, "--out", out_s, "--resume"]);
    ran.assert_code(0);
    assert!(
        ran.stderr
            .contains("# links n1-ppn2 (1 node × 2 ranks per node): finished before, kept"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text,
        "links.json rewritten"
    );
    assert_eq!(
        std::fs::read_to_string(step.join("outcome.json")).unwrap(),
        outcome
    );
    assert_eq!(
        journaled(&out),
        journals,
        "a resume with nothing to do ran cases"
    );
    // A step that crashed (the launcher exits 7 for it, runs the launches) fails the sweep
    // (exit 3) with its outcome recorded; `--resume` runs it again, and no case.
    let out2 = dir.join("run2");
    let fake = dir.join("fake-mpirun");
    std::fs::write(
        &fake,
        "#!/bin/bash\nfor a in \"$@\"; do [ \"$a\" = links ] && { echo 'fake: the links step crashes' >&2; exit 7; }; done\nexec mpirun \"$@\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&fake)
        .status()
        .unwrap();
    let out2_s = out2.to_str().unwrap();
    let ran = solo(&[
        "sweep",
        spec_s,
        "--out",
        out2_s,
        "--mpirun",
        fake.to_str().unwrap(),
    ]);
    ran.assert_code(3);
    assert!(
        ran.stderr
            .contains("# links n1-ppn2 (1 node × 2 ranks per node): failed (exit 7)")
            && ran.stderr.contains("1 links step wrote no links.json")
            && ran.stderr.contains("--resume"),
        "{}",
        ran.stderr
    );
    let step2 = out2.join("links/n1-ppn2");
    assert!(!step2.join("links.json").exists());
    let o: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(step2.join("outcome.json")).unwrap())
            .unwrap();
    assert_eq!(
        (o["status"].as_str(), o["exit_code"].as_i64()),
        (Some("failed"), Some(7))
    );
    assert!(std::fs::read_to_string(step2.join("stderr.log"))
        .unwrap()
        .contains("the links step crashes"));
    assert_eq!(
        common::read_results(&out2).cases.len(),
        4,
        "the launches ran"
    );
    let journals = journaled(&out2);
    let ran = solo(&["sweep", spec_s, "--out", out2_s, "--resume"]);
    ran.assert_code(0);
    assert!(
        ran.stderr
            .contains("# links n1-ppn2 (1 node × 2 ranks per node): healthy"),
        "{}",
        ran.stderr
    );
    assert_eq!(journaled(&out2), journals, "a resume reran cases");
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(step2.join("links.json")).unwrap()).unwrap();
    assert_eq!(again["hosts"].as_array().unwrap().len(), 2);

    // The report finds the step in the run directory, its section named by its set-up.
    let rep = dir.join("report");
    let r = common::report(&[out_s, "--out", rep.to_str().unwrap()]);
    r.assert_code(0);
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(
        md.contains("Links: the slow node or link, set-up n1-ppn2 (1 node × 2 ranks per node)"),
        "{md}"
    );
}

/// A run directory's links steps (`DIR/links/<set-up>/links.json`, as `sweep` and `submit` write
/// them) are reported whether the report is given `DIR` or `DIR/results.json`: both documents
/// carry the step's section, named by its set-up, beside the run's cases. The layout is built
/// by hand (a simulated links file, the golden results) so no sweep has to run.
#[test]
fn a_run_directorys_links_steps_are_found_from_its_results_file_too() {
    let dir = tmpdir("links-step-by-file");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    common::fixture::write(&run, "results.json", &common::fixture::golden());
    let step = run.join("links/n16-ppn1");
    let r = solo(&[
        "links",
        "--simulate",
        "16",
        "--slow-link",
        "3:9",
        "--out",
        step.to_str().unwrap(),
    ]);
    r.assert_code(1);
    assert!(step.join("links.json").is_file(), "{}", r.stdout);
    let heading = "## Links: the slow node or link, set-up n16-ppn1 (16 nodes × 1 rank per node)";
    for (name, input) in [
        ("by-dir", run.clone()),
        ("by-file", run.join("results.json")),
    ] {
        let rep = dir.join(name);
        let ran = common::report(&[input.to_str().unwrap(), "--out", rep.to_str().unwrap()]);
        ran.assert_code(0);
        assert!(!ran.stdout.contains("(0 cases"), "{name}: {}", ran.stdout);
        let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
        let at = md
            .find(heading)
            .unwrap_or_else(|| panic!("{name}: no links section for the step:\n{md}"));
        assert!(md[at..].contains("| link | n3:3↔n9:9 |"), "{name}: {md}");
        assert!(rep.join("charts/links.svg").is_file(), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
