//! The absolute floor in `scalebench links`: each host leader reads what one pair can count on
//! from its host's network (one rail: the slowest active InfiniBand/RoCE port, else the
//! Ethernet link, from sysfs; not `net.link`, the sum over rails, which one pair never
//! reaches), rank 0 gathers them, holds the inter-node cells to a fraction of the slower
//! end's ([`crate::links::floor::check`]), re-measures what falls below one pair at a time, and
//! records the verdict in links.json.

use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::links::attribution::Matrix;
use crate::links::floor::{self, Floor, FloorFinding, FLOOR_MIN_MESSAGE_BYTES};
use crate::results::links::{FloorFindingRecord, FloorRecord};
use std::path::Path;

/// This rank's host link as rank 0 receives every rank's: the host leader (`leader`: the
/// first rank of its node) reads sysfs under `sysfs_root`; the others send nothing. At rank 0
/// each rank's host link (`None` where unknown); empty elsewhere.
pub(super) fn gather_links(
    comm: &MpiComm,
    hosts: &[String],
    leader: bool,
    sysfs_root: &Path,
) -> Vec<Option<f64>> {
    let link = leader
        .then(|| {
            crate::topology::ceilings::network::read(sysfs_root, &Default::default()).rail_gbps
        })
        .flatten();
    let parts = comm.gather_bytes(&floor::encode_read(leader, link));
    if parts.is_empty() {
        return Vec::new();
    }
    let reads: Vec<Option<Option<f64>>> = parts.iter().map(|b| floor::decode_read(b)).collect();
    floor::rank_links(hosts, &reads)
}

/// The floor's first pass at rank 0, before the isolated re-measurement.
pub(super) struct Pass {
    pub fraction: Option<f64>,
    pub link_gbps: Vec<Option<f64>>,
    /// `None` when the floor was not applied (off, one host, small messages).
    pub verdict: Option<Floor>,
    pub note: Option<String>,
    /// Each finding's re-measurement pairs, in the order of `verdict`'s findings.
    pub pairs: Vec<Vec<(usize, usize)>>,
}

/// Holds the matrix `m` (every cell, names `host:rank`) to the floor, or says why it is not.
pub(super) fn first_pass(
    fraction: Option<f64>,
    message_bytes: u64,
    m: &Matrix,
    hosts: &[String],
    link_gbps: Vec<Option<f64>>,
) -> Pass {
    let not_applied = |note: String| Pass {
        fraction,
        link_gbps: link_gbps.clone(),
        verdict: None,
        note: Some(note),
        pairs: Vec::new(),
    };
    let Some(f) = fraction else {
        return not_applied("not checked: switched off (--floor-fraction off)".to_string());
    };
    if hosts.iter().all(|h| *h == hosts[0]) {
        return not_applied(format!(
            "not checked: one host ({}): the floor holds pairs between hosts to their network link, and every pair here shares one",
            hosts[0]
        ));
    }
    if message_bytes < FLOOR_MIN_MESSAGE_BYTES {
        return not_applied(format!(
            "not checked: {} messages spend a large part of each exchange in latency and cannot reach a link's rate on a healthy fabric; the floor holds messages of {} and up",
            crate::units::format_bytes(message_bytes),
            crate::units::format_bytes(FLOOR_MIN_MESSAGE_BYTES)
        ));
    }
    match floor::check(m, hosts, &link_gbps, f) {
        Ok(v) => {
            let named: Vec<usize> = v
                .findings
                .iter()
                .filter_map(|x| match x {
                    FloorFinding::Node { node, .. } => Some(*node),
                    _ => None,
                })
                .collect();
            let pairs = v
                .findings
                .iter()
                .map(|x| floor::confirmation_pairs(x, hosts, &link_gbps, &named))
                .collect();
            Pass {
                fraction,
                note: v.note.clone(),
                verdict: Some(v),
                link_gbps,
                pairs,
            }
        }
        // The fraction was checked when parsed and the shapes are the job's own: said, not
        // fatal (the matrix is the measurement).
        Err(e) => not_applied(format!("not checked: {e}")),
    }
}

