//! GEMM rate of this node through the backends' `gemm`: the CPU backend with each GEMM provider
//! (the `gemm` crate, and the system CBLAS opened at run time: `SCALEBENCH_BLAS` picks the
//! library, and a machine without one says so in one line) at 1 and 2 threads, and cuBLAS
//! through the CUDA backend when built with `--features cuda` and a GPU is present (otherwise
//! one line says why it was skipped).
//!
//! Each bench times square row-major C = A·B (f32 and f64; f16 and bf16 too on GPUs) with the
//! backend's own clock: marks around a run of back-to-back GEMMs, one device synchronisation
//! (nccl-tests' pipelined timing; on the CPU the marks are host clock readings and every call is
//! synchronous). Throughput is `Throughput::Elements(2·m·n·k)`: **criterion's `elem/s` is
//! FLOP/s** (`Gelem/s` = GFLOP/s). Inputs are the harness's exact integer matrices, and every
//! product is checked against an f64 reference before it is timed, so a fast wrong GEMM fails.
//!
//! Runs as one process (MPI singleton); under `mpirun` with more than one rank it measures
//! nothing and says so. `SCALEBENCH_BENCH_THREADS=1,2,8` sets the CPU thread counts.
//!
//! Run: `cargo bench --bench gemm` (`-- --quick` for a shorter run).

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use scalebench::backend::cpu::CpuBackend;
use scalebench::backend::{Backend, BackendError, DevicePlan, GemmBatch, HostBuf};
use scalebench::params::{
    BackendKind, Binding, CaseParams, Dtype, GemmChoice, MatmulShape, Placement, Scaling, Timing,
    Topology, Workload,
};
use scalebench::workload::gemm_check;
use scalebench::workload::matmul::CHECK_SAMPLES;
use std::time::Duration;

/// Square sizes on the CPU: from cache-resident to memory-streaming panels.
const CPU_DIMS: [u64; 4] = [256, 512, 1024, 2048];
/// Square sizes on a GPU: small ones are launch-bound, large ones reach the peak.
#[cfg(feature = "cuda")]
const GPU_DIMS: [u64; 4] = [1024, 2048, 4096, 8192];
const SEED: u64 = 1;

/// A, B and C on device 0, ready to multiply.
struct Operands<Buf> {
    batch: GemmBatch,
    a: Vec<Buf>,
    b: Vec<Buf>,
    c: Vec<Buf>,
}

/// The matmul case the backend would run, for its `supports` check.
fn params(kind: BackendKind, dtype: Dtype, n: u64, threads: usize) -> CaseParams {
    CaseParams {
        workload: Workload::Matmul,
        backend: kind,
        topology: Topology::Pure,
        nodes: 1,
        devices_per_node: 1,
        binding: Binding::None,
        placement: Placement::Fill,
        timing: Timing::Pipelined,
        dtype,
        op: None,
        root: None,
        in_place: None,
        requested_bytes: None,
        shape: Some(MatmulShape::square(n)),
        batch: None,
        collect: None,
        scaling: Some(Scaling::Weak),
        threads_per_device: (kind == BackendKind::Cpu).then_some(threads as u32),
        ..CaseParams::new(Workload::Matmul, 1, 1)
    }
}

/// Uploads exact integer inputs, multiplies once and checks the product (corners and
/// [`CHECK_SAMPLES`] sampled entries against an f64 reference, with the tolerance the harness
/// uses: 0 while the accumulation is exact).
fn prepare<B: Backend>(
    backend: &mut B,
    dtype: Dtype,
    n: u64,
) -> Result<Operands<B::Buf>, BackendError> {
    let shape = MatmulShape::square(n);
    let batch = GemmBatch {
        shape,
        count: 1,
        shared_b: false,
    };
    let mut ha = HostBuf::zeros(dtype, batch.a_len())?;
    gemm_check::fill_a(&mut ha, 0, SEED, 0, n, n);
    let mut hb = HostBuf::zeros(dtype, batch.b_len())?;
    gemm_check::fill_b(&mut hb, 0, SEED, n, n);
    let mut a = backend.alloc(0, dtype, batch.a_len())?;
    backend.upload(0, &mut a, &ha)?;
    let mut b = backend.alloc(0, dtype, batch.b_len())?;
    backend.upload(0, &mut b, &hb)?;
    let mut ops = Operands {
        batch,
        a: vec![a],
        b: vec![b],
        c: vec![backend.alloc(0, dtype, batch.c_len())?],
    };
    backend.gemm(&[batch], &ops.a, &ops.b, &mut ops.c)?;
    backend.synchronize()?;
    let product = backend.download(0, &ops.c[0])?;
    let tol = gemm_check::tolerance_stored(backend.gemm_accumulator(dtype), dtype, n);
    let wrong = gemm_check::count_wrong(
        &product,
        0,
        shape,
        CHECK_SAMPLES,
        tol,
        |i, k| gemm_check::a_entry(SEED, i, k),
        |k, j| gemm_check::b_entry(SEED, k, j),
    );
    if wrong > 0 {
        return Err(BackendError::check(format!(
            "{dtype} GEMM of {n}: {wrong} of {} checked entries differ from the exact product",
            CHECK_SAMPLES + 4
        )));
    }
    Ok(ops)
}

