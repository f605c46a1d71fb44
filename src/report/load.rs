//! Reading the inputs of a report: one or more results files or run directories, merged into one
//! set of cases. A case measured in several inputs (same id) counts once (the newest
//! measurement); `--only KEY=VALUE` filters narrow the set. Nothing is written here.

use super::error::ReportError as Error;
use crate::params::{CaseParams, ParamKey};
use crate::results::io::{read_results, RESULTS_FILE};
use crate::results::links::{read_links, LinksFile, LINKS_FILE};
use crate::results::schema::{CaseResult, LaunchRecord, ResultsFile};
use crate::results::validate::validate;
use crate::units::parse_bytes;
use std::collections::HashMap;
use std::path::PathBuf;

/// One input file.
#[derive(Debug, Clone)]
pub struct Source {
    /// The path as given (a file or a run directory).
    pub path: PathBuf,
    pub file: ResultsFile,
}

impl Source {
    /// The launch record a case ran in, if the file has it.
    /// Its launch's current attempt, or the superseded attempt that measured it.
    pub fn launch(&self, case: &CaseResult) -> Option<&LaunchRecord> {
        self.file.launch_of(case)
    }
}

/// Reads every input; each must pass [`validate`] (no empty file, no duplicate case, no
/// impossible number), and all must share one metrics version (numbers defined differently
/// cannot be set side by side).
pub(crate) fn load(paths: &[PathBuf]) -> Result<Vec<Source>, Error> {
    if paths.is_empty() {
        return Err(Error::NoInputs);
    }
    let mut sources: Vec<Source> = Vec::with_capacity(paths.len());
    for path in paths {
        let file = read_results(path)?;
        // The one validation `compare` applies too: a file no reader may use is refused here.
        let named = if path.is_dir() {
            path.join(RESULTS_FILE)
        } else {
            path.clone()
        };
        validate(&file, &named)?;
        if let Some(first) = sources.first() {
            if first.file.metrics_version != file.metrics_version {
                return Err(Error::MetricsVersion {
                    path: path.clone(),
                    version: file.metrics_version,
                    first: first.path.clone(),
                    first_version: first.file.metrics_version,
                });
            }
        }
        sources.push(Source {
            path: path.clone(),
            file,
        });
    }
    Ok(sources)
}

/// A `links.json` among the inputs (`scalebench links` wrote it; the report draws its heat map
/// and lists its verdicts).
#[derive(Debug, Clone)]
pub(crate) struct LinksSource {
    /// The file itself (`DIR/links.json` for a run directory).
    pub path: PathBuf,
    pub file: LinksFile,
}

/// Splits the inputs into results inputs and links files: a file named `links.json` is a links
/// file; a directory holding one adds it, and is a results input too when it holds a
/// `results.json` (a directory with neither stays one, so its error names the missing results).
/// A file named `results.json` stands for its run directory here: it brings the same links
/// files (`DIR/links.json`, the sweep's `DIR/links/<set-up>/links.json`) as `DIR` would.
pub(crate) fn split_links(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<LinksSource>), Error> {
    let mut results = Vec::new();
    let mut links = Vec::new();
    for path in paths {
        let run_dir = if path.is_dir() {
            Some(path.as_path())
        } else if path.file_name().is_some_and(|n| n == RESULTS_FILE) {
            path.parent()
        } else {
            None
        };
        let (links_path, is_results) = if let Some(dir) = run_dir {
            let l = dir.join(LINKS_FILE);
            let has_results = dir.join(RESULTS_FILE).exists();
            let has_links = l.exists();
            // A directory of links only is no results input; a results.json always is.
            let is_results = !path.is_dir() || has_results || !has_links;
            (has_links.then_some(l), is_results)
        } else if path.file_name().is_some_and(|n| n == LINKS_FILE) {
            (Some(path.clone()), false)
        } else {
            (None, true)
        };
        // A sweep's run directory holds one links.json per set-up (`links/<set-up>/`).
        let steps = run_dir.map(sweep_links).unwrap_or_default();
        // A run directory and its links.json both given: one section, not two.
        for l in links_path.into_iter().chain(steps) {
            if links.iter().any(|x: &LinksSource| x.path == l) {
                continue;
            }
            let file = read_links(&l)?;
            links.push(LinksSource { path: l, file });
        }
        if is_results {
            results.push(path.clone());
        }
    }
    Ok((results, links))
}

