//! Spread and noisy cases: the noisiest cases with their percentiles.

use super::{case_text, setup_text, TOP};
use crate::present::doc::{text, Doc};
use crate::present::table::{Cell, NumFmt, Table};
use crate::report::analyze::Analysis;

pub(super) fn spread(doc: &mut Doc, a: &Analysis<'_>) {
    doc.heading(2, "Spread and noisy cases");
    let with = a.entries.iter().filter(|e| e.spread.is_some()).count();
    doc.para(vec![text(format!(
        "{} of {} with samples are noisy (cv > {}). The {} noisiest:",
        a.noisy.len(),
        crate::present::count(with, "case", "cases"),
        a.options.noisy_cv,
        a.noisy.len().min(TOP)
    ))]);
    let mut t = Table::new(&[
        "case", "set-up", "samples", "median", "p5", "p95", "cv", "time_s",
    ]);
    for &i in a.noisy.iter().take(TOP) {
        let e = &a.entries[i];
        let Some(s) = e.spread else {
            continue;
        };
        t.push(vec![
            Cell::text(case_text(e)),
            Cell::text(setup_text(a, &e.shape())),
            Cell::UInt(s.n as u64),
            Cell::num(s.median_s, NumFmt::MeasuredSeconds(e.digits())),
            Cell::num(s.p5_s, NumFmt::MeasuredSeconds(e.digits())),
            Cell::num(s.p95_s, NumFmt::MeasuredSeconds(e.digits())),
            Cell::num(s.cv, NumFmt::Percent),
            Cell::opt(e.time_s(), NumFmt::MeasuredSeconds(e.digits())),
        ]);
    }
    doc.table(t, "noisy", None);
}
