//! The six collectives: nccl-tests' size and count semantics, buffer set-up, timing and
//! validation.
//!
//! Sizes mean what they mean in nccl-tests: the buffer for allreduce, broadcast and reduce; the
//! total output for allgather; the total input for reduce_scatter; each rank's total send for
//! alltoall. For the last three the per-rank count is rounded down to a multiple of 16 bytes.

use super::pattern::{count_wrong, Pattern};
use super::Fault;
use super::{agree, CaseError, Measured, RunSettings};
use crate::backend::{
    page_size_bytes, Backend, BackendError, BufferOffset, CollectiveCall, HostBuf,
};
use crate::comm::HostComm;
use crate::measure;
use crate::params::{BufferUse, CaseParams, Workload};

// The size rule is shared vocabulary (plans check sizes with it before anything runs).
pub use crate::params::counts::{counts, CountError, Counts, MAX_COUNT};
use crate::results::schema::BufferPlacement;
use std::collections::BTreeSet;

/// Where one device's input sits and what its output must be.
struct Layout<'a> {
    call: &'a CollectiveCall,
    pattern: &'a Pattern,
    root: u32,
}

impl Layout<'_> {
    /// Fills the input of device `d` into `buf` (its send buffer, or its only buffer in place)
    /// and poisons every element the collective must write.
    fn fill_input(&self, buf: &mut HostBuf, d: u32, corrupt: bool) {
        let c = self.call;
        let p = self.pattern;
        let s = p.sentinel();
        buf.fill_range(0, buf.len(), |_| s);
        let (at, len) = match c.workload {
            Workload::Allgather if c.in_place => (d as usize * c.send_count, c.send_count),
            _ => (0, c.send_count),
        };
        // Broadcast: non-root inputs are their own (wrong) values, so a no-op is caught.
        p.fill_inputs(buf, at, len, d, 0);
        if corrupt && d == 0 && len > 0 {
            buf.set(at, buf.get(at) + 1.0);
        }
    }

    /// Counts wrong elements in device `d`'s result buffer.
    fn check_output(&self, buf: &HostBuf, d: u32, rs_offset: usize, tol: f64) -> u64 {
        let c = self.call;
        let p = self.pattern;
        let n = c.recv_count;
        match c.workload {
            Workload::Allreduce => count_wrong(buf, 0, n, tol, |k| p.reduced(k as u64)),
            Workload::Reduce if d == self.root => {
                count_wrong(buf, 0, n, tol, |k| p.reduced(k as u64))
            }
            Workload::Reduce => 0,
            Workload::Broadcast => count_wrong(buf, 0, n, 0.0, |k| p.input(self.root, k as u64)),
            Workload::Allgather => {
                let base = c.send_count;
                count_wrong(buf, 0, n, 0.0, |k| {
                    p.input((k / base) as u32, (k % base) as u64)
                })
            }
            Workload::ReduceScatter => {
                let at = if c.in_place { rs_offset } else { 0 };
                let first = d as u64 * n as u64;
                count_wrong(buf, at, n, tol, |i| p.reduced(first + i as u64))
            }
            Workload::Alltoall => {
                let base = c.recv_count / c.devices as usize;
                count_wrong(buf, 0, n, 0.0, |k| {
                    let (j, i) = (k / base, k % base);
                    p.input(j as u32, (d as usize * base + i) as u64)
                })
            }
            Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay => {
                unreachable!("not a collective")
            }
        }
    }
}

/// Each local device's buffers (`send` is empty in place).
struct Buffers<Buf> {
    send: Vec<Buf>,
    recv: Vec<Buf>,
}

