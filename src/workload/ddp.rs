//! `ddp_step`: one data-parallel training step of a layer model, shaped like PyTorch DDP's.
//!
//! The model is a list of dense layers, each `d_in × d_out` (a GEMM shape; presets in
//! [`PRESETS`](crate::params::ddp::PRESETS)). Every device holds the whole model and its own
//! share of the batch (weak scaling: `batch` samples per device; strong: a global `batch` split
//! over the devices).
//! One step is:
//!
//! 1. forward, layer 0 to L−1: `Y = X · W` (`batch × d_in · d_in × d_out`);
//! 2. backward, layer L−1 to 0: `dX = dY · Wᵀ` (skipped for layer 0, as frameworks do) and the
//!    weight gradient `dW = Xᵀ · dY` (`d_in × batch · batch × d_out`), copied into its bucket
//!    (DDP's default, `gradient_as_bucket_view=False`);
//! 3. each bucket's all-reduce starts as soon as its last gradient is in it and runs while
//!    backward goes on; the step ends when every bucket is reduced and averaged (DDP divides
//!    by the world size).
//!
//! Buckets follow DDP's assignment by size: layers in backward order fill a bucket until it
//! holds at least its cap — `first_bucket_bytes` for the first bucket (default 1 MiB, DDP's
//! `_DEFAULT_FIRST_BUCKET_BYTES`), `bucket_bytes` for the rest (default 25 MiB,
//! `bucket_cap_mb`); a layer larger than the cap gets a bucket of its own.
//!
//! The data are not a real network's: `dY` is a fixed pattern instead of the next layer's
//! output gradient, so that every reduced gradient is exact. `X` and `dY` hold small integers
//! (`F[(b + i + d + l) mod 7]` and `G[(b + j + 2l) mod 5]`, F in −3..3, G in −2..2) so each
//! element of the summed gradient is an integer of magnitude ≤ 6 · global batch, exactly
//! representable, and depends only on `((i + l) mod 7, (j + 2l) mod 5)`: validation checks
//! every element against a 7 × 5 table in O(1). Shapes, order and data volumes are a real
//! step's, so the times are.
//!
//! Measured per case, in alternating order within each timed round (so slow drift in machine
//! load hits all four alike): the step with overlap (the case's `timing`), the step with every
//! all-reduce after backward, compute alone (no communication) and the all-reduces alone
//! (phases `step_no_overlap`, `compute`, `comm`); the figures derived from them are in
//! [`crate::results::ddp`].

use super::{agree, CaseError, Fault, Measured, RunSettings};
use crate::backend::{Backend, CollectiveCall, OverlapSettings};
use crate::comm::HostComm;
use crate::measure::{self};
use crate::params::{CaseParams, Dtype, ReduceOp, Scaling, Timing, Workload};
use crate::results::ddp::{
    critical_path, DdpMetrics, Rounds, EXPOSED_CRITICAL_PATH, OVERLAP_AGAINST_NO_OVERLAP,
};
use crate::results::schema::{PhaseResult, TimingResult};

// The data and figures of a step and the case's driver here; the step itself on a backend
// (set-up, one step per mode, the check, the timed rounds) in [`step`].
mod step;
#[cfg(test)]
mod tests;

use step::{check, setup, time_modes, Mode, Net, Shapes};

// The model grammar and the defaults live in params (config and plan read them too).
pub(crate) use crate::params::ddp::{
    BucketPlan, Model, DEFAULT_BATCH, DEFAULT_BUCKET_BYTES, DEFAULT_MODEL, DEFAULT_PROGRESS,
};

/// F and G of the gradient patterns (see the module docs).
const P: usize = 7;
const Q: usize = 5;

fn f_val(x: u64) -> f64 {
    (x % P as u64) as f64 - 3.0
}
fn g_val(x: u64) -> f64 {
    (x % Q as u64) as f64 - 2.0
}
/// X of device `d`, layer `l`: sample `b`, input `i`.
pub(crate) fn x_entry(d: u64, l: u64, b: u64, i: u64) -> f64 {
    f_val(b + i + d + l)
}
/// dY of layer `l`: sample `b`, output `j` (the same on every device).
pub(crate) fn dy_entry(l: u64, b: u64, j: u64) -> f64 {
    g_val(b + j + 2 * l)
}

/// The summed gradient over devices with `batches[d]` samples each, by
/// `((i + l) mod 7, (j + 2l) mod 5)` (pure).
pub(crate) fn expected_table(batches: &[u64]) -> [[f64; Q]; P] {
    let mut t = [[0.0; Q]; P];
    for (a, row) in t.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            for (d, &nb) in batches.iter().enumerate() {
                for b in 0..nb {
                    *v += f_val(b + a as u64 + d as u64) * g_val(b + c as u64);
                }
            }
        }
    }
    t
}

/// Samples device `d` of `n` computes per step.
pub(crate) fn device_batch(batch: u32, scaling: Scaling, d: u32, n: u32) -> u64 {
    match scaling {
        Scaling::Weak => u64::from(batch),
        Scaling::Strong => {
            let (b, n) = (u64::from(batch), u64::from(n.max(1)));
            b * (u64::from(d) + 1) / n - b * u64::from(d) / n
        }
    }
}

