//! rocBLAS (`librocblas.so`): handles bound to a stream, the version, and
//! `rocblas_gemm_strided_batched_ex`, the one GEMM the ROCm backend calls. The row-major
//! mapping, the dimension limits and the accumulation rule are the CUDA backend's
//! ([`crate::backend::gpu_gemm`]); this file holds rocBLAS's codes and its calls.
//!
//! Types: f32 and f64 compute in their own precision; f16 and bf16 inputs and outputs
//! accumulate in f32 (`rocblas_datatype_f32_r` compute), as cuBLAS's `CUBLAS_COMPUTE_32F`.

use super::error::{RocmError, RocmResult};
use super::hip::Stream;
use super::loader::{self, entry_points};
use crate::backend::gpu_gemm::{self, GemmUnsupported, Params};
use crate::backend::GemmBatch;
use crate::params::Dtype;
use std::ffi::{c_char, c_int, c_void, CStr};

/// A rocBLAS handle (`rocblas_handle`).
pub(crate) type Handle = *mut c_void;

/// The library's name in the sentences of [`GemmUnsupported`].
pub(crate) const LIBRARY: &str = "rocBLAS";

/// `rocblas_status_success`.
const SUCCESS: c_int = 0;
/// `rocblas_operation_none`.
const OP_NONE: c_int = 111;
/// `rocblas_gemm_algo_standard` and `rocblas_gemm_flags_none`.
const ALGO_STANDARD: c_int = 0;
const FLAGS_NONE: u32 = 0;

/// `rocblas_datatype` codes of the element types GEMMs take.
const F16_R: c_int = 150;
const F32_R: c_int = 151;
const F64_R: c_int = 152;
const BF16_R: c_int = 168;

/// Names tried, in order: the development link, then ROCm 6 and 5's sonames.
const NAMES: &[&str] = &["librocblas.so", "librocblas.so.4", "librocblas.so.3"];

/// The oldest rocBLAS the backend uses: 3.1.0, ROCm 5.7's (6.0 ships 4.0, 6.2 ships 4.2).
pub(crate) const ROCBLAS_FLOOR: (u32, u32, u32) = (3, 1, 0);
/// The floor as the sentences say it.
const FLOOR_TEXT: &str = "rocBLAS 3.1.0";

entry_points! {
    /// rocBLAS's entry points, each resolved once at set-up.
    pub(crate) struct Rocblas in "librocblas.so" since "rocBLAS 3.1.0" {
        create_handle = "rocblas_create_handle": fn(*mut Handle) -> c_int;
        destroy_handle = "rocblas_destroy_handle": fn(Handle) -> c_int;
        set_stream = "rocblas_set_stream": fn(Handle, Stream) -> c_int;
        get_version_string_size = "rocblas_get_version_string_size": fn(*mut usize) -> c_int;
        get_version_string = "rocblas_get_version_string": fn(*mut c_char, usize) -> c_int;
        status_to_string = "rocblas_status_to_string": fn(c_int) -> *const c_char;
        gemm_strided_batched_ex = "rocblas_gemm_strided_batched_ex": fn(
            Handle, c_int, c_int, c_int, c_int, c_int,
            *const c_void,
            *const c_void, c_int, c_int, i64,
            *const c_void, c_int, c_int, i64,
            *const c_void,
            *const c_void, c_int, c_int, i64,
            *mut c_void, c_int, c_int, i64,
            c_int, c_int, c_int, i32, u32,
        ) -> c_int;
    }
}

/// Element and compute types of one GEMM (`rocblas_datatype` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Types {
    pub data: c_int,
    pub compute: c_int,
}

fn code(dtype: Dtype) -> c_int {
    match dtype {
        Dtype::F16 => F16_R,
        Dtype::Bf16 => BF16_R,
        Dtype::F64 => F64_R,
        _ => F32_R,
    }
}

