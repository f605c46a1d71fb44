//! Who a rank is and where it runs: rank and world size as the launcher announced them, and
//! the node each rank belongs to (from Slurm, from host names, or emulated on one host).
//!
//! Launchers announce ranks in their own variables: Slurm (`SLURM_PROCID`, ...), OpenMPI
//! (`OMPI_COMM_WORLD_*`), PMI (`PMI_RANK`), torchrun (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`).
//! Comparing what the launcher started with what MPI reports catches the classic failure of an
//! MPI library that does not match the launcher: every process then runs alone as rank 0.

use crate::params::Placement;
use serde::{Deserialize, Serialize};

/// What the launcher says about this process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LauncherEnv {
    /// Which launcher's variables were found: `slurm`, `openmpi`, `pmi`, `torchrun`.
    pub source: Option<&'static str>,
    pub rank: Option<u32>,
    pub size: Option<u32>,
    pub local_rank: Option<u32>,
    /// Slurm only.
    pub node_id: Option<u32>,
    pub node_name: Option<String>,
    pub nodes: Option<u32>,
}

/// Reads launcher variables through `get` (the process environment in production).
pub fn launcher_env(get: impl Fn(&str) -> Option<String>) -> LauncherEnv {
    let num = |k: &str| get(k).and_then(|v| v.trim().parse::<u32>().ok());
    // `mpirun` inside a Slurm allocation inherits the allocation's SLURM_PROCID (0 on every
    // rank) and SLURM_NTASKS: the innermost launcher is OpenMPI's, so its variables win when
    // its launcher (the ORTE HNP) started us or when the two disagree. Under `srun` direct
    // launch the OpenMPI variables, if any, agree with Slurm's and Slurm's node ids are kept.
    let ompi_rank = num("OMPI_COMM_WORLD_RANK");
    let mpirun_started = ompi_rank.is_some()
        && (get("OMPI_MCA_orte_hnp_uri").is_some()
            || num("SLURM_PROCID") != ompi_rank
            || num("SLURM_NTASKS").is_some_and(|n| Some(n) != num("OMPI_COMM_WORLD_SIZE")));
    if let Some(rank) = num("SLURM_PROCID").filter(|_| !mpirun_started) {
        return LauncherEnv {
            source: Some("slurm"),
            rank: Some(rank),
            size: num("SLURM_NTASKS").or_else(|| num("SLURM_NPROCS")),
            local_rank: num("SLURM_LOCALID"),
            node_id: num("SLURM_NODEID"),
            node_name: get("SLURMD_NODENAME"),
            nodes: num("SLURM_JOB_NUM_NODES").or_else(|| num("SLURM_NNODES")),
        };
    }
    if let Some(rank) = num("OMPI_COMM_WORLD_RANK") {
        return LauncherEnv {
            source: Some("openmpi"),
            rank: Some(rank),
            size: num("OMPI_COMM_WORLD_SIZE"),
            local_rank: num("OMPI_COMM_WORLD_LOCAL_RANK"),
            ..LauncherEnv::default()
        };
    }
    if let Some(rank) = num("PMI_RANK") {
        return LauncherEnv {
            source: Some("pmi"),
            rank: Some(rank),
            size: num("PMI_SIZE"),
            local_rank: num("MPI_LOCALRANKID").or_else(|| num("MPI_LOCAL_RANK")),
            ..LauncherEnv::default()
        };
    }
    if let Some(rank) = num("RANK") {
        return LauncherEnv {
            source: Some("torchrun"),
            rank: Some(rank),
            size: num("WORLD_SIZE"),
            local_rank: num("LOCAL_RANK"),
            ..LauncherEnv::default()
        };
    }
    LauncherEnv::default()
}

static MPI_RANK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Records this process's MPI rank once MPI has started (it outranks the environment's).
pub fn set_mpi_rank(rank: u32) {
    let _ = MPI_RANK.set(rank);
}

/// This process's rank: MPI's once known, else the environment's, if a launcher set one (used
/// to print an error once instead of once per rank).
pub fn env_rank() -> Option<u32> {
    MPI_RANK
        .get()
        .copied()
        .or_else(|| launcher_env(|k| std::env::var(k).ok()).rank)
}

