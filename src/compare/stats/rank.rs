//! The Mann–Whitney U test: exact without ties for small samples, else the normal
//! approximation with tie and continuity corrections.

use statrs::distribution::{ContinuousCDF, Normal};

/// Largest n_a × n_b for which the exact Mann–Whitney distribution is used (when there are no
/// ties); beyond it the normal approximation is accurate to well under 1e-3.
pub const MW_EXACT_MAX_CELLS: usize = 2500;

/// Result of a Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the candidate: pairs (a, b) with b > a, plus half the ties.
    pub u_b: f64,
    /// Two-sided p-value of "both samples come from one distribution".
    pub p_two_sided: f64,
    /// Whether the exact null distribution was used (else the normal approximation).
    pub exact: bool,
}

/// P(U ≤ u) for u = 0..=n_a·n_b under the null, for samples of sizes n_a and n_b without ties.
/// Built with the recurrence P_{i,j}(u) = i/(i+j)·P_{i−1,j}(u) + j/(i+j)·P_{i,j−1}(u−i):
/// the largest value of the pooled sample is from a with probability i/(i+j) (it is below no
/// b, adding nothing to U), else from b (it is above all i values of a, adding i). Depends only
/// on the sizes, so callers may cache it.
pub fn mann_whitney_exact_cdf(n_a: usize, n_b: usize) -> Vec<f64> {
    // row[j] holds P_{i,j} for the current i (length i·j + 1).
    let mut row: Vec<Vec<f64>> = (0..=n_b).map(|_| vec![1.0]).collect(); // i = 0: U = 0
    for i in 1..=n_a {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(n_b + 1);
        next.push(vec![1.0]); // j = 0: U = 0
        for j in 1..=n_b {
            let len = i * j + 1;
            let mut p = vec![0.0; len];
            let wa = i as f64 / (i + j) as f64;
            let wb = j as f64 / (i + j) as f64;
            for (u, v) in row[j].iter().enumerate() {
                p[u] += wa * v;
            }
            for (u, v) in next[j - 1].iter().enumerate() {
                p[u + i] += wb * v;
            }
            next.push(p);
        }
        row = next;
    }
    let mut cdf = row.pop().unwrap_or_else(|| vec![1.0]);
    let mut acc = 0.0;
    for v in cdf.iter_mut() {
        acc += *v;
        *v = acc.min(1.0);
    }
    cdf
}

/// Mann–Whitney U test of ascending-sorted samples `a` and `b`. `exact_cdf` is
/// [`mann_whitney_exact_cdf`] for these sizes when the caller wants the exact test (it is used
/// only if there are no ties). `None` if a side is empty.
pub fn mann_whitney(
    a_sorted: &[f64],
    b_sorted: &[f64],
    exact_cdf: Option<&[f64]>,
) -> Option<MannWhitney> {
    let (na, nb) = (a_sorted.len(), b_sorted.len());
    if na == 0 || nb == 0 {
        return None;
    }
    // Merge the sorted samples: U_b = Σ over b of (#a below it + ½ #a equal to it); ties
    // across the pooled sample give the variance correction Σ (t³ − t).
    let (mut i, mut j) = (0, 0);
    let mut u_b = 0.0;
    let mut tie_term = 0.0;
    while i < na || j < nb {
        let v = match (a_sorted.get(i), b_sorted.get(j)) {
            (Some(x), Some(y)) => x.min(*y),
            (Some(x), None) => *x,
            (None, Some(y)) => *y,
            (None, None) => break,
        };
        let i0 = i;
        while i < na && a_sorted[i] == v {
            i += 1;
        }
        let j0 = j;
        while j < nb && b_sorted[j] == v {
            j += 1;
        }
        let (ta, tb) = ((i - i0) as f64, (j - j0) as f64);
        // each b in this group beats the i0 smaller a's and ties with ta of them
        u_b += tb * (i0 as f64 + 0.5 * ta);
        let t = ta + tb;
        tie_term += t * t * t - t;
    }
    let cells = (na * nb) as f64;
    if tie_term == 0.0 {
        if let Some(cdf) = exact_cdf.filter(|c| c.len() == na * nb + 1) {
            // The null distribution is symmetric about n_a·n_b / 2: take the nearer tail from
            // the low end, where the cumulative sum is accurate (1 − cdf would cancel).
            let u = u_b.round() as usize;
            let tail = cdf[u.min(na * nb - u)];
            return Some(MannWhitney {
                u_b,
                p_two_sided: (2.0 * tail).min(1.0),
                exact: true,
            });
        }
    }
    let n = (na + nb) as f64;
    let var = cells / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p = if var <= 0.0 {
        1.0 // every value equal: no evidence of any difference
    } else {
        let z = ((u_b - cells / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
        (2.0 * Normal::standard().sf(z)).min(1.0)
    };
    Some(MannWhitney {
        u_b,
        p_two_sided: p,
        exact: false,
    })
}
