//! Tests of the fractions of peak (`results::ceilings::fractions`).

use super::*;

#[test]
fn fraction_of_an_unknown_ceiling_is_none() {
    let mut c = Ceiling {
        id: "x".into(),
        what: "x".into(),
        unit: CeilingUnit::Gbps,
        value: Some(20.0),
        source: CeilingSource::Measured,
        detail: String::new(),
    };
    assert_eq!(c.frac_peak(5.0), Some(0.25));
    c.value = None;
    c.source = CeilingSource::Unknown;
    assert_eq!(c.frac_peak(5.0), None);
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains("\"source\":\"unknown\"") && json.contains("\"unit\":\"gbps\""));
    assert_eq!(serde_json::from_str::<Ceiling>(&json).unwrap(), c);
}

fn ceiling(id: &str, unit: CeilingUnit, value: Option<f64>) -> Ceiling {
    Ceiling {
        id: id.into(),
        what: id.into(),
        unit,
        value,
        source: if value.is_some() {
            CeilingSource::Measured
        } else {
            CeilingSource::Unknown
        },
        detail: if value.is_some() { "how" } else { "why not" }.into(),
    }
}

fn host(name: &str) -> HostCeilings {
    HostCeilings {
        host: name.into(),
        rank: 0,
        cpus: "0-3".into(),
        seconds: 0.2,
        warnings: Vec::new(),
        counters: Vec::new(),
        measurement: None,
        ceilings: vec![
            ceiling(
                "cpu.peak.f32.avx2+fma.one_cpu",
                CeilingUnit::Gflops,
                Some(100.0),
            ),
            ceiling(
                "cpu.peak.f64.avx2+fma.one_cpu",
                CeilingUnit::Gflops,
                Some(50.0),
            ),
            ceiling(
                "cpu.peak.f64.avx2+fma.all_cpus",
                CeilingUnit::Gflops,
                Some(180.0),
            ),
            ceiling("cpu.mem.copy.one_cpu", CeilingUnit::Gbps, Some(10.0)),
            ceiling("cpu.mem.copy.all_cpus", CeilingUnit::Gbps, Some(40.0)),
        ],
    }
}

/// A case's parameters and its two figures.
struct Case {
    params: crate::params::CaseParams,
    busbw_gbps: Option<f64>,
    gflops: Option<f64>,
}

fn case(w: crate::params::Workload, dtype: crate::params::Dtype) -> Case {
    let mut params = crate::params::CaseParams::new(w, 1, 4);
    params.dtype = dtype;
    params.threads_per_device = Some(2);
    Case {
        params,
        busbw_gbps: None,
        gflops: None,
    }
}

fn fractions(c: &Case, l: &LaunchCeilings<'_>) -> Vec<PeakFraction> {
    super::fractions(&c.params, c.busbw_gbps, c.gflops, l)
}

fn launch(hosts: &[HostCeilings]) -> LaunchCeilings<'_> {
    LaunchCeilings {
        hosts,
        skipped: None,
        host_count: 1,
        emulated_nodes: false,
        nodes: 1,
        rank0_host: "a",
    }
}

#[test]
fn busbw_on_one_host_is_a_fraction_of_the_all_cpu_copy_bandwidth() {
    use crate::params::{Dtype, Workload};
    let hosts = [host("a")];
    let mut c = case(Workload::Allreduce, Dtype::F32);
    c.busbw_gbps = Some(1.0);
    let f = fractions(&c, &launch(&hosts));
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].figure.as_str(), f[0].ceiling_id.as_str()),
        ("busbw_gbps", "cpu.mem.copy.all_cpus")
    );
    // 4 ranks' all-reduce: 2.5 B × 4 of memory traffic per busbw byte, so 40 / 10 GB/s
    assert_eq!(
        (
            f[0].traffic_bytes_per_busbw_byte,
            f[0].bound,
            f[0].frac_peak,
            f[0].unknown.as_deref()
        ),
        (Some(10.0), Some(4.0), Some(0.25), None)
    );
    // one CPU offered: its Copy is the ceiling
    let mut one = host("a");
    one.ceilings.retain(|x| x.id != "cpu.mem.copy.all_cpus");
    let one = [one];
    let f = fractions(&c, &launch(&one));
    assert_eq!(
        (f[0].ceiling_id.as_str(), f[0].frac_peak),
        ("cpu.mem.copy.one_cpu", Some(1.0))
    );
    // above the bound: no fraction, the bound kept, flagged under-measured with both numbers
    c.busbw_gbps = Some(5.0);
    let f = fractions(&c, &launch(&hosts));
    assert_eq!((f[0].frac_peak, f[0].bound), (None, Some(4.0)));
    assert!(f[0].under_measured);
    let why = f[0].unknown.as_deref().unwrap();
    assert!(
        why.contains("the figure 5.00 GB/s is above its measured bound 4.00 GB/s")
            && why.contains("caches"),
        "{why}"
    );
    c.busbw_gbps = Some(1.0);
    // an unknown Copy ceiling: no number, its reason
    let mut unk = host("a");
    unk.ceilings[4].value = None;
    unk.ceilings[4].source = CeilingSource::Unknown;
    unk.ceilings[4].detail = "why not".into();
    let unk = [unk];
    let f = fractions(&c, &launch(&unk));
    assert_eq!(
        (f[0].frac_peak, f[0].unknown.as_deref()),
        (None, Some("why not"))
    );
    // one device: busbw is 0 by definition, no fraction of any ceiling
    c.busbw_gbps = Some(0.0);
    let f = fractions(&c, &launch(&hosts));
    assert_eq!(f[0].frac_peak, None);
    assert!(f[0].unknown.as_deref().unwrap().contains("one device"));
}

