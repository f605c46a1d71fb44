//! The ROCm backend (issue 30) through the real binary, on scalebench's stand-in HIP runtime,
//! RCCL and rocBLAS (`standin/`: CPU test doubles, no AMD GPU anywhere): every collective and
//! the GEMMs validated under real mpirun, results labelled STAND-IN with backend `rocm`; a
//! planted RCCL defect and a planted GEMM defect caught (exit 3); ddp_step's gradients exact
//! with its all-reduces on a communication stream; a missing library, a missing symbol and too
//! old a version each refused with one sentence (exit 2), never a panic. Built without the
//! feature, `--backend rocm` is refused with the rebuild command.

// Ran serves the tests that need the rocm feature.
#[cfg_attr(not(feature = "rocm"), allow(unused_imports))]
use crate::common::{self, tmpdir, Ran};

#[cfg(feature = "rocm")]
mod standin {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    /// Builds the stand-in libraries once per test process, in a directory of their own (the
    /// CUDA tests build theirs elsewhere, so neither rewrites a library the other has loaded).
    fn libs() -> &'static Path {
        static DIR: OnceLock<PathBuf> = OnceLock::new();
        DIR.get_or_init(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("standin-rocm");
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

    /// The stand-ins' environment with `lib_path` as the library path, plus `extra`.
    fn env(lib_path: &str, extra: &[&str]) -> Vec<(String, String)> {
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

    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }

    /// `scalebench ARGS` alone with `env`'s variables.
    fn solo_with(env: &[(String, String)], args: &[String]) -> Ran {
        let e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        common::solo_env(&strs(args), &e)
    }

    /// `mpirun -np N scalebench ARGS` with `env`'s variables.
    /// `-x K=V` for each of `env`: mpirun's options exporting it to every rank.
    fn exported(env: &[(String, String)]) -> Vec<String> {
        env.iter()
            .flat_map(|(k, v)| ["-x".to_string(), format!("{k}={v}")])
            .collect()
    }

    fn mpirun_with_env(np: u32, env: &[(String, String)], args: &[String]) -> Ran {
        common::mpirun_with(np, &strs(&exported(env)), &strs(args))
    }

    /// `mpirun -np NP` on the stand-ins (`extra` settings too), each rank given its own block
    /// of `per_rank` devices by `standin/gpus-per-rank.sh`, as a launcher's GPU binding does.
    fn mpirun_per_rank(np: u32, extra: &[&str], per_rank: u32, args: &[String]) -> Ran {
        let mut m = exported(&on_standins(extra));
        let wrapper = Path::new(env!("CARGO_MANIFEST_DIR")).join("standin/gpus-per-rank.sh");
        m.push(wrapper.display().to_string());
        m.push(per_rank.to_string());
        common::mpirun_with(np, &strs(&m), &strs(args))
    }

    fn on_standins(extra: &[&str]) -> Vec<(String, String)> {
        env(libs().to_str().unwrap(), extra)
    }

    /// `links --backend rocm` (issue 29 over RCCL): 4 ranks, one stand-in GCD each, RCCL
    /// send/recv through the transport the NCCL path uses: every off-diagonal cell measured,
    /// the file and the output name RCCL, its version and the STAND-IN label; nothing was
    /// injected, so nothing is confirmed (exit 0).
    #[test]
    fn links_over_rccl_give_a_full_matrix() {
        let out = tmpdir("rocm-links");
        let args: Vec<String> = [
            "links",
            "--backend",
            "rocm",
            "--size",
            "256KiB",
            "--iters",
            "15",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([out.display().to_string()])
        .collect();
        let r = mpirun_with_env(4, &on_standins(&["SCALEBENCH_STANDIN_DEVICES=4"]), &args);
        let text = std::fs::read_to_string(out.join("links.json")).unwrap_or_else(|_| {
            panic!("no links.json: exit {}\n{}\n{}", r.code, r.stdout, r.stderr)
        });
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["transport"], "rccl");
        assert_eq!(
            v["nccl_version"], "2.20.5",
            "the stand-in RCCL's NCCL API version"
        );
        assert!(
            v["standin"]
                .as_str()
                .is_some_and(|l| l.starts_with("STAND-IN: the ROCm libraries")),
            "{}",
            v["standin"]
        );
        let m = v["matrix_gbps"].as_array().unwrap();
        assert_eq!(m.len(), 4);
        for (i, row) in m.iter().enumerate() {
            for (j, c) in row.as_array().unwrap().iter().enumerate() {
                assert_eq!(c.is_null(), i == j, "cell {i}→{j}: {c}");
                assert!(i == j || c.as_f64().unwrap() > 0.0, "cell {i}→{j}: {c}");
            }
        }
        assert!(
            r.stdout
                .contains("over STAND-IN RCCL 2.20.5 send/recv, one GCD per rank"),
            "{}",
            r.stdout
        );
        let confirmed = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["confirmed"] == true)
            .count();
        assert_eq!(confirmed, 0, "{}", r.stdout);
        r.assert_code(0);
        // An odd size cannot be sent as 4-byte words: refused before any GCD is opened.
        let odd: Vec<String> = ["links", "--backend", "rocm", "--size", "1001"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let r = solo_with(&on_standins(&[]), &odd);
        r.assert_code(2);
        assert!(
            r.stderr.contains("give a multiple of 4 bytes"),
            "{}",
            r.stderr
        );
    }

    /// `run --backend rocm MID -n N --warmup 1 -q --out OUT`.
    fn rocm_run(mid: &[&str], n: &str, out: &Path) -> Vec<String> {
        ["run", "--backend", "rocm"]
            .iter()
            .chain(mid)
            .chain(&["-n", n, "--warmup", "1", "-q", "--out"])
            .map(|s| s.to_string())
            .chain([out.display().to_string()])
            .collect()
    }

    /// Every case ok (in-place all-to-all skipped, RCCL has none), none wrong, backend rocm,
    /// the run labelled a stand-in's; returns the results.
    fn all_valid(ran: &Ran, out: &Path, min_cases: usize) -> common::wire::ResultsFile {
        ran.assert_code(0);
        let r = common::read_results(out);
        for l in &r.launches {
            let p = l.provenance.as_ref().unwrap();
            assert_eq!(p.backend.kind, "rocm");
            assert!(
                p.backend.detail.starts_with("STAND-IN: ") && p.backend.detail.contains("RCCL"),
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
        }
        assert!(r.cases.len() >= min_cases, "{} cases", r.cases.len());
        for c in &r.cases {
            assert_eq!(c.params.backend, "rocm", "{}", c.id);
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

    /// Pure MPI, one GCD per rank (np=2): every collective × type × operator × placement ×
    /// timing mode, validated exactly.
    #[test]
    fn pure_every_collective_type_and_operator_validates() {
        let out = tmpdir("rocm-pure").join("out");
        let args = rocm_run(
            &[
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
            "2",
            &out,
        );
        let r = all_valid(&mpirun_with_env(2, &on_standins(&[]), &args), &out, 360);
        let ok: std::collections::BTreeSet<&str> = r
            .cases
            .iter()
            .filter(|c| c.status == "ok")
            .map(|c| c.params.workload.as_str())
            .collect();
        assert_eq!(ok.len(), 6, "collectives measured: {ok:?}");
    }

    /// Hybrid: one process drives 2 GCDs through one RCCL group.
    #[test]
    fn hybrid_one_process_two_gcds_validates() {
        let out = tmpdir("rocm-hybrid").join("out");
        let args = rocm_run(
            &[
                "--topology",
                "hybrid",
                "--devices-per-node",
                "2",
                "-w",
                COLLECTIVES,
                "--sizes",
                "1KiB,64KiB",
                "--dtype",
                "f32,bf16",
                "--op",
                "sum,avg",
                "--in-place",
                "both",
            ],
            "2",
            &out,
        );
        let r = all_valid(&solo_with(&on_standins(&[]), &args), &out, 40);
        assert_eq!(
            r.launches[0].provenance.as_ref().unwrap().ranks[0]
                .devices
                .len(),
            2
        );
    }

    /// 2 processes × 2 GCDs: each process its own block of stand-in devices
    /// (`standin/gpus-per-rank.sh` sets CUDA_VISIBLE_DEVICES, which HIP honours too), RCCL
    /// ranks across processes and within each process's group.
    #[test]
    fn two_processes_by_two_gcds_validate() {
        let out = tmpdir("rocm-2x2").join("out");
        let args = rocm_run(
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
                "f32,i32",
                "--op",
                "sum,min",
            ],
            "2",
            &out,
        );
        let ran = mpirun_per_rank(2, &["SCALEBENCH_STANDIN_DEVICES=4"], 2, &args);
        let r = all_valid(&ran, &out, 20);
        let p = r.launches[0].provenance.as_ref().unwrap();
        assert_eq!(p.ranks.len(), 2);
        assert!(p.ranks.iter().all(|rank| rank.devices.len() == 2));
        // AMD SMI telemetry per GCD, gathered from both ranks. The stand-in AMD SMI lists all
        // four devices and reads 40 °C + the device's index; rank 1's HIP ordinals 0 and 1
        // are devices 2 and 3 (CUDA_VISIBLE_DEVICES=2,3), so only matching by PCI address
        // reads 42 and 43 for them (by ordinal would read 40 and 41).
        for c in r.cases.iter().filter(|c| c.status == "ok") {
            let mut seen: Vec<u32> = c.telemetry.iter().map(|t| t.device).collect();
            seen.sort_unstable();
            assert_eq!(seen, [0, 1, 2, 3], "{}: {:?}", c.id, c.telemetry);
            for t in &c.telemetry {
                assert_eq!(t.error, None, "{}: {t:?}", c.id);
                assert!(t.samples >= 1, "{}: {t:?}", c.id);
                assert_eq!(
                    t.temperature_c_max,
                    Some(40.0 + f64::from(t.device)),
                    "{}: {t:?}",
                    c.id
                );
                // Measured from the stand-in's stream threads; not modelled figures absent.
                assert!(
                    t.gpu_util_percent_mean
                        .is_some_and(|u| (0.0..=100.0).contains(&u)),
                    "{}: {t:?}",
                    c.id
                );
                assert_eq!(
                    (t.mem_util_percent_mean, t.sm_clock_mhz_max),
                    (None, None),
                    "{}: {t:?}",
                    c.id
                );
                // The stand-in's made-up socket power (100 W + index) of AMD SMI 24.6
                // (ROCm 6.2), read by address too, and said to be the socket's.
                assert_eq!(
                    t.power_w_max,
                    Some(100.0 + f64::from(t.device)),
                    "{}: {t:?}",
                    c.id
                );
                assert_eq!(t.power_scope.as_deref(), Some("socket"), "{}: {t:?}", c.id);
            }
        }
    }

    /// Power sits in a different place of `amdsmi_power_info_t` in AMD SMI 23.2 (ROCm 5.7),
    /// 23.4-24.x (ROCm 6.0-6.3) and 25/26 (ROCm 6.4, 7.x), and the version struct itself lost
    /// its year in two steps; the stand-in writes each release's
    /// layout (a wrong offset reads a voltage or a split u64, not 100 W + index). A release
    /// no header describes: no power, one warning, the rest still read.
    #[test]
    fn power_is_read_in_each_amd_smi_releases_layout() {
        // "0.25.3": ROCm 6.4's 25.3, the struct's year member kept but unused
        for version in ["23.2.0", "23.4.0", "24.7.1", "0.25.3", "26.1.0", "22.1.0"] {
            let out = tmpdir(&format!("rocm-power-{version}")).join("out");
            let var = format!("SCALEBENCH_STANDIN_AMDSMI_VERSION={version}");
            let args = rocm_run(
                &[
                    "--topology",
                    "hybrid",
                    "--devices-per-node",
                    "2",
                    "-w",
                    "allreduce",
                    "--sizes",
                    "4KiB",
                ],
                "2",
                &out,
            );
            let r = all_valid(&solo_with(&on_standins(&[&var]), &args), &out, 1);
            let w = &r.launches[0].provenance.as_ref().unwrap().warnings;
            let known = version != "22.1.0";
            for c in &r.cases {
                assert_eq!(c.telemetry.len(), 2, "{version}: {:?}", c.telemetry);
                for t in &c.telemetry {
                    let want = known.then(|| 100.0 + f64::from(t.device));
                    assert_eq!(t.power_w_max, want, "{version}: {t:?}");
                    assert_eq!(t.power_scope.is_some(), known, "{version}: {t:?}");
                    assert_eq!(t.temperature_c_max, Some(40.0 + f64::from(t.device)));
                }
            }
            let said = w.iter().filter(|w| w.starts_with("no GPU power: ")).count();
            assert_eq!(said, usize::from(!known), "{version}: {w:?}");
            if !known {
                assert!(
                    w.iter()
                        .any(|w| w.contains("AMD SMI 22.1.0 is not a release")),
                    "{w:?}"
                );
            }
        }
    }

    /// A launcher that gives each rank its own GCD (Slurm `--gpus-per-task=1`, LUMI's
    /// `ROCR_VISIBLE_DEVICES=$SLURM_LOCALID` wrapper): local rank 1's node-local GPU is 1, but
    /// it sees one device, HIP ordinal 0; it opens that one and says why, as CUDA does.
    #[test]
    fn a_rank_given_its_own_gcd_opens_it_as_ordinal_zero() {
        let out = tmpdir("rocm-own-gcd").join("out");
        let args = rocm_run(
            &[
                "--devices-per-node",
                "2",
                "-w",
                "allreduce",
                "--sizes",
                "4KiB",
            ],
            "2",
            &out,
        );
        let r = all_valid(&mpirun_per_rank(2, &[], 1, &args), &out, 1);
        let ranks = &r.launches[0].provenance.as_ref().unwrap().ranks;
        let rank1 = &ranks[1].devices[0];
        assert_eq!(rank1.local_index, 1, "{rank1:?}");
        assert!(
            rank1.name.contains(" GCD fffe:5b:01.0 ")
                && rank1.name.contains("HIP ordinal 0")
                && rank1
                    .name
                    .contains("node-local GPU 1 is this rank's only visible device (ordinal 0)"),
            "{}",
            rank1.name
        );
        // Rank 0's ordinal is its node-local number: no note.
        assert!(
            !ranks[0].devices[0].name.contains("only visible"),
            "{:?}",
            ranks[0]
        );
        // Two GCDs visible to a rank that wants GPU 2: refused in HIP's words, exit 2.
        let out = tmpdir("rocm-too-few").join("out");
        let args = rocm_run(
            &[
                "--devices-per-node",
                "3",
                "-w",
                "allreduce",
                "--sizes",
                "4KiB",
            ],
            "2",
            &out,
        );
        let ran = mpirun_with_env(3, &on_standins(&["SCALEBENCH_STANDIN_DEVICES=2"]), &args);
        ran.assert_code(2);
        assert!(
            ran.stderr
                .contains("no HIP device for node-local GPU 2: this process sees 2 devices (ROCR_VISIBLE_DEVICES"),
            "{}",
            ran.stderr
        );
        assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
    }

    /// A node without AMD SMI still runs: no telemetry, one warning naming the library (as a
    /// missing NVML is on CUDA), every case valid.
    #[test]
    fn a_missing_amd_smi_is_a_warning() {
        let dir = tmpdir("rocm-nosmi");
        let no_smi = dir.join("no-smi");
        std::fs::create_dir_all(&no_smi).unwrap();
        for lib in ["libamdhip64.so", "librccl.so"] {
            std::fs::copy(libs().join(lib), no_smi.join(lib)).unwrap();
        }
        let out = dir.join("out");
        let ran = solo_with(&env(no_smi.to_str().unwrap(), &[]), &small_run(&out));
        let r = all_valid(&ran, &out, 1);
        let w = &r.launches[0].provenance.as_ref().unwrap().warnings;
        assert!(
            w.iter().any(|w| w.starts_with(
                "no GPU telemetry: no AMD SMI found: libamd_smi.so could not be opened"
            )),
            "{w:?}"
        );
        assert!(r.cases.iter().all(|c| c.telemetry.is_empty()));
    }

    /// Hybrid 1 × 8: one process drives a whole LUMI node's 8 GCDs (stand-ins) through one
    /// RCCL group; every collective × type × operator × placement × timing mode at one small
    /// size, validated exactly; each GCD named by its own PCI address.
    #[test]
    fn hybrid_one_process_eight_gcds_validates() {
        let out = tmpdir("rocm-hybrid-8").join("out");
        let args = rocm_run(
            &[
                "--topology",
                "hybrid",
                "--devices-per-node",
                "8",
                "-w",
                COLLECTIVES,
                "--sizes",
                "256",
                "--dtype",
                "f32,f64,f16,bf16,i32",
                "--op",
                "sum,prod,min,max,avg",
                "--in-place",
                "both",
                "-t",
                "pipelined,isolated",
            ],
            "1",
            &out,
        );
        let ran = solo_with(&on_standins(&["SCALEBENCH_STANDIN_DEVICES=8"]), &args);
        let r = all_valid(&ran, &out, 360);
        let ok: std::collections::BTreeSet<&str> = r
            .cases
            .iter()
            .filter(|c| c.status == "ok")
            .map(|c| c.params.workload.as_str())
            .collect();
        assert_eq!(ok.len(), 6, "collectives measured: {ok:?}");
        let devices = &r.launches[0].provenance.as_ref().unwrap().ranks[0].devices;
        assert_eq!(devices.len(), 8);
        let addresses: std::collections::BTreeSet<String> = devices
            .iter()
            .map(|d| {
                let at = d
                    .name
                    .find(" GCD ")
                    .unwrap_or_else(|| panic!("no GCD in {}", d.name));
                d.name[at + 5..].split(' ').next().unwrap().to_string()
            })
            .collect();
        assert_eq!(addresses.len(), 8, "{addresses:?}");
        assert!(addresses.contains("fffe:5b:07.0"), "{addresses:?}");
    }

    /// Two ranks on one GCD (one stand-in device, two emulated nodes each driving "its" GCD 0
    /// on this one host): refused before RCCL starts, exit 2, one sentence naming both ranks,
    /// the GCD's PCI address and the fix, printed once.
    #[test]
    fn two_ranks_on_one_gcd_are_refused() {
        let out = tmpdir("rocm-shared-gcd").join("out");
        let args = rocm_run(
            &[
                "--topology",
                "hybrid",
                "--devices-per-node",
                "1",
                "--nodes",
                "2",
                "--emulate-nodes",
                "-w",
                "allreduce",
                "--sizes",
                "4KiB",
            ],
            "2",
            &out,
        );
        let ran = mpirun_with_env(2, &on_standins(&["SCALEBENCH_STANDIN_DEVICES=1"]), &args);
        refused(
            &ran,
            &[
                "ranks 0 and 1 both drive GCD fffe:5b:00.0 (host ",
                "RCCL needs a GCD of its own for each device",
                "ROCR_VISIBLE_DEVICES",
            ],
            &out,
        );
        assert_eq!(
            ran.stderr.matches("both drive GCD").count(),
            1,
            "{}",
            ran.stderr
        );
        // The same launch with a GCD each (the launcher's binding: each rank sees its own
        // device as ordinal 0, standin/gpus-per-rank.sh) runs.
        let r = all_valid(&mpirun_per_rank(2, &[], 1, &args), &out, 1);
        let names: Vec<&str> = r.launches[0]
            .provenance
            .as_ref()
            .unwrap()
            .ranks
            .iter()
            .map(|rank| rank.devices[0].name.as_str())
            .collect();
        assert!(
            names[0].contains(" GCD fffe:5b:00.0 ") && names[1].contains(" GCD fffe:5b:01.0 "),
            "{names:?}"
        );
    }

    /// `--buffers rotate` sizes its sets from the GCD's L2 (hipDeviceAttributeL2CacheSize; the
    /// stand-in reports 4 MiB, as the CUDA one): the footprint spans at least twice it.
    #[test]
    fn buffer_rotation_spans_twice_the_gcds_l2() {
        let out = tmpdir("rocm-rotate").join("out");
        let args = rocm_run(
            &[
                "-w",
                "allreduce,allgather",
                "--sizes",
                "64KiB",
                "--buffers",
                "rotate",
                "--in-place",
                "no",
            ],
            "2",
            &out,
        );
        let r = all_valid(&mpirun_with_env(2, &on_standins(&[]), &args), &out, 2);
        for c in &r.cases {
            let rot = c
                .rotation
                .as_ref()
                .unwrap_or_else(|| panic!("{}: no rotation", c.id));
            assert_eq!(rot.cache_bytes, Some(4 << 20), "{}: {rot:?}", c.id);
            assert!(rot.exceeds_cache, "{}: {rot:?}", c.id);
            assert!(rot.footprint_bytes >= 8 << 20, "{}: {rot:?}", c.id);
        }
    }

    /// The ROCm stand-ins' contract checks (standin/hip_contract_test.c): each misuse of the
    /// HIP runtime (memory outside its allocation or its GCD, a stream of another GCD, an
    /// event read or waited on before it was recorded, overlapping copies, a double free, an
    /// attribute by CUDA's number, a leak at exit), of RCCL (the in-place rule, several
    /// communicators outside a group) and of rocBLAS (a handle given another GCD's stream or
    /// used on another GCD) and of AMD SMI (a call before amdsmi_init, a handle it never gave)
    /// aborts naming the call the program made; a correct sequence of
    /// copies, an all-reduce, events and releases exits 0 with nothing on stderr.
    #[test]
    fn hip_contract_checks_abort_naming_the_call() {
        let out = std::process::Command::new(libs().join("hip-contract-test"))
            .env("SCALEBENCH_STANDIN", "1")
            .output()
            .expect("run hip-contract-test");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.starts_with("ok")).count(),
            17,
            "{text}"
        );
        // Without the gate the test program cannot even load them.
        let gated = std::process::Command::new(libs().join("hip-contract-test"))
            .env_remove("SCALEBENCH_STANDIN")
            .output()
            .expect("run hip-contract-test");
        assert_eq!(gated.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&gated.stderr)
                .contains("refuses to load without SCALEBENCH_STANDIN=1"),
            "{}",
            String::from_utf8_lossy(&gated.stderr)
        );
    }

    /// The planted defect (one wrong element in every RCCL result) must be caught: wrong > 0
    /// in every case, exit 3. Proof that validation on this path can fail.
    #[test]
    fn a_planted_rccl_defect_is_caught() {
        let out = tmpdir("rocm-defect").join("out");
        let args = rocm_run(
            &[
                "-w",
                "allreduce,allgather,alltoall",
                "--sizes",
                "4KiB",
                "--in-place",
                "no",
            ],
            "3",
            &out,
        );
        let ran = mpirun_with_env(
            2,
            &on_standins(&["SCALEBENCH_STANDIN_DEFECT=corrupt"]),
            &args,
        );
        ran.assert_code(3);
        let r = common::read_results(&out);
        assert_eq!(r.cases.len(), 3);
        for c in &r.cases {
            assert!(c.wrong > 0, "{}: the defect went unnoticed", c.id);
        }
    }

    /// Issue 31 on RCCL: with SCALEBENCH_NCCL_CAPTURE=1 every collective case records the
    /// library's version and the algorithm/protocol its log showed for the case (RCCL reads
    /// NCCL's logging variables; the stand-in logs in NCCL's formats), nothing of it on the
    /// console; without it, nothing is captured.
    #[test]
    fn rccl_choices_are_captured_per_case() {
        let dir = tmpdir("rocm-capture");
        let mid = [
            "-w",
            "allreduce,allgather,reduce_scatter",
            "--sizes",
            "4KiB,1MiB",
            "--in-place",
            "no",
        ];
        let out = dir.join("on");
        let ran = mpirun_with_env(
            2,
            &on_standins(&["SCALEBENCH_NCCL_CAPTURE=1"]),
            &rocm_run(&mid, "3", &out),
        );
        let r = all_valid(&ran, &out, 6);
        assert!(!ran.stdout.contains("NCCL INFO"), "{}", ran.stdout);
        assert!(!ran.stderr.contains("NCCL INFO"), "{}", ran.stderr);
        for c in &r.cases {
            let n = c
                .nccl
                .as_ref()
                .unwrap_or_else(|| panic!("{}: no capture", c.id));
            assert!(
                n.version.as_deref().is_some_and(|v| v.starts_with("2.")),
                "{}: {:?}",
                c.id,
                n.version
            );
            assert!(!n.choices.is_empty(), "{}: no choice read", c.id);
            for ch in &n.choices {
                assert!(!ch.algorithm.is_empty() && !ch.protocol.is_empty() && ch.calls > 0);
            }
        }
        let out = dir.join("off");
        let ran = mpirun_with_env(2, &on_standins(&[]), &rocm_run(&mid, "3", &out));
        let r = all_valid(&ran, &out, 6);
        assert!(r.cases.iter().all(|c| c.nccl.is_none()));
    }

    /// Set-up refused: exit 2, one `scalebench: error:` line naming each of `needles`, no
    /// panic, no results directory.
    fn refused(ran: &Ran, needles: &[&str], out: &Path) {
        ran.assert_code(2);
        let line = ran
            .stderr
            .lines()
            .find(|l| l.starts_with("scalebench: error: "))
            .unwrap_or_else(|| panic!("no error sentence in:\n{}", ran.stderr));
        for n in needles {
            assert!(line.contains(n), "{n:?} not in: {line}");
        }
        assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
        assert!(!out.exists(), "{} was left behind", out.display());
    }

    fn small_run(out: &Path) -> Vec<String> {
        rocm_run(&["-w", "allreduce", "--sizes", "4KiB"], "2", out)
    }

    /// No HIP runtime on the library path (a directory without the stand-ins): one sentence
    /// naming libamdhip64.so and the minimum ROCm, under mpirun too.
    #[test]
    fn a_missing_hip_runtime_is_one_sentence() {
        let dir = tmpdir("rocm-nolib");
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let out = dir.join("out");
        let e = env(empty.to_str().unwrap(), &[]);
        let needles = [
            "no HIP runtime found",
            "libamdhip64.so",
            "ROCm 5.7 or newer",
        ];
        refused(&solo_with(&e, &small_run(&out)), &needles, &out);
        refused(&mpirun_with_env(2, &e, &small_run(&out)), &needles, &out);
    }

    /// The HIP runtime there but no RCCL: the sentence names librccl.so.
    #[test]
    fn a_missing_rccl_is_one_sentence() {
        let dir = tmpdir("rocm-norccl");
        let hip_only = dir.join("hip-only");
        std::fs::create_dir_all(&hip_only).unwrap();
        std::fs::copy(
            libs().join("libamdhip64.so"),
            hip_only.join("libamdhip64.so"),
        )
        .unwrap();
        let out = dir.join("out");
        let e = env(hip_only.to_str().unwrap(), &[]);
        refused(
            &solo_with(&e, &small_run(&out)),
            &["no RCCL found", "librccl.so", "ROCm 5.7 or newer"],
            &out,
        );
    }

    /// A HIP runtime without hipEventElapsedTime first on the path: the library, the symbol and
    /// the minimum version in one sentence.
    #[test]
    fn a_missing_symbol_is_one_sentence() {
        let out = tmpdir("rocm-symbol").join("out");
        let path = format!("{0}/rocm-missing-symbol:{0}", libs().display());
        refused(
            &solo_with(&env(&path, &[]), &small_run(&out)),
            &["libamdhip64.so has no hipEventElapsedTime", "HIP 5.7"],
            &out,
        );
    }

    /// A HIP runtime or an RCCL older than the floor is refused by version; at the floor both
    /// run.
    #[test]
    fn too_old_versions_are_refused() {
        let out = tmpdir("rocm-old").join("out");
        refused(
            &mpirun_with_env(
                2,
                &on_standins(&["SCALEBENCH_STANDIN_HIP_VERSION=50600000"]),
                &small_run(&out),
            ),
            &["libamdhip64.so is HIP 5.6.0, older than HIP 5.7.0"],
            &out,
        );
        refused(
            &solo_with(
                &on_standins(&["SCALEBENCH_STANDIN_NCCL_VERSION=21605"]),
                &small_run(&out),
            ),
            &["librccl.so is RCCL 2.16.5 (NCCL API), older than RCCL 2.17.1"],
            &out,
        );
        let at_floor = on_standins(&[
            "SCALEBENCH_STANDIN_HIP_VERSION=50700000",
            "SCALEBENCH_STANDIN_NCCL_VERSION=21701",
        ]);
        all_valid(&solo_with(&at_floor, &small_run(&out)), &out, 1);
    }

    /// ddp_step's results as JSON (the wire types do not model the `ddp` record).
    fn ddp_results(out: &Path) -> serde_json::Value {
        let text = std::fs::read_to_string(out.join("results.json"))
            .unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        serde_json::from_str(&text).unwrap()
    }

    /// `run --backend rocm -w ddp_step` on layers 64×48 ×3 and 200×40 with buckets of `cap`
    /// (one cap for all: no larger first bucket), gradients checked once.
    fn ddp_args(cap: &str, mid: &[&str], out: &Path) -> Vec<String> {
        let mut m = vec![
            "-w",
            "ddp_step",
            "--model",
            "64x48x3+200x40",
            "--bucket-size",
            cap,
            "--first-bucket",
            "0B",
            "--batch",
            "8",
            "--check",
            "1",
        ];
        m.extend_from_slice(mid);
        rocm_run(&m, "2", out)
    }

    /// Every case ok with exact gradients (2 GCDs average exactly with RCCL's native
    /// average), DDP's bucket layout (in f32: one bucket per layer at 1 B, three at 16 KiB,
    /// one at 1 MiB), the step figures present, backend rocm, labelled STAND-IN.
    fn ddp_exact(ran: &Ran, out: &Path, want_cases: usize) {
        ran.assert_code(0);
        let v = ddp_results(out);
        let detail = v["launches"][0]["provenance"]["backend"]["detail"]
            .as_str()
            .unwrap();
        assert!(detail.starts_with("STAND-IN: "), "{detail}");
        let cases = v["cases"].as_array().unwrap();
        assert_eq!(cases.len(), want_cases, "{v}");
        for c in cases {
            assert_eq!(c["params"]["backend"], "rocm");
            assert_eq!(c["status"], "ok", "{}: {}", c["params"], c["message"]);
            assert_eq!(c["wrong"], 0);
            assert_eq!(c["tolerance"].as_f64(), Some(0.0));
            assert_eq!(c["devices"].as_u64(), Some(2));
            let want = match c["params"]["bucket_bytes"].as_u64().unwrap() {
                1 => 4,
                16384 if c["params"]["dtype"] == "f64" => 4,
                16384 => 3,
                1048576 => 1,
                other => panic!("unexpected bucket size {other}"),
            };
            assert_eq!(c["ddp"]["buckets"].as_u64(), Some(want), "{}", c["params"]);
            for k in ["step_s", "step_no_overlap_s", "compute_s", "comm_s"] {
                let t = c["ddp"][k].as_f64().unwrap();
                assert!(t > 0.0 && t.is_finite(), "{k} = {t}");
            }
        }
    }

    /// ddp_step on ROCm: GEMMs through rocBLAS on each GCD's compute stream, each bucket's
    /// RCCL all-reduce (avg) on a communication stream after a HIP event — pure MPI (2
    /// processes) and hybrid (1 process, 2 GCDs in one RCCL group); every gradient exact.
    #[test]
    fn ddp_step_gradients_are_exact_pure_and_hybrid() {
        let dir = tmpdir("rocm-ddp");
        let out = dir.join("pure");
        let args = ddp_args("1B,16KiB,1MiB", &["--dtype", "f32,f64"], &out);
        ddp_exact(&mpirun_with_env(2, &on_standins(&[]), &args), &out, 6);
        let out = dir.join("hybrid");
        let hybrid = ["--topology", "hybrid", "--devices-per-node", "2"];
        let args = ddp_args("1B,16KiB,1MiB", &hybrid, &out);
        ddp_exact(&solo_with(&on_standins(&[]), &args), &out, 3);
    }

    /// The planted RCCL defect under ddp_step (one wrong element in every all-reduce) is a
    /// wrong gradient: counted, exit 3.
    #[test]
    fn ddp_step_wrong_gradients_exit_3() {
        let out = tmpdir("rocm-ddp-defect").join("out");
        let args = ddp_args("16KiB", &[], &out);
        let ran = mpirun_with_env(
            2,
            &on_standins(&["SCALEBENCH_STANDIN_DEFECT=corrupt"]),
            &args,
        );
        ran.assert_code(3);
        let c = &ddp_results(&out)["cases"][0];
        assert_eq!(c["status"], "wrong", "{c}");
        assert!(c["wrong"].as_u64().unwrap() > 0);
    }

    /// With a slow link (fault `slow_comm`: a host function sleeping 40 ms on the
    /// communication stream after each all-reduce, hipLaunchHostFunc) the step cannot end
    /// before the four buckets' delays have passed one after another: the compute stream
    /// really waits for the communication stream's events.
    #[test]
    fn ddp_step_slow_link_shows_as_exposed_communication() {
        let out = tmpdir("rocm-ddp-slow").join("out");
        let mut args = ddp_args(
            "1B",
            &["--topology", "hybrid", "--devices-per-node", "2"],
            &out,
        );
        args.splice(3..3, ["--fault".to_string(), "slow_comm:40".to_string()]);
        let ran = solo_with(&on_standins(&[]), &args);
        ran.assert_code(0);
        let c = &ddp_results(&out)["cases"][0];
        assert_eq!(c["wrong"], 0);
        let d = |k: &str| c["ddp"][k].as_f64().unwrap();
        assert!(d("comm_s") >= 0.16, "comm {}", d("comm_s"));
        assert!(d("step_s") >= 0.16, "step {}", d("step_s"));
        assert!(d("exposed_comm_s") >= 0.16 - d("compute_s"), "{}", c["ddp"]);
    }

    /// `-w matmul,batch_matmul` over every GEMM type (`--dims 48 --batch 3`).
    fn gemm_run(out: &Path, extra: &[&str]) -> Vec<String> {
        let mut mid = vec![
            "-w",
            "matmul,batch_matmul",
            "--dims",
            "48",
            "--batch",
            "3",
            "--dtype",
            "f32,f64,f16,bf16",
        ];
        mid.extend_from_slice(extra);
        rocm_run(&mid, "3", out)
    }

    /// The launch's backend detail names rocBLAS and its version (it was opened and used).
    fn names_rocblas(r: &common::wire::ResultsFile) {
        for l in &r.launches {
            let detail = &l.provenance.as_ref().unwrap().backend.detail;
            assert!(
                detail.contains("rocBLAS 4.2.0.sbs rocblas_gemm_strided_batched_ex"),
                "{detail}"
            );
        }
    }

    /// rocBLAS stand-in: matmul and batch_matmul in every GEMM type validate exactly (f16/bf16
    /// against the f32-accumulation tolerance) in pure MPI (np=2) and hybrid (1 × 2 GCDs, one
    /// rocBLAS handle per GCD), every case measured, labelled STAND-IN.
    #[test]
    fn gemms_validate_on_the_rocblas_standin() {
        let dir = tmpdir("rocm-gemm");
        let out = dir.join("np2");
        let r = all_valid(
            &mpirun_with_env(2, &on_standins(&[]), &gemm_run(&out, &[])),
            &out,
            8,
        );
        names_rocblas(&r);
        assert!(r.cases.iter().all(|c| c.status == "ok"));
        let workloads: std::collections::BTreeSet<&str> =
            r.cases.iter().map(|c| c.params.workload.as_str()).collect();
        assert_eq!(workloads.len(), 2, "{workloads:?}");
        let out = dir.join("hybrid");
        let hybrid = gemm_run(&out, &["--topology", "hybrid", "--devices-per-node", "2"]);
        let r = all_valid(&solo_with(&on_standins(&[]), &hybrid), &out, 8);
        names_rocblas(&r);
        assert_eq!(
            r.launches[0].provenance.as_ref().unwrap().ranks[0]
                .devices
                .len(),
            2
        );
    }

    /// batch_matmul on ROCm overlaps its copies with the GEMMs on a second stream, as on CUDA
    /// (the step shared in `gpu_pipeline`): every case reports the overlapped phases
    /// (`transfer_compute` in place of `compute`, plus `overlap_hidden`) and validates exactly,
    /// pure (np=2) and hybrid (1 × 2 GCDs, devices interleaved), with a copy engine slowed to
    /// 2 ms a copy so that a GEMM that did not wait for its copy-in, a copy-out that did not
    /// wait for its GEMM, or a read of the staging before the copy ran would see the
    /// stand-in's poisoned bytes. Structure only: the saved time lies between 0 and twice the
    /// step (each engine's busy time is at most the span), never a timing figure.
    #[test]
    fn batch_matmul_overlaps_copies_like_cuda() {
        let dir = tmpdir("rocm-overlap");
        let env = on_standins(&["SCALEBENCH_STANDIN_COPY_DELAY_US=2000"]);
        let mid = [
            "-w",
            "batch_matmul",
            "--dims",
            "32",
            "--batch",
            "4",
            "--dtype",
            "f32,bf16",
        ];
        let hybrid = [
            &mid[..],
            &["--topology", "hybrid", "--devices-per-node", "2"],
        ]
        .concat();
        let out = dir.join("np2");
        let pure = all_valid(
            &mpirun_with_env(2, &env, &rocm_run(&mid, "2", &out)),
            &out,
            2,
        );
        let out = dir.join("hybrid");
        let both = all_valid(&solo_with(&env, &rocm_run(&hybrid, "2", &out)), &out, 2);
        for r in [&pure, &both] {
            for l in &r.launches {
                let detail = &l.provenance.as_ref().unwrap().backend.detail;
                assert!(
                    detail.contains("batch_matmul copies overlapped with GEMMs on a second stream"),
                    "{detail}"
                );
            }
            assert_eq!(r.cases.len(), 2);
            for c in &r.cases {
                assert_eq!(c.status, "ok", "{}: {:?}", c.id, c.message);
                let names: Vec<&str> = c.phases.iter().map(|p| p.name.as_str()).collect();
                assert_eq!(
                    names,
                    ["scatter", "transfer_compute", "gather", "overlap_hidden"],
                    "{}",
                    c.id
                );
                let t = |n: &str| c.phases.iter().find(|p| p.name == n).unwrap().time_s;
                let (hidden, step) = (t("overlap_hidden"), t("transfer_compute"));
                assert!(
                    (0.0..=2.0 * step).contains(&hidden),
                    "{}: overlap_hidden {hidden} s outside [0, 2 × transfer_compute {step} s]",
                    c.id
                );
            }
        }
        assert_eq!(
            both.launches[0].provenance.as_ref().unwrap().ranks[0]
                .devices
                .len(),
            2
        );
    }

    /// The planted GEMM defect (one wrong element in every rocBLAS product) must be caught in
    /// both GEMM workloads: wrong > 0 in every case, exit 3. Proof that the GEMM check on this
    /// path can fail.
    #[test]
    fn a_planted_gemm_defect_is_caught() {
        let out = tmpdir("rocm-gemm-defect").join("out");
        let args = rocm_run(
            &[
                "-w",
                "matmul,batch_matmul",
                "--dims",
                "32",
                "--batch",
                "2",
                "--dtype",
                "f32,bf16",
            ],
            "2",
            &out,
        );
        let ran = mpirun_with_env(2, &on_standins(&["SCALEBENCH_STANDIN_DEFECT=gemm"]), &args);
        ran.assert_code(3);
        let r = common::read_results(&out);
        assert_eq!(r.cases.len(), 4);
        for c in &r.cases {
            assert!(c.wrong > 0, "{}: the defect went unnoticed", c.id);
        }
    }

    /// No rocBLAS on the path: a GEMM launch is refused with one sentence naming
    /// librocblas.so and the minimum ROCm (exit 2), while a collectives-only launch, which
    /// never opens rocBLAS, still runs there.
    #[test]
    fn a_missing_rocblas_is_one_sentence_for_gemms_only() {
        let dir = tmpdir("rocm-norocblas");
        let no_blas = dir.join("no-rocblas");
        std::fs::create_dir_all(&no_blas).unwrap();
        for lib in ["libamdhip64.so", "librccl.so"] {
            std::fs::copy(libs().join(lib), no_blas.join(lib)).unwrap();
        }
        let e = env(no_blas.to_str().unwrap(), &[]);
        let out = dir.join("gemm");
        refused(
            &solo_with(&e, &rocm_run(&["-w", "matmul", "--dims", "32"], "2", &out)),
            &["no rocBLAS found", "librocblas.so", "ROCm 5.7 or newer"],
            &out,
        );
        let out = dir.join("collectives");
        all_valid(&solo_with(&e, &small_run(&out)), &out, 1);
    }

    /// A rocBLAS older than 3.1.0 (ROCm 5.7's) is refused by version; at the floor it runs.
    #[test]
    fn too_old_a_rocblas_is_refused() {
        let dir = tmpdir("rocm-old-rocblas");
        let out = dir.join("old");
        let gemm = |o: &Path| rocm_run(&["-w", "matmul", "--dims", "16"], "2", o);
        refused(
            &solo_with(
                &on_standins(&["SCALEBENCH_STANDIN_ROCBLAS_VERSION=3.0.2.abc"]),
                &gemm(&out),
            ),
            &["librocblas.so is rocBLAS 3.0.2.abc, older than rocBLAS 3.1.0"],
            &out,
        );
        let out = dir.join("floor");
        all_valid(
            &solo_with(
                &on_standins(&["SCALEBENCH_STANDIN_ROCBLAS_VERSION=3.1.0"]),
                &gemm(&out),
            ),
            &out,
            1,
        );
    }
}

#[cfg(not(feature = "rocm"))]
#[test]
fn without_the_feature_rocm_is_refused_with_the_rebuild_command() {
    let out = tmpdir("rocm-nofeature").join("out");
    let ran = common::solo(&[
        "run",
        "--backend",
        "rocm",
        "-w",
        "allreduce",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    ran.assert_refused(
        &"--backend rocm",
        &["rebuild with `cargo build --release --features rocm`"],
        &out,
    );
}
