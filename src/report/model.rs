//! Cost models fitted to measurements, as pure functions: Hockney's α–β model per collective and
//! set-up (time = α + β·F·S), and ring / tree forms across device counts that predict larger
//! scales and are checked on a held-out measured scale.
//!
//! Fits are weighted least squares with weights 1/t², i.e. they minimise relative residuals, so
//! an 8-byte latency and a 1-GiB transfer count alike (an unweighted fit would let the largest
//! sizes decide everything and leave α meaningless), made robust with Huber weights (one
//! preempted point on a busy node must not move α and β). Coefficients are constrained to be
//! ≥ 0: a negative latency or per-byte cost has no physical reading.

use crate::params::Workload;

/// The definitions of the model figures, as (term, definition) pairs, for the report.
pub(crate) const DEFINITIONS: &[(&str, &str)] = &[
    (
        "α–β fit (per set-up)",
        "Hockney's model time = α + β·F·S fitted to the headline times of every size of one collective, variant and set-up (F = the busbw factor, so β is seconds per bus byte). Weighted least squares with weights 1/t² (it minimises the relative residuals, so small and large sizes count alike), made robust by Huber reweighting (a point whose relative residual lies beyond 1.345 robust standard deviations, 1.4826 × MAD, counts less; `N down-weighted` names how many did, e.g. preempted measurements), with α, β ≥ 0 (`constrained` marks fits where the free optimum was negative). α (µs) is the latency of a zero-byte operation; 1/β (GB/s) the asymptotic bus bandwidth. R² = 1 − Σ r² / Σ ((t − t̄_w)/t)² with relative residuals r = (t − t̂)/t and t̄_w the weighted mean; residuals are reported as their RMS and largest |r|. At least 3 sizes are needed; 1-device set-ups move no data and are not fitted.",
    ),
    (
        "α–β regimes",
        "MPI libraries switch protocol and algorithm with the size (eager to rendezvous, OSU's 8 KiB switch point; tree to ring), so one α–β line describes neither range. Each set-up's size curve is split by segmented least squares on the same relative residuals: for 1 to 3 segments of at least 3 sizes each, the split with the smallest residual sum RSS_K is found, and the number K minimising n·ln(RSS_K/n) + 6·K·ln n is kept (each extra segment must pay 6·ln n, twice plain BIC's, because the breakpoint is the best of many positions; residuals under 0.01 % count as 0.01 %). Each segment gets its own robust α–β fit and R²; the switch sizes lie between the last size of one regime and the first of the next. Predictions at a size use that size's regime (the hand-over lies at the geometric mean of the two sizes). The collective tables give α of the smallest sizes' regime, 1/β of the largest sizes' regime and the R² of the whole segmented model; `latency-bound below` is that first regime's half-performance size α/(β·F): below it the latency term is most of the time.",
    ),
    (
        "forms across scales",
        "For each collective, variant and set-up family, the forms listed with their formulas (p = devices, S = size; ring-like forms have latency terms linear in p, tree-like ones logarithmic) are fitted by the same robust weighted least squares to every size at every device count ≥ 2. Reduction arithmetic (γ) is not separated and folds into β.",
    ),
    (
        "held-out check",
        "Each form is also fitted on the smaller device counts only and used to predict the largest measured one; the median and largest |predicted − measured| / measured over its sizes say how well the form extrapolates. The form with the smallest held-out median error makes the predictions (without a held-out check: the smallest in-sample RMS residual); above 25 % its predictions are marked unreliable.",
    ),
    (
        "prediction",
        "Time at 2× and 4× the largest measured device count from the chosen form fitted on all measured scales. A PREDICTION, not a measurement: it assumes the same network, library and algorithm at the larger scale.",
    ),
];

/// A held-out median error above this marks a form's predictions as unreliable.
pub(crate) const UNRELIABLE_HOLDOUT: f64 = 0.25;

/// Fewest points a two-coefficient fit accepts (two coefficients plus one degree of freedom).
pub(crate) const MIN_POINTS: usize = 3;

/// One observation of time = a·u + b·v.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Obs {
    pub u: f64,
    pub v: f64,
    pub t: f64,
}

/// A weighted, non-negative least-squares fit of time = a·u + b·v.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub a: f64,
    pub b: f64,
    /// Weighted R² = 1 − Σw·r² / Σw·(t − t̄_w)², w = 1/t².
    pub r2: f64,
    /// Relative residuals (t − t̂) / t, in the order of the observations.
    pub rel_residuals: Vec<f64>,
    /// True when the unconstrained optimum had a negative coefficient, so one was fixed at 0.
    pub constrained: bool,
    /// Points the robust fit counted less than fully (outliers, e.g. preempted measurements).
    pub downweighted: usize,
}

