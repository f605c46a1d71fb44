//! Expanding a sweep spec into launches and cases.
//!
//! The product of the spec's factors (single axes and zip groups) is enumerated in a fixed
//! order whatever the file's layout: launch-level axes outermost (so each launch's cases are
//! contiguous), then workload, type, operator, root, timing and GEMM settings, with sizes and
//! in-place innermost as nccl-tests loops. A zip group sits where its earliest axis would.
//! Exclusions drop combinations; each combination
//! becomes one case (axes that do not apply to its workload are ignored, and the duplicates
//! that creates are dropped by case id). Cases sharing an allocation shape (backend, nodes,
//! devices per node, topology, binding, placement, GEMM threads) form one launch.

use super::LaunchPlan;
use crate::config::{limits, Axis, AxisValue, SpecError, SweepSpec};
use crate::params::counts::{counts, CountError};
use crate::params::{
    BackendKind, Binding, BufferUse, CaseParams, Collect, Dtype, LaunchShape, MatmulShape,
    NcclAlgo, NcclProto, Placement, Progress, ReduceOp, Scaling, Timing, Topology, Workload,
};
use crate::units::parse_size_list;
use std::collections::{HashMap, HashSet};

/// A whole sweep: its launches, each with its cases, and its links steps (`[links]`).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlan {
    pub launches: Vec<LaunchPlan>,
    /// One per set-up (nodes × ranks per node) when the spec has `[links]`, in plan order.
    pub links: Vec<LinksSetup>,
}

/// One `scalebench links` step: the set-up it measures. A link matrix depends on which ranks
/// exchange over which nodes, not on what the launches measure, so every launch with these
/// nodes and ranks per node shares one step (the first one's launcher runs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinksSetup {
    /// The step's directory under the run's `links/`: `n2-ppn4` (nodes, processes per node).
    pub id: String,
    pub nodes: u32,
    pub ranks_per_node: u32,
    /// The first launch of this set-up.
    pub launch_id: String,
    /// Why the step cannot run in this set-up (one rank: nothing to pair); `None`: it runs.
    pub skipped: Option<String>,
}

impl LinksSetup {
    pub fn ranks(&self) -> u32 {
        self.nodes.saturating_mul(self.ranks_per_node)
    }

    /// `2 nodes × 4 ranks per node`.
    pub fn label(&self) -> String {
        format!(
            "{} × {} per node",
            crate::units::count(self.nodes as usize, "node", "nodes"),
            crate::units::count(self.ranks_per_node as usize, "rank", "ranks")
        )
    }
}

/// The links steps of a plan's launches: one per distinct (nodes, ranks per node), in order.
pub fn links_setups(spec: &SweepSpec, launches: &[LaunchPlan]) -> Vec<LinksSetup> {
    let Some(step) = &spec.links else {
        return Vec::new();
    };
    let mut out: Vec<LinksSetup> = Vec::new();
    for l in launches {
        let (nodes, rpn) = (l.shape.nodes, l.shape.ranks_per_node());
        if out
            .iter()
            .any(|s| s.nodes == nodes && s.ranks_per_node == rpn)
        {
            continue;
        }
        let skipped = if nodes.saturating_mul(rpn) < 2 {
            Some("one rank: no pair to measure".to_string())
        } else if step.schedule == crate::config::LinksSchedule::Rail && nodes < 2 {
            Some("one node: the rail schedule pairs ranks of different nodes".to_string())
        } else {
            None
        };
        out.push(LinksSetup {
            id: format!("n{nodes}-ppn{rpn}"),
            nodes,
            ranks_per_node: rpn,
            launch_id: l.launch_id.clone(),
            skipped,
        });
    }
    out
}

impl SweepPlan {
    pub fn case_count(&self) -> usize {
        self.launches.iter().map(|l| l.cases.len()).sum()
    }
}

/// One combination of axis values.
#[derive(Debug, Clone)]
struct Point {
    backend: BackendKind,
    nodes: u32,
    devices_per_node: u32,
    topology: Topology,
    binding: Binding,
    placement: Placement,
    threads: u32,
    workload: Workload,
    size: u64,
    dtype: Dtype,
    op: ReduceOp,
    root: u32,
    timing: Timing,
    in_place: bool,
    shape: MatmulShape,
    scaling: Scaling,
    batch: u32,
    collect: Collect,
    fault: Option<String>,
    model: String,
    bucket: u64,
    first_bucket: u64,
    progress: Progress,
    nccl_algo: Option<NcclAlgo>,
    nccl_proto: Option<NcclProto>,
    buffers: BufferUse,
    /// Whether the spec gave `batch` (ddp_step's default differs from batch_matmul's).
    batch_given: bool,
    /// Whether the spec gave `bucket_sizes` / `first_bucket_sizes` (PyTorch's first-bucket
    /// rule, [`crate::plan::first_bucket_default`]).
    bucket_given: bool,
    first_bucket_given: bool,
}

