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
use crate::backend::{Backend, BackendResult, CollectiveCall, GemmBatch, HostBuf, OverlapSettings};
use crate::comm::HostComm;
use crate::measure::{self, RankSamples};
use crate::params::{CaseParams, Dtype, MatmulShape, ReduceOp, Scaling, Timing, Workload};
use crate::results::ddp::{critical_path, DdpMetrics, EXPOSED_CRITICAL_PATH};
use crate::results::schema::{PhaseResult, TimingResult};

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

/// What one timed run of the step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// All-reduces start during backward.
    Overlap,
    /// All-reduces start after backward.
    AfterBackward,
    /// No communication.
    ComputeOnly,
    /// Only the all-reduces.
    CommOnly,
}

const MODES: [Mode; 4] = [
    Mode::Overlap,
    Mode::AfterBackward,
    Mode::ComputeOnly,
    Mode::CommOnly,
];

/// Every local device's buffers: per layer `[layer][device]`, scratch `[device]`.
struct Net<Buf> {
    x: Vec<Vec<Buf>>,
    xt: Vec<Vec<Buf>>,
    w: Vec<Vec<Buf>>,
    wt: Vec<Vec<Buf>>,
    dy: Vec<Vec<Buf>>,
    y: Vec<Buf>,
    dx: Vec<Buf>,
    /// Each layer's weight gradient `[layer][device]` (PyTorch's `param.grad`): the GEMM
    /// writes it, it is copied into its bucket, and the reduced bucket is copied back.
    grad: Vec<Vec<Buf>>,
    /// `[bucket]` → one buffer per device; `None` while the backend holds it.
    buckets: Vec<Option<Vec<Buf>>>,
}

/// Shapes of the step, per local device.
struct Shapes {
    model: Model,
    plan: BucketPlan,
    /// Samples of each local device.
    local_batch: Vec<u64>,
    call: CollectiveCall,
}

impl Shapes {
    fn gemms(&self, f: impl Fn(u64) -> MatmulShape) -> Vec<GemmBatch> {
        self.local_batch
            .iter()
            .map(|&b| GemmBatch {
                shape: f(b),
                count: 1,
                shared_b: false,
            })
            .collect()
    }
    fn bucket_call(&self, k: usize) -> CollectiveCall {
        CollectiveCall {
            send_count: self.plan.lens[k],
            recv_count: self.plan.lens[k],
            ..self.call.clone()
        }
    }
}

fn start_bucket<B: Backend>(
    be: &mut B,
    s: &Shapes,
    net: &mut Net<B::Buf>,
    k: usize,
    tickets: &mut Vec<(usize, u64)>,
) -> BackendResult<()> {
    let bufs = net.buckets[k].take().expect("bucket not in flight");
    tickets.push((k, be.allreduce_start(&s.bucket_call(k), bufs)?));
    Ok(())
}

/// One step in `mode` (enqueued; the caller synchronises).
fn step<B: Backend>(
    be: &mut B,
    s: &Shapes,
    net: &mut Net<B::Buf>,
    mode: Mode,
) -> BackendResult<()> {
    let mut tickets = Vec::new();
    if mode != Mode::CommOnly {
        for (l, layer) in s.model.layers.iter().enumerate() {
            let g = s.gemms(|b| MatmulShape {
                m: b,
                n: layer.d_out,
                k: layer.d_in,
            });
            be.gemm(&g, &net.x[l], &net.w[l], &mut net.y)?;
        }
        for (l, layer) in s.model.layers.iter().enumerate().rev() {
            if l > 0 {
                let g = s.gemms(|b| MatmulShape {
                    m: b,
                    n: layer.d_in,
                    k: layer.d_out,
                });
                be.gemm(&g, &net.dy[l], &net.wt[l], &mut net.dx)?;
            }
            let g = s.gemms(|b| MatmulShape {
                m: layer.d_in,
                n: layer.d_out,
                k: b,
            });
            be.gemm(&g, &net.xt[l], &net.dy[l], &mut net.grad[l])?;
            let (k, at) = s.plan.slot[l];
            let bucket = net.buckets[k].as_mut().expect("bucket not in flight");
            for (dev, dst) in bucket.iter_mut().enumerate() {
                be.copy_within(dev, dst, at, &net.grad[l][dev], 0, layer.params() as usize)?;
            }
            if mode == Mode::Overlap && s.plan.last_layer[k] == l {
                start_bucket(be, s, net, k, &mut tickets)?;
            }
        }
    }
    if matches!(mode, Mode::AfterBackward | Mode::CommOnly) {
        for k in 0..s.plan.lens.len() {
            start_bucket(be, s, net, k, &mut tickets)?;
        }
    }
    for (k, t) in tickets {
        net.buckets[k] = Some(be.allreduce_wait(t)?);
    }
    if mode != Mode::CommOnly {
        copy_back(be, s, net)?;
    }
    Ok(())
}

