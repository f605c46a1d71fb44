//! α–β regimes of one size curve: where the library switches protocol or algorithm, found by
//! a robust penalised segmentation, each regime with its own α–β fit.
//!
//! The segmentation's cost is Tukey's biweight of each size's relative residual in units of
//! the curve's noise scale, so one noisy size costs at most a fixed amount however far off it
//! lies: splitting the curve around it cannot pay the penalty of an extra regime. A real
//! switch misfits many sizes by many noise scales, and does.

use super::fit::{relative_r2, solve_nonneg, Obs, HUBER_K, MAX_IRLS_ROUNDS};
use super::hockney::{fit_hockney, fit_hockney_min, Hockney};
use super::FitError;

/// Most regimes (protocol or algorithm ranges) one size curve is split into.
pub(crate) const MAX_REGIMES: usize = 3;

/// Fewest consecutive sizes per regime: a switch needs two sizes on each side (one size alone
/// cannot tell a new regime from a noisy measurement; the robust cost and the penalty do that).
pub(crate) const MIN_REGIME_SIZES: usize = 2;

/// Tukey's biweight tuning constant: 95 % efficiency when the residuals are Gaussian.
const TUKEY_C: f64 = 4.685;

/// The penalty per extra regime, in units of ln n on the robust cost's scale (which counts a
/// well-fitted size as its squared standardised residual and a far outlier as c²/3 ≈ 7.3).
/// Chosen by simulation (tests `one_noisy_size_does_not_split` and
/// `a_protocol_switch_is_still_found`); see [`fit_regimes`] for the rates measured.
const PENALTY_PER_SEGMENT: f64 = 8.0;

/// Relative noise is never taken below this (timer and rounding noise): without a floor, exact
/// data would have a zero noise scale and any rounding would look like a switch.
const RESIDUAL_FLOOR: f64 = 1e-4;

/// 1.4826 × MAD estimates a Gaussian standard deviation.
const MAD_TO_SD: f64 = 1.4826;

/// The standard deviation of a standard normal truncated at ±3 (to undo the truncation).
const TRUNCATED_SD_3: f64 = 0.9865;

/// One size range of a segmented α–β model, with its own fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Smallest and largest x (bus bytes F·S) of the segment's points.
    pub from_x: f64,
    pub to_x: f64,
    pub points: usize,
    pub hockney: Hockney,
}

/// A size curve's α–β model per regime: sizes split where the data say the cost changes
/// (eager/rendezvous protocols, algorithm switches), each segment fitted on its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Regimes {
    /// Segments in size order; one when a single α–β line explains the curve.
    pub segments: Vec<Segment>,
    /// One α–β fit over every size, for comparison.
    pub single: Hockney,
    /// R² of the segmented model over every point (relative residuals, as [`super::Fit::r2`]).
    pub r2: f64,
    /// Relative residuals of the segmented model, in ascending order of x.
    pub rel_residuals: Vec<f64>,
    /// The relative noise scale σ the segmentation measured residuals in (see [`noise_scale`]).
    pub noise_sd: f64,
    /// The x of every point a regime's robust fit down-weighted (charts mark them).
    pub downweighted_x: Vec<f64>,
    /// Why the model should not be read (see [`poor_reasons`]); empty when it can be.
    pub poor: Vec<String>,
}

/// Below this R² a segmented α–β model is poor.
pub(crate) const POOR_R2: f64 = 0.9;
/// A model missing any size by more than this (relative) is poor.
pub(crate) const POOR_MISS: f64 = 0.25;

