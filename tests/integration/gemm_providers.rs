//! CPU GEMM providers: the system CBLAS (dlopen) and the `gemm` crate give exactly the
//! validated products; a missing or broken BLAS is a one-sentence exit 2 under `--gemm blas`
//! and a warned fallback under `auto`; a library that ignores the thread count is named.
//!
//! The `blas` cases need a system CBLAS: `bash ci/setup.sh` installs Debian's OpenBLAS.

use crate::common;

use common::wire::{Gemm, ResultsFile};
use common::{mpirun, read_results, solo_env, tmpdir};
use scalebench::backend::gemm::set_up;
use scalebench::backend::{DevicePlan, GemmBatch};
use scalebench::params::{GemmChoice, MatmulShape};
use scalebench::workload::gemm_check::{a_entry, b_entry};
use std::path::{Path, PathBuf};

const NO_BLAS: &str = "no system CBLAS loads here: install one (bash ci/setup.sh installs libopenblas0-pthread) to test the blas provider";

/// Every entry of C = A·B, for A (m×k) and B (k×n) from the harness's exact integer entries,
/// through one provider, compared with an f64 reference: must be bit-equal.
fn check_full_product<T>(choice: GemmChoice, threads: usize, shape: MatmulShape, count: usize)
where
    T: scalebench::backend::gemm::CblasScalar,
{
    let plan = DevicePlan::unbound(1, threads).with_gemm(choice);
    let setup = set_up(choice, &plan).unwrap_or_else(|e| panic!("{choice}: {e}. {NO_BLAS}"));
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let batch = GemmBatch {
        shape,
        count,
        shared_b: false,
    };
    let a: Vec<T> = (0..count as u64 * m * k)
        .map(|x| {
            let (j, r) = (x / (m * k), x % (m * k));
            T::from_f64(a_entry(j, r / k, r % k))
        })
        .collect();
    let b: Vec<T> = (0..count as u64 * k * n)
        .map(|x| {
            let (j, r) = (x / (k * n), x % (k * n));
            T::from_f64(b_entry(j, r / n, r % n))
        })
        .collect();
    let mut c: Vec<T> = vec![T::from_f64(f64::NAN); count * (m * n) as usize];
    setup.engine.prepare(&batch).unwrap();
    // SAFETY: run's contract: `a`, `b`, `c` hold count·m·k, count·k·n and count·m·n elements
    // (the batch's matrices, shared_b off) and are three separate Vecs, so `c` aliases neither;
    // all live across the call; prepare accepted the batch; device 0 is the plan's only one.
    unsafe {
        setup
            .engine
            .run(0, batch, a.as_ptr(), b.as_ptr(), c.as_mut_ptr())
    };
    let mut wrong = 0;
    for j in 0..count as u64 {
        for i in 0..m {
            for col in 0..n {
                let want: f64 = (0..k).map(|p| a_entry(j, i, p) * b_entry(j, p, col)).sum();
                let got = c[(j * m * n + i * n + col) as usize].to_f64();
                if got != want {
                    wrong += 1;
                }
            }
        }
    }
    let what = format!(
        "{} {} {m}x{n}x{k} ×{count}, {threads} thread(s), {}",
        setup.provenance.provider,
        std::any::type_name::<T>(),
        setup.provenance.version
    );
    assert_eq!(
        wrong, 0,
        "{what}: {wrong} entries differ from the exact product"
    );
    assert_eq!(setup.provenance.threads_per_device, threads as u32);
}

