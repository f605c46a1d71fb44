//! The `ddp_step` part of a case record: where a data-parallel training step's time goes.
//!
//! Timings: `step_s`, `step_no_overlap_s`, `compute_s` and `comm_s` are the mean over ranks of
//! each rank's mean over timed steps, as `TimingResult::time_s`. Each timed round runs the
//! four modes once, every mode starting at a barrier, so round `i` of every mode has one
//! sample per rank; the case's `timing` and `phases` keep, per round, the slowest rank's value
//! (`iteration_max_over_ranks`).
//!
//! - `step_s`: one step with overlap: forward, backward with each full bucket's all-reduce
//!   started as soon as its gradients are in it, then waiting for every bucket and copying the
//!   reduced buckets back into the gradients.
//! - `step_no_overlap_s`: the same step with every all-reduce started after backward (the
//!   reference without overlap).
//! - `compute_s`: the same step's forward, backward, bucket copies and copy-back with no
//!   communication.
//! - `comm_s`: the buckets' all-reduces alone, started back to back and then awaited.
//! - `compute_imbalance_s = mean_i(max_r compute_ri) − compute_s`: what the slowest rank's
//!   compute costs every step beyond the average rank's (per-step jitter, E[max] − E[mean],
//!   which grows like σ·√(2 ln N), plus fixed imbalance such as an uneven strong-scaling
//!   split). The overlapped step runs at the slowest rank's pace (its last all-reduce waits
//!   for it), so this is step time that is neither communication nor average compute.
//! - `exposed_comm_s = mean_i(max_r step_ri − max_r compute_ri)`: the communication on the
//!   critical path: per round, the step's slowest rank minus compute's slowest rank. It is
//!   *not* clamped at 0 (a clamp would bias it upwards when everything is hidden): within
//!   noise of 0 it may read slightly negative. `exposed_comm_ci_s` is its 95 % interval,
//!   a percentile bootstrap over rounds (deterministic seed).
//! - `step_slowest_s = mean_i(max_r step_ri)`: the step at the slowest rank's pace, which the
//!   parts add up to: `step_slowest_s = compute_s + compute_imbalance_s + exposed_comm_s`.
//!   (`step_s`, the headline, is the mean rank's, as for every workload; ranks leave the
//!   step's barrier at different times, so the two differ by that skew.)
//! - `overlap_efficiency = clamp(1 − exposed_comm_s / comm_s, 0, 1)`: the share of the
//!   communication hidden behind backward compute (1 = all hidden, 0 = none). Absent with one
//!   device (nothing to hide) or when `comm_s` is 0.
//! - `samples_per_s = global_batch / step_s`.
//!
//! Files written before `exposed_definition` existed (absent) used `max(0, step_s −
//! compute_s)` on the means: jitter and imbalance counted as exposed communication.

use crate::stats::{self, SplitMix64};
use serde::{Deserialize, Serialize};

/// The current definition of `exposed_comm_s` (see the module docs).
pub(crate) const EXPOSED_CRITICAL_PATH: &str = "critical_path";

/// A ddp_step case's headline figures (rank 0's record; see the module docs for definitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DdpMetrics {
    /// Step with overlap, seconds.
    pub step_s: f64,
    /// Step with all-reduces after backward, seconds.
    pub step_no_overlap_s: f64,
    /// Forward + backward + bucket copies + copy-back without communication, seconds.
    pub compute_s: f64,
    /// All buckets' all-reduces alone, seconds.
    pub comm_s: f64,
    /// Communication on the critical path, seconds (see the module docs; may be slightly
    /// negative within noise of 0).
    pub exposed_comm_s: f64,
    /// 95 % bootstrap interval of `exposed_comm_s` over rounds, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_comm_ci_s: Option<[f64; 2]>,
    /// Slowest rank's compute beyond the mean rank's, per step, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_imbalance_s: Option<f64>,
    /// The step at the slowest rank's pace (compute + imbalance + exposed), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_slowest_s: Option<f64>,
    /// How `exposed_comm_s` was derived: `critical_path`; absent in older files (means).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_definition: Option<String>,
    /// clamp(1 − exposed_comm_s / comm_s, 0, 1); absent with one device or comm_s = 0.
    #[serde(default)]
    pub overlap_efficiency: Option<f64>,
    /// Samples of the global batch per second: global_batch / step_s.
    pub samples_per_s: f64,
    /// Samples per step over all devices.
    pub global_batch: u64,
    /// Layers of the model.
    pub layers: u32,
    /// Gradient elements per device (the model's parameters).
    pub parameters: u64,
    /// Gradient bytes all-reduced per step and device.
    pub gradient_bytes: u64,
    /// Buckets the gradients were split into (PyTorch DDP's assignment by size, in backward order).
    pub buckets: u32,
    /// FLOP of one step on one device (6 · batch · parameters, less layer 0's input gradient).
    pub flops_per_device: f64,
    /// Whether gradients were averaged over devices (DDP's default) instead of summed.
    pub averaged: bool,
}