/// rocBLAS types for `dtype` (the compute type by the shared accumulation rule).
pub(crate) fn types(dtype: Dtype) -> Result<Types, GemmUnsupported> {
    let compute = gpu_gemm::compute_type(dtype, LIBRARY)?;
    Ok(Types {
        data: code(dtype),
        compute: code(compute),
    })
}

/// The rocBLAS call computing the row-major batch `b`.
pub(crate) fn row_major(b: &GemmBatch) -> Result<Params, GemmUnsupported> {
    gpu_gemm::row_major(b, LIBRARY)
}

/// `(major, minor, patch)` of rocBLAS's version string (`4.2.0.a42ef9b8`, `3.1.0-…`), or
/// `None` where it does not start with three numbers.
pub(crate) fn parse_version(s: &str) -> Option<(u32, u32, u32)> {
    let mut parts = s
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(str::parse::<u32>);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Ok(a)), Some(Ok(b)), Some(Ok(c))) => Some((a, b, c)),
        _ => None,
    }
}

impl Rocblas {
    /// Opens rocBLAS, resolves every entry point, and checks its version.
    pub(crate) fn open() -> RocmResult<Rocblas> {
        let lib = loader::open("rocBLAS", "librocblas.so", NAMES)?;
        let blas = Rocblas::resolve(lib)?;
        let v = blas.version()?;
        match parse_version(&v) {
            Some(found) if found >= ROCBLAS_FLOOR => Ok(blas),
            _ => Err(RocmError::TooOld {
                library: "librocblas.so",
                found: format!("rocBLAS {v}"),
                minimum: FLOOR_TEXT,
            }),
        }
    }

