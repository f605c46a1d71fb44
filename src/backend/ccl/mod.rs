//! What the NCCL-API collective libraries share, whichever backend drives them: NCCL (CUDA
//! backend) and RCCL (ROCm backend) have one C API, so the calls a collective makes, their
//! checks against the device's buffers, the type and operator codes, the version encoding and
//! the tolerance of the native average are written once here. Pure: nothing here touches a
//! device or a library; each backend issues the checked calls through its own bindings.
//!
//! - [`calls`]: which library calls a collective makes, on which buffer and at which element
//!   offset, with nccl-tests' in-place conventions ([`plan`]).
//! - [`region`]: those calls checked against the buffers they point into ([`Resolved`]), so a
//!   planning mistake is an error, never an out-of-bounds access.
//! - [`sharing`]: one device per communicator rank (two ranks on one GPU refused).

pub(crate) mod calls;
pub(crate) mod region;
pub(crate) mod sharing;

pub use calls::PlanError;
pub(crate) use calls::{plan, Call};
pub(crate) use region::{Region, Resolved};

use crate::params::{Dtype, ReduceOp};

/// `ncclDataType_t` of a [`Dtype`] (nccl.h's values, which RCCL keeps). The CUDA backend passes
/// cudarc's typed values instead, so a CUDA-only build uses neither function.
#[cfg_attr(not(feature = "rocm"), allow(dead_code))]
pub(crate) fn dtype_code(d: Dtype) -> i32 {
    match d {
        Dtype::I32 => 2,
        Dtype::F16 => 6,
        Dtype::F32 => 7,
        Dtype::F64 => 8,
        Dtype::Bf16 => 9,
    }
}

/// `ncclRedOp_t` of a [`ReduceOp`] (`avg` is the library's native `ncclAvg`).
#[cfg_attr(not(feature = "rocm"), allow(dead_code))]
pub(crate) fn op_code(op: ReduceOp) -> i32 {
    match op {
        ReduceOp::Sum => 0,
        ReduceOp::Prod => 1,
        ReduceOp::Max => 2,
        ReduceOp::Min => 3,
        ReduceOp::Avg => 4,
    }
}

/// `major.minor.patch` from `ncclGetVersion`'s code (X·10000+Y·100+Z since 2.9, X·1000+Y·100+Z
/// before). RCCL reports the NCCL version it is based on, in the same encoding.
pub(crate) fn format_version(code: i32) -> String {
    let (major, rest) = if code >= 10000 {
        (code / 10000, code % 10000)
    } else {
        (code / 1000, code % 1000)
    };
    format!("{major}.{}.{}", rest / 100, rest % 100)
}

/// Relative tolerance that the library's native average of floats over `n` ranks needs.
///
/// NCCL computes a float average as a pre-multiplied sum: every input is multiplied by
/// fl(1/n) and the products are summed (integers are summed, then divided exactly). When `n`
/// is a power of two, 1/n and every product are exact and the validation inputs keep every
/// partial sum exact, so the result is exact (0). Otherwise each product and each addition
/// rounds: with unit roundoff u of the element type, |result − mean| ≤ γ_{n+2}·mean|x|
/// (γ_m = m·u/(1 − m·u), one rounding for 1/n, one per product, n − 1 additions, one spare
/// for a scalar kept in f32). The validation inputs of an average are c + (2d − (n − 1)) with
/// mean c, so mean|x| ≤ (n + 1)·max(|c|, 1), which gives the bound relative to the checker's
/// max(|expected|, 1). nccl-tests allows 2 ulps for the same reason (its inputs have only two
/// non-zero ranks, ours all n).
pub(crate) fn avg_tolerance(dtype: Dtype, n: u32) -> f64 {
    if !dtype.is_float() || n.is_power_of_two() {
        return 0.0;
    }
    let u = 2f64.powi(-(dtype.exact_integer_bits() as i32));
    let mu = f64::from(n + 2) * u;
    if mu >= 0.5 {
        return 1.0;
    }
    (f64::from(n + 1) * mu / (1.0 - mu)).min(1.0)
}

#[cfg(test)]
mod tests;
