//! From the selected cases to every derived figure of a report: per-case spread and imbalance,
//! size curves per collective and set-up (with Hockney fits), scaling series across device
//! counts (speedup/efficiency for GEMMs, busbw retention and ring/tree models for collectives),
//! pure-vs-hybrid and binding ratios, stragglers, noisy and failed cases.
//!
//! Grouping rule: cases belong together when their parameters are equal except on the axis being
//! studied (size; nodes and devices per node; topology; binding). The formulas themselves live in
//! [`super::derive`] and [`super::model`].

use super::derive::{self, Band, BandSummary, Imbalance, Scaled, ScalingKind, Spread};
use super::load::{canonical_pairs, Pick, Selection, Source};
use super::model::{self, FitError, Regimes, ScaleModel, ScalePoint};
use crate::params::{
    BackendKind, Binding, CaseParams, LaunchShape, Placement, Scaling, Topology, Workload,
};
use crate::results::representative;
use crate::results::schema::{CaseResult, CaseStatus, LaunchRecord, RankInfo, Unrepresentative};
use crate::units::format_bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Thresholds and limits, all printed in the report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// A case is noisy when the cv of its samples exceeds this.
    pub noisy_cv: f64,
    /// Ratios within 1 ± this are a tie.
    pub tie_band: f64,
    /// Variants (dtype, op, in-place, timing, ...) charted per workload, most cases first.
    pub chart_variants: usize,
    /// Let unrepresentative cases (oversubscribed, emulated nodes, ...) into winners, scaling
    /// and fits, marked; by default they are shown apart and left out.
    pub include_unrepresentative: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            noisy_cv: 0.10,
            tie_band: 0.05,
            chart_variants: 1,
            include_unrepresentative: false,
        }
    }
}

/// One case with what the report derives from it alone.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub case: &'a CaseResult,
    pub launch: Option<&'a LaunchRecord>,
    /// Index of the input it came from.
    pub source: usize,
    pub spread: Option<Spread>,
    pub noisy: bool,
    pub imbalance: Option<Imbalance>,
    /// Provenance of the slowest rank, when the launch recorded it.
    pub slowest: Option<&'a RankInfo>,
    /// Why the measurement may not represent its set-up ([`representative::assess`]); empty
    /// when nothing is known against it.
    pub concerns: Vec<Unrepresentative>,
}

impl<'a> Entry<'a> {
    pub fn params(&self) -> &'a CaseParams {
        &self.case.params
    }
    /// The headline time of a validated measurement (status ok, positive time).
    pub fn time_s(&self) -> Option<f64> {
        let t = self.case.timing.as_ref()?.time_s;
        (self.case.status == CaseStatus::Ok && t > 0.0 && t.is_finite()).then_some(t)
    }
    pub fn layout(&self) -> Layout {
        Layout {
            nodes: self.case.params.nodes,
            devices_per_node: self.case.params.devices_per_node,
        }
    }
    pub fn shape(&self) -> LaunchShape {
        self.case.params.launch_shape()
    }
    /// S in bytes (after rounding), falling back to the requested size.
    pub fn bytes(&self) -> Option<u64> {
        self.case.bytes.or(self.case.params.requested_bytes)
    }
    pub fn representative(&self) -> bool {
        self.concerns.is_empty()
    }
    /// The kinds of its concerns.
    pub fn concern_kinds(&self) -> BTreeSet<String> {
        self.concerns.iter().map(|c| c.kind.clone()).collect()
    }
}