impl Default for Point {
    fn default() -> Self {
        Point {
            backend: BackendKind::Cpu,
            nodes: 1,
            devices_per_node: 1,
            topology: Topology::Pure,
            binding: Binding::None,
            placement: Placement::Fill,
            threads: 1,
            workload: Workload::Allreduce,
            size: 8,
            dtype: Dtype::F32,
            op: ReduceOp::Sum,
            root: 0,
            timing: Timing::Pipelined,
            in_place: false,
            shape: MatmulShape::square(1024),
            scaling: Scaling::Weak,
            batch: 4,
            collect: Collect::Gather,
            fault: None,
            model: crate::params::ddp::DEFAULT_MODEL.to_string(),
            bucket: crate::params::ddp::DEFAULT_BUCKET_BYTES,
            first_bucket: crate::params::ddp::DEFAULT_FIRST_BUCKET_BYTES,
            progress: Progress::Thread,
            nccl_algo: None,
            nccl_proto: None,
            buffers: BufferUse::Reuse,
            batch_given: false,
            bucket_given: false,
            first_bucket_given: false,
        }
    }
}

impl Point {
    fn set(&mut self, axis: Axis, v: &AxisValue) {
        match (axis, v) {
            (Axis::Backend, AxisValue::Backend(x)) => self.backend = *x,
            (Axis::Nodes, AxisValue::Count(x)) => self.nodes = *x,
            (Axis::DevicesPerNode, AxisValue::Count(x)) => self.devices_per_node = *x,
            (Axis::Topology, AxisValue::Topology(x)) => self.topology = *x,
            (Axis::Binding, AxisValue::Binding(x)) => self.binding = *x,
            (Axis::Placement, AxisValue::Placement(x)) => self.placement = *x,
            (Axis::ThreadsPerDevice, AxisValue::Count(x)) => self.threads = *x,
            (Axis::Workloads, AxisValue::Workload(x)) => self.workload = *x,
            (Axis::Sizes, AxisValue::Bytes(x)) => self.size = *x,
            (Axis::Dtypes, AxisValue::Dtype(x)) => self.dtype = *x,
            (Axis::Ops, AxisValue::Op(x)) => self.op = *x,
            (Axis::Roots, AxisValue::Count(x)) => self.root = *x,
            (Axis::Timing, AxisValue::Timing(x)) => self.timing = *x,
            (Axis::InPlace, AxisValue::InPlace(x)) => self.in_place = *x,
            (Axis::Dims, AxisValue::Shape(x)) => self.shape = *x,
            (Axis::Scaling, AxisValue::Scaling(x)) => self.scaling = *x,
            (Axis::Batch, AxisValue::Count(x)) => {
                self.batch = *x;
                self.batch_given = true;
            }
            (Axis::Models, AxisValue::Model(x)) => self.model = x.clone(),
            (Axis::BucketSizes, AxisValue::Bytes(x)) => {
                self.bucket = *x;
                self.bucket_given = true;
            }
            (Axis::FirstBucketSizes, AxisValue::Bytes(x)) => {
                self.first_bucket = *x;
                self.first_bucket_given = true;
            }
            (Axis::Progress, AxisValue::Progress(x)) => self.progress = *x,
            (Axis::Collect, AxisValue::Collect(x)) => self.collect = *x,
            (Axis::Fault, AxisValue::Fault(x)) => self.fault = x.clone(),
            (Axis::NcclAlgo, AxisValue::NcclAlgo(x)) => self.nccl_algo = *x,
            (Axis::NcclProto, AxisValue::NcclProto(x)) => self.nccl_proto = *x,
            (Axis::Buffers, AxisValue::Buffers(x)) => self.buffers = *x,
            (a, v) => unreachable!("axis {a:?} never holds {v:?}"),
        }
    }

