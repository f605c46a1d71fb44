//! Finding CUDA without ever panicking: which libraries load, which devices exist, which
//! device each rank drives, and what each GPU is (name, memory, PCI bus id, nearby CPUs).
//!
//! cudarc loads libcuda, libcublas and libnccl on first use and panics when one is missing, so
//! every first touch goes through a presence check (`is_culib_present`, which only tries to
//! `dlopen` the candidate names) and then through [`guarded`], which turns any remaining panic
//! (a missing symbol in an old library) into an error sentence. Device listing uses the driver
//! API's `cuDevice*` queries only: it never creates a context.

use super::error::Panicked;
use super::{CudaError, CudaResult};
use cudarc::driver::result as dres;
use cudarc::driver::sys as dsys;

// `guarded` lives with the error it makes (error.rs), so error.rs needs nothing of this file;
// it stays nameable here, where the first touches of the libraries are.
pub use super::error::guarded;

/// Which CUDA libraries can be loaded on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Libraries {
    pub driver: bool,
    pub cublas: bool,
    pub nccl: bool,
}

/// The file names cudarc tries for `lib` (e.g. `cuda` → `libcuda.so`, …, `libcuda.so.1`).
pub fn candidates(lib: &str) -> Vec<String> {
    cudarc::get_lib_name_candidates(lib)
}

/// Tries to load each library (and unloads it again). Never panics.
pub fn libraries() -> Libraries {
    // Each `is_culib_present` only `dlopen`s candidate file names and drops the handle;
    // loading runs the library's initialisers, which any use of CUDA runs anyway.
    Libraries {
        // SAFETY: as above (the driver).
        driver: unsafe { cudarc::driver::sys::is_culib_present() },
        // SAFETY: as above (cuBLAS).
        cublas: unsafe { cudarc::cublas::sys::is_culib_present() },
        // SAFETY: as above (NCCL).
        nccl: unsafe { cudarc::nccl::sys::is_culib_present() },
    }
}

/// The distinct `lib{name}.so*` file names cudarc tries for `lib`, in its order.
fn so_names(lib: &str) -> Vec<String> {
    let prefix = format!("lib{lib}.so");
    let mut out: Vec<String> = Vec::new();
    for c in candidates(lib) {
        if c.starts_with(&prefix) && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// The sentence for a machine without the driver library.
pub fn no_driver_message() -> String {
    format!(
        "no CUDA driver found: libcuda.so.1 could not be loaded (tried {}): install the NVIDIA driver, or add the directory holding libcuda.so.1 to LD_LIBRARY_PATH (`nvidia-smi` lists the GPUs where the driver works)",
        so_names("cuda").join(", ")
    )
}

/// The sentence for a machine whose NCCL cannot be loaded (collectives then fail).
pub fn no_nccl_message() -> String {
    format!(
        "NCCL could not be loaded (tried {}): NCCL installs libnccl.so.2, and cudarc looks for libnccl.so, so create the link (`ln -s libnccl.so.2 libnccl.so` in NCCL's lib directory, or in a directory of your own listed in LD_LIBRARY_PATH)",
        so_names("nccl").join(", ")
    )
}

/// The sentence for a machine whose cuBLAS cannot be loaded (GEMM cases then fail).
pub fn no_cublas_message() -> String {
    format!(
        "cuBLAS could not be loaded (tried {}): install the CUDA toolkit's libcublas, or add its directory to LD_LIBRARY_PATH",
        so_names("cublas").join(", ")
    )
}

/// `CUDA_VISIBLE_DEVICES` as this process sees it, for messages.
pub fn visible_devices_env() -> String {
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) => format!("CUDA_VISIBLE_DEVICES={v:?}"),
        Err(_) => "CUDA_VISIBLE_DEVICES unset".to_string(),
    }
}

/// The entries of `CUDA_VISIBLE_DEVICES` that CUDA honours, in ordinal order.
///
/// As CUDA documents it: a comma-separated list of device indices or UUIDs (`GPU-…`, `MIG-…`);
/// the list ends at the first entry that is neither, so `0,1,-1,2` makes devices 0 and 1
/// visible and an empty value makes none visible. Entries are trimmed.
pub fn parse_visible_devices(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in value.split(',') {
        let e = raw.trim();
        let index = !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit());
        let uuid = e.starts_with("GPU-") || e.starts_with("MIG-");
        if !(index || uuid) {
            break;
        }
        out.push(e.to_string());
    }
    out
}

