//! Chart kind: pure MPI against hybrid: time(hybrid) / time(pure) against size, one series per
//! layout and set-up, with the line of equality.

use super::{ratio_figures, Figure, RatioText};
use crate::report::analyze::{Analysis, RatioKind};

const TEXT: RatioText = RatioText {
    title: "hybrid vs pure MPI, time ratio vs size",
    y_title: "time hybrid / time pure (log scale)",
    caption: "Time of hybrid (one rank per node driving its devices) divided by time of pure MPI (one rank per device), for cases equal in everything else. Above 1: pure MPI is faster; below 1: hybrid is faster. Bars span p5–p95 of the ratios of every pairing of their samples.",
    notes: &[
        "above 1: pure MPI faster",
        "below 1: hybrid faster",
        "bars (right of each point): p5–p95 of the ratios of sample pairs",
    ],
};

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    ratio_figures(a, RatioKind::Topology, &TEXT)
}
