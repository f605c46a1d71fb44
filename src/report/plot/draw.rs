//! Draws a [`Figure`] with plotters on any backend (SVG text, PNG file). plotters lays out the
//! axes, ticks and grid; series, intervals, reference lines and the legend are drawn in pixel
//! coordinates so dashes, hollow markers and a legend beside the plot are exact.

use super::axis::Scale;
use super::{Figure, Line, Mark, Marker, Panel, Rgb};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Width of the legend column, pixels.
pub(super) const LEGEND_W: u32 = 300;
/// Width of one panel, pixels.
pub(super) const PANEL_W: u32 = 760;
pub(super) const HEIGHT: u32 = 600;
const TITLE_H: u32 = 56;
const FONT: &str = "sans-serif";

type Res<T> = Result<T, DrawError>;

/// Why a chart could not be drawn.
#[derive(Debug)]
pub(super) enum DrawError {
    /// plotters failed on its backend (the SVG text or the PNG file); displays as plotters'
    /// own message, which the caller prefixes with the chart's name.
    Plotters(Box<dyn std::error::Error + Send + Sync>),
}

impl std::fmt::Display for DrawError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DrawError::Plotters(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DrawError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DrawError::Plotters(e) => Some(e.as_ref()),
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<DrawingAreaErrorKind<E>> for DrawError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        DrawError::Plotters(Box::new(e))
    }
}

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

pub(super) fn svg(fig: &Figure) -> Res<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, fig.size()).into_drawing_area();
        draw(fig, &root)?;
        root.present()?;
    }
    Ok(out)
}

pub(super) fn png(fig: &Figure, path: &Path) -> Res<()> {
    let root = BitMapBackend::new(path, fig.size()).into_drawing_area();
    draw(fig, &root)?;
    Ok(root.present()?)
}

