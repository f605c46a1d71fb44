//! `scalebench compare BASELINE CANDIDATE` (or `compare A1 A2 … -- B1 B2 …`): did anything get
//! slower, trustworthily?
//!
//! Reads results files (nothing else: no MPI, no GPU), one or more runs per side (with
//! `--baseline-history N` the history index names the baseline's files:
//! [`crate::history::baseline`]), checks that they can be compared
//! ([`provenance`]), compares every case by its stable id ([`analysis`], with the statistics in
//! [`stats`] and the per-sample metrics in [`metric`]), decides the exit code ([`gate`]) and
//! renders the report ([`render`]).
//!
//! Exit codes: 0 no regression, 1 regression found or a case the baseline measured stopped
//! being measured, 2 bad input or an unusable comparison (unreadable, truncated or mismatched
//! files; set-ups that differ; the same run on both sides; no case in common; cases that say
//! "ok" without usable samples; too little power for the band), 4 an I/O failure.

pub(crate) mod analysis;
pub mod error;
pub(crate) mod gate;
pub(crate) mod html;
pub(crate) mod identical;
pub(crate) mod inputs;
pub(crate) mod metric;
pub(crate) mod provenance;
pub(crate) mod render;
pub(crate) mod setups;
pub mod stats;

pub use analysis::{
    collected_alternately, compare, compare_runs, Basis, CaseComparison, Comparison, Pairing,
    Settings, Verdict, DEFAULT_NOISE, MDE_POWER,
};
pub use error::CompareError;
pub use gate::{DropKind, Dropped, FailOn, Report, Side};
use inputs::format_for_path;
pub use inputs::{expand_runs, natural_cmp};
pub use render::{render, Format};
pub use setups::SetupSummary;

use crate::results::io::{parse_results, write_atomic, ResultsError, RESULTS_FILE};
use crate::results::representative;
use crate::results::schema::{ResultsFile, READABLE_VERSIONS};
use crate::results::validate::validate;
use error::CompareError as Error;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a comparison is asked to do (the command line, resolved and checked).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub settings: Settings,
    pub fail_on: FailOn,
    /// Compare even when metric definitions or format versions differ.
    pub allow_mismatch: bool,
    /// Kinds of cases that stop being measured without failing the gate.
    pub allow_dropped: Dropped,
    /// Report (with a warning) instead of refusing when the median MDE exceeds the band.
    pub allow_low_power: bool,
    /// Gate on fewer than [`MIN_RUNS`] runs a side anyway (with a warning).
    pub allow_one_run: bool,
}

/// The fewest runs a side a gate accepts: with one, nothing sees the run-to-run variance
/// (docs/compare.md, "One run a side").
pub const MIN_RUNS: usize = 2;

impl Default for Options {
    fn default() -> Self {
        Options {
            settings: Settings::default(),
            fail_on: FailOn::Regression,
            allow_mismatch: false,
            allow_dropped: Dropped::default(),
            allow_low_power: false,
            allow_one_run: false,
        }
    }
}

impl Options {
    /// Checks the thresholds (the errors name the command-line option and the fix).
    pub fn check(&self) -> Result<(), Error> {
        let noise = self.settings.noise;
        if !(noise.is_finite() && (0.0..1.0).contains(&noise)) {
            return Err(Error::Noise { noise });
        }
        let confidence = self.settings.confidence;
        if !(confidence.is_finite() && (0.5..1.0).contains(&confidence)) {
            return Err(Error::Confidence { confidence });
        }
        Ok(())
    }
}

/// What `scalebench compare` is asked to do, as typed values (built by `cli`).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `BASELINE CANDIDATE`, or the baseline runs when `candidates` is not empty.
    pub paths: Vec<PathBuf>,
    /// The candidate runs (after `--` on the command line).
    pub candidates: Vec<PathBuf>,
    /// Whether the command line had `--`: then an empty candidate list (an empty shell
    /// variable) is refused, not read as `BASELINE CANDIDATE`.
    pub separator: bool,
    pub options: Options,
    /// The format printed on stdout.
    pub format: Format,
    /// Also write the report to this file, in the format its extension names, else in `format`.
    pub out: Option<PathBuf>,
    /// Text format: list every case, not only changes.
    pub all: bool,
    /// `--baseline-history N`: the baseline is the recent N runs in this index, and `paths`
    /// are all candidate runs.
    pub baseline_history: Option<HistoryBaseline>,
}

