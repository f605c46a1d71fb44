//! The flattened case, THE one definition of a case row (results.csv and the HTML case table):
//! every schema field, where it came from, and what the report derives from it alone.

use super::flatten::flatten;
use super::{Cell, NumFmt, Table};
use crate::report::analyze::Entry;
use crate::report::load::Source;
use std::collections::HashMap;

/// The flattened case: every schema field, then where it came from, then what the report
/// derives from it alone. THE one definition of a case row.
pub fn case_row(entry: &Entry, sources: &[Source]) -> Vec<(String, Cell)> {
    let mut row = Vec::with_capacity(80);
    flatten("", entry.case, &mut row);
    let src = &sources[entry.source];
    row.push((
        "source.path".into(),
        Cell::text(src.path.display().to_string()),
    ));
    row.push((
        "source.run_id".into(),
        Cell::text(src.file.run.run_id.clone()),
    ));
    for (k, v) in &src.file.run.labels {
        row.push((format!("source.labels.{k}"), Cell::text(v.clone())));
    }
    let s = entry.spread;
    row.push((
        "report.p5_s".into(),
        Cell::opt(s.map(|s| s.p5_s), NumFmt::Seconds),
    ));
    row.push((
        "report.p95_s".into(),
        Cell::opt(s.map(|s| s.p95_s), NumFmt::Seconds),
    ));
    row.push((
        "report.noisy".into(),
        s.map_or(Cell::Empty, |_| Cell::Bool(entry.noisy)),
    ));
    let im = entry.imbalance;
    row.push((
        "report.imbalance".into(),
        Cell::opt(im.map(|i| i.ratio), NumFmt::Ratio),
    ));
    row.push((
        "report.slowest_rank".into(),
        im.map_or(Cell::Empty, |i| Cell::UInt(i.slowest_rank as u64)),
    ));
    row.push((
        "report.slowest_node".into(),
        entry
            .slowest
            .map_or(Cell::Empty, |r| Cell::text(r.node_name.clone())),
    ));
    row.push((
        "report.slowest_host".into(),
        entry
            .slowest
            .map_or(Cell::Empty, |r| Cell::text(r.host.clone())),
    ));
    row
}

/// Merges per-row column lists into one ordered header: a column first seen in a later row is
/// placed right after its predecessor in that row, so optional fields stay beside their
/// neighbours.
fn merge_columns(rows: &[Vec<(String, Cell)>]) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    let mut pos: HashMap<String, usize> = HashMap::new();
    for r in rows {
        // Position in `cols` of this row's previous key.
        let mut after: Option<usize> = None;
        for (k, _) in r {
            if let Some(&p) = pos.get(k) {
                after = Some(p);
                continue;
            }
            let at = after.map_or(0, |p| p + 1);
            cols.insert(at, k.clone());
            // Insertions are rare (a new optional field): re-index only then.
            pos = cols
                .iter()
                .enumerate()
                .map(|(i, c)| (c.clone(), i))
                .collect();
            after = Some(at);
        }
    }
    cols
}

/// One row per case, every column any case has (THE flattening, used by results.csv and the
/// HTML case table).
pub fn case_table(entries: &[Entry], sources: &[Source]) -> Table {
    let rows: Vec<Vec<(String, Cell)>> = entries.iter().map(|e| case_row(e, sources)).collect();
    let columns = merge_columns(&rows);
    let index: HashMap<&str, usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let rows = rows
        .into_iter()
        .map(|r| {
            let mut cells = vec![Cell::Empty; columns.len()];
            for (k, c) in r {
                cells[index[k.as_str()]] = c;
            }
            cells
        })
        .collect();
    Table { columns, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_merge_beside_their_neighbours() {
        let r = |ks: &[&str]| -> Vec<(String, Cell)> {
            ks.iter().map(|k| (k.to_string(), Cell::Empty)).collect()
        };
        let cols = merge_columns(&[r(&["id", "w", "time"]), r(&["id", "w", "op", "time", "x"])]);
        assert_eq!(cols, ["id", "w", "op", "time", "x"]);
        let cols = merge_columns(&[r(&["b", "c"]), r(&["a", "b"])]);
        assert_eq!(cols, ["a", "b", "c"]);
    }
}
