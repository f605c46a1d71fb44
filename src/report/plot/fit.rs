//! Chart kind: the α–β (Hockney) model against the measurement: measured time per size as
//! markers and, per set-up, the fitted α + β·F·S of each regime as a line over that regime's
//! sizes; switch sizes are marked with vertical lines.

use super::{
    curve_label, curve_mark, curve_sets, Axis, Figure, FigureKind, LegendEntry, Line, Marker,
    Panel, Pt, RefLine, Scale, Series, Unit, SETUP_LEGEND,
};
use crate::present::table::sig;
use crate::report::analyze::{Analysis, Curve};
use crate::report::model::Regimes;
use crate::units::format_bytes;

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for set in curve_sets(a) {
        let mut p = Parts {
            series: Vec::new(),
            legend: Vec::new(),
            switches: Vec::new(),
            ylo: f64::INFINITY,
            yhi: 0.0,
        };
        for c in &set.curves {
            add_curve(a, c, &mut p);
        }
        if p.series.is_empty() {
            continue;
        }
        let (ylo, yhi) = (p.ylo, p.yhi);
        let refs: Vec<RefLine> = p
            .switches
            .into_iter()
            .map(|(s, label)| RefLine {
                color: None,
                points: vec![(s, ylo), (s, yhi)],
                label,
            })
            .collect();
        let w = set.view.workload;
        out.push(Figure {
            kind: FigureKind::Fit,
            workload: w,
            stem: format!("{}_{w}_{}", FigureKind::Fit, set.suffix),
            title: format!("{w}: α–β model per regime vs measurement — {}", set.view.label),
            caption: format!(
                "Hockney model time = α + β·F·S fitted per set-up and regime to {w} ({}) by robust (Huber-reweighted) least squares on relative residuals; regimes (protocol or algorithm switches) are found by segmented least squares with a penalty per extra segment (markers: each size's median time, the value fitted; lines: each regime's fit over its sizes; dashed verticals: where a set-up switches regime). 1/β is the asymptotic bus bandwidth of a regime. Grey: not representative.",
                set.view.label
            ),
            panels: vec![Panel {
                title: String::new(),
                x: Axis::new("size S (log2 scale)", Scale::Log2Bytes),
                y: Axis::new("time per operation (log scale)", Scale::Log10(Unit::Seconds)),
                series: p.series,
                refs,
                dodge: false,
            }],
            legend_title: SETUP_LEGEND.to_string(),
            legend: p.legend,
            notes: vec![
                "markers: each size's median time (the value fitted)".to_string(),
                "lines: α + β·F·S per regime (F = busbw factor)".to_string(),
                "dashed verticals: regime switches".to_string(),
                "hollow markers: sizes the robust fit down-weighted".to_string(),
            ],
        });
    }
    out
}

/// What the curves of one chart contribute: series, legend, regime switches (size, label) and
/// the measured time range the switch lines span.
struct Parts {
    series: Vec<Series>,
    legend: Vec<LegendEntry>,
    switches: Vec<(f64, String)>,
    ylo: f64,
    yhi: f64,
}

/// Adds a curve with fitted regimes and a busbw factor: its measured points, one line per
/// regime, its legend entry and its switch sizes.
fn add_curve(a: &Analysis<'_>, c: &Curve, p: &mut Parts) {
    let Ok(r) = &c.regimes else {
        return;
    };
    let Some(f) = c.factor.filter(|f| *f > 0.0) else {
        return;
    };
    let mut measured = Vec::new();
    let mut discounted = Vec::new();
    for &i in &c.points {
        let e = &a.entries[i];
        if let (Some(b), Some(t)) = (e.bytes(), e.fit_time_s()) {
            // Sizes the robust fit counted less are drawn hollow (ring only).
            let x = b as f64 * f;
            if r.downweighted_x.iter().any(|d| (d - x).abs() <= 1e-9 * x) {
                discounted.push(Pt::new(b as f64, t));
            } else {
                measured.push(Pt::new(b as f64, t));
            }
            p.ylo = p.ylo.min(t);
            p.yhi = p.yhi.max(t);
        }
    }
    if measured.is_empty() && discounted.is_empty() {
        return;
    }
    let mark = curve_mark(a, c);
    p.series.push(Series {
        mark: super::Mark {
            line: Line::None,
            ..mark
        },
        points: measured,
    });
    if !discounted.is_empty() {
        p.series.push(Series {
            mark: super::Mark {
                line: Line::None,
                hollow: true,
                ..mark
            },
            points: discounted,
        });
    }
    p.series
        .extend(regime_lines(r, f).into_iter().map(|line| Series {
            mark: super::Mark {
                marker: Marker::None,
                ..mark
            },
            points: line,
        }));
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
    p.legend.push(LegendEntry {
        mark,
        label: format!(
            "{}: {regimes}, R² {:.3}{}",
            curve_label(a, c),
            r.r2,
            if r.poor.is_empty() {
                ""
            } else {
                " — POOR fit"
            }
        ),
    });
    for k in 0..r.segments.len().saturating_sub(1) {
        let s = r.boundary_x(k) / f;
        p.switches.push((
            s,
            format!(
                "switch {}–{}",
                format_bytes((r.segments[k].to_x / f).round() as u64),
                format_bytes((r.segments[k + 1].from_x / f).round() as u64)
            ),
        ));
    }
}

/// Each regime's fitted time over its sizes (`x / f`), out to the hand-over points.
fn regime_lines(r: &Regimes, f: f64) -> Vec<Vec<Pt>> {
    let n = r.segments.len();
    r.segments
        .iter()
        .enumerate()
        .map(|(k, seg)| {
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
            (0..=steps)
                .map(|j| {
                    let s = lo * (hi / lo).powf(f64::from(j) / f64::from(steps));
                    Pt::new(s, seg.hockney.predict_s(f * s))
                })
                .collect()
        })
        .collect()
}
