//! Comparisons of two set-ups equal in everything else: hybrid / pure, and each binding policy
//! against a reference, per size with bands and intervals.

use super::entry::Entry;
use super::group::{variant_key, CaseParams2};
use super::label::{describe, variant_label};
use super::palette::{style_key, Layout, StyleKey};
use super::Analysis;
use crate::params::{Binding, CaseParams, ParamKey, Topology, Workload};
use crate::report::derive::{self, Band, BandSummary, Decision, SizeCall};
use crate::results::schema::CaseStatus;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Which comparison a ratio group makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RatioKind {
    /// hybrid / pure.
    Topology,
    /// policy / reference binding.
    Binding,
}

/// One size (or GEMM case) of a comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioRow {
    /// Entry of the numerator (hybrid, or the policy).
    pub num: usize,
    /// Entry of the denominator (pure, or the reference).
    pub den: usize,
    pub bytes: Option<u64>,
    pub ratio: f64,
    /// p5–p95 of the pairwise sample ratios ([`derive::ratio_interval`]).
    pub interval: Option<(f64, f64)>,
    pub band: Band,
    /// What this size says ([`derive::size_call`]).
    pub call: SizeCall,
}

/// A comparison of two set-ups equal in everything else.
#[derive(Debug, Clone)]
pub struct RatioGroup {
    pub kind: RatioKind,
    pub workload: Workload,
    /// What is held fixed (variant, set-up, layout).
    pub label: String,
    /// The variant (dtype, op, in-place, timing, ...) in words.
    pub variant: String,
    pub num_label: String,
    pub den_label: String,
    pub layout: Layout,
    /// Style of the numerator's set-up (for chart markers).
    pub style: StyleKey,
    pub rows: Vec<RatioRow>,
    pub bands: Vec<BandSummary>,
    pub charted: bool,
    /// Concern kinds of either side's cases: no winner is named from such a group unless
    /// unrepresentative cases are included.
    pub concerns: BTreeSet<String>,
    /// What the sizes say together ([`derive::decide`]).
    pub decision: Option<Decision>,
    /// Most measurements of one of its cases across the inputs (1: a single run).
    pub runs: usize,
    /// Largest max/min − 1 of a case's headline times across runs; `None` for a single run.
    pub run_spread: Option<f64>,
}

/// Headline times of every ok measurement of each case id across the inputs (repeated runs).
pub(super) type RunTimes<'s> = HashMap<&'s str, Vec<f64>>;

struct RatioGroupSeed {
    kind: RatioKind,
    key: CaseParams,
    num_label: String,
    den_label: String,
    style: StyleKey,
}

/// Comparisons being gathered, keyed by (group key without size, comparison): rows per size.
type Pending = BTreeMap<(String, String), (RatioGroupSeed, Vec<RatioRow>)>;

impl<'a> Analysis<'a> {
    pub(super) fn ratio_groups(
        &self,
        charted: &BTreeSet<CaseParams2>,
        wl_varying: &BTreeMap<Workload, BTreeSet<ParamKey>>,
    ) -> Vec<RatioGroup> {
        let mut groups = Pending::new();
        self.topology_pairs(&mut groups);
        self.binding_pairs(&mut groups);
        let runs = self.run_times();
        groups
            .into_values()
            .map(|(seed, rows)| {
                let mut g = self.ratio_group(seed, rows, charted, wl_varying, &runs);
                (g.runs, g.run_spread) = self.run_spread(&g.rows, &runs);
                g
            })
            .collect()
    }

