//! A comparison assembled: cases matched by id over the runs of each side, their statistics
//! computed on all cores, both p-values corrected over the cases, each case judged, set-ups
//! named and the cases put in display order.

use super::case_stats::{
    case_stats, op_resolution_s, sample_count, Ctx, Judged, Rec, SideCase, StatsError, Tables,
};
use super::{
    Basis, CaseAxes, CaseComparison, CaseStats, Comparison, Pairing, Settings, Verdict,
    MAX_UNITS_NEEDED, MDE_POWER,
};
use crate::compare::stats;
use crate::params::CaseParams;
use crate::present::table::signed_percent as signed_pct;
use crate::results::schema::{CaseStatus, ResultsFile};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The verdict of a case with statistics, given its corrected p-values.
fn judge(s: &CaseStats, settings: &Settings) -> (Verdict, Option<String>) {
    let (lo, hi) = (s.change.ci_low, s.change.ci_high);
    let n = settings.noise;
    let beyond = hi < -n || lo > n;
    let alpha = settings.alpha();
    // Beyond the band only when the printed interval is too: the band test and the interval
    // come from one statistic, and this holds it even where rounding or ties might not.
    if s.p_band_adjusted <= alpha && beyond {
        return if s.worsening() > 0.0 {
            (Verdict::Regressed, None)
        } else {
            (Verdict::Improved, None)
        };
    }
    // The whole interval past one edge, yet not significant once corrected for the number of
    // cases: a likely change the correction cannot confirm, never "no change" or "within
    // noise" (seen in the gate: −40.7 %, interval −59.9 … −12.4 %, read "no change").
    if beyond {
        let side = if s.worsening() > 0.0 {
            "a regression"
        } else {
            "an improvement"
        };
        return (
            Verdict::Inconclusive,
            Some(format!(
                "interval {} … {} lies beyond the ±{} band, which suggests {side}, but it is not significant after the correction over the cases (band p = {:.2e}, corrected {:.2e} > α = {alpha}); more runs would tell",
                signed_pct(lo),
                signed_pct(hi),
                signed_pct(n).trim_start_matches('+'),
                s.p_band,
                s.p_band_adjusted
            )),
        );
    }
    // Reaching past both edges, the interval is as consistent with a regression as with an
    // improvement: "no change" would claim what it cannot.
    let wide = !(lo.is_finite() && hi.is_finite()) || (lo < -n && hi > n);
    if wide {
        // More samples of one run never add the run-to-run variance: advice in runs.
        let more = match (s.basis, s.units_needed) {
            (Basis::Batches, _) => {
                "more runs a side (more samples of one run would not) would".to_string()
            }
            (_, Some(k)) => format!("about {k} {} a side would", s.basis.unit()),
            (_, None) => "far more runs would".to_string(),
        };
        return (
            Verdict::Inconclusive,
            Some(format!(
                "interval {} … {} reaches beyond the ±{} band on both sides: it rules out neither a regression nor an improvement; {more} tell",
                signed_pct(lo),
                signed_pct(hi),
                signed_pct(n).trim_start_matches('+')
            )),
        );
    }
    if s.p_adjusted <= alpha {
        (Verdict::WithinNoise, None)
    } else {
        (Verdict::NoChange, None)
    }
}

/// Compares every case of `candidate` with the case of the same id in `baseline`.
pub fn compare(baseline: &ResultsFile, candidate: &ResultsFile, settings: &Settings) -> Comparison {
    compare_runs(&[baseline], &[candidate], settings)
}

/// The runs of a side in the order they were collected (start time; ties keep the given
/// order).
fn by_start<'a>(runs: &[&'a ResultsFile]) -> Vec<&'a ResultsFile> {
    let mut v = runs.to_vec();
    v.sort_by(|x, y| x.run.started_unix_s.total_cmp(&y.run.started_unix_s));
    v
}

/// Whether the runs were collected alternately: as many on each side (≥ 2), distinct start
/// times, and in start-time order every consecutive two hold one run of each side (A B A B
/// or A B B A …), so the i-th runs of the two sides ran next to each other.
pub fn collected_alternately(baseline: &[&ResultsFile], candidate: &[&ResultsFile]) -> bool {
    if baseline.len() != candidate.len() || baseline.len() < 2 {
        return false;
    }
    let mut all: Vec<(f64, bool)> = baseline
        .iter()
        .map(|f| (f.run.started_unix_s, false))
        .chain(candidate.iter().map(|f| (f.run.started_unix_s, true)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let distinct = all.windows(2).all(|w| w[0].0 < w[1].0);
    distinct && all.chunks(2).all(|p| p[0].1 != p[1].1)
}

/// Cases by id over the runs of one side, ids in order of first appearance.
fn by_id<'a>(runs: &[&'a ResultsFile]) -> (Vec<&'a str>, HashMap<&'a str, SideCase<'a>>) {
    let mut order = Vec::new();
    let mut map: HashMap<&str, SideCase<'_>> = HashMap::new();
    for (run, f) in runs.iter().enumerate() {
        for c in &f.cases {
            map.entry(c.id.as_str())
                .or_insert_with(|| {
                    order.push(c.id.as_str());
                    SideCase {
                        records: Vec::new(),
                        runs: runs.len(),
                    }
                })
                .records
                .push(Rec {
                    case: c,
                    run,
                    res_s: op_resolution_s(f, c),
                });
        }
    }
    (order, map)
}

