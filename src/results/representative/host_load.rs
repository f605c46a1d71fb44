//! What other work on a launch's host and its CPU clock say about a measurement: other
//! scalebench processes or foreign load in the launch's window, and a clock that moved while
//! a case ran.

use super::{warning, CO_SCHEDULED, CPU_FREQUENCY_CHANGED, FREQUENCY_CHANGE, HOST_BUSY};
use crate::results::schema::{HostLoad, Unrepresentative};
use crate::units::count;

/// Foreign work beyond the free CPUs, in CPUs on average, that makes a host busy: a quarter of
/// a CPU taken from a busy-polling rank already shows as noise in its small messages.
const FOREIGN_MARGIN_CPUS: f64 = 0.25;
/// What /proc/stat's busy time can be off by, per logical CPU, seconds: each CPU's counter
/// moves in ticks of 1/USER_HZ (10 ms on every Linux ABI), read once at each end of the window,
/// and a tick is charged whole to whatever ran at that instant. Foreign load below this is not
/// seen: CI at 0dc21b4 called a 0.03 s launch's host busy from 18 ms (under 2 ticks) of other
/// CPU time, "0.60 CPUs".
const PROC_STAT_RESOLUTION_S_PER_CPU: f64 = 2.0 * 0.01;
/// Other scalebench processes count as co-scheduled from this share of a CPU over the window.
const CO_SCHEDULED_SHARE: f64 = 0.10;
/// Another launch's rank (`scalebench run`) counts from this much CPU in the window, however
/// short its overlap was: its ranks busy-poll, so any overlap competes (seen in CI: a launch of
/// ~1 s inside a 5.4 s window used 0.52 CPU-s, under the share).
const CO_SCHEDULED_RANK_CPU_S: f64 = 0.05;

/// Whether `command` is a launch's rank (`… scalebench run …`), not a driver such as `sweep`.
fn is_rank(command: &str) -> bool {
    command.split_whitespace().nth(1) == Some("run")
}

/// What other work on the host while a launch ran says (its ranks keep `busy` threads busy
/// there): other scalebench processes that used CPU in the window, and foreign CPU time above
/// what the launch left free (logical CPUs − busy threads, plus [`FOREIGN_MARGIN_CPUS`]).
pub(crate) fn co_scheduling(h: &HostLoad, busy: u32) -> Vec<Unrepresentative> {
    let mut out = Vec::new();
    if h.window_s <= 0.0 {
        return out;
    }
    let others: f64 = h.other_scalebench.iter().map(|o| o.cpu_s).sum();
    let rank_cpu_s: f64 = h
        .other_scalebench
        .iter()
        .filter(|o| is_rank(&o.command))
        .map(|o| o.cpu_s)
        .sum();
    if !h.other_scalebench.is_empty()
        && (others >= CO_SCHEDULED_SHARE * h.window_s || rank_cpu_s >= CO_SCHEDULED_RANK_CPU_S)
    {
        let pids: Vec<String> = h
            .other_scalebench
            .iter()
            .map(|o| o.pid.to_string())
            .collect();
        out.push(warning(
            CO_SCHEDULED,
            format!(
                "host {}: {} ({} {}) used {:.2} CPU-s during this launch's {:.2} s",
                h.host,
                count(
                    h.other_scalebench.len(),
                    "other scalebench process",
                    "other scalebench processes"
                ),
                if pids.len() == 1 { "pid" } else { "pids" },
                pids.join(", "),
                others,
                h.window_s
            ),
        ));
    }
    let foreign = h.other_cpu_s / h.window_s;
    // judged on what the counters can resolve: the foreign time less their resolution
    let resolved = (h.other_cpu_s - PROC_STAT_RESOLUTION_S_PER_CPU * h.logical_cpus as f64)
        .max(0.0)
        / h.window_s;
    let free = h.logical_cpus as f64 - busy as f64;
    if resolved > free.max(0.0) + FOREIGN_MARGIN_CPUS {
        out.push(warning(
            HOST_BUSY,
            format!(
                "host {}: other processes kept {foreign:.2} CPUs busy on average over {:.2} s, while this launch's {} left {:.0} of {} free",
                h.host,
                h.window_s,
                count(busy as usize, "busy thread", "busy threads"),
                free.max(0.0),
                count(h.logical_cpus as usize, "CPU", "CPUs")
            ),
        ));
    }
    out
}

/// The CPU clock's change over a case, from per-CPU readings (MHz, same CPUs in the same
/// order) at its start and end: a warning when the median clock moved by more than
/// [`FREQUENCY_CHANGE`] of the lower one. `None` when unreadable (no readings) or steady.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // used by the run stage
pub(crate) fn frequency_change(
    host: &str,
    start_mhz: &[f64],
    end_mhz: &[f64],
) -> Option<Unrepresentative> {
    let a = crate::stats::median(start_mhz)?;
    let b = crate::stats::median(end_mhz)?;
    let lo = a.min(b);
    if lo.is_nan() || lo <= 0.0 || !a.is_finite() || !b.is_finite() {
        return None;
    }
    ((a - b).abs() / lo > FREQUENCY_CHANGE).then(|| {
        warning(
            CPU_FREQUENCY_CHANGED,
            format!("host {host}: median CPU clock {a:.0} MHz at the start of the case, {b:.0} MHz at its end"),
        )
    })
}
