//! Change points in a performance series: a pure function over values in run order, built to
//! hold on the noise of shared machines (heavy tails, one run in nine 10–100× off its level).
//!
//! **Method** (docs/history.md has the measured rates):
//!
//! 1. Work on `ln(value)`: a step is then a ratio, the same at any scale.
//! 2. **Screen wild runs** ([`screen`]): a run is an outlier when it is further than
//!    max(`outlier_sigmas` σ, ln `outlier_min_ratio`) from the median of its neighbours on
//!    *each* side (up to [`SIDE`] runs a side; at an end, from the one side there is). σ is
//!    the robust noise of one run: 1.4826 × MAD of the first differences / √2, which a step
//!    moves only once and wild runs not at all. A run at the edge of a new level agrees with
//!    the neighbours on one side, so steps are never screened; a lone spike or a short burst
//!    agrees with neither.
//! 3. **Binary segmentation with a robust statistic and a permutation test** on the screened
//!    runs: in a segment, each run's deviation from the segment's median is clipped at
//!    ±[`CLIP_SIGMAS`] σ (Huber's ψ, so a heavy tail the screen let through pulls no harder than
//!    a run 3 σ off); the split maximising the pooled two-sample t of the clipped values (each
//!    side ≥ `min_segment` runs) is the candidate; `permutations` shuffles give the p-value of
//!    that *maximum* (exact under no change: the runs are then exchangeable, whatever their
//!    distribution). SplitMix64 is seeded from the values, so the answer is a function of the
//!    input. If p ≤ `alpha` the step is placed by the window rule ([`locate_robust`], ±1 run:
//!    each side held to its own median with Huber's loss, so a large step keeps its size) and,
//!    if the levels' medians either side differ by at least `min_relative`, it is a change
//!    point; both halves are searched again. (A rank CUSUM — Mann–Whitney — was measured first: 85.3 %
//!    placed on the series, because a perfect separation of 5 runs from 27 gives a
//!    standardised rank statistic of only 3.5, within the null maximum's range; the clipped t
//!    is not bounded that way. docs/history.md.)
//! 4. **Bursts are outliers, not two steps**: a short inner segment (under 2 × `min_segment`
//!    runs) whose median is wild against both neighbouring segments, which agree with each
//!    other, is folded back: its runs become outliers and its two change points go.
//!    Likewise any run further than the screen's distance from its own level's median (a
//!    burst too long for the neighbour screen, too short to be a level).
//! 5. The size of a step is the ratio of the medians of the screened runs of the two levels
//!    it separates (not of everything either side of it).
//!
//! Series shorter than `2 × min_segment` (after screening) give no change points.

mod locate;

use crate::stats::SplitMix64;
use locate::locate_robust;

/// Settings of the detector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Largest permutation p-value that counts as a change.
    pub alpha: f64,
    /// Permutations per test.
    pub permutations: usize,
    /// Fewest (screened) runs on each side of a change.
    pub min_segment: usize,
    /// Smallest relative change reported (0.0: any significant change).
    pub min_relative: f64,
    /// A run this many robust noise σ from its neighbours on each side is an outlier…
    pub outlier_sigmas: f64,
    /// …when it is also at least this ratio off (1.2: 20 % above or below).
    pub outlier_min_ratio: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.005,
            permutations: 999,
            min_segment: 4,
            min_relative: 0.0,
            outlier_sigmas: 5.0,
            outlier_min_ratio: 1.2,
        }
    }
}

/// One change point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// Index of the first value of the new level.
    pub index: usize,
    /// Relative change of the level: the median of the new level's screened runs over the
    /// old level's, − 1 (+0.05 is 5 % higher).
    pub relative: f64,
    /// Permutation p-value of the split.
    pub p_value: f64,
}

/// What [`analyse`] finds in a series.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Detection {
    /// Change points, in index order.
    pub changes: Vec<Change>,
    /// Indices of the runs screened as outliers (wild runs and short bursts), in order.
    pub outliers: Vec<usize>,
}

/// Runs each side whose median a run is held to in the screen.
pub const SIDE: usize = 5;

/// The change points of `values` (all finite and > 0), in index order.
pub fn detect(values: &[f64], s: &Settings) -> Vec<Change> {
    analyse(values, s).changes
}

