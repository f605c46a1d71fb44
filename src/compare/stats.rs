//! The statistics behind `compare`, as pure functions: the relative change of two medians with
//! a confidence interval, the Mann–Whitney U test, run-level changes on the log scale (Welch,
//! paired, against a prediction interval; floored at the timer's resolution), the band test
//! (shifted one-sided nulls at the noise band's edges), the minimum detectable effect and the
//! runs that reach it, and multiple-comparison corrections.
//!
//! A leaf module: no I/O, nothing of the crate but [`crate::stats`]. Inputs are sample sets of
//! one case (seconds, GB/s or GFLOP/s); the functions never panic on user data (they return
//! `None` when a sample set cannot be analysed).
//!
//! Why these estimators (the performance target is 10,000 cases × 100 samples in well under a
//! second, which rules out resampling thousands of times per case):
//! - **Interval**: the *exact* bootstrap distribution of a sample median is known in closed form
//!   (Maritz & Jarrett 1978): a resample's median is the order statistic x₍ᵢ₎ with a probability
//!   given by the regularised incomplete beta function, which depends only on n. Its variance is
//!   therefore the variance an infinite bootstrap would give, at O(n) cost and with no
//!   resampling noise. It is computed on log values (the median commutes with the logarithm), so
//!   the interval is for ln(median_b / median_a) and becomes a relative change by exponentiating;
//!   the quantile is Student's t with Welch–Satterthwaite degrees of freedom.
//! - **p-value**: Mann–Whitney U (exact for small samples without ties, normal approximation with
//!   tie and continuity corrections otherwise). It is distribution-free, so under "nothing
//!   changed" (both sample sets drawn from one distribution) its p-values are valid whatever the
//!   shape of the timing noise (skewed, heavy-tailed): the false-alarm guarantee of the Holm and
//!   Benjamini–Hochberg corrections rests on it, not on the interval.

// One file per job: the median's bootstrap interval here, run-level changes on the log scale
// ([`runs`]; trimmed so one wild run cannot overturn them: [`trimmed`]), the band test and the power it has ([`band`]), Mann–Whitney ([`rank`]) and the
// correction over the cases ([`correction`]). Callers see one flat module.
mod band;
mod correction;
mod rank;
mod runs;
mod shift;
#[cfg(test)]
mod tests;
mod trimmed;

pub use band::*;
pub use correction::*;
pub use rank::*;
pub use runs::*;
pub use shift::*;
pub use trimmed::*;

use crate::stats::quantile_sorted;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Above this many degrees of freedom Student's t is replaced by the normal distribution:
/// statrs' `StudentsT::inverse_cdf` is wrong near 1e7 degrees of freedom and hangs at 1e9/∞,
/// and the two differ by < 1e-5 relative here.
const T_TO_NORMAL_DF: f64 = 1e5;

/// The relative change of two medians with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianChange {
    /// Median of the baseline samples.
    pub median_a: f64,
    /// Median of the candidate samples.
    pub median_b: f64,
    /// median_b / median_a − 1.
    pub change: f64,
    /// Lower end of the interval for `change`.
    pub ci_low: f64,
    /// Upper end of the interval for `change`.
    pub ci_high: f64,
    /// Standard error of ln(median_b / median_a).
    pub se_log: f64,
    /// Welch–Satterthwaite degrees of freedom used for the quantile, rounded down (∞ when the
    /// error is 0).
    pub df: f64,
}

/// Probabilities that the median of a bootstrap resample of n sorted values is the i-th value
/// (i = 0..n). The resample median is taken as the order statistic m = ⌈n/2⌉ (the middle one
/// for odd n; the lower middle for even n). Depends only on n, so callers may cache it.
///
/// P(X*₍ₘ₎ ≤ x₍ᵢ₎) = P(at least m of n draws ≤ x₍ᵢ₎) = I_{i/n}(m, n − m + 1).
pub fn median_bootstrap_weights(n: usize) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    let m = n.div_ceil(2) as f64;
    let b = n as f64 - m + 1.0;
    let nf = n as f64;
    let mut w = Vec::with_capacity(n);
    let mut prev = 0.0;
    for i in 1..=n {
        let cdf = if i == n {
            1.0
        } else {
            statrs::function::beta::beta_reg(m, b, i as f64 / nf)
        };
        // Weights below 1e-15 are dropped: their share of the variance is negligible, and
        // skipping them saves most of the logarithms for large n.
        let p = cdf - prev;
        w.push(if p < 1e-15 { 0.0 } else { p });
        prev = cdf;
    }
    w
}

