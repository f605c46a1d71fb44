//! `matmul`: one GEMM per device (weak scaling: the given shape on every device; strong
//! scaling: the shape's rows split over the devices). GFLOP/s = 2·m·n·k / time.

use super::gemm_check;
use super::{agree, CaseError, Measured, RunSettings};
use crate::backend::{Backend, BackendError, GemmBatch, HostBuf};
use crate::comm::HostComm;
use crate::measure;
use crate::params::{BufferOffset, CaseParams, Dtype, MatmulShape, Scaling};

/// Sampled entries checked per device and iteration.
pub const CHECK_SAMPLES: usize = 256;

/// The shape device `d` of `devices` multiplies, and its first global row.
pub fn device_shape(
    total: MatmulShape,
    scaling: Scaling,
    d: u32,
    devices: u32,
) -> (MatmulShape, u64) {
    match scaling {
        Scaling::Weak => (total, 0),
        Scaling::Strong => {
            let n = u64::from(devices.max(1));
            let r0 = total.m * u64::from(d) / n;
            let r1 = total.m * (u64::from(d) + 1) / n;
            (
                MatmulShape {
                    m: r1 - r0,
                    ..total
                },
                r0,
            )
        }
    }
}

/// FLOP of one operation over all devices.
pub fn total_flops(total: MatmulShape, scaling: Scaling, devices: u32) -> f64 {
    match scaling {
        Scaling::Weak => total.flops() * f64::from(devices),
        Scaling::Strong => total.flops(),
    }
}

/// Each local device's A, B and C.
struct Operands<Buf> {
    a: Vec<Buf>,
    b: Vec<Buf>,
    c: Vec<Buf>,
}

/// The seed of the operands' entries (each entry is a function of it and its indices).
const SEED: u64 = 1;

pub fn run<B: Backend, C: HostComm>(
    backend: &mut B,
    comm: &C,
    params: &CaseParams,
    settings: &RunSettings,
) -> Result<Measured, CaseError> {
    let total = params
        .shape
        .ok_or_else(|| CaseError::Failed("matmul case without a shape".into()))?;
    let scaling = params.scaling.unwrap_or(Scaling::Weak);
    let devices = backend.total_devices();
    let dtype = params.dtype;
    let plan: Vec<(GemmBatch, u64)> = (0..backend.local_devices())
        .map(|dev| {
            let (shape, row0) = device_shape(total, scaling, backend.device_index(dev), devices);
            let count = usize::from(shape.m > 0);
            (
                GemmBatch {
                    shape,
                    count,
                    shared_b: false,
                },
                row0,
            )
        })
        .collect();
    let batches: Vec<GemmBatch> = plan.iter().map(|(b, _)| *b).collect();
    let off = settings.buffer_offset;
    let mut ops = agree(comm, operands(backend, &plan, dtype, off))?;
    // The operands A (and B) sit at the send offset, C at the receive offset.
    let buffers = super::collective::placement(backend, comm, off, &ops.a, &ops.c);

    let timed = measure::time_op(backend, comm, params.timing, &settings.policy, None, |be| {
        be.gemm(&batches, &ops.a, &ops.b, &mut ops.c)
    });
    let samples = agree(comm, timed)?;
    let timing = measure::combine(comm, params.timing, &samples);

    let tol = gemm_check::tolerance_stored(backend.gemm_accumulator(dtype), dtype, total.k);
    let mut wrong_local = 0;
    if settings.check_iters > 0 {
        // Timed on dense operands; checked on the exact pattern (gemm_check's module note).
        agree(comm, upload_pattern(backend, &plan, dtype, &mut ops))?;
    }
    for _ in 0..settings.check_iters {
        let checked = checked_once(backend, &plan, &batches, &mut ops, dtype, tol);
        wrong_local += agree(comm, checked)?;
    }
    Ok(Measured {
        timing,
        wrong: comm.sum_u64(wrong_local),
        check_iters: settings.check_iters,
        tolerance: tol,
        flops_total: Some(total_flops(total, scaling, devices)),
        buffers,
        rotation: None,
        ..Measured::default()
    })
}

