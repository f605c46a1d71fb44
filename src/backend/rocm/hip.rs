//! The HIP runtime (`libamdhip64.so`): the subset the ROCm backend calls — devices and their
//! properties, memory, copies, streams, events and their elapsed time, errors, the version.
//!
//! `hipGetDeviceProperties` is left out on purpose: ROCm 6 headers map it to
//! `hipGetDevicePropertiesR0600`, so the plain symbol returns the older struct layout
//! (../shared/notes/rocm.md); the name, memory and PCI address come from their own calls.

use super::error::{RocmError, RocmResult};
use super::loader::{self, entry_points};
use std::ffi::{c_char, c_float, c_int, c_uint, c_void, CStr};

/// A HIP stream (`hipStream_t`).
pub(crate) type Stream = *mut c_void;
/// A HIP event (`hipEvent_t`).
pub(crate) type Event = *mut c_void;

/// `hipMemcpyKind` values.
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(crate) enum CopyKind {
    HostToDevice = 1,
    DeviceToHost = 2,
    DeviceToDevice = 3,
}

/// A host function enqueued on a stream (`hipHostFn_t`).
pub(crate) type HostFn = unsafe extern "C" fn(*mut c_void);

/// `hipErrorNoDevice`.
const NO_DEVICE: c_int = 100;

/// `hipDeviceAttributeL2CacheSize` (bytes), 19 in `hipDeviceAttribute_t` of
/// hip/hip_runtime_api.h since ROCm 5.0 renumbered the enum (CUDA-compatible attributes
/// alphabetical from 0; ROCm 5.7 through 6.x and 7.x keep 19). Not CUDA's 38.
const ATTRIBUTE_L2_CACHE_SIZE: c_int = 19;

/// Names tried, in order: the development link, then ROCm 7, 6 and 5's sonames.
const NAMES: &[&str] = &[
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];

/// The oldest HIP runtime the backend uses (ROCm 5.7), as `hipRuntimeGetVersion` encodes it.
pub(crate) const HIP_FLOOR: i32 = 50_700_000;

entry_points! {
    /// The HIP runtime's entry points, each resolved once at set-up.
    pub(crate) struct Hip in "libamdhip64.so" since "HIP 5.7" {
        runtime_get_version = "hipRuntimeGetVersion": fn(*mut c_int) -> c_int;
        get_device_count = "hipGetDeviceCount": fn(*mut c_int) -> c_int;
        set_device = "hipSetDevice": fn(c_int) -> c_int;
        device_get_name = "hipDeviceGetName": fn(*mut c_char, c_int, c_int) -> c_int;
        device_total_mem = "hipDeviceTotalMem": fn(*mut usize, c_int) -> c_int;
        device_get_pci_bus_id = "hipDeviceGetPCIBusId": fn(*mut c_char, c_int, c_int) -> c_int;
        device_get_attribute = "hipDeviceGetAttribute": fn(*mut c_int, c_int, c_int) -> c_int;
        malloc = "hipMalloc": fn(*mut *mut c_void, usize) -> c_int;
        free = "hipFree": fn(*mut c_void) -> c_int;
        memset = "hipMemset": fn(*mut c_void, c_int, usize) -> c_int;
        memcpy_async = "hipMemcpyAsync": fn(*mut c_void, *const c_void, usize, c_int, Stream) -> c_int;
        stream_create = "hipStreamCreate": fn(*mut Stream) -> c_int;
        stream_destroy = "hipStreamDestroy": fn(Stream) -> c_int;
        stream_synchronize = "hipStreamSynchronize": fn(Stream) -> c_int;
        event_create = "hipEventCreate": fn(*mut Event) -> c_int;
        event_destroy = "hipEventDestroy": fn(Event) -> c_int;
        event_record = "hipEventRecord": fn(Event, Stream) -> c_int;
        stream_wait_event = "hipStreamWaitEvent": fn(Stream, Event, c_uint) -> c_int;
        launch_host_func = "hipLaunchHostFunc": fn(Stream, HostFn, *mut c_void) -> c_int;
        event_synchronize = "hipEventSynchronize": fn(Event) -> c_int;
        event_elapsed_time = "hipEventElapsedTime": fn(*mut c_float, Event, Event) -> c_int;
        device_synchronize = "hipDeviceSynchronize": fn() -> c_int;
        get_error_name = "hipGetErrorName": fn(c_int) -> *const c_char;
        get_error_string = "hipGetErrorString": fn(c_int) -> *const c_char;
        // batch_matmul's overlapped step: pinned staging, so its copies run asynchronously.
        host_malloc = "hipHostMalloc": fn(*mut *mut c_void, usize, c_uint) -> c_int;
        host_free = "hipHostFree": fn(*mut c_void) -> c_int;
    }
}

