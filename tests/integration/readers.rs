//! Issue 33, the readers of results files: one validation for `report` and `compare` (one run
//! a side and several), an "inconclusive" verdict for intervals that say nothing, compare's
//! arguments, and untrusted text from a results file shown escaped in every output. Each test
//! failed before its fix (the reader accepted the file, exit 0; the raw bytes came through).

use crate::common;

use common::fixture::{golden, simple, synthetic, Rng};
use common::{bin, no_panic, s as p, tmpdir, Ran};
use scalebench::compare::{compare_runs, Pairing, Settings, Verdict};
use scalebench::results::schema::ResultsFile;
use std::path::{Path, PathBuf};
use std::process::Command;

fn sb(args: &[&str]) -> Ran {
    Ran::from(
        Command::new(bin())
            .args(args)
            .output()
            .expect("start scalebench"),
    )
}

/// Writes `f` with a run id of its own (compare refuses one run on both sides).
fn write(dir: &Path, name: &str, f: &ResultsFile) -> PathBuf {
    let mut f = f.clone();
    f.run.run_id = format!("{}", dir.join(name).display());
    let path = dir.join(name);
    scalebench::results::io::write_results(&path, &f).expect("write results");
    path
}

/// Bad files of every kind the validation refuses, with a word its message must hold.
fn bad_files() -> Vec<(&'static str, ResultsFile, &'static str)> {
    let good = simple(4, 40, &|_| 1.0);
    let edit = |f: &dyn Fn(&mut ResultsFile)| {
        let mut x = good.clone();
        f(&mut x);
        x
    };
    let samples = |x: &mut ResultsFile, g: &dyn Fn(f64) -> f64| {
        for s in &mut x.cases[1].timing.as_mut().unwrap().samples_s {
            *s = g(*s);
        }
    };
    vec![
        (
            "negative",
            edit(&|x| samples(x, &|s| -s)),
            "timing.samples_s[0]",
        ),
        (
            "zero",
            edit(&|x| samples(x, &|_| 0.0)),
            "timing.samples_s[0]",
        ),
        ("empty", edit(&|x| samples_cleared(x)), "no usable samples"),
        (
            "huge",
            synthetic(4, 20, &mut Rng(41), &mut |_| 1.0, &|k| {
                if k == 1 {
                    1e13
                } else {
                    1.0
                }
            }),
            "implausible",
        ),
        (
            "e300-slower",
            edit(&|x| samples(x, &|s| s * 1e300)),
            "implausible",
        ),
        (
            "e308",
            edit(&|x| x.cases[1].timing.as_mut().unwrap().time_s = 1e308),
            "implausible",
        ),
        (
            "beyond-wall",
            edit(&|x| x.cases[1].timing.as_mut().unwrap().time_s = 2.0),
            "the case lasted",
        ),
        (
            "dup",
            edit(&|x| x.cases.push(x.cases[0].clone())),
            "appears twice",
        ),
        (
            "tolerance",
            edit(&|x| x.cases[1].tolerance = -0.01),
            "tolerance",
        ),
        (
            "spread",
            edit(&|x| x.cases[1].timing.as_mut().unwrap().stats_s.stddev = -1.0),
            "stats_s.stddev",
        ),
        ("no-cases", edit(&|x| x.cases.clear()), "no cases"),
    ]
}

fn samples_cleared(x: &mut ResultsFile) {
    x.cases[1].timing.as_mut().unwrap().samples_s.clear();
}

/// Items 3 and 9: a file one reader refuses, every reader refuses: `report`, `compare` one run
/// a side, and `compare` with the file among several runs of a side (which used to average it
/// in: "no change", exit 0). The good runs alone pass every reader, so the refusals are the
/// bad file's.
#[test]
fn every_reader_refuses_the_same_bad_files() {
    let dir = tmpdir("readers-validate");
    let goods: Vec<PathBuf> = (0..4)
        .map(|i| write(&dir, &format!("good{i}.json"), &simple(4, 50 + i, &|_| 1.0)))
        .collect();
    let out = dir.join("report-good");
    sb(&["report", p(&goods[0]), "--out", p(&out)]).assert_code(0);
    sb(&[
        "compare",
        "--allow-low-power",
        p(&goods[0]),
        p(&goods[1]),
        "--",
        p(&goods[2]),
        p(&goods[3]),
    ])
    .assert_code(0);
    for (name, file, needle) in bad_files() {
        let bad = write(&dir, &format!("bad-{name}.json"), &file);
        let out = dir.join(format!("report-{name}"));
        let runs = [
            vec!["report", p(&bad), "--out", p(&out)],
            vec!["compare", p(&goods[0]), p(&bad)],
            vec![
                "compare",
                "--allow-low-power",
                p(&goods[0]),
                p(&goods[1]),
                "--",
                p(&goods[2]),
                p(&bad),
            ],
        ];
        for args in runs {
            let r = sb(&args);
            no_panic(&r);
            r.assert_code(2);
            assert!(
                r.stderr.contains(p(&bad)) && r.stderr.contains(needle),
                "{name}: {args:?}: expected the file and {needle:?} in:\n{}",
                r.stderr
            );
        }
        assert!(!out.exists(), "{name}: a report was written");
    }
}

