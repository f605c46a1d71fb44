//! Issue 31 items 3 and 4: the report's NCCL algorithm × protocol section (every setting
//! tried, the fastest, crossovers, NCCL's default against the fastest) and the tuner file
//! `report --nccl-tuner` writes for NCCL's example CSV tuner.

use crate::common::csv::{parse_csv, read_csv};
use crate::common::{report, run_q, s, solo, tmpdir};
use std::collections::BTreeMap;
use std::path::Path;

/// A table CSV of a report: its header and rows as column → value.
fn csv_rows(path: &Path) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let head = parse_csv(&text).into_iter().next().unwrap_or_default();
    (head, read_csv(path))
}

/// Results without any NCCL sweep: `--nccl-tuner` is refused (exit 2, one sentence naming
/// the option, the file and what to run), and neither the report nor the file is written.
#[test]
fn a_tuner_export_without_a_sweep_is_refused() {
    let dir = tmpdir("nccl-tuner-refused");
    let out = dir.join("run");
    solo(&run_q(
        &out,
        &["-w", "allreduce", "--sizes", "1KiB", "-n", "2"],
    ))
    .assert_code(0);
    let rep = dir.join("report");
    let tuner = dir.join("nccl_tuner.conf");
    let ran = report(&[s(&out), "--out", s(&rep), "--nccl-tuner", s(&tuner)]);
    ran.assert_refused(
        &"no sweep",
        &[&format!(
            "--nccl-tuner {}: no NCCL sweep in the inputs",
            tuner.display()
        )],
        &rep,
    );
    assert_eq!(ran.stderr.trim().lines().count(), 1, "{}", ran.stderr);
    assert!(!tuner.exists(), "no tuner file");
    assert!(!rep.exists(), "no report");
}

#[cfg(feature = "cuda")]
mod on_the_standin {
    use super::csv_rows;
    use crate::common::{report, s, tmpdir, write_file};
    use crate::cuda::standin::{env, libs, solo_with};

    /// The 12 settings of the sweep below, as the table's columns name them.
    const SETTINGS: [&str; 12] = [
        "default",
        "algo=default proto=ll",
        "algo=default proto=ll128",
        "algo=default proto=simple",
        "algo=tree proto=default",
        "algo=tree proto=ll",
        "algo=tree proto=ll128",
        "algo=tree proto=simple",
        "algo=ring proto=default",
        "algo=ring proto=ll",
        "algo=ring proto=ll128",
        "algo=ring proto=simple",
    ];

