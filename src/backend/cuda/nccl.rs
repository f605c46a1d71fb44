//! NCCL: type and operator mapping, the calls each collective makes (with nccl-tests'
//! in-place conventions), communicator set-up, and the tolerance NCCL's float average needs.
//!
//! One NCCL rank per GPU, numbered as the workloads number devices: global rank = process
//! rank × devices per process + local device. Pure MPI has one communicator per process
//! (`ncclCommInitRank`); hybrid creates one per local GPU inside one `ncclGroupStart/End`
//! (as nccl-tests does with `-g`). Every collective of all local devices is issued inside one
//! group, so one thread can drive several GPUs without deadlock.
//!
//! [`plan`] is pure: it says which NCCL calls a collective makes, on which buffer and at which
//! element offset. [`Resolved`] checks every range against the buffer it points into before a
//! device pointer is formed, so a planning mistake is an error, never an out-of-bounds access.

// The mapping, the library checks and the communicators here; which calls a collective makes
// in [`calls`] (pure); those calls checked against the device's buffers and issued in
// [`resolved`]. The tests stay inline: they reach into workload's patterns, which only tests
// may (see the layering test, tests/integration/layering.rs).
mod calls;
mod resolved;

pub use calls::PlanError;
pub(crate) use calls::{plan, IN_PLACE_ALLTOALL};
pub(crate) use resolved::{Region, Resolved};

use super::{CudaError, CudaResult};
use crate::params::{Dtype, ReduceOp};
use cudarc::nccl::result as nres;
use cudarc::nccl::sys as nsys;

/// NCCL's element type for a [`Dtype`].
pub(crate) fn nccl_type(d: Dtype) -> nsys::ncclDataType_t {
    use nsys::ncclDataType_t as T;
    match d {
        Dtype::F32 => T::ncclFloat32,
        Dtype::F64 => T::ncclFloat64,
        Dtype::I32 => T::ncclInt32,
        Dtype::F16 => T::ncclFloat16,
        Dtype::Bf16 => T::ncclBfloat16,
    }
}

/// NCCL's operator for a [`ReduceOp`] (`avg` is NCCL's native `ncclAvg`).
pub(crate) fn nccl_op(op: ReduceOp) -> nsys::ncclRedOp_t {
    use nsys::ncclRedOp_t as O;
    match op {
        ReduceOp::Sum => O::ncclSum,
        ReduceOp::Prod => O::ncclProd,
        ReduceOp::Min => O::ncclMin,
        ReduceOp::Max => O::ncclMax,
        ReduceOp::Avg => O::ncclAvg,
    }
}

/// `major.minor.patch` from `ncclGetVersion`'s code (X·10000+Y·100+Z since 2.9, X·1000+Y·100+Z
/// before).
pub(crate) fn format_version(code: i32) -> String {
    let (major, rest) = if code >= 10000 {
        (code / 10000, code % 10000)
    } else {
        (code / 1000, code % 1000)
    };
    format!("{major}.{}.{}", rest / 100, rest % 100)
}

/// Relative tolerance that NCCL's native average of floats over `n` ranks needs.
///
/// NCCL computes a float average as a pre-multiplied sum: every input is multiplied by
/// fl(1/n) and the products are summed (integers are summed, then divided exactly). When `n`
/// is a power of two, 1/n and every product are exact and the validation inputs keep every
/// partial sum exact, so the result is exact (0). Otherwise each product and each addition
/// rounds: with unit roundoff u of the element type, |result − mean| ≤ γ_{n+2}·mean|x|
/// (γ_m = m·u/(1 − m·u), one rounding for 1/n, one per product, n − 1 additions, one spare
/// for a scalar kept in f32). The validation inputs of an average are c + (2d − (n − 1)) with
/// mean c, so mean|x| ≤ (n + 1)·max(|c|, 1), which gives the bound relative to the checker's
/// max(|expected|, 1). nccl-tests allows 2 ulps for the same reason (its inputs have only two
/// non-zero ranks, ours all n).
pub(crate) fn avg_tolerance(dtype: Dtype, n: u32) -> f64 {
    if !dtype.is_float() || n.is_power_of_two() {
        return 0.0;
    }
    let u = 2f64.powi(-(dtype.exact_integer_bits() as i32));
    let mu = f64::from(n + 2) * u;
    if mu >= 0.5 {
        return 1.0;
    }
    (f64::from(n + 1) * mu / (1.0 - mu)).min(1.0)
}

