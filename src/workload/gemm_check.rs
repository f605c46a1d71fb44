//! GEMM inputs with exactly known products, and the sampled check against an f64 reference.
//!
//! Entries are integers in [−2, 2], so every partial sum of a k-term inner product is an
//! integer of magnitude ≤ 4k: exact in the accumulation type whenever 4k ≤ 2^p (f32: k ≤ 4M).
//! The check is then exact (tolerance 0) for any summation order or blocking. Beyond that
//! bound the tolerance is the classical worst-case bound γ_k = k·u / (1 − k·u) relative to
//! Σ|a||b| (or, where k·u ≥ 1/2, the probabilistic bound 4·sqrt(k)·u).
//!
//! GEMM speed does depend on the values: on an H200 (2026-11-26, results/gpu/) cuBLAS ran
//! bf16/f16 products of these small integers 1.15–1.24× and f64 1.14–1.18× faster than PyTorch
//! on uniform random inputs, f32 (no tensor cores) alike — fewer bits switching draw less power,
//! so the clocks stay higher. So the timed iterations use [`dense_entry`] operands (every
//! mantissa bit in play, as real data), and the checked iterations reload these exact ones.

use crate::backend::HostBuf;
use crate::params::{Dtype, MatmulShape};

/// Entry (i, k) of matrix A number `seed` (rows counted globally for strong scaling).
#[inline]
pub fn a_entry(seed: u64, i: u64, k: u64) -> f64 {
    ((i.wrapping_mul(7) + k.wrapping_mul(3) + seed.wrapping_mul(11)) % 5) as f64 - 2.0
}

/// Entry (k, j) of matrix B number `seed`.
#[inline]
pub fn b_entry(seed: u64, k: u64, j: u64) -> f64 {
    ((k.wrapping_mul(5) + j.wrapping_mul(11) + seed.wrapping_mul(3) + 1) % 5) as f64 - 2.0
}

/// Fills a row-major m×k block of A (global rows from `row0`) into `buf` at `at`.
pub fn fill_a(buf: &mut HostBuf, at: usize, seed: u64, row0: u64, m: u64, k: u64) {
    buf.fill_range(at, (m * k) as usize, |x| {
        let x = x as u64;
        a_entry(seed, row0 + x / k, x % k)
    });
}

/// Fills a row-major k×n B into `buf` at `at`.
pub fn fill_b(buf: &mut HostBuf, at: usize, seed: u64, k: u64, n: u64) {
    buf.fill_range(at, (k * n) as usize, |x| {
        let x = x as u64;
        b_entry(seed, x / n, x % n)
    });
}

/// A timing operand entry: pseudo-random in [−1, 1) with a full mantissa (SplitMix64 of the
/// seed and the element's index), so the timed GEMMs switch as many bits as real data.
#[inline]
pub fn dense_entry(seed: u64, x: u64) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(x.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add(0x632B_E59B_D9B4_E019);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0
}

/// Fills `len` timing entries (see [`dense_entry`]) into `buf` at `at`.
pub fn fill_dense(buf: &mut HostBuf, at: usize, seed: u64, len: usize) {
    buf.fill_range(at, len, |x| dense_entry(seed, x as u64));
}

/// Relative tolerance for a k-term inner product accumulated in `acc` (0 = exact).
pub fn tolerance(acc: Dtype, k: u64) -> f64 {
    let bits = acc.exact_integer_bits();
    if bits >= 62 || 4 * k <= 1u64 << bits {
        return 0.0;
    }
    let u = 2f64.powi(-(bits as i32));
    let ku = k as f64 * u;
    if ku < 0.5 {
        ku / (1.0 - ku)
    } else {
        // No worst-case bound exists once k·u nears 1; use the probabilistic one (Higham and
        // Mary): errors grow like sqrt(k)·u.
        (4.0 * (k as f64).sqrt() * u).min(1.0)
    }
}

/// Relative tolerance for a k-term product accumulated in `acc` and stored in `out`:
/// [`tolerance`], plus one rounding to `out` where `out` is narrower than `acc` and results can
/// exceed its exact integers (f16/bf16 products of an f32-accumulating GPU GEMM). The rounding
/// is at most `out`'s unit roundoff relative to |c| ≤ Σ|a||b|, which the check compares with.
pub fn tolerance_stored(acc: Dtype, out: Dtype, k: u64) -> f64 {
    let t = tolerance(acc, k);
    let bits = out.exact_integer_bits();
    if bits >= acc.exact_integer_bits() || 4 * k <= 1u64 << bits {
        return t;
    }
    t + 2f64.powi(-(bits as i32))
}

/// Positions (row, col) checked in an m×n product: the four corners and `samples` others
/// spread by a fixed pseudo-random sequence (the same on every run).
pub fn sample_positions(m: u64, n: u64, samples: usize) -> Vec<(u64, u64)> {
    let mut out = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15 ^ (m << 20) ^ n;
    for _ in 0..samples {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (s >> 33) % m;
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let c = (s >> 33) % n;
        out.push((r, c));
    }
    out
}

