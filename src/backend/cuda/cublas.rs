//! cuBLAS: row-major strided-batched GEMM on column-major cuBLAS, type and math-mode choice,
//! and the handle.
//!
//! cuBLAS is column-major; the workloads store matrices row-major. A row-major m×n matrix
//! with leading dimension n is, read column-major, its n×m transpose. So C = A·B (row-major)
//! is computed as Cᵀ = Bᵀ·Aᵀ (column-major) with no transposition flags: cuBLAS's first
//! operand is our B, its second our A, and its (m, n) is our (n, m). [`row_major`] does that
//! mapping and is checked against a column-major reference in the tests.
//!
//! Types: f32 (FP32, or TF32 tensor cores when `SCALEBENCH_CUDA_TF32=1`), f64, and f16/bf16
//! inputs and outputs with f32 accumulation (`CUBLAS_COMPUTE_32F`), all through
//! `cublasGemmStridedBatchedEx`.

use super::{CudaError, CudaResult};
use crate::backend::{BackendError, GemmBatch};
use crate::params::Dtype;
use cudarc::cublas::result as bres;
use cudarc::cublas::sys as bsys;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, CudaStream};
use std::ffi::c_void;
use std::sync::Arc;

/// The environment variable that switches f32 GEMMs to TF32 tensor cores.
pub(crate) const TF32_ENV: &str = "SCALEBENCH_CUDA_TF32";

/// Whether `SCALEBENCH_CUDA_TF32` asks for TF32 (`1`, `true`, `yes`, `on`).
pub(crate) fn tf32_requested(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// One `cublasGemmStridedBatchedEx` call in cuBLAS's (column-major) terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Params {
    pub m: i32,
    pub n: i32,
    pub k: i32,
    /// cuBLAS's A is our B (k×n row-major = n×k column-major).
    pub lda: i32,
    /// cuBLAS's B is our A (m×k row-major = k×m column-major).
    pub ldb: i32,
    pub ldc: i32,
    /// Elements between consecutive matrices (0: every product uses the same matrix).
    pub stride_a: i64,
    pub stride_b: i64,
    pub stride_c: i64,
    pub batch: i32,
}

/// A GEMM cuBLAS cannot take (the case is unsupported, not failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GemmUnsupported {
    #[error(
        "{what} = {value} exceeds cuBLAS's 32-bit dimensions: use a smaller --dims or --batch"
    )]
    Dimension { what: &'static str, value: u64 },
    #[error("a {rows}×{cols} matrix is too large to address")]
    Matrix { rows: u64, cols: u64 },
    #[error("cuBLAS has no i32 GEMM: use f32, f64, f16 or bf16")]
    Int32,
}

impl From<GemmUnsupported> for BackendError {
    fn from(e: GemmUnsupported) -> BackendError {
        BackendError::Unsupported(e.to_string())
    }
}

fn int(what: &'static str, value: u64) -> Result<i32, GemmUnsupported> {
    i32::try_from(value).map_err(|_| GemmUnsupported::Dimension { what, value })
}

/// The cuBLAS call computing the row-major batch `b` (C_j = A_j·B_j, or A_j·B_0 when
/// `shared_b`).
pub(crate) fn row_major(b: &GemmBatch) -> Result<Params, GemmUnsupported> {
    let s = b.shape;
    let (m, n, k) = (int("m", s.m)?, int("n", s.n)?, int("k", s.k)?);
    let len = |rows: u64, cols: u64| {
        rows.checked_mul(cols)
            .and_then(|x| i64::try_from(x).ok())
            .ok_or(GemmUnsupported::Matrix { rows, cols })
    };
    Ok(Params {
        m: n,
        n: m,
        k,
        lda: n,
        ldb: k,
        ldc: n,
        stride_a: if b.shared_b { 0 } else { len(s.k, s.n)? },
        stride_b: len(s.m, s.k)?,
        stride_c: len(s.m, s.n)?,
        batch: int("batch", b.count as u64)?,
    })
}

/// Scalars of the GEMM (alpha = 1, beta = 0) in the compute type's precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scalars {
    F32,
    F64,
}

/// Element and compute types of one GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Types {
    pub data: bsys::cudaDataType,
    pub compute: bsys::cublasComputeType_t,
}

impl Types {
    fn scalars(&self) -> Scalars {
        match self.compute {
            bsys::cublasComputeType_t::CUBLAS_COMPUTE_64F => Scalars::F64,
            _ => Scalars::F32,
        }
    }
}

