//! What the hybrid path's workers share: element arithmetic for local reductions, raw pointers
//! that threads may share (each touching its own range per phase), the range kernels, and the
//! node-level scratch buffers.

use super::super::team::Team;
use crate::backend::{BackendResult, Element, HostBuf};
use crate::params::{Dtype, ReduceOp};
use std::ops::Range;

/// Element arithmetic for local reductions (integers wrap: timing loops repeat in-place sums
/// until values overflow, which must not panic).
pub(super) trait Arith: Element + Default {
    fn div_devices(self, n: u32) -> Self;

    /// d[i] = op(d[i], s[i]). The operator is chosen once, outside the loop, so each loop is
    /// a plain element-wise operation the compiler can vectorise (a function pointer called
    /// per element keeps it scalar).
    fn fold_slice(op: ReduceOp, d: &mut [Self], s: &[Self]);
}

/// d[i] = f(d[i], s[i]), inlined for each operator.
#[inline(always)]
fn zip_with<T: Copy>(d: &mut [T], s: &[T], f: impl Fn(T, T) -> T) {
    for (x, y) in d.iter_mut().zip(s) {
        *x = f(*x, *y);
    }
}

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            fn div_devices(self, n: u32) -> $t {
                self / n as $t
            }
            fn fold_slice(op: ReduceOp, d: &mut [$t], s: &[$t]) {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg => zip_with(d, s, |a, b| a + b),
                    ReduceOp::Prod => zip_with(d, s, |a, b| a * b),
                    ReduceOp::Min => zip_with(d, s, |a: $t, b| a.min(b)),
                    ReduceOp::Max => zip_with(d, s, |a: $t, b| a.max(b)),
                }
            }
        }
    };
}
float_arith!(f32);
float_arith!(f64);

impl Arith for i32 {
    fn div_devices(self, n: u32) -> i32 {
        self / n as i32
    }
    fn fold_slice(op: ReduceOp, d: &mut [i32], s: &[i32]) {
        match op {
            ReduceOp::Sum | ReduceOp::Avg => zip_with(d, s, i32::wrapping_add),
            ReduceOp::Prod => zip_with(d, s, i32::wrapping_mul),
            ReduceOp::Min => zip_with(d, s, |a: i32, b| a.min(b)),
            ReduceOp::Max => zip_with(d, s, |a: i32, b| a.max(b)),
        }
    }
}

/// A raw pointer that worker threads may share; every use touches a range no other thread
/// touches in the same phase (phases are separated by the team's barrier).
#[derive(Clone, Copy, PartialEq)]
#[repr(transparent)]
pub(super) struct SyncPtr<T>(pub(super) *mut T);
// SAFETY: the pointer is only dereferenced inside `unsafe` kernels whose callers give each
// thread a range no other thread touches in the same phase (see the type's doc).
unsafe impl<T> Send for SyncPtr<T> {}
// SAFETY: as for `Send`: sharing the pointer shares no access beyond those disjoint ranges.
unsafe impl<T> Sync for SyncPtr<T> {}

/// A buffer that only one worker of a team job uses exclusively (worker 0, for MPI), in a
/// phase where no other worker touches it.
pub(super) struct Excl<T>(pub(super) *mut T);
impl<T> Clone for Excl<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Excl<T> {}
// SAFETY: only worker 0 dereferences it (`get`/`at` are unsafe, their callers promise
// exclusive use in a phase where no other worker touches the value).
unsafe impl<T> Send for Excl<T> {}
// SAFETY: as for `Send`: the other workers hold it but never dereference it.
unsafe impl<T> Sync for Excl<T> {}

impl<T> Excl<T> {
    pub(super) fn new(t: &mut T) -> Self {
        Excl(t)
    }
    /// # Safety
    /// No other reference to the value is used while the returned one lives.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn get(&self) -> &mut T {
        // SAFETY: built from a live `&mut T`; the caller promises exclusive use (above).
        unsafe { &mut *self.0 }
    }
    /// Element `i` of the slice that starts here.
    ///
    /// # Safety
    /// As [`Excl::get`], and `i` within the slice.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn at(&self, i: usize) -> &mut T {
        // SAFETY: the caller promises `i` within the slice and exclusive use (above).
        unsafe { &mut *self.0.add(i) }
    }
}

/// The devices' source and destination pointers of the current hybrid collective, kept across
/// calls and rewritten only where they changed: the workers read them on every call, and a
/// store dirties a cache line in every other core even when it writes the same value.
#[derive(Default)]
pub(super) struct PtrTables {
    srcs: Vec<SyncPtr<()>>,
    dsts: Vec<SyncPtr<()>>,
}

