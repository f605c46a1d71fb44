//! A simulated device timeline for the pipelined loop's tests: a stream that runs enqueued
//! operations in order, a launch latency whenever it is fed while idle, events stamped when
//! the stream reaches them, and a host that waits only in `synchronize`.

use crate::backend::{
    Backend, BackendError, BackendResult, CollectiveCall, GemmBatch, HostBuf, Unsupported,
};
use crate::params::{BackendKind, CaseParams, Dtype};
use crate::results::schema::{BackendInfo, DeviceBinding, TimerInfo};

/// Every figure in seconds of a virtual clock.
pub(super) struct SimDevice {
    /// When the host issues its next call.
    host_s: f64,
    /// When the stream has run everything enqueued so far.
    stream_done_s: f64,
    /// From the host's call to the start of an operation the stream was idle for.
    pub launch_s: f64,
    /// One operation's run time on the device.
    pub op_s: f64,
    /// Event timestamps, by mark.
    marks: Vec<f64>,
    pub synchronizations: u32,
    /// What `marks_in_flight` answers (0: a host clock).
    pub in_flight: usize,
}

impl SimDevice {
    pub(super) fn new(launch_s: f64, op_s: f64, in_flight: usize) -> SimDevice {
        SimDevice {
            host_s: 0.0,
            stream_done_s: 0.0,
            launch_s,
            op_s,
            marks: Vec::new(),
            synchronizations: 0,
            in_flight,
        }
    }

    /// Enqueues one operation (the timing loop's `op`).
    pub(super) fn op(&mut self) -> BackendResult<()> {
        let idle = self.stream_done_s <= self.host_s;
        let start = if idle {
            self.host_s + self.launch_s
        } else {
            self.stream_done_s
        };
        self.stream_done_s = start + self.op_s;
        Ok(())
    }
}

fn unused<T>() -> BackendResult<T> {
    Err(BackendError::check("not simulated".to_string()))
}

impl Backend for SimDevice {
    type Buf = HostBuf;
    type Mark = usize;

    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn info(&self) -> BackendInfo {
        BackendInfo {
            kind: BackendKind::Cuda,
            detail: "simulated device timeline (measure tests)".into(),
        }
    }
    fn timer_info(&self) -> TimerInfo {
        TimerInfo {
            source: "simulated events".into(),
            resolution_s: 0.0,
        }
    }
    fn local_devices(&self) -> usize {
        1
    }
    fn device_index(&self, _dev: usize) -> u32 {
        0
    }
    fn total_devices(&self) -> u32 {
        1
    }
    fn device_bindings(&self) -> Vec<DeviceBinding> {
        Vec::new()
    }
    fn supports(&self, _p: &CaseParams) -> Result<(), Unsupported> {
        Ok(())
    }
    fn alloc(&mut self, _dev: usize, _dtype: Dtype, _count: usize) -> BackendResult<HostBuf> {
        unused()
    }
    fn upload(&mut self, _dev: usize, _buf: &mut HostBuf, _host: &HostBuf) -> BackendResult<()> {
        unused()
    }
    fn download(&mut self, _dev: usize, _buf: &HostBuf) -> BackendResult<HostBuf> {
        unused()
    }
    fn collective(
        &mut self,
        _call: &CollectiveCall,
        _send: &[HostBuf],
        _recv: &mut [HostBuf],
    ) -> BackendResult<()> {
        self.op()
    }
    fn gemm(
        &mut self,
        _batches: &[GemmBatch],
        _a: &[HostBuf],
        _b: &[HostBuf],
        _c: &mut [HostBuf],
    ) -> BackendResult<()> {
        unused()
    }
    fn synchronize(&mut self) -> BackendResult<()> {
        self.synchronizations += 1;
        self.host_s = self.host_s.max(self.stream_done_s);
        Ok(())
    }
    fn mark(&mut self) -> BackendResult<usize> {
        // An event is stamped when the stream reaches it: at once on an idle stream.
        self.marks.push(self.stream_done_s.max(self.host_s));
        Ok(self.marks.len() - 1)
    }
    fn marks_in_flight(&self) -> usize {
        self.in_flight
    }
    fn elapsed_s(&mut self, from: usize, to: usize) -> BackendResult<f64> {
        Ok(self.marks[to] - self.marks[from])
    }
}
