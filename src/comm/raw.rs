//! Thin, checked wrappers over the MPI C calls on [`HostBuf`]s.
//!
//! rsmpi's safe API has no `MPI_IN_PLACE`, and the CPU backend needs both in-place and
//! out-of-place forms of every collective, so the data plane calls MPI directly here. Each
//! wrapper checks buffer lengths against the counts before handing pointers to MPI, so a
//! wrong count is a panic in our code (a bug), never memory corruption.

use crate::host::HostBuf;
use crate::params::{Dtype, ReduceOp};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::traits::Equivalence;
use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};

extern "C" {
    fn scalebench_mpi_in_place() -> *mut c_void;
}

/// The MPI library's `MPI_IN_PLACE`.
fn in_place() -> *mut c_void {
    // SAFETY: returns a constant from the MPI header; no arguments, no state.
    unsafe { scalebench_mpi_in_place() }
}

/// The MPI datatype for an element type. Half-precision types travel as 16-bit words (they
/// can be moved, not reduced, by MPI).
pub(crate) fn datatype(d: Dtype) -> ffi::MPI_Datatype {
    match d {
        Dtype::F32 => f32::equivalent_datatype().as_raw(),
        Dtype::F64 => f64::equivalent_datatype().as_raw(),
        Dtype::I32 => i32::equivalent_datatype().as_raw(),
        Dtype::F16 | Dtype::Bf16 => u16::equivalent_datatype().as_raw(),
    }
}

/// The MPI operator for a reduction; `avg` reduces with SUM (the caller divides).
pub(crate) fn operation(op: ReduceOp) -> ffi::MPI_Op {
    use mpi::collective::SystemOperation;
    match op {
        ReduceOp::Sum | ReduceOp::Avg => SystemOperation::sum().as_raw(),
        ReduceOp::Prod => SystemOperation::product().as_raw(),
        ReduceOp::Min => SystemOperation::min().as_raw(),
        ReduceOp::Max => SystemOperation::max().as_raw(),
    }
}

fn count(n: usize) -> c_int {
    c_int::try_from(n).expect("element count beyond MPI's int range (checked when planning)")
}

fn check(rc: c_int, what: &str) {
    // The default error handler aborts the job before we get here; this catches a library
    // configured to return errors.
    assert_eq!(rc, 0, "{what} returned MPI error code {rc}");
}

/// Source of an MPI call: a buffer, or the receive buffer itself (in place).
pub(crate) enum Src<'a> {
    Buf(&'a HostBuf),
    InPlace,
}

impl Src<'_> {
    fn ptr(&self) -> *const c_void {
        match self {
            Src::Buf(b) => b.as_ptr() as *const c_void,
            Src::InPlace => in_place(),
        }
    }
    fn assert_len(&self, n: usize, dtype: Dtype) {
        if let Src::Buf(b) = self {
            assert!(
                b.len() >= n && b.dtype() == dtype,
                "send buffer too short or mistyped"
            );
        }
    }
}

/// Which MPI collective a [`Prepared`] call issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Collective {
    Allreduce,
    Reduce,
    Bcast,
    Allgather,
    ReduceScatterBlock,
    Alltoall,
}

/// One MPI collective with every argument resolved and checked against its buffers.
///
/// [`Prepared::issue`] is the library call and its return-code check, nothing else: a timing
/// loop that issues it measures the MPI library, not this module's argument handling (the
/// datatype and operator lookups, the length checks, the `MPI_IN_PLACE` lookup), which
/// callgrind counted at about 80 instructions a call (docs/benchmarking.md).
pub(crate) struct Prepared<'a> {
    what: Collective,
    comm: ffi::MPI_Comm,
    send: *const c_void,
    send_count: c_int,
    recv: *mut c_void,
    recv_count: c_int,
    dtype: ffi::MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
    /// The buffers stay borrowed (and unaliased) while the call can be issued.
    _buffers: PhantomData<&'a mut HostBuf>,
}

