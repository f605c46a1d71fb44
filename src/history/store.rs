//! The SQLite index: where it lives, which journal mode its filesystem allows, its schema,
//! ingest (content-hashed, incremental, serialised between processes) and rebuild.
//!
//! The results JSON stay the source of truth. Every ingest appends its roots to
//! `<db>.roots`, a plain text file beside the index, so an index found corrupt or truncated is
//! moved aside and rebuilt from every tree it ever indexed, with a warning, by the next ingest
//! (read commands never move or change it). Only a file with SQLite's header is ever moved
//! ([`check_index_file`]).

use super::extract::{case_rows, run_row, CaseRow, RunRow};
use super::HistoryError;
use crate::results::io::{parse_results, read_input_text};
use crate::results::validate::validate;
use rayon::prelude::*;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, TransactionBehavior};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema's version, in `PRAGMA user_version`.
///
/// 2: files are keyed by the hash of their canonical JSON (`bytes_sha256` keeps the bytes'
/// hash for the quick skip), and the set-up names the backend, GPU model, libraries and the
/// stand-in flag. An index of version 1 is moved aside and rebuilt from its trees.
pub(crate) const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS source_file(
  sha256 TEXT PRIMARY KEY,
  bytes_sha256 TEXT NOT NULL,
  path TEXT NOT NULL,
  size_bytes INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS run(
  run_key INTEGER PRIMARY KEY,
  sha256 TEXT NOT NULL UNIQUE REFERENCES source_file(sha256) ON DELETE CASCADE,
  run_id TEXT NOT NULL,
  started_unix_s REAL NOT NULL,
  version TEXT NOT NULL,
  git_sha TEXT,
  cluster TEXT NOT NULL,
  labels_json TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS measurement(
  run_key INTEGER NOT NULL REFERENCES run(run_key) ON DELETE CASCADE,
  case_id TEXT NOT NULL,
  label TEXT NOT NULL,
  workload TEXT NOT NULL,
  nodes INTEGER NOT NULL,
  devices_per_node INTEGER NOT NULL,
  bytes INTEGER,
  setup TEXT NOT NULL,
  unrepresentative TEXT NOT NULL,
  n INTEGER NOT NULL,
  median_s REAL NOT NULL,
  lo_s REAL NOT NULL,
  hi_s REAL NOT NULL,
  busbw_c REAL,
  algbw_c REAL,
  gflops_c REAL,
  PRIMARY KEY(run_key, case_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS measurement_case ON measurement(case_id, run_key);
";

/// How long a writer waits for another process's transaction before giving up.
const BUSY: Duration = Duration::from_secs(120);

/// Files inserted per transaction: few enough that a concurrent reader is not held long.
const BATCH_FILES: usize = 200;

/// The filesystem under the index and the journal mode chosen for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filesystem {
    /// statfs f_type.
    pub magic: u64,
    /// Its name (`ext4`, `nfs`, …) or `unknown`.
    pub name: &'static str,
    /// Whether every process that opens the file runs on this host (WAL needs shared memory).
    pub local: bool,
}

impl Filesystem {
    /// `wal` where all processes share one host's memory, `delete` (the rollback journal)
    /// elsewhere: "WAL does not work over a network filesystem" (sqlite.org/wal.html).
    pub fn journal_mode(&self) -> &'static str {
        if self.local {
            "wal"
        } else {
            "delete"
        }
    }
}

/// statfs magics (linux/magic.h; Lustre, GPFS and BeeGFS from their sources): local ones first.
const FILESYSTEMS: &[(u64, &str, bool)] = &[
    (0xEF53, "ext4", true),
    (0x5846_5342, "xfs", true),
    (0x0102_1994, "tmpfs", true),
    (0x9123_683E, "btrfs", true),
    (0x794C_7630, "overlayfs", true),
    (0x2FC1_2FC1, "zfs", true),
    (0x6969, "nfs", false),
    (0x0BD0_0BD0, "lustre", false),
    (0x4750_4653, "gpfs", false),
    (0x1983_0326, "beegfs", false),
    (0x00C3_6400, "cephfs", false),
    (0xFF53_4D42, "cifs", false),
    (0xFE53_4D42, "smb2", false),
    (0x6573_5546, "fuse", false),
];

/// Names the filesystem holding `dir`; an unknown one counts as shared (the safe journal).
pub fn filesystem_of(dir: &Path) -> Filesystem {
    let magic = statfs_magic(dir).unwrap_or(0);
    let (name, local) = FILESYSTEMS
        .iter()
        .find(|(m, _, _)| *m == magic)
        .map_or(("unknown", false), |(_, n, l)| (*n, *l));
    Filesystem { magic, name, local }
}

fn statfs_magic(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `c` is a NUL-terminated path that outlives the call; `st` is a writable statfs
    // the call fills in; we read it only when the call returned 0.
    let rc = unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) };
    // SAFETY: statfs returned 0, so it initialised `st` (and it was zeroed before).
    (rc == 0).then(|| unsafe { st.assume_init() }.f_type as u64)
}

