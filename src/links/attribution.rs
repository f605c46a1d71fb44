//! Attribution: which node, link or block of nodes is slow, from an N×N bandwidth matrix.
//!
//! The model is y_ij = ln bw(i→j) = μ + s_i + r_j + e_ij (multiplicative effects become
//! additive), fitted robustly by Tukey's median polish: a slow node lowers its sender effect
//! s_i and its receiver effect r_i; a slow link leaves both nodes' effects alone and shows as a
//! negative residual e_ij (and e_ji); a block of nodes slow toward the rest (a switch) shows as
//! neighbouring slow nodes whose links among themselves are fast. Every verdict carries its
//! effect size (a fraction of what is expected), a robust z and a confidence.

use serde::Serialize;

/// Bandwidths in GB/s, row = sender, column = receiver; `None` where not measured (the
/// diagonal, same-host pairs left out). Node order is the topology order: blocks are runs of
/// neighbours in it.
#[derive(Debug, Clone)]
pub struct Matrix {
    pub names: Vec<String>,
    pub gbps: Vec<Option<f64>>,
}

impl Matrix {
    pub fn n(&self) -> usize {
        self.names.len()
    }
    pub fn get(&self, from: usize, to: usize) -> Option<f64> {
        self.gbps[from * self.n() + to]
    }
}

/// How sure and how large a deficit must be before it is named.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The chance of naming anything on a healthy cluster, per kind (nodes, links): Holm's
    /// step-down over the one-sided p-values of the robust z's, so the cut grows with the
    /// number of cells (z ≈ −4.4 for 2,016 links at 64 nodes, ≈ −5.6 for 523,776 at 1,024).
    pub alpha: f64,
    /// …and never at a robust z (deviation over 1.4826·MAD) above −z, however few the tests.
    pub z: f64,
    /// …and so is only a deficit of at least this fraction (0.15: at most 85 % of expected):
    /// a quiet fabric makes tiny deviations significant, but not worth a verdict.
    pub min_effect: f64,
    /// The smallest spread (log scale) the z is computed against, for noise-free matrices.
    pub noise_floor: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.005,
            z: 3.0,
            min_effect: 0.15,
            noise_floor: 0.01,
        }
    }
}

/// What is slow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Suspect {
    /// All of a node's links are slow (its NIC, PCIe, host).
    Node { node: usize },
    /// One link is slow while both its nodes are fine elsewhere.
    Link { a: usize, b: usize },
    /// Neighbouring nodes `first..=last` are slow toward the rest but not among themselves.
    Block { first: usize, last: usize },
}

impl Suspect {
    /// The kind as results name it (`node`, `link`, `block`) and its ranks (a node; a link's
    /// two ends; a block's first and last).
    pub fn kind_and_ranks(&self) -> (&'static str, Vec<usize>) {
        match *self {
            Suspect::Node { node } => ("node", vec![node]),
            Suspect::Link { a, b } => ("link", vec![a, b]),
            Suspect::Block { first, last } => ("block", vec![first, last]),
        }
    }
}

/// One verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    #[serde(flatten)]
    pub suspect: Suspect,
    /// The bandwidth as a fraction of what is expected (a node: of the median node; a link: of
    /// what its two nodes predict; a block: toward the rest, of the median node).
    pub ratio: f64,
    /// Robust z of the effect (negative: slower).
    pub z: f64,
    /// 1 − the Bonferroni-adjusted one-sided p of z over all the tests of its kind.
    pub confidence: f64,
}

impl Finding {
    /// "node n17: 62 % of the median on all its links", "link n3↔n9: 48 %", "block n40–n47".
    pub fn describe(&self, names: &[String]) -> String {
        let pct = self.ratio * 100.0;
        let how = format!(
            "z = {:.1}, confidence {}",
            self.z,
            confidence_text(self.confidence)
        );
        let what = match self.suspect {
            Suspect::Node { node } => format!(
                "node {}: {pct:.0} % of the median on all its links ({how})",
                names[node]
            ),
            Suspect::Link { a, b } => format!(
                "link {}↔{}: {pct:.0} % of what its nodes predict ({how})",
                names[a], names[b]
            ),
            Suspect::Block { first, last } => format!(
                "block {}–{}: {pct:.0} % toward the rest, full speed inside ({} nodes; {how})",
                names[first],
                names[last],
                last - first + 1
            ),
        };
        format!("{what}; next: {}", self.next_step(names))
    }

