//! The link matrix file (`links.json`) that `scalebench links` writes: the N×N bandwidth
//! matrix with how it was measured, and the verdicts with both passes (under load, isolated).
//! Versioned on its own (`links_format_version`); readers refuse versions they do not know.
//!
//! Versions: 1, MPI only; 2 adds the transport (`transport`, `nccl_version`, `standin`), which
//! every measured file of version 2 carries; 3 adds the absolute floor (`floor`: each rank's
//! host link ceiling and the cells held below a fraction of it), which every measured file of
//! version 3 carries. This build reads all three (a version-1 file was measured over MPI; a
//! file before version 3 was not held to a floor) and writes 3; an older reader refuses a newer
//! file by its number rather than by an unknown field.

use super::io::{read_input_text, ResultsError};
use super::schema::Generator;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version this build writes.
pub const LINKS_FORMAT_VERSION: u32 = 3;

/// The oldest version this build reads.
pub const LINKS_FORMAT_OLDEST: u32 = 1;

/// The file's name in a run directory.
pub const LINKS_FILE: &str = "links.json";

/// The heat map `scalebench links` writes beside it.
pub const LINKS_CHART: &str = "links.svg";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinksFile {
    pub links_format_version: u32,
    pub generator: Generator,
    /// `round_robin` (concurrent disjoint pairs), `shift` (mpiGraph's rounds, all ranks busy)
    /// or `rail` (the same local rank across nodes).
    pub schedule: String,
    /// Both directions at once, or one after the other.
    pub bidirectional: bool,
    pub message_bytes: u64,
    /// Timed exchanges per cell (the cell is bytes over their median time), after `warmup`.
    pub iters: u32,
    pub warmup: u32,
    /// Rank r's node (its host, or Slurm's node name); cells between ranks on one node are
    /// intra-node.
    pub hosts: Vec<String>,
    /// The nodes were emulated: Slurm nodes that share one host (a local test cluster).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emulated_nodes: bool,
    /// Which cells the attribution used: `inter_node` (pairs on different hosts) when the job
    /// spans several hosts, else `intra_node` (all pairs on the one host).
    pub analysed: String,
    /// `matrix_gbps[i][j]`: i → j in GB/s (1e9 bytes/s), measured on the rank that completed
    /// it; `null` on the diagonal.
    pub matrix_gbps: Vec<Vec<Option<f64>>>,
    pub median_gbps: Option<f64>,
    /// The robust spread of the residuals (≈ the relative noise of one cell).
    pub residual_spread: Option<f64>,
    pub findings: Vec<LinkFinding>,
    /// Why no attribution was made, if none was.
    #[serde(default)]
    pub note: Option<String>,
    /// The test-only fault that slowed a pair, if any (so no reader mistakes it for the fabric).
    #[serde(default)]
    pub fault: Option<String>,
    /// Set when the matrix was simulated (`scalebench links --simulate … --out`): the scenario,
    /// so no reader takes it for a measurement. Absent in measured files (and in files written
    /// before the field existed), so older readers still read measured files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated: Option<String>,
    /// How the cells were measured: `mpi` (host buffers, wall clock on the sender) or `nccl`
    /// (ncclSend/ncclRecv between GPUs, one per rank, CUDA events on the receiver's stream).
    /// Absent in simulated files and in version-1 files (all MPI): see [`LinksFile::transport`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The NCCL version that moved the bytes (`nccl` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    /// Set when the CUDA libraries were scalebench's CPU stand-ins: their STAND-IN label; then
    /// no number in the file is a GPU's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standin: Option<String>,
    /// Where the node order came from: `slurm: scontrol show topology`, `file: PATH`, or
    /// `not known: …` (under Slurm without a topology plugin). Absent: none asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// The leaf switches (or blocks) of the job's nodes, as the topology lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub switches: Vec<SwitchRecord>,
    /// The ranks in the order the attribution read them and the heat map draws them (each
    /// leaf's nodes side by side); empty: rank order. The matrix stays in rank order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<usize>,
    /// The absolute floor (version 3): inter-node cells held to a fraction of the slower host's
    /// network link ceiling. Absent in simulated files and in files before version 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<FloorRecord>,
}

