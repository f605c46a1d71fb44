//! The device plan: which devices this rank drives and where each one's thread is bound.

use super::request::Launch;
use crate::backend::DevicePlan;
use crate::params::{Binding, LaunchShape, Topology};
use crate::topology::binding::{self, BindRequest};
use crate::topology::identity::{self, NodeLayout};
use crate::topology::{self};

/// Why this rank cannot place its devices (an input error on every rank, see [`agree_input`](super::world::agree_input)).
#[derive(Debug, thiserror::Error)]
pub(super) enum DevicePlanError {
    /// hwloc could not read the machine.
    #[error(transparent)]
    Discover(#[from] topology::hwloc::HwlocError),
    /// The binding policy has nothing usable on this host.
    #[error("--binding {policy}: {source}")]
    Bind {
        policy: Binding,
        #[source]
        source: binding::BindError,
    },
}

/// Which devices this rank drives and where each one's thread is bound.
pub(super) fn device_plan(
    req: &Launch,
    shape: &LaunchShape,
    layout: &NodeLayout,
    rank: u32,
) -> std::result::Result<(DevicePlan, Vec<String>), DevicePlanError> {
    let slot = &layout.slots[rank as usize];
    let per_rank = shape.devices_per_rank();
    let local_indices: Vec<u32> = (0..per_rank)
        .map(|w| match shape.topology {
            Topology::Pure => identity::device_local_index(
                shape.placement,
                rank,
                slot.local_rank,
                shape.nodes,
                shape.devices_per_node,
            ),
            Topology::Hybrid => w,
        })
        .collect();
    let mut notes = Vec::new();
    let worker_cpus = if req.binding == Binding::None {
        vec![None; per_rank as usize]
    } else {
        let machine = topology::hwloc::discover()?;
        let mut cpus = Vec::new();
        for &device in &local_indices {
            let d = binding::decide(
                &machine,
                &BindRequest {
                    policy: req.binding,
                    devices_on_node: shape.devices_per_node,
                    device,
                    host_share: slot.host_share,
                    reserved: req.reserved.clone(),
                    gpu_numa: req.gpu_numa.clone(),
                },
            )
            .map_err(|source| DevicePlanError::Bind {
                policy: req.binding,
                source,
            })?;
            if let Some(n) = d.note {
                notes.push(format!("rank {rank} device {device}: {n}"));
            }
            cpus.push(d.cpus);
        }
        cpus
    };
    Ok((
        DevicePlan {
            devices_per_rank: per_rank as usize,
            local_indices,
            worker_cpus,
            threads_per_device: req.threads_per_device as usize,
            gemm: None,
            nccl_algo: req.nccl_algo,
        },
        notes,
    ))
}
