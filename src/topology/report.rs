//! `scalebench topo`: the machine as hwloc sees it, and the CPUs each binding policy would
//! give each device of a node (pure function of a [`Machine`]).

use super::affinity::format_cpulist;
use super::binding::{decide, BindError, BindRequest, Reserved};
use super::machine::Machine;
use crate::params::Binding;
use serde::Serialize;
use std::fmt::Write;

/// What `topo --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct TopoReport {
    pub machine: Machine,
    pub devices_per_node: u32,
    /// Per policy, per device: the CPUs (cpulist, or "unbound") and any note.
    pub bindings: Vec<PolicyBinding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PolicyBinding {
    pub policy: Binding,
    pub devices: Vec<DeviceCpus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceCpus {
    pub device: u32,
    pub cpus: String,
    pub applied: Binding,
    pub note: Option<String>,
}

/// Computes every policy's binding for `devices_per_node` devices.
pub fn topo_report(
    machine: Machine,
    devices_per_node: u32,
    reserved: &Reserved,
) -> Result<TopoReport, BindError> {
    let mut bindings = Vec::new();
    for policy in Binding::ALL {
        let mut devices = Vec::new();
        for device in 0..devices_per_node {
            let d = decide(
                &machine,
                &BindRequest {
                    policy: *policy,
                    devices_on_node: devices_per_node,
                    device,
                    host_share: (0, 1),
                    reserved: reserved.clone(),
                    // The topo report shows hwloc's view; a site map comes with a plan.
                    gpu_numa: Vec::new(),
                },
            )?;
            devices.push(DeviceCpus {
                device,
                cpus: d.cpus.map_or("unbound".to_string(), |c| format_cpulist(&c)),
                applied: d.applied,
                note: d.note,
            });
        }
        bindings.push(PolicyBinding {
            policy: *policy,
            devices,
        });
    }
    Ok(TopoReport {
        machine,
        devices_per_node,
        bindings,
    })
}

/// The human form.
pub fn render_text(r: &TopoReport) -> String {
    let m = &r.machine;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "host {}: {}, {}, {}, {}",
        m.host,
        crate::units::count(m.packages as usize, "package", "packages"),
        crate::units::count(m.numa_nodes as usize, "NUMA node", "NUMA nodes"),
        crate::units::count(m.cores.len(), "core", "cores"),
        crate::units::count(m.pus().len(), "PU", "PUs")
    );
    for p in 0..m.packages {
        let _ = writeln!(s, "  package {p}");
        for n in 0..m.numa_nodes {
            let cores: Vec<_> = m
                .cores
                .iter()
                .filter(|c| c.package == p && c.numa == n)
                .collect();
            if cores.is_empty() {
                continue;
            }
            let list: Vec<String> = cores
                .iter()
                .map(|c| format!("{}[{}]", c.index, format_cpulist(&c.pus)))
                .collect();
            let _ = writeln!(s, "    NUMA {n}: cores {}", list.join(" "));
        }
    }
    if m.gpus.is_empty() {
        let _ = writeln!(s, "  GPUs: none found");
    }
    for g in &m.gpus {
        let _ = writeln!(
            s,
            "  GPU {} ({}, {:04x}:{:04x}) near CPUs {}",
            g.bus_id,
            g.name,
            g.vendor_id,
            g.device_id,
            format_cpulist(&g.local_pus)
        );
    }
    for n in &m.nics {
        let _ = writeln!(
            s,
            "  NIC {} ({}) near CPUs {}",
            n.bus_id,
            n.name,
            format_cpulist(&n.local_pus)
        );
    }
    let _ = writeln!(
        s,
        "binding of {} per node:",
        crate::units::count(r.devices_per_node as usize, "device", "devices")
    );
    for b in &r.bindings {
        let cells: Vec<String> = b
            .devices
            .iter()
            .map(|d| format!("dev{}→{}", d.device, d.cpus))
            .collect();
        let _ = writeln!(s, "  {:<7} {}", b.policy.to_string(), cells.join("  "));
        let mut notes: Vec<&str> = b.devices.iter().filter_map(|d| d.note.as_deref()).collect();
        notes.dedup();
        for n in notes {
            let _ = writeln!(s, "          note: {n}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_covers_every_policy_and_device() {
        let r = topo_report(Machine::synthetic("h", 2, 1, 4, 2), 2, &Reserved::default()).unwrap();
        assert_eq!(r.bindings.len(), Binding::ALL.len());
        let core = r
            .bindings
            .iter()
            .find(|b| b.policy == Binding::Core)
            .unwrap();
        assert_eq!(core.devices[1].cpus, "8-15");
        let text = render_text(&r);
        assert!(
            text.contains("2 packages, 2 NUMA nodes, 8 cores, 16 PUs"),
            "{text}"
        );
        assert!(
            text.contains("GPUs: none found") && text.contains("fell back to core"),
            "{text}"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["bindings"][0]["devices"][0]["cpus"], "unbound");
    }
}