fn sqlite(path: &Path) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
    move |source| HistoryError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> HistoryError + '_ {
    move |source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether an error means the file is not a sound database (rebuild it), not a busy or
/// permission problem (report it).
fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// A file shorter than the page count its header claims was truncated: cheaper than
/// `quick_check` for every read. `None` when the header cannot say (a new or tiny file).
fn truncated(path: &Path) -> bool {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(100);
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    if f.take(100).read_to_end(&mut bytes).is_err() {
        return false;
    }
    if bytes.len() < 100 {
        return !bytes.is_empty();
    }
    let page = u32::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    let page = if page == 1 { 65_536 } else { u64::from(page) };
    let pages = u64::from(u32::from_be_bytes([
        bytes[28], bytes[29], bytes[30], bytes[31],
    ]));
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    // The in-header size is valid only when the change counter matches "version valid for".
    bytes[24..28] == bytes[92..96] && pages * page > len
}

/// What `--db` names, once it passed [`check_index_file`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexFile {
    /// Nothing there yet (ingest creates it).
    Absent,
    /// A regular file of 0 bytes (SQLite takes it as an empty database).
    Empty,
    /// A regular file that starts with SQLite's header: an index, sound or not.
    Sqlite,
}

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

/// The one check of `--db` (and `--history-db`) before anything opens, locks, moves or
/// creates it: absent, empty, or a regular file that starts with SQLite's header. Anything
/// else is [`HistoryError::NotAnIndex`] naming what it is (a directory, a FIFO, a results
/// file, a spec), so no command ever moves aside, replaces or blocks on what is no index.
pub fn check_index_file(db: &Path) -> Result<IndexFile, HistoryError> {
    use std::io::Read;
    let not = |what: String| HistoryError::NotAnIndex {
        path: db.to_path_buf(),
        what,
    };
    match std::fs::symlink_metadata(db) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(IndexFile::Absent),
        // No file can be looked at there (a name too long, a component not a directory): the
        // user's input, refused like any other path that is no index.
        Err(e) => return Err(not(format!("a path that cannot be used ({e})"))),
        Ok(_) => {}
    }
    let meta = match crate::results::io::regular_file(db) {
        Ok(m) => m,
        Err(crate::results::io::ResultsError::NotAFile { what, .. }) => {
            return Err(not(what.to_string()))
        }
        // A dangling link, or no permission to look.
        Err(_) => {
            return Err(not(
                "a link to nothing, or a file that cannot be looked at".into()
            ))
        }
    };
    if meta.len() == 0 {
        return Ok(IndexFile::Empty);
    }
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(db)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(io(db))?;
    if head.starts_with(SQLITE_HEADER) {
        return Ok(IndexFile::Sqlite);
    }
    Err(not(sniff(&head).to_string()))
}

/// What a file that is no SQLite database looks like, from its first bytes.
fn sniff(head: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    if t.starts_with('{') && t.contains("\"format_version\"") {
        "a scalebench results file (JSON)"
    } else if t.starts_with('{') && t.contains("\"links_format_version\"") {
        "a scalebench links file (JSON)"
    } else if t.starts_with('{') {
        "a JSON file"
    } else if t.contains("[axes]") || t.contains("[launch]") || t.starts_with("name") {
        "a sweep spec (TOML)"
    } else if t.starts_with('[') {
        "a JSON or TOML file"
    } else {
        "a file that is not an SQLite database"
    }
}

