//! Chart kind: GEMM scaling: speedup (left) and efficiency (right) against devices, one series
//! per set-up and shape, with the ideal lines. Strong and weak scaling get separate charts.

use super::{
    ceiling_refs, chunk, color, marker, Axis, Figure, FigureKind, LegendEntry, Mark, Panel, Pt,
    RefLine, Rgb, Scale, Series, Unit,
};
use crate::params::Workload;
use crate::report::analyze::{style_key, Analysis, ScaleSeries};
use crate::report::ceilings::SeriesBound;
use crate::report::derive::ScalingKind;

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let mut groups: std::collections::BTreeMap<(Workload, bool), Vec<&ScaleSeries>> =
        Default::default();
    for s in a.scaling.iter().filter(|s| s.charted) {
        groups
            .entry((s.workload, s.kind == ScalingKind::Strong))
            .or_default()
            .push(s);
    }
    let mut out = Vec::new();
    for ((wl, strong), list) in groups {
        let parts = chunk(list, |s| s.family);
        let many = parts.len() > 1;
        for (k, part) in parts.into_iter().enumerate() {
            let part_s = if many {
                format!("_{}", k + 1)
            } else {
                String::new()
            };
            out.extend(part_figure(a, wl, strong, &part_s, &part));
        }
    }
    out
}

/// The speedup and efficiency series of one part, its legend, and what the ideal lines span.
struct Parts {
    sp: Vec<Series>,
    ef: Vec<Series>,
    /// Aggregate GFLOP/s, and its ideal (the baseline's rate × p / p0) per series.
    gf: Vec<Series>,
    gf_ideal: Vec<RefLine>,
    /// Each series' per-device GFLOP/s ceiling (for the throughput panel's ceiling lines).
    gf_bounds: Vec<Option<Result<SeriesBound, String>>>,
    legend: Vec<LegendEntry>,
    /// First device count of a series → the largest device count of the series from it.
    ideal_from: std::collections::BTreeMap<u32, u32>,
    pmin: u32,
    pmax: u32,
}