impl Fit {
    pub fn predict(&self, u: f64, v: f64) -> f64 {
        self.a * u + self.b * v
    }
    /// Root mean square of the relative residuals.
    pub fn rms_rel_residual(&self) -> f64 {
        let n = self.rel_residuals.len().max(1) as f64;
        (self.rel_residuals.iter().map(|r| r * r).sum::<f64>() / n).sqrt()
    }
    /// Largest |relative residual|.
    pub fn max_abs_rel_residual(&self) -> f64 {
        self.rel_residuals
            .iter()
            .fold(0.0_f64, |m, r| m.max(r.abs()))
    }
}

/// Why a fit was not made; the text goes into the report as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    #[error("{have} usable point(s); a fit needs at least {need}")]
    TooFew { have: usize, need: usize },
    #[error("the points do not separate the latency term from the per-byte term (e.g. every point has the same size)")]
    Degenerate,
    #[error("{0}")]
    NotApplicable(String),
}

/// Huber's tuning constant: 95 % efficiency when the residuals are Gaussian.
const HUBER_K: f64 = 1.345;
/// Reweighting rounds at most (they converge in a handful).
const MAX_IRLS_ROUNDS: usize = 50;

/// Fits time = a·u + b·v with weights 1/t², a, b ≥ 0, made robust by iteratively reweighted
/// least squares with Huber weights: a point whose relative residual exceeds 1.345 robust
/// standard deviations (1.4826 × the median absolute deviation) counts less, so one preempted
/// measurement cannot drag the fit. Exact data fit as plain weighted least squares; with
/// Gaussian noise the fit keeps 95 % of least squares' efficiency (and some points beyond
/// 1.345 σ count slightly less). Observations with a non-positive or non-finite time are left
/// out.
pub(crate) fn fit_nonneg(obs: &[Obs]) -> Result<Fit, FitError> {
    let obs: Vec<Obs> = obs
        .iter()
        .copied()
        .filter(|o| o.t > 0.0 && o.t.is_finite() && o.u.is_finite() && o.v.is_finite())
        .collect();
    if obs.len() < MIN_POINTS {
        return Err(FitError::TooFew {
            have: obs.len(),
            need: MIN_POINTS,
        });
    }
    let rel = |a: f64, b: f64| -> Vec<f64> {
        obs.iter()
            .map(|o| (o.t - a * o.u - b * o.v) / o.t)
            .collect()
    };
    let mut h = vec![1.0; obs.len()];
    let (mut a, mut b, mut constrained) = solve_nonneg(&obs, &h)?;
    for _ in 0..MAX_IRLS_ROUNDS {
        let next = huber_weights(&rel(a, b));
        let moved = next
            .iter()
            .zip(&h)
            .fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()));
        if moved < 1e-9 {
            break;
        }
        h = next;
        (a, b, constrained) = solve_nonneg(&obs, &h)?;
    }
    let rel_residuals = rel(a, b);
    let ssr: f64 = rel_residuals.iter().map(|r| r * r).sum();
    let sw: f64 = obs.iter().map(|o| 1.0 / (o.t * o.t)).sum();
    let mean_w = obs.iter().map(|o| 1.0 / o.t).sum::<f64>() / sw;
    let sst: f64 = obs.iter().map(|o| ((o.t - mean_w) / o.t).powi(2)).sum();
    let r2 = if sst > 0.0 {
        1.0 - ssr / sst
    } else if ssr == 0.0 {
        1.0
    } else {
        0.0
    };
    Ok(Fit {
        a,
        b,
        r2,
        rel_residuals,
        constrained,
        downweighted: h.iter().filter(|&&w| w < 1.0).count(),
    })
}

/// Huber weights of relative residuals: 1 inside k robust standard deviations, k·s/|r|
/// beyond. All 1 when the residuals have no spread (exact data).
pub(crate) fn huber_weights(residuals: &[f64]) -> Vec<f64> {
    let ones = vec![1.0; residuals.len()];
    let Some(mid) = crate::stats::median(residuals) else {
        return ones;
    };
    let dev: Vec<f64> = residuals.iter().map(|r| (r - mid).abs()).collect();
    let scale = 1.4826 * crate::stats::median(&dev).unwrap_or(0.0);
    // Below this, residuals are rounding: nothing to down-weight.
    if scale.is_nan() || scale <= 1e-12 {
        return ones;
    }
    let cut = HUBER_K * scale;
    residuals
        .iter()
        .map(|r| if r.abs() <= cut { 1.0 } else { cut / r.abs() })
        .collect()
}

