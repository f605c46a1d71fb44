use super::*;

const V218: &str = include_str!("../../../tests/fixtures/nccl/v2.18-init-only.log");
const V221: &str = include_str!("../../../tests/fixtures/nccl/v2.21-numeric.log");
const V223: &str = include_str!("../../../tests/fixtures/nccl/v2.23-func-numeric.log");
const V226: &str = include_str!("../../../tests/fixtures/nccl/v2.26-named-interleaved.log");

fn choices(entries: &[Entry]) -> Vec<&Choice> {
    entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Choice(c) => Some(c),
            _ => None,
        })
        .collect()
}

fn calls(entries: &[Entry]) -> Vec<&Call> {
    entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Call(c) => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn before_2_20_only_the_version_and_the_calls() {
    let e = parse_log(V218);
    assert_eq!(version(&e), Some(("2.18.5+cuda12.2".to_string(), 21805)));
    assert!(choices(&e).is_empty());
    let c = calls(&e);
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].op_count, 1);
    assert_eq!(c[1].count, 262144);
    assert_eq!(c[1].datatype, 7);
    assert_eq!(c[1].nranks, Some(2));
    assert_eq!(c[1].comm, "0x55d1c3a0");
    // INIT, NET, channel and ring lines are other subsystems': nothing else was read.
    assert_eq!(e.len(), 3);
}

#[test]
fn numeric_form_without_function() {
    let e = parse_log(V221);
    assert_eq!(version(&e).unwrap().1, 22105);
    let c = choices(&e);
    assert_eq!(c.len(), 3);
    assert_eq!(c[0].func, None);
    assert!(!c[0].named);
    assert_eq!(
        (c[0].bytes, c[0].algo, c[0].proto),
        (8, NcclAlgo::Tree, NcclProto::Ll)
    );
    assert_eq!(c[0].model_time_us, Some(25.200924));
    assert_eq!(c[0].channels, None);
    assert_eq!((c[1].algo, c[1].proto), (NcclAlgo::Ring, NcclProto::Simple));
    // The AllGather's line counts nRanks × count bytes on 2.21: 4 × 1024 × 4 = 16384.
    assert_eq!((c[2].algo, c[2].proto), (NcclAlgo::Ring, NcclProto::Ll128));
    assert_eq!(c[2].per_rank_bytes(NcclFunc::AllGather, 22105, 4), 4096);
    assert_eq!(c[2].per_rank_bytes(NcclFunc::AllReduce, 22105, 4), 16384);
    // The WARN line is kept as a warning, with who wrote it.
    assert_eq!(calls(&e).len(), 3);
    assert_eq!(e.len(), 8);
    assert_eq!(
        warnings(&e),
        [("some warning that is not an INFO line".to_string(), 1)]
    );
    let w = e
        .iter()
        .find(|x| matches!(x.event, Event::Warn(_)))
        .unwrap();
    assert_eq!(
        w.origin.as_ref().map(|o| (o.host.as_str(), o.pid)),
        Some(("gpu-a", 310))
    );
    // An empty WARN is nothing; one repeated is counted.
    assert!(parse_line("h:1:1 [0] NCCL WARN ").is_none());
    let twice = parse_log("h:1:1 [0] NCCL WARN x\nh:1:2 [1] NCCL WARN x\nh:1:1 [0] NCCL WARN y\n");
    assert_eq!(
        warnings(&twice),
        [("x".to_string(), 2), ("y".to_string(), 1)]
    );
}