/// `host(name)` with a `net.link` ceiling of `gbps` (`None`: unknown, saying `why`).
fn networked(name: &str, gbps: Option<f64>, why: &str) -> HostCeilings {
    let mut h = host(name);
    let mut c = ceiling("net.link", CeilingUnit::Gbps, gbps);
    if gbps.is_none() {
        c.detail = why.into();
    }
    h.ceilings.push(c);
    h
}

fn two_hosts(hosts: &[HostCeilings]) -> LaunchCeilings<'_> {
    LaunchCeilings {
        host_count: 2,
        nodes: 2,
        ..launch(hosts)
    }
}

#[test]
fn across_hosts_the_slowest_hosts_link_bounds_the_figure() {
    use crate::params::{Dtype, Workload};
    let mut c = case(Workload::Allgather, Dtype::F32);
    c.busbw_gbps = Some(5.0);
    // b's 12.5 GB/s link bounds, not a's 50 (nor either host's 40 GB/s STREAM Copy)
    let hosts = [
        networked("a", Some(50.0), ""),
        networked("b", Some(12.5), ""),
    ];
    let f = fractions(&c, &two_hosts(&hosts));
    assert_eq!(f.len(), 1);
    assert_eq!(
        (
            f[0].ceiling_id.as_str(),
            f[0].bound,
            f[0].frac_peak,
            f[0].unknown.as_deref()
        ),
        ("net.link", Some(12.5), Some(0.4), None)
    );
    // a host whose link is unknown is left out: the known host's link still bounds
    let hosts = [
        networked("a", None, "eth0 speed -1"),
        networked("b", Some(25.0), ""),
    ];
    let f = fractions(&c, &two_hosts(&hosts));
    assert_eq!((f[0].bound, f[0].frac_peak), (Some(25.0), Some(0.2)));
}

#[test]
fn across_hosts_with_no_usable_port_the_link_is_unknown_with_each_hosts_reason() {
    use crate::params::{Dtype, Workload};
    let mut c = case(Workload::Allreduce, Dtype::F32);
    c.busbw_gbps = Some(5.0);
    let hosts = [
        networked("a", None, "net.eth.eth0: \"-1\": no speed"),
        host("b"),
    ];
    let f = fractions(&c, &two_hosts(&hosts));
    assert_eq!(
        (f[0].ceiling_id.as_str(), f[0].bound, f[0].frac_peak),
        ("net.link", None, None)
    );
    let why = f[0].unknown.as_deref().unwrap();
    assert!(
        why.contains("no host reports a usable network port")
            && why.contains("a: net.eth.eth0: \"-1\"")
            && why.contains("b: no network ceiling recorded"),
        "{why}"
    );
    // --no-ceilings across hosts: the reason is the skip
    let skipped = LaunchCeilings {
        skipped: Some("not measured: --no-ceilings"),
        ..two_hosts(&[])
    };
    let f = fractions(&c, &skipped);
    assert_eq!(f[0].ceiling_id, "net.link");
    assert!(f[0].unknown.as_deref().unwrap().contains("--no-ceilings"));
}

