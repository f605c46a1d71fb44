//! The one check every reader of results files applies (`report`, and `compare` for every run
//! of both sides), so no reader accepts what another refuses: a file whose numbers cannot be
//! measurements is refused whole (exit 2), each problem named by its JSON path and case id.
//!
//! What is refused, and why:
//! - no cases: the run measured nothing, so it is not a run to report or to count;
//! - a case id twice: a file holds one record per case, and matching would be ambiguous;
//! - a case `ok` without samples: nothing to judge it on;
//! - a time (sample, headline, per-rank mean, spread, summary) that is not a finite number
//!   above 0, and a rate (GB/s, GFLOP/s) or tolerance that is negative or not finite;
//! - an implausible time: [`MAX_PLAUSIBLE_S`] or more for one operation, or timed operations
//!   that add up to more than the case lasted by its own start and finish stamps (with
//!   [`WALL_SLACK_S`] and [`WALL_SLACK_FRACTION`] for wall-clock adjustments);
//! - metric definitions (`metrics_version`) this build does not know: its numbers would be
//!   read under the wrong definitions (and a history series would mix them);
//! - cases without a launch record (`launches: []`), or naming a launch the file lacks;
//! - a case id that is not the hash of its parameters (edited, or pasted from another case);
//! - a case `ok` with wrong elements (`wrong` > 0): a validated case has none;
//! - a case of 0 ranks, or of 0 devices;
//! - a summary of the samples (`timing.stats_s`) whose min, median, mean or max lies outside
//!   the samples' own range, or whose min is above its max;
//! - calibration figures (`timing.calibration`) that are negative, not finite or implausible.

use super::schema::{
    Calibration, CaseResult, CaseStatus, ResultsFile, TimingResult, METRICS_VERSION,
};
use crate::stats::Summary;
use std::collections::HashMap;
use std::path::Path;

/// One operation taking this long (about 11.6 days, longer than any batch allocation) is not
/// a measurement.
pub const MAX_PLAUSIBLE_S: f64 = 1e6;

/// Wall-clock stamps may be stepped (NTP) or coarse: timed work may exceed a case's stamps by
/// this much plus [`WALL_SLACK_FRACTION`] of its length before it is called implausible.
pub const WALL_SLACK_S: f64 = 1.0;
pub const WALL_SLACK_FRACTION: f64 = 0.05;

/// Problems listed in full in a message; the rest are counted.
const SHOWN: usize = 8;

/// One problem: where in the file (JSON path, with the case id when it is in a case) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub at: String,
    pub what: String,
}

/// Every problem of `file` (empty: the file is usable).
pub fn problems(file: &ResultsFile) -> Vec<Problem> {
    let mut out = Vec::new();
    if !(1..=METRICS_VERSION).contains(&file.metrics_version) {
        out.push(Problem {
            at: "metrics_version".into(),
            what: format!("{}: this scalebench knows metric definitions 1 to {METRICS_VERSION}; its times and bandwidths would be read under the wrong definitions: use the scalebench that wrote it", file.metrics_version),
        });
    }
    if file.cases.is_empty() {
        out.push(Problem {
            at: "cases".into(),
            what: "no cases: the run measured nothing (was it killed before its first case?), so it is no run to report or compare".into(),
        });
    } else if file.launches.is_empty() {
        out.push(Problem {
            at: "launches".into(),
            what: format!(
                "empty, but the file has {}: every case was measured in a launch the file records",
                crate::units::count(file.cases.len(), "case", "cases")
            ),
        });
    }
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(file.cases.len());
    for (i, c) in file.cases.iter().enumerate() {
        let at = |field: &str| {
            let field = if field.is_empty() {
                String::new()
            } else {
                format!(".{field}")
            };
            format!("cases[{i}]{field} (case id {}, {})", c.id, c.params.label())
        };
        if let Some(first) = seen.insert(c.id.as_str(), i) {
            out.push(Problem {
                at: at(""),
                what: format!("case id {} appears twice (cases[{first}] and cases[{i}]): a results file holds one record per case; was it concatenated or edited by hand?", c.id),
            });
        }
        if !file.launches.is_empty() && !launch_known(file, &c.launch_id) {
            out.push(Problem {
                at: at("launch_id"),
                what: format!(
                    "{}: no launch of the file (launches[].launch_id) has this id",
                    crate::units::shorten(&c.launch_id)
                ),
            });
        }
        case_problems(c, &mut |field, what| {
            out.push(Problem {
                at: at(&field),
                what,
            })
        });
    }
    out
}