/// What [`critical_path`] derives from one case's rounds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Overlap {
    pub step_slowest_s: f64,
    pub exposed_comm_s: f64,
    pub exposed_comm_ci_s: Option<[f64; 2]>,
    pub compute_imbalance_s: f64,
    pub overlap_efficiency: Option<f64>,
}

/// Bootstrap resamples for the interval of `exposed_comm_s`.
const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Fixed seed: the same samples always give the same interval.
const BOOTSTRAP_SEED: u64 = 0x5ca1_ab1e_dd95_7e90;

/// The overlap figures of one case from its rounds (pure; definitions in the module docs).
///
/// `step_max_s[i]` and `compute_max_s[i]` are round `i`'s slowest-rank times of the
/// overlapped step and of compute alone; `compute_mean_s` the mean over ranks of each rank's
/// mean compute time; `comm_s` the all-reduces alone. Rounds beyond the shorter slice are
/// ignored.
pub(crate) fn critical_path(
    step_max_s: &[f64],
    compute_max_s: &[f64],
    compute_mean_s: f64,
    comm_s: f64,
    devices: u32,
) -> Overlap {
    let diffs: Vec<f64> = step_max_s
        .iter()
        .zip(compute_max_s)
        .map(|(s, c)| s - c)
        .collect();
    let exposed = stats::mean(&diffs).unwrap_or(0.0);
    let n = diffs.len();
    let compute_max_mean = stats::mean(&compute_max_s[..n]).unwrap_or(compute_mean_s);
    let step_max_mean = stats::mean(&step_max_s[..n]).unwrap_or(compute_max_mean);
    let eff = (devices > 1 && comm_s > 0.0).then(|| (1.0 - exposed / comm_s).clamp(0.0, 1.0));
    Overlap {
        step_slowest_s: step_max_mean,
        exposed_comm_s: exposed,
        exposed_comm_ci_s: bootstrap_mean_ci(&diffs, 0.95),
        compute_imbalance_s: compute_max_mean - compute_mean_s,
        overlap_efficiency: eff,
    }
}

