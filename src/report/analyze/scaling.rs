//! Series across device counts: GEMM speedup and efficiency, and collectives' busbw per size
//! with their ring/tree cost models.

use super::group::{variant_key, CaseParams2, Family};
use super::label::{describe, style_label, variant_label};
use super::palette::{style_key, Layout, StyleKey};
use super::Analysis;
use crate::params::{ParamKey, Scaling, Workload};
use crate::report::derive::{self, Scaled, ScalingKind};
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
