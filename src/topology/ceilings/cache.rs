//! The host cache of CPU ceilings (issue 48): one measurement per host and CPU set, taken in
//! rounds spread over time at the first launch that needs it, reused by every later launch
//! (a sweep's launches share one; a sweep points its launches at `<out>/ceilings`), re-checked
//! at the sweep's end with the larger reading kept. An entry is keyed by every fact that
//! changes what the CPUs can do: host, CPU set, kernel release, CPU model, microcode, and the
//! highest cpufreq clock; a change of any measures again.

use crate::results::ceilings::{Ceiling, Measurement};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable naming the cache directory (a sweep sets it for its launches).
pub const CACHE_DIR_VAR: &str = "SCALEBENCH_CEILINGS_CACHE";

/// What a measurement holds for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostKey {
    pub host: String,
    /// The CPUs measured (cpulist).
    pub cpus: String,
    pub kernel_release: String,
    pub cpu_model: String,
    pub microcode: String,
    /// cpufreq's highest clock of the first CPU, kHz ("" without cpufreq).
    pub cpufreq_max_khz: String,
}

impl HostKey {
    /// This host's key for `cpus`.
    pub fn current(host: &str, cpus: &[u32]) -> HostKey {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let first = |k: &str| {
            cpuinfo
                .lines()
                .find_map(|l| {
                    let (a, b) = l.split_once(':')?;
                    (a.trim() == k).then(|| b.trim().to_string())
                })
                .unwrap_or_default()
        };
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        HostKey {
            host: host.to_string(),
            cpus: crate::params::cpulist::format_cpulist(cpus),
            kernel_release: read("/proc/sys/kernel/osrelease"),
            cpu_model: first("model name"),
            microcode: first("microcode"),
            cpufreq_max_khz: cpus.first().map_or(String::new(), |c| {
                read(&format!(
                    "/sys/devices/system/cpu/cpu{c}/cpufreq/cpuinfo_max_freq"
                ))
            }),
        }
    }

    /// A short stable digest of every fact (the entry's id and file name).
    pub fn digest(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        let d = Sha256::digest(text.as_bytes());
        d.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    fn file_in(&self, dir: &Path) -> PathBuf {
        let host: String = self
            .host
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        dir.join(format!("{host}-{}.json", self.digest()))
    }
}

/// One cached measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub key: HostKey,
    pub measured_unix_s: f64,
    /// Seconds the measurement took.
    pub seconds: f64,
    pub rounds: u32,
    pub ceilings: Vec<Ceiling>,
    pub uncertainty_rel: BTreeMap<String, f64>,
    /// Re-checks at sweeps' ends: when, and each ceiling a re-check raised (old → new).
    #[serde(default)]
    pub rechecks: Vec<Recheck>,
}

/// One re-check of an entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recheck {
    pub unix_s: f64,
    /// (ceiling id, kept value, re-checked value) for each that rose.
    pub raised: Vec<(String, f64, f64)>,
}

/// What a launch got: the entry and how it is recorded in its results.
#[derive(Debug, Clone)]
pub struct Lookup {
    pub entry: Entry,
    pub measurement: Measurement,
}

/// A fresh measurement: ceilings, their uncertainties, the rounds, the seconds taken.
pub struct Fresh {
    pub ceilings: Vec<Ceiling>,
    pub uncertainty_rel: BTreeMap<String, f64>,
    pub rounds: u32,
    pub seconds: f64,
}

