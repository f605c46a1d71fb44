//! What else kept a host busy while a launch ran: /proc/stat and /proc/loadavg around the
//! launch, this process's CPU time, and the other scalebench processes on the host — those
//! running (from /proc) and those that ended recently (each leaves its CPU time in a per-user
//! folder of the host's temporary directory when it ends, so a launch that started and ended
//! inside one long case is still seen). Parsers are pure (tested on text); the readers return
//! empty snapshots where /proc is missing.

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

/// CPU seconds all the host's CPUs have been busy since boot (/proc/stat), `None` without it.
pub fn host_busy_cpu_s() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    Some(parse_proc_stat(&text)?.busy as f64 / ticks_per_s())
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

/// A scalebench process that has ended: what it leaves for other launches on the host.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ended {
    pub pid: u32,
    pub command: String,
    pub cpu_s: f64,
    pub ended_unix_s: f64,
}

/// How long an ended process stays visible: a launch inside one case longer than this is
/// seen only if a look between cases caught it running.
const ENDED_VISIBLE_S: f64 = 3600.0;
/// Records older than this are removed by whoever reads the folder.
const ENDED_KEPT_S: f64 = 86_400.0;

/// The folder of ended processes: per user (others' files are not ours to read or remove),
/// in the host's temporary directory (one per host, as the other launches are).
fn ended_dir() -> std::path::PathBuf {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    std::env::temp_dir().join(format!("scalebench-ended-{uid}"))
}

fn now_unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Leaves this process's CPU time for the other launches on the host, as it ends (best
/// effort: a host without a writable temporary directory only loses the record). The name
/// starts with the end time, so readers skip old records without opening them.
pub fn record_ended() {
    let dir = ended_dir();
    let me = Ended {
        pid: std::process::id(),
        command: own_command(),
        cpu_s: process_cpu_s(),
        ended_unix_s: now_unix_s(),
    };
    let Ok(text) = serde_json::to_vec(&me) else {
        return;
    };
    let name = format!("{:.3}-{}", me.ended_unix_s, me.pid);
    let tmp = dir.join(format!(".{name}.tmp"));
    let _ = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&tmp, text))
        .and_then(|()| std::fs::rename(&tmp, dir.join(format!("{name}.json"))));
}

fn own_command() -> String {
    let cmd = std::fs::read_to_string("/proc/self/cmdline").unwrap_or_default();
    cmd.replace('\0', " ").trim().chars().take(120).collect()
}

/// The end time a record's file name starts with.
fn ended_at(name: &str) -> Option<f64> {
    name.strip_suffix(".json")?.split_once('-')?.0.parse().ok()
}

/// When this process started (seconds since the epoch: boot time plus its start in clock
/// ticks after boot, /proc), or `None` without /proc.
fn process_started_unix_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let boot_s: f64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_start_ticks(&own).map(|t| boot_s + t as f64 / ticks_per_s())
}

/// The start time (clock ticks after boot) of a /proc/<pid>/stat line.
fn parse_start_ticks(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    // after ")": state(0) ... starttime(19)
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Processes that ended within [`ENDED_VISIBLE_S`] of `now` and not before `since` (a
/// process that ended before this one started cannot have shared a window with it: its
/// record is not opened, so a look costs a listing plus the few records of its own
/// lifetime, however many launches the folder remembers); records past [`ENDED_KEPT_S`]
/// are removed.
fn ended_processes(dir: &std::path::Path, now: f64, since: f64) -> Vec<Ended> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(at) = name.to_str().and_then(ended_at) else {
            continue;
        };
        if now - at > ENDED_KEPT_S {
            let _ = std::fs::remove_file(e.path());
        } else if now - at <= ENDED_VISIBLE_S && at >= since {
            let read = std::fs::read(e.path()).ok();
            out.extend(read.and_then(|b| serde_json::from_slice::<Ended>(&b).ok()));
        }
    }
    out
}

/// Adds ended processes to a look at the running ones: a running process keeps its pid (a
/// record under the same pid is an earlier process whose pid was reused).
fn add_ended(running: &mut BTreeMap<u32, (String, f64)>, ended: Vec<Ended>) {
    for e in ended {
        running.entry(e.pid).or_insert((e.command, e.cpu_s));
    }
}

/// pid → (command line, CPU seconds) of every process named `scalebench` running now, and of
/// those that ended since this process started, within the last hour (their final CPU time).
pub fn scalebench_processes() -> BTreeMap<u32, (String, f64)> {
    let mut all = running_scalebench_processes();
    // Boot time is in whole seconds: a second of slack. A record read at both ends of a
    // window adds nothing (its CPU time does not change).
    let since = process_started_unix_s().map_or(f64::NEG_INFINITY, |t| t - 1.0);
    add_ended(&mut all, ended_processes(&ended_dir(), now_unix_s(), since));
    all
}