/// A leaf switch and its nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchRecord {
    pub name: String,
    pub nodes: Vec<String>,
}

/// The absolute floor as measured files record it (`scalebench links`, version 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloorRecord {
    /// A cell below this fraction of its pair's link ceiling is a finding; `null`: the floor
    /// was switched off (`--floor-fraction off`).
    pub fraction: Option<f64>,
    /// The floor holds cells of messages this large and up (smaller ones are latency-bound).
    pub min_message_bytes: u64,
    /// Rank r's host link as one pair can reach it (GB/s per direction: one rail, the slowest
    /// active InfiniBand/RoCE port, else the Ethernet link; `net.link` on one-rail hosts) as its
    /// host leader read it from sysfs; `null` where none is known (never invented).
    pub link_gbps: Vec<Option<f64>>,
    /// Inter-node cells held to the floor (both hosts' links known).
    pub checked_cells: usize,
    pub findings: Vec<FloorFindingRecord>,
    /// Why some or all cells were not held (one host, small messages, unknown links, off).
    #[serde(default)]
    pub note: Option<String>,
}

/// One cell group below the floor, with its isolated re-measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloorFindingRecord {
    /// `fabric` (every checked cell), `node` (every cell of one rank) or `link` (one pair).
    pub kind: String,
    /// The ranks it names: none for the fabric, one for a node, two for a link.
    pub ranks: Vec<usize>,
    /// Fraction of the link ceiling in the matrix (a median for a fabric or node; the worse
    /// direction for a link).
    pub ratio: f64,
    /// Fraction of the link ceiling re-measured one pair at a time, if a pair could be.
    pub isolated_ratio: Option<f64>,
    /// Still below the floor in isolation: named (exit 1).
    pub confirmed: bool,
    /// The sentence printed.
    pub text: String,
}

/// One suspect, with both passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFinding {
    /// `node`, `link` or `block`.
    pub kind: String,
    /// The ranks it names (a node: one; a link: two; a block: first and last in the file's
    /// `order`).
    pub ranks: Vec<usize>,
    /// A block's ranks, all of them, in the file's `order` (empty for a node or a link).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<usize>,
    /// Fraction of expected bandwidth in the matrix (under the schedule's load).
    pub ratio: f64,
    pub z: f64,
    pub confidence: f64,
    /// Fraction of the matrix median re-measured in isolation (against known-good partners for
    /// a node or block), if the confirmation pass ran.
    pub isolated_ratio: Option<f64>,
    /// Still slow in isolation: named (exit 1). False: slow only under load (contention).
    pub confirmed: bool,
    /// The sentence printed.
    pub text: String,
}

/// Reads `links.json` (or a directory holding one), refusing other versions and matrices
/// whose shape or numbers cannot be a measurement; every error names the file and the fix.
pub fn read_links(path: &Path) -> Result<LinksFile, ResultsError> {
    let file = if path.is_dir() {
        path.join(LINKS_FILE)
    } else {
        path.to_path_buf()
    };
    let text = read_input_text(&file)?;
    parse_links(&file, &text)
}

