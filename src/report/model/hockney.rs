//! Hockney's α–β model of one collective and set-up.

use super::fit::{fit_nonneg_min, Fit, FitError, Obs};
use super::MIN_POINTS;

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
    fit_hockney_min(points, MIN_POINTS)
}

/// [`fit_hockney`] accepting as few as `min_points` points (a regime's fit: two sizes are
/// enough, and the line then passes through both).
pub(crate) fn fit_hockney_min(
    points: &[(f64, f64)],
    min_points: usize,
) -> Result<Hockney, FitError> {
    let obs: Vec<Obs> = points
        .iter()
        .map(|&(x, t)| Obs { u: 1.0, v: x, t })
        .collect();
    let fit = fit_nonneg_min(&obs, min_points)?;
    Ok(Hockney {
        alpha_s: fit.a,
        beta_s_per_byte: fit.b,
        fit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::fit::{huber_weights, solve_nonneg};
    use crate::report::model::test_util::{assert_recovers, hockney_points, noise};

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
}
