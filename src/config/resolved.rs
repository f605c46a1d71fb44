//! What a spec means: typed axes (single, or zipped into groups), exclusions, measurement and
//! launch settings. Only this resolved form reaches the planner.

use super::limits;
use super::raw::{RawSpec, SpannedTable};
use super::{line_col, SpecError};
use crate::params::{
    BackendKind, Binding, Collect, Dtype, GemmChoice, MatmulShape, Placement, ReduceOp, Scaling,
    Timing, Topology, Workload,
};
use crate::params::{Fault, IterPolicy, RunSettings};
use crate::units::parse_size_list;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::{Spanned, Value};

/// Everything a spec can vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Axis {
    Backend,
    Nodes,
    RanksPerNode,
    Topology,
    Binding,
    Placement,
    ThreadsPerDevice,
    Workloads,
    Sizes,
    Dtypes,
    Ops,
    Roots,
    Timing,
    InPlace,
    Dims,
    Scaling,
    Batch,
    Collect,
    /// Test-only fault injection (see `params::Fault`); not for studies.
    Fault,
    /// ddp_step models (presets or layer lists, see `params::ddp::Model`).
    Models,
    /// ddp_step gradient bucket capacities, bytes.
    BucketSizes,
    /// ddp_step first-bucket capacities, bytes (0 = as the others).
    FirstBucketSizes,
    /// ddp_step progress strategies of the CPU backend.
    Progress,
}

impl Axis {
    pub const ALL: &'static [Axis] = &[
        Axis::Backend,
        Axis::Nodes,
        Axis::RanksPerNode,
        Axis::Topology,
        Axis::Binding,
        Axis::Placement,
        Axis::ThreadsPerDevice,
        Axis::Workloads,
        Axis::Sizes,
        Axis::Dtypes,
        Axis::Ops,
        Axis::Roots,
        Axis::Timing,
        Axis::InPlace,
        Axis::Dims,
        Axis::Scaling,
        Axis::Batch,
        Axis::Collect,
        Axis::Fault,
        Axis::Models,
        Axis::BucketSizes,
        Axis::FirstBucketSizes,
        Axis::Progress,
    ];

    /// The key in spec files.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Backend => "backend",
            Axis::Nodes => "nodes",
            Axis::RanksPerNode => "ranks_per_node",
            Axis::Topology => "topology",
            Axis::Binding => "binding",
            Axis::Placement => "placement",
            Axis::ThreadsPerDevice => "threads_per_device",
            Axis::Workloads => "workloads",
            Axis::Sizes => "sizes",
            Axis::Dtypes => "dtypes",
            Axis::Ops => "ops",
            Axis::Roots => "roots",
            Axis::Timing => "timing",
            Axis::InPlace => "in_place",
            Axis::Dims => "dims",
            Axis::Scaling => "scaling",
            Axis::Batch => "batch",
            Axis::Collect => "collect",
            Axis::Fault => "fault",
            Axis::Models => "models",
            Axis::BucketSizes => "bucket_sizes",
            Axis::FirstBucketSizes => "first_bucket_sizes",
            Axis::Progress => "progress",
        }
    }

    /// The axis a key names (singular forms and `devices_per_node` are accepted too).
    pub fn from_key(key: &str) -> Option<Axis> {
        let alias = match key {
            "workload" => "workloads",
            "size" => "sizes",
            "dtype" => "dtypes",
            "op" => "ops",
            "root" => "roots",
            "dim" => "dims",
            "model" => "models",
            "bucket_size" => "bucket_sizes",
            "first_bucket" | "first_bucket_size" => "first_bucket_sizes",
            "devices_per_node" | "gpus_per_node" => "ranks_per_node",
            k => k,
        };
        Axis::ALL.iter().copied().find(|a| a.name() == alias)
    }

    /// Whether the axis decides the launch (allocation shape) rather than the case.
    pub fn is_launch_level(self) -> bool {
        matches!(
            self,
            Axis::Backend
                | Axis::Nodes
                | Axis::RanksPerNode
                | Axis::Topology
                | Axis::Binding
                | Axis::Placement
                | Axis::ThreadsPerDevice
        )
    }
}

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
    pub reserved_cores: String,
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
    /// Where each axis was given (line, column), for later errors.
    pub axis_at: BTreeMap<Axis, (usize, usize)>,
    /// The file's text (for locating later errors).
    pub text: String,
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

struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> SpecError {
        let (line, column) = line_col(self.text, span.start);
        SpecError {
            path: self.path.to_path_buf(),
            line,
            column,
            key: Some(key.to_string()),
            message: message.into(),
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "a list",
        Value::Table(_) => "a table",
    }
}

fn closest(word: &str, options: &[&str]) -> Option<String> {
    fn dist(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                cur.push(
                    (prev[j] + usize::from(ca != *cb))
                        .min(prev[j + 1] + 1)
                        .min(cur[j] + 1),
                );
            }
            prev = cur;
        }
        prev[b.len()]
    }
    options
        .iter()
        .map(|o| (dist(word, o), *o))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, o)| o.to_string())
}

/// Why one TOML scalar is not a value of its axis (made a [`SpecError`] at the value's place).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum ValueError {
    /// A value of the wrong TOML type; `expected` says what to write.
    #[error("expected {expected}, found {found}")]
    Expected {
        expected: String,
        found: &'static str,
    },
    /// A count outside `min..=u32::MAX`.
    #[error("{value} is out of range: give a whole number ≥ {min}")]
    OutOfRange { value: i64, min: i64 },
    #[error("{0} is negative: sizes are whole numbers of bytes ≥ 0")]
    NegativeSize(i64),
    #[error("a bucket of 0 bytes: give sizes ≥ 1B, e.g. \"25MiB\"")]
    ZeroBucket,
    #[error("expected one of {} (test-only)", Fault::NAMES.join(", "))]
    UnknownFault,
    #[error(transparent)]
    Name(#[from] crate::params::UnknownName),
    #[error(transparent)]
    Shape(#[from] crate::params::ShapeError),
    #[error(transparent)]
    Model(#[from] crate::params::ddp::ModelError),
    #[error(transparent)]
    Size(#[from] crate::units::SizeError),
    #[error(transparent)]
    Limit(#[from] limits::LimitError),
}

impl ValueError {
    fn expected(expected: &str, found: &Value) -> ValueError {
        ValueError::Expected {
            expected: expected.to_string(),
            found: type_name(found),
        }
    }
}

/// Parses one TOML scalar as values of `axis` (a size range or `both` may give several),
/// within the documented limits.
fn scalar(axis: Axis, v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    let vals = scalar_unchecked(axis, v)?;
    for x in &vals {
        within_limits(axis, x)?;
    }
    Ok(vals)
}

/// Checks one axis value against [`limits`].
fn within_limits(axis: Axis, v: &AxisValue) -> Result<(), limits::LimitError> {
    use limits::*;
    let name = axis.name();
    match (axis, v) {
        (Axis::Nodes, AxisValue::Count(n)) => {
            count(name, (*n).into(), MAX_NODES.into(), "use fewer nodes")
        }
        (Axis::RanksPerNode, AxisValue::Count(n)) => count(
            name,
            (*n).into(),
            MAX_DEVICES_PER_NODE.into(),
            "use fewer devices (ranks) per node",
        ),
        (Axis::ThreadsPerDevice, AxisValue::Count(n)) => count(
            name,
            (*n).into(),
            MAX_THREADS_PER_DEVICE.into(),
            "use at most one thread per core",
        ),
        (Axis::Batch, AxisValue::Count(n)) => {
            count(name, (*n).into(), MAX_BATCH.into(), "use a smaller batch")
        }
        (Axis::Sizes, AxisValue::Bytes(b)) => {
            count(name, *b, MAX_SIZE_BYTES, "use sizes up to 1TiB")
        }
        (Axis::Dims, AxisValue::Shape(s)) => [s.m, s.n, s.k]
            .into_iter()
            .try_for_each(|d| count(name, d, MAX_GEMM_DIM, "use smaller matrices")),
        _ => Ok(()),
    }
}

fn scalar_unchecked(axis: Axis, v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    match axis {
        Axis::Nodes | Axis::RanksPerNode | Axis::ThreadsPerDevice | Axis::Batch => count(v, 1),
        Axis::Roots => count(v, 0),
        Axis::Sizes => sizes(v),
        Axis::Dims => dims(v),
        Axis::InPlace => in_place(v),
        Axis::Fault => fault(v),
        Axis::Backend => named(v, AxisValue::Backend),
        Axis::Topology => named(v, AxisValue::Topology),
        Axis::Binding => named(v, AxisValue::Binding),
        Axis::Placement => named(v, AxisValue::Placement),
        Axis::Workloads => named(v, AxisValue::Workload),
        Axis::Dtypes => named(v, AxisValue::Dtype),
        Axis::Ops => named(v, AxisValue::Op),
        Axis::Timing => named(v, AxisValue::Timing),
        Axis::Scaling => named(v, AxisValue::Scaling),
        Axis::Collect => named(v, AxisValue::Collect),
        Axis::Progress => named(v, AxisValue::Progress),
        Axis::Models => model(v),
        Axis::BucketSizes => bucket_sizes(v),
        Axis::FirstBucketSizes => first_bucket_sizes(v),
    }
}

/// A wire name of one of the vocabulary enums.
fn named<T: std::str::FromStr<Err = crate::params::UnknownName>>(
    v: &Value,
    wrap: fn(T) -> AxisValue,
) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::String(s) => Ok(vec![wrap(s.parse::<T>()?)]),
        other => Err(ValueError::expected("a name", other)),
    }
}

/// A whole number in `min..=u32::MAX`.
fn count(v: &Value, min: i64) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::Integer(i) if *i >= min && *i <= i64::from(u32::MAX) => {
            Ok(vec![AxisValue::Count(*i as u32)])
        }
        Value::Integer(i) => Err(ValueError::OutOfRange { value: *i, min }),
        other => Err(ValueError::expected(
            &format!("a whole number ≥ {min}"),
            other,
        )),
    }
}

