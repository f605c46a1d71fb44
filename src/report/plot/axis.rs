//! Chart axes: the scale of each quantity (log2 with binary byte units, log10 with time or
//! bandwidth units, log2 counts and ratios, linear), its tick positions and tick labels.
//!
//! Charts draw in transformed coordinates (log2 or log10 of the value), so every axis has exact
//! control over where ticks go: sizes get ticks at powers of two labelled `1KiB`, `1MiB`, times
//! at decades labelled `1 µs`, `10 µs`.

use crate::units::format_bytes;

/// The unit a log10 or linear axis labels its ticks with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Seconds, labelled with ns/µs/ms/s.
    Seconds,
    /// A plain number.
    Plain,
}

/// How values map to the axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    /// Bytes on a log2 axis, ticks at powers of two with binary units.
    Log2Bytes,
    /// Log10 axis with decade ticks.
    Log10(Unit),
    /// Counts (devices, speedups) on a log2 axis.
    Log2Count,
    /// Ratios on a log2 axis (1 in the middle, 2× and 0.5× equally far).
    Log2Ratio,
    /// A linear axis.
    Linear(Unit),
}

/// An axis: its title (with the unit) and its scale.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    pub title: String,
    pub scale: Scale,
}

impl Axis {
    pub(crate) fn new(title: impl Into<String>, scale: Scale) -> Axis {
        Axis {
            title: title.into(),
            scale,
        }
    }
}

impl Scale {
    /// The chart coordinate of `v`; `None` when `v` cannot be drawn (≤ 0 on a log axis).
    pub(crate) fn to_coord(self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match self {
            Scale::Linear(_) => Some(v),
            _ if v <= 0.0 => None,
            Scale::Log10(_) => Some(v.log10()),
            Scale::Log2Bytes | Scale::Log2Count | Scale::Log2Ratio => Some(v.log2()),
        }
    }

    pub(crate) fn is_log(self) -> bool {
        !matches!(self, Scale::Linear(_))
    }

    /// Bold ticks (labelled, grid lines) and light ticks (grid only) covering [lo, hi] in
    /// chart coordinates.
    pub(crate) fn ticks(self, lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
        match self {
            Scale::Log2Bytes => log2_bytes_ticks(lo, hi),
            Scale::Log10(_) => log10_ticks(lo, hi),
            Scale::Log2Count => (log2_count_ticks(lo, hi), vec![]),
            Scale::Log2Ratio => (log2_ratio_ticks(lo, hi), vec![]),
            Scale::Linear(_) => (linear_ticks(lo, hi), vec![]),
        }
    }

    /// The label of a tick at chart coordinate `c`.
    pub(crate) fn label(self, c: f64) -> String {
        match self {
            Scale::Log2Bytes => {
                let e = c.round();
                let v = 2f64.powf(c);
                if (c - e).abs() < 1e-9 && (0.0..63.0).contains(&e) {
                    format_bytes(1u64 << e as u32)
                } else if (v - v.round()).abs() < 1e-6 * v && v < 9.0e15 {
                    // a measured size that is not a power of two (`3KiB`, `1000B`)
                    format_bytes(v.round() as u64)
                } else {
                    format!("{}B", trim(v))
                }
            }
            Scale::Log10(u) => unit_label(10f64.powf(c), u),
            Scale::Log2Count => trim(2f64.powf(c)),
            Scale::Log2Ratio => {
                let e = c.round();
                if (c - e).abs() < 1e-9 && e <= -1.0 {
                    // 1/64× reads better than 0.015625×
                    format!("1/{}×", trim(2f64.powf(-e)))
                } else {
                    format!("{}×", trim(2f64.powf(c)))
                }
            }
            Scale::Linear(u) => unit_label(c, u),
        }
    }
}

