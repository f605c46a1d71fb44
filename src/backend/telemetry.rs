//! Device telemetry during a case: a background thread samples a [`Probe`] (NVML on GPU
//! nodes) at a fixed period between [`Sampler::begin`] and [`Sampler::end`], and
//! [`summarize`] turns one device's samples into a [`DeviceTelemetry`] record.
//!
//! The thread owns the probe, so a probe that borrows its library handle (NVML's devices do)
//! never crosses threads. Sampling runs beside the measurement, never inside it: the
//! measuring thread only sends a message at the start and end of a case.

use crate::results::schema::DeviceTelemetry;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// One reading of one device; a figure the device does not report is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sample {
    pub gpu_util_percent: Option<f64>,
    pub mem_util_percent: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub temperature_c: Option<f64>,
}

/// Reads the devices a sampler watches.
pub(crate) trait Probe {
    /// Why the probe could not open or read (it crosses from the sampling thread).
    type Error: std::error::Error + Send + 'static;
    /// Devices watched (local order).
    fn devices(&self) -> usize;
    /// One reading of local device `dev`.
    fn sample(&mut self, dev: usize) -> Result<Sample, Self::Error>;
    /// A sentence on what this probe cannot read, for the launch's warnings.
    fn note(&self) -> Option<String> {
        None
    }
    /// What a power reading covers where it is not the device alone (AMD SMI: "socket").
    fn power_scope(&self) -> Option<&'static str> {
        None
    }
}

/// What the sampling thread learnt from its probe when it opened.
struct Opened {
    devices: usize,
    note: Option<String>,
    power_scope: Option<&'static str>,
}

/// Why a sampler did not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError<E: std::error::Error + 'static> {
    #[error("cannot start the telemetry thread: {0}")]
    Thread(#[source] std::io::Error),
    #[error("the telemetry thread stopped while opening its probe")]
    Stopped,
    /// The probe's own error (e.g. no NVML library), as it reads.
    #[error(transparent)]
    Probe(E),
}

/// Default sampling period: NVML refreshes utilisation every 1/6 s to 1 s, so faster
/// sampling repeats readings.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// Set to `0` to switch GPU sampling off (either backend).
pub(crate) const TELEMETRY_ENV: &str = "SCALEBENCH_TELEMETRY";

/// A GPU backend's sampler over the probe `open` builds, and a launch warning: why there is
/// none (a node without the management library still runs) or what the probe cannot read;
/// neither when [`TELEMETRY_ENV`] switches sampling off.
pub(crate) fn start<P, E, F>(open: F) -> (Option<Sampler<E>>, Option<String>)
where
    E: std::error::Error + Send + 'static,
    P: Probe<Error = E>,
    F: FnOnce() -> Result<P, E> + Send + 'static,
{
    if std::env::var(TELEMETRY_ENV).is_ok_and(|v| v.trim() == "0") {
        return (None, None);
    }
    match Sampler::spawn(open, DEFAULT_INTERVAL) {
        Ok(s) => {
            let note = s.note.clone();
            (Some(s), note)
        }
        Err(e) => (None, Some(e.to_string())),
    }
}

/// Samples of one device over one case, or the first error met.
pub(crate) type DeviceSamples<E> = Result<Vec<Sample>, E>;

enum Command<E> {
    Begin,
    End(Sender<Vec<DeviceSamples<E>>>),
}

/// A sampling thread for the devices of one process; `E` is its probe's error.
pub(crate) struct Sampler<E> {
    tx: Option<Sender<Command<E>>>,
    thread: Option<JoinHandle<()>>,
    interval: Duration,
    // Read only by the tests (the probe's device count as the thread saw it).
    #[cfg_attr(not(test), allow(dead_code))]
    devices: usize,
    note: Option<String>,
    power_scope: Option<&'static str>,
    active: bool,
}