/// The floor as links.json records it, with each finding's isolated re-measurement
/// (`iso_gbps`: the N×N isolated cells, GB/s).
pub(super) fn record(pass: Pass, names: &[String], iso_gbps: &[Option<f64>]) -> FloorRecord {
    let fraction = pass.fraction.unwrap_or(floor::DEFAULT_FLOOR_FRACTION);
    let (checked_cells, findings) = match &pass.verdict {
        None => (0, Vec::new()),
        Some(v) => (
            v.checked,
            v.findings
                .iter()
                .zip(&pass.pairs)
                .map(|(x, pairs)| {
                    let isolated = floor::isolated_ratio(x, pairs, iso_gbps, &pass.link_gbps);
                    let confirmed = isolated.is_some_and(|r| r < fraction);
                    let mut text = x.describe(names, fraction);
                    match isolated {
                        Some(r) if confirmed => text.push_str(&format!(
                            "; isolated: {} of the link ceiling, confirmed",
                            floor::percent(r)
                        )),
                        Some(r) => text.push_str(&format!(
                            "; isolated: {} of the link ceiling, not confirmed (below the floor only under the round's load: a host's link shared by its ranks' exchanges)",
                            floor::percent(r)
                        )),
                        None => text.push_str(
                            "; no isolated re-test possible (no partner with a known link)",
                        ),
                    }
                    let (kind, ranks) = x.kind_and_ranks();
                    FloorFindingRecord {
                        kind: kind.into(),
                        ranks,
                        ratio: x.ratio(),
                        isolated_ratio: isolated,
                        confirmed,
                        text,
                    }
                })
                .collect(),
        ),
    };
    FloorRecord {
        fraction: pass.fraction,
        min_message_bytes: FLOOR_MIN_MESSAGE_BYTES,
        link_gbps: pass.link_gbps,
        checked_cells,
        findings,
        note: pass.note,
    }
}

