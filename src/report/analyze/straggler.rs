//! Stragglers: per node and per rank, the geometric mean of how much slower than the median
//! rank they ran, and the most imbalanced cases.

use super::entry::Entry;
use super::Analysis;
use crate::report::derive;
use std::collections::BTreeMap;

/// A node's straggler record.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeScore {
    pub host: String,
    pub node_name: String,
    pub cases: usize,
    pub slowest_in: usize,
    pub score: f64,
}

/// A rank's straggler record (ranks of different launches are different processes).
#[derive(Debug, Clone, PartialEq)]
pub struct RankScore {
    pub source: usize,
    pub launch_id: String,
    pub setup: String,
    pub rank: u32,
    pub node_name: String,
    pub host: String,
    pub cases: usize,
    pub slowest_in: usize,
    pub score: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Stragglers {
    /// Cases with at least 2 ranks and a measurement.
    pub cases: usize,
    pub nodes: Vec<NodeScore>,
    pub ranks: Vec<RankScore>,
    /// Entries by imbalance, largest first.
    pub most_imbalanced: Vec<usize>,
}

/// A node's or rank's running sums while the cases are read.
#[derive(Default)]
struct Acc {
    ln_sum: f64,
    n: usize,
    slowest_in: usize,
}

impl Acc {
    fn add(&mut self, slowness: f64, slowest: bool) {
        self.ln_sum += slowness.ln();
        self.n += 1;
        self.slowest_in += usize::from(slowest);
    }
    /// The geometric mean of the slowness added.
    fn score(&self) -> f64 {
        (self.ln_sum / self.n.max(1) as f64).exp()
    }
}

/// A rank's record while the cases are read.
struct RankAcc {
    acc: Acc,
    host: String,
    node_name: String,
    setup: String,
}

/// Every node's and rank's record, and the cases counted, while the cases are read.
#[derive(Default)]
struct Tally {
    nodes: BTreeMap<(String, String), Acc>,
    ranks: BTreeMap<(usize, String, u32), RankAcc>,
    imbalanced: Vec<usize>,
    cases: usize,
}

impl Tally {
    /// Adds entry `i` if it has per-rank times to compare.
    fn add(&mut self, i: usize, e: &Entry<'_>) {
        let Some(t) = e.case.timing.as_ref() else {
            return;
        };
        let Some(slow) = derive::slowness(&t.per_rank_mean_s) else {
            return;
        };
        self.cases += 1;
        if e.imbalance.is_some() {
            self.imbalanced.push(i);
        }
        let slowest = e.imbalance.map(|im| im.slowest_rank);
        let prov = e.launch.and_then(|l| l.provenance.as_ref());
        let where_is = |r: usize| -> (String, String) {
            prov.and_then(|p| p.ranks.iter().find(|x| x.rank as usize == r))
                .map_or_else(
                    || ("unknown".to_string(), format!("rank {r}")),
                    |x| (x.host.clone(), x.node_name.clone()),
                )
        };
        // A node's slowness in a case is that of its slowest rank.
        let mut per_node: BTreeMap<(String, String), (f64, bool)> = BTreeMap::new();
        for (r, s) in slow.iter().enumerate() {
            let at = where_is(r);
            let racc = self
                .ranks
                .entry((e.source, e.case.launch_id.clone(), r as u32))
                .or_insert_with(|| RankAcc {
                    acc: Acc::default(),
                    host: at.0.clone(),
                    node_name: at.1.clone(),
                    setup: e.shape().label(),
                });
            racc.acc.add(*s, slowest == Some(r));
            let slot = per_node.entry(at).or_insert((0.0, false));
            slot.0 = slot.0.max(*s);
            slot.1 |= slowest == Some(r);
        }
        for (at, (s, is_slowest)) in per_node {
            self.nodes.entry(at).or_default().add(s, is_slowest);
        }
    }
}

impl<'a> Analysis<'a> {
    pub(super) fn find_stragglers(&self) -> Stragglers {
        let mut tally = Tally::default();
        for (i, e) in self.conclusive() {
            tally.add(i, e);
        }
        let mut node_scores: Vec<NodeScore> = tally
            .nodes
            .into_iter()
            .map(|((host, node_name), a)| NodeScore {
                host,
                node_name,
                cases: a.n,
                slowest_in: a.slowest_in,
                score: a.score(),
            })
            .collect();
        node_scores.sort_by(|a, b| b.score.total_cmp(&a.score));
        let mut rank_scores: Vec<RankScore> = tally
            .ranks
            .into_iter()
            .map(|((source, launch_id, rank), r)| RankScore {
                source,
                launch_id,
                setup: r.setup,
                rank,
                node_name: r.node_name,
                host: r.host,
                cases: r.acc.n,
                slowest_in: r.acc.slowest_in,
                score: r.acc.score(),
            })
            .collect();
        rank_scores.sort_by(|a, b| b.score.total_cmp(&a.score));
        let mut imbalanced = tally.imbalanced;
        imbalanced.sort_by(|&x, &y| {
            let r = |i: usize| self.entries[i].imbalance.map_or(1.0, |m| m.ratio);
            r(y).total_cmp(&r(x))
        });
        Stragglers {
            cases: tally.cases,
            nodes: node_scores,
            ranks: rank_scores,
            most_imbalanced: imbalanced,
        }
    }
}
