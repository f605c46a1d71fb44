//! Run-level changes on the log scale: Welch, paired, and one run against a prediction
//! interval of the other side's runs, each floored at the timer's resolution.

use super::band::t_two_sided_p;
use super::{t_quantile, MedianChange};

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
