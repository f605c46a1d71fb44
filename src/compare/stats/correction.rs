//! Multiple-comparison corrections over the p-values of one comparison.

/// Which multiple-comparison correction to apply to the p-values of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Correction {
    /// Holm–Bonferroni step-down: the chance of any false alarm (family-wise error) ≤ α.
    Holm,
    /// Benjamini–Hochberg step-up: the expected share of false alarms among alarms ≤ α.
    BenjaminiHochberg,
    /// Each case on its own (with many cases, some are flagged by chance).
    None,
}

/// Adjusted p-values in the input order: reject case i at level α iff `adjusted[i] ≤ α`.
/// NaN inputs are treated as 1.
pub fn adjust_p_values(p: &[f64], correction: Correction) -> Vec<f64> {
    let m = p.len();
    let clean: Vec<f64> = p
        .iter()
        .map(|x| if x.is_nan() { 1.0 } else { x.clamp(0.0, 1.0) })
        .collect();
    if m == 0 || correction == Correction::None {
        return clean;
    }
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&x, &y| clean[x].total_cmp(&clean[y]));
    let mut out = vec![1.0; m];
    match correction {
        Correction::Holm => {
            let mut running: f64 = 0.0;
            for (rank, &idx) in order.iter().enumerate() {
                let v = ((m - rank) as f64 * clean[idx]).min(1.0);
                running = running.max(v);
                out[idx] = running;
            }
        }
        Correction::BenjaminiHochberg => {
            let mut running: f64 = 1.0;
            for (rank, &idx) in order.iter().enumerate().rev() {
                let v = (m as f64 / (rank + 1) as f64 * clean[idx]).min(1.0);
                running = running.min(v);
                out[idx] = running;
            }
        }
        Correction::None => unreachable!("handled above"),
    }
    out
}
