//! The nccl-tests layout of a collective's per-size results, shared by the live table a run
//! prints (`run/console.rs`) and the per-size tables of a report: one row per size with the
//! out-of-place and in-place measurements side by side, and the line naming the set-up above
//! it. Only names and order live here; each side fills the cells from its own data.

/// The columns that identify a row: name and unit.
pub(crate) const KEY_COLUMNS: [(&str, &str); 5] = [
    ("size", "(B)"),
    ("count", "(elements)"),
    ("type", ""),
    ("redop", ""),
    ("root", ""),
];

/// The two placements, left to right.
pub(crate) const PLACES: [&str; 2] = ["out-of-place", "in-place"];

/// The columns of each placement: name and unit.
pub(crate) const PLACE_COLUMNS: [(&str, &str); 4] = [
    ("time", "(us)"),
    ("algbw", "(GB/s)"),
    ("busbw", "(GB/s)"),
    ("#wrong", ""),
];

/// One name per column for a table whose header is a single row (`size (B)`,
/// `out-of-place time (us)`, …, `in-place #wrong`).
pub(crate) fn flat_columns() -> Vec<String> {
    let join = |n: &str, u: &str| {
        if u.is_empty() {
            n.to_string()
        } else {
            format!("{n} {u}")
        }
    };
    let mut v: Vec<String> = KEY_COLUMNS.iter().map(|(n, u)| join(n, u)).collect();
    for place in PLACES {
        v.extend(
            PLACE_COLUMNS
                .iter()
                .map(|(n, u)| join(&format!("{place} {n}"), u)),
        );
    }
    v
}

/// The set-up a block of rows was measured on, as one line.
pub(crate) struct BlockTitle<'a> {
    pub workload: &'a str,
    pub timing: &'a str,
    pub devices: u32,
    pub nodes: u32,
    pub devices_per_node: u32,
    pub topology: &'a str,
    pub ranks: u32,
    pub binding: &'a str,
    pub placement: &'a str,
}

impl std::fmt::Display for BlockTitle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} timing) on {}: {} × {}, {} topology, {}, binding {}, placement {}",
            self.workload,
            self.timing,
            super::count(self.devices as usize, "device", "devices"),
            super::count(self.nodes as usize, "node", "nodes"),
            super::count(self.devices_per_node as usize, "device", "devices"),
            self.topology,
            super::count(self.ranks as usize, "rank", "ranks"),
            self.binding,
            self.placement
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_columns_pair_the_placements() {
        let c = flat_columns();
        assert_eq!(c.len(), 5 + 2 * 4);
        assert_eq!(c[0], "size (B)");
        assert_eq!(c[5], "out-of-place time (us)");
        assert_eq!(c[7], "out-of-place busbw (GB/s)");
        assert_eq!(c[12], "in-place #wrong");
    }
}
