//! `batch_matmul`: the cluster pattern of the source documents (file 004). Rank 0 holds a
//! batch of square matrices; it scatters them over the devices (MPI scatter, then a copy to
//! each device), every device squares its share (C_b = A_b · A_b), and the products return to
//! rank 0 (copy back, then MPI gather, or a sum through MPI reduce).
//!
//! Each iteration is timed end to end and per phase (scatter, compute, gather/reduce) on the
//! host clock, after synchronising the devices at each phase boundary. A backend that
//! overlaps host↔device copies with compute ([`Backend::overlaps_batch_transfers`], the CUDA
//! and ROCm backends) gets the copies and GEMMs as one step: the phases are then scatter (MPI only),
//! transfer_compute (copy in, multiply, copy out, overlapped) and gather/reduce (MPI only),
//! plus overlap_hidden, the device time the overlap saved per iteration.

use super::gemm_check;
use super::{agree, CaseError, Measured, RunSettings};
use crate::backend::{Backend, BackendError, GemmBatch, HostBuf, OverlapTiming};
use crate::comm::HostComm;
use crate::measure::{self, IterCounts, RankSamples};
use crate::params::{BufferOffset, CaseParams, Collect, Dtype, MatmulShape, Scaling, Timing};
use crate::results::schema::{Calibration, PhaseResult};
use crate::stats;
use std::time::Instant;

/// Sampled entries checked per matrix.
const CHECK_SAMPLES: usize = 64;

/// Matrices device `d` of `devices` gets from a batch of `total`, and the first one's index.
pub fn share(total: u64, d: u32, devices: u32) -> (u64, u64) {
    let n = u64::from(devices.max(1));
    let first = total * u64::from(d) / n;
    let end = total * (u64::from(d) + 1) / n;
    (end - first, first)
}

/// Matrices in the whole batch.
pub fn total_batch(batch: u32, scaling: Scaling, devices: u32) -> u64 {
    match scaling {
        Scaling::Weak => u64::from(batch) * u64::from(devices),
        Scaling::Strong => u64::from(batch),
    }
}

struct Phases {
    scatter: Vec<f64>,
    compute: Vec<f64>,
    collect: Vec<f64>,
    total: Vec<f64>,
    /// Overlapped steps only: seconds the overlap saved ([`OverlapTiming::hidden_s`]).
    hidden: Vec<f64>,
}

pub fn run<B: Backend, C: HostComm>(
    backend: &mut B,
    comm: &C,
    params: &CaseParams,
    settings: &RunSettings,
) -> Result<Measured, CaseError> {
    let layout = Layout::new(backend, comm, params)?;
    let off = settings.buffer_offset;
    let mut st = agree(comm, layout.buffers(backend, comm, off))?;
    // Each device's A sits at the send offset, its C at the receive offset.
    let buffers = super::collective::placement(backend, comm, off, &st.a, &st.c);
    let (counts, calibration, ph) = time_steps(&mut st, backend, comm, params, settings)?;
    let timing = measure::combine(
        comm,
        params.timing,
        &RankSamples {
            counts,
            mean_s: stats::mean(&ph.total).unwrap_or(0.0),
            samples_s: ph.total.clone(),
            calibration: Some(calibration),
            warnings: measure::timing_warnings(Timing::Isolated, counts),
        },
    );
    let phases = phase_results(
        comm,
        backend.overlaps_batch_transfers(),
        layout.collect,
        &ph,
    );
    let (wrong, tolerance) = validate(&mut st, &layout, backend, comm, settings)?;
    Ok(Measured {
        timing,
        wrong: comm.sum_u64(wrong),
        check_iters: settings.check_iters,
        tolerance,
        flops_total: Some(layout.total as f64 * MatmulShape::square(layout.dim).flops()),
        phases,
        buffers,
        rotation: None,
        ..Measured::default()
    })
}

/// The case's batch and how it is spread over ranks and devices.
struct Layout {
    shape: MatmulShape,
    /// Rows (= columns) of each matrix.
    dim: u64,
    /// Elements of one matrix.
    mat: usize,
    dtype: Dtype,
    collect: Collect,
    /// Matrices in the whole batch.
    total: u64,
    /// Elements each rank receives: its devices' shares, back to back.
    rank_counts: Vec<usize>,
    /// (matrices, first index) of each local device's share.
    mine: Vec<(u64, u64)>,
    batches: Vec<GemmBatch>,
}

