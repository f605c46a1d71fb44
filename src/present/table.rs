//! Tables as people read them: named columns of typed cells ([`Table`], [`Cell`]), how a
//! number is shown ([`NumFmt`]), and CSV output. Report and compare build their tables as
//! this type; the renderers of [`super::doc::Doc`] show them, and CSV keeps exact values.

/// How a number is shown to people (CSV always has full precision).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumFmt {
    /// 4 significant digits.
    Sig,
    /// Seconds with a readable unit (`12.3 µs`).
    Seconds,
    /// Fixed decimals.
    Fixed(u8),
    /// A ratio as `1.234×` (four significant digits from 10: `12.35×`, `1523×`).
    Ratio,
    /// A fraction as a percentage.
    Percent,
    /// Bytes with a binary unit (`1MiB`).
    Bytes,
    /// An estimated size in bytes, 3 significant digits in a binary unit (`1.23MiB`).
    ApproxBytes,
    /// A relative change, signed, as a percentage (`+12.3%`, `−0.45%`).
    Change,
    /// A p-value (`0.042`, `1.5e-8`).
    PValue,
    /// A rate (GB/s, GFLOP/s): 1 to 4 decimals, fewer the larger it is (`12.35`, `0.0582`).
    Rate,
    /// A measured figure with as many significant digits as its spread supports
    /// ([`digits_for_spread`]): `12.3` at a 5 % spread, `12.35` below 1 %.
    Measured(u8),
    /// Seconds in a readable unit (as [`NumFmt::Seconds`]) with the digits of [`NumFmt::Measured`].
    MeasuredSeconds(u8),
}

/// Significant digits a measured figure supports, from the relative spread (cv) of its
/// `samples`: 2 from 10 % up, 3 from 1 %, 4 below (a zero spread included). A digit finer
/// than the spread would claim a precision the next run does not repeat. One sample (or
/// none, or a spread that is not a number) shows no spread at all: 3 digits, as a
/// spread of a few percent, the run-to-run variation of a timed case on a shared host,
/// rather than the 4 a zero cv from one sample would claim.
pub(crate) fn digits_for_spread(samples: usize, cv: f64) -> u8 {
    match cv {
        _ if samples < 2 || !cv.is_finite() => 3,
        r if r >= 0.1 => 2,
        r if r >= 0.01 => 3,
        _ => 4,
    }
}

/// `v` rounded to `digits` significant digits, in plain notation (`123456` at 2 digits is
/// `120000`, `0.012345` is `0.012`).
pub(crate) fn rounded(v: f64, digits: u8) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = i32::from(digits.max(1));
    let place = |x: f64| x.abs().log10().floor() as i32 + 1 - digits;
    let r = (v / 10f64.powi(place(v))).round() * 10f64.powi(place(v));
    // Rounding may carry into a new digit (9.96 at 2 digits is 10): the place of the result.
    let decimals = (-place(r)).max(0) as usize;
    format!("{r:.decimals$}")
}

/// How strongly a flagged cell asks for attention (HTML colours it by this).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Bad,
    Good,
    Neutral,
}

/// One table cell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Empty,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Num(f64, NumFmt),
    Text(String),
    /// Text that matters (a verdict a reader must see): bold in Markdown, coloured in HTML,
    /// plain in text and CSV.
    Flag(String, Tone),
}

impl Cell {
    pub(crate) fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    pub(crate) fn num(v: f64, f: NumFmt) -> Cell {
        if v.is_finite() {
            Cell::Num(v, f)
        } else {
            Cell::Empty
        }
    }
    pub(crate) fn opt(v: Option<f64>, f: NumFmt) -> Cell {
        v.map_or(Cell::Empty, |v| Cell::num(v, f))
    }

    /// Exact text for CSV (numbers round-trip).
    pub(crate) fn raw(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Bool(b) => b.to_string(),
            Cell::Int(v) => v.to_string(),
            Cell::UInt(v) => v.to_string(),
            Cell::Num(v, _) => v.to_string(),
            Cell::Text(s) | Cell::Flag(s, _) => s.clone(),
        }
    }

    /// Text for people.
    pub(crate) fn display(&self) -> String {
        match self {
            Cell::Num(v, f) => format_num(*v, *f),
            other => other.raw(),
        }
    }

    /// The number behind a cell, for sorting.
    pub(crate) fn sort_value(&self) -> Option<f64> {
        match self {
            Cell::Int(v) => Some(*v as f64),
            Cell::UInt(v) => Some(*v as f64),
            Cell::Num(v, _) => Some(*v),
            _ => None,
        }
    }
}