/// Byte sizes: a size list with ranges, or a whole number of bytes.
fn byte_list(text: &str) -> Result<Vec<AxisValue>, ValueError> {
    Ok(parse_size_list(text)?
        .into_iter()
        .map(|b| AxisValue::Bytes(b.get()))
        .collect())
}

fn sizes(v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::String(s) => byte_list(s),
        Value::Integer(i) if *i >= 0 => Ok(vec![AxisValue::Bytes(*i as u64)]),
        Value::Integer(i) => Err(ValueError::NegativeSize(*i)),
        other => Err(ValueError::expected(
            "a size such as \"4KiB\" or a range \"8B:1MiB:x2\"",
            other,
        )),
    }
}

fn dims(v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::Integer(i) if *i >= 1 => Ok(vec![AxisValue::Shape(MatmulShape::square(*i as u64))]),
        Value::String(s) => Ok(vec![AxisValue::Shape(s.parse::<MatmulShape>()?)]),
        other => Err(ValueError::expected("N or \"MxNxK\" (each ≥ 1)", other)),
    }
}

fn in_place(v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::Boolean(b) => Ok(vec![AxisValue::InPlace(*b)]),
        Value::String(s) if s == "both" => {
            Ok(vec![AxisValue::InPlace(false), AxisValue::InPlace(true)])
        }
        Value::String(s) if s == "yes" => Ok(vec![AxisValue::InPlace(true)]),
        Value::String(s) if s == "no" => Ok(vec![AxisValue::InPlace(false)]),
        other => Err(ValueError::expected(
            "true, false, \"both\", \"yes\" or \"no\"",
            other,
        )),
    }
}

fn fault(v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::String(s) if s.is_empty() || s == "none" => Ok(vec![AxisValue::Fault(None)]),
        Value::String(s) if Fault::parse(s).is_some() => {
            Ok(vec![AxisValue::Fault(Some(s.clone()))])
        }
        _ => Err(ValueError::UnknownFault),
    }
}