#[test]
fn both_providers_give_exact_products_square_and_rectangular_1_and_2_threads() {
    // Odd sizes reach every edge path of the kernels; 192 is several cache blocks deep.
    let shapes = [
        MatmulShape::square(192),
        MatmulShape {
            m: 37,
            n: 53,
            k: 129,
        },
    ];
    // One test, in order: a BLAS's thread count is process-wide. Both cores at times: not while
    // another test measures real runs (common::quiet).
    let _quiet = common::quiet();
    for choice in [GemmChoice::Blas, GemmChoice::GemmCrate] {
        for threads in [1, 2] {
            for s in shapes {
                check_full_product::<f32>(choice, threads, s, 2);
                check_full_product::<f64>(choice, threads, s, 2);
            }
        }
    }
    // The BLAS took the thread count (OpenBLAS does; a library that does not is warned about).
    let plan = DevicePlan::unbound(1, 2).with_gemm(GemmChoice::Blas);
    let s = set_up(GemmChoice::Blas, &plan).expect(NO_BLAS);
    assert_eq!(s.provenance.library_threads, Some(2), "{:?}", s.warnings);
    // (a kernel older than this CPU is warned about where the machine forces one, e.g. a
    // machine-wide OPENBLAS_CORETYPE: not a thread-count warning, and tested with the ceilings)
    let others: Vec<&String> = s
        .warnings
        .iter()
        .filter(|w| !w.starts_with("GEMM runs "))
        .collect();
    assert!(others.is_empty(), "{others:?}");
}

/// matmul, square and MxNxK, and batch_matmul (square only), in f32 and f64.
const WORKLOADS: &str = "matmul,batch_matmul";
const DIMS: &str = "96,40x24x72";

/// `run -q --out OUT TOPOLOGY -w WORKLOADS --dtype f32,f64 --dims DIMS SCALING --iters 2
/// --check 2 --gemm GEMM TAIL`: the GEMM cases all_exact checks.
fn gemm_case_args<'a>(
    out: &'a Path,
    topology: &[&'a str],
    scaling: &[&'a str],
    gemm: &'a str,
    tail: &[&'a str],
) -> Vec<&'a str> {
    let mut a = common::run_q(out, topology);
    a.extend_from_slice(&["-w", WORKLOADS, "--dtype", "f32,f64", "--dims", DIMS]);
    a.extend_from_slice(scaling);
    a.extend_from_slice(&["--iters", "2", "--check", "2", "--gemm", gemm]);
    a.extend_from_slice(tail);
    a
}

fn run_gemm_cases(out: &Path, gemm: &str, threads: u32, env: &[(&str, &str)]) -> common::Ran {
    let t = threads.to_string();
    solo_env(
        &gemm_case_args(out, &[], &[], gemm, &["--threads-per-device", &t]),
        env,
    )
}

/// Every case measured (batch_matmul squares its matrices: its MxNxK case is refused),
/// checked exactly, none wrong; the launch's GEMM provenance.
fn all_exact(r: &ResultsFile) -> &Gemm {
    assert_eq!(r.cases.len(), 8, "2 workloads × 2 dtypes × 2 shapes");
    let mut measured = 0;
    for c in &r.cases {
        let square = c
            .params
            .shape
            .as_ref()
            .is_some_and(|s| s.m == s.n && s.n == s.k);
        if c.params.workload == "batch_matmul" && !square {
            assert!(c.message.as_deref().unwrap_or("").contains("square"));
            continue;
        }
        measured += 1;
        assert_eq!(c.status, "ok", "{:?}: {:?}", c.params.workload, c.message);
        assert_eq!((c.wrong, c.tolerance, c.check_iters), (0, 0.0, 2));
        assert!(c.gflops.is_some_and(|g| g > 0.0));
    }
    assert_eq!(measured, 6);
    let p = r.launches[0].provenance.as_ref().unwrap();
    p.gemm.as_ref().expect("a GEMM launch records its provider")
}

#[test]
fn run_validates_both_providers_and_records_them() {
    for (gemm, provider) in [("blas", "blas"), ("gemm-crate", "gemm-crate")] {
        for threads in [1, 2] {
            let out = tmpdir("gemm-run").join("out");
            // 3: batch_matmul refuses the MxNxK shape (checked in all_exact).
            run_gemm_cases(&out, gemm, threads, &[]).assert_code(3);
            let r = read_results(&out);
            let g = all_exact(&r);
            assert_eq!(
                (g.requested.as_str(), g.provider.as_str()),
                (gemm, provider)
            );
            assert_eq!(g.threads_per_device, threads);
            assert_eq!(g.library_threads, Some(threads), "{g:?}");
            let detail = &r.launches[0].provenance.as_ref().unwrap().backend.detail;
            if gemm == "blas" {
                let lib = g.library.as_deref().expect("the library path");
                assert!(Path::new(lib).is_file(), "{lib}");
                assert!(detail.contains(lib), "{detail}");
                assert!(!g.version.is_empty());
            } else {
                assert_eq!(g.library, None);
                assert!(g.version.starts_with("gemm crate"), "{}", g.version);
            }
        }
    }
}

#[test]
fn blas_under_mpirun_with_two_ranks() {
    let out = tmpdir("gemm-mpi").join("out");
    mpirun(
        2,
        &gemm_case_args(&out, &[], &["--scaling", "strong"], "blas", &[]),
    )
    .assert_code(3);
    let r = read_results(&out);
    let g = all_exact(&r);
    assert_eq!(g.provider, "blas");
    let p = r.launches[0].provenance.as_ref().unwrap();
    assert!(
        !p.warnings.iter().any(|w| w.contains("multiplies with")),
        "{:?}",
        p.warnings
    );
}

/// The error sentence of a failed run: stderr without blank lines.
fn one_sentence(ran: &common::Ran) -> String {
    let lines: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "one line expected:\n{}", ran.stderr);
    lines[0].to_string()
}

