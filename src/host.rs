//! Typed host buffers: what workloads fill and validate, what the control plane (`comm`) moves
//! and what the CPU backend computes on. A leaf: it knows only the element types (`params`).
//!
//! Every buffer is page-aligned (plus an optional offset, `--buffer-offset`) and zeroed, so
//! first touched, by the thread that allocates it. Why: `Vec`s carved back to back from the
//! heap often sit 16 bytes apart modulo 4096, and on CPUs with fast-string copies (ERMS/FSRM)
//! glibc's `memcpy` and MPI's local copies then run ~15× slower (4K aliasing), so a number
//! would depend on malloc history instead of the machine.
//!
//! Each buffer is its own anonymous mapping, outside the malloc heap, as OSU's buffers are in
//! practice (its `posix_memalign` of the largest size is above glibc's mmap threshold). From the
//! heap, the chunk after a buffer starts 16 bytes past the buffer's page offset, and that is
//! where Open MPI's per-call temporary (`malloc` in its reduction algorithms) often landed: the
//! kernel's CMA copy from the peer's buffer into it then ran 4K-aliased, a 64 KiB all-reduce
//! took 40 µs instead of 22 µs, and which of the two a run got depended on what the harness had
//! allocated before (docs/benchmarking.md, "The MPI library's temporaries").
use crate::params::Dtype;
use half::{bf16, f16};
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::OnceLock;

/// The OS page size, bytes (what every buffer is aligned to).
pub fn page_size_bytes() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no memory effects.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 && (p as usize).is_power_of_two() {
            p as usize
        } else {
            4096
        }
    })
}

/// How benchmark buffers are placed, for provenance.
pub fn alignment_policy(send_offset_bytes: usize, recv_offset_bytes: usize) -> String {
    format!(
        "page-aligned ({} B pages, one mapping each, outside the malloc heap) + offset {send_offset_bytes} B (send; matmul and batch_matmul: A, B) / {recv_offset_bytes} B (receive, in-place; matmul and batch_matmul: C); ddp_step: page-aligned, no offset; zeroed (first touched) by the thread that uses it",
        page_size_bytes()
    )
}

/// One anonymous mapping (whole pages); the buffer starts `offset` bytes into it.
struct AlignedMem {
    base: NonNull<u8>,
    /// Bytes mapped (a whole number of pages).
    mapped: usize,
    offset: usize,
    /// From the heap instead (page-aligned, this layout): `mmap` failed, e.g. at the kernel's
    /// limit on mappings (`vm.max_map_count`), and a buffer next to a heap temporary beats none.
    heap: Option<Layout>,
}

// SAFETY: AlignedMem owns its mapping like a Box<[u8]>; no thread-local state.
unsafe impl Send for AlignedMem {}
// SAFETY: `&AlignedMem` gives only reads; writes need `&mut` (as for Box<[u8]>).
unsafe impl Sync for AlignedMem {}

impl AlignedMem {
    /// `offset + bytes` bytes, page-aligned, zeroed by the calling thread (None when short of
    /// memory or the size overflows).
    fn zeroed(bytes: usize, offset: usize) -> Option<AlignedMem> {
        let mem = AlignedMem::uninit(bytes, offset)?;
        // The mapping reads as zeros already; writing them touches every page now, on this
        // thread (first touch places the pages on its NUMA node, and no fault is left for a
        // timed loop).
        // SAFETY: `mapped` writable bytes from `base`.
        unsafe { std::ptr::write_bytes(mem.base.as_ptr(), 0, mem.mapped) };
        Some(mem)
    }

    /// Like [`AlignedMem::zeroed`] but not yet touched: the caller must write every byte (the
    /// pages read as zeros until then).
    fn uninit(bytes: usize, offset: usize) -> Option<AlignedMem> {
        let page = page_size_bytes();
        let total = bytes.checked_add(offset)?.max(1);
        let mapped = total.checked_next_multiple_of(page)?;
        // Layout's limit (isize::MAX) keeps every later pointer offset in range.
        let layout = Layout::from_size_align(mapped, page).ok()?;
        // SAFETY: a fresh private anonymous mapping: no file, no existing memory touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            // SAFETY: the layout has a non-zero size.
            let base = NonNull::new(unsafe { std::alloc::alloc(layout) })?;
            return Some(AlignedMem {
                base,
                mapped,
                offset,
                heap: Some(layout),
            });
        }
        Some(AlignedMem {
            base: NonNull::new(p.cast::<u8>())?,
            mapped,
            offset,
            heap: None,
        })
    }

    fn ptr(&self) -> *mut u8 {
        // SAFETY: offset < mapped (or both 0 with a 1-page mapping).
        unsafe { self.base.as_ptr().add(self.offset) }
    }
}

