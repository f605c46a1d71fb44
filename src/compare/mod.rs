//! `scalebench compare BASELINE CANDIDATE`: did anything get slower, trustworthily?
//!
//! Reads two results files (nothing else: no MPI, no GPU), checks that they can be compared
//! ([`provenance`]), compares every case by its stable id ([`analysis`], with the statistics in
//! [`stats`] and the per-sample metrics in [`metric`]), decides the exit code ([`gate`]) and
//! renders the report ([`render`]).
//!
//! Exit codes: 0 no regression, 1 regression found, 2 bad input or an unusable comparison
//! (unreadable, truncated or mismatched files; no case in common), 4 an I/O failure.

pub mod analysis;
pub mod gate;
pub mod metric;
pub mod provenance;
pub mod render;
pub mod stats;

pub use analysis::{compare, CaseComparison, Comparison, Settings, Verdict};
pub use gate::{FailOn, Report, Side};
pub use render::{render, Format};

use crate::cli::{CompareArgs, CompareMetric, CorrectionArg, FailOnArg, ReportFormat};
use crate::error::Error;
use crate::results::io::{parse_results, write_atomic, ResultsError, RESULTS_FILE};
use crate::results::schema::{ResultsFile, READABLE_VERSIONS};
use metric::{Metric, MetricChoice};
use stats::Correction;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a comparison is asked to do (the command line, resolved and checked).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub settings: Settings,
    pub fail_on: FailOn,
    /// Compare even when metric definitions or format versions differ.
    pub allow_mismatch: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            settings: Settings::default(),
            fail_on: FailOn::Regression,
            allow_mismatch: false,
        }
    }
}

impl Options {
    /// Resolves and checks the command line.
    pub fn from_args(args: &CompareArgs) -> Result<Self, Error> {
        let noise = args.noise;
        if !(noise.is_finite() && (0.0..1.0).contains(&noise)) {
            return Err(Error::input(format!(
                "--noise {noise}: give the noise band as a fraction in [0, 1), e.g. 0.02 for ±2 %"
            )));
        }
        let confidence = args.confidence;
        if !(confidence.is_finite() && (0.5..1.0).contains(&confidence)) {
            return Err(Error::input(format!(
                "--confidence {confidence}: give a probability in [0.5, 1), e.g. 0.95 (not 95)"
            )));
        }
        let metric = match args.metric {
            CompareMetric::Auto => MetricChoice::Auto,
            CompareMetric::Time => MetricChoice::Fixed(Metric::Time),
            CompareMetric::Busbw => MetricChoice::Fixed(Metric::Busbw),
            CompareMetric::Algbw => MetricChoice::Fixed(Metric::Algbw),
            CompareMetric::Gflops => MetricChoice::Fixed(Metric::Gflops),
        };
        let correction = match args.correction {
            CorrectionArg::Holm => Correction::Holm,
            CorrectionArg::Bh => Correction::BenjaminiHochberg,
            CorrectionArg::None => Correction::None,
        };
        let fail_on = match args.fail_on {
            FailOnArg::Regression => FailOn::Regression,
            FailOnArg::AnyChange => FailOn::AnyChange,
            FailOnArg::Never => FailOn::Never,
        };
        Ok(Options {
            settings: Settings {
                metric,
                noise,
                confidence,
                correction,
            },
            fail_on,
            allow_mismatch: args.allow_mismatch,
        })
    }
}

/// The command: compare, print the report, write it to `--out`, return the exit code.
pub fn run(args: &CompareArgs) -> Result<u8, Error> {
    let options = Options::from_args(args)?;
    let format = format_of(args.format);
    let report = compare_paths(&args.baseline, &args.candidate, &options)?;
    let text = render(&report, format, args.all);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        // A closed pipe (`| head`) is the reader's choice; the exit code still tells the verdict.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(Error::Runtime(format!("writing the report to stdout: {e}")));
        }
    }
    if let Some(out) = &args.out {
        let f = format_for_path(out).unwrap_or(format);
        let body = if f == format {
            text
        } else {
            render(&report, f, args.all)
        };
        write_atomic(out, body.as_bytes())?;
    }
    Ok(report.exit_code)
}

fn format_of(f: ReportFormat) -> Format {
    match f {
        ReportFormat::Text => Format::Text,
        ReportFormat::Md => Format::Markdown,
        ReportFormat::Json => Format::Json,
    }
}

/// The format a file name asks for: `.md`, `.json`, `.txt`.
fn format_for_path(p: &Path) -> Option<Format> {
    match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
        "md" | "markdown" => Some(Format::Markdown),
        "json" => Some(Format::Json),
        "txt" | "text" => Some(Format::Text),
        _ => None,
    }
}

/// A results file read for comparison, with what had to be accepted to read it.
struct Loaded {
    file: ResultsFile,
    path: PathBuf,
    warning: Option<String>,
}

