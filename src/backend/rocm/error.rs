//! Typed errors of the ROCm backend: a library that is missing, incomplete or too old (set-up
//! refuses with one sentence, exit 2), a failed HIP or RCCL call (the case fails), and the
//! backend's own checks.

use crate::backend::{BackendError, DeviceError};
use crate::params::Workload;

/// The oldest ROCm the backend supports, as the sentences say it.
pub(crate) const ROCM_FLOOR: &str = "ROCm 5.7";

/// What can go wrong on the ROCm backend.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RocmError {
    /// No file of the library could be opened.
    #[error("no {what} found: {library} could not be opened ({reason}): install {ROCM_FLOOR} or newer, or put its lib directory (e.g. /opt/rocm/lib) in LD_LIBRARY_PATH")]
    NoLibrary {
        what: &'static str,
        library: &'static str,
        reason: String,
    },
    /// The library opened but lacks an entry point the backend calls.
    #[error("{library} has no {symbol}, which the ROCm backend calls: install {ROCM_FLOOR} or newer ({minimum}), or put its lib directory first in LD_LIBRARY_PATH")]
    MissingSymbol {
        library: &'static str,
        symbol: &'static str,
        minimum: &'static str,
    },
    /// The library is older than the backend supports.
    #[error("{library} is {found}, older than {minimum}, the oldest the ROCm backend uses: install {ROCM_FLOOR} or newer, or put its lib directory first in LD_LIBRARY_PATH")]
    TooOld {
        library: &'static str,
        found: String,
        minimum: &'static str,
    },
    /// A HIP runtime call failed: its name, HIP's error name and text.
    #[error("{call} failed in the HIP runtime (libamdhip64.so): {name} ({text})")]
    Hip {
        call: &'static str,
        code: i32,
        name: String,
        text: String,
    },
    /// An RCCL call failed: its name and RCCL's text.
    #[error("{call} failed in RCCL (librccl.so): {text}")]
    Rccl {
        call: &'static str,
        code: i32,
        text: String,
    },
    /// A rocBLAS call failed: its name and rocBLAS's name for the status.
    #[error("{call} failed in rocBLAS (librocblas.so): {text}")]
    Rocblas {
        call: &'static str,
        status: i32,
        text: String,
    },
    /// The runtime started and sees no device.
    #[error("no ROCm device: the HIP runtime (libamdhip64.so) sees no GPU ({0}): check `rocm-smi`, and that ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES do not hide them")]
    NoDevice(String),
    /// A collective whose RCCL calls failed; its communicators are then aborted.
    #[error("{workload}: {source}: rerun with NCCL_DEBUG=WARN to see RCCL's reason")]
    CollectiveFailed {
        workload: Workload,
        #[source]
        source: Box<RocmError>,
    },
    /// Any collective after [`RocmError::CollectiveFailed`] (an aborted communicator is gone).
    #[error("the RCCL communicators were aborted after an earlier error ({0})")]
    CommsAborted(#[source] Box<RocmError>),
    /// A set-up step failed on some ranks: every failing rank's reason (`rank r: reason; …`).
    #[error("{what}: {reasons}")]
    Ranks { what: &'static str, reasons: String },
    /// A lower error, with what the backend was doing when it happened.
    #[error("{what}: {source}")]
    Context {
        what: String,
        #[source]
        source: Box<RocmError>,
    },
    /// A check of the backend's own.
    #[error("{0}")]
    Check(String),
}

impl RocmError {
    /// This error after `what` (what the backend was doing).
    pub(crate) fn context(self, what: impl Into<String>) -> RocmError {
        RocmError::Context {
            what: what.into(),
            source: Box::new(self),
        }
    }

    /// Whether the backend cannot start here at all (exit 2): a library missing, incomplete or
    /// too old, or no device.
    pub(crate) fn unavailable(&self) -> bool {
        match self {
            RocmError::NoLibrary { .. }
            | RocmError::MissingSymbol { .. }
            | RocmError::TooOld { .. }
            | RocmError::NoDevice(_) => true,
            RocmError::Context { source, .. } => source.unavailable(),
            _ => false,
        }
    }
}

pub type RocmResult<T> = Result<T, RocmError>;

impl From<RocmError> for BackendError {
    fn from(e: RocmError) -> Self {
        if e.unavailable() {
            BackendError::Unavailable(e.to_string())
        } else {
            BackendError::Device(DeviceError::Rocm(e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library missing, incomplete or too old, or no device, makes the backend unavailable
    /// (exit 2) with the sentence; a failed call fails the case instead.
    #[test]
    fn set_up_errors_are_unavailable_and_call_errors_are_not() {
        let old = RocmError::TooOld {
            library: "librccl.so",
            found: "RCCL 2.16.5 (NCCL API)".into(),
            minimum: "RCCL 2.17.1",
        };
        let sentence = old.to_string();
        assert!(
            sentence.starts_with("librccl.so is RCCL 2.16.5 (NCCL API), older than RCCL 2.17.1"),
            "{sentence}"
        );
        assert!(
            matches!(BackendError::from(old.clone()), BackendError::Unavailable(m) if m == sentence)
        );
        let missing = RocmError::MissingSymbol {
            library: "libamdhip64.so",
            symbol: "hipEventElapsedTime",
            minimum: "HIP 5.7",
        };
        assert!(missing.clone().context("opening").unavailable());
        let call = RocmError::Hip {
            call: "hipMalloc",
            code: 2,
            name: "hipErrorOutOfMemory".into(),
            text: "out of memory".into(),
        };
        assert!(!call.unavailable());
        assert_eq!(
            call.to_string(),
            "hipMalloc failed in the HIP runtime (libamdhip64.so): hipErrorOutOfMemory (out of memory)"
        );
        assert!(matches!(
            BackendError::from(call),
            BackendError::Device(DeviceError::Rocm(_))
        ));
        for e in [old, missing] {
            assert_eq!(e.to_string().matches(": ").count(), 1, "{e}");
        }
    }
}
