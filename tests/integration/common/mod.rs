//! Helpers shared by the integration tests: a temp directory, the real binary started alone or
//! under real `mpirun` (bounded by `timeout` where it may hang), the locks that keep tests of
//! different modules from disturbing each other, an independent reader of the results format
//! ([`wire`]) and of the report's CSV tables ([`csv`]), and the one builder of results files
//! that tests and benches share ([`fixture`]).
//!
//! Every module's tests run on parallel threads of one process (`tests/integration/main.rs`),
//! so the locks here are the only ones: a module keeps no lock of its own for what they cover.
//! Lock order: [`quiet`] before [`mpi_lock`], never the other way round; and never
//! [`mpi_lock`] around a helper that takes it ([`solo`], [`solo_env`], [`mpirun`],
//! [`mpirun_with`], [`sweep_ok`], [`bounded`]): a std `Mutex` is not reentrant, the test would
//! wait for itself. A test that must hold the lock across a launch of its own and a helper's
//! uses [`solo_held`].

pub mod csv;
pub mod fixture;
pub mod wire;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_scalebench")
}

/// MPI jobs share 2 cores: run them one at a time so timeouts stay meaningful, and so no
/// launch sees another test's ranks as co-scheduled work (the run records other scalebench
/// processes on the host and marks its cases not representative). One lock for the whole test
/// binary: every module's launches, those of the helpers here and those a test starts itself.
static MPI_LOCK: Mutex<()> = Mutex::new(());

/// The MPI lock, held.
pub type MpiGuard = MutexGuard<'static, ()>;

/// Holds the MPI lock for a launch a test starts itself (not around a helper that takes it).
pub fn mpi_lock() -> MpiGuard {
    MPI_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held by the tests that measure real runs for their statistics and by the tests that keep
/// every core busy, so the two never overlap (cargo runs the tests of every module on parallel
/// threads of this one process). Taken before [`mpi_lock`], never while holding it.
static QUIET: Mutex<()> = Mutex::new(());

/// Holds [`QUIET`].
pub fn quiet() -> MutexGuard<'static, ()> {
    QUIET.lock().unwrap_or_else(|e| e.into_inner())
}

