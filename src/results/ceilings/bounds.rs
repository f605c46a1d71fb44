//! What a measured ceiling can and cannot say about a figure (pure functions, issue 48):
//! the memory traffic a collective makes per busbw byte on one host (its busbw bound is the
//! host's STREAM Copy rate over that traffic), the best of measurement rounds spread over time
//! with the rounds' own spread as the bound's uncertainty, a fraction above 1 of a measured
//! bound read as an under-measured ceiling rather than a fact, and "far below its ceiling"
//! judged only beyond that uncertainty.

use super::{Ceiling, CeilingSource};
use crate::params::Workload;

/// Counted bytes of memory traffic on one host per byte of one rank's busbw, for `ranks`
/// ranks on the host (STREAM's counting: a byte read and a byte written count one each,
/// write-allocate not counted). `None` for a workload that is not a collective, or one rank.
///
/// The model (docs/ceilings.md): a busbw byte is a byte one rank sends over its ring link
/// (nccl-tests' definition). On one host every such byte is at least one copy, read from the
/// sender's buffer and written to the receiver's (2 counted bytes, a single-copy transport
/// such as CMA; a shared-memory segment makes it two copies, 4), and where the collective
/// reduces, the received byte is combined with a local one (read, read, write: 3). Ring
/// collectives have all `ranks` ranks sending at once; rooted ones (broadcast, reduce) move
/// the root's data to or from the other `ranks − 1`. So the host's traffic is busbw × senders
/// × bytes per byte, and the bound busbw ≤ STREAM Copy / that product is an upper bound: real
/// transports move at least this much.
pub fn traffic_bytes_per_busbw_byte(w: Workload, ranks: u32) -> Option<f64> {
    if ranks < 2 {
        return None;
    }
    let n = f64::from(ranks);
    let (senders, per_byte) = match w {
        // half the link bytes are reduced (reduce-scatter phase), half copied (all-gather)
        Workload::Allreduce => (n, 2.5),
        Workload::ReduceScatter => (n, 3.0),
        Workload::Allgather | Workload::Alltoall => (n, 2.0),
        Workload::Broadcast => (n - 1.0, 2.0),
        Workload::Reduce => (n - 1.0, 3.0),
        Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay => {
            return None
        }
    };
    Some(senders * per_byte)
}

/// The uncertainty assumed for a measured CPU ceiling that recorded none (files written before
/// issue 48, each from one ~10 ms sample): the issue saw such samples spread 2× (FMA) to 10×
/// (STREAM) over launches, so half the value is the least that covers the FMA spread.
pub const UNRECORDED_MEASURED_UNCERTAINTY: f64 = 0.5;

/// The least uncertainty a measured CPU ceiling is taken to have, however tight its rounds:
/// rounds spread over a second or two can all fall in one phase of a VM, and a pinned
/// AVX-512 loop was seen to drift 138–171 GFLOP/s (about 20 %) within 3 s (issue 48).
pub const MEASURED_UNCERTAINTY_FLOOR: f64 = 0.2;

/// The relative uncertainty a fraction's bound carries: for a measured CPU ceiling (`cpu.*`)
/// the one recorded (else [`UNRECORDED_MEASURED_UNCERTAINTY`]), at least
/// [`MEASURED_UNCERTAINTY_FLOOR`]; else 0 (a sysfs rate, a driver value, a datasheet figure
/// do not move between launches).
pub fn uncertainty_of(recorded: Option<f64>, ceiling_id: &str) -> f64 {
    if ceiling_id.starts_with("cpu.") {
        recorded
            .unwrap_or(UNRECORDED_MEASURED_UNCERTAINTY)
            .max(MEASURED_UNCERTAINTY_FLOOR)
    } else {
        recorded.unwrap_or(0.0)
    }
}

/// A fraction that can be read as one: not one above 1 of a measured CPU ceiling (files
/// written before issue 48 recorded those as fractions; since, `fractions` flags them).
pub fn readable_frac(f: &super::PeakFraction) -> Option<f64> {
    f.frac_peak
        .filter(|x| !(f.under_measured || *x > 1.0 && f.ceiling_id.starts_with("cpu.")))
}

/// Whether a figure at `frac` of its bound is far below it: below `cut` of the bound's low
/// end, bound × (1 − `uncertainty_rel`). A figure between that and `cut` of the bound is not
/// judged (the bound's own noise could put it either side).
pub fn far_below(frac: f64, uncertainty_rel: f64, cut: f64) -> bool {
    frac < cut * (1.0 - uncertainty_rel.clamp(0.0, 1.0))
}

/// A bound a figure went above: the ceiling was under-measured (or, for bandwidth, caches
/// served the data); the sentence with both numbers that replaces a fraction above 1.
pub fn under_measured_reason(
    figure: f64,
    bound: f64,
    c: &Ceiling,
    traffic: Option<f64>,
    theory: Option<(&Ceiling, u32)>,
) -> String {
    let unit = c.unit.symbol();
    let r = sig3;
    let how = match traffic {
        Some(t) => format!(
            "{} {} {unit} over {} B of memory traffic per busbw byte",
            c.id,
            r(c.value.unwrap_or(0.0)),
            r(t)
        ),
        None => c.id.clone(),
    };
    let caches = if c.unit == super::CeilingUnit::Gbps {
        ", or caches served the data"
    } else {
        ""
    };
    // the theoretical one-CPU peak, times the CPUs the figure used
    let theory =
        theory
            .and_then(|(t, n)| t.value.map(|v| (t, v, n)))
            .map_or(String::new(), |(t, v, n)| {
                let times = if n > 1 {
                    format!(" × {n} CPUs")
                } else {
                    String::new()
                };
                format!(
                    "; the theoretical bound {}{times} is {} {unit}",
                    t.id,
                    r(v * f64::from(n))
                )
            });
    format!(
        "the figure {} {unit} is above its measured bound {} {unit} ({how}): the ceiling is under-measured{caches}, so no fraction of peak is given{theory}",
        r(figure),
        r(bound)
    )
}

