//! GCD telemetry through AMD SMI (`libamd_smi.so`, opened at run time): the [`Probe`] the
//! ROCm backend's sampler reads during each case, as NVML is on CUDA.
//!
//! AMD SMI lists every GCD of the node (an MI250X is two processors, each its own PCI
//! function) and ignores `ROCR_VISIBLE_DEVICES` / `HIP_VISIBLE_DEVICES`, which renumber
//! HIP's devices only; so each GCD is found by its PCI address, never by HIP ordinal.
//!
//! ABI (amd_smi/amdsmi.h, checked against the headers of AMD SMI as shipped with ROCm 6.0
//! through 6.4): `amdsmi_status_t` is an int, 0 success; `AMDSMI_INIT_AMD_GPUS` is 1 << 1;
//! handles are pointers; `amdsmi_bdf_t` is a 64-bit union, function in bits 0–2, device 3–7,
//! bus 8–15, domain 16–63; `amdsmi_engine_usage_t` starts `gfx_activity, umc_activity,
//! mm_activity` (u32 percent) before its reserved words, in every version; `amdsmi_clk_info_t`
//! starts with the current clock (u32 MHz, `cur_clk` in 6.0, `clk` later);
//! `AMDSMI_CLK_TYPE_GFX` is 0, `AMDSMI_TEMPERATURE_TYPE_HOTSPOT` (junction) 1,
//! `AMDSMI_TEMP_CURRENT` 0, and the temperature is an i64 in °C. The structs are read into
//! buffers larger than any version's struct, so a newer, longer layout cannot overrun them.
//!
//! Power: `amdsmi_power_info_t` changed layout twice, so where its fields sit is read from
//! the library's own version (`amdsmi_get_lib_version`) — see [`PowerLayout`]. The figure is
//! AMD SMI's *socket* power: on an MI250X the package of two GCDs, reported on one of them;
//! the record says so (`power_scope`).

use super::error::RocmError;
use super::kfd::Bdf;
use super::loader::{self, entry_points};
use crate::backend::telemetry::{Probe, Sample};
use std::ffi::{c_int, c_void};

/// `amdsmi_processor_handle` / `amdsmi_socket_handle`.
type Handle = *mut c_void;

const INIT_AMD_GPUS: u64 = 1 << 1;
const CLK_TYPE_GFX: c_int = 0;
const TEMPERATURE_TYPE_HOTSPOT: c_int = 1;
const TEMP_CURRENT: c_int = 0;
/// What newer AMD SMI writes in a field the GPU does not report.
const NOT_SUPPORTED_U32: u32 = u32::MAX;
/// Longer than any version's `amdsmi_engine_usage_t` (64 bytes), `amdsmi_clk_info_t`,
/// `amdsmi_version_t` (24 bytes) or `amdsmi_power_info_t` (184 bytes from AMD SMI 26).
const STRUCT_WORDS: usize = 64;
/// What the power figure covers (the record's `power_scope`).
pub(crate) const POWER_SCOPE: &str = "socket";

/// Names tried: the development link first; AMD SMI's sonames follow its own major version.
const NAMES: &[&str] = &["libamd_smi.so"];

entry_points! {
    /// AMD SMI's entry points, each resolved once when telemetry starts.
    struct Smi in "libamd_smi.so" since "AMD SMI of ROCm 6.0" {
        init = "amdsmi_init": fn(u64) -> c_int;
        shut_down = "amdsmi_shut_down": fn() -> c_int;
        socket_handles = "amdsmi_get_socket_handles": fn(*mut u32, *mut Handle) -> c_int;
        processor_handles = "amdsmi_get_processor_handles": fn(Handle, *mut u32, *mut Handle) -> c_int;
        device_bdf = "amdsmi_get_gpu_device_bdf": fn(Handle, *mut u64) -> c_int;
        activity = "amdsmi_get_gpu_activity": fn(Handle, *mut u32) -> c_int;
        clock_info = "amdsmi_get_clock_info": fn(Handle, c_int, *mut u32) -> c_int;
        temp_metric = "amdsmi_get_temp_metric": fn(Handle, c_int, c_int, *mut i64) -> c_int;
        lib_version = "amdsmi_get_lib_version": fn(*mut u32) -> c_int;
        power_info = "amdsmi_get_power_info": fn(Handle, *mut u32) -> c_int;
    }
}