/// One chart of a workload's strong or weak scaling; `None` when the part has no series.
fn part_figure(
    a: &Analysis<'_>,
    wl: Workload,
    strong: bool,
    part_s: &str,
    part: &[&ScaleSeries],
) -> Option<Figure> {
    let kind = if strong { "strong" } else { "weak" };
    let mut p = Parts {
        sp: Vec::new(),
        ef: Vec::new(),
        gf: Vec::new(),
        gf_ideal: Vec::new(),
        gf_bounds: Vec::new(),
        legend: Vec::new(),
        ideal_from: Default::default(),
        pmin: u32::MAX,
        pmax: 0,
    };
    for (j, s) in part.iter().enumerate() {
        add_series(a, j, s, &mut p);
    }
    if p.sp.is_empty() {
        return None;
    }
    let refs_sp: Vec<RefLine> = p
        .ideal_from
        .iter()
        .map(|(&p0, &p1)| RefLine {
            color: None,
            points: vec![
                (f64::from(p0), 1.0),
                (f64::from(p1), f64::from(p1) / f64::from(p0)),
            ],
            label: if p.ideal_from.len() > 1 {
                format!("ideal from {p0}")
            } else {
                "ideal".to_string()
            },
        })
        .collect();
    let refs_ef = vec![RefLine {
        color: None,
        points: vec![(f64::from(p.pmin), 1.0), (f64::from(p.pmax), 1.0)],
        label: "ideal".to_string(),
    }];
    let (sp_title, ef_title, notes) = axis_titles_and_notes(strong);
    let mut panels = vec![
        Panel {
            title: "speedup".to_string(),
            x: Axis::new("devices p (log2 scale)", Scale::Log2Count),
            y: Axis::new(sp_title, Scale::Log2Count),
            series: p.sp,
            refs: refs_sp,
            dodge: true,
        },
        Panel {
            title: "efficiency".to_string(),
            x: Axis::new("devices p (log2 scale)", Scale::Log2Count),
            y: Axis::new(ef_title, Scale::Linear(Unit::Plain)),
            series: p.ef,
            refs: refs_ef,
            dodge: true,
        },
    ];
    // The rate itself: what a GEMM delivers, in total, at each scale, under its ceiling.
    let mut ceiling_note = None;
    if p.gf.iter().any(|s| !s.points.is_empty()) {
        let colors: Vec<Rgb> = p.gf.iter().map(|s| s.mark.color).collect();
        let (refs, note) = ceiling_refs(
            &p.gf_bounds,
            &colors,
            (f64::from(p.pmin), f64::from(p.pmax)),
            true,
        );
        ceiling_note = note;
        p.gf_ideal.extend(refs);
        panels.push(Panel {
            title: "throughput".to_string(),
            x: Axis::new("devices p (log2 scale)", Scale::Log2Count),
            y: Axis::new(
                "GFLOP/s, all devices (log scale)",
                Scale::Log10(Unit::Plain),
            ),
            series: p.gf,
            refs: p.gf_ideal,
            dodge: true,
        });
    }
    // Where every series carries the same NOT REPRESENTATIVE reasons (a report run with
    // --include-unrepresentative on a busy host), the title says them once and the legend
    // keeps the room for what tells the series apart (it hid 3 of 8 series otherwise).
    let mut labels: Vec<String> = p.legend.iter().map(|e| e.label.clone()).collect();
    let shared = hoist_shared_suffix(&mut labels, " — NOT REPRESENTATIVE: ");
    for (e, l) in p.legend.iter_mut().zip(labels) {
        e.label = l;
    }
    let title = format!("{wl}: {kind} scaling, speedup and efficiency vs devices");
    Some(Figure {
        kind: FigureKind::Scaling,
        workload: wl,
        stem: format!("{}_{wl}_{kind}{part_s}", FigureKind::Scaling),
        title: match shared {
            Some(suffix) => format!("{title} — all series{suffix}"),
            None => title,
        },
        caption: format!(
            "{kind} scaling of {wl}: speedup (left, log2 axes; grey dashed: ideal), efficiency (middle; ideal 1) and the aggregate GFLOP/s of the results (right, where recorded; dashed: the baseline's rate × p/p0) against the total devices p. Each series names its baseline point.{}",
            ceiling_note.map_or(String::new(), |n| format!(" {n}"))
        ),
        panels,
        legend_title: "series (baseline)".to_string(),
        legend: p.legend,
        notes,
    })
}

/// Adds series `s` (the `j`-th of its chart): its speedup and efficiency points with the
/// intervals of their samples, its legend entry, and its span to the ideal lines.
fn add_series(a: &Analysis<'_>, j: usize, s: &ScaleSeries, p: &mut Parts) {
    let base = &a.entries[s.points[0]];
    let p0 = base.layout().devices();
    let t0 = base.time_s().unwrap_or(f64::NAN);
    let kinds: std::collections::BTreeSet<String> = s
        .points
        .iter()
        .flat_map(|&i| a.entries[i].concern_kinds())
        .collect();
    // Included unrepresentative points: grey and hollow as on every other chart, and the
    // legend says why.
    let mark = Mark {
        hollow: !kinds.is_empty(),
        ..Mark::solid(
            if kinds.is_empty() {
                color(j)
            } else {
                super::grey(j)
            },
            marker(a.palette.style_index(style_key(&base.shape()))),
        )
    };
    let mut spts = Vec::new();
    let mut epts = Vec::new();
    let mut gpts = Vec::new();
    for (&i, sc) in s.points.iter().zip(&s.scaled) {
        let e = &a.entries[i];
        let devices = e.layout().devices();
        p.pmin = p.pmin.min(devices);
        p.pmax = p.pmax.max(devices);
        let x = f64::from(devices);
        // interval of this point's samples; the baseline taken as exact
        let (lo, hi) = e.spread.map_or((None, None), |sp| {
            let t = e.time_s().unwrap_or(f64::NAN);
            (Some(t / sp.p95_s), Some(t / sp.p5_s))
        });
        spts.push(Pt {
            x,
            y: sc.speedup,
            lo: lo.map(|r| sc.speedup * r),
            hi: hi.map(|r| sc.speedup * r),
        });
        epts.push(Pt {
            x,
            y: sc.efficiency,
            lo: lo.map(|r| sc.efficiency * r),
            hi: hi.map(|r| sc.efficiency * r),
        });
        if let Some(g) = e.case.gflops_total.filter(|g| *g > 0.0) {
            gpts.push(Pt {
                x,
                y: g,
                lo: lo.map(|r| g * r),
                hi: hi.map(|r| g * r),
            });
        }
    }
    let last_p = s
        .points
        .last()
        .map_or(p0, |&i| a.entries[i].layout().devices());
    if let Some(g0) = base.case.gflops_total.filter(|g| *g > 0.0) {
        p.gf_ideal.push(RefLine {
            color: None,
            points: vec![
                (f64::from(p0), g0),
                (f64::from(last_p), g0 * f64::from(last_p) / f64::from(p0)),
            ],
            label: "ideal".to_string(),
        });
    }
    let last = s.points.last().map(|&i| a.entries[i].layout().devices());
    let e = p.ideal_from.entry(p0).or_insert(p0);
    *e = (*e).max(last.unwrap_or(p0));
    p.legend.push(LegendEntry {
        mark,
        label: format!(
            "{} ({}; baseline {}: {}){}",
            s.label,
            s.family.label(),
            base.layout().label(),
            crate::units::format_seconds(t0),
            crate::report::analyze::not_representative_suffix(&kinds)
        ),
    });
    p.sp.push(Series { mark, points: spts });
    p.ef.push(Series { mark, points: epts });
    p.gf_bounds.push(crate::report::ceilings::series_bound(
        s.points.iter().map(|&i| &a.entries[i]),
        crate::report::ceilings::GFLOPS,
    ));
    p.gf.push(Series { mark, points: gpts });
}