/// A world or node layout this launch cannot run with. Serialisable: rank 0 sends the
/// layout's outcome, this included, to every rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum IdentityError {
    /// The launcher started a different number of processes than MPI's world holds.
    #[error("the launcher ({launcher}) started {launched} processes but MPI reports a world of {mpi_size}: \
             the MPI library does not match the launcher, so every process runs on its own. \
             Under Slurm use `srun --mpi=pmix` with OpenMPI, or start the job with this MPI's own mpirun")]
    WorldSize {
        launcher: String,
        launched: u32,
        mpi_size: u32,
    },
    /// The launcher and MPI number this process differently.
    #[error("the launcher ({launcher}) calls this process rank {launcher_rank} but MPI calls it rank {mpi_rank}: the launcher and the MPI library disagree")]
    Rank {
        launcher: String,
        launcher_rank: u32,
        mpi_rank: u32,
    },
    /// Emulated nodes that do not divide the ranks.
    #[error("{ranks} ranks cannot be split evenly into {nodes} emulated nodes: use a node count that divides the rank count")]
    Uneven { ranks: u32, nodes: u32 },
}

/// Checks the world MPI reports against what the launcher started.
pub fn check_world(env: &LauncherEnv, mpi_rank: u32, mpi_size: u32) -> Result<(), IdentityError> {
    let launcher = || env.source.unwrap_or("?").to_string();
    if let Some(size) = env.size {
        if size != mpi_size {
            return Err(IdentityError::WorldSize {
                launcher: launcher(),
                launched: size,
                mpi_size,
            });
        }
    }
    if let Some(rank) = env.rank {
        if rank != mpi_rank && env.source != Some("torchrun") {
            return Err(IdentityError::Rank {
                launcher: launcher(),
                launcher_rank: rank,
                mpi_rank,
            });
        }
    }
    Ok(())
}

/// What each rank tells the root about itself before nodes are assigned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankFacts {
    pub host: String,
    pub slurm_node_id: Option<u32>,
    pub slurm_node_name: Option<String>,
    pub slurm_local_rank: Option<u32>,
}

/// Where a rank runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSlot {
    pub node: u32,
    pub node_name: String,
    pub local_rank: u32,
    /// This node's position among the nodes that share its host, and how many share it
    /// (emulated nodes split a host's cores; a real node has (0, 1)).
    pub host_share: (u32, u32),
}

/// Node assignment for a whole launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLayout {
    /// Indexed by rank.
    pub slots: Vec<NodeSlot>,
    pub nodes: u32,
    pub emulated: bool,
    /// `emulated`, `slurm` or `hostname`.
    pub source: String,
}

/// Assigns nodes to ranks. `emulate = Some((nodes, placement))` groups the ranks of one host
/// into that many emulated nodes; otherwise Slurm's node ids are used when every rank has one,
/// and host names when not.
pub fn assign_nodes(
    facts: &[RankFacts],
    emulate: Option<(u32, Placement)>,
) -> Result<NodeLayout, IdentityError> {
    let mut layout = assign(facts, emulate)?;
    // Which nodes share each host, in node order.
    for r in 0..layout.slots.len() {
        let host = &facts[r].host;
        let mut nodes: Vec<u32> = facts
            .iter()
            .zip(&layout.slots)
            .filter(|(f, _)| &f.host == host)
            .map(|(_, s)| s.node)
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        let me = layout.slots[r].node;
        let index = nodes.iter().position(|n| *n == me).unwrap_or(0) as u32;
        layout.slots[r].host_share = (index, nodes.len() as u32);
    }
    Ok(layout)
}

/// Which node each rank is on: emulated nodes when asked, else Slurm's node ids when every
/// rank has one, else the host names.
fn assign(
    facts: &[RankFacts],
    emulate: Option<(u32, Placement)>,
) -> Result<NodeLayout, IdentityError> {
    let size = facts.len() as u32;
    if let Some((nodes, placement)) = emulate {
        if nodes == 0 || size % nodes != 0 {
            return Err(IdentityError::Uneven { ranks: size, nodes });
        }
        return Ok(emulated_layout(size, nodes, placement));
    }
    if !facts.is_empty() && facts.iter().all(|f| f.slurm_node_id.is_some()) {
        return Ok(slurm_layout(facts));
    }
    Ok(host_layout(facts))
}

/// `size` ranks on `nodes` emulated nodes (`nodes` divides `size`), placed by `placement`.
fn emulated_layout(size: u32, nodes: u32, placement: Placement) -> NodeLayout {
    let per = size / nodes;
    let slots = (0..size)
        .map(|r| {
            let (node, local) = match placement {
                Placement::Fill => (r / per, r % per),
                Placement::RoundRobin => (r % nodes, r / nodes),
            };
            NodeSlot {
                node,
                node_name: format!("enode{node}"),
                local_rank: local,
                host_share: (0, 1),
            }
        })
        .collect();
    NodeLayout {
        slots,
        nodes,
        emulated: true,
        source: "emulated".into(),
    }
}

