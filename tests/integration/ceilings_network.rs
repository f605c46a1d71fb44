//! Network ceilings in a launch (real mpirun, 2 ranks): the host leader records its ports
//! from a sysfs tree (recorded fixtures, or this machine's own), the host's `net.link`, the
//! ports' error counters at the start and end, and warnings for a port down, a port below the
//! expected rate and counters that grew.

use crate::common;
use common::wire::{HostCeilings, ResultsFile};
use std::path::Path;

fn fixture(rel: &str) -> String {
    format!(
        "{}/tests/fixtures/ceilings/{rel}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A tiny allreduce and GEMM on 2 ranks with EXTRA options; its results.
fn tiny_run(dir: &Path, extra: &[&str]) -> ResultsFile {
    crate::ceilings::tiny_run(2, dir, extra)
}

/// The one host's ceilings (2 ranks on one host: one leader).
fn the_host(r: &ResultsFile) -> &HostCeilings {
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert_eq!(p.ceilings.len(), 1, "{:?}", p.ceilings);
    &p.ceilings[0]
}

fn ceiling<'a>(h: &'a HostCeilings, id: &str) -> &'a common::wire::Ceiling {
    h.ceilings
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("{id} missing: {:?}", h.ceilings))
}

#[test]
fn an_hdr_port_is_recorded_from_sysfs_and_its_growing_counters_warned_of() {
    let dir = common::tmpdir("netceil-hdr");
    let (before, after) = (fixture("ib_hdr/before/sys"), fixture("ib_hdr/after/sys"));
    let r = tiny_run(
        &dir,
        &["--sysfs-root", &before, "--sysfs-root-after", &after],
    );
    let h = the_host(&r);
    let port = ceiling(h, "net.ib.mlx5_0.1");
    // HDR 4X: 200 Gb/s = 25 GB/s per direction, read from the port's rate file
    assert_eq!(
        (port.source.as_str(), port.unit.as_str(), port.value),
        ("sysfs", "gbps", Some(25.0))
    );
    assert!(
        port.detail.contains("mlx5_0/ports/1/rate") && port.detail.contains("4X HDR"),
        "{port:?}"
    );
    // the host's link is its one active port (eth0's 100 Gb/s Ethernet is not the path)
    let link = ceiling(h, "net.link");
    assert_eq!((link.source.as_str(), link.value), ("sysfs", Some(25.0)));
    // the counters before and after, as a reader sees them
    let sym = h
        .counters
        .iter()
        .find(|c| c.device == "mlx5_0" && c.port == "1" && c.counter == "symbol_error")
        .unwrap_or_else(|| panic!("{:?}", h.counters));
    assert_eq!((sym.before, sym.after), (3, Some(1027)));
    let grew: Vec<_> = h
        .warnings
        .iter()
        .filter(|w| w.kind == "counters_grew")
        .collect();
    assert_eq!(grew.len(), 2, "{:?}", h.warnings);
    assert!(
        grew.iter().any(|w| w.subject == "mlx5_0 port 1"
            && w.message.contains("symbol_error")
            && w.message.contains("3 → 1027")),
        "{grew:?}"
    );
    assert!(
        grew.iter()
            .any(|w| w.message.contains("link_downed") && w.message.contains("0 → 1")),
        "{grew:?}"
    );
    // a healthy HDR port: nothing else to warn of
    assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
}

#[test]
fn an_ndr_node_records_its_port_down_and_its_port_negotiated_down_and_unchanged_counters() {
    let dir = common::tmpdir("netceil-ndr");
    let root = fixture("ib_ndr/before/sys");
    let r = tiny_run(&dir, &["--sysfs-root", &root, "--ib-rate-gbps", "400"]);
    let h = the_host(&r);
    let kinds: Vec<(&str, &str)> = h
        .warnings
        .iter()
        .map(|w| (w.kind.as_str(), w.subject.as_str()))
        .collect();
    assert!(kinds.contains(&("link_down", "mlx5_2 port 1")), "{kinds:?}");
    assert!(
        kinds.contains(&("negotiated_down", "mlx5_1 port 1")),
        "{kinds:?}"
    );
    let down = h
        .warnings
        .iter()
        .find(|w| w.kind == "negotiated_down")
        .unwrap();
    assert!(
        down.message.contains("200 Gb/sec (4X HDR)") && down.message.contains("400 Gb/s"),
        "{down:?}"
    );
    // the end snapshot read the same tree: every counter has its end value, none grew
    assert!(!h.counters.is_empty());
    assert!(
        h.counters.iter().all(|c| c.after == Some(c.before)),
        "{:?}",
        h.counters
    );
    assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
    // the link: the two ACTIVE ports, 50 + 25 GB/s
    assert_eq!(ceiling(h, "net.link").value, Some(75.0));
}

#[test]
fn a_run_on_this_machines_sysfs_records_its_link_or_why_it_is_unknown() {
    let dir = common::tmpdir("netceil-real");
    let r = tiny_run(&dir, &[]);
    let h = the_host(&r);
    let net: Vec<_> = h
        .ceilings
        .iter()
        .filter(|c| c.id.starts_with("net."))
        .collect();
    // whatever this machine has: a rate from sysfs, or unknown with its reason
    assert!(net.iter().any(|c| c.id == "net.link"), "{net:?}");
    for c in net {
        match c.value {
            Some(v) => assert!(
                c.source == "sysfs" && v > 0.0 && !c.detail.is_empty(),
                "{c:?}"
            ),
            None => assert!(c.source == "unknown" && !c.detail.is_empty(), "{c:?}"),
        }
    }
    // each error counter read at the start was read again at the end
    assert!(
        h.counters.iter().all(|c| c.after.is_some()),
        "{:?}",
        h.counters
    );
}

#[test]
fn no_ceilings_records_no_network_and_a_bad_expected_rate_is_refused() {
    let dir = common::tmpdir("netceil-none");
    let (before, after) = (fixture("ib_hdr/before/sys"), fixture("ib_hdr/after/sys"));
    let r = tiny_run(
        &dir,
        &[
            "--no-ceilings",
            "--sysfs-root",
            &before,
            "--sysfs-root-after",
            &after,
        ],
    );
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert!(p.ceilings.is_empty(), "{:?}", p.ceilings);
    assert!(p.ceilings_skipped.is_some());
    // refused while parsing the options: nothing written
    let out = dir.join("bad-rate");
    let ran = common::solo(&common::run_q(&out, &["--ib-rate-gbps", "0"]));
    ran.assert_code(2);
    assert!(
        ran.stderr.contains("--ib-rate-gbps") && ran.stderr.contains("positive number"),
        "{}",
        ran.stderr
    );
    assert!(!out.exists());
}
