//! NCCL/RCCL COLL logs as a [`Trace`]: the per-call lines come from
//! [`crate::backend::nccl_log`]'s parser; this file assigns them to ranks and communicators.
//!
//! - Rank: RCCL's `globalrank G`; otherwise each distinct `host:pid` is a rank, numbered in
//!   the order the files (and lines) first show them — NCCL's COLL line does not say the rank.
//! - Communicator: the ranks whose calls name the same (comm pointer, nranks); where pointers
//!   differ between processes (separate address spaces), the ranks whose k-th communicator
//!   of that size it is. A set of ranks larger than nranks (several groups of one size) is
//!   cut into groups in rank order. Members are ordered by the rank each had in the
//!   communicator where an `Init COMPLETE` line says it, else by global rank.
//! - Time: an optional `[YYYY-MM-DD HH:MM:SS.frac]` prefix (NCCL_DEBUG_TIMESTAMP_FORMAT)
//!   gives each call's issue time, hence the time since the rank's previous call.

use super::{Call, Collective, Format, Group, Record, SourceFile, Trace, TraceError};
use crate::backend::nccl_log::{self, Event, NcclFunc};
use crate::params::{Dtype, ReduceOp};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One call line as read, before ranks and groups are resolved.
struct Raw {
    file: usize,
    line: usize,
    rank_key: RankKey,
    call: nccl_log::Call,
    time_ns: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum RankKey {
    Global(u32),
    Process(String, u32),
}

/// Reads NCCL/RCCL logs (one file for the job, or several) into a trace.
pub fn read(files: &[(PathBuf, String)]) -> Result<Trace, TraceError> {
    let mut raws = Vec::new();
    // (rank key, comm pointer) → rank in that communicator, from `Init COMPLETE` lines.
    let mut comm_rank: BTreeMap<(RankKey, String), (u32, u32)> = BTreeMap::new();
    for (f, (path, text)) in files.iter().enumerate() {
        for (i, line) in text.lines().enumerate() {
            if let Some(raw) = read_line(path, f, i + 1, line, &mut comm_rank)? {
                raws.push(raw);
            }
        }
    }
    let path = files.first().map_or_else(PathBuf::new, |f| f.0.clone());
    // Ranks: RCCL's global ranks as given; processes in order of first appearance.
    let mut keys: Vec<RankKey> = Vec::new();
    for r in &raws {
        if !keys.contains(&r.rank_key) {
            keys.push(r.rank_key.clone());
        }
    }
    let global = keys.iter().all(|k| matches!(k, RankKey::Global(_)));
    if global {
        keys.sort();
        for (i, k) in keys.iter().enumerate() {
            if *k != RankKey::Global(i as u32) {
                return Err(TraceError::whole(
                    &path,
                    format!(
                        "RCCL global ranks are not 0..{}: rank {i} has no line",
                        keys.len()
                    ),
                ));
            }
        }
    } else if keys.iter().all(|k| matches!(k, RankKey::Process(..))) {
        order_by_init(&mut keys, &comm_rank);
    } else {
        return Err(TraceError::whole(
            &path,
            "some call lines name their global rank (RCCL) and others do not: one job's log only",
        ));
    }
    let rank_of = |k: &RankKey| keys.iter().position(|x| x == k).unwrap_or(0) as u32;
    let nranks = keys.len();
    let (groups, group_of) = match_groups(files, &raws, &rank_of, nranks, &comm_rank, &keys)?;
    let mut calls: Vec<Vec<Call>> = vec![Vec::new(); nranks];
    let mut last_time: Vec<Option<i64>> = vec![None; nranks];
    for (k, raw) in raws.iter().enumerate() {
        let r = rank_of(&raw.rank_key) as usize;
        let fpath = &files[raw.file].0;
        let mut call = to_call(fpath, raw, group_of[k], groups[group_of[k]].ranks.len())?;
        call.gap_before_s = match (last_time[r], raw.time_ns) {
            (Some(a), Some(b)) => Some((b - a).max(0) as f64 * 1e-9),
            _ => None,
        };
        last_time[r] = raw.time_ns.or(last_time[r]);
        calls[r].push(call);
    }
    Ok(Trace {
        format: Format::NcclLog,
        files: files
            .iter()
            .map(|(p, t)| SourceFile {
                path: p.clone(),
                sha256: super::sha256_hex(t.as_bytes()),
            })
            .collect(),
        calls,
        groups,
    })
}

/// One line: a call (`Some`), an init line noted in `comm_rank`, or nothing of interest.
fn read_line(
    path: &Path,
    file: usize,
    n: usize,
    line: &str,
    comm_rank: &mut BTreeMap<(RankKey, String), (u32, u32)>,
) -> Result<Option<Raw>, TraceError> {
    let Some(at) = line.find(" NCCL INFO ") else {
        return Ok(None);
    };
    let msg = line[at + " NCCL INFO ".len()..].trim();
    let looks_like_call = msg
        .split_once(": ")
        .is_some_and(|(f, rest)| !f.contains(' ') && rest.starts_with("opCount"));
    let entry = nccl_log::parse_line(line);
    let origin = entry.as_ref().and_then(|e| e.origin.clone());
    if let Some((comm, rank, size)) = init_rank(msg) {
        // parse_line knows no init line, so the prefix is read here.
        if let Some(o) = origin_of(&line[..at]) {
            comm_rank.insert((o, comm), (rank, size));
        }
        return Ok(None);
    }
    let call = match entry.map(|e| e.event) {
        Some(Event::Call(c)) => c,
        _ if looks_like_call => {
            return Err(TraceError::bad(
                path,
                format!("line {n}"),
                "a COLL call line without a readable function, count, datatype or comm \
                 (expected `Func: opCount N sendbuff 0x… recvbuff 0x… count N datatype N op N \
                 root N comm 0x… [nranks=N] stream 0x…`)",
            ))
        }
        _ => return Ok(None),
    };
    let rank_key = match (call.global_rank, &origin) {
        (Some(g), _) => RankKey::Global(g),
        (None, Some(o)) => RankKey::Process(o.host.clone(), o.pid),
        (None, None) => {
            return Err(TraceError::bad(
                path,
                format!("line {n}"),
                "a call line without its `host:pid:tid [dev]` prefix or RCCL's `globalrank`, \
                 so its rank is unknown",
            ))
        }
    };
    if call.nranks.is_none() {
        return Err(TraceError::bad(
            path,
            format!("line {n}"),
            "a call line without `[nranks=N]`, so its communicator's size is unknown",
        ));
    }
    Ok(Some(Raw {
        file,
        line: n,
        rank_key,
        call,
        time_ns: timestamp_ns(&line[..at]),
    }))
}

/// `comm 0x… rank R nranks N … Init COMPLETE`: the comm pointer, the rank in it, its size.
fn init_rank(msg: &str) -> Option<(String, u32, u32)> {
    if !msg.ends_with("Init COMPLETE") {
        return None;
    }
    let w: Vec<&str> = msg.split_whitespace().collect();
    let after = |key: &str| w.iter().position(|x| *x == key).and_then(|i| w.get(i + 1));
    Some((
        after("comm")?.to_string(),
        after("rank")?.parse().ok()?,
        after("nranks")?.parse().ok()?,
    ))
}

/// `… host:pid:tid [dev]` → the process (the last two words before the mark).
fn origin_of(head: &str) -> Option<RankKey> {
    let mut words = head.split_whitespace().rev();
    words.next()?.strip_prefix('[')?;
    let mut parts = words.next()?.rsplitn(3, ':');
    parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    Some(RankKey::Process(parts.next()?.to_string(), pid))
}

/// Orders processes by their rank in a job-wide communicator where every one's init line
/// says it (and the ranks are 0..n); otherwise leaves first-seen order.
fn order_by_init(keys: &mut [RankKey], comm_rank: &BTreeMap<(RankKey, String), (u32, u32)>) {
    let n = keys.len() as u32;
    let world_rank = |k: &RankKey| {
        let mut it = comm_rank
            .iter()
            .filter(|((p, _), (_, size))| p == k && *size == n);
        match (it.next(), it.next()) {
            (Some((_, (r, _))), None) => Some(*r),
            _ => None,
        }
    };
    let mut ranks: Vec<Option<u32>> = keys.iter().map(world_rank).collect();
    if ranks.iter().any(Option::is_none) {
        return;
    }
    let mut sorted = ranks.clone();
    sorted.sort();
    if sorted != (0..n).map(Some).collect::<Vec<_>>() {
        return;
    }
    let mut pairs: Vec<(Option<u32>, RankKey)> =
        ranks.drain(..).zip(keys.iter().cloned()).collect();
    pairs.sort();
    for (slot, (_, k)) in keys.iter_mut().zip(pairs) {
        *slot = k;
    }
}

/// `[2025-03-01 10:00:00.010] …`: nanoseconds since 1970 (UTC as written), if the line has
/// it (integers: an f64 of seconds since 1970 would round microsecond gaps).
fn timestamp_ns(head: &str) -> Option<i64> {
    let inner = head.trim_start().strip_prefix('[')?.split(']').next()?;
    let (date, time) = inner.split_once(' ')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [y, m, day] = d[..] else { return None };
    let mut t = time.split(':');
    let h: i64 = t.next()?.parse().ok()?;
    let min: i64 = t.next()?.parse().ok()?;
    let (sec, frac) = t
        .next()?
        .split_once('.')
        .unwrap_or((time.rsplit(':').next()?, ""));
    let sec: i64 = sec.parse().ok()?;
    let digits: String = frac.chars().take(9).collect();
    let frac_ns: i64 = if digits.is_empty() {
        0
    } else {
        digits.parse::<i64>().ok()? * 10i64.pow(9 - digits.len() as u32)
    };
    let whole = days_from_civil(y, m, day) * 86400 + h * 3600 + min * 60 + sec;
    Some(whole * 1_000_000_000 + frac_ns)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The communicators: which raw call belongs to which group (see the module's rule).
fn match_groups(
    files: &[(PathBuf, String)],
    raws: &[Raw],
    rank_of: &dyn Fn(&RankKey) -> u32,
    nranks: usize,
    comm_rank: &BTreeMap<(RankKey, String), (u32, u32)>,
    keys: &[RankKey],
) -> Result<(Vec<Group>, Vec<usize>), TraceError> {
    // Per rank, the order in which it first used each (pointer, size).
    let mut ordinal: BTreeMap<(u32, String, u32), usize> = BTreeMap::new();
    let mut seen_of_size: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    for raw in raws {
        let r = rank_of(&raw.rank_key);
        let size = raw.call.nranks.unwrap_or(0);
        let key = (r, raw.call.comm.clone(), size);
        if let std::collections::btree_map::Entry::Vacant(slot) = ordinal.entry(key) {
            let n = seen_of_size.entry((r, size)).or_insert(0);
            slot.insert(*n);
            *n += 1;
        }
    }
    let by_pointer = |raw: &Raw| format!("comm {}", raw.call.comm);
    let by_order = |raw: &Raw| {
        let r = rank_of(&raw.rank_key);
        let size = raw.call.nranks.unwrap_or(0);
        let k = ordinal[&(r, raw.call.comm.clone(), size)];
        format!("communicator {k} of size {size}")
    };
    let path = files.first().map_or_else(PathBuf::new, |f| f.0.clone());
    let attempt =
        |name: &dyn Fn(&Raw) -> String| groups_by(raws, name, rank_of, nranks, comm_rank, keys);
    match attempt(&by_pointer) {
        Ok(g) => Ok(g),
        Err(_) => attempt(&by_order).map_err(|(name, raw_index)| {
            let raw = &raws[raw_index];
            TraceError::bad(
                &files[raw.file].0,
                format!("line {}", raw.line),
                format!(
                    "{name} (nranks={}) is used by a number of ranks that is not a multiple \
                     of its size, so its members are unknown (ranks seen: {nranks}; log every \
                     rank of the job in {})",
                    raw.call.nranks.unwrap_or(0),
                    path.display()
                ),
            )
        }),
    }
}

type Grouped = (Vec<Group>, Vec<usize>);

/// Groups calls by `name`; `Err((name, first raw index))` where a name's rank set does not
/// split into groups of its size.
fn groups_by(
    raws: &[Raw],
    name: &dyn Fn(&Raw) -> String,
    rank_of: &dyn Fn(&RankKey) -> u32,
    nranks: usize,
    comm_rank: &BTreeMap<(RankKey, String), (u32, u32)>,
    keys: &[RankKey],
) -> Result<Grouped, (String, usize)> {
    // name → (size, ranks in order, first raw index)
    let mut sets: Vec<(String, u32, Vec<u32>, usize)> = Vec::new();
    for (i, raw) in raws.iter().enumerate() {
        let n = name(raw);
        let r = rank_of(&raw.rank_key);
        match sets.iter_mut().find(|s| s.0 == n) {
            Some(s) if !s.2.contains(&r) => s.2.push(r),
            Some(_) => {}
            None => sets.push((n, raw.call.nranks.unwrap_or(0), vec![r], i)),
        }
    }
    let mut groups: Vec<Group> = Vec::new();
    // (name, global rank) → group index
    let mut index: BTreeMap<(String, u32), usize> = BTreeMap::new();
    for (n, size, mut ranks, first) in sets {
        if size == 0 || ranks.len() % size as usize != 0 || ranks.len() > nranks {
            return Err((n, first));
        }
        ranks.sort();
        let parts = ranks.len() / size as usize;
        for (p, chunk) in ranks.chunks(size as usize).enumerate() {
            let mut members = chunk.to_vec();
            // The rank each had in the communicator, where its init line said.
            let pointer_of = |r: u32| {
                raws.iter()
                    .find(|x| rank_of(&x.rank_key) == r && name(x) == n)
                    .map(|x| x.call.comm.clone())
            };
            let in_comm = |r: u32| {
                pointer_of(r)
                    .and_then(|c| comm_rank.get(&(keys[r as usize].clone(), c)).map(|x| x.0))
            };
            if members.iter().all(|&r| in_comm(r).is_some()) {
                members.sort_by_key(|&r| in_comm(r));
            }
            for &r in chunk {
                index.insert((n.clone(), r), groups.len());
            }
            let label = if parts > 1 {
                format!("{n} #{p}")
            } else {
                n.clone()
            };
            groups.push(Group {
                name: label,
                ranks: members,
            });
        }
    }
    let of = raws
        .iter()
        .map(|raw| index[&(name(raw), rank_of(&raw.rank_key))])
        .collect();
    Ok((groups, of))
}

/// The model's call for one line (counts per the module's table of NCCL's `count`).
fn to_call(path: &Path, raw: &Raw, group: usize, size: usize) -> Result<Call, TraceError> {
    let c = &raw.call;
    let rec = || format!("line {}", raw.line);
    let collective = match c.func {
        NcclFunc::AllReduce => Collective::AllReduce,
        NcclFunc::Reduce => Collective::Reduce,
        NcclFunc::Broadcast => Collective::Broadcast,
        NcclFunc::AllGather => Collective::AllGather,
        NcclFunc::ReduceScatter => Collective::ReduceScatter,
        NcclFunc::AllToAll => Collective::AllToAll,
        f => {
            return Err(TraceError::bad(
                path,
                rec(),
                format!("{} is not replayed yet (collectives only)", f.name()),
            ))
        }
    };
    let dtype = dtype_of(c.datatype).ok_or_else(|| {
        TraceError::bad(
            path,
            rec(),
            format!(
                "datatype {} has no scalebench type (replayed: 2 int32, 6 float16, 7 float32, \
                 8 float64, 9 bfloat16)",
                c.datatype
            ),
        )
    })?;
    let reduces = matches!(
        collective,
        Collective::AllReduce | Collective::Reduce | Collective::ReduceScatter
    );
    let op = if reduces {
        let n =
            c.op.ok_or_else(|| TraceError::bad(path, rec(), "a reduction without `op N`"))?;
        Some(op_of(n).ok_or_else(|| {
            TraceError::bad(
                path,
                rec(),
                format!("op {n} is not replayed (0 sum, 1 prod, 2 max, 3 min, 4 avg are)"),
            )
        })?)
    } else {
        None
    };
    let rooted = matches!(collective, Collective::Reduce | Collective::Broadcast);
    let root = if rooted {
        let r = c
            .root
            .ok_or_else(|| TraceError::bad(path, rec(), "a rooted call without `root N`"))?;
        if r as usize >= size {
            return Err(TraceError::bad(
                path,
                rec(),
                format!("root {r} is not a rank of its {size}-rank communicator"),
            ));
        }
        Some(r)
    } else {
        None
    };
    let n = size as u64;
    let (send_count, recv_count) = match collective {
        Collective::AllGather => (c.count, c.count * n),
        Collective::ReduceScatter => (c.count * n, c.count),
        // NCCL's AlltoAll count is per peer.
        Collective::AllToAll => (c.count * n, c.count * n),
        _ => (c.count, c.count),
    };
    Ok(Call {
        collective,
        dtype,
        op,
        root,
        send_count,
        recv_count,
        group,
        gap_before_s: None,
        record: Record::Line(raw.line),
    })
}

/// `ncclDataType_t` → scalebench's type (NCCL and RCCL share the numbers used here).
pub fn dtype_of(n: u32) -> Option<Dtype> {
    Some(match n {
        2 => Dtype::I32,
        6 => Dtype::F16,
        7 => Dtype::F32,
        8 => Dtype::F64,
        9 => Dtype::Bf16,
        _ => return None,
    })
}

/// `ncclRedOp_t` → scalebench's operator.
pub fn op_of(n: u32) -> Option<ReduceOp> {
    Some(match n {
        0 => ReduceOp::Sum,
        1 => ReduceOp::Prod,
        2 => ReduceOp::Max,
        3 => ReduceOp::Min,
        4 => ReduceOp::Avg,
        _ => return None,
    })
}
