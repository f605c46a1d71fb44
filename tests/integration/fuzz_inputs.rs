//! Fuzz-style robustness (issue 13): thousands of random specs and command lines, from a
//! seeded generator, go through the parser and planner in-process, and a few hundred through
//! the real binary (`plan`, `sweep --dry-run`). Whatever the input: no panic, no hang (each
//! input is timed), exit 0 or 2, and nothing written.
//!
//! The generator mixes well-formed values with the hostile ones of the campaign
//! (overflowing counts, NaN/inf/1e308 seconds, control characters, shell syntax, empty and
//! huge lists, wrong types, unknown keys) and byte-level mutations of the example specs. A
//! failure prints the seed and the input, so it can be replayed.
//!
//! Through the binary (issue 44): 300 specs (`plan`, `sweep --dry-run`), 120 results files
//! (`report`, `compare`, `history ingest`), 300 hostile option values over every subcommand
//! (long, control characters, not UTF-8, FIFOs, directories and the wrong kind of file) and
//! 60 ddp models: every refusal exit 2 naming the option or file, no panic, no hang past 15 s,
//! no file created, moved or cut by a refusal.

use crate::common;

use clap::Parser;
use common::{bin, tmpdir};
use scalebench::cli::{Cli, Command};
use scalebench::params::LaunchShape;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const AXIS_KEYS: &[&str] = &[
    "backend",
    "nodes",
    "devices_per_node",
    "ranks_per_node", // deprecated, still read
    "topology",
    "binding",
    "placement",
    "threads_per_device",
    "workloads",
    "workload",
    "sizes",
    "size",
    "dtypes",
    "ops",
    "roots",
    "timing",
    "in_place",
    "dims",
    "scaling",
    "batch",
    "collect",
    "nodez",
    "",
];

const WORDS: &[&str] = &[
    "cpu",
    "cuda",
    "pure",
    "hybrid",
    "none",
    "core",
    "numa",
    "socket",
    "gpu",
    "fill",
    "round_robin",
    "allreduce",
    "reduce",
    "broadcast",
    "allgather",
    "reduce_scatter",
    "alltoall",
    "matmul",
    "batch_matmul",
    "f32",
    "f64",
    "i32",
    "f16",
    "sum",
    "prod",
    "min",
    "max",
    "avg",
    "pipelined",
    "isolated",
    "both",
    "yes",
    "no",
    "weak",
    "strong",
    "gather",
    "8B",
    "4KiB",
    "1MiB",
    "1GiB",
    "2TiB",
    "1MB",
    "8B:1MiB:x2",
    "8B:1GiB:+8B",
    "1:0:+0",
    "64:64:x1",
    "0B",
    "-4",
    "1024x1024x1024",
    "0x1x1",
    "1048577",
    "first_per_numa",
    "0-1",
    "$(touch PWNED)",
    "`id`",
    "a;b",
    "=1+2",
    "@SUM(A1)",
    "x\u{1b}[31my",
    "nul\u{0}byte",
    "é",
    "",
];

const INTS: &[i64] = &[
    -1,
    0,
    1,
    2,
    3,
    4,
    7,
    64,
    1024,
    1025,
    65_536,
    65_537,
    100_000,
    1 << 31,
    1 << 32,
    i64::MAX,
    i64::MIN,
];

const FLOATS: &[&str] = &[
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-0.0",
    "0.0",
    "0.02",
    "0.5",
    "3.0",
    "2592001.0",
];

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn scalar(r: &mut Rng) -> String {
    match r.below(10) {
        0..=3 => toml_string(r.pick(WORDS)),
        4..=6 => r.pick(INTS).to_string(),
        7 => r.pick(FLOATS).to_string(),
        8 => (r.below(2) == 0).to_string(),
        _ => "{ a = 1 }".to_string(),
    }
}

fn value(r: &mut Rng) -> String {
    match r.below(4) {
        0 | 1 => scalar(r),
        2 => {
            let n = r.below(5);
            let items: Vec<String> = (0..n).map(|_| scalar(r)).collect();
            format!("[{}]", items.join(", "))
        }
        _ => {
            // A list of one kind, as real specs have.
            let n = 1 + r.below(6);
            let w = r.below(WORDS.len());
            let items: Vec<String> = (0..n)
                .map(|i| {
                    if r.chance(50) {
                        toml_string(WORDS[(w + i) % WORDS.len()])
                    } else {
                        (1 + r.below(8)).to_string()
                    }
                })
                .collect();
            format!("[{}]", items.join(", "))
        }
    }
}

fn table(r: &mut Rng, keys: &[&str], max: usize) -> String {
    let mut s = String::new();
    for _ in 0..r.below(max + 1) {
        s.push_str(&format!("{} = {}\n", r.pick(keys), value(r)));
    }
    s
}

