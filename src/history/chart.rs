//! The chart of `history show --chart FILE.svg` (and of the report's trend section): one
//! panel per series, the median of each run with its interval, in run order; a set-up break
//! is a grey line and a change point a red one, both before the first run of the new level.

use super::query::Series;
use super::HistoryError;
use plotters::prelude::*;

/// Most series one chart holds (one panel each): more would be unreadable.
pub const MAX_PANELS: usize = 12;

const WIDTH: u32 = 900;
const PANEL_HEIGHT: u32 = 320;
const FONT: &str = "sans-serif";

fn chart_err(e: impl std::fmt::Display) -> HistoryError {
    HistoryError::Chart { why: e.to_string() }
}

/// The SVG text of `all`'s panels (their `steps` marked).
pub fn svg(all: &[Series]) -> Result<String, HistoryError> {
    if all.len() > MAX_PANELS {
        return Err(HistoryError::TooManyToChart { count: all.len() });
    }
    if !crate::present::font::register() {
        return Err(chart_err("the embedded font would not load"));
    }
    let mut text = String::new();
    {
        let height = PANEL_HEIGHT * all.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut text, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        if all.is_empty() {
            root.draw(&Text::new(
                "no series match",
                (20, 20),
                (FONT, 16).into_font(),
            ))
            .map_err(chart_err)?;
        }
        for (s, area) in all.iter().zip(root.split_evenly((all.len().max(1), 1))) {
            panel(s, &area)?;
        }
        root.present().map_err(chart_err)?;
    }
    Ok(text)
}

fn panel(
    s: &Series,
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
) -> Result<(), HistoryError> {
    let n = s.points.len();
    let (lo, hi) = s
        .points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.lo), b.max(p.hi))
        });
    // A flat series still needs a y range.
    let pad = ((hi - lo) * 0.08)
        .max(hi.abs() * 0.01)
        .max(f64::MIN_POSITIVE);
    let (y0, y1) = (lo - pad, hi + pad);
    let title = format!(
        "{} on {}",
        crate::present::untrusted::visible(&s.label),
        crate::present::untrusted::visible(&s.cluster)
    );
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(80)
        .build_cartesian_2d(0.5f64..n as f64 + 0.5, y0..y1)
        .map_err(chart_err)?;
    chart
        .configure_mesh()
        .x_desc("run (in start order)")
        .y_desc(format!(
            "{} ({}, {} is better)",
            s.metric,
            s.unit,
            if s.higher_is_better {
                "higher"
            } else {
                "lower"
            }
        ))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .draw()
        .map_err(chart_err)?;
    for st in s.steps.iter().filter(|st| st.kind != "outlier") {
        let x = st.index as f64 + 0.5;
        let color = if st.kind == "setup" {
            RGBColor(150, 150, 150)
        } else {
            RGBColor(213, 94, 0)
        };
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, y0), (x, y1)],
                color.stroke_width(2),
            )))
            .map_err(chart_err)?;
    }
    let blue = RGBColor(0, 114, 178);
    chart
        .draw_series(s.points.iter().enumerate().map(|(i, p)| {
            let x = i as f64 + 1.0;
            PathElement::new(vec![(x, p.lo), (x, p.hi)], blue.stroke_width(1))
        }))
        .map_err(chart_err)?;
    chart
        .draw_series(LineSeries::new(
            s.points
                .iter()
                .enumerate()
                .map(|(i, p)| (i as f64 + 1.0, p.median)),
            blue.stroke_width(1),
        ))
        .map_err(chart_err)?;
    chart
        .draw_series(
            s.points
                .iter()
                .enumerate()
                .map(|(i, p)| Circle::new((i as f64 + 1.0, p.median), 3, blue.filled())),
        )
        .map_err(chart_err)?;
    // Screened outliers: a ring in the change-point colour around the run's dot.
    let orange = RGBColor(213, 94, 0);
    chart
        .draw_series(s.steps.iter().filter(|st| st.kind == "outlier").map(|st| {
            let p = &s.points[st.index];
            Circle::new((st.index as f64 + 1.0, p.median), 6, orange.stroke_width(2))
        }))
        .map_err(chart_err)?;
    Ok(())
}
