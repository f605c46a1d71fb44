//! Documented limits on what a spec or `scalebench run` may ask for, checked at parse time.
//!
//! They are far above any real study (the largest machines have ~10^4 nodes and 8 GPUs each)
//! and exist so that a typo (`devices_per_node = 100000`) or a hostile input gets a clear error
//! instead of an overflow, a 3 GB plan or a process that spawns threads until it is killed.
//! README ("Limits") lists the same numbers.

/// Cases in one plan (a sweep, or one `run`): above the 117,600-case planner bench, far below
/// the millions of cases whose plan exhausts memory.
pub const MAX_CASES: usize = 250_000;
/// Combinations a spec's axes may multiply to before exclusions (enumerating them costs time
/// even when most are excluded).
pub const MAX_COMBINATIONS: u128 = 1_000_000;
/// Nodes of one launch.
pub const MAX_NODES: u32 = 65_536;
/// Devices (GPUs, or CPU ranks in pure mode) per node.
pub const MAX_DEVICES_PER_NODE: u32 = 1_024;
/// Devices (and so MPI ranks in pure mode) of one launch.
pub const MAX_DEVICES: u32 = 1 << 20;
/// CPU threads per device's GEMM.
pub const MAX_THREADS_PER_DEVICE: u32 = 1_024;
/// A collective's size (one buffer), bytes: 1 TiB.
pub const MAX_SIZE_BYTES: u64 = 1 << 40;
/// Each GEMM dimension (M, N, K).
pub const MAX_GEMM_DIM: u64 = 1 << 20;
/// batch_matmul's batch.
pub const MAX_BATCH: u32 = 1 << 20;
/// Timed or warm-up iterations, batches and validated iterations per case.
pub const MAX_ITERS: u32 = 100_000_000;
/// Any time given in seconds (time budget, launch timeout, op timeout): 30 days.
pub const MAX_SECONDS: f64 = 30.0 * 24.0 * 3600.0;

/// A value above a documented limit (or a time that is not a usable number of seconds).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LimitError {
    /// `what` (an option or key) is above `max`; `fix` says what to do.
    #[error("{what} {value} is above the limit of {max}: {fix} (limits are listed in README.md, \"Limits\")")]
    Count {
        what: String,
        value: u64,
        max: u64,
        fix: String,
    },
    /// A time that is not finite and positive.
    #[error("{what} {}: give a positive number of seconds, e.g. {example}", crate::units::echo_f64(*.value_s))]
    NotPositive {
        what: String,
        value_s: f64,
        example: String,
    },
    /// A time above [`MAX_SECONDS`].
    #[error("{what} {}: above the limit of {} s (30 days): give a smaller number of seconds, e.g. {example}", crate::units::echo_f64(*.value_s), MAX_SECONDS)]
    TooLong {
        what: String,
        value_s: f64,
        example: String,
    },
    /// Nodes × devices per node above [`MAX_DEVICES`].
    #[error("{} × {} = {devices} devices, above the limit of {}: use fewer nodes or devices per node (limits are listed in README.md, \"Limits\")", crate::units::count(*.nodes as usize, "node", "nodes"), crate::units::count(*.devices_per_node as usize, "device", "devices"), MAX_DEVICES)]
    Devices {
        nodes: u32,
        devices_per_node: u32,
        devices: u64,
    },
}

/// Checks a count against `1..=max` (`what` names the option or key, `fix` what to do).
pub fn count(what: &str, value: u64, max: u64, fix: &str) -> Result<(), LimitError> {
    if value > max {
        return Err(LimitError::Count {
            what: what.to_string(),
            value,
            max,
            fix: fix.to_string(),
        });
    }
    Ok(())
}

/// Checks a number of seconds: finite, positive and at most [`MAX_SECONDS`].
pub fn check_seconds(what: &str, value_s: f64, example: &str) -> Result<(), LimitError> {
    let (what, example) = (what.to_string(), example.to_string());
    if !(value_s.is_finite() && value_s > 0.0) {
        return Err(LimitError::NotPositive {
            what,
            value_s,
            example,
        });
    }
    if value_s > MAX_SECONDS {
        return Err(LimitError::TooLong {
            what,
            value_s,
            example,
        });
    }
    Ok(())
}

/// Checks a launch shape: nodes, devices per node, their product and GEMM threads.
pub fn shape(
    nodes: u32,
    devices_per_node: u32,
    threads_per_device: u32,
    names: [&str; 3],
) -> Result<(), LimitError> {
    count(
        names[0],
        u64::from(nodes),
        u64::from(MAX_NODES),
        "use fewer nodes",
    )?;
    count(
        names[1],
        u64::from(devices_per_node),
        u64::from(MAX_DEVICES_PER_NODE),
        "use fewer devices (ranks) per node",
    )?;
    count(
        names[2],
        u64::from(threads_per_device),
        u64::from(MAX_THREADS_PER_DEVICE),
        "use at most one thread per core",
    )?;
    let devices = u64::from(nodes) * u64::from(devices_per_node);
    if devices > u64::from(MAX_DEVICES) {
        return Err(LimitError::Devices {
            nodes,
            devices_per_node,
            devices,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_the_value_the_limit_and_a_fix() {
        let e = shape(65_536, 65_536, 1, ["nodes", "devices_per_node", "threads"]).unwrap_err();
        assert!(matches!(&e, LimitError::Count { max: 1024, .. }));
        let e = e.to_string();
        assert!(
            e.contains("devices_per_node 65536") && e.contains("1024"),
            "{e}"
        );
        let e = shape(65_536, 1_024, 1, ["nodes", "devices_per_node", "threads"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("67108864 devices") && e.contains("fewer"), "{e}");
        assert!(shape(4, 8, 2, ["a", "b", "c"]).is_ok());
        let e = shape(1, 1, 100_000, ["a", "b", "threads_per_device"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("threads_per_device 100000"), "{e}");
        for bad in [-1.0, 0.0, f64::NAN, f64::INFINITY, 1e308] {
            assert!(check_seconds("--t", bad, "60").is_err(), "{bad}");
        }
        assert!(check_seconds("--t", 0.001, "60").is_ok());
        assert_eq!(
            check_seconds("--t", 3e6, "60").unwrap_err().to_string(),
            "--t 3000000: above the limit of 2592000 s (30 days): give a smaller number of seconds, e.g. 60"
        );
    }
}
