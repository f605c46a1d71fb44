//! The links heat map: the N×N bandwidth matrix of `links.json`, each cell coloured by its
//! bandwidth over the median in 10 % steps of a perceptual sequential scale (viridis: dark is
//! slow), suspects outlined. Drawn in pixel coordinates on any plotters backend (SVG text, PNG
//! file) like the other charts.
//!
//! Beyond [`MAX_SIDE`] nodes a drawn cell is a k×k block of pairs coloured by its slowest pair,
//! so one slow link stays visible at 1,024 nodes while the SVG stays a bounded size; runs of
//! equal cells in a row are one rectangle.

use super::draw::DrawError;
use super::ensure_font;
use super::Rgb;
use crate::report::error::ReportError as Error;
use crate::results::links::LinksFile;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Most drawn cells per side; more nodes are drawn as blocks of pairs.
pub(crate) const MAX_SIDE: usize = 128;
/// Most axis labels per side (one per node up to this; every k-th node beyond).
pub(crate) const MAX_LABELS: usize = 64;
/// The matrix's side in pixels (at most; whole pixels per drawn cell).
const MATRIX_PX: i32 = 768;
/// Room for the row labels, the column labels (turned upright), the title and the legend.
const LEFT: i32 = 190;
const TOP: i32 = 90 + 180;
const LEGEND_W: i32 = 330;
const BOTTOM: i32 = 40;
const MAX_CELL_PX: i32 = 64;
const MIN_WIDTH: i32 = 1000;
const LEGEND_H: i32 = 440;
const FONT: &str = "sans-serif";

/// The stem of the chart in a report (`charts/links.svg`).
pub(crate) const STEM: &str = "links";

/// Viridis at 12 even steps, dark (slow) to light (fast): perceptually uniform, readable in
/// grey and by colour-blind readers.
const SCALE: [Rgb; 12] = [
    Rgb(0x44, 0x01, 0x54),
    Rgb(0x48, 0x21, 0x73),
    Rgb(0x43, 0x3e, 0x85),
    Rgb(0x38, 0x58, 0x8c),
    Rgb(0x2d, 0x70, 0x8e),
    Rgb(0x25, 0x85, 0x8e),
    Rgb(0x1e, 0x9b, 0x8a),
    Rgb(0x2a, 0xb0, 0x7f),
    Rgb(0x52, 0xc5, 0x69),
    Rgb(0x86, 0xd5, 0x49),
    Rgb(0xc2, 0xdf, 0x23),
    Rgb(0xfd, 0xe7, 0x25),
];
/// Measured but left out of the attribution (same-host pairs when the job spans hosts).
const NOT_ANALYSED: Rgb = Rgb(200, 200, 200);
/// Not measured: grey with a hatch line.
const UNMEASURED: Rgb = Rgb(235, 235, 235);
const HATCH: Rgb = Rgb(150, 150, 150);
/// A suspect confirmed in isolation; one named but not confirmed (or not re-measured).
pub(crate) const CONFIRMED: Rgb = Rgb(0xe8, 0x00, 0x1c);
pub(crate) const UNCONFIRMED: Rgb = Rgb(0, 0, 0);

/// What one drawn cell shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shade {
    /// The diagonal: blank.
    Blank,
    NotAnalysed,
    Unmeasured,
    /// A step of [`SCALE`] (the slowest pair of a block).
    Step(usize),
}

/// The step of a bandwidth ratio: 10 % wide, the last one "110 % and above".
fn step(ratio: f64) -> usize {
    ((ratio * 10.0).floor().max(0.0) as usize).min(SCALE.len() - 1)
}

/// The step's legend text.
fn step_label(s: usize) -> String {
    if s == SCALE.len() - 1 {
        format!("≥ {} %", s * 10)
    } else if s == 0 {
        "< 10 %".into()
    } else {
        format!("{}–{} %", s * 10, s * 10 + 10)
    }
}

/// Where things go: the node order and the pixel grid.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Ranks in drawing order (host name, then rank).
    pub order: Vec<usize>,
    /// `pos[rank]`: its place in `order`.
    pub pos: Vec<usize>,
    /// Pairs per drawn cell along a side (1 up to [`MAX_SIDE`] nodes).
    pub k: usize,
    /// Drawn cells per side.
    pub side: usize,
    /// Pixels per drawn cell.
    pub cell_px: i32,
}