#[test]
fn numeric_form_with_function_2_23() {
    let e = parse_log(V223);
    assert_eq!(version(&e).unwrap().1, 22304);
    let c = choices(&e);
    assert_eq!(c.len(), 3);
    assert_eq!(c[0].func, Some(NcclFunc::ReduceScatter));
    assert_eq!((c[0].algo, c[0].proto), (NcclAlgo::Pat, NcclProto::Simple));
    assert_eq!(c[0].model_time_us, Some(31.5));
    assert_eq!(c[1].func, Some(NcclFunc::AllReduce));
    assert_eq!((c[2].algo, c[2].proto), (NcclAlgo::Ring, NcclProto::Ll128));
    // opCount is printed with %lx.
    assert_eq!(calls(&e)[0].op_count, 10);
    assert_eq!(e[0].origin.as_ref().unwrap().device, 3);
}

#[test]
fn named_form_interleaved_ranks_and_timestamps() {
    let e = parse_log(V226);
    assert_eq!(version(&e), Some(("2.26.2+cuda12.8".to_string(), 22602)));
    let c = choices(&e);
    // The BOGUS algorithm's line is not read (an unknown name is not guessed at).
    assert_eq!(c.len(), 4);
    assert!(c.iter().all(|c| c.named && c.model_time_us.is_none()));
    assert_eq!(c[0].channels, Some((0, 1)));
    assert_eq!(c[1].channel_count(), Some(16));
    // A fork's trailing ` comm 0x…` is accepted.
    assert_eq!(c[2].func, Some(NcclFunc::AllGather));
    assert_eq!(
        (c[2].algo, c[2].proto),
        (NcclAlgo::NvlsTree, NcclProto::Ll128)
    );
    assert_eq!(c[2].channel_count(), Some(4));
    assert_eq!(c[2].per_rank_bytes(NcclFunc::AllGather, 22602, 2), 4096);
    // Interleaved processes: each line keeps its writer.
    let pids: Vec<u32> = e
        .iter()
        .map(|x| x.origin.as_ref().expect("prefix parsed").pid)
        .collect();
    assert_eq!(pids, vec![700, 701, 700, 701, 700, 700, 701, 700, 700]);
    let of_701: Vec<_> = e
        .iter()
        .filter(|x| x.origin.as_ref().unwrap().pid == 701)
        .collect();
    assert!(of_701.iter().all(|x| !matches!(x.event, Event::Choice(_))));
    let o = e[1].origin.as_ref().unwrap();
    assert_eq!((o.host.as_str(), o.tid, o.device), ("hostA", 701, 1));
}

#[test]
fn tally_counts_distinct_choices_most_frequent_first() {
    let e = parse_log(V226);
    let t = tally(&e);
    assert_eq!(t.len(), 3);
    assert_eq!(t[0].1, 2);
    assert_eq!(t[0].0.proto, NcclProto::Simple);
    assert_eq!((t[1].0.proto, t[1].1), (NcclProto::Ll, 1));
    assert_eq!((t[2].0.algo, t[2].1), (NcclAlgo::NvlsTree, 1));
}

#[test]
fn lines_that_only_look_alike_are_skipped() {
    for line in [
        "",
        "NCCL INFO AllReduce: 8 Bytes -> Algo RING proto SIMPLE",
        "h:1:1 [0] NCCL INFO Foo: 8 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..0}",
        "h:1:1 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto 2 channel{Lo..Hi}={0..0}",
        "h:1:1 [0] NCCL INFO AllReduce: 8 Bytes -> Algo 9 proto 0 time 1.0",
        "h:1:1 [0] NCCL INFO AllReduce: x Bytes -> Algo 0 proto 0 time 1.0",
        "h:1:1 [0] NCCL INFO 8 Bytes -> Algo 0 proto 3 time 1.0",
        "h:1:1 [0] NCCL INFO NCCL version 2.x",
        "h:1:1 [0] NCCL INFO Channel 00/02 : 0 1",
        "h:1:1 [0] NCCL INFO AllReduce: opCount zz sendbuff 0 recvbuff 0 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=2] stream 0x2",
    ] {
        assert_eq!(parse_line(line), None, "{line}");
    }
    // A WARN line that reads like a choice is a warning, not a choice.
    let w = parse_line("h:1:1 [0] NCCL WARN AllReduce: 8 Bytes -> Algo 0 proto 0 time 1.0");
    assert!(matches!(w.unwrap().event, Event::Warn(_)));
    // A prefix that is not `host:pid:tid [dev]` still gives the event, without an origin.
    let e = parse_line("somewhere NCCL INFO 8 Bytes -> Algo 1 proto 2 time 3.5").unwrap();
    assert_eq!(e.origin, None);
    // A launcher's rank prefix before the usual one (srun -l).
    let e = parse_line("3: node9:11:12 [2] NCCL INFO NCCL version 2.5.6+cuda10.2").unwrap();
    assert_eq!(e.origin.unwrap().pid, 11);
    // Before 2.9 the code was major*1000 + minor*100 + patch.
    assert_eq!(
        e.event,
        Event::Version {
            text: "2.5.6+cuda10.2".into(),
            code: 2506
        }
    );
}