fn draw<DB: DrawingBackend<ErrorType: 'static>>(
    fig: &Figure,
    root: &DrawingArea<DB, Shift>,
) -> Res<()> {
    root.fill(&WHITE)?;
    let (w, _) = root.dim_in_pixel();
    // Title: wrapped to the figure width, in a smaller font when it needs more lines, and
    // never losing its not-representative warning (that part is what a reader must see).
    let width = w.saturating_sub(40);
    let fits = |s: &str, size: u32| {
        let font = (FONT, size).into_font().color(&BLACK);
        root.estimate_text_size(s, &font)
            .map_or(true, |(tw, _)| tw <= width)
    };
    let (size, lines) = fit_title(&fig.title, fits);
    let title_font = (FONT, size).into_font().color(&BLACK);
    for (i, l) in lines.iter().enumerate() {
        root.draw(&Text::new(
            l.clone(),
            (w as i32 / 2, TITLE_TOP + title_step(size) * i as i32),
            title_font.clone().pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    let (_, body) = root.split_vertically(TITLE_H);
    let (plots, legend) = body.split_horizontally(w - LEGEND_W);
    let areas = plots.split_evenly((1, fig.panels.len().max(1)));
    for (area, panel) in areas.iter().zip(&fig.panels) {
        draw_panel(root, area, panel)?;
    }
    draw_legend(root, &legend, fig)
}

/// The drawable coordinates of a panel's data, as (x range, y range), padded.
fn ranges(panel: &Panel) -> Option<((f64, f64), (f64, f64))> {
    let (xs, ys) = (panel.x.scale, panel.y.scale);
    let mut xr = (f64::INFINITY, f64::NEG_INFINITY);
    let mut yr = (f64::INFINITY, f64::NEG_INFINITY);
    let grow = |r: &mut (f64, f64), v: f64| {
        r.0 = r.0.min(v);
        r.1 = r.1.max(v);
    };
    for s in &panel.series {
        for p in &s.points {
            let (Some(x), Some(y)) = (xs.to_coord(p.x), ys.to_coord(p.y)) else {
                continue;
            };
            grow(&mut xr, x);
            grow(&mut yr, y);
            for v in [p.lo, p.hi].into_iter().flatten() {
                if let Some(c) = ys.to_coord(v) {
                    grow(&mut yr, c);
                }
            }
        }
    }
    if !xr.0.is_finite() {
        return None;
    }
    if let Scale::Linear(_) = ys {
        // Linear quantities (efficiency) read truthfully only from zero.
        grow(&mut yr, 0.0);
    }
    for r in &panel.refs {
        for &(x, y) in &r.points {
            if let (Some(cx), Some(cy)) = (xs.to_coord(x), ys.to_coord(y)) {
                if cx >= xr.0 - 1e-9 && cx <= xr.1 + 1e-9 {
                    grow(&mut yr, cy);
                }
            }
        }
    }
    Some((pad(xr, xs, 0.04), pad(yr, ys, 0.07)))
}

fn pad(r: (f64, f64), s: Scale, frac: f64) -> (f64, f64) {
    let span = r.1 - r.0;
    if span <= 1e-12 {
        let d = if s.is_log() {
            0.5
        } else {
            (r.0.abs() * 0.1).max(0.5)
        };
        return (r.0 - d, r.1 + d);
    }
    (r.0 - span * frac, r.1 + span * frac)
}

fn draw_panel<DB: DrawingBackend<ErrorType: 'static>>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
) -> Res<()> {
    let Some((xr, yr)) = ranges(panel) else {
        return Ok(());
    };
    let chart = draw_axes(area, panel, xr, yr)?;
    let (xs, ys) = (panel.x.scale, panel.y.scale);
    let px = |x: f64, y: f64| -> Option<(i32, i32)> {
        Some(chart.backend_coord(&(xs.to_coord(x)?, ys.to_coord(y)?)))
    };
    // Reference lines first, so data sits on top.
    draw_refs(root, panel, &px)?;
    let n_series = panel
        .series
        .iter()
        .filter(|s| s.mark.line != Line::Bar && s.points.iter().any(|p| p.lo.is_some()))
        .count();
    let mut k_bar: i32 = 0;
    for s in &panel.series {
        // Dodged bars: series k of n sits (k − (n−1)/2)·4 px from the point.
        if s.mark.line == Line::Bar {
            draw_bars(root, s, &px)?;
            continue;
        }
        // Bars sit beside the marker, not under it (a tight interval would hide there);
        // dodged series spread further apart so overlapping intervals stay apart.
        let dx = if panel.dodge && s.points.iter().any(|p| p.lo.is_some()) {
            let d = (2 * k_bar - (n_series as i32 - 1)) * 3;
            k_bar += 1;
            BAR_BESIDE + d
        } else {
            BAR_BESIDE
        };
        draw_series(root, s, dx, &px)?;
    }
    Ok(())
}

/// The panel's chart over the padded ranges (`xr`, `yr`, chart coordinates), with its
/// caption, axes, tick labels and grid drawn.
fn draw_axes<'c, DB: DrawingBackend<ErrorType: 'static>>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> Res<ChartContext<'c, DB, Cartesian2d<Ticked, Ticked>>> {
    let (xs, ys) = (panel.x.scale, panel.y.scale);
    let (xb, xl) = if xs == Scale::Log2Bytes {
        // Sizes: ticks where something was measured, not at powers of two between them. A
        // model's curve (a line without markers) is sampled between the measured sizes: its
        // points are no sizes to label (they printed as `29.34416…B` over each other).
        let measured = |s: &super::Series| s.mark.marker != Marker::None;
        let any_marked = panel.series.iter().any(measured);
        let mut at: Vec<f64> = panel
            .series
            .iter()
            .filter(|s| !any_marked || measured(s))
            .flat_map(|s| &s.points)
            .filter_map(|p| xs.to_coord(p.x))
            .collect();
        at.sort_by(f64::total_cmp);
        at.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
        super::axis::measured_byte_ticks(&at, x0, x1)
    } else {
        xs.ticks(x0, x1)
    };
    let (yb, yl) = ys.ticks(y0, y1);
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(10)
        .margin_right(28)
        .x_label_area_size(62)
        .y_label_area_size(92);
    if !panel.title.is_empty() {
        builder.caption(&panel.title, (FONT, 18));
    }
    let mut chart = builder.build_cartesian_2d(
        Ticked {
            lo: x0,
            hi: x1,
            bold: xb,
            light: xl,
        },
        Ticked {
            lo: y0,
            hi: y1,
            bold: yb,
            light: yl,
        },
    )?;
    let xf = |v: &f64| xs.label(*v);
    let yf = |v: &f64| ys.label(*v);
    chart
        .configure_mesh()
        .x_desc(panel.x.title.as_str())
        .y_desc(panel.y.title.as_str())
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(238, 238, 238))
        .axis_style(RGBColor(90, 90, 90))
        .draw()?;
    Ok(chart)
}

