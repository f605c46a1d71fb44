use super::*;
use crate::params::{Dtype, ReduceOp};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces/");

fn fixture(names: &[&str]) -> Vec<PathBuf> {
    names.iter().map(|n| PathBuf::from(DIR).join(n)).collect()
}

fn read_fixture(names: &[&str]) -> Trace {
    match read(&fixture(names), None) {
        Ok(t) => t,
        Err(e) => panic!("{names:?}: {e}"),
    }
}

/// Reads `text` as if from a file named `name` (the refusals name it).
fn read_text(name: &str, text: &str) -> Result<Trace, TraceError> {
    let files = vec![(PathBuf::from(name), text.to_string())];
    let t = if text.trim_start().starts_with('{') {
        et::read(&files, None)?
    } else {
        nccl::read(&files)?
    };
    t.check_consistent()?;
    Ok(t)
}

fn kinds(t: &Trace, r: usize) -> Vec<&'static str> {
    t.calls[r].iter().map(|c| c.collective.name()).collect()
}

#[test]
fn nccl_2_21_two_processes_in_one_file() {
    let t = read_fixture(&["nccl-v2.21-two-ranks.log"]);
    assert_eq!(t.format, Format::NcclLog);
    assert_eq!(t.ranks(), 2);
    assert_eq!(t.groups.len(), 1);
    assert_eq!(t.groups[0].ranks, vec![0, 1]);
    assert_eq!(
        kinds(&t, 0),
        [
            "allreduce",
            "broadcast",
            "allgather",
            "reduce_scatter",
            "reduce"
        ]
    );
    let c = &t.calls[0];
    assert_eq!(
        (c[0].dtype, c[0].op, c[0].send_count),
        (Dtype::F32, Some(ReduceOp::Sum), 262144)
    );
    assert_eq!(c[0].requested_bytes(), 1 << 20);
    assert_eq!(c[0].record, Record::Line(7));
    assert_eq!(
        (c[1].dtype, c[1].root, c[1].op),
        (Dtype::F64, Some(1), None)
    );
    // AllGather's count is per rank: the total output is twice it.
    assert_eq!((c[2].send_count, c[2].recv_count), (4096, 8192));
    assert_eq!(c[2].requested_bytes(), 8192 * 4);
    // ReduceScatter's count is the output per rank: the input is twice it.
    assert_eq!(
        (c[3].send_count, c[3].recv_count, c[3].op),
        (4096, 2048, Some(ReduceOp::Max))
    );
    assert_eq!((c[4].root, c[4].op), (Some(0), Some(ReduceOp::Min)));
    // Rank 1's AllGather comes before rank 0's in the file: still its third call.
    assert_eq!(t.calls[1][2].record, Record::Line(12));
    assert!(c.iter().all(|x| x.gap_before_s.is_none()), "no timestamps");
    assert_eq!(t.files[0].sha256.len(), 64);
}

#[test]
fn nccl_2_26_timestamps_and_split_communicators() {
    let t = read_fixture(&["nccl-v2.26-subcomms.log"]);
    assert_eq!(t.ranks(), 4);
    let mut groups: Vec<Vec<u32>> = t.groups.iter().map(|g| g.ranks.clone()).collect();
    groups.sort();
    assert_eq!(groups, vec![vec![0, 1], vec![0, 1, 2, 3], vec![2, 3]]);
    for r in 0..4 {
        let c = &t.calls[r];
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].dtype, Dtype::Bf16);
        assert_eq!(t.groups[c[0].group].ranks.len(), 4);
        let sub = &t.groups[c[1].group].ranks;
        assert!(
            sub.contains(&(r as u32)) && sub.len() == 2,
            "rank {r} in {sub:?}"
        );
        assert_eq!(c[2].group, c[0].group);
        let gap = |i: usize| c[i].gap_before_s.unwrap_or(f64::NAN);
        assert!((gap(1) - 0.0005).abs() < 1e-9, "gap {}", gap(1));
        assert!((gap(2) - 0.002).abs() < 1e-9, "gap {}", gap(2));
        assert_eq!(c[0].gap_before_s, None, "nothing before the first call");
    }
}