impl Drop for AlignedMem {
    fn drop(&mut self) {
        match self.heap {
            // SAFETY: allocated by `uninit` with this layout; nothing borrows it any more.
            Some(layout) => unsafe { std::alloc::dealloc(self.base.as_ptr(), layout) },
            // SAFETY: mapped by `uninit` with this length; nothing borrows it any more.
            None => unsafe {
                libc::munmap(self.base.as_ptr().cast(), self.mapped);
            },
        }
    }
}

/// A host buffer of one element type, page-aligned plus an offset.
pub struct HostBuf {
    dtype: Dtype,
    len: usize,
    mem: AlignedMem,
}

impl Clone for HostBuf {
    /// A copy with the same offset, first touched by the cloning thread.
    fn clone(&self) -> Self {
        let mut b = HostBuf::zeros_at(self.dtype, self.len, self.mem.offset)
            .unwrap_or_else(|e| panic!("cloning a host buffer: {e}"));
        b.copy_from(0, self, 0, self.len);
        b
    }
}

impl PartialEq for HostBuf {
    /// Same dtype, length and elements (floats compare as floats: NaN ≠ NaN).
    fn eq(&self, other: &Self) -> bool {
        fn same<T: Element>(a: &HostBuf, b: &HostBuf) -> bool {
            a.slice::<T>() == b.slice::<T>()
        }
        self.dtype == other.dtype
            && self.len == other.len
            && match self.dtype {
                Dtype::F32 => same::<f32>(self, other),
                Dtype::F64 => same::<f64>(self, other),
                Dtype::I32 => same::<i32>(self, other),
                Dtype::F16 => same::<f16>(self, other),
                Dtype::Bf16 => same::<bf16>(self, other),
            }
    }
}

impl std::fmt::Debug for HostBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let head: Vec<f64> = (0..self.len.min(8)).map(|i| self.get(i)).collect();
        f.debug_struct("HostBuf")
            .field("dtype", &self.dtype)
            .field("len", &self.len)
            .field("page_offset_bytes", &self.page_offset_bytes())
            .field("head", &head)
            .finish()
    }
}

/// Conversion between element types and `f64`, in which all validation values are exact.
pub trait Element: Copy + Send + Sync + PartialEq + 'static {
    const DTYPE: Dtype;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

macro_rules! element {
    ($t:ty, $d:ident, |$v:ident| $from:expr, |$s:ident| $to:expr) => {
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$d;
            #[inline]
            fn from_f64($v: f64) -> Self {
                $from
            }
            #[inline]
            fn to_f64(self) -> f64 {
                let $s = self;
                $to
            }
        }
    };
}
element!(f32, F32, |v| v as f32, |s| f64::from(s));
element!(f64, F64, |v| v, |s| s);
element!(i32, I32, |v| v as i32, |s| f64::from(s));
element!(f16, F16, |v| f16::from_f64(v), |s| s.to_f64());
element!(bf16, Bf16, |v| bf16::from_f64(v), |s| s.to_f64());

/// Runs a generic function on the buffer's element type: `typed!(dtype, f, args...)` calls
/// `f::<T>(args...)`.
macro_rules! typed {
    ($dtype:expr, $f:ident, $($arg:expr),*) => {
        match $dtype {
            Dtype::F32 => $f::<f32>($($arg),*),
            Dtype::F64 => $f::<f64>($($arg),*),
            Dtype::I32 => $f::<i32>($($arg),*),
            Dtype::F16 => $f::<f16>($($arg),*),
            Dtype::Bf16 => $f::<bf16>($($arg),*),
        }
    };
}