impl PtrTables {
    pub(super) fn update<T>(
        &mut self,
        srcs: impl Iterator<Item = SyncPtr<T>>,
        dsts: impl Iterator<Item = SyncPtr<T>>,
    ) -> (&[SyncPtr<T>], &[SyncPtr<T>]) {
        fn set<T>(table: &mut Vec<SyncPtr<()>>, new: impl Iterator<Item = SyncPtr<T>>) {
            let mut n = 0;
            for (i, p) in new.enumerate() {
                let p = SyncPtr(p.0 as *mut ());
                match table.get_mut(i) {
                    Some(old) if *old == p => {}
                    Some(old) => *old = p,
                    None => table.push(p),
                }
                n = i + 1;
            }
            table.truncate(n);
        }
        set(&mut self.srcs, srcs);
        set(&mut self.dsts, dsts);
        let view = |t: &[SyncPtr<()>]| {
            // SAFETY: SyncPtr is a transparent raw pointer: the same layout for every T.
            unsafe { std::slice::from_raw_parts(t.as_ptr() as *const SyncPtr<T>, t.len()) }
        };
        (view(&self.srcs), view(&self.dsts))
    }
}

/// The rank's communicator inside a team job: used by worker 0 only (MPI_THREAD_FUNNELED).
#[derive(Clone, Copy)]
pub(super) struct LeaderComm(pub(super) mpi::ffi::MPI_Comm);
// SAFETY: see the type's doc.
unsafe impl Sync for LeaderComm {}

impl LeaderComm {
    pub(super) fn get(&self) -> mpi::ffi::MPI_Comm {
        self.0
    }
}

pub(super) fn typed<T: Element>(b: &HostBuf) -> SyncPtr<T> {
    assert_eq!(b.dtype(), T::DTYPE, "buffer of the wrong dtype");
    SyncPtr(b.as_ptr() as *mut T)
}

/// The slice of `0..len` worker `w` of `g` handles: boundaries on 64-element multiples, so
/// workers never write the same cache line (small messages fall to the first workers).
pub(super) fn chunk(len: usize, g: usize, w: usize) -> Range<usize> {
    const LINE: usize = 64;
    let lines = len.div_ceil(LINE);
    let at = |i: usize| (lines * i / g * LINE).min(len);
    at(w)..at(w + 1)
}

/// dst[r] = fold(op, srcs[..][r]).
///
/// # Safety
/// As [`fold_into`].
#[cfg(test)]
pub(super) unsafe fn reduce_range<T: Arith>(
    dst: SyncPtr<T>,
    srcs: &[SyncPtr<T>],
    r: Range<usize>,
    op: ReduceOp,
) {
    // SAFETY: the caller's contract is `fold_into`'s, for the range `r`.
    unsafe { fold_into(dst, r.start, srcs, r.start, r.len(), op) }
}

/// dst[at..at+len] = fold(op, srcs[..][from..from+len]). The destination may be the first
/// source's range itself (in place), never another source's.
///
/// # Safety
/// Every range valid; the destination range not used by another thread meanwhile.
pub(super) unsafe fn fold_into<T: Arith>(
    dst: SyncPtr<T>,
    at: usize,
    srcs: &[SyncPtr<T>],
    from: usize,
    len: usize,
    op: ReduceOp,
) {
    // SAFETY: the caller guarantees every range valid and the destination range ours alone;
    // the only overlap allowed (destination = first source) is skipped before the copy.
    unsafe {
        let d = dst.0.add(at);
        let first = srcs[0].0.add(from);
        if !std::ptr::eq(d, first) {
            std::ptr::copy_nonoverlapping(first, d, len);
        }
        let d = std::slice::from_raw_parts_mut(d, len);
        for s in &srcs[1..] {
            T::fold_slice(op, d, std::slice::from_raw_parts(s.0.add(from), len));
        }
    }
}

/// dst[r] /= n (the `avg` operator after a sum).
///
/// # Safety
/// The range valid and not used by another thread meanwhile.
pub(super) unsafe fn divide_range<T: Arith>(dst: SyncPtr<T>, r: Range<usize>, n: u32) {
    // SAFETY: the caller guarantees the range valid and not used by another thread.
    unsafe {
        for x in std::slice::from_raw_parts_mut(dst.0.add(r.start), r.len()) {
            *x = x.div_devices(n);
        }
    }
}

/// dst[at..at+len] = src[from..from+len], divided by `avg` devices if given.
///
/// # Safety
/// Both ranges valid; the destination range not aliased by another thread.
pub(super) unsafe fn copy_range<T: Arith>(
    dst: SyncPtr<T>,
    at: usize,
    src: SyncPtr<T>,
    from: usize,
    len: usize,
    avg: Option<u32>,
) {
    // SAFETY: the caller guarantees both ranges valid and the destination ours alone; equal
    // ranges return before the copy, so the slices never alias.
    unsafe {
        if std::ptr::eq(dst.0.add(at), src.0.add(from)) {
            if let Some(n) = avg {
                divide_range(dst, at..at + len, n);
            }
            return;
        }
        let d = std::slice::from_raw_parts_mut(dst.0.add(at), len);
        let s = std::slice::from_raw_parts(src.0.add(from), len);
        match avg {
            None => d.copy_from_slice(s),
            Some(n) => {
                for (x, y) in d.iter_mut().zip(s) {
                    *x = y.div_devices(n);
                }
            }
        }
    }
}

