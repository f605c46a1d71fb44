//! Series out of the index: `history show` (each run's median and interval) and `history
//! changes` (where the level moved), as text or JSON.

use super::changes::{self, Settings};
use super::store::classify;
use super::{open_read, HistoryError};
use crate::present::untrusted::visible;
use rusqlite::types::Value;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The number a series is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// busbw for collectives, GFLOP/s per device for GEMMs, time where neither exists.
    Auto,
    Time,
    Busbw,
    Algbw,
    Gflops,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Auto => "auto",
            Metric::Time => "time",
            Metric::Busbw => "busbw",
            Metric::Algbw => "algbw",
            Metric::Gflops => "gflops",
        }
    }
    fn unit(self) -> &'static str {
        match self {
            Metric::Time | Metric::Auto => "s",
            Metric::Busbw | Metric::Algbw => "GB/s",
            Metric::Gflops => "GFLOP/s",
        }
    }
}

/// Which series: every filter given must hold.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// A case id (or its prefix), or text in the case's label.
    pub case: Option<String>,
    /// `KEY=VALUE` run labels.
    pub labels: Vec<String>,
    pub cluster: Option<String>,
    pub workload: Option<String>,
    /// Message size in bytes (`1MiB`).
    pub size: Option<String>,
    /// Text the set-up description contains (`mpi=Open MPI v4.1`, `FI_PROVIDER=cxi`).
    pub setup: Option<String>,
}

/// `history show` / `history changes`.
#[derive(Debug, Clone)]
pub struct Request {
    pub db: PathBuf,
    pub filter: Filter,
    pub metric: Metric,
    pub json: bool,
    /// For `changes`, and the change points `show --chart` marks.
    pub settings: Settings,
    /// `show --chart FILE.svg`.
    pub chart: Option<PathBuf>,
}

/// One run of a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub run_id: String,
    pub started_utc: String,
    pub git_sha: Option<String>,
    pub version: String,
    /// Index into the series' `setups`.
    pub setup: usize,
    pub n: i64,
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    /// Why the run may not stand for its set-up (comma-separated kinds; empty if none).
    pub unrepresentative: String,
}

/// A change point, or a set-up break, in a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// `change` (the level moved within one set-up), `setup` (a new set-up starts here) or
    /// `outlier` (a wild run, screened: neither a step nor part of a level).
    pub kind: &'static str,
    /// Index of the first point of the new level (into `points`).
    pub index: usize,
    pub run_id: String,
    pub started_utc: String,
    pub git_sha: Option<String>,
    /// `better`, `worse` (by the metric's sense), or `-` for a set-up break or an outlier.
    pub direction: &'static str,
    /// Relative change of the level (medians of the screened runs after/before − 1); for an
    /// outlier, its value against its level's median − 1.
    pub relative: Option<f64>,
    /// 1 − the permutation p-value.
    pub confidence: Option<f64>,
}

/// One case on one cluster, in run order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub case_id: String,
    pub label: String,
    pub cluster: String,
    pub metric: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub setups: Vec<String>,
    pub points: Vec<Point>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
}

/// A row as the index returns it, before the metric is chosen.
pub(super) struct Row {
    pub(super) case_id: String,
    pub(super) label: String,
    pub(super) cluster: String,
    pub(super) workload: String,
    pub(super) bytes: Option<i64>,
    pub(super) point: Point,
    pub(super) setup: String,
    /// What turns a time into busbw, algbw and GFLOP/s per device (rate = c / time).
    pub(super) consts: [Option<f64>; 3],
}

fn where_clause(f: &Filter) -> Result<(String, Vec<Value>), HistoryError> {
    let mut conds = Vec::new();
    let mut args: Vec<Value> = Vec::new();
    if let Some(c) = &f.case {
        args.push(Value::Text(c.clone()));
        // An id or its prefix (hex) is a range on the index; other text is searched in the
        // labels (a scan of every row).
        conds.push(
            if !c.is_empty()
                && c.chars()
                    .all(|ch| ch.is_ascii_hexdigit() && !ch.is_ascii_uppercase())
            {
                format!("m.case_id >= ?{0} AND m.case_id < ?{0} || '~'", args.len())
            } else {
                format!("instr(m.label, ?{}) > 0", args.len())
            },
        );
    }
    for l in &f.labels {
        let Some((k, v)) = l.split_once('=') else {
            return Err(HistoryError::Label { given: l.clone() });
        };
        args.push(Value::Text(k.to_string()));
        args.push(Value::Text(v.to_string()));
        conds.push(format!(
            "json_extract(r.labels_json, '$.\"' || ?{} || '\"') = ?{}",
            args.len() - 1,
            args.len()
        ));
    }
    if let Some(c) = &f.cluster {
        args.push(Value::Text(c.clone()));
        conds.push(format!("r.cluster = ?{}", args.len()));
    }
    if let Some(w) = &f.workload {
        args.push(Value::Text(w.clone()));
        conds.push(format!("m.workload = ?{}", args.len()));
    }
    if let Some(s) = &f.size {
        let b = crate::units::parse_bytes(s).map_err(|e| HistoryError::Size {
            given: s.clone(),
            why: e.to_string(),
        })?;
        args.push(Value::Integer(b.0 as i64));
        conds.push(format!("m.bytes = ?{}", args.len()));
    }
    if let Some(s) = &f.setup {
        args.push(Value::Text(s.clone()));
        conds.push(format!("instr(m.setup, ?{}) > 0", args.len()));
    }
    let w = if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    };
    Ok((w, args))
}

