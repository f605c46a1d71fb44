//! Series across device counts: GEMM speedup and efficiency, and collectives' busbw per size
//! with their ring/tree cost models.

use super::group::{variant_key, CaseParams2, Family};
use super::label::{describe, style_label, variant_label};
use super::palette::{style_key, Layout, StyleKey};
use super::Analysis;
use crate::params::{ParamKey, Scaling, Workload};
use crate::report::derive::{self, RatioEstimate, Scaled, ScalingKind};
use crate::report::model::{self, FitError, ScaleModel, ScalePoint};
use std::collections::{BTreeMap, BTreeSet};

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
    /// Each point's efficiency with its interval from the baseline's and the point's spread
    /// (every run when each has several): [`derive::ratio_estimate`] scaled by p0 / p for
    /// strong scaling. With several runs `scaled` holds the same all-run figures.
    pub efficiency: Vec<Option<RatioEstimate>>,
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

impl<'a> Analysis<'a> {
    pub(super) fn gemm_scaling(
        &self,
        charted: &BTreeSet<CaseParams2>,
        wl_varying: &BTreeMap<Workload, BTreeSet<ParamKey>>,
    ) -> Vec<ScaleSeries> {
        let mut out = Vec::new();
        let runs = self.run_times();
        for (key, family, _, mut idx) in
            self.layout_groups(|e| !e.params().workload.is_collective(), false)
        {
            let label_keys: BTreeSet<ParamKey> = wl_varying
                .get(&key.workload)
                .into_iter()
                .flatten()
                .filter(|k| {
                    !matches!(
                        k,
                        ParamKey::Nodes
                            | ParamKey::DevicesPerNode
                            | ParamKey::RequestedBytes
                            | ParamKey::Workload
                    )
                })
                .copied()
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
            let (scaled, efficiency) = self.efficiency_estimates(kind, &idx, scaled, &runs);
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
                efficiency,
            });
        }
        out
    }

    /// Every point's efficiency against the series' baseline (`idx[0]`) with its interval;
    /// with several runs of both, the all-run figures replace the newest run's in `scaled`.
    fn efficiency_estimates(
        &self,
        kind: ScalingKind,
        idx: &[usize],
        mut scaled: Vec<Scaled>,
        runs: &super::ratio::RunTimes<'_>,
    ) -> (Vec<Scaled>, Vec<Option<RatioEstimate>>) {
        let base = &self.entries[idx[0]];
        let p0 = f64::from(base.layout().devices());
        let times =
            |e: &super::Entry<'_>| runs.get(e.case.id.as_str()).cloned().unwrap_or_default();
        let samples = |e: &super::Entry<'a>| e.case.timing.as_ref().map(|t| t.samples_s.as_slice());
        let est = idx
            .iter()
            .zip(scaled.iter_mut())
            .map(|(&i, sc)| {
                let e = &self.entries[i];
                let headline = (
                    base.time_s().unwrap_or(f64::NAN),
                    e.time_s().unwrap_or(f64::NAN),
                );
                let r = derive::ratio_estimate(
                    &times(base),
                    &times(e),
                    samples(base),
                    samples(e),
                    headline,
                )?;
                // E = T0/T (weak) or (p0/p)·T0/T (strong)
                let f = match kind {
                    ScalingKind::Weak => 1.0,
                    ScalingKind::Strong => p0 / f64::from(e.layout().devices()),
                };
                let eff = RatioEstimate {
                    ratio: r.ratio * f,
                    low: r.low * f,
                    high: r.high * f,
                    runs: r.runs,
                };
                if r.runs >= 2 {
                    sc.efficiency = eff.ratio;
                    sc.speedup = match kind {
                        ScalingKind::Strong => r.ratio,
                        ScalingKind::Weak => sc.ideal_speedup * eff.ratio,
                    };
                }
                Some(eff)
            })
            .collect();
        (scaled, est)
    }

    pub(super) fn collective_scaling(
        &self,
        charted: &BTreeSet<CaseParams2>,
        setup_varying: &BTreeSet<ParamKey>,
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
                if let (Some(b), Some(t)) = (e.bytes(), e.fit_time_s()) {
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
}
