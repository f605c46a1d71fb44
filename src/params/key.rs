//! The keys of a case's canonical text, typed: readers of that text (the report's labels,
//! groupings and `--only` filters) match on a closed set, so a renamed or new key is a
//! compile error there instead of a silently unmatched string.

use super::CaseParams;
use std::fmt;

/// One parameter of a case, as its canonical text ([`CaseParams::canonical`]) names it.
/// Declared in canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParamKey {
    Workload,
    Backend,
    Topology,
    Nodes,
    DevicesPerNode,
    Binding,
    Placement,
    Timing,
    Dtype,
    Op,
    Root,
    InPlace,
    RequestedBytes,
    Shape,
    Batch,
    Collect,
    Scaling,
    ThreadsPerDevice,
    Fault,
    Model,
    BucketBytes,
    Progress,
    FirstBucketBytes,
    NcclAlgo,
    NcclProto,
    Buffers,
    Trace,
    TraceSha256,
    Compute,
}

impl ParamKey {
    /// Every key, in canonical order.
    pub const ALL: &'static [ParamKey] = &[
        ParamKey::Workload,
        ParamKey::Backend,
        ParamKey::Topology,
        ParamKey::Nodes,
        ParamKey::DevicesPerNode,
        ParamKey::Binding,
        ParamKey::Placement,
        ParamKey::Timing,
        ParamKey::Dtype,
        ParamKey::Op,
        ParamKey::Root,
        ParamKey::InPlace,
        ParamKey::RequestedBytes,
        ParamKey::Shape,
        ParamKey::Batch,
        ParamKey::Collect,
        ParamKey::Scaling,
        ParamKey::ThreadsPerDevice,
        ParamKey::Fault,
        ParamKey::Model,
        ParamKey::BucketBytes,
        ParamKey::Progress,
        ParamKey::FirstBucketBytes,
        ParamKey::NcclAlgo,
        ParamKey::NcclProto,
        ParamKey::Buffers,
        ParamKey::Trace,
        ParamKey::TraceSha256,
        ParamKey::Compute,
    ];

    /// The key as the canonical text writes it (the ids hash this text, so it never changes).
    pub fn as_str(self) -> &'static str {
        match self {
            ParamKey::Workload => "workload",
            ParamKey::Backend => "backend",
            ParamKey::Topology => "topology",
            ParamKey::Nodes => "nodes",
            ParamKey::DevicesPerNode => "devices_per_node",
            ParamKey::Binding => "binding",
            ParamKey::Placement => "placement",
            ParamKey::Timing => "timing",
            ParamKey::Dtype => "dtype",
            ParamKey::Op => "op",
            ParamKey::Root => "root",
            ParamKey::InPlace => "in_place",
            ParamKey::RequestedBytes => "requested_bytes",
            ParamKey::Shape => "shape",
            ParamKey::Batch => "batch",
            ParamKey::Collect => "collect",
            ParamKey::Scaling => "scaling",
            ParamKey::ThreadsPerDevice => "threads_per_device",
            ParamKey::Fault => "fault",
            ParamKey::Model => "model",
            ParamKey::BucketBytes => "bucket_bytes",
            ParamKey::Progress => "progress",
            ParamKey::FirstBucketBytes => "first_bucket_bytes",
            ParamKey::NcclAlgo => "nccl_algo",
            ParamKey::NcclProto => "nccl_proto",
            ParamKey::Buffers => "buffers",
            ParamKey::Trace => "trace",
            ParamKey::TraceSha256 => "trace_sha256",
            ParamKey::Compute => "compute",
        }
    }

    /// The key `text` names, exactly as [`Self::as_str`] writes it (no case folding: the
    /// canonical text has one spelling).
    pub fn parse(text: &str) -> Option<ParamKey> {
        ParamKey::ALL.iter().copied().find(|k| k.as_str() == text)
    }
}

