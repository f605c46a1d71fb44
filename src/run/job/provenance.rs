//! Provenance and host-load recording: what the launch ran on, gathered from every rank, and
//! the transport and host load seen over it.

use super::executor::{Around, Job};
use super::host_ceilings::Pending;
use crate::backend::Backend;
use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::params::ThreadLevel;
use crate::results::ceilings::HostCeilings;
use crate::results::representative;
use crate::results::schema::{
    GemmProvenance, HostInfo, LaunchRecord, LaunchStatus, Provenance, RankInfo,
};
use crate::topology::identity::NodeLayout;
use crate::topology::{self, affinity, load, transport};
use std::collections::BTreeMap;

impl Job<'_> {
    /// The launch's record as it starts (incomplete): shape, launcher, provenance (gathered
    /// from every rank) and what makes it unrepresentative; on a host's leader, what the
    /// ceilings need after the cases.
    pub(super) fn launch_record<B: Backend>(
        &self,
        backend: &B,
        started: f64,
    ) -> (LaunchRecord, Option<Pending>) {
        let (provenance, pending) = gather_provenance(
            self.comm,
            backend,
            self.layout,
            &self.notes,
            self.settings.ceilings,
            self.network,
        );
        let provenance = provenance.map(|mut p| {
            p.buffer_policy = backend.buffer_policy(self.settings.buffer_offset);
            record_thread_level(&mut p, self.thread_level);
            p
        });
        let mut launch = LaunchRecord::starting(
            self.launch_id.clone(),
            self.shape,
            LaunchStatus::Incomplete,
            self.env
                .source
                .map_or("direct".to_string(), |s| s.to_string()),
            self.argv.to_vec(),
            started,
        );
        launch.provenance = provenance;
        launch.unrepresentative =
            representative::assess_launch(&launch, &representative::Load::COLLECTIVE);
        (launch, pending)
    }

    /// After the last case, every rank reports its CPU time and what its process shows of
    /// the transport; rank 0 records the launch's transport and its host's load over the
    /// launch, and judges the launch again with them (co-scheduled launches, a busy host).
    pub(super) fn record_context(
        &self,
        launch: &mut LaunchRecord,
        before: &Around,
        started: f64,
        seen: BTreeMap<u32, (String, f64)>,
    ) {
        let mut after = Around::now(self.comm.is_root());
        if let Some(h) = after.host.as_mut() {
            load::merge_seen(h, seen);
        }
        let mine = (
            transport::probe(),
            after.cpu_s - before.cpu_s,
            std::process::id(),
        );
        let payload = serde_json::to_vec(&mine).expect("probe serialises");
        // Every rank has probed before any rank may go on: a rank whose gather send returns at
        // once would otherwise reach MPI_Finalize and close its TCP connections while a slower
        // rank (rank 0 reads the host's processes first) is still to probe, which then sees
        // them in CLOSE_WAIT and counts no TCP (seen: 1 of 2 ranks in a 2 × 1 Slurm launch).
        self.comm.barrier();
        let all = self.comm.gather_bytes(&payload);
        let (Some(h0), Some(h1)) = (&before.host, &after.host) else {
            return; // not rank 0
        };
        let reports: Vec<(transport::WireProbe, f64, u32)> = all
            .iter()
            .filter_map(|b| serde_json::from_slice(b).ok())
            .collect();
        let host = topology::hostname();
        let mut own_pids = load::own_lineage();
        let mut own_cpu_s = 0.0;
        for (probe, cpu_s, pid) in &reports {
            if probe.host == host {
                own_pids.insert(*pid);
                own_cpu_s += cpu_s;
            }
        }
        let p = launch.provenance.as_ref();
        let open_mpi = p
            .and_then(|p| p.mpi_library.as_deref())
            .is_some_and(|l| l.contains("Open MPI"));
        let mca = if open_mpi {
            let env: BTreeMap<String, String> = topology::environment_lossy(std::env::vars_os())
                .0
                .into_iter()
                .collect();
            transport::resolve_mca(&env, &transport::mca_param_files(&env))
        } else {
            Vec::new()
        };
        let probes: Vec<_> = reports.into_iter().map(|(p, _, _)| p).collect();
        launch.transport = Some(transport::summarise(&probes, mca));
        let cpus = topology::host_info().logical_cpus;
        let window_s = (after.at - started).max(0.0);
        launch.host_load = Some(load::host_load(
            &host, cpus, window_s, h0, h1, own_cpu_s, &own_pids,
        ));
        launch.unrepresentative =
            representative::assess_launch(launch, &representative::Load::COLLECTIVE);
    }
}

/// This rank: where it runs, on which CPUs, with which devices.
fn describe_rank<B: Backend>(rank: u32, backend: &B, layout: &NodeLayout) -> RankInfo {
    let slot = &layout.slots[rank as usize];
    let devices = backend.device_bindings();
    // The process runs where its threads may: this one and, in hybrid mode, its workers.
    let mut cpus = affinity::current_thread_cpus().unwrap_or_default();
    cpus.extend(
        devices
            .iter()
            .flat_map(|d| affinity::parse_cpulist(&d.cpus).unwrap_or_default()),
    );
    RankInfo {
        rank,
        host: topology::hostname(),
        node: slot.node,
        node_name: slot.node_name.clone(),
        local_rank: slot.local_rank,
        pid: std::process::id(),
        cpus: affinity::format_cpulist(&cpus),
        devices,
        progress_thread: backend.progress_thread_binding(),
    }
}

