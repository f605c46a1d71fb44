//! Hardware discovery through hwloc (the `hwlocality` crate): fills a [`Machine`].
//!
//! hwlocality is used rather than the design card's `hwloc2` because hwloc2 2.2 segfaults
//! and panics on Debian 12's hwloc (see shared/notes/dependencies.md).

use super::machine::{Core, Machine, PciDevice};
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::topology::builder::TypeFilter;
use hwlocality::Topology;

fn pus(obj: &TopologyObject) -> Vec<u32> {
    obj.cpuset()
        .map(|s| s.iter_set().map(|i| usize::from(i) as u32).collect())
        .unwrap_or_default()
}

fn bus_id(obj: &TopologyObject) -> Option<(String, u16, u16, u16)> {
    match obj.attributes() {
        Some(ObjectAttributes::PCIDevice(p)) => Some((
            format!(
                "{:04x}:{:02x}:{:02x}.{:x}",
                p.domain(),
                p.bus_id(),
                p.bus_device(),
                p.function()
            ),
            p.vendor_id(),
            p.device_id(),
            p.class_id(),
        )),
        _ => None,
    }
}

/// hwloc could not read the machine; the source is hwloc's own error.
#[derive(Debug, thiserror::Error)]
pub enum HwlocError {
    #[error("hwloc: cannot ask for I/O devices: {source}")]
    IoFilter {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("hwloc could not read this machine's topology: {source}")]
    Build {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Discovers this host. Errors are one sentence (hwloc could not read the machine).
pub fn discover() -> Result<Machine, HwlocError> {
    let topo = Topology::builder()
        .with_io_type_filter(TypeFilter::KeepImportant)
        .map_err(|e| HwlocError::IoFilter { source: e.into() })?
        .build()
        .map_err(|e| HwlocError::Build { source: e.into() })?;
    let packages: Vec<Vec<u32>> = topo
        .objects_with_type(ObjectType::Package)
        .map(pus)
        .collect();
    let numa: Vec<Vec<u32>> = topo
        .objects_with_type(ObjectType::NUMANode)
        .map(pus)
        .collect();
    let find =
        |sets: &[Vec<u32>], pu: u32| sets.iter().position(|s| s.contains(&pu)).unwrap_or(0) as u32;
    let mut core_objs: Vec<Vec<u32>> = topo.objects_with_type(ObjectType::Core).map(pus).collect();
    if core_objs.is_empty() {
        // Some virtual machines expose PUs only: treat each PU as a core.
        core_objs = topo.objects_with_type(ObjectType::PU).map(pus).collect();
    }
    let cores = core_objs
        .into_iter()
        .filter(|p| !p.is_empty())
        .enumerate()
        .map(|(i, p)| Core {
            index: i as u32,
            package: find(&packages, p[0]),
            numa: find(&numa, p[0]),
            pus: p,
        })
        .collect();
    let mut gpus = Vec::new();
    let mut nics = Vec::new();
    for dev in topo.pci_devices() {
        let Some((bus, vendor, device, class)) = bus_id(dev) else {
            continue;
        };
        let local_pus = dev.first_non_io_ancestor().map(pus).unwrap_or_default();
        let os_names: Vec<String> = dev
            .io_children()
            .filter(|c| c.object_type() == ObjectType::OSDevice)
            .filter_map(|c| c.name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        let name = if os_names.is_empty() {
            format!("pci {vendor:04x}:{device:04x} class {class:04x}")
        } else {
            os_names.join(",")
        };
        let pci = PciDevice {
            bus_id: bus,
            vendor_id: vendor,
            device_id: device,
            name,
            local_pus,
        };
        // Display/3D controllers (class 0x03xx) of the compute-GPU vendors (NVIDIA, AMD);
        // network (0x02xx) and InfiniBand (0x0c06) adapters.
        let is_gpu = class >> 8 == 0x03 && matches!(vendor, 0x10de | 0x1002);
        if is_gpu {
            gpus.push(pci);
        } else if class >> 8 == 0x02 || class == 0x0c06 {
            nics.push(pci);
        }
    }
    gpus.sort_by(|a, b| a.bus_id.cmp(&b.bus_id));
    nics.sort_by(|a, b| a.bus_id.cmp(&b.bus_id));
    Ok(Machine {
        host: super::hostname(),
        cores,
        packages: packages.len().max(1) as u32,
        numa_nodes: numa.len().max(1) as u32,
        gpus,
        nics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovers_this_machine() {
        let m = discover().unwrap();
        assert!(!m.cores.is_empty());
        // every CPU this thread may run on is a PU hwloc knows
        let allowed = crate::topology::affinity::current_thread_cpus().unwrap();
        assert!(
            allowed.iter().all(|c| m.pus().contains(c)),
            "{allowed:?} vs {:?}",
            m.pus()
        );
        assert!(m
            .cores
            .iter()
            .all(|c| c.numa < m.numa_nodes && c.package < m.packages));
    }
}