/// Calls of [`tmpdir`] so far: tests run on parallel threads of one process, so the pid alone
/// does not make a directory name unique (two tests with one tag would share, and delete, it).
static TMPDIRS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A fresh, empty directory for one test.
pub fn tmpdir(tag: &str) -> PathBuf {
    let n = TMPDIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("scalebench-it-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// What a finished command left behind.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn from(o: Output) -> Self {
        Ran {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).replace('\0', ""),
            stderr: String::from_utf8_lossy(&o.stderr).replace('\0', ""),
        }
    }
    /// The output kept exactly as it came (NUL bytes included).
    pub fn raw(o: Output) -> Self {
        Ran {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
    /// Bad input refused cleanly: exit 2, each of `needles` in stderr, no panic, and `out`
    /// (what the command would have written) not there. `what` names the input in a failure.
    pub fn assert_refused(&self, what: &dyn std::fmt::Debug, needles: &[&str], out: &Path) {
        self.assert_code(2);
        for n in needles {
            assert!(
                self.stderr.contains(n),
                "{what:?}: expected {n:?} in:\n{}",
                self.stderr
            );
        }
        no_panic(self);
        assert!(
            !self.stdout.contains("panicked"),
            "{what:?}: {}",
            self.stdout
        );
        assert!(!out.exists(), "{what:?} left {} behind", out.display());
    }
}

/// Root may run mpirun; no launcher identity leaks in from the test's environment.
pub fn mpi_env(cmd: &mut Command) {
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    // Never inherit a launcher's identity from the environment the tests run in.
    for k in [
        "SLURM_PROCID",
        "SLURM_NTASKS",
        "SLURM_NODEID",
        "SLURM_LOCALID",
        "PMI_RANK",
        "PMI_SIZE",
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
    ] {
        cmd.env_remove(k);
    }
}

/// `scalebench ARGS` as one process (an MPI singleton).
pub fn solo(args: &[&str]) -> Ran {
    solo_held(&mpi_lock(), args)
}

/// `scalebench ARGS` with extra environment variables.
pub fn solo_env(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let _g = mpi_lock();
    start_solo(args, env)
}

/// `scalebench ARGS` with environment variables removed (a default the test checks, which
/// the caller's environment, e.g. ci/test.sh's, may set).
pub fn solo_without(args: &[&str], removed: &[&str]) -> Ran {
    let _g = mpi_lock();
    let mut cmd = Command::new(bin());
    cmd.args(args);
    mpi_env(&mut cmd);
    for k in removed {
        cmd.env_remove(k);
    }
    Ran::from(cmd.output().expect("start scalebench"))
}

/// `scalebench ARGS` under the MPI lock the caller holds (a test that keeps launches of its own
/// running across this one).
pub fn solo_held(_held: &MpiGuard, args: &[&str]) -> Ran {
    start_solo(args, &[])
}

fn start_solo(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    mpi_env(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Ran::from(cmd.output().expect("start scalebench"))
}

/// `mpirun -np N --oversubscribe scalebench ARGS`, bounded by `timeout`.
pub fn mpirun(np: u32, args: &[&str]) -> Ran {
    mpirun_with(np, &[], args)
}

/// `mpirun -np N --oversubscribe MPIRUN_ARGS scalebench ARGS`.
pub fn mpirun_with(np: u32, mpirun_args: &[&str], args: &[&str]) -> Ran {
    let _g = mpi_lock();
    let mut cmd = Command::new("timeout");
    cmd.args([
        "-k",
        "5",
        "300",
        "mpirun",
        "-np",
        &np.to_string(),
        "--oversubscribe",
    ]);
    cmd.args(mpirun_args);
    cmd.arg(bin()).args(args);
    mpi_env(&mut cmd);
    Ran::from(
        cmd.output()
            .expect("start mpirun (is OpenMPI installed? bash ci/setup.sh)"),
    )
}

/// `run -q --out OUT EXTRA...`: the shape of most runs in these tests.
pub fn run_q<'a>(out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["run", "-q", "--out", out.to_str().unwrap()];
    a.extend_from_slice(extra);
    a
}

/// `sweep -q SPEC --out OUT` that must succeed, and the results it wrote.
pub fn sweep_ok(spec: &Path, out: &Path) -> wire::ResultsFile {
    solo(&[
        "sweep",
        "-q",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .assert_code(0);
    read_results(out)
}

/// Reads `DIR/results.json` with the independent wire types.
pub fn read_results(dir: &Path) -> wire::ResultsFile {
    let text = std::fs::read_to_string(dir.join("results.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{}: does not match the documented format: {e}",
            dir.display()
        )
    })
}

/// The `(attempt, job id, state)` of each attempt row of `scalebench status` output.
pub fn status_rows(stdout: &str) -> Vec<(String, String, String)> {
    // Columns are separated by two spaces at least; a state may hold one (`lost (cancelled)`).
    stdout
        .lines()
        .filter(|l| l.starts_with("  "))
        .filter_map(|l| {
            let f: Vec<&str> = l
                .split("  ")
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .collect();
            (f.len() >= 4).then(|| (f[0].to_string(), f[1].to_string(), f[2].to_string()))
        })
        .collect()
}

/// `timeout -k 5 LIMIT CMD...` under the MPI lock, with `env` added (nothing of the test's own
/// launcher identity): a hang shows as exit 124, not a stuck test. Also returns how long it
/// ran.
pub fn bounded(limit_s: u32, cmd_line: &[&str], env: &[(&str, &str)]) -> (Ran, Duration) {
    let _g = mpi_lock();
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", &limit_s.to_string()]).args(cmd_line);
    mpi_env(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t0 = Instant::now();
    let ran = Ran::from(cmd.output().expect("start timeout/mpirun"));
    (ran, t0.elapsed())
}

/// `scalebench report ARGS` (no MPI involved), its output kept as it came.
pub fn report(args: &[&str]) -> Ran {
    Ran::raw(
        Command::new(bin())
            .arg("report")
            .args(args)
            .output()
            .expect("start scalebench"),
    )
}

/// The command did not panic (no exit 101, no panic message).
pub fn no_panic(r: &Ran) {
    assert!(
        r.code != 101 && !r.stderr.contains("panicked"),
        "panic:\n{}",
        r.stderr
    );
}

/// Writes `text` as `dir/name`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A path as the `&str` a command line takes (the tests' paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