    /// What to do about it, in one sentence.
    pub fn next_step(&self, names: &[String]) -> String {
        match self.suspect {
            Suspect::Node { node } => format!(
                "drain {} (e.g. `scontrol update nodename={} state=drain reason=slow-links`), check its NIC and PCIe link width (`ibstat`, `lspci -vv`), and rerun links with it and two good nodes",
                names[node], names[node]
            ),
            Suspect::Link { a, b } => format!(
                "reseat or replace the cable (or switch port) between {} and {}, then rerun links on these two nodes; if it stays slow, check both ports' error counters (`perfquery`)",
                names[a], names[b]
            ),
            Suspect::Block { first, last } => format!(
                "check the uplinks of the switch above {}–{} (port errors, negotiated speed), then rerun links at the same message size across that switch and another",
                names[first], names[last]
            ),
        }
    }
}

fn confidence_text(c: f64) -> String {
    if c >= 0.9999 {
        "> 0.9999".into()
    } else {
        format!("{c:.4}")
    }
}

/// The fit and the verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// The overall median bandwidth, exp(μ).
    pub median_gbps: f64,
    /// Each node's bandwidth relative to the median node, sending and receiving.
    pub send_ratio: Vec<f64>,
    pub recv_ratio: Vec<f64>,
    /// The robust spread of the link residuals (log scale ≈ relative noise of one cell).
    pub residual_spread: f64,
    pub findings: Vec<Finding>,
    /// Why no attribution was possible (too few nodes or cells), if so.
    pub note: Option<String>,
}

/// Median polish's fit: overall + row (sender) + column (receiver) effects + residuals.
#[derive(Debug, Clone)]
pub struct Polish {
    pub overall: f64,
    pub row: Vec<f64>,
    pub col: Vec<f64>,
    pub resid: Vec<Option<f64>>,
}

/// Median of the present values (NaN-free input), `None` if none; reorders `buf`.
fn median_of(buf: &mut [f64]) -> Option<f64> {
    let n = buf.len();
    if n == 0 {
        return None;
    }
    let (_, hi, _) = buf.select_nth_unstable_by(n / 2, f64::total_cmp);
    let hi = *hi;
    if n % 2 == 1 {
        return Some(hi);
    }
    let lo = buf[..n / 2]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    Some((lo + hi) / 2.0)
}

/// 1.4826 × the median absolute deviation from `centre`: σ for normal data.
fn mad_sigma(xs: &[f64], centre: f64) -> f64 {
    let mut d: Vec<f64> = xs.iter().map(|x| (x - centre).abs()).collect();
    1.4826 * median_of(&mut d).unwrap_or(0.0)
}

/// Tukey's median polish of an n×n table with missing cells (R's `medpolish` iteration), until
/// Σ|residual| drops by less than `eps` relatively or after `max_iter` sweeps.
pub fn median_polish(y: &[Option<f64>], n: usize, max_iter: usize, eps: f64) -> Polish {
    let mut r = y.to_vec();
    let (mut row, mut col, mut overall) = (vec![0.0; n], vec![0.0; n], 0.0);
    let mut buf = Vec::with_capacity(n);
    let mut old = 0.0;
    for _ in 0..max_iter {
        for (i, eff) in row.iter_mut().enumerate() {
            buf.clear();
            buf.extend(r[i * n..(i + 1) * n].iter().flatten());
            let d = median_of(&mut buf).unwrap_or(0.0);
            r[i * n..(i + 1) * n]
                .iter_mut()
                .flatten()
                .for_each(|v| *v -= d);
            *eff += d;
        }
        buf.clear();
        buf.extend(&col);
        let d = median_of(&mut buf).unwrap_or(0.0);
        col.iter_mut().for_each(|c| *c -= d);
        overall += d;
        for (j, eff) in col.iter_mut().enumerate() {
            buf.clear();
            buf.extend((0..n).filter_map(|i| r[i * n + j]));
            let d = median_of(&mut buf).unwrap_or(0.0);
            (0..n).for_each(|i| {
                if let Some(v) = r[i * n + j].as_mut() {
                    *v -= d;
                }
            });
            *eff += d;
        }
        buf.clear();
        buf.extend(&row);
        let d = median_of(&mut buf).unwrap_or(0.0);
        row.iter_mut().for_each(|c| *c -= d);
        overall += d;
        let sum: f64 = r.iter().flatten().map(|v| v.abs()).sum();
        if sum == 0.0 || (sum - old).abs() < eps * sum {
            break;
        }
        old = sum;
    }
    Polish {
        overall,
        row,
        col,
        resid: r,
    }
}