/// Rank 0's GEMM provider, the one recorded; a rank that multiplies differently is a set-up
/// problem, warned about.
pub(super) fn rank0_gemm(
    gemm_by_rank: &[Option<GemmProvenance>],
    warnings: &mut Vec<String>,
) -> Option<GemmProvenance> {
    let gemm = gemm_by_rank.first().cloned().flatten();
    let show = |g: &Option<GemmProvenance>| {
        g.as_ref().map_or("no GEMM provider".to_string(), |g| {
            format!(
                "{} ({})",
                g.provider,
                g.library.as_deref().unwrap_or(&g.version)
            )
        })
    };
    for (r, g) in gemm_by_rank.iter().enumerate().skip(1) {
        if *g != gemm {
            warnings.push(format!(
                "rank {r} multiplies with {}, rank 0 with {}: their GEMM rates are not comparable",
                show(g),
                show(&gemm)
            ));
        }
    }
    gemm
}

/// The thread level asked for and the one MPI provides (`MPI_Query_thread`), with a warning
/// when MPI gives less than asked (a progress thread then cannot start: its cases fail).
fn record_thread_level(p: &mut Provenance, asked: ThreadLevel) {
    let provided = crate::comm::raw::thread_level();
    let provided = ThreadLevel::ALL
        .get(provided as usize)
        .copied()
        .unwrap_or(ThreadLevel::Single);
    if provided < asked {
        p.warnings.push(format!(
            "MPI was asked for thread level {asked} and provides {provided}: cases that need {asked} cannot run"
        ));
    }
    p.mpi_thread_level_requested = Some(asked);
    p.mpi_thread_level = Some(provided);
}

/// What each rank tells rank 0: itself, its host, its warnings, its GEMM provider and, on a
/// host's leader, the host's ceilings.
type RankReport = (
    RankInfo,
    HostInfo,
    Vec<String>,
    Option<GemmProvenance>,
    Option<HostCeilings>,
);

/// Every rank describes itself; rank 0 assembles the provenance. A host's leader also
/// returns what its ceilings need after the cases.
fn gather_provenance<B: Backend>(
    comm: &MpiComm,
    backend: &B,
    layout: &NodeLayout,
    notes: &[String],
    measure_ceilings: bool,
    network: &crate::topology::ceilings::network::Probe,
) -> (Option<Provenance>, Option<Pending>) {
    let me = describe_rank(comm.rank(), backend, layout);
    let (host_ceilings, pending) = if measure_ceilings {
        let cpus = affinity::parse_cpulist(&me.cpus).unwrap_or_default();
        super::host_ceilings::at_start(comm, &me.host, &cpus, network, backend.info().kind)
    } else {
        (None, None)
    };
    let mut warnings = notes.to_vec();
    warnings.extend(backend.warnings());
    let gemm = backend.gemm_provenance();
    let payload = serde_json::to_vec(&(me, topology::host_info(), warnings, gemm, host_ceilings))
        .expect("rank info serialises");
    let all = comm.gather_bytes(&payload);
    if !comm.is_root() {
        return (None, pending);
    }
    let mut ranks = Vec::new();
    let mut hosts: Vec<HostInfo> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut gemm_by_rank = Vec::new();
    let mut ceilings = Vec::new();
    for b in all {
        let (r, h, w, g, c): RankReport =
            serde_json::from_slice(&b).expect("rank info from our own ranks");
        ceilings.extend(c);
        if !hosts.iter().any(|x| x.host == h.host) {
            hosts.push(h);
        }
        ranks.push(r);
        // A warning every rank gives (a stand-in library, a shared setting) is said once;
        // the GEMM-kernel finding once too, with the first rank's measured speed-up.
        for x in w {
            let finding = crate::results::ceilings::split_measured_fix(&x).0;
            if !warnings
                .iter()
                .any(|y: &String| crate::results::ceilings::split_measured_fix(y).0 == finding)
            {
                warnings.push(x);
            }
        }
        gemm_by_rank.push(g);
    }
    let gemm = rank0_gemm(&gemm_by_rank, &mut warnings);
    let (major, minor) = mpi::environment::version();
    let (mut environment, lossy) = topology::captured_process_environment();
    warnings.extend(lossy);
    // main reads the arguments as OS strings and records them as text, as it does here.
    if std::env::args_os().any(|a| a.to_str().is_none()) {
        warnings.push(
            "the command line has an argument that is not UTF-8: command_line records it with U+FFFD in place of its invalid bytes".into(),
        );
    }
    crate::backend::nccl_log::as_the_user_set(&mut environment);
    let p = Provenance {
        world_size: comm.size(),
        devices: backend.total_devices(),
        nodes: layout.nodes,
        emulated_nodes: layout.emulated,
        node_source: layout.source.clone(),
        mpi_library: mpi::environment::library_version().ok().map(|s| {
            s.trim_matches(|c: char| c == '\0' || c.is_whitespace())
                .to_string()
        }),
        mpi_standard: Some(format!("{major}.{minor}")),
        timer: backend.timer_info(),
        backend: backend.info(),
        ranks,
        hosts,
        environment,
        warnings,
        gemm,
        buffer_policy: None,
        mpi_thread_level_requested: None,
        mpi_thread_level: None,
        ceilings,
        ceilings_skipped: (!measure_ceilings)
            .then(|| "not measured: --no-ceilings (spec run.ceilings = false)".to_string()),
    };
    (Some(p), pending)
}
