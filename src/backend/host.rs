//! Typed host buffers: what workloads fill and validate, and what the CPU backend computes on.

use crate::params::Dtype;
use half::{bf16, f16};

/// A host buffer of one element type.
#[derive(Debug, Clone, PartialEq)]
pub enum HostBuf {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
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

/// Applies a generic expression to the typed vector inside a [`HostBuf`].
#[macro_export]
macro_rules! with_host_vec {
    ($buf:expr, |$v:ident| $body:expr) => {
        match $buf {
            $crate::backend::HostBuf::F32($v) => $body,
            $crate::backend::HostBuf::F64($v) => $body,
            $crate::backend::HostBuf::I32($v) => $body,
            $crate::backend::HostBuf::F16($v) => $body,
            $crate::backend::HostBuf::Bf16($v) => $body,
        }
    };
}

/// A host allocation failed (the message names the size).
#[derive(Debug, Clone, thiserror::Error)]
#[error("could not allocate {bytes} bytes of host memory for {count} {dtype} elements")]
pub struct AllocError {
    pub bytes: u64,
    pub count: usize,
    pub dtype: Dtype,
}

fn zeroed<T: Element + Default>(count: usize, dtype: Dtype) -> Result<Vec<T>, AllocError> {
    let mut v = Vec::new();
    v.try_reserve_exact(count).map_err(|_| AllocError {
        bytes: count as u64 * dtype.size_bytes(),
        count,
        dtype,
    })?;
    v.resize(count, T::default());
    Ok(v)
}

impl HostBuf {
    /// A zero-filled buffer; fails cleanly (no abort) when memory is short.
    pub fn zeros(dtype: Dtype, count: usize) -> Result<HostBuf, AllocError> {
        Ok(match dtype {
            Dtype::F32 => HostBuf::F32(zeroed(count, dtype)?),
            Dtype::F64 => HostBuf::F64(zeroed(count, dtype)?),
            Dtype::I32 => HostBuf::I32(zeroed(count, dtype)?),
            Dtype::F16 => HostBuf::F16(zeroed(count, dtype)?),
            Dtype::Bf16 => HostBuf::Bf16(zeroed(count, dtype)?),
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

    /// Sets elements `start..start+len` to `f(j)` for `j` in `0..len`.
    pub fn fill_range(&mut self, start: usize, len: usize, f: impl Fn(usize) -> f64) {
        fn go<T: Element>(v: &mut [T], start: usize, len: usize, f: &dyn Fn(usize) -> f64) {
            for (j, x) in v[start..start + len].iter_mut().enumerate() {
                *x = T::from_f64(f(j));
            }
        }
        with_host_vec!(self, |v| go(v, start, len, &f))
    }

    pub fn dtype(&self) -> Dtype {
        match self {
            HostBuf::F32(_) => Dtype::F32,
            HostBuf::F64(_) => Dtype::F64,
            HostBuf::I32(_) => Dtype::I32,
            HostBuf::F16(_) => Dtype::F16,
            HostBuf::Bf16(_) => Dtype::Bf16,
        }
    }

    pub fn len(&self) -> usize {
        with_host_vec!(self, |v| v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn byte_len(&self) -> usize {
        self.len() * self.dtype().size_bytes() as usize
    }

    /// Element `i` as `f64`.
    pub fn get(&self, i: usize) -> f64 {
        with_host_vec!(self, |v| v[i].to_f64())
    }

    /// Sets element `i` from `f64`.
    pub fn set(&mut self, i: usize, x: f64) {
        with_host_vec!(self, |v| v[i] = Element::from_f64(x))
    }

    pub fn as_ptr(&self) -> *const u8 {
        with_host_vec!(self, |v| v.as_ptr() as *const u8)
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        with_host_vec!(self, |v| v.as_mut_ptr() as *mut u8)
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
        }
    }

    #[test]
    fn huge_allocation_fails_cleanly() {
        let e = HostBuf::zeros(Dtype::F64, usize::MAX / 4).unwrap_err();
        assert!(e.to_string().contains("could not allocate"), "{e}");
    }
}
