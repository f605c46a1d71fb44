//! Command-line definitions (clap): what the user wrote, and its translation into the typed
//! requests the library's entry points take ([`crate::run::Request`], [`crate::plan::Request`],
//! [`crate::report::Request`], [`crate::compare::Request`], and `launch`'s sweep and submit
//! requests). Meaning (checks, defaults that need
//! the library) is given in `plan` (for `run`) and in each subcommand's module; no module below
//! this one imports it.
//!
//! Enums that exist only to derive `clap::ValueEnum` (their doc comments are the help text)
//! stay in this module (in the file of the command that uses them), each with a conversion
//! into the library's own type: the library's types differ
//! in shape (a metric choice wraps a metric, a format list is a set of flags) and stay free of
//! clap's derive.

// One file per command's arguments; the re-exports keep every `cli::…` path as it was.
mod ceilings;
mod compare;
mod history;
mod launch;
mod links;
mod replay;
mod report;
mod run;
#[cfg(test)]
mod tests;

pub use self::ceilings::*;
pub use self::compare::*;
pub use self::history::*;
pub use self::launch::*;
pub use self::links::*;
pub use self::replay::*;
pub use self::report::*;
pub use self::run::*;

use crate::units::{parse_size_list, Bytes};
use clap::{Parser, Subcommand};

const EXIT_CODES: &str =
    "Exit codes: 0 ok; 1 regression found (compare); 2 bad input or unusable environment; \
3 wrong results or failed cases (results are still written); 4 runtime failure (I/O, launcher, \
a hung job ended by the --op-timeout watchdog).";

/// `0.1.0 (commit 0123456789ab; features mpi,cuda)`, with `-dirty` when the tree had
/// uncommitted changes, or `(commit unknown; ...)` outside git (build.rs): every binary says
/// which code it runs and which optional backends it holds.
/// (A build whose build-script output predates the variable falls back to the bare version.)
const VERSION: &str = match option_env!("SCALEBENCH_VERSION_LONG") {
    Some(v) => v,
    None => env!("CARGO_PKG_VERSION"),
};

#[derive(Debug, Parser)]
#[command(
    name = "scalebench",
    version = VERSION,
    about = "Scaling studies for GPU clusters: collectives and GEMM under MPI and Slurm, with reports and CI regression checks",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure collectives and GEMMs in this MPI job (start it with mpirun/srun, or alone as one rank).
    Run(Box<RunArgs>),
    /// Replay a traced job's collectives (an NCCL/RCCL log or a PyTorch execution trace) in
    /// this MPI job, in order, each validated; compute as the recorded gaps (docs/replay.md).
    Replay(Box<ReplayArgs>),
    /// Show the launches and cases a sweep spec expands to (nothing runs).
    Plan(PlanArgs),
    /// Run a sweep spec on this machine: one mpirun per launch, every finished case kept.
    Sweep(SweepArgs),
    /// Show this machine's topology (hwloc) and the CPUs each binding policy would give.
    Topo(TopoArgs),
    /// Measure this host's ceilings (FMA peak per instruction set, STREAM memory bandwidth,
    /// on one CPU and on all offered) and check the GEMM library's kernel; no study runs.
    Ceilings(CeilingsArgs),
    /// Find the slow node or link: a pairwise bandwidth matrix, attributed to nodes, links and
    /// blocks of nodes (exit 1 when anything is named); `--simulate` for the attribution alone.
    Links(LinksArgs),
    /// Submit a sweep spec to a scheduler: one job per allocation shape (job arrays where shapes
    /// repeat), then a job that merges the results. UGE and PBS scripts with --dry-run.
    Submit(SubmitArgs),
    /// Show the jobs of a submitted run (bounded polling of the scheduler).
    Status(StatusArgs),
    /// Merge a run directory's results into results.json, recording failed or missing jobs.
    Collect(CollectArgs),
    /// Record how a launch ended (run inside job scripts).
    #[command(hide = true)]
    FinishLaunch(FinishLaunchArgs),
    /// Watch a launch's stderr.log and end the launch early once its ranks reported a fatal
    /// MPI error (run inside job scripts, beside the launch).
    #[command(hide = true)]
    WatchLaunch(WatchLaunchArgs),
    /// Compare two results files case by case: relative change of the median with a confidence
    /// interval, multiple-comparison control, a noise band; exit 1 on a regression.
    Compare(CompareArgs),
    /// Build a report from results files: charts (SVG, PNG), report.html, report.md and
    /// results.csv with scaling efficiency, α–β model fits, pure vs hybrid, binding, stragglers.
    Report(ReportArgs),
    /// Performance history: index results files (SQLite), show each case's series across runs,
    /// find change points.
    History(HistoryArgs),
}