/// Where `amdsmi_power_info_t` keeps the socket power, by AMD SMI release (checked against
/// ROCm/amdsmi's headers at rocm-5.7.0, 6.0.0, 6.1.0, 6.2.0 and its ROCm 6.3 branch, and the
/// struct references of AMD SMI 6.4.1, 7.0, 7.1 and develop). Word = u32 offset / 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PowerLayout {
    /// AMD SMI 23.0–23.3 (ROCm 5.7): `u32 average_socket_power` first.
    Average,
    /// AMD SMI 23.4–24.x (ROCm 6.0–6.3): `u32 current_socket_power, u32 average_socket_power`.
    CurrentAverage,
    /// AMD SMI 25 (ROCm 6.4) and later (7.x): `u64 socket_power, u32 current_socket_power,
    /// u32 average_socket_power`, then the voltages (u32 in 25, u64 from 26: after the fields
    /// read here, so one layout serves both).
    SocketCurrentAverage,
}

/// The library's version and the power layout it implies, from the words
/// `amdsmi_get_lib_version` wrote. Up to AMD SMI 24 `amdsmi_version_t` is `year, major, minor`
/// (23.4.0 …); ROCm 6.4's AMD SMI 25 dropped the year from its version but kept the struct's
/// `year` member unused, so the major (25) is the second word; from 26 (ROCm 7.0) the member
/// is gone and the major comes first. `None` for a version no header above describes.
pub(crate) fn power_layout(words: &[u32]) -> (String, Option<PowerLayout>) {
    const NO_YEAR: std::ops::Range<u32> = 25..100;
    match words {
        [_, major, minor, ..] if NO_YEAR.contains(major) => (
            format!("{major}.{minor}"),
            Some(PowerLayout::SocketCurrentAverage),
        ),
        [major, minor, release, ..] if NO_YEAR.contains(major) => (
            format!("{major}.{minor}.{release}"),
            Some(PowerLayout::SocketCurrentAverage),
        ),
        [year @ (23 | 24), major, minor, ..] => {
            let layout = if *year == 23 && *major < 4 {
                PowerLayout::Average
            } else {
                PowerLayout::CurrentAverage
            };
            (format!("{year}.{major}.{minor}"), Some(layout))
        }
        [a, b, c, ..] => (format!("{a}.{b}.{c}"), None),
        _ => ("?".into(), None),
    }
}

/// Above any accelerator's socket power: a figure past it is a misread layout, not a reading.
const POWER_W_CEILING: f64 = 10_000.0;

/// The socket power in watts from the words `amdsmi_get_power_info` wrote: the current power
/// where the GPU reports it (MI300 and later), else the average (MI200 and earlier). Zero and
/// "not supported" (all ones) mean no reading: an MI250X reports its package on one GCD and
/// zero on the other.
pub(crate) fn socket_power_w(layout: PowerLayout, words: &[u32]) -> Option<f64> {
    let u32_w = |v: u32| (v != 0 && v != NOT_SUPPORTED_U32).then_some(f64::from(v));
    let candidates: Vec<Option<f64>> = match layout {
        PowerLayout::Average => vec![u32_w(words[0])],
        PowerLayout::CurrentAverage => vec![u32_w(words[0]), u32_w(words[1])],
        PowerLayout::SocketCurrentAverage => {
            let socket = u64::from(words[0]) | (u64::from(words[1]) << 32);
            let socket = (socket != 0 && socket != u64::MAX && socket != u64::from(u32::MAX))
                .then_some(socket as f64);
            vec![socket, u32_w(words[2]), u32_w(words[3])]
        }
    };
    candidates
        .into_iter()
        .flatten()
        .find(|w| *w < POWER_W_CEILING)
}

