//! Child processes the driver can always stop: each launch runs in its own process group,
//! dies with the driver (`PR_SET_PDEATHSIG`), and is stopped as a group (SIGTERM, then
//! SIGKILL). Ranks that escaped the group are found by a marker unique to the launch (its plan
//! file's path) in their command line, never by program name.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A running launch.
pub(crate) struct Spawned {
    child: Child,
    pgid: i32,
    marker: String,
}

/// Starts `cmd` in a new process group that receives SIGTERM if the driver dies.
pub(crate) fn spawn(mut cmd: Command, marker: &str) -> io::Result<Spawned> {
    // SAFETY: the closure runs in the forked child before exec, where another thread of the
    // parent may have held a lock (the allocator's, stdio's) at the fork. It captures nothing,
    // allocates nothing (last_os_error only reads errno) and calls only raw system calls that
    // take no locks (setpgid, prctl, getppid, _exit), so it cannot deadlock or see torn state.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            // The driver may have died between fork and prctl.
            if libc::getppid() == 1 {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    let pgid = child.id() as i32;
    Ok(Spawned {
        child,
        pgid,
        marker: marker.to_string(),
    })
}

impl Spawned {
    /// The launch's process group and its leader's pid.
    pub(crate) fn ids(&self) -> (i32, u32) {
        (self.pgid, self.child.id())
    }

    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Stops the whole launch: SIGTERM to the group, up to `grace` to exit, then SIGKILL to
    /// the group and to any process still carrying the launch's marker. Returns its status.
    pub(crate) fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        signal_group(self.pgid, libc::SIGTERM);
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.kill_strays();
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_group(self.pgid, libc::SIGKILL);
        self.kill_strays();
        self.child.wait().ok()
    }

    fn kill_strays(&self) {
        signal_group(self.pgid, libc::SIGKILL);
        for pid in pids_with_marker(&self.marker) {
            // SAFETY: kill passes no pointers, so it cannot affect memory safety. The pid was
            // read from /proc just now with this launch's unique marker in its command line
            // (and is never 0 or negative: /proc's directories are positive pids).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

fn signal_group(pgid: i32, sig: i32) {
    if pgid > 1 {
        // SAFETY: kill passes no pointers, so it cannot affect memory safety. pgid > 1, so
        // -pgid is never -1 (every process we may signal) nor 0 (our own group): it is the
        // group our child created with setpgid(0, 0), an id the kernel does not reuse while
        // any member lives.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// Processes whose command line contains `marker` (other than this one).
pub(crate) fn pids_with_marker(marker: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(marker)
                })
                .unwrap_or(false)
        })
        .collect()
}

/// Ends a launch left running by a driver that died without stopping it: SIGTERM to its
/// process group (only if a process carrying its marker is still in that group, so a reused
/// group id is never signalled) and to every process carrying the marker, up to `grace` to
/// exit, then SIGKILL. Returns how many processes were found.
pub(crate) fn end_orphan(pgid: i32, marker: &str, grace: Duration) -> usize {
    let found = pids_with_marker(marker);
    if found.is_empty() {
        return 0;
    }
    // SAFETY: getpgid passes no pointers and only reads the kernel's process table.
    let ours = found.iter().any(|p| unsafe { libc::getpgid(*p) } == pgid);
    let signal_all = |sig: i32| {
        if ours {
            signal_group(pgid, sig);
        }
        for pid in pids_with_marker(marker) {
            // SAFETY: as in kill_strays: no pointers; a positive pid read from /proc just now
            // with the launch's unique marker in its command line.
            unsafe {
                libc::kill(pid, sig);
            }
        }
    };
    signal_all(libc::SIGTERM);
    let until = Instant::now() + grace;
    while Instant::now() < until && !pids_with_marker(marker).is_empty() {
        std::thread::sleep(Duration::from_millis(100));
    }
    signal_all(libc::SIGKILL);
    // Bounded: a process in uninterruptible sleep may take a moment to go.
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until && !pids_with_marker(marker).is_empty() {
        std::thread::sleep(Duration::from_millis(50));
    }
    found.len()
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Makes SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) set a flag instead of
/// killing the driver, so it can stop its launch and keep everything finished.
pub(crate) fn catch_interrupts() {
    // SAFETY: all-zero is a valid sigaction (empty mask, no flags); `sa` is a live local the
    // kernel only reads, and a null old-action pointer is allowed. Without SA_SIGINFO the
    // kernel calls the handler as `extern "C" fn(c_int)`, which `on_signal` is; it only stores
    // to a lock-free static atomic, which is async-signal-safe from any thread it lands on.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGHUP, &sa, std::ptr::null_mut());
    }
}

/// Whether SIGINT/SIGTERM/SIGHUP arrived since [`catch_interrupts`].
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_group_is_stopped_entirely() {
        let marker = format!("scalebench-test-marker-{}", std::process::id());
        let mut cmd = Command::new("bash");
        // a parent that ignores SIGTERM, and a child that outlives it
        cmd.args([
            "-c",
            &format!("trap '' TERM; sleep 300 & sleep 300; : {marker}"),
        ]);
        let mut s = spawn(cmd, &marker).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(s.try_wait().unwrap().is_none());
        let t0 = Instant::now();
        let status = s.terminate(Duration::from_millis(300));
        assert!(status.is_some());
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(100));
        assert!(pids_with_marker(&marker).is_empty());
    }

    #[test]
    fn a_launch_orphaned_by_its_driver_is_ended_by_group_and_marker() {
        let marker = format!("scalebench-test-orphan-{}", std::process::id());
        let mut cmd = Command::new("bash");
        cmd.args([
            "-c",
            &format!("trap '' TERM HUP; sleep 300 & sleep 300; : {marker}"),
        ]);
        let s = spawn(cmd, &marker).unwrap();
        let (pgid, _) = s.ids();
        // The driver "dies": nothing stops the launch.
        drop(s);
        // bash starts in its own time on a loaded host: wait for it (bounded), not a fixed sleep.
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while pids_with_marker(&marker).is_empty() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!pids_with_marker(&marker).is_empty());
        let found = end_orphan(pgid, &marker, Duration::from_millis(300));
        assert!(found >= 1, "{found}");
        assert!(pids_with_marker(&marker).is_empty());
        // The sleeps carry no marker but share the group: they are gone too (zombies aside).
        let live_in_group = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
                .filter(|st| {
                    let rest: Vec<&str> = st
                        .rsplit_once(')')
                        .map_or("", |x| x.1)
                        .split_whitespace()
                        .collect();
                    rest.len() > 2 && rest[2] == pgid.to_string() && rest[0] != "Z"
                })
                .count()
        };
        // SIGKILL is delivered at once but the kernel tears a process down in its own time
        // on a loaded host: allow it a bounded moment.
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while live_in_group() > 0 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(live_in_group(), 0, "group {pgid} still has live members");
        assert_eq!(end_orphan(pgid, &marker, Duration::from_millis(10)), 0);
    }
}