/// `v` with 4 significant digits, without an exponent for everyday magnitudes.
pub(crate) fn sig(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-4..6).contains(&mag) {
        return format!("{:.*e}", (digits - 1).max(0) as usize, v);
    }
    let decimals = (digits - 1 - mag).max(0) as usize;
    format!("{v:.decimals$}")
}

pub(crate) fn format_num(v: f64, f: NumFmt) -> String {
    match f {
        NumFmt::Sig => sig(v, 4),
        NumFmt::Seconds => crate::units::format_seconds(v),
        NumFmt::Fixed(d) => format!("{v:.*}", d as usize),
        // Three decimals below 10 (1.234×), four significant digits above (12.35×, 1523×):
        // a 1523.248× ratio claims a precision no spread supports.
        NumFmt::Ratio if v.abs() >= 10.0 => format!("{}×", sig(v, 4)),
        NumFmt::Ratio => format!("{v:.3}×"),
        NumFmt::Percent => format!("{:.1} %", v * 100.0),
        NumFmt::Bytes if v >= 0.0 && v.fract() == 0.0 && v < 9.0e15 => {
            crate::units::format_bytes(v as u64)
        }
        NumFmt::Bytes => sig(v, 4),
        NumFmt::Change => signed_percent(v),
        NumFmt::PValue if v < 1e-3 => format!("{v:.1e}"),
        NumFmt::PValue => format!("{v:.3}"),
        NumFmt::Rate => {
            let a = v.abs();
            let digits = if a >= 100.0 {
                1
            } else if a >= 10.0 {
                2
            } else if a >= 1.0 {
                3
            } else {
                4
            };
            format!("{v:.digits$}")
        }
        NumFmt::Measured(d) => rounded(v, d),
        NumFmt::MeasuredSeconds(d) => {
            let (scale, unit) = match v.abs() {
                a if a >= 1.0 => (1.0, "s"),
                a if a >= 1e-3 => (1e3, "ms"),
                a if a >= 1e-6 => (1e6, "µs"),
                _ => (1e9, "ns"),
            };
            if v.is_finite() {
                format!("{} {unit}", rounded(v * scale, d))
            } else {
                format!("{v}")
            }
        }
        NumFmt::ApproxBytes => {
            let (m, unit) = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
                .into_iter()
                .find(|(m, _)| v.abs() >= *m as f64)
                .unwrap_or((1, "B"));
            format!("{}{unit}", sig(v / m as f64, 3))
        }
    }
}

/// A signed relative change: `+12.3%`, `−0.45%` (a true minus sign; no `−0.00%`).
pub(crate) fn signed_percent(x: f64) -> String {
    let v = x * 100.0;
    let s = if v.abs() < 10.0 {
        format!("{:.2}%", v.abs())
    } else {
        format!("{:.1}%", v.abs())
    };
    if v < 0.0 && s.trim_end_matches('%').parse::<f64>().unwrap_or(0.0) != 0.0 {
        format!("−{s}")
    } else {
        format!("+{s}")
    }
}