/// Why AMD SMI cannot watch the GCDs (a sentence for the launch's warnings).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SmiError {
    /// The library is missing or lacks an entry point.
    #[error("no GPU telemetry: {0}")]
    Library(RocmError),
    #[error("no GPU telemetry: {call} failed in AMD SMI (libamd_smi.so), status {status}: check that the amdgpu driver is loaded and this user may read /dev/kfd")]
    Call { call: &'static str, status: c_int },
    #[error("no GPU telemetry: AMD SMI lists no GCD at PCI address {0} (it lists {1})")]
    UnknownGcd(String, String),
    #[error("no GPU telemetry: HIP gave {0:?} as a PCI address")]
    BadAddress(String),
}

/// AMD SMI and the processor handle of each GCD the rank drives (local order).
pub(crate) struct SmiProbe {
    smi: Smi,
    gcds: Vec<Handle>,
    /// `None`: a release whose power layout is unknown, so power is not read.
    power: Option<PowerLayout>,
    /// What the probe cannot read, for the launch's warnings.
    note: Option<String>,
}

/// `amdsmi_bdf_t`'s packed value of a PCI address.
fn packed(b: &Bdf) -> u64 {
    (u64::from(b.domain) << 16)
        | (u64::from(b.bus) << 8)
        | (u64::from(b.device) << 3)
        | u64::from(b.function)
}

/// A packed `amdsmi_bdf_t` as HIP writes addresses.
fn unpacked(v: u64) -> String {
    format!(
        "{:04x}:{:02x}:{:02x}.{:x}",
        v >> 16,
        (v >> 8) & 0xff,
        (v >> 3) & 0x1f,
        v & 7
    )
}

impl Smi {
    fn call(&self, call: &'static str, status: c_int) -> Result<(), SmiError> {
        if status == 0 {
            Ok(())
        } else {
            Err(SmiError::Call { call, status })
        }
    }

    /// Every GPU processor AMD SMI lists, with its packed PCI address.
    fn processors(&self) -> Result<Vec<(Handle, u64)>, SmiError> {
        let mut n = 0u32;
        // SAFETY: a null array asks for the count only.
        self.call("amdsmi_get_socket_handles", unsafe {
            (self.socket_handles)(&mut n, std::ptr::null_mut())
        })?;
        let mut sockets = vec![std::ptr::null_mut(); n as usize];
        // SAFETY: the array holds `n` handles.
        self.call("amdsmi_get_socket_handles", unsafe {
            (self.socket_handles)(&mut n, sockets.as_mut_ptr())
        })?;
        sockets.truncate(n as usize);
        let mut out = Vec::new();
        for s in sockets {
            let mut m = 0u32;
            // SAFETY: as above, per socket.
            self.call("amdsmi_get_processor_handles", unsafe {
                (self.processor_handles)(s, &mut m, std::ptr::null_mut())
            })?;
            let mut procs = vec![std::ptr::null_mut(); m as usize];
            // SAFETY: the array holds `m` handles.
            self.call("amdsmi_get_processor_handles", unsafe {
                (self.processor_handles)(s, &mut m, procs.as_mut_ptr())
            })?;
            procs.truncate(m as usize);
            for p in procs {
                let mut bdf = 0u64;
                // SAFETY: AMD SMI writes one 64-bit amdsmi_bdf_t; a processor without one
                // (a CPU on a mixed node) is skipped.
                if unsafe { (self.device_bdf)(p, &mut bdf) } == 0 {
                    out.push((p, bdf));
                }
            }
        }
        Ok(out)
    }
}

