//! Performance history: an embedded SQLite index over results files, the series of each case
//! across runs, and the change points in them.
//!
//! Like `report` and `compare` it reads only results files (through [`crate::results`]) and
//! runs without MPI. The results JSON stay the source of truth: the index (`--db`, default
//! `results/history.sqlite`) can always be rebuilt from them, and is, with a warning, when
//! `ingest` finds it corrupt or truncated ([`store`]); reading commands refuse such an index
//! with the command that rebuilds it, and never move or write it.
//!
//! - `history ingest DIR…`: adds every `results.json` under the trees whose content (SHA-256)
//!   the index does not hold yet ([`store::ingest`]).
//! - `history show [CASE]`: each matching case's series, one row per run ([`query`]), and
//!   with `--chart FILE.svg` a chart of them ([`chart`]).
//! - `history changes [CASE]`: the change points of each series ([`changes::detect`]); a change
//!   of set-up (CPU model, MPI library, GEMM library, fabric variables) breaks a series into
//!   segments, each searched alone, so a new machine is never reported as a step.
//! - `history export --format bencher|csv`: the series for other tools ([`export`]).

pub mod baseline;
pub mod changes;
pub mod chart;
pub mod export;
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
    #[error("{}: the index is corrupt or truncated: `scalebench history ingest DIR… --db {}` moves it aside and rebuilds it from the trees it indexed (reading commands leave it as it is)", .path.display(), .path.display())]
    Corrupt { path: PathBuf },
    #[error("{}: {what}, not a history index (an SQLite file): give --db a file of its own, e.g. {}; scalebench never moves, replaces or reads as an index what is not one", crate::units::path_text(.path), DEFAULT_DB)]
    NotAnIndex { path: PathBuf, what: String },
    #[error("{}: the index has schema version {found}, newer than this scalebench reads ({}): use a newer scalebench, or index into another --db", .path.display(), store::SCHEMA_VERSION)]
    NewerSchema { path: PathBuf, found: i64 },
    #[error("{}: the index has schema version {found}, older than this scalebench's ({}): `scalebench history ingest DIR… --db {}` moves it aside (kept as <db>.old-<stamp>) and rebuilds it from the trees it indexed (reading commands leave it as it is)", .path.display(), store::SCHEMA_VERSION, .path.display())]
    OlderSchema { path: PathBuf, found: i64 },
    #[error("{}: SQLite would not set journal mode {wanted} (it kept {got}): another process holds the index open in another mode; retry when it ends", .path.display())]
    JournalMode {
        path: PathBuf,
        wanted: &'static str,
        got: String,
    },
    #[error("--label {}: give KEY=VALUE, e.g. --label cluster=mahti", crate::present::untrusted::visible(&crate::units::shorten(.given)))]
    Label { given: String },
    #[error("--size {}: {why}", crate::present::untrusted::visible(&crate::units::shorten(.given)))]
    Size { given: String, why: String },
    #[error("--format {}: give bencher (Bencher's JSON metric format, one run) or csv (every run)", crate::present::untrusted::visible(&crate::units::shorten(.given)))]
    Format { given: String },
    #[error("--run picks the one run a Bencher report holds: give it with --format bencher, or leave it out (the CSV has every run)")]
    RunWithCsv,
    #[error("{}: {}", .db.display(), match .run { Some(r) => format!("no matching run has run id {}: `scalebench history show` lists the run ids", crate::present::untrusted::visible(r)), None => "no run matches the filters: `scalebench history show` lists what the index holds".to_string() })]
    NoRun { run: Option<String>, db: PathBuf },
    #[error("--baseline-history 0: give the number of recent runs to compare against, e.g. --baseline-history 5")]
    ZeroBaseline,
    #[error("--baseline-history: the candidate runs are from several clusters ({}): give runs of one cluster", .clusters.iter().map(|c| crate::present::untrusted::visible(c).into_owned()).collect::<Vec<_>>().join(", "))]
    CandidateClusters { clusters: Vec<String> },
    #[error("{}: the history index holds no run, so there is no baseline to take: index the baseline runs first (`scalebench history ingest DIR… --db {}`) or name the baseline files (`compare A1 A2 A3 -- B1 B2 B3`)", .path.display(), .path.display())]
    EmptyIndex { path: PathBuf },
    #[error("--baseline-history {asked}: {} holds {} on cluster {} with the candidate's set-up started before it{}: {}", .path.display(), crate::units::count(*.found, "run", "runs"), crate::present::untrusted::visible(.cluster), if *.other_setups > 0 { format!(" ({} more of another set-up do not count)", .other_setups) } else { String::new() }, too_few_fix(*.found, .path))]
    TooFewRuns {
        path: PathBuf,
        asked: usize,
        found: usize,
        cluster: String,
        other_setups: usize,
    },
    #[error("{}: the history index lists this file for run {}, but it {} since it was indexed: re-ingest its tree (`scalebench history ingest`) or name the baseline files", .path.display(), crate::present::untrusted::visible(.run_id), if *.gone { "is gone" } else { "has changed" })]
    Stale {
        path: PathBuf,
        run_id: String,
        gone: bool,
    },
    #[error("--chart: {count} series match, more than one chart shows ({}): narrow the filters (a case, --cluster, --workload, --size)", chart::MAX_PANELS)]
    TooManyToChart { count: usize },
    #[error("--chart: drawing failed: {why}")]
    Chart { why: String },
    /// Writing an export (atomically) failed.
    #[error("{0}")]
    Output(#[from] crate::results::io::ResultsError),
    #[error("{} could not be indexed (the others were): {}{}", crate::units::count(*.count, "file", "files"), .first.join("; "), if *.count > .first.len() { "; …" } else { "" })]
    Refused { count: usize, first: Vec<String> },
}

