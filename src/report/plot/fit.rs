//! Chart kind: the α–β (Hockney) model against the measurement: measured time per size as
//! markers and, per set-up, the fitted α + β·F·S of each regime as a line over that regime's
//! sizes; switch sizes are marked with vertical lines.

use super::{
    curve_label, curve_mark, curve_sets, Axis, Figure, LegendEntry, Line, Marker, Panel, Pt,
    RefLine, Scale, Series, Unit, SETUP_LEGEND,
};
use crate::report::analyze::Analysis;
use crate::report::table::sig;
use crate::units::format_bytes;

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for set in curve_sets(a) {
        let mut series = Vec::new();
        let mut legend = Vec::new();
        let mut refs = Vec::new();
        let (mut ylo, mut yhi) = (f64::INFINITY, 0.0_f64);
        for c in &set.curves {
            let Ok(r) = &c.regimes else {
                continue;
            };
            let Some(f) = c.factor.filter(|f| *f > 0.0) else {
                continue;
            };
            let mut measured = Vec::new();
            for &i in &c.points {
                let e = &a.entries[i];
                if let (Some(b), Some(t)) = (e.bytes(), e.time_s()) {
                    measured.push(Pt::new(b as f64, t));
                    ylo = ylo.min(t);
                    yhi = yhi.max(t);
                }
            }
            if measured.is_empty() {
                continue;
            }
            let mark = curve_mark(a, c);
            series.push(Series {
                mark: super::Mark {
                    line: Line::None,
                    ..mark
                },
                points: measured,
            });
            // Each regime's line spans its sizes, out to the hand-over points.
            let n = r.segments.len();
            for (k, seg) in r.segments.iter().enumerate() {
                let lo = if k == 0 {
                    seg.from_x
                } else {
                    r.boundary_x(k - 1)
                } / f;
                let hi = if k + 1 == n {
                    seg.to_x
                } else {
                    r.boundary_x(k)
                } / f;
                let steps = 24;
                let line: Vec<Pt> = (0..=steps)
                    .map(|j| {
                        let s = lo * (hi / lo).powf(f64::from(j) / f64::from(steps));
                        Pt::new(s, seg.hockney.predict_s(f * s))
                    })
                    .collect();
                series.push(Series {
                    mark: super::Mark {
                        marker: Marker::None,
                        ..mark
                    },
                    points: line,
                });
            }
            let regimes = r
                .segments
                .iter()
                .map(|s| {
                    let bw = s
                        .hockney
                        .bandwidth_gbps()
                        .map_or_else(|| "∞".to_string(), |b| sig(b, 3));
                    format!("α {} µs, 1/β {bw} GB/s", sig(s.hockney.alpha_s * 1e6, 3))
                })
                .collect::<Vec<_>>()
                .join(" | ");
            legend.push(LegendEntry {
                mark,
                label: format!("{}: {regimes}, R² {:.3}", curve_label(a, c), r.r2),
            });
            for k in 0..n.saturating_sub(1) {
                let s = r.boundary_x(k) / f;
                refs.push((
                    s,
                    format!(
                        "switch {}–{}",
                        format_bytes((r.segments[k].to_x / f).round() as u64),
                        format_bytes((r.segments[k + 1].from_x / f).round() as u64)
                    ),
                ));
            }
        }
        if series.is_empty() {
            continue;
        }
        let refs: Vec<RefLine> = refs
            .into_iter()
            .map(|(s, label)| RefLine {
                points: vec![(s, ylo), (s, yhi)],
                label,
            })
            .collect();
        let w = set.view.workload;
        out.push(Figure {
            kind: "fit",
            workload: w,
            stem: format!("fit_{w}_{}", set.suffix),
            title: format!("{w}: α–β model per regime vs measurement — {}", set.view.label),
            caption: format!(
                "Hockney model time = α + β·F·S fitted per set-up and regime to {w} ({}) by robust (Huber-reweighted) least squares on relative residuals; regimes (protocol or algorithm switches) are found by segmented least squares with a penalty per extra segment (markers: measured time_s; lines: each regime's fit over its sizes; dashed verticals: where a set-up switches regime). 1/β is the asymptotic bus bandwidth of a regime. Grey: not representative.",
                set.view.label
            ),
            panels: vec![Panel {
                title: String::new(),
                x: Axis::new("size S (log2 scale)", Scale::Log2Bytes),
                y: Axis::new("time per operation (log scale)", Scale::Log10(Unit::Seconds)),
                series,
                refs,
                dodge: false,
            }],
            legend_title: SETUP_LEGEND.to_string(),
            legend,
            notes: vec![
                "markers: measured time_s".to_string(),
                "lines: α + β·F·S per regime (F = busbw factor)".to_string(),
                "dashed verticals: regime switches".to_string(),
            ],
        });
    }
    out
}
