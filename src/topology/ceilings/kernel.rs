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

/// The best tier this host's CPU runs (/proc/cpuinfo's first `flags` line; SSE without it).
pub fn host_tier() -> Tier {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = info
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "flags").then_some(v)
        })
        .unwrap_or("");
    cpu_tier(flags.split_whitespace())
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
/// it: `env(name)` reads an environment variable. `None` when the kernel matches the CPU, or
/// its tier is unknown (then nothing can be said).
pub fn check(cpu: Tier, blas: &BlasKernel, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    let lib = blas.library.to_ascii_lowercase();
    let set = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let (tier, what, forced) = if lib.contains("openblas") {
        let core = blas.kernel.clone().or_else(|| set("OPENBLAS_CORETYPE"))?;
        let tier = openblas_core_tier(&core)?;
        let forced = set("OPENBLAS_CORETYPE").map(|v| format!("OPENBLAS_CORETYPE={v}"));
        (tier, format!("OpenBLAS's {core} kernels"), forced)
    } else if lib.contains("mkl") || lib.contains("math kernel library") {
        if let Some(v) =
            set("MKL_CBWR").filter(|v| v.to_ascii_uppercase().starts_with("COMPATIBLE"))
        {
            (
                Tier::Sse,
                "MKL's compatible (SSE2) code path".into(),
                Some(format!("MKL_CBWR={v}")),
            )
        } else {
            let v = set("MKL_ENABLE_INSTRUCTIONS")?;
            let tier = mkl_instructions_tier(&v)?;
            (
                tier,
                format!("MKL's {v} code path"),
                Some(format!("MKL_ENABLE_INSTRUCTIONS={v}")),
            )
        }
    } else {
        return None;
    };
    (tier < cpu).then(|| {
        let cause = match forced {
            Some(f) => format!("forced by {f}: unset it"),
            None => "chosen by the library itself (not forced by any variable: a build older than the CPU picks an older model; a newer release may use the CPU's own)".into(),
        };
        format!(
            "GEMM runs {what}, which use {}; this CPU runs {}: {cause}",
            tier.name(),
            cpu.name()
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

    fn openblas(kernel: &str) -> BlasKernel {
        BlasKernel {
            library: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64".into(),
            kernel: Some(kernel.into()),
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
    }

    #[test]
    fn a_forced_older_openblas_kernel_names_the_variable() {
        let w = check(
            Tier::Avx512,
            &openblas("Haswell"),
            env(&[("OPENBLAS_CORETYPE", "Haswell")]),
        )
        .unwrap();
        assert!(w.contains("OPENBLAS_CORETYPE=Haswell: unset it"), "{w}");
        assert!(w.contains("AVX2") && w.contains("AVX-512"), "{w}");
        // the same kernel chosen by the library: said, with no variable to blame
        let w = check(Tier::Avx512, &openblas("Zen"), env(&[])).unwrap();
        assert!(w.contains("not forced by any variable"), "{w}");
    }

    #[test]
    fn a_kernel_matching_the_cpu_or_unknown_is_silent() {
        assert!(check(Tier::Avx2, &openblas("Haswell"), env(&[])).is_none());
        assert!(check(Tier::Avx2, &openblas("SkylakeX"), env(&[])).is_none());
        assert!(check(Tier::Avx512, &openblas("Armv8"), env(&[])).is_none());
        let other = BlasKernel {
            library: "BLIS 0.9".into(),
            kernel: None,
        };
        assert!(check(Tier::Avx512, &other, env(&[])).is_none());
    }

    #[test]
    fn mkl_paths_forced_by_its_variables() {
        let mkl = BlasKernel {
            library: "Intel(R) oneAPI Math Kernel Library 2024".into(),
            kernel: None,
        };
        let w = check(
            Tier::Avx512,
            &mkl,
            env(&[("MKL_ENABLE_INSTRUCTIONS", "AVX2")]),
        )
        .unwrap();
        assert!(w.contains("MKL_ENABLE_INSTRUCTIONS=AVX2"), "{w}");
        let w = check(Tier::Avx2, &mkl, env(&[("MKL_CBWR", "COMPATIBLE")])).unwrap();
        assert!(w.contains("MKL_CBWR=COMPATIBLE"), "{w}");
        assert!(check(Tier::Avx512, &mkl, env(&[])).is_none());
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
