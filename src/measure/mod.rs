//! The timing loop, the same for every backend and workload.
//!
//! - `pipelined` (nccl-tests): barrier, then a batch of operations back to back, one device
//!   synchronisation, time / batch size. Iterations are split into batches so that CI gets
//!   several samples; each rank's mean over all batches equals nccl-tests' elapsed / iters.
//! - `isolated` (OSU): each call timed alone (mark, op, sync, mark), then a barrier, so calls
//!   never overlap.
//!
//! Warm-up runs first and is never timed. Ranks agree on every count (through the control
//! plane) before the loop, or blocking collectives would deadlock.

use crate::backend::{Backend, BackendResult};
use crate::comm::HostComm;
use crate::params::Timing;
use crate::results::schema::{RankSpread, TimingResult};
use crate::stats;

/// How many iterations to run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IterPolicy {
    /// Timed iterations; `None` = automatic (see [`IterPolicy::resolve`]).
    pub iters: Option<u32>,
    /// Warm-up iterations; `None` = automatic.
    pub warmup: Option<u32>,
    /// Automatic mode: the measured phase of one case should take about this long, seconds.
    pub time_budget_s: f64,
    /// Pipelined mode: batches (samples); `None` = min(iters, 20).
    pub batches: Option<u32>,
}

impl Default for IterPolicy {
    fn default() -> Self {
        IterPolicy {
            iters: None,
            warmup: None,
            time_budget_s: 0.5,
            batches: None,
        }
    }
}

/// Fewest timed iterations the automatic policy runs, however slow the operation.
pub const MIN_AUTO_ITERS: u32 = 5;
/// Largest message that gets OSU's small-message counts.
pub const SMALL_MESSAGE_BYTES: u64 = 8 << 10;

/// Resolved counts for one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IterCounts {
    pub iters: u32,
    pub warmup: u32,
    pub batches: u32,
}

impl IterPolicy {
    /// Counts for an operation of `bytes` (None for GEMMs) estimated to take `est_op_s`.
    ///
    /// Automatic counts start from OSU's defaults (1000 + 100 warm-up up to 8 KiB, 100 + 10
    /// above) and are capped so the timed phase takes about `time_budget_s` (IMB caps by time
    /// too), with at least [`MIN_AUTO_ITERS`]. Explicit counts are used as given. Pure: every
    /// rank gets the same answer from the same (agreed) estimate.
    pub fn resolve(&self, mode: Timing, bytes: Option<u64>, est_op_s: f64) -> IterCounts {
        let small = bytes.is_some_and(|b| b <= SMALL_MESSAGE_BYTES);
        let (base_iters, base_warmup) = if small { (1000, 100) } else { (100, 10) };
        let est = if est_op_s.is_finite() && est_op_s > 0.0 {
            est_op_s
        } else {
            1e-9
        };
        let fit = |budget: f64| (budget / est).floor().min(f64::from(u32::MAX)) as u32;
        let iters = self
            .iters
            .unwrap_or_else(|| fit(self.time_budget_s).clamp(MIN_AUTO_ITERS, base_iters))
            .max(1);
        let warmup = self
            .warmup
            .unwrap_or_else(|| fit(self.time_budget_s * 0.2).clamp(1, base_warmup));
        let batches = match mode {
            Timing::Isolated => iters,
            Timing::Pipelined => self.batches.unwrap_or(20).clamp(1, iters),
        };
        // Pipelined batches are equal, so round iterations up to a multiple of batches.
        let iters = match mode {
            Timing::Isolated => iters,
            Timing::Pipelined => iters.div_ceil(batches) * batches,
        };
        IterCounts {
            iters,
            warmup,
            batches,
        }
    }
}

/// One rank's timing of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct RankSamples {
    pub counts: IterCounts,
    /// Seconds per operation: one per iteration (isolated) or per batch (pipelined).
    pub samples_s: Vec<f64>,
    /// This rank's mean seconds per operation over all timed iterations.
    pub mean_s: f64,
}

/// Times `op` on every rank. All ranks must call it together with the same policy.
///
/// `op` enqueues one operation; the loop synchronises the backend where the mode requires.
pub fn time_op<B, C, F>(
    backend: &mut B,
    comm: &C,
    mode: Timing,
    policy: &IterPolicy,
    bytes: Option<u64>,
    mut op: F,
) -> BackendResult<RankSamples>
where
    B: Backend,
    C: HostComm,
    F: FnMut(&mut B) -> BackendResult<()>,
{
    // Probe one operation to size the loop; every rank adopts the slowest estimate.
    comm.barrier();
    let t0 = backend.mark()?;
    op(backend)?;
    backend.synchronize()?;
    let t1 = backend.mark()?;
    let est = comm.max_f64(backend.elapsed_s(t0, t1)?);
    let counts = policy.resolve(mode, bytes, est);

    for _ in 0..counts.warmup {
        op(backend)?;
    }
    backend.synchronize()?;
    comm.barrier();

    let mut samples = Vec::with_capacity(counts.batches as usize);
    match mode {
        Timing::Pipelined => {
            let per_batch = counts.iters / counts.batches;
            for _ in 0..counts.batches {
                comm.barrier();
                let a = backend.mark()?;
                for _ in 0..per_batch {
                    op(backend)?;
                }
                let b = backend.mark()?;
                backend.synchronize()?;
                samples.push(backend.elapsed_s(a, b)? / f64::from(per_batch));
            }
        }
        Timing::Isolated => {
            for _ in 0..counts.iters {
                let a = backend.mark()?;
                op(backend)?;
                let b = backend.mark()?;
                backend.synchronize()?;
                samples.push(backend.elapsed_s(a, b)?);
                comm.barrier();
            }
        }
    }
    let mean_s = stats::mean(&samples).unwrap_or(0.0);
    Ok(RankSamples {
        counts,
        samples_s: samples,
        mean_s,
    })
}

