//! Unit tests of the stages that need no MPI communicator: request resolution, the launch
//! shape check, the device plan without binding, the warnings and records rank 0 builds.

use super::default_op_timeout_s;
use super::device_plan::device_plan;
use super::executor::case_warnings;
use super::provenance::rank0_gemm;
use super::request::{launch_shape, resolve, thread_level, Cases, Launch};
use crate::params::{
    BackendKind, Binding, GemmChoice, GemmProvider, LaunchShape, Placement, ThreadLevel, Topology,
};
use crate::plan::{self, RunOptions};
use crate::results::schema::{GemmProvenance, Unrepresentative};
use crate::run::error::RunError;
use crate::topology::identity::{NodeLayout, NodeSlot};
use std::path::PathBuf;

/// `scalebench run` with the given options.
fn request(options: plan::Request, launch_id: Option<&str>) -> crate::run::Request {
    crate::run::Request {
        cases: crate::run::Cases::Options(Box::new(options)),
        out: None,
        op_timeout_s: None,
        quiet: true,
        launch_id: launch_id.map(str::to_string),
        network: Default::default(),
    }
}

/// The launch `run` with no options resolves to, with its shape changed by `f`.
fn launch(f: impl FnOnce(&mut Launch)) -> Launch {
    let mut l = resolve(&request(plan::Request::default(), None)).expect("defaults resolve");
    f(&mut l);
    l
}

/// `ranks` ranks on `nodes` nodes of one host, filled node by node.
fn layout(nodes: u32, ranks: u32) -> NodeLayout {
    let per_node = ranks / nodes;
    NodeLayout {
        slots: (0..ranks)
            .map(|r| NodeSlot {
                node: r / per_node,
                node_name: format!("n{}", r / per_node),
                local_rank: r % per_node,
                host_share: (0, 1),
            })
            .collect(),
        nodes,
        emulated: false,
        source: "hostname".into(),
    }
}

fn input_error(e: RunError) -> String {
    assert_eq!(e.exit_code(), 2, "expected an input error, got {e:?}");
    e.to_string()
}

#[test]
fn options_resolve_to_their_shape_and_the_requests_launch_id() {
    let opts = plan::Request {
        topology: Topology::Hybrid,
        nodes: Some(2),
        devices_per_node: Some(4),
        emulate_nodes: true,
        placement: Placement::RoundRobin,
        threads_per_device: 3,
        ..plan::Request::default()
    };
    let l = resolve(&request(opts, Some("sweep-7"))).unwrap();
    assert_eq!(l.backend, BackendKind::Cpu);
    assert_eq!(l.topology, Topology::Hybrid);
    assert_eq!((l.nodes, l.devices_per_node), (Some(2), Some(4)));
    assert!(l.emulate_nodes);
    assert_eq!(l.placement, Placement::RoundRobin);
    assert_eq!(l.threads_per_device, 3);
    assert_eq!(l.launch_id.as_deref(), Some("sweep-7"));
    assert!(matches!(l.cases, Cases::Options(_)));
}

#[test]
fn a_missing_plan_file_is_refused_before_mpi_starts() {
    let req = crate::run::Request {
        cases: crate::run::Cases::PlanFile(PathBuf::from("/nonexistent/scalebench/plan.json")),
        ..request(plan::Request::default(), None)
    };
    assert!(resolve(&req).is_err());
}

#[test]
fn an_explicit_thread_level_is_kept_and_none_means_the_lowest_needed() {
    let req = request(plan::Request::default(), None);
    let l = launch(|l| l.settings.thread_level = Some(ThreadLevel::Multiple));
    assert_eq!(thread_level(&l, &req).unwrap(), ThreadLevel::Multiple);
    let l = launch(|l| l.settings.thread_level = None);
    let needed = plan::thread_level_needed(l.backend, l.topology, l.threads_per_device, false);
    assert_eq!(thread_level(&l, &req).unwrap(), needed.0);
}

#[test]
fn pure_shape_takes_devices_per_node_from_the_world() {
    let s = launch_shape(&launch(|_| {}), &layout(1, 4), 4).unwrap();
    assert_eq!(
        (s.nodes, s.devices_per_node, s.topology),
        (1, 4, Topology::Pure)
    );
    let s = launch_shape(&launch(|l| l.nodes = Some(2)), &layout(2, 4), 4).unwrap();
    assert_eq!((s.nodes, s.devices_per_node), (2, 2));
}

#[test]
fn hybrid_shape_needs_one_rank_per_node() {
    let l = launch(|l| l.topology = Topology::Hybrid);
    let s = launch_shape(&l, &layout(1, 1), 1).unwrap();
    assert_eq!((s.nodes, s.devices_per_node), (1, 1));
    let m = input_error(launch_shape(&l, &layout(1, 2), 2).unwrap_err());
    assert!(
        m.starts_with("this job has 2 MPI ranks, but hybrid topology on 1 node × 1 device needs 1: start 1 rank"),
        "{m}"
    );
}

