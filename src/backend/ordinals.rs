//! Which device ordinals a rank opens, given the node-local GPU numbers the plan gave it and
//! the devices its runtime (CUDA or HIP) shows: written once for both GPU backends, so a
//! launcher that binds one GPU per rank works the same on NVIDIA and AMD nodes.

/// The runtime the ordinals belong to, as its sentences name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// `CUDA` or `HIP`.
    pub name: &'static str,
    /// The collective library that needs a distinct device per rank: `NCCL` or `RCCL`.
    pub ccl: &'static str,
    /// The visibility variables as this process sees them, e.g. `CUDA_VISIBLE_DEVICES unset`.
    pub visible_env: String,
}

/// How a rank's node-local GPU numbers map onto the ordinals it can see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrdinalChoice {
    /// Ordinal (position among the visible devices) of each local device.
    pub ordinals: Vec<u32>,
    /// Why the mapping is not the identity, for provenance (`None` when it is).
    pub note: Option<String>,
}

/// Maps node-local GPU numbers (the fill-up or round-robin rule's result) onto the `visible`
/// ordinals of this process.
///
/// Ordinal `i` is the i-th visible device, so with no visibility variable set GPU `i` is
/// ordinal `i`, and with one set the launcher's choice is respected. One exception: a rank
/// that drives one GPU and sees exactly one device was given its own GPU by the launcher
/// (Slurm `--gpus-per-task=1`, `--gpu-bind=single:1`, LUMI's `ROCR_VISIBLE_DEVICES` wrapper),
/// so it uses ordinal 0 whatever its node-local number. Anything else that does not fit is an
/// error sentence with the fix.
pub fn choose_ordinals(
    local_indices: &[u32],
    visible: u32,
    rt: &Runtime,
) -> Result<OrdinalChoice, OrdinalError> {
    if local_indices.is_empty() {
        return Err(OrdinalError::NoneGiven { runtime: rt.name });
    }
    if let Some(&want) = local_indices.iter().find(|&&i| i >= visible) {
        if local_indices.len() == 1 && visible == 1 {
            return Ok(OrdinalChoice {
                ordinals: vec![0],
                note: Some(format!(
                    "node-local GPU {want} is this rank's only visible device (ordinal 0): the launcher gave each rank its own GPU"
                )),
            });
        }
        return Err(OrdinalError::NotVisible {
            runtime: rt.name,
            want,
            visible,
            env: rt.visible_env.clone(),
        });
    }
    let mut seen = local_indices.to_vec();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != local_indices.len() {
        return Err(OrdinalError::Repeated {
            ccl: rt.ccl,
            indices: local_indices.to_vec(),
        });
    }
    Ok(OrdinalChoice {
        ordinals: local_indices.to_vec(),
        note: None,
    })
}

/// Why a rank's node-local GPU numbers do not name devices it can open: the launch is
/// unusable here (exit 2), with the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrdinalError {
    #[error("no {runtime} device: this rank was given no device to drive")]
    NoneGiven { runtime: &'static str },
    #[error("no {runtime} device for node-local GPU {want}: this process sees {} ({env}); give each node at least --devices-per-node GPUs (or lower --devices-per-node), or let the launcher bind one GPU per rank", crate::units::count(*.visible as usize, "device", "devices"))]
    NotVisible {
        runtime: &'static str,
        want: u32,
        visible: u32,
        env: String,
    },
    #[error("node-local GPUs {indices:?} repeat a device: {ccl} needs a distinct GPU per device")]
    Repeated {
        ccl: &'static str,
        indices: Vec<u32>,
    },
}

impl From<OrdinalError> for crate::backend::BackendError {
    fn from(e: OrdinalError) -> Self {
        crate::backend::BackendError::Unavailable(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuda() -> Runtime {
        Runtime {
            name: "CUDA",
            ccl: "NCCL",
            visible_env: "CUDA_VISIBLE_DEVICES unset".into(),
        }
    }

    fn choose(local: &[u32], visible: u32) -> Result<OrdinalChoice, OrdinalError> {
        choose_ordinals(local, visible, &cuda())
    }

    #[test]
    fn ordinals_are_the_local_gpu_numbers_when_visible() {
        let c = choose(&[2], 4).unwrap();
        assert_eq!(c.ordinals, vec![2]);
        assert_eq!(c.note, None);
        // hybrid: every GPU of the node
        let c = choose(&[0, 1, 2, 3], 4).unwrap();
        assert_eq!(c.ordinals, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_rank_with_its_own_gpu_uses_ordinal_zero() {
        // Slurm --gpus-per-task=1: local rank 3 sees one device
        let c = choose(&[3], 1).unwrap();
        assert_eq!(c.ordinals, vec![0]);
        assert!(c.note.unwrap().contains("only visible device"));
    }

    #[test]
    fn too_few_devices_is_one_sentence_with_the_fix() {
        let e = choose(&[2], 2).unwrap_err().to_string();
        assert!(e.starts_with("no CUDA device for node-local GPU 2"), "{e}");
        assert!(e.contains("--devices-per-node"), "{e}");
        // hybrid asking for more GPUs than exist
        let e = choose(&[0, 1, 2], 2).unwrap_err().to_string();
        assert!(e.contains("node-local GPU 2"), "{e}");
        assert_eq!(
            choose(&[], 4).unwrap_err(),
            OrdinalError::NoneGiven { runtime: "CUDA" }
        );
        assert!(choose(&[1, 1], 4)
            .unwrap_err()
            .to_string()
            .contains("repeat"));
    }

    #[test]
    fn fill_up_and_round_robin_ranks_land_on_distinct_gpus() {
        use crate::params::Placement;
        use crate::topology::identity::device_local_index;
        // 2 nodes × 4 GPUs, 8 ranks: every (node, ordinal) pair is used exactly once.
        for placement in [Placement::Fill, Placement::RoundRobin] {
            let mut used = std::collections::BTreeSet::new();
            for rank in 0..8u32 {
                let (node, local_rank) = match placement {
                    Placement::Fill => (rank / 4, rank % 4),
                    Placement::RoundRobin => (rank % 2, rank / 2),
                };
                let gpu = device_local_index(placement, rank, local_rank, 2, 4);
                let c = choose(&[gpu], 4).unwrap();
                assert!(
                    used.insert((node, c.ordinals[0])),
                    "{placement} rank {rank}"
                );
            }
            assert_eq!(used.len(), 8);
        }
    }

    /// The ROCm backend's sentences name HIP, RCCL and its own variables.
    #[test]
    fn hip_ranks_fall_back_and_fail_in_their_own_words() {
        let hip = Runtime {
            name: "HIP",
            ccl: "RCCL",
            visible_env: "ROCR_VISIBLE_DEVICES=\"5\", HIP_VISIBLE_DEVICES unset".into(),
        };
        // LUMI's wrapper: local rank 5 sees one GCD
        let c = choose_ordinals(&[5], 1, &hip).unwrap();
        assert_eq!(c.ordinals, vec![0]);
        let e = choose_ordinals(&[5], 2, &hip).unwrap_err().to_string();
        assert!(e.starts_with("no HIP device for node-local GPU 5: this process sees 2 devices (ROCR_VISIBLE_DEVICES=\"5\""), "{e}");
        let e = choose_ordinals(&[1, 1], 8, &hip).unwrap_err().to_string();
        assert!(e.contains("RCCL needs a distinct GPU"), "{e}");
    }
}
