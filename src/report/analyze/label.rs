//! Parameters in words: `key=value` pairs made readable, and the labels of variants, set-up
//! styles and concerns.

use super::palette::StyleKey;
use crate::params::CaseParams;
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
pub fn pretty_pair(k: &str, v: &str) -> Option<String> {
    if v == "-" {
        return None;
    }
    Some(match k {
        "workload" | "backend" | "timing" | "dtype" | "op" | "topology" | "scaling" => {
            v.to_string()
        }
        "binding" => format!("bind={v}"),
        "placement" => format!("place={v}"),
        "nodes" => match v {
            "1" => "1 node".to_string(),
            _ => format!("{v} nodes"),
        },
        "devices_per_node" => format!("{v} dev/node"),
        "in_place" => if v == "true" {
            "in-place"
        } else {
            "out-of-place"
        }
        .to_string(),
        "requested_bytes" => v.parse::<u64>().map_or(v.to_string(), format_bytes),
        "shape" => match v.split('x').collect::<Vec<_>>().as_slice() {
            [m, n, k] if m == n && n == k => format!("n={m}"),
            _ => format!("shape={v}"),
        },
        "threads_per_device" => format!("{v} thr/dev"),
        _ => format!("{k}={v}"),
    })
}

/// Describes `p` by the keys in `keys` (in canonical order).
pub fn describe(p: &CaseParams, keys: &BTreeSet<String>) -> String {
    canonical_pairs(p)
        .into_iter()
        .filter(|(k, _)| keys.contains(k))
        .filter_map(|(k, v)| pretty_pair(&k, &v))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The canonical keys whose values differ among `params`.
pub fn varying_keys<'p>(params: impl Iterator<Item = &'p CaseParams>) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
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

const SETUP_KEYS: &[&str] = &[
    "backend",
    "topology",
    "nodes",
    "devices_per_node",
    "binding",
    "placement",
];

/// Every variant field (not set-up, not size, not workload) that has a value.
pub fn variant_label(p: &CaseParams) -> String {
    let keys: BTreeSet<String> = canonical_pairs(p)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| !SETUP_KEYS.contains(&k.as_str()) && k != "requested_bytes" && k != "workload")
        .collect();
    describe(p, &keys)
}

/// The set-up fields of `s` that vary in the report (topology, binding, ...), without the
/// layout; `fallback` when none vary.
pub fn style_label(s: StyleKey, varying: &BTreeSet<String>) -> String {
    let mut parts = Vec::new();
    if varying.contains("backend") {
        parts.push(s.0.to_string());
    }
    if varying.contains("topology") {
        parts.push(s.1.to_string());
    }
    if varying.contains("binding") {
        parts.push(format!("bind={}", s.2));
    }
    if varying.contains("placement") {
        parts.push(format!("place={}", s.3));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_pairs() {
        assert_eq!(pretty_pair("in_place", "false").unwrap(), "out-of-place");
        assert_eq!(pretty_pair("requested_bytes", "1048576").unwrap(), "1MiB");
        assert_eq!(pretty_pair("shape", "256x256x256").unwrap(), "n=256");
        assert_eq!(pretty_pair("shape", "4x5x6").unwrap(), "shape=4x5x6");
        assert_eq!(pretty_pair("op", "-"), None);
        assert_eq!(pretty_pair("binding", "core").unwrap(), "bind=core");
    }
}
