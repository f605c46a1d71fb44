//! NCCL's algorithms and protocols: what its log names (`nccl_log`), what `--nccl-algo` /
//! `--nccl-proto` and the spec axes `nccl_algo` / `nccl_proto` force (one value each, applied
//! as `NCCL_ALGO` / `NCCL_PROTO` to a whole launch), and what a case records it ran with.
//!
//! Wire names (results, specs, the command line) are snake_case (`ring`, `nvls_tree`, `ll128`),
//! as NCCL's example tuner writes them; reading accepts NCCL's own spellings too (`NVLSTree`,
//! `NVLS_TREE`, `Simple`), any case. Lists and `^` exclusions are not accepted: a sweep's axis
//! is the list, and a case forced to "anything but Tree" could not say what it ran with.

use super::{Dtype, ReduceOp, UnknownName, Workload};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// NCCL's algorithms, in `nccl_common.h`'s numbering (TREE 0 … PAT 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NcclAlgo {
    Tree,
    Ring,
    CollnetDirect,
    CollnetChain,
    Nvls,
    NvlsTree,
    Pat,
}

impl NcclAlgo {
    pub const ALL: [NcclAlgo; 7] = [
        NcclAlgo::Tree,
        NcclAlgo::Ring,
        NcclAlgo::CollnetDirect,
        NcclAlgo::CollnetChain,
        NcclAlgo::Nvls,
        NcclAlgo::NvlsTree,
        NcclAlgo::Pat,
    ];

    /// The wire name (results, specs, the command line, the tuner file).
    pub fn name(self) -> &'static str {
        match self {
            NcclAlgo::Tree => "tree",
            NcclAlgo::Ring => "ring",
            NcclAlgo::CollnetDirect => "collnet_direct",
            NcclAlgo::CollnetChain => "collnet_chain",
            NcclAlgo::Nvls => "nvls",
            NcclAlgo::NvlsTree => "nvls_tree",
            NcclAlgo::Pat => "pat",
        }
    }

    /// As `ncclAlgoToString` prints it (the ≥ 2.24 line).
    pub fn log_name(self) -> &'static str {
        match self {
            NcclAlgo::Tree => "TREE",
            NcclAlgo::Ring => "RING",
            NcclAlgo::CollnetDirect => "COLLNET_DIRECT",
            NcclAlgo::CollnetChain => "COLLNET_CHAIN",
            NcclAlgo::Nvls => "NVLS",
            NcclAlgo::NvlsTree => "NVLS_TREE",
            NcclAlgo::Pat => "PAT",
        }
    }

    /// As `NCCL_ALGO` spells it (matched case-insensitively by NCCL).
    pub fn env_name(self) -> &'static str {
        match self {
            NcclAlgo::Tree => "Tree",
            NcclAlgo::Ring => "Ring",
            NcclAlgo::CollnetDirect => "CollnetDirect",
            NcclAlgo::CollnetChain => "CollnetChain",
            NcclAlgo::Nvls => "NVLS",
            NcclAlgo::NvlsTree => "NVLSTree",
            NcclAlgo::Pat => "PAT",
        }
    }

    /// The first NCCL version (`ncclGetVersion` code) that accepts it in `NCCL_ALGO`
    /// (`shared/notes/nccl-tuning.md`: CollNet 2.14, NVLS 2.17, NVLSTree 2.18, PAT 2.23).
    pub fn since_version(self) -> i32 {
        match self {
            NcclAlgo::Tree | NcclAlgo::Ring => 20500,
            NcclAlgo::CollnetDirect | NcclAlgo::CollnetChain => 21400,
            NcclAlgo::Nvls => 21700,
            NcclAlgo::NvlsTree => 21800,
            NcclAlgo::Pat => 22300,
        }
    }

    pub(crate) fn from_number(n: u32) -> Option<NcclAlgo> {
        NcclAlgo::ALL.get(n as usize).copied()
    }
}

impl fmt::Display for NcclAlgo {
    /// NCCL's spelling (`Ring`), as results' captured choices write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.env_name())
    }
}

impl FromStr for NcclAlgo {
    type Err = UnknownName;
    /// Any spelling (`nvls_tree`, `NVLS_TREE`, `NVLSTree`), any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let flat = |x: &str| x.trim().replace('_', "").to_ascii_lowercase();
        NcclAlgo::ALL
            .into_iter()
            .find(|a| flat(a.log_name()) == flat(s))
            .ok_or_else(|| UnknownName {
                what: "NCCL algorithm",
                given: s.trim().to_string(),
                expected: NcclAlgo::ALL.iter().map(|a| a.name()).collect(),
            })
    }
}

/// NCCL's protocols, in `nccl_common.h`'s numbering (LL 0, LL128 1, SIMPLE 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NcclProto {
    Ll,
    Ll128,
    Simple,
}

