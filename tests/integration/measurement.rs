//! What makes a number hold on any machine, through the real binary under real `mpirun`:
//! page-aligned buffers (and offsets asked for on purpose) recorded per case, calibration that
//! a slow first operation cannot cut short, and the provenance that says where a copy's speed
//! comes from.

use crate::common;

use common::wire::Case;
use common::{mpirun, mpirun_with, read_results, run_q, solo, sweep_ok, tmpdir};

const COLLECTIVES: &str = "allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall";

fn page_bytes() -> u64 {
    // SAFETY: sysconf takes an integer name and no pointers; the page size is always positive.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

/// The case's buffers sit at the offsets asked for, on every rank and device.
fn assert_offsets(c: &Case, send: u64, recv: u64) {
    let b = c
        .buffers
        .as_ref()
        .unwrap_or_else(|| panic!("{:?}: no buffer record", c.params));
    assert_eq!(b.page_bytes, page_bytes());
    assert_eq!(
        (b.requested_send_offset_bytes, b.requested_recv_offset_bytes),
        (send, recv)
    );
    assert_eq!(b.recv_page_offsets_bytes, vec![recv], "{:?}", c.params);
    if c.params.in_place == Some(true) {
        assert!(b.send_page_offsets_bytes.is_empty());
        assert!(b.recv_minus_send_mod_page_bytes.is_empty());
    } else {
        assert_eq!(b.send_page_offsets_bytes, vec![send], "{:?}", c.params);
        let d = (recv + page_bytes() - send) % page_bytes();
        assert_eq!(b.recv_minus_send_mod_page_bytes, vec![d]);
    }
}

fn run_offsets(np: u32, extra: &[&str], offset: Option<&str>) -> Vec<Case> {
    let out = tmpdir(&format!("offsets-{np}-{}", offset.unwrap_or("none"))).join("out");
    let mut args = run_q(
        &out,
        &[
            "-w",
            COLLECTIVES,
            "--sizes",
            "64,1000,64KiB",
            "--dtype",
            "f32,f64",
            "--time-budget",
            "0.01",
        ],
    );
    if let Some(o) = offset {
        args.extend(["--buffer-offset", o]);
    }
    args.extend(extra);
    mpirun_with(np, &["--bind-to", "none"], &args).assert_code(0);
    let r = read_results(&out);
    let p = r.launches[0].provenance.as_ref().unwrap();
    let policy = p.buffer_policy.as_deref().unwrap();
    assert!(policy.starts_with("page-aligned"), "{policy}");
    r.cases
}

#[test]
fn buffers_are_page_aligned_by_default_and_recorded() {
    let cases = run_offsets(2, &[], None);
    assert!(cases.len() >= 6 * 3 * 2, "{}", cases.len());
    for c in &cases {
        assert_eq!((c.status.as_str(), c.wrong), ("ok", 0), "{:?}", c.message);
        assert_offsets(c, 0, 0);
    }
}

#[test]
fn buffer_offsets_asked_for_are_where_the_buffers_sit() {
    // Receive 16 bytes after send modulo the page: the 4K-aliasing distance, on purpose.
    for (np, extra) in [
        (2, &[][..]),
        (1, &["--topology", "hybrid", "--devices-per-node", "2"][..]),
    ] {
        for c in run_offsets(np, extra, Some("64,80")) {
            assert_eq!((c.status.as_str(), c.wrong), ("ok", 0), "{:?}", c.message);
            assert_offsets(&c, 64, 80);
        }
    }
}

#[test]
fn a_sweep_spec_places_buffers_at_its_run_buffer_offset() {
    // `[run] buffer_offset` reaches every launch of a sweep, pure and hybrid alike; a bad one
    // is refused with the spec's file and line before anything runs.
    let dir = tmpdir("offsets-sweep");
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        "name = \"offsets\"\n[axes]\ndevices_per_node = 2\ntopology = [\"pure\", \"hybrid\"]\nworkloads = [\"allreduce\", \"allgather\"]\nsizes = [\"64\", \"64KiB\"]\nin_place = \"both\"\n[run]\ntime_budget_s = 0.01\nbuffer_offset = [0, 16]\n[launch]\noversubscribe = true\ntimeout_s = 120\n",
    )
    .unwrap();
    let out = dir.join("run");
    let r = sweep_ok(&spec, &out);
    assert_eq!(r.launches.len(), 2);
    assert_eq!(r.cases.len(), 2 * 2 * 2 * 2);
    for c in &r.cases {
        assert_eq!((c.status.as_str(), c.wrong), ("ok", 0), "{:?}", c.message);
        assert_offsets(c, 0, 16);
    }
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[axes]\ndtypes = \"f64\"\n[run]\nbuffer_offset = 4\n").unwrap();
    let r = solo(&[
        "sweep",
        "-q",
        bad.to_str().unwrap(),
        "--out",
        dir.join("bad").to_str().unwrap(),
    ]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("bad.toml:4:")
            && r.stderr.contains("run.buffer_offset")
            && r.stderr.contains("multiples of 8"),
        "{}",
        r.stderr
    );
    assert!(!dir.join("bad").exists(), "nothing is written on bad input");
}

