//! The shared plan and checks: nccl-tests' conventions, roots, all-to-all, every range inside
//! its buffer, and the average's tolerance against an emulation of NCCL's arithmetic.

use super::calls::*;
use super::region::*;
use super::*;
use crate::backend::CollectiveCall;
use crate::backend::HostBuf;
use crate::params::{ReduceOp, Workload};
use crate::workload::collective::counts;
use crate::workload::pattern::{count_wrong, Pattern};

#[test]
fn versions_decode_both_encodings() {
    assert_eq!(format_version(22803), "2.28.3");
    assert_eq!(format_version(21903), "2.19.3");
    assert_eq!(format_version(2804), "2.8.4");
}

fn call(w: Workload, bytes: u64, n: u32, in_place: bool) -> CollectiveCall {
    let c = counts(w, bytes, Dtype::F32, n).unwrap();
    CollectiveCall {
        workload: w,
        dtype: Dtype::F32,
        op: w.has_op().then_some(ReduceOp::Sum),
        root: w.has_root().then_some(n - 1),
        send_count: c.send_count as usize,
        recv_count: c.recv_count as usize,
        in_place,
        devices: n,
    }
}

/// Resolves every call of every device against buffers of the workload's sizes.
fn resolve_all(c: &CollectiveCall) -> Vec<Vec<Resolved>> {
    (0..c.devices)
        .map(|d| {
            let recv_len = if c.in_place {
                c.in_place_count()
            } else {
                c.recv_count
            };
            let send = (!c.in_place).then_some(Region {
                ptr: 0x1000,
                len: c.send_count,
            });
            let recv = Region {
                ptr: 0x8000_0000,
                len: recv_len,
            };
            plan(c, d)
                .unwrap()
                .into_iter()
                .map(|x| Resolved::new(x, send, recv, 4).unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn in_place_offsets_follow_nccl_tests() {
    let n = 4;
    // allgather in place: send from recv + rank·sendcount
    let c = call(Workload::Allgather, 4096, n, true);
    for d in 0..n {
        let p = plan(&c, d).unwrap();
        assert_eq!(
            p,
            vec![Call::AllGather {
                send: Span {
                    side: Side::Recv,
                    at: d as usize * c.send_count,
                    len: c.send_count
                },
                recv: Span {
                    side: Side::Recv,
                    at: 0,
                    len: c.recv_count
                },
            }]
        );
    }
    // reduce_scatter in place: receive into send + rank·recvcount, the trait's default
    let c = call(Workload::ReduceScatter, 4096, n, true);
    for d in 0..n {
        let Call::ReduceScatter { send, recv, .. } = plan(&c, d).unwrap()[0] else {
            panic!("not a reduce_scatter")
        };
        assert_eq!(
            (send.side, send.at, send.len),
            (Side::Recv, 0, c.send_count)
        );
        assert_eq!(
            (recv.side, recv.at),
            (Side::Recv, d as usize * c.recv_count)
        );
        let rs_default = d as usize * c.recv_count;
        assert_eq!(recv.at, rs_default);
    }
    // allreduce in place: one buffer, from 0
    let c = call(Workload::Allreduce, 1024, n, true);
    let Call::AllReduce { send, recv, .. } = plan(&c, 2).unwrap()[0] else {
        panic!()
    };
    assert_eq!(send, recv);
    assert_eq!((send.side, send.at, send.len), (Side::Recv, 0, 256));
}

#[test]
fn roots_are_global_device_indices() {
    let c = call(Workload::Reduce, 1024, 8, false);
    for d in 0..8 {
        match plan(&c, d).unwrap()[0] {
            Call::Reduce { root, send, .. } => {
                assert_eq!(root, 7);
                assert_eq!(send.side, Side::Send);
            }
            x => panic!("{x:?}"),
        }
    }
    let mut c = call(Workload::Broadcast, 1024, 8, false);
    c.root = Some(8);
    assert!(plan(&c, 0).unwrap_err().to_string().contains("root 8"));
}

#[test]
fn alltoall_is_grouped_send_recv_per_peer() {
    let c = call(Workload::Alltoall, 4096, 4, false);
    let chunk = c.send_count / 4;
    let p = plan(&c, 1).unwrap();
    assert_eq!(p.len(), 8);
    for (q, pair) in p.chunks(2).enumerate() {
        assert_eq!(
            pair[0],
            Call::Send {
                send: Span {
                    side: Side::Send,
                    at: q * chunk,
                    len: chunk
                },
                peer: q as u32
            }
        );
        assert_eq!(
            pair[1],
            Call::Recv {
                recv: Span {
                    side: Side::Recv,
                    at: q * chunk,
                    len: chunk
                },
                peer: q as u32
            }
        );
    }
    let c = call(Workload::Alltoall, 4096, 4, true);
    assert_eq!(plan(&c, 0).unwrap_err(), PlanError::InPlaceAlltoall);
    assert_eq!(PlanError::InPlaceAlltoall.to_string(), IN_PLACE_ALLTOALL);
}

#[test]
fn every_planned_range_fits_the_workloads_buffers() {
    for w in [
        Workload::Allreduce,
        Workload::Reduce,
        Workload::Broadcast,
        Workload::Allgather,
        Workload::ReduceScatter,
        Workload::Alltoall,
    ] {
        for n in [1, 2, 3, 8] {
            for in_place in [false, true] {
                if w == Workload::Alltoall && in_place {
                    continue;
                }
                let c = call(w, 3 << 12, n, in_place);
                let r = resolve_all(&c);
                assert_eq!(r.len(), n as usize);
            }
        }
    }
}

#[test]
fn addresses_are_byte_offsets_of_elements() {
    let c = call(Workload::Allgather, 4096, 4, true);
    let r = &resolve_all(&c)[3][0];
    let Call::AllGather { send, .. } = r.call else {
        panic!()
    };
    assert_eq!(
        r.addr(send) as u64,
        0x8000_0000 + (3 * c.send_count * 4) as u64
    );
}

#[test]
fn a_range_outside_its_buffer_is_refused() {
    let c = call(Workload::Allreduce, 1024, 2, false);
    let p = plan(&c, 0).unwrap()[0];
    let send = Some(Region { ptr: 1, len: 256 });
    let short = Region { ptr: 2, len: 255 };
    assert!(Resolved::new(p, send, short, 4)
        .unwrap_err()
        .to_string()
        .contains("element 256"));
    // in place with no send buffer, a send-side span is refused
    let rs = call(Workload::Alltoall, 1024, 2, false);
    let s = plan(&rs, 0).unwrap()[0];
    assert_eq!(
        Resolved::new(s, None, Region { ptr: 2, len: 256 }, 4).unwrap_err(),
        PlanError::NoSendBuffer
    );
}

/// NCCL's float average (pre-multiplied sum) emulated in the element type, in several
/// orders, on the workload's own validation inputs: exact for powers of two, within
/// [`avg_tolerance`] otherwise; and the tolerance is needed (some results are inexact).
#[test]
fn avg_tolerance_covers_nccls_premultiplied_sum() {
    let round = |d: Dtype, x: f64| {
        let mut b = HostBuf::zeros(d, 1).unwrap();
        b.set(0, x);
        b.get(0)
    };
    for dtype in [Dtype::F32, Dtype::F16, Dtype::Bf16, Dtype::F64] {
        let mut inexact = 0;
        for n in [2u32, 3, 4, 5, 6, 7, 8, 12, 24] {
            let p = Pattern::new(dtype, Some(ReduceOp::Avg), n);
            let tol = avg_tolerance(dtype, n);
            assert_eq!(tol == 0.0, n.is_power_of_two(), "{dtype} n={n}");
            let scalar = round(dtype, 1.0 / f64::from(n));
            let k_max = 700u64;
            let mut got = HostBuf::zeros(dtype, k_max as usize).unwrap();
            for order in 0..3 {
                for k in 0..k_max {
                    let mut terms: Vec<f64> = (0..n)
                        .map(|d| round(dtype, p.input(d, k) * scalar))
                        .collect();
                    match order {
                        0 => {}
                        1 => terms.reverse(),
                        _ => terms.sort_by(|a, b| b.abs().total_cmp(&a.abs())),
                    }
                    let s = terms.iter().fold(0.0, |acc, t| round(dtype, acc + t));
                    got.set(k as usize, s);
                }
                let wrong = count_wrong(&got, 0, k_max as usize, tol, |k| p.reduced(k as u64));
                assert_eq!(wrong, 0, "{dtype} n={n} order {order} tol {tol}");
                inexact += count_wrong(&got, 0, k_max as usize, 0.0, |k| p.reduced(k as u64));
            }
        }
        if dtype != Dtype::F64 {
            assert!(
                inexact > 0,
                "{dtype}: pre-multiplied average was always exact"
            );
        }
    }
}
