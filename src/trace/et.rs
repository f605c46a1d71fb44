//! PyTorch execution traces (`torch.profiler.ExecutionTraceObserver`, schema 1.0.x–1.1.x) as
//! a [`Trace`], optionally joined with the Kineto (Chrome) trace of the same step for times.
//!
//! - Collectives: the `record_param_comms` nodes (attrs `collective_name`, `dtype`,
//!   `in_msg_nelems`, `out_msg_nelems`, `pg_name`, `pg_size`, `global_rank_start`/`_stride`),
//!   which PyTorch writes for NCCL process groups; where a file has none (gloo: PyTorch 2.15
//!   records only the `c10d::*` op and `gloo:*` on gloo's thread), the `c10d::*` ops
//!   themselves, sized from their tensor inputs (`[id, storage, offset, numel, itemsize,
//!   device]`) on the job's one process group. The operator is not in the trace (an opaque
//!   `ReduceOp` object): reductions replay as sums, DDP's. Order: node id (entry order).
//! - Process groups: the `## process_group:init ##` node's JSON (`pg_name`, `ranks`, [] = all,
//!   `group_size`); without it, `global_rank_start`/`_stride`/`pg_size`.
//! - Ranks: one file per rank in rank order, or one file for every rank of a symmetric
//!   (SPMD) job, whose calls every rank then replays.
//! - Times: a Kineto file per execution trace (given after them, in the same order), joined on
//!   the ET's `rf_id` = Kineto's `Record function id` (as Chakra's trace linker does): each
//!   call's gap is its c10d op's start minus the previous one's end (the first: since the
//!   step's first event).

use super::{Call, Collective, Format, Group, Record, SourceFile, Trace, TraceError};
use crate::params::{Dtype, ReduceOp};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One process group as the init node lists it (`ranks` empty: every rank).
#[derive(Debug, Clone)]
struct Pg {
    name: String,
    ranks: Vec<u32>,
    size: u32,
}

/// A call before groups are resolved: its group's name.
struct EtCall {
    call: Call,
    pg: Option<String>,
    rf_id: Option<u64>,
    /// The group as the call describes it (record_param_comms' start, stride and size).
    derived: Option<Pg>,
}

/// Reads execution traces (and Kineto traces) into one trace of `ranks` ranks (default:
/// the number of execution-trace files, or the world the process groups describe).
pub fn read(files: &[(PathBuf, String)], ranks: Option<u32>) -> Result<Trace, TraceError> {
    let mut ets = Vec::new();
    let mut kinetos = Vec::new();
    for (path, text) in files {
        let v: Value = serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
        if v.get("nodes").is_some() {
            ets.push((path.clone(), v));
        } else if v.get("traceEvents").is_some() {
            kinetos.push((path.clone(), v));
        } else {
            return Err(TraceError::whole(
                path,
                "JSON with neither `nodes` (an execution trace) nor `traceEvents` (a Kineto trace)",
            ));
        }
    }
    let Some((first, _)) = ets.first() else {
        return Err(TraceError::whole(
            &files[0].0,
            "a Kineto trace alone has no collectives' sizes: give the execution trace too",
        ));
    };
    if !kinetos.is_empty() && kinetos.len() != ets.len() {
        return Err(TraceError::whole(
            first,
            format!(
                "{} execution traces but {} Kineto traces: give one Kineto trace per execution trace",
                ets.len(),
                kinetos.len()
            ),
        ));
    }
    let mut pgs: Vec<Pg> = Vec::new();
    let mut per_file = Vec::new();
    for (path, v) in &ets {
        let (file_pgs, calls) = read_one(path, v)?;
        if pgs.is_empty() {
            pgs = file_pgs;
        }
        per_file.push(calls);
    }
    // Groups the init node did not list (PyTorch lists those alive at start()): from the
    // calls' own `global_rank_start`/`_stride`/`pg_size`.
    for c in per_file.iter().flatten() {
        if let Some(d) = &c.derived {
            if !pgs.iter().any(|p| p.name == d.name) {
                pgs.push(d.clone());
            }
        }
    }
    let world = ranks
        .or_else(|| (ets.len() > 1).then_some(ets.len() as u32))
        .or_else(|| pgs.iter().map(|p| p.size).max())
        .unwrap_or(1);
    if ets.len() != 1 && ets.len() as u32 != world {
        return Err(TraceError::whole(
            first,
            format!(
                "{} execution traces for {world} ranks: give one per rank, or one for all",
                ets.len()
            ),
        ));
    }
    for (k, (path, v)) in kinetos.iter().enumerate() {
        join_kineto(path, v, &mut per_file[k]);
    }
    let (groups, calls) = resolve_groups(&ets, &pgs, per_file, world)?;
    let mut sources: Vec<SourceFile> = Vec::new();
    for (path, text) in files {
        sources.push(SourceFile {
            path: path.clone(),
            sha256: super::sha256_hex(text.as_bytes()),
        });
    }
    Ok(Trace {
        format: Format::PytorchEt,
        files: sources,
        calls,
        groups,
    })
}

