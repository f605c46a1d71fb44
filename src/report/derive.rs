//! Derived figures as pure functions over numbers: spread of samples, load imbalance and
//! stragglers, strong/weak scaling speedup and efficiency, bus-bandwidth retention, ratios and
//! the winner per size band. No I/O; nothing here knows about files or charts.
//!
//! Every definition here is also written, in words, into the report ([`DEFINITIONS`]), so a
//! reader never has to guess what a number means.

use crate::stats;

/// The definitions of every derived figure, as (term, definition) pairs, for the report.
pub(crate) const DEFINITIONS: &[(&str, &str)] = &[
    (
        "time",
        "`time_s` of the results file: the mean over ranks of each rank's mean time per operation (nccl-tests `-a 1`, OSU's average latency).",
    ),
    (
        "algbw, busbw",
        "As in the results file and nccl-tests: algbw = S / time (GB = 10^9 bytes); busbw = algbw × F, F = 2(n−1)/n for allreduce, (n−1)/n for allgather, reduce_scatter and alltoall, 1 for broadcast and reduce (n = devices). busbw is a normalisation to a flat ring, not a link measurement; with 1 device F = 0 for allreduce, allgather, reduce_scatter and alltoall, so those points have no busbw and are not drawn on log axes.",
    ),
    (
        "sample interval",
        "Median of the case's samples with the interval p5–p95 (type-7 quantiles). A sample is the slowest rank's time per operation for one batch (pipelined) or one call (isolated), so the headline time (a mean over ranks) can lie below the interval when ranks differ. Bars on charts are this interval, converted to the chart's quantity (busbw = S·F / sample).",
    ),
    (
        "cv, noisy",
        "cv = standard deviation / mean of the samples. A case is flagged noisy when cv exceeds the threshold stated in the report; noisy cases are still used, but their differences deserve a rerun.",
    ),
    (
        "imbalance",
        "max / min of the per-rank mean times of one case (1 = perfectly balanced). The slowest rank is the one with the largest mean; its node and host come from the launch's provenance.",
    ),
    (
        "straggler score",
        "For every case with at least 2 ranks, each rank's slowness = its mean time / the median of the case's per-rank means. A node's score is the geometric mean, over the cases it took part in, of the largest slowness among its ranks; `slowest in` counts the cases in which it held the slowest rank. Scores well above 1 name a node that is consistently late.",
    ),
    (
        "strong scaling",
        "Fixed total problem. With the baseline point (p0 devices, time T0) = the smallest device count measured in the series: speedup S(p) = T0 / T(p), ideal p / p0; efficiency E(p) = p0·T0 / (p·T(p)), ideal 1. With p0 = 1 these are the textbook T1/Tp and T1/(p·Tp).",
    ),
    (
        "weak scaling",
        "Fixed problem per device. Efficiency E(p) = T0 / T(p), ideal 1; scaled speedup = (p / p0)·E(p), ideal p / p0.",
    ),
    (
        "GFLOP/s",
        "From the results file: per device = FLOP of one device's GEMM work / time; aggregate = all devices together.",
    ),
    (
        "busbw retention",
        "Collectives across device counts, same size and set-up: R(p) = busbw(p) / busbw(p0), p0 = the smallest device count ≥ 2 in the series. busbw already divides out the ring's (n−1)/n traffic growth, so R = 1 is ideal (a flat ring's per-link rate held) and R < 1 means the collective scales worse than a flat ring. Time and busbw are well defined at every scale; a speedup is not (a collective on more devices is a different operation), so none is reported.",
    ),
    (
        "topology ratio",
        "time(hybrid) / time(pure MPI) for cases equal in everything else (same nodes and devices per node). Above 1: pure MPI is faster; below 1: hybrid is faster. Its interval is p5–p95 of the ratios of every pairing of one hybrid sample with one pure sample.",
    ),
    (
        "binding ratio",
        "time(policy) / time(reference) for cases equal in everything else; the reference is `none` when it was measured, otherwise the first policy measured. Below 1: the policy is faster than the reference. Interval as for the topology ratio.",
    ),
    (
        "winner per size band",
        "Bands by S: small ≤ 8 KiB (latency-bound; OSU's switch point), medium ≤ 1 MiB, large > 1 MiB; GEMMs form one band. The band's ratio is the geometric mean of its sizes' ratios (with min–max); the winner is named when that mean differs from 1 by more than the tie band stated in the report, otherwise `tie`; `mixed` when no more than half of the band's sizes on their own favour that winner. `agree` counts the sizes that do.",
    ),
];