/// A host allocation failed or was asked for an impossible placement.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AllocError {
    #[error("could not allocate {bytes} bytes of host memory for {count} {dtype} elements")]
    OutOfMemory {
        bytes: u64,
        count: usize,
        dtype: Dtype,
    },
    #[error("buffer offset {offset_bytes} B is not a multiple of the {dtype} element size ({elem_bytes} B): give --buffer-offset a multiple of {elem_bytes}")]
    MisalignedOffset {
        offset_bytes: usize,
        dtype: Dtype,
        elem_bytes: usize,
    },
}

impl HostBuf {
    /// A zero-filled, page-aligned buffer; fails cleanly (no abort) when memory is short.
    pub fn zeros(dtype: Dtype, count: usize) -> Result<HostBuf, AllocError> {
        HostBuf::zeros_at(dtype, count, 0)
    }

    /// A zero-filled buffer starting `offset_bytes` after a page boundary (a multiple of the
    /// element size), zeroed by the calling thread.
    pub fn zeros_at(
        dtype: Dtype,
        count: usize,
        offset_bytes: usize,
    ) -> Result<HostBuf, AllocError> {
        let elem = dtype.size_bytes() as usize;
        if offset_bytes % elem != 0 {
            return Err(AllocError::MisalignedOffset {
                offset_bytes,
                dtype,
                elem_bytes: elem,
            });
        }
        let oom = || AllocError::OutOfMemory {
            bytes: (count as u64).saturating_mul(elem as u64),
            count,
            dtype,
        };
        let bytes = count.checked_mul(elem).ok_or_else(oom)?;
        let mem = AlignedMem::zeroed(bytes, offset_bytes).ok_or_else(oom)?;
        Ok(HostBuf {
            dtype,
            len: count,
            mem,
        })
    }

    /// A zeroed buffer whose parts are first touched by several threads (each part a whole
    /// number of pages where the size allows): `touch` gets a function that zeroes part `w` of
    /// `parts` and should call it once per part, on the thread that will use that part (the
    /// hybrid workers). Parts it skips are zeroed by the calling thread afterwards.
    pub fn zeros_in_parts(
        dtype: Dtype,
        count: usize,
        parts: usize,
        touch: impl FnOnce(&(dyn Fn(usize) + Sync)),
    ) -> Result<HostBuf, AllocError> {
        let elem = dtype.size_bytes() as usize;
        let oom = || AllocError::OutOfMemory {
            bytes: (count as u64).saturating_mul(elem as u64),
            count,
            dtype,
        };
        let bytes = count.checked_mul(elem).ok_or_else(oom)?;
        let mem = AlignedMem::uninit(bytes, 0).ok_or_else(oom)?;
        let parts = parts.max(1);
        let page = page_size_bytes();
        let pages = bytes.div_ceil(page);
        let range = |w: usize| {
            let (a, b) = (pages * w / parts * page, pages * (w + 1) / parts * page);
            a.min(bytes)..b.min(bytes)
        };
        let done: Vec<std::sync::atomic::AtomicBool> =
            (0..parts).map(|_| Default::default()).collect();
        let base = mem.ptr() as usize;
        let zero = |w: usize| {
            if w < parts && !done[w].swap(true, std::sync::atomic::Ordering::AcqRel) {
                let r = range(w);
                // SAFETY: parts are disjoint byte ranges of the allocation and each is written
                // by one thread only (the swap above).
                unsafe { std::ptr::write_bytes((base + r.start) as *mut u8, 0, r.len()) };
            }
        };
        touch(&zero);
        (0..parts).for_each(zero);
        Ok(HostBuf {
            dtype,
            len: count,
            mem,
        })
    }

    /// A buffer whose element `i` is `f(i)` (converted to the element type).
    pub fn from_fn(
        dtype: Dtype,
        count: usize,
        f: impl Fn(usize) -> f64,
    ) -> Result<HostBuf, AllocError> {
        let mut b = HostBuf::zeros(dtype, count)?;
        b.fill_range(0, count, f);
        Ok(b)
    }

    /// The elements as a typed slice.
    ///
    /// # Panics
    /// If `T` is not the buffer's element type (a bug in the caller).
    pub fn slice<T: Element>(&self) -> &[T] {
        assert_eq!(self.dtype, T::DTYPE, "typed access with the wrong dtype");
        // SAFETY: the allocation holds len elements of T at ptr(), which is aligned for T
        // (page-aligned base, offset a multiple of the element size) and zero-initialised.
        unsafe { std::slice::from_raw_parts(self.mem.ptr() as *const T, self.len) }
    }

