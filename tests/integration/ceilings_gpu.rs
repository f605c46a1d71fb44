//! GPU ceilings on the CUDA backend, read through the stand-in NVML (`standin/nvml.c`, values
//! from `SCALEBENCH_STANDIN_NVML`): recorded per launch beside the CPU's, labelled STAND-IN,
//! with the negotiated-down warning, and each GEMM and busbw figure's fraction of them; no
//! NVML leaves them unknown with the reason; `scalebench ceilings` reads them too.
#![cfg(feature = "cuda")]

use crate::common::{self, wire, Ran};
use crate::cuda::standin::{all_valid, cuda_run, env, libs, solo_with};
use std::path::{Path, PathBuf};

/// An H100 SXM node's two GPUs, the second in a Gen4 x16 slot that trained at x8.
const H100_AND_GEN4_X8: &str = r#"
[[nvidia]]
index = 0
name = "NVIDIA H100 80GB HBM3"
pcie = { gen_current = 5, width_current = 16, gen_max = 5, width_max = 16 }
nvlink = { links_present = 18, links_active = 18, speed_mbps_per_link = 25000 }
memory_bus_width_bits = 5120
memory_clock_max_mhz = 2619
sm_clock_max_mhz = 1980

[[nvidia]]
index = 1
name = "NVIDIA H100 80GB HBM3"
pcie = { gen_current = 4, width_current = 8, gen_max = 4, width_max = 16 }
nvlink = { links_present = 18, links_active = 18, speed_mbps_per_link = 25000 }
memory_bus_width_bits = 5120
memory_clock_max_mhz = 2619
sm_clock_max_mhz = 1980
"#;

/// A hybrid run (one process, the stand-in's 2 GPUs) of allreduce and matmul in bf16 and f32,
/// with `extra` environment; every case valid.
fn hybrid_run(lib_dir: &Path, extra: &[&str], out: &Path, flags: &[&str]) -> wire::ResultsFile {
    let mut mid = vec![
        "--topology",
        "hybrid",
        "--devices-per-node",
        "2",
        "-w",
        "allreduce,matmul",
        "--sizes",
        "4KiB",
        "--dims",
        "32",
        "--dtype",
        "bf16,f32",
    ];
    mid.extend_from_slice(flags);
    let ran = solo_with(
        &env(lib_dir.to_str().unwrap(), extra),
        &cuda_run(&mid, "2", out),
    );
    all_valid(&ran, out, 4)
}

fn ceiling<'a>(h: &'a wire::HostCeilings, id: &str) -> &'a wire::Ceiling {
    h.ceilings
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("{id} not recorded: {:?}", h.ceilings))
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs())
}

/// Each figure's fraction: one per figure, naming `want(case)`'s ceiling, frac = figure / bound
/// where known, else the ceiling's reason.
fn check_fractions(
    r: &wire::ResultsFile,
    h: &wire::HostCeilings,
    want: impl Fn(&wire::Case, &str) -> &'static str,
) -> usize {
    let mut seen = 0;
    for case in &r.cases {
        for (figure, value) in [("busbw_gbps", case.busbw_gbps), ("gflops", case.gflops)] {
            let Some(value) = value else { continue };
            let f: Vec<_> = case.peak.iter().filter(|f| f.figure == figure).collect();
            assert_eq!(f.len(), 1, "{}: {figure}: {:?}", case.id, case.peak);
            let f = f[0];
            assert_eq!(f.ceiling_id, want(case, figure), "{}: {f:?}", case.id);
            let c = ceiling(h, &f.ceiling_id);
            match c.value {
                Some(v) => {
                    assert_eq!(f.bound, Some(v), "{f:?}");
                    assert!(close(f.frac_peak, value / v), "{f:?} vs {value}/{v}");
                    assert!(f.unknown.is_none());
                }
                None => {
                    assert_eq!((f.frac_peak, f.bound), (None, None), "{f:?}");
                    assert_eq!(f.unknown.as_deref(), Some(c.detail.as_str()), "{f:?}");
                }
            }
            seen += 1;
        }
    }
    seen
}

