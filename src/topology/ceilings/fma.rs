//! The CPU's floating-point peak, measured: independent chains of vector fused multiply-adds
//! (plain multiply + add where the ISA has no FMA), enough chains to cover the FMA latency
//! times the number of FMA pipes on every current x86 core (latency 4–5, 2 pipes: 8–10), so
//! the pipes, not the dependency chain, set the rate.

use std::hint::black_box;
use std::time::Instant;

/// Independent accumulators per thread: ≥ latency × pipes, and with the two operands within
/// the 16 vector registers of AVX2 (32 with AVX-512).
const CHAINS: usize = 12;

/// A vector instruction set the kernel can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// SSE2: 128-bit, separate multiply and add (no FMA).
    Sse2,
    /// AVX2 with FMA3: 256-bit fused multiply-add.
    Avx2Fma,
    /// AVX-512F: 512-bit fused multiply-add.
    Avx512,
}

impl Isa {
    pub fn name(self) -> &'static str {
        match self {
            Isa::Sse2 => "sse2",
            Isa::Avx2Fma => "avx2+fma",
            Isa::Avx512 => "avx512f",
        }
    }
    /// Vector width, bytes.
    fn width_bytes(self) -> usize {
        match self {
            Isa::Sse2 => 16,
            Isa::Avx2Fma => 32,
            Isa::Avx512 => 64,
        }
    }
}

/// Floating-point precision of a peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Precision {
    F32,
    F64,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
    fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
}

/// The instruction sets this CPU runs, oldest first (runtime detection, as the kernels
/// themselves are compiled for each with `target_feature`).
pub fn supported() -> Vec<Isa> {
    let mut v = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        v.push(Isa::Sse2); // part of x86-64
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            v.push(Isa::Avx2Fma);
        }
        if is_x86_feature_detected!("avx512f") {
            v.push(Isa::Avx512);
        }
    }
    v
}

/// FLOPs one call of [`kernel`] does for `iters` iterations: every chain does one
/// multiply-add (2 FLOPs) per lane per iteration.
pub fn flops(isa: Isa, p: Precision, iters: u64) -> f64 {
    let lanes = (isa.width_bytes() / p.bytes()) as f64;
    iters as f64 * CHAINS as f64 * lanes * 2.0
}

/// Runs `iters` iterations of the kernel at `isa` and `p`; returns a value the caller must
/// consume (so the work is not removed). `None` when the CPU lacks `isa`.
pub fn kernel(isa: Isa, p: Precision, iters: u64) -> Option<f64> {
    if !supported().contains(&isa) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // multiply by nearly 1 and add nearly 0: the values stay normal and bounded
        let (m, a) = (black_box(0.999_999_9), black_box(1e-7));
        // SAFETY: `supported()` just confirmed the CPU has the instructions each kernel
        // is compiled for.
        let r = unsafe {
            match (isa, p) {
                (Isa::Sse2, Precision::F64) => x86::sse2_f64(iters, m, a),
                (Isa::Sse2, Precision::F32) => x86::sse2_f32(iters, m as f32, a as f32),
                (Isa::Avx2Fma, Precision::F64) => x86::avx2_f64(iters, m, a),
                (Isa::Avx2Fma, Precision::F32) => x86::avx2_f32(iters, m as f32, a as f32),
                (Isa::Avx512, Precision::F64) => x86::avx512_f64(iters, m, a),
                (Isa::Avx512, Precision::F32) => x86::avx512_f32(iters, m as f32, a as f32),
            }
        };
        Some(r)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, iters);
        None
    }
}

/// GFLOP/s of this thread at `isa` and `p`: the kernel calibrated to about `target_s`, then
/// the best of `repeats` timed runs (the peak is what the core can do, so the best run is
/// the estimate, as STREAM takes the minimum time). `None` when the CPU lacks `isa`.
pub fn measure_thread(isa: Isa, p: Precision, target_s: f64, repeats: usize) -> Option<f64> {
    let mut iters: u64 = 1 << 12;
    // calibrate: grow until one run takes a tenth of the target
    loop {
        let t = Instant::now();
        black_box(kernel(isa, p, iters)?);
        let s = t.elapsed().as_secs_f64();
        if s >= target_s / 10.0 || iters >= 1 << 40 {
            iters = ((iters as f64) * target_s / s.max(1e-9)).max(1.0) as u64;
            break;
        }
        iters *= 4;
    }
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        // Timed by the thread's own CPU time: on a busy host a 10 ms run is often
        // descheduled, and wall time then reads a peak far below the core's (seen: f32 one CPU
        // under f64, a GEMM at 1.97 of its "peak"). The kernel does no I/O and never sleeps,
        // so its CPU time is the time the core spent on it.
        let (t, cpu) = (Instant::now(), thread_cpu_s());
        black_box(kernel(isa, p, iters)?);
        let s = match (cpu, thread_cpu_s()) {
            (Some(a), Some(b)) if b > a => b - a,
            _ => t.elapsed().as_secs_f64(),
        };
        best = best.min(s);
    }
    Some(flops(isa, p, iters) / best / 1e9)
}

