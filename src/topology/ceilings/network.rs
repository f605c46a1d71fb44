//! Network ceilings from sysfs: InfiniBand/RoCE port rates and states
//! (`<root>/class/infiniband/<dev>/ports/<n>/`), Ethernet speeds (`<root>/class/net/<if>/speed`),
//! and the ports' error counters, read as snapshots so a launch can warn when one grew.
//!
//! The sysfs root is a parameter (normally `/sys`) so tests read recorded trees.
//! File formats: the kernel's `Documentation/ABI/stable/sysfs-class-infiniband` and
//! `Documentation/ABI/testing/sysfs-class-net`.

use crate::results::ceilings::{
    Ceiling, CeilingSource, CeilingUnit, CeilingWarning, CeilingWarningKind,
};
use std::path::{Path, PathBuf};

/// The error counters read before and after a launch. They are narrow and saturate, so only
/// their growth around a run means anything (notes/ceilings.md).
pub const ERROR_COUNTERS: [&str; 7] = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
];

/// What was found: ceilings (one per port or interface), the host's link ceiling that bounds
/// figures across hosts (see [`host_link`]) and warnings with their cause.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkCeilings {
    pub ceilings: Vec<Ceiling>,
    /// `net.link`: the host's network ceiling, or unknown with why.
    pub link: Ceiling,
    /// What one pair of processes on two hosts can count on, GB/s per direction: the slowest
    /// ACTIVE InfiniBand/RoCE port with a rate (a rail). NCCL and UCX put one peer's traffic on
    /// the NIC nearest it (UCX stripes a large message over at most two), so on a host with
    /// 4 or 8 rails one pair reaches a quarter or an eighth of `link`, healthy; whichever rail
    /// it is given, it can reach the slowest. Without InfiniBand: `link` (one Ethernet
    /// interface already). `None` where no port gives a rate.
    pub rail_gbps: Option<f64>,
    pub warnings: Vec<CeilingWarning>,
}

/// The id of a host's network ceiling, the bound of a figure across hosts.
pub const LINK_ID: &str = "net.link";

/// Where a launch reads the network from (all of it test-only except the expected rate).
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The sysfs mount (`/sys`; tests give a recorded tree).
    pub sysfs_root: PathBuf,
    /// Test-only: the tree the launch's end snapshot of the error counters is read from, so a
    /// test makes counters grow deterministically (`None`: `sysfs_root` again).
    pub sysfs_root_after: Option<PathBuf>,
    pub expect: Expect,
}

impl Default for Probe {
    fn default() -> Self {
        Probe {
            sysfs_root: PathBuf::from("/sys"),
            sysfs_root_after: None,
            expect: Expect::default(),
        }
    }
}

/// What the caller expects of the fabric, where it knows it (sysfs gives no port maximum).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expect {
    /// The InfiniBand rate every active port should run at, Gb/s (e.g. 400 for NDR 4X).
    pub ib_rate_gbps: Option<f64>,
}

/// Sorted entry names of a directory; empty when it does not exist.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    // numeric order for port numbers, name order otherwise
    v.sort_by(|a, b| match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    });
    v
}

fn read_trim(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("cannot read {}: {e}", p.display()))
}

/// The rate in Gb/s from sysfs' `rate` text, e.g. `200 Gb/sec (4X HDR)` → 200.
pub fn parse_ib_rate(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let v: f64 = it.next()?.parse().ok()?;
    (it.next()? == "Gb/sec" && v.is_finite() && v > 0.0).then_some(v)
}

/// Reads every InfiniBand/RoCE port and network interface under `root` (a sysfs mount).
pub fn read(root: &Path, expect: &Expect) -> NetworkCeilings {
    let mut ceilings = Vec::new();
    let mut warnings = Vec::new();
    let mut active_ib = Vec::new();
    let ib = root.join("class/infiniband");
    for dev in entries(&ib) {
        let ports = ib.join(&dev).join("ports");
        for port in entries(&ports) {
            let c = ib_port(&ports.join(&port), &dev, &port, expect, &mut warnings);
            if c.1 {
                active_ib.push(c.0.clone());
            }
            ceilings.push(c.0);
        }
    }
    let mut eth = Vec::new();
    let net = root.join("class/net");
    for ifname in entries(&net) {
        // virtual interfaces (lo, bridges, veth, ifb) have no `device`: no link to bound
        if net.join(&ifname).join("device").exists() {
            eth.push(ethernet(&net.join(&ifname), &ifname));
        }
    }
    let link = host_link(root, &active_ib, &ceilings, &eth);
    let rail_gbps = active_ib
        .iter()
        .filter_map(|c| c.value)
        .reduce(f64::min)
        .or(link.value);
    ceilings.extend(eth);
    NetworkCeilings {
        ceilings,
        link,
        rail_gbps,
        warnings,
    }
}

