//! Binding policies: which CPUs each device's thread runs on, computed from a [`Machine`].
//!
//! Pure functions. Launchers start ranks with their own binding off (`mpirun --bind-to none`,
//! `srun --cpu-bind=none`) and every rank binds itself (or its hybrid workers) to the CPUs
//! computed here, then reads back what is in force. That way reserved cores, emulated nodes
//! and GPU locality work the same under every launcher.
//!
//! - `none`: no binding.
//! - `core`: the node's usable cores split into equal contiguous blocks, one per device.
//! - `numa` / `socket`: devices spread over NUMA nodes / packages in blocks; each device may
//!   run on every usable core of its domain.
//! - `gpu`: the usable cores nearest the device's GPU (PCI locality); without GPUs it falls
//!   back to `core` and says so. A site's GPU → NUMA node map (a profile's `gpu_numa`, e.g.
//!   LUMI's GCDs) takes the place of PCI locality where it is given: device `i` runs on the
//!   usable cores of NUMA node `gpu_numa[i]`, split between the devices that share the node.
//!
//! Usable cores: all cores minus reserved ones; with emulated nodes, each emulated node gets an
//! equal contiguous share of the host's usable cores.

use super::machine::{Core, Machine};
use crate::params::Binding;

/// Cores kept free of benchmark threads (e.g. for the OS, as some sites do), parsed once
/// where the text comes in (command line, spec, profile, plan file) and carried typed.
///
/// The text is kept as given: plan files and run records write it back (serde and `Display`
/// give it unchanged), so a typed value writes what a string did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reserved {
    text: String,
    cores: ReservedCores,
}

/// Which cores [`Reserved`] keeps free.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ReservedCores {
    #[default]
    Nothing,
    /// PU OS indexes (a cpulist); a core is unusable when any of its PUs is listed.
    Pus(Vec<u32>),
    /// The first core of every NUMA node.
    FirstPerNuma,
}

impl Reserved {
    /// Parses `""` (nothing), `first_per_numa`, or a cpulist such as `0,8` or `0-1`.
    pub fn parse(text: &str) -> Result<Reserved, BindError> {
        let t = text.trim();
        let cores = if t.is_empty() || t == "none" {
            ReservedCores::Nothing
        } else if t == "first_per_numa" {
            ReservedCores::FirstPerNuma
        } else {
            super::affinity::parse_cpulist(t)
                .map(ReservedCores::Pus)
                .ok_or_else(|| BindError::NotACpuList {
                    text: t.to_string(),
                })?
        };
        Ok(Reserved {
            text: text.to_string(),
            cores,
        })
    }

    /// The cores kept free.
    pub fn cores(&self) -> &ReservedCores {
        &self.cores
    }

    /// The text as given (empty when nothing was given).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Reserved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Reserved {
    type Err = BindError;
    fn from_str(text: &str) -> Result<Reserved, BindError> {
        Reserved::parse(text)
    }
}

