//! Load imbalance and stragglers: the slowest nodes and ranks, and the most imbalanced cases.

use super::findings::{Findings, Sentence};
use super::{case_text, setup_text, TOP};
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{Analysis, Stragglers};

pub(super) fn stragglers(doc: &mut Doc, a: &Analysis<'_>, found: &mut Findings) {
    doc.heading(2, "Load imbalance and stragglers");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    let s = &a.stragglers;
    if s.cases == 0 {
        // Cases set apart (oversubscribed, emulated nodes) are measured but not compared here.
        let apart = a
            .unrepresentative
            .iter()
            .filter(|&&i| a.entries[i].case.ranks >= 2)
            .count();
        if apart > 0 {
            doc.para(vec![text(format!(
                "No representative case has 2 or more ranks with per-rank times: the {} with 2 or more ranks {} set apart as not representative of their set-up (see above), so no straggler is named from them.",
                crate::present::count(apart, "case", "cases"),
                if apart == 1 { "is" } else { "are" }
            ))]);
        } else {
            doc.prose(
                "No measured case has 2 or more ranks with per-rank times: nothing to compare.",
            );
        }
        return;
    }
    doc.para(vec![text(format!(
        "{} with 2 or more ranks. Straggler score = geometric mean of (rank mean / median rank mean); see Definitions.",
        crate::present::count(s.cases, "measured case", "measured cases")
    ))]);
    node_table(doc, s, &section, found);
    rank_table(doc, s);
    imbalance_table(doc, a);
}

/// The slowest nodes first; the slowest is a finding when there is another to compare with.
fn node_table(doc: &mut Doc, s: &Stragglers, section: &str, found: &mut Findings) {
    // One node has nothing to be slower than: no table of it.
    if s.nodes.len() < 2 {
        return;
    }
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
    // A slowest node needs another node to be slower than, on another machine: nodes
    // emulated on one host share its cores, memory and MPI transport, so one of them being
    // "slowest" says nothing about a machine.
    let hosts: std::collections::BTreeSet<&str> = s.nodes.iter().map(|n| n.host.as_str()).collect();
    if t.rows.len() >= 2 && hosts.len() < 2 {
        doc.prose(&format!(
            "All {} nodes ran on one host ({}): no slowest node is named between nodes that share one machine.",
            s.nodes.len(),
            s.nodes[0].host
        ));
    }
    if t.rows.len() >= 2 && hosts.len() >= 2 {
        let one_case = t
            .columns
            .iter()
            .position(|c| c == "cases")
            .is_some_and(|j| t.rows[0][j].raw() == "1");
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
                .text(if one_case { " case." } else { " cases." })
                .done("Stragglers", None, section),
        );
    }
    found.cite(doc.table(t, "straggler_nodes", None), list);
}

/// The slowest ranks first (ranks of different launches are different processes).
fn rank_table(doc: &mut Doc, s: &Stragglers) {
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
}

/// The cases whose ranks differed most.
fn imbalance_table(doc: &mut Doc, a: &Analysis<'_>) {
    let mut t = Table::new(&[
        "case",
        "set-up",
        "imbalance (max/min)",
        "slowest rank",
        "node",
        "host",
        "time",
    ]);
    for &i in a.stragglers.most_imbalanced.iter().take(TOP) {
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
            Cell::opt(e.time_s(), NumFmt::MeasuredSeconds(e.digits())),
        ]);
    }
    doc.table(t, "most_imbalanced", None);
}
