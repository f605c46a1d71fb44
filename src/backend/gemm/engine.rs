//! The provider a launch uses, chosen once at start-up, and the warnings its set-up earned.

use super::blas::{self, Blas, CblasScalar};
use super::crate_provider::CrateGemm;
use crate::backend::{BackendError, BackendResult, DevicePlan, GemmBatch};
use crate::params::{GemmChoice, GemmProvider};
use crate::results::schema::GemmProvenance;
use crate::topology::affinity;
use std::collections::BTreeSet;

/// The GEMM provider of one CPU backend.
pub enum GemmEngine {
    Crate(CrateGemm),
    Blas {
        lib: Blas,
        /// Threads per call the library was told to use.
        threads: u32,
        /// What it reported right after (differs from `threads` where it ignores the call).
        reported: Option<u32>,
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
    // Threads the library starts are the ones that appear while it loads.
    let before = thread_ids();
    match choice {
        GemmChoice::GemmCrate => with_crate(choice, plan, Vec::new()),
        GemmChoice::Blas => match Blas::load() {
            Ok(lib) => Ok(with_blas(choice, lib, plan, &before)),
            Err(e) => Err(BackendError::Unavailable(format!("--gemm blas: {e}"))),
        },
        GemmChoice::Auto => match Blas::load() {
            Ok(lib) => Ok(with_blas(choice, lib, plan, &before)),
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

fn with_blas(
    requested: GemmChoice,
    lib: Blas,
    plan: &DevicePlan,
    before: &BTreeSet<u32>,
) -> GemmSetup {
    let t = threads_of(plan);
    let reported = lib.set_threads(t);
    let mut warnings = Vec::new();
    // Bound devices: the library's new threads must run on their CPUs.
    let bound: Option<Vec<u32>> = plan
        .worker_cpus
        .iter()
        .try_fold(BTreeSet::new(), |mut all, d| {
            all.extend(d.as_ref()?.iter().copied());
            Some(all)
        })
        .map(|s| s.into_iter().collect());
    if let Some(allowed) = bound.filter(|a| !a.is_empty()) {
        let new: Vec<u32> = thread_ids().difference(before).copied().collect();
        let strays = strays(&new, thread_cpus, &allowed);
        if !strays.is_empty() {
            warnings.push(format!(
                "{} of {}'s {} may run outside the devices' CPUs {} (on {}): its GEMM competes with other devices",
                strays.len(),
                lib.path(),
                crate::units::count(new.len(), "thread", "threads"),
                affinity::format_cpulist(&allowed),
                strays
                    .iter()
                    .map(|(tid, cpus)| format!("thread {tid}: {}", affinity::format_cpulist(cpus)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    match (lib.thread_setter(), reported) {
        (None, _) => warnings.push(format!(
            "{} has no thread-count call scalebench knows ({}): its GEMM runs with the library's own thread count, not --threads-per-device {t}; set it through the library's environment variable (e.g. OPENBLAS_NUM_THREADS={t})",
            lib.path(),
            blas::thread_setter_names()
        )),
        (Some(setter), Some(n)) if n != t => warnings.push(format!(
            "{} ignored {setter}({t}): it reports {}, so its GEMM rates are for {} per device",
            lib.path(),
            crate::units::count(n as usize, "thread", "threads"),
            crate::units::count(n as usize, "thread", "threads")
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
    // A kernel older than the CPU computes at a fraction of it, and nothing else says so.
    let kernel = crate::topology::ceilings::kernel::BlasKernel {
        library: lib.version().to_string(),
        kernel: lib.kernel().map(str::to_string),
    };
    if let Some(w) = crate::topology::ceilings::kernel::check(
        &crate::topology::ceilings::kernel::host_cpu(),
        &kernel,
        |v| std::env::var(v).ok(),
    ) {
        // The fix that needs no restart, timed here: the finding then says what it gives.
        let measured = match CrateGemm::new(plan) {
            Ok(g) => super::fix_check::measure(&lib, &g, t as usize),
            Err(e) => super::fix_check::Outcome::Skipped(format!("not measured: {e}")),
        };
        warnings.push(format!("{w}; {}", super::fix_check::sentence(&measured)));
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
        engine: GemmEngine::Blas {
            lib,
            threads: t,
            reported,
        },
        provenance,
        warnings,
    }
}

/// This process's threads (Linux `/proc/self/task`; empty elsewhere).
fn thread_ids() -> BTreeSet<u32> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The CPUs thread `tid` of this process may run on.
fn thread_cpus(tid: u32) -> Option<Vec<u32>> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    affinity::parse_cpulist(list.trim())
}

/// Threads among `new` allowed on a CPU outside `allowed`, with their CPUs (threads that
/// ended, or whose CPUs cannot be read, are left out).
fn strays(
    new: &[u32],
    cpus_of: impl Fn(u32) -> Option<Vec<u32>>,
    allowed: &[u32],
) -> Vec<(u32, Vec<u32>)> {
    new.iter()
        .filter_map(|&tid| Some((tid, cpus_of(tid)?)))
        .filter(|(_, cpus)| cpus.iter().any(|c| !allowed.contains(c)))
        .collect()
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
        if let GemmEngine::Blas {
            lib,
            threads,
            reported,
        } = self
        {
            let s = batch.shape;
            if !blas::fits_cblas(s.m, s.n, s.k) {
                return Err(BackendError::Unsupported(format!(
                    "GEMM {}x{}x{} exceeds the 32-bit dimensions of the CBLAS interface: use --gemm gemm-crate",
                    s.m, s.n, s.k
                )));
            }
            if reported.is_some() && lib.threads() != *reported {
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
        // SAFETY: the caller guarantees the batch's matrices, no aliasing of `c` and dimensions
        // this engine accepted; matrix j's offsets stay within them (see `GemmBatch`).
        unsafe {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_outside_the_devices_cpus_are_found() {
        let cpus = |tid: u32| match tid {
            10 => Some(vec![2, 3]),
            11 => Some(vec![2, 3, 4]),
            12 => None, // ended before it was read
            _ => Some(vec![0]),
        };
        assert_eq!(
            strays(&[10, 11, 12], cpus, &[2, 3]),
            vec![(11, vec![2, 3, 4])]
        );
        assert!(strays(&[10], cpus, &[1, 2, 3]).is_empty());
    }

    #[test]
    fn this_process_has_threads_and_reads_their_cpus() {
        let ids = thread_ids();
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() } as u32;
        assert!(ids.contains(&me), "{ids:?}");
        assert_eq!(
            thread_cpus(me).unwrap(),
            affinity::current_thread_cpus().unwrap()
        );
    }
}