fn json_error(path: &Path, e: &serde_json::Error) -> TraceError {
    let what = if e.is_eof() {
        "the JSON ends early (a truncated file? the observer writes it whole only at \
         unregister_callback())"
            .to_string()
    } else {
        format!("not valid JSON: {e}")
    };
    TraceError::bad(
        path,
        format!("JSON at line {} column {}", e.line(), e.column()),
        what,
    )
}

/// The groups and every rank's calls, each call's group resolved by name.
fn resolve_groups(
    ets: &[(PathBuf, Value)],
    pgs: &[Pg],
    per_file: Vec<Vec<EtCall>>,
    world: u32,
) -> Result<(Vec<Group>, Vec<Vec<Call>>), TraceError> {
    let mut groups: Vec<Group> = pgs
        .iter()
        .map(|p| Group {
            name: p.name.clone(),
            ranks: if p.ranks.is_empty() {
                (0..world).collect()
            } else {
                p.ranks.clone()
            },
        })
        .collect();
    let mut calls: Vec<Vec<Call>> = Vec::new();
    for (k, file_calls) in per_file.into_iter().enumerate() {
        let path = &ets[k].0;
        let mut seq = Vec::new();
        for c in file_calls {
            let mut call = c.call;
            let g = match &c.pg {
                Some(name) => groups.iter().position(|g| &g.name == name),
                // A c10d op names no group: the job's only one, or the world.
                None if groups.len() <= 1 => {
                    if groups.is_empty() {
                        groups.push(Group {
                            name: "world".to_string(),
                            ranks: (0..world).collect(),
                        });
                    }
                    Some(0)
                }
                None => None,
            };
            let Some(g) = g else {
                let what = match &c.pg {
                    Some(n) => format!(
                        "process group {n:?} is not among the trace's process groups ({})",
                        groups
                            .iter()
                            .map(|g| g.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None => "the op names its process group only as an object and the trace \
                             has several; a trace with record_param_comms nodes names it"
                        .to_string(),
                };
                return Err(TraceError::bad(path, call.record.to_string(), what));
            };
            let size = groups[g].ranks.len() as u64;
            if let Some(r) = call.root.filter(|&r| u64::from(r) >= size) {
                return Err(TraceError::bad(
                    path,
                    call.record.to_string(),
                    format!("root {r} is not a rank of its {size}-rank group"),
                ));
            }
            call.group = g;
            seq.push(call);
        }
        calls.push(seq);
    }
    // One trace for every rank of a symmetric job.
    if calls.len() == 1 && world > 1 {
        let one = calls[0].clone();
        calls = vec![one; world as usize];
    }
    Ok((groups, calls))
}

type OneFile = (Vec<Pg>, Vec<EtCall>);

/// One execution trace: its process groups and its calls in node-id order.
fn read_one(path: &Path, v: &Value) -> Result<OneFile, TraceError> {
    let Some(nodes) = v.get("nodes").and_then(Value::as_array) else {
        return Err(TraceError::whole(path, "`nodes` is not a list"));
    };
    let mut by_id: BTreeMap<u64, &Value> = BTreeMap::new();
    for (i, n) in nodes.iter().enumerate() {
        let id = n.get("id").and_then(Value::as_u64).ok_or_else(|| {
            TraceError::bad(path, format!("nodes[{i}]"), "a node without a numeric `id`")
        })?;
        by_id.insert(id, n);
    }
    let mut pgs = Vec::new();
    for (&id, n) in &by_id {
        if name(n) == "## process_group:init ##" {
            pgs = read_pgs(path, id, n)?;
        }
    }
    let has_rpc = by_id.values().any(|n| name(n) == "record_param_comms");
    let mut calls = Vec::new();
    for (&id, n) in &by_id {
        let call = if has_rpc {
            if name(n) != "record_param_comms" {
                continue;
            }
            let parent = n
                .get("ctrl_deps")
                .and_then(Value::as_u64)
                .and_then(|p| by_id.get(&p).copied());
            from_record_param_comms(path, id, n, parent)?
        } else if name(n).starts_with("c10d::") {
            from_c10d(path, id, n)?
        } else {
            continue;
        };
        if let Some(c) = call {
            calls.push(c);
        }
    }
    Ok((pgs, calls))
}

fn name(n: &Value) -> &str {
    n.get("name").and_then(Value::as_str).unwrap_or("")
}

fn attr<'a>(n: &'a Value, key: &str) -> Option<&'a Value> {
    n.get("attrs")?
        .as_array()?
        .iter()
        .find(|a| a.get("name").and_then(Value::as_str) == Some(key))?
        .get("value")
}