/// Where `--baseline-history` takes the baseline from.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryBaseline {
    /// How many recent runs.
    pub runs: usize,
    /// The history index.
    pub db: PathBuf,
}

/// The command: compare, print the report, write it to `--out`, return the exit code.
pub fn run(req: &Request) -> Result<u8, Error> {
    let options = req.options;
    options.check()?;
    let format = req.format;
    let report = match &req.baseline_history {
        Some(h) => compare_with_history(req, h)?,
        None => {
            let (baseline, candidate) = sides(req)?;
            compare_paths(&baseline, &candidate, &options)?
        }
    };
    let text = render(&report, format, req.all);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        // A closed pipe (`| head`) is the reader's choice; the exit code still tells the verdict.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(Error::Stdout(e));
        }
    }
    if let Some(out) = &req.out {
        let f = format_for_path(out).unwrap_or(format);
        let body = if f == format {
            text
        } else {
            render(&report, f, req.all)
        };
        write_atomic(out, body.as_bytes())?;
    }
    Ok(report.exit_code)
}

/// `--baseline-history N`: reads the candidate runs, asks the index for the N recent runs of
/// their cluster and set-up (said on stderr), and compares those files exactly as if they had
/// been named before `--`.
fn compare_with_history(req: &Request, h: &HistoryBaseline) -> Result<Report, Error> {
    if req.separator {
        return Err(Error::HistoryWithSeparator);
    }
    let candidate = load_side(&req.paths, req.options.allow_mismatch)?;
    let files: Vec<&ResultsFile> = candidate.iter().map(|l| &l.file).collect();
    let chosen = crate::history::baseline::baseline_runs(&h.db, &files, h.runs)?;
    eprintln!(
        "{}",
        crate::present::untrusted::visible(&chosen.describe(&h.db))
    );
    let paths: Vec<PathBuf> = chosen.runs.into_iter().map(|r| r.path).collect();
    let baseline = load_side(&paths, req.options.allow_mismatch)?;
    compare_loaded(baseline, candidate, &req.options)
}

/// The two sides of the command line: `A B`, or `A1 A2 … -- B1 B2 …`.
fn sides(args: &Request) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Error> {
    if args.separator && args.candidates.is_empty() {
        return Err(Error::NoCandidate {
            baseline: args
                .paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
        });
    }
    if !args.candidates.is_empty() {
        return Ok((args.paths.clone(), args.candidates.clone()));
    }
    match args.paths.as_slice() {
        [a, b] => Ok((vec![a.clone()], vec![b.clone()])),
        [_] => Err(Error::OnePath),
        more => Err(Error::PathsWithoutSeparator { count: more.len() }),
    }
}

/// A results file read for comparison, with what had to be accepted to read it.
struct Loaded {
    file: ResultsFile,
    path: PathBuf,
    warning: Option<String>,
    /// FNV-1a of the file's bytes (files read from disk): a copy has the same.
    hash: Option<u64>,
    /// Fingerprint of its measurements ([`identical`]): a copy with its run id or stamps
    /// edited has the same.
    measured: Option<u64>,
}

impl Loaded {
    fn new(file: ResultsFile, path: PathBuf, warning: Option<String>, hash: Option<u64>) -> Self {
        let measured = identical::measurements_fingerprint(&file);
        Loaded {
            file,
            path,
            warning,
            hash,
            measured,
        }
    }
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
    let hash = Some(crate::params::fnv1a64(&bytes));
    match serde_json::from_slice::<ResultsFile>(&bytes) {
        Ok(r) if READABLE_VERSIONS.contains(&r.format_version) => {
            Ok(Loaded::new(r, file, None, hash))
        }
        Ok(r) if allow_mismatch => {
            let warning = Some(format!(
                "{}: format_version {} is not one this scalebench reads ({READABLE_VERSIONS:?}); its fields parsed, so it is compared anyway (--allow-mismatch)",
                file.display(),
                r.format_version
            ));
            Ok(Loaded::new(r, file, warning, hash))
        }
        _ => {
            let text = String::from_utf8(bytes).map_err(|e| ResultsError::Parse {
                path: file.clone(),
                line: 1,
                column: 1,
                msg: format!("not UTF-8 text ({e}): is this a results.json?"),
            })?;
            let r = parse_results(&file, &text)?;
            Ok(Loaded::new(r, file, None, hash))
        }
    }
}