#[test]
fn shape_mismatches_are_input_errors_that_name_the_numbers() {
    let m =
        input_error(launch_shape(&launch(|l| l.nodes = Some(2)), &layout(1, 2), 2).unwrap_err());
    assert!(
        m.starts_with("--nodes 2: this job's ranks run on 1 node (hostname)"),
        "{m}"
    );
    let m = input_error(
        launch_shape(&launch(|l| l.devices_per_node = Some(0)), &layout(1, 2), 2).unwrap_err(),
    );
    assert_eq!(m, "--devices-per-node 0: give at least 1");
    let m = input_error(
        launch_shape(&launch(|l| l.devices_per_node = Some(3)), &layout(1, 2), 2).unwrap_err(),
    );
    assert!(m.contains("needs 3: start 3 ranks (mpirun -np 3)"), "{m}");
}

fn shape(topology: Topology, placement: Placement, nodes: u32, dpn: u32) -> LaunchShape {
    LaunchShape {
        backend: BackendKind::Cpu,
        topology,
        nodes,
        devices_per_node: dpn,
        binding: Binding::None,
        placement,
        nccl_algo: None,
        nccl_proto: None,
    }
}

#[test]
fn an_unbound_device_plan_follows_the_placement() {
    let l = launch(|l| l.threads_per_device = 2);
    // Rank 2 of 2 nodes × 2 devices is node 1's first rank (fill) or node 0's second (round robin).
    let (p, notes) = device_plan(
        &l,
        &shape(Topology::Pure, Placement::Fill, 2, 2),
        &layout(2, 4),
        2,
    )
    .unwrap();
    assert_eq!(p.local_indices, vec![0]);
    assert_eq!(p.worker_cpus, vec![None]);
    assert_eq!((p.devices_per_rank, p.threads_per_device), (1, 2));
    assert_eq!(p.gemm, None);
    assert!(notes.is_empty());
    let (p, _) = device_plan(
        &l,
        &shape(Topology::Pure, Placement::RoundRobin, 2, 2),
        &layout(2, 4),
        2,
    )
    .unwrap();
    assert_eq!(p.local_indices, vec![1]);
}

#[test]
fn a_hybrid_rank_drives_every_device_of_its_node() {
    let (p, _) = device_plan(
        &launch(|_| {}),
        &shape(Topology::Hybrid, Placement::Fill, 2, 4),
        &layout(2, 2),
        1,
    )
    .unwrap();
    assert_eq!(p.local_indices, vec![0, 1, 2, 3]);
    assert_eq!(p.worker_cpus, vec![None; 4]);
    assert_eq!(p.devices_per_rank, 4);
}

#[test]
fn case_warnings_say_each_reason_once() {
    let opts = RunOptions::from_request(&plan::Request::default()).unwrap();
    let cases = plan::expand(&opts, shape(Topology::Pure, Placement::Fill, 1, 2)).unwrap();
    let w = |kind: &str| Unrepresentative {
        kind: kind.into(),
        detail: format!("{kind} detail"),
    };
    let mut rec = crate::run::record(
        &cases[0],
        "l",
        0.0,
        1.0,
        2,
        2,
        Err(crate::workload::CaseError::Skipped("x".into())),
    );
    rec.unrepresentative = vec![w("oversubscribed"), w("shared_cores")];
    let mut said = vec![w("oversubscribed")];
    assert_eq!(
        case_warnings(&rec, &mut said),
        vec![format!(
            "# warning: case {} not representative (shared_cores): shared_cores detail",
            rec.id
        )]
    );
    assert_eq!(said.len(), 2);
    assert!(case_warnings(&rec, &mut said).is_empty());
}

#[test]
fn rank0s_gemm_is_recorded_and_a_different_one_warned_about() {
    let blas = GemmProvenance {
        requested: GemmChoice::Auto,
        provider: GemmProvider::Blas,
        library: Some("/usr/lib/libopenblas.so.0".into()),
        version: "OpenBLAS 0.3".into(),
        threads_per_device: 1,
        library_threads: Some(1),
    };
    let krate = GemmProvenance {
        provider: GemmProvider::GemmCrate,
        library: None,
        version: "gemm crate 0.19".into(),
        ..blas.clone()
    };
    let mut warnings = Vec::new();
    let g = rank0_gemm(
        &[Some(blas.clone()), Some(blas.clone()), Some(krate)],
        &mut warnings,
    );
    assert_eq!(g, Some(blas.clone()));
    assert_eq!(
        warnings,
        vec!["rank 2 multiplies with gemm-crate (gemm crate 0.19), rank 0 with blas (/usr/lib/libopenblas.so.0): their GEMM rates are not comparable".to_string()]
    );
    let mut warnings = Vec::new();
    assert_eq!(rank0_gemm(&[None, Some(blas)], &mut warnings), None);
    assert_eq!(warnings.len(), 1);
    assert!(rank0_gemm(&[], &mut warnings).is_none());
}

#[test]
fn the_default_op_timeout_grows_with_the_time_budget() {
    let mut s = launch(|_| {}).settings;
    s.policy.time_budget_s = 2.0;
    assert_eq!(default_op_timeout_s(&s), 640.0);
}
