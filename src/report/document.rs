//! What the report says, in order: inputs and set-up, definitions, collectives (size curves and
//! α–β fits), scaling across devices, cost models and predictions, pure vs hybrid, binding,
//! stragglers, GPU utilisation (where NVML sampled it), spread, problems, and every case.
//! Builds the neutral [`Doc`] that the Markdown and HTML renderers print; every table here is
//! also exported as CSV.

use super::analyze::{
    kinds_text, style_key, Analysis, CollScale, Entry, Layout, RatioGroup, RatioKind, ScaleSeries,
};
use super::derive::{self, ScalingKind, Winner};
use super::doc::{prose, text, Block, Doc, FigureBlock, Span};
use super::model;
use super::plot::{setup_label, Figure};
use super::table::{Cell, NumFmt, Table};
use crate::params::{LaunchShape, Workload};
use crate::results::schema::{CaseStatus, DeviceTelemetry};
use std::collections::BTreeMap;

/// Rows kept in the longer lists (straggler, noisy, problem tables).
const TOP: usize = 25;

/// The columns of the HTML case table: a projection of the one case flattening.
const CASE_COLUMNS: &[&str] = &[
    "id",
    "params.workload",
    "params.topology",
    "params.nodes",
    "params.devices_per_node",
    "params.binding",
    "params.dtype",
    "params.op",
    "params.in_place",
    "params.timing",
    "params.requested_bytes",
    "params.shape.m",
    "params.scaling",
    "status",
    "timing.time_s",
    "timing.stats_s.median",
    "report.p5_s",
    "report.p95_s",
    "timing.stats_s.cv",
    "report.noisy",
    "algbw_gbps",
    "busbw_gbps",
    "gflops",
    "gflops_total",
    "report.imbalance",
    "report.slowest_node",
];

fn setup_text(a: &Analysis, s: &LaunchShape) -> String {
    setup_label(a, Layout::of(s), style_key(s))
}

/// A size: `1MiB` for people, the number of bytes in CSV.
fn bytes_cell(b: u64) -> Cell {
    Cell::num(b as f64, NumFmt::Bytes)
}

fn case_text(e: &Entry) -> String {
    e.params().label()
}

fn add_figures(doc: &mut Doc, figs: &[Figure], kind: &str, w: Workload) {
    for (i, f) in figs.iter().enumerate() {
        if f.kind == kind && f.workload == w {
            doc.blocks.push(Block::Figure(FigureBlock {
                figure: i,
                stem: f.stem.clone(),
                title: f.title.clone(),
                caption: f.caption.clone(),
            }));
        }
    }
}

fn utc(unix_s: f64) -> String {
    let s = crate::results::utc_stamp(unix_s);
    // 20261122T004753Z → 2026-11-22 00:47:53 UTC
    if s.len() == 16 {
        format!(
            "{}-{}-{} {}:{}:{} UTC",
            &s[0..4],
            &s[4..6],
            &s[6..8],
            &s[9..11],
            &s[11..13],
            &s[13..15]
        )
    } else {
        s
    }
}

/// Builds the report. `figs` are the charts drawn (their order is the figure index).
pub fn build(a: &Analysis, figs: &[Figure], title: &str) -> Doc {
    let mut doc = Doc {
        title: title.to_string(),
        blocks: Vec::new(),
    };
    overview(&mut doc, a);
    let head = doc.blocks.len();
    let mut found = Findings::default();
    unrepresentative(&mut doc, a, &mut found);
    collectives(&mut doc, a, figs, &mut found);
    scaling(&mut doc, a, figs, &mut found);
    super::ddp::section(&mut doc, a.entries.iter().map(|e| e.case), figs);
    cost_model(&mut doc, a, figs);
    ratios(&mut doc, a, figs, RatioKind::Topology, &mut found);
    ratios(&mut doc, a, figs, RatioKind::Binding, &mut found);
    stragglers(&mut doc, a, &mut found);
    gpu_use(&mut doc, a);
    spread(&mut doc, a);
    problems(&mut doc, a);
    inputs(&mut doc, a);
    definitions(&mut doc, a);
    // Findings lead: built last (they cite the tables above by name), moved to the top.
    let tail = doc.blocks.len();
    let sources = findings(&mut doc, a, found);
    let moved: Vec<Block> = doc.blocks.drain(tail..).collect();
    doc.blocks.splice(head..head, moved);
    if !sources.is_empty() {
        doc.heading(2, "Appendix C: where the findings' figures come from");
        doc.prose("Every figure of a finding is a cell of a table of this report: its CSV, the row (0-based, data rows) and the column.");
        doc.table(sources, "findings", None);
    }
    all_cases(&mut doc);
    doc
}

/// A piece of a finding's sentence: words, or a figure taken from a cell of its table.
#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Fig { column: String, cell: Cell },
}

/// One sentence of the findings: its figures are cells of one row of one table.
#[derive(Debug, Clone)]
struct Finding {
    topic: String,
    parts: Vec<Part>,
    /// The table's CSV (`tables/x.csv`) and the row (0-based, data rows) holding the figures.
    table: Option<String>,
    row: usize,
    chart: Option<String>,
    /// Anchor of the section that explains it.
    section: String,
    /// The workload it is about (findings are grouped by workload; set-up ones first).
    workload: Option<Workload>,
}

/// Findings gathered while the sections are built.
#[derive(Debug, Default)]
struct Findings {
    items: Vec<Finding>,
}

/// A sentence under construction, reading figures from `t`'s row `row`.
struct Sentence<'t> {
    t: &'t Table,
    row: usize,
    parts: Vec<Part>,
}

impl<'t> Sentence<'t> {
    fn new(t: &'t Table, row: usize) -> Self {
        Sentence {
            t,
            row,
            parts: Vec::new(),
        }
    }
    fn text(mut self, s: impl Into<String>) -> Self {
        self.parts.push(Part::Text(s.into()));
        self
    }
    /// The cell of `column` in the sentence's row (the column must exist).
    fn fig(mut self, column: &str) -> Self {
        let j = self
            .t
            .columns
            .iter()
            .position(|c| c == column)
            .unwrap_or_else(|| panic!("finding cites a missing column {column}"));
        self.parts.push(Part::Fig {
            column: column.to_string(),
            cell: self.t.rows[self.row][j].clone(),
        });
        self
    }
    fn done(self, topic: impl Into<String>, chart: Option<String>, section: &str) -> Finding {
        Finding {
            topic: topic.into(),
            parts: self.parts,
            table: None,
            row: self.row,
            chart,
            section: section.to_string(),
            workload: None,
        }
    }
}

impl Finding {
    fn about(mut self, w: Workload) -> Finding {
        self.workload = Some(w);
        self
    }
}

impl Findings {
    /// Adds findings citing the table just written as `csv`.
    fn cite(&mut self, csv: Option<String>, list: Vec<Finding>) {
        for mut f in list {
            f.table = csv.clone();
            self.items.push(f);
        }
    }
}

/// The first chart of `kind` for `w`, if one was drawn.
fn chart_of(figs: &[Figure], kind: &str, w: Workload) -> Option<String> {
    figs.iter()
        .find(|f| f.kind == kind && f.workload == w)
        .map(|f| f.stem.clone())
}