/// Powers of two of bytes: every 1, 2, 5, 10 or 20 exponents labelled (at most ~10), the
/// others as light grid lines.
fn log2_bytes_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (a, b) = (lo.ceil() as i64, hi.floor() as i64);
    let span = (b - a).max(0);
    let step = [1, 2, 5, 10, 20]
        .into_iter()
        .find(|s| span / s <= 10)
        .unwrap_or(20);
    let bold: Vec<f64> = (a..=b)
        .filter(|e| e.rem_euclid(step) == 0)
        .map(|e| e as f64)
        .collect();
    let light: Vec<f64> = if step > 1 {
        (a..=b).map(|e| e as f64).collect()
    } else {
        vec![]
    };
    if bold.is_empty() {
        ((a..=b).map(|e| e as f64).collect(), vec![])
    } else {
        (bold, light)
    }
}

/// Byte ticks at the measured sizes (`coords`: their log2, sorted, distinct): every measured
/// size labelled when at most [`MAX_SIZE_LABELS`] are, else every k-th (the smallest and the
/// largest always), so 30 sizes stay readable; every measured size and power of two a light
/// grid line. Falls back to [`Scale::ticks`] with fewer than 2 measured sizes in range.
pub(crate) fn measured_byte_ticks(coords: &[f64], lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let inside: Vec<f64> = coords
        .iter()
        .copied()
        .filter(|c| *c >= lo - 1e-9 && *c <= hi + 1e-9)
        .collect();
    if inside.len() < 2 {
        return log2_bytes_ticks(lo, hi);
    }
    let k = inside.len().div_ceil(MAX_SIZE_LABELS);
    let last = inside.len() - 1;
    let mut idx: Vec<usize> = (0..=last).step_by(k).collect();
    if idx.last() != Some(&last) {
        // the largest replaces the label just before it when the two would crowd
        if idx.len() > 1 && last - idx[idx.len() - 1] < k.div_ceil(2) {
            idx.pop();
        }
        idx.push(last);
    }
    let bold: Vec<f64> = idx.into_iter().map(|i| inside[i]).collect();
    let mut light: Vec<f64> = inside.clone();
    light.extend((lo.ceil() as i64..=hi.floor() as i64).map(|e| e as f64));
    light.sort_by(f64::total_cmp);
    light.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    (bold, light)
}

/// Most size labels on one x axis (a 760-pixel panel fits about 12 labels like `256KiB`).
pub(crate) const MAX_SIZE_LABELS: usize = 10;

/// Powers of two: every 1 to 5 exponents, at most ~8 labels.
fn log2_count_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.ceil() as i64, hi.floor() as i64);
    let span = (b - a).max(0);
    let step = [1, 2, 3, 4, 5]
        .into_iter()
        .find(|s| span / s <= 8)
        .unwrap_or(5);
    (a..=b)
        .filter(|e| e.rem_euclid(step) == 0)
        .map(|e| e as f64)
        .collect()
}

/// Ratios on a log2 axis: evenly spaced ratios when the range is narrow, else powers of two.
fn log2_ratio_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi - lo < 2.0 {
        // A narrow range: evenly spaced ratios (0.9×, 0.95×, 1×, ...).
        let (a, b) = (2f64.powf(lo), 2f64.powf(hi));
        for step in [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5] {
            let first = (a / step).ceil() as i64;
            let last = (b / step).floor() as i64;
            if last - first < 8 && last >= first {
                let bold: Vec<f64> = (first..=last).map(|k| (k as f64 * step).log2()).collect();
                if bold.len() >= 3 {
                    return bold;
                }
            }
        }
    }
    log2_count_ticks(lo, hi)
}

/// A linear axis: steps of 1, 2, 2.5 or 5 times a power of ten, at most ~7 labels.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 7.0)
        .unwrap_or(10.0 * mag);
    let mut v = (lo / step).ceil() * step;
    let mut bold = Vec::new();
    while v <= hi + step * 1e-9 {
        bold.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    bold
}

