//! `scalebench links`: the simulated attribution through the binary (findings, exit codes, bad
//! input), and the real measurement under mpirun, where a pair slowed by the test-only fault is
//! named as a link (not either node) and confirmed in isolation, and no fault names nothing;
//! over MPI (`--backend cpu`) and over NCCL send/recv on the stand-in CUDA libraries
//! (`--backend cuda`, [`over_nccl`]), which without a driver is refused with one sentence.

use crate::common;
use common::{mpirun, mpirun_with, s, solo, tmpdir};

#[test]
fn simulate_names_a_node_a_link_and_a_block() {
    let r = solo(&[
        "links",
        "--simulate",
        "64",
        "--seed",
        "3",
        "--slow-node",
        "17:0.62",
        "--slow-link",
        "3:9:0.48",
        "--slow-block",
        "40-47:0.6",
    ]);
    r.assert_code(1);
    let lines: Vec<&str> = r.stdout.lines().skip(1).collect();
    assert_eq!(lines.len(), 3, "{}", r.stdout);
    assert!(
        lines.iter().any(|l| l.starts_with("node n17: 6")),
        "{}",
        r.stdout
    );
    assert!(
        lines.iter().any(|l| l.starts_with("link n3↔n9: 4")),
        "{}",
        r.stdout
    );
    assert!(
        lines.iter().any(|l| l.starts_with("block n40–n47: 6")),
        "{}",
        r.stdout
    );
    let healthy = solo(&["links", "--simulate", "64", "--seed", "3"]);
    healthy.assert_code(0);
    assert!(healthy.stdout.contains("healthy"), "{}", healthy.stdout);
}

#[test]
fn simulate_json_carries_effect_and_confidence() {
    let r = solo(&[
        "links",
        "--simulate",
        "16",
        "--slow-link",
        "2:5:0.5",
        "--json",
    ]);
    r.assert_code(1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let f = &v["analysis"]["findings"][0];
    assert_eq!(f["kind"], "link");
    assert_eq!((f["a"].as_u64(), f["b"].as_u64()), (Some(2), Some(5)));
    let ratio = f["ratio"].as_f64().unwrap();
    assert!((0.4..0.6).contains(&ratio), "{f}");
    assert!(f["confidence"].as_f64().unwrap() > 0.99, "{f}");
}

#[test]
fn simulate_bad_input_is_refused() {
    let none = std::path::Path::new("/nonexistent-links-output");
    for (args, needles) in [
        (
            vec!["--slow-node", "70"],
            vec!["--slow-node", "node 70", "0..64"],
        ),
        (vec!["--slow-link", "3:3"], vec!["--slow-link 3:3"]),
        (vec!["--slow-block", "9-4"], vec!["--slow-block 9-4"]),
        (vec!["--slow-node", "1:1.5"], vec!["factor 1.5"]),
        (vec!["--noise=-1"], vec!["--noise -1"]),
        (vec!["--min-effect", "1"], vec!["--min-effect 1"]),
        (vec!["--slow-link", "3"], vec!["A:B[:FACTOR]"]),
    ] {
        let mut a = vec!["links", "--simulate", "64"];
        a.extend(&args);
        solo(&a).assert_refused(&args, &needles, none);
    }
}

/// Reads links.json from `dir`.
fn links_json(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("links.json")).expect("links.json written");
    serde_json::from_str(&text).unwrap()
}

