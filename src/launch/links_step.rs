//! A sweep's `[links]` step: `scalebench links` once per set-up (nodes × ranks per node),
//! writing `DIR/links/<set-up>/links.json` (and its heat map) for the report. What the local
//! sweep and the job scripts share: the step's directory, its arguments, and whether a step
//! has already finished (so `--resume` and a resubmission skip it).

use crate::config::{LinksFloor, LinksStep};
use crate::params::BackendKind;
use crate::plan::sweep::LinksSetup;
use crate::results::links::{read_links, LINKS_FILE};
use std::path::{Path, PathBuf};

/// The run directory's folder of links steps.
pub(crate) const LINKS_DIR: &str = "links";

/// `DIR/links/<set-up id>`.
pub(crate) fn step_dir(out: &Path, setup: &LinksSetup) -> PathBuf {
    out.join(LINKS_DIR).join(&setup.id)
}

/// `links …` as `scalebench links` takes it (after the program), writing into `out_dir` (a
/// path, or a shell expression the job script expands).
pub(crate) fn links_args(step: &LinksStep, out_dir: &str) -> Vec<String> {
    let mut a = vec![
        "links".to_string(),
        "--schedule".into(),
        step.schedule.cli_name().into(),
    ];
    if step.bidirectional {
        a.push("--bidirectional".into());
    }
    // The default transport (MPI) is left implicit: the command line is today's.
    if step.backend != BackendKind::Cpu {
        a.extend(["--backend".into(), step.backend.to_string()]);
    }
    match step.floor {
        LinksFloor::Default => {}
        LinksFloor::Off => a.extend(["--floor-fraction".into(), "off".into()]),
        LinksFloor::Fraction(f) => a.extend(["--floor-fraction".into(), f.to_string()]),
    }
    a.extend([
        "--size".into(),
        step.message_bytes.to_string(),
        "--iters".into(),
        step.iters.to_string(),
        "--warmup".into(),
        step.warmup.to_string(),
        "--z".into(),
        step.z.to_string(),
        "--min-effect".into(),
        step.min_effect.to_string(),
        "--out".into(),
        out_dir.to_string(),
    ]);
    a
}

/// Whether the step in `dir` has finished as the spec now asks: its links.json reads and was
/// measured with the step's schedule, direction, size, iterations and transport. A file
/// measured otherwise (the spec's `[links]` changed) is not this step's: it runs again.
pub(crate) fn finished(dir: &Path, step: &LinksStep) -> bool {
    let Ok(f) = read_links(&dir.join(LINKS_FILE)) else {
        return false;
    };
    // `links` records shift rounds as bidirectional whatever was asked (they always are).
    let bidirectional = step.bidirectional || step.schedule == crate::config::LinksSchedule::Shift;
    f.simulated.is_none()
        && f.schedule == step.schedule.name()
        && f.bidirectional == bidirectional
        && f.message_bytes == step.message_bytes
        && f.iters == step.iters
        && f.warmup == step.warmup
        && f.transport()
            == Some(match step.backend {
                BackendKind::Cuda => "nccl",
                BackendKind::Rocm => "rccl",
                BackendKind::Cpu => "mpi",
            })
}

/// Where a submitted run's links step stands, from what is on disk (the job script writes
/// `stdout.log` when the step starts and `exit_code` when it ends; `links` writes links.json).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinksStepState {
    /// The set-up: `n2-ppn4`.
    pub setup: String,
    /// The step's directory, relative to the run: `links/n2-ppn4`.
    pub dir: String,
    /// `done` (links.json measured as the spec asks), `failed` (it ended without one),
    /// `running`, `pending` (not started while jobs are queued or running), `lost` (started,
    /// and every job ended before it recorded its end) or `missing` (never started, and every
    /// job has ended).
    pub state: String,
    /// What `scalebench links` exited with, where the job recorded it (1: a suspect named).
    pub exit_code: Option<i32>,
    /// Done: the confirmed suspects and confirmed cells below the absolute floor.
    pub named: Option<usize>,
}

impl LinksStepState {
    /// Failed, lost or never run: the run lacks that matrix.
    pub fn bad(&self) -> bool {
        matches!(self.state.as_str(), "failed" | "lost" | "missing")
    }

