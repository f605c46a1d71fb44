//! Whether a launch's or case's measurements can represent the set-up they name, as pure
//! functions over what the results file records (provenance, shape, parameters).
//!
//! A measurement stops describing its topology when the machine could not run it as asked:
//! more busy threads than the CPUs a host offered (busy-polling MPI ranks then take turns on a
//! core, and a "winner" is whoever was descheduled less), nodes emulated on one host (no
//! network between them), a binding that put several devices' threads on one core, or a CPU
//! clock that changed while a case ran. Each such reason is a named [`Unrepresentative`];
//! `report` leaves these cases out of winners, scaling efficiencies and fits unless asked, and
//! `compare` can say the same about either side ([`assess`] is the one entry point).

use super::schema::{
    CaseResult, HostLoad, LaunchRecord, Provenance, ResultsFile, Unrepresentative,
};
use crate::params::cpulist::{format_cpulist, parse_cpulist};
use crate::params::{BackendKind, Binding, CaseParams, Progress, Workload};
use crate::units::count;
use std::collections::{BTreeMap, BTreeSet};

/// More busy threads on a host than CPUs it offered the job.
pub(crate) const OVERSUBSCRIBED: &str = "oversubscribed";
/// Several nodes emulated on one host.
pub(crate) const EMULATED_NODES: &str = "emulated_nodes";
/// A binding put more busy threads on a set of cores than it has.
pub(crate) const SHARED_CORES: &str = "shared_cores";
/// Other scalebench processes (another launch of this study, another study) used CPU on the
/// host while the launch ran.
pub(crate) const CO_SCHEDULED: &str = "co_scheduled";
/// Other processes kept more CPUs busy, on average over the launch, than it left free.
pub(crate) const HOST_BUSY: &str = "host_busy";
/// Foreign work beyond the free CPUs, in CPUs on average, that makes a host busy: a quarter of
/// a CPU taken from a busy-polling rank already shows as noise in its small messages.
const FOREIGN_MARGIN_CPUS: f64 = 0.25;
/// Other scalebench processes count as co-scheduled from this share of a CPU over the window.
const CO_SCHEDULED_SHARE: f64 = 0.10;
/// Another launch's rank (`scalebench run`) counts from this much CPU in the window, however
/// short its overlap was: its ranks busy-poll, so any overlap competes (seen in CI: a launch of
/// ~1 s inside a 5.4 s window used 0.52 CPU-s, under the share).
const CO_SCHEDULED_RANK_CPU_S: f64 = 0.05;

/// Whether `command` is a launch's rank (`… scalebench run …`), not a driver such as `sweep`.
fn is_rank(command: &str) -> bool {
    command.split_whitespace().nth(1) == Some("run")
}

/// The CPU clock changed by more than [`FREQUENCY_CHANGE`] while the case ran.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // used by the run stage
pub(crate) const CPU_FREQUENCY_CHANGED: &str = "cpu_frequency_changed";

/// A relative change of the CPU clock between the start and the end of a case above this
/// makes the case unrepresentative (turbo and power states move clocks by 10–40 %).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // used by the run stage
pub(crate) const FREQUENCY_CHANGE: f64 = 0.10;

/// Environment variables that start an asynchronous MPI progress thread per rank (a busy
/// thread the launch did not ask for), with the values that switch it on.
const PROGRESS_THREAD_ENV: &[&str] = &[
    "MPICH_ASYNC_PROGRESS",
    "I_MPI_ASYNC_PROGRESS",
    "MV2_ASYNC_PROGRESS",
    "OMPI_MCA_opal_async_progress",
];

fn warning(kind: &str, detail: String) -> Unrepresentative {
    Unrepresentative {
        kind: kind.to_string(),
        detail,
    }
}