impl SmiProbe {
    /// Opens AMD SMI and finds the GCD at each of `addresses` (HIP's PCI addresses).
    pub(crate) fn open(addresses: Vec<String>) -> Result<SmiProbe, SmiError> {
        let lib = loader::open("AMD SMI", "libamd_smi.so", NAMES).map_err(SmiError::Library)?;
        let smi = Smi::resolve(lib).map_err(SmiError::Library)?;
        // SAFETY: takes flags only.
        smi.call("amdsmi_init", unsafe { (smi.init)(INIT_AMD_GPUS) })?;
        // Owned from here, so an error below still shuts AMD SMI down (the drop).
        let mut probe = SmiProbe {
            smi,
            gcds: Vec::new(),
            power: None,
            note: None,
        };
        let mut words = [0u32; STRUCT_WORDS];
        // SAFETY: AMD SMI writes one amdsmi_version_t (at most 24 bytes), shorter than the buffer.
        let v = unsafe { (probe.smi.lib_version)(words.as_mut_ptr()) };
        let (version, layout) = if v == 0 {
            power_layout(&words)
        } else {
            (
                format!("unknown (amdsmi_get_lib_version: status {v})"),
                None,
            )
        };
        probe.power = layout;
        if layout.is_none() {
            probe.note = Some(format!(
                "no GPU power: AMD SMI {version} is not a release whose amdsmi_power_info_t layout scalebench knows (23.0 to 26 and later); utilisation, clock and temperature are read"
            ));
        }
        let listed = probe.smi.processors()?;
        for a in &addresses {
            let want = Bdf::parse(a)
                .map(|b| packed(&b))
                .ok_or_else(|| SmiError::BadAddress(a.clone()))?;
            let Some(&(h, _)) = listed.iter().find(|(_, bdf)| *bdf == want) else {
                let all: Vec<String> = listed.iter().map(|(_, b)| unpacked(*b)).collect();
                return Err(SmiError::UnknownGcd(a.clone(), all.join(", ")));
            };
            probe.gcds.push(h);
        }
        Ok(probe)
    }
}

impl Drop for SmiProbe {
    fn drop(&mut self) {
        // SAFETY: pairs the successful amdsmi_init of `open`; no handle is used after it.
        let _ = unsafe { (self.smi.shut_down)() };
    }
}

/// A u32 figure, `None` where the call failed or the field says "not supported".
fn figure(status: c_int, v: u32) -> Option<f64> {
    (status == 0 && v != NOT_SUPPORTED_U32).then_some(f64::from(v))
}

impl Probe for SmiProbe {
    type Error = SmiError;

    fn devices(&self) -> usize {
        self.gcds.len()
    }

    /// A figure AMD SMI cannot read on this GCD is left out, as NVML's are.
    fn sample(&mut self, dev: usize) -> Result<Sample, SmiError> {
        let h = self.gcds[dev];
        let mut usage = [0u32; STRUCT_WORDS];
        // SAFETY: AMD SMI writes one amdsmi_engine_usage_t, shorter than the buffer.
        let a = unsafe { (self.smi.activity)(h, usage.as_mut_ptr()) };
        let mut clk = [0u32; STRUCT_WORDS];
        // SAFETY: AMD SMI writes one amdsmi_clk_info_t, shorter than the buffer.
        let c = unsafe { (self.smi.clock_info)(h, CLK_TYPE_GFX, clk.as_mut_ptr()) };
        let mut temp = 0i64;
        // SAFETY: AMD SMI writes one i64.
        let t =
            unsafe { (self.smi.temp_metric)(h, TEMPERATURE_TYPE_HOTSPOT, TEMP_CURRENT, &mut temp) };
        let power_w = self.power.and_then(|layout| {
            let mut info = [0u32; STRUCT_WORDS];
            // SAFETY: AMD SMI writes one amdsmi_power_info_t (at most 184 bytes), shorter
            // than the buffer.
            let p = unsafe { (self.smi.power_info)(h, info.as_mut_ptr()) };
            (p == 0).then(|| socket_power_w(layout, &info)).flatten()
        });
        Ok(Sample {
            gpu_util_percent: figure(a, usage[0]),
            mem_util_percent: figure(a, usage[1]),
            sm_clock_mhz: figure(c, clk[0]),
            power_w,
            temperature_c: (t == 0).then_some(temp as f64),
        })
    }

    fn note(&self) -> Option<String> {
        self.note.clone()
    }

