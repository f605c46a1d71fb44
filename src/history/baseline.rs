//! `compare --baseline-history N`: the baseline side read from the index instead of named
//! files. The index keeps medians only, and compare judges each case on the runs' samples
//! (their medians, intervals and spread), so the index gives the *paths* of the runs it
//! chose (it keeps every indexed file's path and content hash) and compare reads those files
//! as if they had been named: the same code path, the same verdicts.
//!
//! Chosen: the N most recent runs (by start time) on the candidate's cluster, with exactly the
//! candidate's set-ups (CPU models, MPI and GEMM libraries, fabric variables: what breaks a
//! series in `history changes`), started before the earliest candidate run, the candidate's
//! own runs excluded. A file moved or changed since it was indexed is refused, not skipped.

use super::extract::{case_rows, run_row};
use super::store::classify;
use super::{open_read, HistoryError};
use crate::results::schema::ResultsFile;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One run the index offers as baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineRun {
    pub run_id: String,
    pub started_utc: String,
    pub git_sha: Option<String>,
    /// The results file, as indexed.
    pub path: PathBuf,
}

/// The chosen runs (oldest first) and where they were chosen from.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub runs: Vec<BaselineRun>,
    pub cluster: String,
    /// Runs on the cluster before the candidate passed over for another set-up.
    pub other_setups: usize,
}

impl Baseline {
    /// One line for stderr: which runs were chosen, and why these.
    pub fn describe(&self, db: &Path) -> String {
        let runs: Vec<String> = self
            .runs
            .iter()
            .map(|r| {
                format!(
                    "{} ({}, {})",
                    r.run_id,
                    r.started_utc,
                    r.git_sha
                        .as_deref()
                        .map_or("commit unknown".to_string(), |g| g
                            .chars()
                            .take(12)
                            .collect())
                )
            })
            .collect();
        format!(
            "baseline from the history index {}: the {} on cluster {} with the candidate's set-up, started before it{}: {}",
            db.display(),
            crate::units::count(self.runs.len(), "most recent run", "most recent runs"),
            self.cluster,
            if self.other_setups > 0 {
                format!(
                    " ({} of another set-up passed over)",
                    crate::units::count(self.other_setups, "run", "runs")
                )
            } else {
                String::new()
            },
            runs.join(", ")
        )
    }
}

/// The candidate's identity in the index: one cluster, its set-ups, its start, its run ids.
fn identity(candidates: &[&ResultsFile]) -> Result<(String, BTreeSet<String>, f64), HistoryError> {
    let clusters: BTreeSet<String> = candidates.iter().map(|f| run_row(f).cluster).collect();
    if clusters.len() != 1 {
        return Err(HistoryError::CandidateClusters {
            clusters: clusters.into_iter().collect(),
        });
    }
    let setups: BTreeSet<String> = candidates
        .iter()
        .flat_map(|f| case_rows(f).into_iter().map(|c| c.setup))
        .collect();
    let start = candidates
        .iter()
        .map(|f| f.run.started_unix_s)
        .fold(f64::INFINITY, f64::min);
    Ok((
        clusters.into_iter().next().unwrap_or_default(),
        setups,
        start,
    ))
}

/// The `n` most recent indexed runs comparable with `candidates` (see the module's rule);
/// fewer than `n` is an error that says how many there are.
pub fn baseline_runs(
    db: &Path,
    candidates: &[&ResultsFile],
    n: usize,
) -> Result<Baseline, HistoryError> {
    if n == 0 {
        return Err(HistoryError::ZeroBaseline);
    }
    let (cluster, setups, start) = identity(candidates)?;
    let own: BTreeSet<&str> = candidates.iter().map(|f| f.run.run_id.as_str()).collect();
    let conn = open_read(db)?;
    let err = |e| classify(db, e);
    let total: i64 = conn
        .query_row("SELECT count(*) FROM run", [], |r| r.get(0))
        .map_err(err)?;
    if total == 0 {
        return Err(HistoryError::EmptyIndex {
            path: db.to_path_buf(),
        });
    }
    let mut runs_st = conn
        .prepare(
            "SELECT r.run_key, r.run_id, r.started_unix_s, r.git_sha, f.path, r.sha256
             FROM run r JOIN source_file f ON f.sha256 = r.sha256
             WHERE r.cluster = ?1 AND r.started_unix_s < ?2
             ORDER BY r.started_unix_s DESC, r.run_id DESC",
        )
        .map_err(err)?;
    let mut setup_st = conn
        .prepare("SELECT DISTINCT setup FROM measurement WHERE run_key = ?1")
        .map_err(err)?;
    let mut rows = runs_st
        .query(rusqlite::params![cluster, start])
        .map_err(err)?;
    let mut chosen = Vec::new();
    let mut other_setups = 0;
    // Newest first, stopping at n: the per-run set-up lookup is a range of the primary key.
    while let Some(r) = rows.next().map_err(err)? {
        let run_id: String = r.get(1).map_err(err)?;
        if own.contains(run_id.as_str()) {
            continue;
        }
        let key: i64 = r.get(0).map_err(err)?;
        let theirs: BTreeSet<String> = setup_st
            .query_map([key], |x| x.get(0))
            .map_err(err)?
            .collect::<Result<_, _>>()
            .map_err(err)?;
        if theirs != setups {
            other_setups += 1;
            continue;
        }
        let path: String = r.get(4).map_err(err)?;
        let sha: String = r.get(5).map_err(err)?;
        check_unchanged(Path::new(&path), &sha, &run_id)?;
        chosen.push(BaselineRun {
            run_id,
            started_utc: crate::results::utc_stamp(r.get(2).map_err(err)?),
            git_sha: r.get(3).map_err(err)?,
            path: PathBuf::from(path),
        });
        if chosen.len() == n {
            break;
        }
    }
    if chosen.len() < n {
        return Err(HistoryError::TooFewRuns {
            path: db.to_path_buf(),
            asked: n,
            found: chosen.len(),
            cluster,
            other_setups,
        });
    }
    chosen.reverse();
    Ok(Baseline {
        runs: chosen,
        cluster,
        other_setups,
    })
}

/// The file the index points to still holds what was indexed.
fn check_unchanged(path: &Path, sha: &str, run_id: &str) -> Result<(), HistoryError> {
    let text = std::fs::read_to_string(path).ok();
    // The index keys content, not bytes: the same run rewritten with other whitespace holds.
    if text
        .as_deref()
        .and_then(super::store::content_sha256)
        .as_deref()
        == Some(sha)
    {
        return Ok(());
    }
    Err(HistoryError::Stale {
        path: path.to_path_buf(),
        run_id: run_id.to_string(),
        gone: text.is_none(),
    })
}