/// Copies every reduced bucket back into its layers' gradients, as DDP does at the end of
/// backward with `gradient_as_bucket_view=False` (its default): after the last bucket's wait,
/// each bucket's views are copied into `param.grad`.
fn copy_back<B: Backend>(be: &mut B, s: &Shapes, net: &mut Net<B::Buf>) -> BackendResult<()> {
    for (l, layer) in s.model.layers.iter().enumerate() {
        let (k, at) = s.plan.slot[l];
        let bucket = net.buckets[k].as_ref().expect("bucket not in flight");
        for (dev, src) in bucket.iter().enumerate() {
            be.copy_within(
                dev,
                &mut net.grad[l][dev],
                0,
                src,
                at,
                layer.params() as usize,
            )?;
        }
    }
    Ok(())
}

fn upload_new<B: Backend>(
    be: &mut B,
    dev: usize,
    dtype: Dtype,
    len: usize,
    f: impl Fn(usize) -> f64,
) -> BackendResult<B::Buf> {
    let host = HostBuf::from_fn(dtype, len, f)?;
    let mut buf = be.alloc(dev, dtype, len)?;
    be.upload(dev, &mut buf, &host)?;
    Ok(buf)
}

fn setup<B: Backend>(
    be: &mut B,
    s: &Shapes,
    dtype: Dtype,
    corrupt: bool,
) -> BackendResult<Net<B::Buf>> {
    let local = s.local_batch.len();
    let layers = &s.model.layers;
    let max_in = layers.iter().map(|x| x.d_in).max().unwrap_or(0) as usize;
    let max_out = layers.iter().map(|x| x.d_out).max().unwrap_or(0) as usize;
    let mut net = Net {
        x: Vec::new(),
        xt: Vec::new(),
        w: Vec::new(),
        wt: Vec::new(),
        dy: Vec::new(),
        y: Vec::new(),
        dx: Vec::new(),
        grad: Vec::new(),
        buckets: Vec::new(),
    };
    for (l, layer) in layers.iter().enumerate() {
        let (ni, no) = (layer.d_in as usize, layer.d_out as usize);
        let lu = l as u64;
        let (mut x, mut xt, mut w, mut wt, mut dy) = (vec![], vec![], vec![], vec![], vec![]);
        for dev in 0..local {
            let nb = s.local_batch[dev] as usize;
            let d = u64::from(be.device_index(dev));
            x.push(upload_new(be, dev, dtype, nb * ni, |e| {
                x_entry(d, lu, (e / ni) as u64, (e % ni) as u64)
            })?);
            // Device 0 feeds one wrong input (fault `corrupt`): validation must see it.
            let bump = corrupt && d == 0 && l == 0;
            xt.push(upload_new(be, dev, dtype, ni * nb, |e| {
                let v = x_entry(d, lu, (e % nb) as u64, (e / nb) as u64);
                if bump && e == 0 {
                    v + 1.0
                } else {
                    v
                }
            })?);
            w.push(upload_new(be, dev, dtype, ni * no, |e| {
                ((e % 5) as f64) - 2.0
            })?);
            wt.push(upload_new(be, dev, dtype, no * ni, |e| {
                ((e % 3) as f64) - 1.0
            })?);
            dy.push(upload_new(be, dev, dtype, nb * no, |e| {
                dy_entry(lu, (e / no) as u64, (e % no) as u64)
            })?);
        }
        net.x.push(x);
        net.xt.push(xt);
        net.w.push(w);
        net.wt.push(wt);
        net.dy.push(dy);
    }
    for dev in 0..local {
        let nb = s.local_batch[dev] as usize;
        net.y.push(be.alloc(dev, dtype, nb * max_out)?);
        net.dx.push(be.alloc(dev, dtype, nb * max_in)?);
    }
    for layer in layers {
        let mut per_dev = Vec::new();
        for dev in 0..local {
            per_dev.push(be.alloc(dev, dtype, layer.params() as usize)?);
        }
        net.grad.push(per_dev);
    }
    for &len in &s.plan.lens {
        let mut per_dev = Vec::new();
        for dev in 0..local {
            per_dev.push(be.alloc(dev, dtype, len)?);
        }
        net.buckets.push(Some(per_dev));
    }
    Ok(net)
}

