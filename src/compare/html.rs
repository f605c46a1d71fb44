//! `compare --format html` (or `--out FILE.html`): the terminal document with every case, and
//! old-vs-new charts per size, since reviewers read those. One chart per variant and set-up
//! with two or more sizes: the baseline's median per size and the candidate's, with the
//! candidate's 95 % interval (the one the verdict used) as a bar; both axes logarithmic.
//! The page is self-contained (SVG inline, no script), as the report's.

use super::analysis::CaseComparison;
use super::gate::Report;
use super::render::{document, Target};
use crate::present::doc::{text, Block, FigureBlock};
use crate::present::html;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// Charts at most (the worst-moved first): a page of hundreds is read by nobody.
const MAX_CHARTS: usize = 24;
const SIZE: (u32, u32) = (760, 380);
const FONT: &str = "sans-serif";

/// One chart's points: (bytes, baseline median, candidate median, candidate interval).
struct Panel<'a> {
    title: String,
    unit: String,
    points: Vec<(f64, f64, f64, [f64; 2])>,
    worst: f64,
    cases: Vec<&'a CaseComparison>,
}

/// The cases with sizes and statistics, grouped by variant and set-up.
fn panels(r: &Report) -> Vec<Panel<'_>> {
    let mut by: BTreeMap<(&str, &str), Vec<&CaseComparison>> = BTreeMap::new();
    for c in &r.comparison.cases {
        if c.axes.bytes.is_some() && c.stats.is_some() {
            by.entry((c.axes.variant.as_str(), c.axes.setup.as_str()))
                .or_default()
                .push(c);
        }
    }
    let mut out: Vec<Panel<'_>> = by
        .into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .filter_map(|((variant, setup), mut cases)| {
            cases.sort_by_key(|c| c.axes.bytes);
            let metric = cases[0].stats?.metric;
            let points = cases
                .iter()
                .filter_map(|c| {
                    let s = c.stats?;
                    let m = s.change;
                    let x = c.axes.bytes? as f64;
                    let ci = [
                        m.median_a * (1.0 + m.ci_low),
                        m.median_a * (1.0 + m.ci_high),
                    ];
                    let ok = [m.median_a, m.median_b, ci[0], ci[1]]
                        .iter()
                        .all(|v| v.is_finite() && *v > 0.0);
                    ok.then_some((x.max(1.0), m.median_a, m.median_b, ci))
                })
                .collect::<Vec<_>>();
            let worst = cases
                .iter()
                .filter_map(|c| c.stats.map(|s| s.worsening().abs()))
                .fold(0.0, f64::max);
            Some(Panel {
                title: format!("{variant} — {setup}"),
                unit: format!("{} ({})", metric.name(), metric.unit()),
                points,
                worst,
                cases,
            })
        })
        .filter(|p| p.points.len() >= 2)
        .collect();
    out.sort_by(|a, b| b.worst.total_cmp(&a.worst));
    out.truncate(MAX_CHARTS);
    out
}

fn draw(p: &Panel<'_>) -> Result<String, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    if !crate::present::font::register() {
        return Err("the embedded font would not load".into());
    }
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, 0.0f64, f64::MAX, 0.0f64);
    for &(x, a, b, [lo, hi]) in &p.points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(a).min(b).min(lo);
        y1 = y1.max(a).max(b).max(hi);
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(crate::present::untrusted::visible(&p.title), (FONT, 15))
            .margin(10)
            .x_label_area_size(38)
            .y_label_area_size(70)
            .build_cartesian_2d(
                (x0 / 1.5..x1 * 1.5).log_scale(),
                (y0 / 1.3..y1 * 1.3).log_scale(),
            )
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("size (bytes)")
            .y_desc(p.unit.clone())
            .x_label_formatter(&|v| crate::units::format_bytes(v.round() as u64))
            .label_style((FONT, 11))
            .axis_desc_style((FONT, 12))
            .draw()
            .map_err(|e| err(&e))?;
        let (blue, orange) = (RGBColor(0, 114, 178), RGBColor(213, 94, 0));
        chart
            .draw_series(LineSeries::new(
                p.points.iter().map(|&(x, a, _, _)| (x, a)),
                blue.stroke_width(2),
            ))
            .map_err(|e| err(&e))?
            .label("baseline (median of runs)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], blue));
        chart
            .draw_series(LineSeries::new(
                p.points.iter().map(|&(x, _, b, _)| (x, b)),
                orange.stroke_width(2),
            ))
            .map_err(|e| err(&e))?
            .label("candidate, with its 95 % interval")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], orange));
        chart
            .draw_series(p.points.iter().map(|&(x, _, _, [lo, hi])| {
                PathElement::new(vec![(x, lo), (x, hi)], orange.stroke_width(1))
            }))
            .map_err(|e| err(&e))?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font((FONT, 11))
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

/// The whole page.
pub(crate) fn page(r: &Report) -> String {
    let mut doc = document(r, Target::Terminal { all: true });
    let panels = panels(r);
    let mut svgs = Vec::new();
    if !panels.is_empty() {
        doc.heading(2, "Old vs new, per size");
        doc.prose(&format!(
            "One chart per variant and set-up with two or more sizes ({} at most, the most moved first): the baseline's and the candidate's median per size (of their runs, or batches with one run a side), and the candidate's 95 % interval, the one its verdict used.",
            MAX_CHARTS
        ));
        for p in &panels {
            match draw(p) {
                Ok(svg) => {
                    doc.blocks.push(Block::Figure(FigureBlock {
                        figure: svgs.len(),
                        stem: format!("compare_{}", svgs.len() + 1),
                        title: p.title.clone(),
                        caption: format!(
                            "{}: {} cases; verdicts {}.",
                            p.unit,
                            p.cases.len(),
                            verdicts(&p.cases)
                        ),
                    }));
                    svgs.push(svg);
                }
                Err(why) => doc.para(vec![text(format!(
                    "{}: the chart could not be drawn ({why}).",
                    p.title
                ))]),
            }
        }
    }
    html::render(&doc, &svgs, &html::nonce())
}

/// `3 regressed, 2 inconclusive`.
fn verdicts(cases: &[&CaseComparison]) -> String {
    let mut n: BTreeMap<String, usize> = BTreeMap::new();
    for c in cases {
        *n.entry(c.verdict.name().to_string()).or_default() += 1;
    }
    n.iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}
