//! Renders a document as one self-contained HTML file: inline CSS, inline SVG charts,
//! a small inline script that makes tables sortable, nothing loaded from the network.
//!
//! Every string from results files is HTML-escaped, and control characters and bidi overrides
//! (in the text and in the inline SVG charts) are shown as `\u{..}` ([`super::untrusted`]). As a second line of defence a Content
//! Security Policy allows only the page's own script (by a per-report nonce) and no network.

use super::doc::{Block, Doc, Span, TableBlock};
use super::table::{Cell, Tone};
use super::untrusted::visible;

/// Escapes text for HTML element content and quoted attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn spans(v: &[Span]) -> String {
    let mut out = String::new();
    for s in v {
        match s {
            Span::Text(t) => out.push_str(&escape(t)),
            Span::Code(t) => out.push_str(&format!("<code>{}</code>", escape(t))),
            Span::Strong(t) => out.push_str(&format!("<strong>{}</strong>", escape(t))),
            Span::Link { text, href } => out.push_str(&format!(
                "<a href=\"{}\">{}</a>",
                escape(href),
                escape(text)
            )),
            Span::Chart { text, stem } => out.push_str(&format!(
                "<a href=\"#fig-{}\">{}</a>",
                escape(stem),
                escape(text)
            )),
            Span::Break => out.push_str("<br>"),
        }
    }
    out
}

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;max-width:1600px;padding:0 24px 48px;color:#1d1d1f;line-height:1.45}
h1{margin-top:28px}h2{margin-top:40px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{margin-top:28px}
code{background:#f3f3f3;padding:0 3px;border-radius:3px;font-size:92%}
nav ul{columns:3;padding-left:18px}
.tw{overflow-x:auto;margin:8px 0 4px}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 7px;vertical-align:top}
th{background:#f5f5f7;cursor:pointer;user-select:none;position:sticky;top:0;text-align:left}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:nth-child(even){background:#fafafa}
.csv{font-size:12px;color:#555;margin:0 0 14px}
figure{margin:18px 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:13px;color:#444;max-width:1100px}
details>summary{cursor:pointer;margin:8px 0}
td.bad{color:#b00020;font-weight:600}td.good{color:#1a7f37;font-weight:600}td.neutral{font-weight:600}
.warn{border-left:4px solid #d4a017;background:#fffbea;padding:4px 10px;margin:8px 0}.warn p{margin:4px 0}
.fine{font-size:12px;color:#555}
dl dt{font-weight:600;margin-top:8px}dl dd{margin-left:18px}
"#;

/// Sorts a table by the clicked column: numbers by their exact value (`data-v`), text otherwise.
const SCRIPT: &str = r#"
(function(){
  var tables=document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables,function(t){
    var ths=t.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths,function(th,i){
      th.tabIndex=0;
      var go=function(){
        var asc=th.getAttribute('aria-sort')!=='ascending';
        Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var body=t.tBodies[0];
        var rows=Array.prototype.slice.call(body.rows);
        var key=function(r){var c=r.cells[i];if(!c)return '';var v=c.getAttribute('data-v');if(v===null&&c.className==='n'){v=c.textContent;}return v===null?c.textContent:parseFloat(v);};
        rows.sort(function(x,y){var a=key(x),b=key(y);var d=(typeof a==='number'&&typeof b==='number')?a-b:String(a).localeCompare(String(b));return asc?d:-d;});
        var f=document.createDocumentFragment();
        rows.forEach(function(r){f.appendChild(r);});
        body.appendChild(f);
      };
      th.addEventListener('click',go);
      th.addEventListener('keydown',function(e){if(e.key==='Enter'){go();}});
    });
  });
  document.documentElement.setAttribute('data-sortable',String(tables.length));
})();
"#;

/// `svgs[i]` is figure i's SVG text; `nonce` a fresh random token for the CSP.
pub(crate) fn render(doc: &Doc, svgs: &[String], nonce: &str) -> String {
    let mut out = String::with_capacity(1 << 20);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'nonce-{nonce}'\">\n"
    ));
    out.push_str(&format!("<title>{}</title>\n", escape(&doc.title)));
    out.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n"));
    out.push_str(&format!("<h1>{}</h1>\n", escape(&doc.title)));
    // Contents: every level-2 heading.
    out.push_str("<nav><ul>\n");
    for b in &doc.blocks {
        if let Block::Heading { level: 2, text, id } = b {
            out.push_str(&format!(
                "<li><a href=\"#{}\">{}</a></li>\n",
                escape(id),
                escape(text)
            ));
        }
    }
    out.push_str("</ul></nav>\n");
    blocks(&mut out, &doc.blocks, svgs);
    out.push_str(&format!(
        "<script nonce=\"{nonce}\">{SCRIPT}</script>\n</body>\n</html>\n"
    ));
    // The page's own markup, style and script hold no hidden character: one pass shows every
    // one that came from a results file, the inline SVG charts' text included.
    visible(&out).into_owned()
}

fn blocks(out: &mut String, v: &[Block], svgs: &[String]) {
    for b in v {
        match b {
            Block::Heading { level, text, id } => {
                let l = (*level).clamp(1, 6);
                out.push_str(&format!(
                    "<h{l} id=\"{}\">{}</h{l}>\n",
                    escape(id),
                    escape(text)
                ));
            }
            Block::Para(v) => out.push_str(&format!("<p>{}</p>\n", spans(v))),
            Block::Bullets(items) => {
                out.push_str("<ul>\n");
                for it in items {
                    out.push_str(&format!("<li>{}</li>\n", spans(it)));
                }
                out.push_str("</ul>\n");
            }
            Block::Defs(items) => {
                out.push_str("<dl>\n");
                for (term, def) in items {
                    out.push_str(&format!(
                        "<dt>{}</dt><dd>{}</dd>\n",
                        escape(term),
                        spans(def)
                    ));
                }
                out.push_str("</dl>\n");
            }
            Block::Table(t) => table(out, t),
            Block::Figure(f) => {
                out.push_str(&format!("<figure id=\"fig-{}\">\n", escape(&f.stem)));
                if let Some(svg) = svgs.get(f.figure) {
                    out.push_str(svg_body(svg));
                }
                out.push_str(&format!(
                    "\n<figcaption>{}</figcaption>\n</figure>\n",
                    escape(&f.caption)
                ));
            }
            Block::Warnings(lines) => {
                out.push_str("<div class=\"warn\">\n");
                for l in lines {
                    out.push_str(&format!("<p>warning: {}</p>\n", spans(l)));
                }
                out.push_str("</div>\n");
            }
            Block::Fold {
                summary,
                blocks: inner,
            } => {
                out.push_str(&format!(
                    "<details><summary>{}</summary>\n",
                    escape(summary)
                ));
                blocks(out, inner, svgs);
                out.push_str("</details>\n");
            }
            Block::FinePrint(v) => out.push_str(&format!("<p class=\"fine\">{}</p>\n", spans(v))),
        }
    }
}

/// A table block: sortable, folded under its summary when it has one, with its CSV link.
fn table(out: &mut String, t: &TableBlock) {
    if let Some(summary) = &t.folded {
        out.push_str(&format!(
            "<details><summary>{} ({} rows)</summary>\n",
            escape(summary),
            t.table.rows.len()
        ));
    }
    out.push_str("<div class=\"tw\"><table class=\"sortable\">\n<thead><tr>");
    for c in &t.table.columns {
        out.push_str(&format!("<th>{}</th>", escape(c)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in &t.table.rows {
        out.push_str("<tr>");
        for c in r {
            cell(out, c);
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    if !t.csv.is_empty() {
        out.push_str(&format!(
            "<p class=\"csv\">CSV: <a href=\"{0}\">{0}</a></p>\n",
            escape(&t.csv)
        ));
    }
    if t.folded.is_some() {
        out.push_str("</details>\n");
    }
}

/// One table cell: numbers right-aligned (with their exact value for sorting), flags toned.
fn cell(out: &mut String, c: &Cell) {
    match c.sort_value() {
        // The exact value for sorting, only where the text differs.
        Some(v) if c.display() != c.raw() => out.push_str(&format!(
            "<td class=\"n\" data-v=\"{v}\">{}</td>",
            escape(&c.display())
        )),
        Some(_) => out.push_str(&format!("<td class=\"n\">{}</td>", escape(&c.raw()))),
        None => match c {
            Cell::Empty => out.push_str("<td></td>"),
            Cell::Flag(s, tone) => out.push_str(&format!(
                "<td class=\"{}\">{}</td>",
                match tone {
                    Tone::Bad => "bad",
                    Tone::Good => "good",
                    Tone::Neutral => "neutral",
                },
                escape(s)
            )),
            c => out.push_str(&format!("<td>{}</td>", escape(&c.display()))),
        },
    }
}

/// The `<svg>` element of an SVG document (an XML declaration is not valid inside HTML).
fn svg_body(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

/// A fresh token for the Content Security Policy: not guessable by whoever wrote the inputs.
pub(crate) fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_ok();
    if !ok {
        // No /dev/urandom: std's randomly seeded hasher keys, mixed with the time.
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            h.write_usize(i);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::doc::{text, Doc};

    #[test]
    fn hostile_text_is_escaped() {
        let mut d = Doc {
            title: "<b>t</b>".into(),
            ..Default::default()
        };
        d.heading(2, "<script>alert(1)</script>");
        d.para(vec![text("<img src=x onerror=alert(1)>")]);
        let h = render(&d, &[], "abc");
        assert!(!h.contains("<script>alert"), "{h}");
        assert!(!h.contains("<img src=x"), "{h}");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(h.contains("script-src 'nonce-abc'"));
        assert_eq!(h.matches("<script").count(), 1);
    }

    #[test]
    fn flags_warnings_and_folds_are_escaped() {
        use crate::present::table::{Cell, Table, Tone};
        let mut t = Table::new(&["v"]);
        t.push(vec![Cell::Flag("<b>regressed</b>".into(), Tone::Bad)]);
        let mut inner = Doc::default();
        inner.inline_table(t);
        let mut d = Doc::default();
        d.blocks.push(Block::Warnings(vec![vec![text("<img>")]]));
        d.blocks.push(Block::Fold {
            summary: "<i>rest</i>".into(),
            blocks: inner.blocks,
        });
        let h = render(&d, &[], "n");
        assert!(
            h.contains("<td class=\"bad\">&lt;b&gt;regressed&lt;/b&gt;</td>"),
            "{h}"
        );
        assert!(h.contains("<p>warning: &lt;img&gt;</p>"), "{h}");
        assert!(
            h.contains("<details><summary>&lt;i&gt;rest&lt;/i&gt;</summary>"),
            "{h}"
        );
        // A table with no CSV of its own links none.
        assert!(!h.contains("CSV:"), "{h}");
    }

    #[test]
    fn nonces_differ() {
        let (a, b) = (nonce(), nonce());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
