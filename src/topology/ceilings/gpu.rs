//! GPU ceilings from driver values: PCIe (current vs maximum generation and width), NVLink
//! (active links × per-link speed), memory bandwidth (bus width × memory clock), and FLOP/s
//! peaks from a table of device names, each entry with its reference.
//!
//! Pure functions of NVML-like ([`NvidiaValues`]) and AMD SMI-like ([`AmdValues`]) structs,
//! so tests use fixtures (`tests/fixtures/ceilings/gpu/*.toml`) and no driver is needed.
//! Figures and references: notes/ceilings.md (NVML API reference, NVIDIA datasheets via
//! torchtitan's `get_peak_flops`, AMD's MI250X specification, the LUMI-G documentation).

use crate::results::ceilings::{
    Ceiling, CeilingSource, CeilingUnit, CeilingWarning, CeilingWarningKind,
};
use serde::Deserialize;
use std::collections::BTreeMap;

/// PCIe link values as NVML reports them (`nvmlDeviceGetCurrPcieLinkGeneration/Width`,
/// `…GetMaxPcieLinkGeneration/Width`: the maximum in this slot; `…GetGpuMaxPcieLinkGeneration`:
/// the GPU's own).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pcie {
    pub gen_current: u32,
    pub width_current: u32,
    pub gen_max: u32,
    pub width_max: u32,
    #[serde(default)]
    pub gpu_gen_max: Option<u32>,
}

/// NVLink: links present (`NVML_FI_DEV_NVLINK_LINK_COUNT`), active (`nvmlDeviceGetNvLinkState`)
/// and the speed of one link (`NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON`, MB/s).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvLink {
    pub links_present: u32,
    pub links_active: u32,
    pub speed_mbps_per_link: u32,
}

/// One NVIDIA GPU's values as NVML gives them; a value NVML could not read is absent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvidiaValues {
    pub index: u32,
    /// `nvmlDeviceGetName`, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    #[serde(default)]
    pub pcie: Option<Pcie>,
    #[serde(default)]
    pub nvlink: Option<NvLink>,
    /// `nvmlDeviceGetMemoryBusWidth`, bits.
    #[serde(default)]
    pub memory_bus_width_bits: Option<u32>,
    /// `nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)`, MHz.
    #[serde(default)]
    pub memory_clock_max_mhz: Option<u32>,
    /// `nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM)`, MHz.
    #[serde(default)]
    pub sm_clock_max_mhz: Option<u32>,
    /// Why a value is absent, by its field (`pcie`, `nvlink`, `memory_bus_width_bits`, ...):
    /// the call that failed and its error, so the unknown ceiling says why.
    #[serde(default)]
    pub not_read: BTreeMap<String, String>,
}

impl NvidiaValues {
    /// A device with no value read yet.
    pub fn named(index: u32, name: String) -> NvidiaValues {
        NvidiaValues {
            index,
            name,
            pcie: None,
            nvlink: None,
            memory_bus_width_bits: None,
            memory_clock_max_mhz: None,
            sm_clock_max_mhz: None,
            not_read: BTreeMap::new(),
        }
    }

    /// A device known by name only: every driver value absent, for `why`.
    pub fn name_only(index: u32, name: String, why: &str) -> NvidiaValues {
        let mut v = NvidiaValues::named(index, name);
        v.not_read = [
            "pcie",
            "nvlink",
            "memory_bus_width_bits",
            "memory_clock_max_mhz",
            "sm_clock_max_mhz",
        ]
        .iter()
        .map(|k| (k.to_string(), why.to_string()))
        .collect();
        v
    }

    /// "`what`" plus the recorded reason for `field`, if any.
    fn why(&self, what: &str, fields: &[&str]) -> String {
        let reasons: Vec<&str> = fields
            .iter()
            .filter_map(|f| self.not_read.get(*f).map(String::as_str))
            .collect();
        if reasons.is_empty() {
            what.to_string()
        } else {
            let mut r = reasons;
            r.dedup();
            format!("{what}: {}", r.join("; "))
        }
    }
}

