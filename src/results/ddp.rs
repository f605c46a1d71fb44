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
//! - `exposed_no_overlap_s = mean_i(max_r step_no_overlap_ri − max_r compute_ri)`: the same
//!   critical-path figure for the step that starts every all-reduce after backward, i.e. what
//!   the communication costs this step when nothing is hidden, measured the way
//!   `exposed_comm_s` is (same barriers, same copies, same slowest-rank pacing).
//! - `overlap_efficiency = clamp(1 − exposed / exposed without overlap, 0, 1)`: the share of
//!   the communication's cost the overlap hides (1 = all hidden, 0 = none), each exposed time
//!   the median over rounds of its mode's slowest-rank time less compute's median (medians, so
//!   preempted rounds cannot set it; `exposed_comm_s` and `exposed_no_overlap_s` are the
//!   means). Both come from steps measured alike, so a step that overlaps nothing reads 0 and one that hides
//!   everything reads 1 (`overlap_definition` = `against_no_overlap`). Absent with one device
//!   (nothing to hide) or when the no-overlap step exposes nothing. Files without
//!   `overlap_definition` divided by `comm_s`, the all-reduces alone back to back: the
//!   no-overlap step's exposed time read 1.6–1.9× that on a loaded 2-CPU host, so every case
//!   showed 0 % overlap.
//! - `samples_per_s = global_batch / step_s`.
//!
//! Files written before `exposed_definition` existed (absent) used `max(0, step_s −
//! compute_s)` on the means: jitter and imbalance counted as exposed communication.

use crate::stats::{self, SplitMix64};
use serde::{Deserialize, Serialize};

/// The current definition of `exposed_comm_s` (see the module docs).
pub(crate) const EXPOSED_CRITICAL_PATH: &str = "critical_path";
/// The current definition of `overlap_efficiency` (see the module docs).
pub(crate) const OVERLAP_AGAINST_NO_OVERLAP: &str = "against_no_overlap";

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
    /// The no-overlap step's communication on the critical path, seconds (see the module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_no_overlap_s: Option<f64>,
    /// clamp(1 − exposed_comm_s / exposed_no_overlap_s, 0, 1); absent with one device or when
    /// the no-overlap step exposes nothing.
    #[serde(default)]
    pub overlap_efficiency: Option<f64>,
    /// How `overlap_efficiency` was derived: `against_no_overlap`; absent in older files
    /// (against `comm_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_definition: Option<String>,
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
    pub exposed_no_overlap_s: f64,
    pub overlap_efficiency: Option<f64>,
}

/// One case's rounds, as [`critical_path`] reads them: per round `i`, the slowest rank's
/// time of the overlapped step, of the no-overlap step and of compute alone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rounds<'a> {
    pub step_max_s: &'a [f64],
    pub no_overlap_max_s: &'a [f64],
    pub compute_max_s: &'a [f64],
    /// The mean over ranks of each rank's mean compute time.
    pub compute_mean_s: f64,
    pub devices: u32,
}

/// Bootstrap resamples for the interval of `exposed_comm_s`.
const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Fixed seed: the same samples always give the same interval.
const BOOTSTRAP_SEED: u64 = 0x5ca1_ab1e_dd95_7e90;

