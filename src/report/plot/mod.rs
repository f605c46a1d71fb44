//! Charts: a small figure model ([`Figure`]: panels of series with intervals, reference lines,
//! a legend beside the plot so it never covers data) drawn by plotters as SVG and PNG with one
//! embedded font, and one file per chart kind that turns an [`Analysis`] into figures.
//!
//! Colours and markers are shared by every chart of a report: each set-up (layout, topology,
//! binding, placement, backend) has its own colour, and the marker repeats the topology,
//! binding, placement and backend; see [`super::analyze::Palette`].

pub(crate) mod axis;
pub(crate) mod binding;
pub(crate) mod busbw;
pub(crate) mod ddp;
mod draw;
pub(crate) mod fit;
pub(crate) mod latency;
pub(crate) mod links;
pub(crate) mod nccl;
pub(crate) mod predict;
pub(crate) mod scaling;
pub(crate) mod topology;
pub(crate) mod trend;

use super::analyze::{
    style_key, Analysis, CollectiveView, Curve, Entry, Layout, RatioGroup, RatioKind, StyleKey,
};
use crate::params::ParamKey;
use crate::report::ceilings::{bound_lines, BoundLines, SeriesBound};
use crate::report::error::ReportError as Error;
pub(crate) use axis::{Axis, Scale, Unit};
use std::collections::BTreeSet;
use std::path::Path;

/// Registers the embedded font once per process ([`crate::present::font`]).
pub(crate) fn ensure_font() -> Result<(), Error> {
    if crate::present::font::register() {
        Ok(())
    } else {
        Err(Error::Font)
    }
}

/// An RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rgb(pub u8, pub u8, pub u8);

/// Colours distinct on white: Okabe–Ito's colour-blind-safe set first, then darker and
/// lighter companions (a report with more set-ups than colours repeats them; markers still
/// differ by topology and binding).
const COLORS: [Rgb; 16] = [
    Rgb(0, 114, 178),
    Rgb(213, 94, 0),
    Rgb(0, 158, 115),
    Rgb(204, 121, 167),
    Rgb(230, 159, 0),
    Rgb(86, 180, 233),
    Rgb(85, 85, 85),
    Rgb(140, 86, 75),
    Rgb(148, 103, 189),
    Rgb(188, 189, 34),
    Rgb(23, 190, 207),
    Rgb(127, 39, 4),
    Rgb(0, 68, 27),
    Rgb(8, 48, 107),
    Rgb(231, 41, 138),
    Rgb(166, 118, 29),
];

pub(crate) fn color(i: usize) -> Rgb {
    COLORS[i % COLORS.len()]
}

/// Marker shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    TriangleDown,
    None,
}

pub(crate) fn marker(i: usize) -> Marker {
    [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Diamond,
        Marker::TriangleDown,
    ][i % 5]
}

/// How points of a series are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    Solid,
    Dashed,
    None,
    /// A filled bar per point from `lo` (0 when absent) up to `y`, so bars of two series
    /// can stack; a bar series draws no interval.
    Bar,
}

/// The look of a series (and its legend entry).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mark {
    pub color: Rgb,
    pub marker: Marker,
    pub line: Line,
    /// Hollow markers mark predictions.
    pub hollow: bool,
}

impl Mark {
    pub(crate) fn solid(color: Rgb, marker: Marker) -> Mark {
        Mark {
            color,
            marker,
            line: Line::Solid,
            hollow: false,
        }
    }
}

