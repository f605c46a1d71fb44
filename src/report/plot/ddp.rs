//! Chart kinds of ddp_step: where a training step's time goes (`ddp_breakdown`: per set-up, a
//! stacked bar of compute, compute imbalance and exposed communication per device count, with
//! the step without overlap beside it) and how much of the communication the step hides against the bucket
//! capacity (`ddp_overlap`). The weak/strong scaling efficiency of step time is the `scaling`
//! chart kind, which covers ddp_step as it covers the GEMM workloads.

use super::{
    chunk, color, grey, marker, Axis, Figure, FigureKind, LegendEntry, Line, Mark, Marker, Panel,
    Pt, RefLine, Scale, Series, Unit,
};
use crate::params::Workload;
use crate::report::analyze::ddp::{points, Point};
use crate::report::analyze::{not_representative_suffix, Analysis};
use std::collections::{BTreeMap, BTreeSet};

/// Most breakdown charts in one report (one per set-up); the table lists every set-up.
pub(crate) const MAX_BREAKDOWNS: usize = 24;

/// A set-up's key without its bucket capacity (the overlap chart's series).
fn without_bucket(setup: &str) -> String {
    setup
        .split_whitespace()
        .filter(|w| !w.starts_with("bucket="))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let pts = points(a);
    let mut out = breakdowns(&pts);
    out.extend(overlap_vs_bucket(&pts));
    out
}

/// Devices per node of a point (the breakdown's x axis grows with nodes at this width).
fn per_node(p: &Point) -> u32 {
    p.devices / p.nodes.max(1)
}

fn breakdowns(pts: &[Point]) -> Vec<Figure> {
    // Unrepresentative points get charts of their own, greyed and titled so.
    let mut by_setup: BTreeMap<(&str, u32, &BTreeSet<String>), Vec<&Point>> = BTreeMap::new();
    for p in pts {
        by_setup
            .entry((p.setup.as_str(), per_node(p), &p.concerns))
            .or_default()
            .push(p);
    }
    let mut out = Vec::new();
    for (k, ((setup, dpn, concerns), mut v)) in by_setup.into_iter().enumerate() {
        if k == MAX_BREAKDOWNS {
            break;
        }
        let marks = BreakdownMarks::new(!concerns.is_empty());
        v.sort_by_key(|p| p.devices);
        out.push(Figure {
            kind: FigureKind::DdpBreakdown,
            workload: Workload::DdpStep,
            stem: format!("{}_{}", FigureKind::DdpBreakdown, k + 1),
            title: format!(
                "ddp_step: step time, compute vs exposed communication — {setup}, {} per node{}",
                crate::present::count(dpn as usize, "device", "devices"),
                not_representative_suffix(concerns)
            ),
            caption: crate::report::long_text::DDP_BREAKDOWN_CAPTION.to_string(),
            panels: vec![Panel {
                title: String::new(),
                x: Axis::new("devices p (log2 scale)", Scale::Log2Count),
                y: Axis::new("time per step", Scale::Linear(Unit::Seconds)),
                series: marks.series(&v),
                refs: Vec::new(),
                dodge: false,
            }],
            legend_title: "part of the step".to_string(),
            legend: marks.legend(),
            notes: std::iter::once("bars stack to the slowest rank's step".to_string())
                .chain(
                    v.iter()
                        .any(|p| p.devices == 1)
                        // The all-reduce calls still run (copies, the average, the progress
                        // thread's polling): their time is real, only no message leaves.
                        .then(|| {
                            "1 device: no messages; its communication is the calls' local work"
                                .to_string()
                        }),
                )
                .collect(),
        });
    }
    out
}

/// The parts of a breakdown chart: compute (bar), the slowest rank's extra compute and the
/// exposed communication stacked on it (bars), and the step without overlap (dashed).
struct BreakdownMarks {
    compute: Mark,
    imbalance: Mark,
    exposed: Mark,
    no_overlap: Mark,
}

impl BreakdownMarks {
    /// Set-up colours, or grey and hollow for points that are not representative.
    fn new(greyed: bool) -> Self {
        let pick = |i: usize| if greyed { grey(i) } else { color(i) };
        let compute = Mark {
            color: pick(0),
            marker: Marker::None,
            line: Line::Bar,
            hollow: greyed,
        };
        BreakdownMarks {
            compute,
            imbalance: Mark {
                color: pick(2),
                ..compute
            },
            exposed: Mark {
                color: pick(1),
                ..compute
            },
            no_overlap: Mark {
                line: Line::Dashed,
                hollow: greyed,
                ..Mark::solid(pick(6), Marker::Diamond)
            },
        }
    }

