//! Which cases belong together: variants (parameters with set-up and size blanked), the
//! variants charted, and scaling families (series along which only the device count changes).

use super::entry::Entry;
use super::palette::Layout;
use super::Analysis;
use crate::params::{BackendKind, Binding, CaseParams, Placement, Topology, Workload};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// How a series walks across device counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Every layout (each device count has one layout).
    AllLayouts,
    /// One node, devices per node varying.
    SingleNode,
    /// Fixed devices per node, nodes varying.
    PerNode(u32),
}

impl Family {
    pub fn label(&self) -> String {
        match self {
            Family::AllLayouts => "across layouts".to_string(),
            Family::SingleNode => "within 1 node".to_string(),
            Family::PerNode(d) => format!(
                "{} per node, across nodes",
                crate::present::count(*d as usize, "device", "devices")
            ),
        }
    }
}

/// Splits the layouts of a group into series along which only the device count changes. When
/// two layouts share a device count (1×4 and 2×2) they cannot sit on one axis, so the group
/// splits into scaling within one node and scaling over nodes at each devices-per-node.
pub fn families(layouts: &BTreeSet<Layout>) -> Vec<(Family, Vec<Layout>)> {
    let mut by_devices: BTreeMap<u32, usize> = BTreeMap::new();
    for l in layouts {
        *by_devices.entry(l.devices()).or_default() += 1;
    }
    let mut out = Vec::new();
    if by_devices.values().all(|&n| n == 1) {
        if layouts.len() >= 2 {
            let mut v: Vec<Layout> = layouts.iter().copied().collect();
            v.sort_by_key(|l| l.devices());
            out.push((Family::AllLayouts, v));
        }
        return out;
    }
    let single: Vec<Layout> = layouts.iter().copied().filter(|l| l.nodes == 1).collect();
    if single.len() >= 2 {
        out.push((Family::SingleNode, single));
    }
    let dpns: BTreeSet<u32> = layouts.iter().map(|l| l.devices_per_node).collect();
    for d in dpns {
        let v: Vec<Layout> = layouts
            .iter()
            .copied()
            .filter(|l| l.devices_per_node == d)
            .collect();
        if v.len() >= 2 {
            out.push((Family::PerNode(d), v));
        }
    }
    out
}

/// Parameters with the set-up (launch shape) and the size blanked: what a variant shares.
pub(super) fn variant_key(p: &CaseParams) -> CaseParams {
    let mut k = p.clone();
    k.nodes = 0;
    k.devices_per_node = 0;
    k.topology = Topology::Pure;
    k.binding = Binding::None;
    k.placement = Placement::Fill;
    k.backend = BackendKind::Cpu;
    k.requested_bytes = None;
    k
}

/// A variant identified by its canonical text (cheap to order and compare).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct CaseParams2(pub(super) String);

impl<'a> Analysis<'a> {
    /// The variants charted: per workload, the `chart_variants` with most cases.
    pub(super) fn charted_variants(&self) -> BTreeSet<CaseParams2> {
        let mut count: HashMap<CaseParams, usize> = HashMap::new();
        for e in &self.entries {
            *count.entry(variant_key(e.params())).or_default() += 1;
        }
        let mut per_wl: BTreeMap<Workload, Vec<(usize, String, CaseParams)>> = BTreeMap::new();
        for (k, n) in count {
            per_wl
                .entry(k.workload)
                .or_default()
                .push((n, k.canonical(), k));
        }
        let mut out = BTreeSet::new();
        for (_, mut v) in per_wl {
            v.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            for (_, canon, _) in v.into_iter().take(self.options.chart_variants) {
                out.insert(CaseParams2(canon));
            }
        }
        out
    }

    /// Groups measured entries by their parameters with the layout (and optionally the size)
    /// blanked, then splits each group into families.
    pub(super) fn layout_groups(
        &self,
        filter: impl Fn(&Entry<'_>) -> bool,
        blank_size: bool,
    ) -> Vec<(CaseParams, Family, Vec<Layout>, Vec<usize>)> {
        let mut groups: HashMap<CaseParams, Vec<usize>> = HashMap::new();
        for (i, e) in self.conclusive() {
            if !filter(e) {
                continue;
            }
            let mut k = e.params().clone();
            k.nodes = 0;
            k.devices_per_node = 0;
            if blank_size {
                k.requested_bytes = None;
            }
            groups.entry(k).or_default().push(i);
        }
        let mut out = Vec::new();
        for (key, members) in groups {
            let layouts: BTreeSet<Layout> =
                members.iter().map(|&i| self.entries[i].layout()).collect();
            for (fam, lays) in families(&layouts) {
                let idx: Vec<usize> = members
                    .iter()
                    .copied()
                    .filter(|&i| lays.contains(&self.entries[i].layout()))
                    .collect();
                out.push((key.clone(), fam, lays, idx));
            }
        }
        out.sort_by_key(|g| (g.0.canonical(), g.1));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(nodes: u32, devices_per_node: u32) -> Layout {
        Layout {
            nodes,
            devices_per_node,
        }
    }

    #[test]
    fn families_keep_one_layout_per_device_count() {
        let one: BTreeSet<Layout> = [l(1, 1), l(1, 2), l(2, 2)].into_iter().collect();
        assert_eq!(
            families(&one),
            vec![(Family::AllLayouts, vec![l(1, 1), l(1, 2), l(2, 2)])]
        );
        // 1×4 and 2×2 share 4 devices: split into within-node and across-node series.
        let clash: BTreeSet<Layout> = [l(1, 1), l(1, 2), l(1, 4), l(2, 2)].into_iter().collect();
        assert_eq!(
            families(&clash),
            vec![
                (Family::SingleNode, vec![l(1, 1), l(1, 2), l(1, 4)]),
                (Family::PerNode(2), vec![l(1, 2), l(2, 2)]),
            ]
        );
        assert!(families(&[l(1, 2)].into_iter().collect()).is_empty());
    }
}