fn divide_all<T: Arith>(b: &mut HostBuf, len: usize, n: u32) {
    let p = typed::<T>(b);
    // SAFETY: b holds at least len elements (callers pass its count) and is exclusively borrowed.
    let s = unsafe { std::slice::from_raw_parts_mut(p.0, len) };
    for x in s {
        *x = x.div_devices(n);
    }
}

/// Divides the first `len` elements by `n` (the `avg` operator after an MPI sum).
pub(super) fn divide(b: &mut HostBuf, len: usize, n: u32) {
    match b.dtype() {
        Dtype::F32 => divide_all::<f32>(b, len, n),
        Dtype::F64 => divide_all::<f64>(b, len, n),
        Dtype::I32 => divide_all::<i32>(b, len, n),
        d => unreachable!("{d} is rejected by supports()"),
    }
}

/// The scratch buffer in `slot`, grown to `len` elements if needed (each worker first touches
/// its share of the pages).
pub(super) fn ensure<'a>(
    slot: &'a mut Option<HostBuf>,
    dtype: Dtype,
    len: usize,
    team: &Team,
) -> BackendResult<&'a mut HostBuf> {
    let fits = matches!(slot, Some(b) if b.dtype() == dtype && b.len() >= len);
    if !fits {
        *slot = None;
        *slot = Some(HostBuf::zeros_in_parts(dtype, len, team.size(), |zero| {
            team.run(move |w, _| zero(w))
        })?);
    }
    Ok(slot.as_mut().expect("just filled"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_partition_the_range() {
        for (len, g) in [(10, 3), (2, 4), (0, 2), (1000, 7), (1 << 20, 3)] {
            let mut next = 0;
            for w in 0..g {
                let r = chunk(len, g, w);
                assert_eq!(r.start, next);
                assert!(r.start % 64 == 0 || r.is_empty(), "{len} {g} {r:?}");
                next = r.end;
            }
            assert_eq!(next, len);
        }
        // Large messages are shared evenly (within a line of elements).
        let r = chunk(1 << 20, 3, 1);
        assert!(r.len().abs_diff((1 << 20) / 3) <= 64, "{r:?}");
    }

    #[test]
    fn local_reduction_kernels() {
        let a = HostBuf::from_fn(Dtype::I32, 4, |i| i as f64).unwrap();
        let b = HostBuf::from_fn(Dtype::I32, 4, |i| 10.0 - i as f64).unwrap();
        let mut d = HostBuf::zeros(Dtype::I32, 4).unwrap();
        let srcs = [typed::<i32>(&a), typed::<i32>(&b)];
        // SAFETY: all three buffers hold 4 elements and no other thread uses them.
        unsafe { reduce_range(typed::<i32>(&d), &srcs, 0..4, ReduceOp::Max) };
        assert_eq!(
            (0..4).map(|i| d.get(i)).collect::<Vec<_>>(),
            vec![10.0, 9.0, 8.0, 7.0]
        );
        // SAFETY: as above (1..3 is within the 4 elements).
        unsafe { reduce_range(typed::<i32>(&d), &srcs, 1..3, ReduceOp::Sum) };
        assert_eq!(
            (0..4).map(|i| d.get(i)).collect::<Vec<_>>(),
            vec![10.0, 10.0, 10.0, 7.0]
        );
        divide(&mut d, 4, 2);
        assert_eq!(
            (d.get(0), d.get(3)),
            (5.0, 3.0),
            "integer avg truncates like MPI users expect"
        );
        // integer overflow wraps instead of panicking
        let mut d = [i32::MAX, 7];
        <i32 as Arith>::fold_slice(ReduceOp::Prod, &mut d, &[2, 3]);
        assert_eq!(d, [-2, 21]);
        // every operator, float and integer, against the scalar definition
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max] {
            let a: Vec<f64> = (0..131).map(|i| (i % 7) as f64 - 3.0).collect();
            let b: Vec<f64> = (0..131).map(|i| (i % 5) as f64 - 2.0).collect();
            let mut d = a.clone();
            <f64 as Arith>::fold_slice(op, &mut d, &b);
            for i in 0..131 {
                let want = match op {
                    ReduceOp::Sum => a[i] + b[i],
                    ReduceOp::Prod => a[i] * b[i],
                    ReduceOp::Min => a[i].min(b[i]),
                    _ => a[i].max(b[i]),
                };
                assert_eq!(d[i], want, "{op:?} at {i}");
            }
        }
    }
}
