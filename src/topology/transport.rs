//! Which transport carried a launch's MPI messages, without `ompi_info`: the selection
//! parameters Open MPI resolves (OMPI_MCA_* in the environment, which `mpirun --mca` also
//! sets, then the MCA parameter files), and what each rank's process shows after its cases:
//! the transport components it loaded, the shared-memory segments it mapped, and its TCP
//! connections to other ranks' listening ports. Parsers and the summary are pure functions.

use crate::results::schema::{McaSetting, Transport};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The parameters that select Open MPI's point-to-point transport.
const MCA_NAMES: &[&str] = &["pml", "btl", "mtl"];

/// What one rank's process shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireProbe {
    pub host: String,
    /// Shared-memory files mapped (/dev/shm paths and SysV segments).
    pub shm_segments: u32,
    /// `pml_ob1`, `btl_tcp`, ... (from `mca_<framework>_<name>.so` in the memory map).
    pub components: BTreeSet<String>,
    /// Local ports this process listens on (TCP).
    pub listening: BTreeSet<u16>,
    /// Established TCP connections: (local port, remote port, remote is loopback).
    pub established: Vec<(u16, u16, bool)>,
}

/// Shared-memory segments and transport components named in a /proc/<pid>/maps text.
pub fn parse_maps(text: &str) -> (u32, BTreeSet<String>) {
    let mut shm = BTreeSet::new();
    let mut comps = BTreeSet::new();
    for line in text.lines() {
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        if path.starts_with("/dev/shm/") || path.starts_with("/SYSV") {
            shm.insert(path.to_string());
        }
        let file = path.rsplit('/').next().unwrap_or("");
        if let Some(c) = file
            .strip_prefix("mca_")
            .and_then(|f| f.strip_suffix(".so"))
        {
            if ["pml_", "btl_", "mtl_"].iter().any(|p| c.starts_with(p)) {
                comps.insert(c.to_string());
            }
        }
    }
    (shm.len() as u32, comps)
}

/// Rows of /proc/net/tcp or tcp6 whose inode is in `inodes`: (local port, remote port,
/// remote is loopback, state).
pub fn parse_net_tcp(text: &str, inodes: &BTreeSet<u64>) -> Vec<(u16, u16, bool, u8)> {
    let port = |a: &str| {
        a.rsplit_once(':')
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
    };
    let loopback = |a: &str| {
        let ip = a.split(':').next().unwrap_or("");
        // IPv4 is little-endian hex (127.x.x.x ends in 7F); IPv6 ::1, or ::ffff:127.x.x.x
        (ip.len() == 8 && ip.ends_with("7F"))
            || ip == "00000000000000000000000001000000"
            || (ip.len() == 32 && ip.starts_with("0000000000000000FFFF0000") && ip.ends_with("7F"))
    };
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(l), Some(r), Some(st), Some(ino)) = (f.get(1), f.get(2), f.get(3), f.get(9))
        else {
            continue;
        };
        if !ino.parse::<u64>().is_ok_and(|i| inodes.contains(&i)) {
            continue;
        }
        if let (Some(lp), Some(rp), Ok(s)) = (port(l), port(r), u8::from_str_radix(st, 16)) {
            out.push((lp, rp, loopback(r), s));
        }
    }
    out
}

/// This process now.
pub fn probe() -> WireProbe {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let (shm_segments, components) = parse_maps(&read("/proc/self/maps"));
    let mut inodes = BTreeSet::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        for e in dir.flatten() {
            let link = std::fs::read_link(e.path()).unwrap_or_default();
            let link = link.to_string_lossy();
            if let Some(i) = link
                .strip_prefix("socket:[")
                .and_then(|x| x.strip_suffix(']'))
            {
                inodes.extend(i.parse::<u64>().ok());
            }
        }
    }
    let mut p = WireProbe {
        host: super::hostname(),
        shm_segments,
        components,
        ..WireProbe::default()
    };
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for (lp, rp, lo, state) in parse_net_tcp(&read(f), &inodes) {
            match state {
                0x0A => {
                    p.listening.insert(lp);
                }
                0x01 => p.established.push((lp, rp, lo)),
                _ => {}
            }
        }
    }
    p
}

/// Open MPI's `pml`, `btl` and `mtl` as resolved: the environment first, then the parameter
/// files in order (the first that sets a name wins, as in Open MPI); `files` are (path, text).
pub fn resolve_mca(env: &BTreeMap<String, String>, files: &[(String, String)]) -> Vec<McaSetting> {
    MCA_NAMES
        .iter()
        .map(|name| {
            let from_env = env
                .get(&format!("OMPI_MCA_{name}"))
                .map(|v| (v.clone(), "environment".to_string()));
            let from_file = || {
                files.iter().find_map(|(path, text)| {
                    text.lines().find_map(|l| {
                        let l = l.split('#').next()?.trim();
                        let (k, v) = l.split_once('=')?;
                        (k.trim() == *name).then(|| (v.trim().to_string(), path.clone()))
                    })
                })
            };
            let (value, source) = from_env
                .or_else(from_file)
                .unwrap_or_else(|| (String::new(), "default".to_string()));
            McaSetting {
                name: name.to_string(),
                value,
                source,
            }
        })
        .collect()
}

