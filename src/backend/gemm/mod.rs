//! CPU GEMM providers behind one interface: the `gemm` crate compiled in, and the system
//! CBLAS opened at run time. `--gemm auto|blas|gemm-crate` picks one per launch
//! ([`set_up`]); the choice and the library's identity go into the results' provenance.

pub(crate) mod blas;
pub(crate) mod crate_provider;
mod engine;
pub mod fix_check;

pub use blas::{Blas, CblasScalar, LoadError};
pub use crate_provider::CrateGemm;
pub use engine::{set_up, GemmEngine, GemmSetup};
