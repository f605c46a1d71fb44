//! Cost model: α–β fit residuals and regimes per set-up, ring/tree forms across device counts
//! with their held-out check, and predictions at larger scales.

use super::{add_figures, bytes_cell, setup_text};
use crate::params::Workload;
use crate::present::doc::{text, Doc, Span};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{Analysis, CollScale};
use crate::report::model::{self, ScaleModel, ScaleRegime};
use crate::report::plot::{Figure, FigureKind};

pub(super) fn cost_model(doc: &mut Doc, a: &Analysis<'_>, figs: &[Figure]) {
    if a.collectives.is_empty() {
        return;
    }
    doc.heading(2, "Cost model: α–β fits and predictions");
    doc.prose("Per set-up fits of time = α + β·F·S are in the collective tables above; their residuals per size are below. Across device counts, each collective's ring and tree forms are fitted, checked on the largest measured scale, and used to predict 2× and 4× that scale (labelled PREDICTION).");
    let mut wls: Vec<Workload> = a.collectives.iter().map(|v| v.workload).collect();
    wls.dedup();
    for w in &wls {
        add_figures(doc, figs, FigureKind::Fit, *w);
    }
    fit_residuals(doc, a);
    fit_regimes(doc, a);
    // Across scales: a summary of every series, then details of the charted ones.
    // A table of "not fitted" rows only says one thing: say it once.
    if a.coll_scaling.iter().any(|c| c.model.is_ok()) {
        doc.heading(3, "Forms across device counts");
        scale_models(doc, a);
    } else if !a.coll_scaling.is_empty() {
        doc.prose("No forms across device counts: no collective series was measured at the two or more device counts (each ≥ 2) that such a fit needs.");
    }
    for w in &wls {
        add_figures(doc, figs, FigureKind::Predict, *w);
    }
    for cs in a.coll_scaling.iter().filter(|c| c.charted) {
        let Ok(m) = &cs.model else {
            continue;
        };
        doc.para(vec![
            Span::Strong(format!("{} {} ({})", cs.workload, cs.label, cs.family.label())),
            text(": every form fitted on all scales, and on the smaller ones to predict the largest."),
        ]);
        forms_table(doc, cs, m);
        predictions_table(doc, a, cs, m);
    }
}

/// Residuals of the α–β fits per size, for the charted variants.
fn fit_residuals(doc: &mut Doc, a: &Analysis<'_>) {
    let mut t = Table::new(&[
        "workload", "variant", "set-up", "S", "median", "fitted", "residual",
    ]);
    for v in a.collectives.iter().filter(|v| v.charted) {
        for c in &v.curves {
            let Ok(h) = &c.regimes else {
                continue;
            };
            for &i in &c.points {
                let e = &a.entries[i];
                let (Some(b), Some(tm), Some(f)) = (e.bytes(), e.fit_time_s(), e.case.busbw_factor)
                else {
                    continue;
                };
                let fit = h.predict_s(f * b as f64);
                t.push(vec![
                    Cell::text(v.workload.to_string()),
                    Cell::text(v.label.clone()),
                    Cell::text(setup_text(a, &c.shape)),
                    bytes_cell(b),
                    Cell::num(tm, NumFmt::Seconds),
                    Cell::num(fit, NumFmt::Seconds),
                    Cell::num((tm - fit) / tm, NumFmt::Percent),
                ]);
            }
        }
    }
    doc.table(
        t,
        "fit_residuals",
        Some(
            "α–β fit residuals per size: each size's median time against its own regime (charted variants)"
                .into(),
        ),
    );
}