/// Writes the findings section; returns the table of where each figure comes from.
fn findings(doc: &mut Doc, a: &Analysis, mut found: Findings) -> Table {
    // Set-up first, then per workload (in section order within one), then the rest.
    found
        .items
        .sort_by_key(|f| match (f.topic.as_str(), f.workload) {
            ("Set-up", _) => (0, None),
            (_, Some(w)) => (1, Some(w)),
            _ => (2, None),
        });
    doc.heading(2, "Findings");
    let left_out = a.unrepresentative.len();
    doc.para(vec![text(if found.items.is_empty() {
        "No finding can be stated: no measured case supports one (see the sections below).".to_string()
    } else if left_out > 0 && !a.options.include_unrepresentative {
        format!("What the measurements support, each with its table and chart. {left_out} case(s) that cannot represent their set-up are left out of these (see Not representative).")
    } else {
        "What the measurements support, each with its table and chart.".to_string()
    })]);
    let mut bullets = Vec::new();
    let mut t = Table::new(&[
        "finding", "topic", "sentence", "figure", "value", "table", "row", "column",
    ]);
    for (k, f) in found.items.iter().enumerate() {
        let mut sentence = String::new();
        for p in &f.parts {
            match p {
                Part::Text(x) => sentence.push_str(x),
                Part::Fig { cell, .. } => sentence.push_str(&cell.display()),
            }
        }
        let mut spans = vec![
            Span::Strong(format!("{}:", f.topic)),
            text(format!(" {sentence} (")),
        ];
        if let Some(csv) = &f.table {
            spans.push(Span::Link {
                text: "table".into(),
                href: csv.clone(),
            });
            spans.push(text(", "));
        }
        if let Some(stem) = &f.chart {
            spans.push(Span::Chart {
                text: "chart".into(),
                stem: stem.clone(),
            });
            spans.push(text(", "));
        }
        spans.push(Span::Link {
            text: "section".into(),
            href: format!("#{}", f.section),
        });
        spans.push(text(")"));
        bullets.push(spans);
        for p in &f.parts {
            if let Part::Fig { column, cell } = p {
                t.push(vec![
                    Cell::UInt(k as u64 + 1),
                    Cell::text(f.topic.clone()),
                    Cell::text(sentence.clone()),
                    Cell::text(cell.display()),
                    Cell::text(cell.raw()),
                    Cell::text(f.table.clone().unwrap_or_default()),
                    Cell::UInt(f.row as u64),
                    Cell::text(column.clone()),
                ]);
            }
        }
    }
    if !bullets.is_empty() {
        doc.blocks.push(Block::Bullets(bullets));
    }
    t
}

/// Cases that cannot represent their set-up, grouped by launch and reason.
fn unrepresentative(doc: &mut Doc, a: &Analysis, found: &mut Findings) {
    if a.unrepresentative.is_empty() {
        return;
    }
    doc.heading(2, "Not representative");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    doc.para(vec![text(if a.options.include_unrepresentative {
        format!("{} case(s) ran on a set-up that cannot represent what it names. --include-unrepresentative was given: they are used in winners, scaling and fits, and marked there.", a.unrepresentative.len())
    } else {
        format!("{} case(s) ran on a set-up that cannot represent what it names: they are shown apart (greyed in charts, in separate tables) and left out of winners, scaling efficiencies, fits and findings. --include-unrepresentative uses them, marked.", a.unrepresentative.len())
    })]);
    // (kind, launch, detail) → cases
    let mut groups: BTreeMap<(String, usize, String, String), (String, usize)> = BTreeMap::new();
    for &i in &a.unrepresentative {
        let e = &a.entries[i];
        for c in &e.concerns {
            let slot = groups
                .entry((
                    c.kind.clone(),
                    e.source,
                    e.case.launch_id.clone(),
                    c.detail.clone(),
                ))
                .or_insert_with(|| (e.shape().label(), 0));
            slot.1 += 1;
        }
    }
    let mut per_kind: BTreeMap<String, usize> = BTreeMap::new();
    for &i in &a.unrepresentative {
        for k in a.entries[i].concern_kinds() {
            *per_kind.entry(k).or_default() += 1;
        }
    }
    let mut t = Table::new(&["reason", "cases"]);
    for (k, n) in &per_kind {
        t.push(vec![Cell::text(k.clone()), Cell::UInt(*n as u64)]);
    }
    let list: Vec<Finding> = (0..t.rows.len())
        .map(|r| {
            Sentence::new(&t, r)
                .fig("cases")
                .text(format!(
                    " case(s) are not representative ({}) and are {}",
                    t.rows[r][0].raw().replace('_', " "),
                    if a.options.include_unrepresentative {
                        "included, marked, in what follows"
                    } else {
                        "left out of what follows"
                    }
                ))
                .text(".")
                .done("Set-up", None, &section)
        })
        .collect();
    found.cite(doc.table(t, "unrepresentative_summary", None), list);
    let mut t = Table::new(&["reason", "input", "launch", "set-up", "cases", "detail"]);
    for ((kind, src, launch, detail), (setup, n)) in groups {
        t.push(vec![
            Cell::text(kind),
            Cell::UInt(src as u64 + 1),
            Cell::text(launch),
            Cell::text(setup),
            Cell::UInt(n as u64),
            Cell::text(detail),
        ]);
    }
    doc.table(t, "unrepresentative", None);
}

fn overview(doc: &mut Doc, a: &Analysis) {
    let n = a.entries.len();
    let measured = a.entries.iter().filter(|e| e.time_s().is_some()).count();
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &a.entries {
        *by_status.entry(e.case.status.name()).or_default() += 1;
    }
    let mut wls: Vec<String> = a
        .entries
        .iter()
        .map(|e| e.params().workload.to_string())
        .collect();
    wls.sort();
    wls.dedup();
    let version = env!("CARGO_PKG_VERSION");
    doc.para(vec![text(format!(
        "scalebench {version} report from {} input file(s): {n} case(s) ({}), {measured} measured and validated; workloads: {}; layouts (nodes × devices per node): {}.",
        a.sources.len(),
        by_status
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        wls.join(", "),
        a.palette
            .layouts
            .iter()
            .map(Layout::label)
            .collect::<Vec<_>>()
            .join(", ")
    ))]);
    if a.sources.iter().any(|s| s.file.run.emulated_nodes) {
        doc.para(vec![
            Span::Strong("Emulated nodes.".into()),
            text(" Some inputs ran with nodes emulated on one host: their node counts group ranks on one machine, they are not separate machines, so inter-node effects are absent."),
        ]);
    }
    // Runs on scalebench's stand-in CUDA libraries (standin/) say so in their backend detail.
    let standin = a.sources.iter().any(|s| {
        s.file
            .launches
            .iter()
            .filter_map(|l| l.provenance.as_ref())
            .any(|p| p.backend.detail.starts_with("STAND-IN: "))
    });
    if standin {
        doc.para(vec![
            Span::Strong("Stand-in devices, not GPUs.".into()),
            text(" Some inputs ran the CUDA backend on scalebench's stand-in libraries (CPU test doubles of the driver, cuBLAS and NCCL): they show that the device path runs and validates; none of their times, bandwidths or GFLOP/s is a GPU's."),
        ]);
    }
    let sel = a.selection;
    if sel.duplicates > 0 || sel.filtered_out > 0 {
        doc.para(vec![text(format!(
            "{} case(s) were measured in more than one input (the newest measurement of each is used); {} case(s) were left out by --only.",
            sel.duplicates, sel.filtered_out
        ))]);
    }
}