    fn get(&self, axis: Axis) -> AxisValue {
        match axis {
            Axis::Backend => AxisValue::Backend(self.backend),
            Axis::Nodes => AxisValue::Count(self.nodes),
            Axis::DevicesPerNode => AxisValue::Count(self.devices_per_node),
            Axis::Topology => AxisValue::Topology(self.topology),
            Axis::Binding => AxisValue::Binding(self.binding),
            Axis::Placement => AxisValue::Placement(self.placement),
            Axis::ThreadsPerDevice => AxisValue::Count(self.threads),
            Axis::Workloads => AxisValue::Workload(self.workload),
            Axis::Sizes => AxisValue::Bytes(self.size),
            Axis::Dtypes => AxisValue::Dtype(self.dtype),
            Axis::Ops => AxisValue::Op(self.op),
            Axis::Roots => AxisValue::Count(self.root),
            Axis::Timing => AxisValue::Timing(self.timing),
            Axis::InPlace => AxisValue::InPlace(self.in_place),
            Axis::Dims => AxisValue::Shape(self.shape),
            Axis::Scaling => AxisValue::Scaling(self.scaling),
            Axis::Batch => AxisValue::Count(self.batch),
            Axis::Collect => AxisValue::Collect(self.collect),
            Axis::Fault => AxisValue::Fault(self.fault.clone()),
            Axis::Models => AxisValue::Model(self.model.clone()),
            Axis::BucketSizes => AxisValue::Bytes(self.bucket),
            Axis::FirstBucketSizes => AxisValue::Bytes(self.first_bucket),
            Axis::Progress => AxisValue::Progress(self.progress),
            Axis::NcclAlgo => AxisValue::NcclAlgo(self.nccl_algo),
            Axis::NcclProto => AxisValue::NcclProto(self.nccl_proto),
            Axis::Buffers => AxisValue::Buffers(self.buffers),
        }
    }

    fn shape(&self) -> LaunchShape {
        LaunchShape {
            backend: self.backend,
            topology: self.topology,
            nodes: self.nodes,
            devices_per_node: self.devices_per_node,
            binding: self.binding,
            placement: self.placement,
            nccl_algo: self.nccl_algo,
            nccl_proto: self.nccl_proto,
        }
    }

    fn case(&self) -> CaseParams {
        let w = self.workload;
        let coll = w.is_collective();
        let ddp = w == Workload::DdpStep;
        let cpu = self.backend == BackendKind::Cpu;
        let in_place = super::in_place_only(w, self.backend) || self.in_place;
        CaseParams {
            workload: w,
            backend: self.backend,
            topology: self.topology,
            nodes: self.nodes,
            devices_per_node: self.devices_per_node,
            binding: self.binding,
            placement: self.placement,
            timing: self.timing,
            dtype: self.dtype,
            op: w.has_op().then_some(self.op),
            root: w.has_root().then_some(self.root),
            in_place: coll.then_some(in_place),
            requested_bytes: coll.then_some(self.size),
            shape: (!coll && !ddp).then_some(self.shape),
            batch: match w {
                Workload::BatchMatmul => Some(self.batch),
                Workload::DdpStep if self.batch_given => Some(self.batch),
                Workload::DdpStep => Some(crate::params::ddp::DEFAULT_BATCH),
                _ => None,
            },
            collect: (w == Workload::BatchMatmul).then_some(self.collect),
            scaling: (!coll).then_some(self.scaling),
            threads_per_device: (!coll && cpu).then_some(self.threads),
            fault: self.fault.clone(),
            model: ddp.then(|| self.model.clone()),
            bucket_bytes: ddp.then_some(self.bucket),
            first_bucket_bytes: ddp.then_some(if self.first_bucket_given {
                self.first_bucket
            } else {
                crate::plan::first_bucket_default(self.bucket_given)
            }),
            progress: (ddp && cpu).then_some(self.progress),
            // Every case of a forced launch carries it: it is the launch's environment.
            nccl_algo: self.nccl_algo,
            nccl_proto: self.nccl_proto,
            // Reuse is the default and unnamed (ids as before the axis); collectives only.
            buffers: (coll && self.buffers == BufferUse::Rotate).then_some(BufferUse::Rotate),
            // replay cases come from `scalebench replay` (plan::replay_case), not the axes.
            trace: None,
            trace_sha256: None,
            compute: None,
        }
    }
}

/// The default values of axes a spec leaves out that have more than one value.
fn implicit_dims(spec: &SweepSpec) -> Vec<crate::config::Dim> {
    let given: HashSet<Axis> = spec
        .dims
        .iter()
        .flat_map(|d| d.axes.iter().copied())
        .collect();
    let mut out = Vec::new();
    if !given.contains(&Axis::Sizes) {
        let sizes = parse_size_list("8B:4MiB:x4").expect("default sizes parse");
        out.push(crate::config::Dim {
            axes: vec![Axis::Sizes],
            tuples: sizes
                .into_iter()
                .map(|b| vec![AxisValue::Bytes(b.get())])
                .collect(),
        });
    }
    if !given.contains(&Axis::InPlace) {
        out.push(crate::config::Dim {
            axes: vec![Axis::InPlace],
            tuples: vec![
                vec![AxisValue::InPlace(false)],
                vec![AxisValue::InPlace(true)],
            ],
        });
    }
    out
}

