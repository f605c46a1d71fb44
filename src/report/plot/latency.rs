//! Chart kind: time per operation against size, log-log, one curve per set-up, bars p5–p95 of
//! the samples.

use super::{
    curve_label, curve_mark, curve_sets, in_place_series, size_point, Axis, Figure, FigureKind,
    LegendEntry, Panel, Quantity, Scale, Series, Unit, SETUP_LEGEND,
};
use crate::report::analyze::Analysis;

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for set in curve_sets(a) {
        let mut series = Vec::new();
        let mut legend = Vec::new();
        for c in &set.curves {
            let pts: Vec<_> = c
                .points
                .iter()
                .filter_map(|&i| size_point(&a.entries[i], Quantity::Time))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let mark = curve_mark(a, c);
            legend.push(LegendEntry {
                mark,
                label: curve_label(a, c),
            });
            series.push(Series { mark, points: pts });
        }
        if series.is_empty() {
            continue;
        }
        let (twins, twin_entry) = in_place_series(a, &set, Quantity::Time);
        series.extend(twins);
        legend.extend(twin_entry);
        let w = set.view.workload;
        out.push(Figure {
            kind: FigureKind::Latency,
            workload: w,
            stem: format!("{}_{w}_{}", FigureKind::Latency, set.suffix),
            title: format!("{w}: time per operation vs size — {}", set.view.label),
            caption: format!(
                "Time per {w} operation ({}) against the size S, log-log, one curve per set-up. Points are time_s (mean over ranks); bars span p5–p95 of the samples (slowest rank per sample).",
                set.view.label
            ),
            panels: vec![Panel {
                title: String::new(),
                x: Axis::new("size S (log2 scale)", Scale::Log2Bytes),
                y: Axis::new("time per operation (log scale)", Scale::Log10(Unit::Seconds)),
                series,
                refs: vec![],
                dodge: false,
            }],
            legend_title: SETUP_LEGEND.to_string(),
            legend,
            notes: vec![
                "points: time_s (mean over ranks)".to_string(),
                "bars (right of each point): p5–p95 of the samples (slowest rank each)".to_string(),
            ],
        });
    }
    out
}