/// The panel's reference lines (dashed; grey unless coloured), each labelled at its end.
fn draw_refs<DB: DrawingBackend<ErrorType: 'static>>(
    root: &DrawingArea<DB, Shift>,
    panel: &Panel,
    px: &dyn Fn(f64, f64) -> Option<(i32, i32)>,
) -> Res<()> {
    for r in &panel.refs {
        let grey = r.color.map_or(RGBColor(120, 120, 120), rgb);
        let pts: Vec<(i32, i32)> = r.points.iter().filter_map(|&(x, y)| px(x, y)).collect();
        for seg in dashes(&pts, 7.0, 5.0) {
            root.draw(&PathElement::new(seg, grey.stroke_width(2)))?;
        }
        if let Some(&(lx, ly)) = pts.last() {
            root.draw(&Text::new(
                r.label.clone(),
                (lx - 4, ly - 6),
                (FONT, 14)
                    .into_font()
                    .color(&grey)
                    .pos(Pos::new(HPos::Right, VPos::Bottom)),
            ))?;
        }
    }
    Ok(())
}

/// A line or point series: its line, its intervals `dx` pixels to the side, its markers.
fn draw_series<DB: DrawingBackend<ErrorType: 'static>>(
    root: &DrawingArea<DB, Shift>,
    s: &super::Series,
    dx: i32,
    px: &dyn Fn(f64, f64) -> Option<(i32, i32)>,
) -> Res<()> {
    let c = rgb(s.mark.color);
    let pts: Vec<(i32, i32)> = s.points.iter().filter_map(|p| px(p.x, p.y)).collect();
    match s.mark.line {
        Line::Solid if pts.len() > 1 => {
            root.draw(&PathElement::new(pts.clone(), c.stroke_width(2)))?;
        }
        Line::Dashed if pts.len() > 1 => {
            for seg in dashes(&pts, 9.0, 6.0) {
                root.draw(&PathElement::new(seg, c.stroke_width(2)))?;
            }
        }
        _ => {}
    }
    for &p in &pts {
        draw_marker(root, p, s.mark)?;
    }
    // Intervals after the markers, beside them: a vertical bar with caps, 2 px wide, so
    // even an interval narrower than a marker shows (as its two caps).
    let bar = c.stroke_width(2);
    for p in &s.points {
        let (Some(lo), Some(hi)) = (p.lo, p.hi) else {
            continue;
        };
        let (Some(a), Some(b)) = (px(p.x, lo), px(p.x, hi)) else {
            continue;
        };
        let x = a.0 + dx;
        if (a.1 - b.1).abs() >= 2 {
            root.draw(&PathElement::new(vec![(x, a.1), (x, b.1)], bar))?;
        }
        for y in [a.1, b.1] {
            root.draw(&PathElement::new(vec![(x - 3, y), (x + 3, y)], bar))?;
        }
    }
    Ok(())
}

/// How far right of its point an interval bar is drawn, pixels (markers are 5–6 px wide
/// either side).
const BAR_BESIDE: i32 = 9;

/// Half the width of a bar, pixels.
const BAR_HALF_W: i32 = 14;

/// A bar series: a filled rectangle per point from `lo` (or 0) to `y`, outlined in white so
/// stacked parts stay apart.
fn draw_bars<DB: DrawingBackend<ErrorType: 'static>>(
    root: &DrawingArea<DB, Shift>,
    s: &super::Series,
    px: &dyn Fn(f64, f64) -> Option<(i32, i32)>,
) -> Res<()> {
    let c = rgb(s.mark.color);
    for p in &s.points {
        let (Some(top), Some(bottom)) = (px(p.x, p.y), px(p.x, p.lo.unwrap_or(0.0))) else {
            continue;
        };
        let (a, b) = ((top.0 - BAR_HALF_W, top.1), (top.0 + BAR_HALF_W, bottom.1));
        root.draw(&Rectangle::new([a, b], c.filled()))?;
        root.draw(&Rectangle::new([a, b], WHITE.stroke_width(1)))?;
    }
    Ok(())
}

