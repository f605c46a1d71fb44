//! Memory bandwidth, measured as STREAM does (McCalpin's stream.c 5.10): Copy `c = a` and
//! Triad `a = b + s·c` over f64 arrays each at least four times the last-level cache, the
//! rate counting 16 and 24 bytes per element (write-allocate not counted), from the best of
//! the timed passes after a first one that also faults the pages in.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

/// Bytes STREAM counts per element of Copy and of Triad.
pub const COPY_BYTES_PER_ELEMENT: f64 = 16.0;
pub const TRIAD_BYTES_PER_ELEMENT: f64 = 24.0;

/// Copy and Triad rates, GB/s (1e9 bytes/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamRates {
    pub copy_gbps: f64,
    pub triad_gbps: f64,
}

/// Elements per array: four times `llc_bytes` (STREAM's rule) in f64, at least 2 Mi elements
/// (16 MiB, so a tiny or unknown cache still measures memory), and at most `max_bytes` per array.
pub fn elements(llc_bytes: u64, max_bytes: u64) -> usize {
    let want = (4 * llc_bytes).max(16 << 20).min(max_bytes.max(1 << 20));
    (want / 8) as usize
}

/// STREAM Copy and Triad on `threads.len()` threads, each bound to its CPU (`bind` is called
/// once per thread first, with its index) and working on its own contiguous part of the
/// arrays, which it also touches first (so pages land on its NUMA node). `passes` ≥ 2: the
/// first is not timed. The time of a pass is the slowest thread's, between barriers.
pub fn measure(
    elements: usize,
    threads: usize,
    passes: usize,
    bind: &(dyn Fn(usize) + Sync),
) -> StreamRates {
    let threads = threads.max(1);
    let passes = passes.max(2);
    let chunk = elements.div_ceil(threads);
    let barrier = Barrier::new(threads);
    let best = std::sync::Mutex::new((f64::INFINITY, f64::INFINITY));
    std::thread::scope(|s| {
        for t in 0..threads {
            let (barrier, best) = (&barrier, &best);
            s.spawn(move || {
                bind(t);
                let n = chunk.min(elements.saturating_sub(t * chunk));
                // first touch by the thread that uses them
                let mut a = vec![1.0f64; n];
                let b = vec![2.0f64; n];
                let mut c = vec![0.0f64; n];
                let scalar = black_box(3.0);
                let (mut copy_s, mut triad_s) = (f64::INFINITY, f64::INFINITY);
                for pass in 0..passes {
                    barrier.wait();
                    let t0 = Instant::now();
                    for (ci, ai) in c.iter_mut().zip(&a) {
                        *ci = *ai;
                    }
                    black_box(&mut c);
                    barrier.wait();
                    let t1 = Instant::now();
                    for ((ai, bi), ci) in a.iter_mut().zip(&b).zip(&c) {
                        *ai = bi + scalar * ci;
                    }
                    black_box(&mut a);
                    barrier.wait();
                    let t2 = Instant::now();
                    if pass > 0 {
                        copy_s = copy_s.min((t1 - t0).as_secs_f64());
                        triad_s = triad_s.min((t2 - t1).as_secs_f64());
                    }
                }
                // thread 0's clock spans barrier to barrier: the slowest thread's time
                if t == 0 {
                    *best.lock().unwrap_or_else(|e| e.into_inner()) = (copy_s, triad_s);
                }
            });
        }
    });
    let (copy_s, triad_s) = best.into_inner().unwrap_or_else(|e| e.into_inner());
    // the chunks cover every element once
    let n = elements as f64;
    StreamRates {
        copy_gbps: COPY_BYTES_PER_ELEMENT * n / copy_s / 1e9,
        triad_gbps: TRIAD_BYTES_PER_ELEMENT * n / triad_s / 1e9,
    }
}

/// The last-level cache of this host, bytes: the largest cache level's size times the number
/// of distinct CPU groups sharing one (sysfs); `None` without sysfs.
pub fn last_level_cache_bytes() -> Option<u64> {
    let base = std::path::Path::new("/sys/devices/system/cpu");
    let mut best: Option<(u32, u64, std::collections::BTreeSet<String>)> = None;
    for cpu in std::fs::read_dir(base).ok()?.flatten() {
        let name = cpu.file_name();
        let Some(n) = name.to_str().and_then(|n| n.strip_prefix("cpu")) else {
            continue;
        };
        if n.parse::<u32>().is_err() {
            continue;
        }
        let Ok(caches) = std::fs::read_dir(cpu.path().join("cache")) else {
            continue;
        };
        for c in caches.flatten() {
            let read = |f: &str| std::fs::read_to_string(c.path().join(f)).ok();
            let (Some(level), Some(size), Some(shared)) =
                (read("level"), read("size"), read("shared_cpu_list"))
            else {
                continue;
            };
            let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_size(size.trim()))
            else {
                continue;
            };
            match &mut best {
                Some((l, _, _)) if *l > level => {}
                Some((l, s, groups)) if *l == level => {
                    *s = (*s).max(size);
                    groups.insert(shared.trim().to_string());
                }
                _ => best = Some((level, size, [shared.trim().to_string()].into())),
            }
        }
    }
    best.map(|(_, size, groups)| size * groups.len().max(1) as u64)
}

/// A sysfs cache size: `32768K`, `1M`, or bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_four_times_the_cache_within_bounds() {
        assert_eq!(elements(32 << 20, 1 << 30), (128 << 20) / 8);
        assert_eq!(elements(1 << 20, 1 << 30), (16 << 20) / 8); // at least 16 MiB
        assert_eq!(elements(1 << 30, 256 << 20), (256 << 20) / 8); // at most the cap
    }

    #[test]
    fn sysfs_sizes_parse() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn rates_count_stream_bytes_over_the_arrays() {
        // tiny arrays: the rate is whatever the cache gives, but finite, positive, and the
        // same elements split over 2 threads still cover every element
        let r = measure(1 << 12, 2, 3, &|_| {});
        assert!(r.copy_gbps.is_finite() && r.copy_gbps > 0.0, "{r:?}");
        assert!(r.triad_gbps.is_finite() && r.triad_gbps > 0.0, "{r:?}");
    }
}
