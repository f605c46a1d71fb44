//! From the selected cases to every derived figure of a report: per-case spread and imbalance,
//! size curves per collective and set-up (with Hockney fits), scaling series across device
//! counts (speedup/efficiency for GEMMs, busbw retention and ring/tree models for collectives),
//! pure-vs-hybrid and binding ratios, stragglers, noisy and failed cases.
//!
//! Grouping rule: cases belong together when their parameters are equal except on the axis being
//! studied (size; nodes and devices per node; topology; binding). The formulas themselves live in
//! [`super::derive`] and [`super::model`].
//!
//! One file per job: [`entry`] (one case alone), [`palette`] (layouts and chart styles),
//! [`label`] (parameters in words), [`group`] (variants and scaling families), [`curve`] (size
//! curves), [`scaling`] (series across device counts), [`ratio`] (pure vs hybrid, binding),
//! [`straggler`] (slow nodes and ranks). This file builds the [`Analysis`] from them.

mod curve;
pub(crate) mod ddp;
mod entry;
mod group;
mod label;
mod palette;
mod ratio;
mod scaling;
mod straggler;

pub use curve::{CollectiveView, Curve};
pub use entry::Entry;
pub use group::{families, Family};
pub use label::{
    describe, kinds_text, not_representative_suffix, pretty_pair, style_label, variant_label,
    varying_keys,
};
pub use palette::{style_key, Layout, Palette, StyleKey};
pub use ratio::{RatioGroup, RatioKind, RatioRow};
pub use scaling::{CollScale, ScaleSeries};
pub use straggler::{NodeScore, RankScore, Stragglers};

use super::load::{Selection, Source};
use crate::params::{CaseParams, ParamKey, Workload};
use crate::results::schema::CaseStatus;
use std::collections::{BTreeMap, BTreeSet};

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

/// Everything a report shows.
#[derive(Debug)]
pub struct Analysis<'a> {
    pub sources: &'a [Source],
    pub selection: &'a Selection,
    pub options: Options,
    pub entries: Vec<Entry<'a>>,
    /// Parameter keys whose values differ among the selected cases.
    pub varying: BTreeSet<ParamKey>,
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

impl<'a> Analysis<'a> {
    /// Builds every derived figure from the selected cases.
    pub fn new(sources: &'a [Source], selection: &'a Selection, options: Options) -> Self {
        let entries: Vec<Entry<'a>> = selection
            .picks
            .iter()
            .map(|p| entry::entry(sources, *p, &options))
            .collect();
        let setup_varying = varying_keys(entries.iter().map(|e| e.params()));
        let mut by_wl: BTreeMap<Workload, Vec<&CaseParams>> = BTreeMap::new();
        for e in &entries {
            by_wl
                .entry(e.params().workload)
                .or_default()
                .push(e.params());
        }
        let wl_varying: BTreeMap<Workload, BTreeSet<ParamKey>> = by_wl
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
}
