//! `[links]`: a `scalebench links` step in a sweep, run once per set-up (nodes × ranks per
//! node) with the same launcher as the set-up's launches. Its options are `links`' own, checked
//! here so that a bad value is refused at its line before anything runs.

use super::values::{positive_int, Ctx};
use crate::config::limits;
use crate::config::raw::RawLinks;
use crate::config::{line_col, SpecError};
use crate::params::BackendKind;
use toml::{Spanned, Value};

/// The rounds of a links step (`scalebench links --schedule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinksSchedule {
    RoundRobin,
    Shift,
    Rail,
}

impl LinksSchedule {
    /// As the spec and `links.json` write it.
    pub fn name(self) -> &'static str {
        match self {
            LinksSchedule::RoundRobin => "round_robin",
            LinksSchedule::Shift => "shift",
            LinksSchedule::Rail => "rail",
        }
    }

    /// As `scalebench links --schedule` takes it.
    pub fn cli_name(self) -> &'static str {
        match self {
            LinksSchedule::RoundRobin => "round-robin",
            LinksSchedule::Shift => "shift",
            LinksSchedule::Rail => "rail",
        }
    }
}

/// The absolute floor of a links step (`scalebench links --floor-fraction`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinksFloor {
    /// Not given: the command's own default.
    Default,
    /// `"off"`: no cell is held to the link ceiling.
    Off,
    /// A fraction in (0, 1].
    Fraction(f64),
}

/// The links step of a spec, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct LinksStep {
    pub schedule: LinksSchedule,
    pub bidirectional: bool,
    pub message_bytes: u64,
    pub iters: u32,
    pub warmup: u32,
    pub z: f64,
    pub min_effect: f64,
    pub timeout_s: f64,
    /// `Cpu`: MPI between host buffers (the default); `Cuda`: NCCL send/recv between GPUs.
    pub backend: crate::params::BackendKind,
    pub floor: LinksFloor,
    /// Where `[links]` starts (line, column), for errors found later (the plan's checks).
    pub at: (usize, usize),
    /// Where `schedule` was given, if it was (a local sweep refuses `rail` there).
    pub schedule_at: Option<(usize, usize)>,
}

/// The defaults are `scalebench links`' own, so a step measures what the command would.
const DEFAULT_MESSAGE_BYTES: u64 = 1 << 20;
const DEFAULT_ITERS: u32 = 10;
const DEFAULT_WARMUP: u32 = 1;
const DEFAULT_Z: f64 = 5.0;
const DEFAULT_MIN_EFFECT: f64 = 0.15;
/// Generous for the default sizes: N−1 rounds of 11 exchanges of 1 MiB take seconds even
/// on a thousand ranks; a hung step must not hold the sweep for the launch timeout's hour.
const DEFAULT_TIMEOUT_S: f64 = 600.0;
/// `links --size`'s limit.
const MAX_MESSAGE_BYTES: u64 = 1 << 30;

