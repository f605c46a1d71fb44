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

use crate::stats::quantile_sorted;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Above this many degrees of freedom Student's t is replaced by the normal distribution:
/// statrs' `StudentsT::inverse_cdf` is wrong near 1e7 degrees of freedom and hangs at 1e9/∞,
/// and the two differ by < 1e-5 relative here.
const T_TO_NORMAL_DF: f64 = 1e5;

/// Largest n_a × n_b for which the exact Mann–Whitney distribution is used (when there are no
/// ties); beyond it the normal approximation is accurate to well under 1e-3.
pub const MW_EXACT_MAX_CELLS: usize = 2500;

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

/// A change between two sets of runs, judged on one value per run (see [`run_level_change`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunLevelChange {
    /// The change, its interval, and the two centres (geometric means of the per-run values).
    pub change: MedianChange,
    /// Two-sided p-value of Welch's t test on the log values.
    pub p_two_sided: f64,
}

/// Relative change from baseline runs to candidate runs, each run summarised by one positive
/// value (its median), with a `confidence` interval and a p-value.
///
/// Why run level: the samples of one run (batches of one job) share that run's state (its
/// memory placement, its core assignment, the machine's speed mode at the time), so their
/// spread misses run-to-run variance and an interval built from them is too narrow. The median
/// of each run already carries that run's within-run noise, so the spread of the per-run
/// medians holds both levels (nested design: var = σ²_between + σ²_within / n).
///
/// Method: Welch's t on ln(value) (timings are closer to log-normal than normal, and a ratio is
/// what is reported): d = mean(ln b) − mean(ln a), se² = s²_a/n_a + s²_b/n_b,
/// Welch–Satterthwaite degrees of freedom; the interval d ± t·se and the change exp(d) − 1.
/// `None` if a side has fewer than 2 runs or a value is not positive and finite.
pub fn run_level_change(a: &[f64], b: &[f64], confidence: f64) -> Option<RunLevelChange> {
    let ok = |v: &[f64]| v.len() >= 2 && v.iter().all(|x| x.is_finite() && *x > 0.0);
    if !ok(a) || !ok(b) {
        return None;
    }
    let moments = |v: &[f64]| {
        let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let var = logs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
        (mean, var, n)
    };
    let (ma, va, na) = moments(a);
    let (mb, vb, nb) = moments(b);
    let (sa, sb) = (va / na, vb / nb);
    let se_log = (sa + sb).sqrt();
    let denom = sa * sa / (na - 1.0) + sb * sb / (nb - 1.0);
    let df = if denom > 0.0 {
        // Not rounded: Welch's df is a real number and the t distribution takes it as one.
        ((sa + sb) * (sa + sb) / denom).max(1.0)
    } else {
        f64::INFINITY
    };
    let d = mb - ma;
    let (half, p) = if se_log > 0.0 {
        let t = d.abs() / se_log;
        (t_quantile(confidence, df) * se_log, t_two_sided_p(t, df))
    } else if d == 0.0 {
        (0.0, 1.0)
    } else {
        // Every run on each side gave the same value and the sides differ: no noise at all.
        (0.0, 0.0)
    };
    Some(RunLevelChange {
        change: MedianChange {
            median_a: ma.exp(),
            median_b: mb.exp(),
            change: d.exp() - 1.0,
            ci_low: (d - half).exp() - 1.0,
            ci_high: (d + half).exp() - 1.0,
            se_log,
            df,
        },
        p_two_sided: p,
    })
}

/// A change on the log scale with its standard error: what every run-level test below
/// starts from. `d` = ln(candidate centre / baseline centre); `sd_unit` is the spread of one
/// unit (one run, or one pair), so that the standard error with n units a side is about
/// `sd_unit` × √(2/n) (unpaired) or `sd_unit` / √n (paired), which is what
/// [`units_needed`] solves for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogChange {
    pub d: f64,
    pub se: f64,
    /// Degrees of freedom of the t distribution (∞ when the error is known exactly).
    pub df: f64,
    pub sd_unit: f64,
    /// Whether the standard error was raised to the timer's resolution (see [`floored_sd`]).
    pub floored: bool,
}

/// A side's standard deviation of log values, floored at the relative resolution of its
/// values: with a coarse timer (CUDA events step at ≈ 0.5 µs) identical run medians say
/// "below one step", not "no noise". Returns (sd, whether the floor was used).
pub fn floored_sd(sd: f64, relative_resolution: f64) -> (f64, bool) {
    let r = if relative_resolution.is_finite() {
        relative_resolution.max(0.0)
    } else {
        0.0
    };
    if r > sd {
        (r, true)
    } else {
        (sd, false)
    }
}

