//! What a spec means: typed axes (single, or zipped into groups), exclusions, measurement and
//! launch settings. Only this resolved form reaches the planner.

use super::raw::SpannedTable;
use super::{line_col, SpecError};
use crate::params::RunSettings;
use crate::params::{
    BackendKind, Binding, Collect, Dtype, MatmulShape, Placement, ReduceOp, Scaling, Timing,
    Topology, Workload,
};
use crate::topology::binding::Reserved;
use std::collections::BTreeMap;
use std::path::PathBuf;
use toml::Spanned;

// The types here; the axis list in [`axis`]; one parser per axis value in [`values`]; the
// whole spec resolved in [`resolve`] (the only entry point, for `config::load`).
mod axis;
mod links;
mod resolve;
mod values;

pub use axis::Axis;
pub use links::{LinksFloor, LinksSchedule, LinksStep};
pub(super) use resolve::resolve;

/// One value of one axis.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisValue {
    Count(u32),
    Bytes(u64),
    Backend(BackendKind),
    Topology(Topology),
    Binding(Binding),
    Placement(Placement),
    Workload(Workload),
    Dtype(Dtype),
    Op(ReduceOp),
    Timing(Timing),
    InPlace(bool),
    Shape(MatmulShape),
    Scaling(Scaling),
    Collect(Collect),
    Fault(Option<String>),
    Model(String),
    Progress(crate::params::Progress),
    /// `None`: NCCL's own choice (`default`).
    NcclAlgo(Option<crate::params::NcclAlgo>),
    NcclProto(Option<crate::params::NcclProto>),
    Buffers(crate::params::BufferUse),
}

/// One factor of the product: a single axis, or a zip group advancing together.
#[derive(Debug, Clone, PartialEq)]
pub struct Dim {
    pub axes: Vec<Axis>,
    /// `tuples[j][i]` is the j-th value of `axes[i]`.
    pub tuples: Vec<Vec<AxisValue>>,
}

/// A filter: a combination is dropped when, for every listed axis, its value is one of these.
#[derive(Debug, Clone, PartialEq)]
pub struct Exclude {
    pub rules: Vec<(Axis, Vec<AxisValue>)>,
}

/// How local sweeps start launches (`[launch]`).
#[derive(Debug, Clone, PartialEq)]
pub struct LocalLaunch {
    /// Allow more devices than usable cores on this machine.
    pub oversubscribe: bool,
    /// A launch running longer is killed (with its whole process group).
    pub timeout_s: f64,
    /// The watchdog's limit per case (`scalebench run --op-timeout`); `None`: its default.
    pub op_timeout_s: Option<f64>,
    /// Extra `mpirun` arguments.
    pub mpirun_args: Vec<String>,
    /// Extra environment for the launch.
    pub env: BTreeMap<String, String>,
    /// Cores kept free (`""`, `first_per_numa` or a cpulist).
    pub reserved_cores: Reserved,
}

/// A resolved sweep spec.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    pub path: PathBuf,
    pub name: String,
    pub description: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// The factors of the product, in file order (zip groups after single axes).
    pub dims: Vec<Dim>,
    pub excludes: Vec<Exclude>,
    pub settings: RunSettings,
    pub launch: LocalLaunch,
    /// `[submit]` as written (resolved by `scalebench submit`).
    pub submit: Option<Spanned<SpannedTable>>,
    /// `[links]`: a link-matrix step per set-up, if the spec asks for one.
    pub links: Option<LinksStep>,
    /// Where each axis was given (line, column), for later errors.
    pub axis_at: BTreeMap<Axis, (usize, usize)>,
    /// The file's text (for locating later errors).
    pub text: String,
    /// What is read but should be written differently (deprecated keys), each naming the
    /// file; [`crate::config::load`] prints them.
    pub warnings: Vec<String>,
}

impl SweepSpec {
    /// An error located at `axis` (or at the top of the file if it was not written).
    pub fn error_at(&self, axis: Axis, message: String) -> SpecError {
        let (line, column) = self.axis_at.get(&axis).copied().unwrap_or((1, 1));
        SpecError {
            path: self.path.clone(),
            line,
            column,
            key: Some(format!("axes.{}", axis.name())),
            message,
        }
    }

    /// An error located at a byte offset of the file.
    pub fn error_at_offset(&self, offset: usize, key: &str, message: String) -> SpecError {
        let (line, column) = line_col(&self.text, offset);
        SpecError {
            path: self.path.clone(),
            line,
            column,
            key: Some(key.to_string()),
            message,
        }
    }
}