/// Parses links text; `path` is only used in messages.
pub fn parse_links(path: &Path, text: &str) -> Result<LinksFile, ResultsError> {
    if text.trim().is_empty() {
        return Err(ResultsError::Empty {
            path: path.to_path_buf(),
        });
    }
    let parse_err = |e: serde_json::Error, what: &str| ResultsError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        msg: format!("{what}: {e}"),
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| parse_err(e, "not JSON"))?;
    // The version first: a newer file's unknown fields must not read as corruption.
    match value.get("links_format_version").and_then(|v| v.as_u64()) {
        Some(v) if (u64::from(LINKS_FORMAT_OLDEST)..=u64::from(LINKS_FORMAT_VERSION)).contains(&v) => {}
        found => {
            return Err(ResultsError::Parse {
                path: path.to_path_buf(),
                line: 1,
                column: 1,
                msg: match found {
                    Some(v) => format!(
                        "links_format_version {v}: this scalebench reads versions {LINKS_FORMAT_OLDEST} to {LINKS_FORMAT_VERSION}; use the scalebench that wrote it"
                    ),
                    None => "no links_format_version: give the links.json that `scalebench links` wrote".into(),
                },
            })
        }
    }
    let file: LinksFile =
        serde_json::from_str(text).map_err(|e| parse_err(e, "not a links.json"))?;
    let problems = file.problems();
    if problems.is_empty() {
        Ok(file)
    } else {
        Err(ResultsError::Invalid {
            path: path.to_path_buf(),
            count: problems.len(),
            problems: problems
                .iter()
                .map(|p| format!("  {p}"))
                .collect::<Vec<_>>()
                .join("\n"),
        })
    }
}

/// Above this many ranks links.json is written without indentation: pretty JSON puts every
/// cell on a line of its own (27 MB at 1,024 ranks).
pub const PRETTY_UP_TO_RANKS: usize = 64;

impl LinksFile {
    /// The file's text: indented for a reader up to [`PRETTY_UP_TO_RANKS`] ranks, compact above
    /// (the matrix dominates; each row on one line would still be a 1,024-cell line).
    pub fn to_json_bytes(&self) -> Vec<u8> {
        if self.hosts.len() <= PRETTY_UP_TO_RANKS {
            serde_json::to_vec_pretty(self).unwrap_or_default()
        } else {
            serde_json::to_vec(self).unwrap_or_default()
        }
    }

    /// The transport that measured the cells: `mpi` or `nccl`; `None` for a simulated matrix.
    /// A measured file without the field predates it (version 1), when links measured over
    /// MPI only.
    pub fn transport(&self) -> Option<&str> {
        if self.simulated.is_some() {
            return None;
        }
        Some(self.transport.as_deref().unwrap_or("mpi"))
    }

    /// The transport in words, for the output and the report: `MPI`, `NCCL 2.28.3
    /// send/recv, one GPU per rank`, with `STAND-IN` first where the stand-ins ran.
    pub fn transport_words(&self) -> Option<String> {
        let t = match self.transport()? {
            "nccl" => format!(
                "NCCL {} send/recv, one GPU per rank",
                self.nccl_version.as_deref().unwrap_or("(version unknown)")
            ),
            "rccl" => format!(
                "RCCL {} send/recv, one GCD per rank",
                self.nccl_version.as_deref().unwrap_or("(version unknown)")
            ),
            "mpi" => "MPI".to_string(),
            other => other.to_string(),
        };
        Some(if self.standin.is_some() {
            format!("STAND-IN {t}")
        } else {
            t
        })
    }

