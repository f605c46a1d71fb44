//! GPU ceilings read live: the GPUs CUDA shows this process (`cuDevice*` queries, no context),
//! each found in NVML by UUID (NVML ignores `CUDA_VISIBLE_DEVICES`, so its indices would name
//! other GPUs), its values read call by call and mapped by the pure
//! [`crate::topology::ceilings::gpu`]. A call the board does not support leaves that value
//! unknown with the call and its error; no NVML leaves every driver value unknown with one
//! sentence, while the peaks still come from the table by the CUDA device name.

use super::error::Panicked;
use super::probe::{self, GpuInfo};
use crate::results::ceilings::{Ceiling, CeilingWarning};
use crate::topology::ceilings::gpu::{self, NvLink, NvidiaValues, Pcie};
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id::{
    NVML_FI_DEV_NVLINK_LINK_COUNT, NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON,
};
use nvml_wrapper::{Device, Nvml};

/// The label of every ceiling and warning read through the stand-in NVML.
pub const STANDIN_NVML: &str =
    "STAND-IN (scalebench's stand-in NVML, values from SCALEBENCH_STANDIN_NVML or its default; not a GPU's)";

/// The GPUs' ceilings and warnings, or why there are none (no CUDA driver or no GPU: one
/// sentence).
pub fn read() -> Result<(Vec<Ceiling>, Vec<CeilingWarning>), String> {
    let gpus = probe::list_gpus().map_err(|e| format!("no GPU ceilings: {e}"))?;
    let values = values(&gpus);
    let standin = gpus.iter().any(|g| g.name == probe::STANDIN_DEVICE_NAME);
    let mut c = gpu::ceilings(&gpu::GpuValues {
        nvidia: values,
        amd: Vec::new(),
    });
    if standin {
        c.label(STANDIN_NVML);
    }
    Ok((c.ceilings, c.warnings))
}

/// A launch's host: its GPUs' ceilings and warnings added to the host leader's record, or one
/// unknown ceiling saying why there are none.
pub fn record(h: &mut crate::results::ceilings::HostCeilings) {
    match read() {
        Ok((c, w)) => {
            h.ceilings.extend(c);
            h.warnings.extend(w);
        }
        Err(why) => h.ceilings.push(Ceiling {
            id: "gpu".into(),
            what: "GPU ceilings".into(),
            unit: crate::results::ceilings::CeilingUnit::Gbps,
            value: None,
            source: crate::results::ceilings::CeilingSource::Unknown,
            detail: why,
        }),
    }
}

/// Each GPU's NVML values, named `gpu{CUDA ordinal}`; every value unknown, with the reason,
/// when NVML cannot be opened or does not know the GPU.
pub fn values(gpus: &[GpuInfo]) -> Vec<NvidiaValues> {
    let nvml = probe::guarded("NVML panicked while loading", || {
        Nvml::init().map_err(|e| Opening::Nvml(open_sentence(&e)))
    });
    gpus.iter()
        .map(|g| match &nvml {
            Err(e) => NvidiaValues::name_only(g.ordinal, g.name.clone(), &e.to_string()),
            Ok(nvml) => probe::guarded("NVML panicked while reading", || {
                Ok::<_, Opening>(one(nvml, g))
            })
            .unwrap_or_else(|e| NvidiaValues::name_only(g.ordinal, g.name.clone(), &e.to_string())),
        })
        .collect()
}

/// Why NVML gave nothing.
#[derive(Debug, thiserror::Error)]
enum Opening {
    #[error("{0}")]
    Nvml(String),
    #[error(transparent)]
    Panicked(#[from] Panicked),
}

/// One sentence for NVML that does not open.
fn open_sentence(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(_) => format!(
            "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) could not be loaded ({e}): \
             install the driver, or add the directory holding libnvidia-ml.so.1 to \
             LD_LIBRARY_PATH"
        ),
        _ => format!("NVML did not start (nvmlInit_v2: {e})"),
    }
}

/// `call: error` for a value NVML did not give.
fn failed(call: &str, e: &NvmlError) -> String {
    format!("{call}: {e}")
}

/// One GPU's values, call by call.
fn one(nvml: &Nvml, g: &GpuInfo) -> NvidiaValues {
    let d = match nvml.device_by_uuid(g.uuid.as_str()) {
        Ok(d) => d,
        Err(e) => {
            let why = format!(
                "NVML does not know CUDA GPU {} ({}): {}",
                g.ordinal,
                g.uuid,
                failed("nvmlDeviceGetHandleByUUID", &e)
            );
            return NvidiaValues::name_only(g.ordinal, g.name.clone(), &why);
        }
    };
    // CUDA's name where NVML gives none (the table is keyed on it)
    let mut v = NvidiaValues::named(g.ordinal, d.name().unwrap_or_else(|_| g.name.clone()));
    match pcie(&d) {
        Ok(p) => v.pcie = Some(p),
        Err(why) => {
            v.not_read.insert("pcie".into(), why);
        }
    }
    match nvlink(&d) {
        Ok(l) => v.nvlink = Some(l),
        Err(why) => {
            v.not_read.insert("nvlink".into(), why);
        }
    }
    let mut put = |key: &str, call: &str, r: Result<u32, NvmlError>| match r {
        Ok(x) => Some(x),
        Err(e) => {
            v.not_read.insert(key.into(), failed(call, &e));
            None
        }
    };
    let bus = put(
        "memory_bus_width_bits",
        "nvmlDeviceGetMemoryBusWidth",
        d.memory_bus_width(),
    );
    let mem = put(
        "memory_clock_max_mhz",
        "nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)",
        d.max_clock_info(Clock::Memory),
    );
    let sm = put(
        "sm_clock_max_mhz",
        "nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM)",
        d.max_clock_info(Clock::SM),
    );
    v.memory_bus_width_bits = bus;
    v.memory_clock_max_mhz = mem;
    v.sm_clock_max_mhz = sm;
    v
}

