//! Results: the versioned file format ([`schema`]), crash-safe reading and writing ([`io`]),
//! and the one validation every reader applies ([`validate`]).

pub mod attempts;
pub mod ceilings;
pub(crate) mod ddp;
pub mod environment;
pub mod io;
pub mod links;
pub mod replay;
pub(crate) mod representative;
pub mod schema;
pub mod validate;

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch.
pub fn now_unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// UTC time as `YYYYMMDDTHHMMSSZ` (sortable, safe in file names).
pub fn utc_stamp(unix_s: f64) -> String {
    let secs = unix_s.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A new run id: UTC stamp plus the process id (unique on one machine at one second).
pub fn new_run_id(unix_s: f64) -> String {
    format!("{}-{}", utc_stamp(unix_s), std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0.0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400.0), "20000229T000000Z");
        assert_eq!(utc_stamp(1_795_305_600.0 + 3723.0), "20261122T010203Z");
    }
}