    /// What makes the file unusable (an N×N matrix over its hosts, positive finite cells,
    /// findings naming ranks that exist), each named by its place in the file.
    pub fn problems(&self) -> Vec<String> {
        let n = self.hosts.len();
        let mut out = Vec::new();
        if self.matrix_gbps.len() != n {
            out.push(format!(
                "matrix_gbps: {} for {}",
                crate::units::count(self.matrix_gbps.len(), "row", "rows"),
                crate::units::count(n, "host", "hosts")
            ));
        }
        for (i, row) in self.matrix_gbps.iter().enumerate() {
            if row.len() != n {
                out.push(format!(
                    "matrix_gbps[{i}]: {} for {}",
                    crate::units::count(row.len(), "cell", "cells"),
                    crate::units::count(n, "host", "hosts")
                ));
            }
            for (j, c) in row.iter().enumerate() {
                if let Some(v) = c.filter(|v| !bandwidth_ok(*v)) {
                    out.push(format!(
                        "matrix_gbps[{i}][{j}] = {}: {BANDWIDTH}",
                        crate::units::echo_f64(v)
                    ));
                }
                if i == j && c.is_some() {
                    out.push(format!(
                        "matrix_gbps[{i}][{i}]: a rank's link to itself is never measured (null on the diagonal)"
                    ));
                }
            }
        }
        if let Some(m) = self.median_gbps.filter(|v| !bandwidth_ok(*v)) {
            out.push(format!(
                "median_gbps = {}: {BANDWIDTH}",
                crate::units::echo_f64(m)
            ));
        }
        if let Some(t) = self
            .transport
            .as_deref()
            .filter(|t| !["mpi", "nccl", "rccl"].contains(t))
        {
            out.push(format!(
                "transport `{t}`: expected mpi, nccl or rccl (what scalebench links measures over)"
            ));
        }
        if !matches!(self.transport.as_deref(), Some("nccl" | "rccl"))
            && (self.nccl_version.is_some() || self.standin.is_some())
        {
            out.push(
                "nccl_version or standin without transport nccl or rccl: they describe NCCL and RCCL runs only"
                    .into(),
            );
        }
        if !self.order.is_empty() {
            let mut seen = vec![false; n];
            let ok = self.order.len() == n
                && self
                    .order
                    .iter()
                    .all(|&r| r < n && !std::mem::replace(&mut seen[r], true));
            if !ok {
                out.push(format!(
                    "order: {} for {}: expected each rank 0..{n} once",
                    crate::units::count(self.order.len(), "entry", "entries"),
                    crate::units::count(n, "host", "hosts")
                ));
            }
        }
        if let Some(fl) = &self.floor {
            out.extend(fl.problems(n));
        }
        for (k, f) in self.findings.iter().enumerate() {
            if let Some(r) = f.members.iter().find(|&&r| r >= n) {
                out.push(format!(
                    "findings[{k}].members: rank {r}, but the matrix has ranks 0..{n}"
                ));
            }
            if !f.members.is_empty() && f.kind != "block" {
                out.push(format!(
                    "findings[{k}].members: only a block lists members, not a {}",
                    f.kind
                ));
            }
            if let Some(r) = f.ranks.iter().find(|&&r| r >= n) {
                out.push(format!(
                    "findings[{k}].ranks: rank {r}, but the matrix has ranks 0..{n}"
                ));
            }
            out.extend(ratio_problems(
                &format!("findings[{k}]"),
                f.ratio,
                f.isolated_ratio,
            ));
            if !(0.0..=1.0).contains(&f.confidence) {
                out.push(format!(
                    "findings[{k}].confidence = {}: a confidence is between 0 and 1",
                    crate::units::echo_f64(f.confidence)
                ));
            }
            if !f.z.is_finite() {
                out.push(format!("findings[{k}].z = {}: a z-score is finite", f.z));
            }
            let want = if f.kind == "node" { 1 } else { 2 };
            if !["node", "link", "block"].contains(&f.kind.as_str()) || f.ranks.len() != want {
                out.push(format!(
                    "findings[{k}]: kind `{}` with {}: expected node (1 rank), link or block (2 ranks)",
                    f.kind,
                    crate::units::count(f.ranks.len(), "rank", "ranks")
                ));
            }
        }
        out
    }
}

