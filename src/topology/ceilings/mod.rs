//! Ceilings of this host's CPUs, measured: the floating-point peak of each vector instruction
//! set from an FMA microkernel ([`fma`]), memory bandwidth from STREAM Copy and Triad
//! ([`stream`]), on one CPU and on all the CPUs offered; and whether the GEMM library runs
//! the CPU's best kernel ([`kernel`]). Each ceiling says how it was obtained.

pub mod cache;
pub mod fma;
pub mod gpu;
pub mod kernel;
pub mod network;
pub mod stream;
pub mod theory;

use crate::params::cpulist::format_cpulist;
use crate::results::ceilings::{Ceiling, CeilingSource, CeilingUnit};
use crate::topology::load;
use fma::{Isa, Precision};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

/// How much to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuOptions {
    /// Every instruction set the CPU runs (`scalebench ceilings`), or only its best (a launch).
    pub all_isas: bool,
    /// STREAM Copy and Triad as well.
    pub stream: bool,
    /// Length of one timed FMA run, seconds.
    pub flop_run_s: f64,
    /// Timed runs of each measurement; the best is kept.
    pub repeats: usize,
    /// Largest STREAM array, bytes (a launch caps it to keep its start-up short).
    pub stream_max_array_bytes: u64,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            all_isas: false,
            stream: true,
            flop_run_s: 0.01,
            repeats: 3,
            stream_max_array_bytes: 1 << 30,
        }
    }
}

/// The ceilings of the CPUs in `cpus` (the CPUs offered to the launch or command).
pub fn cpu_ceilings(cpus: &[u32], opts: &CpuOptions) -> Vec<Ceiling> {
    let mut out = Vec::new();
    let isas = fma::supported();
    if cpus.is_empty() || isas.is_empty() {
        let why = if cpus.is_empty() {
            "no CPU is offered to this process"
        } else {
            "the FMA microkernel is written for x86-64 only so far"
        };
        for p in [Precision::F32, Precision::F64] {
            out.push(unknown(
                &format!("cpu.peak.{}", p.name()),
                &format!("{} floating-point peak", p.name()),
                CeilingUnit::Gflops,
                why,
            ));
        }
    } else {
        let chosen: Vec<Isa> = if opts.all_isas {
            isas.clone()
        } else {
            isas.last().copied().into_iter().collect()
        };
        for p in [Precision::F32, Precision::F64] {
            for &isa in &chosen {
                out.extend(flop_ceilings(isa, p, cpus, opts));
            }
        }
    }
    if opts.stream {
        out.extend(stream_ceilings(cpus, opts.stream_max_array_bytes));
    }
    out
}

/// How a launch measures for the host cache: rounds spread over time, within a time budget.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundsPlan {
    /// Rounds of the FMA peaks (each a `repeats`-best of short runs).
    pub rounds: u32,
    /// Of those, the first `stream_rounds` also run STREAM (arrays ≥ 4 × the last-level cache).
    pub stream_rounds: u32,
    /// Pause between rounds, seconds: the rounds sample different moments (a VM's clock and
    /// neighbours change over seconds), not one.
    pub gap_s: f64,
    /// No round (and no STREAM run) starts that would end past this many seconds by the
    /// estimate (the last round's time; STREAM's from its bytes over `copy_gbps`); at least one
    /// FMA round runs. `None`: no limit (a sweep's end).
    pub budget_s: Option<f64>,
    /// The one-CPU STREAM Copy rate known from earlier rounds, GB/s, for STREAM's estimate.
    pub copy_gbps: Option<f64>,
    pub each: CpuOptions,
}

/// The copy rate assumed for STREAM's cost before any was measured: low on purpose (one core
/// of a current server streams 8-20 GB/s), so the estimate errs long.
const ASSUMED_COPY_GBPS: f64 = 4.0;

impl Default for RoundsPlan {
    fn default() -> Self {
        RoundsPlan {
            rounds: cache::FULL_ROUNDS,
            stream_rounds: cache::FULL_STREAM_ROUNDS,
            gap_s: 0.05,
            budget_s: None,
            copy_gbps: None,
            each: CpuOptions {
                all_isas: false,
                stream: true,
                flop_run_s: 0.01,
                repeats: 2,
                stream_max_array_bytes: 1 << 30,
            },
        }
    }
}