/// Weighted non-negative least squares of time = a·u + b·v, point weights `h`/t². Returns
/// (a, b, whether a bound was active).
fn solve_nonneg(obs: &[Obs], h: &[f64]) -> Result<(f64, f64, bool), FitError> {
    let (mut suu, mut suv, mut svv, mut sut, mut svt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (o, hw) in obs.iter().zip(h) {
        let w = hw / (o.t * o.t);
        suu += w * o.u * o.u;
        suv += w * o.u * o.v;
        svv += w * o.v * o.v;
        sut += w * o.u * o.t;
        svt += w * o.v * o.t;
    }
    let det = suu * svv - suv * suv;
    // Relative test: the design is singular when u and v are proportional over all points.
    if det.is_nan() || det <= 1e-10 * suu * svv {
        return Err(FitError::Degenerate);
    }
    let a0 = (sut * svv - svt * suv) / det;
    let b0 = (svt * suu - sut * suv) / det;
    if a0 >= 0.0 && b0 >= 0.0 {
        return Ok((a0, b0, false));
    }
    // The optimum lies on a boundary: the better of the two one-coefficient fits.
    let wsse = |a: f64, b: f64| -> f64 {
        obs.iter()
            .zip(h)
            .map(|(o, hw)| hw * ((o.t - a * o.u - b * o.v) / o.t).powi(2))
            .sum()
    };
    let only_b = (0.0, (svt / svv).max(0.0));
    let only_a = ((sut / suu).max(0.0), 0.0);
    let best = if wsse(only_b.0, only_b.1) <= wsse(only_a.0, only_a.1) {
        only_b
    } else {
        only_a
    };
    Ok((best.0, best.1, true))
}

/// Hockney's model for one collective and set-up: time = α + β·(F·S), F = the busbw factor.
#[derive(Debug, Clone, PartialEq)]
pub struct Hockney {
    /// Latency term: the time of a zero-byte operation, seconds.
    pub alpha_s: f64,
    /// Seconds per bus byte (F·S); 1/β is the asymptotic bus bandwidth.
    pub beta_s_per_byte: f64,
    pub fit: Fit,
}

impl Hockney {
    /// Asymptotic bus bandwidth 1/β in GB/s (1e9 bytes/s); `None` when β = 0.
    pub fn bandwidth_gbps(&self) -> Option<f64> {
        (self.beta_s_per_byte > 0.0).then(|| 1e-9 / self.beta_s_per_byte)
    }
    pub fn predict_s(&self, bus_bytes: f64) -> f64 {
        self.alpha_s + self.beta_s_per_byte * bus_bytes
    }
}

/// Fits Hockney's model to (bus bytes F·S, time) points of one set-up.
pub(crate) fn fit_hockney(points: &[(f64, f64)]) -> Result<Hockney, FitError> {
    let obs: Vec<Obs> = points
        .iter()
        .map(|&(x, t)| Obs { u: 1.0, v: x, t })
        .collect();
    let fit = fit_nonneg(&obs)?;
    Ok(Hockney {
        alpha_s: fit.a,
        beta_s_per_byte: fit.b,
        fit,
    })
}

/// Most regimes (protocol or algorithm ranges) one size curve is split into.
pub(crate) const MAX_REGIMES: usize = 3;

/// The penalty per segment, in units of ln n on the n·ln(RSS/n) scale. Plain BIC (3 per
/// segment: 2 coefficients and a breakpoint) splits one-regime data too often, because the
/// breakpoint is the best of many positions; 6 was chosen by simulation (the test
/// `segmentation_error_rates`): on one-regime data with 1–5 % noise about 1 in 150 curves
/// is split, and a 2 → 25 µs protocol switch is found in 149 of 150.
const PENALTY_PER_SEGMENT: f64 = 6.0;

/// Relative residuals are never trusted below this (timer and rounding noise): without a
/// floor, a split of exact data would "improve" a zero residual by rounding alone.
const RESIDUAL_FLOOR: f64 = 1e-4;

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
    /// R² of the segmented model over every point (relative residuals, as [`Fit::r2`]).
    pub r2: f64,
    /// Relative residuals of the segmented model, in ascending order of x.
    pub rel_residuals: Vec<f64>,
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

/// Weighted sums of one range of points for time = a + b·x with weights 1/t², accumulated
/// point by point (differences of prefix sums would cancel: weights span 10^12).
#[derive(Debug, Clone, Copy, Default)]
struct RangeSums {
    w: f64,
    wx: f64,
    wxx: f64,
    wt: f64,
    wxt: f64,
    wtt: f64,
}

impl RangeSums {
    fn add(&mut self, x: f64, t: f64) {
        let w = 1.0 / (t * t);
        self.w += w;
        self.wx += w * x;
        self.wxx += w * x * x;
        self.wt += w * t;
        self.wxt += w * x * t;
        self.wtt += w * t * t;
    }
    fn sse(&self, a: f64, b: f64) -> f64 {
        (self.wtt - 2.0 * a * self.wt - 2.0 * b * self.wxt
            + a * a * self.w
            + 2.0 * a * b * self.wx
            + b * b * self.wxx)
            .max(0.0)
    }
    /// Sum of squared relative residuals of the best fit with a, b ≥ 0 (plain, not robust:
    /// the segmentation's cost; each chosen segment is then fitted robustly).
    fn best_sse(&self) -> f64 {
        let det = self.w * self.wxx - self.wx * self.wx;
        if det > 1e-10 * self.w * self.wxx {
            let a = (self.wt * self.wxx - self.wxt * self.wx) / det;
            let b = (self.wxt * self.w - self.wt * self.wx) / det;
            if a >= 0.0 && b >= 0.0 {
                return self.sse(a, b);
            }
        }
        let only_a = self.sse((self.wt / self.w).max(0.0), 0.0);
        let only_b = if self.wxx > 0.0 {
            self.sse(0.0, (self.wxt / self.wxx).max(0.0))
        } else {
            f64::INFINITY
        };
        only_a.min(only_b)
    }
}

/// Fits α–β per regime to (bus bytes x, time) points of one set-up: segmented least squares
/// on relative residuals. For each number of segments K ≤ [`MAX_REGIMES`] (each of at least
/// [`MIN_POINTS`] sizes) dynamic programming finds the split with the smallest residual sum
/// RSS_K; K minimises the penalised criterion n·ln(RSS_K/n) + 6·K·ln n (a BIC whose penalty
/// per segment is doubled, see [`PENALTY_PER_SEGMENT`]), so each extra segment must pay
/// 6·ln n. Residuals below 0.01 % count as 0.01 % (no split chases rounding). Each
/// segment is then fitted like [`fit_hockney`] (robust, α, β ≥ 0).
pub(crate) fn fit_regimes(points: &[(f64, f64)]) -> Result<Regimes, FitError> {
    let single = fit_hockney(points)?;
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, t)| *t > 0.0 && t.is_finite() && x.is_finite())
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pts.len();
    let scale = pts.iter().fold(0.0_f64, |m, p| m.max(p.0.abs())).max(1.0);
    // cost[i][j]: range [i, j) of at least MIN_POINTS points.
    let mut cost = vec![vec![f64::INFINITY; n + 1]; n + 1];
    for (i, row) in cost.iter_mut().enumerate().take(n) {
        let mut acc = RangeSums::default();
        for (j, p) in pts.iter().enumerate().skip(i) {
            acc.add(p.0 / scale, p.1);
            if j + 1 - i >= MIN_POINTS {
                row[j + 1] = acc.best_sse();
            }
        }
    }
    let k_max = MAX_REGIMES.min(n / MIN_POINTS).max(1);
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
    let nf = n as f64;
    let floor = nf * RESIDUAL_FLOOR * RESIDUAL_FLOOR;
    let bic = |k: usize| {
        nf * (best[k][n].max(floor) / nf).ln() + PENALTY_PER_SEGMENT * k as f64 * nf.ln()
    };
    let k = (1..=k_max)
        .filter(|&k| best[k][n].is_finite())
        .min_by(|&a, &b| bic(a).total_cmp(&bic(b)))
        .unwrap_or(1);
    let mut bounds = vec![n];
    for kk in (1..=k).rev() {
        let j = *bounds.last().expect("a bound");
        bounds.push(from[kk][j]);
    }
    bounds.reverse();
    let mut segments = Vec::new();
    for w in bounds.windows(2) {
        let part = &pts[w[0]..w[1]];
        let hockney = if k == 1 {
            single.clone()
        } else {
            fit_hockney(part)?
        };
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
    };
    r.rel_residuals = pts.iter().map(|&(x, t)| (t - r.predict_s(x)) / t).collect();
    r.r2 = relative_r2(&pts, &r.rel_residuals);
    Ok(r)
}

