//! The opening paragraph: first whether a run is incomplete (planned, measured, missing and
//! why), then what was read and measured, and warnings about emulated nodes, stand-in devices
//! and duplicates.

use crate::present::doc::{text, Doc, Span};
use crate::report::analyze::{Analysis, Layout};
use std::collections::BTreeMap;

pub(super) fn overview(doc: &mut Doc, a: &Analysis<'_>) {
    // An incomplete run says so before anything it measured.
    for s in a.sources {
        if let Some(line) = s.file.incomplete_headline() {
            doc.para(vec![text(format!(
                "{line} ({}): this report shows only what was measured; the missing cases run when the spec is submitted again into the run (`sweep --resume` for a local sweep).",
                s.path.display()
            ))]);
        }
    }
    let n = a.entries.len();
    let measured = a.entries.iter().filter(|e| e.time_s().is_some()).count();
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &a.entries {
        *by_status.entry(e.case.status.name()).or_default() += 1;
    }
    let mut wls: Vec<String> = a
        .entries
        .iter()
        .map(|e| e.params().workload.to_string())
        .collect();
    wls.sort();
    wls.dedup();
    let version = env!("CARGO_PKG_VERSION");
    doc.para(vec![text(format!(
        "scalebench {version} report from {}: {} ({}), {measured} measured and validated; workloads: {}; layouts (nodes × devices per node): {}.",
        crate::present::count(a.sources.len(), "input file", "input files"),
        crate::present::count(n, "case", "cases"),
        by_status
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        wls.join(", "),
        a.palette
            .layouts
            .iter()
            .map(Layout::label)
            .collect::<Vec<_>>()
            .join(", ")
    ))]);
    if a.sources.iter().any(|s| s.file.run.emulated_nodes) {
        doc.para(vec![
            Span::Strong("Emulated nodes.".into()),
            text(" Some inputs ran with nodes emulated on one host: their node counts group ranks on one machine, they are not separate machines, so inter-node effects are absent."),
        ]);
    }
    // Runs on scalebench's stand-in CUDA libraries (standin/) say so in their backend detail.
    let standin = a.sources.iter().any(|s| {
        s.file
            .launches
            .iter()
            .filter_map(|l| l.provenance.as_ref())
            .any(|p| p.backend.detail.starts_with("STAND-IN: "))
    });
    if standin {
        doc.para(vec![
            Span::Strong("Stand-in devices, not GPUs.".into()),
            text(" Some inputs ran the CUDA backend on scalebench's stand-in libraries (CPU test doubles of the driver, cuBLAS and NCCL): they show that the device path runs and validates; none of their times, bandwidths or GFLOP/s is a GPU's."),
        ]);
    }
    let sel = a.selection;
    if sel.duplicates > 0 || sel.filtered_out > 0 {
        doc.para(vec![text(format!(
            "{} measured in more than one input (the newest measurement of each is used); {} left out by --only.",
            were(sel.duplicates),
            were(sel.filtered_out)
        ))]);
    }
}

/// `1 case was` / `2 cases were`.
fn were(n: usize) -> String {
    format!(
        "{} {}",
        crate::present::count(n, "case", "cases"),
        if n == 1 { "was" } else { "were" }
    )
}
