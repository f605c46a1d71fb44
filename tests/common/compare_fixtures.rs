//! Results files with known truth for the `compare` tests: cases cloned from the golden file's
//! real records, given seeded samples from a chosen noise distribution and a chosen true time
//! per case, with every headline number (time, rates, summary) made consistent with them.

use scalebench::results::io::{read_results, write_results};
use scalebench::results::schema::ResultsFile;
use scalebench::stats::summarize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Deterministic random numbers (SplitMix64; Box–Muller normals).
pub use scalebench::stats::SplitMix64 as Rng;

/// Multiplicative timing noise: lognormal with `sigma`, and with probability `outlier_p` a
/// sample 1.5–3× slower (a preempted batch). Median 1 for the lognormal part.
pub fn timing_noise(rng: &mut Rng, sigma: f64, outlier_p: f64) -> f64 {
    let x = (sigma * rng.normal()).exp();
    if rng.uniform() < outlier_p {
        x * (1.5 + 1.5 * rng.uniform())
    } else {
        x
    }
}

/// The golden results file (a real 2-rank run: allreduce, allgather, matmul, batch_matmul).
pub fn golden() -> ResultsFile {
    static GOLDEN: OnceLock<ResultsFile> = OnceLock::new();
    GOLDEN
        .get_or_init(|| {
            read_results(Path::new("tests/golden/results-v1.json")).expect("golden file")
        })
        .clone()
}

/// `cases` cases cloned from the golden records (unique parameters, hence ids), each with
/// `samples` samples = true time × noise, true time = (1 + k % 7) µs × `scale(k)`.
pub fn synthetic(
    cases: usize,
    samples: usize,
    rng: &mut Rng,
    noise: &mut dyn FnMut(&mut Rng) -> f64,
    scale: &dyn Fn(usize) -> f64,
) -> ResultsFile {
    let mut f = golden();
    let templates = std::mem::take(&mut f.cases);
    f.cases = (0..cases)
        .map(|k| {
            let mut c = templates[k % templates.len()].clone();
            if c.params.workload.is_collective() {
                c.params.requested_bytes = Some(1024 * (k as u64 + 1));
                c.bytes = c.params.requested_bytes;
            } else if let Some(s) = c.params.shape.as_mut() {
                s.k = 32 + k as u64;
            }
            c.id = c.params.id();
            let flop_per_op = c.gflops.zip(c.timing.as_ref()).map(|(g, t)| g * t.time_s);
            let flop_total = c
                .gflops_total
                .zip(c.timing.as_ref())
                .map(|(g, t)| g * t.time_s);
            let t = c.timing.as_mut().expect("golden cases are measured");
            let true_s = 1e-6 * (1.0 + (k % 7) as f64) * scale(k);
            t.samples_s = (0..samples).map(|_| true_s * noise(rng)).collect();
            t.iters = samples as u32 * 10;
            t.batches = samples as u32;
            t.stats_s = summarize(&t.samples_s).expect("samples");
            t.time_s = t.stats_s.mean;
            t.per_rank_mean_s = vec![t.time_s; t.per_rank_mean_s.len()];
            let time_s = t.time_s;
            if let (Some(b), Some(factor)) = (c.bytes, c.busbw_factor) {
                let algbw = b as f64 / time_s / 1e9;
                c.algbw_gbps = Some(algbw);
                c.busbw_gbps = Some(algbw * factor);
            }
            c.gflops = flop_per_op.map(|f| f / time_s);
            c.gflops_total = flop_total.map(|f| f / time_s);
            c
        })
        .collect();
    f
}

/// A file of `cases` cases with 20 samples of 2 % lognormal noise, case k `scale(k)` × slower.
pub fn simple(cases: usize, seed: u64, scale: &dyn Fn(usize) -> f64) -> ResultsFile {
    let mut rng = Rng(seed);
    synthetic(
        cases,
        20,
        &mut rng,
        &mut |r| timing_noise(r, 0.02, 0.0),
        scale,
    )
}

/// Writes `f` as `DIR/NAME` and returns the path.
pub fn write(dir: &Path, name: &str, f: &ResultsFile) -> PathBuf {
    let p = dir.join(name);
    write_results(&p, f).expect("write results");
    p
}
