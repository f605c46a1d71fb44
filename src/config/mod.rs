//! Sweep specs: a TOML file as written ([`raw`]) resolved into what it means ([`SweepSpec`]).
//!
//! ```toml
//! name = "quick-local"
//! [axes]                       # each a value or a list; the product of all is taken
//! nodes = [1, 2]
//! devices_per_node = [1, 2]    # = GPUs per node on GPU nodes
//! topology = ["pure", "hybrid"]
//! workloads = ["allreduce", "matmul"]
//! sizes = ["8B:1MiB:x4"]
//! [[zip]]                      # axes that advance together instead of multiplying
//! nodes = [1, 2]
//! dims = [1024, 2048]
//! [[exclude]]                  # combinations to drop
//! topology = "hybrid"
//! devices_per_node = 1
//! [run]                        # as `scalebench run`
//! time_budget_s = 0.2
//! [launch]                     # local launcher
//! oversubscribe = true
//! timeout_s = 300
//! [links]                      # a `scalebench links` step per set-up (nodes × ranks per node)
//! schedule = "round_robin"
//! size = "1MiB"
//! ```
//!
//! Every error names the file, line and column, the key, and how to fix it.

pub mod limits;
pub(crate) mod raw;
mod resolved;

pub use resolved::{
    Axis, AxisValue, Dim, Exclude, LinksFloor, LinksSchedule, LinksStep, LocalLaunch, SweepSpec,
};

use std::path::{Path, PathBuf};

/// A problem in a spec file, located.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}:{line}:{column}: {}{message}", crate::units::path_text(path), key.as_ref().map(|k| format!("{k}: ")).unwrap_or_default())]
pub struct SpecError {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    /// The key concerned, e.g. `axes.sizes`.
    pub key: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

// Where text input is read (results::io) is where offsets become line:column.
pub use crate::results::io::line_col;

/// Reads and resolves a spec file, printing its warnings (deprecated keys) on stderr: every
/// command that reads a spec comes through here, so each says them the same way.
pub fn load(path: &Path) -> Result<SweepSpec, SpecError> {
    let text = crate::results::io::read_input_text(path).map_err(|e| SpecError {
        path: path.to_path_buf(),
        line: 1,
        column: 1,
        key: None,
        message: match e {
            crate::results::io::ResultsError::Missing { .. } => {
                "cannot read the spec: no such file: check the path".to_string()
            }
            other => format!("cannot read the spec: {other}"),
        },
    })?;
    let spec = parse(path, &text)?;
    for w in &spec.warnings {
        eprintln!("scalebench: warning: {w}");
    }
    Ok(spec)
}

/// Resolves spec text; `path` is used in messages.
pub fn parse(path: &Path, text: &str) -> Result<SweepSpec, SpecError> {
    // A file with no key at all (0 bytes, or only comments) is a mistake, not the default
    // study: a truncated copy or a wrong path would otherwise run something nobody asked for.
    if text.parse::<toml::Table>().is_ok_and(|t| t.is_empty()) {
        return Err(SpecError {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            key: None,
            message: format!(
                "the spec is empty ({}, no key): give at least a name and [axes] (examples/ has specs to start from)",
                crate::units::count(text.len(), "byte", "bytes")
            ),
        });
    }
    let raw: raw::RawSpec = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        SpecError {
            path: path.to_path_buf(),
            line,
            column,
            key: e.span().and_then(|s| key_at(text, s.start)),
            message: format!("{} (see the spec format in README.md)", e.message().trim()),
        }
    })?;
    resolved::resolve(path, text, raw)
}