/// A linear coordinate over chart coordinates with the axis's own tick positions (plotters'
/// `WithKeyPoints` cannot take a label formatter).
struct Ticked {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f64::from(limit.1 - limit.0) * t).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Splits a pixel polyline into dashes of `on` pixels separated by `off` pixels.
fn dashes(pts: &[(i32, i32)], on: f64, off: f64) -> Vec<Vec<(i32, i32)>> {
    let mut out = Vec::new();
    let mut cur: Vec<(i32, i32)> = Vec::new();
    let mut drawing = true;
    let mut left = on;
    for w in pts.windows(2) {
        let (a, b) = (
            (w[0].0 as f64, w[0].1 as f64),
            (w[1].0 as f64, w[1].1 as f64),
        );
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let mut t = 0.0;
        while t < len {
            let step = left.min(len - t);
            let p0 = (a.0 + (b.0 - a.0) * t / len, a.1 + (b.1 - a.1) * t / len);
            let t1 = t + step;
            let p1 = (a.0 + (b.0 - a.0) * t1 / len, a.1 + (b.1 - a.1) * t1 / len);
            if drawing {
                if cur.is_empty() {
                    cur.push((p0.0.round() as i32, p0.1.round() as i32));
                }
                cur.push((p1.0.round() as i32, p1.1.round() as i32));
            }
            left -= step;
            t = t1;
            if left <= 1e-9 {
                if drawing && !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                drawing = !drawing;
                left = if drawing { on } else { off };
            }
        }
    }
    if cur.len() > 1 {
        out.push(cur);
    }
    out
}

fn draw_marker<DB: DrawingBackend<ErrorType: 'static>>(
    root: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    m: Mark,
) -> Res<()> {
    let c = rgb(m.color);
    // Hollow markers (predictions) are white inside with a coloured ring.
    let style = if m.hollow {
        c.stroke_width(2)
    } else {
        c.filled()
    };
    let poly = |pts: Vec<(i32, i32)>| -> Res<()> {
        let abs: Vec<(i32, i32)> = pts.iter().map(|(dx, dy)| (x + dx, y + dy)).collect();
        if m.hollow {
            root.draw(&Polygon::new(abs.clone(), WHITE.filled()))?;
            let mut ring = abs.clone();
            ring.push(abs[0]);
            Ok(root.draw(&PathElement::new(ring, style))?)
        } else {
            Ok(root.draw(&Polygon::new(abs, style))?)
        }
    };
    match m.marker {
        Marker::None => Ok(()),
        Marker::Circle => {
            if m.hollow {
                root.draw(&Circle::new((x, y), 5, WHITE.filled()))?;
            }
            Ok(root.draw(&Circle::new((x, y), 5, style))?)
        }
        Marker::Square => poly(vec![(-4, -4), (4, -4), (4, 4), (-4, 4)]),
        Marker::Triangle => poly(vec![(0, -6), (5, 4), (-5, 4)]),
        Marker::TriangleDown => poly(vec![(0, 6), (5, -4), (-5, -4)]),
        Marker::Diamond => poly(vec![(0, -6), (5, 0), (0, 6), (-5, 0)]),
    }
}

const TITLE_TOP: i32 = 6;
/// Title font sizes tried in turn; the smallest fits three lines in [`TITLE_H`].
const TITLE_SIZES: [u32; 4] = [22, 19, 16, 14];

fn title_step(size: u32) -> i32 {
    size as i32 + 1
}

/// The title's font size and lines: the largest size at which the whole title fits the
/// lines [`TITLE_H`] holds. Where none does, the smallest size is used and the head is cut
/// with "…", keeping a trailing " — NOT REPRESENTATIVE: …" whole (its own lines).
/// `fits(text, size)` says whether one line fits the width.
fn fit_title(title: &str, fits: impl Fn(&str, u32) -> bool) -> (u32, Vec<String>) {
    let max_lines = |size: u32| ((TITLE_H as i32 - TITLE_TOP) / title_step(size)).max(1) as usize;
    for size in TITLE_SIZES {
        let lines = wrap_with(title, |s| fits(s, size));
        if lines.len() <= max_lines(size) {
            return (size, lines);
        }
    }
    let size = TITLE_SIZES[TITLE_SIZES.len() - 1];
    let n = max_lines(size);
    let (head, warning) = match title.find(" — NOT REPRESENTATIVE") {
        Some(i) => (&title[..i], title[i..].trim_start_matches(" — ")),
        None => (title, ""),
    };
    let mut tail = if warning.is_empty() {
        Vec::new()
    } else {
        wrap_with(warning, |s| fits(s, size))
    };
    tail.truncate(n.saturating_sub(1).max(1));
    let room = n
        .saturating_sub(tail.len())
        .max(usize::from(tail.is_empty()));
    let mut lines = wrap_with(head, |s| fits(s, size));
    if lines.len() > room {
        lines.truncate(room);
        if let Some(last) = lines.last_mut() {
            // drop words until the ellipsis fits
            while !fits(&format!("{last} …"), size) && last.contains(' ') {
                let cut = last.rfind(' ').unwrap_or(0);
                last.truncate(cut);
            }
            last.push_str(" …");
        }
    }
    lines.extend(tail);
    (size, lines)
}