fn fetch(req: &Request) -> Result<Vec<Row>, HistoryError> {
    let (w, args) = where_clause(&req.filter)?;
    let conn = open_read(&req.db)?;
    let db = &req.db;
    let sql = format!(
        "SELECT m.case_id, m.label, r.cluster, r.run_id, r.started_unix_s, r.git_sha, r.version,
                m.setup, m.n, m.median_s, m.lo_s, m.hi_s, m.unrepresentative,
                m.busbw_c, m.algbw_c, m.gflops_c, m.workload, m.bytes
         FROM measurement m JOIN run r ON r.run_key = m.run_key {w}
         ORDER BY m.case_id, r.cluster, r.started_unix_s, r.run_id, r.sha256"
    );
    let mut st = conn.prepare(&sql).map_err(|e| classify(db, e))?;
    let rows = st
        .query_map(rusqlite::params_from_iter(args), |r| {
            let started: f64 = r.get(4)?;
            Ok(Row {
                case_id: r.get(0)?,
                label: r.get(1)?,
                cluster: r.get(2)?,
                workload: r.get(16)?,
                bytes: r.get(17)?,
                setup: r.get(7)?,
                point: Point {
                    run_id: r.get(3)?,
                    started_utc: crate::results::utc_stamp(started),
                    git_sha: r.get(5)?,
                    version: r.get(6)?,
                    setup: 0,
                    n: r.get(8)?,
                    median: r.get(9)?,
                    lo: r.get(10)?,
                    hi: r.get(11)?,
                    unrepresentative: r.get(12)?,
                },
                consts: [r.get(13)?, r.get(14)?, r.get(15)?],
            })
        })
        .map_err(|e| classify(db, e))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| classify(db, e))
}

/// The matching rows in series order (case, cluster, start time).
/// (A page found bad only now is [`HistoryError::Corrupt`], with the command that rebuilds
/// the index: reading never moves or writes it.)
pub(super) fn rows(req: &Request) -> Result<Vec<Row>, HistoryError> {
    fetch(req)
}

