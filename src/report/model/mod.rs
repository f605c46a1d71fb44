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
        "Hockney's model time = α + β·F·S fitted to the median times (over the samples; the headline time when there are none) of every size of one collective, variant and set-up (F = the busbw factor, so β is seconds per bus byte). Weighted least squares with weights 1/t² (it minimises the relative residuals, so small and large sizes count alike), made robust by Huber reweighting (a point whose relative residual lies beyond 1.345 robust standard deviations, 1.4826 × MAD, counts less; `N down-weighted` names how many did, e.g. preempted measurements), with α, β ≥ 0 (`constrained` marks fits where the free optimum was negative). α (µs) is the latency of a zero-byte operation; 1/β (GB/s) the asymptotic bus bandwidth. R² = 1 − Σ r² / Σ ((t − t̄_w)/t)² with relative residuals r = (t − t̂)/t and t̄_w the weighted mean; residuals are reported as their RMS and largest |r|. At least 3 sizes are needed; 1-device set-ups move no data and are not fitted.",
    ),
    (
        "α–β regimes",
        "MPI libraries switch protocol and algorithm with the size (eager to rendezvous, OSU's 8 KiB switch point; tree to ring), so one α–β line describes neither range. Each set-up's curve of per-size median times is split by a robust penalised segmentation: σ, the curve's relative noise, is measured from each inner size against the α–β line through its neighbours (the standard deviation of those within 3 × 1.4826 × MAD, at least 0.01 %); a range of at least 2 consecutive sizes costs Σ ρ(r/σ) at its robust α–β fit, with ρ Tukey's biweight (c = 4.685, ≈ (r/σ)² for a well-fitted size, at most c²/3 ≈ 7.3 for an outlier) of the relative residuals r; for 1 to 3 regimes the cheapest split is found, and the number K minimising cost_K + 8·(K − 1)·ln n is kept. One noisy size can lower the cost by at most 7.3, less than an extra regime's 8·ln n, so it does not fake a switch (in simulation one ×1.2–×3 size split 0 of 200 one-regime curves; a 2 → 25 µs switch between 8 and 16 KiB was found at those sizes in 199 of 200). Each regime gets its own robust α–β fit (a regime of 2 sizes passes through both) and R²; the switch sizes lie between the last size of one regime and the first of the next. Predictions at a size use that size's regime (the hand-over lies at the geometric mean of the two sizes). The collective tables give α of the smallest sizes' regime, 1/β of the largest sizes' regime and the R² of the whole segmented model; `latency-bound below` is that first regime's half-performance size α/(β·F): below it the latency term is most of the time. A model is POOR (marked with its reasons; it draws no finding) when its R² is below 0.9, it misses a size by more than 25 %, α lies above the smallest median time by more than 5σ, or the last regime's 1/β is over twice every busbw measured in it (the sizes never reach half the asymptote, so the bandwidth is extrapolated).",
    ),
    (
        "forms across scales",
        "For each collective, variant and set-up family, the forms listed with their formulas (p = devices, S = size; ring-like forms have latency terms linear in p, tree-like ones logarithmic) are fitted by the same robust weighted least squares to the per-size median times at every device count ≥ 2, separately in each size regime: the regimes of the largest measured scale's curve (found as above) split the sizes of every scale (a protocol switch changes the cost form as much as its constants); when a regime's points cannot carry the forms, one model covers every size. Reduction arithmetic (γ) is not separated and folds into β.",
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
