//! The absolute floor: inter-node cells held to a fraction of the network link's ceiling.
//!
//! The attribution ([`super::attribution`]) compares cells with each other, so a fabric that
//! is uniformly slow (every link at a third of its rate: a mis-negotiated speed, a congested
//! core, the wrong transport) looks healthy to it. A host's `net.link` ceiling (the run's host
//! ceilings, from sysfs) gives an absolute bound: a pair's exchange cannot beat the slower of
//! its two hosts' links, so a cell below `fraction` × that bound is a finding whatever the
//! other cells do. Pure: the caller hands in the matrix, each rank's host and each rank's
//! host link (GB/s, 1e9 bytes/s, as the matrix), or `None` where no ceiling is known (never
//! invented: those pairs are not checked, and the note says so once).

use super::attribution::Matrix;

/// The default fraction: below half of the link's rate is far outside what protocol overhead
/// and a shared NIC explain (MPI over a healthy InfiniBand or RoCE link reaches 80–95 % at
/// 1 MiB), and far above what the noise of one cell reaches.
pub const DEFAULT_FLOOR_FRACTION: f64 = 0.5;

/// The smallest message the floor holds. A message's time is a fixed latency (a few µs: the
/// rendezvous handshake, the acknowledgement) plus its bytes over the link's rate, so a small
/// one cannot reach half a fast link's rate however healthy the link: 64 KiB on a 100 Gb/s
/// link is 5.2 µs of transfer against ≈ 3 µs of latency (≈ 60 %), on 400 Gb/s ≈ 1.3 µs
/// (≈ 30 %). At 1 MiB the transfer is 21 µs even at 400 Gb/s, and MPI over a healthy InfiniBand
/// or RoCE link reaches 80–95 %; below it the floor is not applied (said once).
pub const FLOOR_MIN_MESSAGE_BYTES: u64 = 1 << 20;

/// `--floor-fraction F` (the `links` command and a sweep's `floor_fraction` key): a fraction in
/// (0, 1], or `off` (no cell is held to the floor): `None` for off.
pub fn parse_fraction(s: &str) -> Result<Option<f64>, FloorError> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let v: f64 = t
        .parse()
        .map_err(|_| FloorError::FractionText(s.to_string()))?;
    if v > 0.0 && v <= 1.0 {
        Ok(Some(v))
    } else {
        Err(FloorError::Fraction(v))
    }
}

/// A fraction of the link ceiling as printed: whole per cent, and two decimals below 1 % (a
/// cell at 0.07 % of an 8 Tb/s link must not read "0 %").
pub fn percent(r: f64) -> String {
    let p = r * 100.0;
    if p > 0.0 && p < 1.0 {
        format!("{p:.2} %")
    } else {
        format!("{p:.0} %")
    }
}

/// What falls below the floor.
#[derive(Debug, Clone, PartialEq)]
pub enum FloorFinding {
    /// Every checked inter-node cell is below: the fabric as a whole (the relative
    /// attribution cannot see this). `median_ratio`: the cells' median fraction of the bound.
    Fabric { cells: usize, median_ratio: f64 },
    /// Every checked cell to and from this rank is below (and not every cell of the matrix).
    Node {
        node: usize,
        cells: usize,
        median_ratio: f64,
    },
    /// One pair (either direction) below, the worse direction's fraction.
    Link { a: usize, b: usize, ratio: f64 },
}

impl FloorFinding {
    /// The sentence printed, with names and the fraction asked for.
    pub fn describe(&self, names: &[String], fraction: f64) -> String {
        let pct = percent;
        match *self {
            FloorFinding::Fabric {
                cells,
                median_ratio,
            } => format!(
                "fabric: all {cells} inter-node cells below {} of the link ceiling (median {})",
                pct(fraction),
                pct(median_ratio)
            ),
            FloorFinding::Node {
                node,
                cells,
                median_ratio,
            } => format!(
                "node {}: all its {cells} inter-node cells below {} of the link ceiling (median {})",
                names[node],
                pct(fraction),
                pct(median_ratio)
            ),
            FloorFinding::Link { a, b, ratio } => format!(
                "link {}↔{}: {} of the link ceiling (floor {})",
                names[a],
                names[b],
                pct(ratio),
                pct(fraction)
            ),
        }
    }
}