/// Spread of one case's samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Number of samples.
    pub n: usize,
    pub median_s: f64,
    /// 5th percentile (type-7 interpolation).
    pub p5_s: f64,
    /// 95th percentile.
    pub p95_s: f64,
    /// Coefficient of variation: stddev / mean.
    pub cv: f64,
}

/// Median, p5–p95 and cv of `samples_s`; `None` if there are no finite samples.
pub(crate) fn spread(samples_s: &[f64]) -> Option<Spread> {
    let mut sorted: Vec<f64> = samples_s
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let mean = stats::mean(&sorted)?;
    let sd = stats::stddev(&sorted)?;
    Some(Spread {
        n: sorted.len(),
        median_s: stats::quantile_sorted(&sorted, 0.5),
        p5_s: stats::quantile_sorted(&sorted, 0.05),
        p95_s: stats::quantile_sorted(&sorted, 0.95),
        cv: if mean != 0.0 { sd / mean.abs() } else { 0.0 },
    })
}

/// Whether a coefficient of variation marks a case as noisy (strictly above the threshold).
pub(crate) fn is_noisy(cv: f64, threshold: f64) -> bool {
    cv > threshold
}

/// Load imbalance over the per-rank means of one case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Imbalance {
    /// max / min of the per-rank means (≥ 1).
    pub ratio: f64,
    /// Index (rank) of the largest per-rank mean (first one on ties).
    pub slowest_rank: usize,
    /// Index (rank) of the smallest per-rank mean.
    pub fastest_rank: usize,
}

/// `None` with fewer than 2 ranks or a non-positive minimum (no ratio can be formed).
pub(crate) fn imbalance(per_rank_mean_s: &[f64]) -> Option<Imbalance> {
    if per_rank_mean_s.len() < 2 || per_rank_mean_s.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let (lo, hi) = stats::argmin_argmax(per_rank_mean_s)?;
    let min = per_rank_mean_s[lo];
    if min <= 0.0 {
        return None;
    }
    Some(Imbalance {
        ratio: per_rank_mean_s[hi] / min,
        slowest_rank: hi,
        fastest_rank: lo,
    })
}

/// Each rank's slowness: its mean / the median of all ranks' means. `None` with fewer than 2
/// ranks or a non-positive median.
pub(crate) fn slowness(per_rank_mean_s: &[f64]) -> Option<Vec<f64>> {
    if per_rank_mean_s.len() < 2 {
        return None;
    }
    let med = stats::median(per_rank_mean_s)?;
    if med <= 0.0 || !med.is_finite() {
        return None;
    }
    Some(per_rank_mean_s.iter().map(|x| x / med).collect())
}

/// The p5–p95 interval of the ratio of one sample of `num` to one sample of `den` (every
/// pairing; each set strided down to about 50 samples, so at most ~2,500 pairs). `None`
/// without samples or with a non-positive denominator sample.
pub(crate) fn ratio_interval(num_s: &[f64], den_s: &[f64]) -> Option<(f64, f64)> {
    if num_s.is_empty() || den_s.is_empty() || den_s.iter().any(|d| d.is_nan() || *d <= 0.0) {
        return None;
    }
    let stride = |n: usize| n.div_ceil(50).max(1);
    let mut r: Vec<f64> = num_s
        .iter()
        .step_by(stride(num_s.len()))
        .flat_map(|a| {
            den_s
                .iter()
                .step_by(stride(den_s.len()))
                .map(move |b| a / b)
        })
        .filter(|x| x.is_finite())
        .collect();
    if r.is_empty() {
        return None;
    }
    r.sort_by(f64::total_cmp);
    Some((
        stats::quantile_sorted(&r, 0.05),
        stats::quantile_sorted(&r, 0.95),
    ))
}

/// Whether a series keeps the total problem (strong) or the problem per device (weak) fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalingKind {
    Strong,
    Weak,
}

/// Speedup and efficiency of one point against the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scaled {
    /// Strong: T0 / T(p). Weak: scaled speedup (p / p0)·E.
    pub speedup: f64,
    /// Ideal speedup p / p0.
    pub ideal_speedup: f64,
    /// Strong: p0·T0 / (p·T(p)). Weak: T0 / T(p).
    pub efficiency: f64,
}