/// Counts sampled entries of `c` (row-major, at `at`, m×n) that differ from the reference
/// product. `a(i, k)` and `b(k, j)` give the inputs (local row i); `tol` is relative to Σ|a||b|.
pub fn count_wrong(
    c: &HostBuf,
    at: usize,
    shape: MatmulShape,
    samples: usize,
    tol: f64,
    a: impl Fn(u64, u64) -> f64,
    b: impl Fn(u64, u64) -> f64,
) -> u64 {
    let MatmulShape { m, n, k } = shape;
    if m == 0 || n == 0 {
        return 0;
    }
    let mut wrong = 0;
    for (i, j) in sample_positions(m, n, samples) {
        let mut want = 0.0f64;
        let mut mag = 0.0f64;
        for kk in 0..k {
            let t = a(i, kk) * b(kk, j);
            want += t;
            mag += t.abs();
        }
        let got = c.get(at + (i * n + j) as usize);
        let ok = if tol == 0.0 {
            got == want
        } else {
            (got - want).abs() <= tol * mag.max(1.0)
        };
        if !ok {
            wrong += 1;
        }
    }
    wrong
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_entries_use_the_whole_mantissa_and_the_whole_range() {
        let xs: Vec<f64> = (0..4096).map(|x| dense_entry(1, x)).collect();
        assert!(xs.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
        // Not the check pattern's small integers: almost every entry has low mantissa bits set.
        let busy = xs
            .iter()
            .filter(|x| (*x * 2f64.powi(40)).fract() != 0.0)
            .count();
        assert!(busy > 4000, "{busy} of 4096 use low mantissa bits");
        assert!(xs.iter().filter(|x| **x < -0.5).count() > 900);
        assert!(xs.iter().filter(|x| **x > 0.5).count() > 900);
        // Deterministic, and the seed matters.
        assert_eq!(dense_entry(1, 7), xs[7]);
        assert_ne!(dense_entry(2, 7), xs[7]);
    }

    fn naive(shape: MatmulShape, seed: u64) -> HostBuf {
        let MatmulShape { m, n, k } = shape;
        HostBuf::from_fn(Dtype::F64, (m * n) as usize, |x| {
            let (i, j) = (x as u64 / n, x as u64 % n);
            (0..k)
                .map(|kk| a_entry(seed, i, kk) * b_entry(seed, kk, j))
                .sum()
        })
        .unwrap()
    }

    #[test]
    fn exact_product_passes_and_a_wrong_entry_fails() {
        let shape = MatmulShape { m: 17, n: 9, k: 33 };
        let mut c = naive(shape, 3);
        let a = |i, k| a_entry(3, i, k);
        let b = |k, j| b_entry(3, k, j);
        assert_eq!(count_wrong(&c, 0, shape, 200, 0.0, a, b), 0);
        // corrupt a corner (always sampled)
        c.set(0, c.get(0) + 1.0);
        assert!(count_wrong(&c, 0, shape, 200, 0.0, a, b) >= 1);
    }

    #[test]
    fn entries_span_the_range_and_vary() {
        let vals: std::collections::BTreeSet<i64> =
            (0..50).map(|i| a_entry(0, i, 3) as i64).collect();
        assert_eq!(vals.into_iter().collect::<Vec<_>>(), vec![-2, -1, 0, 1, 2]);
        assert_ne!(a_entry(0, 1, 1), a_entry(1, 1, 1));
    }

    #[test]
    fn tolerance_is_zero_while_exact() {
        assert_eq!(tolerance(Dtype::F32, 4096), 0.0);
        assert_eq!(tolerance(Dtype::F32, 1 << 22), 0.0);
        assert!(tolerance(Dtype::F32, 1 << 23) > 0.0);
        assert_eq!(tolerance(Dtype::F64, 1 << 40), 0.0);
        assert!(tolerance(Dtype::F16, 4096) > 0.0);
    }

    #[test]
    fn narrow_results_of_a_wide_accumulator_allow_one_rounding() {
        // unchanged where the result type is the accumulator (CPU GEMMs)
        for d in [Dtype::F32, Dtype::F64] {
            for k in [16, 4096, 1 << 23] {
                assert_eq!(tolerance_stored(d, d, k), tolerance(d, k));
            }
        }
        // f16 results exact while 4k ≤ 2^11; beyond, one f16 rounding of an exact f32 sum
        assert_eq!(tolerance_stored(Dtype::F32, Dtype::F16, 512), 0.0);
        let k = 4096u64;
        let tol = tolerance_stored(Dtype::F32, Dtype::F16, k);
        assert_eq!(tol, 2f64.powi(-11));
        // batch_matmul's A·A accumulated exactly, then rounded to f16, passes; the bare
        // accumulator's tolerance (0) would count it wrong (|c| reaches 2k here)
        let shape = MatmulShape { m: 4, n: 4, k };
        let mut c = HostBuf::zeros(Dtype::F16, 16).unwrap();
        for i in 0..4 {
            for j in 0..4 {
                let exact: f64 = (0..k).map(|l| a_entry(1, i, l) * a_entry(1, l, j)).sum();
                c.set((i * 4 + j) as usize, exact);
            }
        }
        let (a, b) = (|i, l| a_entry(1, i, l), |l, j| a_entry(1, l, j));
        assert_eq!(count_wrong(&c, 0, shape, 32, tol, a, b), 0);
        assert!(
            count_wrong(&c, 0, shape, 32, 0.0, a, b) > 0,
            "no entry needed rounding"
        );
        // bf16: 8 bits
        assert_eq!(
            tolerance_stored(Dtype::F32, Dtype::Bf16, 4096),
            2f64.powi(-8)
        );
    }

    #[test]
    fn samples_are_in_bounds_and_deterministic() {
        let a = sample_positions(5, 7, 100);
        assert_eq!(a, sample_positions(5, 7, 100));
        assert!(a.iter().all(|(r, c)| *r < 5 && *c < 7));
        assert_eq!(a.len(), 104);
    }
}