#[test]
fn offsets_that_cannot_hold_an_element_or_leave_the_page_are_refused() {
    let out = tmpdir("offsets-bad").join("out");
    let o = out.to_str().unwrap();
    let r = solo(&[
        "run",
        "-q",
        "--out",
        o,
        "--dtype",
        "f64",
        "--buffer-offset",
        "4",
    ]);
    r.assert_code(2);
    assert!(r.stderr.contains("multiples of 8"), "{}", r.stderr);
    let r = solo(&["run", "-q", "--out", o, "--buffer-offset", "0,1000000"]);
    r.assert_code(2);
    assert!(r.stderr.contains("below"), "{}", r.stderr);
    let r = solo(&["run", "-q", "--out", o, "--buffer-offset", "x"]);
    r.assert_code(2);
    assert!(r.stderr.contains("SEND,RECV"), "{}", r.stderr);
    assert!(!out.exists(), "nothing is written on bad input");
}

/// 2 ranks, 64 B out of place in `timing` mode(s), plus `extra`; must exit 0.
fn one_64_byte_case(out: &std::path::Path, timing: &str, extra: &[&str]) {
    let mut a = vec!["--sizes", "64", "--in-place", "no", "--timing", timing];
    a.extend_from_slice(extra);
    mpirun(2, &run_q(out, &a)).assert_code(0);
}

