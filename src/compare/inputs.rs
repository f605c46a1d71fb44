//! The runs a command line names: results files, run directories and directories of runs
//! (in natural order), and the format an `--out` file's extension asks for.

use super::error::CompareError as Error;
use super::render::Format;
use crate::results::io::{ResultsError, RESULTS_FILE};
use std::path::{Path, PathBuf};

/// The runs a path names: a results file, a run directory, or a directory whose
/// subdirectories are run directories (every one holding a results file, in natural order:
/// `2` before `10`). A subdirectory without a results file is refused by name: skipping it
/// would quietly compare fewer runs than were collected. Plain files beside the runs (a log)
/// are not runs and are left alone.
pub fn expand_runs(path: &Path) -> Result<Vec<PathBuf>, Error> {
    if !path.is_dir() || path.join(RESULTS_FILE).exists() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| {
        Error::Results(ResultsError::Io {
            path: path.to_path_buf(),
            source: e,
        })
    })?;
    let (mut runs, mut without): (Vec<PathBuf>, Vec<PathBuf>) = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .partition(|p| p.join(RESULTS_FILE).is_file());
    if runs.is_empty() {
        return Err(Error::Results(ResultsError::Missing {
            path: path.join(RESULTS_FILE),
        }));
    }
    if !without.is_empty() {
        without.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
        let shown: Vec<String> = without
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect();
        return Err(Error::RunWithoutResults {
            path: path.to_path_buf(),
            without: without.len(),
            total: without.len() + runs.len(),
            shown,
            more: without.len() > 5,
        });
    }
    runs.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    Ok(runs)
}

/// Natural order of names: runs of digits compare as numbers (`run-2` < `run-10`), the rest
/// as text.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let dx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let dy = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (nx, ny) = (trim_zeros(&x[..dx]), trim_zeros(&y[..dy]));
                let o = nx.len().cmp(&ny.len()).then_with(|| nx.cmp(ny));
                if o != Ordering::Equal {
                    return o;
                }
                (x, y) = (&x[dx..], &y[dy..]);
            }
            (Some(p), Some(q)) => {
                if p != q {
                    return p.cmp(q);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let k = d.iter().take_while(|c| **c == b'0').count();
    &d[k..]
}

/// The format a file name asks for: `.md`, `.json`, `.txt`.
pub(crate) fn format_for_path(p: &Path) -> Option<Format> {
    match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
        "md" | "markdown" => Some(Format::Markdown),
        "json" => Some(Format::Json),
        "html" | "htm" => Some(Format::Html),
        "txt" | "text" => Some(Format::Text),
        _ => None,
    }
}
