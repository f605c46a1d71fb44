//! A collective's size curves: per variant, one curve per set-up, with its α–β regimes.

use super::group::{variant_key, CaseParams2};
use super::label::{kinds_text, variant_label};
use super::palette::{style_key, Layout};
use super::Analysis;
use crate::params::{CaseParams, LaunchShape, Workload};
use crate::report::model::{self, FitError, Regimes};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

impl<'a> Analysis<'a> {
    pub(super) fn collective_views(&self, charted: &BTreeSet<CaseParams2>) -> Vec<CollectiveView> {
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
                    .map(|(shape, pts)| self.curve(shape, pts))
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

    /// The size curve of one set-up: its points by size and the α–β regimes fitted to their
    /// median times.
    fn curve(&self, shape: LaunchShape, mut pts: Vec<usize>) -> Curve {
        pts.sort_by_key(|&i| self.entries[i].bytes());
        let fit_pts: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|&i| {
                let e = &self.entries[i];
                let f = e.case.busbw_factor?;
                Some((f * e.bytes()? as f64, e.fit_time_s()?))
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
        } else if !concerns.is_empty() && !self.options.include_unrepresentative {
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
    }
}
