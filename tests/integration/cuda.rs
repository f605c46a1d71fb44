//! The CUDA backend through the real binary.
//!
//! Built with `--features cuda` (CI runs `--all-features`): where CUDA cannot start (no driver,
//! as in CI; or no visible device) `run --backend cuda` exits 2 with one sentence, panics
//! nowhere and leaves no results directory. On a machine with a GPU the same tests also run a
//! short validated study on it. Built without the feature, `--backend cuda` is refused with the
//! rebuild command.

use crate::common;

// mpirun and solo_env serve the tests that need the cuda feature.
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
use common::{mpirun, solo, solo_env, tmpdir, Ran};

/// The run failed cleanly: exit 2, the sentence, no panic, nothing written.
fn refused(ran: &Ran, sentence: &str, out: &std::path::Path) {
    ran.assert_refused(&"--backend cuda", &[sentence], out);
}

/// batch_matmul's phases: its copies overlap the GEMMs on a second stream.
#[cfg(feature = "cuda")]
fn assert_overlap_phases(c: &common::wire::Case) {
    let names: Vec<&str> = c.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["scatter", "transfer_compute", "gather", "overlap_hidden"]
    );
}

#[cfg(feature = "cuda")]
mod with_feature {
    use super::*;
    use scalebench::backend::cuda::{list_gpus, probe};

    fn driver_here() -> bool {
        probe::libraries().driver
    }

    #[test]
    fn no_driver_exits_2_with_one_sentence() {
        let dir = tmpdir("cuda-nodriver");
        let out = dir.join("out");
        let args = [
            "run",
            "--backend",
            "cuda",
            "-w",
            "allreduce,matmul",
            "--sizes",
            "4KiB",
            "--dims",
            "64",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ];
        if driver_here() {
            // A driver exists: hide every device instead, which must fail the same way.
            let ran = solo_env(&args, &[("CUDA_VISIBLE_DEVICES", "")]);
            refused(&ran, "no CUDA device: ", &out);
        } else {
            refused(&solo(&args), "no CUDA driver found: ", &out);
            refused(&mpirun(2, &args), "no CUDA driver found: ", &out);
        }
    }

    #[test]
    fn too_few_gpus_for_the_requested_devices_is_refused() {
        // Hybrid with more GPUs per node than any machine here has: without a driver the
        // driver sentence comes first; with one, the device sentence names the fix.
        let dir = tmpdir("cuda-toofew");
        let out = dir.join("out");
        let ran = solo(&[
            "run",
            "--backend",
            "cuda",
            "--topology",
            "hybrid",
            "--devices-per-node",
            "64",
            "-w",
            "allreduce",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ]);
        let sentence = if driver_here() {
            "--devices-per-node"
        } else {
            "no CUDA driver found: "
        };
        refused(&ran, sentence, &out);
    }

    /// `scalebench topo` lists GPUs through `list_gpus`: a sentence where there are none,
    /// real descriptions where there are.
    #[test]
    fn listing_gpus_never_panics() {
        match list_gpus() {
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.starts_with("no CUDA driver found: ") || e.starts_with("no CUDA device: "),
                    "{e}"
                );
                assert!(!driver_here() || e.starts_with("no CUDA device: "), "{e}");
            }
            Ok(gpus) => {
                assert!(!gpus.is_empty());
                for g in gpus {
                    assert!(g.memory_bytes > 0 && !g.name.is_empty(), "{g:?}");
                    assert!(
                        g.uuid.starts_with("GPU-") || g.uuid.starts_with("MIG-"),
                        "{g:?}"
                    );
                }
            }
        }
    }

    /// On a GPU machine: every collective and GEMM workload, f32 and f16, validated exactly.
    /// Without a GPU this is the no-driver/no-device refusal again.
    #[test]
    fn short_validated_study_where_a_gpu_exists() {
        let dir = tmpdir("cuda-study");
        let out = dir.join("out");
        let args = [
            "run",
            "--backend",
            "cuda",
            "-w",
            "allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall,matmul,batch_matmul",
            "--dtype",
            "f32,f16",
            "--op",
            "sum,avg",
            "--sizes",
            "4KiB:1MiB:x16",
            "--dims",
            "256",
            "--batch",
            "3",
            "-n",
            "20",
            "--warmup",
            "2",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ];
        let ran = solo(&args);
        let Ok(gpus) = list_gpus() else {
            let sentence = if driver_here() {
                "no CUDA device: "
            } else {
                "no CUDA driver found: "
            };
            refused(&ran, sentence, &out);
            return;
        };
        assert!(!gpus.is_empty());
        ran.assert_code(0);
        let r = common::read_results(&out);
        let prov = r.launches[0].provenance.as_ref().unwrap();
        assert_eq!(prov.backend.kind, "cuda");
        assert!(prov.timer.source.contains("cuEventElapsedTime"));
        assert!(prov.ranks[0].devices[0].name.contains(&gpus[0].pci_bus_id));
        let mut measured = 0;
        for c in &r.cases {
            assert_eq!(c.wrong, 0, "{}: {:?}", c.id, c.message);
            match c.status.as_str() {
                "ok" => measured += 1,
                "skipped" => {
                    let m = c.message.as_deref().unwrap_or("");
                    assert!(
                        c.params.in_place == Some(true) && c.params.workload == "alltoall"
                            || m.contains("rounds down"),
                        "{}: skipped: {m}",
                        c.id
                    );
                }
                s => panic!("{}: {s}: {:?}", c.id, c.message),
            }
            if c.params.workload == "batch_matmul" {
                assert_overlap_phases(c);
            }
        }
        assert!(measured > 0);
    }
}

