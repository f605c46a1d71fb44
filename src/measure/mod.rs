//! The timing loop, the same for every backend and workload.
//!
//! - `pipelined` (nccl-tests): barrier, then a batch of operations back to back, one device
//!   synchronisation, time / batch size. Iterations are split into batches so that CI gets
//!   several samples; each rank's mean over all batches equals nccl-tests' elapsed / iters.
//! - `isolated` (OSU): each call timed alone (mark, op, sync, mark), then a barrier, so calls
//!   never overlap.
//!
//! Calibration runs first: one cold operation, then a few probe operations each timed alone;
//! the counts come from the fastest probe (slowest rank), never from the cold call, which can
//! be 1000× the steady state (NCCL connects lazily, UCX registers memory on first use). Then
//! warm-up, never timed, then the timed loop. Ranks agree on every count (through the control
//! plane) before the loop, or blocking collectives would deadlock.

use crate::backend::{Backend, BackendResult};
use crate::comm::HostComm;
use crate::params::Timing;
use crate::results::schema::{Calibration, RankSpread, TimingResult};
use crate::stats;

// The policy is shared vocabulary (specs and plans carry it); how it resolves is measuring.
pub use crate::params::IterPolicy;

/// Fewest timed iterations the automatic policy runs, however slow the operation.
pub const MIN_AUTO_ITERS: u32 = 5;
/// Probe operations after the cold one: at least this many ...
pub const MIN_PROBES: u32 = 3;
/// ... and at most this many, as far as a tenth of the time budget allows.
pub const MAX_PROBES: u32 = 5;
/// Largest message that gets OSU's small-message counts.
pub const SMALL_MESSAGE_BYTES: u64 = 8 << 10;
/// Shortest pipelined batch the automatic policy times, seconds. Each batch starts at a
/// barrier that releases the ranks up to ~1 µs apart, and that skew lands in the batch's
/// time: at 100 µs it is ≤ 1 %. (Batches of 50 broadcasts of 0.1 µs read 10–25 % slower than
/// one batch of 1000; docs/benchmarking.md.)
pub const MIN_PIPELINED_BATCH_S: f64 = 100e-6;
/// What the automatic policy aims a pipelined batch at, seconds: the floor with a margin, so
/// that run-to-run speed changes after calibration leave the realised batches above it.
pub const PIPELINED_BATCH_TARGET_S: f64 = 1.2 * MIN_PIPELINED_BATCH_S;
/// Pipelined probe batches before the counts are fixed (each sized from the one before).
pub const PIPELINED_PROBES: u32 = 2;

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
    /// too), with at least [`MIN_AUTO_ITERS`]. Pipelined batches are then lengthened to last
    /// [`PIPELINED_BATCH_TARGET_S`] where the budget allows (`est_op_s` is then the pipelined
    /// probe's per-operation time, see [`time_op`]). Explicit counts are used as given.
    /// Pure: every rank gets the same answer from the same (agreed) estimate.
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
            Timing::Pipelined => {
                let mut per_batch = iters.div_ceil(batches);
                // Only from a real estimate: a failed probe must not inflate the counts.
                if self.iters.is_none() && est_op_s.is_finite() && est_op_s > 0.0 {
                    // (1 - 1e-9): 120 µs / 0.1 µs is 1200, not 1200.0000001 rounded up.
                    let floor = (PIPELINED_BATCH_TARGET_S / est * (1.0 - 1e-9))
                        .ceil()
                        .min(f64::from(u32::MAX)) as u32;
                    let cap = (fit(self.time_budget_s) / batches).max(1);
                    per_batch = per_batch.max(floor.min(cap));
                }
                per_batch.saturating_mul(batches)
            }
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
    /// How the counts were found (the same on every rank).
    pub calibration: Option<Calibration>,
    /// Why the timing may mean less than it seems (see [`timing_warnings`]).
    pub warnings: Vec<String>,
}

/// Probe operations to run after a cold one of `cold_s` seconds: as many as fit in a tenth
/// of the time budget, within [`MIN_PROBES`]..=[`MAX_PROBES`] (pure).
pub fn probe_count(time_budget_s: f64, cold_s: f64) -> u32 {
    if !(cold_s.is_finite() && cold_s > 0.0) {
        return MAX_PROBES;
    }
    (0.1 * time_budget_s / cold_s)
        .floor()
        .clamp(f64::from(MIN_PROBES), f64::from(MAX_PROBES)) as u32
}

