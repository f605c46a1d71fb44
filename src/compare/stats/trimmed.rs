//! Run-level changes that one wild run cannot overturn: Yuen's trimmed-means test (unpaired)
//! and the Tukey–McLaughlin trimmed one-sample t (paired), on log values, each floored at the
//! timer's resolution like their untrimmed forms in [`super::runs`].
//!
//! Why trimmed: on a loaded host whole runs go wild (another job, a VM phase: runs 2–3× or
//! 30–100× slow, about one in ten). One such run among eight makes Welch's variance so large
//! that a 25 % regression passes unseen, and two on one side can fake one. Trimming the
//! `TRIM` share of runs at each end of a side (a wild run is cut) and taking the variance of
//! the winsorised values keeps the test valid for well-behaved runs (Yuen 1974; Wilcox,
//! "Introduction to Robust Estimation and Hypothesis Testing", ch. 5) at a small cost in
//! power. With fewer than [`TRIM_MIN_RUNS`] runs a side nothing is trimmed and these are
//! Welch's t and the paired t exactly.

use super::runs::{floored_sd, LogChange};

/// The share of runs cut at each end of a side (20 %, Wilcox's default).
pub const TRIM: f64 = 0.2;

/// Fewest runs a side that are trimmed: below it a cut costs more power than it saves
/// (with 8 paired runs, a planted +25 % was caught in 87 % of comparisons trimmed against
/// 90 % untrimmed), and unpaired sides of 8 or more are judged on ranks anyway.
pub const TRIM_MIN_RUNS: usize = 10;

/// Runs cut at each end of `n` (⌊TRIM·n⌋ from [`TRIM_MIN_RUNS`] runs on, else none).
pub fn trimmed_count(n: usize) -> usize {
    if n < TRIM_MIN_RUNS {
        return 0;
    }
    (TRIM * n as f64).floor() as usize
}

/// Trimmed mean, winsorised variance (n − 1) and the number of values kept (h = n − 2g) of
/// `v` (any order), cutting `g` = [`trimmed_count`] at each end.
fn trimmed_moments(v: &[f64]) -> Option<(f64, f64, usize)> {
    let n = v.len();
    if n < 2 || !v.iter().all(|x| x.is_finite()) {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let g = trimmed_count(n);
    let h = n - 2 * g;
    let mean = s[g..n - g].iter().sum::<f64>() / h as f64;
    let (lo, hi) = (s[g], s[n - 1 - g]);
    let w: Vec<f64> = s.iter().map(|x| x.clamp(lo, hi)).collect();
    let wm = w.iter().sum::<f64>() / n as f64;
    let var = w.iter().map(|x| (x - wm).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean, var, h))
}

fn logs(v: &[f64]) -> Option<Vec<f64>> {
    v.iter()
        .all(|x| x.is_finite() && *x > 0.0)
        .then(|| v.iter().map(|x| x.ln()).collect())
}

/// Yuen's unpaired comparison of per-run values on the log scale: trimmed means, the
/// winsorised variances d = (n − 1)·s²_w / (h(h − 1)), Welch–Satterthwaite degrees of
/// freedom over h − 1; each side's winsorised sd floored at its relative resolution. `None`
/// with fewer than 2 values a side or a value not positive and finite.
pub fn yuen_log(a: &[f64], b: &[f64], res_a: f64, res_b: f64) -> Option<LogChange> {
    let (la, lb) = (logs(a)?, logs(b)?);
    let (ma, va, ha) = trimmed_moments(&la)?;
    let (mb, vb, hb) = trimmed_moments(&lb)?;
    let (sda, fa) = floored_sd(va.sqrt(), res_a);
    let (sdb, fb) = floored_sd(vb.sqrt(), res_b);
    let d_of = |sd: f64, n: usize, h: usize| {
        let (n, h) = (n as f64, h as f64);
        (n - 1.0) * sd * sd / (h * (h - 1.0))
    };
    let (da, db) = (d_of(sda, a.len(), ha), d_of(sdb, b.len(), hb));
    let denom = da * da / (ha as f64 - 1.0) + db * db / (hb as f64 - 1.0);
    let df = if denom > 0.0 {
        ((da + db) * (da + db) / denom).max(1.0)
    } else {
        f64::INFINITY
    };
    // One unit's spread: what √(2/n) times gives the error, for the runs-needed search.
    let na = a.len().min(b.len()) as f64;
    let se = (da + db).sqrt();
    Some(LogChange {
        d: mb - ma,
        se,
        df,
        sd_unit: se * (na / 2.0).sqrt(),
        floored: fa || fb,
    })
}

