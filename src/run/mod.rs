//! Running a launch: `scalebench run` inside an MPI job ([`job`], with the `mpi` feature, taking
//! a typed [`Request`]), the pure step that turns a measurement into a result record
//! ([`record`]), and the live table rank 0 prints ([`console`]).

pub mod ceilings;
pub(crate) mod console;
pub mod error;
#[cfg(feature = "mpi")]
pub mod job;
pub mod link_record;
#[cfg(feature = "mpi")]
pub mod links;
#[cfg(feature = "mpi")]
pub(crate) mod shm;
#[cfg(feature = "mpi")]
pub(crate) mod watchdog;

use crate::params::CaseParams;
use crate::results::schema::{CaseResult, CaseStatus};
use crate::workload::{CaseError, Measured};
use std::path::PathBuf;

/// What `scalebench run` is asked to do, as typed values (built by `cli`).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub cases: Cases,
    /// Output directory (default: results/<UTC timestamp>).
    pub out: Option<PathBuf>,
    /// Watchdog limit per case and for the start-up, seconds (default: see
    /// `job::default_op_timeout_s`).
    pub op_timeout_s: Option<f64>,
    /// No results table.
    pub quiet: bool,
    /// Launch id recorded with the results (set by `sweep`; a plan file carries its own).
    pub launch_id: Option<String>,
    /// Where the network ceilings and error counters are read (`/sys`; tests give trees).
    pub network: crate::topology::ceilings::network::Probe,
}

/// Where a run's cases come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Cases {
    /// The options, expanded once the launch shape is known.
    Options(Box<crate::plan::Request>),
    /// A launch plan file written by `sweep`/`submit` (the options are then ignored).
    PlanFile(PathBuf),
}

/// Builds the record of one case from what the workload returned (at rank 0).
///
/// Derived metrics follow nccl-tests: algbw = bytes / time_s (GB = 1e9 B), busbw = algbw ×
/// the collective's factor for n devices; GEMMs: gflops_total = FLOP / time_s / 1e9 and gflops
/// = gflops_total / devices.
pub fn record(
    params: &CaseParams,
    launch_id: &str,
    started_unix_s: f64,
    finished_unix_s: f64,
    devices: u32,
    ranks: u32,
    outcome: Result<Measured, CaseError>,
) -> CaseResult {
    let mut r = CaseResult {
        id: params.id(),
        launch_id: launch_id.to_string(),
        params: params.clone(),
        status: CaseStatus::Ok,
        message: None,
        started_unix_s,
        finished_unix_s,
        devices,
        ranks,
        element_bytes: params.dtype.size_bytes(),
        bytes: None,
        send_count: None,
        recv_count: None,
        wrong: 0,
        check_iters: 0,
        tolerance: 0.0,
        timing: None,
        algbw_gbps: None,
        busbw_gbps: None,
        busbw_factor: None,
        gflops: None,
        gflops_total: None,
        phases: Vec::new(),
        telemetry: Vec::new(),
        ddp: None,
        replay: None,
        unrepresentative: Vec::new(),
        buffers: None,
        rotation: None,
        nccl: None,
        peak: Vec::new(),
    };
    let m = match outcome {
        Ok(m) => m,
        Err(CaseError::Skipped(why)) => {
            r.status = CaseStatus::Skipped;
            r.message = Some(why);
            return r;
        }
        Err(CaseError::Failed(why)) => {
            r.status = CaseStatus::Failed;
            r.message = Some(why);
            return r;
        }
    };
    r.bytes = m.bytes;
    r.send_count = m.send_count;
    r.recv_count = m.recv_count;
    r.wrong = m.wrong;
    r.check_iters = m.check_iters;
    r.tolerance = m.tolerance;
    r.phases = m.phases;
    r.ddp = m.ddp;
    r.replay = m.replay;
    r.buffers = m.buffers;
    r.rotation = m.rotation;
    if m.wrong > 0 {
        r.status = CaseStatus::Wrong;
        r.message = Some(format!(
            "{} from the exact expected result",
            crate::units::count(m.wrong as usize, "element differs", "elements differ")
        ));
    }
    if let Some(t) = &m.timing {
        if t.time_s > 0.0 {
            derive_rates(&mut r, t.time_s, m.bytes, m.flops_total);
        }
    }
    r.timing = m.timing;
    r
}

/// The derived metrics of [`record`] from a positive time: bandwidths from the bytes moved,
/// GEMM rates from the floating-point operations.
fn derive_rates(r: &mut CaseResult, time_s: f64, bytes: Option<u64>, flops_total: Option<f64>) {
    if let Some(bytes) = bytes {
        let algbw = bytes as f64 / time_s / 1e9;
        let factor = r.params.workload.busbw_factor(r.devices);
        r.algbw_gbps = Some(algbw);
        r.busbw_factor = factor;
        r.busbw_gbps = factor.map(|f| algbw * f);
    }
    if let Some(flops) = flops_total {
        let total = flops / time_s / 1e9;
        r.gflops_total = Some(total);
        r.gflops = Some(total / f64::from(r.devices.max(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{timing_result, IterCounts};
    use crate::params::*;

    fn params(w: Workload) -> CaseParams {
        CaseParams {
            op: Some(ReduceOp::Sum),
            in_place: Some(false),
            requested_bytes: Some(1 << 20),
            ..CaseParams::new(w, 1, 4)
        }
    }

    fn measured(time_s: f64) -> Measured {
        let counts = IterCounts {
            iters: 1,
            warmup: 0,
            batches: 1,
        };
        Measured {
            timing: Some(timing_result(
                Timing::Pipelined,
                counts,
                vec![time_s; 4],
                vec![time_s],
            )),
            bytes: Some(1 << 20),
            ..Measured::default()
        }
    }

    #[test]
    fn bandwidths_follow_nccl_tests() {
        let r = record(
            &params(Workload::Allreduce),
            "l",
            0.0,
            1.0,
            4,
            4,
            Ok(measured(1e-3)),
        );
        let algbw = (1u64 << 20) as f64 / 1e-3 / 1e9;
        assert_eq!(r.algbw_gbps, Some(algbw));
        assert_eq!(r.busbw_factor, Some(1.5));
        assert_eq!(r.busbw_gbps, Some(algbw * 1.5));
        assert_eq!(r.status, CaseStatus::Ok);
        assert_eq!(r.id, params(Workload::Allreduce).id());
    }

    #[test]
    fn gflops_and_statuses() {
        let mut m = measured(0.5);
        m.bytes = None;
        m.flops_total = Some(4e9);
        m.wrong = 3;
        let r = record(&params(Workload::Matmul), "l", 0.0, 1.0, 4, 4, Ok(m));
        assert_eq!(r.gflops_total, Some(8.0));
        assert_eq!(r.gflops, Some(2.0));
        assert_eq!(r.status, CaseStatus::Wrong);
        let r = record(
            &params(Workload::Allreduce),
            "l",
            0.0,
            1.0,
            4,
            4,
            Err(CaseError::Skipped("too small".into())),
        );
        assert_eq!(
            (r.status, r.message.as_deref()),
            (CaseStatus::Skipped, Some("too small"))
        );
        let r = record(
            &params(Workload::Allreduce),
            "l",
            0.0,
            1.0,
            4,
            4,
            Err(CaseError::Failed("rank 1: boom".into())),
        );
        assert_eq!(r.status, CaseStatus::Failed);
        assert!(r.timing.is_none());
    }
}