/// Standard normal lower tail Φ(z) (erfc by Numerical Recipes' Chebyshev fit, |ε| < 1.2e-7
/// relative: ample for a confidence).
pub fn normal_cdf(z: f64) -> f64 {
    let x = -z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

/// Which of the one-sided p-values Holm's step-down rejects at family-wise level `alpha` out
/// of `m` tests (`ps` may hold only the smallest of them: the rest would not be rejected
/// before these).
fn holm(ps: &[f64], m: usize, alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..ps.len()).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut out = vec![false; ps.len()];
    for (k, &i) in order.iter().enumerate() {
        if ps[i] > alpha / (m - k).max(1) as f64 {
            break;
        }
        out[i] = true;
    }
    out
}

/// 1 − Bonferroni(m)-adjusted one-sided p of a negative z.
fn confidence(z: f64, m: usize) -> f64 {
    (1.0 - m as f64 * normal_cdf(z)).max(0.0)
}

/// Fits the matrix and names the suspects (nodes, links, blocks), strongest first per kind.
pub fn analyse(m: &Matrix, s: &Settings) -> Analysis {
    let n = m.n();
    let y: Vec<Option<f64>> = m
        .gbps
        .iter()
        .map(|c| c.filter(|v| v.is_finite() && *v > 0.0).map(f64::ln))
        .collect();
    let cells = y.iter().flatten().count();
    if n < 4 || cells < n * 2 {
        return Analysis {
            median_gbps: f64::NAN,
            send_ratio: vec![1.0; n],
            recv_ratio: vec![1.0; n],
            residual_spread: f64::NAN,
            findings: Vec::new(),
            note: Some(if n == 3 {
                format!(
                    "3 nodes and {cells} measured cells: each node has only 2 partners, so a \
                     slow link looks the same as its two nodes being slow; rerun on at least \
                     4 nodes"
                )
            } else {
                format!(
                    "{n} nodes and {cells} measured cells: too few to tell nodes from links \
                     (at least 4 nodes, each with 3 partners); rerun on at least 4 nodes"
                )
            }),
        };
    }
    let p = median_polish(&y, n, 20, 1e-4);
    let node: Vec<f64> = (0..n).map(|i| (p.row[i] + p.col[i]) / 2.0).collect();
    let resid: Vec<f64> = p.resid.iter().flatten().copied().collect();
    let spread = mad_sigma(&resid, 0.0).max(s.noise_floor);
    let mut findings = node_findings(&node, spread, s);
    let links = link_scores(&p, n);
    findings.extend(link_findings(&links, s));
    let blocks = blocks(&mut findings, &y, &p, &node);
    findings.splice(0..0, blocks);
    let rel = |effects: &[f64]| -> Vec<f64> {
        let centre = median_of(&mut effects.to_vec()).unwrap_or(0.0);
        effects.iter().map(|e| (e - centre).exp()).collect()
    };
    let mut raw: Vec<f64> = y.iter().flatten().copied().collect();
    Analysis {
        median_gbps: median_of(&mut raw).unwrap_or(f64::NAN).exp(),
        send_ratio: rel(&p.row),
        recv_ratio: rel(&p.col),
        residual_spread: spread,
        findings,
        note: None,
    }
}

/// Link suspects re-measured per [`analyse_remeasured`]: at most this many, the lowest first…
const RECHECK_MAX: usize = 8;
/// …of those below this robust z in the matrix (a screen, not a verdict).
const RECHECK_Z: f64 = 2.5;

/// New measurements of one pair, both directions (GB/s): `(a→b, b→a)`.
pub type Remeasured = (Vec<f64>, Vec<f64>);