fn input(n: &Value, i: usize) -> Option<&Value> {
    n.get("inputs")?.get("values")?.as_array()?.get(i)
}

/// The init node's `inputs[0]`: the JSON of `_world.pg_config_info`.
fn read_pgs(path: &Path, id: u64, n: &Value) -> Result<Vec<Pg>, TraceError> {
    let bad = |what: &str| TraceError::bad(path, format!("node {id}"), what.to_string());
    let text = input(n, 0)
        .and_then(Value::as_str)
        .ok_or_else(|| bad("the process-group init node has no JSON in inputs[0]"))?;
    let list: Value = serde_json::from_str(text)
        .map_err(|e| bad(&format!("the process-group list is not JSON: {e}")))?;
    let mut pgs = Vec::new();
    for pg in list
        .as_array()
        .ok_or_else(|| bad("the process-group list is not a list"))?
    {
        let pg_name = pg
            .get("pg_name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("a process group without `pg_name`"))?;
        let ranks: Vec<u32> = pg
            .get("ranks")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|x| x.as_u64().map(|x| x as u32))
                    .collect()
            })
            .unwrap_or_default();
        let size = pg
            .get("group_size")
            .and_then(Value::as_u64)
            .map(|x| x as u32)
            .unwrap_or(ranks.len() as u32);
        pgs.push(Pg {
            name: pg_name.to_string(),
            ranks,
            size,
        });
    }
    Ok(pgs)
}

/// A PyTorch dtype name (`Float`, `c10::BFloat16`, the ET's `Tensor(float)`) → scalebench's.
fn dtype_named(s: &str) -> Option<Dtype> {
    let s = s.trim_start_matches("c10::").to_ascii_lowercase();
    Some(match s.as_str() {
        "float" | "float32" => Dtype::F32,
        "double" | "float64" => Dtype::F64,
        "int" | "int32" => Dtype::I32,
        "half" | "float16" => Dtype::F16,
        "bfloat16" => Dtype::Bf16,
        _ => return None,
    })
}

fn collective_named(s: &str) -> Option<Collective> {
    Some(match s.trim_matches('_') {
        "allreduce" | "all_reduce" | "allreduce_coalesced" => Collective::AllReduce,
        "broadcast" => Collective::Broadcast,
        "reduce" => Collective::Reduce,
        "allgather"
        | "all_gather"
        | "allgather_base"
        | "all_gather_into_tensor"
        | "allgather_into_tensor_coalesced" => Collective::AllGather,
        "reduce_scatter"
        | "reduce_scatter_base"
        | "reduce_scatter_tensor"
        | "reduce_scatter_tensor_coalesced" => Collective::ReduceScatter,
        "all_to_all" | "alltoall" | "alltoall_base" | "all_to_allv" => Collective::AllToAll,
        "barrier" => Collective::Barrier,
        _ => return None,
    })
}