    /// Headline times of every ok measurement of each case id across the inputs (repeated
    /// runs), so that a ratio or an efficiency is judged on every run given.
    pub(super) fn run_times(&self) -> RunTimes<'a> {
        let mut runs = RunTimes::new();
        for c in self.sources.iter().flat_map(|s| &s.file.cases) {
            if let Some(t) = c.timing.as_ref().filter(|t| t.time_s > 0.0) {
                if c.status == CaseStatus::Ok {
                    runs.entry(c.id.as_str()).or_default().push(t.time_s);
                }
            }
        }
        runs
    }

    /// The most runs of one case of `rows`, and the largest run-to-run spread among them.
    fn run_spread(&self, rows: &[RatioRow], runs: &RunTimes<'_>) -> (usize, Option<f64>) {
        let mut most = 1;
        let mut spread: Option<f64> = None;
        for i in rows.iter().flat_map(|r| [r.num, r.den]) {
            let Some(ts) = runs.get(self.entries[i].case.id.as_str()) else {
                continue;
            };
            most = most.max(ts.len());
            if ts.len() >= 2 {
                let lo = ts.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = ts.iter().copied().fold(0.0, f64::max);
                spread = Some(spread.unwrap_or(0.0).max(hi / lo - 1.0));
            }
        }
        (most, spread)
    }

    /// Pure vs hybrid: measured entries equal except in topology.
    fn topology_pairs(&self, groups: &mut Pending) {
        let mut by_topo: HashMap<CaseParams, BTreeMap<Topology, usize>> = HashMap::new();
        for (i, e) in self.measured() {
            let mut k = e.params().clone();
            k.topology = Topology::Pure;
            by_topo.entry(k).or_default().insert(e.params().topology, i);
        }
        for (key, m) in &by_topo {
            let (Some(&pure), Some(&hyb)) = (m.get(&Topology::Pure), m.get(&Topology::Hybrid))
            else {
                continue;
            };
            let mut gk = key.clone();
            gk.requested_bytes = None;
            let mut labelled = gk.clone();
            labelled.topology = Topology::Hybrid;
            let seed = RatioGroupSeed {
                kind: RatioKind::Topology,
                key: gk.clone(),
                num_label: "hybrid".into(),
                den_label: "pure".into(),
                style: style_key(&labelled.launch_shape()),
            };
            let row = self.ratio_row(hyb, pure);
            groups
                .entry((gk.canonical(), "topology".into()))
                .or_insert_with(|| (seed, Vec::new()))
                .1
                .push(row);
        }
    }

    /// Binding: measured entries equal except in binding, each policy against a reference
    /// (`none` when measured, else the first).
    fn binding_pairs(&self, groups: &mut Pending) {
        let mut by_bind: HashMap<CaseParams, BTreeMap<Binding, usize>> = HashMap::new();
        for (i, e) in self.measured() {
            let mut k = e.params().clone();
            k.binding = Binding::None;
            by_bind.entry(k).or_default().insert(e.params().binding, i);
        }
        for (key, m) in &by_bind {
            if m.len() < 2 {
                continue;
            }
            let reference = if m.contains_key(&Binding::None) {
                Binding::None
            } else {
                *m.keys().next().expect("two bindings")
            };
            let den = m[&reference];
            for (&b, &num) in m {
                if b == reference {
                    continue;
                }
                let mut gk = key.clone();
                gk.requested_bytes = None;
                gk.binding = b;
                let seed = RatioGroupSeed {
                    kind: RatioKind::Binding,
                    key: gk.clone(),
                    num_label: format!("bind={b}"),
                    den_label: format!("bind={reference}"),
                    style: style_key(&gk.launch_shape()),
                };
                let row = self.ratio_row(num, den);
                groups
                    .entry((gk.canonical(), format!("binding {reference}")))
                    .or_insert_with(|| (seed, Vec::new()))
                    .1
                    .push(row);
            }
        }
    }

    /// One comparison: rows by size, their bands and intervals, and what is held fixed in words.
    fn ratio_group(
        &self,
        seed: RatioGroupSeed,
        mut rows: Vec<RatioRow>,
        charted: &BTreeSet<CaseParams2>,
        wl_varying: &BTreeMap<Workload, BTreeSet<ParamKey>>,
        runs: &RunTimes<'_>,
    ) -> RatioGroup {
        rows.sort_by_key(|r| r.bytes);
        let charted = charted.contains(&CaseParams2(variant_key(&seed.key).canonical()));
        // Every size is called from its interval, so every group's intervals are computed:
        // from every run of both cases when each has several (run-to-run variance in it, the
        // newest run not deciding alone), else from the one run's sample pairs.
        for r in &mut rows {
            let (a, b) = (&self.entries[r.num], &self.entries[r.den]);
            let times = |e: &Entry<'_>| runs.get(e.case.id.as_str()).cloned().unwrap_or_default();
            let est = derive::ratio_estimate(
                &times(a),
                &times(b),
                samples(a),
                samples(b),
                (
                    a.time_s().unwrap_or(f64::NAN),
                    b.time_s().unwrap_or(f64::NAN),
                ),
            );
            if let Some(e) = est.filter(|e| e.runs >= 2) {
                r.ratio = e.ratio;
                r.interval = Some((e.low, e.high));
            } else {
                r.interval = samples(a)
                    .zip(samples(b))
                    .and_then(|(x, y)| derive::ratio_interval(x, y));
            }
            r.call = derive::size_call(r.ratio, r.interval, self.options.tie_band);
        }
        let decision = derive::decide(&rows.iter().map(|r| (r.ratio, r.call)).collect::<Vec<_>>());
        let bands =
            derive::band_summaries(&rows.iter().map(|r| (r.band, r.ratio)).collect::<Vec<_>>());
        let varying = wl_varying
            .get(&seed.key.workload)
            .cloned()
            .unwrap_or_default();
        let mut keys: BTreeSet<ParamKey> = varying
            .iter()
            .filter(|k| {
                !matches!(
                    k,
                    ParamKey::RequestedBytes
                        | ParamKey::Workload
                        | ParamKey::Nodes
                        | ParamKey::DevicesPerNode
                        | ParamKey::Topology
                        | ParamKey::Binding
                )
            })
            .copied()
            .collect();
        if seed.kind == RatioKind::Topology && varying.contains(&ParamKey::Binding) {
            keys.insert(ParamKey::Binding);
        }
        // A binding comparison always names its topology: pure and hybrid at one layout are
        // different set-ups and may well rank the policies differently.
        if seed.kind == RatioKind::Binding {
            keys.insert(ParamKey::Topology);
        }
        let concerns: BTreeSet<String> = rows
            .iter()
            .flat_map(|r| {
                let (n, d) = (&self.entries[r.num], &self.entries[r.den]);
                n.concern_kinds().into_iter().chain(d.concern_kinds())
            })
            .collect();
        let layout = Layout::of(&seed.key.launch_shape());
        let rest = describe(&seed.key, &keys);
        let label = if rest.is_empty() {
            layout.label()
        } else {
            format!("{} {rest}", layout.label())
        };
        RatioGroup {
            kind: seed.kind,
            workload: seed.key.workload,
            charted,
            label,
            variant: variant_label(&seed.key),
            num_label: seed.num_label,
            den_label: seed.den_label,
            layout,
            style: seed.style,
            rows,
            bands,
            concerns,
            decision,
            runs: 1,
            run_spread: None,
        }
    }

    fn ratio_row(&self, num: usize, den: usize) -> RatioRow {
        let (a, b) = (&self.entries[num], &self.entries[den]);
        let bytes = b.params().requested_bytes;
        RatioRow {
            num,
            den,
            bytes,
            ratio: a.time_s().unwrap_or(f64::NAN) / b.time_s().unwrap_or(f64::NAN),
            interval: None,
            band: bytes.map_or(Band::All, Band::of_bytes),
            call: SizeCall::Unclear,
        }
    }
}

/// The timed samples of an entry, when it has any.
fn samples<'e>(e: &Entry<'e>) -> Option<&'e [f64]> {
    e.case.timing.as_ref().map(|t| t.samples_s.as_slice())
}
