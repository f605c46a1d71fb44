//! Ring and tree cost forms across device counts, their held-out check, and predictions.

use super::fit::{fit_nonneg, Fit, FitError, Obs};
use super::regimes::fit_regimes;
use crate::params::Workload;

/// Whether a form's latency term grows linearly (ring-like) or logarithmically (tree-like)
/// with the device count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormKind {
    Ring,
    Tree,
}

/// A cost form across device counts: time = α·cα(p) + β·cβ(p, S).
#[derive(Debug, Clone, Copy)]
pub struct Form {
    pub name: &'static str,
    pub kind: FormKind,
    /// The formula as written in the report.
    pub formula: &'static str,
    coeff: fn(f64, f64) -> (f64, f64),
}

impl Form {
    /// (cα, cβ) for `p` devices and `s` bytes.
    pub fn coefficients(&self, p: f64, s: f64) -> (f64, f64) {
        (self.coeff)(p, s)
    }
}

impl PartialEq for Form {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.formula == other.formula
    }
}

fn lg(p: f64) -> f64 {
    p.log2()
}

const ALLREDUCE: &[Form] = &[
    Form {
        name: "ring",
        kind: FormKind::Ring,
        formula: "2(p−1)·α + 2(p−1)/p·S·β",
        coeff: |p, s| (2.0 * (p - 1.0), 2.0 * (p - 1.0) / p * s),
    },
    Form {
        name: "Rabenseifner",
        kind: FormKind::Tree,
        formula: "2·lg p·α + 2(p−1)/p·S·β",
        coeff: |p, s| (2.0 * lg(p), 2.0 * (p - 1.0) / p * s),
    },
    Form {
        name: "recursive doubling",
        kind: FormKind::Tree,
        formula: "lg p·(α + S·β)",
        coeff: |p, s| (lg(p), lg(p) * s),
    },
];
const GATHER_SCATTER: &[Form] = &[
    Form {
        name: "ring",
        kind: FormKind::Ring,
        formula: "(p−1)·α + (p−1)/p·S·β",
        coeff: |p, s| (p - 1.0, (p - 1.0) / p * s),
    },
    Form {
        name: "recursive doubling/halving",
        kind: FormKind::Tree,
        formula: "lg p·α + (p−1)/p·S·β",
        coeff: |p, s| (lg(p), (p - 1.0) / p * s),
    },
];
const ALLTOALL: &[Form] = &[
    Form {
        name: "pairwise (ring)",
        kind: FormKind::Ring,
        formula: "(p−1)·α + (p−1)/p·S·β",
        coeff: |p, s| (p - 1.0, (p - 1.0) / p * s),
    },
    Form {
        name: "Bruck (tree)",
        kind: FormKind::Tree,
        formula: "lg p·α + lg p/2·S·β",
        coeff: |p, s| (lg(p), lg(p) / 2.0 * s),
    },
];
const ROOTED: &[Form] = &[
    Form {
        name: "pipelined chain (ring)",
        kind: FormKind::Ring,
        formula: "(p−1)·α + S·β",
        coeff: |p, s| (p - 1.0, s),
    },
    Form {
        name: "binomial tree",
        kind: FormKind::Tree,
        formula: "lg p·(α + S·β)",
        coeff: |p, s| (lg(p), lg(p) * s),
    },
];

/// The forms fitted for a collective (none for GEMMs). Costs of the reduction arithmetic (γ)
/// are not separated: they fold into β.
pub(crate) fn forms(w: Workload) -> &'static [Form] {
    match w {
        Workload::Allreduce => ALLREDUCE,
        Workload::Allgather | Workload::ReduceScatter => GATHER_SCATTER,
        Workload::Alltoall => ALLTOALL,
        Workload::Broadcast | Workload::Reduce => ROOTED,
        Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay => &[],
    }
}

/// One measured point across scales.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScalePoint {
    pub devices: u32,
    /// S, bytes.
    pub bytes: f64,
    pub time_s: f64,
}

/// How well a form fitted on the smaller scales predicted the largest measured one.
#[derive(Debug, Clone, PartialEq)]
pub struct Holdout {
    /// Device counts the form was fitted on.
    pub fit_devices: Vec<u32>,
    /// The held-out (largest) device count.
    pub test_devices: u32,
    /// Points at the held-out scale.
    pub n: usize,
    /// Median of |predicted − measured| / measured over the held-out points.
    pub median_abs_rel_err: f64,
    pub max_abs_rel_err: f64,
}

