//! The watchdog of `scalebench links`: one thread per rank, armed before `MPI_Init` and again
//! for each round, that ends a rank stuck past `--op-timeout` with one sentence instead of a
//! silent hang. The run's watchdog (`run::watchdog`) starts after `MPI_Init` and ends the job
//! with `MPI_Abort`; here the hang to catch is the start-up itself (emulated nodes of one
//! host whose Open MPI shared memory collides: `srun -N 2 --ntasks-per-node=2` by hand), where
//! MPI may not be up, so the rank says why and leaves with `_exit(4)`: the launcher (srun,
//! mpirun) then ends the rest of the job.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Exit status of a rank the deadline ended (a runtime failure, as the run's watchdog).
const EXIT_DEADLINE: i32 = 4;

/// How often the thread looks at the deadline.
const TICK: Duration = Duration::from_millis(250);

/// How much later than rank 0 the other ranks leave: rank 0 says the sentence before a peer's
/// exit makes the launcher or Open MPI end it with their own words.
const OTHERS_LATER: Duration = Duration::from_secs(3);

struct Armed {
    what: String,
    since: Instant,
    limit: Duration,
}

/// The rank's deadline; dropping it stops nothing (the thread ends with the process).
pub(crate) struct Deadline {
    shared: Arc<(Mutex<Option<Armed>>, Condvar)>,
}

/// This process's rank as its launcher set it, known before `MPI_Init`.
pub(super) fn launcher_rank() -> Option<u32> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
        "PMI_RANK",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok()?.parse().ok())
}

/// Pure: the one sentence a stuck rank says. `node`: Slurm's node name where it differs from
/// the host's (an emulated node), which is when Open MPI's shared memory can collide.
pub(crate) fn sentence(
    what: &str,
    limit: Duration,
    rank: Option<u32>,
    node: Option<&str>,
) -> String {
    let who = rank.map_or(String::new(), |r| format!(" (rank {r})"));
    let hint = match node {
        Some(n) => format!(
            "; node {n} is emulated on one host, where Open MPI's shared memory of two nodes can collide: run through the local-slurm profile's wrapper, or set OMPI_MCA_btl=self,tcp with OMPI_MCA_btl_tcp_if_include=lo (docs/links.md)"
        ),
        None => "; a rank that never reached it, a dead peer or a blocked network keeps the others waiting: raise --op-timeout if the exchange is only slow".to_string(),
    };
    format!(
        "scalebench links: {what} did not finish within {} s{who}, so the rank ended itself (exit {EXIT_DEADLINE}){hint}.",
        limit.as_secs_f64()
    )
}

/// Slurm's node name when it is not this host's short name (an emulated node).
fn emulated_node() -> Option<String> {
    let node = std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|n| !n.is_empty())?;
    let host = crate::topology::hostname();
    let short = host.split('.').next().unwrap_or(&host).to_string();
    (node.split('.').next() != Some(short.as_str())).then_some(node)
}

impl Deadline {
    /// Starts the thread (before `MPI_Init`: it calls nothing of MPI).
    pub(crate) fn start() -> Deadline {
        let shared: Arc<(Mutex<Option<Armed>>, Condvar)> =
            Arc::new((Mutex::new(None), Condvar::new()));
        let s = Arc::clone(&shared);
        let rank = launcher_rank();
        let node = emulated_node();
        let speaks = rank.is_none_or(|r| r == 0);
        let later = if speaks { Duration::ZERO } else { OTHERS_LATER };
        // A thread that cannot start leaves the rank as it was before the deadline existed.
        let _ = std::thread::Builder::new()
            .name("scalebench-links-deadline".into())
            .spawn(move || loop {
                let (lock, wake) = &*s;
                let g = lock
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let (g, _) = wake
                    .wait_timeout(g, TICK)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(a) = g.as_ref().filter(|a| a.since.elapsed() >= a.limit + later) {
                    // One sentence for the job: rank 0 (or a rank that does not know its
                    // rank) says it; the others leave quietly, a little later.
                    if speaks {
                        eprintln!("{}", sentence(&a.what, a.limit, rank, node.as_deref()));
                    }
                    // _exit: MPI may be half started; its exit handlers could block again.
                    // SAFETY: _exit takes no pointer and never returns.
                    unsafe { libc::_exit(EXIT_DEADLINE) };
                }
            });
        Deadline { shared }
    }

    /// Expects `what` to finish within `limit` from now.
    pub(crate) fn arm(&self, what: String, limit: Duration) {
        *self.lock() = Some(Armed {
            what,
            since: Instant::now(),
            limit,
        });
    }

    pub(crate) fn disarm(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Armed>> {
        self.shared
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_names_what_hung_the_limit_and_the_collision_on_emulated_nodes() {
        let s = sentence(
            "the start-up (MPI_Init and the node names)",
            Duration::from_secs(20),
            Some(0),
            Some("n1"),
        );
        assert!(
            s.starts_with("scalebench links: the start-up (MPI_Init and the node names) did not finish within 20 s (rank 0)"),
            "{s}"
        );
        assert!(
            s.contains("node n1 is emulated") && s.contains("OMPI_MCA_btl=self,tcp"),
            "{s}"
        );
        assert_eq!(s.matches(". ").count(), 0, "one sentence: {s}");
        let s = sentence("round 3 of 7", Duration::from_millis(1500), None, None);
        assert!(
            s.contains("within 1.5 s, so") && s.contains("--op-timeout"),
            "{s}"
        );
    }
}