/// Every set-up's α–β regimes with their size ranges.
fn fit_regimes(doc: &mut Doc, a: &Analysis<'_>) {
    let mut t = Table::new(&[
        "workload",
        "variant",
        "set-up",
        "regime",
        "from S",
        "to S",
        "sizes",
        "α (µs)",
        "1/β (GB/s)",
        "R²",
        "fit",
    ]);
    for v in &a.collectives {
        for c in &v.curves {
            let Ok(r) = &c.regimes else {
                continue;
            };
            let f = c.factor.filter(|f| *f > 0.0).unwrap_or(1.0);
            for (k, seg) in r.segments.iter().enumerate() {
                t.push(vec![
                    Cell::text(v.workload.to_string()),
                    Cell::text(v.label.clone()),
                    Cell::text(setup_text(a, &c.shape)),
                    Cell::UInt(k as u64 + 1),
                    Cell::num((seg.from_x / f).round(), NumFmt::Bytes),
                    Cell::num((seg.to_x / f).round(), NumFmt::Bytes),
                    Cell::UInt(seg.points as u64),
                    Cell::num(seg.hockney.alpha_s * 1e6, NumFmt::Sig),
                    Cell::opt(seg.hockney.bandwidth_gbps(), NumFmt::Sig),
                    Cell::num(seg.hockney.fit.r2, NumFmt::Fixed(3)),
                    Cell::text(if r.poor.is_empty() {
                        fit_note(&seg.hockney.fit)
                    } else {
                        format!(
                            "POOR: {}; {}",
                            r.poor.join(", "),
                            fit_note(&seg.hockney.fit)
                        )
                    }),
                ]);
            }
        }
    }
    doc.table(
        t,
        "fit_regimes",
        Some("α–β per regime: every set-up's segments, with their size ranges".into()),
    );
}

