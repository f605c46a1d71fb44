//! The attribution over many seeds: the synthetic acceptance over 1,000 seeds each
//! (about a second each in the test profile); `examples/links_sweep.rs` runs any number and
//! prints what the misses named.

use super::attribution::{analyse, Settings, Suspect};
use super::simulate::{trial, Trial};

const SEEDS: u64 = 1000;

fn rate(t: Trial) -> f64 {
    let hits = (0..SEEDS).filter(|&s| trial(t, s).correct).count();
    let r = hits as f64 / SEEDS as f64;
    eprintln!("{t:?}: correct in {hits} of {SEEDS} seeds");
    r
}

/// 64 nodes, one node at 70 % and one link at 50 % (both placed by the seed), 5 % log-normal
/// noise: both named, nothing else, in ≥ 99 % of seeds.
#[test]
fn node_and_link_found_and_nothing_else() {
    let r = rate(Trial::NodeAndLink);
    assert!(
        r >= 0.99,
        "node and link found alone in {:.1} % of seeds",
        r * 100.0
    );
}

/// A 3-node block at 60 % toward the rest is reported as one block (not three nodes).
#[test]
fn three_node_block_is_a_block() {
    let r = rate(Trial::Block);
    assert!(
        r >= 0.99,
        "block found alone in {:.1} % of seeds",
        r * 100.0
    );
}

/// A healthy cluster names nothing (exit 0) in ≥ 99 % of seeds.
#[test]
fn healthy_cluster_exits_zero() {
    let r = rate(Trial::Healthy);
    assert!(r >= 0.99, "healthy in {:.1} % of seeds", r * 100.0);
}

/// The test can fail: a node at 95 % (below the effect floor) is not found, and without noise
/// a link at 50 % is named with its exact ratio.
#[test]
fn the_trial_sees_what_it_claims() {
    let s = super::simulate::Scenario {
        nodes: 16,
        seed: 1,
        slow_nodes: vec![(3, 0.95)],
        slow_links: vec![(4, 9, 0.5)],
        slow_blocks: vec![],
        noise: 0.0,
    };
    let a = analyse(&s.matrix(), &Settings::default());
    assert_eq!(a.findings.len(), 1, "{a:?}");
    assert_eq!(a.findings[0].suspect, Suspect::Link { a: 4, b: 9 });
    assert!((a.findings[0].ratio - 0.5).abs() < 1e-9);
    assert_eq!(super::exit_code(&a), 1);
}

/// Seeds of the calibration tests.
fn pick(seed: u64, below: usize) -> usize {
    let mut rng = crate::stats::SplitMix64(seed ^ 0x0005_1ce0_11a5);
    ((rng.uniform() * below as f64) as usize).min(below - 1)
}

/// Named with re-measurement of suspects (4 repeats each way, as the confirmation pass does).
fn analyse_with_repeats(s: &super::simulate::Scenario) -> super::attribution::Analysis {
    let m = s.matrix();
    super::attribution::analyse_remeasured(&m, &Settings::default(), &mut |a, b| {
        s.remeasure(a, b, 4, s.seed.wrapping_add(0x00de_ca1f))
    })
}

/// A healthy 1,024-node matrix (523,776 links, 5 % noise) names nothing in ≥ 99 % of 100
/// seeds: Holm's cut grows with the number of cells (a fixed z = 5 named a false link in 3 of
/// 20 runs).
#[test]
fn healthy_thousand_node_matrix_names_nothing() {
    let seeds = 100u64;
    let mut named = Vec::new();
    for seed in 0..seeds {
        let s = super::simulate::Scenario::healthy(1024, 7000 + seed, 0.05);
        let a = analyse_with_repeats(&s);
        if !a.findings.is_empty() {
            named.push((seed, a.findings.len()));
        }
    }
    eprintln!(
        "1,024 healthy nodes, 5 % noise: something named in {}/{seeds} seeds {named:?}",
        named.len()
    );
    assert!(named.len() as f64 <= 0.01 * seeds as f64, "{named:?}");
}

/// A slow link at 70 % in 10 % noise at 64 nodes (placed by the seed): named, as that link, in
/// ≥ 95 % of 500 seeds once suspects are re-measured; healthy 64-node matrices at 10 % noise
/// name nothing in ≥ 99 %. The single pass alone (no re-measurement) is printed for the record.
#[test]
fn slow_link_in_ten_percent_noise_is_found_with_remeasurement() {
    let seeds = 500u64;
    let (mut found, mut found_once, mut extra, mut false_healthy) = (0, 0, 0, 0);
    for seed in 0..seeds {
        let a = pick(seed, 64);
        let b = (a + 1 + pick(seed + 1_000_000, 63)) % 64;
        let mut s = super::simulate::Scenario::healthy(64, seed, 0.10);
        s.slow_links.push((a, b, 0.7));
        let want = Suspect::Link {
            a: a.min(b),
            b: a.max(b),
        };
        let got = analyse_with_repeats(&s);
        found += u64::from(got.findings.iter().any(|f| f.suspect == want));
        extra += u64::from(got.findings.iter().any(|f| f.suspect != want));
        let once = analyse(&s.matrix(), &Settings::default());
        found_once += u64::from(once.findings.iter().any(|f| f.suspect == want));
        let h = super::simulate::Scenario::healthy(64, 90_000 + seed, 0.10);
        false_healthy += u64::from(!analyse_with_repeats(&h).findings.is_empty());
    }
    let k = seeds as f64;
    eprintln!(
        "64 nodes, link at 0.7, 10 % noise: named with re-measurement {found}/{seeds}, by the matrix alone {found_once}/{seeds}; something else named {extra}/{seeds}; healthy at 10 % noise named something {false_healthy}/{seeds}"
    );
    assert!(found as f64 >= 0.95 * k, "{found}/{seeds}");
    assert!(false_healthy as f64 <= 0.01 * k, "{false_healthy}/{seeds}");
}

/// Three nodes cannot tell a slow link from its two slow nodes: a note that says so and what
/// to do, not "healthy"; every finding says what to do next.
#[test]
fn three_nodes_give_a_note_and_findings_say_what_next() {
    let mut s = super::simulate::Scenario::healthy(3, 1, 0.01);
    s.slow_links.push((0, 1, 0.01));
    let a = analyse(&s.matrix(), &Settings::default());
    assert!(a.findings.is_empty());
    let note = a.note.clone().unwrap_or_default();
    assert!(note.contains("at least 4 nodes"), "{note}");
    let text = super::render(&a, &s.matrix().names, &Settings::default());
    assert!(text.starts_with("no verdict: 3 nodes"), "{text}");

    let mut s = super::simulate::Scenario::healthy(16, 2, 0.02);
    s.slow_links.push((4, 9, 0.5));
    s.slow_nodes.push((12, 0.5));
    let a = analyse(&s.matrix(), &Settings::default());
    let lines: Vec<String> = a
        .findings
        .iter()
        .map(|f| f.describe(&s.matrix().names))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("node n12") && l.contains("next: drain n12")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("link n4↔n9") && l.contains("next: reseat or replace the cable")),
        "{lines:?}"
    );
}