/// When two or more labels all end with the same text starting at `marker`, removes it from
/// each and returns it; otherwise leaves them as they are.
fn hoist_shared_suffix(labels: &mut [String], marker: &str) -> Option<String> {
    if labels.len() < 2 {
        return None;
    }
    let suffix = |l: &String| l.find(marker).map(|i| l[i..].to_string());
    let first = suffix(&labels[0])?;
    if !labels.iter().all(|l| suffix(l).as_ref() == Some(&first)) {
        return None;
    }
    for l in labels.iter_mut() {
        let cut = l.len() - first.len();
        l.truncate(cut);
    }
    Some(first)
}

/// The speedup and efficiency axis titles and the notes of a strong or weak scaling chart.
fn axis_titles_and_notes(strong: bool) -> (&'static str, &'static str, Vec<String>) {
    if strong {
        (
            "speedup T0 / T(p) (log2 scale)",
            "efficiency p0·T0 / (p·T(p))",
            vec![
                "strong scaling: fixed total problem".to_string(),
                "baseline (p0, T0): smallest device count of the series".to_string(),
                "bars (right of each point): the point's p5–p95 samples (baseline exact)"
                    .to_string(),
            ],
        )
    } else {
        (
            "scaled speedup (p/p0)·E (log2 scale)",
            "efficiency T0 / T(p)",
            vec![
                "weak scaling: fixed problem per device".to_string(),
                "baseline (p0, T0): smallest device count of the series".to_string(),
                "bars (right of each point): the point's p5–p95 samples (baseline exact)"
                    .to_string(),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_every_series_shares_is_said_once() {
        let m = " — NOT REPRESENTATIVE: ";
        let mut same = vec![
            format!("pure (1×1: 2 ms){m}host busy"),
            format!("hybrid (1×1: 3 ms){m}host busy"),
        ];
        assert_eq!(
            hoist_shared_suffix(&mut same, m).as_deref(),
            Some(" — NOT REPRESENTATIVE: host busy")
        );
        assert_eq!(same, ["pure (1×1: 2 ms)", "hybrid (1×1: 3 ms)"]);
        // Different reasons, one series without, or a single series: left whole.
        for labels in [
            vec![format!("a{m}host busy"), format!("b{m}emulated nodes")],
            vec![format!("a{m}host busy"), "b".to_string()],
            vec![format!("a{m}host busy")],
        ] {
            let mut l = labels.clone();
            assert_eq!(hoist_shared_suffix(&mut l, m), None);
            assert_eq!(l, labels);
        }
    }
}
