//! `scalebench report`: reads results files, derives every figure, draws the charts and writes
//! `report.html`, `report.md`, `results.csv`, `tables/*.csv` and `charts/*.{svg,png}`.
//!
//! All outputs are written into a private staging directory beside `--out` and renamed into
//! place at the end, so a report appears whole or not at all, and a bad input leaves nothing
//! behind. An existing directory is only replaced when it is an earlier scalebench report.

use super::analyze::{Analysis, Options};
use super::error::ReportError as Error;
use super::load::{self, Filter};
use super::table::case_table;
use super::{document, plot};
use crate::exit::EXIT_OK;
use crate::present::doc::{Block, Doc};
use crate::present::table::Table;
use crate::present::untrusted::visible;
use crate::present::{html, markdown};
use rayon::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};

/// Marks a directory as a scalebench report (so a rerun may replace it).
pub(crate) const MARKER: &str = ".scalebench-report";

/// Which files to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outputs {
    pub html: bool,
    pub md: bool,
    pub csv: bool,
    pub svg: bool,
    pub png: bool,
}

impl Outputs {
    pub fn all() -> Outputs {
        Outputs {
            html: true,
            md: true,
            csv: true,
            svg: true,
            png: true,
        }
    }
}

/// Everything `report` needs, as typed values (built by `cli`; checked by [`run`]).
#[derive(Debug, Clone)]
pub struct Request {
    pub inputs: Vec<PathBuf>,
    pub out: PathBuf,
    pub title: Option<String>,
    pub outputs: Outputs,
    pub filters: Vec<Filter>,
    pub options: Options,
    /// `--history-db`: add a trend section from this history index.
    pub history_db: Option<PathBuf>,
    /// `--nccl-tuner`: also write NCCL's example-tuner configuration here.
    pub nccl_tuner: Option<PathBuf>,
}

/// What a report run wrote.
#[derive(Debug, Clone)]
pub struct Written {
    pub dir: PathBuf,
    pub cases: usize,
    pub charts: usize,
    /// Paths relative to `dir`.
    pub files: Vec<PathBuf>,
    /// The report's first screen: what ran on what, the main answer, how sure it is.
    pub first_screen: Vec<(String, String)>,
}

impl Outputs {
    /// No file at all (a start for a list of formats).
    pub fn none() -> Outputs {
        Outputs {
            html: false,
            md: false,
            csv: false,
            svg: false,
            png: false,
        }
    }
}

/// The output directory when none is given: reports/<UTC timestamp>.
pub(crate) fn default_out_dir() -> PathBuf {
    Path::new("reports").join(crate::results::utc_stamp(crate::results::now_unix_s()))
}

/// Checks the analysis options (the errors name the command-line option and the fix).
pub(crate) fn check_options(o: &Options) -> Result<(), Error> {
    if !(o.noisy_cv > 0.0 && o.noisy_cv.is_finite()) {
        return Err(Error::NoisyCv { value: o.noisy_cv });
    }
    if !(0.0..1.0).contains(&o.tie_band) {
        return Err(Error::TieBand { value: o.tie_band });
    }
    Ok(())
}

/// `scalebench report`: checks the request, writes the report, returns the exit code.
pub fn run(req: &Request) -> Result<u8, Error> {
    check_options(&req.options)?;
    let w = generate(req)?;
    let main = if req.outputs.html {
        "report.html"
    } else if req.outputs.md {
        "report.md"
    } else {
        "results.csv"
    };
    println!(
        "scalebench report: {} ({}, {}, {})",
        visible(&w.dir.join(main).display().to_string()),
        crate::present::count(w.cases, "case", "cases"),
        crate::present::count(w.charts, "chart", "charts"),
        crate::present::count(w.files.len(), "file", "files")
    );
    for (label, line) in &w.first_screen {
        println!("  {label}: {}", visible(line));
    }
    if let Some(t) = &req.nccl_tuner {
        println!(
            "scalebench report: NCCL tuner configuration {}",
            visible(&t.display().to_string())
        );
    }
    Ok(EXIT_OK)
}