/// A ddp_step model, kept as written (trimmed) once it parses.
fn model(v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::String(s) => {
            crate::params::ddp::Model::parse(s)?;
            Ok(vec![AxisValue::Model(s.trim().to_string())])
        }
        other => Err(ValueError::expected(
            "a model name such as \"mlp-tiny\" or layers \"1024x1024x8\"",
            other,
        )),
    }
}

fn bucket_sizes(v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::String(s) => {
            let l = byte_list(s)?;
            if l.contains(&AxisValue::Bytes(0)) {
                Err(ValueError::ZeroBucket)
            } else {
                Ok(l)
            }
        }
        Value::Integer(i) if *i >= 1 => Ok(vec![AxisValue::Bytes(*i as u64)]),
        other => Err(ValueError::expected(
            "a size such as \"25MiB\" or a range \"1MiB:64MiB:x4\"",
            other,
        )),
    }
}

fn first_bucket_sizes(v: &Value) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::String(s) => byte_list(s),
        Value::Integer(i) if *i >= 0 => Ok(vec![AxisValue::Bytes(*i as u64)]),
        other => Err(ValueError::expected(
            "a size such as \"1MiB\" (0 = as the other buckets)",
            other,
        )),
    }
}

/// Values of an axis: a scalar, or a non-empty list of scalars. `exact` forbids a scalar that
/// expands to several values (inside zip groups, where positions must line up).
fn values(
    ctx: &Ctx<'_>,
    axis: Axis,
    key: &str,
    v: &Spanned<Value>,
    exact: bool,
) -> Result<Vec<AxisValue>, SpecError> {
    let items: Vec<&Value> = match v.get_ref() {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    if items.is_empty() {
        return Err(ctx.err(
            v.span(),
            key,
            "the list is empty: give at least one value (or remove the key for the default)",
        ));
    }
    let mut out = Vec::new();
    for item in items {
        let got = scalar(axis, item).map_err(|e| ctx.err(v.span(), key, e.to_string()))?;
        if exact && got.len() != 1 {
            return Err(ctx.err(
                v.span(),
                key,
                "in a [[zip]] group every entry must be one value (not a range or \"both\"), so positions line up",
            ));
        }
        out.extend(got);
    }
    Ok(out)
}

fn axis_of(ctx: &Ctx<'_>, key: &Spanned<String>, table: &str) -> Result<Axis, SpecError> {
    Axis::from_key(key.get_ref()).ok_or_else(|| {
        let names: Vec<&str> = Axis::ALL
            .iter()
            .filter(|a| **a != Axis::Fault)
            .map(|a| a.name())
            .collect();
        let hint = closest(key.get_ref(), &names)
            .map(|c| format!("did you mean `{c}`? "))
            .unwrap_or_default();
        ctx.err(
            key.span(),
            &format!("{table}.{}", key.get_ref()),
            format!(
                "unknown axis `{}`: {hint}known axes are {}",
                key.get_ref(),
                names.join(", ")
            ),
        )
    })
}

fn positive_int(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<i64>>,
    key: &str,
    min: i64,
) -> Result<Option<u32>, SpecError> {
    match v {
        None => Ok(None),
        Some(s) if *s.get_ref() >= min && *s.get_ref() <= i64::from(limits::MAX_ITERS) => {
            Ok(Some(*s.get_ref() as u32))
        }
        Some(s) => Err(ctx.err(
            s.span(),
            key,
            format!(
                "{} is out of range: give a whole number from {min} to {} (limits are listed in README.md, \"Limits\")",
                s.get_ref(),
                limits::MAX_ITERS
            ),
        )),
    }
}

/// `run.buffer_offset`: `BYTES` or `[SEND, RECV]`, each within a page and a multiple of the
/// element size of every dtype the spec's axes name (f32 when they name none), as
/// `--buffer-offset` requires.
fn buffer_offset(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<toml::Value>>,
    dims: &[Dim],
) -> Result<crate::params::BufferOffset, SpecError> {
    let Some(v) = v else {
        return Ok(Default::default());
    };
    const KEY: &str = "run.buffer_offset";
    let err = |m: String| ctx.err(v.span(), KEY, m);
    let bytes = |x: &toml::Value| match x {
        toml::Value::Integer(n) if *n >= 0 => Ok(*n as u64),
        other => Err(err(format!(
            "{other} is not a number of bytes: give BYTES or [SEND, RECV], e.g. 16 or [0, 16]"
        ))),
    };
    let (send, recv) = match v.get_ref() {
        toml::Value::Array(a) if a.len() == 2 => (bytes(&a[0])?, bytes(&a[1])?),
        toml::Value::Array(a) => {
            return Err(err(format!(
                "{} value(s): give BYTES for both buffers or [SEND, RECV], e.g. 16 or [0, 16]",
                a.len()
            )))
        }
        x => {
            let b = bytes(x)?;
            (b, b)
        }
    };
    // The page size as `host::page_size_bytes` reads it (config sits before host in the flow).
    // SAFETY: sysconf takes an integer name and no pointers, so it cannot touch our memory; its
    // error value (-1, never seen for the page size) falls back to 4096 below.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as u64,
        _ => 4096,
    };
    if send >= page || recv >= page {
        return Err(err(format!(
            "[{send}, {recv}]: offsets are within a page: give values below {page}"
        )));
    }
    let mut dtypes: Vec<Dtype> = dims
        .iter()
        .flat_map(|d| d.tuples.iter().flatten())
        .filter_map(|v| match v {
            AxisValue::Dtype(d) => Some(*d),
            _ => None,
        })
        .collect();
    if dtypes.is_empty() {
        dtypes.push(Dtype::F32);
    }
    for d in dtypes {
        let elem = d.size_bytes();
        if send % elem != 0 || recv % elem != 0 {
            return Err(err(format!(
                "[{send}, {recv}]: {d} elements are {elem} bytes, so a {d} buffer must start on a multiple of {elem}: give multiples of {elem}"
            )));
        }
    }
    Ok(crate::params::BufferOffset {
        send_bytes: send,
        recv_bytes: recv,
    })
}

