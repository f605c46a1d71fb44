//! The system CBLAS, opened at run time (`dlopen`), so one binary multiplies with whatever BLAS
//! a node has: OpenBLAS, BLIS/AOCL, MKL or FlexiBLAS.
//!
//! Only `cblas_sgemm` and `cblas_dgemm` are required. Thread-count and version calls are looked
//! up by name and used where the library has them; a library without them still runs, and the
//! caller says so in the launch's warnings.

use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CStr, OsStr, OsString};
use std::path::Path;

/// Environment variable naming the CBLAS library to open (a path or a soname).
pub(crate) const ENV: &str = "SCALEBENCH_BLAS";

/// Libraries tried, in order, when [`ENV`] is unset. FlexiBLAS first: where a site installs
/// it, it is the site's chosen BLAS. The generic `libblas.so.3` is left out on purpose: it is
/// often the reference BLAS, tens of times slower than an optimised one.
pub(crate) const SEARCH: &[&str] = &[
    "libflexiblas.so.3",
    "libopenblas.so.0",
    "libopenblas.so",
    "libblis.so.4",
    "libblis.so",
    "libmkl_rt.so.2",
    "libmkl_rt.so",
];

/// How a package manager installs one (for the fix in error messages).
const INSTALL_HINT: &str = "install one (Debian: apt-get install libopenblas0-pthread)";

const CBLAS_ROW_MAJOR: c_int = 101;
const CBLAS_NO_TRANS: c_int = 111;

/// `cblas_?gemm(layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`.
pub(crate) type CblasGemm<T> = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    T,
    *const T,
    c_int,
    *const T,
    c_int,
    T,
    *mut T,
    c_int,
);

/// Element types with a CBLAS GEMM.
pub trait CblasScalar: super::super::Element {
    fn cblas_gemm(lib: &Blas) -> CblasGemm<Self>;
}
impl CblasScalar for f32 {
    fn cblas_gemm(lib: &Blas) -> CblasGemm<f32> {
        lib.sgemm
    }
}
impl CblasScalar for f64 {
    fn cblas_gemm(lib: &Blas) -> CblasGemm<f64> {
        lib.dgemm
    }
}

/// A library's own thread-count calls (BLIS takes and returns its 64-bit `dim_t`).
enum ThreadCalls {
    Int {
        set: unsafe extern "C" fn(c_int),
        get: Option<unsafe extern "C" fn() -> c_int>,
    },
    Dim {
        set: unsafe extern "C" fn(i64),
        get: Option<unsafe extern "C" fn() -> i64>,
    },
}

/// Thread setters scalebench knows: (setter, getter, takes `dim_t`). FlexiBLAS first: it may
/// also export OpenBLAS' names as forwards.
const THREAD_CALLS: &[(&str, &str, bool)] = &[
    (
        "flexiblas_set_num_threads",
        "flexiblas_get_num_threads",
        false,
    ),
    ("MKL_Set_Num_Threads", "MKL_Get_Max_Threads", false),
    (
        "openblas_set_num_threads",
        "openblas_get_num_threads",
        false,
    ),
    (
        "bli_thread_set_num_threads",
        "bli_thread_get_num_threads",
        true,
    ),
];

/// The setter names, for messages.
pub(crate) fn thread_setter_names() -> String {
    THREAD_CALLS
        .iter()
        .map(|(s, _, _)| *s)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why no CBLAS could be used. Each message is one sentence naming the library and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("no system BLAS found (tried {}): {INSTALL_HINT}, or set {ENV}=/path/to/lib.so", SEARCH.join(", "))]
    NotFound,
    #[error("{ENV}={lib} cannot be loaded ({reason}): point {ENV} at an installed CBLAS library (e.g. /usr/lib/x86_64-linux-gnu/libopenblas.so.0) or unset it")]
    Open { lib: String, reason: String },
    #[error("{lib} has no {missing}, so it is not a CBLAS library: point {ENV} at one (OpenBLAS, BLIS, MKL or FlexiBLAS) or unset it")]
    NotCblas { lib: String, missing: &'static str },
}