/// `oversubscribed, emulated nodes`: concern kinds in words.
pub fn kinds_text(kinds: &BTreeSet<String>) -> String {
    kinds
        .iter()
        .map(|k| k.replace('_', " "))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Nodes × devices per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Layout {
    pub nodes: u32,
    pub devices_per_node: u32,
}

impl Layout {
    pub fn devices(&self) -> u32 {
        self.nodes * self.devices_per_node
    }
    pub fn of(s: &LaunchShape) -> Layout {
        Layout {
            nodes: s.nodes,
            devices_per_node: s.devices_per_node,
        }
    }
    /// `2×4`: nodes × devices per node.
    pub fn label(&self) -> String {
        format!("{}×{}", self.nodes, self.devices_per_node)
    }
}

/// The parts of a set-up drawn with one marker (the layout has the colour).
pub type StyleKey = (BackendKind, Topology, Binding, Placement);

pub fn style_key(s: &LaunchShape) -> StyleKey {
    (s.backend, s.topology, s.binding, s.placement)
}

/// Colour and marker indices shared by every chart of a report: one colour per set-up
/// (launch shape), one marker per (backend, topology, binding, placement).
#[derive(Debug, Clone, Default)]
pub struct Palette {
    pub layouts: Vec<Layout>,
    pub styles: Vec<StyleKey>,
    /// Every set-up, ordered by style then layout: the colour index.
    pub shapes: Vec<(StyleKey, Layout)>,
}

impl Palette {
    /// The colour index of a set-up (stable across the charts of one report).
    pub fn shape_index(&self, s: &LaunchShape) -> usize {
        self.shapes
            .binary_search(&(style_key(s), Layout::of(s)))
            .unwrap_or(0)
    }
    pub fn style_index(&self, s: StyleKey) -> usize {
        self.styles.binary_search(&s).unwrap_or(0)
    }
}

/// How a series walks across device counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Every layout (each device count has one layout).
    AllLayouts,
    /// One node, devices per node varying.
    SingleNode,
    /// Fixed devices per node, nodes varying.
    PerNode(u32),
}

impl Family {
    pub fn label(&self) -> String {
        match self {
            Family::AllLayouts => "across layouts".to_string(),
            Family::SingleNode => "within 1 node".to_string(),
            Family::PerNode(d) => format!("{d} device(s) per node, across nodes"),
        }
    }
}

/// Splits the layouts of a group into series along which only the device count changes. When
/// two layouts share a device count (1×4 and 2×2) they cannot sit on one axis, so the group
/// splits into scaling within one node and scaling over nodes at each devices-per-node.
pub fn families(layouts: &BTreeSet<Layout>) -> Vec<(Family, Vec<Layout>)> {
    let mut by_devices: BTreeMap<u32, usize> = BTreeMap::new();
    for l in layouts {
        *by_devices.entry(l.devices()).or_default() += 1;
    }
    let mut out = Vec::new();
    if by_devices.values().all(|&n| n == 1) {
        if layouts.len() >= 2 {
            let mut v: Vec<Layout> = layouts.iter().copied().collect();
            v.sort_by_key(|l| l.devices());
            out.push((Family::AllLayouts, v));
        }
        return out;
    }
    let single: Vec<Layout> = layouts.iter().copied().filter(|l| l.nodes == 1).collect();
    if single.len() >= 2 {
        out.push((Family::SingleNode, single));
    }
    let dpns: BTreeSet<u32> = layouts.iter().map(|l| l.devices_per_node).collect();
    for d in dpns {
        let v: Vec<Layout> = layouts
            .iter()
            .copied()
            .filter(|l| l.devices_per_node == d)
            .collect();
        if v.len() >= 2 {
            out.push((Family::PerNode(d), v));
        }
    }
    out
}

/// A collective's size curve for one set-up.
#[derive(Debug, Clone)]
pub struct Curve {
    pub shape: LaunchShape,
    /// Measured entries, by size.
    pub points: Vec<usize>,
    /// α–β per regime; refused for unrepresentative set-ups unless they are included.
    pub regimes: Result<Regimes, FitError>,
    /// The busbw factor F of the set-up (x = F·S in the fit).
    pub factor: Option<f64>,
    /// Concern kinds of its points (empty: representative).
    pub concerns: BTreeSet<String>,
}

/// One variant (dtype, op, root, in-place, timing) of one collective, every set-up.
#[derive(Debug, Clone)]
pub struct CollectiveView {
    pub workload: Workload,
    /// The parameters shared by the variant's cases (set-up and size blanked).
    pub variant: CaseParams,
    pub label: String,
    /// Cases of the variant (any status).
    pub cases: usize,
    pub charted: bool,
    pub curves: Vec<Curve>,
}

/// A GEMM scaling series.
#[derive(Debug, Clone)]
pub struct ScaleSeries {
    pub workload: Workload,
    pub label: String,
    pub family: Family,
    pub kind: ScalingKind,
    /// Measured entries, by device count; the first is the baseline.
    pub points: Vec<usize>,
    pub scaled: Vec<Scaled>,
    pub charted: bool,
}

