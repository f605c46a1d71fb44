//! Issue 31 items 3 and 4: which NCCL algorithm × protocol was fastest at each size of a
//! sweep over the `nccl_algo` / `nccl_proto` axes, where the fastest changes (crossovers),
//! whether NCCL's own choice was beaten, and the tuner configuration NCCL's example CSV tuner
//! reads (`--nccl-tuner`). The report section is [`super::document`]'s `nccl`, the chart
//! [`super::plot`]'s `nccl`.
//!
//! Grouping: cases belong to one sweep when their parameters are equal except in size and in
//! what the launch forced. Every forced setting is a series of its own, keyed by the forced
//! values (not by NCCL's captured choice, which varies with size when only one of the two is
//! forced). Comparisons use the report's size calls ([`derive::size_call`] on
//! [`derive::ratio_interval`]), so "faster" means what it means in every other section.

use crate::params::{CaseParams, NcclAlgo, NcclProto, Workload};
use crate::report::analyze::{describe, Analysis, Entry};
use crate::report::derive::{self, SizeCall};
use crate::report::tuner;
use std::collections::{BTreeMap, BTreeSet};

/// What a launch forced on NCCL; `None` leaves NCCL its own choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Setting {
    pub algo: Option<NcclAlgo>,
    pub proto: Option<NcclProto>,
}

impl Setting {
    pub(crate) fn of(p: &CaseParams) -> Setting {
        Setting {
            algo: p.nccl_algo,
            proto: p.nccl_proto,
        }
    }
    /// The run without forcing: NCCL chose both.
    pub(crate) fn is_default(self) -> bool {
        self.algo.is_none() && self.proto.is_none()
    }
    /// `default`, or `algo=ring proto=ll128` (an unforced half reads `default`), as the
    /// report's other series name it.
    pub(crate) fn label(self) -> String {
        if self.is_default() {
            return "default".to_string();
        }
        format!(
            "algo={} proto={}",
            self.algo.map_or("default", NcclAlgo::name),
            self.proto.map_or("default", NcclProto::name)
        )
    }
}

/// An algorithm and a protocol that ran.
pub(crate) type Pair = (NcclAlgo, NcclProto);

/// `ring/ll128`: the tuner file's spellings.
pub(crate) fn pair_text(p: Pair) -> String {
    format!("{}/{}", p.0.name(), p.1.name())
}

/// The algorithm and protocol a case ran with: NCCL's captured choice where its log names one
/// pair only (warm-up and timed calls alike), else what the launch forced where it forced
/// both; `None` when neither tells (capture off and NCCL left a choice, or NCCL switched).
pub(crate) fn ran_with(
    p: &CaseParams,
    capture: Option<&crate::results::schema::NcclCapture>,
) -> Option<Pair> {
    let captured: BTreeSet<Option<Pair>> = capture
        .map(|c| {
            c.choices
                .iter()
                .map(|ch| Some((ch.algorithm.parse().ok()?, ch.protocol.parse().ok()?)))
                .collect()
        })
        .unwrap_or_default();
    match captured.len() {
        1 => return *captured.iter().next().expect("one"),
        0 => {}
        _ => return None,
    }
    Some((p.nccl_algo?, p.nccl_proto?))
}

/// One measured case of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    /// Index into [`Analysis::entries`].
    pub entry: usize,
    pub time_s: f64,
    /// What it ran with ([`ran_with`]).
    pub pair: Option<Pair>,
    /// It may name a winner ([`Analysis::usable`]): shown either way, compared only if so.
    pub usable: bool,
}

/// The slower of two cases against the faster one: time ratio slower / faster (≥ 1), the
/// p5–p95 interval of the sample ratios, and the report's call on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Versus {
    pub slower: usize,
    pub faster: usize,
    pub ratio: f64,
    pub interval: Option<(f64, f64)>,
    /// [`SizeCall::Second`]: the slower is slower beyond the tie band and its interval.
    pub call: SizeCall,
}

impl Versus {
    /// Whether the difference is called (not a tie, not noise).
    pub(crate) fn clear(&self) -> bool {
        self.call == SizeCall::Second
    }
}