/// This thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID), if the clock is there.
pub(super) fn thread_cpu_s() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::CHAINS;
    use std::arch::x86_64::*;

    // the AVX-512 kernels below spell out 12 chains in assembly
    const _: () = assert!(CHAINS == 12);

    /// Sums the chains so nothing is dead code.
    macro_rules! chains {
        ($splat:ident, $op:expr, $reduce:expr, $iters:expr, $m:expr, $a:expr) => {{
            let (m, a) = ($splat($m), $splat($a));
            let mut acc = [$splat(1.0); CHAINS];
            for _ in 0..$iters {
                for x in acc.iter_mut() {
                    *x = $op(*x, m, a);
                }
            }
            acc.iter().map(|x| $reduce(*x)).sum()
        }};
    }

    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn sse2_f64(iters: u64, m: f64, a: f64) -> f64 {
        chains!(
            _mm_set1_pd,
            |x, m, a| _mm_add_pd(_mm_mul_pd(x, m), a),
            _mm_cvtsd_f64,
            iters,
            m,
            a
        )
    }
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn sse2_f32(iters: u64, m: f32, a: f32) -> f64 {
        let s: f32 = chains!(
            _mm_set1_ps,
            |x, m, a| _mm_add_ps(_mm_mul_ps(x, m), a),
            _mm_cvtss_f32,
            iters,
            m,
            a
        );
        s as f64
    }
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2_f64(iters: u64, m: f64, a: f64) -> f64 {
        chains!(
            _mm256_set1_pd,
            |x, m, a| _mm256_fmadd_pd(x, m, a),
            _mm256_cvtsd_f64,
            iters,
            m,
            a
        )
    }
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2_f32(iters: u64, m: f32, a: f32) -> f64 {
        let s: f32 = chains!(
            _mm256_set1_ps,
            |x, m, a| _mm256_fmadd_ps(x, m, a),
            _mm256_cvtss_f32,
            iters,
            m,
            a
        );
        s as f64
    }
    /// AVX-512 in assembly: its intrinsics are stable only from Rust 1.89, above this crate's
    /// MSRV. The same 12 chains as the other kernels.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512_f64(iters: u64, m: f64, a: f64) -> f64 {
        let one: f64 = 1.0;
        let mut out = [0.0_f64; 8];
        // SAFETY: the caller checked avx512f; the pointers are to live locals of the element
        // size read or written (8 lanes into `out`); every register written is declared.
        unsafe {
            std::arch::asm!(
                "vbroadcastsd zmm30, [{m}]",
                "vbroadcastsd zmm31, [{a}]",
                "vbroadcastsd zmm0, [{one}]",
                "vmovapd zmm1, zmm0",
                "vmovapd zmm2, zmm0",
                "vmovapd zmm3, zmm0",
                "vmovapd zmm4, zmm0",
                "vmovapd zmm5, zmm0",
                "vmovapd zmm6, zmm0",
                "vmovapd zmm7, zmm0",
                "vmovapd zmm8, zmm0",
                "vmovapd zmm9, zmm0",
                "vmovapd zmm10, zmm0",
                "vmovapd zmm11, zmm0",
                "test {n}, {n}",
                "jz 3f",
                "2:",
                "vfmadd213pd zmm0, zmm30, zmm31",
                "vfmadd213pd zmm1, zmm30, zmm31",
                "vfmadd213pd zmm2, zmm30, zmm31",
                "vfmadd213pd zmm3, zmm30, zmm31",
                "vfmadd213pd zmm4, zmm30, zmm31",
                "vfmadd213pd zmm5, zmm30, zmm31",
                "vfmadd213pd zmm6, zmm30, zmm31",
                "vfmadd213pd zmm7, zmm30, zmm31",
                "vfmadd213pd zmm8, zmm30, zmm31",
                "vfmadd213pd zmm9, zmm30, zmm31",
                "vfmadd213pd zmm10, zmm30, zmm31",
                "vfmadd213pd zmm11, zmm30, zmm31",
                "dec {n}",
                "jnz 2b",
                "3:",
                "vaddpd zmm0, zmm0, zmm1",
                "vaddpd zmm0, zmm0, zmm2",
                "vaddpd zmm0, zmm0, zmm3",
                "vaddpd zmm0, zmm0, zmm4",
                "vaddpd zmm0, zmm0, zmm5",
                "vaddpd zmm0, zmm0, zmm6",
                "vaddpd zmm0, zmm0, zmm7",
                "vaddpd zmm0, zmm0, zmm8",
                "vaddpd zmm0, zmm0, zmm9",
                "vaddpd zmm0, zmm0, zmm10",
                "vaddpd zmm0, zmm0, zmm11",
                "vmovupd [{out}], zmm0",
                m = in(reg) &m,
                a = in(reg) &a,
                one = in(reg) &one,
                out = in(reg) out.as_mut_ptr(),
                n = inout(reg) iters => _,
                out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _, out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _, out("zmm30") _, out("zmm31") _,
                options(nostack),
            );
        }
        // lane 0 of the chains' sum, as the other kernels return
        out[0]
    }
    /// AVX-512 in assembly: its intrinsics are stable only from Rust 1.89, above this crate's
    /// MSRV. The same 12 chains as the other kernels.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512_f32(iters: u64, m: f32, a: f32) -> f64 {
        let one: f32 = 1.0;
        let mut out = [0.0_f32; 16];
        // SAFETY: the caller checked avx512f; the pointers are to live locals of the element
        // size read or written (16 lanes into `out`); every register written is declared.
        unsafe {
            std::arch::asm!(
                "vbroadcastss zmm30, [{m}]",
                "vbroadcastss zmm31, [{a}]",
                "vbroadcastss zmm0, [{one}]",
                "vmovaps zmm1, zmm0",
                "vmovaps zmm2, zmm0",
                "vmovaps zmm3, zmm0",
                "vmovaps zmm4, zmm0",
                "vmovaps zmm5, zmm0",
                "vmovaps zmm6, zmm0",
                "vmovaps zmm7, zmm0",
                "vmovaps zmm8, zmm0",
                "vmovaps zmm9, zmm0",
                "vmovaps zmm10, zmm0",
                "vmovaps zmm11, zmm0",
                "test {n}, {n}",
                "jz 3f",
                "2:",
                "vfmadd213ps zmm0, zmm30, zmm31",
                "vfmadd213ps zmm1, zmm30, zmm31",
                "vfmadd213ps zmm2, zmm30, zmm31",
                "vfmadd213ps zmm3, zmm30, zmm31",
                "vfmadd213ps zmm4, zmm30, zmm31",
                "vfmadd213ps zmm5, zmm30, zmm31",
                "vfmadd213ps zmm6, zmm30, zmm31",
                "vfmadd213ps zmm7, zmm30, zmm31",
                "vfmadd213ps zmm8, zmm30, zmm31",
                "vfmadd213ps zmm9, zmm30, zmm31",
                "vfmadd213ps zmm10, zmm30, zmm31",
                "vfmadd213ps zmm11, zmm30, zmm31",
                "dec {n}",
                "jnz 2b",
                "3:",
                "vaddps zmm0, zmm0, zmm1",
                "vaddps zmm0, zmm0, zmm2",
                "vaddps zmm0, zmm0, zmm3",
                "vaddps zmm0, zmm0, zmm4",
                "vaddps zmm0, zmm0, zmm5",
                "vaddps zmm0, zmm0, zmm6",
                "vaddps zmm0, zmm0, zmm7",
                "vaddps zmm0, zmm0, zmm8",
                "vaddps zmm0, zmm0, zmm9",
                "vaddps zmm0, zmm0, zmm10",
                "vaddps zmm0, zmm0, zmm11",
                "vmovups [{out}], zmm0",
                m = in(reg) &m,
                a = in(reg) &a,
                one = in(reg) &one,
                out = in(reg) out.as_mut_ptr(),
                n = inout(reg) iters => _,
                out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _, out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _, out("zmm30") _, out("zmm31") _,
                options(nostack),
            );
        }
        // lane 0 of the chains' sum, as the other kernels return
        out[0] as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_count_lanes_chains_and_two_per_fma() {
        // 12 chains × 4 f64 lanes × 2 FLOPs × 10 iterations
        assert_eq!(flops(Isa::Avx2Fma, Precision::F64, 10), 960.0);
        assert_eq!(flops(Isa::Avx512, Precision::F32, 1), 12.0 * 16.0 * 2.0);
        assert_eq!(flops(Isa::Sse2, Precision::F32, 1), 12.0 * 4.0 * 2.0);
    }

    #[test]
    fn every_supported_kernel_computes_the_chain_it_counts() {
        // one iteration: each lane is 1·m + a, summed over the chains (lane 0 of each)
        for isa in supported() {
            for p in [Precision::F32, Precision::F64] {
                let r = kernel(isa, p, 1).unwrap();
                let want = CHAINS as f64 * (0.999_999_9 + 1e-7);
                assert!((r - want).abs() < 1e-4, "{isa:?} {p:?}: {r}");
            }
        }
    }

    #[test]
    fn an_unsupported_isa_is_none_not_a_crash() {
        if !supported().contains(&Isa::Avx512) {
            assert!(kernel(Isa::Avx512, Precision::F64, 1).is_none());
            assert!(measure_thread(Isa::Avx512, Precision::F64, 0.001, 1).is_none());
        }
    }
}