/// [`analyse`], then the links the matrix only hints at are measured again before any is
/// named: the (up to [`RECHECK_MAX`]) lowest link scores below z = −[`RECHECK_Z`] are each
/// re-measured by `remeasure(a, b)`; a link is named when the median of its new cells, against
/// what its two nodes predict, is significant under Holm at `alpha` over the pairs re-measured
/// (fresh data, so the screen costs no error rate) and at least `min_effect` slow. One pass
/// over the matrix then needs no cut as strict as all N(N−1)/2 links demand.
pub fn analyse_remeasured(
    m: &Matrix,
    s: &Settings,
    remeasure: &mut dyn FnMut(usize, usize) -> Remeasured,
) -> Analysis {
    let mut a = analyse(m, s);
    if a.note.is_some() {
        return a;
    }
    let n = m.n();
    let y: Vec<Option<f64>> = m
        .gbps
        .iter()
        .map(|c| c.filter(|v| v.is_finite() && *v > 0.0).map(f64::ln))
        .collect();
    let p = median_polish(&y, n, 20, 1e-4);
    let links = link_scores(&p, n);
    let scores: Vec<f64> = links.iter().map(|l| l.2).collect();
    let centre = median_of(&mut scores.clone()).unwrap_or(0.0);
    let spread = mad_sigma(&scores, centre).max(s.noise_floor);
    let mut low: Vec<(usize, usize, f64)> = links
        .iter()
        .filter(|l| (l.2 - centre) / spread < -RECHECK_Z)
        .copied()
        .collect();
    low.sort_by(|x, y| x.2.total_cmp(&y.2));
    low.truncate(RECHECK_MAX);
    let mut rechecked = Vec::new();
    for &(i, j, _) in &low {
        let (ij, ji) = remeasure(i, j);
        let expect = |from: usize, to: usize| p.overall + p.row[from] + p.col[to] + centre;
        let mut resid: Vec<f64> = ij
            .iter()
            .map(|v| v.ln() - expect(i, j))
            .chain(ji.iter().map(|v| v.ln() - expect(j, i)))
            .filter(|r| r.is_finite())
            .collect();
        let k = resid.len();
        let Some(d) = median_of(&mut resid) else {
            continue;
        };
        // A median of k cells of noise σ has sd ≈ 1.2533 σ / √k.
        let z = d / (1.2533 * a.residual_spread / (k as f64).sqrt());
        rechecked.push((i, j, d, z));
    }
    let ps: Vec<f64> = rechecked.iter().map(|r| normal_cdf(r.3)).collect();
    let named = holm(&ps, rechecked.len(), s.alpha);
    a.findings
        .retain(|f| !matches!(f.suspect, Suspect::Link { .. }));
    a.findings.extend(
        rechecked
            .iter()
            .zip(named)
            .filter(|(r, ok)| *ok && r.2.exp() < 1.0 - s.min_effect)
            .map(|(&(i, j, d, z), _)| Finding {
                suspect: Suspect::Link { a: i, b: j },
                ratio: d.exp(),
                z,
                confidence: confidence(z, rechecked.len()),
            }),
    );
    a
}

/// Nodes whose mean effect is far below the median node's. The spread is the larger of the
/// nodes' own MAD and what the cell noise alone gives a median of 2(N−1) cells, so a small N
/// with a lucky MAD near 0 flags nothing the noise explains.
fn node_findings(node: &[f64], cell_spread: f64, s: &Settings) -> Vec<Finding> {
    let n = node.len();
    let centre = median_of(&mut node.to_vec()).unwrap_or(0.0);
    let from_cells = 1.2533 * cell_spread / ((2 * (n - 1)) as f64).sqrt();
    let spread = mad_sigma(node, centre).max(from_cells).max(s.noise_floor);
    let zs: Vec<f64> = node.iter().map(|x| (x - centre) / spread).collect();
    let named = holm(
        &zs.iter().map(|&z| normal_cdf(z)).collect::<Vec<_>>(),
        n,
        s.alpha,
    );
    let mut out: Vec<Finding> = (0..n)
        .filter_map(|i| {
            let d = node[i] - centre;
            let z = zs[i];
            (named[i] && z < -s.z && d.exp() < 1.0 - s.min_effect).then(|| Finding {
                suspect: Suspect::Node { node: i },
                ratio: d.exp(),
                z,
                confidence: confidence(z, n),
            })
        })
        .collect();
    out.sort_by(|a, b| a.z.total_cmp(&b.z));
    out
}

