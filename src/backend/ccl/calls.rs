//! The library calls each collective makes (NCCL's API, which RCCL keeps), on which buffer and
//! at which element offset, with nccl-tests' in-place conventions. Pure: nothing here touches a
//! device.

use crate::backend::CollectiveCall;
use crate::params::{ReduceOp, Workload};

/// Which of a device's two buffers a pointer refers to (`Recv` is the only buffer in place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Send,
    Recv,
}

/// A range of elements in one of a device's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub side: Side,
    /// First element.
    pub at: usize,
    /// Elements NCCL reads or writes there.
    pub len: usize,
}

/// One NCCL call of one device. Counts are NCCL's (per rank) and roots are global ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    AllReduce {
        send: Span,
        recv: Span,
        op: ReduceOp,
    },
    Reduce {
        send: Span,
        recv: Span,
        op: ReduceOp,
        root: u32,
    },
    Broadcast {
        send: Span,
        recv: Span,
        root: u32,
    },
    AllGather {
        send: Span,
        recv: Span,
    },
    ReduceScatter {
        send: Span,
        recv: Span,
        op: ReduceOp,
    },
    Send {
        send: Span,
        peer: u32,
    },
    Recv {
        recv: Span,
        peer: u32,
    },
}

impl Call {
    /// Every range the call touches.
    pub fn spans(&self) -> Vec<Span> {
        match *self {
            Call::AllReduce { send, recv, .. }
            | Call::Reduce { send, recv, .. }
            | Call::Broadcast { send, recv, .. }
            | Call::AllGather { send, recv }
            | Call::ReduceScatter { send, recv, .. } => vec![send, recv],
            Call::Send { send, .. } => vec![send],
            Call::Recv { recv, .. } => vec![recv],
        }
    }
}

/// The NCCL calls device `device` (global index = NCCL rank) makes for `call`.
///
/// In place there is one buffer (`Recv`, [`CollectiveCall::in_place_count`] elements) and
/// nccl-tests' conventions hold: allgather sends from `recv + rank·sendcount`, reduce_scatter
/// receives into `recv + rank·recvcount` (the trait's default
/// `reduce_scatter_in_place_offset`), everything else reads and writes from element 0.
/// All-to-all is grouped send/recv per peer, as nccl-tests does; it has no in-place form
/// (sending from and receiving into one buffer in one group races).
pub(crate) fn plan(call: &CollectiveCall, device: u32) -> Result<Vec<Call>, PlanError> {
    let n = call.devices;
    if device >= n {
        return Err(PlanError::Device { device, n });
    }
    let op = call.op.unwrap_or(ReduceOp::Sum);
    let root = call.root.unwrap_or(0);
    if call.workload.has_root() && root >= n {
        return Err(PlanError::Root { root, n });
    }
    let (sc, rc) = (call.send_count, call.recv_count);
    let src_side = if call.in_place {
        Side::Recv
    } else {
        Side::Send
    };
    let span = |side, at, len| Span { side, at, len };
    let d = device as usize;
    Ok(match call.workload {
        Workload::Allreduce => vec![Call::AllReduce {
            send: span(src_side, 0, sc),
            recv: span(Side::Recv, 0, sc),
            op,
        }],
        Workload::Reduce => vec![Call::Reduce {
            send: span(src_side, 0, sc),
            recv: span(Side::Recv, 0, sc),
            op,
            root,
        }],
        Workload::Broadcast => vec![Call::Broadcast {
            send: span(src_side, 0, sc),
            recv: span(Side::Recv, 0, sc),
            root,
        }],
        Workload::Allgather => {
            if rc != sc * n as usize {
                return Err(PlanError::Counts {
                    what: "allgather",
                    into: "into",
                    sc,
                    rc,
                    n,
                });
            }
            let at = if call.in_place { d * sc } else { 0 };
            vec![Call::AllGather {
                send: span(src_side, at, sc),
                recv: span(Side::Recv, 0, rc),
            }]
        }
        Workload::ReduceScatter => {
            if sc != rc * n as usize {
                return Err(PlanError::Counts {
                    what: "reduce_scatter",
                    into: "into",
                    sc,
                    rc,
                    n,
                });
            }
            let at = if call.in_place { d * rc } else { 0 };
            vec![Call::ReduceScatter {
                send: span(src_side, 0, sc),
                recv: span(Side::Recv, at, rc),
                op,
            }]
        }
        Workload::Alltoall => alltoall(call)?,
        Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay => {
            return Err(PlanError::NotCollective(call.workload))
        }
    })
}

/// All-to-all as grouped send/recv: one chunk to and from every peer (out of place only).
fn alltoall(call: &CollectiveCall) -> Result<Vec<Call>, PlanError> {
    let n = call.devices;
    let (sc, rc) = (call.send_count, call.recv_count);
    if call.in_place {
        return Err(PlanError::InPlaceAlltoall);
    }
    if sc != rc || sc % n as usize != 0 {
        return Err(PlanError::Counts {
            what: "alltoall",
            into: "→",
            sc,
            rc,
            n,
        });
    }
    let chunk = sc / n as usize;
    Ok((0..n)
        .flat_map(|p| {
            let at = p as usize * chunk;
            [
                Call::Send {
                    send: Span {
                        side: Side::Send,
                        at,
                        len: chunk,
                    },
                    peer: p,
                },
                Call::Recv {
                    recv: Span {
                        side: Side::Recv,
                        at,
                        len: chunk,
                    },
                    peer: p,
                },
            ]
        })
        .collect())
}

/// A collective the NCCL calls cannot express, or a call outside its buffers: a bug in the
/// caller or an unsupported case, found before NCCL sees anything.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("device {device} outside a collective of {n} devices")]
    Device { device: u32, n: u32 },
    #[error("root {root} is not one of the {n} devices")]
    Root { root: u32, n: u32 },
    #[error("{what} of {sc} {into} {rc} elements over {n} devices")]
    Counts {
        what: &'static str,
        into: &'static str,
        sc: usize,
        rc: usize,
        n: u32,
    },
    #[error("{}", IN_PLACE_ALLTOALL)]
    InPlaceAlltoall,
    #[error("{0} is not a collective")]
    NotCollective(Workload),
    #[error("an in-place call refers to a send buffer")]
    NoSendBuffer,
    #[error("element range overflows")]
    Overflow,
    #[error("{call:?} reaches element {end} of a {len}-element {side:?} buffer")]
    OutOfRange {
        call: Call,
        end: usize,
        len: usize,
        side: Side,
    },
}

impl From<PlanError> for crate::backend::BackendError {
    fn from(e: PlanError) -> Self {
        crate::backend::BackendError::Device(crate::backend::DeviceError::Plan(e))
    }
}

/// Why in-place all-to-all is not measured on NCCL.
pub(crate) const IN_PLACE_ALLTOALL: &str = "NCCL has no in-place all-to-all (grouped send/recv from and into one buffer races; nccl-tests times it but does not check it): use --in-place no";
