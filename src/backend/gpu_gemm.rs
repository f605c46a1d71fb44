//! What the GPU backends' GEMMs share (cuBLAS on CUDA, rocBLAS on ROCm): the row-major batch
//! as one column-major strided-batched call, the limits of those libraries' 32-bit
//! dimensions, the precision products accumulate in, and the host scalars alpha = 1, beta = 0.
//!
//! Both libraries are column-major; the workloads store matrices row-major. A row-major m×n
//! matrix with leading dimension n is, read column-major, its n×m transpose. So C = A·B
//! (row-major) is computed as Cᵀ = Bᵀ·Aᵀ (column-major) with no transposition flags: the
//! library's first operand is our B, its second our A, and its (m, n) is our (n, m).
//! [`row_major`] does that mapping and is checked against a column-major reference below.

use crate::backend::{BackendError, GemmBatch};
use crate::params::Dtype;
use std::ffi::c_void;

/// One strided-batched GEMM call in the library's (column-major) terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Params {
    pub m: i32,
    pub n: i32,
    pub k: i32,
    /// The library's A is our B (k×n row-major = n×k column-major).
    pub lda: i32,
    /// The library's B is our A (m×k row-major = k×m column-major).
    pub ldb: i32,
    pub ldc: i32,
    /// Elements between consecutive matrices (0: every product uses the same matrix).
    pub stride_a: i64,
    pub stride_b: i64,
    pub stride_c: i64,
    pub batch: i32,
}

/// A GEMM the GPU library (`library`: cuBLAS, rocBLAS) cannot take: the case is unsupported,
/// not failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GemmUnsupported {
    #[error(
        "{what} = {value} exceeds {library}'s 32-bit dimensions: use a smaller --dims or --batch"
    )]
    Dimension {
        library: &'static str,
        what: &'static str,
        value: u64,
    },
    #[error("a {rows}×{cols} matrix is too large to address")]
    Matrix { rows: u64, cols: u64 },
    #[error("{library} has no i32 GEMM: use f32, f64, f16 or bf16")]
    Int32 { library: &'static str },
}

impl From<GemmUnsupported> for BackendError {
    fn from(e: GemmUnsupported) -> BackendError {
        BackendError::Unsupported(e.to_string())
    }
}

/// The call computing the row-major batch `b` (C_j = A_j·B_j, or A_j·B_0 when `shared_b`) on
/// `library`.
pub(crate) fn row_major(b: &GemmBatch, library: &'static str) -> Result<Params, GemmUnsupported> {
    let int = |what: &'static str, value: u64| {
        i32::try_from(value).map_err(|_| GemmUnsupported::Dimension {
            library,
            what,
            value,
        })
    };
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

/// The type `dtype`'s products accumulate in on a GPU library: f32 for half-precision inputs
/// (the libraries' f32 compute type), the type itself otherwise; i32 has no GEMM.
pub(crate) fn compute_type(dtype: Dtype, library: &'static str) -> Result<Dtype, GemmUnsupported> {
    match dtype {
        Dtype::I32 => Err(GemmUnsupported::Int32 { library }),
        d => Ok(accumulator(d)),
    }
}

/// The type GEMM products accumulate in: f32 for half-precision inputs.
pub(crate) fn accumulator(dtype: Dtype) -> Dtype {
    match dtype {
        Dtype::F16 | Dtype::Bf16 => Dtype::F32,
        d => d,
    }
}

/// alpha = 1 and beta = 0 in both compute precisions, on the host (both libraries read host
/// scalars before the call returns in their default pointer mode).
pub(crate) struct HostScalars {
    one32: f32,
    zero32: f32,
    one64: f64,
    zero64: f64,
}

impl HostScalars {
    pub(crate) fn new() -> HostScalars {
        HostScalars {
            one32: 1.0,
            zero32: 0.0,
            one64: 1.0,
            zero64: 0.0,
        }
    }

    /// Pointers to alpha and beta in the precision the compute type takes (f64 compute: f64
    /// scalars; every other compute type: f32), valid while `self` lives.
    pub(crate) fn alpha_beta(&self, f64_compute: bool) -> (*const c_void, *const c_void) {
        if f64_compute {
            (
                &self.one64 as *const f64 as *const c_void,
                &self.zero64 as *const f64 as *const c_void,
            )
        } else {
            (
                &self.one32 as *const f32 as *const c_void,
                &self.zero32 as *const f32 as *const c_void,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::MatmulShape;

    /// The libraries' strided-batched GEMM semantics (column-major, no transposes) on flat
    /// arrays.
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
            let p = row_major(&g, "cuBLAS").unwrap();
            let mut c = vec![f64::NAN; count * m * n];
            // The library's A operand is our B, its B our A (see the module doc).
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
    fn parameters_for_a_batch() {
        let g = GemmBatch {
            shape: MatmulShape { m: 2, n: 3, k: 4 },
            count: 5,
            shared_b: false,
        };
        let p = row_major(&g, "rocBLAS").unwrap();
        assert_eq!((p.m, p.n, p.k), (3, 2, 4));
        assert_eq!((p.lda, p.ldb, p.ldc), (3, 4, 3));
        assert_eq!((p.stride_a, p.stride_b, p.stride_c, p.batch), (12, 8, 6, 5));
        let shared = row_major(
            &GemmBatch {
                shared_b: true,
                ..g
            },
            "rocBLAS",
        )
        .unwrap();
        assert_eq!(shared.stride_a, 0);
    }

    #[test]
    fn dimensions_beyond_32_bits_are_refused_naming_the_library() {
        let g = GemmBatch {
            shape: MatmulShape {
                m: 1 << 31,
                n: 1,
                k: 1,
            },
            count: 1,
            shared_b: false,
        };
        let e = row_major(&g, "rocBLAS").unwrap_err();
        assert!(matches!(e, GemmUnsupported::Dimension { what: "m", .. }));
        assert!(e.to_string().contains("rocBLAS's 32-bit dimensions"), "{e}");
    }

    #[test]
    fn accumulation_and_scalars() {
        assert_eq!(compute_type(Dtype::F16, "rocBLAS"), Ok(Dtype::F32));
        assert_eq!(compute_type(Dtype::Bf16, "rocBLAS"), Ok(Dtype::F32));
        assert_eq!(compute_type(Dtype::F32, "rocBLAS"), Ok(Dtype::F32));
        assert_eq!(compute_type(Dtype::F64, "rocBLAS"), Ok(Dtype::F64));
        let e = compute_type(Dtype::I32, "rocBLAS").unwrap_err();
        assert_eq!(
            e.to_string(),
            "rocBLAS has no i32 GEMM: use f32, f64, f16 or bf16"
        );
        let s = HostScalars::new();
        let (a, b) = s.alpha_beta(true);
        // SAFETY: the pointers point into `s`, alive here, at f64 fields.
        let wide = unsafe { (*(a as *const f64), *(b as *const f64)) };
        assert_eq!(wide, (1.0, 0.0));
        let (a, b) = s.alpha_beta(false);
        // SAFETY: as above, at f32 fields.
        let narrow = unsafe { (*(a as *const f32), *(b as *const f32)) };
        assert_eq!(narrow, (1.0, 0.0));
    }
}
