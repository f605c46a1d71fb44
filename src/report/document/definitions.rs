//! Appendix B: the thresholds used and the definitions of every derived figure.

use crate::present::doc::{prose, text, Block, Doc, Span};
use crate::report::analyze::Analysis;
use crate::report::derive;
use crate::report::model;

pub(super) fn definitions(doc: &mut Doc, a: &Analysis<'_>) {
    doc.heading(2, "Appendix B: definitions");
    let o = a.options;
    doc.para(vec![text(format!(
        "Thresholds used here: a case is noisy when cv > {} ({:.0} %); a ratio within 1 ± {} is a tie; charts show the {} with the most cases per workload (the rest are in the tables and results.csv).",
        o.noisy_cv,
        o.noisy_cv * 100.0,
        o.tie_band,
        crate::present::count(o.chart_variants, "variant", "variants")
    ))]);
    let defs: Vec<(String, Vec<Span>)> = derive::DEFINITIONS
        .iter()
        .chain(model::DEFINITIONS)
        .map(|(k, v)| (k.to_string(), prose(v)))
        .collect();
    doc.blocks.push(Block::Defs(defs));
}
