use super::*;

/// Where the step sits in seed `seed` of an `n`-run series: uniform on runs `edge..=n − edge`.
fn place(seed: u64, n: usize, edge: usize) -> usize {
    let mut rng = SplitMix64(seed.wrapping_mul(0x9e37_79b9) ^ 0x7ace);
    edge + ((rng.uniform() * (n - 2 * edge + 1) as f64) as usize).min(n - 2 * edge)
}

/// Rates over `seeds` series.
#[derive(Debug, Clone, Copy)]
struct Rates {
    /// A change of the right sign within ±1 run of the step.
    placed: f64,
    /// Exactly one change, and it within ±1 run.
    alone: f64,
}

/// `n`-run series with a step of ±`step` (sign alternating by seed) uniform on runs
/// `edge..=n−edge`, Gaussian noise `noise`, a share `wild` of runs 10–100× off.
fn step_rates(n: usize, edge: usize, noise: f64, wild: f64, step: f64, seeds: u64) -> Rates {
    let s = Settings::default();
    let (mut placed, mut alone) = (0u64, 0u64);
    let mut misses = Vec::new();
    for seed in 0..seeds {
        let at = place(seed, n, edge);
        let step = if seed % 2 == 0 { step } else { -step };
        let xs = contaminated(seed, n, noise, wild, Some((at, step)));
        let cs = detect(&xs, &s);
        let near = |c: &Change| c.index.abs_diff(at) <= 1 && (c.relative > 0.0) == (step > 0.0);
        if cs.iter().any(near) {
            placed += 1;
        } else if misses.len() < 5 {
            misses.push(seed);
        }
        alone += u64::from(cs.len() == 1 && near(&cs[0]));
    }
    let k = seeds as f64;
    let r = Rates {
        placed: placed as f64 / k,
        alone: alone as f64 / k,
    };
    eprintln!(
        "n {n}, step ±{step} on runs {edge}..={}, noise {noise}, wild {wild}: placed ±1 run {:.3}, alone ±1 run {:.3} ({seeds} series; first misses: seeds {misses:?})",
        n - edge,
        r.placed,
        r.alone
    );
    r
}

/// Share of `seeds` step-free series in which any change point is reported.
fn false_alarms(n: usize, noise: f64, wild: f64, seeds: u64) -> f64 {
    let s = Settings::default();
    let alarms: Vec<u64> = (0..seeds)
        .filter(|seed| {
            !detect(&contaminated(1_000_000 + seed, n, noise, wild, None), &s).is_empty()
        })
        .collect();
    let rate = alarms.len() as f64 / seeds as f64;
    eprintln!(
        "n {n}, no step, noise {noise}, wild {wild}: series with a false change point {}/{seeds} = {rate:.4} (seeds {:?})",
        alarms.len(),
        &alarms[..alarms.len().min(5)]
    );
    rate
}

/// The target on contaminated simulation: 36 runs, 3 % noise, 10 % of runs 10–100×
/// off, a 15 % step (rise or drop) anywhere leaving 6 runs a side: found and placed within
/// ±1 run in ≥ 90 % of 1,000 series; no step: a false change point in ≤ 1 % of 1,000 series.
#[test]
fn fifteen_percent_step_through_ten_percent_wild_runs() {
    let r = step_rates(36, 6, 0.03, 0.10, 0.15, 1000);
    assert!(r.placed >= 0.90, "{r:?}");
    assert!(r.alone >= 0.88, "{r:?}");
    assert!(false_alarms(36, 0.03, 0.10, 1000) <= 0.01);
}

/// Nearer the ends (4 runs a side, the fewest a change may have) fewer are found: printed
/// for the record, held to a lower bar.
#[test]
fn steps_near_the_ends_of_a_contaminated_series() {
    let r = step_rates(36, 4, 0.03, 0.10, 0.15, 1000);
    assert!(r.placed >= 0.80, "{r:?}");
}

/// The old detector's series (60 runs, Gaussian noise, a 5 % step on runs 10–50): the rank
/// test keeps most of the t test's power (Mann–Whitney's efficiency is 0.955 on Gaussian data).
#[test]
fn small_steps_in_gaussian_noise() {
    let r = step_rates(60, 10, 0.02, 0.0, 0.05, 1000);
    assert!(r.placed >= 0.80, "{r:?}");
    let r = step_rates(60, 10, 0.01, 0.0, 0.05, 1000);
    assert!(r.placed >= 0.95, "{r:?}");
    assert!(false_alarms(60, 0.03, 0.0, 1000) < 0.01);
}

