//! The measured half of the GEMM-kernel finding (issue 48): when the BLAS runs an older
//! kernel than the CPU, the finding names a fix; this times the fix that needs no restart
//! (`--gemm gemm-crate`) against the library on one square f32 product, in alternating pairs,
//! so the user reads what the fix gives on this machine rather than a promise.

use super::blas::Blas;
use super::crate_provider::CrateGemm;
use crate::backend::GemmBatch;
use crate::params::MatmulShape;
use std::time::Instant;

/// Side of the square f32 product: ~113 MFLOP, milliseconds on any kernel from SSE up, and
/// larger than the small-matrix paths some libraries take.
pub const SIDE: usize = 384;
/// Alternating pairs timed after one untimed call of each (the median of their ratios).
pub const PAIRS: usize = 5;
/// Each timed sample repeats the call for at least this long.
const SAMPLE_S: f64 = 0.01;
const MAX_REPS: usize = 64;
/// A library slower than this per call makes the check cost more than it is worth at start-up.
const MAX_CALL_S: f64 = 0.25;

/// What the check measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Speedup {
    /// Median over the pairs of (library's time / crate's time).
    pub ratio: f64,
    pub blas_gflops: f64,
    pub crate_gflops: f64,
    pub threads: usize,
    /// Wall time the whole check took.
    pub spent_s: f64,
}

/// The outcome: a measurement, or why none was made.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Measured(Speedup),
    Skipped(String),
}

/// Median of the per-pair ratios `slow[i] / fast[i]` (pairs with a zero time are dropped);
/// `None` without a usable pair.
pub fn median_pair_ratio(slow_s: &[f64], fast_s: &[f64]) -> Option<f64> {
    let mut r: Vec<f64> = slow_s
        .iter()
        .zip(fast_s)
        .filter(|(s, f)| **s > 0.0 && **f > 0.0 && s.is_finite() && f.is_finite())
        .map(|(s, f)| s / f)
        .collect();
    if r.is_empty() {
        return None;
    }
    r.sort_by(f64::total_cmp);
    let n = r.len();
    Some(if n % 2 == 1 {
        r[n / 2]
    } else {
        (r[n / 2 - 1] + r[n / 2]) / 2.0
    })
}

/// Seconds per call of `reps` calls of `f`.
fn timed(reps: usize, c: &mut [f32], f: &dyn Fn(&mut [f32])) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        f(c);
    }
    t.elapsed().as_secs_f64() / reps as f64
}

/// The median of a set of seconds (non-empty).
fn median_s(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `lib` (at whatever thread count it was set to) and `crate_gemm` (device 0's pool)
/// on one SIDE³ f32 product each, alternating which goes first.
pub fn measure(lib: &Blas, crate_gemm: &CrateGemm, threads: usize) -> Outcome {
    let start = Instant::now();
    let n = SIDE;
    // Values in [-1, 1): no denormals, no zeros the kernels could skip.
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919 % 2048) as f32) / 1024.0 - 1.0)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i * 104_729 % 2048) as f32) / 1024.0 - 1.0)
        .collect();
    let mut c = vec![0f32; n * n];
    let batch = GemmBatch {
        shape: MatmulShape {
            m: n as u64,
            n: n as u64,
            k: n as u64,
        },
        count: 1,
        shared_b: false,
    };
    let run_blas = |c: &mut [f32]| {
        // SAFETY: a, b and c hold n·n elements each; c is a separate vector; n fits a C int.
        unsafe { lib.gemm(n, n, n, a.as_ptr(), b.as_ptr(), c.as_mut_ptr()) };
    };
    let run_crate = |c: &mut [f32]| {
        // SAFETY: as above; the batch is one n×n×n product over these vectors.
        unsafe { crate_gemm.run(0, batch, a.as_ptr(), b.as_ptr(), c.as_mut_ptr()) };
    };
    let first = timed(1, &mut c, &run_blas);
    if first > MAX_CALL_S {
        return Outcome::Skipped(format!(
            "not measured: one {n}×{n}×{n} call of the library took {first:.2} s"
        ));
    }
    let crate_first = timed(1, &mut c, &run_crate);
    // Each sample repeats the call until it spans SAMPLE_S: a 1 ms call alone is all jitter.
    let reps = |one_s: f64| ((SAMPLE_S / one_s.max(1e-6)).ceil() as usize).clamp(1, MAX_REPS);
    let (rb, rc) = (reps(first), reps(crate_first));
    let (mut lib_s, mut crate_s) = (Vec::new(), Vec::new());
    for p in 0..PAIRS {
        if p % 2 == 0 {
            lib_s.push(timed(rb, &mut c, &run_blas));
            crate_s.push(timed(rc, &mut c, &run_crate));
        } else {
            crate_s.push(timed(rc, &mut c, &run_crate));
            lib_s.push(timed(rb, &mut c, &run_blas));
        }
    }
    let flop = 2.0 * (n as f64).powi(3);
    match median_pair_ratio(&lib_s, &crate_s) {
        Some(ratio) => Outcome::Measured(Speedup {
            ratio,
            blas_gflops: flop / median_s(&lib_s) / 1e9,
            crate_gflops: flop / median_s(&crate_s) / 1e9,
            threads,
            spent_s: start.elapsed().as_secs_f64(),
        }),
        None => Outcome::Skipped("not measured: the timer read zero".into()),
    }
}

