//! Chart kind: binding policies: time(policy) / time(reference policy) against size, one series
//! per policy and layout, with the line of equality.

use super::{ratio_figures, Figure, RatioText};
use crate::report::analyze::{Analysis, RatioKind};

const TEXT: RatioText = RatioText {
    title: "CPU binding policies, time ratio vs size",
    y_title: "time policy / time reference (log scale)",
    caption: "Time with each CPU binding policy divided by the time with the reference policy (`none` when measured), for cases equal in everything else. Below 1: the policy is faster. Bars span p5–p95 of the ratios of every pairing of their samples.",
    notes: &[
        "below 1: the policy is faster than the reference",
        "bars (right of each point): p5–p95 of the ratios of sample pairs",
    ],
};

pub(crate) fn figures(a: &Analysis<'_>) -> Vec<Figure> {
    ratio_figures(a, RatioKind::Binding, &TEXT)
}