/// One form fitted across scales.
#[derive(Debug, Clone, PartialEq)]
pub struct FormFit {
    pub form: Form,
    /// Fitted on every scale (used for predictions).
    pub fit: Fit,
    /// Fitted on the smaller scales and tested on the largest; or why not.
    pub holdout: Result<Holdout, FitError>,
}

impl FormFit {
    pub fn predict_s(&self, p: u32, bytes: f64) -> f64 {
        let (u, v) = self.form.coefficients(f64::from(p), bytes);
        self.fit.predict(u, v)
    }
}

/// Every form fitted across device counts to one size range (regime) of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleRegime {
    /// Smallest and largest size S (bytes) of the regime's points.
    pub from_bytes: f64,
    pub to_bytes: f64,
    pub fits: Vec<FormFit>,
    /// Index into `fits` of the form used for predictions: the smallest held-out median error,
    /// or (when no form could be held out) the smallest in-sample RMS relative residual.
    pub best: usize,
    /// Whether `best` was chosen on held-out data.
    pub best_by_holdout: bool,
}

impl ScaleRegime {
    pub fn best_fit(&self) -> &FormFit {
        &self.fits[self.best]
    }
}

/// Forms fitted across device counts for one collective and set-up family, per regime: the
/// size ranges of the largest measured scale's α–β regimes (a protocol switch changes the cost
/// form as much as the constants).
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleModel {
    /// Regimes in size order; one when the largest scale's curve has one.
    pub regimes: Vec<ScaleRegime>,
    /// The measured device counts (≥ 2), ascending.
    pub devices: Vec<u32>,
    /// The device counts predicted: 2× and 4× the largest measured.
    pub predict_devices: [u32; 2],
}

impl ScaleModel {
    /// Where regime `k` hands over to `k + 1`: the geometric mean of its last size and the
    /// next one's first.
    pub fn boundary_bytes(&self, k: usize) -> f64 {
        (self.regimes[k].to_bytes * self.regimes[k + 1].from_bytes).sqrt()
    }
    /// The regime whose range covers `bytes` (below the first: the first; above the last: the
    /// last).
    pub fn regime_for(&self, bytes: f64) -> &ScaleRegime {
        let k = (0..self.regimes.len() - 1)
            .take_while(|&k| bytes > self.boundary_bytes(k))
            .count();
        &self.regimes[k]
    }
    /// Time on `p` devices at `bytes` from the best form of the regime `bytes` falls in.
    pub fn predict_s(&self, p: u32, bytes: f64) -> f64 {
        self.regime_for(bytes).best_fit().predict_s(p, bytes)
    }
}

fn obs_for(form: &Form, pts: &[ScalePoint]) -> Vec<Obs> {
    pts.iter()
        .map(|q| {
            let (u, v) = form.coefficients(f64::from(q.devices), q.bytes);
            Obs { u, v, t: q.time_s }
        })
        .collect()
}

/// Fits every form of `w` to points across device counts. Points on 1 device are left out (no
/// data moves between devices). Needs at least 2 device counts ≥ 2; the held-out check needs
/// enough points below the largest device count.
pub(crate) fn fit_scales(w: Workload, points: &[ScalePoint]) -> Result<ScaleModel, FitError> {
    let forms = forms(w);
    if forms.is_empty() {
        return Err(FitError::NotApplicable(format!(
            "{w} is not a collective: no communication cost form"
        )));
    }
    let pts: Vec<ScalePoint> = points
        .iter()
        .copied()
        .filter(|q| q.devices >= 2 && q.time_s > 0.0 && q.time_s.is_finite() && q.bytes > 0.0)
        .collect();
    let mut devices: Vec<u32> = pts.iter().map(|q| q.devices).collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.len() < 2 {
        return Err(FitError::NotApplicable(format!(
            "measured at {} ≥ 2; forms across scales need at least 2",
            crate::present::count(devices.len(), "device count", "device counts")
        )));
    }
    let pmax = *devices.last().expect("two device counts");
    let ranges = size_ranges(&pts, pmax);
    let per_regime: Result<Vec<ScaleRegime>, FitError> = ranges
        .iter()
        .map(|&(lo, hi)| {
            let part: Vec<ScalePoint> = pts
                .iter()
                .copied()
                .filter(|q| q.bytes > lo && q.bytes <= hi)
                .collect();
            fit_regime(forms, &part, &devices)
        })
        .collect();
    // A regime whose points cannot carry the forms: one model over every size instead.
    let regimes = match per_regime {
        Ok(r) => r,
        Err(_) => vec![fit_regime(forms, &pts, &devices)?],
    };
    Ok(ScaleModel {
        regimes,
        devices,
        predict_devices: [pmax * 2, pmax * 4],
    })
}