/// What to do when the index has fewer comparable runs than asked for.
fn too_few_fix(found: usize, db: &Path) -> String {
    let ingest = format!("`scalebench history ingest DIR… --db {}`", db.display());
    if found == 0 {
        format!("ingest the baseline runs ({ingest}), or check the candidate's cluster and set-up against `scalebench history show --db {}`", db.display())
    } else {
        format!("give --baseline-history {found} or less, or ingest more runs ({ingest})")
    }
}

impl HistoryError {
    pub fn exit_code(&self) -> u8 {
        match self {
            HistoryError::Io { .. }
            | HistoryError::Sqlite { .. }
            | HistoryError::Output(_)
            | HistoryError::Chart { .. } => EXIT_RUNTIME,
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

/// Opens the index for writing under the write lock; when it was corrupt or of an older
/// schema (moved aside, never deleted), warns and re-ingests every tree it had indexed, naming
/// the trees that are gone. Returns the index and the lock (hold both).
fn open_rebuilding(db: &Path) -> Result<(store::Index, store::WriteLock), HistoryError> {
    // Checked before `<db>.lock` is created beside it (`--db results` is no index).
    store::check_index_file(db)?;
    let lock = store::WriteLock::take(db)?;
    let mut index = store::open_for_write(db)?;
    if let Some(aside) = index.rebuilt_from.clone() {
        let (roots, gone): (Vec<PathBuf>, Vec<PathBuf>) =
            store::roots(db).into_iter().partition(|r| r.exists());
        eprintln!(
            "warning: {}: the history index was {}; moved it to {} and rebuilt it from the results files of the {} it indexed",
            db.display(),
            index.rebuilt_why,
            aside.display(),
            crate::units::count(roots.len(), "tree", "trees")
        );
        let s = store::ingest(&mut index, &roots)?;
        eprintln!(
            "warning: {}: rebuilt: {}, {}",
            db.display(),
            crate::units::count(s.added_files, "results file", "results files"),
            crate::units::count(s.added_cases, "case row", "case rows")
        );
        // Runs whose files are gone live on only in the file moved aside: say where.
        if !gone.is_empty() {
            eprintln!(
                "warning: {}: {} it indexed no longer {}: {}; their runs are kept only in {} (restore the {} and run `scalebench history ingest DIR… --db {}` again)",
                db.display(),
                crate::units::count(gone.len(), "tree", "trees"),
                if gone.len() == 1 { "exists" } else { "exist" },
                gone.iter()
                    .map(|g| g.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                aside.display(),
                if gone.len() == 1 { "tree" } else { "trees" },
                db.display()
            );
        }
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
            "{}: {} found, {} added ({} case rows), {} already indexed{}, {} refused; journal mode {} ({} filesystem, magic {:#x})",
            req.db.display(),
            crate::units::count(s.found, "results file", "results files"),
            s.added_files,
            s.added_cases,
            s.already,
            if s.moved > 0 {
                format!(" ({} at a new path, updated)", s.moved)
            } else {
                String::new()
            },
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

/// The cluster a run is indexed under (the `cluster` label, else `SLURM_CLUSTER_NAME`, else
/// the first host): what the report's trend section looks a case up by.
pub fn cluster_of(file: &crate::results::schema::ResultsFile) -> String {
    extract::run_row(file).cluster
}

/// Opens the index to read. A corrupt one is an error saying how to rebuild it: a read never
/// moves, replaces or writes the index (`show --db results.json` must not touch the file).
pub(crate) fn open_read(db: &Path) -> Result<rusqlite::Connection, HistoryError> {
    store::open_for_read(db)
}
