//! Simulations and reference values for the statistics: intervals cover, tests hold their
//! level, corrections control the family.

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