pub(super) fn links_step(
    ctx: &Ctx<'_>,
    raw: &Option<Spanned<RawLinks>>,
) -> Result<Option<LinksStep>, SpecError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let at = line_col(ctx.text, raw.span().start);
    let r = raw.get_ref();
    let schedule = match &r.schedule {
        Some(s) => match s.get_ref().replace('-', "_").as_str() {
            "round_robin" => LinksSchedule::RoundRobin,
            "shift" => LinksSchedule::Shift,
            "rail" => LinksSchedule::Rail,
            other => {
                return Err(ctx.err(
                    s.span(),
                    "links.schedule",
                    format!("`{other}` is not a schedule: use \"round_robin\" (every pair once, disjoint pairs at a time), \"shift\" (mpiGraph's rounds, all ranks busy) or \"rail\" (the same local rank across nodes)"),
                ))
            }
        },
        None => LinksSchedule::RoundRobin,
    };
    let message_bytes = match &r.size {
        Some(v) => size(ctx, v)?,
        None => DEFAULT_MESSAGE_BYTES,
    };
    let iters = positive_int(ctx, &r.iters, "links.iters", 1)?.unwrap_or(DEFAULT_ITERS);
    let warmup = positive_int(ctx, &r.warmup, "links.warmup", 0)?.unwrap_or(DEFAULT_WARMUP);
    let z = match &r.z {
        Some(z) if z.get_ref().is_finite() && *z.get_ref() > 0.0 => *z.get_ref(),
        Some(z) => {
            return Err(ctx.err(
                z.span(),
                "links.z",
                format!(
                    "{}: give a positive number (a suspect is named below a robust z of −Z; 5 by default)",
                    crate::units::echo_f64(*z.get_ref())
                ),
            ))
        }
        None => DEFAULT_Z,
    };
    let min_effect = match &r.min_effect {
        Some(m) if (0.0..1.0).contains(m.get_ref()) => *m.get_ref(),
        Some(m) => {
            return Err(ctx.err(
                m.span(),
                "links.min_effect",
                format!(
                    "{}: give a fraction from 0 to below 1 (0.15: a suspect is at most 85 % of expected)",
                    crate::units::echo_f64(*m.get_ref())
                ),
            ))
        }
        None => DEFAULT_MIN_EFFECT,
    };
    let timeout_s = match &r.timeout_s {
        Some(t) => {
            limits::check_seconds("", *t.get_ref(), "600")
                .map_err(|m| ctx.err(t.span(), "links.timeout_s", m.to_string().trim_start()))?;
            *t.get_ref()
        }
        None => DEFAULT_TIMEOUT_S,
    };
    let backend = match &r.backend {
        Some(b) => match b.get_ref().as_str() {
            "cpu" => BackendKind::Cpu,
            "cuda" => BackendKind::Cuda,
            "rocm" => BackendKind::Rocm,
            other => {
                return Err(ctx.err(
                    b.span(),
                    "links.backend",
                    format!("`{other}` is not a links transport: use \"cpu\" (MPI between host buffers, the default), \"cuda\" (NCCL send/recv between GPUs, one per rank) or \"rocm\" (RCCL send/recv between GCDs)"),
                ))
            }
        },
        None => BackendKind::Cpu,
    };
    // NCCL and RCCL move 4-byte words: refused here rather than by every rank of the step's job.
    if backend != BackendKind::Cpu && message_bytes % 4 != 0 {
        let span = r.size.as_ref().map_or_else(|| raw.span(), |v| v.span());
        return Err(ctx.err(
            span,
            "links.size",
            format!("{message_bytes} B: backend = \"{backend}\" sends whole 4-byte words (ncclInt32): give a multiple of 4 bytes, e.g. \"1MiB\""),
        ));
    }
    let floor = match &r.floor_fraction {
        None => LinksFloor::Default,
        Some(v) => {
            let bad = || {
                ctx.err(
                    v.span(),
                    "links.floor_fraction",
                    "give a fraction above 0 and at most 1 (0.5: an inter-node cell below half of its hosts' link ceiling is a finding), or \"off\"",
                )
            };
            match v.get_ref() {
                Value::String(s) if s.eq_ignore_ascii_case("off") => LinksFloor::Off,
                Value::Float(f) if *f > 0.0 && *f <= 1.0 => LinksFloor::Fraction(*f),
                Value::Integer(1) => LinksFloor::Fraction(1.0),
                _ => return Err(bad()),
            }
        }
    };
    Ok(Some(LinksStep {
        schedule,
        bidirectional: r.bidirectional.unwrap_or(false),
        message_bytes,
        iters,
        warmup,
        z,
        min_effect,
        timeout_s,
        backend,
        floor,
        at,
        schedule_at: r
            .schedule
            .as_ref()
            .map(|s| line_col(ctx.text, s.span().start)),
    }))
}

/// `links.size`: `"1MiB"` or a whole number of bytes, from 1 B to 1 GiB (`links --size`).
fn size(ctx: &Ctx<'_>, v: &Spanned<Value>) -> Result<u64, SpecError> {
    let err = |m: String| ctx.err(v.span(), "links.size", m);
    let bytes = match v.get_ref() {
        Value::String(s) => crate::units::parse_bytes(s)
            .map_err(|e| err(format!("{e}: give one size, e.g. \"1MiB\"")))?
            .get(),
        Value::Integer(i) if *i >= 0 => *i as u64,
        Value::Integer(i) => {
            return Err(err(format!(
                "{i} is negative: give a size from 1 B to 1 GiB, e.g. \"1MiB\""
            )))
        }
        other => {
            return Err(err(format!(
                "expected one size such as \"1MiB\" or a number of bytes, found {}",
                other.type_str()
            )))
        }
    };
    if bytes == 0 || bytes > MAX_MESSAGE_BYTES {
        return Err(err(format!(
            "{}: give a size from 1 B to 1 GiB (1 MiB and up measures bandwidth), e.g. \"1MiB\"",
            crate::units::format_bytes(bytes)
        )));
    }
    Ok(bytes)
}
