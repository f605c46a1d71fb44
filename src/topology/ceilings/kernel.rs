//! Which vector instruction set a BLAS's GEMM kernel targets, against the best the CPU runs:
//! a library forced onto an older kernel (by an environment variable, or because the build
//! predates the CPU) computes at a fraction of the machine, and nothing else says so.

/// Vector instruction set tiers, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    Sse,
    Avx,
    Avx2,
    Avx512,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Sse => "SSE",
            Tier::Avx => "AVX",
            Tier::Avx2 => "AVX2",
            Tier::Avx512 => "AVX-512",
        }
    }
}

/// The best tier a CPU runs, from its /proc/cpuinfo `flags`.
pub fn cpu_tier<'a>(flags: impl IntoIterator<Item = &'a str>) -> Tier {
    let f: std::collections::BTreeSet<&str> = flags.into_iter().collect();
    if f.contains("avx512f") {
        Tier::Avx512
    } else if f.contains("avx2") && f.contains("fma") {
        Tier::Avx2
    } else if f.contains("avx") {
        Tier::Avx
    } else {
        Tier::Sse
    }
}

/// What the check needs of the CPU: its best tier, vendor and flags.
#[derive(Debug, Clone, PartialEq)]
pub struct HostCpu {
    pub tier: Tier,
    /// `vendor_id` (GenuineIntel, AuthenticAMD, ...).
    pub vendor: String,
    pub flags: std::collections::BTreeSet<String>,
}

impl HostCpu {
    /// The first processor of /proc/cpuinfo text (SSE and no vendor without it).
    pub fn from_cpuinfo(text: &str) -> HostCpu {
        let f = super::theory::CpuFacts::parse(text);
        HostCpu {
            tier: cpu_tier(f.flags.iter().map(String::as_str)),
            vendor: f.vendor,
            flags: f.flags.into_iter().collect(),
        }
    }

    fn has(&self, flag: &str) -> bool {
        self.flags.contains(flag)
    }
}

/// This host's CPU (/proc/cpuinfo).
pub fn host_cpu() -> HostCpu {
    HostCpu::from_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default())
}

/// An OpenBLAS release, `(0, 3, 21)` from its config string (`OpenBLAS 0.3.21 DYNAMIC_ARCH ...`).
fn openblas_version(library: &str) -> Option<(u32, u32, u32)> {
    let v = library
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
    let mut it = v.split('.').map(|x| {
        x.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
    });
    Some((
        it.next()?.ok()?,
        it.next()?.ok()?,
        it.next().and_then(Result::ok).unwrap_or(0),
    ))
}

/// The newest OpenBLAS core for the CPU's own tier that the release has (x86-64): Debian's
/// 0.3.21 DYNAMIC_ARCH build carries Haswell, Zen, SkylakeX and Cooperlake kernels but no
/// SapphireRapids, which is named only for later releases on CPUs with AMX and AVX512-FP16.
pub fn openblas_core_for(cpu: &HostCpu, version: Option<(u32, u32, u32)>) -> Option<&'static str> {
    let after_0321 = version.is_some_and(|v| v > (0, 3, 21));
    Some(match cpu.tier {
        Tier::Avx512 if after_0321 && cpu.has("amx_tile") && cpu.has("avx512_fp16") => {
            "SapphireRapids"
        }
        Tier::Avx512 if cpu.has("avx512_bf16") => "Cooperlake",
        Tier::Avx512 => "SkylakeX",
        Tier::Avx2 if cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine" => "Zen",
        Tier::Avx2 => "Haswell",
        Tier::Avx => "Sandybridge",
        Tier::Sse => return None,
    })
}

/// The fix for an OpenBLAS running an older kernel: the variable and value that select the
/// CPU's own (a DYNAMIC_ARCH build only), else the gemm crate.
fn openblas_fix(cpu: &HostCpu, blas: &BlasKernel, forced: Option<&str>) -> String {
    let gemm = "or run with --gemm gemm-crate (AVX-512/AVX2 kernels chosen at run time)";
    let version = openblas_version(&blas.library);
    let release = version.map_or("this release".into(), |(a, b, c)| {
        format!("OpenBLAS {a}.{b}.{c}")
    });
    if !blas.library.contains("DYNAMIC_ARCH") && !blas.library.is_empty() {
        return format!("fix: this build is not DYNAMIC_ARCH, so OPENBLAS_CORETYPE cannot change its kernel: install a DYNAMIC_ARCH build (Debian's libopenblas0-pthread is one), {gemm}");
    }
    match (openblas_core_for(cpu, version), forced) {
        (Some(core), Some(f)) => format!("fix: unset {f} or set OPENBLAS_CORETYPE={core} (the newest core {release} has for {}), {gemm}", cpu.tier.name()),
        (Some(core), None) => format!("fix: set OPENBLAS_CORETYPE={core} (the newest core {release} has for {}), {gemm}", cpu.tier.name()),
        (None, Some(f)) => format!("fix: unset {f}, {gemm}"),
        (None, None) => format!("fix: {gemm}"),
    }
}

