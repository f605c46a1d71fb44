//! Network ceilings from sysfs: InfiniBand/RoCE port rates and states
//! (`<root>/class/infiniband/<dev>/ports/<n>/`), Ethernet speeds (`<root>/class/net/<if>/speed`),
//! and the ports' error counters, read as snapshots so a launch can warn when one grew.
//!
//! The sysfs root is a parameter (normally `/sys`) so tests read recorded trees.
//! File formats: the kernel's `Documentation/ABI/stable/sysfs-class-infiniband` and
//! `Documentation/ABI/testing/sysfs-class-net`.

use crate::results::ceilings::{Ceiling, CeilingSource, CeilingUnit};
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

/// What was found: ceilings (one per port or interface) and warnings with their cause.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NetworkCeilings {
    pub ceilings: Vec<Ceiling>,
    pub warnings: Vec<String>,
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
    let mut out = NetworkCeilings::default();
    let ib = root.join("class/infiniband");
    for dev in entries(&ib) {
        let ports = ib.join(&dev).join("ports");
        for port in entries(&ports) {
            ib_port(&ports.join(&port), &dev, &port, expect, &mut out);
        }
    }
    let net = root.join("class/net");
    for ifname in entries(&net) {
        // virtual interfaces (lo, bridges, veth, ifb) have no `device`: no link to bound
        if net.join(&ifname).join("device").exists() {
            out.ceilings.push(ethernet(&net.join(&ifname), &ifname));
        }
    }
    out
}

fn ib_port(dir: &Path, dev: &str, port: &str, expect: &Expect, out: &mut NetworkCeilings) {
    let id = format!("net.ib.{dev}.{port}");
    let layer = read_trim(&dir.join("link_layer")).unwrap_or_else(|_| "InfiniBand".into());
    let what = format!("{dev} port {port} ({layer}), per direction");
    let state = read_trim(&dir.join("state"));
    let phys = read_trim(&dir.join("phys_state")).unwrap_or_else(|e| e);
    let rate_file = dir.join("rate");
    let rate = read_trim(&rate_file);
    let active = matches!(&state, Ok(s) if s.ends_with("ACTIVE"));
    match &state {
        Ok(s) if active => {
            let _ = s;
        }
        Ok(s) => out.warnings.push(format!(
            "{dev} port {port}: state is \"{s}\" (phys_state \"{phys}\"), not ACTIVE: the port \
             carries no traffic; check its cable and the subnet manager"
        )),
        Err(e) => out
            .warnings
            .push(format!("{dev} port {port}: link state unknown ({e})")),
    }
    let c = match rate.as_deref().map(|t| (t, parse_ib_rate(t))) {
        Ok((t, Some(gbps))) => {
            if let Some(want) = expect.ib_rate_gbps.filter(|w| active && gbps < *w) {
                out.warnings.push(format!(
                    "{dev} port {port}: running at {t}, below the expected {} Gb/s: \
                     negotiated down (cable, transceiver or the switch port's speed)",
                    crate::units::echo_f64(want)
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
    out.ceilings.push(c);
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
pub fn counter_growth(before: &[CounterReading], after: &[CounterReading]) -> Vec<String> {
    let mut w = Vec::new();
    for a in after {
        let Some(b) = before
            .iter()
            .find(|b| b.device == a.device && b.port == a.port && b.counter == a.counter)
        else {
            continue;
        };
        if a.value > b.value {
            w.push(format!(
                "{} port {}: error counter {} grew during the run, {} → {}: the link is \
                 faulty or was reset; figures through it may be low",
                a.device, a.port, a.counter, b.value, a.value
            ));
        } else if a.value < b.value {
            // the counters only grow; a drop means someone reset them (perfquery -R)
            w.push(format!(
                "{} port {}: error counter {} dropped during the run, {} → {}: it was reset, \
                 so growth in between cannot be told",
                a.device, a.port, a.counter, b.value, a.value
            ));
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
        assert!(n.warnings.iter().any(|w| w.contains("mlx5_1 port 1")
            && w.contains("200 Gb/sec (4X HDR)")
            && w.contains("negotiated down")));
        assert!(n.warnings.iter().any(|w| w.contains("mlx5_2 port 1")
            && w.contains("1: DOWN")
            && w.contains("not ACTIVE")));
        // the down port is below 400 too, but its state is the cause: one warning for it
        assert!(!n
            .warnings
            .iter()
            .any(|w| w.contains("mlx5_2") && w.contains("negotiated")));
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
                w.iter().any(|x| x.contains(&format!("{dev} port 1"))
                    && x.contains("symbol_error")
                    && x.contains("3 → 1027")),
                "{dir}: {w:?}"
            );
            assert!(
                w.iter()
                    .any(|x| x.contains("link_downed") && x.contains("0 → 1")),
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
        assert!(w[0].contains("reset") && w[0].contains("9 → 0"));
    }

    #[test]
    fn no_sysfs_no_ceilings() {
        let n = read(Path::new("/nonexistent/sys"), &Expect::default());
        assert!(n.ceilings.is_empty() && n.warnings.is_empty());
    }
}
