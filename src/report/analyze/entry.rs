//! One case with what the report derives from it alone: spread, noise, imbalance, the slowest
//! rank's whereabouts, and whether it represents its set-up.

use super::palette::Layout;
use super::Options;
use crate::params::{CaseParams, LaunchShape};
use crate::report::derive::{self, Imbalance, Spread};
use crate::report::load::{Pick, Source};
use crate::results::representative;
use crate::results::schema::{CaseResult, CaseStatus, LaunchRecord, RankInfo, Unrepresentative};
use std::collections::BTreeSet;

/// One case with what the report derives from it alone.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub case: &'a CaseResult,
    pub launch: Option<&'a LaunchRecord>,
    /// Index of the input it came from.
    pub source: usize,
    pub spread: Option<Spread>,
    pub noisy: bool,
    pub imbalance: Option<Imbalance>,
    /// Provenance of the slowest rank, when the launch recorded it.
    pub slowest: Option<&'a RankInfo>,
    /// Why the measurement may not represent its set-up ([`representative::assess`]); empty
    /// when nothing is known against it.
    pub concerns: Vec<Unrepresentative>,
}

impl<'a> Entry<'a> {
    pub fn params(&self) -> &'a CaseParams {
        &self.case.params
    }
    /// The headline time of a validated measurement (status ok, positive time).
    pub fn time_s(&self) -> Option<f64> {
        let t = self.case.timing.as_ref()?.time_s;
        (self.case.status == CaseStatus::Ok && t > 0.0 && t.is_finite()).then_some(t)
    }
    /// The time the cost models fit: the median of the samples (one preempted sample cannot
    /// move it, as it moves a mean), or the headline time when there are no samples.
    pub fn fit_time_s(&self) -> Option<f64> {
        let t = self.time_s()?;
        let m = self.spread.map_or(t, |s| s.median_s);
        (m > 0.0 && m.is_finite()).then_some(m)
    }
    pub fn layout(&self) -> Layout {
        Layout {
            nodes: self.case.params.nodes,
            devices_per_node: self.case.params.devices_per_node,
        }
    }
    pub fn shape(&self) -> LaunchShape {
        self.case.params.launch_shape()
    }
    /// S in bytes (after rounding), falling back to the requested size.
    pub fn bytes(&self) -> Option<u64> {
        self.case.bytes.or(self.case.params.requested_bytes)
    }
    pub fn representative(&self) -> bool {
        self.concerns.is_empty()
    }
    /// Significant digits its figures support: from the relative spread (cv) of its samples
    /// (3 without samples to show one).
    pub fn digits(&self) -> u8 {
        let (n, cv) = self.spread.map_or((0, f64::NAN), |s| (s.n, s.cv));
        crate::present::table::digits_for_spread(n, cv)
    }
    /// The kinds of its concerns.
    pub fn concern_kinds(&self) -> BTreeSet<String> {
        self.concerns.iter().map(|c| c.kind.clone()).collect()
    }
}

pub(super) fn entry<'a>(sources: &'a [Source], pick: Pick, options: &Options) -> Entry<'a> {
    let source = &sources[pick.source];
    let case = &source.file.cases[pick.case];
    let launch = source.launch(case);
    let timing = case.timing.as_ref();
    let spread = timing.and_then(|t| derive::spread(&t.samples_s));
    let imbalance = timing.and_then(|t| derive::imbalance(&t.per_rank_mean_s));
    let slowest = imbalance.and_then(|im| {
        launch
            .and_then(|l| l.provenance.as_ref())
            .and_then(|p| p.ranks.iter().find(|r| r.rank as usize == im.slowest_rank))
    });
    Entry {
        concerns: representative::assess(case, launch),
        case,
        launch,
        source: pick.source,
        noisy: spread.is_some_and(|s| derive::is_noisy(s.cv, options.noisy_cv)),
        spread,
        imbalance,
        slowest,
    }
}