/// An open index.
pub struct Index {
    pub(crate) conn: Connection,
    pub path: PathBuf,
    pub fs: Filesystem,
    /// Whether the index was found corrupt (or of an older schema) and moved here; the
    /// caller re-ingests the roots.
    pub rebuilt_from: Option<PathBuf>,
    /// Why it was moved aside: `corrupt or truncated`, or `of an older schema`.
    pub rebuilt_why: &'static str,
}

fn roots_file(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(".roots");
    PathBuf::from(s)
}

fn lock_file(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// The trees ever ingested into `db`, in first-seen order (none when `<db>.roots` is not a
/// regular file: reading a FIFO would block).
pub fn roots(db: &Path) -> Vec<PathBuf> {
    let path = roots_file(db);
    if crate::results::io::regular_file(&path).is_err() {
        return Vec::new();
    }
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Held while a process writes the index (an `flock` on `<db>.lock`): SQLite's own locks
/// rely on POSIX locks that some network filesystems get wrong, so writers also queue here.
pub struct WriteLock(std::fs::File);

impl WriteLock {
    pub fn take(db: &Path) -> Result<Self, HistoryError> {
        use std::os::unix::io::AsRawFd;
        let path = lock_file(db);
        // The default index lives in results/, which a fresh checkout may not have yet.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        // SAFETY: the descriptor is open (owned by `f`) for the whole call.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io(&path)(std::io::Error::last_os_error()));
        }
        Ok(WriteLock(f))
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        use std::os::unix::io::AsRawFd;
        // SAFETY: the descriptor is still open (owned by self.0); unlocking cannot fail harmfully.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Opens (creating if needed) the index at `db` for writing, with the journal mode its
/// filesystem allows and the schema in place. A corrupt or truncated index (a file with
/// SQLite's header: [`check_index_file`] refuses anything else) is moved aside to
/// `<db>.corrupt-<stamp>` and a new one created (`rebuilt_from` says where the old one went);
/// the caller holds the [`WriteLock`].
pub fn open_for_write(db: &Path) -> Result<Index, HistoryError> {
    let kind = check_index_file(db)?;
    let dir = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let fs = filesystem_of(&dir);
    let mut rebuilt_from = None;
    let mut rebuilt_why = "";
    // Only a file that is SQLite's (check_index_file) is ever moved aside.
    let sqlite = kind == IndexFile::Sqlite;
    let bad = sqlite && (truncated(db) || !sound(db));
    let old = !bad && sqlite && older_schema(db);
    if bad || old {
        rebuilt_why = if bad {
            "corrupt or truncated"
        } else {
            "of an older schema"
        };
        let aside = PathBuf::from(format!(
            "{}.{}-{}",
            db.display(),
            if bad { "corrupt" } else { "old" },
            crate::results::utc_stamp(crate::results::now_unix_s())
        ));
        std::fs::rename(db, &aside).map_err(io(db))?;
        for ext in ["-wal", "-shm", "-journal"] {
            let side = PathBuf::from(format!("{}{ext}", db.display()));
            let _ = std::fs::remove_file(side);
        }
        rebuilt_from = Some(aside);
    }
    let conn = configure(db, &fs)?;
    Ok(Index {
        conn,
        path: db.to_path_buf(),
        fs,
        rebuilt_from,
        rebuilt_why,
    })
}

/// Whether the index was written by an older schema (its rows lack what this one keeps).
fn older_schema(db: &Path) -> bool {
    let Ok(c) = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return false;
    };
    let _ = c.busy_timeout(BUSY);
    c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .is_ok_and(|v| (1..SCHEMA_VERSION).contains(&v))
}

/// Whether SQLite finds the file sound (`PRAGMA quick_check`).
fn sound(db: &Path) -> bool {
    let Ok(c) = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return false;
    };
    let _ = c.busy_timeout(BUSY);
    match c.query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0)) {
        Ok(s) => s == "ok",
        Err(e) => !is_corrupt(&e),
    }
}