/// An opened CBLAS.
pub struct Blas {
    sgemm: CblasGemm<f32>,
    dgemm: CblasGemm<f64>,
    threads: Option<(&'static str, ThreadCalls)>,
    /// The file holding `cblas_sgemm`, links resolved.
    path: String,
    /// Version and build configuration, as the library reports them.
    version: String,
    /// The kernel family it says it runs (OpenBLAS's core name, BLIS's configuration).
    kernel: Option<String>,
    // Never closed: a BLAS's worker threads may still be parked inside it, and unloading
    // code under them crashes the process. Opening it again only raises a count.
    _lib: std::mem::ManuallyDrop<Library>,
}

impl std::fmt::Debug for Blas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blas")
            .field("path", &self.path)
            .field("version", &self.version)
            .finish()
    }
}

/// Reads a NUL-terminated string a library returned (`None` for a null pointer).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that stays valid during the call.
unsafe fn c_string(p: *const c_char) -> Option<String> {
    // SAFETY: a null pointer is checked; otherwise the caller guarantees a live C string.
    unsafe { (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().trim().to_string()) }
}

impl Blas {
    /// Opens [`ENV`] if set, else the first of [`SEARCH`] that loads and has CBLAS GEMMs.
    pub fn load() -> Result<Blas, LoadError> {
        match std::env::var_os(ENV) {
            Some(lib) if !lib.is_empty() => Blas::open(&lib),
            _ => SEARCH
                .iter()
                .find_map(|name| Blas::open(OsStr::new(name)).ok())
                .ok_or(LoadError::NotFound),
        }
    }

    /// Opens one library (a path, or a soname the dynamic loader searches for).
    pub fn open(lib: &OsStr) -> Result<Blas, LoadError> {
        let shown = || lib.to_string_lossy().into_owned();
        // SAFETY: loading runs the library's initialisers; a BLAS's only start threads and
        // read the CPU's features.
        let library = unsafe { Library::new(lib) }.map_err(|e| LoadError::Open {
            lib: shown(),
            reason: e.to_string(),
        })?;
        // Every `get` below: a symbol look-up, typed with the CBLAS or vendor prototype.
        // SAFETY: `CblasGemm<f32>` is cblas_sgemm's prototype.
        let sgemm: CblasGemm<f32> = unsafe { library.get::<CblasGemm<f32>>(b"cblas_sgemm\0") }
            .map(|s| *s)
            .map_err(|_| LoadError::NotCblas {
                lib: shown(),
                missing: "cblas_sgemm",
            })?;
        // SAFETY: `CblasGemm<f64>` is cblas_dgemm's prototype.
        let dgemm: CblasGemm<f64> = unsafe { library.get::<CblasGemm<f64>>(b"cblas_dgemm\0") }
            .map(|s| *s)
            .map_err(|_| LoadError::NotCblas {
                lib: shown(),
                missing: "cblas_dgemm",
            })?;
        let threads = THREAD_CALLS.iter().find_map(|&(set, get, dim)| {
            let sym = |name: &str| -> Option<*const c_void> {
                let mut z = name.as_bytes().to_vec();
                z.push(0);
                // SAFETY: read as an untyped address; the caller below casts it to the
                // prototype of the vendor call the table names.
                unsafe { library.get::<*const c_void>(&z) }
                    .ok()
                    .map(|s| *s)
                    .filter(|p| !p.is_null())
            };
            let s = sym(set)?;
            let g = sym(get);
            // SAFETY: the symbols are functions with these vendor prototypes.
            let calls = unsafe {
                if dim {
                    ThreadCalls::Dim {
                        set: std::mem::transmute::<*const c_void, unsafe extern "C" fn(i64)>(s),
                        get: g.map(|g| {
                            std::mem::transmute::<*const c_void, unsafe extern "C" fn() -> i64>(g)
                        }),
                    }
                } else {
                    ThreadCalls::Int {
                        set: std::mem::transmute::<*const c_void, unsafe extern "C" fn(c_int)>(s),
                        get: g.map(|g| {
                            std::mem::transmute::<*const c_void, unsafe extern "C" fn() -> c_int>(g)
                        }),
                    }
                }
            };
            Some((set, calls))
        });
        let path = object_path(sgemm as *const c_void).unwrap_or_else(shown);
        let version = describe(&library, &path);
        let kernel = kernel_name(&library);
        Ok(Blas {
            sgemm,
            dgemm,
            threads,
            path,
            version,
            kernel,
            _lib: std::mem::ManuallyDrop::new(library),
        })
    }

