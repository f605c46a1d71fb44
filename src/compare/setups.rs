//! Per set-up summary: for each set-up, how many cases moved which way and by how much (the
//! median ratio of candidate to baseline time), and the recorded difference that explains it
//! where one exists (its transport changed; or it runs one rank and sends no MPI messages, so
//! a transport or network change cannot reach it). A forced-TCP candidate then reads as "one
//! set-up 14× slower at every size, the one-rank set-ups moved with the load" instead of a
//! list of regressed rows. Pure: from the comparison and the recorded differences.

use super::analysis::{Comparison, Verdict};
use super::gate::Report;
use super::provenance::Difference;
use crate::present::doc::Doc;
use crate::present::table::{format_num, Cell, NumFmt, Table};
use serde::Serialize;
use std::collections::BTreeMap;

/// One set-up's cases, by verdict, and their median change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetupSummary {
    /// The launch shape's label (`cpu 1x2 pure bind=none place=fill`).
    pub setup: String,
    pub cases: usize,
    pub regressed: usize,
    pub improved: usize,
    /// Within noise or no change.
    pub unchanged: usize,
    pub inconclusive: usize,
    /// Failed, fixed, missing, new or not compared.
    pub other: usize,
    /// Median over its compared cases of candidate time / baseline time (a throughput metric's
    /// ratio inverted), so > 1 is slower whatever the metric; absent when none was compared.
    pub median_time_ratio: Option<f64>,
    /// The smallest and largest of those ratios.
    pub time_ratio_range: Option<[f64; 2]>,
    /// The recorded difference that explains the set-up's change, where one does.
    pub explained_by: Option<String>,
}

/// The summary of every set-up of `c`, in set-up order. `transports` are the set-ups whose
/// recorded transport changed (label → (baseline's, candidate's)); `environment` the
/// environment difference, if any (it applies to every set-up that sends MPI messages).
pub(crate) fn summarise(
    c: &Comparison,
    transports: &BTreeMap<String, (String, String)>,
    environment: Option<&Difference>,
) -> Vec<SetupSummary> {
    let mut by: BTreeMap<&str, (SetupSummary, Vec<f64>, u32)> = BTreeMap::new();
    for x in &c.cases {
        let (s, ratios, ranks) = by.entry(x.axes.setup.as_str()).or_insert_with(|| {
            (
                SetupSummary {
                    setup: x.axes.setup.clone(),
                    cases: 0,
                    regressed: 0,
                    improved: 0,
                    unchanged: 0,
                    inconclusive: 0,
                    other: 0,
                    median_time_ratio: None,
                    time_ratio_range: None,
                    explained_by: None,
                },
                Vec::new(),
                0,
            )
        });
        *ranks = (*ranks).max(x.axes.ranks);
        s.cases += 1;
        match x.verdict {
            Verdict::Regressed => s.regressed += 1,
            Verdict::Improved => s.improved += 1,
            Verdict::WithinNoise | Verdict::NoChange => s.unchanged += 1,
            Verdict::Inconclusive => s.inconclusive += 1,
            _ => s.other += 1,
        }
        if let Some(st) = x.stats {
            let r = 1.0 + st.change.change;
            let t = if st.metric.higher_is_better() {
                1.0 / r
            } else {
                r
            };
            if t.is_finite() && t > 0.0 {
                ratios.push(t);
            }
        }
    }
    by.into_values()
        .map(|(mut s, mut ratios, ranks)| {
            ratios.sort_by(f64::total_cmp);
            s.median_time_ratio = crate::stats::median(&ratios);
            s.time_ratio_range = ratios.first().zip(ratios.last()).map(|(a, b)| [*a, *b]);
            s.explained_by = explanation(&s.setup, ranks, transports, environment);
            s
        })
        .collect()
}

/// What explains a set-up's change: its own transport change first; then, for one rank, that
/// no MPI message can be affected; then an environment change (for set-ups that send
/// messages).
fn explanation(
    setup: &str,
    ranks: u32,
    transports: &BTreeMap<String, (String, String)>,
    environment: Option<&Difference>,
) -> Option<String> {
    if let Some((b, c)) = transports.get(setup) {
        return Some(format!("MPI transport: {b} → {c}"));
    }
    if ranks == 1 && (!transports.is_empty() || environment.is_some()) {
        return Some(
            "one rank: sends no MPI messages, so the transport or environment change cannot reach it; what moved here is the host's load".into(),
        );
    }
    environment.map(|e| format!("{}: {} → {}", e.what, e.baseline, e.candidate))
}