/// The MCA parameter files Open MPI reads, in precedence order, that exist: those named by
/// OMPI_MCA_mca_base_param_files, else the user's and the system's (Debian's /etc/openmpi,
/// $OPAL_PREFIX/etc, /usr/local/etc).
pub fn mca_param_files(env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let listed: Vec<String> = match env.get("OMPI_MCA_mca_base_param_files") {
        Some(v) => v.split(':').map(str::to_string).collect(),
        None => {
            let mut v = Vec::new();
            if let Ok(home) = std::env::var("HOME") {
                v.push(format!("{home}/.openmpi/mca-params.conf"));
            }
            if let Some(p) = env.get("OPAL_PREFIX") {
                v.push(format!("{p}/etc/openmpi-mca-params.conf"));
            }
            v.push("/etc/openmpi/openmpi-mca-params.conf".into());
            v.push("/usr/local/etc/openmpi-mca-params.conf".into());
            v
        }
    };
    listed
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect()
}

/// The launch's transport from every rank's probe (`mca` empty for other MPI libraries).
pub fn summarise(probes: &[WireProbe], mca: Vec<McaSetting>) -> Transport {
    let listening: BTreeSet<u16> = probes.iter().flat_map(|p| p.listening.clone()).collect();
    let mut ranks_with_shared_memory = 0;
    let mut ranks_with_tcp = 0;
    let mut tcp_network_connections = 0;
    let mut components = BTreeSet::new();
    for p in probes {
        components.extend(p.components.iter().cloned());
        // Each rank maps its own segment: a peer's makes two.
        if p.shm_segments >= 2 {
            ranks_with_shared_memory += 1;
        }
        let mpi: Vec<_> = p
            .established
            .iter()
            .filter(|(l, r, _)| p.listening.contains(l) || listening.contains(r))
            .collect();
        if !mpi.is_empty() {
            ranks_with_tcp += 1;
        }
        tcp_network_connections += mpi.iter().filter(|(_, _, lo)| !lo).count() as u32;
    }
    let mut t = Transport {
        summary: String::new(),
        mca,
        components_loaded: components.into_iter().collect(),
        ranks_with_shared_memory,
        ranks_with_tcp,
        tcp_network_connections,
        ranks_probed: probes.len() as u32,
    };
    t.summary = summary(&t);
    t
}