/// R² of relative residuals against the weighted mean (as [`fit_nonneg`] computes it).
fn relative_r2(pts: &[(f64, f64)], rel: &[f64]) -> f64 {
    let ssr: f64 = rel.iter().map(|r| r * r).sum();
    let sw: f64 = pts.iter().map(|p| 1.0 / (p.1 * p.1)).sum();
    let mean_w = pts.iter().map(|p| 1.0 / p.1).sum::<f64>() / sw;
    let sst: f64 = pts.iter().map(|p| ((p.1 - mean_w) / p.1).powi(2)).sum();
    if sst > 0.0 {
        1.0 - ssr / sst
    } else if ssr == 0.0 {
        1.0
    } else {
        0.0
    }
}

/// Whether a form's latency term grows linearly (ring-like) or logarithmically (tree-like)
/// with the device count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormKind {
    Ring,
    Tree,
}

/// A cost form across device counts: time = α·cα(p) + β·cβ(p, S).
#[derive(Debug, Clone, Copy)]
pub struct Form {
    pub name: &'static str,
    pub kind: FormKind,
    /// The formula as written in the report.
    pub formula: &'static str,
    coeff: fn(f64, f64) -> (f64, f64),
}

impl Form {
    /// (cα, cβ) for `p` devices and `s` bytes.
    pub fn coefficients(&self, p: f64, s: f64) -> (f64, f64) {
        (self.coeff)(p, s)
    }
}