fn side(runs: &[Loaded]) -> Side {
    let distinct = |f: &dyn Fn(&Loaded) -> String| -> String {
        let mut v: Vec<String> = runs.iter().map(f).collect();
        v.sort();
        v.dedup();
        v.join(", ")
    };
    let ids: std::collections::HashSet<&str> = runs
        .iter()
        .flat_map(|l| l.file.cases.iter().map(|c| c.id.as_str()))
        .collect();
    Side {
        path: side_paths(runs),
        run_id: distinct(&|l| l.file.run.run_id.clone()),
        generator: distinct(&|l| {
            let g = &l.file.generator;
            match &g.git_sha {
                Some(sha) => format!("{} {} ({sha})", g.name, g.version),
                None => format!("{} {}", g.name, g.version),
            }
        }),
        cases: ids.len(),
        runs: runs.len(),
        incomplete: runs
            .iter()
            .filter_map(|l| {
                let line = l.file.incomplete_headline()?;
                Some(format!("{line} ({})", l.path.display()))
            })
            .collect(),
    }
}

/// Reads every run of one side (in parallel with the other side's runs by the caller).
fn load_side(paths: &[PathBuf], allow_mismatch: bool) -> Result<Vec<Loaded>, Error> {
    let mut out = Vec::new();
    for p in paths {
        for run in expand_runs(p)? {
            out.push(load(&run, allow_mismatch)?);
        }
    }
    Ok(out)
}

/// Reads both sides (in parallel), checks they can be compared and compares them.
pub fn compare_paths(
    baseline: &[PathBuf],
    candidate: &[PathBuf],
    options: &Options,
) -> Result<Report, Error> {
    let (b, c) = std::thread::scope(|s| {
        let cand = s.spawn(|| load_side(candidate, options.allow_mismatch));
        let base = load_side(baseline, options.allow_mismatch);
        let cand = cand.join().unwrap_or(Err(Error::Panicked));
        (base, cand)
    });
    let (b, c) = (b?, c?);
    compare_loaded(b, c, options)
}

/// Compares runs already in memory, several a side (each with the path that names it in
/// the report), exactly as [`compare_paths`] compares files: every check and refusal applies.
pub fn compare_sets(
    baseline: Vec<(ResultsFile, PathBuf)>,
    candidate: Vec<(ResultsFile, PathBuf)>,
    options: &Options,
) -> Result<Report, Error> {
    let wrap = |(file, path): (ResultsFile, PathBuf)| Loaded::new(file, path, None, None);
    compare_loaded(
        baseline.into_iter().map(wrap).collect(),
        candidate.into_iter().map(wrap).collect(),
        options,
    )
}