fn configure(db: &Path, fs: &Filesystem) -> Result<Connection, HistoryError> {
    let e = sqlite(db);
    let conn = Connection::open(db).map_err(&e)?;
    conn.busy_timeout(BUSY).map_err(&e)?;
    let mode: String = conn
        .query_row(
            &format!("PRAGMA journal_mode = {}", fs.journal_mode()),
            [],
            |r| r.get(0),
        )
        .map_err(&e)?;
    if !mode.eq_ignore_ascii_case(fs.journal_mode()) {
        return Err(HistoryError::JournalMode {
            path: db.to_path_buf(),
            wanted: fs.journal_mode(),
            got: mode,
        });
    }
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
        .map_err(&e)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(&e)?;
    if version > SCHEMA_VERSION {
        return Err(HistoryError::NewerSchema {
            path: db.to_path_buf(),
            found: version,
        });
    }
    let tx_conn = &conn;
    tx_conn
        .execute_batch(&format!(
            "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .map_err(&e)?;
    Ok(conn)
}

/// Opens an existing index to read. A truncated or corrupt one (or none) is an error the
/// caller answers by rebuilding ([`HistoryError::Corrupt`]).
pub fn open_for_read(db: &Path) -> Result<Connection, HistoryError> {
    if check_index_file(db)? != IndexFile::Sqlite {
        return Err(HistoryError::NoIndex {
            path: db.to_path_buf(),
        });
    }
    if truncated(db) {
        return Err(HistoryError::Corrupt {
            path: db.to_path_buf(),
        });
    }
    let conn =
        Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(sqlite(db))?;
    conn.busy_timeout(BUSY).map_err(sqlite(db))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| classify(db, e))?;
    if version != SCHEMA_VERSION {
        return Err(if version > SCHEMA_VERSION {
            HistoryError::NewerSchema {
                path: db.to_path_buf(),
                found: version,
            }
        } else if version >= 1 {
            HistoryError::OlderSchema {
                path: db.to_path_buf(),
                found: version,
            }
        } else {
            HistoryError::Corrupt {
                path: db.to_path_buf(),
            }
        });
    }
    Ok(conn)
}

/// A SQLite error as the history's: corruption is its own case (the caller rebuilds).
pub(crate) fn classify(db: &Path, e: rusqlite::Error) -> HistoryError {
    if is_corrupt(&e) {
        HistoryError::Corrupt {
            path: db.to_path_buf(),
        }
    } else {
        HistoryError::Sqlite {
            path: db.to_path_buf(),
            source: e,
        }
    }
}

/// What an ingest did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngestSummary {
    /// Results files found under the roots.
    pub found: usize,
    /// New files indexed (their runs and cases added).
    pub added_files: usize,
    pub added_cases: usize,
    /// Files whose content the index already held (under any path, whatever the whitespace).
    pub already: usize,
    /// Of those, files whose indexed path was gone: the index now points to the new path.
    pub moved: usize,
    /// Files refused (unreadable, not results, invalid), each with the reason.
    pub refused: Vec<String>,
}