/// One point with an optional interval (in data units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pt {
    pub x: f64,
    pub y: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl Pt {
    pub(crate) fn new(x: f64, y: f64) -> Pt {
        Pt {
            x,
            y,
            lo: None,
            hi: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    pub mark: Mark,
    pub points: Vec<Pt>,
}

/// A dashed reference line (ideal scaling, ratio 1, a ceiling), labelled at its right end.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RefLine {
    pub points: Vec<(f64, f64)>,
    pub label: String,
    /// Grey when `None`; a ceiling that bounds some series only takes their colour.
    pub color: Option<Rgb>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Panel {
    /// Shown above the panel; empty for single-panel figures.
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub refs: Vec<RefLine>,
    /// Shift each series' bars sideways a little, so overlapping intervals stay apart.
    pub dodge: bool,
}

impl Panel {
    /// Whether anything can be drawn on the panel's axes.
    pub(crate) fn has_data(&self) -> bool {
        self.series
            .iter()
            .flat_map(|s| &s.points)
            .any(|p| self.x.scale.to_coord(p.x).is_some() && self.y.scale.to_coord(p.y).is_some())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LegendEntry {
    pub mark: Mark,
    pub label: String,
}

/// One chart, written as `charts/<stem>.svg` and `charts/<stem>.png`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    /// The chart kind; its name starts the stem and picks the report section.
    pub kind: FigureKind,
    pub workload: crate::params::Workload,
    /// File name without extension: kind, workload, index (`busbw_allreduce_1`).
    pub stem: String,
    pub title: String,
    /// What the chart shows and how to read it (under the chart in report.md/html).
    pub caption: String,
    pub panels: Vec<Panel>,
    pub legend_title: String,
    pub legend: Vec<LegendEntry>,
    /// Short notes printed under the legend (what bars and lines mean).
    pub notes: Vec<String>,
}

/// Which chart a [`Figure`] is. A closed set, so that sections match on it exhaustively;
/// [`FigureKind::as_str`] is the name that outputs carry (file stems, table names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FigureKind {
    Busbw,
    Latency,
    Fit,
    Predict,
    Scaling,
    Topology,
    Binding,
    DdpBreakdown,
    DdpOverlap,
    /// A case's series in the history index (`--history-db`).
    Trend,
    /// An NCCL algorithm × protocol sweep (issue 31).
    Nccl,
}

impl FigureKind {
    /// The name in outputs (unchanged from when kinds were strings).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FigureKind::Busbw => "busbw",
            FigureKind::Latency => "latency",
            FigureKind::Fit => "fit",
            FigureKind::Predict => "predict",
            FigureKind::Scaling => "scaling",
            FigureKind::Topology => "topology",
            FigureKind::Binding => "binding",
            FigureKind::DdpBreakdown => "ddp_breakdown",
            FigureKind::DdpOverlap => "ddp_overlap",
            FigureKind::Trend => "trend",
            FigureKind::Nccl => "nccl",
        }
    }

    /// The chart of a ratio comparison.
    pub(crate) fn of_ratio(kind: RatioKind) -> FigureKind {
        match kind {
            RatioKind::Topology => FigureKind::Topology,
            RatioKind::Binding => FigureKind::Binding,
        }
    }
}

impl std::fmt::Display for FigureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Figure {
    pub(crate) fn size(&self) -> (u32, u32) {
        let n = self.panels.len().max(1) as u32;
        (draw::LEGEND_W + n * draw::PANEL_W, draw::HEIGHT)
    }
    pub(crate) fn to_svg(&self) -> Result<String, Error> {
        ensure_font()?;
        draw::svg(self).map_err(|e| Error::Chart {
            stem: self.stem.clone(),
            source: Box::new(e),
        })
    }
    /// Writes the PNG to `path` (the caller makes the whole report appear atomically).
    pub(crate) fn write_png(&self, path: &Path) -> Result<(), Error> {
        ensure_font()?;
        draw::png(self, path).map_err(|e| Error::ChartFile {
            path: path.to_path_buf(),
            stem: self.stem.clone(),
            source: Box::new(e),
        })
    }
}

/// Every chart of a report, in report order.
pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    let mut v = Vec::new();
    v.extend(busbw::figures(a));
    v.extend(latency::figures(a));
    v.extend(fit::figures(a));
    v.extend(predict::figures(a));
    v.extend(scaling::figures(a));
    v.extend(topology::figures(a));
    v.extend(binding::figures(a));
    v.extend(ddp::figures(a));
    v.extend(nccl::figures(a));
    v.retain(|f| f.panels.iter().any(Panel::has_data));
    v
}

/// Most series one chart holds before it is split: more lines than this cannot be told apart.
pub(crate) const MAX_SERIES: usize = 8;