/// Finds the counts of one case: runs `timed_op` (one operation on every rank, returning the
/// slowest rank's seconds; the same on every rank) once cold, then [`probe_count`] times, and
/// resolves the policy with the fastest probe.
pub fn calibrate<E>(
    policy: &IterPolicy,
    mode: Timing,
    bytes: Option<u64>,
    mut timed_op: impl FnMut() -> Result<f64, E>,
) -> Result<(IterCounts, Calibration), E> {
    let cold_op_s = timed_op()?;
    let probes = probe_count(policy.time_budget_s, cold_op_s);
    let probes_s = (0..probes)
        .map(|_| timed_op())
        .collect::<Result<Vec<f64>, E>>()?;
    let estimate_s = probes_s.iter().copied().fold(f64::INFINITY, f64::min);
    let counts = policy.resolve(mode, bytes, estimate_s);
    Ok((
        counts,
        Calibration {
            cold_op_s,
            probes_s,
            estimate_s,
            pipelined_probes_s: Vec::new(),
            pipelined_estimate_s: None,
            realised_batch_s: None,
            iters_source: if policy.iters.is_some() {
                "explicit"
            } else {
                "auto"
            }
            .to_string(),
        },
    ))
}

/// What a case's record must say about counts that weaken its timing (pure): fewer timed
/// iterations than [`MIN_AUTO_ITERS`] (only explicit `--iters` does that), and pipelined
/// batches of one operation, which time each call alone like `isolated`.
pub fn timing_warnings(mode: Timing, counts: IterCounts) -> Vec<String> {
    let mut w = Vec::new();
    if counts.iters < MIN_AUTO_ITERS {
        w.push(format!(
            "{}, below the documented minimum of {MIN_AUTO_ITERS} (explicit --iters)",
            crate::units::count(counts.iters as usize, "timed iteration", "timed iterations")
        ));
    }
    if mode == Timing::Pipelined && counts.iters > 1 && counts.iters / counts.batches.max(1) < 2 {
        w.push(format!(
            "pipelined with {} of one operation each: that is isolated timing (give more --iters or fewer --batches)",
            crate::units::count(counts.batches as usize, "batch", "batches")
        ));
    }
    w
}

/// Ops in a pipelined probe batch meant to last [`PIPELINED_BATCH_TARGET_S`] at `est_s` per
/// op, within a twentieth of the time budget (pure).
pub fn probe_batch_len(est_s: f64, time_budget_s: f64) -> u32 {
    if !(est_s.is_finite() && est_s > 0.0) {
        return 1;
    }
    let want = (PIPELINED_BATCH_TARGET_S / est_s).ceil();
    let cap = (0.05 * time_budget_s / est_s).floor().max(1.0);
    want.min(cap).clamp(1.0, 1e7) as u32
}

/// Re-estimates a pipelined operation's cost from short pipelined batches (the isolated
/// probes include a synchronisation and the barrier's skew per call, several times a
/// pipelined small message), each sized from the estimate before it, and resolves the counts
/// from the last. Every rank runs the same batches (the estimates are agreed maxima).
fn pipelined_probe<B, C, F>(
    backend: &mut B,
    comm: &C,
    policy: &IterPolicy,
    bytes: Option<u64>,
    mut calibration: Calibration,
    op: &mut F,
) -> BackendResult<(IterCounts, Calibration)>
where
    B: Backend,
    C: HostComm,
    F: FnMut(&mut B) -> BackendResult<()>,
{
    let mut est = calibration.estimate_s;
    for _ in 0..PIPELINED_PROBES {
        let n = probe_batch_len(est, policy.time_budget_s);
        comm.barrier();
        let a = backend.mark()?;
        for _ in 0..n {
            op(backend)?;
        }
        let b = backend.mark()?;
        backend.synchronize()?;
        let per_op = comm.max_f64(backend.elapsed_s(a, b)?) / f64::from(n);
        calibration.pipelined_probes_s.push(per_op);
        if per_op.is_finite() && per_op > 0.0 {
            est = per_op;
        }
    }
    calibration.pipelined_estimate_s = Some(est);
    Ok((policy.resolve(Timing::Pipelined, bytes, est), calibration))
}

