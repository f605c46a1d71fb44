//! Which number a case is compared by, and its per-sample values.
//!
//! Every case records `timing.samples_s` (seconds per operation). The other metrics are derived
//! per sample from the case's own fields, so each has as many samples as the time does:
//! busbw = bytes × busbw_factor / t / 1e9, algbw = bytes / t / 1e9 (GB/s = 1e9 bytes/s), and
//! GFLOP/s per device = (gflops × time_s) / t, where gflops × time_s is one device's GFLOP per
//! operation.
//!
//! `auto` picks what people read for each workload: bus bandwidth for collectives
//! (nccl-tests' headline number), GFLOP/s per device for matmul and batch_matmul, and time
//! where neither exists (e.g. a one-device all-reduce, whose busbw factor is 0). A rate is a
//! constant over the time, so the verdict is the same whichever is chosen (up to how the two
//! middle samples of an even-sized set are averaged); the choice sets the unit and the sign
//! people see, and matters when the two sides' constants differ.

use crate::present::table::NumFmt;
use crate::results::schema::CaseResult;

/// A number a case can be compared by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Seconds per operation (lower is better).
    Time,
    /// Bus bandwidth, GB/s (higher is better).
    Busbw,
    /// Algorithm bandwidth, GB/s (higher is better).
    Algbw,
    /// GFLOP/s per device (higher is better).
    Gflops,
}

impl Metric {
    /// How values of this metric are shown to people: seconds with a unit that keeps 3–4
    /// significant digits, rates with 3–4 significant digits.
    pub fn value_fmt(self) -> NumFmt {
        match self {
            Metric::Time => NumFmt::Seconds,
            _ => NumFmt::Rate,
        }
    }
    /// The name in the output and in `--metric`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Time => "time",
            Metric::Busbw => "busbw",
            Metric::Algbw => "algbw",
            Metric::Gflops => "gflops",
        }
    }

    /// Unit of the values.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Time => "s",
            Metric::Busbw | Metric::Algbw => "GB/s",
            Metric::Gflops => "GFLOP/s",
        }
    }

    /// Whether a larger value is an improvement.
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Metric::Time)
    }

    /// The constant c with value = c / time for a rate, from the case's own fields; `None`
    /// for time or when the case lacks what the rate needs (or it would be 0).
    fn rate_constant(self, case: &CaseResult) -> Option<f64> {
        let c = match self {
            Metric::Time => return None,
            Metric::Busbw => case.bytes? as f64 * case.busbw_factor? / 1e9,
            Metric::Algbw => case.bytes? as f64 / 1e9,
            Metric::Gflops => case.gflops? * case.timing.as_ref()?.time_s,
        };
        (c.is_finite() && c > 0.0).then_some(c)
    }

    /// Whether this case has the metric.
    pub fn available(self, case: &CaseResult) -> bool {
        self == Metric::Time || self.rate_constant(case).is_some()
    }

    /// The per-sample values of this metric for a case, in measurement order; `None` if the
    /// case has no timing samples or lacks the metric.
    pub fn samples(self, case: &CaseResult) -> Option<Vec<f64>> {
        let t = &case.timing.as_ref()?.samples_s;
        if t.is_empty() {
            return None;
        }
        match self.rate_constant(case) {
            None if self == Metric::Time => Some(t.clone()),
            None => None,
            Some(c) => Some(t.iter().map(|s| c / s).collect()),
        }
    }

    /// The headline value the case file records for this metric (for display only).
    pub fn headline(self, case: &CaseResult) -> Option<f64> {
        match self {
            Metric::Time => case.timing.as_ref().map(|t| t.time_s),
            Metric::Busbw => case.busbw_gbps,
            Metric::Algbw => case.algbw_gbps,
            Metric::Gflops => case.gflops,
        }
    }
}

/// What `--metric` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricChoice {
    /// busbw for collectives, gflops for GEMMs, time otherwise.
    Auto,
    /// This metric where both sides have it, time elsewhere.
    Fixed(Metric),
}

impl MetricChoice {
    pub fn name(self) -> &'static str {
        match self {
            MetricChoice::Auto => "auto",
            MetricChoice::Fixed(m) => m.name(),
        }
    }

    /// The metric one case is compared by: the one asked for (or `auto`'s pick) if both sides
    /// have it, otherwise time, which every measured case has.
    pub fn pick(self, baseline: &CaseResult, candidate: &CaseResult) -> Metric {
        let wanted = match self {
            MetricChoice::Fixed(m) => m,
            MetricChoice::Auto if baseline.params.workload.is_collective() => Metric::Busbw,
            MetricChoice::Auto => Metric::Gflops,
        };
        if wanted.available(baseline) && wanted.available(candidate) {
            wanted
        } else {
            Metric::Time
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::table::format_num;
    use crate::results::io::parse_results;
    use std::path::Path;

    fn golden() -> Vec<CaseResult> {
        let text = include_str!("../../tests/golden/results-v1.json");
        parse_results(Path::new("golden"), text).unwrap().cases
    }

    #[test]
    fn derived_samples_reproduce_the_recorded_rates() {
        for c in golden() {
            let t = c.timing.as_ref().unwrap();
            for m in [Metric::Busbw, Metric::Algbw, Metric::Gflops] {
                let Some(s) = m.samples(&c) else {
                    continue;
                };
                assert_eq!(s.len(), t.samples_s.len());
                // the rate at the headline time is the recorded headline rate
                let c0 = s[0] * t.samples_s[0];
                let at_headline = c0 / t.time_s;
                let rec = m.headline(&c).unwrap();
                assert!(
                    (at_headline / rec - 1.0).abs() < 1e-9,
                    "{} {m:?}",
                    c.params.label()
                );
            }
            assert_eq!(Metric::Time.samples(&c).unwrap(), t.samples_s);
        }
    }

    #[test]
    fn auto_picks_per_workload_and_falls_back_to_time() {
        let cases = golden();
        let coll = cases
            .iter()
            .find(|c| c.params.workload.is_collective())
            .unwrap();
        let gemm = cases
            .iter()
            .find(|c| !c.params.workload.is_collective())
            .unwrap();
        assert_eq!(MetricChoice::Auto.pick(coll, coll), Metric::Busbw);
        assert_eq!(MetricChoice::Auto.pick(gemm, gemm), Metric::Gflops);
        assert_eq!(
            MetricChoice::Fixed(Metric::Busbw).pick(gemm, gemm),
            Metric::Time
        );
        assert_eq!(
            MetricChoice::Fixed(Metric::Gflops).pick(coll, coll),
            Metric::Time
        );
        // a one-device all-reduce has busbw factor 0: no bandwidth to compare
        let mut one = coll.clone();
        one.busbw_factor = Some(0.0);
        assert_eq!(MetricChoice::Auto.pick(&one, coll), Metric::Time);
        assert!(Metric::Busbw.samples(&one).is_none());
        // no samples at all
        let mut none = coll.clone();
        none.timing = None;
        assert!(Metric::Time.samples(&none).is_none());
    }

    #[test]
    fn directions_and_formatting() {
        assert!(!Metric::Time.higher_is_better());
        assert!(Metric::Busbw.higher_is_better() && Metric::Gflops.higher_is_better());
        assert_eq!(format_num(12.345, Metric::Busbw.value_fmt()), "12.35");
        assert_eq!(format_num(123.45, Metric::Gflops.value_fmt()), "123.5");
        assert_eq!(format_num(0.05819, Metric::Busbw.value_fmt()), "0.0582");
        assert_eq!(format_num(1.5e-6, Metric::Time.value_fmt()), "1.50 µs");
    }
}
