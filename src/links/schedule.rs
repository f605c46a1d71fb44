//! Pair schedules: which ranks exchange in which round. Every round is a set of disjoint pairs
//! (no rank in two pairs), so a round's pairs run at the same time without sharing an end.

/// A pair of ranks; in a [`round_robin`] round `a < b`, in a [`shift`] step `a` sends to `b`.
pub type Pair = (usize, usize);

/// The circle method (a 1-factorisation of the complete graph): every unordered pair exactly
/// once, in N−1 rounds of N/2 pairs for even N; for odd N a dummy rank makes it N rounds, each
/// with one rank idle.
pub fn round_robin(n: usize) -> Vec<Vec<Pair>> {
    if n < 2 {
        return Vec::new();
    }
    // Odd N: rank `n` is the dummy; its partner sits the round out.
    let m = if n % 2 == 0 { n } else { n + 1 };
    let fixed = m - 1;
    (0..fixed)
        .map(|r| {
            let mut round = Vec::with_capacity(m / 2);
            let mut push = |a: usize, b: usize| {
                if a < n && b < n {
                    round.push((a.min(b), a.max(b)));
                }
            };
            push(fixed, r);
            for k in 1..m / 2 {
                push((r + k) % fixed, (r + fixed - k) % fixed);
            }
            round
        })
        .collect()
}

/// mpiGraph's shift rounds: in step D (1..N−1) rank r sends to (r+D) mod N while it receives
/// from (r−D) mod N, so every ordered pair once and every rank busy in every step (the whole
/// machine loaded, which exposes routing contention).
pub fn shift(n: usize) -> Vec<Vec<Pair>> {
    (1..n)
        .map(|d| (0..n).map(|r| (r, (r + d) % n)).collect())
        .collect()
}

/// One pair a round (for confirming suspects: nothing else on the fabric).
pub fn isolated(pairs: &[Pair]) -> Vec<Vec<Pair>> {
    pairs.iter().map(|&p| vec![p]).collect()
}

/// Per rail: the ranks with the same local index (GPU or NIC number) on different nodes,
/// each rail's ranks paired round-robin; rails run side by side in the same rounds.
/// `local[r]` is rank r's index on its node. Returns rounds of global rank pairs.
pub fn per_rail(local: &[usize]) -> Vec<Vec<Pair>> {
    let rails = local.iter().copied().max().map_or(0, |m| m + 1);
    let mut out: Vec<Vec<Pair>> = Vec::new();
    for rail in 0..rails {
        let members: Vec<usize> = (0..local.len()).filter(|&r| local[r] == rail).collect();
        for (i, round) in round_robin(members.len()).into_iter().enumerate() {
            if out.len() <= i {
                out.push(Vec::new());
            }
            out[i].extend(round.into_iter().map(|(a, b)| (members[a], members[b])));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No rank appears twice in one round.
    fn disjoint(round: &[Pair]) -> bool {
        let mut seen = std::collections::HashSet::new();
        round
            .iter()
            .all(|&(a, b)| a != b && seen.insert(a) && seen.insert(b))
    }

    /// The schedule proof: every unordered pair exactly once, no rank in two pairs of a
    /// round, N−1 rounds for even N and N for odd, for N = 2…257.
    #[test]
    fn round_robin_covers_every_pair_once() {
        for n in 2..=257 {
            let rounds = round_robin(n);
            assert_eq!(rounds.len(), if n % 2 == 0 { n - 1 } else { n }, "N = {n}");
            let mut count = vec![0u8; n * n];
            for round in &rounds {
                assert!(disjoint(round), "N = {n}: a rank twice in {round:?}");
                assert_eq!(round.len(), n / 2, "N = {n}: an idle pair");
                for &(a, b) in round {
                    assert!(a < b && b < n);
                    count[a * n + b] += 1;
                }
            }
            for a in 0..n {
                for b in a + 1..n {
                    assert_eq!(count[a * n + b], 1, "N = {n}: pair {a}-{b}");
                }
            }
        }
    }

    /// Shift: every ordered pair once; each rank sends once and receives once per step.
    #[test]
    fn shift_covers_every_ordered_pair_once() {
        for n in 2..=257 {
            let steps = shift(n);
            assert_eq!(steps.len(), n - 1);
            let mut count = vec![0u8; n * n];
            for step in &steps {
                let (mut out, mut inc) = (vec![0u8; n], vec![0u8; n]);
                for &(s, d) in step {
                    assert_ne!(s, d);
                    out[s] += 1;
                    inc[d] += 1;
                    count[s * n + d] += 1;
                }
                assert!(out.iter().chain(&inc).all(|&c| c == 1), "N = {n}");
            }
            for s in 0..n {
                for d in 0..n {
                    assert_eq!(count[s * n + d], u8::from(s != d), "N = {n}: {s}→{d}");
                }
            }
        }
    }

    #[test]
    fn isolated_is_one_pair_a_round() {
        let r = isolated(&[(0, 3), (1, 2)]);
        assert_eq!(r, vec![vec![(0, 3)], vec![(1, 2)]]);
    }

    /// Rails: only ranks with the same local index meet, every such pair once, rounds disjoint.
    #[test]
    fn per_rail_pairs_only_the_same_local_index() {
        // 5 nodes × 4 local ranks, and 3 nodes × 2 (an uneven job: 4 ranks on rail 0 and 1).
        for local in [
            (0..20).map(|r| r % 4).collect::<Vec<_>>(),
            vec![0, 1, 0, 1, 0, 1, 0, 1],
        ] {
            let rounds = per_rail(&local);
            let mut seen = std::collections::HashSet::new();
            for round in &rounds {
                assert!(disjoint(round));
                for &(a, b) in round {
                    assert_eq!(local[a], local[b]);
                    assert!(seen.insert((a.min(b), a.max(b))));
                }
            }
            let n = local.len();
            let want = (0..n)
                .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
                .filter(|&(a, b)| local[a] == local[b])
                .count();
            assert_eq!(seen.len(), want);
        }
    }
}
