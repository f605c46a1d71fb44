//! Byte sizes with binary units: parsing (`8B`, `4KiB`, `1M`), size lists and ranges
//! (`8B:1GiB:x2`, `4KiB,1MiB`), and the one place where sizes are formatted for people.
//!
//! Binary suffixes follow nccl-tests (`128M` = 128 × 2^20 bytes). Decimal-looking units such as
//! `MB` are rejected rather than guessed, because the two readings differ by 5 % at MiB scale.

use std::fmt;

/// A size in bytes. The newtype keeps bytes from being mixed up with element counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

/// Why a size text could not be read. The message says what was wrong and how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error(
        "empty size: write a number of bytes with an optional binary unit, e.g. 8B, 4KiB, 1MiB"
    )]
    Empty,
    #[error("'{}' is not a size: write a whole number of bytes with an optional binary unit (B, KiB, MiB, GiB, TiB or K, M, G, T), e.g. 4KiB", shorten(.0))]
    Malformed(String),
    #[error("'{}' has the unit '{}', which is ambiguous: write {suggest} for the binary unit, or the plain number of bytes", shorten(.text), shorten(.unit))]
    DecimalUnit {
        text: String,
        unit: String,
        suggest: String,
    },
    #[error("'{}' is negative: sizes are whole numbers of bytes ≥ 0", shorten(.0))]
    Negative(String),
    #[error("'{}' is too large (more than 2^63 bytes)", shorten(.0))]
    TooLarge(String),
    #[error("range '{}' is malformed: write START:END:STEP with STEP as xF (multiply, F ≥ 2) or +SIZE (add), e.g. 8B:1GiB:x2 or 1MiB:8MiB:+1MiB", shorten(.0))]
    BadRange(String),
    #[error("range '{}' is empty: its start ({}) is larger than its end ({})", shorten(.text), shorten(.start), shorten(.end))]
    EmptyRange {
        text: String,
        start: String,
        end: String,
    },
    #[error("range '{}' expands to more than {} sizes: use a larger step", shorten(.0), .1)]
    RangeTooLong(String, usize),
}

const UNITS: &[(&str, u64)] = &[
    ("", 1),
    ("B", 1),
    ("K", 1 << 10),
    ("KiB", 1 << 10),
    ("M", 1 << 20),
    ("MiB", 1 << 20),
    ("G", 1 << 30),
    ("GiB", 1 << 30),
    ("T", 1 << 40),
    ("TiB", 1 << 40),
];

/// The most sizes a range may expand to; a guard against `1B:1TiB:+1B`.
pub const MAX_RANGE_LEN: usize = 100_000;

/// Parses one size such as `8`, `8B`, `4KiB`, `1M`.
pub fn parse_bytes(text: &str) -> Result<Bytes, SizeError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(SizeError::Empty);
    }
    if t.starts_with('-') {
        return Err(SizeError::Negative(t.to_string()));
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(SizeError::Malformed(t.to_string()));
    }
    let unit = unit.trim();
    let mult = match UNITS.iter().find(|(u, _)| *u == unit) {
        Some((_, m)) => *m,
        None => {
            let lower = unit.to_ascii_lowercase();
            let suggest = match lower.as_str() {
                "kb" => Some("KiB"),
                "mb" => Some("MiB"),
                "gb" => Some("GiB"),
                "tb" => Some("TiB"),
                _ => None,
            };
            return Err(match suggest {
                Some(s) => SizeError::DecimalUnit {
                    text: t.to_string(),
                    unit: unit.to_string(),
                    suggest: s.to_string(),
                },
                None => SizeError::Malformed(t.to_string()),
            });
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| SizeError::TooLarge(t.to_string()))?;
    let v = n
        .checked_mul(mult)
        .filter(|v| *v <= i64::MAX as u64)
        .ok_or_else(|| SizeError::TooLarge(t.to_string()))?;
    Ok(Bytes(v))
}

/// Parses a size list: comma-separated items, each a size or a range `START:END:STEP`.
/// The result keeps the written order and drops exact duplicates.
pub fn parse_size_list(text: &str) -> Result<Vec<Bytes>, SizeError> {
    let mut out: Vec<Bytes> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(SizeError::Empty);
        }
        let sizes = if item.contains(':') {
            parse_range(item)?
        } else {
            vec![parse_bytes(item)?]
        };
        for s in sizes {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        if out.len() > MAX_RANGE_LEN {
            return Err(SizeError::RangeTooLong(text.to_string(), MAX_RANGE_LEN));
        }
    }
    Ok(out)
}

