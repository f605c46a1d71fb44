//! `replay`: a traced job's collectives (an NCCL/RCCL log or a PyTorch execution trace, read
//! by [`crate::trace`]) run in the trace's order on every rank, each with its size, type,
//! operator, root and communicator (process groups on sub-communicators), with the recorded
//! compute gaps waited out between them (`compute = gaps`) or none.
//!
//! One timed operation is one step: every collective of this rank's sequence, in order.
//! Each collective is set up and validated exactly as the collective workloads do
//! ([`super::collective::Single`]): predictable inputs, every output element compared, on
//! fresh inputs after timing. A barrier is replayed as a one-element all-reduce (the
//! backends have no barrier call). Not yet: overlap (the trace's streams and async work run
//! in order, blocking), compute as GEMMs, `--ranks-as N` (docs/replay.md).

use super::collective::Single;
use super::{agree, CaseError, Measured, RunSettings};
use crate::backend::{Backend, BackendError, CollectiveCall};
use crate::comm::HostComm;
use crate::measure;
use crate::params::{CaseParams, ReplayCompute, Timing, Workload};
use crate::results::replay::{ReplayGroup, ReplayRecord, ReplayedCall, TraceFile};
use crate::results::schema::PhaseResult;
use crate::stats;
use crate::trace::{Call, Collective, Trace};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One collective of this rank's sequence, ready to issue.
struct Step<Buf> {
    single: Single<Buf>,
    /// The sub-communicator (`None`: the whole job in rank order).
    group: Option<usize>,
    gap: Option<Duration>,
}

/// Per timed step: seconds in the collectives, in the gaps, and per collective.
#[derive(Default)]
struct Log {
    comm_s: Vec<f64>,
    compute_s: Vec<f64>,
    per_call_s: Vec<Vec<f64>>,
}

/// Reads the case's trace, checks it is the one planned (digests) and fits this launch.
pub fn load(params: &CaseParams, ranks: u32) -> Result<Trace, CaseError> {
    let Some(files) = params.trace.as_deref() else {
        return Err(CaseError::Failed("a replay case without its trace".into()));
    };
    let paths: Vec<PathBuf> = files.split(',').map(PathBuf::from).collect();
    let trace =
        crate::trace::read(&paths, Some(ranks)).map_err(|e| CaseError::Failed(e.to_string()))?;
    let digests: Vec<&str> = trace.files.iter().map(|f| f.sha256.as_str()).collect();
    if params.trace_sha256.as_deref() != Some(&digests.join(",")) {
        return Err(CaseError::Failed(format!(
            "trace {files} changed since the case was planned (its SHA-256 differs)"
        )));
    }
    if trace.ranks() != ranks {
        return Err(CaseError::Skipped(format!(
            "the trace has {} ranks and this launch {ranks}: replay at another scale \
             (--ranks-as) is not implemented yet",
            trace.ranks()
        )));
    }
    Ok(trace)
}

/// The backend's call for a traced one (`devices`: its group's size).
fn call_of(c: &Call, devices: u32) -> Result<CollectiveCall, String> {
    let workload = c.collective.workload().unwrap_or(Workload::Allreduce);
    let n = u64::from(devices);
    let (send, recv) = match c.collective {
        Collective::Barrier => (1, 1),
        _ => (c.send_count, c.recv_count),
    };
    let fits = match c.collective {
        Collective::AllGather => recv == send * n,
        Collective::ReduceScatter => send == recv * n,
        Collective::AllToAll => send == recv && send % n == 0,
        _ => send == recv,
    };
    if !fits {
        return Err(format!(
            "{}: a {} of {send} elements in and {recv} out does not fit a {devices}-rank group",
            c.record,
            c.collective.name()
        ));
    }
    Ok(CollectiveCall {
        workload,
        dtype: c.dtype,
        op: if c.collective == Collective::Barrier {
            Some(crate::params::ReduceOp::Sum)
        } else {
            c.op
        },
        root: c.root,
        send_count: send as usize,
        recv_count: recv as usize,
        // MPI_Bcast is in place only (the CPU backend refuses it out of place).
        in_place: workload == Workload::Broadcast,
        devices,
    })
}

