//! The host cache of CPU ceilings (issue 48): one measurement per host and CPU set, built
//! from rounds spread over time and kept with when each ran and how busy the host's other
//! processes were. A launch only reads it at its start; after its cases, a launch whose entry
//! is missing, short of rounds, stale or taken under load, or that saw a figure above a
//! measured bound, adds rounds within a time budget ([`wanted`], [`add_rounds`]); a sweep's
//! end re-checks its entries. Each ceiling is the best of the rounds kept, so a low reading
//! taken under load is raised by the next quieter one, and rounds older than [`MAX_AGE_S`] are
//! dropped. An entry is keyed by every fact that changes what the CPUs can do: host, CPU set,
//! kernel release, CPU model, microcode, and the highest cpufreq clock; a change of any
//! measures again.

use crate::results::ceilings::{Ceiling, Measurement};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable naming the cache directory (a sweep sets it for its launches).
pub const CACHE_DIR_VAR: &str = "SCALEBENCH_CEILINGS_CACHE";

/// Set by a sweep for its launches, to the seconds a launch may spend measuring (a fifth of
/// its wall-time limit): the cache's entries are kept for the whole sweep (a launch measures
/// only an entry that is missing, within that and 40 % of its `--op-timeout`), and the
/// sweep's end re-checks them.
pub const SWEEP_VAR: &str = "SCALEBENCH_CEILINGS_SWEEP";

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

/// A reading is "taken under load" when the host's other processes kept at least this many
/// CPUs busy on average while it ran: its peaks read low, so it is re-checked.
pub const LOADED_OTHER_CPUS: f64 = 0.5;

/// An entry whose every round ran under load is re-checked by the first launch at least this
/// long after its newest round (not by every launch: a host busy for hours would pay each time).
pub const LOADED_RECHECK_S: f64 = 600.0;

/// Rounds older than this are dropped and measured again: a host changes in ways the key
/// does not see (firmware settings, a VM moved to other hardware, a new neighbour).
pub const MAX_AGE_S: f64 = 7.0 * 86_400.0;

/// Rounds an entry aims at (FMA peaks in each), and of those with STREAM as well.
pub const FULL_ROUNDS: u32 = 7;
pub const FULL_STREAM_ROUNDS: u32 = 3;

/// One round of measurement: when it ran, how busy the other processes kept the host, and
/// what it read (the best instruction set's FMA peaks, and STREAM in some rounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub unix_s: f64,
    /// CPUs the host's other processes kept busy on average during the round (/proc/stat's
    /// busy time less this process's); absent where /proc/stat is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_busy_cpus: Option<f64>,
    pub ceilings: Vec<Ceiling>,
}

impl Round {
    fn loaded(&self) -> bool {
        self.other_busy_cpus.is_some_and(|c| c >= LOADED_OTHER_CPUS)
    }

    fn has_stream(&self) -> bool {
        self.ceilings
            .iter()
            .any(|c| c.id.starts_with("cpu.mem.") && c.value.is_some())
    }
}

/// One cached measurement: its rounds and their summary (each ceiling the best of its rounds,
/// the rounds' spread its uncertainty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub key: HostKey,
    /// When its oldest kept round ran.
    pub measured_unix_s: f64,
    /// Seconds its rounds took, all launches together.
    pub seconds: f64,
    pub rounds: u32,
    pub ceilings: Vec<Ceiling>,
    pub uncertainty_rel: BTreeMap<String, f64>,
    /// The rounds kept (newer than [`MAX_AGE_S`]).
    #[serde(default)]
    pub readings: Vec<Round>,
    /// The theoretical bounds, kept beside the readings (not measured).
    #[serde(default)]
    pub theory: Vec<Ceiling>,
    /// Re-checks at sweeps' ends: when, and each ceiling a re-check raised (old → new).
    #[serde(default)]
    pub rechecks: Vec<Recheck>,
}

