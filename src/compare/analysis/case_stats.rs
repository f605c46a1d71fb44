//! The statistics of one case measured on both sides, on the strongest basis its runs allow
//! (paired runs, unpaired runs, a prediction interval, or one run's batches a side), before
//! the correction over the cases.

use super::{Basis, CaseStats, Settings};
use crate::compare::metric::Metric;
use crate::compare::stats::{self, LogChange, MedianChange, MW_EXACT_MAX_CELLS};
use crate::params::Timing;
use crate::results::schema::{CaseResult, CaseStatus, ResultsFile};
use crate::stats::quantile_sorted;
use std::collections::HashMap;
use std::sync::Mutex;
/// What depends only on sample counts, computed once per comparison and shared by the
/// threads that analyse cases.
#[derive(Default)]
pub(super) struct Tables {
    weights: HashMap<usize, Vec<f64>>,
    mw: HashMap<(usize, usize), Vec<f64>>,
    /// Two-sided t quantiles by whole degrees of freedom (∞ as u64::MAX), filled as needed.
    t: Mutex<HashMap<u64, f64>>,
}

impl Tables {
    /// Makes sure the tables for these sample counts exist.
    pub(super) fn prepare(&mut self, na: usize, nb: usize) {
        for n in [na, nb] {
            self.weights
                .entry(n)
                .or_insert_with(|| stats::median_bootstrap_weights(n));
        }
        if na * nb <= MW_EXACT_MAX_CELLS {
            self.mw
                .entry((na, nb))
                .or_insert_with(|| stats::mann_whitney_exact_cdf(na, nb));
        }
    }

    /// The two-sided t quantile for `confidence` at `df` degrees of freedom (whole or ∞).
    fn t_quantile(&self, confidence: f64, df: f64) -> f64 {
        let key = if df.is_finite() { df as u64 } else { u64::MAX };
        let mut cache = self.t.lock().unwrap_or_else(|e| e.into_inner());
        *cache
            .entry(key)
            .or_insert_with(|| stats::t_quantile(confidence, df))
    }
}

/// Sample count of a case's timing (every metric has as many samples as the time).
pub(super) fn sample_count(c: &CaseResult) -> usize {
    c.timing.as_ref().map_or(0, |t| t.samples_s.len())
}

fn failure_note(side: &str, c: &CaseResult) -> String {
    let what = match c.status {
        CaseStatus::Wrong => {
            crate::units::count(c.wrong as usize, "wrong element", "wrong elements")
        }
        s => s.name().to_string(),
    };
    match &c.message {
        Some(m) if !m.is_empty() => format!("{side}: {what}: {m}"),
        _ => format!("{side}: {what}"),
    }
}

/// One record of a case: the run it is in (index in start-time order) and the timer's
/// resolution per operation of its samples (seconds; 0 when not recorded).
#[derive(Clone, Copy)]
pub(super) struct Rec<'a> {
    pub(super) case: &'a CaseResult,
    pub(super) run: usize,
    pub(super) res_s: f64,
}

/// The timer step of one sample of `c`: the run's recorded resolution over the operations a
/// sample averages (a pipelined batch times `iters / batches` operations at once).
pub(super) fn op_resolution_s(f: &ResultsFile, c: &CaseResult) -> f64 {
    let launch = f
        .launches
        .iter()
        .find(|l| l.launch_id == c.launch_id && l.provenance.is_some())
        .or_else(|| f.launches.iter().find(|l| l.provenance.is_some()));
    let res = launch
        .and_then(|l| l.provenance.as_ref())
        .map_or(0.0, |p| p.timer.resolution_s);
    let ops = match &c.timing {
        Some(t) if t.mode == Timing::Pipelined && t.batches > 0 => {
            f64::from((t.iters / t.batches).max(1))
        }
        _ => 1.0,
    };
    if res.is_finite() && res > 0.0 {
        res / ops
    } else {
        0.0
    }
}

/// One case on one side: its record in each run that has it, in run order.
pub(super) struct SideCase<'a> {
    pub(super) records: Vec<Rec<'a>>,
    /// Runs on this side.
    pub(super) runs: usize,
}

