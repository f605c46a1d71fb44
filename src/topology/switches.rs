//! The job's network topology as Slurm knows it: which leaf switch (or block) each node hangs
//! from. Read from `scontrol show topology` (topology/tree: `SwitchName=… Level=0 … Nodes=…`;
//! topology/block: `BlockName=… Nodes=…`) or from a file in topology.conf's syntax
//! (`SwitchName=s1 Nodes=n[1-8]`, upper levels `Switches=…` only). Used to order nodes so that
//! a switch's nodes are neighbours (the links attribution finds blocks as runs of neighbours,
//! and the heat map draws them side by side), whatever order the ranks were placed in.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A leaf switch (or a topology/block block) and the nodes attached to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub name: String,
    pub nodes: Vec<String>,
}

/// Why a topology text cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}: {what}")]
pub struct SwitchesError {
    pub source_name: String,
    pub line: usize,
    pub what: String,
}

/// Expands a Slurm host list: `n[1-3,7],gpu[08-10],login` → n1 n2 n3 n7 gpu08 gpu09 gpu10 login
/// (zero padding kept from the range's first bound, several bracket groups multiply out).
pub fn expand_hostlist(expr: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top_level(expr) {
        if item.is_empty() {
            return Err(format!("empty name in host list '{expr}'"));
        }
        let mut names = vec![String::new()];
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = rest[open..]
                .find(']')
                .map(|c| open + c)
                .ok_or_else(|| format!("unclosed '[' in host list '{expr}'"))?;
            let prefix = &rest[..open];
            let alternatives =
                ranges(&rest[open + 1..close]).map_err(|e| format!("{e} in host list '{expr}'"))?;
            names = names
                .iter()
                .flat_map(|n| alternatives.iter().map(move |a| format!("{n}{prefix}{a}")))
                .collect();
            rest = &rest[close + 1..];
        }
        if rest.contains(']') {
            return Err(format!("unmatched ']' in host list '{expr}'"));
        }
        out.extend(names.into_iter().map(|n| format!("{n}{rest}")));
    }
    Ok(out)
}

/// Commas outside brackets separate names.
fn split_top_level(expr: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0, Vec::new());
    for (i, c) in expr.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&expr[start..]);
    parts
}

/// `1-3,07-09` → 1 2 3 07 08 09.
fn ranges(body: &str) -> Result<Vec<String>, String> {
    /// A cluster's node list, not a typo's billion names.
    const MOST: u64 = 1 << 20;
    let mut out = Vec::new();
    for part in body.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let bad = || format!("'{part}' is not a number or a range like 01-16");
        if lo.is_empty() || !lo.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        if hi.is_empty() || !hi.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let (a, b): (u64, u64) = (
            lo.parse().map_err(|_| bad())?,
            hi.parse().map_err(|_| bad())?,
        );
        if b < a || b - a >= MOST || out.len() as u64 + (b - a) >= MOST {
            return Err(format!(
                "range '{part}' runs backwards or names too many hosts"
            ));
        }
        let width = if lo.len() > 1 && lo.starts_with('0') {
            lo.len()
        } else {
            0
        };
        out.extend((a..=b).map(|v| format!("{v:0width$}")));
    }
    Ok(out)
}

