//! `history export`: the matching series for other tools, written atomically (a temporary
//! file, then a rename), so a reader never sees a partial file.
//!
//! - `bencher`: Bencher Metric Format JSON (bencher.dev/docs/reference/bencher-metric-format):
//!   `{benchmark: {measure: {value, lower_value, upper_value}}}`. A BMF document is one report
//!   of one run (`bencher run --hash SHA --testbed CLUSTER --file F --adapter json`), so this
//!   writes one run: `--run RUN_ID`, else the latest matching run. Benchmarks are the case
//!   labels (the case id added where two cases of the run share a label); measures are
//!   `latency` (Bencher's built-in, nanoseconds), and where the case has them `busbw-gb-s`,
//!   `algbw-gb-s`, `gflops-per-device` (Bencher creates a measure it does not know).
//! - `csv`: one row per case × run in series order, every metric with its unit in the column
//!   name; numbers written in Rust's shortest round-trip form.

use super::query::{rate, rows, Filter, Metric, Request, Row};
use super::HistoryError;
use crate::present::table::{Cell, NumFmt, Table};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// `history export`.
#[derive(Debug, Clone)]
pub struct ExportRequest {
    pub db: PathBuf,
    pub filter: Filter,
    /// As given: `bencher` or `csv` (checked here, so a wrong one is one sentence, exit 2).
    pub format: String,
    pub out: Option<PathBuf>,
    /// bencher: the run to export; default the latest matching run.
    pub run: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Bencher,
    Csv,
}

/// The rates a row may have, in `Row::consts` order: (BMF measure, CSV column before and
/// after `median`/`lo`/`hi`: the unit last).
const RATES: [(&str, &str, &str); 3] = [
    ("busbw-gb-s", "busbw", "_GBps"),
    ("algbw-gb-s", "algbw", "_GBps"),
    ("gflops-per-device", "gflops_per_device", ""),
];

/// One measure of a BMF benchmark.
#[derive(Debug, Clone, Copy, Serialize)]
struct Measure {
    value: f64,
    lower_value: f64,
    upper_value: f64,
}

/// `history export`: writes the export to `--out` (atomically) or stdout.
pub fn export(req: &ExportRequest) -> Result<u8, HistoryError> {
    let format = match req.format.to_ascii_lowercase().as_str() {
        "bencher" | "bmf" => Format::Bencher,
        "csv" => Format::Csv,
        _ => {
            return Err(HistoryError::Format {
                given: req.format.clone(),
            })
        }
    };
    if req.run.is_some() && format == Format::Csv {
        return Err(HistoryError::RunWithCsv);
    }
    let all = rows(&Request {
        db: req.db.clone(),
        filter: req.filter.clone(),
        metric: Metric::Time,
        json: false,
        settings: Default::default(),
        chart: None,
    })?;
    let (text, note) = match format {
        Format::Csv => (csv(&all), crate::units::count(all.len(), "row", "rows")),
        Format::Bencher => bencher(&all, req)?,
    };
    match &req.out {
        Some(out) => {
            crate::results::io::write_atomic(out, text.as_bytes())?;
            eprintln!("{}: {note}", out.display());
        }
        // stdout may be a terminal: text from results files is shown escaped there (the
        // CSV's fields are already).
        None => {
            match format {
                Format::Bencher => println!("{}", crate::present::untrusted::visible_json(&text)),
                Format::Csv => print!("{text}"),
            }
            eprintln!("{note}");
        }
    }
    Ok(crate::exit::EXIT_OK)
}

fn commit(r: &Row) -> String {
    r.point.git_sha.clone().unwrap_or_default()
}