/// The fix for MKL forced onto an older code path, with its AMD variable where it still works.
fn mkl_fix(cpu: &HostCpu, library: &str, forced: &str) -> String {
    let (name, _) = forced.split_once('=').unwrap_or((forced, ""));
    let path = match cpu.tier {
        Tier::Avx512 => Some("AVX512"),
        Tier::Avx2 => Some("AVX2"),
        _ => None,
    };
    let mut fix = match (name, path) {
        ("MKL_ENABLE_INSTRUCTIONS", Some(p)) => {
            format!("fix: unset MKL_ENABLE_INSTRUCTIONS or set MKL_ENABLE_INSTRUCTIONS={p}")
        }
        ("MKL_CBWR", _) => "fix: unset MKL_CBWR (or MKL_CBWR=AUTO; COMPATIBLE trades speed for bitwise reproducibility across CPUs)".into(),
        _ => format!("fix: unset {name}"),
    };
    if cpu.vendor == "AuthenticAMD" {
        // MKL_DEBUG_CPU_TYPE=5 made MKL take its AVX2 paths on AMD up to 2020.0; 2020 Update 1
        // removed it
        let year = library
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse::<u32>().ok())
            .find(|y| (2000..2100).contains(y));
        fix.push_str(match year {
            Some(y) if y <= 2019 => "; on this AMD CPU also set MKL_DEBUG_CPU_TYPE=5 (honoured by MKL up to 2020.0)",
            _ => "; on AMD CPUs MKL_DEBUG_CPU_TYPE=5 works only up to MKL 2020.0 (removed in 2020 Update 1)",
        });
    }
    fix.push_str(", or run with --gemm gemm-crate");
    fix
}

/// The tier an OpenBLAS core name (`openblas_get_corename()`, `OPENBLAS_CORETYPE`) targets,
/// from OpenBLAS's x86-64 kernel families (driver/others/dynamic.c, kernel/x86_64/KERNEL.*).
pub fn openblas_core_tier(core: &str) -> Option<Tier> {
    let c = core.trim().to_ascii_lowercase();
    Some(match c.as_str() {
        "skylakex" | "cooperlake" | "sapphirerapids" => Tier::Avx512,
        "haswell" | "zen" | "excavator" => Tier::Avx2,
        "sandybridge" | "bulldozer" | "piledriver" | "steamroller" => Tier::Avx,
        "prescott" | "core2" | "penryn" | "dunnington" | "nehalem" | "atom" | "barcelona"
        | "opteron" | "opteron_sse3" | "nano" | "bobcat" | "katmai" | "coppermine"
        | "northwood" | "banias" | "athlon" => Tier::Sse,
        _ => return None,
    })
}

/// MKL's `MKL_ENABLE_INSTRUCTIONS` values, as tiers.
fn mkl_instructions_tier(v: &str) -> Option<Tier> {
    let v = v.trim().to_ascii_uppercase();
    Some(if v.starts_with("AVX512") {
        Tier::Avx512
    } else if v.starts_with("AVX2") {
        Tier::Avx2
    } else if v == "AVX" {
        Tier::Avx
    } else if v.starts_with("SSE") {
        Tier::Sse
    } else {
        return None;
    })
}

/// The GEMM library, as far as the check needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub struct BlasKernel {
    /// The library's own description (version and configuration).
    pub library: String,
    /// The kernel it says it runs (OpenBLAS's core name, BLIS's sub-configuration), if it says.
    pub kernel: Option<String>,
}

/// Environment variables that force a BLAS onto a kernel, with what each does.
pub const FORCING_VARIABLES: &[&str] = &[
    "OPENBLAS_CORETYPE",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_CBWR",
    "BLIS_ARCH_TYPE",
];