/// The host's network ceiling (`net.link`), per direction: the sum of its ACTIVE
/// InfiniBand/RoCE ports' rates where it has any (NCCL, UCX and Open MPI stripe a job's
/// traffic over every active HCA port, so together they bound what the host can send);
/// otherwise its fastest Ethernet link with a reported speed (MPI's and NCCL's socket
/// transports use one interface by default, and a host's other NICs are usually slower
/// management ports; a figure above it says the traffic was striped). Unknown, with every
/// port's reason, when no port gives a rate.
fn host_link(root: &Path, active_ib: &[Ceiling], ib: &[Ceiling], eth: &[Ceiling]) -> Ceiling {
    let what = "the host's network link, per direction".to_string();
    let rated: Vec<&Ceiling> = active_ib.iter().filter(|c| c.value.is_some()).collect();
    if !rated.is_empty() {
        let sum: f64 = rated.iter().filter_map(|c| c.value).sum();
        let parts: Vec<String> = rated
            .iter()
            .map(|c| {
                format!(
                    "{} {} GB/s",
                    c.id,
                    crate::units::echo_f64(c.value.unwrap_or(0.0))
                )
            })
            .collect();
        return Ceiling {
            id: LINK_ID.into(),
            what,
            unit: CeilingUnit::Gbps,
            value: Some(sum),
            source: CeilingSource::Sysfs,
            detail: format!(
                "the sum of the {} ({}; from each port's rate file): traffic is striped over \
                 every active HCA port",
                crate::units::count(
                    rated.len(),
                    "active InfiniBand/RoCE port",
                    "active InfiniBand/RoCE ports"
                ),
                parts.join(" + ")
            ),
        };
    }
    if let Some(best) = eth
        .iter()
        .filter(|c| c.value.is_some())
        .max_by(|a, b| a.value.unwrap_or(0.0).total_cmp(&b.value.unwrap_or(0.0)))
    {
        return Ceiling {
            id: LINK_ID.into(),
            what,
            unit: CeilingUnit::Gbps,
            value: best.value,
            source: CeilingSource::Sysfs,
            detail: format!(
                "{}, the fastest Ethernet link with a reported speed and no active \
                 InfiniBand/RoCE port ({})",
                best.id, best.detail
            ),
        };
    }
    let mut why: Vec<String> = ib
        .iter()
        .filter(|c| !active_ib.iter().any(|a| a.id == c.id))
        .map(|c| format!("{}: not ACTIVE", c.id))
        .collect();
    why.extend(
        active_ib
            .iter()
            .chain(eth)
            .filter(|c| c.value.is_none())
            .map(|c| format!("{}: {}", c.id, c.detail)),
    );
    unknown_gbps(
        LINK_ID.into(),
        what,
        if why.is_empty() {
            format!(
                "no InfiniBand/RoCE port or physical network interface under {}",
                root.display()
            )
        } else {
            format!("no port reports a usable rate: {}", why.join("; "))
        },
    )
}

