//! `scalebench topo`: this machine's topology (hwloc) and the CPUs each binding policy would
//! give. Here rather than in `main`, which only wires the command line to the library.

use super::binding::Reserved;
use crate::error::{Error, Result};

/// Prints the topology report for `devices_per_node` devices (default: the GPUs hwloc finds,
/// or 2) with `reserved` cores kept free, as text followed by `gpus()` (what the GPU driver
/// says, which this module cannot ask: it sits below the backends) or as JSON.
#[cfg(feature = "mpi")]
pub fn topo(
    reserved: &Reserved,
    devices_per_node: Option<u32>,
    json: bool,
    gpus: impl FnOnce() -> String,
) -> Result<u8> {
    use super::{hwloc, report};
    let machine = hwloc::discover()?;
    let devices = devices_per_node.unwrap_or(if machine.gpus.is_empty() {
        2
    } else {
        machine.gpus.len() as u32
    });
    if devices == 0 {
        return Err(Error::Input("--devices-per-node 0: give at least 1".into()));
    }
    let r = report::topo_report(machine, devices, reserved)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r).map_err(|e| Error::Runtime(e.to_string()))?
        );
    } else {
        print!("{}", report::render_text(&r));
        print!("{}", gpus());
    }
    Ok(0)
}

/// Without MPI there is no hwloc: `topo` says how to get it.
#[cfg(not(feature = "mpi"))]
pub fn topo(
    _reserved: &Reserved,
    _devices_per_node: Option<u32>,
    _json: bool,
    _gpus: impl FnOnce() -> String,
) -> Result<u8> {
    Err(Error::Environment("this scalebench was built without the `mpi` feature, which brings hwloc: rebuild with default features to use `topo`".into()))
}