/// The realised pipelined batch length (median over batches of the slowest rank's batch,
/// seconds) and a warning when it is below [`MIN_PIPELINED_BATCH_S`] although the counts were
/// automatic (pure; `samples_s` are per-op times per batch, slowest rank).
pub fn realised_batch(
    counts: IterCounts,
    samples_s: &[f64],
    automatic: bool,
) -> (Option<f64>, Option<String>) {
    let per_batch = counts.iters / counts.batches.max(1);
    let Some(median) = stats::median(samples_s) else {
        return (None, None);
    };
    let batch_s = median * f64::from(per_batch);
    let warning = (automatic && batch_s < MIN_PIPELINED_BATCH_S).then(|| {
        format!(
            "pipelined batches lasted {} (median), below the {} floor: the barrier's skew is a larger share of each batch (the time budget capped the batch, or the speed changed after calibration)",
            crate::units::format_seconds(batch_s),
            crate::units::format_seconds(MIN_PIPELINED_BATCH_S)
        )
    });
    (Some(batch_s), warning)
}

/// Times re-sized after a pipelined run whose batches came out below the floor.
pub const RESIZES: u32 = 2;

/// The pipelined timed loop: `counts.batches` batches, each a barrier then `iters / batches`
/// operations back to back and one synchronisation; per-op seconds per batch.
fn pipelined_batches<B, C, F>(
    backend: &mut B,
    comm: &C,
    counts: IterCounts,
    op: &mut F,
) -> BackendResult<Vec<f64>>
where
    B: Backend,
    C: HostComm,
    F: FnMut(&mut B) -> BackendResult<()>,
{
    let per_batch = counts.iters / counts.batches;
    let mut samples = Vec::with_capacity(counts.batches as usize);
    if backend.marks_in_flight() > counts.batches as usize {
        // Device timelines: the batches back to back, one mark between each two and one
        // synchronisation at the end, as nccl-tests times its -n operations. Synchronising
        // after each batch would start every batch on an idle device, adding the first
        // operation's launch to each (on an H200, ~1 us per operation at 5 per batch).
        comm.barrier();
        let mut marks = vec![backend.mark()?];
        for _ in 0..counts.batches {
            for _ in 0..per_batch {
                op(backend)?;
            }
            marks.push(backend.mark()?);
        }
        backend.synchronize()?;
        for w in marks.windows(2) {
            samples.push(backend.elapsed_s(w[0], w[1])? / f64::from(per_batch));
        }
        return Ok(samples);
    }
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
    Ok(samples)
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
    // Calibrate: each probe timed alone on every rank, the slowest rank's time agreed.
    let (counts, calibration) = calibrate(policy, mode, bytes, || -> BackendResult<f64> {
        comm.barrier();
        let t0 = backend.mark()?;
        op(backend)?;
        backend.synchronize()?;
        let t1 = backend.mark()?;
        Ok(comm.max_f64(backend.elapsed_s(t0, t1)?))
    })?;
    let (counts, calibration) = if mode == Timing::Pipelined && policy.iters.is_none() {
        pipelined_probe(backend, comm, policy, bytes, calibration, &mut op)?
    } else {
        (counts, calibration)
    };

    for _ in 0..counts.warmup {
        op(backend)?;
    }
    backend.synchronize()?;
    comm.barrier();

    let mut counts = counts;
    let mut calibration = calibration;
    let mut samples = Vec::with_capacity(counts.batches as usize);
    match mode {
        Timing::Pipelined => {
            samples = pipelined_batches(backend, comm, counts, &mut op)?;
            // Automatic batches that came out shorter than the floor (the machine sped up
            // after the probes: another job ended, a VM left a slow mode) are re-sized from
            // their own steady-state speed and timed again, at most RESIZES times.
            for _ in 0..RESIZES {
                if policy.iters.is_some() {
                    break;
                }
                let mut worst = samples.clone();
                comm.max_f64_slice(&mut worst);
                let (Some(batch_s), _) = realised_batch(counts, &worst, true) else {
                    break;
                };
                let est = stats::median(&worst).unwrap_or(0.0);
                let resized = policy.resolve(Timing::Pipelined, bytes, est);
                if batch_s >= MIN_PIPELINED_BATCH_S || resized.iters <= counts.iters {
                    break;
                }
                calibration.pipelined_probes_s.push(est);
                calibration.pipelined_estimate_s = Some(est);
                counts = resized;
                samples = pipelined_batches(backend, comm, counts, &mut op)?;
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
        calibration: Some(calibration),
        warnings: timing_warnings(mode, counts),
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
    let mut t = timing_result(mode, mine.counts, per_rank, samples);
    t.calibration = mine.calibration.clone();
    t.warnings = mine.warnings.clone();
    if mode == Timing::Pipelined {
        let automatic = t
            .calibration
            .as_ref()
            .is_some_and(|c| c.iters_source == "auto");
        let (batch_s, warning) = realised_batch(mine.counts, &t.samples_s, automatic);
        if let Some(c) = t.calibration.as_mut() {
            c.realised_batch_s = batch_s;
        }
        t.warnings.extend(warning);
    }
    Some(t)
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
        calibration: None,
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod device_sim;

#[cfg(test)]
mod tests {
    use super::*;

    /// A device with a 5 us launch on an idle stream and 1 us operations, 100 operations
    /// in 20 batches: back to back the launch is paid once (nccl-tests' figure, 1.05 us an
    /// operation); synchronised per batch, once per batch of 5 (2 us). A host clock keeps the
    /// per-batch loop.
    #[test]
    fn device_timelines_run_the_batches_back_to_back() {
        let counts = IterCounts {
            iters: 100,
            warmup: 0,
            batches: 20,
        };
        let comm = crate::comm::SoloComm;
        let run = |in_flight: usize| {
            let mut dev = device_sim::SimDevice::new(5e-6, 1e-6, in_flight);
            let s = pipelined_batches(
                &mut dev,
                &comm,
                counts,
                &mut |d: &mut device_sim::SimDevice| d.op(),
            )
            .unwrap();
            (s, dev.synchronizations)
        };
        let (events, syncs) = run(64);
        assert_eq!((events.len(), syncs), (20, 1));
        let mean = stats::mean(&events).unwrap();
        assert!((mean - 1.05e-6).abs() < 1e-12, "{mean}");
        // Only the first batch carries the launch; the others are steady state.
        assert!(
            (events[0] - 2e-6).abs() < 1e-12
                && events[1..].iter().all(|x| (x - 1e-6).abs() < 1e-12)
        );

        let (host, syncs) = run(0);
        assert_eq!((host.len(), syncs), (20, 20));
        assert!(host.iter().all(|x| (x - 2e-6).abs() < 1e-12), "{host:?}");
        // Fewer marks in flight than the batches need: the per-batch loop, not a lost mark.
        let (few, syncs) = run(20);
        assert_eq!((few.len(), syncs), (20, 20));
    }

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
        // explicit counts are not lengthened, however short the batches
        let p = IterPolicy {
            iters: Some(1000),
            ..IterPolicy::default()
        };
        let c = p.resolve(Timing::Pipelined, Some(8), 1e-7);
        assert_eq!((c.iters, c.batches), (1000, 20));
    }

    #[test]
    fn pipelined_batches_last_long_enough_to_hide_the_barrier() {
        let p = IterPolicy::default();
        // 0.1 µs broadcasts: OSU's 1000 would be 20 batches of 50 (5 µs each); 1200 per batch
        let c = p.resolve(Timing::Pipelined, Some(8), 1e-7);
        assert_eq!((c.iters, c.batches), (24_000, 20));
        assert!(f64::from(c.iters / c.batches) * 1e-7 >= PIPELINED_BATCH_TARGET_S * 0.999);
        // 10 µs operations: 100 / 20 = 5 per batch would be 50 µs; 12 per batch
        let c = p.resolve(Timing::Pipelined, Some(1 << 20), 1e-5);
        assert_eq!((c.iters, c.batches), (240, 20));
        // slow operations keep their counts: 1 ms × 100 is within the budget already
        let c = p.resolve(Timing::Pipelined, Some(1 << 20), 1e-3);
        assert_eq!((c.iters, c.batches), (100, 20));
        // the time budget still caps the total: 20 batches × 1000 × 0.1 µs > 1 ms
        let tight = IterPolicy {
            time_budget_s: 1e-3,
            ..IterPolicy::default()
        };
        let c = tight.resolve(Timing::Pipelined, Some(8), 1e-7);
        assert_eq!((c.iters, c.batches), (10_000, 20));
        // isolated timing is untouched
        let c = p.resolve(Timing::Isolated, Some(8), 1e-7);
        assert_eq!(c.iters, 1000);
    }

    #[test]
    fn probe_batches_aim_at_the_target_within_the_budget() {
        // 0.1 µs: 1200 ops; 1 ms: one; a bad estimate: one
        assert_eq!(probe_batch_len(1e-7, 1.0), 1200);
        assert_eq!(probe_batch_len(1e-3, 1.0), 1);
        assert_eq!(probe_batch_len(f64::NAN, 1.0), 1);
        // a tiny budget caps the probe: 5 % of 1 ms at 0.1 µs = 500
        assert_eq!(probe_batch_len(1e-7, 1e-3), 500);
    }

    #[test]
    fn the_realised_batch_is_recorded_and_a_short_one_warned_about() {
        let counts = IterCounts {
            iters: 24_000,
            warmup: 100,
            batches: 20,
        };
        // 1200 ops of 0.1 µs: 120 µs, no warning
        let (b, w) = realised_batch(counts, &[1e-7; 20], true);
        assert!((b.unwrap() - 120e-6).abs() < 1e-12);
        assert!(w.is_none());
        // the machine sped up 2× after calibration: 60 µs, warned when automatic only
        let (b, w) = realised_batch(counts, &[0.5e-7; 20], true);
        assert!((b.unwrap() - 60e-6).abs() < 1e-12);
        assert!(w.unwrap().contains("below the 100.00 µs floor"));
        assert!(realised_batch(counts, &[0.5e-7; 20], false).1.is_none());
        assert_eq!(realised_batch(counts, &[], true), (None, None));
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
    fn a_cold_first_operation_does_not_cut_the_counts() {
        // The first call takes 2 s (lazy set-up), every later one 1 µs.
        let mut calls = 0;
        let mut op = || -> Result<f64, ()> {
            calls += 1;
            Ok(if calls == 1 { 2.0 } else { 1e-6 })
        };
        let p = IterPolicy::default();
        let (c, cal) = calibrate(&p, Timing::Pipelined, Some(8), &mut op).unwrap();
        // 1 µs operations: OSU's 1000 in 20 batches of 50 µs, lengthened to 120 per batch
        assert_eq!((c.iters, c.warmup, c.batches), (2400, 100, 20));
        assert_eq!(cal.cold_op_s, 2.0);
        assert_eq!(cal.probes_s, vec![1e-6; MIN_PROBES as usize]);
        assert_eq!((cal.estimate_s, cal.iters_source.as_str()), (1e-6, "auto"));
        assert!(timing_warnings(Timing::Pipelined, c).is_empty());
        // The old rule (counts from the first call) would have run the minimum.
        assert_eq!(
            p.resolve(Timing::Pipelined, Some(8), 2.0).iters,
            MIN_AUTO_ITERS
        );
    }

    #[test]
    fn the_fastest_probe_sets_the_counts_and_errors_stop_calibration() {
        let times = [0.3, 0.02, 0.01, 0.05, 0.04, 0.03];
        let mut i = 0;
        let p = IterPolicy::default();
        let (c, cal) = calibrate(
            &p,
            Timing::Isolated,
            Some(1 << 30),
            || -> Result<f64, ()> {
                i += 1;
                Ok(times[i - 1])
            },
        )
        .unwrap();
        assert_eq!(cal.probes_s, vec![0.02, 0.01, 0.05]);
        assert_eq!(c.iters, 50); // 0.5 s / 0.01 s
        let mut n = 0;
        let e = calibrate(&p, Timing::Isolated, None, || {
            n += 1;
            if n == 2 {
                Err("probe failed")
            } else {
                Ok(1e-3)
            }
        });
        assert_eq!(e.unwrap_err(), "probe failed");
        assert_eq!(n, 2, "no probe after a failure");
    }

    #[test]
    fn probe_counts_fit_a_tenth_of_the_budget() {
        assert_eq!(probe_count(0.5, 1e-6), MAX_PROBES);
        assert_eq!(probe_count(0.5, 0.0125), 4);
        assert_eq!(probe_count(0.5, 10.0), MIN_PROBES);
        assert_eq!(probe_count(0.5, f64::NAN), MAX_PROBES);
    }

    #[test]
    fn weak_counts_are_warned_about() {
        let c = |iters, batches| IterCounts {
            iters,
            warmup: 0,
            batches,
        };
        assert!(timing_warnings(Timing::Isolated, c(5, 5)).is_empty());
        let w = timing_warnings(Timing::Isolated, c(3, 3));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("below the documented minimum of 5"), "{w:?}");
        let w = timing_warnings(Timing::Pipelined, c(20, 20));
        assert!(w[0].contains("that is isolated timing"), "{w:?}");
        assert!(timing_warnings(Timing::Pipelined, c(40, 20)).is_empty());
    }
}
