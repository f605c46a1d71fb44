//! A plain description of one host's hardware (packages, NUMA nodes, cores with their PUs,
//! GPUs and NICs with the CPUs nearest them), filled by hwloc (`topology::hwloc`) or built by
//! hand in tests. Binding policies are computed from it (`topology::binding`).

use serde::{Deserialize, Serialize};

/// One host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub host: String,
    /// Physical cores, in hwloc's logical order.
    pub cores: Vec<Core>,
    /// Number of packages (sockets).
    pub packages: u32,
    /// Number of NUMA nodes.
    pub numa_nodes: u32,
    /// GPUs (PCI display/3D controllers of NVIDIA or AMD), by PCI bus id.
    pub gpus: Vec<PciDevice>,
    /// Network adapters (PCI network/InfiniBand controllers).
    pub nics: Vec<PciDevice>,
}

/// One physical core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Core {
    /// Logical index among cores.
    pub index: u32,
    /// OS indexes of its processing units (hardware threads).
    pub pus: Vec<u32>,
    /// Package (socket) it belongs to.
    pub package: u32,
    /// NUMA node it belongs to.
    pub numa: u32,
}

/// A PCI device and the CPUs nearest it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciDevice {
    /// `domain:bus:device.function`, e.g. `0000:3b:00.0`.
    pub bus_id: String,
    pub vendor_id: u16,
    pub device_id: u16,
    /// What hwloc calls it (OS device names such as `cuda0`, `ib0`, or the PCI class).
    pub name: String,
    /// OS indexes of the PUs nearest the device.
    pub local_pus: Vec<u32>,
}

impl Machine {
    /// A machine with `cores` single-PU cores split evenly over packages and NUMA nodes.
    pub fn synthetic(
        host: &str,
        packages: u32,
        numa_per_package: u32,
        cores_per_numa: u32,
        smt: u32,
    ) -> Machine {
        let mut cores = Vec::new();
        let mut pu = 0;
        for p in 0..packages {
            for n in 0..numa_per_package {
                for _ in 0..cores_per_numa {
                    let index = cores.len() as u32;
                    cores.push(Core {
                        index,
                        pus: (0..smt).map(|t| pu + t).collect(),
                        package: p,
                        numa: p * numa_per_package + n,
                    });
                    pu += smt;
                }
            }
        }
        Machine {
            host: host.to_string(),
            cores,
            packages,
            numa_nodes: packages * numa_per_package,
            gpus: Vec::new(),
            nics: Vec::new(),
        }
    }

    /// Every PU OS index, ascending.
    pub fn pus(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .cores
            .iter()
            .flat_map(|c| c.pus.iter().copied())
            .collect();
        v.sort_unstable();
        v
    }
}
