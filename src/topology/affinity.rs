//! CPU affinity as the operating system sees it: read back what is in force (for provenance)
//! and bind the calling thread. Linux cpulist text (`0-3,8`) is the exchange format.

use std::io;

/// CPUs the calling thread may run on, ascending.
pub fn current_thread_cpus() -> io::Result<Vec<u32>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity(0, ..) fills it for this thread.
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
    // SAFETY: as above; CPU_SET only writes inside the set for indices < CPU_SETSIZE.
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

/// Formats CPUs as a Linux cpulist: `0-3,8,10-11`.
pub fn format_cpulist(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// Parses a Linux cpulist (`0-3,8`); `None` if malformed.
pub fn parse_cpulist(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_round_trip() {
        assert_eq!(format_cpulist(&[3, 0, 1, 2, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpulist(&[5]), "5");
        assert_eq!(
            parse_cpulist("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert!(parse_cpulist("3-1").is_none());
        assert!(parse_cpulist("a").is_none());
    }

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
