//! The attribution's acceptance over 1,000 seeds per scenario (the unit tests run 300 in a
//! debug build): 64 nodes with one node at 70 % and one link at 50 %, a 3-node block at 60 %,
//! and a healthy cluster, all with 5 % log-normal noise. Prints each rate and what the misses
//! named. Run: `cargo run --release --example links_sweep [SEEDS]`; exits 1 below 99 %.

use scalebench::links::simulate::{trial, Trial};
use std::time::Instant;

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let mut ok = true;
    for t in [Trial::NodeAndLink, Trial::Block, Trial::Healthy] {
        let start = Instant::now();
        let mut misses = Vec::new();
        for seed in 0..seeds {
            let o = trial(t, seed);
            if !o.correct {
                misses.push((seed, o.findings));
            }
        }
        let rate = 1.0 - misses.len() as f64 / seeds as f64;
        println!(
            "{t:?}: correct in {:.1} % of {seeds} seeds ({:.1} ms a seed)",
            rate * 100.0,
            start.elapsed().as_secs_f64() * 1e3 / seeds as f64
        );
        for (seed, f) in misses.iter().take(5) {
            let named: Vec<String> = f.iter().map(|f| format!("{:?}", f.suspect)).collect();
            println!("  seed {seed}: named {named:?}");
        }
        ok &= rate >= 0.99;
    }
    std::process::exit(if ok { 0 } else { 1 });
}
