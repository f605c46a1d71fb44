//! Parameters in words: `key=value` pairs made readable, and the labels of variants, set-up
//! styles and concerns.

use super::palette::StyleKey;
use crate::params::{CaseParams, ParamKey};
use crate::report::load::canonical_pairs;
use crate::units::format_bytes;
use std::collections::{BTreeMap, BTreeSet};

/// `oversubscribed, emulated nodes`: concern kinds in words.
pub fn kinds_text(kinds: &BTreeSet<String>) -> String {
    kinds
        .iter()
        .map(|k| k.replace('_', " "))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a chart label appends for a non-representative series: nothing, or
/// ` — NOT REPRESENTATIVE: <kinds>`.
pub fn not_representative_suffix(kinds: &BTreeSet<String>) -> String {
    if kinds.is_empty() {
        String::new()
    } else {
        format!(" — NOT REPRESENTATIVE: {}", kinds_text(kinds))
    }
}

/// The parameters a person needs to tell cases apart, `key=value` made readable.
pub fn pretty_pair(k: ParamKey, v: &str) -> Option<String> {
    if v == "-" {
        return None;
    }
    Some(match k {
        ParamKey::Workload
        | ParamKey::Backend
        | ParamKey::Timing
        | ParamKey::Dtype
        | ParamKey::Op
        | ParamKey::Topology
        | ParamKey::Scaling => v.to_string(),
        ParamKey::Binding => format!("bind={v}"),
        ParamKey::Placement => format!("place={v}"),
        ParamKey::Nodes => match v {
            "1" => "1 node".to_string(),
            _ => format!("{v} nodes"),
        },
        ParamKey::DevicesPerNode => format!("{v} dev/node"),
        ParamKey::InPlace => if v == "true" {
            "in-place"
        } else {
            "out-of-place"
        }
        .to_string(),
        ParamKey::RequestedBytes => v.parse::<u64>().map_or(v.to_string(), format_bytes),
        ParamKey::Shape => match v.split('x').collect::<Vec<_>>().as_slice() {
            [m, n, k] if m == n && n == k => format!("n={m}"),
            _ => format!("shape={v}"),
        },
        ParamKey::ThreadsPerDevice => format!("{v} thr/dev"),
        ParamKey::NcclAlgo => format!("algo={v}"),
        ParamKey::NcclProto => format!("proto={v}"),
        ParamKey::Buffers => format!("buffers={v}"),
        ParamKey::Compute => format!("compute={v}"),
        ParamKey::Trace => format!("trace={v}"),
        ParamKey::TraceSha256 => return None,
        ParamKey::Root
        | ParamKey::Batch
        | ParamKey::Collect
        | ParamKey::Fault
        | ParamKey::Model
        | ParamKey::BucketBytes
        | ParamKey::Progress
        | ParamKey::FirstBucketBytes => format!("{k}={v}"),
    })
}

/// Describes `p` by the keys in `keys` (in canonical order).
pub fn describe(p: &CaseParams, keys: &BTreeSet<ParamKey>) -> String {
    canonical_pairs(p)
        .into_iter()
        .filter(|(k, _)| keys.contains(k))
        .filter_map(|(k, v)| pretty_pair(k, &v))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The canonical keys whose values differ among `params`.
pub fn varying_keys<'p>(params: impl Iterator<Item = &'p CaseParams>) -> BTreeSet<ParamKey> {
    let mut seen: BTreeMap<ParamKey, BTreeSet<String>> = BTreeMap::new();
    for p in params {
        for (k, v) in canonical_pairs(p) {
            seen.entry(k).or_default().insert(v);
        }
    }
    seen.into_iter()
        .filter(|(_, vs)| vs.len() > 1)
        .map(|(k, _)| k)
        .collect()
}

const SETUP_KEYS: &[ParamKey] = &[
    ParamKey::Backend,
    ParamKey::Topology,
    ParamKey::Nodes,
    ParamKey::DevicesPerNode,
    ParamKey::Binding,
    ParamKey::Placement,
];

/// Every variant field (not set-up, not size, not workload) that has a value.
pub fn variant_label(p: &CaseParams) -> String {
    let keys: BTreeSet<ParamKey> = canonical_pairs(p)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| {
            !SETUP_KEYS.contains(k) && *k != ParamKey::RequestedBytes && *k != ParamKey::Workload
        })
        .collect();
    describe(p, &keys)
}

/// The set-up fields of `s` that vary in the report (topology, binding, ...), without the
/// layout; `fallback` when none vary.
pub fn style_label(s: StyleKey, varying: &BTreeSet<ParamKey>) -> String {
    let mut parts = Vec::new();
    if varying.contains(&ParamKey::Backend) {
        parts.push(s.0.to_string());
    }
    if varying.contains(&ParamKey::Topology) {
        parts.push(s.1.to_string());
    }
    if varying.contains(&ParamKey::Binding) {
        parts.push(format!("bind={}", s.2));
    }
    if varying.contains(&ParamKey::Placement) {
        parts.push(format!("place={}", s.3));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_pairs() {
        assert_eq!(
            pretty_pair(ParamKey::InPlace, "false").unwrap(),
            "out-of-place"
        );
        assert_eq!(
            pretty_pair(ParamKey::RequestedBytes, "1048576").unwrap(),
            "1MiB"
        );
        assert_eq!(
            pretty_pair(ParamKey::Shape, "256x256x256").unwrap(),
            "n=256"
        );
        assert_eq!(
            pretty_pair(ParamKey::Shape, "4x5x6").unwrap(),
            "shape=4x5x6"
        );
        assert_eq!(pretty_pair(ParamKey::Op, "-"), None);
        assert_eq!(pretty_pair(ParamKey::Binding, "core").unwrap(), "bind=core");
        assert_eq!(
            pretty_pair(ParamKey::BucketBytes, "4096").unwrap(),
            "bucket_bytes=4096"
        );
    }
}