impl FloorRecord {
    /// What makes the floor unusable in a file of `n` ranks, each named by its place.
    fn problems(&self, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(f) = self.fraction.filter(|f| !(*f > 0.0 && *f <= 1.0)) {
            out.push(format!(
                "floor.fraction = {f}: a fraction above 0 and at most 1"
            ));
        }
        if self.link_gbps.len() != n {
            out.push(format!(
                "floor.link_gbps: {} for {}",
                crate::units::count(self.link_gbps.len(), "link", "links"),
                crate::units::count(n, "rank", "ranks")
            ));
        }
        if let Some(v) = self.link_gbps.iter().flatten().find(|v| !bandwidth_ok(**v)) {
            out.push(format!(
                "floor.link_gbps: {}: a link ceiling is positive, finite and at most {MAX_PLAUSIBLE_GBPS:e} GB/s (null where unknown)",
                crate::units::echo_f64(*v)
            ));
        }
        for (k, f) in self.findings.iter().enumerate() {
            out.extend(ratio_problems(
                &format!("floor.findings[{k}]"),
                f.ratio,
                f.isolated_ratio,
            ));
            if let Some(r) = f.ranks.iter().find(|&&r| r >= n) {
                out.push(format!(
                    "floor.findings[{k}].ranks: rank {r}, but the matrix has ranks 0..{n}"
                ));
            }
            let want = match f.kind.as_str() {
                "fabric" => Some(0),
                "node" => Some(1),
                "link" => Some(2),
                _ => None,
            };
            if want != Some(f.ranks.len()) {
                out.push(format!(
                    "floor.findings[{k}]: kind `{}` with {}: expected fabric (no rank), node (1 rank) or link (2 ranks)",
                    f.kind,
                    crate::units::count(f.ranks.len(), "rank", "ranks")
                ));
            }
        }
        out
    }
}

/// No link carries this many GB/s (a petabyte per second; the fastest links are ~10³ GB/s):
/// a larger cell is not a measurement.
pub const MAX_PLAUSIBLE_GBPS: f64 = 1e6;

const BANDWIDTH: &str = "a bandwidth is positive, finite and at most 1e6 GB/s";

fn bandwidth_ok(v: f64) -> bool {
    v.is_finite() && v > 0.0 && v <= MAX_PLAUSIBLE_GBPS
}

/// A finding's ratios (fractions of an expected bandwidth): finite and not negative (−0.0
/// included: no measurement gives it); an isolated ratio likewise.
fn ratio_problems(at: &str, ratio: f64, isolated: Option<f64>) -> Vec<String> {
    [("ratio", Some(ratio)), ("isolated_ratio", isolated)]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| (name, v)))
        .filter(|(_, v)| !(v.is_finite() && *v >= 0.0 && v.is_sign_positive()))
        .map(|(name, v)| {
            format!(
                "{at}.{name} = {}: a ratio of bandwidths is finite and not negative",
                crate::units::echo_f64(v)
            )
        })
        .collect()
}

