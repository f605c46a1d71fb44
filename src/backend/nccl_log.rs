//! NCCL's INFO output, parsed: which algorithm, protocol and channels NCCL chose for each
//! collective, the per-call lines, and the library's version.
//!
//! Pure functions over text (no CUDA), so the parser is tested in every build on fixtures in
//! the formats NCCL prints (`tests/fixtures/nccl/`; the formats are in
//! `docs/nccl-capture.md`). A line is `[timestamp ]host:pid:tid [dev] NCCL INFO <message>`;
//! the messages read here:
//!
//! - `NCCL version 2.22.3+cuda12.2` (`src/init.cc`, each process at INIT);
//! - the choice, printed by rank 0 of each communicator when it plans a collective
//!   (`src/enqueue.cc`, subsystem TUNING):
//!   - 2.20–2.22: `8 Bytes -> Algo 0 proto 0 time 25.200924` (numeric, no function);
//!   - 2.23: `AllReduce: 8 Bytes -> Algo 0 proto 0 time 25.2`;
//!   - 2.24 on: `AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}`;
//!   - forks append tokens (` comm 0x…`), which are ignored;
//! - the per-call line (subsystem COLL, every rank): `AllReduce: opCount 3 sendbuff 0x..
//!   recvbuff 0x.. count N datatype 7 op 0 root 0 comm 0x.. [nranks=8] stream 0x..`.
//!
//! - `NCCL WARN <message>` lines (any subsystem: NCCL prints them at NCCL_DEBUG=WARN and
//!   above), e.g. `NET/IB : Got async event : port error`: kept as said, so a case run while
//!   the fabric or a GPU complained says so.
//!
//! Anything else (other subsystems' INFO lines, text that is not NCCL's) is skipped.

// Only the CUDA backend captures logs; the parser is built everywhere so it is tested everywhere.
#![cfg_attr(not(feature = "cuda"), allow(dead_code))]

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The NCCL variables the CUDA backend set for its capture, each with its value before
/// (`None`: unset), so the provenance records the user's environment, not scalebench's.
static SET_FOR_CAPTURE: Mutex<Vec<(String, Option<String>)>> = Mutex::new(Vec::new());

/// Sets `name` for the capture, remembering what the user had.
pub(crate) fn set_for_capture(name: &str, value: &str) {
    let before = std::env::var(name).ok();
    if let Ok(mut v) = SET_FOR_CAPTURE.lock() {
        if !v.iter().any(|(n, _)| n == name) {
            v.push((name.to_string(), before));
        }
    }
    std::env::set_var(name, value);
}

/// `env` (the recorded environment) as the user set it: the capture's own settings undone.
pub fn as_the_user_set(env: &mut BTreeMap<String, String>) {
    let Ok(v) = SET_FOR_CAPTURE.lock() else {
        return;
    };
    for (name, before) in v.iter() {
        match before {
            Some(b) => env.insert(name.clone(), crate::results::environment::redact(name, b)),
            None => env.remove(name),
        };
    }
}

/// NCCL's collective functions, in `ncclFunc_t` order (Broadcast 0 … AllReduce 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NcclFunc {
    Broadcast,
    Reduce,
    AllGather,
    ReduceScatter,
    AllReduce,
    Send,
    Recv,
    /// NCCL ≥ 2.28 (`AlltoAll`) and RCCL (`AllToAll`).
    AllToAll,
    /// NCCL ≥ 2.28.
    Gather,
    /// NCCL ≥ 2.28.
    Scatter,
}

impl NcclFunc {
    /// The name as `ncclFuncToString` prints it.
    pub fn name(self) -> &'static str {
        match self {
            NcclFunc::Broadcast => "Broadcast",
            NcclFunc::Reduce => "Reduce",
            NcclFunc::AllGather => "AllGather",
            NcclFunc::ReduceScatter => "ReduceScatter",
            NcclFunc::AllReduce => "AllReduce",
            NcclFunc::Send => "Send",
            NcclFunc::Recv => "Recv",
            NcclFunc::AllToAll => "AllToAll",
            NcclFunc::Gather => "Gather",
            NcclFunc::Scatter => "Scatter",
        }
    }

    fn parse(s: &str) -> Option<NcclFunc> {
        // NCCL 2.28 spells it `AlltoAll`, RCCL `AllToAll`.
        if s == "AlltoAll" {
            return Some(NcclFunc::AllToAll);
        }
        [
            NcclFunc::Broadcast,
            NcclFunc::Reduce,
            NcclFunc::AllGather,
            NcclFunc::ReduceScatter,
            NcclFunc::AllReduce,
            NcclFunc::Send,
            NcclFunc::Recv,
            NcclFunc::AllToAll,
            NcclFunc::Gather,
            NcclFunc::Scatter,
        ]
        .into_iter()
        .find(|f| f.name() == s)
    }
}

pub use crate::params::nccl::{NcclAlgo, NcclProto};

/// Who wrote a line: `host:pid:tid [dev]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    pub host: String,
    pub pid: u32,
    pub tid: u32,
    /// The CUDA device the thread had current (`[dev]`).
    pub device: u32,
}

