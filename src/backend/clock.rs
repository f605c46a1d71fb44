//! The backends' host clock: how fine its steps are, measured where the clock is read (the
//! CUDA backend measures its events the same way, in `cuda/events.rs`).

/// Measures the smallest non-zero step of a clock that returns seconds.
pub(crate) fn clock_resolution_s(mut now: impl FnMut() -> f64) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..200 {
        let a = now();
        let mut b = now();
        let mut spins = 0;
        while b == a && spins < 1_000_000 {
            b = now();
            spins += 1;
        }
        if b > a {
            best = best.min(b - a);
        }
    }
    if best.is_finite() {
        best
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_resolution_of_a_coarse_clock() {
        let mut t = 0u64;
        let r = clock_resolution_s(|| {
            t += 1;
            (t / 10) as f64 * 1e-3
        });
        assert!((r - 1e-3).abs() < 1e-12, "{r}");
    }
}
