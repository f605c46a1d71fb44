//! The live progress line of `sweep` and `status --wait`: cases done/total, launches running
//! and queued, elapsed time and an ETA from measured case times. Shown on a terminal only
//! (one line, rewritten in place): CI logs and `-q` get none, unless SCALEBENCH_PROGRESS=1
//! asks for it (then one plain line each time the counts change).
//!
//! Hand-rolled rather than a progress-bar crate: one line of text rewritten with `\r` is all
//! it draws, and it must degrade to change-only log lines, which such crates hide instead.

use std::io::Write;
use std::time::Instant;

/// What the line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    pub cases_done: usize,
    pub cases_total: usize,
    pub running: usize,
    pub queued: usize,
}

/// Pure: `h:mm:ss`.
pub(crate) fn clock(s: f64) -> String {
    let s = s.max(0.0) as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Pure: seconds left for `remaining` cases of `case_s` seconds each, `parallel` launches at a
/// time (at least one).
pub(crate) fn eta_s(remaining: usize, case_s: f64, parallel: usize) -> f64 {
    remaining as f64 * case_s.max(0.0) / parallel.max(1) as f64
}

/// Pure: the line for `c` after `elapsed_s`, with the mean measured seconds a case takes.
pub(crate) fn render(c: &Counts, elapsed_s: f64, case_s: Option<f64>) -> String {
    let left = c.cases_total.saturating_sub(c.cases_done);
    let eta = match case_s {
        Some(s) if left > 0 && c.cases_done > 0 => {
            format!(", ETA {}", clock(eta_s(left, s, c.running)))
        }
        _ => String::new(),
    };
    format!(
        "[{:>4}/{} cases | launches: {} running, {} queued | {} elapsed{eta}]",
        c.cases_done,
        c.cases_total,
        c.running,
        c.queued,
        clock(elapsed_s)
    )
}

/// Whether a live line is wanted: on a terminal and not `-q`; SCALEBENCH_PROGRESS=1 forces it
/// (plain lines), =0 turns it off.
fn wanted(quiet: bool, tty: bool) -> bool {
    match std::env::var("SCALEBENCH_PROGRESS").ok().as_deref() {
        Some("0") => false,
        Some("1") => !quiet,
        _ => !quiet && tty,
    }
}

pub(crate) struct ProgressLine {
    on: bool,
    tty: bool,
    started: Instant,
    last: Option<Counts>,
}

impl ProgressLine {
    pub(crate) fn new(quiet: bool) -> ProgressLine {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        ProgressLine {
            on: wanted(quiet, tty),
            tty,
            started: Instant::now(),
            last: None,
        }
    }

    /// Shows `c` (on a terminal: always, the clock moves; in a log: only when it changed).
    pub(crate) fn show(&mut self, c: &Counts, case_s: Option<f64>) {
        if !self.on || (!self.tty && self.last == Some(*c)) {
            return;
        }
        self.last = Some(*c);
        let line = render(c, self.started.elapsed().as_secs_f64(), case_s);
        let mut e = std::io::stderr().lock();
        let _ = if self.tty {
            write!(e, "\r\x1b[2K{line}")
        } else {
            writeln!(e, "{line}")
        };
        let _ = e.flush();
    }

    /// Ends the line so what follows starts on its own.
    pub(crate) fn finish(&mut self) {
        if self.on && self.tty && self.last.take().is_some() {
            let _ = writeln!(std::io::stderr());
        }
    }

    /// Seconds since the line started.
    pub(crate) fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_cases_and_launches_and_estimates_from_case_times() {
        let c = Counts {
            cases_done: 10,
            cases_total: 40,
            running: 2,
            queued: 3,
        };
        let l = render(&c, 125.0, Some(4.0));
        // 30 cases left × 4 s over 2 running launches = 60 s.
        assert_eq!(
            l,
            "[  10/40 cases | launches: 2 running, 3 queued | 0:02:05 elapsed, ETA 0:01:00]"
        );
        let none_yet = render(&Counts { cases_done: 0, ..c }, 1.0, Some(4.0));
        assert!(!none_yet.contains("ETA"), "{none_yet}");
        let all = render(
            &Counts {
                cases_done: 40,
                ..c
            },
            1.0,
            Some(4.0),
        );
        assert!(!all.contains("ETA"), "{all}");
        assert_eq!(eta_s(5, 2.0, 0), 10.0, "no launch running counts as one");
        assert_eq!(clock(3725.0), "1:02:05");
    }

    #[test]
    fn quiet_and_logs_get_no_line_unless_asked() {
        if std::env::var_os("SCALEBENCH_PROGRESS").is_some() {
            return;
        }
        assert!(!wanted(true, true));
        assert!(!wanted(false, false));
        assert!(wanted(false, true));
    }
}
