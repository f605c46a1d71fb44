//! Request resolution: the launch a `run` request asks for (options or a plan file), its MPI
//! thread level, and the launch shape checked against the world we got. Pure: no MPI here.

use crate::params::{
    BackendKind, Binding, CaseParams, LaunchShape, NcclAlgo, NcclProto, Placement, ThreadLevel,
    Topology,
};
use crate::plan::{self, LaunchPlan, RunOptions};
use crate::run::error::{Result, RunError};
use crate::topology::binding::Reserved;
use crate::topology::identity::NodeLayout;
use crate::workload::RunSettings;

/// Where the cases come from, once read.
pub(super) enum Cases {
    /// Expanded from `run`'s options once the launch shape is known.
    Options(Box<RunOptions>),
    /// Given by a launch plan.
    Plan(Vec<CaseParams>),
}

/// One launch, resolved from the options or a plan file.
pub(super) struct Launch {
    pub(super) backend: BackendKind,
    pub(super) topology: Topology,
    pub(super) nodes: Option<u32>,
    pub(super) devices_per_node: Option<u32>,
    pub(super) placement: Placement,
    pub(super) binding: Binding,
    pub(super) reserved: Reserved,
    /// The site's GPU → NUMA node map from the plan (empty: PCI locality).
    pub(super) gpu_numa: Vec<u32>,
    pub(super) emulate_nodes: bool,
    pub(super) threads_per_device: u32,
    pub(super) settings: RunSettings,
    pub(super) cases: Cases,
    pub(super) launch_id: Option<String>,
    /// NCCL_ALGO / NCCL_PROTO forced on the whole launch.
    pub(super) nccl_algo: Option<NcclAlgo>,
    pub(super) nccl_proto: Option<NcclProto>,
}

pub(super) fn resolve(req: &crate::run::Request) -> Result<Launch> {
    let args = match &req.cases {
        crate::run::Cases::Options(a) => a,
        crate::run::Cases::PlanFile(path) => {
            let p = LaunchPlan::read(path)?;
            return Ok(Launch {
                backend: p.shape.backend,
                topology: p.shape.topology,
                nodes: Some(p.shape.nodes),
                devices_per_node: Some(p.shape.devices_per_node),
                placement: p.shape.placement,
                binding: p.shape.binding,
                reserved: p.reserved_cores,
                gpu_numa: p.gpu_numa,
                emulate_nodes: p.emulate_nodes,
                threads_per_device: p.threads_per_device,
                settings: p.settings,
                cases: Cases::Plan(p.cases),
                launch_id: Some(p.launch_id),
                nccl_algo: p.shape.nccl_algo,
                nccl_proto: p.shape.nccl_proto,
            });
        }
    };
    let opts = RunOptions::from_request(args)?;
    Ok(Launch {
        backend: args.backend,
        topology: args.topology,
        nodes: args.nodes,
        devices_per_node: args.devices_per_node,
        placement: args.placement,
        binding: args.binding,
        reserved: args.reserved_cores.clone(),
        gpu_numa: Vec::new(),
        emulate_nodes: args.emulate_nodes,
        threads_per_device: args.threads_per_device,
        settings: opts.settings.clone(),
        cases: Cases::Options(Box::new(opts)),
        launch_id: req.launch_id.clone(),
        nccl_algo: args.nccl_algo,
        nccl_proto: args.nccl_proto,
    })
}

/// The MPI thread level of this launch: the one its options or plan give (a sweep gives all
/// its launches one), else the lowest its cases need; below what they need is an input error.
pub(super) fn thread_level(req: &Launch, request: &crate::run::Request) -> Result<ThreadLevel> {
    let progress_thread = match &req.cases {
        Cases::Options(o) => o.uses_progress_thread(),
        Cases::Plan(c) => plan::cases_use_progress_thread(c),
    };
    let needed = plan::thread_level_needed(
        req.backend,
        req.topology,
        req.threads_per_device,
        progress_thread,
    );
    let option = match &request.cases {
        crate::run::Cases::PlanFile(path) => format!("--plan {}: thread_level", path.display()),
        crate::run::Cases::Options(_) => "--thread-level".to_string(),
    };
    Ok(plan::resolve_thread_level(
        req.settings.thread_level,
        needed,
        &option,
    )?)
}

/// The launch shape from the request and the world we got; a mismatch is an input error that
/// names both numbers.
pub(super) fn launch_shape(req: &Launch, layout: &NodeLayout, size: u32) -> Result<LaunchShape> {
    let nodes = req.nodes.unwrap_or(layout.nodes);
    if nodes != layout.nodes {
        return Err(RunError::Nodes {
            nodes,
            found: layout.nodes,
            from: layout.source.clone(),
        });
    }
    let dpn = match req.topology {
        Topology::Pure => req.devices_per_node.unwrap_or(size / nodes.max(1)),
        Topology::Hybrid => req.devices_per_node.unwrap_or(1),
    };
    if dpn == 0 {
        return Err(RunError::NoDevices);
    }
    let expected = match req.topology {
        Topology::Pure => nodes * dpn,
        Topology::Hybrid => nodes,
    };
    if expected != size {
        return Err(RunError::Ranks {
            size,
            topology: req.topology,
            nodes,
            devices_per_node: dpn,
            expected,
        });
    }
    Ok(LaunchShape {
        backend: req.backend,
        topology: req.topology,
        nodes,
        devices_per_node: dpn,
        binding: req.binding,
        placement: req.placement,
        nccl_algo: req.nccl_algo,
        nccl_proto: req.nccl_proto,
    })
}
