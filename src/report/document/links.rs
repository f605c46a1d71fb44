//! The links section: the heat map of a `links.json` found among the inputs, the median, each
//! verdict with its effect size, confidence and isolated re-measurement, and what the file is
//! (a test fault, a simulation) so no reader mistakes either for the fabric.

use crate::present::doc::{prose, text, Block, Doc, FigureBlock, Span};
use crate::present::table::{Cell, NumFmt, Table, Tone};
use crate::results::links::{FloorRecord, LinksFile};
use std::path::Path;

/// A links file and the figure index its heat map has in the report (`None`: not drawn).
pub(crate) struct LinksInput<'a> {
    pub path: &'a Path,
    pub file: &'a LinksFile,
    pub figure: Option<usize>,
    /// The chart's stem (`links`, `links_2`, …).
    pub stem: String,
}

/// Appends one links section per file.
pub(crate) fn links(doc: &mut Doc, inputs: &[LinksInput<'_>]) {
    for l in inputs {
        section(doc, l);
    }
}

/// How the cells were measured, in words: MPI between host buffers (wall clock on the
/// sender), or NCCL send/recv between GPUs (CUDA events on the receiver's stream).
fn transport(f: &LinksFile) -> String {
    match f.transport() {
        Some("nccl") => format!(
            "NCCL {} send/recv between GPUs (one per rank; CUDA events on the receiver's stream)",
            f.nccl_version.as_deref().unwrap_or("(version unknown)")
        ),
        _ => "MPI between host buffers (wall clock on the sender)".into(),
    }
}

/// A sweep's links step (`…/links/<set-up>/links.json`) is named by its set-up, so a report
/// of several set-ups tells their sections apart.
fn heading(path: &Path) -> String {
    let setup = path
        .parent()
        .filter(|d| d.parent().and_then(|p| p.file_name()) == Some("links".as_ref()))
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let words = |s: &str| -> Option<String> {
        let (n, r) = s.strip_prefix('n')?.split_once("-ppn")?;
        let (n, r): (usize, usize) = (n.parse().ok()?, r.parse().ok()?);
        Some(format!(
            " ({} × {} per node)",
            crate::units::count(n, "node", "nodes"),
            crate::units::count(r, "rank", "ranks")
        ))
    };
    match setup {
        Some(s) => format!(
            "Links: the slow node or link, set-up {s}{}",
            words(&s).unwrap_or_default()
        ),
        None => "Links: the slow node or link".to_string(),
    }
}

fn section(doc: &mut Doc, l: &LinksInput<'_>) {
    let f = l.file;
    doc.heading(2, heading(l.path));
    let mut hosts = f.hosts.clone();
    hosts.sort();
    hosts.dedup();
    let measured = if f.simulated.is_some() {
        format!(
            "{} (no messages were sent); from ",
            crate::units::count(f.hosts.len(), "simulated node", "simulated nodes")
        )
    } else {
        format!(
            "{} on {}, {} {} schedule, {} messages over {}, {} per cell; from ",
            crate::units::count(f.hosts.len(), "rank", "ranks"),
            if f.emulated_nodes {
                // Slurm nodes sharing one machine: not a fabric
                crate::units::count(hosts.len(), "emulated node", "emulated nodes")
            } else {
                crate::units::count(hosts.len(), "host", "hosts")
            },
            if f.bidirectional {
                "bidirectional"
            } else {
                "unidirectional"
            },
            f.schedule.replace('_', "-"),
            crate::units::format_bytes(f.message_bytes),
            transport(f),
            crate::units::count(f.iters as usize, "timed exchange", "timed exchanges"),
        )
    };
    let mut what = vec![
        text(measured),
        Span::Code(l.path.display().to_string()),
        text(". "),
    ];
    // The heat map colours against the analysed cells' median when the attribution made
    // none: the text quotes the same figure rather than saying there is none.
    let median = crate::report::plot::links::median_of(f);
    what.push(text(match (f.median_gbps, median) {
        (Some(m), _) => format!(
            "Median of the {} pairs: {m:.3} GB/s{}.",
            f.analysed.replace('_', "-"),
            f.residual_spread.map_or(String::new(), |s| format!(
                "; one cell's noise ±{:.1} % (robust)",
                s * 100.0
            ))
        ),
        (None, Some(m)) => format!(
            "Median of the {} pairs: {m:.3} GB/s (no attribution was made, see below).",
            f.analysed.replace('_', "-")
        ),
        (None, None) => "No median: no pair was analysed.".into(),
    }));
    doc.para(what);
    if let Some(t) = &f.topology {
        let leaves: Vec<String> = f
            .switches
            .iter()
            .map(|l| format!("{} ({})", l.name, l.nodes.join(", ")))
            .collect();
        doc.para(vec![text(if leaves.is_empty() {
            format!("Network topology: {t}; nodes read in rank order.")
        } else {
            format!(
                "Network topology: {t}; {}: {}. The attribution read each switch's nodes side by side, so a slow switch shows as one block.",
                crate::units::count(leaves.len(), "leaf switch", "leaf switches"),
                leaves.join("; ")
            )
        })]);
    }
    let mut warnings = Vec::new();
    if let Some(s) = &f.simulated {
        warnings.push(vec![text(format!(
            "SIMULATED matrix ({s}): made by `scalebench links --simulate` to test the attribution, not measured on any fabric."
        ))]);
    }
    if let Some(label) = &f.standin {
        warnings.push(vec![text(format!(
            "measured on the STAND-IN CUDA libraries ({label})."
        ))]);
    }
    if let Some(fault) = &f.fault {
        warnings.push(vec![text(format!(
            "made with the test-only fault hook ({fault}): the slow pair was injected by scalebench, not found in the fabric."
        ))]);
    }
    if !warnings.is_empty() {
        doc.blocks.push(Block::Warnings(warnings));
    }
    if let Some(i) = l.figure {
        doc.blocks.push(Block::Figure(FigureBlock {
            figure: i,
            stem: l.stem.clone(),
            title: crate::report::plot::links::title(f),
            caption: crate::report::plot::links::caption(f),
        }));
    }
    verdicts(doc, f);
    if let Some(fl) = &f.floor {
        floor(doc, fl, f);
    }
}

/// The attribution's verdicts: the suspects with both passes, or why there are none.
fn verdicts(doc: &mut Doc, f: &LinksFile) {
    if let Some(note) = &f.note {
        doc.para(vec![text(format!("No verdict: {note}."))]);
        return;
    }
    if f.findings.is_empty() {
        doc.para(prose(
            "Nothing is named: no node, link or block of nodes is slower than the thresholds of `scalebench links` (`--z`, `--min-effect`) allow, so the fabric looks healthy at this size.",
        ));
        return;
    }
    let confirmed = f.findings.iter().filter(|x| x.confirmed).count();
    doc.para(vec![text(format!(
        "{} named, {confirmed} confirmed by an isolated re-measurement (a link alone; a node or block against known-good partners). An unconfirmed suspect was slow only under the schedule's load (contention) or could not be re-measured.",
        crate::units::count(f.findings.len(), "suspect", "suspects"),
    ))]);
    let mut t = Table::new(&[
        "suspect",
        "ranks",
        "effect (of expected)",
        "z",
        "confidence",
        "isolated (of median)",
        "verdict",
        "finding",
    ]);
    for x in &f.findings {
        let names = rank_names(f, &x.ranks);
        let sep = if x.kind == "block" { "–" } else { "↔" };
        let verdict = match (x.confirmed, x.isolated_ratio) {
            (true, _) => Cell::Flag("confirmed".into(), Tone::Bad),
            (false, Some(_)) => Cell::Flag("not confirmed".into(), Tone::Neutral),
            (false, None) if f.simulated.is_some() => {
                Cell::Flag("not re-measured (simulated)".into(), Tone::Neutral)
            }
            (false, None) => Cell::Flag("not re-measured".into(), Tone::Neutral),
        };
        t.push(vec![
            Cell::text(x.kind.clone()),
            Cell::text(names.join(sep)),
            Cell::num(x.ratio, NumFmt::Percent),
            Cell::num(x.z, NumFmt::Fixed(1)),
            // As `scalebench links` prints it: four decimals would round 0.99999 up to 1.
            Cell::text(if x.confidence >= 0.9999 {
                "> 0.9999".to_string()
            } else {
                format!("{:.4}", x.confidence)
            }),
            Cell::opt(x.isolated_ratio, NumFmt::Percent),
            verdict,
            Cell::text(x.text.clone()),
        ]);
    }
    doc.table(t, "links_findings", None);
}

/// The absolute floor (links.json version 3): what fell below a fraction of the hosts' link
/// ceiling, re-measured alone, or why nothing was held.
fn floor(doc: &mut Doc, fl: &FloorRecord, f: &LinksFile) {
    let mut words = match fl.fraction {
        Some(x) => format!(
            "Absolute floor: each inter-node cell is held to {:.0} % of the slower host's network link ceiling (`net.link`, read from sysfs by each host's first rank); {} held.",
            x * 100.0,
            crate::units::count(fl.checked_cells, "cell was", "cells were")
        ),
        None => "Absolute floor: switched off (`--floor-fraction off`).".to_string(),
    };
    if let Some(note) = &fl.note {
        words.push_str(&format!(" {}.", capitalised(note)));
    }
    if fl.findings.is_empty() {
        if fl.checked_cells > 0 {
            words.push_str(" None is below it.");
        }
        doc.para(vec![text(words)]);
        return;
    }
    let confirmed = fl.findings.iter().filter(|x| x.confirmed).count();
    words.push_str(&format!(
        " {} below it, {confirmed} confirmed by a re-measurement one pair at a time (a host's link is shared by its ranks' exchanges within a round).",
        crate::units::count(fl.findings.len(), "finding", "findings")
    ));
    doc.para(vec![text(words)]);
    let mut t = Table::new(&[
        "below the floor",
        "ranks",
        "of the link ceiling",
        "isolated",
        "verdict",
        "finding",
    ]);
    for x in &fl.findings {
        let names = rank_names(f, &x.ranks);
        t.push(vec![
            Cell::text(x.kind.clone()),
            Cell::text(if names.is_empty() {
                "every inter-node pair".to_string()
            } else {
                names.join("↔")
            }),
            Cell::num(x.ratio, NumFmt::Percent),
            Cell::opt(x.isolated_ratio, NumFmt::Percent),
            if x.confirmed {
                Cell::Flag("confirmed".into(), Tone::Bad)
            } else {
                Cell::Flag("not confirmed".into(), Tone::Neutral)
            },
            Cell::text(x.text.clone()),
        ]);
    }
    doc.table(t, "links_floor", None);
}

/// `host:rank` for each rank, as both the findings and the floor tables name them (`?` for a
/// rank the file's host list does not cover).
fn rank_names(f: &LinksFile, ranks: &[usize]) -> Vec<String> {
    ranks
        .iter()
        .map(|&r| format!("{}:{r}", f.hosts.get(r).map_or("?", |h| h.as_str())))
        .collect()
}

/// A note as a sentence of its own.
fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> LinksFile {
        // One iteration: the sentence's count is singular.
        LinksFile {
            iters: 1,
            warmup: 0,
            ..crate::results::links::test_file(
                vec!["a".into(), "b".into()],
                vec![vec![None, Some(10.0)], vec![Some(10.0), None]],
                10.0,
            )
        }
    }

    /// The section's paragraphs as plain text.
    fn text_of(doc: &Doc) -> String {
        let mut out = String::new();
        for b in &doc.blocks {
            if let Block::Para(spans) | Block::FinePrint(spans) = b {
                for s in spans {
                    if let Span::Text(t) | Span::Code(t) = s {
                        out.push_str(t);
                    }
                }
                out.push('\n');
            }
        }
        out
    }

    #[test]
    fn ranks_are_named_host_colon_rank_with_a_question_mark_past_the_host_list() {
        let f = healthy();
        assert_eq!(rank_names(&f, &[1, 0]), vec!["b:1", "a:0"]);
        assert_eq!(rank_names(&f, &[0, 5]), vec!["a:0", "?:5"]);
        assert!(rank_names(&f, &[]).is_empty());
    }

    #[test]
    fn a_healthy_matrix_says_nothing_is_named_and_has_no_table_or_warning() {
        let f = healthy();
        let mut doc = Doc::default();
        let input = LinksInput {
            path: Path::new("run/links.json"),
            file: &f,
            figure: Some(3),
            stem: "links".into(),
        };
        links(&mut doc, std::slice::from_ref(&input));
        let t = text_of(&doc);
        assert!(t.contains("Nothing is named"), "{t}");
        assert!(
            t.contains("2 ranks on 2 hosts") && t.contains("1 timed exchange per"),
            "{t}"
        );
        assert!(
            t.contains("Median of the inter-node pairs: 10.000 GB/s"),
            "{t}"
        );
        assert!(doc.tables().next().is_none());
        assert!(!doc.blocks.iter().any(|b| matches!(b, Block::Warnings(_))));
        assert!(doc
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Figure(x) if x.figure == 3 && x.stem == "links")));
        // No attribution: its reason instead of a verdict.
        let mut g = healthy();
        g.note = Some("fewer than 3 nodes".into());
        let mut doc = Doc::default();
        links(
            &mut doc,
            &[LinksInput {
                file: &g,
                figure: None,
                ..input
            }],
        );
        let t = text_of(&doc);
        assert!(t.contains("No verdict: fewer than 3 nodes."), "{t}");
        assert!(!t.contains("Nothing is named"), "{t}");
        assert!(!doc.blocks.iter().any(|b| matches!(b, Block::Figure(_))));
    }

    /// The section names the transport; a stand-in NCCL run carries its label as a warning
    /// (a version-1 file, which has no transport field, reads as MPI).
    #[test]
    fn the_transport_is_named_and_a_standin_run_is_labelled() {
        let mut doc = Doc::default();
        let mut old = healthy();
        old.transport = None;
        let input = LinksInput {
            path: Path::new("run/links.json"),
            file: &old,
            figure: None,
            stem: "links".into(),
        };
        links(&mut doc, std::slice::from_ref(&input));
        let t = text_of(&doc);
        assert!(t.contains("messages over MPI between host buffers"), "{t}");
        let nccl = LinksFile {
            transport: Some("nccl".into()),
            nccl_version: Some("2.28.3".into()),
            standin: Some("STAND-IN: test doubles".into()),
            ..healthy()
        };
        let mut doc = Doc::default();
        links(
            &mut doc,
            &[LinksInput {
                file: &nccl,
                ..input
            }],
        );
        let t = text_of(&doc);
        assert!(
            t.contains("messages over NCCL 2.28.3 send/recv between GPUs (one per rank"),
            "{t}"
        );
        let warned: Vec<String> = doc
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Warnings(w) => Some(w),
                _ => None,
            })
            .flatten()
            .flatten()
            .filter_map(|s| match s {
                Span::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            warned,
            vec!["measured on the STAND-IN CUDA libraries (STAND-IN: test doubles).".to_string()]
        );
    }

    /// A sweep's step is named by its set-up; any other links.json keeps the plain title.
    #[test]
    fn a_sweeps_sections_are_named_by_their_set_up() {
        assert_eq!(
            heading(Path::new("run/links/n2-ppn4/links.json")),
            "Links: the slow node or link, set-up n2-ppn4 (2 nodes × 4 ranks per node)"
        );
        assert_eq!(
            heading(Path::new("run/links/n1-ppn1/links.json")),
            "Links: the slow node or link, set-up n1-ppn1 (1 node × 1 rank per node)"
        );
        assert_eq!(
            heading(Path::new("run/links/odd/links.json")),
            "Links: the slow node or link, set-up odd"
        );
        assert_eq!(
            heading(Path::new("run/links.json")),
            "Links: the slow node or link"
        );
    }

    /// The floor's paragraph: how many cells were held and what fell below, with a table of
    /// its findings; a floor that was not applied says why in one sentence and has no table.
    #[test]
    fn the_floor_is_reported_with_its_findings_or_why_it_did_not_apply() {
        use crate::results::links::FloorFindingRecord;
        let mut f = healthy();
        f.floor = Some(FloorRecord {
            fraction: Some(0.5),
            min_message_bytes: 1 << 20,
            link_gbps: vec![Some(50.0), Some(50.0)],
            checked_cells: 2,
            findings: vec![FloorFindingRecord {
                kind: "fabric".into(),
                ranks: vec![],
                ratio: 0.2,
                isolated_ratio: Some(0.21),
                confirmed: true,
                text: "fabric: all 2 inter-node cells below 50 % of the link ceiling (median 20 %)"
                    .into(),
            }],
            note: None,
        });
        let input = LinksInput {
            path: Path::new("run/links.json"),
            file: &f,
            figure: None,
            stem: "links".into(),
        };
        let mut doc = Doc::default();
        links(&mut doc, std::slice::from_ref(&input));
        let t = text_of(&doc);
        assert!(
            t.contains("Nothing is named"),
            "the attribution's verdict stays: {t}"
        );
        assert!(
            t.contains("held to 50 % of the slower host's network link ceiling")
                && t.contains("2 cells were held.")
                && t.contains("1 finding below it, 1 confirmed"),
            "{t}"
        );
        assert_eq!(doc.tables().count(), 1);

        let mut g = healthy();
        g.floor = Some(FloorRecord {
            fraction: Some(0.5),
            min_message_bytes: 1 << 20,
            link_gbps: vec![None, None],
            checked_cells: 0,
            findings: vec![],
            note: Some("not checked: one host (a): every pair here shares one".into()),
        });
        let mut doc = Doc::default();
        links(&mut doc, &[LinksInput { file: &g, ..input }]);
        let t = text_of(&doc);
        assert!(
            t.contains("0 cells were held. Not checked: one host (a)"),
            "{t}"
        );
        assert!(doc.tables().next().is_none());
    }
}