/// The software and hardware of a launch, as the set-up table groups them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Stack {
    cpu: String,
    mpi: String,
    backend: String,
    timer: String,
}

fn inputs(doc: &mut Doc, a: &Analysis) {
    doc.heading(2, "Appendix A: inputs and set-up");
    let mut t = Table::new(&[
        "#",
        "file",
        "run id",
        "started",
        "generator",
        "cases",
        "emulated nodes",
        "labels",
    ]);
    for (i, s) in a.sources.iter().enumerate() {
        let f = &s.file;
        t.push(vec![
            Cell::UInt(i as u64 + 1),
            Cell::text(s.path.display().to_string()),
            Cell::text(f.run.run_id.clone()),
            Cell::text(utc(f.run.started_unix_s)),
            Cell::text(format!(
                "{} {}{}",
                f.generator.name,
                f.generator.version,
                f.generator
                    .git_sha
                    .as_deref()
                    .map_or(String::new(), |g| format!(" ({g})"))
            )),
            Cell::UInt(f.cases.len() as u64),
            Cell::Bool(f.run.emulated_nodes),
            Cell::text(
                f.run
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ]);
    }
    doc.table(t, "inputs", None);
    let mut t = Table::new(&[
        "input", "launch", "set-up", "status", "launcher", "ranks", "devices", "hosts", "warnings",
    ]);
    // Software and hardware, once per distinct combination.
    let mut stacks: BTreeMap<Stack, (usize, f64, f64)> = BTreeMap::new();
    for (i, s) in a.sources.iter().enumerate() {
        for l in &s.file.launches {
            let p = l.provenance.as_ref();
            if let Some(p) = p {
                let mut cpus: Vec<String> = p
                    .hosts
                    .iter()
                    .map(|h| format!("{} ({} CPUs)", h.cpu_model, h.logical_cpus))
                    .collect();
                cpus.dedup();
                let key = Stack {
                    cpu: cpus.join("; "),
                    mpi: p.mpi_library.clone().unwrap_or_default(),
                    backend: p.backend.detail.clone(),
                    timer: p.timer.source.clone(),
                };
                let slot = stacks.entry(key).or_insert((0, f64::INFINITY, 0.0));
                slot.0 += 1;
                slot.1 = slot.1.min(p.timer.resolution_s);
                slot.2 = slot.2.max(p.timer.resolution_s);
            }
            t.push(vec![
                Cell::UInt(i as u64 + 1),
                Cell::text(l.launch_id.clone()),
                Cell::text(l.shape.label()),
                Cell::text(format!("{:?}", l.status).to_lowercase()),
                Cell::text(l.launcher.clone()),
                p.map_or(Cell::Empty, |p| Cell::UInt(u64::from(p.world_size))),
                p.map_or(Cell::Empty, |p| Cell::UInt(u64::from(p.devices))),
                p.map_or(Cell::Empty, |p| {
                    Cell::text(
                        p.hosts
                            .iter()
                            .map(|h| h.host.clone())
                            .collect::<Vec<_>>()
                            .join(", "),
                    )
                }),
                p.map_or(Cell::Empty, |p| Cell::text(p.warnings.join("; "))),
            ]);
        }
    }
    doc.table(t, "launches", None);
    let mut t = Table::new(&[
        "launches",
        "CPU",
        "MPI library",
        "backend",
        "timer",
        "timer resolution",
    ]);
    for (st, (n, rlo, rhi)) in stacks {
        t.push(vec![
            Cell::UInt(n as u64),
            Cell::text(st.cpu),
            Cell::text(st.mpi),
            Cell::text(st.backend),
            Cell::text(st.timer),
            Cell::text(if (rhi - rlo).abs() <= f64::EPSILON * rhi {
                crate::units::format_seconds(rlo)
            } else {
                format!(
                    "{} – {}",
                    crate::units::format_seconds(rlo),
                    crate::units::format_seconds(rhi)
                )
            }),
        ]);
    }
    doc.table(t, "software", None);
    let mut t = Table::new(&["input", "launch", "rank", "host", "node", "cpus", "devices"]);
    for (i, s) in a.sources.iter().enumerate() {
        for l in &s.file.launches {
            for r in l.provenance.iter().flat_map(|p| &p.ranks) {
                t.push(vec![
                    Cell::UInt(i as u64 + 1),
                    Cell::text(l.launch_id.clone()),
                    Cell::UInt(u64::from(r.rank)),
                    Cell::text(r.host.clone()),
                    Cell::text(r.node_name.clone()),
                    Cell::text(r.cpus.clone()),
                    Cell::text(
                        r.devices
                            .iter()
                            .map(|d| format!("{} [{}] cpus {}", d.index, d.name, d.cpus))
                            .collect::<Vec<_>>()
                            .join("; "),
                    ),
                ]);
            }
        }
    }
    doc.table(
        t,
        "ranks",
        Some("Every rank: host, node, CPU affinity, devices".into()),
    );
}

fn definitions(doc: &mut Doc, a: &Analysis) {
    doc.heading(2, "Appendix B: definitions");
    let o = a.options;
    doc.para(vec![text(format!(
        "Thresholds used here: a case is noisy when cv > {} ({:.0} %); a ratio within 1 ± {} is a tie; charts show the {} variant(s) with the most cases per workload (the rest are in the tables and results.csv).",
        o.noisy_cv,
        o.noisy_cv * 100.0,
        o.tie_band,
        o.chart_variants
    ))]);
    let defs: Vec<(String, Vec<Span>)> = derive::DEFINITIONS
        .iter()
        .chain(model::DEFINITIONS)
        .map(|(k, v)| (k.to_string(), prose(v)))
        .collect();
    doc.blocks.push(Block::Defs(defs));
}

fn collectives(doc: &mut Doc, a: &Analysis, figs: &[Figure], found: &mut Findings) {
    if a.collectives.is_empty() {
        return;
    }
    doc.heading(2, "Collectives: time and bandwidth vs size");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    let mut wl: Option<Workload> = None;
    for v in &a.collectives {
        if wl != Some(v.workload) {
            wl = Some(v.workload);
            doc.heading(3, v.workload.to_string());
            add_figures(doc, figs, "busbw", v.workload);
            add_figures(doc, figs, "latency", v.workload);
        }
        doc.para(vec![
            Span::Strong(format!("{} {}", v.workload, v.label)),
            text(format!(
                ": {} case(s){}.",
                v.cases,
                if v.charted { ", charted above" } else { "" }
            )),
        ]);
        let mut t = Table::new(&[
            "set-up",
            "devices",
            "sizes",
            "smallest S",
            "time at smallest S",
            "peak busbw (GB/s)",
            "at S",
            "peak algbw (GB/s)",
            "α (µs)",
            "1/β (GB/s)",
            "R²",
            "regimes",
            "switch at",
            "latency-bound below",
            "noisy",
            "fit",
            "representative",
        ]);
        for c in &v.curves {
            let pts: Vec<&Entry> = c.points.iter().map(|&i| &a.entries[i]).collect();
            let first = pts.first();
            let peak = pts
                .iter()
                .filter_map(|e| Some((e.case.busbw_gbps?, e.bytes()?)))
                .max_by(|x, y| x.0.total_cmp(&y.0));
            let f = c.factor.filter(|f| *f > 0.0).unwrap_or(1.0);
            let (alpha, bw, r2, regimes, switch, half, note) = match &c.regimes {
                Ok(r) => (
                    Cell::num(r.alpha_s() * 1e6, NumFmt::Sig),
                    Cell::opt(r.bandwidth_gbps(), NumFmt::Sig),
                    Cell::num(r.r2, NumFmt::Fixed(3)),
                    Cell::UInt(r.segments.len() as u64),
                    Cell::text(switch_text(r, f)),
                    Cell::opt(
                        r.latency_bound_below_x().map(|x| (x / f).round()),
                        NumFmt::ApproxBytes,
                    ),
                    Cell::text(regimes_note(r)),
                ),
                Err(e) => (
                    Cell::Empty,
                    Cell::Empty,
                    Cell::Empty,
                    Cell::Empty,
                    Cell::Empty,
                    Cell::Empty,
                    Cell::text(e.to_string()),
                ),
            };
            t.push(vec![
                Cell::text(setup_text(a, &c.shape)),
                Cell::UInt(u64::from(c.shape.devices())),
                Cell::UInt(pts.len() as u64),
                first
                    .and_then(|e| e.bytes())
                    .map_or(Cell::Empty, bytes_cell),
                Cell::opt(first.and_then(|e| e.time_s()), NumFmt::Seconds),
                Cell::opt(peak.map(|p| p.0).filter(|b| *b > 0.0), NumFmt::Sig),
                peak.filter(|p| p.0 > 0.0)
                    .map_or(Cell::Empty, |p| bytes_cell(p.1)),
                Cell::opt(
                    pts.iter()
                        .filter_map(|e| e.case.algbw_gbps)
                        .max_by(f64::total_cmp),
                    NumFmt::Sig,
                ),
                alpha,
                bw,
                r2,
                regimes,
                switch,
                half,
                Cell::UInt(pts.iter().filter(|e| e.noisy).count() as u64),
                note,
                Cell::text(representative_text(&c.concerns)),
            ]);
        }
        let mut list = Vec::new();
        if v.charted {
            list.extend(collective_findings(a, figs, v, &t, &section));
        }
        found.cite(
            doc.table(t, &format!("collective_{}", v.workload), None),
            list,
        );
    }
}

/// `yes`, or `no: oversubscribed, emulated nodes`.
fn representative_text(kinds: &std::collections::BTreeSet<String>) -> String {
    if kinds.is_empty() {
        "yes".to_string()
    } else {
        format!("no: {}", kinds_text(kinds))
    }
}

/// Where a segmented fit changes regime, as sizes S: `8KiB–16KiB; 256KiB–512KiB`.
fn switch_text(r: &model::Regimes, factor: f64) -> String {
    r.segments
        .windows(2)
        .map(|w| {
            let s = |x: f64| crate::units::format_bytes((x / factor).round() as u64);
            format!("{}–{}", s(w[0].to_x), s(w[1].from_x))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `ok` or `constrained`, and how many points the robust fits down-weighted.
fn regimes_note(r: &model::Regimes) -> String {
    let base = if r.constrained() { "constrained" } else { "ok" };
    match r.downweighted() {
        0 => base.to_string(),
        n => format!("{base}; {n} down-weighted"),
    }
}

/// Peak busbw of the charted variant, and where latency dominates on its largest set-up.
fn collective_findings(
    a: &Analysis,
    figs: &[Figure],
    v: &super::analyze::CollectiveView,
    t: &Table,
    section: &str,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let topic = format!("{} {}", v.workload, v.label);
    let usable: Vec<usize> = (0..v.curves.len())
        .filter(|&k| a.options.include_unrepresentative || v.curves[k].concerns.is_empty())
        .collect();
    let col = |name: &str| t.columns.iter().position(|c| c == name).expect("column");
    let caveat = |k: usize| {
        let c = &v.curves[k].concerns;
        if c.is_empty() {
            String::new()
        } else {
            format!(" (caveat: not representative: {})", kinds_text(c))
        }
    };
    let peak = usable
        .iter()
        .copied()
        .filter_map(|k| {
            t.rows[k][col("peak busbw (GB/s)")]
                .sort_value()
                .map(|b| (k, b))
        })
        .max_by(|x, y| x.1.total_cmp(&y.1));
    if let Some((k, _)) = peak {
        out.push(
            Sentence::new(t, k)
                .text("peak busbw ")
                .fig("peak busbw (GB/s)")
                .text(" GB/s, reached at S = ")
                .fig("at S")
                .text(" on ")
                .fig("set-up")
                .text(caveat(k))
                .text(".")
                .done(topic.clone(), chart_of(figs, "busbw", v.workload), section)
                .about(v.workload),
        );
    }
    let lat = usable
        .iter()
        .copied()
        .filter(|&k| t.rows[k][col("latency-bound below")].sort_value().is_some())
        .max_by_key(|&k| v.curves[k].shape.devices());
    if let Some(k) = lat {
        let mut s = Sentence::new(t, k)
            .text("on ")
            .fig("set-up")
            .text(", latency dominates below S ≈ ")
            .fig("latency-bound below")
            .text(" (α = ")
            .fig("α (µs)")
            .text(" µs for the smallest sizes)");
        if matches!(&v.curves[k].regimes, Ok(r) if r.segments.len() > 1) {
            s = s
                .text("; the α–β model changes regime between ")
                .fig("switch at");
        }
        out.push(
            s.text(caveat(k))
                .text(".")
                .done(topic, chart_of(figs, "fit", v.workload), section)
                .about(v.workload),
        );
    }
    out
}

fn scaling(doc: &mut Doc, a: &Analysis, figs: &[Figure], found: &mut Findings) {
    if a.scaling.is_empty() && a.coll_scaling.is_empty() {
        return;
    }
    doc.heading(2, "Scaling across devices and nodes");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    doc.prose("Each series holds everything fixed except the layout (nodes × devices per node). When two layouts share a device count (1×4 and 2×2), scaling within one node and scaling over nodes are separate series. The baseline of every series is its smallest device count, named in the table.");
    let mut wls: Vec<Workload> = a.scaling.iter().map(|s| s.workload).collect();
    wls.dedup();
    for w in wls {
        doc.heading(3, format!("{w}: speedup and efficiency"));
        add_figures(doc, figs, "scaling", w);
        for s in a.scaling.iter().filter(|s| s.workload == w) {
            gemm_series_table(doc, a, s, figs, found, &section);
        }
    }
    for cs in &a.coll_scaling {
        if !cs.charted {
            continue;
        }
        coll_scale_table(doc, a, cs, found, &section);
    }
    let hidden = a.coll_scaling.iter().filter(|c| !c.charted).count();
    if hidden > 0 {
        doc.para(vec![text(format!(
            "{hidden} more collective series across devices (variants not charted) are summarised in the cost-model table below; every point is in results.csv."
        ))]);
    }
}

fn gemm_series_table(
    doc: &mut Doc,
    a: &Analysis,
    s: &ScaleSeries,
    figs: &[Figure],
    found: &mut Findings,
    section: &str,
) {
    let base = &a.entries[s.points[0]];
    let kind = match s.kind {
        ScalingKind::Strong => "strong",
        ScalingKind::Weak => "weak",
    };
    doc.para(vec![
        Span::Strong(format!("{} {}", s.workload, s.label)),
        text(format!(
            ", {kind} scaling, {}; baseline: {} ({} device(s)), time {}.",
            s.family.label(),
            base.layout().label(),
            base.layout().devices(),
            base.time_s()
                .map_or_else(|| "-".into(), crate::units::format_seconds)
        )),
    ]);
    let mut t = Table::new(&[
        "layout",
        "nodes",
        "devices",
        "time",
        "speedup",
        "ideal speedup",
        "efficiency",
        "GFLOP/s per device",
        "GFLOP/s aggregate",
        "cv",
    ]);
    for (&i, sc) in s.points.iter().zip(&s.scaled) {
        let e = &a.entries[i];
        t.push(vec![
            Cell::text(e.layout().label()),
            Cell::UInt(u64::from(e.layout().nodes)),
            Cell::UInt(u64::from(e.layout().devices())),
            Cell::opt(e.time_s(), NumFmt::Seconds),
            Cell::num(sc.speedup, NumFmt::Fixed(3)),
            Cell::num(sc.ideal_speedup, NumFmt::Fixed(3)),
            Cell::num(sc.efficiency, NumFmt::Fixed(3)),
            Cell::opt(e.case.gflops, NumFmt::Sig),
            Cell::opt(e.case.gflops_total, NumFmt::Sig),
            Cell::opt(e.spread.map(|x| x.cv), NumFmt::Percent),
        ]);
    }
    let mut list = Vec::new();
    if s.charted && t.rows.len() >= 2 {
        let last = t.rows.len() - 1;
        let caveat = series_caveat(a, &s.points);
        list.push(
            Sentence::new(&t, last)
                .text(format!("{kind} scaling efficiency "))
                .fig("efficiency")
                .text(" at ")
                .fig("devices")
                .text(format!(
                    " devices (layout {}, {}), against {} device(s){caveat}.",
                    a.entries[s.points[last]].layout().label(),
                    s.family.label(),
                    base.layout().devices()
                ))
                .done(
                    format!("{} {}", s.workload, s.label),
                    chart_of(figs, "scaling", s.workload),
                    section,
                )
                .about(s.workload),
        );
    }
    found.cite(doc.table(t, &format!("scaling_{}", s.workload), None), list);
}

/// ` (caveat: ...)` when included entries are not representative.
fn series_caveat(a: &Analysis, points: &[usize]) -> String {
    let kinds: std::collections::BTreeSet<String> = points
        .iter()
        .flat_map(|&i| a.entries[i].concern_kinds())
        .collect();
    if kinds.is_empty() {
        String::new()
    } else {
        format!(" (caveat: not representative: {})", kinds_text(&kinds))
    }
}

fn coll_scale_table(
    doc: &mut Doc,
    a: &Analysis,
    cs: &CollScale,
    found: &mut Findings,
    section: &str,
) {
    doc.para(vec![
        Span::Strong(format!("{} {}", cs.workload, cs.label)),
        text(format!(
            ", {}: busbw (GB/s) per size and device count, with the retention R against {} in parentheses.",
            cs.family.label(),
            cs.retention_base()
                .map_or("-".to_string(), |b| format!("{} devices", cs.layouts[b].devices()))
        )),
    ]);
    let mut cols: Vec<String> = vec!["S".into()];
    for l in &cs.layouts {
        cols.push(format!("{} ({} dev) busbw", l.label(), l.devices()));
    }
    for l in &cs.layouts {
        cols.push(format!("{} R", l.label()));
    }
    let mut t = Table {
        columns: cols,
        rows: Vec::new(),
    };
    let base = cs.retention_base();
    for (req, row) in &cs.sizes {
        let bw: Vec<Option<f64>> = row
            .iter()
            .map(|e| {
                e.and_then(|i| a.entries[i].case.busbw_gbps)
                    .filter(|b| *b > 0.0)
            })
            .collect();
        let b0 = base.and_then(|b| bw[b]);
        let mut cells = vec![bytes_cell(*req)];
        cells.extend(bw.iter().map(|b| Cell::opt(*b, NumFmt::Sig)));
        cells.extend(bw.iter().enumerate().map(|(j, b)| match (b, b0, base) {
            (Some(b), Some(b0), Some(k)) if j >= k => Cell::num(b / b0, NumFmt::Fixed(3)),
            _ => Cell::Empty,
        }));
        t.push(cells);
    }
    // Retention at the largest scale, for the largest size measured there.
    let last = cs.layouts.len() - 1;
    let col = format!("{} R", cs.layouts[last].label());
    let j = t.columns.iter().position(|c| *c == col);
    let row = j.and_then(|j| {
        (0..t.rows.len())
            .rev()
            .find(|&r| t.rows[r][j].sort_value().is_some())
    });
    let mut list = Vec::new();
    if let (Some(r), Some(b)) = (row, cs.retention_base().filter(|&b| b < last)) {
        let pts: Vec<usize> = cs
            .sizes
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().copied())
            .collect();
        list.push(
            Sentence::new(&t, r)
                .text(format!(
                    "busbw retention at {} devices ({}) against {} devices: R = ",
                    cs.layouts[last].devices(),
                    cs.layouts[last].label(),
                    cs.layouts[b].devices()
                ))
                .fig(&col)
                .text(" at S = ")
                .fig("S")
                .text(format!("{}.", series_caveat(a, &pts)))
                .done(format!("{} {}", cs.workload, cs.label), None, section)
                .about(cs.workload),
        );
    }
    found.cite(
        doc.table(t, &format!("busbw_vs_devices_{}", cs.workload), None),
        list,
    );
}

fn cost_model(doc: &mut Doc, a: &Analysis, figs: &[Figure]) {
    if a.collectives.is_empty() {
        return;
    }
    doc.heading(2, "Cost model: α–β fits and predictions");
    doc.prose("Per set-up fits of time = α + β·F·S are in the collective tables above; their residuals per size are below. Across device counts, each collective's ring and tree forms are fitted, checked on the largest measured scale, and used to predict 2× and 4× that scale (labelled PREDICTION).");
    let mut wls: Vec<Workload> = a.collectives.iter().map(|v| v.workload).collect();
    wls.dedup();
    for w in &wls {
        add_figures(doc, figs, "fit", *w);
    }
    let mut t = Table::new(&[
        "workload", "variant", "set-up", "S", "measured", "fitted", "residual",
    ]);
    for v in a.collectives.iter().filter(|v| v.charted) {
        for c in &v.curves {
            let Ok(h) = &c.regimes else {
                continue;
            };
            for &i in &c.points {
                let e = &a.entries[i];
                let (Some(b), Some(tm), Some(f)) = (e.bytes(), e.time_s(), e.case.busbw_factor)
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
            "α–β fit residuals per size, each size against its own regime (charted variants)"
                .into(),
        ),
    );
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
                    Cell::text(fit_note(&seg.hockney.fit)),
                ]);
            }
        }
    }
    doc.table(
        t,
        "fit_regimes",
        Some("α–β per regime: every set-up's segments, with their size ranges".into()),
    );
    // Across scales: a summary of every series, then details of the charted ones.
    doc.heading(3, "Forms across device counts");
    let mut t = Table::new(&[
        "workload",
        "series",
        "family",
        "device counts",
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
                let b = m.best_fit();
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
                    Cell::text(devs),
                    Cell::text(b.form.name),
                    Cell::num(b.fit.a * 1e6, NumFmt::Sig),
                    Cell::opt((b.fit.b > 0.0).then(|| 1e-9 / b.fit.b), NumFmt::Sig),
                    med,
                    max,
                    Cell::text(match (&b.holdout, m.best_by_holdout) {
                        (Err(e), _) => format!("no held-out check: {e}"),
                        (Ok(h), _) if h.median_abs_rel_err > model::UNRELIABLE_HOLDOUT => format!(
                            "unreliable: held-out error above {:.0} %",
                            model::UNRELIABLE_HOLDOUT * 100.0
                        ),
                        (Ok(_), true) => "chosen on the held-out scale".to_string(),
                        (Ok(_), false) => "chosen in-sample".to_string(),
                    }),
                ]);
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
                Cell::text(format!("not fitted: {e}")),
            ]),
        }
    }
    doc.table(t, "scale_models", None);
    for w in &wls {
        add_figures(doc, figs, "predict", *w);
    }
    for cs in a.coll_scaling.iter().filter(|c| c.charted) {
        let Ok(m) = &cs.model else {
            continue;
        };
        doc.para(vec![
            Span::Strong(format!("{} {} ({})", cs.workload, cs.label, cs.family.label())),
            text(": every form fitted on all scales, and on the smaller ones to predict the largest."),
        ]);
        let mut t = Table::new(&[
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
        for (k, f) in m.fits.iter().enumerate() {
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
                Cell::text(f.form.name),
                Cell::text(f.form.formula),
                Cell::num(f.fit.a * 1e6, NumFmt::Sig),
                Cell::opt((f.fit.b > 0.0).then(|| 1e-9 / f.fit.b), NumFmt::Sig),
                Cell::num(f.fit.r2, NumFmt::Fixed(3)),
                on,
                at,
                med,
                max,
                Cell::text(if k == m.best { "yes" } else { "" }),
            ]);
        }
        doc.table(t, &format!("forms_{}", cs.workload), None);
        // Predictions at the sizes measured at the largest scale.
        let last = cs.layouts.len() - 1;
        let pmax = cs.layouts[last].devices();
        let best = m.best_fit();
        let mut t = Table {
            columns: vec![
                "S".to_string(),
                format!("measured at {pmax}"),
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
            let (Some(b), Some(tm)) = (e.bytes(), e.time_s()) else {
                continue;
            };
            let b = b as f64;
            t.push(vec![
                bytes_cell(*req),
                Cell::num(tm, NumFmt::Seconds),
                Cell::num(best.predict_s(pmax, b), NumFmt::Seconds),
                Cell::num(best.predict_s(m.predict_devices[0], b), NumFmt::Seconds),
                Cell::num(best.predict_s(m.predict_devices[1], b), NumFmt::Seconds),
            ]);
        }
        doc.table(t, &format!("predictions_{}", cs.workload), None);
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

fn winner_text(g: &RatioGroup, w: Winner) -> String {
    match w {
        Winner::First => g.num_label.clone(),
        Winner::Second => g.den_label.clone(),
        Winner::Tie => "tie".to_string(),
        Winner::Mixed => "mixed".to_string(),
    }
}

fn ratios(doc: &mut Doc, a: &Analysis, figs: &[Figure], kind: RatioKind, found: &mut Findings) {
    let all: Vec<&RatioGroup> = a.ratios.iter().filter(|g| g.kind == kind).collect();
    let include = a.options.include_unrepresentative;
    let (groups, apart): (Vec<&RatioGroup>, Vec<&RatioGroup>) =
        all.iter().partition(|g| include || g.concerns.is_empty());
    let (title, stem, what) = match kind {
        RatioKind::Topology => (
            "Pure MPI vs hybrid",
            "topology",
            "time(hybrid) / time(pure MPI)",
        ),
        RatioKind::Binding => ("CPU binding", "binding", "time(policy) / time(reference)"),
    };
    doc.heading(2, title);
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    if groups.is_empty() && !apart.is_empty() {
        let mut kinds = std::collections::BTreeSet::new();
        for g in &apart {
            kinds.extend(g.concerns.iter().cloned());
        }
        let why = format!(
            "no winner is named: every comparison involves cases that are not representative ({}); they are listed below without a verdict. --include-unrepresentative names winners from them, marked.",
            kinds_text(&kinds)
        );
        doc.para(vec![text(format!("{title}: {why}"))]);
        found.items.push(Finding {
            topic: title.to_string(),
            parts: vec![Part::Text(why)],
            table: None,
            row: 0,
            chart: None,
            section: section.clone(),
            workload: None,
        });
        apart_table(doc, &apart, stem);
        return;
    }
    if groups.is_empty() {
        doc.para(vec![text(match kind {
            RatioKind::Topology => "No pure/hybrid pairs: no two measured cases differ only in topology (measure the same layout with --topology pure and --topology hybrid).",
            RatioKind::Binding => "No binding comparison: no two measured cases differ only in --binding.",
        })]);
        return;
    }
    let mut wls: Vec<Workload> = groups.iter().map(|g| g.workload).collect();
    wls.sort();
    wls.dedup();
    for w in wls {
        add_figures(doc, figs, stem, w);
    }
    doc.prose(&format!(
        "Ratio = {what}, summarised per size band as the geometric mean with min–max; the winner is named when the mean leaves 1 ± {} and more than half of the band's sizes agree (otherwise `mixed`).",
        a.options.tie_band
    ));
    let mut t = Table::new(&[
        "workload",
        "compared",
        "held fixed",
        "band",
        "sizes",
        "ratio (geomean)",
        "min",
        "max",
        "winner",
        "agree",
        "caveat",
    ]);
    let mut list = Vec::new();
    // Findings: every band of the largest layout compared, per workload.
    let mut largest: BTreeMap<Workload, u32> = BTreeMap::new();
    for g in &groups {
        let m = largest.entry(g.workload).or_default();
        *m = (*m).max(g.layout.devices());
    }
    let mut told: std::collections::BTreeSet<Workload> = Default::default();
    for g in &groups {
        let ratios: Vec<(derive::Band, f64)> = g.rows.iter().map(|r| (r.band, r.ratio)).collect();
        let cite = g.charted
            && largest.get(&g.workload) == Some(&g.layout.devices())
            && !told.contains(&g.workload);
        for b in &g.bands {
            let (w, agree) = b.verdict(&ratios, a.options.tie_band);
            if cite {
                let r = t.rows.len();
                let verdict = match w {
                    Winner::First => format!("{} faster", g.num_label),
                    Winner::Second => format!("{} faster", g.den_label),
                    Winner::Tie => "a tie".to_string(),
                    Winner::Mixed => "no clear winner (sizes disagree)".to_string(),
                };
                list.push((
                    r,
                    verdict,
                    g.workload,
                    g.label.clone(),
                    b.band.name(),
                    g.concerns.clone(),
                    g.num_label.clone(),
                    g.den_label.clone(),
                ));
            }
            t.push(vec![
                Cell::text(g.workload.to_string()),
                Cell::text(format!("{} / {}", g.num_label, g.den_label)),
                Cell::text(g.label.clone()),
                Cell::text(b.band.name()),
                Cell::UInt(b.n as u64),
                Cell::num(b.geomean, NumFmt::Ratio),
                Cell::num(b.min, NumFmt::Ratio),
                Cell::num(b.max, NumFmt::Ratio),
                Cell::text(winner_text(g, w)),
                Cell::text(format!("{agree}/{}", b.n)),
                Cell::text(if g.concerns.is_empty() {
                    String::new()
                } else {
                    format!("not representative: {}", kinds_text(&g.concerns))
                }),
            ]);
        }
        if cite {
            told.insert(g.workload);
        }
    }
    let list: Vec<Finding> = list
        .into_iter()
        .map(|(r, verdict, w, held, band, concerns, num, den)| {
            Sentence::new(&t, r)
                .text(format!(
                    "at {held}, {band}: {verdict}, time {num} / {den} = "
                ))
                .fig("ratio (geomean)")
                .text(" (geometric mean over ")
                .fig("sizes")
                .text(" size(s), range ")
                .fig("min")
                .text(" – ")
                .fig("max")
                .text(if concerns.is_empty() {
                    ")".to_string()
                } else {
                    format!("; caveat: not representative: {})", kinds_text(&concerns))
                })
                .text(".")
                .done(format!("{w}, {title}"), chart_of(figs, stem, w), &section)
                .about(w)
        })
        .collect();
    found.cite(doc.table(t, &format!("{stem}_bands"), None), list);
    if !apart.is_empty() {
        doc.para(vec![text(format!(
            "{} comparison(s) involve cases that are not representative: shown apart, without a verdict.",
            apart.len()
        ))]);
        apart_table(doc, &apart, stem);
    }
    let mut t = Table::new(&[
        "workload",
        "compared",
        "held fixed",
        "case",
        "time num",
        "time den",
        "ratio",
    ]);
    for g in groups.iter().filter(|g| g.charted) {
        for r in &g.rows {
            let (n, d) = (&a.entries[r.num], &a.entries[r.den]);
            t.push(vec![
                Cell::text(g.workload.to_string()),
                Cell::text(format!("{} / {}", g.num_label, g.den_label)),
                Cell::text(g.label.clone()),
                Cell::text(case_text(d)),
                Cell::opt(n.time_s(), NumFmt::Seconds),
                Cell::opt(d.time_s(), NumFmt::Seconds),
                Cell::num(r.ratio, NumFmt::Ratio),
            ]);
        }
    }
    doc.table(
        t,
        &format!("{stem}_ratios"),
        Some(format!(
            "Every {stem} ratio of the charted variants, per case"
        )),
    );
}

/// Ratio bands of comparisons left out: their figures, no winner, and why.
fn apart_table(doc: &mut Doc, groups: &[&RatioGroup], stem: &str) {
    let mut t = Table::new(&[
        "workload",
        "compared",
        "held fixed",
        "band",
        "sizes",
        "ratio (geomean)",
        "min",
        "max",
        "winner",
        "why",
    ]);
    for g in groups {
        for b in &g.bands {
            t.push(vec![
                Cell::text(g.workload.to_string()),
                Cell::text(format!("{} / {}", g.num_label, g.den_label)),
                Cell::text(g.label.clone()),
                Cell::text(b.band.name()),
                Cell::UInt(b.n as u64),
                Cell::num(b.geomean, NumFmt::Ratio),
                Cell::num(b.min, NumFmt::Ratio),
                Cell::num(b.max, NumFmt::Ratio),
                Cell::text("not named"),
                Cell::text(format!("not representative: {}", kinds_text(&g.concerns))),
            ]);
        }
    }
    doc.table(t, &format!("{stem}_bands_unrepresentative"), None);
}

fn stragglers(doc: &mut Doc, a: &Analysis, found: &mut Findings) {
    doc.heading(2, "Load imbalance and stragglers");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    let s = &a.stragglers;
    if s.cases == 0 {
        doc.prose("No measured case has 2 or more ranks with per-rank times: nothing to compare.");
        return;
    }
    doc.para(vec![text(format!(
        "{} measured case(s) with 2 or more ranks. Straggler score = geometric mean of (rank mean / median rank mean); see Definitions.",
        s.cases
    ))]);
    let mut t = Table::new(&["node", "host", "cases", "slowest in", "score"]);
    for n in s.nodes.iter().take(TOP) {
        t.push(vec![
            Cell::text(n.node_name.clone()),
            Cell::text(n.host.clone()),
            Cell::UInt(n.cases as u64),
            Cell::UInt(n.slowest_in as u64),
            Cell::num(n.score, NumFmt::Fixed(3)),
        ]);
    }
    let mut list = Vec::new();
    // A slowest node needs another node to be slower than.
    if t.rows.len() >= 2 {
        list.push(
            Sentence::new(&t, 0)
                .text("slowest node ")
                .fig("node")
                .text(" (host ")
                .fig("host")
                .text("): straggler score ")
                .fig("score")
                .text(", slowest in ")
                .fig("slowest in")
                .text(" of ")
                .fig("cases")
                .text(" case(s).")
                .done("Stragglers", None, &section),
        );
    }
    found.cite(doc.table(t, "straggler_nodes", None), list);
    let mut t = Table::new(&[
        "input",
        "launch",
        "set-up",
        "rank",
        "node",
        "host",
        "cases",
        "slowest in",
        "score",
    ]);
    for r in s.ranks.iter().take(TOP) {
        t.push(vec![
            Cell::UInt(r.source as u64 + 1),
            Cell::text(r.launch_id.clone()),
            Cell::text(r.setup.clone()),
            Cell::UInt(u64::from(r.rank)),
            Cell::text(r.node_name.clone()),
            Cell::text(r.host.clone()),
            Cell::UInt(r.cases as u64),
            Cell::UInt(r.slowest_in as u64),
            Cell::num(r.score, NumFmt::Fixed(3)),
        ]);
    }
    doc.table(t, "straggler_ranks", None);
    let mut t = Table::new(&[
        "case",
        "set-up",
        "imbalance (max/min)",
        "slowest rank",
        "node",
        "host",
        "time",
    ]);
    for &i in s.most_imbalanced.iter().take(TOP) {
        let e = &a.entries[i];
        let Some(im) = e.imbalance else {
            continue;
        };
        t.push(vec![
            Cell::text(case_text(e)),
            Cell::text(setup_text(a, &e.shape())),
            Cell::num(im.ratio, NumFmt::Ratio),
            Cell::UInt(im.slowest_rank as u64),
            e.slowest
                .map_or(Cell::Empty, |r| Cell::text(r.node_name.clone())),
            e.slowest
                .map_or(Cell::Empty, |r| Cell::text(r.host.clone())),
            Cell::opt(e.time_s(), NumFmt::Seconds),
        ]);
    }
    doc.table(t, "most_imbalanced", None);
}

/// Mean GPU utilisation below which a GPU counts as under-used during a case.
pub const BUSY_UTIL_PERCENT: f64 = 50.0;

/// Whether NVML saw a GPU mostly idle during a case (too few kernels to keep it busy, or a
/// GPU the launch did not use at all).
pub fn under_used(t: &DeviceTelemetry) -> bool {
    t.gpu_util_percent_mean
        .is_some_and(|u| u < BUSY_UTIL_PERCENT)
}

/// NVML telemetry, where the results carry any: were all GPUs busy?
fn gpu_use(doc: &mut Doc, a: &Analysis) {
    let rows: Vec<(&Entry, &DeviceTelemetry)> = a
        .entries
        .iter()
        .flat_map(|e| e.case.telemetry.iter().map(move |t| (e, t)))
        .collect();
    if rows.is_empty() {
        return;
    }
    doc.heading(2, "GPU utilisation during cases (NVML)");
    let low = rows.iter().filter(|(_, t)| under_used(t)).count();
    let failed = rows.iter().filter(|(_, t)| t.error.is_some()).count();
    doc.para(vec![text(format!(
        "{} GPU-case(s) sampled; {low} averaged under {BUSY_UTIL_PERCENT} % utilisation (NVML: share of time a kernel ran), {failed} could not be sampled. Utilisation is coarse for cases shorter than a second; a minimum SM clock far below the maximum means idling or throttling. Least busy first:",
        rows.len()
    ))]);
    let mut order = rows;
    order.sort_by(|x, y| {
        let u = |t: &DeviceTelemetry| t.gpu_util_percent_mean.unwrap_or(f64::INFINITY);
        u(x.1).total_cmp(&u(y.1))
    });
    let mut t = Table::new(&[
        "case",
        "set-up",
        "GPU",
        "samples",
        "util mean %",
        "util min %",
        "SM clock min (MHz)",
        "SM clock max (MHz)",
        "power max (W)",
        "temp max (°C)",
        "note",
    ]);
    for (e, g) in order.iter().take(TOP * 2) {
        let note = match (&g.error, under_used(g)) {
            (Some(err), _) => err.clone(),
            (None, true) => "under-used".to_string(),
            (None, false) => String::new(),
        };
        t.push(vec![
            Cell::text(case_text(e)),
            Cell::text(setup_text(a, &e.shape())),
            Cell::UInt(u64::from(g.device)),
            Cell::UInt(u64::from(g.samples)),
            Cell::opt(g.gpu_util_percent_mean, NumFmt::Fixed(1)),
            Cell::opt(g.gpu_util_percent_min, NumFmt::Fixed(0)),
            Cell::opt(g.sm_clock_mhz_min, NumFmt::Fixed(0)),
            Cell::opt(g.sm_clock_mhz_max, NumFmt::Fixed(0)),
            Cell::opt(g.power_w_max, NumFmt::Fixed(0)),
            Cell::opt(g.temperature_c_max, NumFmt::Fixed(0)),
            Cell::text(note),
        ]);
    }
    doc.table(t, "gpu_use", None);
}

fn spread(doc: &mut Doc, a: &Analysis) {
    doc.heading(2, "Spread and noisy cases");
    let with = a.entries.iter().filter(|e| e.spread.is_some()).count();
    doc.para(vec![text(format!(
        "{} of {with} case(s) with samples are noisy (cv > {}). The {} noisiest:",
        a.noisy.len(),
        a.options.noisy_cv,
        a.noisy.len().min(TOP)
    ))]);
    let mut t = Table::new(&[
        "case", "set-up", "samples", "median", "p5", "p95", "cv", "time_s",
    ]);
    for &i in a.noisy.iter().take(TOP) {
        let e = &a.entries[i];
        let Some(s) = e.spread else {
            continue;
        };
        t.push(vec![
            Cell::text(case_text(e)),
            Cell::text(setup_text(a, &e.shape())),
            Cell::UInt(s.n as u64),
            Cell::num(s.median_s, NumFmt::Seconds),
            Cell::num(s.p5_s, NumFmt::Seconds),
            Cell::num(s.p95_s, NumFmt::Seconds),
            Cell::num(s.cv, NumFmt::Percent),
            Cell::opt(e.time_s(), NumFmt::Seconds),
        ]);
    }
    doc.table(t, "noisy", None);
}

fn problems(doc: &mut Doc, a: &Analysis) {
    doc.heading(2, "Failed, wrong and skipped cases");
    let bad: Vec<&Entry> = a.problems.iter().map(|&i| &a.entries[i]).collect();
    let launches: Vec<(usize, &crate::results::schema::LaunchRecord)> = a
        .sources
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.file.launches.iter().map(move |l| (i, l)))
        .filter(|(_, l)| l.status != crate::results::schema::LaunchStatus::Ok)
        .collect();
    if bad.is_empty() && launches.is_empty() {
        doc.prose("Every case was measured and validated.");
        return;
    }
    let mut t = Table::new(&["case", "set-up", "status", "wrong", "message"]);
    let mut order: Vec<&Entry> = bad.clone();
    // wrong results first: they matter most
    order.sort_by_key(|e| match e.case.status {
        CaseStatus::Wrong => 0,
        CaseStatus::Failed => 1,
        CaseStatus::Timeout => 2,
        _ => 3,
    });
    for e in order.iter().take(TOP * 2) {
        t.push(vec![
            Cell::text(case_text(e)),
            Cell::text(setup_text(a, &e.shape())),
            Cell::text(e.case.status.name()),
            Cell::UInt(e.case.wrong),
            Cell::text(e.case.message.clone().unwrap_or_default()),
        ]);
    }
    if !bad.is_empty() {
        doc.para(vec![text(format!(
            "{} case(s) not measured or not valid; wrong results first.",
            bad.len()
        ))]);
    }
    doc.table(t, "problems", None);
    let mut t = Table::new(&["input", "launch", "set-up", "status", "stderr (last lines)"]);
    for (i, l) in launches {
        t.push(vec![
            Cell::UInt(i as u64 + 1),
            Cell::text(l.launch_id.clone()),
            Cell::text(l.shape.label()),
            Cell::text(format!("{:?}", l.status).to_lowercase()),
            Cell::text(l.stderr_tail.clone().unwrap_or_default()),
        ]);
    }
    doc.table(t, "failed_launches", None);
}

fn all_cases(doc: &mut Doc) {
    doc.heading(2, "All cases");
    doc.para(vec![
        text("One row per case, every field: "),
        Span::Link {
            text: "results.csv".into(),
            href: "results.csv".into(),
        },
        text(" (columns are the results.json field paths; raw samples and per-rank times stay in results.json). The sortable table in report.html shows the main columns. Every CSV file holds exact values in base units: times in seconds, sizes in bytes, percentages as fractions."),
    ]);
}

/// The HTML case table: a projection of the one case flattening that also writes results.csv.
pub fn case_block(cases: &Table) -> Block {
    Block::Table(super::doc::TableBlock {
        table: cases.project(CASE_COLUMNS),
        csv: "results.csv".to_string(),
        export: false,
        folded: Some("Every case (click a column to sort)".to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_is_readable() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
    }
}