impl Layout {
    pub(crate) fn new(f: &LinksFile) -> Layout {
        let n = f.hosts.len();
        // The file's order when it has one (each leaf switch's nodes side by side, as the
        // attribution read them: a block is then a square on the diagonal).
        let order: Vec<usize> = if f.order.len() == n {
            f.order.clone()
        } else {
            let mut o: Vec<usize> = (0..n).collect();
            o.sort_by(|&a, &b| natural(&f.hosts[a], &f.hosts[b]).then(a.cmp(&b)));
            o
        };
        let mut pos = vec![0; n];
        for (p, &r) in order.iter().enumerate() {
            pos[r] = p;
        }
        let k = n.div_ceil(MAX_SIDE).max(1);
        let side = n.div_ceil(k).max(1);
        Layout {
            order,
            pos,
            k,
            side,
            // A few nodes need no poster-sized cells.
            cell_px: (MATRIX_PX / side as i32).clamp(1, MAX_CELL_PX),
        }
    }

    /// The whole image, pixels.
    pub(crate) fn size(&self) -> (u32, u32) {
        // Room for the title and the legend however small the matrix.
        let m = self.matrix_px();
        (
            (LEFT + m + LEGEND_W).max(MIN_WIDTH) as u32,
            (TOP + m.max(LEGEND_H) + BOTTOM) as u32,
        )
    }

    fn matrix_px(&self) -> i32 {
        self.cell_px * self.side as i32
    }

    /// The drawn cell of a rank: its row (as sender) and column (as receiver).
    pub(crate) fn cell_of(&self, rank: usize) -> usize {
        self.pos[rank] / self.k
    }

    /// The pixel box (top left, bottom right) of drawn cell (row, column).
    pub(crate) fn cell_box(&self, row: usize, col: usize) -> ((i32, i32), (i32, i32)) {
        let (x, y) = (
            LEFT + col as i32 * self.cell_px,
            TOP + row as i32 * self.cell_px,
        );
        ((x, y), (x + self.cell_px, y + self.cell_px))
    }

    /// The outline around drawn cells rows `r0..=r1`, columns `c0..=c1` (just outside them).
    pub(crate) fn outline(&self, r0: usize, r1: usize, c0: usize, c1: usize) -> [(i32, i32); 2] {
        let (a, _) = self.cell_box(r0, c0);
        let (_, b) = self.cell_box(r1, c1);
        [(a.0 - 2, a.1 - 2), (b.0 + 1, b.1 + 1)]
    }
}

/// Host names in the order people number them: digit runs by value (`n2` before `n10`).
fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let digit = |c: char| c.is_ascii_digit();
        for (i, c) in s.char_indices().skip(1) {
            let prev = s[..i].chars().next_back().is_some_and(digit);
            if digit(c) != prev {
                out.push((prev, &s[start..i]));
                start = i;
            }
        }
        if start < s.len() {
            out.push((
                s[start..].starts_with(|c: char| c.is_ascii_digit()),
                &s[start..],
            ));
        }
        out
    }
    let key = |(num, t): (bool, &str)| {
        // Numbers compare by length after leading zeros, then digit by digit: no overflow.
        let t = if num { t.trim_start_matches('0') } else { t };
        (num, if num { t.len() } else { 0 }, t.to_string())
    };
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(&pb) {
        let o = key(*x).cmp(&key(*y));
        if o.is_ne() {
            return o;
        }
    }
    pa.len().cmp(&pb.len()).then(a.cmp(b))
}

/// The median the cells are coloured against: the file's (the attribution's), or the median of
/// the analysed cells when the attribution made none.
pub(crate) fn median_of(f: &LinksFile) -> Option<f64> {
    if let Some(m) = f.median_gbps {
        return Some(m);
    }
    let n = f.hosts.len();
    let mut v: Vec<f64> = (0..n * n)
        .filter_map(|c| analysed(f, c / n, c % n))
        .collect();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| {
        let h = v.len() / 2;
        if v.len() % 2 == 1 {
            v[h]
        } else {
            (v[h - 1] + v[h]) / 2.0
        }
    })
}

/// A cell the attribution used, as `links.json` says (`analysed`): inter-node pairs when the
/// job spans hosts, every pair on one host.
fn analysed(f: &LinksFile, i: usize, j: usize) -> Option<f64> {
    let v = f.matrix_gbps.get(i)?.get(j).copied().flatten()?;
    (i != j && (f.analysed != "inter_node" || f.hosts[i] != f.hosts[j])).then_some(v)
}

