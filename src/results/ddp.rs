//! The `ddp_step` part of a case record: where a data-parallel training step's time goes.
//!
//! Definitions (every time is the mean over ranks of each rank's mean over timed steps, as
//! `TimingResult::time_s`; the per-step samples are kept in the case's `timing` and `phases`):
//!
//! - `step_s`: one step with overlap: forward, backward with each full bucket's all-reduce
//!   started as soon as its gradients are in it, then waiting for every bucket.
//! - `step_no_overlap_s`: the same step with every all-reduce started after backward (the
//!   reference without overlap).
//! - `compute_s`: the same step's forward, backward and bucket copies with no communication.
//! - `comm_s`: the buckets' all-reduces alone, started back to back and then awaited.
//! - `exposed_comm_s = max(0, step_s − compute_s)`: communication time the step did not hide.
//! - `overlap_efficiency = clamp(1 − exposed_comm_s / comm_s, 0, 1)`: the share of the
//!   communication hidden behind backward compute (1 = all hidden, 0 = none). Absent with one
//!   device (nothing to hide) or when `comm_s` is 0.
//! - `samples_per_s = global_batch / step_s`.

use serde::{Deserialize, Serialize};

/// A ddp_step case's headline figures (rank 0's record; see the module docs for definitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DdpMetrics {
    /// Step with overlap, seconds.
    pub step_s: f64,
    /// Step with all-reduces after backward, seconds.
    pub step_no_overlap_s: f64,
    /// Forward + backward + bucket copies without communication, seconds.
    pub compute_s: f64,
    /// All buckets' all-reduces alone, seconds.
    pub comm_s: f64,
    /// max(0, step_s − compute_s), seconds.
    pub exposed_comm_s: f64,
    /// clamp(1 − exposed_comm_s / comm_s, 0, 1); absent with one device or comm_s = 0.
    #[serde(default)]
    pub overlap_efficiency: Option<f64>,
    /// Samples of the global batch per second: global_batch / step_s.
    pub samples_per_s: f64,
    /// Samples per step over all devices.
    pub global_batch: u64,
    /// Layers of the model.
    pub layers: u32,
    /// Gradient elements per device (the model's parameters).
    pub parameters: u64,
    /// Gradient bytes all-reduced per step and device.
    pub gradient_bytes: u64,
    /// Buckets the gradients were split into (PyTorch DDP's assignment by size, in backward order).
    pub buckets: u32,
    /// FLOP of one step on one device (6 · batch · parameters, less layer 0's input gradient).
    pub flops_per_device: f64,
    /// Whether gradients were averaged over devices (DDP's default) instead of summed.
    pub averaged: bool,
}

/// exposed = max(0, step − compute); efficiency = clamp(1 − exposed / comm, 0, 1), `None`
/// with one device or a zero `comm_s` (pure; see the module docs).
pub(crate) fn overlap(
    step_s: f64,
    compute_s: f64,
    comm_s: f64,
    devices: u32,
) -> (f64, Option<f64>) {
    let exposed = (step_s - compute_s).max(0.0);
    let eff = (devices > 1 && comm_s > 0.0).then(|| (1.0 - exposed / comm_s).clamp(0.0, 1.0));
    (exposed, eff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_definitions() {
        // all communication hidden
        assert_eq!(overlap(1.0, 1.0, 0.5, 2), (0.0, Some(1.0)));
        // none hidden
        assert_eq!(overlap(1.5, 1.0, 0.5, 2), (0.5, Some(0.0)));
        // half hidden
        let (e, f) = overlap(1.25, 1.0, 0.5, 4);
        assert!((e - 0.25).abs() < 1e-12 && (f.unwrap() - 0.5).abs() < 1e-12);
        // noise: faster than compute alone → nothing exposed; slower than serial → clamped
        assert_eq!(overlap(0.9, 1.0, 0.5, 2), (0.0, Some(1.0)));
        assert_eq!(overlap(3.0, 1.0, 0.5, 2).1, Some(0.0));
        // one device or no communication: no efficiency
        assert_eq!(overlap(1.0, 1.0, 0.5, 1).1, None);
        assert_eq!(overlap(1.0, 1.0, 0.0, 2).1, None);
    }
}