/// The loaded NCCL's version, e.g. `2.28.3`.
pub(crate) fn version() -> CudaResult<String> {
    nres::get_nccl_version()
        .map(format_version)
        .map_err(|e| CudaError::nccl(None, e))
}

/// The oldest NCCL this build uses: native `ncclAvg` and `ncclBfloat16` came with 2.10.
pub(crate) const NCCL_FLOOR: i32 = 21000;

/// The sentence for an NCCL older than [`NCCL_FLOOR`], or `None`.
pub(crate) fn old_nccl_message(code: i32) -> Option<String> {
    (code < NCCL_FLOOR).then(|| {
        format!(
            "NCCL {} (libnccl.so) is older than {}, the oldest scalebench uses (native average and bfloat16): install NCCL {} or newer, or put its directory first in LD_LIBRARY_PATH",
            format_version(code),
            format_version(NCCL_FLOOR),
            format_version(NCCL_FLOOR)
        )
    })
}

/// Checks that the loaded NCCL has every entry point the backend calls and is new enough.
pub(crate) fn check_library() -> CudaResult<()> {
    let missing = super::probe::missing_nccl_symbols()?;
    if !missing.is_empty() {
        return Err(CudaError::Library(super::probe::missing_symbols_message(
            "NCCL (libnccl.so)",
            &missing,
            "install NCCL 2.10 or newer, or put its directory first in LD_LIBRARY_PATH",
        )));
    }
    let code = nres::get_nccl_version().map_err(|e| CudaError::nccl(None, e))?;
    match old_nccl_message(code) {
        Some(m) => Err(CudaError::Library(m)),
        None => Ok(()),
    }
}

/// The 128 bytes that name a communicator, made on one rank and sent to the others.
pub(crate) fn unique_id() -> CudaResult<Vec<u8>> {
    let id = nres::get_uniqueid().map_err(|e| CudaError::nccl(None, e))?;
    Ok(id.internal.iter().map(|&c| c as u8).collect())
}

/// The communicators of this process's GPUs, one per local device.
///
/// Dropped with `ncclCommAbort`: it frees local resources without waiting for peers, so a
/// process that leaves early (an error on one rank) cannot hang in teardown. All work is
/// synchronised before the backend drops, so nothing is in flight.
pub(crate) struct Comms {
    comms: Vec<nsys::ncclComm_t>,
}

impl Comms {
    /// Creates one communicator per entry of `contexts` with NCCL ranks `first_rank..`, in one
    /// group (required when one thread initialises several ranks). `bind(i)` makes device i's
    /// context current, as `ncclCommInitRank` takes the current device.
    pub(crate) fn init(
        id: &[u8],
        nranks: u32,
        first_rank: u32,
        local: usize,
        mut bind: impl FnMut(usize) -> CudaResult<()>,
    ) -> CudaResult<Comms> {
        let internal: [std::ffi::c_char; 128] = id
            .try_into()
            .map(|b: [u8; 128]| b.map(|x| x as std::ffi::c_char))
            .map_err(|_| {
                CudaError::Check(format!("an NCCL unique id has 128 bytes, not {}", id.len()))
            })?;
        let uid = nsys::ncclUniqueId { internal };
        let mut comms = Comms {
            comms: vec![std::ptr::null_mut(); local],
        };
        nres::group_start().map_err(|e| CudaError::nccl(None, e))?;
        let mut first_err = None;
        for i in 0..local {
            if let Err(e) = bind(i) {
                first_err.get_or_insert(e);
                break;
            }
            // SAFETY: `comms.comms[i]` is a valid place for NCCL to write the handle; `uid` is a
            // unique id produced by ncclGetUniqueId on rank 0 and copied byte for byte.
            let r = unsafe {
                nres::comm_init_rank(
                    &mut comms.comms[i],
                    nranks as i32,
                    uid,
                    (first_rank + i as u32) as i32,
                )
            };
            if let Err(e) = r {
                first_err.get_or_insert(CudaError::nccl(Some("ncclCommInitRank"), e));
                break;
            }
        }
        // The group must be closed even after an error, or NCCL stays in group mode.
        if let Err(e) = nres::group_end() {
            first_err.get_or_insert(CudaError::nccl(Some("ncclCommInitRank"), e));
        }
        match first_err {
            // `comms` drops here and aborts whatever was created.
            Some(e) => Err(e),
            None => Ok(comms),
        }
    }