fn log10_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (a, b) = (lo.floor() as i64, hi.ceil() as i64);
    let decades = (b - a).max(1);
    let in_range = |c: &f64| *c >= lo - 1e-9 && *c <= hi + 1e-9;
    if hi - lo <= 4.0 {
        // Up to 4 decades: 1-2-5 labels, so values between decades can be read.
        let bold: Vec<f64> = (a..=b)
            .flat_map(|d| [1.0, 2.0, 5.0].map(|m| (m * 10f64.powi(d as i32)).log10()))
            .filter(in_range)
            .collect();
        let light: Vec<f64> = (a..=b)
            .flat_map(|d| (1..10).map(move |m| (f64::from(m) * 10f64.powi(d as i32)).log10()))
            .filter(in_range)
            .collect();
        return (bold, light);
    }
    if hi - lo <= 7.0 {
        // Up to 7 decades: 1-3 labels (half a decade apart), light 2..9 lines.
        let bold: Vec<f64> = (a..=b)
            .flat_map(|d| [1.0, 3.0].map(|m| (m * 10f64.powi(d as i32)).log10()))
            .filter(in_range)
            .collect();
        let light: Vec<f64> = (a..=b)
            .flat_map(|d| (1..10).map(move |m| (f64::from(m) * 10f64.powi(d as i32)).log10()))
            .filter(in_range)
            .collect();
        return (bold, light);
    }
    let step = [1, 2, 3, 4, 5]
        .into_iter()
        .find(|s| decades / s <= 9)
        .unwrap_or(5);
    let bold: Vec<f64> = (a..=b)
        .filter(|d| d.rem_euclid(step) == 0)
        .map(|d| d as f64)
        .filter(in_range)
        .collect();
    let light: Vec<f64> = if step == 1 && decades <= 8 {
        (a..=b)
            .flat_map(|d| (2..10).map(move |m| (f64::from(m) * 10f64.powi(d as i32)).log10()))
            .filter(in_range)
            .collect()
    } else {
        (a..=b).map(|d| d as f64).filter(in_range).collect()
    };
    (bold, light)
}

