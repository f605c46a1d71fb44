//! One ddp_step on a backend: the network's buffers set up, a step in each mode (buckets
//! started as their last gradient is copied, or all at the end), the check of the averaged
//! gradients, and the timed rounds in alternating mode order.

use super::RunSettings;
use super::{dy_entry, x_entry, BucketPlan, Model, P, Q};
use crate::backend::{Backend, BackendResult, CollectiveCall, GemmBatch, HostBuf};
use crate::comm::HostComm;
use crate::measure::RankSamples;
use crate::params::{Dtype, MatmulShape, ReduceOp, Timing};

/// What one timed run of the step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
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
pub(super) struct Net<Buf> {
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
pub(super) struct Shapes {
    pub(super) model: Model,
    pub(super) plan: BucketPlan,
    /// Samples of each local device.
    pub(super) local_batch: Vec<u64>,
    pub(super) call: CollectiveCall,
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

pub(super) fn setup<B: Backend>(
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
pub(super) fn check<B: Backend>(
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

pub(super) fn time_modes<B: Backend, C: HostComm>(
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