/// Nodes as Slurm numbers them (every rank has a node id).
fn slurm_layout(facts: &[RankFacts]) -> NodeLayout {
    let mut ids: Vec<u32> = facts.iter().filter_map(|f| f.slurm_node_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut hosts: Vec<&str> = facts.iter().map(|f| f.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let slots = facts
        .iter()
        .enumerate()
        .map(|(r, f)| {
            let id = f.slurm_node_id.unwrap_or(0);
            NodeSlot {
                node: id,
                node_name: f.slurm_node_name.clone().unwrap_or_else(|| f.host.clone()),
                local_rank: f.slurm_local_rank.unwrap_or_else(|| {
                    facts[..r]
                        .iter()
                        .filter(|g| g.slurm_node_id == Some(id))
                        .count() as u32
                }),
                host_share: (0, 1),
            }
        })
        .collect();
    NodeLayout {
        slots,
        nodes: ids.len() as u32,
        // Several Slurm nodes on one host: slurmd daemons standing in for nodes.
        emulated: hosts.len() < ids.len(),
        source: "slurm".into(),
    }
}

/// One node per distinct host name, in order of first appearance.
fn host_layout(facts: &[RankFacts]) -> NodeLayout {
    let mut order: Vec<&str> = Vec::new();
    let slots = facts
        .iter()
        .enumerate()
        .map(|(r, f)| {
            let node = match order.iter().position(|h| *h == f.host) {
                Some(i) => i,
                None => {
                    order.push(&f.host);
                    order.len() - 1
                }
            } as u32;
            NodeSlot {
                node,
                node_name: f.host.clone(),
                local_rank: facts[..r].iter().filter(|g| g.host == f.host).count() as u32,
                host_share: (0, 1),
            }
        })
        .collect();
    NodeLayout {
        slots,
        nodes: order.len() as u32,
        emulated: false,
        source: "hostname".into(),
    }
}

/// The node-local device number (GPU id) of a pure-MPI rank, as the source documents compute
/// it: fill-up `local_rank % devices_per_node`; round-robin `rank / nodes`.
pub fn device_local_index(
    placement: Placement,
    rank: u32,
    local_rank: u32,
    nodes: u32,
    devices_per_node: u32,
) -> u32 {
    match placement {
        Placement::Fill => local_rank % devices_per_node.max(1),
        Placement::RoundRobin => rank / nodes.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> LauncherEnv {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        launcher_env(|k| m.get(k).cloned())
    }

    #[test]
    fn reads_each_launcher() {
        let e = env(&[
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_NODEID", "1"),
            ("SLURMD_NODENAME", "n2"),
            ("SLURM_JOB_NUM_NODES", "2"),
        ]);
        assert_eq!(
            (e.source, e.rank, e.size, e.local_rank, e.node_id, e.nodes),
            (Some("slurm"), Some(3), Some(4), Some(1), Some(1), Some(2))
        );
        assert_eq!(e.node_name.as_deref(), Some("n2"));
        let e = env(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ]);
        assert_eq!(
            (e.source, e.rank, e.size, e.local_rank),
            (Some("openmpi"), Some(1), Some(2), Some(1))
        );
        let e = env(&[("PMI_RANK", "5"), ("PMI_SIZE", "8")]);
        assert_eq!((e.source, e.rank, e.size), (Some("pmi"), Some(5), Some(8)));
        let e = env(&[("RANK", "2"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "0")]);
        assert_eq!(
            (e.source, e.rank, e.local_rank),
            (Some("torchrun"), Some(2), Some(0))
        );
        assert_eq!(env(&[]), LauncherEnv::default());
    }

    #[test]
    fn mpirun_inside_a_slurm_allocation_is_openmpi() {
        // The reproduction: rank 1 of `mpirun -np 2` inside `salloc -n 2`.
        let e = env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_MCA_orte_hnp_uri", "1.0;tcp://127.0.0.1:1"),
        ]);
        assert_eq!(
            (e.source, e.rank, e.size),
            (Some("openmpi"), Some(1), Some(2))
        );
        assert!(check_world(&e, 1, 2).is_ok());
        // Rank 0 of the same job: the Slurm variables happen to agree, mpirun still wins.
        let e = env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
        ]);
        assert_eq!((e.source, e.size), (Some("openmpi"), Some(2)));
        // srun direct launch, where OpenMPI's variables (if set) agree: Slurm's are kept.
        let e = env(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_NODEID", "1"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
        ]);
        assert_eq!((e.source, e.node_id), (Some("slurm"), Some(1)));
    }

    #[test]
    fn world_size_mismatch_names_both_numbers() {
        let e = env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4")]);
        let msg = check_world(&e, 0, 1).unwrap_err();
        assert!(matches!(
            msg,
            IdentityError::WorldSize {
                launched: 4,
                mpi_size: 1,
                ..
            }
        ));
        let msg = msg.to_string();
        assert!(
            msg.contains("started 4") && msg.contains("world of 1"),
            "{msg}"
        );
        assert!(check_world(&e, 0, 4).is_ok());
        assert!(check_world(&LauncherEnv::default(), 0, 7).is_ok());
    }

    fn facts(hosts: &[&str], slurm: Option<&[u32]>) -> Vec<RankFacts> {
        hosts
            .iter()
            .enumerate()
            .map(|(i, h)| RankFacts {
                host: h.to_string(),
                slurm_node_id: slurm.map(|s| s[i]),
                slurm_node_name: slurm.map(|s| format!("n{}", s[i] + 1)),
                slurm_local_rank: None,
            })
            .collect()
    }

    #[test]
    fn emulated_fill_and_round_robin() {
        let f = facts(&["h"; 4], None);
        let l = assign_nodes(&f, Some((2, Placement::Fill))).unwrap();
        assert_eq!(
            l.slots
                .iter()
                .map(|s| (s.node, s.local_rank))
                .collect::<Vec<_>>(),
            vec![(0, 0), (0, 1), (1, 0), (1, 1)]
        );
        assert!(l.emulated);
        assert_eq!(l.slots[3].host_share, (1, 2));
        let l = assign_nodes(&f, Some((2, Placement::RoundRobin))).unwrap();
        assert_eq!(
            l.slots
                .iter()
                .map(|s| (s.node, s.local_rank))
                .collect::<Vec<_>>(),
            vec![(0, 0), (1, 0), (0, 1), (1, 1)]
        );
        assert_eq!(
            assign_nodes(&f, Some((3, Placement::Fill))).unwrap_err(),
            IdentityError::Uneven { ranks: 4, nodes: 3 }
        );
    }

    #[test]
    fn slurm_nodes_on_one_host_are_emulated() {
        let l = assign_nodes(&facts(&["h", "h", "h", "h"], Some(&[0, 0, 1, 1])), None).unwrap();
        assert_eq!((l.nodes, l.emulated, l.source.as_str()), (2, true, "slurm"));
        assert_eq!(l.slots[2].node_name, "n2");
        assert_eq!(l.slots[3].local_rank, 1);
        assert_eq!(l.slots[2].host_share, (1, 2));
        let l = assign_nodes(&facts(&["a", "a", "b", "b"], Some(&[0, 0, 1, 1])), None).unwrap();
        assert!(!l.emulated);
        assert_eq!(l.slots[2].host_share, (0, 1));
    }

    #[test]
    fn hostname_grouping() {
        let l = assign_nodes(&facts(&["b", "a", "b", "a"], None), None).unwrap();
        assert_eq!(l.nodes, 2);
        assert_eq!(
            l.slots
                .iter()
                .map(|s| (s.node, s.local_rank))
                .collect::<Vec<_>>(),
            vec![(0, 0), (1, 0), (0, 1), (1, 1)]
        );
    }

    #[test]
    fn gpu_index_rules_from_the_source_documents() {
        // Sulis (fill-up, 3 GPUs per node): ranks 0..5 → GPUs 0,1,2,0,1,2
        let g: Vec<u32> = (0..6)
            .map(|r| device_local_index(Placement::Fill, r, r % 3, 2, 3))
            .collect();
        assert_eq!(g, vec![0, 1, 2, 0, 1, 2]);
        // Apocrita round-robin (2 nodes of 4 GPUs): gpu = rank // n_node
        let g: Vec<u32> = (0..8)
            .map(|r| device_local_index(Placement::RoundRobin, r, r / 2, 2, 4))
            .collect();
        assert_eq!(g, vec![0, 0, 1, 1, 2, 2, 3, 3]);
    }
}