/// One size of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SizeRow {
    pub bytes: u64,
    /// One per setting of the sweep, in its order; `None` where that setting was not
    /// measured (or not usable) at this size.
    pub points: Vec<Option<Point>>,
    /// Index (into the settings) of the fastest usable point; `None` when none is usable.
    pub fastest: Option<usize>,
    /// The fastest case with a known pair and the pairs that tie with it (runner-ups whose
    /// difference is not called), fastest first: what the tuner may choose from.
    pub best_pairs: Vec<Pair>,
    /// The best case of the nearest other pair against the best of the fastest pair.
    pub lead: Option<Versus>,
    /// NCCL's own choice against the fastest, where the default ran with another pair (or
    /// an unknown one) and something else was faster.
    pub default_vs_fastest: Option<Versus>,
}

/// The fastest changes between two consecutive sizes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Crossover {
    pub below_bytes: u64,
    pub above_bytes: u64,
    pub from: String,
    pub to: String,
    /// Where the tuner file switches ([`tuner::boundary_bytes`]): only where both winners ran
    /// with a known pair and NCCL's tuner covers the collective; elsewhere the file leaves
    /// the sizes to NCCL.
    pub tuner_boundary_bytes: Option<u64>,
}

/// A sweep: cases equal except in size and in what was forced.
#[derive(Debug, Clone)]
pub(crate) struct Sweep {
    pub workload: Workload,
    /// What the cases share, in words (set-up and variant).
    pub label: String,
    pub nodes: u32,
    /// Devices taking part (NCCL's nRanks).
    pub devices: u32,
    /// Default first, then the forced ones in order.
    pub settings: Vec<Setting>,
    pub rows: Vec<SizeRow>,
    /// Any case ran on scalebench's stand-in libraries (labelled STAND-IN everywhere).
    pub standin: bool,
    /// Measured cases left out because they cannot represent their set-up.
    pub left_out: usize,
    /// Cases that cannot represent their set-up but were let in (`--include-unrepresentative`).
    pub let_in: usize,
}

impl Sweep {
    /// What one size's fastest is called: its pair where known, else its setting; `None`
    /// where no point of the size is usable.
    pub(crate) fn winner_text(&self, r: &SizeRow) -> Option<String> {
        let j = r.fastest?;
        Some(match r.points[j].and_then(|p| p.pair) {
            Some(p) => pair_text(p),
            None => self.settings[j].label(),
        })
    }

    /// The pair the fastest case of a size ran with, where known.
    pub(crate) fn winner_pair(&self, r: &SizeRow) -> Option<Pair> {
        r.fastest.and_then(|j| r.points[j]?.pair)
    }

    /// Where the fastest changes, in size order (sizes without a usable point skipped).
    pub(crate) fn crossovers(&self) -> Vec<Crossover> {
        let decided: Vec<(&SizeRow, String)> = self
            .rows
            .iter()
            .filter_map(|r| self.winner_text(r).map(|w| (r, w)))
            .collect();
        let tunable = tuner::tuner_collective(self.workload).is_some();
        decided
            .windows(2)
            .filter_map(|w| {
                let ((ra, a), (rb, b)) = (w[0].clone(), w[1].clone());
                let paired = self.winner_pair(ra).is_some() && self.winner_pair(rb).is_some();
                (a != b).then_some(Crossover {
                    below_bytes: ra.bytes,
                    above_bytes: rb.bytes,
                    from: a,
                    to: b,
                    tuner_boundary_bytes: (tunable && paired)
                        .then(|| tuner::boundary_bytes(ra.bytes, rb.bytes)),
                })
            })
            .collect()
    }
}

fn samples<'e>(e: &Entry<'e>) -> &'e [f64] {
    e.case
        .timing
        .as_ref()
        .map_or(&[], |t| t.samples_s.as_slice())
}

/// Whether a case ran on the stand-in libraries (its launch says so).
pub(crate) fn is_standin(e: &Entry<'_>) -> bool {
    e.launch
        .and_then(|l| l.provenance.as_ref())
        .is_some_and(|p| p.backend.detail.starts_with("STAND-IN: "))
}

