//! What else kept a host busy while a launch ran: /proc/stat and /proc/loadavg around the
//! launch, this process's CPU time, and the other scalebench processes on the host. Parsers are
//! pure (tested on text); the readers return empty snapshots where /proc is missing.

use crate::results::schema::{HostLoad, OtherProcess};
use std::collections::{BTreeMap, BTreeSet};

/// Host-wide CPU counters from the `cpu` line of /proc/stat, clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTicks {
    /// user + nice + system + irq + softirq (guest time is inside user already).
    pub busy: u64,
    pub steal: u64,
}

/// One look at the host: counters, load average, and each scalebench process's CPU time.
#[derive(Debug, Clone, Default)]
pub struct HostSnapshot {
    pub ticks: CpuTicks,
    pub loadavg_1m: Option<f64>,
    /// pid → (command line, CPU seconds so far) of every process named `scalebench`.
    pub scalebench: BTreeMap<u32, (String, f64)>,
}

/// The `cpu` line of /proc/stat.
pub fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal guest guest_nice
    Some(CpuTicks {
        busy: at(0) + at(1) + at(2) + at(5) + at(6),
        steal: at(7),
    })
}

/// The 1-minute figure of /proc/loadavg.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// (parent pid, CPU ticks user + system) from a /proc/<pid>/stat line (the command name, in
/// parentheses, may hold spaces: fields are counted after its closing parenthesis).
pub fn parse_pid_stat(text: &str) -> Option<(u32, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // after ")": state(0) ppid(1) ... utime(11) stime(12)
    let ppid = f.get(1)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf takes an integer name and no pointers; it only reads system state.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// CPU seconds this process (all its threads) has used so far (getrusage).
pub fn process_cpu_s() -> f64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a live local the call writes into; RUSAGE_SELF needs nothing else.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The parent of `pid`, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_pid_stat(&text).map(|(pp, _)| pp)
}

/// This process and its ancestors (a sweep's parent `scalebench` is not another launch).
pub fn own_lineage() -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let mut pid = std::process::id();
    while pid > 1 && out.insert(pid) {
        match parent_of(pid) {
            Some(p) => pid = p,
            None => break,
        }
    }
    out
}

/// Reads the host now.
pub fn snapshot() -> HostSnapshot {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    HostSnapshot {
        ticks: parse_proc_stat(&read("/proc/stat")).unwrap_or_default(),
        loadavg_1m: parse_loadavg(&read("/proc/loadavg")),
        scalebench: scalebench_processes(),
    }
}

/// Adds what a look between cases saw (`during`) to the snapshot at the end: a launch that
/// started and ended inside the window is in neither end's snapshot. The later reading of a
/// process wins (CPU time only grows).
pub fn merge_seen(after: &mut HostSnapshot, during: BTreeMap<u32, (String, f64)>) {
    for (pid, v) in during {
        after.scalebench.entry(pid).or_insert(v);
    }
}

/// pid → (command line, CPU seconds so far) of every process named `scalebench`.
pub fn scalebench_processes() -> BTreeMap<u32, (String, f64)> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let hz = ticks_per_s();
    let mut scalebench = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if read(&format!("/proc/{pid}/comm")).trim() != "scalebench" {
                continue;
            }
            let Some((_, t)) = parse_pid_stat(&read(&format!("/proc/{pid}/stat"))) else {
                continue;
            };
            let cmd = read(&format!("/proc/{pid}/cmdline")).replace('\0', " ");
            let cmd: String = cmd.trim().chars().take(120).collect();
            scalebench.insert(pid, (cmd, t as f64 / hz));
        }
    }
    scalebench
}