/// Compares loaded sides: refuses set-ups that differ in what changes performance (unless
/// allowed), sides with no case in common, and "ok" cases without samples (for a gate).
fn compare_loaded(b: Vec<Loaded>, c: Vec<Loaded>, options: &Options) -> Result<Report, Error> {
    // The one validation `report` applies too, for every run of both sides: a run whose
    // numbers cannot be measurements (or that has no case) is refused, not averaged in.
    for l in b.iter().chain(&c) {
        validate(&l.file, &l.path)?;
    }
    check_distinct(&b, &c)?;
    let bf: Vec<&ResultsFile> = b.iter().map(|l| &l.file).collect();
    let cf: Vec<&ResultsFile> = c.iter().map(|l| &l.file).collect();
    let differences = provenance::differences(&bf, &cf);
    let mut warnings: Vec<String> = b
        .iter()
        .chain(&c)
        .filter_map(|l| l.warning.clone())
        .collect();
    let blocking: Vec<&provenance::Difference> =
        differences.iter().filter(|d| d.blocking).collect();
    check_comparable(&b, &c, &blocking, options)?;
    for d in &blocking {
        warnings.push(format!(
            "compared across set-ups although the {} differ (--allow-mismatch): every verdict crosses set-ups",
            d.what
        ));
    }
    for l in &b {
        warnings.extend(provenance::launch_warnings(&l.file, "baseline"));
    }
    for l in &c {
        warnings.extend(provenance::launch_warnings(&l.file, "candidate"));
    }
    check_pairing(&bf, &cf, options)?;
    let mut comparison = compare_runs(&bf, &cf, &options.settings);
    comparison.across_setups = !blocking.is_empty();
    check_matched(&b, &c, &comparison)?;
    let matched: HashSet<&str> = comparison
        .cases
        .iter()
        .filter(|x| !matches!(x.verdict, Verdict::Missing | Verdict::New))
        .map(|x| x.id.as_str())
        .collect();
    warnings.extend(unrepresentative_warnings("baseline", &b, &matched));
    warnings.extend(unrepresentative_warnings("candidate", &c, &matched));
    check_usable(&b, &c, &comparison, options)?;
    check_runs(&comparison, options)?;
    let regressed = options
        .fail_on
        .exit_code(&comparison, options.allow_dropped)
        == 1;
    warnings.extend(check_power(&comparison, options, regressed)?);
    if comparison.runs_baseline.min(comparison.runs_candidate) < 2 {
        warnings.push(format!(
            "{} against {}: each case is judged on the batch samples of one run, so run-to-run variance is not in the intervals; for a regression gate give several runs a side (`compare A1 A2 A3 -- B1 B2 B3`)",
            crate::units::count(comparison.runs_baseline, "run", "runs"),
            comparison.runs_candidate
        ));
    }
    let failing = options.fail_on.failing(&comparison, options.allow_dropped);
    let exit_code = options
        .fail_on
        .exit_code(&comparison, options.allow_dropped);
    let setups = setups::summarise(
        &comparison,
        &provenance::transport_changes(&bf, &cf),
        differences
            .iter()
            .find(|d| d.what == provenance::ENVIRONMENT),
    );
    Ok(Report {
        baseline: side(&b),
        candidate: side(&c),
        differences,
        setups,
        warnings,
        comparison,
        fail_on: options.fail_on,
        allow_dropped: options.allow_dropped,
        failing,
        exit_code,
    })
}

/// A side in messages: its file, or its runs.
fn side_name(side: &[Loaded]) -> String {
    match side {
        [one] => one.path.display().to_string(),
        many => format!("the {} runs {}", many.len(), side_paths(many)),
    }
}

/// Blocking differences between the sides' set-ups refuse the comparison, unless
/// `--allow-mismatch`.
fn check_comparable(
    b: &[Loaded],
    c: &[Loaded],
    blocking: &[&provenance::Difference],
    options: &Options,
) -> Result<(), Error> {
    if blocking.is_empty() || options.allow_mismatch {
        return Ok(());
    }
    let list: Vec<String> = blocking
        .iter()
        .map(|d| format!("{}: {} → {}", d.what, d.baseline, d.candidate))
        .collect();
    Err(Error::NotComparable {
        baseline: side_name(b),
        candidate: side_name(c),
        differences: list,
    })
}

/// Whether two paths name one file (after resolving links and `..`).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Why two loaded runs are one input, if they are: the same file, the same run id,
/// identical bytes (a copy), or identical measurements (a copy whose run id, path or stamps
/// were edited: every case's samples bit for bit the same).
fn same_input(x: &Loaded, y: &Loaded) -> Option<String> {
    if same_file(&x.path, &y.path) {
        Some("the same file".to_string())
    } else if x.file.run.run_id == y.file.run.run_id {
        Some(format!("the same run (run id {})", x.file.run.run_id))
    } else if x.hash.is_some() && x.hash == y.hash {
        Some("identical copies (same content)".to_string())
    } else if x.measured.is_some() && x.measured == y.measured {
        Some("identical measurements (every case's samples the same, bit for bit, whatever the run id or path says: a copy of one run)".to_string())
    } else {
        None
    }
}

/// A run on both sides, or twice on one side, is refused: comparing a run with itself
/// always passes, so a CI gate wired that way stays green whatever the candidate does, and
/// a run counted twice fakes a repetition.
fn check_distinct(b: &[Loaded], c: &[Loaded]) -> Result<(), Error> {
    for x in b {
        for y in c {
            if let Some(why) = same_input(x, y) {
                return Err(Error::SameRunBothSides {
                    baseline: x.path.clone(),
                    candidate: y.path.clone(),
                    why,
                });
            }
        }
    }
    for (side, runs) in [("baseline", b), ("candidate", c)] {
        for (j, y) in runs.iter().enumerate() {
            for z in &runs[j + 1..] {
                if let Some(why) = same_input(y, z) {
                    return Err(Error::SameRunTwice {
                        first: y.path.clone(),
                        second: z.path.clone(),
                        side,
                        why,
                    });
                }
            }
        }
    }
    Ok(())
}

