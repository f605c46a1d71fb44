//! Chart kind: the α–β (Hockney) fit against the measurement: measured time per size as markers,
//! the fitted α + β·F·S as a line of the same colour, per set-up.

use super::{
    curve_sets, setup_label, setup_mark, Axis, Figure, LegendEntry, Line, Marker, Panel, Pt, Scale,
    Series, Unit, SETUP_LEGEND,
};
use crate::report::analyze::{style_key, Analysis, Layout};
use crate::report::table::sig;

pub fn figures(a: &Analysis) -> Vec<Figure> {
    let mut out = Vec::new();
    for set in curve_sets(a) {
        let mut series = Vec::new();
        let mut legend = Vec::new();
        for c in &set.curves {
            let Ok(h) = &c.hockney else {
                continue;
            };
            let (layout, style) = (Layout::of(&c.shape), style_key(&c.shape));
            let mut measured = Vec::new();
            let mut factor = None;
            for &i in &c.points {
                let e = &a.entries[i];
                if let (Some(b), Some(t)) = (e.bytes(), e.time_s()) {
                    measured.push(Pt::new(b as f64, t));
                    factor = factor.or(e.case.busbw_factor);
                }
            }
            let Some(f) = factor else {
                continue;
            };
            let (lo, hi) = measured.iter().fold((f64::INFINITY, 0.0_f64), |(l, h), p| {
                (l.min(p.x), h.max(p.x))
            });
            let steps = 48;
            let line: Vec<Pt> = (0..=steps)
                .map(|k| {
                    let s = lo * (hi / lo).powf(f64::from(k) / f64::from(steps));
                    Pt::new(s, h.predict_s(f * s))
                })
                .collect();
            let mark = setup_mark(a, layout, style);
            series.push(Series {
                mark: super::Mark {
                    line: Line::None,
                    ..mark
                },
                points: measured,
            });
            series.push(Series {
                mark: super::Mark {
                    marker: Marker::None,
                    ..mark
                },
                points: line,
            });
            let bw = h
                .bandwidth_gbps()
                .map_or_else(|| "∞".to_string(), |b| sig(b, 3));
            legend.push(LegendEntry {
                mark,
                label: format!(
                    "{}: α {} µs, 1/β {} GB/s, R² {:.3}",
                    setup_label(a, layout, style),
                    sig(h.alpha_s * 1e6, 3),
                    bw,
                    h.fit.r2
                ),
            });
        }
        if series.is_empty() {
            continue;
        }
        let w = set.view.workload;
        out.push(Figure {
            kind: "fit",
            workload: w,
            stem: format!("fit_{w}_{}", set.suffix),
            title: format!("{w}: α–β model vs measurement — {}", set.view.label),
            caption: format!(
                "Hockney model time = α + β·F·S fitted per set-up to {w} ({}) by robust (Huber-reweighted) least squares on relative residuals (markers: measured time_s; lines: the fit). 1/β is the asymptotic bus bandwidth.",
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
                "markers: measured time_s".to_string(),
                "lines: fitted α + β·F·S (F = busbw factor)".to_string(),
            ],
        });
    }
    out
}
