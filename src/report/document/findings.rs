//! The findings that lead the report: sentences whose figures are cells of the tables below,
//! gathered while the sections are built, and the table saying where each figure comes from.

use crate::params::Workload;
use crate::present::doc::{text, Block, Doc, Span};
use crate::present::table::{Cell, Table};
use crate::report::analyze::Analysis;
use crate::report::plot::{Figure, FigureKind};

/// A piece of a finding's sentence: words, or a figure taken from a cell of its table.
#[derive(Debug, Clone)]
pub(super) enum Part {
    Text(String),
    Fig { column: String, cell: Cell },
}

/// One sentence of the findings: its figures are cells of one row of one table.
#[derive(Debug, Clone)]
pub(super) struct Finding {
    pub(super) topic: String,
    pub(super) parts: Vec<Part>,
    /// The table's CSV (`tables/x.csv`) and the row (0-based, data rows) holding the figures.
    pub(super) table: Option<String>,
    pub(super) row: usize,
    pub(super) chart: Option<String>,
    /// Anchor of the section that explains it.
    pub(super) section: String,
    /// The workload it is about (findings are grouped by workload; set-up ones first).
    pub(super) workload: Option<Workload>,
    /// Whether it answers the study's main question (how the work scales across devices):
    /// the report's first screen leads with such a finding when there is one.
    pub(super) headline: bool,
}

/// Findings gathered while the sections are built.
#[derive(Debug, Default)]
pub(super) struct Findings {
    pub(super) items: Vec<Finding>,
}

/// A sentence under construction, reading figures from `t`'s row `row`.
pub(super) struct Sentence<'t> {
    t: &'t Table,
    row: usize,
    parts: Vec<Part>,
}

impl<'t> Sentence<'t> {
    pub(super) fn new(t: &'t Table, row: usize) -> Self {
        Sentence {
            t,
            row,
            parts: Vec::new(),
        }
    }
    pub(super) fn text(mut self, s: impl Into<String>) -> Self {
        self.parts.push(Part::Text(s.into()));
        self
    }
    /// The cell of `column` in the sentence's row (the column must exist).
    pub(super) fn fig(mut self, column: &str) -> Self {
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
    pub(super) fn done(
        self,
        topic: impl Into<String>,
        chart: Option<String>,
        section: &str,
    ) -> Finding {
        Finding {
            topic: topic.into(),
            parts: self.parts,
            table: None,
            row: self.row,
            chart,
            section: section.to_string(),
            workload: None,
            headline: false,
        }
    }
}

impl Finding {
    pub(super) fn about(mut self, w: Workload) -> Finding {
        self.workload = Some(w);
        self
    }
    /// Marks it as an answer to the main question (see `headline`).
    pub(super) fn headline(mut self) -> Finding {
        self.headline = true;
        self
    }
}

impl Findings {
    /// The order the section lists them in: set-up first, then per workload (in section order
    /// within one), then the rest (a stable sort: sorting twice changes nothing).
    pub(super) fn sort(&mut self) {
        self.items
            .sort_by_key(|f| match (f.topic.as_str(), f.workload) {
                ("Set-up", _) => (0, None),
                (_, Some(w)) => (1, Some(w)),
                _ => (2, None),
            });
    }

    /// Adds findings citing the table just written as `csv`.
    pub(super) fn cite(&mut self, csv: Option<String>, list: Vec<Finding>) {
        for mut f in list {
            f.table = csv.clone();
            self.items.push(f);
        }
    }
}

/// The first chart of `kind` for `w`, if one was drawn.
pub(super) fn chart_of(figs: &[Figure], kind: FigureKind, w: Workload) -> Option<String> {
    figs.iter()
        .find(|f| f.kind == kind && f.workload == w)
        .map(|f| f.stem.clone())
}

/// Writes the findings section; returns the table of where each figure comes from.
pub(super) fn findings(doc: &mut Doc, a: &Analysis<'_>, mut found: Findings) -> Table {
    found.sort();
    doc.heading(2, "Findings");
    let left_out = a.unrepresentative.len();
    doc.para(vec![text(if found.items.is_empty() {
        "No finding can be stated: no measured case supports one (see the sections below).".to_string()
    } else if left_out > 0 && !a.options.include_unrepresentative {
        format!("What the measurements support, each with its table and chart. {} that cannot represent {} set-up {} left out of these (see Not representative).", crate::present::count(left_out, "case", "cases"), if left_out == 1 { "its" } else { "their" }, if left_out == 1 { "is" } else { "are" })
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
