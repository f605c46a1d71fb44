//! NCCL's algorithms and protocols: what its log names (`nccl_log`), what `--nccl-algo` /
//! `--nccl-proto` and the spec axes `nccl_algo` / `nccl_proto` force (one value each, applied
//! as `NCCL_ALGO` / `NCCL_PROTO` to a whole launch), and what a case records it ran with.
//!
//! Wire names (results, specs, the command line) are snake_case (`ring`, `nvls_tree`, `ll128`),
//! as NCCL's example tuner writes them; reading accepts NCCL's own spellings too (`NVLSTree`,
//! `NVLS_TREE`, `Simple`), any case. Lists and `^` exclusions are not accepted: a sweep's axis
//! is the list, and a case forced to "anything but Tree" could not say what it ran with.

use super::UnknownName;
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

#[cfg(test)]
mod tests {
    use super::*;

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