/// The mark of a set-up: its own colour, a marker per topology/binding/placement/backend.
pub(crate) fn setup_mark(a: &Analysis<'_>, layout: Layout, style: StyleKey) -> Mark {
    Mark::solid(
        color(setup_index(a, layout, style)),
        marker(a.palette.style_index(style)),
    )
}

/// The set-up's place in the palette (its colour, or its shade of grey).
fn setup_index(a: &Analysis<'_>, layout: Layout, style: StyleKey) -> usize {
    a.palette
        .shapes
        .binary_search(&(style, layout))
        .unwrap_or(0)
}

/// The colour of measurements that cannot represent their set-up (greyed, hollow markers).
pub(crate) const GREY: Rgb = Rgb(175, 175, 175);

/// Shades for greyed series, [`GREY`] first: without their colours, two set-ups of one
/// topology (one marker) or the parts of a stacked bar could not be told apart.
const GREYS: [Rgb; 4] = [
    GREY,
    Rgb(115, 115, 115),
    Rgb(205, 205, 205),
    Rgb(145, 145, 145),
];

/// The shade of grey of the `i`-th series or part.
pub(crate) fn grey(i: usize) -> Rgb {
    GREYS[i % GREYS.len()]
}

/// The mark of a size curve: its set-up's, or grey and hollow when not representative.
pub(crate) fn curve_mark(a: &Analysis<'_>, c: &Curve) -> Mark {
    let (layout, style) = (Layout::of(&c.shape), style_key(&c.shape));
    let m = setup_mark(a, layout, style);
    if c.concerns.is_empty() {
        m
    } else {
        Mark {
            color: grey(setup_index(a, layout, style)),
            hollow: true,
            ..m
        }
    }
}

/// The legend label of a size curve, saying when it is not representative.
pub(crate) fn curve_label(a: &Analysis<'_>, c: &Curve) -> String {
    let l = setup_label(a, Layout::of(&c.shape), style_key(&c.shape));
    l + &super::analyze::not_representative_suffix(&c.concerns)
}

/// Legend label of a set-up: the layout, then the set-up fields that vary in the report.
pub(crate) fn setup_label(a: &Analysis<'_>, layout: Layout, style: StyleKey) -> String {
    let rest = super::analyze::style_label(style, &a.varying);
    if rest.is_empty() {
        layout.label()
    } else {
        format!("{} {rest}", layout.label())
    }
}

/// Title of a set-up legend.
pub(crate) const SETUP_LEGEND: &str = "nodes × devices per node";

/// A size curve's point: S against a quantity, with the interval from the samples.
pub(crate) fn size_point(e: &Entry<'_>, quantity: Quantity) -> Option<Pt> {
    let bytes = e.bytes()? as f64;
    let t = e.time_s()?;
    let sp = e.spread;
    match quantity {
        Quantity::Time => Some(Pt {
            x: bytes,
            y: t,
            lo: sp.map(|s| s.p5_s),
            hi: sp.map(|s| s.p95_s),
        }),
        Quantity::Busbw => {
            let bw = e.case.busbw_gbps?;
            let f = e.case.busbw_factor?;
            let to_bw = |s: f64| (s > 0.0).then(|| bytes * f / s / 1e9);
            Some(Pt {
                x: bytes,
                y: bw,
                // the slower sample gives the lower bandwidth
                lo: sp.and_then(|s| to_bw(s.p95_s)),
                hi: sp.and_then(|s| to_bw(s.p5_s)),
            })
        }
    }
}

/// What a size curve plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quantity {
    Time,
    Busbw,
}

/// Splits items into charts of at most [`MAX_SERIES`]: items with equal `group` keys stay
/// together (a group larger than the limit is cut), and whole groups share a chart while they
/// fit, so related set-ups are compared on one chart.
pub(crate) fn chunk<T, K: Ord + Clone>(items: Vec<T>, group: impl Fn(&T) -> K) -> Vec<Vec<T>> {
    chunk_by(items, MAX_SERIES, group)
}

/// Most series of a ratio chart.
pub(crate) const MAX_RATIO_SERIES: usize = 4;

