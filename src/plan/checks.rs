//! Plan-time checks of expanded cases: what would otherwise fail only once a launch runs
//! (issue 33 item 9). Every entry point that expands cases calls [`CaseChecker::check`]:
//! `run` (before any case), `plan`, `sweep` and `submit` (dry runs included), so a case that
//! cannot run is refused with exit 2 before anything starts.

use crate::params::ddp::{device_bytes, BucketPlan, Model, DEFAULT_BATCH, DEFAULT_BUCKET_BYTES};
use crate::params::{BackendKind, BufferOffset, CaseParams, Scaling, Workload};
use std::collections::HashSet;

/// Which input a refusal is about, so each caller names it its own way (an option of `run`,
/// an axis or key of a spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKey {
    /// `--batch` / `axes.batch`.
    Batch,
    /// `--model` / `axes.models`.
    Model,
    /// `--buffer-offset` / `run.buffer_offset`.
    BufferOffset,
    /// `--workload` / `axes.workloads`: a workload the backend does not run yet.
    Workload,
}

/// A case that cannot run, and why (one sentence with the fix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseProblem {
    pub key: CheckKey,
    pub message: String,
}

/// Checks cases, each distinct combination once (a sweep may hold 250,000 cases).
pub struct CaseChecker {
    /// This host's memory (`MemTotal`), bytes; `None` where it cannot be read (no check).
    mem_total_bytes: Option<u64>,
    offset: BufferOffset,
    seen: HashSet<String>,
}

impl CaseChecker {
    /// A checker against this host's memory.
    pub fn for_this_host(offset: BufferOffset) -> CaseChecker {
        CaseChecker::new(crate::topology::mem_total_bytes_now(), offset)
    }

    pub fn new(mem_total_bytes: Option<u64>, offset: BufferOffset) -> CaseChecker {
        CaseChecker {
            mem_total_bytes,
            offset,
            seen: HashSet::new(),
        }
    }

    /// `Err` for the first reason `c` cannot run.
    pub fn check(&mut self, c: &CaseParams) -> Result<(), CaseProblem> {
        if c.workload == Workload::Replay && c.trace.is_none() {
            // A spec's `replay` has no trace key yet: only `scalebench replay TRACE` makes one.
            return Err(CaseProblem {
                key: CheckKey::Workload,
                message: "replay needs its trace: run `scalebench replay TRACE…` (a spec's \
                          replay workload with `trace = \"path\"` is not implemented yet)"
                    .into(),
            });
        }
        if c.workload != Workload::DdpStep {
            return Ok(());
        }
        if !self.seen.insert(c.canonical()) {
            return Ok(());
        }
        if self.offset != BufferOffset::default() {
            return Err(CaseProblem {
                key: CheckKey::BufferOffset,
                message: format!(
                    "ddp_step places its many buffers (weights, activations, gradients, buckets) page-aligned only, so offsets {},{} would be recorded but not applied: leave the buffer offset at 0 for ddp_step, or measure the offset with collectives, matmul or batch_matmul",
                    self.offset.send_bytes, self.offset.recv_bytes
                ),
            });
        }
        check_ddp(c, self.mem_total_bytes)
    }
}

/// ddp_step: every device gets samples, the summed gradient validates exactly, no bucket is
/// above MPI's count limit, and the launch's ranks on one node fit in this host's memory
/// (CPU backend: buffers are host memory; a GPU's memory is not known before the job).
fn check_ddp(c: &CaseParams, mem_total_bytes: Option<u64>) -> Result<(), CaseProblem> {
    let text = c
        .model
        .as_deref()
        .unwrap_or(crate::params::ddp::DEFAULT_MODEL);
    let model = Model::parse(text).map_err(|e| CaseProblem {
        key: CheckKey::Model,
        message: e.to_string(),
    })?;
    let devices = u64::from(c.nodes) * u64::from(c.devices_per_node);
    let batch = u64::from(c.batch.unwrap_or(DEFAULT_BATCH));
    let scaling = c.scaling.unwrap_or(Scaling::Weak);
    let (global, widest) = match scaling {
        Scaling::Weak => (batch.saturating_mul(devices), batch),
        Scaling::Strong => (batch, batch.div_ceil(devices.max(1))),
    };
    if scaling == Scaling::Strong && batch < devices {
        return Err(CaseProblem {
            key: CheckKey::Batch,
            message: format!(
                "ddp_step, strong scaling: a global batch of {batch} leaves some of the launch's {devices} devices without samples: give a batch of at least {devices}, or use weak scaling"
            ),
        });
    }
    let bits = c.dtype.exact_integer_bits();
    if global.saturating_mul(6) >= 1u64 << bits {
        return Err(CaseProblem {
            key: CheckKey::Batch,
            message: format!(
                "ddp_step: a global batch of {global} samples is too large for exact {} validation (the summed gradient reaches 6 × the batch, above 2^{bits}): use f64 or fewer samples",
                c.dtype
            ),
        });
    }
    let elem = c.dtype.size_bytes();
    let cap = c.bucket_bytes.unwrap_or(DEFAULT_BUCKET_BYTES);
    let plan = BucketPlan::new(&model, elem, cap, c.first_bucket_bytes.unwrap_or(0));
    if let Some(big) = plan.lens.iter().find(|&&n| n > i32::MAX as usize) {
        return Err(CaseProblem {
            key: CheckKey::Model,
            message: format!(
                "ddp_step: model {}: a gradient bucket would hold {big} elements, above MPI's count limit of 2^31 − 1 (2147483647): use layers of fewer than 2^31 weights each, or a smaller --bucket-size",
                crate::units::shorten(text)
            ),
        });
    }
    if c.backend == BackendKind::Cpu {
        check_memory(c, text, &model, widest, mem_total_bytes)?;
    }
    Ok(())
}