/// Reads, derives, draws and writes a report.
pub fn generate(req: &Request) -> Result<Written, Error> {
    // Refuse an unusable --out before any work.
    check_out(&req.out)?;
    // links.json files (given, or in a run directory) get their own section.
    let (results, links) = load::split_links(&req.inputs)?;
    if results.is_empty() && !links.is_empty() {
        return links_only(req, &links);
    }
    let sources = load::load(&results)?;
    let selection = load::select(&sources, &req.filters)?;
    let analysis = Analysis::new(&sources, &selection, req.options);
    let o = req.outputs;
    // Figures are cheap to lay out; drawing them is what costs, and only for chart outputs.
    let mut figs = plot::figures(&analysis);
    let trend = match &req.history_db {
        Some(db) => Some(document::trend::Trend::read(&analysis, db, &mut figs)?),
        None => None,
    };
    let title = req
        .title
        .clone()
        .unwrap_or_else(|| default_title(&analysis));
    let drawn = o.png || o.svg || o.html;
    let link_inputs = link_inputs(&links, figs.len(), drawn);
    let (doc, first_screen) =
        document::build(&analysis, &figs, &title, trend.as_ref(), &link_inputs);
    // Refused before anything is written: a report without the file asked for is a surprise.
    let tuner = match &req.nccl_tuner {
        Some(path) => {
            let from = req
                .inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ");
            let text = super::tuner::tuner_text(&super::nccl::sweeps(&analysis), &visible(&from))
                .map_err(|reason| Error::NcclTuner {
                path: path.clone(),
                reason,
            })?;
            Some((path, text))
        }
        None => None,
    };
    let stage = Stage::new(&req.out)?;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut svgs = write_charts(&stage, &figs, o, &mut files)?;
    svgs.extend(write_links_charts(&stage, &link_inputs, o, &mut files)?);
    let cases = case_table(&analysis.entries, analysis.sources);
    if o.csv {
        files.push(stage.write("results.csv", cases.to_csv().as_bytes())?);
        // The summary tables mix cases: where any case ran on the stand-ins, every row of
        // every table carries the label (a CSV read alone must not pass for GPU figures).
        let standin = analysis.entries.iter().any(super::nccl::is_standin)
            || links.iter().any(|l| l.file.standin.is_some());
        for t in doc.tables().filter(|t| t.export) {
            let text = if standin {
                standin_labelled(&t.table).to_csv()
            } else {
                t.table.to_csv()
            };
            files.push(stage.write(&t.csv, text.as_bytes())?);
        }
    }
    if o.md {
        files.push(stage.write("report.md", markdown::render(&doc, image_ext(o)).as_bytes())?);
    }
    if o.html {
        files.push(write_html(&stage, &doc, &cases, &svgs, o.csv)?);
    }
    stage.commit()?;
    if let Some((path, text)) = tuner {
        // Whole or not at all: a tuner reading a half-written file would tune on half of it.
        let tmp = path.with_file_name(format!(
            ".{}.partial",
            path.file_name()
                .map_or("nccl_tuner".into(), |n| n.to_string_lossy())
        ));
        fs::write(&tmp, text).map_err(|e| io_err(&tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| io_err(path, e))?;
    }
    Ok(Written {
        dir: req.out.clone(),
        cases: analysis.entries.len(),
        charts: if drawn { figs.len() + links.len() } else { 0 },
        files,
        first_screen: first_screen
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    })
}

/// What every row of a summary table gains when some of the report's cases ran on the stand-ins.
pub(crate) const STANDIN_COLUMN: (&str, &str) = (
    "stand_in",
    "STAND-IN: some cases ran on scalebench's stand-in libraries (CPU test doubles); no figure here is a GPU's",
);

/// `t` with the stand-in column added to every row.
fn standin_labelled(t: &crate::present::table::Table) -> crate::present::table::Table {
    use crate::present::table::Cell;
    let mut out = t.clone();
    out.columns.push(STANDIN_COLUMN.0.to_string());
    for r in &mut out.rows {
        r.push(Cell::text(STANDIN_COLUMN.1));
    }
    out
}

/// The chart files report.md links to, if any.
fn image_ext(o: Outputs) -> Option<&'static str> {
    if o.png {
        Some("png")
    } else if o.svg {
        Some("svg")
    } else {
        None
    }
}

