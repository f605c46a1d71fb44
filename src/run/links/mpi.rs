//! The MPI transport of `scalebench links`: host buffers, blocking send and receive, timed with
//! the wall clock on the sender (one way: until the receiver's one-byte acknowledgement).

use super::{Transport, TransportInfo};
use mpi::traits::*;
use std::time::Instant;

pub(super) struct MpiTransport<'a> {
    pub world: &'a mpi::topology::SimpleCommunicator,
    pub me: usize,
    pub send: Vec<u8>,
    pub recv: Vec<u8>,
}

/// The fault: sleep so the exchange took `1 + stretch` times as long.
fn stretched(t0: Instant, stretch: f64) -> f64 {
    if stretch > 0.0 {
        std::thread::sleep(t0.elapsed().mul_f64(stretch));
    }
    t0.elapsed().as_secs_f64()
}

impl Transport for MpiTransport<'_> {
    fn one_way(&mut self, from: usize, to: usize, stretch: f64) -> Option<f64> {
        if self.me == from {
            let t0 = Instant::now();
            let p = self.world.process_at_rank(to as i32);
            p.send(&self.send[..]);
            let mut ack = [0u8; 1];
            p.receive_into(&mut ack[..]);
            Some(stretched(t0, stretch))
        } else {
            let p = self.world.process_at_rank(from as i32);
            p.receive_into(&mut self.recv[..]);
            p.send(&[1u8][..]);
            None
        }
    }

    fn both_ways(&mut self, from: usize, to: usize, stretch: f64) -> f64 {
        let t0 = Instant::now();
        let (world, recv, send) = (self.world, &mut self.recv, &self.send);
        mpi::request::scope(|scope| {
            let r = world
                .process_at_rank(from as i32)
                .immediate_receive_into(scope, &mut recv[..]);
            let s = world
                .process_at_rank(to as i32)
                .immediate_send(scope, &send[..]);
            r.wait();
            s.wait();
        });
        stretched(t0, stretch)
    }

    fn describe(&self) -> TransportInfo {
        TransportInfo {
            name: "mpi",
            version: None,
            standin: None,
        }
    }
}