/// Values each axis accepts, for specs that are mostly right (so planning goes deep).
fn valid_values(axis: &str) -> &'static [&'static str] {
    match axis {
        "nodes" | "devices_per_node" | "ranks_per_node" | "threads_per_device" | "batch" => {
            &["1", "2", "3"]
        }
        "roots" => &["0", "1"],
        "sizes" => &["\"64\"", "\"4KiB\"", "\"8B:1KiB:x4\"", "1024"],
        "workloads" => &[
            "\"allreduce\"",
            "\"reduce\"",
            "\"broadcast\"",
            "\"allgather\"",
            "\"matmul\"",
            "\"batch_matmul\"",
        ],
        "dtypes" => &["\"f32\"", "\"f64\"", "\"i32\""],
        "ops" => &["\"sum\"", "\"max\"", "\"avg\""],
        "timing" => &["\"pipelined\"", "\"isolated\""],
        "in_place" => &["true", "false", "\"both\""],
        "dims" => &["64", "\"8x16x32\""],
        "scaling" => &["\"weak\"", "\"strong\""],
        "collect" => &["\"gather\"", "\"reduce\""],
        "topology" => &["\"pure\"", "\"hybrid\""],
        "placement" => &["\"fill\"", "\"round_robin\""],
        _ => &["\"none\""],
    }
}

/// A spec that is valid but for, sometimes, one hostile value.
fn mostly_valid_spec(r: &mut Rng) -> String {
    const AXES: &[&str] = &[
        "nodes",
        "devices_per_node",
        "threads_per_device",
        "batch",
        "roots",
        "sizes",
        "workloads",
        "dtypes",
        "ops",
        "timing",
        "in_place",
        "dims",
        "scaling",
        "collect",
        "topology",
        "placement",
    ];
    let mut s = format!("name = {}\n[axes]\n", toml_string(r.pick(WORDS)));
    let mut used = Vec::new();
    for _ in 0..1 + r.below(5) {
        let a = r.pick(AXES);
        if used.contains(&a) {
            continue;
        }
        used.push(a);
        let vals = valid_values(a);
        let n = 1 + r.below(3);
        let mut items: Vec<String> = (0..n).map(|_| r.pick(vals).to_string()).collect();
        items.dedup();
        if r.chance(15) {
            items[0] = scalar(r);
        }
        s.push_str(&format!("{a} = [{}]\n", items.join(", ")));
    }
    if r.chance(30) {
        s.push_str(&format!(
            "[[exclude]]\n{} = {}\n",
            used[0],
            r.pick(valid_values(used[0]))
        ));
    }
    s.push_str("[launch]\noversubscribe = true\n");
    if r.chance(30) {
        s.push_str(&format!("timeout_s = {}\n", r.pick(FLOATS)));
    }
    s
}

/// A random spec: mostly the spec's own structure with random, often hostile, values.
fn random_spec(r: &mut Rng, examples: &[String]) -> String {
    if r.chance(35) {
        return mostly_valid_spec(r);
    }
    if r.chance(20) && !examples.is_empty() {
        // Byte-level mutations of a real spec.
        let mut b = examples[r.below(examples.len())].clone().into_bytes();
        for _ in 0..1 + r.below(4) {
            let at = r.below(b.len().max(1));
            match r.below(3) {
                0 if !b.is_empty() => {
                    b.remove(at.min(b.len() - 1));
                }
                1 => b.insert(at.min(b.len()), r.pick(b"[]=\"'0x9,\n#:{}\\\x1b")),
                _ if !b.is_empty() => {
                    let i = at.min(b.len() - 1);
                    b[i] = r.next() as u8;
                }
                _ => {}
            }
        }
        return String::from_utf8_lossy(&b).into_owned();
    }
    let mut s = String::new();
    if r.chance(70) {
        s.push_str(&format!("name = {}\n", toml_string(r.pick(WORDS))));
    }
    if r.chance(20) {
        s.push_str(&format!(
            "[labels]\n{} = {}\n",
            r.pick(&["a", "b c", "k"]),
            scalar(r)
        ));
    }
    if r.chance(85) {
        s.push_str("[axes]\n");
        // Keys must be unique inside a table for TOML to parse; duplicates still test that.
        let mut used = Vec::new();
        for _ in 0..r.below(6) {
            let k = r.pick(AXIS_KEYS);
            if used.contains(&k) && r.chance(90) {
                continue;
            }
            used.push(k);
            let key = if k.is_empty() { "\"\"" } else { k };
            s.push_str(&format!("{key} = {}\n", value(r)));
        }
    }
    for _ in 0..r.below(3) {
        s.push_str("[[zip]]\n");
        s.push_str(&table(r, AXIS_KEYS, 3));
    }
    for _ in 0..r.below(3) {
        s.push_str("[[exclude]]\n");
        s.push_str(&table(r, AXIS_KEYS, 2));
    }
    if r.chance(50) {
        s.push_str("[run]\n");
        s.push_str(&table(
            r,
            &[
                "iters",
                "warmup",
                "time_budget_s",
                "batches",
                "check",
                "itres",
            ],
            3,
        ));
    }
    if r.chance(50) {
        s.push_str("[launch]\n");
        s.push_str(&table(
            r,
            &[
                "oversubscribe",
                "timeout_s",
                "op_timeout_s",
                "mpirun_args",
                "reserved_cores",
            ],
            3,
        ));
        if r.chance(30) {
            s.push_str(&format!(
                "[launch.env]\n{} = {}\n",
                r.pick(&["A", "1X", "B_C", "a b"]),
                scalar(r)
            ));
        }
    }
    s
}

fn examples() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    v.sort();
    v
}