#[test]
fn emulated_nodes_have_no_link_ceiling_even_where_the_host_has_one() {
    use crate::params::{Dtype, Workload};
    let hosts = [networked("a", Some(25.0), "")];
    let mut c = case(Workload::Allgather, Dtype::F32);
    c.busbw_gbps = Some(5.0);
    let emulated = LaunchCeilings {
        emulated_nodes: true,
        nodes: 2,
        ..launch(&hosts)
    };
    let f = fractions(&c, &emulated);
    assert_eq!(
        (f[0].ceiling_id.as_str(), f[0].frac_peak),
        ("net.link", None)
    );
    assert!(f[0].unknown.as_deref().unwrap().contains("emulated nodes"));
    // one real host: the STREAM Copy bound, the link plays no part
    let f = fractions(&c, &launch(&hosts));
    // 4 ranks' all-gather: 2 B × 4 per busbw byte, 40 / 8 = 5 GB/s
    assert_eq!(
        (f[0].ceiling_id.as_str(), f[0].frac_peak),
        ("cpu.mem.copy.all_cpus", Some(1.0))
    );
}

#[test]
fn gemm_gflops_against_the_fma_peak_of_its_precision_times_its_cpus() {
    use crate::params::{Dtype, Workload};
    let hosts = [host("a")];
    let mut c = case(Workload::Matmul, Dtype::F64);
    c.gflops = Some(80.0);
    let f = fractions(&c, &launch(&hosts));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].ceiling_id, "cpu.peak.f64.avx2+fma.one_cpu");
    // 2 threads per device: 2 × 50 GFLOP/s
    assert_eq!(
        (f[0].cpus, f[0].bound, f[0].frac_peak),
        (Some(2), Some(100.0), Some(0.8))
    );
    let mut c32 = case(Workload::Matmul, Dtype::F32);
    c32.gflops = Some(50.0);
    assert_eq!(fractions(&c32, &launch(&hosts))[0].frac_peak, Some(0.25));
    // above the measured peak: flagged, naming the theoretical bound where it is known
    let mut theory = host("a");
    theory.ceilings.push(Ceiling {
        source: CeilingSource::Computed,
        ..ceiling("cpu.theory.f32.one_cpu", CeilingUnit::Gflops, Some(243.2))
    });
    let theory = [theory];
    c32.gflops = Some(278.0);
    let f = fractions(&c32, &launch(&theory));
    assert!(f[0].under_measured && f[0].frac_peak.is_none(), "{f:?}");
    let why = f[0].unknown.as_deref().unwrap();
    assert!(
        why.contains("278 GFLOP/s is above its measured bound 200 GFLOP/s")
            && why.contains("the theoretical bound cpu.theory.f32.one_cpu × 2 CPUs is 486 GFLOP/s"),
        "{why}"
    );
    // no FMA peak for integers: unknown, with why
    let mut ci = case(Workload::Matmul, Dtype::I32);
    ci.gflops = Some(1.0);
    let f = fractions(&ci, &launch(&hosts));
    assert_eq!(f[0].frac_peak, None);
    assert!(f[0].unknown.as_deref().unwrap().contains("i32"), "{f:?}");
}

/// A host with one CUDA GPU: NVLink `nvlink` GB/s (`None`: unknown), PCIe 15.75 GB/s,
/// BF16 989 and FP64 tensor 67 TFLOP/s, FP32 unknown.
fn gpu_host(nvlink: Option<f64>) -> HostCeilings {
    let mut h = host("a");
    let g = CeilingUnit::Gflops;
    h.ceilings.extend([
        ceiling("gpu0.pcie", CeilingUnit::Gbps, Some(15.75)),
        ceiling("gpu0.nvlink", CeilingUnit::Gbps, nvlink),
        ceiling("gpu0.peak.bf16_tensor", g, Some(989e3)),
        ceiling("gpu0.peak.fp64_tensor", g, Some(67e3)),
        ceiling("gpu0.peak.fp64", g, Some(34e3)),
        ceiling("gpu0.peak.fp32", g, None),
        ceiling("gpu1.nvlink", CeilingUnit::Gbps, Some(1.0)),
    ]);
    h
}

fn cuda(w: crate::params::Workload, dtype: crate::params::Dtype) -> Case {
    let mut c = case(w, dtype);
    c.params.backend = crate::params::BackendKind::Cuda;
    c
}