/// Current and maximum generation and width (the GPU's own maximum generation has no call in
/// nvml-wrapper, so it stays unread).
fn pcie(d: &Device<'_>) -> Result<Pcie, String> {
    let f = |call: &'static str| move |e: NvmlError| failed(call, &e);
    Ok(Pcie {
        gen_current: d
            .current_pcie_link_gen()
            .map_err(f("nvmlDeviceGetCurrPcieLinkGeneration"))?,
        width_current: d
            .current_pcie_link_width()
            .map_err(f("nvmlDeviceGetCurrPcieLinkWidth"))?,
        gen_max: d
            .max_pcie_link_gen()
            .map_err(f("nvmlDeviceGetMaxPcieLinkGeneration"))?,
        width_max: d
            .max_pcie_link_width()
            .map_err(f("nvmlDeviceGetMaxPcieLinkWidth"))?,
        gpu_gen_max: None,
    })
}

/// NVLink: links present and the common per-link speed (field values), and which links are up
/// (`nvmlDeviceGetNvLinkState` per link).
fn nvlink(d: &Device<'_>) -> Result<NvLink, String> {
    let call = "nvmlDeviceGetFieldValues";
    let ids = [
        FieldId(NVML_FI_DEV_NVLINK_LINK_COUNT),
        FieldId(NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON),
    ];
    let got = d.field_values_for(&ids).map_err(|e| failed(call, &e))?;
    let field = |i: usize, name: &str| -> Result<u64, String> {
        let s: &Result<FieldValueSample, NvmlError> = got
            .get(i)
            .ok_or_else(|| format!("{call}({name}): no value returned"))?;
        let s = s
            .as_ref()
            .map_err(|e| failed(&format!("{call}({name})"), e))?;
        let v = s
            .value
            .as_ref()
            .map_err(|e| failed(&format!("{call}({name})"), e))?;
        sample_u64(v).ok_or_else(|| format!("{call}({name}): not an unsigned value ({v:?})"))
    };
    let present = field(0, "NVML_FI_DEV_NVLINK_LINK_COUNT")?;
    if present == 0 {
        return Ok(NvLink {
            links_present: 0,
            links_active: 0,
            speed_mbps_per_link: 0,
        });
    }
    let speed = field(1, "NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON")?;
    let mut active = 0;
    for link in 0..present as u32 {
        match d.link_wrapper_for(link).is_active() {
            Ok(true) => active += 1,
            Ok(false) => {}
            Err(e) => {
                return Err(failed(
                    &format!("nvmlDeviceGetNvLinkState(link {link})"),
                    &e,
                ))
            }
        }
    }
    Ok(NvLink {
        links_present: present as u32,
        links_active: active,
        speed_mbps_per_link: u32::try_from(speed).unwrap_or(u32::MAX),
    })
}

fn sample_u64(v: &nvml_wrapper::enums::device::SampleValue) -> Option<u64> {
    use nvml_wrapper::enums::device::SampleValue as S;
    match *v {
        S::U32(x) => Some(u64::from(x)),
        S::U64(x) => Some(x),
        S::I64(x) => u64::try_from(x).ok(),
        S::F64(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_every_gpu_value_is_unknown_with_one_sentence() {
        // This machine has no NVIDIA driver (CI): a made-up GPU gets its name-only values.
        let g = GpuInfo {
            ordinal: 1,
            name: "NVIDIA A100-SXM4-40GB".into(),
            uuid: "GPU-00000000-0000-0000-0000-000000000000".into(),
            pci_bus_id: "0000:00:00.0".into(),
            memory_bytes: 0,
            compute_capability: (8, 0),
            multiprocessors: 108,
            visible_as: None,
            nearby_cpus: None,
            numa_node: None,
            l2_cache_bytes: None,
        };
        let v = values(std::slice::from_ref(&g));
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].index, v[0].pcie.as_ref()), (1, None));
        let why = &v[0].not_read["pcie"];
        // no driver here: NVML does not load; on a GPU node: the all-zero UUID is not found
        assert!(
            why.contains("NVML (libnvidia-ml.so.1") || why.contains("does not know CUDA GPU 1"),
            "{why}"
        );
        assert!(!why.contains('\n'));
        assert_eq!(
            sample_u64(&nvml_wrapper::enums::device::SampleValue::U32(18)),
            Some(18)
        );
        assert_eq!(
            sample_u64(&nvml_wrapper::enums::device::SampleValue::F64(1.0)),
            None
        );
    }
}
