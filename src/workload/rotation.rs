//! `--buffers rotate`: how many buffer sets a collective's timed iterations go through.
//!
//! nccl-tests moves its buffers by one message every iteration through the whole `-e` range
//! ("avoid cache effects"), so a message the GPU's L2 could hold is never found there; OSU
//! reuses one buffer. The two then disagree wherever send and receive fit in the cache (on an
//! H200, 4-16 MiB all-reduce read up to 1.55x faster reused; results/gpu/2026-11-26-h200).
//! Here the rule depends on the device, not on the other sizes of the run: enough sets that
//! one device's buffers together span [`CACHE_MULTIPLE`] times its last-level cache, so
//! whatever an iteration touched was evicted before its set comes round again.

use crate::results::schema::BufferRotation;

/// Footprint over the cache: twice it, so an LRU-like cache has evicted a set before it is
/// used again (one cache's worth is not enough: replacement is not perfect LRU).
pub const CACHE_MULTIPLE: u64 = 2;
/// Sets at most: each is a separate allocation, and at small messages the footprint could
/// only be reached with tens of thousands of them (there, latency, not cache, dominates).
pub const MAX_SETS: u64 = 256;
/// The footprint aimed at where the backend cannot say its cache size: nccl-tests' common
/// `-e 1G`.
pub const UNKNOWN_CACHE_FOOTPRINT_BYTES: u64 = 1 << 30;

/// The sets for buffers of `set_bytes` per device (send + receive, or the in-place buffer)
/// on a device whose last-level cache is `cache_bytes`.
pub fn plan(set_bytes: u64, cache_bytes: Option<u64>) -> BufferRotation {
    let set = set_bytes.max(1);
    let target = cache_bytes.map_or(UNKNOWN_CACHE_FOOTPRINT_BYTES, |c| {
        c.saturating_mul(CACHE_MULTIPLE)
    });
    let sets = target.div_ceil(set).clamp(1, MAX_SETS);
    let footprint_bytes = set.saturating_mul(sets);
    BufferRotation {
        sets: sets as u32,
        footprint_bytes,
        cache_bytes,
        exceeds_cache: cache_bytes
            .is_some_and(|c| footprint_bytes >= c.saturating_mul(CACHE_MULTIPLE)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn sets_span_twice_the_cache() {
        // An H200-like 60 MiB L2, all-reduce of 8 MiB out of place: 16 MiB a set.
        let r = plan(16 * MIB, Some(60 * MIB));
        assert_eq!(r.sets, 8, "ceil(120 / 16)");
        assert_eq!(r.footprint_bytes, 128 * MIB);
        assert!(r.exceeds_cache);
        // One set already twice the cache: nothing to rotate.
        let big = plan(2 << 30, Some(60 * MIB));
        assert_eq!((big.sets, big.exceeds_cache), (1, true));
        // Exactly twice: one set, and it counts.
        assert_eq!(plan(120 * MIB, Some(60 * MIB)).sets, 1);
    }

    #[test]
    fn small_messages_are_capped_and_say_so() {
        let r = plan(16, Some(60 * MIB));
        assert_eq!(r.sets as u64, MAX_SETS);
        assert_eq!(r.footprint_bytes, 16 * MAX_SETS);
        assert!(!r.exceeds_cache, "4 KiB cannot evict a 60 MiB cache");
        // A zero-byte set (nothing to move) still plans one buffer per set.
        assert_eq!(plan(0, Some(MIB)).sets as u64, MAX_SETS);
    }

    #[test]
    fn an_unknown_cache_aims_at_nccl_tests_range_and_claims_nothing() {
        let r = plan(64 * MIB, None);
        assert_eq!(r.sets, 16, "1 GiB / 64 MiB");
        assert_eq!(r.cache_bytes, None);
        assert!(!r.exceeds_cache, "no cache size, no claim");
    }
}