/// `scalebench links` on 4 ranks of this machine (256 KiB, 15 iterations), writing `out`.
/// Four ranks on two cores jitter a cell by up to 2–3× (descheduling); 15 iterations keep
/// each cell's median steady.
fn links_on_four_ranks(out: &std::path::Path, extra: &[&str]) -> common::Ran {
    let mut args = vec![
        "links",
        "--size",
        "256KiB",
        "--iters",
        "15",
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    mpirun(4, &args)
}

/// 4 ranks on this machine, ranks 1 and 2 slowed 200×: named as the link 1↔2, confirmed in
/// isolation, no node named; exit 1. The matrix is full off the diagonal.
///
/// Why 200× and not 20×: with 4 nodes each node has 3 partners, so median polish leaks part
/// of one slow link into its nodes' effects, and only 6 link scores set the spread. On two
/// oversubscribed cores a healthy cell varies 2–3×; CI once saw a 20× link reach only
/// z = −3.9 (the verdict needs −5). 200× puts the same worst matrix at about z = −9.
///
/// One retry: the verdict rests on 6 link scores, and on two cores shared with the suite's
/// other tests the scheduler can slow an unplanted pair as much as the fault (CI, 2026-11-27:
/// 1↔3 at 0.066 GB/s against 23 GB/s elsewhere, the planted 1↔2 at 0.03-0.08), which widens
/// the spread until nothing reaches z = 5 and the run says healthy (exit 0). A second such run
/// in a row still fails the test, with both matrices shown.
#[test]
fn a_slowed_pair_is_named_as_a_link() {
    let _q = common::quiet();
    let mut out = tmpdir("links-fault");
    let mut r = links_on_four_ranks(&out, &["--fault", "slow_link:1:2:200"]);
    if r.code == 0 {
        let first = links_json(&out)["matrix_gbps"].to_string();
        out = tmpdir("links-fault-again");
        r = links_on_four_ranks(&out, &["--fault", "slow_link:1:2:200"]);
        assert_eq!(
            r.code, 1,
            "healthy twice; first matrix {first}\nsecond:\n{}",
            r.stdout
        );
    }
    r.assert_code(1);
    let v = links_json(&out);
    assert_eq!(v["links_format_version"], 3);
    assert_eq!(v["transport"], "mpi");
    assert_eq!(v["fault"], "slow_link:1:2:200");
    let m = v["matrix_gbps"].as_array().unwrap();
    assert_eq!(m.len(), 4);
    for (i, row) in m.iter().enumerate() {
        for (j, c) in row.as_array().unwrap().iter().enumerate() {
            assert_eq!(c.is_null(), i == j, "cell {i}→{j}: {c}");
        }
    }
    // A busy host may add an unconfirmed suspect; only what isolation confirms is named.
    let f: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["confirmed"] == true)
        .collect();
    assert_eq!(f.len(), 1, "{}\n{}", r.stdout, v["findings"]);
    assert_eq!(f[0]["kind"], "link");
    assert_eq!(f[0]["ranks"], serde_json::json!([1, 2]));
    assert_eq!(f[0]["confirmed"], true);
    assert!(f[0]["isolated_ratio"].as_f64().unwrap() < 0.5, "{}", f[0]);
    assert!(
        r.stdout.contains(":1↔") && r.stdout.contains("confirmed"),
        "{}",
        r.stdout
    );
}

/// `--topology FILE` on 4 ranks, each its own emulated node (e0..e3), the file hanging e1 and
/// e3 from leaf sA and e0 and e2 from sB, so the topology order (1, 3, 0, 2) is not rank
/// order; ranks 1 and 2 slowed 200×. The attribution reads the rows in topology order, and
/// the finding, its isolated re-measurement (the pair to re-measure is sent to the ranks as
/// ranks) and the file still name ranks 1 and 2: a wrong mapping would re-measure another
/// pair and leave the link unconfirmed. The file records the order and the switches; the heat
/// map is drawn in that order. One retry as in [`a_slowed_pair_is_named_as_a_link`].
#[test]
fn a_topology_file_orders_the_rows_and_findings_keep_their_ranks() {
    let _q = common::quiet();
    let dir = tmpdir("links-topology");
    let topo = dir.join("topology.conf");
    std::fs::write(
        &topo,
        "# two leaves, nodes interleaved with the ranks\nSwitchName=sA Nodes=e[1,3]\nSwitchName=sB Nodes=e[0,2]\nSwitchName=top Switches=s[A,B]\n",
    )
    .unwrap();
    let emulate = "export SLURMD_NODENAME=e$OMPI_COMM_WORLD_RANK; exec \"$@\"";
    let run = |out: &std::path::Path| {
        mpirun_with(
            4,
            &["bash", "-c", emulate, "emulate-nodes"],
            &[
                "links",
                "--size",
                "256KiB",
                "--iters",
                "15",
                "--fault",
                "slow_link:1:2:200",
                "--topology",
                s(&topo),
                "--out",
                s(out),
            ],
        )
    };
    let mut out = dir.join("one");
    let mut r = run(&out);
    if r.code == 0 {
        let first = links_json(&out)["matrix_gbps"].to_string();
        out = dir.join("two");
        r = run(&out);
        assert_eq!(
            r.code, 1,
            "healthy twice; first matrix {first}\nsecond:\n{}",
            r.stdout
        );
    }
    r.assert_code(1);
    let v = links_json(&out);
    assert_eq!(v["analysed"], "inter_node");
    assert_eq!(v["order"], serde_json::json!([1, 3, 0, 2]));
    assert_eq!(v["topology"], format!("file: {}", topo.display()));
    assert_eq!(
        v["switches"],
        serde_json::json!([{"name": "sA", "nodes": ["e1", "e3"]}, {"name": "sB", "nodes": ["e0", "e2"]}])
    );
    assert_eq!(
        v["hosts"],
        serde_json::json!(["e0", "e1", "e2", "e3"]),
        "rank order kept"
    );
    let confirmed: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["confirmed"] == true)
        .collect();
    assert_eq!(confirmed.len(), 1, "{}\n{}", r.stdout, v["findings"]);
    assert_eq!(confirmed[0]["kind"], "link");
    assert_eq!(confirmed[0]["ranks"], serde_json::json!([1, 2]));
    assert!(
        confirmed[0]["isolated_ratio"].as_f64().unwrap() < 0.5,
        "{}",
        confirmed[0]
    );
    assert!(
        r.stdout.contains("node order: file: ")
            && r.stdout.contains("(4 nodes under 2 switches)")
            && r.stdout.contains("link e1:1↔e2:2: "),
        "{}",
        r.stdout
    );
    // The heat map's axis lists ranks in the topology order.
    let svg = std::fs::read_to_string(out.join("links.svg")).unwrap();
    let at = |label: &str| {
        svg.find(label)
            .unwrap_or_else(|| panic!("{label} not in the heat map"))
    };
    assert!(at("e1:1") < at("e3:3") && at("e3:3") < at("e0:0") && at("e0:0") < at("e2:2"));
}