fn versus(a: &Analysis<'_>, slower: &Point, faster: &Point) -> Versus {
    let (s, f) = (&a.entries[slower.entry], &a.entries[faster.entry]);
    let ratio = slower.time_s / faster.time_s;
    let interval = derive::ratio_interval(samples(s), samples(f));
    Versus {
        slower: slower.entry,
        faster: faster.entry,
        ratio,
        interval,
        call: derive::size_call(ratio, interval, a.options.tie_band),
    }
}

/// Every sweep of the analysis: groups with at least one forced setting and two settings,
/// collectives only, in workload and label order.
pub(crate) fn sweeps(a: &Analysis<'_>) -> Vec<Sweep> {
    // key (canonical text) → (key, setting → bytes → point)
    type Members = BTreeMap<Setting, BTreeMap<u64, Point>>;
    // (key, members, left out, stand-in, let in)
    type Group = (CaseParams, Members, usize, bool, usize);
    let mut groups: BTreeMap<(Workload, String), Group> = BTreeMap::new();
    for (i, e) in a.entries.iter().enumerate() {
        let p = e.params();
        if !p.workload.is_collective() {
            continue;
        }
        let (Some(bytes), Some(time_s)) = (e.bytes(), e.time_s()) else {
            continue;
        };
        let mut k = p.clone();
        k.nccl_algo = None;
        k.nccl_proto = None;
        k.requested_bytes = None;
        let g = groups
            .entry((p.workload, k.canonical()))
            .or_insert_with(|| (k, Members::new(), 0, false, 0));
        g.3 |= is_standin(e);
        // The report's rule: a case that cannot represent its set-up names no winner. It
        // stays in the table (a setting must not vanish because its launch met a busy host).
        let usable = a.usable(i);
        if !usable {
            g.2 += 1;
        } else if !e.representative() {
            g.4 += 1;
        }
        g.1.entry(Setting::of(p)).or_default().insert(
            bytes,
            Point {
                entry: i,
                time_s,
                pair: ran_with(p, e.case.nccl.as_ref()),
                usable,
            },
        );
    }
    let mut out = Vec::new();
    for ((workload, _), (key, members, left_out, standin, let_in)) in groups {
        if members.len() < 2 || members.keys().all(|s| s.is_default()) {
            continue;
        }
        // BTreeMap order puts (None, None) first: the default leads.
        let settings: Vec<Setting> = members.keys().copied().collect();
        let sizes: BTreeSet<u64> = members.values().flat_map(|m| m.keys().copied()).collect();
        let rows = sizes
            .into_iter()
            .map(|bytes| {
                let points: Vec<Option<Point>> = settings
                    .iter()
                    .map(|s| members[s].get(&bytes).copied())
                    .collect();
                size_row(a, &settings, bytes, points)
            })
            .collect();
        let any = members
            .values()
            .flat_map(|m| m.values())
            .next()
            .map(|p| &a.entries[p.entry]);
        let shown: BTreeSet<crate::params::ParamKey> = [
            crate::params::ParamKey::Dtype,
            crate::params::ParamKey::Op,
            crate::params::ParamKey::InPlace,
            crate::params::ParamKey::Timing,
            crate::params::ParamKey::Topology,
            crate::params::ParamKey::Binding,
        ]
        .into_iter()
        .collect();
        out.push(Sweep {
            workload,
            label: format!(
                "{}×{} {}",
                key.nodes,
                key.devices_per_node,
                describe(&key, &shown)
            ),
            nodes: key.nodes,
            devices: any.map_or(key.nodes * key.devices_per_node, |e| e.case.devices),
            settings,
            rows,
            standin,
            left_out,
            let_in,
        });
    }
    out
}