/// The algorithm/protocol choice of one planned collective.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Absent on 2.20–2.22, whose line does not name the function.
    pub func: Option<NcclFunc>,
    /// As printed: ≥ 2.24 count × type size (the per-rank count for AllGather and
    /// ReduceScatter); 2.20–2.23 nRanks × count for those two (see [`Choice::per_rank_bytes`]).
    pub bytes: u64,
    pub algo: NcclAlgo,
    pub proto: NcclProto,
    /// `channel{Lo..Hi}={lo..hi}` (≥ 2.24): the channels used are lo..=hi.
    pub channels: Option<(u32, u32)>,
    /// NCCL's own cost estimate, microseconds (2.20–2.23).
    pub model_time_us: Option<f64>,
    /// Which of the two forms the line had.
    pub named: bool,
}

impl Choice {
    /// How many channels the collective ran on, where the line says.
    pub fn channel_count(&self) -> Option<u32> {
        self.channels
            .map(|(lo, hi)| hi.saturating_sub(lo).saturating_add(1))
    }

    /// The bytes per rank's buffer as the benchmark counts them (count × type size): the
    /// numeric lines of 2.20–2.23 print nRanks × count for AllGather and ReduceScatter.
    /// Without the function (2.20–2.22) the caller says which it is.
    pub fn per_rank_bytes(&self, func: NcclFunc, version: i32, nranks: u32) -> u64 {
        let gathers = matches!(func, NcclFunc::AllGather | NcclFunc::ReduceScatter);
        if gathers && version < 22400 && nranks > 0 {
            self.bytes / u64::from(nranks)
        } else {
            self.bytes
        }
    }
}

/// One per-collective call line (subsystem COLL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub func: NcclFunc,
    pub op_count: u64,
    pub count: u64,
    pub datatype: u32,
    /// `ncclRedOp_t` (Sum 0, Prod 1, Max 2, Min 3, Avg 4); absent where the line has none.
    pub op: Option<u32>,
    /// The root (rank in the communicator), or the peer of Send/Recv.
    pub root: Option<u32>,
    pub comm: String,
    pub nranks: Option<u32>,
    /// RCCL's trailing `task N globalrank G`: the rank in the job that made the call.
    pub global_rank: Option<u32>,
    /// RCCL's task number (its position within a group call).
    pub task: Option<u32>,
}

/// What a recognised line says.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `NCCL version 2.22.3+cuda12.2`: the text, and its `ncclGetVersion` code (22203).
    Version {
        text: String,
        code: i32,
    },
    Choice(Choice),
    Call(Call),
    /// A `NCCL WARN` line's message.
    Warn(String),
}

/// A recognised line: who wrote it (where the prefix has the usual shape) and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub origin: Option<Origin>,
    pub event: Event,
}

const MARK: &str = " NCCL INFO ";
const WARN_MARK: &str = " NCCL WARN ";

/// One line of NCCL output; `None` for anything that is not one of the messages above.
pub fn parse_line(line: &str) -> Option<Entry> {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some(at) = line.find(WARN_MARK) {
        let msg = line[at + WARN_MARK.len()..].trim();
        return (!msg.is_empty()).then(|| Entry {
            origin: parse_origin(&line[..at]),
            event: Event::Warn(msg.to_string()),
        });
    }
    let at = line.find(MARK)?;
    let origin = parse_origin(&line[..at]);
    let msg = line[at + MARK.len()..].trim();
    let event = parse_version(msg)
        .or_else(|| parse_choice(msg))
        .or_else(|| parse_call(msg))?;
    Some(Entry { origin, event })
}

/// The distinct WARN messages of `entries` with how often each came, first seen first.
pub fn warnings(entries: &[Entry]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for e in entries {
        if let Event::Warn(m) = &e.event {
            match out.iter_mut().find(|(x, _)| x == m) {
                Some((_, n)) => *n += 1,
                None => out.push((m.clone(), 1)),
            }
        }
    }
    out
}

/// Every recognised line of a log, in order.
pub fn parse_log(text: &str) -> Vec<Entry> {
    text.lines().filter_map(parse_line).collect()
}

/// `… host:pid:tid [dev]`: the last two words before the mark (a timestamp or a launcher's
/// `1: ` prefix may come first).
fn parse_origin(head: &str) -> Option<Origin> {
    let mut words = head.split_whitespace().rev();
    let dev = words.next()?.strip_prefix('[')?.strip_suffix(']')?;
    let who = words.next()?;
    let mut parts = who.rsplitn(3, ':');
    let tid = parts.next()?.parse().ok()?;
    let pid = parts.next()?.parse().ok()?;
    let host = parts.next()?.to_string();
    Some(Origin {
        host,
        pid,
        tid,
        device: dev.parse().ok()?,
    })
}