/// Each unordered pair's residual: the mean of the directions measured.
fn link_scores(p: &Polish, n: usize) -> Vec<(usize, usize, f64)> {
    let mut out = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let (ab, ba) = (p.resid[a * n + b], p.resid[b * n + a]);
            let score = match (ab, ba) {
                (Some(x), Some(y)) => (x + y) / 2.0,
                (Some(x), None) | (None, Some(x)) => x,
                (None, None) => continue,
            };
            out.push((a, b, score));
        }
    }
    out
}

fn link_findings(links: &[(usize, usize, f64)], s: &Settings) -> Vec<Finding> {
    let scores: Vec<f64> = links.iter().map(|l| l.2).collect();
    let centre = median_of(&mut scores.clone()).unwrap_or(0.0);
    let spread = mad_sigma(&scores, centre).max(s.noise_floor);
    // Holm over every link, looking only at those below −z (the rest are never rejected
    // first): the family is all N(N−1)/2 links.
    let low: Vec<usize> = (0..links.len())
        .filter(|&i| (scores[i] - centre) / spread < -s.z)
        .collect();
    let ps: Vec<f64> = low
        .iter()
        .map(|&i| normal_cdf((scores[i] - centre) / spread))
        .collect();
    let named = holm(&ps, links.len(), s.alpha);
    let mut out: Vec<Finding> = low
        .iter()
        .zip(named)
        .filter(|(_, n)| *n)
        .filter_map(|(&i, _)| {
            let (a, b, score) = links[i];
            let d = score - centre;
            let z = d / spread;
            (d.exp() < 1.0 - s.min_effect).then(|| Finding {
                suspect: Suspect::Link { a, b },
                ratio: d.exp(),
                z,
                confidence: confidence(z, links.len()),
            })
        })
        .collect();
    out.sort_by(|a, b| a.z.total_cmp(&b.z));
    out
}