    /// The file holding `cblas_sgemm` (links resolved).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Version and configuration, e.g. `OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The kernel family the library says it runs, e.g. OpenBLAS's `Haswell` (`None`: it has
    /// no call scalebench knows to ask).
    pub fn kernel(&self) -> Option<&str> {
        self.kernel.as_deref()
    }

    /// The library's thread setter, if scalebench knows one it has.
    pub fn thread_setter(&self) -> Option<&'static str> {
        self.threads.as_ref().map(|(name, _)| *name)
    }

    /// The thread count the library reports (`None`: no getter).
    pub fn threads(&self) -> Option<u32> {
        // The getters take no arguments and only read the library's setting.
        match &self.threads {
            // SAFETY: as above (an `int` getter from the library still loaded in `self`).
            Some((_, ThreadCalls::Int { get: Some(g), .. })) => Some(unsafe { g() }.max(0) as u32),
            // SAFETY: as above (a 64-bit getter).
            Some((_, ThreadCalls::Dim { get: Some(g), .. })) => Some(unsafe { g() }.max(0) as u32),
            _ => None,
        }
    }

    /// Tells the library to use `n` threads per call; returns what it then reports (`None`
    /// when it has no setter or no getter). Process-wide: the setting is the library's.
    pub fn set_threads(&self, n: u32) -> Option<u32> {
        let n = n.max(1);
        // The setters take a thread count and change only the library's setting.
        match &self.threads {
            // SAFETY: as above (an `int` setter from the library still loaded in `self`).
            Some((_, ThreadCalls::Int { set, .. })) => unsafe { set(n as c_int) },
            // SAFETY: as above (a 64-bit setter).
            Some((_, ThreadCalls::Dim { set, .. })) => unsafe { set(i64::from(n)) },
            None => return None,
        }
        self.threads()
    }

    /// C = A·B for row-major m×k A, k×n B and m×n C, packed (leading dimensions k, n, n).
    ///
    /// # Safety
    /// `a`, `b` and `c` hold m·k, k·n and m·n elements; `c` does not overlap them. The
    /// dimensions fit a C `int` (see [`fits_cblas`]).
    pub unsafe fn gemm<T: CblasScalar>(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: *const T,
        b: *const T,
        c: *mut T,
    ) {
        // SAFETY: the caller guarantees the operands' sizes, no overlap with `c`, and
        // dimensions that fit a C int; the function pointer is the loaded library's GEMM.
        unsafe {
            if m == 0 || n == 0 {
                return;
            }
            let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
            let f = T::cblas_gemm(self);
            // Leading dimensions must be ≥ 1 even for empty operands.
            let ld = |x: usize| x.max(1) as c_int;
            f(
                CBLAS_ROW_MAJOR,
                CBLAS_NO_TRANS,
                CBLAS_NO_TRANS,
                m as c_int,
                n as c_int,
                k as c_int,
                one,
                a,
                ld(k),
                b,
                ld(n),
                zero,
                c,
                ld(n),
            );
        }
    }
}

/// Whether an m×n×k product can be passed to a CBLAS with 32-bit integers (LP64 interface).
pub(crate) fn fits_cblas(m: u64, n: u64, k: u64) -> bool {
    [m, n, k].iter().all(|&x| x <= c_int::MAX as u64)
}

/// The shared object holding `addr` (from `dladdr`), with links resolved.
fn object_path(addr: *const c_void) -> Option<String> {
    // SAFETY: Dl_info is plain C data (pointers and integers): all zeroes is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 {
        return None;
    }
    // SAFETY: dli_fname is null or a string owned by the loader while the object is loaded.
    let name = unsafe { c_string(info.dli_fname) }?;
    let p = Path::new(&name);
    Some(
        std::fs::canonicalize(p)
            .map(|c| c.display().to_string())
            .unwrap_or(name),
    )
}