fn env_name_ok(k: &str) -> bool {
    let mut c = k.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}

pub(super) fn resolve(path: &Path, text: &str, raw: RawSpec) -> Result<SweepSpec, SpecError> {
    let ctx = Ctx { path, text };
    let mut axes = Axes::default();
    for (k, v) in &raw.axes {
        axes.single(&ctx, k, v)?;
    }
    for (i, group) in raw.zip.iter().enumerate() {
        axes.zip_group(&ctx, i, group)?;
    }
    let excludes = excludes(&ctx, &raw.exclude)?;
    let settings = run_settings(&ctx, &raw.run, &axes.dims)?;
    let launch = local_launch(&ctx, &raw.launch)?;
    let labels = labels(&ctx, &raw.labels)?;
    let name = study_name(&ctx, &raw.name)?;
    Ok(SweepSpec {
        path: path.to_path_buf(),
        name,
        description: raw.description,
        labels,
        dims: axes.dims,
        excludes,
        settings,
        launch,
        submit: raw.submit,
        axis_at: axes.axis_at,
        text: text.to_string(),
    })
}

/// The spec's axes as they are read: the factors so far, where each axis was given, and
/// under which key (an axis may be given once, in [axes] or in one [[zip]] group).
#[derive(Default)]
struct Axes {
    dims: Vec<Dim>,
    axis_at: BTreeMap<Axis, (usize, usize)>,
    seen: BTreeMap<Axis, String>,
}

impl Axes {
    /// One key of [axes]: a factor of its own.
    fn single(
        &mut self,
        ctx: &Ctx<'_>,
        k: &Spanned<String>,
        v: &Spanned<Value>,
    ) -> Result<(), SpecError> {
        let axis = axis_of(ctx, k, "axes")?;
        let key = format!("axes.{}", k.get_ref());
        if let Some(prev) = self.seen.insert(axis, key.clone()) {
            return Err(ctx.err(
                k.span(),
                &key,
                format!(
                    "axis `{}` is given twice (also as `{prev}`): keep one",
                    axis.name()
                ),
            ));
        }
        self.axis_at
            .insert(axis, line_col(ctx.text, k.span().start));
        let vals = values(ctx, axis, &key, v, false)?;
        self.dims.push(Dim {
            axes: vec![axis],
            tuples: vals.into_iter().map(|x| vec![x]).collect(),
        });
        Ok(())
    }