/// The floor's verdict on one matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Floor {
    /// Inter-node cells held to the floor (both hosts' links known).
    pub checked: usize,
    pub findings: Vec<FloorFinding>,
    /// Said once when some or all pairs could not be checked (no ceiling, or no inter-node
    /// pair); `None` when every inter-node cell was checked.
    pub note: Option<String>,
}

/// Why the floor cannot be applied (bad input: a fraction that names nothing or everything).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FloorError {
    #[error("--floor-fraction {0}: give a fraction above 0 and at most 1 (0.5: a cell below half of its hosts' link ceiling is a finding), or off")]
    Fraction(f64),
    #[error("--floor-fraction {0}: not a number: give a fraction above 0 and at most 1 (0.5: a cell below half of its hosts' link ceiling is a finding), or off")]
    FractionText(String),
    #[error(
        "{hosts} hosts for {ranks} ranks and {links} link ceilings: give one of each per rank"
    )]
    Shape {
        ranks: usize,
        hosts: usize,
        links: usize,
    },
}

/// Holds every inter-node cell of `m` (rank `i` on `hosts[i]`, its host's link `link_gbps[i]`)
/// to `fraction` × the slower link of its two hosts.
pub fn check(
    m: &Matrix,
    hosts: &[String],
    link_gbps: &[Option<f64>],
    fraction: f64,
) -> Result<Floor, FloorError> {
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(FloorError::Fraction(fraction));
    }
    let n = m.n();
    if hosts.len() != n || link_gbps.len() != n || m.gbps.len() != n * n {
        return Err(FloorError::Shape {
            ranks: n,
            hosts: hosts.len(),
            links: link_gbps.len(),
        });
    }
    // A ceiling of 0 or less (a port that is down) bounds nothing usable.
    let link = |i: usize| link_gbps[i].filter(|v| v.is_finite() && *v > 0.0);
    let mut ratios: Vec<Vec<Option<f64>>> = vec![vec![None; n]; n];
    let mut inter = 0usize;
    let mut unknown_hosts: Vec<&str> = Vec::new();
    for i in 0..n {
        for j in (0..n).filter(|&j| j != i && hosts[i] != hosts[j]) {
            let Some(g) = m.get(i, j).filter(|g| g.is_finite()) else {
                continue;
            };
            inter += 1;
            match (link(i), link(j)) {
                (Some(a), Some(b)) => ratios[i][j] = Some(g / a.min(b)),
                (a, b) => {
                    for (k, l) in [(i, a), (j, b)] {
                        if l.is_none() && !unknown_hosts.contains(&hosts[k].as_str()) {
                            unknown_hosts.push(&hosts[k]);
                        }
                    }
                }
            }
        }
    }
    unknown_hosts.sort_unstable();
    let all: Vec<f64> = ratios.iter().flatten().flatten().copied().collect();
    let checked = all.len();
    let note = if inter == 0 {
        Some("no inter-node pair: the absolute floor holds the fabric between hosts to the link ceiling, and every pair here shares a host".to_string())
    } else if !unknown_hosts.is_empty() {
        let hosts = match unknown_hosts.len() {
            1 => "1 host".to_string(),
            k => format!("{k} hosts"),
        };
        Some(format!(
            "no link ceiling known for {hosts} ({}): {}",
            unknown_hosts.join(", "),
            if checked == 0 {
                "no pair is held to an absolute floor".to_string()
            } else {
                format!(
                    "{} of {inter} inter-node cells are not held to an absolute floor",
                    inter - checked
                )
            }
        ))
    } else {
        None
    };
    let below = |r: &f64| *r < fraction;
    let mut findings = Vec::new();
    if checked > 0 && all.iter().all(below) {
        findings.push(FloorFinding::Fabric {
            cells: checked,
            median_ratio: median(all),
        });
        return Ok(Floor {
            checked,
            findings,
            note,
        });
    }
    // Nodes whose every checked cell (sent and received) is below: the node, not its links.
    let mut node_below = vec![false; n];
    for (k, flag) in node_below.iter_mut().enumerate() {
        let mine: Vec<f64> = (0..n)
            .flat_map(|o| [ratios[k][o], ratios[o][k]])
            .flatten()
            .collect();
        if !mine.is_empty() && mine.iter().all(below) {
            *flag = true;
            findings.push(FloorFinding::Node {
                node: k,
                cells: mine.len(),
                median_ratio: median(mine),
            });
        }
    }
    for a in 0..n {
        for b in a + 1..n {
            if node_below[a] || node_below[b] {
                continue;
            }
            let worse = [ratios[a][b], ratios[b][a]]
                .into_iter()
                .flatten()
                .filter(below)
                .min_by(f64::total_cmp);
            if let Some(ratio) = worse {
                findings.push(FloorFinding::Link { a, b, ratio });
            }
        }
    }
    Ok(Floor {
        checked,
        findings,
        note,
    })
}