#[test]
fn a_missing_or_broken_blas_is_exit_2_naming_the_library_and_the_fix() {
    for (lib, needles) in [
        (
            "/nonexistent.so",
            &[
                "SCALEBENCH_BLAS=/nonexistent.so cannot be loaded",
                "unset it",
            ][..],
        ),
        // A real library, but not a CBLAS (libm is on every glibc system).
        (
            "libm.so.6",
            &[
                "libm.so.6 has no cblas_sgemm",
                "point SCALEBENCH_BLAS at one",
            ][..],
        ),
    ] {
        let out = tmpdir("gemm-bad").join("out");
        let ran = run_gemm_cases(&out, "blas", 1, &[("SCALEBENCH_BLAS", lib)]);
        ran.assert_code(2);
        let msg = one_sentence(&ran);
        for n in needles {
            assert!(msg.contains(n), "{n:?} not in {msg:?}");
        }
        assert!(msg.contains("--gemm blas"), "{msg}");
        assert!(
            !out.join("results.json").exists(),
            "no results for a launch that never started"
        );
    }
}

#[test]
fn auto_falls_back_to_the_crate_and_says_so() {
    let out = tmpdir("gemm-auto").join("out");
    let ran = solo_env(
        &[
            "run",
            "--out",
            out.to_str().unwrap(),
            "-w",
            "matmul",
            "--dtype",
            "f64",
            "--dims",
            "64",
            "--iters",
            "2",
        ],
        &[("SCALEBENCH_BLAS", "/nonexistent.so")],
    );
    ran.assert_code(0);
    assert!(
        ran.stdout.contains(
            "# warning: --gemm auto falls back to the gemm crate: SCALEBENCH_BLAS=/nonexistent.so"
        ),
        "{}",
        ran.stdout
    );
    let r = read_results(&out);
    let p = r.launches[0].provenance.as_ref().unwrap();
    let g = p.gemm.as_ref().unwrap();
    assert_eq!(
        (g.requested.as_str(), g.provider.as_str()),
        ("auto", "gemm-crate")
    );
    assert!(p.warnings.iter().any(|w| w.contains("falls back")));
    assert_eq!(r.cases[0].status, "ok");
    assert_eq!(r.cases[0].wrong, 0);
}

#[test]
fn a_launch_without_gemm_loads_no_blas() {
    let out = tmpdir("gemm-none").join("out");
    // A broken library would be an error if anything tried to load it.
    solo_env(
        &[
            "run",
            "-q",
            "--out",
            out.to_str().unwrap(),
            "-w",
            "allreduce",
            "--sizes",
            "1K",
            "--iters",
            "2",
            "--gemm",
            "blas",
        ],
        &[("SCALEBENCH_BLAS", "/nonexistent.so")],
    )
    .assert_code(0);
    let r = read_results(&out);
    assert!(r.launches[0].provenance.as_ref().unwrap().gemm.is_none());
}