    /// The `i`th [[zip]] group: one factor whose axes advance together.
    fn zip_group(
        &mut self,
        ctx: &Ctx<'_>,
        i: usize,
        group: &Spanned<SpannedTable>,
    ) -> Result<(), SpecError> {
        let table = format!("zip[{}]", i + 1);
        if group.get_ref().len() < 2 {
            return Err(ctx.err(
                group.span(),
                &table,
                "a [[zip]] group needs at least two axes (a single axis belongs in [axes])",
            ));
        }
        let mut axes = Vec::new();
        let mut columns: Vec<Vec<AxisValue>> = Vec::new();
        let mut first: Option<(String, usize)> = None;
        for (k, v) in group.get_ref() {
            let axis = axis_of(ctx, k, &table)?;
            let key = format!("{table}.{}", k.get_ref());
            if let Some(prev) = self.seen.insert(axis, key.clone()) {
                return Err(ctx.err(k.span(), &key, format!("axis `{}` is already given as `{prev}`: an axis belongs to [axes] or to one [[zip]] group", axis.name())));
            }
            self.axis_at
                .insert(axis, line_col(ctx.text, k.span().start));
            let vals = values(ctx, axis, &key, v, true)?;
            match &first {
                None => first = Some((k.get_ref().clone(), vals.len())),
                Some((name, n)) if *n != vals.len() => {
                    return Err(ctx.err(
                        v.span(),
                        &key,
                        format!("{} value(s) here but {n} in `{name}`: every axis of a [[zip]] group needs the same number of values", vals.len()),
                    ))
                }
                _ => {}
            }
            axes.push(axis);
            columns.push(vals);
        }
        let n = columns[0].len();
        let tuples = (0..n)
            .map(|j| columns.iter().map(|c| c[j].clone()).collect())
            .collect();
        self.dims.push(Dim { axes, tuples });
        Ok(())
    }
}

/// The [[exclude]] tables: combinations to drop.
fn excludes(ctx: &Ctx<'_>, raw: &[Spanned<SpannedTable>]) -> Result<Vec<Exclude>, SpecError> {
    let mut excludes = Vec::new();
    for (i, ex) in raw.iter().enumerate() {
        let table = format!("exclude[{}]", i + 1);
        if ex.get_ref().is_empty() {
            return Err(ctx.err(
                ex.span(),
                &table,
                "an empty [[exclude]] would drop everything: list the axis values to drop",
            ));
        }
        let mut rules = Vec::new();
        for (k, v) in ex.get_ref() {
            let axis = axis_of(ctx, k, &table)?;
            rules.push((
                axis,
                values(ctx, axis, &format!("{table}.{}", k.get_ref()), v, false)?,
            ));
        }
        excludes.push(Exclude { rules });
    }
    Ok(excludes)
}

/// [run]: the measurement settings (`buffer_offset` is checked against the axes' dtypes).
fn run_settings(
    ctx: &Ctx<'_>,
    r: &super::raw::RawRun,
    dims: &[Dim],
) -> Result<RunSettings, SpecError> {
    let iters = positive_int(ctx, &r.iters, "run.iters", 1)?;
    let warmup = positive_int(ctx, &r.warmup, "run.warmup", 0)?;
    let batches = positive_int(ctx, &r.batches, "run.batches", 1)?;
    let check = positive_int(ctx, &r.check, "run.check", 0)?.unwrap_or(1);
    let gemm = match &r.gemm {
        Some(g) => g
            .get_ref()
            .parse::<GemmChoice>()
            .map_err(|e| ctx.err(g.span(), "run.gemm", e.to_string()))?,
        None => GemmChoice::default(),
    };
    let buffer_offset = buffer_offset(ctx, &r.buffer_offset, dims)?;
    let thread_level = match &r.thread_level {
        Some(t) => Some(
            t.get_ref()
                .parse::<crate::params::ThreadLevel>()
                .map_err(|e| ctx.err(t.span(), "run.thread_level", e.to_string()))?,
        ),
        None => None,
    };
    let time_budget_s = match &r.time_budget_s {
        Some(t) => {
            limits::check_seconds("", *t.get_ref(), "0.5")
                .map_err(|m| ctx.err(t.span(), "run.time_budget_s", m.to_string().trim_start()))?;
            *t.get_ref()
        }
        None => IterPolicy::default().time_budget_s,
    };
    Ok(RunSettings {
        policy: IterPolicy {
            iters,
            warmup,
            time_budget_s,
            batches,
        },
        check_iters: check,
        gemm,
        buffer_offset,
        thread_level,
    })
}

