//! Performance history: an embedded SQLite index over results files, the series of each case
//! across runs, and the change points in them.
//!
//! Like `report` and `compare` it reads only results files (through [`crate::results`]) and
//! runs without MPI. The results JSON stay the source of truth: the index (`--db`, default
//! `results/history.sqlite`) can always be rebuilt from them, and is, with a warning, when it
//! is found corrupt or truncated ([`store`]).
//!
//! - `history ingest DIR…`: adds every `results.json` under the trees whose content (SHA-256)
//!   the index does not hold yet ([`store::ingest`]).
//! - `history show [CASE]`: each matching case's series, one row per run ([`query`]).
//! - `history changes [CASE]`: the change points of each series ([`changes::detect`]); a change
//!   of set-up (CPU model, MPI library, GEMM library, fabric variables) breaks a series into
//!   segments, each searched alone, so a new machine is never reported as a step.

pub mod changes;
pub(crate) mod extract;
pub mod query;
pub mod store;

use crate::exit::{EXIT_BAD_INPUT, EXIT_RUNTIME};
use std::path::{Path, PathBuf};

/// Where the index lives unless `--db` says otherwise.
pub const DEFAULT_DB: &str = "results/history.sqlite";

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history ingest needs at least one directory (or results file) to index")]
    NoRoots,
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: SQLite: {source}", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{}: no history index here: build one with `scalebench history ingest DIR… --db {}`", .path.display(), .path.display())]
    NoIndex { path: PathBuf },
    #[error("{}: the index is corrupt or truncated", .path.display())]
    Corrupt { path: PathBuf },
    #[error("{}: the index has schema version {found}, newer than this scalebench reads (1): use a newer scalebench, or index into another --db", .path.display())]
    NewerSchema { path: PathBuf, found: i64 },
    #[error("{}: SQLite would not set journal mode {wanted} (it kept {got}): another process holds the index open in another mode; retry when it ends", .path.display())]
    JournalMode {
        path: PathBuf,
        wanted: &'static str,
        got: String,
    },
    #[error("--label {given}: give KEY=VALUE, e.g. --label cluster=mahti")]
    Label { given: String },
    #[error("--size {given}: {why}")]
    Size { given: String, why: String },
    #[error("{count} file(s) could not be indexed (the others were): {}{}", .first.join("; "), if *.count > .first.len() { "; …" } else { "" })]
    Refused { count: usize, first: Vec<String> },
}

impl HistoryError {
    pub fn exit_code(&self) -> u8 {
        match self {
            HistoryError::Io { .. } | HistoryError::Sqlite { .. } => EXIT_RUNTIME,
            _ => EXIT_BAD_INPUT,
        }
    }
}

/// `history ingest`.
#[derive(Debug, Clone)]
pub struct IngestRequest {
    pub db: PathBuf,
    pub roots: Vec<PathBuf>,
    /// No summary on stdout (warnings still go to stderr).
    pub quiet: bool,
}

fn absolute(p: &Path) -> Result<PathBuf, HistoryError> {
    std::fs::canonicalize(p).map_err(|source| HistoryError::Io {
        path: p.to_path_buf(),
        source,
    })
}

/// Opens the index for writing under the write lock; when it was corrupt, warns and
/// re-ingests every tree it had indexed. Returns the index and the lock (hold both).
fn open_rebuilding(db: &Path) -> Result<(store::Index, store::WriteLock), HistoryError> {
    let lock = store::WriteLock::take(db)?;
    let mut index = store::open_for_write(db)?;
    if let Some(aside) = &index.rebuilt_from {
        let roots: Vec<PathBuf> = store::roots(db)
            .into_iter()
            .filter(|r| r.exists())
            .collect();
        eprintln!(
            "warning: {}: the history index was corrupt or truncated; moved it to {} and rebuilt it from the results files of the {} tree(s) it indexed",
            db.display(),
            aside.display(),
            roots.len()
        );
        let s = store::ingest(&mut index, &roots)?;
        eprintln!(
            "warning: {}: rebuilt: {} results file(s), {} case row(s)",
            db.display(),
            s.added_files,
            s.added_cases
        );
    }
    Ok((index, lock))
}

/// `history ingest DIR…`: indexes the new results files; exit 2 when some were refused.
pub fn ingest(req: &IngestRequest) -> Result<u8, HistoryError> {
    if req.roots.is_empty() {
        return Err(HistoryError::NoRoots);
    }
    let roots = req
        .roots
        .iter()
        .map(|r| absolute(r))
        .collect::<Result<Vec<_>, _>>()?;
    let (mut index, _lock) = open_rebuilding(&req.db)?;
    store::remember_roots(&req.db, &roots)?;
    let s = store::ingest(&mut index, &roots)?;
    if !req.quiet {
        println!(
            "{}: {} results file(s) found, {} added ({} case rows), {} already indexed, {} refused; journal mode {} ({} filesystem, magic {:#x})",
            req.db.display(),
            s.found,
            s.added_files,
            s.added_cases,
            s.already,
            s.refused.len(),
            index.fs.journal_mode(),
            index.fs.name,
            index.fs.magic
        );
    }
    if s.refused.is_empty() {
        Ok(crate::exit::EXIT_OK)
    } else {
        Err(HistoryError::Refused {
            count: s.refused.len(),
            first: s
                .refused
                .iter()
                .take(3)
                .map(|r| crate::present::untrusted::visible(r).into_owned())
                .collect(),
        })
    }
}

/// Opens the index to read; a corrupt one is rebuilt first (with a warning).
pub(crate) fn open_read(db: &Path) -> Result<rusqlite::Connection, HistoryError> {
    match store::open_for_read(db) {
        Err(HistoryError::Corrupt { .. }) => {
            drop(open_rebuilding(db)?);
            store::open_for_read(db)
        }
        r => r,
    }
}