impl Layout {
    /// Checks the shape and batch size and splits the batch (the same on every rank).
    fn new<B: Backend, C: HostComm>(
        backend: &B,
        comm: &C,
        params: &CaseParams,
    ) -> Result<Layout, CaseError> {
        let shape = params
            .shape
            .ok_or_else(|| CaseError::Failed("batch_matmul case without a shape".into()))?;
        if shape.m != shape.n || shape.n != shape.k {
            return Err(CaseError::Failed(format!(
                "batch_matmul squares each matrix, so it needs a square shape, not {shape}: give --dims N"
            )));
        }
        let dim = shape.m;
        let mat = (dim * dim) as usize;
        let scaling = params.scaling.unwrap_or(Scaling::Weak);
        let devices = backend.total_devices();
        let ranks = comm.size();
        let per_rank = devices / ranks;
        let total = total_batch(params.batch.unwrap_or(1), scaling, devices);
        if total == 0 {
            return Err(CaseError::Failed(
                "batch_matmul needs at least one matrix: give --batch ≥ 1".into(),
            ));
        }
        let rank_counts: Vec<usize> = (0..ranks)
            .map(|r| {
                (r * per_rank..(r + 1) * per_rank)
                    .map(|d| share(total, d, devices).0 as usize * mat)
                    .sum()
            })
            .collect();
        let mine: Vec<(u64, u64)> = (0..backend.local_devices())
            .map(|dev| share(total, backend.device_index(dev), devices))
            .collect();
        let batches: Vec<GemmBatch> = mine
            .iter()
            .map(|(c, _)| GemmBatch {
                shape,
                count: *c as usize,
                shared_b: false,
            })
            .collect();
        Ok(Layout {
            shape,
            dim,
            mat,
            dtype: params.dtype,
            collect: params.collect.unwrap_or(Collect::Gather),
            total,
            rank_counts,
            mine,
            batches,
        })
    }

    /// This rank's buffers: the whole batch and the output at the root, the staged share
    /// (page-aligned) and each device's A (at the send offset) and C (the receive offset).
    fn buffers<'p, B: Backend, C: HostComm>(
        &'p self,
        backend: &mut B,
        comm: &C,
        off: BufferOffset,
    ) -> Result<State<'p, B::Buf>, BackendError> {
        let (dtype, mat, total) = (self.dtype, self.mat, self.total);
        let root = comm.is_root();
        let all = if root {
            // Timed on dense entries; `validate` loads the exact pattern (gemm_check's note).
            let mut h = HostBuf::zeros(dtype, total as usize * mat)?;
            gemm_check::fill_dense(&mut h, 0, 0x5CA1_AB1E, total as usize * mat);
            Some(h)
        } else {
            None
        };
        let out = if root {
            let len = match self.collect {
                Collect::Gather => total as usize * mat,
                Collect::Reduce => mat,
            };
            Some(HostBuf::zeros(dtype, len)?)
        } else {
            None
        };
        let staged = HostBuf::zeros(dtype, self.rank_counts[comm.rank() as usize])?;
        let mut a = Vec::new();
        let mut c = Vec::new();
        for (dev, (cnt, _)) in self.mine.iter().enumerate() {
            a.push(backend.alloc_at(dev, dtype, *cnt as usize * mat, off.send_bytes)?);
            c.push(backend.alloc_at(dev, dtype, *cnt as usize * mat, off.recv_bytes)?);
        }
        let local_sum = HostBuf::zeros(dtype, mat)?;
        Ok(State {
            all,
            out,
            staged,
            a,
            c,
            local_sum,
            mine: &self.mine,
            batches: &self.batches,
            rank_counts: &self.rank_counts,
            mat,
            collect: self.collect,
            hidden_s: None,
        })
    }
}

/// Calibrates (a cold step, then probes; the counts come from the fastest), warms up and
/// times the steps, each phase separately.
fn time_steps<B: Backend, C: HostComm>(
    st: &mut State<'_, B::Buf>,
    backend: &mut B,
    comm: &C,
    params: &CaseParams,
    settings: &RunSettings,
) -> Result<(IterCounts, Calibration, Phases), CaseError> {
    let (mut counts, calibration) =
        measure::calibrate(&settings.policy, Timing::Isolated, None, || {
            comm.barrier();
            let (s, k, g) = agree(comm, st.step(backend, comm))?;
            Ok(comm.max_f64(s + k + g))
        })?;
    counts.batches = counts.iters;
    for _ in 0..counts.warmup {
        agree(comm, st.step(backend, comm))?;
    }
    let mut ph = Phases {
        scatter: Vec::new(),
        compute: Vec::new(),
        collect: Vec::new(),
        total: Vec::new(),
        hidden: Vec::new(),
    };
    for _ in 0..counts.iters {
        if params.timing == Timing::Isolated {
            comm.barrier();
        }
        let (s, k, g) = agree(comm, st.step(backend, comm))?;
        ph.scatter.push(s);
        ph.compute.push(k);
        ph.collect.push(g);
        ph.total.push(s + k + g);
        if let Some(h) = st.hidden_s {
            ph.hidden.push(h);
        }
    }
    Ok((counts, calibration, ph))
}