/// Why a fitted model of the sorted points `pts` should not be read, each reason a phrase for
/// the report (empty: it can be): R² below [`POOR_R2`]; a size missed by more than
/// [`POOR_MISS`]; α of the smallest sizes above the smallest measured time by more than five
/// noise scales (a latency no measurement shows; the smallest of many noisy times lies up to
/// about 3σ low, and α has its own error: 3σ marked 3 of 200 good simulated curves); the largest sizes' 1/β above twice every
/// busbw measured in that regime (the sizes never reach half the asymptote, so the bandwidth
/// term is extrapolated, not measured).
pub(crate) fn poor_reasons(pts: &[(f64, f64)], r: &Regimes) -> Vec<String> {
    let mut why = Vec::new();
    if r.r2 < POOR_R2 {
        why.push(format!("R² {:.3} below {POOR_R2}", r.r2));
    }
    let miss = r.rel_residuals.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    if miss > POOR_MISS {
        why.push(format!(
            "misses a size by {:.0} % (over {:.0} %)",
            miss * 100.0,
            POOR_MISS * 100.0
        ));
    }
    let t_min = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let alpha = r.alpha_s();
    if alpha > t_min * (1.0 + 5.0 * r.noise_sd) {
        why.push(format!(
            "α {:.3} µs above the smallest measured time {:.3} µs",
            alpha * 1e6,
            t_min * 1e6
        ));
    }
    let last = r.segments.last().expect("a segment");
    let busbw_max = pts
        .iter()
        .filter(|p| p.0 >= last.from_x)
        .map(|p| p.0 / p.1)
        .fold(0.0_f64, f64::max);
    if let Some(bw) = last.hockney.bandwidth_gbps() {
        if bw * 1e9 > 2.0 * busbw_max {
            why.push(format!(
                "1/β {:.3} GB/s is over twice every measured busbw (at most {:.3} GB/s)",
                bw,
                busbw_max * 1e-9
            ));
        }
    }
    why
}

impl Regimes {
    /// Where segment `k` hands over to `k + 1`: the geometric mean of the last x of one and
    /// the first x of the next (no data lies between them).
    pub fn boundary_x(&self, k: usize) -> f64 {
        (self.segments[k].to_x * self.segments[k + 1].from_x).sqrt()
    }
    /// The segment whose range covers `x` (below the first: the first; above the last: the last).
    pub fn segment_for(&self, x: f64) -> &Segment {
        let k = (0..self.segments.len() - 1)
            .take_while(|&k| x > self.boundary_x(k))
            .count();
        &self.segments[k]
    }
    /// Time at `x` bus bytes from the regime `x` falls in.
    pub fn predict_s(&self, x: f64) -> f64 {
        self.segment_for(x).hockney.predict_s(x)
    }
    /// The latency-bound regime's α (the smallest sizes'), seconds.
    pub fn alpha_s(&self) -> f64 {
        self.segments[0].hockney.alpha_s
    }
    /// The largest sizes' asymptotic bus bandwidth 1/β, GB/s.
    pub fn bandwidth_gbps(&self) -> Option<f64> {
        self.segments
            .last()
            .and_then(|s| s.hockney.bandwidth_gbps())
    }
    /// The half-performance size of the smallest sizes' regime, x½ = α/β bus bytes: below it
    /// the latency term is the larger part of the time (`None` when β = 0).
    pub fn latency_bound_below_x(&self) -> Option<f64> {
        let h = &self.segments[0].hockney;
        (h.beta_s_per_byte > 0.0).then(|| h.alpha_s / h.beta_s_per_byte)
    }
    /// Points the robust segment fits down-weighted, in total.
    pub fn downweighted(&self) -> usize {
        self.segments
            .iter()
            .map(|s| s.hockney.fit.downweighted)
            .sum()
    }
    /// Whether any segment's fit hit the α, β ≥ 0 bound.
    pub fn constrained(&self) -> bool {
        self.segments.iter().any(|s| s.hockney.fit.constrained)
    }
}

/// The relative noise of a size curve, robustly: each inner size against the α–β line through
/// its two neighbours (exact for an α–β curve, whatever α and β), that residual divided by its
/// standard deviation in units of the noise (√(1 + a² + b²), a and b the neighbours' shares of
/// the interpolation), and the standard deviation of those within 3 robust standard
/// deviations (1.4826 × MAD) of their median. A switch or one noisy size spoils at most three
/// of them, which this ignores. Points sorted by x; at least [`RESIDUAL_FLOOR`].
fn noise_scale(pts: &[(f64, f64)]) -> f64 {
    let z: Vec<f64> = pts
        .windows(3)
        .filter_map(|w| {
            let ((x0, t0), (x1, t1), (x2, t2)) = (w[0], w[1], w[2]);
            let span = x2 - x0;
            (span > 0.0).then(|| {
                let (a, b) = ((x2 - x1) / span * t0 / t1, (x1 - x0) / span * t2 / t1);
                (1.0 - a - b) / (1.0 + a * a + b * b).sqrt()
            })
        })
        .collect();
    let Some(mid) = crate::stats::median(&z) else {
        return RESIDUAL_FLOOR;
    };
    let dev: Vec<f64> = z.iter().map(|r| (r - mid).abs()).collect();
    let mad_sd = MAD_TO_SD * crate::stats::median(&dev).unwrap_or(0.0);
    // One step further: the standard deviation of the residuals within 3 MAD-σ (a switch or
    // an outlier spoils up to 3 of as few as 10 interpolations, which biases the MAD high).
    let kept: Vec<f64> = dev.into_iter().filter(|d| *d <= 3.0 * mad_sd).collect();
    let sd = (kept.iter().map(|d| d * d).sum::<f64>() / kept.len().max(1) as f64).sqrt();
    (sd / TRUNCATED_SD_3).max(RESIDUAL_FLOOR)
}