/// Per set-up: the cases by verdict, their median change and what explains it. Shown where it
/// tells more than the counts line: several set-ups, or a recorded difference explaining one.
pub(crate) fn section(doc: &mut Doc, r: &Report, level: u8) {
    if r.setups.len() < 2 && r.setups.iter().all(|s| s.explained_by.is_none()) {
        return;
    }
    doc.heading(level, "By set-up");
    let mut t = Table::new(&[
        "set-up",
        "cases",
        "regressed",
        "improved",
        "unchanged",
        "inconclusive",
        "other",
        "median time new/old",
        "range",
        "explained by",
    ]);
    for s in &r.setups {
        t.push(vec![
            Cell::text(s.setup.clone()),
            Cell::UInt(s.cases as u64),
            Cell::UInt(s.regressed as u64),
            Cell::UInt(s.improved as u64),
            Cell::UInt(s.unchanged as u64),
            Cell::UInt(s.inconclusive as u64),
            Cell::UInt(s.other as u64),
            Cell::text(s.median_time_ratio.map_or("–".into(), ratio_text)),
            Cell::text(s.time_ratio_range.map_or("–".into(), |[a, b]| {
                format!(
                    "{} … {}",
                    format_num(a, NumFmt::Ratio),
                    format_num(b, NumFmt::Ratio)
                )
            })),
            Cell::text(s.explained_by.clone().unwrap_or_default()),
        ]);
    }
    doc.inline_table(t);
}

/// `14.3× slower`, `1.04× faster`, `no change` for a time ratio.
pub(crate) fn ratio_text(r: f64) -> String {
    if (r - 1.0).abs() < 0.005 {
        "no change".into()
    } else if r > 1.0 {
        format!("{}× slower", sig3(r))
    } else {
        format!("{}× faster", sig3(1.0 / r))
    }
}

fn sig3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::analysis::{Basis, CaseAxes, CaseComparison, CaseStats, Settings};
    use crate::compare::metric::Metric;
    use crate::compare::stats::MedianChange;

    fn case(setup: &str, ranks: u32, v: Verdict, metric: Metric, change: f64) -> CaseComparison {
        CaseComparison {
            id: format!("{setup}{change}"),
            label: String::new(),
            axes: CaseAxes {
                setup: setup.into(),
                ranks,
                variant: String::new(),
                bytes: None,
            },
            setup: None,
            verdict: v,
            baseline_status: None,
            candidate_status: None,
            stats: Some(CaseStats {
                metric,
                basis: Basis::Runs,
                n_baseline: 3,
                n_candidate: 3,
                change: MedianChange {
                    median_a: 1.0,
                    median_b: 1.0 + change,
                    change,
                    ci_low: change,
                    ci_high: change,
                    se_log: 0.0,
                    df: 1.0,
                },
                p_value: 0.5,
                p_exact: false,
                p_adjusted: 0.5,
                p_band: 0.5,
                p_band_adjusted: 0.5,
                mde: 0.1,
                units_needed: None,
                sd_unit: 0.0,
                floored: false,
                headline_baseline: None,
                headline_candidate: None,
                frac_peak_baseline: None,
                frac_peak_candidate: None,
            }),
            note: None,
        }
    }

    #[test]
    fn a_transport_change_is_named_on_its_set_up_and_one_rank_is_told_apart() {
        let cases = vec![
            // busbw fell to a tenth on the 2-rank set-up: 10× slower
            case("two", 2, Verdict::Regressed, Metric::Busbw, -0.9),
            case("two", 2, Verdict::Regressed, Metric::Busbw, -0.95),
            case("two", 2, Verdict::Inconclusive, Metric::Time, 4.0),
            // the one-rank set-up moved a little with the load
            case("one", 1, Verdict::WithinNoise, Metric::Time, 0.03),
            case("one", 1, Verdict::Improved, Metric::Gflops, 0.25),
        ];
        let c = Comparison {
            settings: Settings::default(),
            cases,
            tested: 5,
            runs_baseline: 3,
            runs_candidate: 3,
            paired: false,
            across_setups: false,
        };
        let t: BTreeMap<String, (String, String)> =
            [("two".to_string(), ("shm".to_string(), "tcp".to_string()))].into();
        let s = summarise(&c, &t, None);
        assert_eq!(s.len(), 2);
        let (one, two) = (&s[0], &s[1]);
        assert_eq!((two.cases, two.regressed, two.inconclusive), (3, 2, 1));
        assert!((two.median_time_ratio.unwrap_or(0.0) - 10.0).abs() < 1e-9);
        let [lo, hi] = two.time_ratio_range.unwrap_or_default();
        assert!(
            (lo - 5.0).abs() < 1e-9 && (hi - 20.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(
            two.explained_by.as_deref(),
            Some("MPI transport: shm → tcp")
        );
        assert_eq!((one.cases, one.unchanged, one.improved), (2, 1, 1));
        // 1.03 slower and 1/1.25 = 0.8: the median of two is their mean
        assert!((one.median_time_ratio.unwrap_or(0.0) - 0.915).abs() < 1e-9);
        assert!(one
            .explained_by
            .as_deref()
            .is_some_and(|e| e.starts_with("one rank: sends no MPI messages")));
        // with nothing recorded that differs, nothing is explained
        let s = summarise(&c, &BTreeMap::new(), None);
        assert!(s.iter().all(|x| x.explained_by.is_none()));
        assert_eq!(ratio_text(10.0), "10.0× slower");
        assert_eq!(ratio_text(0.8), "1.25× faster");
        assert_eq!(ratio_text(1.001), "no change");
    }
}