    /// The four series of one set-up's steps (sorted by devices).
    fn series(&self, v: &[&Point]) -> Vec<Series> {
        let x = |p: &Point| f64::from(p.devices);
        // Older files have no imbalance: 0, so their bars stack as before.
        let top_of_compute =
            |p: &Point| p.compute_s + p.compute_imbalance_s.unwrap_or(0.0).max(0.0);
        vec![
            Series {
                mark: self.compute,
                points: v.iter().map(|p| Pt::new(x(p), p.compute_s)).collect(),
            },
            Series {
                mark: self.imbalance,
                points: v
                    .iter()
                    .map(|p| Pt {
                        lo: Some(p.compute_s),
                        ..Pt::new(x(p), top_of_compute(p))
                    })
                    .collect(),
            },
            Series {
                mark: self.exposed,
                points: v
                    .iter()
                    .map(|p| Pt {
                        lo: Some(top_of_compute(p)),
                        ..Pt::new(x(p), top_of_compute(p) + p.exposed_comm_s.max(0.0))
                    })
                    .collect(),
            },
            Series {
                mark: self.no_overlap,
                points: v
                    .iter()
                    .map(|p| Pt::new(x(p), p.step_no_overlap_s))
                    .collect(),
            },
        ]
    }

    fn legend(&self) -> Vec<LegendEntry> {
        vec![
            LegendEntry {
                mark: self.compute,
                label: "compute (compute_s)".to_string(),
            },
            LegendEntry {
                mark: self.imbalance,
                label: "slowest rank's extra compute (compute_imbalance_s)".to_string(),
            },
            LegendEntry {
                mark: self.exposed,
                label: "exposed communication (exposed_comm_s)".to_string(),
            },
            LegendEntry {
                mark: self.no_overlap,
                label: "step without overlap (step_no_overlap_s)".to_string(),
            },
        ]
    }
}

/// One overlap-efficiency curve: a set-up at one layout, measured with several buckets.
struct Curve {
    label: String,
    /// Not representative: grey, hollow.
    greyed: bool,
    points: Vec<Pt>,
}

