//! RFC 4180 CSV out of a [`Table`], with cells that never start a spreadsheet formula, and back.

use super::{Cell, Table};

impl Table {
    /// RFC 4180 CSV: a header line, then one line per row; fields quoted when needed.
    pub fn to_csv(&self) -> String {
        let mut out = String::with_capacity(64 * self.rows.len() * self.columns.len().max(1));
        let line = |out: &mut String, cells: &mut dyn Iterator<Item = String>| {
            let mut first = true;
            for c in cells {
                if !first {
                    out.push(',');
                }
                first = false;
                csv_field(out, &c);
            }
            out.push_str("\r\n");
        };
        line(&mut out, &mut self.columns.iter().cloned());
        for r in &self.rows {
            line(&mut out, &mut r.iter().map(Cell::raw));
        }
        out
    }
}

fn csv_field(out: &mut String, s: &str) {
    // A spreadsheet runs text starting with = + - @ (or a tab/CR before one) as a formula
    // ("CSV injection"): such text, unless it is a number, gets a leading ' (OWASP's advice),
    // which spreadsheets show as text. Numbers such as -1.5, and a lone "-" placeholder, stay.
    if s.len() > 1 && s.starts_with(['=', '+', '-', '@', '\t', '\r']) && s.parse::<f64>().is_err() {
        out.push_str("\"'");
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
        return;
    }
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// Parses CSV written by [`Table::to_csv`] (quoted fields, CRLF or LF line ends); used by tests
/// and by anyone checking an export round-trips.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                c => field.push(c),
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            ',' => row.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                any = false;
            }
            c => field.push(c),
        }
    }
    if any {
        row.push(field);
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::super::NumFmt;
    use super::*;

    #[test]
    fn csv_round_trips_awkward_text() {
        let mut t = Table::new(&["name", "value"]);
        t.push(vec![Cell::text("a,b"), Cell::num(0.1, NumFmt::Sig)]);
        t.push(vec![Cell::text("say \"hi\"\nbye"), Cell::UInt(7)]);
        t.push(vec![Cell::text(" padded "), Cell::Empty]);
        let rows = parse_csv(&t.to_csv());
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[1], ["a,b", "0.1"]);
        assert_eq!(rows[2], ["say \"hi\"\nbye", "7"]);
        assert_eq!(rows[3], [" padded ", ""]);
    }

    #[test]
    fn csv_cells_never_start_a_formula() {
        let mut t = Table::new(&["label", "value"]);
        for text in ["=1+2", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=x"] {
            t.push(vec![Cell::text(text), Cell::Int(-3)]);
        }
        t.push(vec![Cell::text("-1.5"), Cell::num(-0.25, NumFmt::Sig)]);
        let rows = parse_csv(&t.to_csv());
        for (row, text) in
            rows[1..6]
                .iter()
                .zip(["=1+2", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=x"])
        {
            assert_eq!(row[0], format!("'{text}"));
            assert_eq!(row[1], "-3");
        }
        assert_eq!(rows[6], ["-1.5", "-0.25"]);
    }
}
