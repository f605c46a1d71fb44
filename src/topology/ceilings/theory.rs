//! The theoretical floating-point peak of one CPU, where the machine says enough: FMA units ×
//! vector lanes × 2 FLOPs × the highest clock cpufreq reports. The FMA units are not in CPUID,
//! so they come from the vendor and family (a short table, each row with its reference); the
//! clock only from cpufreq's `cpuinfo_max_freq`, because /proc/cpuinfo's `cpu MHz` is the
//! current clock and the model name's `@ 2.10GHz` the base clock, neither a maximum. Anything
//! missing makes the bound unknown with the reason: nothing is guessed.

use crate::results::ceilings::{Ceiling, CeilingSource, CeilingUnit};
use std::path::Path;

/// What the bound is computed from, as read from /proc/cpuinfo.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuFacts {
    pub vendor: String,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub model_name: String,
    pub flags: Vec<String>,
}

impl CpuFacts {
    /// The first processor's facts in /proc/cpuinfo text.
    pub fn parse(cpuinfo: &str) -> CpuFacts {
        let mut f = CpuFacts::default();
        for line in cpuinfo.lines() {
            if line.trim().is_empty() && !f.vendor.is_empty() {
                break; // the first processor only
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "vendor_id" => f.vendor = v.to_string(),
                "cpu family" => f.family = v.parse().ok(),
                "model" => f.model = v.parse().ok(),
                "model name" => f.model_name = v.to_string(),
                "flags" => f.flags = v.split_whitespace().map(str::to_string).collect(),
                _ => {}
            }
        }
        f
    }

    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// FMA units and their width in bits for a CPU, with the reference; `Err` says why unknown.
fn fma_units(c: &CpuFacts) -> Result<(u32, u32, &'static str), String> {
    let fma = c.has("fma");
    let avx512 = c.has("avx512f");
    match c.vendor.as_str() {
        "GenuineIntel" if avx512 => Ok((2, 512, "Intel Skylake-SP to Sapphire/Emerald Rapids: two 512-bit FMA units on Xeon Gold/Platinum (one on some Silver/Bronze and client parts, so this is the most any has)")),
        "GenuineIntel" if fma && c.has("avx2") => Ok((2, 256, "Intel Haswell and later AVX2 cores: two 256-bit FMA units")),
        "AuthenticAMD" | "HygonGenuine" if fma => match c.family {
            // Zen 5: 512-bit datapaths on server parts (256-bit on some client parts)
            Some(0x1a) => Ok(if avx512 { (2, 512, "AMD Zen 5 (family 1Ah): two 512-bit FMA pipes on server parts") } else { (2, 256, "AMD Zen 5 (family 1Ah) without AVX-512: two 256-bit FMA pipes") }),
            // Zen 4 runs AVX-512 on 256-bit pipes: 2 × 256 bits per cycle either way
            Some(0x19) => Ok((2, 256, "AMD Zen 3/Zen 4 (family 19h): two 256-bit FMA pipes (Zen 4 splits a 512-bit FMA over them)")),
            Some(0x17) if c.model.is_some_and(|m| m >= 0x30) => Ok((2, 256, "AMD Zen 2 (family 17h, model ≥ 30h): two 256-bit FMA pipes")),
            Some(0x17) => Ok((2, 128, "AMD Zen/Zen+ (family 17h, model < 30h): two 128-bit FMA pipes")),
            Some(f) => Err(format!("AMD family {f:#x} is not in the FMA-unit table")),
            None => Err("/proc/cpuinfo gives no cpu family".into()),
        },
        "" => Err("/proc/cpuinfo gives no vendor_id".into()),
        v if !fma => Err(format!("{v} CPU without FMA: its multiply and add pipes are not in the table")),
        v => Err(format!("vendor {v:?} is not in the FMA-unit table")),
    }
}

/// The highest clock cpufreq reports for `cpu`, kHz, from `<sys>/devices/system/cpu/cpu<N>/
/// cpufreq/cpuinfo_max_freq`; `Err` says why none.
pub fn max_khz(sys: &Path, cpu: u32) -> Result<u64, String> {
    let f = sys.join(format!(
        "devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"
    ));
    let text = std::fs::read_to_string(&f).map_err(|e| {
        format!(
            "no {} ({e}): cpufreq is absent (common in VMs), and /proc/cpuinfo's 'cpu MHz' is the current clock, its model name's the base clock, neither the maximum",
            f.display()
        )
    })?;
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|k| *k > 0)
        .ok_or_else(|| format!("{}: {:?} is not a clock in kHz", f.display(), text.trim()))
}

