//! NCCL's own account of each case: its INFO output sent to a file of this process's, and the
//! lines written while a case ran read back ([`crate::backend::nccl_log`]) into the case's
//! record — the algorithm, protocol and channels NCCL chose, and its version.
//!
//! Off unless `SCALEBENCH_NCCL_CAPTURE=1`: NCCL then writes a choice line for every planned
//! collective on rank 0 (a formatted, flushed write inside each timed call), a cost not yet
//! measured on several GPUs (one rank prints none; results/gpu/2026-11-26-h200). Where the user set
//! `NCCL_DEBUG_FILE`, NCCL writes there and scalebench reads it (`%h`, `%p` expanded as NCCL
//! does); otherwise the file is `$TMPDIR/scalebench-nccl-<pid>/nccl.<host>.<pid>`, removed
//! when the backend closes. `NCCL_DEBUG` becomes INFO and `NCCL_DEBUG_SUBSYS` gains TUNING
//! (default `INIT,TUNING`): INFO goes to the file only, so the console stays as it was. The
//! provenance records these variables as the user had them.

use crate::backend::nccl_log;
use crate::results::schema::{NcclCapture, NcclChoice};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Set to `1` to capture NCCL's (or RCCL's) choices (off otherwise: the library's logging is
/// left alone).
pub(crate) const CAPTURE_ENV: &str = "SCALEBENCH_NCCL_CAPTURE";

/// This process's NCCL log and how far the cases before read it.
#[derive(Debug)]
pub(crate) struct LogTap {
    path: PathBuf,
    offset: u64,
    version: Option<String>,
    /// The directory scalebench made (removed on drop); `None` for the user's file.
    owned_dir: Option<PathBuf>,
}

/// `%h` (host name up to its first dot, as NCCL's getHostName) and `%p` (pid) in `pattern`.
pub(crate) fn expand(pattern: &str, host: &str, pid: u32) -> String {
    let short = host.split('.').next().unwrap_or(host);
    pattern.replace("%h", short).replace("%p", &pid.to_string())
}

/// NCCL_DEBUG_SUBSYS with TUNING in it (`None`: leave it as it is).
pub(crate) fn subsys_with_tuning(current: Option<&str>) -> Option<String> {
    match current.map(str::trim) {
        None | Some("") => Some("INIT,TUNING".into()),
        // An exclusion list includes TUNING unless it names it: then the user chose.
        Some(s) if s.starts_with('^') => None,
        Some(s) => {
            let has = s
                .split(',')
                .any(|w| w.eq_ignore_ascii_case("TUNING") || w.eq_ignore_ascii_case("ALL"));
            (!has).then(|| format!("{s},TUNING"))
        }
    }
}

/// Where NCCL's log goes, as [`prepare_env`] set it: the file pattern (`%h`, `%p`) and the
/// directory scalebench made for it (`None`: the user's `NCCL_DEBUG_FILE`).
#[derive(Debug)]
struct Prepared {
    pattern: String,
    owned_dir: Option<PathBuf>,
}

static PREPARED: std::sync::OnceLock<Option<Prepared>> = std::sync::OnceLock::new();

/// Sets NCCL's logging variables for the capture (when on). `run` calls it before MPI
/// starts: once MPI's threads (or a C library's) run, one may call `getenv` while `setenv`
/// moves the environment. Later calls do nothing.
pub(crate) fn prepare_env() {
    PREPARED.get_or_init(set_variables);
}

/// Points NCCL's INFO output at a file before NCCL first logs (it reads these variables
/// once, at its first message): the tap that reads it per case. `None` when capture is off.
/// The variables are set here only where [`prepare_env`] was not called first (a test's
/// backend without `run`).
pub(crate) fn prepare() -> Option<LogTap> {
    let p = PREPARED.get_or_init(set_variables).as_ref()?;
    if let Some(dir) = &p.owned_dir {
        // A backend before this one in the process removed it when it closed.
        std::fs::create_dir_all(dir).ok()?;
    }
    Some(LogTap {
        path: PathBuf::from(expand(
            &p.pattern,
            &crate::topology::hostname(),
            std::process::id(),
        )),
        offset: 0,
        version: None,
        owned_dir: p.owned_dir.clone(),
    })
}

fn set_variables() -> Option<Prepared> {
    if !std::env::var(CAPTURE_ENV).is_ok_and(|v| v.trim() == "1") {
        return None;
    }
    let pid = std::process::id();
    let (pattern, owned_dir) = match std::env::var("NCCL_DEBUG_FILE") {
        Ok(p) if !p.is_empty() => (p, None),
        _ => {
            let dir = std::env::temp_dir().join(format!("scalebench-nccl-{pid}"));
            std::fs::create_dir_all(&dir).ok()?;
            let p = dir.join("nccl.%h.%p").to_string_lossy().into_owned();
            nccl_log::set_for_capture("NCCL_DEBUG_FILE", &p);
            (p, Some(dir))
        }
    };
    let level = std::env::var("NCCL_DEBUG").unwrap_or_default();
    if !(level.eq_ignore_ascii_case("INFO") || level.eq_ignore_ascii_case("TRACE")) {
        nccl_log::set_for_capture("NCCL_DEBUG", "INFO");
    }
    if let Some(s) = subsys_with_tuning(std::env::var("NCCL_DEBUG_SUBSYS").ok().as_deref()) {
        nccl_log::set_for_capture("NCCL_DEBUG_SUBSYS", &s);
    }
    Some(Prepared { pattern, owned_dir })
}

impl LogTap {
    /// The text written since `from`, whole lines only, and where the next read starts.
    fn read_from(&self, from: u64) -> (String, u64) {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return (String::new(), from);
        };
        let mut bytes = Vec::new();
        if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut bytes).is_err() {
            return (String::new(), from);
        }
        // A line NCCL is still writing is read with the next case.
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(whole);
        let next = from + whole as u64;
        (String::from_utf8_lossy(&bytes).into_owned(), next)
    }

    /// A case starts: what was written before it is not its own.
    pub(crate) fn begin(&mut self) {
        let (text, next) = self.read_from(self.offset);
        self.note_version(&nccl_log::parse_log(&text));
        self.offset = next;
    }

    fn note_version(&mut self, entries: &[nccl_log::Entry]) {
        if self.version.is_none() {
            self.version = nccl_log::version(entries).map(|(text, _)| text);
        }
    }

    /// A case ended: the choices this process's NCCL logged while it ran (warm-up and
    /// calibration calls included), most frequent first.
    pub(crate) fn end(&mut self) -> NcclCapture {
        let (text, next) = self.read_from(self.offset);
        self.offset = next;
        let pid = std::process::id();
        // Only this process's lines: a user's NCCL_DEBUG_FILE without %p is shared.
        let entries: Vec<_> = nccl_log::parse_log(&text)
            .into_iter()
            .filter(|e| e.origin.as_ref().is_none_or(|o| o.pid == pid))
            .collect();
        self.note_version(&entries);
        let choices = nccl_log::tally(&entries)
            .into_iter()
            .map(|(c, n)| NcclChoice {
                algorithm: c.algo.to_string(),
                protocol: c.proto.to_string(),
                channels: c.channel_count(),
                calls: n as u64,
            })
            .collect();
        let warnings = nccl_log::warnings(&entries)
            .into_iter()
            .map(|(m, n)| if n > 1 { format!("{m} (×{n})") } else { m })
            .collect();
        NcclCapture {
            version: self.version.clone(),
            choices,
            warnings,
        }
    }
}

