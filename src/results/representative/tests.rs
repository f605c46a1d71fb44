//! Launch records built by hand, one reason at a time.

use super::*;
use crate::params::{BackendKind, Binding, CaseParams, Progress, Workload};
use crate::params::{LaunchShape, Placement, Topology};
use crate::results::schema::{
    BackendInfo, DeviceBinding, HostInfo, LaunchStatus, RankInfo, TimerInfo,
};
use crate::results::schema::{HostLoad, LaunchRecord, Provenance, Unrepresentative};
use std::collections::BTreeMap;

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
        nccl_algo: None,
        nccl_proto: None,
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
            ceilings: Vec::new(),
            ceilings_skipped: None,
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
    assert!(assess_launch(&launch(2, 1, "0-1", Binding::Core, |d| d.to_string()), &C).is_empty());
    assert!(assess_launch(&launch(2, 1, "0-1", Binding::Numa, |_| "0-1".into()), &C).is_empty());
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
        include_str!("../../../tests/golden/results-v1.json"),
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
        include_str!("../../../tests/golden/results-v1.json"),
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
        include_str!("../../../tests/golden/results-v1.json"),
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
    assert!(
        w[0].detail
            .contains("2 other scalebench processes (pids 7, 8)")
            && w[0].detail.contains("2.90 CPU-s")
    );
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
    // A launch of 0.03 s: 18 ms of foreign time is within two 10 ms ticks per CPU of
    // /proc/stat, not a busy host (CI at 0dc21b4 said "0.60 CPUs" here) ...
    let mut short = busy_host(0.018, &[]);
    short.window_s = 0.03;
    assert!(co_scheduling(&short, 2).is_empty());
    // ... while a whole CPU's worth over the same window is seen.
    short.other_cpu_s = 0.06;
    assert_eq!(kinds(&co_scheduling(&short, 2)), [HOST_BUSY]);
    // Through the launch's assessment, which counts its busy threads itself.
    let mut l = launch(2, 1, "0-1", Binding::None, |d| d.to_string());
    l.host_load = Some(busy_host(3.0, &[(7, 2.9)]));
    assert_eq!(kinds(&assess_launch(&l, &C)), [CO_SCHEDULED, HOST_BUSY]);
}