    pub(crate) fn get(&self, i: usize) -> nsys::ncclComm_t {
        self.comms[i]
    }

    /// The first asynchronous error any communicator reports (a failed peer, a network
    /// error), as a sentence.
    pub(crate) fn check_async(&self) -> CudaResult<()> {
        for (i, &c) in self.comms.iter().enumerate() {
            let mut state = nsys::ncclResult_t::ncclSuccess;
            // SAFETY: `c` is a live communicator; NCCL writes one result code.
            let r = unsafe { nsys::ncclCommGetAsyncError(c, &mut state) };
            if r != nsys::ncclResult_t::ncclSuccess {
                return Err(CudaError::nccl(
                    Some("ncclCommGetAsyncError"),
                    nres::NcclError(r),
                ));
            }
            if !matches!(
                state,
                nsys::ncclResult_t::ncclSuccess | nsys::ncclResult_t::ncclInProgress
            ) {
                return Err(
                    CudaError::nccl(None, nres::NcclError(state)).context(format!(
                        "NCCL reported an asynchronous error on local device {i}"
                    )),
                );
            }
        }
        Ok(())
    }
}

impl Drop for Comms {
    fn drop(&mut self) {
        for c in self.comms.drain(..).filter(|c| !c.is_null()) {
            // SAFETY: `c` came from ncclCommInitRank and is released exactly once here.
            let _ = unsafe { nres::comm_abort(c) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::calls::*;
    use super::resolved::*;
    use super::*;
    use crate::backend::CollectiveCall;
    use crate::backend::HostBuf;
    use crate::params::Workload;
    use crate::workload::collective::counts;
    use crate::workload::pattern::{count_wrong, Pattern};

    #[test]
    fn types_and_ops_map_one_to_one() {
        use nsys::ncclDataType_t as T;
        use nsys::ncclRedOp_t as O;
        let t: Vec<T> = Dtype::ALL.iter().map(|d| nccl_type(*d)).collect();
        assert_eq!(
            t,
            vec![
                T::ncclFloat32,
                T::ncclFloat64,
                T::ncclInt32,
                T::ncclFloat16,
                T::ncclBfloat16
            ]
        );
        let o: Vec<O> = ReduceOp::ALL.iter().map(|d| nccl_op(*d)).collect();
        assert_eq!(
            o,
            vec![O::ncclSum, O::ncclProd, O::ncclMin, O::ncclMax, O::ncclAvg]
        );
        // NCCL's ABI values (nccl.h), which the library receives as integers
        assert_eq!(T::ncclFloat16 as u32, 6);
        assert_eq!(T::ncclBfloat16 as u32, 9);
        assert_eq!(O::ncclAvg as u32, 4);
    }

    #[test]
    fn the_nccl_floor_is_2_10() {
        assert_eq!(old_nccl_message(21000), None);
        assert_eq!(old_nccl_message(22803), None);
        let m = old_nccl_message(2903).unwrap();
        assert!(
            m.starts_with("NCCL 2.9.3 (libnccl.so) is older than 2.10.0"),
            "{m}"
        );
        assert!(m.contains("install NCCL 2.10.0 or newer"), "{m}");
    }

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
}