/// Whether the backend can run every call of this rank (same answer on every rank for the
/// calls they share; a rank's own refusal is agreed by the caller).
fn supported<B: Backend>(
    backend: &B,
    params: &CaseParams,
    calls: &[CollectiveCall],
) -> Result<(), String> {
    for c in calls {
        let p = CaseParams {
            workload: c.workload,
            dtype: c.dtype,
            in_place: Some(c.in_place),
            op: c.op,
            ..params.clone()
        };
        if let Err(why) = backend.supports(&p) {
            return Err(format!("a {} {}: {why}", c.dtype, c.workload));
        }
    }
    Ok(())
}

/// Runs a replay case on every rank.
pub fn run<B: Backend, C: HostComm>(
    backend: &mut B,
    comm: &C,
    params: &CaseParams,
    settings: &RunSettings,
) -> Result<Measured, CaseError> {
    if backend.local_devices() != 1 {
        return Err(CaseError::Skipped(
            "replay runs one rank per device (--topology pure)".into(),
        ));
    }
    let trace = load(params, comm.size())?;
    let me = comm.rank() as usize;
    let n = comm.size();
    let whole: Vec<u32> = (0..n).collect();
    let mine = &trace.calls[me];
    let mut calls = Vec::new();
    for c in mine {
        let size = trace.groups[c.group].ranks.len() as u32;
        calls.push(call_of(c, size).map_err(CaseError::Failed)?);
    }
    let everywhere = comm.all_ok(supported(backend, params, &calls).is_ok());
    if !everywhere {
        let why = supported(backend, params, &calls).err().unwrap_or_default();
        return Err(CaseError::Skipped(format!(
            "the {} backend cannot replay this trace{}",
            backend.kind(),
            if why.is_empty() {
                String::new()
            } else {
                format!(": {why}")
            }
        )));
    }
    let needs_groups = trace.groups.iter().any(|g| g.ranks != whole);
    if needs_groups {
        let sets: Vec<Vec<u32>> = trace.groups.iter().map(|g| g.ranks.clone()).collect();
        agree(comm, backend.set_groups(&sets))?;
    }
    let compute = params.compute.unwrap_or(ReplayCompute::Gaps);
    let mut steps = agree(
        comm,
        set_up(backend, &trace, mine, calls, &whole, compute, settings),
    )?;

    let bytes: u64 = mine.iter().map(Call::requested_bytes).sum();
    let mut log = Log {
        per_call_s: vec![Vec::new(); steps.len()],
        ..Log::default()
    };
    // Isolated: one sample per step, so the last `iters` entries of the log are the timed
    // steps (calibration and warm-up ran first).
    let mode = Timing::Isolated;
    let samples = measure::time_op(backend, comm, mode, &settings.policy, Some(bytes), |b| {
        one_step(b, &mut steps, &mut log)
    });
    let samples = agree(comm, samples)?;
    let timing = measure::combine(comm, mode, &samples);
    let timed = samples.counts.iters as usize;
    let last = |xs: &[f64]| xs[xs.len().saturating_sub(timed)..].to_vec();
    let (comm_s, compute_s) = (last(&log.comm_s), last(&log.compute_s));
    let phases = phase_results(comm, &[("communication", &comm_s), ("compute", &compute_s)]);

    // `--fault corrupt` (tests): proves the validation of a replayed collective can fail.
    let corrupt =
        params.fault.as_deref().and_then(super::Fault::parse) == Some(super::Fault::Corrupt);
    let mut wrong_local = 0u64;
    for _ in 0..settings.check_iters {
        wrong_local += agree(comm, check_all(backend, &mut steps, corrupt))?;
    }
    let replay = comm.is_root().then(|| {
        let per_call: Vec<Vec<f64>> = log.per_call_s.iter().map(|t| last(t)).collect();
        let means = [
            samples.mean_s,
            stats::mean(&comm_s).unwrap_or(0.0),
            stats::mean(&compute_s).unwrap_or(0.0),
        ];
        record(&trace, mine, compute, means, &per_call)
    });
    Ok(Measured {
        timing,
        wrong: comm.sum_u64(wrong_local),
        check_iters: settings.check_iters,
        tolerance: 0.0,
        bytes: Some(bytes),
        phases,
        replay,
        ..Measured::default()
    })
}

/// Every step's buffers, on its group.
fn set_up<B: Backend>(
    backend: &mut B,
    trace: &Trace,
    mine: &[Call],
    calls: Vec<CollectiveCall>,
    whole: &[u32],
    compute: ReplayCompute,
    settings: &RunSettings,
) -> Result<Vec<Step<B::Buf>>, BackendError> {
    let mut steps = Vec::new();
    for (c, call) in mine.iter().zip(calls) {
        let group = (trace.groups[c.group].ranks != whole).then_some(c.group);
        backend.use_group(group)?;
        let single = Single::new(backend, call, settings.buffer_offset);
        backend.use_group(None)?;
        let gap = match compute {
            ReplayCompute::Gaps => c.gap_before_s.map(Duration::from_secs_f64),
            ReplayCompute::Off => None,
        };
        steps.push(Step {
            single: single?,
            group,
            gap,
        });
    }
    Ok(steps)
}