/// A case's launch is recorded: by its id, or as a retry of it (`<id>@<attempt>`, the name a
/// merge gives a launch's later attempts).
fn launch_known(file: &ResultsFile, id: &str) -> bool {
    file.launches.iter().any(|l| {
        l.launch_id == id
            || l.launch_id
                .strip_prefix(id)
                .is_some_and(|rest| rest.starts_with('@'))
    })
}

/// `Ok` or the error naming `path` and the problems.
pub fn validate(file: &ResultsFile, path: &Path) -> Result<(), super::io::ResultsError> {
    let found = problems(file);
    if found.is_empty() {
        return Ok(());
    }
    let mut list: Vec<String> = found
        .iter()
        .take(SHOWN)
        .map(|p| format!("  {}: {}", p.at, p.what))
        .collect();
    if found.len() > SHOWN {
        list.push(format!("  … and {} more", found.len() - SHOWN));
    }
    Err(super::io::ResultsError::Invalid {
        path: path.to_path_buf(),
        count: found.len(),
        problems: list.join("\n"),
    })
}

/// A positive, finite time below [`MAX_PLAUSIBLE_S`], or why not.
fn time_problem(x: f64) -> Option<String> {
    if !(x.is_finite() && x > 0.0) {
        Some(format!("{x:e} s: a time must be a finite number above 0"))
    } else if x >= MAX_PLAUSIBLE_S {
        Some(format!(
            "{x:.3e} s: implausible (one operation cannot take {MAX_PLAUSIBLE_S:e} s or more)"
        ))
    } else {
        None
    }
}

fn case_problems(c: &CaseResult, report: &mut dyn FnMut(String, String)) {
    let expected = c.params.id();
    if c.id != expected {
        report(
            "id".into(),
            format!("{}: not the id of the case's params (that is {expected}): was the case edited, or its id pasted from another?", crate::units::shorten(&c.id)),
        );
    }
    if c.status == CaseStatus::Ok && c.wrong > 0 {
        report(
            "wrong".into(),
            format!("{} wrong elements, but the case says \"ok\": a validated case has none (status \"wrong\" says it was not)", c.wrong),
        );
    }
    if c.ranks == 0 {
        report("ranks".into(), "0: a case runs on at least 1 rank".into());
    } else if c.devices == 0 {
        report(
            "devices".into(),
            format!(
                "0 with {} ranks: every rank drives at least one device (a CPU rank is one)",
                c.ranks
            ),
        );
    }
    if !(c.tolerance.is_finite() && c.tolerance >= 0.0) {
        report(
            "tolerance".into(),
            format!(
                "{}: a relative tolerance is finite and not negative",
                c.tolerance
            ),
        );
    }
    for (name, v) in [
        ("algbw_gbps", c.algbw_gbps),
        ("busbw_gbps", c.busbw_gbps),
        ("busbw_factor", c.busbw_factor),
        ("gflops", c.gflops),
        ("gflops_total", c.gflops_total),
    ] {
        if let Some(x) = v.filter(|x| !(x.is_finite() && *x >= 0.0)) {
            report(
                name.into(),
                format!("{x}: a rate is finite and not negative"),
            );
        }
    }
    if let Some(r) = &c.replay {
        for (k, why) in r.problems() {
            report(k, why);
        }
        let digests: Vec<&str> = r.files.iter().map(|f| f.sha256.as_str()).collect();
        if c.params.trace_sha256.as_deref() != Some(&digests.join(",")) {
            report(
                "replay.files".into(),
                "the digests differ from params.trace_sha256: the record is not of the case's trace".into(),
            );
        }
    }
    match &c.timing {
        Some(t) => timing_problems(c, t, report),
        None if c.status == CaseStatus::Ok => report(
            "timing".into(),
            "absent, but the case says \"ok\": a measured case has its samples".into(),
        ),
        None => {}
    }
}

