//! The trend section (`report --history-db PATH`): where the report's cases stand in their
//! history. The index is derived from results files (`scalebench history ingest`), so the
//! report still reads nothing else. Opt-in, not detected: the index changes as runs are
//! ingested, and a report must follow from what its command line names.
//!
//! For every case of the report (on its input's cluster) the index holds 2 or more runs of:
//! the number of runs, the latest median against the median of the (up to 10) runs of the
//! same set-up before it, and the last change point `history changes` finds; a table of the
//! cases that moved most, and charts of the series (those with a change point first).

use super::TOP;
use crate::history::changes::Settings;
use crate::history::query::{Series, Step};
use crate::params::Workload;
use crate::present::doc::{prose, text, Doc, Span};
use crate::present::table::{signed_percent, Cell, NumFmt, Table};
use crate::report::analyze::Analysis;
use crate::report::plot::{self, Figure};
use crate::report::ReportError as Error;
use crate::results::schema::CaseStatus;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Runs before the latest that its median is compared with.
const BEFORE: usize = 10;
/// Most trend charts in a report.
const CHARTS: usize = 6;

/// The history of the report's cases, read before the document is built.
pub(crate) struct Trend {
    db: PathBuf,
    /// Distinct (case, cluster) pairs looked up.
    looked_up: usize,
    /// Series of 2 or more runs, the most moved first.
    series: Vec<Series>,
    /// Indices into the report's figures of the trend charts.
    charts: Vec<usize>,
}

/// The latest median against the median of the up to [`BEFORE`] runs of its level before it
/// (relative; `None` with no such run). Its level: the runs of its set-up since the last change
/// point, or, where the latest run itself starts a new level, the level before it. A window
/// that straddled a change would compare against a blend of two levels.
fn moved(s: &Series) -> Option<f64> {
    let last_i = s.points.len().checked_sub(1)?;
    let last = &s.points[last_i];
    let mut changes = s
        .steps
        .iter()
        .rev()
        .filter(|st| st.kind == "change")
        .map(|st| st.index);
    let from = match changes.next() {
        Some(i) if i == last_i => changes.next().unwrap_or(0),
        Some(i) => i,
        None => 0,
    };
    let mut before: Vec<f64> = s.points[from..last_i]
        .iter()
        .rev()
        .filter(|p| p.setup == last.setup)
        .take(BEFORE)
        .map(|p| p.median)
        .collect();
    if before.is_empty() {
        return None;
    }
    before.sort_by(f64::total_cmp);
    let m = crate::stats::quantile_sorted(&before, 0.5);
    Some(last.median / m - 1.0)
}

fn last_change(s: &Series) -> Option<&Step> {
    s.steps.iter().rev().find(|st| st.kind == "change")
}

impl Trend {
    /// Looks every case of the report up in the index at `db` and lays out the charts (added
    /// to `figs`).
    pub(crate) fn read(
        a: &Analysis<'_>,
        db: &Path,
        figs: &mut Vec<Figure>,
    ) -> Result<Trend, Error> {
        let mut workload: BTreeMap<(String, String), Workload> = BTreeMap::new();
        for e in a.entries.iter().filter(|e| e.case.status == CaseStatus::Ok) {
            let cluster = crate::history::cluster_of(&a.sources[e.source].file);
            workload.insert((e.case.id.clone(), cluster), e.params().workload);
        }
        let wanted: Vec<(String, String)> = workload.keys().cloned().collect();
        let mut series = crate::history::query::trends(db, &wanted, &Settings::default())?;
        series.retain(|s| s.points.len() >= 2);
        series.sort_by(|x, y| {
            let m = |s: &Series| moved(s).map_or(-1.0, f64::abs);
            m(y).total_cmp(&m(x)).then_with(|| x.label.cmp(&y.label))
        });
        // Charts: series with a change point first, then the most moved.
        let mut order: Vec<usize> = (0..series.len()).collect();
        order.sort_by_key(|&i| last_change(&series[i]).is_none());
        let mut charts = Vec::new();
        for (n, i) in order.into_iter().take(CHARTS).enumerate() {
            let s = &series[i];
            let w = workload
                .get(&(s.case_id.clone(), s.cluster.clone()))
                .copied()
                .unwrap_or(Workload::Allreduce);
            figs.push(plot::trend::figure(s, n + 1, w));
            charts.push(figs.len() - 1);
        }
        Ok(Trend {
            db: db.to_path_buf(),
            looked_up: wanted.len(),
            series,
            charts,
        })
    }