#[test]
fn nccl_2_28_alltoall_counts_per_peer() {
    let t = read_fixture(&["nccl-v2.28-alltoall.log"]);
    let c = &t.calls[1][0];
    assert_eq!(c.collective, Collective::AllToAll);
    assert_eq!((c.send_count, c.recv_count), (1024, 1024));
    assert_eq!(c.requested_bytes(), 4096);
}

#[test]
fn rccl_lines_name_their_global_rank() {
    let t = read_fixture(&["rccl-6.2-globalrank.log"]);
    assert_eq!(t.ranks(), 2);
    // Global rank 0 is pid 4100, whose lines are the file's 4th and 5th.
    assert_eq!(t.calls[0][0].record, Record::Line(4));
    assert_eq!(t.calls[1][0].record, Record::Line(3));
    let b = &t.calls[0][1];
    assert_eq!(
        (b.collective, b.dtype, b.root, b.send_count),
        (Collective::Broadcast, Dtype::I32, Some(1), 300)
    );
}

#[test]
fn the_ddp_step_as_an_nccl_log_orders_ranks_by_their_init_lines() {
    let t = read_fixture(&["ddp_nccl.log"]);
    assert_eq!(t.ranks(), 2);
    // pid 27363 logs first, but its init line says rank 1.
    assert_eq!(t.calls[0][0].record, Record::Line(5));
    let sizes: Vec<u64> = t.calls[0].iter().map(|c| c.send_count).collect();
    assert_eq!(sizes, [295488, 131584]);
    assert!(t.calls[0][1].gap_before_s.is_some_and(|g| g > 0.0));
}

#[test]
fn the_recorded_ddp_execution_traces_with_kineto() {
    let t = read_fixture(&[
        "ddp_et_rank0.json",
        "ddp_et_rank1.json",
        "ddp_kineto_rank0.json",
        "ddp_kineto_rank1.json",
    ]);
    assert_eq!(t.format, Format::PytorchEt);
    assert_eq!(t.ranks(), 2);
    assert_eq!(t.groups.len(), 1);
    assert_eq!(t.groups[0].name, "0");
    assert_eq!(t.files.len(), 4);
    for r in 0..2 {
        let sizes: Vec<u64> = t.calls[r].iter().map(|c| c.send_count).collect();
        // Two buckets: 256·512+512 + 512·512+512 + 512·64+64 = 427072 parameters.
        assert_eq!(sizes, [295488, 131584]);
        assert_eq!(sizes.iter().sum::<u64>(), 427072);
        for c in &t.calls[r] {
            assert_eq!(
                (c.collective, c.dtype, c.op),
                (Collective::AllReduce, Dtype::F32, Some(ReduceOp::Sum))
            );
            assert!(c.gap_before_s.is_some_and(|g| g > 0.0), "rank {r}: {c:?}");
        }
    }
}

#[test]
fn one_execution_trace_replays_on_every_rank_of_its_group() {
    let t = read_fixture(&["ddp_et_rank0.json"]);
    assert_eq!(t.ranks(), 2, "the init node's group_size");
    assert_eq!(t.calls[0], t.calls[1]);
    assert!(t.calls[0].iter().all(|c| c.gap_before_s.is_none()));
}

