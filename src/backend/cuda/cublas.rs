//! cuBLAS: row-major strided-batched GEMM on column-major cuBLAS, type and math-mode choice,
//! and the handle.
//!
//! The row-major to column-major mapping, the dimension limits and the accumulation rule are
//! shared with rocBLAS ([`crate::backend::gpu_gemm`]).
//!
//! Types: f32 (FP32, or TF32 tensor cores when `SCALEBENCH_CUDA_TF32=1`), f64, and f16/bf16
//! inputs and outputs with f32 accumulation (`CUBLAS_COMPUTE_32F`), all through
//! `cublasGemmStridedBatchedEx`.

use super::{CudaError, CudaResult};
pub(crate) use crate::backend::gpu_gemm::{accumulator, GemmUnsupported, Params};
use crate::backend::{gpu_gemm, GemmBatch};
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

/// The library's name in the sentences of [`GemmUnsupported`].
pub(crate) const LIBRARY: &str = "cuBLAS";

/// The cuBLAS call computing the row-major batch `b` (C_j = A_j·B_j, or A_j·B_0 when
/// `shared_b`); the mapping is shared with rocBLAS ([`gpu_gemm::row_major`]).
pub(crate) fn row_major(b: &GemmBatch) -> Result<Params, GemmUnsupported> {
    gpu_gemm::row_major(b, LIBRARY)
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
    // The accumulation rule (and the refusal of i32) is shared with rocBLAS.
    let compute = match gpu_gemm::compute_type(dtype, LIBRARY)? {
        Dtype::F64 => C::CUBLAS_COMPUTE_64F,
        _ if tf32 && dtype == Dtype::F32 => C::CUBLAS_COMPUTE_32F_FAST_TF32,
        _ => C::CUBLAS_COMPUTE_32F,
    };
    let data = match dtype {
        Dtype::F32 => D::CUDA_R_32F,
        Dtype::F64 => D::CUDA_R_64F,
        Dtype::F16 => D::CUDA_R_16F,
        _ => D::CUDA_R_16BF,
    };
    Ok(Types { data, compute })
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
        let scalars = gpu_gemm::HostScalars::new();
        let (alpha, beta) = scalars.alpha_beta(t.scalars() == Scalars::F64);
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
        assert!(e.to_string().contains("cuBLAS's 32-bit"), "{e}");
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
        assert_eq!(
            types(Dtype::I32, false),
            Err(GemmUnsupported::Int32 { library: "cuBLAS" })
        );
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