impl PartialEq for Form {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.formula == other.formula
    }
}

fn lg(p: f64) -> f64 {
    p.log2()
}

const ALLREDUCE: &[Form] = &[
    Form {
        name: "ring",
        kind: FormKind::Ring,
        formula: "2(p−1)·α + 2(p−1)/p·S·β",
        coeff: |p, s| (2.0 * (p - 1.0), 2.0 * (p - 1.0) / p * s),
    },
    Form {
        name: "Rabenseifner",
        kind: FormKind::Tree,
        formula: "2·lg p·α + 2(p−1)/p·S·β",
        coeff: |p, s| (2.0 * lg(p), 2.0 * (p - 1.0) / p * s),
    },
    Form {
        name: "recursive doubling",
        kind: FormKind::Tree,
        formula: "lg p·(α + S·β)",
        coeff: |p, s| (lg(p), lg(p) * s),
    },
];
const GATHER_SCATTER: &[Form] = &[
    Form {
        name: "ring",
        kind: FormKind::Ring,
        formula: "(p−1)·α + (p−1)/p·S·β",
        coeff: |p, s| (p - 1.0, (p - 1.0) / p * s),
    },
    Form {
        name: "recursive doubling/halving",
        kind: FormKind::Tree,
        formula: "lg p·α + (p−1)/p·S·β",
        coeff: |p, s| (lg(p), (p - 1.0) / p * s),
    },
];
const ALLTOALL: &[Form] = &[
    Form {
        name: "pairwise (ring)",
        kind: FormKind::Ring,
        formula: "(p−1)·α + (p−1)/p·S·β",
        coeff: |p, s| (p - 1.0, (p - 1.0) / p * s),
    },
    Form {
        name: "Bruck (tree)",
        kind: FormKind::Tree,
        formula: "lg p·α + lg p/2·S·β",
        coeff: |p, s| (lg(p), lg(p) / 2.0 * s),
    },
];
const ROOTED: &[Form] = &[
    Form {
        name: "pipelined chain (ring)",
        kind: FormKind::Ring,
        formula: "(p−1)·α + S·β",
        coeff: |p, s| (p - 1.0, s),
    },
    Form {
        name: "binomial tree",
        kind: FormKind::Tree,
        formula: "lg p·(α + S·β)",
        coeff: |p, s| (lg(p), lg(p) * s),
    },
];

/// The forms fitted for a collective (none for GEMMs). Costs of the reduction arithmetic (γ)
/// are not separated: they fold into β.
pub(crate) fn forms(w: Workload) -> &'static [Form] {
    match w {
        Workload::Allreduce => ALLREDUCE,
        Workload::Allgather | Workload::ReduceScatter => GATHER_SCATTER,
        Workload::Alltoall => ALLTOALL,
        Workload::Broadcast | Workload::Reduce => ROOTED,
        Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep => &[],
    }
}

/// One measured point across scales.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScalePoint {
    pub devices: u32,
    /// S, bytes.
    pub bytes: f64,
    pub time_s: f64,
}

/// How well a form fitted on the smaller scales predicted the largest measured one.
#[derive(Debug, Clone, PartialEq)]
pub struct Holdout {
    /// Device counts the form was fitted on.
    pub fit_devices: Vec<u32>,
    /// The held-out (largest) device count.
    pub test_devices: u32,
    /// Points at the held-out scale.
    pub n: usize,
    /// Median of |predicted − measured| / measured over the held-out points.
    pub median_abs_rel_err: f64,
    pub max_abs_rel_err: f64,
}

/// One form fitted across scales.
#[derive(Debug, Clone, PartialEq)]
pub struct FormFit {
    pub form: Form,
    /// Fitted on every scale (used for predictions).
    pub fit: Fit,
    /// Fitted on the smaller scales and tested on the largest; or why not.
    pub holdout: Result<Holdout, FitError>,
}

impl FormFit {
    pub fn predict_s(&self, p: u32, bytes: f64) -> f64 {
        let (u, v) = self.form.coefficients(f64::from(p), bytes);
        self.fit.predict(u, v)
    }
}

/// Forms fitted across device counts for one collective and set-up family.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleModel {
    pub fits: Vec<FormFit>,
    /// Index into `fits` of the form used for predictions: the smallest held-out median error,
    /// or (when no form could be held out) the smallest in-sample RMS relative residual.
    pub best: usize,
    /// Whether `best` was chosen on held-out data.
    pub best_by_holdout: bool,
    /// The measured device counts (≥ 2), ascending.
    pub devices: Vec<u32>,
    /// The device counts predicted: 2× and 4× the largest measured.
    pub predict_devices: [u32; 2],
}