impl<'a> SideCase<'a> {
    pub(super) fn ok(&self) -> Vec<Rec<'a>> {
        self.records
            .iter()
            .copied()
            .filter(|c| c.case.status == CaseStatus::Ok)
            .collect()
    }

    /// The side's status: ok when a run measured it and none failed; else the first failure
    /// (wrong, failed, timed out) in any run; skipped when no run measured it.
    pub(super) fn status(&self) -> (CaseStatus, Option<&'a CaseResult>) {
        let bad = self
            .records
            .iter()
            .find(|c| !matches!(c.case.status, CaseStatus::Ok | CaseStatus::Skipped));
        if let Some(c) = bad {
            return (c.case.status, Some(c.case));
        }
        match self
            .records
            .iter()
            .find(|c| c.case.status == CaseStatus::Ok)
        {
            Some(_) => (CaseStatus::Ok, None),
            None => (CaseStatus::Skipped, self.records.first().map(|r| r.case)),
        }
    }

    pub(super) fn note(&self, side: &str) -> String {
        let (_, rec) = self.status();
        let Some(rec) = rec else {
            return format!("{side}: not measured");
        };
        let mut n = failure_note(side, rec);
        if self.runs > 1 {
            let k = self
                .records
                .iter()
                .filter(|c| c.case.status == rec.status)
                .count();
            n.push_str(&format!(" ({k} of {} runs)", self.runs));
        }
        n
    }
}

fn sorted_samples(case: &CaseResult, metric: Metric) -> Option<Vec<f64>> {
    let mut s = metric.samples(case)?;
    s.sort_unstable_by(f64::total_cmp);
    Some(s)
}

/// Why a case measured on both sides cannot be analysed (its note in the comparison).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum StatsError {
    #[error("no timing samples on one side")]
    NoSamples,
    #[error("too few samples to compare ({baseline} and {candidate}; need ≥ 2 each)")]
    TooFewSamples { baseline: usize, candidate: usize },
    /// [`Tables::prepare`] was not called for these counts (a bug, not an input problem).
    #[error("internal: no bootstrap weights for {baseline} and {candidate} samples")]
    NoWeights { baseline: usize, candidate: usize },
    #[error("a {metric} sample is 0, negative or not finite")]
    NotPositive { metric: &'static str },
    #[error("no samples")]
    Empty,
    #[error("{side} run {run}: no {metric} samples")]
    RunWithoutSamples {
        side: &'static str,
        /// 1-based.
        run: usize,
        metric: &'static str,
    },
    #[error("a run's median {metric} is 0, negative or not finite")]
    RunMedianNotPositive { metric: &'static str },
    #[error("no spread: every value on each side is identical, the sides differ, and the runs record no timer resolution to bound the error; give more runs, or runs whose timer resolution is recorded")]
    NoSpread,
}

/// What every case of one comparison shares.
pub(super) struct Ctx<'s> {
    pub(super) settings: &'s Settings,
    pub(super) paired: bool,
    pub(super) runs_baseline: usize,
    pub(super) runs_candidate: usize,
}

/// A case's statistics and, when it was judged differently from the comparison's main
/// basis, a note saying how.
pub(super) type Judged = (CaseStats, Option<String>);

