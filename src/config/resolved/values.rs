//! One TOML value read as values of its axis: a parser per kind of axis value, the limits
//! each value must respect, and errors located at the value (with a "did you mean").

use super::{Axis, AxisValue, Dim};
use crate::config::limits;
use crate::config::{line_col, SpecError};
use crate::params::Fault;
use crate::params::{Dtype, MatmulShape};
use crate::units::parse_size_list;
use std::path::Path;
use toml::{Spanned, Value};

pub(super) struct Ctx<'a> {
    pub(super) path: &'a Path,
    pub(super) text: &'a str,
    /// Warnings found while resolving (deprecated keys), handed to
    /// [`SweepSpec::warnings`](super::SweepSpec::warnings).
    pub(super) warnings: std::cell::RefCell<Vec<String>>,
}

impl Ctx<'_> {
    pub(super) fn err(
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
        (Axis::DevicesPerNode, AxisValue::Count(n)) => count(
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
        Axis::Nodes | Axis::DevicesPerNode | Axis::ThreadsPerDevice | Axis::Batch => count(v, 1),
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
        Axis::Buffers => named(v, AxisValue::Buffers),
        Axis::Models => model(v),
        Axis::BucketSizes => bucket_sizes(v),
        Axis::FirstBucketSizes => first_bucket_sizes(v),
        Axis::NcclAlgo => nccl_forced(v, AxisValue::NcclAlgo),
        Axis::NcclProto => nccl_forced(v, AxisValue::NcclProto),
    }
}

/// One algorithm or protocol NCCL documents (any case, NCCL's or the wire spelling), or
/// `default` (NCCL's own choice). Lists and `^` are refused: the axis is the list.
fn nccl_forced<T: std::str::FromStr<Err = crate::params::UnknownName>>(
    v: &Value,
    wrap: fn(Option<T>) -> AxisValue,
) -> Result<Vec<AxisValue>, ValueError> {
    match v {
        Value::String(s) if s.trim().eq_ignore_ascii_case("default") => Ok(vec![wrap(None)]),
        Value::String(s) => Ok(vec![wrap(Some(s.parse::<T>()?))]),
        other => Err(ValueError::expected("a name (or \"default\")", other)),
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
pub(super) fn values(
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

pub(super) fn axis_of(
    ctx: &Ctx<'_>,
    key: &Spanned<String>,
    table: &str,
) -> Result<Axis, SpecError> {
    if let Some(new) = Axis::deprecated_key(key.get_ref()) {
        ctx.warnings.borrow_mut().push(format!(
            "{}: [{table}] {} is deprecated: write {new} (same meaning)",
            ctx.path.display(),
            key.get_ref()
        ));
    }
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

pub(super) fn positive_int(
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
pub(super) fn buffer_offset(
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
                "{}: give BYTES for both buffers or [SEND, RECV], e.g. 16 or [0, 16]",
                crate::units::count(a.len(), "value", "values")
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

pub(super) fn env_name_ok(k: &str) -> bool {
    let mut c = k.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}
