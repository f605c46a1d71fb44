//! The first screen: three lines that answer before any section does. What ran on what,
//! the main answer (the first finding that is not about the set-up), and how sure it is
//! (runs, the spread within cases, and what was set apart). Built after the findings, from
//! the same analysis; `report` prints the three lines on the terminal too.

use super::findings::{Finding, Findings, Part};
use crate::params::Workload;
use crate::present::count;
use crate::report::analyze::Analysis;
use crate::stats;
use crate::units::format_bytes;
use std::collections::{BTreeMap, BTreeSet};

/// The three lines, each a label and its text.
pub(crate) type Glance = [(&'static str, String); 3];

pub(super) fn glance(a: &Analysis<'_>, found: &Findings) -> Glance {
    [
        ("Ran", ran(a)),
        ("Answer", answer(a, found)),
        ("How sure", how_sure(a)),
    ]
}

/// Workloads (with the sizes of the collectives), hosts and their CPU, backends, MPI and the
/// layouts.
fn ran(a: &Analysis<'_>) -> String {
    let wls: BTreeSet<Workload> = a.entries.iter().map(|e| e.params().workload).collect();
    let wls: Vec<String> = wls.iter().map(ToString::to_string).collect();
    let sizes: Vec<u64> = a
        .entries
        .iter()
        .filter(|e| e.params().workload.is_collective())
        .filter_map(|e| e.params().requested_bytes)
        .collect();
    let range = match (sizes.iter().min(), sizes.iter().max()) {
        (Some(lo), Some(hi)) if lo != hi => {
            format!(" ({} – {})", format_bytes(*lo), format_bytes(*hi))
        }
        (Some(one), _) => format!(" ({})", format_bytes(*one)),
        _ => String::new(),
    };
    let mut hosts: BTreeMap<&str, &str> = BTreeMap::new();
    let mut mpi: BTreeSet<String> = BTreeSet::new();
    let mut emulated = false;
    let mut standin = false;
    for e in &a.entries {
        let Some(p) = e.launch.and_then(|l| l.provenance.as_ref()) else {
            continue;
        };
        for h in &p.hosts {
            hosts.entry(h.host.as_str()).or_insert(h.cpu_model.as_str());
        }
        if let Some(l) = p.mpi_library.as_deref() {
            let first = l.lines().next().unwrap_or("");
            mpi.insert(first.split(',').next().unwrap_or(first).trim().to_string());
        }
        emulated |= p.emulated_nodes && p.nodes > 1;
        standin |= p.backend.detail.starts_with("STAND-IN: ");
    }
    let hosts_text = match hosts.len() {
        0 => "hosts not recorded".to_string(),
        1 => hosts
            .iter()
            .map(|(h, m)| {
                if m.is_empty() {
                    format!("1 host ({h})")
                } else {
                    format!("1 host ({h}: {m})")
                }
            })
            .collect(),
        n => {
            let models: BTreeSet<&str> =
                hosts.values().copied().filter(|m| !m.is_empty()).collect();
            let models: Vec<&str> = models.into_iter().collect();
            format!("{n} hosts ({})", models.join("; "))
        }
    };
    let backends: BTreeSet<String> = a
        .entries
        .iter()
        .map(|e| e.params().backend.to_string())
        .collect();
    let backends: Vec<String> = backends.into_iter().collect();
    let layouts: Vec<String> = a.palette.layouts.iter().map(|l| l.label()).collect();
    let mut s = format!(
        "{}{range} on {hosts_text}, {} backend{}{}; layouts (nodes × devices per node) {}",
        wls.join(", "),
        backends.join(" and "),
        if standin {
            " (STAND-IN libraries: no GPU figure)"
        } else {
            ""
        },
        if mpi.is_empty() {
            String::new()
        } else {
            format!(", {}", mpi.into_iter().collect::<Vec<_>>().join("; "))
        },
        layouts.join(", ")
    );
    if emulated {
        s.push_str(" (emulated nodes: groups of processes on one host)");
    }
    s.push('.');
    s
}

/// A finding's sentence as plain text.
fn sentence(f: &Finding) -> String {
    f.parts
        .iter()
        .map(|p| match p {
            Part::Text(x) => x.clone(),
            Part::Fig { cell, .. } => cell.display(),
        })
        .collect()
}

/// The first finding about how the work scales, else the first about what was measured
/// (set-up findings belong to "how sure"), in the order the findings section lists them.
fn answer(a: &Analysis<'_>, found: &Findings) -> String {
    let about: Vec<&Finding> = found.items.iter().filter(|f| f.topic != "Set-up").collect();
    let lead = about.iter().find(|f| f.headline).or(about.first());
    let Some(first) = lead else {
        let measured = a.entries.iter().filter(|e| e.time_s().is_some()).count();
        return if measured == 0 {
            "no finding: no case was measured and validated (see Problems).".into()
        } else if !a.unrepresentative.is_empty()
            && !a.options.include_unrepresentative
            && a.unrepresentative.len() >= measured
        {
            "no finding: every measured case is set apart as not representative of its set-up (see Not representative); rerun on a quieter allocation, or pass --include-unrepresentative to use them, marked.".into()
        } else {
            "no finding can be stated from these cases (see the sections below).".into()
        };
    };
    let mut s = format!("{}: {}", first.topic, sentence(first));
    if about.len() > 1 {
        s.push_str(&format!(
            " (the first of {} under Findings)",
            count(about.len(), "finding", "findings")
        ));
    }
    s
}

/// Runs, the spread within cases, and what was set apart.
fn how_sure(a: &Analysis<'_>) -> String {
    let runs: BTreeSet<&str> = a
        .entries
        .iter()
        .map(|e| a.sources[e.source].file.run.run_id.as_str())
        .collect();
    let mut parts = vec![if runs.len() == 1 {
        "1 run (one run cannot show run-to-run variance: give 3 or more runs for intervals across runs)".to_string()
    } else {
        format!(
            "{}: each case's newest measurement is tabled, intervals and winners use all of them",
            count(runs.len(), "run", "runs")
        )
    }];
    let cvs: Vec<f64> = a
        .entries
        .iter()
        .filter_map(|e| e.spread.map(|s| s.cv))
        .collect();
    if let Some(median) = stats::median(&cvs) {
        parts.push(format!(
            "spread within cases: median cv {:.1} % over {}, {} noisy (cv > {:.0} %)",
            100.0 * median,
            count(cvs.len(), "case", "cases"),
            a.noisy.len(),
            100.0 * a.options.noisy_cv
        ));
    }
    let mut apart = Vec::new();
    if !a.unrepresentative.is_empty() {
        let kinds: BTreeSet<String> = a
            .unrepresentative
            .iter()
            .flat_map(|&i| a.entries[i].concern_kinds())
            .map(|k| k.replace('_', " "))
            .collect();
        apart.push(format!(
            "{} not representative ({}){}",
            count(a.unrepresentative.len(), "case", "cases"),
            kinds.into_iter().collect::<Vec<_>>().join(", "),
            if a.options.include_unrepresentative {
                ", used (--include-unrepresentative), marked"
            } else {
                ""
            }
        ));
    }
    if !a.problems.is_empty() {
        // by status: a case the plan skipped is not a failure, and says so
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for &i in &a.problems {
            *by.entry(a.entries[i].case.status.name()).or_default() += 1;
        }
        let each: Vec<String> = by.iter().map(|(k, n)| format!("{n} {k}")).collect();
        apart.push(format!(
            "{} not measured ({}; see Problems)",
            count(a.problems.len(), "case", "cases"),
            each.join(", ")
        ));
    }
    // Repeats across runs are the runs above, not something set apart.
    if a.selection.duplicates > 0 && runs.len() == 1 {
        apart.push(format!(
            "{} measured twice (the newest kept)",
            count(a.selection.duplicates, "case", "cases")
        ));
    }
    if a.selection.filtered_out > 0 {
        apart.push(format!(
            "{} left out by --only",
            count(a.selection.filtered_out, "case", "cases")
        ));
    }
    parts.push(if apart.is_empty() {
        "nothing set apart".to_string()
    } else {
        format!("set apart: {}", apart.join("; "))
    });
    let mut s = parts.join("; ");
    s.push('.');
    s
}
