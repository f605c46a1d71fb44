//! The end of a local sweep: the host cache's ceilings re-checked now that the launches are
//! done (the larger reading kept, so the next sweep starts from it), and the line that closes
//! the sweep, counting the launches' warnings.

use crate::results::io::RESULTS_FILE;
use crate::results::schema::ResultsFile;
use crate::topology::ceilings::{cache, measured_in_rounds, RoundsPlan};
use std::collections::BTreeMap;
use std::path::Path;

/// Measures each of this host's cache entries in `dir` again (3 rounds, or what the entry
/// lacks of the full count) outside any launch and its deadline, and keeps the larger
/// readings; says which rose.
/// The launches' results keep the reading they used: a rise says their fractions read high.
pub(super) fn recheck_ceilings(dir: &Path, quiet: bool) {
    if !dir.is_dir() {
        return;
    }
    let host = crate::topology::hostname();
    let done = cache::recheck_dir(dir, &host, crate::results::now_unix_s(), |cpus, e| {
        // at least 3 rounds (1 with STREAM), and what the entry lacks of the full count: a
        // launch's budget may have cut its measurement short
        let plan = RoundsPlan {
            rounds: cache::FULL_ROUNDS.saturating_sub(e.rounds).max(3),
            stream_rounds: cache::FULL_STREAM_ROUNDS
                .saturating_sub(e.stream_rounds())
                .max(1),
            copy_gbps: e.copy_gbps(),
            ..RoundsPlan::default()
        };
        measured_in_rounds(cpus, &plan)
    });
    if quiet {
        return;
    }
    for (file, raised) in done {
        if raised.is_empty() {
            eprintln!(
                "# ceilings re-checked at the end: none rose ({})",
                file.display()
            );
            continue;
        }
        let list: Vec<String> = raised
            .iter()
            .map(|(id, a, b)| format!("{id} {a:.3} → {b:.3} (+{:.0} %)", (b / a - 1.0) * 100.0))
            .collect();
        eprintln!(
            "# ceilings re-checked at the end: {} rose, kept for the next sweep ({}); this sweep's fractions of peak read up to that much high: {}",
            crate::units::count(raised.len(), "ceiling", "ceilings"),
            file.display(),
            list.join(", ")
        );
    }
}

/// The launches' warnings: each distinct message (the provenance's, and its hosts' hardware
/// warnings) with the number of launches that carried it.
pub(crate) fn launch_warnings(merged: &ResultsFile) -> BTreeMap<String, usize> {
    let mut out: BTreeMap<String, usize> = BTreeMap::new();
    for l in &merged.launches {
        let Some(p) = &l.provenance else { continue };
        let mut mine: Vec<String> = p.warnings.clone();
        for h in &p.ceilings {
            mine.extend(
                h.warnings
                    .iter()
                    .map(|w| format!("{}: {}", w.subject, w.message)),
            );
        }
        mine.sort();
        mine.dedup();
        for w in mine {
            *out.entry(w).or_default() += 1;
        }
    }
    out
}

/// The line that closes a sweep: the next command, and the warnings: the launches' own (a GEMM
/// kernel older than the CPU, a link down, ...), counted, and the launches whose measurements
/// may not represent their set-up, which the report sets apart.
pub(super) fn closing_line(
    out: &Path,
    merged: &ResultsFile,
    interrupted: bool,
    links_failed: usize,
) {
    let results = out.join(RESULTS_FILE);
    let needs_rerun = merged.cases.iter().any(|c| c.status.needs_rerun()) || links_failed > 0;
    let next = if interrupted || needs_rerun {
        format!(
            "scalebench sweep {} --out {} --resume (runs only what is missing or failed)",
            out.join("spec.toml").display(),
            out.display()
        )
    } else {
        format!("scalebench report {}", results.display())
    };
    let mut parts = Vec::new();
    if links_failed > 0 {
        parts.push(format!(
            "{} wrote no links.json",
            crate::units::count(links_failed, "links step", "links steps")
        ));
    }
    let carried = launch_warnings(merged);
    if let Some((first, n)) = carried.iter().max_by_key(|(_, n)| **n) {
        let launches = merged
            .launches
            .iter()
            .filter(|l| {
                l.provenance.as_ref().is_some_and(|p| {
                    !p.warnings.is_empty() || p.ceilings.iter().any(|h| !h.warnings.is_empty())
                })
            })
            .count();
        parts.push(format!(
            "{} of {} carried {} (most often, in {n}: {})",
            crate::units::count(launches, "launch", "launches"),
            merged.launches.len(),
            crate::units::count(carried.len(), "distinct warning", "distinct warnings"),
            crate::units::shorten(first)
        ));
    }
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for u in merged.launches.iter().flat_map(|l| &l.unrepresentative) {
        *kinds.entry(u.kind.as_str()).or_default() += 1;
    }
    if !kinds.is_empty() {
        let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        parts.push(format!(
            "{} may not represent their set-up ({}; the report sets them apart)",
            crate::units::count(kinds.values().sum::<usize>(), "launch", "launches"),
            list.join(", ")
        ));
    }
    let warnings = if parts.is_empty() {
        "no warnings".to_string()
    } else {
        format!("warnings: {}", parts.join("; "))
    };
    eprintln!("# done: {warnings}; next: {next}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ceilings::{CeilingWarning, CeilingWarningKind, HostCeilings};

    #[test]
    fn the_launches_warnings_are_counted_once_per_launch() {
        let mut r: ResultsFile =
            serde_json::from_str(include_str!("../../tests/golden/results-v1.json")).unwrap();
        assert!(!r.launches.is_empty());
        let kernel = "GEMM runs OpenBLAS's Prescott kernels, which use SSE; this CPU runs AVX-512: chosen by the library itself; fix: set OPENBLAS_CORETYPE=Cooperlake".to_string();
        let template = r.launches[0].clone();
        r.launches.clear();
        for i in 0..3 {
            let mut l = template.clone();
            let p = l.provenance.as_mut().unwrap();
            // the same warning twice in one launch counts once for it
            p.warnings = vec![kernel.clone(), kernel.clone()];
            if i == 2 {
                p.ceilings = vec![HostCeilings {
                    host: "n".into(),
                    rank: 0,
                    cpus: "0".into(),
                    seconds: 0.0,
                    ceilings: Vec::new(),
                    warnings: vec![CeilingWarning {
                        kind: CeilingWarningKind::LinkDown,
                        subject: "mlx5_0 port 1".into(),
                        message: "DOWN".into(),
                    }],
                    counters: Vec::new(),
                    measurement: None,
                }];
            }
            r.launches.push(l);
        }
        let w = launch_warnings(&r);
        assert_eq!(w.get(&kernel), Some(&3));
        assert_eq!(w.get("mlx5_0 port 1: DOWN"), Some(&1));
        assert_eq!(w.len(), 2);
    }
}
