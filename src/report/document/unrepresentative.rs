//! Not representative: cases that ran on a set-up that cannot represent what it names, by
//! reason and by launch.

use super::findings::{Finding, Findings, Sentence};
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, Table};
use crate::report::analyze::Analysis;
use std::collections::BTreeMap;

/// Cases that cannot represent their set-up, grouped by launch and reason.
pub(super) fn unrepresentative(doc: &mut Doc, a: &Analysis<'_>, found: &mut Findings) {
    if a.unrepresentative.is_empty() {
        return;
    }
    doc.heading(2, "Not representative");
    let section = doc.last_heading_id().unwrap_or_default().to_string();
    doc.para(vec![text(if a.options.include_unrepresentative {
        format!("{} on a set-up that cannot represent what it names. --include-unrepresentative was given: {} used in winners, scaling and fits, and marked there.", ran(a.unrepresentative.len()), it_they(a.unrepresentative.len()))
    } else {
        format!("{} on a set-up that cannot represent what it names: {} shown apart (greyed in charts, in separate tables) and left out of winners, scaling efficiencies, fits and findings. --include-unrepresentative uses them, marked.", ran(a.unrepresentative.len()), it_they(a.unrepresentative.len()))
    })]);
    // (kind, launch, detail) → cases
    let mut groups: BTreeMap<(String, usize, String, String), (String, usize)> = BTreeMap::new();
    for &i in &a.unrepresentative {
        let e = &a.entries[i];
        for c in &e.concerns {
            let slot = groups
                .entry((
                    c.kind.clone(),
                    e.source,
                    e.case.launch_id.clone(),
                    c.detail.clone(),
                ))
                .or_insert_with(|| (e.shape().label(), 0));
            slot.1 += 1;
        }
    }
    let mut per_kind: BTreeMap<String, usize> = BTreeMap::new();
    for &i in &a.unrepresentative {
        for k in a.entries[i].concern_kinds() {
            *per_kind.entry(k).or_default() += 1;
        }
    }
    let mut t = Table::new(&["reason", "cases"]);
    for (k, n) in &per_kind {
        t.push(vec![Cell::text(k.clone()), Cell::UInt(*n as u64)]);
    }
    let list: Vec<Finding> = (0..t.rows.len())
        .map(|r| {
            let one = t.rows[r][1].raw() == "1";
            Sentence::new(&t, r)
                .fig("cases")
                .text(format!(
                    " {} not representative ({}) and {} {}",
                    if one { "case is" } else { "cases are" },
                    t.rows[r][0].raw().replace('_', " "),
                    if one { "is" } else { "are" },
                    if a.options.include_unrepresentative {
                        "included, marked, in what follows"
                    } else {
                        "left out of what follows"
                    }
                ))
                .text(".")
                .done("Set-up", None, &section)
        })
        .collect();
    found.cite(doc.table(t, "unrepresentative_summary", None), list);
    let mut t = Table::new(&["reason", "input", "launch", "set-up", "cases", "detail"]);
    for ((kind, src, launch, detail), (setup, n)) in groups {
        t.push(vec![
            Cell::text(kind),
            Cell::UInt(src as u64 + 1),
            Cell::text(launch),
            Cell::text(setup),
            Cell::UInt(n as u64),
            Cell::text(detail),
        ]);
    }
    doc.table(t, "unrepresentative", None);
}

/// `1 case ran` / `3 cases ran`.
fn ran(n: usize) -> String {
    format!("{} ran", crate::present::count(n, "case", "cases"))
}

/// `it is` / `they are`, agreeing with [`ran`].
fn it_they(n: usize) -> &'static str {
    if n == 1 {
        "it is"
    } else {
        "they are"
    }
}
