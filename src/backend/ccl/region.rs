//! Planned calls checked against the buffers they point into before a device pointer is
//! formed (a planning mistake is an error, never an out-of-bounds access). Each backend issues
//! a [`Resolved`] call through its own library bindings.

use super::calls::{Call, PlanError, Side, Span};
use std::ffi::c_void;

/// A device buffer as the library sees it: base address and length in elements.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Region {
    pub ptr: u64,
    pub len: usize,
}

/// A [`Call`] whose ranges were checked against the device's buffers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved {
    pub(crate) call: Call,
    send: Option<Region>,
    recv: Region,
    elem_bytes: usize,
}

impl Resolved {
    /// Checks every range of `call` against the buffers (`send` is `None` in place).
    pub(crate) fn new(
        call: Call,
        send: Option<Region>,
        recv: Region,
        elem_bytes: usize,
    ) -> Result<Resolved, PlanError> {
        for s in call.spans() {
            let region = match s.side {
                Side::Send => send.ok_or(PlanError::NoSendBuffer)?,
                Side::Recv => recv,
            };
            let end = s.at.checked_add(s.len).ok_or(PlanError::Overflow)?;
            if end > region.len {
                return Err(PlanError::OutOfRange {
                    call,
                    end,
                    len: region.len,
                    side: s.side,
                });
            }
        }
        Ok(Resolved {
            call,
            send,
            recv,
            elem_bytes,
        })
    }

    /// The device address of the first element of `s` (a span of this call, checked in
    /// [`Resolved::new`]).
    pub(crate) fn addr(&self, s: Span) -> *mut c_void {
        let base = match s.side {
            Side::Send => self.send.expect("checked in Resolved::new").ptr,
            Side::Recv => self.recv.ptr,
        };
        (base + (s.at * self.elem_bytes) as u64) as *mut c_void
    }
}