/// clap's message for a command line it refused, with every quoted value (`'…'`, `` `…` ``,
/// `"…"`) over [`crate::units::ECHO_CHARS`] characters shortened to its head and length as
/// everywhere else: clap echoes a value whole, and 5,000 characters of `--sizes` (twice: in
/// clap's words and in the parser's) would bury the sentence.
/// An argument that is not UTF-8 where text is wanted is named by its place (clap says only
/// that one was found), e.g. `the value of --sizes`.
pub fn refusal_text(e: &clap::Error, argv: &[std::ffi::OsString]) -> String {
    if e.kind() == clap::error::ErrorKind::InvalidUtf8 {
        // The culprit: the argument that alone (every other made UTF-8) still gives the error;
        // a path before it may hold such bytes as it pleases.
        let alone = |i: usize| {
            let only: Vec<std::ffi::OsString> = argv
                .iter()
                .enumerate()
                .map(|(j, a)| {
                    if j == i {
                        a.clone()
                    } else {
                        a.to_string_lossy().into_owned().into()
                    }
                })
                .collect();
            Cli::try_parse_from(only)
                .is_err_and(|e| e.kind() == clap::error::ErrorKind::InvalidUtf8)
        };
        let culprit = (0..argv.len()).find(|&i| argv[i].to_str().is_none() && alone(i));
        if let Some(i) = culprit {
            let place = match argv.get(i.wrapping_sub(1)).and_then(|p| p.to_str()) {
                Some(prev) if prev.starts_with('-') && i > 1 => format!("the value of {prev}"),
                _ => format!("argument {i}"),
            };
            return format!(
                "error: {place} ({}) is not UTF-8 text: give it as UTF-8 (only a path may hold other bytes)\n",
                crate::units::shorten(&argv[i].to_string_lossy())
            );
        }
    }
    shorten_quoted(&e.render().to_string())
}

/// `text` with each quoted stretch longer than [`crate::units::ECHO_CHARS`] shortened.
fn shorten_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4096));
    let mut rest = text;
    while let Some(open) = rest.find(['\'', '`', '"']) {
        let q = rest[open..].chars().next().unwrap_or('\'');
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        match after.find(q) {
            Some(close) => {
                let quoted = &after[..close];
                // Shortened once: a parser's message may hold a value it shortened itself.
                let done = quoted.ends_with(" chars)") && quoted.contains('…');
                out.push_str(&if done {
                    quoted.to_string()
                } else {
                    crate::units::shorten(quoted)
                });
                out.push(q);
                rest = &after[close + 1..];
            }
            None => {
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A comma-separated size list with ranges, parsed as one value (`8B:1GiB:x2,3MiB`).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeList(pub Vec<Bytes>);

fn parse_sizes(s: &str) -> Result<SizeList, String> {
    parse_size_list(s).map(SizeList).map_err(|e| e.to_string())
}

fn parse_buffer_offset(s: &str) -> Result<crate::params::BufferOffset, String> {
    let num = |v: &str| {
        v.trim().parse::<u64>().map_err(|_| {
            format!("`{v}` is not a number of bytes: give BYTES or SEND,RECV, e.g. 0,16")
        })
    };
    let (send, recv) = match s.split_once(',') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => (num(s)?, num(s)?),
    };
    Ok(crate::params::BufferOffset {
        send_bytes: send,
        recv_bytes: recv,
    })
}