/// `runs` runs of one side, every other one `spread` times slower (1 % noise within a run).
fn spread_side(seed: u64, runs: u32, spread: f64) -> Vec<ResultsFile> {
    (0..runs)
        .map(|r| {
            let mut rng = Rng(seed + u64::from(r));
            let scale = if r % 2 == 0 { 1.0 } else { spread };
            let mut f = synthetic(
                6,
                10,
                &mut rng,
                &mut |g| common::fixture::timing_noise(g, 0.01, 0.0),
                &|_| scale,
            );
            f.run.run_id = format!("spread-{seed}-{r}");
            f.run.started_unix_s = 1.8e9 + f64::from(r) + seed as f64 * 10.0;
            f
        })
        .collect()
}

/// Item 3: an interval too wide to say anything is "inconclusive", not "no change"; a tight
/// one stays "no change". Simulated over 200 seeds each: two runs a side whose run medians
/// differ 50× within each side (their interval spans far beyond the ±10 % band on both
/// sides, which used to read "no change"), and six runs a side 1 % apart.
#[test]
fn intervals_too_wide_to_tell_are_inconclusive() {
    let settings = Settings {
        pairing: Pairing::Unpaired,
        ..Settings::default()
    };
    let (mut wide_inconclusive, mut tight_inconclusive, mut tight_no_change) = (0, 0, 0);
    let (mut wide_total, mut tight_total) = (0, 0);
    for seed in 0..200u64 {
        let (b, c) = (
            spread_side(1000 + seed, 2, 50.0),
            spread_side(5000 + seed, 2, 50.0),
        );
        let r = compare_runs(
            &b.iter().collect::<Vec<_>>(),
            &c.iter().collect::<Vec<_>>(),
            &settings,
        );
        for x in &r.cases {
            wide_total += 1;
            if x.verdict == Verdict::Inconclusive {
                wide_inconclusive += 1;
                let note = x.note.as_deref().unwrap();
                assert!(note.contains("both sides"), "{note}");
            }
            assert_ne!(x.verdict, Verdict::NoChange, "{:?}", x.stats);
        }
        let (b, c) = (
            spread_side(9000 + seed, 6, 1.01),
            spread_side(13000 + seed, 6, 1.01),
        );
        let r = compare_runs(
            &b.iter().collect::<Vec<_>>(),
            &c.iter().collect::<Vec<_>>(),
            &settings,
        );
        for x in &r.cases {
            tight_total += 1;
            match x.verdict {
                Verdict::Inconclusive => tight_inconclusive += 1,
                Verdict::NoChange => tight_no_change += 1,
                _ => {}
            }
        }
    }
    eprintln!(
        "inconclusive: {wide_inconclusive}/{wide_total} wide, {tight_inconclusive}/{tight_total} tight ({tight_no_change} tight no change)"
    );
    assert_eq!(wide_inconclusive, wide_total);
    assert_eq!(tight_inconclusive, 0);
    assert!(
        tight_no_change * 10 >= tight_total * 9,
        "{tight_no_change}/{tight_total}"
    );
}