/// The size ranges (lo, hi] of the α–β regimes of the largest scale's curve (the busbw factor
/// is one constant there, so regimes in S are regimes in F·S); one range when that curve
/// cannot be segmented.
fn size_ranges(pts: &[ScalePoint], pmax: u32) -> Vec<(f64, f64)> {
    let curve: Vec<(f64, f64)> = pts
        .iter()
        .filter(|q| q.devices == pmax)
        .map(|q| (q.bytes, q.time_s))
        .collect();
    let Ok(r) = fit_regimes(&curve) else {
        return vec![(f64::NEG_INFINITY, f64::INFINITY)];
    };
    let cuts: Vec<f64> = (0..r.segments.len() - 1).map(|k| r.boundary_x(k)).collect();
    std::iter::once(f64::NEG_INFINITY)
        .chain(cuts.iter().copied())
        .zip(cuts.iter().copied().chain(std::iter::once(f64::INFINITY)))
        .collect()
}

/// Every form fitted to the points of one size range, with its held-out check and the form
/// chosen for predictions.
fn fit_regime(
    forms: &[Form],
    pts: &[ScalePoint],
    devices: &[u32],
) -> Result<ScaleRegime, FitError> {
    let pmax = *devices.last().expect("two device counts");
    let (small, large): (Vec<ScalePoint>, Vec<ScalePoint>) =
        pts.iter().partition(|q| q.devices < pmax);
    let mut fits = Vec::new();
    let mut last_err = None;
    for form in forms {
        let fit = match fit_nonneg(&obs_for(form, pts)) {
            Ok(f) => f,
            Err(e) => {
                last_err = Some(e);
                continue;
            }
        };
        let holdout = holdout(form, &small, &large, devices);
        fits.push(FormFit {
            form: *form,
            fit,
            holdout,
        });
    }
    if fits.is_empty() {
        return Err(last_err.unwrap_or(FitError::Degenerate));
    }
    let (best, best_by_holdout) = best_form(&fits);
    let bytes = pts.iter().map(|q| q.bytes);
    Ok(ScaleRegime {
        from_bytes: bytes.clone().fold(f64::INFINITY, f64::min),
        to_bytes: bytes.fold(0.0, f64::max),
        fits,
        best,
        best_by_holdout,
    })
}

/// `form` fitted on the `small` scales, and its relative errors predicting the `large` one
/// (the largest of `devices`).
fn holdout(
    form: &Form,
    small: &[ScalePoint],
    large: &[ScalePoint],
    devices: &[u32],
) -> Result<Holdout, FitError> {
    let pmax = *devices.last().expect("two device counts");
    fit_nonneg(&obs_for(form, small)).map(|f| {
        let mut errs: Vec<f64> = obs_for(form, large)
            .iter()
            .map(|o| ((f.predict(o.u, o.v) - o.t) / o.t).abs())
            .collect();
        errs.sort_by(f64::total_cmp);
        Holdout {
            fit_devices: devices[..devices.len() - 1].to_vec(),
            test_devices: pmax,
            n: errs.len(),
            median_abs_rel_err: crate::stats::quantile_sorted(&errs, 0.5),
            max_abs_rel_err: *errs.last().expect("points at the largest scale"),
        }
    })
}