/// The links.json of each set-up of a sweep (`DIR/links/<set-up>/links.json`), by set-up.
fn sweep_links(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("links"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path().join(LINKS_FILE))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A `--only KEY=VALUE` filter on case parameters (KEY as in the canonical case text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub key: ParamKey,
    pub value: String,
}

/// The parameter names a filter may use (those of [`CaseParams::canonical`]).
pub(crate) fn filter_keys() -> Vec<ParamKey> {
    canonical_pairs(&sample_params())
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

/// The filter keys as the messages list them.
fn key_list(keys: &[ParamKey]) -> Vec<String> {
    keys.iter().map(|k| k.as_str().to_string()).collect()
}

fn sample_params() -> CaseParams {
    use crate::params::*;
    CaseParams::new(Workload::Allreduce, 1, 1)
}

/// The (key, value) pairs of a case's canonical text, in its fixed order.
pub(crate) fn canonical_pairs(p: &CaseParams) -> Vec<(ParamKey, String)> {
    p.pairs()
}

/// Parses `KEY=VALUE`; sizes may use binary units (`requested_bytes=1MiB`).
pub(crate) fn parse_filter(text: &str) -> Result<Filter, Error> {
    let keys = filter_keys();
    let Some((k, v)) = text.split_once('=') else {
        return Err(Error::FilterSyntax {
            text: text.to_string(),
            keys: key_list(&keys),
        });
    };
    let (k, v) = (k.trim(), v.trim());
    let Some(key) = ParamKey::parse(k).filter(|x| keys.contains(x)) else {
        return Err(Error::FilterKey {
            text: text.to_string(),
            key: k.to_string(),
            keys: key_list(&keys),
        });
    };
    let value = if key == ParamKey::RequestedBytes {
        parse_bytes(v)
            .map_err(|source| Error::FilterSize {
                text: text.to_string(),
                source,
            })?
            .get()
            .to_string()
    } else {
        v.to_ascii_lowercase()
    };
    Ok(Filter { key, value })
}

/// Filters on one key are alternatives (OR); filters on different keys all apply (AND).
fn matches(pairs: &[(ParamKey, String)], filters: &[Filter]) -> bool {
    let mut by_key: HashMap<ParamKey, Vec<&str>> = HashMap::new();
    for f in filters {
        by_key.entry(f.key).or_default().push(&f.value);
    }
    by_key.iter().all(|(k, vals)| {
        pairs
            .iter()
            .any(|(pk, pv)| pk == k && vals.iter().any(|v| pv.eq_ignore_ascii_case(v)))
    })
}

/// A case chosen for the report: indices into the sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub source: usize,
    pub case: usize,
}

/// The cases a report uses.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub picks: Vec<Pick>,
    /// Cases measured more than once across the inputs (only the newest is used).
    pub duplicates: usize,
    /// Cases left out by `--only`.
    pub filtered_out: usize,
}

