//! Failed, wrong and skipped cases, and launches that did not finish.

use super::{case_text, setup_text, TOP};
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, Table};
use crate::report::analyze::{Analysis, Entry};
use crate::results::schema::CaseStatus;

pub(super) fn problems(doc: &mut Doc, a: &Analysis<'_>) {
    doc.heading(2, "Failed, wrong and skipped cases");
    let bad: Vec<&Entry<'_>> = a.problems.iter().map(|&i| &a.entries[i]).collect();
    let launches: Vec<(usize, &crate::results::schema::LaunchRecord)> = a
        .sources
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.file.launches.iter().map(move |l| (i, l)))
        .filter(|(_, l)| l.status != crate::results::schema::LaunchStatus::Ok)
        .collect();
    if bad.is_empty() && launches.is_empty() {
        doc.prose("Every case was measured and validated.");
        return;
    }
    let mut t = Table::new(&["case", "set-up", "status", "wrong", "message"]);
    let mut order: Vec<&Entry<'_>> = bad.clone();
    // wrong results first: they matter most
    order.sort_by_key(|e| match e.case.status {
        CaseStatus::Wrong => 0,
        CaseStatus::Failed => 1,
        CaseStatus::Timeout => 2,
        _ => 3,
    });
    for e in order.iter().take(TOP * 2) {
        t.push(vec![
            Cell::text(case_text(e)),
            Cell::text(setup_text(a, &e.shape())),
            Cell::text(e.case.status.name()),
            Cell::UInt(e.case.wrong),
            Cell::text(e.case.message.clone().unwrap_or_default()),
        ]);
    }
    if !bad.is_empty() {
        doc.para(vec![text(format!(
            "{} not measured or not valid; wrong results first.",
            crate::present::count(bad.len(), "case", "cases")
        ))]);
    }
    doc.table(t, "problems", None);
    let mut t = Table::new(&["input", "launch", "set-up", "status", "stderr (last lines)"]);
    for (i, l) in launches {
        t.push(vec![
            Cell::UInt(i as u64 + 1),
            Cell::text(l.launch_id.clone()),
            Cell::text(l.shape.label()),
            Cell::text(format!("{:?}", l.status).to_lowercase()),
            Cell::text(l.stderr_tail.clone().unwrap_or_default()),
        ]);
    }
    doc.table(t, "failed_launches", None);
}