/// [`chunk`] with another limit.
pub(crate) fn chunk_by<T, K: Ord + Clone>(
    items: Vec<T>,
    max: usize,
    group: impl Fn(&T) -> K,
) -> Vec<Vec<T>> {
    let max = max.max(1);
    if items.len() <= max {
        return if items.is_empty() {
            vec![]
        } else {
            vec![items]
        };
    }
    let mut groups: std::collections::BTreeMap<K, Vec<T>> = std::collections::BTreeMap::new();
    for it in items {
        groups.entry(group(&it)).or_default().push(it);
    }
    let mut out: Vec<Vec<T>> = Vec::new();
    let mut cur: Vec<T> = Vec::new();
    for (_, mut g) in groups {
        // A group too big for one chart is split evenly (5 → 3 + 2, not 4 + 1).
        let per = g.len().div_ceil(g.len().div_ceil(max));
        while g.len() > max {
            let rest = g.split_off(per);
            out.push(std::mem::replace(&mut g, rest));
        }
        if cur.len() + g.len() > max {
            out.push(std::mem::take(&mut cur));
        }
        cur.extend(g);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The size curves of one chart: a charted collective variant, at most [`MAX_SERIES`] set-ups.
pub(crate) struct CurveSet<'v> {
    pub view: &'v CollectiveView,
    /// Stem suffix: variant number within the workload, and part when split.
    pub suffix: String,
    pub curves: Vec<&'v Curve>,
}

/// Every charted collective variant, split into charts of at most [`MAX_SERIES`] curves
/// (curves of one topology/binding/placement stay together).
pub(crate) fn curve_sets<'v>(a: &'v Analysis<'_>) -> Vec<CurveSet<'v>> {
    let mut out = Vec::new();
    let mut n_by_wl: std::collections::BTreeMap<crate::params::Workload, usize> =
        Default::default();
    for v in a.collectives.iter().filter(|v| v.charted) {
        let n = n_by_wl.entry(v.workload).or_default();
        *n += 1;
        let parts = chunk(v.curves.iter().collect(), |c: &&Curve| {
            a.palette.style_index(style_key(&c.shape))
        });
        let many = parts.len() > 1;
        for (k, curves) in parts.into_iter().enumerate() {
            out.push(CurveSet {
                view: v,
                suffix: if many {
                    format!("{n}_{}", k + 1)
                } else {
                    n.to_string()
                },
                curves,
            });
        }
    }
    out
}

/// The in-place curves of `set`'s set-ups (same colour and marker, dashed, hollow) when
/// `set` is an out-of-place variant whose in-place twin was measured, and a legend entry and
/// note for them. Left out when the chart already holds more than half of [`MAX_SERIES`]
/// set-ups (twice as many lines could not be told apart; the per-size tables hold them).
pub(crate) fn in_place_series(
    a: &Analysis<'_>,
    set: &CurveSet<'_>,
    quantity: Quantity,
) -> (Vec<Series>, Option<LegendEntry>) {
    if set.view.variant.in_place != Some(false) || set.curves.len() > MAX_SERIES / 2 {
        return (Vec::new(), None);
    }
    let mut key = set.view.variant.clone();
    key.in_place = Some(true);
    let Some(twin) = a.collectives.iter().find(|v| v.variant == key) else {
        return (Vec::new(), None);
    };
    let series: Vec<Series> = set
        .curves
        .iter()
        .filter_map(|c| {
            let c2 = twin.curves.iter().find(|x| x.shape == c.shape)?;
            let points: Vec<Pt> = c2
                .points
                .iter()
                .filter_map(|&i| size_point(&a.entries[i], quantity))
                .filter(|p| p.y > 0.0)
                .collect();
            let m = curve_mark(a, c2);
            (!points.is_empty()).then_some(Series {
                mark: Mark {
                    line: Line::Dashed,
                    hollow: true,
                    ..m
                },
                points,
            })
        })
        .collect();
    let entry = (!series.is_empty()).then(|| LegendEntry {
        mark: Mark {
            color: Rgb(90, 90, 90),
            marker: Marker::Circle,
            line: Line::Dashed,
            hollow: true,
        },
        label: "in-place (dashed, hollow; colour of its set-up)".to_string(),
    });
    (series, entry)
}

/// Ratio charts (pure vs hybrid, binding): one per workload and variant, a series per
/// comparison, y = time ratio against size with the line of equality.
pub(crate) fn ratio_figures(a: &Analysis<'_>, kind: RatioKind, text: &RatioText) -> Vec<Figure> {
    let mut by_wl: std::collections::BTreeMap<crate::params::Workload, Vec<&RatioGroup>> =
        Default::default();
    // Comparisons that cannot name a winner are not charted (their table says why) unless
    // unrepresentative cases were included; then they are greyed.
    for g in a.ratios.iter().filter(|g| {
        g.kind == kind
            && g.charted
            && g.rows.iter().any(|r| r.bytes.is_some())
            && (a.options.include_unrepresentative || g.concerns.is_empty())
    }) {
        by_wl.entry(g.workload).or_default().push(g);
    }
    let mut out = Vec::new();
    for (wl, mut groups) in by_wl {
        // Layouts in numeric order (1×4 before 16×4), in the legend and across charts.
        groups.sort_by_key(|g| (g.layout.devices(), g.layout.nodes));
        // Ratios of neighbouring set-ups lie close together: fewer lines per chart.
        let parts = chunk_by(groups, MAX_RATIO_SERIES, |g| a.palette.style_index(g.style));
        let many = parts.len() > 1;
        for (k, part) in parts.into_iter().enumerate() {
            let mut series = Vec::new();
            let mut legend = Vec::new();
            let mut variant = String::new();
            let (mut x0, mut x1) = (f64::INFINITY, 0.0_f64);
            for g in part {
                let Some((entry, s)) = ratio_series(a, kind, g) else {
                    continue;
                };
                for p in &s.points {
                    x0 = x0.min(p.x);
                    x1 = x1.max(p.x);
                }
                legend.push(entry);
                variant = g.variant.clone();
                series.push(s);
            }
            if series.is_empty() {
                continue;
            }
            let part_s = if many {
                format!("_{}", k + 1)
            } else {
                String::new()
            };
            out.push(Figure {
                kind: FigureKind::of_ratio(kind),
                workload: wl,
                stem: format!("{}_{wl}{part_s}", FigureKind::of_ratio(kind)),
                title: format!("{wl}: {} — {variant}", text.title),
                caption: text.caption.to_string(),
                panels: vec![Panel {
                    title: String::new(),
                    x: Axis::new("size S (log2 scale)", Scale::Log2Bytes),
                    y: Axis::new(text.y_title, Scale::Log2Ratio),
                    series,
                    refs: vec![RefLine {
                        color: None,
                        points: vec![(x0, 1.0), (x1, 1.0)],
                        label: "equal".into(),
                    }],
                    dodge: true,
                }],
                legend_title: format!("{SETUP_LEGEND}, compared"),
                legend,
                notes: text.notes.iter().map(|s| s.to_string()).collect(),
            });
        }
    }
    out
}

/// One comparison's legend entry and ratio series (greyed and hollow when it includes
/// unrepresentative cases); `None` when no row has a size and a positive finite ratio.
fn ratio_series(
    a: &Analysis<'_>,
    kind: RatioKind,
    g: &RatioGroup,
) -> Option<(LegendEntry, Series)> {
    let mut mark = setup_mark(a, g.layout, g.style);
    if !g.concerns.is_empty() {
        mark.color = grey(setup_index(a, g.layout, g.style));
        mark.hollow = true;
    }
    let pts: Vec<Pt> = g
        .rows
        .iter()
        .filter_map(|r| {
            Some(Pt {
                x: r.bytes? as f64,
                y: r.ratio,
                lo: r.interval.map(|i| i.0),
                hi: r.interval.map(|i| i.1),
            })
        })
        .filter(|p| p.y.is_finite() && p.y > 0.0)
        .collect();
    if pts.is_empty() {
        return None;
    }
    let mut keys = a.varying.clone();
    keys.remove(&match kind {
        RatioKind::Topology => ParamKey::Topology,
        RatioKind::Binding => ParamKey::Binding,
    });
    let rest = super::analyze::style_label(g.style, &keys);
    let entry = LegendEntry {
        mark,
        label: format!(
            "{} / {} at {}{}{rest}{}",
            g.num_label,
            g.den_label,
            g.layout.label(),
            if rest.is_empty() { "" } else { " " },
            super::analyze::not_representative_suffix(&g.concerns)
        ),
    };
    Some((entry, Series { mark, points: pts }))
}

/// The ceiling lines of a panel whose x spans `x0..=x1`, from the bound of each series
/// (`bounds[i]` of the series drawn in `colors[i]`; `None`: the file records no fraction), and
/// the caption's sentence on them. A line sits at y = the bound, or at the bound × x where
/// `per_x` (an aggregate over x devices). One grey line where the series share a bound, one
/// in a series' colour per distinct bound, or none and why.
pub(crate) fn ceiling_refs(
    bounds: &[Option<Result<SeriesBound, String>>],
    colors: &[Rgb],
    (x0, x1): (f64, f64),
    per_x: bool,
) -> (Vec<RefLine>, Option<String>) {
    let known: Vec<(usize, Result<SeriesBound, String>)> = bounds
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((i, b.clone()?)))
        .collect();
    if known.is_empty() || !x0.is_finite() || !x1.is_finite() {
        return (Vec::new(), None);
    }
    let line = |b: &SeriesBound, color: Option<Rgb>| {
        let y = |x: f64| if per_x { b.bound * x } else { b.bound };
        RefLine {
            points: vec![(x0, y(x0)), (x1, y(x1))],
            label: if per_x {
                b.label.replacen("ceiling", "ceiling × p", 1)
            } else {
                b.label.clone()
            },
            color,
        }
    };
    let per = if per_x {
        " times the devices p (throughput panel)"
    } else {
        ""
    };
    let list: Vec<Result<SeriesBound, String>> = known.iter().map(|(_, b)| b.clone()).collect();
    match bound_lines(&list) {
        BoundLines::Shared(b) => (
            vec![line(&b, None)],
            Some(format!(
                "Grey dashed line: the ceiling that bounds every series{per}, {} (each figure's fraction of it is in the tables).",
                b.label.trim_start_matches("ceiling: ")
            )),
        ),
        BoundLines::PerSeries(v) => {
            let refs: Vec<RefLine> = v
                .iter()
                .map(|(b, ix)| line(b, Some(colors[known[ix[0]].0])))
                .collect();
            let unknown: BTreeSet<String> = list.iter().filter_map(|b| b.clone().err()).collect();
            let mut s = format!(
                "Dashed lines in a series' colour: the ceiling that bounds it{per} ({}).",
                v.iter()
                    .map(|(b, _)| b.label.trim_start_matches("ceiling: ").to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            if !unknown.is_empty() {
                s.push_str(&format!(
                    " No line for the other series: {}.",
                    unknown.into_iter().collect::<Vec<_>>().join("; ")
                ));
            }
            (refs, Some(s))
        }
        BoundLines::None(why) => (Vec::new(), Some(format!("No ceiling line: {why}."))),
    }
}

/// The words of a ratio chart.
pub(crate) struct RatioText {
    pub title: &'static str,
    pub y_title: &'static str,
    pub caption: &'static str,
    pub notes: &'static [&'static str],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_the_series_limit() {
        let v: Vec<u32> = (0..20).collect();
        let c = chunk(v, |x| x % 2);
        assert!(c.iter().all(|g| g.len() <= MAX_SERIES));
        assert_eq!(c.iter().map(Vec::len).sum::<usize>(), 20);
        assert!(c[0].iter().all(|x| x % 2 == 0));
        // groups of 4 pack two to a chart
        let c = chunk((0..16u32).collect(), |x| x / 4);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0], (0..8).collect::<Vec<_>>());
        assert_eq!(chunk(vec![1, 2], |x| *x).len(), 1);
        assert!(chunk(Vec::<u8>::new(), |x| *x).is_empty());
    }
}