/// One port's ceiling and whether it is ACTIVE; its warnings go to `warnings`.
fn ib_port(
    dir: &Path,
    dev: &str,
    port: &str,
    expect: &Expect,
    warnings: &mut Vec<CeilingWarning>,
) -> (Ceiling, bool) {
    let subject = format!("{dev} port {port}");
    let warn = |kind, message: String| CeilingWarning {
        kind,
        subject: subject.clone(),
        message,
    };
    let id = format!("net.ib.{dev}.{port}");
    let layer = read_trim(&dir.join("link_layer")).unwrap_or_else(|_| "InfiniBand".into());
    let what = format!("{dev} port {port} ({layer}), per direction");
    let state = read_trim(&dir.join("state"));
    let phys = read_trim(&dir.join("phys_state")).unwrap_or_else(|e| e);
    let rate_file = dir.join("rate");
    let rate = read_trim(&rate_file);
    let active = matches!(&state, Ok(s) if s.ends_with("ACTIVE"));
    match &state {
        Ok(_) if active => {}
        Ok(s) => warnings.push(warn(
            CeilingWarningKind::LinkDown,
            format!(
                "state is \"{s}\" (phys_state \"{phys}\"), not ACTIVE: the port carries no \
                 traffic; check its cable and the subnet manager"
            ),
        )),
        Err(e) => warnings.push(warn(
            CeilingWarningKind::Other,
            format!("link state unknown ({e})"),
        )),
    }
    let c = match rate.as_deref().map(|t| (t, parse_ib_rate(t))) {
        Ok((t, Some(gbps))) => {
            if let Some(want) = expect.ib_rate_gbps.filter(|w| active && gbps < *w) {
                warnings.push(warn(
                    CeilingWarningKind::NegotiatedDown,
                    format!(
                        "running at {t}, below the expected {} Gb/s: negotiated down (cable, \
                         transceiver or the switch port's speed)",
                        crate::units::echo_f64(want)
                    ),
                ));
            }
            let no_max = if expect.ib_rate_gbps.is_none() {
                "; sysfs gives no maximum rate for a port, so a negotiated-down rate cannot be \
                 told from it alone"
            } else {
                ""
            };
            Ceiling {
                id,
                what,
                unit: CeilingUnit::Gbps,
                value: Some(gbps / 8.0),
                source: CeilingSource::Sysfs,
                detail: format!(
                    "{}: \"{t}\" = {} Gb/s / 8 bits per byte, line rate{no_max}",
                    rate_file.display(),
                    crate::units::echo_f64(gbps)
                ),
            }
        }
        Ok((t, None)) => unknown_gbps(
            id,
            what,
            format!(
                "{}: \"{t}\" is not \"<number> Gb/sec (...)\"",
                rate_file.display()
            ),
        ),
        Err(e) => unknown_gbps(id, what, e.clone()),
    };
    (c, active)
}

fn ethernet(dir: &Path, ifname: &str) -> Ceiling {
    let id = format!("net.eth.{ifname}");
    let what = format!("{ifname} (Ethernet), per direction");
    let f = dir.join("speed");
    match read_trim(&f) {
        Ok(t) => match t.parse::<i64>() {
            Ok(mbps) if mbps > 0 => Ceiling {
                id,
                what,
                unit: CeilingUnit::Gbps,
                value: Some(mbps as f64 / 8e3),
                source: CeilingSource::Sysfs,
                detail: format!("{}: {mbps} Mb/s / 8 bits per byte, line rate", f.display()),
            },
            _ => unknown_gbps(
                id,
                what,
                format!(
                    "{}: \"{t}\": the driver reports no speed (virtual NICs such as virtio, and \
                     links that are down, report -1)",
                    f.display()
                ),
            ),
        },
        // reading `speed` of a down or virtual link fails with EINVAL
        Err(e) => unknown_gbps(id, what, format!("{e} (link down, or no speed reported)")),
    }
}

fn unknown_gbps(id: String, what: String, why: String) -> Ceiling {
    Ceiling {
        id,
        what,
        unit: CeilingUnit::Gbps,
        value: None,
        source: CeilingSource::Unknown,
        detail: why,
    }
}

/// One error counter's value at one moment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CounterReading {
    pub device: String,
    pub port: String,
    pub counter: String,
    pub value: u64,
}

/// The error counters of every InfiniBand/RoCE port under `root`, and the files that could
/// not be read (a counter some HCAs do not offer is simply absent, not an error).
pub fn counters(root: &Path) -> (Vec<CounterReading>, Vec<String>) {
    let mut v = Vec::new();
    let mut problems = Vec::new();
    let ib = root.join("class/infiniband");
    for dev in entries(&ib) {
        let ports = ib.join(&dev).join("ports");
        for port in entries(&ports) {
            for counter in ERROR_COUNTERS {
                let f: PathBuf = ports.join(&port).join("counters").join(counter);
                if !f.exists() {
                    continue;
                }
                match read_trim(&f).and_then(|t| {
                    t.parse::<u64>()
                        .map_err(|_| format!("{}: \"{t}\" is not a count", f.display()))
                }) {
                    Ok(value) => v.push(CounterReading {
                        device: dev.clone(),
                        port: port.clone(),
                        counter: counter.to_string(),
                        value,
                    }),
                    Err(e) => problems.push(e),
                }
            }
        }
    }
    (v, problems)
}

