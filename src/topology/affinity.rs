//! CPU affinity as the operating system sees it: read back what is in force (for provenance)
//! and bind the calling thread. Linux cpulist text (`0-3,8`) is the exchange format.

use std::io;

// The text format is vocabulary the results format shares; it lives with the parameters.
pub use crate::params::cpulist::{format_cpulist, parse_cpulist};

/// CPUs the calling thread may run on, ascending.
pub fn current_thread_cpus() -> io::Result<Vec<u32>> {
    // SAFETY: cpu_set_t is a plain bit array, so all-zero is a valid (empty) set. The kernel
    // writes at most size_of::<cpu_set_t>() bytes into `set`, a local live across the call;
    // pid 0 is the calling thread. CPU_ISSET reads bit `c` only for c < CPU_SETSIZE, inside `set`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|c| libc::CPU_ISSET(*c, &set))
            .map(|c| c as u32)
            .collect())
    }
}

/// Restricts the calling thread to `cpus`.
pub fn bind_current_thread(cpus: &[u32]) -> io::Result<()> {
    if cpus.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty CPU set"));
    }
    // SAFETY: all-zero is a valid (empty) cpu_set_t. CPU_SET runs only after the check above
    // that c < CPU_SETSIZE, so it writes inside `set`; sched_setaffinity reads
    // size_of::<cpu_set_t>() bytes from that live local and binds only the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in cpus {
            if (*c as usize) >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {c} out of range"),
                ));
            }
            libc::CPU_SET(*c as usize, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_is_read_back() {
        let before = current_thread_cpus().unwrap();
        assert!(!before.is_empty());
        // bind a fresh thread to the first allowed CPU and read it back there
        let first = before[0];
        let seen = std::thread::spawn(move || {
            bind_current_thread(&[first]).unwrap();
            current_thread_cpus().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, vec![first]);
        assert_eq!(current_thread_cpus().unwrap(), before);
    }
}
