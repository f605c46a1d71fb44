//! [`HostComm`] over a real MPI communicator (rsmpi).

use super::{raw, HostComm};
use crate::host::HostBuf;
use crate::params::ReduceOp;
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The control plane on an MPI communicator (a duplicate of the world, so control messages
/// never match a data-plane collective).
pub struct MpiComm {
    comm: SimpleCommunicator,
    rank: u32,
    size: u32,
}

impl MpiComm {
    pub fn new(world: &SimpleCommunicator) -> Self {
        let comm = world.duplicate();
        MpiComm {
            rank: comm.rank() as u32,
            size: comm.size() as u32,
            comm,
        }
    }

    pub fn raw(&self) -> mpi::ffi::MPI_Comm {
        self.comm.as_raw()
    }
}

impl HostComm for MpiComm {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn barrier(&self) {
        let _step = super::steps::control_step();
        self.comm.barrier();
    }
    fn max_f64(&self, x: f64) -> f64 {
        let _step = super::steps::control_step();
        let mut y = 0.0f64;
        self.comm
            .all_reduce_into(&x, &mut y, SystemOperation::max());
        y
    }
    fn max_f64_slice(&self, xs: &mut [f64]) {
        let _step = super::steps::control_step();
        if xs.is_empty() {
            return;
        }
        let src = xs.to_vec();
        self.comm
            .all_reduce_into(&src[..], xs, SystemOperation::max());
    }
    fn sum_u64(&self, x: u64) -> u64 {
        let _step = super::steps::control_step();
        let mut y = 0u64;
        self.comm
            .all_reduce_into(&x, &mut y, SystemOperation::sum());
        y
    }
    fn gather_f64(&self, x: f64) -> Vec<f64> {
        let _step = super::steps::control_step();
        let root = self.comm.process_at_rank(0);
        if self.rank == 0 {
            let mut v = vec![0.0f64; self.size as usize];
            root.gather_into_root(&x, &mut v[..]);
            v
        } else {
            root.gather_into(&x);
            Vec::new()
        }
    }
    fn gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let _step = super::steps::control_step();
        let root = self.comm.process_at_rank(0);
        let len = bytes.len() as i32;
        // An empty slice's pointer is dangling (address 1), which OpenMPI takes for
        // MPI_IN_PLACE and refuses on a non-root rank: send zero bytes from a real address.
        let none = [0u8; 1];
        let bytes = if bytes.is_empty() { &none[..0] } else { bytes };
        if self.rank == 0 {
            let mut lens = vec![0i32; self.size as usize];
            root.gather_into_root(&len, &mut lens[..]);
            let displs: Vec<i32> = lens
                .iter()
                .scan(0i32, |at, n| {
                    let d = *at;
                    *at += n;
                    Some(d)
                })
                .collect();
            let total: i32 = lens.iter().sum();
            let mut all = vec![0u8; total as usize];
            {
                let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
                root.gather_varcount_into_root(bytes, &mut part);
            }
            lens.iter()
                .zip(&displs)
                .map(|(n, d)| all[*d as usize..(*d + *n) as usize].to_vec())
                .collect()
        } else {
            root.gather_into(&len);
            root.gather_varcount_into(bytes);
            Vec::new()
        }
    }
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>) {
        let _step = super::steps::control_step();
        let root = self.comm.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        if len > 0 {
            root.broadcast_into(&mut bytes[..]);
        }
    }
    fn scatterv(&self, root_data: Option<&HostBuf>, counts: &[usize], out: &mut HostBuf) {
        let _step = super::steps::control_step();
        raw::scatterv(self.raw(), self.rank as usize, root_data, counts, out, 0);
    }
    fn gatherv(&self, data: &HostBuf, counts: &[usize], root_out: Option<&mut HostBuf>) {
        let _step = super::steps::control_step();
        raw::gatherv(self.raw(), self.rank as usize, data, counts, root_out, 0);
    }
    fn reduce_sum(&self, data: &HostBuf, root_out: Option<&mut HostBuf>) {
        let _step = super::steps::control_step();
        let n = data.len();
        raw::reduce(
            self.raw(),
            raw::Src::Buf(data),
            root_out,
            data.dtype(),
            n,
            ReduceOp::Sum,
            0,
        );
    }
}
