//! The trend chart of one case (`report --history-db`): its series in the history index, one
//! point per run (the median with its interval), a colour per set-up, change points as
//! labelled vertical lines.

use super::{
    color, marker, Axis, Figure, FigureKind, LegendEntry, Mark, Panel, Pt, RefLine, Scale, Series,
    Unit,
};
use crate::history::query::Series as History;

/// The figure of series `s`, the `n`-th trend chart (1-based) of the report.
pub(crate) fn figure(s: &History, n: usize, workload: crate::params::Workload) -> Figure {
    let unit = if s.unit == "s" {
        Unit::Seconds
    } else {
        Unit::Plain
    };
    let mut series = Vec::new();
    let mut legend = Vec::new();
    for (k, setup) in s.setups.iter().enumerate() {
        let mark = Mark::solid(color(k), marker(k));
        let points: Vec<Pt> = s
            .points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.setup == k)
            .map(|(i, p)| Pt {
                x: i as f64 + 1.0,
                y: p.median,
                lo: Some(p.lo),
                hi: Some(p.hi),
            })
            .collect();
        series.push(Series { mark, points });
        legend.push(LegendEntry {
            mark,
            label: format!("set-up #{}: {}", k + 1, setup),
        });
    }
    let (lo, hi) = s
        .points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.lo), b.max(p.hi))
        });
    // Change points: a vertical line before the first run of the new level.
    let refs = s
        .steps
        .iter()
        .filter(|st| st.kind == "change")
        .map(|st| {
            let x = st.index as f64 + 0.5;
            RefLine {
                color: None,
                points: vec![(x, lo), (x, hi)],
                label: format!(
                    "{} {:+.1} %",
                    st.direction,
                    st.relative.unwrap_or(0.0) * 100.0
                ),
            }
        })
        .collect();
    Figure {
        kind: FigureKind::Trend,
        workload,
        stem: format!("{}_{n}", FigureKind::Trend),
        title: format!("Trend: {} on {}", s.label, s.cluster),
        caption: format!(
            "{} per run of the history index in start order ({} is better), the median with its interval; vertical lines are the change points `scalebench history changes` finds.",
            s.metric,
            if s.higher_is_better { "higher" } else { "lower" }
        ),
        panels: vec![Panel {
            title: String::new(),
            x: Axis::new("run (in start order)", Scale::Linear(Unit::Plain)),
            y: Axis::new(format!("{} ({})", s.metric, s.unit), Scale::Linear(unit)),
            series,
            refs,
            dodge: false,
        }],
        legend_title: "set-up".into(),
        legend,
        notes: vec![],
    }
}
