//! The axes a spec can vary: one list, from which [`Axis`] and [`Axis::ALL`] are both made,
//! and exhaustive `match`es for everything said about an axis (its key, its level, its place in
//! the planner's enumeration). Adding an axis without handling it does not compile.

/// Declares [`Axis`] and [`Axis::ALL`] from one list of variants (in declaration order), so
/// no axis can be missing from `ALL`.
macro_rules! axes {
    ($($(#[$meta:meta])* $variant:ident,)*) => {
        /// Everything a spec can vary.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Axis {
            $($(#[$meta])* $variant,)*
        }

        impl Axis {
            /// Every axis, in declaration order (the order error messages list them in).
            pub const ALL: &'static [Axis] = &[$(Axis::$variant,)*];
        }
    };
}

axes! {
    Backend,
    Nodes,
    DevicesPerNode,
    Topology,
    Binding,
    Placement,
    ThreadsPerDevice,
    Workloads,
    Sizes,
    Dtypes,
    Ops,
    Roots,
    Timing,
    InPlace,
    Dims,
    Scaling,
    Batch,
    Collect,
    /// Test-only fault injection (see `params::Fault`); not for studies.
    Fault,
    /// ddp_step models (presets or layer lists, see `params::ddp::Model`).
    Models,
    /// ddp_step gradient bucket capacities, bytes.
    BucketSizes,
    /// ddp_step first-bucket capacities, bytes (0 = as the others).
    FirstBucketSizes,
    /// ddp_step progress strategies of the CPU backend.
    Progress,
    /// The algorithm forced on NCCL (`NCCL_ALGO`; `default` = NCCL's choice). Launch-level:
    /// NCCL reads it when a communicator is created.
    NcclAlgo,
    /// The protocol forced on NCCL (`NCCL_PROTO`; `default` = NCCL's choice). Launch-level.
    NcclProto,
    /// Collectives' buffers across timed iterations: `reuse` one set, or `rotate` through
    /// sets spanning twice the device's last-level cache (`--buffers`).
    Buffers,
}

impl Axis {
    /// The key in spec files.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Backend => "backend",
            Axis::Nodes => "nodes",
            Axis::DevicesPerNode => "devices_per_node",
            Axis::Topology => "topology",
            Axis::Binding => "binding",
            Axis::Placement => "placement",
            Axis::ThreadsPerDevice => "threads_per_device",
            Axis::Workloads => "workloads",
            Axis::Sizes => "sizes",
            Axis::Dtypes => "dtypes",
            Axis::Ops => "ops",
            Axis::Roots => "roots",
            Axis::Timing => "timing",
            Axis::InPlace => "in_place",
            Axis::Dims => "dims",
            Axis::Scaling => "scaling",
            Axis::Batch => "batch",
            Axis::Collect => "collect",
            Axis::Fault => "fault",
            Axis::Models => "models",
            Axis::BucketSizes => "bucket_sizes",
            Axis::FirstBucketSizes => "first_bucket_sizes",
            Axis::Progress => "progress",
            Axis::NcclAlgo => "nccl_algo",
            Axis::NcclProto => "nccl_proto",
            Axis::Buffers => "buffers",
        }
    }

    /// The axis a key names (singular forms, `gpus_per_node` and the deprecated
    /// `ranks_per_node` are accepted too; see [`Axis::deprecated_key`]).
    pub fn from_key(key: &str) -> Option<Axis> {
        let alias = match key {
            "workload" => "workloads",
            "size" => "sizes",
            "dtype" => "dtypes",
            "op" => "ops",
            "root" => "roots",
            "dim" => "dims",
            "model" => "models",
            "bucket_size" => "bucket_sizes",
            "first_bucket" | "first_bucket_size" => "first_bucket_sizes",
            "gpus_per_node" | "ranks_per_node" => "devices_per_node",
            k => k,
        };
        Axis::ALL.iter().copied().find(|a| a.name() == alias)
    }

    /// The key that replaces `key` when `key` is a deprecated spelling (still read, with a
    /// warning): `ranks_per_node` meant devices per node, which is what the planner calls it.
    pub(crate) fn deprecated_key(key: &str) -> Option<&'static str> {
        match key {
            "ranks_per_node" => Some(Axis::DevicesPerNode.name()),
            _ => None,
        }
    }

    /// Whether the axis decides the launch (allocation shape) rather than the case.
    pub fn is_launch_level(self) -> bool {
        matches!(
            self,
            Axis::Backend
                | Axis::Nodes
                | Axis::DevicesPerNode
                | Axis::Topology
                | Axis::Binding
                | Axis::Placement
                | Axis::ThreadsPerDevice
                | Axis::NcclAlgo
                | Axis::NcclProto
        )
    }

    /// Position in the planner's enumeration (smaller = varies slower; sizes and in-place
    /// innermost, as nccl-tests loops). An exhaustive `match`: a new axis does not compile until
    /// it has a place here.
    pub(crate) const fn enumeration_rank(self) -> usize {
        match self {
            Axis::Backend => 0,
            Axis::Nodes => 1,
            Axis::DevicesPerNode => 2,
            Axis::Topology => 3,
            Axis::Binding => 4,
            Axis::Placement => 5,
            Axis::ThreadsPerDevice => 6,
            Axis::NcclAlgo => 7,
            Axis::NcclProto => 8,
            Axis::Fault => 9,
            Axis::Workloads => 10,
            Axis::Dtypes => 11,
            Axis::Ops => 12,
            Axis::Roots => 13,
            Axis::Timing => 14,
            Axis::Scaling => 15,
            Axis::Collect => 16,
            Axis::Batch => 17,
            Axis::Dims => 18,
            Axis::Models => 19,
            Axis::Progress => 20,
            Axis::BucketSizes => 21,
            Axis::FirstBucketSizes => 22,
            Axis::Sizes => 23,
            Axis::InPlace => 24,
            // Innermost: reuse and rotate of one size side by side, as `run --buffers` lists them.
            Axis::Buffers => 25,
        }
    }
}

// The enumeration ranks are a permutation of 0..ALL.len(): no two axes share a place.
const _: () = {
    let all = Axis::ALL;
    let mut i = 0;
    while i < all.len() {
        assert!(
            all[i].enumeration_rank() < all.len(),
            "an enumeration rank out of range"
        );
        let mut j = i + 1;
        while j < all.len() {
            assert!(
                all[i].enumeration_rank() != all[j].enumeration_rank(),
                "two axes share an enumeration rank"
            );
            j += 1;
        }
        i += 1;
    }
};