/// Reads the leaves of a topology text: lines of `Key=value` words; a leaf is a `SwitchName`
/// line with `Nodes=` and no `Switches=` (topology.conf) or with `Level=0` (scontrol's output,
/// which lists every level's nodes), or a `BlockName` line with `Nodes=`. Other lines (upper
/// switches, `#` comments, blank lines, scontrol's "No topology information available") are
/// skipped. `source_name` names the text in errors.
pub fn parse(text: &str, source_name: &str) -> Result<Vec<Leaf>, SwitchesError> {
    let mut leaves: Vec<Leaf> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        let err = |what: String| SwitchesError {
            source_name: source_name.to_string(),
            line: i + 1,
            what,
        };
        let words: Vec<(&str, &str)> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .collect();
        let get = |k: &str| {
            words
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(k))
                .map(|(_, v)| *v)
        };
        let name = match (get("SwitchName"), get("BlockName")) {
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) => continue,
        };
        let is_block = get("SwitchName").is_none();
        let leaf = match get("Level") {
            Some(level) => level == "0",
            None => is_block || get("Switches").is_none(),
        };
        let Some(nodes) = get("Nodes").filter(|_| leaf) else {
            continue;
        };
        let nodes = expand_hostlist(nodes).map_err(|e| {
            err(format!(
                "{e}: write Nodes= as a Slurm host list, e.g. Nodes=n[1-8]"
            ))
        })?;
        if let Some(prev) = leaves
            .iter()
            .find(|l| l.nodes.iter().any(|n| nodes.contains(n)))
        {
            let twice = prev
                .nodes
                .iter()
                .find(|n| nodes.contains(n))
                .cloned()
                .unwrap_or_default();
            return Err(err(format!(
                "node {twice} hangs from both {} and {name}: a node belongs to one leaf switch; fix the file's Nodes= lists",
                prev.name
            )));
        }
        leaves.push(Leaf {
            name: name.to_string(),
            nodes,
        });
    }
    Ok(leaves)
}

/// Reads a topology file (topology.conf's syntax).
pub fn read_file(path: &Path) -> Result<Vec<Leaf>, SwitchesError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SwitchesError {
        source_name: name.clone(),
        line: 0,
        what: format!("cannot read it ({e}): give a file in Slurm's topology.conf syntax, e.g. 'SwitchName=s1 Nodes=n[1-8]'"),
    })?;
    let leaves = parse(&text, &name)?;
    if leaves.is_empty() {
        return Err(SwitchesError {
            source_name: name,
            line: 0,
            what:
                "no leaf switch in it: write one line per leaf, e.g. 'SwitchName=s1 Nodes=n[1-8]'"
                    .into(),
        });
    }
    Ok(leaves)
}

/// Inside a Slurm job: the leaves `scontrol show topology` lists, or why none (no topology
/// plugin, scontrol missing, or no answer within 10 s: a controller that does not answer must
/// not hold the job). `None` outside Slurm.
pub fn from_slurm() -> Option<Result<Vec<Leaf>, String>> {
    std::env::var_os("SLURM_JOB_ID")?;
    Some(query_scontrol(Duration::from_secs(10)))
}