impl Prepared<'_> {
    /// Issues the call (every rank of the communicator must issue its own).
    #[inline]
    pub(crate) fn issue(&mut self) {
        let p = &*self;
        // SAFETY: the pointers and counts were checked against the borrowed buffers when the
        // call was prepared, and the borrow keeps them alive and unaliased until it ends.
        let rc = unsafe {
            match p.what {
                Collective::Allreduce => {
                    ffi::MPI_Allreduce(p.send, p.recv, p.send_count, p.dtype, p.op, p.comm)
                }
                Collective::Reduce => {
                    ffi::MPI_Reduce(p.send, p.recv, p.send_count, p.dtype, p.op, p.root, p.comm)
                }
                Collective::Bcast => ffi::MPI_Bcast(p.recv, p.recv_count, p.dtype, p.root, p.comm),
                Collective::Allgather => ffi::MPI_Allgather(
                    p.send,
                    p.send_count,
                    p.dtype,
                    p.recv,
                    p.recv_count,
                    p.dtype,
                    p.comm,
                ),
                Collective::ReduceScatterBlock => ffi::MPI_Reduce_scatter_block(
                    p.send,
                    p.recv,
                    p.recv_count,
                    p.dtype,
                    p.op,
                    p.comm,
                ),
                Collective::Alltoall => ffi::MPI_Alltoall(
                    p.send,
                    p.send_count,
                    p.dtype,
                    p.recv,
                    p.recv_count,
                    p.dtype,
                    p.comm,
                ),
            }
        };
        if rc != 0 {
            failed(rc, p.what);
        }
    }
}

// The default error handler aborts the job before we get here; this catches a library
// configured to return errors. Out of line: the issue path stays a call and a compare.
#[cold]
#[inline(never)]
fn failed(rc: c_int, what: Collective) -> ! {
    panic!("MPI {what:?} returned MPI error code {rc}")
}

/// A prepared call's fields before the collective-specific ones are filled in.
fn prepared<'a>(what: Collective, comm: ffi::MPI_Comm, dt: Dtype) -> Prepared<'a> {
    Prepared {
        what,
        comm,
        send: std::ptr::null(),
        send_count: 0,
        recv: std::ptr::null_mut(),
        recv_count: 0,
        dtype: datatype(dt),
        op: operation(ReduceOp::Sum),
        root: 0,
        _buffers: PhantomData,
    }
}

pub(crate) fn prepare_allreduce<'a>(
    comm: ffi::MPI_Comm,
    src: Src<'a>,
    dst: &'a mut HostBuf,
    n: usize,
    op: ReduceOp,
) -> Prepared<'a> {
    let dt = dst.dtype();
    src.assert_len(n, dt);
    assert!(dst.len() >= n);
    Prepared {
        send: src.ptr(),
        send_count: count(n),
        recv: dst.as_mut_ptr() as *mut c_void,
        op: operation(op),
        ..prepared(Collective::Allreduce, comm, dt)
    }
}

pub(crate) fn allreduce(
    comm: ffi::MPI_Comm,
    src: Src<'_>,
    dst: &mut HostBuf,
    n: usize,
    op: ReduceOp,
) {
    prepare_allreduce(comm, src, dst, n, op).issue()
}

/// Reduce to `root`. `dst` is only written at the root; elsewhere pass `None`.
/// In place is only meaningful at the root (other ranks pass their send buffer).
pub(crate) fn prepare_reduce<'a>(
    comm: ffi::MPI_Comm,
    src: Src<'a>,
    dst: Option<&'a mut HostBuf>,
    dtype: Dtype,
    n: usize,
    op: ReduceOp,
    root: i32,
) -> Prepared<'a> {
    src.assert_len(n, dtype);
    let recv = match dst {
        Some(d) => {
            assert!(d.len() >= n && d.dtype() == dtype);
            d.as_mut_ptr() as *mut c_void
        }
        None => std::ptr::null_mut(),
    };
    Prepared {
        send: src.ptr(),
        send_count: count(n),
        recv,
        op: operation(op),
        root,
        ..prepared(Collective::Reduce, comm, dtype)
    }
}

pub(crate) fn reduce(
    comm: ffi::MPI_Comm,
    src: Src<'_>,
    dst: Option<&mut HostBuf>,
    dtype: Dtype,
    n: usize,
    op: ReduceOp,
    root: i32,
) {
    prepare_reduce(comm, src, dst, dtype, n, op, root).issue()
}

pub(crate) fn prepare_bcast(
    comm: ffi::MPI_Comm,
    buf: &mut HostBuf,
    n: usize,
    root: i32,
) -> Prepared<'_> {
    assert!(buf.len() >= n);
    Prepared {
        recv: buf.as_mut_ptr() as *mut c_void,
        recv_count: count(n),
        root,
        ..prepared(Collective::Bcast, comm, buf.dtype())
    }
}