/// What a case keeps busy besides one thread per device: what [`assess_launch`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Load {
    /// Busy threads per device: a GEMM's threads for cases that multiply (the library's own
    /// count where it reported one), else 1 (the thread driving the device).
    pub threads_per_device: u32,
    /// One MPI progress thread per rank (ddp_step with `progress = thread`).
    pub progress_thread: bool,
    /// Compute-bound (GEMM, ddp_step): SMT siblings offer one core's throughput, so the
    /// capacity is physical cores, not logical CPUs.
    pub compute_bound: bool,
}

impl Load {
    /// A launch's collectives: one busy thread per device, latency-bound.
    pub(crate) const COLLECTIVE: Load = Load {
        threads_per_device: 1,
        progress_thread: false,
        compute_bound: false,
    };

    /// What `params` keeps busy, with the GEMM thread count its launch's provenance reports.
    pub(crate) fn of(params: &CaseParams, p: Option<&Provenance>) -> Load {
        if params.workload.is_collective() {
            return Load::COLLECTIVE;
        }
        let asked = params.threads_per_device.unwrap_or(1).max(1);
        let library = p
            .and_then(|p| p.gemm.as_ref())
            .and_then(|g| g.library_threads);
        Load {
            threads_per_device: library.unwrap_or(asked).max(1),
            progress_thread: params.workload == Workload::DdpStep
                && params.progress == Some(Progress::Thread),
            compute_bound: true,
        }
    }
}

/// Every reason `case` (run in `launch`, when known) may not represent its set-up: the case's
/// recorded reasons, those its launch's provenance gives for what the case keeps busy
/// ([`Load::of`], so files written before these were recorded are judged too), and the
/// launch's recorded ones; one per kind, the case's own first. Empty means representative.
pub(crate) fn assess(case: &CaseResult, launch: Option<&LaunchRecord>) -> Vec<Unrepresentative> {
    let mut out: Vec<Unrepresentative> = Vec::new();
    let derived = launch.map_or_else(Vec::new, |l| {
        assess_launch(l, &Load::of(&case.params, l.provenance.as_ref()))
    });
    let recorded = launch.map_or(&[][..], |l| l.unrepresentative.as_slice());
    for w in case.unrepresentative.iter().chain(&derived).chain(recorded) {
        if !out.iter().any(|x| x.kind == w.kind) {
            out.push(w.clone());
        }
    }
    out
}

/// [`assess`] for a case of `file`, with the launch it ran in looked up by id (the last
/// record of that launch, as `report` does).
pub(crate) fn assess_in(file: &ResultsFile, case: &CaseResult) -> Vec<Unrepresentative> {
    let launch = file
        .launches
        .iter()
        .rev()
        .find(|l| l.launch_id == case.launch_id);
    assess(case, launch)
}

/// Whether nothing makes `case` unrepresentative ([`assess`] is empty).
#[cfg(test)]
pub(crate) fn is_representative(case: &CaseResult, launch: Option<&LaunchRecord>) -> bool {
    assess(case, launch).is_empty()
}

