//! `scalebench replay` under real mpirun: the committed traces (a PyTorch DDP step recorded on
//! gloo, its NCCL-style log, constructed NCCL/RCCL logs, an execution trace with a reordered
//! process group) replayed on 2 ranks; the replayed collectives' count, order and sizes equal
//! the trace's (read here independently of the crate's reader), every one validated, the
//! results naming the trace's files and digests and passing the results validator; bad traces
//! refused with exit 2 naming the file and the record.

use crate::common;

use common::{mpirun_with, s, solo, tmpdir, write_file};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
}

fn sha256(p: &Path) -> String {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `mpirun -np 2 scalebench replay FILES… --out OUT -q EXTRA…`; the results (or Null).
fn replay(tag: &str, files: &[PathBuf], extra: &[&str]) -> (common::Ran, Value, PathBuf) {
    let out = tmpdir(tag).join("out");
    let mut args: Vec<&str> = vec!["replay"];
    args.extend(files.iter().map(|p| s(p)));
    args.extend(["-q", "--no-ceilings", "--iters", "3", "--out", s(&out)]);
    args.extend_from_slice(extra);
    let ran = mpirun_with(2, &["--bind-to", "none"], &args);
    let v = std::fs::read_to_string(out.join("results.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (ran, v, out)
}

/// The one case, checked: ok, validated with no wrong element, naming `files` and their
/// digests (in its params and its replay record), and valid for the results validator.
fn the_case(v: &Value, out: &Path, files: &[PathBuf]) -> Value {
    let cases = v["cases"].as_array().cloned().unwrap_or_default();
    assert_eq!(cases.len(), 1, "{v}");
    let c = cases[0].clone();
    assert_eq!(c["status"], "ok", "{}", c["message"]);
    assert_eq!(c["params"]["workload"], "replay");
    assert_eq!(c["wrong"], 0);
    assert!(c["check_iters"].as_u64() >= Some(1), "validated: {c}");
    let digests: Vec<String> = files.iter().map(|p| sha256(p)).collect();
    assert_eq!(c["params"]["trace_sha256"], digests.join(","));
    let paths: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(c["params"]["trace"], paths.join(","));
    let recorded: Vec<(String, String)> = c["replay"]["files"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    (
                        f["path"].as_str().unwrap_or("").into(),
                        f["sha256"].as_str().unwrap_or("").into(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(recorded, paths.into_iter().zip(digests).collect::<Vec<_>>());
    let file = scalebench::results::io::read_results(out).unwrap_or_else(|e| panic!("{e}"));
    let problems = scalebench::results::validate::problems(&file);
    assert!(problems.is_empty(), "{problems:?}");
    // The documented format, read with the tests' own types.
    let wire = common::read_results(out);
    let r = wire.cases[0].replay.as_ref().expect("a replay record");
    assert_eq!(r.files.len(), files.len());
    assert_eq!(
        r.calls.len() as u64,
        c["replay"]["calls"]
            .as_array()
            .map_or(0, |a| a.len() as u64)
    );
    c
}

/// (collective, send elements, recv elements) of rank 0's replayed calls.
fn calls(c: &Value) -> Vec<(String, u64, u64)> {
    c["replay"]["calls"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| {
                    (
                        x["collective"].as_str().unwrap_or("").to_string(),
                        x["send_count"].as_u64().unwrap_or(0),
                        x["recv_count"].as_u64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The c10d all-reduces of an execution trace, in node-id order, with their element counts,
/// read straight from the JSON.
fn et_allreduces(p: &Path) -> Vec<(String, u64, u64)> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let mut nodes: Vec<&Value> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["name"] == "c10d::allreduce_")
        .collect();
    nodes.sort_by_key(|n| n["id"].as_u64());
    nodes
        .iter()
        .map(|n| {
            let numel = n["inputs"]["values"][0][0][3].as_u64().unwrap();
            ("allreduce".to_string(), numel, numel)
        })
        .collect()
}

#[test]
fn the_recorded_ddp_step_replays_in_order_validated() {
    let files: Vec<PathBuf> = [
        "ddp_et_rank0.json",
        "ddp_et_rank1.json",
        "ddp_kineto_rank0.json",
        "ddp_kineto_rank1.json",
    ]
    .map(fixture)
    .to_vec();
    let (ran, v, out) = replay("replay-ddp", &files, &[]);
    ran.assert_code(0);
    let c = the_case(&v, &out, &files);
    let want = et_allreduces(&files[0]);
    assert_eq!(want.len(), 2, "the recorded step has two buckets");
    assert_eq!(calls(&c), want);
    assert_eq!(et_allreduces(&files[1]), want, "rank 1 traced the same");
    assert_eq!(c["replay"]["calls_total"], 4);
    assert_eq!(c["replay"]["format"], "pytorch_et");
    assert_eq!(c["replay"]["compute"], "gaps");
    // Kineto gave every call its gap, and the step waited them out.
    for call in c["replay"]["calls"].as_array().unwrap() {
        assert!(call["gap_before_s"].as_f64() > Some(0.0), "{call}");
    }
    let phase = |name: &str| {
        c["phases"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["name"] == name))
            .and_then(|p| p["time_s"].as_f64())
            .unwrap_or_else(|| panic!("no {name} phase in {c}"))
    };
    assert!(phase("compute") > 0.0 && phase("communication") > 0.0);
    let bytes: u64 = want.iter().map(|(_, n, _)| n * 4).sum();
    assert_eq!(c["bytes"], bytes);
}

#[test]
fn a_corrupted_input_is_caught_by_the_replayed_validation() {
    let files = vec![fixture("nccl-v2.21-two-ranks.log")];
    let (ran, v, out) = replay("replay-corrupt", &files, &["--fault", "corrupt"]);
    ran.assert_code(3);
    let c = &v["cases"][0];
    assert_eq!(c["status"], "wrong", "{v}");
    assert!(c["wrong"].as_u64() >= Some(1), "{c}");
    // The validator sees a wrong case as such, and a record whose digests are not its
    // case's trace as a problem.
    let mut file = scalebench::results::io::read_results(&out).unwrap_or_else(|e| panic!("{e}"));
    assert!(scalebench::results::validate::problems(&file).is_empty());
    if let Some(r) = file.cases[0].replay.as_mut() {
        r.files[0].sha256 = "0".repeat(64);
    }
    let problems = scalebench::results::validate::problems(&file);
    assert!(
        problems
            .iter()
            .any(|p| format!("{p:?}").contains("replay.files")),
        "{problems:?}"
    );
}

#[test]
fn compute_none_runs_the_collectives_back_to_back() {
    let files = vec![fixture("ddp_nccl.log")];
    let (ran, v, out) = replay("replay-none", &files, &["--compute", "none"]);
    ran.assert_code(0);
    let c = the_case(&v, &out, &files);
    assert_eq!(c["replay"]["compute"], "none");
    assert_eq!(c["replay"]["compute_s"], 0.0);
    assert_eq!(c["replay"]["format"], "nccl_log");
    let want = et_allreduces(&fixture("ddp_et_rank0.json"));
    assert_eq!(calls(&c), want, "the NCCL-style log of the same step");
}

#[test]
fn an_nccl_log_replays_every_collective_with_its_root_and_operator() {
    let files = vec![fixture("nccl-v2.21-two-ranks.log")];
    let (ran, v, out) = replay("replay-nccl", &files, &[]);
    ran.assert_code(0);
    let c = the_case(&v, &out, &files);
    let want = [
        ("allreduce", 262144, 262144),
        ("broadcast", 1000, 1000),
        ("allgather", 4096, 8192),
        ("reduce_scatter", 4096, 2048),
        ("reduce", 77, 77),
    ]
    .map(|(k, a, b)| (k.to_string(), a, b))
    .to_vec();
    assert_eq!(calls(&c), want);
    let r = &c["replay"]["calls"];
    assert_eq!(
        (r[1]["root"].as_u64(), r[1]["dtype"].as_str()),
        (Some(1), Some("f64"))
    );
    assert_eq!(
        (r[3]["op"].as_str(), r[4]["op"].as_str()),
        (Some("max"), Some("min"))
    );
    assert_eq!(r[4]["root"], 0);
    assert_eq!(r[2]["dtype"], "i32");
    assert_eq!(r[0]["record"], "line 7");
}

#[test]
fn process_groups_replay_on_sub_communicators() {
    let files = vec![
        fixture("et-rpc-subgroup-rank0.json"),
        fixture("et-rpc-subgroup-rank1.json"),
    ];
    let (ran, v, out) = replay("replay-groups", &files, &[]);
    ran.assert_code(0);
    let c = the_case(&v, &out, &files);
    let groups: Vec<Value> = c["replay"]["groups"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(groups.len(), 2);
    assert_eq!(
        groups[1]["ranks"],
        serde_json::json!([1, 0]),
        "group 1 reverses the job's ranks"
    );
    let on: Vec<u64> = c["replay"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["group"].as_u64().unwrap())
        .collect();
    assert_eq!(on, [0, 0, 0, 0, 1, 1, 0]);
    let kinds: Vec<String> = calls(&c).into_iter().map(|x| x.0).collect();
    assert_eq!(
        kinds,
        [
            "allreduce",
            "broadcast",
            "allgather",
            "reduce_scatter",
            "broadcast",
            "allreduce",
            "barrier"
        ]
    );
}

#[test]
fn a_trace_of_another_scale_is_skipped_with_the_reason() {
    // 4 traced ranks on a 2-rank launch: --ranks-as is not implemented, so nothing is faked.
    let files = vec![fixture("nccl-v2.26-subcomms.log")];
    let (ran, v, _) = replay("replay-scale", &files, &[]);
    no_panic(&ran);
    let c = &v["cases"][0];
    assert_eq!(c["status"], "skipped", "{v}");
    let m = c["message"].as_str().unwrap_or("");
    assert!(m.contains("4 ranks") && m.contains("--ranks-as"), "{m}");
}

fn no_panic(r: &common::Ran) {
    common::no_panic(r);
}

/// A replay refused before anything runs: exit 2, the needles in stderr, no output.
fn refused(tag: &str, trace: &Path, needles: &[&str]) {
    let out = tmpdir(tag).join("out");
    let r = solo(&["replay", s(trace), "-q", "--no-ceilings", "--out", s(&out)]);
    r.assert_refused(&trace, needles, &out);
}

fn edited_et(edit: impl Fn(&mut Value)) -> String {
    let text = std::fs::read_to_string(fixture("et-rpc-subgroup-rank0.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    edit(&mut v);
    v.to_string()
}

fn node_attrs(v: &mut Value, id: u64) -> &mut Vec<Value> {
    let nodes = v["nodes"].as_array_mut().unwrap();
    let n = nodes.iter_mut().find(|n| n["id"] == id).unwrap();
    n["attrs"].as_array_mut().unwrap()
}

#[test]
fn bad_traces_exit_2_naming_the_file_and_the_record() {
    let dir = tmpdir("replay-bad");
    let full = std::fs::read_to_string(fixture("ddp_et_rank0.json")).unwrap();
    let cut = write_file(&dir, "cut.json", &full[..full.len() / 3]);
    refused(
        "replay-cut",
        &cut,
        &["cut.json", "JSON at line", "truncated"],
    );

    let nosize = edited_et(|v| node_attrs(v, 21).retain(|a| a["name"] != "in_msg_nelems"));
    let nosize = write_file(&dir, "nosize.json", &nosize);
    refused(
        "replay-nosize",
        &nosize,
        &["nosize.json", "node 21", "no size", "in_msg_nelems"],
    );

    let pg = edited_et(|v| {
        let a = node_attrs(v, 61);
        for x in a.iter_mut().filter(|x| x["name"] == "pg_name") {
            x["value"] = "7".into();
        }
        a.retain(|x| x["name"] != "pg_size");
    });
    let pg = write_file(&dir, "pg.json", &pg);
    refused(
        "replay-pg",
        &pg,
        &["pg.json", "node 61", "process group \"7\""],
    );

    let log = "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 8 \
               datatype 7 op 0 root 0 comm 0xa [nranks=1] stream 0x0\n\
               h:1:1 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count\n";
    let log = write_file(&dir, "bad.log", log);
    refused("replay-line", &log, &["bad.log", "line 2"]);

    let missing = dir.join("absent.log");
    refused("replay-absent", &missing, &["absent.log"]);
}

#[test]
fn the_replay_workload_needs_its_trace() {
    let out = tmpdir("replay-run").join("out");
    let r = solo(&["run", "-w", "replay", "-q", "--out", s(&out)]);
    r.assert_refused(
        &"run -w replay",
        &["replay", "scalebench replay TRACE"],
        &out,
    );
}