/// `major.minor.patch` of `hipRuntimeGetVersion`'s code (major·10^7 + minor·10^5 + patch).
pub(crate) fn format_version(code: i32) -> String {
    format!(
        "{}.{}.{}",
        code / 10_000_000,
        (code / 100_000) % 100,
        code % 100_000
    )
}

/// A C string the library returned (static storage), or `fallback`.
fn text(p: *const c_char, fallback: &str) -> String {
    if p.is_null() {
        return fallback.to_string();
    }
    // SAFETY: HIP returns pointers to NUL-terminated static strings for its error names and
    // descriptions; a null pointer was handled above.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Hip {
    /// Opens the HIP runtime, resolves every entry point, and checks its version.
    pub(crate) fn open() -> RocmResult<Hip> {
        let lib = loader::open("HIP runtime", "libamdhip64.so", NAMES)?;
        let hip = Hip::resolve(lib)?;
        let v = hip.version()?;
        if v < HIP_FLOOR {
            return Err(RocmError::TooOld {
                library: "libamdhip64.so",
                found: format!("HIP {}", format_version(v)),
                minimum: "HIP 5.7.0",
            });
        }
        Ok(hip)
    }

    /// `Ok` for `hipSuccess`, else the call's error with HIP's name and description.
    pub(crate) fn check(&self, call: &'static str, code: c_int) -> RocmResult<()> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: both take any error code and return a static string (or null).
        let (name, desc) = unsafe { ((self.get_error_name)(code), (self.get_error_string)(code)) };
        Err(RocmError::Hip {
            call,
            code,
            name: text(name, "hipError?"),
            text: text(desc, "no description"),
        })
    }

    /// `hipRuntimeGetVersion`'s code.
    pub(crate) fn version(&self) -> RocmResult<i32> {
        let mut v = 0;
        // SAFETY: HIP writes one int.
        self.check("hipRuntimeGetVersion", unsafe {
            (self.runtime_get_version)(&mut v)
        })?;
        Ok(v)
    }

    /// Devices the runtime sees (0 for `hipErrorNoDevice`).
    pub(crate) fn device_count(&self) -> RocmResult<i32> {
        let mut n = 0;
        // SAFETY: HIP writes one int.
        let r = unsafe { (self.get_device_count)(&mut n) };
        if r == NO_DEVICE {
            return Ok(0);
        }
        self.check("hipGetDeviceCount", r)?;
        Ok(n)
    }

    /// Makes `device` current on this thread (every later call of the thread goes to it).
    pub(crate) fn set_device(&self, device: i32) -> RocmResult<()> {
        // SAFETY: takes an ordinal; HIP checks it.
        self.check("hipSetDevice", unsafe { (self.set_device)(device) })
    }

    /// The device's name.
    pub(crate) fn device_name(&self, device: i32) -> RocmResult<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: HIP writes at most `len` bytes, NUL-terminated, into the buffer.
        self.check("hipDeviceGetName", unsafe {
            (self.device_get_name)(buf.as_mut_ptr(), buf.len() as c_int, device)
        })?;
        Ok(text(buf.as_ptr(), ""))
    }

    /// The device's PCI address (`domain:bus:device.function`).
    pub(crate) fn pci_bus_id(&self, device: i32) -> RocmResult<String> {
        let mut buf = [0 as c_char; 64];
        // SAFETY: as for the name.
        self.check("hipDeviceGetPCIBusId", unsafe {
            (self.device_get_pci_bus_id)(buf.as_mut_ptr(), buf.len() as c_int, device)
        })?;
        Ok(text(buf.as_ptr(), ""))
    }

    /// The device's L2 cache, bytes (one GCD's on an MI250X: 8 MiB); `None` where HIP reports
    /// none (0 or negative).
    pub(crate) fn l2_cache_bytes(&self, device: i32) -> RocmResult<Option<u64>> {
        let mut v: c_int = 0;
        // SAFETY: HIP writes one int; the attribute is a valid hipDeviceAttribute_t.
        self.check("hipDeviceGetAttribute", unsafe {
            (self.device_get_attribute)(&mut v, ATTRIBUTE_L2_CACHE_SIZE, device)
        })?;
        Ok(u64::try_from(v).ok().filter(|&b| b > 0))
    }

    /// The device's memory, bytes.
    pub(crate) fn total_mem_bytes(&self, device: i32) -> RocmResult<usize> {
        let mut b = 0usize;
        // SAFETY: HIP writes one size_t.
        self.check("hipDeviceTotalMem", unsafe {
            (self.device_total_mem)(&mut b, device)
        })?;
        Ok(b)
    }

    /// `bytes` of memory on the current device.
    pub(crate) fn malloc(&self, bytes: usize) -> RocmResult<*mut c_void> {
        let mut p = std::ptr::null_mut();
        // SAFETY: HIP writes one pointer.
        self.check("hipMalloc", unsafe { (self.malloc)(&mut p, bytes) })?;
        Ok(p)
    }

    /// Frees memory from [`Hip::malloc`].
    ///
    /// # Safety
    /// `p` came from `hipMalloc`, is freed once, and no queued work uses it any more.
    pub(crate) unsafe fn free(&self, p: *mut c_void) -> RocmResult<()> {
        // SAFETY: the caller's guarantee.
        self.check("hipFree", unsafe { (self.free)(p) })
    }

    /// Sets `bytes` bytes at `p` to `value` (synchronous for the host).
    ///
    /// # Safety
    /// `[p, p + bytes)` lies in one allocation of the current device.
    pub(crate) unsafe fn memset(&self, p: *mut c_void, value: u8, bytes: usize) -> RocmResult<()> {
        // SAFETY: the caller's guarantee.
        self.check("hipMemset", unsafe {
            (self.memset)(p, c_int::from(value), bytes)
        })
    }

    /// Enqueues a copy of `bytes` on `stream`.
    ///
    /// # Safety
    /// Both ranges are valid for `bytes` (device memory of the stream's device on the device
    /// side) until the stream has run the copy, and `stream` is live.
    pub(crate) unsafe fn memcpy_async(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        kind: CopyKind,
        stream: Stream,
    ) -> RocmResult<()> {
        // SAFETY: the caller's guarantee.
        self.check("hipMemcpyAsync", unsafe {
            (self.memcpy_async)(dst, src, bytes, kind as c_int, stream)
        })
    }

    /// A new stream on the current device.
    pub(crate) fn stream_create(&self) -> RocmResult<Stream> {
        let mut s = std::ptr::null_mut();
        // SAFETY: HIP writes one handle.
        self.check("hipStreamCreate", unsafe { (self.stream_create)(&mut s) })?;
        Ok(s)
    }

    /// # Safety
    /// `s` is a live stream with no work left, destroyed once.
    pub(crate) unsafe fn stream_destroy(&self, s: Stream) -> RocmResult<()> {
        // SAFETY: the caller's guarantee.
        self.check("hipStreamDestroy", unsafe { (self.stream_destroy)(s) })
    }

    /// Waits for everything queued on `s` (a live stream).
    pub(crate) fn stream_synchronize(&self, s: Stream) -> RocmResult<()> {
        // SAFETY: HIP checks the handle; the backend passes only its live streams.
        self.check("hipStreamSynchronize", unsafe {
            (self.stream_synchronize)(s)
        })
    }

    /// A new timing event on the current device.
    pub(crate) fn event_create(&self) -> RocmResult<Event> {
        let mut e = std::ptr::null_mut();
        // SAFETY: HIP writes one handle.
        self.check("hipEventCreate", unsafe { (self.event_create)(&mut e) })?;
        Ok(e)
    }

    /// # Safety
    /// `e` is a live event no queued work records any more, destroyed once.
    pub(crate) unsafe fn event_destroy(&self, e: Event) -> RocmResult<()> {
        // SAFETY: the caller's guarantee.
        self.check("hipEventDestroy", unsafe { (self.event_destroy)(e) })
    }

    /// Records `e` on `s` (both live, of the current device).
    pub(crate) fn event_record(&self, e: Event, s: Stream) -> RocmResult<()> {
        // SAFETY: HIP checks the handles; the backend passes only its live ones.
        self.check("hipEventRecord", unsafe { (self.event_record)(e, s) })
    }

    /// Makes later work on `s` wait for the last record of `e` (both live, of the current
    /// device); the host does not wait.
    pub(crate) fn stream_wait_event(&self, s: Stream, e: Event) -> RocmResult<()> {
        // SAFETY: HIP checks the handles; the backend passes only its live ones. Flags 0.
        self.check("hipStreamWaitEvent", unsafe {
            (self.stream_wait_event)(s, e, 0)
        })
    }

    /// Enqueues `f(arg)` on `s`, run on a runtime thread after the work before it.
    ///
    /// # Safety
    /// `f` calls no HIP function and is sound for `arg` whenever the stream runs it.
    pub(crate) unsafe fn launch_host_func(
        &self,
        s: Stream,
        f: HostFn,
        arg: *mut c_void,
    ) -> RocmResult<()> {
        // SAFETY: the caller's guarantee; the stream is live.
        self.check("hipLaunchHostFunc", unsafe {
            (self.launch_host_func)(s, f, arg)
        })
    }

    /// Seconds from `a` to `b` (waits for `b`).
    pub(crate) fn elapsed_s(&self, a: Event, b: Event) -> RocmResult<f64> {
        // SAFETY: a live event of the backend's.
        self.check("hipEventSynchronize", unsafe {
            (self.event_synchronize)(b)
        })?;
        let mut ms: c_float = 0.0;
        // SAFETY: HIP writes one float; both events are live and recorded.
        self.check("hipEventElapsedTime", unsafe {
            (self.event_elapsed_time)(&mut ms, a, b)
        })?;
        Ok(f64::from(ms) * 1e-3)
    }

    /// Waits for all work of the current device.
    pub(crate) fn device_synchronize(&self) -> RocmResult<()> {
        // SAFETY: no arguments.
        self.check("hipDeviceSynchronize", unsafe {
            (self.device_synchronize)()
        })
    }
}

/// Pinned host memory (batch_matmul's overlapped step).
impl Hip {
    /// `bytes` of page-locked host memory (`hipHostMallocDefault`), for the current device.
    pub(crate) fn host_malloc(&self, bytes: usize) -> RocmResult<*mut c_void> {
        let mut p = std::ptr::null_mut();
        // SAFETY: HIP writes one pointer. Flags 0: hipHostMallocDefault.
        self.check("hipHostMalloc", unsafe {
            (self.host_malloc)(&mut p, bytes, 0)
        })?;
        Ok(p)
    }

    /// Frees memory from [`Hip::host_malloc`].
    ///
    /// # Safety
    /// `p` came from `hipHostMalloc`, is freed once, and no queued copy uses it any more.
    pub(crate) unsafe fn host_free(&self, p: *mut c_void) -> RocmResult<()> {
        // SAFETY: the caller's guarantee.
        self.check("hipHostFree", unsafe { (self.host_free)(p) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_decode_hips_encoding() {
        assert_eq!(format_version(60_241_134), "6.2.41134");
        assert_eq!(format_version(HIP_FLOOR), "5.7.0");
    }
}