#[test]
fn cuda_busbw_on_one_host_against_nvlink_when_active_else_pcie() {
    use crate::params::{Dtype, Workload};
    let mut c = cuda(Workload::Allreduce, Dtype::F32);
    c.busbw_gbps = Some(90.0);
    let hosts = [gpu_host(Some(450.0))];
    let f = fractions(&c, &launch(&hosts));
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].ceiling_id.as_str(), f[0].bound, f[0].frac_peak),
        ("gpu0.nvlink", Some(450.0), Some(0.2))
    );
    // no NVLink (0 GB/s, or unknown): the PCIe link bounds it
    for nv in [Some(0.0), None] {
        let hosts = [gpu_host(nv)];
        let f = fractions(&c, &launch(&hosts));
        assert_eq!(
            (f[0].ceiling_id.as_str(), f[0].bound, f[0].frac_peak),
            ("gpu0.pcie", Some(15.75), Some(90.0 / 15.75))
        );
    }
    // no GPU ceilings recorded: unknown, naming the device and why
    let mut none = host("a");
    none.ceilings.push(ceiling("gpu", CeilingUnit::Gbps, None));
    let none = [none];
    let f = fractions(&c, &launch(&none));
    assert_eq!(
        (f[0].ceiling_id.as_str(), f[0].frac_peak),
        ("gpu0.link", None)
    );
    assert!(
        f[0].unknown.as_deref().unwrap().ends_with(": why not"),
        "{f:?}"
    );
    // across hosts the GPU links are not the bound: the network branch answers
    let two = LaunchCeilings {
        host_count: 2,
        nodes: 2,
        ..launch(&hosts)
    };
    assert_eq!(fractions(&c, &two)[0].ceiling_id, "net.link");
}

#[test]
fn cuda_gemm_against_the_table_peak_of_its_precision() {
    use crate::params::{Dtype, Workload};
    let hosts = [gpu_host(Some(450.0))];
    let frac = |dtype: Dtype, gflops: f64| {
        let mut c = cuda(Workload::Matmul, dtype);
        c.gflops = Some(gflops);
        let f = fractions(&c, &launch(&hosts));
        assert_eq!(f.len(), 1);
        f.into_iter().next().unwrap()
    };
    let f = frac(Dtype::Bf16, 494.5e3);
    assert_eq!(
        (f.ceiling_id.as_str(), f.bound, f.frac_peak, f.cpus),
        ("gpu0.peak.bf16_tensor", Some(989e3), Some(0.5), None)
    );
    // f64: the FP64 tensor peak
    let f = frac(Dtype::F64, 33.5e3);
    assert_eq!(
        (f.ceiling_id.as_str(), f.frac_peak),
        ("gpu0.peak.fp64_tensor", Some(0.5))
    );
    // FP32 not in the table: unknown with the ceiling's reason
    let f = frac(Dtype::F32, 1e3);
    assert_eq!(
        (f.ceiling_id.as_str(), f.frac_peak),
        ("gpu0.peak.fp32", None)
    );
    assert_eq!(f.unknown.as_deref(), Some("why not"));
    // f16: no ceiling recorded at all
    let f = frac(Dtype::F16, 1e3);
    assert_eq!(
        (f.ceiling_id.as_str(), f.frac_peak),
        ("gpu0.peak.fp16_tensor", None)
    );
    assert!(f
        .unknown
        .as_deref()
        .unwrap()
        .contains("no gpu0.peak.fp16_tensor"));
    // skipped: the reason
    let mut c = cuda(Workload::Matmul, Dtype::Bf16);
    c.gflops = Some(1.0);
    let skipped = LaunchCeilings {
        skipped: Some("not measured: --no-ceilings"),
        ..launch(&[])
    };
    let f = fractions(&c, &skipped);
    assert_eq!(
        (f[0].ceiling_id.as_str(), f[0].frac_peak),
        ("gpu0.peak", None)
    );
    assert!(f[0].unknown.as_deref().unwrap().contains("--no-ceilings"));
}

#[test]
fn skipped_ceilings_say_so_and_older_files_get_none() {
    use crate::params::{Dtype, Workload};
    let mut c = case(Workload::Allreduce, Dtype::F32);
    c.busbw_gbps = Some(10.0);
    let skipped = LaunchCeilings {
        skipped: Some("not measured: --no-ceilings"),
        ..launch(&[])
    };
    let f = fractions(&c, &skipped);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].frac_peak, None);
    assert!(f[0].unknown.as_deref().unwrap().contains("--no-ceilings"));
    // a file from before ceilings were recorded: nothing is claimed
    assert!(fractions(&c, &launch(&[])).is_empty());
    // a case with no figure (failed, skipped) gets none either
    let hosts = [host("a")];
    assert!(fractions(&case(Workload::Allreduce, Dtype::F32), &launch(&hosts)).is_empty());
}