/// The kernel family the library runs: OpenBLAS's `openblas_get_corename()`, BLIS's
/// `bli_arch_string(bli_arch_query_id())`.
fn kernel_name(lib: &Library) -> Option<String> {
    // SAFETY: each symbol is typed with its vendor's prototype; the strings returned are the
    // library's static text, copied out at once.
    unsafe {
        if let Ok(f) =
            lib.get::<unsafe extern "C" fn() -> *const c_char>(b"openblas_get_corename\0")
        {
            return c_string((*f)()).filter(|s| !s.is_empty());
        }
        if let (Ok(q), Ok(name)) = (
            lib.get::<unsafe extern "C" fn() -> c_int>(b"bli_arch_query_id\0"),
            lib.get::<unsafe extern "C" fn(c_int) -> *const c_char>(b"bli_arch_string\0"),
        ) {
            return c_string((*name)((*q)())).filter(|s| !s.is_empty());
        }
    }
    None
}

/// What the library says it is: the vendor's version/config call, or the file name.
fn describe(lib: &Library, path: &str) -> String {
    fn get<T: Copy>(lib: &Library, name: &[u8]) -> Option<T> {
        // SAFETY: every caller below names `T` as the vendor's prototype of `name`.
        unsafe { lib.get::<T>(name) }.ok().map(|s| *s)
    }
    // SAFETY: each call has its vendor's prototype; returned strings are the library's
    // static text, copied out before the library could be unloaded.
    unsafe {
        if let Some(v) = get::<unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_int) -> c_int>(
            lib,
            b"flexiblas_get_version\0",
        ) {
            let (mut a, mut b, mut c) = (0, 0, 0);
            v(&mut a, &mut b, &mut c);
            let mut backend = String::new();
            if let Some(cur) = get::<unsafe extern "C" fn(*mut c_char, usize) -> c_int>(
                lib,
                b"flexiblas_current_backend\0",
            ) {
                let mut buf = [0 as c_char; 256];
                cur(buf.as_mut_ptr(), buf.len());
                buf[255] = 0;
                backend = c_string(buf.as_ptr()).unwrap_or_default();
            }
            return format!("FlexiBLAS {a}.{b}.{c}, backend {backend}");
        }
        if let Some(v) =
            get::<unsafe extern "C" fn(*mut c_char, c_int)>(lib, b"MKL_Get_Version_String\0")
        {
            let mut buf = [0 as c_char; 512];
            v(buf.as_mut_ptr(), buf.len() as c_int);
            buf[511] = 0;
            return c_string(buf.as_ptr()).unwrap_or_else(|| "Intel MKL".into());
        }
        if let Some(v) =
            get::<unsafe extern "C" fn() -> *const c_char>(lib, b"openblas_get_config\0")
        {
            let mut s = c_string(v()).unwrap_or_else(|| "OpenBLAS".into());
            if let Some(p) = get::<unsafe extern "C" fn() -> c_int>(lib, b"openblas_get_parallel\0")
            {
                s.push_str(match p() {
                    0 => " (sequential)",
                    1 => " (pthreads)",
                    2 => " (OpenMP)",
                    _ => "",
                });
            }
            return s;
        }
        if let Some(v) =
            get::<unsafe extern "C" fn() -> *const c_char>(lib, b"bli_info_get_version_str\0")
        {
            return format!("BLIS {}", c_string(v()).unwrap_or_default());
        }
    }
    let file = Path::new(path)
        .file_name()
        .map_or(OsString::from(path), |f| f.to_os_string());
    format!("unknown CBLAS ({})", file.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_names_itself_and_the_fix() {
        let e = Blas::open(OsStr::new("/nonexistent/libcblas.so")).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, LoadError::Open { .. }), "{msg}");
        assert!(msg.contains("/nonexistent/libcblas.so"), "{msg}");
        assert!(msg.contains("unset it"), "{msg}");
    }

    #[test]
    fn a_library_without_cblas_is_refused() {
        // libm is on every glibc system and has no CBLAS.
        let e = Blas::open(OsStr::new("libm.so.6")).unwrap_err();
        assert_eq!(
            e,
            LoadError::NotCblas {
                lib: "libm.so.6".into(),
                missing: "cblas_sgemm"
            }
        );
        assert!(e.to_string().starts_with("libm.so.6 has no cblas_sgemm"));
    }

    #[test]
    fn dimensions_beyond_a_c_int_do_not_fit() {
        assert!(fits_cblas(1 << 20, 3, 1));
        assert!(!fits_cblas(1 << 31, 3, 1));
    }
}
