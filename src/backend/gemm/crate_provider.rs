//! The `gemm` crate compiled into scalebench: portable, always available, its speed depends
//! on the CPU (AVX-512 kernels where the CPU has them). Several threads per device run in a
//! rayon pool of that device, bound to the device's CPUs.

use crate::backend::{BackendError, BackendResult, DevicePlan, Element, GemmBatch};
use crate::topology::affinity;

pub struct CrateGemm {
    /// Per device, when its GEMM may use several threads.
    pools: Vec<Option<rayon::ThreadPool>>,
    threads: usize,
}

impl CrateGemm {
    /// One pool of `threads_per_device` threads per device (none for one thread: the
    /// device's own thread multiplies).
    pub fn new(plan: &DevicePlan) -> BackendResult<CrateGemm> {
        let g = plan.devices_per_rank.max(1);
        let t = plan.threads_per_device.max(1);
        // A device's GEMM threads run on that device's CPUs.
        let pools = (0..g)
            .map(|w| {
                let cpus = plan.worker_cpus.get(w).cloned().flatten();
                (t > 1)
                    .then(|| {
                        rayon::ThreadPoolBuilder::new()
                            .num_threads(t)
                            .thread_name(move |i| format!("scalebench-gemm{w}.{i}"))
                            .start_handler(move |_| {
                                if let Some(set) = &cpus {
                                    let _ = affinity::bind_current_thread(set);
                                }
                            })
                            .build()
                    })
                    .transpose()
                    .map_err(|e| BackendError::thread("GEMM threads", e))
            })
            .collect::<BackendResult<Vec<_>>>()?;
        Ok(CrateGemm { pools, threads: t })
    }

    /// What it is, for provenance: crate version and the kernels this CPU gets.
    pub fn version() -> String {
        let simd = if avx512() {
            "AVX-512 kernels"
        } else {
            "AVX2 or baseline kernels"
        };
        format!("gemm crate 0.19 ({simd})")
    }

    /// Device `w`'s batch, on the calling thread (or device `w`'s pool).
    ///
    /// # Safety
    /// The pointers hold the batch's matrices (see [`GemmBatch`]); `c` does not alias them.
    pub unsafe fn run<T: Element>(
        &self,
        w: usize,
        batch: GemmBatch,
        a: *const T,
        b: *const T,
        c: *mut T,
    ) {
        let p = Operands(a, b, c);
        let threads = self.threads;
        let go = move || {
            // Through a method: the closure must capture `p` whole (it is Send), not its fields.
            let (a, b, c) = p.get();
            // SAFETY: `run`'s caller guarantees the batch's matrices and no aliasing of `c`.
            unsafe { gemm_batch(batch, a, b, c, threads) }
        };
        match self.pools.get(w).and_then(Option::as_ref) {
            Some(p) => p.install(go),
            None => go(),
        }
    }
}

/// A device's A, B and C, handed to its pool's thread.
#[derive(Clone, Copy)]
struct Operands<T>(*const T, *const T, *mut T);
// SAFETY: the caller of `run` owns the matrices for the call, and only the one pool thread
// that runs the batch touches them.
unsafe impl<T> Send for Operands<T> {}
// SAFETY: as for `Send`: shared only to hand the pointers to that one thread.
unsafe impl<T> Sync for Operands<T> {}

impl<T> Operands<T> {
    fn get(self) -> (*const T, *const T, *mut T) {
        (self.0, self.1, self.2)
    }
}

/// Runs one device's strided batch of row-major GEMMs.
///
/// # Safety
/// The pointers must hold the batch's matrices (see [`GemmBatch`]) and `c` must not alias.
unsafe fn gemm_batch<T: Element>(
    g: GemmBatch,
    a: *const T,
    b: *const T,
    c: *mut T,
    threads: usize,
) {
    // SAFETY: the caller guarantees the batch's matrices behind the pointers and no aliasing
    // of `c`; the strides below stay within them (see `GemmBatch`).
    unsafe {
        let (zero, one) = (T::from_f64(0.0), T::from_f64(1.0));
        let (m, n, k) = (g.shape.m as usize, g.shape.n as usize, g.shape.k as usize);
        let par = if threads > 1 {
            ::gemm::Parallelism::Rayon(threads)
        } else {
            ::gemm::Parallelism::None
        };
        for j in 0..g.count {
            let bj = if g.shared_b { 0 } else { j * g.b_len() };
            // gemm computes dst = alpha·dst + beta·lhs·rhs; read_dst = false ignores alpha.
            ::gemm::gemm(
                m,
                n,
                k,
                c.add(j * g.c_len()),
                1,
                n as isize,
                false,
                a.add(j * g.a_len()),
                1,
                k as isize,
                b.add(bj),
                1,
                n as isize,
                zero,
                one,
                false,
                false,
                false,
                par,
            );
        }
    }
}

fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