/// Cases measured on both sides, waiting for their statistics: (index in the comparison's
/// cases, baseline runs, candidate runs).
type Measured<'a> = Vec<(usize, Vec<Rec<'a>>, Vec<Rec<'a>>)>;

/// Compares the runs of `candidate` with the runs of `baseline`, case by case, each side in
/// the order its runs were collected (see [`Basis`] for how each case is judged).
pub fn compare_runs(
    baseline: &[&ResultsFile],
    candidate: &[&ResultsFile],
    settings: &Settings,
) -> Comparison {
    let (baseline, candidate) = (by_start(baseline), by_start(candidate));
    let paired =
        settings.pairing != Pairing::Unpaired && collected_alternately(&baseline, &candidate);
    let (base_order, base) = by_id(&baseline);
    let (cand_order, cand) = by_id(&candidate);
    let mut tables = Tables::default();
    let mut out: Vec<CaseComparison> = Vec::with_capacity(base_order.len());
    let mut measured: Measured<'_> = Vec::new();
    let mut params: HashMap<&str, &CaseParams> = HashMap::new();
    for id in &base_order {
        params.insert(id, &base[id].records[0].case.params);
        let cc = match_case(id, &base[id], cand.get(id), &mut tables, |bo, co| {
            measured.push((out.len(), bo, co));
        });
        out.push(cc);
    }
    for id in &cand_order {
        if !base.contains_key(id) {
            params.insert(id, &cand[id].records[0].case.params);
            out.push(new_case(id, &cand[id]));
        }
    }
    let ctx = Ctx {
        settings,
        paired,
        runs_baseline: baseline.len(),
        runs_candidate: candidate.len(),
    };
    analyse(&mut out, &measured, &ctx, &tables);
    let tested = correct_and_judge(&mut out, settings);
    name_setups(&mut out, &params);
    sort_for_display(&mut out);
    Comparison {
        settings: *settings,
        cases: out,
        tested,
        runs_baseline: baseline.len(),
        runs_candidate: candidate.len(),
        paired,
        across_setups: false,
    }
}

/// The comparison of a baseline case with the candidate's case of the same id (if any), by
/// status; a case ok on both sides goes to `measure` (its statistics come later) and has its
/// bootstrap tables prepared where it will be judged on batches.
fn match_case<'a>(
    id: &str,
    b: &SideCase<'a>,
    c: Option<&SideCase<'a>>,
    tables: &mut Tables,
    measure: impl FnOnce(Vec<Rec<'a>>, Vec<Rec<'a>>),
) -> CaseComparison {
    let (b_status, _) = b.status();
    let mut cc = CaseComparison {
        id: id.to_string(),
        label: b.records[0].case.params.label(),
        axes: CaseAxes::of(&b.records[0].case.params),
        setup: None,
        verdict: Verdict::Missing,
        baseline_status: Some(b_status),
        candidate_status: None,
        stats: None,
        note: None,
    };
    let Some(c) = c else {
        return cc;
    };
    let (c_status, _) = c.status();
    cc.candidate_status = Some(c_status);
    let ok = |s: CaseStatus| s == CaseStatus::Ok;
    match (ok(b_status), ok(c_status)) {
        (true, true) => {
            cc.verdict = Verdict::NotCompared; // until analysed
            let (bo, co) = (b.ok(), c.ok());
            if bo.len() == 1 && co.len() == 1 {
                tables.prepare(sample_count(bo[0].case), sample_count(co[0].case));
            }
            measure(bo, co);
        }
        (true, false) if c_status == CaseStatus::Skipped => {
            cc.verdict = Verdict::NotCompared;
            cc.note = Some(c.note("candidate"));
        }
        (true, false) => {
            cc.verdict = Verdict::Failed;
            cc.note = Some(c.note("candidate"));
        }
        (false, true) => {
            cc.verdict = Verdict::Fixed;
            cc.note = Some(b.note("baseline"));
        }
        (false, false) => {
            cc.verdict = Verdict::NotCompared;
            cc.note = Some(format!("{}; {}", b.note("baseline"), c.note("candidate")));
        }
    }
    cc
}

/// A candidate case the baseline does not have.
fn new_case(id: &str, c: &SideCase<'_>) -> CaseComparison {
    CaseComparison {
        id: id.to_string(),
        label: c.records[0].case.params.label(),
        axes: CaseAxes::of(&c.records[0].case.params),
        setup: None,
        verdict: Verdict::New,
        baseline_status: None,
        candidate_status: Some(c.status().0),
        stats: None,
        note: None,
    }
}