impl NcclProto {
    pub const ALL: [NcclProto; 3] = [NcclProto::Ll, NcclProto::Ll128, NcclProto::Simple];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            NcclProto::Ll => "ll",
            NcclProto::Ll128 => "ll128",
            NcclProto::Simple => "simple",
        }
    }

    pub fn log_name(self) -> &'static str {
        match self {
            NcclProto::Ll => "LL",
            NcclProto::Ll128 => "LL128",
            NcclProto::Simple => "SIMPLE",
        }
    }

    /// As `NCCL_PROTO` spells it.
    pub fn env_name(self) -> &'static str {
        match self {
            NcclProto::Ll => "LL",
            NcclProto::Ll128 => "LL128",
            NcclProto::Simple => "Simple",
        }
    }

    pub(crate) fn from_number(n: u32) -> Option<NcclProto> {
        NcclProto::ALL.get(n as usize).copied()
    }
}

impl fmt::Display for NcclProto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.env_name())
    }
}

impl FromStr for NcclProto {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NcclProto::ALL
            .into_iter()
            .find(|p| p.log_name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownName {
                what: "NCCL protocol",
                given: s.trim().to_string(),
                expected: NcclProto::ALL.iter().map(|p| p.name()).collect(),
            })
    }
}

/// `2.22.3` (as the backend formats `ncclGetVersion`) as its code, 22203.
pub fn version_code(text: &str) -> Option<i32> {
    let mut it = text.trim().split('.').map(|x| x.parse::<i32>().ok());
    let (major, minor, patch) = (it.next()??, it.next()??, it.next().flatten().unwrap_or(0));
    Some(major * 10000 + minor * 100 + patch)
}

/// The NCCL version (`ncclGetVersion` code) that cannot honour a forced algorithm, as one
/// sentence with the fix; `None` when it can. Every protocol is older than NCCL 2.10, the
/// oldest the CUDA backend runs on.
pub fn version_refusal(algo: NcclAlgo, code: i32, version_text: &str) -> Option<String> {
    let since = algo.since_version();
    (code < since).then(|| {
        format!(
            "NCCL {version_text} does not know the algorithm {} (NCCL {}.{} or newer): load a newer NCCL or force another algorithm",
            algo.env_name(),
            since / 10000,
            since / 100 % 100
        )
    })
}

/// NCCL's algorithms for each collective it has kernels for: NCCL's own table
/// (`algos_of_coll` in `src/device/generate.py`, 2.23 to 2.29). `ddp_step` all-reduces its
/// gradients; all-to-all is NCCL send/recv, which no algorithm applies to.
pub fn algos_of(w: Workload) -> Option<&'static [NcclAlgo]> {
    use NcclAlgo::*;
    match w {
        Workload::Allreduce | Workload::DdpStep => {
            Some(&[Tree, Ring, CollnetDirect, CollnetChain, Nvls, NvlsTree])
        }
        Workload::Allgather | Workload::ReduceScatter => Some(&[Ring, CollnetDirect, Nvls, Pat]),
        Workload::Broadcast | Workload::Reduce => Some(&[Ring]),
        Workload::Alltoall | Workload::Matmul | Workload::BatchMatmul | Workload::Replay => None,
    }
}