#[test]
fn a_standin_h100_launch_records_gpu_ceilings_the_slot_warning_and_fractions() {
    let dir = common::tmpdir("ceilings-gpu-h100");
    let values = common::write_file(&dir, "h100.toml", H100_AND_GEN4_X8);
    let out = dir.join("out");
    let nvml = format!("SCALEBENCH_STANDIN_NVML={}", values.display());
    let r = hybrid_run(libs(), &[&nvml], &out, &[]);
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert_eq!(p.ceilings.len(), 1, "{:?}", p.ceilings);
    let h = &p.ceilings[0];
    // the CPU's ceilings are still measured beside the GPUs'
    assert!(h.ceilings.iter().any(|c| c.id.starts_with("cpu.peak.f32.")));
    // read from the driver (the stand-in NVML), labelled; 18 × 25 GB/s, Gen5 x16 = 63 GB/s,
    // Gen4 x8 = 15.75 GB/s, 5120 bit × 2619 MHz × 2 / 8 = 3352.32 GB/s
    for (id, v) in [
        ("gpu0.nvlink", 450.0),
        ("gpu0.pcie", 63.0),
        ("gpu1.pcie", 15.75),
        ("gpu0.mem", 3352.32),
    ] {
        let c = ceiling(h, id);
        assert!(close(c.value, v), "{c:?}");
        assert_eq!(c.source, "driver", "{c:?}");
        assert!(c.detail.starts_with("STAND-IN"), "{c:?}");
    }
    // the table by the name NVML gave, labelled too; FP32 has no sourced figure
    let bf = ceiling(h, "gpu0.peak.bf16_tensor");
    assert!(close(bf.value, 989e3) && bf.source == "table", "{bf:?}");
    assert!(bf.detail.starts_with("STAND-IN") && bf.detail.contains("datasheet"));
    let fp32 = ceiling(h, "gpu0.peak.fp32");
    assert_eq!((fp32.value, fp32.source.as_str()), (None, "unknown"));
    // the slot: one negotiated-down warning naming gpu1
    let down: Vec<_> = h
        .warnings
        .iter()
        .filter(|w| w.kind == "negotiated_down")
        .collect();
    assert_eq!(down.len(), 1, "{:?}", h.warnings);
    assert_eq!(down[0].subject, "gpu1");
    assert!(
        down[0].message.contains("x8 of x16") && down[0].message.starts_with("STAND-IN"),
        "{:?}",
        down[0]
    );
    // busbw against gpu0's NVLink; bf16 GEMM against its BF16 peak; f32 unknown with why
    let seen = check_fractions(&r, h, |case, figure| {
        match (figure, case.params.dtype.as_str()) {
            ("busbw_gbps", _) => "gpu0.nvlink",
            (_, "bf16") => "gpu0.peak.bf16_tensor",
            _ => "gpu0.peak.fp32",
        }
    });
    assert!(seen >= 4, "{seen} figures");
}

#[test]
fn without_nvlink_busbw_is_bounded_by_pcie_and_values_not_given_say_which_call() {
    let dir = common::tmpdir("ceilings-gpu-pcie");
    let values =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ceilings/gpu/gen4_x8.toml");
    let out = dir.join("out");
    let nvml = format!("SCALEBENCH_STANDIN_NVML={}", values.display());
    let r = hybrid_run(libs(), &[&nvml], &out, &[]);
    let h = &r.launches[0].provenance.as_ref().unwrap().ceilings[0];
    assert!(close(ceiling(h, "gpu0.pcie").value, 15.75));
    assert_eq!(ceiling(h, "gpu0.nvlink").value, None);
    // the file has no gpu1: each call NOT_SUPPORTED, the ceiling says which
    let g1 = ceiling(h, "gpu1.pcie");
    assert_eq!(g1.value, None);
    assert!(
        g1.detail.contains("nvmlDeviceGetCurrPcieLinkGeneration"),
        "{g1:?}"
    );
    // an unknown device name: its peaks unknown, so the GEMM fractions say why
    let seen = check_fractions(&r, h, |case, figure| {
        match (figure, case.params.dtype.as_str()) {
            ("busbw_gbps", _) => "gpu0.pcie",
            (_, "bf16") => "gpu0.peak.bf16_tensor",
            _ => "gpu0.peak.fp32",
        }
    });
    assert!(seen >= 4);
    assert!(ceiling(h, "gpu0.peak.bf16_tensor")
        .detail
        .contains("not in the table"));
}

/// The stand-in libraries without libnvidia-ml.so.1.
fn libs_without_nvml(dir: &Path) -> PathBuf {
    let d = dir.join("no-nvml");
    std::fs::create_dir_all(&d).unwrap();
    for e in std::fs::read_dir(libs()).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "libnvidia-ml.so.1" || !e.file_type().unwrap().is_file() {
            continue;
        }
        std::fs::copy(e.path(), d.join(&name)).unwrap();
    }
    // cudarc opens libcuda.so and libcublas.so; the copies above keep their file names
    let cuda = d.join("libcuda.so");
    if !cuda.exists() {
        std::os::unix::fs::symlink("libcuda.so.1", cuda).unwrap();
    }
    d
}