/// The overlap figures of one case from its rounds (pure; definitions in the module docs).
/// Rounds beyond the shortest slice are ignored.
pub(crate) fn critical_path(r: Rounds<'_>) -> Overlap {
    let n = r
        .step_max_s
        .len()
        .min(r.no_overlap_max_s.len())
        .min(r.compute_max_s.len());
    let minus_compute = |xs: &[f64]| -> Vec<f64> {
        xs[..n]
            .iter()
            .zip(&r.compute_max_s[..n])
            .map(|(s, c)| s - c)
            .collect()
    };
    let diffs = minus_compute(r.step_max_s);
    let exposed = stats::mean(&diffs).unwrap_or(0.0);
    let exposed_no_overlap = stats::mean(&minus_compute(r.no_overlap_max_s)).unwrap_or(0.0);
    let compute_max_mean = stats::mean(&r.compute_max_s[..n]).unwrap_or(r.compute_mean_s);
    let step_max_mean = stats::mean(&r.step_max_s[..n]).unwrap_or(compute_max_mean);
    let eff = overlap_efficiency(&r, n);
    Overlap {
        step_slowest_s: step_max_mean,
        exposed_comm_s: exposed,
        exposed_comm_ci_s: bootstrap_mean_ci(&diffs, 0.95),
        compute_imbalance_s: compute_max_mean - r.compute_mean_s,
        exposed_no_overlap_s: exposed_no_overlap,
        overlap_efficiency: eff,
    }
}