/// Seconds one STREAM run (one CPU, then all of `cpus`) is expected to take over `copy_gbps`:
/// three arrays written once, then each pass's Copy (2 arrays) and Triad (3). Pure.
pub fn stream_estimate_s(array_bytes: u64, passes: u32, cpus: usize, copy_gbps: f64) -> f64 {
    let bytes = array_bytes as f64 * (3.0 + 5.0 * f64::from(passes));
    let scopes = if cpus > 1 { 2.0 } else { 1.0 };
    scopes * bytes / (copy_gbps.max(0.1) * 1e9)
}

/// Rounds of `cpus` for the host cache: up to `plan.rounds` rounds of the best instruction
/// set's peaks, the first `plan.stream_rounds` with STREAM, spread over time and kept within
/// `plan.budget_s`; each round with when it ran and how busy the host's other processes kept
/// its CPUs; and the theoretical one-CPU peaks.
pub fn measured_in_rounds(cpus: &[u32], plan: &RoundsPlan) -> cache::Fresh {
    let t0 = Instant::now();
    let array_bytes = stream_elements(plan.each.stream_max_array_bytes) as u64 * 8;
    let mut stream_s = stream_estimate_s(
        array_bytes,
        STREAM_PASSES as u32,
        cpus.len(),
        plan.copy_gbps.unwrap_or(ASSUMED_COPY_GBPS),
    );
    let (mut rounds, mut fma_s, mut streams) = (Vec::new(), 0.0f64, 0);
    let fits = |more: f64| {
        plan.budget_s
            .is_none_or(|b| t0.elapsed().as_secs_f64() + more <= b)
    };
    for r in 0..plan.rounds.max(1) {
        if r > 0 {
            if !fits(plan.gap_s + fma_s) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_secs_f64(plan.gap_s.max(0.0)));
        }
        let (busy0, own0, at) = (
            load::host_busy_cpu_s(),
            load::process_cpu_s(),
            Instant::now(),
        );
        let unix_s = crate::results::now_unix_s();
        let opts = CpuOptions {
            stream: false,
            ..plan.each.clone()
        };
        let mut ceilings = cpu_ceilings(cpus, &opts);
        fma_s = at.elapsed().as_secs_f64();
        if plan.each.stream && streams < plan.stream_rounds {
            if fits(stream_s) {
                let s0 = Instant::now();
                ceilings.extend(stream_ceilings(cpus, plan.each.stream_max_array_bytes));
                stream_s = s0.elapsed().as_secs_f64();
                streams += 1;
            } else if r == 0 {
                ceilings.extend(stream_skipped(cpus, array_bytes, stream_s, plan.budget_s));
            }
        }
        let wall = at.elapsed().as_secs_f64();
        let other_busy_cpus = busy0
            .zip(load::host_busy_cpu_s())
            .map(|(a, b)| ((b - a - (load::process_cpu_s() - own0)) / wall.max(1e-3)).max(0.0));
        rounds.push(cache::Round {
            unix_s,
            other_busy_cpus,
            ceilings,
        });
    }
    cache::Fresh {
        rounds,
        theory: cpus.first().map_or(Vec::new(), |&c| theory::host(c)),
        seconds: t0.elapsed().as_secs_f64(),
    }
}

/// STREAM's ceilings as unknown, with why: its estimated time is past the budget.
fn stream_skipped(
    cpus: &[u32],
    array_bytes: u64,
    est_s: f64,
    budget_s: Option<f64>,
) -> Vec<Ceiling> {
    let why = format!(
        "not measured yet: STREAM over 3 arrays of {} (4 × the last-level cache) would take about {est_s:.1} s, past this launch's budget of {:.1} s for ceilings; a sweep's end measures it",
        crate::units::format_bytes(array_bytes),
        budget_s.unwrap_or(0.0)
    );
    let mut scopes = vec!["one_cpu"];
    if cpus.len() > 1 {
        scopes.push("all_cpus");
    }
    let mut out = Vec::new();
    for scope in scopes {
        for (k, name) in [("copy", "Copy"), ("triad", "Triad")] {
            out.push(unknown(
                &format!("cpu.mem.{k}.{scope}"),
                &format!("memory bandwidth, STREAM {name}, {}", cpus_text(cpus)),
                CeilingUnit::Gbps,
                &why,
            ));
        }
    }
    out
}

fn unknown(id: &str, what: &str, unit: CeilingUnit, why: &str) -> Ceiling {
    Ceiling {
        id: id.into(),
        what: what.into(),
        unit,
        value: None,
        source: CeilingSource::Unknown,
        detail: why.into(),
    }
}

fn cpus_text(cpus: &[u32]) -> String {
    let n = cpus.len();
    format!(
        "{n} {} ({})",
        if n == 1 { "CPU" } else { "CPUs" },
        format_cpulist(cpus)
    )
}