/// A table: named columns and rows of cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub(crate) fn new(columns: &[&str]) -> Table {
        Table {
            columns: columns.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }
    pub(crate) fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// Per column: whether it holds numbers (shown right-aligned).
    pub(crate) fn numeric_columns(&self) -> Vec<bool> {
        (0..self.columns.len())
            .map(|j| self.rows.iter().any(|r| r[j].sort_value().is_some()))
            .collect()
    }

    /// RFC 4180 CSV: a header line, then one line per row; fields quoted when needed.
    pub(crate) fn to_csv(&self) -> String {
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

    /// The named columns only, in the order given (missing names are skipped).
    pub(crate) fn project(&self, names: &[&str]) -> Table {
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

fn csv_field(out: &mut String, s: &str) {
    // Shown, not emitted: a control character or bidi override from a results file would act
    // on the terminal that prints the CSV (`\n` stays, quoted below).
    let s = &*super::untrusted::visible(s);
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
#[cfg(test)]
pub(crate) fn parse_csv(text: &str) -> Vec<Vec<String>> {
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
    use super::*;

    #[test]
    fn measured_figures_keep_the_digits_their_spread_supports() {
        // spreads of 0.1 %, 3 %, 30 % over many samples
        assert_eq!(digits_for_spread(50, 0.001), 4);
        assert_eq!(digits_for_spread(50, 0.03), 3);
        assert_eq!(digits_for_spread(50, 0.3), 2);
        // the edges: 10 % and 1 % belong to the coarser side
        assert_eq!(digits_for_spread(50, 0.1), 2);
        assert_eq!(digits_for_spread(50, 0.01), 3);
        assert_eq!(digits_for_spread(50, 0.0099), 4);
        assert_eq!(digits_for_spread(50, 1.42), 2);
        // zero spread over many samples (a coarse timer, a cached no-op): as tight as it gets
        assert_eq!(digits_for_spread(50, 0.0), 4);
        // a single sample has cv 0 but shows no spread: not 4 digits
        assert_eq!(digits_for_spread(1, 0.0), 3);
        assert_eq!(digits_for_spread(0, 0.0), 3);
        assert_eq!(digits_for_spread(50, f64::NAN), 3);
        let m = |v, d| format_num(v, NumFmt::Measured(d));
        assert_eq!(m(12.3456, 3), "12.3");
        assert_eq!(m(12.3456, 4), "12.35");
        assert_eq!(m(0.012345, 2), "0.012");
        assert_eq!(m(123456.0, 2), "120000");
        assert_eq!(m(1523.248, 4), "1523");
        assert_eq!(m(9.96, 2), "10");
        assert_eq!(m(0.0996, 2), "0.10");
        assert_eq!(m(-0.25, 2), "-0.25");
        assert_eq!(m(0.0, 3), "0");
        let t = |v, d| format_num(v, NumFmt::MeasuredSeconds(d));
        assert_eq!(t(12.345e-6, 3), "12.3 µs");
        assert_eq!(t(0.5309e-6, 2), "530 ns");
        assert_eq!(t(4.5678e-3, 4), "4.568 ms");
        // the shown figure is within half a unit of its last digit
        for v in [0.5309, 1.972, 40.27, 812.9, 3.3e-5] {
            for d in 2..=4u8 {
                let shown: f64 = m(v, d).parse().unwrap();
                let unit = 10f64.powi(v.abs().log10().floor() as i32 + 1 - i32::from(d));
                assert!(
                    (shown - v).abs() <= 0.5 * unit * 1.000001,
                    "{v} {d}: {shown}"
                );
            }
        }
    }

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

    #[test]
    fn numbers_for_people() {
        assert_eq!(sig(1234.5678, 4), "1235");
        assert_eq!(sig(0.012345, 4), "0.01235");
        assert_eq!(sig(1.5e-7, 3), "1.50e-7");
        assert_eq!(format_num(1.2345, NumFmt::Ratio), "1.234×");
        assert_eq!(format_num(0.5, NumFmt::Percent), "50.0 %");
        assert_eq!(format_num(1048576.0, NumFmt::Bytes), "1MiB");
        assert_eq!(format_num(1290693.0, NumFmt::ApproxBytes), "1.23MiB");
        assert_eq!(format_num(400000.0, NumFmt::ApproxBytes), "391KiB");
        assert_eq!(format_num(100.0, NumFmt::ApproxBytes), "100B");
        assert_eq!(format_num(0.2, NumFmt::Change), "+20.0%");
        assert_eq!(format_num(-0.005, NumFmt::Change), "−0.50%");
        assert_eq!(format_num(-0.00001, NumFmt::Change), "+0.00%");
        assert_eq!(format_num(0.0, NumFmt::Change), "+0.00%");
        assert_eq!(format_num(0.5, NumFmt::PValue), "0.500");
        assert_eq!(format_num(1.5e-8, NumFmt::PValue), "1.5e-8");
        assert_eq!(format_num(12.345, NumFmt::Rate), "12.35");
        assert_eq!(format_num(123.45, NumFmt::Rate), "123.5");
        assert_eq!(format_num(0.05819, NumFmt::Rate), "0.0582");
    }
}