/// Tukey's biweight loss of a standardised residual u, scaled to read u² near 0: at most
/// c²/3, reached at |u| ≥ c.
fn biweight_loss(u: f64) -> f64 {
    let c2 = TUKEY_C * TUKEY_C;
    if u.abs() >= TUKEY_C {
        return c2 / 3.0;
    }
    let q = 1.0 - u * u / c2;
    c2 / 3.0 * (1.0 - q * q * q)
}

/// Iteratively reweighted least squares from (a, b) with point weights `weight(r)` of the
/// relative residuals, until the weights settle; the last solvable (a, b).
fn irls(obs: &[Obs], mut ab: (f64, f64), weight: impl Fn(f64) -> f64) -> (f64, f64) {
    let mut h: Vec<f64> = Vec::new();
    for _ in 0..MAX_IRLS_ROUNDS {
        let next: Vec<f64> = obs
            .iter()
            .map(|o| weight((o.t - ab.0 * o.u - ab.1 * o.v) / o.t))
            .collect();
        // The first round always solves: h starts empty.
        let moved = if h.len() == next.len() {
            h.iter()
                .zip(&next)
                .fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()))
        } else {
            f64::INFINITY
        };
        if moved < 1e-9 {
            break;
        }
        h = next;
        match solve_nonneg(obs, &h) {
            Ok((a, b, _)) => ab = (a, b),
            // Too few points keep any weight to carry a line: keep the last one.
            Err(_) => break,
        }
    }
    ab
}

/// The robust cost of one α–β line over `pts` (time = a + b·x, a, b ≥ 0): Σ biweight(r/σ) at
/// the biweight M-estimate, reached from the least-squares line through a Huber fit with the
/// same fixed σ (convex, so the biweight starts near the bulk of the points, not an outlier).
fn segment_cost(pts: &[(f64, f64)], sigma: f64) -> f64 {
    let obs: Vec<Obs> = pts.iter().map(|&(x, t)| Obs { u: 1.0, v: x, t }).collect();
    let Ok((a, b, _)) = solve_nonneg(&obs, &vec![1.0; obs.len()]) else {
        return f64::INFINITY;
    };
    let cut = HUBER_K * sigma;
    let ab = irls(&obs, (a, b), |r| {
        if r.abs() <= cut {
            1.0
        } else {
            cut / r.abs()
        }
    });
    let (a, b) = irls(&obs, ab, |r| {
        let q = 1.0 - (r / (TUKEY_C * sigma)).powi(2);
        if q > 0.0 {
            q * q
        } else {
            0.0
        }
    });
    obs.iter()
        .map(|o| biweight_loss((o.t - a - b * o.v) / o.t / sigma))
        .sum()
}

/// Segment starts of the cheapest split of `n` points into `k` segments for every k up to
/// `k_max`, by dynamic programming over `cost[i][j]` (range [i, j)): (total cost, bounds).
fn best_splits(cost: &[Vec<f64>], n: usize, k_max: usize) -> Vec<(f64, Vec<usize>)> {
    // best[k][j]: k segments covering [0, j); from[k][j]: where the last one starts.
    let mut best = vec![vec![f64::INFINITY; n + 1]; k_max + 1];
    let mut from = vec![vec![0usize; n + 1]; k_max + 1];
    best[0][0] = 0.0;
    for k in 1..=k_max {
        for j in 1..=n {
            for i in 0..j {
                let c = best[k - 1][i] + cost[i][j];
                if c < best[k][j] {
                    best[k][j] = c;
                    from[k][j] = i;
                }
            }
        }
    }
    (1..=k_max)
        .map(|k| {
            let mut bounds = vec![n];
            for kk in (1..=k).rev() {
                let j = *bounds.last().expect("a bound");
                bounds.push(from[kk][j]);
            }
            bounds.reverse();
            (best[k][n], bounds)
        })
        .collect()
}

