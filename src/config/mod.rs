//! Sweep specs: a TOML file as written ([`raw`]) resolved into what it means ([`SweepSpec`]).
//!
//! ```toml
//! name = "quick-local"
//! [axes]                       # each a value or a list; the product of all is taken
//! nodes = [1, 2]
//! ranks_per_node = [1, 2]      # = GPUs per node on GPU nodes
//! topology = ["pure", "hybrid"]
//! workloads = ["allreduce", "matmul"]
//! sizes = ["8B:1MiB:x4"]
//! [[zip]]                      # axes that advance together instead of multiplying
//! nodes = [1, 2]
//! dims = [1024, 2048]
//! [[exclude]]                  # combinations to drop
//! topology = "hybrid"
//! ranks_per_node = 1
//! [run]                        # as `scalebench run`
//! time_budget_s = 0.2
//! [launch]                     # local launcher
//! oversubscribe = true
//! timeout_s = 300
//! ```
//!
//! Every error names the file, line and column, the key, and how to fix it.

pub mod raw;
mod resolved;

pub use resolved::{Axis, AxisValue, Dim, Exclude, LocalLaunch, SweepSpec};

use std::path::{Path, PathBuf};

/// A problem in a spec file, located.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}:{line}:{column}: {}{message}", path.display(), key.as_ref().map(|k| format!("{k}: ")).unwrap_or_default())]
pub struct SpecError {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    /// The key concerned, e.g. `axes.sizes`.
    pub key: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.chars().count(), |i| before[i + 1..].chars().count())
        + 1;
    (line, col)
}

/// Reads and resolves a spec file.
pub fn load(path: &Path) -> Result<SweepSpec, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|e| SpecError {
        path: path.to_path_buf(),
        line: 1,
        column: 1,
        key: None,
        message: format!("cannot read the spec: {e}"),
    })?;
    parse(path, &text)
}

/// Resolves spec text; `path` is used in messages.
pub fn parse(path: &Path, text: &str) -> Result<SweepSpec, SpecError> {
    let raw: raw::RawSpec = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        SpecError {
            path: path.to_path_buf(),
            line,
            column,
            key: None,
            message: format!("{} (see the spec format in README.md)", e.message().trim()),
        }
    })?;
    resolved::resolve(path, text, raw)
}