/// A collective across device counts: one set-up family, every size.
#[derive(Debug, Clone)]
pub struct CollScale {
    pub workload: Workload,
    pub label: String,
    pub family: Family,
    /// The layouts of the series, by device count.
    pub layouts: Vec<Layout>,
    /// Per requested size: the measured entry at each layout (same order as `layouts`).
    pub sizes: Vec<(u64, Vec<Option<usize>>)>,
    pub model: Result<ScaleModel, FitError>,
    pub charted: bool,
    /// Style of the family (for chart markers).
    pub style: StyleKey,
}

impl CollScale {
    /// The device count busbw retention is measured against: the smallest ≥ 2.
    pub fn retention_base(&self) -> Option<usize> {
        self.layouts.iter().position(|l| l.devices() >= 2)
    }
}

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
    /// p5–p95 of the pairwise sample ratios ([`derive::ratio_interval`]); computed for
    /// charted variants.
    pub interval: Option<(f64, f64)>,
    pub band: Band,
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
}

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

/// Everything a report shows.
#[derive(Debug)]
pub struct Analysis<'a> {
    pub sources: &'a [Source],
    pub selection: &'a Selection,
    pub options: Options,
    pub entries: Vec<Entry<'a>>,
    /// Parameter keys whose values differ among the selected cases.
    pub varying: BTreeSet<String>,
    pub palette: Palette,
    pub collectives: Vec<CollectiveView>,
    pub scaling: Vec<ScaleSeries>,
    pub coll_scaling: Vec<CollScale>,
    pub ratios: Vec<RatioGroup>,
    pub stragglers: Stragglers,
    /// Noisy entries, largest cv first.
    pub noisy: Vec<usize>,
    /// Entries whose status is not ok.
    pub problems: Vec<usize>,
    /// Entries with concerns (not representative of their set-up).
    pub unrepresentative: Vec<usize>,
}

/// Parameters with the set-up (launch shape) and the size blanked: what a variant shares.
fn variant_key(p: &CaseParams) -> CaseParams {
    let mut k = p.clone();
    k.nodes = 0;
    k.devices_per_node = 0;
    k.topology = Topology::Pure;
    k.binding = Binding::None;
    k.placement = Placement::Fill;
    k.backend = BackendKind::Cpu;
    k.requested_bytes = None;
    k
}

/// The parameters a person needs to tell cases apart, `key=value` made readable.
pub fn pretty_pair(k: &str, v: &str) -> Option<String> {
    if v == "-" {
        return None;
    }
    Some(match k {
        "workload" | "backend" | "timing" | "dtype" | "op" | "topology" | "scaling" => {
            v.to_string()
        }
        "binding" => format!("bind={v}"),
        "placement" => format!("place={v}"),
        "nodes" => format!("{v} node(s)"),
        "devices_per_node" => format!("{v} dev/node"),
        "in_place" => if v == "true" {
            "in-place"
        } else {
            "out-of-place"
        }
        .to_string(),
        "requested_bytes" => v.parse::<u64>().map_or(v.to_string(), format_bytes),
        "shape" => match v.split('x').collect::<Vec<_>>().as_slice() {
            [m, n, k] if m == n && n == k => format!("n={m}"),
            _ => format!("shape={v}"),
        },
        "threads_per_device" => format!("{v} thr/dev"),
        _ => format!("{k}={v}"),
    })
}

/// Describes `p` by the keys in `keys` (in canonical order).
pub fn describe(p: &CaseParams, keys: &BTreeSet<String>) -> String {
    canonical_pairs(p)
        .into_iter()
        .filter(|(k, _)| keys.contains(k))
        .filter_map(|(k, v)| pretty_pair(&k, &v))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The canonical keys whose values differ among `params`.
pub fn varying_keys<'p>(params: impl Iterator<Item = &'p CaseParams>) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in params {
        for (k, v) in canonical_pairs(p) {
            seen.entry(k).or_default().insert(v);
        }
    }
    seen.into_iter()
        .filter(|(_, vs)| vs.len() > 1)
        .map(|(k, _)| k)
        .collect()
}