/// Each local device's A and B (uploaded with timing entries, at the send offset) and C (at
/// the receive offset), for its (batch, first row) in `plan`.
fn operands<B: Backend>(
    backend: &mut B,
    plan: &[(GemmBatch, u64)],
    dtype: Dtype,
    off: BufferOffset,
) -> Result<Operands<B::Buf>, BackendError> {
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for (dev, (g, row0)) in plan.iter().enumerate() {
        let mut ha = HostBuf::zeros(dtype, g.a_len())?;
        // Rows of A differ between devices (strong scaling splits them): seed by the first row.
        gemm_check::fill_dense(&mut ha, 0, SEED ^ (row0 << 1), g.a_len());
        let mut hb = HostBuf::zeros(dtype, g.b_len())?;
        gemm_check::fill_dense(&mut hb, 0, !SEED, g.b_len());
        let mut da = backend.alloc_at(dev, dtype, g.a_len(), off.send_bytes)?;
        backend.upload(dev, &mut da, &ha)?;
        let mut db = backend.alloc_at(dev, dtype, g.b_len(), off.send_bytes)?;
        backend.upload(dev, &mut db, &hb)?;
        a.push(da);
        b.push(db);
        c.push(backend.alloc_at(dev, dtype, g.c_len(), off.recv_bytes)?);
    }
    Ok(Operands { a, b, c })
}

/// Replaces each device's A and B by the exactly checkable pattern.
fn upload_pattern<B: Backend>(
    backend: &mut B,
    plan: &[(GemmBatch, u64)],
    dtype: Dtype,
    ops: &mut Operands<B::Buf>,
) -> Result<(), BackendError> {
    for (dev, (g, row0)) in plan.iter().enumerate() {
        let MatmulShape { m, n, k } = g.shape;
        let mut ha = HostBuf::zeros(dtype, g.a_len())?;
        gemm_check::fill_a(&mut ha, 0, SEED, *row0, m, k);
        backend.upload(dev, &mut ops.a[dev], &ha)?;
        let mut hb = HostBuf::zeros(dtype, g.b_len())?;
        gemm_check::fill_b(&mut hb, 0, SEED, k, n);
        backend.upload(dev, &mut ops.b[dev], &hb)?;
    }
    Ok(())
}

/// One checked GEMM into poisoned outputs: the wrong sampled entries on this rank.
fn checked_once<B: Backend>(
    backend: &mut B,
    plan: &[(GemmBatch, u64)],
    batches: &[GemmBatch],
    ops: &mut Operands<B::Buf>,
    dtype: Dtype,
    tol: f64,
) -> Result<u64, BackendError> {
    let mut w = 0;
    for (dev, (g, _)) in plan.iter().enumerate() {
        let poison = HostBuf::from_fn(dtype, g.c_len(), |_| f64::NAN)?;
        backend.upload(dev, &mut ops.c[dev], &poison)?;
    }
    backend.gemm(batches, &ops.a, &ops.b, &mut ops.c)?;
    backend.synchronize()?;
    for (dev, (g, row0)) in plan.iter().enumerate() {
        let host = backend.download(dev, &ops.c[dev])?;
        w += gemm_check::count_wrong(
            &host,
            0,
            g.shape,
            CHECK_SAMPLES,
            tol,
            |i, k| gemm_check::a_entry(SEED, row0 + i, k),
            |k, j| gemm_check::b_entry(SEED, k, j),
        );
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strong_scaling_splits_rows_exactly() {
        let total = MatmulShape { m: 10, n: 4, k: 3 };
        let parts: Vec<_> = (0..3)
            .map(|d| device_shape(total, Scaling::Strong, d, 3))
            .collect();
        let rows: u64 = parts.iter().map(|(s, _)| s.m).sum();
        assert_eq!(rows, 10);
        assert_eq!(
            parts.iter().map(|(_, r)| *r).collect::<Vec<_>>(),
            vec![0, 3, 6]
        );
        assert_eq!(total_flops(total, Scaling::Strong, 3), 240.0);
        assert_eq!(total_flops(total, Scaling::Weak, 3), 720.0);
        // more devices than rows: some devices get nothing
        let (s, _) = device_shape(MatmulShape::square(2), Scaling::Strong, 0, 4);
        assert_eq!(s.m, 0);
    }
}