/// Fits α–β per regime to (bus bytes x, time) points of one set-up (use each size's median
/// time: one slow sample must not move it). The segmentation is robust:
///
/// - σ, the curve's relative noise, is measured by [`noise_scale`];
/// - a range of at least [`MIN_REGIME_SIZES`] consecutive sizes costs Σ biweight(r/σ) at its
///   biweight α–β fit ([`segment_cost`]): ≈ (r/σ)² for a well-fitted size, at most
///   c²/3 ≈ 7.3 for an outlier;
/// - for K = 1 … [`MAX_REGIMES`] regimes dynamic programming finds the cheapest split, and K
///   minimises cost_K + 8·(K − 1)·ln n: each extra regime must lower the robust cost by
///   8·ln n (25 at 24 sizes, 20 at 12), far more than one outlier's 7.3 can.
///
/// Measured over 200 seeded curves each (tests below; 8 B … 64 MiB in ×2 steps, and 8 B …
/// 32 MiB in ×4 steps, Gaussian noise of 1–5 %): one regime with one size ×1.2, ×1.3, ×1.5
/// or ×3 at any inner size is split in 0 of 200 (plain least squares split about half); the
/// 2 → 25 µs switch between 8 and 16 KiB is found, at those sizes, in 199 of 200 (196 of 200
/// with a ×1.3 outlier elsewhere). At 6·ln n the one-regime curves split 2–3 of 200.
///
/// Each regime is then fitted like [`fit_hockney`] (robust, α, β ≥ 0); a regime of two sizes
/// passes through both. With one regime the fit is the single fit over every size.
pub(crate) fn fit_regimes(points: &[(f64, f64)]) -> Result<Regimes, FitError> {
    fit_regimes_upto(points, MAX_REGIMES)
}