/// One XGMI peer of an AMD GCD (`amdsmi_get_minmax_bandwidth_between_processors`, MB/s).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Xgmi {
    pub peer: u32,
    pub max_bandwidth_mbps: u64,
}

/// One AMD device as HIP and Slurm see it: on an MI250X, one GCD (half a module).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AmdValues {
    pub index: u32,
    /// The marketing name, e.g. `AMD Instinct MI250X`.
    pub name: String,
    /// `amdsmi_get_gpu_asic_info().target_graphics_version`, e.g. `gfx90a`.
    pub gfx_target: String,
    /// Compute units of this device (`hipDeviceAttributeMultiprocessorCount`).
    pub compute_units: u32,
    #[serde(default)]
    pub pcie: Option<Pcie>,
    #[serde(default)]
    pub xgmi: Vec<Xgmi>,
}

/// The values of a node's GPUs (what a fixture file holds).
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GpuValues {
    #[serde(default)]
    pub nvidia: Vec<NvidiaValues>,
    #[serde(default)]
    pub amd: Vec<AmdValues>,
}

impl GpuValues {
    /// Reads a TOML file of values; the error names the file, the line and what to fix.
    pub fn from_file(path: &std::path::Path) -> Result<GpuValues, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            format!(
                "{}{}: {}: expected [[nvidia]] or [[amd]] tables with the fields of \
                 docs/ceilings.md",
                path.display(),
                line.map_or(String::new(), |l| format!(", line {l}")),
                e.message()
            )
        })
    }
}

/// Ceilings and warnings with their cause.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuCeilings {
    pub ceilings: Vec<Ceiling>,
    pub warnings: Vec<CeilingWarning>,
}

fn warning(kind: CeilingWarningKind, dev: &str, message: String) -> CeilingWarning {
    CeilingWarning {
        kind,
        subject: dev.to_string(),
        message,
    }
}

impl GpuCeilings {
    /// Marks every ceiling and warning as coming from `label` (the stand-in NVML): its values
    /// are a test double's, and must never read as a GPU's.
    pub fn label(&mut self, label: &str) {
        for c in &mut self.ceilings {
            c.detail = format!("{label}: {}", c.detail);
        }
        for w in &mut self.warnings {
            w.message = format!("{label}: {}", w.message);
        }
    }

    fn extend(&mut self, o: GpuCeilings) {
        self.ceilings.extend(o.ceilings);
        self.warnings.extend(o.warnings);
    }
}

/// All GPUs' ceilings.
pub fn ceilings(v: &GpuValues) -> GpuCeilings {
    let mut out = GpuCeilings::default();
    for g in &v.nvidia {
        out.extend(nvidia(g));
    }
    for g in &v.amd {
        out.extend(amd(g));
    }
    out
}

/// PCIe x16 bandwidth per direction, GB/s, by generation (notes/ceilings.md: Gen3 15.75,
/// Gen4 31.5, Gen5 63). Other generations have no sourced figure here.
fn pcie_x16_gbps(gen: u32) -> Option<f64> {
    match gen {
        3 => Some(15.75),
        4 => Some(31.5),
        5 => Some(63.0),
        _ => None,
    }
}

fn known(
    id: String,
    what: String,
    unit: CeilingUnit,
    v: f64,
    src: CeilingSource,
    d: String,
) -> Ceiling {
    Ceiling {
        id,
        what,
        unit,
        value: Some(v),
        source: src,
        detail: d,
    }
}

fn unknown(id: String, what: String, unit: CeilingUnit, why: String) -> Ceiling {
    Ceiling {
        id,
        what,
        unit,
        value: None,
        source: CeilingSource::Unknown,
        detail: why,
    }
}

