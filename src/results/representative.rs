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
use crate::params::cpulist::format_cpulist;
use crate::params::{Binding, CaseParams, Progress, Workload};
use crate::units::count;
use std::collections::BTreeSet;

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

// The reasons and the entry points here; who keeps which CPUs busy (threads, cores, SMT) in
// [`cores`]; what other work on the host and its clock say in [`host_load`].
mod cores;
mod host_load;
#[cfg(test)]
mod tests;

use cores::{busy_groups, cores_of, per_host, shared_cores, smt_groups};
pub(crate) use host_load::co_scheduling;
#[cfg_attr(not(feature = "mpi"), allow(unused_imports))] // used by the run stage
pub(crate) use host_load::frequency_change;

/// The CPU clock changed by more than [`FREQUENCY_CHANGE`] while the case ran.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // used by the run stage
pub(crate) const CPU_FREQUENCY_CHANGED: &str = "cpu_frequency_changed";

/// A relative change of the CPU clock between the start and the end of a case above this
/// makes the case unrepresentative (turbo and power states move clocks by 10–40 %).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // used by the run stage
pub(crate) const FREQUENCY_CHANGE: f64 = 0.10;

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
    assess(case, file.launch_of(case))
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
