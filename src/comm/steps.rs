//! Control-plane progress of this rank: how many control steps (barriers, agreements,
//! gathers) it has entered and whether it waits inside one now. Every control-plane
//! collective counts itself here; the watchdog (`run::watchdog`) reads the counts to tell the
//! ranks that arrived at a step from those still in their own work.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static CONTROL_STEPS: AtomicU64 = AtomicU64::new(0);
static IN_CONTROL: AtomicBool = AtomicBool::new(false);

/// Marks this rank as inside a control-plane collective until the guard drops.
pub(crate) struct ControlStep(());

/// Called at the start of every control-plane collective (two relaxed atomic stores).
pub(crate) fn control_step() -> ControlStep {
    CONTROL_STEPS.fetch_add(1, Ordering::Relaxed);
    IN_CONTROL.store(true, Ordering::Relaxed);
    ControlStep(())
}

impl Drop for ControlStep {
    fn drop(&mut self) {
        IN_CONTROL.store(false, Ordering::Relaxed);
    }
}

/// Control steps this rank has entered so far.
pub(crate) fn entered() -> u64 {
    CONTROL_STEPS.load(Ordering::Relaxed)
}

/// Whether this rank is inside a control step now.
pub(crate) fn inside() -> bool {
    IN_CONTROL.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_steps_count_and_clear() {
        let before = CONTROL_STEPS.load(Ordering::Relaxed);
        {
            let _g = control_step();
            assert!(IN_CONTROL.load(Ordering::Relaxed));
        }
        assert!(!IN_CONTROL.load(Ordering::Relaxed));
        assert!(CONTROL_STEPS.load(Ordering::Relaxed) > before);
    }
}