const SETUP_KEYS: &[&str] = &[
    "backend",
    "topology",
    "nodes",
    "devices_per_node",
    "binding",
    "placement",
];

/// Every variant field (not set-up, not size, not workload) that has a value.
pub fn variant_label(p: &CaseParams) -> String {
    let keys: BTreeSet<String> = canonical_pairs(p)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| !SETUP_KEYS.contains(&k.as_str()) && k != "requested_bytes" && k != "workload")
        .collect();
    describe(p, &keys)
}

/// The set-up fields of `s` that vary in the report (topology, binding, ...), without the
/// layout; `fallback` when none vary.
pub fn style_label(s: StyleKey, varying: &BTreeSet<String>) -> String {
    let mut parts = Vec::new();
    if varying.contains("backend") {
        parts.push(s.0.to_string());
    }
    if varying.contains("topology") {
        parts.push(s.1.to_string());
    }
    if varying.contains("binding") {
        parts.push(format!("bind={}", s.2));
    }
    if varying.contains("placement") {
        parts.push(format!("place={}", s.3));
    }
    parts.join(" ")
}

impl<'a> Analysis<'a> {
    /// Builds every derived figure from the selected cases.
    pub fn new(sources: &'a [Source], selection: &'a Selection, options: Options) -> Self {
        let entries: Vec<Entry<'a>> = selection
            .picks
            .iter()
            .map(|p| entry(sources, *p, &options))
            .collect();
        let setup_varying = varying_keys(entries.iter().map(|e| e.params()));
        let mut by_wl: BTreeMap<Workload, Vec<&CaseParams>> = BTreeMap::new();
        for e in &entries {
            by_wl
                .entry(e.params().workload)
                .or_default()
                .push(e.params());
        }
        let wl_varying: BTreeMap<Workload, BTreeSet<String>> = by_wl
            .into_iter()
            .map(|(w, ps)| (w, varying_keys(ps.into_iter())))
            .collect();
        let palette = Palette {
            layouts: entries
                .iter()
                .map(|e| e.layout())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            styles: entries
                .iter()
                .map(|e| style_key(&e.shape()))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            shapes: entries
                .iter()
                .map(|e| (style_key(&e.shape()), e.layout()))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        };
        let mut a = Analysis {
            sources,
            selection,
            options,
            entries,
            varying: setup_varying.clone(),
            palette,
            collectives: Vec::new(),
            scaling: Vec::new(),
            coll_scaling: Vec::new(),
            ratios: Vec::new(),
            stragglers: Stragglers::default(),
            noisy: Vec::new(),
            problems: Vec::new(),
            unrepresentative: Vec::new(),
        };
        let charted = a.charted_variants();
        a.collectives = a.collective_views(&charted);
        a.scaling = a.gemm_scaling(&charted, &wl_varying);
        a.coll_scaling = a.collective_scaling(&charted, &setup_varying);
        a.ratios = a.ratio_groups(&charted, &wl_varying);
        a.stragglers = a.find_stragglers();
        let mut noisy: Vec<usize> = (0..a.entries.len())
            .filter(|&i| a.entries[i].noisy)
            .collect();
        noisy.sort_by(|&x, &y| {
            let cv = |i: usize| a.entries[i].spread.map_or(0.0, |s| s.cv);
            cv(y).total_cmp(&cv(x))
        });
        a.noisy = noisy;
        a.problems = (0..a.entries.len())
            .filter(|&i| a.entries[i].case.status != CaseStatus::Ok)
            .collect();
        a.unrepresentative = (0..a.entries.len())
            .filter(|&i| !a.entries[i].representative())
            .collect();
        a
    }

    /// Whether an entry may support a conclusion (winner, efficiency, fit, finding): it is
    /// representative, or the user included unrepresentative cases.
    pub fn usable(&self, i: usize) -> bool {
        self.options.include_unrepresentative || self.entries[i].representative()
    }

    /// Measured entries that may support a conclusion.
    fn conclusive(&self) -> impl Iterator<Item = (usize, &Entry<'a>)> {
        self.measured().filter(|(i, _)| self.usable(*i))
    }