/// Written as the text given, so files that carried a string carry the same string.
impl serde::Serialize for Reserved {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Read from the text, refused when [`Reserved::parse`] refuses it.
impl<'de> serde::Deserialize<'de> for Reserved {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Reserved, D::Error> {
        let text = String::deserialize(d)?;
        Reserved::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Why a binding cannot be computed: input errors, each saying how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// `reserved_cores` text that is not a CPU list.
    #[error("'{text}' is not a CPU list: write CPU numbers and ranges such as 0,8-9, or first_per_numa, or leave it empty")]
    NotACpuList { text: String },
    /// A GPU → NUMA map with no entry for a device.
    #[error("gpu_numa lists {} but device {device} is bound: give one NUMA node per GPU of the node", crate::units::count(*gpus, "GPU", "GPUs"))]
    GpuNumaShort { device: u32, gpus: usize },
    /// A GPU → NUMA map naming a NUMA node with no usable core on this host.
    #[error("gpu_numa maps device {device} to NUMA node {node}, which has no usable core on {host} ({} found): check the profile's gpu_numa and reserved_cores against this node", crate::units::count(*numa_nodes as usize, "NUMA node", "NUMA nodes"))]
    GpuNumaEmpty {
        device: u32,
        node: u32,
        host: String,
        numa_nodes: u32,
    },
    /// The reserved cores cover every core of the host.
    #[error("reserved_cores leaves no usable core on {host} ({cores} cores): reserve fewer cores")]
    NoUsableCore { host: String, cores: usize },
}

/// What one device of a node should be bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindRequest {
    pub policy: Binding,
    /// Devices on this node (ranks per node in pure mode, workers in hybrid mode).
    pub devices_on_node: u32,
    /// This device's node-local number (its GPU id).
    pub device: u32,
    /// With emulated nodes: (this node's index among the host's emulated nodes, how many).
    pub host_share: (u32, u32),
    pub reserved: Reserved,
    /// The site's NUMA node of each node-local GPU (LUMI: `[3,3,1,1,0,0,2,2]`), used by `gpu`
    /// instead of PCI locality; empty: PCI locality. Site data because the HIP device order
    /// and hwloc's PCI order need not agree, and a cgroup may hide the GPUs from hwloc.
    pub gpu_numa: Vec<u32>,
}

/// The CPUs to bind to and what was actually applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindDecision {
    /// PU OS indexes; `None` = leave the thread unbound.
    pub cpus: Option<Vec<u32>>,
    /// The policy applied (differs from the request after a fallback).
    pub applied: Binding,
    /// Why the result differs from the request, if it does.
    pub note: Option<String>,
}

fn usable_cores<'a>(m: &'a Machine, reserved: &Reserved) -> Vec<&'a Core> {
    let mut first_seen = std::collections::HashSet::new();
    m.cores
        .iter()
        .filter(|c| match reserved.cores() {
            ReservedCores::Nothing => true,
            ReservedCores::Pus(list) => !c.pus.iter().any(|p| list.contains(p)),
            ReservedCores::FirstPerNuma => !first_seen.insert(c.numa),
        })
        .collect()
}

fn pus_of(cores: &[&Core]) -> Vec<u32> {
    let mut v: Vec<u32> = cores.iter().flat_map(|c| c.pus.iter().copied()).collect();
    v.sort_unstable();
    v
}

/// Splits `items` into `parts` contiguous blocks and returns block `i` (never empty when
/// `items` is not: with more parts than items, consecutive parts share an item).
fn block<T: Clone>(items: &[T], parts: u32, i: u32) -> Vec<T> {
    let (n, parts, i) = (
        items.len(),
        parts.max(1) as usize,
        i as usize % parts.max(1) as usize,
    );
    if n == 0 {
        return Vec::new();
    }
    if parts > n {
        return vec![items[i * n / parts].clone()];
    }
    items[n * i / parts..n * (i + 1) / parts].to_vec()
}

