//! Renders a document as plain text for a terminal: the title on the first line, headings as
//! `Heading:` lines with their content right under them, one blank line between parts, tables
//! as columns two spaces apart (numbers right-aligned), no markup. The only escaping is a
//! terminal's: control characters and bidi overrides are shown as `\u{..}`
//! ([`super::untrusted`]). Charts are named, not drawn.

use super::doc::{Block, Doc, Span};
use super::table::{Cell, Table};
use super::untrusted::visible;

/// The whole document as text, ending in a newline.
pub(crate) fn render(doc: &Doc) -> String {
    let mut out = String::new();
    // Whether the next part follows a title or heading directly (no blank line).
    let mut under_heading = false;
    if !doc.title.is_empty() {
        out.push_str(&doc.title);
        out.push('\n');
        under_heading = true;
    }
    blocks(&mut out, &doc.blocks, &mut under_heading);
    // The layout itself holds no hidden character, so one pass over the whole text shows
    // every one that came from a results file (table cells were shown before their widths).
    visible(&out).into_owned()
}

fn blocks(out: &mut String, v: &[Block], under_heading: &mut bool) {
    for b in v {
        if !out.is_empty() && !*under_heading {
            out.push('\n');
        }
        *under_heading = false;
        match b {
            Block::Heading { text, .. } => {
                heading(out, text);
                *under_heading = true;
            }
            Block::Para(v) | Block::FinePrint(v) => {
                out.push_str(&spans(v));
                out.push('\n');
            }
            Block::Bullets(items) => {
                for it in items {
                    out.push_str(&format!("  - {}\n", spans(it)));
                }
            }
            Block::Defs(items) => {
                let width = items
                    .iter()
                    .map(|(t, _)| t.chars().count() + 1)
                    .max()
                    .unwrap_or(0);
                for (term, def) in items {
                    let term = format!("{term}:");
                    out.push_str(&format!("  {term:<width$} {}\n", spans(def)));
                }
            }
            Block::Table(t) => out.push_str(&table(&t.table)),
            Block::Figure(f) => {
                out.push_str(&format!("Chart: {} (charts/{})\n", f.title, f.stem));
                out.push_str(&f.caption);
                out.push('\n');
            }
            Block::Warnings(lines) => {
                for l in lines {
                    out.push_str(&format!("warning: {}\n", spans(l)));
                }
            }
            // A terminal cannot fold: the summary heads what it holds.
            Block::Fold {
                summary,
                blocks: inner,
            } => {
                heading(out, summary);
                *under_heading = true;
                blocks(out, inner, under_heading);
            }
        }
    }
}

fn heading(out: &mut String, text: &str) {
    out.push_str(text);
    out.push_str(":\n");
}

fn spans(v: &[Span]) -> String {
    let mut out = String::new();
    for s in v {
        match s {
            Span::Text(t) | Span::Code(t) | Span::Strong(t) => out.push_str(t),
            Span::Link { text, href } if text != href => {
                out.push_str(&format!("{text} ({href})"));
            }
            Span::Link { text, .. } | Span::Chart { text, .. } => out.push_str(text),
            Span::Break => out.push('\n'),
        }
    }
    out
}

/// Columns two spaces apart, indented by two; widths in characters (not bytes), numeric
/// columns right-aligned, no trailing spaces.
pub(crate) fn table(t: &Table) -> String {
    let cells: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| match c {
                    Cell::Empty => String::new(),
                    c => visible(&c.display().replace(['\n', '\r'], " ")).into_owned(),
                })
                .collect()
        })
        .collect();
    let numeric = t.numeric_columns();
    let mut width: Vec<usize> = t
        .columns
        .iter()
        .map(|h| visible(h).chars().count())
        .collect();
    for r in &cells {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::from("  ");
        for (i, cell) in cells.iter().enumerate() {
            let pad = width[i] - cell.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            if numeric[i] {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.extend(std::iter::repeat_n(' ', pad));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let columns: Vec<String> = t.columns.iter().map(|h| visible(h).into_owned()).collect();
    let mut out = line(&columns);
    for r in &cells {
        out.push_str(&line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::doc::text;
    use crate::present::table::{NumFmt, Tone};

    #[test]
    fn tables_align_by_characters_and_numbers_right() {
        let mut t = Table::new(&["a", "bb", "n"]);
        t.push(vec![
            Cell::text("µµµ"),
            Cell::Flag("x".into(), Tone::Bad),
            Cell::num(1.5, NumFmt::Fixed(1)),
        ]);
        t.push(vec![Cell::text("y"), Cell::text("zz"), Cell::UInt(10)]);
        let s = table(&t);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "  a    bb    n");
        assert_eq!(lines[1], "  µµµ  x   1.5");
        assert_eq!(lines[2], "  y    zz   10");
    }

    #[test]
    fn layout_of_parts() {
        let mut d = Doc {
            title: "tool".into(),
            ..Default::default()
        };
        d.blocks.push(Block::Defs(vec![
            ("a".into(), vec![text("1")]),
            ("long".into(), vec![Span::Code("2".into())]),
        ]));
        d.heading(2, "Part");
        d.para(vec![text("first"), Span::Break, text("second")]);
        d.blocks
            .push(Block::Warnings(vec![vec![text("w1")], vec![text("w2")]]));
        d.blocks.push(Block::Fold {
            summary: "more".into(),
            blocks: vec![Block::Bullets(vec![vec![text("b")]])],
        });
        assert_eq!(
            render(&d),
            "tool\n  a:    1\n  long: 2\n\nPart:\nfirst\nsecond\n\nwarning: w1\nwarning: w2\n\nmore:\n  - b\n"
        );
    }
}
