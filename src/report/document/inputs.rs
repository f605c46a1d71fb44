//! Appendix A: the inputs, their launches, the software and hardware stacks, and every rank.

use crate::present::doc::Doc;
use crate::present::table::{Cell, Table};
use crate::report::analyze::Analysis;
use std::collections::BTreeMap;

fn utc(unix_s: f64) -> String {
    let s = crate::results::utc_stamp(unix_s);
    // 20261122T004753Z → 2026-11-22 00:47:53 UTC
    if s.len() == 16 {
        format!(
            "{}-{}-{} {}:{}:{} UTC",
            &s[0..4],
            &s[4..6],
            &s[6..8],
            &s[9..11],
            &s[11..13],
            &s[13..15]
        )
    } else {
        s
    }
}

/// The software and hardware of a launch, as the set-up table groups them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Stack {
    cpu: String,
    mpi: String,
    backend: String,
    timer: String,
}

pub(super) fn inputs(doc: &mut Doc, a: &Analysis<'_>) {
    doc.heading(2, "Appendix A: inputs and set-up");
    input_files(doc, a);
    let stacks = launches(doc, a);
    software(doc, stacks);
    ranks(doc, a);
}

/// The input files: run id, start, generator, labels.
fn input_files(doc: &mut Doc, a: &Analysis<'_>) {
    let mut t = Table::new(&[
        "#",
        "file",
        "run id",
        "started",
        "generator",
        "cases",
        "emulated nodes",
        "labels",
    ]);
    for (i, s) in a.sources.iter().enumerate() {
        let f = &s.file;
        t.push(vec![
            Cell::UInt(i as u64 + 1),
            Cell::text(s.path.display().to_string()),
            Cell::text(f.run.run_id.clone()),
            Cell::text(utc(f.run.started_unix_s)),
            Cell::text(format!(
                "{} {}{}",
                f.generator.name,
                f.generator.version,
                f.generator
                    .git_sha
                    .as_deref()
                    .map_or(String::new(), |g| format!(" ({g})"))
            )),
            Cell::UInt(f.cases.len() as u64),
            Cell::Bool(f.run.emulated_nodes),
            Cell::text(
                f.run
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ]);
    }
    doc.table(t, "inputs", None);
}

/// Every launch of every input; returns the distinct software and hardware stacks seen, with
/// how many launches ran on each and their timer resolution range.
fn launches(doc: &mut Doc, a: &Analysis<'_>) -> BTreeMap<Stack, (usize, f64, f64)> {
    let mut t = Table::new(&[
        "input", "launch", "set-up", "status", "launcher", "ranks", "devices", "hosts", "warnings",
    ]);
    // Software and hardware, once per distinct combination.
    let mut stacks: BTreeMap<Stack, (usize, f64, f64)> = BTreeMap::new();
    for (i, s) in a.sources.iter().enumerate() {
        for l in &s.file.launches {
            let p = l.provenance.as_ref();
            if let Some(p) = p {
                let mut cpus: Vec<String> = p
                    .hosts
                    .iter()
                    .map(|h| format!("{} ({} CPUs)", h.cpu_model, h.logical_cpus))
                    .collect();
                cpus.dedup();
                let key = Stack {
                    cpu: cpus.join("; "),
                    mpi: p.mpi_library.clone().unwrap_or_default(),
                    backend: p.backend.detail.clone(),
                    timer: p.timer.source.clone(),
                };
                let slot = stacks.entry(key).or_insert((0, f64::INFINITY, 0.0));
                slot.0 += 1;
                slot.1 = slot.1.min(p.timer.resolution_s);
                slot.2 = slot.2.max(p.timer.resolution_s);
            }
            t.push(vec![
                Cell::UInt(i as u64 + 1),
                Cell::text(l.launch_id.clone()),
                Cell::text(l.shape.label()),
                Cell::text(format!("{:?}", l.status).to_lowercase()),
                Cell::text(l.launcher.clone()),
                p.map_or(Cell::Empty, |p| Cell::UInt(u64::from(p.world_size))),
                p.map_or(Cell::Empty, |p| Cell::UInt(u64::from(p.devices))),
                p.map_or(Cell::Empty, |p| {
                    Cell::text(
                        p.hosts
                            .iter()
                            .map(|h| h.host.clone())
                            .collect::<Vec<_>>()
                            .join(", "),
                    )
                }),
                p.map_or(Cell::Empty, |p| Cell::text(p.warnings.join("; "))),
            ]);
        }
    }
    doc.table(t, "launches", None);
    stacks
}

/// Software and hardware, once per distinct combination.
fn software(doc: &mut Doc, stacks: BTreeMap<Stack, (usize, f64, f64)>) {
    let mut t = Table::new(&[
        "launches",
        "CPU",
        "MPI library",
        "backend",
        "timer",
        "timer resolution",
    ]);
    for (st, (n, rlo, rhi)) in stacks {
        t.push(vec![
            Cell::UInt(n as u64),
            Cell::text(st.cpu),
            Cell::text(st.mpi),
            Cell::text(st.backend),
            Cell::text(st.timer),
            Cell::text(if (rhi - rlo).abs() <= f64::EPSILON * rhi {
                crate::units::format_seconds(rlo)
            } else {
                format!(
                    "{} – {}",
                    crate::units::format_seconds(rlo),
                    crate::units::format_seconds(rhi)
                )
            }),
        ]);
    }
    doc.table(t, "software", None);
}

/// Every rank: host, node, CPU affinity, devices.
fn ranks(doc: &mut Doc, a: &Analysis<'_>) {
    let mut t = Table::new(&["input", "launch", "rank", "host", "node", "cpus", "devices"]);
    for (i, s) in a.sources.iter().enumerate() {
        for l in &s.file.launches {
            for r in l.provenance.iter().flat_map(|p| &p.ranks) {
                t.push(vec![
                    Cell::UInt(i as u64 + 1),
                    Cell::text(l.launch_id.clone()),
                    Cell::UInt(u64::from(r.rank)),
                    Cell::text(r.host.clone()),
                    Cell::text(r.node_name.clone()),
                    Cell::text(r.cpus.clone()),
                    Cell::text(
                        r.devices
                            .iter()
                            .map(|d| format!("{} [{}] cpus {}", d.index, d.name, d.cpus))
                            .collect::<Vec<_>>()
                            .join("; "),
                    ),
                ]);
            }
        }
    }
    doc.table(
        t,
        "ranks",
        Some("Every rank: host, node, CPU affinity, devices".into()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_is_readable() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
    }
}