/// Expands a spec into launches. Errors point at the axis that makes a case impossible.
pub fn expand(spec: &SweepSpec) -> Result<SweepPlan, SpecError> {
    let dims = ordered_dims(spec);
    let radix: Vec<usize> = dims.iter().map(|d| d.tuples.len()).collect();
    let combinations = check_combinations(spec, &dims)?;
    let mut cases_so_far = 0usize;
    let mut idx = vec![0usize; dims.len()];
    let mut seen: HashSet<u64> = HashSet::new();
    let mut launches: Vec<LaunchPlan> = Vec::new();
    let mut by_key: HashMap<(LaunchShape, u32), usize> = HashMap::new();
    let mut checked: HashSet<(Workload, u64, Dtype, u32)> = HashSet::new();
    for _ in 0..combinations {
        let p = point(&dims, &idx);
        advance(&mut idx, &radix);
        if spec
            .excludes
            .iter()
            .any(|e| e.rules.iter().all(|(a, vals)| vals.contains(&p.get(*a))))
        {
            continue;
        }
        let case = p.case();
        let id = crate::params::fnv1a64(case.canonical().as_bytes());
        if !seen.insert(id) {
            continue;
        }
        limits::shape(
            p.nodes,
            p.devices_per_node,
            p.threads,
            ["nodes", "devices_per_node", "threads_per_device"],
        )
        .map_err(|m| spec.error_at(Axis::DevicesPerNode, m.to_string()))?;
        cases_so_far += 1;
        if cases_so_far > limits::MAX_CASES {
            return Err(spec.error_at(
                Axis::Sizes,
                format!(
                    "the spec expands to more than {} cases (the limit of one plan): split it into several specs, or [[exclude]] combinations (limits are listed in README.md, \"Limits\")",
                    limits::MAX_CASES
                ),
            ));
        }
        check_point(spec, &p, &mut checked)?;
        let at = *by_key.entry((p.shape(), p.threads)).or_insert_with(|| {
            launches.push(new_launch(spec, &p));
            launches.len() - 1
        });
        launches[at].cases.push(case);
    }
    if launches.is_empty() {
        return Err(SpecError {
            path: spec.path.clone(),
            line: 1,
            column: 1,
            key: Some("exclude".into()),
            message: format!(
                "the [[exclude]] rules drop all {}, so there is nothing to run: exclude less",
                crate::units::count(combinations, "combination", "combinations")
            ),
        });
    }
    one_thread_level(spec, &mut launches)?;
    check_cases(spec, &launches)?;
    let links = links_setups(spec, &launches);
    Ok(SweepPlan { launches, links })
}

/// What would fail only when a launch runs ([`super::checks`]), refused at its axis.
fn check_cases(spec: &SweepSpec, launches: &[LaunchPlan]) -> Result<(), SpecError> {
    let mut checker = super::checks::CaseChecker::for_this_host(spec.settings.buffer_offset);
    for c in launches.iter().flat_map(|l| &l.cases) {
        checker.check(c).map_err(|p| {
            use super::checks::CheckKey;
            let axis = match p.key {
                CheckKey::Batch => Axis::Batch,
                CheckKey::Model => Axis::Models,
                CheckKey::BufferOffset | CheckKey::Workload => Axis::Workloads,
            };
            let what = match p.key {
                CheckKey::BufferOffset => "run.buffer_offset",
                _ => "",
            };
            let sep = if what.is_empty() { "" } else { ": " };
            spec.error_at(axis, format!("{what}{sep}{}", p.message))
        })?;
    }
    Ok(())
}

/// Gives every launch of a study one MPI thread level: the spec's `run.thread_level`, or
/// the highest any launch needs (see [`super::resolve_thread_level`] for why one level).
fn one_thread_level(spec: &SweepSpec, launches: &mut [LaunchPlan]) -> Result<(), SpecError> {
    let needs: Vec<_> = launches
        .iter()
        .map(|l| {
            super::thread_level_needed(
                l.shape.backend,
                l.shape.topology,
                l.threads_per_device,
                super::cases_use_progress_thread(&l.cases),
            )
        })
        .collect();
    let Some(highest) = needs.iter().max_by_key(|n| n.0).copied() else {
        return Ok(());
    };
    let level =
        super::resolve_thread_level(spec.settings.thread_level, highest, "run.thread_level")
            .map_err(|e| {
                let at = spec.text.find("thread_level").unwrap_or(0);
                spec.error_at_offset(at, "run.thread_level", e.to_string())
            })?;
    for l in launches {
        l.settings.thread_level = Some(level);
    }
    Ok(())
}

/// The spec's factors and the implicit ones, in expansion order.
fn ordered_dims(spec: &SweepSpec) -> Vec<crate::config::Dim> {
    let mut dims = spec.dims.clone();
    dims.extend(implicit_dims(spec));
    // The order lives with the axis list (config), so a new axis must be given a place there.
    dims.sort_by_key(|d| {
        d.axes
            .iter()
            .map(|a| a.enumeration_rank())
            .min()
            .unwrap_or(usize::MAX)
    });
    dims
}