/// Rows grouped into series (case × cluster), each in its metric (what `show` prints).
pub fn series(req: &Request) -> Result<Vec<Series>, HistoryError> {
    let rows = rows(req)?;
    let mut groups: BTreeMap<(String, String), Vec<Row>> = BTreeMap::new();
    for r in rows {
        groups
            .entry((r.case_id.clone(), r.cluster.clone()))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((case_id, cluster), rows) in groups {
        // A metric the case lacks in some run (a file from an older version) is read by time.
        let has = |i: usize| rows.iter().all(|r| r.consts[i].is_some());
        let metric = match req.metric {
            Metric::Auto if has(0) => Metric::Busbw,
            Metric::Auto if has(2) => Metric::Gflops,
            Metric::Auto => Metric::Time,
            Metric::Busbw if has(0) => Metric::Busbw,
            Metric::Algbw if has(1) => Metric::Algbw,
            Metric::Gflops if has(2) => Metric::Gflops,
            _ => Metric::Time,
        };
        let ci = match metric {
            Metric::Busbw => Some(0),
            Metric::Algbw => Some(1),
            Metric::Gflops => Some(2),
            _ => None,
        };
        let mut setups: Vec<String> = Vec::new();
        let label = rows[0].label.clone();
        let points = rows
            .into_iter()
            .map(|r| {
                let setup = match setups.iter().position(|s| *s == r.setup) {
                    Some(i) => i,
                    None => {
                        setups.push(r.setup.clone());
                        setups.len() - 1
                    }
                };
                let mut p = r.point;
                p.setup = setup;
                if let Some(c) = ci.and_then(|i| r.consts[i]) {
                    (p.median, p.lo, p.hi) = rate(c, &p);
                }
                p
            })
            .collect();
        out.push(Series {
            case_id,
            label,
            cluster,
            metric: metric.name(),
            unit: metric.unit(),
            higher_is_better: metric != Metric::Time,
            setups,
            points,
            steps: Vec::new(),
        });
    }
    Ok(out)
}

/// The series of each `(case id, cluster)` with its set-up breaks and change points (what the
/// report's trend section shows); pairs the index does not hold are left out. Each is a range
/// of the case index, so a report of many cases over a large index stays quick.
pub fn trends(
    db: &std::path::Path,
    wanted: &[(String, String)],
    settings: &Settings,
) -> Result<Vec<Series>, HistoryError> {
    let mut out = Vec::new();
    for (case, cluster) in wanted {
        let req = Request {
            db: db.to_path_buf(),
            filter: Filter {
                case: Some(case.clone()),
                cluster: Some(cluster.clone()),
                ..Filter::default()
            },
            metric: Metric::Auto,
            json: false,
            settings: *settings,
            chart: None,
        };
        for mut s in series(&req)? {
            if s.case_id == *case {
                s.steps = steps(&s, settings);
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// A time's median and interval as a rate `c / time` (the interval's ends swap).
pub(super) fn rate(c: f64, p: &Point) -> (f64, f64, f64) {
    (c / p.median, c / p.hi, c / p.lo)
}

/// Set-up breaks, then the change points of each set-up's stretch of runs.
pub fn steps(s: &Series, settings: &Settings) -> Vec<Step> {
    let step = |kind, index: usize, direction, relative, confidence| {
        let p: &Point = &s.points[index];
        Step {
            kind,
            index,
            run_id: p.run_id.clone(),
            started_utc: p.started_utc.clone(),
            git_sha: p.git_sha.clone(),
            direction,
            relative,
            confidence,
        }
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < s.points.len() {
        let setup = s.points[start].setup;
        let end = (start..s.points.len())
            .find(|&i| s.points[i].setup != setup)
            .unwrap_or(s.points.len());
        if start > 0 {
            out.push(step("setup", start, "-", None, None));
        }
        let values: Vec<f64> = s.points[start..end].iter().map(|p| p.median).collect();
        let found = changes::analyse(&values, settings);
        let mut here = Vec::new();
        for c in &found.changes {
            let up = c.relative > 0.0;
            let direction = if up == s.higher_is_better {
                "better"
            } else {
                "worse"
            };
            here.push(step(
                "change",
                start + c.index,
                direction,
                Some(c.relative),
                Some(1.0 - c.p_value),
            ));
        }
        for &i in &found.outliers {
            let rel = values[i] / level_around(&values, &found, i) - 1.0;
            here.push(step("outlier", start + i, "-", Some(rel), None));
        }
        here.sort_by_key(|st| st.index);
        out.extend(here);
        start = end;
    }
    out
}

/// The level a run is screened against: the median of the other runs of its level (between
/// the change points around it), outliers left out.
fn level_around(values: &[f64], found: &changes::Detection, i: usize) -> f64 {
    let first = found
        .changes
        .iter()
        .rev()
        .find(|c| c.index <= i)
        .map_or(0, |c| c.index);
    let end = found
        .changes
        .iter()
        .find(|c| c.index > i)
        .map_or(values.len(), |c| c.index);
    let mut kept: Vec<f64> = (first..end)
        .filter(|j| found.outliers.binary_search(j).is_err())
        .map(|j| values[j])
        .collect();
    kept.sort_by(f64::total_cmp);
    if kept.is_empty() {
        values[i]
    } else {
        crate::stats::quantile_sorted(&kept, 0.5)
    }
}

/// A value as people read it: seconds with a unit, rates with 1–4 decimals.
fn shown(x: f64, unit: &str) -> String {
    use crate::present::table::{format_num, NumFmt};
    format_num(
        x,
        if unit == "s" {
            NumFmt::Seconds
        } else {
            NumFmt::Rate
        },
    )
}

fn header(out: &mut String, s: &Series) {
    let _ = writeln!(
        out,
        "{} {} on {} — {} ({}, {} is better)",
        s.case_id,
        visible(&s.label),
        visible(&s.cluster),
        s.metric,
        s.unit,
        if s.higher_is_better {
            "higher"
        } else {
            "lower"
        }
    );
}

fn legend(out: &mut String, s: &Series) {
    for (i, setup) in s.setups.iter().enumerate() {
        let _ = writeln!(out, "  set-up #{}: {}", i + 1, visible(setup));
    }
}

fn commit(p: &Point) -> String {
    p.git_sha.as_deref().map_or_else(
        || format!("v{}", p.version),
        |g| g.chars().take(12).collect(),
    )
}

/// Prints the series as JSON (`--json` of show and changes).
fn print_json(all: &[Series]) -> u8 {
    let text =
        serde_json::to_string_pretty(&serde_json::json!({ "series": all })).unwrap_or_default();
    println!("{}", crate::present::untrusted::visible_json(&text));
    crate::exit::EXIT_OK
}

/// `history show`.
pub fn show(req: &Request) -> Result<u8, HistoryError> {
    let all = series(req)?;
    if let Some(path) = &req.chart {
        // The chart marks set-up breaks and change points; the table does not need them.
        let mut marked = all.clone();
        for s in &mut marked {
            s.steps = steps(s, &req.settings);
        }
        let svg = super::chart::svg(&marked)?;
        crate::results::io::write_atomic(path, svg.as_bytes())?;
        eprintln!("{}: a chart of {} series", path.display(), marked.len());
    }
    if req.json {
        return Ok(print_json(&all));
    }
    let mut out = String::new();
    if all.is_empty() {
        let _ = writeln!(out, "no series match in {}", req.db.display());
    }
    for s in &all {
        header(&mut out, s);
        let _ = writeln!(
            out,
            "  {:<17} {:<28} {:<12} {:>6} {:>5} {:>10} {:>21}  note",
            "started (UTC)", "run", "commit", "set-up", "n", "median", "interval"
        );
        for p in &s.points {
            // A stand-in's figure is labelled on its own line, not only in the legend below.
            let standin = s
                .setups
                .get(p.setup)
                .is_some_and(|u| super::extract::is_standin_setup(u));
            let note = match (standin, p.unrepresentative.is_empty()) {
                (true, true) => "STAND-IN (CPU test double, not a GPU figure)".to_string(),
                (true, false) => format!(
                    "STAND-IN (CPU test double, not a GPU figure); {}",
                    visible(&p.unrepresentative)
                ),
                (false, _) => visible(&p.unrepresentative).to_string(),
            };
            let _ = writeln!(
                out,
                "  {:<17} {:<28} {:<12} {:>6} {:>5} {:>10} {:>21}  {}",
                p.started_utc,
                visible(&p.run_id),
                visible(&commit(p)),
                format!("#{}", p.setup + 1),
                p.n,
                shown(p.median, s.unit),
                format!("[{}, {}]", shown(p.lo, s.unit), shown(p.hi, s.unit)),
                note
            );
        }
        legend(&mut out, s);
        out.push('\n');
    }
    print!("{out}");
    Ok(crate::exit::EXIT_OK)
}

/// `history changes`.
pub fn changes(req: &Request) -> Result<u8, HistoryError> {
    let mut all = series(req)?;
    for s in &mut all {
        s.steps = steps(s, &req.settings);
    }
    if req.json {
        return Ok(print_json(&all));
    }
    let mut out = String::new();
    let mut any = false;
    for s in all.iter().filter(|s| !s.steps.is_empty()) {
        any = true;
        header(&mut out, s);
        let wild: Vec<String> = s
            .steps
            .iter()
            .filter(|st| st.kind == "outlier")
            .map(|st| {
                format!(
                    "run {} (×{:.3})",
                    st.index + 1,
                    1.0 + st.relative.unwrap_or(0.0)
                )
            })
            .collect();
        for st in s.steps.iter().filter(|st| st.kind != "outlier") {
            let p = &s.points[st.index];
            match st.kind {
                "setup" => {
                    let _ = writeln!(
                        out,
                        "  run {:>3} {} {} ({}): set-up #{} starts; the series is searched on each side alone",
                        st.index + 1,
                        st.started_utc,
                        visible(&st.run_id),
                        visible(&commit(p)),
                        p.setup + 1
                    );
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "  run {:>3} {} {} ({}): {} {:+.1} % (confidence {:.3})",
                        st.index + 1,
                        st.started_utc,
                        visible(&st.run_id),
                        visible(&commit(p)),
                        st.direction,
                        st.relative.unwrap_or(0.0) * 100.0,
                        st.confidence.unwrap_or(0.0)
                    );
                }
            }
        }
        if !wild.is_empty() {
            let _ = writeln!(
                out,
                "  outliers, screened (neither steps nor part of a level; × their level): {}",
                wild.join(", ")
            );
        }
        legend(&mut out, s);
        out.push('\n');
    }
    if !any {
        let _ = writeln!(
            out,
            "no change points in {} series of {}",
            all.len(),
            req.db.display()
        );
    }
    print!("{out}");
    Ok(crate::exit::EXIT_OK)
}