pub(crate) fn bcast(comm: ffi::MPI_Comm, buf: &mut HostBuf, n: usize, root: i32) {
    prepare_bcast(comm, buf, n, root).issue()
}

/// All-gather of `n` elements per rank into `dst` (size × n). In place: each rank's input
/// is its own block of `dst`.
pub(crate) fn prepare_allgather<'a>(
    comm: ffi::MPI_Comm,
    size: usize,
    src: Src<'a>,
    dst: &'a mut HostBuf,
    n: usize,
) -> Prepared<'a> {
    let dt = dst.dtype();
    src.assert_len(n, dt);
    assert!(dst.len() >= n * size);
    Prepared {
        send: src.ptr(),
        // MPI ignores the send count and type in place.
        send_count: if matches!(src, Src::InPlace) {
            0
        } else {
            count(n)
        },
        recv: dst.as_mut_ptr() as *mut c_void,
        recv_count: count(n),
        ..prepared(Collective::Allgather, comm, dt)
    }
}

pub(crate) fn allgather(
    comm: ffi::MPI_Comm,
    size: usize,
    src: Src<'_>,
    dst: &mut HostBuf,
    n: usize,
) {
    prepare_allgather(comm, size, src, dst, n).issue()
}

/// Reduce-scatter with `n` result elements per rank. In place: the input is `dst`
/// (size × n) and the result lands in its first n elements (MPI's convention).
pub(crate) fn prepare_reduce_scatter_block<'a>(
    comm: ffi::MPI_Comm,
    size: usize,
    src: Src<'a>,
    dst: &'a mut HostBuf,
    n: usize,
    op: ReduceOp,
) -> Prepared<'a> {
    let dt = dst.dtype();
    src.assert_len(n * size, dt);
    match src {
        Src::InPlace => assert!(dst.len() >= n * size),
        Src::Buf(_) => assert!(dst.len() >= n),
    }
    Prepared {
        send: src.ptr(),
        recv: dst.as_mut_ptr() as *mut c_void,
        recv_count: count(n),
        op: operation(op),
        ..prepared(Collective::ReduceScatterBlock, comm, dt)
    }
}

pub(crate) fn reduce_scatter_block(
    comm: ffi::MPI_Comm,
    size: usize,
    src: Src<'_>,
    dst: &mut HostBuf,
    n: usize,
    op: ReduceOp,
) {
    prepare_reduce_scatter_block(comm, size, src, dst, n, op).issue()
}

/// All-to-all with `n` elements per peer (buffers of size × n).
pub(crate) fn prepare_alltoall<'a>(
    comm: ffi::MPI_Comm,
    size: usize,
    src: Src<'a>,
    dst: &'a mut HostBuf,
    n: usize,
) -> Prepared<'a> {
    let dt = dst.dtype();
    src.assert_len(n * size, dt);
    assert!(dst.len() >= n * size);
    Prepared {
        send: src.ptr(),
        send_count: if matches!(src, Src::InPlace) {
            0
        } else {
            count(n)
        },
        recv: dst.as_mut_ptr() as *mut c_void,
        recv_count: count(n),
        ..prepared(Collective::Alltoall, comm, dt)
    }
}

pub(crate) fn alltoall(
    comm: ffi::MPI_Comm,
    size: usize,
    src: Src<'_>,
    dst: &mut HostBuf,
    n: usize,
) {
    prepare_alltoall(comm, size, src, dst, n).issue()
}

fn displacements(counts: &[usize]) -> (Vec<c_int>, Vec<c_int>) {
    let c: Vec<c_int> = counts.iter().map(|n| count(*n)).collect();
    let mut d = Vec::with_capacity(c.len());
    let mut at: usize = 0;
    for n in counts {
        d.push(count(at));
        at += n;
    }
    (c, d)
}

/// Scatter with per-rank counts from `root`.
pub(crate) fn scatterv(
    comm: ffi::MPI_Comm,
    rank: usize,
    root_data: Option<&HostBuf>,
    counts: &[usize],
    out: &mut HostBuf,
    root: i32,
) {
    let dt = out.dtype();
    assert!(out.len() >= counts[rank]);
    let (c, d) = displacements(counts);
    let send = match root_data {
        Some(b) => {
            assert!(b.len() >= counts.iter().sum::<usize>() && b.dtype() == dt);
            b.as_ptr() as *const c_void
        }
        None => std::ptr::null(),
    };
    // SAFETY: the root's buffer holds the sum of counts; out holds this rank's count.
    let rc = unsafe {
        ffi::MPI_Scatterv(
            send,
            c.as_ptr(),
            d.as_ptr(),
            datatype(dt),
            out.as_mut_ptr() as *mut c_void,
            c[rank],
            datatype(dt),
            root,
            comm,
        )
    };
    check(rc, "MPI_Scatterv");
}