/// Change points and outliers of `values` (all finite and > 0; anything else gives nothing).
pub fn analyse(values: &[f64], s: &Settings) -> Detection {
    let min_segment = s.min_segment.max(2);
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return Detection::default();
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let cut = cut_of(&logs, s);
    let wild = screen(&logs, cut);
    let kept: Vec<usize> = (0..logs.len()).filter(|&i| !wild[i]).collect();
    let xs: Vec<f64> = kept.iter().map(|&i| logs[i]).collect();
    let mut rng = SplitMix64(seed_of(&logs));
    let mut splits = segment(&xs, min_segment, sigma_of(&logs), s, &mut rng);
    let mut outliers: Vec<usize> = (0..logs.len()).filter(|&i| wild[i]).collect();
    for (first, end) in fold_bursts(&xs, &mut splits, min_segment, cut) {
        outliers.extend(&kept[first..end]);
    }
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(splits.iter().map(|c| c.0))
        .chain(std::iter::once(xs.len()))
        .collect();
    // A burst too long for the neighbour screen and too short to split off sits wild
    // against its own level.
    for w in bounds.windows(2) {
        let level = median(&xs[w[0]..w[1]]);
        outliers.extend(
            (w[0]..w[1])
                .filter(|&i| (xs[i] - level).abs() > cut)
                .map(|i| kept[i]),
        );
    }
    outliers.sort_unstable();
    outliers.dedup();
    let changes = splits
        .iter()
        .enumerate()
        .map(|(j, &(at, p))| {
            let before = median(&xs[bounds[j]..at]);
            let after = median(&xs[at..bounds[j + 2]]);
            Change {
                index: kept[at],
                relative: (after - before).exp() - 1.0,
                p_value: p,
            }
        })
        .collect();
    Detection { changes, outliers }
}

/// The distance (log scale) beyond which a run is wild: max(k σ, ln ratio), σ the robust
/// noise of one run from its first differences (a step moves one difference, a wild run two).
fn cut_of(logs: &[f64], s: &Settings) -> f64 {
    (s.outlier_sigmas * sigma_of(logs)).max(s.outlier_min_ratio.max(1.0).ln())
}

/// The robust noise of one run (log scale): 1.4826 × MAD of the first differences / √2.
fn sigma_of(logs: &[f64]) -> f64 {
    let diffs: Vec<f64> = logs.windows(2).map(|w| w[1] - w[0]).collect();
    if diffs.is_empty() {
        return 0.0;
    }
    let m = median(&diffs);
    let dev: Vec<f64> = diffs.iter().map(|d| (d - m).abs()).collect();
    1.4826 * median(&dev) / std::f64::consts::SQRT_2
}

/// Noise σs from the segment's median at which a run's pull on the split statistic stops
/// growing (Huber's ψ): a heavy tail the screen let through moves the statistic no more than
/// a run 3 σ off.
const CLIP_SIGMAS: f64 = 3.0;

/// Huber's ψ of the segment about its median: each run's deviation, clipped at
/// ±[`CLIP_SIGMAS`] σ (not clipped where σ is 0: a noise-free series).
fn clipped(seg: &[f64], sigma: f64) -> Vec<f64> {
    let centre = median(seg);
    let w = CLIP_SIGMAS * sigma;
    seg.iter()
        .map(|x| {
            let d = x - centre;
            if w > 0.0 {
                d.clamp(-w, w)
            } else {
                d
            }
        })
        .collect()
}

/// Which runs are wild: further than `cut` from the median of the (up to [`SIDE`]) runs on
/// each side; at an end, from the side there is. A run with neither side is kept.
pub(super) fn screen(logs: &[f64], cut: f64) -> Vec<bool> {
    let n = logs.len();
    (0..n)
        .map(|i| {
            let left = &logs[i.saturating_sub(SIDE)..i];
            let right = &logs[i + 1..(i + 1 + SIDE).min(n)];
            let off = |side: &[f64]| side.is_empty() || (logs[i] - median(side)).abs() > cut;
            (!left.is_empty() || !right.is_empty()) && off(left) && off(right)
        })
        .collect()
}

/// Binary segmentation of `xs` by the clipped two-sample t with a permutation test: (index of
/// the first point of each new level, its p-value), in index order.
fn segment(
    xs: &[f64],
    min_segment: usize,
    sigma: f64,
    s: &Settings,
    rng: &mut SplitMix64,
) -> Vec<(usize, f64)> {
    let mut found = Vec::new();
    let mut stack = vec![(0usize, xs.len())];
    while let Some((a, b)) = stack.pop() {
        let seg = &xs[a..b];
        let psi = clipped(seg, sigma);
        let Some((t_obs, at)) = best_split(&psi, min_segment) else {
            continue;
        };
        let p = permutation_p(&psi, t_obs, min_segment, s.permutations, rng);
        if p > s.alpha {
            continue;
        }
        // The test says whether there is a step; the window rule places it: the place whose
        // ±1 run holds the most posterior mass (the Bayes rule for "within ±1 run"), each side
        // held to its own level with Huber's loss (clipping about one median would shrink a
        // large step to the clip).
        let split = locate_robust(seg, min_segment, 1, sigma, CLIP_SIGMAS).unwrap_or(at);
        let relative = (median(&seg[split..]) - median(&seg[..split])).exp() - 1.0;
        if relative.abs() >= s.min_relative {
            found.push((a + split, p));
            stack.push((a, a + split));
            stack.push((a + split, b));
        }
    }
    found.sort_by_key(|c| c.0);
    found
}