/// Names of record_param_comms that are markers, not traffic (a coalescing block's ends, the
/// process group's creation, a wait).
const MARKERS: [&str; 4] = ["init", "wait", "coalesced", "start_coalescing"];

fn from_record_param_comms(
    path: &Path,
    id: u64,
    n: &Value,
    parent: Option<&Value>,
) -> Result<Option<EtCall>, TraceError> {
    let rec = format!("node {id}");
    let bad = |what: String| TraceError::bad(path, rec.clone(), what);
    let cname = attr(n, "collective_name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("a record_param_comms node without `collective_name`".into()))?;
    if MARKERS.contains(&cname) {
        return Ok(None);
    }
    let collective = collective_named(cname)
        .ok_or_else(|| bad(format!("collective {cname:?} is not replayed yet")))?;
    let count = |key: &str| {
        attr(n, key).and_then(Value::as_u64).ok_or_else(|| {
            bad(format!(
                "a {cname} with no size: attribute `{key}` is missing or not a count"
            ))
        })
    };
    let (send_count, recv_count) = if collective == Collective::Barrier {
        (0, 0)
    } else {
        (count("in_msg_nelems")?, count("out_msg_nelems")?)
    };
    let dtype_text = attr(n, "dtype").and_then(Value::as_str).unwrap_or("");
    let dtype = match dtype_named(dtype_text) {
        Some(d) => d,
        None if collective == Collective::Barrier => Dtype::F32,
        None => {
            return Err(bad(format!(
                "dtype {dtype_text:?} is not replayed (Float, Double, Int, Half, BFloat16 are)"
            )))
        }
    };
    let pg = attr(n, "pg_name").and_then(|v| match v {
        Value::String(s) => Some(s.clone()),
        // 1.0.3 wrote (pg_name, pg_desc).
        Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_string),
        _ => None,
    });
    let pg = pg.ok_or_else(|| bad(format!("a {cname} without `pg_name`")))?;
    let root = root_of(collective, n, parent)
        .map_err(|()| bad(format!("a {cname} whose root is not in the trace")))?;
    let u = |key: &str| attr(n, key).and_then(Value::as_u64).map(|x| x as u32);
    let derived = match (
        u("pg_size"),
        u("global_rank_start"),
        u("global_rank_stride"),
    ) {
        (Some(size), Some(start), Some(stride)) if size > 0 => Some(Pg {
            name: pg.clone(),
            ranks: (0..size).map(|i| start + i * stride.max(1)).collect(),
            size,
        }),
        _ => None,
    };
    Ok(Some(EtCall {
        call: Call {
            collective,
            dtype,
            op: reduces(collective).then_some(ReduceOp::Sum),
            root,
            send_count,
            recv_count,
            group: 0,
            gap_before_s: None,
            record: Record::Node(id),
        },
        pg: Some(pg),
        rf_id: parent
            .and_then(|p| attr(p, "rf_id"))
            .and_then(Value::as_u64),
        derived,
    }))
}

fn reduces(c: Collective) -> bool {
    matches!(
        c,
        Collective::AllReduce | Collective::Reduce | Collective::ReduceScatter
    )
}

/// The root of a rooted collective: an attr, or the c10d op's `root_rank` input
/// (broadcast_: inputs[2], reduce_: inputs[3]).
fn root_of(c: Collective, n: &Value, parent: Option<&Value>) -> Result<Option<u32>, ()> {
    let at = match c {
        Collective::Broadcast => 2,
        Collective::Reduce => 3,
        _ => return Ok(None),
    };
    let from_attr = attr(n, "root_rank").or_else(|| attr(n, "root"));
    let from_op = || {
        parent
            .filter(|p| name(p).starts_with("c10d::"))
            .and_then(|p| input(p, at))
    };
    let from_self = || {
        name(n)
            .starts_with("c10d::")
            .then(|| input(n, at))
            .flatten()
    };
    from_attr
        .or_else(from_op)
        .or_else(from_self)
        .and_then(Value::as_u64)
        .map(|r| Some(r as u32))
        .ok_or(())
}

