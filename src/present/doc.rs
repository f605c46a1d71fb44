//! A neutral document (headings, paragraphs, lists, tables, figures, warnings, folded parts),
//! built once by `report` or `compare` and rendered by [`super::text`], [`super::markdown`] and
//! [`super::html`], so every format says the same thing. Text from results files (host names,
//! labels, messages) is only ever held as plain [`Span::Text`] or table cells; each renderer
//! escapes it for its format.

use super::table::Table;

/// Inline text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Span {
    /// Plain text, escaped by every renderer.
    Text(String),
    /// Code (field names, commands).
    Code(String),
    Strong(String),
    /// A link to a file of the report (relative) or an anchor.
    Link {
        text: String,
        href: String,
    },
    /// A link to one of the report's charts by its stem (HTML: the inline figure; Markdown:
    /// the chart file, where one was written).
    Chart {
        text: String,
        stem: String,
    },
    /// A line break inside a paragraph.
    Break,
}

/// Parses the report's own prose: `backticks` become code, everything else is text. Never used
/// on strings from results files.
pub(crate) fn prose(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        if part.is_empty() {
            continue;
        }
        out.push(if i % 2 == 1 {
            Span::Code(part.to_string())
        } else {
            Span::Text(part.to_string())
        });
    }
    out
}

pub(crate) fn text(s: impl Into<String>) -> Span {
    Span::Text(s.into())
}

/// A block of the document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    Heading {
        level: u8,
        text: String,
        id: String,
    },
    Para(Vec<Span>),
    Bullets(Vec<Vec<Span>>),
    /// Term and definition.
    Defs(Vec<(String, Vec<Span>)>),
    Table(TableBlock),
    Figure(FigureBlock),
    /// Warnings, one per line, each shown after `warning: `.
    Warnings(Vec<Vec<Span>>),
    /// Blocks a reader opens on demand (HTML and Markdown `<details>`; text shows them under
    /// the summary as a heading).
    Fold {
        summary: String,
        blocks: Vec<Block>,
    },
    /// Small print at the end of a part (methods, thresholds).
    FinePrint(Vec<Span>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableBlock {
    pub table: Table,
    /// Relative path of the CSV holding this table (`tables/<name>.csv`).
    pub csv: String,
    /// Whether the report writes `csv` from this table (false when it is a view of a CSV
    /// written elsewhere, such as results.csv).
    pub export: bool,
    /// Shown folded in HTML (long tables).
    pub folded: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FigureBlock {
    /// Index into the report's figures.
    pub figure: usize,
    pub stem: String,
    pub title: String,
    pub caption: String,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Doc {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Doc {
    pub(crate) fn heading(&mut self, level: u8, text: impl Into<String>) {
        let text = text.into();
        let base = anchor(&text);
        // Anchors must be unique in the page.
        let mut id = base.clone();
        let mut n = 1;
        while self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Heading { id: x, .. } if *x == id))
        {
            n += 1;
            id = format!("{base}-{n}");
        }
        self.blocks.push(Block::Heading { level, text, id });
    }
    pub(crate) fn para(&mut self, spans: Vec<Span>) {
        self.blocks.push(Block::Para(spans));
    }
    pub(crate) fn prose(&mut self, s: &str) {
        self.para(prose(s));
    }
    /// Adds a table (unless empty) exported as `tables/<csv>.csv`; the name is made unique and
    /// returned (`None` for an empty table, which is not added).
    pub(crate) fn table(
        &mut self,
        table: Table,
        csv: &str,
        folded: Option<String>,
    ) -> Option<String> {
        if table.is_empty() {
            return None;
        }
        let mut name = format!("tables/{csv}.csv");
        let mut n = 1;
        while self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Table(t) if t.csv == name))
        {
            n += 1;
            name = format!("tables/{csv}_{n}.csv");
        }
        self.blocks.push(Block::Table(TableBlock {
            table,
            csv: name.clone(),
            export: true,
            folded,
        }));
        Some(name)
    }
    /// Adds a table with no CSV file of its own (a view, or a document without files).
    pub(crate) fn inline_table(&mut self, table: Table) {
        self.blocks.push(Block::Table(TableBlock {
            table,
            csv: String::new(),
            export: false,
            folded: None,
        }));
    }
    /// The id of the last heading added.
    pub(crate) fn last_heading_id(&self) -> Option<&str> {
        self.blocks.iter().rev().find_map(|b| match b {
            Block::Heading { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }
    /// Every table, folded ones included, in document order.
    pub(crate) fn tables(&self) -> impl Iterator<Item = &TableBlock> {
        fn walk<'a>(blocks: &'a [Block], out: &mut Vec<&'a TableBlock>) {
            for b in blocks {
                match b {
                    Block::Table(t) => out.push(t),
                    Block::Fold { blocks, .. } => walk(blocks, out),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.blocks, &mut out);
        out.into_iter()
    }
}

/// An HTML id / markdown anchor from heading text (ASCII letters, digits, dashes).
pub(crate) fn anchor(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let t = out.trim_matches('-').to_string();
    if t.is_empty() {
        "section".to_string()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_marks_code() {
        assert_eq!(
            prose("the `time_s` field"),
            vec![text("the "), Span::Code("time_s".into()), text(" field")]
        );
    }

    #[test]
    fn anchors_and_names_are_unique() {
        let mut d = Doc::default();
        d.heading(2, "Cost model");
        d.heading(2, "Cost model");
        let ids: Vec<&str> = d
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Heading { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["cost-model", "cost-model-2"]);
        let mut t = Table::new(&["a"]);
        t.push(vec![super::super::table::Cell::UInt(1)]);
        d.table(t.clone(), "x", None);
        d.table(t, "x", None);
        let names: Vec<&str> = d.tables().map(|t| t.csv.as_str()).collect();
        assert_eq!(names, ["tables/x.csv", "tables/x_2.csv"]);
        assert_eq!(anchor("<script>"), "script");
    }
}