fn parse_version(msg: &str) -> Option<Event> {
    // RCCL logs through NCCL's code; some of its releases name themselves (`RCCL version
    // 2.18.3+hip6.0.32830 HEAD:...`, with or without a colon).
    let text = msg
        .strip_prefix("NCCL version ")
        .or_else(|| msg.strip_prefix("RCCL version "))?
        .trim_start_matches([':', ' '])
        .split_whitespace()
        .next()?;
    let numbers: Vec<i32> = text
        .split(['+', '-'])
        .next()?
        .split('.')
        .map(|n| n.parse().ok())
        .collect::<Option<_>>()?;
    let [major, minor, patch] = numbers[..] else {
        return None;
    };
    // ncclGetVersion's code: major*10000 + minor*100 + patch since 2.9, major*1000 + … before.
    let code = if major > 2 || (major == 2 && minor >= 9) {
        major * 10000 + minor * 100 + patch
    } else {
        major * 1000 + minor * 100 + patch
    };
    Some(Event::Version {
        text: text.to_string(),
        code,
    })
}

/// `[Func: ]N Bytes -> Algo A proto P (time T | channel{Lo..Hi}={lo..hi})[ …]`.
fn parse_choice(msg: &str) -> Option<Event> {
    let (func, rest) = match msg.split_once(": ") {
        Some((f, rest)) => (Some(NcclFunc::parse(f)?), rest),
        None => (None, msg),
    };
    let w: Vec<&str> = rest.split_whitespace().collect();
    if w.len() < 6 || w[1] != "Bytes" || w[2] != "->" || w[3] != "Algo" || w[5] != "proto" {
        return None;
    }
    let bytes = w[0].parse().ok()?;
    let proto_word = w.get(6)?;
    let (algo, proto, named) = match (w[4].parse::<u32>(), proto_word.parse::<u32>()) {
        (Ok(a), Ok(p)) => (NcclAlgo::from_number(a)?, NcclProto::from_number(p)?, false),
        (Err(_), Err(_)) => (w[4].parse().ok()?, proto_word.parse().ok()?, true),
        _ => return None,
    };
    let mut choice = Choice {
        func,
        bytes,
        algo,
        proto,
        channels: None,
        model_time_us: None,
        named,
    };
    match w.get(7) {
        Some(&"time") => choice.model_time_us = w.get(8)?.parse().ok(),
        Some(word) => choice.channels = parse_channels(word),
        None => {}
    }
    Some(Event::Choice(choice))
}

fn parse_channels(word: &str) -> Option<(u32, u32)> {
    let range = word.strip_prefix("channel{Lo..Hi}={")?.strip_suffix('}')?;
    let (lo, hi) = range.split_once("..")?;
    Some((lo.parse().ok()?, hi.parse().ok()?))
}

/// `Func: opCount N sendbuff … count N datatype N op N root N comm 0x… [nranks=N] stream …`.
fn parse_call(msg: &str) -> Option<Event> {
    let (f, rest) = msg.split_once(": ")?;
    let func = NcclFunc::parse(f)?;
    if !rest.starts_with("opCount ") {
        return None;
    }
    let w: Vec<&str> = rest.split_whitespace().collect();
    let after = |key: &str| {
        w.iter()
            .position(|x| *x == key)
            .and_then(|i| w.get(i + 1).copied())
    };
    // NCCL prints opCount with `%lx`: hexadecimal, no `0x`.
    let op = after("opCount")?;
    let op_count = u64::from_str_radix(op.trim_start_matches("0x"), 16).ok()?;
    let nranks = w.iter().find_map(|x| {
        x.strip_prefix("[nranks=")
            .and_then(|n| n.strip_suffix(']'))
            .and_then(|n| n.parse().ok())
    });
    Some(Event::Call(Call {
        func,
        op_count,
        count: after("count")?.parse().ok()?,
        datatype: after("datatype")?.parse().ok()?,
        op: after("op").and_then(|x| x.parse().ok()),
        root: after("root").and_then(|x| x.parse().ok()),
        comm: after("comm")?.to_string(),
        nranks,
        global_rank: after("globalrank").and_then(|x| x.parse().ok()),
        task: after("task").and_then(|x| x.parse().ok()),
    }))
}

/// The choices in a stretch of log (one case's), counted: each distinct (function, algorithm,
/// protocol, channels) with how many planned collectives had it, most frequent first.
pub fn tally(entries: &[Entry]) -> Vec<(Choice, usize)> {
    let mut out: Vec<(Choice, usize)> = Vec::new();
    for e in entries {
        let Event::Choice(c) = &e.event else { continue };
        let same = |x: &Choice| {
            x.func == c.func && x.algo == c.algo && x.proto == c.proto && x.channels == c.channels
        };
        match out.iter_mut().find(|(x, _)| same(x)) {
            Some((_, n)) => *n += 1,
            None => out.push((c.clone(), 1)),
        }
    }
    // Stable: ties keep the order they first appeared in.
    out.sort_by_key(|x| std::cmp::Reverse(x.1));
    out
}

/// The NCCL version a log states (the first `NCCL version` line).
pub fn version(entries: &[Entry]) -> Option<(String, i32)> {
    entries.iter().find_map(|e| match &e.event {
        Event::Version { text, code } => Some((text.clone(), *code)),
        _ => None,
    })
}

#[cfg(test)]
mod tests;