/// cuBLAS types for `dtype`; `tf32` selects TF32 tensor cores for f32.
pub(crate) fn types(dtype: Dtype, tf32: bool) -> Result<Types, GemmUnsupported> {
    use bsys::cublasComputeType_t as C;
    use bsys::cudaDataType as D;
    Ok(match dtype {
        Dtype::F32 => Types {
            data: D::CUDA_R_32F,
            compute: if tf32 {
                C::CUBLAS_COMPUTE_32F_FAST_TF32
            } else {
                C::CUBLAS_COMPUTE_32F
            },
        },
        Dtype::F64 => Types {
            data: D::CUDA_R_64F,
            compute: C::CUBLAS_COMPUTE_64F,
        },
        Dtype::F16 => Types {
            data: D::CUDA_R_16F,
            compute: C::CUBLAS_COMPUTE_32F,
        },
        Dtype::Bf16 => Types {
            data: D::CUDA_R_16BF,
            compute: C::CUBLAS_COMPUTE_32F,
        },
        Dtype::I32 => return Err(GemmUnsupported::Int32),
    })
}

/// The type GEMM products accumulate in: f32 for half-precision inputs.
pub(crate) fn accumulator(dtype: Dtype) -> Dtype {
    match dtype {
        Dtype::F16 | Dtype::Bf16 => Dtype::F32,
        d => d,
    }
}

/// `major.minor.patch` from cuBLAS's version number (major·10000 + minor·100 + patch).
pub(crate) fn format_version(v: i32) -> String {
    format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100)
}

/// A cuBLAS handle on one device, bound to that device's stream.
pub(crate) struct Blas {
    handle: bsys::cublasHandle_t,
    ctx: Arc<CudaContext>,
}

impl Blas {
    /// Creates a handle on `stream`'s device that enqueues on `stream`.
    pub(crate) fn new(stream: &Arc<CudaStream>) -> CudaResult<Blas> {
        let ctx = stream.context().clone();
        ctx.bind_to_thread().map_err(CudaError::driver)?;
        let handle = bres::create_handle().map_err(CudaError::cublas_call("cublasCreate"))?;
        let blas = Blas { handle, ctx };
        // SAFETY: the handle was just created; the stream is a live stream of the same device
        // and outlives the handle (both belong to the backend's device record).
        unsafe { bres::set_stream(blas.handle, stream.cu_stream() as _) }
            .map_err(CudaError::cublas_call("cublasSetStream"))?;
        Ok(blas)
    }

    /// The library's version, e.g. `13.0.0`.
    pub(crate) fn version(&self) -> CudaResult<String> {
        let mut v = 0;
        // SAFETY: live handle; cuBLAS writes one int.
        unsafe { bsys::cublasGetVersion_v2(self.handle, &mut v) }
            .result()
            .map_err(|code| CudaError::Cublas { call: None, code })?;
        Ok(format_version(v))
    }

