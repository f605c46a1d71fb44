//! A sweep's `[links]` step: `scalebench links` once per set-up (nodes × ranks per node),
//! writing `DIR/links/<set-up>/links.json` (and its heat map) for the report. What the local
//! sweep and the job scripts share: the step's directory, its arguments, and whether a step
//! has already finished (so `--resume` and a resubmission skip it).

use crate::config::LinksStep;
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
/// measured with the step's schedule, direction, size and iterations. A file measured
/// otherwise (the spec's `[links]` changed) is not this step's: it runs again.
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
        let _ = std::fs::remove_dir_all(&dir);
    }
}
