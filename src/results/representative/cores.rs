//! Who keeps which CPUs busy on each host (device threads, GEMM threads, progress threads),
//! counted per host and per set of shared cores, SMT siblings as one core for compute-bound
//! work.

use super::Load;
use crate::params::cpulist::{format_cpulist, parse_cpulist};
use crate::params::BackendKind;
use crate::results::schema::Provenance;
use crate::units::count;
use std::collections::{BTreeMap, BTreeSet};

/// Environment variables that start an asynchronous MPI progress thread per rank (a busy
/// thread the launch did not ask for), with the values that switch it on.
const PROGRESS_THREAD_ENV: &[&str] = &[
    "MPICH_ASYNC_PROGRESS",
    "I_MPI_ASYNC_PROGRESS",
    "MV2_ASYNC_PROGRESS",
    "OMPI_MCA_opal_async_progress",
];

/// Who keeps a CPU busy, for the per-host sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    /// A device's driving thread and its GEMM threads.
    Device,
    /// ddp_step's progress thread (`progress = thread`).
    Progress,
    /// An MPI library's asynchronous progress thread (switched on by the environment).
    AsyncProgress,
}

/// Threads that keep a CPU busy for the whole case, on a host, allowed on `cpus`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Busy {
    host: String,
    cpus: Vec<u32>,
    threads: u32,
    role: Role,
    /// Who they are, for the message (`device 3`, `rank 1`, `rank 1 progress thread`).
    who: String,
}

/// The busy threads of a launch under `load`: on the CPU backend each device's driving thread
/// and its GEMM threads; on a GPU backend one host thread per rank (it polls its stream and
/// MPI); one progress thread per rank where the case starts one (where the rank recorded it,
/// else on the rank's CPUs); one asynchronous progress thread per rank where the MPI library
/// was told to start one.
pub(super) fn busy_groups(p: &Provenance, load: &Load) -> Vec<Busy> {
    let library_progress = progress_threads(p).is_some();
    let mut out = Vec::new();
    for r in &p.ranks {
        let rank_cpus = parse_cpulist(&r.cpus).unwrap_or_default();
        let mut push = |cpus: Vec<u32>, threads: u32, role: Role, who: String| {
            out.push(Busy {
                host: r.host.clone(),
                cpus,
                threads,
                role,
                who,
            })
        };
        match p.backend.kind {
            BackendKind::Cpu if !r.devices.is_empty() => {
                for d in &r.devices {
                    let cpus = parse_cpulist(&d.cpus)
                        .filter(|c| !c.is_empty())
                        .unwrap_or_else(|| rank_cpus.clone());
                    let who = format!("device {}", d.index);
                    push(cpus, load.threads_per_device, Role::Device, who);
                }
            }
            _ => push(
                rank_cpus.clone(),
                1,
                Role::Device,
                format!("rank {}", r.rank),
            ),
        }
        if load.progress_thread {
            let cpus = r
                .progress_thread
                .as_ref()
                .and_then(|t| parse_cpulist(&t.cpus))
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| rank_cpus.clone());
            let who = format!("rank {} progress thread", r.rank);
            push(cpus, 1, Role::Progress, who);
        }
        if library_progress {
            let who = format!("rank {} MPI progress", r.rank);
            push(rank_cpus, 1, Role::AsyncProgress, who);
        }
    }
    out
}

/// The variable that starts MPI progress threads, when set on (`NAME=value`).
fn progress_threads(p: &Provenance) -> Option<String> {
    PROGRESS_THREAD_ENV.iter().find_map(|k| {
        let v = p.environment.get(*k)?;
        let on = matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "yes" | "on" | "true" | "enable"
        );
        on.then(|| format!("{k}={v}"))
    })
}

/// Each host's SMT sibling groups, as recorded (empty: no SMT, or not recorded).
pub(super) fn smt_groups(p: &Provenance) -> BTreeMap<String, Vec<Vec<u32>>> {
    p.hosts
        .iter()
        .map(|h| {
            let groups = h
                .smt_siblings
                .iter()
                .filter_map(|g| parse_cpulist(g))
                .collect();
            (h.host.clone(), groups)
        })
        .collect()
}

/// Physical cores among `cpus`: CPUs of one sibling group count once.
pub(super) fn cores_of(cpus: &[u32], smt: &[Vec<u32>]) -> u32 {
    let core: BTreeSet<u32> = cpus
        .iter()
        .map(|c| {
            smt.iter()
                .find(|g| g.contains(c))
                .and_then(|g| g.iter().min().copied())
                .unwrap_or(*c)
        })
        .collect();
    core.len() as u32
}

/// What one host carried.
#[derive(Debug, Default)]
pub(super) struct HostCarry {
    pub(super) busy: u32,
    pub(super) offered: u32,
    pub(super) cpus: Vec<u32>,
    pub(super) why: Vec<String>,
}