/// Gather with per-rank counts to `root`.
pub(crate) fn gatherv(
    comm: ffi::MPI_Comm,
    rank: usize,
    data: &HostBuf,
    counts: &[usize],
    root_out: Option<&mut HostBuf>,
    root: i32,
) {
    let dt = data.dtype();
    assert!(data.len() >= counts[rank]);
    let (c, d) = displacements(counts);
    let recv = match root_out {
        Some(b) => {
            assert!(b.len() >= counts.iter().sum::<usize>() && b.dtype() == dt);
            b.as_mut_ptr() as *mut c_void
        }
        None => std::ptr::null_mut(),
    };
    // SAFETY: data holds this rank's count; the root's buffer holds the sum of counts.
    let rc = unsafe {
        ffi::MPI_Gatherv(
            data.as_ptr() as *const c_void,
            c[rank],
            datatype(dt),
            recv,
            c.as_ptr(),
            d.as_ptr(),
            datatype(dt),
            root,
            comm,
        )
    };
    check(rc, "MPI_Gatherv");
}

/// An `MPI_Iallreduce` in flight. It must be completed ([`Pending::test`] returned true, or
/// [`Pending::wait`]) before its buffer is touched, moved out of or freed: the owner keeps
/// both together. Not `Send`: it is tested and waited on by the thread that started it.
pub(crate) struct Pending {
    req: ffi::MPI_Request,
    done: bool,
}

/// Starts an in-place sum (or other operator) of `n` elements of `buf` over `comm`.
///
/// # Safety
/// `buf` must hold `n` elements of `dtype`, stay allocated and untouched by anyone else until
/// the returned request completed.
pub(crate) unsafe fn iallreduce_in_place(
    comm: ffi::MPI_Comm,
    buf: *mut u8,
    dtype: Dtype,
    n: usize,
    op: ReduceOp,
) -> Pending {
    // SAFETY: a null request handle is a valid output slot.
    let mut req = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: the caller guarantees `buf` holds `n` elements of `dtype` and stays untouched
    // until the returned request completes; `req` is a valid output slot.
    let rc = unsafe {
        ffi::MPI_Iallreduce(
            in_place(),
            buf as *mut c_void,
            count(n),
            datatype(dtype),
            operation(op),
            comm,
            &mut req,
        )
    };
    check(rc, "MPI_Iallreduce");
    Pending { req, done: false }
}

impl Pending {
    /// One `MPI_Test`: drives the library's progress engine; true once the operation is done.
    pub(crate) fn test(&mut self) -> bool {
        if !self.done {
            let mut flag: c_int = 0;
            // SAFETY: an active request from MPI_Iallreduce (MPI sets it to null when done).
            let rc = unsafe { ffi::MPI_Test(&mut self.req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
            check(rc, "MPI_Test");
            self.done = flag != 0;
        }
        self.done
    }
    /// Whether a previous test or wait saw the operation done (no MPI call).
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }
}

/// The thread support MPI was initialised with (`MPI_Query_thread`): 0 single, 1 funneled,
/// 2 serialized, 3 multiple (the standard's order).
pub(crate) fn thread_level() -> c_int {
    let mut provided: c_int = 0;
    // SAFETY: an output integer; valid after MPI_Init.
    check(
        unsafe { ffi::MPI_Query_thread(&mut provided) },
        "MPI_Query_thread",
    );
    // The four levels are rsmpi's extern statics: plain integers, read-only after load.
    let levels = [
        // SAFETY: as above.
        unsafe { ffi::RSMPI_THREAD_SINGLE },
        // SAFETY: as above.
        unsafe { ffi::RSMPI_THREAD_FUNNELED },
        // SAFETY: as above.
        unsafe { ffi::RSMPI_THREAD_SERIALIZED },
        // SAFETY: as above.
        unsafe { ffi::RSMPI_THREAD_MULTIPLE },
    ];
    levels.iter().position(|l| *l == provided).unwrap_or(0) as c_int
}