/// The best of several rounds of the same ceilings measured at different moments (a peak is
/// an upper bound: its best reading is the closest to it), each measured ceiling carrying
/// the rounds' spread, (best − median) / best, as its uncertainty. Ceilings are matched by
/// id; one unknown in every round stays unknown; the order is the first round's.
pub fn best_of_rounds(rounds: &[Vec<Ceiling>]) -> (Vec<Ceiling>, Vec<(String, f64)>) {
    let Some(first) = rounds.first() else {
        return (Vec::new(), Vec::new());
    };
    best_of_rounds_like(first, rounds)
}

/// [`best_of_rounds`] over the ceilings of `first` (in its order): rounds may differ in what
/// they hold (STREAM runs in some rounds only).
pub fn best_of_rounds_like(
    first: &[Ceiling],
    rounds: &[Vec<Ceiling>],
) -> (Vec<Ceiling>, Vec<(String, f64)>) {
    let mut out = Vec::new();
    let mut spread = Vec::new();
    for c in first {
        let values: Vec<f64> = rounds
            .iter()
            .filter_map(|r| r.iter().find(|x| x.id == c.id))
            .filter_map(|x| x.value.filter(|v| v.is_finite() && *v > 0.0))
            .collect();
        if c.source != CeilingSource::Measured || values.is_empty() {
            out.push(c.clone());
            continue;
        }
        let best = values.iter().copied().fold(f64::MIN, f64::max);
        let median = crate::stats::median(&values).unwrap_or(best);
        let u = ((best - median) / best).max(0.0);
        let mut b = c.clone();
        b.value = Some(best);
        b.detail = format!(
            "{}; best of {} rounds spread over time (median {}, spread {:.0} %)",
            c.detail,
            values.len(),
            sig3(median),
            u * 100.0
        );
        spread.push((c.id.clone(), u));
        out.push(b);
    }
    (out, spread)
}

/// Three significant digits (`175`, `23.9`, `2.41`): a measured ceiling moves by more than that.
pub fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let p = 10f64.powi(digits as i32);
    format!("{:.*}", digits, (v * p).round() / p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ceilings::CeilingUnit;

    #[test]
    fn traffic_counts_senders_and_bytes_per_link_byte() {
        // 2 ranks: every rank sends; half reduced (3 B), half copied (2 B)
        assert_eq!(
            traffic_bytes_per_busbw_byte(Workload::Allreduce, 2),
            Some(5.0)
        );
        assert_eq!(
            traffic_bytes_per_busbw_byte(Workload::Allgather, 4),
            Some(8.0)
        );
        // rooted: the root's data reaches the other 3 ranks
        assert_eq!(
            traffic_bytes_per_busbw_byte(Workload::Broadcast, 4),
            Some(6.0)
        );
        assert_eq!(traffic_bytes_per_busbw_byte(Workload::Reduce, 4), Some(9.0));
        assert_eq!(traffic_bytes_per_busbw_byte(Workload::Allreduce, 1), None);
        assert_eq!(traffic_bytes_per_busbw_byte(Workload::Matmul, 4), None);
    }

    #[test]
    fn far_below_only_beyond_the_bounds_own_uncertainty() {
        assert!(far_below(0.3, 0.0, 0.5));
        // 20 % uncertainty: the cut falls to 0.4 of the bound
        assert!(!far_below(0.45, 0.2, 0.5));
        assert!(far_below(0.35, 0.2, 0.5));
        assert_eq!(uncertainty_of(None, "cpu.peak.f32.avx512f.one_cpu"), 0.5);
        assert_eq!(uncertainty_of(None, "net.link"), 0.0);
        // a tight measurement is still taken as uncertain by the floor
        assert_eq!(uncertainty_of(Some(0.1), "cpu.mem.copy.all_cpus"), 0.2);
        assert_eq!(uncertainty_of(Some(0.3), "cpu.mem.copy.all_cpus"), 0.3);
    }

    fn measured(id: &str, v: Option<f64>) -> Ceiling {
        Ceiling {
            id: id.into(),
            what: id.into(),
            unit: CeilingUnit::Gflops,
            value: v,
            source: if v.is_some() {
                CeilingSource::Measured
            } else {
                CeilingSource::Unknown
            },
            detail: "how".into(),
        }
    }

    #[test]
    fn the_best_round_is_kept_with_the_rounds_spread() {
        let rounds: Vec<Vec<Ceiling>> = [100.0, 80.0, 90.0]
            .iter()
            .map(|v| vec![measured("a", Some(*v)), measured("b", None)])
            .collect();
        let (best, spread) = best_of_rounds(&rounds);
        assert_eq!(best[0].value, Some(100.0));
        assert!(
            best[0].detail.contains("best of 3 rounds"),
            "{}",
            best[0].detail
        );
        assert_eq!(spread, vec![("a".to_string(), 0.1)]);
        assert_eq!(best[1].value, None);
        assert!(best_of_rounds(&[]).0.is_empty());
    }
}
