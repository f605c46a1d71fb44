//! The band test (shifted one-sided nulls at the noise band's edges), the t p-values it rests
//! on, the minimum detectable effect and the units needed to reach it.

use super::{t_quantile, T_TO_NORMAL_DF};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

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