/// [launch]: the local launcher's settings.
fn local_launch(ctx: &Ctx<'_>, l: &super::raw::RawLaunch) -> Result<LocalLaunch, SpecError> {
    let timeout_s = match &l.timeout_s {
        Some(t) => {
            limits::check_seconds("", *t.get_ref(), "600")
                .map_err(|m| ctx.err(t.span(), "launch.timeout_s", m.to_string().trim_start()))?;
            *t.get_ref()
        }
        None => 3600.0,
    };
    let op_timeout_s = match &l.op_timeout_s {
        Some(t) => {
            limits::check_seconds("", *t.get_ref(), "600").map_err(|m| {
                ctx.err(t.span(), "launch.op_timeout_s", m.to_string().trim_start())
            })?;
            Some(*t.get_ref())
        }
        None => None,
    };
    let mut env = BTreeMap::new();
    for (k, v) in &l.env {
        if !env_name_ok(k.get_ref()) {
            return Err(ctx.err(k.span(), &format!("launch.env.{}", k.get_ref()), "not a valid environment variable name: use letters, digits and _ (not starting with a digit)"));
        }
        env.insert(k.get_ref().clone(), v.get_ref().clone());
    }
    let reserved_cores = match &l.reserved_cores {
        Some(s) => {
            crate::topology::binding::Reserved::parse(s.get_ref())
                .map_err(|e| ctx.err(s.span(), "launch.reserved_cores", e.to_string()))?;
            s.get_ref().clone()
        }
        None => String::new(),
    };
    Ok(LocalLaunch {
        oversubscribe: l.oversubscribe.unwrap_or(false),
        timeout_s,
        op_timeout_s,
        mpirun_args: l.mpirun_args.iter().map(|s| s.get_ref().clone()).collect(),
        env,
        reserved_cores,
    })
}

/// [labels]: printable text only.
fn labels(
    ctx: &Ctx<'_>,
    raw: &BTreeMap<Spanned<String>, Spanned<String>>,
) -> Result<BTreeMap<String, String>, SpecError> {
    let mut labels = BTreeMap::new();
    for (k, v) in raw {
        if let Some(bad) = [k.get_ref(), v.get_ref()]
            .into_iter()
            .find(|t| t.chars().any(char::is_control))
        {
            return Err(ctx.err(
                k.span(),
                &format!("labels.{}", k.get_ref().escape_debug()),
                format!(
                    "{:?} holds control characters (a terminal would run them): use printable text",
                    bad
                ),
            ));
        }
        labels.insert(k.get_ref().clone(), v.get_ref().clone());
    }
    Ok(labels)
}

/// The study's name: as given (printable, not empty), or the file's stem.
fn study_name(ctx: &Ctx<'_>, raw: &Option<Spanned<String>>) -> Result<String, SpecError> {
    let Some(n) = raw else {
        return Ok(ctx
            .path
            .file_stem()
            .map_or("sweep".to_string(), |s| s.to_string_lossy().into_owned()));
    };
    if n.get_ref().chars().any(char::is_control) {
        return Err(ctx.err(
            n.span(),
            "name",
            format!("the name {:?} holds control characters (a terminal would run them): use printable text", n.get_ref()),
        ));
    }
    if n.get_ref().trim().is_empty() {
        return Err(ctx.err(
            n.span(),
            "name",
            "the name is empty: give the study a name, or remove the key to use the file name",
        ));
    }
    Ok(n.get_ref().clone())
}
