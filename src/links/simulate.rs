//! The synthetic mode: a matrix with known slow nodes, links and blocks and log-normal noise,
//! for testing the attribution alone (`scalebench links --simulate`).

use super::attribution::Matrix;
use crate::stats::SplitMix64;

/// The healthy bandwidth of every simulated link (100 Gb/s).
pub const BASE_GBPS: f64 = 12.5;

/// A simulated cluster: what is slow, by how much (factor: fraction of full speed).
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub nodes: usize,
    pub seed: u64,
    pub slow_nodes: Vec<(usize, f64)>,
    /// Both directions of the link.
    pub slow_links: Vec<(usize, usize, f64)>,
    /// Nodes `first..=last` are slow toward the rest, full speed among themselves.
    pub slow_blocks: Vec<(usize, usize, f64)>,
    /// The standard deviation of ln(bandwidth) per cell (0.05: "5 % log-normal noise").
    pub noise: f64,
}

/// Why a scenario cannot be simulated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    #[error("--simulate {0}: at least 2 nodes")]
    TooFew(usize),
    #[error("{option} names node {node}, but nodes are numbered 0..{nodes}")]
    NoSuchNode {
        option: &'static str,
        node: usize,
        nodes: usize,
    },
    #[error("{option}: factor {factor} is not in (0, 1] (the fraction of full speed)")]
    Factor { option: &'static str, factor: f64 },
    #[error("--slow-link {0}:{0}: a link joins two different nodes")]
    SelfLink(usize),
    #[error("--slow-block {first}-{last}: the first node must not come after the last")]
    Backwards { first: usize, last: usize },
    #[error("--noise {0}: expected a fraction from 0 to 1 (0.05: 5 % log-normal noise)")]
    Noise(f64),
}

impl Scenario {
    /// A cluster of `nodes` with nothing slow: the base every test and bench varies.
    pub fn healthy(nodes: usize, seed: u64, noise: f64) -> Scenario {
        Scenario {
            nodes,
            seed,
            slow_nodes: vec![],
            slow_links: vec![],
            slow_blocks: vec![],
            noise,
        }
    }

    pub fn check(&self) -> Result<(), ScenarioError> {
        let n = self.nodes;
        if n < 2 {
            return Err(ScenarioError::TooFew(n));
        }
        let node = |option, node| {
            if node < n {
                Ok(())
            } else {
                Err(ScenarioError::NoSuchNode {
                    option,
                    node,
                    nodes: n,
                })
            }
        };
        let factor = |option, factor: f64| {
            if factor > 0.0 && factor <= 1.0 {
                Ok(())
            } else {
                Err(ScenarioError::Factor { option, factor })
            }
        };
        for &(k, f) in &self.slow_nodes {
            node("--slow-node", k)?;
            factor("--slow-node", f)?;
        }
        for &(a, b, f) in &self.slow_links {
            node("--slow-link", a)?;
            node("--slow-link", b)?;
            factor("--slow-link", f)?;
            if a == b {
                return Err(ScenarioError::SelfLink(a));
            }
        }
        for &(first, last, f) in &self.slow_blocks {
            node("--slow-block", first)?;
            node("--slow-block", last)?;
            factor("--slow-block", f)?;
            if first > last {
                return Err(ScenarioError::Backwards { first, last });
            }
        }
        if !(0.0..=1.0).contains(&self.noise) {
            return Err(ScenarioError::Noise(self.noise));
        }
        Ok(())
    }

    /// The measured matrix: full speed × every factor a cell meets × log-normal noise.
    pub fn matrix(&self) -> Matrix {
        let n = self.nodes;
        let mut rng = SplitMix64(self.seed);
        let factor = self.factors();
        let gbps = (0..n * n)
            .map(|k| {
                let noise = (self.noise * rng.normal()).exp();
                (k / n != k % n).then(|| BASE_GBPS * factor[k] * noise)
            })
            .collect();
        Matrix {
            names: (0..n).map(|i| format!("n{i}")).collect(),
            gbps,
        }
    }

    /// `repeats` new measurements of the pair a, b in each direction, with fresh noise from
    /// `seed` (the confirmation pass of a real run, simulated).
    pub fn remeasure(&self, a: usize, b: usize, repeats: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let n = self.nodes;
        let factor = self.factors();
        let mut rng = SplitMix64(seed ^ ((a * n + b) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut draw = |k: usize| -> Vec<f64> {
            (0..repeats)
                .map(|_| BASE_GBPS * factor[k] * (self.noise * rng.normal()).exp())
                .collect()
        };
        (draw(a * n + b), draw(b * n + a))
    }

    /// Each cell's fraction of full speed: every factor it meets.
    fn factors(&self) -> Vec<f64> {
        let n = self.nodes;
        let mut factor = vec![1.0; n * n];
        for &(k, f) in &self.slow_nodes {
            for j in 0..n {
                factor[k * n + j] *= f;
                factor[j * n + k] *= f;
            }
        }
        for &(a, b, f) in &self.slow_links {
            factor[a * n + b] *= f;
            factor[b * n + a] *= f;
        }
        for &(first, last, f) in &self.slow_blocks {
            let inside = |i: usize| (first..=last).contains(&i);
            for i in 0..n {
                for j in 0..n {
                    if inside(i) != inside(j) {
                        factor[i * n + j] *= f;
                    }
                }
            }
        }
        factor
    }
}

/// The acceptance scenarios, for the seed tests and the sweep example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trial {
    /// 64 nodes; one node at 70 %, one link at 50 % (placed by the seed); 5 % noise.
    NodeAndLink,
    /// 64 nodes; a 3-node block at 60 % toward the rest (placed by the seed); 5 % noise.
    Block,
    /// 64 nodes, 5 % noise, nothing slow.
    Healthy,
}

/// What one seed of a trial gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Exactly the planted faults were named, as the right kinds, nothing else.
    pub correct: bool,
    pub findings: Vec<super::attribution::Finding>,
}

/// Runs one seed of a trial with the default settings.
pub fn trial(t: Trial, seed: u64) -> Outcome {
    use super::attribution::{analyse, Settings, Suspect};
    let n = 64;
    // Placement from its own stream, so the noise stream stays the scenario's.
    let mut rng = SplitMix64(seed ^ 0x5eed_1ace);
    let mut pick = |below: usize| ((rng.uniform() * below as f64) as usize).min(below - 1);
    let mut s = Scenario::healthy(n, seed, 0.05);
    let want = match t {
        Trial::NodeAndLink => {
            let k = pick(n);
            let a = pick(n);
            let b = (a + 1 + pick(n - 1)) % n;
            s.slow_nodes.push((k, 0.7));
            s.slow_links.push((a, b, 0.5));
            vec![
                Suspect::Node { node: k },
                Suspect::Link {
                    a: a.min(b),
                    b: a.max(b),
                },
            ]
        }
        Trial::Block => {
            let first = pick(n - 2);
            s.slow_blocks.push((first, first + 2, 0.6));
            vec![Suspect::Block {
                first,
                last: first + 2,
            }]
        }
        Trial::Healthy => vec![],
    };
    let a = analyse(&s.matrix(), &Settings::default());
    let mut got: Vec<Suspect> = a.findings.iter().map(|f| f.suspect.clone()).collect();
    let mut want = want;
    let key = |x: &Suspect| format!("{x:?}");
    got.sort_by_key(key);
    want.sort_by_key(key);
    Outcome {
        correct: got == want,
        findings: a.findings,
    }
}