    /// Issue 31 items 3 and 4 end to end on the stand-in NCCL: a sweep over (default, tree,
    /// ring) × (default, LL, LL128, Simple) on all-reduce. The stand-in's costs (scaled 20×
    /// so they dwarf its own copying and a busy host) make Tree/LL fastest at 1 KiB (NCCL's
    /// default there too), the planted Ring/LL128 fastest at 64 KiB where the default picks
    /// Tree/Simple (380 µs against 464 µs unscaled), and Ring/Simple fastest at 256 KiB
    /// (the default again); 4 KiB is within 7 % between Tree/LL128 and Ring/LL128 and is
    /// not asserted on. The report's table holds every setting, the 64 KiB finding names the
    /// planted pair with its interval, the crossovers bracket it, and the tuner file names
    /// it for a band holding 64 KiB, with a STAND-IN comment.
    ///
    /// Why the earlier attempt saw 4 of 6 forced pairs: on this shared machine a launch
    /// whose host was busy is "not representative" (host_busy) and the report's rule leaves
    /// such cases out of winners; the section used to drop them, so whole settings vanished
    /// at random. They now stay in the table, marked; the winner and tuner assertions use
    /// `--include-unrepresentative` (the report's documented switch) so that they do not
    /// depend on the machine's load.
    #[test]
    fn a_sweep_names_the_planted_fastest_and_exports_it() {
        let dir = tmpdir("nccl-report-sweep");
        let out = dir.join("out");
        let spec = write_file(
            &dir,
            "sweep.toml",
            "[axes]\nbackend = \"cuda\"\ntopology = \"hybrid\"\ndevices_per_node = 2\nworkloads = \"allreduce\"\nsizes = \"1KiB,4KiB,64KiB,256KiB\"\nin_place = false\nnccl_algo = [\"default\", \"ring\", \"tree\"]\nnccl_proto = [\"default\", \"ll\", \"ll128\", \"simple\"]\n[run]\niters = 6\nwarmup = 1\n",
        );
        let e = env(
            libs().to_str().unwrap(),
            &[
                "SCALEBENCH_NCCL_CAPTURE=1",
                "SCALEBENCH_STANDIN_NCCL_COST_SCALE=20",
            ],
        );
        let args = ["sweep", "-q", s(&spec), "--out", s(&out)].map(String::from);
        solo_with(&e, &args).assert_code(0);

        // Without --include-unrepresentative: every setting is in the table whatever the
        // host's load did to some launches.
        let plain = dir.join("plain");
        report(&[s(&out), "--out", s(&plain), "--format", "csv"]).assert_code(0);
        let (head, rows) = csv_rows(&plain.join("tables/nccl_allreduce.csv"));
        // The debug print the brief asked for: the grouped keys (settings) as the table has them.
        eprintln!("nccl sweep columns: {head:?}");
        let settings: Vec<&str> = head.iter().filter_map(|c| c.strip_suffix(" µs")).collect();
        assert_eq!(settings, SETTINGS, "every setting tried, default first");
        assert_eq!(rows.len(), 4, "{rows:?}");
        for r in &rows {
            for x in SETTINGS {
                assert!(!r[&format!("{x} µs")].is_empty(), "{x} at {}", r["size"]);
            }
        }

        // With them: the winners, the finding, the crossovers and the tuner file.
        let rep = dir.join("report");
        let tuner = dir.join("nccl_tuner.conf");
        let ran = report(&[
            s(&out),
            "--out",
            s(&rep),
            "--format",
            "md,csv",
            "--include-unrepresentative",
            "--nccl-tuner",
            s(&tuner),
        ]);
        ran.assert_code(0);
        assert!(
            ran.stdout.contains("NCCL tuner configuration"),
            "{}",
            ran.stdout
        );
        let (_, rows) = csv_rows(&rep.join("tables/nccl_allreduce.csv"));
        let at = |bytes: &str| {
            rows.iter()
                .find(|r| r["size"] == bytes)
                .unwrap_or_else(|| panic!("no row {bytes}: {rows:?}"))
        };
        let small = at("1024");
        assert_eq!(small["fastest"], "tree/ll", "{small:?}");
        assert_eq!(small["default ran"], "tree/ll", "{small:?}");
        assert_eq!(small["default"], "fastest", "{small:?}");
        let planted = at("65536");
        assert_eq!(planted["fastest"], "ring/ll128", "{planted:?}");
        assert_eq!(planted["default ran"], "tree/simple", "{planted:?}");
        assert_eq!(planted["default"], "beaten", "{planted:?}");
        let ratio: f64 = planted["default / fastest"].parse().unwrap();
        let p5: f64 = planted["ratio p5"].parse().unwrap();
        assert!(ratio > 1.05 && p5 > 1.0, "{planted:?}");
        let large = at("262144");
        assert_eq!(large["fastest"], "ring/simple", "{large:?}");
        assert_eq!(large["default"], "fastest", "{large:?}");

        // Crossovers: into Ring/LL128 at or below 64 KiB, out of it to Ring/Simple above.
        let (_, cross) = csv_rows(&rep.join("tables/nccl_crossovers.csv"));
        assert!(
            cross.iter().any(|c| c["fastest above"] == "ring/ll128"
                && c["above bytes"].parse::<u64>().unwrap() <= 65536),
            "{cross:?}"
        );
        assert!(
            cross.iter().any(|c| c["fastest below"] == "ring/ll128"
                && c["below bytes"] == "65536"
                && c["above bytes"] == "262144"
                && c["fastest above"] == "ring/simple"),
            "{cross:?}"
        );
        assert!(cross.iter().all(|c| c["set-up"].ends_with("STAND-IN")));

        // The finding leads the report, labelled STAND-IN, with its interval.
        let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
        let finding = md
            .lines()
            .find(|l| l.starts_with("- **NCCL:**") && l.contains("at 64KiB"))
            .unwrap_or_else(|| panic!("no 64KiB finding:\n{md}"));
        for needle in [
            "(STAND-IN)",
            "NCCL's own choice tree/simple took",
            "the time of ring/ll128",
            "p5–p95 of the sample ratios",
        ] {
            assert!(finding.contains(needle), "{needle}: {finding}");
        }
        assert!(md.contains("## NCCL algorithms and protocols"));

        // The tuner file: STAND-IN said, NCCL's ten fields, ordered disjoint bands, the
        // planted pair for the band holding 64 KiB.
        let text = std::fs::read_to_string(&tuner).unwrap();
        assert!(
            text.lines()
                .take_while(|l| l.starts_with('#'))
                .any(|l| l.starts_with("# STAND-IN")),
            "{text}"
        );
        let lines: Vec<Vec<&str>> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(',').collect())
            .collect();
        assert!(!lines.is_empty(), "{text}");
        let mut last_max = 0u64;
        for f in &lines {
            assert_eq!(f.len(), 10, "{f:?}");
            assert_eq!(f[0], "allreduce");
            let (lo, hi): (u64, u64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
            assert!(lo <= hi && lo > last_max, "{text}");
            last_max = hi;
            assert_eq!(&f[5..], ["-1", "1", "2", "-1", "-1"], "{f:?}");
        }
        let band = |bytes: u64| {
            lines
                .iter()
                .find(|f| f[1].parse::<u64>().unwrap() <= bytes && bytes <= f[2].parse().unwrap())
                .unwrap_or_else(|| panic!("no band for {bytes}: {text}"))
        };
        assert_eq!(band(65536)[3..5], ["ring", "ll128"], "{text}");
        assert_eq!(band(1024)[3..5], ["tree", "ll"], "{text}");
        assert_eq!(band(262144)[3..5], ["ring", "simple"], "{text}");
        assert_eq!(lines[0][1], "1024", "starts at the smallest size measured");
        assert_eq!(last_max, 262144, "ends at the largest");

        // One answer (issue 47 item 4): the file's boundaries are the crossover table's. Each
        // crossover names the boundary where the file switches from its "below" pair to its
        // "above" pair, and the file switches nowhere else (its bands are contiguous here:
        // every size's fastest ran with a known pair).
        let boundaries: Vec<u64> = lines[..lines.len() - 1]
            .iter()
            .map(|f| f[2].parse().unwrap())
            .collect();
        let table: Vec<u64> = cross
            .iter()
            .map(|c| {
                c["tuner boundary bytes"]
                    .parse()
                    .unwrap_or_else(|_| panic!("a boundary for every crossover: {c:?}"))
            })
            .collect();
        assert_eq!(boundaries, table, "{text}\n{cross:?}");
        for c in &cross {
            let at: u64 = c["tuner boundary bytes"].parse().unwrap();
            let pair = |f: &[&str]| format!("{}/{}", f[3], f[4]);
            assert_eq!(pair(band(at)), c["fastest below"], "{c:?}\n{text}");
            assert_eq!(pair(band(at + 1)), c["fastest above"], "{c:?}\n{text}");
        }
    }
}
