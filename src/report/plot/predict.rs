//! Chart kind: a collective across device counts with its fitted cost form: measured time
//! against devices at a few sizes (solid), the model (dashed) extended to 4× the largest measured
//! scale, and the predictions at 2× and 4× as hollow markers.

use super::{
    color, Axis, Figure, FigureKind, LegendEntry, Line, Mark, Marker, Panel, Pt, Scale, Series,
    Unit,
};
use crate::report::analyze::{Analysis, CollScale};
use crate::report::model::{ScaleModel, ScaleRegime};
use crate::units::format_bytes;

/// Sizes shown per chart.
const SIZES: usize = 4;

/// Up to [`SIZES`] sizes measured at the largest scale and at least one smaller one, spread
/// over the range.
fn pick_sizes(cs: &CollScale) -> Vec<usize> {
    let last = cs.layouts.len() - 1;
    let ok: Vec<usize> = (0..cs.sizes.len())
        .filter(|&k| {
            let row = &cs.sizes[k].1;
            row[last].is_some() && row[..last].iter().flatten().count() >= 1
        })
        .collect();
    if ok.len() <= SIZES {
        return ok;
    }
    let mut pick: Vec<usize> = (0..SIZES)
        .map(|j| ok[j * (ok.len() - 1) / (SIZES - 1)])
        .collect();
    pick.dedup();
    pick
}

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut n_by_wl: std::collections::BTreeMap<String, usize> = Default::default();
    for cs in a.coll_scaling.iter().filter(|c| c.charted) {
        let Ok(m) = &cs.model else {
            continue;
        };
        let forms = forms_text(m);
        let caveat = caveat(a, cs);
        let mut series = Vec::new();
        let mut legend = Vec::new();
        for (k, &si) in pick_sizes(cs).iter().enumerate() {
            let mark = Mark::solid(color(k), Marker::Circle);
            if let Some((entry, three)) = size_series(a, cs, m, si, mark, &caveat) {
                legend.push(entry);
                series.extend(three);
            }
        }
        if series.is_empty() {
            continue;
        }
        legend.extend(model_legend(m));
        let (held, notes) = holdout_notes(m);
        let wl = cs.workload.to_string();
        let n = n_by_wl.entry(wl.clone()).or_default();
        *n += 1;
        out.push(Figure {
            kind: FigureKind::Predict,
            workload: cs.workload,
            stem: format!("{}_{wl}_{n}", FigureKind::Predict),
            title: format!(
                "{wl}: time vs devices with the {forms} model — {} ({})",
                cs.label,
                cs.family.label()
            ),
            caption: format!(
                "{wl} time per operation against devices p at up to {SIZES} sizes (solid: measured median, bars p5–p95 of the samples), the {forms} cost form fitted on every measured scale (dashed; each size uses its regime's form) and its predictions at {} and {} devices (hollow markers: PREDICTIONS, not measurements). {held}.",
                m.predict_devices[0], m.predict_devices[1]
            ),
            panels: vec![Panel {
                title: String::new(),
                x: Axis::new("devices p (log2 scale)", Scale::Log2Count),
                y: Axis::new("time per operation (log scale)", Scale::Log10(Unit::Seconds)),
                series,
                refs: vec![],
                dodge: false,
            }],
            legend_title: "size S".to_string(),
            legend,
            notes,
        });
    }
    out
}

/// The legend suffix when included unrepresentative measurements are charted (empty if none).
fn caveat(a: &Analysis<'_>, cs: &CollScale) -> String {
    let kinds: std::collections::BTreeSet<String> = cs
        .sizes
        .iter()
        .flat_map(|(_, row)| row.iter().flatten())
        .flat_map(|&i| a.entries[i].concern_kinds())
        .collect();
    crate::report::analyze::not_representative_suffix(&kinds)
}

/// One size's legend entry and series: measured (solid), the model's curve (dashed) and the
/// predictions (hollow); `None` when no measurement at ≥ 2 devices has a time and a size.
fn size_series(
    a: &Analysis<'_>,
    cs: &CollScale,
    m: &ScaleModel,
    si: usize,
    mark: Mark,
    caveat: &str,
) -> Option<(LegendEntry, [Series; 3])> {
    let (req, row) = &cs.sizes[si];
    let mut measured = Vec::new();
    let mut bytes = None;
    for (li, e) in row.iter().enumerate() {
        let Some(e) = e.map(|i| &a.entries[i]) else {
            continue;
        };
        let p = cs.layouts[li].devices();
        if p < 2 {
            continue;
        }
        if let (Some(t), Some(b)) = (e.fit_time_s(), e.bytes()) {
            measured.push(Pt {
                x: f64::from(p),
                y: t,
                lo: e.spread.map(|s| s.p5_s),
                hi: e.spread.map(|s| s.p95_s),
            });
            bytes = Some(b as f64);
        }
    }
    let b = bytes?;
    let curve = model_curve(m, b);
    let predicted: Vec<Pt> = m
        .predict_devices
        .iter()
        .map(|&p| Pt::new(f64::from(p), m.predict_s(p, b)))
        .collect();
    let entry = LegendEntry {
        mark,
        label: format!("S = {}{caveat}", format_bytes(*req)),
    };
    let dashed = Mark {
        color: mark.color,
        marker: Marker::None,
        line: Line::Dashed,
        hollow: false,
    };
    let hollow = Mark {
        color: mark.color,
        marker: Marker::Circle,
        line: Line::None,
        hollow: true,
    };
    Some((
        entry,
        [
            Series {
                mark,
                points: measured,
            },
            Series {
                mark: dashed,
                points: curve,
            },
            Series {
                mark: hollow,
                points: predicted,
            },
        ],
    ))
}

