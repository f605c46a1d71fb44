//! The Hodges–Lehmann shift of two sets of run values on the log scale with its
//! distribution-free (Moses) interval, and the band test from the same ranks: used when both
//! sides have [`RANK_MIN_RUNS`] runs or more.
//!
//! Why ranks at run level: on a loaded host the runs of one side are not normal around one
//! level: whole runs switch phase (in the corpus of real runs, 4 of 8 runs without CMA single
//! copy broadcast 4–5× slower than the unchanged runs and 4 only 1.5× slower), so a t test's
//! variance swells and a 2–5× regression passes unseen. The ranks of the pairwise differences
//! see that every candidate run is slower than every baseline run. Interval and test come
//! from one statistic: with D the sorted differences ln b_j − ln a_i and k the Moses order,
//! the interval [D₍ₖ₎, D₍ₙₘ₊₁₋ₖ₎] lies beyond an edge exactly when Mann–Whitney of b − edge
//! against a rejects at the interval's level (exact null distribution; ties counted half).

/// Fewest runs a side for the rank basis: with 8 and 8 the smallest one-sided p is
/// 1/12,870, so a change can pass Holm's first step over dozens of cases.
pub const RANK_MIN_RUNS: usize = 8;

/// A shift with its interval and tests, on the scale of d = ln(candidate / baseline).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// Hodges–Lehmann estimate: the median of the pairwise differences.
    pub d: f64,
    /// The interval at the confidence asked (−∞ / +∞ when the runs are too few for it).
    pub low: f64,
    pub high: f64,
    /// Two-sided p of "no shift at all" (Mann–Whitney).
    pub p_point: f64,
    /// Two-sided p of "the shift lies inside [`lower`, `upper`]": min(1, 2·min of the two
    /// one-sided tests at the edges).
    pub p_band: f64,
}

/// P(U ≥ u) under the null from the exact cdf P(U ≤ ·) of sizes with n·m cells (symmetric).
fn upper_tail(cdf: &[f64], cells: usize, u: f64) -> f64 {
    let k = u.ceil().max(0.0) as usize;
    if k == 0 {
        return 1.0;
    }
    if k > cells {
        return 0.0;
    }
    cdf[cells - k]
}

/// The shift of `b` against `a` (log values, any order) with its `confidence` interval, the
/// point test and the band test for the band [`lower`, `upper`] on the d scale. `cdf` is
/// [`super::mann_whitney_exact_cdf`] for these sizes. `None` if a side is empty or a value is
/// not finite.
pub fn log_shift(
    a: &[f64],
    b: &[f64],
    cdf: &[f64],
    confidence: f64,
    lower: f64,
    upper: f64,
) -> Option<Shift> {
    let cells = a.len() * b.len();
    if cells == 0 || cdf.len() != cells + 1 || !a.iter().chain(b).all(|x| x.is_finite()) {
        return None;
    }
    let mut d: Vec<f64> = b
        .iter()
        .flat_map(|y| a.iter().map(move |x| y - x))
        .collect();
    d.sort_by(f64::total_cmp);
    let mid = crate::stats::quantile_sorted(&d, 0.5);
    // U above / below an edge: differences beyond it, ties half
    let above = |e: f64| {
        d.iter()
            .map(|x| {
                if *x > e {
                    1.0
                } else if *x == e {
                    0.5
                } else {
                    0.0
                }
            })
            .sum::<f64>()
    };
    let below = |e: f64| {
        d.iter()
            .map(|x| {
                if *x < e {
                    1.0
                } else if *x == e {
                    0.5
                } else {
                    0.0
                }
            })
            .sum::<f64>()
    };
    let one_sided = |u: f64| upper_tail(cdf, cells, u);
    let p_point = (2.0 * one_sided(above(0.0)).min(one_sided(below(0.0)))).min(1.0);
    let p_band = (2.0 * one_sided(above(upper)).min(one_sided(below(lower)))).min(1.0);
    // Moses: the largest k with P(U ≤ k − 1) ≤ (1 − confidence) / 2
    let tail = (1.0 - confidence) / 2.0;
    let k = (1..=cells).take_while(|&k| cdf[k - 1] <= tail).last();
    let (low, high) = match k {
        Some(k) => (d[k - 1], d[cells - k]),
        None => (f64::NEG_INFINITY, f64::INFINITY),
    };
    Some(Shift {
        d: mid,
        low,
        high,
        p_point,
        p_band,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::mann_whitney_exact_cdf;

    #[test]
    fn interval_and_band_test_agree_and_phases_do_not_hide_a_shift() {
        let cdf = mann_whitney_exact_cdf(8, 8);
        let (lo_e, hi_e) = (0.9f64.ln(), 1.1f64.ln());
        // the corpus's 128 KiB broadcast: unchanged runs 11–16 µs; without single copy four
        // runs 62–76 µs and four 17–21 µs
        let a: Vec<f64> = [13.0, 13.0, 11.0, 11.0, 16.0, 12.0, 12.0, 12.0f64]
            .iter()
            .map(|x| x.ln())
            .collect();
        let b: Vec<f64> = [63.0, 62.0, 76.0, 17.0, 21.0, 21.0, 21.0, 62.0f64]
            .iter()
            .map(|x| x.ln())
            .collect();
        let s = log_shift(&a, &b, &cdf, 0.95, lo_e, hi_e).unwrap_or_else(|| panic!("shift"));
        assert!(s.low > hi_e, "{s:?}");
        assert!(s.p_band < 0.001, "{s:?}");
        // the same runs on both sides: nothing
        let s = log_shift(&a, &a, &cdf, 0.95, lo_e, hi_e).unwrap_or_else(|| panic!("shift"));
        assert!(
            s.low < 0.0 && s.high > 0.0 && s.p_band > 0.5 && s.d == 0.0,
            "{s:?}"
        );
        // over many shifts, p_band ≤ 0.05 exactly when the 95 % interval lies beyond an edge
        let mut rng = crate::stats::SplitMix64(3);
        for _ in 0..300 {
            let shift = 0.4 * rng.uniform() - 0.2;
            let x: Vec<f64> = (0..8).map(|_| 0.05 * rng.normal()).collect();
            let y: Vec<f64> = (0..8).map(|_| shift + 0.05 * rng.normal()).collect();
            let s = log_shift(&x, &y, &cdf, 0.95, lo_e, hi_e).unwrap_or_else(|| panic!("shift"));
            let beyond = s.low > hi_e || s.high < lo_e;
            assert_eq!(s.p_band <= 0.05, beyond, "{s:?}");
        }
        // too few runs for the interval: unbounded
        let small = mann_whitney_exact_cdf(2, 2);
        let s =
            log_shift(&a[..2], &b[..2], &small, 0.95, lo_e, hi_e).unwrap_or_else(|| panic!("s"));
        assert!(s.low.is_infinite() && s.high.is_infinite());
    }
}