/// The statistics of each measured case, on all cores (each case is independent); a case
/// that cannot be analysed is not compared, with the reason as its note.
fn analyse(out: &mut [CaseComparison], measured: &Measured<'_>, ctx: &Ctx<'_>, tables: &Tables) {
    let analysed: Vec<(usize, Result<Judged, StatsError>)> = measured
        .par_iter()
        .with_min_len(64)
        .map(|(i, b, c)| (*i, case_stats(b, c, ctx, tables)))
        .collect();
    for (i, r) in analysed {
        match r {
            Ok((s, note)) => {
                out[i].stats = Some(s);
                out[i].note = note;
            }
            Err(why) => {
                out[i].verdict = Verdict::NotCompared;
                out[i].note = Some(why.to_string());
            }
        }
    }
}

/// Corrects both p-values over every case that has them, fills in each case's MDE, then
/// judges those cases; returns how many were tested.
fn correct_and_judge(out: &mut [CaseComparison], settings: &Settings) -> usize {
    let tested: Vec<usize> = (0..out.len()).filter(|&i| out[i].stats.is_some()).collect();
    let get = |f: fn(&CaseStats) -> f64| -> Vec<f64> {
        tested
            .iter()
            .filter_map(|&i| out[i].stats.as_ref().map(f))
            .collect()
    };
    let point = stats::adjust_p_values(&get(|s| s.p_value), settings.correction);
    let band = stats::adjust_p_values(&get(|s| s.p_band), settings.correction);
    let level = settings.case_level(tested.len());
    let target = (1.0 + settings.noise).ln();
    for (k, &i) in tested.iter().enumerate() {
        if let Some(s) = out[i].stats.as_mut() {
            s.p_adjusted = point[k];
            s.p_band_adjusted = band[k];
            s.mde = stats::mde_log(s.change.se_log, s.change.df, level, MDE_POWER).exp() - 1.0;
            let paired = s.basis == Basis::Paired;
            s.units_needed = stats::units_needed(
                s.sd_unit,
                paired,
                level,
                MDE_POWER,
                target,
                MAX_UNITS_NEEDED,
            );
            let (v, note) = judge(s, settings);
            out[i].verdict = v;
            out[i].note = match (out[i].note.take(), note) {
                (Some(a), Some(b)) => Some(format!("{a}; {b}")),
                (a, b) => a.or(b),
            };
        }
    }
    tested.len()
}

/// The parameters of a case as `key → value` words, layout (nodes × devices per node) as
/// one.
fn param_words(p: &CaseParams) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if let Ok(serde_json::Value::Object(o)) = serde_json::to_value(p) {
        for (k, v) in o {
            let s = match v {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => "none".to_string(),
                other => other.to_string(),
            };
            m.insert(k, s);
        }
    }
    let layout = format!("{}x{}", p.nodes, p.devices_per_node);
    m.remove("nodes");
    m.remove("devices_per_node");
    m.insert("layout".to_string(), layout);
    m
}

/// Names the set-up of every case that shares its label with another case: the parameters
/// whose values differ within the group (layout, topology, binding, …).
fn name_setups(out: &mut [CaseComparison], params: &HashMap<&str, &CaseParams>) {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, c) in out.iter().enumerate() {
        groups.entry(c.label.clone()).or_default().push(i);
    }
    for idx in groups.values().filter(|g| g.len() > 1) {
        let words: Vec<BTreeMap<String, String>> = idx
            .iter()
            .map(|&i| {
                params
                    .get(out[i].id.as_str())
                    .map_or_else(BTreeMap::new, |p| param_words(p))
            })
            .collect();
        let keys: BTreeSet<&String> = words.iter().flat_map(|w| w.keys()).collect();
        let differ: Vec<&String> = keys
            .into_iter()
            .filter(|k| {
                let vals: BTreeSet<Option<&String>> = words.iter().map(|w| w.get(*k)).collect();
                vals.len() > 1
            })
            .collect();
        if differ.is_empty() {
            continue;
        }
        for (&i, w) in idx.iter().zip(&words) {
            let named: Vec<String> = differ
                .iter()
                .map(|k| format!("{k}={}", w.get(*k).map_or("none", String::as_str)))
                .collect();
            out[i].setup = Some(named.join(" "));
        }
    }
}

/// Display order: by verdict; the worst regressions and best improvements first.
fn sort_for_display(out: &mut [CaseComparison]) {
    let key = |c: &CaseComparison| match (c.verdict, c.stats) {
        (Verdict::Regressed, Some(s)) => -s.worsening(),
        (Verdict::Improved, Some(s)) => s.worsening(),
        _ => 0.0,
    };
    out.sort_by(|x, y| x.verdict.cmp(&y.verdict).then(key(x).total_cmp(&key(y))));
}

/// Cases measured (status ok) on both sides whose samples could not be analysed: a results
/// file that says "ok" without usable numbers, or values with no spread and no timer
/// resolution. A gate must not pass on them.
pub(crate) fn unusable(c: &Comparison) -> Vec<&CaseComparison> {
    c.cases
        .iter()
        .filter(|x| {
            x.verdict == Verdict::NotCompared
                && x.stats.is_none()
                && x.baseline_status == Some(CaseStatus::Ok)
                && x.candidate_status == Some(CaseStatus::Ok)
        })
        .collect()
}