fn timing_problems(c: &CaseResult, t: &TimingResult, report: &mut dyn FnMut(String, String)) {
    if t.samples_s.is_empty() && c.status == CaseStatus::Ok {
        report(
            "timing.samples_s".into(),
            "empty, but the case says \"ok\": no usable samples to judge it on".into(),
        );
    }
    let mut times: Vec<(String, f64)> = vec![("timing.time_s".into(), t.time_s)];
    times.extend(
        t.samples_s
            .iter()
            .enumerate()
            .map(|(i, x)| (format!("timing.samples_s[{i}]"), *x)),
    );
    times.extend(
        t.per_rank_mean_s
            .iter()
            .enumerate()
            .map(|(i, x)| (format!("timing.per_rank_mean_s[{i}]"), *x)),
    );
    let s = &t.rank_mean_s;
    for (k, x) in [("min", s.min), ("mean", s.mean), ("max", s.max)] {
        times.push((format!("timing.rank_mean_s.{k}"), x));
    }
    times.extend(summary_times("timing.stats_s", &t.stats_s));
    for (field, x) in times {
        if let Some(why) = time_problem(x) {
            report(field, why);
        }
    }
    if s.min > s.max {
        report(
            "timing.rank_mean_s".into(),
            format!(
                "min {:e} s above max {:e} s: a spread runs from min to max",
                s.min, s.max
            ),
        );
    }
    for (k, x) in [("stddev", t.stats_s.stddev), ("cv", t.stats_s.cv)] {
        if !(x.is_finite() && x >= 0.0) {
            report(
                format!("timing.stats_s.{k}"),
                format!("{x}: a spread is finite and not negative"),
            );
        }
    }
    stats_problems(t, report);
    if let Some(cal) = &t.calibration {
        calibration_problems(cal, report);
    }
    wall_problem(c, t, report);
}

/// The summary of the samples lies within them: its min, median, mean and max between the
/// smallest and largest sample (a relative 1e-9 for rounding), and its min not above its max.
fn stats_problems(t: &TimingResult, report: &mut dyn FnMut(String, String)) {
    let s = &t.stats_s;
    if s.n == 0 {
        return;
    }
    if s.min > s.max {
        report(
            "timing.stats_s".into(),
            format!("min {:e} s above max {:e} s", s.min, s.max),
        );
    }
    let finite: Vec<f64> = t
        .samples_s
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if finite.is_empty() || finite.len() != t.samples_s.len() {
        return; // bad samples are named on their own
    }
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let slack = 1e-9 * hi.abs();
    for (k, x) in [
        ("min", s.min),
        ("median", s.median),
        ("mean", s.mean),
        ("max", s.max),
    ] {
        if x.is_finite() && (x < lo - slack || x > hi + slack) {
            report(
                format!("timing.stats_s.{k}"),
                format!("{x:e} s: outside the samples it summarises ({lo:e} s to {hi:e} s in timing.samples_s)"),
            );
        }
    }
}

/// Calibration figures are times: finite, not negative, below [`MAX_PLAUSIBLE_S`].
fn calibration_problems(cal: &Calibration, report: &mut dyn FnMut(String, String)) {
    let mut figures: Vec<(String, f64)> = vec![
        ("cold_op_s".into(), cal.cold_op_s),
        ("estimate_s".into(), cal.estimate_s),
    ];
    for (name, list) in [
        ("probes_s", &cal.probes_s),
        ("pipelined_probes_s", &cal.pipelined_probes_s),
    ] {
        figures.extend(
            list.iter()
                .enumerate()
                .map(|(i, x)| (format!("{name}[{i}]"), *x)),
        );
    }
    for (name, v) in [
        ("pipelined_estimate_s", cal.pipelined_estimate_s),
        ("realised_batch_s", cal.realised_batch_s),
    ] {
        figures.extend(v.map(|x| (name.to_string(), x)));
    }
    for (name, x) in figures {
        if !(0.0..MAX_PLAUSIBLE_S).contains(&x) {
            report(
                format!("timing.calibration.{name}"),
                format!("{}: a calibration time is finite, not negative and below {MAX_PLAUSIBLE_S:e} s", crate::units::echo_f64(x)),
            );
        }
    }
}