/// A topology file that cannot be read stops every rank before MPI with its file and line.
#[test]
fn a_bad_topology_file_is_refused_with_its_line() {
    let _q = common::quiet();
    let dir = tmpdir("links-topology-bad");
    let topo = dir.join("topology.conf");
    std::fs::write(
        &topo,
        "SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n2\n",
    )
    .unwrap();
    let r = mpirun(2, &["links", "--topology", s(&topo), "--out", s(&dir)]);
    r.assert_code(2);
    assert!(
        r.stderr.contains(&format!(
            "--topology {}:2: node n2 hangs from both s1 and s2",
            topo.display()
        )),
        "{}",
        r.stderr
    );
    assert!(!dir.join("links.json").exists());
}

/// The same job without the fault confirms nothing: exit 0.
#[test]
fn no_fault_names_nothing() {
    let _q = common::quiet();
    let out = tmpdir("links-healthy");
    let r = links_on_four_ranks(&out, &[]);
    r.assert_code(0);
    let v = links_json(&out);
    assert_eq!(v["analysed"], "intra_node");
    assert_eq!(v["fault"], serde_json::Value::Null);
    // A busy shared host may make a pair look slow under load; only what isolation confirms
    // is named (exit 1), and nothing is.
    let confirmed: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["confirmed"] == true)
        .collect();
    assert!(confirmed.is_empty(), "{}", r.stdout);
    // One host: the absolute floor has no pair between hosts to hold, said once.
    let note = v["floor"]["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("not checked: one host ("),
        "{}",
        v["floor"]
    );
    assert_eq!(
        r.stdout.matches("absolute floor:").count(),
        1,
        "{}",
        r.stdout
    );
}