/// Greedy word wrap to `width` pixels.
fn wrap<DB: DrawingBackend<ErrorType: 'static>>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    font: &TextStyle<'_>,
    width: u32,
) -> Vec<String> {
    wrap_with(text, |s| {
        area.estimate_text_size(s, font)
            .map_or(true, |(w, _)| w <= width)
    })
}

/// Greedy word wrap: `fits(line)` says whether a line fits.
fn wrap_with(text: &str, fits: impl Fn(&str) -> bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let cand = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if fits(&cand) || cur.is_empty() {
            cur = cand;
        } else {
            lines.push(std::mem::replace(&mut cur, word.to_string()));
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Legend type sizes (px) and their line heights, largest first.
const LEGEND_SIZES: [(u32, i32); 3] = [(15, 18), (13, 16), (12, 14)];

/// The legend's type size and line height: the largest of [`LEGEND_SIZES`] at which every
/// entry fits `room_px` (each entry its wrapped lines plus 8 px), else the smallest (the
/// drawer then shows the entries that fit and counts the rest). A smaller legend beats one
/// that hides most series behind "… more". `lines(label, size)` wraps one label.
fn fit_legend(labels: &[&str], room_px: i32, lines: impl Fn(&str, u32) -> usize) -> (u32, i32) {
    let need = |(size, line_h): (u32, i32)| -> i32 {
        labels
            .iter()
            .map(|l| lines(l, size) as i32 * line_h + 8)
            .sum()
    };
    LEGEND_SIZES
        .into_iter()
        .find(|&s| need(s) <= room_px)
        .unwrap_or(LEGEND_SIZES[LEGEND_SIZES.len() - 1])
}

fn draw_legend<DB: DrawingBackend<ErrorType: 'static>>(
    root: &DrawingArea<DB, Shift>,
    legend: &DrawingArea<DB, Shift>,
    fig: &Figure,
) -> Res<()> {
    let (ox, oy) = (
        legend.get_base_pixel().0 + 8,
        legend.get_base_pixel().1 + 16,
    );
    let (_, h) = root.dim_in_pixel();
    let bottom = h as i32 - 10;
    let head = (FONT, 16).into_font().color(&BLACK);
    let note = (FONT, 13).into_font().color(&RGBColor(80, 80, 80));
    let width = LEGEND_W - 36;
    let mut y = oy;
    for l in wrap(root, &fig.legend_title, &head, width) {
        root.draw(&Text::new(l, (ox, y), head.clone()))?;
        y += 20;
    }
    y += 6;
    let note_lines: Vec<String> = fig
        .notes
        .iter()
        .flat_map(|n| wrap(root, n, &note, width))
        .collect();
    let notes_h = note_lines.len() as i32 * 17 + 12;
    let labels: Vec<&str> = fig.legend.iter().map(|e| e.label.as_str()).collect();
    let (size, line_h) = fit_legend(&labels, bottom - notes_h - 18 - y, |l, size| {
        wrap(root, l, &(FONT, size).into_font().color(&BLACK), width - 44).len()
    });
    let text = (FONT, size).into_font().color(&BLACK);
    let mut shown = 0;
    for e in &fig.legend {
        let lines = wrap(root, &e.label, &text, width - 44);
        let need = lines.len() as i32 * line_h + 8;
        if y + need > bottom - notes_h - 18 {
            break;
        }
        let cy = y + 9;
        draw_swatch(root, (ox, cy), e.mark)?;
        for (i, l) in lines.iter().enumerate() {
            root.draw(&Text::new(
                l.clone(),
                (ox + 44, y + line_h * i as i32),
                text.clone(),
            ))?;
        }
        y += need;
        shown += 1;
    }
    if shown < fig.legend.len() {
        root.draw(&Text::new(
            format!("… {} more (see the tables)", fig.legend.len() - shown),
            (ox, y),
            note.clone(),
        ))?;
        y += 18;
    }
    let mut ny = y + 14;
    for l in note_lines {
        root.draw(&Text::new(l, (ox, ny), note.clone()))?;
        ny += 17;
    }
    Ok(())
}

/// A legend entry's key at (`ox`, `cy`): the series' line (or bar) with its marker on it.
fn draw_swatch<DB: DrawingBackend<ErrorType: 'static>>(
    root: &DrawingArea<DB, Shift>,
    (ox, cy): (i32, i32),
    mark: Mark,
) -> Res<()> {
    let c = rgb(mark.color);
    match mark.line {
        Line::Solid => root.draw(&PathElement::new(
            vec![(ox, cy), (ox + 34, cy)],
            c.stroke_width(2),
        ))?,
        Line::Dashed => {
            for seg in dashes(&[(ox, cy), (ox + 34, cy)], 7.0, 4.0) {
                root.draw(&PathElement::new(seg, c.stroke_width(2)))?;
            }
        }
        Line::None => {}
        Line::Bar => root.draw(&Rectangle::new(
            [(ox + 9, cy - 8), (ox + 25, cy + 8)],
            c.filled(),
        ))?,
    }
    draw_marker(root, (ox + 17, cy), mark)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashes_alternate_along_the_path() {
        let d = dashes(&[(0, 0), (30, 0)], 7.0, 5.0);
        // 0-7 on, 7-12 off, 12-19 on, 19-24 off, 24-30 on
        assert_eq!(d.len(), 3);
        assert_eq!(d[0], vec![(0, 0), (7, 0)]);
        assert_eq!(d[1], vec![(12, 0), (19, 0)]);
        assert_eq!(d[2], vec![(24, 0), (30, 0)]);
        // a dash continues around a corner
        let d = dashes(&[(0, 0), (4, 0), (4, 10)], 7.0, 5.0);
        assert_eq!(d[0], vec![(0, 0), (4, 0), (4, 3)]);
    }

    /// A line fits when it has at most `chars` characters at size 22, proportionally more
    /// at smaller sizes (a stand-in for the font's measure).
    fn fits_chars(chars: usize) -> impl Fn(&str, u32) -> bool {
        move |s: &str, size: u32| s.chars().count() * size as usize <= chars * 22
    }

    #[test]
    fn a_legend_shrinks_its_type_before_it_hides_series() {
        // Lines of at most 30 characters at 22 px: 44 at 15 px, 50 at 13, 55 at 12.
        let fits = fits_chars(30);
        let lines = |l: &str, size: u32| wrap_with(l, |s| fits(s, size)).len();
        let short = ["pure bind=core", "hybrid bind=none"];
        assert_eq!(fit_legend(&short, 500, lines), (15, 18));
        // Eight entries of ~100 characters (the ddp overlap legend of a study run on a busy
        // host): 3 lines each at 15 px (8 × 62 = 496 px) do not fit 420 px; at 13 px they do.
        let long = "1 node, 2 devices: 256x256x8 f32 hybrid core fill — NOT REPRESENTATIVE: host busy, oversubscribed";
        let eight = [long; 8];
        assert_eq!(lines(long, 15), 3);
        assert_eq!(fit_legend(&eight, 420, lines), (13, 16));
        // Room for none at any size: the smallest, and the drawer counts what it leaves out.
        assert_eq!(fit_legend(&eight, 100, lines), (12, 14));
        // No entries: the largest.
        assert_eq!(fit_legend(&[], 0, lines), (15, 18));
    }

    #[test]
    fn a_short_title_keeps_the_large_font() {
        let (size, lines) = fit_title("allreduce busbw", fits_chars(60));
        assert_eq!((size, lines), (22, vec!["allreduce busbw".to_string()]));
    }

    #[test]
    fn a_long_title_shrinks_and_keeps_every_word() {
        let t = "ddp_step: step time, compute vs exposed communication — 64x48x3+200x40 f32 \
                 cpu bucket=1B first=cap batch=8 weak pure none fill threads=1 progress=test, \
                 2 devices per node — NOT REPRESENTATIVE: host_busy";
        let (size, lines) = fit_title(t, fits_chars(90));
        assert!(size < 22, "{size}");
        assert_eq!(
            lines.join(" "),
            t.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        assert!(lines.len() <= 3);
    }

    #[test]
    fn a_title_too_long_for_any_size_keeps_its_warning() {
        let head = "word ".repeat(200);
        let t = format!("{head}— NOT REPRESENTATIVE: host_busy, oversubscribed");
        let (size, lines) = fit_title(&t, fits_chars(60));
        assert_eq!(size, 14);
        assert!(lines.len() <= 3, "{lines:?}");
        let all = lines.join(" ");
        assert!(
            all.ends_with("NOT REPRESENTATIVE: host_busy, oversubscribed"),
            "{all}"
        );
        assert!(all.contains("word …"), "{all}");
        for l in &lines {
            assert!(fits_chars(60)(l, 14), "{l}");
        }
    }
}