fn parse_range(text: &str) -> Result<Vec<Bytes>, SizeError> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() != 3 {
        return Err(SizeError::BadRange(text.to_string()));
    }
    let start = parse_bytes(parts[0])?;
    let end = parse_bytes(parts[1])?;
    if start > end {
        return Err(SizeError::EmptyRange {
            text: text.to_string(),
            start: start.to_string(),
            end: end.to_string(),
        });
    }
    let step = parts[2].trim();
    let mut out = Vec::new();
    if let Some(f) = step.strip_prefix('x').or_else(|| step.strip_prefix('*')) {
        let factor: u64 = f
            .trim()
            .parse()
            .map_err(|_| SizeError::BadRange(text.to_string()))?;
        if factor < 2 || start.0 == 0 {
            return Err(SizeError::BadRange(text.to_string()));
        }
        let mut v = start.0;
        while v <= end.0 {
            out.push(Bytes(v));
            if out.len() > MAX_RANGE_LEN {
                return Err(SizeError::RangeTooLong(text.to_string(), MAX_RANGE_LEN));
            }
            v = match v.checked_mul(factor) {
                Some(n) => n,
                None => break,
            };
        }
    } else if let Some(a) = step.strip_prefix('+') {
        let add = parse_bytes(a)?;
        if add.0 == 0 {
            return Err(SizeError::BadRange(text.to_string()));
        }
        let mut v = start.0;
        while v <= end.0 {
            out.push(Bytes(v));
            if out.len() > MAX_RANGE_LEN {
                return Err(SizeError::RangeTooLong(text.to_string(), MAX_RANGE_LEN));
            }
            v += add.0;
        }
    } else {
        return Err(SizeError::BadRange(text.to_string()));
    }
    Ok(out)
}

/// Formats bytes the way people read them: the largest binary unit that divides the value
/// exactly (`4KiB`, `1GiB`), otherwise plain bytes (`1000B`). Round-trips through [`parse_bytes`].
pub fn format_bytes(v: u64) -> String {
    const NAMED: &[(&str, u64)] = &[
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, m) in NAMED {
        if v >= *m && v % m == 0 {
            return format!("{}{}", v / m, name);
        }
    }
    format!("{v}B")
}

/// Bytes in GiB with one decimal (`16.1 GiB`), for estimates where an exact unit would mislead.
pub fn format_gib(v: u64) -> String {
    format!("{:.1} GiB", v as f64 / (1u64 << 30) as f64)
}

/// Longest stretch of a user's text echoed in a message.
pub const ECHO_CHARS: usize = 60;

/// `text`, or its first [`ECHO_CHARS`] characters and its length: a 10,001-layer model or a
/// 309-digit number echoed in full buries the message.
pub fn shorten(text: &str) -> String {
    let n = text.chars().count();
    if n <= ECHO_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(ECHO_CHARS).collect();
    format!("{head}…({n} chars)")
}

/// A path as messages show it: whole, unless it cannot name a file at all (a component over
/// NAME_MAX's 255 bytes, or over PATH_MAX's 4,096 in all), when it is [`shorten`]ed: such a
/// path is a mistake or a probe, and 5,000 characters of it would bury the message.
pub fn path_text(p: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let text = p.display().to_string();
    let too_long =
        p.as_os_str().len() > 4096 || p.components().any(|c| c.as_os_str().as_bytes().len() > 255);
    if too_long {
        shorten(&text)
    } else {
        text
    }
}

/// A number a user gave, as short as it reads: `1e308`, not its 309 digits (`Display`).
pub fn echo_f64(v: f64) -> String {
    // Display reads best (`3000000`, `0.5`) until it runs long; Debug switches to exponents.
    let plain = format!("{v}");
    if plain.len() <= 20 {
        plain
    } else {
        shorten(&format!("{v:?}"))
    }
}