/// The sentence the finding gains.
pub fn sentence(o: &Outcome) -> String {
    match o {
        Outcome::Skipped(why) => format!("--gemm gemm-crate's speed-up {why}"),
        Outcome::Measured(s) => {
            let verdict = if s.ratio >= 1.0 {
                format!("{:.1}× as fast", s.ratio)
            } else {
                format!(
                    "slower ({:.2}×): keep the library and set the variable",
                    s.ratio
                )
            };
            format!(
                "measured here: --gemm gemm-crate ran a {SIDE}×{SIDE}×{SIDE} f32 GEMM at {:.1} GFLOP/s against the library's {:.1}, {verdict} (median of {PAIRS} alternating pairs of ≥ 10 ms, {} thread{}, {:.2} s)",
                s.crate_gflops,
                s.blas_gflops,
                s.threads,
                if s.threads == 1 { "" } else { "s" },
                s.spent_s
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_is_the_median_of_the_pairs() {
        assert_eq!(
            median_pair_ratio(&[4.0, 9.0, 2.0], &[1.0, 1.0, 1.0]),
            Some(4.0)
        );
        // One wild pair does not move it.
        assert_eq!(
            median_pair_ratio(&[4.0, 400.0, 5.0], &[1.0, 1.0, 1.0]),
            Some(5.0)
        );
        assert_eq!(median_pair_ratio(&[3.0, 5.0], &[1.0, 1.0]), Some(4.0));
        assert_eq!(median_pair_ratio(&[3.0, 0.0], &[1.0, 1.0]), Some(3.0));
        assert_eq!(median_pair_ratio(&[], &[]), None);
        assert_eq!(median_pair_ratio(&[0.0], &[1.0]), None);
    }

    #[test]
    fn the_sentence_gives_the_figures_and_a_slower_crate_is_said() {
        let s = Speedup {
            ratio: 6.04,
            blas_gflops: 12.0,
            crate_gflops: 72.5,
            threads: 1,
            spent_s: 0.06,
        };
        let t = sentence(&Outcome::Measured(s.clone()));
        assert!(
            t.contains("at 72.5 GFLOP/s against the library's 12.0, 6.0× as fast"),
            "{t}"
        );
        assert!(
            t.contains("median of 5 alternating pairs of ≥ 10 ms, 1 thread,"),
            "{t}"
        );
        let slow = sentence(&Outcome::Measured(Speedup {
            ratio: 0.5,
            threads: 2,
            ..s
        }));
        assert!(
            slow.contains("slower (0.50×)") && slow.contains("2 threads"),
            "{slow}"
        );
        let skipped = sentence(&Outcome::Skipped("not measured: x".into()));
        assert!(
            skipped.starts_with("--gemm gemm-crate's speed-up not measured"),
            "{skipped}"
        );
    }

    #[test]
    fn the_results_format_splits_every_sentence_off_its_finding() {
        let finding = "GEMM runs OpenBLAS's Prescott kernels, which use SSE; this CPU runs AVX2: forced by OPENBLAS_CORETYPE=Prescott; fix: set OPENBLAS_CORETYPE=Zen";
        let measured = Outcome::Measured(Speedup {
            ratio: 3.0,
            blas_gflops: 30.0,
            crate_gflops: 90.0,
            threads: 1,
            spent_s: 0.1,
        });
        for o in [measured, Outcome::Skipped("not measured: x".into())] {
            let t = sentence(&o);
            let w = format!("{finding}; {t}");
            assert_eq!(
                crate::results::ceilings::split_measured_fix(&w),
                (finding, Some(t.as_str()))
            );
        }
    }

    #[test]
    fn a_real_measurement_on_this_machine_is_well_formed() {
        // Figures depend on the machine; only the shape of the result is checked.
        let Ok(lib) = Blas::load() else {
            eprintln!("no CBLAS library here: the live check is not exercised");
            return;
        };
        let plan = crate::backend::DevicePlan::unbound(1, 1);
        let g = CrateGemm::new(&plan).unwrap();
        lib.set_threads(1);
        match measure(&lib, &g, 1) {
            Outcome::Measured(s) => {
                assert!(
                    s.ratio > 0.0 && s.blas_gflops > 0.0 && s.crate_gflops > 0.0,
                    "{s:?}"
                );
                eprintln!("{}", sentence(&Outcome::Measured(s)));
            }
            Outcome::Skipped(why) => assert!(why.starts_with("not measured"), "{why}"),
        }
    }
}
