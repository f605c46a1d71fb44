//! `scalebench links`' arguments.

use crate::error::Error;
use crate::links::attribution::{self, Matrix, Settings};
use crate::links::simulate::Scenario;
use crate::results::links::{LinksFile, LINKS_CHART, LINKS_FILE, LINKS_FORMAT_VERSION};
use clap::Args;
use std::path::Path;

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
    /// Name a suspect only when Holm's family-wise test over all cells of its kind names it
    /// (at most a 0.5 % chance per kind of naming anything on a healthy cluster, at any size),
    /// and never at a robust z above −Z…
    #[arg(long = "z", default_value_t = 3.0, value_name = "Z")]
    pub z: f64,
    /// …and at least this fraction slower than expected (0.15: at most 85 %).
    #[arg(long, default_value_t = 0.15, value_name = "FRACTION")]
    pub min_effect: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The rounds: concurrent disjoint pairs (every pair once), mpiGraph's shift rounds
    /// (every rank sends and receives in every round: the fabric under full load), or per rail
    /// (the same local rank across nodes; needs several nodes).
    #[arg(
        long,
        value_enum,
        default_value = "round-robin",
        conflicts_with = "simulate"
    )]
    pub schedule: ScheduleArg,
    /// How the pairs exchange: cpu (MPI between host buffers, wall clock) or cuda (NCCL
    /// send/recv between GPUs, one per rank — its local rank's —, timed with CUDA events;
    /// needs the `cuda` feature).
    #[arg(long, default_value = "cpu", conflicts_with = "simulate")]
    pub backend: crate::params::BackendKind,
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
    /// Directory for links.json and its heat map links.svg (created if missing; default: the
    /// current directory). With --simulate, nothing is written unless it is given.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Leaf switches in Slurm's topology.conf syntax (`SwitchName=s1 Nodes=n[1-8]`), so each
    /// switch's nodes are analysed and drawn side by side and a slow block names its switch.
    /// Default: inside a Slurm job, what `scontrol show topology` lists.
    #[arg(long, value_name = "FILE", conflicts_with = "simulate")]
    pub topology: Option<std::path::PathBuf>,
    /// Test-only: `slow_link:A:B:TIMES` makes ranks A and B's exchanges take TIMES as long;
    /// `hang_start:R` blocks rank R before MPI_Init (the start-up watchdog's test).
    #[arg(long, hide = true, conflicts_with = "simulate")]
    pub fault: Option<String>,
    /// The absolute floor: an inter-node cell below F × the slower host's network link
    /// ceiling (read from sysfs by each host's first rank) is a finding, re-measured alone
    /// before it counts; 0 < F <= 1, or `off`. Held at --size 1MiB and up.
    #[arg(
        long,
        value_name = "F",
        default_value = "0.5",
        value_parser = parse_floor_fraction,
        conflicts_with = "simulate"
    )]
    pub floor_fraction: FloorFraction,
    /// The watchdog: a rank stuck longer than this in the start-up (MPI_Init included) or in
    /// one round of exchanges ends itself with one sentence (exit 4).
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS", value_parser = parse_op_timeout, conflicts_with = "simulate")]
    pub op_timeout: f64,
    /// Test-only: the sysfs tree the host leaders read their network link ceiling from.
    #[arg(long, hide = true, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: std::path::PathBuf,
}

/// `--floor-fraction`: the fraction, or `None` for off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloorFraction(pub Option<f64>);

fn parse_floor_fraction(s: &str) -> Result<FloorFraction, String> {
    crate::links::floor::parse_fraction(s)
        .map(FloorFraction)
        .map_err(|e| e.to_string())
}

/// `--schedule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScheduleArg {
    /// Concurrent disjoint pairs, every pair once (a 1-factorisation; N odd: one idle a round).
    RoundRobin,
    /// mpiGraph's shift rounds: rank r sends to r+D while receiving from r−D.
    Shift,
    /// Per rail: each node's k-th rank with the k-th rank of every other node (the same GPU
    /// or NIC index: one rail of a rail-optimised fabric), rails side by side.
    Rail,
}