/// Every drawn cell's shade, row by row.
fn shades(f: &LinksFile, l: &Layout) -> Vec<Shade> {
    let n = f.hosts.len();
    let median = median_of(f);
    let mut out = vec![Shade::Blank; l.side * l.side];
    // One pass over the pairs: the slowest analysed step wins a block; without one, a hatched
    // (unmeasured) cell shows before a grey one, and the diagonal alone stays blank.
    let rank = |s: Shade| match s {
        Shade::Blank => 0,
        Shade::NotAnalysed => 1,
        Shade::Unmeasured => 2,
        Shade::Step(x) => 3 + SCALE.len() - x,
    };
    for i in 0..n {
        for j in 0..n {
            if i == j {
                continue;
            }
            let s = match (f.matrix_gbps[i][j], analysed(f, i, j), median) {
                (None, _, _) => Shade::Unmeasured,
                (Some(_), Some(v), Some(m)) => Shade::Step(step(v / m)),
                (Some(_), _, _) => Shade::NotAnalysed,
            };
            let at = &mut out[l.cell_of(i) * l.side + l.cell_of(j)];
            if rank(s) > rank(*at) {
                *at = s;
            }
        }
    }
    out
}

/// The heat map as SVG text (what `scalebench links` writes as `links.svg`).
pub fn svg(f: &LinksFile) -> Result<String, Error> {
    ensure_font()?;
    let l = Layout::new(f);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, l.size()).into_drawing_area();
        draw(f, &l, &root)
            .and_then(|()| Ok(root.present()?))
            .map_err(|e| Error::Chart {
                stem: STEM.into(),
                source: Box::new(e),
            })?;
    }
    // A host name from the file must not carry a control character into the SVG (XML
    // forbids most).
    Ok(crate::present::untrusted::visible(&out).into_owned())
}

/// Writes the heat map as a PNG file.
pub(crate) fn write_png(f: &LinksFile, path: &Path) -> Result<(), Error> {
    ensure_font()?;
    let l = Layout::new(f);
    let root = BitMapBackend::new(path, l.size()).into_drawing_area();
    draw(f, &l, &root)
        .and_then(|()| Ok(root.present()?))
        .map_err(|e| Error::ChartFile {
            path: path.to_path_buf(),
            stem: STEM.into(),
            source: Box::new(e),
        })
}

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

fn fill(s: Shade) -> Rgb {
    match s {
        Shade::Blank => Rgb(255, 255, 255),
        Shade::NotAnalysed => NOT_ANALYSED,
        Shade::Unmeasured => UNMEASURED,
        Shade::Step(x) => SCALE[x],
    }
}

/// The title: what, how many, and whether it is a measurement at all.
pub(crate) fn title(f: &LinksFile) -> String {
    let mut hosts = f.hosts.clone();
    hosts.sort();
    hosts.dedup();
    // Slurm nodes sharing one machine are not hosts of a fabric: named as what they are.
    let (one, many) = if f.emulated_nodes {
        ("emulated node", "emulated nodes")
    } else {
        ("host", "hosts")
    };
    let mut t = format!(
        "Link bandwidth, sender (row) → receiver (column): {} on {}",
        crate::units::count(f.hosts.len(), "rank", "ranks"),
        crate::units::count(hosts.len(), one, many)
    );
    if f.simulated.is_some() {
        t.push_str(" — SIMULATED, not a measurement");
    }
    if f.transport() == Some("nccl") {
        t.push_str(" over NCCL send/recv between GPUs");
    }
    if f.standin.is_some() {
        t.push_str(" — STAND-IN libraries, no GPU's bandwidth");
    }
    if let Some(fault) = &f.fault {
        t.push_str(&format!(" — test fault {fault}"));
    }
    t
}