#[test]
fn record_param_comms_with_a_reordered_subgroup() {
    let t = read_fixture(&["et-rpc-subgroup-rank0.json", "et-rpc-subgroup-rank1.json"]);
    assert_eq!(t.groups.len(), 2);
    assert_eq!(t.groups[1].ranks, vec![1, 0]);
    assert_eq!(
        kinds(&t, 0),
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
    let c = &t.calls[1];
    assert_eq!((c[1].root, c[1].dtype), (Some(1), Dtype::F64));
    assert_eq!((c[2].send_count, c[2].recv_count), (512, 1024));
    assert_eq!((c[3].send_count, c[3].recv_count), (2048, 1024));
    assert_eq!(
        (c[4].group, c[4].root, c[4].dtype),
        (1, Some(0), Dtype::I32)
    );
    assert_eq!(c[4].record, Record::Node(51));
}

fn err_text(name: &str, text: &str) -> String {
    match read_text(name, text) {
        Ok(t) => panic!("{name} was accepted: {t:?}"),
        Err(e) => e.to_string(),
    }
}

const AR: &str = "AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 8 datatype 7 op 0 root 0";

#[test]
fn a_malformed_call_line_is_refused_with_its_line() {
    let text = format!(
        "h:1:1 [0] NCCL INFO {AR} comm 0xa [nranks=1] stream 0x0\n\
         h:1:1 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x1 count many datatype 7\n"
    );
    let e = err_text("bad.log", &text);
    assert!(
        e.contains("bad.log") && e.contains("line 2") && e.contains("count"),
        "{e}"
    );
}

#[test]
fn unknown_datatypes_and_operators_are_refused_with_their_line() {
    let int64 = AR.replace("datatype 7", "datatype 4");
    let e = err_text(
        "i64.log",
        &format!("h:1:1 [0] NCCL INFO {int64} comm 0xa [nranks=1] stream 0\n"),
    );
    assert!(e.contains("line 1") && e.contains("datatype 4"), "{e}");
    let premul = AR.replace("op 0", "op 5");
    let e = err_text(
        "pm.log",
        &format!("h:1:1 [0] NCCL INFO {premul} comm 0xa [nranks=1] stream 0\n"),
    );
    assert!(e.contains("line 1") && e.contains("op 5"), "{e}");
}

#[test]
fn ranks_that_disagree_are_refused() {
    let other = AR.replace("count 8", "count 9");
    let text = format!(
        "h:1:1 [0] NCCL INFO {AR} comm 0xa [nranks=2] stream 0\n\
         h:2:2 [0] NCCL INFO {other} comm 0xa [nranks=2] stream 0\n"
    );
    let e = err_text("odd.log", &text);
    assert!(e.contains("line 2") && e.contains("does not match"), "{e}");
}

#[test]
fn a_communicator_missing_ranks_is_refused() {
    let text = format!(
        "h:1:1 [0] NCCL INFO {AR} comm 0xa [nranks=2] stream 0\n\
         h:2:2 [0] NCCL INFO {AR} comm 0xb [nranks=4] stream 0\n"
    );
    let e = err_text("short.log", &text);
    assert!(e.contains("short.log") && e.contains("nranks="), "{e}");
}

#[test]
fn a_truncated_execution_trace_names_where_it_ends() {
    let full =
        std::fs::read_to_string(fixture(&["ddp_et_rank0.json"])[0].clone()).unwrap_or_default();
    let e = err_text("cut.json", &full[..full.len() / 2]);
    assert!(
        e.contains("cut.json") && e.contains("JSON at line") && e.contains("truncated"),
        "{e}"
    );
}

fn rpc_file(edit: impl Fn(&mut serde_json::Value)) -> String {
    let text = std::fs::read_to_string(fixture(&["et-rpc-subgroup-rank0.json"])[0].clone())
        .unwrap_or_default();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    edit(&mut v);
    v.to_string()
}

fn drop_attr(v: &mut serde_json::Value, node: u64, key: &str) {
    if let Some(nodes) = v["nodes"].as_array_mut() {
        for n in nodes.iter_mut().filter(|n| n["id"] == node) {
            if let Some(a) = n["attrs"].as_array_mut() {
                a.retain(|x| x["name"] != key);
            }
        }
    }
}

#[test]
fn a_collective_with_no_size_is_refused_with_its_node() {
    let text = rpc_file(|v| drop_attr(v, 21, "in_msg_nelems"));
    let e = err_text("nosize.json", &text);
    assert!(
        e.contains("node 21") && e.contains("no size") && e.contains("in_msg_nelems"),
        "{e}"
    );
}

#[test]
fn an_unknown_process_group_is_refused_with_its_node() {
    let text = rpc_file(|v| {
        if let Some(nodes) = v["nodes"].as_array_mut() {
            for n in nodes.iter_mut().filter(|n| n["id"] == 61) {
                if let Some(a) = n["attrs"].as_array_mut() {
                    for x in a.iter_mut().filter(|x| x["name"] == "pg_name") {
                        x["value"] = "7".into();
                    }
                    // Nor can the group be rebuilt from the call's own description.
                    a.retain(|x| x["name"] != "pg_size");
                }
            }
        }
    });
    let e = err_text("pg.json", &text);
    assert!(
        e.contains("node 61") && e.contains("process group \"7\""),
        "{e}"
    );
}

#[test]
fn json_that_is_no_trace_is_refused() {
    let e = err_text("x.json", "{\"a\": 1}");
    assert!(e.contains("x.json") && e.contains("nodes"), "{e}");
}