/// The best form's time at `b` bytes as a smooth curve: 24 steps per doubling between the
/// smallest measured device count and 4× the largest.
fn model_curve(m: &ScaleModel, b: f64) -> Vec<Pt> {
    let best = m.regime_for(b).best_fit();
    let (l0, l1) = (
        f64::from(m.devices[0]).log2(),
        f64::from(m.predict_devices[1]).log2(),
    );
    let steps = ((l1 - l0) * 24.0).ceil().max(1.0) as u32;
    (0..=steps)
        .map(|j| {
            let p = 2f64.powf(l0 + (l1 - l0) * f64::from(j) / f64::from(steps));
            let (u, v) = best.form.coefficients(p, b);
            Pt::new(p, best.fit.predict(u, v))
        })
        .collect()
}

/// The grey legend entries for the model's curve and its predictions.
fn model_legend(m: &ScaleModel) -> [LegendEntry; 2] {
    let model = m
        .regimes
        .iter()
        .map(|r| {
            let f = &r.best_fit().form;
            format!("{}{} form, {}", regime_prefix(m, r), f.name, f.formula)
        })
        .collect::<Vec<_>>()
        .join("; ");
    let grey = super::Rgb(90, 90, 90);
    [
        LegendEntry {
            mark: Mark {
                color: grey,
                marker: Marker::None,
                line: Line::Dashed,
                hollow: false,
            },
            label: format!("model: {model}"),
        },
        LegendEntry {
            mark: Mark {
                color: grey,
                marker: Marker::Circle,
                line: Line::None,
                hollow: true,
            },
            label: format!(
                "PREDICTION at {} and {} devices (not measured)",
                m.predict_devices[0], m.predict_devices[1]
            ),
        },
    ]
}

/// `ring` for one regime, else each regime's form with its sizes (`ring (8B–8KiB), …`).
fn forms_text(m: &ScaleModel) -> String {
    m.regimes
        .iter()
        .map(|r| {
            let name = r.best_fit().form.name;
            match regime_prefix(m, r) {
                p if p.is_empty() => name.to_string(),
                p => format!("{name} ({})", p.trim_end_matches(": ")),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `S 8B–8KiB: ` when the model has several regimes, else empty.
fn regime_prefix(m: &ScaleModel, r: &ScaleRegime) -> String {
    if m.regimes.len() == 1 {
        return String::new();
    }
    let s = |b: f64| format_bytes(b.round() as u64);
    format!("S {}–{}: ", s(r.from_bytes), s(r.to_bytes))
}

/// The held-out check's sentence (also in the caption) and the figure's notes, per regime.
fn holdout_notes(m: &ScaleModel) -> (String, Vec<String>) {
    let pmax = *m.devices.last().expect("measured device counts");
    let mut held = Vec::new();
    let mut notes = Vec::new();
    for r in &m.regimes {
        let best = r.best_fit();
        let prefix = regime_prefix(m, r);
        held.push(match &best.holdout {
            Ok(h) => format!(
                "{prefix}held-out check: fitted on p = {}, predicted p = {}: median |error| {:.1} %, max {:.1} %",
                h.fit_devices
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                h.test_devices,
                h.median_abs_rel_err * 100.0,
                h.max_abs_rel_err * 100.0
            ),
            Err(e) => format!("{prefix}no held-out check: {e}"),
        });
        if best
            .holdout
            .as_ref()
            .is_ok_and(|h| h.median_abs_rel_err > crate::report::model::UNRELIABLE_HOLDOUT)
        {
            notes.push(format!(
                "UNRELIABLE{}: the form missed the held-out scale by more than {:.0} %",
                if prefix.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", prefix.trim_end_matches(": "))
                },
                crate::report::model::UNRELIABLE_HOLDOUT * 100.0
            ));
        }
    }
    let held = held.join("; ");
    let mut all = vec![held.clone()];
    all.extend(notes);
    all.push(format!("largest measured scale: {pmax} devices"));
    (held, all)
}