    /// The section: what was found, the table, the charts.
    pub(crate) fn section(&self, doc: &mut Doc, figs: &[Figure]) {
        doc.heading(2, "Trend in the history");
        let db = self.db.display().to_string();
        if self.series.is_empty() {
            let mut spans = prose(&format!(
                "None of the report's {} has 2 or more runs on its cluster in the history index ",
                crate::present::count(self.looked_up, "case", "cases")
            ));
            spans.push(text(db.clone()));
            spans.push(text(": index the runs with "));
            spans.push(Span::Code(format!(
                "scalebench history ingest DIR… --db {db}"
            )));
            spans.push(text("."));
            doc.para(spans);
            return;
        }
        // The path is the user's: plain text. The rest is the report's own prose, whose
        // backticks mark code (text() would print them escaped).
        let mut spans = prose(&format!(
            "{} of the report's {} have 2 or more runs on their cluster in the history index ",
            self.series.len(),
            crate::present::count(self.looked_up, "case", "cases"),
        ));
        spans.push(text(db.clone()));
        spans.extend(prose(&format!(
            ". The {} that moved most: each latest run's median against the median of the (up to {BEFORE}) runs of its level before it (its set-up's runs since the last change point; where the latest run starts a new level, the level before it), and the last change point `scalebench history changes` finds (binary segmentation with a permutation test, p ≤ {}; a set-up change breaks a series instead).",
            self.series.len().min(TOP),
            Settings::default().alpha
        )));
        doc.para(spans);
        let mut t = Table::new(&[
            "case",
            "cluster",
            "runs",
            "metric",
            "latest",
            "before",
            "moved",
            "last change",
        ]);
        for s in self.series.iter().take(TOP) {
            let fmt = if s.unit == "s" {
                NumFmt::Seconds
            } else {
                NumFmt::Rate
            };
            let last = s.points.last().map(|p| p.median);
            let before = moved(s).zip(last).map(|(m, l)| l / (1.0 + m));
            let change = last_change(s).map_or_else(
                || "none".to_string(),
                |st| {
                    format!(
                        "run {} ({}, {}): {} {}",
                        st.index + 1,
                        st.run_id,
                        st.git_sha.as_deref().map_or("commit unknown".into(), |g| g
                            .chars()
                            .take(12)
                            .collect::<String>()),
                        st.direction,
                        signed_percent(st.relative.unwrap_or(0.0))
                    )
                },
            );
            t.push(vec![
                Cell::text(&s.label),
                Cell::text(&s.cluster),
                Cell::UInt(s.points.len() as u64),
                Cell::text(format!("{} ({})", s.metric, s.unit)),
                Cell::opt(last, fmt),
                Cell::opt(before, fmt),
                Cell::opt(moved(s), NumFmt::Percent),
                Cell::text(change),
            ]);
        }
        doc.table(t, "trend", None);
        for &f in &self.charts {
            let fig = &figs[f];
            super::push_figure(doc, f, fig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::query::Point;

    fn series(medians: &[f64], setups: &[usize], changes: &[usize]) -> Series {
        let points = medians
            .iter()
            .zip(setups)
            .enumerate()
            .map(|(i, (&median, &setup))| Point {
                run_id: format!("r{i}"),
                started_utc: String::new(),
                git_sha: None,
                version: String::new(),
                setup,
                n: 10,
                median,
                lo: median,
                hi: median,
                unrepresentative: String::new(),
            })
            .collect();
        let steps = changes
            .iter()
            .map(|&index| Step {
                kind: "change",
                index,
                run_id: format!("r{index}"),
                started_utc: String::new(),
                git_sha: None,
                direction: "worse",
                relative: None,
                confidence: None,
            })
            .collect();
        Series {
            case_id: "c".into(),
            label: "c".into(),
            cluster: "k".into(),
            metric: "busbw",
            unit: "GB/s",
            higher_is_better: true,
            setups: vec!["a".into(), "b".into()],
            points,
            steps,
        }
    }

    fn close(x: Option<f64>, want: f64) -> bool {
        x.is_some_and(|x| (x - want).abs() < 1e-12)
    }

    /// Without a change point the window is the set-up's runs before the latest (up to 10).
    #[test]
    fn no_change_compares_with_the_runs_before() {
        let s = series(&[10.0, 10.0, 10.0, 11.0], &[0; 4], &[]);
        assert!(close(moved(&s), 0.1));
        // Other set-ups' runs are not compared with.
        let s = series(&[20.0, 10.0, 10.0, 11.0], &[1, 0, 0, 0], &[]);
        assert!(close(moved(&s), 0.1));
        assert_eq!(moved(&series(&[5.0], &[0], &[])), None);
    }

    /// A change point before the latest run: the window starts at it, so the old level (20)
    /// does not blend in; the latest stands 10 % above its new level.
    #[test]
    fn the_window_starts_at_the_last_change() {
        let s = series(&[20.0, 20.0, 20.0, 10.0, 10.0, 11.0], &[0; 6], &[3]);
        assert!(close(moved(&s), 0.1), "{:?}", moved(&s));
    }

    /// The latest run starts a new level: it is compared with the whole level before it
    /// (back to the change before that), not a blend of older levels.
    #[test]
    fn a_latest_run_that_starts_a_level_is_compared_with_the_level_before() {
        let s = series(&[40.0, 40.0, 20.0, 20.0, 20.0, 10.0], &[0; 6], &[2, 5]);
        assert!(close(moved(&s), -0.5), "{:?}", moved(&s));
        let s = series(&[20.0, 20.0, 10.0], &[0; 3], &[2]);
        assert!(close(moved(&s), -0.5));
    }
}
