//! Identical measurements are one run: a fingerprint of what a run measured (every case's
//! samples, bit for bit, by case id), so that a copy of a run with its run id, path or
//! time stamps edited is still recognised as the same run. Two real runs never give
//! bit-identical sample series for every case: timers read nanoseconds and the machine's
//! noise moves every value.

use crate::params::fnv1a64;
use crate::results::schema::ResultsFile;

/// The fingerprint of a run's measurements: FNV-1a over the sorted case ids with each case's
/// samples (their bits, in measurement order). `None` when no case holds at least two samples
/// (then there is nothing to recognise a copy by: a run of failed cases).
pub(crate) fn measurements_fingerprint(f: &ResultsFile) -> Option<u64> {
    let mut cases: Vec<(&str, &[f64])> = f
        .cases
        .iter()
        .filter_map(|c| Some((c.id.as_str(), c.timing.as_ref()?.samples_s.as_slice())))
        .filter(|(_, s)| s.len() >= 2)
        .collect();
    if cases.is_empty() {
        return None;
    }
    cases.sort_by(|a, b| a.0.cmp(b.0));
    let mut bytes = Vec::new();
    for (id, samples) in cases {
        bytes.extend_from_slice(id.as_bytes());
        bytes.push(0);
        for x in samples {
            bytes.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        bytes.push(0xff);
    }
    Some(fnv1a64(&bytes))
}

#[cfg(test)]
mod tests {
    use super::measurements_fingerprint;
    use crate::results::schema::ResultsFile;

    /// The golden run, every case given 10 distinct samples.
    fn run() -> ResultsFile {
        let text = include_str!("../../tests/golden/results-v1.json");
        let mut f: ResultsFile =
            crate::results::io::parse_results(std::path::Path::new("golden"), text)
                .unwrap_or_else(|e| panic!("golden: {e}"));
        for (k, c) in f.cases.iter_mut().enumerate() {
            if let Some(t) = c.timing.as_mut() {
                t.samples_s = (0..10)
                    .map(|i| 1e-6 * (1.0 + k as f64 + 0.01 * i as f64))
                    .collect();
            }
        }
        f
    }

    #[test]
    fn an_edited_copy_has_the_same_fingerprint_and_one_changed_sample_another() {
        let a = run();
        let fa = measurements_fingerprint(&a);
        assert!(fa.is_some(), "the fixture has samples");
        let mut b = a.clone();
        b.run.run_id = "another-id".into();
        b.run.started_unix_s += 3600.0;
        assert_eq!(measurements_fingerprint(&b), fa);
        let mut c = a.clone();
        let t = c
            .cases
            .iter_mut()
            .find_map(|x| x.timing.as_mut().filter(|t| t.samples_s.len() >= 2))
            .unwrap_or_else(|| panic!("a case with samples"));
        t.samples_s[1] = f64::from_bits(t.samples_s[1].to_bits() + 1);
        assert_ne!(measurements_fingerprint(&c), fa);
    }
}