    /// The elements as a mutable typed slice (panics like [`HostBuf::slice`]).
    pub fn slice_mut<T: Element>(&mut self) -> &mut [T] {
        assert_eq!(self.dtype, T::DTYPE, "typed access with the wrong dtype");
        // SAFETY: as in `slice`, and `self` is borrowed exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.mem.ptr() as *mut T, self.len) }
    }

    /// Sets elements `start..start+len` to `f(j)` for `j` in `0..len`.
    pub fn fill_range(&mut self, start: usize, len: usize, f: impl Fn(usize) -> f64) {
        fn go<T: Element>(b: &mut HostBuf, start: usize, len: usize, f: &dyn Fn(usize) -> f64) {
            for (j, x) in b.slice_mut::<T>()[start..start + len]
                .iter_mut()
                .enumerate()
            {
                *x = T::from_f64(f(j));
            }
        }
        typed!(self.dtype, go, self, start, len, &f)
    }

    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn byte_len(&self) -> usize {
        self.len * self.dtype.size_bytes() as usize
    }

    /// Where the buffer starts within its page, bytes (the requested offset).
    pub fn page_offset_bytes(&self) -> usize {
        self.mem.ptr() as usize % page_size_bytes()
    }

    /// Element `i` as `f64`.
    pub fn get(&self, i: usize) -> f64 {
        fn go<T: Element>(b: &HostBuf, i: usize) -> f64 {
            b.slice::<T>()[i].to_f64()
        }
        typed!(self.dtype, go, self, i)
    }

    /// Sets element `i` from `f64`.
    pub fn set(&mut self, i: usize, x: f64) {
        fn go<T: Element>(b: &mut HostBuf, i: usize, x: f64) {
            b.slice_mut::<T>()[i] = T::from_f64(x);
        }
        typed!(self.dtype, go, self, i, x)
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.mem.ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.mem.ptr()
    }