/// The number of combinations of the factors, within [`limits::MAX_COMBINATIONS`] (the
/// error points at the factor with the most values).
fn check_combinations(spec: &SweepSpec, dims: &[crate::config::Dim]) -> Result<usize, SpecError> {
    let combinations: u128 = dims.iter().map(|d| d.tuples.len() as u128).product();
    if combinations > limits::MAX_COMBINATIONS {
        let biggest = dims
            .iter()
            .max_by_key(|d| d.tuples.len())
            .and_then(|d| d.axes.first().copied())
            .unwrap_or(Axis::Sizes);
        return Err(spec.error_at(
            biggest,
            format!(
                "the axes multiply to {combinations} combinations, above the limit of {}: split the study into several specs, use [[zip]] groups, or give fewer values (limits are listed in README.md, \"Limits\")",
                limits::MAX_COMBINATIONS
            ),
        ));
    }
    Ok(combinations as usize)
}

/// The point of the factors' tuples at `idx`.
fn point(dims: &[crate::config::Dim], idx: &[usize]) -> Point {
    let mut p = Point::default();
    for (d, i) in dims.iter().zip(idx) {
        for (axis, v) in d.axes.iter().zip(&d.tuples[*i]) {
            p.set(*axis, v);
        }
    }
    p
}

/// Advances the mixed-radix counter `idx`, last factor fastest.
fn advance(idx: &mut [usize], radix: &[usize]) {
    for k in (0..idx.len()).rev() {
        idx[k] += 1;
        if idx[k] < radix[k] {
            break;
        }
        idx[k] = 0;
    }
}