/// Inner segments shorter than `2 × min_segment` that sit wild (beyond `cut`) against both
/// neighbouring levels while those agree: a burst of slow runs, not two steps. Their change
/// points are removed from `splits`; returns their ranges (into `xs`).
fn fold_bursts(
    xs: &[f64],
    splits: &mut Vec<(usize, f64)>,
    min_segment: usize,
    cut: f64,
) -> Vec<(usize, usize)> {
    let mut bursts = Vec::new();
    let mut j = 0;
    while j + 1 < splits.len() {
        let (first, end) = (splits[j].0, splits[j + 1].0);
        let before = if j == 0 { 0 } else { splits[j - 1].0 };
        let after = splits.get(j + 2).map_or(xs.len(), |c| c.0);
        let (l, m, r) = (
            median(&xs[before..first]),
            median(&xs[first..end]),
            median(&xs[end..after]),
        );
        if end - first < 2 * min_segment
            && (l - r).abs() <= cut
            && (m - l).abs() > cut
            && (m - r).abs() > cut
        {
            bursts.push((first, end));
            splits.drain(j..j + 2);
        } else {
            j += 1;
        }
    }
    bursts
}

/// The series' own seed: the same values always give the same answer.
fn seed_of(xs: &[f64]) -> u64 {
    xs.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ x.to_bits()).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Median of finite values (NaN for none).
fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::quantile_sorted(&s, 0.5)
}

/// The largest pooled two-sample t statistic over splits with `min_segment` points a side,
/// and where it is (index of the first point on the right). O(n) with prefix sums.
fn best_split(xs: &[f64], min_segment: usize) -> Option<(f64, usize)> {
    let n = xs.len();
    if n < 2 * min_segment {
        return None;
    }
    let (mut sum, mut sq) = (0.0, 0.0);
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push((0.0, 0.0));
    for x in xs {
        sum += x;
        sq += x * x;
        prefix.push((sum, sq));
    }
    let (tot, tot_sq) = (sum, sq);
    let mut best: Option<(f64, usize)> = None;
    for (k, &(sl, ql)) in prefix
        .iter()
        .enumerate()
        .take(n - min_segment + 1)
        .skip(min_segment)
    {
        let (sr, qr) = (tot - sl, tot_sq - ql);
        let (nl, nr) = (k as f64, (n - k) as f64);
        let (ml, mr) = (sl / nl, sr / nr);
        let ss = (ql - nl * ml * ml).max(0.0) + (qr - nr * mr * mr).max(0.0);
        let var = ss / (n as f64 - 2.0);
        // Identical values on both sides: no spread to judge a step by; a tiny floor keeps a
        // step between two constant levels infinitely significant rather than undefined.
        let t = (mr - ml).abs() / (var.max(1e-300) * (1.0 / nl + 1.0 / nr)).sqrt();
        if best.is_none_or(|(b, _)| t > b) {
            best = Some((t, k));
        }
    }
    best
}

/// Share of shuffles (plus the observed order) whose best split is at least as strong:
/// exact under no change, since the runs are then exchangeable.
fn permutation_p(
    xs: &[f64],
    t_obs: f64,
    min_segment: usize,
    permutations: usize,
    rng: &mut SplitMix64,
) -> f64 {
    let mut work = xs.to_vec();
    let mut at_least = 0usize;
    for _ in 0..permutations {
        // Fisher–Yates.
        for i in (1..work.len()).rev() {
            let j = ((rng.uniform() * (i + 1) as f64) as usize).min(i);
            work.swap(i, j);
        }
        if best_split(&work, min_segment).is_some_and(|(t, _)| t >= t_obs) {
            at_least += 1;
        }
    }
    (1 + at_least) as f64 / (1 + permutations) as f64
}

/// Synthetic series for tests and the sweep example: `n` values around 1.0 with relative
/// Gaussian noise `noise`, multiplied by `1 + step` from index `at` on (if any).
pub fn synthetic(seed: u64, n: usize, noise: f64, step: Option<(usize, f64)>) -> Vec<f64> {
    contaminated(seed, n, noise, 0.0, step)
}

/// As [`synthetic`], then each run, with probability `wild`, multiplied by U(10, 100) (a slow
/// run of a loaded host, the "one value in nine 10–100× off"). The contamination has
/// its own stream, so the clean noise is [`synthetic`]'s.
pub fn contaminated(
    seed: u64,
    n: usize,
    noise: f64,
    wild: f64,
    step: Option<(usize, f64)>,
) -> Vec<f64> {
    let mut rng = SplitMix64(seed);
    let mut bad = SplitMix64(seed ^ 0x00c0_ffee_d15e_a5e5);
    (0..n)
        .map(|i| {
            let level = match step {
                Some((at, s)) if i >= at => 1.0 + s,
                _ => 1.0,
            };
            let x = level * (1.0 + noise * rng.normal());
            if bad.uniform() < wild {
                x * (10.0 + 90.0 * bad.uniform())
            } else {
                x
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