    /// Measured entries (status ok, positive time).
    fn measured(&self) -> impl Iterator<Item = (usize, &Entry<'a>)> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.time_s().is_some())
    }

    /// The variants charted: per workload, the `chart_variants` with most cases.
    fn charted_variants(&self) -> BTreeSet<CaseParams2> {
        let mut count: HashMap<CaseParams, usize> = HashMap::new();
        for e in &self.entries {
            *count.entry(variant_key(e.params())).or_default() += 1;
        }
        let mut per_wl: BTreeMap<Workload, Vec<(usize, String, CaseParams)>> = BTreeMap::new();
        for (k, n) in count {
            per_wl
                .entry(k.workload)
                .or_default()
                .push((n, k.canonical(), k));
        }
        let mut out = BTreeSet::new();
        for (_, mut v) in per_wl {
            v.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            for (_, canon, _) in v.into_iter().take(self.options.chart_variants) {
                out.insert(CaseParams2(canon));
            }
        }
        out
    }

    fn collective_views(&self, charted: &BTreeSet<CaseParams2>) -> Vec<CollectiveView> {
        let mut by_variant: HashMap<CaseParams, (usize, BTreeMap<LaunchShape, Vec<usize>>)> =
            HashMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            if !e.params().workload.is_collective() {
                continue;
            }
            let slot = by_variant.entry(variant_key(e.params())).or_default();
            slot.0 += 1;
            if e.time_s().is_some() && e.bytes().is_some() {
                slot.1.entry(e.shape()).or_default().push(i);
            }
        }
        let mut views: Vec<CollectiveView> = by_variant
            .into_iter()
            .map(|(variant, (cases, shapes))| {
                let mut curves: Vec<Curve> = shapes
                    .into_iter()
                    .map(|(shape, mut pts)| {
                        pts.sort_by_key(|&i| self.entries[i].bytes());
                        let fit_pts: Vec<(f64, f64)> = pts
                            .iter()
                            .filter_map(|&i| {
                                let e = &self.entries[i];
                                let f = e.case.busbw_factor?;
                                Some((f * e.bytes()? as f64, e.time_s()?))
                            })
                            .filter(|(x, _)| *x > 0.0)
                            .collect();
                        let concerns: BTreeSet<String> = pts
                            .iter()
                            .flat_map(|&i| self.entries[i].concern_kinds())
                            .collect();
                        let regimes = if shape.devices() < 2 {
                            Err(FitError::NotApplicable(
                                "1 device: no data moves between devices".to_string(),
                            ))
                        } else if !concerns.is_empty() && !self.options.include_unrepresentative
                        {
                            Err(FitError::NotApplicable(format!(
                                "not fitted: not representative ({}); --include-unrepresentative fits it",
                                kinds_text(&concerns)
                            )))
                        } else {
                            model::fit_regimes(&fit_pts)
                        };
                        let factor = pts.iter().find_map(|&i| self.entries[i].case.busbw_factor);
                        Curve {
                            shape,
                            points: pts,
                            regimes,
                            factor,
                            concerns,
                        }
                    })
                    .collect();
                curves.sort_by_key(|c| {
                    (
                        self.palette.style_index(style_key(&c.shape)),
                        Layout {
                            nodes: c.shape.nodes,
                            devices_per_node: c.shape.devices_per_node,
                        },
                    )
                });
                CollectiveView {
                    workload: variant.workload,
                    label: variant_label(&variant),
                    charted: charted.contains(&CaseParams2(variant.canonical())),
                    variant,
                    cases,
                    curves,
                }
            })
            .collect();
        views.sort_by(|a, b| {
            (
                a.workload,
                std::cmp::Reverse(a.cases),
                a.variant.canonical(),
            )
                .cmp(&(
                    b.workload,
                    std::cmp::Reverse(b.cases),
                    b.variant.canonical(),
                ))
        });
        views
    }

    /// Groups measured entries by their parameters with the layout (and optionally the size)
    /// blanked, then splits each group into families.
    fn layout_groups(
        &self,
        filter: impl Fn(&Entry) -> bool,
        blank_size: bool,
    ) -> Vec<(CaseParams, Family, Vec<Layout>, Vec<usize>)> {
        let mut groups: HashMap<CaseParams, Vec<usize>> = HashMap::new();
        for (i, e) in self.conclusive() {
            if !filter(e) {
                continue;
            }
            let mut k = e.params().clone();
            k.nodes = 0;
            k.devices_per_node = 0;
            if blank_size {
                k.requested_bytes = None;
            }
            groups.entry(k).or_default().push(i);
        }
        let mut out = Vec::new();
        for (key, members) in groups {
            let layouts: BTreeSet<Layout> =
                members.iter().map(|&i| self.entries[i].layout()).collect();
            for (fam, lays) in families(&layouts) {
                let idx: Vec<usize> = members
                    .iter()
                    .copied()
                    .filter(|&i| lays.contains(&self.entries[i].layout()))
                    .collect();
                out.push((key.clone(), fam, lays, idx));
            }
        }
        out.sort_by_key(|g| (g.0.canonical(), g.1));
        out
    }

    fn gemm_scaling(
        &self,
        charted: &BTreeSet<CaseParams2>,
        wl_varying: &BTreeMap<Workload, BTreeSet<String>>,
    ) -> Vec<ScaleSeries> {
        let mut out = Vec::new();
        for (key, family, _, mut idx) in
            self.layout_groups(|e| !e.params().workload.is_collective(), false)
        {
            let label_keys: BTreeSet<String> = wl_varying
                .get(&key.workload)
                .into_iter()
                .flatten()
                .filter(|k| {
                    !matches!(
                        k.as_str(),
                        "nodes" | "devices_per_node" | "requested_bytes" | "workload"
                    )
                })
                .cloned()
                .collect();
            let kind = match key.scaling {
                Some(Scaling::Strong) => ScalingKind::Strong,
                Some(Scaling::Weak) => ScalingKind::Weak,
                None => continue,
            };
            idx.sort_by_key(|&i| self.entries[i].layout().devices());
            let base = &self.entries[idx[0]];
            let (p0, t0) = (base.layout().devices(), base.time_s().unwrap_or(0.0));
            let scaled: Vec<Scaled> = idx
                .iter()
                .filter_map(|&i| {
                    let e = &self.entries[i];
                    derive::scaling(kind, p0, t0, e.layout().devices(), e.time_s()?)
                })
                .collect();
            if scaled.len() != idx.len() {
                continue;
            }
            let mut label = describe(&key, &label_keys);
            if label.is_empty() {
                label = variant_label(&key);
            }
            out.push(ScaleSeries {
                workload: key.workload,
                charted: charted.contains(&CaseParams2(variant_key(&key).canonical())),
                label,
                family,
                kind,
                points: idx,
                scaled,
            });
        }
        out
    }

    fn collective_scaling(
        &self,
        charted: &BTreeSet<CaseParams2>,
        setup_varying: &BTreeSet<String>,
    ) -> Vec<CollScale> {
        let mut out = Vec::new();
        for (key, family, layouts, idx) in
            self.layout_groups(|e| e.params().workload.is_collective(), true)
        {
            let mut layouts = layouts;
            layouts.sort_by_key(|l| l.devices());
            let mut sizes: BTreeMap<u64, Vec<Option<usize>>> = BTreeMap::new();
            let mut pts = Vec::new();
            for &i in &idx {
                let e = &self.entries[i];
                let Some(req) = e.params().requested_bytes else {
                    continue;
                };
                let col = layouts
                    .iter()
                    .position(|l| *l == e.layout())
                    .expect("layout of the family");
                sizes
                    .entry(req)
                    .or_insert_with(|| vec![None; layouts.len()])[col] = Some(i);
                if let (Some(b), Some(t)) = (e.bytes(), e.time_s()) {
                    pts.push(ScalePoint {
                        devices: e.layout().devices(),
                        bytes: b as f64,
                        time_s: t,
                    });
                }
            }
            let style = style_label(style_key(&key.launch_shape()), setup_varying);
            let label = if style.is_empty() {
                variant_label(&key)
            } else {
                format!("{}, {style}", variant_label(&key))
            };
            out.push(CollScale {
                workload: key.workload,
                charted: charted.contains(&CaseParams2(variant_key(&key).canonical())),
                style: style_key(&key.launch_shape()),
                label,
                family,
                layouts,
                sizes: sizes.into_iter().collect(),
                model: model::fit_scales(key.workload, &pts),
            });
        }
        out
    }

    fn ratio_groups(
        &self,
        charted: &BTreeSet<CaseParams2>,
        wl_varying: &BTreeMap<Workload, BTreeSet<String>>,
    ) -> Vec<RatioGroup> {
        let mut out = Vec::new();
        // Pure vs hybrid: equal except topology.
        let mut by_topo: HashMap<CaseParams, BTreeMap<Topology, usize>> = HashMap::new();
        // Binding: equal except binding.
        let mut by_bind: HashMap<CaseParams, BTreeMap<Binding, usize>> = HashMap::new();
        for (i, e) in self.measured() {
            let mut k = e.params().clone();
            k.topology = Topology::Pure;
            by_topo.entry(k).or_default().insert(e.params().topology, i);
            let mut k = e.params().clone();
            k.binding = Binding::None;
            by_bind.entry(k).or_default().insert(e.params().binding, i);
        }
        // Groups: same key without size → rows per size.
        let mut groups: BTreeMap<(String, String), (RatioGroupSeed, Vec<RatioRow>)> =
            BTreeMap::new();
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
        fn samples<'e>(e: &Entry<'e>) -> Option<&'e [f64]> {
            e.case.timing.as_ref().map(|t| t.samples_s.as_slice())
        }
        for (_, (seed, mut rows)) in groups {
            rows.sort_by_key(|r| r.bytes);
            let charted = charted.contains(&CaseParams2(variant_key(&seed.key).canonical()));
            if charted {
                // Intervals are drawn, so computed, for charted variants only.
                for r in &mut rows {
                    let (a, b) = (&self.entries[r.num], &self.entries[r.den]);
                    r.interval = samples(a)
                        .zip(samples(b))
                        .and_then(|(x, y)| derive::ratio_interval(x, y));
                }
            }
            let bands =
                derive::band_summaries(&rows.iter().map(|r| (r.band, r.ratio)).collect::<Vec<_>>());
            let varying = wl_varying
                .get(&seed.key.workload)
                .cloned()
                .unwrap_or_default();
            let mut keys: BTreeSet<String> = varying
                .iter()
                .filter(|k| {
                    !matches!(
                        k.as_str(),
                        "requested_bytes"
                            | "workload"
                            | "nodes"
                            | "devices_per_node"
                            | "topology"
                            | "binding"
                    )
                })
                .cloned()
                .collect();
            if seed.kind == RatioKind::Topology && varying.contains("binding") {
                keys.insert("binding".to_string());
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
            out.push(RatioGroup {
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
            });
        }
        out
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
        }
    }

    fn find_stragglers(&self) -> Stragglers {
        #[derive(Default)]
        struct Acc {
            ln_sum: f64,
            n: usize,
            slowest_in: usize,
        }
        /// A rank's record while the cases are read.
        struct RankAcc {
            acc: Acc,
            host: String,
            node_name: String,
            setup: String,
        }
        let mut nodes: BTreeMap<(String, String), Acc> = BTreeMap::new();
        let mut ranks: BTreeMap<(usize, String, u32), RankAcc> = BTreeMap::new();
        let mut imbalanced: Vec<usize> = Vec::new();
        let mut cases = 0;
        for (i, e) in self.conclusive() {
            let Some(t) = e.case.timing.as_ref() else {
                continue;
            };
            let Some(slow) = derive::slowness(&t.per_rank_mean_s) else {
                continue;
            };
            cases += 1;
            if e.imbalance.is_some() {
                imbalanced.push(i);
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
            let mut per_node: BTreeMap<(String, String), (f64, bool)> = BTreeMap::new();
            for (r, s) in slow.iter().enumerate() {
                let at = where_is(r);
                let racc = ranks
                    .entry((e.source, e.case.launch_id.clone(), r as u32))
                    .or_insert_with(|| RankAcc {
                        acc: Acc::default(),
                        host: at.0.clone(),
                        node_name: at.1.clone(),
                        setup: e.shape().label(),
                    });
                racc.acc.ln_sum += s.ln();
                racc.acc.n += 1;
                racc.acc.slowest_in += usize::from(slowest == Some(r));
                let slot = per_node.entry(at).or_insert((0.0, false));
                slot.0 = slot.0.max(*s);
                slot.1 |= slowest == Some(r);
            }
            for (at, (s, is_slowest)) in per_node {
                let acc = nodes.entry(at).or_default();
                acc.ln_sum += s.ln();
                acc.n += 1;
                acc.slowest_in += usize::from(is_slowest);
            }
        }
        let mut node_scores: Vec<NodeScore> = nodes
            .into_iter()
            .map(|((host, node_name), a)| NodeScore {
                host,
                node_name,
                cases: a.n,
                slowest_in: a.slowest_in,
                score: (a.ln_sum / a.n.max(1) as f64).exp(),
            })
            .collect();
        node_scores.sort_by(|a, b| b.score.total_cmp(&a.score));
        let mut rank_scores: Vec<RankScore> = ranks
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
                score: (r.acc.ln_sum / r.acc.n.max(1) as f64).exp(),
            })
            .collect();
        rank_scores.sort_by(|a, b| b.score.total_cmp(&a.score));
        imbalanced.sort_by(|&x, &y| {
            let r = |i: usize| self.entries[i].imbalance.map_or(1.0, |m| m.ratio);
            r(y).total_cmp(&r(x))
        });
        Stragglers {
            cases,
            nodes: node_scores,
            ranks: rank_scores,
            most_imbalanced: imbalanced,
        }
    }
}