/// A case the launch can run: its root is one of the launch's devices, and its size splits
/// into whole elements over them (checked once per workload, size, dtype and device count).
fn check_point(
    spec: &SweepSpec,
    p: &Point,
    checked: &mut HashSet<(Workload, u64, Dtype, u32)>,
) -> Result<(), SpecError> {
    if p.backend != BackendKind::Cuda {
        for (axis, forced) in [
            (Axis::NcclAlgo, p.nccl_algo.map(|a| a.name())),
            (Axis::NcclProto, p.nccl_proto.map(|x| x.name())),
        ] {
            if let Some(v) = forced {
                return Err(spec.error_at(axis, super::nccl_needs_cuda(axis.name(), v, p.backend)));
            }
        }
    }
    let devices = p.nodes * p.devices_per_node;
    if p.workload.has_root() && p.root >= devices {
        return Err(spec.error_at(
            Axis::Roots,
            format!("root {} is not a device of the {}-device launch ({} × {}): use roots below {devices}, or [[exclude]] the combination", p.root, devices, crate::units::count(p.nodes as usize, "node", "nodes"), p.devices_per_node),
        ));
    }
    if p.workload.is_collective() && checked.insert((p.workload, p.size, p.dtype, devices)) {
        match counts(p.workload, p.size, p.dtype, devices) {
            Err(e @ CountError::NotDivisible { .. }) | Err(e @ CountError::TooLarge { .. }) => {
                return Err(spec.error_at(
                    Axis::Sizes,
                    format!("{} {}: {e}", p.workload, crate::units::format_bytes(p.size)),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The (empty) launch of a point's shape and threads.
fn new_launch(spec: &SweepSpec, p: &Point) -> LaunchPlan {
    let shape = p.shape();
    LaunchPlan {
        launch_id: if p.threads == 1 {
            shape.id()
        } else {
            format!("{}-t{}", shape.id(), p.threads)
        },
        shape,
        threads_per_device: p.threads,
        reserved_cores: spec.launch.reserved_cores.clone(),
        // A site's map comes with its profile, at submission.
        gpu_numa: Vec::new(),
        emulate_nodes: false,
        settings: spec.settings.clone(),
        cases: Vec::new(),
    }
}

/// Checks a plan against this machine for a local sweep: enough cores for every launch's
/// devices (unless oversubscription is allowed) and a backend this build has.
pub fn check_local(spec: &SweepSpec, plan: &SweepPlan, usable_cpus: u32) -> Result<(), SpecError> {
    if let Some(step) = spec
        .links
        .as_ref()
        .filter(|s| s.schedule == crate::config::LinksSchedule::Rail)
    {
        // A local sweep's nodes are emulated on this one host, where `links` finds no rail.
        let (line, column) = step.schedule_at.unwrap_or(step.at);
        return Err(SpecError {
            path: spec.path.clone(),
            line,
            column,
            key: Some("links.schedule".into()),
            message: "a local sweep runs every rank on this host, and the rail schedule pairs ranks of different hosts, so it has no pair here: use \"round_robin\" or \"shift\", or `scalebench submit` the spec to a cluster".into(),
        });
    }
    for l in &plan.launches {
        let devices = l.shape.devices();
        if devices > usable_cpus && !spec.launch.oversubscribe {
            return Err(spec.error_at(
                Axis::DevicesPerNode,
                format!(
                    "the launch {} needs {devices} CPUs (one per device) but this machine has {usable_cpus}: set `oversubscribe = true` under [launch], or use fewer nodes/ranks per node",
                    l.shape.label()
                ),
            ));
        }
        if l.shape.backend == BackendKind::Cuda && !cfg!(feature = "cuda") {
            return Err(spec.error_at(
                Axis::Backend,
                "backend cuda needs a scalebench built with `--features cuda`".into(),
            ));
        }
        if l.shape.backend == BackendKind::Rocm && !cfg!(feature = "rocm") {
            return Err(spec.error_at(
                Axis::Backend,
                "backend rocm needs a scalebench built with `--features rocm`".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;
    use std::path::Path;

    fn plan(text: &str) -> Result<SweepPlan, SpecError> {
        expand(&config::parse(Path::new("t.toml"), text)?)
    }

    /// Issue 31: nccl_algo × nccl_proto make one launch each (NCCL reads them at
    /// communicator set-up), every case carries its launch's values, `default` forces
    /// nothing; values NCCL does not know, lists, and a backend without NCCL are refused at
    /// the axis's line.
    #[test]
    fn nccl_axes_are_launch_level_and_checked() {
        use crate::params::{NcclAlgo, NcclProto};
        let text = "[axes]\nbackend = \"cuda\"\ndevices_per_node = 2\nsizes = \"1KiB,64KiB\"\nnccl_algo = [\"default\", \"Ring\", \"tree\"]\nnccl_proto = [\"ll128\", \"SIMPLE\"]\n";
        let p = plan(text).unwrap();
        assert_eq!(p.launches.len(), 6);
        let ids: HashSet<&str> = p.launches.iter().map(|l| l.launch_id.as_str()).collect();
        assert_eq!(ids.len(), 6, "one id per launch");
        for l in &p.launches {
            assert_eq!(l.cases.len(), 4);
            assert!(l.cases.iter().all(|c| c.launch_shape() == l.shape));
        }
        let forced: Vec<_> = p
            .launches
            .iter()
            .map(|l| (l.shape.nccl_algo, l.shape.nccl_proto))
            .collect();
        assert_eq!(forced[0], (None, Some(NcclProto::Ll128)));
        assert_eq!(forced[3], (Some(NcclAlgo::Ring), Some(NcclProto::Simple)));
        assert_eq!(forced[5], (Some(NcclAlgo::Tree), Some(NcclProto::Simple)));
        // Unforced launches keep the id they had before these axes existed.
        let plain =
            plan("[axes]\nbackend = \"cuda\"\ndevices_per_node = 2\nsizes = \"1KiB\"\n").unwrap();
        let default = plan("[axes]\nbackend = \"cuda\"\ndevices_per_node = 2\nsizes = \"1KiB\"\nnccl_algo = \"default\"\n").unwrap();
        assert_eq!(plain.launches[0].launch_id, default.launches[0].launch_id);
        assert_eq!(plain.launches[0].cases, default.launches[0].cases);

        let err = |t: &str| plan(t).unwrap_err().to_string();
        let e = err("[axes]\nbackend = \"cuda\"\nnccl_algo = [\"ring\", \"rign\"]\n");
        assert!(e.starts_with("t.toml:3:"), "{e}");
        assert!(
            e.contains("unknown NCCL algorithm 'rign': expected one of tree, ring,"),
            "{e}"
        );
        let e = err("[axes]\nbackend = \"cuda\"\n\nnccl_proto = \"ll,ll128\"\n");
        assert!(
            e.starts_with("t.toml:4:") && e.contains("unknown NCCL protocol 'll,ll128'"),
            "{e}"
        );
        let e = err("[axes]\nbackend = \"cuda\"\nnccl_algo = \"^tree\"\n");
        assert!(e.contains("unknown NCCL algorithm '^tree'"), "{e}");
        let e = err("[axes]\nsizes = \"8B\"\nnccl_algo = [\"default\", \"ring\"]\n");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("t.toml:3:"), "{e}");
        assert!(
            e.contains("nccl_algo ring: the cpu backend does not use NCCL"),
            "{e}"
        );
        // Only the default on the CPU backend forces nothing: nothing to refuse.
        assert!(plan("[axes]\nsizes = \"8B\"\nnccl_proto = \"default\"\n").is_ok());
    }

    #[test]
    fn a_study_runs_every_launch_at_one_thread_level() {
        use crate::params::ThreadLevel;
        let levels = |text: &str| -> Vec<Option<ThreadLevel>> {
            plan(text)
                .unwrap()
                .launches
                .iter()
                .map(|l| l.settings.thread_level)
                .collect()
        };
        // Pure alone needs nothing; beside hybrid, the pure launch gets hybrid's level too.
        let pure = "[axes]\ndevices_per_node = 2\nsizes = \"8B\"\n";
        assert_eq!(levels(pure), [Some(ThreadLevel::Single)]);
        let both =
            "[axes]\ndevices_per_node = 2\ntopology = [\"pure\", \"hybrid\"]\nsizes = \"8B\"\n";
        assert_eq!(levels(both), [Some(ThreadLevel::Funneled); 2]);
        // A ddp_step progress thread anywhere: serialized everywhere.
        let ddp = "[axes]\ndevices_per_node = 2\nworkloads = [\"allreduce\", \"ddp_step\"]\nsizes = \"8B\"\nprogress = [\"thread\", \"test\"]\n";
        let got = levels(ddp);
        assert!(
            !got.is_empty() && got.iter().all(|l| *l == Some(ThreadLevel::Serialized)),
            "{got:?}"
        );
        // The spec's own level, when high enough, is every launch's.
        let multiple = format!("{both}[run]\nthread_level = \"multiple\"\n");
        assert_eq!(levels(&multiple), [Some(ThreadLevel::Multiple); 2]);
        // Too low: an error at the key, naming what needs more and the fix.
        let low = format!("{both}[run]\nthread_level = \"single\"\n");
        let e = plan(&low).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("run.thread_level"));
        assert_eq!(e.line, 6, "{e}");
        let m = e.to_string();
        assert!(
            m.contains("needs funneled (hybrid worker threads)") && m.contains("or higher"),
            "{m}"
        );
        let typo = format!("{both}[run]\nthread_level = \"serialised\"\n");
        assert!(plan(&typo)
            .unwrap_err()
            .to_string()
            .contains("expected one of single, funneled, serialized, multiple"));
    }

    #[test]
    fn product_zip_and_exclude() {
        let p = plan(
            r#"
[axes]
nodes = [1, 2]
devices_per_node = [1, 2]
topology = ["pure", "hybrid"]
workloads = ["allreduce", "matmul"]
sizes = ["64", "1KiB"]
dims = 64
in_place = "no"
[[exclude]]
topology = "hybrid"
devices_per_node = 1
"#,
        )
        .unwrap();
        // 2 nodes × (pure: rpn 1, 2; hybrid: rpn 2) = 6 launches, each 2 allreduce + 1 matmul
        assert_eq!(p.launches.len(), 6);
        assert!(p.launches.iter().all(|l| l.cases.len() == 3));
        let ids: HashSet<String> = p
            .launches
            .iter()
            .flat_map(|l| l.cases.iter().map(|c| c.id()))
            .collect();
        assert_eq!(ids.len(), 18);
        assert!(p
            .launches
            .iter()
            .all(|l| l.cases.iter().all(|c| c.launch_shape() == l.shape)));

        let z = plan(
            "[axes]\nworkloads = \"matmul\"\n[[zip]]\nnodes = [1, 2, 4]\ndims = [256, 512, 1024]\n",
        )
        .unwrap();
        let pairs: Vec<(u32, u64)> = z
            .launches
            .iter()
            .map(|l| (l.shape.nodes, l.cases[0].shape.unwrap().m))
            .collect();
        assert_eq!(pairs, vec![(1, 256), (2, 512), (4, 1024)]);
    }

    #[test]
    fn defaults_and_irrelevant_axes() {
        // no sizes given: nccl-tests-like default range; matmul ignores sizes (no duplicates)
        let p = plan("[axes]\nworkloads = [\"allreduce\", \"matmul\"]\ndevices_per_node = 2\n")
            .unwrap();
        let l = &p.launches[0];
        assert_eq!(
            l.cases
                .iter()
                .filter(|c| c.workload == Workload::Matmul)
                .count(),
            1
        );
        assert_eq!(
            l.cases
                .iter()
                .filter(|c| c.workload == Workload::Allreduce)
                .count(),
            10 * 2
        );
        // CPU broadcast: in place only
        let p = plan("[axes]\nworkloads = \"broadcast\"\nsizes = \"64\"\n").unwrap();
        assert_eq!(p.case_count(), 1);
    }

    /// `buffers` as an axis: each collective size once per value (the rotate case a case
    /// of its own, the reuse case as before the axis), GEMMs once; a bad value
    /// is refused at its line.
    #[test]
    fn buffers_is_an_axis_of_collectives() {
        let p = plan(
            "[axes]\nworkloads = [\"allreduce\", \"matmul\"]\nsizes = \"1KiB\"\nin_place = \"no\"\ndims = 64\nbuffers = [\"reuse\", \"rotate\"]\n",
        )
        .unwrap();
        let cases = &p.launches[0].cases;
        let ids: Vec<String> = cases.iter().map(|c| c.id()).collect();
        assert_eq!(cases.len(), 3, "{ids:?}");
        let coll: Vec<Option<BufferUse>> = cases
            .iter()
            .filter(|c| c.workload == Workload::Allreduce)
            .map(|c| c.buffers)
            .collect();
        assert_eq!(coll, vec![None, Some(BufferUse::Rotate)]);
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 3, "{ids:?}");
        let m = cases
            .iter()
            .find(|c| c.workload == Workload::Matmul)
            .unwrap();
        assert_eq!(m.buffers, None);
        let e = plan("[axes]\nsizes = \"64\"\nbuffers = \"spin\"\n").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (3, Some("axes.buffers")));
        assert!(e.to_string().contains("reuse, rotate"), "{e}");
    }

    #[test]
    fn case_level_errors_point_at_the_axis() {
        let e = plan("[axes]\ndevices_per_node = 2\nworkloads = \"reduce\"\nroots = [0, 3]\n")
            .unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (4, Some("axes.roots")));
        let e = plan("[axes]\nsizes = [\"6B\"]\n").unwrap_err();
        assert!(e.to_string().starts_with("t.toml:2:1: axes.sizes:"), "{e}");
        assert!(e.message.contains("multiple of 4"));
    }

    #[test]
    fn local_check_needs_cores_or_oversubscription() {
        let text = "[axes]\nnodes = 2\ndevices_per_node = 2\nsizes = \"64\"\n";
        let spec = config::parse(Path::new("t.toml"), text).unwrap();
        let p = expand(&spec).unwrap();
        let e = check_local(&spec, &p, 2).unwrap_err();
        assert!(
            e.message.contains("needs 4 CPUs") && e.message.contains("oversubscribe"),
            "{e}"
        );
        assert!(check_local(&spec, &p, 4).is_ok());
        let spec = config::parse(
            Path::new("t.toml"),
            &format!("{text}[launch]\noversubscribe = true\n"),
        )
        .unwrap();
        assert!(check_local(&spec, &p, 2).is_ok());
    }

    /// `[links]` makes one step per (nodes, ranks per node), whatever else makes launches
    /// differ; a set-up of one rank (nothing to pair) or one node under `rail` is planned as
    /// skipped with the reason; no `[links]`, no step.
    #[test]
    fn links_steps_follow_nodes_and_ranks_per_node() {
        let text = "[axes]\nnodes = [1, 2]\ndevices_per_node = [1, 2]\ntopology = [\"pure\", \"hybrid\"]\nbinding = [\"none\", \"core\"]\nsizes = \"1KiB\"\n";
        assert!(plan(text).unwrap().links.is_empty());
        let p = plan(&format!("{text}[links]\n")).unwrap();
        let got: Vec<(&str, u32, u32, bool)> = p
            .links
            .iter()
            .map(|s| {
                (
                    s.id.as_str(),
                    s.nodes,
                    s.ranks_per_node,
                    s.skipped.is_some(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("n1-ppn1", 1, 1, true),
                ("n1-ppn2", 1, 2, false),
                ("n2-ppn1", 2, 1, false),
                ("n2-ppn2", 2, 2, false),
            ]
        );
        for s in &p.links {
            let l = p
                .launches
                .iter()
                .find(|l| l.launch_id == s.launch_id)
                .unwrap();
            assert_eq!(
                (l.shape.nodes, l.shape.ranks_per_node()),
                (s.nodes, s.ranks_per_node)
            );
        }
        let p = plan(&format!("{text}[links]\nschedule = \"rail\"\n")).unwrap();
        let skipped: Vec<&str> = p
            .links
            .iter()
            .filter(|s| s.skipped.is_some())
            .map(|s| s.id.as_str())
            .collect();
        assert_eq!(skipped, vec!["n1-ppn1", "n1-ppn2"]);
        // A local sweep has one host: rail is refused at its line.
        let spec = config::parse(
            Path::new("t.toml"),
            &format!("{text}[launch]\noversubscribe = true\n[links]\nschedule = \"rail\"\n"),
        )
        .unwrap();
        let e = check_local(&spec, &expand(&spec).unwrap(), 64).unwrap_err();
        assert_eq!(
            (e.line, e.key.as_deref()),
            (10, Some("links.schedule")),
            "{e}"
        );
        assert!(e.message.contains("round_robin"), "{e}");
    }
}
