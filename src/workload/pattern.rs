//! Validation inputs whose results are exactly known, for any reduction order.
//!
//! As in nccl-tests, every input is a small integer exactly representable in the element type,
//! chosen so that every partial result of the reduction is exact too; the expected result can
//! then be compared for equality (tolerance 0) however the library orders the reduction.
//!
//! Inputs depend on (device d, semantic element index k). Reduction results depend on k only
//! through `k mod period`, so the expected values are a small table computed once by folding
//! over the devices, and checking a buffer costs one lookup per element.

use crate::backend::HostBuf;
use crate::params::{Dtype, ReduceOp};

/// Pattern for one collective case.
#[derive(Debug, Clone)]
pub struct Pattern {
    dtype: Dtype,
    op: Option<ReduceOp>,
    devices: u32,
    /// Period of the inputs in k.
    period: u64,
    /// prod: one device in `q` contributes a 2 at each element, the rest 1.
    q: u64,
    /// avg: whether inputs carry a device-dependent term that cancels in the sum.
    avg_spread: bool,
    /// Expected reduction result for k mod period (empty for non-reductions).
    table: Vec<f64>,
}

/// Largest power-of-two exponent a product of 2s may reach in each type.
fn max_exponent(d: Dtype) -> u64 {
    match d {
        Dtype::I32 => 30,
        Dtype::F16 => 15,
        Dtype::F32 | Dtype::Bf16 => 126,
        Dtype::F64 => 1022,
    }
}

impl Pattern {
    /// A pattern for `devices` devices. `op` is `None` for collectives without reduction.
    pub fn new(dtype: Dtype, op: Option<ReduceOp>, devices: u32) -> Self {
        let n = u64::from(devices.max(1));
        let exact = 1u64 << dtype.exact_integer_bits().min(62);
        let mut avg_spread = false;
        let mut q = 1;
        let period = match op {
            // Inputs lie in [-P/2, P/2), so every partial sum is at most n·P/2 in magnitude.
            Some(ReduceOp::Sum) => (2 * exact / n).clamp(1, 1021),
            Some(ReduceOp::Min) | Some(ReduceOp::Max) => exact.clamp(1, 1021),
            Some(ReduceOp::Avg) => {
                // c(k) + (2d − (n−1)): the device terms cancel in the sum; keep |partial| ≤ n(P+n).
                let room = exact / n;
                if room > n + 1 {
                    avg_spread = true;
                    (room - n).clamp(1, 1021)
                } else {
                    room.clamp(1, 1021)
                }
            }
            Some(ReduceOp::Prod) => {
                q = n.div_ceil(max_exponent(dtype)).max(2);
                q
            }
            None => exact.clamp(2, 65521),
        };
        let mut p = Pattern {
            dtype,
            op,
            devices,
            period,
            q,
            avg_spread,
            table: Vec::new(),
        };
        if let Some(op) = op {
            p.table = (0..period)
                .map(|k| {
                    let vals = (0..devices).map(|d| p.input(d, k));
                    match op {
                        ReduceOp::Sum => vals.sum(),
                        ReduceOp::Prod => vals.product(),
                        ReduceOp::Min => vals.fold(f64::INFINITY, f64::min),
                        ReduceOp::Max => vals.fold(f64::NEG_INFINITY, f64::max),
                        ReduceOp::Avg => vals.sum::<f64>() / n as f64,
                    }
                })
                .collect();
        }
        p
    }

    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Input value of device `d` at semantic element index `k`.
    #[inline]
    pub fn input(&self, d: u32, k: u64) -> f64 {
        let d = u64::from(d);
        let p = self.period;
        match self.op {
            Some(ReduceOp::Prod) => {
                if (k + d) % self.q == 0 {
                    2.0
                } else {
                    1.0
                }
            }
            Some(ReduceOp::Avg) => {
                let c = ((k % p) * 7 % p) as f64;
                if self.avg_spread {
                    c + (2 * d) as f64 - f64::from(self.devices - 1)
                } else {
                    c
                }
            }
            _ => {
                // Centred on 0 so negative values and sign handling are exercised.
                let v = ((k % p) * 7 + d * 13) % p;
                v as f64 - (p / 2) as f64
            }
        }
    }

    /// The exact result of the reduction over all devices at element `k`.
    #[inline]
    pub fn reduced(&self, k: u64) -> f64 {
        self.table[(k % self.period) as usize]
    }

    /// Fills `buf[at..at+len]` with device `d`'s inputs for indices `k0..k0+len`.
    pub fn fill_inputs(&self, buf: &mut HostBuf, at: usize, len: usize, d: u32, k0: u64) {
        buf.fill_range(at, len, |j| self.input(d, k0 + j as u64));
    }

