//! `scalebench links`: find the slow node or link. Pair [`schedule`]s say who exchanges with
//! whom in each round; [`attribution`] fits the N×N bandwidth matrix (median polish of log
//! bandwidth) and names slow nodes, links and blocks, each with its effect size and confidence;
//! [`simulate`] makes matrices with known faults for testing the attribution alone;
//! [`floor`] holds inter-node cells to a fraction of the hosts' link ceiling (a uniformly slow
//! fabric, which the relative attribution cannot see).
//!
//! A leaf beside `stats`: pure, no MPI; the measurement over MPI is `run::links`, and the
//! report reads the matrix back from results files.

pub mod attribution;
pub mod floor;
pub mod schedule;
pub mod simulate;

use attribution::{Analysis, Settings};

/// Why `scalebench links` cannot attribute (bad input: exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LinksError {
    #[error(transparent)]
    Scenario(#[from] simulate::ScenarioError),
    #[error("--z {0}: expected a positive number (3 by default)")]
    Z(f64),
    #[error("--min-effect {0}: expected a fraction in [0, 1) (0.15: at most 85 % of expected)")]
    MinEffect(f64),
    #[error("--fault {}: expected slow_link:A:B:TIMES (test-only; A ≠ B, TIMES from 1 to 1000) or hang_start:R (test-only: rank R blocks before MPI_Init)", crate::units::shorten(.0))]
    Fault(String),
    #[error("--fault slow_link:{a}:{b}: this job has ranks 0..{ranks}")]
    FaultRanks { a: usize, b: usize, ranks: usize },
    #[error("--schedule rail pairs each node's k-th rank with the k-th rank of the other nodes, and this job's {ranks} ranks run on one node ({node}), so there is no such pair: run on several nodes, or use --schedule round-robin")]
    RailOneNode { ranks: usize, node: String },
    #[error("links measures pairs of ranks and this job has {ranks}: start it with at least 2 (e.g. `mpirun -np 4 scalebench links`, or `srun -N 2 --ntasks-per-node 1 scalebench links`)")]
    OneRank { ranks: usize },
    #[error("--iters {0}: give at least 1")]
    Iters(u32),
    #[error("--size {0}: give at least 1 byte and at most 1 GiB")]
    Size(u64),
    /// A topology file that cannot be read: the reader's sentence (file, line, fix).
    #[error("--topology {0}")]
    Topology(String),
    #[error("this scalebench was built without MPI (no `mpi` feature), so `links` can only --simulate: rebuild with default features")]
    NoMpi,
    #[error("--out {}: exists and is not a directory: give a directory (it is created if missing)", .0.display())]
    OutNotADirectory(std::path::PathBuf),
}

/// `--out` names a directory, or nothing yet: an existing file there is the user's mistake
/// (exit 2, before anything runs), not a failed write at the end (exit 4).
pub fn check_out(out: Option<&std::path::Path>) -> Result<(), LinksError> {
    match out {
        Some(o) if o.exists() && !o.is_dir() => Err(LinksError::OutNotADirectory(o.to_path_buf())),
        _ => Ok(()),
    }
}

impl LinksError {
    pub fn exit_code(&self) -> u8 {
        crate::exit::EXIT_BAD_INPUT
    }
}

impl Settings {
    /// Thresholds that can name anything and not everything.
    pub fn check(&self) -> Result<(), LinksError> {
        if !(self.z > 0.0 && self.z.is_finite()) {
            return Err(LinksError::Z(self.z));
        }
        if !(self.min_effect >= 0.0 && self.min_effect < 1.0) {
            return Err(LinksError::MinEffect(self.min_effect));
        }
        Ok(())
    }
}

/// The exit code of an attribution: 1 when anything is named, 0 when healthy.
pub fn exit_code(a: &Analysis) -> u8 {
    if a.findings.is_empty() {
        crate::exit::EXIT_OK
    } else {
        crate::exit::EXIT_REGRESSION
    }
}

/// The findings list as printed: one line per suspect, or one line saying the matrix is healthy.
pub fn render(a: &Analysis, names: &[String], s: &Settings) -> String {
    let mut out = String::new();
    if let Some(note) = &a.note {
        out.push_str(&format!("no verdict: {note}\n"));
        return out;
    }
    out.push_str(&format!(
        "{} nodes, median {:.2} GB/s, cell noise ±{:.1} % (robust)\n",
        names.len(),
        a.median_gbps,
        a.residual_spread * 100.0
    ));
    if a.findings.is_empty() {
        out.push_str(&format!(
            "healthy: no node, link or block below {:.0} % of expected at a family-wise error of {} per kind (Holm over {} nodes and {} links, z < −{} at least)\n",
            (1.0 - s.min_effect) * 100.0,
            s.alpha,
            names.len(),
            names.len() * names.len().saturating_sub(1) / 2,
            s.z
        ));
    }
    for f in &a.findings {
        out.push_str(&f.describe(names));
        out.push('\n');
    }
    out
}

/// `scalebench links --simulate`: simulate, attribute, print; exit 1 if anything is named.
pub fn simulate_command(
    scenario: &simulate::Scenario,
    settings: &Settings,
    json: bool,
) -> Result<u8, LinksError> {
    settings.check()?;
    scenario.check()?;
    let m = scenario.matrix();
    let a = attribution::analyse(&m, settings);
    if json {
        let doc = serde_json::json!({ "nodes": m.names, "analysis": a });
        println!("{doc:#}");
    } else {
        print!("{}", render(&a, &m.names, settings));
    }
    Ok(exit_code(&a))
}

#[cfg(test)]
mod tests;