/// Runs `f` and fails, naming the input, on a panic or when it takes more than 5 s.
fn guarded<T>(what: &str, input: &str, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let out = catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| panic!("{what} panicked on:\n{input}"));
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "{what} took {:?} on:\n{input}",
        t0.elapsed()
    );
    out
}

#[test]
fn thousands_of_random_specs_never_panic_or_hang() {
    let examples = examples();
    let mut r = Rng(0x5CA1_EBE7_C40D_0013);
    let (mut planned, mut refused) = (0, 0);
    let path = Path::new("fuzz.toml");
    for i in 0..4000 {
        let text = random_spec(&mut r, &examples);
        let input = format!("(spec {i})\n{text}");
        let parsed = guarded("config::parse", &input, || {
            scalebench::config::parse(path, &text)
        });
        let Ok(spec) = parsed else {
            let e = parsed.unwrap_err();
            // Every refusal is located in the file.
            assert!(e.to_string().starts_with("fuzz.toml:"), "{e}\n{input}");
            refused += 1;
            continue;
        };
        let plan = guarded("sweep::expand", &input, || {
            scalebench::plan::sweep::expand(&spec)
        });
        match plan {
            Ok(plan) => {
                planned += 1;
                assert!(
                    plan.case_count() > 0,
                    "an empty plan was accepted:\n{input}"
                );
                assert!(plan.case_count() <= scalebench::config::limits::MAX_CASES);
                guarded("check_local", &input, || {
                    let _ = scalebench::plan::sweep::check_local(&spec, &plan, 2);
                    let text = scalebench::launch::describe(&spec.name, path, &plan, true);
                    assert!(!text.contains('\u{1b}'), "raw ESC in plan output:\n{input}");
                });
            }
            Err(e) => {
                assert!(e.to_string().starts_with("fuzz.toml:"), "{e}\n{input}");
                refused += 1;
            }
        }
    }
    eprintln!("random specs: {planned} planned, {refused} refused");
    // The generator must exercise both paths, or the test proves little.
    assert!(
        planned > 200 && refused > 200,
        "planned {planned}, refused {refused}"
    );
}

const RUN_OPTIONS: &[(&str, &[&str])] = &[
    (
        "--sizes",
        &[
            "8B",
            "8B:4MiB:x4",
            "2TiB",
            "-4",
            "1:0:+0",
            "8B:1GiB:+1B",
            "12Q",
            "",
        ],
    ),
    ("--workload", &["allreduce", "matmul,allreduce", "nope", ""]),
    ("--dtype", &["f32", "f64,i32", "f8"]),
    ("--op", &["sum", "max,min", "/tmp/out"]),
    ("--root", &["0", "3", "-1", "4294967296"]),
    ("--dims", &["1024", "2x3x4", "0", "1048577", "x"]),
    ("--batch", &["4", "0", "1048577", "-1"]),
    ("--iters", &["1", "0", "100000001", "4294967296"]),
    ("--warmup", &["0", "4294967295"]),
    ("--time-budget", &["0.5", "-1", "nan", "inf", "1e308", "0"]),
    ("--batches", &["0", "20"]),
    ("--check", &["0", "1", "4294967295"]),
    ("--nodes", &["1", "2", "0", "65537", "4294967295"]),
    ("--devices-per-node", &["1", "0", "1025", "100000"]),
    ("--threads-per-device", &["1", "0", "1025", "100000"]),
    ("--topology", &["pure", "hybrid", "mixed"]),
    ("--placement", &["fill", "round_robin", "zigzag"]),
    ("--binding", &["none", "core", "elbow"]),
    ("--in-place", &["both", "yes", "maybe"]),
    ("--timing", &["pipelined", "isolated,pipelined", "slow"]),
    ("--op-timeout", &["600", "0", "-1", "nan", "1e308"]),
    (
        "--reserved-cores",
        &["", "0", "first_per_numa", "9999999999", "a-b"],
    ),
    ("--fault", &["hang", "explode"]),
];

#[test]
fn thousands_of_random_run_command_lines_never_panic() {
    let mut r = Rng(0xC11_0013);
    let mut accepted = 0;
    for i in 0..5000 {
        let mut argv = vec!["scalebench".to_string(), "run".to_string()];
        for _ in 0..r.below(6) {
            let (opt, vals) = r.pick(RUN_OPTIONS);
            argv.push(opt.to_string());
            argv.push(r.pick(vals).to_string());
        }
        let input = format!("(command line {i}) {argv:?}");
        let parsed = guarded("Cli::try_parse_from", &input, || Cli::try_parse_from(&argv));
        let Ok(cli) = parsed else {
            assert_eq!(parsed.unwrap_err().exit_code(), 2, "{input}");
            continue;
        };
        let Command::Run(a) = cli.command else {
            panic!("{input}: not run")
        };
        let opts = guarded("RunOptions::from_request", &input, || {
            scalebench::plan::RunOptions::from_request(&a.as_ref().into())
        });
        let Ok(opts) = opts else {
            assert_eq!(opts.err().unwrap().exit_code(), 2, "{input}");
            continue;
        };
        accepted += 1;
        let shape = LaunchShape {
            backend: a.backend,
            topology: a.topology,
            nodes: a.nodes.unwrap_or(1).max(1),
            devices_per_node: a.devices_per_node.unwrap_or(2).max(1),
            binding: a.binding,
            placement: a.placement,
            nccl_algo: None,
            nccl_proto: None,
        };
        let cases = guarded("plan::expand", &input, || {
            scalebench::plan::expand(&opts, shape)
        });
        if let Ok(c) = cases {
            assert!(c.len() <= scalebench::config::limits::MAX_CASES, "{input}");
        }
    }
    eprintln!("random run command lines: {accepted} of 5000 accepted");
    assert!(
        accepted > 100,
        "only {accepted} command lines were accepted"
    );
}

