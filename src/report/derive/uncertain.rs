//! Ratios of measured times with their uncertainty: a speed-up, an efficiency or a
//! pure-vs-hybrid ratio takes its interval from both sides' spread (and from every run given,
//! never the newest alone), and an efficiency is called superlinear, sublinear or within
//! noise of ideal by that interval, never by its point value.

use super::{ratio_interval, ScalingKind};
use crate::stats;

/// Confidence of the run-level intervals of ratios and efficiencies: 90 %, the coverage of
/// the p5–p95 sample-pair intervals they replace when several runs exist.
pub(crate) const RUN_CONFIDENCE: f64 = 0.9;

/// A ratio of two measured times with its interval, and what the interval holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioEstimate {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// Runs on the side with fewer (1: one run a side, the interval from its samples).
    pub runs: usize,
}

/// The ratio `num / den` of two cases' times with its interval from both sides' spread:
/// with ≥ 2 runs a side ([`stats::run_ratio`] on their headline times: run-to-run variance
/// included, every run counted, not the newest alone), else the headline ratio of the one
/// run with the p5–p95 of its sample-pair ratios ([`ratio_interval`]). `None` without a
/// positive time.
pub(crate) fn ratio_estimate(
    num_runs_s: &[f64],
    den_runs_s: &[f64],
    num_samples_s: Option<&[f64]>,
    den_samples_s: Option<&[f64]>,
    headline: (f64, f64),
) -> Option<RatioEstimate> {
    if num_runs_s.len() >= 2 && den_runs_s.len() >= 2 {
        let (ratio, low, high) = stats::run_ratio(num_runs_s, den_runs_s, RUN_CONFIDENCE)?;
        return Some(RatioEstimate {
            ratio,
            low,
            high,
            runs: num_runs_s.len().min(den_runs_s.len()),
        });
    }
    let ratio = headline.0 / headline.1;
    if !(ratio.is_finite() && ratio > 0.0) {
        return None;
    }
    let (low, high) = num_samples_s
        .zip(den_samples_s)
        .and_then(|(a, b)| ratio_interval(a, b))
        .map_or((ratio, ratio), |(l, h)| (l.min(ratio), h.max(ratio)));
    Some(RatioEstimate {
        ratio,
        low,
        high,
        runs: 1,
    })
}

/// What a scaling efficiency's interval says against the ideal 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EfficiencyCall {
    /// The whole interval above 1.
    Superlinear,
    /// The whole interval below 1.
    Sublinear,
    /// The interval holds 1: indistinguishable from ideal scaling, not a finding.
    WithinNoise,
}

/// The call of an efficiency interval (`low` ≤ `high`).
pub(crate) fn efficiency_call(low: f64, high: f64) -> EfficiencyCall {
    if low > 1.0 {
        EfficiencyCall::Superlinear
    } else if high < 1.0 {
        EfficiencyCall::Sublinear
    } else {
        EfficiencyCall::WithinNoise
    }
}

/// The likely cause of a superlinear efficiency, in words: a baseline noisier than the case
/// (cv of its samples over 10 % and over twice the case's: a slow baseline makes every
/// larger count look superlinear); for strong scaling, each device's smaller share fitting a
/// faster cache; for weak scaling (each device's work fixed, so no cache gain) noise or a
/// slow baseline.
pub(crate) fn superlinear_cause(kind: ScalingKind, base_cv: f64, case_cv: f64) -> String {
    if base_cv > 0.1 && base_cv > 2.0 * case_cv {
        format!(
            "a slow, noisy baseline (its samples spread cv {:.0} % against {:.0} % here)",
            100.0 * base_cv,
            100.0 * case_cv
        )
    } else if kind == ScalingKind::Strong {
        "cache: each device's smaller share of the fixed problem may fit a faster cache".into()
    } else {
        "noise or a slow baseline: weak scaling keeps each device's work fixed, so no cache gain is expected".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiency_intervals_hold_both_spreads_and_every_run() {
        // one run a side: the headline ratio with its sample-pair interval
        let base: Vec<f64> = (0..40).map(|i| 1.0 + 0.02 * f64::from(i % 5)).collect();
        let case: Vec<f64> = (0..40).map(|i| 0.5 + 0.01 * f64::from(i % 7)).collect();
        let e = ratio_estimate(&[1.04], &[0.53], Some(&base), Some(&case), (1.04, 0.53)).unwrap();
        assert_eq!(e.runs, 1);
        assert!(e.low < e.ratio && e.ratio < e.high, "{e:?}");
        assert!(e.low > 1.5 && e.high < 2.5, "{e:?}");
        // a noisy baseline (cv ~ 0.25) widens it past 1 on the low side
        let noisy: Vec<f64> = (0..40)
            .map(|i| {
                if i % 3 == 0 {
                    0.55
                } else {
                    1.0 + 0.3 * f64::from(i % 4)
                }
            })
            .collect();
        let e = ratio_estimate(&[1.0], &[0.55], Some(&noisy), Some(&case), (1.0, 0.55)).unwrap();
        assert!(e.low <= 1.0 && e.high > 2.0, "{e:?}");
        assert_eq!(efficiency_call(e.low, e.high), EfficiencyCall::WithinNoise);
        // several runs: every run counts, the newest does not decide
        let e = ratio_estimate(&[1.0, 1.1, 0.9], &[0.5, 0.5, 0.5], None, None, (0.9, 0.5)).unwrap();
        assert_eq!(e.runs, 3);
        assert!((e.ratio - (1.0f64 * 1.1 * 0.9).powf(1.0 / 3.0) / 0.5).abs() < 1e-12);
        assert_eq!(efficiency_call(e.low, e.high), EfficiencyCall::Superlinear);
        // runs that disagree about which side is faster: the interval holds 1
        let e = ratio_estimate(
            &[1.0, 0.5, 1.0, 0.5],
            &[0.7, 0.7, 0.7, 0.71],
            None,
            None,
            (0.5, 0.7),
        )
        .unwrap();
        assert!(e.low < 1.0 && e.high > 1.0, "{e:?}");
        assert!(ratio_estimate(&[1.0], &[0.0], None, None, (1.0, 0.0)).is_none());
    }

    #[test]
    fn superlinear_causes() {
        assert!(
            superlinear_cause(ScalingKind::Weak, 0.24, 0.03).starts_with("a slow, noisy baseline")
        );
        assert!(superlinear_cause(ScalingKind::Strong, 0.02, 0.02).starts_with("cache"));
        assert!(superlinear_cause(ScalingKind::Weak, 0.02, 0.02).starts_with("noise"));
        assert_eq!(efficiency_call(1.2, 1.5), EfficiencyCall::Superlinear);
        assert_eq!(efficiency_call(0.5, 0.9), EfficiencyCall::Sublinear);
    }
}
