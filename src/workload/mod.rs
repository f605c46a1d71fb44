//! Workloads: what one case does on every rank, generic over backend and control plane.
//!
//! Each workload sets up buffers with exactly predictable contents, times its operation with
//! [`crate::measure`], validates results, and returns a [`Measured`] (timing at rank 0 only).
//! Failures are agreed across ranks ([`agree`]) so that one rank's failure fails the case on
//! every rank instead of leaving the others blocked in a collective.

pub mod batch;
pub mod collective;
pub(crate) mod ddp;
pub mod gemm_check;
pub mod matmul;
pub mod pattern;
pub mod replay;
pub mod rotation;

use crate::backend::{Backend, BackendError, DeviceError};
use crate::comm::HostComm;
use crate::params::{CaseParams, Workload};

// Shared vocabulary (specs and plans carry them), defined with the other parameters.
pub use crate::params::{Fault, RunSettings};
use crate::results::schema::{BufferPlacement, PhaseResult, TimingResult};

/// What a case produced. `timing` and `phases` are filled at rank 0 only; everything else is
/// the same on every rank.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub timing: Option<TimingResult>,
    pub wrong: u64,
    pub check_iters: u32,
    pub tolerance: f64,
    pub bytes: Option<u64>,
    pub send_count: Option<u64>,
    pub recv_count: Option<u64>,
    /// FLOP of one operation over all devices (GEMM workloads).
    pub flops_total: Option<f64>,
    pub phases: Vec<PhaseResult>,
    /// ddp_step's figures (rank 0 only).
    pub ddp: Option<crate::results::ddp::DdpMetrics>,
    /// replay's record (rank 0 only).
    pub replay: Option<crate::results::replay::ReplayRecord>,
    /// Where the benchmark buffers sat (collectives on host memory; root only).
    pub buffers: Option<BufferPlacement>,
    /// The buffer sets the timed iterations rotated through (`--buffers rotate`; root only).
    pub rotation: Option<crate::results::schema::BufferRotation>,
}

/// Why a case produced no measurement (the same on every rank).
#[derive(Debug, Clone, PartialEq)]
pub enum CaseError {
    /// Not applicable here (reason).
    Skipped(String),
    /// Tried and failed (reason, naming the ranks).
    Failed(String),
}

/// Makes every rank agree on an outcome: `Ok` only if it is `Ok` on every rank; otherwise a
/// failure whose message (at the root) lists each failing rank's error.
pub fn agree<T, C: HostComm>(comm: &C, local: Result<T, BackendError>) -> Result<T, CaseError> {
    let ok = local.is_ok();
    if comm.all_ok(ok) {
        return local.map_err(|_| unreachable!());
    }
    let msg = match &local {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    };
    let all = comm.gather_bytes(msg.as_bytes());
    let msgs: Vec<String> = all
        .iter()
        .map(|m| String::from_utf8_lossy(m).into_owned())
        .collect();
    Err(CaseError::Failed(group_by_message(&msgs)))
}

/// "rank 1: X; ranks 0,2-3: Y": ranks with the same message share one entry, in rank order
/// of their first appearance; empty messages (ranks without a failure) are left out.
pub fn group_by_message(msgs: &[String]) -> String {
    let mut groups: Vec<(&str, Vec<u32>)> = Vec::new();
    for (r, m) in msgs.iter().enumerate().filter(|(_, m)| !m.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == m.as_str()) {
            Some((_, ranks)) => ranks.push(r as u32),
            None => groups.push((m.as_str(), vec![r as u32])),
        }
    }
    groups
        .iter()
        .map(|(m, ranks)| {
            let list = crate::topology::affinity::format_cpulist(ranks);
            format!(
                "{} {list}: {m}",
                if ranks.len() == 1 { "rank" } else { "ranks" }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs one case on every rank.
pub fn run_case<B: Backend, C: HostComm>(
    backend: &mut B,
    comm: &C,
    params: &CaseParams,
    settings: &RunSettings,
) -> Result<Measured, CaseError> {
    if let Err(why) = backend.supports(params) {
        return Err(CaseError::Skipped(why.to_string()));
    }
    let fault = params.fault.as_deref().and_then(Fault::parse);
    let last = comm.size() - 1;
    match fault {
        Some(Fault::Hang) if comm.rank() == 0 => loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        },
        Some(Fault::HangLast) if comm.rank() == last => loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        },
        Some(Fault::Freeze) if comm.rank() == 0 => loop {
            // SAFETY: raise() only sends a signal to this process; SIGSTOP stops every thread
            // until a SIGCONT (the test's launcher kills the job instead).
            unsafe { libc::raise(libc::SIGSTOP) };
        },
        Some(Fault::Pause(ms)) => {
            std::thread::sleep(std::time::Duration::from_millis(u64::from(ms)));
            comm.barrier();
        }
        Some(Fault::Crash) if comm.rank() == last => {
            eprintln!("scalebench: rank {last}: aborting on purpose (fault=crash)");
            std::process::abort();
        }
        Some(Fault::Fail) => {
            let local = if comm.rank() == last {
                Err(BackendError::Device(DeviceError::Injected))
            } else {
                Ok(())
            };
            agree(comm, local)?;
        }
        _ => {}
    }
    match params.workload {
        Workload::Matmul => matmul::run(backend, comm, params, settings),
        Workload::BatchMatmul => batch::run(backend, comm, params, settings),
        Workload::DdpStep => ddp::run(backend, comm, params, settings, fault),
        Workload::Replay => replay::run(backend, comm, params, settings),
        _ => collective::run(backend, comm, params, settings, fault),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_grouped_by_message() {
        let m = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(group_by_message(&m(&["", "boom"])), "rank 1: boom");
        assert_eq!(
            group_by_message(&m(&["x", "y", "x", "x"])),
            "ranks 0,2-3: x; rank 1: y"
        );
        assert_eq!(group_by_message(&m(&["", ""])), "");
    }
}