/// What the host did between `before` and `after`: `own_cpu_s` is the launch's ranks' CPU time
/// on this host, `own_pids` their pids and their ancestors (left out of the other scalebench
/// processes). A process counts when it used at least 5 % of a CPU over the window.
pub fn host_load(
    host: &str,
    logical_cpus: u32,
    window_s: f64,
    before: &HostSnapshot,
    after: &HostSnapshot,
    own_cpu_s: f64,
    own_pids: &BTreeSet<u32>,
) -> HostLoad {
    let hz = ticks_per_s();
    let busy_cpu_s = after.ticks.busy.saturating_sub(before.ticks.busy) as f64 / hz;
    let steal_cpu_s = after.ticks.steal.saturating_sub(before.ticks.steal) as f64 / hz;
    let other_scalebench = after
        .scalebench
        .iter()
        .filter(|(pid, _)| !own_pids.contains(pid))
        .filter_map(|(pid, (cmd, t1))| {
            let t0 = before.scalebench.get(pid).map_or(0.0, |(_, t)| *t);
            let cpu_s = (t1 - t0).max(0.0);
            (cpu_s >= 0.05 * window_s).then(|| OtherProcess {
                pid: *pid,
                command: cmd.clone(),
                cpu_s,
            })
        })
        .collect();
    HostLoad {
        host: host.to_string(),
        window_s,
        logical_cpus,
        loadavg_1m_before: before.loadavg_1m,
        loadavg_1m_after: after.loadavg_1m,
        busy_cpu_s,
        steal_cpu_s,
        own_cpu_s,
        other_cpu_s: (busy_cpu_s - own_cpu_s).max(0.0),
        other_scalebench,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse() {
        let stat = "cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(
            parse_proc_stat(stat),
            Some(CpuTicks {
                busy: 160,
                steal: 7
            })
        );
        assert_eq!(parse_proc_stat("intr 1\n"), None);
        assert_eq!(parse_loadavg("1.52 0.80 0.40 3/200 1234\n"), Some(1.52));
        assert_eq!(parse_loadavg(""), None);
        let pid = "4242 (scale bench) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 3 0";
        assert_eq!(parse_pid_stat(pid), Some((17, 281)));
        assert_eq!(parse_pid_stat("garbage"), None);
    }

    #[test]
    fn other_launches_and_foreign_cpu_are_counted() {
        let hz = ticks_per_s();
        let snap = |busy_s: f64, procs: &[(u32, f64)]| HostSnapshot {
            ticks: CpuTicks {
                busy: (busy_s * hz) as u64,
                steal: 0,
            },
            loadavg_1m: Some(1.0),
            scalebench: procs
                .iter()
                .map(|(p, t)| (*p, (format!("scalebench run {p}"), *t)))
                .collect(),
        };
        // Own ranks 10 and 11 (1.9 CPU-s); 20 is another launch's rank (1.8 CPU-s in the
        // window); 30 an idle sweep parent; 40 started within the window.
        let before = snap(100.0, &[(10, 1.0), (11, 1.0), (20, 5.0), (30, 0.2)]);
        let after = snap(
            104.0,
            &[(10, 2.0), (11, 1.9), (20, 6.8), (30, 0.2), (40, 0.3)],
        );
        let own: BTreeSet<u32> = [10, 11].into();
        let l = host_load("h", 2, 2.0, &before, &after, 1.9, &own);
        assert!((l.busy_cpu_s - 4.0).abs() < 0.02 && (l.other_cpu_s - 2.1).abs() < 0.02);
        let pids: Vec<u32> = l.other_scalebench.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [20, 40]);
        assert!((l.other_scalebench[0].cpu_s - 1.8).abs() < 1e-9);
        // A launch seen only between cases (started and ended inside the window) counts.
        let mut after2 = after.clone();
        merge_seen(
            &mut after2,
            [
                (50, ("scalebench run x".into(), 0.9)),
                (10, ("own".into(), 1.5)),
            ]
            .into(),
        );
        let l = host_load("h", 2, 2.0, &before, &after2, 1.9, &own);
        let pids: Vec<u32> = l.other_scalebench.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [20, 40, 50]);
        assert!(process_cpu_s() >= 0.0);
        assert!(own_lineage().contains(&std::process::id()));
    }
}