/// Runs of ≥ 2 neighbouring slow nodes whose links among themselves are fast: a block. Slow
/// nodes on their own would make the links between them slower still (≈ both effects); a
/// block slow only toward the rest leaves them near full speed. The midpoint decides. The
/// members' node findings are replaced by the block's.
fn blocks(
    findings: &mut Vec<Finding>,
    y: &[Option<f64>],
    p: &Polish,
    node: &[f64],
) -> Vec<Finding> {
    let n = node.len();
    let centre = median_of(&mut node.to_vec()).unwrap_or(0.0);
    let mut slow: Vec<usize> = findings
        .iter()
        .filter_map(|f| match f.suspect {
            Suspect::Node { node } => Some(node),
            _ => None,
        })
        .collect();
    slow.sort_unstable();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &i in &slow {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == i => *last = i,
            _ => runs.push((i, i)),
        }
    }
    let mut out = Vec::new();
    for (first, last) in runs.into_iter().filter(|(f, l)| l > f) {
        let members = first..=last;
        let mut inside: Vec<f64> = members
            .clone()
            .flat_map(|i| members.clone().map(move |j| (i, j)))
            .filter_map(|(i, j)| y[i * n + j].map(|v| v - p.overall - centre))
            .collect();
        let effect: f64 =
            members.clone().map(|i| node[i] - centre).sum::<f64>() / (last - first + 1) as f64;
        let Some(within) = median_of(&mut inside) else {
            continue;
        };
        if within <= effect {
            continue;
        }
        let of_block: Vec<Finding> = findings
            .iter()
            .filter(|f| matches!(f.suspect, Suspect::Node { node } if members.contains(&node)))
            .cloned()
            .collect();
        findings
            .retain(|f| !matches!(f.suspect, Suspect::Node { node } if members.contains(&node)));
        let k = of_block.len() as f64;
        out.push(Finding {
            suspect: Suspect::Block { first, last },
            ratio: effect.exp(),
            z: of_block.iter().map(|f| f.z).sum::<f64>() / k,
            confidence: of_block.iter().map(|f| f.confidence).fold(1.0, f64::min),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("n{i}")).collect()
    }

    /// A noise-free matrix with known row and column effects is fitted exactly.
    #[test]
    fn polish_recovers_additive_effects() {
        let n = 6;
        let row = [0.0, -0.3, 0.1, 0.0, 0.2, -0.1];
        let col = [0.1, 0.0, -0.2, 0.0, 0.05, 0.0];
        let y: Vec<Option<f64>> = (0..n * n)
            .map(|k| (k / n != k % n).then(|| 2.0 + row[k / n] + col[k % n]))
            .collect();
        let p = median_polish(&y, n, 50, 1e-9);
        for k in 0..n * n {
            if let Some(e) = p.resid[k] {
                assert!(e.abs() < 1e-9, "cell {k}: residual {e}");
            }
        }
        // Effects are identified up to a shift between the overall and the rows and columns.
        let fit = |i: usize, j: usize| p.overall + p.row[i] + p.col[j];
        assert!((fit(1, 2) - (2.0 - 0.3 - 0.2)).abs() < 1e-9);
    }

    #[test]
    fn normal_cdf_known_values() {
        for (z, want) in [
            (0.0, 0.5),
            (-1.0, 0.158_655_25),
            (-5.0, 2.866_515_7e-7),
            (2.0, 0.977_249_87),
        ] {
            assert!(((normal_cdf(z) - want) / want).abs() < 1e-6, "Φ({z})");
        }
    }

    fn exact(n: usize, f: impl Fn(usize, usize) -> f64) -> Matrix {
        Matrix {
            names: names(n),
            gbps: (0..n * n)
                .map(|k| (k / n != k % n).then(|| 10.0 * f(k / n, k % n)))
                .collect(),
        }
    }

    /// Four nodes, one pair slow both ways: a link, not either node (the real test's shape).
    #[test]
    fn four_nodes_one_slow_pair_is_a_link() {
        let m = exact(4, |i, j| {
            if (i, j) == (1, 2) || (i, j) == (2, 1) {
                0.1
            } else {
                1.0
            }
        });
        let a = analyse(&m, &Settings::default());
        let kinds: Vec<&Suspect> = a.findings.iter().map(|f| &f.suspect).collect();
        assert_eq!(kinds, [&Suspect::Link { a: 1, b: 2 }], "{a:?}");
        assert!((a.findings[0].ratio - 0.1).abs() < 1e-9);
        assert!(a.findings[0]
            .describe(&m.names)
            .starts_with("link n1↔n2: 10 %"));
    }

    /// Two slow nodes side by side are two nodes (the link between them is slower still);
    /// the same nodes slow only toward the rest are a block.
    #[test]
    fn neighbours_are_a_block_only_when_fast_among_themselves() {
        let slow = |i: usize| (3..=4).contains(&i);
        let nodes = exact(12, |i, j| {
            (if slow(i) { 0.6 } else { 1.0 }) * (if slow(j) { 0.6 } else { 1.0 })
        });
        let a = analyse(&nodes, &Settings::default());
        let kinds: Vec<&Suspect> = a.findings.iter().map(|f| &f.suspect).collect();
        assert_eq!(kinds.len(), 2, "{kinds:?}");
        assert!(kinds.iter().all(|k| matches!(k, Suspect::Node { .. })));
        let block = exact(12, |i, j| if slow(i) != slow(j) { 0.6 } else { 1.0 });
        let a = analyse(&block, &Settings::default());
        let kinds: Vec<&Suspect> = a.findings.iter().map(|f| &f.suspect).collect();
        assert_eq!(kinds, [&Suspect::Block { first: 3, last: 4 }], "{a:?}");
        assert!((a.findings[0].ratio - 0.6).abs() < 0.02, "{a:?}");
    }

    #[test]
    fn too_few_nodes_is_a_note_not_a_verdict() {
        let a = analyse(&exact(2, |_, _| 1.0), &Settings::default());
        assert!(a.findings.is_empty());
        assert!(a.note.unwrap().contains("too few"));
    }

    /// A deficit below the effect floor is not named even when noise-free makes it significant.
    #[test]
    fn small_effects_are_not_named() {
        let m = exact(8, |i, j| if i == 5 || j == 5 { 0.9 } else { 1.0 });
        assert!(analyse(&m, &Settings::default()).findings.is_empty());
        let m = exact(8, |i, j| if i == 5 || j == 5 { 0.8 } else { 1.0 });
        assert_eq!(analyse(&m, &Settings::default()).findings.len(), 1);
    }
}