impl ScaleModel {
    pub fn best_fit(&self) -> &FormFit {
        &self.fits[self.best]
    }
}

fn obs_for(form: &Form, pts: &[ScalePoint]) -> Vec<Obs> {
    pts.iter()
        .map(|q| {
            let (u, v) = form.coefficients(f64::from(q.devices), q.bytes);
            Obs { u, v, t: q.time_s }
        })
        .collect()
}

/// Fits every form of `w` to points across device counts. Points on 1 device are left out (no
/// data moves between devices). Needs at least 2 device counts ≥ 2; the held-out check needs
/// enough points below the largest device count.
pub(crate) fn fit_scales(w: Workload, points: &[ScalePoint]) -> Result<ScaleModel, FitError> {
    let forms = forms(w);
    if forms.is_empty() {
        return Err(FitError::NotApplicable(format!(
            "{w} is not a collective: no communication cost form"
        )));
    }
    let pts: Vec<ScalePoint> = points
        .iter()
        .copied()
        .filter(|q| q.devices >= 2 && q.time_s > 0.0 && q.time_s.is_finite() && q.bytes > 0.0)
        .collect();
    let mut devices: Vec<u32> = pts.iter().map(|q| q.devices).collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.len() < 2 {
        return Err(FitError::NotApplicable(format!(
            "measured at {} device count(s) ≥ 2; forms across scales need at least 2",
            devices.len()
        )));
    }
    let pmax = *devices.last().expect("two device counts");
    let (small, large): (Vec<ScalePoint>, Vec<ScalePoint>) =
        pts.iter().partition(|q| q.devices < pmax);
    let mut fits = Vec::new();
    let mut last_err = None;
    for form in forms {
        let fit = match fit_nonneg(&obs_for(form, &pts)) {
            Ok(f) => f,
            Err(e) => {
                last_err = Some(e);
                continue;
            }
        };
        let holdout = holdout(form, &small, &large, &devices);
        fits.push(FormFit {
            form: *form,
            fit,
            holdout,
        });
    }
    if fits.is_empty() {
        return Err(last_err.unwrap_or(FitError::Degenerate));
    }
    let (best, best_by_holdout) = best_form(&fits);
    Ok(ScaleModel {
        fits,
        best,
        best_by_holdout,
        devices,
        predict_devices: [pmax * 2, pmax * 4],
    })
}

/// `form` fitted on the `small` scales, and its relative errors predicting the `large` one
/// (the largest of `devices`).
fn holdout(
    form: &Form,
    small: &[ScalePoint],
    large: &[ScalePoint],
    devices: &[u32],
) -> Result<Holdout, FitError> {
    let pmax = *devices.last().expect("two device counts");
    fit_nonneg(&obs_for(form, small)).map(|f| {
        let mut errs: Vec<f64> = obs_for(form, large)
            .iter()
            .map(|o| ((f.predict(o.u, o.v) - o.t) / o.t).abs())
            .collect();
        errs.sort_by(f64::total_cmp);
        Holdout {
            fit_devices: devices[..devices.len() - 1].to_vec(),
            test_devices: pmax,
            n: errs.len(),
            median_abs_rel_err: crate::stats::quantile_sorted(&errs, 0.5),
            max_abs_rel_err: *errs.last().expect("points at the largest scale"),
        }
    })
}