#[test]
fn without_nvml_the_cpu_ceilings_stay_and_the_gpu_ones_are_unknown_with_the_reason() {
    let dir = common::tmpdir("ceilings-gpu-no-nvml");
    let lib_dir = libs_without_nvml(&dir);
    let out = dir.join("out");
    let r = hybrid_run(&lib_dir, &[], &out, &[]);
    let h = &r.launches[0].provenance.as_ref().unwrap().ceilings[0];
    assert!(h.ceilings.iter().any(|c| c.id.starts_with("cpu.mem.copy.")));
    for id in ["gpu0.pcie", "gpu0.nvlink", "gpu0.mem", "gpu1.pcie"] {
        let c = ceiling(h, id);
        assert_eq!((c.value, c.source.as_str()), (None, "unknown"), "{c:?}");
        // CI has no driver: NVML does not load; a GPU node's NVML does not know stand-in GPUs
        assert!(
            c.detail.contains("NVML (libnvidia-ml.so.1") || c.detail.contains("NVML does not know"),
            "{c:?}"
        );
        assert!(c.detail.starts_with("STAND-IN"), "{c:?}");
    }
    let seen = check_fractions(&r, h, |case, figure| {
        match (figure, case.params.dtype.as_str()) {
            ("busbw_gbps", _) => "gpu0.pcie",
            (_, "bf16") => "gpu0.peak.bf16_tensor",
            _ => "gpu0.peak.fp32",
        }
    });
    assert!(seen >= 4);
}

#[test]
fn no_ceilings_on_cuda_records_none_and_every_fraction_says_so() {
    let dir = common::tmpdir("ceilings-gpu-skip");
    let out = dir.join("out");
    let r = hybrid_run(libs(), &[], &out, &["--no-ceilings"]);
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert!(p.ceilings.is_empty());
    let mut seen = 0;
    for case in &r.cases {
        for f in &case.peak {
            assert!(f.ceiling_id.starts_with("gpu0."), "{f:?}");
            assert_eq!(f.frac_peak, None);
            assert!(
                f.unknown.as_deref().unwrap().contains("--no-ceilings"),
                "{f:?}"
            );
            seen += 1;
        }
    }
    assert!(seen >= 4);
}

/// `scalebench ceilings --no-stream --best-only ARGS` with `env`.
fn ceilings_cmd(env: &[(String, String)], args: &[&str]) -> Ran {
    let mut a = vec![
        "ceilings".to_string(),
        "--no-stream".into(),
        "--best-only".into(),
    ];
    a.extend(args.iter().map(|s| s.to_string()));
    solo_with(env, &a)
}

#[test]
fn the_ceilings_command_reads_nvml_or_says_why_not() {
    let dir = common::tmpdir("ceilings-gpu-cmd");
    let values = common::write_file(&dir, "h100.toml", H100_AND_GEN4_X8);
    let lib = libs().to_str().unwrap();
    let nvml = format!("SCALEBENCH_STANDIN_NVML={}", values.display());
    let ran = ceilings_cmd(&env(lib, &[&nvml]), &["--json"]);
    ran.assert_code(0);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let nv = v["ceilings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "gpu0.nvlink")
        .unwrap_or_else(|| panic!("no gpu0.nvlink: {}", ran.stdout));
    assert_eq!(nv["value"].as_f64(), Some(450.0));
    assert!(nv["detail"].as_str().unwrap().starts_with("STAND-IN"));
    let warned = v["warnings"].as_array().unwrap();
    assert!(
        warned.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("gpu1: PCIe link negotiated down")),
        "{warned:?}"
    );
    // no CUDA driver at all: one sentence, the CPU's ceilings still printed
    let none = ceilings_cmd(&[("LD_LIBRARY_PATH".into(), "/nonexistent".into())], &[]);
    none.assert_code(0);
    let said: Vec<_> = none
        .stdout
        .lines()
        .filter(|l| l.starts_with("warning: no GPU ceilings: "))
        .collect();
    // a GPU node has a driver: then it reads real GPUs instead
    if !Path::new("/proc/driver/nvidia").exists() {
        assert_eq!(said.len(), 1, "{}", none.stdout);
        assert!(said[0].contains("libcuda.so.1"), "{}", said[0]);
    }
    assert!(none.stdout.contains("FMA"), "{}", none.stdout);
    // a values file the stand-in cannot parse: its line on stderr, the GPUs' values unknown
    let bad = common::write_file(&dir, "bad.toml", "[[nvidia]]\nindex = 0\nname = \"x\n");
    let bad_env = format!("SCALEBENCH_STANDIN_NVML={}", bad.display());
    let ran = ceilings_cmd(&env(lib, &[&bad_env]), &[]);
    ran.assert_code(0);
    assert!(ran.stderr.contains("bad.toml, line 3"), "{}", ran.stderr);
    assert!(ran.stdout.contains("NVML did not start"), "{}", ran.stdout);
    assert!(!ran.stderr.contains("panicked"));
}