/// Runs one collective case.
pub fn run<B: Backend, C: HostComm>(
    backend: &mut B,
    comm: &C,
    params: &CaseParams,
    settings: &RunSettings,
    fault: Option<Fault>,
) -> Result<Measured, CaseError> {
    let corrupt = fault == Some(Fault::Corrupt);
    let devices = backend.total_devices();
    let (cnt, call) = collective_call(params, devices)?;
    let pattern = Pattern::new(
        params.dtype,
        if params.workload.has_op() {
            params.op
        } else {
            None
        },
        devices,
    );
    let layout = Layout {
        call: &call,
        pattern: &pattern,
        root: params.root.unwrap_or(0),
    };
    let tol = params
        .op
        .filter(|_| params.workload.has_op())
        .map_or(0.0, |op| backend.reduction_tolerance(params.dtype, op));

    let off = settings.buffer_offset;
    let Buffers { mut send, mut recv } = agree(comm, alloc_buffers(backend, &call, off))?;
    let buffers = placement(backend, comm, off, &send, &recv);
    // Fresh inputs before timing and before every checked iteration.
    agree(comm, layout.reset(backend, corrupt, &mut send, &mut recv))?;
    // `--buffers rotate`: the other sets, each with valid inputs (a reduction over
    // uninitialised memory could meet NaNs or denormals the reused set never has).
    let rotation = (params.buffers == Some(BufferUse::Rotate))
        .then(|| super::rotation::plan(set_bytes(&call), backend.cache_bytes(0)));
    let mut others: Vec<Buffers<B::Buf>> = Vec::new();
    if let Some(r) = rotation {
        let extra = (1..r.sets).try_fold(Vec::new(), |mut v, _| {
            let mut b = alloc_buffers(backend, &call, off)?;
            layout.reset(backend, false, &mut b.send, &mut b.recv)?;
            v.push(b);
            Ok(v)
        });
        others = agree(comm, extra)?;
    }

    let mut cold = fault == Some(Fault::Cold);
    let mut cold_first = move || {
        if std::mem::take(&mut cold) {
            std::thread::sleep(COLD_FIRST_OP);
        }
    };
    let (mode, policy, bytes) = (params.timing, &settings.policy, Some(cnt.bytes));
    // The prepared calls leave the backend's per-call dispatch out of the timed window, as
    // the reference benchmarks have none (docs/benchmarking.md, small isolated sizes): one
    // per set, iteration i on set i mod sets (set 0 is the one validated below).
    let sets = others.len() + 1;
    let mut prepared = Vec::new();
    if let Some(p) = backend.prepare_collective(&call, &send, &mut recv) {
        prepared.push(p);
        for o in others.iter_mut() {
            match backend.prepare_collective(&call, &o.send, &mut o.recv) {
                Some(p) => prepared.push(p),
                None => break,
            }
        }
    }
    let mut next = 0usize;
    let timed = if let ([one], 1) = (&mut prepared[..], sets) {
        // One set (the default): nothing to rotate, nothing added per call on the hot path.
        measure::time_op(backend, comm, mode, policy, bytes, |_| {
            cold_first();
            one.issue()
        })
    } else if prepared.len() == sets {
        measure::time_op(backend, comm, mode, policy, bytes, |_| {
            cold_first();
            let k = next;
            next = (next + 1) % sets;
            prepared[k].issue()
        })
    } else {
        drop(prepared);
        measure::time_op(backend, comm, mode, policy, bytes, |b| {
            cold_first();
            let k = next;
            next = (next + 1) % sets;
            match k.checked_sub(1) {
                None => b.collective(&call, &send, &mut recv),
                Some(j) => {
                    let o = &mut others[j];
                    b.collective(&call, &o.send, &mut o.recv)
                }
            }
        })
    };
    drop(others);
    let samples = agree(comm, timed)?;
    let timing = measure::combine(comm, params.timing, &samples);

    // Validation: fresh inputs, one operation, every output element compared.
    let mut wrong_local = 0u64;
    for _ in 0..settings.check_iters {
        let checked = layout.checked_once(backend, corrupt, tol, &mut send, &mut recv);
        wrong_local += agree(comm, checked)?;
    }
    Ok(Measured {
        timing,
        wrong: comm.sum_u64(wrong_local),
        check_iters: settings.check_iters,
        tolerance: tol,
        bytes: Some(cnt.bytes),
        send_count: Some(cnt.send_count),
        recv_count: Some(cnt.recv_count),
        flops_total: None,
        ddp: None,
        replay: None,
        phases: Vec::new(),
        buffers,
        rotation: rotation.filter(|_| comm.is_root()),
    })
}

