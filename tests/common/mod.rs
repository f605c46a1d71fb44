//! Helpers shared by the integration tests: a temp directory, the real binary started alone or
//! under real `mpirun`, an independent reader of the results format ([`wire`]), and the one
//! builder of results files that tests and benches share ([`fixture`]).
#![allow(dead_code)]

pub mod fixture;
pub mod wire;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_scalebench")
}

/// MPI jobs share 2 cores: run them one at a time so timeouts stay meaningful, and so no
/// launch sees another test's ranks as co-scheduled work (the run records other scalebench
/// processes on the host and marks its cases not representative).
static MPI_LOCK: Mutex<()> = Mutex::new(());

/// Holds the MPI lock for a launch a test starts itself.
pub fn mpi_lock() -> std::sync::MutexGuard<'static, ()> {
    MPI_LOCK.lock().unwrap_or_else(|e| e.into_inner())
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
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
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
    let _g = MPI_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new(bin());
    cmd.args(args);
    mpi_env(&mut cmd);
    Ran::from(cmd.output().expect("start scalebench"))
}

/// `scalebench ARGS` with extra environment variables.
pub fn solo_env(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let _g = MPI_LOCK.lock().unwrap_or_else(|e| e.into_inner());
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
    let _g = MPI_LOCK.lock().unwrap_or_else(|e| e.into_inner());
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
    stdout
        .lines()
        .filter(|l| l.starts_with("  "))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| (f[0].to_string(), f[1].to_string(), f[2].to_string()))
        })
        .collect()
}