/// The words (whitespace-separated) every one of `setups` has, in the first one's order, and
/// each set-up without them. One set-up (or none) shares nothing: it keeps its words.
fn split_shared_words(setups: &[&str]) -> (String, Vec<String>) {
    if setups.len() < 2 {
        return (
            String::new(),
            setups.iter().map(|s| s.to_string()).collect(),
        );
    }
    let has = |s: &str, w: &str| s.split_whitespace().any(|x| x == w);
    let shared: Vec<&str> = setups[0]
        .split_whitespace()
        .filter(|w| setups.iter().all(|s| has(s, w)))
        .collect();
    let own = setups
        .iter()
        .map(|s| {
            s.split_whitespace()
                .filter(|w| !shared.contains(w))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    (shared.join(" "), own)
}

fn overlap_vs_bucket(pts: &[Point]) -> Vec<Figure> {
    type Key = (String, u32, u32, BTreeSet<String>);
    let mut groups: BTreeMap<Key, Vec<Pt>> = BTreeMap::new();
    for p in pts {
        let (Some(b), Some(e)) = (p.bucket_bytes, p.overlap_efficiency) else {
            continue;
        };
        groups
            .entry((
                without_bucket(&p.setup),
                p.nodes,
                p.devices,
                p.concerns.clone(),
            ))
            .or_default()
            .push(Pt::new(b as f64, e));
    }
    groups.retain(|_, v| v.len() > 1);
    // Words every curve's set-up shares (model, dtype, batch, …) go to the title once: the
    // legend names what tells the curves apart, short enough to show every entry.
    let setups: Vec<&str> = groups.keys().map(|k| k.0.as_str()).collect();
    let (shared, own) = split_shared_words(&setups);
    let title = if shared.is_empty() {
        "ddp_step: overlap efficiency vs gradient bucket capacity".to_string()
    } else {
        format!("ddp_step: overlap efficiency vs gradient bucket capacity — {shared}")
    };
    let curves: Vec<Curve> = groups
        .into_iter()
        .zip(own)
        .map(|(((_, nodes, devices, concerns), mut v), setup)| {
            v.sort_by(|a, b| a.x.total_cmp(&b.x));
            let sep = if setup.is_empty() { "" } else { ": " };
            Curve {
                label: format!(
                    "{}, {devices} devices{sep}{setup}{}",
                    crate::present::count(nodes as usize, "node", "nodes"),
                    not_representative_suffix(&concerns)
                ),
                greyed: !concerns.is_empty(),
                points: v,
            }
        })
        .collect();
    let parts = chunk(curves, |c: &Curve| c.label.clone());
    let many = parts.len() > 1;
    let mut out = Vec::new();
    for (k, part) in parts.into_iter().enumerate() {
        let mut series = Vec::new();
        let mut legend = Vec::new();
        let (mut x0, mut x1) = (f64::INFINITY, 0.0_f64);
        for (j, c) in part.into_iter().enumerate() {
            let mut mark = Mark::solid(color(j), marker(j));
            if c.greyed {
                mark.color = grey(j);
                mark.hollow = true;
            }
            for p in &c.points {
                x0 = x0.min(p.x);
                x1 = x1.max(p.x);
            }
            legend.push(LegendEntry {
                mark,
                label: c.label,
            });
            series.push(Series {
                mark,
                points: c.points,
            });
        }
        out.push(Figure {
            kind: FigureKind::DdpOverlap,
            workload: Workload::DdpStep,
            stem: if many {
                format!("{}_{}", FigureKind::DdpOverlap, k + 1)
            } else {
                FigureKind::DdpOverlap.to_string()
            },
            title: title.clone(),
            caption: "How much of the all-reduce time the step hides behind backward compute, against the bucket capacity: overlap_efficiency = 1 − exposed_comm_s / exposed_no_overlap_s, both measured on the critical path of steps run alike (1: all hidden; 0: none). Small buckets start communication early but pay a per-call cost; one huge bucket cannot start before backward ends.".to_string(),
            panels: vec![Panel {
                title: String::new(),
                x: Axis::new("bucket capacity (log2 scale)", Scale::Log2Bytes),
                y: Axis::new("overlap efficiency", Scale::Linear(Unit::Plain)),
                series,
                refs: vec![RefLine {
color: None,
                    points: vec![(x0, 1.0), (x1, 1.0)],
                    label: "all hidden".to_string(),
                }],
                dodge: false,
            }],
            legend_title: "set-up".to_string(),
            legend,
            notes: vec!["one point per measured bucket capacity".to_string()],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Scaling;

    fn pt(setup: &str, nodes: u32, devices: u32, bucket: u64, compute: f64, step: f64) -> Point {
        Point {
            setup: setup.to_string(),
            devices,
            nodes,
            scaling: Scaling::Weak,
            step_s: step,
            compute_s: compute,
            compute_imbalance_s: None,
            step_slowest_s: None,
            exposed_comm_s: (step - compute).max(0.0),
            exposed_comm_ci_s: None,
            comm_s: 1.0,
            step_no_overlap_s: step * 1.5,
            overlap_efficiency: (devices > 1).then(|| 1.0 - (step - compute).max(0.0)),
            samples_per_s: 1.0,
            bucket_bytes: Some(bucket),
            digits: 3,
            concerns: BTreeSet::new(),
            usable: true,
        }
    }

    #[test]
    fn the_overlap_legend_names_what_tells_the_set_ups_apart() {
        let (shared, own) = split_shared_words(&[
            "m f32 cpu batch=64 hybrid core fill",
            "m f32 cpu batch=64 pure none fill",
            "m f32 cpu batch=64 pure core fill",
        ]);
        assert_eq!(shared, "m f32 cpu batch=64 fill");
        assert_eq!(own, ["hybrid core", "pure none", "pure core"]);
        // one set-up keeps its words; nothing shared leaves each whole
        assert_eq!(
            split_shared_words(&["a b"]),
            (String::new(), vec!["a b".into()])
        );
        let (shared, own) = split_shared_words(&["a b", "c d"]);
        assert_eq!(
            (shared.as_str(), own),
            ("", vec!["a b".into(), "c d".into()])
        );
    }

    #[test]
    fn bars_stack_to_the_step_time_per_set_up_and_width() {
        let pts = vec![
            pt("m f32 cpu bucket=1 MiB", 1, 1, 1 << 20, 2.0, 2.0),
            pt("m f32 cpu bucket=1 MiB", 1, 2, 1 << 20, 2.0, 2.5),
            pt("m f32 cpu bucket=1 MiB", 2, 4, 1 << 20, 2.0, 2.75),
            pt("m f32 cpu bucket=4 MiB", 1, 2, 4 << 20, 2.0, 2.25),
        ];
        let figs = breakdowns(&pts);
        // set-up × devices per node: (1 MiB, 1), (1 MiB, 2), (4 MiB, 2)
        assert_eq!(figs.len(), 3);
        // (1 MiB, 2 per node): 2 devices on 1 node and 4 on 2 nodes
        let f = &figs[1];
        assert_eq!(f.kind, FigureKind::DdpBreakdown);
        assert_eq!(f.panels[0].series[0].points.len(), 2);
        let s = &f.panels[0].series;
        assert_eq!(s[0].mark.line, Line::Bar);
        // compute, imbalance, exposed stack: each bar starts where the one below ends
        for ((c, i), e) in s[0].points.iter().zip(&s[1].points).zip(&s[2].points) {
            assert_eq!(i.lo, Some(c.y));
            assert_eq!(e.lo, Some(i.y));
        }
        let p = pts.iter().find(|p| p.devices == 2 && p.nodes == 1).unwrap();
        let top = s[2].points.iter().find(|q| q.x == 2.0).unwrap();
        assert_eq!(top.y, p.step_s);
    }

    #[test]
    fn imbalance_stacks_between_compute_and_exposed_and_greyed_points_chart_apart() {
        let mut a = pt("m f32 cpu bucket=1 MiB", 1, 2, 1 << 20, 2.0, 2.5);
        a.compute_imbalance_s = Some(0.25);
        a.exposed_comm_s = 0.25;
        let mut b = pt("m f32 cpu bucket=1 MiB", 1, 4, 1 << 20, 2.0, 2.5);
        b.concerns.insert("oversubscribed".to_string());
        b.usable = false;
        let figs = breakdowns(&[a, b]);
        assert_eq!(figs.len(), 2, "representative and not: separate charts");
        let s = &figs[0].panels[0].series;
        assert_eq!((s[1].points[0].lo, s[1].points[0].y), (Some(2.0), 2.25));
        assert_eq!((s[2].points[0].lo, s[2].points[0].y), (Some(2.25), 2.5));
        assert!(!figs[0].title.contains("NOT REPRESENTATIVE"));
        assert!(figs[1].title.contains("NOT REPRESENTATIVE: oversubscribed"));
        // Grey, and the three stacked parts in three shades (one grey hid which was which).
        let greyed = &figs[1].panels[0].series;
        assert!(greyed
            .iter()
            .all(|x| x.mark.color.0 == x.mark.color.1 && x.mark.color.1 == x.mark.color.2));
        let shades: std::collections::BTreeSet<u8> =
            greyed[..3].iter().map(|x| x.mark.color.0).collect();
        assert_eq!(shades.len(), 3, "{shades:?}");
    }

    #[test]
    fn overlap_curves_need_several_buckets() {
        let pts = vec![
            pt("m f32 cpu bucket=1 MiB", 1, 2, 1 << 20, 2.0, 2.5),
            pt("m f32 cpu bucket=4 MiB", 1, 2, 4 << 20, 2.0, 2.25),
            pt("m f32 cpu bucket=1 MiB", 1, 1, 1 << 20, 2.0, 2.0),
            pt("n f32 cpu bucket=1 MiB", 1, 2, 1 << 20, 2.0, 2.5),
        ];
        let figs = overlap_vs_bucket(&pts);
        assert_eq!(figs.len(), 1);
        let s = &figs[0].panels[0].series;
        // only "m" at 2 devices has two bucket sizes; 1 device has no efficiency
        assert_eq!(s.len(), 1);
        let xs: Vec<f64> = s[0].points.iter().map(|p| p.x).collect();
        assert_eq!(xs, vec![(1u64 << 20) as f64, (4u64 << 20) as f64]);
        assert_eq!(s[0].points[1].y, 0.75);
        assert!(figs[0].legend[0].label.contains("2 devices"));
    }
}
