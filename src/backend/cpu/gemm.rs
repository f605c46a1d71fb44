//! CPU GEMM: every local device's batch through the launch's provider (the system BLAS or the
//! `gemm` crate, see [`crate::backend::gemm`]), each device on its own thread in hybrid mode.

use super::kernels::{typed, SyncPtr};
use crate::backend::gemm::{CblasScalar, GemmEngine};
use crate::backend::{BackendResult, GemmBatch, HostBuf};

/// Every local device's batch through `engine`, each on its own thread in hybrid mode.
pub(super) fn gemm_typed<T: CblasScalar>(
    engine: &GemmEngine,
    workers: Option<&rayon::ThreadPool>,
    batches: &[GemmBatch],
    a: &[HostBuf],
    b: &[HostBuf],
    c: &mut [HostBuf],
) -> BackendResult<()> {
    for (w, g) in batches.iter().enumerate() {
        engine.prepare(g)?;
        assert!(a[w].len() >= g.count * g.a_len() && c[w].len() >= g.count * g.c_len());
        assert!(
            b[w].len()
                >= if g.shared_b {
                    g.b_len()
                } else {
                    g.count * g.b_len()
                }
        );
    }
    let pa: Vec<SyncPtr<T>> = a.iter().map(typed).collect();
    let pb: Vec<SyncPtr<T>> = b.iter().map(typed).collect();
    let pc: Vec<SyncPtr<T>> = c.iter().map(typed).collect();
    // SAFETY: lengths asserted above; each device writes only its own C buffer.
    let run = |w: usize| unsafe { engine.run(w, batches[w], pa[w].0, pb[w].0, pc[w].0) };
    match workers {
        Some(pool) => {
            pool.broadcast(|ctx| run(ctx.index()));
        }
        None => run(0),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gemm as providers;
    use crate::backend::DevicePlan;
    use crate::params::Dtype;

    #[test]
    fn gemm_matches_naive_product() {
        use crate::params::MatmulShape;
        let shape = MatmulShape { m: 7, n: 5, k: 9 };
        let g = GemmBatch {
            shape,
            count: 2,
            shared_b: true,
        };
        let a = vec![HostBuf::from_fn(Dtype::F64, 2 * 63, |i| (i % 7) as f64 - 3.0).unwrap()];
        let b = vec![HostBuf::from_fn(Dtype::F64, 45, |i| (i % 5) as f64 - 2.0).unwrap()];
        let mut c = vec![HostBuf::zeros(Dtype::F64, 2 * 35).unwrap()];
        let engine =
            GemmEngine::Crate(providers::CrateGemm::new(&DevicePlan::unbound(1, 1)).unwrap());
        gemm_typed::<f64>(&engine, None, &[g], &a, &b, &mut c).unwrap();
        for j in 0..2 {
            for i in 0..7 {
                for col in 0..5 {
                    let want: f64 = (0..9)
                        .map(|k| a[0].get(j * 63 + i * 9 + k) * b[0].get(k * 5 + col))
                        .sum();
                    assert_eq!(c[0].get(j * 35 + i * 5 + col), want);
                }
            }
        }
    }
}