/// Chooses the cases: the newest measurement of each case id (by finish time; on a tie, the
/// later input wins), then the filters. An empty result is an error naming the values present.
pub(crate) fn select(sources: &[Source], filters: &[Filter]) -> Result<Selection, Error> {
    let mut newest: HashMap<&str, Pick> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut duplicates = 0;
    for (si, s) in sources.iter().enumerate() {
        for (ci, c) in s.file.cases.iter().enumerate() {
            let pick = Pick {
                source: si,
                case: ci,
            };
            match newest.get_mut(c.id.as_str()) {
                None => {
                    newest.insert(&c.id, pick);
                    order.push(&c.id);
                }
                Some(old) => {
                    duplicates += 1;
                    let prev = &sources[old.source].file.cases[old.case];
                    if c.finished_unix_s >= prev.finished_unix_s {
                        *old = pick;
                    }
                }
            }
        }
    }
    let mut picks = Vec::with_capacity(order.len());
    let mut filtered_out = 0;
    for id in order {
        let p = newest[id];
        let c = &sources[p.source].file.cases[p.case];
        if filters.is_empty() || matches(&canonical_pairs(&c.params), filters) {
            picks.push(p);
        } else {
            filtered_out += 1;
        }
    }
    if picks.is_empty() {
        let mut present_by_key = Vec::new();
        for key in filters.iter().map(|f| f.key) {
            let mut present: Vec<String> = sources
                .iter()
                .flat_map(|s| s.file.cases.iter())
                .filter_map(|c| {
                    canonical_pairs(&c.params)
                        .into_iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, v)| v)
                })
                .collect();
            present.sort();
            present.dedup();
            present_by_key.push((key.to_string(), present));
        }
        return Err(Error::NoMatch {
            present: present_by_key,
        });
    }
    Ok(Selection {
        picks,
        duplicates,
        filtered_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_match() {
        let f = parse_filter("requested_bytes=1MiB").unwrap();
        assert_eq!(f.value, "1048576");
        let e = parse_filter("colour=red").unwrap_err().to_string();
        assert!(
            e.contains("unknown key 'colour'") && e.contains("workload"),
            "{e}"
        );
        assert!(parse_filter("workload").is_err());
        let mut p = sample_params();
        p.requested_bytes = Some(1 << 20);
        let pairs = canonical_pairs(&p);
        let wl = |v: &str| Filter {
            key: ParamKey::Workload,
            value: v.into(),
        };
        assert!(matches(&pairs, std::slice::from_ref(&f)));
        assert!(matches(&pairs, &[wl("allgather"), wl("allreduce")]));
        assert!(!matches(&pairs, &[wl("allgather")]));
        assert!(!matches(
            &pairs,
            &[wl("allreduce"), parse_filter("dtype=f64").unwrap()]
        ));
    }

    /// A sweep's run directory holds a links.json per set-up under `links/`: each is found
    /// (one section each, in set-up order), alongside the sweep's results; given again
    /// explicitly, a file still makes one section.
    #[test]
    fn a_sweeps_links_steps_are_each_found() {
        let dir =
            std::env::temp_dir().join(format!("scalebench-sweep-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let text = r#"{"links_format_version": 1, "generator": {"name": "scalebench", "version": "0"},
            "schedule": "round_robin", "bidirectional": false, "message_bytes": 1, "iters": 1,
            "warmup": 0, "hosts": ["a", "b"], "analysed": "inter_node",
            "matrix_gbps": [[null, 1.0], [1.0, null]], "median_gbps": 1.0,
            "residual_spread": 0.0, "findings": []}"#;
        for setup in ["n2-ppn1", "n1-ppn2"] {
            let d = dir.join("links").join(setup);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(LINKS_FILE), text).unwrap();
        }
        // a step that failed leaves its directory without a file: no section
        std::fs::create_dir_all(dir.join("links/n4-ppn1")).unwrap();
        std::fs::write(dir.join(RESULTS_FILE), "{}").unwrap();
        let again = dir.join("links/n2-ppn1").join(LINKS_FILE);
        let (results, links) = split_links(&[dir.clone(), again]).unwrap();
        assert_eq!(results, vec![dir.clone()]);
        let found: Vec<PathBuf> = links.iter().map(|l| l.path.clone()).collect();
        assert_eq!(
            found,
            vec![
                dir.join("links/n1-ppn2").join(LINKS_FILE),
                dir.join("links/n2-ppn1").join(LINKS_FILE)
            ]
        );
        // The directory's results.json given instead: the same steps, and it is the input.
        let file = dir.join(RESULTS_FILE);
        let (results, links) = split_links(std::slice::from_ref(&file)).unwrap();
        assert_eq!(results, vec![file]);
        let by_file: Vec<PathBuf> = links.iter().map(|l| l.path.clone()).collect();
        assert_eq!(by_file, found);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn links_files_are_found_beside_results_and_on_their_own() {
        let dir = std::env::temp_dir().join(format!("scalebench-split-{}", std::process::id()));
        let (only, both, neither) = (dir.join("only"), dir.join("both"), dir.join("neither"));
        for d in [&only, &both, &neither] {
            std::fs::create_dir_all(d).unwrap();
        }
        let text = r#"{"links_format_version": 1, "generator": {"name": "scalebench", "version": "0"},
            "schedule": "round_robin", "bidirectional": false, "message_bytes": 1, "iters": 1,
            "warmup": 0, "hosts": ["a", "b"], "analysed": "inter_node",
            "matrix_gbps": [[null, 1.0], [1.0, null]], "median_gbps": 1.0,
            "residual_spread": 0.0, "findings": []}"#;
        for d in [&only, &both] {
            std::fs::write(d.join(LINKS_FILE), text).unwrap();
        }
        std::fs::write(both.join(RESULTS_FILE), "{}").unwrap();
        let inputs = vec![
            only.clone(),
            both.clone(),
            neither.clone(),
            both.join(LINKS_FILE),
        ];
        let (results, links) = split_links(&inputs).unwrap();
        assert_eq!(results, vec![both.clone(), neither.clone()]);
        let found: Vec<&PathBuf> = links.iter().map(|l| &l.path).collect();
        assert_eq!(
            found,
            vec![&only.join(LINKS_FILE), &both.join(LINKS_FILE)],
            "the directory and its own links.json given: one file"
        );
        std::fs::write(only.join(LINKS_FILE), "{\"links_format_version\": 7}").unwrap();
        let e = split_links(std::slice::from_ref(&only))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("links_format_version 7") && e.contains("only/links.json"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn filter_keys_follow_the_canonical_text() {
        let keys = filter_keys();
        for k in [
            "workload",
            "nodes",
            "devices_per_node",
            "binding",
            "requested_bytes",
        ] {
            assert!(keys.iter().any(|x| x.as_str() == k), "{k} in {keys:?}");
        }
    }
}