    fn power_scope(&self) -> Option<&'static str> {
        self.power.map(|_| POWER_SCOPE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_pack_as_amdsmi_bdf_t() {
        let b = Bdf::parse("0000:c1:00.0").unwrap();
        assert_eq!(packed(&b), 0xc100);
        let b = Bdf::parse("fffe:5b:03.1").unwrap();
        assert_eq!(packed(&b), (0xfffe << 16) | (0x5b << 8) | (3 << 3) | 1);
        assert_eq!(unpacked(packed(&b)), "fffe:5b:03.1");
    }

    #[test]
    fn unsupported_and_failed_figures_are_left_out() {
        assert_eq!(figure(0, 87), Some(87.0));
        assert_eq!(figure(0, u32::MAX), None);
        assert_eq!(figure(2, 87), None);
    }

    #[test]
    fn the_version_names_the_power_layout() {
        use PowerLayout::*;
        // amdsmi_version_t up to 24: year, major, minor, release
        assert_eq!(
            power_layout(&[23, 2, 0, 0]),
            ("23.2.0".into(), Some(Average))
        );
        assert_eq!(power_layout(&[23, 4, 0, 0]).1, Some(CurrentAverage));
        assert_eq!(power_layout(&[24, 6, 2, 0]).1, Some(CurrentAverage));
        assert_eq!(power_layout(&[24, 7, 1, 0]).1, Some(CurrentAverage));
        // 25 (ROCm 6.4): the year member kept, unused (left as the caller zeroed it, or
        // set), the major second
        assert_eq!(
            power_layout(&[0, 25, 3, 0]),
            ("25.3".into(), Some(SocketCurrentAverage))
        );
        assert_eq!(power_layout(&[25, 25, 3, 0]).1, Some(SocketCurrentAverage));
        // from 26: major, minor, release
        assert_eq!(
            power_layout(&[26, 1, 0, 0]),
            ("26.1.0".into(), Some(SocketCurrentAverage))
        );
        assert_eq!(power_layout(&[25, 3, 0, 0]).1, Some(SocketCurrentAverage));
        // nothing any header describes
        assert_eq!(power_layout(&[22, 1, 0, 0]), ("22.1.0".into(), None));
        assert_eq!(power_layout(&[0, 0, 0, 0]).1, None);
        assert_eq!(power_layout(&[]).1, None);
    }

    #[test]
    fn socket_power_is_read_where_each_layout_keeps_it() {
        use PowerLayout::*;
        let mut w = [0u32; 8];
        // ROCm 5.7: average first
        w[0] = 212;
        assert_eq!(socket_power_w(Average, &w), Some(212.0));
        // ROCm 6.0-6.3: current (MI300) before average (MI200)
        w = [0, 245, 0, 0, 0, 0, 0, 0];
        assert_eq!(socket_power_w(CurrentAverage, &w), Some(245.0));
        w = [u32::MAX, 245, 0, 0, 0, 0, 0, 0];
        assert_eq!(socket_power_w(CurrentAverage, &w), Some(245.0));
        w = [610, 580, 0, 0, 0, 0, 0, 0];
        assert_eq!(socket_power_w(CurrentAverage, &w), Some(610.0));
        // ROCm 6.4 / 7.x: a u64 socket power, then current and average
        w = [640, 0, 600, 590, 0, 0, 0, 0];
        assert_eq!(socket_power_w(SocketCurrentAverage, &w), Some(640.0));
        w = [u32::MAX, 0, u32::MAX, 250, 0, 0, 0, 0];
        assert_eq!(socket_power_w(SocketCurrentAverage, &w), Some(250.0));
        // the second GCD of an MI250X: nothing
        assert_eq!(socket_power_w(SocketCurrentAverage, &[0; 8]), None);
        // a 6.2 struct read with the 7.x layout: its two u32s make one u64 past any
        // socket's power, refused, and the words after it are zero
        w = [245, 250, 0, 0, 0, 0, 0, 0];
        assert_eq!(socket_power_w(SocketCurrentAverage, &w), None);
    }

    /// Without AMD SMI (CI) opening is one sentence, never a panic.
    #[test]
    fn without_amd_smi_opening_is_one_sentence() {
        match SmiProbe::open(vec!["0000:c1:00.0".into()]) {
            Err(e) => {
                let e = e.to_string();
                assert!(e.starts_with("no GPU telemetry: "), "{e}");
                assert!(!e.contains('\n'), "{e}");
            }
            // A node whose first GCD sits at that address (LUMI's do): found once.
            Ok(p) => assert_eq!(p.devices(), 1),
        }
    }
}