/// A measured-looking file for unit tests: 1 MiB round-robin, one host per rank, no findings.
#[cfg(test)]
pub(crate) fn test_file(
    hosts: Vec<String>,
    matrix_gbps: Vec<Vec<Option<f64>>>,
    median_gbps: f64,
) -> LinksFile {
    LinksFile {
        links_format_version: LINKS_FORMAT_VERSION,
        generator: crate::results::io::this_generator(),
        schedule: "round_robin".into(),
        bidirectional: false,
        message_bytes: 1 << 20,
        iters: 10,
        warmup: 1,
        hosts,
        emulated_nodes: false,
        analysed: "inter_node".into(),
        matrix_gbps,
        median_gbps: Some(median_gbps),
        residual_spread: Some(0.01),
        findings: vec![],
        note: None,
        fault: None,
        simulated: None,
        transport: Some("mpi".into()),
        nccl_version: None,
        standin: None,
        topology: None,
        switches: Vec::new(),
        order: Vec::new(),
        floor: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> LinksFile {
        test_file(
            vec!["a".into(), "b".into()],
            vec![vec![None, Some(10.0)], vec![Some(9.0), None]],
            9.5,
        )
    }

    #[test]
    fn large_files_are_written_compact_and_read_back_the_same() {
        let n = PRETTY_UP_TO_RANKS + 1;
        let big = test_file(
            (0..n).map(|i| format!("n{i}")).collect(),
            (0..n)
                .map(|i| (0..n).map(|j| (i != j).then_some(1.5 + j as f64)).collect())
                .collect(),
            9.5,
        );
        let text = big.to_json_bytes();
        assert!(!text.contains(&b'\n'));
        let back: LinksFile = serde_json::from_slice(&text).unwrap();
        assert_eq!(back, big);
        assert!(two().to_json_bytes().contains(&b'\n'));
    }

    #[test]
    fn a_written_file_reads_back_and_measured_files_carry_no_simulated_field() {
        let f = two();
        let text = serde_json::to_string_pretty(&f).unwrap();
        assert!(!text.contains("simulated"), "{text}");
        assert_eq!(parse_links(Path::new("links.json"), &text).unwrap(), f);
        let mut s = two();
        s.simulated = Some("16 nodes, seed 1".into());
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(parse_links(Path::new("l.json"), &text).unwrap(), s);
    }

    #[test]
    fn bad_files_are_refused_with_the_place_and_the_fix() {
        let p = Path::new("d/links.json");
        let mut f = two();
        f.links_format_version = LINKS_FORMAT_VERSION + 1;
        let e = parse_links(p, &serde_json::to_string(&f).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("d/links.json") && e.contains("links_format_version 4"),
            "{e}"
        );
        assert!(e.contains("reads versions 1 to 3"), "{e}");
        let mut f = two();
        f.matrix_gbps[1].pop();
        f.matrix_gbps[0][1] = Some(-1.0);
        f.findings.push(LinkFinding {
            kind: "link".into(),
            members: Vec::new(),
            ranks: vec![0, 5],
            ratio: 0.5,
            z: -9.0,
            confidence: 0.99,
            isolated_ratio: None,
            confirmed: false,
            text: String::new(),
        });
        let e = parse_links(p, &serde_json::to_string(&f).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 problems"), "{e}");
        assert!(e.contains("matrix_gbps[1]: 1 cell for 2 hosts"), "{e}");
        assert!(e.contains("matrix_gbps[0][1] = -1"), "{e}");
        assert!(e.contains("rank 5, but the matrix has ranks 0..2"), "{e}");
        let e = parse_links(p, "{\"links_format_version\": 1,\n \"x\": }")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("d/links.json:2:"), "{e}");
        assert!(parse_links(p, "  ")
            .unwrap_err()
            .to_string()
            .contains("empty"));
    }

    /// A version-1 file (before the transport existed) still reads, as MPI; a version-2 NCCL
    /// file round-trips with its version and stand-in label; a simulated file has no transport.
    #[test]
    fn the_transport_reads_from_both_versions() {
        let v1 = r#"{"links_format_version": 1, "generator": {"name": "scalebench", "version": "0"},
            "schedule": "round_robin", "bidirectional": false, "message_bytes": 4, "iters": 1,
            "warmup": 0, "hosts": ["a", "b"], "analysed": "inter_node",
            "matrix_gbps": [[null, 1.0], [1.0, null]], "median_gbps": 1.0,
            "residual_spread": 0.0, "findings": []}"#;
        let old = parse_links(Path::new("v1/links.json"), v1).unwrap();
        assert_eq!(old.transport, None);
        assert_eq!(old.transport(), Some("mpi"));
        assert_eq!(old.transport_words().as_deref(), Some("MPI"));

        let mut f = two();
        f.transport = Some("nccl".into());
        f.nccl_version = Some("2.28.3".into());
        f.standin = Some("STAND-IN: test doubles".into());
        let text = String::from_utf8(f.to_json_bytes()).unwrap();
        assert!(text.contains("\"links_format_version\": 3"), "{text}");
        assert!(text.contains("\"transport\": \"nccl\""), "{text}");
        let back = parse_links(Path::new("links.json"), &text).unwrap();
        assert_eq!(back, f);
        assert_eq!(
            back.transport_words().as_deref(),
            Some("STAND-IN NCCL 2.28.3 send/recv, one GPU per rank")
        );

        let mut sim = two();
        sim.transport = None;
        sim.simulated = Some("16 nodes".into());
        assert_eq!(sim.transport(), None);
        let text = serde_json::to_string(&sim).unwrap();
        assert!(!text.contains("transport"), "{text}");
    }

    #[test]
    fn an_unknown_transport_or_a_stray_nccl_field_is_refused() {
        let p = Path::new("d/links.json");
        let mut f = two();
        f.transport = Some("tcp".into());
        let e = parse_links(p, &serde_json::to_string(&f).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("transport `tcp`: expected mpi, nccl or rccl"),
            "{e}"
        );
        let mut f = two();
        f.standin = Some("STAND-IN".into());
        let e = parse_links(p, &serde_json::to_string(&f).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("standin without transport nccl") && e.contains("1 problem"),
            "{e}"
        );
        // RCCL (links --backend rocm) reads back with its version and label.
        let mut f = two();
        f.transport = Some("rccl".into());
        f.nccl_version = Some("2.20.5".into());
        f.standin = Some("STAND-IN".into());
        let back = parse_links(p, &serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(
            back.transport_words().unwrap(),
            "STAND-IN RCCL 2.20.5 send/recv, one GCD per rank"
        );
    }

    /// Version 3 carries the floor: it round-trips; a version-2 file (no floor) still reads;
    /// a floor naming ranks that do not exist, a kind with the wrong number of ranks, a link
    /// list of the wrong length or a fraction out of range is refused with its place.
    #[test]
    fn the_floor_reads_back_and_a_bad_one_is_refused_with_its_place() {
        let mut v2 = two();
        v2.links_format_version = 2;
        let text = serde_json::to_string(&v2).unwrap();
        assert!(!text.contains("floor"), "{text}");
        assert_eq!(
            parse_links(Path::new("v2/links.json"), &text)
                .unwrap()
                .floor,
            None
        );

        let mut f = two();
        f.floor = Some(FloorRecord {
            fraction: Some(0.5),
            min_message_bytes: 1 << 20,
            link_gbps: vec![Some(12.5), None],
            checked_cells: 0,
            findings: vec![FloorFindingRecord {
                kind: "fabric".into(),
                ranks: vec![],
                ratio: 0.3,
                isolated_ratio: Some(0.31),
                confirmed: true,
                text: "fabric: …".into(),
            }],
            note: Some("no link ceiling known for 1 host (b)".into()),
        });
        let text = String::from_utf8(f.to_json_bytes()).unwrap();
        assert_eq!(parse_links(Path::new("links.json"), &text).unwrap(), f);

        let fl = f.floor.as_mut().unwrap();
        fl.fraction = Some(1.5);
        fl.link_gbps.pop();
        fl.findings[0].kind = "link".into();
        fl.findings[0].ranks = vec![0, 7];
        let e = parse_links(
            Path::new("d/links.json"),
            &serde_json::to_string(&f).unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("3 problems"), "{e}");
        assert!(e.contains("floor.fraction = 1.5"), "{e}");
        assert!(e.contains("floor.link_gbps: 1 link for 2 ranks"), "{e}");
        assert!(e.contains("floor.findings[0].ranks: rank 7"), "{e}");
        let mut g = two();
        g.floor = Some(FloorRecord {
            fraction: None,
            min_message_bytes: 1 << 20,
            link_gbps: vec![None, None],
            checked_cells: 0,
            findings: vec![FloorFindingRecord {
                kind: "node".into(),
                ranks: vec![],
                ratio: 0.3,
                isolated_ratio: None,
                confirmed: false,
                text: String::new(),
            }],
            note: None,
        });
        let e = parse_links(
            Path::new("d/links.json"),
            &serde_json::to_string(&g).unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("floor.findings[0]: kind `node` with 0 ranks: expected fabric (no rank), node (1 rank) or link (2 ranks)"),
            "{e}"
        );
    }
}
