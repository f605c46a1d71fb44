//! Weighted, non-negative, Huber-robust least squares of time = a·u + b·v on relative
//! residuals: the one fitting routine every model here uses.

use super::MIN_POINTS;

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
    /// The robust weight of each observation (1: counted fully), in the order of the
    /// observations.
    pub weights: Vec<f64>,
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
    #[error("{} usable; a fit needs at least {need}", crate::present::count(*have, "point", "points"))]
    TooFew { have: usize, need: usize },
    #[error("the points do not separate the latency term from the per-byte term (e.g. every point has the same size)")]
    Degenerate,
    #[error("{0}")]
    NotApplicable(String),
}

/// Huber's tuning constant: 95 % efficiency when the residuals are Gaussian.
pub(crate) const HUBER_K: f64 = 1.345;
/// Reweighting rounds at most (they converge in a handful).
pub(crate) const MAX_IRLS_ROUNDS: usize = 50;

/// Fits time = a·u + b·v with weights 1/t², a, b ≥ 0, made robust by iteratively reweighted
/// least squares with Huber weights: a point whose relative residual exceeds 1.345 robust
/// standard deviations (1.4826 × the median absolute deviation) counts less, so one preempted
/// measurement cannot drag the fit. Exact data fit as plain weighted least squares; with
/// Gaussian noise the fit keeps 95 % of least squares' efficiency (and some points beyond
/// 1.345 σ count slightly less). Observations with a non-positive or non-finite time are left
/// out.
pub(crate) fn fit_nonneg(obs: &[Obs]) -> Result<Fit, FitError> {
    fit_nonneg_min(obs, MIN_POINTS)
}

/// [`fit_nonneg`] accepting as few as `min_points` observations (a regime of two sizes: the
/// line then passes through both, and nothing is left to judge it by).
pub(crate) fn fit_nonneg_min(obs: &[Obs], min_points: usize) -> Result<Fit, FitError> {
    let obs: Vec<Obs> = obs
        .iter()
        .copied()
        .filter(|o| o.t > 0.0 && o.t.is_finite() && o.u.is_finite() && o.v.is_finite())
        .collect();
    if obs.len() < min_points {
        return Err(FitError::TooFew {
            have: obs.len(),
            need: min_points,
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
        weights: h,
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
pub(crate) fn solve_nonneg(obs: &[Obs], h: &[f64]) -> Result<(f64, f64, bool), FitError> {
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

/// R² of relative residuals against the weighted mean (as [`fit_nonneg`] computes it).
pub(crate) fn relative_r2(pts: &[(f64, f64)], rel: &[f64]) -> f64 {
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