/// The form used for predictions, and whether it was chosen on held-out data: the smallest
/// held-out median error, or (when no form could be held out) the smallest in-sample RMS
/// relative residual. `fits` is not empty.
fn best_form(fits: &[FormFit]) -> (usize, bool) {
    let held: Vec<(usize, f64)> = fits
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.holdout.as_ref().ok().map(|h| (i, h.median_abs_rel_err)))
        .collect();
    match held.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
        Some((i, _)) => (*i, true),
        None => (
            fits.iter()
                .enumerate()
                .min_by(|a, b| {
                    a.1.fit
                        .rms_rel_residual()
                        .total_cmp(&b.1.fit.rms_rel_residual())
                })
                .map(|(i, _)| i)
                .expect("at least one fit"),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [−amp, amp].
    fn noise(state: &mut u64, amp: f64) -> f64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * amp
    }

    /// `h` has α within `rel` of `alpha_s` and 1/β within `rel` of `gbps`.
    fn assert_recovers(h: &Hockney, alpha_s: f64, gbps: f64, rel: f64) {
        assert!(
            (h.alpha_s - alpha_s).abs() / alpha_s < rel,
            "alpha {}",
            h.alpha_s
        );
        let bw = h.bandwidth_gbps().unwrap();
        assert!((bw - gbps).abs() / gbps < rel, "bw {bw}");
    }

    /// α + β·x at 8 B .. 256 MiB with ±3 % multiplicative noise (seeded).
    fn hockney_points(alpha: f64, beta: f64) -> Vec<(f64, f64)> {
        let mut st = 42;
        (3..=28)
            .map(|e| {
                let x = (1u64 << e) as f64;
                (x, (alpha + beta * x) * (1.0 + noise(&mut st, 0.03)))
            })
            .collect()
    }

    #[test]
    fn hockney_recovers_alpha_and_beta_from_noisy_data() {
        // α = 5 µs, 1/β = 12.5 GB/s; sizes 8 B .. 256 MiB; ±3 % multiplicative noise.
        let (alpha, beta) = (5e-6, 1.0 / 12.5e9);
        let pts = hockney_points(alpha, beta);
        let h = fit_hockney(&pts).unwrap();
        assert_recovers(&h, alpha, 12.5, 0.03);
        assert!(h.fit.r2 > 0.99, "r2 {}", h.fit.r2);
        assert!(h.fit.max_abs_rel_residual() < 0.07);
        assert!(!h.fit.constrained);
        assert_eq!(h.fit.rel_residuals.len(), pts.len());
    }

    #[test]
    fn exact_data_fits_exactly() {
        let pts: Vec<(f64, f64)> = [1e3, 1e4, 1e5, 1e6]
            .iter()
            .map(|&x| (x, 2e-6 + x * 1e-10))
            .collect();
        let h = fit_hockney(&pts).unwrap();
        assert!((h.alpha_s - 2e-6).abs() < 1e-15);
        assert!((h.beta_s_per_byte - 1e-10).abs() < 1e-20);
        assert!((h.fit.r2 - 1.0).abs() < 1e-9);
        assert!((h.bandwidth_gbps().unwrap() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn preempted_points_do_not_drag_the_fit() {
        // A sweep's sizes 8 B, 64 B, ..., 16 MiB (×8): α = 5 µs, 1/β = 12.5 GB/s, ±1 % noise;
        // the 64 B and 512 B points were preempted and took 4× as long.
        let (alpha, beta) = (5e-6, 1.0 / 12.5e9);
        let mut st = 7;
        let pts: Vec<(f64, f64)> = (0..8)
            .map(|i| {
                let x = (8u64 << (3 * i)) as f64;
                let hit = if i == 1 || i == 2 { 4.0 } else { 1.0 };
                (x, hit * (alpha + beta * x) * (1.0 + noise(&mut st, 0.01)))
            })
            .collect();
        let h = fit_hockney(&pts).unwrap();
        assert_recovers(&h, alpha, 12.5, 0.03);
        assert_eq!(h.fit.downweighted, 2, "{:?}", h.fit.rel_residuals);
        // Without reweighting the same points give a latency 15 % off: the test can fail.
        let obs: Vec<Obs> = pts.iter().map(|&(x, t)| Obs { u: 1.0, v: x, t }).collect();
        let (plain_alpha, _, _) = solve_nonneg(&obs, &vec![1.0; obs.len()]).unwrap();
        assert!(
            (plain_alpha - alpha).abs() / alpha > 0.1,
            "plain alpha {plain_alpha}"
        );
    }

    #[test]
    fn huber_weights_spare_the_bulk_and_shrink_the_outlier() {
        let w = huber_weights(&[0.01, -0.01, 0.005, -0.005, 0.0, 0.5]);
        assert!(w[..5].iter().all(|&x| x == 1.0), "{w:?}");
        assert!(w[5] < 0.1, "{w:?}");
        assert_eq!(huber_weights(&[0.0, 0.0, 0.0]), vec![1.0; 3]);
        assert!(huber_weights(&[]).is_empty());
    }

    #[test]
    fn negative_latency_is_constrained_to_zero() {
        // Pure bandwidth data with a little downward curvature: the free fit wants α < 0.
        let pts = [(1e3, 0.9e-6), (1e4, 1e-5), (1e5, 1e-4), (1e6, 1e-3)];
        let h = fit_hockney(&pts).unwrap();
        assert!(h.fit.constrained);
        assert_eq!(h.alpha_s, 0.0);
        assert!(h.beta_s_per_byte > 0.0);
    }

    #[test]
    fn too_few_or_degenerate_points_are_refused() {
        assert_eq!(
            fit_hockney(&[(1.0, 1.0), (2.0, 2.0)]).unwrap_err(),
            FitError::TooFew { have: 2, need: 3 }
        );
        assert_eq!(
            fit_hockney(&[(8.0, 1.0), (8.0, 1.1), (8.0, 0.9)]).unwrap_err(),
            FitError::Degenerate
        );
        // non-positive times do not count
        assert!(matches!(
            fit_hockney(&[(1.0, 0.0), (2.0, -1.0), (3.0, 1.0)]),
            Err(FitError::TooFew { have: 1, .. })
        ));
    }

    /// Two regimes: α1 = 2 µs, 1/β1 = 4 GB/s up to 8 KiB (eager), α2 = 25 µs, 1/β2 =
    /// 10 GB/s from 16 KiB (rendezvous), sizes 8 B – 4 MiB (×2), ±2 % noise.
    fn two_regimes() -> Vec<(f64, f64)> {
        let mut st = 11;
        (3..=22)
            .map(|e| {
                let x = (1u64 << e) as f64;
                let t = if x <= 8192.0 {
                    2e-6 + x / 4e9
                } else {
                    25e-6 + x / 10e9
                };
                (x, t * (1.0 + noise(&mut st, 0.02)))
            })
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

    /// False splits and missed switches over 150 noisy curves each (fixed seeds, so the test
    /// is deterministic): one regime split at most 3 times, a switch found at least 146 times,
    /// always at the true size.
    #[test]
    fn segmentation_error_rates() {
        let (mut split, mut found) = (0, 0);
        for seed in 0..150u64 {
            let mut st = seed * 7919 + 1;
            let one: Vec<(f64, f64)> = (3..=24)
                .map(|e| {
                    let x = (1u64 << e) as f64;
                    (x, (5e-6 + x / 12.5e9) * (1.0 + noise(&mut st, 0.03)))
                })
                .collect();
            split += usize::from(fit_regimes(&one).unwrap().segments.len() > 1);
            let two: Vec<(f64, f64)> = (3..=22)
                .map(|e| {
                    let x = (1u64 << e) as f64;
                    let t = if x <= 8192.0 {
                        2e-6 + x / 4e9
                    } else {
                        25e-6 + x / 10e9
                    };
                    (x, t * (1.0 + noise(&mut st, 0.03)))
                })
                .collect();
            let r = fit_regimes(&two).unwrap();
            found += usize::from(r.segments.len() == 2 && r.segments[0].to_x == 8192.0);
        }
        assert!(split <= 3, "{split} of 150 one-regime curves split");
        assert!(found >= 146, "switch found in {found} of 150");
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
        // Too few points for two segments of 3: one; too few for a fit: refused.
        assert_eq!(fit_regimes(&exact[..5]).unwrap().segments.len(), 1);
        assert!(fit_regimes(&exact[..2]).is_err());
    }

    #[test]
    fn ring_form_predicts_a_held_out_scale() {
        // Ring allreduce with α = 2 µs per step, β = 1/(10 GB/s), measured at p = 2, 4, 8.
        let (alpha, beta) = (2e-6, 1e-10);
        let ring = forms(Workload::Allreduce)[0];
        let mut st = 7;
        let mut pts = Vec::new();
        for p in [2u32, 4, 8] {
            for e in (4..=26).step_by(2) {
                let s = (1u64 << e) as f64;
                let (u, v) = ring.coefficients(f64::from(p), s);
                let t = (alpha * u + beta * v) * (1.0 + noise(&mut st, 0.02));
                pts.push(ScalePoint {
                    devices: p,
                    bytes: s,
                    time_s: t,
                });
            }
        }
        let m = fit_scales(Workload::Allreduce, &pts).unwrap();
        assert_eq!(m.devices, vec![2, 4, 8]);
        assert_eq!(m.predict_devices, [16, 32]);
        assert_eq!(m.best_fit().form.name, "ring");
        assert!(m.best_by_holdout);
        let h = m.best_fit().holdout.as_ref().unwrap();
        assert_eq!((h.test_devices, h.fit_devices.clone()), (8, vec![2, 4]));
        assert!(h.median_abs_rel_err < 0.05, "{h:?}");
        let f = &m.best_fit().fit;
        assert!((f.a - alpha).abs() / alpha < 0.05, "alpha {}", f.a);
        assert!((f.b - beta).abs() / beta < 0.05, "beta {}", f.b);
        // the prediction at 16 devices follows the ring form
        let s = (1u64 << 20) as f64;
        let (u, v) = ring.coefficients(16.0, s);
        let truth = alpha * u + beta * v;
        assert!((m.best_fit().predict_s(16, s) - truth).abs() / truth < 0.05);
        // the logarithmic forms cannot explain ring latencies as well
        for f in &m.fits[1..] {
            assert!(f.holdout.as_ref().unwrap().median_abs_rel_err > h.median_abs_rel_err);
        }
    }

    #[test]
    fn scales_need_two_device_counts() {
        let pts: Vec<ScalePoint> = [1u32, 4]
            .iter()
            .flat_map(|&p| {
                (0..4).map(move |i| ScalePoint {
                    devices: p,
                    bytes: 1e3 * 10f64.powi(i),
                    time_s: 1e-6 * (i + 1) as f64,
                })
            })
            .collect();
        // 1 device does not count: only one scale left
        assert!(matches!(
            fit_scales(Workload::Allgather, &pts),
            Err(FitError::NotApplicable(_))
        ));
        assert!(fit_scales(Workload::Matmul, &pts).is_err());
    }
}