/// The theoretical one-CPU peaks (`cpu.theory.<f32|f64>.one_cpu`, source `computed`) from
/// /proc/cpuinfo's text and the clock (`Err`: why it is unknown); unknown with the reason
/// where either says too little.
pub fn theoretical(cpuinfo: &str, clock_khz: Result<u64, String>, cpu: u32) -> Vec<Ceiling> {
    let facts = CpuFacts::parse(cpuinfo);
    let units = fma_units(&facts);
    [("f32", 32u32), ("f64", 64)]
        .into_iter()
        .map(|(p, bits)| {
            let id = format!("cpu.theory.{p}.one_cpu");
            let what = format!("{p} theoretical peak, 1 CPU ({cpu})");
            let (value, source, detail) = match (&units, &clock_khz) {
                (Ok((n, width, why)), Ok(khz)) => {
                    let lanes = width / bits;
                    let ghz = *khz as f64 / 1e6;
                    let v = f64::from(n * lanes * 2) * ghz;
                    let hv = if facts.has("hypervisor") { "; under a hypervisor, which may report the host's clock or its own" } else { "" };
                    (Some(v), CeilingSource::Computed, format!(
                        "{n} FMA units × {lanes} {p} lanes ({width}-bit) × 2 FLOPs × {ghz} GHz (cpufreq cpuinfo_max_freq of CPU {cpu}); units: {why} ({}){hv}",
                        if facts.model_name.is_empty() { "model unknown" } else { &facts.model_name }
                    ))
                }
                (Err(why), _) | (_, Err(why)) => (None, CeilingSource::Unknown, why.clone()),
            };
            Ceiling { id, what, unit: CeilingUnit::Gflops, value, source, detail }
        })
        .collect()
}

/// This host's theoretical one-CPU peaks for `cpu` (/proc/cpuinfo and /sys).
pub fn host(cpu: u32) -> Vec<Ceiling> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    theoretical(&cpuinfo, max_khz(Path::new("/sys"), cpu), cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_facts_are_the_first_processors() {
        let f = CpuFacts::parse(
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nflags\t\t: fma avx2 avx512f\n\nprocessor\t: 1\nvendor_id\t: Other\n",
        );
        assert_eq!(f.vendor, "GenuineIntel");
        assert_eq!((f.family, f.model), (Some(6), Some(143)));
        assert!(f.has("avx512f") && !f.has("avx"));
    }

    fn fixture(name: &str) -> (String, std::path::PathBuf) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ceilings/cpu")
            .join(name);
        (
            std::fs::read_to_string(dir.join("cpuinfo")).unwrap(),
            dir.join("sys"),
        )
    }

    fn value(c: &[Ceiling], id: &str) -> Option<f64> {
        c.iter().find(|c| c.id == id).unwrap().value
    }

    #[test]
    fn intel_avx512_bound_from_a_recorded_cpuinfo_and_cpufreq_tree() {
        // Xeon Platinum 8480+: 2 FMA units × 16 f32 (8 f64) lanes × 2 × 3.8 GHz
        let (info, sys) = fixture("spr_avx512");
        let c = theoretical(&info, max_khz(&sys, 0), 0);
        assert!(
            (value(&c, "cpu.theory.f32.one_cpu").unwrap() - 243.2).abs() < 1e-9,
            "{c:?}"
        );
        assert!(
            (value(&c, "cpu.theory.f64.one_cpu").unwrap() - 121.6).abs() < 1e-9,
            "{c:?}"
        );
        assert!(c.iter().all(|c| c.source == CeilingSource::Computed));
        assert!(
            c[0].detail.contains("cpufreq") && c[0].detail.contains("512-bit"),
            "{}",
            c[0].detail
        );
    }

    #[test]
    fn amd_avx2_bound_from_a_recorded_cpuinfo_and_cpufreq_tree() {
        // EPYC 7742 (Zen 2): 2 × 256-bit FMA pipes: 8 f32 (4 f64) lanes × 2 × 3.4 GHz
        let (info, sys) = fixture("rome_avx2");
        let c = theoretical(&info, max_khz(&sys, 0), 0);
        assert!(
            (value(&c, "cpu.theory.f32.one_cpu").unwrap() - 108.8).abs() < 1e-9,
            "{c:?}"
        );
        assert!(
            (value(&c, "cpu.theory.f64.one_cpu").unwrap() - 54.4).abs() < 1e-9,
            "{c:?}"
        );
        assert!(c[0].detail.contains("Zen 2"), "{}", c[0].detail);
    }

    #[test]
    fn a_vm_without_cpufreq_is_unknown_with_the_reason() {
        // the Emerald Rapids VM: AVX-512 and AMX, but no cpufreq directory
        let (info, sys) = fixture("emr_vm_no_cpufreq");
        let c = theoretical(&info, max_khz(&sys, 0), 0);
        for c in &c {
            assert_eq!((c.value, c.source), (None, CeilingSource::Unknown));
            assert!(
                c.detail.contains("cpuinfo_max_freq") && c.detail.contains("base clock"),
                "{}",
                c.detail
            );
        }
        // and a CPU other than 0 has no file either
        assert!(max_khz(&sys, 7).is_err());
    }

    #[test]
    fn no_facts_no_bound() {
        let c = theoretical("", Ok(3_000_000), 0);
        assert!(c
            .iter()
            .all(|c| c.value.is_none() && c.detail.contains("vendor_id")));
        let c = theoretical(
            "vendor_id : GenuineIntel\nflags : fma avx2\n",
            Err("no cpufreq".into()),
            0,
        );
        assert!(c
            .iter()
            .all(|c| c.value.is_none() && c.detail == "no cpufreq"));
    }
}