/// The ranks of one node hold `devices_per_node` copies of the step's buffers.
fn check_memory(
    c: &CaseParams,
    text: &str,
    model: &Model,
    widest_batch: u64,
    mem_total_bytes: Option<u64>,
) -> Result<(), CaseProblem> {
    let Some(mem) = mem_total_bytes.filter(|m| *m > 0) else {
        return Ok(());
    };
    let per_device = device_bytes(model, c.dtype.size_bytes(), widest_batch);
    let per_node = per_device.saturating_mul(u64::from(c.devices_per_node));
    if per_node <= mem {
        return Ok(());
    }
    let per_rank = match c.topology {
        crate::params::Topology::Pure => per_device,
        crate::params::Topology::Hybrid => per_node,
    };
    Err(CaseProblem {
        key: CheckKey::Model,
        message: format!(
            "ddp_step: model {} in {} with {} a device needs about {} a rank (weights ×4, activations), {} for the {} of a node, above this host's memory (MemTotal {}): use a smaller model, fewer devices per node, or a smaller dtype",
            crate::units::shorten(text),
            c.dtype,
            crate::units::count(widest_batch as usize, "sample", "samples"),
            crate::units::format_gib(per_rank),
            crate::units::format_gib(per_node),
            crate::units::count(c.devices_per_node as usize, "device", "devices"),
            crate::units::format_gib(mem)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{Dtype, Topology};

    fn ddp(model: &str, nodes: u32, dpn: u32, batch: u32, scaling: Scaling) -> CaseParams {
        CaseParams {
            model: Some(model.into()),
            batch: Some(batch),
            scaling: Some(scaling),
            dtype: Dtype::F32,
            ..CaseParams::new(Workload::DdpStep, nodes, dpn)
        }
    }

    fn problem(c: &CaseParams, mem: Option<u64>) -> Option<CaseProblem> {
        CaseChecker::new(mem, BufferOffset::default())
            .check(c)
            .err()
    }

    #[test]
    fn strong_scaling_needs_a_sample_per_device() {
        let p = problem(&ddp("mlp-tiny", 2, 4, 7, Scaling::Strong), None).unwrap();
        assert_eq!(p.key, CheckKey::Batch);
        assert!(
            p.message.contains("give a batch of at least 8"),
            "{}",
            p.message
        );
        assert!(problem(&ddp("mlp-tiny", 2, 4, 8, Scaling::Strong), None).is_none());
        // Weak scaling: every device has its own batch.
        assert!(problem(&ddp("mlp-tiny", 2, 4, 1, Scaling::Weak), None).is_none());
    }

    #[test]
    fn a_bucket_above_mpis_count_is_refused() {
        // 46341² = 2^31 + 4633: one layer alone is above 2^31 − 1 elements.
        let p = problem(&ddp("46341x46341", 1, 1, 1, Scaling::Weak), None).unwrap();
        assert_eq!(p.key, CheckKey::Model);
        assert!(p.message.contains("2^31 − 1"), "{}", p.message);
        assert!(problem(&ddp("46340x46340", 1, 1, 1, Scaling::Weak), None).is_none());
    }

    #[test]
    fn a_model_larger_than_the_host_is_refused() {
        let gib = 1u64 << 30;
        // mlp-1b: 1.07 G weights × 4 copies × 4 B ≈ 16 GiB a device.
        let one = ddp("mlp-1b", 1, 1, 32, Scaling::Weak);
        assert!(problem(&one, Some(24 * gib)).is_none());
        let p = problem(&ddp("mlp-1b", 1, 2, 32, Scaling::Weak), Some(24 * gib)).unwrap();
        assert_eq!(p.key, CheckKey::Model);
        assert!(p.message.contains("MemTotal 24.0 GiB)"), "{}", p.message);
        // Hybrid: one rank holds every device's copy.
        let mut h = ddp("mlp-1b", 1, 2, 32, Scaling::Weak);
        h.topology = Topology::Hybrid;
        assert!(problem(&h, Some(24 * gib)).is_some());
        // A GPU's memory is not the host's: not checked here.
        let mut g = ddp("mlp-1b", 1, 8, 32, Scaling::Weak);
        g.backend = BackendKind::Cuda;
        assert!(problem(&g, Some(gib)).is_none());
        // Unknown host memory: no check.
        assert!(problem(&ddp("mlp-1b", 1, 64, 32, Scaling::Weak), None).is_none());
    }

    #[test]
    fn a_buffer_offset_is_refused_for_ddp_only() {
        let off = BufferOffset {
            send_bytes: 0,
            recv_bytes: 16,
        };
        let mut k = CaseChecker::new(None, off);
        let p = k
            .check(&ddp("mlp-tiny", 1, 2, 4, Scaling::Weak))
            .unwrap_err();
        assert_eq!(p.key, CheckKey::BufferOffset);
        assert!(k.check(&CaseParams::new(Workload::Matmul, 1, 2)).is_ok());
    }

    #[test]
    fn long_models_are_echoed_shortened() {
        let long = format!("{}46341x46341", "8x8+".repeat(100));
        let p = problem(&ddp(&long, 1, 1, 1, Scaling::Weak), None).unwrap();
        assert!(p.message.len() < 400, "{}", p.message);
        assert!(p.message.contains("chars)"), "{}", p.message);
    }
}
