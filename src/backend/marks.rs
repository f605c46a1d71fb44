//! Device-timeline marks shared by the GPU backends (CUDA events, HIP events).
//!
//! A mark is a slot in a ring of events (one event per device per slot) plus a sequence
//! number, so it is `Copy` as the trait requires and a mark whose slot was re-recorded since
//! is detected instead of read. The timing loop holds at most two marks at a time; the ring
//! has [`SLOTS`].

/// Event slots per device.
pub(crate) const SLOTS: usize = 64;

/// A point on every local device's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    slot: usize,
    seq: u64,
}

/// Hands out slots in turn and knows which marks are still readable.
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    slots: usize,
    next_seq: u64,
}

/// A mark read after its slot was recorded again (or one this ring never handed out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a timing mark was overwritten: more than {slots} marks were taken before it was read")]
pub struct MarkOverwritten {
    pub slots: usize,
}

impl From<MarkOverwritten> for crate::backend::BackendError {
    fn from(e: MarkOverwritten) -> Self {
        crate::backend::BackendError::Device(crate::backend::DeviceError::Mark(e))
    }
}

impl Ring {
    pub(crate) fn new(slots: usize) -> Ring {
        Ring {
            slots: slots.max(1),
            next_seq: 0,
        }
    }

    /// A new mark (its slot is the oldest one).
    pub(crate) fn take(&mut self) -> Mark {
        let seq = self.next_seq;
        self.next_seq += 1;
        Mark {
            slot: (seq % self.slots as u64) as usize,
            seq,
        }
    }

    /// `Err` if `m` was never handed out or its slot was recorded again since.
    pub(crate) fn check(&self, m: Mark) -> Result<usize, MarkOverwritten> {
        if m.seq >= self.next_seq || self.next_seq - m.seq > self.slots as u64 {
            return Err(MarkOverwritten { slots: self.slots });
        }
        Ok(m.slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_take_slots_in_turn_and_expire() {
        let mut r = Ring::new(4);
        let m: Vec<Mark> = (0..4).map(|_| r.take()).collect();
        assert_eq!(
            m.iter().map(|x| r.check(*x).unwrap()).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        // the fifth mark reuses slot 0: the first mark is gone, the others still readable
        let fifth = r.take();
        assert_eq!(r.check(fifth).unwrap(), 0);
        assert!(r
            .check(m[0])
            .unwrap_err()
            .to_string()
            .contains("overwritten"));
        assert_eq!(r.check(m[1]).unwrap(), 1);
        // a mark from another ring's future is refused
        let mut other = Ring::new(4);
        for _ in 0..10 {
            other.take();
        }
        assert!(r.check(other.take()).is_err());
    }

    #[test]
    fn the_timing_loop_fits_the_ring() {
        // measure::time_op holds two marks (a, b) and reads them before taking more.
        let mut r = Ring::new(SLOTS);
        for _ in 0..10_000 {
            let a = r.take();
            let b = r.take();
            assert!(r.check(a).is_ok() && r.check(b).is_ok());
        }
    }
}