fn csv(all: &[Row]) -> String {
    let mut cols = vec![
        "case_id",
        "label",
        "workload",
        "bytes",
        "cluster",
        "run_id",
        "started_utc",
        "commit",
        "version",
        "setup",
        "n",
        "median_s",
        "lo_s",
        "hi_s",
    ];
    let rate_cols: Vec<[String; 3]> = RATES
        .iter()
        .map(|(_, name, unit)| ["median", "lo", "hi"].map(|w| format!("{name}_{w}{unit}")))
        .collect();
    let names: Vec<String> = rate_cols.iter().flatten().cloned().collect();
    cols.extend(names.iter().map(String::as_str));
    cols.push("unrepresentative");
    cols.push("stand_in");
    let mut t = Table::new(&cols);
    let num = |v: f64| Cell::num(v, NumFmt::Rate);
    for r in all {
        let p = &r.point;
        let mut row = vec![
            Cell::text(&r.case_id),
            Cell::text(&r.label),
            Cell::text(&r.workload),
            r.bytes.map_or(Cell::Empty, Cell::Int),
            Cell::text(&r.cluster),
            Cell::text(&p.run_id),
            Cell::text(&p.started_utc),
            Cell::text(commit(r)),
            Cell::text(&p.version),
            Cell::text(&r.setup),
            Cell::Int(p.n),
            num(p.median),
            num(p.lo),
            num(p.hi),
        ];
        for c in r.consts {
            match c {
                Some(c) => {
                    let (m, lo, hi) = rate(c, p);
                    row.extend([num(m), num(lo), num(hi)]);
                }
                None => row.extend([Cell::Empty, Cell::Empty, Cell::Empty]),
            }
        }
        row.push(Cell::text(&p.unrepresentative));
        row.push(Cell::Bool(super::extract::is_standin_setup(&r.setup)));
        t.push(row);
    }
    t.to_csv()
}

/// The BMF document of one run, and a note saying which run and how to load it.
fn bencher(all: &[Row], req: &ExportRequest) -> Result<(String, String), HistoryError> {
    // The run: asked for by id, else the latest (start time, then id) among the matches.
    let chosen = match &req.run {
        Some(id) => all.iter().find(|r| &r.point.run_id == id),
        None => all.iter().max_by(|a, b| {
            (&a.point.started_utc, &a.point.run_id).cmp(&(&b.point.started_utc, &b.point.run_id))
        }),
    };
    let Some(chosen) = chosen else {
        return Err(HistoryError::NoRun {
            run: req.run.clone(),
            db: req.db.clone(),
        });
    };
    let (run_id, cluster) = (&chosen.point.run_id, &chosen.cluster);
    let of_run: Vec<&Row> = all
        .iter()
        .filter(|r| &r.point.run_id == run_id && &r.cluster == cluster)
        .collect();
    let mut labels: HashMap<&str, usize> = HashMap::new();
    for r in &of_run {
        *labels.entry(r.label.as_str()).or_default() += 1;
    }
    let mut doc: BTreeMap<String, BTreeMap<&str, Measure>> = BTreeMap::new();
    let mut standins = 0usize;
    for r in &of_run {
        let name = if labels[r.label.as_str()] > 1 {
            format!("{} ({})", r.label, r.case_id)
        } else {
            r.label.clone()
        };
        // A stand-in's benchmark never shares a name (a Bencher series) with a real one.
        let name = if super::extract::is_standin_setup(&r.setup) {
            standins += 1;
            format!("STAND-IN {name}")
        } else {
            name
        };
        let p = &r.point;
        let mut measures = BTreeMap::new();
        measures.insert(
            "latency",
            Measure {
                value: p.median * 1e9,
                lower_value: p.lo * 1e9,
                upper_value: p.hi * 1e9,
            },
        );
        for (c, (measure, _, _)) in r.consts.iter().zip(RATES) {
            if let Some(c) = c {
                let (value, lower_value, upper_value) = rate(*c, p);
                measures.insert(
                    measure,
                    Measure {
                        value,
                        lower_value,
                        upper_value,
                    },
                );
            }
        }
        doc.insert(name, measures);
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    let sha = commit(chosen);
    let standin_note = if standins > 0 {
        format!(
            "; STAND-IN: {} ran on scalebench's stand-in libraries (CPU test doubles): their names start with STAND-IN and none of their figures is a GPU's",
            crate::units::count(standins, "benchmark", "benchmarks")
        )
    } else {
        String::new()
    };
    let note = format!(
        "run {} (commit {}, cluster {}, started {} UTC): {}{standin_note}; load it with `bencher run --hash {} --testbed {} --adapter json --file FILE`",
        crate::present::untrusted::visible(run_id),
        if sha.is_empty() { "unknown" } else { &sha },
        crate::present::untrusted::visible(cluster),
        chosen.point.started_utc,
        crate::units::count(doc.len(), "benchmark", "benchmarks"),
        if sha.is_empty() { "SHA" } else { &sha },
        crate::present::untrusted::visible(cluster),
    );
    Ok((text, note))
}
