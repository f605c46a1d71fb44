//! Per-size results in the nccl-tests layout: for every collective and set-up, one row per
//! size with out-of-place and in-place side by side (the layout of the live table a run
//! prints, [`crate::present::nccl`]), so the numbers behind every curve and finding are in
//! the report itself.

use crate::params::CaseParams;
use crate::present::doc::{Doc, Span};
use crate::present::nccl::{self, BlockTitle};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::{kinds_text, Analysis, Entry};
use crate::report::ceilings as ceil;
use crate::results::schema::CaseStatus;
use std::collections::{BTreeMap, BTreeSet};

/// One row: a size with its out-of-place and in-place entries.
type Row = (Option<usize>, Option<usize>);

pub(super) fn per_size(doc: &mut Doc, a: &Analysis<'_>) {
    // Blocks: equal parameters except size and in-place; rows by size.
    let mut blocks: BTreeMap<(crate::params::Workload, String), BTreeMap<u64, Row>> =
        BTreeMap::new();
    for (i, e) in a.entries.iter().enumerate() {
        if !e.params().workload.is_collective() {
            continue;
        }
        let Some(bytes) = e.bytes() else {
            continue;
        };
        let mut k: CaseParams = e.params().clone();
        k.in_place = None;
        k.requested_bytes = None;
        let row = blocks
            .entry((k.workload, k.canonical()))
            .or_default()
            .entry(bytes)
            .or_default();
        if e.params().in_place == Some(true) {
            row.1 = Some(i);
        } else {
            row.0 = Some(i);
        }
    }
    if blocks.is_empty() {
        return;
    }
    doc.heading(2, "Per-size results");
    doc.prose(crate::report::long_text::PER_SIZE);
    for rows in blocks.values() {
        let first = rows
            .values()
            .flat_map(|r| [r.0, r.1])
            .flatten()
            .map(|i| &a.entries[i])
            .next()
            .expect("a block has a case");
        doc.para(vec![Span::Strong(title(first, rows, a))]);
        let mut columns = nccl::flat_columns();
        // busbw as a fraction of its ceiling, where the launch recorded one (issue 28)
        let entries = || {
            rows.values()
                .flat_map(|r| [r.0, r.1])
                .flatten()
                .map(|i| &a.entries[i])
        };
        // (the columns of every block alike: a 1-device block keeps them, empty)
        let with_peak = entries().any(|e| e.case.peak.iter().any(|f| f.figure == ceil::BUSBW));
        if with_peak {
            columns.push("out-of-place busbw / ceiling".into());
            columns.push("in-place busbw / ceiling".into());
        }
        let mut t = Table::new(&columns.iter().map(String::as_str).collect::<Vec<_>>());
        for (&bytes, r) in rows {
            let mut cells = row(a, bytes, *r);
            if with_peak {
                for side in [r.0, r.1] {
                    cells.push(
                        side.map_or(Cell::Empty, |i| ceil::frac_cell(&a.entries[i], ceil::BUSBW)),
                    );
                }
            }
            t.push(cells);
        }
        doc.table(t, &format!("sizes_{}", first.params().workload), None);
        if let Some(s) = ceil::unknown_note(entries(), ceil::BUSBW) {
            doc.prose(&s);
        }
        if let Some(s) = rows
            .values()
            .next_back()
            .and_then(|r| largest_size_note(a, *r))
        {
            doc.prose(&s);
        }
    }
}

/// At the largest size of a block: a note when busbw is below half its ceiling, naming the
/// ceiling and its source (the Findings list it too, grouped).
fn largest_size_note(a: &Analysis<'_>, (oop, ip): Row) -> Option<String> {
    let e = &a.entries[oop.or(ip)?];
    let f = ceil::peak(e, ceil::BUSBW)?;
    let frac = ceil::far_below_frac(f)?;
    let ceiling = ceil::ceiling_of(e, f).map_or(String::new(), |c| {
        format!(" ({}; {})", ceil::ceiling_text(c, f), c.detail)
    });
    Some(format!(
        "Below half its ceiling at the largest size: busbw is {} of `{}`{ceiling}.",
        crate::present::table::rounded(frac, e.digits()),
        f.ceiling_id,
    ))
}

/// The block's set-up line, as a run prints it, with what makes it unrepresentative.
fn title(e: &Entry<'_>, rows: &BTreeMap<u64, Row>, a: &Analysis<'_>) -> String {
    let p = e.params();
    let (w, t, topo, b, pl) = (
        p.workload.to_string(),
        p.timing.to_string(),
        p.topology.to_string(),
        p.binding.to_string(),
        p.placement.to_string(),
    );
    let line = BlockTitle {
        workload: &w,
        timing: &t,
        devices: e.case.devices,
        nodes: p.nodes,
        devices_per_node: p.devices_per_node,
        topology: &topo,
        ranks: e.case.ranks,
        binding: &b,
        placement: &pl,
    }
    .to_string();
    let kinds: BTreeSet<String> = rows
        .values()
        .flat_map(|r| [r.0, r.1])
        .flatten()
        .flat_map(|i| a.entries[i].concern_kinds())
        .collect();
    if kinds.is_empty() {
        line
    } else {
        format!("{line} — not representative: {}", kinds_text(&kinds))
    }
}

fn row(a: &Analysis<'_>, bytes: u64, (oop, ip): Row) -> Vec<Cell> {
    let any = &a.entries[oop.or(ip).expect("a row has a case")];
    let p = any.params();
    let mut cells = vec![
        // bytes as a number, as the column's unit says and nccl-tests prints it
        Cell::UInt(bytes),
        any.case.send_count.map_or(Cell::Empty, Cell::UInt),
        Cell::text(p.dtype.to_string()),
        Cell::text(p.op.map_or("none".to_string(), |o| o.to_string())),
        Cell::Int(p.root.map_or(-1, i64::from)),
    ];
    for side in [oop, ip] {
        cells.extend(place_cells(side.map(|i| &a.entries[i])));
    }
    cells
}

/// time, algbw, busbw, #wrong of one placement (empty when not measured).
fn place_cells(e: Option<&Entry<'_>>) -> [Cell; 4] {
    let Some(e) = e else {
        return [Cell::Empty, Cell::Empty, Cell::Empty, Cell::Empty];
    };
    let c = e.case;
    // One device moves nothing between devices: no bandwidth to show (busbw factor 0).
    let moves = c.busbw_factor.is_none_or(|f| f > 0.0);
    // As many digits as the case's spread supports (nccl-tests prints two decimals whatever
    // the spread, so 0.53 and 1523.25 look equally certain).
    let d = e.digits();
    let bw = |v: Option<f64>| {
        if moves {
            Cell::opt(v, NumFmt::Measured(d))
        } else {
            Cell::Empty
        }
    };
    [
        Cell::opt(
            c.timing.as_ref().map(|t| t.time_s * 1e6),
            NumFmt::Measured(d),
        ),
        bw(c.algbw_gbps),
        bw(c.busbw_gbps),
        match c.status {
            CaseStatus::Ok | CaseStatus::Wrong => Cell::UInt(c.wrong),
            s => Cell::text(s.name()),
        },
    ]
}