/// The time fields of a summary of times (the spread fields are checked apart).
fn summary_times(at: &str, s: &Summary) -> Vec<(String, f64)> {
    [
        ("min", s.min),
        ("median", s.median),
        ("mean", s.mean),
        ("max", s.max),
        ("p99", s.p99),
    ]
    .into_iter()
    .filter(|_| s.n > 0)
    .map(|(k, x)| (format!("{at}.{k}"), x))
    .collect()
}

/// The timed operations of a case ran between its start and finish stamps: their total (the
/// headline time × the timed operations) cannot exceed that, nor can one sample.
fn wall_problem(c: &CaseResult, t: &TimingResult, report: &mut dyn FnMut(String, String)) {
    let lasted = c.finished_unix_s - c.started_unix_s;
    if !lasted.is_finite() {
        report(
            "finished_unix_s".into(),
            format!(
                "{} − started_unix_s {} is not a number of seconds",
                c.finished_unix_s, c.started_unix_s
            ),
        );
        return;
    }
    let allowed = lasted.max(0.0) * (1.0 + WALL_SLACK_FRACTION) + WALL_SLACK_S;
    let timed = t.time_s * f64::from(t.iters);
    let longest = t.samples_s.iter().copied().fold(0.0, f64::max);
    if timed.is_finite() && longest.is_finite() && timed.max(longest) > allowed {
        report(
            "timing".into(),
            format!(
                "implausible: {} timed operations of {:.3e} s (longest sample {:.3e} s) take {:.3e} s, but the case lasted {:.3e} s by its stamps (started_unix_s, finished_unix_s)",
                t.iters, t.time_s, longest, timed, lasted
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::io::parse_results;

    fn golden() -> ResultsFile {
        let text = include_str!("../../tests/golden/results-v1.json");
        parse_results(Path::new("golden"), text).unwrap()
    }

    fn ats(f: &ResultsFile) -> Vec<String> {
        problems(f).into_iter().map(|p| p.at).collect()
    }

    #[test]
    fn the_golden_file_is_valid() {
        assert_eq!(problems(&golden()), vec![]);
    }

    #[test]
    fn each_kind_of_bad_number_is_named_by_its_path() {
        let g = golden();
        let set = |f: &dyn Fn(&mut ResultsFile)| {
            let mut x = g.clone();
            f(&mut x);
            x
        };
        let id = g.cases[1].id.clone();
        let cases: Vec<(ResultsFile, &str)> = vec![
            (set(&|x| x.cases.clear()), "cases"),
            (
                set(&|x| x.cases.push(x.cases[1].clone())),
                "cases[6] (case id",
            ),
            (
                set(&|x| x.cases[1].timing.as_mut().unwrap().samples_s[2] = -1e-6),
                "timing.samples_s[2]",
            ),
            (
                set(&|x| x.cases[1].timing.as_mut().unwrap().samples_s[0] = 0.0),
                "timing.samples_s[0]",
            ),
            (
                set(&|x| x.cases[1].timing.as_mut().unwrap().samples_s[1] = f64::NAN),
                "timing.samples_s[1]",
            ),
            (
                set(&|x| x.cases[1].timing.as_mut().unwrap().samples_s.clear()),
                "timing.samples_s",
            ),
            (
                set(&|x| x.cases[1].timing.as_mut().unwrap().time_s = 1e308),
                "timing.time_s",
            ),
            (set(&|x| x.cases[1].tolerance = -0.1), "tolerance"),
            (
                set(&|x| x.cases[1].timing.as_mut().unwrap().stats_s.stddev = -1.0),
                "timing.stats_s.stddev",
            ),
            (
                set(&|x| {
                    let s = &mut x.cases[1].timing.as_mut().unwrap().rank_mean_s;
                    std::mem::swap(&mut s.min, &mut s.max);
                    s.min *= 2.0;
                }),
                "timing.rank_mean_s",
            ),
            (set(&|x| x.cases[1].timing = None), "timing"),
            (set(&|x| x.cases[1].busbw_gbps = Some(-3.0)), "busbw_gbps"),
        ];
        for (f, want) in cases {
            let found = ats(&f);
            assert!(found.iter().any(|a| a.contains(want)), "{want}: {found:?}");
            let e = validate(&f, Path::new("dir/results.json")).unwrap_err();
            let msg = e.to_string();
            assert!(msg.starts_with("dir/results.json: "), "{msg}");
            if want != "cases" {
                assert!(msg.contains(&id) || want.starts_with("cases["), "{msg}");
            }
        }
    }

    #[test]
    fn impossible_records_are_named_by_their_path() {
        let g = golden();
        let set = |f: &dyn Fn(&mut ResultsFile)| {
            let mut x = g.clone();
            f(&mut x);
            x
        };
        let cases: Vec<(ResultsFile, &str)> = vec![
            (set(&|x| x.cases[3].wrong = 5), "cases[3].wrong ("),
            (
                set(&|x| x.cases[3].id = x.cases[2].id.clone()),
                "cases[3].id (",
            ),
            (set(&|x| x.launches.clear()), "launches"),
            (
                set(&|x| x.cases[3].launch_id = "elsewhere".into()),
                "cases[3].launch_id (",
            ),
            (set(&|x| x.cases[3].ranks = 0), "cases[3].ranks ("),
            (set(&|x| x.cases[3].devices = 0), "cases[3].devices ("),
            (
                set(&|x| x.cases[3].timing.as_mut().unwrap().stats_s.median = 1000.0),
                "cases[3].timing.stats_s.median (",
            ),
            (set(&|x| x.metrics_version = 99), "metrics_version"),
        ];
        for (f, want) in cases {
            let found = ats(&f);
            assert!(
                found.iter().any(|a| a.starts_with(want)),
                "{want}: {found:?}"
            );
        }
        // A retried launch keeps its cases' launch id, recorded as `<id>@<attempt>`.
        let mut r = g.clone();
        r.launches[0].launch_id = format!("{}@002-x", r.launches[0].launch_id);
        assert_eq!(ats(&r), Vec::<String>::new());
        // Wrong elements in a case that says so are no contradiction.
        let mut w = g.clone();
        w.cases[3].wrong = 5;
        w.cases[3].status = CaseStatus::Wrong;
        assert_eq!(ats(&w), Vec::<String>::new());
    }

    #[test]
    fn calibration_figures_are_times() {
        let mut f = golden();
        f.cases[1].timing.as_mut().unwrap().calibration = Some(Calibration {
            cold_op_s: 2e-5,
            probes_s: vec![1e-6, -1e-6],
            estimate_s: 1e300,
            iters_source: "calibrated".into(),
            pipelined_probes_s: vec![],
            pipelined_estimate_s: Some(f64::NAN),
            realised_batch_s: Some(1e-3),
        });
        let mut found = ats(&f);
        found.sort();
        let fields: Vec<&str> = found
            .iter()
            .map(|a| a.split(" (").next().unwrap())
            .collect();
        assert_eq!(
            fields,
            [
                "cases[1].timing.calibration.estimate_s",
                "cases[1].timing.calibration.pipelined_estimate_s",
                "cases[1].timing.calibration.probes_s[1]",
            ]
        );
    }

    #[test]
    fn work_beyond_the_case_stamps_is_implausible_within_the_slack() {
        let mut f = golden();
        let c = &mut f.cases[1];
        let t = c.timing.as_mut().unwrap();
        // 6 operations of 0.2 s: 1.2 s of work in a case stamped 0.1 s long
        t.time_s = 0.2;
        c.started_unix_s = c.finished_unix_s - 0.1;
        assert!(
            ats(&f).iter().any(|a| a.starts_with("cases[1].timing (")),
            "{:?}",
            ats(&f)
        );
        // the same work in a case stamped 0.3 s long is within the 1 s slack
        f.cases[1].started_unix_s = f.cases[1].finished_unix_s - 0.3;
        assert_eq!(ats(&f), Vec::<String>::new());
        // a failed case keeps no samples and is not judged on them
        let mut g = golden();
        g.cases[2].status = CaseStatus::Failed;
        g.cases[2].timing = None;
        assert_eq!(ats(&g), Vec::<String>::new());
    }
}
