//! `report --nccl-tuner`: the configuration NCCL's example CSV tuner reads, written from the
//! same winners the report's crossover table prints ([`Sweep::crossovers`]), so that the file's
//! boundaries and the table's crossovers are one answer: a band changes pair exactly where the
//! table's fastest changes, at the geometric mean of the two sizes
//! ([`boundary_bytes`], printed in the table as "tuner boundary bytes").

use crate::params::Workload;
use crate::report::nccl::{Pair, Sweep};
use std::collections::BTreeSet;

/// One line of the tuner file: `pair` for sizes `min_bytes..=max_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TunerBand {
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub pair: Pair,
}

/// Why nothing can be exported: the real cause, so the advice fits it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TunerRefusal {
    #[error("no NCCL sweep in the inputs (cases equal but for nccl_algo / nccl_proto, at least one forced): run a sweep with the spec axes nccl_algo and nccl_proto (docs/nccl-capture.md), then export")]
    NoSweep,
    #[error("the NCCL sweeps cover only collectives NCCL's tuner cannot tune (all-to-all is point-to-point in NCCL)")]
    NotTunable,
    #[error("every measured case of the NCCL sweeps ({cases}) was set apart because it cannot represent its set-up (see the report's Not representative section: a busy host, emulated nodes, oversubscription): rerun on a quiet allocation, or pass --include-unrepresentative to export them anyway (the file then says so)")]
    AllSetApart { cases: usize },
    #[error("no size of the NCCL sweeps has a known algorithm and protocol for its fastest case: force both axes in the sweep, or turn capture on with SCALEBENCH_NCCL_CAPTURE=1 for the default's choice")]
    NoKnownPair,
}

/// The bands of one sweep from its sizes in increasing order, each with the pair of the
/// size's fastest case (`None` where the fastest ran with an unknown pair or nothing usable
/// ran): the crossover table's winners.
///
/// - Consecutive sizes with one pair form one band.
/// - Between two measured sizes with different pairs the boundary is [`boundary_bytes`] (sizes
///   are swept in powers of two; a collective's regimes change on a log scale).
/// - Only the measured range is covered: below the smallest and above the largest size,
///   and around a size without a known pair, NCCL keeps its own choice (no line).
pub(crate) fn choose_bands(sizes: &[(u64, Option<Pair>)]) -> Vec<TunerBand> {
    let mut out: Vec<TunerBand> = Vec::new();
    // The previous size and its pair, while a band is open (None after a gap).
    let mut prev: Option<(u64, Pair)> = None;
    for &(bytes, choice) in sizes {
        match (prev, choice, out.last_mut()) {
            (Some((_, p)), Some(c), Some(open)) if p == c => open.max_bytes = bytes,
            (Some((b, _)), Some(c), Some(open)) => {
                let m = boundary_bytes(b, bytes);
                open.max_bytes = m;
                out.push(TunerBand {
                    min_bytes: m + 1,
                    max_bytes: bytes,
                    pair: c,
                });
            }
            // The first size, or the first after a gap: the gap stays NCCL's.
            (_, Some(c), _) => out.push(TunerBand {
                min_bytes: bytes,
                max_bytes: bytes,
                pair: c,
            }),
            (_, None, _) => {}
        }
        prev = choice.map(|c| (bytes, c));
    }
    out
}

/// Where the tuner file switches between two measured sizes `a < b` with different winners:
/// their geometric mean, rounded down (a band ends there, the next starts one byte above).
pub(crate) fn boundary_bytes(a: u64, b: u64) -> u64 {
    let m = ((a as f64) * (b as f64)).sqrt().floor() as u64;
    m.clamp(a, b.saturating_sub(1).max(a))
}

/// NCCL's example tuner's name of a collective; `None` for those it cannot tune
/// (all-to-all is point-to-point in NCCL).
pub(crate) fn tuner_collective(w: Workload) -> Option<&'static str> {
    match w {
        Workload::Allreduce => Some("allreduce"),
        Workload::Reduce => Some("reduce"),
        Workload::Broadcast => Some("broadcast"),
        Workload::Allgather => Some("allgather"),
        Workload::ReduceScatter => Some("reducescatter"),
        _ => None,
    }
}

/// Each size of a sweep with its fastest case's pair, as the crossover table reads it.
fn winners(s: &Sweep) -> Vec<(u64, Option<Pair>)> {
    s.rows.iter().map(|r| (r.bytes, s.winner_pair(r))).collect()
}