/// The reasons a launch's provenance gives when its cases keep `load` busy
/// ([`Load::COLLECTIVE`] for the launch itself). Nothing without provenance (nothing is known).
pub(crate) fn assess_launch(launch: &LaunchRecord, load: &Load) -> Vec<Unrepresentative> {
    let Some(p) = &launch.provenance else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if p.emulated_nodes && p.nodes > 1 {
        let hosts: BTreeSet<&str> = p.ranks.iter().map(|r| r.host.as_str()).collect();
        out.push(warning(
            EMULATED_NODES,
            format!(
                "{} nodes emulated on {}: ranks are grouped on one machine, so no network lies between the nodes",
                p.nodes,
                count(hosts.len().max(1), "host", "hosts")
            ),
        ));
    }
    let groups = busy_groups(p, load);
    let smt = smt_groups(p);
    let mut over = Vec::new();
    let hosts = per_host(p, &groups, load);
    if let Some(h) = &launch.host_load {
        let busy = hosts.get(&h.host).map_or(0, |x| x.busy);
        out.extend(co_scheduling(h, busy));
    }
    for (host, h) in hosts {
        let no_smt = Vec::new();
        let cores = cores_of(&h.cpus, smt.get(&host).unwrap_or(&no_smt));
        let offered = if load.compute_bound && !h.cpus.is_empty() {
            cores
        } else {
            h.offered
        };
        if h.busy > offered {
            let unit = if load.compute_bound && cores < h.offered {
                format!(
                    "; {}, SMT siblings counted as one for compute-bound work",
                    count(cores as usize, "physical core", "physical cores")
                )
            } else {
                format!(
                    "; {}",
                    count(cores as usize, "physical core", "physical cores")
                )
            };
            over.push(format!(
                "host {host}: {} ({}) on {} offered ({}{unit})",
                count(h.busy as usize, "busy thread", "busy threads"),
                h.why.join(" + "),
                count(h.offered as usize, "CPU", "CPUs"),
                format_cpulist(&h.cpus)
            ));
        }
    }
    if !over.is_empty() {
        out.push(warning(OVERSUBSCRIBED, over.join("; ")));
    }
    if launch.shape.binding != Binding::None || load.progress_thread {
        let shared = shared_cores(&groups, &smt, load.compute_bound);
        if !shared.is_empty() {
            out.push(warning(
                SHARED_CORES,
                format!("binding {}: {}", launch.shape.binding, shared.join("; ")),
            ));
        }
    }
    out
}

/// What other work on the host while a launch ran says (its ranks keep `busy` threads busy
/// there): other scalebench processes that used CPU in the window, and foreign CPU time above
/// what the launch left free (logical CPUs − busy threads, plus [`FOREIGN_MARGIN_CPUS`]).
pub(crate) fn co_scheduling(h: &HostLoad, busy: u32) -> Vec<Unrepresentative> {
    let mut out = Vec::new();
    if h.window_s <= 0.0 {
        return out;
    }
    let others: f64 = h.other_scalebench.iter().map(|o| o.cpu_s).sum();
    let rank_cpu_s: f64 = h
        .other_scalebench
        .iter()
        .filter(|o| is_rank(&o.command))
        .map(|o| o.cpu_s)
        .sum();
    if !h.other_scalebench.is_empty()
        && (others >= CO_SCHEDULED_SHARE * h.window_s || rank_cpu_s >= CO_SCHEDULED_RANK_CPU_S)
    {
        let pids: Vec<String> = h
            .other_scalebench
            .iter()
            .map(|o| o.pid.to_string())
            .collect();
        out.push(warning(
            CO_SCHEDULED,
            format!(
                "host {}: {} other scalebench process(es) (pid {}) used {:.2} CPU-s during this launch's {:.2} s",
                h.host,
                h.other_scalebench.len(),
                pids.join(", "),
                others,
                h.window_s
            ),
        ));
    }
    let foreign = h.other_cpu_s / h.window_s;
    let free = h.logical_cpus as f64 - busy as f64;
    if foreign > free.max(0.0) + FOREIGN_MARGIN_CPUS {
        out.push(warning(
            HOST_BUSY,
            format!(
                "host {}: other processes kept {foreign:.2} CPUs busy on average over {:.2} s, while this launch's {} left {:.0} of {} free",
                h.host,
                h.window_s,
                count(busy as usize, "busy thread", "busy threads"),
                free.max(0.0),
                count(h.logical_cpus as usize, "CPU", "CPUs")
            ),
        ));
    }
    out
}