#[test]
fn names_round_trip_in_both_spellings() {
    for a in NcclAlgo::ALL {
        assert_eq!(a.log_name().parse::<NcclAlgo>().unwrap(), a);
        assert_eq!(a.env_name().parse::<NcclAlgo>().unwrap(), a);
        assert_eq!(a.env_name().to_lowercase().parse::<NcclAlgo>().unwrap(), a);
    }
    for p in NcclProto::ALL {
        assert_eq!(p.log_name().parse::<NcclProto>().unwrap(), p);
        assert_eq!(p.env_name().parse::<NcclProto>().unwrap(), p);
    }
    assert!("ringg".parse::<NcclAlgo>().is_err());
    assert!("ll64".parse::<NcclProto>().is_err());
}

/// A log NCCL 2.28.3 wrote on a GPU (one rank; tests/fixtures/nccl/README.md): the version,
/// every COLL line, no choice, and none of its 90 other lines (channels, trees, plugins,
/// proxies, timings) mistaken for one.
#[test]
fn a_real_2_28_log_with_one_rank() {
    let text = include_str!("../../../tests/fixtures/nccl/real-v2.28.3-nranks1.log");
    let e = parse_log(text);
    assert_eq!(version(&e), Some(("2.28.3+cuda13.0".to_string(), 22803)));
    assert!(choices(&e).is_empty());
    let c = calls(&e);
    assert_eq!(c.len(), 110);
    assert_eq!(e.len(), 111);
    let count = |f: NcclFunc, n: u64| c.iter().filter(|x| x.func == f && x.count == n).count();
    assert_eq!(count(NcclFunc::AllGather, 16777216), 22);
    assert_eq!(count(NcclFunc::AllReduce, 2), 22);
    assert!(c.iter().all(|x| x.op_count == 0
        && x.nranks == Some(1)
        && x.datatype == 7
        && x.comm == "0x55b5052329e0"));
    let o = e[0].origin.as_ref().unwrap();
    assert_eq!((o.host.as_str(), o.pid, o.device), ("vm", 904, 0));
}

/// RCCL's own version lines read as NCCL's do (the capture on the ROCm backend).
#[test]
fn rccl_names_its_version_its_own_way() {
    for (line, text, code) in [
        (
            "lumi:7:7 [0] NCCL INFO RCCL version 2.18.3+hip6.0.32830 HEAD:b2c3d4e",
            "2.18.3+hip6.0.32830",
            21803,
        ),
        (
            "lumi:7:7 [0] NCCL INFO RCCL version : 2.20.5-HEAD:7a1b2c3",
            "2.20.5-HEAD:7a1b2c3",
            22005,
        ),
        (
            "lumi:7:7 [0] NCCL INFO NCCL version 2.18.3+hip6.0",
            "2.18.3+hip6.0",
            21803,
        ),
    ] {
        let e: Vec<Entry> = parse_line(line).into_iter().collect();
        assert_eq!(version(&e), Some((text.to_string(), code)), "{line}");
    }
}