/// The test can fail: a detector blind to outliers (the t statistic on log values, as before)
/// finds far fewer of the contaminated steps.
#[test]
fn a_mean_based_split_is_blind_through_wild_runs() {
    let (mut mean_hits, mut ours, seeds) = (0, 0, 300u64);
    for seed in 0..seeds {
        let at = place(seed, 36, 6);
        let xs = contaminated(seed, 36, 0.03, 0.10, Some((at, 0.15)));
        let logs: Vec<f64> = xs.iter().map(|v| v.ln()).collect();
        // The split of largest |mean difference| in units of the pooled sd.
        let t = |k: usize| {
            let (l, r) = logs.split_at(k);
            let ss = |p: &[f64]| {
                let m = mean(p);
                p.iter().map(|x| (x - m) * (x - m)).sum::<f64>()
            };
            let sd = ((ss(l) + ss(r)) / 34.0).sqrt();
            (mean(r) - mean(l)).abs() / (sd * (1.0 / k as f64 + 1.0 / (36 - k) as f64).sqrt())
        };
        let best = (4..=32).max_by(|&a, &b| t(a).total_cmp(&t(b))).unwrap_or(0);
        mean_hits += u64::from(best.abs_diff(at) <= 1);
        ours += u64::from(
            detect(&xs, &Settings::default())
                .iter()
                .any(|c| c.index.abs_diff(at) <= 1),
        );
    }
    eprintln!("placed ±1 of {seeds}: mean-based argmax {mean_hits}, this detector {ours}");
    assert!(ours > mean_hits + seeds / 4, "{mean_hits} {ours}");
}

/// A lone wild run, or a short burst of them, is an outlier, not a step (nor two).
#[test]
fn wild_runs_and_bursts_are_outliers_not_steps() {
    let s = Settings::default();
    let mut xs = synthetic(12, 36, 0.03, None);
    xs[17] *= 55.0;
    let d = analyse(&xs, &s);
    assert!(d.changes.is_empty(), "{d:?}");
    assert_eq!(d.outliers, [17]);
    // A burst of 5 runs in 19: longer than the neighbour screen sees, still outliers.
    let mut xs = synthetic(13, 19, 0.03, None);
    for x in &mut xs[8..13] {
        *x *= 40.0;
    }
    let d = analyse(&xs, &s);
    assert!(d.changes.is_empty(), "{d:?}");
    assert_eq!(d.outliers, (8..13).collect::<Vec<_>>());
    // …while a step of the same size that stays is one change, and no run of it an outlier.
    let mut xs = synthetic(14, 36, 0.03, None);
    for x in &mut xs[20..] {
        *x *= 40.0;
    }
    let d = analyse(&xs, &s);
    assert_eq!(d.changes.len(), 1, "{d:?}");
    assert_eq!(d.changes[0].index, 20);
    assert!((d.changes[0].relative - 39.0).abs() < 4.0, "{d:?}");
    assert!(d.outliers.is_empty(), "{d:?}");
}

/// The size of a step is the ratio of the levels' medians, untouched by wild runs.
#[test]
fn step_size_from_medians_of_the_screened_levels() {
    let mut xs = synthetic(21, 36, 0.01, Some((18, -0.2)));
    for i in [3, 9, 25, 30] {
        xs[i] *= 80.0;
    }
    let d = analyse(&xs, &Settings::default());
    assert_eq!(d.outliers, [3, 9, 25, 30]);
    assert_eq!(d.changes.len(), 1, "{d:?}");
    assert_eq!(d.changes[0].index, 18);
    assert!((d.changes[0].relative + 0.2).abs() < 0.02, "{d:?}");
}

/// A drop is reported with its sign; the scale of the values does not matter.
#[test]
fn direction_and_scale_invariance() {
    let xs = synthetic(7, 60, 0.03, Some((30, -0.08)));
    let a = detect(&xs, &Settings::default());
    let scaled: Vec<f64> = xs.iter().map(|x| x * 1e-6).collect();
    let b = detect(&scaled, &Settings::default());
    assert_eq!(a.len(), 1, "{a:?}");
    assert!(a[0].relative < -0.05 && a[0].relative > -0.11, "{a:?}");
    assert_eq!(
        a.iter().map(|c| c.index).collect::<Vec<_>>(),
        b.iter().map(|c| c.index).collect::<Vec<_>>()
    );
}

