//! The link matrix file (`links.json`) that `scalebench links` writes: the N×N bandwidth
//! matrix with how it was measured, and the verdicts with both passes (under load, isolated).
//! Versioned on its own (`links_format_version`); readers refuse versions they do not know.

use super::schema::Generator;
use serde::{Deserialize, Serialize};

/// The version this build writes.
pub const LINKS_FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinksFile {
    pub links_format_version: u32,
    pub generator: Generator,
    /// `round_robin` (concurrent disjoint pairs) or `shift` (mpiGraph's rounds, all ranks busy).
    pub schedule: String,
    /// Both directions at once, or one after the other.
    pub bidirectional: bool,
    pub message_bytes: u64,
    /// Timed exchanges per cell (the cell is bytes over their median time), after `warmup`.
    pub iters: u32,
    pub warmup: u32,
    /// Rank r's host; cells between ranks on one host are intra-node.
    pub hosts: Vec<String>,
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
}

/// One suspect, with both passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFinding {
    /// `node`, `link` or `block`.
    pub kind: String,
    /// The ranks it names (a node: one; a link: two; a block: first and last).
    pub ranks: Vec<usize>,
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
