//! All cases: where every case's every field is (results.csv), and the HTML case table.

use crate::present::doc::{text, Block, Doc, Span, TableBlock};
use crate::present::table::Table;

/// The columns of the HTML case table: a projection of the one case flattening.
const CASE_COLUMNS: &[&str] = &[
    "id",
    "params.workload",
    "params.topology",
    "params.nodes",
    "params.devices_per_node",
    "params.binding",
    "params.dtype",
    "params.op",
    "params.in_place",
    "params.timing",
    "params.requested_bytes",
    "params.shape.m",
    "params.scaling",
    "status",
    "timing.time_s",
    "timing.stats_s.median",
    "report.p5_s",
    "report.p95_s",
    "timing.stats_s.cv",
    "report.noisy",
    "algbw_gbps",
    "busbw_gbps",
    "gflops",
    "gflops_total",
    "report.imbalance",
    "report.slowest_node",
];

pub(super) fn all_cases(doc: &mut Doc) {
    doc.heading(2, "All cases");
    doc.para(vec![
        text("One row per case, every field: "),
        Span::Link {
            text: "results.csv".into(),
            href: "results.csv".into(),
        },
        text(" (columns are the results.json field paths; raw samples and per-rank times stay in results.json). The sortable table in report.html shows the main columns. Every CSV file holds exact values in base units: times in seconds, sizes in bytes, percentages as fractions."),
    ]);
}

/// The HTML case table: a projection of the one case flattening that also writes results.csv.
pub(crate) fn case_block(cases: &Table) -> Block {
    Block::Table(TableBlock {
        table: cases.project(CASE_COLUMNS),
        csv: "results.csv".to_string(),
        export: false,
        folded: Some("Every case (click a column to sort)".to_string()),
    })
}