/// Elements of every layer's gradient that differ from the exact reduced gradient, after
/// filling the buckets with NaN and running one step in `mode` (so elements the reduction or
/// the copies never wrote count too).
fn check<B: Backend>(
    be: &mut B,
    s: &Shapes,
    net: &mut Net<B::Buf>,
    mode: Mode,
    table: &[[f64; Q]; P],
    dtype: Dtype,
    tolerance: f64,
) -> BackendResult<u64> {
    for (k, &len) in s.plan.lens.iter().enumerate() {
        let poison = HostBuf::from_fn(dtype, len, |_| f64::NAN)?;
        for (dev, b) in net.buckets[k]
            .as_mut()
            .expect("idle")
            .iter_mut()
            .enumerate()
        {
            be.upload(dev, b, &poison)?;
        }
    }
    step(be, s, net, mode)?;
    be.synchronize()?;
    let n = s.call.devices;
    let avg = s.call.op == Some(ReduceOp::Avg);
    // The expected value in the dtype's arithmetic: an exact integer sum, divided by n in
    // the same precision the backend divides in.
    let want = |sum: f64| -> f64 {
        if !avg {
            return sum;
        }
        if tolerance > 0.0 {
            return sum / f64::from(n);
        }
        match dtype {
            Dtype::F32 => f64::from(sum as f32 / n as f32),
            _ => sum / f64::from(n),
        }
    };
    let mut wrong = 0;
    for dev in 0..s.local_batch.len() {
        for (l, layer) in s.model.layers.iter().enumerate() {
            // The gradient after the copy-back: checks the reduction and the copies both.
            let host = be.download(dev, &net.grad[l][dev])?;
            let no = layer.d_out as usize;
            for e in 0..layer.params() as usize {
                let (i, j) = (e / no, e % no);
                let v = want(table[(i + l) % P][(j + 2 * l) % Q]);
                let got = host.get(e);
                // NaN (an element never written) is wrong either way.
                let ok = if tolerance > 0.0 {
                    (got - v).abs() <= tolerance * v.abs().max(1.0)
                } else {
                    got == v
                };
                if !ok {
                    wrong += 1;
                }
            }
        }
    }
    Ok(wrong)
}

