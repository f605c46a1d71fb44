//! Ceilings: the most a host, device or link can do, each with where the figure comes from,
//! so a measured figure can be read as a fraction of what its hardware allows.

use serde::{Deserialize, Serialize};

/// The unit of a ceiling (and of the figures it bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CeilingUnit {
    /// 1e9 floating-point operations per second.
    Gflops,
    /// 1e9 bytes per second.
    Gbps,
}

impl CeilingUnit {
    pub fn symbol(self) -> &'static str {
        match self {
            CeilingUnit::Gflops => "GFLOP/s",
            CeilingUnit::Gbps => "GB/s",
        }
    }
}

/// Where a ceiling's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CeilingSource {
    /// Measured on this host by scalebench's own microbenchmark (the detail says how).
    Measured,
    /// Read from sysfs (the detail names the file).
    Sysfs,
    /// Queried from a driver (NVML, ROCm SMI; the detail names the call).
    Driver,
    /// A table entry (the detail gives its reference).
    Table,
    /// Not known; the detail says why. The value is then absent.
    Unknown,
}

impl CeilingSource {
    pub fn name(self) -> &'static str {
        match self {
            CeilingSource::Measured => "measured",
            CeilingSource::Sysfs => "sysfs",
            CeilingSource::Driver => "driver",
            CeilingSource::Table => "table",
            CeilingSource::Unknown => "unknown",
        }
    }
}

/// One ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// Stable id a figure refers to, e.g. `cpu.peak.f64.avx2+fma.all_cpus`.
    pub id: String,
    /// What it is, for a reader, e.g. `f64 FMA peak, avx2+fma, 2 CPUs (0-1)`.
    pub what: String,
    pub unit: CeilingUnit,
    /// `None` exactly when the source is `unknown`.
    #[serde(default)]
    pub value: Option<f64>,
    pub source: CeilingSource,
    /// How it was measured, which file or call, which reference; or why it is unknown.
    pub detail: String,
}

impl Ceiling {
    /// A figure as a fraction of this ceiling; `None` when the ceiling is unknown or not
    /// positive.
    pub fn frac_peak(&self, figure: f64) -> Option<f64> {
        self.value.filter(|v| *v > 0.0).map(|v| figure / v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fraction_of_an_unknown_ceiling_is_none() {
        let mut c = Ceiling {
            id: "x".into(),
            what: "x".into(),
            unit: CeilingUnit::Gbps,
            value: Some(20.0),
            source: CeilingSource::Measured,
            detail: String::new(),
        };
        assert_eq!(c.frac_peak(5.0), Some(0.25));
        c.value = None;
        c.source = CeilingSource::Unknown;
        assert_eq!(c.frac_peak(5.0), None);
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains("\"source\":\"unknown\"") && json.contains("\"unit\":\"gbps\""));
        assert_eq!(serde_json::from_str::<Ceiling>(&json).unwrap(), c);
    }
}
