//! Typed errors of the CUDA backend: one enum, a variant per library it drives (the driver,
//! cuBLAS, NCCL) plus the panics [`guarded`] catches, each keeping the library's
//! own code as its source.
//!
//! Every variant displays as the sentence the backend printed when these were strings, so the
//! messages users and tests see are unchanged; the trait boundary turns a [`CudaError`] into a
//! [`BackendError`] (a failed case, exit 4 or 3), and set-up picks `Unavailable` (exit 2) where
//! a library is missing or too old.

use crate::backend::{BackendError, DeviceError};
use crate::params::Workload;
use cudarc::cublas::result::CublasError;
use cudarc::driver::result::DriverError;
use cudarc::nccl::result::NcclError;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

/// A failed CUDA library call, or a panic inside cudarc caught on the way in.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CudaError {
    /// A driver call failed: `NAME (description)`, after the call's name where one is given.
    #[error("{}{}", prefix(.call), driver_text(*.code))]
    Driver {
        call: Option<String>,
        #[source]
        code: DriverError,
    },
    /// A cuBLAS call failed: `CUBLAS_STATUS_…`, after the call's name where one is given.
    #[error("{}{:?}", prefix(.call), .code.0)]
    Cublas {
        call: Option<String>,
        #[source]
        code: CublasError,
    },
    /// An NCCL call failed: `ncclXxx (description; last error)`, read when the call failed
    /// (NCCL's last error is overwritten by the next call).
    #[error("{}{text}", prefix(.call))]
    Nccl {
        call: Option<String>,
        // cudarc's NcclError is no std::error::Error, so it cannot be the source.
        code: NcclError,
        text: String,
    },
    /// cudarc panicked (a missing symbol in an old library).
    #[error(transparent)]
    Panicked(#[from] Panicked),
    /// A collective whose NCCL calls failed; its communicators are then aborted.
    #[error("{workload}: NCCL (libnccl.so) returned {source}: rerun with NCCL_DEBUG=WARN to see NCCL's reason")]
    CollectiveFailed {
        workload: Workload,
        #[source]
        source: Box<CudaError>,
    },
    /// Any collective after [`CudaError::CollectiveFailed`] (an aborted communicator is gone).
    #[error("the NCCL communicators were aborted after an earlier error ({0})")]
    CommsAborted(#[source] Box<CudaError>),
    /// A set-up step failed on some ranks: every failing rank's reason, as each rank sent it
    /// (`rank r: reason; …`), so only the text crosses ranks.
    #[error("{what}: {reasons}")]
    Ranks { what: &'static str, reasons: String },
    /// A GPU that cannot hold even one small buffer (full, or unusable), with the fix.
    #[error("the CUDA driver (libcuda.so.1) could not allocate device memory: {0}: free the GPU (`nvidia-smi` lists the processes using it) or choose another with CUDA_VISIBLE_DEVICES")]
    NoDeviceMemory(#[source] Box<CudaError>),
    /// A lower error, with what the backend was doing when it happened.
    #[error("{what}: {source}")]
    Context {
        what: String,
        #[source]
        source: Box<CudaError>,
    },
    /// A library that is missing, incomplete or too old: the sentence with its fix.
    #[error("{0}")]
    Library(String),
    /// The driver started and sees no device.
    #[error("no CUDA device: the driver reports 0 devices ({visible}; `nvidia-smi` lists what the node has)")]
    NoDevices {
        /// `CUDA_VISIBLE_DEVICES` as this process saw it.
        visible: String,
    },
    /// `cuInit` or `cuDeviceGetCount` failed.
    #[error("no CUDA device: the driver failed to start with {} ({visible}; `nvidia-smi` shows whether the node has GPUs and a working driver)", driver_text(*.code))]
    DriverStart {
        #[source]
        code: DriverError,
        visible: String,
    },
    /// A check of the backend's own failed (a bad id, a shape NCCL cannot take): one sentence.
    #[error("{0}")]
    Check(String),
}

pub type CudaResult<T> = Result<T, CudaError>;

/// A panic inside a CUDA library's first touch, caught by [`guarded`]:
/// `{what}: {panic message}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {message}")]
pub struct Panicked {
    pub what: String,
    pub message: String,
}

fn prefix(call: &Option<String>) -> String {
    call.as_ref().map(|c| format!("{c}: ")).unwrap_or_default()
}

/// `NAME (description)` of a driver error, or the bare code where the driver cannot say.
fn driver_text(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name} ({})", s.to_string_lossy()),
        Err(_) => name,
    }
}

impl CudaError {
    /// A driver error without the call's name (the sentence names the operation elsewhere).
    pub fn driver(code: DriverError) -> CudaError {
        CudaError::Driver { call: None, code }
    }

    /// A mapper for `map_err` naming the driver call that failed.
    pub fn driver_call(call: impl Into<String>) -> impl FnOnce(DriverError) -> CudaError {
        let call = call.into();
        move |code| CudaError::Driver {
            call: Some(call),
            code,
        }
    }

    /// A mapper for `map_err` naming the cuBLAS call that failed.
    pub fn cublas_call(call: &'static str) -> impl FnOnce(CublasError) -> CudaError {
        move |code| CudaError::Cublas {
            call: Some(call.to_string()),
            code,
        }
    }

    /// An NCCL error, its text read now (before another NCCL call overwrites the last error).
    pub fn nccl(call: Option<&str>, code: NcclError) -> CudaError {
        CudaError::Nccl {
            call: call.map(str::to_string),
            text: error_text(code.0),
            code,
        }
    }

    /// This error, after what the backend was doing.
    pub fn context(self, what: impl Into<String>) -> CudaError {
        CudaError::Context {
            what: what.into(),
            source: Box::new(self),
        }
    }
}

/// Serialises panic-hook swaps, so two threads in [`guarded`] cannot lose the original hook.
static HOOK_LOCK: Mutex<()> = Mutex::new(());

thread_local! {
    /// Depth of [`guarded`] calls on this thread (nested calls keep the outer silent hook).
    static GUARD_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` and turns a panic inside it into `Err` of a [`Panicked`] (`{what}: {panic message}`).
///
/// The default panic hook is silenced while `f` runs, so nothing is printed for a panic that
/// becomes an error sentence. The hook is process-wide, so swaps are serialised; this is
/// only used around first touches of a CUDA library (set-up and device listing).
pub fn guarded<T, E: From<Panicked>>(what: &str, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let outer = GUARD_DEPTH.with(|d| d.get()) == 0;
    let lock = outer.then(|| HOOK_LOCK.lock().unwrap_or_else(|e| e.into_inner()));
    let previous = outer.then(|| {
        let p = panic::take_hook();
        panic::set_hook(Box::new(|_| {}));
        p
    });
    GUARD_DEPTH.with(|d| d.set(d.get() + 1));
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    GUARD_DEPTH.with(|d| d.set(d.get() - 1));
    if let Some(p) = previous {
        panic::set_hook(p);
    }
    drop(lock);
    match outcome {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(Panicked {
                what: what.to_string(),
                message: msg.to_string(),
            }
            .into())
        }
    }
}

/// `ncclXxx (description; last error)` for an NCCL result code. Never panics, even with an
/// NCCL too old to have `ncclGetLastError` (2.13).
fn error_text(code: cudarc::nccl::sys::ncclResult_t) -> String {
    fn owned(p: *const std::ffi::c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: NCCL returns NUL-terminated strings it owns and never frees while loaded.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }
    let what = guarded("ncclGetErrorString", || {
        // SAFETY: takes any result code and returns a static string.
        Ok::<_, Panicked>(owned(unsafe {
            cudarc::nccl::sys::ncclGetErrorString(code)
        }))
    })
    .unwrap_or_default();
    let last = guarded("ncclGetLastError", || {
        // SAFETY: a null communicator is allowed (documented); returns a string NCCL owns.
        Ok::<_, Panicked>(owned(unsafe {
            cudarc::nccl::sys::ncclGetLastError(std::ptr::null_mut())
        }))
    })
    .unwrap_or_default();
    match (what.is_empty(), last.is_empty()) {
        (_, false) => format!("{code:?} ({what}; {last})"),
        (false, true) => format!("{code:?} ({what})"),
        (true, true) => format!("{code:?}"),
    }
}

/// A failed case (the common case at the trait boundary); set-up chooses `Unavailable` itself.
/// The error stays typed, with the library's code as its source.
impl From<CudaError> for BackendError {
    fn from(e: CudaError) -> BackendError {
        BackendError::Device(DeviceError::Cuda(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::cublas::sys::cublasStatus_t;

    #[test]
    fn sentences_name_the_call_and_keep_the_code_as_source() {
        let e = CudaError::cublas_call("cublasCreate")(CublasError(
            cublasStatus_t::CUBLAS_STATUS_NOT_INITIALIZED,
        ));
        assert_eq!(e.to_string(), "cublasCreate: CUBLAS_STATUS_NOT_INITIALIZED");
        assert!(std::error::Error::source(&e).is_some());
        let wrapped = e.context("GPU 3");
        assert_eq!(
            wrapped.to_string(),
            "GPU 3: cublasCreate: CUBLAS_STATUS_NOT_INITIALIZED"
        );
        let b: BackendError = wrapped.into();
        assert!(b.to_string().starts_with("GPU 3: cublasCreate"));
        assert!(matches!(b, BackendError::Device(DeviceError::Cuda(_))));
        // The library's code stays reachable through the chain of sources.
        assert!(std::error::Error::source(&b).is_some());
        let p = CudaError::from(Panicked {
            what: "loading".into(),
            message: "Missing symbol".into(),
        });
        assert_eq!(p.to_string(), "loading: Missing symbol");
    }
}