/// A tensor value `[id, storage, offset, numel, itemsize, device]`'s element count, or the
/// sum over a list of them.
fn numel(v: &Value) -> Option<u64> {
    let a = v.as_array()?;
    if a.len() == 6 && a[0].is_u64() {
        return a[3].as_u64();
    }
    a.iter().map(numel).sum()
}

fn from_c10d(path: &Path, id: u64, n: &Value) -> Result<Option<EtCall>, TraceError> {
    let op = name(n).trim_start_matches("c10d::");
    let rec = format!("node {id}");
    let bad = |what: String| TraceError::bad(path, rec.clone(), what);
    let Some(collective) = collective_named(op) else {
        // Not a collective (e.g. c10d::monitored_barrier_ is, but a send is not replayed).
        return Err(bad(format!("c10d::{op} is not replayed yet")));
    };
    // Tensor inputs: allreduce_/broadcast_/reduce_ (tensors, …); _allgather_base_ and
    // _reduce_scatter_base_ (output, input, …).
    let (send_count, recv_count, tensor_at) = match op {
        "_allgather_base_" | "_reduce_scatter_base_" | "alltoall_base_" => {
            let out = input(n, 0).and_then(numel);
            let inp = input(n, 1).and_then(numel);
            match (inp, out) {
                (Some(i), Some(o)) => (i, o, 1),
                _ => {
                    return Err(bad(format!(
                        "a c10d::{op} with no size: its tensors are missing"
                    )))
                }
            }
        }
        "barrier" => (0, 0, 0),
        _ => match input(n, 0).and_then(numel) {
            Some(c) => (c, c, 0),
            None => {
                return Err(bad(format!(
                    "a c10d::{op} with no size: its tensors are missing"
                )))
            }
        },
    };
    let types = n
        .get("inputs")
        .and_then(|i| i.get("types"))
        .and_then(|t| t.get(tensor_at))
        .and_then(Value::as_str)
        .unwrap_or("");
    let inner = types
        .rsplit('(')
        .next()
        .and_then(|t| t.split(')').next())
        .unwrap_or("");
    let dtype = match dtype_named(inner) {
        Some(d) => d,
        None if collective == Collective::Barrier => Dtype::F32,
        None => return Err(bad(format!("tensor type {types:?} is not replayed"))),
    };
    let root = root_of(collective, n, None)
        .map_err(|()| bad(format!("a c10d::{op} whose root is not in the trace")))?;
    Ok(Some(EtCall {
        call: Call {
            collective,
            dtype,
            op: reduces(collective).then_some(ReduceOp::Sum),
            root,
            send_count,
            recv_count,
            group: 0,
            gap_before_s: None,
            record: Record::Node(id),
        },
        pg: None,
        rf_id: attr(n, "rf_id").and_then(Value::as_u64),
        derived: None,
    }))
}

/// Gives each call the compute gap before it from the Kineto trace: the c10d op's start
/// minus the previous one's end (the first call: minus the step's first event).
fn join_kineto(_path: &Path, v: &Value, calls: &mut [EtCall]) {
    let Some(events) = v.get("traceEvents").and_then(Value::as_array) else {
        return;
    };
    let mut by_rf: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    let mut start_us = f64::INFINITY;
    for e in events {
        if e.get("ph").and_then(Value::as_str) != Some("X") {
            continue;
        }
        let (Some(ts), Some(dur)) = (
            e.get("ts").and_then(Value::as_f64),
            e.get("dur").and_then(Value::as_f64),
        ) else {
            continue;
        };
        start_us = start_us.min(ts);
        if let Some(rf) = e
            .get("args")
            .and_then(|a| a.get("Record function id"))
            .and_then(Value::as_u64)
        {
            by_rf.insert(rf, (ts, dur));
        }
    }
    let mut prev_end = start_us;
    for c in calls.iter_mut() {
        let Some(&(ts, dur)) = c.rf_id.and_then(|rf| by_rf.get(&rf)) else {
            continue;
        };
        c.call.gap_before_s = Some(((ts - prev_end) * 1e-6).max(0.0));
        prev_end = ts + dur;
    }
}
