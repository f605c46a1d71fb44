//! The control plane: process-level communication on host memory.
//!
//! Ranks use it to agree (iteration counts, whether a case could start), to gather what rank 0
//! records (per-rank times, provenance) and to move batch_matmul's matrices. It is separate from
//! a backend's data plane (MPI collectives on host buffers, or NCCL on device buffers) so the
//! timing loop stays the same for every backend. [`SoloComm`] is the one-process version for
//! tests and benches; [`mpi::MpiComm`] is the real one.

#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(feature = "mpi")]
pub(crate) mod raw;
#[cfg(feature = "mpi")]
pub(crate) mod steps;

use crate::host::HostBuf;

/// Every failing rank's reason on every rank, `rank r: reason; …` in rank order (`local` is
/// empty on a rank that did not fail); collective. What the ranks print when they agree a
/// set-up failed, so that rank 0's sentence names each failing rank whichever one it is.
pub fn every_ranks_reasons<C: HostComm + ?Sized>(comm: &C, local: &str) -> String {
    let all = comm.gather_bytes(local.as_bytes());
    let mut text = Vec::new();
    if comm.is_root() {
        text = all
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.is_empty())
            .map(|(r, m)| format!("rank {r}: {}", String::from_utf8_lossy(m)))
            .collect::<Vec<_>>()
            .join("; ")
            .into_bytes();
    }
    comm.broadcast_bytes(&mut text);
    String::from_utf8_lossy(&text).into_owned()
}

/// Process-level collective operations. Every method is collective: all ranks call it in the
/// same order. Methods returning data "at the root" return it on rank 0 and an empty value
/// elsewhere.
pub trait HostComm {
    fn rank(&self) -> u32;
    fn size(&self) -> u32;
    fn barrier(&self);
    /// Maximum of `x` over ranks, on every rank.
    fn max_f64(&self, x: f64) -> f64;
    /// Element-wise maximum over ranks, in place, on every rank.
    fn max_f64_slice(&self, xs: &mut [f64]);
    /// Sum of `x` over ranks, on every rank.
    fn sum_u64(&self, x: u64) -> u64;
    /// `x` of every rank, at the root.
    fn gather_f64(&self, x: f64) -> Vec<f64>;
    /// `bytes` of every rank, at the root.
    fn gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>>;
    /// The root's `bytes`, on every rank.
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>);
    /// Scatters `root_data` (significant at the root only) so rank r gets `counts[r]` elements
    /// into `out` (which has `counts[rank]` elements).
    fn scatterv(&self, root_data: Option<&HostBuf>, counts: &[usize], out: &mut HostBuf);
    /// Gathers `data` (`counts[rank]` elements) into `root_out` (the root's, with the sum of
    /// `counts` elements) in rank order.
    fn gatherv(&self, data: &HostBuf, counts: &[usize], root_out: Option<&mut HostBuf>);
    /// Element-wise sum of `data` over ranks into `root_out` (at the root).
    fn reduce_sum(&self, data: &HostBuf, root_out: Option<&mut HostBuf>);

    /// True on every rank iff `ok` is true on every rank.
    fn all_ok(&self, ok: bool) -> bool {
        self.sum_u64(u64::from(!ok)) == 0
    }
    fn is_root(&self) -> bool {
        self.rank() == 0
    }
}

/// A world of one process.
#[derive(Debug, Default, Clone, Copy)]
pub struct SoloComm;

impl HostComm for SoloComm {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn barrier(&self) {}
    fn max_f64(&self, x: f64) -> f64 {
        x
    }
    fn max_f64_slice(&self, _xs: &mut [f64]) {}
    fn sum_u64(&self, x: u64) -> u64 {
        x
    }
    fn gather_f64(&self, x: f64) -> Vec<f64> {
        vec![x]
    }
    fn gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        vec![bytes.to_vec()]
    }
    fn broadcast_bytes(&self, _bytes: &mut Vec<u8>) {}
    fn scatterv(&self, root_data: Option<&HostBuf>, counts: &[usize], out: &mut HostBuf) {
        if let Some(src) = root_data {
            out.copy_from(0, src, 0, counts[0]);
        }
    }
    fn gatherv(&self, data: &HostBuf, counts: &[usize], root_out: Option<&mut HostBuf>) {
        if let Some(dst) = root_out {
            dst.copy_from(0, data, 0, counts[0]);
        }
    }
    fn reduce_sum(&self, data: &HostBuf, root_out: Option<&mut HostBuf>) {
        if let Some(dst) = root_out {
            dst.copy_from(0, data, 0, data.len());
        }
    }
}
