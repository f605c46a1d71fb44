//! What the report says, in order: the context (what ran where), findings, inputs and set-up, definitions, collectives (size curves and
//! α–β fits), scaling across devices, cost models and predictions, pure vs hybrid, binding,
//! stragglers, GPU utilisation (where NVML sampled it), spread, the trend in a history index
//! (`--history-db`), the link matrices (`links.json`), problems, and every case.
//! Builds the neutral [`Doc`] that the Markdown and HTML renderers print; every table here is
//! also exported as CSV.
//!
//! One file per section, in report order: [`overview`], [`context`], [`findings`] (and the
//! sentence builder the sections use), [`unrepresentative`], [`collectives`], [`per_size`]
//! (nccl-tests layout), [`scaling`], [`ceilings`] (figures far below their ceilings,
//! hardware warnings), [`cost_model`],
//! [`ratios`] (pure vs hybrid, binding), [`stragglers`], [`gpu_use`], [`spread`], [`links`],
//! [`problems`], [`inputs`] (Appendix A), [`definitions`] (Appendix B) and [`cases`] (all
//! cases). This file orders them and holds the helpers they share.

mod cases;
mod ceilings;
mod collectives;
mod context;
mod cost_model;
mod definitions;
mod findings;
mod glance;
mod gpu_use;
mod inputs;
pub(crate) mod links;
mod nccl;
mod overview;
mod per_size;
mod problems;
mod ratios;
mod scaling;
mod spread;
mod stragglers;
pub(crate) mod trend;
mod unrepresentative;

pub(crate) use cases::case_block;
pub(crate) use glance::Glance;

use super::analyze::{style_key, Analysis, Entry, Layout, RatioKind};
use super::plot::{setup_label, Figure, FigureKind};
use crate::params::{LaunchShape, Workload};
use crate::present::doc::{Block, Doc, FigureBlock};
use crate::present::table::{Cell, NumFmt};
use findings::Findings;

/// Rows kept in the longer lists (straggler, noisy, problem tables).
const TOP: usize = 25;

fn setup_text(a: &Analysis<'_>, s: &LaunchShape) -> String {
    setup_label(a, Layout::of(s), style_key(s))
}

/// A size: `1MiB` for people, the number of bytes in CSV.
fn bytes_cell(b: u64) -> Cell {
    Cell::num(b as f64, NumFmt::Bytes)
}

fn case_text(e: &Entry<'_>) -> String {
    e.params().label()
}

/// Adds chart `i` of the report (`f`, drawn as figure `i`) as a figure block.
pub(crate) fn push_figure(doc: &mut Doc, i: usize, f: &Figure) {
    doc.blocks.push(Block::Figure(FigureBlock {
        figure: i,
        stem: f.stem.clone(),
        title: f.title.clone(),
        caption: f.caption.clone(),
    }));
}

fn add_figures(doc: &mut Doc, figs: &[Figure], kind: FigureKind, w: Workload) {
    for (i, f) in figs.iter().enumerate() {
        if f.kind == kind && f.workload == w {
            push_figure(doc, i, f);
        }
    }
}

/// Builds the report and its first screen (three lines, also first in the document). `figs`
/// are the charts drawn (their order is the figure index).
pub(crate) fn build(
    a: &Analysis<'_>,
    figs: &[Figure],
    title: &str,
    trend: Option<&trend::Trend>,
    link_files: &[links::LinksInput<'_>],
) -> (Doc, Glance) {
    let mut doc = Doc {
        title: title.to_string(),
        blocks: Vec::new(),
    };
    overview::overview(&mut doc, a);
    context::context(&mut doc, a);
    let head = doc.blocks.len();
    let mut found = Findings::default();
    unrepresentative::unrepresentative(&mut doc, a, &mut found);
    collectives::collectives(&mut doc, a, figs, &mut found);
    per_size::per_size(&mut doc, a);
    nccl::nccl(&mut doc, a, figs, &mut found);
    scaling::scaling(&mut doc, a, figs, &mut found);
    ceilings::ceilings(&mut doc, a, &mut found);
    super::ddp::section(&mut doc, a, figs);
    cost_model::cost_model(&mut doc, a, figs);
    ratios::ratios(&mut doc, a, figs, RatioKind::Topology, &mut found);
    ratios::ratios(&mut doc, a, figs, RatioKind::Binding, &mut found);
    stragglers::stragglers(&mut doc, a, &mut found);
    gpu_use::gpu_use(&mut doc, a);
    spread::spread(&mut doc, a);
    if let Some(t) = trend {
        t.section(&mut doc, figs);
    }
    links::links(&mut doc, link_files);
    problems::problems(&mut doc, a);
    inputs::inputs(&mut doc, a);
    definitions::definitions(&mut doc, a);
    // Findings lead: built last (they cite the tables above by name), moved to the top.
    let tail = doc.blocks.len();
    found.sort();
    let first_screen = glance::glance(a, &found);
    let sources = findings::findings(&mut doc, a, found);
    let moved: Vec<Block> = doc.blocks.drain(tail..).collect();
    doc.blocks.splice(head..head, moved);
    if !sources.is_empty() {
        doc.heading(2, "Appendix C: where the findings' figures come from");
        doc.prose("Every figure of a finding is a cell of a table of this report: its CSV, the row (0-based, data rows) and the column.");
        doc.table(sources, "findings", None);
    }
    cases::all_cases(&mut doc);
    // The three lines come before everything, the opening paragraph included.
    doc.blocks.insert(
        0,
        Block::Defs(
            first_screen
                .iter()
                .map(|(k, v)| (k.to_string(), vec![crate::present::doc::text(v.clone())]))
                .collect(),
        ),
    );
    (doc, first_screen)
}