impl fmt::Display for ParamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CaseParams {
    /// The (key, value) pairs of [`CaseParams::canonical`], in its fixed order; an unset
    /// value is `-`. ddp_step's keys come only when one of model, bucket_bytes and progress
    /// is set, first_bucket_bytes only when it is set too, so the ids of every case from
    /// before those fields existed stay what they were.
    pub fn pairs(&self) -> Vec<(ParamKey, String)> {
        fn opt<T: fmt::Display>(v: &Option<T>) -> String {
            v.as_ref()
                .map_or_else(|| "-".to_string(), |x| x.to_string())
        }
        let mut v = vec![
            (ParamKey::Workload, self.workload.to_string()),
            (ParamKey::Backend, self.backend.to_string()),
            (ParamKey::Topology, self.topology.to_string()),
            (ParamKey::Nodes, self.nodes.to_string()),
            (ParamKey::DevicesPerNode, self.devices_per_node.to_string()),
            (ParamKey::Binding, self.binding.to_string()),
            (ParamKey::Placement, self.placement.to_string()),
            (ParamKey::Timing, self.timing.to_string()),
            (ParamKey::Dtype, self.dtype.to_string()),
            (ParamKey::Op, opt(&self.op)),
            (ParamKey::Root, opt(&self.root)),
            (ParamKey::InPlace, opt(&self.in_place)),
            (ParamKey::RequestedBytes, opt(&self.requested_bytes)),
            // Always MxNxK here (the shape's Display writes a square one as N).
            (
                ParamKey::Shape,
                self.shape
                    .map_or_else(|| "-".to_string(), |s| format!("{}x{}x{}", s.m, s.n, s.k)),
            ),
            (ParamKey::Batch, opt(&self.batch)),
            (ParamKey::Collect, opt(&self.collect)),
            (ParamKey::Scaling, opt(&self.scaling)),
            (ParamKey::ThreadsPerDevice, opt(&self.threads_per_device)),
            (ParamKey::Fault, opt(&self.fault)),
        ];
        if self.model.is_some() || self.bucket_bytes.is_some() || self.progress.is_some() {
            v.push((ParamKey::Model, opt(&self.model)));
            v.push((ParamKey::BucketBytes, opt(&self.bucket_bytes)));
            v.push((ParamKey::Progress, opt(&self.progress)));
            if let Some(b) = self.first_bucket_bytes {
                v.push((ParamKey::FirstBucketBytes, b.to_string()));
            }
        }
        // Only when forced: the ids of every case before these fields stay what they were.
        if let Some(a) = self.nccl_algo {
            v.push((ParamKey::NcclAlgo, a.name().to_string()));
        }
        if let Some(p) = self.nccl_proto {
            v.push((ParamKey::NcclProto, p.name().to_string()));
        }
        if let Some(b) = self.buffers {
            v.push((ParamKey::Buffers, b.name().to_string()));
        }
        // replay only: the digest makes a changed trace a different case.
        if self.trace.is_some() {
            v.push((ParamKey::Trace, opt(&self.trace)));
            v.push((ParamKey::TraceSha256, opt(&self.trace_sha256)));
            v.push((ParamKey::Compute, opt(&self.compute)));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{MatmulShape, Progress, ReduceOp, Workload};

    #[test]
    fn keys_round_trip_exactly() {
        for k in ParamKey::ALL {
            assert_eq!(ParamKey::parse(k.as_str()), Some(*k));
        }
        assert_eq!(ParamKey::parse("Workload"), None);
        assert_eq!(ParamKey::parse("colour"), None);
    }

    #[test]
    fn canonical_text_is_pinned() {
        // Pinned: every stored case id hashes this text.
        let p = CaseParams {
            op: Some(ReduceOp::Sum),
            in_place: Some(false),
            requested_bytes: Some(1024),
            shape: Some(MatmulShape::square(8)),
            ..CaseParams::new(Workload::Allreduce, 1, 2)
        };
        assert_eq!(
            p.canonical(),
            "workload=allreduce;backend=cpu;topology=pure;nodes=1;devices_per_node=2;binding=none;placement=fill;timing=pipelined;dtype=f32;op=sum;root=-;in_place=false;requested_bytes=1024;shape=8x8x8;batch=-;collect=-;scaling=-;threads_per_device=-;fault=-"
        );
        let first_only = CaseParams {
            first_bucket_bytes: Some(5),
            ..p.clone()
        };
        assert_eq!(first_only.canonical(), p.canonical());
        let ddp = CaseParams {
            progress: Some(Progress::Test),
            ..first_only
        };
        assert_eq!(
            ddp.canonical(),
            format!(
                "{};model=-;bucket_bytes=-;progress=test;first_bucket_bytes=5",
                p.canonical()
            )
        );
        // Rotated buffers are another case; reused ones (the default) keep the old id.
        let rotated = CaseParams {
            buffers: Some(crate::params::BufferUse::Rotate),
            ..p.clone()
        };
        assert_eq!(
            rotated.canonical(),
            format!("{};buffers=rotate", p.canonical())
        );
        assert_ne!(rotated.id(), p.id());
    }
}
