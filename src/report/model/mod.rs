//! Cost models fitted to measurements, as pure functions: Hockney's α–β model per collective and
//! set-up (time = α + β·F·S), and ring / tree forms across device counts that predict larger
//! scales and are checked on a held-out measured scale.
//!
//! Fits are weighted least squares with weights 1/t², i.e. they minimise relative residuals, so
//! an 8-byte latency and a 1-GiB transfer count alike (an unweighted fit would let the largest
//! sizes decide everything and leave α meaningless), made robust with Huber weights (one
//! preempted point on a busy node must not move α and β). Coefficients are constrained to be
//! ≥ 0: a negative latency or per-byte cost has no physical reading.

mod fit;
mod hockney;
mod regimes;
mod scales;

pub(crate) use fit::{Fit, FitError};
pub(crate) use regimes::fit_regimes;
pub(crate) use regimes::Regimes;
pub(crate) use scales::{fit_scales, ScalePoint};
pub(crate) use scales::{ScaleModel, ScaleRegime};

/// The definitions of the model figures, as (term, definition) pairs, for the report.
pub(crate) const DEFINITIONS: &[(&str, &str)] = &[
    (
        "α–β fit (per set-up)",
        crate::report::long_text::DEF_ALPHA_BETA_FIT_PER_SET_UP,
    ),
    (
        "α–β regimes",
        crate::report::long_text::DEF_ALPHA_BETA_REGIMES,
    ),
    (
        "forms across scales",
        crate::report::long_text::DEF_FORMS_ACROSS_SCALES,
    ),
    (
        "held-out check",
        "Each form is also fitted on the smaller device counts only and used to predict the largest measured one; the median and largest |predicted − measured| / measured over its sizes say how well the form extrapolates. The form with the smallest held-out median error makes the predictions (without a held-out check: the smallest in-sample RMS residual); above 25 % its predictions are marked unreliable.",
    ),
    (
        "prediction",
        "Time at 2× and 4× the largest measured device count from the chosen form of the size's regime, fitted on all measured scales. A PREDICTION, not a measurement: it assumes the same network, library and algorithm at the larger scale.",
    ),
];

/// A held-out median error above this marks a form's predictions as unreliable.
pub(crate) const UNRELIABLE_HOLDOUT: f64 = 0.25;

/// Fewest points a two-coefficient fit accepts (two coefficients plus one degree of freedom).
pub(crate) const MIN_POINTS: usize = 3;

#[cfg(test)]
mod test_util {
    use super::hockney::Hockney;

    /// Deterministic noise in [−amp, amp].
    pub(super) fn noise(state: &mut u64, amp: f64) -> f64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * amp
    }

    /// `h` has α within `rel` of `alpha_s` and 1/β within `rel` of `gbps`.
    pub(super) fn assert_recovers(h: &Hockney, alpha_s: f64, gbps: f64, rel: f64) {
        assert!(
            (h.alpha_s - alpha_s).abs() / alpha_s < rel,
            "alpha {}",
            h.alpha_s
        );
        let bw = h.bandwidth_gbps().unwrap();
        assert!((bw - gbps).abs() / gbps < rel, "bw {bw}");
    }

    /// α + β·x at 8 B .. 256 MiB with ±3 % multiplicative noise (seeded).
    pub(super) fn hockney_points(alpha: f64, beta: f64) -> Vec<(f64, f64)> {
        let mut st = 42;
        (3..=28)
            .map(|e| {
                let x = (1u64 << e) as f64;
                (x, (alpha + beta * x) * (1.0 + noise(&mut st, 0.03)))
            })
            .collect()
    }
}
