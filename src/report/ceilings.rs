//! Ceilings in the report (issue 28): each figure's fraction of the ceiling that bounds it as a
//! table cell, the hardware warnings of the launches grouped for the findings, and the ceiling
//! lines of the bandwidth and GEMM charts. The fractions themselves are the results file's
//! (`CaseResult::peak`); nothing here measures or assumes a ceiling.

use super::analyze::{Analysis, Entry};
use crate::present::table::{Cell, NumFmt};
use crate::results::ceilings::{
    bounds, split_measured_fix, Ceiling, CeilingWarningKind, PeakFraction,
};
use std::collections::{BTreeMap, BTreeSet};

/// The figure a fraction applies to, as `PeakFraction::figure` names it.
pub(crate) const BUSBW: &str = "busbw_gbps";
pub(crate) const GFLOPS: &str = "gflops";

/// Below this fraction of its ceiling at the largest size, a figure is a finding (issue 28:
/// "below a band of its ceiling, e.g. < 50 %").
pub(crate) const FAR_BELOW: f64 = 0.5;

/// The case's fraction of peak for `figure`; none where the figure means no rate: busbw of a
/// case whose data moves between no devices (one device: busbw factor 0) is no bandwidth.
pub(crate) fn peak<'a>(e: &Entry<'a>, figure: &str) -> Option<&'a PeakFraction> {
    if figure == BUSBW && e.case.busbw_factor.is_some_and(|f| f <= 0.0) {
        return None;
    }
    e.case.peak.iter().find(|f| f.figure == figure)
}

/// The ceiling a fraction names, from the case's launch (rank 0's host first, where the
/// fraction was taken).
pub(crate) fn ceiling_of<'a>(e: &Entry<'a>, f: &PeakFraction) -> Option<&'a Ceiling> {
    let p = e.launch?.provenance.as_ref()?;
    let rank0 = p.ranks.first().map(|r| r.host.as_str());
    let mut hosts: Vec<_> = p.ceilings.iter().collect();
    hosts.sort_by_key(|h| Some(h.host.as_str()) != rank0);
    hosts
        .into_iter()
        .flat_map(|h| &h.ceilings)
        .find(|c| c.id == f.ceiling_id)
}

/// The fraction-of-peak cell of a figure: the fraction (CSV keeps fractions, as every
/// percentage of the report) with the digits the case's spread supports, `-` where the
/// ceiling is unknown (its reason goes once under the table), empty where the file has none.
pub(crate) fn frac_cell(e: &Entry<'_>, figure: &str) -> Cell {
    match peak(e, figure) {
        Some(f) => match bounds::readable_frac(f) {
            Some(x) => Cell::num(x, NumFmt::Measured(e.digits())),
            None => Cell::text("-"),
        },
        None => Cell::Empty,
    }
}