    /// A value never produced as a correct result, written to receive buffers so that an
    /// element the collective failed to write is counted wrong.
    pub fn sentinel(&self) -> f64 {
        if self.dtype.is_float() {
            f64::NAN
        } else {
            f64::from(i32::MIN)
        }
    }
}

/// Counts elements of `buf[at..at+len]` that differ from `expected(j)` (j in `0..len`) by more
/// than `rel_tol` × max(1, |expected|). NaN never matches.
pub fn count_wrong(
    buf: &HostBuf,
    at: usize,
    len: usize,
    rel_tol: f64,
    expected: impl Fn(usize) -> f64,
) -> u64 {
    let mut wrong = 0u64;
    for j in 0..len {
        let got = buf.get(at + j);
        let want = expected(j);
        let ok = if rel_tol == 0.0 {
            got == want
        } else {
            (got - want).abs() <= rel_tol * want.abs().max(1.0)
        };
        if !ok {
            wrong += 1;
        }
    }
    wrong
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Folds inputs in several orders in the element type and checks each equals the table.
    fn check_exact_any_order(dtype: Dtype, op: ReduceOp, n: u32) {
        let p = Pattern::new(dtype, Some(op), n);
        for k in 0..(p.period * 2).min(600) {
            let vals: Vec<f64> = (0..n).map(|d| p.input(d, k)).collect();
            for v in &vals {
                let mut b = HostBuf::zeros(dtype, 1).unwrap();
                b.set(0, *v);
                assert_eq!(b.get(0), *v, "input {v} not representable in {dtype}");
            }
            let want = p.reduced(k);
            let orders: [Box<dyn Fn(usize) -> usize>; 2] =
                [Box::new(|i| i), Box::new(move |i| n as usize - 1 - i)];
            for ord in orders.iter() {
                // accumulate in the element type
                let mut acc = HostBuf::zeros(dtype, 1).unwrap();
                acc.set(0, vals[ord(0)]);
                for i in 1..n as usize {
                    let x = vals[ord(i)];
                    let a = acc.get(0);
                    let r = match op {
                        ReduceOp::Sum | ReduceOp::Avg => a + x,
                        ReduceOp::Prod => a * x,
                        ReduceOp::Min => a.min(x),
                        ReduceOp::Max => a.max(x),
                    };
                    acc.set(0, r);
                    assert_eq!(
                        acc.get(0),
                        r,
                        "partial result {r} inexact in {dtype} ({op}, n={n})"
                    );
                }
                let mut got = acc.get(0);
                if op == ReduceOp::Avg {
                    got /= f64::from(n);
                    if dtype == Dtype::I32 {
                        got = got.trunc();
                    }
                }
                assert_eq!(got, want, "{dtype} {op} n={n} k={k}");
            }
        }
    }

    #[test]
    fn reductions_are_exact_for_every_type_and_scale() {
        for dtype in [Dtype::F32, Dtype::F64, Dtype::I32, Dtype::F16, Dtype::Bf16] {
            for op in ReduceOp::ALL {
                for n in [1u32, 2, 3, 8, 64, 257] {
                    check_exact_any_order(dtype, *op, n);
                }
            }
        }
    }

    #[test]
    fn inputs_tell_devices_and_positions_apart() {
        let p = Pattern::new(Dtype::F32, None, 8);
        // distinct devices differ at the same position; distinct positions differ on a device
        assert_ne!(p.input(0, 5), p.input(1, 5));
        assert_ne!(p.input(3, 5), p.input(3, 6));
        let p = Pattern::new(Dtype::F32, Some(ReduceOp::Sum), 4);
        assert_ne!(p.reduced(0), p.reduced(1));
    }

    #[test]
    fn validator_catches_a_corrupted_buffer() {
        let p = Pattern::new(Dtype::F32, Some(ReduceOp::Sum), 4);
        let mut buf = HostBuf::from_fn(Dtype::F32, 1000, |j| p.reduced(j as u64)).unwrap();
        assert_eq!(count_wrong(&buf, 0, 1000, 0.0, |j| p.reduced(j as u64)), 0);
        buf.set(17, buf.get(17) + 1.0);
        buf.set(999, f64::NAN);
        assert_eq!(count_wrong(&buf, 0, 1000, 0.0, |j| p.reduced(j as u64)), 2);
        // a tolerance admits rounding but not a corruption
        buf.set(3, buf.get(3) * (1.0 + 1e-7));
        assert_eq!(count_wrong(&buf, 0, 1000, 1e-6, |j| p.reduced(j as u64)), 2);
    }

    #[test]
    fn sentinel_never_matches() {
        let p = Pattern::new(Dtype::I32, Some(ReduceOp::Sum), 2);
        let buf = HostBuf::from_fn(Dtype::I32, 10, |_| p.sentinel()).unwrap();
        assert_eq!(count_wrong(&buf, 0, 10, 0.0, |j| p.reduced(j as u64)), 10);
    }
}
