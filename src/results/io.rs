//! Reading and writing results without ever losing a finished measurement.
//!
//! - The journal (`journal.jsonl`) gets one JSON line per finished case or launch, flushed and
//!   synced as it happens; a crash loses at most the line being written (a torn last line is
//!   skipped with a warning when read back).
//! - `results.json` is always replaced atomically (write a temporary file in the same directory,
//!   sync, rename), so readers see the old file or the new one, never half of one.

use super::schema::{
    CaseResult, Generator, LaunchRecord, ResultsFile, RunInfo, FORMAT_VERSION, METRICS_VERSION,
    READABLE_VERSIONS,
};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// File names inside a run directory.
pub const RESULTS_FILE: &str = "results.json";
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// Errors reading or writing results. Each names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{}: {source}", crate::units::path_text(.path))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{}: no such file or directory: give a results.json or a run directory that holds one",
        crate::units::path_text(.path)
    )]
    Missing { path: PathBuf },
    #[error("{}: {source}: give a path that can name a file", crate::units::path_text(.path))]
    BadPath {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: not a scalebench results file: {msg}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        msg: String,
    },
    #[error("{path}: format_version {found} cannot be read by scalebench {ours}, which reads versions {readable:?}: use a scalebench that writes version {found}")]
    Version {
        path: PathBuf,
        found: u64,
        ours: &'static str,
        readable: &'static [u32],
    },
    #[error("{path}: the file is empty (was the run killed before it wrote anything?): rerun, or `scalebench collect` its run directory")]
    Empty { path: PathBuf },
    #[error("{path}: {what}, not a regular file (a FIFO, socket or device would be read for ever or not at all): give a file")]
    NotAFile { path: PathBuf, what: &'static str },
    /// Read, but its numbers cannot be measurements ([`super::validate`]).
    #[error("{path}: not usable results: {}, each named by its place in the file:\n{problems}\nrerun the measurement, or leave this file out (was it edited, merged by hand or written by a broken tool?)", crate::units::count(*.count, "problem", "problems"))]
    Invalid {
        path: PathBuf,
        count: usize,
        problems: String,
    },
    #[error("{path}:{line}:{column}: not UTF-8 text (byte {byte} of the file): give the JSON file scalebench wrote")]
    NotUtf8 {
        path: PathBuf,
        line: usize,
        column: usize,
        byte: usize,
    },
}

impl ResultsError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            ResultsError::Missing {
                path: path.to_path_buf(),
            }
        } else if source.raw_os_error() == Some(libc::ENAMETOOLONG) {
            // The user's input, not the machine's failure: no file can have that name.
            ResultsError::BadPath {
                path: path.to_path_buf(),
                source,
            }
        } else {
            ResultsError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    }
}

/// The generator block for files written by this build.
pub fn this_generator() -> Generator {
    Generator {
        name: "scalebench".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_sha: option_env!("SCALEBENCH_GIT_SHA")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    }
}

/// Assembles a results file in the current format.
pub fn new_results(
    run: RunInfo,
    launches: Vec<LaunchRecord>,
    cases: Vec<CaseResult>,
) -> ResultsFile {
    ResultsFile {
        format_version: FORMAT_VERSION,
        metrics_version: METRICS_VERSION,
        generator: this_generator(),
        run,
        launches,
        cases,
        superseded_launches: Vec::new(),
        completeness: None,
    }
}

/// Writes `bytes` to `path` atomically: a temporary sibling, synced, then renamed over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ResultsError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| ResultsError::io(dir, e))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // Sync the directory so the rename itself survives a crash.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        ResultsError::io(path, e)
    })
}

/// Writes a results file atomically as pretty JSON.
pub fn write_results(path: &Path, results: &ResultsFile) -> Result<(), ResultsError> {
    let mut bytes = serde_json::to_vec_pretty(results).map_err(|e| ResultsError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JournalRecord {
    /// Written first: what the run is. (Large records are boxed: the enum stays small.)
    Run(RunInfo),
    /// A launch started or ended (the last record for a launch id wins).
    Launch(Box<LaunchRecord>),
    /// A case finished (the last record for a case id wins).
    Case(Box<CaseResult>),
}

/// An exclusive `flock` on `DIR/.lock`, held while this lives: one writer per run directory
/// (a sweep or a run), so two never write one results file.
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock without waiting; `Ok(None)` when another process holds it.
    pub fn try_take(dir: &Path) -> Result<Option<DirLock>, ResultsError> {
        use std::os::unix::io::AsRawFd;
        let path = dir.join(".lock");
        let file = File::create(&path).map_err(|e| ResultsError::io(&path, e))?;
        // SAFETY: the fd belongs to `file`, opened just above and alive across the call (and
        // for the life of the returned DirLock, which holds the lock); flock passes no
        // pointers. (std's File::try_lock needs Rust 1.89, above this crate's rust-version.)
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Ok(None);
        }
        Ok(Some(DirLock { _file: file }))
    }
}