/// The cached entry for `key` in `dir` (`None`: no cache, measure every time), or a fresh one
/// from `measure`, written to `dir` for the next launch. A cache that cannot be read or
/// written is measured around, the reason kept in the measurement's `note`.
pub fn lookup_or_measure(
    dir: Option<&Path>,
    key: &HostKey,
    now_unix_s: f64,
    measure: impl FnOnce() -> Fresh,
) -> Lookup {
    let mut note = None;
    if let Some(dir) = dir {
        let file = key.file_in(dir);
        match read_entry(&file) {
            Ok(Some(e)) if e.key == *key => return lookup(e, true, Some(&file), None),
            Ok(_) => {}
            Err(why) => note = Some(format!("measured again: {why}")),
        }
    }
    let f = measure();
    let entry = Entry {
        key: key.clone(),
        measured_unix_s: now_unix_s,
        seconds: f.seconds,
        rounds: f.rounds,
        ceilings: f.ceilings,
        uncertainty_rel: f.uncertainty_rel,
        rechecks: Vec::new(),
    };
    let file = match dir {
        None => {
            note.get_or_insert_with(|| "no cache directory: measured for this launch".into());
            None
        }
        Some(dir) => match write_entry(dir, &key.file_in(dir), &entry) {
            Ok(f) => Some(f),
            Err(why) => {
                note = Some(format!("not cached: {why}"));
                None
            }
        },
    };
    lookup(entry, false, file.as_deref(), note)
}

fn lookup(e: Entry, reused: bool, file: Option<&Path>, note: Option<String>) -> Lookup {
    let measurement = Measurement {
        id: e.key.digest(),
        measured_unix_s: e.measured_unix_s,
        reused,
        rounds: e.rounds,
        uncertainty_rel: e.uncertainty_rel.clone(),
        cache_file: file.map(|f| f.display().to_string()),
        note,
    };
    Lookup {
        entry: e,
        measurement,
    }
}

/// An entry file: `Ok(None)` when absent, `Err` when unreadable or not an entry.
fn read_entry(file: &Path) -> Result<Option<Entry>, String> {
    match std::fs::read(file) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| format!("{} is not a ceilings cache entry: {e}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", file.display())),
    }
}

/// Writes atomically (a temporary file renamed over), so a reader never sees half an entry.
fn write_entry(dir: &Path, file: &Path, e: &Entry) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|x| format!("cannot create {}: {x}", dir.display()))?;
    let text = serde_json::to_vec_pretty(e).map_err(|x| x.to_string())?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|x| format!("cannot write {}: {x}", tmp.display()))?;
    std::fs::rename(&tmp, file).map_err(|x| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot rename {} to {}: {x}", tmp.display(), file.display())
    })?;
    Ok(file.to_path_buf())
}

/// Ceilings a re-check raised: (id, kept value, re-checked value) each.
pub type Rises = Vec<(String, f64, f64)>;

/// Keeps, for each measured ceiling, the larger of `kept` and `again`; returns those that rose
/// (id, kept, new). Pure.
pub fn keep_larger(kept: &mut [Ceiling], again: &[Ceiling]) -> Rises {
    let mut raised = Vec::new();
    for c in kept.iter_mut() {
        let Some(n) = again.iter().find(|x| x.id == c.id).and_then(|x| x.value) else {
            continue;
        };
        match c.value {
            Some(v) if n > v => {
                raised.push((c.id.clone(), v, n));
                c.value = Some(n);
                c.detail = format!(
                    "{}; raised to this by a re-check at a sweep's end",
                    c.detail
                );
            }
            _ => {}
        }
    }
    raised
}