#[test]
fn hundreds_of_random_specs_through_the_binary() {
    let examples = examples();
    let mut r = Rng(0xB1_0013);
    let dir = tmpdir("fuzz-bin");
    let mut codes = [0usize; 3];
    for i in 0..300 {
        let case = dir.join(format!("c{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let spec = case.join("spec.toml");
        let text = random_spec(&mut r, &examples);
        std::fs::write(&spec, &text).unwrap();
        let out = case.join("out");
        let mut args: Vec<String> = if r.chance(50) {
            vec!["plan".into(), spec.display().to_string(), "--cases".into()]
        } else {
            vec![
                "sweep".into(),
                spec.display().to_string(),
                "--dry-run".into(),
                "--out".into(),
                out.display().to_string(),
            ]
        };
        if args[0] == "sweep" && r.chance(40) {
            args.push("--launch-timeout".into());
            args.push(r.pick(FLOATS).to_string());
        }
        let t0 = Instant::now();
        let o = std::process::Command::new("timeout")
            .args(["-k", "2", "20", bin()])
            .args(&args)
            .output()
            .unwrap();
        let code = o.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let input = format!("(binary {i}) {args:?}\n{text}\n--- stderr\n{stderr}");
        assert!(code == 0 || code == 2, "exit {code}: {input}");
        assert!(!stderr.contains("panicked"), "{input}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{input}");
        // Planning and dry runs write nothing.
        let left: Vec<_> = std::fs::read_dir(&case)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("spec.toml")], "{input}");
        if code == 2 {
            assert!(stderr.contains("error"), "{input}");
        }
        codes[usize::from(code == 2)] += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("binary: {} exit 0, {} exit 2", codes[0], codes[1]);
    assert!(codes[0] > 20 && codes[1] > 20, "{codes:?}");
}

// ---- issue 33 item 10: results files through every reader, and ddp models ----

/// Hostile JSON values for a field of a results file.
fn hostile_json(r: &mut Rng) -> serde_json::Value {
    use serde_json::json;
    match r.below(16) {
        0 => json!(-1e-6),
        1 => json!(0.0),
        2 => json!(1e308),
        3 => json!(-1e308),
        4 => json!(1e300),
        5 => json!(u64::MAX),
        6 => json!(-1),
        7 => json!(null),
        8 => json!([]),
        9 => json!({}),
        10 => json!("x\u{1b}[31my\u{202e}z\u{9b}"),
        11 => json!(""),
        12 => json!(true),
        13 => json!(4_294_967_296u64),
        14 => json!([1e308, -0.0, 5e-324]),
        _ => json!(2.5e-6),
    }
}

/// Every (path, value) leaf and container of `v`, as JSON pointers.
fn pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                pointers(x, format!("{at}/{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// A results file derived from the golden one: values replaced by hostile ones, keys
/// removed, cases duplicated or dropped, samples scaled absurdly, or the text cut or
/// byte-mutated. Most are refused; some stay valid (so the readers' paths past the
/// validation run too).
fn random_results(r: &mut Rng, golden: &serde_json::Value, paths: &[String]) -> String {
    let mut v = golden.clone();
    v["run"]["run_id"] = serde_json::json!(format!("fuzz-{}", r.next()));
    for _ in 0..r.below(4) {
        match r.below(6) {
            0 | 1 => {
                if let Some(slot) = v.pointer_mut(&paths[r.below(paths.len())]) {
                    *slot = hostile_json(r);
                }
            }
            2 => {
                let cases = v["cases"].as_array_mut().unwrap();
                if !cases.is_empty() {
                    let i = r.below(cases.len());
                    if r.chance(50) {
                        let c = cases[i].clone();
                        cases.push(c);
                    } else {
                        cases.remove(i);
                    }
                }
            }
            3 => {
                // scale one case's samples absurdly (10^±k)
                let k = r.pick(&[-300i32, -12, 3, 300]);
                if let Some(s) = v
                    .pointer_mut(&format!("/cases/{}/timing/samples_s", r.below(6)))
                    .and_then(|s| s.as_array_mut())
                {
                    for x in s {
                        *x = serde_json::json!(x.as_f64().unwrap_or(1.0) * 10f64.powi(k));
                    }
                }
            }
            4 => {
                let p = &paths[r.below(paths.len())];
                if let Some((parent, key)) = p.rsplit_once('/') {
                    if let Some(serde_json::Value::Object(m)) = v.pointer_mut(parent) {
                        m.remove(key);
                    }
                }
            }
            _ => {}
        }
    }
    let text = serde_json::to_string_pretty(&v).unwrap();
    if r.chance(10) {
        let mut b = text.into_bytes();
        for _ in 0..1 + r.below(3) {
            let i = r.below(b.len());
            b[i] = r.next() as u8;
        }
        return String::from_utf8_lossy(&b).into_owned();
    }
    if r.chance(5) {
        let mut cut = r.below(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        return text[..cut].to_string();
    }
    text
}

/// What the generated inputs did, printed to the CI log.
#[derive(Default, Debug)]
struct Tally {
    inputs: usize,
    codes: std::collections::BTreeMap<i32, usize>,
    panics: usize,
    hangs: usize,
    partial: usize,
}

impl Tally {
    /// Straight to stderr: cargo test shows a passing test's `eprintln!` only with
    /// `--nocapture`, and these counts belong in every CI log.
    fn print(&self, what: &str) {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr().lock(),
            "{what}: {} inputs, exit codes {:?}, {} panics, {} hangs, {} partial files",
            self.inputs,
            self.codes,
            self.panics,
            self.hangs,
            self.partial
        );
    }
}

/// Runs the binary with a 20 s bound; counts the exit code, a panic, a hang.
fn bounded_run(args: &[&str], t: &mut Tally, input: &str) -> (i32, String) {
    let t0 = Instant::now();
    let o = std::process::Command::new("timeout")
        .args(["-k", "2", "20", bin()])
        .args(args)
        .output()
        .unwrap();
    let code = o.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    *t.codes.entry(code).or_default() += 1;
    if code == 101 || stderr.contains("panicked") {
        t.panics += 1;
    }
    if code == 124 || code == 137 || t0.elapsed() > Duration::from_secs(15) {
        t.hangs += 1;
    }
    assert!(
        code == 0 || code == 1 || code == 2,
        "exit {code}: {args:?}\n{stderr}\n{input}"
    );
    (code, stderr)
}

/// Generated results files through `report`, `compare` one run a side, `compare` with the
/// file among several runs and `history ingest` (one validator for all): no panic, no hang, exit 0/1/2 (2 naming the file), no report
/// or partial output left by a refusal, and no raw control character on stdout or stderr.
#[test]
fn generated_results_files_through_every_reader() {
    let golden_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/results-v1.json"),
    )
    .unwrap();
    let golden: serde_json::Value = serde_json::from_str(&golden_text).unwrap();
    let mut paths = Vec::new();
    pointers(&golden, String::new(), &mut paths);
    paths.retain(|p| !p.is_empty());
    let dir = tmpdir("fuzz-readers");
    // Valid runs for the other side (own run ids, so none is "the same run").
    let good: Vec<std::path::PathBuf> = (0..3)
        .map(|i| {
            let mut v = golden.clone();
            v["run"]["run_id"] = serde_json::json!(format!("fuzz-good-{i}"));
            let p = dir.join(format!("good{i}.json"));
            std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
            p
        })
        .collect();
    let g: Vec<&str> = good.iter().map(|p| p.to_str().unwrap()).collect();
    let mut r = Rng(0x33_0010);
    let mut t = Tally::default();
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..120 {
        let text = random_results(&mut r, &golden, &paths);
        let case = dir.join(format!("in{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let file = case.join("results.json");
        std::fs::write(&file, &text).unwrap();
        let f = file.to_str().unwrap();
        let out = case.join("report");
        let cmp_out = case.join("cmp.md");
        let o = out.to_str().unwrap();
        let co = cmp_out.to_str().unwrap();
        let low = "--allow-low-power";
        // One index for every input, outside the case: what it holds is no partial output.
        let db = dir.join("history.sqlite");
        let runs: [Vec<&str>; 4] = [
            vec!["report", f, "--out", o, "--format", "md,csv"],
            vec!["compare", low, "--allow-one-run", "--out", co, g[0], f],
            vec!["compare", low, "--out", co, g[0], g[1], "--", g[2], f],
            vec!["history", "ingest", f, "--db", db.to_str().unwrap(), "-q"],
        ];
        t.inputs += 1;
        for args in runs {
            let input = format!(
                "(results {i}) {}",
                text.chars().take(4000).collect::<String>()
            );
            let (code, stderr) = bounded_run(&args, &mut t, &input);
            assert_eq!(
                stderr
                    .chars()
                    .find(|c| c.is_control() && *c != '\n' && *c != '\t'),
                None,
                "raw control character on stderr: {args:?}\n{stderr}"
            );
            if code == 2 {
                refused += 1;
                // Named: the file itself, or (a side of several runs) their directory.
                assert!(
                    stderr.contains("error: ")
                        && (stderr.contains(f) || stderr.contains(dir.to_str().unwrap())),
                    "{args:?}: {stderr}"
                );
                // A refusal writes nothing: no report, no compare output, no staging dir.
                let left: Vec<String> = std::fs::read_dir(&case)
                    .unwrap()
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n != "results.json")
                    .collect();
                if !left.is_empty() {
                    t.partial += 1;
                }
                assert!(left.is_empty(), "{args:?} left {left:?}: {stderr}");
            } else {
                accepted += 1;
            }
            let _ = std::fs::remove_dir_all(&out);
            let _ = std::fs::remove_file(&cmp_out);
        }
    }
    t.print("generated results files through report, compare, compare of runs, history ingest");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!((t.panics, t.hangs, t.partial), (0, 0, 0), "{t:?}");
    // Both paths must be exercised, or the test proves little.
    assert!(
        accepted > 30 && refused > 100,
        "accepted {accepted}, refused {refused}"
    );
}

/// ddp_step model strings: presets, layer lists and hostile ones (overflowing counts, too
/// many layers, zero or huge dimensions, separators alone, control characters).
fn random_model(r: &mut Rng) -> String {
    const PARTS: &[&str] = &[
        "mlp-tiny",
        "mlp-small",
        "mlp-100m",
        "mlp-1b",
        "64x64",
        "256x256x8",
        "1024x10",
        "1x1x18446744073709551615",
        "1x1x10001",
        "1048577x1",
        "0x4",
        "4x0",
        "4x4x0",
        "x",
        "",
        "+",
        "-1x4",
        "4x4x4x4",
        "1e3x4",
        "9999999999999999999999x2",
        "é",
        "4\u{1b}x4",
        "mlp-tiny+64x64",
    ];
    let n = 1 + r.below(4);
    let mut parts: Vec<String> = (0..n).map(|_| r.pick(PARTS).to_string()).collect();
    if r.chance(5) {
        parts = vec!["2x2".to_string(); 10_001];
    }
    parts.join(if r.chance(90) { "+" } else { "," })
}

#[test]
fn generated_ddp_models_never_panic() {
    let mut r = Rng(0x33_00dd);
    let mut t = Tally::default();
    let (mut planned, mut refused) = (0, 0);
    for i in 0..2000 {
        let model = random_model(&mut r);
        let argv = ["scalebench", "run", "-w", "ddp_step", "--model", &model];
        let input = format!(
            "(model {i}) {:?}",
            model.chars().take(200).collect::<String>()
        );
        t.inputs += 1;
        let parsed = guarded("Cli::try_parse_from", &input, || Cli::try_parse_from(argv));
        let Ok(cli) = parsed else {
            refused += 1;
            continue;
        };
        let Command::Run(a) = cli.command else {
            panic!("{input}: not run")
        };
        let opts = guarded("RunOptions::from_request", &input, || {
            scalebench::plan::RunOptions::from_request(&a.as_ref().into())
        });
        match opts {
            Ok(o) => {
                let shape = LaunchShape {
                    backend: a.backend,
                    topology: a.topology,
                    nodes: 1,
                    devices_per_node: 2,
                    binding: a.binding,
                    placement: a.placement,
                    nccl_algo: None,
                    nccl_proto: None,
                };
                let cases = guarded("plan::expand", &input, || {
                    scalebench::plan::expand(&o, shape)
                });
                if cases.is_ok() {
                    planned += 1;
                } else {
                    refused += 1;
                }
            }
            Err(e) => {
                assert_eq!(e.exit_code(), 2, "{input}");
                refused += 1;
            }
        }
    }
    // Through the binary: the model in a spec, `plan` and `sweep --dry-run`.
    let dir = tmpdir("fuzz-ddp");
    for i in 0..60 {
        let model = random_model(&mut r);
        let case = dir.join(format!("m{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let spec = case.join("spec.toml");
        std::fs::write(
            &spec,
            format!(
                "name = \"m\"\n[axes]\nworkloads = \"ddp_step\"\nmodels = [{}]\n",
                toml_string(&model)
            ),
        )
        .unwrap();
        let s = spec.to_str().unwrap();
        let out = case.join("out");
        let input = format!(
            "(spec model {i}) {:?}",
            model.chars().take(200).collect::<String>()
        );
        t.inputs += 1;
        for args in [
            vec!["plan", s],
            vec!["sweep", s, "--dry-run", "--out", out.to_str().unwrap()],
        ] {
            let (code, _) = bounded_run(&args, &mut t, &input);
            assert_ne!(code, 1, "{input}");
            if std::fs::read_dir(&case).unwrap().count() != 1 {
                t.partial += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    t.print(&format!(
        "generated ddp models ({planned} planned, {refused} refused in-process; spec models through plan and sweep --dry-run)"
    ));
    assert_eq!((t.panics, t.hangs, t.partial), (0, 0, 0), "{t:?}");
    assert!(
        planned > 100 && refused > 100,
        "planned {planned}, refused {refused}"
    );
}

// ---- issue 44: every subcommand's options given hostile values, through the binary ----

/// One command line with a slot for the hostile value (`{v}`) and the inputs it may name:
/// `{spec}`, `{results}` (a run directory), `{tree}` (a tree of runs), `{out}` (not there yet).
/// Every line is a dry run or reads only: a value that happens to be valid runs nothing long.
const OPTION_LINES: &[&[&str]] = &[
    &["run", "-q", "--out", "{out}", "--sizes", "{v}"],
    &["run", "-q", "--out", "{out}", "--workload", "{v}"],
    &["run", "-q", "--out", "{out}", "--dims", "{v}"],
    &["run", "-q", "--out", "{out}", "--nccl-algo", "{v}"],
    &["run", "-q", "--out", "{out}", "--reserved-cores", "{v}"],
    &["run", "-q", "--out", "{out}", "--buffer-offset", "{v}"],
    &["run", "-q", "--out", "{out}", "--dtype", "{v}"],
    &["run", "-q", "--out", "{out}", "--plan", "{v}"],
    &["plan", "{v}"],
    &["sweep", "{v}", "--dry-run", "--out", "{out}"],
    &["sweep", "{spec}", "--dry-run", "--out", "{v}"],
    &[
        "sweep",
        "{spec}",
        "--dry-run",
        "--out",
        "{out}",
        "--launch-timeout",
        "{v}",
    ],
    &[
        "submit",
        "{spec}",
        "--scheduler",
        "uge",
        "--dry-run",
        "--out",
        "{out}",
        "--account",
        "{v}",
    ],
    &[
        "submit",
        "{spec}",
        "--scheduler",
        "pbs",
        "--dry-run",
        "--out",
        "{out}",
        "--partition",
        "{v}",
    ],
    &[
        "submit",
        "{spec}",
        "--profile",
        "{v}",
        "--dry-run",
        "--out",
        "{out}",
    ],
    &[
        "submit",
        "{spec}",
        "--scheduler",
        "{v}",
        "--dry-run",
        "--out",
        "{out}",
    ],
    &["report", "{v}", "--out", "{out}", "--format", "md"],
    &[
        "report",
        "{results}",
        "--out",
        "{out}",
        "--format",
        "md",
        "--only",
        "{v}",
    ],
    &[
        "report",
        "{results}",
        "--out",
        "{out}",
        "--format",
        "md",
        "--history-db",
        "{v}",
    ],
    &["report", "{results}", "--out", "{out}", "--format", "{v}"],
    &["compare", "{results}", "{v}", "--out", "{out}"],
    &[
        "compare",
        "{results}",
        "{results}",
        "--metric",
        "{v}",
        "--out",
        "{out}",
    ],
    &["history", "show", "--db", "{v}"],
    &["history", "changes", "--db", "{v}"],
    &["history", "ingest", "{tree}", "--db", "{v}"],
    &["history", "show", "--db", "{out}", "--size", "{v}"],
    &["history", "export", "--db", "{out}", "--format", "{v}"],
    &["links", "--simulate", "{v}"],
    &["links", "--simulate", "4", "--out", "{v}"],
    &["links", "--simulate", "4", "--slow-node", "{v}"],
    &["topo", "--reserved-cores", "{v}"],
];

/// Hostile values: what the campaign gave (long, control characters, bytes that are no
/// UTF-8, shell syntax, numbers out of range) and paths to what is no fitting file (a FIFO, a
/// directory, a results file, a spec, nothing), by name (`{fifo}` …) for [`hostile_arg`].
const OPTION_VALUES: &[&str] = &[
    "{long}",
    "{nonutf8}",
    "a\n#$ -P stolen",
    "x\r\u{1b}[31m",
    "$(touch PWNED)",
    "-1",
    "nan",
    "1e308",
    "18446744073709551616",
    "é",
    "{fifo}",
    "{dir}",
    "{results_file}",
    "{spec}",
    "{missing}",
    "{empty}",
];

/// The value `v` as an argument, placeholders made paths inside `case`.
fn hostile_arg(v: &str, case: &Path) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStrExt;
    let path = |name: &str| case.join(name).into_os_string();
    match v {
        "{long}" => "y".repeat(5000).into(),
        "{nonutf8}" => std::ffi::OsStr::from_bytes(b"v\xff\xfe").to_os_string(),
        "{fifo}" => path("fifo"),
        "{dir}" => path("tree"),
        "{results_file}" => path("tree/run1/results.json"),
        "{spec}" => path("spec.toml"),
        "{missing}" => path("missing/none.json"),
        "{empty}" => path("empty"),
        s => s.into(),
    }
}

/// A fresh case directory: a spec, a tree of one run, a FIFO, an empty file.
fn option_case(dir: &Path, i: usize, golden: &str) -> std::path::PathBuf {
    let case = dir.join(format!("o{i}"));
    std::fs::create_dir_all(case.join("tree/run1")).unwrap();
    std::fs::write(case.join("tree/run1/results.json"), golden).unwrap();
    std::fs::write(
        case.join("spec.toml"),
        "name = \"f\"\n[axes]\nworkloads = [\"allreduce\"]\nsizes = [\"8B\"]\n",
    )
    .unwrap();
    std::fs::write(case.join("empty"), "").unwrap();
    let c = std::ffi::CString::new(case.join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated CString that outlives the call; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    case
}

/// Every path under `dir` with its length (a FIFO as -1), sorted: what a refusal must leave.
fn tree_state(dir: &Path) -> Vec<(String, i64)> {
    fn walk(d: &Path, out: &mut Vec<(String, i64)>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let len = if m.is_file() { m.len() as i64 } else { -1 };
            out.push((p.display().to_string(), len));
            if m.is_dir() {
                walk(&p, out);
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, &mut v);
    v.sort();
    v
}

/// 300 command lines, each a subcommand's option given a hostile value (long, control
/// characters, not UTF-8, a FIFO, a directory, a results file or spec where another file is
/// wanted): no panic, no hang (15 s bound), exit 0, 1 or 2, and a refusal (exit 2) names the
/// option or the file and leaves every file as it was (nothing created, moved or cut).
#[test]
fn hostile_option_values_of_every_subcommand_through_the_binary() {
    let golden = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/results-v1.json"),
    )
    .unwrap();
    let dir = tmpdir("fuzz-options");
    let mut r = Rng(0x44_0044);
    let mut t = Tally::default();
    let mut refused = 0;
    let mut failures: Vec<String> = Vec::new();
    for i in 0..300 {
        let case = option_case(&dir, i, &golden);
        let line = r.pick(OPTION_LINES);
        let value = r.pick(OPTION_VALUES);
        let v = hostile_arg(value, &case);
        let args: Vec<std::ffi::OsString> = line
            .iter()
            .map(|w| match *w {
                "{v}" => v.clone(),
                "{spec}" => case.join("spec.toml").into_os_string(),
                "{results}" => case.join("tree/run1").into_os_string(),
                "{tree}" => case.join("tree").into_os_string(),
                "{out}" => case.join("out").into_os_string(),
                w => w.into(),
            })
            .collect();
        let before = tree_state(&case);
        let input = format!("(options {i}) {line:?} with {value:?}");
        t.inputs += 1;
        let t0 = Instant::now();
        let o = {
            let _g = common::mpi_lock();
            let mut cmd = std::process::Command::new("timeout");
            // In the case: a relative value that a command accepts writes there, not here.
            cmd.current_dir(&case)
                .args(["-k", "2", "20", bin()])
                .args(&args);
            common::mpi_env(&mut cmd);
            cmd.output().unwrap()
        };
        let took = t0.elapsed();
        let code = o.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        *t.codes.entry(code).or_default() += 1;
        if code == 101 || stderr.contains("panicked") {
            t.panics += 1;
        }
        if code == 124 || code == 137 || took > Duration::from_secs(15) {
            t.hangs += 1;
        }
        if !(code == 0 || code == 1 || code == 2) {
            failures.push(format!("exit {code} ({took:?}): {input}\n{stderr}"));
        }
        if line[0] == "run" && code != 2 {
            failures.push(format!(
                "{input}: a hostile value ran a benchmark\n{stderr}"
            ));
        }
        if code != 2 {
            continue;
        }
        refused += 1;
        if let Some(why) = refusal_problem(line, &args, &v, &stderr) {
            failures.push(format!("{input}: {why}"));
        }
        if tree_state(&case) != before {
            t.partial += 1;
            failures.push(format!("{input}: a refusal changed files\n{stderr}"));
        }
        let _ = std::fs::remove_dir_all(&case);
    }
    let _ = std::fs::remove_dir_all(&dir);
    t.print(&format!(
        "hostile option values ({refused} refused) through every subcommand"
    ));
    assert!(
        failures.is_empty(),
        "{} of {} inputs failed; the first:\n{}",
        failures.len(),
        t.inputs,
        failures[..failures.len().min(8)].join("\n---\n")
    );
    assert_eq!((t.panics, t.hangs, t.partial), (0, 0, 0), "{t:?}");
    assert!(refused > 200, "refused {refused}");
}

/// Why a refusal (exit 2) is not as it should be, if it is not: it must say `error: `, name the
/// option, the file or the positional value, and stay short.
fn refusal_problem(
    line: &[&str],
    args: &[std::ffi::OsString],
    v: &std::ffi::OsStr,
    stderr: &str,
) -> Option<String> {
    let option = line
        .iter()
        .position(|w| *w == "{v}")
        .and_then(|k| k.checked_sub(1))
        .map(|k| line[k])
        .filter(|w| w.starts_with('-'));
    let file_named = args.iter().any(|a| {
        let s = a.to_string_lossy();
        s.starts_with('/') && stderr.contains(s.as_ref())
            || Path::new(a)
                .file_name()
                .is_some_and(|n| n.len() > 3 && stderr.contains(n.to_string_lossy().as_ref()))
    });
    let option_named = option.is_some_and(|o| stderr.contains(o));
    // A positional value (a spec's path, `links --simulate V`), as a message may quote it:
    // raw, with hidden characters as `\u{..}`, or escaped as Rust does; a value of one
    // character only as a whole word of the message (quoted, or a path's first component).
    let head: String = v.to_string_lossy().chars().take(20).collect();
    let value_named = [
        head.clone(),
        scalebench::present::untrusted::visible(&head).into_owned(),
        head.escape_debug().to_string(),
    ]
    .iter()
    .filter(|n| !n.is_empty())
    .any(|n| {
        (n.chars().count() >= 2 && stderr.contains(n.as_str()))
            || [
                format!("'{n}'"),
                format!("`{n}`"),
                format!("{n}/"),
                format!("{n}:"),
            ]
            .iter()
            .any(|f| stderr.contains(f.as_str()))
    });
    if !stderr.contains("error: ") || !(file_named || option_named || value_named) {
        return Some(format!(
            "the refusal names neither the option nor the file:\n{stderr}"
        ));
    }
    if stderr.len() >= 2000 {
        return Some(format!(
            "{} bytes of stderr: {}",
            stderr.len(),
            stderr.chars().take(600).collect::<String>()
        ));
    }
    None
}