/// The PCIe ceiling at the slot's maximum generation and the width actually trained (the
/// current generation drops at idle, the width does not), and warnings when either is below
/// its maximum.
fn pcie(dev: &str, p: Option<&Pcie>, missing: String, out: &mut GpuCeilings) {
    let id = format!("{dev}.pcie");
    let what = format!("{dev} PCIe, per direction");
    let Some(p) = p else {
        out.ceilings
            .push(unknown(id, what, CeilingUnit::Gbps, missing));
        return;
    };
    let nd = CeilingWarningKind::NegotiatedDown;
    if p.width_current < p.width_max {
        out.warnings.push(warning(
            nd,
            dev,
            format!(
                "{dev}: PCIe link negotiated down to x{} of x{} (Gen{}): a lane or slot fault, or \
             the card is not fully seated; host-device copies get at most {}/{} of the bandwidth",
                p.width_current, p.width_max, p.gen_current, p.width_current, p.width_max
            ),
        ));
    }
    if p.gen_current < p.gen_max {
        out.warnings.push(warning(
            nd,
            dev,
            format!(
                "{dev}: PCIe link at Gen{} of Gen{} (x{}): negotiated down, or power saving at \
             idle (the generation drops when idle: check it under traffic)",
                p.gen_current, p.gen_max, p.width_current
            ),
        ));
    }
    if let Some(g) = p.gpu_gen_max.filter(|g| *g > p.gen_max) {
        out.warnings.push(warning(
            nd,
            dev,
            format!(
                "{dev}: the slot allows PCIe Gen{} but the GPU supports Gen{g}: the slot or its \
             BIOS setting limits it",
                p.gen_max
            ),
        ));
    }
    match pcie_x16_gbps(p.gen_max) {
        Some(x16) => out.ceilings.push(known(
            id,
            what,
            CeilingUnit::Gbps,
            x16 * f64::from(p.width_current) / 16.0,
            CeilingSource::Driver,
            format!(
                "Gen{} x{} as trained (current Gen{} x{}, maximum Gen{} x{}): {} GB/s per \
                 direction at x16 × {}/16",
                p.gen_max,
                p.width_current,
                p.gen_current,
                p.width_current,
                p.gen_max,
                p.width_max,
                crate::units::echo_f64(x16),
                p.width_current
            ),
        )),
        None => out.ceilings.push(unknown(
            id,
            what,
            CeilingUnit::Gbps,
            format!(
                "no sourced per-lane figure for PCIe Gen{} in the table (Gen3-Gen5 only)",
                p.gen_max
            ),
        )),
    }
}

/// Dense peak FLOP/s of one device model, TFLOP/s, with its reference.
struct Peaks {
    model: &'static str,
    fp64: Option<f64>,
    fp64_tensor: Option<f64>,
    fp32: Option<f64>,
    tf32_tensor: Option<f64>,
    fp16_tensor: Option<f64>,
    bf16_tensor: Option<f64>,
    source: &'static str,
}

const NV_SOURCE: &str = "NVIDIA datasheet, dense (not sparse) figures, as in torchtitan's \
                         get_peak_flops (notes/ceilings.md)";

/// The NVIDIA table. Only the figures the notes give with a source; the rest stay unknown.
fn nvidia_peaks(name: &str) -> Option<Peaks> {
    let none = Peaks {
        model: "",
        fp64: None,
        fp64_tensor: None,
        fp32: None,
        tf32_tensor: None,
        fp16_tensor: None,
        bf16_tensor: None,
        source: NV_SOURCE,
    };
    let n = name.to_ascii_uppercase();
    if n.contains("A100") {
        Some(Peaks {
            model: "A100",
            fp64: Some(9.7),
            fp64_tensor: Some(19.5),
            fp32: Some(19.5),
            bf16_tensor: Some(312.0),
            ..none
        })
    } else if n.contains("H100") && (n.contains("HBM3") || n.contains("SXM")) {
        // NVML names the SXM part "NVIDIA H100 80GB HBM3"
        Some(Peaks {
            model: "H100 SXM",
            fp64: Some(34.0),
            fp64_tensor: Some(67.0),
            bf16_tensor: Some(989.0),
            ..none
        })
    } else if n.contains("H100 PCIE") {
        Some(Peaks {
            model: "H100 PCIe",
            bf16_tensor: Some(756.0),
            ..none
        })
    } else if n.contains("H200") {
        Some(Peaks {
            model: "H200",
            bf16_tensor: Some(989.0),
            ..none
        })
    } else if n.contains("B200") {
        Some(Peaks {
            model: "B200",
            bf16_tensor: Some(2250.0),
            ..none
        })
    } else {
        None
    }
}

