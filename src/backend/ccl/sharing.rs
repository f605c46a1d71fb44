//! One device per communicator rank: NCCL and RCCL both hang or fail obscurely when two of
//! their ranks drive one GPU, so both backends refuse such a launch at set-up with one
//! sentence (exit 2). The check is written once here; each backend names its devices (CUDA by
//! UUID, ROCm by PCI address, since HIP has no UUID shared with AMD SMI) and its fix.

use crate::comm::HostComm;

/// How a backend names its devices and the fix for sharing one, in the refusal's sentence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rule {
    /// The device as the sentence names it ("GPU", "GCD").
    pub device: &'static str,
    /// The collective library that needs a device per rank ("NCCL", "RCCL").
    pub library: &'static str,
    /// Where the user looks to fix it (the visibility variables the runtime honours).
    pub visible_env: &'static str,
}

/// Two ranks (or two devices of one rank) on one device, as a sentence with the fix, or
/// `None`. `ranks[r]` is rank r's host and the identities of its devices; identities are
/// compared per host, so a PCI address repeated on another node is another device.
pub(crate) fn duplicate_devices(ranks: &[(String, Vec<String>)], rule: &Rule) -> Option<String> {
    let mut seen: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    let Rule {
        device,
        library,
        visible_env,
    } = rule;
    for (r, (host, ids)) in ranks.iter().enumerate() {
        for id in ids {
            if let Some(first) = seen.insert((host.as_str(), id.as_str()), r) {
                let who = if first == r {
                    format!("rank {r} drives {device} {id} twice")
                } else {
                    format!("ranks {first} and {r} both drive {device} {id}")
                };
                return Some(format!(
                    "{who} (host {host}): {library} needs a {device} of its own for each device; start at most one rank per {device} (check --devices-per-node, {visible_env} and the launcher's GPU binding)"
                ));
            }
        }
    }
    None
}

/// Every rank's host and device identities go to the root, which judges them; every rank
/// learns the verdict. `Err` on every rank when a device is shared: the root's holds the
/// sentence, the others' is empty (so the launch prints it once). Collective.
pub(crate) fn refuse_shared<C: HostComm + ?Sized>(
    comm: &C,
    ids: &[String],
    rule: &Rule,
) -> Result<(), String> {
    let me = format!("{}\t{}", crate::topology::hostname(), ids.join(","));
    let all = comm.gather_bytes(me.as_bytes());
    let mut verdict = Vec::new();
    if comm.is_root() {
        let ranks: Vec<(String, Vec<String>)> = all
            .iter()
            .map(|b| {
                let s = String::from_utf8_lossy(b);
                let (host, ids) = s.split_once('\t').unwrap_or((&s, ""));
                (
                    host.to_string(),
                    ids.split(',')
                        .filter(|u| !u.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            })
            .collect();
        verdict = duplicate_devices(&ranks, rule)
            .unwrap_or_default()
            .into_bytes();
    }
    comm.broadcast_bytes(&mut verdict);
    if verdict.is_empty() {
        return Ok(());
    }
    Err(if comm.is_root() {
        String::from_utf8_lossy(&verdict).into_owned()
    } else {
        String::new()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GCD: Rule = Rule {
        device: "GCD",
        library: "RCCL",
        visible_env: "ROCR_VISIBLE_DEVICES",
    };

    fn r(h: &str, ids: &[&str]) -> (String, Vec<String>) {
        (h.to_string(), ids.iter().map(|x| x.to_string()).collect())
    }

    #[test]
    fn one_device_per_rank_per_host() {
        // Distinct devices, and the same PCI address on two hosts: two devices.
        assert_eq!(
            duplicate_devices(
                &[
                    r("a", &["0000:c1:00.0"]),
                    r("a", &["0000:c6:00.0"]),
                    r("b", &["0000:c1:00.0"])
                ],
                &GCD
            ),
            None
        );
        let m = duplicate_devices(
            &[r("a", &["0000:c1:00.0"]), r("a", &["0000:c1:00.0"])],
            &GCD,
        )
        .unwrap();
        assert_eq!(
            m,
            "ranks 0 and 1 both drive GCD 0000:c1:00.0 (host a): RCCL needs a GCD of its own for each device; start at most one rank per GCD (check --devices-per-node, ROCR_VISIBLE_DEVICES and the launcher's GPU binding)"
        );
        let m = duplicate_devices(&[r("a", &["x", "x"])], &GCD).unwrap();
        assert!(m.starts_with("rank 0 drives GCD x twice (host a)"), "{m}");
    }

    #[test]
    fn one_rank_alone_is_judged_too() {
        let solo = crate::comm::SoloComm;
        assert_eq!(
            refuse_shared(&solo, &["p".into(), "q".into()], &GCD),
            Ok(())
        );
        let e = refuse_shared(&solo, &["p".into(), "p".into()], &GCD).unwrap_err();
        assert!(e.starts_with("rank 0 drives GCD p twice"), "{e}");
    }
}
