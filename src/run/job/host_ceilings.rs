//! Ceilings per launch: once per host, the host's node leader (its lowest rank) reads the
//! host's CPU ceilings (the best instruction set's FMA peak in f32 and f64, STREAM Copy/Triad,
//! the theoretical peak) for the CPUs offered to the launch's ranks there from the host cache
//! (`topology::ceilings::cache`) at the launch's start: a file read, so the start-up (under the
//! watchdog's start-up deadline) measures nothing. After the cases, a leader whose entry is
//! missing, short of rounds, stale or taken under load, or whose launch saw a figure above a
//! measured bound, measures rounds within a time budget and updates the cache, while the
//! host's other ranks wait in a sleeping poll so that they do not take the CPUs measured.

use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::results::ceilings::{Ceiling, HostCeilings, Measurement};
use crate::topology::ceilings::cache::{self, Entry, HostKey, CACHE_DIR_VAR};
use crate::topology::ceilings::{measured_in_rounds, RoundsPlan};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The longest a launch outside a sweep spends measuring ceilings after its cases, seconds
/// (less where `--op-timeout` is short: see [`budget_s`]). A cold cache is filled over a few
/// launches.
pub(super) const AFTER_CASES_BUDGET_S: f64 = 2.0;

/// The measuring budget of a launch whose watchdog limit is `op_timeout_s`: 40 % of the
/// limit, so that the measurement, its estimate's error included, ends well inside the
/// deadline armed over it; in a sweep also at most what it allows (`in_sweep`: a fifth of the
/// launch's wall-time limit), elsewhere at most [`AFTER_CASES_BUDGET_S`], so that a plain
/// `run` stays short. A sweep's first launch measures for all its launches.
/// Pure.
pub(super) fn budget_s(op_timeout_s: f64, in_sweep: Option<f64>) -> f64 {
    let share = 0.4 * op_timeout_s;
    match in_sweep {
        Some(cap) => share.min(cap),
        None => AFTER_CASES_BUDGET_S.min(share),
    }
}

/// `Some(seconds the sweep allows a launch to measure)` when this launch is one of a
/// sweep's ([`cache::SWEEP_VAR`]).
pub(super) fn in_sweep() -> Option<f64> {
    std::env::var(cache::SWEEP_VAR)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

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

/// What a host's leader keeps from the start to the end of the launch.
pub(super) struct Pending {
    host: String,
    key: HostKey,
    cpus: Vec<u32>,
    dir: Option<PathBuf>,
    /// The entry read at the start, with its file.
    entry: Option<(Entry, PathBuf)>,
    /// Why the cache could not be read, if so.
    note: Option<String>,
}

/// Every rank calls this with its host and CPUs; the leaders return their host's ceilings
/// from the cache (none when it has no entry yet; on the CUDA backend with its GPUs'), record
/// the host's network (`net_ceilings`), and keep what the end of the launch needs.
#[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
pub(super) fn at_start(
    comm: &MpiComm,
    host: &str,
    my_cpus: &[u32],
    net: &crate::topology::ceilings::network::Probe,
    backend: crate::params::BackendKind,
) -> (Option<HostCeilings>, Option<Pending>) {
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
    let Some(cpus) = plan.get(rank as usize).cloned().flatten() else {
        return (None, None);
    };
    let t0 = Instant::now();
    let dir = cache_dir();
    let key = HostKey::current(host, &cpus);
    let (entry, note) = match dir.as_deref().map(|d| cache::read(d, &key)) {
        None => (None, Some("no cache directory".to_string())),
        Some(Ok(e)) => (e, None),
        Some(Err(why)) => (None, Some(why.to_string())),
    };
    let mut h = HostCeilings {
        host: host.to_string(),
        rank,
        cpus: crate::params::cpulist::format_cpulist(&cpus),
        seconds: 0.0,
        warnings: Vec::new(),
        counters: Vec::new(),
        ceilings: entry
            .as_ref()
            .map_or(Vec::new(), |(e, _)| e.ceilings.clone()),
        measurement: entry
            .as_ref()
            .map(|(e, f)| cache::measurement(e, true, Some(f), None)),
    };
    super::net_ceilings::at_start(net, &mut h);
    #[cfg(feature = "cuda")]
    if backend == crate::params::BackendKind::Cuda {
        crate::backend::cuda::ceilings::record(&mut h);
    }
    h.seconds = t0.elapsed().as_secs_f64();
    let pending = Pending {
        host: host.to_string(),
        key,
        cpus,
        dir,
        entry,
        note,
    };
    (Some(h), Some(pending))
}

/// A host's CPU ceilings measured after the cases: host, ceilings, measurement, seconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Update {
    pub(super) host: String,
    pub(super) ceilings: Vec<Ceiling>,
    pub(super) measurement: Measurement,
    pub(super) seconds: f64,
}

