//! RCCL (`librccl.so`): NCCL's C API on AMD GPUs — version, unique id, communicators, groups,
//! the five collectives and send/recv (all-to-all), asynchronous errors. The calls a collective
//! makes and their checks are NCCL's too ([`crate::backend::ccl`]); this file issues them.

use super::error::{RocmError, RocmResult};
use super::hip::Stream;
use super::loader::{self, entry_points};
use crate::backend::ccl::{self, Call, Resolved};
use crate::params::Dtype;
use std::ffi::{c_char, c_int, c_void, CStr};

/// An RCCL communicator (`ncclComm_t`).
pub(crate) type Comm = *mut c_void;

/// `ncclUniqueId`: 128 bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct UniqueId {
    internal: [c_char; 128],
}

/// `ncclSuccess` and `ncclInProgress` (a non-blocking communicator still connecting).
const SUCCESS: c_int = 0;
const IN_PROGRESS: c_int = 7;

const NAMES: &[&str] = &["librccl.so", "librccl.so.1"];

/// The oldest RCCL the backend uses, as the NCCL version it reports: 2.17.1, ROCm 5.7's
/// (native average and bfloat16 came with NCCL 2.10).
pub(crate) const RCCL_FLOOR: i32 = 21701;

entry_points! {
    /// RCCL's entry points, each resolved once at set-up.
    pub(crate) struct Rccl in "librccl.so" since "RCCL 2.17.1" {
        get_version = "ncclGetVersion": fn(*mut c_int) -> c_int;
        get_unique_id = "ncclGetUniqueId": fn(*mut UniqueId) -> c_int;
        comm_init_rank = "ncclCommInitRank": fn(*mut Comm, c_int, UniqueId, c_int) -> c_int;
        comm_abort = "ncclCommAbort": fn(Comm) -> c_int;
        comm_get_async_error = "ncclCommGetAsyncError": fn(Comm, *mut c_int) -> c_int;
        group_start = "ncclGroupStart": fn() -> c_int;
        group_end = "ncclGroupEnd": fn() -> c_int;
        all_reduce = "ncclAllReduce": fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int;
        reduce = "ncclReduce": fn(*const c_void, *mut c_void, usize, c_int, c_int, c_int, Comm, Stream) -> c_int;
        broadcast = "ncclBroadcast": fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int;
        all_gather = "ncclAllGather": fn(*const c_void, *mut c_void, usize, c_int, Comm, Stream) -> c_int;
        reduce_scatter = "ncclReduceScatter": fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int;
        send = "ncclSend": fn(*const c_void, usize, c_int, c_int, Comm, Stream) -> c_int;
        recv = "ncclRecv": fn(*mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int;
        get_error_string = "ncclGetErrorString": fn(c_int) -> *const c_char;
    }
}

impl Rccl {
    /// Opens RCCL, resolves every entry point, and checks its version.
    pub(crate) fn open() -> RocmResult<Rccl> {
        let lib = loader::open("RCCL", "librccl.so", NAMES)?;
        let rccl = Rccl::resolve(lib)?;
        let v = rccl.version()?;
        if v < RCCL_FLOOR {
            return Err(RocmError::TooOld {
                library: "librccl.so",
                found: format!("RCCL {} (NCCL API)", ccl::format_version(v)),
                minimum: "RCCL 2.17.1",
            });
        }
        Ok(rccl)
    }

    /// `Ok` for `ncclSuccess`, else the call's error with RCCL's description.
    pub(crate) fn check(&self, call: &'static str, code: c_int) -> RocmResult<()> {
        if code == SUCCESS {
            return Ok(());
        }
        // SAFETY: takes any result code and returns a static string (or null).
        let p = unsafe { (self.get_error_string)(code) };
        let text = if p.is_null() {
            format!("result {code}")
        } else {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        Err(RocmError::Rccl { call, code, text })
    }

    /// The NCCL version RCCL reports (e.g. 22005 for 2.20.5).
    pub(crate) fn version(&self) -> RocmResult<i32> {
        let mut v = 0;
        // SAFETY: RCCL writes one int.
        self.check("ncclGetVersion", unsafe { (self.get_version)(&mut v) })?;
        Ok(v)
    }

    /// The 128 bytes that name a communicator, made on one rank and sent to the others.
    pub(crate) fn unique_id(&self) -> RocmResult<Vec<u8>> {
        let mut id = UniqueId { internal: [0; 128] };
        // SAFETY: RCCL writes the 128-byte id.
        self.check("ncclGetUniqueId", unsafe { (self.get_unique_id)(&mut id) })?;
        Ok(id.internal.iter().map(|&c| c as u8).collect())
    }

    pub(crate) fn group_start(&self) -> RocmResult<()> {
        // SAFETY: no arguments.
        self.check("ncclGroupStart", unsafe { (self.group_start)() })
    }

    pub(crate) fn group_end(&self) -> RocmResult<()> {
        // SAFETY: no arguments.
        self.check("ncclGroupEnd", unsafe { (self.group_end)() })
    }

    /// A communicator for rank `rank` of `nranks` on the current device.
    pub(crate) fn comm_init_rank(&self, id: &[u8], nranks: u32, rank: u32) -> RocmResult<Comm> {
        let internal: [c_char; 128] = id
            .try_into()
            .map(|b: [u8; 128]| b.map(|x| x as c_char))
            .map_err(|_| {
                RocmError::Check(format!("an RCCL unique id has 128 bytes, not {}", id.len()))
            })?;
        let mut comm = std::ptr::null_mut();
        // SAFETY: RCCL writes one handle; the id came from ncclGetUniqueId on rank 0, byte for
        // byte.
        self.check("ncclCommInitRank", unsafe {
            (self.comm_init_rank)(
                &mut comm,
                nranks as c_int,
                UniqueId { internal },
                rank as c_int,
            )
        })?;
        Ok(comm)
    }

    /// Frees a communicator without waiting for its peers.
    ///
    /// # Safety
    /// `c` came from [`Rccl::comm_init_rank`] and is released once.
    pub(crate) unsafe fn comm_abort(&self, c: Comm) -> RocmResult<()> {
        // SAFETY: the caller's guarantee.
        self.check("ncclCommAbort", unsafe { (self.comm_abort)(c) })
    }

    /// The communicator's asynchronous error (a failed peer, a network error), if any.
    pub(crate) fn async_error(&self, c: Comm) -> RocmResult<()> {
        let mut state = SUCCESS;
        // SAFETY: `c` is a live communicator of the backend's; RCCL writes one result code.
        self.check("ncclCommGetAsyncError", unsafe {
            (self.comm_get_async_error)(c, &mut state)
        })?;
        if state == SUCCESS || state == IN_PROGRESS {
            return Ok(());
        }
        self.check("an earlier RCCL call (asynchronous error)", state)
    }

    /// Enqueues one checked call on `stream`.
    ///
    /// # Safety
    /// `comm` is a live communicator of the device whose live stream `stream` is, and the
    /// regions `r` was checked against are live allocations of that device that stay
    /// allocated until the stream has run the call.
    pub(crate) unsafe fn launch(
        &self,
        r: &Resolved,
        dtype: Dtype,
        comm: Comm,
        stream: Stream,
    ) -> RocmResult<()> {
        let t = ccl::dtype_code(dtype);
        // SAFETY: every range was checked against its buffer in `Resolved::new`; the caller
        // guarantees the buffers, communicator and stream are live and of one device. Counts
        // and roots are those nccl.h documents for each call (RCCL keeps them).
        let (call, code) = unsafe {
            match r.call {
                Call::AllReduce { send, recv, op } => (
                    "ncclAllReduce",
                    (self.all_reduce)(
                        r.addr(send),
                        r.addr(recv),
                        send.len,
                        t,
                        ccl::op_code(op),
                        comm,
                        stream,
                    ),
                ),
                Call::Reduce {
                    send,
                    recv,
                    op,
                    root,
                } => (
                    "ncclReduce",
                    (self.reduce)(
                        r.addr(send),
                        r.addr(recv),
                        send.len,
                        t,
                        ccl::op_code(op),
                        root as c_int,
                        comm,
                        stream,
                    ),
                ),
                Call::Broadcast { send, recv, root } => (
                    "ncclBroadcast",
                    (self.broadcast)(
                        r.addr(send),
                        r.addr(recv),
                        send.len,
                        t,
                        root as c_int,
                        comm,
                        stream,
                    ),
                ),
                Call::AllGather { send, recv } => (
                    "ncclAllGather",
                    (self.all_gather)(r.addr(send), r.addr(recv), send.len, t, comm, stream),
                ),
                Call::ReduceScatter { send, recv, op } => (
                    "ncclReduceScatter",
                    (self.reduce_scatter)(
                        r.addr(send),
                        r.addr(recv),
                        recv.len,
                        t,
                        ccl::op_code(op),
                        comm,
                        stream,
                    ),
                ),
                Call::Send { send, peer } => (
                    "ncclSend",
                    (self.send)(r.addr(send), send.len, t, peer as c_int, comm, stream),
                ),
                Call::Recv { recv, peer } => (
                    "ncclRecv",
                    (self.recv)(r.addr(recv), recv.len, t, peer as c_int, comm, stream),
                ),
            }
        };
        self.check(call, code)
    }
}