/// A variant identified by its canonical text (cheap to order and compare).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct CaseParams2(String);

struct RatioGroupSeed {
    kind: RatioKind,
    key: CaseParams,
    num_label: String,
    den_label: String,
    style: StyleKey,
}

fn entry<'a>(sources: &'a [Source], pick: Pick, options: &Options) -> Entry<'a> {
    let source = &sources[pick.source];
    let case = &source.file.cases[pick.case];
    let launch = source.launch(case);
    let timing = case.timing.as_ref();
    let spread = timing.and_then(|t| derive::spread(&t.samples_s));
    let imbalance = timing.and_then(|t| derive::imbalance(&t.per_rank_mean_s));
    let slowest = imbalance.and_then(|im| {
        launch
            .and_then(|l| l.provenance.as_ref())
            .and_then(|p| p.ranks.iter().find(|r| r.rank as usize == im.slowest_rank))
    });
    Entry {
        concerns: representative::assess(case, launch),
        case,
        launch,
        source: pick.source,
        noisy: spread.is_some_and(|s| derive::is_noisy(s.cv, options.noisy_cv)),
        spread,
        imbalance,
        slowest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(nodes: u32, devices_per_node: u32) -> Layout {
        Layout {
            nodes,
            devices_per_node,
        }
    }

    #[test]
    fn families_keep_one_layout_per_device_count() {
        let one: BTreeSet<Layout> = [l(1, 1), l(1, 2), l(2, 2)].into_iter().collect();
        assert_eq!(
            families(&one),
            vec![(Family::AllLayouts, vec![l(1, 1), l(1, 2), l(2, 2)])]
        );
        // 1×4 and 2×2 share 4 devices: split into within-node and across-node series.
        let clash: BTreeSet<Layout> = [l(1, 1), l(1, 2), l(1, 4), l(2, 2)].into_iter().collect();
        assert_eq!(
            families(&clash),
            vec![
                (Family::SingleNode, vec![l(1, 1), l(1, 2), l(1, 4)]),
                (Family::PerNode(2), vec![l(1, 2), l(2, 2)]),
            ]
        );
        assert!(families(&[l(1, 2)].into_iter().collect()).is_empty());
    }

    #[test]
    fn pretty_pairs() {
        assert_eq!(pretty_pair("in_place", "false").unwrap(), "out-of-place");
        assert_eq!(pretty_pair("requested_bytes", "1048576").unwrap(), "1MiB");
        assert_eq!(pretty_pair("shape", "256x256x256").unwrap(), "n=256");
        assert_eq!(pretty_pair("shape", "4x5x6").unwrap(), "shape=4x5x6");
        assert_eq!(pretty_pair("op", "-"), None);
        assert_eq!(pretty_pair("binding", "core").unwrap(), "bind=core");
    }
}