/// The links files as the document sees them: their heat maps follow the `first` figures.
fn link_inputs(
    links: &[load::LinksSource],
    first: usize,
    drawn: bool,
) -> Vec<document::links::LinksInput<'_>> {
    links
        .iter()
        .enumerate()
        .map(|(i, l)| document::links::LinksInput {
            path: &l.path,
            file: &l.file,
            figure: drawn.then_some(first + i),
            stem: if i == 0 {
                plot::links::STEM.to_string()
            } else {
                format!("{}_{}", plot::links::STEM, i + 1)
            },
        })
        .collect()
}

/// Draws and stages the links heat maps like [`write_charts`]; returns their SVG text.
fn write_links_charts(
    stage: &Stage,
    links: &[document::links::LinksInput<'_>],
    o: Outputs,
    files: &mut Vec<PathBuf>,
) -> Result<Vec<String>, Error> {
    let mut svgs = Vec::new();
    for l in links {
        if o.png {
            let rel = format!("charts/{}.png", l.stem);
            plot::links::write_png(l.file, &stage.path(&rel))?;
            files.push(rel.into());
        }
        if o.svg || o.html {
            let svg = plot::links::svg(l.file)?;
            if o.svg {
                files.push(stage.write(&format!("charts/{}.svg", l.stem), svg.as_bytes())?);
            }
            svgs.push(svg);
        }
    }
    Ok(svgs)
}

/// A report of links files alone (no results among the inputs): their sections only.
fn links_only(req: &Request, links: &[load::LinksSource]) -> Result<Written, Error> {
    let o = req.outputs;
    let drawn = o.png || o.svg || o.html;
    let inputs = link_inputs(links, 0, drawn);
    let mut doc = Doc {
        title: req
            .title
            .clone()
            .unwrap_or_else(|| "scalebench report: links".to_string()),
        blocks: Vec::new(),
    };
    doc.prose("The inputs hold link matrices (`links.json`) and no results files, so this report has only their sections.");
    document::links::links(&mut doc, &inputs);
    let stage = Stage::new(&req.out)?;
    let mut files: Vec<PathBuf> = Vec::new();
    let svgs = write_links_charts(&stage, &inputs, o, &mut files)?;
    if o.csv {
        let standin = links.iter().any(|l| l.file.standin.is_some());
        for t in doc.tables().filter(|t| t.export) {
            let text = if standin {
                standin_labelled(&t.table).to_csv()
            } else {
                t.table.to_csv()
            };
            files.push(stage.write(&t.csv, text.as_bytes())?);
        }
    }
    if o.md {
        files.push(stage.write("report.md", markdown::render(&doc, image_ext(o)).as_bytes())?);
    }
    if o.html {
        let page = html::render(&doc, &svgs, &html::nonce());
        files.push(stage.write("report.html", page.as_bytes())?);
    }
    stage.commit()?;
    Ok(Written {
        dir: req.out.clone(),
        cases: 0,
        charts: if drawn { links.len() } else { 0 },
        files,
        first_screen: Vec::new(),
    })
}

/// Draws every chart (in parallel: each PNG is its own file) and stages the PNG and SVG files;
/// returns the SVG text, which the HTML page inlines (empty strings when neither is wanted).
fn write_charts(
    stage: &Stage,
    figs: &[plot::Figure],
    o: Outputs,
    files: &mut Vec<PathBuf>,
) -> Result<Vec<String>, Error> {
    let svgs: Vec<String> = figs
        .par_iter()
        .map(|f| -> Result<String, Error> {
            if o.png {
                f.write_png(&stage.path(&format!("charts/{}.png", f.stem)))?;
            }
            if o.svg || o.html {
                // A label from a results file must not carry a control character into the
                // SVG (XML forbids most) or onto a terminal that prints it.
                f.to_svg().map(|s| visible(&s).into_owned())
            } else {
                Ok(String::new())
            }
        })
        .collect::<Result<_, _>>()?;
    for f in figs {
        if o.png {
            files.push(format!("charts/{}.png", f.stem).into());
        }
    }
    if o.svg {
        for (f, svg) in figs.iter().zip(&svgs) {
            files.push(stage.write(&format!("charts/{}.svg", f.stem), svg.as_bytes())?);
        }
    }
    Ok(svgs)
}

/// Stages report.html: the document with the case table, charts inline; without CSV output
/// the tables' CSV links are dropped.
fn write_html(
    stage: &Stage,
    doc: &Doc,
    cases: &Table,
    svgs: &[String],
    csv: bool,
) -> Result<PathBuf, Error> {
    let mut hdoc = doc.clone();
    hdoc.blocks.push(document::case_block(cases));
    if !csv {
        // No CSV files to link to: drop the links' targets from the page text.
        for b in &mut hdoc.blocks {
            if let Block::Table(t) = b {
                t.csv.clear();
            }
        }
    }
    let page = html::render(&hdoc, svgs, &html::nonce());
    stage.write("report.html", page.as_bytes())
}

fn default_title(a: &Analysis<'_>) -> String {
    let mut ids: Vec<&str> = a
        .sources
        .iter()
        .map(|s| s.file.run.run_id.as_str())
        .collect();
    ids.dedup();
    match ids.as_slice() {
        [one] => format!("scalebench report: run {one}"),
        many => format!("scalebench report: {} runs", many.len()),
    }
}

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// `--out` must be new, an empty directory, or an earlier report.
fn check_out(out: &Path) -> Result<(), Error> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        return Err(Error::OutNotADirectory {
            out: out.to_path_buf(),
        });
    }
    if out.join(MARKER).exists() {
        return Ok(());
    }
    let empty = fs::read_dir(out)
        .map_err(|e| io_err(out, e))?
        .next()
        .is_none();
    if empty {
        Ok(())
    } else {
        Err(Error::OutNotAReport {
            out: out.to_path_buf(),
        })
    }
}

