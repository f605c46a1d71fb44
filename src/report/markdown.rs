//! Renders the report document as Markdown that reads well on a code-hosting site: GitHub
//! tables, relative image links to the PNG (or SVG) charts, long tables cut with a link to their
//! full CSV. Text from results files is escaped so it cannot become markup.

use super::doc::{Block, Doc, Span};
use super::table::Cell;

/// Rows of a table shown in Markdown before the rest is left to its CSV.
pub const MAX_ROWS: usize = 60;

/// Escapes text so Markdown shows it literally (inline HTML included).
pub fn escape(s: &str) -> String {
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
        }
    }
    out
}

/// `image_ext`: `png` or `svg`, whichever charts were written (`None`: no chart files).
pub fn render(doc: &Doc, image_ext: Option<&str>) -> String {
    let mut out = format!("# {}\n\n", escape(&doc.title));
    for b in &doc.blocks {
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
            Block::Table(t) => {
                let tab = &t.table;
                let numeric: Vec<bool> = (0..tab.columns.len())
                    .map(|j| tab.rows.iter().any(|r| r[j].sort_value().is_some()))
                    .collect();
                out.push('|');
                for c in &tab.columns {
                    out.push_str(&format!(" {} |", escape(c)));
                }
                out.push_str("\n|");
                for n in &numeric {
                    out.push_str(if *n { " ---: |" } else { " --- |" });
                }
                out.push('\n');
                for r in tab.rows.iter().take(MAX_ROWS) {
                    out.push('|');
                    for c in r {
                        let s = match c {
                            Cell::Empty => String::new(),
                            c => escape(&c.display()),
                        };
                        out.push_str(&format!(" {s} |"));
                    }
                    out.push('\n');
                }
                let csv = &t.csv;
                if tab.rows.len() > MAX_ROWS {
                    out.push_str(&format!(
                        "\nFirst {MAX_ROWS} of {} rows; all rows: [{csv}]({csv}).\n\n",
                        tab.rows.len()
                    ));
                } else {
                    out.push_str(&format!("\nCSV: [{csv}]({csv})\n\n"));
                }
            }
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
        }
    }
    out
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
}