impl<E: std::error::Error + Send + 'static> Sampler<E> {
    /// Starts the thread; `open` builds the probe on it. Returns `open`'s error (e.g. no NVML
    /// library) without leaving a thread behind.
    pub(crate) fn spawn<P, F>(open: F, interval: Duration) -> Result<Sampler<E>, TelemetryError<E>>
    where
        P: Probe<Error = E>,
        F: FnOnce() -> Result<P, E> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel::<Command<E>>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<Opened, E>>();
        let thread = std::thread::Builder::new()
            .name("scalebench-telemetry".into())
            .spawn(move || {
                let probe = match open() {
                    Ok(p) => {
                        let _ = ready_tx.send(Ok(Opened {
                            devices: p.devices(),
                            note: p.note(),
                            power_scope: p.power_scope(),
                        }));
                        p
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                serve(probe, rx, interval);
            })
            .map_err(TelemetryError::Thread)?;
        match ready_rx.recv() {
            Ok(Ok(o)) => Ok(Sampler {
                tx: Some(tx),
                thread: Some(thread),
                interval,
                devices: o.devices,
                note: o.note,
                power_scope: o.power_scope,
                active: false,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(TelemetryError::Probe(e))
            }
            Err(_) => {
                let _ = thread.join();
                Err(TelemetryError::Stopped)
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn devices(&self) -> usize {
        self.devices
    }

    /// Starts a case: samples collected so far are dropped.
    pub(crate) fn begin(&mut self) {
        if let Some(tx) = &self.tx {
            self.active = tx.send(Command::Begin).is_ok();
        }
    }

    /// Ends the case: one more reading of each device, then every device's samples since
    /// [`Sampler::begin`]. Without a `begin`, or when the thread is gone, empty.
    pub(crate) fn end(&mut self) -> Vec<DeviceSamples<E>> {
        if !std::mem::take(&mut self.active) {
            return Vec::new();
        }
        let Some(tx) = &self.tx else {
            return Vec::new();
        };
        let (reply_tx, reply_rx) = mpsc::channel();
        if tx.send(Command::End(reply_tx)).is_err() {
            return Vec::new();
        }
        reply_rx.recv().unwrap_or_default()
    }

    /// [`Sampler::end`], each device's samples summarised; local device `d` is recorded as
    /// device `first_device + d` (the rank's devices are numbered across the job).
    pub(crate) fn end_summaries(&mut self, first_device: u32) -> Vec<DeviceTelemetry> {
        let interval_s = self.interval.as_secs_f64();
        let scope = self.power_scope;
        self.end()
            .iter()
            .enumerate()
            .map(|(dev, samples)| {
                let mut t = summarize(first_device + dev as u32, samples, interval_s);
                if t.power_w_max.is_some() {
                    t.power_scope = scope.map(str::to_string);
                }
                t
            })
            .collect()
    }
}

impl<E> Drop for Sampler<E> {
    fn drop(&mut self) {
        // Closing the channel stops the thread.
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve<P: Probe>(mut probe: P, rx: Receiver<Command<P::Error>>, interval: Duration) {
    let n = probe.devices();
    let fresh = || -> Vec<DeviceSamples<P::Error>> { (0..n).map(|_| Ok(Vec::new())).collect() };
    let mut taken = fresh();
    let mut active = false;
    loop {
        let cmd = if active {
            match rx.recv_timeout(interval) {
                Ok(c) => c,
                Err(RecvTimeoutError::Timeout) => {
                    read_all(&mut probe, &mut taken);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        } else {
            match rx.recv() {
                Ok(c) => c,
                Err(_) => return,
            }
        };
        match cmd {
            Command::Begin => {
                taken = fresh();
                active = true;
            }
            Command::End(reply) => {
                if active {
                    read_all(&mut probe, &mut taken);
                }
                active = false;
                let _ = reply.send(std::mem::replace(&mut taken, fresh()));
            }
        }
    }
}

/// One reading of every device; a device keeps its first error and is not read again.
fn read_all<P: Probe>(probe: &mut P, taken: &mut [DeviceSamples<P::Error>]) {
    for (dev, slot) in taken.iter_mut().enumerate() {
        if let Ok(v) = slot {
            match probe.sample(dev) {
                Ok(s) => v.push(s),
                Err(e) => *slot = Err(e),
            }
        }
    }
}

/// One device's record: means, extremes and the sample count.
pub(crate) fn summarize<E: std::fmt::Display>(
    device: u32,
    samples: &DeviceSamples<E>,
    interval_s: f64,
) -> DeviceTelemetry {
    let mut t = DeviceTelemetry {
        device,
        samples: 0,
        interval_s,
        gpu_util_percent_mean: None,
        gpu_util_percent_min: None,
        mem_util_percent_mean: None,
        sm_clock_mhz_min: None,
        sm_clock_mhz_max: None,
        power_w_max: None,
        power_scope: None,
        temperature_c_max: None,
        error: None,
    };
    let v = match samples {
        Ok(v) => v,
        Err(e) => {
            t.error = Some(e.to_string());
            return t;
        }
    };
    t.samples = v.len() as u32;
    let field = |f: fn(&Sample) -> Option<f64>| -> Vec<f64> {
        v.iter().filter_map(f).filter(|x| x.is_finite()).collect()
    };
    let mean = |x: &[f64]| (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64);
    let min = |x: &[f64]| x.iter().copied().reduce(f64::min);
    let max = |x: &[f64]| x.iter().copied().reduce(f64::max);
    let util = field(|s| s.gpu_util_percent);
    t.gpu_util_percent_mean = mean(&util);
    t.gpu_util_percent_min = min(&util);
    t.mem_util_percent_mean = mean(&field(|s| s.mem_util_percent));
    let clock = field(|s| s.sm_clock_mhz);
    t.sm_clock_mhz_min = min(&clock);
    t.sm_clock_mhz_max = max(&clock);
    t.power_w_max = max(&field(|s| s.power_w));
    t.temperature_c_max = max(&field(|s| s.temperature_c));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Device d reads utilisation 10·d + k on its k-th reading; device `fail` errors.
    struct Fake {
        n: usize,
        reads: Vec<usize>,
        fail: Option<usize>,
        total: Arc<AtomicUsize>,
    }

    #[derive(Debug, PartialEq, thiserror::Error)]
    #[error("{0}")]
    struct FakeError(String);

    impl Probe for Fake {
        type Error = FakeError;
        fn devices(&self) -> usize {
            self.n
        }
        fn sample(&mut self, dev: usize) -> Result<Sample, FakeError> {
            self.total.fetch_add(1, Ordering::SeqCst);
            if self.fail == Some(dev) {
                return Err(FakeError(format!("device {dev} is gone")));
            }
            let k = self.reads[dev];
            self.reads[dev] += 1;
            Ok(Sample {
                gpu_util_percent: Some((10 * dev + k) as f64),
                sm_clock_mhz: Some(1000.0 + k as f64),
                ..Sample::default()
            })
        }
    }

    fn fake(n: usize, fail: Option<usize>) -> (Sampler<FakeError>, Arc<AtomicUsize>) {
        let total = Arc::new(AtomicUsize::new(0));
        let t = total.clone();
        let s = Sampler::spawn(
            move || {
                Ok(Fake {
                    n,
                    reads: vec![0; n],
                    fail,
                    total: t,
                })
            },
            Duration::from_millis(5),
        )
        .expect("fake probe opens");
        (s, total)
    }

    /// Waits (up to 10 s, for loaded machines) until the probe was read `n` times.
    fn wait_for(total: &AtomicUsize, n: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while total.load(Ordering::SeqCst) < n {
            assert!(
                std::time::Instant::now() < deadline,
                "the sampler never read"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn open_error_is_returned_and_no_thread_is_left() {
        let e = Sampler::spawn(
            || -> Result<Fake, FakeError> { Err(FakeError("NVML library not found".into())) },
            DEFAULT_INTERVAL,
        )
        .err()
        .expect("open fails");
        assert!(matches!(e, TelemetryError::Probe(_)));
        assert_eq!(e.to_string(), "NVML library not found");
    }

    #[test]
    fn samples_while_active_and_once_at_the_end() {
        let (mut s, total) = fake(2, None);
        assert_eq!(s.devices(), 2);
        // Idle: nothing is read.
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(total.load(Ordering::SeqCst), 0);
        s.begin();
        wait_for(&total, 4);
        let got = s.end();
        assert_eq!(got.len(), 2);
        let d0 = got[0].as_ref().expect("device 0");
        let d1 = got[1].as_ref().expect("device 1");
        // Periodic readings plus the final one; the two devices are read together.
        assert!(d0.len() >= 3, "{d0:?}");
        assert_eq!(d0.len(), d1.len());
        assert_eq!(d1[0].gpu_util_percent, Some(10.0));
        let first_len = d0.len();
        // Idle again after end; a second case starts from scratch.
        let after = total.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(total.load(Ordering::SeqCst), after);
        s.begin();
        let got = s.end();
        let d0 = got[0].as_ref().expect("device 0");
        // At least the final reading; the first case's readings are not repeated.
        assert!(!d0.is_empty(), "{d0:?}");
        assert_eq!(d0[0].gpu_util_percent, Some(first_len as f64));
    }

    #[test]
    fn end_without_begin_is_empty() {
        let (mut s, total) = fake(1, None);
        assert!(s.end().is_empty());
        assert_eq!(total.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_failing_device_keeps_its_error_and_the_others_go_on() {
        let (mut s, total) = fake(3, Some(1));
        s.begin();
        wait_for(&total, 3);
        let got = s.end();
        assert!(got[0].as_ref().is_ok_and(|v| !v.is_empty()));
        assert_eq!(got[1], Err(FakeError("device 1 is gone".into())));
        assert!(got[2].as_ref().is_ok_and(|v| !v.is_empty()));
    }

    #[test]
    fn summary_means_and_extremes() {
        let s = |u: f64, c: f64, p: Option<f64>| Sample {
            gpu_util_percent: Some(u),
            mem_util_percent: Some(u / 2.0),
            sm_clock_mhz: Some(c),
            power_w: p,
            temperature_c: Some(60.0 + u / 10.0),
        };
        let v: DeviceSamples<FakeError> = Ok(vec![
            s(100.0, 1980.0, Some(400.0)),
            s(40.0, 1410.0, None),
            s(100.0, 1980.0, Some(650.0)),
        ]);
        let t = summarize(3, &v, 0.1);
        assert_eq!(t.device, 3);
        assert_eq!(t.samples, 3);
        assert_eq!(t.gpu_util_percent_mean, Some(80.0));
        assert_eq!(t.gpu_util_percent_min, Some(40.0));
        assert_eq!(t.mem_util_percent_mean, Some(40.0));
        assert_eq!(t.sm_clock_mhz_min, Some(1410.0));
        assert_eq!(t.sm_clock_mhz_max, Some(1980.0));
        assert_eq!(t.power_w_max, Some(650.0));
        assert_eq!(t.temperature_c_max, Some(70.0));
        assert_eq!(t.error, None);
    }

    #[test]
    fn summary_of_nothing_and_of_an_error() {
        let t = summarize(0, &Ok::<_, FakeError>(vec![Sample::default()]), 0.1);
        assert_eq!(t.samples, 1);
        assert_eq!(t.gpu_util_percent_mean, None);
        assert_eq!(t.power_w_max, None);
        let t = summarize(1, &Err(FakeError("gone".into())), 0.1);
        assert_eq!((t.samples, t.error.as_deref()), (0, Some("gone")));
    }
}