    /// Copies `len` elements from `src[src_at..]` into `self[dst_at..]` (same dtype).
    pub fn copy_from(&mut self, dst_at: usize, src: &HostBuf, src_at: usize, len: usize) {
        assert_eq!(
            self.dtype(),
            src.dtype(),
            "copy between buffers of different dtypes"
        );
        let eb = self.dtype().size_bytes() as usize;
        assert!(dst_at + len <= self.len() && src_at + len <= src.len());
        // SAFETY: same element type, bounds checked above, and `self` and `src` are distinct
        // borrows (one mutable), so the ranges cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.as_ptr().add(src_at * eb),
                self.as_mut_ptr().add(dst_at * eb),
                len * eb,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `/proc/self/maps` line of the mapping holding `addr`.
    fn mapping_of(addr: usize) -> String {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .find(|l| {
                let range = l.split_whitespace().next().unwrap();
                let (a, b) = range.split_once('-').unwrap();
                let (a, b) = (
                    usize::from_str_radix(a, 16).unwrap(),
                    usize::from_str_radix(b, 16).unwrap(),
                );
                (a..b).contains(&addr)
            })
            .unwrap_or_else(|| panic!("{addr:#x} in no mapping"))
            .to_string()
    }

    #[test]
    fn buffers_live_outside_the_malloc_heap_so_no_heap_block_follows_them() {
        // 64 KiB: below glibc's mmap threshold, where a heap block would have been used and
        // the MPI library's next temporary would start 16 bytes past the buffer's page offset.
        for offset in [0, 64, 1024] {
            let b = HostBuf::zeros_at(Dtype::F32, 16384, offset).unwrap();
            let start = b.as_ptr() as usize;
            assert_eq!(start % page_size_bytes(), offset);
            let line = mapping_of(start);
            assert!(!line.ends_with("[heap]"), "buffer in the heap: {line}");
            // a heap block allocated next is not right behind the buffer's end
            let v: Vec<u8> = Vec::with_capacity(65536);
            let end = start + b.byte_len();
            let gap = (v.as_ptr() as usize).wrapping_sub(end);
            assert!(
                gap > page_size_bytes(),
                "a heap block {gap} B after the buffer"
            );
            assert!((0..b.len()).all(|i| b.get(i) == 0.0));
        }
    }

    #[test]
    fn typed_access() {
        for d in Dtype::ALL {
            let mut b = HostBuf::from_fn(*d, 10, |i| i as f64).unwrap();
            assert_eq!(b.dtype(), *d);
            assert_eq!(b.len(), 10);
            assert_eq!(b.byte_len() as u64, 10 * d.size_bytes());
            assert_eq!(b.get(7), 7.0);
            b.set(3, -2.0);
            assert_eq!(b.get(3), -2.0);
            let src = HostBuf::from_fn(*d, 4, |i| 100.0 + i as f64).unwrap();
            b.copy_from(5, &src, 1, 3);
            assert_eq!((b.get(5), b.get(7), b.get(8)), (101.0, 103.0, 8.0));
            let c = b.clone();
            assert_eq!(c, b);
            assert_eq!(c.page_offset_bytes(), b.page_offset_bytes());
        }
    }

    #[test]
    fn huge_allocation_fails_cleanly() {
        let e = HostBuf::zeros(Dtype::F64, usize::MAX / 4).unwrap_err();
        assert!(e.to_string().contains("could not allocate"), "{e}");
    }

    #[test]
    fn every_buffer_is_page_aligned_plus_its_offset() {
        let page = page_size_bytes();
        assert!(page.is_power_of_two() && page >= 4096);
        // Interleave sizes that glibc would carve back to back from one heap arena.
        let mut keep = Vec::new();
        for (i, count) in [1usize, 2, 3, 16, 1000, 4096, 1 << 18, 0]
            .iter()
            .enumerate()
        {
            for d in Dtype::ALL {
                let elem = d.size_bytes() as usize;
                for offset in [0, elem, 16 * elem, 3 * elem + 64, page - elem] {
                    let b = HostBuf::zeros_at(*d, *count, offset).unwrap();
                    assert_eq!(
                        b.as_ptr() as usize % page,
                        offset,
                        "{d} × {count} at {offset}"
                    );
                    assert_eq!(b.page_offset_bytes(), offset);
                    assert!(b.slice_mut_is_zero(), "{d} × {count}: zeroed");
                    if i % 2 == 0 {
                        keep.push(b);
                    }
                }
            }
        }
        // Two buffers allocated one after the other are a whole number of pages apart.
        let a = HostBuf::zeros(Dtype::F32, 4).unwrap();
        let b = HostBuf::zeros(Dtype::F32, 4).unwrap();
        assert_eq!(
            (b.as_ptr() as usize).wrapping_sub(a.as_ptr() as usize) % page,
            0
        );
    }

    #[test]
    fn parts_are_touched_by_their_threads_and_skipped_parts_zeroed() {
        let page = page_size_bytes();
        for (count, parts) in [(0usize, 2usize), (3, 2), (5 * page / 4, 3), (page, 4)] {
            let touched: Vec<std::sync::Mutex<Option<std::thread::ThreadId>>> =
                (0..parts).map(|_| Default::default()).collect();
            let b = HostBuf::zeros_in_parts(Dtype::F32, count, parts, |zero| {
                std::thread::scope(|s| {
                    // The last part is left to the fallback.
                    for (w, slot) in touched.iter().enumerate().take(parts - 1) {
                        s.spawn(move || {
                            zero(w);
                            *slot.lock().unwrap() = Some(std::thread::current().id());
                        });
                    }
                });
            })
            .unwrap();
            assert_eq!(b.len(), count);
            assert_eq!(b.page_offset_bytes(), 0);
            assert!(b.slice_mut_is_zero());
            assert!(touched[..parts - 1]
                .iter()
                .all(|t| t.lock().unwrap().is_some()));
        }
    }

    #[test]
    fn an_offset_off_the_element_grid_is_refused() {
        let e = HostBuf::zeros_at(Dtype::F64, 8, 4).unwrap_err();
        assert!(matches!(
            e,
            AllocError::MisalignedOffset { elem_bytes: 8, .. }
        ));
        assert!(e.to_string().contains("multiple of 8"), "{e}");
        HostBuf::zeros_at(Dtype::F32, 8, 4).unwrap();
    }

    impl HostBuf {
        fn slice_mut_is_zero(&self) -> bool {
            (0..self.len).all(|i| self.get(i) == 0.0)
        }
    }
}