/// The dotted key (`run.iters`) whose value starts the line holding `offset`, for errors the
/// TOML deserializer reports with a position but without the key's name.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("");
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    let bare = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    };
    if !bare(key) {
        return None;
    }
    let table = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    Some(match table {
        Some(t) if bare(&t) => format!("{t}.{key}"),
        _ => key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_errors_name_the_key() {
        let e = parse(
            Path::new("s.toml"),
            "name = \"x\"\n[run]\niters = \"many\"\n",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("run.iters"), "{e}");
        assert!(e.to_string().starts_with("s.toml:3:"), "{e}");
        let e = parse(Path::new("s.toml"), "[launch]\noversubscribe = 3\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("launch.oversubscribe"), "{e}");
    }

    #[test]
    fn hostile_values_are_refused_with_the_limit() {
        for (text, needle) in [
            ("[launch]\ntimeout_s = 1e308\n", "launch.timeout_s"),
            ("[launch]\ntimeout_s = nan\n", "launch.timeout_s"),
            ("[axes]\ndevices_per_node = 100000\n", "1024"),
            ("[axes]\nthreads_per_device = 100000\n", "1024"),
            ("[axes]\nnodes = 65537\n", "65536"),
            ("name = \"a\\u001b[31mb\"\n", "control characters"),
            ("[run]\niters = 4294967295\n", "run.iters"),
        ] {
            let e = parse(Path::new("s.toml"), text).unwrap_err();
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn run_ceilings_turns_the_launch_measurement_off() {
        let on = |text: &str| parse(Path::new("s.toml"), text).map(|s| s.settings.ceilings);
        assert!(on("name = \"x\"\n").unwrap());
        assert!(on("[run]\nceilings = true\n").unwrap());
        assert!(!on("[run]\nceilings = false\n").unwrap());
        // not a boolean: refused with the line, nothing guessed
        let e = on("name = \"x\"\n[run]\nceilings = \"no\"\n").unwrap_err();
        assert!(e.to_string().starts_with("s.toml:3:"), "{e}");
        assert_eq!(e.line, 3);
    }

    #[test]
    fn buffer_offsets_as_the_command_line_takes_them() {
        let offset = |text: &str| {
            let s = parse(Path::new("s.toml"), text).unwrap();
            let o = s.settings.buffer_offset;
            (o.send_bytes, o.recv_bytes)
        };
        assert_eq!(offset("name = \"x\"\n"), (0, 0));
        assert_eq!(offset("[run]\nbuffer_offset = 16\n"), (16, 16));
        assert_eq!(offset("[run]\nbuffer_offset = [0, 16]\n"), (0, 16));
        // f32 by default: 4-byte steps; f64 named on an axis asks for 8.
        assert_eq!(offset("[run]\nbuffer_offset = 4\n"), (4, 4));
        let page = crate::backend::page_size_bytes();
        for (text, needle) in [
            ("[run]\nbuffer_offset = -16\n", "not a number of bytes"),
            ("[run]\nbuffer_offset = \"16\"\n", "not a number of bytes"),
            (
                "[run]\nbuffer_offset = [0, 16, 32]\n",
                "3 values: give BYTES",
            ),
            (
                &format!("[run]\nbuffer_offset = {page}\n"),
                "offsets are within a page",
            ),
            ("[run]\nbuffer_offset = 2\n", "multiple of 4"),
            (
                "[axes]\ndtypes = [\"f32\", \"f64\"]\n[run]\nbuffer_offset = [0, 4]\n",
                "multiple of 8",
            ),
        ] {
            let e = parse(Path::new("s.toml"), text).unwrap_err();
            assert_eq!(e.key.as_deref(), Some("run.buffer_offset"), "{text}: {e}");
            assert!(e.to_string().starts_with("s.toml:"), "{e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    /// `[links]`: the defaults are `scalebench links`' own; every bad value is refused at its
    /// line with the key and the fix; an unknown key is refused by the table.
    #[test]
    fn a_links_table_is_read_with_defaults_and_bad_values_are_located() {
        let spec = |t: &str| parse(Path::new("s.toml"), t);
        assert!(spec("name = \"x\"\n").unwrap().links.is_none());
        let l = spec("name = \"x\"\n[links]\n").unwrap().links.unwrap();
        assert_eq!(
            (
                l.schedule,
                l.bidirectional,
                l.message_bytes,
                l.iters,
                l.warmup
            ),
            (LinksSchedule::RoundRobin, false, 1 << 20, 10, 1)
        );
        assert_eq!(
            (l.z, l.min_effect, l.timeout_s, l.at),
            (5.0, 0.15, 600.0, (2, 1))
        );
        let l = spec("[links]\nschedule = \"shift\"\nbidirectional = true\nsize = 4096\niters = 3\nwarmup = 0\nz = 4\nmin_effect = 0.2\ntimeout_s = 30\n")
            .unwrap()
            .links
            .unwrap();
        assert_eq!(
            (
                l.schedule,
                l.bidirectional,
                l.message_bytes,
                l.iters,
                l.warmup
            ),
            (LinksSchedule::Shift, true, 4096, 3, 0)
        );
        assert_eq!((l.z, l.min_effect, l.timeout_s), (4.0, 0.2, 30.0));
        // The transport and the floor: MPI and the command's own floor unless given.
        assert_eq!(
            (l.backend, l.floor),
            (crate::params::BackendKind::Cpu, LinksFloor::Default)
        );
        let l = spec("[links]\nbackend = \"cuda\"\nfloor_fraction = 0.3\n")
            .unwrap()
            .links
            .unwrap();
        assert_eq!(
            (l.backend, l.floor),
            (crate::params::BackendKind::Cuda, LinksFloor::Fraction(0.3))
        );
        let l = spec("[links]\nbackend = \"rocm\"\n")
            .unwrap()
            .links
            .unwrap();
        assert_eq!(l.backend, crate::params::BackendKind::Rocm);
        let e = spec("[links]\nbackend = \"rocm\"\nsize = 1002\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("backend = \"rocm\" sends whole 4-byte words"),
            "{e}"
        );
        let l = spec("[links]\nfloor_fraction = \"off\"\n")
            .unwrap()
            .links
            .unwrap();
        assert_eq!(l.floor, LinksFloor::Off);
        assert_eq!(
            spec("[links]\nschedule = \"round-robin\"\nsize = \"64KiB\"\n")
                .unwrap()
                .links
                .unwrap()
                .message_bytes,
            64 << 10
        );
        for (text, key, needle) in [
            ("schedule = \"ring\"", "links.schedule", "round_robin"),
            ("size = \"0B\"", "links.size", "from 1 B to 1 GiB"),
            ("size = \"2GiB\"", "links.size", "from 1 B to 1 GiB"),
            ("size = -5", "links.size", "negative"),
            ("size = \"lots\"", "links.size", "e.g. \"1MiB\""),
            ("size = [1, 2]", "links.size", "one size"),
            ("iters = 0", "links.iters", "from 1"),
            ("warmup = -1", "links.warmup", "from 0"),
            ("z = 0", "links.z", "positive"),
            ("z = nan", "links.z", "positive"),
            ("min_effect = 1.0", "links.min_effect", "below 1"),
            ("min_effect = -0.1", "links.min_effect", "below 1"),
            (
                "timeout_s = 0",
                "links.timeout_s",
                "positive number of seconds",
            ),
            (
                "backend = \"tcp\"",
                "links.backend",
                "use \"cpu\" (MPI between host buffers, the default), \"cuda\"",
            ),
            (
                "floor_fraction = 0",
                "links.floor_fraction",
                "above 0 and at most 1",
            ),
            ("floor_fraction = 1.5", "links.floor_fraction", "or \"off\""),
            (
                "floor_fraction = \"half\"",
                "links.floor_fraction",
                "or \"off\"",
            ),
        ] {
            let e = spec(&format!("name = \"x\"\n[links]\n{text}\n")).unwrap_err();
            assert_eq!(e.line, 3, "{text}: {e}");
            assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
            assert!(e.to_string().starts_with("s.toml:3:"), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
        let e = spec("name = \"x\"\n[links]\nsizes = \"1MiB\"\n").unwrap_err();
        assert!(e.to_string().starts_with("s.toml:3:"), "{e}");
        assert!(e.to_string().contains("unknown field `sizes`"), "{e}");
        let e = spec("[links]\nbidirectional = \"yes\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        // NCCL's 4-byte words: an odd size with the cuda transport is refused at the size.
        let e = spec("name = \"x\"\n[links]\nbackend = \"cuda\"\nsize = 1001\n").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (4, Some("links.size")), "{e}");
        assert!(e.to_string().contains("multiple of 4 bytes"), "{e}");
    }
}