/// Paired comparison with trimming: one log ratio per pair, the trimmed mean of the ratios
/// with the Tukey–McLaughlin error s_w / ((1 − 2·g/n)·√n), h − 1 degrees of freedom; the
/// sd floored at √(res_a² + res_b²). `None` with fewer than 2 pairs, unequal lengths or a
/// value not positive and finite.
pub fn trimmed_paired_log(a: &[f64], b: &[f64], res_a: f64, res_b: f64) -> Option<LogChange> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    let (la, lb) = (logs(a)?, logs(b)?);
    let r: Vec<f64> = la.iter().zip(&lb).map(|(x, y)| y - x).collect();
    let (mean, var, h) = trimmed_moments(&r)?;
    let n = r.len() as f64;
    let (sd, floored) = floored_sd(var.sqrt(), (res_a * res_a + res_b * res_b).sqrt());
    let kept = h as f64 / n;
    let se = sd / (kept * n.sqrt());
    Some(LogChange {
        d: mean,
        se,
        df: (h as f64 - 1.0).max(1.0),
        sd_unit: se * n.sqrt(),
        floored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::{paired_log, welch_log};

    #[test]
    fn without_trimming_they_are_welch_and_the_paired_t() {
        let a = [1.0, 1.1, 0.9, 1.05];
        let b = [1.2, 1.3, 1.25, 1.1];
        assert_eq!(trimmed_count(4), 0);
        let (y, w) = (
            yuen_log(&a, &b, 0.0, 0.0).unwrap_or_else(|| panic!("yuen")),
            welch_log(&a, &b, 0.0, 0.0).unwrap_or_else(|| panic!("welch")),
        );
        assert!((y.d - w.d).abs() < 1e-12 && (y.se - w.se).abs() < 1e-12);
        assert!((y.df - w.df).abs() < 1e-9, "{} {}", y.df, w.df);
        let (p, q) = (
            trimmed_paired_log(&a, &b, 0.0, 0.0).unwrap_or_else(|| panic!("tp")),
            paired_log(&a, &b, 0.0, 0.0).unwrap_or_else(|| panic!("p")),
        );
        assert!((p.d - q.d).abs() < 1e-12 && (p.se - q.se).abs() < 1e-12 && p.df == q.df);
    }

    #[test]
    fn one_wild_run_among_ten_is_cut() {
        // 10 runs a side 1 % apart, the candidate 25 % slower; one baseline run 50× slow.
        let a = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 50.0, 1.01, 1.0, 0.995];
        let b: Vec<f64> = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.0, 1.01, 1.0, 0.995]
            .iter()
            .map(|x| x * 1.25)
            .collect();
        let y = yuen_log(&a, &b, 0.0, 0.0).unwrap_or_else(|| panic!("yuen"));
        assert!((y.d - 1.25f64.ln()).abs() < 0.01, "{y:?}");
        assert!(y.se < 0.02, "{y:?}");
        // Welch sees the wild run's variance: the change is lost in it
        let w = welch_log(&a, &b, 0.0, 0.0).unwrap_or_else(|| panic!("welch"));
        assert!(w.se > 0.3, "{w:?}");
        assert!(yuen_log(&[1.0], &b, 0.0, 0.0).is_none());
        assert!(yuen_log(&[1.0, -1.0], &b, 0.0, 0.0).is_none());
    }
}