/// The reasons `params` adds to its launch's recorded ones (a GEMM with several threads per
/// device, or ddp_step's progress thread, can oversubscribe a launch whose collectives fit).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // used by the run stage
pub(crate) fn case_specific(launch: &LaunchRecord, params: &CaseParams) -> Vec<Unrepresentative> {
    let load = Load::of(params, launch.provenance.as_ref());
    if load == Load::COLLECTIVE {
        return Vec::new();
    }
    assess_launch(launch, &load)
        .into_iter()
        .filter(|w| !launch.unrepresentative.contains(w))
        .collect()
}

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
struct Busy {
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
fn busy_groups(p: &Provenance, load: &Load) -> Vec<Busy> {
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
fn smt_groups(p: &Provenance) -> BTreeMap<String, Vec<Vec<u32>>> {
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
fn cores_of(cpus: &[u32], smt: &[Vec<u32>]) -> u32 {
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
struct HostCarry {
    busy: u32,
    offered: u32,
    cpus: Vec<u32>,
    why: Vec<String>,
}

/// Busy threads per host against the CPUs its ranks were allowed on (the union of their
/// affinity masks: what the launcher or the batch system offered, the masks of the threads
/// driving their devices — a hybrid rank binds its own thread to its first device's core and
/// its workers to the others, and files written before ranks recorded all their threads' CPUs
/// show only the first — and, when the case starts one, its progress thread's), falling back
/// to the host's logical CPU count when no mask was recorded.
fn per_host(p: &Provenance, groups: &[Busy], load: &Load) -> BTreeMap<String, HostCarry> {
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
fn shared_cores(
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

/// The CPU clock's change over a case, from per-CPU readings (MHz, same CPUs in the same
/// order) at its start and end: a warning when the median clock moved by more than
/// [`FREQUENCY_CHANGE`] of the lower one. `None` when unreadable (no readings) or steady.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // used by the run stage
pub(crate) fn frequency_change(
    host: &str,
    start_mhz: &[f64],
    end_mhz: &[f64],
) -> Option<Unrepresentative> {
    let a = crate::stats::median(start_mhz)?;
    let b = crate::stats::median(end_mhz)?;
    let lo = a.min(b);
    if lo.is_nan() || lo <= 0.0 || !a.is_finite() || !b.is_finite() {
        return None;
    }
    ((a - b).abs() / lo > FREQUENCY_CHANGE).then(|| {
        warning(
            CPU_FREQUENCY_CHANGED,
            format!("host {host}: median CPU clock {a:.0} MHz at the start of the case, {b:.0} MHz at its end"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{LaunchShape, Placement, Topology};
    use crate::results::schema::{
        BackendInfo, DeviceBinding, HostInfo, LaunchStatus, RankInfo, TimerInfo,
    };

    /// A launch of `ranks` ranks on one host with `cpus` CPUs; each rank drives `per_rank`
    /// devices whose masks `device_cpus` gives (device index → cpulist).
    // Long because it spells out a whole launch record, one field a line: a flat fixture.
    fn launch(
        ranks: u32,
        per_rank: u32,
        cpus: &str,
        binding: Binding,
        device_cpus: impl Fn(u32) -> String,
    ) -> LaunchRecord {
        let shape = LaunchShape {
            backend: BackendKind::Cpu,
            topology: if per_rank > 1 {
                Topology::Hybrid
            } else {
                Topology::Pure
            },
            nodes: 1,
            devices_per_node: ranks * per_rank,
            binding,
            placement: Placement::Fill,
        };
        let ranks: Vec<RankInfo> = (0..ranks)
            .map(|r| RankInfo {
                rank: r,
                host: "h".into(),
                node: 0,
                node_name: "h".into(),
                local_rank: r,
                pid: 100 + r,
                cpus: cpus.into(),
                devices: (0..per_rank)
                    .map(|d| {
                        let index = r * per_rank + d;
                        DeviceBinding {
                            index,
                            local_index: index,
                            cpus: device_cpus(index),
                            name: "cpu".into(),
                        }
                    })
                    .collect(),
                progress_thread: None,
            })
            .collect();
        LaunchRecord {
            launch_id: shape.id(),
            shape,
            status: LaunchStatus::Ok,
            launcher: "mpirun".into(),
            command_line: vec![],
            started_unix_s: 0.0,
            finished_unix_s: None,
            wall_s: None,
            overhead_s: None,
            stderr_tail: None,
            provenance: Some(Provenance {
                world_size: ranks.len() as u32,
                devices: ranks.len() as u32 * per_rank,
                nodes: 1,
                emulated_nodes: false,
                node_source: "hostname".into(),
                mpi_library: None,
                mpi_standard: None,
                timer: TimerInfo {
                    source: "test".into(),
                    resolution_s: 1e-9,
                },
                backend: BackendInfo {
                    kind: BackendKind::Cpu,
                    detail: String::new(),
                },
                ranks,
                hosts: vec![HostInfo {
                    host: "h".into(),
                    cpu_model: "test".into(),
                    logical_cpus: 2,
                    physical_cores: Some(2),
                    memory_bytes: 1,
                    copy_flags: None,
                    libc: None,
                    smt_siblings: vec![],
                }],
                environment: BTreeMap::new(),
                warnings: vec![],
                buffer_policy: None,
                gemm: None,
                mpi_thread_level_requested: None,
                mpi_thread_level: None,
            }),
            unrepresentative: vec![],
            transport: None,
            host_load: None,
        }
    }

    const C: Load = Load::COLLECTIVE;

    /// A GEMM case's load with `t` threads per device.
    fn gemm(t: u32) -> Load {
        Load {
            threads_per_device: t,
            progress_thread: false,
            compute_bound: true,
        }
    }

    fn kinds(w: &[Unrepresentative]) -> Vec<&str> {
        w.iter().map(|x| x.kind.as_str()).collect()
    }

    #[test]
    fn more_busy_threads_than_cpus_is_oversubscribed() {
        let all = |_| "0-1".to_string();
        assert!(assess_launch(&launch(2, 1, "0-1", Binding::None, all), &C).is_empty());
        let w = assess_launch(&launch(4, 1, "0-1", Binding::None, all), &C);
        assert_eq!(kinds(&w), [OVERSUBSCRIBED]);
        assert!(
            w[0].detail.contains("4 busy threads") && w[0].detail.contains("2 CPUs offered"),
            "{}",
            w[0].detail
        );
        // Hybrid: one rank, two worker threads on 2 CPUs fits; GEMM threads ×2 do not.
        let hyb = launch(1, 2, "0-1", Binding::None, all);
        assert!(assess_launch(&hyb, &C).is_empty());
        assert_eq!(kinds(&assess_launch(&hyb, &gemm(2))), [OVERSUBSCRIBED]);
        // A rank mask narrower than the host is what was offered.
        let narrow = launch(2, 1, "0", Binding::None, |_| "0".into());
        assert_eq!(kinds(&assess_launch(&narrow, &C)), [OVERSUBSCRIBED]);
    }

    #[test]
    fn a_hybrid_rank_is_offered_its_workers_cores() {
        // Bound to a core per device, as older files record it: the rank's own thread on
        // device 0's core, its second worker on the other. 2 busy threads on 2 CPUs.
        let one = launch(1, 2, "0", Binding::Core, |d| d.to_string());
        assert!(
            assess_launch(&one, &C).is_empty(),
            "{:?}",
            assess_launch(&one, &C)
        );
        // Two such ranks (2 emulated nodes) on the same 2 cores: 4 busy threads.
        let two = launch(2, 2, "0", Binding::Core, |d| (d / 2).to_string());
        let w = assess_launch(&two, &C);
        assert!(kinds(&w).contains(&OVERSUBSCRIBED), "{w:?}");
        let over = w.iter().find(|x| x.kind == OVERSUBSCRIBED).unwrap();
        assert!(
            over.detail.contains("4 busy threads") && over.detail.contains("2 CPUs offered"),
            "{}",
            over.detail
        );
    }

    #[test]
    fn progress_threads_count() {
        let mut l = launch(2, 1, "0-3", Binding::None, |_| "0-3".into());
        assert!(assess_launch(&l, &C).is_empty());
        l.provenance
            .as_mut()
            .unwrap()
            .environment
            .insert("MPICH_ASYNC_PROGRESS".into(), "1".into());
        // 2 ranks + 2 progress threads on 4 CPUs: still fits; on 3 CPUs it does not.
        assert!(assess_launch(&l, &C).is_empty());
        for r in &mut l.provenance.as_mut().unwrap().ranks {
            r.cpus = "0-2".into();
            for d in &mut r.devices {
                d.cpus = "0-2".into();
            }
        }
        let w = assess_launch(&l, &C);
        assert_eq!(kinds(&w), [OVERSUBSCRIBED]);
        assert!(
            w[0].detail.contains("MPICH_ASYNC_PROGRESS=1"),
            "{}",
            w[0].detail
        );
    }

    #[test]
    fn two_devices_bound_to_one_core_share_it() {
        // 2 ranks on 2 CPUs, both bound to CPU 0: the host fits, the binding does not.
        let l = launch(2, 1, "0-1", Binding::Core, |_| "0".into());
        let w = assess_launch(&l, &C);
        assert_eq!(kinds(&w), [SHARED_CORES]);
        assert!(
            w[0].detail.contains("device 0, device 1"),
            "{}",
            w[0].detail
        );
        // One core each is fine; overlapping masks with room for both are fine.
        assert!(
            assess_launch(&launch(2, 1, "0-1", Binding::Core, |d| d.to_string()), &C).is_empty()
        );
        assert!(
            assess_launch(&launch(2, 1, "0-1", Binding::Numa, |_| "0-1".into()), &C).is_empty()
        );
    }

    #[test]
    fn emulated_nodes_are_named() {
        let mut l = launch(2, 1, "0-1", Binding::None, |_| "0-1".into());
        let p = l.provenance.as_mut().unwrap();
        p.emulated_nodes = true;
        assert!(
            assess_launch(&l, &C).is_empty(),
            "one node: nothing emulated"
        );
        l.provenance.as_mut().unwrap().nodes = 2;
        assert_eq!(kinds(&assess_launch(&l, &C)), [EMULATED_NODES]);
    }

    #[test]
    fn a_case_unites_its_own_and_its_launch_reasons_once_per_kind() {
        let l = launch(4, 1, "0-1", Binding::None, |_| "0-1".into());
        let file = crate::results::io::parse_results(
            std::path::Path::new("golden"),
            include_str!("../../tests/golden/results-v1.json"),
        )
        .unwrap();
        let mut c = file.cases[0].clone();
        assert!(is_representative(&c, None));
        c.unrepresentative
            .push(warning(CPU_FREQUENCY_CHANGED, "x".into()));
        let mut rec = l.clone();
        rec.unrepresentative
            .push(warning(OVERSUBSCRIBED, "recorded".into()));
        let w = assess(&c, Some(&rec));
        assert_eq!(kinds(&w), [CPU_FREQUENCY_CHANGED, OVERSUBSCRIBED]);
        // derived from the provenance before the recorded text
        assert_ne!(w[1].detail, "recorded");
        assert!(!is_representative(&c, Some(&l)));
        // Looked up in a file by the case's launch id.
        let mut f = file.clone();
        f.launches = vec![l.clone()];
        c.launch_id = l.launch_id.clone();
        c.unrepresentative.clear();
        assert_eq!(kinds(&assess_in(&f, &c)), [OVERSUBSCRIBED]);
        assert!(assess_in(&file, &file.cases[0]).is_empty());
    }

    /// ddp_step with `progress`, as a case of the golden file.
    fn ddp_case(progress: Progress) -> CaseParams {
        let file = crate::results::io::parse_results(
            std::path::Path::new("golden"),
            include_str!("../../tests/golden/results-v1.json"),
        )
        .unwrap();
        let mut p = file.cases[0].params.clone();
        p.workload = Workload::DdpStep;
        p.progress = Some(progress);
        p.threads_per_device = Some(1);
        p
    }

    #[test]
    fn the_ddp_progress_thread_is_counted_and_named() {
        // 2 ranks on 2 CPUs (mpirun --bind-to none): 2 device threads fit, 2 progress
        // threads more do not; with progress=test nothing is added.
        let l = launch(2, 1, "0-1", Binding::None, |_| "0-1".into());
        let thread = Load::of(&ddp_case(Progress::Thread), l.provenance.as_ref());
        assert!(thread.progress_thread && thread.compute_bound);
        let w = assess_launch(&l, &thread);
        assert!(kinds(&w).contains(&OVERSUBSCRIBED), "{w:?}");
        let over = &w.iter().find(|x| x.kind == OVERSUBSCRIBED).unwrap().detail;
        assert!(
            over.contains("4 busy threads (2 device threads + 2 ddp_step progress threads)")
                && over.contains("2 CPUs offered"),
            "{over}"
        );
        let test = Load::of(&ddp_case(Progress::Test), l.provenance.as_ref());
        assert!(assess_launch(&l, &test).is_empty());
        assert_eq!(case_specific(&l, &ddp_case(Progress::Test)), vec![]);
        assert!(!case_specific(&l, &ddp_case(Progress::Thread)).is_empty());
        // A rank bound to one CPU whose progress thread shares it: named as sharing.
        let mut one = launch(1, 1, "0", Binding::Core, |_| "0".into());
        one.provenance.as_mut().unwrap().ranks[0].progress_thread =
            Some(crate::results::schema::ProgressThreadBinding {
                cpus: "0".into(),
                spare: false,
            });
        let w = assess_launch(&one, &thread);
        let shared = &w.iter().find(|x| x.kind == SHARED_CORES).unwrap().detail;
        assert!(shared.contains("rank 0 progress thread"), "{shared}");
        // Bound to a spare core of its rank: nothing to say.
        let mut spare = launch(1, 1, "0-1", Binding::Core, |_| "0".into());
        spare.provenance.as_mut().unwrap().ranks[0].progress_thread =
            Some(crate::results::schema::ProgressThreadBinding {
                cpus: "1".into(),
                spare: true,
            });
        assert!(
            assess_launch(&spare, &thread).is_empty(),
            "{:?}",
            assess_launch(&spare, &thread)
        );
    }

    #[test]
    fn smt_siblings_are_one_core_for_compute_bound_work() {
        // CPUs 0 and 1 are one core's two hardware threads.
        let mut l = launch(2, 1, "0-1", Binding::None, |_| "0-1".into());
        l.provenance.as_mut().unwrap().hosts[0].smt_siblings = vec!["0-1".into()];
        // Two busy-polling collectives fit two logical CPUs.
        assert!(assess_launch(&l, &C).is_empty());
        // Two single-threaded GEMMs do not fit one core; both counts are said.
        let w = assess_launch(&l, &gemm(1));
        assert_eq!(kinds(&w), [OVERSUBSCRIBED]);
        assert!(
            w[0].detail
                .contains("on 2 CPUs offered (0-1; 1 physical core, SMT siblings counted as one"),
            "{}",
            w[0].detail
        );
        // Without SMT the same GEMMs fit.
        l.provenance.as_mut().unwrap().hosts[0].smt_siblings.clear();
        assert!(assess_launch(&l, &gemm(1)).is_empty());
    }

    #[test]
    fn the_blas_thread_count_it_reported_is_the_one_counted() {
        let mut l = launch(1, 1, "0-3", Binding::None, |_| "0-3".into());
        let mut p = ddp_case(Progress::Test);
        p.workload = Workload::Matmul;
        p.progress = None;
        // Asked for 1 thread; the library says it runs 8: 8 busy threads on 4 CPUs.
        l.provenance.as_mut().unwrap().gemm = Some(crate::results::schema::GemmProvenance {
            requested: crate::params::GemmChoice::Blas,
            provider: crate::params::GemmProvider::Blas,
            library: Some("libopenblas.so".into()),
            version: "OpenBLAS".into(),
            threads_per_device: 1,
            library_threads: Some(8),
        });
        assert_eq!(Load::of(&p, l.provenance.as_ref()).threads_per_device, 8);
        let w = case_specific(&l, &p);
        assert_eq!(kinds(&w), [OVERSUBSCRIBED]);
        assert!(
            w[0].detail.contains("1 device × 8 threads"),
            "{}",
            w[0].detail
        );
        // Collectives do not run the GEMM: its threads are not theirs.
        assert_eq!(Load::of(&file_case(), l.provenance.as_ref()), C);
    }

    /// The golden file's first case (a collective).
    fn file_case() -> CaseParams {
        let file = crate::results::io::parse_results(
            std::path::Path::new("golden"),
            include_str!("../../tests/golden/results-v1.json"),
        )
        .unwrap();
        file.cases[0].params.clone()
    }

    #[test]
    fn clock_changes_beyond_ten_percent() {
        assert!(frequency_change("h", &[2000.0, 2000.0], &[2100.0, 2150.0]).is_none());
        let w = frequency_change("h", &[3000.0, 3000.0], &[2000.0, 2000.0]).unwrap();
        assert_eq!(w.kind, CPU_FREQUENCY_CHANGED);
        assert!(w.detail.contains("3000 MHz") && w.detail.contains("2000 MHz"));
        assert!(frequency_change("h", &[], &[]).is_none());
    }

    fn busy_host(other_cpu_s: f64, others: &[(u32, f64)]) -> HostLoad {
        HostLoad {
            host: "h".into(),
            window_s: 2.0,
            logical_cpus: 2,
            loadavg_1m_before: Some(0.5),
            loadavg_1m_after: Some(2.5),
            busy_cpu_s: 4.0,
            steal_cpu_s: 0.0,
            own_cpu_s: 4.0 - other_cpu_s,
            other_cpu_s,
            other_scalebench: others
                .iter()
                .map(|(pid, cpu_s)| crate::results::schema::OtherProcess {
                    pid: *pid,
                    command: "scalebench run".into(),
                    cpu_s: *cpu_s,
                })
                .collect(),
        }
    }

    #[test]
    fn other_launches_and_a_busy_host_are_named() {
        // Two busy threads on two CPUs: nothing is free; 0.2 CPU of foreign work is noise.
        assert!(co_scheduling(&busy_host(0.4, &[]), 2).is_empty());
        let w = co_scheduling(&busy_host(0.6, &[]), 2);
        assert_eq!(kinds(&w), [HOST_BUSY]);
        assert!(w[0].detail.contains("0.30 CPUs"), "{}", w[0].detail);
        // One busy thread leaves a CPU: the same foreign work fits.
        assert!(co_scheduling(&busy_host(0.6, &[]), 1).is_empty());
        // Another launch's ranks: co-scheduled, and their CPU makes the host busy too.
        let w = co_scheduling(&busy_host(3.0, &[(7, 1.4), (8, 1.5)]), 2);
        assert_eq!(kinds(&w), [CO_SCHEDULED, HOST_BUSY]);
        assert!(w[0].detail.contains("pid 7, 8") && w[0].detail.contains("2.90 CPU-s"));
        // An idle scalebench (a sweep's parent waiting) is not another launch.
        let mut idle = busy_host(0.1, &[(9, 0.1)]);
        idle.other_scalebench[0].command = "/x/scalebench sweep s.toml".into();
        assert!(co_scheduling(&idle, 1).is_empty());
        // Another launch's rank seen briefly (0.52 CPU-s of a 5.4 s window, under the share):
        // co-scheduled all the same.
        let mut brief = busy_host(0.6, &[(10, 0.52)]);
        brief.window_s = 5.4;
        brief.other_scalebench[0].command = "/x/scalebench run -q -w allreduce".into();
        assert_eq!(kinds(&co_scheduling(&brief, 1)), [CO_SCHEDULED]);
        // ... but not a driver using as little
        brief.other_scalebench[0].command = "/x/scalebench sweep s.toml".into();
        assert!(co_scheduling(&brief, 1).is_empty());
        // Through the launch's assessment, which counts its busy threads itself.
        let mut l = launch(2, 1, "0-1", Binding::None, |d| d.to_string());
        l.host_load = Some(busy_host(3.0, &[(7, 2.9)]));
        assert_eq!(kinds(&assess_launch(&l, &C)), [CO_SCHEDULED, HOST_BUSY]);
    }
}