/// The counts (nccl-tests' size rule) and the call of a case, after checking its root.
fn collective_call(
    params: &CaseParams,
    devices: u32,
) -> Result<(Counts, CollectiveCall), CaseError> {
    let requested = params.requested_bytes.unwrap_or(0);
    let cnt = match counts(params.workload, requested, params.dtype, devices) {
        Ok(c) => c,
        Err(e @ CountError::TooSmall { .. }) => return Err(CaseError::Skipped(e.to_string())),
        Err(e) => return Err(CaseError::Failed(e.to_string())),
    };
    let root = params.root.unwrap_or(0);
    if params.workload.has_root() && root >= devices {
        return Err(CaseError::Failed(format!(
            "root {root} is not a device: this launch has devices 0..{}",
            devices - 1
        )));
    }
    let call = CollectiveCall {
        workload: params.workload,
        dtype: params.dtype,
        op: params.op,
        root: params.workload.has_root().then_some(root),
        send_count: cnt.send_count as usize,
        recv_count: cnt.recv_count as usize,
        in_place: params.in_place.unwrap_or(false),
        devices,
    };
    Ok((cnt, call))
}

/// One device's buffers of `call`, bytes: send and receive, or the one in place.
fn set_bytes(call: &CollectiveCall) -> u64 {
    let eb = call.dtype.size_bytes();
    if call.in_place {
        call.in_place_count() as u64 * eb
    } else {
        (call.send_count + call.recv_count) as u64 * eb
    }
}

/// One receive (or in-place) buffer per local device, plus send buffers out of place, each
/// at the asked offset within its page.
fn alloc_buffers<B: Backend>(
    backend: &mut B,
    call: &CollectiveCall,
    off: BufferOffset,
) -> Result<Buffers<B::Buf>, BackendError> {
    let dtype = call.dtype;
    let mut send = Vec::new();
    let mut recv = Vec::new();
    for dev in 0..backend.local_devices() {
        if call.in_place {
            let n = call.in_place_count();
            recv.push(backend.alloc_at(dev, dtype, n, off.recv_bytes)?);
        } else {
            send.push(backend.alloc_at(dev, dtype, call.send_count, off.send_bytes)?);
            recv.push(backend.alloc_at(dev, dtype, call.recv_count, off.recv_bytes)?);
        }
    }
    Ok(Buffers { send, recv })
}

impl Layout<'_> {
    /// Uploads fresh inputs to every local device (and poisons the outputs out of place).
    fn reset<B: Backend>(
        &self,
        backend: &mut B,
        corrupt: bool,
        send: &mut [B::Buf],
        recv: &mut [B::Buf],
    ) -> Result<(), BackendError> {
        let call = self.call;
        let dtype = call.dtype;
        for dev in 0..backend.local_devices() {
            let d = backend.device_index(dev);
            if call.in_place {
                let mut h = HostBuf::zeros(dtype, call.in_place_count())?;
                self.fill_input(&mut h, d, corrupt);
                backend.upload(dev, &mut recv[dev], &h)?;
            } else {
                let mut h = HostBuf::zeros(dtype, call.send_count)?;
                self.fill_input(&mut h, d, corrupt);
                backend.upload(dev, &mut send[dev], &h)?;
                let s = self.pattern.sentinel();
                let r = HostBuf::from_fn(dtype, call.recv_count, |_| s)?;
                backend.upload(dev, &mut recv[dev], &r)?;
            }
        }
        Ok(())
    }

    /// One checked operation on fresh inputs: the wrong output elements on this rank.
    fn checked_once<B: Backend>(
        &self,
        backend: &mut B,
        corrupt: bool,
        tol: f64,
        send: &mut [B::Buf],
        recv: &mut [B::Buf],
    ) -> Result<u64, BackendError> {
        self.reset(backend, corrupt, send, recv)?;
        backend.collective(self.call, send, recv)?;
        backend.synchronize()?;
        let mut w = 0;
        for (dev, buf) in recv.iter().enumerate() {
            let d = backend.device_index(dev);
            let host = backend.download(dev, buf)?;
            let off = backend.reduce_scatter_in_place_offset(d, self.call.recv_count);
            w += self.check_output(&host, d, off, tol);
        }
        Ok(w)
    }
}

/// How long the first operation of a case sleeps under `--fault cold`.
pub const COLD_FIRST_OP: std::time::Duration = std::time::Duration::from_millis(1500);