fn time_modes<B: Backend, C: HostComm>(
    be: &mut B,
    comm: &C,
    s: &Shapes,
    net: &mut Net<B::Buf>,
    settings: &RunSettings,
) -> BackendResult<Vec<RankSamples>> {
    let timed = |be: &mut B, net: &mut Net<B::Buf>, mode: Mode| -> BackendResult<f64> {
        comm.barrier();
        let a = be.mark()?;
        step(be, s, net, mode)?;
        let b = be.mark()?;
        be.synchronize()?;
        be.elapsed_s(a, b)
    };
    // One untimed step of each kind first (lazy connections, page faults), then a probe.
    for m in MODES {
        timed(be, net, m)?;
    }
    let probe = timed(be, net, Mode::AfterBackward)?;
    let est = comm.max_f64(probe);
    let counts = settings.policy.resolve(Timing::Isolated, None, est);
    for i in 0..counts.warmup {
        timed(be, net, MODES[i as usize % MODES.len()])?;
    }
    let mut samples = vec![Vec::with_capacity(counts.iters as usize); MODES.len()];
    for i in 0..counts.iters as usize {
        // Rotate the order so that no kind always follows the same other kind.
        for r in 0..MODES.len() {
            let at = (i + r) % MODES.len();
            samples[at].push(timed(be, net, MODES[at])?);
        }
    }
    Ok(samples
        .into_iter()
        .map(|v| RankSamples {
            counts,
            mean_s: crate::stats::mean(&v).unwrap_or(0.0),
            samples_s: v,
            calibration: None,
            warnings: Vec::new(),
        })
        .collect())
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
    let o = critical_path(
        &t.step.samples_s,
        &t.compute.samples_s,
        t.compute.time_s,
        t.comm.time_s,
        devices,
    );
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
        overlap_efficiency: o.overlap_efficiency,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ddp::{Layer, DEFAULT_FIRST_BUCKET_BYTES};

    #[test]
    fn models_parse() {
        let m = Model::parse("mlp-tiny").unwrap();
        assert_eq!(m.layers.len(), 4);
        assert_eq!(m.params(), 4 * 256 * 256);
        let m = Model::parse("8x4x2+4x3").unwrap();
        assert_eq!(
            m.layers,
            vec![
                Layer { d_in: 8, d_out: 4 },
                Layer { d_in: 8, d_out: 4 },
                Layer { d_in: 4, d_out: 3 }
            ]
        );
        assert_eq!(Model::parse("mlp-1b").unwrap().params(), 16 * 8192 * 8192);
        for bad in ["", "8", "8x0", "8x4x0", "axb", "mlp-huge", "8x4+"] {
            let e = Model::parse(bad).unwrap_err().to_string();
            assert!(e.contains("mlp-tiny") && e.contains("IxO"), "{bad}: {e}");
        }
    }

    fn model(sizes: &[u64]) -> Model {
        Model {
            layers: sizes.iter().map(|&s| Layer { d_in: s, d_out: 1 }).collect(),
        }
    }

    #[test]
    fn buckets_follow_ddp_assignment_by_size() {
        // layers of 10, 20, 30, 40 elements (4 B each); backward order is 3, 2, 1, 0
        let m = model(&[10, 20, 30, 40]);
        // one bucket per layer: every layer reaches the 1-byte cap alone
        let p = BucketPlan::new(&m, 4, 1, 0);
        assert_eq!(p.lens, vec![40, 30, 20, 10]);
        assert_eq!(p.last_layer, vec![3, 2, 1, 0]);
        assert_eq!(p.slot, vec![(3, 0), (2, 0), (1, 0), (0, 0)]);
        // many layers per bucket: close at ≥ 280 B = 70 elements
        let p = BucketPlan::new(&m, 4, 280, 0);
        assert_eq!(p.lens, vec![70, 30]);
        assert_eq!(p.slot, vec![(1, 20), (1, 0), (0, 40), (0, 0)]);
        assert_eq!(p.last_layer, vec![2, 0]);
        // everything in one bucket under a huge cap
        let p = BucketPlan::new(&m, 4, 1 << 30, 0);
        assert_eq!((p.lens.clone(), p.last_layer.clone()), (vec![100], vec![0]));
        // a layer larger than the cap is alone; the cap is a lower bound for closing
        let p = BucketPlan::new(&model(&[5, 100, 5, 5]), 4, 40, 0);
        assert_eq!(p.lens, vec![10, 100, 5]);
        // every element is covered exactly once
        for cap in [1, 40, 100, 400, 1 << 20] {
            let m = model(&[7, 1, 33, 2, 64]);
            let p = BucketPlan::new(&m, 4, cap, cap / 3);
            let total: usize = p.lens.iter().sum();
            assert_eq!(total as u64, m.params());
            for (l, (k, at)) in p.slot.iter().enumerate() {
                assert!(at + m.layers[l].params() as usize <= p.lens[*k]);
            }
        }
    }

    #[test]
    fn the_first_bucket_has_its_own_cap() {
        // layers of 10, 20, 30, 40 elements (4 B each); backward order 3, 2, 1, 0
        let m = model(&[10, 20, 30, 40]);
        // first cap 40 B: layer 3 alone; then ≥ 240 B: layers 2, 1, 0 together
        let p = BucketPlan::new(&m, 4, 240, 40);
        assert_eq!(p.lens, vec![40, 60]);
        assert_eq!(p.last_layer, vec![3, 0]);
        // a first cap larger than the others: the first bucket takes more layers
        let p = BucketPlan::new(&m, 4, 1, 280);
        assert_eq!(p.lens, vec![70, 20, 10]);
        // 0: the first bucket like the others
        assert_eq!(
            BucketPlan::new(&m, 4, 280, 0),
            BucketPlan::new(&m, 4, 280, 280)
        );
        // DDP's defaults on mlp-small (8 × 4 MiB layers in f32): the first bucket closes
        // after one layer (≥ 1 MiB), the next ones every 7 layers (≥ 25 MiB)
        let m = Model::parse("mlp-small").unwrap();
        let p = BucketPlan::new(&m, 4, DEFAULT_BUCKET_BYTES, DEFAULT_FIRST_BUCKET_BYTES);
        assert_eq!(p.lens, vec![1 << 20, 7 << 20]);
        assert_eq!(p.last_layer, vec![7, 0]);
    }

    #[test]
    fn expected_table_matches_a_direct_sum() {
        let batches = [3u64, 5, 4];
        let t = expected_table(&batches);
        // element (i, j) of layer l, computed the slow way
        for (l, i, j) in [(0u64, 0u64, 0u64), (1, 5, 7), (3, 13, 2), (2, 6, 9)] {
            let mut want = 0.0;
            for (d, &nb) in batches.iter().enumerate() {
                for b in 0..nb {
                    want += x_entry(d as u64, l, b, i) * dy_entry(l, b, j);
                }
            }
            let got = t[((i + l) % 7) as usize][((j + 2 * l) % 5) as usize];
            assert_eq!(got, want, "l={l} i={i} j={j}");
        }
        // the gradient is not constant (validation can see misplaced elements)
        let distinct: std::collections::HashSet<i64> =
            t.iter().flatten().map(|v| *v as i64).collect();
        assert!(distinct.len() > 5, "{distinct:?}");
    }

    #[test]
    fn exact_averages_stay_exact_and_others_get_a_bound() {
        assert_eq!(avg_tolerance(0.0, 64), 0.0);
        let t = avg_tolerance(1e-7, 10);
        assert!((t - 6e-6).abs() < 1e-12, "{t}");
        assert_eq!(avg_tolerance(0.5, 1000), 1.0);
    }

    #[test]
    fn batches_split_and_flops() {
        let split: Vec<u64> = (0..3)
            .map(|d| device_batch(10, Scaling::Strong, d, 3))
            .collect();
        assert_eq!(split.iter().sum::<u64>(), 10);
        assert_eq!(device_batch(10, Scaling::Weak, 2, 3), 10);
        assert_eq!(device_batch(2, Scaling::Strong, 0, 4), 0);
        let m = Model::parse("4x3x2").unwrap();
        // layer 0: forward + dW; layer 1: forward + dX + dW; 2·b·12 FLOP each
        assert_eq!(step_flops(&m, 5), 5.0 * 2.0 * 5.0 * 12.0);
    }
}