impl FloorFinding {
    /// As results record it: `fabric`, `node` or `link`, and the ranks named.
    pub fn kind_and_ranks(&self) -> (&'static str, Vec<usize>) {
        match *self {
            FloorFinding::Fabric { .. } => ("fabric", vec![]),
            FloorFinding::Node { node, .. } => ("node", vec![node]),
            FloorFinding::Link { a, b, .. } => ("link", vec![a, b]),
        }
    }

    /// The fraction of the link ceiling in the matrix.
    pub fn ratio(&self) -> f64 {
        match *self {
            FloorFinding::Fabric { median_ratio, .. } | FloorFinding::Node { median_ratio, .. } => {
                median_ratio
            }
            FloorFinding::Link { ratio, .. } => ratio,
        }
    }
}

/// A host leader's reading of its link as it travels to rank 0: nothing from a rank that is
/// not a leader, `[0]` for a leader that knows no link, `[1, f64 LE]` for a known one.
pub fn encode_read(leader: bool, link_gbps: Option<f64>) -> Vec<u8> {
    match (leader, link_gbps) {
        (false, _) => Vec::new(),
        (true, None) => vec![0],
        (true, Some(v)) => [&[1u8][..], &v.to_le_bytes()].concat(),
    }
}

/// The inverse of [`encode_read`]: `None` from a rank that read nothing (or sent bytes that
/// cannot be a reading), `Some(link)` from a leader.
pub fn decode_read(bytes: &[u8]) -> Option<Option<f64>> {
    match bytes {
        [0] => Some(None),
        [1, rest @ ..] => Some(Some(f64::from_le_bytes(<[u8; 8]>::try_from(rest).ok()?))),
        _ => None,
    }
}

/// Each rank's host link from what was read: rank r gets the reading of the first rank of its
/// host that read one (its host leader), `None` where no rank of the host did or its leader
/// knew none. Never a figure from another host.
pub fn rank_links(hosts: &[String], reads: &[Option<Option<f64>>]) -> Vec<Option<f64>> {
    hosts
        .iter()
        .map(|h| {
            hosts
                .iter()
                .zip(reads)
                .find(|(g, r)| *g == h && r.is_some())
                .and_then(|(_, r)| r.flatten())
        })
        .collect()
}