/// Each phase's statistics over the slowest rank's samples (at the root; empty elsewhere).
fn phase_results<C: HostComm>(
    comm: &C,
    overlapped: bool,
    collect: Collect,
    ph: &Phases,
) -> Vec<PhaseResult> {
    let collect_name = match collect {
        Collect::Gather => "gather",
        Collect::Reduce => "reduce",
    };
    let mut phases = Vec::new();
    let mut named = vec![
        ("scatter", &ph.scatter),
        (
            if overlapped {
                "transfer_compute"
            } else {
                "compute"
            },
            &ph.compute,
        ),
        (collect_name, &ph.collect),
    ];
    if overlapped {
        named.push(("overlap_hidden", &ph.hidden));
    }
    for (name, xs) in named {
        let mut worst = xs.clone();
        comm.max_f64_slice(&mut worst);
        let means = comm.gather_f64(stats::mean(xs).unwrap_or(0.0));
        if let (true, Some(summary)) = (comm.is_root(), stats::summarize(&worst)) {
            phases.push(PhaseResult {
                name: name.to_string(),
                time_s: stats::mean(&means).unwrap_or(0.0),
                stats_s: summary,
                samples_s: Vec::new(),
            });
        }
    }
    phases
}

/// Validation at the root on the products that came back: (wrong entries on this rank,
/// tolerance).
fn validate<B: Backend, C: HostComm>(
    st: &mut State<'_, B::Buf>,
    layout: &Layout,
    backend: &mut B,
    comm: &C,
    settings: &RunSettings,
) -> Result<(u64, f64), CaseError> {
    let (dtype, dim, total, collect) = (layout.dtype, layout.dim, layout.total, layout.collect);
    let acc = backend.gemm_accumulator(dtype);
    let tol = match collect {
        Collect::Gather => gemm_check::tolerance_stored(acc, dtype, dim),
        Collect::Reduce => gemm_check::tolerance_stored(acc, dtype, dim * total),
    };
    let mut wrong = 0;
    if let Some(all) = st.all.as_mut().filter(|_| settings.check_iters > 0) {
        for b in 0..total {
            gemm_check::fill_a(all, b as usize * layout.mat, b, 0, dim, dim);
        }
    }
    for _ in 0..settings.check_iters {
        if let Some(o) = st.out.as_mut() {
            let len = o.len();
            o.fill_range(0, len, |_| f64::NAN);
        }
        agree(comm, st.step(backend, comm))?;
        if let Some(o) = st.out.as_ref() {
            wrong += check(o, collect, total, layout.shape, tol);
        }
    }
    Ok((wrong, tol))
}

/// Buffers and layout of one batch_matmul case.
struct State<'p, Buf> {
    /// The whole batch (root only).
    all: Option<HostBuf>,
    /// Products or their sum (root only).
    out: Option<HostBuf>,
    /// This rank's share, in and out.
    staged: HostBuf,
    a: Vec<Buf>,
    c: Vec<Buf>,
    local_sum: HostBuf,
    mine: &'p [(u64, u64)],
    batches: &'p [GemmBatch],
    rank_counts: &'p [usize],
    mat: usize,
    collect: Collect,
    /// The last step's [`OverlapTiming::hidden_s`] (overlapped steps only).
    hidden_s: Option<f64>,
}

