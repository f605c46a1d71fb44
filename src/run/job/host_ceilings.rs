//! Ceilings per launch: once per host, the host's node leader (its lowest rank) takes the
//! host's CPU ceilings (the best instruction set's FMA peak in f32 and f64, STREAM Copy/Triad,
//! the theoretical peak) for the CPUs offered to the launch's ranks there from the host cache
//! (`topology::ceilings::cache`), measuring them in rounds spread over time when the cache has
//! none for this host and CPU set, while the host's other ranks wait in a sleeping poll so
//! that they do not take the CPUs being measured.

use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::results::ceilings::HostCeilings;
use crate::topology::ceilings::cache::{self, HostKey, CACHE_DIR_VAR};
use crate::topology::ceilings::{measured_in_rounds, RoundsPlan};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where the host cache is: `$SCALEBENCH_CEILINGS_CACHE` (a sweep sets `<out>/ceilings`; an
/// empty value: no cache, measure every launch), else `$XDG_CACHE_HOME/scalebench/ceilings`,
/// else `~/.cache/scalebench/ceilings`.
fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).map(PathBuf::from);
    match var(CACHE_DIR_VAR) {
        Some(d) if d.as_os_str().is_empty() => None,
        Some(d) => Some(d),
        None => var("XDG_CACHE_HOME")
            .filter(|d| d.is_absolute())
            .or_else(|| var("HOME").map(|h| h.join(".cache")))
            .map(|d| d.join("scalebench").join("ceilings")),
    }
}

/// Which rank leads each host and which CPUs it measures: for each rank, `Some(cpus)` if it
/// is the lowest rank on its host (the union of the CPUs of the host's ranks), else `None`.
pub(super) fn leaders(ranks: &[(String, Vec<u32>)]) -> Vec<Option<Vec<u32>>> {
    let mut out = vec![None; ranks.len()];
    for (r, (host, _)) in ranks.iter().enumerate() {
        if ranks[..r].iter().any(|(h, _)| h == host) {
            continue;
        }
        let mut cpus: Vec<u32> = ranks
            .iter()
            .filter(|(h, _)| h == host)
            .flat_map(|(_, c)| c.iter().copied())
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        out[r] = Some(cpus);
    }
    out
}

/// Every rank calls this with its host and CPUs; the leaders return their host's ceilings
/// (on the CUDA backend with its GPUs') and record the host's network (`net_ceilings`).
#[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
pub(super) fn measure(
    comm: &MpiComm,
    host: &str,
    my_cpus: &[u32],
    net: &crate::topology::ceilings::network::Probe,
    backend: crate::params::BackendKind,
) -> Option<HostCeilings> {
    let mine = serde_json::to_vec(&(host, my_cpus)).expect("host and CPUs serialise");
    let all = comm.gather_bytes(&mine);
    let mut plan = if comm.is_root() {
        let ranks: Vec<(String, Vec<u32>)> = all
            .iter()
            .map(|b| serde_json::from_slice(b).expect("host and CPUs from our own ranks"))
            .collect();
        serde_json::to_vec(&leaders(&ranks)).expect("leaders serialise")
    } else {
        Vec::new()
    };
    comm.broadcast_bytes(&mut plan);
    let plan: Vec<Option<Vec<u32>>> = serde_json::from_slice(&plan).expect("leaders from rank 0");
    let rank = comm.rank();
    let found = plan.get(rank as usize).cloned().flatten().map(|cpus| {
        let t0 = Instant::now();
        let got = cache::lookup_or_measure(
            cache_dir().as_deref(),
            &HostKey::current(host, &cpus),
            crate::results::now_unix_s(),
            || measured_in_rounds(&cpus, &RoundsPlan::default()),
        );
        let mut h = HostCeilings {
            host: host.to_string(),
            rank,
            cpus: crate::params::cpulist::format_cpulist(&cpus),
            seconds: 0.0,
            warnings: Vec::new(),
            counters: Vec::new(),
            ceilings: got.entry.ceilings,
            measurement: Some(got.measurement),
        };
        super::net_ceilings::at_start(net, &mut h);
        #[cfg(feature = "cuda")]
        if backend == crate::params::BackendKind::Cuda {
            crate::backend::cuda::ceilings::record(&mut h);
        }
        h.seconds = t0.elapsed().as_secs_f64();
        h
    });
    sleeping_barrier(comm);
    found
}

/// A barrier whose waiters sleep between polls (`MPI_Ibarrier` + `MPI_Test` every 2 ms): a
/// blocking `MPI_Barrier` spins in most MPI libraries and would take the CPUs the leader
/// measures.
fn sleeping_barrier(comm: &MpiComm) {
    use mpi::ffi;
    // SAFETY: a null request handle is a valid output slot.
    let mut req = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: a valid communicator handle and an output request slot.
    let rc = unsafe { ffi::MPI_Ibarrier(comm.raw(), &mut req) };
    if rc != 0 {
        // the default error handler aborts before this; a barrier that cannot start would
        // leave the ranks out of step, so fall back to the blocking one
        comm.barrier();
        return;
    }
    loop {
        let mut flag: std::os::raw::c_int = 0;
        // SAFETY: the active request from MPI_Ibarrier (MPI sets it to null when done).
        let rc = unsafe { ffi::MPI_Test(&mut req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        if rc != 0 || flag != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_rank_of_each_host_measures_all_its_ranks_cpus() {
        let r = |h: &str, c: &[u32]| (h.to_string(), c.to_vec());
        let ranks = [
            r("a", &[2, 3]),
            r("b", &[0]),
            r("a", &[0, 1]),
            r("b", &[1]),
            r("a", &[1]),
        ];
        assert_eq!(
            leaders(&ranks),
            vec![Some(vec![0, 1, 2, 3]), Some(vec![0, 1]), None, None, None]
        );
        assert!(leaders(&[]).is_empty());
    }
}