/// [`fit_regimes`] with at most `max_regimes` regimes.
fn fit_regimes_upto(points: &[(f64, f64)], max_regimes: usize) -> Result<Regimes, FitError> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, t)| *t > 0.0 && t.is_finite() && x.is_finite())
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let single = fit_hockney(&pts)?;
    let n = pts.len();
    let sigma = noise_scale(&pts);
    let k_max = max_regimes.min(n / MIN_REGIME_SIZES).max(1);
    let mut bounds = vec![0, n];
    if k_max > 1 {
        let mut cost = vec![vec![f64::INFINITY; n + 1]; n + 1];
        for (i, row) in cost.iter_mut().enumerate() {
            for (j, c) in row.iter_mut().enumerate().skip(i + MIN_REGIME_SIZES) {
                *c = segment_cost(&pts[i..j], sigma);
            }
        }
        let penalty = PENALTY_PER_SEGMENT * (n as f64).ln();
        let splits = best_splits(&cost, n, k_max);
        let criterion = |k: usize| splits[k].0 + penalty * k as f64;
        let k = (0..splits.len())
            .filter(|&k| splits[k].0.is_finite())
            .min_by(|&a, &b| criterion(a).total_cmp(&criterion(b)))
            .unwrap_or(0);
        bounds.clone_from(&splits[k].1);
    }
    let mut segments = Vec::new();
    let mut downweighted_x = Vec::new();
    for w in bounds.windows(2) {
        let part = &pts[w[0]..w[1]];
        let hockney = if bounds.len() == 2 {
            single.clone()
        } else {
            fit_hockney_min(part, MIN_REGIME_SIZES)?
        };
        downweighted_x.extend(
            part.iter()
                .zip(&hockney.fit.weights)
                .filter(|(_, w)| **w < 1.0)
                .map(|(p, _)| p.0),
        );
        segments.push(Segment {
            from_x: part[0].0,
            to_x: part[part.len() - 1].0,
            points: part.len(),
            hockney,
        });
    }
    let mut r = Regimes {
        segments,
        single,
        r2: 0.0,
        rel_residuals: Vec::new(),
        noise_sd: sigma,
        downweighted_x,
        poor: Vec::new(),
    };
    r.rel_residuals = pts.iter().map(|&(x, t)| (t - r.predict_s(x)) / t).collect();
    r.r2 = relative_r2(&pts, &r.rel_residuals);
    r.poor = poor_reasons(&pts, &r);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::test_util::{assert_recovers, hockney_points, noise};
    use crate::stats::SplitMix64;

    /// Two regimes: α1 = 2 µs, 1/β1 = 4 GB/s up to 8 KiB (eager), α2 = 25 µs, 1/β2 =
    /// 10 GB/s from 16 KiB (rendezvous), sizes 8 B – 4 MiB (×2), ±2 % noise.
    fn two_regimes() -> Vec<(f64, f64)> {
        let mut st = 11;
        (3..=22)
            .map(|e| {
                let x = (1u64 << e) as f64;
                (x, switch_at_8k(x) * (1.0 + noise(&mut st, 0.02)))
            })
            .collect()
    }

    /// The eager/rendezvous curve: 2 µs + x / 4 GB/s up to 8 KiB, 25 µs + x / 10 GB/s above.
    fn switch_at_8k(x: f64) -> f64 {
        if x <= 8192.0 {
            2e-6 + x / 4e9
        } else {
            25e-6 + x / 10e9
        }
    }

    /// A sweep's sizes, as the harness runs them: 8 B … 64 MiB in ×2 steps (24 sizes) for even
    /// seeds, 8 B … 32 MiB in ×4 steps (12 sizes) for odd ones.
    fn sweep_sizes(seed: u64) -> Vec<f64> {
        let step = if seed % 2 == 0 { 1 } else { 2 };
        (3..=26).step_by(step).map(|e| (1u64 << e) as f64).collect()
    }

    /// `truth` at the seed's sizes with Gaussian relative noise of 1–5 % (the level drawn per
    /// curve), as per-size medians of a real sweep scatter.
    fn noisy_curve(seed: u64, truth: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        let mut rng = SplitMix64(seed.wrapping_mul(0x9e37_79b9) + 17);
        let sd = 0.01 + 0.04 * rng.uniform();
        sweep_sizes(seed)
            .into_iter()
            .map(|x| (x, truth(x) * (1.0 + sd * rng.normal()).max(0.5)))
            .collect()
    }

    #[test]
    fn two_regimes_are_found_with_their_parameters() {
        let pts = two_regimes();
        let r = fit_regimes(&pts).unwrap();
        assert_eq!(r.segments.len(), 2, "{:?}", r.segments);
        // The breakpoint lies exactly between the 8 KiB and 16 KiB measurements.
        assert_eq!(
            (r.segments[0].to_x, r.segments[1].from_x),
            (8192.0, 16384.0)
        );
        // Tolerances: 10 % on α and 1/β (±2 % noise on 10 and 10 points).
        assert_recovers(&r.segments[0].hockney, 2e-6, 4.0, 0.10);
        assert_recovers(&r.segments[1].hockney, 25e-6, 10.0, 0.10);
        assert!(r.segments.iter().all(|s| s.hockney.fit.r2 > 0.98));
        // One line over both regimes explains far less (R² and residuals).
        assert!(
            r.r2 > 0.99 && r.r2 > r.single.fit.r2,
            "{} {}",
            r.r2,
            r.single.fit.r2
        );
        assert!(r.single.fit.max_abs_rel_residual() > 0.2);
        // Predictions use the size's own regime.
        let below = 4096.0;
        assert!((r.predict_s(below) - (2e-6 + below / 4e9)).abs() / (2e-6 + below / 4e9) < 0.05);
        let above = 1048576.0;
        let truth = 25e-6 + above / 10e9;
        assert!((r.predict_s(above) - truth).abs() / truth < 0.05);
        assert!((r.boundary_x(0) - (8192.0f64 * 16384.0).sqrt()).abs() < 1e-6);
        // Half-performance size of the latency regime: α/β = 2 µs × 4 GB/s = 8 kB.
        let half = r.latency_bound_below_x().unwrap();
        assert!((half - 8000.0).abs() / 8000.0 < 0.15, "{half}");
    }

    /// One regime (α = 5 µs, 1/β = 12.5 GB/s) with one size inflated ×`factor`, the inflated
    /// size cycling over every inner size: how many of 200 seeded curves are split.
    fn outlier_splits(factor: f64) -> usize {
        (0..200u64)
            .filter(|&seed| {
                let mut pts = noisy_curve(seed, |x| 5e-6 + x / 12.5e9);
                let at = 1 + (seed as usize / 2) % (pts.len() - 2);
                pts[at].1 *= factor;
                fit_regimes(&pts).unwrap().segments.len() > 1
            })
            .count()
    }

    /// The case: one noisy size must not fake a protocol switch. Measured over 200
    /// seeds each (1–5 % noise, ×2 and ×4 sweeps): ×1.3 at an inner size splits 0 of 200
    /// (at most 2 % = 4 allowed); ×1.2, ×1.5, ×3 and no outlier: 0 of 200 each.
    #[test]
    fn one_noisy_size_does_not_split() {
        let rates: Vec<(f64, usize)> = [1.0, 1.2, 1.3, 1.5, 3.0]
            .iter()
            .map(|&f| (f, outlier_splits(f)))
            .collect();
        eprintln!("splits of 200 by outlier factor: {rates:?}");
        for (f, split) in rates {
            assert!(split <= 4, "×{f}: {split} of 200 one-regime curves split");
        }
    }

    /// The switch the segmentation exists for (2 µs → 25 µs between 8 and 16 KiB) is still
    /// found, at the right sizes: 199 of 200 seeded curves (at least 97 % = 194 required),
    /// and 196 of 200 with one ×1.3 outlier at an inner size as well.
    #[test]
    fn a_protocol_switch_is_still_found() {
        let found = |outlier: bool| {
            (0..200u64)
                .filter(|&seed| {
                    let mut pts = noisy_curve(seed, switch_at_8k);
                    if outlier {
                        // Not the sizes either side of the switch: 8 KiB or 16 KiB ×1.3 is
                        // as much a shifted switch as a noisy size (at ×4 steps the data
                        // cannot tell).
                        let inner: Vec<usize> = (1..pts.len() - 1)
                            .filter(|&i| pts[i].0 < 4096.0 || pts[i].0 > 32768.0)
                            .collect();
                        pts[inner[(seed as usize / 2) % inner.len()]].1 *= 1.3;
                    }
                    let r = fit_regimes(&pts).unwrap();
                    let mut last_eager = pts.iter().map(|p| p.0).filter(|&x| x <= 8192.0);
                    let first_rdv = pts.iter().map(|p| p.0).find(|&x| x >= 16384.0);
                    r.segments.len() == 2
                        && Some(r.segments[0].to_x) == last_eager.next_back()
                        && Some(r.segments[1].from_x) == first_rdv
                })
                .count()
        };
        let (plain, with_outlier) = (found(false), found(true));
        eprintln!("switch found in {plain} / 200, with an outlier {with_outlier} / 200");
        assert!(plain >= 194, "switch found in {plain} of 200");
        assert!(
            with_outlier >= 194,
            "with an outlier: {with_outlier} of 200"
        );
    }

    /// Median of σ̂/σ over 200 seeded curves of `truth` (1–5 % Gaussian noise), with one
    /// size ×1.5 when `outlier`.
    fn median_noise_ratio(truth: fn(f64) -> f64, outlier: bool) -> f64 {
        let mut r: Vec<f64> = (0..200u64)
            .map(|seed| {
                let mut rng = SplitMix64(seed + 5);
                let sd = 0.01 + 0.04 * rng.uniform();
                let mut pts: Vec<(f64, f64)> = sweep_sizes(seed)
                    .into_iter()
                    .map(|x| (x, truth(x) * (1.0 + sd * rng.normal())))
                    .collect();
                if outlier {
                    pts[5].1 *= 1.5;
                }
                noise_scale(&pts) / sd
            })
            .collect();
        r.sort_by(f64::total_cmp);
        r[100]
    }

    /// The noise scale reads the curve's noise, not its shape or one outlier. Median σ̂/σ over
    /// 200 seeded curves: 0.97 on one regime, 1.10 with one ×1.5 size, 0.98 with the 8 KiB switch.
    #[test]
    fn noise_scale_reads_the_noise() {
        let one: fn(f64) -> f64 = |x| 5e-6 + x / 12.5e9;
        let ratios = [
            median_noise_ratio(one, false),
            median_noise_ratio(one, true),
            median_noise_ratio(switch_at_8k, false),
        ];
        eprintln!("median noise ratios: {ratios:?}");
        assert!((ratios[0] - 1.0).abs() < 0.15, "{ratios:?}");
        assert!((ratios[1] - 1.0).abs() < 0.15, "{ratios:?}");
        assert!(ratios[2] > 0.85 && ratios[2] < 1.4, "{ratios:?}");
        // exact data: the floor
        let exact: Vec<(f64, f64)> = (3..20).map(|e| (f64::from(1 << e), 1e-5)).collect();
        assert_eq!(noise_scale(&exact), RESIDUAL_FLOOR);
    }

    #[test]
    fn one_regime_stays_one_segment() {
        // α = 5 µs, 1/β = 12.5 GB/s, 8 B – 256 MiB, ±3 % noise (as the single-fit test).
        let (alpha, beta) = (5e-6, 1.0 / 12.5e9);
        let pts = hockney_points(alpha, beta);
        let r = fit_regimes(&pts).unwrap();
        assert_eq!(r.segments.len(), 1, "{:?}", r.segments);
        assert_eq!(r.segments[0].hockney, r.single);
        assert_recovers(&r.segments[0].hockney, alpha, 12.5, 0.03);
        // Exact data: one segment, R² 1.
        let exact: Vec<(f64, f64)> = (4..=20)
            .map(|e| {
                let x = (1u64 << e) as f64;
                (x, 1e-5 + x * 1e-10)
            })
            .collect();
        let r = fit_regimes(&exact).unwrap();
        assert_eq!(r.segments.len(), 1);
        assert!((r.r2 - 1.0).abs() < 1e-9);
        // Too few points for two regimes of 2: one; too few for a fit: refused.
        assert_eq!(fit_regimes(&exact[..3]).unwrap().segments.len(), 1);
        assert!(fit_regimes(&exact[..2]).is_err());
    }

    /// Honest fits: two regimes forced into one α–β line are poor (R² under 0.9 and sizes
    /// missed by over 25 %), the segmented model of the same data is not, and neither is a
    /// noisy one-regime curve; an α–β line forced onto times that fall with size is poor.
    #[test]
    fn poor_fits_are_marked() {
        let pts = two_regimes();
        let forced = fit_regimes_upto(&pts, 1).unwrap();
        assert_eq!(forced.segments.len(), 1);
        assert!(forced.r2 < POOR_R2, "{}", forced.r2);
        assert!(
            forced.poor.iter().any(|w| w.starts_with("R²")),
            "{:?}",
            forced.poor
        );
        assert!(
            forced.poor.iter().any(|w| w.starts_with("misses")),
            "{:?}",
            forced.poor
        );
        assert!(fit_regimes(&pts).unwrap().poor.is_empty());
        let poor_one = (0..200u64)
            .filter(|&seed| {
                !fit_regimes(&noisy_curve(seed, |x| 5e-6 + x / 12.5e9))
                    .unwrap()
                    .poor
                    .is_empty()
            })
            .count();
        assert_eq!(poor_one, 0, "{poor_one} of 200 good curves marked poor");
        // Times falling with size: α is fitted above the smallest time.
        let falling: Vec<(f64, f64)> = (3..=20)
            .map(|e| (f64::from(1 << e), 1e-3 / f64::from(e)))
            .collect();
        let r = fit_regimes(&falling).unwrap();
        assert!(r.poor.iter().any(|w| w.starts_with("α")), "{:?}", r.poor);
        // Sizes far below the half-bandwidth point: 1/β is extrapolated.
        let latency: Vec<(f64, f64)> = (3..=10)
            .map(|e| {
                let x = f64::from(1 << e);
                (
                    x,
                    (10e-6 + x / 10e9) * (1.0 + 0.01 * f64::from(e % 3) - 0.01),
                )
            })
            .collect();
        let r = fit_regimes(&latency).unwrap();
        assert!(r.poor.iter().any(|w| w.starts_with("1/β")), "{:?}", r.poor);
    }
}
