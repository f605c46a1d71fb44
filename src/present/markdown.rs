//! Renders a document as Markdown that reads well on a code-hosting site (a report file, a CI
//! comment): GitHub tables, relative image links to the PNG (or SVG) charts, long tables cut
//! with a link to their full CSV, folded parts as `<details>`. Text from results files is
//! escaped so it cannot become markup; control characters and bidi overrides are shown as
//! `\u{..}` ([`super::untrusted`]).

use super::doc::{Block, Doc, Span, TableBlock};
use super::table::Cell;
use super::untrusted::visible;

/// Rows of a table shown in Markdown before the rest is left to its CSV.
pub(crate) const MAX_ROWS: usize = 60;

/// Escapes text so Markdown shows it literally (inline HTML included).
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' | '{' | '}' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn spans(v: &[Span], image_ext: Option<&str>) -> String {
    let mut out = String::new();
    for s in v {
        match s {
            Span::Text(t) => out.push_str(&escape(t)),
            Span::Code(t) => {
                out.push('`');
                out.push_str(&t.replace('`', "'"));
                out.push('`');
            }
            Span::Strong(t) => {
                out.push_str("**");
                out.push_str(&escape(t));
                out.push_str("**");
            }
            Span::Chart { text, stem } => match image_ext {
                Some(ext) => out.push_str(&format!("[{}](charts/{stem}.{ext})", escape(text))),
                None => out.push_str(&escape(text)),
            },
            Span::Link { text, href } => {
                out.push('[');
                out.push_str(&escape(text));
                out.push_str("](");
                out.push_str(&href.replace(' ', "%20").replace(')', "%29"));
                out.push(')');
            }
            // CommonMark's hard line break.
            Span::Break => out.push_str("\\\n"),
        }
    }
    out
}

/// `image_ext`: `png` or `svg`, whichever charts were written (`None`: no chart files). An
/// empty title writes no top heading (a comment that starts with its own).
pub(crate) fn render(doc: &Doc, image_ext: Option<&str>) -> String {
    let mut out = String::new();
    if !doc.title.is_empty() {
        out.push_str(&format!("# {}\n\n", escape(&doc.title)));
    }
    blocks(&mut out, &doc.blocks, image_ext);
    // Markdown has no escape for a control character or a bidi override: they are shown as
    // `\u{..}` (the layout holds none, so one pass covers every string of the document).
    visible(&out).into_owned()
}

fn blocks(out: &mut String, v: &[Block], image_ext: Option<&str>) {
    for b in v {
        match b {
            Block::Heading { level, text, .. } => {
                out.push_str(&format!(
                    "{} {}\n\n",
                    "#".repeat(usize::from((*level).clamp(1, 6))),
                    escape(text)
                ));
            }
            Block::Para(v) => {
                out.push_str(&spans(v, image_ext));
                out.push_str("\n\n");
            }
            Block::Bullets(items) => {
                for it in items {
                    out.push_str("- ");
                    out.push_str(&spans(it, image_ext));
                    out.push('\n');
                }
                out.push('\n');
            }
            Block::Defs(items) => {
                for (term, def) in items {
                    out.push_str(&format!(
                        "- **{}**: {}\n",
                        escape(term),
                        spans(def, image_ext)
                    ));
                }
                out.push('\n');
            }
            Block::Table(t) => table(out, t),
            Block::Figure(f) => match image_ext {
                Some(ext) => out.push_str(&format!(
                    "![{}](charts/{}.{ext})\n\n*{}*\n\n",
                    escape(&f.title),
                    f.stem,
                    escape(&f.caption)
                )),
                None => out.push_str(&format!(
                    "*Chart not written (no png or svg in --format): {}*\n\n",
                    escape(&f.title)
                )),
            },
            Block::Warnings(lines) => {
                for l in lines {
                    out.push_str(&format!("> warning: {}\n", spans(l, image_ext)));
                }
                out.push('\n');
            }
            Block::Fold {
                summary,
                blocks: inner,
            } => {
                // The blank line after <summary> lets GitHub read Markdown inside.
                out.push_str(&format!(
                    "<details><summary>{}</summary>\n\n",
                    escape(summary)
                ));
                blocks(out, inner, image_ext);
                out.push_str("</details>\n\n");
            }
            Block::FinePrint(v) => out.push_str(&format!("<sub>{}</sub>\n\n", spans(v, image_ext))),
        }
    }
}

fn table(out: &mut String, t: &TableBlock) {
    let tab = &t.table;
    let numeric = tab.numeric_columns();
    out.push('|');
    for c in &tab.columns {
        out.push_str(&format!(" {} |", escape(c)));
    }
    out.push_str("\n|");
    for n in &numeric {
        out.push_str(if *n { " ---: |" } else { " --- |" });
    }
    out.push('\n');
    // Only a table with a CSV of its own is cut: the link holds the rest.
    let shown = if t.csv.is_empty() {
        tab.rows.len()
    } else {
        MAX_ROWS
    };
    for r in tab.rows.iter().take(shown) {
        out.push('|');
        for c in r {
            let s = match c {
                Cell::Empty => String::new(),
                Cell::Flag(s, _) => format!("**{}**", escape(s)),
                c => escape(&c.display()),
            };
            out.push_str(&format!(" {s} |"));
        }
        out.push('\n');
    }
    let csv = &t.csv;
    if csv.is_empty() {
        out.push('\n');
    } else if tab.rows.len() > MAX_ROWS {
        out.push_str(&format!(
            "\nFirst {MAX_ROWS} of {} rows; all rows: [{csv}]({csv}).\n\n",
            tab.rows.len()
        ));
    } else {
        out.push_str(&format!("\nCSV: [{csv}]({csv})\n\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_stays_text() {
        let e = escape("<script>alert(1)</script> | *x* [a](b)");
        assert!(!e.contains('<'), "{e}");
        assert_eq!(
            e,
            "&lt;script&gt;alert(1)&lt;/script&gt; \\| \\*x\\* \\[a\\](b)"
        );
    }

    #[test]
    fn folds_flags_and_tables_without_csv() {
        use crate::present::doc::text;
        use crate::present::table::{Table, Tone};
        let mut t = Table::new(&["verdict", "n"]);
        for i in 0..(MAX_ROWS as u64 + 5) {
            t.push(vec![Cell::Flag("bad|x".into(), Tone::Bad), Cell::UInt(i)]);
        }
        let mut inner = Doc::default();
        inner.inline_table(t);
        let d = Doc {
            title: String::new(),
            blocks: vec![
                Block::Warnings(vec![vec![text("<b>")]]),
                Block::Fold {
                    summary: "more <i>".into(),
                    blocks: inner.blocks,
                },
                Block::FinePrint(vec![text("a"), Span::Break, text("b")]),
            ],
        };
        let md = render(&d, None);
        assert!(md.starts_with("> warning: &lt;b&gt;\n\n<details><summary>more &lt;i&gt;</summary>\n\n| verdict | n |\n| --- | ---: |\n| **bad\\|x** | 0 |\n"), "{md}");
        // No CSV to point at: every row is shown, and no CSV line is written.
        assert_eq!(md.matches("| **bad").count(), MAX_ROWS + 5);
        assert!(!md.contains("CSV") && !md.contains("First "), "{md}");
        assert!(md.ends_with("</details>\n\n<sub>a\\\nb</sub>\n\n"), "{md}");
    }
}