/// The floor's lines as printed: each finding, the note, or that every held cell is above.
pub(super) fn render(f: &FloorRecord) -> String {
    let mut s = String::new();
    for x in &f.findings {
        s.push_str(&format!("absolute floor: {}\n", x.text));
    }
    if f.findings.is_empty() && f.checked_cells > 0 {
        s.push_str(&format!(
            "absolute floor: {} at or above {:.0} % of the slower host's link ceiling\n",
            crate::units::count(f.checked_cells, "inter-node cell", "inter-node cells"),
            f.fraction.unwrap_or(floor::DEFAULT_FLOOR_FRACTION) * 100.0
        ));
    }
    if let Some(note) = &f.note {
        s.push_str(&format!("absolute floor: {note}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host whose sysfs shows `rails` ACTIVE InfiniBand ports at `gbit` Gb/s each.
    fn rails_tree(tag: &str, rails: usize, gbit: u32) -> std::path::PathBuf {
        let root =
            std::env::temp_dir().join(format!("scalebench-rails-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for r in 0..rails {
            let port = root.join(format!("class/infiniband/mlx5_{r}/ports/1"));
            std::fs::create_dir_all(&port).unwrap();
            std::fs::write(port.join("state"), "4: ACTIVE\n").unwrap();
            std::fs::write(port.join("phys_state"), "5: LinkUp\n").unwrap();
            std::fs::write(port.join("link_layer"), "InfiniBand\n").unwrap();
            std::fs::write(port.join("rate"), format!("{gbit} Gb/sec (4X NDR)\n")).unwrap();
        }
        root
    }

    /// A healthy multi-rail cluster (64 DGX-like hosts, 8 × 400 Gb/s rails each, every
    /// inter-node pair at 80 % of one rail with 5 % noise, 200 seeds): held to what a host
    /// leader reads now, one rail, nothing is flagged; held to `net.link` (the sum of the
    /// rails, which the floor used before) the whole fabric is named every time, the false
    /// alarm this bound exists to prevent.
    #[test]
    fn a_healthy_multi_rail_cluster_is_held_to_one_rail_not_the_sum() {
        use crate::links::simulate::{Scenario, BASE_GBPS};
        let root = rails_tree("dgx", 8, 400);
        let read = crate::topology::ceilings::network::read(&root, &Default::default());
        let _ = std::fs::remove_dir_all(&root);
        // 400 Gb/s = 50 GB/s per rail; 8 of them: 400 GB/s
        assert_eq!((read.rail_gbps, read.link.value), (Some(50.0), Some(400.0)));
        const SEEDS: u64 = 200;
        let (mut by_rail, mut by_sum) = (0, 0);
        for seed in 0..SEEDS {
            let mut m = Scenario::healthy(64, seed, 0.05).matrix();
            for g in m.gbps.iter_mut().flatten() {
                *g *= 0.8 * 50.0 / BASE_GBPS;
            }
            let hosts = m.names.clone();
            let rail = vec![read.rail_gbps; 64];
            let sum = vec![read.link.value; 64];
            if !floor::check(&m, &hosts, &rail, 0.5)
                .unwrap()
                .findings
                .is_empty()
            {
                by_rail += 1;
            }
            if matches!(
                floor::check(&m, &hosts, &sum, 0.5).unwrap().findings[..],
                [FloorFinding::Fabric { .. }]
            ) {
                by_sum += 1;
            }
        }
        // Measured: 0 of 200 held to one rail; 200 of 200 named as a slow fabric by the sum.
        assert_eq!(by_rail, 0, "one rail: flagged in {by_rail} of {SEEDS}");
        assert_eq!(by_sum, SEEDS, "the sum: the fabric in {by_sum} of {SEEDS}");
    }

    /// 2 hosts × 2 ranks, every cell `gbps`; names `host:rank`.
    fn two_by_two(gbps: f64) -> (Matrix, Vec<String>) {
        let hosts: Vec<String> = ["a", "a", "b", "b"].iter().map(|s| s.to_string()).collect();
        let m = Matrix {
            names: (0..4).map(|r| format!("{}:{r}", hosts[r])).collect(),
            gbps: (0..16).map(|k| (k / 4 != k % 4).then_some(gbps)).collect(),
        };
        (m, hosts)
    }

    /// Not applied, each with its one reason: off, one host, messages below 1 MiB; applied,
    /// a fabric below the floor is named, re-measured over two disjoint pairs, and confirmed
    /// when the isolated cells are still below (not when they recover).
    #[test]
    fn the_pass_says_why_it_did_not_apply_or_names_and_re_measures() {
        let (m, hosts) = two_by_two(2.0);
        let links = vec![Some(12.5); 4];
        let p = first_pass(None, 1 << 20, &m, &hosts, links.clone());
        assert!(p.verdict.is_none());
        assert_eq!(
            p.note.as_deref(),
            Some("not checked: switched off (--floor-fraction off)")
        );
        let one = vec!["a".to_string(); 4];
        let p = first_pass(Some(0.5), 1 << 20, &m, &one, links.clone());
        assert!(p.note.unwrap().starts_with("not checked: one host (a)"));
        let p = first_pass(Some(0.5), 64 << 10, &m, &hosts, links.clone());
        let note = p.note.unwrap();
        assert!(
            note.starts_with("not checked: 64KiB messages") && note.ends_with("of 1MiB and up"),
            "{note}"
        );

        let p = first_pass(Some(0.5), 1 << 20, &m, &hosts, links.clone());
        let v = p.verdict.as_ref().unwrap();
        assert_eq!(v.checked, 8);
        assert!(matches!(
            v.findings[..],
            [FloorFinding::Fabric { cells: 8, .. }]
        ));
        assert_eq!(p.pairs, vec![vec![(0, 2), (1, 3)]]);
        // Isolated, still 2 GB/s of 12.5 (16 %): confirmed.
        let rec = record(p, &m.names, &m.gbps);
        assert_eq!(rec.checked_cells, 8);
        assert_eq!(rec.findings.len(), 1);
        let f = &rec.findings[0];
        assert_eq!((f.kind.as_str(), f.confirmed), ("fabric", true));
        assert!((f.isolated_ratio.unwrap() - 0.16).abs() < 1e-12);
        assert!(
            f.text
                .ends_with("isolated: 16 % of the link ceiling, confirmed"),
            "{}",
            f.text
        );
        let printed = render(&rec);
        assert!(
            printed.starts_with("absolute floor: fabric: all 8 inter-node cells below 50 %"),
            "{printed}"
        );
        // Isolated at 10 GB/s (80 %): slow only under load, not confirmed.
        let p = first_pass(Some(0.5), 1 << 20, &m, &hosts, links.clone());
        let (fast, _) = two_by_two(10.0);
        let rec = record(p, &m.names, &fast.gbps);
        assert!(!rec.findings[0].confirmed);
        assert!(
            rec.findings[0].text.contains("not confirmed"),
            "{}",
            rec.findings[0].text
        );

        // A healthy fabric: one line says how many cells were held.
        let (ok, _) = two_by_two(10.0);
        let p = first_pass(Some(0.5), 1 << 20, &ok, &hosts, links);
        let rec = record(p, &ok.names, &[]);
        assert_eq!(
            render(&rec),
            "absolute floor: 8 inter-node cells at or above 50 % of the slower host's link ceiling\n"
        );
    }
}