/// The form used for predictions, and whether it was chosen on held-out data: the smallest
/// held-out median error, or (when no form could be held out) the smallest in-sample RMS
/// relative residual. `fits` is not empty.
fn best_form(fits: &[FormFit]) -> (usize, bool) {
    let held: Vec<(usize, f64)> = fits
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.holdout.as_ref().ok().map(|h| (i, h.median_abs_rel_err)))
        .collect();
    match held.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
        Some((i, _)) => (*i, true),
        None => (
            fits.iter()
                .enumerate()
                .min_by(|a, b| {
                    a.1.fit
                        .rms_rel_residual()
                        .total_cmp(&b.1.fit.rms_rel_residual())
                })
                .map(|(i, _)| i)
                .expect("at least one fit"),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::test_util::noise;

    #[test]
    fn ring_form_predicts_a_held_out_scale() {
        // Ring allreduce with α = 2 µs per step, β = 1/(10 GB/s), measured at p = 2, 4, 8.
        let (alpha, beta) = (2e-6, 1e-10);
        let ring = forms(Workload::Allreduce)[0];
        let mut st = 7;
        let mut pts = Vec::new();
        for p in [2u32, 4, 8] {
            for e in (4..=26).step_by(2) {
                let s = (1u64 << e) as f64;
                let (u, v) = ring.coefficients(f64::from(p), s);
                let t = (alpha * u + beta * v) * (1.0 + noise(&mut st, 0.02));
                pts.push(ScalePoint {
                    devices: p,
                    bytes: s,
                    time_s: t,
                });
            }
        }
        let m = fit_scales(Workload::Allreduce, &pts).unwrap();
        assert_eq!(m.devices, vec![2, 4, 8]);
        assert_eq!(m.predict_devices, [16, 32]);
        assert_eq!(m.regimes.len(), 1);
        let r = &m.regimes[0];
        assert_eq!(r.best_fit().form.name, "ring");
        assert!(r.best_by_holdout);
        let h = r.best_fit().holdout.as_ref().unwrap();
        assert_eq!((h.test_devices, h.fit_devices.clone()), (8, vec![2, 4]));
        assert!(h.median_abs_rel_err < 0.05, "{h:?}");
        let f = &r.best_fit().fit;
        assert!((f.a - alpha).abs() / alpha < 0.05, "alpha {}", f.a);
        assert!((f.b - beta).abs() / beta < 0.05, "beta {}", f.b);
        // the prediction at 16 devices follows the ring form
        let s = (1u64 << 20) as f64;
        let (u, v) = ring.coefficients(16.0, s);
        let truth = alpha * u + beta * v;
        assert!((m.predict_s(16, s) - truth).abs() / truth < 0.05);
        // the logarithmic forms cannot explain ring latencies as well
        for f in &r.fits[1..] {
            assert!(f.holdout.as_ref().unwrap().median_abs_rel_err > h.median_abs_rel_err);
        }
    }

    #[test]
    fn scales_need_two_device_counts() {
        let pts: Vec<ScalePoint> = [1u32, 4]
            .iter()
            .flat_map(|&p| {
                (0..4).map(move |i| ScalePoint {
                    devices: p,
                    bytes: 1e3 * 10f64.powi(i),
                    time_s: 1e-6 * (i + 1) as f64,
                })
            })
            .collect();
        // 1 device does not count: only one scale left
        assert!(matches!(
            fit_scales(Workload::Allgather, &pts),
            Err(FitError::NotApplicable(_))
        ));
        assert!(fit_scales(Workload::Matmul, &pts).is_err());
    }

    /// Ring allreduce with an eager/rendezvous switch at every scale (α 2 µs, 1/β 4 GB/s up to
    /// 8 KiB; α 25 µs, 1/β 10 GB/s from 16 KiB), ±1 % noise, on 2, 4 and 8 devices: the
    /// predictions at 16 devices follow each regime's own form, where one form over all sizes
    /// misses one side by more than 20 %.
    #[test]
    fn predictions_follow_each_regime() {
        let ring = forms(Workload::Allreduce)[0];
        let truth = |p: u32, s: f64| {
            let (u, v) = ring.coefficients(f64::from(p), s);
            if s <= 8192.0 {
                2e-6 * u + v / 4e9
            } else {
                25e-6 * u + v / 10e9
            }
        };
        let mut st = 3;
        let pts: Vec<ScalePoint> = [2u32, 4, 8]
            .iter()
            .flat_map(|&p| (4..=22).map(move |e| (p, (1u64 << e) as f64)))
            .map(|(p, s)| ScalePoint {
                devices: p,
                bytes: s,
                time_s: truth(p, s) * (1.0 + noise(&mut st, 0.01)),
            })
            .collect();
        let m = fit_scales(Workload::Allreduce, &pts).unwrap();
        assert_eq!(m.regimes.len(), 2, "{:?}", m.regimes);
        assert_eq!(
            (m.regimes[0].to_bytes, m.regimes[1].from_bytes),
            (8192.0, 16384.0)
        );
        let one = fit_regime(forms(Workload::Allreduce), &pts, &m.devices).unwrap();
        let mut worst_single = 0.0_f64;
        for s in [1024.0, 4096.0, 65536.0, 1048576.0] {
            let t = truth(16, s);
            let err = (m.predict_s(16, s) - t).abs() / t;
            assert!(err < 0.05, "S {s}: per-regime error {err}");
            worst_single = worst_single.max((one.best_fit().predict_s(16, s) - t).abs() / t);
        }
        assert!(
            worst_single > 0.2,
            "one form over all sizes: {worst_single}"
        );
    }
}