/// FLOP of one step on a device with `batch` samples.
pub(crate) fn step_flops(model: &Model, batch: u64) -> f64 {
    model
        .layers
        .iter()
        .enumerate()
        .map(|(l, x)| {
            let gemms = if l == 0 { 2.0 } else { 3.0 };
            gemms * 2.0 * batch as f64 * x.params() as f64
        })
        .sum()
}

/// Relative tolerance (against max(|expected|, 1)) of an averaged gradient, from the backend's
/// tolerance for an average of inputs bounded by the expected magnitude, `collective_tol`
/// ([`Backend::reduction_tolerance`]): 0 where the backend averages exactly (the CPU
/// backend's sum then divide; NCCL's `ncclAvg` over a power-of-two device count). NCCL
/// pre-multiplies every input by fl(1/n) and sums; the rounding error is at most γ·Σ|x_d|/n
/// ≤ γ·6·`max_batch` (every gradient element is at most 3 · 2 · its device's batch), and
/// `collective_tol` ≥ γ, so the bound holds even where the mean is near 0 (pure).
pub(crate) fn avg_tolerance(collective_tol: f64, max_batch: u64) -> f64 {
    if collective_tol <= 0.0 {
        return 0.0;
    }
    (collective_tol * 6.0 * max_batch as f64).min(1.0)
}

pub(crate) fn run<B: Backend, C: HostComm>(
    backend: &mut B,
    comm: &C,
    params: &CaseParams,
    settings: &RunSettings,
    fault: Option<Fault>,
) -> Result<Measured, CaseError> {
    backend
        .overlap_support()
        .map_err(|why| CaseError::Skipped(why.to_string()))?;
    let dtype = params.dtype;
    if !matches!(dtype, Dtype::F32 | Dtype::F64) {
        return Err(CaseError::Skipped(format!(
            "ddp_step runs in f32 or f64, not {dtype}"
        )));
    }
    let model = Model::parse(params.model.as_deref().unwrap_or(DEFAULT_MODEL))
        .map_err(|e| CaseError::Failed(e.to_string()))?;
    let devices = backend.total_devices();
    let batches = global_batches(params, devices)?;
    let s = shapes(backend, params, model, &batches)?;
    let delay_s = match fault {
        Some(Fault::SlowComm(ms)) => f64::from(ms) / 1e3,
        _ => 0.0,
    };
    let progress = params.progress.unwrap_or(DEFAULT_PROGRESS);
    agree(
        comm,
        backend.set_overlap(OverlapSettings {
            progress,
            comm_delay_s: delay_s,
        }),
    )?;
    let mut net = agree(
        comm,
        setup(backend, &s, dtype, fault == Some(Fault::Corrupt)),
    )?;
    let samples = agree(comm, time_modes(backend, comm, &s, &mut net, settings))?;
    let timings: Vec<_> = samples
        .iter()
        .map(|r| measure::combine(comm, Timing::Isolated, r))
        .collect();

    let (wrong_local, tolerance) = validate(backend, comm, &s, &mut net, &batches, settings)?;
    // Back to the plain strategy, so no later case meets a delayed link.
    agree(
        comm,
        backend.set_overlap(OverlapSettings {
            progress,
            comm_delay_s: 0.0,
        }),
    )?;
    let mut m = Measured {
        wrong: comm.sum_u64(wrong_local),
        check_iters: settings.check_iters,
        tolerance,
        // No `bytes`: algbw would read as a collective's bandwidth; the gradient volume is
        // in `ddp.gradient_bytes`.
        ..Measured::default()
    };
    if let [Some(step_t), Some(after_t), Some(compute_t), Some(comm_t)] = &timings[..] {
        let t = ModeTimes {
            step: step_t,
            after: after_t,
            compute: compute_t,
            comm: comm_t,
        };
        record(&mut m, &t, &s, &batches, dtype, devices);
    }
    Ok(m)
}

/// Checked steps in both modes, `check_iters` times: (wrong gradient entries on this rank,
/// tolerance).
fn validate<B: Backend, C: HostComm>(
    backend: &mut B,
    comm: &C,
    s: &Shapes,
    net: &mut Net<B::Buf>,
    batches: &[u64],
    settings: &RunSettings,
) -> Result<(u64, f64), CaseError> {
    let dtype = s.call.dtype;
    let table = expected_table(batches);
    let max_batch = batches.iter().copied().max().unwrap_or(0);
    let tolerance = avg_tolerance(backend.reduction_tolerance(dtype, ReduceOp::Avg), max_batch);
    let mut wrong_local = 0;
    for _ in 0..settings.check_iters {
        for mode in [Mode::Overlap, Mode::AfterBackward] {
            wrong_local += agree(comm, check(backend, s, net, mode, &table, dtype, tolerance))?;
        }
    }
    Ok((wrong_local, tolerance))
}