/// Mean and sample variance (n − 1) of the logarithms of positive finite values.
fn log_moments(v: &[f64]) -> Option<(f64, f64)> {
    if v.len() < 2 || !v.iter().all(|x| x.is_finite() && *x > 0.0) {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().map(|x| x.ln()).sum::<f64>() / n;
    let var = v.iter().map(|x| (x.ln() - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, var))
}

/// Welch's unpaired comparison of per-run values on the log scale, each side's sd floored at
/// its relative resolution (`res_a`, `res_b`: timer step / value; 0 when unknown). `None`
/// with fewer than 2 values a side or a value that is not positive and finite.
pub fn welch_log(a: &[f64], b: &[f64], res_a: f64, res_b: f64) -> Option<LogChange> {
    let (ma, va) = log_moments(a)?;
    let (mb, vb) = log_moments(b)?;
    let (sda, fa) = floored_sd(va.sqrt(), res_a);
    let (sdb, fb) = floored_sd(vb.sqrt(), res_b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (sda * sda / na, sdb * sdb / nb);
    let denom = sa * sa / (na - 1.0) + sb * sb / (nb - 1.0);
    let df = if denom > 0.0 {
        ((sa + sb) * (sa + sb) / denom).max(1.0)
    } else {
        f64::INFINITY
    };
    Some(LogChange {
        d: mb - ma,
        se: (sa + sb).sqrt(),
        df,
        sd_unit: ((sda * sda + sdb * sdb) / 2.0).sqrt(),
        floored: fa || fb,
    })
}

/// Paired comparison: one log ratio ln(b_i / a_i) per pair of runs collected next to each
/// other, one-sample t on their mean. Drift and whole-run speed modes shared by the two runs
/// of a pair cancel. The sd of the ratios is floored at √(res_a² + res_b²). `None` with
/// fewer than 2 pairs, unequal lengths or a value not positive and finite.
pub fn paired_log(a: &[f64], b: &[f64], res_a: f64, res_b: f64) -> Option<LogChange> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    let ok = |x: &f64| x.is_finite() && *x > 0.0;
    if !a.iter().all(ok) || !b.iter().all(ok) {
        return None;
    }
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| (y / x).ln()).collect();
    let n = r.len() as f64;
    let mean = r.iter().sum::<f64>() / n;
    let var = r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let (sd, floored) = floored_sd(var.sqrt(), (res_a * res_a + res_b * res_b).sqrt());
    Some(LogChange {
        d: mean,
        se: sd / n.sqrt(),
        df: n - 1.0,
        sd_unit: sd,
        floored,
    })
}

/// One run on one side against several on the other: the single value is judged against a
/// prediction interval of the many (mean of their logs ± t·s·√(1 + 1/n), df = n − 1), instead
/// of pooling the batches of runs that differ in their run-level state. `single_is_candidate`
/// says which side the single value is on. The sd is floored at the larger resolution.
pub fn prediction_log(
    many: &[f64],
    single: f64,
    single_is_candidate: bool,
    res: f64,
) -> Option<LogChange> {
    let (m, v) = log_moments(many)?;
    if !(single.is_finite() && single > 0.0) {
        return None;
    }
    let (sd, floored) = floored_sd(v.sqrt(), res);
    let n = many.len() as f64;
    let d = single.ln() - m;
    Some(LogChange {
        d: if single_is_candidate { d } else { -d },
        se: sd * (1.0 + 1.0 / n).sqrt(),
        df: n - 1.0,
        sd_unit: sd,
        floored,
    })
}

/// The edges of the noise band on the scale of "worsening" w (ln of the ratio, sign flipped
/// for metrics where higher is better, so that w > 0 is worse): a change regresses beyond
/// w > `worse` and improves beyond −w > `better`. With band n: time (ratio > 1 + n worse,
/// < 1 − n better) gives (ln(1 + n), −ln(1 − n)); a rate (ratio < 1 − n worse, > 1 + n
/// better) gives (−ln(1 − n), ln(1 + n)).
pub fn band_edges(noise: f64, higher_is_better: bool) -> (f64, f64) {
    let up = (1.0 + noise).ln();
    let down = -(1.0 - noise).ln();
    if higher_is_better {
        (down, up)
    } else {
        (up, down)
    }
}

/// P(T ≥ t) for Student's t with `df` degrees of freedom (the normal above
/// [`T_TO_NORMAL_DF`]); `t` = +∞ gives 0 and −∞ gives 1.
pub fn t_upper_p(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    let p = t_two_sided_p(t, df) / 2.0;
    if t >= 0.0 {
        p
    } else {
        1.0 - p
    }
}

/// The shifted test against the band: the null is "the true change lies inside the band"
/// (−better ≤ w ≤ worse), tested as two one-sided t tests of the shifted nulls w ≤ worse and
/// −w ≤ better. Returns (p of "worse than the band", p of "better than the band", the
/// two-sided p = min(1, 2·min of the two)). The two-sided p is valid whatever the true change
/// is inside the band (not only at 0), so Holm over cases bounds the chance of any verdict
/// beyond the band, when every true change is inside it, by α: the promise survives an
/// in-band shift of every case (a compiler or library bump). It rejects at α exactly when
/// the two-sided (1 − α) interval lies wholly beyond the band.
pub fn band_test(w: f64, se: f64, df: f64, worse: f64, better: f64) -> (f64, f64, f64) {
    let (pw, pb) = if se > 0.0 {
        (
            t_upper_p((w - worse) / se, df),
            t_upper_p((-w - better) / se, df),
        )
    } else {
        // No error at all: the verdict is certain (callers floor the error first).
        (
            if w > worse { 0.0 } else { 1.0 },
            if -w > better { 0.0 } else { 1.0 },
        )
    };
    (pw, pb, (2.0 * pw.min(pb)).min(1.0))
}