fn query_scontrol(limit: Duration) -> Result<Vec<Leaf>, String> {
    let mut child = Command::new("scontrol")
        .args(["show", "topology"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("scontrol could not start ({e})"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "scontrol show topology gave no answer within {} s",
                    limit.as_secs()
                ));
            }
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("scontrol show topology: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let leaves = parse(&text, "scontrol show topology").map_err(|e| e.to_string())?;
    if leaves.is_empty() {
        return Err("Slurm reports no topology (no topology/tree or topology/block plugin)".into());
    }
    Ok(leaves)
}

/// The order of rows that puts each leaf's nodes side by side: by leaf (in the order the
/// topology lists them; nodes under none last), then by node name (natural: n2 before n10),
/// then by rank. `nodes[r]` is rank r's node.
pub fn order(nodes: &[String], leaves: &[Leaf]) -> Vec<usize> {
    let leaf_of = |node: &str| {
        leaves
            .iter()
            .position(|l| l.nodes.iter().any(|n| n == node))
            .unwrap_or(leaves.len())
    };
    let mut rows: Vec<usize> = (0..nodes.len()).collect();
    rows.sort_by(|&a, &b| {
        leaf_of(&nodes[a])
            .cmp(&leaf_of(&nodes[b]))
            .then_with(|| natural(&nodes[a], &nodes[b]))
            .then(a.cmp(&b))
    });
    rows
}

/// Natural order of names: digit runs compare as numbers (n2 < n10).
pub fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    let chunks = |s: &str| -> Vec<(bool, String)> {
        let mut v: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let d = c.is_ascii_digit();
            match v.last_mut() {
                Some((kind, text)) if *kind == d => text.push(c),
                _ => v.push((d, c.to_string())),
            }
        }
        v
    };
    let (x, y) = (chunks(a), chunks(b));
    for (p, q) in x.iter().zip(&y) {
        let o = match (p.0, q.0) {
            (true, true) => {
                let (u, v) = (p.1.trim_start_matches('0'), q.1.trim_start_matches('0'));
                u.len().cmp(&v.len()).then_with(|| u.cmp(v))
            }
            _ => p.1.cmp(&q.1),
        };
        if o.is_ne() {
            return o;
        }
    }
    x.len().cmp(&y.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn host_lists_expand_as_slurm_writes_them() {
        assert_eq!(
            expand_hostlist("n[1-3,7],gpu[08-10],login").unwrap(),
            names(&["n1", "n2", "n3", "n7", "gpu08", "gpu09", "gpu10", "login"])
        );
        assert_eq!(
            expand_hostlist("r[1-2]c[1-2]").unwrap(),
            names(&["r1c1", "r1c2", "r2c1", "r2c2"])
        );
        assert_eq!(
            expand_hostlist("nid[001000-001001]").unwrap(),
            names(&["nid001000", "nid001001"])
        );
        for bad in ["n[1-", "n[3-1]", "n[a-b]", "n1]", "n1,,n2", "n[1-99999999]"] {
            assert!(expand_hostlist(bad).is_err(), "{bad} accepted");
        }
    }

    /// scontrol's output lists every level with its nodes: only level 0 are leaves.
    #[test]
    fn scontrol_tree_output_gives_the_level_0_switches() {
        // As Slurm 22.05's `scontrol show topology` printed it for ci/slurm/start.sh's cluster.
        let text = "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[1-2]\n\
                    SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=n[3-4]\n\
                    SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=leaf[1-2]\n";
        let l = parse(text, "scontrol").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(
            (l[0].name.as_str(), l[0].nodes.clone()),
            ("leaf1", names(&["n1", "n2"]))
        );
        assert_eq!(l[1].nodes, names(&["n3", "n4"]));
    }

    #[test]
    fn topology_conf_and_blocks_are_read_too() {
        let conf = "# rack A\nSwitchName=s1 Nodes=a[1-2]\nSwitchName=s2 Nodes=b1\n\nSwitchName=top Switches=s[1-2]\n";
        let l = parse(conf, "t.conf").unwrap();
        assert_eq!(
            l.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
            ["s1", "s2"]
        );
        let blocks = parse("BlockName=b1 BlockIndex=0 Nodes=x[1-4]\n", "scontrol").unwrap();
        assert_eq!(blocks[0].nodes.len(), 4);
        assert!(parse("No topology information available\n", "scontrol")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn bad_lines_are_named_with_their_line() {
        let e = parse(
            "SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n[2-\n",
            "t.conf",
        )
        .unwrap_err();
        assert_eq!((e.source_name.as_str(), e.line), ("t.conf", 2));
        assert!(e.to_string().contains("unclosed"), "{e}");
        let e = parse(
            "SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n2\n",
            "t.conf",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("n2 hangs from both s1 and s2"),
            "{e}"
        );
        assert_eq!(e.line, 2);
    }

    /// Ranks placed round-robin over nodes (srun --distribution=cyclic) come out grouped by
    /// leaf, nodes in natural order within it, unknown nodes last.
    #[test]
    fn order_groups_each_leafs_nodes() {
        let leaves = vec![
            Leaf {
                name: "s1".into(),
                nodes: names(&["n10", "n2"]),
            },
            Leaf {
                name: "s2".into(),
                nodes: names(&["n1", "n3"]),
            },
        ];
        let nodes = names(&["n1", "n2", "n3", "n10", "x", "n1", "n2"]);
        assert_eq!(order(&nodes, &leaves), vec![1, 6, 3, 0, 5, 2, 4]);
        // No topology: by name, then rank.
        assert_eq!(order(&nodes, &[]), vec![0, 5, 1, 6, 2, 3, 4]);
    }
}