/// A warning for each counter that grew between two snapshots, naming device, port, counter
/// and the values before → after.
pub fn counter_growth(before: &[CounterReading], after: &[CounterReading]) -> Vec<CeilingWarning> {
    let mut w = Vec::new();
    for a in after {
        let Some(b) = before
            .iter()
            .find(|b| b.device == a.device && b.port == a.port && b.counter == a.counter)
        else {
            continue;
        };
        let subject = format!("{} port {}", a.device, a.port);
        if a.value > b.value {
            w.push(CeilingWarning {
                kind: CeilingWarningKind::CountersGrew,
                subject,
                message: format!(
                    "error counter {} grew during the run, {} → {}: the link is faulty or was \
                     reset; figures through it may be low",
                    a.counter, b.value, a.value
                ),
            });
        } else if a.value < b.value {
            // the counters only grow; a drop means someone reset them (perfquery -R)
            w.push(CeilingWarning {
                kind: CeilingWarningKind::Other,
                subject,
                message: format!(
                    "error counter {} dropped during the run, {} → {}: it was reset, so growth \
                     in between cannot be told",
                    a.counter, b.value, a.value
                ),
            });
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ceilings")
            .join(rel)
    }

    fn find<'a>(n: &'a NetworkCeilings, id: &str) -> &'a Ceiling {
        n.ceilings
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id} missing: {:?}", n.ceilings))
    }

    #[test]
    fn rate_text_is_parsed_in_gbits() {
        assert_eq!(parse_ib_rate("200 Gb/sec (4X HDR)"), Some(200.0));
        assert_eq!(parse_ib_rate("400 Gb/sec (4X NDR)"), Some(400.0));
        assert_eq!(parse_ib_rate("2.5 Gb/sec (1X SDR)"), Some(2.5));
        assert_eq!(parse_ib_rate("fast"), None);
        assert_eq!(parse_ib_rate("200 Mb/sec"), None);
        assert_eq!(parse_ib_rate(""), None);
    }

    #[test]
    fn hdr_port_is_25_gbytes_per_second_from_sysfs() {
        let n = read(&fixture("ib_hdr/before/sys"), &Expect::default());
        let c = find(&n, "net.ib.mlx5_0.1");
        // HDR 4X: 200 Gb/s line rate = 25 GB/s per direction
        assert_eq!(c.value, Some(25.0));
        assert_eq!(c.source, CeilingSource::Sysfs);
        assert!(c.detail.contains("4X HDR") && c.detail.contains("no maximum"));
        assert!(n.warnings.is_empty(), "{:?}", n.warnings);
    }

    #[test]
    fn ndr_node_with_a_port_at_hdr_and_a_port_down_warns_of_both() {
        let n = read(
            &fixture("ib_ndr/before/sys"),
            &Expect {
                ib_rate_gbps: Some(400.0),
            },
        );
        // NDR 4X: 400 Gb/s = 50 GB/s
        assert_eq!(find(&n, "net.ib.mlx5_0.1").value, Some(50.0));
        assert_eq!(find(&n, "net.ib.mlx5_1.1").value, Some(25.0));
        assert_eq!(n.warnings.len(), 2, "{:?}", n.warnings);
        assert!(n.warnings.iter().any(|w| w.subject == "mlx5_1 port 1"
            && w.kind == CeilingWarningKind::NegotiatedDown
            && w.message.contains("200 Gb/sec (4X HDR)")
            && w.message.contains("negotiated down")));
        assert!(n.warnings.iter().any(|w| w.subject == "mlx5_2 port 1"
            && w.kind == CeilingWarningKind::LinkDown
            && w.message.contains("1: DOWN")
            && w.message.contains("not ACTIVE")));
        // the down port is below 400 too, but its state is the cause: one warning for it
        assert!(!n
            .warnings
            .iter()
            .any(|w| w.subject.contains("mlx5_2") && w.message.contains("negotiated")));
        // the host's link: the two ACTIVE ports, 50 + 25 GB/s; the DOWN one adds nothing
        assert_eq!((n.link.id.as_str(), n.link.value), (LINK_ID, Some(75.0)));
        // one pair: the slower active rail, whichever it is put on
        assert_eq!(n.rail_gbps, Some(25.0));
        assert!(
            n.link.detail.contains("2 active") && !n.link.detail.contains("mlx5_2"),
            "{}",
            n.link.detail
        );
    }

    #[test]
    fn ethernet_speed_and_an_unreported_speed() {
        let n = read(&fixture("ib_hdr/before/sys"), &Expect::default());
        // 100000 Mb/s = 100 Gb/s = 12.5 GB/s
        assert_eq!(find(&n, "net.eth.eth0").value, Some(12.5));
        let v = find(&n, "net.eth.eth1");
        assert_eq!((v.value, v.source), (None, CeilingSource::Unknown));
        assert!(v.detail.contains("-1") && v.detail.contains("eth1/speed"));
        // lo has no device: virtual, not listed
        assert!(!n.ceilings.iter().any(|c| c.id == "net.eth.lo"));
        // an active HDR port: the link is the port, not eth0's 12.5 GB/s, and so is one rail
        assert_eq!(n.link.value, Some(25.0));
        assert_eq!(n.rail_gbps, Some(25.0));
        assert_eq!(n.link.source, CeilingSource::Sysfs);
    }

    /// A tree with only the given Ethernet speeds (`None`: a `speed` file that says -1).
    fn eth_tree(tag: &str, speeds: &[(&str, Option<u64>)]) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("scalebench-net-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (name, mbps) in speeds {
            let d = root.join("class/net").join(name);
            std::fs::create_dir_all(d.join("device")).unwrap();
            let text = mbps.map_or("-1".to_string(), |m| m.to_string());
            std::fs::write(d.join("speed"), text + "\n").unwrap();
        }
        root
    }

    #[test]
    fn without_infiniband_the_fastest_ethernet_link_bounds_and_none_is_unknown() {
        let root = eth_tree("fast", &[("eno1", Some(1000)), ("ens2", Some(25000))]);
        let n = read(&root, &Expect::default());
        let _ = std::fs::remove_dir_all(&root);
        // 25000 Mb/s = 3.125 GB/s; the 1 Gb/s management port does not lower it
        assert_eq!(n.link.value, Some(3.125));
        assert_eq!(n.rail_gbps, Some(3.125));
        assert!(n.link.detail.contains("net.eth.ens2"), "{}", n.link.detail);
        let root = eth_tree("virtio", &[("eth0", None)]);
        let n = read(&root, &Expect::default());
        assert_eq!(
            (n.link.value, n.link.source),
            (None, CeilingSource::Unknown)
        );
        assert!(
            n.link.detail.contains("net.eth.eth0") && n.link.detail.contains("-1"),
            "{}",
            n.link.detail
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn an_unreadable_rate_is_unknown_naming_the_file() {
        let n = read(&fixture("ib_bad/sys"), &Expect::default());
        let c = find(&n, "net.ib.mlx5_0.1");
        assert_eq!(c.value, None);
        assert!(c.detail.contains("mlx5_0/ports/1/rate") && c.detail.contains("not"));
    }

    #[test]
    fn growing_error_counters_are_named_with_before_and_after() {
        for (dir, dev) in [("ib_hdr", "mlx5_0"), ("ib_ndr", "mlx5_0")] {
            let (b, pb) = counters(&fixture(&format!("{dir}/before/sys")));
            let (a, pa) = counters(&fixture(&format!("{dir}/after/sys")));
            assert!(pb.is_empty() && pa.is_empty(), "{pb:?} {pa:?}");
            assert!(b.len() >= 4, "{b:?}");
            let w = counter_growth(&b, &a);
            assert!(
                w.iter().any(|x| x.subject == format!("{dev} port 1")
                    && x.kind == CeilingWarningKind::CountersGrew
                    && x.message.contains("symbol_error")
                    && x.message.contains("3 → 1027")),
                "{dir}: {w:?}"
            );
            assert!(
                w.iter()
                    .any(|x| x.message.contains("link_downed") && x.message.contains("0 → 1")),
                "{dir}: {w:?}"
            );
            // unchanged counters give no warning
            assert_eq!(w.len(), 2, "{dir}: {w:?}");
        }
        // no change, no warning
        let (b, _) = counters(&fixture("ib_hdr/before/sys"));
        assert!(counter_growth(&b, &b).is_empty());
    }

    #[test]
    fn a_reset_counter_is_told_apart_from_growth() {
        let r = |v| CounterReading {
            device: "d".into(),
            port: "1".into(),
            counter: "port_rcv_errors".into(),
            value: v,
        };
        let w = counter_growth(&[r(9)], &[r(0)]);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].kind, CeilingWarningKind::Other);
        assert!(w[0].message.contains("reset") && w[0].message.contains("9 → 0"));
    }

    #[test]
    fn no_sysfs_no_ceilings() {
        let n = read(Path::new("/nonexistent/sys"), &Expect::default());
        assert!(n.ceilings.is_empty() && n.warnings.is_empty());
        assert_eq!(n.link.value, None);
        assert!(
            n.link.detail.contains("no InfiniBand/RoCE port"),
            "{}",
            n.link.detail
        );
    }
}