/// Samples of every device (global index), checked: no device without samples, and sums
/// small enough to validate exactly in the case's dtype.
fn global_batches(params: &CaseParams, devices: u32) -> Result<Vec<u64>, CaseError> {
    let dtype = params.dtype;
    let batch = params.batch.unwrap_or(DEFAULT_BATCH);
    let scaling = params.scaling.unwrap_or(Scaling::Weak);
    let batches: Vec<u64> = (0..devices)
        .map(|d| device_batch(batch, scaling, d, devices))
        .collect();
    if batches.contains(&0) {
        return Err(CaseError::Failed(format!(
            "strong scaling: a global batch of {batch} leaves some of the {devices} devices without samples: use a batch of at least {devices}"
        )));
    }
    let global: u64 = batches.iter().sum();
    // |summed gradient| ≤ 3 · 2 · global batch must be an exact integer in the dtype.
    if 6 * global >= 1u64 << dtype.exact_integer_bits() {
        return Err(CaseError::Failed(format!(
            "a global batch of {global} samples is too large for exact {dtype} validation: use f64 or fewer samples"
        )));
    }
    Ok(batches)
}

/// The model, its bucket plan, this rank's devices' samples and the gradient all-reduce.
fn shapes<B: Backend>(
    backend: &B,
    params: &CaseParams,
    model: Model,
    batches: &[u64],
) -> Result<Shapes, CaseError> {
    let cap = params.bucket_bytes.unwrap_or(DEFAULT_BUCKET_BYTES);
    // Results written before the first bucket existed recorded none: absent = 0 (same cap).
    let first = params.first_bucket_bytes.unwrap_or(0);
    let plan = BucketPlan::new(&model, params.dtype.size_bytes(), cap, first);
    if plan.lens.iter().any(|&n| n > i32::MAX as usize) {
        return Err(CaseError::Failed(
            "a bucket holds more than 2^31 − 1 elements (MPI's count limit): use smaller layers"
                .into(),
        ));
    }
    let local_batch: Vec<u64> = (0..backend.local_devices())
        .map(|dev| batches[backend.device_index(dev) as usize])
        .collect();
    Ok(Shapes {
        call: CollectiveCall {
            workload: Workload::Allreduce,
            dtype: params.dtype,
            op: Some(ReduceOp::Avg),
            root: None,
            send_count: 0,
            recv_count: 0,
            in_place: true,
            devices: backend.total_devices(),
        },
        model,
        plan,
        local_batch,
    })
}

/// The four timed modes' results, in `time_modes`' order.
struct ModeTimes<'a> {
    step: &'a TimingResult,
    after: &'a TimingResult,
    compute: &'a TimingResult,
    comm: &'a TimingResult,
}

/// Records the step's timing, its phases and the DDP metrics derived from them.
fn record(
    m: &mut Measured,
    t: &ModeTimes<'_>,
    s: &Shapes,
    batches: &[u64],
    dtype: Dtype,
    devices: u32,
) {
    let global: u64 = batches.iter().sum();
    let max_batch = batches.iter().copied().max().unwrap_or(0);
    let elem = dtype.size_bytes();
    // Per round, slowest rank of the step minus slowest rank of compute: the critical path.
    let o = critical_path(Rounds {
        step_max_s: &t.step.samples_s,
        no_overlap_max_s: &t.after.samples_s,
        compute_max_s: &t.compute.samples_s,
        compute_mean_s: t.compute.time_s,
        devices,
    });
    let phase = |name: &str, t: &TimingResult| PhaseResult {
        name: name.into(),
        time_s: t.time_s,
        stats_s: t.stats_s,
        samples_s: t.samples_s.clone(),
    };
    m.phases = vec![
        phase("step_no_overlap", t.after),
        phase("compute", t.compute),
        phase("comm", t.comm),
    ];
    m.ddp = Some(DdpMetrics {
        step_s: t.step.time_s,
        step_no_overlap_s: t.after.time_s,
        compute_s: t.compute.time_s,
        comm_s: t.comm.time_s,
        exposed_comm_s: o.exposed_comm_s,
        exposed_comm_ci_s: o.exposed_comm_ci_s,
        compute_imbalance_s: Some(o.compute_imbalance_s),
        step_slowest_s: Some(o.step_slowest_s),
        exposed_definition: Some(EXPOSED_CRITICAL_PATH.to_string()),
        exposed_no_overlap_s: Some(o.exposed_no_overlap_s),
        overlap_efficiency: o.overlap_efficiency,
        overlap_definition: Some(OVERLAP_AGAINST_NO_OVERLAP.to_string()),
        samples_per_s: if t.step.time_s > 0.0 {
            global as f64 / t.step.time_s
        } else {
            0.0
        },
        global_batch: global,
        layers: s.model.layers.len() as u32,
        parameters: s.model.params(),
        gradient_bytes: s.model.params() * elem,
        buckets: s.plan.lens.len() as u32,
        flops_per_device: step_flops(&s.model, max_batch),
        averaged: true,
    });
    m.timing = Some(t.step.clone());
}