/// Percentile bootstrap interval of the mean at `level` (pure, deterministic); `None` for
/// fewer than two values.
pub(crate) fn bootstrap_mean_ci(xs: &[f64], level: f64) -> Option<[f64; 2]> {
    if xs.len() < 2 {
        return None;
    }
    let mut rng = SplitMix64(BOOTSTRAP_SEED);
    let n = xs.len();
    let mut means: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            let sum: f64 = (0..n)
                .map(|_| xs[((rng.uniform() * n as f64) as usize).min(n - 1)])
                .sum();
            sum / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some([
        stats::quantile_sorted(&means, tail),
        stats::quantile_sorted(&means, 1.0 - tail),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One simulated case: `ranks` ranks, `rounds` rounds; rank r's compute in a round is
    /// `base_s · share_r · (1 + jitter · N(0, 1))`, the overlapped step ends `exposed_s` after
    /// the slowest rank's compute (perfect overlap: 0). Returns (step max per round, compute
    /// max per round, mean of the ranks' mean compute).
    fn simulate(
        rng: &mut SplitMix64,
        shares: &[f64],
        rounds: usize,
        base_s: f64,
        jitter: f64,
        exposed_s: f64,
    ) -> (Vec<f64>, Vec<f64>, f64) {
        let (mut step, mut comp) = (Vec::new(), Vec::new());
        let mut sums = vec![0.0; shares.len()];
        for _ in 0..rounds {
            // compute alone, in its own round slot
            let c: Vec<f64> = shares
                .iter()
                .map(|s| base_s * s * (1.0 + jitter * rng.normal()).max(0.05))
                .collect();
            for (acc, x) in sums.iter_mut().zip(&c) {
                *acc += x;
            }
            comp.push(c.iter().copied().fold(0.0, f64::max));
            // the overlapped step, with its own jitter: paced by its slowest rank
            let s = shares
                .iter()
                .map(|s| base_s * s * (1.0 + jitter * rng.normal()).max(0.05))
                .fold(0.0, f64::max);
            step.push(s + exposed_s);
        }
        let mean = sums.iter().map(|x| x / rounds as f64).sum::<f64>() / shares.len() as f64;
        (step, comp, mean)
    }

    #[test]
    fn perfect_overlap_reads_as_perfect_at_every_rank_count() {
        // 5 % per-step jitter, 200 rounds: the mean-based definition read E[max] − E[mean]
        // (≈ 0.05·√(2 ln N)·base, 12 % of the step at 64 ranks) as exposed communication.
        let mut rng = SplitMix64(7);
        for ranks in [2usize, 4, 8, 16, 32, 64] {
            let shares = vec![1.0; ranks];
            let (step, comp, mean) = simulate(&mut rng, &shares, 200, 1e-2, 0.05, 0.0);
            let comm_s = 4e-3;
            let o = critical_path(&step, &comp, mean, comm_s, ranks as u32);
            let eff = o.overlap_efficiency.unwrap();
            assert!(eff >= 0.95, "{ranks} ranks: efficiency {eff}");
            let [lo, hi] = o.exposed_comm_ci_s.unwrap();
            assert!(lo <= 0.0 && 0.0 <= hi, "{ranks}: 0 outside [{lo}, {hi}]");
            // the jitter shows as imbalance instead
            assert!(o.compute_imbalance_s > 0.0, "{ranks}: {o:?}");
            // the old definition on the same data would have called it communication
            let step_mean = stats::mean(&step).unwrap();
            let old = (step_mean - mean).max(0.0);
            if ranks >= 8 {
                assert!(1.0 - old / comm_s < 0.95, "{ranks}: old {old}");
            }
        }
    }

    #[test]
    fn a_known_exposed_part_is_recovered_within_ten_percent() {
        let mut rng = SplitMix64(11);
        for ranks in [2usize, 8, 64] {
            let shares = vec![1.0; ranks];
            let (step, comp, mean) = simulate(&mut rng, &shares, 200, 1e-2, 0.05, 2e-3);
            let o = critical_path(&step, &comp, mean, 4e-3, ranks as u32);
            let rel = (o.exposed_comm_s - 2e-3).abs() / 2e-3;
            assert!(
                rel < 0.10,
                "{ranks} ranks: exposed {} ({rel})",
                o.exposed_comm_s
            );
            let [lo, hi] = o.exposed_comm_ci_s.unwrap();
            assert!(lo < 2e-3 && 2e-3 < hi, "{ranks}: [{lo}, {hi}]");
            assert!((o.overlap_efficiency.unwrap() - 0.5).abs() < 0.05);
        }
    }

    #[test]
    fn strong_scaling_imbalance_is_imbalance_not_communication() {
        // 10 samples over 3 devices: 3/3/4, no jitter, all communication hidden.
        let mut rng = SplitMix64(3);
        let shares = [3.0 / 10.0 * 3.0, 3.0 / 10.0 * 3.0, 4.0 / 10.0 * 3.0];
        let (step, comp, mean) = simulate(&mut rng, &shares, 50, 1e-2, 0.0, 0.0);
        let o = critical_path(&step, &comp, mean, 4e-3, 3);
        assert!(o.exposed_comm_s.abs() < 1e-12, "{o:?}");
        assert_eq!(o.overlap_efficiency, Some(1.0));
        // max 1.2 · base against a mean of 1.0 · base
        assert!((o.compute_imbalance_s - 0.2e-2).abs() < 1e-12, "{o:?}");
        // the parts add up to the slowest rank's step
        let sum = mean + o.compute_imbalance_s + o.exposed_comm_s;
        assert!((o.step_slowest_s - sum).abs() < 1e-12, "{o:?}");
    }

    #[test]
    fn definitions_at_the_edges() {
        // nothing hidden: exposed = comm
        let o = critical_path(&[1.5, 1.5], &[1.0, 1.0], 1.0, 0.5, 2);
        assert_eq!(o.exposed_comm_s, 0.5);
        assert_eq!(o.overlap_efficiency, Some(0.0));
        // noise below compute: negative exposed kept, efficiency clamped to 1
        let o = critical_path(&[0.9, 0.9], &[1.0, 1.0], 1.0, 0.5, 2);
        assert!((o.exposed_comm_s + 0.1).abs() < 1e-12);
        assert_eq!(o.overlap_efficiency, Some(1.0));
        // slower than serial: clamped to 0
        assert_eq!(
            critical_path(&[3.0], &[1.0], 1.0, 0.5, 2).overlap_efficiency,
            Some(0.0)
        );
        // one round: no interval; one device or no communication: no efficiency
        assert_eq!(
            critical_path(&[3.0], &[1.0], 1.0, 0.5, 2).exposed_comm_ci_s,
            None
        );
        assert_eq!(
            critical_path(&[1.0], &[1.0], 1.0, 0.5, 1).overlap_efficiency,
            None
        );
        assert_eq!(
            critical_path(&[1.0], &[1.0], 1.0, 0.0, 2).overlap_efficiency,
            None
        );
    }

    #[test]
    fn the_bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time() {
        let mut rng = SplitMix64(99);
        let trials = 400;
        let covered = (0..trials)
            .filter(|_| {
                let xs: Vec<f64> = (0..60).map(|_| 1.0 + 0.1 * rng.normal()).collect();
                let [lo, hi] = bootstrap_mean_ci(&xs, 0.95).unwrap();
                lo <= 1.0 && 1.0 <= hi
            })
            .count();
        // binomial(400, 0.95): sd 1.1 %; the percentile bootstrap runs a little narrow at n = 60
        let rate = covered as f64 / trials as f64;
        assert!((0.90..=0.99).contains(&rate), "coverage {rate}");
    }
}