/// Why NCCL has no kernel for a case forced to `algo` / `proto`, as one sentence with the fix;
/// `None` when it has one (or nothing is forced). NCCL builds (`generate.py`'s
/// `required_cuda`): LL and LL128 only with Ring and Tree; NVLS and NVLS_TREE reductions only
/// for integer sum/min/max, f32/f64 sum, f16/bf16 sum/min/max. Under NCCL 2.24+ such a forced
/// value fails the call; before, NCCL quietly chose another: either way the case would not
/// measure what its label says.
pub fn no_kernel(
    w: Workload,
    dtype: Dtype,
    op: ReduceOp,
    algo: Option<NcclAlgo>,
    proto: Option<NcclProto>,
) -> Option<String> {
    if algo.is_none() && proto.is_none() {
        return None;
    }
    let forced = match (algo, proto) {
        (Some(a), Some(p)) => format!("NCCL_ALGO={} NCCL_PROTO={}", a.env_name(), p.env_name()),
        (Some(a), None) => format!("NCCL_ALGO={}", a.env_name()),
        (None, Some(p)) => format!("NCCL_PROTO={}", p.env_name()),
        (None, None) => String::new(),
    };
    let Some(algos) = algos_of(w) else {
        return matches!(w, Workload::Alltoall).then(|| {
            format!("{w} is NCCL send/recv, which {forced} does not apply to: force it on the other collectives only")
        });
    };
    let a = algo?;
    if !algos.contains(&a) {
        let names: Vec<&str> = algos.iter().map(|x| x.name()).collect();
        return Some(format!(
            "NCCL has no {} algorithm for {w} (it has {}): force one of those for {w}, or sweep the algorithm per collective",
            a.name(),
            names.join(", ")
        ));
    }
    if let Some(p) = proto.filter(|p| *p != NcclProto::Simple) {
        if !matches!(a, NcclAlgo::Ring | NcclAlgo::Tree) {
            return Some(format!(
                "NCCL runs {} only with the simple protocol, not {}: force ring or tree with {}, or simple with {}",
                a.name(),
                p.name(),
                p.name(),
                a.name()
            ));
        }
    }
    let reduces = matches!(
        w,
        Workload::Allreduce | Workload::ReduceScatter | Workload::DdpStep
    );
    if reduces && matches!(a, NcclAlgo::Nvls | NcclAlgo::NvlsTree) {
        let ok = match dtype {
            Dtype::I32 | Dtype::F16 | Dtype::Bf16 => {
                matches!(op, ReduceOp::Sum | ReduceOp::Min | ReduceOp::Max)
            }
            Dtype::F32 | Dtype::F64 => op == ReduceOp::Sum,
        };
        if !ok {
            return Some(format!(
                "NCCL's {} reduces only integer sum/min/max, f32 and f64 sum, and f16/bf16 sum/min/max, not {dtype} {op}: force another algorithm for it",
                a.name()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against NCCL's table (generate.py): every workload × algorithm × protocol pair.
    #[test]
    fn kernels_follow_nccls_table() {
        use Workload as W;
        let none = |w, a, p| no_kernel(w, Dtype::F32, ReduceOp::Sum, a, p);
        assert_eq!(none(W::Allgather, None, None), None);
        let tree = Some(NcclAlgo::Tree);
        let m = none(W::Allgather, tree, None).unwrap();
        assert!(
            m.contains("no tree algorithm for allgather (it has ring, collnet_direct, nvls, pat)"),
            "{m}"
        );
        assert!(none(W::Broadcast, Some(NcclAlgo::Pat), None)
            .unwrap()
            .contains("(it has ring)"));
        assert!(none(W::Reduce, tree, None).is_some());
        assert_eq!(none(W::ReduceScatter, Some(NcclAlgo::Pat), None), None);
        assert_eq!(none(W::Allreduce, tree, Some(NcclProto::Ll128)), None);
        assert_eq!(
            none(
                W::DdpStep,
                Some(NcclAlgo::NvlsTree),
                Some(NcclProto::Simple)
            ),
            None
        );
        assert!(
            none(W::Allreduce, Some(NcclAlgo::Nvls), Some(NcclProto::Ll))
                .unwrap()
                .contains("only with the simple protocol")
        );
        assert!(none(W::Allgather, Some(NcclAlgo::Pat), Some(NcclProto::Ll128)).is_some());
        assert!(none(W::Alltoall, None, Some(NcclProto::Ll))
            .unwrap()
            .contains("send/recv"));
        assert_eq!(none(W::Matmul, tree, None), None);
        // NVLS reductions: the type/operator pairs NCCL builds.
        let nvls = Some(NcclAlgo::Nvls);
        for (dtype, op, ok) in [
            (Dtype::F32, ReduceOp::Sum, true),
            (Dtype::F32, ReduceOp::Max, false),
            (Dtype::F64, ReduceOp::Min, false),
            (Dtype::F16, ReduceOp::Max, true),
            (Dtype::Bf16, ReduceOp::Prod, false),
            (Dtype::I32, ReduceOp::Min, true),
            (Dtype::I32, ReduceOp::Avg, false),
        ] {
            let r = no_kernel(W::ReduceScatter, dtype, op, nvls, None);
            assert_eq!(r.is_none(), ok, "{dtype} {op}: {r:?}");
        }
        // Gathers do not reduce: any type goes.
        assert_eq!(
            no_kernel(W::Allgather, Dtype::F64, ReduceOp::Prod, nvls, None),
            None
        );
    }

    #[test]
    fn wire_names_and_spellings() {
        for a in NcclAlgo::ALL {
            for s in [a.name(), a.log_name(), a.env_name()] {
                assert_eq!(s.parse::<NcclAlgo>().unwrap(), a, "{s}");
            }
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{}\"", a.name()));
        }
        for p in NcclProto::ALL {
            for s in [p.name(), p.log_name(), p.env_name()] {
                assert_eq!(s.parse::<NcclProto>().unwrap(), p, "{s}");
            }
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
        }
        let e = "ring,tree".parse::<NcclAlgo>().unwrap_err().to_string();
        assert_eq!(e, "unknown NCCL algorithm 'ring,tree': expected one of tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat");
        assert!("^ll".parse::<NcclProto>().is_err());
    }

    #[test]
    fn versions() {
        assert_eq!(version_refusal(NcclAlgo::Pat, 22300, "2.23.4"), None);
        let m = version_refusal(NcclAlgo::Pat, 22203, "2.22.3").unwrap();
        assert_eq!(m, "NCCL 2.22.3 does not know the algorithm PAT (NCCL 2.23 or newer): load a newer NCCL or force another algorithm");
        assert!(version_refusal(NcclAlgo::NvlsTree, 21703, "2.17.3").is_some());
        assert!(version_refusal(NcclAlgo::Ring, 21000, "2.10.0").is_none());
        assert_eq!(version_code("2.22.3"), Some(22203));
        assert_eq!(version_code("2.28"), Some(22800));
        assert_eq!(version_code("x"), None);
    }
}