    /// `Ok` for `rocblas_status_success`, else the call's error with rocBLAS's name for it.
    pub(crate) fn check(&self, call: &'static str, status: c_int) -> RocmResult<()> {
        if status == SUCCESS {
            return Ok(());
        }
        // SAFETY: takes any status and returns a static string (or null).
        let p = unsafe { (self.status_to_string)(status) };
        let text = if p.is_null() {
            format!("status {status}")
        } else {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        Err(RocmError::Rocblas { call, status, text })
    }

    /// The version string, e.g. `4.2.0.a42ef9b8`.
    pub(crate) fn version(&self) -> RocmResult<String> {
        let mut n = 0usize;
        // SAFETY: rocBLAS writes one size_t.
        self.check("rocblas_get_version_string_size", unsafe {
            (self.get_version_string_size)(&mut n)
        })?;
        // A version string is short; a larger size is a broken library, not a reason to
        // allocate it.
        if n == 0 || n > 4096 {
            return Err(RocmError::Check(format!(
                "rocblas_get_version_string_size gave {n} bytes"
            )));
        }
        let mut buf = vec![0 as c_char; n];
        // SAFETY: the buffer holds the `n` bytes rocBLAS said the string needs.
        self.check("rocblas_get_version_string", unsafe {
            (self.get_version_string)(buf.as_mut_ptr(), n)
        })?;
        // Terminated whatever the library wrote (n > 0 was checked above).
        if let Some(last) = buf.last_mut() {
            *last = 0;
        }
        // SAFETY: NUL-terminated above, inside the buffer.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// A handle on the current HIP device that enqueues on `stream` (a live stream of it).
    pub(crate) fn handle(&self, stream: Stream) -> RocmResult<Handle> {
        let mut h = std::ptr::null_mut();
        // SAFETY: rocBLAS writes one handle.
        self.check("rocblas_create_handle", unsafe {
            (self.create_handle)(&mut h)
        })?;
        // SAFETY: `h` was just created; the stream is live and of the current device.
        let set = self.check("rocblas_set_stream", unsafe {
            (self.set_stream)(h, stream)
        });
        if let Err(e) = set {
            // SAFETY: created above and not used elsewhere.
            let _ = unsafe { self.destroy(h) };
            return Err(e);
        }
        Ok(h)
    }

    /// # Safety
    /// `h` came from [`Rocblas::handle`] and is destroyed once, its stream synchronised.
    pub(crate) unsafe fn destroy(&self, h: Handle) -> RocmResult<()> {
        // SAFETY: the caller's guarantee.
        self.check("rocblas_destroy_handle", unsafe {
            (self.destroy_handle)(h)
        })
    }

    /// Enqueues `p` on the handle's stream: C = A·B row-major, where `a`, `b` and `c` are our
    /// (row-major) operands (the library's A is our B: see [`crate::backend::gpu_gemm`]).
    ///
    /// # Safety
    /// `h` is a live handle whose device is current; `a`, `b` and `c` are live allocations of
    /// that device holding what `p` reads and writes, `c` overlaps neither `a` nor `b`, and all
    /// stay allocated until the handle's stream ran the call.
    pub(crate) unsafe fn gemm(
        &self,
        h: Handle,
        p: &Params,
        t: Types,
        a: *const c_void,
        b: *const c_void,
        c: *mut c_void,
    ) -> RocmResult<()> {
        let scalars = gpu_gemm::HostScalars::new();
        let (alpha, beta) = scalars.alpha_beta(t.compute == F64_R);
        // SAFETY: the caller guarantees the handle and operand ranges; alpha and beta are host
        // scalars of the compute type that live until the call returns (rocBLAS's default
        // pointer mode reads them before returning). C is passed as both C and D (beta = 0,
        // ldc = ldd), which rocBLAS allows.
        let status = unsafe {
            (self.gemm_strided_batched_ex)(
                h,
                OP_NONE,
                OP_NONE,
                p.m,
                p.n,
                p.k,
                alpha,
                b,
                t.data,
                p.lda,
                p.stride_a,
                a,
                t.data,
                p.ldb,
                p.stride_b,
                beta,
                c,
                t.data,
                p.ldc,
                p.stride_c,
                c,
                t.data,
                p.ldc,
                p.stride_c,
                p.batch,
                t.compute,
                ALGO_STANDARD,
                0,
                FLAGS_NONE,
            )
        };
        self.check("rocblas_gemm_strided_batched_ex", status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_compare_with_the_floor() {
        assert_eq!(parse_version("4.2.0.a42ef9b8"), Some((4, 2, 0)));
        assert_eq!(parse_version("3.1.0-dirty"), Some((3, 1, 0)));
        assert_eq!(parse_version(" 3.0.0 "), Some((3, 0, 0)));
        assert_eq!(parse_version("unknown"), None);
        assert_eq!(parse_version("4.2"), None);
        assert!(parse_version("3.0.9").unwrap() < ROCBLAS_FLOOR);
        assert!(parse_version("3.1.0").unwrap() >= ROCBLAS_FLOOR);
        assert!(parse_version("10.0.0").unwrap() >= ROCBLAS_FLOOR);
        assert_eq!(
            parse_version(FLOOR_TEXT.trim_start_matches("rocBLAS ")),
            Some(ROCBLAS_FLOOR)
        );
    }

    /// The element and compute codes are rocBLAS's (rocblas-types.h): f16/bf16 accumulate in
    /// f32, f64 in f64, i32 has no GEMM.
    #[test]
    fn types_follow_the_shared_accumulation_rule() {
        assert_eq!(
            types(Dtype::F32).unwrap(),
            Types {
                data: 151,
                compute: 151
            }
        );
        assert_eq!(
            types(Dtype::F64).unwrap(),
            Types {
                data: 152,
                compute: 152
            }
        );
        assert_eq!(
            types(Dtype::F16).unwrap(),
            Types {
                data: 150,
                compute: 151
            }
        );
        assert_eq!(
            types(Dtype::Bf16).unwrap(),
            Types {
                data: 168,
                compute: 151
            }
        );
        assert_eq!(
            types(Dtype::I32).unwrap_err().to_string(),
            "rocBLAS has no i32 GEMM: use f32, f64, f16 or bf16"
        );
    }
}
