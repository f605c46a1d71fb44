//! The provider a launch uses, chosen once at start-up, and the warnings its set-up earned.

use super::blas::{self, Blas, CblasScalar};
use super::crate_provider::CrateGemm;
use crate::backend::{BackendError, BackendResult, DevicePlan, GemmBatch};
use crate::params::{GemmChoice, GemmProvider};
use crate::results::schema::GemmProvenance;

/// The GEMM provider of one CPU backend.
pub enum GemmEngine {
    Crate(CrateGemm),
    Blas {
        lib: Blas,
        /// Threads per call the library was told to use.
        threads: u32,
    },
}

/// A provider, ready, with what to record and what to warn about.
pub struct GemmSetup {
    pub engine: GemmEngine,
    pub provenance: GemmProvenance,
    /// Sentences for the launch's warnings (fallback to the crate, ignored thread counts).
    pub warnings: Vec<String>,
}

/// Resolves `choice` on this process. `blas` without a usable library is
/// [`BackendError::Unavailable`] (exit 2); `auto` falls back to the crate with a warning.
/// Call it after the calling thread is bound: a BLAS starts its threads when it is loaded,
/// and they inherit that binding.
pub fn set_up(choice: GemmChoice, plan: &DevicePlan) -> BackendResult<GemmSetup> {
    match choice {
        GemmChoice::GemmCrate => with_crate(choice, plan, Vec::new()),
        GemmChoice::Blas => match Blas::load() {
            Ok(lib) => Ok(with_blas(choice, lib, plan)),
            Err(e) => Err(BackendError::Unavailable(format!("--gemm blas: {e}"))),
        },
        GemmChoice::Auto => match Blas::load() {
            Ok(lib) => Ok(with_blas(choice, lib, plan)),
            Err(e) => with_crate(
                choice,
                plan,
                vec![format!("--gemm auto falls back to the gemm crate: {e}")],
            ),
        },
    }
}

fn threads_of(plan: &DevicePlan) -> u32 {
    plan.threads_per_device.max(1) as u32
}

fn with_crate(
    requested: GemmChoice,
    plan: &DevicePlan,
    warnings: Vec<String>,
) -> BackendResult<GemmSetup> {
    let t = threads_of(plan);
    Ok(GemmSetup {
        engine: GemmEngine::Crate(CrateGemm::new(plan)?),
        provenance: GemmProvenance {
            requested,
            provider: GemmProvider::GemmCrate,
            library: None,
            version: CrateGemm::version(),
            threads_per_device: t,
            library_threads: Some(t),
        },
        warnings,
    })
}

fn with_blas(requested: GemmChoice, lib: Blas, plan: &DevicePlan) -> GemmSetup {
    let t = threads_of(plan);
    let reported = lib.set_threads(t);
    let mut warnings = Vec::new();
    match (lib.thread_setter(), reported) {
        (None, _) => warnings.push(format!(
            "{} has no thread-count call scalebench knows ({}): its GEMM runs with the library's own thread count, not --threads-per-device {t}; set it through the library's environment variable (e.g. OPENBLAS_NUM_THREADS={t})",
            lib.path(),
            blas::thread_setter_names()
        )),
        (Some(setter), Some(n)) if n != t => warnings.push(format!(
            "{} ignored {setter}({t}): it reports {n} thread(s), so its GEMM rates are for {n} thread(s) per device",
            lib.path()
        )),
        _ => {}
    }
    if plan.devices_per_rank > 1 && t > 1 {
        warnings.push(format!(
            "{} keeps one thread pool per process: the {} devices of a rank share it, and its threads run on the rank's CPUs rather than each device's; use --topology pure (one rank per device) to keep BLAS threads inside each device's cores",
            lib.path(),
            plan.devices_per_rank
        ));
    }
    let provenance = GemmProvenance {
        requested,
        provider: GemmProvider::Blas,
        library: Some(lib.path().to_string()),
        version: lib.version().to_string(),
        threads_per_device: t,
        library_threads: reported,
    };
    GemmSetup {
        engine: GemmEngine::Blas { lib, threads: t },
        provenance,
        warnings,
    }
}

impl GemmEngine {
    pub fn provider(&self) -> GemmProvider {
        match self {
            GemmEngine::Crate(_) => GemmProvider::GemmCrate,
            GemmEngine::Blas { .. } => GemmProvider::Blas,
        }
    }

    /// Checks a batch can run and restores the library's thread count if another user of
    /// the (process-wide) library changed it. Call from one thread, before [`Self::run`].
    pub fn prepare(&self, batch: &GemmBatch) -> BackendResult<()> {
        if let GemmEngine::Blas { lib, threads } = self {
            let s = batch.shape;
            if !blas::fits_cblas(s.m, s.n, s.k) {
                return Err(BackendError::Unsupported(format!(
                    "GEMM {}x{}x{} exceeds the 32-bit dimensions of the CBLAS interface: use --gemm gemm-crate",
                    s.m, s.n, s.k
                )));
            }
            if lib.threads().is_some_and(|n| n != *threads) {
                lib.set_threads(*threads);
            }
        }
        Ok(())
    }

    /// Device `w`'s strided batch (see [`GemmBatch`]), on the calling thread.
    ///
    /// # Safety
    /// The pointers hold the batch's matrices and `c` does not alias them; [`Self::prepare`]
    /// accepted the batch.
    pub unsafe fn run<T: CblasScalar>(
        &self,
        w: usize,
        batch: GemmBatch,
        a: *const T,
        b: *const T,
        c: *mut T,
    ) {
        match self {
            GemmEngine::Crate(g) => g.run(w, batch, a, b, c),
            GemmEngine::Blas { lib, .. } => {
                let s = batch.shape;
                let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
                for j in 0..batch.count {
                    let bj = if batch.shared_b { 0 } else { j * batch.b_len() };
                    lib.gemm(
                        m,
                        n,
                        k,
                        a.add(j * batch.a_len()),
                        b.add(bj),
                        c.add(j * batch.c_len()),
                    );
                }
            }
        }
    }
}