fn size_row(
    a: &Analysis<'_>,
    settings: &[Setting],
    bytes: u64,
    points: Vec<Option<Point>>,
) -> SizeRow {
    let usable = |j: usize| points[j].filter(|p| p.usable);
    let fastest = (0..points.len())
        .filter(|&j| usable(j).is_some())
        .min_by(|&x, &y| {
            let t = |j: usize| usable(j).map_or(f64::INFINITY, |p| p.time_s);
            t(x).total_cmp(&t(y))
        });
    // The best usable measurement of each pair that ran.
    let mut by_pair: BTreeMap<Pair, Point> = BTreeMap::new();
    for p in points.iter().flatten().filter(|p| p.usable) {
        if let Some(pair) = p.pair {
            let best = by_pair.entry(pair).or_insert(*p);
            if p.time_s < best.time_s {
                *best = *p;
            }
        }
    }
    let mut ranked: Vec<(Pair, Point)> = by_pair.into_iter().collect();
    ranked.sort_by(|x, y| x.1.time_s.total_cmp(&y.1.time_s));
    let lead = ranked.get(1).map(|r| versus(a, &r.1, &ranked[0].1));
    let best_pairs: Vec<Pair> = match ranked.first() {
        None => Vec::new(),
        Some(first) => std::iter::once(first.0)
            .chain(
                ranked[1..]
                    .iter()
                    .filter(|r| !versus(a, &r.1, &first.1).clear())
                    .map(|r| r.0),
            )
            .collect(),
    };
    let default_vs_fastest = settings
        .iter()
        .position(|s| s.is_default())
        .and_then(usable)
        .zip(fastest.and_then(usable))
        .and_then(|(d, best)| {
            let same_pair = d.pair.is_some() && d.pair == best.pair;
            (d.entry != best.entry && !same_pair).then(|| versus(a, &d, &best))
        });
    SizeRow {
        bytes,
        points,
        fastest,
        best_pairs,
        lead,
        default_vs_fastest,
    }
}

/// The file stem of sweep `k`'s chart (`nccl_allreduce_1`).
pub(crate) fn chart_stem(k: usize, w: Workload) -> String {
    format!("nccl_{w}_{}", k + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use NcclAlgo::{Ring, Tree};
    use NcclProto::{Ll128, Simple};

    #[test]
    fn ran_with_prefers_one_captured_pair_then_the_forced_pair() {
        use crate::results::schema::{NcclCapture, NcclChoice};
        let choice = |a: &str, p: &str| NcclChoice {
            algorithm: a.into(),
            protocol: p.into(),
            channels: None,
            calls: 3,
        };
        let mut p = CaseParams::new(Workload::Allreduce, 1, 2);
        let cap = |c: Vec<NcclChoice>| NcclCapture {
            version: None,
            choices: c,
            warnings: Vec::new(),
        };
        // Unforced, nothing captured: unknown.
        assert_eq!(ran_with(&p, None), None);
        assert_eq!(
            ran_with(&p, Some(&cap(vec![choice("Tree", "Simple")]))),
            Some((Tree, Simple))
        );
        // NCCL switched within the case: no single pair.
        assert_eq!(
            ran_with(
                &p,
                Some(&cap(vec![choice("Tree", "LL"), choice("Ring", "LL")]))
            ),
            None
        );
        p.nccl_algo = Some(Ring);
        assert_eq!(ran_with(&p, None), None, "only one half forced");
        p.nccl_proto = Some(Ll128);
        assert_eq!(ran_with(&p, None), Some((Ring, Ll128)));
        assert_eq!(
            ran_with(&p, Some(&cap(vec![]))),
            Some((Ring, Ll128)),
            "nothing logged (NCCL < 2.20): the forced pair"
        );
    }

    #[test]
    fn settings_are_labelled_as_the_report_names_series() {
        let s = |algo, proto| Setting { algo, proto }.label();
        assert_eq!(s(None, None), "default");
        assert_eq!(s(Some(Ring), Some(Ll128)), "algo=ring proto=ll128");
        assert_eq!(s(None, Some(Simple)), "algo=default proto=simple");
        // The default sorts first.
        let mut v = [
            Setting {
                algo: Some(Tree),
                proto: None,
            },
            Setting {
                algo: None,
                proto: None,
            },
        ];
        v.sort();
        assert!(v[0].is_default());
    }
}