/// Benches `dims` × `dtypes` on one backend in group `gemm`, ids `<label>_<dtype>/<n>`.
/// Operands are set up (and checked) the first time criterion runs a bench, so a filter
/// (`cargo bench -- gemm/blas_1t_f32`) sets up only what it runs.
fn bench_backend<B: Backend>(
    c: &mut Criterion,
    backend: &mut B,
    label: &str,
    threads: usize,
    dtypes: &[Dtype],
    dims: &[u64],
) {
    let mut g = c.benchmark_group("gemm");
    // Large GEMMs take up to a second each: flat sampling keeps the count of calls bounded.
    g.sampling_mode(SamplingMode::Flat);
    for &dtype in dtypes {
        for &n in dims {
            if let Err(why) = backend.supports(&params(backend.kind(), dtype, n, threads)) {
                println!("gemm {label} {dtype} {n}: skipped: {why}");
                continue;
            }
            // elem/s = FLOP/s
            g.throughput(Throughput::Elements(2 * n * n * n));
            let mut ops: Option<Operands<B::Buf>> = None;
            g.bench_function(BenchmarkId::new(format!("{label}_{dtype}"), n), |bench| {
                let o = ops.get_or_insert_with(|| {
                    prepare(backend, dtype, n)
                        .unwrap_or_else(|e| panic!("gemm {label} {dtype} {n}: {e}"))
                });
                bench.iter_custom(|iters| {
                    let mut run = || -> Result<f64, BackendError> {
                        let t0 = backend.mark()?;
                        for _ in 0..iters {
                            backend.gemm(&[o.batch], &o.a, &o.b, &mut o.c)?;
                        }
                        let t1 = backend.mark()?;
                        backend.synchronize()?;
                        backend.elapsed_s(t0, t1)
                    };
                    let s = run().unwrap_or_else(|e| panic!("gemm {label} {dtype} {n}: {e}"));
                    Duration::from_secs_f64(s)
                })
            });
        }
    }
    g.finish();
}

/// CPU thread counts per GEMM: `SCALEBENCH_BENCH_THREADS` (comma list) or 1 and 2.
fn cpu_threads() -> Result<Vec<usize>, String> {
    let Ok(text) = std::env::var("SCALEBENCH_BENCH_THREADS") else {
        return Ok(vec![1, 2]);
    };
    text.split(',')
        .map(|t| match t.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "SCALEBENCH_BENCH_THREADS='{text}': '{t}' is not a thread count; write a comma list of counts ≥ 1, e.g. 1,2,8"
            )),
        })
        .collect()
}

fn cpu(c: &mut Criterion, world: &mpi::topology::SimpleCommunicator) {
    let threads = match cpu_threads() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gemm: {e}");
            std::process::exit(2);
        }
    };
    // One backend at a time: a BLAS's thread count is process-wide.
    for (provider, name) in [(GemmChoice::GemmCrate, "crate"), (GemmChoice::Blas, "blas")] {
        for &t in &threads {
            let plan = DevicePlan::unbound(1, t).with_gemm(provider);
            let mut backend = match CpuBackend::new(world, plan) {
                Ok(b) => b,
                Err(e) => {
                    println!("gemm {name} {t} thread(s): skipped: {e}");
                    continue;
                }
            };
            println!("gemm {name}_{t}t: {}", backend.info().detail);
            for w in backend.warnings() {
                println!("gemm {name}_{t}t: warning: {w}");
            }
            let label = format!("{name}_{t}t");
            bench_backend(
                c,
                &mut backend,
                &label,
                t,
                &[Dtype::F32, Dtype::F64],
                &CPU_DIMS,
            );
        }
    }
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion, world: &mpi::topology::SimpleCommunicator) {
    use scalebench::backend::cuda::{probe, CudaBackend};
    // Probe before opening anything: no driver or no device is one sentence, never a panic.
    if let Err(why) = probe::device_count() {
        println!("CUDA bench skipped: {why}");
        return;
    }
    let plan = DevicePlan::unbound(1, 1);
    let mut backend = match CudaBackend::new(world, plan) {
        Ok(b) => b,
        Err(e) => {
            println!("CUDA bench skipped: {e}");
            return;
        }
    };
    println!("gemm cuda: {}", backend.info().detail);
    bench_backend(
        c,
        &mut backend,
        "cuda_gpu0",
        1,
        &[Dtype::F32, Dtype::F64, Dtype::F16, Dtype::Bf16],
        &GPU_DIMS,
    );
}

#[cfg(not(feature = "cuda"))]
fn cuda(_c: &mut Criterion, _world: &mpi::topology::SimpleCommunicator) {
    println!("CUDA bench skipped: built without the `cuda` feature (run `cargo bench --features cuda` on a GPU node)");
}

fn main() {
    use mpi::traits::Communicator;
    // GEMM threads and GPU runtimes add threads; none of them calls MPI.
    let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled) else {
        eprintln!("gemm: MPI was already initialised in this process");
        std::process::exit(4);
    };
    let world = universe.world();
    if world.size() > 1 {
        if world.rank() == 0 {
            println!("gemm bench skipped: it runs as one process, not under mpirun with {} ranks (for multi-rank GEMM rates use `scalebench run -w matmul`)", world.size());
        }
        return;
    }
    println!("gemm: throughput in elem/s is FLOP/s (2·m·n·k per GEMM; Gelem/s = GFLOP/s)");
    // Defaults for GEMMs of up to ~0.5 s; the command line (`--sample-size`,
    // `--measurement-time`, `--quick`) overrides them.
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    cpu(&mut c, &world);
    cuda(&mut c, &world);
    c.final_summary();
}