/// Statistics of one case measured on both sides, before the correction. Paired runs when
/// the comparison pairs and ≥ 2 pairs have the case; else unpaired runs with ≥ 2 runs a side;
/// one run against the other side's runs; or the batches of one run a side.
pub(super) fn case_stats(
    b: &[Rec<'_>],
    c: &[Rec<'_>],
    ctx: &Ctx<'_>,
    tables: &Tables,
) -> Result<Judged, StatsError> {
    let metric = ctx.settings.metric.pick(b[0].case, c[0].case);
    let mut note = None;
    if ctx.paired {
        match paired_stats(b, c, metric, ctx)? {
            Ok((s, n)) => return Ok((with_headlines(s, b, c), n)),
            Err(why) => note = Some(why),
        }
    }
    let (s, how) = match (b.len(), c.len()) {
        (1, 1) => {
            let s = batch_stats(b[0], c[0], metric, ctx, tables)?;
            let multi = ctx.runs_baseline > 1 || ctx.runs_candidate > 1;
            let how = multi.then(|| {
                "only one run a side measured it: judged on that run's batch samples, without run-to-run variance".to_string()
            });
            (s, how)
        }
        (nb, nc) if nb >= 2 && nc >= 2 => {
            let s = run_stats(b, c, metric, ctx)?;
            let mut gaps = Vec::new();
            if nb < ctx.runs_baseline {
                gaps.push(format!("{nb} of {} baseline runs", ctx.runs_baseline));
            }
            if nc < ctx.runs_candidate {
                gaps.push(format!("{nc} of {} candidate runs", ctx.runs_candidate));
            }
            (
                s,
                (!gaps.is_empty()).then(|| format!("measured in {}", gaps.join(" and "))),
            )
        }
        _ => prediction_stats(b, c, metric, ctx)?,
    };
    let note = match (note, how) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    Ok((with_headlines(s, b, c), note))
}

/// The side's measurement `scalebench report` would show for the case given the same runs:
/// the newest by finish time, the later run on a tie (`report::load::select`'s rule).
fn newest<'r, 'a>(recs: &'r [Rec<'a>]) -> Option<&'r Rec<'a>> {
    recs.iter().max_by(|x, y| {
        x.case
            .finished_unix_s
            .total_cmp(&y.case.finished_unix_s)
            .then(x.run.cmp(&y.run))
    })
}

/// The headline value of the metric that `report` shows for the side (its newest run's).
fn headline(recs: &[Rec<'_>], metric: Metric) -> Option<f64> {
    newest(recs).and_then(|r| metric.headline(r.case))
}

fn with_headlines(mut s: CaseStats, b: &[Rec<'_>], c: &[Rec<'_>]) -> CaseStats {
    s.headline_baseline = headline(b, s.metric);
    s.headline_candidate = headline(c, s.metric);
    s.frac_peak_baseline = frac_peak(b, s.metric);
    s.frac_peak_candidate = frac_peak(c, s.metric);
    s
}

/// The fraction of peak of that headline figure (the newest run's), where it recorded one
/// that reads as a fraction (not one above 1 of a measured ceiling: under-measured, issue 48).
fn frac_peak(recs: &[Rec<'_>], metric: Metric) -> Option<f64> {
    let figure = match metric {
        Metric::Busbw => "busbw_gbps",
        Metric::Gflops => "gflops",
        Metric::Time | Metric::Algbw => return None,
    };
    newest(recs).and_then(|r| {
        r.case
            .peak
            .iter()
            .find(|f| f.figure == figure)
            .and_then(crate::results::ceilings::bounds::readable_frac)
    })
}

/// Each record's median metric value and its relative timer resolution (res / median time).
fn run_values(
    side: &'static str,
    recs: &[Rec<'_>],
    metric: Metric,
) -> Result<Vec<(f64, f64)>, StatsError> {
    recs.iter()
        .map(|r| {
            let no = || StatsError::RunWithoutSamples {
                side,
                run: r.run + 1,
                metric: metric.name(),
            };
            let s = sorted_samples(r.case, metric)
                .filter(|s| !s.is_empty())
                .ok_or_else(no)?;
            let t = sorted_samples(r.case, Metric::Time)
                .filter(|s| !s.is_empty())
                .ok_or_else(no)?;
            let t_med = quantile_sorted(&t, 0.5);
            let rel = if t_med > 0.0 { r.res_s / t_med } else { 0.0 };
            Ok((quantile_sorted(&s, 0.5), rel))
        })
        .collect()
}

fn max_res(v: &[(f64, f64)]) -> f64 {
    v.iter().map(|x| x.1).fold(0.0, f64::max)
}

fn values(v: &[(f64, f64)]) -> Vec<f64> {
    v.iter().map(|x| x.0).collect()
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Paired statistics over the runs both sides measured at the same pair index. The outer
/// error is a problem with the data; the inner `Err` says why pairing does not apply to this
/// case (fewer than 2 complete pairs), so it falls back to an unpaired basis.
fn paired_stats(
    b: &[Rec<'_>],
    c: &[Rec<'_>],
    metric: Metric,
    ctx: &Ctx<'_>,
) -> Result<Result<Judged, String>, StatsError> {
    let by_run: HashMap<usize, Rec<'_>> = c.iter().map(|r| (r.run, *r)).collect();
    let (pb, pc): (Vec<Rec<'_>>, Vec<Rec<'_>>) = b
        .iter()
        .filter_map(|r| by_run.get(&r.run).map(|x| (*r, *x)))
        .unzip();
    let pairs = ctx.runs_baseline;
    if pb.len() < 2 {
        return Ok(Err(format!(
            "only {} of {pairs} pairs measured it on both sides: judged unpaired",
            pb.len()
        )));
    }
    let (vb, vc) = (
        run_values("baseline", &pb, metric)?,
        run_values("candidate", &pc, metric)?,
    );
    let (xb, xc) = (values(&vb), values(&vc));
    let l = stats::trimmed_paired_log(&xb, &xc, max_res(&vb), max_res(&vc)).ok_or(
        StatsError::RunMedianNotPositive {
            metric: metric.name(),
        },
    )?;
    let s = from_log(
        l,
        metric,
        Basis::Paired,
        (pb.len(), pc.len()),
        (geomean(&xb), geomean(&xc)),
        ctx,
    )?;
    let note = (pb.len() < pairs).then(|| {
        format!(
            "paired on {} of {pairs} pairs (the others lack it on a side)",
            pb.len()
        )
    });
    Ok(Ok((s, note)))
}

/// Unpaired run-level statistics: one median per run, Yuen's trimmed t on their logarithms
/// (Welch's with fewer than 5 runs a side).
fn run_stats(
    b: &[Rec<'_>],
    c: &[Rec<'_>],
    metric: Metric,
    ctx: &Ctx<'_>,
) -> Result<CaseStats, StatsError> {
    let (vb, vc) = (
        run_values("baseline", b, metric)?,
        run_values("candidate", c, metric)?,
    );
    let (xb, xc) = (values(&vb), values(&vc));
    if xb.len().min(xc.len()) >= stats::RANK_MIN_RUNS {
        if let Some(s) = rank_stats(&xb, &xc, metric, ctx) {
            return Ok(s);
        }
    }
    let l = stats::yuen_log(&xb, &xc, max_res(&vb), max_res(&vc)).ok_or(
        StatsError::RunMedianNotPositive {
            metric: metric.name(),
        },
    )?;
    from_log(
        l,
        metric,
        Basis::Runs,
        (xb.len(), xc.len()),
        (geomean(&xb), geomean(&xc)),
        ctx,
    )
}

/// The rank basis ([`stats::log_shift`]): `None` when a value is not positive or the
/// interval has no width (identical run medians on a coarse clock: the t statistics floor
/// the error at the timer's resolution instead).
fn rank_stats(xb: &[f64], xc: &[f64], metric: Metric, ctx: &Ctx<'_>) -> Option<CaseStats> {
    let ok = |v: &[f64]| v.iter().all(|x| x.is_finite() && *x > 0.0);
    if !ok(xb) || !ok(xc) {
        return None;
    }
    let (lb, lc): (Vec<f64>, Vec<f64>) = (
        xb.iter().map(|x| x.ln()).collect(),
        xc.iter().map(|x| x.ln()).collect(),
    );
    let cdf = stats::mann_whitney_exact_cdf(lb.len(), lc.len());
    let n = ctx.settings.noise;
    let conf = ctx.settings.confidence;
    let s = stats::log_shift(&lb, &lc, &cdf, conf, (1.0 - n).ln(), (1.0 + n).ln())?;
    if s.high.is_nan() || s.low.is_nan() || s.high <= s.low {
        return None;
    }
    // An equivalent error for the MDE and the runs needed: the interval's half-width over
    // the normal quantile (∞ when the runs are too few for an interval).
    let se = (s.high - s.low) / (2.0 * stats::t_quantile(conf, f64::INFINITY));
    let m = xb.len().min(xc.len()) as f64;
    Some(CaseStats {
        metric,
        basis: Basis::RunRanks,
        n_baseline: xb.len(),
        n_candidate: xc.len(),
        change: MedianChange {
            median_a: geomean(xb),
            median_b: geomean(xc),
            change: s.d.exp() - 1.0,
            ci_low: s.low.exp() - 1.0,
            ci_high: s.high.exp() - 1.0,
            se_log: se,
            df: (xb.len() + xc.len() - 2) as f64,
        },
        p_value: s.p_point,
        p_exact: true,
        p_adjusted: s.p_point,
        p_band: s.p_band,
        p_band_adjusted: s.p_band,
        mde: 0.0,
        units_needed: None,
        sd_unit: se * (m / 2.0).sqrt(),
        floored: false,
        headline_baseline: None,
        headline_candidate: None,
        frac_peak_baseline: None,
        frac_peak_candidate: None,
    })
}

/// One side measured the case in one run only, the other in several: the single run's
/// median against a prediction interval of the other side's run medians. Pooling the
/// batches instead would mix one run's within-run noise with another side's run-to-run
/// spread, unsaid.
fn prediction_stats(
    b: &[Rec<'_>],
    c: &[Rec<'_>],
    metric: Metric,
    ctx: &Ctx<'_>,
) -> Result<Judged, StatsError> {
    let (vb, vc) = (
        run_values("baseline", b, metric)?,
        run_values("candidate", c, metric)?,
    );
    let single_is_candidate = vc.len() == 1;
    let (many, one) = if single_is_candidate {
        (&vb, &vc)
    } else {
        (&vc, &vb)
    };
    let xm = values(many);
    let res = max_res(many).max(one[0].1);
    let l = stats::prediction_log(&xm, one[0].0, single_is_candidate, res).ok_or(
        StatsError::RunMedianNotPositive {
            metric: metric.name(),
        },
    )?;
    let centres = if single_is_candidate {
        (geomean(&xm), one[0].0)
    } else {
        (one[0].0, geomean(&xm))
    };
    let s = from_log(
        l,
        metric,
        Basis::Prediction,
        (vb.len(), vc.len()),
        centres,
        ctx,
    )?;
    let (side, other, runs, other_runs) = if single_is_candidate {
        ("candidate", "baseline", ctx.runs_candidate, many.len())
    } else {
        ("baseline", "candidate", ctx.runs_baseline, many.len())
    };
    let note = format!(
        "only 1 of {runs} {side} runs measured it: that run is judged against a prediction interval from the {other_runs} {other} runs"
    );
    Ok((s, Some(note)))
}

/// A case's statistics from a change on the log scale: the interval, the point test and the
/// band test, all from one t distribution. A zero error (no spread, no timer resolution)
/// with different centres cannot be judged.
fn from_log(
    l: LogChange,
    metric: Metric,
    basis: Basis,
    n: (usize, usize),
    centres: (f64, f64),
    ctx: &Ctx<'_>,
) -> Result<CaseStats, StatsError> {
    if l.se.is_nan() || (l.se <= 0.0 && l.d != 0.0) {
        return Err(StatsError::NoSpread);
    }
    let half = if l.se > 0.0 {
        stats::t_quantile(ctx.settings.confidence, l.df) * l.se
    } else {
        0.0
    };
    let p = if l.se > 0.0 {
        stats::t_two_sided_p(l.d / l.se, l.df)
    } else {
        1.0
    };
    let hib = metric.higher_is_better();
    let w = if hib { -l.d } else { l.d };
    let (worse, better) = stats::band_edges(ctx.settings.noise, hib);
    let (_, _, p_band) = stats::band_test(w, l.se, l.df, worse, better);
    Ok(CaseStats {
        metric,
        basis,
        n_baseline: n.0,
        n_candidate: n.1,
        change: MedianChange {
            median_a: centres.0,
            median_b: centres.1,
            change: l.d.exp() - 1.0,
            ci_low: (l.d - half).exp() - 1.0,
            ci_high: (l.d + half).exp() - 1.0,
            se_log: l.se,
            df: l.df,
        },
        p_value: p,
        p_exact: false,
        p_adjusted: p,
        p_band,
        p_band_adjusted: p_band,
        mde: 0.0,
        units_needed: None,
        sd_unit: l.sd_unit,
        floored: l.floored,
        headline_baseline: None,
        headline_candidate: None,
        frac_peak_baseline: None,
        frac_peak_candidate: None,
    })
}

/// The batch samples of one run a side: exact bootstrap of the median for the interval,
/// Mann–Whitney for the point test and (on samples moved by the band's edge) the band test.
/// When the bootstrap error is below the timer's resolution (identical samples on a coarse
/// clock), the error is floored there and every test uses t on the floored error instead.
fn batch_stats(
    b: Rec<'_>,
    c: Rec<'_>,
    metric: Metric,
    ctx: &Ctx<'_>,
    tables: &Tables,
) -> Result<CaseStats, StatsError> {
    let (Some(sb), Some(sc)) = (
        sorted_samples(b.case, metric),
        sorted_samples(c.case, metric),
    ) else {
        return Err(StatsError::NoSamples);
    };
    let (nb, nc) = (sb.len(), sc.len());
    if nb < 2 || nc < 2 {
        return Err(StatsError::TooFewSamples {
            baseline: nb,
            candidate: nc,
        });
    }
    let (Some(wb), Some(wc)) = (tables.weights.get(&nb), tables.weights.get(&nc)) else {
        return Err(StatsError::NoWeights {
            baseline: nb,
            candidate: nc,
        });
    };
    let settings = ctx.settings;
    let quantile = |df: f64| tables.t_quantile(settings.confidence, df);
    let change =
        stats::median_change_with(&sb, wb, &sc, wc, quantile).ok_or(StatsError::NotPositive {
            metric: metric.name(),
        })?;
    let rel = |r: &Rec<'_>, n: usize| {
        let t = sorted_samples(r.case, Metric::Time).unwrap_or_default();
        let med = if t.is_empty() {
            0.0
        } else {
            quantile_sorted(&t, 0.5)
        };
        let x = if med > 0.0 { r.res_s / med } else { 0.0 };
        x * x / n as f64
    };
    let se_floor = (rel(&b, nb) + rel(&c, nc)).sqrt();
    let sd_unit = change.se_log * (nb.min(nc) as f64 / 2.0).sqrt();
    if change.se_log < se_floor || change.se_log == 0.0 {
        let l = LogChange {
            d: (1.0 + change.change).ln(),
            se: se_floor,
            df: (nb.min(nc) - 1) as f64,
            sd_unit: se_floor * (nb.min(nc) as f64 / 2.0).sqrt(),
            floored: se_floor > 0.0,
        };
        let mut s = from_log(
            l,
            metric,
            Basis::Batches,
            (nb, nc),
            (change.median_a, change.median_b),
            ctx,
        )?;
        s.change.change = change.change;
        return Ok(s);
    }
    let cdf = tables.mw.get(&(nb, nc)).map(Vec::as_slice);
    let mw = stats::mann_whitney(&sb, &sc, cdf).ok_or(StatsError::Empty)?;
    // The band test uses the interval's own statistic (the bootstrap error, t with the same
    // degrees of freedom), so a case is beyond the band exactly when its printed interval is:
    // a rank test on shifted samples could call "regressed" a case whose interval spanned
    // both sides (seen: −80.4 % [−99.5 %, +750 %]).
    let hib = metric.higher_is_better();
    let d = (1.0 + change.change).ln();
    let (worse, better) = stats::band_edges(settings.noise, hib);
    let w = if hib { -d } else { d };
    let (_, _, p_band) = stats::band_test(w, change.se_log, change.df, worse, better);
    Ok(CaseStats {
        metric,
        basis: Basis::Batches,
        n_baseline: nb,
        n_candidate: nc,
        change,
        p_value: mw.p_two_sided,
        p_exact: mw.exact,
        p_adjusted: mw.p_two_sided,
        p_band,
        p_band_adjusted: p_band,
        mde: 0.0,
        units_needed: None,
        sd_unit,
        floored: false,
        headline_baseline: None,
        headline_candidate: None,
        frac_peak_baseline: None,
        frac_peak_candidate: None,
    })
}