/// Where every rank's buffers sit within their pages (at the root; None where the backend
/// cannot say, e.g. device memory).
pub(super) fn placement<B: Backend, C: HostComm>(
    backend: &B,
    comm: &C,
    off: BufferOffset,
    send: &[B::Buf],
    recv: &[B::Buf],
) -> Option<BufferPlacement> {
    let page = page_size_bytes() as u64;
    // Per local buffer: (role, page offset); u64::MAX where unknown. Role 0 send, 1 receive,
    // 2 receive − send distance.
    let mut mine: Vec<u64> = Vec::new();
    for (i, r) in recv.iter().enumerate() {
        let ro = backend.page_offset_bytes(r);
        mine.extend([1, ro.unwrap_or(u64::MAX)]);
        if let Some(sb) = send.get(i) {
            let so = backend.page_offset_bytes(sb);
            mine.extend([0, so.unwrap_or(u64::MAX)]);
            if let (Some(a), Some(b)) = (so, ro) {
                mine.extend([2, (b + page - a) % page]);
            }
        }
    }
    let bytes: Vec<u8> = mine.iter().flat_map(|x| x.to_le_bytes()).collect();
    let all = comm.gather_bytes(&bytes);
    if !comm.is_root() {
        return None;
    }
    let mut sets = [BTreeSet::new(), BTreeSet::new(), BTreeSet::new()];
    for b in &all {
        let words: Vec<u64> = b
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        for pair in words.chunks_exact(2) {
            if pair[1] == u64::MAX {
                return None;
            }
            sets[pair[0] as usize].insert(pair[1]);
        }
    }
    let [s, r, d] = sets.map(|x| x.into_iter().collect::<Vec<u64>>());
    Some(BufferPlacement {
        page_bytes: page,
        requested_send_offset_bytes: off.send_bytes,
        requested_recv_offset_bytes: off.recv_bytes,
        send_page_offsets_bytes: s,
        recv_page_offsets_bytes: r,
        recv_minus_send_mod_page_bytes: d,
    })
}

/// One collective of a replayed trace, set up as a case of this file is: its call, buffers
/// with exactly predictable inputs, and the same validation (`workload::replay`).
pub(super) struct Single<Buf> {
    call: CollectiveCall,
    pattern: Pattern,
    root: u32,
    tol: f64,
    bufs: Buffers<Buf>,
}

impl<Buf> Single<Buf> {
    /// Allocates and fills the buffers of `call` (its `devices` the group's size, its root
    /// a rank of the group) on the group now selected in the backend.
    pub(super) fn new<B: Backend<Buf = Buf>>(
        backend: &mut B,
        call: CollectiveCall,
        off: BufferOffset,
    ) -> Result<Self, BackendError> {
        let op = call.op.filter(|_| call.workload.has_op());
        let pattern = Pattern::new(call.dtype, op, call.devices);
        let tol = op.map_or(0.0, |o| backend.reduction_tolerance(call.dtype, o));
        let mut bufs = alloc_buffers(backend, &call, off)?;
        let root = call.root.unwrap_or(0);
        let layout = Layout {
            call: &call,
            pattern: &pattern,
            root,
        };
        layout.reset(backend, false, &mut bufs.send, &mut bufs.recv)?;
        Ok(Single {
            call,
            pattern,
            root,
            tol,
            bufs,
        })
    }

    /// The collective once (timed by the caller).
    pub(super) fn issue<B: Backend<Buf = Buf>>(
        &mut self,
        backend: &mut B,
    ) -> Result<(), BackendError> {
        backend.collective(&self.call, &self.bufs.send, &mut self.bufs.recv)?;
        backend.synchronize()
    }

    /// Fresh inputs (device 0's first one off by one under `--fault corrupt`), one
    /// collective, every output element compared: the wrong ones here.
    pub(super) fn check<B: Backend<Buf = Buf>>(
        &mut self,
        backend: &mut B,
        corrupt: bool,
    ) -> Result<u64, BackendError> {
        let layout = Layout {
            call: &self.call,
            pattern: &self.pattern,
            root: self.root,
        };
        layout.checked_once(
            backend,
            corrupt,
            self.tol,
            &mut self.bufs.send,
            &mut self.bufs.recv,
        )
    }
}