/// Groups cores by a key (NUMA node or package), keeping first-seen order.
fn domains<'a>(cores: &[&'a Core], key: impl Fn(&Core) -> u32) -> Vec<Vec<&'a Core>> {
    let mut out: Vec<(u32, Vec<&Core>)> = Vec::new();
    for c in cores {
        let k = key(c);
        match out.iter_mut().find(|(d, _)| *d == k) {
            Some((_, v)) => v.push(c),
            None => out.push((k, vec![c])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// Computes the binding of one device. Errors are input errors (nothing usable).
pub fn decide(m: &Machine, req: &BindRequest) -> Result<BindDecision, BindError> {
    if req.policy == Binding::None {
        return Ok(BindDecision {
            cpus: None,
            applied: Binding::None,
            note: None,
        });
    }
    let usable = usable_cores(m, &req.reserved);
    if usable.is_empty() {
        return Err(BindError::NoUsableCore {
            host: m.host.clone(),
            cores: m.cores.len(),
        });
    }
    let (share, shares) = req.host_share;
    let mine: Vec<&Core> = block(&usable, shares, share);
    let d = req.devices_on_node.max(1);
    let i = req.device % d;
    let shared_note = |what: &str, n: usize| {
        (d as usize > n).then(|| {
            format!("{d} devices share {n} {what}: binding cannot give each device its own")
        })
    };
    let (cores, applied, note) = match req.policy {
        Binding::None => unreachable!(),
        Binding::Core => (
            block(&mine, d, i),
            Binding::Core,
            shared_note("cores", mine.len()),
        ),
        Binding::Numa | Binding::Socket => {
            let doms = if req.policy == Binding::Numa {
                domains(&mine, |c| c.numa)
            } else {
                domains(&mine, |c| c.package)
            };
            let picked: Vec<Vec<&Core>> = block(&doms, d, i);
            (picked.into_iter().flatten().collect(), req.policy, None)
        }
        Binding::Gpu if !req.gpu_numa.is_empty() => by_gpu_numa(m, &mine, &req.gpu_numa, d, i)?,
        Binding::Gpu => {
            if m.gpus.is_empty() {
                let note = Some(format!(
                    "no GPUs found on {}: binding gpu fell back to core",
                    m.host
                ));
                (block(&mine, d, i), Binding::Core, note)
            } else {
                let gpu = &m.gpus[i as usize % m.gpus.len()];
                let near: Vec<&Core> = mine
                    .iter()
                    .copied()
                    .filter(|c| c.pus.iter().any(|p| gpu.local_pus.contains(p)))
                    .collect();
                if near.is_empty() {
                    let note = Some(format!(
                        "GPU {} has no usable cores nearby on {}: binding gpu fell back to core",
                        gpu.bus_id, m.host
                    ));
                    (block(&mine, d, i), Binding::Core, note)
                } else {
                    // Devices sharing a GPU's locality split its cores between them.
                    let sharing = (0..d)
                        .filter(|j| (*j as usize) % m.gpus.len() == i as usize % m.gpus.len())
                        .count() as u32;
                    let nth = (0..i)
                        .filter(|j| (*j as usize) % m.gpus.len() == i as usize % m.gpus.len())
                        .count() as u32;
                    (block(&near, sharing, nth), Binding::Gpu, None)
                }
            }
        }
    };
    Ok(BindDecision {
        cpus: Some(pus_of(&cores)),
        applied,
        note,
    })
}

/// `gpu` binding from a site's GPU → NUMA node map: device `i`'s share of the usable cores of
/// NUMA node `map[i]`, split in device order between the devices mapped to that node.
fn by_gpu_numa<'a>(
    m: &Machine,
    mine: &[&'a Core],
    map: &[u32],
    d: u32,
    i: u32,
) -> Result<(Vec<&'a Core>, Binding, Option<String>), BindError> {
    let Some(&node) = map.get(i as usize) else {
        return Err(BindError::GpuNumaShort {
            device: i,
            gpus: map.len(),
        });
    };
    let near: Vec<&Core> = mine.iter().copied().filter(|c| c.numa == node).collect();
    if near.is_empty() {
        return Err(BindError::GpuNumaEmpty {
            device: i,
            node,
            host: m.host.clone(),
            numa_nodes: m.numa_nodes,
        });
    }
    let same = |j: &u32| map.get(*j as usize) == Some(&node);
    let sharing = (0..d).filter(same).count() as u32;
    let nth = (0..i).filter(same).count() as u32;
    let note = (sharing as usize > near.len()).then(|| {
        format!(
            "{} share NUMA node {node}'s {}: binding cannot give each device its own",
            crate::units::count(sharing as usize, "device", "devices"),
            crate::units::count(near.len(), "usable core", "usable cores")
        )
    });
    Ok((block(&near, sharing, nth), Binding::Gpu, note))
}

/// Where a rank's MPI progress thread (ddp_step, `progress = thread`) runs: a core of the
/// rank's own CPUs (`rank_cpus`) that none of its device threads may run on (`device_cpus`;
/// `None` is an unbound thread: all of the rank's CPUs), a whole free core first (an SMT
/// sibling of a busy CPU shares its core's pipelines), else a free sibling. `spare` is false
/// when there is none: the thread then runs on all the rank's CPUs, sharing them with its
/// devices. `smt` lists the host's sibling groups (see `HostInfo::smt_siblings`).
pub fn progress_thread_cpus(
    rank_cpus: &[u32],
    device_cpus: &[Option<Vec<u32>>],
    smt: &[Vec<u32>],
) -> (Vec<u32>, bool) {
    let busy: std::collections::BTreeSet<u32> = device_cpus
        .iter()
        .flat_map(|d| d.as_deref().unwrap_or(rank_cpus).iter().copied())
        .collect();
    let free: Vec<u32> = rank_cpus
        .iter()
        .copied()
        .filter(|c| !busy.contains(c))
        .collect();
    let siblings = |c: u32| -> Vec<u32> {
        smt.iter()
            .find(|g| g.contains(&c))
            .cloned()
            .unwrap_or_else(|| vec![c])
    };
    let whole = free
        .iter()
        .map(|&c| siblings(c))
        .find(|g| g.iter().all(|x| !busy.contains(x)));
    match (whole, free.first()) {
        (Some(core), _) => (
            core.into_iter().filter(|c| rank_cpus.contains(c)).collect(),
            true,
        ),
        (None, Some(&c)) => (vec![c], true),
        (None, None) => (rank_cpus.to_vec(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::machine::PciDevice;

    fn req(policy: Binding, d: u32, i: u32) -> BindRequest {
        BindRequest {
            policy,
            devices_on_node: d,
            device: i,
            host_share: (0, 1),
            reserved: Reserved::default(),
            gpu_numa: Vec::new(),
        }
    }

    fn cpus(m: &Machine, r: &BindRequest) -> Vec<u32> {
        decide(m, r).unwrap().cpus.unwrap()
    }

    #[test]
    fn core_blocks_are_disjoint_and_cover() {
        // 2 sockets × 2 NUMA × 4 cores, SMT 2 → 16 cores, 32 PUs
        let m = Machine::synthetic("h", 2, 2, 4, 2);
        let all: Vec<Vec<u32>> = (0..4)
            .map(|i| cpus(&m, &req(Binding::Core, 4, i)))
            .collect();
        assert_eq!(all[0], (0..8).collect::<Vec<_>>());
        assert_eq!(all[3], (24..32).collect::<Vec<_>>());
        let mut union: Vec<u32> = all.concat();
        union.sort_unstable();
        assert_eq!(union, m.pus());
    }

    #[test]
    fn numa_and_socket_domains() {
        let m = Machine::synthetic("h", 2, 2, 4, 1);
        // 4 devices over 4 NUMA nodes: one each
        assert_eq!(cpus(&m, &req(Binding::Numa, 4, 2)), vec![8, 9, 10, 11]);
        // 8 devices over 4 NUMA nodes: two per node, both on the whole node
        assert_eq!(cpus(&m, &req(Binding::Numa, 8, 3)), vec![4, 5, 6, 7]);
        // 2 devices over 2 sockets
        assert_eq!(
            cpus(&m, &req(Binding::Socket, 2, 1)),
            (8..16).collect::<Vec<_>>()
        );
        // 1 device: every domain
        assert_eq!(
            cpus(&m, &req(Binding::Socket, 1, 0)),
            (0..16).collect::<Vec<_>>()
        );
    }

    #[test]
    fn reserved_cores_are_skipped() {
        let m = Machine::synthetic("h", 1, 2, 4, 1);
        let mut r = req(Binding::Core, 2, 0);
        r.reserved = Reserved::parse("first_per_numa").unwrap();
        // usable: 1,2,3,5,6,7 → device 0 gets 1,2,3
        assert_eq!(cpus(&m, &r), vec![1, 2, 3]);
        r.reserved = Reserved::parse("0-1").unwrap();
        r.device = 1;
        assert_eq!(cpus(&m, &r), vec![5, 6, 7]);
        r.reserved = Reserved::parse("0-7").unwrap();
        assert!(decide(&m, &r)
            .unwrap_err()
            .to_string()
            .contains("no usable core"));
        assert!(Reserved::parse("x").is_err());
        // The text is kept as given, for the files that write it back.
        let r = Reserved::parse(" 0-1 ").unwrap();
        assert_eq!(r.cores(), &ReservedCores::Pus(vec![0, 1]));
        assert_eq!(r.to_string(), " 0-1 ");
        assert_eq!(serde_json::to_string(&r).unwrap(), "\" 0-1 \"");
        let back: Reserved = serde_json::from_str("\" 0-1 \"").unwrap();
        assert_eq!(back, r);
        assert!(serde_json::from_str::<Reserved>("\"x\"").is_err());
        assert_eq!(
            Reserved::parse("none").unwrap().cores(),
            &ReservedCores::Nothing
        );
        assert_eq!(Reserved::default().as_str(), "");
    }

    #[test]
    fn emulated_nodes_split_the_host() {
        let m = Machine::synthetic("h", 1, 1, 8, 1);
        let mut r = req(Binding::Core, 2, 1);
        r.host_share = (1, 2);
        // node 1 of 2 owns cores 4..8; its device 1 gets 6,7
        assert_eq!(cpus(&m, &r), vec![6, 7]);
    }

    #[test]
    fn gpu_locality_and_fallback() {
        let mut m = Machine::synthetic("h", 2, 1, 4, 1);
        let d = decide(&m, &req(Binding::Gpu, 2, 1)).unwrap();
        assert_eq!(d.applied, Binding::Core);
        assert!(d.note.unwrap().contains("fell back to core"));
        let gpu = |bus: &str, pus: Vec<u32>| PciDevice {
            bus_id: bus.into(),
            vendor_id: 0x10de,
            device_id: 1,
            name: "cuda".into(),
            local_pus: pus,
        };
        m.gpus = vec![
            gpu("0000:01:00.0", (0..4).collect()),
            gpu("0000:81:00.0", (4..8).collect()),
        ];
        let d = decide(&m, &req(Binding::Gpu, 2, 1)).unwrap();
        assert_eq!(
            (d.cpus.unwrap(), d.applied),
            (vec![4, 5, 6, 7], Binding::Gpu)
        );
        // 4 devices on 2 GPUs: devices 0 and 2 share GPU 0's cores
        assert_eq!(cpus(&m, &req(Binding::Gpu, 4, 0)), vec![0, 1]);
        assert_eq!(cpus(&m, &req(Binding::Gpu, 4, 2)), vec![2, 3]);
    }

    /// A LUMI-G node as docs/rocm notes describe it: 64 cores, SMT 2 (core c has PUs c and
    /// c + 64), NPS4 (NUMA node n = cores 16n..16n+15), and 8 GCDs whose PCI locality is
    /// given here in a deliberately wrong order (GPU g near NUMA node g / 2), so that only the
    /// profile's map can give the right cores.
    fn lumi_g() -> Machine {
        let mut m = Machine::synthetic("nid005000", 1, 4, 16, 1);
        for c in &mut m.cores {
            c.pus = vec![c.index, c.index + 64];
        }
        m.gpus = (0..8u32)
            .map(|g| PciDevice {
                bus_id: format!("0000:{:02x}:00.0", 0xc1 + 5 * g),
                vendor_id: 0x1002,
                device_id: 0x740c,
                name: format!("rsmi{g}"),
                local_pus: (16 * (g / 2)..16 * (g / 2) + 16)
                    .flat_map(|c| [c, c + 64])
                    .collect(),
            })
            .collect();
        m
    }

    /// The first PUs (< 64) set in a Slurm `mask_cpu` hex word.
    fn mask_pus(hex: &str) -> Vec<u32> {
        let v = u64::from_str_radix(hex, 16).unwrap();
        (0..64).filter(|b| v >> b & 1 == 1).collect()
    }

    #[test]
    fn lumi_gcds_bind_to_their_numa_cores_without_the_reserved_ones() {
        let m = lumi_g();
        // LUMI's documented hybrid masks, GCD 0 to 7 (the rocm note): each GCD's L3 region
        // without its first core, which low-noise mode reserves.
        let documented = [
            "fe000000000000",
            "fe00000000000000",
            "fe0000",
            "fe000000",
            "fe",
            "fe00",
            "fe00000000",
            "fe0000000000",
        ];
        let mut r = req(Binding::Gpu, 8, 0);
        r.gpu_numa = vec![3, 3, 1, 1, 0, 0, 2, 2];
        r.reserved = Reserved::parse("0,8,16,24,32,40,48,56").unwrap();
        for (gcd, hex) in documented.iter().enumerate() {
            r.device = gcd as u32;
            let d = decide(&m, &r).unwrap();
            assert_eq!(
                (d.applied, d.note.clone()),
                (Binding::Gpu, None),
                "GCD {gcd}"
            );
            let cpus = d.cpus.unwrap();
            let first: Vec<u32> = cpus.iter().copied().filter(|&p| p < 64).collect();
            assert_eq!(first, mask_pus(hex), "GCD {gcd}");
            // Each core comes with its SMT sibling.
            let siblings: Vec<u32> = cpus.iter().copied().filter(|&p| p >= 64).collect();
            assert_eq!(siblings, first.iter().map(|p| p + 64).collect::<Vec<_>>());
        }
        // Without the map, PCI locality (here in the wrong order) decides: GCD 0 lands on
        // NUMA node 0, which is what the map is there to prevent.
        r.gpu_numa.clear();
        r.device = 0;
        assert!(cpus(&m, &r).iter().all(|&p| p % 64 < 16));
    }

    #[test]
    fn a_short_or_wrong_gpu_numa_map_is_an_input_error() {
        let m = lumi_g();
        let mut r = req(Binding::Gpu, 8, 5);
        r.gpu_numa = vec![3, 3, 1, 1];
        let e = decide(&m, &r).unwrap_err().to_string();
        assert!(e.contains("gpu_numa lists 4 GPUs but device 5"), "{e}");
        r.gpu_numa = vec![3, 3, 1, 1, 0, 7, 2, 2];
        let e = decide(&m, &r).unwrap_err().to_string();
        assert!(
            e.contains("NUMA node 7") && e.contains("4 NUMA nodes found"),
            "{e}"
        );
        // More devices on a node than its cores: they share, and the note says so.
        let small = Machine::synthetic("h", 1, 2, 2, 1);
        let mut r = req(Binding::Gpu, 4, 1);
        r.gpu_numa = vec![1, 1, 1, 0];
        let d = decide(&small, &r).unwrap();
        assert_eq!(d.cpus.unwrap(), vec![2]);
        assert!(d
            .note
            .unwrap()
            .contains("3 devices share NUMA node 1's 2 usable cores"));
    }

    #[test]
    fn more_devices_than_cores_share_and_say_so() {
        let m = Machine::synthetic("h", 1, 1, 2, 1);
        let d = decide(&m, &req(Binding::Core, 4, 3)).unwrap();
        assert_eq!(d.cpus.unwrap(), vec![1]);
        assert!(d.note.unwrap().contains("share 2 cores"));
        assert_eq!(decide(&m, &req(Binding::None, 4, 3)).unwrap().cpus, None);
    }

    #[test]
    fn the_progress_thread_takes_a_spare_core_or_says_it_shares() {
        let b = |v: &[u32]| Some(v.to_vec());
        // Bound device on CPU 0 of 0-3: CPU 1 is spare.
        assert_eq!(
            progress_thread_cpus(&[0, 1, 2, 3], &[b(&[0])], &[]),
            (vec![1], true)
        );
        // SMT: 0 and 2 share a core; the device on 0 leaves core {1,3} whole.
        assert_eq!(
            progress_thread_cpus(&[0, 1, 2, 3], &[b(&[0])], &[vec![0, 2], vec![1, 3]]),
            (vec![1, 3], true)
        );
        // Only a sibling of a busy CPU is free: it is taken (a spare CPU, not a spare core).
        assert_eq!(
            progress_thread_cpus(&[0, 2], &[b(&[0])], &[vec![0, 2]]),
            (vec![2], true)
        );
        // An unbound device thread may use every CPU: nothing is spare.
        assert_eq!(
            progress_thread_cpus(&[0, 1], &[None], &[]),
            (vec![0, 1], false)
        );
        // A rank given one CPU (mpirun --bind-to core): it shares it.
        assert_eq!(
            progress_thread_cpus(&[0], &[b(&[0])], &[]),
            (vec![0], false)
        );
        // Hybrid: two workers on 0 and 1 of 0-2.
        assert_eq!(
            progress_thread_cpus(&[0, 1, 2], &[b(&[0]), b(&[1])], &[]),
            (vec![2], true)
        );
    }
}