/// `--paired` needs runs collected alternately (see [`analysis::collected_alternately`]).
fn check_pairing(b: &[&ResultsFile], c: &[&ResultsFile], options: &Options) -> Result<(), Error> {
    if options.settings.pairing != Pairing::Paired || analysis::collected_alternately(b, c) {
        return Ok(());
    }
    Err(Error::NotPaired {
        baseline: b.len(),
        candidate: c.len(),
    })
}

/// A gate on one run a side is refused (exit 2) unless it never fails or `--allow-one-run`:
/// whatever its statistic, one run cannot tell a slow run (a VM phase, another job) from a
/// regression, so a regression found would not hold and a pass would mean little.
fn check_runs(cmp: &Comparison, options: &Options) -> Result<(), Error> {
    let fewest = cmp.runs_baseline.min(cmp.runs_candidate);
    if fewest >= MIN_RUNS || options.fail_on == FailOn::Never || options.allow_one_run {
        return Ok(());
    }
    Err(Error::OneRun {
        baseline: cmp.runs_baseline,
        candidate: cmp.runs_candidate,
    })
}

/// A gate whose median case cannot see a change the size of its band passes nearly
/// anything: refused (exit 2) with the MDE and the runs a side that would reach the band,
/// unless `--allow-low-power` (then a warning) or the gate never fails or has no band. A
/// regression found all the same is reported (exit 1), the low power said as a warning: the
/// band test's false-alarm bound does not depend on power, only a pass does.
fn check_power(
    cmp: &Comparison,
    options: &Options,
    regressed: bool,
) -> Result<Option<String>, Error> {
    let noise = options.settings.noise;
    let Some((mde, case)) = cmp.median_mde() else {
        return Ok(None);
    };
    if mde <= noise || noise <= 0.0 || options.fail_on == FailOn::Never {
        return Ok(None);
    }
    let Some(s) = case.stats else {
        return Ok(None);
    };
    // Within one run, more samples never measure the run-to-run variance a gate must see:
    // the advice is always in runs.
    let need = match (s.basis, s.units_needed) {
        (analysis::Basis::Batches, _) => "several runs a side (`compare A1 A2 A3 -- B1 B2 B3`; more samples of one run do not add run-to-run variance)".to_string(),
        (_, Some(n)) => format!("about {n} {} a side", s.basis.unit()),
        (_, None) => format!(
            "more than 500 {} a side (or a quieter set-up)",
            s.basis.unit()
        ),
    };
    // What it saw comes first: cases beyond their own MDE are detected even so.
    let seen = gate::seen_beyond_mde(cmp, noise);
    // Once it lists what it caught, it cannot say large changes pass unseen: only changes
    // smaller than a case's own MDE can, in the cases it did not list.
    let unseen = match seen {
        Some(_) => {
            "in the other cases a change smaller than its own MDE beyond the band could pass unseen"
        }
        None => "a change up to that far beyond the band could pass unseen",
    };
    let seen = seen.map_or(String::new(), |x| format!("{x}; but "));
    let what = format!(
        "{seen}too little power: the median minimum detectable effect over the {} compared cases is {} beyond the ±{} band (power {:.0} %, α = {} spread over {} cases; median case {} with {}/{} {}), so {unseen}; {need} would bring it within the band",
        cmp.tested,
        render::pct(mde).trim_start_matches('+'),
        render::pct(noise).trim_start_matches('+'),
        analysis::MDE_POWER * 100.0,
        options.settings.alpha(),
        cmp.tested,
        case.display_label(),
        s.n_baseline,
        s.n_candidate,
        s.basis.unit()
    );
    if options.allow_low_power {
        return Ok(Some(format!("{what} (--allow-low-power: reported anyway)")));
    }
    if regressed {
        return Ok(Some(format!(
            "{what} (a regression was found all the same, so it is reported: a pass would have meant little)"
        )));
    }
    Err(Error::LowPower { what })
}

