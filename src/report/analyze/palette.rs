//! Set-ups as charts draw them: the layout (nodes × devices per node) and the style (backend,
//! topology, binding, placement), with one colour and marker index per report.

use crate::params::{BackendKind, Binding, LaunchShape, Placement, Topology};

/// Nodes × devices per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Layout {
    pub nodes: u32,
    pub devices_per_node: u32,
}

impl Layout {
    pub fn devices(&self) -> u32 {
        self.nodes * self.devices_per_node
    }
    pub fn of(s: &LaunchShape) -> Layout {
        Layout {
            nodes: s.nodes,
            devices_per_node: s.devices_per_node,
        }
    }
    /// `2×4`: nodes × devices per node.
    pub fn label(&self) -> String {
        format!("{}×{}", self.nodes, self.devices_per_node)
    }
}

/// The parts of a set-up drawn with one marker (the layout has the colour).
pub type StyleKey = (BackendKind, Topology, Binding, Placement);

pub fn style_key(s: &LaunchShape) -> StyleKey {
    (s.backend, s.topology, s.binding, s.placement)
}

/// Colour and marker indices shared by every chart of a report: one colour per set-up
/// (launch shape), one marker per (backend, topology, binding, placement).
#[derive(Debug, Clone, Default)]
pub struct Palette {
    pub layouts: Vec<Layout>,
    pub styles: Vec<StyleKey>,
    /// Every set-up, ordered by style then layout: the colour index.
    pub shapes: Vec<(StyleKey, Layout)>,
}

impl Palette {
    /// The colour index of a set-up (stable across the charts of one report).
    pub fn shape_index(&self, s: &LaunchShape) -> usize {
        self.shapes
            .binary_search(&(style_key(s), Layout::of(s)))
            .unwrap_or(0)
    }
    pub fn style_index(&self, s: StyleKey) -> usize {
        self.styles.binary_search(&s).unwrap_or(0)
    }
}
