//! NCCL: type and operator mapping, library checks, communicator set-up.
//!
//! One NCCL rank per GPU, numbered as the workloads number devices: global rank = process
//! rank × devices per process + local device. Pure MPI has one communicator per process
//! (`ncclCommInitRank`); hybrid creates one per local GPU inside one `ncclGroupStart/End`
//! (as nccl-tests does with `-g`). Every collective of all local devices is issued inside one
//! group, so one thread can drive several GPUs without deadlock.
//!
//! Which calls a collective makes, their checks against the buffers, the version encoding and
//! the average's tolerance are shared with RCCL (the ROCm backend) in
//! [`crate::backend::ccl`]; [`resolved`] issues those checked calls through cudarc.

mod resolved;

pub(crate) use crate::backend::ccl::calls::IN_PLACE_ALLTOALL;
pub use crate::backend::ccl::PlanError;
pub(crate) use crate::backend::ccl::{avg_tolerance, format_version, plan, Region, Resolved};

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
    use super::*;

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
        // the shared codes (RCCL's too) are cudarc's, value for value
        for &d in Dtype::ALL {
            assert_eq!(
                nccl_type(d) as i32,
                crate::backend::ccl::dtype_code(d),
                "{d}"
            );
        }
        for &op in ReduceOp::ALL {
            assert_eq!(nccl_op(op) as i32, crate::backend::ccl::op_code(op), "{op}");
        }
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
}