/// Append-only journal of finished work.
pub struct Journal {
    file: File,
    path: PathBuf,
}

impl Journal {
    /// Opens (creating if needed) the journal at `path` for appending.
    pub fn open(path: &Path) -> Result<Self, ResultsError> {
        if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| ResultsError::io(dir, e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ResultsError::io(path, e))?;
        Ok(Journal {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends one record as a single line and syncs it to disk.
    pub fn append(&mut self, rec: &JournalRecord) -> Result<(), ResultsError> {
        let mut line = serde_json::to_vec(rec).map_err(|e| ResultsError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        // One write call per line: with O_APPEND, lines from one writer never interleave.
        self.file
            .write_all(&line)
            .and_then(|_| self.file.sync_data())
            .map_err(|e| ResultsError::io(&self.path, e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What a journal holds, with the problems met while reading it.
#[derive(Debug, Default)]
pub struct JournalContents {
    pub run: Option<RunInfo>,
    /// Latest record per launch id, in first-seen order.
    pub launches: Vec<LaunchRecord>,
    /// Latest record per case id, in first-seen order.
    pub cases: Vec<CaseResult>,
    /// Lines that could not be read (e.g. the torn last line of a killed run).
    pub warnings: Vec<String>,
}

/// Reads a journal. A malformed line is skipped with a warning naming it, since a killed
/// writer can leave a partial last line; every complete line is kept.
pub fn read_journal(path: &Path) -> Result<JournalContents, ResultsError> {
    let f = File::open(path).map_err(|e| ResultsError::io(path, e))?;
    let mut out = JournalContents::default();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| ResultsError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<JournalRecord>(&line) {
            Ok(JournalRecord::Run(r)) => out.run = Some(r),
            Ok(JournalRecord::Launch(l)) => upsert(&mut out.launches, *l, |x| &x.launch_id),
            Ok(JournalRecord::Case(c)) => upsert(&mut out.cases, *c, |x| &x.id),
            Err(e) => out.warnings.push(format!(
                "{}:{}: skipped an unreadable journal line ({e})",
                path.display(),
                i + 1
            )),
        }
    }
    Ok(out)
}

/// Replaces the element with the same key, or appends.
pub fn upsert<T>(v: &mut Vec<T>, item: T, key: impl Fn(&T) -> &String) {
    match v.iter().position(|x| key(x) == key(&item)) {
        Some(i) => v[i] = item,
        None => v.push(item),
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.chars().count(), |i| before[i + 1..].chars().count())
        + 1;
    (line, col)
}

/// What a path that is not a regular file is, in words (for a message that names it).
pub fn kind_of(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The one check every path input goes through before it is opened (specs, plans, results,
/// links files, site profiles, the history index): a regular file, or
/// [`ResultsError::NotAFile`] saying what it is. Opening a FIFO would block for ever, a
/// directory or device cannot be read as a file. Returns the file's metadata.
pub fn regular_file(file: &Path) -> Result<fs::Metadata, ResultsError> {
    let meta = fs::metadata(file).map_err(|e| ResultsError::io(file, e))?;
    if !meta.is_file() {
        return Err(ResultsError::NotAFile {
            path: file.to_path_buf(),
            what: kind_of(&meta),
        });
    }
    Ok(meta)
}

/// Reads an input file as text: only a regular file ([`regular_file`]), and invalid UTF-8 is
/// bad input located by line and column, not an I/O failure.
pub fn read_input_text(file: &Path) -> Result<String, ResultsError> {
    regular_file(file)?;
    let bytes = fs::read(file).map_err(|e| ResultsError::io(file, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let good = String::from_utf8_lossy(&e.as_bytes()[..at]).into_owned();
        let (line, column) = line_col(&good, at);
        ResultsError::NotUtf8 {
            path: file.to_path_buf(),
            line,
            column,
            byte: at + 1,
        }
    })
}

/// Reads a results file, or the `results.json` inside a run directory. Checks the format
/// version before anything else so a newer file gets a clear message, not a field error.
pub fn read_results(path: &Path) -> Result<ResultsFile, ResultsError> {
    let file = if path.is_dir() {
        path.join(RESULTS_FILE)
    } else {
        path.to_path_buf()
    };
    let text = read_input_text(&file)?;
    parse_results(&file, &text)
}

/// Parses results text; `path` is only used in messages.
pub fn parse_results(path: &Path, text: &str) -> Result<ResultsFile, ResultsError> {
    if text.trim().is_empty() {
        return Err(ResultsError::Empty {
            path: path.to_path_buf(),
        });
    }
    let parse_err = |e: serde_json::Error| ResultsError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        msg: e.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(parse_err)?;
    let version = value
        .get("format_version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| ResultsError::Parse {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            msg: "no numeric `format_version` at the top level".to_string(),
        })?;
    if !READABLE_VERSIONS.iter().any(|v| u64::from(*v) == version) {
        return Err(ResultsError::Version {
            path: path.to_path_buf(),
            found: version,
            ours: env!("CARGO_PKG_VERSION"),
            readable: READABLE_VERSIONS,
        });
    }
    // Parse the text again (not the Value) so errors carry line and column.
    serde_json::from_str(text).map_err(parse_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("scalebench-io-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn run_info() -> RunInfo {
        RunInfo {
            run_id: "r1".into(),
            started_unix_s: 1.0,
            written_unix_s: 2.0,
            command_line: vec!["scalebench".into()],
            emulated_nodes: false,
            labels: Default::default(),
        }
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let d = tmpdir("atomic");
        let p = d.join("x.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"second");
        // no temporary files left behind
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
    }

    #[test]
    fn journal_survives_a_torn_last_line() {
        let d = tmpdir("journal");
        let p = d.join(JOURNAL_FILE);
        let mut j = Journal::open(&p).unwrap();
        j.append(&JournalRecord::Run(run_info())).unwrap();
        drop(j);
        // a writer killed mid-line
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"type\":\"case\",\"id\":\"ab").unwrap();
        let c = read_journal(&p).unwrap();
        assert_eq!(c.run.unwrap().run_id, "r1");
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].contains(":2:"), "{:?}", c.warnings);
    }

    #[test]
    fn version_and_parse_errors_name_the_file() {
        let p = Path::new("some/results.json");
        let e = parse_results(p, "{\"format_version\": 99}").unwrap_err();
        assert!(matches!(e, ResultsError::Version { found: 99, .. }));
        assert!(e.to_string().contains("some/results.json"));
        let e = parse_results(p, "{\"format_version\": 1, \"cases\": [").unwrap_err();
        assert!(matches!(e, ResultsError::Parse { .. }), "{e}");
        let e = parse_results(p, "   ").unwrap_err();
        assert!(matches!(e, ResultsError::Empty { .. }));
        let e = parse_results(p, "[1,2]").unwrap_err();
        assert!(e.to_string().contains("format_version"), "{e}");
        let e = read_results(Path::new("/nonexistent/dir/results.json")).unwrap_err();
        assert!(matches!(e, ResultsError::Missing { .. }));
    }

    #[test]
    fn fifos_and_invalid_utf8_are_bad_input() {
        let d = tmpdir("hostile");
        let fifo = d.join("results.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated CString that outlives the call; mkfifo only reads
        // the path. (std's mkfifo is still unstable.)
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Without the check this blocks forever in open().
        let e = read_results(&d).unwrap_err();
        assert!(matches!(e, ResultsError::NotAFile { .. }), "{e}");
        let bad = d.join("bad.json");
        fs::write(&bad, b"{\n  \"format_version\": \xff1}").unwrap();
        let e = read_results(&bad).unwrap_err();
        assert!(
            matches!(
                e,
                ResultsError::NotUtf8 {
                    line: 2,
                    column: 21,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(crate::error::Error::from(e).exit_code(), 2);
    }

    #[test]
    fn floats_round_trip_bit_exactly() {
        // Sample-like values; serde_json's default float parser is off by one ULP for
        // about one value in ten (results must equal their journal exactly).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let values: Vec<f64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
                1e-7 * 10f64.powf(unit * 8.0)
            })
            .collect();
        let text = serde_json::to_string(&values).unwrap();
        let back: Vec<f64> = serde_json::from_str(&text).unwrap();
        let differ = values
            .iter()
            .zip(&back)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differ, 0, "{differ} of {} values changed", values.len());
    }

    #[test]
    fn results_round_trip() {
        let d = tmpdir("roundtrip");
        let r = new_results(run_info(), vec![], vec![]);
        write_results(&d.join(RESULTS_FILE), &r).unwrap();
        assert_eq!(read_results(&d).unwrap(), r);
    }
}
