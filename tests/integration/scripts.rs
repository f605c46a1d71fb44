//! Generated job scripts: golden files for Slurm, UGE and PBS, `bash -n` on every one, and
//! hostile values from specs executed for real (against stub commands) to prove they stay inert.
//! Regenerate the golden files with SCALEBENCH_BLESS=1 after a deliberate change.

use crate::common;

use common::{solo, solo_env, tmpdir};
use std::path::{Path, PathBuf};
use std::process::Command;

const SPEC: &str = r#"
name = "golden"
[axes]
backend = "cuda"
nodes = [1, 2]
devices_per_node = 4
topology = ["pure", "hybrid"]
placement = ["fill", "round_robin"]
workloads = ["allreduce", "matmul"]
sizes = ["1MiB"]
dims = 4096
[[exclude]]
topology = "hybrid"
placement = "round_robin"
[launch]
timeout_s = 1200
[submit]
scalebench = "/opt/scalebench/bin/scalebench"
"#;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/scripts")
}

/// Splits `submit --dry-run` output into (file name, script text).
fn scripts(stdout: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in stdout.lines() {
        if let Some(p) = line.strip_prefix("### ") {
            out.push((
                Path::new(p)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                String::new(),
            ));
        } else if let Some((_, text)) = out.last_mut() {
            if !line.starts_with("# dry run:") {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    out
}

fn bash_n(text: &str) {
    let dir = tmpdir("bash-n");
    let f = dir.join("s.sh");
    std::fs::write(&f, text).unwrap();
    let st = Command::new("bash").arg("-n").arg(&f).status().unwrap();
    assert!(st.success(), "bash -n failed on:\n{text}");
}

#[test]
fn generated_scripts_match_golden_files_and_parse() {
    let dir = tmpdir("scripts-golden");
    let spec = dir.join("golden.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let bless = std::env::var("SCALEBENCH_BLESS").is_ok();
    let mut checked = 0;
    for profile in ["puhti", "lumi", "apocrita", "pbs-example"] {
        let ran = solo(&[
            "submit",
            spec.to_str().unwrap(),
            "--profile",
            profile,
            "--out",
            "/scratch/study",
            "--dry-run",
        ]);
        ran.assert_code(0);
        assert!(
            !Path::new("/scratch/study").exists(),
            "a dry run writes nothing"
        );
        let all = scripts(&ran.stdout);
        assert!(!all.is_empty());
        for (name, text) in &all {
            bash_n(text);
            let golden = golden_dir().join(format!("{profile}-{name}"));
            if bless {
                std::fs::create_dir_all(golden_dir()).unwrap();
                std::fs::write(&golden, text).unwrap();
            }
            let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
                panic!("{}: {e} (SCALEBENCH_BLESS=1 creates it)", golden.display())
            });
            assert_eq!(
                text,
                &want,
                "{} differs from its golden file",
                golden.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "{checked}");
    // What the site syntax must look like
    let g = |f: &str| std::fs::read_to_string(golden_dir().join(f)).unwrap();
    assert!(g("puhti-job-001.sh").contains("#SBATCH --gres=gpu:v100:4"));
    assert!(
        g("lumi-job-001.sh").contains("#SBATCH --gpus-per-node=4")
            && g("lumi-job-001.sh").contains("--mem-per-gpu=60G")
    );
    assert!(g("lumi-job-001.sh").contains("export MPICH_GPU_SUPPORT_ENABLED=1"));
    let uge: String = std::fs::read_dir(golden_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("apocrita-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        uge.contains("#$ -pe parallel 96")
            && uge.contains("#$ -l gpu=4")
            && uge.contains("mpirun -rr -n 8"),
        "{uge}"
    );
    let pbs = g("pbs-example-job-001.sh");
    assert!(
        pbs.contains("#PBS -l select=1:ncpus=64:mpiprocs=4:ngpus=4"),
        "{pbs}"
    );
    // a single launch is not an array: no task index (UGE sets SGE_TASK_ID=undefined then)
    assert!(
        uge.contains("\ndir=/scratch/study/launches/") && !uge.contains("SGE_TASK_ID"),
        "{uge}"
    );
}

/// A stub command that records its arguments, or an environment variable, and succeeds.
fn stub(dir: &Path, name: &str, body: &str) {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/bash\n{body}\n")).unwrap();
    Command::new("chmod").arg("+x").arg(&p).status().unwrap();
}

#[test]
fn hostile_values_from_specs_stay_inert_when_the_script_runs() {
    let dir = tmpdir("scripts-hostile");
    let stubs = dir.join("stubs");
    std::fs::create_dir_all(&stubs).unwrap();
    let evil = r#"$(touch PWNED_1) `touch PWNED_2`; touch PWNED_3 'q' "dq" \ $HOME"#;
    stub(
        &stubs,
        "srun",
        &format!("printenv EVIL > {}/evil.txt", stubs.display()),
    );
    stub(&stubs, "module", "exit 0");
    stub(&stubs, "sb", "exit 0");
    let spec = dir.join("hostile.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"evil $(touch PWNED_NAME) `touch PWNED_TICK`; rm -rf /tmp/nothing\"\nlabels = {{ note = \"$(touch PWNED_LABEL)\" }}\n[axes]\ndevices_per_node = 1\nsizes = \"64\"\n[launch.env]\nEVIL = {}\n[submit]\nscalebench = \"{}/sb\"\n",
            toml_string(evil),
            stubs.display()
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let ran = solo(&[
        "submit",
        spec.to_str().unwrap(),
        "--profile",
        "local-slurm",
        "--out",
        out.to_str().unwrap(),
        "--dry-run",
    ]);
    ran.assert_code(0);
    let (_, text) = scripts(&ran.stdout).into_iter().next().unwrap();
    bash_n(&text);
    // make the attempt directory the script will cd into, then run the script for real
    let attempt = text
        .lines()
        .find_map(|l| l.strip_prefix("dir="))
        .unwrap()
        .to_string();
    std::fs::create_dir_all(&attempt).unwrap();
    let script = dir.join("job.sh");
    std::fs::write(&script, &text).unwrap();
    let work = dir.join("cwd");
    std::fs::create_dir_all(&work).unwrap();
    let path = format!("{}:{}", stubs.display(), std::env::var("PATH").unwrap());
    let st = Command::new("bash")
        .arg(&script)
        .current_dir(&work)
        .env("PATH", path)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        std::fs::read_to_string(stubs.join("evil.txt"))
            .unwrap()
            .trim_end_matches('\n'),
        evil,
        "the value reached the job literally"
    );
    for d in [&work, &PathBuf::from(&attempt), &dir] {
        let pwned: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("PWNED"))
            .collect();
        assert!(
            pwned.is_empty(),
            "a hostile value ran: {pwned:?} in {}",
            d.display()
        );
    }
    assert!(
        !text.contains("$(touch PWNED_NAME)"),
        "the sweep name is sanitised in the script"
    );
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[test]
fn values_that_cannot_be_made_safe_are_refused() {
    let dir = tmpdir("scripts-refused");
    let spec = dir.join("s.toml");
    std::fs::write(&spec, "[axes]\nsizes = \"64\"\n").unwrap();
    let ran = solo(&[
        "submit",
        spec.to_str().unwrap(),
        "--profile",
        "local-slurm",
        "--account",
        "x; touch PWNED",
        "--dry-run",
        "--out",
        "/scratch/x",
    ]);
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("account") && ran.stderr.contains("letters, digits"),
        "{}",
        ran.stderr
    );
    let ran = solo(&[
        "submit",
        spec.to_str().unwrap(),
        "--profile",
        "local-slurm",
        "--dry-run",
        "--out",
        "/scratch/a b",
    ]);
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("--out path without spaces"),
        "{}",
        ran.stderr
    );
    std::fs::write(
        &spec,
        "[axes]\nsizes = \"64\"\n[submit]\nmodules = [\"gcc; touch PWNED\"]\n",
    )
    .unwrap();
    let ran = solo(&[
        "submit",
        spec.to_str().unwrap(),
        "--profile",
        "puhti",
        "--dry-run",
        "--out",
        "/scratch/x",
    ]);
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("s.toml:4:11: submit.modules:")
            && ran.stderr.contains("module 'gcc; touch PWNED'"),
        "{}",
        ran.stderr
    );
    // a GPU count the site does not have
    std::fs::write(
        &spec,
        "[axes]\nbackend = \"cuda\"\ndevices_per_node = 8\nsizes = \"64\"\n",
    )
    .unwrap();
    let ran = solo(&[
        "submit",
        spec.to_str().unwrap(),
        "--profile",
        "puhti",
        "--dry-run",
        "--out",
        "/scratch/x",
    ]);
    ran.assert_code(2);
    assert!(ran.stderr.contains("4 per node"), "{}", ran.stderr);
}

#[test]
fn an_array_script_names_every_launch_it_runs() {
    let dir = tmpdir("scripts-array");
    let spec = dir.join("a.toml");
    // Pure and hybrid with one device per node share an allocation: one array, two shapes.
    std::fs::write(
        &spec,
        "name = \"arr\"\n[axes]\ndevices_per_node = 1\ntopology = [\"pure\", \"hybrid\"]\nsizes = \"64\"\n",
    )
    .unwrap();
    let ran = solo(&[
        "submit",
        spec.to_str().unwrap(),
        "--profile",
        "local-slurm",
        "--dry-run",
        "--out",
        dir.join("run").to_str().unwrap(),
    ]);
    ran.assert_code(0);
    let jobs: Vec<(String, String)> = scripts(&ran.stdout)
        .into_iter()
        .filter(|(n, _)| n.starts_with("job-"))
        .collect();
    assert_eq!(jobs.len(), 1, "{}", ran.stdout);
    let text = &jobs[0].1;
    assert!(text.contains("#SBATCH --array=0-1"), "{text}");
    assert!(text.contains("an array of 2 launches"), "{text}");
    let task = |i: usize, topology: &str| {
        text.lines()
            .any(|l| l.starts_with(&format!("#   task {i}: 00{}-", i + 1)) && l.contains(topology))
    };
    assert!(task(0, "pure") && task(1, "hybrid"), "{text}");
}

#[test]
fn uge_and_pbs_runs_are_submitted_held_and_followed_with_their_own_tools() {
    // Stand-in qsub, qstat and qdel (no UGE or PBS here): qsub records its arguments and
    // answers as the real one does (UGE with -terse: `500.1-2:1` for an array; PBS:
    // `500[].srv`); qstat lists the array's two tasks, one running and one queued, and the
    // collect job held.
    for (profile, array_id, collect_id, listing, tasks, hold, running) in [
        (
            "apocrita",
            "500.1-2:1",
            "501",
            "job-ID prior name user state submit/start at queue slots ja-task-ID\n\
             ------------------------------------------------------------------\n    \
             500 0.5 sb me r 11/26/2026 01:00:00 all.q@n1 1 1\n    \
             500 0.5 sb me qw 11/26/2026 01:00:00 1 2\n    \
             501 0.0 sbc me hqw 11/26/2026 01:00:01 1\n",
            ["500.1", "500.2"],
            "-hold_jid 500",
            " r ",
        ),
        (
            "pbs-example",
            "500[].srv",
            "501.srv",
            "Job id Name User Time Use S Queue\n\
             ---------------- ---- ---- -------- - -----\n\
             500[].srv sb me 0 B workq\n\
             500[0].srv sb me 00:00:01 R workq\n\
             500[1].srv sb me 0 Q workq\n\
             501.srv sbc me 0 H workq\n",
            ["500[0].srv", "500[1].srv"],
            "-W depend=afterany:500[].srv",
            " R ",
        ),
    ] {
        let dir = tmpdir(&format!("scripts-{profile}"));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let log = dir.join("qsub.log");
        stub(
            &bin,
            "qsub",
            &format!(
                "echo \"$*\" >> {log}\nn=$(wc -l < {log})\nif [ \"$n\" = 1 ]; then echo '{array_id}'; else echo '{collect_id}'; fi",
                log = log.display()
            ),
        );
        std::fs::write(dir.join("listing"), listing).unwrap();
        stub(
            &bin,
            "qstat",
            &format!("cat {}", dir.join("listing").display()),
        );
        stub(&bin, "qdel", "exit 0");
        let spec = dir.join("a.toml");
        std::fs::write(
            &spec,
            "name = \"arr\"\n[axes]\ndevices_per_node = 1\ntopology = [\"pure\", \"hybrid\"]\nsizes = \"64\"\n",
        )
        .unwrap();
        let out = dir.join("run");
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let env = [("PATH", path.as_str()), ("USER", "me")];
        let ran = solo_env(
            &[
                "submit",
                spec.to_str().unwrap(),
                "--profile",
                profile,
                "--out",
                out.to_str().unwrap(),
            ],
            &env,
        );
        ran.assert_code(0);
        let calls = std::fs::read_to_string(&log).unwrap();
        let calls: Vec<&str> = calls.lines().collect();
        assert_eq!(calls.len(), 2, "an array and its collect job: {calls:?}");
        if profile == "apocrita" {
            assert!(calls[0].starts_with("-terse "), "{calls:?}");
        }
        assert!(calls[1].contains(hold), "{profile}: {calls:?}");
        let st = solo_env(&["status", out.to_str().unwrap()], &env);
        st.assert_code(0);
        let rows = common::status_rows(&st.stdout);
        assert_eq!(rows.len(), 2, "{profile}: {}", st.stdout);
        assert_eq!(
            (rows[0].1.as_str(), rows[0].2.as_str()),
            (tasks[0], "running"),
            "{}",
            st.stdout
        );
        assert_eq!(
            (rows[1].1.as_str(), rows[1].2.as_str()),
            (tasks[1], "pending"),
            "{}",
            st.stdout
        );
        // The scheduler forgets the running task without the launch recording its end: lost.
        let forgot: String = listing
            .lines()
            .filter(|l| !l.contains(running))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(dir.join("listing"), forgot).unwrap();
        let st = solo_env(&["status", out.to_str().unwrap()], &env);
        st.assert_code(3);
        let rows = common::status_rows(&st.stdout);
        assert_eq!(rows[0].2, "lost", "{profile}: {}", st.stdout);
        assert_eq!(rows[1].2, "pending", "{profile}: {}", st.stdout);
    }
}

/// The CPUs set in a Slurm `mask_cpu` word (hexadecimal, bit c = CPU c).
fn mask_cpus(hex: &str) -> Vec<u32> {
    let hex = hex.trim_start_matches("0x");
    let bits = u128::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("mask {hex}: {e}"));
    (0..128).filter(|b| bits >> b & 1 == 1).collect()
}

#[test]
fn lumi_gpu_binding_puts_each_rank_on_its_gcds_numa_cores() {
    // Expectations written from the LUMI-G facts (the rocm note, LUMI user guide), not from
    // the profile: 64 cores, NUMA node n = cores 16n..16n+15, the first core of each 8-core
    // L3 region reserved, GCD g on NUMA node MAP[g], and the guide's map_cpu first cores.
    const MAP: [u32; 8] = [3, 3, 1, 1, 0, 0, 2, 2];
    const FIRST: [u32; 8] = [49, 57, 17, 25, 1, 9, 33, 41];
    let numa_of = |core: u32| core / 16;
    let reserved = |core: u32| core % 8 == 0;
    let dir = tmpdir("scripts-lumi");
    let stubs = dir.join("stubs");
    std::fs::create_dir_all(&stubs).unwrap();
    stub(&stubs, "sbatch", "echo 4242");
    let spec = dir.join("lumi.toml");
    std::fs::write(
        &spec,
        "name = \"gcd\"\n[axes]\nbackend = \"rocm\"\nnodes = 2\ndevices_per_node = 8\ntopology = [\"pure\", \"hybrid\"]\nbinding = \"gpu\"\nworkloads = \"allreduce\"\nsizes = \"1MiB\"\n[submit]\nscalebench = \"/opt/scalebench/bin/scalebench\"\n",
    )
    .unwrap();
    let out = dir.join("run");
    let args = [
        "submit",
        spec.to_str().unwrap(),
        "--profile",
        "lumi",
        "--out",
        out.to_str().unwrap(),
    ];
    let ran = solo(&[&args[..], &["--dry-run"]].concat());
    ran.assert_code(0);
    assert!(!out.exists(), "a dry run writes nothing");
    let all = scripts(&ran.stdout);
    for (_, text) in &all {
        bash_n(text);
    }
    let jobs: Vec<&String> = all
        .iter()
        .filter(|(n, _)| n.starts_with("job-"))
        .map(|(_, t)| t)
        .collect();
    let masks_of = |text: &str| -> Vec<Vec<u32>> {
        let srun = text
            .lines()
            .find(|l| l.contains(" srun "))
            .unwrap_or_else(|| panic!("no srun line:\n{text}"));
        let list = srun
            .split_whitespace()
            .find_map(|w| w.strip_prefix("--cpu-bind=mask_cpu:"))
            .unwrap_or_else(|| panic!("srun binds no masks: {srun}"));
        list.split(',').map(mask_cpus).collect()
    };
    let pure = jobs
        .iter()
        .find(|t| t.contains("#SBATCH --ntasks-per-node=8"))
        .unwrap_or_else(|| panic!("no pure job:\n{}", ran.stdout));
    assert!(pure.contains("#SBATCH --nodes=2") && pure.contains("#SBATCH --gpus-per-node=8"));
    let masks = masks_of(pure);
    assert_eq!(masks.len(), 8, "one mask per task (Slurm local id = GCD)");
    let mut seen = std::collections::BTreeSet::new();
    for (gcd, cores) in masks.iter().enumerate() {
        assert!(
            cores
                .iter()
                .all(|&c| numa_of(c) == MAP[gcd] && !reserved(c)),
            "GCD {gcd} (NUMA node {}): {cores:?}",
            MAP[gcd]
        );
        let want: Vec<u32> = (FIRST[gcd]..FIRST[gcd] + 7).collect();
        assert_eq!(cores, &want, "GCD {gcd}");
        assert!(cores.iter().all(|c| seen.insert(*c)), "GCDs share a core");
    }
    assert_eq!(seen.len(), 56, "every usable core, once");
    // One hybrid task drives the node's 8 GCDs: it gets all their cores.
    let hybrid = jobs
        .iter()
        .find(|t| t.contains("#SBATCH --ntasks-per-node=1"))
        .unwrap_or_else(|| panic!("no hybrid job:\n{}", ran.stdout));
    assert_eq!(
        masks_of(hybrid),
        vec![seen.iter().copied().collect::<Vec<_>>()]
    );
    // Slingshot for RCCL as the LUMI docs set it.
    for line in [
        "export NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3",
        "export NCCL_NET_GDR_LEVEL=PHB",
        "export CXI_FORK_SAFE=1",
        "export CXI_FORK_SAFE_HP=1",
        "export FI_CXI_DISABLE_CQ_HUGETLB=1",
    ] {
        assert!(pure.lines().any(|l| l == line), "{line}:\n{pure}");
    }
    // Submitted (to a stub sbatch): each launch's plan carries the map and the reserved cores,
    // which the ranks' own `gpu` binding follows and which stay with the run as provenance.
    let path = format!("{}:{}", stubs.display(), std::env::var("PATH").unwrap());
    solo_env(&args, &[("PATH", &path)]).assert_code(0);
    let plans: Vec<PathBuf> = std::fs::read_dir(out.join("launches"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("plan.json"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(plans.len(), 2, "{plans:?}");
    for p in plans {
        let plan: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(plan["gpu_numa"], serde_json::json!(MAP), "{}", p.display());
        let listed: Vec<u32> = plan["reserved_cores"]
            .as_str()
            .unwrap()
            .split(',')
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(
            listed,
            (0..64).filter(|&c| reserved(c)).collect::<Vec<_>>(),
            "{}",
            p.display()
        );
        assert_eq!(plan["shape"]["binding"], "gpu");
    }
}

/// Issue 29: `[links]` in a submitted spec puts one links step per set-up (nodes × ranks per
/// node) into the first job of that set-up, under the job's own launcher and binding, before
/// its launch; an array runs it in task 0 only; a set-up whose links.json already holds a
/// matrix measured as asked is not submitted again; the job's time limit makes room for it.
#[test]
fn submitted_links_steps_run_once_per_set_up_in_the_job_script() {
    let dir = tmpdir("scripts-links");
    let spec = dir.join("l.toml");
    std::fs::write(
        &spec,
        "name = \"lk\"\n[axes]\nnodes = [1, 2]\ndevices_per_node = [1, 2]\ntopology = [\"pure\", \"hybrid\"]\nsizes = \"64\"\n[launch]\ntimeout_s = 600\n[links]\nschedule = \"shift\"\nsize = \"64KiB\"\niters = 5\ntimeout_s = 300\n",
    )
    .unwrap();
    let out = dir.join("run");
    let dry = |out: &Path| {
        let ran = solo(&[
            "submit",
            spec.to_str().unwrap(),
            "--scheduler",
            "slurm",
            "--dry-run",
            "--out",
            out.to_str().unwrap(),
        ]);
        ran.assert_code(0);
        scripts(&ran.stdout)
            .into_iter()
            .filter(|(n, _)| n.starts_with("job-"))
            .collect::<Vec<_>>()
    };
    let jobs = dry(&out);
    let step = |setup: &str| {
        format!(
            "links --schedule shift --size 65536 --iters 5 --warmup 1 --z 5 --min-effect 0.15 --out {}/links/{setup}",
            out.display()
        )
    };
    // Set-ups with two or more ranks: n1-ppn2, n2-ppn1, n2-ppn2 (n1-ppn1 has one rank).
    for setup in ["n1-ppn2", "n2-ppn1", "n2-ppn2"] {
        let with: Vec<&(String, String)> = jobs
            .iter()
            .filter(|(_, t)| t.contains(&step(setup)))
            .collect();
        assert_eq!(with.len(), 1, "{setup}: {jobs:#?}");
        let text = &with[0].1;
        bash_n(text);
        let line = text.lines().find(|l| l.contains(&step(setup))).unwrap();
        // the job's launcher (srun, with the profile's binding), under its own timeout
        assert!(
            line.trim_start()
                .starts_with("timeout --signal=TERM --kill-after=30 300 srun"),
            "{line}"
        );
        assert!(line.contains("\"$sb\" links"), "{line}");
        // before the launch
        let at = text.find(&step(setup)).unwrap();
        assert!(at < text.find("run -q --plan").unwrap(), "{text}");
        // launch 600 s + links 300 s: 15 min, + 5 min margin
        assert!(text.contains("#SBATCH --time=20\n"), "{text}");
        if text.contains("#SBATCH --array=") {
            assert!(
                text.contains("if [ \"${SLURM_ARRAY_TASK_ID:-0}\" = 0 ] && [ ! -s "),
                "{text}"
            );
        }
    }
    assert!(
        !jobs.iter().any(|(_, t)| t.contains("links/n1-ppn1")),
        "{jobs:#?}"
    );
    let plain = jobs
        .iter()
        .filter(|(_, t)| !t.contains("links --schedule"))
        .count();
    assert!(
        plain >= 1,
        "the one-rank jobs carry no links step: {jobs:#?}"
    );
    assert!(jobs
        .iter()
        .filter(|(_, t)| !t.contains("links --schedule"))
        .all(|(_, t)| t.contains("#SBATCH --time=15\n")));

    // n2-ppn2 measured before, as the spec asks: not submitted again; the others still are.
    let done = out.join("links/n2-ppn2");
    std::fs::create_dir_all(&done).unwrap();
    std::fs::write(
        done.join("links.json"),
        r#"{"links_format_version": 1, "generator": {"name": "scalebench", "version": "0"},
            "schedule": "shift", "bidirectional": true, "message_bytes": 65536, "iters": 5,
            "warmup": 1, "hosts": ["a", "a", "b", "b"], "analysed": "inter_node",
            "matrix_gbps": [[null, 1.0, 1.0, 1.0], [1.0, null, 1.0, 1.0], [1.0, 1.0, null, 1.0], [1.0, 1.0, 1.0, null]],
            "median_gbps": 1.0, "residual_spread": 0.0, "findings": []}"#,
    )
    .unwrap();
    let jobs = dry(&out);
    assert!(
        !jobs.iter().any(|(_, t)| t.contains(&step("n2-ppn2"))),
        "{jobs:#?}"
    );
    for setup in ["n1-ppn2", "n2-ppn1"] {
        assert_eq!(
            jobs.iter()
                .filter(|(_, t)| t.contains(&step(setup)))
                .count(),
            1
        );
    }
}

/// Issue 29: a job script's links step, run for real against stub `srun` and `scalebench`:
/// task 0 of the array runs `links` (under the job's launcher) before its launch, other tasks
/// do not; the step's exit code (1: a suspect named) is recorded beside it and is not the
/// job's; once its links.json exists no task runs it again.
#[test]
fn a_job_scripts_links_step_runs_in_task_0_once() {
    let dir = tmpdir("scripts-links-run");
    let stubs = dir.join("stubs");
    std::fs::create_dir_all(&stubs).unwrap();
    let calls = stubs.join("calls.txt");
    // srun's own options dropped, the rest run (the profile's container wrapper, then sb)
    stub(
        &stubs,
        "srun",
        "while [[ \"$1\" == -* ]]; do shift; done\nexec \"$@\"",
    );
    stub(
        &stubs,
        "sb",
        &format!(
            "echo \"$1\" >> {calls}\nif [ \"$1\" = links ]; then\n  while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n  echo '{{}}' > \"$out/links.json\"\n  exit 1\nfi\nexit 0",
            calls = calls.display()
        ),
    );
    let spec = dir.join("l.toml");
    // pure and hybrid with one device per node share an allocation: one array, set-up n2-ppn1
    std::fs::write(
        &spec,
        format!(
            "name = \"lk\"\n[axes]\nnodes = 2\ndevices_per_node = 1\ntopology = [\"pure\", \"hybrid\"]\nsizes = \"64\"\n[links]\nsize = \"64KiB\"\n[submit]\nscalebench = \"{}/sb\"\n",
            stubs.display()
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let ran = solo(&[
        "submit",
        spec.to_str().unwrap(),
        "--profile",
        "local-slurm",
        "--out",
        out.to_str().unwrap(),
        "--dry-run",
    ]);
    ran.assert_code(0);
    let jobs: Vec<(String, String)> = scripts(&ran.stdout)
        .into_iter()
        .filter(|(n, _)| n.starts_with("job-"))
        .collect();
    assert_eq!(jobs.len(), 1, "{}", ran.stdout);
    let text = &jobs[0].1;
    assert!(text.contains("#SBATCH --array=0-1"), "{text}");
    let attempts: Vec<String> = text
        .lines()
        .find_map(|l| l.strip_prefix("dirs=("))
        .unwrap()
        .trim_end_matches(')')
        .split_whitespace()
        .map(|d| d.trim_matches('\'').to_string())
        .collect();
    assert_eq!(attempts.len(), 2);
    for a in &attempts {
        std::fs::create_dir_all(a).unwrap();
    }
    let script = dir.join("job.sh");
    std::fs::write(&script, text).unwrap();
    let path = format!("{}:{}", stubs.display(), std::env::var("PATH").unwrap());
    let task = |i: &str| {
        let st = Command::new("bash")
            .arg(&script)
            .env("PATH", &path)
            .env("SLURM_ARRAY_TASK_ID", i)
            .status()
            .unwrap();
        assert!(
            st.success(),
            "task {i}: the links step's exit 1 is not the job's"
        );
        let c = std::fs::read_to_string(&calls).unwrap_or_default();
        std::fs::remove_file(&calls).unwrap();
        // The watcher runs beside the launch (both in the background) and is killed once the
        // launch ends: whether and where it shows in the log races the launch, so it is left out.
        let mut c: Vec<String> = c.lines().map(str::to_string).collect();
        c.retain(|x| x != "watch-launch");
        c
    };
    assert_eq!(
        task("1"),
        ["run", "finish-launch"],
        "task 1 runs no links step"
    );
    let step = out.join("links/n2-ppn1");
    assert!(!step.exists());
    assert_eq!(task("0"), ["links", "run", "finish-launch"]);
    assert!(step.join("links.json").exists());
    assert_eq!(
        std::fs::read_to_string(step.join("exit_code"))
            .unwrap()
            .trim(),
        "1"
    );
    assert_eq!(
        task("0"),
        ["run", "finish-launch"],
        "its links.json exists: not again"
    );
}

/// Issue 29: `backend` and `floor_fraction` in `[links]` travel to the step's command line in
/// the job script (`--backend cuda`, `--floor-fraction 0.3`); without them the line is the
/// default transport's and floor's (nothing added).
#[test]
fn a_links_steps_backend_and_floor_reach_the_job_script() {
    let dir = tmpdir("scripts-links-backend");
    let spec = dir.join("l.toml");
    let dry = |links: &str| {
        std::fs::write(
            &spec,
            format!("name = \"lk\"\n[axes]\nnodes = 2\ndevices_per_node = 1\nsizes = \"64\"\n[links]\n{links}"),
        )
        .unwrap();
        let ran = solo(&[
            "submit",
            spec.to_str().unwrap(),
            "--scheduler",
            "slurm",
            "--dry-run",
            "--out",
            dir.join("run").to_str().unwrap(),
        ]);
        ran.assert_code(0);
        let jobs: Vec<(String, String)> = scripts(&ran.stdout)
            .into_iter()
            .filter(|(n, _)| n.starts_with("job-"))
            .collect();
        assert_eq!(jobs.len(), 1, "{}", ran.stdout);
        bash_n(&jobs[0].1);
        jobs[0]
            .1
            .lines()
            .find(|l| l.contains("\"$sb\" links"))
            .unwrap_or_else(|| panic!("no links step:\n{}", jobs[0].1))
            .to_string()
    };
    let line = dry("backend = \"cuda\"\nfloor_fraction = 0.3\n");
    assert!(
        line.contains(
            "links --schedule round-robin --backend cuda --floor-fraction 0.3 --size 1048576"
        ),
        "{line}"
    );
    let line = dry("floor_fraction = \"off\"\n");
    assert!(line.contains(" --floor-fraction off "), "{line}");
    assert!(!line.contains("--backend"), "{line}");
    let line = dry("");
    assert!(
        !line.contains("--backend") && !line.contains("--floor-fraction"),
        "{line}"
    );
}

/// Issue 29: `status` and `collect` of a submitted run list its links step from what is on
/// disk: pending while its job is queued, running once the job script started it, done (with
/// what it named) once links.json is measured as the spec asks; `collect` records the step in
/// collect.json and names the run directory for the report (which reads each links step).
/// The scheduler is stubbed (PBS's `qsub`/`qstat`): no job runs.
#[test]
fn status_and_collect_follow_a_submitted_links_step() {
    let dir = tmpdir("scripts-links-status");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("qsub.log");
    stub(
        &bin,
        "qsub",
        &format!(
            "echo \"$*\" >> {log}\nn=$(wc -l < {log})\nif [ \"$n\" = 1 ]; then echo '700.srv'; else echo '701.srv'; fi",
            log = log.display()
        ),
    );
    let listing = dir.join("listing");
    let set_listing = |state: &str| {
        let text = if state.is_empty() {
            String::new()
        } else {
            format!(
                "Job id Name User Time Use S Queue\n---------------- ---- ---- -------- - -----\n700.srv sb me 0 {state} workq\n701.srv sbc me 0 H workq\n"
            )
        };
        std::fs::write(&listing, text).unwrap();
    };
    set_listing("Q");
    stub(&bin, "qstat", &format!("cat {}", listing.display()));
    stub(&bin, "qdel", "exit 0");
    let spec = dir.join("l.toml");
    std::fs::write(
        &spec,
        "name = \"lk\"\n[axes]\nnodes = 1\ndevices_per_node = 2\nsizes = \"64\"\n[links]\nsize = 4096\niters = 3\n",
    )
    .unwrap();
    let out = dir.join("run");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let env = [("PATH", path.as_str()), ("USER", "me")];
    let o = out.to_str().unwrap();
    solo_env(
        &[
            "submit",
            spec.to_str().unwrap(),
            "--profile",
            "pbs-example",
            "--out",
            o,
        ],
        &env,
    )
    .assert_code(0);
    let status = || solo_env(&["status", o], &env);
    let st = status();
    st.assert_code(0);
    assert!(
        st.stdout.contains("# links n1-ppn2: pending\n"),
        "{}",
        st.stdout
    );
    // The job script started the step (it writes stdout.log first).
    let step = out.join("links/n1-ppn2");
    std::fs::create_dir_all(&step).unwrap();
    std::fs::write(step.join("stdout.log"), "").unwrap();
    set_listing("R");
    let st = status();
    assert!(
        st.stdout.contains("# links n1-ppn2: running\n"),
        "{}",
        st.stdout
    );
    // It ended: a links.json measured as the spec asks (4 KiB, 3 iterations, over MPI) with a
    // confirmed cell group below the absolute floor, and its exit code 1.
    std::fs::write(
        step.join("links.json"),
        r#"{"links_format_version": 3, "generator": {"name": "scalebench", "version": "0"},
            "schedule": "round_robin", "bidirectional": false, "message_bytes": 4096, "iters": 3,
            "warmup": 1, "hosts": ["a", "b"], "analysed": "inter_node",
            "matrix_gbps": [[null, 1.0], [1.0, null]], "median_gbps": 1.0,
            "residual_spread": 0.0, "findings": [], "transport": "mpi",
            "floor": {"fraction": 0.5, "min_message_bytes": 1048576, "link_gbps": [12.5, 12.5],
                "checked_cells": 2, "note": null, "findings": [{"kind": "fabric", "ranks": [],
                "ratio": 0.08, "isolated_ratio": 0.08, "confirmed": true, "text": "fabric"}]}}"#,
    )
    .unwrap();
    std::fs::write(step.join("exit_code"), "1\n").unwrap();
    let st = status();
    assert!(
        st.stdout
            .contains("# links n1-ppn2: done, 1 finding named (confirmed)\n"),
        "{}",
        st.stdout
    );
    // Every job ended (the launch recorded no end: lost, exit 3); collect records the step.
    set_listing("");
    let c = solo_env(&["collect", o], &env);
    c.assert_code(3);
    assert!(
        c.stdout
            .contains("# links n1-ppn2: done, 1 finding named (confirmed)\n"),
        "{}",
        c.stdout
    );
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("collect.json")).unwrap()).unwrap();
    assert_eq!(
        rec["links_steps"],
        serde_json::json!([{"setup": "n1-ppn2", "dir": "links/n1-ppn2", "state": "done",
            "exit_code": 1, "named": 1}])
    );
    // A step that ended without a links.json is failed, with its exit code and where to look
    // (status exits 3: here the launch is lost too, which alone would).
    std::fs::remove_file(step.join("links.json")).unwrap();
    std::fs::write(step.join("exit_code"), "137\n").unwrap();
    let st = status();
    st.assert_code(3);
    assert!(
        st.stdout.contains("# links n1-ppn2: failed (exit 137;"),
        "{}",
        st.stdout
    );
}