/// tests/fixtures/fake_cblas.c built as a shared library with extra compiler flags.
fn fake_cblas(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_cblas.c");
    let lib = dir.join(name);
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .args(flags)
        .arg(&src)
        .status()
        .expect("a C compiler (cc) builds the test CBLAS");
    assert!(st.success(), "cc failed on {}", src.display());
    lib
}

#[test]
fn any_cblas_works_and_one_that_ignores_the_thread_count_is_named() {
    let dir = tmpdir("gemm-fake");
    let ignores = fake_cblas(&dir, "libfakecblas-ignores.so", &["-DIGNORES_THREADS"]);
    let plain = fake_cblas(&dir, "libfakecblas-plain.so", &[]);
    for (lib, warning) in [
        (
            &ignores,
            "ignored openblas_set_num_threads(2): it reports 1 thread,",
        ),
        (&plain, "has no thread-count call scalebench knows"),
    ] {
        let out = dir.join(format!(
            "out-{}",
            lib.file_name().unwrap().to_string_lossy()
        ));
        let ran = run_gemm_cases(
            &out,
            "blas",
            2,
            &[("SCALEBENCH_BLAS", lib.to_str().unwrap())],
        );
        ran.assert_code(3);
        let r = read_results(&out);
        // Products through a second, independent CBLAS are exact too: the call is right.
        let g = all_exact(&r);
        assert_eq!(g.library.as_deref(), Some(lib.to_str().unwrap()));
        assert!(g.version.starts_with("unknown CBLAS"), "{}", g.version);
        let p = r.launches[0].provenance.as_ref().unwrap();
        let named = p
            .warnings
            .iter()
            .find(|w| w.contains(warning))
            .unwrap_or_else(|| panic!("no {warning:?} in {:?}", p.warnings));
        assert!(named.contains(lib.to_str().unwrap()), "{named}");
    }
}

#[test]
fn the_spec_key_run_gemm_is_read_and_checked() {
    let path = Path::new("study.toml");
    let ok = "[axes]\nworkloads = \"matmul\"\n[run]\ngemm = \"gemm-crate\"\n";
    let spec = scalebench::config::parse(path, ok).unwrap();
    assert_eq!(spec.settings.gemm, GemmChoice::GemmCrate);
    let unset = "[axes]\nworkloads = \"matmul\"\n";
    assert_eq!(
        scalebench::config::parse(path, unset)
            .unwrap()
            .settings
            .gemm,
        GemmChoice::Auto
    );
    let bad = "[axes]\nworkloads = \"matmul\"\n[run]\ngemm = \"mkl\"\n";
    let e = scalebench::config::parse(path, bad)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("study.toml:4:8: run.gemm: unknown GEMM provider 'mkl': expected one of auto, blas, gemm-crate"),
        "{e}"
    );
}

#[test]
fn blas_in_hybrid_mode_from_two_worker_threads() {
    // Two devices of one rank call the library at once, each from its own worker thread.
    for (threads, shared_pool_warning) in [(1, false), (2, true)] {
        let out = tmpdir("gemm-hybrid").join("out");
        let t = threads.to_string();
        mpirun(
            1,
            &gemm_case_args(
                &out,
                &["--topology", "hybrid", "--devices-per-node", "2"],
                &[],
                "blas",
                &["--threads-per-device", &t],
            ),
        )
        .assert_code(3);
        let r = read_results(&out);
        assert_eq!(all_exact(&r).provider, "blas");
        let warnings = &r.launches[0].provenance.as_ref().unwrap().warnings;
        assert_eq!(
            warnings.iter().any(|w| w.contains("share it")),
            shared_pool_warning,
            "{warnings:?}"
        );
    }
}