impl Entry {
    /// Rounds with STREAM readings.
    pub fn stream_rounds(&self) -> u32 {
        self.readings.iter().filter(|r| r.has_stream()).count() as u32
    }

    /// The best one-CPU STREAM Copy reading, GB/s (a launch's estimate of STREAM's cost).
    pub fn copy_gbps(&self) -> Option<f64> {
        self.ceilings
            .iter()
            .find(|c| c.id == "cpu.mem.copy.one_cpu")
            .and_then(|c| c.value)
    }

    /// The summary from the rounds (pure).
    fn summarise(&mut self) {
        let rounds: Vec<Vec<Ceiling>> = self.readings.iter().map(|r| r.ceilings.clone()).collect();
        // every ceiling any round holds, in order of first appearance, a measured one first
        let mut like: Vec<Ceiling> = Vec::new();
        for c in rounds.iter().flatten() {
            match like.iter_mut().find(|t| t.id == c.id) {
                Some(t) if t.value.is_none() && c.value.is_some() => *t = c.clone(),
                Some(_) => {}
                None => like.push(c.clone()),
            }
        }
        let (mut ceilings, spread) =
            crate::results::ceilings::bounds::best_of_rounds_like(&like, &rounds);
        ceilings.extend(self.theory.iter().cloned());
        self.ceilings = ceilings;
        self.uncertainty_rel = spread.into_iter().collect();
        self.rounds = self.readings.len() as u32;
        self.measured_unix_s = self
            .readings
            .iter()
            .map(|r| r.unix_s)
            .fold(f64::INFINITY, f64::min);
    }
}

/// One re-check of an entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recheck {
    pub unix_s: f64,
    /// (ceiling id, kept value, re-checked value) for each that rose.
    pub raised: Vec<(String, f64, f64)>,
}

/// What a launch measures after its cases for an entry: how many rounds, how many of them with
/// STREAM, and why (recorded in the launch's measurement note).
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    pub rounds: u32,
    pub stream_rounds: u32,
    pub why: String,
}

/// Whether a launch must measure for `entry` (pure): none cached, fewer rounds than
/// [`FULL_ROUNDS`], the newest round older than [`MAX_AGE_S`], every round under load and
/// the newest [`LOADED_RECHECK_S`] old, or a figure of the launch above a measured bound
/// (`above_bound`). `None`: the entry serves as it is.
pub fn wanted(entry: Option<&Entry>, now_unix_s: f64, above_bound: bool) -> Option<Wanted> {
    let Some(e) = entry.filter(|e| !e.readings.is_empty()) else {
        return Some(Wanted {
            rounds: FULL_ROUNDS,
            stream_rounds: FULL_STREAM_ROUNDS,
            why: "no measurement of this host and CPU set in the cache".into(),
        });
    };
    let newest = e.readings.iter().map(|r| r.unix_s).fold(f64::MIN, f64::max);
    let age_s = now_unix_s - newest;
    let (have, have_stream) = (e.readings.len() as u32, e.stream_rounds());
    let recheck = |why: String| Wanted {
        rounds: 2,
        stream_rounds: 1,
        why,
    };
    if have < FULL_ROUNDS || have_stream < FULL_STREAM_ROUNDS {
        return Some(Wanted {
            rounds: FULL_ROUNDS.saturating_sub(have).max(1),
            stream_rounds: FULL_STREAM_ROUNDS.saturating_sub(have_stream),
            why: format!(
                "{have} of {FULL_ROUNDS} rounds ({have_stream} of {FULL_STREAM_ROUNDS} with STREAM) so far: rounds added"
            ),
        });
    }
    if age_s >= MAX_AGE_S {
        return Some(recheck(format!(
            "the newest round is {:.1} days old: measured again",
            age_s / 86_400.0
        )));
    }
    if above_bound {
        return Some(recheck(
            "a figure of this launch exceeded a measured bound: re-checked, the larger reading kept"
                .into(),
        ));
    }
    if e.readings.iter().all(Round::loaded) && age_s >= LOADED_RECHECK_S {
        return Some(recheck(format!(
            "every round ran while other processes kept ≥ {LOADED_OTHER_CPUS} CPUs busy (the newest {:.0} min ago): re-checked, the larger reading kept",
            age_s / 60.0
        )));
    }
    None
}