/// Why the dashes of a fraction column are dashes: each distinct unknown ceiling and reason of
/// the entries, said once (`None` when every ceiling is known).
pub(crate) fn unknown_note<'a, 'e: 'a>(
    entries: impl IntoIterator<Item = &'a Entry<'e>>,
    figure: &str,
) -> Option<String> {
    let mut why: BTreeSet<(String, String)> = BTreeSet::new();
    // under-measured ceilings: said once per ceiling, with the largest figure / bound
    let mut over: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for e in entries {
        let Some(f) = peak(e, figure) else { continue };
        let x = f.frac_peak.or_else(|| {
            let v = if figure == BUSBW {
                e.case.busbw_gbps
            } else {
                e.case.gflops
            };
            Some(v? / f.bound.filter(|b| *b > 0.0)?)
        });
        if f.under_measured || (f.frac_peak.is_some() && bounds::readable_frac(f).is_none()) {
            let slot = over.entry(f.ceiling_id.clone()).or_insert((0, 0.0));
            slot.0 += 1;
            slot.1 = slot.1.max(x.unwrap_or(0.0));
            continue;
        }
        if f.frac_peak.is_none() {
            why.insert((
                f.ceiling_id.clone(),
                f.unknown
                    .clone()
                    .unwrap_or_else(|| "no reason recorded".into()),
            ));
        }
    }
    if why.is_empty() && over.is_empty() {
        return None;
    }
    let what = if figure == BUSBW { "busbw" } else { "GFLOP/s" };
    let mut parts = Vec::new();
    if !why.is_empty() {
        parts.push(format!(
            "{what} / ceiling `-`: the ceiling is unknown — {}.",
            why.iter()
                .map(|(id, r)| format!("`{id}`: {r}"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    for (id, (n, x)) in &over {
        parts.push(format!(
            "{what} / ceiling `-`: {} above the measured ceiling `{id}` (up to {}× its bound): the ceiling was under-measured{}, so these are not fractions of peak.",
            crate::units::count(*n, "figure is", "figures are"),
            crate::present::table::rounded(*x, 3),
            if figure == BUSBW { " or caches served the data" } else { "" }
        ));
    }
    Some(parts.join(" "))
}

/// A figure's fraction when it is far below its bound: below [`FAR_BELOW`] of the bound less
/// the bound's own uncertainty (`results::ceilings::bounds::far_below`); `None` otherwise.
pub(crate) fn far_below_frac(f: &PeakFraction) -> Option<f64> {
    let x = bounds::readable_frac(f)?;
    let u = bounds::uncertainty_of(f.uncertainty_rel, &f.ceiling_id);
    bounds::far_below(x, u, FAR_BELOW).then_some(x)
}

/// A ceiling as a reader names it: what, value and unit, source (`memory bandwidth, STREAM
/// Copy, 2 CPUs (0-1): 28.5 GB/s, measured`); `times` CPUs where the bound is per CPU.
pub(crate) fn ceiling_text(c: &Ceiling, f: &PeakFraction) -> String {
    let num = |v: f64| {
        format!(
            "{} {}",
            crate::present::table::rounded(v, 3),
            c.unit.symbol()
        )
    };
    let value = match (f.traffic_bytes_per_busbw_byte, c.value, f.bound) {
        // busbw on one host: the Copy rate over the collective's memory traffic per busbw byte
        (Some(t), Some(v), Some(b)) => format!(
            "{} over {} B of memory traffic per busbw byte = {}",
            num(v),
            crate::units::echo_f64(t),
            num(b)
        ),
        _ => f.bound.or(c.value).map_or("unknown".to_string(), num),
    };
    let times = f
        .cpus
        .filter(|n| *n > 1)
        .map_or(String::new(), |n| format!(" × {n} CPUs"));
    format!("{}{times}: {value}, {}", c.what, c.source.name())
}

/// A hardware problem the launches recorded, with every launch and host that recorded it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HardwareWarning {
    pub kind: WarningKind,
    pub subject: String,
    pub message: String,
    pub hosts: BTreeSet<String>,
    pub launches: usize,
}

/// What a [`HardwareWarning`] is, most severe first (the findings' order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum WarningKind {
    /// A port or link is not up: whatever crosses it fails or takes another path.
    LinkDown,
    /// A link runs below its maximum: every figure across it is capped lower.
    NegotiatedDown,
    /// A GEMM kernel older than the CPU: every GFLOP/s figure is a fraction of the machine.
    ForcedKernel,
    /// Error counters grew: retransmissions slow what crossed the link.
    CountersGrew,
    Other,
}

impl WarningKind {
    pub(crate) fn of(k: CeilingWarningKind) -> WarningKind {
        match k {
            CeilingWarningKind::LinkDown => WarningKind::LinkDown,
            CeilingWarningKind::NegotiatedDown => WarningKind::NegotiatedDown,
            CeilingWarningKind::CountersGrew => WarningKind::CountersGrew,
            CeilingWarningKind::Other => WarningKind::Other,
        }
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            WarningKind::LinkDown => "link down",
            WarningKind::NegotiatedDown => "negotiated down",
            WarningKind::ForcedKernel => "older GEMM kernel",
            WarningKind::CountersGrew => "error counters grew",
            WarningKind::Other => "hardware warning",
        }
    }
}

/// Whether a provenance warning is the GEMM kernel check's (`GEMM runs OpenBLAS's Haswell
/// kernels, which use AVX2; this CPU runs AVX-512: forced by ...`): the only one of the
/// launch's free-text warnings that says the kernel is older than the CPU.
pub(crate) fn is_kernel_warning(w: &str) -> bool {
    w.starts_with("GEMM runs ") && w.contains("; this CPU runs ")
}

/// The hardware warnings of every launch a report case ran in, grouped: one per kind, subject
/// and message, with the hosts and the number of launches that recorded it; most severe first.
pub(crate) fn hardware_warnings(a: &Analysis<'_>) -> Vec<HardwareWarning> {
    let mut launches: BTreeSet<(usize, &str)> = BTreeSet::new();
    // (kind, subject, message) → (hosts, launches)
    type Seen = (BTreeSet<String>, BTreeSet<usize>);
    let mut groups: BTreeMap<(WarningKind, String, String), Seen> = BTreeMap::new();
    let mut speedups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut k = 0usize;
    for e in &a.entries {
        let Some(l) = e.launch else { continue };
        if !launches.insert((e.source, l.launch_id.as_str())) {
            continue;
        }
        k += 1;
        let Some(p) = &l.provenance else { continue };
        for h in &p.ceilings {
            for w in &h.warnings {
                let g = groups
                    .entry((
                        WarningKind::of(w.kind),
                        w.subject.clone(),
                        w.message.clone(),
                    ))
                    .or_default();
                g.0.insert(h.host.clone());
                g.1.insert(k);
            }
        }
        let rank0 = p.ranks.first().map_or("", |r| r.host.as_str());
        for w in p.warnings.iter().filter(|w| is_kernel_warning(w)) {
            let (finding, measured) = split_measured_fix(w);
            let g = groups
                .entry((
                    WarningKind::ForcedKernel,
                    "GEMM library".into(),
                    finding.to_string(),
                ))
                .or_default();
            g.0.insert(rank0.to_string());
            g.1.insert(k);
            if let Some(m) = measured {
                speedups.entry(finding.to_string()).or_default().push(m);
            }
        }
    }
    groups
        .into_iter()
        .map(|((kind, subject, message), (hosts, ls))| {
            // Launches measure the fix's speed-up each: one finding, the first measurement
            // quoted and how many launches measured it.
            let message = match speedups.get(&message).map(Vec::as_slice) {
                Some([one]) => format!("{message}; {one}"),
                Some([first, rest @ ..]) => format!(
                    "{message}; {first} (the first of {} launches that measured it)",
                    rest.len() + 1
                ),
                _ => message,
            };
            HardwareWarning {
                kind,
                subject,
                message,
                hosts,
                launches: ls.len(),
            }
        })
        .collect()
}

/// A ceiling one chart series is bounded by: its value in the chart's unit and its label.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SeriesBound {
    pub bound: f64,
    pub label: String,
}

/// What ceiling lines a chart draws.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BoundLines {
    /// Every series shares one bound: one grey line.
    Shared(SeriesBound),
    /// Series have different bounds: one line per distinct bound, with the series (indices)
    /// it bounds, drawn in the first one's colour.
    PerSeries(Vec<(SeriesBound, Vec<usize>)>),
    /// No line; the caption says why.
    None(String),
}