/// Busy threads per host against the CPUs its ranks were allowed on (the union of their
/// affinity masks: what the launcher or the batch system offered, the masks of the threads
/// driving their devices — a hybrid rank binds its own thread to its first device's core and
/// its workers to the others, and files written before ranks recorded all their threads' CPUs
/// show only the first — and, when the case starts one, its progress thread's), falling back
/// to the host's logical CPU count when no mask was recorded.
pub(super) fn per_host(
    p: &Provenance,
    groups: &[Busy],
    load: &Load,
) -> BTreeMap<String, HostCarry> {
    let mut out: BTreeMap<String, HostCarry> = BTreeMap::new();
    let mut cpus: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for r in &p.ranks {
        let set = cpus.entry(r.host.as_str()).or_default();
        set.extend(parse_cpulist(&r.cpus).unwrap_or_default());
        for d in &r.devices {
            set.extend(parse_cpulist(&d.cpus).unwrap_or_default());
        }
        if let Some(t) = r.progress_thread.as_ref().filter(|_| load.progress_thread) {
            set.extend(parse_cpulist(&t.cpus).unwrap_or_default());
        }
    }
    let mut by_role: BTreeMap<(String, Role), (u32, u32)> = BTreeMap::new();
    for g in groups {
        out.entry(g.host.clone()).or_default().busy += g.threads;
        let e = by_role.entry((g.host.clone(), g.role)).or_default();
        e.0 += 1;
        e.1 += g.threads;
    }
    for ((host, role), (n, threads)) in by_role {
        let text = match role {
            Role::Device if threads > n => {
                let per = threads / n.max(1);
                format!(
                    "{} × {}",
                    crate::units::count(n as usize, "device", "devices"),
                    crate::units::count(per as usize, "thread", "threads")
                )
            }
            Role::Device => crate::units::count(n as usize, "device thread", "device threads"),
            Role::Progress => crate::units::count(
                n as usize,
                "ddp_step progress thread",
                "ddp_step progress threads",
            ),
            Role::AsyncProgress => format!(
                "{}: {}",
                count(n as usize, "MPI progress thread", "MPI progress threads"),
                progress_threads(p).unwrap_or_default()
            ),
        };
        out.entry(host).or_default().why.push(text);
    }
    for (host, h) in &mut out {
        let set = cpus.get(host.as_str()).cloned().unwrap_or_default();
        h.offered = if set.is_empty() {
            p.hosts
                .iter()
                .find(|x| &x.host == host)
                .map_or(0, |x| x.logical_cpus)
        } else {
            set.len() as u32
        };
        h.cpus = set.into_iter().collect();
    }
    out
}

/// Sets of overlapping CPU masks on one host that carry more busy threads than they have CPUs
/// (cores, for compute-bound work): a binding that stacked devices, or a progress thread, on
/// the same cores.
pub(super) fn shared_cores(
    groups: &[Busy],
    smt: &BTreeMap<String, Vec<Vec<u32>>>,
    compute_bound: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut hosts: BTreeMap<&str, Vec<&Busy>> = BTreeMap::new();
    for g in groups {
        hosts.entry(g.host.as_str()).or_default().push(g);
    }
    let no_smt = Vec::new();
    for (host, gs) in hosts {
        let siblings = smt.get(host).unwrap_or(&no_smt);
        for (set, threads, mut who) in components(&gs) {
            who.sort_by_key(|w| (w.len(), w.clone()));
            let cpus: Vec<u32> = set.into_iter().collect();
            let room = if compute_bound {
                cores_of(&cpus, siblings)
            } else {
                cpus.len() as u32
            };
            if who.len() >= 2 && threads > room {
                out.push(format!(
                    "host {host}: {} bound to CPUs {} ({}, {}, for {})",
                    who.join(", "),
                    format_cpulist(&cpus),
                    count(cpus.len(), "CPU", "CPUs"),
                    count(cores_of(&cpus, siblings) as usize, "core", "cores"),
                    count(threads as usize, "busy thread", "busy threads")
                ));
            }
        }
    }
    out
}

/// Connected components of "masks overlap" among one host's busy groups, by repeated merging
/// (a host has few): each component's CPUs, busy threads and members.
fn components(gs: &[&Busy]) -> Vec<(BTreeSet<u32>, u32, Vec<String>)> {
    let mut comps: Vec<(BTreeSet<u32>, u32, Vec<String>)> = Vec::new();
    for g in gs {
        let mut set: BTreeSet<u32> = g.cpus.iter().copied().collect();
        let mut threads = g.threads;
        let mut who = vec![g.who.clone()];
        let mut i = 0;
        while i < comps.len() {
            if !comps[i].0.is_disjoint(&set) {
                let (s, t, w) = comps.swap_remove(i);
                set.extend(s);
                threads += t;
                who.extend(w);
                i = 0;
            } else {
                i += 1;
            }
        }
        comps.push((set, threads, who));
    }
    comps
}