/// Reads a results file (or the one in a run directory). One typed parse in the common case;
/// when it fails, [`parse_results`] parses again to name the version problem or the line.
fn load(path: &Path, allow_mismatch: bool) -> Result<Loaded, Error> {
    let file = if path.is_dir() {
        path.join(RESULTS_FILE)
    } else {
        path.to_path_buf()
    };
    // A regular file only (a FIFO would block forever); invalid UTF-8 is bad input (exit 2).
    let bytes = crate::results::io::read_input_text(&file)?.into_bytes();
    match serde_json::from_slice::<ResultsFile>(&bytes) {
        Ok(r) if READABLE_VERSIONS.contains(&r.format_version) => Ok(Loaded {
            file: r,
            path: file,
            warning: None,
        }),
        Ok(r) if allow_mismatch => {
            let warning = Some(format!(
                "{}: format_version {} is not one this scalebench reads ({READABLE_VERSIONS:?}); its fields parsed, so it is compared anyway (--allow-mismatch)",
                file.display(),
                r.format_version
            ));
            Ok(Loaded {
                file: r,
                path: file,
                warning,
            })
        }
        _ => {
            let text = String::from_utf8(bytes).map_err(|e| ResultsError::Parse {
                path: file.clone(),
                line: 1,
                column: 1,
                msg: format!("not UTF-8 text ({e}): is this a results.json?"),
            })?;
            let r = parse_results(&file, &text)?;
            Ok(Loaded {
                file: r,
                path: file,
                warning: None,
            })
        }
    }
}

/// A file whose cases are not one per id cannot be matched unambiguously.
fn check_unique_ids(l: &Loaded) -> Result<(), Error> {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(l.file.cases.len());
    for (i, c) in l.file.cases.iter().enumerate() {
        if let Some(first) = seen.insert(c.id.as_str(), i) {
            return Err(Error::input(format!(
                "{}: case id {} appears twice (cases {} and {}: {}): a results file holds one record per case; was it concatenated or edited by hand?",
                l.path.display(),
                c.id,
                first,
                i,
                c.params.label()
            )));
        }
    }
    Ok(())
}

fn side(l: &Loaded) -> Side {
    let g = &l.file.generator;
    Side {
        path: l.path.display().to_string(),
        run_id: l.file.run.run_id.clone(),
        generator: match &g.git_sha {
            Some(sha) => format!("{} {} ({sha})", g.name, g.version),
            None => format!("{} {}", g.name, g.version),
        },
        cases: l.file.cases.len(),
    }
}

/// Reads both files (in parallel), checks they can be compared and compares them.
pub fn compare_paths(
    baseline: &Path,
    candidate: &Path,
    options: &Options,
) -> Result<Report, Error> {
    let (b, c) = std::thread::scope(|s| {
        let cand = s.spawn(|| load(candidate, options.allow_mismatch));
        let base = load(baseline, options.allow_mismatch);
        let cand = cand
            .join()
            .unwrap_or_else(|_| Err(Error::Runtime("reading the candidate panicked".into())));
        (base, cand)
    });
    let (b, c) = (b?, c?);
    compare_loaded(b, c, options)
}

/// Compares two results files already in memory (`*_path` only name them in the report).
pub fn compare_files(
    baseline: ResultsFile,
    baseline_path: &Path,
    candidate: ResultsFile,
    candidate_path: &Path,
    options: &Options,
) -> Result<Report, Error> {
    let wrap = |file, path: &Path| Loaded {
        file,
        path: path.to_path_buf(),
        warning: None,
    };
    compare_loaded(
        wrap(baseline, baseline_path),
        wrap(candidate, candidate_path),
        options,
    )
}

fn compare_loaded(b: Loaded, c: Loaded, options: &Options) -> Result<Report, Error> {
    check_unique_ids(&b)?;
    check_unique_ids(&c)?;
    let differences = provenance::differences(&b.file, &c.file);
    let mut warnings: Vec<String> = b.warning.iter().chain(&c.warning).cloned().collect();
    for d in differences.iter().filter(|d| d.blocking) {
        if !options.allow_mismatch {
            return Err(Error::input(format!(
                "{} and {} cannot be compared: their {} differ ({} → {}), so the numbers mean different things: rerun the baseline with this scalebench, or pass --allow-mismatch to compare anyway",
                b.path.display(),
                c.path.display(),
                d.what,
                d.baseline,
                d.candidate
            )));
        }
        warnings.push(format!(
            "compared although the {} differ (--allow-mismatch)",
            d.what
        ));
    }
    warnings.extend(provenance::launch_warnings(&b.file, "baseline"));
    warnings.extend(provenance::launch_warnings(&c.file, "candidate"));
    let comparison = compare(&b.file, &c.file, &options.settings);
    if comparison.matched() == 0 {
        return Err(Error::input(format!(
            "{} ({} cases) and {} ({} cases) have no case in common, so nothing can be compared: cases match by their parameters (workload, sizes, dtype, shape, backend, topology, binding, …); run the candidate with the baseline's options",
            b.path.display(),
            b.file.cases.len(),
            c.path.display(),
            c.file.cases.len()
        )));
    }
    let failing = options.fail_on.failing(&comparison);
    let exit_code = options.fail_on.exit_code(&comparison);
    Ok(Report {
        baseline: side(&b),
        candidate: side(&c),
        differences,
        warnings,
        comparison,
        fail_on: options.fail_on,
        failing,
        exit_code,
    })
}