/// The bound of a chart series drawn from `entries` (its points): the ceiling of its largest
/// point's `figure` (`Err`: why it is unknown); `None` where the file records no fraction
/// (an older file: the chart says nothing of ceilings).
pub(crate) fn series_bound<'a, 'e: 'a>(
    entries: impl IntoIterator<Item = &'a Entry<'e>>,
    figure: &str,
) -> Option<Result<SeriesBound, String>> {
    let e = entries
        .into_iter()
        .filter(|e| peak(e, figure).is_some())
        .max_by_key(|e| e.bytes().unwrap_or(0))?;
    let f = peak(e, figure)?;
    // an under-measured bound is still drawn: the curve above it shows it for what it is
    let Some(bound) = f
        .bound
        .filter(|b| *b > 0.0 && (f.frac_peak.is_some() || f.under_measured))
    else {
        return Some(Err(format!(
            "{} is unknown ({})",
            f.ceiling_id,
            f.unknown.as_deref().unwrap_or("no reason recorded")
        )));
    };
    let label = match ceiling_of(e, f) {
        Some(c) => format!("ceiling: {}", ceiling_text(c, f)),
        None => format!(
            "ceiling `{}`: {}",
            f.ceiling_id,
            crate::present::table::rounded(bound, 3)
        ),
    };
    Some(Ok(SeriesBound { bound, label }))
}

/// Most distinct ceiling lines one chart draws; more could not be told from the curves.
pub(crate) const MAX_BOUND_LINES: usize = 3;