/// A warning when the GEMM kernel targets an older tier than the CPU runs, naming what forced
/// it and the fix (the variable and value that select the CPU's own kernel in that library,
/// or the gemm crate): `env(name)` reads an environment variable. `None` when the kernel
/// matches the CPU, or its tier is unknown (then nothing can be said).
pub fn check(
    cpu: &HostCpu,
    blas: &BlasKernel,
    env: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let lib = blas.library.to_ascii_lowercase();
    let set = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let (tier, what, forced, fix) = if lib.contains("openblas") {
        let core = blas.kernel.clone().or_else(|| set("OPENBLAS_CORETYPE"))?;
        let tier = openblas_core_tier(&core)?;
        let forced = set("OPENBLAS_CORETYPE").map(|v| format!("OPENBLAS_CORETYPE={v}"));
        let fix = openblas_fix(cpu, blas, forced.as_deref());
        (tier, format!("OpenBLAS's {core} kernels"), forced, fix)
    } else if lib.contains("mkl") || lib.contains("math kernel library") {
        let (tier, what, forced) = if let Some(v) =
            set("MKL_CBWR").filter(|v| v.to_ascii_uppercase().starts_with("COMPATIBLE"))
        {
            (
                Tier::Sse,
                "MKL's compatible (SSE2) code path".to_string(),
                format!("MKL_CBWR={v}"),
            )
        } else {
            let v = set("MKL_ENABLE_INSTRUCTIONS")?;
            let tier = mkl_instructions_tier(&v)?;
            (
                tier,
                format!("MKL's {v} code path"),
                format!("MKL_ENABLE_INSTRUCTIONS={v}"),
            )
        };
        let fix = mkl_fix(cpu, &blas.library, &forced);
        (tier, what, Some(forced), fix)
    } else {
        return None;
    };
    (tier < cpu.tier).then(|| {
        let cause = match forced {
            Some(f) => format!("forced by {f}"),
            None => "chosen by the library itself (not forced by any variable: a build older than the CPU picks an older model)".into(),
        };
        format!(
            "GEMM runs {what}, which use {}; this CPU runs {}: {cause}; {fix}",
            tier.name(),
            cpu.tier.name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    /// The CPU of a recorded /proc/cpuinfo (tests/fixtures/ceilings/cpu/NAME/cpuinfo).
    fn cpu(name: &str) -> HostCpu {
        let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ceilings/cpu")
            .join(name)
            .join("cpuinfo");
        HostCpu::from_cpuinfo(&std::fs::read_to_string(f).unwrap())
    }

    fn tiered(tier: Tier) -> HostCpu {
        HostCpu {
            tier,
            vendor: "GenuineIntel".into(),
            flags: Default::default(),
        }
    }

    /// Debian 12's OpenBLAS, as `openblas_get_config()` describes it.
    fn openblas(kernel: &str) -> BlasKernel {
        BlasKernel {
            library: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64".into(),
            kernel: Some(kernel.into()),
        }
    }

    fn mkl(version: &str) -> BlasKernel {
        BlasKernel {
            library: format!("Intel(R) oneAPI Math Kernel Library Version {version} Product Build 20231011 for Intel(R) 64 architecture applications"),
            kernel: None,
        }
    }

    #[test]
    fn cpu_tiers_from_flags() {
        assert_eq!(
            cpu_tier("fpu sse2 avx avx2 fma avx512f".split(' ')),
            Tier::Avx512
        );
        assert_eq!(cpu_tier("sse2 avx avx2 fma".split(' ')), Tier::Avx2);
        assert_eq!(cpu_tier("sse2 avx avx2".split(' ')), Tier::Avx); // no FMA: not Haswell's kernels
        assert_eq!(cpu_tier("sse2".split(' ')), Tier::Sse);
        assert_eq!(cpu("emr_vm_no_cpufreq").tier, Tier::Avx512);
        assert_eq!(cpu("rome_avx2").tier, Tier::Avx2);
    }

    #[test]
    fn openblas_choosing_prescott_itself_on_an_avx512_vm_names_the_coretype_that_fixes_it() {
        // the case: 0.3.21 runs Prescott on Emerald Rapids; it has no SapphireRapids
        // kernels, and this CPU has avx512_bf16, so Cooperlake is the newest it has
        let w = check(&cpu("emr_vm_no_cpufreq"), &openblas("Prescott"), env(&[])).unwrap();
        assert!(w.contains("not forced by any variable"), "{w}");
        assert!(w.contains("fix: set OPENBLAS_CORETYPE=Cooperlake (the newest core OpenBLAS 0.3.21 has for AVX-512)"), "{w}");
        assert!(w.contains("--gemm gemm-crate"), "{w}");
        // a later release on the same CPU (AMX, AVX512-FP16): SapphireRapids
        let mut later = openblas("Prescott");
        later.library = later.library.replace("0.3.21", "0.3.27");
        let w = check(&cpu("emr_vm_no_cpufreq"), &later, env(&[])).unwrap();
        assert!(w.contains("OPENBLAS_CORETYPE=SapphireRapids"), "{w}");
        // AVX-512 without BF16: SkylakeX
        let mut skx = cpu("emr_vm_no_cpufreq");
        skx.flags.remove("avx512_bf16");
        let w = check(&skx, &openblas("Haswell"), env(&[])).unwrap();
        assert!(w.contains("OPENBLAS_CORETYPE=SkylakeX"), "{w}");
    }

    #[test]
    fn a_forced_older_openblas_kernel_names_the_variable_and_the_cores_for_amd_avx2() {
        let w = check(
            &cpu("rome_avx2"),
            &openblas("Sandybridge"),
            env(&[("OPENBLAS_CORETYPE", "Sandybridge")]),
        )
        .unwrap();
        assert!(
            w.contains("forced by OPENBLAS_CORETYPE=Sandybridge; fix: unset OPENBLAS_CORETYPE=Sandybridge or set OPENBLAS_CORETYPE=Zen"),
            "{w}"
        );
        assert!(w.contains("AVX2") && w.contains("--gemm gemm-crate"), "{w}");
        // an Intel AVX2 CPU: Haswell
        let w = check(&tiered(Tier::Avx2), &openblas("Prescott"), env(&[])).unwrap();
        assert!(w.contains("OPENBLAS_CORETYPE=Haswell"), "{w}");
        // a build that is not DYNAMIC_ARCH cannot be switched by the variable
        let fixed = BlasKernel {
            library: "OpenBLAS 0.3.21 NO_AFFINITY Prescott MAX_THREADS=64".into(),
            kernel: Some("Prescott".into()),
        };
        let w = check(&tiered(Tier::Avx2), &fixed, env(&[])).unwrap();
        assert!(
            w.contains("not DYNAMIC_ARCH") && w.contains("--gemm gemm-crate"),
            "{w}"
        );
    }

    #[test]
    fn a_kernel_matching_the_cpu_or_unknown_is_silent() {
        assert!(check(&tiered(Tier::Avx2), &openblas("Haswell"), env(&[])).is_none());
        assert!(check(&tiered(Tier::Avx2), &openblas("SkylakeX"), env(&[])).is_none());
        assert!(check(&tiered(Tier::Avx512), &openblas("Armv8"), env(&[])).is_none());
        let other = BlasKernel {
            library: "BLIS 0.9".into(),
            kernel: None,
        };
        assert!(check(&tiered(Tier::Avx512), &other, env(&[])).is_none());
    }

    #[test]
    fn mkl_paths_forced_by_its_variables_name_the_fix() {
        let w = check(
            &cpu("emr_vm_no_cpufreq"),
            &mkl("2024.0"),
            env(&[("MKL_ENABLE_INSTRUCTIONS", "AVX2")]),
        )
        .unwrap();
        assert!(w.contains("forced by MKL_ENABLE_INSTRUCTIONS=AVX2; fix: unset MKL_ENABLE_INSTRUCTIONS or set MKL_ENABLE_INSTRUCTIONS=AVX512"), "{w}");
        assert!(!w.contains("MKL_DEBUG_CPU_TYPE"), "Intel CPU: {w}");
        let w = check(
            &tiered(Tier::Avx2),
            &mkl("2024.0"),
            env(&[("MKL_CBWR", "COMPATIBLE")]),
        )
        .unwrap();
        assert!(
            w.contains("MKL_CBWR=COMPATIBLE") && w.contains("unset MKL_CBWR"),
            "{w}"
        );
        // on AMD: MKL_DEBUG_CPU_TYPE=5 where the release still honours it, else said gone
        let old = check(
            &cpu("rome_avx2"),
            &mkl("2019.0.5"),
            env(&[("MKL_ENABLE_INSTRUCTIONS", "SSE4_2")]),
        )
        .unwrap();
        assert!(
            old.contains("also set MKL_DEBUG_CPU_TYPE=5")
                && old.contains("MKL_ENABLE_INSTRUCTIONS=AVX2"),
            "{old}"
        );
        let new = check(
            &cpu("rome_avx2"),
            &mkl("2024.0"),
            env(&[("MKL_ENABLE_INSTRUCTIONS", "SSE4_2")]),
        )
        .unwrap();
        assert!(new.contains("removed in 2020 Update 1"), "{new}");
        assert!(check(&tiered(Tier::Avx512), &mkl("2024.0"), env(&[])).is_none());
    }

    #[test]
    fn openblas_versions_parse() {
        assert_eq!(
            openblas_version("OpenBLAS 0.3.21 DYNAMIC_ARCH"),
            Some((0, 3, 21))
        );
        assert_eq!(
            openblas_version("OpenBLAS 0.3.26.dev DYNAMIC_ARCH"),
            Some((0, 3, 26))
        );
        assert_eq!(openblas_version("OpenBLAS"), None);
    }

    #[test]
    fn every_core_name_openblas_lists_has_a_tier() {
        for c in [
            "Prescott",
            "Sandybridge",
            "Haswell",
            "Zen",
            "SkylakeX",
            "Cooperlake",
            "SapphireRapids",
        ] {
            assert!(openblas_core_tier(c).is_some(), "{c}");
        }
    }
}