/// Every `results.json` under each root (a file given directly is taken as it is), sorted.
pub fn results_files(roots: &[PathBuf]) -> Result<Vec<PathBuf>, HistoryError> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), HistoryError> {
        let has_results = dir.join(crate::results::io::RESULTS_FILE).is_file();
        for e in std::fs::read_dir(dir).map_err(io(dir))? {
            let e = e.map_err(io(dir))?;
            let ty = e.file_type().map_err(io(dir))?;
            let p = e.path();
            // A sweep's merged results.json holds every launch's cases: its attempts'
            // files under launches/ are copies, not more runs.
            if ty.is_dir() && !(e.file_name() == "launches" && has_results) {
                walk(&p, out)?;
            } else if ty.is_file() && e.file_name() == crate::results::io::RESULTS_FILE {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for r in roots {
        let meta = std::fs::metadata(r).map_err(io(r))?;
        if meta.is_dir() {
            walk(r, &mut out)?;
        } else {
            out.push(r.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// One parsed, new file ready to insert.
struct Parsed {
    sha: String,
    bytes_sha: String,
    path: PathBuf,
    size: u64,
    run: RunRow,
    cases: Vec<CaseRow>,
}

pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The hash of a results file's content: SHA-256 of its canonical JSON (keys sorted, no
/// whitespace, numbers in shortest round-trip form), so the same measurements rewritten with
/// other whitespace or key order are one run. `None` when the text is not JSON.
pub(crate) fn content_sha256(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    serde_json::to_vec(&v).ok().map(|b| sha256_hex(&b))
}

/// What the index holds already: by the bytes' hash (the quick skip) and by content hash,
/// each with the content hash and the path indexed.
#[derive(Default)]
struct Known {
    bytes: HashMap<String, (String, String)>,
    content: HashMap<String, String>,
}

/// What reading one file gave.
enum Prepared {
    New(Box<Parsed>),
    /// Content the index holds, with its content hash, bytes hash and the path indexed.
    Held {
        sha: String,
        bytes_sha: String,
        indexed: String,
    },
}

/// Reads, hashes and (when its content is new) parses one file.
fn prepare(path: &Path, known: &Known) -> Result<Prepared, String> {
    let text = read_input_text(path).map_err(|e| e.to_string())?;
    let bytes_sha = sha256_hex(text.as_bytes());
    if let Some((sha, indexed)) = known.bytes.get(&bytes_sha) {
        return Ok(Prepared::Held {
            sha: sha.clone(),
            bytes_sha,
            indexed: indexed.clone(),
        });
    }
    let file = parse_results(path, &text).map_err(|e| e.to_string())?;
    // Parsed above, so it is JSON; the fallback only keeps this total.
    let sha = content_sha256(&text).unwrap_or_else(|| bytes_sha.clone());
    if let Some(indexed) = known.content.get(&sha) {
        return Ok(Prepared::Held {
            sha,
            bytes_sha,
            indexed: indexed.clone(),
        });
    }
    validate(&file, path).map_err(|e| e.to_string())?;
    Ok(Prepared::New(Box::new(Parsed {
        sha,
        bytes_sha,
        path: path.to_path_buf(),
        size: text.len() as u64,
        run: run_row(&file),
        cases: case_rows(&file),
    })))
}

/// Adds every results file under `roots` whose content the index does not hold yet. Files
/// are read and parsed in parallel before the write lock is taken; each batch of inserts is
/// one `BEGIN IMMEDIATE` transaction, and a file another process added meanwhile is skipped
/// by its hash (`INSERT OR IGNORE`), so concurrent ingests add every row once.
pub fn ingest(index: &mut Index, roots: &[PathBuf]) -> Result<IngestSummary, HistoryError> {
    let files = results_files(roots)?;
    let db = index.path.clone();
    let e = sqlite(&db);
    let known = known(index)?;
    let prepared: Vec<(PathBuf, Result<Prepared, String>)> = files
        .par_iter()
        .map(|p| (p.clone(), prepare(p, &known)))
        .collect();
    let mut summary = IngestSummary {
        found: files.len(),
        ..IngestSummary::default()
    };
    let mut new = Vec::new();
    let mut moved = Vec::new();
    for (path, r) in prepared {
        match r {
            Ok(Prepared::New(p)) => new.push(*p),
            Ok(Prepared::Held {
                sha,
                bytes_sha,
                indexed,
            }) => {
                summary.already += 1;
                // A tree moved: point the index at where the file is now. A copy (the old
                // path still there) leaves it alone.
                if Path::new(&indexed) != path && !Path::new(&indexed).exists() {
                    moved.push((sha, bytes_sha, path));
                }
            }
            // The results layer's messages name the file already.
            Err(why) if why.contains(&*path.to_string_lossy()) => summary.refused.push(why),
            Err(why) => summary.refused.push(format!("{}: {why}", path.display())),
        }
    }
    summary.moved = repoint(index, &moved)?;
    for batch in new.chunks(BATCH_FILES) {
        let tx = index
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&e)?;
        {
            let mut add_file = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO source_file(sha256, bytes_sha256, path, size_bytes)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(&e)?;
            let mut add_run = tx
                .prepare_cached(
                    "INSERT INTO run(sha256, run_id, started_unix_s, version, git_sha, cluster, labels_json)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(&e)?;
            let mut add_case = tx
                .prepare_cached(
                    "INSERT INTO measurement(run_key, case_id, label, workload, nodes, devices_per_node,
                       bytes, setup, unrepresentative, n, median_s, lo_s, hi_s, busbw_c, algbw_c, gflops_c)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                )
                .map_err(&e)?;
            for p in batch {
                let path = p.path.to_string_lossy();
                if add_file
                    .execute(params![p.sha, p.bytes_sha, path, p.size as i64])
                    .map_err(&e)?
                    == 0
                {
                    // Another ingest added this content since we looked.
                    summary.already += 1;
                    continue;
                }
                let r = &p.run;
                let run_key = add_run
                    .insert(params![
                        p.sha,
                        r.run_id,
                        r.started_unix_s,
                        r.version,
                        r.git_sha,
                        r.cluster,
                        r.labels_json
                    ])
                    .map_err(&e)?;
                for c in &p.cases {
                    add_case
                        .execute(params![
                            run_key,
                            c.case_id,
                            c.label,
                            c.workload,
                            c.nodes,
                            c.devices_per_node,
                            c.bytes.map(|b| b as i64),
                            c.setup,
                            c.unrepresentative,
                            c.n as i64,
                            c.median_s,
                            c.lo_s,
                            c.hi_s,
                            c.busbw_c,
                            c.algbw_c,
                            c.gflops_c
                        ])
                        .map_err(&e)?;
                }
                summary.added_files += 1;
                summary.added_cases += p.cases.len();
            }
        }
        tx.commit().map_err(&e)?;
    }
    Ok(summary)
}

/// What the index holds, by bytes hash and by content hash.
fn known(index: &Index) -> Result<Known, HistoryError> {
    let e = sqlite(&index.path);
    let mut st = index
        .conn
        .prepare("SELECT sha256, bytes_sha256, path FROM source_file")
        .map_err(&e)?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(&e)?;
    let mut k = Known::default();
    for row in rows {
        let (sha, bytes, path) = row.map_err(&e)?;
        k.bytes.insert(bytes, (sha.clone(), path.clone()));
        k.content.insert(sha, path);
    }
    Ok(k)
}

/// Points indexed files at their new paths (content hash, bytes hash, path), in one
/// transaction; returns how many rows changed.
fn repoint(index: &mut Index, moved: &[(String, String, PathBuf)]) -> Result<usize, HistoryError> {
    if moved.is_empty() {
        return Ok(0);
    }
    let e = sqlite(&index.path);
    let tx = index
        .conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(&e)?;
    let mut n = 0;
    {
        let mut st = tx
            .prepare_cached("UPDATE source_file SET path = ?2, bytes_sha256 = ?3 WHERE sha256 = ?1")
            .map_err(&e)?;
        for (sha, bytes, path) in moved {
            n += st
                .execute(params![sha, path.to_string_lossy(), bytes])
                .map_err(&e)?;
        }
    }
    tx.commit().map_err(&e)?;
    Ok(n)
}

/// Appends the roots not yet listed in `<db>.roots` (absolute paths), under the write lock.
pub fn remember_roots(db: &Path, new: &[PathBuf]) -> Result<(), HistoryError> {
    let have: HashSet<PathBuf> = roots(db).into_iter().collect();
    let path = roots_file(db);
    if path.exists() {
        crate::results::io::regular_file(&path)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io(&path))?;
    for r in new {
        if !have.contains(r) {
            writeln!(f, "{}", r.display()).map_err(io(&path))?;
        }
    }
    f.sync_all().map_err(io(&path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tmpfs is local (WAL); procfs is no filesystem we know, so it gets the rollback journal
    /// like a network one would.
    #[test]
    fn journal_mode_follows_the_filesystem() {
        let shm = filesystem_of(Path::new("/dev/shm"));
        assert_eq!((shm.name, shm.journal_mode()), ("tmpfs", "wal"), "{shm:?}");
        let proc = filesystem_of(Path::new("/proc"));
        assert_eq!((proc.name, proc.journal_mode()), ("unknown", "delete"));
        let nfs = Filesystem {
            magic: 0x6969,
            name: "nfs",
            local: false,
        };
        assert_eq!(nfs.journal_mode(), "delete");
        assert!(FILESYSTEMS
            .iter()
            .filter(|f| ["nfs", "lustre", "gpfs"].contains(&f.1))
            .all(|f| !f.2));
    }
}