/// The best form of every series across device counts, with its held-out error.
fn scale_models(doc: &mut Doc, a: &Analysis<'_>) {
    let mut t = Table::new(&[
        "workload",
        "series",
        "family",
        "device counts",
        "sizes",
        "best form",
        "α (µs)",
        "1/β (GB/s)",
        "held-out median |err|",
        "held-out max |err|",
        "note",
    ]);
    for cs in &a.coll_scaling {
        let devs = cs
            .layouts
            .iter()
            .map(|l| l.devices().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        match &cs.model {
            Ok(m) => {
                for r in &m.regimes {
                    let b = r.best_fit();
                    let (med, max) = match &b.holdout {
                        Ok(h) => (
                            Cell::num(h.median_abs_rel_err, NumFmt::Percent),
                            Cell::num(h.max_abs_rel_err, NumFmt::Percent),
                        ),
                        Err(_) => (Cell::Empty, Cell::Empty),
                    };
                    t.push(vec![
                        Cell::text(cs.workload.to_string()),
                        Cell::text(cs.label.clone()),
                        Cell::text(cs.family.label()),
                        Cell::text(devs.clone()),
                        Cell::text(sizes_text(m, r)),
                        Cell::text(b.form.name),
                        Cell::num(b.fit.a * 1e6, NumFmt::Sig),
                        Cell::opt((b.fit.b > 0.0).then(|| 1e-9 / b.fit.b), NumFmt::Sig),
                        med,
                        max,
                        Cell::text(holdout_note(r)),
                    ]);
                }
            }
            Err(e) => t.push(vec![
                Cell::text(cs.workload.to_string()),
                Cell::text(cs.label.clone()),
                Cell::text(cs.family.label()),
                Cell::text(devs),
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::text(format!("not fitted: {e}")),
            ]),
        }
    }
    doc.table(t, "scale_models", None);
}

/// Every form fitted to one series: in-sample, and on the smaller scales against the largest.
fn forms_table(doc: &mut Doc, cs: &CollScale, m: &ScaleModel) {
    let mut t = Table::new(&[
        "sizes",
        "form",
        "formula",
        "α (µs)",
        "1/β (GB/s)",
        "R²",
        "fitted on",
        "tested at",
        "median |err|",
        "max |err|",
        "used",
    ]);
    for (r, k, f) in m
        .regimes
        .iter()
        .flat_map(|r| r.fits.iter().enumerate().map(move |(k, f)| (r, k, f)))
    {
        let (on, at, med, max) = match &f.holdout {
            Ok(h) => (
                Cell::text(
                    h.fit_devices
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                Cell::UInt(u64::from(h.test_devices)),
                Cell::num(h.median_abs_rel_err, NumFmt::Percent),
                Cell::num(h.max_abs_rel_err, NumFmt::Percent),
            ),
            Err(e) => (
                Cell::text(e.to_string()),
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
            ),
        };
        t.push(vec![
            Cell::text(sizes_text(m, r)),
            Cell::text(f.form.name),
            Cell::text(f.form.formula),
            Cell::num(f.fit.a * 1e6, NumFmt::Sig),
            Cell::opt((f.fit.b > 0.0).then(|| 1e-9 / f.fit.b), NumFmt::Sig),
            Cell::num(f.fit.r2, NumFmt::Fixed(3)),
            on,
            at,
            med,
            max,
            Cell::text(if k == r.best { "yes" } else { "" }),
        ]);
    }
    doc.table(t, &format!("forms_{}", cs.workload), None);
}

/// The best form at the largest measured scale and its PREDICTIONs beyond, per size.
fn predictions_table(doc: &mut Doc, a: &Analysis<'_>, cs: &CollScale, m: &ScaleModel) {
    // Predictions at the sizes measured at the largest scale.
    let last = cs.layouts.len() - 1;
    let pmax = cs.layouts[last].devices();
    let mut t = Table {
        columns: vec![
            "S".to_string(),
            format!("median at {pmax}"),
            "form (the size's regime)".to_string(),
            format!("model at {pmax}"),
            format!("PREDICTION at {}", m.predict_devices[0]),
            format!("PREDICTION at {}", m.predict_devices[1]),
        ],
        rows: Vec::new(),
    };
    for (req, row) in &cs.sizes {
        let Some(e) = row[last].map(|i| &a.entries[i]) else {
            continue;
        };
        let (Some(b), Some(tm)) = (e.bytes(), e.fit_time_s()) else {
            continue;
        };
        let b = b as f64;
        t.push(vec![
            bytes_cell(*req),
            Cell::num(tm, NumFmt::Seconds),
            Cell::text(m.regime_for(b).best_fit().form.name),
            Cell::num(m.predict_s(pmax, b), NumFmt::Seconds),
            Cell::num(m.predict_s(m.predict_devices[0], b), NumFmt::Seconds),
            Cell::num(m.predict_s(m.predict_devices[1], b), NumFmt::Seconds),
        ]);
    }
    doc.table(t, &format!("predictions_{}", cs.workload), None);
}

/// A scale regime's sizes: `all` for one regime, else its measured range (`8B–8KiB`).
fn sizes_text(m: &ScaleModel, r: &ScaleRegime) -> String {
    if m.regimes.len() == 1 {
        return "all".to_string();
    }
    let s = |b: f64| crate::units::format_bytes(b.round() as u64);
    format!("{}–{}", s(r.from_bytes), s(r.to_bytes))
}

/// How a regime's form was chosen, or why its predictions are not to be trusted.
fn holdout_note(r: &ScaleRegime) -> String {
    match (&r.best_fit().holdout, r.best_by_holdout) {
        (Err(e), _) => format!("no held-out check: {e}"),
        (Ok(h), _) if h.median_abs_rel_err > model::UNRELIABLE_HOLDOUT => format!(
            "unreliable: held-out error above {:.0} %",
            model::UNRELIABLE_HOLDOUT * 100.0
        ),
        (Ok(_), true) => "chosen on the held-out scale".to_string(),
        (Ok(_), false) => "chosen in-sample".to_string(),
    }
}

/// `ok` or `constrained`, and how many points the robust fit down-weighted.
fn fit_note(f: &model::Fit) -> String {
    let base = if f.constrained { "constrained" } else { "ok" };
    match f.downweighted {
        0 => base.to_string(),
        n => format!("{base}; {n} down-weighted"),
    }
}