/// Issue 45 item 4: 2 ranks, each its own emulated node (Slurm's node name set per rank), are
/// too few for an attribution, so links.json has no median. The report's section still
/// quotes the median its heat map is coloured against (never "No median" beside the chart's
/// "median X GB/s"), and says emulated nodes, not hosts, in its text and the chart's title.
#[test]
fn two_emulated_nodes_report_one_median_and_say_emulated_nodes() {
    let dir = tmpdir("links-emulated-report");
    let out = dir.join("run");
    let emulate = "export SLURMD_NODENAME=node$OMPI_COMM_WORLD_RANK; exec \"$@\"";
    let r = common::mpirun_with(
        2,
        &["bash", "-c", emulate, "emulate-nodes"],
        &[
            "links",
            "--size",
            "256KiB",
            "--iters",
            "5",
            "--out",
            s(&out),
        ],
    );
    assert!(
        r.code == 0 || r.code == 1,
        "exit {}\n{}\n{}",
        r.code,
        r.stdout,
        r.stderr
    );
    let v = links_json(&out);
    assert_eq!(v["emulated_nodes"], true, "{v:#}");
    assert!(!r.stdout.contains("median ?"), "{}", r.stdout);
    let rep = dir.join("rep");
    solo(&["report", s(&out), "--out", s(&rep)]).assert_code(0);
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    let at = md
        .find("## Links: the slow node or link")
        .expect("links section");
    let section = &md[at..];
    println!("{}", &section[..section.len().min(1500)]);
    assert!(!section.contains("No median"), "{section}");
    assert!(
        section.contains("2 ranks on 2 emulated nodes") && !section.contains("on 2 hosts"),
        "{section}"
    );
    // the text's median is the chart's: "Median of the inter-node pairs: X GB/s" and the
    // caption's "(median X GB/s)"
    let quoted = |key: &str| -> String {
        let i = section
            .find(key)
            .unwrap_or_else(|| panic!("no {key:?}: {section}"));
        section[i + key.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    let text_median = quoted("Median of the inter-node pairs: ");
    let chart_median = quoted("(median ");
    assert_eq!(text_median, chart_median, "{section}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 45 item 4: a start-up that hangs (the test fault blocks rank 1 before `MPI_Init`,
/// so rank 0 waits in its start-up fence) is ended by the links watchdog at `--op-timeout`
/// (4 s here), with exit 4 and one sentence from rank 0, not left hanging.
#[test]
fn a_hung_start_up_is_ended_by_the_watchdog_with_one_sentence() {
    let dir = tmpdir("links-hung-start");
    let started = std::time::Instant::now();
    let r = mpirun(
        2,
        &[
            "links",
            "--fault",
            "hang_start:1",
            "--op-timeout",
            "4",
            "--out",
            s(&dir),
        ],
    );
    let took_s = started.elapsed().as_secs_f64();
    let ours: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("scalebench links:"))
        .collect();
    println!("exit {} after {took_s:.1} s: {ours:?}", r.code);
    assert!(
        r.code != 0 && r.code != 124 && r.code != 137,
        "exit {}\n{}",
        r.code,
        r.stderr
    );
    // 4 s, the others' 3 s later, and mpirun's own start and end on a loaded host
    assert!(took_s < 40.0, "took {took_s:.1} s\n{}", r.stderr);
    assert_eq!(ours.len(), 1, "one sentence:\n{}", r.stderr);
    assert!(
        ours[0].contains("the start-up (MPI_Init")
            && ours[0].contains("did not finish within 4 s (rank 0)"),
        "{}",
        ours[0]
    );
    assert!(!dir.join("links.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The absolute floor under real mpirun: 2 emulated nodes × 2 ranks (Slurm's node name set per
/// rank), every host leader reading its link ceiling from a fake sysfs tree.
mod floor {
    use super::*;

    /// A sysfs tree with one physical Ethernet interface at `speed_mbps` (what the kernel
    /// reports in `class/net/IF/speed`), or none at all.
    fn fake_sysfs(dir: &std::path::Path, speed_mbps: Option<u64>) -> std::path::PathBuf {
        let root = dir.join("sys");
        std::fs::create_dir_all(root.join("class/net")).unwrap();
        if let Some(mbps) = speed_mbps {
            let eth = root.join("class/net/eth0");
            std::fs::create_dir_all(eth.join("device")).unwrap();
            std::fs::write(eth.join("speed"), format!("{mbps}\n")).unwrap();
        }
        root
    }

    /// `mpirun -np 4 bash -c EMULATE scalebench links --size 1MiB --iters 5 --sysfs-root ROOT
    /// --out OUT EXTRA…`: ranks 0, 1 on node0 and 2, 3 on node1.
    fn on_two_nodes(out: &std::path::Path, root: &std::path::Path, extra: &[&str]) -> common::Ran {
        let emulate = "export SLURMD_NODENAME=node$((OMPI_COMM_WORLD_RANK / 2)); exec \"$@\"";
        let mut args = vec![
            "links",
            "--size",
            "1MiB",
            "--iters",
            "5",
            "--sysfs-root",
            s(root),
            "--out",
            s(out),
        ];
        args.extend_from_slice(extra);
        common::mpirun_with(4, &["bash", "-c", emulate, "emulate-nodes"], &args)
    }

    /// Confirmed attribution findings (a busy host can make one; the floor tests do not
    /// depend on them either way, but a healthy verdict needs none).
    fn confirmed(v: &serde_json::Value) -> usize {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["confirmed"] == true)
            .count()
    }

    /// A link of 8 Tb/s (1,000 GB/s per direction: far beyond what shared memory moves on any
    /// CPU) on both nodes: every inter-node cell is below half of it, so the fabric is named,
    /// re-measured one pair at a time, still below, confirmed; exit 1.
    #[test]
    fn a_link_far_faster_than_the_cells_names_the_fabric() {
        let _q = common::quiet();
        let dir = tmpdir("links-floor-fast");
        let root = fake_sysfs(&dir, Some(8_000_000));
        let out = dir.join("out");
        let r = on_two_nodes(&out, &root, &[]);
        r.assert_code(1);
        let v = links_json(&out);
        assert_eq!(v["links_format_version"], 3);
        let fl = &v["floor"];
        assert_eq!(fl["fraction"], 0.5);
        assert_eq!(
            fl["link_gbps"],
            serde_json::json!([1000.0, 1000.0, 1000.0, 1000.0])
        );
        assert_eq!(fl["checked_cells"], 8, "{fl}");
        let f = fl["findings"].as_array().unwrap();
        assert_eq!(f.len(), 1, "{fl}");
        assert_eq!(f[0]["kind"], "fabric");
        assert_eq!(f[0]["confirmed"], true, "{fl}");
        assert!(f[0]["ratio"].as_f64().unwrap() < 0.5, "{fl}");
        assert!(f[0]["isolated_ratio"].as_f64().unwrap() < 0.5, "{fl}");
        assert!(
            r.stdout.contains(
                "absolute floor: fabric: all 8 inter-node cells below 50 % of the link ceiling"
            ) && r.stdout.contains("confirmed"),
            "{}",
            r.stdout
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A 10 Mb/s link (1.25 MB/s): every cell is far above half of it: nothing is below the
    /// floor, one line says how many cells were held; exit 0.
    #[test]
    fn a_slow_link_is_no_finding() {
        let _q = common::quiet();
        let dir = tmpdir("links-floor-slow");
        let root = fake_sysfs(&dir, Some(10));
        let out = dir.join("out");
        let r = on_two_nodes(&out, &root, &[]);
        let v = links_json(&out);
        let fl = &v["floor"];
        assert_eq!(fl["checked_cells"], 8, "{fl}");
        assert_eq!(fl["findings"], serde_json::json!([]), "{fl}");
        assert_eq!(fl["note"], serde_json::Value::Null, "{fl}");
        assert!(
            r.stdout.contains(
                "absolute floor: 8 inter-node cells at or above 50 % of the slower host's link ceiling"
            ),
            "{}",
            r.stdout
        );
        assert_eq!(confirmed(&v), 0, "{}", r.stdout);
        r.assert_code(0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// No interface in sysfs: no ceiling is invented; the note names both hosts once; exit 0.
    #[test]
    fn no_known_ceiling_is_a_note_not_a_finding() {
        let _q = common::quiet();
        let dir = tmpdir("links-floor-unknown");
        let root = fake_sysfs(&dir, None);
        let out = dir.join("out");
        let r = on_two_nodes(&out, &root, &[]);
        let v = links_json(&out);
        let fl = &v["floor"];
        assert_eq!(fl["link_gbps"], serde_json::json!([null, null, null, null]));
        assert_eq!(fl["checked_cells"], 0);
        assert_eq!(
            fl["note"],
            "no link ceiling known for 2 hosts (node0, node1): no pair is held to an absolute floor"
        );
        assert_eq!(
            r.stdout.matches("absolute floor:").count(),
            1,
            "{}",
            r.stdout
        );
        assert_eq!(confirmed(&v), 0, "{}", r.stdout);
        r.assert_code(0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `off` holds nothing even on the fast link (said once, exit 0 unless the attribution
    /// confirms something); a fraction out of range or not a number is refused with its
    /// sentence, exit 2, nothing written.
    #[test]
    fn the_fraction_is_checked_and_off_switches_it_off() {
        let dir = tmpdir("links-floor-fraction");
        for bad in ["1.5", "0", "half"] {
            let out = dir.join(format!("out-{bad}"));
            solo(&["links", "--floor-fraction", bad, "--out", s(&out)]).assert_refused(
                &bad,
                &[
                    &format!("--floor-fraction {bad}: "),
                    "give a fraction above 0 and at most 1",
                ],
                &out,
            );
        }
        let _q = common::quiet();
        let root = fake_sysfs(&dir, Some(8_000_000));
        let out = dir.join("off");
        let r = on_two_nodes(&out, &root, &["--floor-fraction", "off"]);
        let v = links_json(&out);
        assert_eq!(v["floor"]["fraction"], serde_json::Value::Null);
        assert_eq!(v["floor"]["findings"], serde_json::json!([]));
        assert!(
            r.stdout
                .contains("absolute floor: not checked: switched off (--floor-fraction off)"),
            "{}",
            r.stdout
        );
        assert_eq!(
            r.code,
            if confirmed(&v) > 0 { 1 } else { 0 },
            "{}",
            r.stdout
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The `<figure>` of a report page with id `fig-STEM`, up to its end.
fn html_figure<'a>(html: &'a str, stem: &str) -> &'a str {
    let at = html
        .find(&format!("<figure id=\"fig-{stem}\""))
        .unwrap_or_else(|| panic!("no figure {stem} in the page"));
    let rest = &html[at..];
    &rest[..rest.find("</figure>").expect("a closed figure")]
}

/// `--simulate --out` writes links.json (labelled simulated) and links.svg; `scalebench report`
/// on that directory alone is a links-only report, and beside a results file the run's report
/// gains the links section: the link named with its effect and verdict, the heat map embedded
/// (the link's two cells outlined), the simulation said.
#[test]
fn a_simulated_links_dir_is_reported_with_its_heat_map() {
    let dir = tmpdir("links-report");
    let out = dir.join("run");
    let r = solo(&[
        "links",
        "--simulate",
        "16",
        "--slow-link",
        "3:9",
        "--out",
        s(&out),
    ]);
    r.assert_code(1);
    assert!(r.stdout.contains("links.svg"), "{}", r.stdout);
    let v = links_json(&out);
    assert_eq!(v["links_format_version"], 3);
    assert_eq!(
        v["transport"],
        serde_json::Value::Null,
        "a simulation has no transport"
    );
    let sim = v["simulated"].as_str().expect("labelled simulated");
    assert!(
        sim.contains("16 nodes") && sim.contains("slow link 3:9 at 0.5"),
        "{sim}"
    );
    assert_eq!(v["findings"][0]["kind"], "link");
    assert_eq!(v["findings"][0]["confirmed"], false);
    let svg = std::fs::read_to_string(out.join("links.svg")).expect("links.svg written");
    assert!(
        svg.starts_with("<svg") && svg.contains("SIMULATED"),
        "{}",
        &svg[..200]
    );

    // Links only: the section is the report.
    let only = dir.join("only");
    solo(&["report", s(&out), "--out", s(&only)]).assert_code(0);
    let md = std::fs::read_to_string(only.join("report.md")).unwrap();
    assert!(md.contains("## Links: the slow node or link"), "{md}");
    assert!(md.contains("| link | n3:3↔n9:9 | 5"), "{md}");
    assert!(md.contains("not re-measured (simulated)"), "{md}");
    assert!(md.contains("warning: SIMULATED matrix"), "{md}");
    assert!(md.contains("](charts/links.png)"), "{md}");
    for f in [
        "charts/links.png",
        "charts/links.svg",
        "tables/links_findings.csv",
    ] {
        assert!(only.join(f).is_file(), "{f}");
    }
    // Unconfirmed: outlined in black, 2 px, at the link's two cells.
    let html = std::fs::read_to_string(only.join("report.html")).unwrap();
    let fig = html_figure(&html, "links");
    assert!(fig.contains("<svg"), "the heat map is inline");
    let marks = fig
        .matches("<polyline fill=\"none\" opacity=\"1\" stroke=\"#000000\" stroke-width=\"2\"")
        .count();
    // The two cells, and the legend's sample.
    assert_eq!(marks, 3, "{fig}");

    // Beside a results file: the run's report, and the links section in it.
    common::fixture::write(&out, "results.json", &common::fixture::golden());
    let full = dir.join("full");
    let rr = solo(&["report", s(&out), "--out", s(&full)]);
    rr.assert_code(0);
    // The results' cases are reported too (the golden file holds several).
    assert!(!rr.stdout.contains("(0 cases"), "{}", rr.stdout);
    let md = std::fs::read_to_string(full.join("report.md")).unwrap();
    let links_at = md
        .find("## Links: the slow node or link")
        .expect("links section");
    assert!(md[links_at..].contains("| link | n3:3↔n9:9 | 5"), "{md}");
    let html = std::fs::read_to_string(full.join("report.html")).unwrap();
    assert!(html_figure(&html, "links").contains("SIMULATED"));
    assert!(full.join("charts/links.svg").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A measured links run with the test fault, reported: the section says the fault was injected
/// and names the pair as a confirmed link, outlined in red on the heat map.
#[test]
fn a_faulted_links_run_is_reported_as_a_confirmed_link_and_a_test_fault() {
    let _q = common::quiet();
    let dir = tmpdir("links-fault-report");
    let mut out = dir.join("run");
    let mut r = links_on_four_ranks(&out, &["--fault", "slow_link:1:2:200"]);
    // One retry, as `a_slowed_pair_is_named_as_a_link` takes: on two cores shared with the
    // suite's other tests the scheduler can slow unplanted pairs as much as the fault.
    if r.code == 0 {
        out = dir.join("run-again");
        r = links_on_four_ranks(&out, &["--fault", "slow_link:1:2:200"]);
    }
    r.assert_code(1);
    assert!(out.join("links.svg").is_file(), "{}", r.stdout);
    let rep = dir.join("report");
    solo(&["report", s(&out), "--out", s(&rep)]).assert_code(0);
    // Markdown escapes the underscore; the words are what matter.
    let md = std::fs::read_to_string(rep.join("report.md"))
        .unwrap()
        .replace("\\_", "_");
    assert!(
        md.contains("test-only fault hook (slow_link:1:2:200)"),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| link |") && l.contains(":1↔") && l.contains(":2 |"))
        .unwrap_or_else(|| panic!("the link 1↔2 in the findings table:\n{md}"));
    assert!(row.contains("**confirmed**"), "{row}");
    let html = std::fs::read_to_string(rep.join("report.html")).unwrap();
    let red = html_figure(&html, "links")
        .matches("stroke=\"#E8001C\" stroke-width=\"3\"")
        .count();
    // The link's two cells and the legend's sample (a busy host may add unconfirmed ones).
    assert_eq!(red, 3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One rank has no pair: a sentence and exit 2 on every schedule, never an MPI error from the
/// gather of an empty matrix (which `links` alone used to end in, on the H200 too).
#[test]
fn one_rank_is_refused_with_one_sentence() {
    let dir = tmpdir("links-one-rank");
    for schedule in ["round-robin", "shift", "rail"] {
        let out = dir.join(schedule);
        mpirun(
            1,
            &[
                "links",
                "--schedule",
                schedule,
                "--size",
                "4KiB",
                "--out",
                s(&out),
            ],
        )
        .assert_refused(
            &schedule,
            &["links measures pairs of ranks and this job has 1: start it with at least 2"],
            &out,
        );
    }
}

/// In a build without the `rocm` feature, `--backend rocm` is refused with the rebuild
/// command (exit 2, nothing written); with it, `rocm::standin::links_over_rccl_give_a_full_matrix`
/// measures over RCCL and this checks that no HIP runtime is one sentence, exit 2.
#[test]
fn rocm_without_its_libraries_is_refused_with_one_sentence() {
    let dir = tmpdir("links-rocm");
    let out = dir.join("out");
    let sentence = if cfg!(feature = "rocm") {
        "no HIP runtime found: "
    } else {
        "--backend rocm: this scalebench was built without ROCm support: rebuild with"
    };
    let r = common::mpirun_with(
        2,
        &["-x", "LD_LIBRARY_PATH=/nonexistent"],
        &["links", "--backend", "rocm", "--out", s(&out)],
    );
    r.assert_refused(&"--backend rocm", &[sentence], &out);
    assert_eq!(
        r.stderr.matches("scalebench: error:").count(),
        1,
        "{}",
        r.stderr
    );
}

/// Without a CUDA driver (this machine, CI) `--backend cuda` is refused by every rank with the
/// driver's sentence, exit 2, no panic, nothing written; in a build without the feature, with
/// the rebuild command. Where a driver exists, hiding every device must fail the same way.
#[test]
fn cuda_without_a_driver_is_refused_with_one_sentence() {
    let dir = tmpdir("links-nodriver");
    let out = dir.join("out");
    let args = [
        "links",
        "--backend",
        "cuda",
        "--size",
        "64KiB",
        "--out",
        s(&out),
    ];
    if !cfg!(feature = "cuda") {
        mpirun(2, &args).assert_refused(
            &"--backend cuda",
            &["--backend cuda: this scalebench was built without CUDA support: rebuild with"],
            &out,
        );
        return;
    }
    #[cfg(feature = "cuda")]
    {
        let (ran, sentence) = if scalebench::backend::cuda::probe::libraries().driver {
            (
                common::mpirun_with(2, &["-x", "CUDA_VISIBLE_DEVICES="], &args),
                "no CUDA device: ",
            )
        } else {
            (mpirun(2, &args), "no CUDA driver found: ")
        };
        ran.assert_refused(&"--backend cuda", &[sentence], &out);
        // Rank 0 says it once: the ranks agreed on one sentence.
        assert_eq!(
            ran.stderr.matches("scalebench: error:").count(),
            1,
            "{}",
            ran.stderr
        );
        // A size NCCL cannot send as 4-byte words is refused before any GPU is looked for.
        let odd = [
            "links",
            "--backend",
            "cuda",
            "--size",
            "1001",
            "--out",
            s(&out),
        ];
        solo(&odd).assert_refused(&"--size 1001", &["give a multiple of 4 bytes"], &out);
    }
}

/// `--backend cuda` on scalebench's stand-in CUDA libraries (CPU test doubles; no GPU): NCCL
/// send/recv between one stand-in device per rank, under real mpirun.
#[cfg(feature = "cuda")]
mod over_nccl {
    use super::*;
    use crate::cuda::standin::{env, libs, strs};

    /// Every off-diagonal cell of a links.json measured, the diagonal empty.
    fn assert_full_matrix(v: &serde_json::Value, n: usize) {
        let m = v["matrix_gbps"].as_array().unwrap();
        assert_eq!(m.len(), n);
        for (i, row) in m.iter().enumerate() {
            let row = row.as_array().unwrap();
            assert_eq!(row.len(), n);
            for (j, c) in row.iter().enumerate() {
                if i == j {
                    assert!(c.is_null(), "cell {i}→{j}: {c}");
                } else {
                    assert!(c.as_f64().is_some_and(|g| g > 0.0), "cell {i}→{j}: {c}");
                }
            }
        }
    }

    /// `mpirun -np 4 [PREFIX…] scalebench links --backend cuda --size 256KiB --iters 15
    /// --out OUT EXTRA…` on the stand-ins, 4 stand-in devices visible.
    fn links_on_standin(out: &std::path::Path, prefix: &[&str], extra: &[&str]) -> common::Ran {
        let mut m: Vec<String> = Vec::new();
        for (k, v) in env(libs().to_str().unwrap(), &["SCALEBENCH_STANDIN_DEVICES=4"]) {
            m.push("-x".into());
            m.push(format!("{k}={v}"));
        }
        m.extend(prefix.iter().map(|p| p.to_string()));
        let mut args = vec![
            "links",
            "--backend",
            "cuda",
            "--size",
            "256KiB",
            "--iters",
            "15",
            "--out",
            s(out),
        ];
        args.extend_from_slice(extra);
        common::mpirun_with(4, &strs(&m), &args)
    }

    /// The file says NCCL, its version and the stand-in label; so does the output.
    fn assert_nccl_standin(r: &common::Ran, v: &serde_json::Value) {
        assert_eq!(v["links_format_version"], 3);
        assert_eq!(v["transport"], "nccl");
        assert_eq!(
            v["nccl_version"], "2.28.3",
            "the stand-in's default version"
        );
        assert!(
            v["standin"]
                .as_str()
                .is_some_and(|l| l.starts_with("STAND-IN: ")),
            "{}",
            v["standin"]
        );
        assert!(
            r.stdout
                .contains("over STAND-IN NCCL 2.28.3 send/recv, one GPU per rank"),
            "{}",
            r.stdout
        );
    }

    /// 2 emulated nodes × 2 ranks (Slurm's node names set per rank; each node its own pair of
    /// stand-in devices, as a launcher's GPU binding gives): every off-diagonal cell measured
    /// over NCCL, the nodes recognised as emulated, the inter-node pairs analysed.
    #[test]
    fn two_by_two_standin_devices_give_a_full_matrix() {
        let out = tmpdir("links-nccl-2x2");
        let emulate = "k=$((OMPI_COMM_WORLD_RANK / 2)); export SLURMD_NODENAME=node$k CUDA_VISIBLE_DEVICES=$((2 * k)),$((2 * k + 1)); exec \"$@\"";
        let r = links_on_standin(&out, &["bash", "-c", emulate, "emulate-nodes"], &[]);
        assert!(
            r.code == 0 || r.code == 1,
            "exit {}\n{}\n{}",
            r.code,
            r.stdout,
            r.stderr
        );
        let v = links_json(&out);
        assert_full_matrix(&v, 4);
        assert_nccl_standin(&r, &v);
        assert_eq!(
            v["hosts"],
            serde_json::json!(["node0", "node0", "node1", "node1"])
        );
        assert_eq!(v["emulated_nodes"], true);
        assert_eq!(v["analysed"], "inter_node");
        assert!(
            r.stdout.starts_with("4 ranks on 2 emulated nodes"),
            "{}",
            r.stdout
        );
        // Nothing was injected, so whatever the busy host made look slow under load is not
        // confirmed in isolation: exit 0.
        let confirmed: Vec<&serde_json::Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["confirmed"] == true)
            .collect();
        assert!(confirmed.is_empty(), "{}", r.stdout);
        r.assert_code(0);
        let _ = std::fs::remove_dir_all(&out);
    }

    /// The test fault on the NCCL path (ranks 1 and 2, 200×, slept between the stream's CUDA
    /// events so the events time the longer exchange): named as the link 1↔2 — not either
    /// node — and confirmed in isolation; exit 1. 4 ranks on this host, one device each.
    #[test]
    fn a_slowed_pair_is_named_as_a_link_over_nccl() {
        let _q = common::quiet();
        let out = tmpdir("links-nccl-fault");
        let r = links_on_standin(&out, &[], &["--fault", "slow_link:1:2:200"]);
        r.assert_code(1);
        let v = links_json(&out);
        assert_full_matrix(&v, 4);
        assert_nccl_standin(&r, &v);
        assert_eq!(v["fault"], "slow_link:1:2:200");
        let f: Vec<&serde_json::Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["confirmed"] == true)
            .collect();
        assert_eq!(f.len(), 1, "{}\n{}", r.stdout, v["findings"]);
        assert_eq!(f[0]["kind"], "link");
        assert_eq!(f[0]["ranks"], serde_json::json!([1, 2]));
        assert!(f[0]["isolated_ratio"].as_f64().unwrap() < 0.5, "{}", f[0]);
        let _ = std::fs::remove_dir_all(&out);
    }
}
