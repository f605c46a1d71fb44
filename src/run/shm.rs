//! Open MPI's shared-memory transport on emulated nodes: it names its segments after the host
//! name, which every emulated node of one machine shares, so the ranks of two nodes collide
//! and a launch of 2 ranks per node hangs or crashes at start-up. The local-slurm profile's
//! wrapper gives each node its own backing directory; a rank started without it (`srun`
//! by hand) applies the same rule itself before `MPI_Init`.

/// The variable Open MPI 4's vader BTL reads for its backing directory.
const BACKING: &str = "OMPI_MCA_btl_vader_backing_directory";

/// Pure: the backing directory a rank on Slurm node `node` (SLURMD_NODENAME) of host `host`
/// needs, when the node is emulated (its name is not the host's short name) and none is set.
pub(crate) fn backing_dir_for(node: Option<&str>, host: &str, set: bool) -> Option<String> {
    let node = node.filter(|n| !n.is_empty())?;
    let short = host.split('.').next().unwrap_or(host);
    (!set && node != short && node.split('.').next() != Some(short))
        .then(|| format!("/dev/shm/scalebench-node-{node}"))
}

/// Applies [`backing_dir_for`] to this process before `MPI_Init` (the directory made, the
/// variable set), and says which directory, if any.
pub(crate) fn apply_node_local_shm() -> Option<String> {
    let node = std::env::var("SLURMD_NODENAME").ok();
    let host = crate::topology::hostname();
    let dir = backing_dir_for(node.as_deref(), &host, std::env::var_os(BACKING).is_some())?;
    std::fs::create_dir_all(&dir).ok()?;
    // Before MPI_Init and before this process starts any thread: no reader races the write.
    std::env::set_var(BACKING, &dir);
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emulated_nodes_get_their_own_directory_and_real_ones_are_left_alone() {
        assert_eq!(
            backing_dir_for(Some("n2"), "vm", false).as_deref(),
            Some("/dev/shm/scalebench-node-n2")
        );
        assert_eq!(
            backing_dir_for(Some("n2"), "vm", true),
            None,
            "the profile's wins"
        );
        assert_eq!(
            backing_dir_for(Some("nid001"), "nid001.cluster", false),
            None
        );
        assert_eq!(backing_dir_for(Some("nid001"), "nid001", false), None);
        assert_eq!(backing_dir_for(None, "vm", false), None, "not under Slurm");
    }
}
