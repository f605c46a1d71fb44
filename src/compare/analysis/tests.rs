//! Simulated comparisons: verdicts, order, status changes and the correction.

use super::*;
use crate::results::io::parse_results;
use crate::results::schema::ResultsFile;
use std::path::Path;

fn golden() -> ResultsFile {
    let text = include_str!("../../../tests/golden/results-v1.json");
    parse_results(Path::new("golden"), text).unwrap()
}

/// Gives every case of `f` 20 samples spread ±3 % around `scale` × its time.
fn with_samples(mut f: ResultsFile, scale: impl Fn(usize) -> f64) -> ResultsFile {
    for (k, c) in f.cases.iter_mut().enumerate() {
        let t = c.timing.as_mut().unwrap();
        let base = t.time_s * scale(k);
        t.samples_s = (0..20)
            .map(|i| base * (1.0 + 0.03 * ((i * 7 % 20) as f64 / 19.0 - 0.5) * 2.0))
            .collect();
    }
    f
}

#[test]
fn identical_files_change_nothing() {
    let g = with_samples(golden(), |_| 1.0);
    let r = compare(&g, &g, &Settings::default());
    assert_eq!(r.count(Verdict::NoChange), g.cases.len());
    assert_eq!(r.tested, g.cases.len());
    for c in &r.cases {
        let s = c.stats.unwrap();
        assert_eq!(s.change.change, 0.0);
        assert_eq!(s.p_value, 1.0);
    }
}

#[test]
fn direction_aware_verdicts_and_order() {
    let g = with_samples(golden(), |_| 1.0);
    // case 0 (allreduce) 25 % slower, case 4 (matmul) 40 % slower, case 1 20 % faster
    let cand = with_samples(golden(), |k| match k {
        0 => 1.25,
        4 => 1.4,
        1 => 0.8,
        _ => 1.0,
    });
    let r = compare(&g, &cand, &Settings::default());
    assert_eq!(r.count(Verdict::Regressed), 2);
    assert_eq!(r.count(Verdict::Improved), 1);
    // worst first: matmul (GFLOP/s −29 %) before allreduce (busbw −20 %)
    assert_eq!(r.cases[0].id, g.cases[4].id);
    assert_eq!(r.cases[0].stats.unwrap().metric, Metric::Gflops);
    assert_eq!(r.cases[1].id, g.cases[0].id);
    let s = r.cases[1].stats.unwrap();
    assert_eq!(s.metric, Metric::Busbw);
    assert!((s.change.change - (1.0 / 1.25 - 1.0)).abs() < 1e-9);
    assert!(s.change.ci_high < -0.02);
    // the same comparison by time: same verdicts, opposite sign
    let by_time = Settings {
        metric: MetricChoice::Fixed(Metric::Time),
        ..Settings::default()
    };
    let t = compare(&g, &cand, &by_time);
    assert_eq!(t.count(Verdict::Regressed), 2);
    assert!((t.cases[1].stats.unwrap().change.change - 0.25).abs() < 1e-9);
}

#[test]
fn status_changes_missing_and_new() {
    let g = with_samples(golden(), |_| 1.0);
    let mut cand = g.clone();
    cand.cases[0].status = CaseStatus::Wrong;
    cand.cases[0].wrong = 3;
    let gone = cand.cases.remove(5);
    let mut extra = cand.cases[1].clone();
    extra.id = "00000000000000ff".into();
    cand.cases.push(extra);
    let mut base = g.clone();
    base.cases[2].status = CaseStatus::Failed;
    base.cases[2].message = Some("boom".into());
    let r = compare(&base, &cand, &Settings::default());
    let find = |id: &str| r.cases.iter().find(|c| c.id == id).unwrap();
    assert_eq!(find(&g.cases[0].id).verdict, Verdict::Failed);
    assert!(find(&g.cases[0].id)
        .note
        .as_deref()
        .unwrap()
        .contains("3 wrong"));
    assert_eq!(find(&gone.id).verdict, Verdict::Missing);
    assert_eq!(find("00000000000000ff").verdict, Verdict::New);
    assert_eq!(find(&g.cases[2].id).verdict, Verdict::Fixed);
    assert!(find(&g.cases[2].id)
        .note
        .as_deref()
        .unwrap()
        .contains("boom"));
    assert_eq!(r.matched(), 5);
    assert_eq!(r.tested, 3);
    // too few samples is said, not judged
    let mut few = g.clone();
    few.cases[3].timing.as_mut().unwrap().samples_s.truncate(1);
    let r = compare(&g, &few, &Settings::default());
    let c = r.cases.iter().find(|c| c.id == g.cases[3].id).unwrap();
    assert_eq!(c.verdict, Verdict::NotCompared);
    assert!(c.note.as_deref().unwrap().contains("too few samples"));
}

#[test]
fn significance_is_required_even_beyond_the_band() {
    // 3 samples a side cannot reach p ≤ 0.05 with Mann–Whitney (smallest p is 0.1)
    let mut base = golden();
    let mut cand = golden();
    base.cases.truncate(1);
    cand.cases.truncate(1);
    base.cases[0].timing.as_mut().unwrap().samples_s = vec![1.0, 1.01, 0.99];
    cand.cases[0].timing.as_mut().unwrap().samples_s = vec![2.0, 2.02, 1.98];
    let r = compare(&base, &cand, &Settings::default());
    // twice the time: the band test uses the interval's own statistic (issue 46), so with the
    // interval wholly beyond the band the case is regressed (a rank test on 3 samples, whose
    // smallest p is 0.1, once left it inconclusive while the interval said otherwise)
    let s = r.cases[0].stats.unwrap();
    assert_eq!(r.cases[0].verdict, Verdict::Regressed, "{s:?}");
    assert!(s.change.ci_low > 0.1 || s.change.ci_high < -0.1, "{s:?}");
    // the mirror image: half the time
    cand.cases[0].timing.as_mut().unwrap().samples_s = vec![0.5, 0.505, 0.495];
    let r = compare(&base, &cand, &Settings::default());
    let s = r.cases[0].stats.unwrap();
    assert_eq!(r.cases[0].verdict, Verdict::Improved, "{s:?}");
    assert!(s.change.ci_low > 0.1 || s.change.ci_high < -0.1, "{s:?}");
}