/// A private directory beside the output that becomes the output on commit.
struct Stage {
    tmp: PathBuf,
    out: PathBuf,
    done: bool,
}

impl Stage {
    fn new(out: &Path) -> Result<Stage, Error> {
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        fs::create_dir_all(&parent).map_err(|e| io_err(&parent, e))?;
        let name = out
            .file_name()
            .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
        let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        for d in [tmp.clone(), tmp.join("charts"), tmp.join("tables")] {
            fs::create_dir_all(&d).map_err(|e| io_err(&d, e))?;
        }
        Ok(Stage {
            tmp,
            out: out.to_path_buf(),
            done: false,
        })
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.join(rel)
    }

    /// Writes a file into the stage; returns its path relative to the report.
    fn write(&self, rel: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
        let p = self.path(rel);
        if let Some(d) = p.parent() {
            fs::create_dir_all(d).map_err(|e| io_err(d, e))?;
        }
        fs::write(&p, bytes).map_err(|e| io_err(&self.out.join(rel), e))?;
        Ok(PathBuf::from(rel))
    }

    /// Moves the stage into place, replacing an earlier report whole.
    fn commit(mut self) -> Result<(), Error> {
        fs::write(
            self.tmp.join(MARKER),
            format!("scalebench {}\n", env!("CARGO_PKG_VERSION")),
        )
        .map_err(|e| io_err(&self.tmp, e))?;
        for d in ["charts", "tables"] {
            // Empty folders only confuse readers.
            let _ = fs::remove_dir(self.tmp.join(d));
        }
        let old = self.tmp.with_file_name(
            self.tmp
                .file_name()
                .map(|n| n.to_string_lossy().replace(".partial-", ".old-"))
                .unwrap_or_default(),
        );
        let had_old = self.out.exists();
        if had_old {
            fs::rename(&self.out, &old).map_err(|e| io_err(&self.out, e))?;
        }
        if let Err(e) = fs::rename(&self.tmp, &self.out) {
            if had_old {
                let _ = fs::rename(&old, &self.out);
            }
            return Err(io_err(&self.out, e));
        }
        self.done = true;
        if had_old {
            let _ = fs::remove_dir_all(&old);
        }
        if let Some(dir) = self.out.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(d) = fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}