/// Variance of the bootstrap median of `sorted` (ascending) given its
/// [`median_bootstrap_weights`], in the unit of the values squared.
pub fn weighted_variance(sorted: &[f64], weights: &[f64]) -> f64 {
    debug_assert_eq!(sorted.len(), weights.len());
    let mean: f64 = sorted.iter().zip(weights).map(|(x, w)| w * x).sum();
    sorted
        .iter()
        .zip(weights)
        .map(|(x, w)| w * (x - mean) * (x - mean))
        .sum::<f64>()
        .max(0.0)
}

/// The two-sided quantile of Student's t for a `confidence` interval (e.g. 0.95 → t₀.₉₇₅),
/// switching to the normal distribution above [`T_TO_NORMAL_DF`] degrees of freedom.
pub fn t_quantile(confidence: f64, df: f64) -> f64 {
    let p = 0.5 + confidence.clamp(0.0, 1.0 - 1e-12) / 2.0;
    if !df.is_finite() || df > T_TO_NORMAL_DF {
        return Normal::standard().inverse_cdf(p);
    }
    match StudentsT::new(0.0, 1.0, df.max(1.0)) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => Normal::standard().inverse_cdf(p),
    }
}

/// Relative change of the median from `a` (baseline) to `b` (candidate) with a `confidence`
/// interval, from ascending-sorted positive samples and their bootstrap weights (see
/// [`median_bootstrap_weights`]). `None` if a side has fewer than 2 samples or a non-positive
/// or non-finite value (the interval lives on the log scale).
pub fn median_change(
    a_sorted: &[f64],
    a_weights: &[f64],
    b_sorted: &[f64],
    b_weights: &[f64],
    confidence: f64,
) -> Option<MedianChange> {
    median_change_with(a_sorted, a_weights, b_sorted, b_weights, |df| {
        t_quantile(confidence, df)
    })
}

/// [`median_change`] with the two-sided quantile given by `quantile(df)`, so callers can
/// cache it (statrs inverts Student's t iteratively, which would dominate the cost). The
/// degrees of freedom passed are whole numbers, rounded down (the conservative side), or ∞.
pub fn median_change_with(
    a_sorted: &[f64],
    a_weights: &[f64],
    b_sorted: &[f64],
    b_weights: &[f64],
    quantile: impl FnOnce(f64) -> f64,
) -> Option<MedianChange> {
    let usable = |s: &[f64], w: &[f64]| {
        s.len() >= 2 && s.len() == w.len() && s.iter().all(|x| x.is_finite() && *x > 0.0)
    };
    if !usable(a_sorted, a_weights) || !usable(b_sorted, b_weights) {
        return None;
    }
    let median_a = quantile_sorted(a_sorted, 0.5);
    let median_b = quantile_sorted(b_sorted, 0.5);
    let log_var = |s: &[f64], w: &[f64]| {
        let (logs, weights): (Vec<f64>, Vec<f64>) = s
            .iter()
            .zip(w)
            .filter(|(_, w)| **w > 0.0)
            .map(|(x, w)| (x.ln(), *w))
            .unzip();
        weighted_variance(&logs, &weights)
    };
    let va = log_var(a_sorted, a_weights);
    let vb = log_var(b_sorted, b_weights);
    let se_log = (va + vb).sqrt();
    let na = (a_sorted.len() - 1) as f64;
    let nb = (b_sorted.len() - 1) as f64;
    let denom = va * va / na + vb * vb / nb;
    let df = if denom > 0.0 {
        ((va + vb) * (va + vb) / denom).floor().max(1.0)
    } else {
        f64::INFINITY
    };
    let d = (median_b / median_a).ln();
    let half = if se_log > 0.0 {
        quantile(df) * se_log
    } else {
        0.0
    };
    Some(MedianChange {
        median_a,
        median_b,
        change: d.exp() - 1.0,
        ci_low: (d - half).exp() - 1.0,
        ci_high: (d + half).exp() - 1.0,
        se_log,
        df,
    })
}