/// Sides with no case in common cannot be compared.
fn check_matched(b: &[Loaded], c: &[Loaded], comparison: &Comparison) -> Result<(), Error> {
    if comparison.matched() > 0 {
        return Ok(());
    }
    Err(Error::NothingInCommon {
        baseline: side_name(b),
        baseline_cases: side(b).cases,
        candidate: side_name(c),
        candidate_cases: side(c).cases,
    })
}

/// Cases "ok" on both sides without usable samples: a gate will not pass on them. The
/// message names the files that hold each case, so the one to re-run is known.
fn check_usable(
    b: &[Loaded],
    c: &[Loaded],
    comparison: &Comparison,
    options: &Options,
) -> Result<(), Error> {
    let bad = analysis::unusable(comparison);
    if bad.is_empty() || options.fail_on == FailOn::Never {
        return Ok(());
    }
    let shown: Vec<String> = bad
        .iter()
        .take(5)
        .map(|x| {
            format!(
                "{} ({}; baseline {}; candidate {})",
                x.label,
                x.note.as_deref().unwrap_or("no samples"),
                files_with(b, &x.id),
                files_with(c, &x.id)
            )
        })
        .collect();
    Err(Error::Unusable {
        count: bad.len(),
        shown,
    })
}

/// The files of a side that hold case `id` (three named, the rest counted).
fn files_with(side: &[Loaded], id: &str) -> String {
    let files: Vec<String> = side
        .iter()
        .filter(|l| l.file.cases.iter().any(|x| x.id == id))
        .map(|l| l.path.display().to_string())
        .collect();
    match files.len() {
        0..=3 => files.join(", "),
        n => format!("{} and {} more", files[..3].join(", "), n - 3),
    }
}

/// One warning per reason some compared cases of a side do not represent their set-up
/// (oversubscribed, emulated nodes, shared cores, a clock change: see
/// [`crate::results::representative`]): their verdicts describe this machine's contention,
/// not the set-up they name.
fn unrepresentative_warnings(side: &str, runs: &[Loaded], matched: &HashSet<&str>) -> Vec<String> {
    // kind → (cases, first detail)
    let mut kinds: std::collections::BTreeMap<String, (HashSet<&str>, String)> =
        std::collections::BTreeMap::new();
    for l in runs {
        for case in l
            .file
            .cases
            .iter()
            .filter(|x| matched.contains(x.id.as_str()))
        {
            for w in representative::assess_in(&l.file, case) {
                kinds
                    .entry(w.kind.clone())
                    .or_insert_with(|| (HashSet::new(), w.detail.clone()))
                    .0
                    .insert(case.id.as_str());
            }
        }
    }
    kinds
        .into_iter()
        .map(|(kind, (cases, detail))| {
            format!(
                "{side}: {} of {} not representative of their set-up ({kind}: {detail}); their verdicts describe this machine's contention, not the set-up",
                cases.len(),
                crate::units::count(matched.len(), "compared case", "compared cases")
            )
        })
        .collect()
}

/// The files of a side for display: the file itself, or the directory the runs share with
/// `…` for the rest (`results/ci/ci-small/runs/baseline/…`).
fn side_paths(runs: &[Loaded]) -> String {
    let paths: Vec<String> = runs.iter().map(|l| l.path.display().to_string()).collect();
    match paths.as_slice() {
        [] => "(none)".into(),
        [one] => one.clone(),
        [first, rest @ ..] => {
            let mut common = first.len();
            for p in rest {
                common = common.min(
                    first
                        .char_indices()
                        .zip(p.chars())
                        .find(|((_, a), b)| a != b)
                        .map_or(first.len().min(p.len()), |((i, _), _)| i),
                );
            }
            // back to the last directory separator, so the shared part is a directory
            let cut = first[..common].rfind('/').map_or(0, |i| i + 1);
            format!("{}…", &first[..cut])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::natural_cmp;
    use std::cmp::Ordering;

    #[test]
    fn run_directories_sort_naturally() {
        let mut v = vec![
            "run-10", "run-2", "run-1", "run-02b", "a", "run-2a", "10", "9",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            ["9", "10", "a", "run-1", "run-2", "run-2a", "run-02b", "run-10"]
        );
        assert_eq!(natural_cmp("x", "x"), Ordering::Equal);
        // equal as numbers, different as text: still a total order
        assert_eq!(natural_cmp("r01", "r1"), "r01".cmp("r1"));
    }
}