/// One GPU as the driver describes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuInfo {
    /// CUDA ordinal in this process (after `CUDA_VISIBLE_DEVICES`).
    pub ordinal: u32,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, unique per device (and per MIG instance).
    pub uuid: String,
    /// PCI address as Linux writes it: `dddd:bb:dd.0` (lower-case hex).
    pub pci_bus_id: String,
    /// Total device memory, bytes.
    pub memory_bytes: u64,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
    /// The `CUDA_VISIBLE_DEVICES` entry this ordinal came from, when the variable is set.
    pub visible_as: Option<String>,
    /// CPUs nearest the device (Linux cpulist from sysfs `local_cpulist`), where readable.
    pub nearby_cpus: Option<String>,
    /// NUMA node of the device's PCI slot, where the kernel knows it.
    pub numa_node: Option<i32>,
    /// L2 cache, bytes, where the driver says.
    pub l2_cache_bytes: Option<u64>,
}

impl GpuInfo {
    /// One line for provenance: name, bus id, memory, capability, UUID.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} ({}, {:.1} GiB, cc {}.{}, {} SMs, {}, CUDA ordinal {}",
            self.name,
            self.pci_bus_id,
            self.memory_bytes as f64 / f64::from(1u32 << 30),
            self.compute_capability.0,
            self.compute_capability.1,
            self.multiprocessors,
            self.uuid,
            self.ordinal
        );
        if let Some(v) = &self.visible_as {
            s.push_str(&format!(" = CUDA_VISIBLE_DEVICES entry {v}"));
        }
        s.push(')');
        s
    }
}