impl<Buf> State<'_, Buf> {
    /// One iteration; returns (scatter, compute, collect) seconds on this rank.
    fn step<B: Backend<Buf = Buf>, C: HostComm>(
        &mut self,
        backend: &mut B,
        comm: &C,
    ) -> Result<(f64, f64, f64), BackendError> {
        let mat = self.mat;
        let dtype = self.staged.dtype();
        let t0 = Instant::now();
        comm.scatterv(self.all.as_ref(), self.rank_counts, &mut self.staged);
        let overlapped = backend.overlaps_batch_transfers();
        let t_scattered = Instant::now();
        let mut at = 0;
        let mut parts = Vec::with_capacity(self.mine.len());
        for (dev, (cnt, _)) in self.mine.iter().enumerate() {
            let len = *cnt as usize * mat;
            let mut part = HostBuf::zeros(dtype, len)?;
            part.copy_from(0, &self.staged, at, len);
            if overlapped {
                parts.push(part);
            } else {
                backend.upload(dev, &mut self.a[dev], &part)?;
            }
            at += len;
        }
        let (t1, products) = if overlapped {
            let (products, timing) =
                backend.square_batch(self.batches, &parts, &mut self.a, &mut self.c)?;
            self.hidden_s = Some(timing.as_ref().map_or(0.0, OverlapTiming::hidden_s));
            (t_scattered, Some(products))
        } else {
            backend.synchronize()?;
            let t1 = Instant::now();
            backend.gemm(self.batches, &self.a, &self.a, &mut self.c)?;
            backend.synchronize()?;
            (t1, None)
        };
        let t2 = Instant::now();
        let mut at = 0;
        if self.collect == Collect::Reduce {
            self.local_sum.fill_range(0, mat, |_| 0.0);
        }
        for (dev, (cnt, _)) in self.mine.iter().enumerate() {
            let downloaded;
            let host = match &products {
                Some(p) => &p[dev],
                None => {
                    downloaded = backend.download(dev, &self.c[dev])?;
                    &downloaded
                }
            };
            let len = *cnt as usize * mat;
            match self.collect {
                Collect::Gather => self.staged.copy_from(at, host, 0, len),
                Collect::Reduce => {
                    for m in 0..*cnt as usize {
                        for x in 0..mat {
                            self.local_sum
                                .set(x, self.local_sum.get(x) + host.get(m * mat + x));
                        }
                    }
                }
            }
            at += len;
        }
        match self.collect {
            Collect::Gather => comm.gatherv(&self.staged, self.rank_counts, self.out.as_mut()),
            Collect::Reduce => comm.reduce_sum(&self.local_sum, self.out.as_mut()),
        }
        let t3 = Instant::now();
        Ok((
            (t1 - t0).as_secs_f64(),
            (t2 - t1).as_secs_f64(),
            (t3 - t2).as_secs_f64(),
        ))
    }
}

/// Counts wrong sampled entries of the returned products (gather) or their sum (reduce).
fn check(out: &HostBuf, collect: Collect, total: u64, shape: MatmulShape, tol: f64) -> u64 {
    let mat = (shape.m * shape.n) as usize;
    match collect {
        Collect::Gather => (0..total)
            .map(|b| {
                gemm_check::count_wrong(
                    out,
                    b as usize * mat,
                    shape,
                    CHECK_SAMPLES,
                    tol,
                    |i, k| gemm_check::a_entry(b, i, k),
                    |k, j| gemm_check::a_entry(b, k, j),
                )
            })
            .sum(),
        Collect::Reduce => {
            // Σ_b A_b·A_b = Σ_b Σ_k a_b(i,k)·a_b(k,j): check as one product with a k-axis
            // that runs over (b, k) pairs.
            let k = shape.k;
            let wide = MatmulShape {
                k: k * total,
                ..shape
            };
            gemm_check::count_wrong(
                out,
                0,
                wide,
                CHECK_SAMPLES,
                tol,
                |i, bk| gemm_check::a_entry(bk / k, i, bk % k),
                |bk, j| gemm_check::a_entry(bk / k, bk % k, j),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_the_batch() {
        for (total, n) in [(16u64, 4u32), (10, 3), (2, 5), (7, 1)] {
            let parts: Vec<_> = (0..n).map(|d| share(total, d, n)).collect();
            assert_eq!(parts.iter().map(|p| p.0).sum::<u64>(), total);
            let mut next = 0;
            for (cnt, first) in parts {
                assert_eq!(first, next);
                next += cnt;
            }
        }
        assert_eq!(total_batch(4, Scaling::Weak, 3), 12);
        assert_eq!(total_batch(4, Scaling::Strong, 3), 4);
    }

    #[test]
    fn reduce_check_accepts_the_true_sum_only() {
        let shape = MatmulShape::square(5);
        let total = 3;
        let mut sum = HostBuf::zeros(crate::params::Dtype::F64, 25).unwrap();
        for b in 0..total {
            for i in 0..5 {
                for j in 0..5 {
                    let v: f64 = (0..5)
                        .map(|k| gemm_check::a_entry(b, i, k) * gemm_check::a_entry(b, k, j))
                        .sum();
                    let x = (i * 5 + j) as usize;
                    sum.set(x, sum.get(x) + v);
                }
            }
        }
        assert_eq!(check(&sum, Collect::Reduce, total, shape, 0.0), 0);
        sum.set(24, sum.get(24) + 1.0);
        assert!(check(&sum, Collect::Reduce, total, shape, 0.0) > 0);
    }
}