/// `old` with the rounds of `fresh` added and the rounds older than [`MAX_AGE_S`] dropped,
/// summarised again: each ceiling the best of the rounds kept (pure).
pub fn add_rounds(old: Option<Entry>, key: &HostKey, fresh: Fresh, now_unix_s: f64) -> Entry {
    let mut e = old.unwrap_or_else(|| Entry {
        key: key.clone(),
        measured_unix_s: now_unix_s,
        seconds: 0.0,
        rounds: 0,
        ceilings: Vec::new(),
        uncertainty_rel: BTreeMap::new(),
        readings: Vec::new(),
        theory: Vec::new(),
        rechecks: Vec::new(),
    });
    e.readings.retain(|r| now_unix_s - r.unix_s < MAX_AGE_S);
    e.readings.extend(fresh.rounds);
    if !fresh.theory.is_empty() {
        e.theory = fresh.theory;
    }
    e.seconds += fresh.seconds;
    e.summarise();
    e
}

/// A fresh measurement: its rounds, the theoretical bounds, the seconds taken.
pub struct Fresh {
    pub rounds: Vec<Round>,
    pub theory: Vec<Ceiling>,
    pub seconds: f64,
}

/// Why the cache could not serve or keep an entry (the launch measures around it and says so).
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a ceilings cache entry: {source}", path.display())]
    NotAnEntry {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The cached entry for `key` in `dir`, with its file; `Ok(None)` when there is none (or it
/// is another key's).
pub fn read(dir: &Path, key: &HostKey) -> Result<Option<(Entry, PathBuf)>, CacheError> {
    let file = key.file_in(dir);
    Ok(read_entry(&file)?
        .filter(|e| e.key == *key)
        .map(|e| (e, file)))
}

/// Writes `e` to its file in `dir` (atomically); returns the file.
pub fn store(dir: &Path, e: &Entry) -> Result<PathBuf, CacheError> {
    let file = e.key.file_in(dir);
    write_entry(dir, &file, e)?;
    Ok(file)
}

/// How a launch records `e`: `reused` when it measured nothing itself.
pub fn measurement(
    e: &Entry,
    reused: bool,
    file: Option<&Path>,
    note: Option<String>,
) -> Measurement {
    Measurement {
        id: e.key.digest(),
        measured_unix_s: e.measured_unix_s,
        reused,
        rounds: e.rounds,
        uncertainty_rel: e.uncertainty_rel.clone(),
        cache_file: file.map(|f| f.display().to_string()),
        note,
    }
}

/// An entry file: `Ok(None)` when absent, `Err` when unreadable or not an entry.
fn read_entry(file: &Path) -> Result<Option<Entry>, CacheError> {
    match std::fs::read(file) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|source| CacheError::NotAnEntry {
                path: file.to_path_buf(),
                source,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CacheError::Read {
            path: file.to_path_buf(),
            source,
        }),
    }
}

/// Writes atomically (a temporary file renamed over), so a reader never sees half an entry.
fn write_entry(dir: &Path, file: &Path, e: &Entry) -> Result<(), CacheError> {
    let werr = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CacheError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(werr(dir))?;
    let text = serde_json::to_vec_pretty(e).map_err(|source| CacheError::NotAnEntry {
        path: file.to_path_buf(),
        source,
    })?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(werr(&tmp))?;
    std::fs::rename(&tmp, file).map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        CacheError::Write {
            path: file.to_path_buf(),
            source,
        }
    })
}