/// Re-checks every entry of `dir` that this host (`host`) measured and whose other facts
/// still hold: measures its CPUs again with `measure(cpus)` and keeps the larger readings.
/// Returns, per entry re-checked, its file and what rose.
pub fn recheck_dir(
    dir: &Path,
    host: &str,
    now_unix_s: f64,
    measure: impl Fn(&[u32]) -> Vec<Ceiling>,
) -> Vec<(PathBuf, Rises)> {
    let Ok(files) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for f in files.flatten().map(|f| f.path()) {
        if f.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(Some(mut e)) = read_entry(&f) else {
            continue;
        };
        let Some(cpus) = crate::params::cpulist::parse_cpulist(&e.key.cpus) else {
            continue;
        };
        if e.key.host != host || HostKey::current(host, &cpus) != e.key {
            continue;
        }
        let again = measure(&cpus);
        let raised = keep_larger(&mut e.ceilings, &again);
        e.rechecks.push(Recheck {
            unix_s: now_unix_s,
            raised: raised.clone(),
        });
        if write_entry(dir, &f, &e).is_ok() {
            out.push((f, raised));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ceilings::{CeilingSource, CeilingUnit};
    use std::cell::Cell;

    fn key(host: &str, cpus: &str) -> HostKey {
        HostKey {
            host: host.into(),
            cpus: cpus.into(),
            kernel_release: "6.1.0-18-amd64".into(),
            cpu_model: "INTEL(R) XEON(R) PLATINUM 8581C CPU @ 2.10GHz".into(),
            microcode: "0xffffffff".into(),
            cpufreq_max_khz: String::new(),
        }
    }

    fn fresh(v: f64) -> Fresh {
        Fresh {
            ceilings: vec![Ceiling {
                id: "cpu.peak.f32.avx512f.one_cpu".into(),
                what: "f32 FMA peak".into(),
                unit: CeilingUnit::Gflops,
                value: Some(v),
                source: CeilingSource::Measured,
                detail: "how".into(),
            }],
            uncertainty_rel: [("cpu.peak.f32.avx512f.one_cpu".to_string(), 0.1)].into(),
            rounds: 7,
            seconds: 1.0,
        }
    }

    #[test]
    fn two_launches_use_one_measurement_and_a_changed_cpu_set_or_host_measures_again() {
        let dir = std::env::temp_dir().join(format!("sb-ceil-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let measured = Cell::new(0);
        let mut next = 100.0;
        let mut get = |k: &HostKey, now: f64| {
            next += 10.0;
            let v = next;
            lookup_or_measure(Some(&dir), k, now, || {
                measured.set(measured.get() + 1);
                fresh(v)
            })
        };
        let first = get(&key("a", "0-1"), 1000.0);
        let second = get(&key("a", "0-1"), 2000.0);
        assert_eq!(measured.get(), 1, "the second launch reuses the first's");
        assert!(!first.measurement.reused && second.measurement.reused);
        assert_eq!(first.measurement.id, second.measurement.id);
        assert_eq!(second.measurement.measured_unix_s, 1000.0);
        assert_eq!(second.entry.ceilings, first.entry.ceilings);
        assert_eq!(second.measurement.rounds, 7);
        assert_eq!(second.measurement.uncertainty_rel.len(), 1);
        // another CPU set, another host, another microcode: measured again
        let cpus = get(&key("a", "0"), 3000.0);
        let host = get(&key("b", "0-1"), 3000.0);
        let mut k = key("a", "0-1");
        k.microcode = "0x2b000590".into();
        let micro = get(&k, 3000.0);
        assert_eq!(measured.get(), 4);
        for l in [&cpus, &host, &micro] {
            assert!(!l.measurement.reused);
            assert_ne!(l.measurement.id, first.measurement.id);
        }
        // no cache directory: measured each time, and said so
        let none = lookup_or_measure(None, &key("a", "0-1"), 0.0, || fresh(1.0));
        assert!(!none.measurement.reused && none.measurement.note.is_some());
        // a corrupt entry is measured around, not trusted, and replaced
        std::fs::write(key("c", "0").file_in(&dir), "{not json").unwrap();
        let c = lookup_or_measure(Some(&dir), &key("c", "0"), 0.0, || fresh(5.0));
        assert!(!c.measurement.reused);
        assert!(c
            .measurement
            .note
            .unwrap()
            .contains("not a ceilings cache entry"));
        let again = lookup_or_measure(Some(&dir), &key("c", "0"), 0.0, || fresh(6.0));
        assert!(again.measurement.reused);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_recheck_keeps_the_larger_reading() {
        let mut kept = fresh(100.0).ceilings;
        let lower = fresh(90.0).ceilings;
        assert!(keep_larger(&mut kept, &lower).is_empty());
        assert_eq!(kept[0].value, Some(100.0));
        let higher = fresh(120.0).ceilings;
        let raised = keep_larger(&mut kept, &higher);
        assert_eq!(
            raised,
            vec![("cpu.peak.f32.avx512f.one_cpu".to_string(), 100.0, 120.0)]
        );
        assert_eq!(kept[0].value, Some(120.0));
        assert!(kept[0].detail.contains("re-check"));
    }
}