/// The tuner file for `sweeps`, or why there is nothing to export.
///
/// Format (NCCL's `plugins/tuner/example`, from NCCL 2.28):
/// `collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff`,
/// `#` comments, first matching line wins. Channels, pipelined ops and registered buffers
/// are `-1` (NCCL's own): the sweep did not vary them. Sizes are scalebench's S, which for
/// all-gather and reduce-scatter is the whole buffer (nRanks × count), NCCL's `nBytes`.
pub(crate) fn tuner_text(sweeps: &[Sweep], sources: &str) -> Result<String, TunerRefusal> {
    let mut lines = Vec::new();
    let mut comments = vec![
        "# NCCL tuner configuration written by scalebench report --nccl-tuner (NCCL example CSV tuner, NCCL 2.28+)".to_string(),
        format!("# from: {sources}"),
        "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff".to_string(),
        "# sizes outside each measured range are left to NCCL; channels -1: not swept".to_string(),
        "# boundaries: the geometric mean of the two sizes around each crossover of the report's nccl_crossovers table".to_string(),
    ];
    if sweeps.iter().any(|s| s.standin) {
        comments.insert(
            1,
            "# STAND-IN: measured on scalebench's stand-in NCCL (CPU test double), not on a GPU; do not use it to tune a real system".to_string(),
        );
    }
    // The first matching line wins, so one sweep per collective and layout: the first (most
    // settings); the others are named so nobody wonders where they went.
    let mut taken: BTreeSet<(&str, u32, u32)> = BTreeSet::new();
    let mut let_in = 0;
    for s in sweeps {
        let Some(coll) = tuner_collective(s.workload) else {
            continue;
        };
        if !taken.insert((coll, s.nodes, s.devices)) {
            comments.push(format!(
                "# not exported (an earlier sweep covers {coll} on this layout): {} {}",
                s.workload, s.label
            ));
            continue;
        }
        let bands = choose_bands(&winners(s));
        if bands.is_empty() {
            continue;
        }
        let_in += s.let_in;
        lines.push(format!("# {} {}", s.workload, s.label));
        for b in bands {
            lines.push(format!(
                "{coll},{},{},{},{},-1,{},{},-1,-1",
                b.min_bytes,
                b.max_bytes,
                b.pair.0.name(),
                b.pair.1.name(),
                s.nodes,
                s.devices
            ));
        }
    }
    if lines.is_empty() {
        return Err(refusal(sweeps));
    }
    if let_in > 0 {
        comments.push(format!(
            "# UNREPRESENTATIVE: {let_in} of the cases exported from cannot represent their set-up (a busy host, emulated nodes, oversubscription) and were let in by --include-unrepresentative"
        ));
    }
    comments.extend(lines);
    Ok(comments.join("\n") + "\n")
}

