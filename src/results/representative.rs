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

use super::schema::{CaseResult, LaunchRecord, Provenance, ResultsFile, Unrepresentative};
use crate::params::cpulist::{format_cpulist, parse_cpulist};
use crate::params::{BackendKind, Binding, CaseParams};
use std::collections::{BTreeMap, BTreeSet};

/// More busy threads on a host than CPUs it offered the job.
pub(crate) const OVERSUBSCRIBED: &str = "oversubscribed";
/// Several nodes emulated on one host.
pub(crate) const EMULATED_NODES: &str = "emulated_nodes";
/// A binding put more busy threads on a set of cores than it has.
pub(crate) const SHARED_CORES: &str = "shared_cores";
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

/// Every reason `case` (run in `launch`, when known) may not represent its set-up: the case's
/// recorded reasons, those its launch's provenance gives for the case's own thread count
/// (so files written before these were recorded are judged too), and the launch's recorded
/// ones; one per kind, the case's own first. Empty means representative.
pub(crate) fn assess(case: &CaseResult, launch: Option<&LaunchRecord>) -> Vec<Unrepresentative> {
    let threads = case.params.threads_per_device.unwrap_or(1);
    let mut out: Vec<Unrepresentative> = Vec::new();
    let derived = launch.map_or_else(Vec::new, |l| assess_launch(l, threads));
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

/// The reasons a launch's provenance gives when each device runs `threads_per_device` busy
/// threads (1 for collectives). Nothing without provenance (nothing is known).
pub(crate) fn assess_launch(
    launch: &LaunchRecord,
    threads_per_device: u32,
) -> Vec<Unrepresentative> {
    let Some(p) = &launch.provenance else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if p.emulated_nodes && p.nodes > 1 {
        let hosts: BTreeSet<&str> = p.ranks.iter().map(|r| r.host.as_str()).collect();
        out.push(warning(
            EMULATED_NODES,
            format!(
                "{} nodes emulated on {} host(s): ranks are grouped on one machine, so no network lies between the nodes",
                p.nodes,
                hosts.len().max(1)
            ),
        ));
    }
    let groups = busy_groups(p, threads_per_device.max(1));
    let progress = progress_threads(p);
    let mut over = Vec::new();
    for (host, load) in per_host(p, &groups) {
        if load.busy > load.offered {
            over.push(format!(
                "host {host}: {} busy thread(s) ({}) on {} CPU(s) offered ({})",
                load.busy,
                load.why.join(" + "),
                load.offered,
                format_cpulist(&load.cpus)
            ));
        }
    }
    if !over.is_empty() {
        let mut d = over.join("; ");
        if let Some(v) = &progress {
            d.push_str(&format!(" (MPI progress threads counted: {v})"));
        }
        out.push(warning(OVERSUBSCRIBED, d));
    }
    if launch.shape.binding != Binding::None {
        let shared = shared_cores(&groups);
        if !shared.is_empty() {
            out.push(warning(
                SHARED_CORES,
                format!("binding {}: {}", launch.shape.binding, shared.join("; ")),
            ));
        }
    }
    out
}

/// The reasons `params`' own thread count adds to its launch's recorded ones (a GEMM with
/// several threads per device can oversubscribe a launch whose collectives fit).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // used by the run stage
pub(crate) fn case_specific(launch: &LaunchRecord, params: &CaseParams) -> Vec<Unrepresentative> {
    let threads = params.threads_per_device.unwrap_or(1);
    if threads <= 1 {
        return Vec::new();
    }
    assess_launch(launch, threads)
        .into_iter()
        .filter(|w| !launch.unrepresentative.contains(w))
        .collect()
}

/// Threads that keep a CPU busy for the whole case, on a host, allowed on `cpus`.
#[derive(Debug, Clone, PartialEq)]
struct Busy {
    host: String,
    cpus: Vec<u32>,
    threads: u32,
    /// Who they are, for the message (`device 3`, `rank 1`).
    who: String,
}

/// The busy threads of a launch: on the CPU backend each device's driving thread and its GEMM
/// threads; on a GPU backend one host thread per rank (it polls its stream and MPI); plus one
/// asynchronous progress thread per rank where the MPI library was told to start one.
fn busy_groups(p: &Provenance, threads_per_device: u32) -> Vec<Busy> {
    let progress = progress_threads(p).is_some();
    let mut out = Vec::new();
    for r in &p.ranks {
        let rank_cpus = parse_cpulist(&r.cpus).unwrap_or_default();
        match p.backend.kind {
            BackendKind::Cpu if !r.devices.is_empty() => {
                for d in &r.devices {
                    out.push(Busy {
                        host: r.host.clone(),
                        cpus: parse_cpulist(&d.cpus)
                            .filter(|c| !c.is_empty())
                            .unwrap_or_else(|| rank_cpus.clone()),
                        threads: threads_per_device,
                        who: format!("device {}", d.index),
                    });
                }
            }
            _ => out.push(Busy {
                host: r.host.clone(),
                cpus: rank_cpus.clone(),
                threads: 1,
                who: format!("rank {}", r.rank),
            }),
        }
        if progress {
            out.push(Busy {
                host: r.host.clone(),
                cpus: rank_cpus,
                threads: 1,
                who: format!("rank {} progress", r.rank),
            });
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

/// What one host carried.
#[derive(Debug, Default)]
struct HostLoad {
    busy: u32,
    offered: u32,
    cpus: Vec<u32>,
    why: Vec<String>,
}

/// Busy threads per host against the CPUs its ranks were allowed on (the union of their
/// affinity masks: what the launcher or the batch system offered, and the masks of the
/// threads driving their devices: a hybrid rank binds its own thread to its first device's
/// core and its workers to the others, and files written before ranks recorded all their
/// threads' CPUs show only the first), falling back to the host's logical CPU count when no
/// mask was recorded.
fn per_host(p: &Provenance, groups: &[Busy]) -> BTreeMap<String, HostLoad> {
    let mut out: BTreeMap<String, HostLoad> = BTreeMap::new();
    let mut cpus: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for r in &p.ranks {
        let set = cpus.entry(r.host.as_str()).or_default();
        set.extend(parse_cpulist(&r.cpus).unwrap_or_default());
        for d in &r.devices {
            set.extend(parse_cpulist(&d.cpus).unwrap_or_default());
        }
    }
    let mut ranks: BTreeMap<&str, u32> = BTreeMap::new();
    for r in &p.ranks {
        *ranks.entry(r.host.as_str()).or_default() += 1;
    }
    for g in groups {
        let h = out.entry(g.host.clone()).or_default();
        h.busy += g.threads;
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
        let n = ranks.get(host.as_str()).copied().unwrap_or(0);
        let per_rank = h.busy / n.max(1);
        h.why.push(format!("{n} rank(s) × {per_rank} per rank"));
    }
    out
}

/// Sets of overlapping CPU masks on one host that carry more busy threads than CPUs: a
/// binding that stacked devices on the same cores.
fn shared_cores(groups: &[Busy]) -> Vec<String> {
    let mut out = Vec::new();
    let mut hosts: BTreeMap<&str, Vec<&Busy>> = BTreeMap::new();
    for g in groups {
        hosts.entry(g.host.as_str()).or_default().push(g);
    }
    for (host, gs) in hosts {
        // Connected components of "masks overlap", by repeated merging (a host has few).
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
        for (set, threads, mut who) in comps {
            who.sort_by_key(|w| (w.len(), w.clone()));
            if who.len() >= 2 && threads as usize > set.len() {
                let cpus: Vec<u32> = set.into_iter().collect();
                out.push(format!(
                    "host {host}: {} bound to CPU(s) {} ({} CPU(s) for {threads} busy thread(s))",
                    who.join(", "),
                    format_cpulist(&cpus),
                    cpus.len()
                ));
            }
        }
    }
    out
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
                }],
                environment: BTreeMap::new(),
                warnings: vec![],
                buffer_policy: None,
                gemm: None,
            }),
            unrepresentative: vec![],
        }
    }

    fn kinds(w: &[Unrepresentative]) -> Vec<&str> {
        w.iter().map(|x| x.kind.as_str()).collect()
    }

    #[test]
    fn more_busy_threads_than_cpus_is_oversubscribed() {
        let all = |_| "0-1".to_string();
        assert!(assess_launch(&launch(2, 1, "0-1", Binding::None, all), 1).is_empty());
        let w = assess_launch(&launch(4, 1, "0-1", Binding::None, all), 1);
        assert_eq!(kinds(&w), [OVERSUBSCRIBED]);
        assert!(
            w[0].detail.contains("4 busy thread(s)") && w[0].detail.contains("2 CPU(s) offered"),
            "{}",
            w[0].detail
        );
        // Hybrid: one rank, two worker threads on 2 CPUs fits; GEMM threads ×2 do not.
        let hyb = launch(1, 2, "0-1", Binding::None, all);
        assert!(assess_launch(&hyb, 1).is_empty());
        assert_eq!(kinds(&assess_launch(&hyb, 2)), [OVERSUBSCRIBED]);
        // A rank mask narrower than the host is what was offered.
        let narrow = launch(2, 1, "0", Binding::None, |_| "0".into());
        assert_eq!(kinds(&assess_launch(&narrow, 1)), [OVERSUBSCRIBED]);
    }

    #[test]
    fn a_hybrid_rank_is_offered_its_workers_cores() {
        // Bound to a core per device, as older files record it: the rank's own thread on
        // device 0's core, its second worker on the other. 2 busy threads on 2 CPUs.
        let one = launch(1, 2, "0", Binding::Core, |d| d.to_string());
        assert!(
            assess_launch(&one, 1).is_empty(),
            "{:?}",
            assess_launch(&one, 1)
        );
        // Two such ranks (2 emulated nodes) on the same 2 cores: 4 busy threads.
        let two = launch(2, 2, "0", Binding::Core, |d| (d / 2).to_string());
        let w = assess_launch(&two, 1);
        assert!(kinds(&w).contains(&OVERSUBSCRIBED), "{w:?}");
        let over = w.iter().find(|x| x.kind == OVERSUBSCRIBED).unwrap();
        assert!(
            over.detail.contains("4 busy thread(s)") && over.detail.contains("2 CPU(s) offered"),
            "{}",
            over.detail
        );
    }

    #[test]
    fn progress_threads_count() {
        let mut l = launch(2, 1, "0-3", Binding::None, |_| "0-3".into());
        assert!(assess_launch(&l, 1).is_empty());
        l.provenance
            .as_mut()
            .unwrap()
            .environment
            .insert("MPICH_ASYNC_PROGRESS".into(), "1".into());
        // 2 ranks + 2 progress threads on 4 CPUs: still fits; on 3 CPUs it does not.
        assert!(assess_launch(&l, 1).is_empty());
        for r in &mut l.provenance.as_mut().unwrap().ranks {
            r.cpus = "0-2".into();
            for d in &mut r.devices {
                d.cpus = "0-2".into();
            }
        }
        let w = assess_launch(&l, 1);
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
        let w = assess_launch(&l, 1);
        assert_eq!(kinds(&w), [SHARED_CORES]);
        assert!(
            w[0].detail.contains("device 0, device 1"),
            "{}",
            w[0].detail
        );
        // One core each is fine; overlapping masks with room for both are fine.
        assert!(
            assess_launch(&launch(2, 1, "0-1", Binding::Core, |d| d.to_string()), 1).is_empty()
        );
        assert!(assess_launch(&launch(2, 1, "0-1", Binding::Numa, |_| "0-1".into()), 1).is_empty());
    }

    #[test]
    fn emulated_nodes_are_named() {
        let mut l = launch(2, 1, "0-1", Binding::None, |_| "0-1".into());
        let p = l.provenance.as_mut().unwrap();
        p.emulated_nodes = true;
        assert!(
            assess_launch(&l, 1).is_empty(),
            "one node: nothing emulated"
        );
        l.provenance.as_mut().unwrap().nodes = 2;
        assert_eq!(kinds(&assess_launch(&l, 1)), [EMULATED_NODES]);
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

    #[test]
    fn clock_changes_beyond_ten_percent() {
        assert!(frequency_change("h", &[2000.0, 2000.0], &[2100.0, 2150.0]).is_none());
        let w = frequency_change("h", &[3000.0, 3000.0], &[2000.0, 2000.0]).unwrap();
        assert_eq!(w.kind, CPU_FREQUENCY_CHANGED);
        assert!(w.detail.contains("3000 MHz") && w.detail.contains("2000 MHz"));
        assert!(frequency_change("h", &[], &[]).is_none());
    }
}