/// The one-sided quantile t_{p} with `df` degrees of freedom (normal above
/// [`T_TO_NORMAL_DF`]).
pub fn t_one_sided_quantile(p: f64, df: f64) -> f64 {
    t_quantile(2.0 * p - 1.0, df)
}

/// The minimum detectable effect beyond the band, on the log scale: the distance past the
/// band's edge a true change needs so that the band test at two-sided level `alpha` (a
/// one-sided α/2) flags it with probability `power`: (t_{1−α/2} + t_{power}) × se.
pub fn mde_log(se: f64, df: f64, alpha: f64, power: f64) -> f64 {
    (t_one_sided_quantile(1.0 - alpha / 2.0, df) + t_one_sided_quantile(power, df)) * se
}

/// The smallest number of units a side (runs, or pairs when `paired`) for which
/// [`mde_log`] with a unit spread of `sd_unit` is at most `target` (log scale), searching up
/// to `max`; `None` if even `max` is not enough or the spread is unknown.
pub fn units_needed(
    sd_unit: f64,
    paired: bool,
    alpha: f64,
    power: f64,
    target: f64,
    max: usize,
) -> Option<usize> {
    if !(sd_unit.is_finite() && target > 0.0) {
        return None;
    }
    let k = if paired { 1.0 } else { 2.0 };
    // Start from the normal approximation: t quantiles are never below the normal ones, so
    // no smaller count can do, and the search takes a few steps instead of hundreds.
    let z = t_one_sided_quantile(1.0 - alpha / 2.0, f64::INFINITY)
        + t_one_sided_quantile(power, f64::INFINITY);
    let n0 = (k * (z * sd_unit / target).powi(2)).ceil();
    if !n0.is_finite() || n0 > max as f64 {
        return None;
    }
    (n0.max(2.0) as usize..=max).find(|&n| {
        let nf = n as f64;
        let (se, df) = if paired {
            (sd_unit / nf.sqrt(), nf - 1.0)
        } else {
            (sd_unit * (2.0 / nf).sqrt(), 2.0 * nf - 2.0)
        };
        mde_log(se, df, alpha, power) <= target
    })
}

/// P(|T| ≥ t) for Student's t with `df` degrees of freedom (the normal above
/// [`T_TO_NORMAL_DF`], where statrs is unreliable).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    let t = t.abs();
    if t.is_nan() {
        return 1.0;
    }
    let tail = if !df.is_finite() || df > T_TO_NORMAL_DF {
        Normal::standard().sf(t)
    } else {
        match StudentsT::new(0.0, 1.0, df.max(1.0)) {
            Ok(d) => d.sf(t),
            Err(_) => Normal::standard().sf(t),
        }
    };
    (2.0 * tail).clamp(0.0, 1.0)
}

/// Result of a Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the candidate: pairs (a, b) with b > a, plus half the ties.
    pub u_b: f64,
    /// Two-sided p-value of "both samples come from one distribution".
    pub p_two_sided: f64,
    /// Whether the exact null distribution was used (else the normal approximation).
    pub exact: bool,
}

/// P(U ≤ u) for u = 0..=n_a·n_b under the null, for samples of sizes n_a and n_b without ties.
/// Built with the recurrence P_{i,j}(u) = i/(i+j)·P_{i−1,j}(u) + j/(i+j)·P_{i,j−1}(u−i):
/// the largest value of the pooled sample is from a with probability i/(i+j) (it is below no
/// b, adding nothing to U), else from b (it is above all i values of a, adding i). Depends only
/// on the sizes, so callers may cache it.
pub fn mann_whitney_exact_cdf(n_a: usize, n_b: usize) -> Vec<f64> {
    // row[j] holds P_{i,j} for the current i (length i·j + 1).
    let mut row: Vec<Vec<f64>> = (0..=n_b).map(|_| vec![1.0]).collect(); // i = 0: U = 0
    for i in 1..=n_a {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(n_b + 1);
        next.push(vec![1.0]); // j = 0: U = 0
        for j in 1..=n_b {
            let len = i * j + 1;
            let mut p = vec![0.0; len];
            let wa = i as f64 / (i + j) as f64;
            let wb = j as f64 / (i + j) as f64;
            for (u, v) in row[j].iter().enumerate() {
                p[u] += wa * v;
            }
            for (u, v) in next[j - 1].iter().enumerate() {
                p[u + i] += wb * v;
            }
            next.push(p);
        }
        row = next;
    }
    let mut cdf = row.pop().unwrap_or_else(|| vec![1.0]);
    let mut acc = 0.0;
    for v in cdf.iter_mut() {
        acc += *v;
        *v = acc.min(1.0);
    }
    cdf
}

