//! `scalebench links`' arguments.

use crate::links::attribution::Settings;
use crate::links::simulate::Scenario;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct LinksArgs {
    /// Attribute a simulated matrix of NODES nodes instead of measuring (no MPI): the
    /// attribution alone, with known faults.
    #[arg(long, value_name = "NODES")]
    pub simulate: Option<usize>,
    /// The simulation's random seed.
    #[arg(long, default_value_t = 1, requires = "simulate")]
    pub seed: u64,
    /// Simulate node K at FACTOR of full speed on all its links (default 0.5); repeatable.
    #[arg(long, value_name = "K[:FACTOR]", value_parser = parse_slow_node, requires = "simulate")]
    pub slow_node: Vec<(usize, f64)>,
    /// Simulate the link between nodes A and B (both directions) at FACTOR (default 0.5).
    #[arg(long, value_name = "A:B[:FACTOR]", value_parser = parse_slow_link, requires = "simulate")]
    pub slow_link: Vec<(usize, usize, f64)>,
    /// Simulate nodes A to B slow toward the rest (a switch) at FACTOR (default 0.5).
    #[arg(long, value_name = "A-B[:FACTOR]", value_parser = parse_slow_block, requires = "simulate")]
    pub slow_block: Vec<(usize, usize, f64)>,
    /// Simulated log-normal noise per cell (0.05: 5 %).
    #[arg(
        long,
        default_value_t = 0.05,
        value_name = "FRACTION",
        requires = "simulate"
    )]
    pub noise: f64,
    /// Name a suspect only at a robust z below −Z…
    #[arg(long = "z", default_value_t = 5.0, value_name = "Z")]
    pub z: f64,
    /// …and at least this fraction slower than expected (0.15: at most 85 %).
    #[arg(long, default_value_t = 0.15, value_name = "FRACTION")]
    pub min_effect: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The rounds: concurrent disjoint pairs (every pair once), or mpiGraph's shift rounds
    /// (every rank sends and receives in every round: the fabric under full load).
    #[arg(
        long,
        value_enum,
        default_value = "round-robin",
        conflicts_with = "simulate"
    )]
    pub schedule: ScheduleArg,
    /// Both directions of a pair at once (shift rounds always are).
    #[arg(long, conflicts_with = "simulate")]
    pub bidirectional: bool,
    /// Message size (1 MiB and up measures bandwidth; small sizes measure latency).
    #[arg(long, default_value = "1MiB", value_parser = parse_bytes, conflicts_with = "simulate")]
    pub size: u64,
    /// Timed exchanges per cell (the cell is the size over their median time).
    #[arg(long, default_value_t = 10, conflicts_with = "simulate")]
    pub iters: u32,
    /// Untimed exchanges first (connection set-up, registration).
    #[arg(long, default_value_t = 1, conflicts_with = "simulate")]
    pub warmup: u32,
    /// Directory for links.json (created if missing; default: the current directory).
    #[arg(long, conflicts_with = "simulate")]
    pub out: Option<std::path::PathBuf>,
    /// Test-only: `slow_link:A:B:TIMES` makes ranks A and B's exchanges take TIMES as long.
    #[arg(long, hide = true, conflicts_with = "simulate")]
    pub fault: Option<String>,
}

/// `--schedule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScheduleArg {
    /// Concurrent disjoint pairs, every pair once (a 1-factorisation; N odd: one idle a round).
    RoundRobin,
    /// mpiGraph's shift rounds: rank r sends to r+D while receiving from r−D.
    Shift,
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    crate::units::parse_bytes(s)
        .map(|b| b.0)
        .map_err(|e| e.to_string())
}

impl LinksArgs {
    /// The attribution's thresholds (checked by `links`).
    pub fn settings(&self) -> Settings {
        Settings {
            z: self.z,
            min_effect: self.min_effect,
            ..Settings::default()
        }
    }

    /// The measurement's request (an MPI job).
    #[cfg(feature = "mpi")]
    pub fn measure(&self) -> crate::run::links::Request {
        use crate::run::links::Schedule;
        crate::run::links::Request {
            schedule: match self.schedule {
                ScheduleArg::RoundRobin => Schedule::RoundRobin,
                ScheduleArg::Shift => Schedule::Shift,
            },
            bidirectional: self.bidirectional,
            message_bytes: self.size,
            iters: self.iters,
            warmup: self.warmup,
            out: self.out.clone(),
            fault: self.fault.clone(),
            settings: self.settings(),
            json: self.json,
        }
    }

    /// The simulated scenario, if `--simulate` was given.
    pub fn scenario(&self) -> Option<Scenario> {
        self.simulate.map(|nodes| Scenario {
            nodes,
            seed: self.seed,
            slow_nodes: self.slow_node.clone(),
            slow_links: self.slow_link.clone(),
            slow_blocks: self.slow_block.clone(),
            noise: self.noise,
        })
    }
}

const DEFAULT_FACTOR: f64 = 0.5;

fn node(s: &str, what: &str) -> Result<usize, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a node number (0, 1, …) in {what}"))
}

/// `X` or `X:FACTOR` → (X, factor).
fn with_factor<'a>(s: &'a str, what: &str) -> Result<(&'a str, f64), String> {
    match s.rsplit_once(':') {
        Some((head, f)) if what != "A:B" || head.contains(':') => {
            let f: f64 = f.trim().parse().map_err(|_| {
                format!("`{f}` is not a factor in {what}[:FACTOR] (0.7: 70 % of full speed)")
            })?;
            Ok((head, f))
        }
        _ => Ok((s, DEFAULT_FACTOR)),
    }
}

fn parse_slow_node(s: &str) -> Result<(usize, f64), String> {
    let (k, f) = with_factor(s, "K")?;
    Ok((node(k, "K[:FACTOR]")?, f))
}

fn parse_slow_link(s: &str) -> Result<(usize, usize, f64), String> {
    let (ab, f) = with_factor(s, "A:B")?;
    let (a, b) = ab
        .split_once(':')
        .ok_or_else(|| format!("`{s}`: expected A:B[:FACTOR], e.g. 3:9:0.5"))?;
    Ok((node(a, "A:B")?, node(b, "A:B")?, f))
}

fn parse_slow_block(s: &str) -> Result<(usize, usize, f64), String> {
    let (ab, f) = with_factor(s, "A-B")?;
    let (a, b) = ab
        .split_once('-')
        .ok_or_else(|| format!("`{s}`: expected A-B[:FACTOR], e.g. 40-47:0.6"))?;
    Ok((node(a, "A-B")?, node(b, "A-B")?, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_syntax() {
        assert_eq!(parse_slow_node("17"), Ok((17, 0.5)));
        assert_eq!(parse_slow_node("17:0.7"), Ok((17, 0.7)));
        assert_eq!(parse_slow_link("3:9"), Ok((3, 9, 0.5)));
        assert_eq!(parse_slow_link("3:9:0.48"), Ok((3, 9, 0.48)));
        assert_eq!(parse_slow_block("40-47:0.6"), Ok((40, 47, 0.6)));
        assert_eq!(parse_slow_block("40-47"), Ok((40, 47, 0.5)));
        assert!(parse_slow_link("3").unwrap_err().contains("A:B[:FACTOR]"));
        assert!(parse_slow_node("x")
            .unwrap_err()
            .contains("not a node number"));
        assert!(parse_slow_node("1:fast")
            .unwrap_err()
            .contains("not a factor"));
    }
}