    /// One line for `status` and `collect` (a comment line: not a row of the attempts table).
    pub fn line(&self, out: &Path) -> String {
        let what = match (self.state.as_str(), self.named) {
            ("done", Some(0)) => "done, healthy".to_string(),
            ("done", Some(n)) => format!(
                "done, {} named (confirmed)",
                crate::units::count(n, "finding", "findings")
            ),
            ("failed", _) => format!(
                "failed (exit {}; no links.json measured as the spec asks): see {}",
                self.exit_code.map_or("?".into(), |c| c.to_string()),
                out.join(&self.dir).join("stderr.log").display()
            ),
            ("lost", _) => "lost: it started and its job ended before it recorded its end".into(),
            ("missing", _) => "missing: no job ran it; submit the spec again into this run".into(),
            (s, _) => s.to_string(),
        };
        format!("# links {}: {what}", self.setup)
    }
}

/// The links steps of the submitted run in `out` (its `spec.toml`, planned again), each with
/// its state on disk; `active`: some job of the run is still queued or running. An empty list
/// when the spec has no `[links]`; an error (the spec's own, located) when it cannot be read.
pub(crate) fn step_states(
    out: &Path,
    active: bool,
) -> Result<Vec<LinksStepState>, crate::config::SpecError> {
    let spec = crate::config::load(&out.join("spec.toml"))?;
    let Some(step) = &spec.links else {
        return Ok(Vec::new());
    };
    let plan = crate::plan::sweep::expand(&spec)?;
    Ok(plan
        .links
        .iter()
        .filter(|s| s.skipped.is_none())
        .map(|setup| {
            let dir = step_dir(out, setup);
            let exit_code = std::fs::read_to_string(dir.join("exit_code"))
                .ok()
                .and_then(|t| t.trim().parse().ok());
            let (state, named) = if finished(&dir, step) {
                let named = read_links(&dir.join(LINKS_FILE)).ok().map(|f| {
                    f.findings.iter().filter(|x| x.confirmed).count()
                        + f.floor
                            .map_or(0, |fl| fl.findings.iter().filter(|x| x.confirmed).count())
                });
                ("done", named)
            } else if exit_code.is_some() || (!active && dir.join(LINKS_FILE).exists()) {
                ("failed", None)
            } else if dir.join("stdout.log").exists() {
                (if active { "running" } else { "lost" }, None)
            } else {
                (if active { "pending" } else { "missing" }, None)
            };
            LinksStepState {
                setup: setup.id.clone(),
                dir: format!("{LINKS_DIR}/{}", setup.id),
                state: state.into(),
                exit_code,
                named,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinksSchedule;

    fn step() -> LinksStep {
        LinksStep {
            schedule: LinksSchedule::RoundRobin,
            bidirectional: false,
            message_bytes: 4096,
            iters: 3,
            warmup: 1,
            z: 5.0,
            min_effect: 0.15,
            timeout_s: 60.0,
            backend: BackendKind::Cpu,
            floor: LinksFloor::Default,
            at: (1, 1),
            schedule_at: None,
        }
    }

    #[test]
    fn the_arguments_are_the_commands_own() {
        let mut s = step();
        assert_eq!(
            links_args(&s, "/r/links/n1-ppn2").join(" "),
            "links --schedule round-robin --size 4096 --iters 3 --warmup 1 --z 5 --min-effect 0.15 --out /r/links/n1-ppn2"
        );
        s.bidirectional = true;
        s.schedule = LinksSchedule::Shift;
        let a = links_args(&s, "d");
        assert!(a.windows(2).any(|w| w == ["--schedule", "shift"]), "{a:?}");
        assert!(a.contains(&"--bidirectional".to_string()), "{a:?}");
        // The transport and the floor travel only when the spec gives them.
        assert!(
            !a.iter()
                .any(|x| x == "--backend" || x == "--floor-fraction"),
            "{a:?}"
        );
        s.backend = BackendKind::Cuda;
        s.floor = LinksFloor::Off;
        let a = links_args(&s, "d");
        assert!(a.windows(2).any(|w| w == ["--backend", "cuda"]), "{a:?}");
        assert!(
            a.windows(2).any(|w| w == ["--floor-fraction", "off"]),
            "{a:?}"
        );
        s.backend = BackendKind::Rocm;
        let a = links_args(&s, "d");
        assert!(a.windows(2).any(|w| w == ["--backend", "rocm"]), "{a:?}");
        s.floor = LinksFloor::Fraction(0.25);
        let a = links_args(&s, "d");
        assert!(
            a.windows(2).any(|w| w == ["--floor-fraction", "0.25"]),
            "{a:?}"
        );
    }

    #[test]
    fn a_step_is_finished_only_by_a_file_measured_as_asked() {
        let dir = std::env::temp_dir().join(format!("sb-links-step-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let s = step();
        assert!(!finished(&dir, &s), "no file: not finished");
        std::fs::write(dir.join(LINKS_FILE), "{\"links_format_version\": 1").unwrap();
        assert!(!finished(&dir, &s), "an unreadable file: not finished");
        let mut f = crate::results::links::test_file(
            vec!["a".into(), "b".into()],
            vec![vec![None, Some(1.0)], vec![Some(1.0), None]],
            1.0,
        );
        f.message_bytes = 4096;
        f.iters = 3;
        std::fs::write(dir.join(LINKS_FILE), f.to_json_bytes()).unwrap();
        assert!(finished(&dir, &s));
        let mut bigger = s.clone();
        bigger.message_bytes = 8192;
        assert!(!finished(&dir, &bigger), "another size: runs again");
        let mut shift = s.clone();
        shift.schedule = LinksSchedule::Shift;
        assert!(!finished(&dir, &shift), "another schedule: runs again");
        let mut cuda = s.clone();
        cuda.backend = BackendKind::Cuda;
        assert!(
            !finished(&dir, &cuda),
            "measured over MPI, asked over NCCL: runs again"
        );
        f.transport = Some("rccl".into());
        std::fs::write(dir.join(LINKS_FILE), f.to_json_bytes()).unwrap();
        let mut rocm = s.clone();
        rocm.backend = BackendKind::Rocm;
        assert!(finished(&dir, &rocm), "measured over RCCL as asked");
        assert!(
            !finished(&dir, &s),
            "measured over RCCL, asked over MPI: runs again"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A run directory with a `[links]` spec on 1 node × 2 ranks and 2 nodes × 1: each step's
    /// state follows its files (nothing; the job's stdout.log; exit_code without links.json; a
    /// links.json measured as asked with a confirmed floor finding), and whether jobs are active.
    #[test]
    fn a_submitted_runs_steps_are_read_from_disk() {
        let out = std::env::temp_dir().join(format!("sb-links-states-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            out.join("spec.toml"),
            "name = \"s\"\n[axes]\nnodes = [1, 2]\ndevices_per_node = [1, 2]\nsizes = \"64\"\n[links]\nsize = 4096\niters = 3\n",
        )
        .unwrap();
        let states = |active| step_states(&out, active).unwrap();
        let ids: Vec<String> = states(true).iter().map(|s| s.setup.clone()).collect();
        assert_eq!(
            ids,
            ["n1-ppn2", "n2-ppn1", "n2-ppn2"],
            "n1-ppn1 has no pair"
        );
        let by = |active, id: &str| states(active).into_iter().find(|s| s.setup == id).unwrap();
        assert_eq!(by(true, "n1-ppn2").state, "pending");
        assert_eq!(by(false, "n1-ppn2").state, "missing");
        let d = out.join("links/n1-ppn2");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("stdout.log"), "").unwrap();
        assert_eq!(by(true, "n1-ppn2").state, "running");
        assert_eq!(by(false, "n1-ppn2").state, "lost");
        std::fs::write(d.join("exit_code"), "137\n").unwrap();
        let failed = by(true, "n1-ppn2");
        assert_eq!(
            (failed.state.as_str(), failed.exit_code),
            ("failed", Some(137))
        );
        assert!(failed.bad());
        assert!(failed
            .line(&out)
            .starts_with("# links n1-ppn2: failed (exit 137;"));

        let d = out.join("links/n2-ppn1");
        std::fs::create_dir_all(&d).unwrap();
        let mut f = crate::results::links::test_file(
            vec!["a".into(), "b".into()],
            vec![vec![None, Some(1.0)], vec![Some(1.0), None]],
            1.0,
        );
        (f.message_bytes, f.iters) = (4096, 3);
        f.floor = Some(crate::results::links::FloorRecord {
            fraction: Some(0.5),
            min_message_bytes: 1 << 20,
            link_gbps: vec![Some(12.5), Some(12.5)],
            checked_cells: 2,
            findings: vec![crate::results::links::FloorFindingRecord {
                kind: "fabric".into(),
                ranks: vec![],
                ratio: 0.08,
                isolated_ratio: Some(0.08),
                confirmed: true,
                text: String::new(),
            }],
            note: None,
        });
        std::fs::write(d.join(LINKS_FILE), f.to_json_bytes()).unwrap();
        std::fs::write(d.join("exit_code"), "1\n").unwrap();
        let done = by(false, "n2-ppn1");
        assert_eq!(
            (done.state.as_str(), done.exit_code, done.named),
            ("done", Some(1), Some(1))
        );
        assert!(!done.bad());
        assert_eq!(
            done.line(&out),
            "# links n2-ppn1: done, 1 finding named (confirmed)"
        );
        let _ = std::fs::remove_dir_all(&out);
    }
}