/// Why no line could be written, from what the sweeps hold.
fn refusal(sweeps: &[Sweep]) -> TunerRefusal {
    let tunable: Vec<&Sweep> = sweeps
        .iter()
        .filter(|s| tuner_collective(s.workload).is_some())
        .collect();
    if sweeps.is_empty() {
        return TunerRefusal::NoSweep;
    }
    if tunable.is_empty() {
        return TunerRefusal::NotTunable;
    }
    let usable = tunable
        .iter()
        .flat_map(|s| &s.rows)
        .any(|r| r.fastest.is_some());
    let left_out: usize = tunable.iter().map(|s| s.left_out).sum();
    if !usable && left_out > 0 {
        return TunerRefusal::AllSetApart { cases: left_out };
    }
    TunerRefusal::NoKnownPair
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{NcclAlgo::*, NcclProto::*};

    fn band(min_bytes: u64, max_bytes: u64, pair: Pair) -> TunerBand {
        TunerBand {
            min_bytes,
            max_bytes,
            pair,
        }
    }

    #[test]
    fn one_choice_throughout_is_one_band_over_the_measured_range() {
        let s = [
            (1024, Some((Ring, Simple))),
            (4096, Some((Ring, Simple))),
            (65536, Some((Ring, Simple))),
        ];
        assert_eq!(choose_bands(&s), vec![band(1024, 65536, (Ring, Simple))]);
        assert!(choose_bands(&[]).is_empty());
    }

    #[test]
    fn a_change_splits_at_the_geometric_mean() {
        let s = [
            (1024, Some((Tree, Ll))),
            (4096, Some((Tree, Ll))),
            (65536, Some((Ring, Ll128))),
            (262144, Some((Ring, Simple))),
        ];
        // sqrt(4096 × 65536) = 16384; sqrt(65536 × 262144) = 131072.
        assert_eq!(
            choose_bands(&s),
            vec![
                band(1024, 16384, (Tree, Ll)),
                band(16385, 131072, (Ring, Ll128)),
                band(131073, 262144, (Ring, Simple)),
            ]
        );
        assert_eq!(boundary_bytes(4096, 65536), 16384);
    }

    #[test]
    fn the_fastest_decides_at_once_as_in_the_crossover_table() {
        // The old rule kept Tree/LL at 4 KiB while Ring/LL128 measured fastest there (a tie),
        // so the file switched one size late; the table said 1 KiB → 4 KiB.
        let s = [
            (1024, Some((Tree, Ll))),
            (4096, Some((Ring, Ll128))),
            (16384, Some((Ring, Ll128))),
        ];
        assert_eq!(
            choose_bands(&s),
            vec![
                band(1024, 2048, (Tree, Ll)),
                band(2049, 16384, (Ring, Ll128))
            ]
        );
    }

    #[test]
    fn a_size_without_a_known_pair_is_a_gap_left_to_nccl() {
        let s = [
            (1024, Some((Tree, Ll))),
            (4096, None),
            (16384, Some((Tree, Ll))),
            (65536, Some((Ring, Simple))),
        ];
        assert_eq!(
            choose_bands(&s),
            vec![
                band(1024, 1024, (Tree, Ll)),
                band(16384, 32768, (Tree, Ll)),
                band(32769, 65536, (Ring, Simple)),
            ]
        );
        // Adjacent sizes one byte apart still give disjoint, ordered bands.
        let s = [(8, Some((Tree, Ll))), (9, Some((Ring, Ll)))];
        assert_eq!(
            choose_bands(&s),
            vec![band(8, 8, (Tree, Ll)), band(9, 9, (Ring, Ll))]
        );
    }

    fn sweep(workload: Workload, rows: Vec<(u64, Option<Pair>, bool)>, left_out: usize) -> Sweep {
        use crate::report::nccl::{Point, SizeRow};
        let rows = rows
            .into_iter()
            .map(|(bytes, pair, usable)| SizeRow {
                bytes,
                points: vec![Some(Point {
                    entry: 0,
                    time_s: 1e-6,
                    pair,
                    usable,
                })],
                fastest: usable.then_some(0),
                best_pairs: pair.filter(|_| usable).into_iter().collect(),
                lead: None,
                default_vs_fastest: None,
            })
            .collect();
        Sweep {
            workload,
            label: "1×2 f32".into(),
            nodes: 1,
            devices: 2,
            settings: Vec::new(),
            rows,
            standin: false,
            left_out,
            let_in: 0,
        }
    }

    #[test]
    fn a_refusal_names_the_real_cause() {
        assert_eq!(tuner_text(&[], "x"), Err(TunerRefusal::NoSweep));
        let a2a = sweep(Workload::Alltoall, vec![(8, Some((Ring, Ll)), true)], 0);
        assert_eq!(tuner_text(&[a2a], "x"), Err(TunerRefusal::NotTunable));
        // A busy host: every case measured with a known pair, none usable. The old text told
        // the user to turn capture on, which was on.
        let busy = sweep(
            Workload::Allreduce,
            vec![(8, Some((Ring, Ll)), false), (64, Some((Tree, Ll)), false)],
            2,
        );
        let e = tuner_text(&[busy], "x").unwrap_err();
        assert_eq!(e, TunerRefusal::AllSetApart { cases: 2 });
        assert!(e.to_string().contains("--include-unrepresentative"), "{e}");
        let unknown = sweep(Workload::Allreduce, vec![(8, None, true)], 0);
        assert_eq!(tuner_text(&[unknown], "x"), Err(TunerRefusal::NoKnownPair));
    }

    #[test]
    fn cases_let_in_are_said_in_the_file() {
        let mut s = sweep(Workload::Allreduce, vec![(8, Some((Ring, Ll)), true)], 0);
        s.let_in = 1;
        let text = tuner_text(&[s], "x").unwrap();
        assert!(
            text.contains("# UNREPRESENTATIVE: 1 of the cases"),
            "{text}"
        );
        assert!(
            text.contains("allreduce,8,8,ring,ll,-1,1,2,-1,-1"),
            "{text}"
        );
    }
}
