//! GPU telemetry through NVML (`libnvidia-ml.so.1`, loaded at run time by nvml-wrapper): the
//! [`Probe`] the CUDA backend's sampler reads during each case.
//!
//! Devices are found by UUID, which CUDA and NVML share; NVML ignores
//! `CUDA_VISIBLE_DEVICES`, so CUDA ordinals would name the wrong GPU.

use super::error::Panicked;
use crate::backend::telemetry::{Probe, Sample};
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

/// NVML and the UUIDs of the GPUs it watches (one handle lookup per reading: a handle
/// borrows the library, so it cannot sit beside it in one struct).
pub(crate) struct NvmlProbe {
    nvml: Nvml,
    uuids: Vec<String>,
}

/// Why NVML cannot be used (a sentence for the launch's warnings) or stopped reading a GPU
/// (recorded in that device's telemetry).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NvmlProbeError {
    #[error("no GPU telemetry: NVML (libnvidia-ml.so.1, part of the NVIDIA driver) could not be loaded: {0}")]
    NotLoaded(#[source] NvmlError),
    #[error("no GPU telemetry: NVML did not start: {0}")]
    DidNotStart(#[source] NvmlError),
    #[error("no GPU telemetry: NVML does not know GPU {uuid}: {source}")]
    UnknownGpu { uuid: String, source: NvmlError },
    #[error("NVML lost GPU {uuid}: {source}")]
    LostGpu { uuid: String, source: NvmlError },
    /// nvml-wrapper panicked while loading (caught by `guarded`).
    #[error(transparent)]
    Panicked(#[from] Panicked),
}

/// Why NVML did not start: not loadable at all, or failing once loaded.
fn open_error(e: NvmlError) -> NvmlProbeError {
    match e {
        NvmlError::LibloadingError(_) => NvmlProbeError::NotLoaded(e),
        _ => NvmlProbeError::DidNotStart(e),
    }
}

impl NvmlProbe {
    /// Loads NVML and checks that every GPU can be found.
    pub(crate) fn open(uuids: Vec<String>) -> Result<NvmlProbe, NvmlProbeError> {
        let nvml = super::probe::guarded("NVML", || Nvml::init().map_err(open_error))?;
        for u in &uuids {
            nvml.device_by_uuid(u.as_str())
                .map_err(|source| NvmlProbeError::UnknownGpu {
                    uuid: u.clone(),
                    source,
                })?;
        }
        Ok(NvmlProbe { nvml, uuids })
    }
}

/// A figure NVML could not read (e.g. `NotSupported` on some boards) is left out.
fn figure(r: Result<u32, NvmlError>, scale: f64) -> Option<f64> {
    r.ok().map(|v| f64::from(v) * scale)
}

impl Probe for NvmlProbe {
    type Error = NvmlProbeError;

    fn devices(&self) -> usize {
        self.uuids.len()
    }

    fn sample(&mut self, dev: usize) -> Result<Sample, NvmlProbeError> {
        let uuid = &self.uuids[dev];
        let d =
            self.nvml
                .device_by_uuid(uuid.as_str())
                .map_err(|source| NvmlProbeError::LostGpu {
                    uuid: uuid.clone(),
                    source,
                })?;
        let util = d.utilization_rates().ok();
        Ok(Sample {
            gpu_util_percent: util.as_ref().map(|u| f64::from(u.gpu)),
            mem_util_percent: util.as_ref().map(|u| f64::from(u.memory)),
            sm_clock_mhz: figure(d.clock_info(Clock::SM), 1.0),
            // NVML reports milliwatts.
            power_w: figure(d.power_usage(), 1e-3),
            temperature_c: figure(d.temperature(TemperatureSensor::Gpu), 1.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_opening_is_one_sentence_not_a_panic() {
        match NvmlProbe::open(vec!["GPU-00000000-0000-0000-0000-000000000000".into()]) {
            // This machine has no NVIDIA driver (CI): loading fails with a sentence.
            Err(e) => {
                let e = e.to_string();
                assert!(e.starts_with("no GPU telemetry: "), "{e}");
                assert!(!e.contains('\n'), "{e}");
            }
            // A GPU node: the made-up UUID must not be found.
            Ok(_) => panic!("NVML found a GPU with an all-zero UUID"),
        }
    }

    #[test]
    fn missing_figures_are_left_out() {
        assert_eq!(figure(Ok(250_000), 1e-3), Some(250.0));
        assert_eq!(figure(Err(NvmlError::NotSupported), 1.0), None);
    }
}