fn peak_ceilings(dev: &str, name: &str, p: Option<&Peaks>, extra: &str, out: &mut GpuCeilings) {
    let Some(p) = p else {
        for prec in ["fp64", "fp32", "tf32_tensor", "fp16_tensor", "bf16_tensor"] {
            out.ceilings.push(unknown(
                format!("{dev}.peak.{prec}"),
                format!("{dev} {prec} peak"),
                CeilingUnit::Gflops,
                format!("\"{name}\" is not in the table of device peaks (no API reports them)"),
            ));
        }
        return;
    };
    for (prec, v) in [
        ("fp64", p.fp64),
        ("fp64_tensor", p.fp64_tensor),
        ("fp32", p.fp32),
        ("tf32_tensor", p.tf32_tensor),
        ("fp16_tensor", p.fp16_tensor),
        ("bf16_tensor", p.bf16_tensor),
    ] {
        let id = format!("{dev}.peak.{prec}");
        let what = format!("{dev} {prec} peak ({})", p.model);
        out.ceilings.push(match v {
            Some(t) => known(
                id,
                what,
                CeilingUnit::Gflops,
                t * 1e3,
                CeilingSource::Table,
                format!(
                    "{} TFLOP/s for {} (\"{name}\"): {}{extra}",
                    crate::units::echo_f64(t),
                    p.model,
                    p.source
                ),
            ),
            None => unknown(
                id,
                what,
                CeilingUnit::Gflops,
                format!(
                    "the table has no sourced {prec} figure for {}; none is made up",
                    p.model
                ),
            ),
        });
    }
}

/// One NVIDIA GPU's ceilings and warnings.
pub fn nvidia(v: &NvidiaValues) -> GpuCeilings {
    let mut out = GpuCeilings::default();
    let dev = format!("gpu{}", v.index);
    let missing = v.why("the driver did not report the PCIe link", &["pcie"]);
    pcie(&dev, v.pcie.as_ref(), missing, &mut out);
    let id = format!("{dev}.nvlink");
    let what = format!("{dev} NVLink, all active links");
    match &v.nvlink {
        Some(l) if l.links_present > 0 => {
            if l.links_active < l.links_present {
                out.warnings.push(warning(
                    CeilingWarningKind::LinkDown,
                    &dev,
                    format!(
                        "{dev}: {} of {} NVLink links active: degraded (a link is down; \
                         nvidia-smi nvlink -s shows which)",
                        l.links_active, l.links_present
                    ),
                ));
            }
            out.ceilings.push(known(
                id,
                what,
                CeilingUnit::Gbps,
                f64::from(l.links_active) * f64::from(l.speed_mbps_per_link) / 1e3,
                CeilingSource::Driver,
                format!(
                    "{} active of {} present × {} MB/s per link \
                     (NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON); about 80 % of line rate is \
                     reachable (NVIDIA/nccl#1054)",
                    crate::units::count(l.links_active as usize, "link", "links"),
                    l.links_present,
                    l.speed_mbps_per_link
                ),
            ));
        }
        Some(_) => out.ceilings.push(unknown(
            id,
            what,
            CeilingUnit::Gbps,
            "the GPU has no NVLink (0 links present)".into(),
        )),
        None => out.ceilings.push(unknown(
            id,
            what,
            CeilingUnit::Gbps,
            v.why("the driver did not report NVLink", &["nvlink"]),
        )),
    }
    let id = format!("{dev}.mem");
    let what = format!("{dev} memory bandwidth");
    match (v.memory_bus_width_bits, v.memory_clock_max_mhz) {
        (Some(bits), Some(mhz)) => out.ceilings.push(known(
            id,
            what,
            CeilingUnit::Gbps,
            // double data rate: two transfers per clock
            f64::from(bits) * f64::from(mhz) * 2.0 / 8.0 / 1e3,
            CeilingSource::Driver,
            format!(
                "bus {bits} bit (nvmlDeviceGetMemoryBusWidth) × {mhz} MHz (max memory clock) \
                 × 2 / 8"
            ),
        )),
        _ => out.ceilings.push(unknown(
            id,
            what,
            CeilingUnit::Gbps,
            v.why(
                "the driver did not report the memory bus width and clock",
                &["memory_bus_width_bits", "memory_clock_max_mhz"],
            ),
        )),
    }
    let extra = v.sm_clock_max_mhz.map_or(String::new(), |m| {
        format!("; this GPU's max SM clock {m} MHz (NVML)")
    });
    peak_ceilings(
        &dev,
        &v.name,
        nvidia_peaks(&v.name).as_ref(),
        &extra,
        &mut out,
    );
    out
}

