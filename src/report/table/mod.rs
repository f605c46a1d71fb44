//! Tables: the one flattening of a case into named cells ([`case_table`]) that every per-case
//! export uses (results.csv, the HTML case table), the [`Table`] type every report table is
//! built as, and CSV output.
//!
//! Flattening is driven by the results schema itself (serde), not by a hand-written list of
//! fields: a field added to the schema appears as a column without touching this module. Column
//! names are the field paths in results.json (`params.workload`, `timing.time_s`); arrays of
//! numbers (raw samples, per-rank means) stay in results.json and are summarised by the
//! `report.*` columns instead.
//!
//! One file per job: [`cell`] (a cell and how numbers are shown), this file (the table type),
//! [`csv`] (CSV out and back), [`flatten`] (any serialisable value into named cells) and
//! [`case`] (a case's row and the case table).

mod case;
mod cell;
mod csv;
mod flatten;

pub use case::{case_row, case_table};
pub use cell::{format_num, sig, Cell, NumFmt};
pub use csv::parse_csv;
pub use flatten::flatten;

/// A table: named columns and rows of cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(columns: &[&str]) -> Table {
        Table {
            columns: columns.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }
    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The named columns only, in the order given (missing names are skipped).
    pub fn project(&self, names: &[&str]) -> Table {
        let idx: Vec<usize> = names
            .iter()
            .filter_map(|n| self.columns.iter().position(|c| c == n))
            .collect();
        Table {
            columns: idx.iter().map(|&i| self.columns[i].clone()).collect(),
            rows: self
                .rows
                .iter()
                .map(|r| idx.iter().map(|&i| r[i].clone()).collect())
                .collect(),
        }
    }
}