/// Formats seconds with a unit that keeps 3–4 significant digits (`12.3 µs`, `4.56 ms`).
pub fn format_seconds(s: f64) -> String {
    if !s.is_finite() {
        return format!("{s}");
    }
    let a = s.abs();
    if a >= 1.0 {
        format!("{s:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else if a >= 1e-6 {
        format!("{:.2} µs", s * 1e6)
    } else {
        format!("{:.1} ns", s * 1e9)
    }
}

/// `n thing` or `n things`: text says "1 case", "2 cases", never "case(s)".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_echoes_are_shortened() {
        assert_eq!(shorten("64x64"), "64x64");
        let long = "8x8+".repeat(40);
        let s = shorten(&long);
        assert!(
            s.ends_with("…(160 chars)") && s.chars().count() == 60 + 12,
            "{s}"
        );
        assert_eq!(echo_f64(1e308), "1e308");
        assert_eq!(echo_f64(0.5), "0.5");
        assert_eq!(echo_f64(3e6), "3000000");
        assert_eq!(format_gib(3 << 29), "1.5 GiB");
    }

    #[test]
    fn parses_binary_units() {
        assert_eq!(parse_bytes("8").unwrap(), Bytes(8));
        assert_eq!(parse_bytes("8B").unwrap(), Bytes(8));
        assert_eq!(parse_bytes("4KiB").unwrap(), Bytes(4096));
        assert_eq!(parse_bytes("4K").unwrap(), Bytes(4096));
        assert_eq!(parse_bytes("1MiB").unwrap(), Bytes(1 << 20));
        assert_eq!(parse_bytes(" 2G ").unwrap(), Bytes(2 << 30));
        assert_eq!(parse_bytes("1TiB").unwrap(), Bytes(1 << 40));
    }

    #[test]
    fn rejects_bad_sizes_with_reasons() {
        assert!(matches!(parse_bytes("12Q"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_bytes("-4"), Err(SizeError::Negative(_))));
        assert!(matches!(parse_bytes(""), Err(SizeError::Empty)));
        assert!(matches!(parse_bytes("KiB"), Err(SizeError::Malformed(_))));
        assert!(matches!(
            parse_bytes("1.5MiB"),
            Err(SizeError::Malformed(_))
        ));
        let e = parse_bytes("1MB").unwrap_err();
        assert!(e.to_string().contains("MiB"), "{e}");
        assert!(matches!(
            parse_bytes("99999999999999999999"),
            Err(SizeError::TooLarge(_))
        ));
        assert!(matches!(
            parse_bytes("16777216T"),
            Err(SizeError::TooLarge(_))
        ));
    }

    #[test]
    fn expands_ranges_and_lists() {
        let v = parse_size_list("8B:64B:x2").unwrap();
        assert_eq!(v, vec![Bytes(8), Bytes(16), Bytes(32), Bytes(64)]);
        let v = parse_size_list("1KiB:3KiB:+1KiB").unwrap();
        assert_eq!(v, vec![Bytes(1024), Bytes(2048), Bytes(3072)]);
        let v = parse_size_list("4KiB,1MiB,4KiB").unwrap();
        assert_eq!(v, vec![Bytes(4096), Bytes(1 << 20)]);
        let v = parse_size_list("8B:1GiB:x2").unwrap();
        assert_eq!(v.len(), 28);
        assert_eq!(*v.last().unwrap(), Bytes(1 << 30));
        // an end that is not on the step grid stops below it (documented in docs/sweeps.md
        // and `--help`): 8B:1MiB:x4 ends at 512 KiB, since 2 MiB is past the end
        let v = parse_size_list("8:100:x4").unwrap();
        assert_eq!(v, vec![Bytes(8), Bytes(32)]);
        let v = parse_size_list("8B:1MiB:x4").unwrap();
        assert_eq!(v.len(), 9);
        assert_eq!(*v.last().unwrap(), Bytes(512 << 10));
        assert!(!v.contains(&Bytes(1 << 20)));
        // an end on the grid is included
        let v = parse_size_list("8B:2MiB:x4").unwrap();
        assert_eq!(*v.last().unwrap(), Bytes(2 << 20));
        let v = parse_size_list("1MiB:3500KiB:+1MiB").unwrap();
        assert_eq!(*v.last().unwrap(), Bytes(3 << 20));
    }

    #[test]
    fn rejects_bad_ranges() {
        assert!(matches!(
            parse_size_list("8:4:x2"),
            Err(SizeError::EmptyRange { .. })
        ));
        assert!(matches!(
            parse_size_list("8:64"),
            Err(SizeError::BadRange(_))
        ));
        assert!(matches!(
            parse_size_list("8:64:x1"),
            Err(SizeError::BadRange(_))
        ));
        assert!(matches!(
            parse_size_list("0:64:x2"),
            Err(SizeError::BadRange(_))
        ));
        assert!(matches!(
            parse_size_list("8:64:+0"),
            Err(SizeError::BadRange(_))
        ));
        assert!(matches!(
            parse_size_list("8:64:y2"),
            Err(SizeError::BadRange(_))
        ));
        assert!(matches!(
            parse_size_list("4KiB,,8KiB"),
            Err(SizeError::Empty)
        ));
        assert!(matches!(
            parse_size_list("1:1TiB:+1"),
            Err(SizeError::RangeTooLong(..))
        ));
    }

    #[test]
    fn formats_round_trip() {
        for v in [0u64, 1, 8, 1000, 1024, 3 << 20, (1 << 30) + 1, 5 << 40] {
            assert_eq!(parse_bytes(&format_bytes(v)).unwrap(), Bytes(v), "{v}");
        }
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(1536), "1536B");
        assert_eq!(format_seconds(1.5e-6), "1.50 µs");
        assert_eq!(format_seconds(0.0125), "12.500 ms");
    }
}