/// `1 − exposed / exposed without overlap`, each the median over rounds of its mode's
/// slowest-rank time less compute's median: a median, not the mean `exposed_comm_s` is (that
/// one adds up with the step's parts), so a few preempted rounds 10–100× slow in any mode
/// cannot set the efficiency (simulated below with 5 % wild rounds). `None` with one device or
/// when the no-overlap step exposes nothing.
fn overlap_efficiency(r: &Rounds<'_>, n: usize) -> Option<f64> {
    let med = |xs: &[f64]| stats::median(&xs[..n]);
    let (step, after, comp) = (
        med(r.step_max_s)?,
        med(r.no_overlap_max_s)?,
        med(r.compute_max_s)?,
    );
    let exposed_no_overlap = after - comp;
    (r.devices > 1 && exposed_no_overlap > 0.0)
        .then(|| (1.0 - (step - comp) / exposed_no_overlap).clamp(0.0, 1.0))
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

    /// One simulated case: `ranks` ranks, `rounds` rounds of each mode; rank r's compute in a
    /// round is `base_s · share_r · (1 + jitter · N(0, 1))`, and a step ends, after its slowest
    /// rank's compute, its exposed communication later (`exposed_s` for the overlapped step,
    /// `comm_s` for the no-overlap one; each with the same relative jitter). Each mode runs in
    /// its own rounds, as the workload runs them.
    struct Sim {
        shares: Vec<f64>,
        rounds: usize,
        base_s: f64,
        jitter: f64,
    }

    /// Per-round slowest-rank times of the three modes and the mean rank's mean compute.
    struct Simulated {
        step: Vec<f64>,
        no_overlap: Vec<f64>,
        comp: Vec<f64>,
        compute_mean_s: f64,
    }

    impl Simulated {
        fn rounds(&self) -> Rounds<'_> {
            Rounds {
                step_max_s: &self.step,
                no_overlap_max_s: &self.no_overlap,
                compute_max_s: &self.comp,
                compute_mean_s: self.compute_mean_s,
                devices: 0,
            }
        }
    }

    impl Sim {
        fn uniform(ranks: usize, jitter: f64) -> Sim {
            Sim {
                shares: vec![1.0; ranks],
                rounds: 200,
                base_s: 1e-2,
                jitter,
            }
        }

        fn computes(&self, rng: &mut SplitMix64) -> Vec<f64> {
            self.shares
                .iter()
                .map(|s| self.base_s * s * (1.0 + self.jitter * rng.normal()).max(0.05))
                .collect()
        }

        fn run(&self, rng: &mut SplitMix64, exposed_s: f64, comm_s: f64) -> Simulated {
            let mut out = Simulated {
                step: Vec::new(),
                no_overlap: Vec::new(),
                comp: Vec::new(),
                compute_mean_s: 0.0,
            };
            let mut sum = 0.0;
            let max = |xs: Vec<f64>| xs.into_iter().fold(0.0, f64::max);
            for _ in 0..self.rounds {
                let c = self.computes(rng);
                sum += c.iter().sum::<f64>();
                out.comp.push(max(c));
                let tail = |rng: &mut SplitMix64, d: f64| d * (1.0 + self.jitter * rng.normal());
                let s = max(self.computes(rng));
                out.step.push(s + tail(rng, exposed_s));
                let s = max(self.computes(rng));
                out.no_overlap.push(s + tail(rng, comm_s));
            }
            out.compute_mean_s = sum / (self.rounds * self.shares.len()) as f64;
            out
        }
    }

    fn path(sim: &Simulated, devices: u32) -> Overlap {
        critical_path(Rounds {
            devices,
            ..sim.rounds()
        })
    }

    const RANKS: [usize; 6] = [2, 8, 32, 128, 512, 1024];

    #[test]
    fn perfect_overlap_reads_one_and_a_sequential_step_zero_at_every_rank_count() {
        // 5 % per-step jitter on compute and communication, 200 rounds of each mode.
        let mut rng = SplitMix64(7);
        for ranks in RANKS {
            let sim = Sim::uniform(ranks, 0.05);
            let hidden = sim.run(&mut rng, 0.0, 4e-3);
            let o = path(&hidden, ranks as u32);
            let eff = o.overlap_efficiency.unwrap();
            assert!(eff >= 0.95, "{ranks} ranks, all hidden: efficiency {eff}");
            // within noise of 0 (the interval's coverage is tested on its own below)
            assert!(o.exposed_comm_s.abs() < 0.05 * 4e-3, "{ranks}: {o:?}");
            // the jitter shows as imbalance instead
            assert!(o.compute_imbalance_s > 0.0, "{ranks}: {o:?}");
            let serial = sim.run(&mut rng, 4e-3, 4e-3);
            let eff = path(&serial, ranks as u32).overlap_efficiency.unwrap();
            assert!(
                eff <= 0.05,
                "{ranks} ranks, nothing hidden: efficiency {eff}"
            );
            println!(
                "{ranks} ranks: hidden reads {:.3}, serial {eff:.3}",
                o.overlap_efficiency.unwrap()
            );
        }
    }

    #[test]
    fn wild_rounds_do_not_set_the_efficiency() {
        // 5 % of the rounds of every mode preempted, 10-100x slow: the ends still read 1 and
        // 0, and a half-hidden step 0.5, at 2-1,024 ranks (one wild step round adds 10-100
        // steps' worth to a mean over 200 rounds: a mean-based quotient cannot stay near 1).
        let mut rng = SplitMix64(23);
        let wild = |xs: &mut Vec<f64>, rng: &mut SplitMix64| {
            for x in xs.iter_mut() {
                if rng.uniform() < 0.05 {
                    *x *= 10.0 + 90.0 * rng.uniform();
                }
            }
        };
        let mut worst = [0.0f64; 3];
        for ranks in RANKS {
            let sim = Sim::uniform(ranks, 0.05);
            for (k, (exposed, want)) in [(0.0, 1.0), (4e-3, 0.0), (2e-3, 0.5)].iter().enumerate() {
                let mut run = sim.run(&mut rng, *exposed, 4e-3);
                wild(&mut run.step, &mut rng);
                wild(&mut run.no_overlap, &mut rng);
                wild(&mut run.comp, &mut rng);
                let eff = path(&run, ranks as u32)
                    .overlap_efficiency
                    .unwrap_or(f64::NAN);
                let off = (eff - want).abs();
                worst[k] = worst[k].max(off);
                assert!(off <= 0.08, "{ranks} ranks, true {want}: read {eff}");
            }
        }
        println!(
            "5 % wild rounds, 2-1,024 ranks: worst error hidden {:.3}, serial {:.3}, half {:.3}",
            worst[0], worst[1], worst[2]
        );
    }

    #[test]
    fn a_known_exposed_part_is_recovered_within_ten_percent() {
        let mut rng = SplitMix64(11);
        for ranks in [2usize, 8, 64] {
            let sim = Sim::uniform(ranks, 0.05).run(&mut rng, 2e-3, 4e-3);
            let o = path(&sim, ranks as u32);
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
    fn a_no_overlap_step_dearer_than_the_all_reduces_alone_still_reads_half_hidden() {
        // The all-reduces alone take 4 ms; inside the no-overlap step they cost 7 ms (copies,
        // skewed arrival): the old quotient against comm_s read a half-hidden step as 0.
        let mut rng = SplitMix64(5);
        let sim = Sim::uniform(8, 0.05).run(&mut rng, 3.5e-3, 7e-3);
        let o = path(&sim, 8);
        let old = (1.0 - o.exposed_comm_s / 4e-3).clamp(0.0, 1.0);
        assert!(old < 0.15, "old definition {old}");
        let eff = o.overlap_efficiency.unwrap();
        assert!((eff - 0.5).abs() < 0.05, "efficiency {eff}");
        assert!((o.exposed_no_overlap_s - 7e-3).abs() < 0.1 * 7e-3, "{o:?}");
    }

    #[test]
    fn strong_scaling_imbalance_is_imbalance_not_communication() {
        // 10 samples over 3 devices: 3/3/4, no jitter, all communication hidden.
        let mut rng = SplitMix64(3);
        let sim = Sim {
            shares: vec![3.0 / 10.0 * 3.0, 3.0 / 10.0 * 3.0, 4.0 / 10.0 * 3.0],
            rounds: 50,
            base_s: 1e-2,
            jitter: 0.0,
        }
        .run(&mut rng, 0.0, 4e-3);
        let o = path(&sim, 3);
        assert!(o.exposed_comm_s.abs() < 1e-12, "{o:?}");
        assert_eq!(o.overlap_efficiency, Some(1.0));
        // max 1.2 · base against a mean of 1.0 · base
        assert!((o.compute_imbalance_s - 0.2e-2).abs() < 1e-12, "{o:?}");
        // the parts add up to the slowest rank's step
        let sum = sim.compute_mean_s + o.compute_imbalance_s + o.exposed_comm_s;
        assert!((o.step_slowest_s - sum).abs() < 1e-12, "{o:?}");
    }

    fn edge(step: &[f64], no_overlap: &[f64], compute: &[f64], devices: u32) -> Overlap {
        critical_path(Rounds {
            step_max_s: step,
            no_overlap_max_s: no_overlap,
            compute_max_s: compute,
            compute_mean_s: 1.0,
            devices,
        })
    }

    #[test]
    fn definitions_at_the_edges() {
        // nothing hidden: exposed = the no-overlap step's
        let o = edge(&[1.5, 1.5], &[1.5, 1.5], &[1.0, 1.0], 2);
        assert_eq!(o.exposed_comm_s, 0.5);
        assert_eq!(o.overlap_efficiency, Some(0.0));
        // noise below compute: negative exposed kept, efficiency clamped to 1
        let o = edge(&[0.9, 0.9], &[1.5, 1.5], &[1.0, 1.0], 2);
        assert!((o.exposed_comm_s + 0.1).abs() < 1e-12);
        assert_eq!(o.overlap_efficiency, Some(1.0));
        // slower than the no-overlap step: clamped to 0
        let o = edge(&[3.0], &[1.5], &[1.0], 2);
        assert_eq!(o.overlap_efficiency, Some(0.0));
        // one round: no interval; one device, or a no-overlap step exposing nothing: no efficiency
        assert_eq!(o.exposed_comm_ci_s, None);
        assert_eq!(edge(&[1.0], &[1.5], &[1.0], 1).overlap_efficiency, None);
        assert_eq!(edge(&[1.0], &[1.0], &[1.0], 2).overlap_efficiency, None);
        assert_eq!(edge(&[1.0], &[0.9], &[1.0], 2).overlap_efficiency, None);
        // rounds beyond the shortest slice are ignored
        let o = edge(&[1.5, 9.0], &[2.0], &[1.0, 1.0], 2);
        assert_eq!(o.exposed_comm_s, 0.5);
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