/// Speedup and efficiency of (`p`, `t_s`) against the baseline (`p0`, `t0_s`).
/// `None` for non-positive times or device counts.
pub(crate) fn scaling(kind: ScalingKind, p0: u32, t0_s: f64, p: u32, t_s: f64) -> Option<Scaled> {
    if p0 == 0 || p == 0 || t0_s <= 0.0 || t_s <= 0.0 || !t0_s.is_finite() || !t_s.is_finite() {
        return None;
    }
    let (p0, p) = (f64::from(p0), f64::from(p));
    let ideal_speedup = p / p0;
    Some(match kind {
        ScalingKind::Strong => Scaled {
            speedup: t0_s / t_s,
            ideal_speedup,
            efficiency: p0 * t0_s / (p * t_s),
        },
        ScalingKind::Weak => {
            let e = t0_s / t_s;
            Scaled {
                speedup: ideal_speedup * e,
                ideal_speedup,
                efficiency: e,
            }
        }
    })
}

/// Geometric mean of positive finite values; `None` if empty or any value is not positive.
pub(crate) fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
        return None;
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// A size band for the winner tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Band {
    /// ≤ 8 KiB.
    Small,
    /// ≤ 1 MiB.
    Medium,
    /// > 1 MiB.
    Large,
    /// GEMMs: no size axis.
    All,
}

impl Band {
    pub fn of_bytes(bytes: u64) -> Band {
        if bytes <= 8 << 10 {
            Band::Small
        } else if bytes <= 1 << 20 {
            Band::Medium
        } else {
            Band::Large
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Band::Small => "small ≤ 8KiB",
            Band::Medium => "medium ≤ 1MiB",
            Band::Large => "large > 1MiB",
            Band::All => "all",
        }
    }
}

/// The verdict of a ratio `first / second` (a time ratio: below 1 the first is faster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Winner {
    First,
    Second,
    Tie,
    /// The band's mean names a winner but most of its sizes do not agree.
    Mixed,
}

/// `First` when the time ratio is below 1 − `tie_band`, `Second` when above 1 + `tie_band`.
pub(crate) fn winner(time_ratio: f64, tie_band: f64) -> Winner {
    if time_ratio < 1.0 - tie_band {
        Winner::First
    } else if time_ratio > 1.0 + tie_band {
        Winner::Second
    } else {
        Winner::Tie
    }
}

/// Summary of the ratios in one band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandSummary {
    pub band: Band,
    /// Number of sizes (or GEMM cases) in the band.
    pub n: usize,
    pub geomean: f64,
    pub min: f64,
    pub max: f64,
}

impl BandSummary {
    /// The band's verdict: the winner of its geometric mean ([`winner`]), `Mixed` when no more
    /// than half of its sizes on their own favour that winner beyond the tie band.
    pub fn verdict(&self, ratios: &[(Band, f64)], tie_band: f64) -> (Winner, usize) {
        let w = winner(self.geomean, tie_band);
        let agree = ratios
            .iter()
            .filter(|(b, r)| *b == self.band && w != Winner::Tie && winner(*r, tie_band) == w)
            .count();
        match w {
            Winner::Tie => (Winner::Tie, 0),
            _ if 2 * agree <= self.n => (Winner::Mixed, agree),
            _ => (w, agree),
        }
    }
}