/// The CUDA backend's device path against scalebench's stand-in CUDA libraries (`standin/`:
/// CPU test doubles of libcuda, cuBLAS, NCCL and NVML; no GPU anywhere): every case validated,
/// under real mpirun where it takes processes; each fault the stand-ins can inject refused
/// with one sentence and no panic; a planted defect caught.
#[cfg(feature = "cuda")]
pub(crate) mod standin {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    /// Builds the stand-in libraries once per test process (`standin/build.sh`, needs `cc`).
    pub(crate) fn libs() -> &'static Path {
        static DIR: OnceLock<PathBuf> = OnceLock::new();
        DIR.get_or_init(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("standin");
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("standin/build.sh");
            let out = std::process::Command::new("bash")
                .arg(&script)
                .arg(&dir)
                .output()
                .expect("run standin/build.sh");
            assert!(
                out.status.success(),
                "standin/build.sh failed (is a C compiler installed? ci/setup.sh):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            dir
        })
    }

    fn wrapper() -> String {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("standin/gpus-per-rank.sh")
            .display()
            .to_string()
    }

    /// The stand-ins' environment, plus `extra` (`KEY=VALUE`).
    pub(crate) fn env(lib_path: &str, extra: &[&str]) -> Vec<(String, String)> {
        let mut v = vec![
            ("LD_LIBRARY_PATH".to_string(), lib_path.to_string()),
            ("SCALEBENCH_STANDIN".to_string(), "1".to_string()),
        ];
        for e in extra {
            let (k, val) = e.split_once('=').unwrap();
            v.push((k.to_string(), val.to_string()));
        }
        v
    }

    /// `scalebench ARGS` alone, with `env`'s variables.
    pub(crate) fn solo_with(env: &[(String, String)], args: &[String]) -> Ran {
        let e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        solo_env(&strs(args), &e)
    }

    /// `scalebench ARGS` alone on the stand-ins.
    pub(crate) fn solo_on(extra: &[&str], args: &[String]) -> Ran {
        solo_with(&env(libs().to_str().unwrap(), extra), args)
    }

    /// `mpirun -np N [gpus-per-rank.sh G] scalebench ARGS` on the stand-ins.
    pub(crate) fn mpirun_on(
        np: u32,
        gpus_per_rank: Option<u32>,
        extra: &[&str],
        args: &[String],
    ) -> Ran {
        let mut m: Vec<String> = Vec::new();
        for (k, v) in env(libs().to_str().unwrap(), extra) {
            m.push("-x".into());
            m.push(format!("{k}={v}"));
        }
        if let Some(g) = gpus_per_rank {
            m.push(wrapper());
            m.push(g.to_string());
        }
        common::mpirun_with(np, &strs(&m), &strs(args))
    }

    pub(crate) fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }

    /// `run --backend cuda MID -n N --warmup 1 -q --out OUT`: the shape of every run here.
    pub(crate) fn cuda_run(mid: &[&str], n: &str, out: &Path) -> Vec<String> {
        ["run", "--backend", "cuda"]
            .iter()
            .chain(mid)
            .chain(&["-n", n, "--warmup", "1", "-q", "--out"])
            .map(|s| s.to_string())
            .chain([out.display().to_string()])
            .collect()
    }

    /// Every case ok (or skipped for the documented reason), none wrong, the run labelled.
    pub(crate) fn all_valid(ran: &Ran, out: &Path, min_cases: usize) -> common::wire::ResultsFile {
        ran.assert_code(0);
        let r = common::read_results(out);
        let p = r.launches[0].provenance.as_ref().unwrap();
        assert!(
            p.backend.detail.starts_with("STAND-IN: "),
            "{}",
            p.backend.detail
        );
        assert!(p.warnings[0].starts_with("STAND-IN: "), "{:?}", p.warnings);
        // Every rank gives it; the launch says it once.
        let said = p
            .warnings
            .iter()
            .filter(|w| w.starts_with("STAND-IN: "))
            .count();
        assert_eq!(said, 1, "{:?}", p.warnings);
        for rank in &p.ranks {
            for d in &rank.devices {
                assert!(d.name.starts_with("scalebench stand-in "), "{}", d.name);
            }
        }
        assert!(r.cases.len() >= min_cases, "{} cases", r.cases.len());
        for c in &r.cases {
            assert_eq!(c.wrong, 0, "{}: {:?}", c.id, c.message);
            match c.status.as_str() {
                "ok" => {}
                "skipped" => assert!(
                    c.params.workload == "alltoall" && c.params.in_place == Some(true),
                    "{}: skipped: {:?}",
                    c.id,
                    c.message
                ),
                s => panic!("{}: {s}: {:?}", c.id, c.message),
            }
        }
        r
    }

    const COLLECTIVES: &str = "allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall";

    /// Hybrid: one process drives 2 devices through one NCCL group; every collective, type,
    /// operator, buffer placement and timing mode.
    #[test]
    fn hybrid_every_collective_type_and_operator_validates() {
        let dir = tmpdir("standin-hybrid");
        let out = dir.join("out");
        let ran = solo_on(
            &[],
            &cuda_run(
                &[
                    "--topology",
                    "hybrid",
                    "--devices-per-node",
                    "2",
                    "-w",
                    COLLECTIVES,
                    "--sizes",
                    "1KiB",
                    "--dtype",
                    "f32,f64,f16,bf16,i32",
                    "--op",
                    "sum,prod,min,max,avg",
                    "--in-place",
                    "both",
                    "-t",
                    "pipelined,isolated",
                ],
                "3",
                &out,
            ),
        );
        let r = all_valid(&ran, &out, 360);
        assert_eq!(r.launches[0].provenance.as_ref().unwrap().devices, 2);
    }

    /// Pure MPI (2 processes, one device each) and 2 processes × 2 devices, under mpirun:
    /// NCCL ranks in different processes really exchange data.
    #[test]
    fn across_processes_pure_and_two_by_two_validate() {
        let dir = tmpdir("standin-mpi");
        let out = dir.join("pure");
        let ran = mpirun_on(
            2,
            None,
            &[],
            &cuda_run(
                &[
                    "-w",
                    COLLECTIVES,
                    "--sizes",
                    "4KiB",
                    "--dtype",
                    "f32,bf16,i32",
                    "--op",
                    "sum,avg",
                    "--in-place",
                    "both",
                ],
                "3",
                &out,
            ),
        );
        all_valid(&ran, &out, 40);
        let out = dir.join("2x2");
        let ran = mpirun_on(
            2,
            Some(2),
            &["SCALEBENCH_STANDIN_DEVICES=4"],
            &cuda_run(
                &[
                    "--topology",
                    "hybrid",
                    "--devices-per-node",
                    "2",
                    "--nodes",
                    "2",
                    "--emulate-nodes",
                    "-w",
                    COLLECTIVES,
                    "--sizes",
                    "4KiB",
                    "--dtype",
                    "f64,f16",
                    "--op",
                    "prod,max",
                    "--in-place",
                    "both",
                ],
                "3",
                &out,
            ),
        );
        let r = all_valid(&ran, &out, 30);
        assert_eq!(r.launches[0].provenance.as_ref().unwrap().devices, 4);
    }

    /// cuBLAS stand-in: matmul and batch_matmul (whose copies overlap GEMMs on a second
    /// stream) in every GEMM type, one process and two.
    #[test]
    fn gemms_validate_with_the_overlap_pipeline() {
        let dir = tmpdir("standin-gemm");
        let out = dir.join("solo");
        let args = |o: &Path| {
            cuda_run(
                &[
                    "-w",
                    "matmul,batch_matmul",
                    "--dims",
                    "48",
                    "--batch",
                    "3",
                    "--dtype",
                    "f32,f64,f16,bf16",
                ],
                "3",
                o,
            )
        };
        let r = all_valid(&solo_on(&[], &args(&out)), &out, 8);
        for c in r
            .cases
            .iter()
            .filter(|c| c.params.workload == "batch_matmul")
        {
            assert_overlap_phases(c);
        }
        let out = dir.join("np2");
        all_valid(&mpirun_on(2, None, &[], &args(&out)), &out, 8);
    }

    /// The planted defect (one wrong element in every NCCL result) must be caught: wrong > 0,
    /// exit 3. Proof that validation on this path can fail.
    #[test]
    fn a_planted_nccl_defect_is_caught() {
        let dir = tmpdir("standin-defect");
        let out = dir.join("out");
        let ran = mpirun_on(
            2,
            None,
            &["SCALEBENCH_STANDIN_DEFECT=corrupt"],
            &cuda_run(
                &[
                    "-w",
                    "allreduce,allgather",
                    "--sizes",
                    "4KiB",
                    "--in-place",
                    "both",
                ],
                "3",
                &out,
            ),
        );
        ran.assert_code(3);
        let r = common::read_results(&out);
        assert_eq!(r.cases.len(), 4);
        for c in &r.cases {
            assert!(c.wrong > 0, "{}: the defect went unnoticed", c.id);
        }
    }

    /// ddp_step's results as JSON (the wire types do not model the `ddp` record).
    fn ddp_results(out: &Path) -> serde_json::Value {
        let text = std::fs::read_to_string(out.join("results.json"))
            .unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        serde_json::from_str(&text).unwrap()
    }

    /// Layers 64×48 ×3 and 200×40 (as in ddp.rs): with a 16 KiB cap in f32, three buckets
    /// (the 200×40 layer alone, two 64×48 together, the last alone); 1 B: one per layer;
    /// 1 MiB: one for all.
    const DDP_MODEL: &str = "64x48x3+200x40";

    /// `run -w ddp_step` on the stand-ins, small model, every bucket layout, f32 and f64.
    fn ddp_args(mid: &[&str], out: &Path) -> Vec<String> {
        let mut m = vec![
            "-w",
            "ddp_step",
            "--model",
            DDP_MODEL,
            "--bucket-size",
            "1B,16KiB,1MiB",
            // the layouts below assume one cap for all buckets (DDP's 1 MiB first bucket
            // would hold this whole model)
            "--first-bucket",
            "0B",
            "--batch",
            "8",
            "--check",
            "1",
        ];
        m.extend_from_slice(mid);
        cuda_run(&m, "2", out)
    }

    /// Every case ok with exact gradients (no tolerance: 2 devices average exactly with
    /// ncclAvg), DDP's bucket layout, the step figures present, the run labelled STAND-IN.
    fn ddp_exact(ran: &Ran, out: &Path, devices: u64, want_cases: usize) -> serde_json::Value {
        ran.assert_code(0);
        let v = ddp_results(out);
        let detail = v["launches"][0]["provenance"]["backend"]["detail"]
            .as_str()
            .unwrap();
        assert!(detail.starts_with("STAND-IN: "), "{detail}");
        let cases = v["cases"].as_array().unwrap();
        assert_eq!(cases.len(), want_cases, "{v}");
        for c in cases {
            assert_eq!(c["status"], "ok", "{}: {}", c["params"], c["message"]);
            assert_eq!(c["wrong"], 0);
            assert_eq!(c["tolerance"].as_f64(), Some(0.0));
            assert_eq!(c["devices"].as_u64(), Some(devices));
            let f64_layers = c["params"]["dtype"] == "f64";
            let want = match c["params"]["bucket_bytes"].as_u64().unwrap() {
                1 => 4,
                16384 if f64_layers => 4,
                16384 => 3,
                1048576 => 1,
                other => panic!("unexpected bucket size {other}"),
            };
            assert_eq!(c["ddp"]["buckets"].as_u64(), Some(want), "{}", c["params"]);
            for k in ["step_s", "step_no_overlap_s", "compute_s", "comm_s"] {
                let t = c["ddp"][k].as_f64().unwrap();
                assert!(t > 0.0 && t.is_finite(), "{k} = {t}");
            }
            let e = c["ddp"]["overlap_efficiency"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&e), "{e}");
        }
        v
    }

    /// ddp_step on the CUDA path: GEMMs on each device's compute stream, each bucket's
    /// ncclAllReduce (avg) on a communication stream after an event — pure MPI (2 processes)
    /// and hybrid (1 process, 2 devices in one NCCL group); every gradient exact.
    #[test]
    fn ddp_step_gradients_are_exact_pure_and_hybrid() {
        let dir = tmpdir("standin-ddp");
        let out = dir.join("pure");
        let ran = mpirun_on(2, None, &[], &ddp_args(&["--dtype", "f32,f64"], &out));
        ddp_exact(&ran, &out, 2, 6);
        let out = dir.join("hybrid");
        let ran = solo_on(
            &[],
            &ddp_args(&["--topology", "hybrid", "--devices-per-node", "2"], &out),
        );
        let v = ddp_exact(&ran, &out, 2, 3);
        assert_eq!(v["cases"][0]["ranks"].as_u64(), Some(1));

        // 3 devices: ncclAvg's pre-multiplied average rounds, so the case records a small
        // tolerance (far below the smallest wrong gradient, 1/3) and stays right within it
        let out = dir.join("three");
        let mut args = ddp_args(&["--dtype", "f32"], &out);
        let at = args.iter().position(|a| a == "1B,16KiB,1MiB").unwrap();
        args[at] = "16KiB".into();
        let ran = mpirun_on(3, None, &["SCALEBENCH_STANDIN_DEVICES=3"], &args);
        ran.assert_code(0);
        let c = &ddp_results(&out)["cases"][0];
        assert_eq!(
            (c["status"].as_str(), c["wrong"].as_u64()),
            (Some("ok"), Some(0))
        );
        let tol = c["tolerance"].as_f64().unwrap();
        assert!(tol > 0.0 && tol < 1e-3, "{tol}");
    }

    /// A wrong gradient must be counted: a corrupted input (fault `corrupt`) and a planted NCCL
    /// defect (one wrong element in every all-reduce) both end in exit 3 with wrong > 0.
    #[test]
    fn ddp_step_wrong_gradients_exit_3() {
        let dir = tmpdir("standin-ddp-bad");
        for (tag, extra, fault) in [
            ("corrupt", &[][..], &["--fault", "corrupt"][..]),
            (
                "defect",
                &["SCALEBENCH_STANDIN_DEFECT=corrupt"][..],
                &[][..],
            ),
        ] {
            let out = dir.join(tag);
            let mut args = ddp_args(&[], &out);
            // one bucket size only
            let at = args.iter().position(|a| a == "1B,16KiB,1MiB").unwrap();
            args[at] = "16KiB".into();
            args.splice(3..3, fault.iter().map(|s| s.to_string()));
            let ran = mpirun_on(2, None, extra, &args);
            ran.assert_code(3);
            let v = ddp_results(&out);
            let c = &v["cases"][0];
            assert_eq!(c["status"], "wrong", "{tag}: {c}");
            assert!(c["wrong"].as_u64().unwrap() > 0, "{tag}");
        }
    }

    /// With a slow link (fault `slow_comm`: a host function sleeping on the communication
    /// stream after each all-reduce) the step cannot end before the buckets' delays have
    /// passed one after another, and the exposed communication shows it.
    #[test]
    fn ddp_step_slow_link_shows_as_exposed_communication() {
        let out = tmpdir("standin-ddp-slow").join("out");
        let mut args = ddp_args(&["--topology", "hybrid", "--devices-per-node", "2"], &out);
        let at = args.iter().position(|a| a == "1B,16KiB,1MiB").unwrap();
        args[at] = "1B".into();
        args.splice(3..3, ["--fault".to_string(), "slow_comm:40".to_string()]);
        let ran = solo_on(&[], &args);
        ran.assert_code(0);
        let v = ddp_results(&out);
        let c = &v["cases"][0];
        assert_eq!(c["wrong"], 0);
        let d = |k: &str| c["ddp"][k].as_f64().unwrap();
        // 4 buckets × 40 ms, serial on the link
        assert!(d("comm_s") >= 0.16, "comm {}", d("comm_s"));
        assert!(d("step_s") >= 0.16, "step {}", d("step_s"));
        assert!(d("exposed_comm_s") >= 0.16 - d("compute_s"), "{}", c["ddp"]);
    }

    /// A fault at set-up: the exit code, one sentence naming `library` and `fix`, no panic,
    /// no results directory.
    fn refused_with(ran: &Ran, code: i32, library: &str, fix: &str, out: &Path) {
        ran.assert_code(code);
        let line = ran
            .stderr
            .lines()
            .find(|l| l.starts_with("scalebench: error: "))
            .unwrap_or_else(|| panic!("no error sentence in:\n{}", ran.stderr));
        assert!(line.contains(library), "{library:?} not named in: {line}");
        assert!(line.contains(fix), "{fix:?} not in: {line}");
        assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
        assert!(!out.exists(), "{} was left behind", out.display());
    }

    fn small_run(out: &Path) -> Vec<String> {
        cuda_run(
            &["-w", "allreduce,matmul", "--sizes", "4KiB", "--dims", "16"],
            "2",
            out,
        )
    }

    #[test]
    fn allocation_failure_is_one_sentence() {
        let out = tmpdir("standin-alloc").join("out");
        let a = small_run(&out);
        let ran = mpirun_on(2, None, &["SCALEBENCH_STANDIN_FAULT=alloc"], &a);
        refused_with(&ran, 4, "libcuda.so.1", "nvidia-smi", &out);
        assert!(
            ran.stderr.contains("CUDA_ERROR_OUT_OF_MEMORY"),
            "{}",
            ran.stderr
        );
    }

    /// An allocation failing mid-run fails that case (exit 3, as for any failed case) with the
    /// driver's reason; the results file is complete.
    #[test]
    fn allocation_failure_in_a_case_fails_the_case() {
        let out = tmpdir("standin-alloc-case").join("out");
        let a = small_run(&out);
        // set-up allocates 1 buffer per GPU; the first case's buffers then fail
        let ran = solo_on(&["SCALEBENCH_STANDIN_ALLOC_FAIL_AFTER=1"], &a);
        ran.assert_code(3);
        assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
        let r = common::read_results(&out);
        let failed: Vec<_> = r.cases.iter().filter(|c| c.status == "failed").collect();
        assert!(!failed.is_empty());
        for c in failed {
            let m = c.message.as_deref().unwrap_or("");
            assert!(
                m.contains("cuMemAlloc") && m.contains("CUDA_ERROR_OUT_OF_MEMORY"),
                "{m}"
            );
        }
    }

    #[test]
    fn communicator_failure_is_one_sentence() {
        let out = tmpdir("standin-comm").join("out");
        let a = small_run(&out);
        let ran = mpirun_on(2, None, &["SCALEBENCH_STANDIN_FAULT=comm-init"], &a);
        refused_with(&ran, 4, "NCCL (libnccl.so)", "NCCL_DEBUG=INFO", &out);
    }

    /// A collective that returns an error fails its case with NCCL's reason and the fix; the
    /// communicators are aborted, so later collectives fail at once (no hang), GEMMs go on;
    /// exit 3 (failed cases), results complete.
    #[test]
    fn collective_error_fails_the_case_and_aborts_the_communicators() {
        let out = tmpdir("standin-coll").join("out");
        let mut a = small_run(&out);
        a[4] = "allreduce,broadcast,matmul".into();
        let ran = mpirun_on(2, None, &["SCALEBENCH_STANDIN_FAULT=collective"], &a);
        ran.assert_code(3);
        assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
        let r = common::read_results(&out);
        for c in &r.cases {
            let m = c.message.as_deref().unwrap_or("");
            match c.params.workload.as_str() {
                "matmul" => assert_eq!(c.status, "ok", "{m}"),
                _ => {
                    assert_eq!(c.status, "failed");
                    assert!(
                        m.contains("NCCL (libnccl.so)") && m.contains("NCCL_DEBUG"),
                        "{m}"
                    );
                }
            }
        }
    }

    #[test]
    fn missing_driver_symbol_is_one_sentence() {
        let out = tmpdir("standin-symbol").join("out");
        let a = small_run(&out);
        // a libcuda without cuMemHostAlloc first on the path
        let path = format!("{0}/missing-symbol:{0}", libs().display());
        let ran = solo_with(&env(&path, &[]), &a);
        refused_with(&ran, 2, "libcuda.so.1", "update the NVIDIA driver", &out);
        assert!(ran.stderr.contains("cuMemHostAlloc"), "{}", ran.stderr);
    }

    /// Drivers older than the bindings' floor (CUDA 11.4) are refused before any other call;
    /// CUDA 12.2 (no cuEventElapsedTime_v2, which the old cuda-13000 bindings needed) runs.
    #[test]
    fn driver_floor() {
        let out = tmpdir("standin-old").join("out");
        let a = small_run(&out);
        let ran = mpirun_on(2, None, &["SCALEBENCH_STANDIN_DRIVER_VERSION=11020"], &a);
        refused_with(&ran, 2, "libcuda.so.1", "update the driver", &out);
        assert!(
            ran.stderr.contains("CUDA 11.2, older than CUDA 11.4"),
            "{}",
            ran.stderr
        );
        let ok = solo_on(&["SCALEBENCH_STANDIN_DRIVER_VERSION=12020"], &a);
        all_valid(&ok, &out, 2);
    }

    #[test]
    fn nccl_floor() {
        let out = tmpdir("standin-oldnccl").join("out");
        let a = small_run(&out);
        let ran = solo_on(&["SCALEBENCH_STANDIN_NCCL_VERSION=2903"], &a);
        refused_with(&ran, 4, "libnccl.so", "install NCCL 2.10.0 or newer", &out);
    }

    /// The stand-ins' contract checks: each misuse (memory outside its allocation or its
    /// device, an event read before it was recorded, a wait on an event never recorded,
    /// overlapping device-to-device copies, NCCL's in-place rule broken, several
    /// communicators of one process used outside a group, ranks disagreeing on a collective,
    /// leaks at exit) aborts naming the call; a read before synchronising sees poison.
    #[test]
    fn contract_checks_abort_naming_the_call() {
        let out = std::process::Command::new(libs().join("contract-test"))
            .env("SCALEBENCH_STANDIN", "1")
            .output()
            .expect("run contract-test");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.starts_with("ok")).count(),
            10,
            "{text}"
        );
    }

    /// Without SCALEBENCH_STANDIN=1 the stand-ins refuse to load: nothing runs on them by
    /// accident.
    #[test]
    fn the_stand_ins_refuse_to_load_unless_wanted() {
        let out = tmpdir("standin-gate").join("out");
        let a = small_run(&out);
        let ran = solo_env(
            &strs(&a),
            &[
                ("LD_LIBRARY_PATH", libs().to_str().unwrap()),
                ("SCALEBENCH_STANDIN", "0"),
            ],
        );
        ran.assert_code(2);
        assert!(
            ran.stderr
                .contains("refuses to load without SCALEBENCH_STANDIN=1"),
            "{}",
            ran.stderr
        );
        // The stand-in _exits inside dlopen (its constructor), after rank 0 claimed --out, so
        // no clean-up of ours runs: what must hold is that no run was recorded there and the
        // directory holds at most the claim's lock (a later run may use it).
        let left: Vec<String> = std::fs::read_dir(&out)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.iter().all(|n| n == ".lock"), "{left:?}");
        let again = solo_env(
            &strs(&a),
            &[
                ("LD_LIBRARY_PATH", libs().to_str().unwrap()),
                ("SCALEBENCH_STANDIN", "1"),
            ],
        );
        again.assert_code(0);
        assert!(out.join("results.json").is_file());
    }

    /// One hybrid run (1 process × 2 stand-in devices) with NCCL's INFO output on; the log
    /// files it left (`%h`/`%p` expanded) parsed with scalebench's NCCL log parser, and the
    /// results.
    pub(crate) fn logged_run(
        tag: &str,
        extra: &[&str],
        workloads: &str,
    ) -> (Ran, PathBuf, Vec<scalebench::backend::nccl_log::Entry>) {
        let dir = tmpdir(tag);
        let (out, logs) = (dir.join("out"), dir.join("logs"));
        std::fs::create_dir_all(&logs).unwrap();
        let file = format!("NCCL_DEBUG_FILE={}/nccl.%h.%p", logs.display());
        let mut e = vec![
            "SCALEBENCH_NCCL_CAPTURE=1",
            "NCCL_DEBUG=INFO",
            "NCCL_DEBUG_SUBSYS=INIT,TUNING,COLL",
            file.as_str(),
        ];
        e.extend_from_slice(extra);
        let a = cuda_run(
            &[
                "--topology",
                "hybrid",
                "--devices-per-node",
                "2",
                "-w",
                workloads,
                "--sizes",
                "1KiB,64KiB,1MiB",
            ],
            "5",
            &out,
        );
        let ran = solo_on(&e, &a);
        let files: Vec<_> = std::fs::read_dir(&logs)
            .unwrap()
            .map(|f| f.unwrap().path())
            .collect();
        let text: String = files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect();
        if ran.code == 0 {
            // One process, one file, its name with the host and pid in place of %h and %p.
            assert_eq!(files.len(), 1, "{files:?}");
            let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
            assert!(!name.contains('%') && name.starts_with("nccl."), "{name}");
        }
        (ran, out, scalebench::backend::nccl_log::parse_log(&text))
    }

    /// The choices NCCL's rank 0 logged, as (function, bytes, algorithm, protocol), once each.
    fn choices(
        e: &[scalebench::backend::nccl_log::Entry],
    ) -> std::collections::BTreeSet<(String, u64, String, String)> {
        use scalebench::backend::nccl_log::Event;
        e.iter()
            .filter_map(|x| match &x.event {
                Event::Choice(c) => Some((
                    c.func.map_or("?".to_string(), |f| f.name().to_string()),
                    c.bytes,
                    c.algo.to_string(),
                    c.proto.to_string(),
                )),
                _ => None,
            })
            .collect()
    }

    fn set(
        v: &[(&str, u64, &str, &str)],
    ) -> std::collections::BTreeSet<(String, u64, String, String)> {
        v.iter()
            .map(|(f, b, a, p)| (f.to_string(), *b, a.to_string(), p.to_string()))
            .collect()
    }

    /// Issue 31: the stand-in NCCL prints INFO lines in the formats of the version it claims
    /// (named from 2.24, numeric before), which the parser reads back: every collective of
    /// the run has its algorithm and protocol; its default choice follows its cost model.
    #[test]
    fn stand_in_nccl_logs_its_choices_in_each_format() {
        use scalebench::backend::nccl_log::{version, Event, NcclProto};
        let (ran, out, e) = logged_run("nccl-log-named", &[], "allreduce,allgather");
        all_valid(&ran, &out, 6);
        assert_eq!(version(&e).map(|v| v.1), Some(22803));
        // f32 1 KiB = 256 elements; the all-gather's 1 KiB is what each rank receives, its
        // line counts one rank's part (512 B of 2 ranks).
        assert_eq!(
            choices(&e),
            set(&[
                ("AllReduce", 1024, "Tree", "LL"),
                ("AllReduce", 65536, "Tree", "Simple"),
                ("AllReduce", 1048576, "Ring", "Simple"),
                ("AllGather", 512, "Ring", "LL"),
                ("AllGather", 32768, "Ring", "Simple"),
                ("AllGather", 524288, "Ring", "Simple"),
            ])
        );
        for x in &e {
            if let Event::Choice(c) = &x.event {
                assert!(c.named);
                let want = if c.proto == NcclProto::Simple { 4 } else { 2 };
                assert_eq!(c.channel_count(), Some(want));
                // Rank 0 of the communicator: the process's device 0.
                assert_eq!(x.origin.as_ref().unwrap().device, 0);
            }
        }
        // The run's own record: each case's choice, read from the same log.
        for c in &r_named(&out) {
            let n = c.nccl.as_ref().expect("captured");
            assert_eq!(n.version.as_deref(), Some("2.28.3+standin"));
            let b = c.params.requested_bytes.unwrap();
            let want = match (c.params.workload.as_str(), b) {
                ("allreduce", 1024) => ("Tree", "LL"),
                ("allreduce", 65536) => ("Tree", "Simple"),
                ("allgather", 1024) => ("Ring", "LL"),
                _ => ("Ring", "Simple"),
            };
            assert_eq!(n.choices.len(), 1, "{}: {:?}", c.id, n.choices);
            let got = (
                n.choices[0].algorithm.as_str(),
                n.choices[0].protocol.as_str(),
            );
            assert_eq!(got, want, "{}", c.id);
            assert!(
                n.choices[0].calls >= 6,
                "{}: warm-up and 5 timed calls",
                c.id
            );
        }
        // COLL lines from both devices' communicators.
        let devices: std::collections::BTreeSet<u32> = e
            .iter()
            .filter(|x| matches!(x.event, Event::Call(_)))
            .map(|x| x.origin.as_ref().unwrap().device)
            .collect();
        assert_eq!(devices.into_iter().collect::<Vec<_>>(), [0, 1]);

        // As NCCL 2.21: numeric, no function, the all-gather's bytes for all ranks.
        let (ran, out, e) = logged_run(
            "nccl-log-numeric",
            &["SCALEBENCH_STANDIN_NCCL_VERSION=22105"],
            "allgather",
        );
        all_valid(&ran, &out, 3);
        assert_eq!(version(&e).map(|v| v.1), Some(22105));
        assert_eq!(
            choices(&e),
            set(&[
                ("?", 1024, "Ring", "LL"),
                ("?", 65536, "Ring", "Simple"),
                ("?", 1048576, "Ring", "Simple"),
            ])
        );
        assert!(e.iter().all(|x| match &x.event {
            Event::Choice(c) => !c.named && c.model_time_us.is_some(),
            _ => true,
        }));
    }

    pub(crate) fn r_named(out: &Path) -> Vec<common::wire::Case> {
        common::read_results(out).cases
    }

    /// Issue 31: with SCALEBENCH_NCCL_CAPTURE=1 (no NCCL variable set) every case of a pure
    /// run (2 processes) records NCCL's algorithm and protocol — but all-to-all, whose
    /// point-to-point calls NCCL logs no choice for; without it (the default) none.
    #[test]
    fn every_case_records_the_algorithm_and_protocol() {
        let dir = tmpdir("nccl-capture-default");
        let out = dir.join("on");
        let w = "allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall";
        let a = cuda_run(&["-w", w, "--sizes", "1KiB,64KiB"], "3", &out);
        let ran = mpirun_on(2, None, &["SCALEBENCH_NCCL_CAPTURE=1"], &a);
        let r = all_valid(&ran, &out, 20);
        // The provenance holds the user's environment: none of the capture's settings.
        let env = &r.launches[0].provenance.as_ref().unwrap().environment;
        for k in ["NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"] {
            assert!(!env.contains_key(k), "{k} recorded: {env:?}");
        }
        for c in r.cases.iter().filter(|c| c.status == "ok") {
            let n = c.nccl.as_ref().expect("captured");
            assert_eq!(n.version.as_deref(), Some("2.28.3+standin"), "{}", c.id);
            if c.params.workload == "alltoall" {
                assert!(n.choices.is_empty(), "{}: {:?}", c.id, n.choices);
            } else {
                assert!(!n.choices.is_empty(), "{}", c.id);
                assert!(["Ring", "Tree"].contains(&n.choices[0].algorithm.as_str()));
                assert!(n.choices[0].channels.is_some());
            }
        }
        let off = dir.join("off");
        let a = cuda_run(&["-w", "allreduce", "--sizes", "1KiB"], "3", &off);
        let ran = mpirun_on(2, None, &[], &a);
        let r = all_valid(&ran, &off, 1);
        assert!(r.cases.iter().all(|c| c.nccl.is_none()));
    }

    /// The least time measured at `bytes` over the run's cases of that size (in and out of
    /// place).
    pub(crate) fn min_time_s(out: &Path, bytes: u64) -> f64 {
        let r = common::read_results(out);
        r.cases
            .iter()
            .filter(|c| c.params.requested_bytes == Some(bytes))
            .map(|c| c.timing.as_ref().unwrap().stats_s.min)
            .fold(f64::INFINITY, f64::min)
    }

    /// NCCL_ALGO / NCCL_PROTO are honoured: forced Ring/LL128 is what the log shows, and it
    /// is the planted fastest at 64 KiB (faster than the default choice there, slower at
    /// 1 MiB); an unknown token fails the communicators (exit 4) naming it.
    #[test]
    fn stand_in_nccl_honours_algo_and_proto() {
        // ×20 the modelled costs: at 64 KiB Ring/LL128 7.6 ms against the default's (Tree/
        // Simple) 9.3 ms, far apart beside the stand-in's own copying and reducing (about
        // 1 ms here, its minimum steady to 0.1 ms).
        let scale = "SCALEBENCH_STANDIN_NCCL_COST_SCALE=20";
        let (ran, default_out, _) = logged_run("nccl-force-default", &[scale], "allreduce");
        all_valid(&ran, &default_out, 6);
        let (ran, forced_out, e) = logged_run(
            "nccl-force-ll128",
            &[scale, "NCCL_ALGO=ring", "NCCL_PROTO=LL128"],
            "allreduce",
        );
        all_valid(&ran, &forced_out, 6);
        for c in r_named(&forced_out) {
            let n = c.nccl.unwrap();
            let got = (
                n.choices[0].algorithm.as_str(),
                n.choices[0].protocol.as_str(),
            );
            assert_eq!(got, ("Ring", "LL128"));
        }
        assert_eq!(
            choices(&e),
            set(&[
                ("AllReduce", 1024, "Ring", "LL128"),
                ("AllReduce", 65536, "Ring", "LL128"),
                ("AllReduce", 1048576, "Ring", "LL128"),
            ])
        );
        let (d64, f64_) = (
            min_time_s(&default_out, 65536),
            min_time_s(&forced_out, 65536),
        );
        assert!(f64_ < d64, "64 KiB: Ring/LL128 {f64_} s, default {d64} s");
        let (d1m, f1m) = (
            min_time_s(&default_out, 1048576),
            min_time_s(&forced_out, 1048576),
        );
        assert!(f1m > d1m, "1 MiB: Ring/LL128 {f1m} s, default {d1m} s");

        let (ran, out, _) = logged_run("nccl-force-bogus", &["NCCL_ALGO=bogus"], "allreduce");
        ran.assert_code(4);
        assert!(
            ran.stderr.contains("unknown token 'bogus'"),
            "{}",
            ran.stderr
        );
        assert!(!out.join("results.json").exists() || common::read_results(&out).cases.is_empty());
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn without_the_feature_cuda_is_refused_with_the_rebuild_command() {
    let dir = tmpdir("cuda-nofeature");
    let out = dir.join("out");
    let ran = solo(&[
        "run",
        "--backend",
        "cuda",
        "-w",
        "allreduce",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(
        &ran,
        "rebuild with `cargo build --release --features cuda`",
        &out,
    );
}
