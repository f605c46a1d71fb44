//! Network ceilings per launch: each host's leader records its InfiniBand/RoCE ports and
//! Ethernet links (sysfs), the host's `net.link` bound and the ports' error counters at the
//! launch's start; after the last case the leaders read the counters again and rank 0 records
//! the values and a warning for each counter that grew.

use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::results::ceilings::{CeilingWarning, CeilingWarningKind, ErrorCounter, HostCeilings};
use crate::results::schema::Provenance;
use crate::topology::ceilings::network::{self, CounterReading, Probe};

/// At the launch's start, on a host's leader: the ports, the host's link, their warnings (not
/// ACTIVE, below the expected rate) and the counters' first snapshot.
pub(super) fn at_start(probe: &Probe, h: &mut HostCeilings) {
    let n = network::read(&probe.sysfs_root, &probe.expect);
    h.ceilings.extend(n.ceilings);
    h.ceilings.push(n.link);
    h.warnings.extend(n.warnings);
    let (readings, problems) = network::counters(&probe.sysfs_root);
    h.counters = readings
        .into_iter()
        .map(|r| ErrorCounter {
            device: r.device,
            port: r.port,
            counter: r.counter,
            before: r.value,
            after: None,
        })
        .collect();
    h.warnings.extend(problems.into_iter().map(unreadable));
}

fn unreadable(problem: String) -> CeilingWarning {
    CeilingWarning {
        kind: CeilingWarningKind::Other,
        subject: "error counters".into(),
        message: format!("{problem}: its growth over the launch cannot be told"),
    }
}

/// After the last case, on every rank (collective; rank 0 passes the provenance): the leaders
/// of hosts with counters read them again; rank 0 records the values in its hosts' ceilings
/// and returns the warnings it added (counters that grew, or were reset) as `host: port:
/// message` lines.
pub(super) fn at_end(
    comm: &MpiComm,
    probe: &Probe,
    provenance: Option<&mut Provenance>,
) -> Vec<String> {
    let mut readers = match &provenance {
        Some(p) if comm.is_root() => {
            let ranks: Vec<u32> = p
                .ceilings
                .iter()
                .filter(|h| !h.counters.is_empty())
                .map(|h| h.rank)
                .collect();
            serde_json::to_vec(&ranks).expect("ranks serialise")
        }
        _ => Vec::new(),
    };
    comm.broadcast_bytes(&mut readers);
    let readers: Vec<u32> = serde_json::from_slice(&readers).unwrap_or_default();
    // No host has an error counter (no InfiniBand, as on most test machines): nothing to read.
    if readers.is_empty() {
        return Vec::new();
    }
    let root = probe
        .sysfs_root_after
        .as_deref()
        .unwrap_or(&probe.sysfs_root);
    let mine = if readers.contains(&comm.rank()) {
        serde_json::to_vec(&network::counters(root)).expect("counters serialise")
    } else {
        Vec::new()
    };
    let all = comm.gather_bytes(&mine);
    let Some(p) = provenance.filter(|_| comm.is_root()) else {
        return Vec::new();
    };
    let mut added = Vec::new();
    for h in p.ceilings.iter_mut().filter(|h| !h.counters.is_empty()) {
        let Some(bytes) = all.get(h.rank as usize) else {
            continue;
        };
        let (after, problems): (Vec<CounterReading>, Vec<String>) =
            serde_json::from_slice(bytes).expect("counters from our own ranks");
        let w = record_end(h, &after, problems);
        added.extend(
            w.into_iter()
                .map(|x| format!("{}: {}: {}", h.host, x.subject, x.message)),
        );
    }
    added
}

/// Records the end snapshot in `h` (each counter's `after`) and adds a warning for each
/// counter that grew or was reset; returns the warnings added.
fn record_end(
    h: &mut HostCeilings,
    after: &[CounterReading],
    problems: Vec<String>,
) -> Vec<CeilingWarning> {
    let before: Vec<CounterReading> = h
        .counters
        .iter()
        .map(|c| CounterReading {
            device: c.device.clone(),
            port: c.port.clone(),
            counter: c.counter.clone(),
            value: c.before,
        })
        .collect();
    for c in &mut h.counters {
        c.after = after
            .iter()
            .find(|a| a.device == c.device && a.port == c.port && a.counter == c.counter)
            .map(|a| a.value);
    }
    let mut w = network::counter_growth(&before, after);
    w.extend(problems.into_iter().map(unreadable));
    h.warnings.extend(w.iter().cloned());
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ceilings")
            .join(rel)
    }

    fn empty_host() -> HostCeilings {
        HostCeilings {
            host: "n1".into(),
            rank: 0,
            cpus: "0".into(),
            seconds: 0.0,
            ceilings: Vec::new(),
            warnings: Vec::new(),
            counters: Vec::new(),
            measurement: None,
        }
    }

    #[test]
    fn start_and_end_record_the_ports_the_link_and_the_counters_growth() {
        let probe = Probe {
            sysfs_root: fixture("ib_hdr/before/sys"),
            ..Probe::default()
        };
        let mut h = empty_host();
        at_start(&probe, &mut h);
        assert!(h.ceilings.iter().any(|c| c.id == "net.ib.mlx5_0.1"));
        let link = h.ceilings.iter().find(|c| c.id == "net.link").unwrap();
        assert_eq!(link.value, Some(25.0));
        assert!(h.warnings.is_empty(), "{:?}", h.warnings);
        let sym = |h: &HostCeilings| {
            h.counters
                .iter()
                .find(|c| c.counter == "symbol_error")
                .cloned()
                .unwrap()
        };
        assert_eq!((sym(&h).before, sym(&h).after), (3, None));
        let (after, problems) = network::counters(&fixture("ib_hdr/after/sys"));
        let w = record_end(&mut h, &after, problems);
        assert_eq!((sym(&h).before, sym(&h).after), (3, Some(1027)));
        // every counter read at the start has its end value
        assert!(
            h.counters.iter().all(|c| c.after.is_some()),
            "{:?}",
            h.counters
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w
            .iter()
            .all(|x| x.kind == CeilingWarningKind::CountersGrew && x.subject == "mlx5_0 port 1"));
        assert_eq!(h.warnings, w);
    }
}