/// Item 7: `compare A1 A2 --` (an empty candidate list) is refused, not read as `A1 A2`; a
/// directory of runs with a run lacking results.json names it; "unusable" names the files.
#[test]
fn compare_arguments_are_checked() {
    let dir = tmpdir("readers-args");
    let a1 = write(&dir, "a1.json", &simple(3, 60, &|_| 1.0));
    let a2 = write(&dir, "a2.json", &simple(3, 61, &|_| 1.0));
    let r = sb(&["compare", p(&a1), p(&a2), "--"]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("no candidate run after `--`"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);

    let runs = dir.join("runs");
    for (i, seed) in [(1, 62), (2, 63)] {
        std::fs::create_dir_all(runs.join(format!("{i}"))).unwrap();
        write(
            &runs.join(format!("{i}")),
            "results.json",
            &simple(3, seed, &|_| 1.0),
        );
    }
    std::fs::create_dir_all(runs.join("3")).unwrap();
    std::fs::write(runs.join("3/journal.jsonl"), "").unwrap();
    std::fs::write(runs.join("notes.txt"), "a file beside the runs is no run").unwrap();
    let r = sb(&[
        "compare",
        "--allow-low-power",
        p(&a1),
        p(&a2),
        "--",
        p(&runs),
    ]);
    r.assert_code(2);
    assert!(
        r.stderr.contains(p(&runs.join("3"))) && r.stderr.contains("1 of its 3 run directories"),
        "{}",
        r.stderr
    );
    std::fs::remove_dir_all(runs.join("3")).unwrap();
    sb(&[
        "compare",
        "--allow-low-power",
        p(&a1),
        p(&a2),
        "--",
        p(&runs),
    ])
    .assert_code(0);

    // one sample a case: valid, but nothing to judge on
    let mut one = simple(3, 64, &|_| 1.0);
    for c in &mut one.cases {
        let t = c.timing.as_mut().unwrap();
        t.samples_s.truncate(1);
        t.stats_s = scalebench::stats::summarize(&t.samples_s).unwrap();
    }
    let one = write(&dir, "one-sample.json", &one);
    let r = sb(&["compare", p(&a1), p(&one)]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("unusable") && r.stderr.contains(p(&one)) && r.stderr.contains(p(&a1)),
        "{}",
        r.stderr
    );
}

/// Characters that act on a terminal or reorder text: ESC (a colour), CSI as one C1 byte, a
/// carriage return, a right-to-left override and an isolate.
const HIDDEN: &str = "\u{1b}[31mRED\u{9b}2J\rCR\u{202e}evil\u{2066}iso\u{2069}";

fn hidden(s: &str) -> Option<char> {
    s.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}')
            || ('\u{202A}'..='\u{202E}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    })
}

/// The golden file with the hidden characters in its device names, timer source and backend
/// description (informational differences for compare; a GPU model is not).
fn with_hidden(device: &str) -> ResultsFile {
    let mut f = golden();
    for l in &mut f.launches {
        if let Some(p) = l.provenance.as_mut() {
            p.timer.source = format!("clock{HIDDEN}");
            p.backend.detail = format!("detail{HIDDEN}");
            for r in &mut p.ranks {
                for d in &mut r.devices {
                    d.name = device.to_string();
                }
            }
        }
    }
    f
}

fn assert_shown(what: &str, text: &str) {
    if let Some(c) = hidden(text) {
        let at = text.find(c).unwrap();
        let from = text[..at].char_indices().rev().nth(40).map_or(0, |x| x.0);
        panic!(
            "{what}: raw {c:?} near {:?}",
            &text[from..(at + 8).min(text.len())]
        );
    }
    assert!(
        text.contains("\\u{202e}evil"),
        "{what}: the escaped text is not shown"
    );
}

/// Item 8: text from a results file reaches no output raw: report.md, report.html, the CSV
/// files and SVG charts, compare's text, Markdown and JSON, and an error message quoting a
/// device name. JSON keeps the value (escaped as JSON).
#[test]
fn control_characters_and_bidi_overrides_are_shown_escaped() {
    let dir = tmpdir("readers-hidden");
    let f = write(&dir, "hidden.json", &with_hidden(&format!("cpu{HIDDEN}")));
    let out = dir.join("report");
    let r = sb(&["report", p(&f), "--out", p(&out)]);
    r.assert_code(0);
    assert_eq!(hidden(&r.stdout), None, "{}", r.stdout);
    let mut files = vec![out.join("report.md"), out.join("report.html")];
    for sub in ["tables", "charts"] {
        let Ok(entries) = std::fs::read_dir(out.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path()
                .extension()
                .is_some_and(|x| x == "csv" || x == "svg")
            {
                files.push(e.path());
            }
        }
    }
    files.push(out.join("results.csv"));
    for file in &files {
        // CSV's own line ends are CRLF (RFC 4180); a CR from a file would be escaped.
        let text = std::fs::read_to_string(file).unwrap().replace("\r\n", "\n");
        if let Some(c) = hidden(&text) {
            panic!("{}: raw {c:?}", file.display());
        }
    }
    for main in ["report.md", "report.html"] {
        assert_shown(main, &std::fs::read_to_string(out.join(main)).unwrap());
    }

    // compare: the timer differs (said at the top), so its text is printed
    let mut plain = golden();
    plain.run.run_id = "plain".into();
    // Another measurement than the candidate's (a copy of one run is refused as identical).
    for t in plain.cases.iter_mut().filter_map(|c| c.timing.as_mut()) {
        t.samples_s.iter_mut().for_each(|x| *x *= 1.001);
        t.time_s *= 1.001;
        t.stats_s = scalebench::stats::summarize(&t.samples_s).unwrap();
    }
    let base = write(&dir, "plain.json", &plain);
    for format in ["text", "md"] {
        let r = sb(&[
            "compare",
            p(&base),
            p(&f),
            "--allow-low-power",
            "--allow-one-run",
            "--format",
            format,
        ]);
        r.assert_code(0);
        assert_shown(format, &r.stdout);
    }
    let r = sb(&[
        "compare",
        p(&base),
        p(&f),
        "--allow-low-power",
        "--allow-one-run",
        "--format",
        "json",
    ]);
    r.assert_code(0);
    assert_eq!(hidden(&r.stdout), None);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(
        v["differences"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["candidate"]
                .as_str()
                .is_some_and(|s| s.contains(&format!("clock{HIDDEN}")))),
        "{v:#}"
    );

    // an error message quoting a GPU model (a different GPU is not comparable)
    let gpu = write(
        &dir,
        "gpu.json",
        &with_hidden(&format!("NVIDIA{HIDDEN} (PCI 0)")),
    );
    let r = sb(&["compare", p(&base), p(&gpu)]);
    r.assert_code(2);
    assert_shown("stderr", &r.stderr);
}