/// Ceilings a re-check raised: (id, kept value, re-checked value) each.
pub type Rises = Vec<(String, f64, f64)>;

/// The measured ceilings of `after` above those of `before`: (id, before, after). Pure.
pub fn rises(before: &[Ceiling], after: &[Ceiling]) -> Rises {
    before
        .iter()
        .filter_map(|c| {
            let (v, n) = (c.value?, after.iter().find(|x| x.id == c.id)?.value?);
            (n > v).then(|| (c.id.clone(), v, n))
        })
        .collect()
}

/// Re-checks every entry of `dir` that this host (`host`) measured and whose other facts
/// still hold: adds the rounds of `measure(cpus, entry)` (the best of all rounds kept). Returns, per
/// entry re-checked, its file and what rose.
pub fn recheck_dir(
    dir: &Path,
    host: &str,
    now_unix_s: f64,
    measure: impl Fn(&[u32], &Entry) -> Fresh,
) -> Vec<(PathBuf, Rises)> {
    let Ok(files) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for f in files.flatten().map(|f| f.path()) {
        if f.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(Some(e)) = read_entry(&f) else {
            continue;
        };
        let Some(cpus) = crate::params::cpulist::parse_cpulist(&e.key.cpus) else {
            continue;
        };
        if e.key.host != host || HostKey::current(host, &cpus) != e.key {
            continue;
        }
        let before = e.ceilings.clone();
        let key = e.key.clone();
        let fresh = measure(&cpus, &e);
        let mut e = add_rounds(Some(e), &key, fresh, now_unix_s);
        let raised = rises(&before, &e.ceilings);
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

    const ID: &str = "cpu.peak.f32.avx512f.one_cpu";
    const COPY: &str = "cpu.mem.copy.one_cpu";

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

    fn ceiling(id: &str, v: f64) -> Ceiling {
        Ceiling {
            id: id.into(),
            what: id.into(),
            unit: CeilingUnit::Gflops,
            value: Some(v),
            source: CeilingSource::Measured,
            detail: "how".into(),
        }
    }

    /// `n` rounds at `unix_s`, reading `v` (and STREAM `v / 10` in each), `other` CPUs busy.
    fn fresh(n: usize, v: f64, unix_s: f64, other: f64) -> Fresh {
        Fresh {
            rounds: (0..n)
                .map(|i| Round {
                    unix_s: unix_s + i as f64,
                    other_busy_cpus: Some(other),
                    ceilings: vec![ceiling(ID, v - i as f64), ceiling(COPY, v / 10.0)],
                })
                .collect(),
            theory: Vec::new(),
            seconds: 1.0,
        }
    }

    fn value(e: &Entry, id: &str) -> Option<f64> {
        e.ceilings.iter().find(|c| c.id == id).and_then(|c| c.value)
    }

    #[test]
    fn two_launches_use_one_measurement_and_a_changed_cpu_set_or_host_measures_again() {
        let dir = std::env::temp_dir().join(format!("sb-ceil-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let k = key("a", "0-1");
        assert!(read(&dir, &k).unwrap().is_none());
        let e = add_rounds(None, &k, fresh(7, 100.0, 1000.0, 0.0), 1010.0);
        let file = store(&dir, &e).unwrap();
        // the next launch reads it and has nothing to add
        let (got, f) = read(&dir, &k).unwrap().unwrap();
        assert_eq!((got.clone(), f), (e.clone(), file.clone()));
        assert_eq!(wanted(Some(&got), 2000.0, false), None);
        let m = measurement(&got, true, Some(&file), None);
        assert_eq!((m.id, m.rounds, m.reused), (k.digest(), 7, true));
        assert_eq!(m.measured_unix_s, 1000.0);
        assert_eq!(value(&got, ID), Some(100.0));
        // another CPU set, another host, another microcode: another entry, none cached
        let mut micro = key("a", "0-1");
        micro.microcode = "0x2b000590".into();
        for other in [key("a", "0"), key("b", "0-1"), micro] {
            assert_ne!(other.digest(), k.digest());
            assert!(read(&dir, &other).unwrap().is_none());
            let w = wanted(None, 2000.0, false).unwrap();
            assert_eq!(
                (w.rounds, w.stream_rounds),
                (FULL_ROUNDS, FULL_STREAM_ROUNDS)
            );
        }
        // a corrupt entry is an error that names the file, never trusted
        std::fs::write(key("c", "0").file_in(&dir), "{not json").unwrap();
        let err = read(&dir, &key("c", "0")).unwrap_err().to_string();
        assert!(
            err.contains("not a ceilings cache entry") && err.contains("c-"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_short_entry_is_completed_by_later_launches() {
        let k = key("a", "0-1");
        let e = add_rounds(None, &k, fresh(3, 100.0, 1000.0, 0.0), 1003.0);
        let w = wanted(Some(&e), 1100.0, false).unwrap();
        assert_eq!((w.rounds, w.stream_rounds), (4, 0), "{}", w.why);
        assert!(w.why.contains("3 of 7 rounds"), "{}", w.why);
        let e = add_rounds(Some(e), &k, fresh(4, 110.0, 1100.0, 0.0), 1104.0);
        assert_eq!(e.rounds, 7);
        assert_eq!(value(&e, ID), Some(110.0), "the best of all rounds");
        assert_eq!(e.measured_unix_s, 1000.0);
        assert_eq!(wanted(Some(&e), 1200.0, false), None);
    }

    #[test]
    fn a_bound_measured_under_load_does_not_stick() {
        let k = key("a", "0-1");
        // every round under load (1.5 other CPUs busy): low readings
        let e = add_rounds(None, &k, fresh(7, 60.0, 1000.0, 1.5), 1007.0);
        // not re-checked by every launch right after ...
        assert_eq!(wanted(Some(&e), 1007.0 + 60.0, false), None);
        // ... but once LOADED_RECHECK_S has passed
        let w = wanted(Some(&e), 1007.0 + LOADED_RECHECK_S, false).unwrap();
        assert!(w.why.contains("other processes"), "{}", w.why);
        // a quiet re-check raises it
        let e = add_rounds(Some(e), &k, fresh(2, 100.0, 2000.0, 0.1), 2002.0);
        assert_eq!(value(&e, ID), Some(100.0));
        let later = 2002.0 + 10.0 * LOADED_RECHECK_S;
        assert_eq!(wanted(Some(&e), later, false), None, "a quiet round exists");
        // a figure above the bound re-checks at once, whatever the load
        let w = wanted(Some(&e), 2003.0, true).unwrap();
        assert!(w.why.contains("exceeded"), "{}", w.why);
        // rounds older than MAX_AGE_S are stale: measured again, and dropped when re-measured
        let late = 2000.0 + MAX_AGE_S + 1.0;
        assert!(wanted(Some(&e), late, false)
            .unwrap()
            .why
            .contains("days old"));
        let e = add_rounds(Some(e), &k, fresh(2, 80.0, late, 0.0), late + 2.0);
        assert_eq!(e.rounds, 2);
        assert_eq!(value(&e, ID), Some(80.0), "the old 100 is gone");
    }

    #[test]
    fn a_recheck_reports_what_rose() {
        let before = fresh(1, 100.0, 0.0, 0.0).rounds.remove(0).ceilings;
        let lower = fresh(1, 90.0, 0.0, 0.0).rounds.remove(0).ceilings;
        assert!(rises(&before, &lower).is_empty());
        let higher = fresh(1, 120.0, 0.0, 0.0).rounds.remove(0).ceilings;
        assert_eq!(
            rises(&before, &higher),
            vec![
                (ID.to_string(), 100.0, 120.0),
                (COPY.to_string(), 10.0, 12.0)
            ]
        );
    }
}