/// What the chart shows and how to read it.
pub(crate) fn caption(f: &LinksFile) -> String {
    let l = Layout::new(f);
    let n = f.hosts.len();
    let median = median_of(f).map_or("none: no cell was analysed".into(), |m| {
        format!("{m:.3} GB/s")
    });
    let order = if f.order.len() == n {
        format!("Ranks are in the topology's order ({}: each leaf switch's nodes side by side, as the attribution read them); links.json keeps rank order.", f.topology.as_deref().unwrap_or("given"))
    } else {
        "Ranks are ordered by host name (numbers in names by value), then rank; links.json keeps rank order.".to_string()
    };
    let mut c = format!(
        "Each cell is the bandwidth from the row's rank to the column's rank over the median of the analysed pairs (median {median}), in 10 % steps of the viridis scale (dark: slow). {order} Blank: the diagonal; hatched: not measured; grey: measured but not analysed (same-host pairs of a job over several hosts). Red outlines: suspects confirmed by an isolated re-measurement (a link: its two cells; a node: its row and column); black: named but not confirmed."
    );
    if l.k > 1 {
        c.push_str(&format!(
            " With {n} ranks each drawn cell is a {k}×{k} block of pairs coloured by its slowest pair, so a single slow pair stays visible.",
            k = l.k
        ));
    }
    if n > MAX_LABELS {
        c.push_str(&format!(" Every {}th rank is labelled.", label_every(n)));
    }
    c
}

/// Label every this many ranks.
fn label_every(n: usize) -> usize {
    n.div_ceil(MAX_LABELS).max(1)
}

/// A rank's label: `host:rank`, a long host name shortened from the right.
fn label(f: &LinksFile, rank: usize) -> String {
    let h = &f.hosts[rank];
    let short: String = if h.chars().count() > 20 {
        h.chars().take(19).chain(['…']).collect()
    } else {
        h.clone()
    };
    format!("{short}:{rank}")
}