/// One CPU's and all CPUs' peak at `isa` and `p`.
fn flop_ceilings(isa: Isa, p: Precision, cpus: &[u32], opts: &CpuOptions) -> Vec<Ceiling> {
    let op = if isa == Isa::Sse2 { "mul+add" } else { "FMA" };
    let method = |threads: &str| {
        format!(
            "12 independent {op} chains per thread, best of {} runs of about {:.0} ms, {threads}",
            opts.repeats,
            opts.flop_run_s * 1e3
        )
    };
    let id = |scope: &str| format!("cpu.peak.{}.{}.{scope}", p.name(), isa.name());
    let first = cpus[0];
    let one = on_cpu(first, || {
        fma::measure_thread(isa, p, opts.flop_run_s, opts.repeats)
    })
    .flatten();
    let Some(one) = one else {
        return vec![unknown(
            &id("one_cpu"),
            &format!("{} {op} peak, {}", p.name(), isa.name()),
            CeilingUnit::Gflops,
            "the CPU lacks the instructions",
        )];
    };
    let mut out = vec![Ceiling {
        id: id("one_cpu"),
        what: format!("{} {op} peak, {}, 1 CPU ({first})", p.name(), isa.name()),
        unit: CeilingUnit::Gflops,
        value: Some(one),
        source: CeilingSource::Measured,
        detail: method(&format!(
            "1 thread bound to CPU {first}, timed by its own CPU time"
        )),
    }];
    if cpus.len() > 1 {
        // as many iterations as one run of the target length on one CPU
        let iters = (opts.flop_run_s * one * 1e9 / fma::flops(isa, p, 1)).max(1.0) as u64;
        let per_thread = together(cpus, opts.repeats, |_| {
            std::hint::black_box(fma::kernel(isa, p, iters));
        });
        let all: f64 = per_thread
            .iter()
            .map(|s| fma::flops(isa, p, iters) / s / 1e9)
            .sum();
        out.push(Ceiling {
            id: id("all_cpus"),
            what: format!(
                "{} {op} peak, {}, {}",
                p.name(),
                isa.name(),
                cpus_text(cpus)
            ),
            unit: CeilingUnit::Gflops,
            value: Some(all),
            source: CeilingSource::Measured,
            detail: method(
                "1 thread bound to each CPU, all started at once, each timed by its own CPU time; the sum",
            ),
        });
    }
    out
}

/// Runs `f` on a thread bound to `cpu` (the caller's own binding is left alone).
fn on_cpu<T: Send>(cpu: u32, f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|s| {
        s.spawn(move || {
            crate::topology::affinity::bind_current_thread(&[cpu]).ok()?;
            Some(f())
        })
        .join()
        .ok()
        .flatten()
    })
}