/// `--op-timeout`: seconds, more than 0 and at most a day.
fn parse_op_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 86_400.0 => Ok(x),
        _ => Err(format!(
            "{s:?} is not a number of seconds above 0 and at most 86400 (a day): give e.g. 120"
        )),
    }
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
            backend: self.backend,
            schedule: match self.schedule {
                ScheduleArg::RoundRobin => Schedule::RoundRobin,
                ScheduleArg::Shift => Schedule::Shift,
                ScheduleArg::Rail => Schedule::Rail,
            },
            bidirectional: self.bidirectional,
            message_bytes: self.size,
            iters: self.iters,
            warmup: self.warmup,
            out: self.out.clone(),
            fault: self.fault.clone(),
            settings: self.settings(),
            json: self.json,
            heat_map: Some(heat_map),
            topology: self.topology.clone(),
            floor_fraction: self.floor_fraction.0,
            sysfs_root: self.sysfs_root.clone(),
            op_timeout: std::time::Duration::from_secs_f64(self.op_timeout),
        }
    }

    /// `--simulate … --out DIR`: simulate, attribute, write `links.json` (labelled simulated)
    /// and `links.svg`, print as `--simulate` does; exit 1 if anything is named.
    pub fn simulate_to(&self, scenario: &Scenario, dir: &Path) -> Result<u8, Error> {
        let settings = self.settings();
        settings.check()?;
        crate::links::check_out(Some(dir))?;
        scenario
            .check()
            .map_err(crate::links::LinksError::Scenario)?;
        let m = scenario.matrix();
        let a = attribution::analyse(&m, &settings);
        let file = simulated_file(scenario, &m, &a);
        // Drawn before anything is written: a chart that cannot be drawn leaves no files.
        let svg = crate::report::links_heat_map_svg(&file)?;
        let text = file.to_json_bytes();
        std::fs::create_dir_all(dir).map_err(|source| crate::results::io::ResultsError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        crate::results::io::write_atomic(&dir.join(LINKS_FILE), &text)?;
        crate::results::io::write_atomic(&dir.join(LINKS_CHART), svg.as_bytes())?;
        if self.json {
            println!("{}", String::from_utf8_lossy(&text));
        } else {
            print!("{}", crate::links::render(&a, &m.names, &settings));
            println!(
                "wrote {} and {}",
                dir.join(LINKS_FILE).display(),
                dir.join(LINKS_CHART).display()
            );
        }
        Ok(crate::links::exit_code(&a))
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

/// The heat map `scalebench links` writes beside links.json (the report draws it; `run` may
/// not import `report`, so the edge hands it over).
#[cfg(feature = "mpi")]
fn heat_map(file: &LinksFile) -> Result<String, String> {
    crate::report::links_heat_map_svg(file).map_err(|e| e.to_string())
}

/// A simulated matrix as a links file: nothing was measured (no sizes, no iterations), no
/// suspect was re-measured in isolation, and `simulated` says what was simulated.
pub fn simulated_file(s: &Scenario, m: &Matrix, a: &attribution::Analysis) -> LinksFile {
    let n = m.n();
    let mut what = vec![format!(
        "{} nodes, seed {}, {:.0} % log-normal noise",
        n,
        s.seed,
        s.noise * 100.0
    )];
    what.extend(
        s.slow_nodes
            .iter()
            .map(|(k, f)| format!("slow node {k} at {f}")),
    );
    what.extend(
        s.slow_links
            .iter()
            .map(|(x, y, f)| format!("slow link {x}:{y} at {f}")),
    );
    what.extend(
        s.slow_blocks
            .iter()
            .map(|(x, y, f)| format!("slow block {x}-{y} at {f}")),
    );
    let findings = a
        .findings
        .iter()
        .map(|f| {
            let text = format!("{}; simulated: no isolated re-test", f.describe(&m.names));
            crate::run::link_record::link_finding(f, None, false, text)
        })
        .collect();
    LinksFile {
        links_format_version: LINKS_FORMAT_VERSION,
        generator: crate::results::io::this_generator(),
        schedule: "simulated".into(),
        bidirectional: false,
        message_bytes: 0,
        iters: 0,
        warmup: 0,
        // Each simulated node is a host of its own: every pair is inter-node.
        hosts: m.names.clone(),
        emulated_nodes: false,
        analysed: "inter_node".into(),
        matrix_gbps: (0..n)
            .map(|i| m.gbps[i * n..(i + 1) * n].to_vec())
            .collect(),
        median_gbps: a.median_gbps.is_finite().then_some(a.median_gbps),
        residual_spread: a.residual_spread.is_finite().then_some(a.residual_spread),
        findings,
        note: a.note.clone(),
        fault: None,
        simulated: Some(what.join(", ")),
        transport: None,
        nccl_version: None,
        standin: None,
        topology: None,
        switches: Vec::new(),
        order: Vec::new(),
        floor: None,
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