/// The pairs that re-measure a floor finding one at a time (nothing else on the fabric, so a
/// host's link is not shared by its other ranks' exchanges of the round): a link alone; a node
/// against the first two ranks on other hosts with a known link that are not themselves named;
/// the fabric with the first two held pairs of distinct ranks.
pub fn confirmation_pairs(
    f: &FloorFinding,
    hosts: &[String],
    link_gbps: &[Option<f64>],
    named_nodes: &[usize],
) -> Vec<(usize, usize)> {
    let n = hosts.len();
    let known = |i: usize| link_gbps[i].is_some_and(|v| v.is_finite() && v > 0.0);
    let pair = |x: usize, y: usize| (x.min(y), x.max(y));
    match *f {
        FloorFinding::Link { a, b, .. } => vec![pair(a, b)],
        FloorFinding::Node { node, .. } => (0..n)
            .filter(|&o| hosts[o] != hosts[node] && known(o) && !named_nodes.contains(&o))
            .take(2)
            .map(|o| pair(node, o))
            .collect(),
        FloorFinding::Fabric { .. } => {
            let mut out: Vec<(usize, usize)> = Vec::new();
            for i in (0..n).filter(|&i| known(i)) {
                let used =
                    |x: usize, v: &[(usize, usize)]| v.iter().any(|&(a, b)| a == x || b == x);
                if used(i, &out) {
                    continue;
                }
                if let Some(j) =
                    (i + 1..n).find(|&j| hosts[j] != hosts[i] && known(j) && !used(j, &out))
                {
                    out.push((i, j));
                }
                if out.len() == 2 {
                    break;
                }
            }
            out
        }
    }
}

