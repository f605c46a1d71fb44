//! Whole runs far off the other runs of their side, set apart before the runs are judged.
//!
//! A busy machine makes whole runs slow (another job, a slow VM phase: 9 of the noise corpus's
//! 32 unchanged runs sat in a phase about 2× slower at every collective) or, rarely, wildly
//! off (×30–100). Such a run moves every case of its side the same way, so one of them among
//! eight costs a run-level rank or t statistic most of its power, and can make a side look
//! changed when it is not. A true change moves every run of its side alike, so it never
//! shows as one run far from its siblings: screening within a side cannot hide it.
//!
//! A run's offset is the median, over the cases measured ok by at least [`MIN_RUNS`] runs of
//! the side, of ln(the run's median time) − ln(the median of the runs' median times). A run
//! is set apart when its offset lies beyond [`Z`] robust standard deviations (1.4826 × MAD)
//! of the side's offsets and beyond a factor of [`MIN_FACTOR`]; fewer than half of a side's
//! runs are ever set apart (the majority is the side).

use crate::results::schema::{CaseStatus, ResultsFile};
use crate::stats::median;
use std::collections::HashMap;

/// Fewest runs a side for the screen (a median and a spread of offsets need three).
pub(crate) const MIN_RUNS: usize = 3;
/// Robust standard deviations beyond which a run's offset is far off.
pub(crate) const Z: f64 = 5.0;
/// Smallest whole-run factor ever set apart: closer runs are ordinary run-to-run variance.
pub(crate) const MIN_FACTOR: f64 = 1.10;
/// Fewest cases a run's offset is taken over.
const MIN_CASES: usize = 3;

/// A run set apart: its id, and how many times slower (above 1) or faster (below 1) than its
/// side's typical run it was at the median case.
#[derive(Debug, Clone, PartialEq)]
pub struct SetApart {
    pub side: &'static str,
    pub run_id: String,
    pub factor: f64,
}

/// The runs of a side worth judging (given order kept) and those set apart.
pub(super) fn keep_typical<'a>(
    runs: &[&'a ResultsFile],
    side: &'static str,
) -> (Vec<&'a ResultsFile>, Vec<SetApart>) {
    let offsets = run_offsets(runs);
    let far = outlying(&offsets);
    let mut kept = Vec::with_capacity(runs.len());
    let mut apart = Vec::new();
    for (i, f) in runs.iter().enumerate() {
        match (far.contains(&i), offsets[i]) {
            (true, Some(o)) => apart.push(SetApart {
                side,
                run_id: f.run.run_id.clone(),
                factor: o.exp(),
            }),
            _ => kept.push(*f),
        }
    }
    (kept, apart)
}

/// Each run's offset (natural log of its factor against the side's median run), `None` for a
/// run with fewer than [`MIN_CASES`] cases shared with enough other runs.
pub(crate) fn run_offsets(runs: &[&ResultsFile]) -> Vec<Option<f64>> {
    // ln(median time) of each ok case of each run, by case id.
    let mut by_case: HashMap<&str, Vec<(usize, f64)>> = HashMap::new();
    for (r, f) in runs.iter().enumerate() {
        for c in f.cases.iter().filter(|c| c.status == CaseStatus::Ok) {
            let Some(t) = c.timing.as_ref() else { continue };
            if let Some(m) = median(&t.samples_s).filter(|m| *m > 0.0 && m.is_finite()) {
                by_case.entry(c.id.as_str()).or_default().push((r, m.ln()));
            }
        }
    }
    let mut per_run: Vec<Vec<f64>> = vec![Vec::new(); runs.len()];
    for v in by_case.values().filter(|v| v.len() >= MIN_RUNS) {
        let logs: Vec<f64> = v.iter().map(|x| x.1).collect();
        let Some(mid) = median(&logs) else { continue };
        for &(r, x) in v {
            per_run[r].push(x - mid);
        }
    }
    per_run
        .iter()
        .map(|d| (d.len() >= MIN_CASES).then(|| median(d)).flatten())
        .collect()
}

/// Indices of the offsets far from the others (see the module's rule); pure.
pub(crate) fn outlying(offsets: &[Option<f64>]) -> Vec<usize> {
    let known: Vec<(usize, f64)> = offsets
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.map(|o| (i, o)))
        .collect();
    if known.len() < MIN_RUNS {
        return Vec::new();
    }
    let values: Vec<f64> = known.iter().map(|x| x.1).collect();
    let Some(mid) = median(&values) else {
        return Vec::new();
    };
    let dev: Vec<f64> = values.iter().map(|x| (x - mid).abs()).collect();
    let mad = median(&dev).unwrap_or(0.0);
    let limit = (Z * 1.4826 * mad).max(MIN_FACTOR.ln());
    let mut far: Vec<(usize, f64)> = known
        .iter()
        .map(|&(i, o)| (i, (o - mid).abs()))
        .filter(|x| x.1 > limit)
        .collect();
    // The majority is the side: the farthest first, fewer than half of the runs.
    far.sort_by(|x, y| y.1.total_cmp(&x.1));
    far.truncate((known.len() - 1) / 2);
    let mut idx: Vec<usize> = far.into_iter().map(|x| x.0).collect();
    idx.sort_unstable();
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(v: &[f64]) -> Vec<Option<f64>> {
        v.iter().map(|x| Some(x.ln())).collect()
    }

    #[test]
    fn a_slow_phase_run_among_eight_is_set_apart() {
        let o = some(&[1.0, 1.01, 0.99, 2.0, 1.02, 0.98, 1.0, 1.01]);
        assert_eq!(outlying(&o), vec![3]);
        let o = some(&[1.0, 1.01, 0.99, 60.0, 1.02, 0.98, 1.0, 0.3]);
        assert_eq!(outlying(&o), vec![3, 7]);
    }

    #[test]
    fn ordinary_spread_and_small_factors_are_kept() {
        // 8 runs spread ±6 %: nothing beyond 5 robust SDs
        let o = some(&[1.0, 1.06, 0.94, 1.03, 0.97, 1.05, 0.95, 1.0]);
        assert!(outlying(&o).is_empty());
        // identical runs but one 5 % off: the MAD is 0, the factor floor keeps it
        let o = some(&[1.0, 1.0, 1.0, 1.05, 1.0]);
        assert!(outlying(&o).is_empty());
        let o = some(&[1.0, 1.0, 1.0, 1.2, 1.0]);
        assert_eq!(outlying(&o), vec![3]);
    }

    #[test]
    fn the_majority_is_the_side_and_two_runs_are_not_screened() {
        // two groups of four: no majority, nothing set apart
        let o = some(&[1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]);
        assert!(outlying(&o).is_empty());
        // three far of seven: at most three (fewer than half)
        let o = some(&[1.0, 1.0, 1.0, 1.0, 3.0, 4.0, 5.0]);
        assert_eq!(outlying(&o).len(), 3);
        assert!(outlying(&some(&[1.0, 50.0])).is_empty());
        // an unknown offset counts for nothing
        let o = vec![Some(0.0), None, Some(0.0), Some(3.0_f64.ln())];
        assert_eq!(outlying(&o), vec![3]);
    }
}