/// CUs of one MI250X GCD: a module is 2 GCDs of 110 CUs, and HIP and Slurm count GCDs.
const MI250X_GCD_CUS: u32 = 110;

/// One AMD device's ceilings: on an MI250X, per GCD (the module's figures halved).
pub fn amd(v: &AmdValues) -> GpuCeilings {
    let mut out = GpuCeilings::default();
    let dev = format!("gpu{}", v.index);
    let missing = "the driver did not report the PCIe link".to_string();
    pcie(&dev, v.pcie.as_ref(), missing, &mut out);
    let src = "AMD MI250X specification (module: FP64/FP32 vector 47.9, matrix 95.7, \
               FP16/BF16 383 TFLOP/s, 3.2 TB/s) halved per GCD; docs.lumi-supercomputer.eu/\
               hardware/lumig (notes/ceilings.md)";
    let gcd = v.gfx_target == "gfx90a" && v.compute_units == MI250X_GCD_CUS;
    let peaks = gcd.then_some(Peaks {
        model: "MI250X GCD",
        fp64: Some(23.9),
        fp64_tensor: Some(47.9),
        fp32: Some(23.9),
        tf32_tensor: None,
        fp16_tensor: Some(191.5),
        bf16_tensor: Some(191.5),
        source: src,
    });
    if !gcd {
        // name-matched figures without the GCD count are 2× off: key on target and CUs
        let why = format!(
            "{} {} with {}: only the MI250X GCD (gfx90a, 110 CUs) is in the table",
            v.name,
            v.gfx_target,
            crate::units::count(v.compute_units as usize, "CU", "CUs")
        );
        for prec in ["fp64", "fp32", "fp16_tensor", "bf16_tensor"] {
            out.ceilings.push(unknown(
                format!("{dev}.peak.{prec}"),
                format!("{dev} {prec} peak"),
                CeilingUnit::Gflops,
                why.clone(),
            ));
        }
        out.ceilings.push(unknown(
            format!("{dev}.mem"),
            format!("{dev} memory bandwidth"),
            CeilingUnit::Gbps,
            why,
        ));
    } else {
        peak_ceilings(&dev, &v.name, peaks.as_ref(), "", &mut out);
        out.ceilings.push(known(
            format!("{dev}.mem"),
            format!("{dev} memory bandwidth (MI250X GCD)"),
            CeilingUnit::Gbps,
            1600.0,
            CeilingSource::Table,
            format!("1.6 TB/s per GCD: {src}"),
        ));
    }
    for x in &v.xgmi {
        out.ceilings.push(known(
            format!("{dev}.xgmi.gpu{}", x.peer),
            format!("{dev} XGMI to gpu{}", x.peer),
            CeilingUnit::Gbps,
            x.max_bandwidth_mbps as f64 / 1e3,
            CeilingSource::Driver,
            format!(
                "{} MB/s: amdsmi_get_minmax_bandwidth_between_processors, maximum",
                x.max_bandwidth_mbps
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> GpuValues {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ceilings/gpu")
            .join(name);
        GpuValues::from_file(&p).unwrap()
    }

    fn value(c: &GpuCeilings, id: &str) -> Option<f64> {
        c.ceilings
            .iter()
            .find(|x| x.id == id)
            .unwrap_or_else(|| panic!("{id} missing: {:?}", c.ceilings))
            .value
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
    }

    // Expected values below are written from the notes and vendor figures, not the table.

    #[test]
    fn h100_sxm_node() {
        let c = ceilings(&fixture("h100_sxm.toml"));
        // Gen5 x16: 63 GB/s per direction
        assert!(close(value(&c, "gpu0.pcie"), 63.0));
        // 18 NVLink4 links × 25 GB/s = 450 GB/s per direction (900 GB/s total)
        assert!(close(value(&c, "gpu0.nvlink"), 450.0));
        // 5120 bit × 2619 MHz × 2 / 8 = 3352.32 GB/s (notes: 3.35 TB/s)
        assert!(close(value(&c, "gpu0.mem"), 3352.32));
        // datasheet: BF16 989 TFLOP/s dense, FP64 34, FP64 tensor 67
        assert!(close(value(&c, "gpu0.peak.bf16_tensor"), 989e3));
        assert!(close(value(&c, "gpu0.peak.fp64"), 34e3));
        assert!(close(value(&c, "gpu0.peak.fp64_tensor"), 67e3));
        // no sourced FP32 figure for H100 in the notes: unknown, with the reason
        let fp32 = c
            .ceilings
            .iter()
            .find(|x| x.id == "gpu0.peak.fp32")
            .unwrap();
        assert_eq!((fp32.value, fp32.source), (None, CeilingSource::Unknown));
        assert!(fp32.detail.contains("no sourced fp32"));
        let bf = c
            .ceilings
            .iter()
            .find(|x| x.id == "gpu0.peak.bf16_tensor")
            .unwrap();
        assert_eq!(bf.source, CeilingSource::Table);
        assert!(bf.detail.contains("datasheet") && bf.detail.contains("1980 MHz"));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // both GPUs of the fixture
        assert!(value(&c, "gpu1.pcie").is_some());
    }

    #[test]
    fn a100_node_with_a_link_down() {
        let c = ceilings(&fixture("a100.toml"));
        // Gen4 x16: 31.5 GB/s
        assert!(close(value(&c, "gpu0.pcie"), 31.5));
        // A100-40GB: 5120 bit × 1215 MHz × 2 / 8 = 1555.2 GB/s (notes: 1.555 TB/s)
        assert!(close(value(&c, "gpu0.mem"), 1555.2));
        // A100 datasheet: FP32 19.5, BF16 312 TFLOP/s
        assert!(close(value(&c, "gpu0.peak.fp32"), 19.5e3));
        assert!(close(value(&c, "gpu0.peak.bf16_tensor"), 312e3));
        // gpu1: 11 of 12 links active → 11 × 25 = 275 GB/s and a warning
        assert!(close(value(&c, "gpu0.nvlink"), 300.0));
        assert!(close(value(&c, "gpu1.nvlink"), 275.0));
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        let w = &c.warnings[0];
        assert!(w.message.contains("11 of 12 NVLink"), "{w:?}");
        assert_eq!(
            (w.kind, w.subject.as_str()),
            (CeilingWarningKind::LinkDown, "gpu1")
        );
    }

    #[test]
    fn gen4_x8_slot_is_negotiated_down() {
        let c = ceilings(&fixture("gen4_x8.toml"));
        // Gen4 at x8: half of 31.5 = 15.75 GB/s
        assert!(close(value(&c, "gpu0.pcie"), 15.75));
        let w: Vec<_> = c
            .warnings
            .iter()
            .filter(|w| w.message.contains("x8 of x16"))
            .collect();
        assert_eq!(w.len(), 1, "{:?}", c.warnings);
        assert!(w[0].message.contains("negotiated down"));
        assert_eq!(
            (w[0].kind, w[0].subject.as_str()),
            (CeilingWarningKind::NegotiatedDown, "gpu0")
        );
        // an unknown name: peaks unknown with the reason, no figure made up
        let p = c
            .ceilings
            .iter()
            .find(|x| x.id == "gpu0.peak.bf16_tensor")
            .unwrap();
        assert_eq!(p.value, None);
        assert!(p.detail.contains("not in the table"));
    }

    #[test]
    fn idle_generation_drop_is_warned_with_its_likely_cause() {
        let v = NvidiaValues {
            index: 3,
            name: "NVIDIA H100 PCIe".into(),
            pcie: Some(Pcie {
                gen_current: 1,
                width_current: 16,
                gen_max: 5,
                width_max: 16,
                gpu_gen_max: Some(5),
            }),
            nvlink: None,
            memory_bus_width_bits: None,
            memory_clock_max_mhz: None,
            sm_clock_max_mhz: None,
            not_read: BTreeMap::new(),
        };
        let c = nvidia(&v);
        // the ceiling is the slot's generation at the trained width
        assert!(close(value(&c, "gpu3.pcie"), 63.0));
        assert_eq!(c.warnings.len(), 1);
        let w = &c.warnings[0].message;
        assert!(w.contains("Gen1 of Gen5") && w.contains("idle"), "{w}");
        assert_eq!(value(&c, "gpu3.mem"), None);
        assert_eq!(value(&c, "gpu3.nvlink"), None);
        assert!(close(value(&c, "gpu3.peak.bf16_tensor"), 756e3));
    }

    #[test]
    fn values_not_read_say_which_call_failed_and_peaks_still_come_from_the_name() {
        let mut v = NvidiaValues::name_only(
            2,
            "NVIDIA H100 80GB HBM3".into(),
            "NVML could not be loaded",
        );
        v.not_read.insert(
            "nvlink".into(),
            "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_LINK_COUNT): Not supported".into(),
        );
        let c = nvidia(&v);
        let get = |id: &str| c.ceilings.iter().find(|x| x.id == id).unwrap();
        assert_eq!(get("gpu2.pcie").value, None);
        assert!(get("gpu2.pcie")
            .detail
            .ends_with(": NVML could not be loaded"));
        assert!(get("gpu2.nvlink")
            .detail
            .contains("NVML_FI_DEV_NVLINK_LINK_COUNT): Not supported"));
        // both the bus width and the clock failed for one reason: said once
        let mem = &get("gpu2.mem").detail;
        assert_eq!(mem.matches("NVML could not be loaded").count(), 1, "{mem}");
        // the table needs only the name
        assert!(close(value(&c, "gpu2.peak.bf16_tensor"), 989e3));
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn mi250x_gcd_is_half_a_module() {
        let c = ceilings(&fixture("mi250x_gcd.toml"));
        // AMD: module FP64 vector 47.9, matrix 95.7, BF16 383 TF, 3.2 TB/s; per GCD half
        assert!(close(value(&c, "gpu0.peak.fp64"), 23.9e3));
        assert!(close(value(&c, "gpu0.peak.fp64_tensor"), 47.9e3));
        assert!(close(value(&c, "gpu0.peak.bf16_tensor"), 191.5e3));
        assert!(close(value(&c, "gpu0.mem"), 1600.0));
        assert!(close(value(&c, "gpu0.pcie"), 31.5));
        assert!(close(value(&c, "gpu0.xgmi.gpu1"), 200.0));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // a gfx90a with another CU count is not matched by name
        let mut v = fixture("mi250x_gcd.toml").amd[0].clone();
        v.compute_units = 220;
        let c = amd(&v);
        assert_eq!(value(&c, "gpu0.peak.fp64"), None);
        assert_eq!(value(&c, "gpu0.mem"), None);
    }

    #[test]
    fn stand_in_values_are_labelled_everywhere() {
        let mut c = ceilings(&fixture("gen4_x8.toml"));
        c.label("STAND-IN (test)");
        assert!(c
            .ceilings
            .iter()
            .all(|x| x.detail.starts_with("STAND-IN (test): ")));
        assert!(!c.warnings.is_empty());
        assert!(c
            .warnings
            .iter()
            .all(|w| w.message.starts_with("STAND-IN (test): ")));
    }

    #[test]
    fn a_bad_fixture_names_file_and_line() {
        let dir = std::env::temp_dir().join(format!("sb-gpu-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.toml");
        std::fs::write(
            &f,
            "[[nvidia]]\nindex = 0\nname = \"x\"\nbus_width = 5120\n",
        )
        .unwrap();
        let e = GpuValues::from_file(&f).unwrap_err();
        assert!(
            e.contains("bad.toml, line 4") && e.contains("bus_width"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