/// A number without trailing zeros: `0.5`, `2`, `1.25`, `1e-5` for extremes.
pub(crate) fn trim(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    if !(1e-4..1e6).contains(&a) {
        let s = format!("{v:.1e}");
        return s.replace(".0e", "e");
    }
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn unit_label(v: f64, u: Unit) -> String {
    match u {
        Unit::Plain => trim(v),
        Unit::Seconds => {
            let a = v.abs();
            let (x, unit) = if a >= 1.0 || a == 0.0 {
                (v, "s")
            } else if a >= 1e-3 - 1e-15 {
                (v * 1e3, "ms")
            } else if a >= 1e-6 - 1e-18 {
                (v * 1e6, "µs")
            } else {
                (v * 1e9, "ns")
            };
            format!("{} {unit}", trim((x * 1e6).round() / 1e6))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ticks_use_binary_units() {
        let (bold, light) = Scale::Log2Bytes.ticks(3.0, 30.0);
        let labels: Vec<String> = bold.iter().map(|&c| Scale::Log2Bytes.label(c)).collect();
        assert_eq!(labels, ["32B", "1KiB", "32KiB", "1MiB", "32MiB", "1GiB"]);
        assert_eq!(light.len(), 28);
        let (bold, _) = Scale::Log2Bytes.ticks(10.0, 14.0);
        let labels: Vec<String> = bold.iter().map(|&c| Scale::Log2Bytes.label(c)).collect();
        assert_eq!(labels, ["1KiB", "2KiB", "4KiB", "8KiB", "16KiB"]);
    }

    #[test]
    fn time_ticks_are_decades_with_units() {
        // 4.3 decades: labels between decades too (1, 3 per decade)
        let (bold, _) = Scale::Log10(Unit::Seconds).ticks(-7.2, -2.9);
        let labels: Vec<String> = bold
            .iter()
            .map(|&c| Scale::Log10(Unit::Seconds).label(c))
            .collect();
        assert_eq!(
            labels,
            [
                "100 ns", "300 ns", "1 µs", "3 µs", "10 µs", "30 µs", "100 µs", "300 µs", "1 ms"
            ]
        );
        // 3 decades: 1-2-5
        let (bold, _) = Scale::Log10(Unit::Plain).ticks(-2.05, 1.05);
        let labels: Vec<String> = bold
            .iter()
            .map(|&c| Scale::Log10(Unit::Plain).label(c))
            .collect();
        assert_eq!(
            labels,
            ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10"]
        );
        // 12 decades: every other decade labelled
        let (bold, _) = Scale::Log10(Unit::Seconds).ticks(-9.0, 3.0);
        assert_eq!(bold.len(), 6);
        assert!(bold.iter().all(|c| c.fract() == 0.0));
        let (bold, _) = Scale::Log10(Unit::Plain).ticks(-0.1, 1.1);
        let labels: Vec<String> = bold
            .iter()
            .map(|&c| Scale::Log10(Unit::Plain).label(c))
            .collect();
        assert_eq!(labels, ["1", "2", "5", "10"]);
    }

    #[test]
    fn ratio_count_and_linear_ticks() {
        let (bold, _) = Scale::Log2Ratio.ticks(0.8f64.log2(), 1.3f64.log2());
        let labels: Vec<String> = bold.iter().map(|&c| Scale::Log2Ratio.label(c)).collect();
        assert_eq!(labels, ["0.8×", "0.9×", "1×", "1.1×", "1.2×", "1.3×"]);
        let (bold, _) = Scale::Log2Ratio.ticks(0.83f64.log2(), 1.06f64.log2());
        let labels: Vec<String> = bold.iter().map(|&c| Scale::Log2Ratio.label(c)).collect();
        assert_eq!(labels, ["0.85×", "0.9×", "0.95×", "1×", "1.05×"]);
        let (bold, _) = Scale::Log2Ratio.ticks(-12.5, 4.2);
        let labels: Vec<String> = bold.iter().map(|&c| Scale::Log2Ratio.label(c)).collect();
        assert_eq!(
            labels,
            ["1/4096×", "1/1024×", "1/256×", "1/64×", "1/16×", "1/4×", "1×", "4×", "16×"]
        );
        let (bold, _) = Scale::Log2Count.ticks(0.0, 4.0);
        let labels: Vec<String> = bold.iter().map(|&c| Scale::Log2Count.label(c)).collect();
        assert_eq!(labels, ["1", "2", "4", "8", "16"]);
        let (bold, _) = Scale::Linear(Unit::Plain).ticks(0.0, 1.2);
        let labels: Vec<String> = bold
            .iter()
            .map(|&c| Scale::Linear(Unit::Plain).label(c))
            .collect();
        assert_eq!(labels, ["0", "0.2", "0.4", "0.6", "0.8", "1", "1.2"]);
        assert_eq!(Scale::Log2Bytes.to_coord(0.0), None);
        assert_eq!(Scale::Linear(Unit::Plain).to_coord(-1.0), Some(-1.0));
    }

    #[test]
    fn size_ticks_sit_at_the_measured_sizes() {
        // the demo's 8B:4MiB:x8: 7 sizes, every one labelled, none in between
        let sizes: Vec<f64> = (0..7).map(|k| (8f64 * 8f64.powi(k)).log2()).collect();
        let (bold, light) = measured_byte_ticks(&sizes, 2.5, 22.5);
        let labels: Vec<String> = bold.iter().map(|&c| Scale::Log2Bytes.label(c)).collect();
        assert_eq!(
            labels,
            ["8B", "64B", "512B", "4KiB", "32KiB", "256KiB", "2MiB"]
        );
        assert!(light.len() >= 20, "{light:?}");
        // 30 sizes: at most 10 labels, the smallest and the largest among them
        let sizes: Vec<f64> = (0..30).map(f64::from).collect();
        let (bold, _) = measured_byte_ticks(&sizes, -0.5, 29.5);
        assert!(bold.len() <= MAX_SIZE_LABELS + 1, "{bold:?}");
        assert_eq!((bold[0], *bold.last().unwrap()), (0.0, 29.0));
        // sizes that are not powers of two keep their own names
        assert_eq!(Scale::Log2Bytes.label(3072f64.log2()), "3KiB");
        assert_eq!(Scale::Log2Bytes.label(1000f64.log2()), "1000B");
    }

    #[test]
    fn trimmed_numbers() {
        assert_eq!(trim(0.5), "0.5");
        assert_eq!(trim(2.0), "2");
        assert_eq!(trim(1e-6), "1e-6");
        assert_eq!(unit_label(1e-6, Unit::Seconds), "1 µs");
        assert_eq!(unit_label(0.02, Unit::Seconds), "20 ms");
        assert_eq!(unit_label(5e-9, Unit::Seconds), "5 ns");
    }
}