/// Combines every rank's samples into the case's timing (returned at the root only).
///
/// The headline `time_s` is the mean over ranks of each rank's mean (nccl-tests `-a 1`, OSU
/// average); each sample is the slowest rank's value for that iteration or batch.
pub fn combine<C: HostComm>(comm: &C, mode: Timing, mine: &RankSamples) -> Option<TimingResult> {
    let mut samples = mine.samples_s.clone();
    comm.max_f64_slice(&mut samples);
    let per_rank = comm.gather_f64(mine.mean_s);
    if !comm.is_root() {
        return None;
    }
    Some(timing_result(mode, mine.counts, per_rank, samples))
}

/// Builds a [`TimingResult`] from per-rank means and cross-rank samples (pure).
pub fn timing_result(
    mode: Timing,
    counts: IterCounts,
    per_rank_mean_s: Vec<f64>,
    samples_s: Vec<f64>,
) -> TimingResult {
    let mean = stats::mean(&per_rank_mean_s).unwrap_or(0.0);
    let (lo, hi) = stats::argmin_argmax(&per_rank_mean_s).unwrap_or((0, 0));
    let spread = RankSpread {
        min: per_rank_mean_s.get(lo).copied().unwrap_or(0.0),
        mean,
        max: per_rank_mean_s.get(hi).copied().unwrap_or(0.0),
        min_rank: lo as u32,
        max_rank: hi as u32,
    };
    let stats_s = stats::summarize(&samples_s).unwrap_or(stats::Summary {
        n: 0,
        min: 0.0,
        median: 0.0,
        mean: 0.0,
        max: 0.0,
        p99: 0.0,
        stddev: 0.0,
        cv: 0.0,
    });
    TimingResult {
        mode,
        warmup_iters: counts.warmup,
        iters: counts.iters,
        batches: counts.batches,
        time_s: mean,
        cross_rank: "mean_of_rank_means".to_string(),
        rank_mean_s: spread,
        per_rank_mean_s,
        sample_kind: match mode {
            Timing::Isolated => "iteration_max_over_ranks",
            Timing::Pipelined => "batch_mean_max_over_ranks",
        }
        .to_string(),
        samples_s,
        stats_s,
    }
}

/// Measures the smallest non-zero step of a clock that returns seconds.
pub fn clock_resolution_s(mut now: impl FnMut() -> f64) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..200 {
        let a = now();
        let mut b = now();
        let mut spins = 0;
        while b == a && spins < 1_000_000 {
            b = now();
            spins += 1;
        }
        if b > a {
            best = best.min(b - a);
        }
    }
    if best.is_finite() {
        best
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_policy_follows_osu_then_caps_by_time() {
        let p = IterPolicy::default();
        // fast small message: OSU counts
        let c = p.resolve(Timing::Isolated, Some(8), 1e-6);
        assert_eq!((c.iters, c.warmup, c.batches), (1000, 100, 1000));
        // fast large message: 100 + 10
        let c = p.resolve(Timing::Isolated, Some(1 << 20), 1e-6);
        assert_eq!((c.iters, c.warmup), (100, 10));
        // slow op: capped by the budget (0.5 s / 0.05 s = 10), warm-up by a fifth of it
        let c = p.resolve(Timing::Isolated, Some(1 << 30), 0.05);
        assert_eq!((c.iters, c.warmup), (10, 2));
        // very slow op: the minimum
        let c = p.resolve(Timing::Isolated, None, 10.0);
        assert_eq!((c.iters, c.warmup), (MIN_AUTO_ITERS, 1));
    }

    #[test]
    fn explicit_counts_and_batches() {
        let p = IterPolicy {
            iters: Some(7),
            warmup: Some(0),
            batches: Some(3),
            ..IterPolicy::default()
        };
        let c = p.resolve(Timing::Pipelined, Some(8), 1.0);
        // rounded up to equal batches
        assert_eq!((c.iters, c.warmup, c.batches), (9, 0, 3));
        let c = p.resolve(Timing::Isolated, Some(8), 1.0);
        assert_eq!((c.iters, c.batches), (7, 7));
        // bad estimates do not break the policy
        let c = IterPolicy::default().resolve(Timing::Pipelined, Some(8), f64::NAN);
        assert_eq!((c.iters, c.batches), (1000, 20));
    }

    #[test]
    fn combine_names_extremes() {
        let counts = IterCounts {
            iters: 3,
            warmup: 1,
            batches: 3,
        };
        let t = timing_result(
            Timing::Isolated,
            counts,
            vec![2.0, 1.0, 6.0],
            vec![1.0, 2.0, 9.0],
        );
        assert_eq!(t.time_s, 3.0);
        assert_eq!((t.rank_mean_s.min_rank, t.rank_mean_s.max_rank), (1, 2));
        assert_eq!(t.stats_s.median, 2.0);
        assert_eq!(t.sample_kind, "iteration_max_over_ranks");
    }

    #[test]
    fn clock_resolution_of_a_coarse_clock() {
        let mut t = 0u64;
        let r = clock_resolution_s(|| {
            t += 1;
            (t / 10) as f64 * 1e-3
        });
        assert!((r - 1e-3).abs() < 1e-12, "{r}");
    }
}