/// `dddd:bb:dd.0` from the PCI domain, bus and device numbers.
pub fn format_pci_bus_id(domain: i32, bus: i32, device: i32) -> String {
    format!("{domain:04x}:{bus:02x}:{device:02x}.0")
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (as nvidia-smi prints it) from 16 bytes.
pub fn format_uuid(bytes: &[u8; 16]) -> String {
    let h: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// `major.minor` from a CUDA version number (`13000` → `13.0`, `12080` → `12.8`).
pub fn format_cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The CPUs and NUMA node sysfs gives for a PCI device, where readable.
fn sysfs_locality(pci_bus_id: &str) -> (Option<String>, Option<i32>) {
    let dir = std::path::Path::new("/sys/bus/pci/devices").join(pci_bus_id);
    let cpus = std::fs::read_to_string(dir.join("local_cpulist"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let numa = std::fs::read_to_string(dir.join("numa_node"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .filter(|n| *n >= 0);
    (cpus, numa)
}

/// The device name of scalebench's stand-in CUDA libraries (`standin/`, CPU test doubles).
pub const STANDIN_DEVICE_NAME: &str = "scalebench stand-in";

/// The warning and label every run on the stand-in libraries carries.
pub const STANDIN_LABEL: &str = "STAND-IN: the CUDA libraries are scalebench's CPU test doubles (standin/, SCALEBENCH_STANDIN=1), not a GPU: results prove the device path runs and validates; no time, bandwidth or GFLOP/s here is a GPU's";

/// The oldest driver this build runs on: cudarc's `cuda-11040` bindings call only driver
/// entry points that CUDA 11.4 drivers (R470) have.
pub const DRIVER_FLOOR: i32 = 11040;

/// Driver entry points the backend calls (directly or through cudarc), checked at set-up so
/// that a driver lacking one is refused with a sentence instead of cudarc panicking on first
/// use, wherever that is.
pub const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetUuid",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuLaunchHostFunc",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// cuBLAS entry points the backend calls.
pub const CUBLAS_SYMBOLS: &[&str] = &[
    "cublasCreate_v2",
    "cublasDestroy_v2",
    "cublasSetStream_v2",
    "cublasGetVersion_v2",
    "cublasGemmStridedBatchedEx",
];

/// NCCL entry points the backend calls (`ncclGetLastError`, NCCL ≥ 2.13, is optional: error
/// texts go without it).
pub const NCCL_SYMBOLS: &[&str] = &[
    "ncclGetVersion",
    "ncclGetUniqueId",
    "ncclCommInitRank",
    "ncclCommAbort",
    "ncclCommGetAsyncError",
    "ncclGetErrorString",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclAllReduce",
    "ncclReduce",
    "ncclBroadcast",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclSend",
    "ncclRecv",
];

/// Which of `names` a library lacks, given its look-up.
fn missing_in(has: impl Fn(&str) -> bool, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| !has(n))
        .map(|n| n.to_string())
        .collect()
}

// The three look-ups below: `culib()` loads the library (callers checked that it is present)
// and `get` only looks a symbol up; nothing is called through it.

/// The driver entry points the loaded libcuda lacks (empty when it has them all).
fn missing_driver_symbols() -> Result<Vec<String>, Panicked> {
    guarded("loading the CUDA driver", || {
        // SAFETY: a symbol look-up in the loaded driver; the symbol is never called.
        let has =
            |n: &str| unsafe { dsys::culib().get::<unsafe extern "C" fn()>(n.as_bytes()) }.is_ok();
        Ok(missing_in(has, DRIVER_SYMBOLS))
    })
}

/// The cuBLAS entry points the loaded libcublas lacks.
pub fn missing_cublas_symbols() -> Result<Vec<String>, Panicked> {
    guarded("loading cuBLAS", || {
        let has = |n: &str| {
            // SAFETY: a symbol look-up in the loaded library; the symbol is never called.
            unsafe { cudarc::cublas::sys::culib().get::<unsafe extern "C" fn()>(n.as_bytes()) }
                .is_ok()
        };
        Ok(missing_in(has, CUBLAS_SYMBOLS))
    })
}

/// The NCCL entry points the loaded libnccl lacks.
pub fn missing_nccl_symbols() -> Result<Vec<String>, Panicked> {
    guarded("loading NCCL", || {
        let has = |n: &str| {
            // SAFETY: a symbol look-up in the loaded library; the symbol is never called.
            unsafe { cudarc::nccl::sys::culib().get::<unsafe extern "C" fn()>(n.as_bytes()) }
                .is_ok()
        };
        Ok(missing_in(has, NCCL_SYMBOLS))
    })
}

/// The sentence for a library that lacks entry points this build calls.
pub fn missing_symbols_message(lib: &str, missing: &[String], fix: &str) -> String {
    format!(
        "{lib} lacks {} that scalebench calls ({}): {fix}",
        if missing.len() == 1 {
            "an entry point"
        } else {
            "entry points"
        },
        missing.join(", ")
    )
}

/// The sentence for a driver older than [`DRIVER_FLOOR`], or `None`.
pub fn old_driver_message(version: i32) -> Option<String> {
    (version < DRIVER_FLOOR).then(|| {
        format!(
            "the NVIDIA driver (libcuda.so.1) supports CUDA {}, older than CUDA {}, the oldest this build runs on: update the driver to R470 or newer (`nvidia-smi` shows its version)",
            format_cuda_version(version),
            format_cuda_version(DRIVER_FLOOR)
        )
    })
}

/// The driver's version code, checked against [`DRIVER_FLOOR`], and every entry point the
/// backend calls checked present. Never panics.
fn check_driver() -> CudaResult<()> {
    let version = guarded("cuDriverGetVersion", || {
        let mut v = 0;
        // SAFETY: writes one int; callable before cuInit.
        unsafe { dsys::cuDriverGetVersion(&mut v) }
            .result()
            .map_err(CudaError::driver)?;
        Ok(v)
    })
    .map_err(|e: CudaError| {
        e.context("no CUDA driver found: the driver library could not be used")
    })?;
    if let Some(m) = old_driver_message(version) {
        return Err(CudaError::Library(m));
    }
    let missing = missing_driver_symbols()?;
    if !missing.is_empty() {
        return Err(CudaError::Library(missing_symbols_message(
            &format!(
                "the NVIDIA driver (libcuda.so.1, CUDA {})",
                format_cuda_version(version)
            ),
            &missing,
            "update the NVIDIA driver, or put the directory of a complete libcuda.so.1 first in LD_LIBRARY_PATH",
        )));
    }
    Ok(())
}

/// Initialises the driver and counts the visible devices, with the sentences the backend
/// fails with (`no CUDA driver found: …`, `no CUDA device: …`, a driver too old or
/// incomplete). Never panics.
pub fn device_count() -> CudaResult<u32> {
    if !libraries().driver {
        return Err(CudaError::Library(no_driver_message()));
    }
    check_driver()?;
    guarded(
        "no CUDA driver found: the driver library could not be used",
        || match dres::init().and_then(|()| dres::device::get_count()) {
            Ok(0) => Err(CudaError::NoDevices {
                visible: visible_devices_env(),
            }),
            Ok(n) => Ok(n as u32),
            Err(code) => Err(CudaError::DriverStart {
                code,
                visible: visible_devices_env(),
            }),
        },
    )
}

/// The driver's CUDA version (e.g. `13.0`): the newest CUDA the installed driver supports.
pub fn driver_version() -> CudaResult<String> {
    guarded("cuDriverGetVersion", || {
        let mut v = 0;
        // SAFETY: the driver is loaded and initialised (callers ran `device_count` first);
        // cuDriverGetVersion writes one int through a valid pointer.
        unsafe { dsys::cuDriverGetVersion(&mut v) }
            .result()
            .map_err(CudaError::driver)?;
        Ok(format_cuda_version(v))
    })
}

/// Describes the device at `ordinal` with `cuDevice*` queries (no context is created).
pub fn gpu_info(ordinal: u32) -> CudaResult<GpuInfo> {
    guarded("querying a CUDA device", || {
        let e = |what: &str| CudaError::driver_call(format!("{what} of device {ordinal}"));
        let dev = dres::device::get(ordinal as i32).map_err(e("cuDeviceGet"))?;
        let attr = |a: dsys::CUdevice_attribute| {
            // SAFETY: `dev` was returned by cuDeviceGet just above.
            unsafe { dres::device::get_attribute(dev, a) }.map_err(e("cuDeviceGetAttribute"))
        };
        use dsys::CUdevice_attribute as A;
        let pci_bus_id = format_pci_bus_id(
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
        );
        let uuid = dres::device::get_uuid(dev).map_err(e("cuDeviceGetUuid"))?;
        let uuid_bytes: [u8; 16] = uuid.bytes.map(|b| b as u8);
        // SAFETY: `dev` was returned by cuDeviceGet just above.
        let memory_bytes =
            unsafe { dres::device::total_mem(dev) }.map_err(e("cuDeviceTotalMem"))? as u64;
        let (nearby_cpus, numa_node) = sysfs_locality(&pci_bus_id);
        let visible_as = std::env::var("CUDA_VISIBLE_DEVICES")
            .ok()
            .and_then(|v| parse_visible_devices(&v).get(ordinal as usize).cloned());
        Ok(GpuInfo {
            ordinal,
            name: dres::device::get_name(dev).map_err(e("cuDeviceGetName"))?,
            uuid: format_uuid(&uuid_bytes),
            pci_bus_id,
            memory_bytes,
            compute_capability: (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            visible_as,
            nearby_cpus,
            numa_node,
            // Optional: a driver (or stand-in) without the attribute leaves it unknown.
            l2_cache_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
                .ok()
                .and_then(|b| u64::try_from(b).ok())
                .filter(|b| *b > 0),
        })
    })
}

/// Every GPU this process can see (for `scalebench topo`). Without a driver or a device this
/// is an `Err` sentence; it never panics and creates no CUDA context.
pub fn list_gpus() -> CudaResult<Vec<GpuInfo>> {
    let n = device_count()?;
    (0..n).map(gpu_info).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_devices_follow_cuda_rules() {
        assert_eq!(parse_visible_devices("0,1"), vec!["0", "1"]);
        assert_eq!(parse_visible_devices(" 2 , 3"), vec!["2", "3"]);
        // the list ends at the first invalid entry
        assert_eq!(parse_visible_devices("0,1,-1,2"), vec!["0", "1"]);
        assert_eq!(parse_visible_devices("-1"), Vec::<String>::new());
        assert_eq!(parse_visible_devices(""), Vec::<String>::new());
        assert_eq!(parse_visible_devices("NoDevFiles"), Vec::<String>::new());
        assert_eq!(
            parse_visible_devices("GPU-8932f937-d72c,MIG-1a2b,x,3"),
            vec!["GPU-8932f937-d72c", "MIG-1a2b"]
        );
    }

    #[test]
    fn formats_match_the_tools() {
        assert_eq!(format_pci_bus_id(0, 0x3b, 0), "0000:3b:00.0");
        assert_eq!(format_pci_bus_id(1, 255, 31), "0001:ff:1f.0");
        let mut b = [0u8; 16];
        for (i, x) in b.iter_mut().enumerate() {
            *x = i as u8 * 17;
        }
        assert_eq!(format_uuid(&b), "GPU-00112233-4455-6677-8899-aabbccddeeff");
        assert_eq!(format_cuda_version(13000), "13.0");
        assert_eq!(format_cuda_version(12080), "12.8");
    }

    #[test]
    fn guarded_turns_a_panic_into_a_typed_error() {
        let r: CudaResult<()> = guarded("loading libfoo", || panic!("Missing symbol cuFoo"));
        let e = r.unwrap_err();
        assert!(
            matches!(&e, CudaError::Panicked(p) if p.what == "loading libfoo"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "loading libfoo: Missing symbol cuFoo");
        let r: CudaResult<u32> = guarded("x", || Ok(7));
        assert_eq!(r.unwrap(), 7);
        let r: CudaResult<u32> = guarded("x", || Err(CudaError::Check("plain".into())));
        assert_eq!(r.unwrap_err().to_string(), "plain");
        // nested: the inner panic is caught by the inner guard, the outer one goes on
        let r: Result<Panicked, Panicked> = guarded("outer", || {
            let inner: Result<(), Panicked> = guarded("inner", || panic!("boom"));
            Ok(inner.unwrap_err())
        });
        assert_eq!(r.unwrap().to_string(), "inner: boom");
    }

    #[test]
    fn sentences_name_the_libraries() {
        let m = no_driver_message();
        assert!(m.starts_with("no CUDA driver found: "), "{m}");
        assert!(m.contains("libcuda.so.1"), "{m}");
        assert!(no_nccl_message().contains("ln -s libnccl.so.2 libnccl.so"));
        // cudarc never tries NCCL's own soname: that is why the link is needed
        assert!(!so_names("nccl").contains(&"libnccl.so.2".to_string()));
        assert!(so_names("nccl").contains(&"libnccl.so".to_string()));
        assert!(no_cublas_message().contains("libcublas.so"));
        let names = so_names("cuda");
        let mut dedup = names.clone();
        dedup.dedup();
        assert_eq!(names, dedup);
    }

    #[test]
    fn the_driver_floor_is_the_bindings_version() {
        assert_eq!(old_driver_message(DRIVER_FLOOR), None);
        assert_eq!(old_driver_message(13000), None);
        let m = old_driver_message(11020).unwrap();
        assert!(
            m.starts_with(
                "the NVIDIA driver (libcuda.so.1) supports CUDA 11.2, older than CUDA 11.4"
            ),
            "{m}"
        );
        assert!(m.contains("R470"), "{m}");
        // the bindings' event timing is the pre-12.8 entry point
        assert!(DRIVER_SYMBOLS.contains(&"cuEventElapsedTime"));
        assert!(!DRIVER_SYMBOLS.iter().any(|s| s.ends_with("ElapsedTime_v2")));
    }

    #[test]
    fn missing_symbols_are_listed_with_the_fix() {
        let present = ["cuInit", "cuDeviceGet"];
        let missing = missing_in(
            |n| present.contains(&n),
            &["cuInit", "cuFoo", "cuDeviceGet", "cuBar"],
        );
        assert_eq!(missing, vec!["cuFoo", "cuBar"]);
        let m = missing_symbols_message("the NVIDIA driver (libcuda.so.1)", &missing, "update it");
        assert_eq!(
            m,
            "the NVIDIA driver (libcuda.so.1) lacks entry points that scalebench calls (cuFoo, cuBar): update it"
        );
        let one = missing_symbols_message("NCCL (libnccl.so)", &missing[..1], "x");
        assert!(one.contains("lacks an entry point"), "{one}");
    }

    /// On this machine (CI has no GPU) the probe must answer with a sentence, not a panic.
    #[test]
    fn probing_never_panics() {
        match list_gpus() {
            Ok(gpus) => {
                for g in gpus {
                    assert!(g.pci_bus_id.len() == 12, "{g:?}");
                }
            }
            Err(e) => assert!(
                e.to_string().starts_with("no CUDA driver found: ")
                    || e.to_string().starts_with("no CUDA device: "),
                "{e}"
            ),
        }
    }
}