/// The ceiling lines of a chart from each series' bound (`Err`: why it has none). Equal
/// bounds (same label, values within 0.1 %) share a line.
pub(crate) fn bound_lines(per_series: &[Result<SeriesBound, String>]) -> BoundLines {
    if per_series.is_empty() {
        return BoundLines::None("no series".into());
    }
    let mut distinct: Vec<(SeriesBound, Vec<usize>)> = Vec::new();
    let mut unknown: BTreeSet<String> = BTreeSet::new();
    for (i, b) in per_series.iter().enumerate() {
        match b {
            Ok(b) => match distinct.iter_mut().find(|(d, _)| {
                d.label == b.label && (d.bound - b.bound).abs() <= 1e-3 * d.bound.abs()
            }) {
                Some((_, ix)) => ix.push(i),
                None => distinct.push((b.clone(), vec![i])),
            },
            Err(why) => {
                unknown.insert(why.clone());
            }
        }
    }
    let why_unknown = || unknown.iter().cloned().collect::<Vec<_>>().join("; ");
    match distinct.len() {
        0 => BoundLines::None(format!("its ceiling is unknown: {}", why_unknown())),
        1 if unknown.is_empty() => BoundLines::Shared(distinct.remove(0).0),
        n if n > MAX_BOUND_LINES => BoundLines::None(format!(
            "the series have {n} different ceilings, more lines than the curves could be told from (each set-up's fraction of peak is in the tables)"
        )),
        _ => BoundLines::PerSeries(distinct),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(bound: f64, label: &str) -> Result<SeriesBound, String> {
        Ok(SeriesBound {
            bound,
            label: label.into(),
        })
    }

    #[test]
    fn series_sharing_a_bound_get_one_line_and_different_bounds_one_each() {
        let one = bound_lines(&[b(40.0, "copy"), b(40.00001, "copy")]);
        assert_eq!(
            one,
            BoundLines::Shared(SeriesBound {
                bound: 40.0,
                label: "copy".into()
            })
        );
        match bound_lines(&[b(10.0, "one CPU"), b(40.0, "all CPUs"), b(10.0, "one CPU")]) {
            BoundLines::PerSeries(v) => {
                assert_eq!(v.len(), 2);
                assert_eq!((v[0].0.bound, v[0].1.clone()), (10.0, vec![0, 2]));
                assert_eq!((v[1].0.bound, v[1].1.clone()), (40.0, vec![1]));
            }
            other => panic!("{other:?}"),
        }
        // a series with an unknown bound beside a known one: the known one keeps its own
        // line (in its colour), not a line that claims to bound every series
        assert!(matches!(
            bound_lines(&[b(10.0, "x"), Err("skipped".into())]),
            BoundLines::PerSeries(v) if v.len() == 1 && v[0].1 == vec![0]
        ));
    }

    #[test]
    fn no_line_says_why() {
        match bound_lines(&[Err("network link not recorded".into())]) {
            BoundLines::None(why) => assert!(why.contains("network link not recorded"), "{why}"),
            other => panic!("{other:?}"),
        }
        let many: Vec<_> = (0..=MAX_BOUND_LINES)
            .map(|k| b(10.0 * (k + 1) as f64, "c"))
            .collect();
        match bound_lines(&many) {
            BoundLines::None(why) => assert!(why.contains("4 different ceilings"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(bound_lines(&[]), BoundLines::None(_)));
    }

    #[test]
    fn the_kernel_checks_warning_is_recognised_and_others_are_not() {
        use crate::topology::ceilings::kernel::{check, BlasKernel, HostCpu, Tier};
        let cpu = HostCpu {
            tier: Tier::Avx512,
            vendor: "GenuineIntel".into(),
            flags: Default::default(),
        };
        let w = check(
            &cpu,
            &BlasKernel {
                library: "OpenBLAS 0.3.21 DYNAMIC_ARCH Haswell".into(),
                kernel: Some("Haswell".into()),
            },
            |k| (k == "OPENBLAS_CORETYPE").then(|| "Haswell".to_string()),
        )
        .expect("Haswell is older than AVX-512");
        assert!(is_kernel_warning(&w), "{w}");
        assert!(!is_kernel_warning(
            "libopenblas.so has no thread-count call scalebench knows (x): its GEMM runs with the library's own thread count"
        ));
    }

    #[test]
    fn the_measured_speed_up_is_split_from_the_finding() {
        let f = "GEMM runs OpenBLAS's Prescott kernels, which use SSE; this CPU runs AVX2: forced by OPENBLAS_CORETYPE=Prescott; fix: set OPENBLAS_CORETYPE=Zen";
        let m = "measured here: --gemm gemm-crate ran a 384×384×384 f32 GEMM at 90.0 GFLOP/s against the library's 30.0, 3.0× as fast";
        assert_eq!(split_measured_fix(&format!("{f}; {m}")), (f, Some(m)));
        let skipped = "--gemm gemm-crate's speed-up not measured: x";
        assert_eq!(
            split_measured_fix(&format!("{f}; {skipped}")),
            (f, Some(skipped))
        );
        assert_eq!(split_measured_fix(f), (f, None));
    }

    #[test]
    fn warning_kinds_order_by_severity() {
        let mut v = vec![
            WarningKind::Other,
            WarningKind::CountersGrew,
            WarningKind::ForcedKernel,
            WarningKind::LinkDown,
            WarningKind::NegotiatedDown,
        ];
        v.sort();
        assert_eq!(
            v,
            [
                WarningKind::LinkDown,
                WarningKind::NegotiatedDown,
                WarningKind::ForcedKernel,
                WarningKind::CountersGrew,
                WarningKind::Other
            ]
        );
    }
}
