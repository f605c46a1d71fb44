//! Descriptive statistics as pure functions over `&[f64]`.
//!
//! A leaf module: no I/O, nothing else of the crate. Invariants: inputs may be in any order;
//! non-finite values are the caller's bug (debug-asserted); an empty input gives `None`.
//! Quantiles interpolate linearly between order statistics (R's type 7, numpy's default).

use serde::{Deserialize, Serialize};

/// Summary of a sample set. All values in the samples' unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub max: f64,
    /// 99th percentile (type-7 interpolation).
    pub p99: f64,
    /// Sample standard deviation (n − 1 denominator; 0 for one sample).
    pub stddev: f64,
    /// Coefficient of variation: stddev / mean (0 when the mean is 0).
    pub cv: f64,
}

/// Summarises `samples`; `None` if empty.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    debug_assert!(samples.iter().all(|x| x.is_finite()));
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let m = mean(samples)?;
    let sd = stddev(samples)?;
    Some(Summary {
        n: samples.len(),
        min: sorted[0],
        median: quantile_sorted(&sorted, 0.5),
        mean: m,
        max: sorted[sorted.len() - 1],
        p99: quantile_sorted(&sorted, 0.99),
        stddev: sd,
        cv: if m != 0.0 { sd / m.abs() } else { 0.0 },
    })
}

/// Arithmetic mean; `None` if empty.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Sample standard deviation (n − 1); 0 for a single value; `None` if empty.
pub fn stddev(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if xs.len() < 2 {
        return Some(0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// Median; `None` if empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    quantile(xs, 0.5)
}

/// The q-quantile (0 ≤ q ≤ 1, clamped) with linear interpolation; `None` if empty.
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(quantile_sorted(&sorted, q))
}

/// The q-quantile of already sorted data. Panics on empty input (callers check).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let q = q.clamp(0.0, 1.0);
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Minimum, maximum and the index of each (first occurrence); `None` if empty.
pub fn argmin_argmax(xs: &[f64]) -> Option<(usize, usize)> {
    if xs.is_empty() {
        return None;
    }
    let mut lo = 0;
    let mut hi = 0;
    for (i, x) in xs.iter().enumerate() {
        if *x < xs[lo] {
            lo = i;
        }
        if *x > xs[hi] {
            hi = i;
        }
    }
    Some((lo, hi))
}

/// The ratio of two positive quantities measured in several runs each (`num`, `den`: one
/// value per run, ≥ 2 a side), with a `confidence` interval that holds both sides' run-to-run
/// spread: the ratio of geometric means and Welch's t on the logarithms (to first order
/// CV(ratio)² = CV(num)²/n + CV(den)²/m). Returns (ratio, low, high); `None` with fewer than
/// 2 values a side or a value not positive and finite.
pub fn run_ratio(num: &[f64], den: &[f64], confidence: f64) -> Option<(f64, f64, f64)> {
    let logs = |v: &[f64]| -> Option<(f64, f64, f64)> {
        if v.len() < 2 || !v.iter().all(|x| x.is_finite() && *x > 0.0) {
            return None;
        }
        let n = v.len() as f64;
        let m = v.iter().map(|x| x.ln()).sum::<f64>() / n;
        let var = v.iter().map(|x| (x.ln() - m).powi(2)).sum::<f64>() / (n - 1.0);
        Some((m, var / n, n))
    };
    let (ma, va, na) = logs(num)?;
    let (mb, vb, nb) = logs(den)?;
    let se = (va + vb).sqrt();
    let denom = va * va / (na - 1.0) + vb * vb / (nb - 1.0);
    let df = if denom > 0.0 {
        ((va + vb).powi(2) / denom).max(1.0)
    } else {
        f64::INFINITY
    };
    let half = t_quantile(confidence, df) * se;
    let d = ma - mb;
    Some((d.exp(), (d - half).exp(), (d + half).exp()))
}

/// The two-sided quantile of Student's t for a `confidence` interval (0.9 → t₀.₉₅), the
/// normal one above 1e5 degrees of freedom (where statrs is unreliable).
pub fn t_quantile(confidence: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    let p = 0.5 + confidence.clamp(0.0, 1.0 - 1e-12) / 2.0;
    if !df.is_finite() || df > 1e5 {
        return Normal::standard().inverse_cdf(p);
    }
    match StudentsT::new(0.0, 1.0, df.max(1.0)) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => Normal::standard().inverse_cdf(p),
    }
}

/// Deterministic pseudo-random numbers (SplitMix64) with Box–Muller normals, for synthetic
/// samples with known truth in tests and benches: reproducible from a seed, no dependency.
/// Not for anything that must be unpredictable.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Uniform in (0, 1), never exactly 0 or 1 (so `ln` is finite).
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal.
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ratios_hold_both_sides_spread() {
        // identical runs: the interval is the point
        let (r, lo, hi) = run_ratio(&[2.0, 2.0], &[1.0, 1.0], 0.9).unwrap();
        assert_eq!((r, lo, hi), (2.0, 2.0, 2.0));
        // a noisy denominator widens the interval though the numerator is exact
        let (r, lo, hi) = run_ratio(&[2.0, 2.0, 2.0], &[0.8, 1.25, 1.0], 0.9).unwrap();
        assert!(
            (r - 2.0).abs() < 1e-12 && lo < 1.6 && hi > 2.5,
            "{r} {lo} {hi}"
        );
        assert!(run_ratio(&[1.0], &[1.0, 2.0], 0.9).is_none());
        assert!(run_ratio(&[1.0, 0.0], &[1.0, 2.0], 0.9).is_none());
        assert!((t_quantile(0.9, f64::INFINITY) - 1.6449).abs() < 1e-3);
        assert!((t_quantile(0.9, 4.0) - 2.1318).abs() < 1e-3);
    }

    #[test]
    fn known_values() {
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.n, 4);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 4.0);
        assert_eq!(s.median, 2.5);
        assert_eq!(s.mean, 2.5);
        assert!((s.stddev - 1.290_994_448_735_805_6).abs() < 1e-12);
        assert!((s.p99 - 3.97).abs() < 1e-12);
        assert!((s.cv - s.stddev / 2.5).abs() < 1e-15);
    }

    #[test]
    fn edge_cases() {
        assert!(summarize(&[]).is_none());
        let one = summarize(&[7.0]).unwrap();
        assert_eq!(
            (one.min, one.median, one.max, one.p99, one.stddev),
            (7.0, 7.0, 7.0, 7.0, 0.0)
        );
        assert_eq!(summarize(&[0.0, 0.0]).unwrap().cv, 0.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 2.0), Some(3.0));
        assert_eq!(quantile(&[1.0, 2.0, 3.0], -1.0), Some(1.0));
        assert_eq!(argmin_argmax(&[3.0, 1.0, 5.0, 1.0]), Some((1, 2)));
    }

    #[test]
    fn order_invariant_and_bounded() {
        // A cheap property check over many deterministic pseudo-random sets.
        let mut state = 0x1234_5678_u64;
        for len in 1..60 {
            let xs: Vec<f64> = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (state >> 11) as f64 / (1u64 << 53) as f64
                })
                .collect();
            let mut rev = xs.clone();
            rev.reverse();
            let a = summarize(&xs).unwrap();
            let b = summarize(&rev).unwrap();
            assert_eq!(a.median, b.median);
            assert_eq!(a.p99, b.p99);
            assert!(a.min <= a.median && a.median <= a.max);
            assert!(a.min <= a.mean && a.mean <= a.max);
            assert!(a.median <= a.p99 && a.p99 <= a.max);
        }
    }
}