    /// Enqueues `p` on the handle's stream: C = A·B row-major (see the module doc), where `a`,
    /// `b` and `c` are our (row-major) operands.
    ///
    /// # Safety
    /// `a`, `b` and `c` must be live allocations on this handle's device holding at least
    /// what `p` reads and writes (`batch` matrices at the strides, or one for a zero stride),
    /// `c` must not overlap `a` or `b`, and all must stay allocated until the stream ran the
    /// call.
    pub(crate) unsafe fn gemm(
        &self,
        p: &Params,
        t: Types,
        a: CUdeviceptr,
        b: CUdeviceptr,
        c: CUdeviceptr,
    ) -> CudaResult<()> {
        self.ctx.bind_to_thread().map_err(CudaError::driver)?;
        let (one32, zero32, one64, zero64) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
        let (alpha, beta): (*const c_void, *const c_void) = match t.scalars() {
            Scalars::F32 => (
                &one32 as *const f32 as *const c_void,
                &zero32 as *const f32 as *const c_void,
            ),
            Scalars::F64 => (
                &one64 as *const f64 as *const c_void,
                &zero64 as *const f64 as *const c_void,
            ),
        };
        // SAFETY: the caller guarantees the operand ranges (see above); alpha and beta point to
        // host scalars of the compute type that live until the call returns (cuBLAS reads host
        // scalars before returning in the default pointer mode).
        unsafe {
            bres::gemm_strided_batched_ex(
                self.handle,
                bsys::cublasOperation_t::CUBLAS_OP_N,
                bsys::cublasOperation_t::CUBLAS_OP_N,
                p.m,
                p.n,
                p.k,
                alpha,
                b as *const c_void,
                t.data,
                p.lda,
                p.stride_a,
                a as *const c_void,
                t.data,
                p.ldb,
                p.stride_b,
                beta,
                c as *mut c_void,
                t.data,
                p.ldc,
                p.stride_c,
                p.batch,
                t.compute,
                bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
            )
        }
        .map_err(CudaError::cublas_call("cublasGemmStridedBatchedEx"))
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: the handle was created in `new` and is destroyed exactly once here.
        let _ = unsafe { bres::destroy_handle(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::MatmulShape;

    /// cuBLAS's strided-batched GEMM semantics (column-major, no transposes) on flat arrays.
    fn column_major_reference(p: &Params, a: &[f64], b: &[f64], c: &mut [f64]) {
        for batch in 0..p.batch as usize {
            let (oa, ob, oc) = (
                batch * p.stride_a as usize,
                batch * p.stride_b as usize,
                batch * p.stride_c as usize,
            );
            for col in 0..p.n as usize {
                for row in 0..p.m as usize {
                    let mut s = 0.0;
                    for l in 0..p.k as usize {
                        s += a[oa + row + l * p.lda as usize] * b[ob + l + col * p.ldb as usize];
                    }
                    c[oc + row + col * p.ldc as usize] = s;
                }
            }
        }
    }

    #[test]
    fn row_major_mapping_computes_the_row_major_product() {
        for (shape, count, shared_b) in [
            (MatmulShape { m: 3, n: 5, k: 4 }, 1, false),
            (MatmulShape { m: 7, n: 2, k: 9 }, 3, false),
            (MatmulShape { m: 4, n: 6, k: 5 }, 2, true),
            (MatmulShape::square(8), 4, false),
        ] {
            let g = GemmBatch {
                shape,
                count,
                shared_b,
            };
            let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
            let a: Vec<f64> = (0..count * m * k).map(|i| (i % 7) as f64 - 3.0).collect();
            let nb = if shared_b { 1 } else { count };
            let b: Vec<f64> = (0..nb * k * n).map(|i| (i % 5) as f64 - 2.0).collect();
            let p = row_major(&g).unwrap();
            let mut c = vec![f64::NAN; count * m * n];
            // cuBLAS's A operand is our B, its B our A (see the module doc)
            column_major_reference(&p, &b, &a, &mut c);
            for j in 0..count {
                let bj = if shared_b { 0 } else { j * k * n };
                for i in 0..m {
                    for col in 0..n {
                        let want: f64 = (0..k)
                            .map(|l| a[j * m * k + i * k + l] * b[bj + l * n + col])
                            .sum();
                        assert_eq!(
                            c[j * m * n + i * n + col],
                            want,
                            "{shape} j={j} ({i},{col})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn parameters_for_a_square_batch() {
        let g = GemmBatch {
            shape: MatmulShape { m: 2, n: 3, k: 4 },
            count: 5,
            shared_b: false,
        };
        let p = row_major(&g).unwrap();
        assert_eq!((p.m, p.n, p.k), (3, 2, 4));
        assert_eq!((p.lda, p.ldb, p.ldc), (3, 4, 3));
        assert_eq!((p.stride_a, p.stride_b, p.stride_c, p.batch), (12, 8, 6, 5));
        let shared = row_major(&GemmBatch {
            shared_b: true,
            ..g
        })
        .unwrap();
        assert_eq!(shared.stride_a, 0);
    }

    #[test]
    fn dimensions_beyond_32_bits_are_refused() {
        let g = GemmBatch {
            shape: MatmulShape {
                m: 1 << 31,
                n: 1,
                k: 1,
            },
            count: 1,
            shared_b: false,
        };
        let e = row_major(&g).unwrap_err();
        assert!(matches!(e, GemmUnsupported::Dimension { .. }));
        assert!(e.to_string().contains("32-bit"));
    }

    #[test]
    fn types_and_accumulation() {
        use bsys::cublasComputeType_t as C;
        use bsys::cudaDataType as D;
        assert_eq!(
            types(Dtype::F32, false).unwrap(),
            Types {
                data: D::CUDA_R_32F,
                compute: C::CUBLAS_COMPUTE_32F
            }
        );
        assert_eq!(
            types(Dtype::F32, true).unwrap().compute,
            C::CUBLAS_COMPUTE_32F_FAST_TF32
        );
        let h = types(Dtype::F16, false).unwrap();
        assert_eq!((h.data, h.compute), (D::CUDA_R_16F, C::CUBLAS_COMPUTE_32F));
        assert_eq!(
            h.scalars(),
            Scalars::F32,
            "f32 compute takes f32 alpha/beta"
        );
        let b = types(Dtype::Bf16, true).unwrap();
        assert_eq!((b.data, b.compute), (D::CUDA_R_16BF, C::CUBLAS_COMPUTE_32F));
        let d = types(Dtype::F64, false).unwrap();
        assert_eq!(d.scalars(), Scalars::F64);
        assert_eq!(types(Dtype::I32, false), Err(GemmUnsupported::Int32));
        assert!(GemmUnsupported::Int32.to_string().contains("no i32 GEMM"));
        assert_eq!(accumulator(Dtype::F16), Dtype::F32);
        assert_eq!(accumulator(Dtype::Bf16), Dtype::F32);
        assert_eq!(accumulator(Dtype::F64), Dtype::F64);
    }

    #[test]
    fn tf32_switch_and_versions() {
        assert!(tf32_requested(Some("1")));
        assert!(tf32_requested(Some(" On ")));
        assert!(!tf32_requested(Some("0")));
        assert!(!tf32_requested(None));
        assert_eq!(format_version(130000), "13.0.0");
        assert_eq!(format_version(120805), "12.8.5");
    }
}