/// Groups (band, ratio) pairs and summarises each band; bands in order, empty ones left out.
pub(crate) fn band_summaries(ratios: &[(Band, f64)]) -> Vec<BandSummary> {
    let mut out = Vec::new();
    for band in [Band::Small, Band::Medium, Band::Large, Band::All] {
        let xs: Vec<f64> = ratios
            .iter()
            .filter(|(b, _)| *b == band)
            .map(|(_, r)| *r)
            .collect();
        if let Some(g) = geomean(&xs) {
            out.push(BandSummary {
                band,
                n: xs.len(),
                geomean: g,
                min: xs.iter().copied().fold(f64::INFINITY, f64::min),
                max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn strong_scaling_known_answers() {
        // T1 = 8 s; 4 devices in 2.5 s: speedup 3.2, efficiency 0.8.
        let s = scaling(ScalingKind::Strong, 1, 8.0, 4, 2.5).unwrap();
        assert!(close(s.speedup, 3.2) && close(s.efficiency, 0.8), "{s:?}");
        assert!(close(s.ideal_speedup, 4.0));
        // Baseline at 2 devices (T = 5 s); 8 devices in 1.5625 s: speedup 3.2 (ideal 4), E 0.8.
        let s = scaling(ScalingKind::Strong, 2, 5.0, 8, 1.5625).unwrap();
        assert!(close(s.speedup, 3.2) && close(s.efficiency, 0.8), "{s:?}");
        // The baseline against itself is ideal.
        let s = scaling(ScalingKind::Strong, 3, 7.0, 3, 7.0).unwrap();
        assert_eq!((s.speedup, s.efficiency), (1.0, 1.0));
    }

    #[test]
    fn weak_scaling_known_answers() {
        // T1 = 2 s, 16 devices take 2.5 s: E = 0.8, scaled speedup 12.8.
        let s = scaling(ScalingKind::Weak, 1, 2.0, 16, 2.5).unwrap();
        assert!(close(s.efficiency, 0.8) && close(s.speedup, 12.8), "{s:?}");
        assert!(scaling(ScalingKind::Weak, 1, 0.0, 2, 1.0).is_none());
        assert!(scaling(ScalingKind::Strong, 0, 1.0, 2, 1.0).is_none());
        assert!(scaling(ScalingKind::Strong, 1, 1.0, 2, f64::NAN).is_none());
    }

    #[test]
    fn spread_and_noise() {
        let xs: Vec<f64> = (1..=21).map(f64::from).collect(); // 1..21
        let s = spread(&xs).unwrap();
        assert_eq!(s.n, 21);
        assert_eq!(s.median_s, 11.0);
        assert!(close(s.p5_s, 2.0) && close(s.p95_s, 20.0), "{s:?}");
        let sd = stats::stddev(&xs).unwrap();
        assert!(close(s.cv, sd / 11.0));
        assert!(spread(&[]).is_none());
        assert!(is_noisy(0.11, 0.1) && !is_noisy(0.1, 0.1));
    }

    #[test]
    fn imbalance_names_the_slowest_rank() {
        let i = imbalance(&[1.0, 3.0, 1.5, 0.5]).unwrap();
        assert_eq!((i.slowest_rank, i.fastest_rank), (1, 3));
        assert!(close(i.ratio, 6.0));
        assert!(imbalance(&[1.0]).is_none());
        assert!(imbalance(&[0.0, 1.0]).is_none());
        let s = slowness(&[1.0, 2.0, 4.0]).unwrap();
        assert_eq!(s, vec![0.5, 1.0, 2.0]);
    }

    #[test]
    fn ratio_intervals_pair_every_sample() {
        // num ∈ {2, 4}, den ∈ {1, 2}: ratios {1, 2, 2, 4}
        let (lo, hi) = ratio_interval(&[2.0, 4.0], &[1.0, 2.0]).unwrap();
        assert!(close(lo, 1.15) && close(hi, 3.7), "{lo} {hi}");
        assert!(ratio_interval(&[1.0], &[0.0]).is_none());
        assert!(ratio_interval(&[], &[1.0]).is_none());
        // large sets are strided, not refused
        let big: Vec<f64> = (1..=1000).map(f64::from).collect();
        let (lo, hi) = ratio_interval(&big, &big).unwrap();
        assert!(lo < 1.0 && hi > 1.0);
    }

    #[test]
    fn bands_and_winners() {
        assert_eq!(Band::of_bytes(8192), Band::Small);
        assert_eq!(Band::of_bytes(8193), Band::Medium);
        assert_eq!(Band::of_bytes(1 << 20), Band::Medium);
        assert_eq!(Band::of_bytes((1 << 20) + 1), Band::Large);
        let s = band_summaries(&[(Band::Small, 2.0), (Band::Small, 0.5), (Band::Large, 4.0)]);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].band, s[0].n), (Band::Small, 2));
        assert!(close(s[0].geomean, 1.0));
        assert_eq!((s[0].min, s[0].max), (0.5, 2.0));
        assert!(close(s[1].geomean, 4.0));
        let ratios = [
            (Band::Small, 0.5),
            (Band::Small, 0.6),
            (Band::Small, 1.5),
            (Band::Large, 0.5),
            (Band::Large, 1.2),
            (Band::Large, 1.3),
        ];
        let s = band_summaries(&ratios);
        assert_eq!(s[0].verdict(&ratios, 0.05), (Winner::First, 2));
        // the large band's mean is 0.9 (hybrid-like) but 2 of 3 sizes say the opposite
        assert!(close(s[1].geomean, 0.78f64.powf(1.0 / 3.0)));
        assert_eq!(s[1].verdict(&ratios, 0.05), (Winner::Mixed, 1));
        assert_eq!(winner(0.9, 0.05), Winner::First);
        assert_eq!(winner(1.04, 0.05), Winner::Tie);
        assert_eq!(winner(1.2, 0.05), Winner::Second);
        assert!(geomean(&[1.0, -1.0]).is_none());
    }
}
