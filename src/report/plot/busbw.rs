//! Chart kind: bus bandwidth against size (log2 size axis in binary units, log bandwidth axis),
//! one curve per set-up, bars from the samples.

use super::{
    ceiling_refs, curve_label, curve_mark, curve_sets, in_place_series, size_point, Axis, Figure,
    FigureKind, LegendEntry, Panel, Quantity, Scale, Series, Unit, SETUP_LEGEND,
};
use crate::report::analyze::Analysis;

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for set in curve_sets(a) {
        let mut series = Vec::new();
        let mut legend = Vec::new();
        let mut no_busbw = false;
        // each drawn curve's ceiling, for the ceiling lines
        let mut bounds = Vec::new();
        for c in &set.curves {
            if c.shape.devices() < 2 {
                // No data moves between devices: busbw is 0 (or, for rooted collectives, a
                // memory copy rate that would dwarf every real curve).
                no_busbw = true;
                continue;
            }
            let pts: Vec<_> = c
                .points
                .iter()
                .filter_map(|&i| size_point(&a.entries[i], Quantity::Busbw))
                .filter(|p| p.y > 0.0)
                .collect();
            if pts.is_empty() {
                no_busbw = true;
                continue;
            }
            let mark = curve_mark(a, c);
            bounds.push(crate::report::ceilings::series_bound(
                c.points.iter().map(|&i| &a.entries[i]),
                crate::report::ceilings::BUSBW,
            ));
            legend.push(LegendEntry {
                mark,
                label: curve_label(a, c),
            });
            series.push(Series { mark, points: pts });
        }
        if series.is_empty() {
            continue;
        }
        let colors: Vec<_> = series.iter().map(|s| s.mark.color).collect();
        let xs = series.iter().flat_map(|s| &s.points).map(|p| p.x);
        let span = (
            xs.clone().fold(f64::INFINITY, f64::min),
            xs.fold(f64::NEG_INFINITY, f64::max),
        );
        let (refs, ceiling_note) = ceiling_refs(&bounds, &colors, span, false);
        let (twins, twin_entry) = in_place_series(a, &set, Quantity::Busbw);
        series.extend(twins);
        legend.extend(twin_entry);
        let mut notes = vec![
            "points: busbw of the results (from time_s)".to_string(),
            "bars (right of each point): from the p5–p95 samples".to_string(),
            "busbw = algbw × F, nccl-tests' normalisation to a flat ring; not a link speed"
                .to_string(),
        ];
        if !refs.is_empty() {
            notes.push("dashed line: a ceiling, labelled at its right end".to_string());
        }
        if no_busbw {
            notes.push(
                "1-device set-ups move no data between devices and are not drawn".to_string(),
            );
        }
        let w = set.view.workload;
        out.push(Figure {
            kind: FigureKind::Busbw,
            workload: w,
            stem: format!("{}_{w}_{}", FigureKind::Busbw, set.suffix),
            title: format!("{w}: bus bandwidth vs size — {}", set.view.label),
            caption: format!(
                "Bus bandwidth of {w} ({}) against the size S, one curve per set-up (each set-up keeps its colour in every chart; the marker shows topology and binding); 1-device set-ups move no data between devices and are left out. Bars span the bandwidth at the p5 and p95 sample times.{}",
                set.view.label,
                ceiling_note.map_or(String::new(), |n| format!(" {n}"))
            ),
            panels: vec![Panel {
                title: String::new(),
                x: Axis::new("size S (log2 scale)", Scale::Log2Bytes),
                y: Axis::new("busbw (GB/s, log scale)", Scale::Log10(Unit::Plain)),
                series,
                refs,
                dodge: false,
            }],
            legend_title: SETUP_LEGEND.to_string(),
            legend,
            notes,
        });
    }
    out
}