/// One step: each gap waited out, each collective issued on its group.
fn one_step<B: Backend>(
    backend: &mut B,
    steps: &mut [Step<B::Buf>],
    log: &mut Log,
) -> Result<(), BackendError> {
    let (mut comm_s, mut compute_s) = (0.0, 0.0);
    for (k, s) in steps.iter_mut().enumerate() {
        if let Some(g) = s.gap {
            let t = Instant::now();
            wait(g);
            compute_s += t.elapsed().as_secs_f64();
        }
        backend.use_group(s.group)?;
        let t = Instant::now();
        s.single.issue(backend)?;
        let took = t.elapsed().as_secs_f64();
        comm_s += took;
        log.per_call_s[k].push(took);
    }
    backend.use_group(None)?;
    log.comm_s.push(comm_s);
    log.compute_s.push(compute_s);
    Ok(())
}

/// Sleeps most of `d`, then spins: a plain sleep overshoots short gaps by tens of µs.
fn wait(d: Duration) {
    let until = Instant::now() + d;
    let spin = Duration::from_micros(200);
    if d > spin {
        std::thread::sleep(d - spin);
    }
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Every step once on fresh inputs, validated: the wrong elements on this rank (`corrupt`:
/// every step's input on device 0 is off by one, so each must report wrong elements).
fn check_all<B: Backend>(
    backend: &mut B,
    steps: &mut [Step<B::Buf>],
    corrupt: bool,
) -> Result<u64, BackendError> {
    let mut wrong = 0;
    for s in steps.iter_mut() {
        backend.use_group(s.group)?;
        let w = s.single.check(backend, corrupt);
        backend.use_group(None)?;
        wrong += w?;
    }
    Ok(wrong)
}

/// Rank 0's record: the trace, its groups, the step's mean (step, communication, compute)
/// seconds and each of its calls with its timed samples.
fn record(
    trace: &Trace,
    mine: &[Call],
    compute: ReplayCompute,
    [step_s, comm_s, compute_s]: [f64; 3],
    per_call: &[Vec<f64>],
) -> ReplayRecord {
    ReplayRecord {
        format: trace.format.name().to_string(),
        files: trace
            .files
            .iter()
            .map(|f| TraceFile {
                path: f.path.display().to_string(),
                sha256: f.sha256.clone(),
            })
            .collect(),
        ranks: trace.ranks(),
        groups: trace
            .groups
            .iter()
            .map(|g| ReplayGroup {
                name: g.name.clone(),
                ranks: g.ranks.clone(),
            })
            .collect(),
        compute: compute.name().to_string(),
        calls_total: trace.total_calls() as u64,
        step_s,
        comm_s,
        compute_s,
        calls: mine
            .iter()
            .zip(per_call)
            .map(|(c, t)| replayed(c, t))
            .collect(),
    }
}

fn replayed(c: &Call, times: &[f64]) -> ReplayedCall {
    ReplayedCall {
        record: c.record.to_string(),
        collective: c.collective.name().to_string(),
        dtype: c.dtype,
        op: c.op,
        root: c.root,
        group: c.group,
        send_count: c.send_count,
        recv_count: c.recv_count,
        gap_before_s: c.gap_before_s,
        mean_s: stats::mean(times).unwrap_or(0.0),
    }
}

/// Each phase over the slowest rank's per-step samples (at the root; empty elsewhere).
fn phase_results<C: HostComm>(comm: &C, named: &[(&str, &Vec<f64>)]) -> Vec<PhaseResult> {
    let mut phases = Vec::new();
    for (name, xs) in named {
        let mut worst = (*xs).clone();
        comm.max_f64_slice(&mut worst);
        let means = comm.gather_f64(stats::mean(xs).unwrap_or(0.0));
        if let (true, Some(summary)) = (comm.is_root(), stats::summarize(&worst)) {
            phases.push(PhaseResult {
                name: name.to_string(),
                time_s: stats::mean(&means).unwrap_or(0.0),
                stats_s: summary,
                samples_s: Vec::new(),
            });
        }
    }
    phases
}