/// The transport in words.
fn summary(t: &Transport) -> String {
    if t.ranks_probed <= 1 {
        return "none: one MPI process, no messages between ranks".into();
    }
    let named = |kind: &str| -> Vec<String> {
        t.components_loaded
            .iter()
            .filter_map(|c| c.strip_prefix(kind))
            .map(|c| c.trim_start_matches('_').to_string())
            .collect()
    };
    let pml = named("pml").join("/");
    let mut btl = named("btl");
    // Open MPI 4's `sm` is an alias library of `vader`, loaded with it.
    if btl.iter().any(|b| b == "vader") {
        btl.retain(|b| b != "sm");
    }
    let with = |btls: &[&str]| {
        let b: Vec<&str> = btl
            .iter()
            .map(String::as_str)
            .filter(|x| btls.contains(x))
            .collect();
        match (pml.is_empty(), b.is_empty()) {
            (true, true) => String::new(),
            (false, true) => format!(" (pml {pml})"),
            (true, false) => format!(" (btl {})", b.join(", ")),
            (false, false) => format!(" (pml {pml}, btl {})", b.join(", ")),
        }
    };
    let mut used = Vec::new();
    if t.ranks_with_shared_memory > 0 {
        used.push(format!("shared memory{}", with(&["vader", "sm"])));
    }
    if t.ranks_with_tcp > 0 {
        let net = if t.tcp_network_connections > 0 {
            "TCP over a network"
        } else {
            "TCP over loopback"
        };
        used.push(format!("{net}{}", with(&["tcp"])));
    }
    if used.is_empty() {
        let pml = if pml.is_empty() { "?".into() } else { pml };
        return format!("not seen: no peer shared memory or TCP connection (pml {pml}; UCX, verbs or a fabric leave neither)");
    }
    used.join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "7f1-7f2 rw-s 00000000 00:1a 12 /dev/shm/vader_segment.vm.0.1.0
7f3-7f4 rw-s 00000000 00:1a 13 /dev/shm/vader_segment.vm.0.1.1
7f5-7f6 r-xp 00000000 08:01 99 /usr/lib/openmpi/mca_btl_vader.so
7f7-7f8 r-xp 00000000 08:01 98 /usr/lib/openmpi/mca_btl_tcp.so
7f9-7fa r-xp 00000000 08:01 97 /usr/lib/openmpi/mca_pml_ob1.so
7fb-7fc r-xp 00000000 08:01 96 /usr/lib/openmpi/mca_shmem_mmap.so
7fd-7fe rw-s 00000000 00:1a 14 /tmp/ompi.vm.0/pmix_shared-segment-0
7ff-800 rw-p 00000000 00:00 0
";

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:936C 0100007F:D0A7 01 00000000:00000000 00:00000000 00000000     0        0 442073 1
   1: 00000000:0401 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 442078 1
   2: 0100007F:B2B7 0100007F:0402 01 00000000:00000000 00:00000000 00000000     0        0 441309 1
   3: 0A00000A:B2B8 0B00000A:0402 01 00000000:00000000 00:00000000 00000000     0        0 441310 1
   4: 0100007F:9999 0100007F:0402 01 00000000:00000000 00:00000000 00000000     0        0 5 1
";

    #[test]
    fn maps_and_sockets_parse() {
        let (shm, comps) = parse_maps(MAPS);
        assert_eq!(shm, 2);
        let c: Vec<&str> = comps.iter().map(String::as_str).collect();
        assert_eq!(c, ["btl_tcp", "btl_vader", "pml_ob1"]);
        let mine: BTreeSet<u64> = [442073, 442078, 441309, 441310].into();
        let rows = parse_net_tcp(TCP, &mine);
        assert_eq!(
            rows,
            [
                (0x936C, 0xD0A7, true, 1),
                (0x0401, 0, false, 0x0A),
                (0xB2B7, 0x0402, true, 1),
                (0xB2B8, 0x0402, false, 1)
            ]
        );
    }

    fn rank(shm: u32, comps: &[&str], listen: u16, est: &[(u16, u16, bool)]) -> WireProbe {
        WireProbe {
            host: "h".into(),
            shm_segments: shm,
            components: comps.iter().map(|c| c.to_string()).collect(),
            listening: [listen].into(),
            established: est.to_vec(),
        }
    }

    #[test]
    fn transport_is_named_from_the_evidence() {
        let all = ["pml_ob1", "btl_self", "btl_sm", "btl_tcp", "btl_vader"];
        // Shared memory: peer segments mapped; the PMIx connection (to 0xD0A7) is not MPI.
        let shm = summarise(
            &[
                rank(2, &all, 1024, &[(0x936C, 0xD0A7, true)]),
                rank(2, &all, 1025, &[(0x9372, 0xD0A7, true)]),
            ],
            vec![],
        );
        assert_eq!(shm.summary, "shared memory (pml ob1, btl vader)");
        assert_eq!((shm.ranks_with_shared_memory, shm.ranks_with_tcp), (2, 0));
        // btl self,tcp: rank 1 connected to rank 0's listening port, over loopback.
        let tcp = ["pml_ob1", "btl_self", "btl_tcp"];
        let t = summarise(
            &[
                rank(0, &tcp, 1026, &[(1026, 0xB2B7, true)]),
                rank(0, &tcp, 1027, &[(0xB2B7, 1026, true)]),
            ],
            vec![],
        );
        assert_eq!(t.summary, "TCP over loopback (pml ob1, btl tcp)");
        assert_eq!((t.ranks_with_tcp, t.tcp_network_connections), (2, 0));
        let net = summarise(
            &[
                rank(0, &tcp, 1026, &[(1026, 0xB2B7, false)]),
                rank(0, &tcp, 1026, &[(0xB2B7, 1026, false)]),
            ],
            vec![],
        );
        assert_eq!(net.summary, "TCP over a network (pml ob1, btl tcp)");
        let one = summarise(&[rank(1, &all, 1024, &[])], vec![]);
        assert!(one.summary.starts_with("none: one MPI process"));
        let ucx = summarise(
            &[rank(1, &["pml_ucx"], 1, &[]), rank(1, &[], 2, &[])],
            vec![],
        );
        assert!(ucx.summary.starts_with("not seen") && ucx.summary.contains("pml ucx"));
    }

    #[test]
    fn mca_resolves_environment_then_files_in_order() {
        let env: BTreeMap<String, String> =
            [("OMPI_MCA_btl".to_string(), "self,tcp".to_string())].into();
        let files = vec![
            (
                "user.conf".to_string(),
                "# pml = cm\nmtl = psm2 # fast\n".to_string(),
            ),
            (
                "system.conf".to_string(),
                "btl = ^openib\npml = ^ucx\nmtl = ^ofi\n".to_string(),
            ),
        ];
        let got: Vec<(String, String, String)> = resolve_mca(&env, &files)
            .into_iter()
            .map(|m| (m.name, m.value, m.source))
            .collect();
        let want = [
            ("pml", "^ucx", "system.conf"),
            ("btl", "self,tcp", "environment"),
            ("mtl", "psm2", "user.conf"),
        ];
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0.as_str(), g.1.as_str(), g.2.as_str()), w);
        }
        let none = resolve_mca(&BTreeMap::new(), &[]);
        assert!(none
            .iter()
            .all(|m| m.source == "default" && m.value.is_empty()));
    }
}