fn draw<DB: DrawingBackend<ErrorType: 'static>>(
    f: &LinksFile,
    l: &Layout,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), DrawError> {
    root.fill(&WHITE)?;
    let m = l.matrix_px();
    let black = (FONT, 20).into_font().color(&BLACK);
    root.draw(&Text::new(
        title(f),
        (16, 16),
        black.pos(Pos::new(HPos::Left, VPos::Top)),
    ))?;

    // Cells: runs of equal shades in a row are one rectangle (a bounded SVG at 1,024 nodes).
    let shades = shades(f, l);
    for r in 0..l.side {
        let row = &shades[r * l.side..(r + 1) * l.side];
        let mut c0 = 0;
        while c0 < l.side {
            let s = row[c0];
            let mut c1 = c0;
            while c1 + 1 < l.side && row[c1 + 1] == s {
                c1 += 1;
            }
            if s != Shade::Blank {
                let (a, _) = l.cell_box(r, c0);
                let (_, b) = l.cell_box(r, c1);
                root.draw(&Rectangle::new([a, b], rgb(fill(s)).filled()))?;
            }
            if s == Shade::Unmeasured && l.cell_px >= 4 {
                for c in c0..=c1 {
                    let (a, b) = l.cell_box(r, c);
                    root.draw(&PathElement::new(
                        vec![(a.0, b.1), (b.0, a.1)],
                        rgb(HATCH).stroke_width(1),
                    ))?;
                }
            }
            c0 = c1 + 1;
        }
    }
    root.draw(&Rectangle::new(
        [(LEFT, TOP), (LEFT + m, TOP + m)],
        RGBColor(90, 90, 90).stroke_width(1),
    ))?;

    // Labels: every rank up to MAX_LABELS, every k-th beyond; columns turned upright.
    let n = f.hosts.len();
    let every = label_every(n);
    let size = (l.cell_px * l.k as i32 * every as i32 - 2).clamp(6, 14);
    let font = (FONT, size).into_font().color(&BLACK);
    let upright = (FONT, size)
        .into_font()
        .transform(FontTransform::Rotate270)
        .color(&BLACK);
    for p in (0..n).step_by(every) {
        let rank = l.order[p];
        let c = l.cell_of(rank);
        let (a, b) = l.cell_box(c, c);
        let mid = (a.0 + b.0) / 2;
        let mid_y = (a.1 + b.1) / 2;
        root.draw(&Text::new(
            label(f, rank),
            (LEFT - 6, mid_y),
            font.clone().pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        root.draw(&Text::new(
            label(f, rank),
            (mid, TOP - 6),
            upright.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    let axis = (FONT, 14).into_font().color(&BLACK);
    root.draw(&Text::new(
        "rows: sender; columns: receiver",
        (16, 46),
        axis.pos(Pos::new(HPos::Left, VPos::Top)),
    ))?;

    marks(f, l, root)?;
    legend(f, l, root)
}

/// The suspects' outlines: a link's two cells, a node's row and column, a block's rows and
/// columns (runs of neighbouring drawn cells as one outline).
fn marks<DB: DrawingBackend<ErrorType: 'static>>(
    f: &LinksFile,
    l: &Layout,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), DrawError> {
    let last = l.side - 1;
    for s in &f.findings {
        let (color, width) = if s.confirmed {
            (CONFIRMED, 3)
        } else {
            (UNCONFIRMED, 2)
        };
        let style = rgb(color).stroke_width(width);
        let mut boxes = Vec::new();
        match (s.kind.as_str(), s.ranks.as_slice()) {
            ("link", &[a, b]) => {
                let (ca, cb) = (l.cell_of(a), l.cell_of(b));
                boxes.push(l.outline(ca, ca, cb, cb));
                boxes.push(l.outline(cb, cb, ca, ca));
            }
            (kind, ranks) => {
                let members: Vec<usize> = match (kind, ranks) {
                    ("node", &[r]) => vec![r],
                    // Listed members (a topology-ordered block); older files: the rank range.
                    ("block", _) if !s.members.is_empty() => s.members.clone(),
                    ("block", &[a, b]) => (a.min(b)..=a.max(b)).collect(),
                    _ => continue,
                };
                let mut cells: Vec<usize> = members
                    .into_iter()
                    .filter(|&r| r < l.pos.len())
                    .map(|r| l.cell_of(r))
                    .collect();
                cells.sort_unstable();
                cells.dedup();
                for (c0, c1) in runs(&cells) {
                    boxes.push(l.outline(c0, c1, 0, last));
                    boxes.push(l.outline(0, last, c0, c1));
                }
            }
        }
        for b in boxes {
            root.draw(&PathElement::new(ring(b), style))?;
        }
    }
    Ok(())
}

/// A closed outline through a box's corners: a path, because SVG rectangles from plotters
/// carry no stroke width and a mark must be thicker than a cell's edge.
fn ring([a, b]: [(i32, i32); 2]) -> Vec<(i32, i32)> {
    vec![a, (b.0, a.1), b, (a.0, b.1), a]
}

/// Sorted distinct numbers as runs of neighbours (first, last).
fn runs(v: &[usize]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for &x in v {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == x => *last = x,
            _ => out.push((x, x)),
        }
    }
    out
}

/// The colour steps (fast at the top), the blank kinds and the marks.
fn legend<DB: DrawingBackend<ErrorType: 'static>>(
    f: &LinksFile,
    l: &Layout,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), DrawError> {
    let x = LEFT + l.matrix_px() + 30;
    let mut y = TOP;
    let head = (FONT, 15).into_font().color(&BLACK);
    let font = (FONT, 13).into_font().color(&BLACK);
    let left = |s: TextStyle<'static>| s.pos(Pos::new(HPos::Left, VPos::Center));
    root.draw(&Text::new("bandwidth / median", (x, y), left(head.clone())))?;
    y += 14;
    if let Some(m) = median_of(f) {
        root.draw(&Text::new(
            format!("(median {m:.3} GB/s)"),
            (x, y + 4),
            left(font.clone()),
        ))?;
        y += 22;
    }
    let sw = 18;
    // Every legend row is a swatch with its label to the right, centred on the swatch.
    let label = |text: &str, y: i32| {
        root.draw(&Text::new(
            text.to_string(),
            (x + sw + 8, y + sw / 2),
            left(font.clone()),
        ))
    };
    for s in (0..SCALE.len()).rev() {
        root.draw(&Rectangle::new(
            [(x, y), (x + sw, y + sw)],
            rgb(SCALE[s]).filled(),
        ))?;
        label(&step_label(s), y)?;
        y += sw;
    }
    y += 14;
    let kinds = [
        (Shade::Blank, "diagonal"),
        (Shade::Unmeasured, "not measured (hatched)"),
        (Shade::NotAnalysed, "same host, not analysed"),
    ];
    for (s, text) in kinds {
        root.draw(&Rectangle::new(
            [(x, y), (x + sw, y + sw)],
            rgb(fill(s)).filled(),
        ))?;
        root.draw(&Rectangle::new(
            [(x, y), (x + sw, y + sw)],
            RGBColor(90, 90, 90).stroke_width(1),
        ))?;
        if s == Shade::Unmeasured {
            root.draw(&PathElement::new(
                vec![(x, y + sw), (x + sw, y)],
                rgb(HATCH).stroke_width(1),
            ))?;
        }
        label(text, y)?;
        y += sw + 6;
    }
    y += 10;
    for (c, w, text) in [
        (CONFIRMED, 3, "confirmed in isolation"),
        (UNCONFIRMED, 2, "named, not confirmed"),
    ] {
        root.draw(&PathElement::new(
            ring([(x + 2, y + 2), (x + sw - 2, y + sw - 2)]),
            rgb(c).stroke_width(w),
        ))?;
        label(text, y)?;
        y += sw + 6;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::links::LinkFinding;

    /// A simulated file of `n` nodes on `n` hosts named in reverse (so drawing order differs
    /// from rank order), with the given findings.
    fn file(n: usize, findings: Vec<LinkFinding>) -> LinksFile {
        let s = crate::links::simulate::Scenario {
            slow_links: if n > 9 { vec![(3, 9, 0.5)] } else { vec![] },
            ..crate::links::simulate::Scenario::healthy(n, 7, 0.05)
        };
        let m = s.matrix();
        LinksFile {
            residual_spread: Some(0.05),
            findings,
            simulated: Some("test".into()),
            ..crate::results::links::test_file(
                (0..n).map(|i| format!("n{:04}", n - i)).collect(),
                (0..n)
                    .map(|i| m.gbps[i * n..(i + 1) * n].to_vec())
                    .collect(),
                crate::links::simulate::BASE_GBPS,
            )
        }
    }

    fn link(a: usize, b: usize, confirmed: bool) -> LinkFinding {
        LinkFinding {
            kind: "link".into(),
            members: Vec::new(),
            ranks: vec![a, b],
            ratio: 0.5,
            z: -12.0,
            confidence: 0.9999,
            isolated_ratio: confirmed.then_some(0.5),
            confirmed,
            text: String::new(),
        }
    }

    /// The box (x, y, width, height) of every outline drawn in `color` over the matrix; the
    /// legend's samples, right of the matrix, are left out.
    fn outlines(svg: &str, color: Rgb, l: &Layout) -> Vec<(i32, i32, i32, i32)> {
        let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
        svg.split("<polyline")
            .skip(1)
            .map(|r| &r[..r.find("/>").unwrap_or(r.len())])
            .filter(|r| r.contains(&stroke) && r.contains("stroke-width=\""))
            .map(|r| {
                let s = &r[r.find("points=\"").unwrap() + 8..];
                let pts: Vec<(i32, i32)> = s[..s.find('"').unwrap()]
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect();
                assert_eq!(pts.len(), 5, "a closed box: {r}");
                let x0 = pts.iter().map(|p| p.0).min().unwrap();
                let y0 = pts.iter().map(|p| p.1).min().unwrap();
                let x1 = pts.iter().map(|p| p.0).max().unwrap();
                let y1 = pts.iter().map(|p| p.1).max().unwrap();
                (x0, y0, x1 - x0, y1 - y0)
            })
            .filter(|o| o.0 < LEFT + l.matrix_px())
            .collect()
    }

    /// Whether the SVG holds a text element saying exactly `s`.
    fn has_text(svg: &str, s: &str) -> bool {
        svg.contains(&format!(">\n{s}\n</text>"))
    }

    #[test]
    fn a_confirmed_link_is_outlined_at_its_two_cells() {
        let f = file(16, vec![link(3, 9, true)]);
        let svg = svg(&f).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.len() > 10_000,
            "{}",
            svg.len()
        );
        let l = Layout::new(&f);
        // Hosts are named in reverse, so rank 3 is drawn 13th.
        assert_eq!(l.cell_of(3), 12);
        assert_eq!(l.cell_of(9), 6);
        let want: Vec<(i32, i32, i32, i32)> = [(12, 6), (6, 12)]
            .iter()
            .map(|&(r, c)| {
                let [a, b] = l.outline(r, r, c, c);
                (a.0, a.1, b.0 - a.0, b.1 - a.1)
            })
            .collect();
        assert_eq!(
            outlines(&svg, CONFIRMED, &l),
            want,
            "the link's two cells, outlined in red"
        );
        assert!(outlines(&svg, UNCONFIRMED, &l).is_empty());
        // Every rank is labelled at 16 ranks; the title says the matrix is simulated.
        for r in 0..16 {
            assert!(has_text(&svg, &label(&f, r)), "label of {r}");
        }
        assert!(svg.contains("SIMULATED"));
    }

    #[test]
    fn a_node_is_outlined_as_its_row_and_column_and_unconfirmed_in_black() {
        let mut f = file(16, vec![]);
        f.findings.push(LinkFinding {
            kind: "node".into(),
            members: Vec::new(),
            ranks: vec![5],
            ..link(0, 1, false)
        });
        let svg = svg(&f).unwrap();
        let l = Layout::new(&f);
        let c = l.cell_of(5);
        let got = outlines(&svg, UNCONFIRMED, &l);
        let side = l.side - 1;
        let want: Vec<(i32, i32, i32, i32)> = [l.outline(c, c, 0, side), l.outline(0, side, c, c)]
            .iter()
            .map(|[a, b]| (a.0, a.1, b.0 - a.0, b.1 - a.1))
            .collect();
        assert_eq!(got, want);
        assert!(outlines(&svg, CONFIRMED, &l).is_empty());
    }

    #[test]
    fn hosts_are_ordered_as_people_number_them() {
        let mut v = vec!["n10", "n2", "gpu-b1", "n1", "n02", "gpu-a12", "gpu-a3", "n"];
        v.sort_by(|a, b| natural(a, b));
        assert_eq!(
            v,
            ["gpu-a3", "gpu-a12", "gpu-b1", "n", "n1", "n02", "n2", "n10"]
        );
    }

    #[test]
    fn cells_are_coloured_by_their_step_and_blocks_by_their_slowest_pair() {
        assert_eq!(step(0.05), 0);
        assert_eq!(step(0.5), 5);
        assert_eq!(step(0.999), 9);
        assert_eq!(step(1.0), 10);
        assert_eq!(step(3.0), 11);
        assert_eq!(step_label(11), "≥ 110 %");
        let mut f = file(300, vec![]);
        f.matrix_gbps[3][9] = Some(crate::links::simulate::BASE_GBPS * 0.2);
        f.matrix_gbps[4][7] = None;
        let l = Layout::new(&f);
        assert_eq!((l.k, l.side), (3, 100));
        let s = shades(&f, &l);
        assert_eq!(s[l.cell_of(3) * l.side + l.cell_of(9)], Shade::Step(2));
        // A block on the diagonal holds healthy pairs too: coloured, not blank.
        assert!(matches!(s[0], Shade::Step(8..=11)), "{:?}", s[0]);
        assert!(matches!(
            s[l.cell_of(4) * l.side + l.cell_of(7)],
            Shade::Step(_)
        ));
        // Same-host pairs of a job over several hosts are measured but not analysed.
        let mut g = file(4, vec![]);
        g.hosts = vec!["a".into(), "a".into(), "b".into(), "b".into()];
        let lg = Layout::new(&g);
        let sg = shades(&g, &lg);
        assert_eq!(sg[1], Shade::NotAnalysed);
        assert_eq!(sg[0], Shade::Blank);
        g.matrix_gbps[0][2] = None;
        assert_eq!(shades(&g, &lg)[2], Shade::Unmeasured);
    }

    #[test]
    fn a_thousand_and_twenty_four_nodes_draw_in_a_bounded_size() {
        let f = file(1024, vec![link(3, 9, true)]);
        let l = Layout::new(&f);
        assert_eq!((l.k, l.side), (8, 128));
        let svg = svg(&f).unwrap();
        let (w, h) = l.size();
        assert!(w <= 1400 && h <= 1200, "{w}×{h}");
        // 128×128 drawn cells at most, runs merged: far below one element per pair.
        assert!(svg.len() < 2_500_000, "{} bytes", svg.len());
        assert!(svg.matches("<rect").count() < 128 * 128);
        // Labels thinned to every 16th rank.
        let labels = (0..1024).filter(|&r| has_text(&svg, &label(&f, r)));
        assert_eq!(labels.count(), 64);
        let got = outlines(&svg, CONFIRMED, &l);
        assert_eq!(got.len(), 2, "{got:?}");
        let dir = std::env::temp_dir().join(format!("scalebench-heat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("links.png");
        write_png(&f, &png).unwrap();
        assert!(std::fs::metadata(&png).unwrap().len() > 1000);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