/// Whether a look between cases must also read the ended processes' records: only once a
/// launch has run long enough that a record written early could age out of
/// [`ENDED_VISIBLE_S`] before the launch's end reads them (listing a day of records costs
/// milliseconds per case on a busy host).
pub fn ended_scan_due(since_last_scan_s: f64) -> bool {
    since_last_scan_s > ENDED_VISIBLE_S / 2.0
}

/// pid → (command line, CPU seconds so far) of every running process named `scalebench`:
/// the look between a launch's cases (records of ended processes stay for
/// [`ENDED_VISIBLE_S`], so the launch's end reads them once, see [`ended_scan_due`]).
pub fn running_scalebench_processes() -> BTreeMap<u32, (String, f64)> {
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
/// processes). A process counts when it used at least 5 % of a CPU over the window, or
/// 0.05 CPU-s.
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
            // 5 % of a CPU over the window, or 0.05 CPU-s however long the window: a short
            // launch inside a long one is listed (the representativeness rules judge it).
            (cpu_s >= (0.05 * window_s).min(0.05)).then(|| OtherProcess {
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
        let pid = "4242 (scale bench) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 3 0 98765 1000";
        assert_eq!(parse_pid_stat(pid), Some((17, 281)));
        assert_eq!(parse_start_ticks(pid), Some(98765));
        assert_eq!(parse_start_ticks("4242 (x) S 17"), None);
        // This process started before now.
        let started = process_started_unix_s().unwrap();
        assert!(started > 0.0 && started <= now_unix_s() + 1.0, "{started}");
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

    #[test]
    fn ended_launches_stay_visible_for_an_hour() {
        let dir =
            std::env::temp_dir().join(format!("scalebench-ended-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let now = 1_000_000.0;
        let put = |at: f64, pid: u32, cpu_s: f64| {
            let e = Ended {
                pid,
                command: format!("scalebench run {pid}"),
                cpu_s,
                ended_unix_s: at,
            };
            let name = format!("{at:.3}-{pid}.json");
            std::fs::write(dir.join(name), serde_json::to_vec(&e).unwrap()).unwrap();
        };
        put(now - 10.0, 60, 0.8); // ended inside a long case: visible
        put(now - 7200.0, 61, 5.0); // two hours ago: not visible, kept
        put(now - 200_000.0, 62, 1.0); // two days ago: removed
        std::fs::write(dir.join("not-a-record.txt"), "x").unwrap();
        std::fs::write(dir.join(".5.000-63.json.tmp"), "partial").unwrap();
        let all = f64::NEG_INFINITY;
        let ended = ended_processes(&dir, now, all);
        assert_eq!(ended.iter().map(|e| e.pid).collect::<Vec<_>>(), [60]);
        // Only records of processes that ended since the reader started: one that ended
        // 20 minutes ago is within the hour but before a reader of 5 minutes.
        put(now - 1200.0, 64, 2.0);
        let pids = |v: Vec<Ended>| v.into_iter().map(|e| e.pid).collect::<BTreeSet<_>>();
        assert_eq!(pids(ended_processes(&dir, now, all)), [60, 64].into());
        assert_eq!(pids(ended_processes(&dir, now, now - 300.0)), [60].into());
        assert!(dir.join(format!("{:.3}-64.json", now - 1200.0)).exists());
        std::fs::remove_file(dir.join(format!("{:.3}-64.json", now - 1200.0))).unwrap();
        assert!(dir.join(format!("{:.3}-61.json", now - 7200.0)).exists());
        assert!(!dir.join(format!("{:.3}-62.json", now - 200_000.0)).exists());
        // A running process keeps its pid; an ended one joins the look.
        let mut running: BTreeMap<u32, (String, f64)> = [(60, ("alive".into(), 0.1))].into();
        add_ended(&mut running, ended);
        assert_eq!(running[&60].0, "alive");
        let mut running = BTreeMap::new();
        add_ended(&mut running, ended_processes(&dir, now, all));
        // Seen only in the look after the window (not before): its whole CPU time counts.
        let before = HostSnapshot::default();
        let after = HostSnapshot {
            scalebench: running,
            ..HostSnapshot::default()
        };
        let l = host_load("h", 2, 5.0, &before, &after, 0.0, &BTreeSet::new());
        assert_eq!(l.other_scalebench.len(), 1);
        assert!((l.other_scalebench[0].cpu_s - 0.8).abs() < 1e-9);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(ended_at("1764140000.125-42.json"), Some(1_764_140_000.125));
        assert_eq!(ended_at("x-42.json"), None);
    }
}
