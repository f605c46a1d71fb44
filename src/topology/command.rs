//! `scalebench topo`: this machine's topology (hwloc) and the CPUs each binding policy would
//! give. Here rather than in `main`, which only wires the command line to the library.

use super::binding::{BindError, Reserved};

/// Why `topo` failed; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    #[cfg(feature = "mpi")]
    #[error(transparent)]
    Hwloc(#[from] super::hwloc::HwlocError),
    #[error("--devices-per-node 0: give at least 1")]
    NoDevices,
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    #[error("this scalebench was built without the `mpi` feature, which brings hwloc: rebuild with default features to use `topo`")]
    NoHwloc,
}

impl TopoError {
    /// Bad input or an unusable machine (2), or writing the JSON failed (4).
    pub fn exit_code(&self) -> u8 {
        match self {
            TopoError::Json(_) => crate::exit::EXIT_RUNTIME,
            _ => crate::exit::EXIT_BAD_INPUT,
        }
    }
}

type Result<T, E = TopoError> = std::result::Result<T, E>;

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
        return Err(TopoError::NoDevices);
    }
    let r = report::topo_report(machine, devices, reserved)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r).map_err(TopoError::Json)?
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
    Err(TopoError::NoHwloc)
}