/// Mann–Whitney U test of ascending-sorted samples `a` and `b`. `exact_cdf` is
/// [`mann_whitney_exact_cdf`] for these sizes when the caller wants the exact test (it is used
/// only if there are no ties). `None` if a side is empty.
pub fn mann_whitney(
    a_sorted: &[f64],
    b_sorted: &[f64],
    exact_cdf: Option<&[f64]>,
) -> Option<MannWhitney> {
    let (na, nb) = (a_sorted.len(), b_sorted.len());
    if na == 0 || nb == 0 {
        return None;
    }
    // Merge the sorted samples: U_b = Σ over b of (#a below it + ½ #a equal to it); ties
    // across the pooled sample give the variance correction Σ (t³ − t).
    let (mut i, mut j) = (0, 0);
    let mut u_b = 0.0;
    let mut tie_term = 0.0;
    while i < na || j < nb {
        let v = match (a_sorted.get(i), b_sorted.get(j)) {
            (Some(x), Some(y)) => x.min(*y),
            (Some(x), None) => *x,
            (None, Some(y)) => *y,
            (None, None) => break,
        };
        let i0 = i;
        while i < na && a_sorted[i] == v {
            i += 1;
        }
        let j0 = j;
        while j < nb && b_sorted[j] == v {
            j += 1;
        }
        let (ta, tb) = ((i - i0) as f64, (j - j0) as f64);
        // each b in this group beats the i0 smaller a's and ties with ta of them
        u_b += tb * (i0 as f64 + 0.5 * ta);
        let t = ta + tb;
        tie_term += t * t * t - t;
    }
    let cells = (na * nb) as f64;
    if tie_term == 0.0 {
        if let Some(cdf) = exact_cdf.filter(|c| c.len() == na * nb + 1) {
            // The null distribution is symmetric about n_a·n_b / 2: take the nearer tail from
            // the low end, where the cumulative sum is accurate (1 − cdf would cancel).
            let u = u_b.round() as usize;
            let tail = cdf[u.min(na * nb - u)];
            return Some(MannWhitney {
                u_b,
                p_two_sided: (2.0 * tail).min(1.0),
                exact: true,
            });
        }
    }
    let n = (na + nb) as f64;
    let var = cells / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p = if var <= 0.0 {
        1.0 // every value equal: no evidence of any difference
    } else {
        let z = ((u_b - cells / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
        (2.0 * Normal::standard().sf(z)).min(1.0)
    };
    Some(MannWhitney {
        u_b,
        p_two_sided: p,
        exact: false,
    })
}

/// Which multiple-comparison correction to apply to the p-values of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Correction {
    /// Holm–Bonferroni step-down: the chance of any false alarm (family-wise error) ≤ α.
    Holm,
    /// Benjamini–Hochberg step-up: the expected share of false alarms among alarms ≤ α.
    BenjaminiHochberg,
    /// Each case on its own (with many cases, some are flagged by chance).
    None,
}

/// Adjusted p-values in the input order: reject case i at level α iff `adjusted[i] ≤ α`.
/// NaN inputs are treated as 1.
pub fn adjust_p_values(p: &[f64], correction: Correction) -> Vec<f64> {
    let m = p.len();
    let clean: Vec<f64> = p
        .iter()
        .map(|x| if x.is_nan() { 1.0 } else { x.clamp(0.0, 1.0) })
        .collect();
    if m == 0 || correction == Correction::None {
        return clean;
    }
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&x, &y| clean[x].total_cmp(&clean[y]));
    let mut out = vec![1.0; m];
    match correction {
        Correction::Holm => {
            let mut running: f64 = 0.0;
            for (rank, &idx) in order.iter().enumerate() {
                let v = ((m - rank) as f64 * clean[idx]).min(1.0);
                running = running.max(v);
                out[idx] = running;
            }
        }
        Correction::BenjaminiHochberg => {
            let mut running: f64 = 1.0;
            for (rank, &idx) in order.iter().enumerate().rev() {
                let v = (m as f64 / (rank + 1) as f64 * clean[idx]).min(1.0);
                running = running.min(v);
                out[idx] = running;
            }
        }
        Correction::None => unreachable!("handled above"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::stats::SplitMix64 as Rng;

    fn sorted(mut v: Vec<f64>) -> Vec<f64> {
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn bootstrap_weights_are_a_distribution_centred_on_the_median() {
        for n in [1, 2, 3, 4, 5, 20, 101, 1000] {
            let w = median_bootstrap_weights(n);
            assert_eq!(w.len(), n);
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12, "n={n}");
            // only the negligible tails are dropped
            let kept = w.iter().filter(|x| **x > 0.0).count();
            assert!(kept >= n.min(30) && kept <= n, "n={n}: {kept}");
            assert!(w.iter().all(|x| *x >= 0.0));
            // the most likely resample median is the sample median
            let arg = w
                .iter()
                .enumerate()
                .max_by(|x, y| x.1.total_cmp(y.1))
                .unwrap()
                .0;
            assert_eq!(arg, n.div_ceil(2) - 1, "n={n}");
        }
        // n = 3 by enumeration: the resample median is x(1) when ≥ 2 of 3 draws are x(1):
        // 3·(1/3)²·(2/3) + (1/3)³ = 7/27; x(2) has 1 − 2·7/27 = 13/27.
        let w = median_bootstrap_weights(3);
        assert!((w[0] - 7.0 / 27.0).abs() < 1e-12 && (w[1] - 13.0 / 27.0).abs() < 1e-12);
    }

    #[test]
    fn bootstrap_variance_matches_a_brute_force_bootstrap() {
        let mut rng = Rng(7);
        let xs = sorted((0..15).map(|_| rng.normal().exp()).collect());
        let exact = weighted_variance(&xs, &median_bootstrap_weights(xs.len()));
        let b = 200_000;
        let mut meds = Vec::with_capacity(b);
        let mut buf = vec![0.0; xs.len()];
        for _ in 0..b {
            for v in buf.iter_mut() {
                *v = xs[(rng.uniform() * xs.len() as f64) as usize % xs.len()];
            }
            buf.sort_by(f64::total_cmp);
            meds.push(buf[7]);
        }
        let m = meds.iter().sum::<f64>() / b as f64;
        let var = meds.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / b as f64;
        assert!((var / exact - 1.0).abs() < 0.02, "{var} vs {exact}");
    }

    #[test]
    fn run_level_change_matches_welch_by_hand() {
        // ln values a: 0, ln 1.1, ln 0.9 ; b = a × 1.5 (a pure shift on the log scale)
        let a = [1.0, 1.1, 0.9];
        let b: Vec<f64> = a.iter().map(|x| x * 1.5).collect();
        let r = run_level_change(&a, &b, 0.95).unwrap();
        assert!((r.change.change - 0.5).abs() < 1e-12);
        let logs: Vec<f64> = a.iter().map(|x: &f64| x.ln()).collect();
        let m = logs.iter().sum::<f64>() / 3.0;
        let var = logs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 2.0;
        let se = (2.0 * var / 3.0).sqrt();
        assert!((r.change.se_log - se).abs() < 1e-12);
        // equal variances and sizes: Welch's df = 2(n − 1) = 4
        assert!((r.change.df - 4.0).abs() < 1e-9);
        let t = 1.5f64.ln() / se;
        assert!((r.p_two_sided - t_two_sided_p(t, 4.0)).abs() < 1e-12);
        let half = t_quantile(0.95, 4.0) * se;
        assert!((r.change.ci_low - ((1.5f64.ln() - half).exp() - 1.0)).abs() < 1e-12);
        // centres are geometric means
        assert!((r.change.median_b / r.change.median_a - 1.5).abs() < 1e-12);
    }

    #[test]
    fn run_level_change_edge_cases() {
        assert!(run_level_change(&[1.0], &[1.0, 2.0], 0.95).is_none());
        assert!(run_level_change(&[1.0, 0.0], &[1.0, 2.0], 0.95).is_none());
        assert!(run_level_change(&[1.0, f64::NAN], &[1.0, 2.0], 0.95).is_none());
        let same = run_level_change(&[2.0, 2.0], &[2.0, 2.0], 0.95).unwrap();
        assert_eq!((same.change.change, same.p_two_sided), (0.0, 1.0));
        let apart = run_level_change(&[2.0, 2.0], &[3.0, 3.0], 0.95).unwrap();
        assert_eq!(apart.p_two_sided, 0.0);
        // a textbook value: t = 2.776 at 4 df is the 97.5 % quantile
        assert!((t_two_sided_p(2.776_445_105_2, 4.0) - 0.05).abs() < 1e-6);
        assert!((t_two_sided_p(1.959_963_985, f64::INFINITY) - 0.05).abs() < 1e-6);
    }

    #[test]
    fn run_level_false_alarm_rate_is_nominal_under_the_null() {
        // 5 runs a side from one log-normal: p ≤ 0.05 about 5 % of the time.
        let mut rng = Rng(11);
        let trials = 4000;
        let mut hits = 0;
        for _ in 0..trials {
            let a: Vec<f64> = (0..5).map(|_| (0.2 * rng.normal()).exp()).collect();
            let b: Vec<f64> = (0..5).map(|_| (0.2 * rng.normal()).exp()).collect();
            if run_level_change(&a, &b, 0.95).unwrap().p_two_sided <= 0.05 {
                hits += 1;
            }
        }
        let rate = hits as f64 / trials as f64;
        assert!((0.035..0.065).contains(&rate), "false-alarm rate {rate}");
    }

    #[test]
    fn t_quantiles_with_the_normal_fallback() {
        assert!((t_quantile(0.95, 10.0) - 2.228_138_851_986_274).abs() < 1e-9);
        assert!((t_quantile(0.95, 1.0) - 12.706_204_736_174_7).abs() < 1e-6);
        let z = 1.959_963_984_540_054;
        // huge and infinite df must neither hang nor go wrong (statrs caveat)
        for df in [1e6, 1e7, 1e9, f64::INFINITY, f64::NAN] {
            assert!((t_quantile(0.95, df) - z).abs() < 1e-4, "df={df}");
        }
        assert!((t_quantile(0.99, 30.0) - 2.749_995_653_567_87).abs() < 1e-8);
    }

    #[test]
    fn identical_samples_give_zero_change_and_p_one() {
        let a = sorted(vec![1.0, 1.1, 0.9, 1.05, 0.95]);
        let w = median_bootstrap_weights(5);
        let c = median_change(&a, &w, &a, &w, 0.95).unwrap();
        assert_eq!(c.change, 0.0);
        assert!(c.ci_low < 0.0 && c.ci_high > 0.0);
        assert!(
            (c.ci_low + c.ci_high / (1.0 + c.ci_high)).abs() < 1e-12,
            "symmetric in log"
        );
        let cdf = mann_whitney_exact_cdf(5, 5);
        let mw = mann_whitney(&a, &a, Some(&cdf)).unwrap();
        assert_eq!(mw.u_b, 12.5);
        assert_eq!(mw.p_two_sided, 1.0);
        assert!(!mw.exact, "ties force the normal approximation");
        // constant samples: no spread, a degenerate but exact interval
        let k = vec![2.0; 4];
        let wk = median_bootstrap_weights(4);
        let c = median_change(&k, &wk, &k, &wk, 0.95).unwrap();
        assert_eq!((c.change, c.ci_low, c.ci_high), (0.0, 0.0, 0.0));
        assert_eq!(mann_whitney(&k, &k, None).unwrap().p_two_sided, 1.0);
    }

    #[test]
    fn unusable_samples_are_refused_not_panicked_on() {
        let w1 = median_bootstrap_weights(1);
        let w2 = median_bootstrap_weights(2);
        assert!(median_change(&[1.0], &w1, &[1.0, 2.0], &w2, 0.95).is_none());
        assert!(median_change(&[0.0, 1.0], &w2, &[1.0, 2.0], &w2, 0.95).is_none());
        assert!(median_change(&[-1.0, 1.0], &w2, &[1.0, 2.0], &w2, 0.95).is_none());
        assert!(median_change(&[1.0, 2.0], &w1, &[1.0, 2.0], &w2, 0.95).is_none());
        assert!(mann_whitney(&[], &[1.0], None).is_none());
    }

    #[test]
    fn shifted_samples_give_the_shift() {
        let a: Vec<f64> = (1..=21).map(|i| 1.0 + i as f64 * 0.001).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.2).collect();
        let w = median_bootstrap_weights(21);
        let c = median_change(&a, &w, &b, &w, 0.95).unwrap();
        assert!((c.change - 0.2).abs() < 1e-12);
        assert!(c.ci_low > 0.15 && c.ci_high < 0.25, "{c:?}");
        let cdf = mann_whitney_exact_cdf(21, 21);
        let mw = mann_whitney(&a, &sorted(b), Some(&cdf)).unwrap();
        assert!(mw.exact);
        assert_eq!(mw.u_b, 441.0);
        // complete separation: p = 2 / C(42, 21)
        assert!(
            (mw.p_two_sided / (2.0 / 538_257_874_440.0) - 1.0).abs() < 1e-6,
            "{mw:?}"
        );
    }

    #[test]
    fn exact_mann_whitney_matches_tables() {
        // n = 3, 3: U takes 0..=9 with counts 1 1 2 3 3 3 3 2 1 1 out of C(6,3) = 20
        let cdf = mann_whitney_exact_cdf(3, 3);
        let counts = [1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 2.0, 1.0, 1.0];
        let mut acc = 0.0;
        for (u, c) in counts.iter().enumerate() {
            acc += c / 20.0;
            assert!((cdf[u] - acc).abs() < 1e-12, "u={u}");
        }
        // asymmetric sizes: symmetric distribution, total 1
        let cdf = mann_whitney_exact_cdf(4, 7);
        assert_eq!(cdf.len(), 29);
        assert!((cdf[28] - 1.0).abs() < 1e-12);
        for u in 0..28 {
            let lower = cdf[u];
            let upper = 1.0 - cdf[27 - u];
            assert!((lower - upper).abs() < 1e-12, "symmetry at {u}");
        }
        // complete separation: P(U = 0) = 1 / C(11, 4), two-sided 2 / 330
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0];
        let mw = mann_whitney(&a, &b, Some(&cdf)).unwrap();
        assert!((mw.p_two_sided - 2.0 / 330.0).abs() < 1e-12, "{mw:?}");
    }

    #[test]
    fn normal_mann_whitney_by_hand() {
        // a = 0..29, b = 10.5..39.5 (no ties), normal approximation with continuity correction
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (0..30).map(|i| f64::from(i) + 10.5).collect();
        let mw = mann_whitney(&a, &b, None).unwrap();
        // b beats a in 900 − (pairs with a > b) = 900 − Σ_{k=1}^{19} k = 710
        assert_eq!(mw.u_b, 710.0);
        let var: f64 = 900.0 / 12.0 * 61.0;
        let z = (710.0 - 450.0 - 0.5) / var.sqrt();
        let p = 2.0 * Normal::standard().sf(z);
        assert!((mw.p_two_sided - p).abs() < 1e-15);
        // z = 259.5 / √4575 = 3.8366 → two-sided p = 1.248e-4
        assert!(
            (mw.p_two_sided - 1.248e-4).abs() < 1e-6,
            "{}",
            mw.p_two_sided
        );
        // ties: half credit and the tie correction
        let mw = mann_whitney(&[1.0, 2.0, 2.0], &[2.0, 3.0, 3.0], None).unwrap();
        assert_eq!(mw.u_b, 1.0 * 1.0 + 0.5 * 2.0 + 2.0 * 3.0);
    }

    #[test]
    fn holm_and_bh_match_r_p_adjust() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
        let p = [0.01, 0.04, 0.03, 0.005];
        let h = adjust_p_values(&p, Correction::Holm);
        for (x, y) in h.iter().zip([0.03, 0.06, 0.06, 0.02]) {
            assert!((x - y).abs() < 1e-12, "{h:?}");
        }
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") = 0.02 0.04 0.04 0.02
        let b = adjust_p_values(&p, Correction::BenjaminiHochberg);
        for (x, y) in b.iter().zip([0.02, 0.04, 0.04, 0.02]) {
            assert!((x - y).abs() < 1e-12, "{b:?}");
        }
        assert_eq!(adjust_p_values(&p, Correction::None), p.to_vec());
        assert!(adjust_p_values(&[], Correction::Holm).is_empty());
        assert_eq!(adjust_p_values(&[f64::NAN], Correction::Holm), vec![1.0]);
    }

    #[test]
    fn adjusted_p_values_are_monotone_and_bounded() {
        let mut rng = Rng(3);
        for m in [1, 2, 7, 50] {
            let p: Vec<f64> = (0..m).map(|_| rng.uniform().powi(3)).collect();
            for c in [Correction::Holm, Correction::BenjaminiHochberg] {
                let adj = adjust_p_values(&p, c);
                for i in 0..m {
                    assert!(adj[i] >= p[i] && adj[i] <= 1.0);
                    for j in 0..m {
                        if p[i] <= p[j] {
                            assert!(adj[i] <= adj[j], "{c:?} not monotone");
                        }
                    }
                }
            }
            // Holm is never less strict than BH
            let h = adjust_p_values(&p, Correction::Holm);
            let b = adjust_p_values(&p, Correction::BenjaminiHochberg);
            assert!(h.iter().zip(&b).all(|(x, y)| x >= y));
        }
    }

    /// The interval's coverage under lognormal noise, by simulation: the true median ratio is 1.
    #[test]
    fn interval_covers_at_about_the_nominal_rate() {
        let mut rng = Rng(11);
        for n in [5usize, 10, 20, 100] {
            let w = median_bootstrap_weights(n);
            let trials = 4000;
            let mut covered = 0;
            for _ in 0..trials {
                let a = sorted((0..n).map(|_| (0.05 * rng.normal()).exp()).collect());
                let b = sorted((0..n).map(|_| (0.05 * rng.normal()).exp()).collect());
                let c = median_change(&a, &w, &b, &w, 0.95).unwrap();
                if c.ci_low <= 0.0 && 0.0 <= c.ci_high {
                    covered += 1;
                }
            }
            let rate = f64::from(covered) / f64::from(trials);
            eprintln!("n={n}: coverage {rate:.3}");
            assert!(rate >= 0.92, "n={n}: coverage {rate}");
        }
    }

    /// Under the null the exact test's p-values are valid: P(p ≤ α) ≤ α.
    #[test]
    fn mann_whitney_is_valid_under_the_null() {
        let mut rng = Rng(5);
        for (na, nb) in [(5usize, 5usize), (8, 20), (20, 20), (100, 100)] {
            let cdf = (na * nb <= MW_EXACT_MAX_CELLS).then(|| mann_whitney_exact_cdf(na, nb));
            let trials = 4000;
            let mut hits = [0u32; 3];
            for _ in 0..trials {
                // skewed, heavy-tailed noise
                let draw = |rng: &mut Rng| {
                    let x = (0.1 * rng.normal()).exp();
                    if rng.uniform() < 0.05 {
                        x * 3.0
                    } else {
                        x
                    }
                };
                let a = sorted((0..na).map(|_| draw(&mut rng)).collect());
                let b = sorted((0..nb).map(|_| draw(&mut rng)).collect());
                let p = mann_whitney(&a, &b, cdf.as_deref()).unwrap().p_two_sided;
                for (k, alpha) in [0.01, 0.05, 0.2].iter().enumerate() {
                    if p <= *alpha {
                        hits[k] += 1;
                    }
                }
            }
            for (k, alpha) in [0.01, 0.05, 0.2].iter().enumerate() {
                let rate = f64::from(hits[k]) / f64::from(trials);
                let sd = (alpha * (1.0 - alpha) / f64::from(trials)).sqrt();
                assert!(rate <= alpha + 3.0 * sd, "{na}x{nb} α={alpha}: {rate}");
            }
        }
    }

    /// The band test at the band's edge: a true change exactly on the edge (the least
    /// favourable point of the null) is called beyond the band in at most α of trials, and
    /// one at the band's centre far less often; 8 pairs, 4,000 trials each.
    #[test]
    fn band_test_is_valid_at_the_edge_of_the_band() {
        let mut rng = Rng(41);
        let (worse, better) = band_edges(0.10, false);
        assert!((worse - 1.1f64.ln()).abs() < 1e-15 && (better + 0.9f64.ln()).abs() < 1e-15);
        let trials = 4000;
        for (true_w, max_rate) in [(worse, 0.05), (-better, 0.05), (0.0, 0.01)] {
            let mut hits = 0;
            for _ in 0..trials {
                let a: Vec<f64> = (0..8).map(|_| (0.05 * rng.normal()).exp()).collect();
                let b: Vec<f64> = (0..8)
                    .map(|i| a[i] * (true_w + 0.05 * rng.normal()).exp())
                    .collect();
                let l = paired_log(&a, &b, 0.0, 0.0).unwrap();
                if band_test(l.d, l.se, l.df, worse, better).2 <= 0.05 {
                    hits += 1;
                }
            }
            let rate = f64::from(hits) / f64::from(trials);
            let sd = (0.05 * 0.95 / f64::from(trials)).sqrt();
            eprintln!("band test, true change {true_w:+.4}: P(beyond) = {rate:.4}");
            assert!(rate <= max_rate + 3.0 * sd, "{true_w}: {rate}");
        }
        // it rejects exactly when the two-sided interval lies beyond the band
        let (se, df) = (0.02, 7.0);
        let q = t_quantile(0.95, df);
        for d in [0.05, 0.1, 0.13, 0.2] {
            let beyond = d - q * se > worse;
            assert_eq!(
                band_test(d, se, df, worse, better).2 <= 0.05 + 1e-12,
                beyond,
                "{d}"
            );
        }
    }

    #[test]
    fn paired_and_prediction_changes_by_hand() {
        // ratios 1.1, 1.2, 1.3 → logs; one-sample t on them
        let a = [1.0, 2.0, 4.0];
        let b = [1.1, 2.4, 5.2];
        let l = paired_log(&a, &b, 0.0, 0.0).unwrap();
        let r: Vec<f64> = [1.1f64, 1.2, 1.3].iter().map(|x| x.ln()).collect();
        let m = r.iter().sum::<f64>() / 3.0;
        let sd = (r.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((l.d - m).abs() < 1e-12 && (l.se - sd / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!((l.df, l.floored), (2.0, false));
        assert!(paired_log(&a, &b[..2], 0.0, 0.0).is_none());
        // the whole-run factor of each pair cancels: same result with pairs scaled apart
        let a2 = [1.0 * 7.0, 2.0, 4.0 * 0.3];
        let b2 = [1.1 * 7.0, 2.4, 5.2 * 0.3];
        let l2 = paired_log(&a2, &b2, 0.0, 0.0).unwrap();
        assert!((l2.d - l.d).abs() < 1e-12 && (l2.se - l.se).abs() < 1e-12);
        // prediction: one candidate value against 4 baseline runs
        let many = [1.0, 1.1, 0.9, 1.0];
        let p = prediction_log(&many, 1.5, true, 0.0).unwrap();
        let logs: Vec<f64> = many.iter().map(|x: &f64| x.ln()).collect();
        let mm = logs.iter().sum::<f64>() / 4.0;
        let s = (logs.iter().map(|x| (x - mm).powi(2)).sum::<f64>() / 3.0).sqrt();
        assert!((p.d - (1.5f64.ln() - mm)).abs() < 1e-12);
        assert!((p.se - s * 1.25f64.sqrt()).abs() < 1e-12 && p.df == 3.0);
        let q = prediction_log(&many, 1.5, false, 0.0).unwrap();
        assert!(
            (q.d + p.d).abs() < 1e-12,
            "the single baseline run: the sign flips"
        );
    }

    #[test]
    fn the_error_is_floored_at_the_timer_resolution() {
        assert_eq!(floored_sd(0.01, 0.02), (0.02, true));
        assert_eq!(floored_sd(0.03, 0.02), (0.03, false));
        assert_eq!(floored_sd(0.01, f64::NAN), (0.01, false));
        // identical values on each side: the floor is all the error there is
        let l = welch_log(&[3.0, 3.0], &[3.5, 3.5], 0.5 / 3.0, 0.5 / 3.5).unwrap();
        assert!(l.floored);
        let se = ((0.5f64 / 3.0).powi(2) / 2.0 + (0.5f64 / 3.5).powi(2) / 2.0).sqrt();
        assert!((l.se - se).abs() < 1e-12, "{l:?}");
        let none = welch_log(&[3.0, 3.0], &[3.5, 3.5], 0.0, 0.0).unwrap();
        assert_eq!((none.se, none.floored), (0.0, false));
    }

    #[test]
    fn mde_and_the_units_that_reach_the_band() {
        // normal limit: (z_{0.975} + z_{0.8}) · se = (1.95996 + 0.84162) · se
        let m = mde_log(0.01, f64::INFINITY, 0.05, 0.8);
        assert!((m - 0.028_015_8).abs() < 1e-6, "{m}");
        // with few degrees of freedom it is larger
        assert!(mde_log(0.01, 3.0, 0.05, 0.8) > 1.4 * m);
        // the count found is the smallest that reaches the target
        let target = 1.1f64.ln();
        for paired in [false, true] {
            let n = units_needed(0.04, paired, 0.05 / 7.0, 0.8, target, 500).unwrap();
            let se = |n: usize| {
                let nf = n as f64;
                if paired {
                    (0.04 / nf.sqrt(), nf - 1.0)
                } else {
                    (0.04 * (2.0 / nf).sqrt(), 2.0 * nf - 2.0)
                }
            };
            let (s, df) = se(n);
            assert!(mde_log(s, df, 0.05 / 7.0, 0.8) <= target, "{n}");
            if n > 2 {
                let (s, df) = se(n - 1);
                assert!(mde_log(s, df, 0.05 / 7.0, 0.8) > target, "{n}");
            }
        }
        assert_eq!(units_needed(5.0, false, 0.05, 0.8, 0.01, 500), None);
        assert_eq!(units_needed(f64::NAN, false, 0.05, 0.8, 0.1, 500), None);
    }
}
