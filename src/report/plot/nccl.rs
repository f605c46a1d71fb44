//! Chart kind: NCCL algorithm × protocol sweeps (issue 31 item 3): time per operation
//! against size, log-log, one panel per forced algorithm (`default` = NCCL's choice), one
//! curve per protocol forced there; bars p5–p95 of the samples. A stand-in sweep says
//! STAND-IN in its title.

use super::{
    color, marker, size_point, Axis, Figure, FigureKind, LegendEntry, Mark, Panel, Quantity, Scale,
    Series, Unit, GREY,
};
use crate::params::{NcclAlgo, NcclProto};
use crate::report::analyze::Analysis;
use crate::report::nccl::{chart_stem, sweeps, Setting};

/// Colour by protocol, marker by algorithm: a protocol looks alike in every panel.
fn mark(s: Setting) -> Mark {
    let proto = s.proto.map_or(0, |p| {
        1 + NcclProto::ALL.iter().position(|x| *x == p).unwrap_or(0)
    });
    let algo = s.algo.map_or(0, |a| {
        1 + NcclAlgo::ALL.iter().position(|x| *x == a).unwrap_or(0)
    });
    Mark::solid(color(proto), marker(algo))
}

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for (k, s) in sweeps(a).iter().enumerate() {
        let algos: Vec<Option<NcclAlgo>> = {
            let mut v: Vec<_> = s.settings.iter().map(|x| x.algo).collect();
            v.dedup();
            v
        };
        let mut legend = Vec::new();
        let mut panels = Vec::new();
        for algo in algos {
            let mut series = Vec::new();
            for (j, set) in s.settings.iter().enumerate() {
                if set.algo != algo {
                    continue;
                }
                let pts: Vec<_> = s
                    .rows
                    .iter()
                    .filter_map(|r| r.points[j])
                    .filter_map(|p| size_point(&a.entries[p.entry], Quantity::Time))
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                // As in every chart of the report: a series that cannot represent its
                // set-up is grey and says so.
                let apart = s
                    .rows
                    .iter()
                    .any(|r| r.points[j].is_some_and(|p| !p.usable));
                let (m, label) = if apart {
                    (
                        Mark {
                            color: GREY,
                            ..mark(*set)
                        },
                        format!("{} — NOT REPRESENTATIVE", set.label()),
                    )
                } else {
                    (mark(*set), set.label())
                };
                legend.push(LegendEntry { mark: m, label });
                series.push(Series {
                    mark: m,
                    points: pts,
                });
            }
            panels.push(Panel {
                title: format!("algo={}", algo.map_or("default", NcclAlgo::name)),
                x: Axis::new("size S (log2 scale)", Scale::Log2Bytes),
                y: Axis::new(
                    "time per operation (log scale)",
                    Scale::Log10(Unit::Seconds),
                ),
                series,
                refs: vec![],
                dodge: false,
            });
        }
        let w = s.workload;
        let standin = if s.standin { "STAND-IN " } else { "" };
        out.push(Figure {
            kind: FigureKind::Nccl,
            workload: w,
            stem: chart_stem(k, w),
            title: format!("{standin}{w}: NCCL algorithm × protocol, time vs size — {}", s.label),
            caption: format!(
                "{standin}Time per {w} operation ({}) against the size S, log-log, for every algorithm × protocol forced (`default` = NCCL's own choice): one panel per algorithm, colour by protocol. Points are time_s (mean over ranks); bars span p5–p95 of the samples.",
                s.label
            ),
            panels,
            legend_title: "forced on NCCL".to_string(),
            legend,
            notes: vec![
                "points: time_s (mean over ranks)".to_string(),
                "bars: p5–p95 of the samples".to_string(),
            ],
        });
    }
    out
}
