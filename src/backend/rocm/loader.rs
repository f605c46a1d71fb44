//! Opening a ROCm library at run time and resolving its entry points once, each a typed
//! function pointer; a missing file, a missing symbol, or an old version is one sentence
//! ([`RocmError`]), never a panic.

use super::error::{RocmError, RocmResult};
use libloading::Library;

/// The first of `names` that opens (the unversioned name first, then versioned ones, as ROCm
/// installs them); `what` and `library` name it in the error.
pub(super) fn open(
    what: &'static str,
    library: &'static str,
    names: &[&'static str],
) -> RocmResult<Library> {
    let mut first_err = None;
    for name in names {
        // SAFETY: opening runs the library's initialisers; the ROCm libraries' are the
        // vendor's (or the stand-ins', which refuse to load unless asked for), and nothing
        // else in this process depends on their state.
        match unsafe { Library::new(name) } {
            Ok(lib) => return Ok(lib),
            Err(e) => {
                first_err.get_or_insert(e.to_string());
            }
        }
    }
    Err(RocmError::NoLibrary {
        what,
        library,
        reason: first_err.unwrap_or_else(|| "no file name to try".into()),
    })
}

/// Declares a table of entry points: a struct holding each as a typed function pointer next
/// to the library that keeps them valid, and `resolve`, which looks every one up once.
macro_rules! entry_points {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident in $library:literal since $minimum:literal {
            $( $field:ident = $symbol:literal : fn($($arg:ty),* $(,)?) -> $ret:ty; )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $field: unsafe extern "C" fn($($arg),*) -> $ret, )*
            // Last: the pointers above are valid while it is open.
            _lib: libloading::Library,
        }

        impl $name {
            /// Resolves every entry point; the first one missing is the error.
            fn resolve(lib: libloading::Library) -> $crate::backend::rocm::error::RocmResult<$name> {
                $(
                    // SAFETY: the function type is the C prototype of this symbol in the
                    // library's header (HIP's hip_runtime_api.h, RCCL's rccl.h, rocblas.h); the pointer
                    // is kept only inside this struct, next to the library that owns it.
                    let $field = unsafe {
                        lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>($symbol.as_bytes())
                    }
                    .map(|s| *s)
                    .map_err(|_| $crate::backend::rocm::error::RocmError::MissingSymbol {
                        library: $library,
                        symbol: $symbol,
                        minimum: $minimum,
                    })?;
                )*
                Ok($name { $($field,)* _lib: lib })
            }
        }
    };
}

pub(super) use entry_points;