impl Drop for LogTap {
    fn drop(&mut self) {
        if let Some(dir) = &self.owned_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_and_subsystems() {
        assert_eq!(
            expand("/d/nccl.%h.%p", "node7.cluster.org", 42),
            "/d/nccl.node7.42"
        );
        assert_eq!(expand("/d/log", "h", 1), "/d/log");
        assert_eq!(subsys_with_tuning(None).unwrap(), "INIT,TUNING");
        assert_eq!(
            subsys_with_tuning(Some("INIT,COLL")).unwrap(),
            "INIT,COLL,TUNING"
        );
        assert_eq!(subsys_with_tuning(Some("init,tuning")), None);
        assert_eq!(subsys_with_tuning(Some("ALL")), None);
        assert_eq!(subsys_with_tuning(Some("^NET")), None);
    }

    #[test]
    fn a_case_reads_only_its_own_whole_lines() {
        let dir = std::env::temp_dir().join(format!("scalebench-tap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        let pid = std::process::id();
        let line = |msg: &str| format!("h:{pid}:1 [0] NCCL INFO {msg}\n");
        std::fs::write(&path, line("NCCL version 2.26.2+cuda12.8")).unwrap();
        let mut tap = LogTap {
            path: path.clone(),
            offset: 0,
            version: None,
            owned_dir: Some(dir.clone()),
        };
        tap.begin();
        let ring = "AllReduce: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}";
        let tree = "AllReduce: 1024 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0}";
        let other = format!("h:{}:1 [0] NCCL INFO {tree}\n", pid + 1);
        let warn =
            format!("h:{pid}:7 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error\n");
        let text = [
            line(ring),
            warn.clone(),
            line(ring),
            other,
            warn,
            line(tree),
        ]
        .concat();
        // The last line half written.
        let half = format!("h:{pid}:1 [0] NCCL INFO AllReduce: 8 Bytes");
        let all = format!("{}{text}{half}", std::fs::read_to_string(&path).unwrap());
        std::fs::write(&path, &all).unwrap();
        let c = tap.end();
        assert_eq!(c.version.as_deref(), Some("2.26.2+cuda12.8"));
        let got: Vec<_> = c
            .choices
            .iter()
            .map(|x| {
                (
                    x.algorithm.as_str(),
                    x.protocol.as_str(),
                    x.channels,
                    x.calls,
                )
            })
            .collect();
        assert_eq!(
            got,
            [("Ring", "LL", Some(2), 2), ("Tree", "LL", Some(1), 1)]
        );
        assert_eq!(
            c.warnings,
            ["NET/IB : mlx5_0:1 Got async event : port error (×2)"]
        );
        // The next case starts at the half line, and sees it once it is whole.
        tap.begin();
        std::fs::write(&path, format!("{all} -> Algo 0 proto 0 time 1.0\n")).unwrap();
        let c = tap.end();
        assert!(c.warnings.is_empty());
        assert_eq!(c.choices.len(), 1);
        assert_eq!(c.choices[0].algorithm, "Tree");
        drop(tap);
        assert!(!dir.exists());
    }
}