/// A finding's fraction of the link ceiling re-measured in isolation over `pairs` (`iso_gbps`:
/// the N×N isolated cells, GB/s): a link's worse direction, as [`check`] holds it; a node's or
/// the fabric's median. `None` when no pair was re-measured.
pub fn isolated_ratio(
    f: &FloorFinding,
    pairs: &[(usize, usize)],
    iso_gbps: &[Option<f64>],
    link_gbps: &[Option<f64>],
) -> Option<f64> {
    let n = link_gbps.len();
    let ratios: Vec<f64> = pairs
        .iter()
        .flat_map(|&(x, y)| [(x, y), (y, x)])
        .filter_map(|(x, y)| {
            let bound = link_gbps[x]?.min(link_gbps[y]?);
            let g = iso_gbps.get(x * n + y).copied().flatten()?;
            (bound > 0.0 && g.is_finite()).then(|| g / bound)
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    Some(match f {
        FloorFinding::Link { .. } => ratios.into_iter().fold(f64::INFINITY, f64::min),
        _ => median(ratios),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::attribution::{analyse, Settings};
    use crate::links::simulate::{Scenario, BASE_GBPS};

    /// `n` ranks, one host each, every cell `gbps`.
    fn uniform(n: usize, gbps: f64) -> (Matrix, Vec<String>) {
        let names: Vec<String> = (0..n).map(|i| format!("h{i}")).collect();
        let m = Matrix {
            names: names.clone(),
            gbps: (0..n * n)
                .map(|k| (k / n != k % n).then_some(gbps))
                .collect(),
        };
        (m, names)
    }

    #[test]
    fn a_uniformly_slow_fabric_is_a_finding_the_relative_attribution_cannot_make() {
        // 8 hosts with 12.5 GB/s links (100 Gb/s), every pair at 4 GB/s: 32 % of the link.
        let (m, hosts) = uniform(8, 4.0);
        let links = vec![Some(12.5); 8];
        assert!(
            analyse(&m, &Settings::default()).findings.is_empty(),
            "equal cells: nothing stands out relatively"
        );
        let f = check(&m, &hosts, &links, DEFAULT_FLOOR_FRACTION).unwrap();
        assert_eq!(f.checked, 56);
        assert_eq!(
            f.findings,
            vec![FloorFinding::Fabric {
                cells: 56,
                median_ratio: 0.32
            }]
        );
        assert_eq!(f.note, None);
        assert_eq!(
            f.findings[0].describe(&m.names, 0.5),
            "fabric: all 56 inter-node cells below 50 % of the link ceiling (median 32 %)"
        );
        // At 90 % of the link: nothing.
        let (m, hosts) = uniform(8, 11.25);
        let f = check(&m, &hosts, &links, DEFAULT_FLOOR_FRACTION).unwrap();
        assert!(f.findings.is_empty(), "{:?}", f.findings);
    }

    #[test]
    fn the_slower_end_bounds_a_pair_and_a_node_below_on_every_cell_is_named_once() {
        // h0 has a 25 GB/s link, the rest 12.5: the pair's bound is 12.5 either way, so a
        // 10 GB/s cell is 80 % (fine), not 40 %.
        let (mut m, hosts) = uniform(4, 10.0);
        let mut links = vec![Some(12.5); 4];
        links[0] = Some(25.0);
        assert!(check(&m, &hosts, &links, 0.5).unwrap().findings.is_empty());
        // h2 at 3 GB/s on all its cells (24 %): the node, not its three links.
        for o in [0, 1, 3] {
            m.gbps[2 * 4 + o] = Some(3.0);
            m.gbps[o * 4 + 2] = Some(3.0);
        }
        let f = check(&m, &hosts, &links, 0.5).unwrap();
        assert_eq!(
            f.findings,
            vec![FloorFinding::Node {
                node: 2,
                cells: 6,
                median_ratio: 0.24
            }]
        );
        // One direction of one more pair below: that link too.
        m.gbps[4 + 3] = Some(5.0); // 1 → 3
        let f = check(&m, &hosts, &links, 0.5).unwrap();
        assert_eq!(f.findings.len(), 2, "{:?}", f.findings);
        assert_eq!(
            f.findings[1],
            FloorFinding::Link {
                a: 1,
                b: 3,
                ratio: 0.4
            }
        );
    }

    #[test]
    fn no_ceiling_is_invented_and_the_note_says_so_once() {
        let (m, hosts) = uniform(4, 1.0);
        // No host knows its link: nothing checked, nothing named, one note naming the hosts.
        let f = check(&m, &hosts, &[None; 4], 0.5).unwrap();
        assert_eq!(f.checked, 0);
        assert!(f.findings.is_empty());
        assert_eq!(
            f.note.as_deref(),
            Some("no link ceiling known for 4 hosts (h0, h1, h2, h3): no pair is held to an absolute floor")
        );
        // h3 unknown: only pairs among h0..h2 are held (6 cells), all below → the fabric of
        // the checked cells; the note counts the 6 unchecked cells.
        let f = check(&m, &hosts, &[Some(12.5), Some(12.5), Some(12.5), None], 0.5).unwrap();
        assert_eq!(f.checked, 6);
        assert!(matches!(
            f.findings[..],
            [FloorFinding::Fabric { cells: 6, .. }]
        ));
        let note = f.note.unwrap();
        assert!(
            note.contains("1 host (h3)") && note.contains("6 of 12 inter-node cells"),
            "{note}"
        );
        // A port that is down (0) is no bound either.
        let f = check(&m, &hosts, &[Some(0.0); 4], 0.5).unwrap();
        assert_eq!(f.checked, 0);
    }

    #[test]
    fn pairs_on_one_host_are_not_the_fabric() {
        // 4 ranks on 2 hosts: only the 8 cross-host cells are held; the intra-host cells are
        // slow (shared memory measured badly) and ignored.
        let hosts: Vec<String> = ["a", "a", "b", "b"].iter().map(|s| s.to_string()).collect();
        let mut m = Matrix {
            names: (0..4).map(|r| format!("{}:{r}", hosts[r])).collect(),
            gbps: vec![None; 16],
        };
        for i in 0..4 {
            for j in (0..4).filter(|&j| j != i) {
                m.gbps[i * 4 + j] = Some(if hosts[i] == hosts[j] { 0.1 } else { 10.0 });
            }
        }
        let f = check(&m, &hosts, &[Some(12.5); 4], 0.5).unwrap();
        assert_eq!(f.checked, 8);
        assert!(f.findings.is_empty());
        // One host: nothing to hold, said once.
        let one = vec!["a".to_string(); 4];
        let f = check(&m, &one, &[Some(12.5); 4], 0.5).unwrap();
        assert_eq!(f.checked, 0);
        assert!(f.note.unwrap().starts_with("no inter-node pair"));
    }

    #[test]
    fn bad_fractions_and_shapes_are_refused() {
        let (m, hosts) = uniform(3, 1.0);
        for bad in [0.0, -0.5, 1.5, f64::NAN] {
            assert!(matches!(
                check(&m, &hosts, &[Some(1.0); 3], bad),
                Err(FloorError::Fraction(_))
            ));
        }
        assert!(matches!(
            check(&m, &hosts, &[Some(1.0); 2], 0.5),
            Err(FloorError::Shape { links: 2, .. })
        ));
    }

    /// Seeded noisy matrices (64 hosts, 5 % log-normal noise, links of 12.5 GB/s): a healthy
    /// fabric at 80 % of the link is never below a floor of 50 %, a uniformly slow one at 35 %
    /// always is, as a whole; the healthy fabric with one node at 40 % of it (32 % of the
    /// link) names that node and nothing else.
    #[test]
    fn seeded_noisy_matrices_flag_exactly_the_slow_fabric() {
        const SEEDS: u64 = 200;
        let links = vec![Some(BASE_GBPS); 64];
        let scaled = |seed: u64, level: f64, slow_nodes: Vec<(usize, f64)>| {
            let s = Scenario {
                slow_nodes,
                ..Scenario::healthy(64, seed, 0.05)
            };
            let mut m = s.matrix();
            for g in m.gbps.iter_mut().flatten() {
                *g *= level;
            }
            let hosts = m.names.clone();
            (m, hosts)
        };
        let (mut healthy_flagged, mut slow_flagged, mut node_exact) = (0, 0, 0);
        for seed in 0..SEEDS {
            let (m, h) = scaled(seed, 0.8, vec![]);
            if !check(&m, &h, &links, 0.5).unwrap().findings.is_empty() {
                healthy_flagged += 1;
            }
            let (m, h) = scaled(seed, 0.35, vec![]);
            if matches!(
                check(&m, &h, &links, 0.5).unwrap().findings[..],
                [FloorFinding::Fabric { cells: 4032, .. }]
            ) {
                slow_flagged += 1;
            }
            let (m, h) = scaled(seed, 0.8, vec![(17, 0.4)]);
            let f = check(&m, &h, &links, 0.5).unwrap();
            if matches!(f.findings[..], [FloorFinding::Node { node: 17, .. }]) {
                node_exact += 1;
            }
        }
        // Measured: 0 of 200, 200 of 200, 200 of 200.
        assert_eq!(
            healthy_flagged, 0,
            "healthy at 80 %: flagged in {healthy_flagged} of {SEEDS}"
        );
        assert_eq!(
            slow_flagged, SEEDS,
            "uniform at 35 %: the fabric in {slow_flagged} of {SEEDS}"
        );
        assert_eq!(
            node_exact, SEEDS,
            "node 17 at 32 %: named alone in {node_exact} of {SEEDS}"
        );
    }

    /// `off` switches the floor off; a fraction in (0, 1] is taken; anything else is refused
    /// with the sentence that names the option and the fix.
    #[test]
    fn the_fraction_is_a_number_in_range_or_off() {
        assert_eq!(parse_fraction("0.5"), Ok(Some(0.5)));
        assert_eq!(parse_fraction("1"), Ok(Some(1.0)));
        assert_eq!(parse_fraction("OFF"), Ok(None));
        for bad in ["0", "-0.1", "1.01", "nan", "inf"] {
            let e = parse_fraction(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("--floor-fraction ") && e.ends_with("or off"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            parse_fraction("half").unwrap_err().to_string(),
            "--floor-fraction half: not a number: give a fraction above 0 and at most 1 (0.5: a cell below half of its hosts' link ceiling is a finding), or off"
        );
    }

    /// What the leaders send decodes to what they read; every rank gets its own host's
    /// leader's figure (not another host's), `None` where its leader knew none; bytes that
    /// cannot be a reading are no reading.
    #[test]
    fn each_rank_gets_its_host_leaders_link_and_nothing_is_invented() {
        let hosts: Vec<String> = ["a", "a", "b", "b", "c"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let sent = [
            encode_read(true, Some(50.0)),
            encode_read(false, Some(99.0)),
            encode_read(true, None),
            encode_read(false, None),
            encode_read(true, Some(12.5)),
        ];
        assert!(sent[1].is_empty() && sent[3].is_empty());
        let reads: Vec<Option<Option<f64>>> = sent.iter().map(|b| decode_read(b)).collect();
        assert_eq!(
            reads,
            vec![Some(Some(50.0)), None, Some(None), None, Some(Some(12.5))]
        );
        assert_eq!(
            rank_links(&hosts, &reads),
            vec![Some(50.0), Some(50.0), None, None, Some(12.5)]
        );
        assert_eq!(decode_read(&[1, 2, 3]), None);
        assert_eq!(decode_read(&[7]), None);
        // No leader on a host (nothing read there): its ranks know no link.
        assert_eq!(
            rank_links(&hosts, &[None, None, None, None, Some(Some(1.0))]),
            vec![None, None, None, None, Some(1.0)]
        );
    }

    /// A link is re-measured alone; a node against two partners on other hosts with a known
    /// link that are not named themselves; the fabric over two disjoint held pairs. The
    /// isolated ratio is a link's worse direction, else the median.
    #[test]
    fn floor_findings_are_re_measured_over_held_pairs() {
        let hosts: Vec<String> = ["a", "a", "b", "b", "c"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let links = vec![Some(10.0), Some(10.0), Some(10.0), None, Some(20.0)];
        let link = FloorFinding::Link {
            a: 4,
            b: 1,
            ratio: 0.2,
        };
        assert_eq!(confirmation_pairs(&link, &hosts, &links, &[]), vec![(1, 4)]);
        let node = FloorFinding::Node {
            node: 0,
            cells: 4,
            median_ratio: 0.2,
        };
        // rank 1 shares a's host, 3 has no link, 2 is named: only 4 is left.
        assert_eq!(
            confirmation_pairs(&node, &hosts, &links, &[0, 2]),
            vec![(0, 4)]
        );
        assert_eq!(
            confirmation_pairs(&node, &hosts, &links, &[0]),
            vec![(0, 2), (0, 4)]
        );
        let fabric = FloorFinding::Fabric {
            cells: 8,
            median_ratio: 0.2,
        };
        assert_eq!(
            confirmation_pairs(&fabric, &hosts, &links, &[]),
            vec![(0, 2), (1, 4)]
        );
        let n = 5;
        let mut iso = vec![None; n * n];
        iso[n + 4] = Some(3.0); // 1 → 4: 30 % of 10
        iso[4 * n + 1] = Some(1.0); // 4 → 1: 10 %
        let r = isolated_ratio(&link, &[(1, 4)], &iso, &links).unwrap();
        assert!((r - 0.1).abs() < 1e-12, "{r}");
        iso[2] = Some(5.0); // 0 → 2: 50 %
        iso[2 * n] = Some(7.0); // 2 → 0: 70 %
        let r = isolated_ratio(&fabric, &[(0, 2), (1, 4)], &iso, &links).unwrap();
        assert!((r - 0.4).abs() < 1e-12, "median of 50, 70, 30, 10 %: {r}");
        assert_eq!(isolated_ratio(&node, &[(0, 3)], &iso, &links), None);
    }

    #[test]
    fn fractions_below_one_per_cent_keep_two_decimals() {
        assert_eq!(percent(0.32), "32 %");
        assert_eq!(percent(0.00065), "0.07 %");
        assert_eq!(percent(0.0), "0 %");
    }
}
