//! A links finding as results record it: the attribution's verdict with what the isolated
//! re-test said. Outside the `mpi` feature because `links --simulate` builds findings too.

use crate::links::attribution;
use crate::results::links::LinkFinding;

/// One attribution finding as results record it, with what the isolated re-test (if any) said;
/// the measured run and `links --simulate` both build theirs here.
pub(crate) fn link_finding(
    f: &attribution::Finding,
    isolated_ratio: Option<f64>,
    confirmed: bool,
    text: String,
) -> LinkFinding {
    let (kind, ranks) = f.suspect.kind_and_ranks();
    LinkFinding {
        kind: kind.into(),
        ranks,
        members: Vec::new(),
        ratio: f.ratio,
        z: f.z,
        confidence: f.confidence,
        isolated_ratio,
        confirmed,
        text,
    }
}