/// Two steps far apart are both found, each sized against its own neighbours; short series
/// and bad values give nothing; the same input gives the same answer; a clean step is placed
/// exactly.
#[test]
fn two_steps_short_series_and_determinism() {
    let mut xs = synthetic(11, 60, 0.02, Some((20, 0.10)));
    for x in &mut xs[42..] {
        *x *= 0.85;
    }
    let found = detect(&xs, &Settings::default());
    let idx: Vec<usize> = found.iter().map(|c| c.index).collect();
    assert_eq!(idx.len(), 2, "{found:?}");
    assert!(
        idx[0].abs_diff(20) <= 2 && idx[1].abs_diff(42) <= 2,
        "{idx:?}"
    );
    assert!((found[0].relative - 0.10).abs() < 0.03, "{found:?}");
    assert!((found[1].relative + 0.15).abs() < 0.03, "{found:?}");
    assert_eq!(found, detect(&xs, &Settings::default()));

    assert!(detect(&[1.0, 2.0, 1.0, 2.0, 1.0], &Settings::default()).is_empty());
    assert!(detect(&[1.0; 20].map(|x: f64| x * f64::NAN), &Settings::default()).is_empty());
    for at in [4, 6, 15, 26] {
        let xs: Vec<f64> = (0..30).map(|i| if i < at { 1.0 } else { 1.2 }).collect();
        let cs = detect(&xs, &Settings::default());
        assert_eq!(cs.iter().map(|c| c.index).collect::<Vec<_>>(), [at]);
    }
}

/// The split statistic peaks at a clean split; too short a segment has none; clipping
/// bounds a wild run's pull at 3 σ.
#[test]
fn the_split_statistic_and_the_clip() {
    let xs = [1.0, 1.1, 0.9, 1.0, 5.0, 5.2, 4.9, 5.1];
    assert_eq!(best_split(&xs, 2).map(|b| b.1), Some(4));
    assert_eq!(best_split(&xs[..3], 2), None);
    let psi = clipped(&[0.0, 0.01, -0.01, 0.0, 4.0], 0.01);
    assert_eq!(psi, [0.0, 0.01, -0.01, 0.0, 0.03]);
    assert_eq!(clipped(&[1.0, 2.0, 3.0], 0.0), [-1.0, 0.0, 1.0]);
}

/// A large step in little noise is placed exactly, even when the last run of the old level
/// sits low. The series is the one `history show` charted (busbw of 20 runs, a 20 % drop at
/// run index 10; run 9 is 1 % below its level, about 3 σ): clipping every run about the
/// segment's one median made the whole new level and run 9 look alike, and the step was
/// placed at 9 (and run 9 then screened as an outlier of the new level). Then 1,000 seeded
/// series of the same shape (16–30 runs, 0.5 % noise, a 20 % rise or drop anywhere with 4
/// runs a side): the share placed exactly, printed.
#[test]
fn a_large_step_is_placed_exactly() {
    let charted = [
        0.51389, 0.51192, 0.513, 0.51202, 0.51348, 0.51254, 0.51517, 0.5134, 0.51098, 0.50738,
        0.40967, 0.40658, 0.40555, 0.40957, 0.40965, 0.40538, 0.40946, 0.40981, 0.40946, 0.41144,
    ];
    let d = analyse(&charted[..15], &Settings::default());
    assert_eq!(d.changes.len(), 1, "{d:?}");
    assert_eq!(d.changes[0].index, 10, "{d:?}");
    assert!(d.outliers.is_empty(), "{d:?}");
    let d = analyse(&charted, &Settings::default());
    assert_eq!(d.changes.iter().map(|c| c.index).collect::<Vec<_>>(), [10]);
    assert!(d.outliers.is_empty(), "{d:?}");

    // Placement is what this test holds to: of the series where the step was found, the
    // share placed exactly. The whole verdict (one change, exact, no outlier) is printed and
    // held lower: a 20 % step is ln 1.2, the screen's own distance, and the clipped t loses
    // power on short series (the misses are listed).
    let (mut found, mut exact, mut clean, seeds) = (0u64, 0u64, 0u64, 1000u64);
    let mut misses = Vec::new();
    for seed in 0..seeds {
        let n = 16 + (seed as usize % 15);
        let at = place(seed, n, 4);
        let step = if seed % 2 == 0 { 0.2 } else { -0.2 };
        let xs = synthetic(seed, n, 0.005, Some((at, step)));
        let d = analyse(&xs, &Settings::default());
        let near = d
            .changes
            .iter()
            .filter(|c| (c.relative > 0.0) == (step > 0.0))
            .min_by_key(|c| c.index.abs_diff(at));
        found += u64::from(near.is_some());
        exact += u64::from(near.is_some_and(|c| c.index == at));
        if d.changes.len() == 1 && d.changes[0].index == at && d.outliers.is_empty() {
            clean += 1;
        } else if misses.len() < 5 {
            misses.push((seed, n, at, d.changes.len(), d.outliers.len()));
        }
    }
    eprintln!(
        "n 16..=30, step ±0.2 on runs 4..=n−4, noise 0.005: found {found}/{seeds}, of them placed exactly {exact}; one change placed exactly and no outlier {clean}/{seeds} (first misses as (seed, n, step at, changes, outliers): {misses:?})"
    );
    assert!(exact as f64 >= 0.995 * found as f64, "{exact}/{found}");
    assert!(clean as f64 >= 0.97 * seeds as f64, "{clean}/{seeds}");
}