/// Runs `work(thread index)` on one thread bound to each of `cpus`, all starting together,
/// `repeats` timed times after one untimed; returns each thread's best time, seconds, by its
/// own CPU time (wall time where that clock is missing). CPU time, because on a busy host a
/// thread descheduled for part of a 10 ms run would read a peak far below its core's (seen:
/// 165-182 GFLOP/s against 480 idle with three busy loops on this 2-CPU VM); the threads
/// still start together, so on an idle host they share the cores' power and clock budget.
fn together(cpus: &[u32], repeats: usize, work: impl Fn(usize) + Sync) -> Vec<f64> {
    let barrier = Barrier::new(cpus.len());
    let best = Mutex::new(vec![f64::INFINITY; cpus.len()]);
    std::thread::scope(|s| {
        for (t, &cpu) in cpus.iter().enumerate() {
            let (barrier, best, work) = (&barrier, &best, &work);
            s.spawn(move || {
                let _ = crate::topology::affinity::bind_current_thread(&[cpu]);
                for r in 0..=repeats.max(1) {
                    barrier.wait();
                    let (t0, c0) = (Instant::now(), fma::thread_cpu_s());
                    work(t);
                    let took = match (c0, fma::thread_cpu_s()) {
                        (Some(a), Some(b)) if b > a => b - a,
                        _ => t0.elapsed().as_secs_f64(),
                    };
                    barrier.wait();
                    if r > 0 {
                        let mut b = best.lock().unwrap_or_else(|e| e.into_inner());
                        b[t] = b[t].min(took);
                    }
                }
            });
        }
    });
    best.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// STREAM passes per run (the first untimed).
const STREAM_PASSES: usize = 3;

/// STREAM's elements per array: 4 × the last-level cache, at most an eighth of the memory
/// available over the three arrays, and at most `max_array_bytes`.
fn stream_elements(max_array_bytes: u64) -> usize {
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(1 << 30, |kib| kib * 1024 / 8 / 3);
    stream::elements(
        stream::last_level_cache_bytes().unwrap_or(0),
        avail.min(max_array_bytes),
    )
}

/// STREAM Copy and Triad on one CPU and on all of them.
fn stream_ceilings(cpus: &[u32], max_array_bytes: u64) -> Vec<Ceiling> {
    let ids = |scope: &str| {
        (
            format!("cpu.mem.copy.{scope}"),
            format!("cpu.mem.triad.{scope}"),
        )
    };
    if cpus.is_empty() {
        let (c, t) = ids("one_cpu");
        let why = "no CPU is offered to this process";
        return vec![
            unknown(&c, "STREAM Copy", CeilingUnit::Gbps, why),
            unknown(&t, "STREAM Triad", CeilingUnit::Gbps, why),
        ];
    }
    let llc = stream::last_level_cache_bytes();
    let n = stream_elements(max_array_bytes);
    // MiB with one decimal: the array is an element count, rarely a whole unit (1008970KiB)
    let size = format!("{:.1} MiB", (n * 8) as f64 / (1u64 << 20) as f64);
    let cache = match llc {
        None => "last-level cache unknown".to_string(),
        // capped (a launch's short start-up): part of the arrays may stay in cache
        Some(b) if (n as u64) * 8 < 4 * b => format!(
            "capped below 4 × the last-level cache of {}, so caches may raise the figure",
            crate::units::format_bytes(b)
        ),
        Some(b) => format!(
            "4 × the last-level cache of {}",
            crate::units::format_bytes(b)
        ),
    };
    // a hypervisor's cache sizes are its own, not necessarily the host's
    let cache = if std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.lines()
            .any(|l| l.starts_with("flags") && l.contains(" hypervisor"))
    }) {
        format!("{cache}; sysfs sizes under a hypervisor, which may not be the host's")
    } else {
        cache
    };
    let passes = STREAM_PASSES;
    let mut out = Vec::new();
    let mut scopes = vec![("one_cpu", vec![cpus[0]])];
    if cpus.len() > 1 {
        scopes.push(("all_cpus", cpus.to_vec()));
    }
    for (scope, set) in scopes {
        let r = stream::measure(n, set.len(), passes, &|t| {
            let _ = crate::topology::affinity::bind_current_thread(&[set[t]]);
        });
        let how = |kernel: &str, bytes: f64| {
            format!(
                "STREAM {kernel} ({bytes:.0} B/element counted, write-allocate not), 3 arrays of {size} f64 ({cache}), best of {} passes after 1 untimed, {} bound one per CPU",
                passes - 1,
                if set.len() == 1 { "1 thread".to_string() } else { format!("{} threads", set.len()) }
            )
        };
        let (c, t) = ids(scope);
        out.push(Ceiling {
            id: c,
            what: format!("memory bandwidth, STREAM Copy, {}", cpus_text(&set)),
            unit: CeilingUnit::Gbps,
            value: Some(r.copy_gbps),
            source: CeilingSource::Measured,
            detail: how("Copy", stream::COPY_BYTES_PER_ELEMENT),
        });
        out.push(Ceiling {
            id: t,
            what: format!("memory bandwidth, STREAM Triad, {}", cpus_text(&set)),
            unit: CeilingUnit::Gbps,
            value: Some(r.triad_gbps),
            source: CeilingSource::Measured,
            detail: how("Triad", stream::TRIAD_BYTES_PER_ELEMENT),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ceiling_has_a_value_or_says_why_not() {
        let cpus = crate::topology::affinity::current_thread_cpus().unwrap();
        let opts = CpuOptions {
            all_isas: true,
            stream: false,
            flop_run_s: 0.001,
            repeats: 1,
            stream_max_array_bytes: 16 << 20,
        };
        let c = cpu_ceilings(&cpus, &opts);
        assert!(!c.is_empty());
        for x in &c {
            match x.source {
                CeilingSource::Unknown => {
                    assert!(x.value.is_none() && !x.detail.is_empty(), "{x:?}")
                }
                _ => assert!(x.value.is_some_and(|v| v.is_finite() && v > 0.0), "{x:?}"),
            }
        }
        // no CPU offered: unknown with the reason, never a number
        let none = cpu_ceilings(
            &[],
            &CpuOptions {
                stream: true,
                ..opts
            },
        );
        assert!(none
            .iter()
            .all(|x| x.source == CeilingSource::Unknown && x.value.is_none()));
        assert!(none.iter().any(|x| x.id.starts_with("cpu.mem.")));
    }
}