/// After the cases, on every rank: the leaders whose host needs it ([`cache::wanted`]; rank 0
/// says whether a figure exceeded a measured bound, `above_bound`) measure within `budget_s`
/// and update the cache; rank 0 returns the hosts' new CPU ceilings (empty elsewhere).
pub(super) fn after_cases(
    comm: &MpiComm,
    pending: Option<Pending>,
    above_bound: bool,
    budget_s: f64,
) -> Vec<Update> {
    let mut flag = if comm.is_root() {
        vec![u8::from(above_bound)]
    } else {
        Vec::new()
    };
    comm.broadcast_bytes(&mut flag);
    let above_bound = flag.first() == Some(&1);
    let update = pending.and_then(|p| measure(p, above_bound, budget_s));
    sleeping_barrier(comm);
    let payload = serde_json::to_vec(&update).expect("an update serialises");
    let all = comm.gather_bytes(&payload);
    all.iter()
        .filter_map(|b| serde_json::from_slice::<Option<Update>>(b).ok().flatten())
        .collect()
}

/// A leader's measurement after the cases, if its entry needs one.
fn measure(p: Pending, above_bound: bool, budget_s: f64) -> Option<Update> {
    let now = crate::results::now_unix_s();
    let (old, _) = p.entry.unzip();
    if old.is_some() && in_sweep().is_some() {
        // kept for the whole sweep (its end re-checks it)
        return None;
    }
    let want = cache::wanted(old.as_ref(), now, above_bound)?;
    let t0 = Instant::now();
    let plan = RoundsPlan {
        rounds: want.rounds,
        stream_rounds: want.stream_rounds,
        budget_s: Some(budget_s),
        copy_gbps: old.as_ref().and_then(Entry::copy_gbps),
        ..RoundsPlan::default()
    };
    let fresh = measured_in_rounds(&p.cpus, &plan);
    let added = fresh.rounds.len();
    let e = cache::add_rounds(old, &p.key, fresh, now);
    let (file, kept) = match p.dir.as_deref().map(|d| cache::store(d, &e)) {
        Some(Ok(f)) => (Some(f), None),
        Some(Err(why)) => (None, Some(format!("not cached: {why}"))),
        None => (None, Some("not cached: no cache directory".to_string())),
    };
    let note = [
        p.note.map(|n| format!("cache not read: {n}")),
        Some(format!(
            "{}; this launch added {added} after its cases",
            want.why
        )),
        kept,
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("; ");
    Some(Update {
        host: p.host,
        ceilings: e.ceilings.clone(),
        measurement: cache::measurement(&e, false, file.as_deref(), Some(note)),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Rank 0: the hosts' CPU ceilings replaced by the updates' (their network and GPU ceilings
/// kept), their measurement and seconds with them.
pub(super) fn apply(hosts: &mut [HostCeilings], updates: Vec<Update>) {
    for u in updates {
        let Some(h) = hosts.iter_mut().find(|h| h.host == u.host) else {
            continue;
        };
        h.ceilings.retain(|c| !c.id.starts_with("cpu."));
        h.ceilings.splice(0..0, u.ceilings);
        h.measurement = Some(u.measurement);
        h.seconds += u.seconds;
    }
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
    fn the_budget_stays_inside_the_deadline_and_short_outside_a_sweep() {
        // 2 s --op-timeout (the watchdog tests): 0.8 s, inside the 2 s deadline
        assert_eq!(budget_s(2.0, None), 0.8);
        assert_eq!(budget_s(2.0, Some(24.0)), 0.8);
        // the default limit (600 s + ...): a plain run is held to AFTER_CASES_BUDGET_S, a
        // sweep's launch to a fifth of its wall-time limit (120 s: 24 s)
        assert_eq!(budget_s(600.0, None), AFTER_CASES_BUDGET_S);
        assert_eq!(budget_s(600.0, Some(24.0)), 24.0);
        for t in [0.5, 1.0, 3.0, 10.0, 1e4] {
            assert!(budget_s(t, None) < t && budget_s(t, Some(1e9)) < t);
        }
    }

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
