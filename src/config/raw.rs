//! The sweep spec as written: TOML with source spans, before any meaning is given to it.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// A map whose keys and values keep their position in the file.
pub(crate) type SpannedTable = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

/// The top level of a spec file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSpec {
    pub name: Option<Spanned<String>>,
    pub description: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<Spanned<String>, Spanned<String>>,
    /// Axes: each a value or a list; the product of all is taken.
    #[serde(default)]
    pub axes: SpannedTable,
    /// Groups of axes that advance together.
    #[serde(default)]
    pub zip: Vec<Spanned<SpannedTable>>,
    /// Combinations to drop.
    #[serde(default)]
    pub exclude: Vec<Spanned<SpannedTable>>,
    #[serde(default)]
    pub run: RawRun,
    #[serde(default)]
    pub launch: RawLaunch,
    /// Scheduler submission settings (`scalebench submit`).
    #[serde(default)]
    pub submit: Option<Spanned<SpannedTable>>,
    /// A `scalebench links` step run once per set-up (nodes × ranks per node).
    #[serde(default)]
    pub links: Option<Spanned<RawLinks>>,
}

/// `[links]`: the link-matrix step, as `scalebench links` takes its options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLinks {
    /// `round_robin`, `shift` or `rail` (hyphens accepted).
    pub schedule: Option<Spanned<String>>,
    pub bidirectional: Option<bool>,
    /// The message size: `"1MiB"` or a whole number of bytes.
    pub size: Option<Spanned<toml::Value>>,
    pub iters: Option<Spanned<i64>>,
    pub warmup: Option<Spanned<i64>>,
    pub z: Option<Spanned<f64>>,
    pub min_effect: Option<Spanned<f64>>,
    /// The step is killed (with its process group) after this many seconds.
    pub timeout_s: Option<Spanned<f64>>,
    /// The transport: `cpu` (MPI) or `cuda` (NCCL send/recv), as `links --backend`.
    pub backend: Option<Spanned<String>>,
    /// The absolute floor's fraction (a number in (0, 1]) or `"off"`, as `links --floor-fraction`.
    pub floor_fraction: Option<Spanned<toml::Value>>,
}

/// `[run]`: measurement settings, as for `scalebench run`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRun {
    pub iters: Option<Spanned<i64>>,
    pub warmup: Option<Spanned<i64>>,
    pub time_budget_s: Option<Spanned<f64>>,
    pub batches: Option<Spanned<i64>>,
    pub check: Option<Spanned<i64>>,
    /// CPU GEMM provider: `auto`, `blas` or `gemm-crate`.
    pub gemm: Option<Spanned<String>>,
    /// Where benchmark buffers start after a page boundary, bytes (`--buffer-offset`): one
    /// integer for send and receive buffers, or `[SEND, RECV]`.
    pub buffer_offset: Option<Spanned<toml::Value>>,
    /// The MPI thread level of every launch (`--thread-level`): `single`, `funneled`,
    /// `serialized` or `multiple`; default: the highest any launch needs.
    pub thread_level: Option<Spanned<String>>,
    /// Measure each host's ceilings at the start of each launch (default true; `false` as
    /// `--no-ceilings`).
    pub ceilings: Option<bool>,
}

/// `[launch]`: how local sweeps start their launches.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLaunch {
    pub oversubscribe: Option<bool>,
    pub timeout_s: Option<Spanned<f64>>,
    /// `scalebench run --op-timeout` for every launch (the watchdog's limit per case).
    pub op_timeout_s: Option<Spanned<f64>>,
    #[serde(default)]
    pub mpirun_args: Vec<Spanned<String>>,
    #[serde(default)]
    pub env: BTreeMap<Spanned<String>, Spanned<String>>,
    pub reserved_cores: Option<Spanned<String>>,
}
