//! batch_matmul's overlapped device step on the backend: checks, sizing of the copy lanes,
//! enqueuing copies and GEMMs on two streams (the order and events of [`super::pipeline`]),
//! and reading the step's timing back.

use super::backend::CudaBackend;
use super::cublas;
use super::events;
use super::memory::{byte_len, DeviceBuf};
use super::pipeline::{self, CopyStep, Lane};
use super::{CudaError, CudaResult};
use crate::backend::{BackendError, BackendResult, GemmBatch, HostBuf, OverlapTiming};
use crate::params::{Dtype, MatmulShape};
use cudarc::driver::sys as dsys;
use std::ffi::c_void;

/// One device's share of an overlapped step: matrices, bytes per matrix, the GEMM's
/// parameters and types, and the element type.
type StepPlan = (usize, usize, cublas::Params, cublas::Types, Dtype);

impl CudaBackend {
    /// The overlapped batch step (see [`super::pipeline`]).
    pub(super) fn overlapped_step(
        &mut self,
        batches: &[GemmBatch],
        inputs: &[HostBuf],
        a: &mut [DeviceBuf],
        c: &mut [DeviceBuf],
    ) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
        let plans = self.plan_overlapped(batches, inputs, a, c)?;
        let r = self.enqueue_overlapped(&plans, inputs, a, c);
        let r = r.and_then(|()| {
            for d in &self.devices {
                if let Some(l) = &d.lane {
                    l.copy.synchronize().map_err(CudaError::driver)?;
                }
                d.stream.synchronize().map_err(CudaError::driver)?;
            }
            Ok(())
        });
        if let Err(e) = r {
            self.drain();
            return Err(e.into());
        }
        self.read_overlapped(&plans)
    }

    /// Checks and sizes everything before anything is enqueued: one square batch, input, A
    /// and C per device, cuBLAS present, each device's copy lane large enough.
    fn plan_overlapped(
        &mut self,
        batches: &[GemmBatch],
        inputs: &[HostBuf],
        a: &[DeviceBuf],
        c: &[DeviceBuf],
    ) -> BackendResult<Vec<StepPlan>> {
        let g = self.devices.len();
        if batches.len() != g || inputs.len() != g || a.len() != g || c.len() != g {
            return Err(BackendError::check(format!(
                "a batch step needs one batch, input, A and C per local device ({g})"
            )));
        }
        let tf32 = self.tf32;
        let mut plans = Vec::with_capacity(g);
        for dev in 0..g {
            let bt = batches[dev];
            let MatmulShape { m, n, k } = bt.shape;
            if m != n || n != k || bt.shared_b {
                return Err(BackendError::Unsupported(format!(
                    "an overlapped batch step squares square matrices, not {}",
                    bt.shape
                )));
            }
            let dtype = inputs[dev].dtype();
            let mat = bt.a_len();
            let elems = bt.count * mat;
            if inputs[dev].len() != elems {
                return Err(BackendError::check(format!(
                    "batch input of {} elements for {} matrices of {mat}",
                    inputs[dev].len(),
                    bt.count
                )));
            }
            self.check_buf("batch A", &a[dev], dev, dtype, elems)?;
            self.check_buf("batch C", &c[dev], dev, dtype, elems)?;
            let mb = byte_len(dtype, mat)?;
            let params = cublas::row_major(&GemmBatch { count: 1, ..bt })?;
            let types = cublas::types(dtype, tf32)?;
            plans.push((bt.count, mb, params, types, dtype));
            if bt.count > 0 {
                let d = &mut self.devices[dev];
                d.blas.as_ref().map_err(|e| e.clone())?;
                let bytes = bt.count * mb;
                match &mut d.lane {
                    Some(l) => l.fit(&d.ctx, bytes, bt.count),
                    None => Lane::new(&d.ctx, bytes, bt.count).map(|l| d.lane = Some(l)),
                }?;
            }
        }
        Ok(plans)
    }

    /// After the step has synchronised: the products, and the timing from the events (the
    /// device with the longest span speaks for the rank).
    fn read_overlapped(
        &self,
        plans: &[StepPlan],
    ) -> BackendResult<(Vec<HostBuf>, Option<OverlapTiming>)> {
        let mut timing: Option<OverlapTiming> = None;
        let mut outputs = Vec::with_capacity(plans.len());
        for (dev, &(count, mb, _, _, dtype)) in plans.iter().enumerate() {
            let mut out = HostBuf::zeros(dtype, count * mb / dtype.size_bytes() as usize)?;
            if count == 0 {
                outputs.push(out);
                continue;
            }
            let lane = self.devices[dev].lane.as_ref().expect("sized above");
            let ev = |j, w| &lane.events[pipeline::event_index(j, w)];
            let span =
                |f: usize, t: usize, j0: usize, j1: usize| events::elapsed_s(ev(j0, f), ev(j1, t));
            let mut ins = Vec::with_capacity(count);
            let mut gemms = Vec::with_capacity(count);
            let mut outs = Vec::with_capacity(count);
            for j in 0..count {
                ins.push(span(0, 1, j, j)?);
                gemms.push(span(2, 3, j, j)?);
                outs.push(span(4, 5, j, j)?);
            }
            let whole = span(0, 5, 0, count - 1)?;
            let t = pipeline::overlap_timing(&ins, &gemms, &outs, whole);
            if timing.is_none_or(|x| t.span_s > x.span_s) {
                timing = Some(t);
            }
            // SAFETY: both copy streams and main streams are synchronised, so the copy engine
            // no longer writes the staging buffer; it holds `count·mb` bytes (sized above) and
            // `out` exactly that many.
            unsafe {
                std::ptr::copy_nonoverlapping(lane.pin_out.ptr(), out.as_mut_ptr(), count * mb);
            }
            outputs.push(out);
        }
        Ok((outputs, timing))
    }

    /// Enqueues the copies and GEMMs of an overlapped step on every device, interleaving
    /// devices so each one gets its first matrix early.
    fn enqueue_overlapped(
        &self,
        plans: &[StepPlan],
        inputs: &[HostBuf],
        a: &[DeviceBuf],
        c: &[DeviceBuf],
    ) -> CudaResult<()> {
        let orders: Vec<Vec<CopyStep>> = plans.iter().map(|p| pipeline::copy_order(p.0)).collect();
        // The copy stream must see the buffers' allocation and earlier writes on the main
        // stream before it touches them.
        for (dev, d) in self.devices.iter().enumerate() {
            if let Some(l) = d.lane.as_ref().filter(|_| plans[dev].0 > 0) {
                d.gate.record(&d.stream).map_err(CudaError::driver)?;
                l.copy.wait(&d.gate).map_err(CudaError::driver)?;
            }
        }
        let longest = orders.iter().map(Vec::len).max().unwrap_or(0);
        for step in 0..longest {
            for (dev, order) in orders.iter().enumerate() {
                match order.get(step) {
                    Some(&CopyStep::In(j)) => self.enqueue_in_and_gemm(
                        dev,
                        j,
                        &plans[dev],
                        &inputs[dev],
                        &a[dev],
                        &c[dev],
                    )?,
                    Some(&CopyStep::Out(j)) => self.enqueue_out(dev, j, plans[dev].1, &c[dev])?,
                    None => {}
                }
            }
        }
        Ok(())
    }

    /// Matrix j of device `dev`: staged into pinned memory, copied to A on the copy stream,
    /// squared into C on the main stream once the copy is done.
    fn enqueue_in_and_gemm(
        &self,
        dev: usize,
        j: usize,
        plan: &StepPlan,
        input: &HostBuf,
        a: &DeviceBuf,
        c: &DeviceBuf,
    ) -> CudaResult<()> {
        let d = &self.devices[dev];
        let l = d.lane.as_ref().expect("sized before enqueuing");
        let &(_, mb, params, types, _) = plan;
        let ev = |j, w| &l.events[pipeline::event_index(j, w)];
        // SAFETY: matrix j of the input holds `mb` bytes at j·mb (lengths checked in
        // `plan_overlapped`); the staging region j is written by the host before its copy is
        // enqueued and never again in this step.
        unsafe {
            std::ptr::copy_nonoverlapping(
                input.as_ptr().add(j * mb),
                l.pin_in.ptr().add(j * mb),
                mb,
            );
        }
        ev(j, 0).record(&l.copy).map_err(CudaError::driver)?;
        d.ctx.bind_to_thread().map_err(CudaError::driver)?;
        // SAFETY: destination: matrix j of A (checked to hold it); source: staging region j
        // of pinned memory that stays allocated until the step synchronises the copy stream.
        unsafe {
            dsys::cuMemcpyHtoDAsync_v2(
                a.ptr() + (j * mb) as u64,
                l.pin_in.ptr().add(j * mb) as *const c_void,
                mb,
                l.copy.cu_stream(),
            )
        }
        .result()
        .map_err(CudaError::driver_call("cuMemcpyHtoDAsync"))?;
        ev(j, 1).record(&l.copy).map_err(CudaError::driver)?;
        d.stream.wait(ev(j, 1)).map_err(CudaError::driver)?;
        ev(j, 2).record(&d.stream).map_err(CudaError::driver)?;
        let blas = d.blas.as_ref().map_err(|e| e.clone())?;
        let at = (j * mb) as u64;
        // SAFETY: A_j and C_j are matrix j of buffers checked to hold the whole batch; C and
        // A are distinct allocations; both live until the step synchronises.
        unsafe { blas.gemm(&params, types, a.ptr() + at, a.ptr() + at, c.ptr() + at)? };
        ev(j, 3).record(&d.stream).map_err(CudaError::driver)?;
        Ok(())
    }

    /// Product j of device `dev` (`mb` bytes): copied from C to pinned memory on the copy
    /// stream once its GEMM is done.
    fn enqueue_out(&self, dev: usize, j: usize, mb: usize, c: &DeviceBuf) -> CudaResult<()> {
        let d = &self.devices[dev];
        let l = d.lane.as_ref().expect("sized before enqueuing");
        let ev = |j, w| &l.events[pipeline::event_index(j, w)];
        l.copy.wait(ev(j, 3)).map_err(CudaError::driver)?;
        ev(j, 4).record(&l.copy).map_err(CudaError::driver)?;
        d.ctx.bind_to_thread().map_err(CudaError::driver)?;
        // SAFETY: source: product j in C (checked); destination: staging region j of pinned
        // memory, reached only through raw pointers until the step has synchronised.
        unsafe {
            dsys::cuMemcpyDtoHAsync_v2(
                l.pin_out.ptr().add(j * mb) as *mut c_void,
                c.ptr() + (j * mb) as u64,
                mb,
                l.copy.cu_stream(),
            )
        }
        .result()
        .map_err(CudaError::driver_call("cuMemcpyDtoHAsync"))?;
        ev(j, 5).record(&l.copy).map_err(CudaError::driver)?;
        Ok(())
    }
}
