//! One table cell, and how numbers are shown to people (CSV always has full precision).

/// How a number is shown to people (CSV always has full precision).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumFmt {
    /// 4 significant digits.
    Sig,
    /// Seconds with a readable unit (`12.3 µs`).
    Seconds,
    /// Fixed decimals.
    Fixed(u8),
    /// A ratio as `1.234×`.
    Ratio,
    /// A fraction as a percentage.
    Percent,
    /// Bytes with a binary unit (`1MiB`).
    Bytes,
    /// An estimated size in bytes, 3 significant digits in a binary unit (`1.23MiB`).
    ApproxBytes,
}

/// One table cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Empty,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Num(f64, NumFmt),
    Text(String),
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    pub fn num(v: f64, f: NumFmt) -> Cell {
        if v.is_finite() {
            Cell::Num(v, f)
        } else {
            Cell::Empty
        }
    }
    pub fn opt(v: Option<f64>, f: NumFmt) -> Cell {
        v.map_or(Cell::Empty, |v| Cell::num(v, f))
    }

    /// Exact text for CSV (numbers round-trip).
    pub fn raw(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Bool(b) => b.to_string(),
            Cell::Int(v) => v.to_string(),
            Cell::UInt(v) => v.to_string(),
            Cell::Num(v, _) => v.to_string(),
            Cell::Text(s) => s.clone(),
        }
    }

    /// Text for people.
    pub fn display(&self) -> String {
        match self {
            Cell::Num(v, f) => format_num(*v, *f),
            other => other.raw(),
        }
    }

    /// The number behind a cell, for sorting.
    pub fn sort_value(&self) -> Option<f64> {
        match self {
            Cell::Int(v) => Some(*v as f64),
            Cell::UInt(v) => Some(*v as f64),
            Cell::Num(v, _) => Some(*v),
            _ => None,
        }
    }
}

/// `v` with 4 significant digits, without an exponent for everyday magnitudes.
pub fn sig(v: f64, digits: i32) -> String {
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

pub fn format_num(v: f64, f: NumFmt) -> String {
    match f {
        NumFmt::Sig => sig(v, 4),
        NumFmt::Seconds => crate::units::format_seconds(v),
        NumFmt::Fixed(d) => format!("{v:.*}", d as usize),
        NumFmt::Ratio => format!("{v:.3}×"),
        NumFmt::Percent => format!("{:.1} %", v * 100.0),
        NumFmt::Bytes if v >= 0.0 && v.fract() == 0.0 && v < 9.0e15 => {
            crate::units::format_bytes(v as u64)
        }
        NumFmt::Bytes => sig(v, 4),
        NumFmt::ApproxBytes => {
            let (m, unit) = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
                .into_iter()
                .find(|(m, _)| v.abs() >= *m as f64)
                .unwrap_or((1, "B"));
            format!("{}{unit}", sig(v / m as f64, 3))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