#[test]
fn a_cold_first_operation_does_not_cut_the_iteration_count() {
    // `--fault cold`: the first operation of each case sleeps 1.5 s on every rank. Counts
    // from that call would be the minimum (5 iterations, pipelined turned isolated).
    let out = tmpdir("cold").join("out");
    one_64_byte_case(&out, "pipelined", &["--fault", "cold"]);
    let r = read_results(&out);
    assert_eq!(r.cases.len(), 1);
    let t = r.cases[0].timing.as_ref().unwrap();
    assert_eq!((t.warmup_iters, t.batches), (100, 20));
    let cal = t.calibration.as_ref().expect("calibration recorded");
    // OSU's 1000 in 20 batches, each lengthened to last 120 µs at the speed the last
    // pipelined probe measured.
    let est = cal.pipelined_estimate_s.expect("pipelined probe recorded");
    // two probes, then at most 2 re-sizes from timed batches that came out short
    assert!((2..=4).contains(&cal.pipelined_probes_s.len()), "{cal:?}");
    assert_eq!(Some(&est), cal.pipelined_probes_s.last());
    let floor = (120e-6 / est * (1.0 - 1e-9)).ceil() as u32;
    assert_eq!(t.iters, 20 * floor.max(50), "{cal:?}");
    assert!(cal.cold_op_s >= 1.5, "{cal:?}");
    assert!(cal.probes_s.len() >= 3, "{cal:?}");
    let min = cal.probes_s.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(cal.estimate_s, min);
    assert!(cal.estimate_s < 0.1, "{cal:?}");
    assert_eq!(cal.iters_source, "auto");
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn small_pipelined_batches_really_last_the_floor() {
    // 8 B broadcasts take ~0.1–0.3 µs pipelined but several times that timed alone: counts
    // from the isolated probe made 10–20 µs batches. The pipelined probe sizes them.
    let out = tmpdir("batch-floor").join("out");
    let a = ["-w", "broadcast", "--sizes", "8", "--timing", "pipelined"];
    mpirun(2, &run_q(&out, &a)).assert_code(0);
    let r = read_results(&out);
    assert_eq!(r.cases.len(), 1);
    let t = r.cases[0].timing.as_ref().unwrap();
    let cal = t.calibration.as_ref().unwrap();
    let batch_s = cal.realised_batch_s.expect("realised batch recorded");
    // recomputed from the samples: median per-op time × ops per batch
    let mut s = t.samples_s.clone();
    s.sort_by(f64::total_cmp);
    let median = if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
    };
    let want = median * f64::from(t.iters / t.batches);
    assert!((batch_s - want).abs() <= 1e-9 * want, "{batch_s} vs {want}");
    assert!(
        batch_s >= 100e-6,
        "realised batch {batch_s} s below the floor: {cal:?}"
    );
    assert!(
        !t.warnings.iter().any(|w| w.contains("floor")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn counts_below_the_minimum_are_warned_about_in_the_record() {
    let out = tmpdir("few-iters").join("out");
    one_64_byte_case(&out, "isolated,pipelined", &["--iters", "3"]);
    let r = read_results(&out);
    for c in &r.cases {
        let t = c.timing.as_ref().unwrap();
        assert_eq!(t.calibration.as_ref().unwrap().iters_source, "explicit");
        assert!(
            t.warnings
                .iter()
                .any(|w| w.contains("below the documented minimum of 5")),
            "{:?}",
            t.warnings
        );
        if t.mode == "pipelined" {
            assert!(t.warnings.iter().any(|w| w.contains("isolated timing")));
        }
    }
}

#[test]
fn provenance_names_copy_flags_and_libc() {
    let out = tmpdir("copy-provenance").join("out");
    solo(&run_q(&out, &["--sizes", "64"])).assert_code(0);
    let r = read_results(&out);
    let h = &r.launches[0].provenance.as_ref().unwrap().hosts[0];
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let flags_line = cpuinfo.lines().find(|l| l.starts_with("flags")).unwrap();
    let want: Vec<String> = ["erms", "fsrm", "avx2", "avx512f"]
        .iter()
        .filter(|f| flags_line.split_whitespace().any(|x| x == **f))
        .map(|f| f.to_string())
        .collect();
    assert_eq!(h.copy_flags.as_ref().unwrap(), &want);
    assert!(h.libc.as_deref().unwrap().starts_with("glibc 2."));
}

#[test]
fn hybrid_validates_every_collective_dtype_and_op_on_one_and_two_ranks() {
    // One rank (the shared-memory-only paths) and two ranks (with the leaders' MPI step),
    // an even and an odd number of workers; every output element is checked exactly.
    for (np, dpn) in [(1u32, 2u32), (1, 3), (2, 3)] {
        let out = tmpdir(&format!("hybrid-all-{np}x{dpn}")).join("out");
        let dpn_s = dpn.to_string();
        let nodes = np.to_string();
        mpirun_with(
            np,
            &["--bind-to", "none", "--oversubscribe"],
            &run_q(
                &out,
                &[
                    "-w",
                    COLLECTIVES,
                    "--sizes",
                    "96,6000",
                    "--dtype",
                    "f32,f64,i32",
                    "--op",
                    "sum,max,avg",
                    "--root",
                    "1",
                    "--topology",
                    "hybrid",
                    "--nodes",
                    &nodes,
                    "--devices-per-node",
                    &dpn_s,
                    "--iters",
                    "5",
                    "--warmup",
                    "1",
                ],
            ),
        )
        .assert_code(0);
        let r = read_results(&out);
        assert!(!r.cases.is_empty());
        for c in &r.cases {
            assert_eq!(
                (c.status.as_str(), c.wrong),
                ("ok", 0),
                "{np}x{dpn} {:?}: {:?}",
                c.params,
                c.message
            );
            assert_eq!(c.devices, np * dpn);
        }
    }
}

/// Issue 33 item 5: matmul and batch_matmul place their operands at `--buffer-offset` (A and B
/// at the send offset, C at the receive offset) and record where they sat. Before, they were
/// page-aligned whatever was asked and recorded nothing, while the provenance said it applied.
#[test]
fn gemm_workloads_place_their_operands_at_the_buffer_offset() {
    for (np, extra) in [
        (2, &[][..]),
        (1, &["--topology", "hybrid", "--devices-per-node", "2"][..]),
    ] {
        let out = tmpdir(&format!("offsets-gemm-{np}")).join("out");
        let mut args = run_q(
            &out,
            &[
                "-w",
                "matmul,batch_matmul",
                "--dims",
                "32",
                "--dtype",
                "f32,f64",
                "--time-budget",
                "0.01",
                "--buffer-offset",
                "64,80",
            ],
        );
        args.extend(extra);
        mpirun_with(np, &["--bind-to", "none"], &args).assert_code(0);
        let r = read_results(&out);
        let policy = r.launches[0]
            .provenance
            .as_ref()
            .unwrap()
            .buffer_policy
            .as_deref()
            .unwrap();
        assert!(policy.contains("matmul and batch_matmul: A, B"), "{policy}");
        assert_eq!(r.cases.len(), 4);
        for c in &r.cases {
            assert_eq!((c.status.as_str(), c.wrong), ("ok", 0), "{:?}", c.message);
            assert_offsets(c, 64, 80);
        }
    }
}

/// `--buffers reuse,rotate`: each collective case twice, the rotated one a case of its own
/// (another id, `buffers=rotate`), validated, with its sets recorded: at least one buffer's
/// worth each, the footprint twice the host's last-level cache where the 256 sets can reach
/// it, and said to fall short where they cannot. Pure on two ranks and hybrid.
#[test]
fn rotated_buffers_are_a_case_of_their_own_with_their_sets_recorded() {
    for (np, extra) in [
        (2, &[][..]),
        (1, &["--topology", "hybrid", "--devices-per-node", "2"][..]),
    ] {
        let out = tmpdir(&format!("rotate-{np}")).join("out");
        let mut args = run_q(
            &out,
            &[
                "-w",
                COLLECTIVES,
                "--sizes",
                "64,64KiB",
                "--time-budget",
                "0.01",
            ],
        );
        args.extend(["--buffers", "reuse,rotate"]);
        args.extend(extra);
        mpirun_with(np, &["--bind-to", "none"], &args).assert_code(0);
        let cases = read_results(&out).cases;
        let (rotated, reused): (Vec<&Case>, Vec<&Case>) = cases
            .iter()
            .partition(|c| c.params.buffers.as_deref() == Some("rotate"));
        assert_eq!(rotated.len(), reused.len(), "every case in both forms");
        assert!(rotated.len() >= 6 * 3, "{}", rotated.len());
        for c in &reused {
            assert!(
                c.params.buffers.is_none() && c.rotation.is_none(),
                "{}",
                c.id
            );
        }
        for c in &rotated {
            assert_eq!((c.status.as_str(), c.wrong), ("ok", 0), "{:?}", c.message);
            let twin = reused
                .iter()
                .find(|r| {
                    (
                        r.params.workload.as_str(),
                        r.params.requested_bytes,
                        r.params.in_place,
                    ) == (
                        c.params.workload.as_str(),
                        c.params.requested_bytes,
                        c.params.in_place,
                    )
                })
                .expect("its reused twin");
            assert_ne!(twin.id, c.id);
            let r = c.rotation.as_ref().expect("rotation recorded");
            assert!((1..=256).contains(&r.sets), "{r:?}");
            assert_eq!(r.footprint_bytes % u64::from(r.sets), 0, "{r:?}");
            let set = r.footprint_bytes / u64::from(r.sets);
            let send = c.send_count.unwrap() * c.element_bytes;
            assert!(set >= send, "a set holds at least the send buffer: {r:?}");
            match r.cache_bytes {
                Some(cache) => {
                    let want = (2 * cache).div_ceil(set).clamp(1, 256);
                    assert_eq!(u64::from(r.sets), want, "{r:?}");
                    assert_eq!(r.exceeds_cache, r.footprint_bytes >= 2 * cache, "{r:?}");
                }
                None => assert!(!r.exceeds_cache, "no cache size, no claim: {r:?}"),
            }
        }
    }
    let bad = solo(&["run", "--buffers", "cold"]);
    bad.assert_code(2);
    assert!(
        bad.stderr.contains("reuse") && bad.stderr.contains("rotate"),
        "{}",
        bad.stderr
    );
}
